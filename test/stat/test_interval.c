/*
 * test_interval.c — statistical tests of the intervals that accuracy first
 * stands on: accuracy(halfwidth=H, level=L) answers meet H at L (coverage
 * over many draws), and an average's 95% interval (interval.c) covers about
 * 95% of draws, within a point, where the union bound it replaced covered
 * 99.9% — each with a positive control.
 *
 * The releases are drawn as the aggregates draw them: dp_count's integer
 * noise, dp_sum's noise on its fine lattice, dp_avg's (centred sum + noise)
 * over (count + noise), clamped, its interval from the released pair.
 *
 * Thresholds: misses beyond the least t with P(Binomial(M, 1 - L) >= t) <=
 * 1e-10 (accuracy, a lower bound on coverage); for the average's interval,
 * a coverage outside [0.94, 0.96] widened by STAT_Z = 6.5 binomial standard
 * deviations (8e-11 each side).  Fewer than 20 checks of correct code: the
 * file fails by chance with probability below 1e-9.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accuracy.h"
#include "interval.h"
#include "noise.h"
#include "random.h"
#include "stat.h"
#include "tap.h"

static DpRng rng;

/* The least t above n p with n KL(t/n || p) >= ln(1/alpha). */
static long
binomial_upper(long n, double p, double alpha)
{
	long		t = (long) (n * p) + 1;

	for (; t < n; t++)
	{
		double		a = (double) t / n;

		if (n * (a * log(a / p) + (1 - a) * log((1 - a) / (1 - p))) >= log(1 / alpha))
			break;
	}
	return t;
}

/* One draw of a plan's noise in output units. */
static double
draw(const DpNoisePlan *p)
{
	return (double) dp_sampler_draw(&p->sampler, &rng) * ldexp(1.0, p->lattice_exp);
}

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

/* A. accuracy(H, L) for a count (sensitivity 1) and a sum (sensitivity 37.5) in three families. */
static void
test_accuracy_additive(void)
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
		{DP_MECH_GAUSSIAN, DP_FORM_RHO, 0, 1, 20, 0.9},
		{DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA, 1e-6, 37.5, 800, 0.95},
		{DP_MECH_OSGT, DP_FORM_EPSILON_DELTA, 1e-8, 1, 10, 0.99},
		{DP_MECH_LAPLACE, DP_FORM_EPSILON, 0, 37.5, 300, 0.8},
	};
	const long	M = 100000;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		RealArg		a = {cases[c].sens, cases[c].L};
		DpMechanism m,
					cheaper;
		DpNoisePlan p,
					pc;
		char		err[256],
					text[DP_MECH_TEXT_LEN];
		long		misses = 0,
					misses_cheaper = 0;
		long		bound = binomial_upper(M, 1 - cases[c].L, 1e-10);

		dp_accuracy_resolve(cases[c].family, cases[c].form, cases[c].delta, cases[c].H, real_halfwidth, &a, &m, err,
							sizeof(err));
		dp_noise_plan_real(&p, &m, cases[c].sens, err, sizeof(err));
		cheaper = m;
		cheaper.p[0] *= 0.6;	/* control: a cheaper mechanism of the family */
		dp_noise_plan_real(&pc, &cheaper, cases[c].sens, err, sizeof(err));
		for (long i = 0; i < M; i++)
		{
			misses += fabs(draw(&p)) > cases[c].H;
			misses_cheaper += fabs(draw(&pc)) > cases[c].H;
		}
		dp_mechanism_format(&m, text, sizeof(text));
		tap_ok(misses <= bound, "accuracy(halfwidth=%g, level=%g) at sensitivity %g: %s misses %ld of %ld (threshold %ld)",
			   cases[c].H, cases[c].L, cases[c].sens, text, misses, M, bound);
		tap_ok(misses_cheaper > bound, "positive control: 0.6 of its parameter misses %ld", misses_cheaper);
	}
}

/*
 * An average of n values with centred mean m in [c - w, c + w], released as
 * dp_avg releases it; misses of the interval (avg +- (q + lattice)/count) and
 * of a half-width H.
 */
typedef struct AvgCase
{
	DpNoisePlan sum,
				count;
	double		w;
	double		n;
	double		m;
} AvgCase;

static void
avg_case(AvgCase *a, double eps, double lower, double upper, double n, double m)
{
	DpMechanism half = {DP_MECH_LAPLACE, DP_FORM_EPSILON, {eps / 2, 0}};
	char		err[256];

	a->w = (upper - lower) / 2;
	dp_noise_plan_real(&a->sum, &half, a->w, err, sizeof(err));
	dp_noise_plan(&a->count, &half, 1, 1, 0, err, sizeof(err));
	a->n = n;
	a->m = m;
}

/* One released centred average (clamped) and its count; the true centred mean is a->m. */
static double
avg_draw(const AvgCase *a, double *sum, double *count)
{
	double		avg;

	*sum = a->m * a->n + draw(&a->sum);
	*count = a->n + draw(&a->count);
	avg = *sum / fmax(*count, 1.0);
	return fmin(fmax(avg, -a->w), a->w);
}

