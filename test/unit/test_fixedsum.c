/*
 * test_fixedsum.c — exact sums on a power-of-two lattice (src/core/fixedsum.c):
 * rounding, the lattice sensitivity L that the noise is planned for, and
 * the per-row float8 units of dp_sum / dp_avg.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fixedsum.h"
#include "tap.h"

#define Min(a, b) ((a) < (b) ? (a) : (b))

/* xorshift64 (test-only determinism). */
static uint64_t
next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Uniform double in [0, 1). */
static double
unit_rand(uint64_t *s)
{
	return (next_rand(s) >> 11) * 0x1.0p-53;
}

/* Reference: round(sum / 2^d) to nearest, ties to even, by exact long division. */
static __int128
ref_round(__int128 sum, int d)
{
	__int128	den = (__int128) 1 << d;
	__int128	q = sum / den;
	__int128	r = sum % den;

	/* make r in [0, den) (floor division) */
	if (r < 0)
	{
		r += den;
		q -= 1;
	}
	if (2 * r > den || (2 * r == den && (q & 1)))
		q += 1;
	return q;
}

/* A fixed-sum plan with only the rounding fields set. */
static DpFixedSum
shift_plan(int d)
{
	DpFixedSum	fs;

	memset(&fs, 0, sizeof(fs));
	fs.shift = d;
	return fs;
}

/* dp_fixedsum_round is round-half-even division by 2^d, also for negatives. */
static void
test_round(void)
{
	uint64_t	s = 0x9e3779b97f4a7c15ULL;
	int			bad = 0;
	DpFixedSum	fs1 = shift_plan(1);
	DpFixedSum	fs3 = shift_plan(3);

	/* ties: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0, -1.5 -> -2 */
	tap_ok(dp_fixedsum_round(&fs1, 1) == 0 && dp_fixedsum_round(&fs1, 3) == 2 &&
		   dp_fixedsum_round(&fs1, 5) == 2 && dp_fixedsum_round(&fs1, -1) == 0 &&
		   dp_fixedsum_round(&fs1, -3) == -2, "ties round to even");
	tap_ok(dp_fixedsum_round(&fs3, 11) == 1 && dp_fixedsum_round(&fs3, 13) == 2 &&
		   dp_fixedsum_round(&fs3, -13) == -2 && dp_fixedsum_round(&fs3, -11) == -1,
		   "rounds to nearest (d = 3)");
	for (int i = 0; i < 200000; i++)
	{
		int			d = 1 + (int) (next_rand(&s) % 100);
		__int128	sum = (__int128) (int64_t) next_rand(&s) * ((__int128) 1 << (next_rand(&s) % 60)) +
			(int64_t) next_rand(&s);
		DpFixedSum	fs = shift_plan(d);

		if (dp_fixedsum_round(&fs, sum) != ref_round(sum, d))
			bad++;
	}
	tap_ok(bad == 0, "matches exact division on 200000 random sums (%d mismatches)", bad);
	{
		DpFixedSum	fs0 = shift_plan(0);

		tap_ok(dp_fixedsum_round(&fs0, -12345) == -12345, "shift 0 keeps the sum");
	}
}

/* A random privacy-form mechanism. */
static DpMechanism
random_mech(uint64_t *s)
{
	DpMechanism m;
	double		eps = exp(log(1e-3) + unit_rand(s) * (log(100.0) - log(1e-3)));

	memset(&m, 0, sizeof(m));
	switch (next_rand(s) % 4)
	{
		case 0:
			m.family = DP_MECH_LAPLACE;
			m.form = DP_FORM_EPSILON;
			m.p[0] = eps;
			break;
		case 1:
			m.family = DP_MECH_GAUSSIAN;
			m.form = DP_FORM_EPSILON_DELTA;
			m.p[0] = eps;
			m.p[1] = exp(log(1e-12) + unit_rand(s) * (log(1e-3) - log(1e-12)));
			break;
		case 2:
			m.family = DP_MECH_GAUSSIAN;
			m.form = DP_FORM_RHO;
			m.p[0] = exp(log(1e-4) + unit_rand(s) * (log(1e3) - log(1e-4)));
			break;
		default:
			m.family = DP_MECH_OSGT;
			m.form = DP_FORM_EPSILON_DELTA;
			m.p[0] = Min(eps, 10.0);
			m.p[1] = exp(log(1e-12) + unit_rand(s) * (log(1e-3) - log(1e-12)));
			break;
	}
	return m;
}

/*
 * The sensitivity argument: for exact sums T, T' with |T - T'| <= R, the
 * rounded values differ by at most the L the noise was planned for.
 */
