/*
 * synth/model.c — the tree model fitted to a twin's noisy measurements, and
 * sampling from it (see synth.h).  Plain C; post-processing only: nothing
 * here reads the exact counts.
 *
 * Model.  The chosen pairs form a spanning tree T of the columns; the model
 * is the exponential family
 *     p(x) proportional to exp( sum_j theta_j(x_j) + sum_{(a,b) in T} theta_ab(x_a, x_b) ),
 * whose marginals on the nodes and edges of T are computed exactly by belief
 * propagation (two passes over the tree).  Its marginals are always
 * non-negative, normalised and consistent (each edge's margins are the node
 * marginals), and every distribution whose pair marginals on T are given is
 * matched by exactly one member (the maximum-entropy one), so fitting the
 * parameters fits the marginals.
 *
 * Fit.  The noisy measurements y_C (every column's 1-way counts and the
 * tree's 2-way counts, noise variance v_C per cell) and the estimated total
 * N (the inverse-variance mean of the measurements' sums) give the loss
 *     L(p) = sum_C N^2 / (2 v_C) || p_C - y_C / N ||^2,
 * the generalised least squares of the measurements, minimised over the
 * model's marginals by entropic mirror descent in the natural parameters
 * (theta_C -= eta dL/dp_C, Private-PGM's estimator, McKenna et al. 2019)
 * with a backtracking step: convex in the marginals, so it converges to the
 * consistent non-negative marginals closest to the measurements.
 *
 * Sampling.  Rooted at column order[0], p(x) = p(x_root) prod_c p(x_c |
 * x_parent(c)) exactly (the model is a tree), so a row is drawn root to
 * leaves, each category by inversion of a cumulative table with a 53-bit
 * uniform: exact up to the doubles' rounding of the fitted probabilities.
 * A twin's rows are drawn a block at a time, stratified (synth_sample_block):
 * column by column in the tree's order, the rows of each parent category
 * get the systematic rounding of their number times p(child | parent), so
 * the tree's tables carry no sampling noise beyond rounding; the rows are
 * first ordered by up to SYNTH_STRATA earlier columns and the categories
 * spread evenly over that order (each category's places at evenly spaced
 * "times", merged), then rotated by a uniform offset: each row's category
 * is still distributed exactly as p(child | parent) says, while every run
 * of rows alike in the earlier columns gets its share of each category,
 * so pairs off the tree carry little sampling noise too (on the Arrests
 * data the rows' mean pair error is within 0.0003 of the model's, against
 * 0.0016 for independent draws per parent group).
 *
 * Layer synth/ (docs/development.md): may call the guard and every layer
 * below it.
 */
#include "synth.h"

#include <math.h>
#include <string.h>

#define SYNTH_FIT_MAX_ITERATIONS 3000
#define SYNTH_FIT_MIN_ITERATIONS 50
/* earlier columns a column's draw is stratified on (beyond its parent) */
#define SYNTH_STRATA 8

/* The tree and the work space of belief propagation. */
typedef struct SynthTree
{
	int			d;
	const int  *K;
	int			order[SYNTH_MAX_COLUMNS];
	int			parent[SYNTH_MAX_COLUMNS];
	int			edge[SYNTH_MAX_COLUMNS];	/* measured edge joining c to its parent */
	bool		flip[SYNTH_MAX_COLUMNS];	/* the measurement is [x_c][x_parent] */
	int			nchild[SYNTH_MAX_COLUMNS];
	int			child[SYNTH_MAX_COLUMNS][SYNTH_MAX_COLUMNS];
	/* parameters: theta_node[j][K_j], theta_edge[c][K_parent * K_c] */
	double	   *theta_node[SYNTH_MAX_COLUMNS];
	double	   *theta_edge[SYNTH_MAX_COLUMNS];
	/* marginals: node[j][K_j], edge[c][K_parent * K_c] */
	double	   *mu_node[SYNTH_MAX_COLUMNS];
	double	   *mu_edge[SYNTH_MAX_COLUMNS];
	/* work */
	double	   *msg[SYNTH_MAX_COLUMNS]; /* c -> parent, over K_parent */
	double	   *upb[SYNTH_MAX_COLUMNS]; /* c's belief from below, over K_c */
	double	   *down[SYNTH_MAX_COLUMNS];	/* parent -> c, over K_c */
	double	   *expn[SYNTH_MAX_COLUMNS];
	double	   *expe[SYNTH_MAX_COLUMNS];
	double	   *out;			/* over max K */
} SynthTree;

