/*
 * test_sample.c — unit tests of sample.c: exactness of dp_bernoulli_exp by
 * exhaustive enumeration of the random bit tree, dp_rational_up, iteration
 * bounds under adversarial streams, parameter ranges, the lattice helpers
 * and the lattice support property.
 *
 * Exhaustive enumeration: a procedure run on a stream that starts with a
 * prefix P either finishes having read only bits of P (a leaf of
 * probability 2^-|P|) or reads past P (then P is extended by 0 and by 1).
 * Summing the leaves down to depth D gives, for every outcome, a lower
 * bound L on its probability, and the unresolved mass U (prefixes of length
 * D that still need bits) bounds the rest: the exact probability must lie
 * in [L, L + U].  Counts are integers in units of 2^-D, so the bracket is
 * exact.  The full samplers' trees grow like 1.7^D, too bushy for a useful
 * bracket, so their pmfs are tested statistically in test/stat instead.
 */
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include "random.h"
#include "sample.h"
#include "tap.h"

static jmp_buf fail_env;
static int	fail_code;

/* Failure handler that records the error and jumps back into the test. */
static void
catch_fail(DpCoreError code, const char *msg)
{
	(void) msg;
	fail_code = (int) code;
	longjmp(fail_env, 1);
}

/* Constant byte stream (0x00 or 0xff). */
static int
const_fill(void *arg, unsigned char *buf, size_t len)
{
	memset(buf, *(unsigned char *) arg, len);
	return 0;
}

/*
 * Prefix-tree enumeration
 */
#define ENUM_MAXD 62
#define ENUM_BINS 41			/* outcomes -20..20 */
#define ENUM_OFF 20
/* nodes per enumeration (about 1 microsecond each) */
#define ENUM_BUDGET 1000000

typedef int64_t (*EnumProc) (DpRng *rng, const void *ctx);

typedef struct Enum
{
	EnumProc	proc;
	const void *ctx;
	int			maxd;
	unsigned char prefix[ENUM_MAXD];
	uint64_t	count[ENUM_BINS];	/* leaf mass per outcome, units 2^-maxd */
	uint64_t	other;			/* leaf mass of outcomes outside the bins */
	uint64_t	unresolved;
	long		nodes;
	long		node_limit;
	int			depth;
} Enum;

/* Stream: the current prefix, then zeros. */
static int
enum_fill(void *arg, unsigned char *buf, size_t len)
{
	Enum	   *e = arg;
	int			i;

	memset(buf, 0, len);
	for (i = 0; i < e->depth; i++)
		if (e->prefix[i])
			buf[i / 8] |= (unsigned char) (1 << (i % 8));
	return 0;
}

/* Visit the prefix of length depth (already in e->prefix). */
static void
enum_rec(Enum *e, int depth)
{
	DpRng		rng;
	volatile int failed = 0;
	volatile int64_t result = 0;
	long		consumed;

	e->nodes++;
	e->depth = depth;
	dp_rng_init(&rng, enum_fill, e);
	if (setjmp(fail_env) == 0)
		result = e->proc(&rng, e->ctx);
	else
		failed = 1;
	/* bits read so far: whole words taken into the pool minus unused ones */
	consumed = (long) rng.pos * 8 - rng.nbits;
	if (!failed && consumed <= depth)
	{
		uint64_t	w = UINT64_C(1) << (e->maxd - depth);

		if (result >= -ENUM_OFF && result <= ENUM_OFF)
			e->count[result + ENUM_OFF] += w;
		else
			e->other += w;
		return;
	}
	if (depth == e->maxd || e->nodes >= e->node_limit)
	{
		e->unresolved += UINT64_C(1) << (e->maxd - depth);
		return;
	}
	e->prefix[depth] = 0;
	enum_rec(e, depth + 1);
	e->prefix[depth] = 1;
	enum_rec(e, depth + 1);
}

/* Enumerate proc down to depth maxd (or until node_limit nodes). */
static void
enum_run(Enum *e, EnumProc proc, const void *ctx, int maxd, long node_limit)
{
	memset(e, 0, sizeof(*e));
	e->proc = proc;
	e->ctx = ctx;
	e->maxd = maxd;
	e->node_limit = node_limit;
	dp_core_set_fail_handler(catch_fail);
	enum_rec(e, 0);
	dp_core_set_fail_handler(NULL);
}

