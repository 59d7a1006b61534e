/*
 * calibrate.c — privacy profiles, noise calibration and privacy accounting
 * of additive noise for dp_pg (numeric core: plain C, <math.h> only).
 *
 * Notation: Q(x) = 1 - Phi(x) = erfc(x/sqrt 2)/2 (never 1 - Phi),
 * phi = standard normal density, M(x) = Q(x)/phi(x) the Mills ratio,
 * Y the noise, Delta the sensitivity, h = Delta/sigma, r = m/sigma.
 * "ref" is test/reference/README.md (section numbers in brackets).
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
 * Discrete noise on the integers [ref 6, CKS 2020]:
 *   w(k) = exp(-(|k| + m)^2/(2 sigma2)) (m = 0: discrete Gaussian).  The
 *   privacy loss is decreasing, so delta = sum_{k < y*} w(k) - e^eps w(k - Delta)
 *   over the same half-line as in the continuous case; it is written as
 *   tails S(a, b) = sum_{x=a..b} exp(-(x + m)^2/(2 sigma2)):
 *     case 1: [S(J, inf) - e^eps S(J + Delta, inf)]/Z, J = 1 - ceil(y*)
 *     case 2: [S(0, inf) + S(1, K) - e^eps S(Delta - K, inf)]/Z, K = ceil(y*) - 1
 *   Gaussian tails are summed exactly (sigma2 <= 1024; geometric bound on
 *   the truncated rest) or by Euler-Maclaurin with the remainder bound
 *   |R_P| <= |B_2P|/(2P)! int |f^(2P)|, f^(n) = (-1/sigma)^n He_n(u) f,
 *   int_p^q He_2P e^{-u^2/2} = [-He_{2P-1} e^{-u^2/2}]_p^q beyond the largest
 *   zero of He_2P and Cauchy-Schwarz inside it [DLMF 2.10.1].  The Gaussian
 *   normaliser is sqrt(2 pi) sigma theta, theta = 1 + 2 sum e^{-2 pi^2 sigma2 n^2}
 *   (Poisson summation).  Every error is bounded and added: delta is an
 *   upper bound, within ~1e-9 (typically 1e-11) of the exact value.
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
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calibrate.h"

#define DP_SQRT2PI		2.5066282746310002	/* sqrt(2 pi) */
#define DP_LN_SQRT2PI	0.91893853320467274	/* ln sqrt(2 pi) */
#define DP_SQRT1_2		0.70710678118654752	/* 1/sqrt(2) */
#define DP_MILLS0		1.2533141373155003	/* M(0) = sqrt(pi/2) */
#define DP_LN2			0.69314718055994531
#define DP_PI			3.1415926535897932
#define DP_ULP			DBL_EPSILON

/* Largest lattice sigma2 whose Gaussian tails are summed term by term */
#define DP_SUM_SIGMA2_MAX 1024.0

const double DP_RDP_ALPHAS[DP_RDP_NALPHAS] = {
	1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 128, 256
};


/* ------------------------------------------------------------------------
 * Special functions
 * ------------------------------------------------------------------------ */

/* exp(x^2/2) with x^2 split exactly into hi + lo, so only exp rounds. */
static double
exp_half_sq(double x)
{
	double		hi = x * x;
	double		lo = fma(x, x, -hi);

	return exp(0.5 * hi) * (1.0 + 0.5 * lo);
}

/* k/(x + (k+1)/(x + (k+2)/(x + ...))): tail of Laplace's continued fraction, x >= 5. */
static double
mills_cf_tail(double x, int k)
{
	int			depth = x >= 15.0 ? 14 : (x >= 8.0 ? 24 : 44);
	double		v = 0.0;

	for (int j = k + depth; j >= k; j--)
		v = j / (x + v);
	return v;
}

/* Standard normal upper tail Q(x) = 1 - Phi(x). */
double
dp_norm_q(double x)
{
	return 0.5 * erfc(x * DP_SQRT1_2);
}

/* Mills ratio Q(x)/phi(x) (a scaled complementary error function). */
double
dp_mills(double x)
{
	if (isnan(x))
		return NAN;
	if (x >= 5.0)
		return 1.0 / (x + mills_cf_tail(x, 1));
	if (x < -37.5)
		return INFINITY;
	/* relative error <= ~(x^2 + 5) ulp: erfc's argument is rounded */
	return 0.5 * erfc(x * DP_SQRT1_2) * DP_SQRT2PI * exp_half_sq(x);
}

/* ln Q(x), accurate far into the tail. */
double
dp_norm_log_q(double x)
{
	if (isnan(x))
		return NAN;
	if (x < 0.0)
		return log1p(-dp_norm_q(-x));
	if (x < 5.0)
		return log(dp_norm_q(x));
	return -0.5 * x * x - DP_LN_SQRT2PI + log(dp_mills(x));
}

