/*
 * agg_quantile.c — dp_quantile(x, q, lower, upper [, mechanism]) and
 * dp_median(x, lower, upper [, mechanism]): a private quantile by the
 * exponential mechanism (src/core/quantile.h).
 *
 * The transition cuts [lower, upper] into DP_QUANTILE_CELLS equal cells and
 * counts the (clamped) values of each: exact counts, fixed memory per group
 * (8 kB), combined by adding (parallel safe).  NULLs and NaNs are skipped.
 * The final function draws the released cell boundary exactly, once per
 * group; the answer is one of the N + 1 boundaries whatever the data.
 *
 * On a table with a privacy unit (guard/units.c) the inner level gives each
 * (unit, cell) at most w = max_rows_per_unit of its values
 * (dp_pg.unit_values), and dp_pg.bounded_quantile counts them: a unit moves
 * every cum_j and the rank asked for by at most w in one of at most g cells,
 * so the utility's sensitivity is w (gamma = epsilon / (2 w)) and the
 * mechanism is split over the g cells like the other bounded forms.
 *
 * Cost: the exponential mechanism with utility sensitivity w and gamma =
 * epsilon / (2 w) is epsilon-DP, and epsilon-bounded-range (the privacy
 * loss of any output lies in an interval of length gamma * 2w = epsilon,
 * Durfee-Rogers 2019), hence epsilon^2/8-zCDP (Cesar-Rogers 2021); its Renyi
 * divergences are at most min(epsilon, alpha epsilon^2 / 8), which is what
 * the ledger records.  Only a pure epsilon mechanism (laplace(epsilon=E))
 * names it.
 *
 * Layer aggregates/ (docs/development.md): may call the release path
 * (call sites, cache), the ledger, common/ and the numeric core.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "aggregates.h"
#include "agg_state.h"
#include "release.h"
#include "quantile.h"

PG_FUNCTION_INFO_V1(dp_quantile_trans);
PG_FUNCTION_INFO_V1(dp_median_trans);
PG_FUNCTION_INFO_V1(dp_quantile_combine);
PG_FUNCTION_INFO_V1(dp_quantile_serialize);
PG_FUNCTION_INFO_V1(dp_quantile_deserialize);
PG_FUNCTION_INFO_V1(dp_quantile_final);
PG_FUNCTION_INFO_V1(dp_quantile_default_final);
PG_FUNCTION_INFO_V1(dp_median_final);
PG_FUNCTION_INFO_V1(dp_median_default_final);
PG_FUNCTION_INFO_V1(dp_bounded_quantile_trans);
PG_FUNCTION_INFO_V1(dp_bounded_quantile_final);
PG_FUNCTION_INFO_V1(dp_unit_values_trans);
PG_FUNCTION_INFO_V1(dp_unit_values_final);

#define DP_QUANTILE_STATE_MAGIC 0x44505131	/* "DPQ1" */

/* Counts of the cells of [lower, upper]. */
typedef struct DpQuantileState
{
	double		lower;
	double		upper;
	double		half_width;		/* upper / 2 - lower / 2 (finite for any finite bounds) */
	uint64		counts[DP_QUANTILE_CELLS];
} DpQuantileState;

/* What a call site's final function needs (DpCallSite.extra). */
typedef struct DpQuantileSite
{
	double		q;
	double		lower;
	double		upper;
	DpRational	gamma;
} DpQuantileSite;

/* ERROR 22023 unless lower < upper are finite. */
static void
DpCheckQuantileBounds(const char *aggname, bool lnull, bool unull, double lower, double upper)
{
	if (lnull || unull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the bounds of %s must not be null", aggname)));
	/* (the half width must be a positive number: a value's cell is computed with it) */
	if (isnan(lower) || isnan(upper) || isinf(lower) || isinf(upper) || !(lower < upper) ||
		!(upper / 2.0 - lower / 2.0 >= DBL_MIN))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bounds of %s must be finite with lower < upper, got [%g, %g]", aggname, lower, upper),
				 errdetail("They must also be at least 4.5e-308 apart (1,024 cells are cut between them).")));
}

