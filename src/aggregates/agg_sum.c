/*
 * agg_sum.c — dp_sum(x, lower, upper, mech) and dp_avg(x, lower, upper, mech).
 *
 * Every value is clamped to [lower, upper] (NULLs, and NaNs of float8 and
 * numeric, are skipped; +-Infinity clamps to the bounds), so one row moves
 * the sum by at most max(|lower|, |upper|): the sum's sensitivity, planned
 * once per query from the constant bounds (cost.c calls the plan functions
 * below at ExecutorStart; rows never influence it).
 *
 * Exact accumulation, never a floating-point running sum:
 *   int2, int4   int8 state (pass by value), + checked for overflow: ERROR;
 *   int8         int128 state;
 *   float8       each clamped value rounded to units 2^(e-62), where
 *                2^e >= max(|lower|, |upper|), and summed in int128
 *                (fixedsum.h: the rounding is monotone, so one row moves
 *                the sum by at most R = ceil(bound 2^(62-e)) units);
 *   numeric      PostgreSQL's own exact numeric accumulator (the state of
 *                sum(numeric), with its combine/serialize/deserialize).
 * The release rounds the exact sum to the power-of-two lattice chosen by
 * fixedsum.c (integers keep the integer lattice when the noise allows) and
 * adds one draw of integer lattice noise; the output is that lattice point,
 * so the set of possible outputs does not depend on the data.  An output
 * that does not fit its type (bigint, float8) is ERROR 22003, never a wrap.
 *
 * dp_avg releases (centred sum, count) and returns
 *     center + noisy centred sum / max(noisy count, 1), clamped to [lower, upper]
 * with center = (lower + upper)/2, so each row moves the centred sum by at
 * most (upper - lower)/2.  The mechanism's budget is split evenly between
 * the two releases: laplace(epsilon=E) -> E/2 each; gaussian/osgt(E, D) ->
 * (E/2, D/2) each (basic composition); gaussian(rho=R) -> R/2 each (zCDP
 * composition).  The charged cost is the composition of both (their rho
 * and Rényi curves add).  For values symmetric about the center the
 * estimator is unbiased.
 *
 * Layer aggregates/ (docs/development.md): may call the release path
 * (call sites, cache), the ledger, common/ and the numeric core.
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "aggregates.h"
#include "agg_state.h"
#include "release.h"
#include "fixedsum.h"
#include "interval.h"

PG_FUNCTION_INFO_V1(dp_sum_int2_trans);
PG_FUNCTION_INFO_V1(dp_sum_int4_trans);
PG_FUNCTION_INFO_V1(dp_sum_int_final);
PG_FUNCTION_INFO_V1(dp_sum_int8_trans);
PG_FUNCTION_INFO_V1(dp_sum_int8_final);
PG_FUNCTION_INFO_V1(dp_sum_float8_trans);
PG_FUNCTION_INFO_V1(dp_sum_float8_final);
PG_FUNCTION_INFO_V1(dp_sum_numeric_trans);
PG_FUNCTION_INFO_V1(dp_sum_numeric_final);
PG_FUNCTION_INFO_V1(dp_avg_trans);
PG_FUNCTION_INFO_V1(dp_avg_final);
PG_FUNCTION_INFO_V1(dp_sum_int_default_final);
PG_FUNCTION_INFO_V1(dp_sum_int8_default_final);
PG_FUNCTION_INFO_V1(dp_sum_float8_default_final);
PG_FUNCTION_INFO_V1(dp_sum_numeric_default_final);
PG_FUNCTION_INFO_V1(dp_avg_default_final);
PG_FUNCTION_INFO_V1(dp_sum_fixed_combine);
PG_FUNCTION_INFO_V1(dp_sum_fixed_serialize);
PG_FUNCTION_INFO_V1(dp_sum_int8_deserialize);
PG_FUNCTION_INFO_V1(dp_sum_float8_deserialize);
PG_FUNCTION_INFO_V1(dp_avg_deserialize);

/* Largest bound magnitude of a float8 / numeric sum. */
#define DP_SUM_MAX_BOUND 1e300

/* Serialized DpSumState: header, unit_exp, count, sum, center. */
#define DP_SUM_STATE_LEN (DP_STATE_HEADER_LEN + 4 + 8 + 16 + 8)

/*
 * Partial state of dp_sum(int8), dp_sum(float8) and dp_avg: an exact integer
 * sum of units 2^unit_exp and the number of values added.
 */
typedef struct DpSumState
{
	int128		sum;
	int64		count;
	DpStateKind kind;
	int32		unit_exp;		/* 0 for int8 */
	double		to_units;		/* 2^-unit_exp (float8, avg) */
	double		center;			/* avg: subtracted from every clamped value */
} DpSumState;

/* Float8 bounds of a call, and the fixed-point units derived from them. */
typedef struct DpFloatBounds
{
	double		lower;
	double		upper;
	double		center;			/* 0 unless centred (dp_avg) */
	int			unit_exp;
	double		to_units;
	uint64		row_bound;		/* largest |value - center| in units */
} DpFloatBounds;

/* Per-query data of a dp_sum / dp_avg call site (DpCallSite.extra). */
typedef struct DpSumSite
{
	DpFixedSum	fs;				/* the sum's release */
	DpNoisePlan count;			/* dp_avg: the count's release */
	DpFloatBounds fb;			/* float8 / avg bounds */
	Numeric		lattice;		/* numeric: 2^k */
	Numeric		inv_lattice;	/* numeric: 2^-k */
	int			dscale;			/* numeric: decimals shown */
	double	   *qgrid;			/* dp_avg: q at |m| = w i / DP_AVG_GRID (interval.c), computed on first use */
} DpSumSite;

/* Points of dp_avg's grid of |m| in [0, w] (the released mean is rounded up to one). */
#define DP_AVG_GRID 32

