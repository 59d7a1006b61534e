/*
 * bench_synth_quality.c — quality of synthetic twins on real data: the mean
 * total variation distance of the 28 two-way tables of a twin of the
 * Arrests data (test/fixtures/arrests.csv, 5,226 rows, 8 columns) from the
 * real ones, with the server's categories (keys for the yes/no columns, one
 * bin per year and per number of checks, 10 integer bins for age over its
 * CHECK domain 12..66), averaged over twins; beside it the baselines: a
 * bootstrap of the real rows, independent columns (exact 1-way marginals),
 * and the naive full contingency table with Laplace noise.
 *   make -C test/bench run-synth_quality [TRIALS=20]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

#define D 8
static const int K[D] = {2, 2, 6, 10, 2, 2, 2, 7};
static uint32_t rows[6000][D];
static int	n;
static DpRng rng;

/* Read the CSV into categories. */
static void
load(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char		line[256];

	if (f == NULL || fgets(line, sizeof(line), f) == NULL)
	{
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	while (fgets(line, sizeof(line), f) && n < 6000)
	{
		char		r[16], c[16], s[16], e[16], ci[16];
		int			y, a, ch;

		if (sscanf(line, "%15[^,],%15[^,],%d,%d,%15[^,],%15[^,],%15[^,],%d", r, c, &y, &a, s, e, ci, &ch) != 8)
			continue;
		rows[n][0] = strcmp(r, "Yes") == 0;
		rows[n][1] = strcmp(c, "White") == 0;
		rows[n][2] = y - 1997;
		rows[n][3] = (uint32_t) ((a - 12) * 10 / 55);
		rows[n][4] = strcmp(s, "Male") == 0;
		rows[n][5] = strcmp(e, "Yes") == 0;
		rows[n][6] = strcmp(ci, "Yes") == 0;
		rows[n][7] = ch;
		n++;
	}
	fclose(f);
}

/* Mean pair TVD of m rows x[] from the real table's pairs. */
static double
mean_tvd(const SynthCounts *real, const uint32_t *x, int64_t m)
{
	SynthCounts tw;
	double		sum = 0.0;
	int			p = 0;

	synth_counts_init(&tw, D, K);
	for (int64_t i = 0; i < m; i++)
		synth_counts_add(&tw, x + i * D);
	for (int a = 0; a < D; a++)
		for (int b = a + 1; b < D; b++, p++)
		{
			double		s = 0.0;

			for (int i = 0; i < K[a] * K[b]; i++)
				s += fabs((m > 0 ? (double) tw.pair[p][i] / m : 0.0) - (double) real->pair[p][i] / real->rows);
			sum += s / 2.0;
		}
	for (int j = 0; j < D; j++)
		free(tw.one[j]);
	for (int q = 0; q < p; q++)
		free(tw.pair[q]);
	return sum / p;
}

/* One twin's rows by the server's pipeline. */
static int64_t
twin(const SynthCounts *real, const char *mtext, uint32_t *x)
{
	DpMechanism mech;
	static SynthPlan plan;
	SynthMeasured meas;
	SynthModel	model;
	char		err[256];
	int64_t		m;
	uint32_t   *work = malloc(sizeof(uint32_t) * 3 * 20000);

	if (!dp_mechanism_parse(mtext, &mech, err, sizeof(err)) || !synth_plan(&plan, &mech, D, K, 1, err, sizeof(err)))
	{
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	synth_measure(&plan, real, &rng, &meas);
	synth_fit(&meas, &model);
	m = llround(model.total);
	if (m > 20000)
		m = 20000;
	synth_sample_block(&model, &rng, m, x, work);
	free(work);
	return m;
}

int
main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "../fixtures/arrests.csv";
	int			T = argc > 2 ? atoi(argv[2]) : 20;
	SynthCounts real;
	uint32_t   *x = malloc(sizeof(uint32_t) * 20000 * D);
	static const char *const mechs[] = {"laplace(epsilon=1)", "gaussian(epsilon=1, delta=1e-6)", "gaussian(rho=0.5)",
	"laplace(epsilon=0.5)", "osgt(epsilon=1, delta=1e-6)"};
	double		boot = 0.0,
				indep = 0.0,
				naive = 0.0;

	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	load(path);
	synth_counts_init(&real, D, K);
	for (int i = 0; i < n; i++)
		synth_counts_add(&real, rows[i]);
	printf("Arrests: %d rows, %d columns, %d two-way tables; mean TVD over %d twins each\n", n, D, D * (D - 1) / 2, T);
	for (size_t k = 0; k < sizeof(mechs) / sizeof(mechs[0]); k++)
	{
		double		s = 0.0;

		for (int t = 0; t < T; t++)
		{
			int64_t		m = twin(&real, mechs[k], x);

			s += mean_tvd(&real, x, m) / T;
		}
		printf("  twin %-34s %.4f\n", mechs[k], s);
	}
	for (int t = 0; t < T; t++)
	{
		/* bootstrap: n rows drawn from the real ones */
		for (int i = 0; i < n; i++)
			memcpy(x + (size_t) i * D, rows[dp_rng_uniform(&rng, n)], sizeof(uint32_t) * D);
		boot += mean_tvd(&real, x, n) / T;
		/* independent columns: each value drawn from its exact 1-way marginal */
		for (int i = 0; i < n; i++)
			for (int j = 0; j < D; j++)
				x[(size_t) i * D + j] = rows[dp_rng_uniform(&rng, n)][j];
		indep += mean_tvd(&real, x, n) / T;
		/* naive: the full contingency table with Laplace(1/epsilon) noise, clipped, normalised, sampled */
		{
			int			cells = 1;
			double	   *p;
			double		tot = 0.0;

			for (int j = 0; j < D; j++)
				cells *= K[j];
			p = calloc(cells, sizeof(double));
			for (int i = 0; i < n; i++)
			{
				int			idx = 0;

				for (int j = 0; j < D; j++)
					idx = idx * K[j] + rows[i][j];
				p[idx] += 1.0;
			}
			for (int c = 0; c < cells; c++)
			{
				double		u = synth_uniform(&rng) - 0.5;

				p[c] += -copysign(1.0, u) * log(1.0 - 2.0 * fabs(u));	/* Laplace(1): epsilon = 1 */
				p[c] = p[c] > 0.0 ? p[c] : 0.0;
				tot += p[c];
			}
			for (int i = 0; i < n; i++)
			{
				double		u = synth_uniform(&rng) * tot,
							c2 = 0.0;
				int			c = 0;

				for (; c < cells - 1; c++)
				{
					c2 += p[c];
					if (u < c2)
						break;
				}
				for (int j = D - 1; j >= 0; j--)
				{
					x[(size_t) i * D + j] = c % K[j];
					c /= K[j];
				}
			}
			naive += mean_tvd(&real, x, n) / T;
			free(p);
		}
	}
	printf("  bootstrap of the real rows             %.4f\n", boot);
	printf("  independent columns (exact marginals)  %.4f\n", indep);
	printf("  naive full table, laplace(epsilon=1)   %.4f\n", naive);
	return 0;
}
