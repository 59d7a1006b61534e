/*
 * moments.h — a variance from noisy moments (plain C, no PostgreSQL header).
 *
 * The values x lie in [c - h, c + h]; three releases, each with noise of
 * its own, are n (the count), s1 = sum(x - c) and s2 = sum((x - c)^2).
 */
#ifndef DP_MOMENTS_H
#define DP_MOMENTS_H

#include <stdbool.h>

/* The population (or sample) variance estimated from noisy n, s1, s2 (see moments.c). */
extern double dp_moments_variance(double n, double s1, double s2, double h, bool sample);

/*
 * An interval that holds the variance of the true moments (N, S1, S2)
 * whenever |n - N| <= an, |s1 - S1| <= a1 and |s2 - S2| <= a2.
 */
extern void dp_moments_variance_interval(double n, double s1, double s2, double h, bool sample,
										 double an, double a1, double a2, double *lo, double *hi);

#endif							/* DP_MOMENTS_H */
