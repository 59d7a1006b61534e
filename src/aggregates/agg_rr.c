/*
 * agg_rr.c — estimates from locally private columns: dp_rr_count,
 * dp_rr_proportion and dp_rr_histogram.
 *
 *   dp_rr_count(column, value [, mech])       float8: how many rows hold value
 *   dp_rr_proportion(column, value [, mech])  float8: which share of the rows
 *   dp_rr_histogram(column [, mech])          jsonb {"key": estimated count, ...}
 *
 * The column must be declared locally private (dp_pg.randomize(),
 * common/randomized.c): every stored value is a randomized report over k
 * keys at the column's epsilon.  The aggregate counts the reports per key
 * (the exact key-count state of dp_histogram(key, mech), agg_histogram.c)
 * and turns them into unbiased estimates (core/rr.c).
 *
 * What is charged (docs/privacy.md, "Locally private columns"):
 *   - a statement that reads no protected table reads nothing dp_pg
 *     protects but the reports, which are already epsilon-DP for each
 *     value: the estimate is post-processing, free, with no further noise
 *     (the call site's cost is zero);
 *   - a statement that reads a protected table (the column's own, or one
 *     it is joined to or filtered by) releases, beside the reports, which
 *     rows each group holds — protected like every other fact of the
 *     table.  So the group's report counts S_0 .. S_{k-1} are one
 *     histogram release over the k keys (sensitivity 1: a row reports one
 *     key), noised with the mechanism (the default one if none is given)
 *     and charged like dp_histogram; the estimate is post-processing of
 *     that release.
 *
 * Error bars are per released value (dp_pg.last_releases): the estimate's
 * standard deviation (the randomization's exact variance at the estimate,
 * plus the noise's), and a closed interval that holds the true count with
 * probability 0.95 or more: the lecture's Hoeffding bound at 0.05 without
 * noise; with noise, Hoeffding at 0.025 on an upper bound of the rows and
 * every key's noise within its 1 - 0.025/k half-width (core/rr.h).
 *
 * Layer aggregates/ (docs/development.md): may call the release path
 * (call sites, cache), the ledger, common/ and the numeric core.
 */
#include "postgres.h"

#include <math.h>

#include "common/int.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "aggregates.h"
#include "agg_state.h"
#include "randomized.h"
#include "release.h"

PG_FUNCTION_INFO_V1(dp_rr_count_final);
PG_FUNCTION_INFO_V1(dp_rr_count_mech_final);
PG_FUNCTION_INFO_V1(dp_rr_proportion_final);
PG_FUNCTION_INFO_V1(dp_rr_proportion_mech_final);
PG_FUNCTION_INFO_V1(dp_rr_histogram_final);
PG_FUNCTION_INFO_V1(dp_rr_histogram_mech_final);

/* Failure probabilities of the intervals (see the file comment). */
#define DP_RR_BETA			0.05
#define DP_RR_BETA_SPLIT	0.025

/* Per-query data of an estimate's call site. */
typedef struct DpRRSite
{
	DpRandomizedColumn col;
	int			value;			/* dp_rr_count / dp_rr_proportion: the key asked for */
	bool		noised;			/* the statement reads a protected table */
	double		h;				/* noise half-width at 1 - 0.025/k (noised) */
} DpRRSite;

/* Plan an estimate: its column, its key, and its noise if it reads protected rows. */
static void
DpRRPlan(DpCallSite *site, Datum *values, bool *isnull, bool has_value)
{
	DpRRSite   *ex = palloc0(sizeof(DpRRSite));
	const char *name = site->kind->name;
	Oid			relid;
	AttrNumber	attno;
	char		err[256];

	if (!DpCallSiteArgColumn(site, 0, &relid, &attno) || !DpRandomizedColumnOf(relid, attno, &ex->col))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the first argument of %s must be a locally private column", name),
				 errdetail("%s estimates from the randomized reports of a column declared with dp_pg.randomize(); "
						   "dp_pg.randomized_columns lists them.", name)));
	if (has_value)
	{
		if (isnull[0])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the value of %s must not be null", name)));
		ex->value = DpRandomizedKeyIndex(&ex->col, values[0]);
		if (ex->value < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the value of %s is not one of the keys of \"%s\"", name, NameStr(ex->col.attname)),
					 errdetail("dp_pg.randomized_columns lists the keys.")));
	}
	ex->noised = DpCallSiteReadsProtected(site);
	if (ex->noised)
	{
		if (!dp_noise_plan(&site->plan, &site->mech, site->unit_rows, site->unit_rows, 0, err, sizeof(err)))
			DpReportMechanismError(err);
		ex->h = dp_noise_plan_halfwidth(&site->plan, 1.0 - DP_RR_BETA_SPLIT / ex->col.nkeys);
		dp_noise_plan_cost(&site->plan, &site->cost);
	}
	else
	{
		/* post-processing of reports anyone who reads the table can read */
		if (!dp_mechanism_validate_privacy(&site->mech, err, sizeof(err)))
			DpReportMechanismError(err);
		dp_cost_zero(&site->cost);
		memset(&site->plan, 0, sizeof(site->plan));
		site->plan.mech = site->mech;
	}
	site->extra = ex;
}

