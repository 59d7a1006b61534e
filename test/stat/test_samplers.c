/*
 * test_samplers.c — statistical tests of the discrete Laplace, Gaussian and
 * OSGT samplers against their exact pmfs, with positive controls.
 *
 * For every configuration we draw N samples from the real sampler (OpenSSL
 * randomness) and run five tests:
 *   chi-square goodness of fit (single-value bins with expected count >= 20,
 *     the two tails pooled into one bin each, also >= 20),
 *   tail frequency (P(|K| >= tau) with tau the first point where that
 *     probability is <= 1%),
 *   symmetry (sign test among the nonzero draws),
 *   mean (= 0) and variance (= the exact second moment).
 * Thresholds are set so that a correct sampler fails any one test with
 * probability <= 1e-9 (see STAT_Z and chi2_threshold).
 *
 * Positive controls are broken samplers that the same tests must reject:
 * naive floating-point inverse-CDF Laplace / Box-Muller Gaussian rounded to
 * integers, exact noise at half the scale, a sign bias P(+) = 0.51, and a
 * Laplace with a thinned tail.  A control "passes" when the designated test
 * fails.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "random.h"
#include "sample.h"
#include "stat.h"
#include "tap.h"

#define N_DRAWS 8000000			/* per real configuration */
#define N_CONTROL 1000000		/* per positive control */

/* Exact symmetric pmf on [-R, R] (the mass beyond R is below 1e-40). */
typedef struct Pmf
{
	int			R;
	long double *p;				/* p[k + R] */
	long double var;
	long double mu4;
} Pmf;

typedef enum Family
{
	FAM_LAPLACE,
	FAM_GAUSS,
	FAM_OSGT
} Family;

/* log of the unnormalised weight at |k| = a. */
static long double
log_weight(Family f, long double t, long double s2, long double m, long double a)
{
	if (f == FAM_LAPLACE)
		return -a / t;
	return -a * a / (2 * s2) - m * a / s2;
}

/* Build the exact pmf of a family with the given (exact) parameters. */
static Pmf
pmf_build(Family f, long double t, long double s2, long double m)
{
	Pmf			pm;
	int			R = 0;
	int			k;
	long double z = 0;

	while (log_weight(f, t, s2, m, R) > -95.0L)	/* e^-95 < 1e-41 */
		R++;
	pm.R = R;
	pm.p = calloc(2 * (size_t) R + 1, sizeof(long double));
	for (k = -R; k <= R; k++)
	{
		pm.p[k + R] = expl(log_weight(f, t, s2, m, fabsl((long double) k)));
		z += pm.p[k + R];
	}
	pm.var = 0;
	pm.mu4 = 0;
	for (k = -R; k <= R; k++)
	{
		long double kk = (long double) k * k;

		pm.p[k + R] /= z;
		pm.var += kk * pm.p[k + R];
		pm.mu4 += kk * kk * pm.p[k + R];
	}
	return pm;
}

/* Exact pmf of a prepared sampler, from its exact rational parameters. */
static Pmf
pmf_of(const DpSampler *s)
{
	long double s2 = 0,
				m = 0;

	if (s->kind == DP_NOISE_LAPLACE)
		return pmf_build(FAM_LAPLACE, (long double) s->t.num / s->t.den, 0, 0);
	s2 = (long double) s->sigma2.num / s->sigma2.den;
	m = (long double) s->m.num / s->m.den;
	return pmf_build(s->kind == DP_NOISE_GAUSSIAN ? FAM_GAUSS : FAM_OSGT, 0, s2, m);
}

/* A noise source under test. */
typedef struct Source
{
	int64_t		(*draw) (struct Source *src, DpRng *rng);
	DpSampler	s;				/* the exact sampler used or wrapped */
	double		param;			/* scale of the naive float controls */
	long		tau;			/* thinning threshold for the tail control */
} Source;

/* The real sampler. */
static int64_t
draw_exact(Source *src, DpRng *rng)
{
	return dp_sampler_draw(&src->s, rng);
}

/* Uniform double in (0, 1] from 53 random bits. */
static double
unit_double(DpRng *rng)
{
	return ((double) (dp_rng_u64(rng) >> 11) + 1.0) / 9007199254740992.0;
}

