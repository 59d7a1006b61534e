/*
 * bench_sample.c — throughput of dp_pg's exact samplers, single core, with
 * OpenSSL randomness (dp_random_openssl_fill), as the server uses them.
 *
 * For each sampler and scale: prepare once, then draw for about
 * BENCH_SECONDS and report samples per second (the best of BENCH_REPEATS
 * runs, to damp noise from other processes).  Scales are given as doubles
 * and rounded with dp_rational_up, exactly as the server does, so a
 * non-dyadic scale such as 3.7 exercises the 62-bit-numerator path.  OSGT
 * with sigma = 3.3, m = 0.3 needs the multi-limb arithmetic of sample.c;
 * the last line forces that arithmetic on a Gaussian to show its cost.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "random.h"
#include "sample.h"

#define BENCH_SECONDS 0.4
#define BENCH_REPEATS 3

/* Monotonic time in seconds. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Samples per second of s (best of BENCH_REPEATS timed runs). */
static double
rate(const DpSampler *s, DpRng *rng)
{
	double		best = 0;
	int			r;
	volatile int64_t sink = 0;

	for (r = 0; r < BENCH_REPEATS; r++)
	{
		long		n = 0;
		double		t0 = now(),
					t;
		int64_t		acc = 0;

		do
		{
			int			i;

			for (i = 0; i < 10000; i++)
				acc += dp_sampler_draw(s, rng);
			n += 10000;
			t = now() - t0;
		} while (t < BENCH_SECONDS);
		sink += acc;
		if (n / t > best)
			best = n / t;
	}
	(void) sink;
	return best;
}

/* Raw OpenSSL throughput through the RNG buffer, MB/s. */
static double
rng_rate(DpRng *rng)
{
	double		t0 = now(),
				t;
	long		n = 0;
	volatile uint64_t sink = 0;

	do
	{
		int			i;

		for (i = 0; i < 100000; i++)
			sink += dp_rng_u64(rng);
		n += 100000;
		t = now() - t0;
	} while (t < BENCH_SECONDS);
	return n * 8.0 / t / 1e6;
}

/* Print samples/s for each sampler and scale. */
int
main(void)
{
	DpRng		rng;
	DpSampler	s;
	double		scales[] = {1, 3.7, 10, 100, 1000};
	double		osgt[][2] = {{6.3245553, 3}, {10, 0.5}, {4, 10}, {100, 100}, {3.3, 0.3}};
	size_t		i;

	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	printf("%-40s %14s\n", "sampler", "samples/s");
	printf("%-40s %11.0f MB/s\n", "OpenSSL RAND_priv_bytes via DpRng", rng_rate(&rng));
	for (i = 0; i < sizeof(scales) / sizeof(scales[0]); i++)
	{
		char		name[64];

		snprintf(name, sizeof(name), "discrete Laplace t=%g", scales[i]);
		dp_sampler_laplace(&s, dp_rational_up(scales[i]));
		printf("%-40s %14.0f\n", name, rate(&s, &rng));
	}
	for (i = 0; i < sizeof(scales) / sizeof(scales[0]); i++)
	{
		char		name[64];

		snprintf(name, sizeof(name), "discrete Gaussian sigma=%g", scales[i]);
		dp_sampler_gaussian(&s, dp_rational_up(scales[i] * scales[i]));
		printf("%-40s %14.0f\n", name, rate(&s, &rng));
	}
	for (i = 0; i < sizeof(osgt) / sizeof(osgt[0]); i++)
	{
		char		name[64];

		dp_sampler_osgt(&s, dp_rational_up(osgt[i][0] * osgt[i][0]), dp_rational_up(osgt[i][1]));
		snprintf(name, sizeof(name), "discrete OSGT sigma=%g m=%g", osgt[i][0], osgt[i][1]);
		printf("%-40s %14.0f\n", name, rate(&s, &rng));
	}

	/* the multi-limb fallback, forced on parameters that do not need it */
	dp_sampler_gaussian(&s, dp_rational_up(3.7 * 3.7));
	dp_sampler_use_generic_arithmetic(&s);
	printf("%-40s %14.0f\n", "discrete Gaussian sigma=3.7 (multi-limb)", rate(&s, &rng));
	return 0;
}
