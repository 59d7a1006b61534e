/*
 * quantile.c — the exponential mechanism for quantiles (see quantile.h).
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include <math.h>

#include "quantile.h"

/* floor(q n) exactly: q = m 2^e with an integer m < 2^53. */
uint64_t
dp_quantile_rank(double q, uint64_t n)
{
	int			e;
	double		f;
	uint64_t	m;
	unsigned __int128 p;

	if (!(q > 0.0))
		return 0;
	if (q >= 1.0)
		return n;
	f = frexp(q, &e);			/* q = f 2^e, f in [0.5, 1), e <= 0 */
	m = (uint64_t) ldexp(f, 53);	/* exact: q = m 2^(e - 53) */
	p = (unsigned __int128) m * n;
	if (53 - e >= 128)
		return 0;
	return (uint64_t) (p >> (53 - e));
}

/* The margin k = ceil((ln(N + 1) + 4) / gamma), at most 1e18. */
static uint64_t
QuantileMargin(DpRational gamma, int ncells)
{
	double		g = (double) gamma.num / (double) gamma.den;
	double		kd = ceil((log((double) ncells + 1.0) + 4.0) / g);

	return kd >= 1e18 ? (uint64_t) 1e18 : (uint64_t) kd;
}

/* See quantile.h. */
uint64_t
dp_quantile_target(double q, uint64_t n, DpRational gamma, int ncells)
{
	uint64_t	k = QuantileMargin(gamma, ncells);
	uint64_t	lo;
	uint64_t	r;

	if (q == 0.0 || q == 1.0)
	{
		if (n / 20 > k)
			k = n / 20;
		lo = k < n / 4 ? k : n / 4;
		return q == 0.0 ? lo : n - lo;
	}
	lo = k < n / 4 ? k : n / 4;
	r = dp_quantile_rank(q, n);
	if (r < lo)
		r = lo;
	if (r > n - lo)
		r = n - lo;
	return r;
}

/* See quantile.h. */
double
dp_quantile_rank_halfwidth(DpRational gamma, int ncells, double level)
{
	long double g = (long double) gamma.num / (long double) gamma.den;
	long double miss = 1.0L - (long double) level;
	double		t;

	if (!(level > 0.0 && level < 1.0) || ncells < 1 || g <= 0.0L)
		return NAN;
	/* N e^{-g (t + 1)} <= miss / (1 - miss), t + 1 >= (ln N + ln((1 - miss) / miss)) / g */
	t = (double) ceill((logl((long double) ncells) + logl((1.0L - miss) / miss)) / g) - 1.0;
	if (t < 0.0)
		t = 0.0;
	/* a t on the boundary that rounding may have put one too low: never narrower than the bound */
	for (;;)
	{
		long double w = (long double) ncells * expl(-g * ((long double) t + 1.0L));

		if (w / (1.0L + w) <= miss * (1.0L - 1e-12L))
			break;
		t += 1.0;
	}
	return t;
}

/* epsilon / (2 w) rounded down to num / 2^k. */
bool
dp_quantile_gamma(double epsilon, uint64_t w, DpRational *gamma)
{
	double		g;
	double		f;
	int			e;
	int			k;

	if (!(epsilon > 0.0) || isinf(epsilon) || w == 0)
		return false;
	g = epsilon / 2.0 / (double) w;
	/* the division rounds to nearest: step down one ulp so g <= epsilon / (2 w) */
	g = nextafter(g, 0.0);
	if (!(g > ldexp(1.0, -60)) || !(g < ldexp(1.0, 40)))
		return false;
	f = frexp(g, &e);			/* g = f 2^e */
	k = 62 - e;					/* g 2^k = f 2^62 in [2^61, 2^62): an exact integer-valued double? */
	gamma->num = (uint64_t) floor(ldexp(f, 62));
	if (k >= 64)
	{
		/* den = 2^k does not fit: drop low bits of num (rounding down) */
		gamma->num >>= (k - 63);
		k = 63;
	}
	gamma->den = (uint64_t) 1 << k;
	while (gamma->num % 2 == 0 && gamma->den > 1)
	{
		gamma->num /= 2;
		gamma->den /= 2;
	}
	return gamma->num > 0;
}

/*
 * Bernoulli(exp(-gamma k)) exactly, as a product of Bernoulli(exp(-64)) and
 * one Bernoulli(exp(-rest)), rest < 64: each call stays below the exp(-1)
 * run bound of sample.c, whose chance of being reached would depend on k
 * (the data) -- here nothing can fail.
 */
static int
QuantileAccept(DpRng *rng, DpRational gamma, uint64_t k)
{
	unsigned __int128 num = (unsigned __int128) gamma.num * k;
	unsigned __int128 chunk = (unsigned __int128) gamma.den * 64;

	while (num >= chunk)
	{
		if (!dp_bernoulli_exp(rng, chunk, gamma.den))
			return 0;
		num -= chunk;
	}
	return dp_bernoulli_exp(rng, num, gamma.den);
}

/* See quantile.h. */
int
dp_quantile_draw(const uint64_t *counts, int ncells, uint64_t r, DpRational gamma, DpRng *rng, uint64_t *d)
{
	uint64_t	cum = 0;

	for (int j = 0; j <= ncells; j++)
	{
		d[j] = cum > r ? cum - r : r - cum;
		if (j < ncells)
			cum += counts[j];
	}
	return dp_exponential_draw(d, ncells + 1, gamma, rng);
}

/* See quantile.h. */
int
dp_exponential_draw(const uint64_t *d, int n, DpRational gamma, DpRng *rng)
{
	uint64_t	dmin = UINT64_MAX;
	int			chosen = -1;

	for (int j = 0; j < n; j++)
		if (d[j] < dmin)
			dmin = d[j];

	/*
	 * Always 70 n proposals: none accepted has probability below
	 * (1 - 1/n)^(70 n) < e^-70; only then go on, up to 2^40 proposals in
	 * all, which fail together with probability below e^-(2^40 / n) -- far
	 * below any double, so the release stays pure epsilon-DP (a failure
	 * whose chance depends on the data would add it as a delta).
	 */
	for (long i = 0; i < 70L * n || (chosen < 0 && i < (1L << 40)); i++)
	{
		int			j = (int) dp_rng_uniform(rng, (uint64_t) n);

		if (QuantileAccept(rng, gamma, d[j] - dmin) && chosen < 0)
			chosen = j;
	}
	if (chosen < 0)
		dp_core_fail(DP_ERR_ITERATIONS, "exponential-mechanism sampler reached its bound");
	return chosen;
}

/* See quantile.h. */
double
dp_quantile_boundary(double lower, double upper, int ncells, int j)
{
	double		b;

	if (j <= 0)
		return lower;
	if (j >= ncells)
		return upper;
	/* (halves: upper - lower may overflow; finite and within [lower, upper]) */
	b = 2.0 * (lower / 2.0 + (upper / 2.0 - lower / 2.0) * ((double) j / (double) ncells));
	return b < lower ? lower : (b > upper ? upper : b);
}
