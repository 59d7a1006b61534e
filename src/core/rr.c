/*
 * rr.c — randomized response, drawn exactly, and its unbiased estimates.
 *
 * Plain C (no PostgreSQL header).  Seed 002 (the mechanisms lecture, its
 * "Randomized Response Mechanism" section): each individual reports the
 * truth with probability e^eps/(1 + e^eps) and the other answer otherwise;
 * the ratio of the report's probabilities under two true answers is at
 * most e^eps, so the report is eps-DP for that answer ("locally": whoever
 * holds the report, the database included).  k-ary randomized response over
 * k values keeps the truth with p = e^eps/(e^eps + k - 1) and reports each
 * other value with q = 1/(e^eps + k - 1); again p/q = e^eps.
 *
 * Exact draws
 * -----------
 * e^eps is irrational for every rational eps > 0, so no comparison of a
 * uniform integer with a threshold can draw p exactly.  The draw never
 * computes e^eps: it uses Bernoulli(exp(-eps)) coins, which sample.c draws
 * exactly for a rational eps (Canonne-Kamath-Steinke 2020, Alg. 1: uniform
 * integers and comparisons only), and eps is a double, i.e. exactly the
 * dyadic rational num/2^shift (dp_rr_prepare), used as it is.
 *
 * One round: J uniform on {0 .. k-1} (exact, random.c); J = 0 reports the
 * truth x; otherwise a coin C ~ Bernoulli(exp(-eps)), and C = 1 reports
 * (x + J) mod k, C = 0 starts a new round.  A round reports x with
 * probability 1/k and each other value (one J each) with e^-eps/k, and
 * rounds are independent, so the report is x with probability
 *     (1/k) / (1/k + (k-1) e^-eps/k) = e^eps/(e^eps + k - 1) = p
 * and each other value with e^-eps/(1 + (k-1) e^-eps) = q, exactly (the
 * "two-coin" Bernoulli factory).  k = 2 is binary randomized response:
 * J is a fair bit, J = 1 flips with probability e^-eps.
 *
 * Iteration bound: a round ends with probability at least 1/k (J = 0), so
 * 72 k rounds all continue with probability at most (1 - 1/k)^(72 k) <
 * e^-72 < 2^-103; reaching the bound is dp_core_fail (an ERROR, never a
 * biased report).  The expected number of rounds is
 * k/(1 + (k - 1) e^-eps): 1.58 at k = 2, eps = 1; 130 at k = 1000,
 * eps = 5.
 *
 * The rounds consume random bits in a way that does not depend on x (J and
 * C are drawn alike for every x; only the reported index is x + J), so the
 * work of a draw says nothing about the truth; the pair (work, report) says
 * whether the truth was kept, like the report itself with probability p.
 * The draw's timing is visible to the writing session only.
 *
 * Estimates
 * ---------
 * Of n rows of which c truly hold value v, S_v report v, with
 * E S_v = c p + (n - c) q, so (S_v - n q)/(p - q) is unbiased for c; with
 * p - q = (e^eps - 1)/(e^eps + k - 1) and n q (e^eps + k - 1) = n:
 *     c^ = ((e^eps + k - 1) S_v - n)/(e^eps - 1).
 * Its variance is scale^2 Var(S_v), scale = (e^eps + k - 1)/(e^eps - 1),
 * Var(S_v) = c p(1 - p) + (n - c) q(1 - q):
 *     Var(c^) = (c e^eps (k - 1) + (n - c)(e^eps + k - 2))/(e^eps - 1)^2,
 * n e^eps/(e^eps - 1)^2 at k = 2 for every c.  S_v is a sum of n independent
 * indicators, so Hoeffding's inequality gives the lecture's bound
 * P(|S_v - E S_v| >= t) <= 2 exp(-2 t^2/n), i.e. with probability 1 - beta
 * |c^ - c| <= scale sqrt(n ln(2/beta)/2).
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include "rr.h"

#include <math.h>
#include <stdio.h>

#include "mechanism.h"
#include "sample.h"

/* Rounds per key before dp_core_fail: e^-72 < 2^-103 (see above). */
#define DP_RR_ROUNDS_PER_KEY 72