/*
 * Bounds checks (shared by planning and state creation)
 */

/* ERROR 22004 for null bounds. */
static void
DpCheckBoundsNotNull(const char *aggname, bool lower_null, bool upper_null)
{
	if (lower_null || upper_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the bounds of %s must not be null", aggname)));
}

/* ERROR 22023 unless lower <= upper are finite float8 within +-1e300. */
static void
DpCheckFloatBounds(const char *aggname, double lower, double upper)
{
	if (isnan(lower) || isnan(upper) || isinf(lower) || isinf(upper))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bounds of %s must be finite numbers", aggname),
				 errdetail("lower = %s, upper = %s", float8out_internal(lower), float8out_internal(upper))));
	if (lower > upper)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the lower bound of %s must not be greater than its upper bound", aggname),
				 errdetail("lower = %s, upper = %s", float8out_internal(lower), float8out_internal(upper))));
	if (fabs(lower) > DP_SUM_MAX_BOUND || fabs(upper) > DP_SUM_MAX_BOUND)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bounds of %s must be at most 1e300 in absolute value", aggname),
				 errdetail("lower = %s, upper = %s", float8out_internal(lower), float8out_internal(upper))));
}

/* ERROR 22023 unless lower <= upper. */
static void
DpCheckIntBounds(const char *aggname, int64 lower, int64 upper)
{
	if (lower > upper)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the lower bound of %s must not be greater than its upper bound", aggname),
				 errdetail("lower = " INT64_FORMAT ", upper = " INT64_FORMAT, lower, upper)));
}

/*
 * The fixed-point units of float8 values clamped to [lower, upper] (minus
 * center when centred).  fl(x - c) is monotone in x, so every clamped value
 * lies within [fl(lower - c), fl(upper - c)]: that bounds its units.
 */
static void
DpFloatBoundsMake(const char *aggname, double lower, double upper, bool centred,
				  int64 rows, DpFloatBounds *fb)
{
	double		h;

	DpCheckFloatBounds(aggname, lower, upper);
	fb->lower = lower;
	fb->upper = upper;
	fb->center = centred ? lower / 2.0 + upper / 2.0 : 0.0;
	h = Max(fabs(lower - fb->center), fabs(upper - fb->center));
	/* units coarse enough for rows values of one unit (rows = 1 but for a privacy unit's cell) */
	if (!isfinite(h * (double) rows))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bounds of %s are too wide for max_rows_per_unit " INT64_FORMAT, aggname, rows)));
	fb->unit_exp = dp_fixedsum_float_unit(h * (double) rows);
	fb->to_units = ldexp(1.0, -fb->unit_exp);
	fb->row_bound = dp_fixedsum_float_bound(h, fb->unit_exp);
}

/* |v| of an int64 as uint64 (2^63 for INT64_MIN). */
static uint64
DpAbsInt64(int64 v)
{
	return v < 0 ? (uint64) (-(v + 1)) + 1 : (uint64) v;
}

/* Attach a new, empty DpSumSite to a call site (query memory). */
static DpSumSite *
DpSumSiteNew(DpCallSite *site)
{
	DpSumSite  *ex = palloc0(sizeof(DpSumSite));

	site->extra = ex;
	return ex;
}

/*
 * Planning (ExecutorStart, once per call site and query)
 */

/* Plan dp_sum of int2/int4/int8: sensitivity max(|lower|, |upper|). */
static void
DpSumIntegerPlan(DpCallSite *site, Datum *values, bool *isnull)
{
	DpSumSite  *ex = DpSumSiteNew(site);
	Oid			type = site->aggref->aggargtypes ? linitial_oid(site->aggref->aggargtypes) : INT8OID;
	int64		lower,
				upper;
	char		err[256];

	DpCheckBoundsNotNull(site->kind->name, isnull[0], isnull[1]);
	switch (type)
	{
		case INT2OID:
			lower = DatumGetInt16(values[0]);
			upper = DatumGetInt16(values[1]);
			break;
		case INT4OID:
			lower = DatumGetInt32(values[0]);
			upper = DatumGetInt32(values[1]);
			break;
		default:
			lower = DatumGetInt64(values[0]);
			upper = DatumGetInt64(values[1]);
			break;
	}
	DpCheckIntBounds(site->kind->name, lower, upper);
	if (!dp_fixedsum_plan_units(&ex->fs, &site->mech,
								Max(DpAbsInt64(lower), DpAbsInt64(upper)), 0, 0,
								err, sizeof(err)))
		DpReportMechanismError(err);
	site->plan = ex->fs.noise;
}

/* Plan dp_sum(float8): units from the bounds, lattice from the noise. */
static void
DpSumFloat8Plan(DpCallSite *site, Datum *values, bool *isnull)
{
	DpSumSite  *ex = DpSumSiteNew(site);
	char		err[256];

	DpCheckBoundsNotNull(site->kind->name, isnull[0], isnull[1]);
	DpFloatBoundsMake(site->kind->name, DatumGetFloat8(values[0]), DatumGetFloat8(values[1]),
					  false, 1, &ex->fb);
	if (!dp_fixedsum_plan_units(&ex->fs, &site->mech, ex->fb.row_bound, ex->fb.unit_exp,
								INT_MIN, err, sizeof(err)))
		DpReportMechanismError(err);
	site->plan = ex->fs.noise;
}

/* The exact numeric 2^k (|k| small enough for numeric's scale). */
static Numeric
DpNumericPow2(int k)
{
	Numeric		base = k >= 0 ? int64_to_numeric(2) : int64_div_fast_to_numeric(5, 1);
	Numeric		result = int64_to_numeric(1);
	unsigned	n = (unsigned) abs(k);

	while (n > 0)
	{
		if (n & 1)
			result = DatumGetNumeric(DirectFunctionCall2(numeric_mul, NumericGetDatum(result),
														 NumericGetDatum(base)));
		n >>= 1;
		if (n > 0)
			base = DatumGetNumeric(DirectFunctionCall2(numeric_mul, NumericGetDatum(base),
													   NumericGetDatum(base)));
	}
	return result;
}

