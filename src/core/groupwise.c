/*
 * groupwise.c — seed 001's group-wise relative-error counts: Algorithm 1
 * drawn exactly, and the Rényi divergences of its release for a group of a
 * given size, computed numerically.
 *
 * Plain C (no PostgreSQL header).  Seed 001 ("Better privacy guarantees for
 * larger groups", Algorithm 1): sigma^2 = 1/(2 rho), X ~ N(x, sigma^2),
 * Y ~ N(X, (r X)^2).  Here both steps are discrete Gaussians on the
 * integers (Canonne-Kamath-Steinke 2020), like every count dp_pg releases:
 *   X = x + Z1,  Z1 ~ N_Z(0, sigma1^2), sigma1^2 = D^2/(2 rho) rounded up (noise.c),
 *   Y = X + Z2,  Z2 ~ N_Z(0, (r X)^2), and Z2 = 0 when X = 0
 * (N_Z(0, s^2) has pmf proportional to exp(-k^2/(2 s^2)); as s -> 0 it is
 * the point mass at 0).
 *
 * Privacy.  X is the discrete Gaussian mechanism: rho-zCDP for sensitivity
 * D, and that is what is charged.  Y is computed from X and fresh randomness
 * only, so the release is rho-zCDP by post-processing, whatever the second
 * step is.  Seed 001 asks for more: a guarantee per group that improves with
 * its size x (the note leaves it open).  dp_groupwise_divergence computes the
 * Rényi divergences of Y for neighbouring sizes x and x +- 1 numerically,
 * from the exact pmf of Y:
 *   P_x(y) = sum_X N_Z(X - x; sigma1^2) N_Z(y - X; (r X)^2),
 * both pmfs normalised exactly (by summation, or by Poisson summation,
 * Z(s) = sqrt(2 pi) s (1 + 2 sum_m e^(-2 pi^2 s^2 m^2)), whose correction is
 * below 1e-34 for s^2 > 4), summed in long double over every X within 40
 * sigma1 of x and every y within 40 r|X| + 2 of X (the mass left out is
 * below e^-800), and D_alpha(P || Q) = log(sum_y P^alpha Q^(1 - alpha))/(alpha - 1)
 * over the y where both are positive.  It is a function of a size the caller
 * names: dp_pg never computes it from an unreleased count.  By data
 * processing D_alpha(Y_x || Y_x') <= D_alpha(X_x || X_x') <= alpha rho
 * (test/unit/test_groupwise.c checks it, and the sums against an independent
 * reference).
 *
 * Exact second step.  The variance (r X)^2 depends on X, which is already
 * private, and must still be drawn exactly: r is used as the decimal
 * fraction a/b it was written as (at most 9 decimals: 0.05 is 1/20), X is an
 * integer, so (r X)^2 = (a |X|)^2 / b^2 is a rational, and the discrete
 * Gaussian sampler of sample.c draws N_Z(0, p/q) exactly for any rational
 * p/q with p, q < 2^64 — no floating point touches the variance.  That holds
 * for a |X| < 2^32 (|X| < 2^32/a: 4.3e9 for r = 0.05).  Beyond it, (r X)^2 is
 * rounded up to a rational (relative error below 2^-50) and, when r |X| >
 * 2^30, drawn on the lattice 2^j Z as 2^j N_Z(0, (r X)^2/4^j) so that the
 * sampler's range holds: a tiny change of the second step only, which is
 * post-processing (privacy unchanged; documented).  The second step's work
 * depends on X, which is private already: its timing is post-processing of
 * X too.
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include "groupwise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "sample.h"

/* Terms of the sums of one divergence computation at most (a few seconds). */
#define DP_GROUPWISE_MAX_TERMS 150000000.0
/* Standard deviations summed over: e^-800 of the mass is left out. */
#define DP_GROUPWISE_SDS 40.0

