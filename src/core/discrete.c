/*
 * discrete.c — discrete noise on the integers for dp_pg: privacy profiles,
 * variance, calibration and Rényi bounds of the discrete Gaussian and the
 * discrete OSGT, and the discrete Laplace [ref 6, CKS 2020].  Delta, t, m
 * and sigma2 are in lattice units.  "ref" is test/reference/README.md.
 *
 *   w(k) = exp(-(|k| + m)^2/(2 sigma2)) (m = 0: discrete Gaussian).  The
 *   privacy loss is decreasing, so delta = sum_{k < y*} w(k) - e^eps w(k - Delta)
 *   over the same half-line as in the continuous case; it is written as
 *   tails S(a, b) = sum_{x=a..b} exp(-(x + m)^2/(2 sigma2)):
 *     case 1: [S(J, inf) - e^eps S(J + Delta, inf)]/Z, J = 1 - ceil(y*)
 *     case 2: [S(0, inf) + S(1, K) - e^eps S(Delta - K, inf)]/Z, K = ceil(y*) - 1
 *   The tails and the normaliser Z are summed with bounded errors
 *   (gausssum.c; for m = 0, Z = sqrt(2 pi) sigma theta by Poisson
 *   summation).  Every error is bounded and added: delta is an upper
 *   bound, within ~1e-9 (typically 1e-11) of the exact value.
 *   Discrete calibration: start at the continuous calibration (the sampled
 *   noise is never below it) and raise sigma2 (at a fixed m/sigma for OSGT)
 *   until the discrete bound meets the target; the profile is verified at
 *   exactly the doubles returned, which the sampler uses unchanged.
 *   Discrete OSGT Rényi: the continuous derivation with sums for integrals,
 *   Bbar = sum_{j>=0} G(j - (alpha-1)Delta + m) + sum_{j>=0} G(j + alpha Delta + m)
 *   + e^E sum_{k=1}^{Delta-1} G(k + K0), G(x) = exp(-x^2/(2 sigma2)),
 *   K0 = (alpha-1)Delta + (2alpha-1)m; rho as for the continuous OSGT, the
 *   tail bounded with theta (a lattice sum of G is <= sqrt(2 pi) sigma theta).
 *   Discrete Laplace: p(k) ratio <= e^{Delta/t}, so t >= Delta/eps is exactly
 *   eps-DP; its profile and Rényi divergence are geometric sums in closed form.
 *   Discrete Gaussian with integer Delta: D_alpha <= alpha Delta^2/(2 sigma2),
 *   i.e. Delta^2/(2 sigma2)-zCDP [CKS 2020, Prop 5]; eps-DP is eps^2/2-zCDP
 *   [Bun-Steinke 2016, Prop 3.3].
 *
 * Layer core/ (docs/development.md): plain C, <math.h> only; may call
 * special.c (special.h), gausssum.c (gausssum.h), continuous.c
 * (calibrate.h, continuous.h: the continuous calibrations it starts from),
 * renyi.c (renyi.h: the rho bracket) and the C library.  Nothing else in
 * the module calls it; the public functions are declared in calibrate.h.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calibrate.h"
#include "continuous.h"
#include "gausssum.h"
#include "renyi.h"
#include "special.h"


/* ------------------------------------------------------------------------
 * Profiles, variance, calibration, Rényi
 * ------------------------------------------------------------------------ */

/* Lower bound on ln Z, Z = sum_k exp(-(|k| + m)^2/(2 sigma2)); *lz gets ln Z itself. */
static double
discrete_log_norm(double m, double sigma2, double *lz)
{
	DpSumTerm	t[2];
	DpGaussSum	g;
	double		L,
				lo,
				mid;

	if (m == 0.0 && sigma2 >= 0.25)
	{
		/* Poisson summation: Z = sqrt(2 pi sigma2) theta exactly */
		double		z = log(DP_SQRT2PI * sqrt(sigma2) * dp_jacobi_theta(sigma2));

		if (lz)
			*lz = z;
		return z - 8.0 * DP_ULP * (1.0 + fabs(z));
	}
	dp_gauss_sum(-m, sigma2, 0.0, INFINITY, &g);
	t[0] = (DpSumTerm) {g.ls, g.v, g.err, 1};
	dp_gauss_sum(-m, sigma2, 1.0, INFINITY, &g);
	t[1] = (DpSumTerm) {g.ls, g.v, g.err, 1};
	lo = dp_sum_terms_bound(t, 2, -1, &L);
	mid = exp(t[0].L - L) * t[0].v + exp(t[1].L - L) * t[1].v;
	if (lz)
		*lz = L + log(mid);
	return L + log(lo) - 8.0 * DP_ULP * (1.0 + fabs(L));
}


