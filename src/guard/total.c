/*
 * guard/total.c — dp_pg's total operators: the arithmetic that runs on an
 * analyst's rows in place of PostgreSQL's operators (bounds.c writes them),
 * so that no value a row may hold can make an accepted expression raise an
 * error.  An error is an output: raised only when some row reaches it, it
 * would answer a yes/no question about that row.
 *
 * Each function stands for the SQL named beside it and returns what
 * PostgreSQL returns wherever PostgreSQL returns a value.  Where
 * PostgreSQL's operator raises, it returns instead:
 *
 *   dp_pg.total_add(a, b)       a + b    an overflow: the type's extreme of its sign
 *   dp_pg.total_sub(a, b)       a - b      (integers their range, real +-FLT_MAX,
 *   dp_pg.total_mul(a, b)       a * b      double +-DBL_MAX, numeric +-1e300);
 *                                          a float underflow: 0
 *   dp_pg.total_div(a, b)       a / b    b = 0: NULL; otherwise as above
 *   dp_pg.total_mod(a, b)       a % b    b = 0: NULL
 *   dp_pg.total_div_trunc(a, b) div(a, b)  b = 0: NULL
 *   dp_pg.total_neg(a)          -a       the most negative integer: the largest
 *   dp_pg.total_abs(a)          abs(a)   likewise
 *   dp_pg.total_int2(x) ...     x::int2, x::int4, x::int8: beyond the range its
 *     total_int4, total_int8               extreme, NaN NULL
 *   dp_pg.total_float4(x)       x::real    beyond FLT_MAX +-FLT_MAX, too small 0
 *   dp_pg.total_float8(x)       x::float8  likewise for a numeric beyond a double
 *   dp_pg.total_numeric(x)      x::numeric a float beyond +-1e300: +-1e300
 *   dp_pg.total_numeric_typmod(x, t)  x::numeric(p, s)  beyond what fits: its extreme
 *   dp_pg.total_date_add(d, n)  d + n    beyond dp_pg's window of dates (500 BC to
 *   dp_pg.total_date_sub(d, n)  d - n      200000 AD): the window's edge
 *   dp_pg.total_date_diff(a, b) a - b    an infinite date: NULL
 *
 * Numeric results are also kept to about 128 significant digits (so that
 * the time of a step cannot depend on how long a row's value makes its
 * result) and within +-1e300 (and NaN, +-Infinity): a
 * value PostgreSQL holds but no double does (up to 1e131072) is never made,
 * so the numeric functions the guard still lets PostgreSQL compute (floor,
 * ceil, round, trunc, sign, and a cast to float through these) only ever see
 * values on which they cannot fail: every numeric an accepted expression
 * computes with is a domain read (clamped into its domain and +-1e300), a
 * constant (checked while planning), a field of a date (bounded), an
 * integer, or the result of one of these functions.  Floats need no such
 * care: no float function the guard admits raises on any float.
 *
 * The plan-time interval arithmetic of bounds.c still chooses the bounds of
 * sums and averages and refuses expressions that would overflow anywhere in
 * their domains (so that an analyst learns it from the refusal, not from a
 * saturated answer), but privacy no longer rests on it: a wrong interval can
 * only make an answer less accurate.
 *
 * dp_pg.clamp_float8(x numeric, lo, hi) is the total conversion of a numeric
 * column to float8 clamped to an aggregate's bounds (a translated avg, or
 * dp_sum(amount, 0.0, 100.0) as drivers bind doubles): the row checks write
 * it in place of numeric's cast to float8 (rowexpr.c).
 *
 * These are the guard's functions: an analyst's query that calls one is
 * refused (guard.c), as are calls to the domain reads.
 *
 * Layer guard/, floor rows (docs/development.md): calls only the guard's
 * refusal (floor base), while planning; at run time PostgreSQL's number and
 * date functions.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/float.h"
#include "utils/numeric.h"

#include "guard/floor_rows.h"

PG_FUNCTION_INFO_V1(dp_clamp_float8);
PG_FUNCTION_INFO_V1(dp_total_add);
PG_FUNCTION_INFO_V1(dp_total_sub);
PG_FUNCTION_INFO_V1(dp_total_mul);
PG_FUNCTION_INFO_V1(dp_total_div);
PG_FUNCTION_INFO_V1(dp_total_mod);
PG_FUNCTION_INFO_V1(dp_total_div_trunc);
PG_FUNCTION_INFO_V1(dp_total_neg);
PG_FUNCTION_INFO_V1(dp_total_abs);
PG_FUNCTION_INFO_V1(dp_total_int2);
PG_FUNCTION_INFO_V1(dp_total_int4);
PG_FUNCTION_INFO_V1(dp_total_int8);
PG_FUNCTION_INFO_V1(dp_total_float4);
PG_FUNCTION_INFO_V1(dp_total_float8);
PG_FUNCTION_INFO_V1(dp_total_numeric);
PG_FUNCTION_INFO_V1(dp_total_numeric_typmod);
PG_FUNCTION_INFO_V1(dp_total_date_add);
PG_FUNCTION_INFO_V1(dp_total_date_sub);
PG_FUNCTION_INFO_V1(dp_total_date_diff);

/* ------------------------------------------------------------------------
 * While planning: the functions bounds.c writes
 * ------------------------------------------------------------------------
 */

