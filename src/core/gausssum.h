/*
 * gausssum.h — what gausssum.c offers discrete.c (dp_pg's calibration
 * module): sums of Gaussian terms over ranges of integers with a bound on
 * their error, signed combinations of such sums, the lattice theta
 * function, Hermite polynomials and the Euler-Maclaurin coefficients.
 *
 * Internal to the calibration module: the rest of dp_pg includes
 * calibrate.h.  Plain C, no PostgreSQL header.
 */
#ifndef DP_GAUSSSUM_H
#define DP_GAUSSSUM_H

/* Largest lattice sigma2 whose Gaussian tails are summed term by term */
#define DP_SUM_SIGMA2_MAX 1024.0

/* Highest order P of the Euler-Maclaurin remainder */
#define DP_EM_PMAX 10

/* B_2s/(2s)!, s = 1..DP_EM_PMAX (index 0 unused) */
extern const double DP_EM_COEF[DP_EM_PMAX + 1];

/* A sum known as e^ls (v +- err). */
typedef struct DpGaussSum
{
	double		ls;
	double		v;
	double		err;
} DpGaussSum;

/* A signed term c e^L (v +- err) of a combination of sums. */
typedef struct DpSumTerm
{
	double		L;
	double		v;
	double		err;
	int			sign;
} DpSumTerm;

/* Probabilists' Hermite polynomials He_0..He_n at x into he[]. */
extern void dp_hermite_all(double x, int n, double *he);

/* sum_{x=a..b} exp(-(x - mu)^2/(2 sigma2)) for integral a <= b (b may be +inf). */
extern void dp_gauss_sum(double mu, double sigma2, double a, double b, DpGaussSum *out);

/*
 * Upper (dir = +1) or lower (dir = -1) bound of sum_i sign_i e^{L_i} v_i as
 * e^{*Lout} times the returned value (rounding of the combination included).
 */
extern double dp_sum_terms_bound(const DpSumTerm *t, int n, int dir, double *Lout);

/* theta(sigma2) = 1 + 2 sum_{n>=1} exp(-2 pi^2 sigma2 n^2), sigma2 >= 1/4. */
extern double dp_jacobi_theta(double sigma2);

#endif							/* DP_GAUSSSUM_H */
