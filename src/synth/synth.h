/*
 * synth/synth.h — synthetic twins: a private copy of a protected table made
 * from differentially private measurements of it (dp_pg.synthesize).
 *
 * The numeric parts are plain C (no PostgreSQL header), so they build and are
 * tested without a server (test/unit/test_synth.c, test/stat/test_synth.c):
 *
 *   measure.c  the plan (how the mechanism's budget is split, what each
 *              release costs, composed exactly) and the private steps: noisy
 *              1-way marginals, the private choice of a spanning tree of
 *              column pairs (Kruskal with the exponential mechanism, as in
 *              MST, McKenna-Sheldon-Miklau 2021), noisy 2-way marginals of
 *              the chosen pairs;
 *   model.c    post-processing: a tree-structured model fitted to every noisy
 *              measurement (mirror descent on the marginals, as Private-PGM
 *              does, with exact belief propagation on the tree: non-negative,
 *              normalised, every shared margin consistent) and exact
 *              root-to-leaves sampling of rows from it.
 *
 * The server side (synthesize.c, columns.c) decides which columns qualify
 * and how a value becomes a category (a public key, a bin of a value domain,
 * NULL), reads the table once into SynthCounts after the charge, and turns
 * sampled categories back into values of the columns' types.
 *
 * Data model: d columns, column j with K_j categories 0..K_j-1.  A row is a
 * vector of categories.  Neighbouring tables differ by the rows of one
 * privacy unit, of which at most m are counted (m = 1 without a unit), so
 * every marginal changes by at most m in L1 (and L2) norm.
 */
#ifndef DP_SYNTH_H
#define DP_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accountant.h"
#include "mechanism.h"
#include "noise.h"
#include "random.h"
#include "sample.h"

#define SYNTH_MAX_COLUMNS 64
#define SYNTH_MAX_CATEGORIES 100000
/* all 2-way tables together (the single pass counts every pair) */
#define SYNTH_MAX_PAIR_CELLS (4 * 1024 * 1024)
/* the largest per-unit row bound m (noise grows with it) */
#define SYNTH_MAX_UNIT_ROWS 1000000

/*
 * Memory: every allocation of the numeric parts goes through this function
 * (zeroed memory; never returns NULL: a failure is dp_core_fail).  The
 * server installs palloc0 in a context it deletes; the default is calloc.
 */
typedef void *(*SynthAllocFn) (size_t size);
extern void synth_set_allocator(SynthAllocFn fn);
extern void *synth_alloc(size_t size);

/* Index of the pair (a, b), a < b, among the d(d-1)/2 pairs. */
static inline int
synth_pair_index(int d, int a, int b)
{
	return a * d - a * (a + 1) / 2 + (b - a - 1);
}

/* ------------------------------------------------------------------------
 * Exact counts (the one pass over the table)
 * ------------------------------------------------------------------------
 */
typedef struct SynthCounts
{
	int			d;
	int			K[SYNTH_MAX_COLUMNS];
	int64_t    *one[SYNTH_MAX_COLUMNS]; /* one[j][x] */
	int64_t    *pair[SYNTH_MAX_COLUMNS * (SYNTH_MAX_COLUMNS - 1) / 2];	/* [x_a * K_b + x_b] */
	int64_t		rows;
} SynthCounts;

/* Cells of all 2-way tables of columns with K[0..d-1] categories (saturating at SIZE_MAX). */
extern size_t synth_pair_cells(int d, const int *K);

/* Allocate zero counts for d columns with K[j] categories. */
extern void synth_counts_init(SynthCounts *c, int d, const int *K);

/* Count one row (every x[j] in 0..K[j]-1): every 1-way and 2-way table. */
static inline void
synth_counts_add(SynthCounts *c, const uint32_t *x)
{
	int			p = 0;

	for (int a = 0; a < c->d; a++)
	{
		c->one[a][x[a]]++;
		for (int b = a + 1; b < c->d; b++)
			c->pair[p++][(size_t) x[a] * c->K[b] + x[b]]++;
	}
	c->rows++;
}

/* ------------------------------------------------------------------------
 * The plan: the budget split and the cost (measure.c)
 * ------------------------------------------------------------------------
 */
typedef enum SynthMode
{
	SYNTH_ZCDP = 1,				/* gaussian, osgt: zCDP, rho split exactly */
	SYNTH_PURE					/* laplace: pure epsilon, split exactly */
} SynthMode;

/* Shares of the budget (zCDP rho, or epsilon; delta goes to the noisy releases). */
#define SYNTH_SHARE_ONEWAY 0.15
#define SYNTH_SHARE_SELECT 0.10
/* the 2-way releases get the rest */
/* a marginal of c cells gets budget in proportion to c^power (least summed L1 error) */
#define SYNTH_POWER_ZCDP (2.0 / 3.0)
#define SYNTH_POWER_PURE 0.5
/*
 * The selection's penalty of a pair: this share of the expected L1 noise of
 * measuring it (the fit removes about half of the raw noise: non-negativity
 * and consistency with the other measurements)
 */
#define SYNTH_PENALTY 0.5

/* Kinds of release, for the ledger's detail. */
typedef enum SynthReleaseKind
{
	SYNTH_REL_ONEWAY = 1,		/* one column's 1-way marginal */
	SYNTH_REL_SELECT,			/* the exponential-mechanism rounds together */
	SYNTH_REL_TWOWAY			/* the chosen pairs' 2-way marginals together */
} SynthReleaseKind;

