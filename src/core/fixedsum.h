/*
 * fixedsum.h — releasing an exact sum on a power-of-two lattice.
 *
 * Plain C (no PostgreSQL header).  dp_sum and dp_avg never keep a floating-
 * point running sum: every row's clamped value is an integer number of
 * *units* 2^unit_exp (1 for integer inputs; 2^(e-62) for float8 inputs
 * bounded by 2^e), and the exact sum of those integers is kept in int128.
 * Only at release is the exact sum rounded to the *release lattice*
 * 2^k = 2^(unit_exp + shift), and integer lattice noise added.
 *
 * Sensitivity.  One row changes the exact sum by at most row_bound units R.
 * Rounding to multiples of 2^d units (ties to even) moves each sum by at most
 * half a lattice step, so neighbouring releases differ by at most
 *     L = R                 when d = 0 (no rounding), and
 *     L = floor(R/2^d) + 1  when d > 0,
 * lattice units: the noise is planned for L (noise.h), on lattice 2^k.  A
 * sum that is an arbitrary real (numeric) is handled the same way with
 * L = floor(bound/2^k) + 1.
 *
 * The release lattice is chosen from the mechanism's continuous noise scale
 * s at the real sensitivity: 2^k ~ s 2^-30 (so the lattice is invisible next
 * to the noise and the rounding of L costs at most ~2^-30 of it), never
 * finer than min_exp (0 for integer outputs: an integer sum of small range
 * keeps the integer lattice and its sensitivity exactly R, as dp_count), and
 * coarse enough that L <= 2^39 (the samplers' range).
 */
#ifndef DP_FIXEDSUM_H
#define DP_FIXEDSUM_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mechanism.h"
#include "noise.h"

/* Units of a float8 value bounded by 2^e: 2^(e - DP_FIXEDSUM_FLOAT_BITS). */
#define DP_FIXEDSUM_FLOAT_BITS 62

/* The smallest e used for float8 units (keeps 2^(62 - e) a finite double). */
#define DP_FIXEDSUM_MIN_EXP (-900)

typedef struct DpFixedSum
{
	int			unit_exp;		/* exact sums count units of 2^unit_exp */
	int			shift;			/* d: released values count units of 2^(unit_exp + d) */
	bool		real;			/* the exact sum is any real (numeric) */
	uint64_t	row_bound;		/* R: one row moves the exact sum by <= R units */
	double		bound;			/* the per-row bound in output units */
	DpNoisePlan noise;			/* lattice 2^(unit_exp + shift), sensitivity L */
} DpFixedSum;

/*
 * Plan the release of an integer sum of units 2^unit_exp, one row moving it
 * by at most row_bound units (0 is planned as 1), on a release lattice no
 * finer than 2^min_exp.  False with a message on error.
 */
extern bool dp_fixedsum_plan_units(DpFixedSum *fs, const DpMechanism *mech,
								   uint64_t row_bound, int unit_exp, int min_exp,
								   char *err, size_t errlen);

/*
 * Plan the release of a real-valued exact sum, one row moving it by at most
 * bound (> 0, finite; callers pass an upper bound).  False with a message.
 */
extern bool dp_fixedsum_plan_real(DpFixedSum *fs, const DpMechanism *mech, double bound,
								  char *err, size_t errlen);

/* The exact sum (units) rounded to the release lattice (lattice units), ties to even. */
extern __int128 dp_fixedsum_round(const DpFixedSum *fs, __int128 sum);

/* Unit exponent e - 62 for float8 values of magnitude at most h (h >= 0, finite). */
extern int	dp_fixedsum_float_unit(double h);

/*
 * A float8 value v with |v| <= h in units 2^unit, rounded to nearest (even),
 * given scale_to_units = 2^-unit: the product is exact (a power of two) and
 * rounding is monotone, so |result| <= dp_fixedsum_float_bound(h, unit).
 */
static inline int64_t
dp_fixedsum_float_to_units(double v, double scale_to_units)
{
	return (int64_t) rint(v * scale_to_units);
}

/* The largest magnitude, in units 2^unit, of a float8 value bounded by h. */
extern uint64_t dp_fixedsum_float_bound(double h, int unit);

#endif							/* DP_FIXEDSUM_H */