/* Prepare randomized response over k values at epsilon; false with a message on error. */
bool
dp_rr_prepare(DpRR *rr, double epsilon, int k, char *err, size_t errlen)
{
	double		f;
	int			e;
	uint64_t	num;
	int			shift;

	if (k < 2 || k > DP_RR_MAX_KEYS)
	{
		snprintf(err, errlen, "randomized response needs between 2 and %d values, got %d", DP_RR_MAX_KEYS, k);
		return false;
	}
	if (isnan(epsilon) || !(epsilon >= DP_RR_MIN_EPSILON) || !(epsilon <= DP_MAX_EPSILON))
	{
		snprintf(err, errlen, "epsilon of randomized response must be a finite number at least 2^-60 and at most %g, got %g",
				 DP_MAX_EPSILON, epsilon);
		return false;
	}
	/* epsilon = f 2^e, f in [0.5, 1) with 53 significant bits: num / 2^(53 - e) exactly */
	f = frexp(epsilon, &e);
	num = (uint64_t) ldexp(f, 53);
	shift = 53 - e;
	while (shift > 0 && (num & 1) == 0)
	{
		num >>= 1;
		shift--;
	}
	if (shift < 0 || shift > 127 || ldexp((double) num, -shift) != epsilon)
	{
		snprintf(err, errlen, "epsilon %g has no exact dyadic form for randomized response", epsilon);
		return false;
	}
	rr->k = k;
	rr->epsilon = epsilon;
	rr->num = num;
	rr->shift = shift;
	return true;
}

/* The reported index for the true index x (see the file comment). */
int
dp_rr_draw(const DpRR *rr, int x, DpRng *rng)
{
	long		bound = (long) DP_RR_ROUNDS_PER_KEY * rr->k;
	unsigned __int128 den = (unsigned __int128) 1 << rr->shift;

	if (x < 0 || x >= rr->k)
		dp_core_fail(DP_ERR_RANGE, "dp_rr_draw: value index out of range");
	for (long round = 0; round < bound; round++)
	{
		uint64_t	j = dp_rng_uniform(rng, (uint64_t) rr->k);

		if (j == 0)
			return x;
		if (dp_bernoulli_exp(rng, rr->num, den))
			return (int) (((uint64_t) x + j) % (uint64_t) rr->k);
	}
	dp_core_fail(DP_ERR_ITERATIONS, "randomized response reached its round bound");
}

/* p = e^eps/(e^eps + k - 1). */
double
dp_rr_keep_probability(double epsilon, int k)
{
	/* 1/(1 + (k - 1) e^-eps): no overflow for large eps */
	return 1.0 / (1.0 + (k - 1) * exp(-epsilon));
}

/* q = 1/(e^eps + k - 1). */
double
dp_rr_other_probability(double epsilon, int k)
{
	return exp(-epsilon) / (1.0 + (k - 1) * exp(-epsilon));
}

/* scale = (e^eps + k - 1)/(e^eps - 1). */
double
dp_rr_scale(double epsilon, int k)
{
	return (expm1(epsilon) + k) / expm1(epsilon);
}

/* ((e^eps + k - 1) reported - n)/(e^eps - 1). */
double
dp_rr_estimate(double reported, double n, double epsilon, int k)
{
	double		em1 = expm1(epsilon);

	return ((em1 + k) * reported - n) / em1;
}

/* (c e^eps (k - 1) + (n - c)(e^eps + k - 2))/(e^eps - 1)^2. */
double
dp_rr_variance(double count, double n, double epsilon, int k)
{
	double		em1 = expm1(epsilon);

	return (count * (em1 + 1.0) * (k - 1) + (n - count) * (em1 + k - 1)) / (em1 * em1);
}

/* The variance at count = n: e^eps (k - 1) >= e^eps + k - 2 for k >= 2. */
double
dp_rr_variance_max(double n, double epsilon, int k)
{
	return dp_rr_variance(n, n, epsilon, k);
}

/* scale sqrt(n ln(2/beta)/2) (Hoeffding). */
double
dp_rr_halfwidth(double n, double epsilon, int k, double beta)
{
	if (!(n > 0.0))
		return 0.0;
	return dp_rr_scale(epsilon, k) * sqrt(n * log(2.0 / beta) / 2.0);
}

/* scale sqrt((n~ + k h) ln(2/beta_r)/2) + (e^eps + 2k - 3) h/(e^eps - 1) (rr.h). */
double
dp_rr_noisy_halfwidth(double n_noisy, double epsilon, int k, double h, double beta_r)
{
	double		n_up = n_noisy + k * h;
	double		em1 = expm1(epsilon);

	return dp_rr_halfwidth(n_up, epsilon, k, beta_r) + (em1 + 2.0 * k - 2.0) * h / em1;
}

/* ((e^eps + k - 2)^2 + k - 1)/(e^eps - 1)^2. */
double
dp_rr_noise_variance_factor(double epsilon, int k)
{
	double		em1 = expm1(epsilon);
	double		a = em1 + k - 1.0;

	return (a * a + (k - 1)) / (em1 * em1);
}
