/*
 * test_groupwise.c — statistical tests of groupwise(rho, r) (core/groupwise.c,
 * noise.c): the release's pmf against the exact one, its relative error
 * (unbiased, the exact variance, seed 001's bound on E|Y - x|), and the
 * coverage of its per-value interval, each with a positive control.
 *
 * Thresholds as in stat.h: chi-square beyond chi2_threshold (< 4e-11), z
 * beyond STAT_Z = 6.5 (8e-11), interval misses beyond the least t with
 * P(Binomial(M, 0.05) >= t) <= 1e-10.  Fewer than 10 such checks of correct
 * code: the file fails by chance with probability below 1e-9.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "groupwise.h"
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

/* A planned groupwise(rho, r) release for a count. */
static DpNoisePlan
plan_of(double rho, double r)
{
	DpNoisePlan plan;
	DpMechanism mech = {DP_MECH_GROUPWISE, DP_FORM_GROUPWISE, {rho, r}};
	char		err[256];

	if (!dp_noise_plan(&plan, &mech, 1, 1, 0, err, sizeof(err)))
	{
		tap_diag("plan: %s", err);
		exit(1);
	}
	return plan;
}

/* A broken second step for the controls: N_Z(0, (r' X)^2) with another r. */
static int64_t
broken_release(const DpNoisePlan *plan, double r_wrong, int64_t x)
{
	DpGroupwise g;
	char		err[256];
	bool		overflow;
	int64_t		X = x + dp_sampler_draw(&plan->sampler, &rng);

	dp_groupwise_prepare(&g, r_wrong, err, sizeof(err));
	return dp_groupwise_second(&g, X, &rng, &overflow);
}

/* A. Pearson's chi-square of N releases of x against the exact pmf (bins >= 20 expected, tails pooled). */
static double
chi2_release(const DpNoisePlan *plan, int64_t x, long N, double r_wrong, int *df)
{
	int64_t		lo,
				hi;
	long		n;
	double	   *lp;
	long	   *count;
	double		chi2 = 0;
	double		e_acc = 0;
	long		c_acc = 0;

	dp_groupwise_support(plan->sigma2, &plan->gw, x, &lo, &hi);
	n = (long) (hi - lo + 1);
	lp = malloc(n * sizeof(double));
	count = calloc(n, sizeof(long));
	dp_groupwise_logpmf(plan->sigma2, &plan->gw, x, lo, hi, lp);
	for (long i = 0; i < N; i++)
	{
		bool		overflow;
		int64_t		y = r_wrong > 0 ? broken_release(plan, r_wrong, x) : dp_noise_release(plan, x, &rng, &overflow);

		if (y < lo)
			y = lo;
		if (y > hi)
			y = hi;
		count[y - lo]++;
	}
	*df = -1;
	for (long i = 0; i < n; i++)
	{
		e_acc += N * exp(lp[i]);
		c_acc += count[i];
		if (e_acc >= 20 && N * (1 - e_acc / N) >= 20)
		{
			chi2 += (c_acc - e_acc) * (c_acc - e_acc) / e_acc;
			(*df)++;
			e_acc = 0;
			c_acc = 0;
		}
	}
	if (e_acc > 0)
	{
		chi2 += (c_acc - e_acc) * (c_acc - e_acc) / e_acc;
		(*df)++;
	}
	free(lp);
	free(count);
	return chi2;
}

