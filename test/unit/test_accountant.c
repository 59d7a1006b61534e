/*
 * test_accountant.c — composition and the budget filter (src/core/accountant.c).
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "accountant.h"
#include "calibrate.h"
#include "tap.h"

/* Cost of one discrete-Laplace-like pure charge: eps, its RDP curve, eps^2/2. */
static DpCost
pure_cost(double eps)
{
	DpCost		c;

	c.epsilon = eps;
	c.delta = 0.0;
	c.rho = eps * eps / 2.0;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c.rdp[i] = dp_laplace_rdp(DP_RDP_ALPHAS[i], 1.0, 1.0 / eps);
	return c;
}

/* Cost of one Gaussian charge calibrated to (eps, delta) at Delta = 1. */
static DpCost
gauss_cost(double eps, double delta)
{
	DpCost		c;
	double		sigma = dp_gauss_sigma_analytic(1.0, eps, delta);

	c.epsilon = eps;
	c.delta = delta;
	c.rho = 1.0 / (2.0 * sigma * sigma);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c.rdp[i] = dp_gauss_rdp(DP_RDP_ALPHAS[i], 1.0, sigma);
	return c;
}

int
main(void)
{
	DpCost		t;
	DpCost		c;
	DpLimits	lim;
	int			method;

	/* exact sums stay exact; inexact sums round up */
	dp_cost_zero(&t);
	c = pure_cost(0.25);
	dp_cost_add(&t, &c);
	dp_cost_add(&t, &c);
	tap_ok(t.epsilon == 0.5 && t.delta == 0.0, "0.25 + 0.25 = 0.5 exactly, delta stays 0");
	dp_cost_zero(&t);
	c = pure_cost(0.1);
	for (int i = 0; i < 10; i++)
		dp_cost_add(&t, &c);
	tap_ok(t.epsilon >= 1.0, "ten times 0.1 is never below 1 (%.17g)", t.epsilon);
	tap_ok(t.epsilon <= 1.0 + 16 * DBL_EPSILON, "... and only ulps above it");
	{
		/* random-order sums are never below the exact (long double) sum */
		double		x = 0.0;
		long double exact = 0.0L;
		unsigned	s = 12345;
		int			ok = 1;

		for (int i = 0; i < 100000; i++)
		{
			DpCost		one;
			DpCost		acc;

			s = s * 1103515245u + 12345u;
			dp_cost_zero(&one);
			one.epsilon = (double) (s >> 8) / 16777216.0 * 1e-3;
			acc.epsilon = x;
			acc.delta = acc.rho = 0;
			memset(acc.rdp, 0, sizeof(acc.rdp));
			dp_cost_add(&acc, &one);
			x = acc.epsilon;
			exact += (long double) one.epsilon;
			if ((long double) x < exact)
				ok = 0;
		}
		tap_ok(ok, "100000 rounded-up additions never fall below the exact sum");
	}
	c = pure_cost(0.3);
	dp_cost_scale(&c, 3.0);
	tap_ok(c.epsilon >= 0.9, "scaling rounds up (%.17g)", c.epsilon);

	/* pure workload: basic composition, no delta needed */
	dp_cost_zero(&t);
	c = pure_cost(0.5);
	dp_cost_add(&t, &c);
	dp_cost_add(&t, &c);
	tap_ok(dp_spent_epsilon(&t, 1e-6, &method) == 1.0 && method == 1, "two pure 0.5 charges spend exactly 1 (basic)");
	tap_ok(dp_spent_epsilon(&t, NAN, &method) == 1.0, "delta unlimited: basic composition");
	lim.epsilon = 1.0;
	lim.delta = NAN;
	lim.rho = NAN;
	dp_cost_zero(&t);
	tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "pure charge admitted with delta not limited");
	dp_cost_add(&t, &c);
	tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "second pure 0.5 fits a limit of 1 exactly");
	dp_cost_add(&t, &c);
	tap_ok(dp_admits(&t, &c, &lim) == DP_REFUSE_EPSILON, "third is refused");

	/* a delta limit of 0 is pure DP: pure charges fit, any delta is refused as delta */
	lim.epsilon = 1.0;
	lim.delta = 0.0;
	lim.rho = NAN;
	dp_cost_zero(&t);
	c = pure_cost(0.5);
	tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "pure DP budget: a pure charge fits");
	dp_cost_add(&t, &c);
	c = gauss_cost(0.1, 1e-12);
	tap_ok(dp_admits(&t, &c, &lim) == DP_REFUSE_DELTA, "pure DP budget: a charge with delta 1e-12 is refused (delta)");
	lim.epsilon = NAN;
	tap_ok(dp_admits(&t, &c, &lim) == DP_REFUSE_DELTA, "delta limit 0 without an epsilon limit still refuses delta");
	c = pure_cost(100.0);
	tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "... and admits pure charges");
	lim.epsilon = 1.0;
	c = pure_cost(0.5);
	tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "pure DP budget: the second 0.5 fits exactly");
	dp_cost_add(&t, &c);
	c = pure_cost(1e-9);
	tap_ok(dp_admits(&t, &c, &lim) == DP_REFUSE_EPSILON, "pure DP budget: nothing more fits");

	/* many small pure charges: Rényi composition beats basic */
	dp_cost_zero(&t);
	c = pure_cost(0.01);
	for (int i = 0; i < 1000; i++)
		dp_cost_add(&t, &c);
	{
		double		e = dp_spent_epsilon(&t, 1e-6, &method);

		tap_ok(method == 2 && e < 10.0, "1000 x 0.01: Rényi certificate %.4f < basic 10", e);
		tap_diag("1000 pure charges of 0.01 at delta 1e-6: epsilon %.4f", e);
	}

	/* the Rényi certificate is the improved conversion at delta share / |grid| */
	dp_cost_zero(&t);
	c = gauss_cost(0.5, 1e-8);
	for (int i = 0; i < 50; i++)
		dp_cost_add(&t, &c);
	{
		double		share = (1.0 - DP_BASIC_DELTA_SHARE) * 1e-5 / DP_RDP_NALPHAS;
		double		ref = dp_rdp_eps_improved(DP_RDP_NALPHAS, DP_RDP_ALPHAS, t.rdp, share, NULL);
		double		e = dp_spent_epsilon(&t, 1e-5, &method);

		tap_ok(method == 2 && e >= ref && e <= ref * (1 + 1e-12) + 1e-12,
			   "50 Gaussians: certificate %.12g = improved conversion %.12g at the delta share", e, ref);
		tap_ok(e < 50 * 0.5, "... far below basic composition (25)");
	}

	/* one Gaussian with the whole delta is refused: basic gets half of delta */
	lim.epsilon = 1.0;
	lim.delta = 1e-5;
	lim.rho = NAN;
	dp_cost_zero(&t);
	c = gauss_cost(1.0, 1e-5);
	tap_ok(dp_admits(&t, &c, &lim) == DP_REFUSE_EPSILON, "gaussian(1, 1e-5) does not fit (1, 1e-5): delta is split");
	c = gauss_cost(1.0, 5e-6);
	tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "gaussian(1, 5e-6) fits (1, 1e-5) by basic composition");
	dp_cost_add(&t, &c);
	c = pure_cost(1e-9);
	tap_ok(dp_admits(&t, &c, &lim) == DP_REFUSE_EPSILON, "nothing more fits after it");

	/* rho-only charges: no basic composition (epsilon +Inf), Rényi still works */
	dp_cost_zero(&t);
	c = gauss_cost(1.0, 1e-6);
	c.epsilon = INFINITY;
	c.delta = 0.0;
	dp_cost_add(&t, &c);
	tap_ok(isinf(t.epsilon) && isfinite(dp_spent_epsilon(&t, 1e-6, &method)) && method == 2,
		   "rho-form charges are accounted by Rényi composition");
	tap_ok(isinf(dp_spent_epsilon(&t, NAN, NULL)), "... and have no epsilon when delta is not limited");

	/* rho limit: a zCDP filter */
	lim.epsilon = NAN;
	lim.delta = NAN;
	lim.rho = 0.02;
	dp_cost_zero(&t);
	dp_cost_zero(&c);
	c.rho = 0.015;
	c.epsilon = INFINITY;
	tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "rho 0.015 fits 0.02");
	dp_cost_add(&t, &c);
	tap_ok(dp_admits(&t, &c, &lim) == DP_REFUSE_RHO, "a second one does not");

	/* delta-only limit */
	lim.epsilon = NAN;
	lim.delta = 1e-6;
	lim.rho = NAN;
	dp_cost_zero(&t);
	c = gauss_cost(1.0, 6e-7);
	tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "delta-only limit admits 6e-7 of 1e-6");
	dp_cost_add(&t, &c);
	tap_ok(dp_admits(&t, &c, &lim) == DP_REFUSE_DELTA, "... but not twice");

	/* NaN never admitted */
	lim.epsilon = 1.0;
	lim.delta = 1e-6;
	lim.rho = 1.0;
	dp_cost_zero(&t);
	c = pure_cost(0.1);
	c.epsilon = NAN;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c.rdp[i] = NAN;
	tap_ok(dp_admits(&t, &c, &lim) != DP_ADMIT, "a NaN cost is never admitted");

	/* monotone: spending more never lowers the certificate */
	{
		int			ok = 1;
		double		prev = 0.0;

		dp_cost_zero(&t);
		for (int i = 0; i < 300; i++)
		{
			double		e;

			c = (i % 3 == 0) ? pure_cost(0.05) : gauss_cost(0.2, 1e-9);
			dp_cost_add(&t, &c);
			e = dp_spent_epsilon(&t, 1e-6, NULL);
			if (e < prev)
				ok = 0;
			prev = e;
		}
		tap_ok(ok, "the spent epsilon never decreases as charges are added");
	}
	/* per-query caps: a charge alone against the caps, whatever was spent */
	{
		DpLimits	caps = {NAN, NAN, NAN};
		double		v = 0.0,
					cap = 0.0;

		c = pure_cost(2.0);
		tap_ok(dp_admits_query(&c, &caps, 1e-6, &v, &cap) == DP_ADMIT, "no caps: anything fits");
		caps.epsilon = 1.0;
		tap_ok(dp_admits_query(&c, &caps, 1e-6, &v, &cap) == DP_REFUSE_QUERY_EPSILON && v == 2.0 && cap == 1.0,
			   "epsilon cap 1: a query of epsilon 2 is refused, naming 2 and 1");
		c = pure_cost(1.0);
		tap_ok(dp_admits_query(&c, &caps, 1e-6, &v, &cap) == DP_ADMIT, "epsilon cap 1: epsilon exactly 1 fits");
		c = gauss_cost(0.9, 1e-7);
		caps.delta = 1e-8;
		tap_ok(dp_admits_query(&c, &caps, 1e-6, &v, &cap) == DP_REFUSE_QUERY_DELTA && v == 1e-7,
			   "delta cap 1e-8: a query with delta 1e-7 is refused (delta)");
		caps.delta = 0.0;
		c = pure_cost(0.5);
		tap_ok(dp_admits_query(&c, &caps, 1e-6, &v, &cap) == DP_ADMIT, "delta cap 0: a pure query fits");
		caps.delta = NAN;
		caps.epsilon = NAN;
		caps.rho = 0.1;
		c = pure_cost(1.0);		/* rho 0.5 */
		tap_ok(dp_admits_query(&c, &caps, 1e-6, &v, &cap) == DP_REFUSE_QUERY_RHO && v == 0.5 && cap == 0.1,
			   "rho cap 0.1: a query of rho 0.5 is refused (rho)");
		/* a zCDP-only charge (no epsilon stated) against an epsilon cap: its certified epsilon */
		caps.rho = NAN;
		caps.epsilon = 5.0;
		c.epsilon = INFINITY;
		c.delta = 0.0;
		c.rho = 0.01;
		for (int i = 0; i < DP_RDP_NALPHAS; i++)
			c.rdp[i] = 0.01 * DP_RDP_ALPHAS[i];
		tap_ok(dp_admits_query(&c, &caps, 1e-6, &v, &cap) == DP_ADMIT,
			   "epsilon cap 5: a rho = 0.01 query fits through its Renyi certificate at delta 1e-6");
		tap_ok(dp_admits_query(&c, &caps, NAN, &v, &cap) == DP_REFUSE_QUERY_EPSILON && isinf(v),
			   "... but not when the role has no delta limit (no certificate but basic)");
	}

	/* passing 90% of a limit: once, on the charge that crosses it */
	{
		DpLimits	l = {1.0, 1e-6, NAN};
		double		now = 0.0,
					at = 0.0;
		int			crossings = 0;
		int			bad = 0;

		dp_cost_zero(&t);
		c = pure_cost(0.1);
		for (int i = 0; i < 9; i++)
		{
			DpRefusal	w = dp_passes_fraction(&t, &c, &l, 0.9, &now, &at);

			if (w != DP_ADMIT)
			{
				crossings++;
				if (w != DP_REFUSE_EPSILON || i != 8 || at != 1.0 || now < 0.9)
					bad++;
			}
			dp_cost_add(&t, &c);
		}
		tap_ok(crossings == 1 && bad == 0, "ten charges of 0.1 against 1: the ninth passes 90%% of epsilon, once");
		dp_cost_zero(&t);
		c = gauss_cost(0.01, 0.95e-6);
		tap_ok(dp_passes_fraction(&t, &c, &l, 0.9, &now, &at) == DP_REFUSE_DELTA && at == 1e-6,
			   "a charge of delta 0.95e-6 against 1e-6 passes 90%% of delta");
		c = pure_cost(0.5);
		l.epsilon = NAN;
		l.delta = 0.0;
		tap_ok(dp_passes_fraction(&t, &c, &l, 0.9, &now, &at) == DP_ADMIT,
			   "no epsilon limit and a delta limit of 0: nothing to pass");
	}
	return tap_done();
}