/* Smallest x in [-60, 60] (to bisection precision, never below) with log Q(x) <= target. */
double
dp_norm_log_q_inv(double target)
{
	double		lo = -60.0;
	double		hi = 60.0;

	if (dp_norm_log_q(lo) <= target)
		return lo;
	for (int i = 0; i < 200; i++)
	{
		double		mid = 0.5 * (lo + hi);

		if (dp_norm_log_q(mid) > target)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/* g(x) = 1 - x M(x) = -M'(x) > 0, without cancellation for large x. */
static double
mills_g(double x)
{
	if (x >= 5.0)
	{
		double		t = mills_cf_tail(x, 1);	/* 1/(x + U) */

		return t / (x + t);		/* T M with M = 1/(x + T) */
	}
	return 1.0 - x * dp_mills(x);
}

/* 1 + r^2 - r M(r)^{-1}: the OSGT variance in units of sigma^2. */
static double
osgt_var_bracket(double r)
{
	if (r >= 5.0)
	{
		double		u = mills_cf_tail(r, 2);

		return u / (r + u);
	}
	return 1.0 + r * r - r / dp_mills(r);
}

/* M(x) - M(x + h) for h >= 0, integrating -M' where the difference cancels. */
static double
mills_diff(double x, double h)
{
	static const double node[3] = {0.0, 0.53846931010568309, 0.90617984593866399};
	static const double weight[3] = {0.56888888888888889, 0.47862867049936647,
	0.23692688505618909};
	double		mx,
				d,
				c,
				hh,
				s;

	if (!(h > 0.0))
		return 0.0;
	mx = dp_mills(x);
	if (isinf(h))
		return mx;
	d = mx - dp_mills(x + h);
	if (d > 0.05 * mx)
		return d;				/* cancels at most a factor 20 */
	/* 5-point Gauss-Legendre: the interval is short on g's length scale (h <~ x/20) */
	c = x + 0.5 * h;
	hh = 0.5 * h;
	s = weight[0] * mills_g(c);
	for (int i = 1; i < 3; i++)
		s += weight[i] * (mills_g(c - hh * node[i]) + mills_g(c + hh * node[i]));
	return hh * s;
}

/*
 * Differences of Q are passed as a start u and a width w (not two ends):
 * rounding the far end would cost ulp(u)/w relative when w << u.
 */

/* (Q(u) - Q(u + w))/phi(u) for u >= 0, w >= 0 (w may be +inf), without cancellation. */
static double
qdiff_scaled(double u, double w)
{
	if (isinf(w))
		return dp_mills(u);
	if (!(w > 0.0))
		return 0.0;
	return mills_diff(u, w) - expm1(-0.5 * w * (2.0 * u + w)) * dp_mills(u + w);
}

/* ln(Q(u) - Q(u + w)) for w >= 0. */
static double
log_qdiff(double u, double w)
{
	double		v = u + w;

	if (!(w > 0.0))
		return -INFINITY;
	if (u >= 0.0)
		return -0.5 * u * u - DP_LN_SQRT2PI + log(qdiff_scaled(u, w));
	if (v <= 0.0)
		return log_qdiff(-v, w);
	/* u < 0 < v: split at 0, phi(0) = 1/sqrt(2 pi) */
	return log(qdiff_scaled(0.0, -u) + qdiff_scaled(0.0, v)) - DP_LN_SQRT2PI;
}

/* (Q(u) - Q(u + w)) / (2 Q(r)) for w >= 0, r >= 0, without cancellation or underflow. */
static double
qdiff_over_2q(double u, double w, double r)
{
	double		v = u + w;

	if (!(w > 0.0))
		return 0.0;
	if (u >= 0.0)
		return exp(-0.5 * (u - r) * (u + r)) * qdiff_scaled(u, w) / (2.0 * dp_mills(r));
	if (v <= 0.0)
		return qdiff_over_2q(-v, w, r);
	return exp(log_qdiff(u, w) - DP_LN2 - dp_norm_log_q(r));
}

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

/* True if x is a finite number. */
static inline bool
finite_num(double x)
{
	return isfinite(x);
}


/* ------------------------------------------------------------------------
 * Root finding
 * ------------------------------------------------------------------------ */

typedef double (*DpRootFn) (double x, const void *arg);

/*
 * Root of a decreasing function by regula falsi (Illinois) with bisection
 * safeguards.  Requires fn(lo) = flo > 0 >= fhi = fn(hi); returns the end
 * of the final bracket where fn <= 0, at most xtol from the root.
 */
static double
root_decreasing(DpRootFn fn, const void *arg, double lo, double flo,
				double hi, double fhi, double xtol)
{
	int			side = 0;
	double		width = hi - lo;

	for (int it = 0; it < 300 && hi - lo > xtol; it++)
	{
		double		x,
					fx;
		bool		bisect = false;

		/* every fourth step, bisect unless the bracket has halved meanwhile */
		if (it % 4 == 3)
		{
			bisect = hi - lo > 0.5 * width;
			width = hi - lo;
		}
		if (!bisect && finite_num(flo) && finite_num(fhi) && flo > fhi)
			x = hi - fhi * (hi - lo) / (fhi - flo);
		else
			x = 0.5 * (lo + hi);
		/* stay strictly inside, at least a fraction of xtol from the ends */
		if (!(x > lo + 0.25 * xtol) || !(x < hi - 0.25 * xtol))
			x = 0.5 * (lo + hi);
		fx = fn(x, arg);
		if (isnan(fx))
			fx = INFINITY;		/* treat as infeasible */
		if (fx > 0.0)
		{
			lo = x;
			flo = fx;
			if (side == -1)
				fhi *= 0.5;
			side = -1;
		}
		else
		{
			hi = x;
			fhi = fx;
			if (side == 1)
				flo *= 0.5;
			side = 1;
		}
	}
	return hi;
}

/*
 * Bracket and solve fn(t) = 0 for a decreasing fn, starting at t0 with the
 * initial step; returns the feasible end (fn <= 0) of the final bracket.
 */
static double
solve_decreasing(DpRootFn fn, const void *arg, double t0, double step,
				 double xtol, double tmin, double tmax)
{
	double		f0 = fn(t0, arg);
	double		lo,
				hi,
				flo,
				fhi;

	if (isnan(f0))
		f0 = INFINITY;
	if (f0 > 0.0)
	{
		lo = t0;
		flo = f0;
		for (;;)
		{
			hi = fmin(lo + step, tmax);
			fhi = fn(hi, arg);
			if (isnan(fhi))
				fhi = INFINITY;
			if (fhi <= 0.0)
				break;
			if (hi >= tmax)
				return NAN;
			lo = hi;
			flo = fhi;
			step *= 2.0;
		}
	}
	else
	{
		hi = t0;
		fhi = f0;
		for (;;)
		{
			lo = fmax(hi - step, tmin);
			flo = fn(lo, arg);
			if (isnan(flo))
				flo = INFINITY;
			if (flo > 0.0)
				break;
			if (lo <= tmin)
				return lo;
			hi = lo;
			fhi = flo;
			step *= 2.0;
		}
	}
	return root_decreasing(fn, arg, lo, flo, hi, fhi, xtol);
}


/* ------------------------------------------------------------------------
 * Continuous privacy profiles
 * ------------------------------------------------------------------------ */

/* delta(eps) of Laplace noise with scale b. */
double
dp_laplace_delta(double eps, double Delta, double b)
{
	double		a;

	if (!(eps >= 0.0) || !(Delta > 0.0) || !(b > 0.0) || !finite_num(Delta) || !finite_num(b))
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
		!finite_num(Delta) || !finite_num(b))
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
		double		md = mills_diff(a, h);

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
			log1p(-(mills_diff(r, cmr) + mills_diff(r, dmr)) / (2.0 * mr));
		d = -expm1(lns);
	}
	if (!(d > 0.0))
		return 0.0;
	return d < 1.0 ? d : 1.0;
}

