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
 *   - the exact helpers: floor(q n) and gamma = epsilon / 2w rounded down;
 *   - the rank asked for (dp_quantile_target), for every n up to 20,000 and
 *     a grid of q at three gammas: it grows by 0 or 1 with n (the
 *     sensitivity argument), is non-decreasing in q, and the minimum's is
 *     never above the maximum's -- exhaustive, no chance involved;
 *   - a group smaller than the margin k (10 values 41..50 in [0, 100],
 *     epsilon 1, k = 22): 1,000 (minimum, maximum) pairs; the exact
 *     probability that the minimum comes out above the maximum is below
 *     0.05, and the count of such pairs is at most the 1 - 1e-10 quantile of
 *     Binomial(1000, 0.05) by Chernoff's bound (false failure below 1e-10);
 *   - the rank interval (dp_quantile_rank_halfwidth, what dp_pg.last_releases
 *     shows for a quantile) is the tightest valid one: on data where every
 *     boundary but one is t95 + 1 ranks off (the worst case), its exact miss
 *     probability, summed over the 1,025 boundaries, is at most 0.05 for
 *     nine epsilons from 0.01 to 10, at least 0.04 up to epsilon 0.45 (above
 *     it whole ranks step the miss by e^-gamma < 0.8: 0.0274 at epsilon 3),
 *     and above 0.05 one rank narrower (exact, no chance involved); and of 2,000 draws on that data at
 *     epsilon 1 (exact miss 0.0444) the misses are at most the 1 - 1e-10
 *     quantile of Binomial(2000, 0.05) and above the 1e-10 quantile of
 *     Binomial(2000, 0.04) (coverage within a point).
 * Positive controls (each must be rejected): the proposal without its
 * acceptance step (uniform), gamma doubled (half the randomness), the plain
 * extremes rule (minimum at rank min(n, k), maximum at max(n - k, 0)) by
 * both the exhaustive order check and the small-group count (200 pairs,
 * crossing with probability 0.99), a rank interval without the union over
 * the N + 1 boundaries (ln(20) / gamma) by the coverage count, and the
 * earlier union-bound interval ceil((ln 1025 + ln 20) / gamma) by the exact
 * within-a-point check (worst-case miss 0.0282 at epsilon 1).
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

/* Bernoulli KL divergence kl(a || p). */
static double
kl(double a, double p)
{
	double		v = 0.0;

	if (a > 0.0)
		v += a * log(a / p);
	if (a < 1.0)
		v += (1.0 - a) * log((1.0 - a) / (1.0 - p));
	return v;
}

/*
 * The least count t with M kl(t/M, p) >= ln(1/alpha) above M p: by Chernoff's
 * bound P(Binomial(M, p) >= t) <= alpha.
 */
static long
binomial_upper(long m, double p, double alpha)
{
	long		t = (long) ceil(m * p);

	while (t < m && m * kl((double) t / m, p) < log(1.0 / alpha))
		t++;
	return t;
}

/*
 * The greatest count t with M kl(t/M, p) >= ln(1/alpha) below M p: by
 * Chernoff's bound P(Binomial(M, p) <= t) <= alpha.
 */
static long
binomial_lower(long m, double p, double alpha)
{
	long		t = (long) floor(m * p);

	while (t > 0 && m * kl((double) t / m, p) < log(1.0 / alpha))
		t--;
	return t;
}

/*
 * The exact probability that the median's rank error exceeds t on the data
 * of rank_misses (t0 values in cell 0, t0 in cell 1, ncells cells), summed
 * over the ncells + 1 boundaries from their counts -- independent of
 * dp_quantile_rank_halfwidth's closed form.
 */
static double
exact_rank_miss(uint64_t t0, double t, DpRational g, int ncells)
{
	long double gg = (long double) g.num / (long double) g.den;
	uint64_t	n = 2 * t0;
	uint64_t	r = dp_quantile_target(0.5, n, g, ncells);
	long double z = 0.0L,
				out = 0.0L;

	for (int j = 0; j <= ncells; j++)
	{
		uint64_t	cum = j == 0 ? 0 : (j == 1 ? t0 : n);
		uint64_t	d = cum > r ? cum - r : r - cum;
		long double w = expl(-gg * (long double) d);

		z += w;
		if ((double) d > t)
			out += w;
	}
	return (double) (out / z);
}