/*
 * Enumerate as deep as ENUM_BUDGET nodes allow: deepen two levels at a time
 * and keep the deepest run that finished within the budget.
 */
static void
enum_deepen(Enum *e, EnumProc proc, const void *ctx)
{
	static Enum next;
	int			d;

	enum_run(e, proc, ctx, 12, ENUM_BUDGET);
	for (d = 14; d <= ENUM_MAXD; d += 2)
	{
		enum_run(&next, proc, ctx, d, ENUM_BUDGET);
		if (next.nodes >= ENUM_BUDGET)
			break;
		*e = next;
		if (e->unresolved == 0)
			break;
	}
}

/* Does the exact probability p lie in [count, count + unresolved] 2^-maxd? */
static int
enum_brackets(const Enum *e, uint64_t count, long double p)
{
	long double lo = ldexpl((long double) count, -e->maxd);
	long double hi = ldexpl((long double) count + (long double) e->unresolved, -e->maxd);

	/* 1e-15 absorbs the error of expl() itself */
	return lo <= p + 1e-15L && p <= hi + 1e-15L;
}

typedef struct BernCase
{
	unsigned __int128 num;
	unsigned __int128 den;
} BernCase;

/* Enumerated procedure: one dp_bernoulli_exp draw for a BernCase. */
static int64_t
proc_bernoulli(DpRng *rng, const void *ctx)
{
	const BernCase *c = ctx;

	return dp_bernoulli_exp(rng, c->num, c->den);
}

/* dp_bernoulli_exp: exact bracket over the full bit tree. */
static void
test_bernoulli_exhaustive(void)
{
	unsigned __int128 two64 = (unsigned __int128) 1 << 64;
	BernCase	cases[] = {
		{0, 1}, {1, 3}, {1, 1}, {5, 7}, {3, 2}, {7, 3},
		{UINT64_MAX - 2, UINT64_MAX},	/* g just below 1, 64-bit limits */
		{5 * two64 + 3, 7 * (two64 / 2)},	/* multi-limb path, g ~ 1.43 */
		{two64 * 4, two64 * 3},	/* g = 4/3 with 65-bit operands */
		{1, two64 + 1},			/* tiny g */
		{3 * two64 + 5, UINT64_MAX},	/* 128-bit numerator, 64-bit den */
	};
	size_t		i;
	Enum		e;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		long double g = (long double) cases[i].num / (long double) cases[i].den;
		long double p1 = expl(-g);

		enum_deepen(&e, proc_bernoulli, &cases[i]);
		tap_ok(enum_brackets(&e, e.count[ENUM_OFF + 1], p1) &&
			   enum_brackets(&e, e.count[ENUM_OFF], 1.0L - p1) &&
			   e.other == 0 && ldexpl((long double) e.unresolved, -e.maxd) < 1e-2L,
			   "Bernoulli(exp(-%.6Lg)) exact: P(1) in [%.12Lg, +%.2Lg] (depth %d, %ld nodes)",
			   g, ldexpl((long double) e.count[ENUM_OFF + 1], -e.maxd),
			   ldexpl((long double) e.unresolved, -e.maxd), e.maxd, e.nodes);
	}

	/* the bracket has teeth: a slightly different probability falls out */
	{
		BernCase	c = {1, 3};

		enum_deepen(&e, proc_bernoulli, &c);
		tap_ok(!enum_brackets(&e, e.count[ENUM_OFF + 1], expl(-1.0L / 3) * (1 + 1e-3L)) &&
			   !enum_brackets(&e, e.count[ENUM_OFF + 1], expl(-1.0L / 3) * (1 - 1e-3L)),
			   "enumeration bracket rejects a probability off by 1e-3 relative");
	}
}

/* Deterministic stream: splitmix64 outputs, little-endian. */
static int
splitmix_fill(void *arg, unsigned char *buf, size_t len)
{
	uint64_t   *state = arg;
	size_t		i;

	for (i = 0; i < len; i += 8)
	{
		uint64_t	z = (*state += UINT64_C(0x9E3779B97F4A7C15));
		int			j;

		z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
		z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
		z ^= z >> 31;
		for (j = 0; j < 8 && i + j < len; j++)
			buf[i + j] = (unsigned char) (z >> (8 * j));
	}
	return 0;
}