/* True if (Delta, m, sigma) are valid OSGT parameters. */
static bool
osgt_params_ok(double Delta, double m, double sigma)
{
	return Delta > 0.0 && finite_num(Delta) && m >= 0.0 && finite_num(m) &&
		sigma > 0.0 && finite_num(sigma);
}

/* delta(eps) of Gaussian noise N(0, sigma^2). */
double
dp_gauss_delta(double eps, double Delta, double sigma)
{
	if (!(eps >= 0.0) || !osgt_params_ok(Delta, 0.0, sigma))
		return NAN;
	return osgt_delta_emr(eps, Delta / sigma, 0.0, osgt_emr(eps, Delta, 0.0, sigma), NULL);
}

/* delta(eps) of OSGT noise (m, sigma), both cases of the formula. */
double
dp_osgt_delta(double eps, double Delta, double m, double sigma)
{
	if (!(eps >= 0.0) || !osgt_params_ok(Delta, m, sigma))
		return NAN;
	return osgt_delta_emr(eps, Delta / sigma, m / sigma, osgt_emr(eps, Delta, m, sigma), NULL);
}

/* OSGT case boundary eps0 = Delta (Delta + 2m) / (2 sigma^2). */
double
dp_osgt_eps0(double Delta, double m, double sigma)
{
	if (!osgt_params_ok(Delta, m, sigma))
		return NAN;
	return Delta * (Delta + 2.0 * m) / (2.0 * sigma * sigma);
}

/* Which case of the OSGT delta formula applies at eps (1 or 2). */
int
dp_osgt_formula_case(double eps, double Delta, double m, double sigma)
{
	if (!(eps >= 0.0) || !osgt_params_ok(Delta, m, sigma))
		return 0;
	return osgt_emr(eps, Delta, m, sigma) >= 0.0 ? 1 : 2;
}

/* Variance V(m, sigma^2) of OSGT noise, stable for large m/sigma. */
double
dp_osgt_variance(double m, double sigma)
{
	if (!(m >= 0.0) || !finite_num(m) || !(sigma > 0.0) || !finite_num(sigma))
		return NAN;
	return sigma * sigma * osgt_var_bracket(m / sigma);
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
	e = root_decreasing(eps_fn, &a, lo, flo, hi, fhi, fmax(2e-16 * hi, 1e-300));
	for (int i = 0; i < 1000 && osgt_delta_raw(e, &a) > delta; i++)
		e = nextafter(e, INFINITY);
	return e;
}

/* eps(delta) of Gaussian noise N(0, sigma^2). */
double
dp_gauss_eps(double delta, double Delta, double sigma)
{
	if (!(delta > 0.0 && delta <= 1.0) || !osgt_params_ok(Delta, 0.0, sigma))
		return NAN;
	return osgt_eps_raw(delta, Delta, 0.0, sigma);
}

