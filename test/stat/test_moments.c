/*
 * test_moments.c — statistical tests of the variance from noisy moments
 * (src/core/moments.c: STDDEV / VARIANCE of BI tools), with positive
 * controls.
 *
 * Data: 2,000 values in [0, 60] over the domain [0, 100] (c = 50, h = 50:
 * their mean is far from the domain's centre, so that the centring matters).
 * Each of the 10^6 trials adds to the exact moments the noise dp_pg draws:
 * the exact samplers of src/core/sample.c planned by src/core/noise.c for
 * a third of the mechanism each (count: sensitivity 1; sum of x - c: h; sum
 * of (x - c)^2: h^2), for laplace(epsilon=1) and gaussian(epsilon=1,
 * delta=1e-6), population and sample variance.
 *
 *   - unbiasedness: the mean of the estimates is within B + 6.5 s / sqrt(T)
 *     of the true variance, s the estimates' standard deviation and B four
 *     times the estimator's second-order bias (S2 Var_n / N^3 + Var_1 / N^2
 *     + 3 S1^2 Var_n / N^4; moments.c): a false failure needs a 6.5-sigma
 *     deviation of a mean of 10^6 i.i.d. terms (below 1e-10 each);
 *   - coverage: the 95 % interval (halfwidths at level 1 - 0.05/3 per
 *     moment) misses the true variance in at most 5 % of the trials plus
 *     6.5 binomial standard deviations (below 1e-10 each).
 * Positive controls (each must be rejected): the variance without the
 * mean's square (uncentred), the population estimate given for the sample
 * variance (under Laplace noise: the Gaussian's larger noise of the sum
 * makes the bias bound exceed their difference, V / (N - 1)), and an
 * interval whose noise is planned for the whole epsilon instead of a third
 * (too narrow).  Every test here fails by chance
 * with probability below 1e-9 in total.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mechanism.h"
#include "moments.h"
#include "noise.h"
#include "random.h"
#include "sample.h"
#include "stat.h"
#include "tap.h"

#define N 2000
#define TRIALS 1000000
#define LO 0.0
#define HI 100.0

/* The estimator under test: the product's, or a broken variant. */
typedef double (*Estimator) (double n, double s1, double s2, double h, bool sample);

/* control: the mean of the squares without the square of the mean */
static double
uncentred(double n, double s1, double s2, double h, bool sample)
{
	(void) s1;
	(void) sample;
	(void) h;
	return s2 / (n > 1 ? n : 1);
}

/* control: the population estimate whatever is asked */
static double
population_only(double n, double s1, double s2, double h, bool sample)
{
	(void) sample;
	return dp_moments_variance(n, s1, s2, h, false);
}

/* One noise draw of plan, in output units. */
static double
draw(const DpNoisePlan *plan, DpRng *rng)
{
	return (double) dp_sampler_draw(&plan->sampler, rng) * ldexp(1.0, plan->lattice_exp);
}

