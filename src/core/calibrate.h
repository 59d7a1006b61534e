/*
 * calibrate.h — privacy profiles, noise calibration and privacy accounting
 * of additive noise (Laplace, Gaussian, OSGT; continuous and on the
 * integers) for dp_pg.
 *
 * Part of the numeric core: plain C (<math.h> only), no PostgreSQL header.
 *
 * Conventions.  A mechanism releases q(x) + Y; Delta is the sensitivity
 * (integer lattice units for the discrete families).  delta(eps) is the
 * tight privacy profile max(H_eps(P||Q), H_eps(Q||P)) of Y against
 * Y + Delta; eps(delta) is the smallest eps >= 0 with delta(eps) <= delta.
 * Rényi divergences D_alpha are of order alpha > 1.
 *
 * Rounding never favours the analyst: calibrated scales are rounded up so
 * that the computed profile meets the target, and every function meant for
 * accounting (profiles of discrete noise, RDP, rho) returns a value that is
 * not below the true one (floating-point and truncation errors are bounded
 * and added).  Invalid arguments (NaN, infinities, out-of-range values)
 * return NaN; callers validate user input before calling.
 *
 * All functions are pure (no state), so they are safe in any backend or
 * worker.  Costs (test/bench/RESULTS.md): analytic Gaussian ~4 us, OSGT
 * optimum ~0.1 ms, discrete calibrations <= ~0.4 ms, rho <= ~1 ms.
 *
 * The module is one face over five files, each listing its formulas and
 * their sources at its top (the reference values are in test/reference,
 * see its README):
 *   special.c     Q, ln Q, the Mills ratio, differences of Q; root finding
 *   continuous.c  continuous profiles (Laplace, Gaussian, OSGT), calibration
 *   renyi.c       Rényi divergences, rho, RDP and zCDP conversions
 *   gausssum.c    sums of Gaussian terms on the integers, with error bounds
 *   discrete.c    discrete Gaussian, OSGT and Laplace: profiles, variance,
 *                 calibration, Rényi
 * Each calls only the files above it in this list (no circle); what they
 * share among themselves is in special.h, continuous.h, renyi.h and
 * gausssum.h, which only these files include.
 */
#ifndef DP_CALIBRATE_H
#define DP_CALIBRATE_H

#include <stdint.h>

/* Q^{-1}(1/4): largest m/sigma keeping the OSGT sigma^2-sub-Gaussian */
#define DP_OSGT_SUBGAUSS_RATIO 0.67448975019608174

/* Fixed grid of Rényi orders used for accounting (chosen in advance) */
#define DP_RDP_NALPHAS 20
extern const double DP_RDP_ALPHAS[DP_RDP_NALPHAS];

/* OSGT noise parameters: offset m, scale sigma, variance V(m, sigma^2). */
typedef struct DpOsgtParams
{
	double		m;
	double		sigma;
	double		variance;
} DpOsgtParams;

/*
 * Discrete noise parameters as sampled: pmf proportional to
 * exp(-k^2/(2 sigma2) - m|k|/sigma2) on the integers (m = 0: discrete
 * Gaussian).  sigma2 and m are exact doubles; the profile was verified at
 * exactly these values, so pass them to the sampler unchanged.
 */
typedef struct DpDiscreteParams
{
	double		m;
	double		sigma2;
	double		sigma;			/* sqrt(sigma2), for reporting */
	double		variance;		/* variance of the discrete noise */
} DpDiscreteParams;

/*
 * Special functions
 */

/* Standard normal upper tail Q(x) = 1 - Phi(x). */
extern double dp_norm_q(double x);

/* ln Q(x), accurate far into the tail. */
extern double dp_norm_log_q(double x);

/* Smallest x in [-60, 60] (to bisection precision, never below) with log Q(x) <= target. */
extern double dp_norm_log_q_inv(double target);

/* Mills ratio Q(x)/phi(x) (a scaled complementary error function). */
extern double dp_mills(double x);

/*
 * Continuous noise: privacy profiles
 */

/* delta(eps) of Laplace noise with scale b. */
extern double dp_laplace_delta(double eps, double Delta, double b);