/* numeric comparison a <=> b. */
static int
DpNumericCmp(Datum a, Datum b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, a, b));
}

/* Plan dp_sum(numeric): exact numeric sum, rounded to a lattice at release. */
static void
DpSumNumericPlan(DpCallSite *site, Datum *values, bool *isnull)
{
	DpSumSite  *ex = DpSumSiteNew(site);
	const char *name = site->kind->name;
	Numeric		lower,
				upper;
	Datum		h;
	double		hd;
	int			k;
	char		err[256];

	DpCheckBoundsNotNull(name, isnull[0], isnull[1]);
	lower = DatumGetNumeric(values[0]);
	upper = DatumGetNumeric(values[1]);
	if (numeric_is_nan(lower) || numeric_is_nan(upper) ||
		numeric_is_inf(lower) || numeric_is_inf(upper))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bounds of %s must be finite numbers", name),
				 errdetail("lower = %s, upper = %s",
						   DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(lower))),
						   DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(upper))))));
	if (DpNumericCmp(NumericGetDatum(lower), NumericGetDatum(upper)) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the lower bound of %s must not be greater than its upper bound", name),
				 errdetail("lower = %s, upper = %s",
						   DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(lower))),
						   DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(upper))))));
	h = DirectFunctionCall2(numeric_larger,
							DirectFunctionCall1(numeric_abs, NumericGetDatum(lower)),
							DirectFunctionCall1(numeric_abs, NumericGetDatum(upper)));
	if (DpNumericCmp(h, DirectFunctionCall1(float8_numeric, Float8GetDatum(DP_SUM_MAX_BOUND))) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bounds of %s must be at most 1e300 in absolute value", name)));
	/* an upper bound on h as a double (never below it), at least 1e-290 */
	hd = nextafter(DatumGetFloat8(DirectFunctionCall1(numeric_float8, h)), INFINITY);
	if (hd < 1e-290)
		hd = 1e-290;
	if (!dp_fixedsum_plan_real(&ex->fs, &site->mech, hd, err, sizeof(err)))
		DpReportMechanismError(err);
	k = ex->fs.unit_exp;
	ex->lattice = DpNumericPow2(k);
	ex->inv_lattice = DpNumericPow2(-k);
	/* show the decimals of the lattice step (10^-dscale <= 2^k) */
	ex->dscale = k < 0 ? (int) ceil(-k * log10(2.0)) : 0;
	site->plan = ex->fs.noise;
}

/*
 * Plan dp_avg: the budget split in half between the centred sum and the
 * count; site->plan is the sum's noise carrying the composed cost.
 */
static void
DpAvgPlan(DpCallSite *site, Datum *values, bool *isnull)
{
	DpSumSite  *ex = DpSumSiteNew(site);
	DpMechanism half = DpSplitMechanism(&site->mech, 2);	/* see the file header */
	DpNoisePlan *p = &site->plan;
	char		err[256];

	DpCheckBoundsNotNull(site->kind->name, isnull[0], isnull[1]);
	DpFloatBoundsMake(site->kind->name, DatumGetFloat8(values[0]), DatumGetFloat8(values[1]),
					  true, site->unit_rows, &ex->fb);
	/* the bounded form: a unit adds at most unit_rows rows' worth to a cell */
	if (ex->fb.row_bound > (uint64) (INT64_MAX / site->unit_rows))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bounds of dp_avg are too wide for max_rows_per_unit " INT64_FORMAT, site->unit_rows)));
	if (!dp_fixedsum_plan_units(&ex->fs, &half, ex->fb.row_bound * (uint64) site->unit_rows, ex->fb.unit_exp,
								INT_MIN, err, sizeof(err)))
		DpReportMechanismError(err);
	if (!dp_noise_plan(&ex->count, &half, site->unit_rows, site->unit_rows, 0, err, sizeof(err)))
		DpReportMechanismError(err);

	/* the charge: both releases composed (rounded up, accountant.c) */
	{
		DpCost		total;
		DpCost		count;

		dp_noise_plan_cost(&ex->fs.noise, &total);
		dp_noise_plan_cost(&ex->count, &count);
		dp_cost_add(&total, &count);
		*p = ex->fs.noise;
		p->mech = site->mech;
		p->epsilon = total.epsilon;
		p->delta = total.delta;
		p->rho = total.rho;
		memcpy(p->rdp, total.rdp, sizeof(p->rdp));
	}
}

/* What a sum's interval covers (DpAggKind.bar). */
static void
DpSumBar(const DpCallSite *site, DpSiteBar *bar)
{
	strlcpy(bar->note, "[answer - h, answer + h] (closed, h = ci95_halfwidth) holds the sum of the values "
			"clamped to the bounds with probability 0.95 or more: the noise alone.  Not in it: how far "
			"values outside the bounds were moved to them.", sizeof(bar->note));
}

/*
 * An average's interval is its own per released value (dp_avg_final): the
 * level-quantile q of |Z_sum - m Z_count| over the noisy count, m the
 * released centred mean (DpAvgNoteInterval, interval.c).  Without the
 * values: the formula.
 */
