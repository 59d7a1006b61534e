/*
 * sample.c — exact samplers of integer (lattice) noise for dp_pg.
 *
 * Part of the numeric core: plain C, no PostgreSQL header.  Every sampler
 * turns uniform random integers (random.c) into an integer drawn from an
 * exactly specified pmf; accept/reject decisions use integer arithmetic only
 * (64-bit, 128-bit, and a small fixed-width multi-limb integer for the
 * Gaussian/OSGT acceptance exponents).  Floating point is used only to pick
 * between two equally exact OSGT methods (a speed choice) and in the lattice
 * helpers at the bottom, whose arithmetic is exact by construction.
 *
 * Correctness (why each output pmf is exactly the target)
 * -------------------------------------------------------
 * B1. Bernoulli(r/d), 0 <= r < d (BernRatio): compare a uniform real U in
 *     [0,1), drawn one binary digit at a time, with the binary expansion of
 *     r/d produced by long division (digit = [2r >= d], r <- 2r - digit*d).
 *     The first differing digit decides U < r/d; if the expansion ends (r
 *     becomes 0) with all digits equal so far, U >= r/d almost surely.  So
 *     P(1) = P(U < r/d) = r/d exactly.
 *
 * B2. Bernoulli(exp(-g)), 0 <= g = r/d < 1 (Canonne-Kamath-Steinke 2020,
 *     Alg. 1): K <- 1; while Bernoulli(g/K) = 1: K <- K + 1; return [K odd].
 *     Bernoulli(g/K) is the AND of independent Bernoulli(1/K) (a uniform
 *     over {0..K-1} equal to 0) and Bernoulli(g) (B1), whose product of
 *     probabilities is g/K.  P(K > k) = g^k/k!, so
 *     P(K odd) = sum_{k odd} (g^(k-1)/(k-1)! - g^k/k!) = sum_j (-g)^j/j!
 *              = exp(-g).
 *     Bernoulli(exp(-1)) is the same loop with g = 1 (B1 always 1).
 *
 * B3. Bernoulli(exp(-N/D)) for any N >= 0, D >= 1: exp(-N/D) =
 *     exp(-1)^n * exp(-(N - nD)/D) with n = floor(N/D); draw the n
 *     Bernoulli(exp(-1)) first, stopping at the first 0 (the product is
 *     then 0 whatever follows), then B2 on the remainder.  The independent
 *     factors multiply to exp(-N/D).  Only subtraction and comparison are
 *     needed (no division), and because each factor is 0 with probability
 *     1 - 1/e the loop ends after 1.6 factors on average whatever N/D is.
 *
 * L.  Discrete Laplace, t = s/u (CKS 2020, Alg. 2): U uniform on {0..s-1},
 *     kept with probability exp(-U/s) (B2), so P(U = j) is proportional to
 *     exp(-j/s); V = number of Bernoulli(exp(-1)) successes before the
 *     first failure, P(V = v) = (1 - 1/e) e^-v.  X = U + sV then has
 *     P(X = x) proportional to exp(-(x mod s)/s - floor(x/s)) = exp(-x/s),
 *     G = floor(X/u) has P(G = g) = sum_{j<u} P(X = gu + j), proportional to
 *     exp(-gu/s) = exp(-g/t).  A fair sign bit B gives +G or -G; the pair
 *     (B = 1, G = 0) is rejected (restart), otherwise 0 would have twice
 *     its share.  Hence P(K = k) is proportional to exp(-|k|/t).
 *
 * R.  Gaussian and OSGT by rejection from a discrete Laplace proposal with
 *     scale T.  The target w(k) = exp(-k^2/(2 sigma^2) - m|k|/sigma^2)
 *     (m = 0 for the Gaussian) over the proposal exp(-|k|/T) is, with
 *     y = |k| and c = sigma^2/T - m,
 *         w(k) e^{|k|/T} = exp(-(y^2 - 2 c y)/(2 sigma^2))
 *                        = exp(-((y - c)^2 - c^2)/(2 sigma^2)),
 *     which is at most M = exp(c^2/(2 sigma^2)) if c > 0 and at most
 *     M = 1 if c <= 0.  Accepting y with probability
 *         exp(-(y - c)^2/(2 sigma^2))            (c > 0)
 *         exp(-(y^2 + 2|c| y)/(2 sigma^2))       (c <= 0)
 *     (= w(k) e^{|k|/T}/M <= 1, by B3 with an exact rational exponent)
 *     gives an output pmf proportional to proposal(k) * w(k) e^{|k|/T}/M,
 *     i.e. to w(k): exact for every T.  The Gaussian is CKS Alg. 3 with
 *     T = floor(sigma) + 1, OSGT method (B) uses the same T, method (A) uses
 *     a dyadic T >= sigma^2/m (so c <= 0, barely: with T = sigma^2/m the
 *     acceptance would be exactly exp(-y^2/(2 sigma^2))).
 *     Exponent as an exact fraction: with sigma^2 = p/q, m = a/b, T = s/u,
 *         E = q s b,  C = p u b - a q s  (so c = C/E),  D = 2 p q s^2 b^2,
 *         N = (yE - C)^2             if C > 0,
 *         N = yE (yE + 2|C|)         if C <= 0,
 *     and the acceptance probability is exp(-N/D).
 *
 * Iteration bounds (each reached with probability < 2^-100; reaching one
 * calls dp_core_fail(DP_ERR_ITERATIONS), never a biased output):
 *   - BernRatio: 128 undecided digits, probability 2^-128.
 *   - B2's K: K > 30 has probability g^30/30! <= 1/30! < 2^-107.
 *   - B3's integer part and L's V: 72 successive Bernoulli(exp(-1))
 *     successes, probability e^-72 < 2^-103.
 *   - L's restarts: a round succeeds with probability >= (1 - 1/e)/2 > 0.316
 *     (the mean of exp(-j/s) over j < s is at least the integral of e^-x on
 *     [0,1], and (B = 1, G = 0) has probability <= 1/2); 224 failed rounds
 *     have probability < 0.684^224 < 2^-122.
 *   - R's proposals: the acceptance rate, sum_k w(k) / (M sum_k e^{-|k|/T}),
 *     is >= 0.445 for the Gaussian (minimum near sigma = 0.3; 0.76 for large
 *     sigma) and for OSGT with the better of (A) and (B) (computed on a grid
 *     of sigma in [0.02, 500] and m/sigma in [0.001, 200]; the limits are the
 *     Gaussian for m -> 0 and acceptance -> 1 for m -> infinity).  256
 *     rejected proposals have probability < 0.56^256 < 2^-214; even an
 *     acceptance rate of 0.25 would give < 2^-106.
 *   - Uniform draws (random.c): 128 rejections, probability < 2^-128.
 *
 * Ranges (checked when a sampler is prepared; DP_ERR_RANGE otherwise):
 * every numerator and denominator is a uint64 (den >= 1); Laplace needs
 * t > 0 and 72 t <= 2^62 so that |noise| < 2^62 (X < 72 s, see the V
 * bound); sigma^2 > 0; m >= 0.  Gaussian / OSGT proposals then have scale
 * s/u with s < 2^55 (method B: s = floor(sigma) + 1 <= 2^32 + 1; method A:
 * at most 2^40 or about 30 significant bits) and |k| < 2^62, so no
 * intermediate overflows: E < 2^183, |C| < 2^191, D < 2^367, yE < 2^245
 * and N < 2^491, inside the 512-bit SampleBig (2r < 2D in BernRatio needs
 * 7 limbs at most).  When E and |C| fit in 64 bits and D in 128 (every
 * Gaussian whose sigma^2 comes from dp_rational_up; OSGT with integer or
 * short dyadic m) the same arithmetic runs on 128/256-bit integers.
 *
 * Timing: the number of random bits and loop iterations depends on the
 * noise value drawn; callers must not expose per-draw timing.
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include "sample.h"

#include <math.h>
#include <string.h>

/* Undecided binary digits allowed in SampleBernRatio*: P = 2^-128. */
#define DP_RATIO_BOUND 128
/* Largest K in the CKS loop for g <= 1: P(K > 30) <= 1/30! < 2^-107. */
#define DP_EXPK_BOUND 30
/* Successive Bernoulli(exp(-1)) successes allowed: e^-72 < 2^-103. */
#define DP_EXP1_RUN_BOUND 72
/* Laplace restarts: round success >= 0.316, 0.684^224 < 2^-122. */
#define DP_LAPLACE_BOUND 224
/* Gaussian / OSGT proposals: acceptance >= 0.445, 0.56^256 < 2^-214. */
#define DP_REJECT_BOUND 256

