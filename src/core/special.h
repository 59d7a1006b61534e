/*
 * special.h — what special.c offers the other files of dp_pg's calibration
 * module (continuous.c, renyi.c, gausssum.c, discrete.c): the module's
 * constants, the Mills ratio's continued fraction and differences of M and
 * Q without cancellation, and root finding of decreasing functions.
 *
 * Internal to the calibration module: the rest of dp_pg includes
 * calibrate.h, which declares the public special functions (dp_norm_q,
 * dp_norm_log_q, dp_norm_log_q_inv, dp_mills).  Plain C, no PostgreSQL
 * header.
 */
#ifndef DP_SPECIAL_H
#define DP_SPECIAL_H

#include <float.h>
#include <math.h>
#include <stdbool.h>

#define DP_SQRT2PI		2.5066282746310002	/* sqrt(2 pi) */
#define DP_LN_SQRT2PI	0.91893853320467274	/* ln sqrt(2 pi) */
#define DP_SQRT1_2		0.70710678118654752	/* 1/sqrt(2) */
#define DP_MILLS0		1.2533141373155003	/* M(0) = sqrt(pi/2) */
#define DP_LN2			0.69314718055994531
#define DP_PI			3.1415926535897932
#define DP_ULP			DBL_EPSILON

/* True if x is a finite number. */
static inline bool
dp_finite_num(double x)
{
	return isfinite(x);
}

/* k/(x + (k+1)/(x + (k+2)/(x + ...))): tail of Laplace's continued fraction, x >= 5. */
extern double dp_mills_cf_tail(double x, int k);

/* M(x) - M(x + h) for h >= 0, integrating -M' where the difference cancels. */
extern double dp_mills_diff(double x, double h);

/* (Q(u) - Q(u + w))/phi(u) for u >= 0, w >= 0 (w may be +inf), without cancellation. */
extern double dp_qdiff_scaled(double u, double w);

/* ln(Q(u) - Q(u + w)) for w >= 0. */
extern double dp_log_qdiff(double u, double w);

/* (Q(u) - Q(u + w)) / (2 Q(r)) for w >= 0, r >= 0, without cancellation or underflow. */
extern double dp_qdiff_over_2q(double u, double w, double r);

/* A function whose root is sought; arg is the caller's data. */
typedef double (*DpRootFn) (double x, const void *arg);

/*
 * Root of a decreasing function by regula falsi (Illinois) with bisection
 * safeguards.  Requires fn(lo) = flo > 0 >= fhi = fn(hi); returns the end
 * of the final bracket where fn <= 0, at most xtol from the root.
 */
extern double dp_root_decreasing(DpRootFn fn, const void *arg, double lo, double flo,
								 double hi, double fhi, double xtol);

/*
 * Bracket and solve fn(t) = 0 for a decreasing fn, starting at t0 with the
 * initial step; returns the feasible end (fn <= 0) of the final bracket.
 */
extern double dp_solve_decreasing(DpRootFn fn, const void *arg, double t0, double step,
								  double xtol, double tmin, double tmax);

#endif							/* DP_SPECIAL_H */