/* Each kind's SQL name and argument types. */
static const struct
{
	DpTotalKind kind;
	const char *name;
	int			nargs;
	Oid			args[2];
}			dp_total_functions[] = {
	{DP_TOTAL_ADD, "total_add", 2, {ANYCOMPATIBLEOID, ANYCOMPATIBLEOID}},
	{DP_TOTAL_SUB, "total_sub", 2, {ANYCOMPATIBLEOID, ANYCOMPATIBLEOID}},
	{DP_TOTAL_MUL, "total_mul", 2, {ANYCOMPATIBLEOID, ANYCOMPATIBLEOID}},
	{DP_TOTAL_DIV, "total_div", 2, {ANYCOMPATIBLEOID, ANYCOMPATIBLEOID}},
	{DP_TOTAL_MOD, "total_mod", 2, {ANYCOMPATIBLEOID, ANYCOMPATIBLEOID}},
	{DP_TOTAL_DIV_TRUNC, "total_div_trunc", 2, {NUMERICOID, NUMERICOID}},
	{DP_TOTAL_NEG, "total_neg", 1, {ANYELEMENTOID}},
	{DP_TOTAL_ABS, "total_abs", 1, {ANYELEMENTOID}},
	{DP_TOTAL_INT2, "total_int2", 1, {ANYOID}},
	{DP_TOTAL_INT4, "total_int4", 1, {ANYOID}},
	{DP_TOTAL_INT8, "total_int8", 1, {ANYOID}},
	{DP_TOTAL_FLOAT4, "total_float4", 1, {ANYOID}},
	{DP_TOTAL_FLOAT8, "total_float8", 1, {ANYOID}},
	{DP_TOTAL_NUMERIC, "total_numeric", 1, {ANYOID}},
	{DP_TOTAL_NUMERIC_TYPMOD, "total_numeric_typmod", 2, {NUMERICOID, INT4OID}},
	{DP_TOTAL_DATE_ADD, "total_date_add", 2, {DATEOID, INT4OID}},
	{DP_TOTAL_DATE_SUB, "total_date_sub", 2, {DATEOID, INT4OID}},
	{DP_TOTAL_DATE_DIFF, "total_date_diff", 2, {DATEOID, DATEOID}},
};

/* See guard.h. */
Oid
DpTotalFunction(DpTotalKind kind)
{
	for (int i = 0; i < lengthof(dp_total_functions); i++)
		if (dp_total_functions[i].kind == kind)
		{
			Oid			fn = LookupFuncName(list_make2(makeString("dp_pg"), makeString((char *) dp_total_functions[i].name)),
											dp_total_functions[i].nargs, dp_total_functions[i].args, true);

			if (!OidIsValid(fn))
				DpGuardRefuse("the dp_pg installation is incomplete",
							  psprintf("dp_pg.%s is missing; ALTER EXTENSION dp_pg UPDATE.", dp_total_functions[i].name));
			return fn;
		}
	elog(ERROR, "dp_pg: no total operator of kind %d", (int) kind);
	return InvalidOid;
}

/* See guard.h. */
DpTotalKind
DpTotalKindOf(Oid fn)
{
	char	   *name;

	if (fn < FirstNormalObjectId)
		return DP_TOTAL_NONE;
	name = get_func_name(fn);
	if (name == NULL || strncmp(name, "total_", 6) != 0)
		return DP_TOTAL_NONE;
	for (int i = 0; i < lengthof(dp_total_functions); i++)
		if (strcmp(name, dp_total_functions[i].name) == 0)
			return get_namespace_name(get_func_namespace(fn)) != NULL &&
				strcmp(get_namespace_name(get_func_namespace(fn)), "dp_pg") == 0 ?
				dp_total_functions[i].kind : DP_TOTAL_NONE;
	return DP_TOTAL_NONE;
}

/* See guard.h. */
DpTotalKind
DpTotalCastTo(Oid type)
{
	switch (type)
	{
		case INT2OID:
			return DP_TOTAL_INT2;
		case INT4OID:
			return DP_TOTAL_INT4;
		case INT8OID:
			return DP_TOTAL_INT8;
		case FLOAT4OID:
			return DP_TOTAL_FLOAT4;
		case FLOAT8OID:
			return DP_TOTAL_FLOAT8;
		case NUMERICOID:
			return DP_TOTAL_NUMERIC;
		default:
			return DP_TOTAL_NONE;
	}
}

/* ------------------------------------------------------------------------
 * The call site's state: its argument type and numeric constants
 * ------------------------------------------------------------------------
 */

/* Made once per call site (fn_extra), in fn_mcxt. */
typedef struct DpTotalSite
{
	Oid			type;			/* the (first) argument's type */
	int32		typmod;			/* total_numeric_typmod: the typmod the limits below are for */
	Datum		nmax;			/* numeric 1e300, or the typmod's largest value */
	Datum		nmin;			/* numeric -1e300, or the typmod's smallest */
	Datum		nzero;			/* numeric 0 */
	Datum		ilo;			/* total_intN of a numeric: the integer type's range, as numeric */
	Datum		ihi;
} DpTotalSite;

/* numeric comparison (both detoasted). */
static inline int
DpNumCmp(Datum a, Datum b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, a, b));
}

