/*
 * renyi.h — what renyi.c offers the other files of dp_pg's calibration
 * module (discrete.c): the rigorous bracket of rho = sup_{alpha>1}
 * D_alpha/alpha from upper bounds on D_alpha and on its tail.
 *
 * Internal to the calibration module: the rest of dp_pg includes
 * calibrate.h.  Plain C, no PostgreSQL header.
 */
#ifndef DP_RENYI_H
#define DP_RENYI_H

/* Upper bound on D_{1+eta} of a noise; arg is the caller's data. */
typedef double (*DpRdpUpFn) (double eta, const void *arg);

/* Upper bound on sup_{alpha >= A} D_alpha/alpha of a noise (INFINITY if none). */
typedef double (*DpRdpTailFn) (double A, const void *arg);

/*
 * Smallest rho with D_alpha <= rho alpha for all alpha > 1, bracketed from
 * above (never below the true rho) from fn on a grid starting at eta0 and
 * tail beyond it.
 */
extern double dp_rho_bracket(DpRdpUpFn fn, DpRdpTailFn tail, const void *arg, double eta0);

#endif							/* DP_RENYI_H */
