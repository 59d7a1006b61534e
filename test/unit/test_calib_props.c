/*
 * test_calib_props.c — property tests of the calibration module (calibrate.h).
 *
 * Monotonicity of the profiles, round trips eps(delta(e)) = e, minimality
 * and one-sidedness of every calibration, consistency of the Rényi and zCDP
 * conversions, the rho bracket [KL, rho] with D_alpha <= rho alpha, and the
 * discrete noise against brute-force summation in long double (both the
 * term-by-term and the Euler-Maclaurin regimes), including the bounds
 * continuous sigma <= discrete sigma <= a few percent more over a grid of
 * lattice sensitivities 1 .. 2^40.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "calibrate.h"
#include "tap.h"

static const double EPSS[] = {0.01, 0.1, 0.5, 1.0, 2.0, 5.0};
static const double DELTAS[] = {1e-5, 1e-8, 1e-10, 1e-15};

#define NEPS (int) (sizeof(EPSS) / sizeof(EPSS[0]))
#define NDEL (int) (sizeof(DELTAS) / sizeof(DELTAS[0]))

/* Relative difference |a - b| / |b|. */
static double
reldiff(double a, double b)
{
	return b == 0.0 ? fabs(a) : fabs(a - b) / fabs(b);
}

/* Profiles decrease in eps and in the noise scale. */
static void
test_monotone(void)
{
	int			bad = 0,
				n = 0;

	for (double s = 0.3; s < 200; s *= 1.7)
		for (double m = 0.0; m <= 3.0 * s; m += 0.7 * s)
		{
			double		prev_o = 2,
						prev_g = 2,
						prev_l = 2;

			for (double e = 0.0; e < 8.0; e += 0.05)
			{
				double		o = dp_osgt_delta(e, 1.0, m, s),
							g = dp_gauss_delta(e, 1.0, s),
							l = dp_laplace_delta(e, 1.0, s);

				n += 3;
				bad += o > prev_o * (1 + 1e-12) || g > prev_g * (1 + 1e-12) ||
					l > prev_l * (1 + 1e-12);
				prev_o = o;
				prev_g = g;
				prev_l = l;
			}
		}
	tap_ok(bad == 0, "profiles nonincreasing in eps (%d points, %d violations)", n, bad);

	bad = n = 0;
	for (int i = 0; i < NEPS; i++)
	{
		double		prev_g = 2,
					prev_m = 2,
					prev_r = 2;

		for (double s = 0.2; s < 1000; s *= 1.05)
		{
			double		g = dp_gauss_delta(EPSS[i], 1.0, s),
						fm = dp_osgt_delta(EPSS[i], 1.0, 3.0, s),
						fr = dp_osgt_delta(EPSS[i], 1.0, DP_OSGT_SUBGAUSS_RATIO * s, s);

			n += 3;
			bad += g > prev_g * (1 + 1e-12) || fm > prev_m * (1 + 1e-12) ||
				fr > prev_r * (1 + 1e-12);
			prev_g = g;
			prev_m = fm;
			prev_r = fr;
		}
	}
	tap_ok(bad == 0, "profiles nonincreasing in sigma (fixed m, fixed m/sigma; %d points, %d violations)",
		   n, bad);
}

/* eps(delta(e)) = e and delta(eps(d)) <= d. */
static void
test_round_trips(void)
{
	int			bad = 0,
				n = 0;
	double		worst = 0;

	for (double s = 0.5; s < 100; s *= 1.9)
		for (double m = 0.0; m <= 2.0 * s; m += 0.5 * s)
			for (double e = 0.02; e < 10.0; e *= 1.6)
			{
				double		d = dp_osgt_delta(e, 1.0, m, s);
				double		e2;

				if (!(d > 1e-300) || d >= dp_osgt_delta(0.0, 1.0, m, s))
					continue;
				e2 = dp_osgt_eps(d, 1.0, m, s);
				n++;
				worst = fmax(worst, reldiff(e2, e));
				bad += reldiff(e2, e) > 1e-9 || dp_osgt_delta(e2, 1.0, m, s) > d;
				if (m == 0.0)
				{
					e2 = dp_gauss_eps(d, 1.0, s);
					bad += reldiff(e2, e) > 1e-9 || dp_gauss_delta(e2, 1.0, s) > d;
				}
				d = dp_laplace_delta(e, 1.0, s);
				if (d > 0.0)
				{
					e2 = dp_laplace_eps(d, 1.0, s);
					bad += reldiff(e2, e) > 1e-9;
				}
			}
	tap_ok(bad == 0, "eps(delta(e)) = e to 1e-9 and delta(eps(d)) <= d (%d cases, worst %.2g)",
		   n, worst);
}

