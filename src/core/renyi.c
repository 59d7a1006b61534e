/*
 * renyi.c — Rényi divergences of continuous additive noise (Laplace,
 * Gaussian, OSGT), the zCDP rho of OSGT noise, and the conversions from
 * RDP and zCDP to (eps, delta), for dp_pg's privacy accounting.
 *
 * Notation: Q(x) = 1 - Phi(x), phi the standard normal density, M(x) =
 * Q(x)/phi(x) the Mills ratio (special.c), Delta the sensitivity,
 * h = Delta/sigma, r = m/sigma; D_alpha of order alpha > 1.  "ref" is
 * test/reference/README.md (section numbers in brackets).
 *
 * Rényi divergences:
 *   Gaussian     alpha h^2/2                                           [Mironov 2017]
 *   Laplace      1/(alpha-1) ln[alpha/(2alpha-1) e^{(alpha-1)a}
 *                + (alpha-1)/(2alpha-1) e^{-alpha a}], a = Delta/b     [Mironov 2017, Table II]
 *   OSGT         alpha h^2/2 + ln(Bbar/(2Q(r)))/(alpha-1),             [ref 4, seed 000]
 *                Bbar = Phi(s) + Q(alpha h + r) + e^E [Q(x2) - Q(x2 + h)],
 *                s = (alpha-1)h - r, x2 = (alpha-1)h + (2alpha-1) r,
 *                E = 2 alpha (alpha-1) r (h + r); and e^E phi(x2) = phi(s).
 *                Near alpha = 1, Bbar - 2Q(r) is summed from differences of Q
 *                that carry no cancellation; for large E, ln Bbar by log-sum-exp.
 *                Differences of Q are computed from a start and a width
 *                (never from two rounded ends) as phi(u) [M(u) - M(u+w)
 *                + (1 - e^{-w(2u+w)/2}) M(u+w)].
 *   zeta bound   alpha h^2/2 + ln((1 - Q(r))/Q(r))/(alpha - 1)          [seed 000]
 *   OSGT rho     sup_{alpha>1} D_alpha/alpha, bracketed rigorously:
 *                D_alpha is nondecreasing in alpha, so alpha in (1, 1+eta0] is
 *                covered by D_{1+eta0}; phi(alpha) = (alpha-1) D_alpha is a
 *                log-moment generating function hence convex, so between grid
 *                points phi lies below its chord and D_alpha/alpha below
 *                chord/(alpha(alpha-1)), maximised in closed form; for
 *                alpha >= A, Bbar <= 1 + phi(s) min(M(0), 1/x2) (using M(x) < 1/x,
 *                Q(alpha h + r) <= Q(s)) bounds the rest.  The sup is found at
 *                alpha -> 1 (the KL divergence h^2/2 + r I/M(r),
 *                I = int_0^h (h - w) e^{-w(2r+w)/2} dw) in every case tried; the
 *                chords are refined within a budget of evaluations, so the
 *                bound is within 1e-6 of KL for sigma/Delta <~ 10 and ~5e-4
 *                when D_alpha/alpha stays flat up to alpha ~ sigma/Delta.
 * RDP -> DP:     eps = D + ln(1/delta)/(alpha-1)                         [Mironov 2017, Prop 3]
 *                eps = D + ln(1 - 1/alpha) - (ln delta + ln alpha)/(alpha-1)   [CKS 2020]
 * zCDP:          eps = rho + 2 sqrt(rho ln(1/delta))                       [Bun-Steinke 2016, Prop 1.3]
 *                eps = min_alpha alpha rho + [ln(1/delta) + (alpha-1) ln(1-1/alpha) - ln alpha]/(alpha-1),
 *                  at rho (alpha-1)^2 = ln(1/delta) - ln alpha              [CKS 2020]
 *                delta = min_alpha e^{(alpha-1)(alpha rho - eps)}/(alpha-1) (1-1/alpha)^alpha,
 *                  at (2alpha-1) rho - eps + ln(1 - 1/alpha) = 0            [CKS 2020]
 *
 * Layer core/ (docs/development.md): plain C, <math.h> only; may call
 * special.c (special.h), continuous.c (continuous.h: the OSGT parameter
 * check) and the C library.  renyi.h offers the rho bracket to discrete.c;
 * the public functions are declared in calibrate.h.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "calibrate.h"
#include "continuous.h"
#include "renyi.h"
#include "special.h"

const double DP_RDP_ALPHAS[DP_RDP_NALPHAS] = {
	1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 128, 256
};


/* ------------------------------------------------------------------------
 * Rényi divergences
 * ------------------------------------------------------------------------ */

