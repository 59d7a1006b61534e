/*
 * test_groupwise.c — unit tests of groupwise.c: r's exact decimal form, the
 * Rényi divergences of Algorithm 1's release against an independent
 * reference, data processing (never above the first step's), their decay
 * with the group's size, the pmf's mass, the variance, and the second
 * step's edge cases.
 *
 * The reference divergences were computed outside the project with mpmath at
 * 40 significant digits by direct summation of the same discrete pmfs
 * (P_x(y) = sum_X N_Z(X - x; 1/(2 rho)) N_Z(y - X; (r X)^2), each discrete
 * Gaussian normalised by summing 60 standard deviations, X over 60 + 4 alpha
 * beyond both sizes, y over 90 of the widest second step's standard
 * deviations), a program written separately from groupwise.c and sharing no
 * code with it.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "groupwise.h"
#include "random.h"
#include "tap.h"

/* r's exact decimal form; refusals. */
static void
test_prepare(void)
{
	struct
	{
		double		r;
		uint64_t	num;
		uint64_t	den;
	}			cases[] = {
		{0.05, 1, 20}, {0.1, 1, 10}, {1.0, 1, 1}, {0.25, 1, 4}, {0.123456789, 123456789, 1000000000},
		{1e-9, 1, 1000000000}, {0.3, 3, 10},
	};
	char		err[256];
	DpGroupwise g;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		bool		ok = dp_groupwise_prepare(&g, cases[i].r, err, sizeof(err));

		tap_ok(ok && g.num == cases[i].num && g.den == cases[i].den,
			   "r = %.17g is exactly %llu/%llu", cases[i].r, (unsigned long long) g.num, (unsigned long long) g.den);
	}
	{
		bool		ok = dp_groupwise_prepare(&g, 0.0123456789, err, sizeof(err));

		tap_ok(!ok && strstr(err, "9 decimals") != NULL, "r with 10 decimals refused: %s", err);
	}
	tap_ok(!dp_groupwise_prepare(&g, 0.0, err, sizeof(err)) && !dp_groupwise_prepare(&g, 1.5, err, sizeof(err)) &&
		   !dp_groupwise_prepare(&g, NAN, err, sizeof(err)) && !dp_groupwise_prepare(&g, -0.1, err, sizeof(err)),
		   "r outside (0, 1] refused");
}

/* The divergences against the independent reference. */
static void
test_reference(void)
{
	struct
	{
		double		rho,
					r;
		int64_t		x,
					x2;
		double		alpha,
					ref;
	}			cases[] = {
		{0.5, 0.25, 3, 4, 2, 0.58451820310105400833},
		{0.5, 0.25, 8, 7, 4, 0.60019712455107636705},
		{0.125, 0.5, 5, 6, 3, 0.11305546769654828744},
		{0.5, 0.25, 0, 1, 2, 0.9695533941315308173},
		{0.5, 0.1, 20, 21, 8, 0.54173669933291260982},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		DpGroupwise g;
		char		err[256];
		double		d;

		dp_groupwise_prepare(&g, cases[i].r, err, sizeof(err));
		d = dp_groupwise_divergence(1.0 / (2.0 * cases[i].rho), &g, cases[i].x, cases[i].x2, cases[i].alpha);
		tap_ok(fabs(d - cases[i].ref) <= 1e-12 * cases[i].ref,
			   "groupwise(rho=%g, r=%g): D_%g(Y_%lld || Y_%lld) = %.15g, reference %.15g",
			   cases[i].rho, cases[i].r, cases[i].alpha, (long long) cases[i].x, (long long) cases[i].x2, d, cases[i].ref);
	}
}

/*
 * Data processing: Y is computed from X, so D_alpha(Y) <= D_alpha(X), the
 * discrete Gaussian's exact Rényi divergence (calibrate.h), for every size
 * and order; and the divergence falls toward alpha/(2 r^2 x^2) for large
 * groups (seed 001's v = 1/(2 r^2 x^2), the leading term of Algorithm 2).
 */