/* True if (Delta, m, sigma2) are valid discrete OSGT parameters. */
static bool
discrete_params_ok(int64_t Delta, double m, double sigma2)
{
	return Delta >= 1 && Delta <= ((int64_t) 1 << 52) && m >= 0.0 && dp_finite_num(m) &&
		sigma2 > 0.0 && dp_finite_num(sigma2);
}

/*
 * Upper bound on delta(eps) of the discrete OSGT w(k) = exp(-(|k| + m)^2/(2 sigma2))
 * with integer shift Delta (m = 0: discrete Gaussian).
 */
static double
discrete_osgt_delta_up(double eps, double Delta, double m, double sigma2)
{
	double		eps0 = Delta * (Delta + 2.0 * m) / (2.0 * sigma2);
	double		ystar,
				slope,
				shift,
				K,
				dy,
				kn,
				L,
				num,
				lz_lo,
				d;
	DpSumTerm	t[4];
	DpGaussSum	g;
	int			nt = 0;

	if (eps >= eps0)
	{
		/* case 1: {L > eps} = {k < y*}, y* <= 0; sum over k = -J, -J-1, ... */
		shift = eps * sigma2 / Delta;
		ystar = m + 0.5 * Delta - shift;
		slope = Delta / sigma2;
		K = ceil(ystar) - 1.0;
		dp_gauss_sum(-m, sigma2, -K, INFINITY, &g);
		t[nt++] = (DpSumTerm) {g.ls, g.v, g.err, 1};
		dp_gauss_sum(-m, sigma2, -K + Delta, INFINITY, &g);
		t[nt++] = (DpSumTerm) {g.ls + eps, g.v, g.err, -1};
	}
	else
	{
		/* case 2: y* in (0, Delta/2]: k <= 0 and 1 <= k <= K */
		shift = eps * sigma2 / (Delta + 2.0 * m);
		ystar = 0.5 * Delta - shift;
		slope = (Delta + 2.0 * m) / sigma2;
		K = fmax(ceil(ystar) - 1.0, 0.0);
		dp_gauss_sum(-m, sigma2, 0.0, INFINITY, &g);
		t[nt++] = (DpSumTerm) {g.ls, g.v, g.err, 1};
		if (K >= 1.0)
		{
			dp_gauss_sum(-m, sigma2, 1.0, K, &g);
			t[nt++] = (DpSumTerm) {g.ls, g.v, g.err, 1};
		}
		dp_gauss_sum(-m, sigma2, Delta - K, INFINITY, &g);
		t[nt++] = (DpSumTerm) {g.ls + eps, g.v, g.err, -1};
	}

	/*
	 * The computed y* is within dy of the true one.  Only integers k within
	 * dy of y* can fall on the wrong side of the cut; for them
	 * |L(k) - eps| <= 2 dy slope, so including a term with h(k) < 0 or
	 * missing one with h(k) > 0 lowers the sum by at most
	 * w(k) e^eps (e^{2 dy slope} - 1) each.
	 */
	dy = 8.0 * DP_ULP * (m + Delta + shift + fabs(ystar)) + 1e-300;
	kn = nearbyint(ystar);
	if (fabs(ystar - kn) <= dy)
	{
		double		namb = 2.0 * floor(dy) + 1.0;
		double		kmin = fmax(fabs(kn) - namb, 0.0);

		t[nt++] = (DpSumTerm) {
			-(kmin + m) * (kmin + m) / (2.0 * sigma2) + eps,
				namb * expm1(2.0 * dy * slope), 0.0, 1
		};
	}

	num = dp_sum_terms_bound(t, nt, 1, &L);
	if (!(num > 0.0))
		return 0.0;
	lz_lo = discrete_log_norm(m, sigma2, NULL);
	d = exp(L - lz_lo + log(num)) * (1.0 + 16.0 * DP_ULP);
	return d < 1.0 ? d : 1.0;
}