/* The plain extremes rule before the small-group fallback (control). */
static uint64_t
old_target(double q, uint64_t n, DpRational gamma, int ncells)
{
	double		g = (double) gamma.num / (double) gamma.den;
	uint64_t	k = (uint64_t) ceil((log(ncells + 1.0) + 4.0) / g);

	if (n / 20 > k)
		k = n / 20;
	if (q == 0.0)
		return n < k ? n : k;
	if (q == 1.0)
		return n > k ? n - k : 0;
	return dp_quantile_rank(q, n);
}

typedef uint64_t (*Targeter) (double q, uint64_t n, DpRational gamma, int ncells);

/*
 * Exhaustive checks of a target rule: increments of 0 or 1 in n, order in q
 * (below 20 k values) and minimum <= maximum (every n); true if all hold.
 */
static int
target_ordered(Targeter target, DpRational g, int check_increments)
{
	static const double qs[] = {0.0, 1e-4, 0.001, 0.01, 0.05, 0.1, 0.25, 0.3, 0.5, 0.7, 0.75, 0.9, 0.99, 0.999, 1.0};
	int			nq = (int) (sizeof(qs) / sizeof(qs[0]));
	double		gd = (double) g.num / (double) g.den;
	uint64_t	k = (uint64_t) ceil((log(DP_QUANTILE_CELLS + 1.0) + 4.0) / gd);

	for (uint64_t n = 0; n <= 20000; n++)
	{
		uint64_t	prev = 0;

		if (target(0.0, n, g, DP_QUANTILE_CELLS) > target(1.0, n, g, DP_QUANTILE_CELLS))
			return 0;
		for (int i = 0; i < nq; i++)
		{
			uint64_t	r = target(qs[i], n, g, DP_QUANTILE_CELLS);
			uint64_t	r1 = target(qs[i], n + 1, g, DP_QUANTILE_CELLS);

			if (r > n || (check_increments && r1 != r && r1 != r + 1))
				return 0;
			if (n / 20 <= k && i > 0 && r < prev)
				return 0;
			prev = r;
		}
	}
	return 1;
}

/* The exponential mechanism's pmf over the N + 1 boundaries (p: ncells + 1 values). */
static void
exact_pmf(const uint64_t *counts, int ncells, uint64_t r, DpRational g, double *p)
{
	double		gd = (double) g.num / (double) g.den;
	double		z = 0.0;
	uint64_t	cum = 0;

	for (int j = 0; j <= ncells; j++)
	{
		double		d = cum > r ? (double) (cum - r) : (double) (r - cum);

		p[j] = exp(-gd * d);
		z += p[j];
		if (j < ncells)
			cum += counts[j];
	}
	for (int j = 0; j <= ncells; j++)
		p[j] /= z;
}

/*
 * Draw m (minimum, maximum) pairs of counts under a target rule; the number
 * of pairs whose minimum is above the maximum.
 */
static long
crossings(Targeter target, const uint64_t *counts, uint64_t n, DpRational g, long m, DpRng *rng)
{
	uint64_t   *work = malloc(sizeof(uint64_t) * (DP_QUANTILE_CELLS + 1));
	uint64_t	rmin = target(0.0, n, g, DP_QUANTILE_CELLS);
	uint64_t	rmax = target(1.0, n, g, DP_QUANTILE_CELLS);
	long		c = 0;

	for (long i = 0; i < m; i++)
	{
		int			jmin = dp_quantile_draw(counts, DP_QUANTILE_CELLS, rmin, g, rng, work);
		int			jmax = dp_quantile_draw(counts, DP_QUANTILE_CELLS, rmax, g, rng, work);

		if (jmin > jmax)
			c++;
	}
	free(work);
	return c;
}

/*
 * Draws of the median of 2 t0 values (t0 in cell 0, t0 in cell 1): every
 * boundary but boundary 1 is t0 ranks off.  The number of draws whose rank
 * error exceeds d_min + t.
 */
