/*
 * continuous.h — what continuous.c offers the other files of dp_pg's
 * calibration module (renyi.c, discrete.c): the checks of OSGT parameters
 * and of calibration targets, and the OSGT variance in units of sigma^2.
 *
 * Internal to the calibration module: the rest of dp_pg includes
 * calibrate.h.  Plain C, no PostgreSQL header.
 */
#ifndef DP_CONTINUOUS_H
#define DP_CONTINUOUS_H

#include <stdbool.h>

/* True if (Delta, m, sigma) are valid OSGT parameters. */
extern bool dp_osgt_params_ok(double Delta, double m, double sigma);

/* True if (Delta, eps, delta) is a valid calibration target. */
extern bool dp_target_ok(double Delta, double eps, double delta);

/* 1 + r^2 - r M(r)^{-1}: the OSGT variance in units of sigma^2. */
extern double dp_osgt_var_bracket(double r);

#endif							/* DP_CONTINUOUS_H */
