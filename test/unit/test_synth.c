/*
 * test_synth.c — unit tests of the synthetic twins' numeric parts (src/synth):
 * the plan's charge is the mechanism's cost (composed exactly, never more),
 * the fitted model is consistent, non-negative and normalised and matches
 * exact measurements of a tree-structured table, and the stratified draw
 * reproduces the tree's tables within rounding.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "synth.h"
#include "tap.h"

static DpRng rng;

/* The plan of mech over K[0..d-1]; bail out on failure. */
static void
plan_of(SynthPlan *p, const char *text, int d, const int *K, int64_t m)
{
	DpMechanism mech;
	char		err[256];

	if (!dp_mechanism_parse(text, &mech, err, sizeof(err)) || !synth_plan(p, &mech, d, K, m, err, sizeof(err)))
	{
		printf("Bail out! %s: %s\n", text, err);
		exit(1);
	}
}

static void
test_costs(void)
{
	static SynthPlan p;
	int			K[6] = {2, 3, 10, 4, 2, 7};
	char		err[256];
	DpMechanism bad;

	plan_of(&p, "laplace(epsilon=1)", 6, K, 1);
	tap_ok(p.total.epsilon <= 1.0 && p.total.epsilon > 0.999999 && p.total.delta == 0.0,
		   "laplace(epsilon=1): charged epsilon %.17g, delta 0", p.total.epsilon);
	tap_ok(p.rounds == 5 && p.nreleases == 6 + 2, "6 columns: 6 1-way releases, 5 selection rounds, the 2-way releases");
	plan_of(&p, "gaussian(rho=0.5)", 6, K, 1);
	tap_ok(p.total.rho <= 0.5 && p.total.rho > 0.4999 && isinf(p.total.epsilon),
		   "gaussian(rho=0.5): charged rho %.17g, no epsilon", p.total.rho);
	{
		bool		within = true;

		for (int i = 0; i < DP_RDP_NALPHAS; i++)
			within &= p.total.rdp[i] <= DP_RDP_ALPHAS[i] * 0.5 * (1 + 1e-12);
		tap_ok(within, "gaussian(rho=0.5): the composed Renyi curve is within alpha rho");
	}
	plan_of(&p, "gaussian(epsilon=1, delta=1e-6)", 6, K, 1);
	tap_ok(p.total.epsilon <= 1.0 && p.total.epsilon > 0.99 && p.total.delta == 1e-6,
		   "gaussian(epsilon=1, delta=1e-6): charged (%.6g, %g)", p.total.epsilon, p.total.delta);
	plan_of(&p, "osgt(epsilon=1, delta=1e-6)", 6, K, 3);
	tap_ok(p.mode == SYNTH_ZCDP && p.total.epsilon <= 1.0 && p.total.delta <= 1e-6 && p.total.epsilon > 0.9,
		   "osgt(epsilon=1, delta=1e-6), 3 rows per unit: composed by zCDP, charged (%.6g, %g)",
		   p.total.epsilon, p.total.delta);
	{
		/* every part of the charge within the mechanism's own cost, for every form and shape */
		static const char *const mechs[] = {"laplace(epsilon=1)", "laplace(epsilon=0.01)", "laplace(epsilon=30)",
			"gaussian(rho=0.5)", "gaussian(rho=0.0001)", "gaussian(epsilon=1, delta=1e-6)",
		"gaussian(epsilon=5, delta=1e-9)", "osgt(epsilon=1, delta=1e-6)", "osgt(epsilon=0.1, delta=1e-10)"};
		int			shapes[3][6] = {{2, 3, 10, 4, 2, 7}, {2, 2, 0}, {100, 50, 3, 0}};
		int			dims[3] = {6, 2, 3};
		int64_t		units[3] = {1, 2, 50};
		bool		within = true;

		for (size_t k = 0; k < sizeof(mechs) / sizeof(mechs[0]); k++)
			for (int s = 0; s < 3; s++)
				for (int u = 0; u < 3; u++)
				{
					plan_of(&p, mechs[k], dims[s], shapes[s], units[u]);
					within &= p.total.epsilon <= p.cost.epsilon && p.total.delta <= p.cost.delta &&
						p.total.rho <= p.cost.rho;
					for (int i = 0; i < DP_RDP_NALPHAS; i++)
						within &= p.total.rdp[i] <= p.cost.rdp[i];
					if (!within)
					{
						tap_diag("%s, shape %d, %lld rows per unit: charge above the mechanism's cost", mechs[k], s,
								 (long long) units[u]);
						break;
					}
				}
		tap_ok(within, "9 mechanisms x 3 shapes x 3 unit bounds: every part of the charge within the mechanism's own cost");
	}
	{
		/*
		 * the pure twin charges its 2-way releases as one at their whole
		 * epsilon, whatever the split: the discrete Laplace Rényi curve must
		 * be superadditive in epsilon on the grid
		 */
		bool		super = true;

		for (int i = 0; i < DP_RDP_NALPHAS; i++)
			for (double e1 = 1e-4; e1 < 30; e1 *= 1.7)
				for (double e2 = 1e-4; e2 < 30; e2 *= 1.7)
					for (int64_t m = 1; m <= 1000; m *= 10)
					{
						double		a = DP_RDP_ALPHAS[i];

						super &= dp_discrete_laplace_rdp(a, m, m / e1) + dp_discrete_laplace_rdp(a, m, m / e2) <=
							dp_discrete_laplace_rdp(a, m, m / (e1 + e2)) * (1 + 1e-12);
					}
		tap_ok(super, "the discrete Laplace Renyi curve is superadditive in epsilon (every alpha, epsilons 1e-4..30, m 1..1000)");
	}
	plan_of(&p, "laplace(epsilon=1)", 3, K, 4);
	tap_ok(p.one[0].l1 == 4 && p.two.l1 == 4, "4 rows per unit: sensitivity 4 per marginal");
	dp_mechanism_parse("laplace(scale=1)", &bad, err, sizeof(err));
	tap_ok(!synth_plan(&p, &bad, 3, K, 1, err, sizeof(err)), "a noise form is refused: %s", err);
	{
		int			big[3] = {3000, 3000, 2};

		dp_mechanism_parse("laplace(epsilon=1)", &bad, err, sizeof(err));
		tap_ok(!synth_plan(&p, &bad, 3, big, 1, err, sizeof(err)), "too many pair cells are refused: %s", err);
	}
}