static void
test_plan_units(void)
{
	uint64_t	s = 0x2545f4914f6cdd1dULL;
	int			bad_l = 0;
	int			bad_range = 0;
	int			plans = 0;
	int			failed_plans = 0;
	char		err[256];

	/* small integer sums keep the integer lattice and L = R, as dp_count */
	{
		DpMechanism lap = {DP_MECH_LAPLACE, DP_FORM_EPSILON, {1.0, 0.0}};
		DpFixedSum	fs;
		bool		ok;

		tap_ok(dp_fixedsum_plan_units(&fs, &lap, 100, 0, 0, err, sizeof(err)) &&
			   fs.shift == 0 && fs.noise.l1 == 100 && fs.noise.lattice_exp == 0 &&
			   fabs(fs.noise.scale - 100.0) < 1e-9,
			   "laplace(epsilon=1), bound 100: integer lattice, L = 100, b = 100");
		tap_ok(dp_fixedsum_plan_units(&fs, &lap, 0, 0, 0, err, sizeof(err)) && fs.noise.l1 == 1,
			   "a zero bound is planned as 1 unit");
		/* int8 range: coarser lattice, L ~ 2^30 */
		memset(&fs, 0, sizeof(fs));
		ok = dp_fixedsum_plan_units(&fs, &lap, UINT64_C(1) << 63, 0, 0, err, sizeof(err));
		tap_ok(ok && fs.shift > 0 && fs.noise.l1 == (long long) ((UINT64_C(1) << 63) >> fs.shift) + 1 &&
			   fs.noise.l1 <= (1LL << 39),
			   "bound 2^63: shift %d, L = floor(R / 2^d) + 1 = %lld", fs.shift, fs.noise.l1);
	}

	for (int i = 0; i < 300; i++)
	{
		DpMechanism m = random_mech(&s);
		int			bits = 1 + (int) (next_rand(&s) % 63);
		uint64_t	R = next_rand(&s) >> (64 - bits);
		int			unit = (int) (next_rand(&s) % 200) - 120;
		DpFixedSum	fs;

		if (!dp_fixedsum_plan_units(&fs, &m, R, unit, INT32_MIN, err, sizeof(err)))
		{
			failed_plans++;
			continue;
		}
		plans++;
		if (fs.noise.l1 != fs.noise.l2 || fs.noise.l1 < 1 || fs.noise.l1 > (1LL << 39) ||
			fs.noise.lattice_exp != fs.unit_exp + fs.shift)
			bad_range++;
		/* the lattice is fine next to the noise (unless the units are coarser) */
		{
			double		scale = m.family == DP_MECH_LAPLACE ? fs.noise.scale : fs.noise.sigma;

			if (fs.shift > 0 && fs.noise.l1 < (1LL << 38) &&
				!(ldexp(1.0, fs.noise.lattice_exp) <= scale * 0x1.0p-28))
				bad_range++;
		}
		for (int j = 0; j < 200; j++)
		{
			__int128	t = ((__int128) (int64_t) next_rand(&s)) * (int64_t) (next_rand(&s) % 1000);
			uint64_t	dlt = R == 0 ? 0 : next_rand(&s) % (R + 1);
			__int128	t2 = (next_rand(&s) & 1) ? t + (__int128) dlt : t - (__int128) dlt;
			__int128	diff;

			if (j == 0)
				t2 = t + (__int128) R;	/* the extreme neighbour */
			diff = dp_fixedsum_round(&fs, t2) - dp_fixedsum_round(&fs, t);
			if (diff > fs.noise.l1 || -diff > fs.noise.l1)
				bad_l++;
		}
	}
	tap_ok(bad_range == 0, "%d random plans: L in [1, 2^39], l1 = l2, lattice ~2^-30 of the noise (%d bad)",
		   plans, bad_range);
	tap_ok(bad_l == 0, "neighbouring exact sums round at most L lattice units apart (%d violations)", bad_l);
	tap_diag("%d random mechanism/bound combinations were refused (noise out of the samplers' range)",
			 failed_plans);
}

/* Real-valued (numeric) sums: L = floor(bound / 2^k) + 1. */
static void
test_plan_real(void)
{
	DpMechanism gau = {DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA, {1.0, 1e-6}};
	DpFixedSum	fs;
	char		err[256];
	uint64_t	s = 77;
	int			bad = 0;
	bool		ok;

	memset(&fs, 0, sizeof(fs));
	ok = dp_fixedsum_plan_real(&fs, &gau, 2.25, err, sizeof(err));
	tap_ok(ok && fs.real && fs.noise.l1 == (long long) floor(ldexp(2.25, -fs.unit_exp)) + 1,
		   "numeric bound 2.25: L = floor(2.25 / 2^k) + 1 = %lld at k = %d", fs.noise.l1, fs.unit_exp);
	/* rounding two reals within the bound of each other to the lattice */
	for (int i = 0; i < 100000; i++)
	{
		long double a = (unit_rand(&s) - 0.5) * 1e6;
		long double b = a + (unit_rand(&s) * 2 - 1) * 2.25;
		long double ra = roundl(ldexpl(a, -fs.unit_exp));
		long double rb = roundl(ldexpl(b, -fs.unit_exp));

		if (fabsl(ra - rb) > fs.noise.l1)
			bad++;
	}
	tap_ok(bad == 0, "reals within the bound round at most L apart (%d violations)", bad);
}

