/*
 * test_accuracy.c — unit tests of accuracy.c (the cheapest mechanism of a
 * family meeting a half-width) and interval.c (an average's exact interval
 * pieces), against independent computations.
 *
 * accuracy: the mechanism found meets the half-width, one a relative 1e-9
 * cheaper does not (within its rounding to 12 digits), for each family, at
 * integer and real sensitivities; a half-width no mechanism meets is refused.
 * interval: P(|A - m B| <= q) against a separate summation (A's continuous
 * Laplace / Gaussian density integrated by Simpson's rule, B's pmf summed
 * directly), the quantile inverts it, and the ratio's miss probability
 * against its definition.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "accuracy.h"
#include "interval.h"
#include "noise.h"
#include "tap.h"

typedef struct RealArg
{
	double		sensitivity;
	double		level;
} RealArg;

static double
real_halfwidth(const DpMechanism *m, void *arg)
{
	RealArg    *a = arg;
	DpNoisePlan p;
	char		err[256];

	if (!dp_noise_plan_real(&p, m, a->sensitivity, err, sizeof(err)))
		return NAN;
	return dp_noise_plan_halfwidth(&p, a->level);
}

static void
test_resolve(void)
{
	struct
	{
		int			family,
					form;
		double		delta,
					sens,
					H,
					L;
	}			cases[] = {
		{DP_MECH_LAPLACE, DP_FORM_EPSILON, 0, 1, 50, 0.95},
		{DP_MECH_LAPLACE, DP_FORM_EPSILON, 0, 1, 0.5, 0.95},	/* integer noise: 0 within 0.5 */
		{DP_MECH_GAUSSIAN, DP_FORM_RHO, 0, 1, 20, 0.9},
		{DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA, 1e-6, 37.5, 800, 0.95},
		{DP_MECH_OSGT, DP_FORM_EPSILON_DELTA, 1e-8, 1, 10, 0.99},
		{DP_MECH_LAPLACE, DP_FORM_EPSILON, 0, 0.25, 3, 0.999},
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		RealArg		a = {cases[c].sens, cases[c].L};
		DpMechanism m,
					less;
		char		err[256],
					text[DP_MECH_TEXT_LEN];
		bool		ok = dp_accuracy_resolve(cases[c].family, cases[c].form, cases[c].delta, cases[c].H, real_halfwidth,
											 &a, &m, err, sizeof(err));
		double		h = ok ? real_halfwidth(&m, &a) : NAN;
		double		h_less;

		less = m;
		less.p[0] = m.p[0] * (1 - 1e-9) - 1e-11 * m.p[0];	/* below the 12-digit rounding */
		h_less = real_halfwidth(&less, &a);
		dp_mechanism_format(&m, text, sizeof(text));
		tap_ok(ok && h <= cases[c].H && h_less > cases[c].H && m.family == cases[c].family && m.form == cases[c].form,
			   "halfwidth %g at %g, sensitivity %g: %s (half-width %g; %g with a relative 1e-9 less)",
			   cases[c].H, cases[c].L, cases[c].sens, text, h, h_less);
	}
	{
		RealArg		a = {1000, 0.999999999};
		DpMechanism m;
		char		err[256];
		bool		ok = dp_accuracy_resolve(DP_MECH_LAPLACE, DP_FORM_EPSILON, 0, 0.5, real_halfwidth, &a, &m,
											 err, sizeof(err));

		tap_ok(!ok && strstr(err, "meets the half-width") != NULL, "a half-width no mechanism meets is refused: %s", err);
		ok = dp_accuracy_resolve(DP_MECH_LAPLACE, DP_FORM_EPSILON, 0, NAN, real_halfwidth, &a, &m, err, sizeof(err));
		tap_ok(!ok, "a NaN half-width is refused");
	}
}

/* A's continuous density (Laplace scale b, or Gaussian sigma). */
static double
density(const DpNoisePlan *a, double x)
{
	if (a->mech.family == DP_MECH_LAPLACE)
		return exp(-fabs(x) / a->scale) / (2 * a->scale);
	return exp(-x * x / (2 * a->sigma * a->sigma)) / (sqrt(2 * M_PI) * a->sigma);
}