static void
test_fit_exact(void)
{
	int			K[4] = {3, 2, 4, 2};
	SynthCounts c;
	static SynthPlan p;
	SynthMeasured m;
	SynthModel	model;
	double		worst = 0.0,
				cons = 0.0,
				minp = 1.0,
				sum;
	uint32_t   *x,
			   *work;
	SynthCounts tw;
	int64_t		n = 30000;
	double		edge_err = 0.0;

	synth_counts_init(&c, 4, K);
	for (int i = 0; i < 30000; i++)
	{
		/* a chain 0 - 1 - 2, 3 from 0: tree-structured, deterministic */
		uint32_t	r[4];

		r[0] = (uint32_t) (i % 3);
		r[1] = (uint32_t) ((i % 3 == 0) ? (i % 7 == 0) : (i % 5 != 0));
		r[2] = (uint32_t) ((r[1] * 2 + (i % 11 == 0)) % 4);
		r[3] = (uint32_t) (r[0] == 2 ? (i % 13 != 0) : (i % 17 == 0));
		synth_counts_add(&c, r);
	}
	plan_of(&p, "laplace(epsilon=1)", 4, K, 1);
	synth_measure_exact(&p, &c, &m);
	synth_fit(&m, &model);
	for (int e = 0; e < m.nedges; e++)
	{
		int			a = m.edge_a[e],
					b = m.edge_b[e];
		double	   *mp = synth_alloc(sizeof(double) * K[a] * K[b]);

		synth_model_pair(&model, a, b, mp);
		for (int i = 0; i < K[a] * K[b]; i++)
			worst = fmax(worst, fabs(mp[i] - c.pair[synth_pair_index(4, a, b)][i] / 30000.0));
	}
	tap_ok(worst < 1e-3, "exact measurements: the model's measured pairs match the table (max error %.2e)", worst);
	tap_ok(fabs(model.total - 30000) < 1e-6, "exact measurements: the total is the number of rows");
	for (int a = 0; a < 4; a++)
		for (int b = a + 1; b < 4; b++)
		{
			double	   *mp = synth_alloc(sizeof(double) * K[a] * K[b]);

			synth_model_pair(&model, a, b, mp);
			sum = 0.0;
			for (int i = 0; i < K[a]; i++)
			{
				double		row = 0.0;

				for (int j = 0; j < K[b]; j++)
				{
					row += mp[i * K[b] + j];
					minp = fmin(minp, mp[i * K[b] + j]);
				}
				cons = fmax(cons, fabs(row - model.node[a][i]));
				sum += row;
			}
			cons = fmax(cons, fabs(sum - 1.0));
		}
	tap_ok(cons < 1e-9 && minp >= 0.0, "every pair of the model is consistent with its margins, normalised, non-negative (%.1e)", cons);

	/* stratified draw: the tree's tables within one row per cell */
	x = synth_alloc(sizeof(uint32_t) * n * 4);
	work = synth_alloc(sizeof(uint32_t) * 3 * n);
	synth_sample_block(&model, &rng, n, x, work);
	synth_counts_init(&tw, 4, K);
	for (int64_t i = 0; i < n; i++)
		synth_counts_add(&tw, x + i * 4);
	for (int j = 1; j < 4; j++)
	{
		int			pa = model.parent[model.order[j]],
					ch = model.order[j];
		int			a = pa < ch ? pa : ch,
					b = pa < ch ? ch : pa;
		double	   *mp = synth_alloc(sizeof(double) * K[a] * K[b]);

		synth_model_pair(&model, a, b, mp);
		for (int i = 0; i < K[a] * K[b]; i++)
			edge_err = fmax(edge_err, fabs(tw.pair[synth_pair_index(4, a, b)][i] - n * mp[i]));
	}
	tap_ok(edge_err <= 2.0, "stratified draw: every tree table within rounding of n times the model's (max %.2f rows)", edge_err);
}

int
main(void)
{
	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	test_costs();
	test_fit_exact();
	return tap_done();
}
