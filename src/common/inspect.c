/*
 * inspect.c — free inspection and accuracy helpers (public parameters only).
 *
 * None of these functions reads data or charges anything: they answer what a
 * mechanism's noise is, what it guarantees and how accurate it is.
 *
 *   privacy forms (laplace(epsilon=..), gaussian(epsilon=.., delta=..),
 *   gaussian(rho=..), osgt(epsilon=.., delta=..)): the discrete noise that
 *   an aggregate with this sensitivity actually samples (integer lattice for
 *   an integer sensitivity, as dp_count; a power-of-two lattice otherwise),
 *   and that noise's own exact profile;
 *   noise forms (laplace(scale=..), gaussian(sigma=..), osgt(sigma=.., m=..)):
 *   the continuous family with exactly those parameters (test/reference).
 *
 * Layer common/ (docs/development.md): may call the numeric core (core/)
 * and the rest of common/, nothing above.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "agg_common.h"
#include "calibrate.h"
#include "noise.h"
#include "rr.h"

PG_FUNCTION_INFO_V1(dp_inspect_calibrate);
PG_FUNCTION_INFO_V1(dp_inspect_privacy_delta);
PG_FUNCTION_INFO_V1(dp_inspect_privacy_epsilon);
PG_FUNCTION_INFO_V1(dp_inspect_renyi);
PG_FUNCTION_INFO_V1(dp_inspect_zcdp_epsilon);
PG_FUNCTION_INFO_V1(dp_noise_stddev);
PG_FUNCTION_INFO_V1(dp_confidence_interval);
PG_FUNCTION_INFO_V1(dp_display_round);

#define DP_DISPLAY_DIGITS 6		/* significant digits of the views' readable numbers */

/*
 * dp_pg.display_round(x float8, direction int4 DEFAULT 0): x to
 * DP_DISPLAY_DIGITS significant digits, for the budget, ledger and release
 * views (48.49999999896455 reads 48.5): the nearest such number, or with
 * direction 1 / -1 the nearest one not below / not above x (an interval's
 * ends rounded outwards).  0, infinities and NaN stay as they are.  Display
 * only: the functions behind the views (dp_pg.budget_rows() and the others)
 * give the exact values.
 */
Datum
dp_display_round(PG_FUNCTION_ARGS)
{
	double		x = PG_GETARG_FLOAT8(0);
	int32		dir = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);
	char		buf[64];
	double		r;

	if (x == 0.0 || !isfinite(x))
		PG_RETURN_FLOAT8(x);
	snprintf(buf, sizeof(buf), "%.*e", DP_DISPLAY_DIGITS - 1, x);
	r = strtod(buf, NULL);
	if ((dir > 0 && r < x) || (dir < 0 && r > x))
	{
		/* one unit of the last shown digit outwards, shown again */
		int			e = atoi(strchr(buf, 'e') + 1);

		r += (dir > 0 ? 1.0 : -1.0) * pow(10.0, e - (DP_DISPLAY_DIGITS - 1));
		snprintf(buf, sizeof(buf), "%.*e", DP_DISPLAY_DIGITS - 1, r);
		r = strtod(buf, NULL);
		/* (a step that the printing rounds back: keep x itself) */
		if ((dir > 0 && r < x) || (dir < 0 && r > x))
			r = x;
	}
	PG_RETURN_FLOAT8(r);
}

/* ERROR 22023 unless lo < v <= hi (lo <= v when lo_inclusive), v finite. */
static void
DpCheckArg(const char *name, double v, double lo, bool lo_inclusive, double hi)
{
	if (isnan(v) || isinf(v) || v < lo || (v == lo && !lo_inclusive) || v > hi)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a finite number %s %g and at most %g, got %g",
						name, lo_inclusive ? "at least" : "greater than", lo, hi, v)));
}

/* The mechanism argument, checked. */
static DpMechanism *
DpMechArg(FunctionCallInfo fcinfo, int argno)
{
	DpMechanism *mech = (DpMechanism *) PG_GETARG_POINTER(argno);
	char		err[256];

	if (!dp_mechanism_validate(mech, err, sizeof(err)))
		DpReportMechanismError(err);
	return mech;
}

/*
 * A noise form's parameters relative to the sensitivity must stay where the
 * closed forms are accurate in double precision (far beyond any useful noise).
 */
