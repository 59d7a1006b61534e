/*
 * test_rr.c — statistical tests of randomized response (core/rr.c): the
 * reports' frequencies, the likelihood ratio of neighbouring inputs, the
 * estimates' unbiasedness, variance and interval coverage, and seed 002's
 * worked example (1,000,000 patients at epsilon 1, beta 0.05), each with a
 * positive control that the same test must reject.
 *
 * Thresholds: a z statistic beyond STAT_Z = 6.5 (8e-11 two-sided), Pearson's
 * chi-square beyond chi2_threshold (< 4e-11), and interval misses beyond the
 * least t with P(Binomial(M, 0.05) >= t) <= 1e-10 (Chernoff / KL, exact
 * as a bound).  Every statistic here is a sum of 10^5 or more independent
 * bounded terms (normal to well within these tails), and there are fewer
 * than 10 such checks of correct code, so the file fails by chance with
 * probability below 1e-9.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "noise.h"
#include "random.h"
#include "rr.h"
#include "stat.h"
#include "tap.h"

static DpRng rng;

/* The least t above n p with n KL(t/n || p) >= ln(1/alpha): P(Bin(n, p) >= t) <= alpha. */
static long
binomial_upper(long n, double p, double alpha)
{
	long		t = (long) (n * p) + 1;

	for (; t < n; t++)
	{
		double		a = (double) t / n;
		double		kl = a * log(a / p) + (1 - a) * log((1 - a) / (1 - p));

		if (n * kl >= log(1 / alpha))
			break;
	}
	return t;
}

/* A broken randomizer for the controls: keep the truth with probability keep, else a uniform other value (floating point). */
static int
broken_draw(double keep, int k, int x)
{
	double		u = (double) (dp_rng_u64(&rng) >> 11) * 0x1p-53;

	if (u < keep)
		return x;
	return (int) ((x + 1 + dp_rng_uniform(&rng, (uint64_t) (k - 1))) % k);
}

/* z statistic of a count against Binomial(n, p). */
static double
binomial_z(long count, long n, double p)
{
	return (count - n * p) / sqrt(n * p * (1 - p));
}

/* A. The reports' frequencies against e^eps/(e^eps + k - 1) and 1/(e^eps + k - 1). */
static void
test_frequencies(void)
{
	const long	N = 4000000;
	double		eps_list[] = {1.0, 1.0986122886681098 /* ln 3: seed 002's AlmostRandom, 3/4 */ };

	for (int c = 0; c < 2; c++)
	{
		DpRR		rr;
		char		err[256];
		long		keep = 0;
		double		p;

		dp_rr_prepare(&rr, eps_list[c], 2, err, sizeof(err));
		p = dp_rr_keep_probability(eps_list[c], 2);
		for (long i = 0; i < N; i++)
			keep += dp_rr_draw(&rr, 1, &rng) == 1;
		tap_ok(fabs(binomial_z(keep, N, p)) < STAT_Z,
			   "binary rr(epsilon=%.6g): %ld of %ld reports keep the truth, z = %.2f against p = %.6f",
			   eps_list[c], keep, N, binomial_z(keep, N, p), p);
	}
	/* control: a floating-point coin for epsilon 1.05 posing as 1 */
	{
		long		keep = 0;
		double		p = dp_rr_keep_probability(1.0, 2);

		for (long i = 0; i < N; i++)
			keep += broken_draw(dp_rr_keep_probability(1.05, 2), 2, 1) == 1;
		tap_ok(fabs(binomial_z(keep, N, p)) >= STAT_Z,
			   "positive control: epsilon 1.05's coin posing as 1 is caught (z = %.1f)", binomial_z(keep, N, p));
	}

	/* k-ary: chi-square over the k reports */
	for (int control = 0; control <= 1; control++)
	{
		const int	k = 6;
		const int	x = 2;
		double		eps = 1.5;
		long		count[6] = {0};
		double		chi2 = 0;
		DpRR		rr;
		char		err[256];

		dp_rr_prepare(&rr, eps, k, err, sizeof(err));
		for (long i = 0; i < N; i++)
		{
			int			r;

			if (!control)
				r = dp_rr_draw(&rr, x, &rng);
			else
			{
				/* control: the truth kept exactly, the other reports not uniform */
				r = dp_rr_draw(&rr, x, &rng);
				if (r == (x + 1) % k && (dp_rng_u64(&rng) & 7) == 0)
					r = (x + 2) % k;
			}
			count[r]++;
		}
		for (int j = 0; j < k; j++)
		{
			double		e = N * (j == x ? dp_rr_keep_probability(eps, k) : dp_rr_other_probability(eps, k));

			chi2 += (count[j] - e) * (count[j] - e) / e;
		}
		if (!control)
			tap_ok(chi2 < chi2_threshold(k - 1), "rr(epsilon=1.5) over 6 keys: chi-square %.2f < %.2f (df 5)",
				   chi2, chi2_threshold(k - 1));
		else
			tap_ok(chi2 >= chi2_threshold(k - 1),
				   "positive control: other reports 12%% off uniform are caught (chi-square %.0f)", chi2);
	}
}