/* Per-row float8 units: |units(x)| <= float_bound(h) for every |x| <= h. */
static void
test_float_units(void)
{
	uint64_t	s = 12345;
	int			bad = 0;
	double		hs[] = {1.0, 2.25, 100.0, 1e-300, 5e-324, 1e300, 0.1, 3.0, 1e15};

	for (int i = 0; i < (int) (sizeof(hs) / sizeof(hs[0])) + 2000; i++)
	{
		double		h = i < (int) (sizeof(hs) / sizeof(hs[0])) ? hs[i]
			: ldexp(1.0 + unit_rand(&s), (int) (next_rand(&s) % 1900) - 950);
		int			unit = dp_fixedsum_float_unit(h);
		double		to_units = ldexp(1.0, -unit);
		uint64_t	R = dp_fixedsum_float_bound(h, unit);

		if (!(isfinite(to_units)) || R > (UINT64_C(1) << 62))
			bad++;
		for (int j = 0; j < 200; j++)
		{
			double		x = j == 0 ? h : j == 1 ? -h : (unit_rand(&s) * 2 - 1) * h;
			int64_t		u = dp_fixedsum_float_to_units(x, to_units);

			if ((uint64_t) (u < 0 ? -u : u) > R)
				bad++;
		}
	}
	tap_ok(bad == 0, "float8 values within h stay within the per-row bound (%d violations)", bad);
	tap_ok(dp_fixedsum_float_unit(0.0) == -62 && dp_fixedsum_float_bound(0.0, -62) == 0,
		   "h = 0: units of 2^-62, bound 0");

	/* dp_avg's centring: fl(x - c) stays within [fl(l - c), fl(u - c)] */
	bad = 0;
	for (int i = 0; i < 200000; i++)
	{
		double		l = (unit_rand(&s) - 0.5) * ldexp(1.0, (int) (next_rand(&s) % 200) - 100);
		double		u = l + unit_rand(&s) * ldexp(1.0, (int) (next_rand(&s) % 200) - 100);
		double		c = l / 2.0 + u / 2.0;
		double		h = fmax(fabs(l - c), fabs(u - c));
		double		x = l + unit_rand(&s) * (u - l);

		if (x > u)
			x = u;
		if (fabs(x - c) > h)
			bad++;
	}
	tap_ok(bad == 0, "centred values stay within the centred bound (%d violations)", bad);
}

/*
 * Huge bounds (up to the 1e300 limit of dp_sum) plan for every family and
 * form, for numeric (real) and float8 (units) sums: the calibrations are
 * done at sensitivity 1 and scaled, so nothing overflows on the way.
 */
static void
test_plan_huge(void)
{
	DpMechanism mechs[] = {
		{DP_MECH_LAPLACE, DP_FORM_EPSILON, {1.0, 0.0}},
		{DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA, {1.0, 1e-6}},
		{DP_MECH_GAUSSIAN, DP_FORM_RHO, {0.5, 0.0}},
		{DP_MECH_OSGT, DP_FORM_EPSILON_DELTA, {1.0, 1e-6}},
	};
	const char *names[] = {"laplace(epsilon=1)", "gaussian(epsilon=1, delta=1e-6)",
	"gaussian(rho=0.5)", "osgt(epsilon=1, delta=1e-6)"};
	double		bounds[] = {1e160, 1e200, 1e300, 2e300};
	char		err[256];

	for (int i = 0; i < 4; i++)
	{
		int			bad_real = 0;
		int			bad_units = 0;

		for (int j = 0; j < 4; j++)
		{
			DpFixedSum	fs;
			double		h = bounds[j];
			int			unit = dp_fixedsum_float_unit(h);
			uint64_t	R = dp_fixedsum_float_bound(h, unit);
			double		width;

			memset(&fs, 0, sizeof(fs));
			if (!dp_fixedsum_plan_real(&fs, &mechs[i], h, err, sizeof(err)))
			{
				tap_diag("%s, numeric bound %g: %s", names[i], h, err);
				bad_real++;
			}
			else
			{
				/* the noise is on the scale of the bound, not degenerate */
				width = mechs[i].family == DP_MECH_LAPLACE ? fs.noise.scale : fs.noise.sigma;
				if (!(width > h * 1e-3 && width < h * 1e3))
				{
					tap_diag("%s, numeric bound %g: noise scale %g", names[i], h, width);
					bad_real++;
				}
			}
			memset(&fs, 0, sizeof(fs));
			if (!dp_fixedsum_plan_units(&fs, &mechs[i], R, unit, DP_FIXEDSUM_MIN_EXP, err, sizeof(err)))
			{
				tap_diag("%s, float8 bound %g: %s", names[i], h, err);
				bad_units++;
			}
		}
		tap_ok(bad_real == 0 && bad_units == 0,
			   "%s plans numeric and float8 sums with bounds 1e160 .. 2e300", names[i]);
	}
}

int
main(void)
{
	test_round();
	test_plan_units();
	test_plan_real();
	test_plan_huge();
	test_float_units();
	return tap_done();
}
