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

	memset(&c, 0, sizeof(c));
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

	memset(&c, 0, sizeof(c));
	c.epsilon = eps;
	c.delta = delta;
	c.rho = 1.0 / (2.0 * sigma * sigma);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c.rdp[i] = dp_gauss_rdp(DP_RDP_ALPHAS[i], 1.0, sigma);
	return c;
}

/* Cost of one gaussian(rho=r) charge: no epsilon stated, its exact curve r alpha. */
static DpCost
rho_cost(double r)
{
	DpCost		c;

	memset(&c, 0, sizeof(c));
	c.epsilon = INFINITY;
	c.delta = 0.0;
	c.rho = r;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c.rdp[i] = r * DP_RDP_ALPHAS[i];
	return c;
}

/* Cost of private key selection: (eps, delta) only, no rho, no Renyi curve. */
static DpCost
select_cost(double eps, double delta)
{
	DpCost		c;

	memset(&c, 0, sizeof(c));
	c.epsilon = eps;
	c.delta = delta;
	c.rho = INFINITY;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c.rdp[i] = INFINITY;
	return c;
}

/*
 * The exact delta(eps) of the pair (P, Q) of distributions on n points:
 * sum (P - e^eps Q)_+, the larger of both orderings.
 */
static double
profile_delta(const double *p, const double *q, int n, double eps)
{
	double		a = 0.0,
				b = 0.0;

	for (int i = 0; i < n; i++)
	{
		a += fmax(0.0, p[i] - exp(eps) * q[i]);
		b += fmax(0.0, q[i] - exp(eps) * p[i]);
	}
	return fmax(a, b);
}

/* D_alpha(P || Q), both orderings' maximum, on n points. */
static double
renyi_pair(const double *p, const double *q, int n, double alpha)
{
	double		a = 0.0,
				b = 0.0;

	for (int i = 0; i < n; i++)
	{
		a += pow(p[i], alpha) * pow(q[i], 1.0 - alpha);
		b += pow(q[i], alpha) * pow(p[i], 1.0 - alpha);
	}
	return fmax(log(a), log(b)) / (alpha - 1.0);
}

/*
 * Mixed families, checked on exact distributions: randomized response
 * (exact Rényi curve, charged as a rho form: no epsilon) composed with a
 * "key" that one neighbour's data makes appear with probability kd and the
 * other's never (a (0, kd) guarantee, no Rényi curve: key selection's
 * shape).  The accountant's epsilon at delta_limit must leave the exact
 * delta of the composition within delta_limit; when ignore_key_delta, the
 * key's delta is left out of the Rényi bookkeeping (a broken accountant,
 * the control).  Returns the exact delta at the certified epsilon (0 when
 * nothing was certified), the certified epsilon in *eps.
 */