/* A numeric from its text form. */
static Datum
DpNumericOf(const char *s)
{
	return DirectFunctionCall3(numeric_in, CStringGetDatum(s), ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/* The call site's state (argument argno's type), made on its first call. */
static DpTotalSite *
DpTotalSiteOf(FunctionCallInfo fcinfo)
{
	DpTotalSite *s = (DpTotalSite *) fcinfo->flinfo->fn_extra;

	if (s == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		s = palloc0(sizeof(DpTotalSite));
		s->type = get_fn_expr_argtype(fcinfo->flinfo, 0);
		s->typmod = -1;
		s->nmax = DpNumericOf("1e300");
		s->nmin = DpNumericOf("-1e300");
		s->nzero = DpNumericOf("0");
		MemoryContextSwitchTo(old);
		fcinfo->flinfo->fn_extra = s;
	}
	if (!OidIsValid(s->type))
		elog(ERROR, "dp_pg: could not determine the argument type of a total operator");
	return s;
}

/* ERROR for a type the total operators do not take (the guard never writes one). */
static void
DpTotalBadType(Oid type)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("dp_pg's total operators take int2, int4, int8, real, double precision and numeric, not %s",
					format_type_be(type))));
}

/* ------------------------------------------------------------------------
 * Numbers of each type
 * ------------------------------------------------------------------------
 */

/* A float8 result r of finite-or-not operands a, b: overflow saturates (underflow is r, 0). */
static inline float8
DpSat8(float8 r, float8 a, float8 b)
{
	if (unlikely(isinf(r)) && !isinf(a) && !isinf(b))
		return r > 0 ? DBL_MAX : -DBL_MAX;
	return r;
}

/* The same for real. */
static inline float4
DpSat4(float4 r, float4 a, float4 b)
{
	if (unlikely(isinf(r)) && !isinf(a) && !isinf(b))
		return r > 0 ? FLT_MAX : -FLT_MAX;
	return r;
}

/*
 * A numeric result kept within +-1e300 (NaN and infinities as they are),
 * and to about DP_TOTAL_DIGITS significant digits: PostgreSQL's exact
 * products and quotients grow by the digits of both operands, and a step's
 * time with them (a product of two 16,000-digit numbers takes milliseconds),
 * so that one row reaching a branch could be seen in the query's time.
 * Rounded where a value holds more digits than that (its size says so at
 * once): the time of every step stays bounded, whatever the row.
 */
#define DP_TOTAL_DIGITS 128

/*
 * True if numeric x is in the short format of PostgreSQL's numeric storage
 * (the first 16 bits after the length word: 10 in the top two bits), which
 * holds only values with a weight of at most 63 base-10000 digits (|x| <
 * 10^256) and a scale below 64.  The format is the on-disk one, fixed since
 * PostgreSQL 9.1 (pg_upgrade keeps numerics as they are): a short numeric
 * needs no comparison with +-1e300.
 */
static inline bool
DpNumericIsShort(Numeric x)
{
	uint16		header;

	memcpy(&header, VARDATA_ANY(x), sizeof(header));
	return (header & 0xC000) == 0x8000;
}

static Datum
DpNumKeep(DpTotalSite *s, Numeric r)
{
	Datum		d = NumericGetDatum(r);
	int			groups;

	if (!DpNumericIsShort(r))
	{
		if (numeric_is_nan(r) || numeric_is_inf(r))
			return d;
		if (DpNumCmp(d, s->nmax) > 0)
			return s->nmax;
		if (DpNumCmp(d, s->nmin) < 0)
			return s->nmin;
	}
	/* base-10000 digits of 2 bytes after a header of 2 (or 4) bytes */
	groups = ((int) VARSIZE_ANY_EXHDR(r) - 2) / 2;
	if (groups > DP_TOTAL_DIGITS / 4)
	{
		int32		scale = DatumGetInt32(DirectFunctionCall1(numeric_scale, d));

		d = DirectFunctionCall2(numeric_round, d, Int32GetDatum(scale - 4 * (groups - DP_TOTAL_DIGITS / 4)));
	}
	return d;
}

/* The sign of a numeric (-1, 0, 1; NaN 0). */
static int
DpNumSign(DpTotalSite *s, Numeric x)
{
	if (numeric_is_nan(x))
		return 0;
	return DpNumCmp(NumericGetDatum(x), s->nzero);
}

/* A numeric that overflowed with sign sign: +-1e300. */
static Datum
DpNumOverflow(DpTotalSite *s, int sign)
{
	return sign < 0 ? s->nmin : s->nmax;
}

/* Is numeric x zero? */
static bool
DpNumIsZero(DpTotalSite *s, Numeric x)
{
	return !numeric_is_nan(x) && !numeric_is_inf(x) && DpNumCmp(NumericGetDatum(x), s->nzero) == 0;
}

/* The operations of total_add .. total_mod. */
typedef enum DpTotalBinary
{
	DP_T_ADD,
	DP_T_SUB,
	DP_T_MUL,
	DP_T_DIV,
	DP_T_MOD
} DpTotalBinary;

/* Saturated integer of the sign of an overflow of a op b (op add, sub, mul or div). */
static inline int
DpOverflowSign(DpTotalBinary op, int64 a, int64 b)
{
	switch (op)
	{
		case DP_T_ADD:
			return a < 0 ? -1 : 1;
		case DP_T_SUB:
			return a < 0 ? -1 : 1;
		default:
			return ((a < 0) != (b < 0)) ? -1 : 1;
	}
}