/* Scale v[0..n-1] so that its largest entry is 1 (all zero: all 1). */
static void
synth_scale_max(double *v, int n)
{
	double		mx = 0.0;

	for (int i = 0; i < n; i++)
		if (v[i] > mx)
			mx = v[i];
	for (int i = 0; i < n; i++)
		v[i] = mx > 0.0 && isfinite(mx) ? v[i] / mx : 1.0;
}

/* Normalise v[0..n-1] to sum 1 (all zero: uniform). */
static void
synth_normalise(double *v, size_t n)
{
	double		s = 0.0;

	for (size_t i = 0; i < n; i++)
		s += v[i];
	for (size_t i = 0; i < n; i++)
		v[i] = s > 0.0 && isfinite(s) ? v[i] / s : 1.0 / (double) n;
}

/* exp(theta - max theta) of n entries. */
static void
synth_exp(const double *theta, double *out, size_t n)
{
	double		mx = -INFINITY;

	for (size_t i = 0; i < n; i++)
		if (theta[i] > mx)
			mx = theta[i];
	for (size_t i = 0; i < n; i++)
		out[i] = exp(theta[i] - mx);
}

/* Exact marginals of the tree model with the current parameters. */
static void
synth_propagate(SynthTree *t)
{
	int			d = t->d;
	const int  *K = t->K;

	for (int j = 0; j < d; j++)
	{
		synth_exp(t->theta_node[j], t->expn[j], K[j]);
		if (t->parent[j] >= 0)
			synth_exp(t->theta_edge[j], t->expe[j], (size_t) K[t->parent[j]] * K[j]);
	}
	/* upward: leaves first */
	for (int i = d - 1; i >= 1; i--)
	{
		int			c = t->order[i];
		int			p = t->parent[c];
		int			Kc = K[c];

		for (int x = 0; x < Kc; x++)
			t->upb[c][x] = t->expn[c][x];
		for (int k = 0; k < t->nchild[c]; k++)
		{
			int			ch = t->child[c][k];

			for (int x = 0; x < Kc; x++)
				t->upb[c][x] *= t->msg[ch][x];
		}
		synth_scale_max(t->upb[c], Kc);
		for (int xp = 0; xp < K[p]; xp++)
		{
			double		s = 0.0;
			const double *row = t->expe[c] + (size_t) xp * Kc;

			for (int x = 0; x < Kc; x++)
				s += row[x] * t->upb[c][x];
			t->msg[c][xp] = s;
		}
		synth_scale_max(t->msg[c], K[p]);
	}
	/* downward: root first */
	for (int x = 0; x < K[t->order[0]]; x++)
		t->down[t->order[0]][x] = 1.0;
	for (int i = 0; i < d; i++)
	{
		int			p = t->order[i];
		int			Kp = K[p];

		/* node marginal */
		for (int x = 0; x < Kp; x++)
		{
			double		v = t->expn[p][x] * t->down[p][x];

			for (int k = 0; k < t->nchild[p]; k++)
				v *= t->msg[t->child[p][k]][x];
			t->mu_node[p][x] = v;
		}
		synth_normalise(t->mu_node[p], Kp);
		for (int k = 0; k < t->nchild[p]; k++)
		{
			int			c = t->child[p][k];
			int			Kc = K[c];
			double	   *mu = t->mu_edge[c];

			/* what p sends to c: everything at p but c's own message */
			for (int x = 0; x < Kp; x++)
			{
				double		v = t->expn[p][x] * t->down[p][x];

				for (int k2 = 0; k2 < t->nchild[p]; k2++)
					if (k2 != k)
						v *= t->msg[t->child[p][k2]][x];
				t->out[x] = v;
			}
			synth_scale_max(t->out, Kp);
			for (int x = 0; x < Kc; x++)
				t->down[c][x] = 0.0;
			for (int xp = 0; xp < Kp; xp++)
			{
				const double *row = t->expe[c] + (size_t) xp * Kc;

				for (int x = 0; x < Kc; x++)
				{
					t->down[c][x] += t->out[xp] * row[x];
					mu[(size_t) xp * Kc + x] = t->out[xp] * row[x] * t->upb[c][x];
				}
			}
			synth_scale_max(t->down[c], Kc);
			synth_normalise(mu, (size_t) Kp * Kc);
		}
	}
}