/* Plans for the three moments with mech split three ways (split = 3) or not (split = 1: the control). */
static void
plans(const char *mechtext, int split, DpNoisePlan *pn, DpNoisePlan *p1, DpNoisePlan *p2)
{
	DpMechanism mech;
	char		err[256];
	double		h = (HI - LO) / 2;

	if (!dp_mechanism_parse(mechtext, &mech, err, sizeof(err)))
	{
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	if (split > 1)
	{
		/* epsilon (and delta) divided: basic composition of the three releases, as DpSplitMechanism */
		mech.p[0] /= split;
		if (mech.form == DP_FORM_EPSILON_DELTA)
			mech.p[1] /= split;
	}
	if (!dp_noise_plan(pn, &mech, 1, 1, 0, err, sizeof(err)) ||
		!dp_noise_plan_real(p1, &mech, h, err, sizeof(err)) ||
		!dp_noise_plan_real(p2, &mech, h * h, err, sizeof(err)))
	{
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
}

typedef struct Result
{
	double		mean;			/* mean of the estimates */
	double		sd;				/* their standard deviation */
	long		misses;			/* trials whose interval missed the true variance */
} Result;

/* T trials of est (and of the interval from the interval plans, which may differ from the noise's). */
static Result
trials(Estimator est, bool sample, const DpNoisePlan *pn, const DpNoisePlan *p1, const DpNoisePlan *p2,
	   const DpNoisePlan *in, const DpNoisePlan *i1, const DpNoisePlan *i2,
	   double n0, double s10, double s20, double truth, DpRng *rng)
{
	double		h = (HI - LO) / 2;
	double		level = 1.0 - 0.05 / 3.0;
	double		an = dp_noise_plan_halfwidth(in, level);
	double		a1 = dp_noise_plan_halfwidth(i1, level);
	double		a2 = dp_noise_plan_halfwidth(i2, level);
	double		sum = 0,
				sumsq = 0;
	Result		r = {0, 0, 0};

	for (long t = 0; t < TRIALS; t++)
	{
		double		n = n0 + draw(pn, rng);
		double		s1 = s10 + draw(p1, rng);
		double		s2 = s20 + draw(p2, rng);
		double		v = est(n, s1, s2, h, sample);
		double		lo,
					hi;

		sum += v;
		sumsq += v * v;
		dp_moments_variance_interval(n, s1, s2, h, sample, an, a1, a2, &lo, &hi);
		if (truth < lo || truth > hi)
			r.misses++;
	}
	r.mean = sum / TRIALS;
	r.sd = sqrt(fmax(sumsq / TRIALS - r.mean * r.mean, 0));
	return r;
}

/* The largest number of misses a 95 % interval may have in TRIALS trials (false failure below 1e-10). */
static double
max_misses(void)
{
	return TRIALS * 0.05 + STAT_Z * sqrt(TRIALS * 0.05 * 0.95);
}

int
main(void)
{
	static const char *const mechs[] = {"laplace(epsilon=1)", "gaussian(epsilon=1, delta=1e-6)"};
	DpRng		rng;
	double		x[N];
	double		c = (LO + HI) / 2;
	double		s1 = 0,
				s2 = 0,
				sum = 0,
				sumsq = 0;
	double		vpop,
				vsamp;

	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	for (int i = 0; i < N; i++)
	{
		x[i] = (double) ((i * 37) % 101) * 0.6;
		s1 += x[i] - c;
		s2 += (x[i] - c) * (x[i] - c);
		sum += x[i];
		sumsq += x[i] * x[i];
	}
	vpop = sumsq / N - (sum / N) * (sum / N);
	vsamp = vpop * N / (N - 1);

	/* the estimator on exact moments is the variance */
	tap_ok(fabs(dp_moments_variance(N, s1, s2, 50, false) - vpop) < 1e-9 * vpop &&
		   fabs(dp_moments_variance(N, s1, s2, 50, true) - vsamp) < 1e-9 * vsamp,
		   "exact moments give the population and sample variance (%.4f, %.4f)", vpop, vsamp);
	tap_ok(dp_moments_variance(-5, 1e9, -1e9, 50, false) == 0 && dp_moments_variance(0, 0, 1e12, 50, true) <= 2 * 2500 &&
		   isnan(dp_moments_variance(NAN, 0, 0, 50, false)),
		   "post-processing: never negative, never above what values of the domain can have");

	for (int m = 0; m < 2; m++)
	{
		DpNoisePlan pn,
					p1,
					p2,
					wn,
					w1,
					w2;

		plans(mechs[m], 3, &pn, &p1, &p2);
		plans(mechs[m], 1, &wn, &w1, &w2);
		for (int sample = 0; sample <= 1; sample++)
		{
			double		truth = sample ? vsamp : vpop;
			double		bias = 4 * (s2 * pn.variance / pow(N, 3) + p1.variance / pow(N, 2) +
									3 * s1 * s1 * pn.variance / pow(N, 4)) * (sample ? (double) N / (N - 1) : 1);
			Result		r = trials(dp_moments_variance, sample, &pn, &p1, &p2, &pn, &p1, &p2, N, s1, s2, truth, &rng);
			double		tol = bias + STAT_Z * r.sd / sqrt(TRIALS);
			const char *what = sample ? "sample" : "population";

			tap_diag("%s, %s: mean %.5f, truth %.5f, tolerance %.5f (bias bound %.5f), misses %ld of %d (at most %.0f)",
					 mechs[m], what, r.mean, truth, tol, bias, r.misses, TRIALS, max_misses());
			tap_ok(fabs(r.mean - truth) <= tol, "%s, %s variance: unbiased within its bias bound", mechs[m], what);
			tap_ok(r.misses <= max_misses(), "%s, %s variance: the 95%% interval covers", mechs[m], what);

			/* positive controls */
			if (!sample || m > 0)
			{
				Result		u = trials(uncentred, sample, &pn, &p1, &p2, &pn, &p1, &p2, N, s1, s2, truth, &rng);

				tap_ok(fabs(u.mean - truth) > bias + STAT_Z * u.sd / sqrt(TRIALS),
					   "control: the uncentred estimate is rejected (mean %.3f)", u.mean);
			}
			else
			{
				Result		p = trials(population_only, true, &pn, &p1, &p2, &pn, &p1, &p2, N, s1, s2, truth, &rng);

				tap_ok(fabs(p.mean - truth) > bias + STAT_Z * p.sd / sqrt(TRIALS),
					   "control: the population estimate for the sample variance is rejected (mean %.4f)", p.mean);
			}
			{
				Result		w = trials(dp_moments_variance, sample, &pn, &p1, &p2, &wn, &w1, &w2, N, s1, s2, truth, &rng);

				tap_ok(w.misses > max_misses(),
					   "control: an interval planned for the whole epsilon is rejected (%ld misses)", w.misses);
			}
		}
	}
	return tap_done();
}