/* Laplace noise stays below 2^62: X < 72 s, so require 72 s <= 2^62 u. */
#define DP_NOISE_LIMIT (UINT64_C(1) << 62)
#define DP_LAPLACE_X_FACTOR 72

/* aux[] layout of a prepared sampler */
#define AUX_USHIFT		0		/* Laplace / proposal: log2(u) if u is 2^k */
#define AUX_UPOW2		1		/* 1 if u is a power of two */
#define AUX_METHOD		2		/* Gaussian / OSGT: SAMPLE_METHOD_* */
#define AUX_FLAGS		3		/* Gaussian / OSGT: AUXF_* */
#define AUX_E			4		/* with AUXF_FAST: E, */
#define AUX_C			5		/* |C|, */
#define AUX_DLO			6		/* and D (see R above), low */
#define AUX_DHI			7		/* and high 64 bits */

#define AUXF_FAST		1		/* E, |C| < 2^64 and D < 2^128 */
#define AUXF_CPOS		2		/* C > 0 */

#define SAMPLE_METHOD_B 1		/* proposal scale floor(sigma) + 1 */
#define SAMPLE_METHOD_A 2		/* proposal scale ~ sigma^2 / m */

typedef unsigned __int128 u128;

static void SampleSetupTerms(DpSampler *s);
static void SampleChooseOsgtMethod(DpSampler *s);

/*
 * Fixed-width unsigned integer, 8 little-endian 64-bit limbs, with the
 * number of significant limbs kept in n so that the usual values cost one
 * to three limbs.  Only limbs below n are meaningful (the others are never
 * read), so nothing has to be cleared.
 */
#define BIG_LIMBS 8

typedef struct SampleBig
{
	int			n;
	uint64_t	w[BIG_LIMBS];
} SampleBig;

