/*
 * interval.c — error bars from the noises' exact distributions: an
 * average's, a noisy centred sum over a noisy count.
 *
 * Plain C (no PostgreSQL header).  dp_avg releases c + (S + A)/(N + B), S
 * the exact centred sum of N values (|S/N| = |m| <= w), A the sum's noise
 * and B the count's, independent of each other and of the data.  Its error
 * before the clamp is exactly
 *     (S + A)/(N + B) - S/N = (A - m B)/(N + B),
 * so, the noisy count N + B being released, |error| <= q/(N + B) holds
 * exactly when |A - m B| <= q.  The earlier interval bounded A and B each
 * at 97.5 % and m by w — a union bound and a worst case that made a 95 %
 * interval cover 99.9 % of draws.  Here q is the level-quantile of
 * |A - m B| itself, computed from the two noises' distributions:
 *   P(|A - m B| <= q) = sum_k P(B = k) (F_A(q + m k) - F_A(-q + m k)),
 * B's exact discrete pmf (the count's noise, integer), A's CDF that of its
 * continuous family (its lattice is at most 2^-29 of its scale: noise.c;
 * the caller widens q by one lattice step), summed over every k within 40
 * of B's scales (the rest is below e^-40 of the mass: counted as a miss).
 * m is the truth's, which is unknown; the caller plugs in the released
 * average's (rounded up to a grid, and q grows with |m|), so the interval is
 * close to exact rather than a bound: coverage within a point of its level
 * (test/stat/test_interval.c).  dp_interval_ratio_miss is the exact miss
 * probability for a given truth (the average's accuracy-first search and
 * the tests), the worst over |m| <= w and the fewest values.
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include "interval.h"

#include <math.h>

/* Scales of B summed over on each side. */
#define DP_INTERVAL_SCALES 40.0
/* Beyond this many terms, B's pmf is summed on a coarser grid (its scale is then > 2500). */
#define DP_INTERVAL_MAX_TERMS 200000

/* P(A <= x) and P(A > x) for A the continuous version of plan a's noise (output units). */
static void
cont_cdf(const DpNoisePlan *a, double x, double *below, double *above)
{
	switch (a->mech.family)
	{
		case DP_MECH_LAPLACE:
			{
				double		t = exp(-fabs(x) / a->scale) / 2.0;

				*below = x < 0 ? t : 1.0 - t;
				*above = x < 0 ? 1.0 - t : t;
				return;
			}
		case DP_MECH_OSGT:
			{
				/* tails of N(0, sigma^2) beyond m, shifted in by m (reference README 2.3) */
				double		z = 2.0 * dp_norm_q(a->m / a->sigma);
				double		t = dp_norm_q((fabs(x) + a->m) / a->sigma) / z;

				*below = x < 0 ? t : 1.0 - t;
				*above = x < 0 ? 1.0 - t : t;
				return;
			}
		default:
			{
				double		t = dp_norm_q(fabs(x) / a->sigma);

				*below = x < 0 ? t : 1.0 - t;
				*above = x < 0 ? 1.0 - t : t;
				return;
			}
	}
}

/* P(|A - c| <= q), computed from the two tails. */
static double
cont_within(const DpNoisePlan *a, double c, double q)
{
	double		lo_below,
				lo_above,
				hi_below,
				hi_above;

	cont_cdf(a, c - q, &lo_below, &lo_above);
	cont_cdf(a, c + q, &hi_below, &hi_above);
	return fmax(0.0, 1.0 - lo_below - hi_above);
}

/* B's scale (integers): the Laplace t or the Gaussian / OSGT sigma. */
static double
disc_scale(const DpNoisePlan *b)
{
	return b->mech.family == DP_MECH_LAPLACE ? b->t : sqrt(b->sigma2);
}

/* The unnormalised weight of B = k. */
static double
disc_weight(const DpNoisePlan *b, double k)
{
	double		y = fabs(k);

	if (b->mech.family == DP_MECH_LAPLACE)
		return exp(-y / b->t);
	return exp(-(y * y + 2.0 * b->m_lattice * y) / (2.0 * b->sigma2));
}