/* Plan of dp_rr_count / dp_rr_proportion (the value is const argument 1). */
static void
DpRRValuePlan(DpCallSite *site, Datum *values, bool *isnull)
{
	DpRRPlan(site, values, isnull, true);
}

/* Plan of dp_rr_histogram. */
static void
DpRRHistogramPlan(DpCallSite *site, Datum *values, bool *isnull)
{
	DpRRPlan(site, values, isnull, false);
}

/* What an estimate's interval covers (DpAggKind.bar). */
static void
DpRRBar(const DpCallSite *site, DpSiteBar *bar)
{
	const DpRRSite *ex = site->extra;
	char		eps[32];

	snprintf(eps, sizeof(eps), "%.17g", ex->col.epsilon);
	/* the column's randomization, and the noise of the report counts if any */
	if (ex->noised)
	{
		char		central[DP_MECH_TEXT_LEN];

		dp_mechanism_format(&site->mech, central, sizeof(central));
		snprintf(bar->mechanism, sizeof(bar->mechanism), "rr(epsilon=%s) + %s", eps, central);
	}
	else
		snprintf(bar->mechanism, sizeof(bar->mechanism), "rr(epsilon=%s)", eps);
	bar->sd = NAN;
	bar->h95 = NAN;
	bar->per_value = true;
	if (!ex->noised)
		snprintf(bar->note, sizeof(bar->note),
				 "Per value: randomized response at epsilon %s over %d keys, read without further noise (the "
				 "statement reads no protected table: free).  noise_sd is the estimate's exact standard deviation "
				 "at the estimate; [ci95_lower, ci95_upper] holds the true count (share) with probability 0.95 or "
				 "more: Hoeffding's bound, scale * sqrt(n ln(40) / 2).",
				 eps, ex->col.nkeys);
	else
		snprintf(bar->note, sizeof(bar->note),
				 "Per value: randomized response at epsilon %s over %d keys, its report counts released with "
				 "noise (the statement reads a protected table).  noise_sd adds the noise to the randomization; "
				 "[ci95_lower, ci95_upper] holds the true count (share) with probability 0.95 or more: Hoeffding at "
				 "0.025 on n <= noisy n + %d h, and every key's noise within h = %.6g (1 - 0.025/%d).",
				 eps, ex->col.nkeys, ex->col.nkeys, ex->h, ex->col.nkeys);
}

/* The estimate of one key from a group's report counts, with its sd and interval. */
typedef struct DpRREstimate
{
	double		count;
	double		sd;
	double		lower;
	double		upper;
	double		n;				/* rows (noisy when noised) */
	double		n_lower;		/* a lower bound of the true rows on the same event */
	double		n_upper;
} DpRREstimate;

/* The report counts of the group in state: exact, or each with one draw of the site's noise. */
static void
DpRRReports(const DpCallSite *site, FunctionCallInfo fcinfo, double *reports)
{
	const DpRRSite *ex = site->extra;
	int			k = ex->col.nkeys;
	int64	   *counts = palloc(k * sizeof(int64));
	Aggref	   *aggref = AggGetAggref(fcinfo);

	if (aggref == NULL || linitial_oid(aggref->aggargtypes) != ex->col.typid)
		DpStateCorrupt(site->kind->name, "The column's type is not the one it was declared with.");
	DpKeyStateCountKeys(PG_ARGISNULL(0) ? NULL : PG_GETARG_POINTER(0), ex->col.typid, ex->col.collation,
						ex->col.keys, k, counts);
	for (int j = 0; j < k; j++)
	{
		int64		c = counts[j];

		if (ex->noised && pg_add_s64_overflow(c, dp_sampler_draw(&site->plan.sampler, DpBackendRng()), &c))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("bigint out of range")));
		reports[j] = (double) c;
	}
	pfree(counts);
}