/* B. An average's 95% interval covers 95% (within a point); the union bound covered more. */
static void
test_average_interval(void)
{
	struct
	{
		double		eps,
					n,
					m;
	}			cases[] = {
		{1.0, 30, 25},			/* values around 75 in [0, 100]: 30 of them (085's groups) */
		{1.0, 200, 0},
		{0.5, 1000, -40},
		{2.0, 50, 40},
	};
	const long	M = 200000;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		AvgCase		a;
		long		misses = 0,
					misses_union = 0;
		double		qgrid[33];
		double		cover,
					cover_union,
					sd;

		avg_case(&a, cases[c].eps, 0, 100, cases[c].n, cases[c].m);
		for (int i = 0; i <= 32; i++)
			qgrid[i] = dp_interval_combo_quantile(&a.sum, &a.count, a.w * i / 32, 0.95);
		for (long i = 0; i < M; i++)
		{
			double		sum,
						count;
			double		avg = avg_draw(&a, &sum, &count);

			if (count >= 1)
			{
				double		mh = fmin(fabs(sum / count), a.w);
				int			g = (int) ceil(mh / a.w * 32);
				double		h = (qgrid[g] + ldexp(1.0, a.sum.lattice_exp)) / count;
				double		hu = (dp_noise_plan_halfwidth(&a.sum, 0.975) + a.w * dp_noise_plan_halfwidth(&a.count, 0.975)) / count;

				misses += fabs(avg - a.m) > h;
				misses_union += fabs(avg - a.m) > hu;
			}
		}
		cover = 1.0 - (double) misses / M;
		cover_union = 1.0 - (double) misses_union / M;
		sd = sqrt(0.05 * 0.95 / M);
		tap_ok(cover >= 0.94 - STAT_Z * sd && cover <= 0.96 + STAT_Z * sd,
			   "dp_avg's 95%% interval, laplace(epsilon=%g), %g values of centred mean %g in [0, 100]: covers %.4f",
			   cases[c].eps, cases[c].n, cases[c].m, cover);
		tap_ok(cover_union > 0.96 + STAT_Z * sd,
			   "positive control: the union bound's interval is caught covering too much (%.4f)", cover_union);
	}

	/* near a bound the clamp moves answers toward the truth: coverage only rises */
	{
		AvgCase		a;
		long		misses = 0;
		double		q[33];
		double		sd = sqrt(0.05 * 0.95 / M);

		avg_case(&a, 2.0, 0, 100, 50, 49);
		for (int i = 0; i <= 32; i++)
			q[i] = dp_interval_combo_quantile(&a.sum, &a.count, a.w * i / 32, 0.95);
		for (long i = 0; i < M; i++)
		{
			double		sum,
						count;
			double		avg = avg_draw(&a, &sum, &count);

			if (count >= 1)
				misses += fabs(avg - a.m) > (q[(int) ceil(fmin(fabs(sum / count), a.w) / a.w * 32)] +
											  ldexp(1.0, a.sum.lattice_exp)) / count;
		}
		tap_ok(1.0 - (double) misses / M >= 0.94 - STAT_Z * sd,
			   "... 50 values of centred mean 49 (one noise sd from the bound): covers %.4f, the clamp only adding",
			   1.0 - (double) misses / M);
	}
}

/* C. accuracy(H, L, rows=n) for an average: answers of n values meet H at L in the worst case (|m| = w). */
static void
test_accuracy_average(void)
{
	const long	M = 100000;
	double		H = 2.0,
				L = 0.95;
	double		n = 400;
	AvgCase		a;
	double		eps_lo = 1e-3,
				eps_hi = 100;
	long		misses = 0,
				misses_cheaper = 0;
	long		bound = binomial_upper(M, 1 - L, 1e-10);

	/* the cheapest laplace meeting H for n values, as DpAvgHalfwidth searches it (worst mean |m| = w) */
	for (int i = 0; i < 80; i++)
	{
		double		mid = sqrt(eps_lo * eps_hi);

		avg_case(&a, mid, 0, 100, n, 50);
		if (dp_interval_ratio_halfwidth(&a.sum, &a.count, a.w, n, L) <= H)
			eps_hi = mid;
		else
			eps_lo = mid;
	}
	/* 400 values of centred mean 45: near the worst case, five noise sds from the bound (no clamp) */
	avg_case(&a, eps_hi, 0, 100, n, 45);
	for (long i = 0; i < M; i++)
	{
		double		s,
					c;

		misses += fabs(avg_draw(&a, &s, &c) - 45) > H;
	}
	avg_case(&a, eps_hi * 0.6, 0, 100, n, 45);
	for (long i = 0; i < M; i++)
	{
		double		s,
					c;

		misses_cheaper += fabs(avg_draw(&a, &s, &c) - 45) > H;
	}
	tap_ok(misses <= bound,
		   "accuracy(halfwidth=2, level=0.95, rows=400) for dp_avg in [0, 100]: laplace(epsilon=%.4g); 400 values of centred mean 45 miss %ld of %ld (threshold %ld)",
		   eps_hi, misses, M, bound);
	tap_ok(misses_cheaper > bound, "positive control: 0.6 of that epsilon misses %ld", misses_cheaper);
	tap_ok(misses >= M * (1 - L) * 0.5,
		   "... and not wastefully: it misses %ld, at least half its allowance (the cheapest, not a bound)", misses);
}

int
main(void)
{
	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	test_accuracy_additive();
	test_average_interval();
	test_accuracy_average();
	return tap_done();
}