/* Plan a call site: q in [0, 1], the bounds, a pure epsilon mechanism; its cost. */
static void
DpQuantilePlan(DpCallSite *site, Datum *values, bool *isnull)
{
	DpQuantileSite *qs = palloc0(sizeof(DpQuantileSite));
	bool		median = site->kind->nconst == 2;
	int			b = median ? 0 : 1;
	double		eps;
	const char *name = site->kind->name;

	if (!median)
	{
		if (isnull[0])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the quantile of %s must not be null", name)));
		qs->q = DatumGetFloat8(values[0]);
		if (isnan(qs->q) || qs->q < 0.0 || qs->q > 1.0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the quantile of %s must be between 0 and 1, got %g", name, qs->q)));
	}
	else
		qs->q = 0.5;
	DpCheckQuantileBounds(name, isnull[b], isnull[b + 1],
						  isnull[b] ? 0 : DatumGetFloat8(values[b]), isnull[b + 1] ? 0 : DatumGetFloat8(values[b + 1]));
	qs->lower = DatumGetFloat8(values[b]);
	qs->upper = DatumGetFloat8(values[b + 1]);
	if (site->mech.family != DP_MECH_LAPLACE || site->mech.form != DP_FORM_EPSILON)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s needs a pure epsilon mechanism, laplace(epsilon=E)", name),
				 errdetail("It is the exponential mechanism, epsilon-differentially private; it adds no noise of a family.")));
	eps = site->mech.p[0];
	if (!dp_quantile_gamma(eps, (uint64) site->unit_rows, &qs->gamma))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the epsilon of %s is out of range: %g", name, eps)));
	site->extra = qs;
	/* the cost of one release: epsilon-DP, epsilon^2/8-zCDP: Renyi curve min(epsilon, alpha epsilon^2 / 8) */
	memset(&site->cost, 0, sizeof(site->cost));
	site->cost.epsilon = eps;
	site->cost.delta = 0.0;
	site->cost.rho = nextafter(eps * eps / 8.0, INFINITY);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		site->cost.rdp[i] = Min(eps, nextafter(DP_RDP_ALPHAS[i] * eps * eps / 8.0, INFINITY));
	memset(&site->plan, 0, sizeof(site->plan));
	site->plan.epsilon = eps;
	site->plan.variance = NAN;
	site->plan.scale = NAN;
	site->plan.sigma = NAN;
}

/*
 * A quantile's interval is on the rank scale (quantile.h): a value-scale
 * interval would need the data around the answer, which is not released.
 */
static void
DpQuantileBar(const DpCallSite *site, DpSiteBar *bar)
{
	DpQuantileSite *qs = site->extra;
	double		g = (double) qs->gamma.num / (double) qs->gamma.den;

	bar->sd = NAN;
	bar->h95 = NAN;
	bar->rank_h95 = dp_quantile_rank_halfwidth(qs->gamma, DP_QUANTILE_CELLS, 0.95);
	snprintf(bar->note, sizeof(bar->note),
			 "A rank interval (t = ci95_rank_halfwidth): with probability 0.95 or more the number of values "
			 "below the answer is within t of the rank asked for, floor(q n) kept min(%.0f, n / 4) from either "
			 "end, up to the values of one of the 1,024 cells of [%g, %g].  Not in it: values moved to the bounds.",
			 ceil((log(DP_QUANTILE_CELLS + 1.0) + 4.0) / g), qs->lower, qs->upper);
}

const DpAggKind dp_quantile_kind = {
	.name = "dp_quantile",
	.finalfn = dp_quantile_final,
	.nargs = 5,
	.mech_argno = 4,
	.nconst = 3,
	.const_argnos = {1, 2, 3},
	.own_cost = true,
	.plan = DpQuantilePlan,
	.bar = DpQuantileBar,
};

const DpAggKind dp_quantile_default_kind = {
	.name = "dp_quantile",
	.finalfn = dp_quantile_default_final,
	.nargs = 4,
	.mech_argno = -1,
	.nconst = 3,
	.const_argnos = {1, 2, 3},
	.own_cost = true,
	.plan = DpQuantilePlan,
	.bar = DpQuantileBar,
};

const DpAggKind dp_median_kind = {
	.name = "dp_median",
	.finalfn = dp_median_final,
	.nargs = 4,
	.mech_argno = 3,
	.nconst = 2,
	.const_argnos = {1, 2},
	.own_cost = true,
	.plan = DpQuantilePlan,
	.bar = DpQuantileBar,
};

const DpAggKind dp_median_default_kind = {
	.name = "dp_median",
	.finalfn = dp_median_default_final,
	.nargs = 3,
	.mech_argno = -1,
	.nconst = 2,
	.const_argnos = {1, 2},
	.own_cost = true,
	.plan = DpQuantilePlan,
	.bar = DpQuantileBar,
};

/* The bounded form (guard/units.c): (values[], q, lower, upper, mech, weight, rows, groups). */
const DpAggKind dp_bounded_quantile_kind = {
	.name = "dp_quantile",
	.finalfn = dp_bounded_quantile_final,
	.nargs = 5,
	.mech_argno = 4,
	.nconst = 3,
	.const_argnos = {1, 2, 3},
	.bounded_extra = 3,
	.own_cost = true,
	.plan = DpQuantilePlan,
	.bar = DpQuantileBar,
};