/* ln(e^a + e^b) */
static double
log_add(double a, double b)
{
	if (a < b)
	{
		double		t = a;

		a = b;
		b = t;
	}
	if (b == -INFINITY)
		return a;
	return a + log1p(exp(b - a));
}


/* expm1(x) - x without cancellation. */
static double
expm1_minus_x(double x)
{
	if (fabs(x) < 0.5)
	{
		double		term = x * x / 2.0,
					sum = 0.0;

		for (int k = 3; k < 40 && fabs(term) > 1e-20 * fabs(sum); k++)
		{
			sum += term;
			term *= x / k;
		}
		return sum;
	}
	return expm1(x) - x;
}

/* D_alpha of Laplace noise (Mironov 2017, Table II), a = Delta/b. */
double
dp_laplace_rdp(double alpha, double Delta, double b)
{
	double		a,
				d;

	if (!(alpha > 1.0) || !dp_finite_num(alpha) || !(Delta > 0.0) || !(b > 0.0) ||
		!dp_finite_num(Delta) || !dp_finite_num(b))
		return NAN;
	a = Delta / b;
	if (alpha * a <= 1.0)
	{
		/* the first-order terms of the two exponentials cancel exactly */
		double		s = alpha / (2.0 * alpha - 1.0) * expm1_minus_x((alpha - 1.0) * a) +
			(alpha - 1.0) / (2.0 * alpha - 1.0) * expm1_minus_x(-alpha * a);

		d = log1p(s) / (alpha - 1.0);
	}
	else
		d = a + (log(alpha / (2.0 * alpha - 1.0)) +
				 log1p((alpha - 1.0) / alpha * exp(-(2.0 * alpha - 1.0) * a))) / (alpha - 1.0);
	/* eps-DP bounds every order by eps and by alpha eps^2/2 (Bun-Steinke) */
	d = fmin(d, fmin(a, 0.5 * alpha * a * a));
	return d * (1.0 + 4.0 * DP_ULP);
}

/* D_alpha of Gaussian noise: alpha Delta^2 / (2 sigma^2). */
double
dp_gauss_rdp(double alpha, double Delta, double sigma)
{
	double		h;

	if (!(alpha > 1.0) || !dp_finite_num(alpha) || !dp_osgt_params_ok(Delta, 0.0, sigma))
		return NAN;
	h = Delta / sigma;
	return 0.5 * alpha * h * h * (1.0 + 4.0 * DP_ULP);
}

/* ln Bbar of the exact OSGT Rényi formula, by log-sum-exp. */
static double
osgt_log_bbar_hr(double alpha, double h, double r)
{
	double		eta = alpha - 1.0;
	double		s = eta * h - r;
	double		x2 = r + eta * (h + 2.0 * r);
	double		E = 2.0 * alpha * eta * r * (h + r);
	double		l;

	l = log_add(dp_norm_log_q(-s), dp_norm_log_q(alpha * h + r));
	return log_add(l, E + dp_log_qdiff(x2, h));
}

/*
 * D_alpha of OSGT noise in units of sigma, with a bound on its rounding
 * error in *err.  For moderate E, Bbar - 2Q(r) is summed from four
 * differences of Q, each computed without cancellation, so the result
 * stays accurate as alpha -> 1 (where ln(Bbar/2Q(r)) -> 0).
 */
