/*
 * test_synth.c — statistical tests of synthetic twins (src/synth): quality
 * on data with known structure, and privacy on neighbouring tables, each
 * with a positive control that must fail.
 *
 * Quality.  A population of 5 columns drawn from a known tree-structured
 * distribution (A -> B strongly, B -> C, A -> E; D independent of all) with
 * n = 200,000 rows is twinned at laplace(epsilon=1).  For every one of the
 * 10 pairs the twin's 2-way table must be within TVD 0.05 of the
 * population's, and the twin's (A, D) table within TVD 0.05 of the product
 * of its margins (independence where the truth is independent).  Why a
 * correct twin fails with probability below 1e-9: (i) every noise value of
 * the 5 1-way and 4 2-way releases (at most 17 + 4 * 20 = 97 cells; Laplace
 * scale at most 43 for a 1-way table and, with the 2-way share split by
 * sqrt(cells), 0.75 / (1 + 3 sqrt(20 / 6)) = 0.116 epsilon, scale 8.6, for
 * a 2-way table) stays within ln(1e12) = 27.6 scales of zero except with
 * probability below 1e-10 in all; the 2-way tables then differ from the
 * population's by TVD below 20 * 8.6 * 27.6 / (2 n) = 0.012 before the fit,
 * which only moves them
 * toward consistent tables (the exact tables are consistent, and the fit
 * is a projection in the noise-weighted norm); (ii) the exponential
 * mechanism picks a pair whose utility is 1,000 below the best with
 * probability below 10 exp(-1000 gamma) < 1e-10 (gamma = 0.025 / 2), and the
 * true edges beat every other pair by more than that at this n; (iii) the
 * stratified draw reproduces each tree edge within one row per cell, and a
 * non-edge pair's cells deviate from their expectation by more than
 * sqrt(ln(2e11) / (2 n)) = 0.0081 with probability below 1e-11 each
 * (Hoeffding): TVD below 16 * 0.0081 / 2 = 0.065 in the worst case, 0.01 in
 * practice (the draw spread over earlier columns is a stratified version of
 * independent draws and deviates less: 0.0024 here) -- so 0.05 is checked
 * on the model's pairs and 0.08 on the rows'.
 * Control: the same twin of a table whose column B was shuffled (the A-B
 * dependence destroyed, as a generator that ignores 2-way structure would)
 * must be caught: its (A, B) table is TVD ~0.4 from the population's.
 * Also: the error shrinks as n grows (n = 2,000 vs 200,000).
 *
 * Privacy.  D has n = 400 rows over 4 columns; D' adds one distinctive row
 * whose value of column 0 (category 2) no row of D has.  For a twin M and
 * the statistic f(M) = min(1, expected twin rows in the distinctive row's
 * full cell) (a function of the released model, so post-processing, with
 * values in [0, 1]), pure epsilon-DP means E_D'[f] <= e^eps E_D[f] and
 * E_D[f] <= e^eps E_D'[f].  With T trials on each side, the empirical means
 * are within t = sqrt(ln(8e9) / (2 T)) of their expectations except with
 * probability below 2.5e-10 each (Hoeffding), so the test fails iff
 * m' - e^eps m > t (1 + e^eps) (or the reverse), with false-failure
 * probability below 1e-9.  Control: the same pipeline with every noise
 * value zero and the best pairs chosen (synth_measure_exact): it gives f = 1
 * on D' (the tree's estimate of the full cell: 0.33 here) and f = 0 on D,
 * and must fail the same test.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stat.h"
#include "synth.h"
#include "tap.h"

static DpRng rng;

/* A categorical draw from p[0..k-1]. */
static int
draw(const double *p, int k)
{
	double		u = synth_uniform(&rng),
				c = 0.0;

	for (int i = 0; i < k; i++)
	{
		c += p[i];
		if (u < c)
			return i;
	}
	return k - 1;
}

#define QD 5
static const int QK[QD] = {3, 4, 3, 5, 2};

/* One row of the known population: A -> B -> C, A -> E, D independent. */
static void
population_row(uint32_t *x)
{
	static const double pa[3] = {0.5, 0.3, 0.2};
	static const double pb[3][4] = {{0.7, 0.1, 0.1, 0.1}, {0.1, 0.7, 0.1, 0.1}, {0.05, 0.05, 0.2, 0.7}};
	static const double pc[4][3] = {{0.8, 0.1, 0.1}, {0.2, 0.6, 0.2}, {0.1, 0.1, 0.8}, {0.3, 0.3, 0.4}};
	static const double pd[5] = {0.2, 0.2, 0.2, 0.2, 0.2};
	static const double pe[3][2] = {{0.9, 0.1}, {0.5, 0.5}, {0.1, 0.9}};

	x[0] = draw(pa, 3);
	x[1] = draw(pb[x[0]], 4);
	x[2] = draw(pc[x[1]], 3);
	x[3] = draw(pd, 5);
	x[4] = draw(pe[x[0]], 2);
}

