/*
 * accountant.c — composition of privacy costs and the budget filter.
 *
 * Plain C.  A role's spending is the running sum of its charges (each
 * charge is the composed cost of one query: the sum over its dp aggregate
 * call sites).  The budget is enforced by a privacy filter: a charge is
 * admitted only if, after adding it, at least one of the certificates below
 * bounds the role's epsilon by epsilon_limit, with delta_limit split between
 * them in advance.
 *
 * Theorem (the filter).  Let mechanisms M_1, M_2, ... be chosen adaptively,
 * each with costs fixed before it runs: (eps_i, delta_i) with
 * E_P[(1 - e^{eps_i - l_i})_+ | past] <= delta_i (its hockey-stick divergence,
 * both orderings), and Rényi bounds D_alpha(M_i) <= r_i(alpha) for alpha in
 * the fixed grid A -- or none (r_i = +Inf), as private key selection has
 * only (eps_i, delta_i): an "approximate" step, whose r^_i(alpha) below is
 * min(r_i(alpha), eps_i); an exact step's r^_i is r_i.  Call the steps with
 * delta_i > 0 and sum_{j<=i} delta_j <= delta_B the intact prefix.  Let T be
 * the (random) number of admitted mechanisms, where step n is admitted only
 * if one certificate holds for steps 1..n:
 *   (B) sum eps_i <= eps_L and sum delta_i <= delta_B, or
 *   (R_alpha) sum r^_i(alpha) + ln(1 - 1/alpha) - (ln delta_alpha + ln alpha)/(alpha - 1) <= eps_L,
 *       and every approximate step with delta_i > 0 is in the intact prefix,
 * with delta_B + sum_alpha delta_alpha <= delta_L fixed before the first
 * query.  Then the whole interaction is (eps_L, delta_L)-DP.
 *
 * Proof.  Write p, q for the densities of the transcript under neighbours x,
 * x' and p_i, q_i for step i's given the past; l_i = log(p_i/q_i).  For a
 * step i of the intact prefix let g_i = min(p_i, e^{eps_i} q_i), so
 * p_i - g_i >= 0 has mass (the hockey-stick divergence) at most delta_i; for
 * the other steps g_i = p_i.  Let G = prod g_i: the transcripts drawn
 * without a "bad" part of an intact-prefix step.  The prefix is predictable
 * and its deltas sum to at most delta_B on every path, so p - G >= 0 has
 * mass at most E[sum over the prefix of delta_i] <= delta_B (a union bound
 * over the steps), and
 *   delta_T(eps_L) = integral (p - e^{eps_L} q)_+ <= delta_B + integral (G - e^{eps_L} q)_+.
 * Split the transcripts by the first certificate that holds at T.  Where
 * (B) holds, every step with delta_i > 0 is in the prefix, so
 * log(G/q) <= sum eps_i <= eps_L (a pure step has p_i <= e^{eps_i} q_i) and
 * the integrand is 0.  Where (R_alpha) holds: with L' = log(G/q),
 * (1 - e^{eps - L'})_+ <= c_alpha e^{(alpha-1)(L' - eps)},
 * c_alpha = (1 - 1/alpha)^alpha/(alpha - 1) (the improved conversion of
 * Canonne-Kamath-Steinke 2020 / Asoodeh et al. 2021), so the integrand is at
 * most delta_alpha G e^{(alpha-1)(L' - sum r^_i)} = delta_alpha p N_T with
 * N_n = prod_{i<=n} (g_i/p_i) e^{(alpha-1)(log(g_i/q_i) - r^_i(alpha))}.  N is
 * a non-negative P-supermartingale: its factor's expectation is
 * e^{-(alpha-1) r^_i} integral g_i^alpha q_i^{1-alpha} <= 1, since g_i <= p_i
 * (bound e^{(alpha-1) r_i}) and, for an approximate step, g_i <= e^{eps_i} q_i
 * with integral g_i <= 1 (bound e^{(alpha-1) eps_i}) -- such a step is in
 * the prefix when delta_i > 0 (the certificate's condition) and pure
 * (g_i = p_i <= e^{eps_i} q_i) when delta_i = 0.  By optional stopping
 * E[N_T] <= 1.  At T some certificate holds, hence
 *   delta_T(eps_L) <= delta_B + sum_alpha delta_alpha <= delta_L.
 * The same holds with P and Q exchanged.  (Without approximate steps this
 * is the Rényi filter of Feldman-Zrnic 2021 / Whitehouse et al. 2023 at
 * orders fixed in advance, with the union over the orders paid in delta,
 * plus the basic-composition filter of Rogers et al. 2016, combined by the
 * same union; the decomposition g_i is Dwork-Roth's Lemma 3.17 argument
 * for (eps, delta)-indistinguishability, and it costs no delta beyond
 * delta_B because (B) already pays for the prefix.)
 *
 * Bookkeeping: DpCost keeps sum r^_i in rdp (an approximate step adds its
 * epsilon, or rho alpha when it states a rho: then it is exact), the deltas
 * of its approximate steps in rdp_delta, and a budget's total keeps in
 * rdp_mark the sum of delta_j up to its last approximate step with
 * delta > 0 (dp_cost_append): "every approximate step is in the intact
 * prefix" is rdp_mark <= delta_B.  The releases of one query all have their
 * costs fixed before the first runs, so its approximate releases may be
 * taken first: a charge's own mark is its rdp_delta (dp_cost_add).  Without
 * approximate steps rdp_mark is 0 and (R_alpha) is the plain Rényi
 * certificate; with only approximate steps it is never below (B).  So a
 * gaussian(rho=..) charge, a pure-epsilon charge, an (epsilon, delta)
 * charge and key selection compose in one budget in any order: key
 * selection needs only its delta (with the deltas of every charge before it)
 * within delta_B, as it would under (B) alone.
 *
 * Split: delta_B = DP_BASIC_DELTA_SHARE delta_L, and the rest equally over the
 * DP_RDP_NALPHAS orders.  A pure-DP workload (delta_i = 0) needs no delta at
 * all under (B).  zCDP composition is covered by (R_alpha): a rho-zCDP
 * mechanism has r(alpha) <= rho alpha, and the exact curves are tighter.
 * A rho limit is a separate zCDP filter (sum rho_i <= rho_L, admitted
 * predictably, is rho_L-zCDP); all limits a role has must hold.
 *
 * Rounding: every sum is rounded up and every certificate is computed so
 * that floating-point error can only make it larger.
 *
 * Valid charges: the theorem needs each cost to be a true bound, i.e.
 * eps_i, rho_i, r_i(alpha) in [0, +Inf] and delta_i in [0, 1) (+Inf meaning
 * "no such bound"), and at least one bound finite.  dp_cost_valid_charge
 * checks exactly that before a cost is queued, so that a cost the ledger
 * table would refuse (its CHECK constraints say the same) never reaches the
 * worker's batch.  NaN is refused outright: stored it would read back as
 * "no bound" (NULL) while the online totals would be NaN, and every
 * comparison with NaN is false.  An infinite delta is refused too: it would
 * be stored as NULL, which the replay reads as 0.
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include "accountant.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DP_METHOD_NONE 0
#define DP_METHOD_BASIC 1
#define DP_METHOD_RENYI 2

/* a + b rounded up: the double sum, moved up one ulp if it fell below the exact sum. */
static double
add_up(double a, double b)
{
	double		s = a + b;
	double		bb;
	double		err;

	if (isinf(s) || isnan(s))
		return s;
	/* Knuth's TwoSum: err is exactly (a + b) - s */
	bb = s - a;
	err = (a - (s - bb)) + (b - bb);
	return err > 0.0 ? nextafter(s, INFINITY) : s;
}