static double
osgt_rdp_hr(double alpha, double h, double r, double *err)
{
	double		eta = alpha - 1.0;
	double		E = 2.0 * alpha * eta * r * (h + r);
	double		lb,
				e,
				d;

	if (E <= 30.0)
	{
		double		x2 = r + eta * (h + 2.0 * r);

		/*
		 * Phi(s) - Q(r), Q(alpha h + r) - Q(x2 + h), (e^E - 1)(Q(x2) - Q(x2 + h)),
		 * Q(r) - Q(x2), each as (start, width)
		 */
		double		ta = dp_qdiff_over_2q(r - eta * h, eta * h, r);
		double		tb = dp_qdiff_over_2q(r + h + eta * h, 2.0 * eta * r, r);
		double		tc = expm1(E) * dp_qdiff_over_2q(x2, h, r);
		double		td = dp_qdiff_over_2q(r, eta * (h + 2.0 * r), r);
		double		n = ta + tb + tc - td;

		lb = log1p(n);
		/* each difference of Q to ~1e-13 relative (see dp_mills_diff) */
		e = 2e-13 * (ta + tb + tc + td) / (1.0 + n);
	}
	else
	{
		double		l2q = DP_LN2 + dp_norm_log_q(r);
		double		lbb = osgt_log_bbar_hr(alpha, h, r);

		lb = lbb - l2q;
		e = 1e-14 * (fabs(lbb) + fabs(l2q) + 1.0);
	}
	d = 0.5 * alpha * h * h + lb / eta;
	if (err)
		*err = e / eta + 8.0 * DP_ULP * fabs(d);
	return d;
}

/* D_alpha of OSGT noise, exact (rounded up by its error bound). */
double
dp_osgt_rdp(double alpha, double Delta, double m, double sigma)
{
	double		d,
				e;

	if (!(alpha > 1.0) || !dp_finite_num(alpha) || !dp_osgt_params_ok(Delta, m, sigma))
		return NAN;
	if (m == 0.0)
		return dp_gauss_rdp(alpha, Delta, sigma);
	d = osgt_rdp_hr(alpha, Delta / sigma, m / sigma, &e);
	return d + e;
}

/* ln Bbar of the exact OSGT Rényi formula (reference column Bbar). */
double
dp_osgt_rdp_log_bbar(double alpha, double Delta, double m, double sigma)
{
	if (!(alpha > 1.0) || !dp_finite_num(alpha) || !dp_osgt_params_ok(Delta, m, sigma))
		return NAN;
	return osgt_log_bbar_hr(alpha, Delta / sigma, m / sigma);
}

/* The OSGT slides' single-letter bound on D_alpha. */
double
dp_osgt_rdp_zeta_bound(double alpha, double Delta, double m, double sigma)
{
	double		h,
				r;

	if (!(alpha > 1.0) || !dp_finite_num(alpha) || !dp_osgt_params_ok(Delta, m, sigma))
		return NAN;
	h = Delta / sigma;
	r = m / sigma;
	return 0.5 * alpha * h * h +
		(log1p(-dp_norm_q(r)) - dp_norm_log_q(r)) / (alpha - 1.0);
}

/* KL divergence (D_1) of OSGT noise: h^2/2 + r I/M(r), I = int_0^h (h-w) e^{-w(2r+w)/2} dw. */
double
dp_osgt_kl(double Delta, double m, double sigma)
{
	double		h,
				r,
				I;

	if (!dp_osgt_params_ok(Delta, m, sigma))
		return NAN;
	h = Delta / sigma;
	r = m / sigma;
	if (h * (2.0 * r + h) <= 1.0)
	{
		/* smooth integrand: 10-point Gauss-Legendre */
		static const double node[5] = {0.14887433898163121, 0.43339539412924719,
			0.67940956829902441, 0.86506336668898451, 0.97390652851717172};
		static const double weight[5] = {0.29552422471475287, 0.26926671930999636,
			0.21908636251598204, 0.14945134915058059, 0.06667134430868814};

		I = 0.0;
		for (int i = 0; i < 5; i++)
			for (int sgn = -1; sgn <= 1; sgn += 2)
			{
				double		w = 0.5 * h * (1.0 + sgn * node[i]);

				I += weight[i] * (h - w) * exp(-0.5 * w * (2.0 * r + w));
			}
		I *= 0.5 * h;
	}
	else
		I = (h + r) * dp_qdiff_scaled(r, h) + expm1(-0.5 * h * (2.0 * r + h));
	return 0.5 * h * h + r * I / dp_mills(r);
}