/* Drop leading zero limbs. */
static inline void
BigNorm(SampleBig *a)
{
	while (a->n > 0 && a->w[a->n - 1] == 0)
		a->n--;
}

/* a <- v (128-bit). */
static inline void
BigSet(SampleBig *a, u128 v)
{
	a->w[0] = (uint64_t) v;
	a->w[1] = (uint64_t) (v >> 64);
	a->n = a->w[1] != 0 ? 2 : (a->w[0] != 0 ? 1 : 0);
}

/* Compare: -1, 0, 1. */
static inline int
BigCmp(const SampleBig *a, const SampleBig *b)
{
	int			i;

	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	for (i = a->n - 1; i >= 0; i--)
	{
		if (a->w[i] != b->w[i])
			return a->w[i] < b->w[i] ? -1 : 1;
	}
	return 0;
}

/* r <- a + b; r may alias a or b.  Overflow is a range error. */
static inline void
BigAdd(SampleBig *r, const SampleBig *a, const SampleBig *b)
{
	int			n = a->n > b->n ? a->n : b->n;
	uint64_t	carry = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		u128		t = (u128) (i < a->n ? a->w[i] : 0) + (i < b->n ? b->w[i] : 0) + carry;

		r->w[i] = (uint64_t) t;
		carry = (uint64_t) (t >> 64);
	}
	if (carry)
	{
		if (n == BIG_LIMBS)
			dp_core_fail(DP_ERR_RANGE, "sampler arithmetic overflow");
		r->w[n++] = carry;
	}
	r->n = n;
}

/* r <- a - b, requires a >= b; r may alias a or b. */
static inline void
BigSub(SampleBig *r, const SampleBig *a, const SampleBig *b)
{
	uint64_t	borrow = 0;
	int			i;

	for (i = 0; i < a->n; i++)
	{
		uint64_t	ai = a->w[i];
		uint64_t	bi = i < b->n ? b->w[i] : 0;
		uint64_t	d = ai - bi - borrow;

		borrow = (ai < bi) || (ai - bi < borrow);
		r->w[i] = d;
	}
	r->n = a->n;
	BigNorm(r);
}

/* r <- a * b; r must not alias a or b.  Overflow is a range error. */
static void
BigMul(SampleBig *r, const SampleBig *a, const SampleBig *b)
{
	int			i,
				j;

	if (a->n == 0 || b->n == 0)
	{
		r->n = 0;
		return;
	}
	if (a->n + b->n > BIG_LIMBS)
		dp_core_fail(DP_ERR_RANGE, "sampler arithmetic overflow");
	for (i = 0; i < a->n + b->n; i++)
		r->w[i] = 0;
	for (i = 0; i < a->n; i++)
	{
		uint64_t	carry = 0;

		for (j = 0; j < b->n; j++)
		{
			u128		t = (u128) a->w[i] * b->w[j] + r->w[i + j] + carry;

			r->w[i + j] = (uint64_t) t;
			carry = (uint64_t) (t >> 64);
		}
		r->w[i + b->n] = carry;
	}
	r->n = a->n + b->n;
	BigNorm(r);
}

/* r <- a * v for a 64-bit v; r must not alias a. */
static void
BigMulU64(SampleBig *r, const SampleBig *a, uint64_t v)
{
	SampleBig	b;

	BigSet(&b, v);
	BigMul(r, a, &b);
}

/*
 * Bernoulli(1/k) for k >= 1: a uniform over {0..k-1} equal to 0.
 */
static inline int
SampleBernInv(DpRng *rng, uint64_t k)
{
	return dp_rng_uniform(rng, k) == 0;
}

/*
 * Bernoulli(r/d), 0 <= r < d, 64-bit: lazy digit-by-digit comparison (B1).
 * 2r is computed as r + r only when r < d - r, so nothing overflows.
 */
static int
SampleBernRatio64(DpRng *rng, uint64_t r, uint64_t d)
{
	int			i;

	for (i = 0; i < DP_RATIO_BOUND; i++)
	{
		uint64_t	rest = d - r;
		int			digit = r >= rest;
		int			u;

		r = digit ? r - rest : r + r;
		u = dp_rng_bit(rng);
		if (u != digit)
			return digit;		/* u < digit: U < r/d */
		if (r == 0)
			return 0;
	}
	dp_core_fail(DP_ERR_ITERATIONS, "Bernoulli sampler reached its bound");
}

/* Bernoulli(r/d), 0 <= r < d, 128-bit version of SampleBernRatio64. */
static int
SampleBernRatio128(DpRng *rng, u128 r, u128 d)
{
	int			i;

	for (i = 0; i < DP_RATIO_BOUND; i++)
	{
		u128		rest = d - r;
		int			digit = r >= rest;
		int			u;

		r = digit ? r - rest : r + r;
		u = dp_rng_bit(rng);
		if (u != digit)
			return digit;
		if (r == 0)
			return 0;
	}
	dp_core_fail(DP_ERR_ITERATIONS, "Bernoulli sampler reached its bound");
}

/*
 * Bernoulli(r/d), 0 <= r < d, multi-limb version of SampleBernRatio64
 * (2r < 2d always fits: d has at most 7 limbs here, see the range note).
 */
