/*
 * moments.c — a variance from noisy moments.
 *
 * STDDEV / VARIANCE of BI tools are answered from three releases of the
 * values x in [c - h, c + h] (c, h from the domain), each with a third of
 * the mechanism: n = count, s1 = sum(x - c) (sensitivity h), s2 = sum((x -
 * c)^2) (sensitivity h^2), so that sums of centred values carry the noise of
 * the domain's half-width rather than of its larger end.  For the true
 * moments N, S1, S2 the population variance is S2/N - (S1/N)^2 and the
 * sample variance (S2 - S1^2/N) / (N - 1); on noisy ones:
 *
 *   population: n' = max(n, 1), m = clamp(s1 / n', -h, h),
 *               v = clamp(s2 / n' - m^2, 0, h^2)
 *   sample:     n' = max(n, 2), v = clamp((s2 - s1^2 / n') / (n' - 1), 0, h^2 n' / (n' - 1))
 *
 * (post-processing: the clamps keep the answer in the range a variance of
 * values in [c - h, c + h] can take, never negative).  The noise has mean
 * zero and is independent across the releases, so E[s2] = S2, E[s1] = S1,
 * E[n] = N; the estimate's bias comes from the ratios and from E[s1^2] =
 * S1^2 + Var(noise of s1): to second order it is S2 Var_n / N^3 - Var_1 /
 * N^2 - 3 S1^2 Var_n / N^4, of order (h / epsilon N)^2 -- far below the
 * noise of s2 / n for any N that makes a variance worth asking
 * (test/stat/test_moments.c measures both).
 *
 * The interval: when each noisy moment is within a_i of the true one (with
 * halfwidths at level 1 - alpha/3 each, all three hold with probability at
 * least 1 - alpha: a union bound), the true variance is the estimator's
 * value at some point of the box [n +- an] x [s1 +- a1] x [s2 +- a2]; for a
 * fixed N the population variance grows with S2 and falls with |S1|, and in
 * N it is S2/N - S1^2/N^2, whose only stationary point is N = 2 S1^2 / S2:
 * its extremes over the box are at those points.  The sample variance is
 * the population variance times N / (N - 1), decreasing in N: the product
 * of the two ranges holds it.
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include <math.h>

#include "moments.h"

/* x clamped to [lo, hi]. */
static double
clampd(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

/* The variance estimate (see above). */
double
dp_moments_variance(double n, double s1, double s2, double h, bool sample)
{
	double		nn;
	double		v;

	if (isnan(n) || isnan(s1) || isnan(s2) || !(h >= 0))
		return NAN;
	if (!sample)
	{
		double		m;

		nn = n > 1 ? n : 1;
		m = clampd(s1 / nn, -h, h);
		return clampd(s2 / nn - m * m, 0, h * h);
	}
	nn = n > 2 ? n : 2;
	v = (s2 - s1 * s1 / nn) / (nn - 1);
	return clampd(v, 0, h * h * nn / (nn - 1));
}

/* S2/N - S1^2/N^2 for N >= 1 (the population variance of the moments). */
static double
pop(double n, double s1sq, double s2)
{
	return s2 / n - s1sq / (n * n);
}

/* The range of pop over N in [nlo, nhi] for fixed S1^2 and S2 (see above). */
static void
pop_range(double nlo, double nhi, double s1sq, double s2, double *lo, double *hi)
{
	double		a = pop(nlo, s1sq, s2);
	double		b = pop(nhi, s1sq, s2);

	*lo = a < b ? a : b;
	*hi = a > b ? a : b;
	if (s2 > 0)
	{
		double		stat = 2 * s1sq / s2;

		if (stat > nlo && stat < nhi)
		{
			double		c = pop(stat, s1sq, s2);

			*lo = c < *lo ? c : *lo;
			*hi = c > *hi ? c : *hi;
		}
	}
}

/* An interval holding the variance of the true moments (see above). */
void
dp_moments_variance_interval(double n, double s1, double s2, double h, bool sample,
							 double an, double a1, double a2, double *lo, double *hi)
{
	double		nlo = n - an;
	double		nhi = n + an;
	double		s1min = (s1 - a1 <= 0 && s1 + a1 >= 0) ? 0 : fmin(fabs(s1 - a1), fabs(s1 + a1));
	double		s1max = fmax(fabs(s1 - a1), fabs(s1 + a1));
	double		s2lo = s2 - a2 > 0 ? s2 - a2 : 0;
	double		s2hi = s2 + a2 > 0 ? s2 + a2 : 0;
	double		l1,
				h1,
				l2,
				h2;
	double		vmax = h * h;

	nlo = nlo > (sample ? 2 : 1) ? nlo : (sample ? 2 : 1);
	nhi = nhi > nlo ? nhi : nlo;
	/* the smallest: least S2, largest |S1|; the largest: most S2, least |S1| */
	pop_range(nlo, nhi, s1max * s1max, s2lo, &l1, &h1);
	pop_range(nlo, nhi, s1min * s1min, s2hi, &l2, &h2);
	(void) h1;
	(void) l2;
	*lo = clampd(l1, 0, vmax);
	*hi = clampd(h2, 0, vmax);
	if (sample)
	{
		/* times N / (N - 1), which falls with N */
		*lo *= nhi / (nhi - 1);
		*hi *= nlo / (nlo - 1);
	}
}
