/*
 * interval.h — error bars computed from the noises' exact distributions
 * rather than from union bounds: an average's (a noisy sum over a noisy
 * count).
 *
 * Plain C (no PostgreSQL header).  interval.c holds the argument.
 */
#ifndef DP_INTERVAL_H
#define DP_INTERVAL_H

#include "noise.h"

/*
 * P(|A - m B| <= q): A the noise of plan a in output units (a fine lattice,
 * taken as its continuous family), B the integer noise of plan b (a count's).
 */
extern double dp_interval_combo_prob(const DpNoisePlan *a, const DpNoisePlan *b, double m, double q);

/* The smallest q with P(|A - m B| <= q) >= level (relative precision 1e-9, rounded up). */
extern double dp_interval_combo_quantile(const DpNoisePlan *a, const DpNoisePlan *b, double m, double level);

/*
 * P(|A - m B| > h (n + B) or n + B < 1): the probability that an average
 * of n values with centred mean m, released as (S + A)/(n + B), misses the
 * truth by more than h (or has no count to divide by).
 */
extern double dp_interval_ratio_miss(const DpNoisePlan *a, const DpNoisePlan *b, double m, double n, double h);

/*
 * The smallest h with dp_interval_ratio_miss(a, b, w, n, h) <= 1 - level: an
 * average of at least n values in [c - w, c + w] is within h of its truth
 * with probability at least level (the worst centred mean, |m| = w, the
 * fewest values, n: both only widen it).  INFINITY if no h does (too few
 * values for the count's noise).
 */
extern double dp_interval_ratio_halfwidth(const DpNoisePlan *a, const DpNoisePlan *b, double w, double n,
										  double level);

#endif							/* DP_INTERVAL_H */