/* a op b in int16; *isnull for a zero divisor. */
static int16
DpInt16Op(DpTotalBinary op, int16 a, int16 b, bool *isnull)
{
	int16		r = 0;
	bool		overflow = false;

	switch (op)
	{
		case DP_T_ADD:
			overflow = pg_add_s16_overflow(a, b, &r);
			break;
		case DP_T_SUB:
			overflow = pg_sub_s16_overflow(a, b, &r);
			break;
		case DP_T_MUL:
			overflow = pg_mul_s16_overflow(a, b, &r);
			break;
		case DP_T_DIV:
			if (b == 0)
				*isnull = true;
			else if (b == -1 && a == PG_INT16_MIN)
				overflow = true;
			else
				r = a / b;
			break;
		case DP_T_MOD:
			if (b == 0)
				*isnull = true;
			else
				r = (b == -1) ? 0 : a % b;
			break;
	}
	if (overflow)
		r = DpOverflowSign(op, a, b) < 0 ? PG_INT16_MIN : PG_INT16_MAX;
	return r;
}

/* a op b in int32; *isnull for a zero divisor. */
static int32
DpInt32Op(DpTotalBinary op, int32 a, int32 b, bool *isnull)
{
	int32		r = 0;
	bool		overflow = false;

	switch (op)
	{
		case DP_T_ADD:
			overflow = pg_add_s32_overflow(a, b, &r);
			break;
		case DP_T_SUB:
			overflow = pg_sub_s32_overflow(a, b, &r);
			break;
		case DP_T_MUL:
			overflow = pg_mul_s32_overflow(a, b, &r);
			break;
		case DP_T_DIV:
			if (b == 0)
				*isnull = true;
			else if (b == -1 && a == PG_INT32_MIN)
				overflow = true;
			else
				r = a / b;
			break;
		case DP_T_MOD:
			if (b == 0)
				*isnull = true;
			else
				r = (b == -1) ? 0 : a % b;
			break;
	}
	if (overflow)
		r = DpOverflowSign(op, a, b) < 0 ? PG_INT32_MIN : PG_INT32_MAX;
	return r;
}

/* a op b in int64; *isnull for a zero divisor. */
static int64
DpInt64Op(DpTotalBinary op, int64 a, int64 b, bool *isnull)
{
	int64		r = 0;
	bool		overflow = false;

	switch (op)
	{
		case DP_T_ADD:
			overflow = pg_add_s64_overflow(a, b, &r);
			break;
		case DP_T_SUB:
			overflow = pg_sub_s64_overflow(a, b, &r);
			break;
		case DP_T_MUL:
			overflow = pg_mul_s64_overflow(a, b, &r);
			break;
		case DP_T_DIV:
			if (b == 0)
				*isnull = true;
			else if (b == -1 && a == PG_INT64_MIN)
				overflow = true;
			else
				r = a / b;
			break;
		case DP_T_MOD:
			if (b == 0)
				*isnull = true;
			else
				r = (b == -1) ? 0 : a % b;
			break;
	}
	if (overflow)
		r = DpOverflowSign(op, a, b) < 0 ? PG_INT64_MIN : PG_INT64_MAX;
	return r;
}

/* a op b in float8 (no modulo); *isnull for a zero divisor. */
static float8
DpFloat8Op(DpTotalBinary op, float8 a, float8 b, bool *isnull)
{
	switch (op)
	{
		case DP_T_ADD:
			return DpSat8(a + b, a, b);
		case DP_T_SUB:
			return DpSat8(a - b, a, b);
		case DP_T_MUL:
			return DpSat8(a * b, a, b);
		case DP_T_DIV:
			if (b == 0.0)
			{
				*isnull = true;
				return 0;
			}
			return DpSat8(a / b, a, b);
		case DP_T_MOD:
			break;
	}
	DpTotalBadType(FLOAT8OID);
	return 0;
}

/* a op b in real (computed in real, as PostgreSQL's float4 operators do). */
static float4
DpFloat4Op(DpTotalBinary op, float4 a, float4 b, bool *isnull)
{
	switch (op)
	{
		case DP_T_ADD:
			return DpSat4(a + b, a, b);
		case DP_T_SUB:
			return DpSat4(a - b, a, b);
		case DP_T_MUL:
			return DpSat4(a * b, a, b);
		case DP_T_DIV:
			if (b == 0.0f)
			{
				*isnull = true;
				return 0;
			}
			return DpSat4(a / b, a, b);
		case DP_T_MOD:
			break;
	}
	DpTotalBadType(FLOAT4OID);
	return 0;
}

/* a op b in numeric (PostgreSQL's arithmetic, its errors reported, not raised); *isnull for a zero divisor. */
static Datum
DpNumericOp(DpTotalSite *s, DpTotalBinary op, Numeric a, Numeric b, bool *isnull)
{
	bool		err = false;
	Numeric		r = NULL;

	if ((op == DP_T_DIV || op == DP_T_MOD) && DpNumIsZero(s, b))
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (op)
	{
		case DP_T_ADD:
			r = numeric_add_opt_error(a, b, &err);
			break;
		case DP_T_SUB:
			r = numeric_sub_opt_error(a, b, &err);
			break;
		case DP_T_MUL:
			r = numeric_mul_opt_error(a, b, &err);
			break;
		case DP_T_DIV:
			r = numeric_div_opt_error(a, b, &err);
			break;
		case DP_T_MOD:
			r = numeric_mod_opt_error(a, b, &err);
			break;
	}
	if (err || r == NULL)
	{
		int			sa = DpNumSign(s, a),
					sb = DpNumSign(s, b);

		/* infinity % 0 and the like were NULL above; what is left overflowed */
		switch (op)
		{
			case DP_T_ADD:
				return DpNumOverflow(s, sa != 0 ? sa : sb);
			case DP_T_SUB:
				return DpNumOverflow(s, sa != 0 ? sa : -sb);
			case DP_T_MOD:
				*isnull = true;
				return (Datum) 0;
			default:
				return DpNumOverflow(s, sa * sb);
		}
	}
	return DpNumKeep(s, r);
}