static int
SampleBernRatioBig(DpRng *rng, const SampleBig *r0, const SampleBig *d)
{
	SampleBig	r = *r0;
	int			i;

	for (i = 0; i < DP_RATIO_BOUND; i++)
	{
		int			digit;
		int			u;

		BigAdd(&r, &r, &r);
		digit = BigCmp(&r, d) >= 0;
		if (digit)
			BigSub(&r, &r, d);
		u = dp_rng_bit(rng);
		if (u != digit)
			return digit;
		if (r.n == 0)
			return 0;
	}
	dp_core_fail(DP_ERR_ITERATIONS, "Bernoulli sampler reached its bound");
}

/* Bernoulli(exp(-1)) (B2 with g = 1). */
static int
SampleBernExp1(DpRng *rng)
{
	uint64_t	k = 2;			/* the draw at K = 1 is Bernoulli(1) */

	while (SampleBernInv(rng, k))
	{
		if (++k > DP_EXPK_BOUND)
			dp_core_fail(DP_ERR_ITERATIONS, "Bernoulli sampler reached its bound");
	}
	return (int) (k & 1);
}

/* Bernoulli(exp(-r/d)), 0 <= r < d, 64-bit (B2). */
static int
SampleBernExpFrac64(DpRng *rng, uint64_t r, uint64_t d)
{
	uint64_t	k = 1;

	if (r == 0)
		return 1;
	for (;;)
	{
		if (k > 1 && !SampleBernInv(rng, k))
			break;
		if (!SampleBernRatio64(rng, r, d))
			break;
		if (++k > DP_EXPK_BOUND)
			dp_core_fail(DP_ERR_ITERATIONS, "Bernoulli sampler reached its bound");
	}
	return (int) (k & 1);
}

/* Bernoulli(exp(-r/d)), 0 <= r < d, 128-bit (B2). */
static int
SampleBernExpFrac128(DpRng *rng, u128 r, u128 d)
{
	uint64_t	k = 1;

	if (r == 0)
		return 1;
	for (;;)
	{
		if (k > 1 && !SampleBernInv(rng, k))
			break;
		if (!SampleBernRatio128(rng, r, d))
			break;
		if (++k > DP_EXPK_BOUND)
			dp_core_fail(DP_ERR_ITERATIONS, "Bernoulli sampler reached its bound");
	}
	return (int) (k & 1);
}

/* Bernoulli(exp(-r/d)), 0 <= r < d, multi-limb (B2). */
static int
SampleBernExpFracBig(DpRng *rng, const SampleBig *r, const SampleBig *d)
{
	uint64_t	k = 1;

	if (r->n == 0)
		return 1;
	for (;;)
	{
		if (k > 1 && !SampleBernInv(rng, k))
			break;
		if (!SampleBernRatioBig(rng, r, d))
			break;
		if (++k > DP_EXPK_BOUND)
			dp_core_fail(DP_ERR_ITERATIONS, "Bernoulli sampler reached its bound");
	}
	return (int) (k & 1);
}

/*
 * Bernoulli(exp(-N/D)), D >= 1 (B3): integer part by repeated subtraction
 * with an early exit, then the fractional part.  N is consumed.
 */
static int
SampleBernExpBig(DpRng *rng, SampleBig *num, const SampleBig *den)
{
	int			i;

	for (i = 0; BigCmp(num, den) >= 0; i++)
	{
		if (i == DP_EXP1_RUN_BOUND)
			dp_core_fail(DP_ERR_ITERATIONS, "Bernoulli sampler reached its bound");
		if (!SampleBernExp1(rng))
			return 0;
		BigSub(num, num, den);
	}
	return SampleBernExpFracBig(rng, num, den);
}

/* Bernoulli(exp(-num/den)) for den < 2^64: B3 in 128-bit arithmetic. */
static int
SampleBernExp128(DpRng *rng, u128 num, uint64_t den)
{
	int			i;

	for (i = 0; num >= den; i++)
	{
		if (i == DP_EXP1_RUN_BOUND)
			dp_core_fail(DP_ERR_ITERATIONS, "Bernoulli sampler reached its bound");
		if (!SampleBernExp1(rng))
			return 0;
		num -= den;
	}
	return SampleBernExpFrac64(rng, (uint64_t) num, den);
}

/* Bernoulli(exp(-num/den)) exactly (Canonne-Kamath-Steinke 2020). */
int
dp_bernoulli_exp(DpRng *rng, unsigned __int128 num, unsigned __int128 den)
{
	SampleBig	n,
				d;

	if (den == 0)
		dp_core_fail(DP_ERR_RANGE, "dp_bernoulli_exp: zero denominator");
	if ((den >> 64) == 0)
		return SampleBernExp128(rng, num, (uint64_t) den);
	BigSet(&n, num);
	BigSet(&d, den);
	return SampleBernExpBig(rng, &n, &d);
}

/*
 * Rationals
 */

/*
 * Smallest num/2^k >= x with num < 2^62, for finite x > 0; k <= 63 is taken
 * as large as possible, then common factors of two are cancelled.
 *
 * With x = f 2^e (f in [0.5, 1)) and k = min(63, 62 - e), x 2^k < 2^62 is
 * computed exactly by ldexp.  When k = 62 - e it is >= 2^61 and, having a
 * 53-bit significand, already an integer: the result equals x exactly.
 * Only when k = 63 (x < 2^-1) can ceil() round up, by less than one unit,
 * i.e. by a relative 2^-63/x (exact again for x >= 2^-11).
 */