/* Every calibration meets its target and is minimal (to 1e-9); OSGT sits on the ratio bound. */
static void
test_calibrations(void)
{
	int			bad = 0,
				n = 0,
				interior = 0;

	for (int i = 0; i < NEPS; i++)
		for (int j = 0; j < NDEL; j++)
			for (double D = 1.0; D <= 1000.0; D *= 10.0)
			{
				double		e = EPSS[i],
							d = DELTAS[j];
				double		sg = dp_gauss_sigma_analytic(D, e, d);
				double		sm = dp_osgt_sigma_fixed_m(D, e, d, 2.0 * D);
				double		b = dp_laplace_scale_min(D, e, d);
				DpOsgtParams p = dp_osgt_opt_subgaussian(D, e, d);

				n++;
				bad += !(dp_gauss_delta(e, D, sg) <= d) ||
					!(dp_gauss_delta(e, D, sg * (1 - 1e-9)) > d);
				bad += !(dp_osgt_delta(e, D, 2.0 * D, sm) <= d) ||
					!(dp_osgt_delta(e, D, 2.0 * D, sm * (1 - 1e-9)) > d);
				bad += !(dp_laplace_delta(e, D, b) <= d) ||
					!(dp_laplace_delta(e, D, b * (1 - 1e-9)) > d);
				bad += !(dp_osgt_delta(e, D, p.m, p.sigma) <= d) ||
					!(p.m <= DP_OSGT_SUBGAUSS_RATIO * p.sigma);
				/* the optimum is the smallest variance over the ratio range */
				for (double q = 0.0; q < 1.0; q += 0.125)
				{
					double		s = dp_osgt_sigma_fixed_ratio(D, e, d, q * DP_OSGT_SUBGAUSS_RATIO);

					bad += dp_osgt_variance(q * DP_OSGT_SUBGAUSS_RATIO * s, s) < p.variance * (1 - 1e-12);
				}
				interior += p.m < DP_OSGT_SUBGAUSS_RATIO * p.sigma * (1 - 1e-12);
				bad += !(dp_laplace_scale(D, e) * e >= D);
			}
	tap_ok(bad == 0, "calibrations meet the target, are minimal to 1e-9, OSGT optimum <= grid (%d targets)", n);
	tap_diag("sub-Gaussian OSGT optimum strictly inside the ratio range: %d of %d targets", interior, n);
}

/* Rényi: OSGT monotone in alpha, below the zeta bound, m = 0 is Gaussian, KL limit; conversions ordered. */
static void
test_renyi(void)
{
	int			bad = 0,
				n = 0;

	for (double s = 0.5; s < 200; s *= 2.3)
		for (double m = 0.0; m <= 2.0 * s; m += 0.33 * s)
		{
			double		prev = 0.0;
			double		kl = dp_osgt_kl(1.0, m, s);
			double		rdp[DP_RDP_NALPHAS];

			for (int i = 0; i < DP_RDP_NALPHAS; i++)
			{
				double		a = DP_RDP_ALPHAS[i];
				double		d = dp_osgt_rdp(a, 1.0, m, s);

				rdp[i] = d;
				n++;
				bad += d < prev * (1 - 1e-12) || d > dp_osgt_rdp_zeta_bound(a, 1.0, m, s) * (1 + 1e-12);
				if (m == 0.0)
					bad += reldiff(d, dp_gauss_rdp(a, 1.0, s)) > 1e-12;
				prev = d;
			}
			/* D_alpha -> KL as alpha -> 1 */
			bad += reldiff(dp_osgt_rdp(1.0 + 1e-7, 1.0, m, s), kl) > 1e-5;
			bad += dp_osgt_rdp(1.0 + 1e-7, 1.0, m, s) < kl * (1 - 1e-12);
			/* the improved conversion is never worse than Mironov's */
			bad += dp_rdp_eps_improved(DP_RDP_NALPHAS, DP_RDP_ALPHAS, rdp, 1e-8, NULL) >
				dp_rdp_eps_mironov(DP_RDP_NALPHAS, DP_RDP_ALPHAS, rdp, 1e-8, NULL);
			/* and both are above the exact profile */
			bad += dp_rdp_eps_improved(DP_RDP_NALPHAS, DP_RDP_ALPHAS, rdp, 1e-8, NULL) <
				dp_osgt_eps(1e-8, 1.0, m, s);
		}
	tap_ok(bad == 0, "OSGT RDP monotone, <= zeta bound, = Gaussian at m = 0, -> KL; conversions ordered (%d)", n);

	bad = 0;
	for (double b = 0.05; b < 100; b *= 1.7)
	{
		double		prev = 0.0;

		for (int i = 0; i < DP_RDP_NALPHAS; i++)
		{
			double		d = dp_laplace_rdp(DP_RDP_ALPHAS[i], 1.0, b);

			bad += d < prev * (1 - 1e-12) || d > 1.0 / b * (1 + 1e-12) ||
				d > 0.5 * DP_RDP_ALPHAS[i] / (b * b) * (1 + 1e-12);
			prev = d;
		}
	}
	tap_ok(bad == 0, "Laplace RDP monotone and below eps and alpha eps^2/2");
}

