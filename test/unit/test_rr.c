/*
 * test_rr.c — unit tests of rr.c: the exact dyadic epsilon, the exactness
 * of the randomized-response draw by enumeration of the random bit tree,
 * the round bound under adversarial streams, and the estimators' formulas
 * (among them seed 002's worked example).
 *
 * Enumeration as in test_sample.c: the draw run on a stream that starts
 * with a prefix P either finishes within P (a leaf of probability 2^-|P|)
 * or reads past it (P is extended by 0 and by 1); down to depth D the
 * leaves give every report a lower bound L on its probability and the
 * unresolved mass U bounds the rest, so the exact probability lies in
 * [L, L + U] (integers in units of 2^-D: the bracket is exact).
 */
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include "random.h"
#include "rr.h"
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

/* Constant byte stream. */
static int
const_fill(void *arg, unsigned char *buf, size_t len)
{
	memset(buf, *(unsigned char *) arg, len);
	return 0;
}

#define ENUM_MAXD 40
#define ENUM_KEYS 8
#define ENUM_BUDGET 1000000

typedef struct Enum
{
	const DpRR *rr;
	int			x;
	int			maxd;
	unsigned char prefix[ENUM_MAXD];
	uint64_t	count[ENUM_KEYS];	/* leaf mass per report, units 2^-maxd */
	uint64_t	unresolved;
	long		nodes;
	int			depth;
} Enum;

/* Stream: the current prefix, then zeros. */
static int
enum_fill(void *arg, unsigned char *buf, size_t len)
{
	Enum	   *e = arg;

	memset(buf, 0, len);
	for (int i = 0; i < e->depth; i++)
		if (e->prefix[i])
			buf[i / 8] |= (unsigned char) (1 << (i % 8));
	return 0;
}

/* Visit the prefix of length depth. */
static void
enum_rec(Enum *e, int depth)
{
	DpRng		rng;
	volatile int failed = 0;
	volatile int result = -1;
	long		consumed;

	e->nodes++;
	e->depth = depth;
	dp_rng_init(&rng, enum_fill, e);
	if (setjmp(fail_env) == 0)
		result = dp_rr_draw(e->rr, e->x, &rng);
	else
		failed = 1;
	consumed = (long) rng.pos * 8 - rng.nbits;
	if (!failed && consumed <= depth)
	{
		e->count[result] += UINT64_C(1) << (e->maxd - depth);
		return;
	}
	if (depth == e->maxd || e->nodes >= ENUM_BUDGET)
	{
		e->unresolved += UINT64_C(1) << (e->maxd - depth);
		return;
	}
	e->prefix[depth] = 0;
	enum_rec(e, depth + 1);
	e->prefix[depth] = 1;
	enum_rec(e, depth + 1);
}

/* Enumerate the draw of report for truth x down to the deepest depth the budget allows. */
static void
enum_draw(Enum *out, const DpRR *rr, int x)
{
	static Enum e;

	dp_core_set_fail_handler(catch_fail);
	memset(out, 0, sizeof(*out));
	for (int d = 12; d <= ENUM_MAXD; d += 2)
	{
		memset(&e, 0, sizeof(e));
		e.rr = rr;
		e.x = x;
		e.maxd = d;
		enum_rec(&e, 0);
		if (e.nodes >= ENUM_BUDGET)
			break;
		*out = e;
		if (e.unresolved == 0)
			break;
	}
	dp_core_set_fail_handler(NULL);
}

/* Does p lie in [count, count + unresolved] 2^-maxd? */
static int
brackets(const Enum *e, uint64_t count, long double p)
{
	long double lo = ldexpl((long double) count, -e->maxd);
	long double hi = ldexpl((long double) count + (long double) e->unresolved, -e->maxd);

	return lo <= p + 1e-15L && p <= hi + 1e-15L;
}