/* TVD between a count table (total n1) and a probability table. */
static double
tvd_counts(const int64_t *c, double n1, const double *p, int cells)
{
	double		s = 0.0;

	for (int i = 0; i < cells; i++)
		s += fabs(c[i] / n1 - p[i]);
	return s / 2.0;
}

/* Make a twin of counts (n rows wanted) with mech; its model into *model and its rows' pair counts into tw. */
static void
make_twin(const SynthCounts *c, const char *mech_text, bool exact, SynthModel *model, SynthCounts *tw, int64_t n)
{
	DpMechanism mech;
	SynthPlan  *plan = synth_alloc(sizeof(SynthPlan));
	SynthMeasured meas;
	char		err[256];
	uint32_t   *x,
			   *work;

	if (!dp_mechanism_parse(mech_text, &mech, err, sizeof(err)) ||
		!synth_plan(plan, &mech, c->d, c->K, 1, err, sizeof(err)))
	{
		printf("Bail out! %s\n", err);
		exit(1);
	}
	if (exact)
		synth_measure_exact(plan, c, &meas);
	else
		synth_measure(plan, c, &rng, &meas);
	synth_fit(&meas, model);
	if (tw == NULL)
		return;
	synth_counts_init(tw, c->d, c->K);
	x = malloc(sizeof(uint32_t) * n * c->d);
	work = malloc(sizeof(uint32_t) * 3 * n);
	synth_sample_block(model, &rng, n, x, work);
	for (int64_t i = 0; i < n; i++)
		synth_counts_add(tw, x + i * c->d);
	free(x);
	free(work);
}

/* The largest pair TVD between a twin's rows and the population's tables (and of the model's pairs). */
static void
pair_errors(const SynthCounts *pop, const SynthModel *model, const SynthCounts *tw, double *rows_max,
			double *model_max, double *mean)
{
	int			p = 0;

	*rows_max = *model_max = *mean = 0.0;
	for (int a = 0; a < pop->d; a++)
		for (int b = a + 1; b < pop->d; b++, p++)
		{
			int			cells = pop->K[a] * pop->K[b];
			double	   *truth = malloc(sizeof(double) * cells);
			double	   *mp = malloc(sizeof(double) * cells);
			double		e_rows,
						e_model = 0.0;

			for (int i = 0; i < cells; i++)
				truth[i] = (double) pop->pair[p][i] / pop->rows;
			synth_model_pair(model, a, b, mp);
			for (int i = 0; i < cells; i++)
				e_model += fabs(mp[i] - truth[i]) / 2.0;
			e_rows = tvd_counts(tw->pair[p], (double) tw->rows, truth, cells);
			*rows_max = fmax(*rows_max, e_rows);
			*model_max = fmax(*model_max, e_model);
			*mean += e_rows;
			free(truth);
			free(mp);
		}
	*mean /= p;
}

/* TVD between a twin's (a, b) table and the product of its margins. */
static double
dependence(const SynthCounts *tw, int a, int b)
{
	int			p = synth_pair_index(tw->d, a, b);
	double		s = 0.0;
	double		n = (double) tw->rows;

	for (int i = 0; i < tw->K[a]; i++)
		for (int j = 0; j < tw->K[b]; j++)
			s += fabs(tw->pair[p][i * tw->K[b] + j] / n - (tw->one[a][i] / n) * (tw->one[b][j] / n));
	return s / 2.0;
}

/* Counts of a population of n rows (shuffle_b: column B drawn independently, the control). */
static void
population(SynthCounts *c, int64_t n, bool shuffle_b)
{
	synth_counts_init(c, QD, QK);
	for (int64_t i = 0; i < n; i++)
	{
		uint32_t	x[QD];

		population_row(x);
		if (shuffle_b)
		{
			uint32_t	y[QD];

			population_row(y);
			x[1] = y[1];
		}
		synth_counts_add(c, x);
	}
}

