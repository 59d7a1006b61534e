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
 * the fixed grid A.  Let T be the (random) number of admitted mechanisms,
 * where step n is admitted only if one certificate holds for steps 1..n:
 *   (B) sum eps_i <= eps_L and sum delta_i <= delta_B, or
 *   (R_alpha) sum r_i(alpha) + ln(1 - 1/alpha) - (ln delta_alpha + ln alpha)/(alpha - 1) <= eps_L,
 * with delta_B + sum_alpha delta_alpha <= delta_L fixed before the first
 * query.  Then the whole interaction is (eps_L, delta_L)-DP.
 *
 * Proof.  Let L_T = sum_{i<=T} l_i be the privacy loss of the transcript.
 * Pointwise (1 - e^{a+b-x-y})_+ <= (1 - e^{a-x})_+ + (1 - e^{b-y})_+, so if
 * (B) holds at T (hence, the sums being non-decreasing and predictable, at
 * every i <= T), (1 - e^{eps_L - L_T})_+ <= sum_{i<=T} 1[B holds at i]
 * (1 - e^{eps_i - l_i})_+, whose expectation is at most the sum of delta_i
 * over the steps where (B) holds, i.e. at most delta_B.  For a grid order
 * alpha, M^alpha_n = exp((alpha - 1)(L_n - sum_{i<=n} r_i(alpha))) is a
 * non-negative supermartingale (E[e^{(alpha-1) l_i} | past] =
 * e^{(alpha-1) D_alpha(M_i)}), so E[M^alpha_T] <= 1 (optional stopping);
 * and (1 - e^{eps - L})_+ <= c_alpha e^{(alpha-1)(L - eps)} with
 * c_alpha = (1 - 1/alpha)^alpha/(alpha - 1) (the improved conversion of
 * Canonne-Kamath-Steinke 2020 / Asoodeh et al. 2021), so if (R_alpha) holds
 * at T, (1 - e^{eps_L - L_T})_+ <= delta_alpha M^alpha_T.  At T at least one
 * certificate holds, hence
 *   delta_T(eps_L) = E_P[(1 - e^{eps_L - L_T})_+] <= delta_B + sum_alpha delta_alpha <= delta_L.
 * The same holds with P and Q exchanged.  (This is the Rényi filter of
 * Feldman-Zrnic 2021 / Whitehouse et al. 2023 at orders fixed in advance,
 * with the union over the orders paid in delta, plus the basic-composition
 * filter of Rogers et al. 2016, combined by the same union.)
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

/* acc += c, every sum rounded up. */
void
dp_cost_add(DpCost *acc, const DpCost *c)
{
	acc->epsilon = add_up(acc->epsilon, c->epsilon);
	acc->delta = add_up(acc->delta, c->delta);
	acc->rho = add_up(acc->rho, c->rho);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		acc->rdp[i] = add_up(acc->rdp[i], c->rdp[i]);
}

/* c *= k (k >= 1 releases of the same cost), rounded up. */
void
dp_cost_scale(DpCost *c, double k)
{
	c->epsilon = mul_up(c->epsilon, k);
	c->delta = mul_up(c->delta, k);
	c->rho = mul_up(c->rho, k);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c->rdp[i] = mul_up(c->rdp[i], k);
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
	/* (R_alpha) over the grid */
	if (!isnan(delta_limit) && delta_limit > 0.0)
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

	dp_cost_add(&t, charge);
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

	dp_cost_add(&after, charge);
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