/* total_add .. total_mod: a op b of the call site's type. */
static Datum
DpTotalBinaryCall(FunctionCallInfo fcinfo, DpTotalBinary op)
{
	DpTotalSite *s = DpTotalSiteOf(fcinfo);
	bool		isnull = false;
	Datum		r;

	switch (s->type)
	{
		case INT2OID:
			r = Int16GetDatum(DpInt16Op(op, PG_GETARG_INT16(0), PG_GETARG_INT16(1), &isnull));
			break;
		case INT4OID:
			r = Int32GetDatum(DpInt32Op(op, PG_GETARG_INT32(0), PG_GETARG_INT32(1), &isnull));
			break;
		case INT8OID:
			r = Int64GetDatum(DpInt64Op(op, PG_GETARG_INT64(0), PG_GETARG_INT64(1), &isnull));
			break;
		case FLOAT4OID:
			r = Float4GetDatum(DpFloat4Op(op, PG_GETARG_FLOAT4(0), PG_GETARG_FLOAT4(1), &isnull));
			break;
		case FLOAT8OID:
			r = Float8GetDatum(DpFloat8Op(op, PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1), &isnull));
			break;
		case NUMERICOID:
			r = DpNumericOp(s, op, PG_GETARG_NUMERIC(0), PG_GETARG_NUMERIC(1), &isnull);
			break;
		default:
			DpTotalBadType(s->type);
			return (Datum) 0;
	}
	if (isnull)
		PG_RETURN_NULL();
	return r;
}

/* dp_pg.total_add(a, b): a + b (see the file comment). */
Datum
dp_total_add(PG_FUNCTION_ARGS)
{
	return DpTotalBinaryCall(fcinfo, DP_T_ADD);
}

/* dp_pg.total_sub(a, b): a - b. */
Datum
dp_total_sub(PG_FUNCTION_ARGS)
{
	return DpTotalBinaryCall(fcinfo, DP_T_SUB);
}

/* dp_pg.total_mul(a, b): a * b. */
Datum
dp_total_mul(PG_FUNCTION_ARGS)
{
	return DpTotalBinaryCall(fcinfo, DP_T_MUL);
}

/* dp_pg.total_div(a, b): a / b (integers truncate towards zero). */
Datum
dp_total_div(PG_FUNCTION_ARGS)
{
	return DpTotalBinaryCall(fcinfo, DP_T_DIV);
}

/* dp_pg.total_mod(a, b): a % b (integers and numeric). */
Datum
dp_total_mod(PG_FUNCTION_ARGS)
{
	return DpTotalBinaryCall(fcinfo, DP_T_MOD);
}

/* A numeric kept within +-1e300 (for the inputs of functions without an error-reporting form). */
static Numeric
DpNumIn(DpTotalSite *s, Numeric x)
{
	return DatumGetNumeric(DpNumKeep(s, x));
}

/* dp_pg.total_div_trunc(a numeric, b numeric): div(a, b); b = 0: NULL. */
Datum
dp_total_div_trunc(PG_FUNCTION_ARGS)
{
	DpTotalSite *s = DpTotalSiteOf(fcinfo);
	Numeric		a = DpNumIn(s, PG_GETARG_NUMERIC(0));
	Numeric		b = PG_GETARG_NUMERIC(1);

	if (DpNumIsZero(s, b))
		PG_RETURN_NULL();
	/* |a| <= 1e300 and |b| >= 1e-16383 (or infinite): the quotient is far inside numeric's range */
	return DpNumKeep(s, DatumGetNumeric(DirectFunctionCall2(numeric_div_trunc, NumericGetDatum(a),
															  NumericGetDatum(b))));
}

/* dp_pg.total_neg(a): -a; the most negative integer gives the largest. */
Datum
dp_total_neg(PG_FUNCTION_ARGS)
{
	DpTotalSite *s = DpTotalSiteOf(fcinfo);

	switch (s->type)
	{
		case INT2OID:
			PG_RETURN_INT16(PG_GETARG_INT16(0) == PG_INT16_MIN ? PG_INT16_MAX : -PG_GETARG_INT16(0));
		case INT4OID:
			PG_RETURN_INT32(PG_GETARG_INT32(0) == PG_INT32_MIN ? PG_INT32_MAX : -PG_GETARG_INT32(0));
		case INT8OID:
			PG_RETURN_INT64(PG_GETARG_INT64(0) == PG_INT64_MIN ? PG_INT64_MAX : -PG_GETARG_INT64(0));
		case FLOAT4OID:
			PG_RETURN_FLOAT4(-PG_GETARG_FLOAT4(0));
		case FLOAT8OID:
			PG_RETURN_FLOAT8(-PG_GETARG_FLOAT8(0));
		case NUMERICOID:
			return DpNumKeep(s, DatumGetNumeric(DirectFunctionCall1(numeric_uminus, PG_GETARG_DATUM(0))));
		default:
			DpTotalBadType(s->type);
			return 0;
	}
}