static double
mixed_exact(double t, double kd, double delta_limit, bool ignore_key_delta, double *eps)
{
	double		p1[2] = {t, 1.0 - t};
	double		q1[2] = {1.0 - t, t};
	double		p[4],
				q[4];
	DpCost		tot,
				rr,
				key;

	memset(&rr, 0, sizeof(rr));
	rr.epsilon = INFINITY;
	rr.rho = INFINITY;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		rr.rdp[i] = nextafter(renyi_pair(p1, q1, 2, DP_RDP_ALPHAS[i]), INFINITY);
	key = select_cost(0.0, kd);
	dp_cost_zero(&tot);
	dp_cost_append(&tot, &rr);
	dp_cost_append(&tot, &key);
	if (ignore_key_delta)
		tot.rdp_mark = tot.rdp_delta = 0.0;
	*eps = dp_spent_epsilon(&tot, delta_limit, NULL);
	if (!isfinite(*eps))
		return 0.0;
	/* the product: (rr outcome) x (key released or not); Q never releases it */
	for (int a = 0; a < 2; a++)
	{
		p[2 * a] = p1[a] * (1.0 - kd);
		p[2 * a + 1] = p1[a] * kd;
		q[2 * a] = q1[a];
		q[2 * a + 1] = 0.0;
	}
	return profile_delta(p, q, 4, *eps);
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
			dp_cost_zero(&acc);
			acc.epsilon = x;
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

	/*
	 * Charges of every family compose in one budget, in every order: a
	 * gaussian(rho) charge (no epsilon), an (epsilon, delta) charge, a pure
	 * charge and key selection (no Renyi curve).  Before the composition
	 * of approximate steps, rho then key selection had no certificate at all
	 * (basic composition needs the rho charge's epsilon, Renyi composition
	 * the key set's curve), whatever the epsilon limit.
	 */
	{
		DpCost		fam[4];
		const char *name[4] = {"rho", "(epsilon, delta)", "pure", "key selection"};
		int			perm[24][4];
		int			np = 0;
		int			bad = 0;
		double		worst = 0.0;

		fam[0] = rho_cost(0.05);
		fam[1] = gauss_cost(0.5, 1e-7);
		fam[2] = pure_cost(0.25);
		fam[3] = select_cost(0.5, 1e-8);
		for (int a = 0; a < 4; a++)
			for (int b = 0; b < 4; b++)
				for (int c2 = 0; c2 < 4; c2++)
					for (int d = 0; d < 4; d++)
						if (a != b && a != c2 && a != d && b != c2 && b != d && c2 != d)
						{
							perm[np][0] = a;
							perm[np][1] = b;
							perm[np][2] = c2;
							perm[np][3] = d;
							np++;
						}
		lim.epsilon = 1e9;
		lim.delta = 1e-6;
		lim.rho = NAN;
		for (int k = 0; k < np; k++)
		{
			dp_cost_zero(&t);
			for (int j = 0; j < 4; j++)
			{
				if (dp_admits(&t, &fam[perm[k][j]], &lim) != DP_ADMIT)
				{
					if (bad++ < 3)
						tap_diag("order %d: %s refused after %d charges", k, name[perm[k][j]], j);
				}
				dp_cost_append(&t, &fam[perm[k][j]]);
			}
			worst = fmax(worst, dp_spent_epsilon(&t, lim.delta, NULL));
		}
		tap_ok(np == 24 && bad == 0, "every order of rho, (epsilon, delta), pure and key selection charges is admitted (epsilon limit 1e9)");
		tap_ok(worst > 1.0 && worst < 6.0, "... and spends a finite epsilon (at most %.4g)", worst);
		/* the reported case: rho, then key selection, then rho again, then key selection */
		dp_cost_zero(&t);
		lim.epsilon = 10.0;
		lim.delta = 1e-5;
		c = rho_cost(0.1);
		tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "a gaussian(rho=0.1) charge fits (10, 1e-5)");
		dp_cost_append(&t, &c);
		c = select_cost(0.5, 1e-8);
		tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "key selection after it fits");
		dp_cost_append(&t, &c);
		c = rho_cost(0.1);
		tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "a rho charge after key selection fits");
		dp_cost_append(&t, &c);
		c = select_cost(0.5, 1e-8);
		tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT, "and key selection again");
		dp_cost_append(&t, &c);
		{
			double		e = dp_spent_epsilon(&t, 1e-5, &method);
			double		plain;
			DpCost		r2;

			/* at least the Renyi spending of the rho charges alone plus the key sets' epsilon */
			dp_cost_zero(&r2);
			c = rho_cost(0.2);
			dp_cost_append(&r2, &c);
			plain = dp_spent_epsilon(&r2, 1e-5, NULL);
			tap_ok(method == 2 && e >= plain + 1.0 && e < plain + 1.0 + 1e-9,
				   "rho 0.2 and two key sets of 0.5: the rho charges' Renyi epsilon plus 1 (%.6g = %.6g + 1)", e, plain);
		}
		/* the key sets' delta counts with every charge's delta before them, within delta_limit / 2 */
		lim.delta = 1e-6;
		dp_cost_zero(&t);
		c = gauss_cost(0.5, 4e-7);
		dp_cost_append(&t, &c);
		c = select_cost(0.5, 2e-7);
		tap_ok(dp_admits(&t, &c, &lim) == DP_REFUSE_EPSILON,
			   "key selection of delta 2e-7 after a charge of delta 4e-7 does not fit delta 1e-6 (6e-7 > 5e-7)");
		dp_cost_zero(&t);
		c = select_cost(0.5, 2e-7);
		dp_cost_append(&t, &c);
		c = gauss_cost(0.5, 4e-7);
		tap_ok(dp_admits(&t, &c, &lim) == DP_ADMIT,
			   "... but before it, it does (the Gaussian's delta is paid by the Renyi certificate)");
		dp_cost_append(&t, &c);
		tap_ok(t.rdp_mark == 2e-7 && dp_spent_epsilon(&t, 1e-6, &method) < 10.0 && method == 2,
			   "the mark stays at the key set's delta (%.3g)", t.rdp_mark);
		/* a query that holds both a rho release and key selection is one valid charge */
		{
			DpCost		q;
			char		why[200];

			dp_cost_zero(&q);
			c = rho_cost(0.1);
			dp_cost_add(&q, &c);
			c = select_cost(0.5, 1e-8);
			dp_cost_add(&q, &c);
			tap_ok(dp_cost_valid_charge(&q, why, sizeof(why)) && isinf(q.epsilon) && q.rdp_delta == 1e-8 &&
				   q.rdp_mark == 1e-8, "one query of a rho release and key selection: a valid charge, delta 1e-8 without a curve");
			lim.delta = 1e-5;
			dp_cost_zero(&t);
			tap_ok(dp_admits(&t, &q, &lim) == DP_ADMIT, "... that a budget admits");
		}
	}

	/*
	 * The theorem on exact distributions (a non-adaptive instance): the
	 * certified epsilon leaves the exact delta within the limit; a broken
	 * accountant that forgets the key set's delta certifies an epsilon whose
	 * exact delta is far above the limit (the control).
	 */
	{
		double		eps;
		double		d_ok = mixed_exact(0.7, 4e-6, 1e-5, false, &eps);
		double		eps_ok = eps;
		double		d_big = mixed_exact(0.7, 2e-5, 1e-5, false, &eps);
		double		eps_big = eps;
		double		d_broken = mixed_exact(0.7, 2e-5, 1e-5, true, &eps);

		tap_ok(isfinite(eps_ok) && d_ok <= 1e-5, "exact: RR composed with a key of delta 4e-6, certified epsilon %.4g, exact delta %.3g <= 1e-5",
			   eps_ok, d_ok);
		tap_ok(isinf(eps_big) && d_big == 0.0, "exact: a key of delta 2e-5 is never certified at delta 1e-5");
		tap_ok(isfinite(eps) && d_broken > 1e-5, "control: forgetting the key's delta certifies %.4g with exact delta %.3g > 1e-5",
			   eps, d_broken);
	}
	return tap_done();
}