/* Control: continuous Laplace by -b ln U in doubles, rounded to an integer. */
static int64_t
draw_naive_laplace(Source *src, DpRng *rng)
{
	double		x = -src->param * log(unit_double(rng));

	return (int64_t) rint(dp_rng_bit(rng) ? -x : x);
}

/* Control: continuous Gaussian by Box-Muller in doubles, rounded. */
static int64_t
draw_naive_gauss(Source *src, DpRng *rng)
{
	double		u1 = unit_double(rng),
				u2 = unit_double(rng);

	return (int64_t) rint(src->param * sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2));
}

/* Control: exact magnitude, sign positive with probability 0.51. */
static int64_t
draw_sign_biased(Source *src, DpRng *rng)
{
	int64_t		k = dp_sampler_draw(&src->s, rng);

	if (k < 0)
		k = -k;
	return dp_rng_uniform(rng, 100) < 51 ? k : -k;
}

/* Control: exact sampler whose draws with |k| >= tau are dropped 20% of the time. */
static int64_t
draw_thinned(Source *src, DpRng *rng)
{
	for (;;)
	{
		int64_t		k = dp_sampler_draw(&src->s, rng);

		if ((k >= src->tau || k <= -src->tau) && dp_rng_uniform(rng, 5) == 0)
			continue;
		return k;
	}
}

/* Which tests rejected. */
typedef struct Verdict
{
	int			chi2,
				tail,
				sign,
				mean,
				var;
} Verdict;

/*
 * Draw n values from src and test them against pm; diagnostics go to the
 * TAP stream.
 */
static Verdict
run_tests(const char *name, Source *src, const Pmf *pm, long n, DpRng *rng)
{
	int			R = pm->R;
	long	   *cnt = calloc(2 * (size_t) R + 1, sizeof(long));
	long		below = 0,
				above = 0,
				pos = 0,
				neg = 0;
	long double sum = 0,
				sum2 = 0;
	long		i;
	int			kmax,
				k,
				df;
	long double tailp,
				chi2 = 0,
				z;
	long		tau,
				tailcount = 0;
	Verdict		v = {0, 0, 0, 0, 0};

	for (i = 0; i < n; i++)
	{
		int64_t		x = src->draw(src, rng);

		if (x < -R)
			below++;
		else if (x > R)
			above++;
		else
			cnt[x + R]++;
		pos += x > 0;
		neg += x < 0;
		sum += (long double) x;
		sum2 += (long double) x * x;
	}

	/*
	 * Chi-square bins: every k with |k| <= kmax, where kmax is the largest
	 * value with n p(kmax) >= 20 and n P(K > kmax) >= 20; each tail beyond
	 * kmax is one pooled bin.
	 */
	kmax = 0;
	for (k = 0; k < R; k++)
	{
		long double t = 0;
		int			j;

		for (j = k + 1; j <= R; j++)
			t += pm->p[j + R];
		if (n * pm->p[k + R] >= 20 && n * t >= 20)
			kmax = k;
		else
			break;
	}
	tailp = 0;
	for (k = kmax + 1; k <= R; k++)
		tailp += pm->p[k + R];
	{
		long		lo = below,
					hi = above;
		long double e = n * tailp;

		for (k = kmax + 1; k <= R; k++)
		{
			lo += cnt[-k + R];
			hi += cnt[k + R];
		}
		chi2 += (lo - e) * (lo - e) / e + (hi - e) * (hi - e) / e;
	}
	for (k = -kmax; k <= kmax; k++)
	{
		long double e = n * pm->p[k + R];

		chi2 += (cnt[k + R] - e) * (cnt[k + R] - e) / e;
	}
	df = 2 * kmax + 2;			/* 2 kmax + 3 bins, one constraint */
	v.chi2 = chi2 > chi2_threshold(df);
	tap_diag("%s: chi2 = %.1Lf, df = %d, threshold %.1f", name, chi2, df, chi2_threshold(df));

	/* tail frequency at the first tau with P(|K| >= tau) <= 1% */
	tailp = 1;
	for (tau = 1; tau <= R; tau++)
	{
		tailp -= (tau == 1 ? pm->p[R] : 0) + (tau > 1 ? 2 * pm->p[tau - 1 + R] : 0);
		if (tailp <= 0.01L)
			break;
	}
	tailcount = below + above;
	for (k = (int) tau; k <= R; k++)
		tailcount += cnt[k + R] + cnt[-k + R];
	z = (tailcount - n * tailp) / sqrtl(n * tailp * (1 - tailp));
	v.tail = fabsl(z) > STAT_Z;
	tap_diag("%s: P(|K| >= %ld) expected %.6Lg, observed %.6Lg (z = %.2Lf)",
			 name, tau, tailp, (long double) tailcount / n, z);

	/* symmetry: positives among nonzero draws ~ Binomial(., 1/2) */
	z = (pos - neg) / sqrtl((long double) (pos + neg));
	v.sign = fabsl(z) > STAT_Z;
	tap_diag("%s: %ld positive, %ld negative (z = %.2Lf)", name, pos, neg, z);

	/* mean and variance */
	z = sum / sqrtl(n * pm->var);
	v.mean = fabsl(z) > STAT_Z;
	tap_diag("%s: mean %.6Lg (z = %.2Lf)", name, sum / n, z);
	z = (sum2 / n - pm->var) / sqrtl((pm->mu4 - pm->var * pm->var) / n);
	v.var = fabsl(z) > STAT_Z;
	tap_diag("%s: second moment %.8Lg, exact %.8Lg (z = %.2Lf)", name, sum2 / n, pm->var, z);

	free(cnt);
	return v;
}