static void
DpAvgBar(const DpCallSite *site, DpSiteBar *bar)
{
	DpSumSite  *ex = site->extra;
	double		w = ex->fb.upper / 2.0 - ex->fb.lower / 2.0;
	double		q0 = dp_interval_combo_quantile(&ex->fs.noise, &ex->count, 0.0, 0.95);
	double		qw = dp_interval_combo_quantile(&ex->fs.noise, &ex->count, w, 0.95);

	bar->sd = NAN;
	bar->h95 = NAN;
	bar->per_value = true;
	snprintf(bar->note, sizeof(bar->note),
			 "Per group (a row per released value): [ci95_lower, ci95_upper] is answer +- q / noisy count, q the 95%% "
			 "quantile of |Z_sum - m Z_count| (%.6g at m = 0 to %.6g at |m| = %.6g) at the released centred mean m: "
			 "about 95%% coverage (exact at the true m).  Not in it: values moved to the bounds.",
			 q0, qw, w);
}

/* The half-width at level of an average of at least rows values (accuracy first: DpAggKind.halfwidth). */
static double
DpAvgHalfwidth(const DpCallSite *site, double level, int64 rows)
{
	DpSumSite  *ex = site->extra;
	double		w = ex->fb.upper / 2.0 - ex->fb.lower / 2.0;
	double		h = dp_interval_ratio_halfwidth(&ex->fs.noise, &ex->count, w, (double) rows, level);

	/* the lattice steps the exact values are rounded to (see DpAvgNoteInterval) */
	return h + ldexp(1.0, ex->fs.unit_exp + ex->fs.shift) / Max((double) rows, 1.0) + ldexp(1.0, ex->fb.unit_exp);
}

const DpAggKind dp_sum_int_kind = {
	.name = "dp_sum",
	.finalfn = dp_sum_int_final,
	.nargs = 4,
	.mech_argno = 3,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpSumIntegerPlan,
	.bar = DpSumBar,
	.accuracy = true,
};

const DpAggKind dp_sum_int8_kind = {
	.name = "dp_sum",
	.finalfn = dp_sum_int8_final,
	.nargs = 4,
	.bounded_extra = 1,
	.mech_argno = 3,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpSumIntegerPlan,
	.bar = DpSumBar,
	.accuracy = true,
};

const DpAggKind dp_sum_float8_kind = {
	.name = "dp_sum",
	.finalfn = dp_sum_float8_final,
	.nargs = 4,
	.bounded_extra = 1,
	.mech_argno = 3,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpSumFloat8Plan,
	.bar = DpSumBar,
	.accuracy = true,
};

const DpAggKind dp_sum_numeric_kind = {
	.name = "dp_sum",
	.finalfn = dp_sum_numeric_final,
	.nargs = 4,
	.bounded_extra = 1,
	.mech_argno = 3,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpSumNumericPlan,
	.bar = DpSumBar,
	.accuracy = true,
};

const DpAggKind dp_avg_kind = {
	.name = "dp_avg",
	.finalfn = dp_avg_final,
	.nargs = 4,
	.bounded_extra = 3,
	.mech_argno = 3,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpAvgPlan,
	.bar = DpAvgBar,
	.accuracy = true,
	.halfwidth = DpAvgHalfwidth,
};

/*
 * dp_sum(x, lower, upper) and dp_avg(x, lower, upper): the mechanism is
 * dp_pg.default_mechanism (the transition functions are the same; only the
 * final functions differ, so that each form is its own kind).
 */
const DpAggKind dp_sum_int_default_kind = {
	.name = "dp_sum",
	.finalfn = dp_sum_int_default_final,
	.nargs = 3,
	.mech_argno = -1,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpSumIntegerPlan,
	.bar = DpSumBar,
};

const DpAggKind dp_sum_int8_default_kind = {
	.name = "dp_sum",
	.finalfn = dp_sum_int8_default_final,
	.nargs = 3,
	.mech_argno = -1,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpSumIntegerPlan,
	.bar = DpSumBar,
};

const DpAggKind dp_sum_float8_default_kind = {
	.name = "dp_sum",
	.finalfn = dp_sum_float8_default_final,
	.nargs = 3,
	.mech_argno = -1,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpSumFloat8Plan,
	.bar = DpSumBar,
};

const DpAggKind dp_sum_numeric_default_kind = {
	.name = "dp_sum",
	.finalfn = dp_sum_numeric_default_final,
	.nargs = 3,
	.mech_argno = -1,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpSumNumericPlan,
	.bar = DpSumBar,
};

const DpAggKind dp_avg_default_kind = {
	.name = "dp_avg",
	.finalfn = dp_avg_default_final,
	.nargs = 3,
	.mech_argno = -1,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpAvgPlan,
	.bar = DpAvgBar,
};

/*
 * Releases (final functions)
 */

/* One draw of a plan's integer noise. */
static int64
DpDraw(const DpNoisePlan *plan)
{
	return dp_sampler_draw(&plan->sampler, DpBackendRng());
}

/* The exact sum (units) rounded to the lattice, plus one draw of noise (lattice units). */
static int128
DpNoisyLatticeSum(const DpFixedSum *fs, int128 sum)
{
	return dp_fixedsum_round(fs, sum) + (int128) DpDraw(&fs->noise);
}

/*
 * The noisy integer sum as a bigint; beyond bigint's range, its extreme of
 * that sign (a function of the released value only; never an error, so
 * that a release cannot fail after its charge).
 */
static int64
DpReleaseBigint(const DpFixedSum *fs, int128 sum)
{
	int128		y = DpNoisyLatticeSum(fs, sum);
	int			k = fs->unit_exp + fs->shift;

	if (k > 0)
	{
		if (k > 62 || y > (PG_INT64_MAX >> k) || y < (PG_INT64_MIN >> k))
			return y > 0 ? PG_INT64_MAX : y < 0 ? PG_INT64_MIN : 0;
		y *= ((int128) 1) << k;
	}
	if (y > PG_INT64_MAX)
		return PG_INT64_MAX;
	if (y < PG_INT64_MIN)
		return PG_INT64_MIN;
	return (int64) y;
}