/*
 * Upper bound on sup over alpha in [alpha1, alpha2] of phi(alpha)/(alpha(alpha-1)),
 * phi convex, given upper bounds p1, p2 of phi at the ends (eta = alpha - 1):
 * phi lies below the chord u + k eta, and (u + k eta)/((1+eta) eta) has its
 * critical points at k eta^2 + 2u eta + u = 0.
 */
static double
chord_sup(double e1, double p1, double e2, double p2)
{
	double		k = (p2 - p1) / (e2 - e1);
	double		u = p1 - k * e1;
	double		best = fmax(p1 / ((1.0 + e1) * e1), p2 / ((1.0 + e2) * e2));

	if (k != 0.0)
	{
		double		disc = u * (u - k);

		if (disc >= 0.0)
		{
			double		sq = sqrt(disc);

			for (int sgn = -1; sgn <= 1; sgn += 2)
			{
				double		e = (-u + sgn * sq) / k;

				if (e > e1 && e < e2)
					best = fmax(best, (u + k * e) / ((1.0 + e) * e));
			}
		}
	}
	return best * (1.0 + 16.0 * DP_ULP);
}

#define DP_RHO_MAX_EVAL 400

/* One interval [1 + e1, 1 + e2] of the rho search with its chord bound b. */
typedef struct RhoInterval
{
	double		e1;
	double		d1;
	double		e2;
	double		d2;
	double		b;
} RhoInterval;

/*
 * Smallest rho with D_alpha <= rho alpha for all alpha > 1, bracketed from
 * above: D_{1+eta0} covers (1, 1+eta0] (D_alpha is nondecreasing), chord
 * bounds of the convex phi cover [1+eta0, A], tail(A) covers [A, inf).  The
 * result is the largest of these bounds, so it is never below the true rho.
 * Intervals whose bound exceeds D_{1+eta0} (1 + 1e-6) are split in ln eta,
 * breadth first, within a budget of evaluations; an interval left unsplit
 * keeps its valid, looser bound (where D_alpha/alpha stays flat up to
 * alpha ~ sigma/Delta the chords need a fine grid: the bound is then within
 * ~1e-4 of the sup instead of 1e-6).
 */
double
dp_rho_bracket(DpRdpUpFn fn, DpRdpTailFn tail, const void *arg, double eta0)
{
	RhoInterval iv[DP_RHO_MAX_EVAL + 80];
	double		rho0 = fn(eta0, arg);
	double		target = rho0 * (1.0 + 1e-6);
	double		best = rho0,
				A = 2.0,
				t = INFINITY,
				e,
				d;
	int			n = 0,
				evals = 1;
	bool		split = true;

	if (isnan(rho0))
		return NAN;
	for (int i = 0; i < 64; i++)
	{
		t = tail(A, arg);
		if (t <= rho0)
			break;
		A *= 2.0;
	}
	best = fmax(best, t);
	/* initial grid, ratio 2 in eta (A <= 2^65 and eta0 >= 1e-9: < 80 intervals) */
	e = eta0;
	d = rho0;
	while (e < A - 1.0)
	{
		double		e2 = fmin(e * 2.0, A - 1.0);
		double		d2 = fn(e2, arg);

		evals++;
		iv[n++] = (RhoInterval) {e, d, e2, d2, chord_sup(e, e * d, e2, e2 * d2)};
		e = e2;
		d = d2;
	}
	while (split && evals < DP_RHO_MAX_EVAL)
	{
		int			n0 = n;

		split = false;
		for (int i = 0; i < n0 && evals < DP_RHO_MAX_EVAL; i++)
		{
			RhoInterval *p = &iv[i];
			double		em,
						dm;

			if (p->b <= target)
				continue;
			em = sqrt(p->e1 * p->e2);
			dm = fn(em, arg);
			evals++;
			iv[n++] = (RhoInterval) {em, dm, p->e2, p->d2,
				chord_sup(em, em * dm, p->e2, p->e2 * p->d2)};
			p->e2 = em;
			p->d2 = dm;
			p->b = chord_sup(p->e1, p->e1 * p->d1, em, em * dm);
			split = true;
		}
	}
	for (int i = 0; i < n; i++)
		best = fmax(best, iv[i].b);
	return best;
}

