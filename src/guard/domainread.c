/*
 * guard/domainread.c — dp_pg.domain_read and dp_pg.domain_key_read: a
 * column read through its value domain, at run time, for every row the
 * guard's rewritten query reads (bounds.c decides where they go).
 *
 * Each read is total: NaN becomes NULL, +-Infinity and values outside the
 * domain are clamped to it, a float or numeric nearer to zero than
 * DP_READ_FLOOR of the domain's larger bound becomes 0, and a numeric gets a
 * bounded scale (rounded after the clamp, then clamped again: the result
 * always lies in [lo, hi]; domain_key_read also trims trailing zeros, for a
 * canonical GROUP BY key).  bounds.c gives the bounds (never beyond
 * +-1e300, dates within dp_pg's window), so the values the total operators
 * above a read see lie in the domain the intervals were computed for.  An
 * analyst cannot call a read: its bounds are the guard's (guard.c).
 *
 * Layer guard/, floor rows (docs/development.md): calls nothing of dp_pg's
 * (PostgreSQL's numeric and date functions only).
 */
#include "postgres.h"


#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/date.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "guard/floor_rows.h"

PG_FUNCTION_INFO_V1(dp_domain_read_int2);
PG_FUNCTION_INFO_V1(dp_domain_read_int4);
PG_FUNCTION_INFO_V1(dp_domain_read_int8);
PG_FUNCTION_INFO_V1(dp_domain_read_float4);
PG_FUNCTION_INFO_V1(dp_domain_read_float8);
PG_FUNCTION_INFO_V1(dp_domain_read_numeric);
PG_FUNCTION_INFO_V1(dp_domain_key_read_numeric);
PG_FUNCTION_INFO_V1(dp_domain_read_date);
PG_FUNCTION_INFO_V1(dp_domain_read_timestamp);

/* dp_pg.domain_read(int2, int2, int2): x clamped to [lo, hi]. */
Datum
dp_domain_read_int2(PG_FUNCTION_ARGS)
{
	int16		x = PG_GETARG_INT16(0);

	PG_RETURN_INT16(Min(Max(x, PG_GETARG_INT16(1)), PG_GETARG_INT16(2)));
}

/* dp_pg.domain_read(int4, int4, int4): x clamped to [lo, hi]. */
Datum
dp_domain_read_int4(PG_FUNCTION_ARGS)
{
	int32		x = PG_GETARG_INT32(0);

	PG_RETURN_INT32(Min(Max(x, PG_GETARG_INT32(1)), PG_GETARG_INT32(2)));
}

/* dp_pg.domain_read(int8, int8, int8): x clamped to [lo, hi]. */
Datum
dp_domain_read_int8(PG_FUNCTION_ARGS)
{
	int64		x = PG_GETARG_INT64(0);

	PG_RETURN_INT64(Min(Max(x, PG_GETARG_INT64(1)), PG_GETARG_INT64(2)));
}

/* A float read through [lo, hi]: NaN is NULL (isnull set), clamped, near zero and -0 are 0. */
static double
DpReadFloat(double x, double lo, double hi, bool *isnull)
{
	double		floor = Max(fabs(lo), fabs(hi)) * DP_READ_FLOOR;

	*isnull = isnan(x) || isnan(lo) || isnan(hi);
	if (*isnull)
		return 0;
	x = Min(Max(x, lo), hi);
	if (fabs(x) < floor || x == 0)
		x = Min(Max(0.0, lo), hi);
	return x;
}

/* dp_pg.domain_read(float8, float8, float8) (see DpReadFloat). */
Datum
dp_domain_read_float8(PG_FUNCTION_ARGS)
{
	bool		isnull;
	double		v = DpReadFloat(PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1), PG_GETARG_FLOAT8(2), &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(v);
}

/* dp_pg.domain_read(real, real, real) (see DpReadFloat). */
Datum
dp_domain_read_float4(PG_FUNCTION_ARGS)
{
	bool		isnull;
	double		v = DpReadFloat(PG_GETARG_FLOAT4(0), PG_GETARG_FLOAT4(1), PG_GETARG_FLOAT4(2), &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT4((float4) v);
}

/* The constants of a numeric read, made once per call site. */
typedef struct DpNumericRead
{
	Datum		lo_arg;			/* the arguments they were made for (their pointers, and copies) */
	Datum		hi_arg;
	Datum		lo;
	Datum		hi;
	bool		valid;			/* finite bounds */
	bool		zero_inside;	/* lo <= 0 <= hi: values near zero are read as 0 */
	Datum		floor;			/* values strictly between -floor and floor are 0 */
	Datum		negfloor;
	Datum		zero;
	int32		scale;			/* fraction digits kept */
} DpNumericRead;

/* numeric comparison. */
static int
DpNumCmp(Datum a, Datum b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, a, b));
}