/* dp_rr_prepare: epsilon exactly num / 2^shift; the limits. */
static void
test_prepare(void)
{
	double		eps[] = {1.0, 0.5, 0.1, 1.0986122886681098 /* ln 3 */ , 1e-10, 0x1p-60, 100.0, 3.75};
	char		err[256];
	DpRR		rr;

	for (size_t i = 0; i < sizeof(eps) / sizeof(eps[0]); i++)
	{
		int			ok = dp_rr_prepare(&rr, eps[i], 2, err, sizeof(err));

		tap_ok(ok && ldexp((double) rr.num, -rr.shift) == eps[i] && ((rr.num & 1) == 1 || rr.shift == 0) && rr.shift <= 127 &&
			   rr.epsilon == eps[i],
			   "epsilon %.17g is exactly %llu / 2^%d", eps[i], (unsigned long long) rr.num, rr.shift);
	}
	tap_ok(!dp_rr_prepare(&rr, 0x1p-61, 2, err, sizeof(err)) && strstr(err, "2^-60") != NULL,
		   "epsilon below 2^-60 refused: %s", err);
	tap_ok(!dp_rr_prepare(&rr, 100.5, 2, err, sizeof(err)), "epsilon above 100 refused");
	tap_ok(!dp_rr_prepare(&rr, NAN, 2, err, sizeof(err)) && !dp_rr_prepare(&rr, INFINITY, 2, err, sizeof(err)) &&
		   !dp_rr_prepare(&rr, -1.0, 2, err, sizeof(err)) && !dp_rr_prepare(&rr, 0.0, 2, err, sizeof(err)),
		   "NaN, Inf, negative and zero epsilon refused");
	tap_ok(!dp_rr_prepare(&rr, 1.0, 1, err, sizeof(err)) && !dp_rr_prepare(&rr, 1.0, DP_RR_MAX_KEYS + 1, err, sizeof(err)) &&
		   dp_rr_prepare(&rr, 1.0, DP_RR_MAX_KEYS, err, sizeof(err)),
		   "k must lie in [2, %d]", DP_RR_MAX_KEYS);
}

/* The draw's pmf, bracketed exactly, against e^eps/(e^eps + k - 1) and 1/(e^eps + k - 1). */
static void
test_draw_exact(void)
{
	struct
	{
		double		eps;
		int			k;
		int			x;
	}			cases[] = {
		{1.0986122886681098, 2, 1},	/* seed 002's "AlmostRandom": ln 3, P(truth) = 3/4 */
		{1.0, 2, 0},
		{0.5, 3, 2},
		{1.0, 4, 1},
		{0.25, 8, 7},
	};
	Enum		e;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		DpRR		rr;
		char		err[256];
		long double eps = cases[i].eps;
		int			k = cases[i].k;
		long double p = expl(eps) / (expl(eps) + k - 1);
		long double q = 1.0L / (expl(eps) + k - 1);
		int			ok = 1;

		dp_rr_prepare(&rr, cases[i].eps, k, err, sizeof(err));
		enum_draw(&e, &rr, cases[i].x);
		for (int j = 0; j < k; j++)
			ok = ok && brackets(&e, e.count[j], j == cases[i].x ? p : q);
		tap_ok(ok && ldexpl((long double) e.unresolved, -e.maxd) < 5e-2L,
			   "rr(epsilon=%.6g) over %d keys, truth %d: P(truth) in [%.9Lg, +%.2Lg] holds %.9Lg, every other report holds %.9Lg (depth %d)",
			   cases[i].eps, k, cases[i].x, ldexpl((long double) e.count[cases[i].x], -e.maxd),
			   ldexpl((long double) e.unresolved, -e.maxd), p, q, e.maxd);
	}

	/* the bracket has teeth: the probability of a slightly larger epsilon falls out */
	{
		DpRR		rr;
		char		err[256];
		long double p_wrong = expl(1.05L) / (expl(1.05L) + 1);

		dp_rr_prepare(&rr, 1.0, 2, err, sizeof(err));
		enum_draw(&e, &rr, 1);
		tap_ok(!brackets(&e, e.count[1], p_wrong),
			   "the bracket rejects e^1.05/(1 + e^1.05) for rr(epsilon=1)");
	}
}

/* Adversarial constant streams: a report, or the iteration error (never a biased report). */
static void
test_round_bound(void)
{
	unsigned char bytes[] = {0x00, 0xff};
	DpRR		rr;
	char		err[256];

	dp_rr_prepare(&rr, 1.0, 3, err, sizeof(err));
	for (size_t i = 0; i < 2; i++)
	{
		DpRng		rng;
		volatile int result = -2;

		dp_core_set_fail_handler(catch_fail);
		fail_code = 0;
		dp_rng_init(&rng, const_fill, &bytes[i]);
		if (setjmp(fail_env) == 0)
			result = dp_rr_draw(&rr, 1, &rng);
		dp_core_set_fail_handler(NULL);
		tap_ok((result >= 0 && result < 3) || (result == -2 && fail_code == DP_ERR_ITERATIONS),
			   "constant 0x%02x stream: %s, never anything else", bytes[i],
			   result >= 0 ? "a report" : "the iteration error");
	}
}

