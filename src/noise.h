/*
 * noise.h — from a mechanism and a sensitivity to the noise actually sampled.
 *
 * Plain C (no PostgreSQL header).  A DpNoisePlan is built once per call site
 * and query (never per row or group): it holds the prepared exact sampler in
 * lattice units, the noise parameters reported to users, and the privacy cost
 * that the noise actually sampled guarantees.
 *
 * Units: sensitivities are given in lattice units (integers for integer
 * outputs, multiples of 2^lattice_exp for floating-point outputs).  The
 * sampler works in the same units; reported scale/sigma/m/variance are in
 * output units (lattice units times 2^lattice_exp).
 */
#ifndef DP_NOISE_H
#define DP_NOISE_H

#include <stdbool.h>
#include <stddef.h>

#include "mechanism.h"
#include "sample.h"

typedef struct DpNoisePlan
{
	DpMechanism mech;			/* the privacy form it was planned from */
	double		l1;				/* L1 sensitivity, lattice units */
	double		l2;				/* L2 sensitivity, lattice units */
	int			lattice_exp;	/* granularity 2^lattice_exp of the output */
	DpSampler	sampler;		/* exact integer sampler, lattice units */
	/* the noise, in output units */
	double		scale;			/* Laplace b (0 for other families) */
	double		sigma;			/* Gaussian / OSGT sigma (0 for Laplace) */
	double		m;				/* OSGT offset (0 otherwise) */
	double		variance;		/* variance of the sampled noise */
	/* what the sampled noise guarantees */
	double		epsilon;
	double		delta;
	double		rho;			/* zCDP rho; +Inf when there is none */
} DpNoisePlan;

/* Plan noise for mech at the given sensitivities; false with message on error. */
extern bool dp_noise_plan(DpNoisePlan *plan, const DpMechanism *mech,
						  double l1, double l2, int lattice_exp,
						  char *err, size_t errlen);

#endif							/* DP_NOISE_H */