/*
 * B. Neighbouring inputs x, x': for every report o, a lower confidence
 * bound of P(o | x) over an upper confidence bound of P(o | x') must not
 * exceed e^eps (each bound at STAT_Z standard deviations: a correct
 * randomizer passes with probability 1 - 1e-10 per report).
 */
static double
worst_ratio_bound(int (*draw) (const DpRR *, int, int), const DpRR *rr, int k, int x, int x2, long N)
{
	long	   *cx = calloc(k, sizeof(long));
	long	   *cy = calloc(k, sizeof(long));
	double		worst = 0;

	for (long i = 0; i < N; i++)
	{
		cx[draw(rr, k, x)]++;
		cy[draw(rr, k, x2)]++;
	}
	for (int o = 0; o < k; o++)
		for (int dir = 0; dir < 2; dir++)
		{
			double		a = (double) (dir ? cy[o] : cx[o]) / N;
			double		b = (double) (dir ? cx[o] : cy[o]) / N;
			double		lo = a - STAT_Z * sqrt(a * (1 - a) / N);
			double		hi = b + STAT_Z * sqrt(b * (1 - b) / N);

			if (hi > 0 && lo / hi > worst)
				worst = lo / hi;
		}
	free(cx);
	free(cy);
	return worst;
}

static int
real_draw(const DpRR *rr, int k, int x)
{
	(void) k;
	return dp_rr_draw(rr, x, &rng);
}

/* control: randomized response at epsilon 1.3 (floating point) */
static int
loose_draw(const DpRR *rr, int k, int x)
{
	(void) rr;
	return broken_draw(dp_rr_keep_probability(1.3, k), k, x);
}

static void
test_likelihood_ratio(void)
{
	const long	N = 2000000;
	DpRR		rr;
	char		err[256];
	double		w;

	dp_rr_prepare(&rr, 1.0, 2, err, sizeof(err));
	w = worst_ratio_bound(real_draw, &rr, 2, 0, 1, N);
	tap_ok(w <= exp(1.0), "binary rr(epsilon=1), inputs 0 and 1: every report's likelihood ratio <= e (lower bound %.4f)", w);
	w = worst_ratio_bound(loose_draw, &rr, 2, 0, 1, N);
	tap_ok(w > exp(1.0), "positive control: epsilon 1.3 posing as 1 breaks the bound (lower bound %.4f > %.4f)", w, exp(1.0));

	dp_rr_prepare(&rr, 0.75, 4, err, sizeof(err));
	w = worst_ratio_bound(real_draw, &rr, 4, 3, 1, N);
	tap_ok(w <= exp(0.75), "rr(epsilon=0.75) over 4 keys, inputs 3 and 1: every ratio <= e^0.75 (lower bound %.4f)", w);
}