/* The noisy fixed-point sum as a float8 (the lattice point, rounded to double; beyond a double +-DBL_MAX). */
static double
DpReleaseFloat8(const DpFixedSum *fs, int128 sum)
{
	int128		y = DpNoisyLatticeSum(fs, sum);
	double		r = ldexp((double) y, fs->unit_exp + fs->shift);

	if (isinf(r))
		r = r > 0 ? DBL_MAX : -DBL_MAX;
	return r;
}

/* ERROR unless a partial state matches its call site's plan. */
static void
DpCheckStateMatchesPlan(const DpSumState *state, DpStateKind kind, int unit_exp, double center,
						const char *aggname)
{
	if (state->kind != kind || state->unit_exp != unit_exp ||
		memcmp(&state->center, &center, sizeof(double)) != 0)
		DpStateCorrupt(aggname, "The state was built with other bounds than the query planned.");
}

/* Final function of dp_sum(int2/int4): int8 state. */
/* The noisy release of an int8 sum state (dp_sum(bigint) and the bounded dp_count). */
static int64
DpReleaseInt8Sum(FunctionCallInfo fcinfo, DpCallSite *site)
{
	DpSumSite  *ex = site->extra;
	DpSumState *state = PG_ARGISNULL(0) ? NULL : (DpSumState *) PG_GETARG_POINTER(0);

	if (state != NULL)
		DpCheckStateMatchesPlan(state, DP_STATE_SUM_INT8, 0, 0.0, site->kind->name);
	return DpReleaseBigint(&ex->fs, state ? state->sum : 0);
}

static Datum
DpSumIntFinal(FunctionCallInfo fcinfo, const DpAggKind *kind)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, kind);
	DpSumSite  *ex = site->extra;
	int64		sum = PG_ARGISNULL(0) ? 0 : PG_GETARG_INT64(0);

	PG_RETURN_INT64(DpReleaseBigint(&ex->fs, (int128) sum));
}

Datum
dp_sum_int_final(PG_FUNCTION_ARGS)
{
	return DpSumIntFinal(fcinfo, &dp_sum_int_kind);
}

Datum
dp_sum_int_default_final(PG_FUNCTION_ARGS)
{
	return DpSumIntFinal(fcinfo, &dp_sum_int_default_kind);
}

/* Final function of dp_sum(int8): int128 state. */
Datum
dp_sum_int8_final(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(DpReleaseInt8Sum(fcinfo, DpCallSiteForFinal(fcinfo, &dp_sum_int8_kind)));
}

Datum
dp_sum_int8_default_final(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(DpReleaseInt8Sum(fcinfo, DpCallSiteForFinal(fcinfo, &dp_sum_int8_default_kind)));
}

/*
 * dp_pg.bounded_count(contribution, 0, r, mech, groups): a dp_count on a
 * table with a privacy unit (guard.c), an int8 dp_sum of the units'
 * contributions least(rows, r) in [0, r]; its own final function only so
 * that the ledger and messages call it dp_count.
 */
PG_FUNCTION_INFO_V1(dp_bounded_count_final);

const DpAggKind dp_bounded_count_kind = {
	.name = "dp_count",
	.finalfn = dp_bounded_count_final,
	.nargs = 4,
	.bounded_extra = 1,
	.mech_argno = 3,
	.nconst = 2,
	.const_argnos = {1, 2},
	.plan = DpSumIntegerPlan,
	.accuracy = true,
};

Datum
dp_bounded_count_final(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(DpReleaseInt8Sum(fcinfo, DpCallSiteForFinal(fcinfo, &dp_bounded_count_kind)));
}

/* Final function of dp_sum(float8). */
static Datum
DpSumFloat8Final(FunctionCallInfo fcinfo, const DpAggKind *kind)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, kind);
	DpSumSite  *ex = site->extra;
	DpSumState *state = PG_ARGISNULL(0) ? NULL : (DpSumState *) PG_GETARG_POINTER(0);

	if (state != NULL)
		DpCheckStateMatchesPlan(state, DP_STATE_SUM_FLOAT8, ex->fb.unit_exp, 0.0, "dp_sum");
	PG_RETURN_FLOAT8(DpReleaseFloat8(&ex->fs, state ? state->sum : 0));
}

Datum
dp_sum_float8_final(PG_FUNCTION_ARGS)
{
	return DpSumFloat8Final(fcinfo, &dp_sum_float8_kind);
}

Datum
dp_sum_float8_default_final(PG_FUNCTION_ARGS)
{
	return DpSumFloat8Final(fcinfo, &dp_sum_float8_default_kind);
}

/*
 * The 95% interval of a released average (dp_pg.last_releases).  With S and
 * N the exact centred sum and count (N >= 1: an empty group has no average
 * to cover), m = S / N, |m| <= w = (upper - lower) / 2, and the noisy ones
 * S + Z_s, N + Z_n with N + Z_n >= 1, the released average before its clamp
 * is exactly
 *     center + (S + Z_s) / (N + Z_n) = center + m + (Z_s - m Z_n) / (N + Z_n),
 * so it is within q / (N + Z_n) of the truth exactly when
 * |Z_s - m Z_n| <= q.  q is the 95% quantile of |Z_s - m Z_n| computed from
 * the two noises' distributions (interval.c) at the released centred mean,
 * rounded up to the next point of a grid of |m| in [0, w] (q grows with
 * |m|), computed once per call site.  Clamping the answer to [lower, upper],
 * where the truth lies, only brings it nearer.  A noisy count below 1 gives
 * [lower, upper].  q is widened by one release lattice step (the exact sum
 * is rounded to it before the noise) and the result by one fixed-point unit
 * (each value is rounded to one); both are far below the noise.  Computed
 * from released noisy values only: post-processing, free.
 */
