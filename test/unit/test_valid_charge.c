/*
 * test_valid_charge.c — which costs may be queued as a charge
 * (dp_cost_valid_charge, src/core/accountant.c).
 *
 * The validation must accept exactly what a row of dp_pg.ledger_entries
 * accepts, minus NaN, negative amounts and an infinite delta.  The table's
 * CHECK constraints and the worker's NULL mapping (DpCostDatum, DpRdpArray in
 * src/ledger/requests.c) are restated here in plain C and compared on every
 * combination of awkward values.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "accountant.h"
#include "calibrate.h"
#include "tap.h"

/* Cost of one Gaussian charge calibrated to (eps, delta) at Delta = 1. */
static DpCost
gauss_cost(double eps, double delta)
{
	DpCost		c;
	double		sigma = dp_gauss_sigma_analytic(1.0, eps, delta);

	dp_cost_zero(&c);			/* rdp_delta, rdp_mark: an exact curve */
	c.epsilon = eps;
	c.delta = delta;
	c.rho = 1.0 / (2.0 * sigma * sigma);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c.rdp[i] = dp_gauss_rdp(DP_RDP_ALPHAS[i], 1.0, sigma);
	return c;
}

/* The worker stores +-Inf and NaN as NULL (DpCostDatum). */
static bool
stored_null(double v)
{
	return isinf(v) || isnan(v);
}

/* CHECK (x >= 0 AND x < 'Infinity') on a stored value (NULL passes). */
static bool
check_nonneg_finite(double v)
{
	return stored_null(v) || (v >= 0.0 && v < INFINITY);
}

/*
 * Would INSERT INTO dp_pg.ledger_entries accept the charge row of c?
 * (sql/dp_pg--0.1.0.sql: the column CHECKs and the table CHECK for
 * kind = 'charge'; rdp is NULL when any order is not finite.)
 */
static bool
table_accepts(const DpCost *c)
{
	bool		rdp_null = false;
	bool		eps_null = stored_null(c->epsilon);
	bool		delta_null = stored_null(c->delta);
	bool		rho_null = stored_null(c->rho);

	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		if (!isfinite(c->rdp[i]))
			rdp_null = true;
	if (!check_nonneg_finite(c->epsilon) || !check_nonneg_finite(c->rho))
		return false;
	if (!delta_null && !(c->delta >= 0.0 && c->delta < 1.0))
		return false;
	if (!rdp_null)
		for (int i = 0; i < DP_RDP_NALPHAS; i++)
			if (!(c->rdp[i] >= 0.0))
				return false;
	if (eps_null && rho_null && rdp_null)
		return false;
	if (!eps_null && delta_null)
		return false;
	return true;
}

/* NaN or a negative value anywhere in c. */
static bool
has_nan_or_negative(const DpCost *c)
{
	if (isnan(c->epsilon) || isnan(c->delta) || isnan(c->rho) ||
		c->epsilon < 0 || c->delta < 0 || c->rho < 0)
		return true;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		if (isnan(c->rdp[i]) || c->rdp[i] < 0)
			return true;
	return false;
}