/* A new state in the aggregate context, bounds checked. */
static DpQuantileState *
DpQuantileStateNew(FunctionCallInfo fcinfo, const char *aggname, int lo_arg)
{
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, aggname);
	DpQuantileState *st;

	DpCheckQuantileBounds(aggname, PG_ARGISNULL(lo_arg), PG_ARGISNULL(lo_arg + 1),
						  PG_ARGISNULL(lo_arg) ? 0 : PG_GETARG_FLOAT8(lo_arg),
						  PG_ARGISNULL(lo_arg + 1) ? 0 : PG_GETARG_FLOAT8(lo_arg + 1));
	st = MemoryContextAllocZero(aggcxt, sizeof(DpQuantileState));
	st->lower = PG_GETARG_FLOAT8(lo_arg);
	st->upper = PG_GETARG_FLOAT8(lo_arg + 1);
	st->half_width = st->upper / 2.0 - st->lower / 2.0;
	return st;
}

/* The cell of x (clamped; not NaN). */
static inline int
DpQuantileCell(const DpQuantileState *st, double x)
{
	double		c;

	if (!(x > st->lower))
		return 0;
	if (!(x < st->upper))
		return DP_QUANTILE_CELLS - 1;
	c = floor((x / 2.0 - st->lower / 2.0) / st->half_width * DP_QUANTILE_CELLS);
	/* (NaN only for bounds a few subnormals apart: the first cell) */
	if (!(c > 0.0))
		return 0;
	return c >= DP_QUANTILE_CELLS ? DP_QUANTILE_CELLS - 1 : (int) c;
}

static Datum
DpQuantileTrans(FunctionCallInfo fcinfo, const char *aggname, int lo_arg)
{
	DpQuantileState *st = PG_ARGISNULL(0)
		? DpQuantileStateNew(fcinfo, aggname, lo_arg)
		: (DpQuantileState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		double		x = PG_GETARG_FLOAT8(1);

		if (likely(!isnan(x)))
			st->counts[DpQuantileCell(st, x)]++;
	}
	PG_RETURN_POINTER(st);
}

/* Transition of dp_quantile(x, q, lower, upper [, mech]). */
Datum
dp_quantile_trans(PG_FUNCTION_ARGS)
{
	return DpQuantileTrans(fcinfo, "dp_quantile", 3);
}

/* Transition of dp_median(x, lower, upper [, mech]). */
Datum
dp_median_trans(PG_FUNCTION_ARGS)
{
	return DpQuantileTrans(fcinfo, "dp_median", 2);
}

/* Transition of dp_pg.bounded_quantile: count each of a (unit, cell)'s values. */
Datum
dp_bounded_quantile_trans(PG_FUNCTION_ARGS)
{
	DpQuantileState *st = PG_ARGISNULL(0)
		? DpQuantileStateNew(fcinfo, "dp_quantile", 3)
		: (DpQuantileState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		ArrayType  *a = PG_GETARG_ARRAYTYPE_P(1);
		Datum	   *vals;
		bool	   *nulls;
		int			n;

		deconstruct_array(a, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &vals, &nulls, &n);
		for (int i = 0; i < n; i++)
		{
			double		x;

			if (nulls[i])
				continue;
			x = DatumGetFloat8(vals[i]);
			if (likely(!isnan(x)))
				st->counts[DpQuantileCell(st, x)]++;
		}
		pfree(vals);
		pfree(nulls);
	}
	PG_RETURN_POINTER(st);
}

/* At most w values of a (unit, cell), in the aggregate context. */
typedef struct DpUnitValues
{
	int64		w;
	int			n;
	int			cap;
	double	   *vals;
} DpUnitValues;

/* Transition of dp_pg.unit_values(x, w): keep the first w values (NULL and NaN skipped). */
Datum
dp_unit_values_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_pg.unit_values");
	DpUnitValues *st = PG_ARGISNULL(0) ? NULL : (DpUnitValues *) PG_GETARG_POINTER(0);

	if (st == NULL)
	{
		st = MemoryContextAllocZero(aggcxt, sizeof(DpUnitValues));
		st->w = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2);
	}
	if (!PG_ARGISNULL(1) && st->n < st->w)
	{
		double		x = PG_GETARG_FLOAT8(1);

		if (!isnan(x))
		{
			if (st->n == st->cap)
			{
				int			cap = st->cap == 0 ? 4 : 2 * st->cap;

				st->vals = st->vals == NULL ? MemoryContextAlloc(aggcxt, sizeof(double) * cap)
					: repalloc(st->vals, sizeof(double) * cap);
				st->cap = cap;
			}
			st->vals[st->n++] = x;
		}
	}
	PG_RETURN_POINTER(st);
}