/* The measured table of tree edge c at (x_parent, x_c). */
static inline double
synth_meas_edge(const SynthTree *t, const SynthMeasured *m, int c, int xp, int xc)
{
	int			e = t->edge[c];

	if (t->flip[c])
		return m->two[e][(size_t) xc * t->K[t->parent[c]] + xp];
	return m->two[e][(size_t) xp * t->K[c] + xc];
}

/*
 * The loss of the current marginals and, if grad_node / grad_edge are not
 * NULL, its gradient with respect to them.
 */
static double
synth_loss(const SynthTree *t, const SynthMeasured *m, double N,
		   double **grad_node, double **grad_edge)
{
	double		loss = 0.0;

	for (int j = 0; j < t->d; j++)
	{
		double		w = N * N / m->one_var[j];

		for (int x = 0; x < t->K[j]; x++)
		{
			double		r = t->mu_node[j][x] - m->one[j][x] / N;

			loss += 0.5 * w * r * r;
			if (grad_node != NULL)
				grad_node[j][x] = w * r;
		}
		if (t->parent[j] >= 0)
		{
			int			Kp = t->K[t->parent[j]];
			int			Kc = t->K[j];
			double		we = N * N / m->two_var[t->edge[j]];

			for (int xp = 0; xp < Kp; xp++)
				for (int x = 0; x < Kc; x++)
				{
					double		r = t->mu_edge[j][(size_t) xp * Kc + x] - synth_meas_edge(t, m, j, xp, x) / N;

					loss += 0.5 * we * r * r;
					if (grad_edge != NULL)
						grad_edge[j][(size_t) xp * Kc + x] = we * r;
				}
		}
	}
	return loss;
}

/* The estimated number of rows: inverse-variance mean of the measurements' sums. */
static double
synth_total(const SynthMeasured *m)
{
	double		num = 0.0,
				den = 0.0;

	for (int j = 0; j < m->d; j++)
	{
		double		s = 0.0,
					v = m->one_var[j] * m->K[j];

		for (int x = 0; x < m->K[j]; x++)
			s += m->one[j][x];
		if (!(v > 0.0))
			return s;
		num += s / v;
		den += 1.0 / v;
	}
	for (int e = 0; e < m->nedges; e++)
	{
		double		s = 0.0;
		size_t		n = (size_t) m->K[m->edge_a[e]] * m->K[m->edge_b[e]];
		double		v = m->two_var[e] * (double) n;

		for (size_t i = 0; i < n; i++)
			s += m->two[e][i];
		if (!(v > 0.0))
			return s;
		num += s / v;
		den += 1.0 / v;
	}
	return den > 0.0 ? num / den : 0.0;
}

