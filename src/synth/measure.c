/*
 * synth/measure.c — how a twin is measured: the budget split, the cost, and
 * the private steps (see synth.h).  Plain C.
 *
 * Releases.  For d columns and at most m rows per privacy unit:
 *   (1) the 1-way marginal of every column (d releases);
 *   (2) a spanning tree of the columns, chosen pair by pair as Kruskal's
 *       algorithm would, each of its d - 1 rounds an exponential mechanism
 *       over the pairs that join two components (MST, McKenna-Sheldon-
 *       Miklau 2021), with utility
 *           u(a, b) = sum_cells |M_ab - E_ab| - P_ab,
 *       M_ab the exact 2-way counts, E_ab the counts the noisy 1-way
 *       marginals predict for independent columns (rounded to integers),
 *       P_ab SYNTH_PENALTY (1/2) of the expected L1 noise of measuring the
 *       pair (rounded; the fit removes about half of it): a public penalty that makes a pair with many cells win only when its
 *       dependence is worth its noise (as AIM does).  u is an integer and
 *       moves by at most m between neighbours (each of a unit's rows moves
 *       one cell of M_ab by 1);
 *   (3) the 2-way marginals of the d - 1 chosen pairs.
 * Each marginal moves by at most m in L1 and in L2 norm between neighbours
 * (a unit's rows add non-negative integers summing to at most m).
 *
 * Budget (shares SYNTH_SHARE_*; the 1-way share split over the columns in
 * proportion to K_j^(2/3) for zCDP and K_j^(1/2) for pure epsilon, the 2-way
 * share over the chosen pairs in proportion to (K_a K_b)^(2/3) and
 * (K_a K_b)^(1/2): the splits that minimise the summed L1 error of Gaussian
 * and Laplace noise).  The budget actually split is the mechanism's times
 * (1 - 1e-9), so that every sum of the parts, rounded up as the accountant
 * rounds, stays within the mechanism's own.
 *
 *   gaussian and osgt (rho, or (epsilon, delta) turned into the largest rho
 *   whose Canonne-Kamath-Steinke conversion meets them): zCDP composition,
 *   exact.  Each 1-way marginal is discrete Gaussian noise with sigma^2 =
 *   m^2 / (2 rho_j) per cell (rho_j-zCDP for a shift of L2 norm <= m:
 *   Canonne-Kamath-Steinke 2020, the coordinates' Rényi divergences add
 *   up); each selection round the exponential mechanism at epsilon_s, which
 *   is epsilon_s-bounded-range, hence epsilon_s^2/8-zCDP (Durfee-Rogers
 *   2019, Cesar-Rogers 2021); the 2-way releases share rho_2, split over the
 *   chosen pairs once they are chosen -- adaptive, but every order's Rényi
 *   divergences still add up to at most alpha rho_2, which is what is
 *   charged (a zCDP filter, Feldman-Zrnic 2021 / Whitehouse et al. 2023).
 *   osgt's measurements are the discrete Gaussian, its offset-0 member:
 *   many releases compose far better under zCDP than OSGT's per-release
 *   (epsilon, delta) calibration would by basic composition.  The rho
 *   split is at most the mechanism's own zCDP cost, and alpha rho at most
 *   its own Rényi curve on every order.  For an (epsilon, delta) form the
 *   charge states (epsilon, delta) (the CKS conversion of the total rho,
 *   never above the asked epsilon).
 *
 *   laplace(epsilon): pure epsilon-DP by basic composition, exact: discrete
 *   Laplace noise of scale m / epsilon_j per cell for the 1-way marginals,
 *   the exponential mechanism at epsilon_s per round, the 2-way share
 *   epsilon_2 split over the chosen pairs (a pure-DP filter: the parts'
 *   epsilons sum to epsilon_2 on every path).  The 2-way releases are
 *   charged as one discrete Laplace release at epsilon_2: its Rényi curve is
 *   superadditive in epsilon (checked on the grid by test/unit/test_synth.c),
 *   so any split's curves sum to at most it.  Sum: epsilon.
 *
 * Charged cost: the sum of every release's cost (dp_cost_add, rounded up),
 * each release's being that of its planned noise (the exact Rényi curve of
 * the discrete noise) or, for the selection, min(epsilon_s, alpha
 * epsilon_s^2 / 8) per round; synth_plan checks that every part of it
 * (epsilon, delta, rho, each Rényi order) is within the mechanism's own
 * cost of one release at sensitivity m, and plans a little less if not.
 * A budget so small that a measurement's noise would leave the exact
 * samplers' range is refused as a bad parameter.
 *
 * Layer synth/ (docs/development.md): may call the guard and every layer
 * below it.
 */