static void
DpCheckNoiseForm(const DpMechanism *mech, double sensitivity)
{
	double		r = sensitivity / mech->p[0];

	if (mech->form != DP_FORM_NOISE)
		return;
	if (!(r >= 1e-12 && r <= 1e12) ||
		(mech->family == DP_MECH_OSGT && !(mech->p[1] <= 1e12 * mech->p[0])))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("noise parameters out of the supported range for this sensitivity"),
				 errdetail("sensitivity / noise scale must be between 1e-12 and 1e12, and m / sigma at most 1e12.")));
}

/* Return v, or ERROR if it could not be computed. */
static double
DpCheckResult(double v)
{
	if (isnan(v))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("the result is not representable for these parameters")));
	return v;
}

/* Plan the noise of a privacy form at a real sensitivity, or ERROR. */
static void
DpPlanForInspection(DpNoisePlan *plan, const DpMechanism *mech, double sensitivity)
{
	char		err[256];

	DpCheckArg("sensitivity", sensitivity, 0.0, false, 1e15);
	if (!dp_noise_plan_real(plan, mech, sensitivity, err, sizeof(err)))
		DpReportMechanismError(err);
}

/* dp_pg.calibrate(mech, sensitivity) -> (family, scale, sigma, m, variance). */
Datum
dp_inspect_calibrate(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = DpMechArg(fcinfo, 0);
	double		sensitivity = PG_GETARG_FLOAT8(1);
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false, true, true, true, false};
	double		scale = 0,
				sigma = 0,
				m = 0,
				variance;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	DpCheckArg("sensitivity", sensitivity, 0.0, false, 1e15);

	if (mech->form == DP_FORM_NOISE)
	{
		if (mech->family == DP_MECH_LAPLACE)
			scale = mech->p[0];
		else
			sigma = mech->p[0];
		if (mech->family == DP_MECH_OSGT)
			m = mech->p[1];
		variance = dp_noise_form_variance(mech);
	}
	else
	{
		DpNoisePlan plan;

		DpPlanForInspection(&plan, mech, sensitivity);
		scale = plan.scale;
		sigma = plan.sigma;
		m = plan.m;
		variance = plan.variance;
	}
	values[0] = CStringGetTextDatum(dp_mechanism_family_name(mech->family));
	if (mech->family == DP_MECH_LAPLACE)
	{
		nulls[1] = false;
		values[1] = Float8GetDatum(scale);
	}
	else
	{
		nulls[2] = false;
		values[2] = Float8GetDatum(sigma);
	}
	if (mech->family == DP_MECH_OSGT)
	{
		nulls[3] = false;
		values[3] = Float8GetDatum(m);
	}
	values[4] = Float8GetDatum(variance);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* dp_pg.privacy_delta(mech, sensitivity, epsilon): the exact delta(epsilon). */
Datum
dp_inspect_privacy_delta(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = DpMechArg(fcinfo, 0);
	double		sensitivity = PG_GETARG_FLOAT8(1);
	double		eps = PG_GETARG_FLOAT8(2);

	DpCheckArg("sensitivity", sensitivity, 0.0, false, 1e15);
	DpCheckArg("epsilon", eps, 0.0, true, 1000.0);
	DpCheckNoiseForm(mech, sensitivity);
	if (mech->form == DP_FORM_NOISE)
		PG_RETURN_FLOAT8(DpCheckResult(dp_noise_form_delta(mech, sensitivity, eps)));
	else
	{
		DpNoisePlan plan;

		DpPlanForInspection(&plan, mech, sensitivity);
		PG_RETURN_FLOAT8(DpCheckResult(dp_noise_plan_delta(&plan, eps)));
	}
}