/* Upper bound (exact up to ~1e-12 relative) on delta(eps) of the discrete Gaussian. */
double
dp_discrete_gauss_delta(double eps, int64_t Delta, double sigma2)
{
	if (!(eps >= 0.0) || !discrete_params_ok(Delta, 0.0, sigma2))
		return NAN;
	return discrete_osgt_delta_up(eps, (double) Delta, 0.0, sigma2);
}

/* Upper bound (exact up to ~1e-12 relative) on delta(eps) of the discrete OSGT. */
double
dp_discrete_osgt_delta(double eps, int64_t Delta, double m, double sigma2)
{
	if (!(eps >= 0.0) || !discrete_params_ok(Delta, m, sigma2))
		return NAN;
	return discrete_osgt_delta_up(eps, (double) Delta, m, sigma2);
}

/* Variance of the discrete Gaussian: Poisson summation of k^2 e^{-k^2/(2 sigma2)}. */
double
dp_discrete_gauss_variance(double sigma2)
{
	if (!(sigma2 > 0.0) || !dp_finite_num(sigma2))
		return NAN;
	if (sigma2 >= 0.25)
	{
		double		num = 0.0;

		/* sum k^2 e^{-k^2/2s2} = sqrt(2 pi s2) sum_n s2 (1 - 4 pi^2 s2 n^2) e^{-2 pi^2 s2 n^2} */
		for (int n = 1; n < 64; n++)
		{
			double		q = 2.0 * DP_PI * DP_PI * sigma2 * n * n;
			double		t = (1.0 - 2.0 * q) * exp(-q);

			num += t;
			if (fabs(t) < 1e-20)
				break;
		}
		return sigma2 * (1.0 + 2.0 * num) / dp_jacobi_theta(sigma2);
	}
	else
	{
		double		s = 0.0,
					z = 1.0;

		for (int k = 1; k < 64; k++)
		{
			double		w = exp(-k * (double) k / (2.0 * sigma2));

			s += 2.0 * k * (double) k * w;
			z += 2.0 * w;
			if (w < 1e-30)
				break;
		}
		return s / z;
	}
}

/* Variance of the discrete OSGT: 2 sum_{k>=1} k^2 w(k) / Z. */
double
dp_discrete_osgt_variance(double m, double sigma2)
{
	double		s = 0.0,
				lz;

	if (!(m >= 0.0) || !dp_finite_num(m) || !(sigma2 > 0.0) || !dp_finite_num(sigma2))
		return NAN;
	if (m == 0.0)
		return dp_discrete_gauss_variance(sigma2);
	discrete_log_norm(m, sigma2, &lz);
	if (sigma2 <= DP_SUM_SIGMA2_MAX)
	{
		/* w(k)/w(0) = exp(-(k^2 + 2km)/(2 sigma2)), decreasing in k */
		for (int64_t k = 1; k < 100000000; k++)
		{
			double		kd = (double) k;
			double		t = kd * kd * exp(-(kd * kd + 2.0 * kd * m) / (2.0 * sigma2));

			s += t;
			if (t < 1e-20 * s && kd * kd > sigma2)
				break;
		}
		/* relative to w(0) = exp(-m^2/(2 sigma2)) */
		return 2.0 * s * exp(-m * m / (2.0 * sigma2) - lz);
	}
	else
	{
		/*
		 * Euler-Maclaurin for f(x) = x^2 G(x), G(x) = exp(-(x + m)^2/(2 sigma2)),
		 * relative to G(0): int_0^inf f = sigma^3 M(r) B(r), f^(n)(0) = n(n-1)
		 * G^(n-2)(0), G^(k)(0) = (-1/sigma)^k He_k(r) G(0).
		 */
		double		sigma = sqrt(sigma2);
		double		r = m / sigma;
		double		he[2 * DP_EM_PMAX + 1];

		dp_hermite_all(r, 2 * DP_EM_PMAX, he);
		s = sigma2 * sigma * dp_mills(r) * dp_osgt_var_bracket(r);
		for (int k = 2; k <= 6; k++)
		{
			int			n = 2 * k - 1;

			/* - c_k f^(n)(0) with f^(n)(0) = n(n-1) (-1/sigma)^(n-2) He_(n-2)(r) */
			s += DP_EM_COEF[k] * n * (n - 1) * pow(sigma, 2 - n) * he[n - 2];
		}
		return 2.0 * s * exp(-0.5 * r * r - lz);
	}
}

