/*
 * test_quantile.c — statistical tests of dp_pg's exponential mechanism for
 * quantiles (src/core/quantile.c), with positive controls.
 *
 *   - exact output distribution: on small domains (4 and 9 cells, chosen
 *     counts and ranks, gamma 1/2 and 3/16) 2 10^5 draws against the pmf
 *     P(j) = exp(-gamma |cum_j - r|) / Z, Pearson's chi-square with the
 *     threshold of test_samplers.c (false failure below 1e-10 each);
 *   - rank error: 2,000 draws on 1,024 cells (10^5 uniform values, the
 *     median, epsilon 1): |cum_J - r| <= (2/epsilon)(ln 1025 + 32) for every
 *     draw -- the exponential mechanism's bound, each draw failing with
 *     probability below e^-32, all of them below 3e-11;
 *   - the exact helpers: floor(q n) and gamma = epsilon / 2w rounded down.
 * Positive controls (each must be rejected): the proposal without its
 * acceptance step (uniform), and gamma doubled (half the randomness).
 * Every test here fails by chance with probability below 1e-9 in total.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quantile.h"
#include "stat.h"
#include "tap.h"

#define NDRAWS 200000

typedef int (*Drawer) (const uint64_t *counts, int n, uint64_t r, DpRational g, DpRng *rng, uint64_t *work);

/* control: the proposal alone (no acceptance) */
static int
draw_uniform(const uint64_t *counts, int n, uint64_t r, DpRational g, DpRng *rng, uint64_t *work)
{
	(void) counts;
	(void) r;
	(void) g;
	(void) work;
	return (int) dp_rng_uniform(rng, (uint64_t) n + 1);
}

/* control: gamma doubled */
static int
draw_double_gamma(const uint64_t *counts, int n, uint64_t r, DpRational g, DpRng *rng, uint64_t *work)
{
	g.num *= 2;
	return dp_quantile_draw(counts, n, r, g, rng, work);
}

/* Chi-square statistic of draws against the exponential mechanism's pmf; true if rejected. */
static int
rejected(const char *name, Drawer draw, const uint64_t *counts, int n, uint64_t r, DpRational g, DpRng *rng)
{
	long		cnt[64] = {0};
	double		p[64];
	double		z = 0.0,
				chi2 = 0.0;
	uint64_t	cum = 0;
	uint64_t	work[64];
	int			df = 0;
	double		gamma = (double) g.num / (double) g.den;

	for (int j = 0; j <= n; j++)
	{
		double		d = cum > r ? (double) (cum - r) : (double) (r - cum);

		p[j] = exp(-gamma * d);
		z += p[j];
		if (j < n)
			cum += counts[j];
	}
	for (long i = 0; i < NDRAWS; i++)
		cnt[draw(counts, n, r, g, rng, work)]++;
	for (int j = 0; j <= n; j++)
	{
		double		e = NDRAWS * p[j] / z;

		if (e < 20.0)
		{
			if (cnt[j] > 10 * e + 50)
				return 1;		/* far too many in a rare cell */
			continue;
		}
		chi2 += (cnt[j] - e) * (cnt[j] - e) / e;
		df++;
	}
	df -= 1;
	tap_diag("%s: chi2 = %.1f, df = %d, threshold %.1f", name, chi2, df, chi2_threshold(df));
	return chi2 > chi2_threshold(df);
}

int
main(void)
{
	DpRng		rng;
	DpRational	half = {1, 2};
	DpRational	g316 = {3, 16};
	uint64_t	c4[4] = {3, 0, 2, 5};
	uint64_t	c9[9] = {1, 4, 0, 0, 7, 2, 2, 9, 1};
	DpRational	g;

	dp_rng_init(&rng, dp_random_openssl_fill, NULL);

	/* the exact helpers */
	tap_ok(dp_quantile_rank(0.5, 11) == 5 && dp_quantile_rank(0.5, 10) == 5 && dp_quantile_rank(0.0, 10) == 0 &&
		   dp_quantile_rank(1.0, 10) == 10 && dp_quantile_rank(0.1, 10) == 1 && dp_quantile_rank(0.3, 10) == 2 &&
		   dp_quantile_rank(0.75, 4000000001ULL) == 3000000000ULL,
		   "floor(q n) exact (0.1 * 10 = 1; 0.3 * 10 = 2, since the double 0.3 is below 3/10)");
	tap_ok(dp_quantile_gamma(1.0, 1, &g) && (double) g.num / g.den <= 0.5 && (double) g.num / g.den > 0.5 - 1e-15,
		   "gamma of epsilon 1 is 1/2 rounded down");
	tap_ok(dp_quantile_gamma(0.1, 3, &g) && (long double) g.num / g.den <= 0.1L / 6.0L,
		   "gamma of epsilon 0.1 over 3 rows per unit is at most 0.1/6");
	tap_ok(!dp_quantile_gamma(0.0, 1, &g) && !dp_quantile_gamma(NAN, 1, &g) && !dp_quantile_gamma(INFINITY, 1, &g) &&
		   !dp_quantile_gamma(1.0, 0, &g), "gamma: no zero, NaN, infinite epsilon or zero weight");

	/* exact output distributions */
	tap_ok(!rejected("4 cells, r = 5, gamma 1/2", dp_quantile_draw, c4, 4, 5, half, &rng),
		   "4 cells: the exponential mechanism's distribution");
	tap_ok(!rejected("9 cells, r = 13, gamma 3/16", dp_quantile_draw, c9, 9, 13, g316, &rng),
		   "9 cells: the exponential mechanism's distribution");
	tap_ok(!rejected("9 cells, r = 0, gamma 1/2", dp_quantile_draw, c9, 9, 0, half, &rng),
		   "9 cells, the minimum: the exponential mechanism's distribution");

	/* rank error of the median over 1,024 cells */
	{
		uint64_t   *counts = calloc(DP_QUANTILE_CELLS, sizeof(uint64_t));
		uint64_t   *work = malloc(sizeof(uint64_t) * (DP_QUANTILE_CELLS + 1));
		uint64_t	n = 100000,
					r;
		double		bound = 2.0 * (log(DP_QUANTILE_CELLS + 1.0) + 32.0);
		uint64_t	worst = 0;
		int			ok = 1;

		for (uint64_t i = 0; i < n; i++)
			counts[dp_rng_uniform(&rng, DP_QUANTILE_CELLS)]++;
		r = dp_quantile_rank(0.5, n);
		dp_quantile_gamma(1.0, 1, &g);
		for (int i = 0; i < 2000; i++)
		{
			int			j = dp_quantile_draw(counts, DP_QUANTILE_CELLS, r, g, &rng, work);
			uint64_t	cum = 0;
			uint64_t	err;

			for (int k = 0; k < j; k++)
				cum += counts[k];
			err = cum > r ? cum - r : r - cum;
			if (err > worst)
				worst = err;
			if (err > bound)
				ok = 0;
		}
		tap_diag("median of 10^5 values, epsilon 1: worst rank error %llu of 2,000 draws (bound %.1f)",
				 (unsigned long long) worst, bound);
		tap_ok(ok, "rank error within (2/epsilon)(ln(N+1) + 32) in 2,000 draws");
		free(counts);
		free(work);
	}

	/* positive controls */
	tap_ok(rejected("control: proposal without acceptance", draw_uniform, c9, 9, 13, g316, &rng),
		   "control: uniform over the candidates rejected");
	tap_ok(rejected("control: gamma doubled", draw_double_gamma, c9, 9, 13, g316, &rng),
		   "control: gamma doubled (less randomness) rejected");
	return tap_done();
}