/* x * k rounded up (x, k >= 0). */
static double
mul_up(double x, double k)
{
	double		p = x * k;

	if (isinf(p) || isnan(p))
		return p;
	/* fma gives the exact residual x k - p */
	return fma(x, k, -p) > 0.0 ? nextafter(p, INFINITY) : p;
}

/* The zero cost. */
void
dp_cost_zero(DpCost *c)
{
	memset(c, 0, sizeof(*c));
}

/*
 * c as it enters a composition: a Rényi curve unbounded at some order is
 * bounded there by rho alpha (rho-zCDP) when c states a rho; otherwise,
 * with a finite epsilon, c is an approximate step (see the theorem): every
 * order at most epsilon, outside an event of probability delta.
 */
static void
normalize(DpCost *c)
{
	bool		bounded = true;

	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		if (!(c->rdp[i] < INFINITY))
			bounded = false;
	if (bounded)
		return;
	if (c->rho >= 0.0 && c->rho < INFINITY)
	{
		for (int i = 0; i < DP_RDP_NALPHAS; i++)
		{
			double		r = mul_up(c->rho, DP_RDP_ALPHAS[i]);

			if (!(c->rdp[i] <= r))
				c->rdp[i] = r;
		}
		return;
	}
	if (!(c->epsilon >= 0.0 && c->epsilon < INFINITY))
		return;					/* no bound at all: not a valid charge */
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		if (!(c->rdp[i] <= c->epsilon))
			c->rdp[i] = c->epsilon;
	/* the whole of c's delta (at least the delta of its approximate parts) */
	if (c->delta > 0.0)
		c->rdp_delta = c->delta;
}