typedef struct DiscArg
{
	double		Delta;
	double		eps;
	double		ratio;			/* m = ratio sqrt(sigma2), rounded down */
	double		ldelta;
} DiscArg;

/* m for a given sigma2 at a fixed ratio, never above ratio sqrt(sigma2). */
static double
disc_m(const DiscArg *a, double sigma2)
{
	double		m = a->ratio * sqrt(sigma2);

	return m > 0.0 ? m * (1.0 - 4.0 * DP_ULP) : 0.0;
}

/* ln delta - ln target of the discrete noise at sigma2 = exp(t). */
static double
disc_fn(double t, const void *arg)
{
	const DiscArg *a = arg;
	double		s2 = exp(t);
	double		d = discrete_osgt_delta_up(a->eps, a->Delta, disc_m(a, s2), s2);

	return d > 0.0 ? log(d) - a->ldelta : -INFINITY;
}

/*
 * Smallest sigma2 >= sigma_c^2 whose discrete profile (at the ratio) meets
 * (eps, delta), where sigma_c is the continuous calibration.
 */
static DpDiscreteParams
discrete_calibrate(double Delta, double eps, double delta, double ratio, double sigma_c)
{
	DiscArg		a = {Delta, eps, ratio, log(delta)};
	DpDiscreteParams res;
	double		s2 = sigma_c * sigma_c;

	if (fma(sigma_c, sigma_c, -s2) > 0.0)
		s2 = nextafter(s2, INFINITY);
	if (disc_fn(log(s2), &a) > 0.0)
	{
		double		t0 = log(s2);
		double		t = dp_solve_decreasing(disc_fn, &a, t0, 1e-3,
											fmax(4e-15, 4.0 * DP_ULP * fabs(t0)), t0, t0 + 20.0);

		if (isnan(t))
		{
			res.m = res.sigma2 = res.sigma = res.variance = NAN;
			return res;
		}
		s2 = fmax(exp(t), s2);
		for (int i = 0; i < 1000 && disc_fn(log(s2), &a) > 0.0; i++)
			s2 = nextafter(s2, INFINITY);
	}
	res.sigma2 = s2;
	res.m = disc_m(&a, s2);
	res.sigma = sqrt(s2);
	res.variance = dp_discrete_osgt_variance(res.m, s2);
	return res;
}

/* Smallest discrete Gaussian meeting (eps, delta), never below the analytic sigma. */
DpDiscreteParams
dp_discrete_gauss_calibrate(int64_t Delta, double eps, double delta)
{
	if (!dp_target_ok((double) Delta, eps, delta) || !discrete_params_ok(Delta, 0.0, 1.0))
	{
		DpDiscreteParams bad = {NAN, NAN, NAN, NAN};

		return bad;
	}
	return discrete_calibrate((double) Delta, eps, delta, 0.0,
							  dp_gauss_sigma_analytic((double) Delta, eps, delta));
}

/* sigma of dp_discrete_gauss_calibrate (its exact sigma2 in *sigma2 if not NULL). */
double
dp_discrete_gauss_sigma(int64_t Delta, double eps, double delta, double *sigma2)
{
	DpDiscreteParams p = dp_discrete_gauss_calibrate(Delta, eps, delta);

	if (sigma2)
		*sigma2 = p.sigma2;
	return p.sigma;
}

