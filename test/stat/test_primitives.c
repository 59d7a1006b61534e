/*
 * test_primitives.c — statistical tests of the building blocks under the
 * samplers: dp_rng_uniform / dp_rng_uniform128 (chi-square over equal bins)
 * and dp_bernoulli_exp (binomial z-test, including multi-limb arguments),
 * each with a positive control that the same test must reject.
 *
 * Thresholds: chi-square by Wilson-Hilferty with z = 6.5 (exact survival
 * <= 4e-11 for every df >= 3), binomial counts by a normal approximation
 * with |z| <= 6.5 (P = 8e-11; the counts here have expectation >= 10^5, so
 * the skewness correction is negligible): a correct primitive fails any one
 * test with probability below 1e-9.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "random.h"
#include "sample.h"
#include "tap.h"

#define N_DRAWS 2000000
#define STAT_Z 6.5
#define NBINS 1000

typedef unsigned __int128 u128;

/* Wilson-Hilferty upper quantile at z = STAT_Z. */
static double
chi2_threshold(int df)
{
	double		a = 2.0 / (9.0 * df);
	double		b = 1.0 - a + STAT_Z * sqrt(a);

	return df * b * b * b;
}

/* Chi-square statistic of equal-probability bins. */
static double
chi2_equal(const long *cnt, int bins, long n)
{
	double		e = (double) n / bins;
	double		c = 0;
	int			i;

	for (i = 0; i < bins; i++)
		c += (cnt[i] - e) * (cnt[i] - e) / e;
	return c;
}

/* How a uniform over [0, bins * width) is drawn. */
typedef enum UniformKind
{
	UNI_64,						/* dp_rng_uniform */
	UNI_128,					/* dp_rng_uniform128 */
	UNI_MODULO					/* control: u64 % n */
} UniformKind;

/* Chi-square of draws over [0, bins * width), binned by v / width. */
static int
uniform_rejected(const char *name, DpRng *rng, UniformKind kind, int bins, u128 width)
{
	static long cnt[NBINS];
	u128		n = (u128) bins * width;
	long		i;
	double		c;

	memset(cnt, 0, sizeof(cnt));
	for (i = 0; i < N_DRAWS; i++)
	{
		u128		v;

		if (kind == UNI_64)
			v = dp_rng_uniform(rng, (uint64_t) n);
		else if (kind == UNI_128)
			v = dp_rng_uniform128(rng, n);
		else
			v = dp_rng_u64(rng) % (uint64_t) n;
		cnt[(int) (v / width)]++;
	}
	c = chi2_equal(cnt, bins, N_DRAWS);
	tap_diag("%s: chi2 = %.1f, df = %d, threshold %.1f", name, c, bins - 1, chi2_threshold(bins - 1));
	return c > chi2_threshold(bins - 1);
}

/* Uniform draws below and above 2^64, and the modulo-bias control. */
static void
test_uniform(DpRng *rng)
{
	struct
	{
		const char *name;
		UniformKind kind;
		int			bins;
		u128		width;
	}			cases[] = {
		{"uniform(3)", UNI_64, 3, 1},
		{"uniform(5)", UNI_64, 5, 1},
		{"uniform(10)", UNI_64, 10, 1},
		{"uniform(1000)", UNI_64, 1000, 1},
		{"uniform(1000 * (2^53 + 3))", UNI_64, 1000, ((u128) 1 << 53) + 3},
		{"uniform(3 * 2^62)", UNI_64, 3, (u128) 1 << 62},
		{"uniform128(1000 * (2^100 + 12345))", UNI_128, 1000, ((u128) 1 << 100) + 12345},
		{"uniform128(3 * 2^64)", UNI_128, 3, (u128) 1 << 64},
	};
	size_t		i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tap_ok(!uniform_rejected(cases[i].name, rng, cases[i].kind, cases[i].bins, cases[i].width),
			   "%s: chi-square over %d equal bins", cases[i].name, cases[i].bins);

	tap_ok(uniform_rejected("control: u64 % (3 * 2^62)", rng, UNI_MODULO, 3, (u128) 1 << 62),
		   "control: modulo reduction (biased) rejected by the same chi-square");
}

/* Count ones of dp_bernoulli_exp(num/den) and z-test against p. */
static int
bernoulli_rejected(const char *name, DpRng *rng, u128 num, u128 den, long double p)
{
	long		ones = 0;
	long		i;
	long double z;

	for (i = 0; i < N_DRAWS; i++)
		ones += dp_bernoulli_exp(rng, num, den);
	z = (ones - N_DRAWS * p) / sqrtl(N_DRAWS * p * (1 - p));
	tap_diag("%s: P(1) expected %.8Lf, observed %.8Lf (z = %.2Lf)", name, p,
			 (long double) ones / N_DRAWS, z);
	return fabsl(z) > STAT_Z;
}

/* dp_bernoulli_exp over the 64-, 128-bit and multi-limb paths, and a control. */
static void
test_bernoulli(DpRng *rng)
{
	u128		two64 = (u128) 1 << 64;
	struct
	{
		const char *name;
		u128		num;
		u128		den;
	}			cases[] = {
		{"exp(-1/3)", 1, 3},
		{"exp(-1)", 1, 1},
		{"exp(-7/3)", 7, 3},
		{"exp(-(2^62-1)/2^62)", ((u128) 1 << 62) - 1, (u128) 1 << 62},
		{"exp(-(2^65+5)/(2^64-1))", ((u128) 2 << 64) + 5, UINT64_MAX},
		{"exp(-(5*2^70+3)/(7*2^69))", 5 * (two64 << 6) + 3, 7 * (two64 << 5)},
		{"exp(-(2^127-1)/(2^125+7))", ~(u128) 0 >> 1, ((u128) 1 << 125) + 7},
		{"exp(-(2^100+1)/(3*2^98))", ((u128) 1 << 100) + 1, (u128) 3 << 98},
	};
	size_t		i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		long double g = (long double) cases[i].num / (long double) cases[i].den;

		tap_ok(!bernoulli_rejected(cases[i].name, rng, cases[i].num, cases[i].den, expl(-g)),
			   "dp_bernoulli_exp %s: frequency of 1", cases[i].name);
	}

	/* control: an exponent 1% too large must be caught */
	tap_ok(bernoulli_rejected("control: exp(-1.01) tested as exp(-1)", rng, 101, 100, expl(-1.0L)),
		   "control: Bernoulli(exp(-1.01)) rejected as Bernoulli(exp(-1))");
}

/* Statistical tests of the uniform and Bernoulli primitives. */
int
main(void)
{
	DpRng		rng;

	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	test_uniform(&rng);
	test_bernoulli(&rng);
	return tap_done();
}