/* rho of OSGT: KL <= rho, D_alpha <= rho alpha on a dense alpha set, and rho close to KL. */
static void
test_rho(void)
{
	int			bad = 0,
				n = 0;
	double		slack = 0;

	for (double s = 0.5; s <= 64; s *= 2.0)
		for (double q = 0.0; q <= 2.0; q += 0.25)
		{
			double		m = q * s;
			double		rho = dp_osgt_rho(1.0, m, s);
			double		kl = dp_osgt_kl(1.0, m, s);

			n++;
			bad += rho < kl;
			slack = fmax(slack, rho / kl - 1);
			for (double a = 1.0 + 1e-6; a < 1e6; a *= 1.03)
				bad += dp_osgt_rdp(a, 1.0, m, s) > rho * a;
		}
	tap_ok(bad == 0, "OSGT rho in [KL, ...] with D_alpha <= rho alpha on alpha in (1, 1e6) (%d cases)", n);
	tap_ok(slack < 1e-3, "OSGT rho within %.2g of the KL divergence (sup at alpha -> 1)", slack);
}

/* CKS conversions are dual and ordered: exact <= CKS <= Bun-Steinke. */
static void
test_zcdp(void)
{
	int			bad = 0;

	for (double rho = 1e-4; rho < 10; rho *= 3)
		for (int j = 0; j < NDEL; j++)
		{
			double		d = DELTAS[j],
						a,
						a2;
			double		ec = dp_zcdp_eps_cks(rho, d, &a);
			double		eb = dp_zcdp_eps_bun_steinke(rho, d);
			double		ex = dp_gauss_eps(d, 1.0, dp_gauss_sigma_zcdp(1.0, rho));
			double		d2 = dp_zcdp_delta_cks(rho, ec, &a2);

			bad += !(ex <= ec * (1 + 1e-12) && ec <= eb * (1 + 1e-12));
			bad += d2 > d * (1 + 1e-9) || d2 < d * (1 - 1e-6);
			bad += reldiff(a, a2) > 1e-6;
		}
	tap_ok(bad == 0, "zCDP: exact <= CKS <= Bun-Steinke; CKS delta(eps(d)) = d with the same alpha");
}

/* Brute-force discrete OSGT pmf weight (unnormalised), long double. */
static long double
bf_w(long double k, long double m, long double s2)
{
	long double a = fabsl(k) + m;

	return expl(-a * a / (2 * s2));
}

/* Brute-force delta(eps) of the discrete OSGT (m = 0: Gaussian). */
static long double
bf_delta(double eps, long Delta, double m, double s2)
{
	long		K = (long) (m + 60 * sqrt(s2) + Delta + 20);
	long double z = 0,
				s = 0,
				ee = expl(eps);

	for (long k = -K; k <= K; k++)
	{
		long double h = bf_w(k, m, s2) - ee * bf_w(k - Delta, m, s2);

		z += bf_w(k, m, s2);
		if (h > 0)
			s += h;
	}
	return s / z;
}