static void
test_quality(void)
{
	SynthCounts pop,
				broken,
				small,
				tw;
	SynthModel	model;
	double		rows_max,
				model_max,
				mean,
				mean_small = 0.0,
				mean_large = 0.0;
	int64_t		n = 200000;

	population(&pop, n, false);
	make_twin(&pop, "laplace(epsilon=1)", false, &model, &tw, n);
	pair_errors(&pop, &model, &tw, &rows_max, &model_max, &mean);
	tap_diag("n = 200,000, laplace(epsilon=1): largest pair TVD %.4f (model %.4f), mean %.4f; twin (A, D) dependence %.4f, (A, B) %.4f",
			 rows_max, model_max, mean, dependence(&tw, 0, 3), dependence(&tw, 0, 1));
	tap_ok(model_max <= 0.05, "every 2-way table of the fitted model within TVD 0.05 of the population's (%.4f)", model_max);
	tap_ok(rows_max <= 0.08, "every 2-way table of the twin's rows within TVD 0.08 of the population's (%.4f)", rows_max);
	tap_ok(dependence(&tw, 0, 3) <= 0.05, "independent columns stay independent in the twin (%.4f)", dependence(&tw, 0, 3));
	tap_ok(dependence(&tw, 0, 1) >= 0.2, "dependent columns stay dependent in the twin (%.4f)", dependence(&tw, 0, 1));

	/* control: a generator that loses the A-B dependence is caught by the same check */
	population(&broken, n, true);
	make_twin(&broken, "laplace(epsilon=1)", false, &model, &tw, n);
	pair_errors(&pop, &model, &tw, &rows_max, &model_max, &mean);
	tap_ok(model_max > 0.05 && rows_max > 0.08,
		   "positive control: a twin without the A-B dependence fails the check (%.4f, %.4f)", model_max, rows_max);

	/* better as n grows: 5 twins at n = 2,000 and at n = 200,000 */
	population(&small, 2000, false);
	for (int t = 0; t < 5; t++)
	{
		make_twin(&small, "laplace(epsilon=1)", false, &model, &tw, 2000);
		pair_errors(&small, &model, &tw, &rows_max, &model_max, &mean);
		mean_small += mean / 5;
		make_twin(&pop, "laplace(epsilon=1)", false, &model, &tw, n);
		pair_errors(&pop, &model, &tw, &rows_max, &model_max, &mean);
		mean_large += mean / 5;
	}
	/* (each large twin's mean is below 0.02 by the bounds above; a small twin's is ~0.1) */
	tap_ok(mean_large < mean_small / 2, "the twin improves as n grows: mean pair TVD %.4f at n = 2,000, %.4f at 200,000",
		   mean_small, mean_large);
}

#define PD 4
static const int PK[PD] = {3, 3, 2, 4};

/* f = min(1, expected twin rows in the cell of x): a [0, 1] statistic of the released model. */
static double
cell_statistic(const SynthModel *m, const uint32_t *x)
{
	double		q = m->node[m->order[0]][x[m->order[0]]];

	for (int i = 1; i < m->d; i++)
	{
		int			c = m->order[i];
		const double *cdf = m->cond_cdf[c] + (size_t) x[m->parent[c]] * m->K[c];

		q *= cdf[x[c]] - (x[c] > 0 ? cdf[x[c] - 1] : 0.0);
	}
	return fmin(1.0, q * m->total);
}

/* One side's mean of the statistic over T twins. */
static double
privacy_mean(const SynthCounts *c, const uint32_t *x, int T, bool exact)
{
	double		s = 0.0;

	for (int t = 0; t < T; t++)
	{
		SynthModel	m;

		make_twin(c, "laplace(epsilon=1)", exact, &m, NULL, 0);
		s += cell_statistic(&m, x);
	}
	return s / T;
}

static void
test_privacy(void)
{
	SynthCounts d0,
				d1;
	uint32_t	rare[PD] = {2, 1, 1, 3};
	double		eps = 1.0;
	int			T = 6000;
	double		t = sqrt(log(8e9) / (2.0 * T));
	double		m0,
				m1,
				c0,
				c1;
	bool		ok;

	synth_counts_init(&d0, PD, PK);
	synth_counts_init(&d1, PD, PK);
	for (int i = 0; i < 400; i++)
	{
		uint32_t	x[PD] = {(uint32_t) (i % 2), (uint32_t) ((i / 2) % 3), (uint32_t) ((i / 7) % 2), (uint32_t) (i % 4)};

		synth_counts_add(&d0, x);
		synth_counts_add(&d1, x);
	}
	synth_counts_add(&d1, rare);

	m0 = privacy_mean(&d0, rare, T, false);
	m1 = privacy_mean(&d1, rare, T, false);
	ok = m1 - exp(eps) * m0 <= t * (1 + exp(eps)) && m0 - exp(eps) * m1 <= t * (1 + exp(eps));
	tap_diag("distinctive cell: E[f] without the row %.4f, with it %.4f (T = %d each, tolerance %.4f)", m0, m1, T,
			 t * (1 + exp(eps)));
	tap_ok(ok, "a twin shows a distinctive row's cell at rates within e^epsilon of each other (laplace(epsilon=1))");

	/*
	 * control: the non-private pipeline (no noise, best pairs) is caught; it
	 * is deterministic, so one twin each gives the mean of T (the same
	 * tolerance applies)
	 */
	c0 = privacy_mean(&d0, rare, 1, true);
	c1 = privacy_mean(&d1, rare, 1, true);
	tap_diag("control: E[f] without %.4f, with %.4f", c0, c1);
	tap_ok(!(c1 - exp(eps) * c0 <= t * (1 + exp(eps)) && c0 - exp(eps) * c1 <= t * (1 + exp(eps))),
		   "positive control: the noiseless twin fails the privacy test");
}

int
main(void)
{
	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	test_quality();
	test_privacy();
	return tap_done();
}