/* Discrete OSGT at the sub-Gaussian optimal ratio meeting (eps, delta). */
DpDiscreteParams
dp_discrete_osgt_opt(int64_t Delta, double eps, double delta)
{
	DpOsgtParams c;

	if (!dp_target_ok((double) Delta, eps, delta) || !discrete_params_ok(Delta, 0.0, 1.0))
	{
		DpDiscreteParams bad = {NAN, NAN, NAN, NAN};

		return bad;
	}
	c = dp_osgt_opt_subgaussian((double) Delta, eps, delta);
	return discrete_calibrate((double) Delta, eps, delta, c.m / c.sigma, c.sigma);
}

/* D_alpha bound of the discrete Gaussian: alpha Delta^2 / (2 sigma2) (CKS 2020). */
double
dp_discrete_gauss_rdp(double alpha, int64_t Delta, double sigma2)
{
	double		D = (double) Delta;

	if (!(alpha > 1.0) || !dp_finite_num(alpha) || !discrete_params_ok(Delta, 0.0, sigma2))
		return NAN;
	return alpha * D * D / (2.0 * sigma2) * (1.0 + 4.0 * DP_ULP);
}

/* zCDP rho of the discrete Gaussian: Delta^2 / (2 sigma2) (CKS 2020). */
double
dp_discrete_gauss_rho(int64_t Delta, double sigma2)
{
	double		D = (double) Delta;

	if (!discrete_params_ok(Delta, 0.0, sigma2))
		return NAN;
	return D * D / (2.0 * sigma2) * (1.0 + 4.0 * DP_ULP);
}

/*
 * Upper bound on D_alpha of the discrete OSGT: alpha h^2/2 + ln(Bbar/Z)/(alpha-1),
 * Bbar = sum_{j>=0} G(j - (alpha-1)Delta + m) + sum_{j>=0} G(j + alpha Delta + m)
 *      + e^E sum_{k=1}^{Delta-1} G(k + K0), G(x) = exp(-x^2/(2 sigma2)),
 * K0 = (alpha-1)Delta + (2alpha-1)m, E = 2 alpha (alpha-1) m (Delta + m)/sigma2
 * (the continuous derivation with sums in place of integrals).
 */
static double
discrete_osgt_rdp_up(double alpha, double Delta, double m, double sigma2)
{
	double		eta = alpha - 1.0;
	double		E = 2.0 * alpha * eta * m * (Delta + m) / sigma2;
	DpSumTerm	t[3];
	DpGaussSum	g;
	double		L,
				up,
				lz_lo,
				lnum,
				d;
	int			nt = 0;

	dp_gauss_sum(eta * Delta - m, sigma2, 0.0, INFINITY, &g);
	t[nt++] = (DpSumTerm) {g.ls, g.v, g.err, 1};
	dp_gauss_sum(-(alpha * Delta + m), sigma2, 0.0, INFINITY, &g);
	t[nt++] = (DpSumTerm) {g.ls, g.v, g.err, 1};
	if (Delta >= 2.0)
	{
		dp_gauss_sum(-(eta * Delta + (1.0 + 2.0 * eta) * m), sigma2, 1.0, Delta - 1.0, &g);
		t[nt++] = (DpSumTerm) {g.ls + E, g.v, g.err, 1};
	}
	up = dp_sum_terms_bound(t, nt, 1, &L);
	lz_lo = discrete_log_norm(m, sigma2, NULL);
	lnum = L + log(up);
	d = 0.5 * alpha * Delta * Delta / sigma2 + (lnum - lz_lo) / eta;
	/* rounding of the logarithms, amplified by 1/eta */
	d += 8.0 * DP_ULP * (fabs(L) + fabs(lz_lo) + fabs(log(up)) + 1.0) / eta +
		8.0 * DP_ULP * fabs(d);
	if (m == 0.0)
		d = fmin(d, alpha * Delta * Delta / (2.0 * sigma2) * (1.0 + 4.0 * DP_ULP));
	return d;
}

/* Upper bound on D_alpha of the discrete OSGT. */
double
dp_discrete_osgt_rdp(double alpha, int64_t Delta, double m, double sigma2)
{
	if (!(alpha > 1.0) || !dp_finite_num(alpha) || !discrete_params_ok(Delta, m, sigma2))
		return NAN;
	return discrete_osgt_rdp_up(alpha, (double) Delta, m, sigma2);
}