/* dp_pg.privacy_epsilon(mech, sensitivity, delta): the smallest epsilon at delta. */
Datum
dp_inspect_privacy_epsilon(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = DpMechArg(fcinfo, 0);
	double		sensitivity = PG_GETARG_FLOAT8(1);
	double		delta = PG_GETARG_FLOAT8(2);

	DpCheckArg("sensitivity", sensitivity, 0.0, false, 1e15);
	if (isnan(delta) || !(delta > 0.0 && delta < 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta must be a number greater than 0 and less than 1, got %g", delta)));
	DpCheckNoiseForm(mech, sensitivity);
	if (mech->form == DP_FORM_NOISE)
		PG_RETURN_FLOAT8(DpCheckResult(dp_noise_form_epsilon(mech, sensitivity, delta)));
	else
	{
		DpNoisePlan plan;

		DpPlanForInspection(&plan, mech, sensitivity);
		PG_RETURN_FLOAT8(DpCheckResult(dp_noise_plan_epsilon(&plan, delta)));
	}
}

/* dp_pg.renyi(mech, sensitivity, alpha): the Rényi divergence of order alpha. */
Datum
dp_inspect_renyi(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = DpMechArg(fcinfo, 0);
	double		sensitivity = PG_GETARG_FLOAT8(1);
	double		alpha = PG_GETARG_FLOAT8(2);

	DpCheckArg("sensitivity", sensitivity, 0.0, false, 1e15);
	DpCheckArg("alpha", alpha, 1.0, false, 1e6);
	DpCheckNoiseForm(mech, sensitivity);
	if (mech->form == DP_FORM_NOISE)
		PG_RETURN_FLOAT8(DpCheckResult(dp_noise_form_rdp(mech, sensitivity, alpha)));
	else
	{
		DpNoisePlan plan;

		DpPlanForInspection(&plan, mech, sensitivity);
		PG_RETURN_FLOAT8(DpCheckResult(dp_noise_plan_rdp(&plan, alpha)));
	}
}

/* dp_pg.zcdp_epsilon(rho, delta): epsilon of rho-zCDP at delta (Canonne-Kamath-Steinke). */
Datum
dp_inspect_zcdp_epsilon(PG_FUNCTION_ARGS)
{
	double		rho = PG_GETARG_FLOAT8(0);
	double		delta = PG_GETARG_FLOAT8(1);

	DpCheckArg("rho", rho, 0.0, false, 1e4);
	if (isnan(delta) || !(delta > 0.0 && delta < 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta must be a number greater than 0 and less than 1, got %g", delta)));
	PG_RETURN_FLOAT8(dp_zcdp_eps_cks(rho, delta, NULL));
}

/* Variance of the noise of mech at sensitivity (form-aware). */
static double
DpInspectVariance(const DpMechanism *mech, double sensitivity)
{
	DpNoisePlan plan;

	if (mech->form == DP_FORM_NOISE)
		return dp_noise_form_variance(mech);
	DpPlanForInspection(&plan, mech, sensitivity);
	return plan.variance;
}

/* dp_noise_stddev(mech, sensitivity): standard deviation of the noise. */
Datum
dp_noise_stddev(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = DpMechArg(fcinfo, 0);
	double		sensitivity = PG_GETARG_FLOAT8(1);

	DpCheckArg("sensitivity", sensitivity, 0.0, false, 1e15);
	PG_RETURN_FLOAT8(sqrt(DpInspectVariance(mech, sensitivity)));
}

/*
 * dp_confidence_interval(value, mech, sensitivity, level) -> (lower, upper):
 * value -/+ h with P(|noise| <= h) >= level, so the closed interval [lower,
 * upper] covers the true answer with probability at least level (the open
 * one need not: integer noise puts weight on +-h itself).
 */
Datum
dp_confidence_interval(PG_FUNCTION_ARGS)
{
	double		value = PG_GETARG_FLOAT8(0);
	DpMechanism *mech = DpMechArg(fcinfo, 1);
	double		sensitivity = PG_GETARG_FLOAT8(2);
	double		level = PG_GETARG_FLOAT8(3);
	double		h;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (isnan(value) || isinf(value))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value must be finite, got %g", value)));
	DpCheckArg("sensitivity", sensitivity, 0.0, false, 1e15);
	if (isnan(level) || !(level > 0.0 && level < 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("level must be a number greater than 0 and less than 1, got %g", level)));
	if (mech->form == DP_FORM_NOISE)
		h = dp_noise_form_halfwidth(mech, level);
	else
	{
		DpNoisePlan plan;

		DpPlanForInspection(&plan, mech, sensitivity);
		h = dp_noise_plan_halfwidth(&plan, level);
	}
	values[0] = Float8GetDatum(value - h);
	values[1] = Float8GetDatum(value + h);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* ERROR 22023 unless epsilon and k are those of a randomized response. */
static void
DpCheckRR(double epsilon, int32 k)
{
	DpRR		rr;
	char		err[256];

	if (!dp_rr_prepare(&rr, epsilon, k, err, sizeof(err)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", err)));
}

PG_FUNCTION_INFO_V1(dp_rr_estimate_sql);
PG_FUNCTION_INFO_V1(dp_rr_halfwidth_sql);

/* dp_pg.rr_estimate(reported, n, epsilon, k): ((e^eps + k - 1) reported - n)/(e^eps - 1). */
Datum
dp_rr_estimate_sql(PG_FUNCTION_ARGS)
{
	double		reported = PG_GETARG_FLOAT8(0);
	double		n = PG_GETARG_FLOAT8(1);

	DpCheckRR(PG_GETARG_FLOAT8(2), PG_GETARG_INT32(3));
	DpCheckArg("n", n, 0.0, true, 1e18);
	DpCheckArg("reported", reported, -1e18, true, 1e18);
	PG_RETURN_FLOAT8(dp_rr_estimate(reported, n, PG_GETARG_FLOAT8(2), PG_GETARG_INT32(3)));
}

/* dp_pg.rr_halfwidth(n, epsilon, beta, k): scale sqrt(n ln(2/beta)/2) (seed 002's bound). */
Datum
dp_rr_halfwidth_sql(PG_FUNCTION_ARGS)
{
	double		n = PG_GETARG_FLOAT8(0);
	double		beta = PG_GETARG_FLOAT8(2);

	DpCheckRR(PG_GETARG_FLOAT8(1), PG_GETARG_INT32(3));
	DpCheckArg("n", n, 0.0, true, 1e18);
	if (isnan(beta) || !(beta > 0.0 && beta < 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("beta must be a number greater than 0 and less than 1, got %g", beta)));
	PG_RETURN_FLOAT8(dp_rr_halfwidth(n, PG_GETARG_FLOAT8(1), PG_GETARG_INT32(3), beta));
}

PG_FUNCTION_INFO_V1(dp_groupwise_divergence_sql);
PG_FUNCTION_INFO_V1(dp_groupwise_rho_sql);

/* The orders of dp_pg.groupwise_rho: the ledger's grid up to 64. */
static const double groupwise_alphas[] = {1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64};

/* A groupwise mechanism's plan for a count (sensitivity 1) and a group size, checked. */
static void
DpGroupwiseArgs(FunctionCallInfo fcinfo, DpNoisePlan *plan, int64 *x)
{
	DpMechanism *mech = DpMechArg(fcinfo, 0);
	char		err[256];

	if (!dp_mechanism_is_groupwise(mech))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the per-group guarantee is that of groupwise(rho=.., r=..), not %s",
						dp_mechanism_family_name(mech->family))));
	if (!dp_noise_plan(plan, mech, 1, 1, 0, err, sizeof(err)))
		DpReportMechanismError(err);
	*x = PG_GETARG_INT64(1);
	if (*x < 0 || *x > 1000000000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("group_size must be between 0 and 1000000000, got " INT64_FORMAT, *x)));
}

/* ERROR 54000 for a computation beyond its work bound. */
static void
DpGroupwiseTooLarge(int64 x)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("the per-group divergence of a group of " INT64_FORMAT " rows is too costly to sum at these parameters", x),
			 errhint("For large groups it approaches alpha / (2 r^2 x^2): ask for fewer orders, a smaller group, or a larger rho.")));
}