#include "synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quantile.h"

#define SYNTH_SLACK (1.0 - 1e-9)
#define SYNTH_MAX_SIGMA 1e9

static SynthAllocFn synth_alloc_fn = NULL;

/* Install the allocator of the numeric parts (NULL: calloc). */
void
synth_set_allocator(SynthAllocFn fn)
{
	synth_alloc_fn = fn;
}

/* Zeroed memory from the installed allocator; never NULL. */
void *
synth_alloc(size_t size)
{
	void	   *p;

	if (size == 0)
		size = 1;
	p = synth_alloc_fn != NULL ? synth_alloc_fn(size) : calloc(1, size);
	if (p == NULL)
		dp_core_fail(DP_ERR_RANGE, "synthesize: out of memory");
	return p;
}

/* Cells of all 2-way tables (SIZE_MAX on overflow). */
size_t
synth_pair_cells(int d, const int *K)
{
	size_t		total = 0;

	for (int a = 0; a < d; a++)
		for (int b = a + 1; b < d; b++)
		{
			size_t		c = (size_t) K[a] * (size_t) K[b];

			if (total > SIZE_MAX - c)
				return SIZE_MAX;
			total += c;
		}
	return total;
}

/* Allocate zero counts. */
void
synth_counts_init(SynthCounts *c, int d, const int *K)
{
	int			p = 0;

	memset(c, 0, sizeof(*c));
	c->d = d;
	for (int j = 0; j < d; j++)
	{
		c->K[j] = K[j];
		c->one[j] = synth_alloc(sizeof(int64_t) * K[j]);
	}
	for (int a = 0; a < d; a++)
		for (int b = a + 1; b < d; b++)
			c->pair[p++] = synth_alloc(sizeof(int64_t) * (size_t) K[a] * K[b]);
}

/*
 * The largest rho whose zCDP implies (epsilon, delta)-DP by the
 * Canonne-Kamath-Steinke conversion (bisection; eps_cks grows with rho).
 */