/* Brute-force variance of the discrete OSGT. */
static long double
bf_var(double m, double s2)
{
	long		K = (long) (m + 60 * sqrt(s2) + 20);
	long double z = 0,
				v = 0;

	for (long k = -K; k <= K; k++)
	{
		z += bf_w(k, m, s2);
		v += (long double) k * k * bf_w(k, m, s2);
	}
	return v / z;
}

/* Brute-force D_alpha of the discrete OSGT (log-sum-exp: the terms overflow for large alpha). */
static long double
bf_rdp(double alpha, long Delta, double m, double s2)
{
	long		K = (long) (m + 60 * sqrt(s2) + alpha * Delta + 20);
	long double z = 0,
				s = 0,
				top = -INFINITY;

	for (long k = -K; k <= K; k++)
	{
		long double a = fabsl((long double) k) + m,
					b = fabsl((long double) (k - Delta)) + m;

		top = fmaxl(top, -(alpha * a * a + (1 - alpha) * b * b) / (2 * s2));
	}
	for (long k = -K; k <= K; k++)
	{
		long double a = fabsl((long double) k) + m,
					b = fabsl((long double) (k - Delta)) + m;

		z += bf_w(k, m, s2);
		s += expl(-(alpha * a * a + (1 - alpha) * b * b) / (2 * s2) - top);
	}
	return (logl(s / z) + top) / (alpha - 1);
}

/* Discrete Gaussian / OSGT delta, variance and RDP against brute force (both summation regimes). */
static void
test_discrete_vs_bruteforce(void)
{
	static const double s2s[] = {0.3, 1.0, 9.0, 100.0, 1000.0, 1024.0, 1025.0, 2000.0, 5000.0};
	static const long Ds[] = {1, 2, 5, 37};
	static const double qs[] = {0.0, 0.3, DP_OSGT_SUBGAUSS_RATIO, 2.0};
	static const double es[] = {0.0, 0.05, 0.3, 1.0, 3.0};
	int			bad = 0,
				n = 0,
				nr = 0,
				badr = 0,
				badv = 0;
	double		worst = 0,
				worstr = 0,
				worstv = 0;

	for (int i = 0; i < (int) (sizeof(s2s) / sizeof(s2s[0])); i++)
		for (int q = 0; q < 4; q++)
		{
			double		s2 = s2s[i],
						m = qs[q] * sqrt(s2);
			double		v = m == 0.0 ? dp_discrete_gauss_variance(s2) : dp_discrete_osgt_variance(m, s2);
			long double bv = bf_var(m, s2);

			worstv = fmax(worstv, reldiff(v, (double) bv));
			badv += reldiff(v, (double) bv) > 1e-10;
			for (int j = 0; j < 4; j++)
			{
				for (int k = 0; k < 5; k++)
				{
					double		got = m == 0.0 ? dp_discrete_gauss_delta(es[k], Ds[j], s2)
						: dp_discrete_osgt_delta(es[k], Ds[j], m, s2);
					long double ref = bf_delta(es[k], Ds[j], m, s2);

					if (ref < 1e-250L)
						continue;
					n++;
					worst = fmax(worst, reldiff(got, (double) ref));
					if (got < ref * (1 - 1e-13L) || got > ref * (1 + 1e-9L) + 1e-300L)
					{
						bad++;
						tap_diag("discrete delta eps=%g Delta=%ld m=%g s2=%g: got %.17g brute %.17Lg",
								 es[k], Ds[j], m, s2, got, ref);
					}
				}
				for (int a = 0; a < DP_RDP_NALPHAS; a += 3)
				{
					double		al = DP_RDP_ALPHAS[a];
					double		got = dp_discrete_osgt_rdp(al, Ds[j], m, s2);
					long double ref = bf_rdp(al, Ds[j], m, s2);

					nr++;
					worstr = fmax(worstr, reldiff(got, (double) ref));
					if (got < ref * (1 - 1e-13L) || got > ref * (1 + 1e-6L) + 1e-12L)
					{
						badr++;
						tap_diag("discrete RDP alpha=%g Delta=%ld m=%g s2=%g: got %.17g brute %.17Lg",
								 al, Ds[j], m, s2, got, ref);
					}
				}
			}
		}
	tap_ok(bad == 0, "discrete delta = brute force, never below, within 1e-9 (%d cases, worst %.2g)",
		   n, worst);
	tap_ok(badr == 0, "discrete OSGT RDP >= brute force, within 1e-6 (%d cases, worst %.2g)", nr, worstr);
	tap_ok(badv == 0, "discrete variance = brute force to 1e-10 (worst %.2g)", worstv);
}