/*
 * The 64/128/256-bit fast paths and the multi-limb path implement the same
 * arithmetic: on the same deterministic stream they must return the same
 * values and consume the same bits.
 */
static void
test_paths_agree(void)
{
	struct
	{
		const char *name;
		int			kind;
		DpRational	a;
		DpRational	b;
	}			cases[] = {
		{"Gaussian sigma^2=9", 2, {9, 1}, {0, 1}},
		{"Gaussian sigma^2=3.7^2", 2, {0, 0}, {0, 0}},
		{"Gaussian sigma^2=0.3", 2, {0, 0}, {0, 0}},
		{"OSGT sigma^2=40 m=3 (B)", 3, {40, 1}, {3, 1}},
		{"OSGT sigma^2=16 m=10 (A)", 3, {16, 1}, {10, 1}},
		{"OSGT sigma^2=6.3245553^2 m=3", 3, {0, 0}, {3, 1}},
	};
	size_t		i;
	int			ok = 1;

	cases[1].a = dp_rational_up(3.7 * 3.7);
	cases[2].a = dp_rational_up(0.3);
	cases[5].a = dp_rational_up(6.3245553 * 6.3245553);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		DpSampler	fast,
					slow;
		DpRng		r1,
					r2;
		uint64_t	st1 = i,
					st2 = i;
		int			n;
		int			same = 1;

		if (cases[i].kind == 2)
			dp_sampler_gaussian(&fast, cases[i].a);
		else
			dp_sampler_osgt(&fast, cases[i].a, cases[i].b);
		slow = fast;
		dp_sampler_use_generic_arithmetic(&slow);
		dp_rng_init(&r1, splitmix_fill, &st1);
		dp_rng_init(&r2, splitmix_fill, &st2);
		for (n = 0; n < 100000; n++)
			same &= dp_sampler_draw(&fast, &r1) == dp_sampler_draw(&slow, &r2);
		same &= st1 == st2 && r1.pos == r2.pos && r1.nbits == r2.nbits;
		if (!same)
			tap_diag("%s: fast and multi-limb paths differ", cases[i].name);
		ok &= same;
	}
	tap_ok(ok, "Gaussian/OSGT: fast and multi-limb arithmetic draw identically (6 x 100000)");

	/* dp_bernoulli_exp(a, b) takes 64/128-bit paths, (a 2^64, b 2^64) the multi-limb one */
	{
		uint64_t	fr[][2] = {{1, 3}, {5, 7}, {7, 3}, {100, 7}, {UINT64_MAX - 1, UINT64_MAX},
		{UINT64_MAX, 12345}};
		DpRng		r1,
					r2;
		uint64_t	st1 = 42,
					st2 = 42;
		size_t		j;
		int			same = 1;

		dp_rng_init(&r1, splitmix_fill, &st1);
		dp_rng_init(&r2, splitmix_fill, &st2);
		for (j = 0; j < sizeof(fr) / sizeof(fr[0]); j++)
		{
			int			n;

			for (n = 0; n < 100000; n++)
				same &= dp_bernoulli_exp(&r1, fr[j][0], fr[j][1]) ==
					dp_bernoulli_exp(&r2, (unsigned __int128) fr[j][0] << 64,
									 (unsigned __int128) fr[j][1] << 64);
		}
		same &= st1 == st2 && r1.pos == r2.pos && r1.nbits == r2.nbits;
		tap_ok(same, "dp_bernoulli_exp: 64-bit and multi-limb paths draw identically");
	}
}

