/*
 * continuous.c — privacy profiles and calibration of continuous additive
 * noise (Laplace, Gaussian, OSGT) for dp_pg.
 *
 * Notation: Q(x) = 1 - Phi(x), phi the standard normal density, M(x) =
 * Q(x)/phi(x) the Mills ratio (special.c), Y the noise, Delta the
 * sensitivity, h = Delta/sigma, r = m/sigma.  "ref" is
 * test/reference/README.md (section numbers in brackets).
 *
 * Privacy profiles, delta(eps) = max(H_eps(P||Q), H_eps(Q||P)):
 *   Laplace(b)   delta = max(0, 1 - exp((eps - Delta/b)/2))       [ref 2.1, Dwork-Roth]
 *                eps(delta) = max(0, Delta/b + 2 ln(1 - delta)),
 *                b_min = Delta / (eps + 2 ln(1/(1 - delta)))
 *   Gaussian     delta = Q(a) - e^eps Q(a + h), a = eps/h - h/2     [Balle-Wang 2018, Thm 8]
 *                (the OSGT formula with m = 0)
 *   OSGT(m,sig)  density exp(-(|y| + m)^2/(2 sigma^2)) / (sqrt(2 pi) sigma 2Q(r))
 *                [Sadeghi-Korki, TIFS 2022; seed 000; ref 2.3]
 *                eps0 = h (h/2 + r)
 *                case 1 (eps >= eps0): delta = [Q(a) - e^eps Q(a + h)] / (2Q(r))
 *                case 2 (eps <  eps0): delta = 1 - [Q(c) + e^eps Q(d)] / (2Q(r)),
 *                  c = h'/2 - eps/h', d = h'/2 + eps/h', h' = h + 2r
 *                Because b^2 - a^2 = d^2 - c^2 = 2 eps, e^eps Q(b) = phi(a) M(b), so
 *                case 1 = exp(-(a-r)(a+r)/2) [M(a) - M(b)] / (2 M(r)) and case 2 =
 *                1 - exp(-(c-r)(c+r)/2) [M(c) + M(d)] / (2 M(r)); M(x) - M(x+h) is
 *                integrated (Gauss-Legendre of -M' = 1 - xM) when it would cancel,
 *                and eps - eps0 is formed in double-double from the raw
 *                parameters (for large r, delta depends on it through
 *                exp(-(a-r)(a+r)/2) with a - r = (eps - eps0)/h).
 *                Variance V = sigma^2 [1 + r^2 - r/M(r)]                [TIFS eq. (2)]
 *                = sigma^2 U/(r + U) with U = 2/(r + 3/(r + 4/(r + ...))) for r >= 5
 *                (Laplace's continued fraction M = 1/(x + 1/(x + 2/(x + ...)))).
 * Calibration: smallest scale whose computed profile meets the target (the
 *   profiles decrease in sigma, ref 3), found by a bracketed root search on
 *   ln delta, then nudged up one ulp at a time until it verifies.
 *   Classical sigma = Delta sqrt(2 ln(1.25/delta))/eps [Dwork-Roth Thm A.1],
 *   zCDP sigma = Delta/sqrt(2 rho) [Bun-Steinke 2016].  The sub-Gaussian OSGT
 *   optimum minimises V over m/sigma in [0, Q^{-1}(1/4)] (seed 000) by a grid
 *   scan plus golden-section refinement; it has always been on the boundary.
 *
 * Layer core/ (docs/development.md): plain C, <math.h> only; may call
 * special.c (special.h) and the C library.  continuous.h offers the
 * parameter checks and the variance bracket to renyi.c and discrete.c; the
 * public functions are declared in calibrate.h.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "calibrate.h"
#include "continuous.h"
#include "special.h"


/* ------------------------------------------------------------------------
 * Privacy profiles
 * ------------------------------------------------------------------------ */

/* s + e = a + b exactly (Knuth's TwoSum). */
static inline void
two_sum(double a, double b, double *s, double *e)
{
	double		bb;

	*s = a + b;
	bb = *s - a;
	*e = (a - (*s - bb)) + (b - bb);
}

/* p + e = a b exactly. */
static inline void
two_prod(double a, double b, double *p, double *e)
{
	*p = a * b;
	*e = fma(a, b, -*p);
}