/* eps(delta) of OSGT noise (m, sigma). */
double
dp_osgt_eps(double delta, double Delta, double m, double sigma)
{
	if (!(delta > 0.0 && delta <= 1.0) || !osgt_params_ok(Delta, m, sigma))
		return NAN;
	return osgt_eps_raw(delta, Delta, m, sigma);
}


/* ------------------------------------------------------------------------
 * Continuous calibration
 * ------------------------------------------------------------------------ */

/* True if (Delta, eps, delta) is a valid calibration target. */
static bool
target_ok(double Delta, double eps, double delta)
{
	return Delta > 0.0 && finite_num(Delta) && eps > 0.0 && finite_num(eps) &&
		delta > 0.0 && delta < 1.0;
}

/* Laplace scale Delta/eps, rounded up so that Delta/b <= eps exactly. */
double
dp_laplace_scale(double Delta, double eps)
{
	double		b;

	if (!(Delta > 0.0) || !finite_num(Delta) || !(eps > 0.0) || !finite_num(eps))
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

	if (!target_ok(Delta, eps, delta))
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
	if (!target_ok(Delta, eps, delta))
		return NAN;
	return Delta * sqrt(2.0 * log(1.25 / delta)) / eps;
}

/* Gaussian sigma for rho-zCDP: Delta / sqrt(2 rho) (rounded up). */
double
dp_gauss_sigma_zcdp(double Delta, double rho)
{
	double		s;

	if (!(Delta > 0.0) || !finite_num(Delta) || !(rho > 0.0) || !finite_num(rho))
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

	if (!target_ok(Delta, eps, delta))
		return NAN;
	return sigma_solve(&a, dp_gauss_sigma_classical(Delta, eps, delta), delta);
}

/* OSGT with m fixed: smallest sigma meeting (eps, delta). */
double
dp_osgt_sigma_fixed_m(double Delta, double eps, double delta, double m)
{
	SigmaArg	a = {Delta, eps, m, 0.0, 0};
	double		s0;

	if (!target_ok(Delta, eps, delta) || !(m >= 0.0) || !finite_num(m))
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

	if (!target_ok(Delta, eps, delta) || !(ratio >= 0.0) || !finite_num(ratio))
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
	p->v = p->sigma * p->sigma * osgt_var_bracket(x);
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

/* Least-variance OSGT meeting (eps, delta) with m/sigma <= Q^{-1}(1/4). */
DpOsgtParams
dp_osgt_opt_subgaussian(double Delta, double eps, double delta)
{
	OptTarget	tg = {Delta, eps, delta, 0.0};
	OptPoint	best;

	if (!target_ok(Delta, eps, delta))
	{
		DpOsgtParams bad = {NAN, NAN, NAN};

		return bad;
	}
	tg.hint = dp_gauss_sigma_classical(Delta, eps, delta);
	/* an interior optimum is flat: V resolves x only to ~1e-8 anyway */
	best = opt_search(opt_eval_ratio, &tg, 0.0, DP_OSGT_SUBGAUSS_RATIO, 8,
					  1e-6 * DP_OSGT_SUBGAUSS_RATIO);
	return osgt_finish(Delta, eps, delta, best.m, best.sigma, DP_OSGT_SUBGAUSS_RATIO);
}

/* Least-variance OSGT meeting (eps, delta), m in [1e-2, 1e14] Delta (reference only). */
DpOsgtParams
dp_osgt_opt_unconstrained(double Delta, double eps, double delta)
{
	OptTarget	tg = {Delta, eps, delta, 0.0};
	OptPoint	best;

	if (!target_ok(Delta, eps, delta))
	{
		DpOsgtParams bad = {NAN, NAN, NAN};

		return bad;
	}
	tg.hint = dp_gauss_sigma_classical(Delta, eps, delta);
	best = opt_search(opt_eval_logm, &tg, log(1e-2), log(1e14), 48, 1e-6);
	return osgt_finish(Delta, eps, delta, best.m, best.sigma, 0.0);
}


/* ------------------------------------------------------------------------
 * Rényi divergences and conversions
 * ------------------------------------------------------------------------ */

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

	if (!(alpha > 1.0) || !finite_num(alpha) || !(Delta > 0.0) || !(b > 0.0) ||
		!finite_num(Delta) || !finite_num(b))
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

	if (!(alpha > 1.0) || !finite_num(alpha) || !osgt_params_ok(Delta, 0.0, sigma))
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
	return log_add(l, E + log_qdiff(x2, h));
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
		double		ta = qdiff_over_2q(r - eta * h, eta * h, r);
		double		tb = qdiff_over_2q(r + h + eta * h, 2.0 * eta * r, r);
		double		tc = expm1(E) * qdiff_over_2q(x2, h, r);
		double		td = qdiff_over_2q(r, eta * (h + 2.0 * r), r);
		double		n = ta + tb + tc - td;

		lb = log1p(n);
		/* each difference of Q to ~1e-13 relative (see mills_diff) */
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

	if (!(alpha > 1.0) || !finite_num(alpha) || !osgt_params_ok(Delta, m, sigma))
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
	if (!(alpha > 1.0) || !finite_num(alpha) || !osgt_params_ok(Delta, m, sigma))
		return NAN;
	return osgt_log_bbar_hr(alpha, Delta / sigma, m / sigma);
}