/* dp_pg.total_abs(a): abs(a); the most negative integer gives the largest. */
Datum
dp_total_abs(PG_FUNCTION_ARGS)
{
	DpTotalSite *s = DpTotalSiteOf(fcinfo);

	switch (s->type)
	{
		case INT2OID:
			PG_RETURN_INT16(PG_GETARG_INT16(0) == PG_INT16_MIN ? PG_INT16_MAX : PG_GETARG_INT16(0) < 0 ? -PG_GETARG_INT16(0) : PG_GETARG_INT16(0));
		case INT4OID:
			PG_RETURN_INT32(PG_GETARG_INT32(0) == PG_INT32_MIN ? PG_INT32_MAX : PG_GETARG_INT32(0) < 0 ? -PG_GETARG_INT32(0) : PG_GETARG_INT32(0));
		case INT8OID:
			PG_RETURN_INT64(PG_GETARG_INT64(0) == PG_INT64_MIN ? PG_INT64_MAX : PG_GETARG_INT64(0) < 0 ? -PG_GETARG_INT64(0) : PG_GETARG_INT64(0));
		case FLOAT4OID:
			PG_RETURN_FLOAT4(fabsf(PG_GETARG_FLOAT4(0)));
		case FLOAT8OID:
			PG_RETURN_FLOAT8(fabs(PG_GETARG_FLOAT8(0)));
		case NUMERICOID:
			return DpNumKeep(s, DatumGetNumeric(DirectFunctionCall1(numeric_abs, PG_GETARG_DATUM(0))));
		default:
			DpTotalBadType(s->type);
			return 0;
	}
}

/* ------------------------------------------------------------------------
 * Conversions
 * ------------------------------------------------------------------------
 */

/* An infinite numeric as a double (+-Infinity). */
static float8
DpNumInf(Numeric x)
{
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, NumericGetDatum(x)));
}

/*
 * A numeric as a double, never an error: a finite value beyond a double
 * +-DBL_MAX, one too small 0, NaN NaN, the infinities infinite.
 */
static float8
DpNumericToDouble(Numeric x)
{
	char	   *text;
	float8		v;

	if (numeric_is_nan(x))
		return get_float8_nan();
	if (numeric_is_inf(x))
		return DpNumInf(x);
	text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(x)));
	v = strtod(text, NULL);		/* HUGE_VAL beyond a double, 0 (or a subnormal) below */
	pfree(text);
	if (isinf(v))
		v = v > 0 ? DBL_MAX : -DBL_MAX;
	return v;
}

/*
 * x (of the call site's type) as an integer in [lo, hi] (the target type's
 * range), rounded as PostgreSQL's casts round (floats to the nearest even,
 * numeric half away from zero); false for NaN (NULL).
 */
static bool
DpToInteger(FunctionCallInfo fcinfo, DpTotalSite *s, int64 lo, int64 hi, int64 *out)
{
	switch (s->type)
	{
		case INT2OID:
			*out = Min(Max((int64) PG_GETARG_INT16(0), lo), hi);
			return true;
		case INT4OID:
			*out = Min(Max((int64) PG_GETARG_INT32(0), lo), hi);
			return true;
		case INT8OID:
			*out = Min(Max(PG_GETARG_INT64(0), lo), hi);
			return true;
		case FLOAT4OID:
		case FLOAT8OID:
			{
				float8		v = s->type == FLOAT4OID ? (float8) PG_GETARG_FLOAT4(0) : PG_GETARG_FLOAT8(0);

				if (isnan(v))
					return false;
				v = rint(v);
				/* lo and hi are exact as doubles or -2^63 .. 2^63 - 1, whose upper end is not */
				if (v < (float8) lo)
					*out = lo;
				else if (v >= -(float8) PG_INT64_MIN && hi == PG_INT64_MAX)
					*out = hi;
				else if (v > (float8) hi)
					*out = hi;
				else
					*out = (int64) v;
				return true;
			}
		case NUMERICOID:
			{
				Numeric		x = PG_GETARG_NUMERIC(0);

				if (numeric_is_nan(x))
					return false;
				if (s->ilo == (Datum) 0)
				{
					MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

					s->ilo = NumericGetDatum(int64_to_numeric(lo));
					s->ihi = NumericGetDatum(int64_to_numeric(hi));
					MemoryContextSwitchTo(old);
				}
				if (DpNumCmp(NumericGetDatum(x), s->ilo) <= 0)
					*out = lo;
				else if (DpNumCmp(NumericGetDatum(x), s->ihi) >= 0)
					*out = hi;
				else
					/* inside an integer range: rounds to an integer inside it */
					*out = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(x)));
				return true;
			}
		default:
			DpTotalBadType(s->type);
			return 0;
	}
}

/* dp_pg.total_int2(x): x::int2 (see the file comment). */
Datum
dp_total_int2(PG_FUNCTION_ARGS)
{
	int64		v;

	if (!DpToInteger(fcinfo, DpTotalSiteOf(fcinfo), PG_INT16_MIN, PG_INT16_MAX, &v))
		PG_RETURN_NULL();
	PG_RETURN_INT16((int16) v);
}

