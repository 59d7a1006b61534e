/*
 * gausssum.c — sums of Gaussian terms on the integers,
 * sum_{x=a..b} exp(-(x - mu)^2/(2 sigma2)), with a bound on their error,
 * for the privacy profiles and Rényi bounds of dp_pg's discrete noise
 * (discrete.c) [ref 6].  "ref" is test/reference/README.md.
 *
 *   Gaussian tails are summed exactly (sigma2 <= 1024; geometric bound on
 *   the truncated rest) or by Euler-Maclaurin with the remainder bound
 *   |R_P| <= |B_2P|/(2P)! int |f^(2P)|, f^(n) = (-1/sigma)^n He_n(u) f,
 *   int_p^q He_2P e^{-u^2/2} = [-He_{2P-1} e^{-u^2/2}]_p^q beyond the largest
 *   zero of He_2P and Cauchy-Schwarz inside it [DLMF 2.10.1].  The sum over
 *   all integers (the Gaussian normaliser) is sqrt(2 pi) sigma theta,
 *   theta = 1 + 2 sum e^{-2 pi^2 sigma2 n^2} (Poisson summation).  Sums are
 *   kept as e^ls (v +- err) so that none underflows, and combined with their
 *   signs into a bound whose rounding is included: every error is bounded
 *   and added.
 *
 * Layer core/ (docs/development.md): plain C, <math.h> only; may call
 * special.c (special.h: Q and differences of Q for the integral term) and
 * the C library.  gausssum.h offers the sums to discrete.c.
 */
#include <math.h>
#include <stdbool.h>

#include "calibrate.h"
#include "gausssum.h"
#include "special.h"


/* B_2s/(2s)!, s = 1..10 */
const double DP_EM_COEF[DP_EM_PMAX + 1] = {
	0.0, 8.3333333333333333e-2, -1.3888888888888889e-3, 3.3068783068783069e-5,
	-8.2671957671957672e-7, 2.0876756987868099e-8, -5.2841901386874932e-10,
	1.3382536530684679e-11, -3.3896802963225829e-13, 8.5860620562778446e-15,
	-2.1748686985580619e-16
};

/* Largest zero of He_2P, rounded up, P = 1..10 */
static const double he_zero[DP_EM_PMAX + 1] = {
	0.0, 1.0000000000001, 2.3344142183390, 3.3242574335522, 4.1445471861259,
	4.8594628283324, 5.5009017044678, 6.0874095469013, 6.6308781983932,
	7.1394648491465, 7.6190485416798
};

/* (2P)!, P = 0..10 */
static const double fact_even[DP_EM_PMAX + 1] = {
	1.0, 2.0, 24.0, 720.0, 40320.0, 3628800.0, 479001600.0, 87178291200.0,
	20922789888000.0, 6402373705728000.0, 2432902008176640000.0
};

/* Probabilists' Hermite polynomials He_0..He_n at x into he[]. */
void
dp_hermite_all(double x, int n, double *he)
{
	he[0] = 1.0;
	if (n >= 1)
		he[1] = x;
	for (int k = 1; k < n; k++)
		he[k + 1] = x * he[k] - k * he[k - 1];
}

/* He_n(x) */
static double
hermite(int n, double x)
{
	double		he[2 * DP_EM_PMAX + 2];

	dp_hermite_all(x, n, he);
	return he[n];
}

/*
 * Bound on e^{-ls} int_{ua}^{ub} |He_n(u)| e^{-u^2/2} du, n = 2P even: exact
 * beyond the largest zero z of He_n (He_n > 0 there and He_{n-1} e^{-u^2/2}
 * is an antiderivative of -He_n e^{-u^2/2}), Cauchy-Schwarz on [-z, z]
 * (int He_n^2 e^{-u^2/2} = n! sqrt(2 pi)).
 */