/* The OSGT slides' single-letter bound on D_alpha. */
double
dp_osgt_rdp_zeta_bound(double alpha, double Delta, double m, double sigma)
{
	double		h,
				r;

	if (!(alpha > 1.0) || !finite_num(alpha) || !osgt_params_ok(Delta, m, sigma))
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

	if (!osgt_params_ok(Delta, m, sigma))
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
		I = (h + r) * qdiff_scaled(r, h) + expm1(-0.5 * h * (2.0 * r + h));
	return 0.5 * h * h + r * I / dp_mills(r);
}

typedef double (*RdpUpFn) (double eta, const void *arg);
typedef double (*RdpTailFn) (double A, const void *arg);

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
static double
rho_bracket(RdpUpFn fn, RdpTailFn tail, const void *arg, double eta0)
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

	if (!osgt_params_ok(Delta, m, sigma))
		return NAN;
	a.h = Delta / sigma;
	a.r = m / sigma;
	if (m == 0.0)
		return 0.5 * a.h * a.h * (1.0 + 4.0 * DP_ULP);
	return rho_bracket(osgt_rdp_up_eta, osgt_rdp_tail, &a, 1e-8);
}

/* RDP curve -> (eps, delta): min over the grid of D + ln(1/delta)/(alpha-1) (Mironov 2017). */
double
dp_rdp_eps_mironov(int n, const double *alphas, const double *rdp,
				   double delta, double *alpha_out)
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
		e = rdp[i] - log(delta) / (alphas[i] - 1.0);
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

/* RDP curve -> (eps, delta) by the CKS 2020 conversion, minimised over the grid. */
double
dp_rdp_eps_improved(int n, const double *alphas, const double *rdp,
					double delta, double *alpha_out)
{
	double		best = INFINITY,
				ba = NAN;

	if (n <= 0 || !(delta > 0.0 && delta < 1.0))
		return NAN;
	for (int i = 0; i < n; i++)
	{
		double		a = alphas[i],
					e;

		if (!(a > 1.0) || isnan(rdp[i]))
			return NAN;
		e = rdp[i] + log1p(-1.0 / a) - (log(delta) + log(a)) / (a - 1.0);
		if (e < best)
		{
			best = e;
			ba = a;
		}
	}
	if (alpha_out)
		*alpha_out = ba;
	return fmax(best, 0.0);
}


/* ------------------------------------------------------------------------
 * zCDP conversions
 * ------------------------------------------------------------------------ */