/*
 * C, D. Estimates over M randomizations of a fixed table: their mean (the
 * truth: unbiased), their variance (the exact formula), and how often the
 * interval misses the truth (at most the Binomial(M, 0.05) threshold), with
 * and without noise on the report counts.
 */
typedef struct EstRun
{
	double		mean;
	double		var;
	long		misses;
	long		misses_third;	/* the same intervals at a third of their width */
	long		naive_misses;
	double		naive_mean;
} EstRun;

static EstRun
run_estimates(double eps, int k, const long *truth, int v, long M, const DpNoisePlan *noise)
{
	long		n = 0;
	double		s = 0,
				s2 = 0,
				naive = 0;
	EstRun		r = {0};
	DpRR		rr;
	char		err[256];
	long	   *reports = calloc(k, sizeof(long));
	double		h = noise ? dp_noise_plan_halfwidth(noise, 1.0 - 0.025 / k) : 0.0;

	dp_rr_prepare(&rr, eps, k, err, sizeof(err));
	for (int j = 0; j < k; j++)
		n += truth[j];
	for (long m = 0; m < M; m++)
	{
		double		rep[64];
		double		nn = 0;
		double		est,
					hw;

		memset(reports, 0, k * sizeof(long));
		for (int j = 0; j < k; j++)
			for (long i = 0; i < truth[j]; i++)
				reports[dp_rr_draw(&rr, j, &rng)]++;
		for (int j = 0; j < k; j++)
		{
			rep[j] = (double) reports[j] + (noise ? (double) dp_sampler_draw(&noise->sampler, &rng) : 0.0);
			nn += rep[j];
		}
		est = dp_rr_estimate(rep[v], nn, eps, k);
		hw = noise ? dp_rr_noisy_halfwidth(nn, eps, k, h, 0.025) : dp_rr_halfwidth(nn, eps, k, 0.05);
		s += est;
		s2 += est * est;
		naive += rep[v];
		r.misses += fabs(est - truth[v]) > hw;
		r.misses_third += fabs(est - truth[v]) > hw / 3;
	}
	r.mean = s / M;
	r.var = (s2 - s * s / M) / (M - 1);
	r.naive_mean = naive / M;
	free(reports);
	return r;
}