typedef struct OsgtRhoArg
{
	double		h;
	double		r;
} OsgtRhoArg;

/* Upper bound on the OSGT D_{1+eta}. */
static double
osgt_rdp_up_eta(double eta, const void *arg)
{
	const OsgtRhoArg *a = arg;
	double		e,
				d = osgt_rdp_hr(1.0 + eta, a->h, a->r, &e);

	return d + e;
}

/* Bound on sup_{alpha >= A} D_alpha/alpha of OSGT: Bbar <= 1 + phi(s) min(M(0), 1/x2). */
static double
osgt_rdp_tail(double A, const void *arg)
{
	const OsgtRhoArg *a = arg;
	double		s = (A - 1.0) * a->h - a->r;
	double		x2 = a->r + (A - 1.0) * (a->h + 2.0 * a->r);
	double		c;

	if (s < 0.0)
		return INFINITY;
	c = log1p(exp(-0.5 * s * s) / DP_SQRT2PI * fmin(DP_MILLS0, 1.0 / x2)) -
		DP_LN2 - dp_norm_log_q(a->r);
	c = fmax(c, 0.0) * (1.0 + 1e-12) + 1e-300;
	return (0.5 * a->h * a->h + c / (A * (A - 1.0))) * (1.0 + 8.0 * DP_ULP);
}

/* Smallest rho (rounded up) with D_alpha <= rho alpha for all alpha > 1, OSGT. */
double
dp_osgt_rho(double Delta, double m, double sigma)
{
	OsgtRhoArg	a;

	if (!dp_osgt_params_ok(Delta, m, sigma))
		return NAN;
	a.h = Delta / sigma;
	a.r = m / sigma;
	if (m == 0.0)
		return 0.5 * a.h * a.h * (1.0 + 4.0 * DP_ULP);
	return dp_rho_bracket(osgt_rdp_up_eta, osgt_rdp_tail, &a, 1e-8);
}


/* ------------------------------------------------------------------------
 * RDP conversions
 * ------------------------------------------------------------------------ */

/* eps at delta of one order alpha with D_alpha = d, by one conversion. */
typedef double (*RdpConvFn) (double d, double alpha, double delta);

/* Mironov 2017, Prop 3: D + ln(1/delta)/(alpha-1). */
static double
rdp_conv_mironov(double d, double alpha, double delta)
{
	return d - log(delta) / (alpha - 1.0);
}

/* Canonne-Kamath-Steinke 2020: D + ln(1 - 1/alpha) - (ln delta + ln alpha)/(alpha-1). */
static double
rdp_conv_improved(double d, double alpha, double delta)
{
	return d + log1p(-1.0 / alpha) - (log(delta) + log(alpha)) / (alpha - 1.0);
}

/* RDP curve -> (eps, delta) by conv, minimised over the grid (its alpha in *alpha_out). */
static double
rdp_eps_min(int n, const double *alphas, const double *rdp, double delta,
			double *alpha_out, RdpConvFn conv)
{
	double		best = INFINITY,
				ba = NAN;

	if (n <= 0 || !(delta > 0.0 && delta < 1.0))
		return NAN;
	for (int i = 0; i < n; i++)
	{
		double		e;

		if (!(alphas[i] > 1.0) || isnan(rdp[i]))
			return NAN;
		e = conv(rdp[i], alphas[i], delta);
		if (e < best)
		{
			best = e;
			ba = alphas[i];
		}
	}
	if (alpha_out)
		*alpha_out = ba;
	return fmax(best, 0.0);
}