/* dp_pg.total_int4(x): x::int4. */
Datum
dp_total_int4(PG_FUNCTION_ARGS)
{
	int64		v;

	if (!DpToInteger(fcinfo, DpTotalSiteOf(fcinfo), PG_INT32_MIN, PG_INT32_MAX, &v))
		PG_RETURN_NULL();
	PG_RETURN_INT32((int32) v);
}

/* dp_pg.total_int8(x): x::int8. */
Datum
dp_total_int8(PG_FUNCTION_ARGS)
{
	int64		v;

	if (!DpToInteger(fcinfo, DpTotalSiteOf(fcinfo), PG_INT64_MIN, PG_INT64_MAX, &v))
		PG_RETURN_NULL();
	PG_RETURN_INT64(v);
}

/* x (of the call site's type) as a double, never an error. */
static float8
DpToDouble(FunctionCallInfo fcinfo, DpTotalSite *s)
{
	switch (s->type)
	{
		case INT2OID:
			return PG_GETARG_INT16(0);
		case INT4OID:
			return PG_GETARG_INT32(0);
		case INT8OID:
			return (float8) PG_GETARG_INT64(0);
		case FLOAT4OID:
			return PG_GETARG_FLOAT4(0);
		case FLOAT8OID:
			return PG_GETARG_FLOAT8(0);
		case NUMERICOID:
			return DpNumericToDouble(PG_GETARG_NUMERIC(0));
		default:
			DpTotalBadType(s->type);
			return 0;
	}
}

/* dp_pg.total_float8(x): x::float8. */
Datum
dp_total_float8(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(DpToDouble(fcinfo, DpTotalSiteOf(fcinfo)));
}

/* dp_pg.total_float4(x): x::real (beyond FLT_MAX +-FLT_MAX; too small 0). */
Datum
dp_total_float4(PG_FUNCTION_ARGS)
{
	DpTotalSite *s = DpTotalSiteOf(fcinfo);
	float8		v = DpToDouble(fcinfo, s);
	float4		r = (float4) v;

	/* an infinite float stays infinite, as in PostgreSQL; a finite one saturates */
	if (isinf(r) && !isinf(v))
		r = v > 0 ? FLT_MAX : -FLT_MAX;
	PG_RETURN_FLOAT4(r);
}

/* dp_pg.total_numeric(x): x::numeric, a float beyond +-1e300 as +-1e300. */
Datum
dp_total_numeric(PG_FUNCTION_ARGS)
{
	DpTotalSite *s = DpTotalSiteOf(fcinfo);

	switch (s->type)
	{
		case INT2OID:
			PG_RETURN_NUMERIC(int64_to_numeric(PG_GETARG_INT16(0)));
		case INT4OID:
			PG_RETURN_NUMERIC(int64_to_numeric(PG_GETARG_INT32(0)));
		case INT8OID:
			PG_RETURN_NUMERIC(int64_to_numeric(PG_GETARG_INT64(0)));
		case FLOAT4OID:
		case FLOAT8OID:
			{
				float8		v = s->type == FLOAT4OID ? (float8) PG_GETARG_FLOAT4(0) : PG_GETARG_FLOAT8(0);

				/* NaN and the infinities convert (numeric holds them); finite values within +-1e300 */
				if (isfinite(v))
					v = Min(Max(v, -1e300), 1e300);
				if (s->type == FLOAT4OID && isfinite(v))
					return DirectFunctionCall1(float4_numeric, Float4GetDatum((float4) v));
				return DirectFunctionCall1(float8_numeric, Float8GetDatum(v));
			}
		case NUMERICOID:
			return DpNumKeep(s, PG_GETARG_NUMERIC(0));
		default:
			DpTotalBadType(s->type);
			return 0;
	}
}