static void
test_estimates(void)
{
	const long	M = 4000;
	long		t_bin[2] = {3500, 1500};
	long		t_k[4] = {2000, 1500, 1000, 500};
	long		bound = binomial_upper(M, 0.05, 1e-10);
	struct
	{
		double		eps;
		int			k;
		long	   *truth;
		int			v;
	}			cases[] = {
		{1.0, 2, t_bin, 1},
		{2.0, 4, t_k, 2},
	};

	for (int c = 0; c < 2; c++)
	{
		int			k = cases[c].k;
		long		n = 0;
		double		truthv = cases[c].truth[cases[c].v];
		double		var;
		EstRun		r;

		for (int j = 0; j < k; j++)
			n += cases[c].truth[j];
		var = dp_rr_variance(truthv, n, cases[c].eps, k);
		r = run_estimates(cases[c].eps, k, cases[c].truth, cases[c].v, M, NULL);
		tap_ok(fabs(r.mean - truthv) < STAT_Z * sqrt(var / M),
			   "rr(epsilon=%g) over %d keys, %ld rows: the mean of %ld estimates is the truth %.0f (%.2f, z = %.2f)",
			   cases[c].eps, k, n, M, truthv, r.mean, (r.mean - truthv) / sqrt(var / M));
		tap_ok(fabs(r.naive_mean - truthv) >= STAT_Z * sqrt(var / M),
			   "positive control: the raw report count is biased (mean %.1f against %.0f)", r.naive_mean, truthv);
		tap_ok(fabs(r.var / var - 1) < STAT_Z * sqrt(2.0 / (M - 1)),
			   "... their variance is the exact formula's %.1f (%.1f, ratio %.3f)", var, r.var, r.var / var);
		tap_ok(fabs(r.var / (1.5 * var) - 1) >= STAT_Z * sqrt(2.0 / (M - 1)),
			   "positive control: a variance 1.5 times the formula's is rejected");
		tap_ok(r.misses <= bound,
			   "... the 95%% interval (Hoeffding at 0.05) misses %ld of %ld (threshold %ld)", r.misses, M, bound);
		tap_ok(r.misses_third > bound,
			   "positive control: the same intervals at a third of their width miss %ld (> %ld)", r.misses_third, bound);
	}

	/* with noise on the report counts: discrete Laplace at epsilon 0.5 (scale 2), and a smaller table */
	{
		DpNoisePlan plan;
		DpMechanism mech = {DP_MECH_LAPLACE, DP_FORM_EPSILON, {0.5, 0}};
		char		err[256];
		long		t_small[2] = {300, 200};
		double		var;
		EstRun		r;

		dp_noise_plan(&plan, &mech, 1, 1, 0, err, sizeof(err));
		var = dp_rr_variance(200, 500, 1.0, 2) + dp_rr_noise_variance_factor(1.0, 2) * plan.variance;
		r = run_estimates(1.0, 2, t_small, 1, M, &plan);
		tap_ok(fabs(r.mean - 200) < STAT_Z * sqrt(var / M),
			   "noised report counts (laplace(epsilon=0.5)), 500 rows: the mean of %ld estimates is the truth 200 (%.2f)",
			   M, r.mean);
		tap_ok(fabs(r.var / var - 1) < STAT_Z * sqrt(2.0 * 3 / (M - 1)),
			   "... their variance is the formula's, the noise's share included (%.1f against %.1f)", r.var, var);
		tap_ok(r.misses <= bound, "... the interval misses %ld of %ld (threshold %ld)", r.misses, M, bound);
		tap_ok(r.misses_third > bound, "positive control: at a third of its width it misses %ld", r.misses_third);
	}
}

/*
 * E. Seed 002's worked example: 1,000,000 patients, epsilon 1, beta 0.05.
 * The lecture's bound is +-(1 + e)/(e - 1) sqrt(ln(40)/(2n)) = +-0.0029389
 * of the share; its estimates of a share of 10% (100,000 patients) fall
 * within it in at least 95% of 100 randomizations (misses at most the
 * Binomial(100, 0.05) threshold at 1e-10, 26); a bound of a fifth misses
 * about 54 (the estimate's sd is 959.6 patients against a half-width of
 * 2,938.9: Hoeffding is conservative by a factor of about 1.6 here).
 */
static void
test_worked_example(void)
{
	const long	n = 1000000,
				sick = 100000,
				M = 100;
	DpRR		rr;
	char		err[256];
	double		h = dp_rr_halfwidth((double) n, 1.0, 2, 0.05) / n;
	long		misses = 0,
				misses_third = 0;
	long		bound = binomial_upper(M, 0.05, 1e-10);

	dp_rr_prepare(&rr, 1.0, 2, err, sizeof(err));
	for (long m = 0; m < M; m++)
	{
		long		yes = 0;
		double		share;

		for (long i = 0; i < n; i++)
			yes += dp_rr_draw(&rr, i < sick, &rng);
		share = dp_rr_estimate((double) yes, (double) n, 1.0, 2) / n;
		misses += fabs(share - 0.1) > h;
		misses_third += fabs(share - 0.1) > h / 5;
	}
	tap_ok(fabs(h - 0.0029388684) < 1e-9 && misses <= bound,
		   "seed 002's example: 1e6 patients, 10%% sick, epsilon 1: the share is within +-%.7f in %ld of %ld randomizations",
		   h, M - misses, M);
	tap_ok(misses_third > bound, "positive control: +-%.7f misses %ld of %ld (> %ld)", h / 5, misses_third, M, bound);
}

int
main(void)
{
	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	test_frequencies();
	test_likelihood_ratio();
	test_estimates();
	test_worked_example();
	return tap_done();
}