/* Greatest common divisor. */
static uint64_t
gcd64(uint64_t a, uint64_t b)
{
	while (b != 0)
	{
		uint64_t	t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* r's exact decimal form (see groupwise.h). */
bool
dp_groupwise_prepare(DpGroupwise *g, double r, char *err, size_t errlen)
{
	char		buf[40];
	int			prec;
	int			exp10;
	int			decimals;
	uint64_t	mant = 0;
	uint64_t	den = 1;
	char	   *e;

	if (isnan(r) || !(r > 0.0) || !(r <= 1.0))
	{
		snprintf(err, errlen, "r must be a number greater than 0 and at most 1, got %g", r);
		return false;
	}
	/* the shortest decimal that reads back as r: d.ddd e-NN */
	for (prec = 1; prec <= 17; prec++)
	{
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, r);
		if (strtod(buf, NULL) == r)
			break;
	}
	e = strchr(buf, 'e');
	exp10 = atoi(e + 1);
	for (char *c = buf; c < e; c++)
		if (*c >= '0' && *c <= '9')
			mant = mant * 10 + (uint64_t) (*c - '0');
	decimals = (prec - 1) - exp10;
	if (decimals > 9)
	{
		snprintf(err, errlen, "r must have at most 9 decimals (it is drawn as the exact fraction it is written as), got %s", buf);
		return false;
	}
	for (int i = 0; i < decimals; i++)
		den *= 10;
	for (int i = decimals; i < 0; i++)
		mant *= 10;
	{
		uint64_t	d = gcd64(mant, den);

		g->num = mant / d;
		g->den = den / d;
	}
	g->r = r;
	return true;
}

/* The second step (see the file comment). */
int64_t
dp_groupwise_second(const DpGroupwise *g, int64_t X, DpRng *rng, bool *overflow)
{
	uint64_t	ax;
	unsigned __int128 p;
	DpSampler	s;
	DpRational	s2;
	int			shift = 0;
	int64_t		z;
	int64_t		y;

	*overflow = false;
	if (X == 0)
		return 0;
	ax = X < 0 ? (uint64_t) (-(X + 1)) + 1 : (uint64_t) X;
	p = (unsigned __int128) g->num * ax;
	if (p < ((unsigned __int128) 1 << 32) && g->den < (UINT64_C(1) << 32))
	{
		/* exactly (a |X| / b)^2 */
		s2.num = (uint64_t) (p * p);
		s2.den = g->den * g->den;
	}
	else
	{
		long double sigma = (long double) p / (long double) g->den;

		while (sigma > 0x1p30L)
		{
			sigma /= 2;
			shift++;
		}
		s2 = dp_rational_up((double) (sigma * sigma * (1.0L + 0x1p-50L)));
	}
	dp_sampler_gaussian(&s, s2);
	z = dp_sampler_draw(&s, rng);
	if (shift > 0 && __builtin_mul_overflow(z, (int64_t) 1 << shift, &z))
	{
		*overflow = true;
		return 0;
	}
	if (__builtin_add_overflow(X, z, &y))
	{
		*overflow = true;
		return 0;
	}
	return y;
}

/* log of the normaliser sum_k exp(-k^2/(2 s2)) of N_Z(0, s2), s2 > 0. */
static long double
log_norm(long double s2)
{
	long double z = 1.0L;
	long		L;

	if (s2 > 4.0L)
		return 0.5L * logl(2.0L * M_PI * s2);
	L = (long) ceill(DP_GROUPWISE_SDS * sqrtl(s2)) + 2;
	for (long k = 1; k <= L; k++)
		z += 2.0L * expl(-(long double) k * k / (2.0L * s2));
	return logl(z);
}

/*
 * The first step's values X summed over for groups of sizes x1 and x2 with
 * orders up to alpha_max: 40 sigma1 beyond both, and as far again as
 * P^alpha Q^(1 - alpha) reaches (its centre moves (alpha - 1)|x2 - x1| away
 * from x in the Gaussian first step), plus a margin.  Both pmfs of a
 * divergence sum over the same X, so truncation treats them alike.
 */
static void
groupwise_xrange(double sigma1_2, int64_t x1, int64_t x2, double alpha_max, int64_t *xlo, int64_t *xhi)
{
	long double L = ceill(DP_GROUPWISE_SDS * sqrtl(sigma1_2)) + 2 +
		ceill(2.0L * alpha_max * fabsl((long double) x2 - (long double) x1));

	*xlo = (x1 < x2 ? x1 : x2) - (int64_t) L;
	*xhi = (x1 > x2 ? x1 : x2) + (int64_t) L;
}

/*
 * The y summed over: W standard deviations of the widest second step beyond
 * [xlo, xhi].  The Rényi sum of order alpha left out beyond it is at most
 * sum_X w_P(X)^alpha w_Q(X)^(1 - alpha) P(|Z2| > W r|X|) <= e^((alpha - 1) D_alpha(X)) 2 e^(-W^2/2)
 * (joint convexity), and D_alpha(X) <= alpha rho1 with rho1 = 1/(2 sigma1^2)
 * for neighbours, so W^2 = 1600 + 2 (alpha - 1) alpha rho1 leaves out
 * less than e^-800 of a sum that is at least 1.  Every second step is summed
 * over the whole range, so the two pmfs of a divergence are truncated alike.
 */
static long double
groupwise_width(double sigma1_2, double alpha_max)
{
	return sqrtl(DP_GROUPWISE_SDS * DP_GROUPWISE_SDS + (alpha_max - 1.0L) * alpha_max / sigma1_2) + 1;
}

static void
groupwise_yrange(const DpGroupwise *g, long double width, int64_t xlo, int64_t xhi, int64_t *ylo, int64_t *yhi)
{
	long double big = fabsl((long double) xlo) > fabsl((long double) xhi) ? fabsl((long double) xlo) : fabsl((long double) xhi);
	long double spread = width * g->r * big + 2;

	*ylo = (int64_t) ((long double) xlo - spread);
	*yhi = (int64_t) ((long double) xhi + spread);
}

/* The range of y outside which a group of x rows has probability below e^-800. */
void
dp_groupwise_support(double sigma1_2, const DpGroupwise *g, int64_t x, int64_t *ylo, int64_t *yhi)
{
	int64_t		xlo,
				xhi;

	groupwise_xrange(sigma1_2, x, x, 1.0, &xlo, &xhi);
	groupwise_yrange(g, groupwise_width(sigma1_2, 1.0), xlo, xhi, ylo, yhi);
}

/* The work of the sums of one pmf over X in [xlo, xhi] and y in [ylo, yhi]. */
static long double
groupwise_work(int64_t xlo, int64_t xhi, int64_t ylo, int64_t yhi)
{
	return ((long double) xhi - xlo + 1) * ((long double) yhi - ylo + 1);
}

/*
 * P_x(y) for y in [ylo, ylo + n) into out[] (linear, long double), the first
 * step's values X summed over [xlo, xhi].
 */
static void
groupwise_pmf(double sigma1_2, const DpGroupwise *g, int64_t x, int64_t xlo, int64_t xhi, int64_t ylo, long n,
			  long double *out)
{
	long double s1 = sigma1_2;
	long double lz1 = log_norm(s1);
	long double r = g->r;

	for (long i = 0; i < n; i++)
		out[i] = 0.0L;
	for (int64_t X = xlo; X <= xhi; X++)
	{
		long double d = (long double) (X - x);
		long double lw = -d * d / (2.0L * s1) - lz1;

		if (X == 0)
		{
			if (-ylo >= 0 && -ylo < n)
				out[-ylo] += expl(lw);
			continue;
		}
		{
			/* over the whole range (terms below e^-11400 are 0 in long double either way) */
			long double sx2 = r * r * (long double) X * (long double) X;
			long double lz2 = log_norm(sx2);

			for (long i = 0; i < n; i++)
			{
				long double k = (long double) (ylo + i - X);
				long double e = lw - k * k / (2.0L * sx2) - lz2;

				if (e > -11500.0L)
					out[i] += expl(e);
			}
		}
	}
}

/* log P(Y = y) for y in [ylo, yhi] (see groupwise.h). */
bool
dp_groupwise_logpmf(double sigma1_2, const DpGroupwise *g, int64_t x, int64_t ylo, int64_t yhi, double *out)
{
	long		n = (long) (yhi - ylo + 1);
	long double *p;
	int64_t		xlo,
				xhi;

	groupwise_xrange(sigma1_2, x, x, 1.0, &xlo, &xhi);
	if (groupwise_work(xlo, xhi, ylo, yhi) > DP_GROUPWISE_MAX_TERMS || (p = malloc(n * sizeof(long double))) == NULL)
		return false;
	groupwise_pmf(sigma1_2, g, x, xlo, xhi, ylo, n, p);
	for (long i = 0; i < n; i++)
		out[i] = p[i] > 0 ? (double) logl(p[i]) : -INFINITY;
	free(p);
	return true;
}

/* D_alpha(P || Q) over the y where both are positive. */
static double
renyi_of(const long double *p, const long double *q, long n, double alpha)
{
	long double m = -INFINITY;
	long double s = 0.0L;

	for (long i = 0; i < n; i++)
		if (p[i] > 0 && q[i] > 0)
		{
			long double t = alpha * logl(p[i]) + (1.0L - alpha) * logl(q[i]);

			if (t > m)
				m = t;
		}
	if (m == -INFINITY)
		return NAN;
	for (long i = 0; i < n; i++)
		if (p[i] > 0 && q[i] > 0)
			s += expl(alpha * logl(p[i]) + (1.0L - alpha) * logl(q[i]) - m);
	return (double) ((m + logl(s)) / (alpha - 1.0L));
}

/* D_alpha(Y_x || Y_x2) (see groupwise.h). */
double
dp_groupwise_divergence(double sigma1_2, const DpGroupwise *g, int64_t x, int64_t x2, double alpha)
{
	int64_t		xlo,
				xhi,
				lo,
				hi;
	long		n;
	long double *p = NULL,
			   *q = NULL;
	double		d = NAN;

	groupwise_xrange(sigma1_2, x, x2, alpha, &xlo, &xhi);
	groupwise_yrange(g, groupwise_width(sigma1_2, alpha), xlo, xhi, &lo, &hi);
	n = (long) (hi - lo + 1);
	if (2 * groupwise_work(xlo, xhi, lo, hi) <= DP_GROUPWISE_MAX_TERMS &&
		(p = malloc(n * sizeof(long double))) != NULL && (q = malloc(n * sizeof(long double))) != NULL)
	{
		groupwise_pmf(sigma1_2, g, x, xlo, xhi, lo, n, p);
		groupwise_pmf(sigma1_2, g, x2, xlo, xhi, lo, n, q);
		d = renyi_of(p, q, n, alpha);
	}
	free(p);
	free(q);
	return d;
}

/* The worst neighbour and direction, for each of n orders (see groupwise.h). */
bool
dp_groupwise_divergences_worst(double sigma1_2, const DpGroupwise *g, int64_t x, const double *alphas, int n,
							   double *out)
{
	int64_t		xlo,
				xhi,
				lo,
				hi;
	long		m;
	long double *p[3] = {NULL, NULL, NULL};
	double		amax = 1.0;
	bool		ok;

	for (int a = 0; a < n; a++)
		if (alphas[a] > amax)
			amax = alphas[a];
	groupwise_xrange(sigma1_2, x - 1, x + 1, amax, &xlo, &xhi);
	groupwise_yrange(g, groupwise_width(sigma1_2, amax), xlo, xhi, &lo, &hi);
	m = (long) (hi - lo + 1);
	ok = 3 * groupwise_work(xlo, xhi, lo, hi) <= DP_GROUPWISE_MAX_TERMS;
	for (int i = 0; ok && i < 3; i++)
	{
		p[i] = malloc(m * sizeof(long double));
		ok = p[i] != NULL;
		if (ok)
			groupwise_pmf(sigma1_2, g, x - 1 + i, xlo, xhi, lo, m, p[i]);
	}
	for (int a = 0; ok && a < n; a++)
	{
		out[a] = 0.0;
		for (int i = 0; ok && i < 3; i += 2)
		{
			/* x - 1 is a neighbour only of a group of at least one row */
			if (i == 0 && x < 1)
				continue;
			for (int dir = 0; dir < 2; dir++)
			{
				double		d = dir ? renyi_of(p[1], p[i], m, alphas[a]) : renyi_of(p[i], p[1], m, alphas[a]);

				if (isnan(d))
					ok = false;
				else if (d > out[a])
					out[a] = d;
			}
		}
	}
	for (int i = 0; i < 3; i++)
		free(p[i]);
	return ok;
}

/* The worst neighbour and direction (see groupwise.h). */
double
dp_groupwise_divergence_worst(double sigma1_2, const DpGroupwise *g, int64_t x, double alpha)
{
	double		d;

	return dp_groupwise_divergences_worst(sigma1_2, g, x, &alpha, 1, &d) ? d : NAN;
}

/* Var(Y - x) (see groupwise.h). */
double
dp_groupwise_variance(double sigma1_2, const DpGroupwise *g, int64_t x)
{
	long		L1 = (long) ceill(DP_GROUPWISE_SDS * sqrtl(sigma1_2)) + 1;
	long double lz1 = log_norm(sigma1_2);
	long double v = 0.0L;

	for (long d = -L1; d <= L1; d++)
	{
		int64_t		X = x + d;
		long double w = expl(-(long double) d * d / (2.0L * sigma1_2) - lz1);

		if (X != 0)
			v += w * dp_discrete_gauss_variance((double) (g->r * g->r * (long double) X * (long double) X));
	}
	return (double) v + dp_discrete_gauss_variance(sigma1_2);
}