typedef struct DiscRhoArg
{
	double		Delta;
	double		m;
	double		sigma2;
	double		lz_lo;
} DiscRhoArg;

/* Upper bound on the discrete OSGT D_{1+eta}. */
static double
disc_rdp_up_eta(double eta, const void *arg)
{
	const DiscRhoArg *a = arg;

	return discrete_osgt_rdp_up(1.0 + eta, a->Delta, a->m, a->sigma2);
}

/*
 * Bound on sup_{alpha >= A} D_alpha/alpha of the discrete OSGT:
 * Bbar <= lat + sqrt(2 pi) sigma [Q(v) + phi(s) min(M(0), 1/x2)] + G(alpha Delta + m),
 * where lat bounds any lattice sum sum_j G(j - mu): sqrt(2 pi) sigma theta
 * (Poisson summation) or 2/(1 - e^{-1/(2 sigma2)}) (j^2 >= j); the tails of
 * decreasing terms are bounded by integrals and e^E phi(x2) = phi(s).  Every
 * part decreases in alpha once s >= 0.
 */
static double
disc_rdp_tail(double A, const void *arg)
{
	const DiscRhoArg *a = arg;
	double		sigma = sqrt(a->sigma2);
	double		h = a->Delta / sigma,
				r = a->m / sigma;
	double		s = (A - 1.0) * h - r;
	double		x2 = r + (A - 1.0) * (h + 2.0 * r);
	double		v = A * h + r;
	double		lat = -2.0 / expm1(-0.5 / a->sigma2);
	double		bb,
				c;

	if (s < 0.0)
		return INFINITY;
	if (a->sigma2 >= 0.25)
		lat = fmin(lat, DP_SQRT2PI * sigma * dp_jacobi_theta(a->sigma2));
	bb = lat * (1.0 + 8.0 * DP_ULP) +
		DP_SQRT2PI * sigma * (dp_norm_q(v) +
							  exp(-0.5 * s * s) / DP_SQRT2PI * fmin(DP_MILLS0, 1.0 / x2)) +
		exp(-0.5 * v * v);
	c = fmax(log(bb) - a->lz_lo, 0.0) * (1.0 + 1e-12) + 1e-300;
	return (0.5 * h * h + c / (A * (A - 1.0))) * (1.0 + 8.0 * DP_ULP);
}

/* Smallest rho (rounded up) with D_alpha <= rho alpha for all alpha > 1, discrete OSGT. */
double
dp_discrete_osgt_rho(int64_t Delta, double m, double sigma2)
{
	DiscRhoArg	a;
	double		best = INFINITY,
				eta0 = 1e-6;
	static const double etas[4] = {1e-7, 1e-6, 1e-5, 1e-4};

	if (!discrete_params_ok(Delta, m, sigma2))
		return NAN;
	if (m == 0.0)
		return dp_discrete_gauss_rho(Delta, sigma2);
	a.Delta = (double) Delta;
	a.m = m;
	a.sigma2 = sigma2;
	a.lz_lo = discrete_log_norm(m, sigma2, NULL);
	/* D_{1+eta} grows with eta, its rounding bound shrinks: take the best start */
	for (int i = 0; i < 4; i++)
	{
		double		d = disc_rdp_up_eta(etas[i], &a);

		if (d < best)
		{
			best = d;
			eta0 = etas[i];
		}
	}
	return dp_rho_bracket(disc_rdp_up_eta, disc_rdp_tail, &a, eta0);
}


/* ------------------------------------------------------------------------
 * Discrete Laplace
 * ------------------------------------------------------------------------ */

/* Discrete Laplace scale t >= Delta/eps: the pmf ratio is at most e^{Delta/t} <= e^eps. */
double
dp_discrete_laplace_scale(int64_t Delta, double eps)
{
	if (Delta < 1 || Delta > ((int64_t) 1 << 52))
		return NAN;
	return dp_laplace_scale((double) Delta, eps);
}

/* delta(eps) of discrete Laplace for the cut after K (0 <= K < Delta/2). */
static double
dlaplace_delta_cut(double eps, double D, double beta, double K)
{
	/* [1 - q^{K+1} + q (1 - e^eps q^{D-K-1})]/(1 + q), q = e^-beta */
	double		q = exp(-beta);

	return (-expm1(-beta * (K + 1.0)) - q * expm1(eps - beta * (D - K - 1.0))) / (1.0 + q);
}