static double
synth_rho_for(double epsilon, double delta)
{
	double		lo = 0.0;
	double		hi = epsilon;

	for (int i = 0; i < 200; i++)
	{
		double		mid = 0.5 * (lo + hi);

		if (dp_zcdp_eps_cks(mid, delta, NULL) <= epsilon)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The cost of one exponential-mechanism round at epsilon: epsilon-DP, epsilon^2/8-zCDP. */
static void
synth_em_cost(double eps, DpCost *c)
{
	memset(c, 0, sizeof(*c));
	c->epsilon = eps;
	c->delta = 0.0;
	c->rho = nextafter(eps * eps / 8.0, INFINITY);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
	{
		double		r = nextafter(DP_RDP_ALPHAS[i] * eps * eps / 8.0, INFINITY);

		c->rdp[i] = r < eps ? r : eps;
	}
}

/* A mechanism of family/form with parameters p0, p1. */
static DpMechanism
synth_mech(int family, int form, double p0, double p1)
{
	DpMechanism m;

	memset(&m, 0, sizeof(m));
	m.family = family;
	m.form = form;
	m.p[0] = p0;
	m.p[1] = p1;
	return m;
}

/*
 * Plan one marginal's noise (L1 and L2 sensitivity m).  A budget so small
 * that the noise would leave the exact samplers' range (sample.h: a
 * Laplace scale within DP_MAX_NOISE, the largest a mechanism may state; a
 * Gaussian sigma^2 below 2^62, so sigma within SYNTH_MAX_SIGMA) is a bad
 * parameter, refused here before any sampler is prepared.
 */
static bool
synth_plan_marginal(DpNoisePlan *np, const DpMechanism *mech, int64_t m, char *err, size_t errlen)
{
	double		scale = dp_noise_continuous_scale(mech, (double) m);
	double		limit = mech->family == DP_MECH_LAPLACE ? DP_MAX_NOISE : SYNTH_MAX_SIGMA;
	char		text[DP_MECH_TEXT_LEN];

	if (!(scale <= limit))
	{
		dp_mechanism_format(mech, text, sizeof(text));
		snprintf(err, errlen, "the budget is too small: one of its measurements, %s at sensitivity %lld, "
				 "would need noise of scale %.3g, above the largest the exact samplers take (%g)",
				 text, (long long) m, scale, limit);
		return false;
	}
	return dp_noise_plan(np, mech, (long long) m, (long long) m, 0, err, errlen);
}

/* Record a release for the ledger's detail. */
static void
synth_note(SynthPlan *plan, SynthReleaseKind kind, int column, int count, const DpMechanism *mech,
		   const DpNoisePlan *np, const DpCost *cost)
{
	SynthRelease *r = &plan->releases[plan->nreleases++];

	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->column = column;
	r->count = count;
	r->mech = *mech;
	if (np != NULL)
	{
		r->scale = np->scale;
		r->sigma = np->sigma;
		r->m = np->m;
	}
	r->cost = *cost;
	dp_cost_add(&plan->total, cost);
}

/* The largest pair table of K[0..d-1] (cells). */
static double
synth_max_pair_cells(int d, const int *K)
{
	double		maxcells = 1.0;

	for (int a = 0; a < d; a++)
		for (int b = a + 1; b < d; b++)
			if ((double) K[a] * K[b] > maxcells)
				maxcells = (double) K[a] * K[b];
	return maxcells;
}

/*
 * Plan the releases at budget `budget` (rho for zCDP, epsilon for pure),
 * the mechanism's own times a factor <= 1; see the file comment.
 */
static bool
synth_plan_at(SynthPlan *plan, double budget, char *err, size_t errlen)
{
	int			d = plan->d;
	const int  *K = plan->K;
	int64_t		unit_rows = plan->unit_rows;
	double		s1,
				ss,
				s2;
	double		w[SYNTH_MAX_COLUMNS];
	double		wsum = 0.0;
	double		power = plan->mode == SYNTH_ZCDP ? SYNTH_POWER_ZCDP : SYNTH_POWER_PURE;
	int			nedges = d - 1;
	DpCost		c;

	plan->nreleases = 0;
	dp_cost_zero(&plan->total);
	plan->rounds = d >= 3 ? d - 1 : 0;
	if (d == 1)
	{
		s1 = 1.0;
		ss = 0.0;
		s2 = 0.0;
	}
	else
	{
		s1 = SYNTH_SHARE_ONEWAY;
		ss = plan->rounds > 0 ? SYNTH_SHARE_SELECT : 0.0;
		s2 = 1.0 - s1 - ss;
	}
	for (int j = 0; j < d; j++)
	{
		w[j] = pow((double) K[j], power);
		wsum += w[j];
	}

	/* (1) 1-way marginals */
	for (int j = 0; j < d; j++)
	{
		double		f = s1 * w[j] / wsum;
		DpMechanism mj = plan->mode == SYNTH_ZCDP ?
			synth_mech(DP_MECH_GAUSSIAN, DP_FORM_RHO, budget * f, 0.0) :
			synth_mech(DP_MECH_LAPLACE, DP_FORM_EPSILON, budget * f, 0.0);

		if (!synth_plan_marginal(&plan->one[j], &mj, unit_rows, err, errlen))
			return false;
		dp_noise_plan_cost(&plan->one[j], &c);
		synth_note(plan, SYNTH_REL_ONEWAY, j, 1, &mj, &plan->one[j], &c);
	}

	/* (2) selection */
	if (plan->rounds > 0)
	{
		DpMechanism ms;

		if (plan->mode == SYNTH_ZCDP)
			plan->select_epsilon = sqrt(8.0 * ss * budget / plan->rounds);
		else
			plan->select_epsilon = ss * budget / plan->rounds;
		/* rounded down, so that the rounds' sum stays within the share */
		plan->select_epsilon = nextafter(plan->select_epsilon, 0.0);
		if (!dp_quantile_gamma(plan->select_epsilon, (uint64_t) unit_rows, &plan->gamma))
		{
			snprintf(err, errlen, "the selection's epsilon %g is too small or too large", plan->select_epsilon);
			return false;
		}
		synth_em_cost(plan->select_epsilon, &c);
		dp_cost_scale(&c, plan->rounds);
		ms = synth_mech(DP_MECH_LAPLACE, DP_FORM_EPSILON, plan->select_epsilon, 0.0);
		synth_note(plan, SYNTH_REL_SELECT, -1, plan->rounds, &ms, NULL, &c);
	}

	/*
	 * (3) 2-way marginals: the share is split over the chosen pairs in
	 * proportion to (K_a K_b)^power once they are known; every split must
	 * plan, so the smallest share any pair can get is checked here.  The
	 * charge is that of one release at the whole share: zCDP adds the
	 * pairs' rho (a filter), and the discrete Laplace Rényi curve is
	 * superadditive in epsilon (test/unit/test_synth.c checks it on the
	 * grid), so the pairs' curves sum to at most the whole share's.
	 */
	if (nedges > 0)
	{
		double		wmin = 1.0,
					wmax = pow(synth_max_pair_cells(d, K), power);
		int			family = plan->mode == SYNTH_ZCDP ? DP_MECH_GAUSSIAN : DP_MECH_LAPLACE;
		int			form = plan->mode == SYNTH_ZCDP ? DP_FORM_RHO : DP_FORM_EPSILON;
		DpMechanism m2;
		DpNoisePlan whole;

		plan->two_budget = nextafter(budget * s2, 0.0);
		m2 = synth_mech(family, form, plan->two_budget * wmin / (wmin + (nedges - 1) * wmax), 0.0);
		if (!synth_plan_marginal(&plan->two, &m2, unit_rows, err, errlen))
			return false;
		m2 = synth_mech(family, form, plan->two_budget / nedges, 0.0);
		if (!synth_plan_marginal(&plan->two, &m2, unit_rows, err, errlen))
			return false;
		m2 = synth_mech(family, form, plan->two_budget, 0.0);
		if (!synth_plan_marginal(&whole, &m2, unit_rows, err, errlen))
			return false;
		dp_noise_plan_cost(&whole, &c);
		if (plan->mode == SYNTH_ZCDP)
		{
			c.epsilon = INFINITY;
			c.delta = 0.0;
			c.rho = plan->two_budget;
			for (int i = 0; i < DP_RDP_NALPHAS; i++)
				c.rdp[i] = nextafter(DP_RDP_ALPHAS[i] * plan->two_budget, INFINITY);
		}
		synth_note(plan, SYNTH_REL_TWOWAY, -1, nedges, &m2, NULL, &c);
	}

	/* the (epsilon, delta) a zCDP twin states */
	if (plan->mode == SYNTH_ZCDP)
	{
		if (plan->mech.form == DP_FORM_EPSILON_DELTA)
		{
			plan->total.epsilon = nextafter(dp_zcdp_eps_cks(plan->total.rho, plan->mech.p[1], NULL), INFINITY);
			plan->total.delta = plan->mech.p[1];
		}
		else
		{
			plan->total.epsilon = INFINITY;
			plan->total.delta = 0.0;
		}
	}
	return true;
}

/* Is every part of the cost a at most the same part of b? */
static bool
synth_cost_within(const DpCost *a, const DpCost *b)
{
	if (!(a->epsilon <= b->epsilon) || !(a->delta <= b->delta) || !(a->rho <= b->rho))
		return false;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		if (!(a->rdp[i] <= b->rdp[i]))
			return false;
	return true;
}

/* See synth.h. */
bool
synth_plan(SynthPlan *plan, const DpMechanism *mech, int d, const int *K,
		   int64_t unit_rows, char *err, size_t errlen)
{
	DpNoisePlan single;
	double		budget;

	memset(plan, 0, sizeof(*plan));
	if (d < 1 || d > SYNTH_MAX_COLUMNS)
	{
		snprintf(err, errlen, "a twin has between 1 and %d columns, not %d", SYNTH_MAX_COLUMNS, d);
		return false;
	}
	if (unit_rows < 1 || unit_rows > SYNTH_MAX_UNIT_ROWS)
	{
		snprintf(err, errlen, "at most %d rows per privacy unit can be measured, not %lld",
				 SYNTH_MAX_UNIT_ROWS, (long long) unit_rows);
		return false;
	}
	if (!dp_mechanism_validate_privacy(mech, err, errlen))
		return false;
	for (int j = 0; j < d; j++)
		if (K[j] < 1 || K[j] > SYNTH_MAX_CATEGORIES)
		{
			snprintf(err, errlen, "column %d has %d categories; between 1 and %d are allowed",
					 j + 1, K[j], SYNTH_MAX_CATEGORIES);
			return false;
		}
	if (synth_pair_cells(d, K) > SYNTH_MAX_PAIR_CELLS)
	{
		snprintf(err, errlen, "the 2-way tables of these columns have %zu cells together; at most %d are allowed",
				 synth_pair_cells(d, K), SYNTH_MAX_PAIR_CELLS);
		return false;
	}
	plan->mech = *mech;
	plan->d = d;
	memcpy(plan->K, K, sizeof(int) * d);
	plan->unit_rows = unit_rows;

	/* the mechanism's own cost: one release at the unit's sensitivity */
	if (!synth_plan_marginal(&single, mech, unit_rows, err, errlen))
		return false;
	dp_noise_plan_cost(&single, &plan->cost);

	switch (mech->family)
	{
		case DP_MECH_GAUSSIAN:
		case DP_MECH_OSGT:
			plan->mode = SYNTH_ZCDP;
			/* a rho whose zCDP curve alpha rho lies under the mechanism's own curve */
			budget = mech->form == DP_FORM_RHO ? mech->p[0] : synth_rho_for(mech->p[0], mech->p[1]);
			if (plan->cost.rho < budget)
				budget = plan->cost.rho;
			for (int i = 0; i < DP_RDP_NALPHAS; i++)
				if (plan->cost.rdp[i] / DP_RDP_ALPHAS[i] < budget)
					budget = plan->cost.rdp[i] / DP_RDP_ALPHAS[i];
			if (!(budget > 0.0))
			{
				snprintf(err, errlen, "no zCDP budget fits this mechanism's cost");
				return false;
			}
			break;
		case DP_MECH_LAPLACE:
			plan->mode = SYNTH_PURE;
			budget = mech->p[0];
			break;
		default:
			snprintf(err, errlen, "corrupt mechanism family %d", mech->family);
			return false;
	}

	/*
	 * The parts at the budget times (1 - 1e-9), so that their sum rounded up
	 * stays within it; should the composed cost still pass the mechanism's
	 * own anywhere (it does not on any tested input), a little less.
	 */
	budget *= SYNTH_SLACK;
	for (int tries = 0;; tries++)
	{
		if (!synth_plan_at(plan, budget, err, errlen))
			return false;
		if (synth_cost_within(&plan->total, &plan->cost))
			return true;
		if (tries == 20)
		{
			snprintf(err, errlen, "the parts' cost exceeds the mechanism's");
			return false;
		}
		budget *= 0.99;
	}
}

/* ------------------------------------------------------------------------
 * The private steps
 * ------------------------------------------------------------------------
 */

/* Noisy copy of n counts with plan's noise (zero noise when np is NULL). */
static double *
synth_noisy(const int64_t *exact, size_t n, const DpNoisePlan *np, DpRng *rng)
{
	double	   *y = synth_alloc(sizeof(double) * n);

	for (size_t i = 0; i < n; i++)
		y[i] = (double) exact[i] + (np != NULL ? (double) dp_sampler_draw(&np->sampler, rng) : 0.0);
	return y;
}

/* Union-find root. */
static int
synth_find(int *up, int x)
{
	while (up[x] != x)
		x = up[x] = up[up[x]];
	return x;
}

/* Per-cell noise scale (mean absolute noise) a 2-way marginal of a plan would get, for the selection's penalty. */
static double
synth_pair_noise(const SynthPlan *plan)
{
	if (plan->d < 2)
		return 0.0;
	if (plan->two.sigma > 0.0)
		return plan->two.sigma * sqrt(2.0 / M_PI);
	return plan->two.scale;
}

/*
 * Choose the spanning tree: Kruskal's rounds, each an exponential mechanism
 * over the pairs joining two components (exact == true: the best pair,
 * no randomness: the test aid).
 */
static void
synth_select(const SynthPlan *plan, const SynthCounts *counts, SynthMeasured *out, DpRng *rng, bool exact)
{
	int			d = plan->d;
	int			npairs = d * (d - 1) / 2;
	int64_t    *u = synth_alloc(sizeof(int64_t) * npairs);
	int		   *pa = synth_alloc(sizeof(int) * npairs);
	int		   *pb = synth_alloc(sizeof(int) * npairs);
	uint64_t   *dist = synth_alloc(sizeof(uint64_t) * npairs);
	int		   *cand = synth_alloc(sizeof(int) * npairs);
	int			up[SYNTH_MAX_COLUMNS];
	double		total = 0.0,
				wsum = 0.0;
	double	   *p1[SYNTH_MAX_COLUMNS];
	double		pen_cell = synth_pair_noise(plan);

	/* the independent model of the noisy 1-way marginals (public) */
	for (int j = 0; j < d; j++)
	{
		double		s = 0.0,
					v = out->one_var[j] * plan->K[j];

		for (int x = 0; x < plan->K[j]; x++)
			s += out->one[j][x];
		if (v > 0.0)
		{
			total += s / v;
			wsum += 1.0 / v;
		}
		else
		{
			total = s;
			wsum = 1.0;
			break;
		}
	}
	total = wsum > 0.0 ? total / wsum : 0.0;
	if (total < 0.0)
		total = 0.0;
	for (int j = 0; j < d; j++)
	{
		double		s = 0.0;

		p1[j] = synth_alloc(sizeof(double) * plan->K[j]);
		for (int x = 0; x < plan->K[j]; x++)
		{
			p1[j][x] = out->one[j][x] > 0.0 ? out->one[j][x] : 0.0;
			s += p1[j][x];
		}
		for (int x = 0; x < plan->K[j]; x++)
			p1[j][x] = s > 0.0 ? p1[j][x] / s : 1.0 / plan->K[j];
	}

	/* utilities: exact integers, each moving by at most m between neighbours */
	for (int a = 0, p = 0; a < d; a++)
		for (int b = a + 1; b < d; b++, p++)
		{
			const int64_t *M = counts->pair[p];
			int64_t		s = 0;

			for (int xa = 0; xa < plan->K[a]; xa++)
				for (int xb = 0; xb < plan->K[b]; xb++)
				{
					int64_t		e = llround(total * p1[a][xa] * p1[b][xb]);
					int64_t		diff = M[(size_t) xa * plan->K[b] + xb] - e;

					s += diff < 0 ? -diff : diff;
				}
			u[p] = s - llround(SYNTH_PENALTY * pen_cell * plan->K[a] * plan->K[b]);
			pa[p] = a;
			pb[p] = b;
		}

	for (int j = 0; j < d; j++)
		up[j] = j;
	out->nedges = 0;
	for (int round = 0; round < d - 1; round++)
	{
		int			n = 0;
		int64_t		best = INT64_MIN;
		int			pick;

		for (int p = 0; p < npairs; p++)
			if (synth_find(up, pa[p]) != synth_find(up, pb[p]))
			{
				cand[n++] = p;
				if (u[p] > best)
					best = u[p];
			}
		if (d == 2)
			pick = cand[0];
		else if (exact)
		{
			pick = cand[0];
			for (int i = 0; i < n; i++)
				if (u[cand[i]] == best)
				{
					pick = cand[i];
					break;
				}
		}
		else
		{
			for (int i = 0; i < n; i++)
				dist[i] = (uint64_t) (best - u[cand[i]]);
			pick = cand[dp_exponential_draw(dist, n, plan->gamma, rng)];
		}
		out->edge_a[out->nedges] = pa[pick];
		out->edge_b[out->nedges] = pb[pick];
		out->nedges++;
		up[synth_find(up, pa[pick])] = synth_find(up, pb[pick]);
	}
}

/* The private steps (exact: no noise, best pairs). */
static void
synth_measure_internal(const SynthPlan *plan, const SynthCounts *counts, DpRng *rng,
					   SynthMeasured *out, bool exact)
{
	int			d = plan->d;
	double		wsum = 0.0;
	double		w[SYNTH_MAX_COLUMNS];

	memset(out, 0, sizeof(*out));
	out->d = d;
	memcpy(out->K, plan->K, sizeof(int) * d);

	/* (1) */
	for (int j = 0; j < d; j++)
	{
		out->one[j] = synth_noisy(counts->one[j], plan->K[j], exact ? NULL : &plan->one[j], rng);
		out->one_var[j] = plan->one[j].variance;
	}
	if (d < 2)
		return;

	/* (2) */
	synth_select(plan, counts, out, rng, exact);

	/* (3): the 2-way share split over the chosen pairs by (K_a K_b)^power */
	for (int e = 0; e < out->nedges; e++)
	{
		w[e] = pow((double) plan->K[out->edge_a[e]] * plan->K[out->edge_b[e]],
				   plan->mode == SYNTH_ZCDP ? SYNTH_POWER_ZCDP : SYNTH_POWER_PURE);
		wsum += w[e];
	}
	for (int e = 0; e < out->nedges; e++)
	{
		int			a = out->edge_a[e],
					b = out->edge_b[e];
		const int64_t *M = counts->pair[synth_pair_index(d, a, b)];
		size_t		n = (size_t) plan->K[a] * plan->K[b];
		DpNoisePlan np;
		DpMechanism m2 = plan->two.mech;
		char		err[256];

		m2.p[0] = plan->two_budget * w[e] / wsum;
		/* planned at synth_plan's smallest share or above: cannot fail */
		if (!dp_noise_plan(&np, &m2, (long long) plan->unit_rows, (long long) plan->unit_rows, 0,
						   err, sizeof(err)))
			dp_core_fail(DP_ERR_RANGE, err);
		out->two[e] = synth_noisy(M, n, exact ? NULL : &np, rng);
		out->two_var[e] = np.variance;
	}
}

/* See synth.h. */
void
synth_measure(const SynthPlan *plan, const SynthCounts *counts, DpRng *rng, SynthMeasured *out)
{
	synth_measure_internal(plan, counts, rng, out, false);
}

/* See synth.h. */
void
synth_measure_exact(const SynthPlan *plan, const SynthCounts *counts, SynthMeasured *out)
{
	synth_measure_internal(plan, counts, NULL, out, true);
}
