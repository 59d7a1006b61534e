/*
 * quantile.h — the exponential mechanism for quantiles, sampled exactly.
 *
 * Part of the numeric core: plain C, no PostgreSQL header.
 *
 * The domain [lower, upper] is cut into DP_QUANTILE_CELLS equal cells; the
 * data are their counts.  The candidates are the N + 1 cell boundaries
 * b_j = lower + j (upper - lower) / N, j = 0..N; the utility of b_j is
 * -|cum_j - r|, where cum_j is the number of values below b_j (in cells
 * 0..j-1) and r = floor(q n) the rank asked for.  Adding or removing one
 * value moves cum_j - r by at most 1 for every j (cum_j by 0 or 1, r by 0 or
 * 1), so with w values per privacy unit the sensitivity is w, and releasing
 * b_J with P(J = j) proportional to exp(-gamma |cum_j - r|), gamma =
 * epsilon / (2 w), is epsilon-DP (McSherry-Talwar; Smith 2011 for quantiles).
 *
 * Sampling is exact, with integers only: a proposal j uniform on 0..N is
 * accepted with probability exp(-gamma (d_j - d_min)) (d_j = |cum_j - r|,
 * d_min its minimum), a Bernoulli(exp(-num/den)) of Canonne-Kamath-Steinke;
 * the first accepted proposal has exactly the target distribution.  Every
 * proposal is accepted with probability at least 1 / (N + 1) (the best
 * candidate always is), so 70 (N + 1) proposals -- always all of them,
 * whatever the data, so their number does not depend on the data (each
 * acceptance test's cost still varies a little with its candidate's
 * utility) -- leave none accepted with probability below e^-70; then the
 * proposals go on (2^40 in all: failing is below any double's resolution,
 * so the release stays pure epsilon-DP).  gamma is
 * epsilon / (2 w) rounded down to a dyadic rational: the mechanism run is
 * never less private than the one charged.
 */
#ifndef DP_QUANTILE_H
#define DP_QUANTILE_H

#include <stdbool.h>
#include <stdint.h>

#include "random.h"
#include "sample.h"

#define DP_QUANTILE_CELLS 1024

/* floor(q n) exactly, for q in [0, 1] (q is a dyadic rational like every double). */
extern uint64_t dp_quantile_rank(double q, uint64_t n);

/*
 * The rank the mechanism is asked for, for the q-quantile of n values
 * (w values per privacy unit are in gamma = epsilon / (2 w)).  Every
 * boundary beyond the data has the utility of the data's extreme, so a rank
 * nearer an end of the data than the margin
 *     k = ceil((ln(N + 1) + 4) / gamma)
 * would spread the answer over the empty part of the domain (each empty
 * boundary weighs e^-4 / (N + 1) or less against the rank asked for only
 * from k on).  So the rank is kept min(k, floor(n / 4)) or more from either
 * end, falling back toward the median -- to the quartiles, no further --
 * where the group is too small for k:
 *     lo(n) = min(k, floor(n / 4)),  hi(n) = n - lo(n),
 *     r(q, n) = min(max(floor(q n), lo(n)), hi(n))          (0 < q < 1),
 * and the extremes take the margin k' = max(k, floor(n / 20)) (a value
 * shared by up to a tenth of the rows does not tie with the empty part):
 *     r(0, n) = min(k', floor(n / 4)),  r(1, n) = n - r(0, n).
 * The minimum of a group never asks for a higher rank than its maximum (the
 * plain rule min(n, k) / max(n - k, 0) asked for rank n and rank 0 below
 * n = k: the minimum came out above the maximum), and they ask for ranks
 * n / 2 apart while n < 4k, so they rarely cross.  Each of floor(q n), lo
 * and hi grows by 0 or 1 when n grows by 1, hence so does r (a max and a min
 * of such functions): adding or removing one value moves r by 0 or 1 in the
 * direction it moves every cum_j, which is what the sensitivity argument
 * needs.  For fixed n, r is non-decreasing in q on (0, 1) and r(0, n) <=
 * r(q, n) <= r(1, n) whenever floor(n / 20) <= k (below 20 k values).
 */
extern uint64_t dp_quantile_target(double q, uint64_t n, DpRational gamma, int ncells);

/*
 * The half-width t, in ranks, of the exponential mechanism's interval at
 * level `level`: the least integer t >= 0 with P(|cum_J - r| > d_min + t)
 * <= 1 - level on every dataset (d_min: the least |cum_j - r| of any
 * boundary, 0 unless the values of one cell tie).  With e_j = |cum_j - r| -
 * d_min (integers, one of them 0), the boundaries with e_j > t weigh at most
 * e^{-gamma (t + 1)} each and there are at most N of them (N = ncells, N + 1
 * boundaries), so the miss probability is at most
 *     N e^{-gamma (t + 1)} / (1 + N e^{-gamma (t + 1)}),
 * attained by data with one boundary at rank r and every other t + 1 ranks
 * off (ncells - 1 empty cells): the bound is the exact worst case, and t is
 * the tightest data-independent rank half-width.  (The union bound
 * (N + 1) e^{-gamma t} gave t about 1 + 1 / gamma ranks more.)
 */
extern double dp_quantile_rank_halfwidth(DpRational gamma, int ncells, double level);

/* epsilon / (2 w) rounded down to num / 2^k; false if not in (2^-60, 2^40). */
extern bool dp_quantile_gamma(double epsilon, uint64_t w, DpRational *gamma);

/*
 * Draw J in [0, ncells] with P(J = j) proportional to exp(-gamma |cum_j - r|)
 * (counts[0..ncells-1], cum_j = counts[0] + ... + counts[j-1]); work holds
 * ncells + 1 values.
 */
extern int	dp_quantile_draw(const uint64_t *counts, int ncells, uint64_t r, DpRational gamma, DpRng *rng,
							 uint64_t *work);

/*
 * The exponential mechanism itself: draw J in [0, n) with P(J = j)
 * proportional to exp(-gamma d_j), exactly, as described above (uniform
 * proposals accepted with probability exp(-gamma (d_j - min d)), always
 * 70 n of them).  dp_quantile_draw is this with d_j = |cum_j - r|.
 */
extern int	dp_exponential_draw(const uint64_t *d, int n, DpRational gamma, DpRng *rng);

/* The boundary b_j of [lower, upper] cut into ncells cells. */
extern double dp_quantile_boundary(double lower, double upper, int ncells, int j);

#endif							/* DP_QUANTILE_H */