/* dp_rational_up: never below x, smallest, tight, and validated. */
static void
test_rational_up(void)
{
	double		fixed[] = {1.0, 3.7, 0.1, 1e-3, 1e-10, 1e-300, 4.9e-324, 2.5e-19,
		1e6, 123456789.123, 4.0e18, 4611686018427387903.0 / 2, 0.75, 1.0 / 3};
	int			ok_never_below = 1,
				ok_smallest = 1,
				ok_tight = 1,
				ok_form = 1;
	size_t		i;
	DpRng		rng;
	volatile int reached;

	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	for (i = 0; i < 200000 + sizeof(fixed) / sizeof(fixed[0]); i++)
	{
		double		x;
		DpRational	r;
		int			k;
		long double xs;

		if (i < sizeof(fixed) / sizeof(fixed[0]))
			x = fixed[i];
		else
		{
			/* random significand, exponent in [-80, 61] */
			uint64_t	bits = dp_rng_u64(&rng);

			x = ldexp((double) (bits >> 11) + 1.0, -52);
			x = ldexp(x, (int) (dp_rng_uniform(&rng, 142)) - 80);
		}
		r = dp_rational_up(x);
		if (r.num == 0 || r.num >= (UINT64_C(1) << 62) || r.den == 0 ||
			(r.den & (r.den - 1)) != 0 || (r.den > 1 && (r.num & 1) == 0))
			ok_form = 0;
		k = __builtin_ctzll(r.den);
		xs = ldexpl((long double) x, k);	/* exact: 64-bit significand */
		if ((long double) r.num < xs)
			ok_never_below = 0;
		if ((long double) (r.num - 1) >= xs)
			ok_smallest = 0;
		/* relative rounding: 0 for x >= 2^-11, else < 2^-63 / x */
		if (x >= ldexp(1.0, -11) ? (long double) r.num != xs
			: ((long double) r.num - xs) / xs > ldexpl(1.0L, -63) / x)
			ok_tight = 0;
	}
	tap_ok(ok_form, "dp_rational_up: num < 2^62, den = 2^k, reduced");
	tap_ok(ok_never_below, "dp_rational_up never returns less than x");
	tap_ok(ok_smallest, "dp_rational_up: num - 1 over the same den is below x");
	tap_ok(ok_tight, "dp_rational_up exact for x >= 2^-11, relative error < 2^-63/x below");
	{
		DpRational	r = dp_rational_up(40.0);
		DpRational	h = dp_rational_up(0.5);

		tap_ok(r.num == 40 && r.den == 1 && h.num == 1 && h.den == 2,
			   "dp_rational_up reduces dyadic values: 40 -> %llu/%llu, 0.5 -> %llu/%llu",
			   (unsigned long long) r.num, (unsigned long long) r.den,
			   (unsigned long long) h.num, (unsigned long long) h.den);
	}

	dp_core_set_fail_handler(catch_fail);
	{
		double		bad[] = {0.0, -1.0, INFINITY, NAN, 4611686018427387904.0, 1e300};
		int			ok = 1;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		{
			fail_code = 0;
			reached = 0;
			if (setjmp(fail_env) == 0)
			{
				(void) dp_rational_up(bad[i]);
				reached = 1;
			}
			ok &= !reached && fail_code == DP_ERR_RANGE;
		}
		tap_ok(ok, "dp_rational_up rejects 0, negatives, inf, nan, >= 2^62");
	}
	dp_core_set_fail_handler(NULL);
}

/* Draw once from s with a constant stream; return the failure code (0 = none). */
static int
draw_with_const(const DpSampler *s, unsigned char byte)
{
	DpRng		rng;

	dp_rng_init(&rng, const_fill, &byte);
	fail_code = 0;
	dp_core_set_fail_handler(catch_fail);
	if (setjmp(fail_env) == 0)
		(void) dp_sampler_draw(s, &rng);
	dp_core_set_fail_handler(NULL);
	return fail_code;
}

