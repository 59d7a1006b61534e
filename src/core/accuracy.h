/*
 * accuracy.h — accuracy first: the cheapest mechanism of a family whose
 * error bar meets a stated half-width at a stated level.
 *
 * Plain C (no PostgreSQL header).  accuracy(halfwidth=H, level=L) names the
 * accuracy instead of the budget (mechanism.h); the release path chooses the
 * family from the role's accounting and asks here for the smallest privacy
 * parameter of that family whose planned half-width at L is at most H.
 */
#ifndef DP_ACCURACY_H
#define DP_ACCURACY_H

#include <stdbool.h>
#include <stddef.h>

#include "mechanism.h"

/* The half-width at the asked level of a release planned with mech; NAN if it cannot be planned. */
typedef double (*DpHalfwidthFn) (const DpMechanism *mech, void *arg);

/*
 * The cheapest mechanism of family / form (laplace(epsilon), gaussian(rho),
 * gaussian or osgt (epsilon, delta) at the given delta) whose half-width,
 * as fn reports it, is at most halfwidth: its epsilon (rho) the smallest
 * within a relative 1e-12, then rounded up to 12 significant digits and
 * checked again.  False with a message when none within dp_pg's limits
 * (epsilon <= 100, rho <= 10^4) meets it.
 */
extern bool dp_accuracy_resolve(int family, int form, double delta, double halfwidth, DpHalfwidthFn fn,
								void *arg, DpMechanism *out, char *err, size_t errlen);

#endif							/* DP_ACCURACY_H */