static void
DpAvgNoteInterval(const DpCallSite *site, double avg, double sum, int64 count)
{
	DpSumSite  *ex = site->extra;
	double		w = ex->fb.upper / 2.0 - ex->fb.lower / 2.0;
	double		lower = ex->fb.lower;
	double		upper = ex->fb.upper;
	double		n = Max((double) count, 1.0);
	double		sd;

	if (count >= 1)
	{
		double		m = Min(fabs(sum / (double) count), w);
		int			i = w > 0 ? (int) ceil(m / w * DP_AVG_GRID) : 0;
		double		q;
		double		h;

		if (ex->qgrid == NULL)
		{
			ex->qgrid = MemoryContextAllocZero(GetMemoryChunkContext(ex), (DP_AVG_GRID + 1) * sizeof(double));
			for (int j = 0; j <= DP_AVG_GRID; j++)
				ex->qgrid[j] = NAN;
		}
		i = Min(Max(i, 0), DP_AVG_GRID);
		if (isnan(ex->qgrid[i]))
			ex->qgrid[i] = dp_interval_combo_quantile(&ex->fs.noise, &ex->count, w * i / DP_AVG_GRID, 0.95);
		q = ex->qgrid[i] + ldexp(1.0, ex->fs.unit_exp + ex->fs.shift);
		h = q / (double) count + ldexp(1.0, ex->fb.unit_exp);
		lower = Max(lower, avg - h);
		upper = Min(upper, avg + h);
	}
	/* about: the standard deviation of (Z_s - m Z_n) / N at m = the released centred average */
	sd = sqrt(ex->fs.noise.variance + (sum / n) * (sum / n) * ex->count.variance) / n;
	DpBarsNoteValue(site, avg, sd, lower, upper);
}

/* Final function of dp_avg: center + noisy centred sum / max(noisy count, 1), clamped. */
static Datum
DpAvgFinal(FunctionCallInfo fcinfo, const DpAggKind *kind)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, kind);
	DpSumSite  *ex = site->extra;
	DpSumState *state = PG_ARGISNULL(0) ? NULL : (DpSumState *) PG_GETARG_POINTER(0);
	double		sum;
	int64		count;
	double		avg;

	if (state != NULL)
		DpCheckStateMatchesPlan(state, DP_STATE_AVG, ex->fb.unit_exp, ex->fb.center, "dp_avg");
	sum = DpReleaseFloat8(&ex->fs, state ? state->sum : 0);
	if (pg_add_s64_overflow(state ? state->count : 0, DpDraw(&ex->count), &count))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	avg = ex->fb.center + sum / (double) Max(count, 1);
	avg = Min(Max(avg, ex->fb.lower), ex->fb.upper);
	DpAvgNoteInterval(site, avg, sum, count);
	PG_RETURN_FLOAT8(avg);
}

Datum
dp_avg_final(PG_FUNCTION_ARGS)
{
	return DpAvgFinal(fcinfo, &dp_avg_kind);
}

Datum
dp_avg_default_final(PG_FUNCTION_ARGS)
{
	return DpAvgFinal(fcinfo, &dp_avg_default_kind);
}

/* Final function of dp_sum(numeric): round(S / 2^k) + noise, times 2^k. */
static Datum
DpSumNumericFinal(FunctionCallInfo fcinfo, const DpAggKind *kind)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, kind);
	DpSumSite  *ex = site->extra;
	Datum		sum = NumericGetDatum(int64_to_numeric(0));
	Datum		y;

	if (!PG_ARGISNULL(0))
	{
		LOCAL_FCINFO(inner, 1);
		Datum		s;

		InitFunctionCallInfoData(*inner, NULL, 1, InvalidOid, fcinfo->context, NULL);
		inner->args[0] = fcinfo->args[0];
		s = numeric_sum(inner);
		if (!inner->isnull)
			sum = s;
	}
	y = DirectFunctionCall2(numeric_round,
							DirectFunctionCall2(numeric_mul, sum, NumericGetDatum(ex->inv_lattice)),
							Int32GetDatum(0));
	y = DirectFunctionCall2(numeric_add, y, NumericGetDatum(int64_to_numeric(DpDraw(&ex->fs.noise))));
	y = DirectFunctionCall2(numeric_mul, y, NumericGetDatum(ex->lattice));
	PG_RETURN_DATUM(DirectFunctionCall2(numeric_round, y, Int32GetDatum(ex->dscale)));
}

Datum
dp_sum_numeric_final(PG_FUNCTION_ARGS)
{
	return DpSumNumericFinal(fcinfo, &dp_sum_numeric_kind);
}

Datum
dp_sum_numeric_default_final(PG_FUNCTION_ARGS)
{
	return DpSumNumericFinal(fcinfo, &dp_sum_numeric_default_kind);
}

/*
 * Transition functions (exact values only)
 */

/* Clamp v to [lower, upper]. */
static inline int64
DpClampInt64(int64 v, int64 lower, int64 upper)
{
	return v < lower ? lower : (v > upper ? upper : v);
}

/* state + v, or ERROR 22003 (never a wrap). */
static inline int64
DpAddInt64(int64 state, int64 v)
{
	int64		r;

	if (unlikely(pg_add_s64_overflow(state, v, &r)))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	return r;
}

/* Transition of dp_sum(int2): strict, int8 state. */
Datum
dp_sum_int2_trans(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(DpAddInt64(PG_GETARG_INT64(0),
							   DpClampInt64(PG_GETARG_INT16(1), PG_GETARG_INT16(2), PG_GETARG_INT16(3))));
}

/* Transition of dp_sum(int4): strict, int8 state. */
Datum
dp_sum_int4_trans(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(DpAddInt64(PG_GETARG_INT64(0),
							   DpClampInt64(PG_GETARG_INT32(1), PG_GETARG_INT32(2), PG_GETARG_INT32(3))));
}

