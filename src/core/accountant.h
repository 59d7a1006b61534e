/*
 * accountant.h — composition of privacy costs and the budget filter.
 *
 * Plain C (no PostgreSQL header).  See accountant.c for the theorem the
 * filter implements.
 */
#ifndef DP_ACCOUNTANT_H
#define DP_ACCOUNTANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calibrate.h"

/*
 * The cost of one release, or the composed cost of many: its
 * (epsilon, delta) for basic composition (epsilon = +Inf when the mechanism
 * states none, e.g. gaussian(rho=..)), its zCDP rho, and its Rényi
 * divergences on the fixed grid DP_RDP_ALPHAS (+Inf where unbounded).
 *
 * A release without a Rényi curve (private key selection: an
 * (epsilon, delta) guarantee only) is composed through its (epsilon, delta):
 * outside an event of probability at most delta its privacy loss is at most
 * epsilon (accountant.c), so it adds epsilon to every order of rdp and its
 * delta to rdp_delta.  rdp is then a bound that holds outside events of
 * total probability rdp_delta (0: an exact curve).  rdp_mark is kept by
 * totals (dp_cost_append): the delta of every charge up to and including
 * the last one with rdp_delta > 0; the Rényi certificates need it within
 * basic composition's share of the delta limit.
 */
typedef struct DpCost
{
	double		epsilon;
	double		delta;
	double		rho;
	double		rdp[DP_RDP_NALPHAS];
	double		rdp_delta;
	double		rdp_mark;
} DpCost;

/* A role's limits; NaN means "not limited". */
typedef struct DpLimits
{
	double		epsilon;
	double		delta;
	double		rho;
} DpLimits;

/* Why a charge was refused (which limit it would break). */
typedef enum DpRefusal
{
	DP_ADMIT = 0,
	DP_REFUSE_EPSILON,
	DP_REFUSE_DELTA,
	DP_REFUSE_RHO,
	/* the per-query caps (dp_admits_query): this charge alone is too large */
	DP_REFUSE_QUERY_EPSILON,
	DP_REFUSE_QUERY_DELTA,
	DP_REFUSE_QUERY_RHO
} DpRefusal;

/* Share of delta_limit given to basic composition; the rest to the Rényi grid. */
#define DP_BASIC_DELTA_SHARE 0.5

/* The zero cost. */
extern void dp_cost_zero(DpCost *c);

/*
 * acc += c, every sum rounded up: the composition of the releases of one
 * query, whose costs are all fixed before any of them runs (so they may be
 * taken in any order: those without a Rényi curve first, rdp_mark =
 * rdp_delta).  A release without a Rényi curve enters rdp with its epsilon
 * (or its rho, rho alpha, when it states one) at every order.
 */
extern void dp_cost_add(DpCost *acc, const DpCost *c);

/*
 * total += charge, every sum rounded up: a charge after the earlier ones, in
 * the order the filter admitted them (a budget's spending).  As
 * dp_cost_add, and rdp_mark moves to total->delta + charge->rdp_delta when
 * the charge has a part without a Rényi curve.
 */
extern void dp_cost_append(DpCost *total, const DpCost *charge);

/* c *= k (k >= 1 releases of the same cost), rounded up. */
extern void dp_cost_scale(DpCost *c, double k);

/*
 * Epsilon spent at delta_limit by the filter's certificates (the smallest
 * epsilon the filter can certify for this total); +Inf if none applies.
 * delta_limit NaN: basic composition only (delta not limited).
 */
extern double dp_spent_epsilon(const DpCost *total, double delta_limit, int *method);

/* Would total + charge stay within lim?  DP_ADMIT or the limit it breaks. */
extern DpRefusal dp_admits(const DpCost *total, const DpCost *charge, const DpLimits *lim);

/*
 * Does one charge fit a role's per-query caps (a DpLimits: NaN = no cap)?
 * The epsilon of a query is what the filter certifies for it alone at the
 * role's delta limit (dp_spent_epsilon); a delta cap of 0 admits only
 * charges without delta.  DP_ADMIT or the DP_REFUSE_QUERY_* it breaks, with
 * the charge's value and the cap.
 */
extern DpRefusal dp_admits_query(const DpCost *charge, const DpLimits *caps, double delta_limit,
								 double *value, double *cap);

/*
 * Does adding charge to total make the spending pass frac (e.g. 0.9) of one
 * of lim's limits, i.e. below frac * limit before and at or above after?
 * Returns the first such limit (DP_REFUSE_EPSILON, _DELTA, _RHO) with the
 * spending after the charge and the limit, or DP_ADMIT if none.
 */
extern DpRefusal dp_passes_fraction(const DpCost *total, const DpCost *charge, const DpLimits *lim,
									double frac, double *spent_after, double *limit);

/* Name of a certificate method returned by dp_spent_epsilon. */
extern const char *dp_spent_method_name(int method);

/*
 * Can c be recorded as one charge?  Exactly the costs the ledger's row
 * accepts (the CHECK constraints of dp_pg.ledger_entries, +Inf stored as
 * NULL), minus the two the accountant could not add back faithfully: NaN
 * and an infinite delta.  If not, writes the reason (a lower-case clause,
 * "its delta would be 1.1, and a charge needs delta < 1") into why.
 */
extern bool dp_cost_valid_charge(const DpCost *c, char *why, size_t len);

#endif							/* DP_ACCOUNTANT_H */
