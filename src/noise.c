/*
 * noise.c — plan the exact lattice noise for a mechanism and sensitivity.
 *
 * Plain C.  The calibration rule per family (lattice units, sensitivity D):
 *
 *   laplace(epsilon=E)  discrete Laplace with scale t = D/E, rounded up to a
 *                       rational.  For integer D the pmf ratio of neighbours
 *                       is at most exp(D/t) <= exp(E): exactly (E, 0)-DP
 *                       (and E^2/2-zCDP, Bun-Steinke 2016 Prop. 1.4).
 *
 * The rational actually sampled is never below the calibrated double, so the
 * guarantee reported here holds for the noise actually drawn.
 */
#include "noise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Validate a sensitivity in lattice units. */
static bool
check_sensitivity(double v, const char *name, char *err, size_t errlen)
{
	if (!(v >= 1.0 && v <= 1099511627776.0) || v != floor(v))
	{
		snprintf(err, errlen, "%s sensitivity must be an integer between 1 and 2^40 lattice units, got %.17g",
				 name, v);
		return false;
	}
	return true;
}

/* Plan noise for mech at the given sensitivities; false with message on error. */
bool
dp_noise_plan(DpNoisePlan *plan, const DpMechanism *mech,
			  double l1, double l2, int lattice_exp, char *err, size_t errlen)
{
	double		unit = ldexp(1.0, lattice_exp);

	memset(plan, 0, sizeof(*plan));
	plan->mech = *mech;
	plan->l1 = l1;
	plan->l2 = l2;
	plan->lattice_exp = lattice_exp;
	plan->rho = INFINITY;

	if (!dp_mechanism_validate(mech, err, errlen))
		return false;
	if (!dp_mechanism_is_privacy_form(mech))
	{
		snprintf(err, errlen, "noise-parameter mechanisms are for inspection only; state epsilon (and delta) or rho");
		return false;
	}

	switch (mech->family)
	{
		case DP_MECH_LAPLACE:
			{
				double		eps = mech->p[0];
				DpRational	t;

				if (!check_sensitivity(l1, "L1", err, errlen))
					return false;
				t = dp_rational_up(l1 / eps);
				dp_sampler_laplace(&plan->sampler, t);
				plan->scale = dp_rational_to_double(t) * unit;
				/* discrete Laplace variance: 2 e^{1/t} / (e^{1/t} - 1)^2 */
				{
					double		a = 1.0 / dp_rational_to_double(t);
					double		em1 = expm1(a);

					plan->variance = 2.0 * exp(a) / (em1 * em1) * unit * unit;
				}
				plan->epsilon = eps;
				plan->delta = 0.0;
				plan->rho = eps * eps / 2.0;
				return true;
			}
		default:
			break;
	}
	snprintf(err, errlen, "mechanism family %s is not available for aggregates",
			 dp_mechanism_family_name(mech->family));
	return false;
}