/* A new, empty fixed-point state in the aggregate context. */
static DpSumState *
DpSumStateNew(MemoryContext aggcxt, DpStateKind kind)
{
	DpSumState *state = MemoryContextAllocZero(aggcxt, sizeof(DpSumState));

	state->kind = kind;
	return state;
}

/* Transition of dp_sum(int8): int128 state. */
Datum
dp_sum_int8_trans(PG_FUNCTION_ARGS)
{
	DpSumState *state;

	if (PG_ARGISNULL(0))
	{
		MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_sum_int8_trans");

		DpCheckBoundsNotNull("dp_sum", PG_ARGISNULL(2), PG_ARGISNULL(3));
		DpCheckIntBounds("dp_sum", PG_GETARG_INT64(2), PG_GETARG_INT64(3));
		state = DpSumStateNew(aggcxt, DP_STATE_SUM_INT8);
	}
	else
		state = (DpSumState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		state->sum += DpClampInt64(PG_GETARG_INT64(1), PG_GETARG_INT64(2), PG_GETARG_INT64(3));
		state->count++;
	}
	PG_RETURN_POINTER(state);
}

/* Create the state of dp_sum(float8) / dp_avg from the call's bounds. */
static DpSumState *
DpFloatSumStateNew(FunctionCallInfo fcinfo, DpStateKind kind, const char *aggname, int64 rows)
{
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, aggname);
	DpFloatBounds fb;
	DpSumState *state;

	DpCheckBoundsNotNull(aggname, PG_ARGISNULL(2), PG_ARGISNULL(3));
	DpFloatBoundsMake(aggname, PG_GETARG_FLOAT8(2), PG_GETARG_FLOAT8(3),
					  kind == DP_STATE_AVG, rows, &fb);
	state = DpSumStateNew(aggcxt, kind);
	state->unit_exp = fb.unit_exp;
	state->to_units = fb.to_units;
	state->center = fb.center;
	return state;
}

/* Transition of dp_sum(float8): clamp, round to units, add exactly. */
Datum
dp_sum_float8_trans(PG_FUNCTION_ARGS)
{
	DpSumState *state = PG_ARGISNULL(0)
		? DpFloatSumStateNew(fcinfo, DP_STATE_SUM_FLOAT8, "dp_sum", 1)
		: (DpSumState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		double		x = PG_GETARG_FLOAT8(1);
		double		lower = PG_GETARG_FLOAT8(2);
		double		upper = PG_GETARG_FLOAT8(3);

		if (likely(!isnan(x)))
		{
			x = x < lower ? lower : (x > upper ? upper : x);
			state->sum += dp_fixedsum_float_to_units(x, state->to_units);
			state->count++;
		}
	}
	PG_RETURN_POINTER(state);
}

/* Transition of dp_avg: clamp, centre, round to units, add exactly; count. */
Datum
dp_avg_trans(PG_FUNCTION_ARGS)
{
	DpSumState *state = PG_ARGISNULL(0)
		? DpFloatSumStateNew(fcinfo, DP_STATE_AVG, "dp_avg", 1)
		: (DpSumState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		double		x = PG_GETARG_FLOAT8(1);
		double		lower = PG_GETARG_FLOAT8(2);
		double		upper = PG_GETARG_FLOAT8(3);

		if (likely(!isnan(x)))
		{
			x = x < lower ? lower : (x > upper ? upper : x);
			state->sum += dp_fixedsum_float_to_units(x - state->center, state->to_units);
			state->count++;
		}
	}
	PG_RETURN_POINTER(state);
}

/*
 * Transition of dp_pg.bounded_avg(mean, lower, upper, mech, weight, rows,
 * groups), the unit-bounded dp_avg (guard.c): one input row is one (unit,
 * cell) whose weight (its row count, capped at rows) counts at the unit's
 * clamped mean, so the unit moves the centred sum by at most rows x the
 * per-row bound and the count by at most rows.
 */
PG_FUNCTION_INFO_V1(dp_avg_wtrans);

Datum
dp_avg_wtrans(PG_FUNCTION_ARGS)
{
	DpSumState *state;

	if (PG_ARGISNULL(6))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the contribution bounds of dp_avg must not be null")));
	state = PG_ARGISNULL(0)
		? DpFloatSumStateNew(fcinfo, DP_STATE_AVG, "dp_avg", PG_GETARG_INT64(6))
		: (DpSumState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1) && !PG_ARGISNULL(5))
	{
		double		x = PG_GETARG_FLOAT8(1);
		double		lower = PG_GETARG_FLOAT8(2);
		double		upper = PG_GETARG_FLOAT8(3);
		int64		w = PG_GETARG_INT64(5);
		int64		rows = PG_GETARG_INT64(6);

		w = Min(w, rows);
		if (likely(!isnan(x)) && w > 0)
		{
			int128		u;

			x = x < lower ? lower : (x > upper ? upper : x);
			u = dp_fixedsum_float_to_units(x - state->center, state->to_units);
			state->sum += u * w;
			if (pg_add_s64_overflow(state->count, w, &state->count))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("bigint out of range")));
		}
	}
	PG_RETURN_POINTER(state);
}

/*
 * Transition of dp_sum(numeric): clamp (NaN skipped, +-Infinity clamped),
 * then PostgreSQL's exact numeric accumulator (the sum(numeric) state).
 */
