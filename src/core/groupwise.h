/*
 * groupwise.h — seed 001's group-wise relative-error counts (Algorithm 1),
 * drawn exactly, and the per-group guarantee computed numerically.
 *
 * Plain C (no PostgreSQL header).  A count x is released as
 *   X = x + Z1,   Z1 ~ discrete Gaussian N_Z(0, sigma1^2), sigma1^2 = D^2/(2 rho)
 *   Y = X + Z2,   Z2 ~ discrete Gaussian N_Z(0, (r X)^2)   (Z2 = 0 when X = 0)
 * The first step is the rho-zCDP discrete Gaussian (noise.c plans it and it
 * is what is charged); the second reads X only, so the release is rho-zCDP
 * by post-processing.  groupwise.c holds the exactness argument of the second
 * step and the numerical Rényi divergences of Y for a group of size x.
 */
#ifndef DP_GROUPWISE_H
#define DP_GROUPWISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "random.h"

/* r as the exact decimal fraction num/den (den a divisor of 10^9). */
typedef struct DpGroupwise
{
	double		r;
	uint64_t	num;
	uint64_t	den;
} DpGroupwise;

/* r's exact decimal form (at most 9 decimals, 0 < r <= 1); false with a message. */
extern bool dp_groupwise_prepare(DpGroupwise *g, double r, char *err, size_t errlen);

/*
 * The second step: X + Z2 with Z2 ~ N_Z(0, (r X)^2) drawn exactly (X = 0:
 * X itself).  *overflow is set when the result leaves int64.
 */
extern int64_t dp_groupwise_second(const DpGroupwise *g, int64_t X, DpRng *rng, bool *overflow);

/*
 * The Rényi divergence of order alpha > 1 of Y for a group of x rows from Y
 * for one of x2 rows, first step N_Z(0, sigma1^2) (the planned, exact
 * sigma1^2), both pmfs computed by summation in the log domain (groupwise.c).
 * NAN when the work would exceed its bound (x or sigma1 too large).
 */
extern double dp_groupwise_divergence(double sigma1_2, const DpGroupwise *g, int64_t x, int64_t x2, double alpha);

/* The largest of D_alpha(Y_x || Y_x') and D_alpha(Y_x' || Y_x) over x' = x - 1 (x >= 1) and x + 1. */
extern double dp_groupwise_divergence_worst(double sigma1_2, const DpGroupwise *g, int64_t x, double alpha);

/* The same for each of n orders at once (the pmfs computed once); false when the work is too large. */
extern bool dp_groupwise_divergences_worst(double sigma1_2, const DpGroupwise *g, int64_t x,
										   const double *alphas, int n, double *out);

/* log P(Y = y) for y in [ylo, yhi] into out[] (for tests: the exact pmf of the release). */
extern bool dp_groupwise_logpmf(double sigma1_2, const DpGroupwise *g, int64_t x, int64_t ylo, int64_t yhi,
								double *out);

/* The range of y outside which a group of x rows has probability below e^-800. */
extern void dp_groupwise_support(double sigma1_2, const DpGroupwise *g, int64_t x, int64_t *ylo, int64_t *yhi);

/* Var(Y - x) exactly: E[Var_Z(r X)] + Var_Z(sigma1) with the discrete Gaussian variances. */
extern double dp_groupwise_variance(double sigma1_2, const DpGroupwise *g, int64_t x);

#endif							/* DP_GROUPWISE_H */