/* The typmod's precision and scale (false: none). */
static bool
DpTypmodParts(int32 typmod, int *precision, int *scale)
{
	if (typmod < (int32) VARHDRSZ)
		return false;
	*precision = ((typmod - VARHDRSZ) >> 16) & 0xffff;
	*scale = (((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;
	return true;
}

/*
 * dp_pg.total_numeric_typmod(x numeric, typmod int4): x::numeric(p, s).  A
 * value that does not fit (or an infinity) is the largest value of that
 * sign that does: 10^(p - s) - 10^-s.
 */
Datum
dp_total_numeric_typmod(PG_FUNCTION_ARGS)
{
	DpTotalSite *s = DpTotalSiteOf(fcinfo);
	Numeric		x = PG_GETARG_NUMERIC(0);
	int32		typmod = PG_GETARG_INT32(1);
	int			precision,
				scale;
	Datum		r;

	if (!DpTypmodParts(typmod, &precision, &scale) || numeric_is_nan(x))
		return DirectFunctionCall2(numeric, NumericGetDatum(x), Int32GetDatum(typmod));
	if (s->typmod != typmod)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
		Datum		one = DpNumericOf(psprintf("1e%d", precision - scale));
		Datum		unit = DpNumericOf(psprintf("1e%d", -scale));

		s->nmax = DirectFunctionCall2(numeric, DirectFunctionCall2(numeric_sub, one, unit), Int32GetDatum(typmod));
		s->nmin = DirectFunctionCall1(numeric_uminus, s->nmax);
		s->typmod = typmod;
		MemoryContextSwitchTo(old);
	}
	if (numeric_is_inf(x))
		return DpNumInf(x) > 0 ? s->nmax : s->nmin;
	/* rounded to the scale first (numeric(p, s) rounds, then checks that it fits) */
	r = DirectFunctionCall2(numeric_round, NumericGetDatum(DpNumIn(s, x)), Int32GetDatum(scale));
	if (DpNumCmp(r, s->nmax) > 0)
		return s->nmax;
	if (DpNumCmp(r, s->nmin) < 0)
		return s->nmin;
	return DirectFunctionCall2(numeric, r, Int32GetDatum(typmod));
}

/* ------------------------------------------------------------------------
 * Dates
 * ------------------------------------------------------------------------
 */

/* dp_pg's window of dates (500 BC to 200000 AD, as keys.c reads key columns), in days since 2000. */
static void
DpDateWindow(int64 *lo, int64 *hi)
{
	*lo = date2j(DP_WINDOW_LO_YEAR, 1, 1) - POSTGRES_EPOCH_JDATE;
	*hi = date2j(DP_WINDOW_HI_YEAR, 1, 1) - POSTGRES_EPOCH_JDATE;
}

/* A finite date d moved by n days, kept in the window. */
static DateADT
DpDateMove(DateADT d, int64 n)
{
	int64		lo,
				hi,
				r;

	if (DATE_NOT_FINITE(d))
		return d;				/* an infinite date stays so, as in PostgreSQL */
	DpDateWindow(&lo, &hi);
	r = Min(Max((int64) d + n, lo), hi);
	return (DateADT) r;
}

/* dp_pg.total_date_add(d date, n int4): d + n. */
Datum
dp_total_date_add(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATEADT(DpDateMove(PG_GETARG_DATEADT(0), PG_GETARG_INT32(1)));
}

/* dp_pg.total_date_sub(d date, n int4): d - n. */
Datum
dp_total_date_sub(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATEADT(DpDateMove(PG_GETARG_DATEADT(0), -(int64) PG_GETARG_INT32(1)));
}

/* dp_pg.total_date_diff(a date, b date): a - b in days; an infinite date gives NULL. */
Datum
dp_total_date_diff(PG_FUNCTION_ARGS)
{
	DateADT		a = PG_GETARG_DATEADT(0);
	DateADT		b = PG_GETARG_DATEADT(1);
	int64		r;

	if (DATE_NOT_FINITE(a) || DATE_NOT_FINITE(b))
		PG_RETURN_NULL();
	r = (int64) a - (int64) b;
	PG_RETURN_INT32((int32) Min(Max(r, PG_INT32_MIN), PG_INT32_MAX));
}

/* dp_pg.clamp_float8(numeric, float8, float8), or InvalidOid. */
Oid
DpClampFloat8Function(void)
{
	Oid			argtypes[3] = {NUMERICOID, FLOAT8OID, FLOAT8OID};

	return LookupFuncName(list_make2(makeString("dp_pg"), makeString("clamp_float8")), 3, argtypes, true);
}

/*
 * dp_pg.clamp_float8(x numeric, lower float8, upper float8): x clamped to
 * [lower, upper], as float8.  Total (it runs on private rows): x is
 * converted only when it lies between two finite doubles; NaN stays NaN
 * (which dp_sum and dp_avg skip, as for float8 columns); a value too small
 * for a double becomes 0 instead of an error; bounds that are not finite or
 * not ordered give NULL.
 */
typedef struct DpClampBounds
{
	double		lo,
				hi;
	Datum		nlo,
				nhi;			/* as numeric, in fn_mcxt */
} DpClampBounds;

Datum
dp_clamp_float8(PG_FUNCTION_ARGS)
{
	Datum		x = PG_GETARG_DATUM(0);
	double		lo = PG_GETARG_FLOAT8(1);
	double		hi = PG_GETARG_FLOAT8(2);
	DpClampBounds *b = (DpClampBounds *) fcinfo->flinfo->fn_extra;
	char	   *text;
	double		v;

	if (!isfinite(lo) || !isfinite(hi) || lo > hi)
		PG_RETURN_NULL();		/* never an error: it may run on private rows */
	if (numeric_is_nan(DatumGetNumeric(x)))
		PG_RETURN_FLOAT8(get_float8_nan());	/* skipped by dp_sum / dp_avg, like a float NaN */
	/* the bounds as numeric, made once per call site (they are constants) */
	if (b == NULL || b->lo != lo || b->hi != hi)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		if (b == NULL)
			b = fcinfo->flinfo->fn_extra = palloc(sizeof(DpClampBounds));
		b->lo = lo;
		b->hi = hi;
		b->nlo = DirectFunctionCall1(float8_numeric, Float8GetDatum(lo));
		b->nhi = DirectFunctionCall1(float8_numeric, Float8GetDatum(hi));
		MemoryContextSwitchTo(old);
	}
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, x, b->nlo)) < 0)
		PG_RETURN_FLOAT8(lo);
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, x, b->nhi)) > 0)
		PG_RETURN_FLOAT8(hi);
	text = DatumGetCString(DirectFunctionCall1(numeric_out, x));
	v = strtod(text, NULL);
	pfree(text);
	PG_RETURN_FLOAT8(Min(Max(v, lo), hi));
}