/* Run all five tests on a real sampler; each must pass. */
static void
check_real(const char *name, const DpSampler *s, DpRng *rng)
{
	Source		src;
	Pmf			pm = pmf_of(s);
	Verdict		v;

	memset(&src, 0, sizeof(src));
	src.draw = draw_exact;
	src.s = *s;
	v = run_tests(name, &src, &pm, N_DRAWS, rng);
	tap_ok(!v.chi2, "%s: chi-square goodness of fit", name);
	tap_ok(!v.tail, "%s: tail frequency", name);
	tap_ok(!v.sign, "%s: symmetry", name);
	tap_ok(!v.mean, "%s: mean", name);
	tap_ok(!v.var, "%s: variance", name);
	free(pm.p);
}

/* Run a positive control against the target pmf; return its verdict. */
static Verdict
run_control(const char *name, Source *src, const DpSampler *target, DpRng *rng)
{
	Pmf			pm = pmf_of(target);
	Verdict		v = run_tests(name, src, &pm, N_CONTROL, rng);

	free(pm.p);
	return v;
}

/* The brief's grid of real samplers: every test must pass. */
static void
real_samplers(DpRng *rng)
{
	double		lap_t[] = {0.5, 1, 3.7, 100};
	double		gauss_sigma[] = {0.8, 3, 50};
	/* the brief's grid, then two whose m forces the multi-limb arithmetic */
	double		osgt[][2] = {{6.3245553, 3}, {2, 1}, {4, 10}, {5, 0.5}, {10, 0},
	{3.3, 0.3}, {2.5, 7.7}};
	size_t		i;
	char		name[128];
	DpSampler	s;

	for (i = 0; i < sizeof(lap_t) / sizeof(lap_t[0]); i++)
	{
		snprintf(name, sizeof(name), "Laplace t=%g", lap_t[i]);
		dp_sampler_laplace(&s, dp_rational_up(lap_t[i]));
		check_real(name, &s, rng);
	}
	for (i = 0; i < sizeof(gauss_sigma) / sizeof(gauss_sigma[0]); i++)
	{
		snprintf(name, sizeof(name), "Gaussian sigma=%g", gauss_sigma[i]);
		dp_sampler_gaussian(&s, dp_rational_up(gauss_sigma[i] * gauss_sigma[i]));
		check_real(name, &s, rng);
	}
	/* sigma^2 ~ 4 with 64-bit numerator and denominator: multi-limb path */
	dp_sampler_gaussian(&s, (DpRational) {UINT64_C(18446744073709551557), UINT64_C(4611686018427387847)});
	check_real("Gaussian sigma^2=p/q (p, q ~ 2^64, 2^62)", &s, rng);
	for (i = 0; i < sizeof(osgt) / sizeof(osgt[0]); i++)
	{
		DpRational	m = {0, 1};

		if (osgt[i][1] > 0)
			m = dp_rational_up(osgt[i][1]);
		dp_sampler_osgt(&s, dp_rational_up(osgt[i][0] * osgt[i][0]), m);
		snprintf(name, sizeof(name), "OSGT sigma=%g m=%g (method %s)", osgt[i][0], osgt[i][1],
				 dp_sampler_osgt_method(&s) == 'A' ? "A" : "B");
		check_real(name, &s, rng);
	}
}