/*
 * Sum fn(k) P(B = k) over the k that matter (see the file comment); the
 * terms beyond are at most e^-40 of the mass.  A scale above 5000 is summed
 * on a grid of DP_INTERVAL_MAX_TERMS midpoints, each weighing its cell.
 */
static double
disc_expect(const DpNoisePlan *b, double (*fn) (double k, void *arg), void *arg)
{
	double		K = ceil(DP_INTERVAL_SCALES * disc_scale(b) + 2.0 * b->m_lattice) + 1;
	double		step = 1.0;
	double		z = 0.0,
				s = 0.0;

	if (2.0 * K + 1 > DP_INTERVAL_MAX_TERMS)
		step = ceil((2.0 * K + 1) / DP_INTERVAL_MAX_TERMS);
	for (double k = -K; k <= K; k += step)
	{
		double		w = disc_weight(b, k) * step;

		z += w;
		s += w * fn(k, arg);
	}
	return s / z;
}

typedef struct ComboArg
{
	const DpNoisePlan *a;
	double		m;
	double		q;
	double		n;				/* ratio: values */
	double		h;				/* ratio: half-width */
} ComboArg;

static double
combo_term(double k, void *arg)
{
	ComboArg   *c = arg;

	return cont_within(c->a, c->m * k, c->q);
}

/* See interval.h. */
double
dp_interval_combo_prob(const DpNoisePlan *a, const DpNoisePlan *b, double m, double q)
{
	ComboArg	c = {a, m, q, 0, 0};

	return disc_expect(b, combo_term, &c);
}

/* See interval.h. */
double
dp_interval_combo_quantile(const DpNoisePlan *a, const DpNoisePlan *b, double m, double level)
{
	double		lo = 0.0;
	double		hi = 1.0;
	double		scale = (a->mech.family == DP_MECH_LAPLACE ? a->scale : a->sigma) +
		fabs(m) * disc_scale(b) * ldexp(1.0, b->lattice_exp);

	hi = scale > 0 ? scale : 1.0;
	while (dp_interval_combo_prob(a, b, m, hi) < level)
	{
		lo = hi;
		hi *= 2.0;
		if (hi > 1e300)
			return INFINITY;
	}
	for (int i = 0; i < 200 && hi - lo > 1e-9 * hi; i++)
	{
		double		mid = 0.5 * (lo + hi);

		if (dp_interval_combo_prob(a, b, m, mid) >= level)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

static double
ratio_term(double k, void *arg)
{
	ComboArg   *c = arg;
	double		denom = c->n + k;

	if (denom < 1.0)
		return 1.0;				/* no count to divide by: counted as a miss */
	return 1.0 - cont_within(c->a, c->m * k, c->h * denom);
}

/* See interval.h. */
double
dp_interval_ratio_miss(const DpNoisePlan *a, const DpNoisePlan *b, double m, double n, double h)
{
	ComboArg	c = {a, m, 0, n, h};

	return disc_expect(b, ratio_term, &c);
}

/* See interval.h. */
double
dp_interval_ratio_halfwidth(const DpNoisePlan *a, const DpNoisePlan *b, double w, double n, double level)
{
	double		miss = 1.0 - level;
	double		lo = 0.0;
	double		hi = 1.0;

	/* with every h the miss is at least P(n + B < 1) */
	if (dp_interval_ratio_miss(a, b, w, n, INFINITY) > miss)
		return INFINITY;
	while (dp_interval_ratio_miss(a, b, w, n, hi) > miss)
	{
		lo = hi;
		hi *= 2.0;
		if (hi > 1e300)
			return INFINITY;
	}
	for (int i = 0; i < 200 && hi - lo > 1e-9 * hi; i++)
	{
		double		mid = 0.5 * (lo + hi);

		if (dp_interval_ratio_miss(a, b, w, n, mid) <= miss)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}