/*
 * dp_pg.groupwise_divergence(mech, group_size, alpha): the largest Rényi
 * divergence of order alpha between the release of a count of group_size
 * rows and of group_size +- 1 (both directions), computed numerically from
 * the exact pmfs (core/groupwise.c).  Public inputs only: free.
 */
Datum
dp_groupwise_divergence_sql(PG_FUNCTION_ARGS)
{
	DpNoisePlan plan;
	int64		x;
	double		alpha = PG_GETARG_FLOAT8(2);
	double		d;

	DpGroupwiseArgs(fcinfo, &plan, &x);
	DpCheckArg("alpha", alpha, 1.0, false, 256.0);
	d = dp_groupwise_divergence_worst(plan.sigma2, &plan.gw, x, alpha);
	if (isnan(d))
		DpGroupwiseTooLarge(x);
	PG_RETURN_FLOAT8(d);
}

/*
 * dp_pg.groupwise_rho(mech, group_size): the per-group zCDP parameter of a
 * group of group_size rows on the orders 1.25 .. 64 of the ledger's grid,
 * max_alpha D_alpha / alpha (at most the mechanism's rho, by post-processing).
 */
Datum
dp_groupwise_rho_sql(PG_FUNCTION_ARGS)
{
	DpNoisePlan plan;
	int64		x;
	int			n = lengthof(groupwise_alphas);
	double		d[lengthof(groupwise_alphas)];
	double		rho = 0.0;

	DpGroupwiseArgs(fcinfo, &plan, &x);
	if (!dp_groupwise_divergences_worst(plan.sigma2, &plan.gw, x, groupwise_alphas, n, d))
		DpGroupwiseTooLarge(x);
	for (int i = 0; i < n; i++)
		rho = Max(rho, d[i] / groupwise_alphas[i]);
	PG_RETURN_FLOAT8(rho);
}