/* Build the tree rooted at column 0 from the measured edges. */
static void
synth_tree_init(SynthTree *t, const SynthMeasured *m)
{
	int			d = m->d;
	bool		seen[SYNTH_MAX_COLUMNS] = {false};
	int			n = 1;
	int			maxk = 1;

	memset(t, 0, sizeof(*t));
	t->d = d;
	t->K = m->K;
	for (int j = 0; j < d; j++)
		t->parent[j] = -1;
	t->order[0] = 0;
	seen[0] = true;
	for (int i = 0; i < n; i++)
	{
		int			p = t->order[i];

		for (int e = 0; e < m->nedges; e++)
		{
			int			c;

			if (m->edge_a[e] == p && !seen[m->edge_b[e]])
				c = m->edge_b[e];
			else if (m->edge_b[e] == p && !seen[m->edge_a[e]])
				c = m->edge_a[e];
			else
				continue;
			seen[c] = true;
			t->parent[c] = p;
			t->edge[c] = e;
			t->flip[c] = m->edge_a[e] == c;
			t->child[p][t->nchild[p]++] = c;
			t->order[n++] = c;
		}
	}
	if (n != d)
		dp_core_fail(DP_ERR_RANGE, "synthesize: the measured pairs do not span the columns");
	for (int j = 0; j < d; j++)
	{
		size_t		ne = t->parent[j] >= 0 ? (size_t) m->K[t->parent[j]] * m->K[j] : 1;

		if (m->K[j] > maxk)
			maxk = m->K[j];
		t->theta_node[j] = synth_alloc(sizeof(double) * m->K[j]);
		t->theta_edge[j] = synth_alloc(sizeof(double) * ne);
		t->mu_node[j] = synth_alloc(sizeof(double) * m->K[j]);
		t->mu_edge[j] = synth_alloc(sizeof(double) * ne);
		t->upb[j] = synth_alloc(sizeof(double) * m->K[j]);
		t->down[j] = synth_alloc(sizeof(double) * m->K[j]);
		t->expn[j] = synth_alloc(sizeof(double) * m->K[j]);
		t->expe[j] = synth_alloc(sizeof(double) * ne);
		t->msg[j] = synth_alloc(sizeof(double) * (t->parent[j] >= 0 ? m->K[t->parent[j]] : 1));
	}
	t->out = synth_alloc(sizeof(double) * maxk);
}

/* Cumulative table of a distribution (last entry exactly 1). */
static void
synth_cdf(const double *p, double *cdf, int n)
{
	double		s = 0.0;

	for (int i = 0; i < n; i++)
	{
		s += p[i];
		cdf[i] = s;
	}
	for (int i = 0; i < n; i++)
		cdf[i] = s > 0.0 ? cdf[i] / s : (double) (i + 1) / n;
	cdf[n - 1] = 1.0;
}