/* Adversarial constant streams hit the iteration bounds, never loop forever. */
static void
test_iteration_bounds(void)
{
	DpSampler	s;
	DpRng		rng;
	unsigned char zero = 0;

	dp_sampler_laplace(&s, dp_rational_up(3.7));
	tap_ok(draw_with_const(&s, 0x00) == DP_ERR_ITERATIONS, "Laplace(3.7), all-zeros stream: iteration bound");
	tap_ok(draw_with_const(&s, 0xff) == DP_ERR_ITERATIONS, "Laplace(3.7), all-ones stream: iteration bound");
	dp_sampler_laplace(&s, (DpRational) {1, 4});
	tap_ok(draw_with_const(&s, 0xff) == DP_ERR_ITERATIONS,
		   "Laplace(1/4), all-ones stream: restart bound (sign rejection)");
	dp_sampler_gaussian(&s, dp_rational_up(10.0));
	tap_ok(draw_with_const(&s, 0x00) == DP_ERR_ITERATIONS, "Gaussian, all-zeros stream: iteration bound");
	dp_sampler_osgt(&s, dp_rational_up(40.0), dp_rational_up(3.0));
	tap_ok(draw_with_const(&s, 0x00) == DP_ERR_ITERATIONS, "OSGT, all-zeros stream: iteration bound");

	/* Bernoulli(exp(-1/2)) on zeros: Bernoulli(1/K) always 1, K runs away */
	dp_rng_init(&rng, const_fill, &zero);
	fail_code = 0;
	dp_core_set_fail_handler(catch_fail);
	if (setjmp(fail_env) == 0)
		(void) dp_bernoulli_exp(&rng, 1, 2);
	tap_ok(fail_code == DP_ERR_ITERATIONS, "dp_bernoulli_exp, all-zeros stream: K bound");
	fail_code = 0;
	if (setjmp(fail_env) == 0)
		(void) dp_bernoulli_exp(&rng, 1, 0);
	tap_ok(fail_code == DP_ERR_RANGE, "dp_bernoulli_exp with den = 0 is a range error");
	dp_core_set_fail_handler(NULL);

	/* after a failure the same sampler works with a real source */
	{
		DpRng		good;
		int64_t		v;

		dp_rng_init(&good, dp_random_openssl_fill, NULL);
		v = dp_sampler_draw(&s, &good);
		tap_ok(v > -1000 && v < 1000, "sampler usable after a caught failure");
	}
}

/* Prepare functions reject parameters outside the supported range. */
static void
test_ranges(void)
{
	struct
	{
		const char *name;
		int			kind;
		DpRational	a;
		DpRational	b;
	}			bad[] = {
		{"Laplace t = 0", 1, {0, 1}, {0, 1}},
		{"Laplace den = 0", 1, {1, 0}, {0, 1}},
		{"Laplace t = 2^62/72 + 1", 1, {(UINT64_C(1) << 62) / 72 + 1, 1}, {0, 1}},
		{"Gaussian sigma^2 = 0", 2, {0, 1}, {0, 1}},
		{"Gaussian den = 0", 2, {1, 0}, {0, 1}},
		{"OSGT m den = 0", 3, {1, 1}, {1, 0}},
	};
	size_t		i;
	volatile int ok = 1;
	DpSampler	s;
	volatile int reached;

	dp_core_set_fail_handler(catch_fail);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		fail_code = 0;
		reached = 0;
		if (setjmp(fail_env) == 0)
		{
			if (bad[i].kind == 1)
				dp_sampler_laplace(&s, bad[i].a);
			else if (bad[i].kind == 2)
				dp_sampler_gaussian(&s, bad[i].a);
			else
				dp_sampler_osgt(&s, bad[i].a, bad[i].b);
			reached = 1;
		}
		if (reached || fail_code != DP_ERR_RANGE)
		{
			tap_diag("not rejected: %s", bad[i].name);
			ok = 0;
		}
	}
	dp_core_set_fail_handler(NULL);
	tap_ok(ok, "prepare rejects zero/invalid parameters and Laplace scales beyond 2^62/72");

	/* extremes that must be accepted, and their draws stay in range */
	{
		DpRng		rng;
		int			ok2 = 1;
		int			j;
		DpRational	ext[][2] = {
			{{(UINT64_C(1) << 62) / 72, 1}, {0, 1}},	/* Laplace: largest */
			{{1, UINT64_MAX}, {0, 1}},	/* Laplace: smallest */
		};

		dp_rng_init(&rng, dp_random_openssl_fill, NULL);
		for (j = 0; j < 2; j++)
		{
			int			n;

			dp_sampler_laplace(&s, ext[j][0]);
			for (n = 0; n < 1000; n++)
			{
				int64_t		v = dp_sampler_draw(&s, &rng);

				ok2 &= v > -(INT64_C(1) << 62) && v < (INT64_C(1) << 62);
				if (j == 1)
					ok2 &= v == 0;
			}
		}
		dp_sampler_gaussian(&s, (DpRational) {UINT64_MAX, 1});
		for (j = 0; j < 1000; j++)
		{
			int64_t		v = dp_sampler_draw(&s, &rng);

			ok2 &= v > -(INT64_C(1) << 40) && v < (INT64_C(1) << 40);
		}
		dp_sampler_osgt(&s, (DpRational) {UINT64_MAX, 3}, (DpRational) {UINT64_MAX - 1, UINT64_MAX});
		for (j = 0; j < 1000; j++)
			(void) dp_sampler_draw(&s, &rng);
		dp_sampler_osgt(&s, (DpRational) {1, UINT64_MAX}, (DpRational) {UINT64_MAX, 1});
		for (j = 0; j < 1000; j++)
			ok2 &= dp_sampler_draw(&s, &rng) == 0;
		tap_ok(ok2, "extreme but valid parameters (64-bit numerators/denominators) draw in range");
	}
}