static double
hermite_abs_integral(int P, double ua, double ub, double ls)
{
	int			n = 2 * P;
	double		z = he_zero[P];
	double		total = 0.0;
	double		p,
				q;

	/* [z, inf) */
	p = fmax(ua, z);
	if (p < ub)
	{
		total += hermite(n - 1, p) * exp(-0.5 * p * p - ls);
		if (!isinf(ub))
			total -= hermite(n - 1, ub) * exp(-0.5 * ub * ub - ls);
	}
	/* (-inf, -z], mirrored */
	q = fmin(ub, -z);
	if (ua < q)
		total += hermite(n - 1, -q) * exp(-0.5 * q * q - ls) -
			hermite(n - 1, -ua) * exp(-0.5 * ua * ua - ls);
	/* [-z, z] */
	p = fmax(ua, -z);
	q = fmin(ub, z);
	if (p < q)
	{
		double		mass = dp_norm_q(p) - dp_norm_q(q) + 1e-16;

		total += sqrt(2.0 * DP_PI * fact_even[P] * fmin(mass, 1.0)) * exp(-ls);
	}
	return total;
}

/*
 * Exact summation of exp(-(x - mu)^2/(2 sigma2)) over integers a..b, from
 * the largest term outwards with the term ratio updated multiplicatively
 * (resynchronised by exp every 16 steps); the truncated rest is bounded by
 * a geometric series since the ratios decrease.
 */
static void
gauss_sum_direct(double mu, double sigma2, double a, double b, DpGaussSum *out)
{
	double		inv = 0.5 / sigma2;
	double		c = exp(-2.0 * inv);	/* ratio of consecutive ratios */
	double		x0 = nearbyint(mu);
	double		d0,
				sum = 0.0,
				tail = 0.0;
	long		n = 0;

	if (x0 < a)
		x0 = a;
	if (x0 > b)
		x0 = b;
	d0 = x0 - mu;
	out->ls = -d0 * d0 * inv;

	/* upwards: x0, x0 + 1, ..., b */
	{
		double		x = x0,
					t = 1.0,
					rho = exp(-(2.0 * d0 + 1.0) * inv);

		for (int k = 1;; k++)
		{
			sum += t;
			n++;
			if (x >= b)
				break;
			t *= rho;
			rho *= c;
			x += 1.0;
			if ((k & 15) == 0)
			{
				double		d = x - mu;

				t = exp(-(d - d0) * (d + d0) * inv);
				rho = exp(-(2.0 * d + 1.0) * inv);
			}
			if (t < 0x1p-62 * sum && rho < 1.0)
			{
				tail += t / (1.0 - rho);
				break;
			}
		}
	}
	/* downwards: x0 - 1, ..., a */
	if (x0 > a)
	{
		double		x = x0 - 1.0,
					t = exp(-(1.0 - 2.0 * d0) * inv),
					rho = exp(-(3.0 - 2.0 * d0) * inv);

		for (int k = 1;; k++)
		{
			if (t < 0x1p-62 * sum && rho < 1.0)
			{
				tail += t / (1.0 - rho);
				break;
			}
			sum += t;
			n++;
			if (x <= a)
				break;
			t *= rho;
			rho *= c;
			x -= 1.0;
			if ((k & 15) == 0)
			{
				double		d = x - mu;

				t = exp(-(d - d0) * (d + d0) * inv);
				rho = exp(-(1.0 - 2.0 * d) * inv);
			}
		}
	}
	out->v = sum + 0.5 * tail;
	out->err = 0.5 * tail + sum * (400.0 + (double) n) * DP_ULP;
}

/*
 * Euler-Maclaurin for sum_{x=a..b} f(x), f(x) = exp(-(x - mu)^2/(2 sigma2)):
 * int f + (f(a) + f(b))/2 + sum_{s<=P} B_2s/(2s)! (f^(2s-1)(b) - f^(2s-1)(a)) + R_P,
 * |R_P| <= |B_2P|/(2P)! int |f^(2P)|, with P chosen to minimise the bound.
 */