/* See synth.h. */
void
synth_fit(const SynthMeasured *meas, SynthModel *model)
{
	SynthTree	t;
	double		N = synth_total(meas);
	double		Nfit;
	double	   *gn[SYNTH_MAX_COLUMNS];
	double	   *ge[SYNTH_MAX_COLUMNS];
	double	   *old_tn[SYNTH_MAX_COLUMNS];
	double	   *old_te[SYNTH_MAX_COLUMNS];
	double	   *old_mn[SYNTH_MAX_COLUMNS];
	double	   *old_me[SYNTH_MAX_COLUMNS];
	double		loss,
				eta,
				lmax = 0.0;
	int			d = meas->d;
	int			it;

	memset(model, 0, sizeof(*model));
	synth_tree_init(&t, meas);
	model->d = d;
	memcpy(model->K, meas->K, sizeof(int) * d);
	model->total = N > 0.0 && isfinite(N) ? N : 0.0;
	/* the fit needs a positive scale; below one row the measurements are noise alone */
	Nfit = N > 1.0 ? N : 1.0;

	for (int j = 0; j < d; j++)
	{
		size_t		ne = t.parent[j] >= 0 ? (size_t) meas->K[t.parent[j]] * meas->K[j] : 1;

		gn[j] = synth_alloc(sizeof(double) * meas->K[j]);
		ge[j] = synth_alloc(sizeof(double) * ne);
		old_tn[j] = synth_alloc(sizeof(double) * meas->K[j]);
		old_te[j] = synth_alloc(sizeof(double) * ne);
		old_mn[j] = synth_alloc(sizeof(double) * meas->K[j]);
		old_me[j] = synth_alloc(sizeof(double) * ne);
		if (Nfit * Nfit / meas->one_var[j] > lmax)
			lmax = Nfit * Nfit / meas->one_var[j];
		if (t.parent[j] >= 0 && Nfit * Nfit / meas->two_var[t.edge[j]] > lmax)
			lmax = Nfit * Nfit / meas->two_var[t.edge[j]];
	}

	synth_propagate(&t);
	loss = synth_loss(&t, meas, Nfit, gn, ge);
	eta = 1.0 / lmax;
	for (it = 0; it < SYNTH_FIT_MAX_ITERATIONS; it++)
	{
		double		new_loss = loss;
		bool		accepted = false;

		for (int j = 0; j < d; j++)
		{
			size_t		ne = t.parent[j] >= 0 ? (size_t) meas->K[t.parent[j]] * meas->K[j] : 0;

			memcpy(old_tn[j], t.theta_node[j], sizeof(double) * meas->K[j]);
			memcpy(old_mn[j], t.mu_node[j], sizeof(double) * meas->K[j]);
			if (ne > 0)
			{
				memcpy(old_te[j], t.theta_edge[j], sizeof(double) * ne);
				memcpy(old_me[j], t.mu_edge[j], sizeof(double) * ne);
			}
		}
		for (int tries = 0; tries < 40 && !accepted; tries++)
		{
			double		lin = 0.0;

			for (int j = 0; j < d; j++)
			{
				size_t		ne = t.parent[j] >= 0 ? (size_t) meas->K[t.parent[j]] * meas->K[j] : 0;

				for (int x = 0; x < meas->K[j]; x++)
					t.theta_node[j][x] = old_tn[j][x] - eta * gn[j][x];
				for (size_t i = 0; i < ne; i++)
					t.theta_edge[j][i] = old_te[j][i] - eta * ge[j][i];
			}
			synth_propagate(&t);
			new_loss = synth_loss(&t, meas, Nfit, NULL, NULL);
			/* sufficient decrease: L(new) <= L(old) + <g, mu_new - mu_old> / 2 */
			for (int j = 0; j < d; j++)
			{
				size_t		ne = t.parent[j] >= 0 ? (size_t) meas->K[t.parent[j]] * meas->K[j] : 0;

				for (int x = 0; x < meas->K[j]; x++)
					lin += gn[j][x] * (t.mu_node[j][x] - old_mn[j][x]);
				for (size_t i = 0; i < ne; i++)
					lin += ge[j][i] * (t.mu_edge[j][i] - old_me[j][i]);
			}
			if (isfinite(new_loss) && new_loss <= loss + 0.5 * lin)
				accepted = true;
			else
				eta *= 0.5;
		}
		if (!accepted)
		{
			/* no step decreases the loss: back to the last marginals */
			for (int j = 0; j < d; j++)
			{
				size_t		ne = t.parent[j] >= 0 ? (size_t) meas->K[t.parent[j]] * meas->K[j] : 0;

				memcpy(t.theta_node[j], old_tn[j], sizeof(double) * meas->K[j]);
				if (ne > 0)
					memcpy(t.theta_edge[j], old_te[j], sizeof(double) * ne);
			}
			synth_propagate(&t);
			break;
		}
		(void) synth_loss(&t, meas, Nfit, gn, ge);
		if (it >= SYNTH_FIT_MIN_ITERATIONS && loss - new_loss <= 1e-10 * (loss + 1.0))
		{
			loss = new_loss;
			it++;
			break;
		}
		loss = new_loss;
		eta *= 1.5;
	}
	model->iterations = it;

	/* the sampling tables */
	memcpy(model->order, t.order, sizeof(int) * d);
	memcpy(model->parent, t.parent, sizeof(int) * d);
	for (int j = 0; j < d; j++)
	{
		model->node[j] = synth_alloc(sizeof(double) * meas->K[j]);
		memcpy(model->node[j], t.mu_node[j], sizeof(double) * meas->K[j]);
	}
	model->root_cdf = synth_alloc(sizeof(double) * meas->K[t.order[0]]);
	synth_cdf(model->node[t.order[0]], model->root_cdf, meas->K[t.order[0]]);
	for (int j = 0; j < d; j++)
	{
		int			p = t.parent[j];
		int			Kc = meas->K[j];

		if (p < 0)
			continue;
		model->cond_cdf[j] = synth_alloc(sizeof(double) * (size_t) meas->K[p] * Kc);
		for (int xp = 0; xp < meas->K[p]; xp++)
		{
			const double *row = t.mu_edge[j] + (size_t) xp * Kc;
			double		s = 0.0;

			for (int x = 0; x < Kc; x++)
				s += row[x];
			/* a parent category of probability 0 is never drawn; its row is the child's marginal */
			synth_cdf(s > 0.0 ? row : model->node[j], model->cond_cdf[j] + (size_t) xp * Kc, Kc);
		}
	}
}