DpRational
dp_rational_up(double x)
{
	DpRational	r;
	int			e;
	int			k;
	double		y;

	if (!isfinite(x) || !(x > 0.0))
		dp_core_fail(DP_ERR_RANGE, "dp_rational_up: value must be finite and positive");
	(void) frexp(x, &e);
	if (e > 62)
		dp_core_fail(DP_ERR_RANGE, "dp_rational_up: value too large");
	k = 62 - e < 63 ? 62 - e : 63;
	y = ceil(ldexp(x, k));
	if (!(y >= 1.0) || y >= 4611686018427387904.0)	/* 2^62 */
		dp_core_fail(DP_ERR_RANGE, "dp_rational_up: value out of range");
	r.num = (uint64_t) y;
	while (k > 0 && (r.num & 1) == 0)
	{
		r.num >>= 1;
		k--;
	}
	r.den = UINT64_C(1) << k;
	return r;
}

/* The rational as a double (for reporting only). */
double
dp_rational_to_double(DpRational r)
{
	return (double) r.num / (double) r.den;
}

/* floor(sqrt(n)) exactly, for 64-bit n. */
static uint64_t
SampleIsqrt(uint64_t n)
{
	uint64_t	r = (uint64_t) sqrt((double) n);

	/* the double estimate is off by at most a few units; correct it */
	while (r > 0 && (u128) r * r > n)
		r--;
	while ((u128) (r + 1) * (r + 1) <= n)
		r++;
	return r;
}

/* True if v is a power of two; *shift receives log2(v). */
static bool
SamplePow2(uint64_t v, int *shift)
{
	if (v == 0 || (v & (v - 1)) != 0)
		return false;
	*shift = __builtin_ctzll(v);
	return true;
}

/*
 * Discrete Laplace
 */

/* Check the Laplace scale s/u and record how to divide by u. */
static void
SampleSetupLaplace(DpSampler *s, uint64_t num, uint64_t den)
{
	int			shift = 0;

	if (num == 0 || den == 0)
		dp_core_fail(DP_ERR_RANGE, "Laplace scale must be a positive rational");
	if ((u128) num * DP_LAPLACE_X_FACTOR > (u128) DP_NOISE_LIMIT * den)
		dp_core_fail(DP_ERR_RANGE, "Laplace scale too large (noise would reach 2^62)");
	s->t.num = num;
	s->t.den = den;
	s->aux[AUX_UPOW2] = SamplePow2(den, &shift);
	s->aux[AUX_USHIFT] = (uint64_t) shift;
}

/* Prepare discrete Laplace noise with scale t. */
void
dp_sampler_laplace(DpSampler *s, DpRational t)
{
	memset(s, 0, sizeof(*s));
	s->kind = DP_NOISE_LAPLACE;
	SampleSetupLaplace(s, t.num, t.den);
}

/* One discrete Laplace draw with the scale prepared in s->t (L). */
static int64_t
SampleLaplace(const DpSampler *s, DpRng *rng)
{
	uint64_t	sn = s->t.num;
	uint64_t	ud = s->t.den;
	int			round;

	for (round = 0; round < DP_LAPLACE_BOUND; round++)
	{
		uint64_t	u0;
		uint64_t	v = 0;
		u128		x;
		uint64_t	g;

		u0 = dp_rng_uniform(rng, sn);
		if (!SampleBernExpFrac64(rng, u0, sn))
			continue;
		while (SampleBernExp1(rng))
		{
			if (++v == DP_EXP1_RUN_BOUND)
				dp_core_fail(DP_ERR_ITERATIONS, "Laplace sampler reached its bound");
		}
		x = (u128) sn * v + u0;
		if (s->aux[AUX_UPOW2])
			g = (uint64_t) (x >> s->aux[AUX_USHIFT]);
		else if ((x >> 64) == 0)
			g = (uint64_t) x / ud;
		else
			g = (uint64_t) (x / ud);
		if (dp_rng_bit(rng))
		{
			if (g == 0)
				continue;
			return -(int64_t) g;
		}
		return (int64_t) g;
	}
	dp_core_fail(DP_ERR_ITERATIONS, "Laplace sampler reached its bound");
}

/*
 * Discrete Gaussian and OSGT (R)
 */

/* Check sigma^2 = p/q and m = a/b and compute the method (B) scale. */
static void
SampleSetupQuadratic(DpSampler *s, DpNoiseKind kind, DpRational sigma2,
					 DpRational m)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	if (sigma2.num == 0 || sigma2.den == 0)
		dp_core_fail(DP_ERR_RANGE, "sigma^2 must be a positive rational");
	if (m.den == 0)
		dp_core_fail(DP_ERR_RANGE, "m must be a non-negative rational");
	s->sigma2 = sigma2;
	s->m = m;
	/* t = floor(sigma) + 1 = isqrt(floor(p/q)) + 1 <= 2^32 + 1 */
	SampleSetupLaplace(s, SampleIsqrt(sigma2.num / sigma2.den) + 1, 1);
	s->aux[AUX_METHOD] = SAMPLE_METHOD_B;
}

