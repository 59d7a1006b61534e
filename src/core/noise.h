/*
 * noise.h — from a mechanism and a sensitivity to the noise actually sampled.
 *
 * Plain C (no PostgreSQL header).  A DpNoisePlan is built once per call site
 * and query (never per row or group): it holds the prepared exact sampler in
 * lattice units, the noise parameters reported to users, and the privacy
 * guarantees of the noise actually sampled, which is what gets charged.
 *
 * Units: dp_noise_plan takes integer sensitivities in lattice units (1 for
 * counts); dp_noise_plan_real takes a real sensitivity in output units and
 * chooses a power-of-two lattice fine enough that rounding the sensitivity up
 * to whole lattice units costs at most ~2^-29 of the noise scale.  Reported
 * scale/sigma/m/variance are in output units.
 */
#ifndef DP_NOISE_H
#define DP_NOISE_H

#include <stdbool.h>
#include <stddef.h>

#include "accountant.h"
#include "calibrate.h"
#include "groupwise.h"
#include "mechanism.h"
#include "sample.h"

typedef struct DpNoisePlan
{
	DpMechanism mech;			/* the privacy form it was planned from */
	long long	l1;				/* L1 sensitivity, lattice units */
	long long	l2;				/* L2 sensitivity, lattice units */
	int			lattice_exp;	/* granularity 2^lattice_exp of the output */
	DpSampler	sampler;		/* exact integer sampler, lattice units */
	/* the sampled noise in lattice units (exact doubles of the rationals) */
	double		t;				/* Laplace scale */
	double		sigma2;			/* Gaussian / OSGT sigma^2 */
	double		m_lattice;		/* OSGT offset */
	/* the noise, in output units */
	double		scale;			/* Laplace b (0 for other families) */
	double		sigma;			/* Gaussian / OSGT sigma (0 for Laplace) */
	double		m;				/* OSGT offset (0 otherwise) */
	double		variance;		/* variance of the sampled noise */
	/* what the sampled noise guarantees (rounded so as never to favour the analyst) */
	double		epsilon;		/* +Inf for rho forms: no (epsilon, delta) claim */
	double		delta;
	double		rho;			/* zCDP rho */
	double		rdp[DP_RDP_NALPHAS];	/* D_alpha on DP_RDP_ALPHAS */
	/* groupwise(rho, r): the sampler is the first step (gaussian(rho)); r for the second */
	bool		groupwise;
	DpGroupwise gw;
} DpNoisePlan;

/* Plan noise for mech at integer lattice sensitivities; false with message on error. */
extern bool dp_noise_plan(DpNoisePlan *plan, const DpMechanism *mech,
						  long long l1, long long l2, int lattice_exp,
						  char *err, size_t errlen);

/* Plan noise for mech at a real sensitivity (output units), lattice chosen here. */
extern bool dp_noise_plan_real(DpNoisePlan *plan, const DpMechanism *mech,
							   double sensitivity, char *err, size_t errlen);

/*
 * Release one integer value (lattice units) with the planned noise: x plus
 * one draw, or for groupwise(rho, r) Algorithm 1's two steps (groupwise.c).
 * *overflow is set when the result leaves int64.
 */
extern int64_t dp_noise_release(const DpNoisePlan *plan, int64_t x, DpRng *rng, bool *overflow);

/*
 * The closed interval of a groupwise release y that holds the true count with
 * probability >= level (NAN ends when r is too large for one), and about how
 * far y is from it (the second step's sd at y, with the first's).
 */
extern void dp_noise_groupwise_bar(const DpNoisePlan *plan, double y, double level,
								   double *sd, double *lower, double *upper);

/* The privacy cost of one release of the planned noise. */
extern void dp_noise_plan_cost(const DpNoisePlan *plan, DpCost *cost);

/* Continuous noise scale (Laplace b or Gaussian/OSGT sigma) of a privacy form at a real sensitivity. */
extern double dp_noise_continuous_scale(const DpMechanism *mech, double sensitivity);

/* Exact delta(eps) of the planned (discrete) noise at its sensitivity. */
extern double dp_noise_plan_delta(const DpNoisePlan *plan, double eps);

/* Smallest epsilon (rounded up) with delta(epsilon) <= delta for the planned noise. */
extern double dp_noise_plan_epsilon(const DpNoisePlan *plan, double delta);

/* Exact (or upper-bounded) D_alpha of the planned noise at its sensitivity. */
extern double dp_noise_plan_rdp(const DpNoisePlan *plan, double alpha);

/* Half-width h (output units) with P(|noise| <= h) >= level, 0 < level < 1. */
extern double dp_noise_plan_halfwidth(const DpNoisePlan *plan, double level);

/*
 * The same three questions for a noise-parameter form (continuous family at
 * real sensitivity, as in test/reference).
 */
extern double dp_noise_form_delta(const DpMechanism *mech, double sensitivity, double eps);
extern double dp_noise_form_epsilon(const DpMechanism *mech, double sensitivity, double delta);
extern double dp_noise_form_rdp(const DpMechanism *mech, double sensitivity, double alpha);
extern double dp_noise_form_variance(const DpMechanism *mech);
extern double dp_noise_form_halfwidth(const DpMechanism *mech, double level);

#endif							/* DP_NOISE_H */