/* eps of rho-zCDP at delta: rho + 2 sqrt(rho ln(1/delta)) (Bun-Steinke 2016). */
double
dp_zcdp_eps_bun_steinke(double rho, double delta)
{
	if (!(rho >= 0.0) || !finite_num(rho) || !(delta > 0.0 && delta < 1.0))
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

	if (!(rho > 0.0) || !finite_num(rho) || !(delta > 0.0 && delta < 1.0))
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

	if (!(rho > 0.0) || !finite_num(rho) || !(eps >= 0.0) || !finite_num(eps))
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


/* ------------------------------------------------------------------------
 * Discrete noise: sums of Gaussian terms on the integers
 * ------------------------------------------------------------------------ */

/* A sum known as e^ls (v +- err). */
typedef struct GaussSum
{
	double		ls;
	double		v;
	double		err;
} GaussSum;

#define DP_EM_PMAX 10

/* B_2s/(2s)!, s = 1..10 */
static const double em_coef[DP_EM_PMAX + 1] = {
	0.0, 8.3333333333333333e-2, -1.3888888888888889e-3, 3.3068783068783069e-5,
	-8.2671957671957672e-7, 2.0876756987868099e-8, -5.2841901386874932e-10,
	1.3382536530684679e-11, -3.3896802963225829e-13, 8.5860620562778446e-15,
	-2.1748686985580619e-16
};

/* Largest zero of He_2P, rounded up, P = 1..10 */
static const double he_zero[DP_EM_PMAX + 1] = {
	0.0, 1.0000000000001, 2.3344142183390, 3.3242574335522, 4.1445471861259,
	4.8594628283324, 5.5009017044678, 6.0874095469013, 6.6308781983932,
	7.1394648491465, 7.6190485416798
};

/* (2P)!, P = 0..10 */
static const double fact_even[DP_EM_PMAX + 1] = {
	1.0, 2.0, 24.0, 720.0, 40320.0, 3628800.0, 479001600.0, 87178291200.0,
	20922789888000.0, 6402373705728000.0, 2432902008176640000.0
};

/* Probabilists' Hermite polynomials He_0..He_n at x into he[]. */
static void
hermite_all(double x, int n, double *he)
{
	he[0] = 1.0;
	if (n >= 1)
		he[1] = x;
	for (int k = 1; k < n; k++)
		he[k + 1] = x * he[k] - k * he[k - 1];
}

/* He_n(x) */
static double
hermite(int n, double x)
{
	double		he[2 * DP_EM_PMAX + 2];

	hermite_all(x, n, he);
	return he[n];
}

/*
 * Bound on e^{-ls} int_{ua}^{ub} |He_n(u)| e^{-u^2/2} du, n = 2P even: exact
 * beyond the largest zero z of He_n (He_n > 0 there and He_{n-1} e^{-u^2/2}
 * is an antiderivative of -He_n e^{-u^2/2}), Cauchy-Schwarz on [-z, z]
 * (int He_n^2 e^{-u^2/2} = n! sqrt(2 pi)).
 */
static double
hermite_abs_integral(int P, double ua, double ub, double ls)
{
	int			n = 2 * P;
	double		z = he_zero[P];
	double		total = 0.0;
	double		p,
				q;

	/* [z, inf) */
	p = fmax(ua, z);
	if (p < ub)
	{
		total += hermite(n - 1, p) * exp(-0.5 * p * p - ls);
		if (!isinf(ub))
			total -= hermite(n - 1, ub) * exp(-0.5 * ub * ub - ls);
	}
	/* (-inf, -z], mirrored */
	q = fmin(ub, -z);
	if (ua < q)
		total += hermite(n - 1, -q) * exp(-0.5 * q * q - ls) -
			hermite(n - 1, -ua) * exp(-0.5 * ua * ua - ls);
	/* [-z, z] */
	p = fmax(ua, -z);
	q = fmin(ub, z);
	if (p < q)
	{
		double		mass = dp_norm_q(p) - dp_norm_q(q) + 1e-16;

		total += sqrt(2.0 * DP_PI * fact_even[P] * fmin(mass, 1.0)) * exp(-ls);
	}
	return total;
}

/*
 * Exact summation of exp(-(x - mu)^2/(2 sigma2)) over integers a..b, from
 * the largest term outwards with the term ratio updated multiplicatively
 * (resynchronised by exp every 16 steps); the truncated rest is bounded by
 * a geometric series since the ratios decrease.
 */
static void
gauss_sum_direct(double mu, double sigma2, double a, double b, GaussSum *out)
{
	double		inv = 0.5 / sigma2;
	double		c = exp(-2.0 * inv);	/* ratio of consecutive ratios */
	double		x0 = nearbyint(mu);
	double		d0,
				sum = 0.0,
				tail = 0.0;
	long		n = 0;

	if (x0 < a)
		x0 = a;
	if (x0 > b)
		x0 = b;
	d0 = x0 - mu;
	out->ls = -d0 * d0 * inv;

	/* upwards: x0, x0 + 1, ..., b */
	{
		double		x = x0,
					t = 1.0,
					rho = exp(-(2.0 * d0 + 1.0) * inv);

		for (int k = 1;; k++)
		{
			sum += t;
			n++;
			if (x >= b)
				break;
			t *= rho;
			rho *= c;
			x += 1.0;
			if ((k & 15) == 0)
			{
				double		d = x - mu;

				t = exp(-(d - d0) * (d + d0) * inv);
				rho = exp(-(2.0 * d + 1.0) * inv);
			}
			if (t < 0x1p-62 * sum && rho < 1.0)
			{
				tail += t / (1.0 - rho);
				break;
			}
		}
	}
	/* downwards: x0 - 1, ..., a */
	if (x0 > a)
	{
		double		x = x0 - 1.0,
					t = exp(-(1.0 - 2.0 * d0) * inv),
					rho = exp(-(3.0 - 2.0 * d0) * inv);

		for (int k = 1;; k++)
		{
			if (t < 0x1p-62 * sum && rho < 1.0)
			{
				tail += t / (1.0 - rho);
				break;
			}
			sum += t;
			n++;
			if (x <= a)
				break;
			t *= rho;
			rho *= c;
			x -= 1.0;
			if ((k & 15) == 0)
			{
				double		d = x - mu;

				t = exp(-(d - d0) * (d + d0) * inv);
				rho = exp(-(1.0 - 2.0 * d) * inv);
			}
		}
	}
	out->v = sum + 0.5 * tail;
	out->err = 0.5 * tail + sum * (400.0 + (double) n) * DP_ULP;
}

/*
 * Euler-Maclaurin for sum_{x=a..b} f(x), f(x) = exp(-(x - mu)^2/(2 sigma2)):
 * int f + (f(a) + f(b))/2 + sum_{s<=P} B_2s/(2s)! (f^(2s-1)(b) - f^(2s-1)(a)) + R_P,
 * |R_P| <= |B_2P|/(2P)! int |f^(2P)|, with P chosen to minimise the bound.
 */
static void
gauss_sum_em(double mu, double sigma2, double a, double b, GaussSum *out)
{
	double		sigma = sqrt(sigma2);
	bool		binf = isinf(b);
	double		ua = (a - mu) / sigma;
	double		ub = binf ? INFINITY : (b - mu) / sigma;
	double		ls,
				ga,
				gb,
				integ,
				base,
				acc,
				absacc,
				best_err = INFINITY,
				best_v = NAN;
	double		hea[2 * DP_EM_PMAX + 1],
				heb[2 * DP_EM_PMAX + 1];
	double		spow;

	if (ua >= 0.0)
		ls = -(a - mu) * (a - mu) / (2.0 * sigma2);
	else if (ub <= 0.0)
		ls = -(b - mu) * (b - mu) / (2.0 * sigma2);
	else
		ls = 0.0;
	ga = exp(-(a - mu) * (a - mu) / (2.0 * sigma2) - ls);
	gb = binf ? 0.0 : exp(-(b - mu) * (b - mu) / (2.0 * sigma2) - ls);
	if (ua >= 0.0)
		integ = sigma * qdiff_scaled(ua, binf ? INFINITY : (b - a) / sigma);
	else if (ub <= 0.0)
		integ = sigma * qdiff_scaled(-ub, (b - a) / sigma);
	else
		integ = sigma * DP_SQRT2PI * (1.0 - dp_norm_q(ub) - dp_norm_q(-ua));
	hermite_all(ua, 2 * DP_EM_PMAX, hea);
	if (!binf)
		hermite_all(ub, 2 * DP_EM_PMAX, heb);
	base = integ + 0.5 * (ga + gb);
	acc = base;
	absacc = fabs(integ) + ga + gb;
	spow = 1.0;					/* sigma^(1-2s) */
	for (int s = 1; s <= DP_EM_PMAX; s++)
	{
		double		term,
					rem;

		spow /= (s == 1 ? sigma : sigma2);
		term = -em_coef[s] * spow * ((binf ? 0.0 : heb[2 * s - 1] * gb) - hea[2 * s - 1] * ga);
		acc += term;
		absacc += fabs(term);
		rem = fabs(em_coef[s]) * spow * hermite_abs_integral(s, ua, ub, ls);
		if (rem < best_err)
		{
			best_err = rem;
			best_v = acc;
		}
	}
	out->ls = ls;
	out->v = best_v;
	/* special functions to ~1e-14 relative, arithmetic to a few ulps */
	out->err = best_err + 1e-13 * fabs(integ) + 32.0 * DP_ULP * absacc;
}

/* sum_{x=a..b} exp(-(x - mu)^2/(2 sigma2)) for integral a <= b (b may be +inf). */
static void
gauss_sum(double mu, double sigma2, double a, double b, GaussSum *out)
{
	if (!(a <= b))
	{
		out->ls = 0.0;
		out->v = 0.0;
		out->err = 0.0;
		return;
	}
	if (sigma2 <= DP_SUM_SIGMA2_MAX)
		gauss_sum_direct(mu, sigma2, a, b, out);
	else
		gauss_sum_em(mu, sigma2, a, b, out);
}

/* A signed term c e^L (v +- err) of a combination of sums. */
typedef struct SumTerm
{
	double		L;
	double		v;
	double		err;
	int			sign;
} SumTerm;

/*
 * Upper (dir = +1) or lower (dir = -1) bound of sum_i sign_i e^{L_i} v_i as
 * e^{*Lout} times the returned value (rounding of the combination included).
 */
static double
sum_terms_bound(const SumTerm *t, int n, int dir, double *Lout)
{
	double		L = -INFINITY,
				s = 0.0,
				abssum = 0.0;

	for (int i = 0; i < n; i++)
		if (t[i].v != 0.0 || t[i].err != 0.0)
			L = fmax(L, t[i].L);
	*Lout = L;
	if (L == -INFINITY)
		return 0.0;
	for (int i = 0; i < n; i++)
	{
		double		f;

		if (t[i].v == 0.0 && t[i].err == 0.0)
			continue;
		f = exp(t[i].L - L);
		s += t[i].sign * f * t[i].v + dir * f * t[i].err;
		abssum += f * fabs(t[i].v);
	}
	return s + dir * 16.0 * DP_ULP * abssum;
}

/* theta(sigma2) = 1 + 2 sum_{n>=1} exp(-2 pi^2 sigma2 n^2), sigma2 >= 1/4. */
static double
jacobi_theta(double sigma2)
{
	double		s = 0.0;

	for (int n = 1; n < 64; n++)
	{
		double		t = exp(-2.0 * DP_PI * DP_PI * sigma2 * n * n);

		s += t;
		if (t < 1e-20 * (1.0 + s))
			break;
	}
	return 1.0 + 2.0 * s;
}

/* Lower bound on ln Z, Z = sum_k exp(-(|k| + m)^2/(2 sigma2)); *lz gets ln Z itself. */
static double
discrete_log_norm(double m, double sigma2, double *lz)
{
	SumTerm		t[2];
	GaussSum	g;
	double		L,
				lo,
				mid;

	if (m == 0.0 && sigma2 >= 0.25)
	{
		/* Poisson summation: Z = sqrt(2 pi sigma2) theta exactly */
		double		z = log(DP_SQRT2PI * sqrt(sigma2) * jacobi_theta(sigma2));

		if (lz)
			*lz = z;
		return z - 8.0 * DP_ULP * (1.0 + fabs(z));
	}
	gauss_sum(-m, sigma2, 0.0, INFINITY, &g);
	t[0] = (SumTerm) {g.ls, g.v, g.err, 1};
	gauss_sum(-m, sigma2, 1.0, INFINITY, &g);
	t[1] = (SumTerm) {g.ls, g.v, g.err, 1};
	lo = sum_terms_bound(t, 2, -1, &L);
	mid = exp(t[0].L - L) * t[0].v + exp(t[1].L - L) * t[1].v;
	if (lz)
		*lz = L + log(mid);
	return L + log(lo) - 8.0 * DP_ULP * (1.0 + fabs(L));
}


/* ------------------------------------------------------------------------
 * Discrete noise: profiles, variance, calibration, Rényi
 * ------------------------------------------------------------------------ */

/* True if (Delta, m, sigma2) are valid discrete OSGT parameters. */
static bool
discrete_params_ok(int64_t Delta, double m, double sigma2)
{
	return Delta >= 1 && Delta <= ((int64_t) 1 << 52) && m >= 0.0 && finite_num(m) &&
		sigma2 > 0.0 && finite_num(sigma2);
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
	SumTerm		t[4];
	GaussSum	g;
	int			nt = 0;

	if (eps >= eps0)
	{
		/* case 1: {L > eps} = {k < y*}, y* <= 0; sum over k = -J, -J-1, ... */
		shift = eps * sigma2 / Delta;
		ystar = m + 0.5 * Delta - shift;
		slope = Delta / sigma2;
		K = ceil(ystar) - 1.0;
		gauss_sum(-m, sigma2, -K, INFINITY, &g);
		t[nt++] = (SumTerm) {g.ls, g.v, g.err, 1};
		gauss_sum(-m, sigma2, -K + Delta, INFINITY, &g);
		t[nt++] = (SumTerm) {g.ls + eps, g.v, g.err, -1};
	}
	else
	{
		/* case 2: y* in (0, Delta/2]: k <= 0 and 1 <= k <= K */
		shift = eps * sigma2 / (Delta + 2.0 * m);
		ystar = 0.5 * Delta - shift;
		slope = (Delta + 2.0 * m) / sigma2;
		K = fmax(ceil(ystar) - 1.0, 0.0);
		gauss_sum(-m, sigma2, 0.0, INFINITY, &g);
		t[nt++] = (SumTerm) {g.ls, g.v, g.err, 1};
		if (K >= 1.0)
		{
			gauss_sum(-m, sigma2, 1.0, K, &g);
			t[nt++] = (SumTerm) {g.ls, g.v, g.err, 1};
		}
		gauss_sum(-m, sigma2, Delta - K, INFINITY, &g);
		t[nt++] = (SumTerm) {g.ls + eps, g.v, g.err, -1};
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

		t[nt++] = (SumTerm) {
			-(kmin + m) * (kmin + m) / (2.0 * sigma2) + eps,
				namb * expm1(2.0 * dy * slope), 0.0, 1
		};
	}

	num = sum_terms_bound(t, nt, 1, &L);
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
	if (!(sigma2 > 0.0) || !finite_num(sigma2))
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
		return sigma2 * (1.0 + 2.0 * num) / jacobi_theta(sigma2);
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

	if (!(m >= 0.0) || !finite_num(m) || !(sigma2 > 0.0) || !finite_num(sigma2))
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

		hermite_all(r, 2 * DP_EM_PMAX, he);
		s = sigma2 * sigma * dp_mills(r) * osgt_var_bracket(r);
		for (int k = 2; k <= 6; k++)
		{
			int			n = 2 * k - 1;

			/* - c_k f^(n)(0) with f^(n)(0) = n(n-1) (-1/sigma)^(n-2) He_(n-2)(r) */
			s += em_coef[k] * n * (n - 1) * pow(sigma, 2 - n) * he[n - 2];
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
		double		t = solve_decreasing(disc_fn, &a, t0, 1e-3,
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
	if (!target_ok((double) Delta, eps, delta) || !discrete_params_ok(Delta, 0.0, 1.0))
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

	if (!target_ok((double) Delta, eps, delta) || !discrete_params_ok(Delta, 0.0, 1.0))
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

	if (!(alpha > 1.0) || !finite_num(alpha) || !discrete_params_ok(Delta, 0.0, sigma2))
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
	SumTerm		t[3];
	GaussSum	g;
	double		L,
				up,
				lz_lo,
				lnum,
				d;
	int			nt = 0;

	gauss_sum(eta * Delta - m, sigma2, 0.0, INFINITY, &g);
	t[nt++] = (SumTerm) {g.ls, g.v, g.err, 1};
	gauss_sum(-(alpha * Delta + m), sigma2, 0.0, INFINITY, &g);
	t[nt++] = (SumTerm) {g.ls, g.v, g.err, 1};
	if (Delta >= 2.0)
	{
		gauss_sum(-(eta * Delta + (1.0 + 2.0 * eta) * m), sigma2, 1.0, Delta - 1.0, &g);
		t[nt++] = (SumTerm) {g.ls + E, g.v, g.err, 1};
	}
	up = sum_terms_bound(t, nt, 1, &L);
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
	if (!(alpha > 1.0) || !finite_num(alpha) || !discrete_params_ok(Delta, m, sigma2))
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
		lat = fmin(lat, DP_SQRT2PI * sigma * jacobi_theta(a->sigma2));
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
	return rho_bracket(disc_rdp_up_eta, disc_rdp_tail, &a, eta0);
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

	if (!(eps >= 0.0) || !(t > 0.0) || !finite_num(t) || Delta < 1 ||
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

	if (!(t > 0.0) || !finite_num(t))
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

	if (!(alpha > 1.0) || !finite_num(alpha) || !(t > 0.0) || !finite_num(t) ||
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

	if (!(t > 0.0) || !finite_num(t) || Delta < 1 || Delta > ((int64_t) 1 << 52))
		return NAN;
	eps = (double) Delta / t;
	return 0.5 * eps * eps * (1.0 + 4.0 * DP_ULP);
}
