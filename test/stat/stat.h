/*
 * stat.h — the thresholds the statistical tests share.
 */
#ifndef DP_STAT_H
#define DP_STAT_H

#include <math.h>

/*
 * Normal-approximation threshold: P(|Z| > 6.5) = 8e-11 for a standard
 * normal.  The statistics test_samplers.c compares with it are sums of 10^6+ i.i.d. terms; their
 * skewness shifts the 6.5-sigma quantile by less than 0.1 (Cornish-Fisher,
 * skewness of the summands / sqrt(N) < 0.01 here), so a correct sampler
 * fails with probability well below 1e-9.
 */
#define STAT_Z 6.5

/*
 * Chi-square threshold: Wilson-Hilferty approximation of the upper
 * quantile, df (1 - 2/(9 df) + z sqrt(2/(9 df)))^3, with z = 6.5.  Against
 * the exact chi-square distribution this is the 1 - 4e-11 quantile or
 * beyond for every df >= 3 (checked numerically: survival 1.1e-12 at df 3,
 * 3.2e-11 at df 100, 4.0e-11 at df 2000), i.e. a margin of 25x below 1e-9
 * for the chi-square approximation of Pearson's statistic with expected
 * counts >= 20.
 */
static inline double
chi2_threshold(int df)
{
	double		a = 2.0 / (9.0 * df);
	double		b = 1.0 - a + STAT_Z * sqrt(a);

	return df * b * b * b;
}

#endif							/* DP_STAT_H */