Datum
dp_unit_values_final(PG_FUNCTION_ARGS)
{
	DpUnitValues *st = PG_ARGISNULL(0) ? NULL : (DpUnitValues *) PG_GETARG_POINTER(0);
	Datum	   *d;
	int			n = st ? st->n : 0;

	d = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		d[i] = Float8GetDatum(st->vals[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(d, n, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/* Combine: add the counts (the bounds are the query's constants). */
Datum
dp_quantile_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_quantile");
	DpQuantileState *a = PG_ARGISNULL(0) ? NULL : (DpQuantileState *) PG_GETARG_POINTER(0);
	DpQuantileState *b = PG_ARGISNULL(1) ? NULL : (DpQuantileState *) PG_GETARG_POINTER(1);

	if (b == NULL)
	{
		if (a == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(a);
	}
	if (a == NULL)
	{
		a = MemoryContextAlloc(aggcxt, sizeof(DpQuantileState));
		memcpy(a, b, sizeof(DpQuantileState));
		PG_RETURN_POINTER(a);
	}
	if (a->lower != b->lower || a->upper != b->upper)
		elog(ERROR, "dp_quantile: partial states with different bounds");
	for (int i = 0; i < DP_QUANTILE_CELLS; i++)
		a->counts[i] += b->counts[i];
	PG_RETURN_POINTER(a);
}

/* Serialize: magic, bounds, counts. */
Datum
dp_quantile_serialize(PG_FUNCTION_ARGS)
{
	DpQuantileState *st = (DpQuantileState *) PG_GETARG_POINTER(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint32(&buf, DP_QUANTILE_STATE_MAGIC);
	pq_sendfloat8(&buf, st->lower);
	pq_sendfloat8(&buf, st->upper);
	for (int i = 0; i < DP_QUANTILE_CELLS; i++)
		pq_sendint64(&buf, (int64) st->counts[i]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

Datum
dp_quantile_deserialize(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_quantile");
	StringInfoData buf;
	DpQuantileState *st = MemoryContextAllocZero(aggcxt, sizeof(DpQuantileState));

	buf.data = VARDATA_ANY(b);
	buf.len = VARSIZE_ANY_EXHDR(b);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	if (pq_getmsgint(&buf, 4) != DP_QUANTILE_STATE_MAGIC)
		elog(ERROR, "dp_quantile: not a dp_quantile state");
	st->lower = pq_getmsgfloat8(&buf);
	st->upper = pq_getmsgfloat8(&buf);
	st->half_width = st->upper / 2.0 - st->lower / 2.0;
	for (int i = 0; i < DP_QUANTILE_CELLS; i++)
		st->counts[i] = (uint64) pq_getmsgint64(&buf);
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(st);
}

/* The rank asked for (the small-group rule is quantile.h's dp_quantile_target). */
static uint64
DpQuantileTarget(const DpQuantileSite *qs, uint64 n)
{
	return dp_quantile_target(qs->q, n, qs->gamma, DP_QUANTILE_CELLS);
}

/* Release one boundary for the group (an empty group too: nothing about it is withheld). */
static Datum
DpQuantileFinal(FunctionCallInfo fcinfo, const DpAggKind *kind)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, kind);
	DpQuantileSite *qs = (DpQuantileSite *) site->extra;
	DpQuantileState *st = PG_ARGISNULL(0) ? NULL : (DpQuantileState *) PG_GETARG_POINTER(0);
	uint64	   *zero = NULL;
	uint64	   *work = palloc(sizeof(uint64) * (DP_QUANTILE_CELLS + 1));
	const uint64 *counts;
	uint64		n = 0;
	int			j;

	if (st != NULL)
		counts = st->counts;
	else
		counts = zero = palloc0(sizeof(uint64) * DP_QUANTILE_CELLS);
	for (int i = 0; i < DP_QUANTILE_CELLS; i++)
		n += counts[i];
	j = dp_quantile_draw(counts, DP_QUANTILE_CELLS, DpQuantileTarget(qs, n), qs->gamma, DpBackendRng(), work);
	pfree(work);
	if (zero)
		pfree(zero);
	PG_RETURN_FLOAT8(dp_quantile_boundary(qs->lower, qs->upper, DP_QUANTILE_CELLS, j));
}

Datum
dp_quantile_final(PG_FUNCTION_ARGS)
{
	return DpQuantileFinal(fcinfo, &dp_quantile_kind);
}

Datum
dp_quantile_default_final(PG_FUNCTION_ARGS)
{
	return DpQuantileFinal(fcinfo, &dp_quantile_default_kind);
}

Datum
dp_median_final(PG_FUNCTION_ARGS)
{
	return DpQuantileFinal(fcinfo, &dp_median_kind);
}

Datum
dp_median_default_final(PG_FUNCTION_ARGS)
{
	return DpQuantileFinal(fcinfo, &dp_median_default_kind);
}

Datum
dp_bounded_quantile_final(PG_FUNCTION_ARGS)
{
	return DpQuantileFinal(fcinfo, &dp_bounded_quantile_kind);
}