/* The estimators: unbiased at the expectation, variance and bound formulas. */
static void
test_estimators(void)
{
	double		n = 10000,
				c = 3000;

	for (int k = 2; k <= 6; k += 2)
		for (double eps = 0.25; eps <= 4.0; eps *= 2)
		{
			double		p = dp_rr_keep_probability(eps, k);
			double		q = dp_rr_other_probability(eps, k);
			double		es = c * p + (n - c) * q;
			double		var = (c * p * (1 - p) + (n - c) * q * (1 - q)) / ((p - q) * (p - q));

			tap_ok(fabs(p / q - exp(eps)) < 1e-12 * exp(eps) && fabs(p + (k - 1) * q - 1) < 1e-15 &&
				   fabs(dp_rr_estimate(es, n, eps, k) - c) < 1e-8 * n &&
				   fabs(dp_rr_variance(c, n, eps, k) - var) < 1e-10 * var &&
				   dp_rr_variance_max(n, eps, k) >= dp_rr_variance(c, n, eps, k),
				   "k = %d, epsilon %g: p/q = e^eps, estimate of E[S] = c, variance = Var(S)/(p - q)^2", k, eps);
		}
	tap_ok(fabs(dp_rr_variance(0, n, 1.0, 2) - dp_rr_variance(n, n, 1.0, 2)) < 1e-9 &&
		   fabs(dp_rr_variance(0, n, 1.0, 2) - n * exp(1.0) / pow(expm1(1.0), 2)) < 1e-9,
		   "binary randomized response: variance n e^eps/(e^eps - 1)^2 whatever the count");

	/*
	 * Seed 002's worked example: 1,000,000 patients, epsilon 1, beta 0.05.
	 * The lecture's factors: (1 + e)/(e - 1) = 2.16, 1/(1 + e) = 0.27 (it
	 * prints 0.26), and its own bound (1 + e)/(e - 1) sqrt(ln(2/beta)/(2n))
	 * = 0.0029389 of the patients (its 0.89/1000 is log10(40), not ln(40)).
	 */
	{
		double		h = dp_rr_halfwidth(1e6, 1.0, 2, 0.05);
		double		closed = (1 + exp(1.0)) / (exp(1.0) - 1) * sqrt(log(2 / 0.05) / (2 * 1e6)) * 1e6;

		tap_ok(fabs(dp_rr_scale(1.0, 2) - 2.1639534137386) < 1e-12 &&
			   fabs(dp_rr_other_probability(1.0, 2) - 0.2689414213699951) < 1e-15 &&
			   fabs(h - closed) < 1e-9 * closed && fabs(h / 1e6 - 0.0029388684) < 1e-10,
			   "seed 002's example: 1e6 patients, epsilon 1, beta 0.05: +-%.7f of the share (+-%.1f patients)",
			   h / 1e6, h);
		tap_ok(fabs(sqrt(log10(40.0) / (2 * 1e6)) * 1000 - 0.895) < 0.001,
			   "(the lecture's 0.89/1000 is sqrt(log10(40)/(2n)): %.4f/1000)", sqrt(log10(40.0) / (2 * 1e6)) * 1000);
	}

	/* with central noise: h = 0 is the plain bound; noise widens it */
	tap_ok(fabs(dp_rr_noisy_halfwidth(5000, 1.0, 2, 0, 0.05) - dp_rr_halfwidth(5000, 1.0, 2, 0.05)) < 1e-9 &&
		   dp_rr_noisy_halfwidth(5000, 1.0, 2, 10, 0.025) > dp_rr_halfwidth(5000, 1.0, 2, 0.025) + 10 &&
		   fabs(dp_rr_noise_variance_factor(1.0, 2) - (pow(exp(1.0), 2) + 1) / pow(expm1(1.0), 2)) < 1e-12,
		   "noisy report counts: the bound adds the noise's share, variance factor ((e^eps + k - 2)^2 + k - 1)/(e^eps - 1)^2");
}

int
main(void)
{
	test_prepare();
	test_draw_exact();
	test_round_bound();
	test_estimators();
	return tap_done();
}