/* Prepare discrete Gaussian noise with variance parameter sigma2. */
void
dp_sampler_gaussian(DpSampler *s, DpRational sigma2)
{
	DpRational	zero = {0, 1};

	SampleSetupQuadratic(s, DP_NOISE_GAUSSIAN, sigma2, zero);
	SampleSetupTerms(s);
}

/* coth(x) for x > 0: the normaliser sum_k exp(-|k| 2x) of a Laplace pmf. */
static double
SampleCoth(double x)
{
	return 1.0 / tanh(x);
}

/*
 * Proposal scale of OSGT method (A): any T >= sigma^2/m keeps the sampler
 * exact (R), so we take sigma^2/m itself when it is a small fraction, and
 * otherwise round it up to a dyadic rational with about 30 significant
 * bits: the proposal then needs ~30-bit uniforms instead of 62-bit ones, at
 * a relative cost in acceptance of about 2^-30.  ta is sigma^2/m computed
 * in double precision and enlarged by 2^-40; the result is checked exactly.
 */
static DpRational
SampleScaleA(DpRational sigma2, DpRational m, double ta)
{
	u128		num = (u128) sigma2.num * m.den;
	u128		den = (u128) sigma2.den * m.num;
	u128		x = num,
				y = den;
	DpRational	tr;
	int			e,
				k;
	SampleBig	lhs,
				rhs,
				bx,
				by;

	while (y != 0)
	{
		u128		r = x % y;

		x = y;
		y = r;
	}
	num /= x;
	den /= x;
	if (num <= ((u128) 1 << 40) && den <= ((u128) 1 << 62))
	{
		tr.num = (uint64_t) num;
		tr.den = (uint64_t) den;
		return tr;
	}

	(void) frexp(ta, &e);
	k = 30 - e < 63 ? 30 - e : 63;
	if (k < 0)
		k = 0;
	tr.num = (uint64_t) ceil(ldexp(ta, k));
	if (tr.num == 0)
		tr.num = 1;
	tr.den = UINT64_C(1) << k;
	/* make sure T >= sigma^2/m exactly: tr.num q a >= p b tr.den */
	for (;;)
	{
		BigSet(&bx, (u128) tr.num * sigma2.den);
		BigMulU64(&lhs, &bx, m.num);
		BigSet(&by, (u128) sigma2.num * m.den);
		BigMulU64(&rhs, &by, tr.den);
		if (BigCmp(&lhs, &rhs) >= 0)
			break;
		tr.num++;				/* the double's error is far below 2^-40 */
	}
	while (tr.den > 1 && (tr.num & 1) == 0)
	{
		tr.num >>= 1;
		tr.den >>= 1;
	}
	return tr;
}

/*
 * Prepare discrete OSGT noise with parameters sigma2 and m (m may be 0):
 * method (B) by default, (A) when it accepts more often.
 */
void
dp_sampler_osgt(DpSampler *s, DpRational sigma2, DpRational m)
{
	SampleSetupQuadratic(s, DP_NOISE_OSGT, sigma2, m);
	if (m.num != 0)
		SampleChooseOsgtMethod(s);
	SampleSetupTerms(s);
}

/*
 * Switch a prepared OSGT sampler (m > 0) to method (A) when that accepts
 * more often.
 *
 * Both methods are exact; the acceptance rate is Z_w / (M Z_T) with Z_w
 * common to both, Z_T = coth(1/(2T)) the proposal normaliser and M the
 * envelope constant of R, so comparing M Z_T (in double precision: a speed
 * decision, not a correctness one) suffices.
 */
static void
SampleChooseOsgtMethod(DpSampler *s)
{
	DpRational	sigma2 = s->sigma2;
	DpRational	m = s->m;
	double		s2,
				md,
				tb,
				cb,
				cost_b,
				ta;

	s2 = dp_rational_to_double(sigma2);
	md = dp_rational_to_double(m);
	tb = (double) s->t.num;
	cb = s2 / tb - md;
	cost_b = (cb > 0 ? exp(cb * cb / (2.0 * s2)) : 1.0) * SampleCoth(0.5 / tb);

	/* method (A): proposal scale T >= sigma^2/m */
	ta = s2 / md * (1.0 + ldexp(1.0, -40));
	if (ta * DP_LAPLACE_X_FACTOR < ldexp(1.0, 61) && SampleCoth(0.5 / ta) < cost_b)
	{
		DpRational	tr = SampleScaleA(sigma2, m, ta);

		SampleSetupLaplace(s, tr.num, tr.den);
		s->aux[AUX_METHOD] = SAMPLE_METHOD_A;
	}
}

/*
 * The exact acceptance exponent pieces of R for the prepared sampler:
 * E = q s b, |C| with its sign, D = 2 p q s^2 b^2.
 */
