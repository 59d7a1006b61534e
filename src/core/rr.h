/*
 * rr.h — randomized response: the local randomizer of a locally private
 * column, drawn exactly, and the unbiased estimates read from its outputs.
 *
 * Plain C (no PostgreSQL header).  Seed 002 (the mechanisms lecture):
 * randomized response keeps a binary answer with probability e^eps/(1+e^eps)
 * and flips it otherwise; it is eps-DP for the one answer it randomizes.
 * Generalised to k >= 2 values (k-ary randomized response): keep with
 * probability p = e^eps/(e^eps + k - 1), else report each of the other k - 1
 * values with probability q = 1/(e^eps + k - 1); p/q = e^eps.
 *
 * Values are indices 0 .. k-1 of the column's declared keys (binary: 0 =
 * false, 1 = true).  rr.c holds the sampler's exactness argument and the
 * estimators' formulas.
 */
#ifndef DP_RR_H
#define DP_RR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mechanism.h"
#include "random.h"

/* At most this many keys (the sampler's round bound grows with k). */
#define DP_RR_MAX_KEYS 1000

/*
 * A prepared randomizer.  epsilon is a double, hence exactly a dyadic
 * rational num / 2^shift; the coin uses that rational itself, so the
 * probabilities drawn are exactly those of this epsilon (nothing rounded).
 */
typedef struct DpRR
{
	int			k;				/* number of values, 2 .. DP_RR_MAX_KEYS */
	double		epsilon;		/* the guarantee, exactly num / 2^shift */
	uint64_t	num;
	int			shift;			/* 0 .. 127 */
} DpRR;

/* Prepare randomized response over k values at epsilon; false with a message on error. */
extern bool dp_rr_prepare(DpRR *rr, double epsilon, int k, char *err, size_t errlen);

/*
 * The reported index for the true index x (0 <= x < k): x with probability
 * exactly e^eps/(e^eps + k - 1), every other index with 1/(e^eps + k - 1).
 */
extern int	dp_rr_draw(const DpRR *rr, int x, DpRng *rng);

/* p = e^eps/(e^eps + k - 1): the probability of reporting the truth (double, for reports). */
extern double dp_rr_keep_probability(double epsilon, int k);

/* q = 1/(e^eps + k - 1): the probability of reporting one given other value. */
extern double dp_rr_other_probability(double epsilon, int k);

/*
 * The unbiased estimate of how many of n rows hold a value, from the number
 * `reported` of them that report it: ((e^eps + k - 1) reported - n)/(e^eps - 1).
 */
extern double dp_rr_estimate(double reported, double n, double epsilon, int k);

/* Its scale (e^eps + k - 1)/(e^eps - 1): how much one report moves the estimate. */
extern double dp_rr_scale(double epsilon, int k);

/*
 * The exact variance of that estimate when `count` of the n rows truly hold
 * the value: scale^2 (count p(1 - p) + (n - count) q(1 - q)).  For k = 2 it
 * is n e^eps/(e^eps - 1)^2 whatever count is.
 */
extern double dp_rr_variance(double count, double n, double epsilon, int k);

/* The largest of that variance over count in [0, n] (at count = n or 0). */
extern double dp_rr_variance_max(double n, double epsilon, int k);

/*
 * Seed 002's Chernoff (Hoeffding) bound: with probability at least 1 - beta
 * the estimate is within scale * sqrt(n ln(2/beta)/2) of the true count
 * (divide by n for proportions: the lecture's (1+e^eps)/(e^eps-1)
 * sqrt(ln(2/beta)/(2n)) at k = 2).
 */
extern double dp_rr_halfwidth(double n, double epsilon, int k, double beta);

/*
 * An estimate made from centrally noised report counts.  A group's reports
 * are counted per value (S_0 .. S_{k-1}, n = their sum) and each count gets
 * independent noise Z_j with P(|Z_j| <= h) >= 1 - beta_c/k; then
 *   estimate = ((e^eps + k - 1) S~_v - n~)/(e^eps - 1),   n~ = sum_j S~_j.
 * Its error is the randomization's, scale (S_v - E S_v), plus the noise's,
 * ((e^eps + k - 2) Z_v - sum_{j != v} Z_j)/(e^eps - 1).  With probability at
 * least 1 - beta_r - beta_c both |S_v - E S_v| <= sqrt(n ln(2/beta_r)/2)
 * (Hoeffding, n <= n~ + k h) and every |Z_j| <= h, so the error is within
 *   scale sqrt((n~ + k h) ln(2/beta_r)/2) + (e^eps + 2k - 3) h/(e^eps - 1).
 * h = 0 (no central noise, n~ = n exact) gives dp_rr_halfwidth.
 */
extern double dp_rr_noisy_halfwidth(double n_noisy, double epsilon, int k, double h, double beta_r);

/* The coefficient sum ((e^eps + k - 2)^2 + k - 1)/(e^eps - 1)^2: noise variance per unit of Var(Z). */
extern double dp_rr_noise_variance_factor(double epsilon, int k);

#endif							/* DP_RR_H */