/* Discrete Laplace: exact pure DP at t = Delta/eps, profile, variance and RDP against brute force. */
static void
test_discrete_laplace(void)
{
	int			bad = 0;
	double		worst = 0;

	for (long D = 1; D <= 40; D = D * 3 + 1)
		for (double t = 0.3; t < 50; t *= 1.9)
		{
			long		K = (long) (D + 80 * t + 20);
			long double z = 0,
						var = 0;

			for (long k = -K; k <= K; k++)
			{
				z += expl(-fabsl((long double) k) / t);
				var += (long double) k * k * expl(-fabsl((long double) k) / t);
			}
			bad += reldiff(dp_discrete_laplace_variance(t), (double) (var / z)) > 1e-10;
			for (double e = 0.0; e < 2.0 * D / t; e += 0.13 * D / t)
			{
				long double s = 0;

				for (long k = -K; k <= K; k++)
				{
					long double h = expl(-fabsl((long double) k) / t) -
					expl(e) * expl(-fabsl((long double) (k - D)) / t);

					if (h > 0)
						s += h;
				}
				s /= z;
				worst = fmax(worst, reldiff(dp_discrete_laplace_delta(e, D, t), (double) s));
				bad += dp_discrete_laplace_delta(e, D, t) < s * (1 - 1e-13L) - 1e-300L ||
					(s > 0 && reldiff(dp_discrete_laplace_delta(e, D, t), (double) s) > 1e-9);
			}
			for (int a = 0; a < DP_RDP_NALPHAS; a += 2)
			{
				double		al = DP_RDP_ALPHAS[a];
				long double s = 0,
							top = -INFINITY;
				double		got = dp_discrete_laplace_rdp(al, D, t);

				/* log-sum-exp: the terms overflow long double for large alpha */
				for (long k = -K; k <= K; k++)
					top = fmaxl(top, -(al * fabsl((long double) k) + (1 - al) * fabsl((long double) (k - D))) / t);
				for (long k = -K; k <= K; k++)
					s += expl(-(al * fabsl((long double) k) + (1 - al) * fabsl((long double) (k - D))) / t - top);
				s = (logl(s / z) + top) / (al - 1);
				bad += got < s * (1 - 1e-13L) || got > s * (1 + 1e-8L) + 1e-14L;
			}
			/* t = Delta/eps is exactly eps-DP */
			bad += dp_discrete_laplace_delta(1.0 * D / t, D, dp_discrete_laplace_scale(D, 1.0 * D / t)) != 0.0;
		}
	tap_ok(bad == 0, "discrete Laplace profile, variance, RDP = brute force; t = Delta/eps is pure (worst %.2g)",
		   worst);
}

/* Discrete rho: D_alpha <= rho alpha and rho close to the discrete KL. */
static void
test_discrete_rho(void)
{
	static const double s2s[] = {1.0, 9.0, 100.0, 3000.0};
	int			bad = 0;

	for (int i = 0; i < 4; i++)
		for (long D = 1; D <= 3; D++)
		{
			double		s2 = s2s[i],
						m = DP_OSGT_SUBGAUSS_RATIO * sqrt(s2);
			double		rho = dp_discrete_osgt_rho(D, m, s2);
			long double kl = bf_rdp(1.0 + 1e-9, D, m, s2);

			bad += rho < kl * (1 - 1e-6L) || rho > kl * (1 + 1e-3L);
			for (double a = 1.0 + 1e-5; a < 1e5; a *= 1.1)
				bad += dp_discrete_osgt_rdp(a, D, m, s2) > rho * a;
			bad += reldiff(dp_discrete_gauss_rho(D, s2), D * D / (2 * s2)) > 1e-14;
		}
	tap_ok(bad == 0, "discrete OSGT rho >= KL, within 1e-3, D_alpha <= rho alpha");
}