static void
test_processing(void)
{
	DpGroupwise g;
	char		err[256];
	double		alphas[] = {1.25, 2, 4, 8, 16, 32, 64};
	int64_t		sizes[] = {0, 1, 2, 3, 5, 8, 13, 20, 35, 50, 100, 300, 1000};
	double		worst_excess = -1;
	double		rho_prev = 1e9;
	int			monotone = 1;

	dp_groupwise_prepare(&g, 0.05, err, sizeof(err));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
	{
		double		d[7];
		double		rho = 0;

		dp_groupwise_divergences_worst(1.0, &g, sizes[i], alphas, 7, d);
		for (int a = 0; a < 7; a++)
		{
			double		bound = dp_discrete_gauss_rdp(alphas[a], 1, 1.0);

			if (d[a] - bound > worst_excess)
				worst_excess = d[a] - bound;
			if (d[a] / alphas[a] > rho)
				rho = d[a] / alphas[a];
		}
		if (sizes[i] >= 10 && rho > rho_prev * (1 + 1e-9))
			monotone = 0;
		if (sizes[i] >= 10)
			rho_prev = rho;
	}
	tap_ok(worst_excess <= 1e-9,
		   "groupwise(rho=0.5, r=0.05): D_alpha(Y) <= D_alpha(X) for 13 sizes and 7 orders (largest excess %.3g)",
		   worst_excess);
	tap_ok(monotone, "... the per-group rho (max D_alpha/alpha) does not grow with the size from 10 rows on");
	{
		double		d = dp_groupwise_divergence_worst(1.0, &g, 1000, 2.0);
		double		asym = 2.0 / (2.0 * 0.05 * 0.05 * 1000.0 * 1000.0);

		tap_ok(fabs(d / asym - 1) < 0.02,
			   "... and D_2 at 1,000 rows is alpha/(2 r^2 x^2) = %.4g within 2%% (%.4g)", asym, d);
	}
}

/* The pmf's mass, the variance, the second step's edges. */
static void
test_pmf_and_edges(void)
{
	DpGroupwise g;
	char		err[256];
	int64_t		sizes[] = {0, 3, 40, 500};

	dp_groupwise_prepare(&g, 0.1, err, sizeof(err));
	for (size_t i = 0; i < 4; i++)
	{
		int64_t		lo,
					hi;
		double	   *lp;
		long double s = 0,
					m = 0;

		dp_groupwise_support(1.0, &g, sizes[i], &lo, &hi);
		lp = malloc((hi - lo + 1) * sizeof(double));
		dp_groupwise_logpmf(1.0, &g, sizes[i], lo, hi, lp);
		for (int64_t y = lo; y <= hi; y++)
		{
			s += expl(lp[y - lo]);
			m += (long double) y * expl(lp[y - lo]);
		}
		tap_ok(fabsl(s - 1) < 1e-12L && fabsl(m - sizes[i]) < 1e-9L * (sizes[i] + 1),
			   "the pmf of a group of %lld rows sums to 1 (%.3Lg off) with mean %lld", (long long) sizes[i], s - 1,
			   (long long) sizes[i]);
		free(lp);
	}
	{
		double		s2 = 100.0;
		double		v = dp_groupwise_variance(s2, &g, 1000);
		double		seed = 0.01 * (1000.0 * 1000.0 + s2) + s2 * (1 + 0.01);

		tap_ok(fabs(v / seed - 1) < 1e-3,
			   "the variance is seed 001's r^2 (x^2 + sigma^2) + sigma^2 in the continuous limit (%.6g, %.6g)", v, seed);
	}
	{
		DpRng		rng;
		bool		overflow;
		int64_t		y;

		dp_rng_init(&rng, dp_random_openssl_fill, NULL);
		tap_ok(dp_groupwise_second(&g, 0, &rng, &overflow) == 0 && !overflow,
			   "X = 0: the second step adds nothing (variance (r X)^2 = 0)");
		y = dp_groupwise_second(&g, INT64_C(1000000000000), &rng, &overflow);
		/* r = 0.1: the second step's sd is r X = 10^11; beyond 10 sds with probability < 1e-22 */
		tap_ok(!overflow && llabs(y - INT64_C(1000000000000)) < INT64_C(1000000000000),
			   "a count of 10^12 (r |X| beyond 2^32): drawn on a coarser lattice, within 10 sds");
		y = dp_groupwise_second(&g, INT64_MIN + 1, &rng, &overflow);
		tap_ok(overflow || y < 0, "the int64 edge: a result or an overflow flag, never undefined behaviour");
	}
}

int
main(void)
{
	test_prepare();
	test_reference();
	test_processing();
	test_pmf_and_edges();
	return tap_done();
}