/* Estimate key v from report counts (see the file comment). */
static DpRREstimate
DpRREstimateKey(const DpCallSite *site, const double *reports, int v)
{
	const DpRRSite *ex = site->extra;
	int			k = ex->col.nkeys;
	double		eps = ex->col.epsilon;
	DpRREstimate e;
	double		hw;
	double		n_pos;
	double		c_plug;

	e.n = 0;
	for (int j = 0; j < k; j++)
		e.n += reports[j];
	e.count = dp_rr_estimate(reports[v], e.n, eps, k);
	n_pos = Max(e.n, 0.0);
	c_plug = Min(Max(e.count, 0.0), n_pos);
	if (ex->noised)
	{
		hw = dp_rr_noisy_halfwidth(e.n, eps, k, ex->h, DP_RR_BETA_SPLIT);
		e.sd = sqrt(dp_rr_variance(c_plug, n_pos, eps, k) +
					dp_rr_noise_variance_factor(eps, k) * site->plan.variance);
		e.n_lower = Max(e.n - k * ex->h, 0.0);
		e.n_upper = Max(e.n + k * ex->h, 0.0);
	}
	else
	{
		hw = dp_rr_halfwidth(e.n, eps, k, DP_RR_BETA);
		e.sd = sqrt(dp_rr_variance(c_plug, n_pos, eps, k));
		e.n_lower = e.n_upper = e.n;
	}
	e.lower = e.count - hw;
	e.upper = e.count + hw;
	return e;
}

/* dp_rr_count: the estimated count, with its interval noted. */
static Datum
DpRRCountRelease(FunctionCallInfo fcinfo, const DpAggKind *kind)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, kind);
	DpRRSite   *ex = site->extra;
	double	   *reports = palloc(ex->col.nkeys * sizeof(double));
	DpRREstimate e;

	DpRRReports(site, fcinfo, reports);
	e = DpRREstimateKey(site, reports, ex->value);
	DpBarsNoteValue(site, e.count, e.sd, e.lower, e.upper);
	PG_RETURN_FLOAT8(e.count);
}

/*
 * dp_rr_proportion: the estimated count over the rows (NULL when the rows,
 * noisy or not, are none).  Its interval divides the count's by the bounds
 * of n on the same event, within [0, 1].
 */
static Datum
DpRRProportionRelease(FunctionCallInfo fcinfo, const DpAggKind *kind)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, kind);
	DpRRSite   *ex = site->extra;
	double	   *reports = palloc(ex->col.nkeys * sizeof(double));
	DpRREstimate e;
	double		p;
	double		lower;
	double		upper;

	DpRRReports(site, fcinfo, reports);
	e = DpRREstimateKey(site, reports, ex->value);
	if (!(e.n > 0.0))
		PG_RETURN_NULL();
	p = e.count / e.n;
	lower = e.n_upper > 0.0 ? Max(e.lower, 0.0) / e.n_upper : 0.0;
	upper = e.n_lower > 0.0 ? Min(e.upper / e.n_lower, 1.0) : 1.0;
	DpBarsNoteValue(site, p, e.sd / e.n, Max(Min(lower, 1.0), 0.0), Max(upper, 0.0));
	PG_RETURN_FLOAT8(p);
}