static void
test_pmf(void)
{
	struct
	{
		double		rho,
					r;
		int64_t		x;
	}			cases[] = {
		{0.5, 0.5, 5},			/* a small group: X = 0 has mass, the second step is coarse */
		{0.5, 0.05, 40},		/* the second step's sd about 2 */
		{0.02, 0.1, 300},		/* sigma1 = 5, second step's sd about 30 */
	};

	for (int c = 0; c < 3; c++)
	{
		DpNoisePlan plan = plan_of(cases[c].rho, cases[c].r);
		int			df;
		double		chi2 = chi2_release(&plan, cases[c].x, 2000000, 0, &df);

		tap_ok(chi2 < chi2_threshold(df), "groupwise(rho=%g, r=%g), a count of %lld: chi-square %.1f < %.1f (df %d)",
			   cases[c].rho, cases[c].r, (long long) cases[c].x, chi2, chi2_threshold(df), df);
	}
	{
		DpNoisePlan plan = plan_of(0.5, 0.05);
		int			df;
		double		chi2 = chi2_release(&plan, 40, 2000000, 0.06, &df);

		tap_ok(chi2 >= chi2_threshold(df), "positive control: r = 0.06 posing as 0.05 is caught (chi-square %.0f, df %d)",
			   chi2, df);
	}
}

/*
 * B, C. M releases of a large count: mean x, variance the exact
 * E[Var_Z(r X)] + Var_Z(sigma1), mean absolute error below seed 001's
 * r x + sigma sqrt(1 + r^2), and the 95% interval's misses.
 */
static void
test_relative_error(void)
{
	const long	M = 40000;
	const int64_t x = 10000;
	DpNoisePlan plan = plan_of(0.5, 0.05);
	double		var = dp_groupwise_variance(plan.sigma2, &plan.gw, x);
	double		s = 0,
				s2 = 0,
				sa = 0,
				sa2 = 0,
				sw = 0,
				sw2 = 0;
	long		misses = 0,
				misses_third = 0;
	long		bound = binomial_upper(M, 0.05, 1e-10);
	double		seed_bound = 0.05 * x + sqrt(plan.sigma2) * sqrt(1 + 0.05 * 0.05);

	for (long i = 0; i < M; i++)
	{
		bool		overflow;
		int64_t		y = dp_noise_release(&plan, x, &rng, &overflow);
		double		d = (double) (y - x);
		double		sd,
					lo,
					hi;
		int64_t		w = broken_release(&plan, 0.1, x);

		s += d;
		s2 += d * d;
		sa += fabs(d);
		sa2 += d * d;
		sw += (double) (w - x) * (double) (w - x);
		sw2 += pow((double) (w - x), 4);
		dp_noise_groupwise_bar(&plan, (double) y, 0.95, &sd, &lo, &hi);
		misses += !((double) x >= lo && (double) x <= hi);
		misses_third += !(fabs((double) x - (double) y) <= (hi - lo) / 6);
	}
	{
		double		mean = s / M;
		double		v = (s2 - s * s / M) / (M - 1);
		double		mae = sa / M;
		double		mae_sd = sqrt((sa2 / M - mae * mae) / M);
		double		vw = sw / M;

		tap_ok(fabs(mean) < STAT_Z * sqrt(var / M),
			   "groupwise(rho=0.5, r=0.05), a count of 10,000: unbiased (mean error %.2f, z = %.2f)", mean,
			   mean / sqrt(var / M));
		tap_ok(fabs(v / var - 1) < STAT_Z * sqrt(2.0 / (M - 1)),
			   "... its variance is the exact %.1f (%.1f; seed 001: r^2 (x^2 + sigma^2) + sigma^2 = %.1f)", var, v,
			   0.0025 * (1e8 + plan.sigma2) + plan.sigma2 * 1.0025);
		tap_ok(fabs(vw / var - 1) >= STAT_Z * sqrt(2.0 / (M - 1)),
			   "positive control: r = 0.1 posing as 0.05 is caught by the variance (%.0f)", vw);
		tap_ok(mae <= seed_bound + STAT_Z * mae_sd,
			   "... mean absolute error %.1f, below seed 001's r x + sigma sqrt(1 + r^2) = %.1f (relative %.4f)", mae,
			   seed_bound, mae / x);
		tap_ok(misses <= bound, "... the 95%% interval misses %ld of %ld (threshold %ld)", misses, M, bound);
		tap_ok(misses_third > bound, "positive control: at a third of its width it misses %ld", misses_third);
	}
}

int
main(void)
{
	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	test_pmf();
	test_relative_error();
	return tap_done();
}