/*
 * eps - eps0 = (eps sigma^2 - Delta (Delta/2 + m)) / sigma^2 in double-double:
 * for large m/sigma the profile depends on it through exp(-(a - r)(a + r)/2)
 * with a - r = (eps - eps0)/h, so eps0 must not be rounded first.
 */
static double
osgt_emr(double eps, double Delta, double m, double sigma)
{
	double		S,
				eS,
				P,
				eP,
				Q1,
				eQ1,
				Q2,
				eQ2,
				Qs,
				eQs,
				N,
				eN;

	two_prod(sigma, sigma, &S, &eS);
	two_prod(eps, S, &P, &eP);
	eP += eps * eS;
	two_prod(Delta, 0.5 * Delta, &Q1, &eQ1);
	two_prod(Delta, m, &Q2, &eQ2);
	two_sum(Q1, Q2, &Qs, &eQs);
	two_sum(P, -Qs, &N, &eN);
	return (N + (eN + eP - eQs - eQ1 - eQ2)) / S;
}


/* delta(eps) of Laplace noise with scale b. */
double
dp_laplace_delta(double eps, double Delta, double b)
{
	double		a;

	if (!(eps >= 0.0) || !(Delta > 0.0) || !(b > 0.0) || !dp_finite_num(Delta) || !dp_finite_num(b))
		return NAN;
	a = Delta / b;
	if (eps >= a)
		return 0.0;
	return -expm1(0.5 * (eps - a));
}

/* eps(delta) of Laplace noise with scale b. */
double
dp_laplace_eps(double delta, double Delta, double b)
{
	double		e;

	if (!(delta >= 0.0 && delta <= 1.0) || !(Delta > 0.0) || !(b > 0.0) ||
		!dp_finite_num(Delta) || !dp_finite_num(b))
		return NAN;
	e = Delta / b + 2.0 * log1p(-delta);
	return e > 0.0 ? e : 0.0;
}

/*
 * OSGT (m = 0: Gaussian) delta(eps) in units of sigma: h = Delta/sigma,
 * r = m/sigma, emr = eps - eps0 computed accurately by the caller.
 */
static double
osgt_delta_emr(double eps, double h, double r, double emr, double *slope)
{
	double		mr = dp_mills(r);
	double		d;

	if (slope)
		*slope = NAN;
	if (emr >= 0.0)
	{
		/* case 1: exp(-(a-r)(a+r)/2) [M(a) - M(a+h)] / (2 M(r)) */
		double		amr = emr / h;
		double		a = r + amr;
		double		md = dp_mills_diff(a, h);

		d = exp(-0.5 * amr * (a + r)) * md / (2.0 * mr);

		/*
		 * d delta/d sigma = -phi(a) Delta/(sigma^2 2Q(r)) at fixed m/sigma
		 * (the terms in phi(a) and e^eps phi(b) = phi(a) cancel), so
		 * d ln delta/d ln sigma = -h / (M(a) - M(a+h)).
		 */
		if (slope)
			*slope = -h / md;
	}
	else
	{
		/* case 2: 1 - exp(-(c-r)(c+r)/2) [M(c) + M(d)] / (2 M(r)) */
		double		hp = h + 2.0 * r;
		double		cmr = -emr / hp;
		double		dmr = cmr + 2.0 * eps / hp;
		double		lns;

		lns = -0.5 * cmr * (2.0 * r + cmr) +
			log1p(-(dp_mills_diff(r, cmr) + dp_mills_diff(r, dmr)) / (2.0 * mr));
		d = -expm1(lns);
	}
	if (!(d > 0.0))
		return 0.0;
	return d < 1.0 ? d : 1.0;
}

/* True if (Delta, m, sigma) are valid OSGT parameters. */
bool
dp_osgt_params_ok(double Delta, double m, double sigma)
{
	return Delta > 0.0 && dp_finite_num(Delta) && m >= 0.0 && dp_finite_num(m) &&
		sigma > 0.0 && dp_finite_num(sigma);
}

/* delta(eps) of Gaussian noise N(0, sigma^2). */
double
dp_gauss_delta(double eps, double Delta, double sigma)
{
	if (!(eps >= 0.0) || !dp_osgt_params_ok(Delta, 0.0, sigma))
		return NAN;
	return osgt_delta_emr(eps, Delta / sigma, 0.0, osgt_emr(eps, Delta, 0.0, sigma), NULL);
}