/* Lattice helpers: exponent, rounding with ties to even, round trips. */
static void
test_lattice(void)
{
	int64_t		m;
	double		d;
	int			ok = 1;
	int			i;
	DpRng		rng;
	volatile int reached;

	tap_ok(dp_lattice_exponent(8.0) == 3 && dp_lattice_exponent(8.000001) == 4 &&
		   dp_lattice_exponent(0.3) == -1 && dp_lattice_exponent(1.0) == 0 &&
		   dp_lattice_exponent(4.9e-324) == -1074 && dp_lattice_exponent(1e300) == 997,
		   "dp_lattice_exponent: smallest k with 2^k >= x");

	ok = dp_lattice_round(2.5, 0, &m) && m == 2;
	ok &= dp_lattice_round(3.5, 0, &m) && m == 4;
	ok &= dp_lattice_round(-2.5, 0, &m) && m == -2;
	ok &= dp_lattice_round(-3.5, 0, &m) && m == -4;
	ok &= dp_lattice_round(0.5, 0, &m) && m == 0;
	ok &= dp_lattice_round(-0.5, 0, &m) && m == 0;
	ok &= dp_lattice_round(1.5, 0, &m) && m == 2;
	ok &= dp_lattice_round(0.75, -1, &m) && m == 2;	/* 1.5 -> 2 */
	ok &= dp_lattice_round(1.25, -1, &m) && m == 2;	/* 2.5 -> 2 */
	ok &= dp_lattice_round(6.0, 2, &m) && m == 2;	/* 1.5 -> 2 */
	ok &= dp_lattice_round(10.0, 2, &m) && m == 2;	/* 2.5 -> 2 */
	ok &= dp_lattice_round(0.49999999999999994, 0, &m) && m == 0;
	ok &= dp_lattice_round(-0.49999999999999994, 0, &m) && m == 0;
	ok &= dp_lattice_round(4503599627370497.0, 0, &m) && m == 4503599627370497LL;
	tap_ok(ok, "dp_lattice_round: ties to even, symmetric, near-ties");

	ok = !dp_lattice_round(NAN, 0, &m) && !dp_lattice_round(INFINITY, 0, &m);
	ok &= !dp_lattice_round(-INFINITY, -3, &m);
	ok &= !dp_lattice_round(9223372036854775808.0, 0, &m);
	ok &= dp_lattice_round(-9223372036854775808.0, 0, &m) && m == INT64_MIN;
	ok &= !dp_lattice_round(1e300, 0, &m);
	ok &= !dp_lattice_round(1.0, -1100, &m);	/* 2^1100 overflows */
	ok &= dp_lattice_round(1e-300, 10, &m) && m == 0;	/* underflow is 0 */
	ok &= dp_lattice_round(1e300, INT32_MAX, &m) && m == 0;
	ok &= !dp_lattice_round(1e-300, INT32_MIN, &m);
	ok &= dp_lattice_round(0.0, INT32_MIN, &m) && m == 0;
	tap_ok(ok, "dp_lattice_round rejects non-finite and out-of-int64 values");

	ok = dp_lattice_to_double(3, -2, &d) && d == 0.75;
	ok &= dp_lattice_to_double(-(INT64_C(1) << 53) + 1, 0, &d) && d == -9007199254740991.0;
	ok &= !dp_lattice_to_double(INT64_C(1) << 53, 0, &d);
	ok &= !dp_lattice_to_double(INT64_MIN, 0, &d);
	ok &= !dp_lattice_to_double(1, 1024, &d);
	ok &= dp_lattice_to_double(3, -1074, &d) && d == 3 * 4.9406564584124654e-324;
	ok &= !dp_lattice_to_double(3, -1075, &d);	/* 1.5 * 2^-1074 is not exact */
	ok &= !dp_lattice_to_double(1, INT32_MIN, &d) && !dp_lattice_to_double(1, INT32_MAX, &d);
	ok &= dp_lattice_to_double(0, INT32_MIN, &d) && d == 0.0;
	tap_ok(ok, "dp_lattice_to_double: exact or refused");

	/* random round trips: |back - x| <= 2^(k-1), exact for lattice points */
	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	ok = 1;
	for (i = 0; i < 200000; i++)
	{
		int			k = (int) dp_rng_uniform(&rng, 81) - 40;
		double		x = ldexp((double) (int64_t) (dp_rng_u64(&rng) >> 12) - ldexp(1.0, 51),
							  (int) dp_rng_uniform(&rng, 60) - 30 - 51);
		double		back;

		if (!dp_lattice_round(x, k, &m))
			continue;
		if (!dp_lattice_to_double(m, k, &back))
			continue;
		ok &= fabs(back - x) <= ldexp(1.0, k - 1);
		ok &= dp_lattice_round(back, k, &m) && dp_lattice_to_double(m, k, &d) && d == back;
	}
	tap_ok(ok, "lattice round trips: within half a step, idempotent");

	dp_core_set_fail_handler(catch_fail);
	fail_code = 0;
	reached = 0;
	if (setjmp(fail_env) == 0)
	{
		(void) dp_lattice_exponent(0.0);
		reached = 1;
	}
	dp_core_set_fail_handler(NULL);
	tap_ok(!reached && fail_code == DP_ERR_RANGE, "dp_lattice_exponent(0) is a range error");
}

