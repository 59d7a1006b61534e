/*
 * bench_calibrate.c — cost of dp_pg's noise calibrations, single core.
 *
 * For each function, every target of a grid (eps in {0.01, 0.1, 0.5, 1, 2, 5},
 * delta in {1e-5, 1e-8, 1e-10}, and for the discrete calibrations lattice
 * sensitivities Delta in {1, 1000, 2^20, 2^40}) is calibrated repeatedly
 * for about BENCH_SECONDS; the time per call of a target is the best of
 * BENCH_REPEATS runs (to damp noise from other processes).  Reported:
 * median and worst target, in microseconds per call.
 *
 * Targets (DESIGN.md §6): analytic Gaussian <= 20 us, OSGT optimum <= 1 ms,
 * discrete calibrations <= ~1 ms.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "calibrate.h"

#define BENCH_SECONDS 0.02
#define BENCH_REPEATS 3
#define MAX_TARGETS 128

static const double EPSS[] = {0.01, 0.1, 0.5, 1.0, 2.0, 5.0};
static const double DELTAS[] = {1e-5, 1e-8, 1e-10};
static const int64_t DELTAS_LATTICE[] = {1, 1000, (int64_t) 1 << 20, (int64_t) 1 << 40};

typedef enum Which
{
	B_ANALYTIC, B_OSGT_OPT, B_DISC_GAUSS, B_DISC_OSGT, B_OSGT_RHO, B_DISC_OSGT_RHO
} Which;

static volatile double sink;

/* Monotonic time in seconds. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One call of the benchmarked function for a target. */
static void
call(Which w, int64_t D, double eps, double delta)
{
	switch (w)
	{
		case B_ANALYTIC:
			sink += dp_gauss_sigma_analytic((double) D, eps, delta);
			break;
		case B_OSGT_OPT:
			sink += dp_osgt_opt_subgaussian((double) D, eps, delta).sigma;
			break;
		case B_DISC_GAUSS:
			sink += dp_discrete_gauss_calibrate(D, eps, delta).sigma2;
			break;
		case B_DISC_OSGT:
			sink += dp_discrete_osgt_opt(D, eps, delta).sigma2;
			break;
		case B_OSGT_RHO:
			{
				/* rho of the noise a calibration returns */
				static DpOsgtParams p;
				static double pe,
							pd;

				if (pe != eps || pd != delta)
				{
					p = dp_osgt_opt_subgaussian((double) D, eps, delta);
					pe = eps;
					pd = delta;
				}
				sink += dp_osgt_rho((double) D, p.m, p.sigma);
				break;
			}
		case B_DISC_OSGT_RHO:
			{
				static DpDiscreteParams p;
				static double pe,
							pd;
				static int64_t pD;

				if (pe != eps || pd != delta || pD != D)
				{
					p = dp_discrete_osgt_opt(D, eps, delta);
					pe = eps;
					pd = delta;
					pD = D;
				}
				sink += dp_discrete_osgt_rho(D, p.m, p.sigma2);
				break;
			}
	}
}

/* Microseconds per call for one target (best of BENCH_REPEATS). */
static double
time_target(Which w, int64_t D, double eps, double delta)
{
	double		best = 1e300;

	call(w, D, eps, delta);		/* warm up */
	for (int r = 0; r < BENCH_REPEATS; r++)
	{
		long		n = 0;
		double		t0 = now(),
					t;

		do
		{
			call(w, D, eps, delta);
			n++;
			t = now() - t0;
		} while (t < BENCH_SECONDS);
		if (t / n < best)
			best = t / n;
	}
	return best * 1e6;
}

/* qsort comparator for doubles. */
static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Benchmark one function over its grid and print median and worst. */
static void
bench(const char *name, Which w, bool lattice)
{
	double		us[MAX_TARGETS];
	char		worst[96] = "";
	double		wmax = 0;
	int			n = 0;
	int			nD = lattice ? (int) (sizeof(DELTAS_LATTICE) / sizeof(DELTAS_LATTICE[0])) : 1;

	for (int i = 0; i < nD; i++)
		for (int j = 0; j < (int) (sizeof(EPSS) / sizeof(EPSS[0])); j++)
			for (int k = 0; k < (int) (sizeof(DELTAS) / sizeof(DELTAS[0])); k++)
			{
				int64_t		D = lattice ? DELTAS_LATTICE[i] : 1;
				double		t = time_target(w, D, EPSS[j], DELTAS[k]);

				us[n++] = t;
				if (t > wmax)
				{
					wmax = t;
					snprintf(worst, sizeof(worst), "Delta=%lld eps=%g delta=%g",
							 (long long) D, EPSS[j], DELTAS[k]);
				}
			}
	qsort(us, n, sizeof(double), cmp_double);
	printf("%-34s %3d targets  median %9.1f us  worst %9.1f us  (%s)\n",
		   name, n, us[n / 2], wmax, worst);
}

/* Benchmark each calibration over its grid. */
int
main(void)
{
	bench("analytic Gaussian sigma", B_ANALYTIC, false);
	bench("OSGT sub-Gaussian optimum", B_OSGT_OPT, false);
	bench("discrete Gaussian calibration", B_DISC_GAUSS, true);
	bench("discrete OSGT calibration", B_DISC_OSGT, true);
	bench("OSGT rho (accounting)", B_OSGT_RHO, false);
	bench("discrete OSGT rho (accounting)", B_DISC_OSGT_RHO, true);
	return sink == 12345.0;
}