/* delta(eps) of OSGT noise (m, sigma), both cases of the formula. */
double
dp_osgt_delta(double eps, double Delta, double m, double sigma)
{
	if (!(eps >= 0.0) || !dp_osgt_params_ok(Delta, m, sigma))
		return NAN;
	return osgt_delta_emr(eps, Delta / sigma, m / sigma, osgt_emr(eps, Delta, m, sigma), NULL);
}

/* OSGT case boundary eps0 = Delta (Delta + 2m) / (2 sigma^2). */
double
dp_osgt_eps0(double Delta, double m, double sigma)
{
	if (!dp_osgt_params_ok(Delta, m, sigma))
		return NAN;
	return Delta * (Delta + 2.0 * m) / (2.0 * sigma * sigma);
}

/* Which case of the OSGT delta formula applies at eps (1 or 2). */
int
dp_osgt_formula_case(double eps, double Delta, double m, double sigma)
{
	if (!(eps >= 0.0) || !dp_osgt_params_ok(Delta, m, sigma))
		return 0;
	return osgt_emr(eps, Delta, m, sigma) >= 0.0 ? 1 : 2;
}

/* 1 + r^2 - r M(r)^{-1}: the OSGT variance in units of sigma^2. */
double
dp_osgt_var_bracket(double r)
{
	if (r >= 5.0)
	{
		double		u = dp_mills_cf_tail(r, 2);

		return u / (r + u);
	}
	return 1.0 + r * r - r / dp_mills(r);
}

/* Variance V(m, sigma^2) of OSGT noise, stable for large m/sigma. */
double
dp_osgt_variance(double m, double sigma)
{
	if (!(m >= 0.0) || !dp_finite_num(m) || !(sigma > 0.0) || !dp_finite_num(sigma))
		return NAN;
	return sigma * sigma * dp_osgt_var_bracket(m / sigma);
}

typedef struct EpsArg
{
	double		Delta;
	double		m;
	double		sigma;
	double		ldelta;
} EpsArg;

/* delta(eps) of OSGT (m = 0: Gaussian), evaluated exactly as dp_osgt_delta does. */
static double
osgt_delta_raw(double eps, const EpsArg *a)
{
	return osgt_delta_emr(eps, a->Delta / a->sigma, a->m / a->sigma,
						  osgt_emr(eps, a->Delta, a->m, a->sigma), NULL);
}

/* ln delta(eps) - ln target for the eps(delta) search. */
static double
eps_fn(double eps, const void *arg)
{
	const EpsArg *a = arg;
	double		d = osgt_delta_raw(eps, a);

	return d > 0.0 ? log(d) - a->ldelta : -INFINITY;
}

/* Smallest eps >= 0 with the OSGT (m = 0: Gaussian) delta(eps) <= delta. */
static double
osgt_eps_raw(double delta, double Delta, double m, double sigma)
{
	EpsArg		a = {Delta, m, sigma, log(delta)};
	double		hi = 1.0,
				lo = 0.0,
				flo,
				fhi,
				e;

	if (delta >= 1.0 || osgt_delta_raw(0.0, &a) <= delta)
		return 0.0;
	flo = eps_fn(0.0, &a);
	while ((fhi = eps_fn(hi, &a)) > 0.0)
	{
		lo = hi;
		flo = fhi;
		hi *= 2.0;
		if (hi > 1e300)
			return INFINITY;
	}
	e = dp_root_decreasing(eps_fn, &a, lo, flo, hi, fhi, fmax(2e-16 * hi, 1e-300));
	for (int i = 0; i < 1000 && osgt_delta_raw(e, &a) > delta; i++)
		e = nextafter(e, INFINITY);
	return e;
}

/* eps(delta) of Gaussian noise N(0, sigma^2). */
double
dp_gauss_eps(double delta, double Delta, double sigma)
{
	if (!(delta > 0.0 && delta <= 1.0) || !dp_osgt_params_ok(Delta, 0.0, sigma))
		return NAN;
	return osgt_eps_raw(delta, Delta, 0.0, sigma);
}

/* eps(delta) of OSGT noise (m, sigma). */
double
dp_osgt_eps(double delta, double Delta, double m, double sigma)
{
	if (!(delta > 0.0 && delta <= 1.0) || !dp_osgt_params_ok(Delta, m, sigma))
		return NAN;
	return osgt_eps_raw(delta, Delta, m, sigma);
}