/* The sums of dp_cost_add and dp_cost_append (rdp_mark apart), c normalized. */
static void
add_parts(DpCost *acc, const DpCost *c)
{
	acc->epsilon = add_up(acc->epsilon, c->epsilon);
	acc->delta = add_up(acc->delta, c->delta);
	acc->rho = add_up(acc->rho, c->rho);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		acc->rdp[i] = add_up(acc->rdp[i], c->rdp[i]);
	acc->rdp_delta = add_up(acc->rdp_delta, c->rdp_delta);
}

/* acc += c, the releases of one query: approximate parts first (rdp_mark = rdp_delta). */
void
dp_cost_add(DpCost *acc, const DpCost *c)
{
	DpCost		part = *c;

	normalize(acc);
	normalize(&part);
	add_parts(acc, &part);
	acc->rdp_mark = acc->rdp_delta;
}

/* total += charge, a charge after the earlier ones (see accountant.h). */
void
dp_cost_append(DpCost *total, const DpCost *charge)
{
	DpCost		part = *charge;
	double		before = total->delta;

	normalize(total);
	normalize(&part);
	add_parts(total, &part);
	if (part.rdp_delta > 0.0)
		total->rdp_mark = add_up(before, part.rdp_delta);
}

/* c *= k (k >= 1 releases of the same cost, in one query), rounded up. */
void
dp_cost_scale(DpCost *c, double k)
{
	normalize(c);
	c->epsilon = mul_up(c->epsilon, k);
	c->delta = mul_up(c->delta, k);
	c->rho = mul_up(c->rho, k);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c->rdp[i] = mul_up(c->rdp[i], k);
	c->rdp_delta = mul_up(c->rdp_delta, k);
	c->rdp_mark = c->rdp_delta;
}

/* Epsilon certified by (R_alpha) for Rényi sum tau at delta_alpha, rounded up. */
static double
renyi_certificate(double tau, double alpha, double delta_alpha)
{
	double		e;

	if (isinf(tau))
		return INFINITY;
	e = tau + log1p(-1.0 / alpha) - (log(delta_alpha) + log(alpha)) / (alpha - 1.0);
	/* a few ulps for the logs */
	return e + 8.0 * DBL_EPSILON * (fabs(tau) + fabs(log(delta_alpha)) + 1.0);
}

/* Epsilon spent at delta_limit by the filter's certificates; +Inf if none applies. */
double
dp_spent_epsilon(const DpCost *total, double delta_limit, int *method)
{
	double		best = INFINITY;
	int			how = DP_METHOD_NONE;

	/* (B): basic composition, within its share of delta (all of it if unlimited) */
	if (isnan(delta_limit) || total->delta == 0.0 ||
		total->delta <= DP_BASIC_DELTA_SHARE * delta_limit)
	{
		best = total->epsilon;
		how = DP_METHOD_BASIC;
	}
	/* (R_alpha) over the grid, while every approximate step is in the intact prefix */
	if (!isnan(delta_limit) && delta_limit > 0.0 &&
		(total->rdp_mark == 0.0 || total->rdp_mark <= DP_BASIC_DELTA_SHARE * delta_limit))
	{
		double		delta_alpha = (1.0 - DP_BASIC_DELTA_SHARE) * delta_limit / DP_RDP_NALPHAS;

		for (int i = 0; i < DP_RDP_NALPHAS; i++)
		{
			double		e = renyi_certificate(total->rdp[i], DP_RDP_ALPHAS[i], delta_alpha);

			if (e < best)
			{
				best = e;
				how = DP_METHOD_RENYI;
			}
		}
	}
	if (best < 0.0)
		best = 0.0;
	if (method)
		*method = how;
	return best;
}

/* Name of a certificate method returned by dp_spent_epsilon. */
const char *
dp_spent_method_name(int method)
{
	switch (method)
	{
		case DP_METHOD_BASIC:
			return "basic composition";
		case DP_METHOD_RENYI:
			return "Renyi composition";
	}
	return "none";
}

/* Would total + charge stay within lim?  DP_ADMIT or the limit it breaks. */
DpRefusal
dp_admits(const DpCost *total, const DpCost *charge, const DpLimits *lim)
{
	DpCost		t = *total;

	dp_cost_append(&t, charge);
	/* a delta limit of 0 is pure DP: only charges without delta fit */
	if (lim->delta == 0.0 && !(t.delta <= 0.0))
		return DP_REFUSE_DELTA;
	if (!isnan(lim->epsilon) && !(dp_spent_epsilon(&t, lim->delta, NULL) <= lim->epsilon))
		return DP_REFUSE_EPSILON;
	if (!isnan(lim->delta) && isnan(lim->epsilon) && !(t.delta <= lim->delta))
		return DP_REFUSE_DELTA;
	if (!isnan(lim->rho) && !(t.rho <= lim->rho))
		return DP_REFUSE_RHO;
	return DP_ADMIT;
}