int
main(void)
{
	DpCost		c;
	DpCost		t;
	char		why[256];

	/* what the aggregates produce is valid */
	c = gauss_cost(1.0, 1e-6);
	tap_ok(dp_cost_valid_charge(&c, why, sizeof(why)), "a Gaussian (epsilon, delta) cost is a valid charge");
	c.epsilon = INFINITY;
	c.delta = 0.0;
	tap_ok(dp_cost_valid_charge(&c, why, sizeof(why)), "a rho-form cost (no epsilon) is a valid charge");
	dp_cost_zero(&c);
	tap_ok(dp_cost_valid_charge(&c, why, sizeof(why)), "the zero cost is valid (the table accepts it)");
	tap_ok(dp_cost_valid_charge(&c, NULL, 0), "why may be NULL");

	/* the issue: eleven gaussian(epsilon=0.01, delta=0.1) call sites */
	dp_cost_zero(&t);
	c = gauss_cost(0.01, 0.1);
	for (int i = 0; i < 11; i++)
		dp_cost_add(&t, &c);
	why[0] = '\0';
	tap_ok(!dp_cost_valid_charge(&t, why, sizeof(why)), "eleven sites of delta 0.1 compose to an invalid charge");
	tap_ok(strcmp(why, "its delta would be 1.1, and a charge needs delta < 1") == 0, "... because of its delta: \"%s\"", why);
	dp_cost_zero(&t);
	for (int i = 0; i < 10; i++)
		dp_cost_add(&t, &c);
	tap_ok(t.delta >= 1.0 && !dp_cost_valid_charge(&t, why, sizeof(why)),
		   "ten sites of delta 0.1 are not below 1 (rounded up: %.17g)", t.delta);
	dp_cost_zero(&t);
	for (int i = 0; i < 9; i++)
		dp_cost_add(&t, &c);
	tap_ok(dp_cost_valid_charge(&t, why, sizeof(why)), "nine are (%.17g)", t.delta);

	/* delta at the edge */
	c = gauss_cost(1.0, 1e-6);
	c.delta = 1.0;
	tap_ok(!dp_cost_valid_charge(&c, why, sizeof(why)), "delta = 1 is refused");
	c.delta = nextafter(1.0, 0.0);
	tap_ok(dp_cost_valid_charge(&c, why, sizeof(why)), "the largest delta below 1 is accepted");
	c.epsilon = INFINITY;
	c.delta = 1.5;
	tap_ok(!dp_cost_valid_charge(&c, why, sizeof(why)), "delta >= 1 is refused without an epsilon too (the table stores it)");
	c.delta = INFINITY;
	tap_ok(!dp_cost_valid_charge(&c, why, sizeof(why)), "an infinite delta is refused (NULL would replay as 0)");

	/* NaN and negative values, in every component */
	{
		bool		ok = true;

		for (int k = -3; k < DP_RDP_NALPHAS; k++)
		{
			const double bad[] = {NAN, -1e-300, -1.0, -INFINITY};

			for (int b = 0; b < 4; b++)
			{
				c = gauss_cost(0.5, 1e-8);
				if (k == -3)
					c.epsilon = bad[b];
				else if (k == -2)
					c.delta = bad[b];
				else if (k == -1)
					c.rho = bad[b];
				else
					c.rdp[k] = bad[b];
				why[0] = '\0';
				if (dp_cost_valid_charge(&c, why, sizeof(why)) || why[0] == '\0')
				{
					ok = false;
					tap_diag("component %d value %g accepted", k, bad[b]);
				}
			}
		}
		tap_ok(ok, "NaN, negative and -Inf values are refused in epsilon, delta, rho and every Renyi order, with a reason");
		c = gauss_cost(0.5, 1e-8);
		c.rdp[3] = NAN;
		dp_cost_valid_charge(&c, why, sizeof(why));
		tap_ok(strstr(why, "Renyi divergence at order") != NULL && strstr(why, "not a number") != NULL,
			   "the reason names the order: \"%s\"", why);
	}

	/* at least one bound */
	dp_cost_zero(&c);
	c.epsilon = INFINITY;
	c.rho = INFINITY;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c.rdp[i] = INFINITY;
	tap_ok(!dp_cost_valid_charge(&c, why, sizeof(why)), "no finite epsilon, rho or curve is refused: \"%s\"", why);
	for (int i = 0; i < DP_RDP_NALPHAS - 1; i++)
		c.rdp[i] = 1.0;
	tap_ok(!dp_cost_valid_charge(&c, why, sizeof(why)), "... also with a curve infinite at one order (stored NULL)");
	c.rdp[DP_RDP_NALPHAS - 1] = 1.0;
	tap_ok(dp_cost_valid_charge(&c, why, sizeof(why)), "a finite curve alone is enough");
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c.rdp[i] = INFINITY;
	c.rho = 0.1;
	tap_ok(dp_cost_valid_charge(&c, why, sizeof(why)), "a finite rho alone is enough");
	c.rho = INFINITY;
	c.epsilon = 0.1;
	tap_ok(dp_cost_valid_charge(&c, why, sizeof(why)), "a finite epsilon alone is enough");

	/*
	 * Mirror: on every combination of awkward values, valid exactly when
	 * the table accepts the row and nothing is NaN, negative or an infinite
	 * delta.
	 */
	{
		const double vals[] = {NAN, -INFINITY, -1.0, -0.0, 0.0, 1e-300, 0.5,
		nextafter(1.0, 0.0), 1.0, 1.1, 1e300, INFINITY};
		const int	nvals = sizeof(vals) / sizeof(vals[0]);
		long		checked = 0;
		long		valid = 0;
		long		mismatches = 0;

		for (int e = 0; e < nvals; e++)
			for (int d = 0; d < nvals; d++)
				for (int r = 0; r < nvals; r++)
					for (int a = 0; a < nvals; a++)
						for (int where = 0; where < 3; where++)
						{
							bool		expect;
							bool		got;

							c.epsilon = vals[e];
							c.delta = vals[d];
							c.rho = vals[r];
							/* the curve: all orders, the first only, or the last only take vals[a] (others 0.25) */
							for (int i = 0; i < DP_RDP_NALPHAS; i++)
								c.rdp[i] = (where == 0 || (where == 1 && i == 0) ||
											(where == 2 && i == DP_RDP_NALPHAS - 1)) ? vals[a] : 0.25;
							expect = table_accepts(&c) && !has_nan_or_negative(&c) && !isinf(c.delta);
							got = dp_cost_valid_charge(&c, why, sizeof(why));
							checked++;
							valid += got;
							if (got != expect)
							{
								if (mismatches < 5)
									tap_diag("eps %g delta %g rho %g rdp %g (%d): table+rules %d, validation %d (%s)",
											 c.epsilon, c.delta, c.rho, vals[a], where, expect, got, why);
								mismatches++;
							}
						}
		tap_ok(mismatches == 0, "validation = table CHECKs without NaN, negatives or infinite delta on %ld costs (%ld valid)",
			   checked, valid);
	}
	return tap_done();
}