/* ------------------------------------------------------------------------
 * Calibration
 * ------------------------------------------------------------------------ */

/* True if (Delta, eps, delta) is a valid calibration target. */
bool
dp_target_ok(double Delta, double eps, double delta)
{
	return Delta > 0.0 && dp_finite_num(Delta) && eps > 0.0 && dp_finite_num(eps) &&
		delta > 0.0 && delta < 1.0;
}

/* Laplace scale Delta/eps, rounded up so that Delta/b <= eps exactly. */
double
dp_laplace_scale(double Delta, double eps)
{
	double		b;

	if (!(Delta > 0.0) || !dp_finite_num(Delta) || !(eps > 0.0) || !dp_finite_num(eps))
		return NAN;
	b = Delta / eps;
	/* b eps - Delta >= 0 exactly; fma rounds once, which keeps the sign */
	while (fma(b, eps, -Delta) < 0.0)
		b = nextafter(b, INFINITY);
	return b;
}

/* Smallest Laplace scale meeting (eps, delta): Delta/(eps + 2 ln(1/(1-delta))). */
double
dp_laplace_scale_min(double Delta, double eps, double delta)
{
	double		b;

	if (!dp_target_ok(Delta, eps, delta))
		return NAN;
	b = Delta / (eps - 2.0 * log1p(-delta));
	for (int i = 0; i < 256 && dp_laplace_delta(eps, Delta, b) > delta; i++)
		b = nextafter(b, INFINITY);
	return b;
}

/* Classical Gaussian sigma = Delta sqrt(2 ln(1.25/delta)) / eps (Dwork-Roth Thm A.1). */
double
dp_gauss_sigma_classical(double Delta, double eps, double delta)
{
	if (!dp_target_ok(Delta, eps, delta))
		return NAN;
	return Delta * sqrt(2.0 * log(1.25 / delta)) / eps;
}

/* Gaussian sigma for rho-zCDP: Delta / sqrt(2 rho) (rounded up). */
double
dp_gauss_sigma_zcdp(double Delta, double rho)
{
	double		s;

	if (!(Delta > 0.0) || !dp_finite_num(Delta) || !(rho > 0.0) || !dp_finite_num(rho))
		return NAN;
	s = Delta / sqrt(2.0 * rho);
	for (int i = 0; i < 8 && 0.5 * (Delta / s) * (Delta / s) > rho; i++)
		s = nextafter(s, INFINITY);
	return s;
}

typedef struct SigmaArg
{
	double		Delta;
	double		eps;
	double		m;				/* fixed offset (mode 0) */
	double		ratio;			/* fixed m/sigma (mode 1) */
	int			mode;
} SigmaArg;

/*
 * delta(eps) at scale sigma for a fixed m or a fixed m/sigma; *slope gets
 * d ln delta/d ln sigma where known (fixed ratio, case 1), else NaN.
 */
static double
sigma_profile(double sigma, const SigmaArg *a, double *slope)
{
	double		m = a->mode == 1 ? a->ratio * sigma : a->m;
	double		d;

	d = osgt_delta_emr(a->eps, a->Delta / sigma, m / sigma,
					   osgt_emr(a->eps, a->Delta, m, sigma), slope);
	if (a->mode == 0 && m > 0.0 && slope)
		*slope = NAN;			/* r moves with sigma: no closed form */
	return d;
}

/*
 * Smallest sigma (rounded up until it verifies) with delta(eps) <= delta:
 * Newton on ln delta against t = ln sigma where the slope is known, secant
 * otherwise, bisection whenever a step leaves the bracket; once converged
 * from one side, one step of xtol across closes the bracket.
 */
