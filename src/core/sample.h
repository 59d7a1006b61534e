/*
 * sample.h — exact samplers of integer (lattice) noise for dp_pg.
 *
 * Part of the numeric core: plain C, no PostgreSQL header.
 *
 * Every sampler draws an integer K from an exactly specified pmf using only
 * integer arithmetic on uniform random integers (DpRng); no floating-point
 * value ever enters an accept/reject decision.  Parameters are positive
 * rationals num/den.  A caller whose parameter is a double rounds it with
 * dp_rational_up(), which never returns less than the double, so the noise
 * actually sampled is never smaller than the noise that was calibrated.
 *
 * Families (pmf up to normalisation, k in Z):
 *   discrete Laplace   exp(-|k|/t)
 *   discrete Gaussian  exp(-k^2/(2 sigma^2))
 *   discrete OSGT      exp(-k^2/(2 sigma^2) - m|k|/sigma^2)
 *
 * Each rejection loop has a fixed iteration bound; reaching it calls
 * dp_core_fail(DP_ERR_ITERATIONS, ...), which never returns (no bias).
 * Every bound is reached with probability below 2^-100 (sample.c lists
 * them).
 *
 * Supported range (the prepare functions call dp_core_fail(DP_ERR_RANGE)
 * outside it): any num and den that fit in uint64 with den >= 1; Laplace
 * t > 0 with 72 t <= 2^62 (so |noise| < 2^62); sigma^2 > 0 (hence
 * sigma < 2^32); m >= 0, written {0, 1} when m = 0 (dp_rational_up(0)
 * is a range error).  All arithmetic is exact within this range.
 *
 * Floating-point outputs use a power-of-two lattice (granularity 2^k): the
 * exact value is rounded to the lattice and integer lattice noise is added,
 * so the set of possible outputs does not depend on the input (no
 * floating-point attack).
 */
#ifndef DP_SAMPLE_H
#define DP_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

#include "random.h"

/* A positive rational num/den (den >= 1). */
typedef struct DpRational
{
	uint64_t	num;
	uint64_t	den;
} DpRational;

/* Smallest num/2^k >= x with num < 2^62, for finite x > 0 (k chosen here). */
extern DpRational dp_rational_up(double x);

/* The rational as a double (for reporting only). */
extern double dp_rational_to_double(DpRational r);

typedef enum DpNoiseKind
{
	DP_NOISE_LAPLACE = 1,
	DP_NOISE_GAUSSIAN,
	DP_NOISE_OSGT
} DpNoiseKind;

/*
 * A prepared sampler: parameters validated and precomputed once per query;
 * drawing touches nothing but the RNG.  The fields after kind are private to
 * sample.c.
 */
typedef struct DpSampler
{
	DpNoiseKind kind;
	DpRational	t;				/* Laplace scale (or proposal scale) */
	DpRational	sigma2;			/* Gaussian / OSGT sigma^2 */
	DpRational	m;				/* OSGT offset */
	uint64_t	aux[8];			/* sampler-private precomputations */
} DpSampler;

/* Prepare discrete Laplace noise with scale t. */
extern void dp_sampler_laplace(DpSampler *s, DpRational t);

/* Prepare discrete Gaussian noise with variance parameter sigma2. */
extern void dp_sampler_gaussian(DpSampler *s, DpRational sigma2);

/* Prepare discrete OSGT noise with parameters sigma2 and m (m may be 0). */
extern void dp_sampler_osgt(DpSampler *s, DpRational sigma2, DpRational m);

#ifdef DP_PG_TEST_SWITCHES
/* Testing only (dp_pg.debug_noiseless): every draw returns 0 while set. */
extern bool dp_sampler_debug_zero;
#endif

/* Draw one integer noise value. */
extern int64_t dp_sampler_draw(const DpSampler *s, DpRng *rng);

/* OSGT method chosen by dp_sampler_osgt ('A' or 'B', see sample.c); 0 otherwise. */
extern char dp_sampler_osgt_method(const DpSampler *s);

/* Testing aid: use the multi-limb arithmetic even where 128 bits suffice (same draws). */
extern void dp_sampler_use_generic_arithmetic(DpSampler *s);

/* Bernoulli(exp(-num/den)) exactly (Canonne-Kamath-Steinke 2020). */
extern int	dp_bernoulli_exp(DpRng *rng, unsigned __int128 num, unsigned __int128 den);

/*
 * Power-of-two lattice for floating-point outputs.
 */

/* Smallest k with 2^k >= x, for finite x > 0. */
extern int	dp_lattice_exponent(double x);

/* Round x to the nearest multiple of 2^k (ties to even) as an exact integer; false if it does not fit. */
extern bool dp_lattice_round(double x, int k, int64_t *multiple);

/* multiple * 2^k as a double; false if |multiple| >= 2^53 (not exact). */
extern bool dp_lattice_to_double(int64_t multiple, int k, double *out);

#endif							/* DP_SAMPLE_H */