/* eps(delta) of Laplace noise with scale b. */
extern double dp_laplace_eps(double delta, double Delta, double b);

/* delta(eps) of Gaussian noise N(0, sigma^2). */
extern double dp_gauss_delta(double eps, double Delta, double sigma);

/* eps(delta) of Gaussian noise N(0, sigma^2). */
extern double dp_gauss_eps(double delta, double Delta, double sigma);

/* delta(eps) of OSGT noise (m, sigma), both cases of the formula. */
extern double dp_osgt_delta(double eps, double Delta, double m, double sigma);

/* eps(delta) of OSGT noise (m, sigma). */
extern double dp_osgt_eps(double delta, double Delta, double m, double sigma);

/* OSGT case boundary eps0 = Delta (Delta + 2m) / (2 sigma^2). */
extern double dp_osgt_eps0(double Delta, double m, double sigma);

/* Which case of the OSGT delta formula applies at eps (1 or 2). */
extern int	dp_osgt_formula_case(double eps, double Delta, double m, double sigma);

/* Variance V(m, sigma^2) of OSGT noise, stable for large m/sigma. */
extern double dp_osgt_variance(double m, double sigma);

/*
 * Continuous noise: calibration
 */

/* Laplace scale Delta/eps, rounded up so that Delta/b <= eps exactly. */
extern double dp_laplace_scale(double Delta, double eps);

/* Smallest Laplace scale meeting (eps, delta). */
extern double dp_laplace_scale_min(double Delta, double eps, double delta);

/* Classical Gaussian sigma = Delta sqrt(2 ln(1.25/delta)) / eps. */
extern double dp_gauss_sigma_classical(double Delta, double eps, double delta);

/* Analytic Gaussian: smallest sigma with delta(eps) <= delta (rounded up). */
extern double dp_gauss_sigma_analytic(double Delta, double eps, double delta);

/* Gaussian sigma for rho-zCDP: Delta / sqrt(2 rho) (rounded up). */
extern double dp_gauss_sigma_zcdp(double Delta, double rho);

/* OSGT with m fixed: smallest sigma meeting (eps, delta). */
extern double dp_osgt_sigma_fixed_m(double Delta, double eps, double delta, double m);

/* OSGT with m/sigma fixed: smallest sigma meeting (eps, delta). */
extern double dp_osgt_sigma_fixed_ratio(double Delta, double eps, double delta, double ratio);

/* Least-variance OSGT meeting (eps, delta) with m/sigma <= Q^{-1}(1/4). */
extern DpOsgtParams dp_osgt_opt_subgaussian(double Delta, double eps, double delta);

/* Least-variance OSGT meeting (eps, delta), m in [1e-2, 1e14] Delta (reference only). */
extern DpOsgtParams dp_osgt_opt_unconstrained(double Delta, double eps, double delta);

/*
 * Rényi DP and conversions
 */

/* D_alpha of Laplace noise (Mironov 2017). */
extern double dp_laplace_rdp(double alpha, double Delta, double b);

/* D_alpha of Gaussian noise: alpha Delta^2 / (2 sigma^2). */
extern double dp_gauss_rdp(double alpha, double Delta, double sigma);

/* D_alpha of OSGT noise, exact. */
extern double dp_osgt_rdp(double alpha, double Delta, double m, double sigma);

/* ln Bbar of the exact OSGT Rényi formula (reference column Bbar). */
extern double dp_osgt_rdp_log_bbar(double alpha, double Delta, double m, double sigma);

/* The OSGT slides' single-letter bound on D_alpha. */
extern double dp_osgt_rdp_zeta_bound(double alpha, double Delta, double m, double sigma);

/* KL divergence (D_1) of OSGT noise: a lower bound on its rho. */
extern double dp_osgt_kl(double Delta, double m, double sigma);

/*
 * Smallest rho with D_alpha <= rho alpha for all alpha > 1, OSGT: a proven
 * upper bound, within ~1e-6 of the sup (~5e-4 when sigma/Delta >~ 30).
 */
extern double dp_osgt_rho(double Delta, double m, double sigma);