/* Exact delta(eps) of discrete Laplace noise with scale t. */
double
dp_discrete_laplace_delta(double eps, int64_t Delta, double t)
{
	double		D = (double) Delta,
				beta,
				y,
				K,
				d;

	if (!(eps >= 0.0) || !(t > 0.0) || !dp_finite_num(t) || Delta < 1 ||
		Delta > ((int64_t) 1 << 52))
		return NAN;
	/* L(k) = D/t for k <= 0, (D - 2k)/t on [0, D], -D/t beyond */
	if (fma(eps, t, -D) >= 0.0)
		return 0.0;
	beta = 1.0 / t;
	y = 0.5 * (D - eps * t);	/* L(k) > eps iff k < y */
	K = fmax(ceil(y) - 1.0, 0.0);
	d = dlaplace_delta_cut(eps, D, beta, K);
	/* a cut within rounding of an integer: the larger candidate is the true one */
	if (fabs(y - nearbyint(y)) <= 8.0 * DP_ULP * (D + fabs(eps * t)))
	{
		d = fmax(d, dlaplace_delta_cut(eps, D, beta, fmax(K - 1.0, 0.0)));
		d = fmax(d, dlaplace_delta_cut(eps, D, beta, K + 1.0));
	}
	d *= 1.0 + 16.0 * DP_ULP;
	return d < 0.0 ? 0.0 : (d > 1.0 ? 1.0 : d);
}

/* Variance of discrete Laplace noise: 2q/(1-q)^2, q = e^{-1/t}. */
double
dp_discrete_laplace_variance(double t)
{
	double		em;

	if (!(t > 0.0) || !dp_finite_num(t))
		return NAN;
	em = expm1(-1.0 / t);
	return 2.0 * exp(-1.0 / t) / (em * em);
}

/*
 * Exact D_alpha of discrete Laplace noise, beta = 1/t, gamma = (2alpha-1) beta:
 * sum p^alpha q^{1-alpha} = e^{(alpha-1) beta D} [1 + e^{-gamma D}
 * + (1 - e^{-beta}) sum_{k=1}^{D-1} e^{-gamma k}] / (1 + e^{-beta}).
 */
double
dp_discrete_laplace_rdp(double alpha, int64_t Delta, double t)
{
	double		D = (double) Delta,
				beta,
				gam,
				G,
				inner,
				d,
				eps;

	if (!(alpha > 1.0) || !dp_finite_num(alpha) || !(t > 0.0) || !dp_finite_num(t) ||
		Delta < 1 || Delta > ((int64_t) 1 << 52))
		return NAN;
	beta = 1.0 / t;
	gam = (2.0 * alpha - 1.0) * beta;
	G = D >= 2.0 ? -expm1(-gam * (D - 1.0)) / expm1(gam) : 0.0;
	inner = 1.0 + exp(-gam * D) - expm1(-beta) * G;
	d = beta * D + (log(inner) - log1p(exp(-beta))) / (alpha - 1.0);
	/* rounding, amplified by 1/(alpha-1) */
	d += 8.0 * DP_ULP * ((alpha - 1.0) * beta * D + 2.0) / (alpha - 1.0) + 8.0 * DP_ULP * d;
	/* exactly eps-DP with eps = D/t: D_alpha <= eps and <= alpha eps^2/2 */
	eps = D * beta;
	return fmin(d, fmin(eps, 0.5 * alpha * eps * eps) * (1.0 + 4.0 * DP_ULP));
}

/* zCDP rho of discrete Laplace noise: (Delta/t)^2 / 2 (Bun-Steinke 2016, Prop 3.3). */
double
dp_discrete_laplace_rho(int64_t Delta, double t)
{
	double		eps;

	if (!(t > 0.0) || !dp_finite_num(t) || Delta < 1 || Delta > ((int64_t) 1 << 52))
		return NAN;
	eps = (double) Delta / t;
	return 0.5 * eps * eps * (1.0 + 4.0 * DP_ULP);
}