static void
SampleQuadraticTerms(const DpSampler *s, SampleBig *e, SampleBig *cabs,
					 bool *cpos, SampleBig *d)
{
	uint64_t	p = s->sigma2.num,
				q = s->sigma2.den,
				a = s->m.num,
				b = s->m.den,
				sn = s->t.num,
				ud = s->t.den;
	SampleBig	x,
				y,
				z;
	int			cmp;

	/* E = q s b */
	BigSet(&x, (u128) q * sn);
	BigMulU64(e, &x, b);

	/* C = p u b - a q s */
	BigSet(&x, (u128) p * ud);
	BigMulU64(&y, &x, b);		/* p u b */
	BigSet(&x, (u128) q * sn);
	BigMulU64(&z, &x, a);		/* a q s */
	cmp = BigCmp(&y, &z);
	*cpos = cmp > 0;
	if (cmp >= 0)
		BigSub(cabs, &y, &z);
	else
		BigSub(cabs, &z, &y);

	/* D = 2 p q s^2 b^2 = 2 p q (s b)^2 */
	BigSet(&x, (u128) sn * b);
	BigMul(&y, &x, &x);
	BigSet(&x, (u128) p * q);
	BigMul(&z, &x, &y);
	BigAdd(d, &z, &z);
}

/*
 * Finish preparing a Gaussian / OSGT sampler: when E and |C| fit in 64
 * bits and D in 128 (the Gaussian with any sigma^2 from dp_rational_up,
 * OSGT with integer or short dyadic m), keep them in aux[] so that draws
 * use 128/256-bit arithmetic instead of SampleBig.
 */
static void
SampleSetupTerms(DpSampler *s)
{
	SampleBig	e,
				cabs,
				d;
	bool		cpos;

	SampleQuadraticTerms(s, &e, &cabs, &cpos, &d);
	s->aux[AUX_FLAGS] = cpos ? AUXF_CPOS : 0;
	if (e.n <= 1 && cabs.n <= 1 && d.n <= 2)
	{
		s->aux[AUX_FLAGS] |= AUXF_FAST;
		s->aux[AUX_E] = e.n > 0 ? e.w[0] : 0;
		s->aux[AUX_C] = cabs.n > 0 ? cabs.w[0] : 0;
		s->aux[AUX_DLO] = d.n > 0 ? d.w[0] : 0;
		s->aux[AUX_DHI] = d.n > 1 ? d.w[1] : 0;
	}
}

/* (*hi, *lo) <- a * b, the full 256-bit product. */
static inline void
SampleMul128(u128 a, u128 b, u128 *hi, u128 *lo)
{
	uint64_t	a0 = (uint64_t) a,
				a1 = (uint64_t) (a >> 64),
				b0 = (uint64_t) b,
				b1 = (uint64_t) (b >> 64);
	u128		p00 = (u128) a0 * b0,
				p01 = (u128) a0 * b1,
				p10 = (u128) a1 * b0,
				p11 = (u128) a1 * b1;
	u128		mid = (p00 >> 64) + (uint64_t) p01 + (uint64_t) p10;

	*lo = (u128) (uint64_t) p00 | (mid << 64);
	*hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
}

/* Acceptance test of R for |k| = y with the 64/128-bit terms in aux[]. */
static int
SampleAcceptFast(const DpSampler *s, DpRng *rng, uint64_t y)
{
	u128		ye = (u128) y * s->aux[AUX_E];	/* < 2^126: y < 2^62 */
	u128		c = s->aux[AUX_C];
	u128		d = (u128) s->aux[AUX_DHI] << 64 | s->aux[AUX_DLO];
	u128		nhi,
				nlo;
	int			i;

	if (s->aux[AUX_FLAGS] & AUXF_CPOS)
	{
		/* N = (yE - C)^2 */
		u128		a = ye >= c ? ye - c : c - ye;

		SampleMul128(a, a, &nhi, &nlo);
	}
	else
	{
		/* N = yE (yE + 2|C|), the second factor < 2^127 */
		SampleMul128(ye, ye + 2 * c, &nhi, &nlo);
	}

	/* B3 on the 256-bit N and 128-bit D */
	if (nhi == 0 && (d >> 64) == 0)
		return SampleBernExp128(rng, nlo, (uint64_t) d);
	for (i = 0; nhi != 0 || nlo >= d; i++)
	{
		if (i == DP_EXP1_RUN_BOUND)
			dp_core_fail(DP_ERR_ITERATIONS, "Bernoulli sampler reached its bound");
		if (!SampleBernExp1(rng))
			return 0;
		if (nlo < d)
			nhi--;				/* borrow */
		nlo -= d;
	}
	if ((d >> 64) == 0)
		return SampleBernExpFrac64(rng, (uint64_t) nlo, (uint64_t) d);
	return SampleBernExpFrac128(rng, nlo, d);
}

/* Acceptance test of R for |k| = y with multi-limb terms. */
static int
SampleAcceptBig(DpRng *rng, uint64_t y, const SampleBig *e,
				const SampleBig *cabs, bool cpos, const SampleBig *d)
{
	SampleBig	ye,
				a,
				num;

	BigMulU64(&ye, e, y);
	if (cpos)
	{
		/* N = (yE - C)^2 */
		if (BigCmp(&ye, cabs) >= 0)
			BigSub(&a, &ye, cabs);
		else
			BigSub(&a, cabs, &ye);
		BigMul(&num, &a, &a);
	}
	else
	{
		/* N = yE (yE + 2|C|) */
		BigAdd(&a, &ye, cabs);
		BigAdd(&a, &a, cabs);
		BigMul(&num, &ye, &a);
	}
	return SampleBernExpBig(rng, &num, d);
}

