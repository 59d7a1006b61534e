/*
 * accuracy.c — accuracy first: the smallest privacy parameter of a family
 * whose planned error bar meets a half-width.
 *
 * Plain C (no PostgreSQL header).  For every family the planned noise only
 * grows as its parameter shrinks: the discrete Laplace's scale t >= D/epsilon
 * (rounded up), the discrete Gaussian's sigma^2 = D^2/(2 rho) (rounded up),
 * and the (epsilon, delta) calibrations' sigma (and OSGT's (m, sigma)) are
 * the smallest meeting their profile, which larger noise meets too; the
 * half-width at a level of a noise, or of an average built from two noises,
 * grows with it.  So the half-width h(theta) is non-increasing in the
 * parameter theta (epsilon or rho), and the smallest theta with
 * h(theta) <= H is found by bisection on log theta between the smallest and
 * the largest parameter dp_pg accepts (80 halvings: a relative 1e-12 of the
 * range).  The answer is the upper end of the bracket (it meets H: checked),
 * rounded up to 12 significant digits (readable in the ledger, at most 1e-12
 * more) and checked again.  A step function (integer half-widths) has no
 * smaller parameter meeting H than the one found, up to that precision: it
 * is the cheapest of its family.
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include "accuracy.h"

#include <math.h>
#include <stdio.h>

/* The smallest parameter tried: below it no useful noise is planned. */
#define DP_ACCURACY_MIN_EPSILON 1e-9
#define DP_ACCURACY_MIN_RHO 1e-12

/* The mechanism of family / form with parameter theta. */
static DpMechanism
accuracy_candidate(int family, int form, double delta, double theta)
{
	DpMechanism m = {family, form, {theta, form == DP_FORM_EPSILON_DELTA ? delta : 0.0}};

	return m;
}

/* h(theta) <= H, planning the candidate (a failed plan does not meet it). */
static bool
accuracy_meets(int family, int form, double delta, double theta, double halfwidth, DpHalfwidthFn fn, void *arg)
{
	DpMechanism m = accuracy_candidate(family, form, delta, theta);
	double		h = fn(&m, arg);

	return !isnan(h) && h <= halfwidth;
}

/* theta rounded up to 12 significant digits. */
static double
accuracy_round_up(double theta)
{
	double		scale = pow(10.0, 11 - floor(log10(theta)));
	double		r = ceil(theta * scale) / scale;

	return r >= theta ? r : nextafter(theta, INFINITY);
}

/* See accuracy.h. */
bool
dp_accuracy_resolve(int family, int form, double delta, double halfwidth, DpHalfwidthFn fn, void *arg,
					DpMechanism *out, char *err, size_t errlen)
{
	bool		rho = form == DP_FORM_RHO;
	double		lo = rho ? DP_ACCURACY_MIN_RHO : DP_ACCURACY_MIN_EPSILON;
	double		hi = rho ? DP_MAX_RHO : DP_MAX_EPSILON;
	double		theta;

	if (!(halfwidth > 0.0) || !isfinite(halfwidth))
	{
		snprintf(err, errlen, "halfwidth must be a finite number greater than 0, got %g", halfwidth);
		return false;
	}
	if (!accuracy_meets(family, form, delta, hi, halfwidth, fn, arg))
	{
		char		name[DP_MECH_TEXT_LEN];
		DpMechanism m = accuracy_candidate(family, form, delta, hi);

		dp_mechanism_format(&m, name, sizeof(name));
		snprintf(err, errlen, "no %s mechanism within dp_pg's limits meets the half-width %g (not even %s)",
				 dp_mechanism_family_name(family), halfwidth, name);
		return false;
	}
	if (accuracy_meets(family, form, delta, lo, halfwidth, fn, arg))
		hi = lo;
	else
		for (int i = 0; i < 80; i++)
		{
			double		mid = sqrt(lo * hi);

			if (accuracy_meets(family, form, delta, mid, halfwidth, fn, arg))
				hi = mid;
			else
				lo = mid;
		}
	theta = accuracy_round_up(hi);
	if (!((rho && theta <= DP_MAX_RHO) || (!rho && theta <= DP_MAX_EPSILON)) ||
		!accuracy_meets(family, form, delta, theta, halfwidth, fn, arg))
		theta = hi;
	*out = accuracy_candidate(family, form, delta, theta);
	return true;
}