/* A category by inversion of a cumulative table. */
static int
synth_draw(const double *cdf, int n, double u)
{
	int			lo = 0,
				hi = n - 1;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (u < cdf[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* See synth.h. */
double
synth_uniform(DpRng *rng)
{
	return (double) (dp_rng_u64(rng) >> 11) * 0x1.0p-53;
}

/* See synth.h. */
void
synth_sample(const SynthModel *model, DpRng *rng, uint32_t *x)
{
	int			root = model->order[0];

	x[root] = (uint32_t) synth_draw(model->root_cdf, model->K[root], synth_uniform(rng));
	for (int i = 1; i < model->d; i++)
	{
		int			c = model->order[i];
		int			Kc = model->K[c];

		x[c] = (uint32_t) synth_draw(model->cond_cdf[c] + (size_t) x[model->parent[c]] * Kc, Kc,
									 synth_uniform(rng));
	}
}

/*
 * Systematic rounding of n * p (cumulative table cdf, K entries) into
 * counts[0..K-1] summing to n: with one uniform u, category k gets
 * floor(n cdf_k + u) - floor(n cdf_{k-1} + u), i.e. n p_k rounded down or
 * up, and exactly n p_k in expectation.
 */
static void
synth_systematic(const double *cdf, int K, int64_t n, double u, int64_t *counts)
{
	int64_t		prev = 0;

	for (int k = 0; k < K; k++)
	{
		int64_t		c = k == K - 1 ? n : (int64_t) floor((double) n * cdf[k] + u);

		if (c > n)
			c = n;
		if (c < prev)
			c = prev;
		counts[k] = c - prev;
		prev = c;
	}
}

/* A uniformly random permutation of 0..n-1 into perm (Fisher-Yates). */
static void
synth_permutation(DpRng *rng, int64_t n, uint32_t *perm)
{
	for (int64_t i = 0; i < n; i++)
		perm[i] = (uint32_t) i;
	for (int64_t i = n - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) dp_rng_uniform(rng, (uint64_t) i + 1);
		uint32_t	t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
}

/* Stable counting sort of the rows in idx[0..n-1] by column col of x (tmp: n entries, count: K + 1). */
static void
synth_sort_rows(uint32_t *idx, uint32_t *tmp, int64_t n, const uint32_t *x, int d, int col, int K,
				int64_t *count)
{
	memset(count, 0, sizeof(int64_t) * (K + 1));
	for (int64_t r = 0; r < n; r++)
		count[x[(size_t) idx[r] * d + col] + 1]++;
	for (int k = 0; k < K; k++)
		count[k + 1] += count[k];
	for (int64_t r = 0; r < n; r++)
		tmp[count[x[(size_t) idx[r] * d + col]]++] = idx[r];
	memcpy(idx, tmp, sizeof(uint32_t) * n);
}

/*
 * The categories of a group of m rows with counts[0..K-1] (summing to m),
 * spread evenly: category k's counts[k] places sit at the "times"
 * (i + u_k) / counts[k], merged in time order (a heap over the categories),
 * so every run of consecutive places holds each category in proportion to
 * within about one.  heap_t / heap_k hold K entries.
 */
static void
synth_spread(DpRng *rng, const int64_t *counts, int K, int64_t m, uint32_t *seq, double *heap_t,
			 int *heap_k, int64_t *used)
{
	int			h = 0;

	for (int k = 0; k < K; k++)
	{
		int			i;

		used[k] = 0;
		if (counts[k] == 0)
			continue;
		/* push (u_k / counts[k], k) */
		i = h++;
		heap_t[i] = synth_uniform(rng) / (double) counts[k];
		heap_k[i] = k;
		while (i > 0 && heap_t[(i - 1) / 2] > heap_t[i])
		{
			double		t = heap_t[i];
			int			kk = heap_k[i];

			heap_t[i] = heap_t[(i - 1) / 2];
			heap_k[i] = heap_k[(i - 1) / 2];
			heap_t[(i - 1) / 2] = t;
			heap_k[(i - 1) / 2] = kk;
			i = (i - 1) / 2;
		}
	}
	for (int64_t j = 0; j < m && h > 0; j++)
	{
		int			k = heap_k[0];
		int			i = 0;

		seq[j] = (uint32_t) k;
		if (++used[k] < counts[k])
			heap_t[0] += 1.0 / (double) counts[k];
		else
		{
			h--;
			heap_t[0] = heap_t[h];
			heap_k[0] = heap_k[h];
		}
		/* sift down */
		for (;;)
		{
			int			l = 2 * i + 1,
						r = l + 1,
						s = i;

			if (l < h && heap_t[l] < heap_t[s])
				s = l;
			if (r < h && heap_t[r] < heap_t[s])
				s = r;
			if (s == i)
				break;
			{
				double		t = heap_t[i];
				int			kk = heap_k[i];

				heap_t[i] = heap_t[s];
				heap_k[i] = heap_k[s];
				heap_t[s] = t;
				heap_k[s] = kk;
			}
			i = s;
		}
	}
}

/* See synth.h. */
void
synth_sample_block(const SynthModel *model, DpRng *rng, int64_t n, uint32_t *x, uint32_t *work)
{
	int			d = model->d;
	uint32_t   *idx = work;
	uint32_t   *tmp = work + n;
	uint32_t   *seq = work + 2 * n;
	int			maxk = 1;
	int64_t    *count;
	double	   *heap_t;
	int		   *heap_k;
	int64_t    *used;

	if (n <= 0)
		return;
	for (int j = 0; j < d; j++)
		if (model->K[j] > maxk)
			maxk = model->K[j];
	count = synth_alloc(sizeof(int64_t) * (maxk + 1));
	used = synth_alloc(sizeof(int64_t) * maxk);
	heap_t = synth_alloc(sizeof(double) * maxk);
	heap_k = synth_alloc(sizeof(int) * maxk);
	for (int i = 0; i < d; i++)
	{
		int			c = model->order[i];
		int			p = model->parent[c];
		int			Kc = model->K[c];
		int			Kp = p < 0 ? 1 : model->K[p];
		int64_t    *next = synth_alloc(sizeof(int64_t) * (size_t) Kp * Kc);
		int64_t		start = 0;

		/*
		 * The rows in random order, then (stable sorts) by up to
		 * SYNTH_STRATA earlier columns, the first drawn most significant,
		 * then by the parent's category: each parent group is contiguous and
		 * ordered by its rows' other values.
		 */
		synth_permutation(rng, n, idx);
		for (int s = (i < SYNTH_STRATA ? i : SYNTH_STRATA) - 1; s >= 0; s--)
			if (model->order[s] != p)
				synth_sort_rows(idx, tmp, n, x, d, model->order[s], model->K[model->order[s]], count);
		if (p >= 0)
			synth_sort_rows(idx, tmp, n, x, d, p, Kp, count);
		for (int v = 0; v < Kp; v++)
		{
			int64_t		m = p < 0 ? n : count[v] - (v > 0 ? count[v - 1] : 0);
			int64_t		rot;
			const double *cdf = p < 0 ? model->root_cdf : model->cond_cdf[c] + (size_t) v * Kc;

			if (m == 0)
				continue;
			/*
			 * The group's categories: n p(c | v) rounded systematically,
			 * spread evenly over the group's order and rotated by a
			 * uniform offset, so each row's category is distributed as
			 * the model says and every stratum of the order gets its share.
			 */
			synth_systematic(cdf, Kc, m, synth_uniform(rng), next + (size_t) v * Kc);
			synth_spread(rng, next + (size_t) v * Kc, Kc, m, seq, heap_t, heap_k, used);
			rot = (int64_t) dp_rng_uniform(rng, (uint64_t) m);
			for (int64_t j = 0; j < m; j++)
			{
				int64_t		q = j + rot;

				x[(size_t) idx[start + j] * d + c] = seq[q < m ? q : q - m];
			}
			start += m;
		}
	}
}

/* Conditional table P(to | from) of the tree edge between adjacent columns, [x_from * K_to + x_to]. */
static void
synth_edge_cond(const SynthModel *model, int from, int to, double *out)
{
	int			Kf = model->K[from],
				Kt = model->K[to];

	if (model->parent[to] == from)
	{
		for (int xf = 0; xf < Kf; xf++)
		{
			const double *cdf = model->cond_cdf[to] + (size_t) xf * Kt;

			for (int x = 0; x < Kt; x++)
				out[(size_t) xf * Kt + x] = cdf[x] - (x > 0 ? cdf[x - 1] : 0.0);
		}
		return;
	}
	/* from is the child: Bayes on the joint p(to) p(from | to) */
	for (int xf = 0; xf < Kf; xf++)
	{
		double		s = 0.0;

		for (int x = 0; x < Kt; x++)
		{
			const double *cdf = model->cond_cdf[from] + (size_t) x * Kf;
			double		pj = model->node[to][x] * (cdf[xf] - (xf > 0 ? cdf[xf - 1] : 0.0));

			out[(size_t) xf * Kt + x] = pj;
			s += pj;
		}
		for (int x = 0; x < Kt; x++)
			out[(size_t) xf * Kt + x] = s > 0.0 ? out[(size_t) xf * Kt + x] / s : model->node[to][x];
	}
}

/* See synth.h. */
void
synth_model_pair(const SynthModel *model, int a, int b, double *out)
{
	int			path[SYNTH_MAX_COLUMNS];
	int			n = 0;
	int			depth_a = 0,
				depth_b = 0;
	int			x,
				y;
	int			tail[SYNTH_MAX_COLUMNS];
	int			ntail = 0;
	int			Ka = model->K[a];
	double	   *cur;
	int			Kcur;

	/* the path a -> lca -> b */
	for (x = a; model->parent[x] >= 0; x = model->parent[x])
		depth_a++;
	for (y = b; model->parent[y] >= 0; y = model->parent[y])
		depth_b++;
	x = a;
	y = b;
	path[n++] = a;
	while (depth_a > depth_b)
	{
		x = model->parent[x];
		path[n++] = x;
		depth_a--;
	}
	while (depth_b > depth_a)
	{
		tail[ntail++] = y;
		y = model->parent[y];
		depth_b--;
	}
	while (x != y)
	{
		x = model->parent[x];
		path[n++] = x;
		tail[ntail++] = y;
		y = model->parent[y];
	}
	while (ntail > 0)
		path[n++] = tail[--ntail];

	/* cur[x_a][x_u] = P(x_u | x_a) along the path */
	cur = synth_alloc(sizeof(double) * Ka * Ka);
	for (int i = 0; i < Ka; i++)
		cur[(size_t) i * Ka + i] = 1.0;
	Kcur = Ka;
	for (int s = 1; s < n; s++)
	{
		int			from = path[s - 1],
					to = path[s];
		int			Kt = model->K[to];
		double	   *cond = synth_alloc(sizeof(double) * (size_t) Kcur * Kt);
		double	   *next = synth_alloc(sizeof(double) * (size_t) Ka * Kt);

		synth_edge_cond(model, from, to, cond);
		for (int i = 0; i < Ka; i++)
			for (int f = 0; f < Kcur; f++)
			{
				double		v = cur[(size_t) i * Kcur + f];

				if (v == 0.0)
					continue;
				for (int k = 0; k < Kt; k++)
					next[(size_t) i * Kt + k] += v * cond[(size_t) f * Kt + k];
			}
		cur = next;
		Kcur = Kt;
	}
	for (int i = 0; i < Ka; i++)
		for (int k = 0; k < model->K[b]; k++)
			out[(size_t) i * model->K[b] + k] = model->node[a][i] * cur[(size_t) i * Kcur + k];
}