static void
gauss_sum_em(double mu, double sigma2, double a, double b, DpGaussSum *out)
{
	double		sigma = sqrt(sigma2);
	bool		binf = isinf(b);
	double		ua = (a - mu) / sigma;
	double		ub = binf ? INFINITY : (b - mu) / sigma;
	double		ls,
				ga,
				gb,
				integ,
				base,
				acc,
				absacc,
				best_err = INFINITY,
				best_v = NAN;
	double		hea[2 * DP_EM_PMAX + 1],
				heb[2 * DP_EM_PMAX + 1];
	double		spow;

	if (ua >= 0.0)
		ls = -(a - mu) * (a - mu) / (2.0 * sigma2);
	else if (ub <= 0.0)
		ls = -(b - mu) * (b - mu) / (2.0 * sigma2);
	else
		ls = 0.0;
	ga = exp(-(a - mu) * (a - mu) / (2.0 * sigma2) - ls);
	gb = binf ? 0.0 : exp(-(b - mu) * (b - mu) / (2.0 * sigma2) - ls);
	if (ua >= 0.0)
		integ = sigma * dp_qdiff_scaled(ua, binf ? INFINITY : (b - a) / sigma);
	else if (ub <= 0.0)
		integ = sigma * dp_qdiff_scaled(-ub, (b - a) / sigma);
	else
		integ = sigma * DP_SQRT2PI * (1.0 - dp_norm_q(ub) - dp_norm_q(-ua));
	dp_hermite_all(ua, 2 * DP_EM_PMAX, hea);
	if (!binf)
		dp_hermite_all(ub, 2 * DP_EM_PMAX, heb);
	base = integ + 0.5 * (ga + gb);
	acc = base;
	absacc = fabs(integ) + ga + gb;
	spow = 1.0;					/* sigma^(1-2s) */
	for (int s = 1; s <= DP_EM_PMAX; s++)
	{
		double		term,
					rem;

		spow /= (s == 1 ? sigma : sigma2);
		term = -DP_EM_COEF[s] * spow * ((binf ? 0.0 : heb[2 * s - 1] * gb) - hea[2 * s - 1] * ga);
		acc += term;
		absacc += fabs(term);
		rem = fabs(DP_EM_COEF[s]) * spow * hermite_abs_integral(s, ua, ub, ls);
		if (rem < best_err)
		{
			best_err = rem;
			best_v = acc;
		}
	}
	out->ls = ls;
	out->v = best_v;
	/* special functions to ~1e-14 relative, arithmetic to a few ulps */
	out->err = best_err + 1e-13 * fabs(integ) + 32.0 * DP_ULP * absacc;
}

/* sum_{x=a..b} exp(-(x - mu)^2/(2 sigma2)) for integral a <= b (b may be +inf). */
void
dp_gauss_sum(double mu, double sigma2, double a, double b, DpGaussSum *out)
{
	if (!(a <= b))
	{
		out->ls = 0.0;
		out->v = 0.0;
		out->err = 0.0;
		return;
	}
	if (sigma2 <= DP_SUM_SIGMA2_MAX)
		gauss_sum_direct(mu, sigma2, a, b, out);
	else
		gauss_sum_em(mu, sigma2, a, b, out);
}

/*
 * Upper (dir = +1) or lower (dir = -1) bound of sum_i sign_i e^{L_i} v_i as
 * e^{*Lout} times the returned value (rounding of the combination included).
 */
double
dp_sum_terms_bound(const DpSumTerm *t, int n, int dir, double *Lout)
{
	double		L = -INFINITY,
				s = 0.0,
				abssum = 0.0;

	for (int i = 0; i < n; i++)
		if (t[i].v != 0.0 || t[i].err != 0.0)
			L = fmax(L, t[i].L);
	*Lout = L;
	if (L == -INFINITY)
		return 0.0;
	for (int i = 0; i < n; i++)
	{
		double		f;

		if (t[i].v == 0.0 && t[i].err == 0.0)
			continue;
		f = exp(t[i].L - L);
		s += t[i].sign * f * t[i].v + dir * f * t[i].err;
		abssum += f * fabs(t[i].v);
	}
	return s + dir * 16.0 * DP_ULP * abssum;
}

/* theta(sigma2) = 1 + 2 sum_{n>=1} exp(-2 pi^2 sigma2 n^2), sigma2 >= 1/4. */
double
dp_jacobi_theta(double sigma2)
{
	double		s = 0.0;

	for (int n = 1; n < 64; n++)
	{
		double		t = exp(-2.0 * DP_PI * DP_PI * sigma2 * n * n);

		s += t;
		if (t < 1e-20 * (1.0 + s))
			break;
	}
	return 1.0 + 2.0 * s;
}