Datum
dp_sum_numeric_trans(PG_FUNCTION_ARGS)
{
	LOCAL_FCINFO(inner, 2);
	bool		skip = PG_ARGISNULL(1);
	Datum		x = (Datum) 0;

	if (!skip)
	{
		x = PG_GETARG_DATUM(1);
		if (numeric_is_nan(DatumGetNumeric(x)))
			skip = true;
		else
		{
			DpCheckBoundsNotNull("dp_sum", PG_ARGISNULL(2), PG_ARGISNULL(3));
			if (DpNumericCmp(x, PG_GETARG_DATUM(2)) < 0)
				x = PG_GETARG_DATUM(2);
			else if (DpNumericCmp(x, PG_GETARG_DATUM(3)) > 0)
				x = PG_GETARG_DATUM(3);
		}
	}
	InitFunctionCallInfoData(*inner, NULL, 2, InvalidOid, fcinfo->context, NULL);
	inner->args[0] = fcinfo->args[0];
	inner->args[1].value = x;
	inner->args[1].isnull = skip;
	return numeric_avg_accum(inner);
}

/*
 * Combine, serialize, deserialize of the fixed-point states
 */

/* Combine two fixed-point states (dp_sum int8/float8, dp_avg). */
Datum
dp_sum_fixed_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_sum_fixed_combine");
	DpSumState *s1 = PG_ARGISNULL(0) ? NULL : (DpSumState *) PG_GETARG_POINTER(0);
	DpSumState *s2 = PG_ARGISNULL(1) ? NULL : (DpSumState *) PG_GETARG_POINTER(1);

	if (s2 == NULL)
	{
		if (s1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s1);
	}
	if (s1 == NULL)
	{
		/* the right state may live in a shorter-lived context: copy it */
		s1 = MemoryContextAlloc(aggcxt, sizeof(DpSumState));
		*s1 = *s2;
		PG_RETURN_POINTER(s1);
	}
	if (s1->kind != s2->kind || s1->unit_exp != s2->unit_exp ||
		memcmp(&s1->center, &s2->center, sizeof(double)) != 0)
		DpStateCorrupt(s1->kind == DP_STATE_AVG ? "dp_avg" : "dp_sum",
					   "Two partial states were built with different bounds.");
	if (pg_add_s64_overflow(s1->count, s2->count, &s1->count))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	/* |sum| <= count 2^63 and count < 2^63: no int128 overflow */
	s1->sum += s2->sum;
	PG_RETURN_POINTER(s1);
}

/* Serialize a fixed-point state: header, unit_exp, count, sum, center. */
Datum
dp_sum_fixed_serialize(PG_FUNCTION_ARGS)
{
	DpSumState *state = (DpSumState *) PG_GETARG_POINTER(0);
	StringInfoData buf;
	bytea	   *result;

	DpAggMemoryContext(fcinfo, "dp_sum_fixed_serialize");
	DpStateSendBegin(&buf, state->kind);
	pq_sendint32(&buf, state->unit_exp);
	pq_sendint64(&buf, state->count);
	DpStateSendInt128(&buf, state->sum);
	pq_sendfloat8(&buf, state->center);
	result = DpStateSendEnd(&buf);
	Assert(VARSIZE(result) - VARHDRSZ == DP_SUM_STATE_LEN);
	PG_RETURN_BYTEA_P(result);
}

/* Deserialize and validate a fixed-point state of the given kind. */
static Datum
DpSumDeserialize(FunctionCallInfo fcinfo, DpStateKind kind, const char *aggname)
{
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_sum deserialize");
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	DpSumState *state;
	int32		unit_exp;
	int64		count;
	int128		sum;
	double		center;
	int128		per_row;
	int128		max_abs;

	DpStateRecvBegin(&buf, bytes, kind, DP_SUM_STATE_LEN, aggname);
	unit_exp = DpStateGetInt32(&buf, aggname);
	count = DpStateGetInt64(&buf, aggname);
	sum = DpStateGetInt128(&buf, aggname);
	center = DpStateGetFloat8(&buf, aggname);
	DpStateRecvEnd(&buf, aggname);

	if (count < 0)
		DpStateCorrupt(aggname, "The state's row count is negative.");
	if (kind == DP_STATE_SUM_INT8)
	{
		if (unit_exp != 0)
			DpStateCorrupt(aggname, "An integer sum must count units of 1.");
		per_row = (int128) 1 << 63;
	}
	else
	{
		if (unit_exp < DP_FIXEDSUM_MIN_EXP - DP_FIXEDSUM_FLOAT_BITS ||
			unit_exp > 1024 - DP_FIXEDSUM_FLOAT_BITS)
			DpStateCorrupt(aggname, psprintf("The state's unit exponent %d is out of range.", unit_exp));
		per_row = (int128) 1 << DP_FIXEDSUM_FLOAT_BITS;
	}
	if (kind == DP_STATE_AVG ? !isfinite(center) : center != 0.0)
		DpStateCorrupt(aggname, "The state's center is invalid.");
	max_abs = per_row * count;
	if (sum > max_abs || sum < -max_abs)
		DpStateCorrupt(aggname, "The state's sum exceeds its row count times the largest value per row.");

	state = DpSumStateNew(aggcxt, kind);
	state->unit_exp = unit_exp;
	state->to_units = kind == DP_STATE_SUM_INT8 ? 1.0 : ldexp(1.0, -unit_exp);
	state->count = count;
	state->sum = sum;
	state->center = center;
	PG_RETURN_POINTER(state);
}

/* Deserialize a dp_sum(int8) state. */
Datum
dp_sum_int8_deserialize(PG_FUNCTION_ARGS)
{
	return DpSumDeserialize(fcinfo, DP_STATE_SUM_INT8, "dp_sum");
}

/* Deserialize a dp_sum(float8) state. */
Datum
dp_sum_float8_deserialize(PG_FUNCTION_ARGS)
{
	return DpSumDeserialize(fcinfo, DP_STATE_SUM_FLOAT8, "dp_sum");
}

/* Deserialize a dp_avg state. */
Datum
dp_avg_deserialize(PG_FUNCTION_ARGS)
{
	return DpSumDeserialize(fcinfo, DP_STATE_AVG, "dp_avg");
}