/*
 * Discrete calibrations: continuous sigma <= discrete sigma <= 1.05 continuous
 * sigma, the discrete profile meets the target, and the result is minimal
 * (either the continuous sigma itself or infeasible 1e-6 below).
 */
static void
test_discrete_calibration(void)
{
	static const int64_t Ds[] = {1, 2, 3, 7, 1000, (int64_t) 1 << 20, (int64_t) 1 << 30,
	(int64_t) 1 << 40};
	int			bad = 0,
				n = 0;
	double		worst_g = 0,
				worst_o = 0;

	for (int i = 0; i < (int) (sizeof(Ds) / sizeof(Ds[0])); i++)
		for (int j = 0; j < NEPS; j++)
			for (int k = 0; k < NDEL; k++)
			{
				double		e = EPSS[j],
							d = DELTAS[k],
							D = (double) Ds[i];
				double		sc = dp_gauss_sigma_analytic(D, e, d);
				DpDiscreteParams g = dp_discrete_gauss_calibrate(Ds[i], e, d);
				DpOsgtParams oc = dp_osgt_opt_subgaussian(D, e, d);
				DpDiscreteParams o = dp_discrete_osgt_opt(Ds[i], e, d);

				n++;
				worst_g = fmax(worst_g, g.sigma / sc - 1);
				worst_o = fmax(worst_o, o.sigma / oc.sigma - 1);
				bad += !(g.sigma2 >= sc * sc && g.sigma <= 1.05 * sc);
				bad += !(dp_discrete_gauss_delta(e, Ds[i], g.sigma2) <= d);
				bad += !(g.sigma == sc || g.sigma2 <= sc * sc * (1 + 1e-15) ||
						 dp_discrete_gauss_delta(e, Ds[i], g.sigma2 * (1 - 1e-6)) > d);
				bad += !(o.sigma2 >= oc.sigma * oc.sigma * (1 - 1e-15) && o.sigma <= 1.05 * oc.sigma);
				bad += !(dp_discrete_osgt_delta(e, Ds[i], o.m, o.sigma2) <= d);
				bad += !(o.m <= DP_OSGT_SUBGAUSS_RATIO * sqrt(o.sigma2));
				if (bad)
				{
					tap_diag("Delta=%lld eps=%g delta=%g: gauss %.17g vs %.17g, osgt %.17g vs %.17g",
							 (long long) Ds[i], e, d, g.sigma, sc, o.sigma, oc.sigma);
					break;
				}
			}
	tap_ok(bad == 0, "discrete Gaussian/OSGT: continuous sigma <= discrete sigma <= 1.05x, target met (%d targets)",
		   n);
	tap_diag("discrete sigma / continuous sigma - 1: Gaussian worst %.3g, OSGT worst %.3g",
			 worst_g, worst_o);
}

/* Special functions: Mills ratio identity and continuity at the branch points. */
static void
test_special(void)
{
	int			bad = 0;

	for (double x = -20; x < 30; x += 0.0137)
		bad += reldiff(dp_mills(x) * exp(-0.5 * x * x) / sqrt(2 * M_PI), dp_norm_q(x)) > 1e-13 * (1 + x * x);
	bad += reldiff(dp_mills(nextafter(5.0, 0)), dp_mills(5.0)) > 1e-14;
	bad += reldiff(dp_osgt_variance(nextafter(5.0, 0), 1.0), dp_osgt_variance(5.0, 1.0)) > 1e-12;
	bad += reldiff(dp_norm_log_q(nextafter(5.0, 0)), dp_norm_log_q(5.0)) > 1e-14;
	/* V -> 2 (sigma^2/m)^2 (Laplace limit) for large m/sigma */
	bad += reldiff(dp_osgt_variance(1e7, 1.0), 2e-14) > 1e-6;
	tap_ok(bad == 0, "Mills ratio, log Q and OSGT variance consistent across branches");
}

/* Run every property test. */
int
main(void)
{
	test_special();
	test_monotone();
	test_round_trips();
	test_calibrations();
	test_renyi();
	test_rho();
	test_zcdp();
	test_discrete_vs_bruteforce();
	test_discrete_laplace();
	test_discrete_rho();
	test_discrete_calibration();
	return tap_done();
}
