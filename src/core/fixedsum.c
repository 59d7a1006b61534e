/*
 * fixedsum.c — releasing an exact sum on a power-of-two lattice (fixedsum.h).
 *
 * Plain C.  The sensitivity argument is in fixedsum.h; the noise itself is
 * planned by noise.c, so everything charged is computed for the noise
 * actually sampled at the lattice sensitivity L.
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include "fixedsum.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calibrate.h"
#include "sample.h"

/* Largest L handed to the noise planner (below its 2^40 limit). */
#define DP_FIXEDSUM_MAX_L (UINT64_C(1) << 39)

/* Release lattice about 2^-30 of the noise scale. */
#define DP_FIXEDSUM_LATTICE_BITS 30

/* Number of significant bits of x (0 for 0). */
static int
bit_length(uint64_t x)
{
	return x == 0 ? 0 : 64 - __builtin_clzll(x);
}

/* Check the mechanism and return the lattice exponent ~2^-30 of its noise at sensitivity s. */
static bool
lattice_for_noise(const DpMechanism *mech, double sensitivity, int *k,
				  char *err, size_t errlen)
{
	double		s;

	if (!dp_mechanism_validate_privacy(mech, err, errlen))
		return false;
	if (!(sensitivity > 0.0) || !isfinite(sensitivity))
	{
		snprintf(err, errlen, "sensitivity must be finite and positive, got %g", sensitivity);
		return false;
	}
	/*
	 * Every family's scale is proportional to the sensitivity; scaling the
	 * scale at sensitivity 1 keeps huge bounds (up to 1e300) clear of
	 * overflow inside the calibrations.  The lattice only has to be about
	 * right: the noise itself is calibrated exactly at the lattice
	 * sensitivity (dp_noise_plan).
	 */
	s = sensitivity * dp_noise_continuous_scale(mech, 1.0);
	if (!(s > 0.0) || !isfinite(s) || s > 1e306)
	{
		snprintf(err, errlen, "could not calibrate noise for this mechanism at sensitivity %g", sensitivity);
		return false;
	}
	*k = dp_lattice_exponent(s) - DP_FIXEDSUM_LATTICE_BITS;
	return true;
}

/* Plan the release of an integer sum of units 2^unit_exp (see fixedsum.h). */
bool
dp_fixedsum_plan_units(DpFixedSum *fs, const DpMechanism *mech,
					   uint64_t row_bound, int unit_exp, int min_exp,
					   char *err, size_t errlen)
{
	int			k;
	int			d;
	uint64_t	L;

	memset(fs, 0, sizeof(*fs));
	if (row_bound == 0)
		row_bound = 1;
	fs->unit_exp = unit_exp;
	fs->row_bound = row_bound;
	fs->bound = ldexp((double) row_bound, unit_exp);
	if (!lattice_for_noise(mech, fs->bound, &k, err, errlen))
		return false;
	if (k < min_exp)
		k = min_exp;
	if (k < unit_exp)
		k = unit_exp;
	/* coarse enough that L <= 2^39 */
	if (bit_length(row_bound) > 38 && k < unit_exp + bit_length(row_bound) - 38)
		k = unit_exp + bit_length(row_bound) - 38;
	d = k - unit_exp;
	if (d > 120)
	{
		snprintf(err, errlen, "the noise of this mechanism is too large for the bounds of the sum");
		return false;
	}
	L = d == 0 ? row_bound : (row_bound >> d) + 1;
	if (L > DP_FIXEDSUM_MAX_L)
	{
		snprintf(err, errlen, "internal error: lattice sensitivity %llu too large", (unsigned long long) L);
		return false;
	}
	fs->shift = d;
	return dp_noise_plan(&fs->noise, mech, (long long) L, (long long) L, k, err, errlen);
}

/* Plan the release of a real-valued exact sum (see fixedsum.h). */
bool
dp_fixedsum_plan_real(DpFixedSum *fs, const DpMechanism *mech, double bound,
					  char *err, size_t errlen)
{
	int			k;
	double		units;
	uint64_t	L;

	memset(fs, 0, sizeof(*fs));
	fs->real = true;
	fs->bound = bound;
	if (!lattice_for_noise(mech, bound, &k, err, errlen))
		return false;
	units = floor(ldexp(bound, -k));
	while (units >= (double) (DP_FIXEDSUM_MAX_L - 1))
	{
		k++;
		units = floor(ldexp(bound, -k));
	}
	L = (uint64_t) units + 1;
	fs->unit_exp = k;
	fs->shift = 0;
	fs->row_bound = L;
	return dp_noise_plan(&fs->noise, mech, (long long) L, (long long) L, k, err, errlen);
}

/* The exact sum (units) rounded to the release lattice (lattice units), ties to even. */
__int128
dp_fixedsum_round(const DpFixedSum *fs, __int128 sum)
{
	int			d = fs->shift;
	__int128	q;
	__int128	rem;
	__int128	half;

	if (d == 0)
		return sum;
	q = sum >> d;				/* floor: arithmetic shift */
	rem = sum - q * ((__int128) 1 << d);	/* in [0, 2^d); a product: a left shift of a negative q is undefined */
	half = (__int128) 1 << (d - 1);
	if (rem > half || (rem == half && (q & 1) != 0))
		q++;
	return q;
}

/* Unit exponent e - 62 for float8 values of magnitude at most h. */
int
dp_fixedsum_float_unit(double h)
{
	int			e;

	if (!(h > 0.0))
		return -DP_FIXEDSUM_FLOAT_BITS;
	e = dp_lattice_exponent(h);
	if (e < DP_FIXEDSUM_MIN_EXP)
		e = DP_FIXEDSUM_MIN_EXP;
	return e - DP_FIXEDSUM_FLOAT_BITS;
}

/* The largest magnitude, in units 2^unit, of a float8 value bounded by h. */
uint64_t
dp_fixedsum_float_bound(double h, int unit)
{
	double		r = ceil(ldexp(h, -unit));

	/* h <= 2^e and unit = e - 62, so r <= 2^62 */
	return r < 1.0 ? 0 : (uint64_t) r;
}