/* One charge against the per-query caps. */
DpRefusal
dp_admits_query(const DpCost *charge, const DpLimits *caps, double delta_limit,
				double *value, double *cap)
{
	double		v;
	DpCost		alone;

	/* the charge as the only one of a budget (its own approximate parts first) */
	dp_cost_zero(&alone);
	dp_cost_append(&alone, charge);
	charge = &alone;

	if (!isnan(caps->delta) && !(charge->delta <= caps->delta))
	{
		*value = charge->delta;
		*cap = caps->delta;
		return DP_REFUSE_QUERY_DELTA;
	}
	if (!isnan(caps->epsilon) && !((v = dp_spent_epsilon(charge, delta_limit, NULL)) <= caps->epsilon))
	{
		*value = v;
		*cap = caps->epsilon;
		return DP_REFUSE_QUERY_EPSILON;
	}
	if (!isnan(caps->rho) && !(charge->rho <= caps->rho))
	{
		*value = charge->rho;
		*cap = caps->rho;
		return DP_REFUSE_QUERY_RHO;
	}
	return DP_ADMIT;
}

/* Below frac * limit before, at or above it after (limit set and positive). */
static bool
passes(double before, double after, double limit, double frac)
{
	if (isnan(limit) || !(limit > 0.0))
		return false;
	return before < frac * limit && !(after < frac * limit);
}

/* Does total + charge pass frac of one of lim's limits? */
DpRefusal
dp_passes_fraction(const DpCost *total, const DpCost *charge, const DpLimits *lim,
				   double frac, double *spent_after, double *limit)
{
	DpCost		after = *total;

	dp_cost_append(&after, charge);
	if (passes(dp_spent_epsilon(total, lim->delta, NULL), dp_spent_epsilon(&after, lim->delta, NULL),
			   lim->epsilon, frac))
	{
		*spent_after = dp_spent_epsilon(&after, lim->delta, NULL);
		*limit = lim->epsilon;
		return DP_REFUSE_EPSILON;
	}
	if (passes(total->delta, after.delta, lim->delta, frac))
	{
		*spent_after = after.delta;
		*limit = lim->delta;
		return DP_REFUSE_DELTA;
	}
	if (passes(total->rho, after.rho, lim->rho, frac))
	{
		*spent_after = after.rho;
		*limit = lim->rho;
		return DP_REFUSE_RHO;
	}
	return DP_ADMIT;
}

static void set_why(char *why, size_t len, const char *fmt,...) __attribute__((format(printf, 3, 4)));

/* Write a reason into why (if given). */
static void
set_why(char *why, size_t len, const char *fmt,...)
{
	va_list		ap;

	if (why == NULL || len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* One bound of a charge: a number in [0, +Inf]; else the reason. */
static bool
bound_valid(double v, const char *name, char *why, size_t len)
{
	if (isnan(v))
	{
		set_why(why, len, "its %s is not a number", name);
		return false;
	}
	if (v < 0.0)
	{
		set_why(why, len, "its %s would be %g, and a charge cannot be negative", name, v);
		return false;
	}
	return true;
}

/* Can c be recorded as one charge?  If not, the reason in why. */
bool
dp_cost_valid_charge(const DpCost *c, char *why, size_t len)
{
	bool		curve_finite = true;

	if (!bound_valid(c->epsilon, "epsilon", why, len) ||
		!bound_valid(c->delta, "delta", why, len) ||
		!bound_valid(c->rho, "rho", why, len))
		return false;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
	{
		char		name[64];

		snprintf(name, sizeof(name), "Renyi divergence at order %g", DP_RDP_ALPHAS[i]);
		if (!bound_valid(c->rdp[i], name, why, len))
			return false;
		if (isinf(c->rdp[i]))
			curve_finite = false;
	}
	if (!bound_valid(c->rdp_delta, "delta without a Renyi curve", why, len) ||
		!bound_valid(c->rdp_mark, "delta up to its last release without a Renyi curve", why, len))
		return false;
	if (!(c->rdp_delta < 1.0))
	{
		set_why(why, len, "its delta without a Renyi curve would be %g, and a charge needs less than 1", c->rdp_delta);
		return false;
	}
	/* ledger_entries: delta >= 0 AND delta < 1 (an infinite delta is no bound at all) */
	if (!(c->delta < 1.0))
	{
		set_why(why, len, "its delta would be %g, and a charge needs delta < 1", c->delta);
		return false;
	}
	/* ledger_entries: epsilon, rho or the whole Renyi curve stated (not NULL) */
	if (isinf(c->epsilon) && isinf(c->rho) && !curve_finite)
	{
		set_why(why, len, "it bounds none of epsilon, rho and the Renyi curve, and a charge needs one of them");
		return false;
	}
	return true;
}