/* RDP curve -> (eps, delta) by Mironov's conversion, minimised over the grid. */
extern double dp_rdp_eps_mironov(int n, const double *alphas, const double *rdp,
								 double delta, double *alpha_out);

/* RDP curve -> (eps, delta) by the improved (CKS 2020) conversion over the grid. */
extern double dp_rdp_eps_improved(int n, const double *alphas, const double *rdp,
								  double delta, double *alpha_out);

/*
 * zCDP conversions
 */

/* eps of rho-zCDP at delta by Bun-Steinke: rho + 2 sqrt(rho ln(1/delta)). */
extern double dp_zcdp_eps_bun_steinke(double rho, double delta);

/* eps of rho-zCDP at delta by Canonne-Kamath-Steinke, with its minimising alpha. */
extern double dp_zcdp_eps_cks(double rho, double delta, double *alpha_out);

/* delta of rho-zCDP at eps by Canonne-Kamath-Steinke, with its minimising alpha. */
extern double dp_zcdp_delta_cks(double rho, double eps, double *alpha_out);

/*
 * Discrete noise on the integers (Delta, t, m, sigma2 in lattice units)
 */

/* Discrete Laplace scale t >= Delta/eps: exactly (eps, 0)-DP. */
extern double dp_discrete_laplace_scale(int64_t Delta, double eps);

/* Exact delta(eps) of discrete Laplace noise with scale t. */
extern double dp_discrete_laplace_delta(double eps, int64_t Delta, double t);

/* Variance of discrete Laplace noise with scale t. */
extern double dp_discrete_laplace_variance(double t);

/* Exact D_alpha of discrete Laplace noise (closed form, rounded up). */
extern double dp_discrete_laplace_rdp(double alpha, int64_t Delta, double t);

/* zCDP rho of discrete Laplace noise: (Delta/t)^2 / 2 (Bun-Steinke). */
extern double dp_discrete_laplace_rho(int64_t Delta, double t);

/* delta(eps) of the discrete Gaussian: never below the exact value, at most ~1e-9 above. */
extern double dp_discrete_gauss_delta(double eps, int64_t Delta, double sigma2);

/* Variance of the discrete Gaussian with parameter sigma2. */
extern double dp_discrete_gauss_variance(double sigma2);

/*
 * Smallest discrete Gaussian meeting (eps, delta) by its own profile, never
 * below the analytic (continuous) sigma; at most ~1.2% above it on our grids.
 */
extern DpDiscreteParams dp_discrete_gauss_calibrate(int64_t Delta, double eps, double delta);

/* sigma of dp_discrete_gauss_calibrate (its exact sigma2 in *sigma2 if not NULL). */
extern double dp_discrete_gauss_sigma(int64_t Delta, double eps, double delta, double *sigma2);

/* D_alpha bound of the discrete Gaussian: alpha Delta^2 / (2 sigma2) (CKS 2020). */
extern double dp_discrete_gauss_rdp(double alpha, int64_t Delta, double sigma2);

/* zCDP rho of the discrete Gaussian: Delta^2 / (2 sigma2) (CKS 2020). */
extern double dp_discrete_gauss_rho(int64_t Delta, double sigma2);

/* delta(eps) of the discrete OSGT: never below the exact value, at most ~1e-9 above. */
extern double dp_discrete_osgt_delta(double eps, int64_t Delta, double m, double sigma2);

/* Variance of the discrete OSGT. */
extern double dp_discrete_osgt_variance(double m, double sigma2);

/*
 * Discrete OSGT meeting (eps, delta) at the ratio m/sigma of the continuous
 * sub-Gaussian optimum, never below its sigma (m/sqrt(sigma2) <= Q^{-1}(1/4)).
 */
extern DpDiscreteParams dp_discrete_osgt_opt(int64_t Delta, double eps, double delta);

/* Upper bound on D_alpha of the discrete OSGT. */
extern double dp_discrete_osgt_rdp(double alpha, int64_t Delta, double m, double sigma2);

/* Smallest rho with D_alpha <= rho alpha for all alpha > 1, discrete OSGT (proven upper bound). */
extern double dp_discrete_osgt_rho(int64_t Delta, double m, double sigma2);

#endif							/* DP_CALIBRATE_H */
