/*
 * special.c — special functions of the standard normal distribution and
 * root finding, for dp_pg's calibration module (calibrate.h is its face).
 *
 * Owns: Q(x) = 1 - Phi(x) = erfc(x/sqrt 2)/2 (never computed as 1 - Phi),
 * ln Q and its inverse, the Mills ratio M(x) = Q(x)/phi(x) (phi the
 * standard normal density), differences of M and of Q without
 * cancellation, and the root finding of decreasing functions that every
 * calibration uses.
 *
 *   M(x)         for x >= 5 by Laplace's continued fraction
 *                M = 1/(x + 1/(x + 2/(x + ...))) (its tail is
 *                dp_mills_cf_tail), below by erfc scaled with exp(x^2/2).
 *   M(x) - M(x+h)  directly where it loses at most a factor 20, else
 *                integrated (Gauss-Legendre of -M' = 1 - xM).
 *   Q(u) - Q(u+w)  from a start and a width (never from two rounded ends)
 *                as phi(u) [M(u) - M(u+w) + (1 - e^{-w(2u+w)/2}) M(u+w)].
 *   roots        regula falsi (Illinois) with bisection safeguards on a
 *                bracket of a decreasing function; the end returned is the
 *                feasible one (fn <= 0), so a calibration never undershoots.
 *
 * Layer core/ (docs/development.md): plain C, <math.h> only; may call the
 * C library only (no other file).  special.h offers the internal helpers to
 * continuous.c, renyi.c, gausssum.c and discrete.c; calibrate.h declares
 * dp_norm_q, dp_norm_log_q, dp_norm_log_q_inv and dp_mills for the rest of
 * dp_pg.
 */
#include <math.h>
#include <stdbool.h>

#include "calibrate.h"
#include "special.h"


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
double
dp_mills_cf_tail(double x, int k)
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
		return 1.0 / (x + dp_mills_cf_tail(x, 1));
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
		double		t = dp_mills_cf_tail(x, 1);	/* 1/(x + U) */

		return t / (x + t);		/* T M with M = 1/(x + T) */
	}
	return 1.0 - x * dp_mills(x);
}

/* M(x) - M(x + h) for h >= 0, integrating -M' where the difference cancels. */
double
dp_mills_diff(double x, double h)
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
double
dp_qdiff_scaled(double u, double w)
{
	if (isinf(w))
		return dp_mills(u);
	if (!(w > 0.0))
		return 0.0;
	return dp_mills_diff(u, w) - expm1(-0.5 * w * (2.0 * u + w)) * dp_mills(u + w);
}

/* ln(Q(u) - Q(u + w)) for w >= 0. */
double
dp_log_qdiff(double u, double w)
{
	double		v = u + w;

	if (!(w > 0.0))
		return -INFINITY;
	if (u >= 0.0)
		return -0.5 * u * u - DP_LN_SQRT2PI + log(dp_qdiff_scaled(u, w));
	if (v <= 0.0)
		return dp_log_qdiff(-v, w);
	/* u < 0 < v: split at 0, phi(0) = 1/sqrt(2 pi) */
	return log(dp_qdiff_scaled(0.0, -u) + dp_qdiff_scaled(0.0, v)) - DP_LN_SQRT2PI;
}

/* (Q(u) - Q(u + w)) / (2 Q(r)) for w >= 0, r >= 0, without cancellation or underflow. */
double
dp_qdiff_over_2q(double u, double w, double r)
{
	double		v = u + w;

	if (!(w > 0.0))
		return 0.0;
	if (u >= 0.0)
		return exp(-0.5 * (u - r) * (u + r)) * dp_qdiff_scaled(u, w) / (2.0 * dp_mills(r));
	if (v <= 0.0)
		return dp_qdiff_over_2q(-v, w, r);
	return exp(dp_log_qdiff(u, w) - DP_LN2 - dp_norm_log_q(r));
}


/* ------------------------------------------------------------------------
 * Root finding
 * ------------------------------------------------------------------------ */

/*
 * Root of a decreasing function by regula falsi (Illinois) with bisection
 * safeguards.  Requires fn(lo) = flo > 0 >= fhi = fn(hi); returns the end
 * of the final bracket where fn <= 0, at most xtol from the root.
 */
double
dp_root_decreasing(DpRootFn fn, const void *arg, double lo, double flo,
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
		if (!bisect && dp_finite_num(flo) && dp_finite_num(fhi) && flo > fhi)
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
double
dp_solve_decreasing(DpRootFn fn, const void *arg, double t0, double step,
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
	return dp_root_decreasing(fn, arg, lo, flo, hi, fhi, xtol);
}