static double
sigma_solve(SigmaArg *a, double sigma0, double delta)
{
	double		ldelta = log(delta);
	double		t = log(sigma0),
				lo = -INFINITY,
				hi = INFINITY,
				tprev = NAN,
				fprev = NAN;
	double		xtol = fmax(4e-15, 16.0 * DP_ULP * fabs(t));
	double		s;

	for (int it = 0; it < 200; it++)
	{
		double		df,
					d = sigma_profile(exp(t), a, &df);
		double		f = d > 0.0 ? log(d) - ldelta : -INFINITY;
		double		step,
					tn;

		if (isnan(f))
			return NAN;
		if (f > 0.0)
			lo = t;
		else
			hi = t;
		if (hi - lo <= xtol)
			break;
		if (isfinite(f) && isfinite(df) && df < 0.0)
			step = -f / df;
		else if (isfinite(f) && isfinite(fprev) && f != fprev)
			step = -f * (t - tprev) / (f - fprev);
		else
			step = f > 0.0 ? 1.0 : -1.0;
		step = fmax(fmin(step, 4.0), -4.0);
		if (fabs(step) < 0.5 * xtol)
			step = f > 0.0 ? 0.75 * xtol : -0.75 * xtol;
		tn = t + step;
		if (isfinite(lo) && isfinite(hi) && !(tn > lo && tn < hi))
			tn = 0.5 * (lo + hi);
		if (tn < -700.0 || tn > 700.0)
			return NAN;
		tprev = t;
		fprev = f;
		t = tn;
	}
	if (!isfinite(hi))
		return NAN;
	s = exp(hi);
	for (int i = 0; i < 1000 && sigma_profile(s, a, NULL) > delta; i++)
		s = nextafter(s, INFINITY);
	return s;
}

/* Analytic Gaussian: smallest sigma with delta(eps) <= delta (Balle-Wang 2018). */
double
dp_gauss_sigma_analytic(double Delta, double eps, double delta)
{
	SigmaArg	a = {Delta, eps, 0.0, 0.0, 1};

	if (!dp_target_ok(Delta, eps, delta))
		return NAN;
	return sigma_solve(&a, dp_gauss_sigma_classical(Delta, eps, delta), delta);
}

/* OSGT with m fixed: smallest sigma meeting (eps, delta). */
double
dp_osgt_sigma_fixed_m(double Delta, double eps, double delta, double m)
{
	SigmaArg	a = {Delta, eps, m, 0.0, 0};
	double		s0;

	if (!dp_target_ok(Delta, eps, delta) || !(m >= 0.0) || !dp_finite_num(m))
		return NAN;
	/* start between the Gaussian and the Laplace-limit (sigma^2/m = b) scales */
	s0 = fmax(dp_gauss_sigma_classical(Delta, eps, delta), sqrt(m * Delta / eps));
	return sigma_solve(&a, s0, delta);
}

/* OSGT with m/sigma fixed: smallest sigma meeting (eps, delta). */
double
dp_osgt_sigma_fixed_ratio(double Delta, double eps, double delta, double ratio)
{
	SigmaArg	a = {Delta, eps, 0.0, ratio, 1};

	if (!dp_target_ok(Delta, eps, delta) || !(ratio >= 0.0) || !dp_finite_num(ratio))
		return NAN;
	return sigma_solve(&a, dp_gauss_sigma_classical(Delta, eps, delta), delta);
}

typedef struct OptPoint
{
	double		x;				/* search variable */
	double		m;
	double		sigma;
	double		v;
} OptPoint;

typedef struct OptTarget
{
	double		Delta;
	double		eps;
	double		delta;
	double		hint;			/* last sigma found: the next search starts there */
} OptTarget;

typedef void (*OptEvalFn) (double x, OptTarget *tg, OptPoint *p);

/* Evaluate the sub-Gaussian search at ratio x = m/sigma. */
static void
opt_eval_ratio(double x, OptTarget *tg, OptPoint *p)
{
	SigmaArg	a = {tg->Delta, tg->eps, 0.0, x, 1};

	p->x = x;
	p->sigma = sigma_solve(&a, tg->hint, tg->delta);
	p->m = x * p->sigma;
	p->v = p->sigma * p->sigma * dp_osgt_var_bracket(x);
	if (p->sigma > 0.0)
		tg->hint = p->sigma;
	else
		p->v = INFINITY;
}

/* Evaluate the unconstrained search at x = ln(m/Delta). */
static void
opt_eval_logm(double x, OptTarget *tg, OptPoint *p)
{
	SigmaArg	a;

	p->x = x;
	p->m = tg->Delta * exp(x);
	a = (SigmaArg) {tg->Delta, tg->eps, p->m, 0.0, 0};
	p->sigma = sigma_solve(&a, fmax(tg->hint, sqrt(p->m * tg->Delta / tg->eps)), tg->delta);
	p->v = dp_osgt_variance(p->m, p->sigma);
	if (p->sigma > 0.0)
		tg->hint = p->sigma;
	else
		p->v = INFINITY;
}