typedef struct SynthRelease
{
	SynthReleaseKind kind;
	int			column;			/* ONEWAY: the column */
	int			count;			/* how many releases this entry stands for */
	DpMechanism mech;			/* the mechanism of each */
	double		scale;			/* Laplace b (0 otherwise) */
	double		sigma;			/* Gaussian / OSGT sigma (0 otherwise) */
	double		m;				/* OSGT offset */
	DpCost		cost;			/* all count releases together */
} SynthRelease;

typedef struct SynthPlan
{
	DpMechanism mech;			/* as asked */
	SynthMode	mode;
	int			d;
	int			K[SYNTH_MAX_COLUMNS];
	int64_t		unit_rows;		/* m */
	DpCost		cost;			/* the mechanism's own: one release at sensitivity m */
	/* 1-way releases */
	DpNoisePlan one[SYNTH_MAX_COLUMNS];
	/* selection */
	int			rounds;			/* exponential-mechanism rounds (d - 1, or 0 for d <= 2) */
	double		select_epsilon; /* per round */
	DpRational	gamma;			/* per unit of utility: select_epsilon / (2 m), rounded down */
	/* 2-way releases (d - 1 of them) */
	double		two_budget;		/* zcdp: total rho; pure: total epsilon (split over the pairs when chosen) */
	DpNoisePlan two;			/* a pair's plan at a uniform split (its mechanism: the family and form) */
	/* what is charged */
	int			nreleases;
	SynthRelease releases[SYNTH_MAX_COLUMNS + 2];
	DpCost		total;
} SynthPlan;

/*
 * Plan a twin of d columns (K[j] categories) measured with mech (a privacy
 * form), at most unit_rows rows per unit.  Fills the plan and its total
 * cost, which is at most the cost of one release of mech (same epsilon and
 * delta, or same rho).  False with a message on invalid input.
 */
extern bool synth_plan(SynthPlan *plan, const DpMechanism *mech, int d, const int *K,
					   int64_t unit_rows, char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * The private steps (measure.c) and the model (model.c)
 * ------------------------------------------------------------------------
 */

/* What was measured: everything here is differentially private. */
typedef struct SynthMeasured
{
	int			d;
	int			K[SYNTH_MAX_COLUMNS];
	double	   *one[SYNTH_MAX_COLUMNS]; /* noisy 1-way counts */
	double		one_var[SYNTH_MAX_COLUMNS]; /* their noise variance per cell */
	int			nedges;			/* d - 1 (or 0) */
	int			edge_a[SYNTH_MAX_COLUMNS];
	int			edge_b[SYNTH_MAX_COLUMNS];	/* edge_a < edge_b */
	double	   *two[SYNTH_MAX_COLUMNS]; /* noisy 2-way counts, [x_a * K_b + x_b] */
	double		two_var[SYNTH_MAX_COLUMNS];
} SynthMeasured;

/*
 * The private steps, in order, from the exact counts: noisy 1-way
 * marginals, the spanning tree chosen by the exponential mechanism, noisy
 * 2-way marginals of its pairs.  Draws every noise value from rng.
 */
extern void synth_measure(const SynthPlan *plan, const SynthCounts *counts, DpRng *rng,
						  SynthMeasured *out);

/*
 * Test aid: the same, with every noise value replaced by 0 and the tree
 * chosen by the best utility (the steps a non-private generator would take).
 */
extern void synth_measure_exact(const SynthPlan *plan, const SynthCounts *counts, SynthMeasured *out);

/* A tree-structured model over d columns, fitted to measurements. */
typedef struct SynthModel
{
	int			d;
	int			K[SYNTH_MAX_COLUMNS];
	double		total;			/* estimated number of rows (>= 0) */
	int			order[SYNTH_MAX_COLUMNS];	/* root first, each node after its parent */
	int			parent[SYNTH_MAX_COLUMNS];	/* -1 for the root */
	double	   *node[SYNTH_MAX_COLUMNS];	/* fitted 1-way distribution */
	/* each non-root column c: the distribution of c given its parent, [x_parent * K_c + x_c], rows cumulative */
	double	   *cond_cdf[SYNTH_MAX_COLUMNS];
	double	   *root_cdf;
	int			iterations;		/* of the fit */
} SynthModel;

/* Fit the tree model to measurements (post-processing only). */
extern void synth_fit(const SynthMeasured *meas, SynthModel *model);

/* The fitted 2-way distribution of columns a and b (model inference), into out[K_a * K_b]. */
extern void synth_model_pair(const SynthModel *model, int a, int b, double *out);

/* Draw one row's categories into x[0..d-1] (independent rows). */
extern void synth_sample(const SynthModel *model, DpRng *rng, uint32_t *x);

/*
 * Draw n rows at once into x[i * d + j], stratified: the root's categories
 * are the systematic rounding of n p(root), and among the rows whose parent
 * has category v, the child's categories are the systematic rounding of
 * their number times p(child | v); within the group they are spread evenly
 * over the rows ordered by up to SYNTH_STRATA earlier columns (model.c) and
 * rotated by a uniform offset.  Every row is still distributed as the model
 * says, but each tree edge's table of the n rows is within rounding of n
 * times the model's, and the other pairs carry far less sampling noise
 * than independent rows would.  work holds 3 n values.
 */
extern void synth_sample_block(const SynthModel *model, DpRng *rng, int64_t n, uint32_t *x,
							   uint32_t *work);

/* A uniform double in [0, 1) with 53 random bits. */
extern double synth_uniform(DpRng *rng);

/*
 * synthesize.c (the server side): ERROR unless a statement that calls
 * dp_pg.synthesize calls it once, alone (hooks.c, before the statement runs).
 */
struct PlannedStmt;
extern void DpSynthesizeCheckStatement(struct PlannedStmt *stmt);

#endif							/* DP_SYNTH_H */