/* The constants of a numeric read for bounds lo and hi (see DpNumericRead). */
static void
DpNumericReadSetup(DpNumericRead *r, Datum lo, Datum hi)
{
	double		maxabs;
	double		floor;

	r->lo_arg = lo;
	r->hi_arg = hi;
	r->lo = datumCopy(lo, false, -1);
	r->hi = datumCopy(hi, false, -1);
	r->valid = !numeric_is_nan(DatumGetNumeric(lo)) && !numeric_is_nan(DatumGetNumeric(hi)) &&
		!numeric_is_inf(DatumGetNumeric(lo)) && !numeric_is_inf(DatumGetNumeric(hi));
	if (!r->valid)
		return;
	maxabs = Max(fabs(DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, lo))),
				 fabs(DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, hi))));
	floor = maxabs * DP_READ_FLOOR;
	r->zero = DirectFunctionCall1(float8_numeric, Float8GetDatum(0.0));
	r->floor = DirectFunctionCall1(float8_numeric, Float8GetDatum(floor));
	r->negfloor = DirectFunctionCall1(float8_numeric, Float8GetDatum(-floor));
	r->zero_inside = DpNumCmp(r->zero, lo) >= 0 && DpNumCmp(r->zero, hi) <= 0;
	/* 10^-scale at most a tenth of the floor */
	r->scale = floor > 0 ? (int32) Min(Max(ceil(-log10(floor)) + 1, 0), 1000) : 0;
}

/*
 * A numeric read through [lo, hi] (the function's result): NaN is NULL, clamped to
 * [lo, hi] (infinities too), a value nearer to zero than 2^-60 of the larger
 * bound is 0, rounded to the digits below that floor when it has more;
 * canonical: trailing zeros trimmed too.  A value already inside (and
 * canonical) is returned as it is, without a copy.
 */
static Datum
DpReadNumeric(FunctionCallInfo fcinfo, bool canonical)
{
	/* detoasted once (a short header is copied once, not by every comparison below) */
	Datum		x = NumericGetDatum(PG_GETARG_NUMERIC(0));
	Datum		lo = PG_GETARG_DATUM(1);
	Datum		hi = PG_GETARG_DATUM(2);
	DpNumericRead *r = (DpNumericRead *) fcinfo->flinfo->fn_extra;
	int32		scale;

	/* the bounds are a call site's constants: checked by pointer first */
	if (r == NULL || ((r->lo_arg != lo || r->hi_arg != hi) && (DpNumCmp(r->lo, lo) != 0 || DpNumCmp(r->hi, hi) != 0)))
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		if (r == NULL)
			r = fcinfo->flinfo->fn_extra = palloc(sizeof(DpNumericRead));
		DpNumericReadSetup(r, lo, hi);
		MemoryContextSwitchTo(old);
	}
	if (!r->valid || numeric_is_nan(DatumGetNumeric(x)))
		PG_RETURN_NULL();
	if (DpNumCmp(x, r->lo) < 0)
		x = r->lo;
	else if (DpNumCmp(x, r->hi) > 0)
		x = r->hi;
	if (r->zero_inside && DpNumCmp(x, r->floor) < 0 && DpNumCmp(x, r->negfloor) > 0)
		x = r->zero;
	scale = DatumGetInt32(DirectFunctionCall1(numeric_scale, x));
	if (scale > r->scale)
	{
		/* rounded after the clamp (so that it cannot overflow), clamped again (rounding may leave [lo, hi]) */
		x = DirectFunctionCall2(numeric_round, x, Int32GetDatum(r->scale));
		if (DpNumCmp(x, r->lo) < 0)
			x = r->lo;
		else if (DpNumCmp(x, r->hi) > 0)
			x = r->hi;
		scale = DatumGetInt32(DirectFunctionCall1(numeric_scale, x));
	}
	if (canonical && scale > 0 && DatumGetInt32(DirectFunctionCall1(numeric_min_scale, x)) < scale)
		x = DirectFunctionCall1(numeric_trim_scale, x);
	return x;
}

/* dp_pg.domain_read(numeric, numeric, numeric): see DpReadNumeric (scale bounded, not trimmed). */
Datum
dp_domain_read_numeric(PG_FUNCTION_ARGS)
{
	return DpReadNumeric(fcinfo, false);
}

/*
 * dp_pg.domain_key_read(numeric, numeric, numeric): the same, canonical
 * (trailing zeros trimmed), for GROUP BY keys: a division's digits depend on
 * its operands' scales, so a key computed from 1.50 and from 1.5 must see
 * the same operand (DESIGN 8.8).
 */
Datum
dp_domain_key_read_numeric(PG_FUNCTION_ARGS)
{
	return DpReadNumeric(fcinfo, true);
}

/* dp_pg.domain_read(date, date, date): clamped to [lo, hi] (infinities too). */
Datum
dp_domain_read_date(PG_FUNCTION_ARGS)
{
	DateADT		x = PG_GETARG_DATEADT(0);
	DateADT		lo = PG_GETARG_DATEADT(1);
	DateADT		hi = PG_GETARG_DATEADT(2);

	PG_RETURN_DATEADT(Min(Max(x, lo), hi));
}

/* dp_pg.domain_read(timestamp, ...) and (timestamptz, ...): clamped to [lo, hi] (infinities too). */
Datum
dp_domain_read_timestamp(PG_FUNCTION_ARGS)
{
	Timestamp	x = PG_GETARG_TIMESTAMP(0);
	Timestamp	lo = PG_GETARG_TIMESTAMP(1);
	Timestamp	hi = PG_GETARG_TIMESTAMP(2);

	PG_RETURN_TIMESTAMP(Min(Max(x, lo), hi));
}