/*
 * Minimise the variance over x in [xlo, xhi]: scan n+1 equally spaced points
 * (so a non-unimodal V cannot hide a better basin), then golden-section
 * search between the neighbours of the best one.  Returns the best point
 * evaluated (grid points included, so a boundary optimum is exact).
 */
static OptPoint
opt_search(OptEvalFn fn, OptTarget *tg, double xlo, double xhi, int n, double xtol)
{
	const double g = 0.61803398874989485;
	OptPoint	best,
				p1,
				p2,
				p;
	int			kb = 0;
	double		lo,
				hi;

	best.v = INFINITY;
	best.x = xlo;
	best.m = best.sigma = NAN;
	for (int k = 0; k <= n; k++)
	{
		fn(k == n ? xhi : xlo + (xhi - xlo) * k / n, tg, &p);
		if (p.v < best.v)
		{
			best = p;
			kb = k;
		}
	}
	lo = kb > 0 ? xlo + (xhi - xlo) * (kb - 1) / n : xlo;
	hi = kb < n ? xlo + (xhi - xlo) * (kb + 1) / n : xhi;
	fn(hi - g * (hi - lo), tg, &p1);
	fn(lo + g * (hi - lo), tg, &p2);
	while (hi - lo > xtol)
	{
		if (p1.v < best.v)
			best = p1;
		if (p2.v < best.v)
			best = p2;
		if (p1.v <= p2.v)
		{
			hi = p2.x;
			p2 = p1;
			fn(hi - g * (hi - lo), tg, &p1);
		}
		else
		{
			lo = p1.x;
			p1 = p2;
			fn(lo + g * (hi - lo), tg, &p2);
		}
	}
	if (p1.v < best.v)
		best = p1;
	if (p2.v < best.v)
		best = p2;
	return best;
}

/* Round (m, sigma) so that the exact doubles meet (eps, delta) and m/sigma <= rmax. */
static DpOsgtParams
osgt_finish(double Delta, double eps, double delta, double m, double sigma, double rmax)
{
	DpOsgtParams res;

	while (rmax > 0.0 && m > 0.0 && fma(rmax, sigma, -m) < 0.0)
		m = nextafter(m, 0.0);
	for (int i = 0; i < 1000 && dp_osgt_delta(eps, Delta, m, sigma) > delta; i++)
		sigma = nextafter(sigma, INFINITY);
	res.m = m;
	res.sigma = sigma;
	res.variance = dp_osgt_variance(m, sigma);
	return res;
}

/*
 * Least-variance OSGT meeting (eps, delta): opt_search of fn over [xlo, xhi]
 * from the classical Gaussian sigma, rounded by osgt_finish with rmax.
 */
static DpOsgtParams
osgt_opt(double Delta, double eps, double delta, OptEvalFn fn, double xlo, double xhi,
		 int n, double xtol, double rmax)
{
	OptTarget	tg = {Delta, eps, delta, 0.0};
	OptPoint	best;

	if (!dp_target_ok(Delta, eps, delta))
	{
		DpOsgtParams bad = {NAN, NAN, NAN};

		return bad;
	}
	tg.hint = dp_gauss_sigma_classical(Delta, eps, delta);
	best = opt_search(fn, &tg, xlo, xhi, n, xtol);
	return osgt_finish(Delta, eps, delta, best.m, best.sigma, rmax);
}

/* Least-variance OSGT meeting (eps, delta) with m/sigma <= Q^{-1}(1/4). */
DpOsgtParams
dp_osgt_opt_subgaussian(double Delta, double eps, double delta)
{
	/* an interior optimum is flat: V resolves x only to ~1e-8 anyway */
	return osgt_opt(Delta, eps, delta, opt_eval_ratio, 0.0, DP_OSGT_SUBGAUSS_RATIO, 8,
					1e-6 * DP_OSGT_SUBGAUSS_RATIO, DP_OSGT_SUBGAUSS_RATIO);
}

/* Least-variance OSGT meeting (eps, delta), m in [1e-2, 1e14] Delta (reference only). */
DpOsgtParams
dp_osgt_opt_unconstrained(double Delta, double eps, double delta)
{
	return osgt_opt(Delta, eps, delta, opt_eval_logm, log(1e-2), log(1e14), 48, 1e-6, 0.0);
}