/* P(|A - c| <= q) by Simpson's rule on A's density (a kink at 0 for the Laplace: split there). */
static double
within_reference(const DpNoisePlan *a, double c, double q)
{
	double		ends[3] = {c - q, 0, c + q};
	int			parts = (c - q < 0 && 0 < c + q) ? 2 : 1;
	double		total = 0;

	if (parts == 1)
		ends[1] = c + q;
	for (int p = 0; p < parts; p++)
	{
		int			n = 2000;
		double		lo = ends[p],
					hi = ends[p + 1],
					dx = (hi - lo) / n,
					acc = density(a, lo) + density(a, hi);

		for (int i = 1; i < n; i++)
			acc += density(a, lo + i * dx) * (i % 2 ? 4 : 2);
		total += acc * dx / 3;
	}
	return total;
}

/* B's unnormalised pmf at k. */
static double
pmf_weight(const DpNoisePlan *b, long k)
{
	return b->mech.family == DP_MECH_LAPLACE ? exp(-labs(k) / b->t) : exp(-(double) k * k / (2 * b->sigma2));
}

/* P(|A - m B| <= q): Simpson's rule on A's density, a direct sum over B's pmf. */
static double
combo_reference(const DpNoisePlan *a, const DpNoisePlan *b, double m, double q)
{
	double		scale = b->mech.family == DP_MECH_LAPLACE ? b->t : sqrt(b->sigma2);
	long		K = (long) (60 * scale) + 2;
	double		z = 0,
				s = 0;

	for (long k = -K; k <= K; k++)
	{
		z += pmf_weight(b, k);
		s += pmf_weight(b, k) * within_reference(a, m * k, q);
	}
	return s / z;
}

static void
test_interval(void)
{
	DpMechanism lap = {DP_MECH_LAPLACE, DP_FORM_EPSILON, {0.5, 0}};
	DpMechanism gau = {DP_MECH_GAUSSIAN, DP_FORM_RHO, {0.05, 0}};
	DpNoisePlan sum,
				count,
				gsum,
				gcount;
	char		err[256];
	double		worst = 0;

	dp_noise_plan_real(&sum, &lap, 50, err, sizeof(err));
	dp_noise_plan(&count, &lap, 1, 1, 0, err, sizeof(err));
	dp_noise_plan_real(&gsum, &gau, 50, err, sizeof(err));
	dp_noise_plan(&gcount, &gau, 1, 1, 0, err, sizeof(err));
	for (double m = 0; m <= 50; m += 12.5)
		for (double q = 50; q <= 800; q *= 2)
		{
			double		d1 = fabs(dp_interval_combo_prob(&sum, &count, m, q) - combo_reference(&sum, &count, m, q));
			double		d2 = fabs(dp_interval_combo_prob(&gsum, &gcount, m, q) - combo_reference(&gsum, &gcount, m, q));

			worst = fmax(worst, fmax(d1, d2));
		}
	tap_ok(worst < 1e-9, "P(|A - m B| <= q) agrees with Simpson's rule and a direct sum (Laplace and Gaussian, 5 m x 5 q): %.2g",
		   worst);
	{
		double		q = dp_interval_combo_quantile(&sum, &count, 30, 0.95);

		tap_ok(dp_interval_combo_prob(&sum, &count, 30, q) >= 0.95 &&
			   dp_interval_combo_prob(&sum, &count, 30, q * (1 - 1e-6)) < 0.95,
			   "the quantile inverts it: P(|A - 30 B| <= %.6g) >= 0.95 and not below it", q);
		tap_ok(dp_interval_combo_quantile(&sum, &count, 50, 0.95) > q && dp_interval_combo_quantile(&sum, &count, 0, 0.95) < q,
			   "... and grows with |m|");
	}
	{
		/* the miss probability of an average of 400 values at h = 2, against its definition summed here */
		double		miss = dp_interval_ratio_miss(&sum, &count, 50, 400, 2);
		double		ref = 0,
					z = 0;

		for (long k = -(long) (60 * count.t) - 2; k <= (long) (60 * count.t) + 2; k++)
		{
			double		w = pmf_weight(&count, k);

			z += w;
			ref += w * (400 + k < 1 ? 1.0 : 1.0 - within_reference(&sum, 50.0 * k, 2.0 * (400 + k)));
		}
		ref /= z;
		tap_ok(fabs(miss - ref) < 1e-9 && fabs(dp_interval_ratio_halfwidth(&sum, &count, 50, 400, 1 - miss) - 2) < 1e-6,
			   "an average of 400 values misses h = 2 with probability %.9g (summed here: %.9g); the half-width at 1 - that is 2",
			   miss, ref);
	}
}

int
main(void)
{
	test_resolve();
	test_interval();
	return tap_done();
}