/* dp_rr_histogram: every key's estimated count, as jsonb. */
static Datum
DpRRHistogramRelease(FunctionCallInfo fcinfo, const DpAggKind *kind)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, kind);
	DpRRSite   *ex = site->extra;
	double	   *reports = palloc(ex->col.nkeys * sizeof(double));
	JsonbParseState *ps = NULL;
	JsonbValue *res;

	DpRRReports(site, fcinfo, reports);
	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	for (int v = 0; v < ex->col.nkeys; v++)
	{
		DpRREstimate e = DpRREstimateKey(site, reports, v);
		JsonbValue	key;
		JsonbValue	val;

		DpBarsNoteValue(site, e.count, e.sd, e.lower, e.upper);
		key.type = jbvString;
		key.val.string.val = ex->col.labels[v];
		key.val.string.len = strlen(ex->col.labels[v]);
		pushJsonbValue(&ps, WJB_KEY, &key);
		val.type = jbvNumeric;
		val.val.numeric = DatumGetNumeric(DirectFunctionCall1(float8_numeric, Float8GetDatum(e.count)));
		pushJsonbValue(&ps, WJB_VALUE, &val);
	}
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	PG_RETURN_JSONB_P(JsonbValueToJsonb(res));
}

const DpAggKind dp_rr_count_kind = {
	.name = "dp_rr_count",
	.finalfn = dp_rr_count_final,
	.nargs = 2,
	.mech_argno = -1,
	.nconst = 1,
	.const_argnos = {1},
	.own_cost = true,
	.local = true,
	.plan = DpRRValuePlan,
	.bar = DpRRBar,
};

const DpAggKind dp_rr_count_mech_kind = {
	.name = "dp_rr_count",
	.finalfn = dp_rr_count_mech_final,
	.nargs = 3,
	.mech_argno = 2,
	.nconst = 1,
	.const_argnos = {1},
	.own_cost = true,
	.local = true,
	.plan = DpRRValuePlan,
	.bar = DpRRBar,
};

const DpAggKind dp_rr_proportion_kind = {
	.name = "dp_rr_proportion",
	.finalfn = dp_rr_proportion_final,
	.nargs = 2,
	.mech_argno = -1,
	.nconst = 1,
	.const_argnos = {1},
	.own_cost = true,
	.local = true,
	.plan = DpRRValuePlan,
	.bar = DpRRBar,
};

const DpAggKind dp_rr_proportion_mech_kind = {
	.name = "dp_rr_proportion",
	.finalfn = dp_rr_proportion_mech_final,
	.nargs = 3,
	.mech_argno = 2,
	.nconst = 1,
	.const_argnos = {1},
	.own_cost = true,
	.local = true,
	.plan = DpRRValuePlan,
	.bar = DpRRBar,
};

const DpAggKind dp_rr_histogram_kind = {
	.name = "dp_rr_histogram",
	.finalfn = dp_rr_histogram_final,
	.nargs = 1,
	.mech_argno = -1,
	.own_cost = true,
	.local = true,
	.plan = DpRRHistogramPlan,
	.bar = DpRRBar,
};

const DpAggKind dp_rr_histogram_mech_kind = {
	.name = "dp_rr_histogram",
	.finalfn = dp_rr_histogram_mech_final,
	.nargs = 2,
	.mech_argno = 1,
	.own_cost = true,
	.local = true,
	.plan = DpRRHistogramPlan,
	.bar = DpRRBar,
};

/* Final function of dp_rr_count(column, value). */
Datum
dp_rr_count_final(PG_FUNCTION_ARGS)
{
	return DpRRCountRelease(fcinfo, &dp_rr_count_kind);
}

/* Final function of dp_rr_count(column, value, mech). */
Datum
dp_rr_count_mech_final(PG_FUNCTION_ARGS)
{
	return DpRRCountRelease(fcinfo, &dp_rr_count_mech_kind);
}

/* Final function of dp_rr_proportion(column, value). */
Datum
dp_rr_proportion_final(PG_FUNCTION_ARGS)
{
	return DpRRProportionRelease(fcinfo, &dp_rr_proportion_kind);
}

/* Final function of dp_rr_proportion(column, value, mech). */
Datum
dp_rr_proportion_mech_final(PG_FUNCTION_ARGS)
{
	return DpRRProportionRelease(fcinfo, &dp_rr_proportion_mech_kind);
}

/* Final function of dp_rr_histogram(column). */
Datum
dp_rr_histogram_final(PG_FUNCTION_ARGS)
{
	return DpRRHistogramRelease(fcinfo, &dp_rr_histogram_kind);
}

/* Final function of dp_rr_histogram(column, mech). */
Datum
dp_rr_histogram_mech_final(PG_FUNCTION_ARGS)
{
	return DpRRHistogramRelease(fcinfo, &dp_rr_histogram_mech_kind);
}