/* Broken samplers: each must be rejected by its designated test. */
static void
positive_controls(DpRng *rng)
{
	Source		src;
	DpSampler	target;
	Verdict		v;

	memset(&src, 0, sizeof(src));

	/* Laplace */
	dp_sampler_laplace(&target, dp_rational_up(0.5));
	src.draw = draw_naive_laplace;
	src.param = 0.5;
	v = run_control("control: float -b ln U Laplace, t=0.5", &src, &target, rng);
	tap_ok(v.chi2, "control: naive float Laplace (t=0.5) rejected by chi-square");

	dp_sampler_laplace(&target, dp_rational_up(3.7));
	src.draw = draw_exact;
	dp_sampler_laplace(&src.s, dp_rational_up(3.7 / 2));
	v = run_control("control: Laplace at half scale", &src, &target, rng);
	tap_ok(v.chi2 && v.var, "control: Laplace at half scale rejected by chi-square and variance");

	src.draw = draw_sign_biased;
	src.s = target;
	v = run_control("control: Laplace with P(+) = 0.51", &src, &target, rng);
	tap_ok(v.sign, "control: sign-biased Laplace rejected by the symmetry test");

	dp_sampler_laplace(&target, dp_rational_up(100));
	src.draw = draw_thinned;
	src.s = target;
	src.tau = 391;				/* P(|K| >= 391) = 2%; thin 20% of that tail */
	v = run_control("control: Laplace t=100 with thinned tail", &src, &target, rng);
	tap_ok(v.tail, "control: Laplace with a thinned tail rejected by the tail test");

	/* Gaussian */
	dp_sampler_gaussian(&target, dp_rational_up(0.8 * 0.8));
	src.draw = draw_naive_gauss;
	src.param = 0.8;
	v = run_control("control: Box-Muller rounded, sigma=0.8", &src, &target, rng);
	tap_ok(v.chi2, "control: naive float Gaussian (sigma=0.8) rejected by chi-square");

	dp_sampler_gaussian(&target, dp_rational_up(9.0));
	src.draw = draw_exact;
	dp_sampler_gaussian(&src.s, dp_rational_up(9.0 / 4));
	v = run_control("control: Gaussian at half scale", &src, &target, rng);
	tap_ok(v.chi2 && v.var, "control: Gaussian at half scale rejected by chi-square and variance");

	src.draw = draw_sign_biased;
	src.s = target;
	v = run_control("control: Gaussian with P(+) = 0.51", &src, &target, rng);
	tap_ok(v.sign, "control: sign-biased Gaussian rejected by the symmetry test");

	/* OSGT */
	dp_sampler_osgt(&target, dp_rational_up(4.0), dp_rational_up(1.0));
	src.draw = draw_exact;
	dp_sampler_osgt(&src.s, dp_rational_up(1.0), dp_rational_up(0.5));
	v = run_control("control: OSGT at half scale", &src, &target, rng);
	tap_ok(v.chi2 && v.var, "control: OSGT at half scale rejected by chi-square and variance");

	src.draw = draw_sign_biased;
	src.s = target;
	v = run_control("control: OSGT with P(+) = 0.51", &src, &target, rng);
	tap_ok(v.sign, "control: sign-biased OSGT rejected by the symmetry test");

	/* OSGT with the Gaussian's m = 0 parameters must not pass as OSGT */
	dp_sampler_osgt(&target, dp_rational_up(40.0), dp_rational_up(3.0));
	src.draw = draw_exact;
	dp_sampler_gaussian(&src.s, dp_rational_up(40.0));
	v = run_control("control: Gaussian sigma^2=40 tested as OSGT m=3", &src, &target, rng);
	tap_ok(v.chi2 && v.var, "control: m ignored (plain Gaussian) rejected by chi-square and variance");
}

/* Statistical tests of the samplers, then the positive controls. */
int
main(void)
{
	DpRng		rng;

	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	real_samplers(&rng);
	positive_controls(&rng);
	return tap_done();
}