static long
rank_misses(uint64_t t0, double t, DpRational g, long m, DpRng *rng)
{
	uint64_t   *counts = calloc(DP_QUANTILE_CELLS, sizeof(uint64_t));
	uint64_t   *work = malloc(sizeof(uint64_t) * (DP_QUANTILE_CELLS + 1));
	uint64_t	n = 2 * t0;
	uint64_t	r = dp_quantile_target(0.5, n, g, DP_QUANTILE_CELLS);
	long		misses = 0;

	counts[0] = t0;
	counts[1] = t0;
	for (long i = 0; i < m; i++)
	{
		int			j = dp_quantile_draw(counts, DP_QUANTILE_CELLS, r, g, rng, work);
		uint64_t	cum = j == 0 ? 0 : (j == 1 ? t0 : n);
		uint64_t	err = cum > r ? cum - r : r - cum;

		/* d_min = 0 (boundary 1 is exactly at rank r = t0) */
		if ((double) err > t)
			misses++;
	}
	free(counts);
	free(work);
	return misses;
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

	/* the rank asked for: exhaustive order and increments */
	{
		DpRational	gs[3];
		int			ok = 1;

		dp_quantile_gamma(1.0, 1, &gs[0]);
		dp_quantile_gamma(0.1, 1, &gs[1]);
		dp_quantile_gamma(1.0, 5, &gs[2]);
		for (int i = 0; i < 3; i++)
			ok &= target_ordered(dp_quantile_target, gs[i], 1);
		tap_ok(ok, "rank asked for: +0 or +1 per value, ordered in q, minimum <= maximum (n <= 20,000)");
		tap_ok(!target_ordered(old_target, gs[0], 0), "control: the plain extremes rule puts the minimum above the maximum");
	}

	/* a group smaller than k: 10 values 41..50 in [0, 100] */
	{
		uint64_t   *counts = calloc(DP_QUANTILE_CELLS, sizeof(uint64_t));
		double	   *pmin = malloc(sizeof(double) * (DP_QUANTILE_CELLS + 1));
		double	   *pmax = malloc(sizeof(double) * (DP_QUANTILE_CELLS + 1));
		double		pcross = 0.0,
					below = 0.0;
		long		m = 1000,
					t,
					c;

		/* the cells dp_quantile counts them in: floor(x / 100 * 1024) */
		for (int v = 41; v <= 50; v++)
			counts[(int) floor(v / 100.0 * DP_QUANTILE_CELLS)]++;
		dp_quantile_gamma(1.0, 1, &g);
		exact_pmf(counts, DP_QUANTILE_CELLS, dp_quantile_target(0.0, 10, g, DP_QUANTILE_CELLS), g, pmin);
		exact_pmf(counts, DP_QUANTILE_CELLS, dp_quantile_target(1.0, 10, g, DP_QUANTILE_CELLS), g, pmax);
		for (int j = 0; j <= DP_QUANTILE_CELLS; j++)
		{
			pcross += pmin[j] * below;
			below += pmax[j];
		}
		tap_diag("10 values 41..50, epsilon 1: minimum at rank %llu, maximum at rank %llu, exact P(min > max) = %.4f",
				 (unsigned long long) dp_quantile_target(0.0, 10, g, DP_QUANTILE_CELLS),
				 (unsigned long long) dp_quantile_target(1.0, 10, g, DP_QUANTILE_CELLS), pcross);
		tap_ok(pcross < 0.05, "small group: the exact probability that the minimum is above the maximum is below 0.05");
		t = binomial_upper(m, 0.05, 1e-10);
		c = crossings(dp_quantile_target, counts, 10, g, m, &rng);
		tap_diag("small group: %ld of %ld pairs crossed (fewer than %ld required)", c, m, t);
		tap_ok(c < t, "small group: minimum above maximum in at most the 1 - 1e-10 quantile of Binomial(%ld, 0.05)", m);
		c = crossings(old_target, counts, 10, g, 200, &rng);
		t = binomial_upper(200, 0.05, 1e-10);
		tap_diag("control, the plain extremes rule: %ld of 200 pairs crossed (fewer than %ld required)", c, t);
		tap_ok(c >= t, "control: the plain extremes rule is rejected on the small group");
		free(counts);
		free(pmin);
		free(pmax);
	}

	/* coverage of the 95% rank interval */
	{
		double		t95;
		double		naive;
		long		m = 2000,
					t,
					tl,
					c;
		double		eps_grid[] = {0.01, 0.1, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0};
		int			exact_ok = 1,
					tight_ok = 1;

		/*
		 * Exact, on the worst-case data: the miss probability at t95 is at
		 * most 0.05 and at least 0.04 (coverage within a point of 95%), and
		 * one rank less misses more than 0.05 (no narrower data-independent
		 * interval is valid).
		 */
		for (int i = 0; i < (int) (sizeof(eps_grid) / sizeof(eps_grid[0])); i++)
		{
			DpRational	ge;
			double		th,
						p,
						p1;

			dp_quantile_gamma(eps_grid[i], 1, &ge);
			th = dp_quantile_rank_halfwidth(ge, DP_QUANTILE_CELLS, 0.95);
			p = exact_rank_miss((uint64_t) th + 1, th, ge, DP_QUANTILE_CELLS);
			p1 = th >= 1 ? exact_rank_miss((uint64_t) th, th - 1, ge, DP_QUANTILE_CELLS) : 1.0;
			tap_diag("epsilon %g: t95 = %.0f, exact worst-case miss %.4f (at t95 - 1: %.4f)", eps_grid[i], th, p, p1);
			/* whole ranks: one more rank divides the miss by about e^gamma, so within a point only where e^-gamma >= 0.8 */
			if (!(p <= 0.05 && (p >= 0.04 || eps_grid[i] > 0.45)))
				exact_ok = 0;
			if (!(p1 > 0.05))
				tight_ok = 0;
		}
		tap_ok(exact_ok, "rank interval: exact worst-case miss probability at most 0.05 at every epsilon of the grid, at least 0.04 up to epsilon 0.45");
		tap_ok(tight_ok, "rank interval: one rank narrower misses more than 5%% on the worst-case data (tightest)");

		dp_quantile_gamma(1.0, 1, &g);
		t95 = dp_quantile_rank_halfwidth(g, DP_QUANTILE_CELLS, 0.95);
		tap_ok(t95 == 19.0, "rank interval at epsilon 1: 19 ranks (the union bound gave 20)");
		naive = ceil(log(20.0) * (double) g.den / (double) g.num);
		t = binomial_upper(m, 0.05, 1e-10);
		tl = binomial_lower(m, 0.04, 1e-10);
		c = rank_misses((uint64_t) t95 + 1, t95, g, m, &rng);
		tap_diag("rank interval +-%.0f (epsilon 1): %ld of %ld draws outside (more than %ld and fewer than %ld required)",
				 t95, c, m, tl, t);
		tap_ok(c < t, "rank interval covers at 95%%: misses at most the 1 - 1e-10 quantile of Binomial(%ld, 0.05)", m);
		tap_ok(c > tl, "rank interval within a point: misses above the 1e-10 quantile of Binomial(%ld, 0.04)", m);
		c = rank_misses((uint64_t) naive + 1, naive, g, 500, &rng);
		t = binomial_upper(500, 0.05, 1e-10);
		tap_diag("control, interval +-%.0f without the union over the boundaries: %ld of 500 outside (fewer than %ld required)",
				 naive, c, t);
		tap_ok(c >= t, "control: a rank interval without the union over the N + 1 boundaries is rejected");
		/* the earlier union-bound interval on the worst-case data: too wide, caught by the exact check */
		{
			double		tu = ceil((log(DP_QUANTILE_CELLS + 1.0) + log(20.0)) * (double) g.den / (double) g.num);
			double		p = exact_rank_miss((uint64_t) tu + 1, tu, g, DP_QUANTILE_CELLS);

			tap_diag("control, the union-bound interval +-%.0f: exact worst-case miss %.4f", tu, p);
			tap_ok(!(p <= 0.05 && p >= 0.04), "control: the union bound's interval is rejected by the within-a-point check");
		}
	}

	/* positive controls */
	tap_ok(rejected("control: proposal without acceptance", draw_uniform, c9, 9, 13, g316, &rng),
		   "control: uniform over the candidates rejected");
	tap_ok(rejected("control: gamma doubled", draw_double_gamma, c9, 9, 13, g316, &rng),
		   "control: gamma doubled (less randomness) rejected");
	return tap_done();
}