/*
 * Support test (Mironov 2012): released values x~ + K g for neighbouring
 * inputs x, x' lie on the same lattice g Z, so no output is possible under
 * one input and impossible under the other; floating-point noise added to
 * the raw double fails this (positive control).
 */
static void
test_support(void)
{
	double		xs[] = {0.1, 0.1 + 1.0, 1234.5678, 1235.5678};	/* pairs at distance 1 */
	int			k = dp_lattice_exponent(1.0 / 1024);
	DpSampler	s;
	DpRng		rng;
	int			ok = 1;
	int			naive_off = 0;
	int			i,
				j;

	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	dp_sampler_laplace(&s, dp_rational_up(2.0 * 1024));	/* scale 2 in lattice units */
	for (i = 0; i < 4; i++)
	{
		int64_t		base;

		if (!dp_lattice_round(xs[i], k, &base))
			ok = 0;
		for (j = 0; j < 20000; j++)
		{
			double		out,
						naive;
			int64_t		mm;

			if (!dp_lattice_to_double(base + dp_sampler_draw(&s, &rng), k, &out))
			{
				ok = 0;
				continue;
			}
			/* on the lattice: rounding to it is the identity */
			ok &= dp_lattice_round(out, k, &mm) && ldexp((double) mm, k) == out;

			/* control: x + float Laplace noise, not snapped */
			naive = xs[i] + 2.0 * log(((double) (dp_rng_u64(&rng) >> 11) + 1) / 9007199254740992.0)
				* (dp_rng_bit(&rng) ? 1 : -1);
			if (!(dp_lattice_round(naive, k, &mm) && ldexp((double) mm, k) == naive))
				naive_off++;
		}
	}
	tap_ok(ok, "lattice outputs for neighbouring inputs all lie on 2^k Z");
	tap_ok(naive_off > 70000, "control: float noise leaves the lattice (%d of 80000)", naive_off);
}

/* Run every test of sample.c. */
int
main(void)
{
	test_rational_up();
	test_bernoulli_exhaustive();
	test_paths_agree();
	test_iteration_bounds();
	test_ranges();
	test_lattice();
	test_support();
	return tap_done();
}