/* One discrete Gaussian / OSGT draw (R). */
static int64_t
SampleQuadratic(const DpSampler *s, DpRng *rng)
{
	SampleBig	e,
				cabs,
				d;
	bool		cpos = false;
	bool		have_big = false;
	int			round;

	for (round = 0; round < DP_REJECT_BOUND; round++)
	{
		int64_t		k = SampleLaplace(s, rng);
		uint64_t	y = k < 0 ? (uint64_t) (-k) : (uint64_t) k;
		int			accept;

		if (s->aux[AUX_FLAGS] & AUXF_FAST)
			accept = SampleAcceptFast(s, rng, y);
		else
		{
			if (!have_big)
			{
				SampleQuadraticTerms(s, &e, &cabs, &cpos, &d);
				have_big = true;
			}
			accept = SampleAcceptBig(rng, y, &e, &cabs, cpos, &d);
		}
		if (accept)
			return k;
	}
	dp_core_fail(DP_ERR_ITERATIONS, "rejection sampler reached its bound");
}

/*
 * Testing aid: drop the 64/128-bit fast path of a Gaussian / OSGT sampler,
 * so that tests can check that both arithmetic paths draw identically.
 */
void
dp_sampler_use_generic_arithmetic(DpSampler *s)
{
	s->aux[AUX_FLAGS] &= ~(uint64_t) AUXF_FAST;
}

/* OSGT method in use ('A' or 'B'); 0 for other kinds. */
char
dp_sampler_osgt_method(const DpSampler *s)
{
	if (s->kind != DP_NOISE_OSGT)
		return 0;
	return s->aux[AUX_METHOD] == SAMPLE_METHOD_A ? 'A' : 'B';
}

#ifdef DP_PG_TEST_SWITCHES
bool		dp_sampler_debug_zero = false;
#endif

/* Draw one integer noise value. */
int64_t
dp_sampler_draw(const DpSampler *s, DpRng *rng)
{
#ifdef DP_PG_TEST_SWITCHES
	if (dp_sampler_debug_zero)
		return 0;				/* dp_pg.debug_noiseless, test builds only */
#endif
	switch (s->kind)
	{
		case DP_NOISE_LAPLACE:
			return SampleLaplace(s, rng);
		case DP_NOISE_GAUSSIAN:
		case DP_NOISE_OSGT:
			return SampleQuadratic(s, rng);
	}
	dp_core_fail(DP_ERR_RANGE, "dp_sampler_draw: sampler not prepared");
}

/*
 * Power-of-two lattice for floating-point outputs (reference README §8).
 */

/* Smallest k with 2^k >= x, for finite x > 0. */
int
dp_lattice_exponent(double x)
{
	int			e;
	double		f;

	if (!isfinite(x) || !(x > 0.0))
		dp_core_fail(DP_ERR_RANGE, "dp_lattice_exponent: value must be finite and positive");
	f = frexp(x, &e);			/* x = f 2^e, f in [0.5, 1) */
	return f == 0.5 ? e - 1 : e;
}

/*
 * Round x to the nearest multiple of 2^k (ties to even) as an exact
 * integer; false if x is not finite or the multiple does not fit in int64.
 *
 * x 2^-k is exact (ldexp) unless it leaves the normal range: overflow gives
 * infinity (rejected), underflow only happens below 2^-1022, where the
 * result rounds to 0 either way.  Ties are broken explicitly rather than by
 * the current floating-point rounding mode.
 */
bool
dp_lattice_round(double x, int k, int64_t *multiple)
{
	double		y,
				a,
				fl,
				frac,
				r;

	if (!isfinite(x))
		return false;
	/* beyond +-2200 the scaling saturates; also keeps -k from overflowing */
	if (k > 2200 || k < -2200)
	{
		if (x != 0.0 && k < 0)
			return false;
		*multiple = 0;
		return true;
	}
	y = ldexp(x, -k);
	if (!isfinite(y))
		return false;
	/* round |y| half to even, then restore the sign (symmetric) */
	a = fabs(y);
	if (a >= 4503599627370496.0)	/* 2^52: already an integer */
		r = a;
	else
	{
		fl = floor(a);
		frac = a - fl;			/* exact: fl = 0, or fl <= a < 2 fl */
		if (frac > 0.5)
			r = fl + 1.0;
		else if (frac < 0.5)
			r = fl;
		else
			r = fmod(fl, 2.0) == 0.0 ? fl : fl + 1.0;
	}
	if (y < 0)
		r = -r;
	/* int64 range is [-2^63, 2^63) */
	if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0))
		return false;
	*multiple = (int64_t) r;
	return true;
}

/* multiple * 2^k as a double; false if |multiple| >= 2^53 or not exact. */
bool
dp_lattice_to_double(int64_t multiple, int k, double *out)
{
	double		v;

	if (multiple <= -(INT64_C(1) << 53) || multiple >= (INT64_C(1) << 53))
		return false;
	if (multiple == 0)
	{
		*out = 0.0;
		return true;
	}
	if (k > 2200 || k < -2200)
		return false;			/* overflow or total underflow */
	v = ldexp((double) multiple, k);
	/* overflow, or underflow into the subnormals losing bits */
	if (!isfinite(v) || ldexp(v, -k) != (double) multiple)
		return false;
	*out = v;
	return true;
}