/* RDP curve -> (eps, delta): min over the grid of D + ln(1/delta)/(alpha-1) (Mironov 2017). */
double
dp_rdp_eps_mironov(int n, const double *alphas, const double *rdp,
				   double delta, double *alpha_out)
{
	return rdp_eps_min(n, alphas, rdp, delta, alpha_out, rdp_conv_mironov);
}

/* RDP curve -> (eps, delta) by the CKS 2020 conversion, minimised over the grid. */
double
dp_rdp_eps_improved(int n, const double *alphas, const double *rdp,
					double delta, double *alpha_out)
{
	return rdp_eps_min(n, alphas, rdp, delta, alpha_out, rdp_conv_improved);
}


/* ------------------------------------------------------------------------
 * zCDP conversions
 * ------------------------------------------------------------------------ */

/* eps of rho-zCDP at delta: rho + 2 sqrt(rho ln(1/delta)) (Bun-Steinke 2016). */
double
dp_zcdp_eps_bun_steinke(double rho, double delta)
{
	if (!(rho >= 0.0) || !dp_finite_num(rho) || !(delta > 0.0 && delta < 1.0))
		return NAN;
	return rho + 2.0 * sqrt(rho * -log(delta));
}

/* eps of rho-zCDP at delta by Canonne-Kamath-Steinke 2020, with its minimising alpha. */
double
dp_zcdp_eps_cks(double rho, double delta, double *alpha_out)
{
	double		L,
				lo = 1.0,
				hi,
				a,
				e;

	if (!(rho > 0.0) || !dp_finite_num(rho) || !(delta > 0.0 && delta < 1.0))
		return NAN;
	L = -log(delta);
	/* F(alpha) = rho (alpha-1)^2 - L + ln alpha is increasing; F(1) < 0 <= F(hi) */
	hi = 1.0 + sqrt(L / rho) + 1e-12;
	for (int it = 0; it < 200; it++)
	{
		double		mid = 0.5 * (lo + hi);
		double		F;

		if (mid <= lo || mid >= hi)
			break;
		F = rho * (mid - 1.0) * (mid - 1.0) - L + log(mid);
		if (F > 0.0)
			hi = mid;
		else
			lo = mid;
	}
	a = 0.5 * (lo + hi);
	e = a * rho + (L - log(a)) / (a - 1.0) + log1p(-1.0 / a);
	if (alpha_out)
		*alpha_out = a;
	return fmax(e, 0.0);
}

/* delta of rho-zCDP at eps by Canonne-Kamath-Steinke 2020, with its minimising alpha. */
double
dp_zcdp_delta_cks(double rho, double eps, double *alpha_out)
{
	double		lo = 1.0,
				hi = 2.0,
				a,
				ld;

	if (!(rho > 0.0) || !dp_finite_num(rho) || !(eps >= 0.0) || !dp_finite_num(eps))
		return NAN;
	/* G(alpha) = (2 alpha - 1) rho - eps + ln(1 - 1/alpha) is increasing */
	while ((2.0 * hi - 1.0) * rho - eps + log1p(-1.0 / hi) <= 0.0)
	{
		lo = hi;
		hi *= 2.0;
		if (hi > 1e300)
			return NAN;
	}
	for (int it = 0; it < 200; it++)
	{
		double		mid = 0.5 * (lo + hi);

		if (mid <= lo || mid >= hi)
			break;
		if ((2.0 * mid - 1.0) * rho - eps + log1p(-1.0 / mid) > 0.0)
			hi = mid;
		else
			lo = mid;
	}
	a = 0.5 * (lo + hi);
	ld = (a - 1.0) * (a * rho - eps) - log(a - 1.0) + a * log1p(-1.0 / a);
	if (alpha_out)
		*alpha_out = a;
	return fmin(exp(ld), 1.0);
}
