/*
 * guard/keys.c — generalising expressions of a column: date_trunc, extract
 * and date_part, width_bucket, floor / ceil / round / trunc, casts to date
 * and between the date and time types, AT TIME ZONE '<zone>', lower / upper,
 * date or time shifted by a constant interval, and the text functions of BI tools' string filters
 * (strpos / position, starts_with, left, right, substr, length), and COLLATE
 * (a key compared bytewise, guard/canonical.c).  They may be GROUP BY keys (released
 * through partition selection, groups.c) and appear in row predicates
 * (WHERE, FILTER, dp aggregate values), like a column.
 *
 * Every expression evaluated on protected rows must be total (guard.h,
 * invariant 4).  These functions are not, on every input: date_trunc fails
 * when the truncated value leaves the range of timestamps (4713-11-24 BC is
 * truncated to a month before it), a date beyond 294276 AD cannot become a
 * timestamp, width_bucket fails on NaN.  So the guard accepts them in a
 * grammar whose argument is always the column read through its *key window*
 * (dp_pg.key_window): a finite date or time outside [500 BC, 200000 AD], or
 * a NaN, becomes NULL; a numeric beyond ±1e300 becomes ±Infinity, one nearer
 * to zero than 1e-300 becomes 0; infinities stay.  Inside the window every step of the grammar is total: each moves a
 * value by at most 1000 years (date_trunc to a millennium, a time zone's
 * offset, a shift by at most 100 years), at most four such steps are
 * allowed, and the window keeps more than 4200 years from either end of the
 * timestamp range; numbers stay far from every numeric and float8 limit;
 * narrowing casts to integers are allowed only on extract / date_part, whose
 * fields are small inside the window (to int4: every field but epoch).
 * Constants (units, time zones, buckets, scales, intervals) are checked now:
 * the whole expression is evaluated once, while planning, on the window's
 * edges, far outside it, on infinities, NaN and NULL, so an invalid unit or
 * bucket fails the query for every table alike.
 *
 * Layer guard/, floor rows (docs/development.md): may call guard/'s floors
 * base, fences, reads and rows, the aggregates, the release path, the ledger,
 * common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/scansup.h"
#include "pgtime.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "guard/floor_rows.h"

PG_FUNCTION_INFO_V1(dp_key_window_date);
PG_FUNCTION_INFO_V1(dp_key_window_timestamp);
PG_FUNCTION_INFO_V1(dp_key_window_float8);
PG_FUNCTION_INFO_V1(dp_key_window_float4);
PG_FUNCTION_INFO_V1(dp_key_window_numeric);
PG_FUNCTION_INFO_V1(dp_key_finite_numeric);
PG_FUNCTION_INFO_V1(dp_key_finite_float8);

/* The key window: 500 BC (astronomical year -499) to 200000 AD, as Julian days. */
#define DP_KEY_LO_YEAR	DP_WINDOW_LO_YEAR
#define DP_KEY_HI_YEAR	DP_WINDOW_HI_YEAR
#define DP_KEY_MAX_MOVES 4
#define DP_KEY_MAX_SHIFT_DAYS 36600	/* 100 years, a little more */

static int
DpKeyLoJulian(void)
{
	return date2j(DP_KEY_LO_YEAR, 1, 1);
}

static int
DpKeyHiJulian(void)
{
	return date2j(DP_KEY_HI_YEAR, 1, 1);
}

/* dp_pg.key_window(date): a finite date outside the window is NULL. */
Datum
dp_key_window_date(PG_FUNCTION_ARGS)
{
	DateADT		d = PG_GETARG_DATEADT(0);

	if (!DATE_NOT_FINITE(d) &&
		(d < DpKeyLoJulian() - POSTGRES_EPOCH_JDATE || d > DpKeyHiJulian() - POSTGRES_EPOCH_JDATE))
		PG_RETURN_NULL();
	PG_RETURN_DATEADT(d);
}

/* dp_pg.key_window(timestamp) and (timestamptz): a finite time outside the window is NULL. */
Datum
dp_key_window_timestamp(PG_FUNCTION_ARGS)
{
	Timestamp	t = PG_GETARG_TIMESTAMP(0);

	if (!TIMESTAMP_NOT_FINITE(t) &&
		(t < (Timestamp) (DpKeyLoJulian() - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY ||
		 t > (Timestamp) (DpKeyHiJulian() - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY))
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMP(t);
}

/* dp_pg.key_window(float8): NaN is NULL. */
Datum
dp_key_window_float8(PG_FUNCTION_ARGS)
{
	float8		x = PG_GETARG_FLOAT8(0);

	if (isnan(x))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(x);
}

/* dp_pg.key_window(real): NaN is NULL. */
Datum
dp_key_window_float4(PG_FUNCTION_ARGS)
{
	float4		x = PG_GETARG_FLOAT4(0);

	if (isnan(x))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT4(x);
}

/*
 * dp_pg.key_window(numeric): NaN is NULL, beyond ±1e300 is ±Infinity, and a
 * non-zero value nearer to zero than 1e-300 is 0 (so that it converts to
 * float8 without an underflow error).
 */
Datum
dp_key_window_numeric(PG_FUNCTION_ARGS)
{
	Numeric		x = PG_GETARG_NUMERIC(0);
	Datum	   *lim = (Datum *) fcinfo->flinfo->fn_extra;

	if (numeric_is_nan(x))
		PG_RETURN_NULL();
	if (numeric_is_inf(x))
		PG_RETURN_NUMERIC(x);
	if (lim == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		lim = fcinfo->flinfo->fn_extra = palloc(7 * sizeof(Datum));
		lim[0] = DirectFunctionCall1(float8_numeric, Float8GetDatum(-1e300));
		lim[1] = DirectFunctionCall1(float8_numeric, Float8GetDatum(1e300));
		lim[2] = DirectFunctionCall1(float8_numeric, Float8GetDatum(-get_float8_infinity()));
		lim[3] = DirectFunctionCall1(float8_numeric, Float8GetDatum(get_float8_infinity()));
		lim[4] = DirectFunctionCall1(float8_numeric, Float8GetDatum(-1e-300));
		lim[5] = DirectFunctionCall1(float8_numeric, Float8GetDatum(1e-300));
		lim[6] = DirectFunctionCall1(float8_numeric, Float8GetDatum(0.0));
		MemoryContextSwitchTo(old);
	}
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(x), lim[0])) < 0)
		PG_RETURN_DATUM(lim[2]);
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(x), lim[1])) > 0)
		PG_RETURN_DATUM(lim[3]);
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(x), lim[4])) > 0 &&
		DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(x), lim[5])) < 0)
		PG_RETURN_DATUM(lim[6]);
	PG_RETURN_NUMERIC(x);
}

/*
 * dp_pg.key_finite(numeric) and (float8): NaN and ±Infinity are NULL (what
 * extract gives on an infinite date, before a cast to an integer).
 */
Datum
dp_key_finite_numeric(PG_FUNCTION_ARGS)
{
	Numeric		x = PG_GETARG_NUMERIC(0);

	if (numeric_is_nan(x) || numeric_is_inf(x))
		PG_RETURN_NULL();
	PG_RETURN_NUMERIC(x);
}

Datum
dp_key_finite_float8(PG_FUNCTION_ARGS)
{
	float8		x = PG_GETARG_FLOAT8(0);

	if (isnan(x) || isinf(x))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(x);
}

/* dp_pg.key_finite(type) of numeric or float8. */
static Oid
DpKeyFiniteFunction(Oid type)
{
	return LookupFuncName(list_make2(makeString("dp_pg"), makeString("key_finite")), 1, &type, true);
}

/* dp_pg.key_window(type), or InvalidOid for a type without one. */
static Oid
DpKeyWindowFunction(Oid type)
{
	switch (type)
	{
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case FLOAT8OID:
		case FLOAT4OID:
		case NUMERICOID:
			return LookupFuncName(list_make2(makeString("dp_pg"), makeString("key_window")), 1, &type, true);
		default:
			return InvalidOid;
	}
}

/* True if node is dp_pg.key_window(<expression>) (a column read through its key window). */
bool
DpIsKeyWindowCall(Node *node)
{
	return node != NULL && IsA(node, FuncExpr) && list_length(((FuncExpr *) node)->args) == 1 &&
		((FuncExpr *) node)->funcid == DpKeyWindowFunction(exprType(linitial(((FuncExpr *) node)->args)));
}

/* Context of the grammar's walk. */
typedef struct DpKeyContext
{
	Bitmapset  *rtis;			/* range-table entries whose columns may be read */
	const char *where;
	int			nvars;
	int			moves;
	Var		   *var;			/* the column (before its window) */
	bool		params;			/* a constant argument is a bound parameter: checked before the query runs */
} DpKeyContext;

/*
 * The bind-time checks of the generalising expressions with bound
 * parameters in the query being validated (DpTakeKeyChecks hands them to
 * shape.c, which adds them to the query's WHERE).
 */
static List *key_checks = NIL;

/* The pending bind-time checks, and none any more. */
List *
DpTakeKeyChecks(void)
{
	List	   *checks = key_checks;

	key_checks = NIL;
	return checks;
}

static Node *DpKeyMutator(Node *node, DpKeyContext *cxt);

/*
 * A constant argument of a generalising function: folded now, never NULL;
 * or a bound parameter (or stable functions of those), computed once before
 * the query runs (dp_pg.run_constant) and checked then (DpGeneralise).
 */
static Node *
DpKeyConstArg(Node *arg, DpKeyContext *cxt)
{
	if (!IsA(arg, Const) && !contain_var_clause(arg) && !contain_mutable_functions(arg) &&
		!contain_agg_clause(arg) && !contain_subplans(arg) && !expression_returns_set(arg))
		arg = eval_const_expressions(NULL, copyObject(arg));
	if (IsA(arg, Const) && !((Const *) arg)->constisnull)
		return arg;
	if (IsA(arg, Param) ? ((Param *) arg)->paramkind == PARAM_EXTERN : DpIsRunConstantExpr(arg))
	{
		cxt->params = true;
		return DpRunConstant(arg);
	}
	DpGuardRefuse("the units, buckets and scales of a generalising function must be constants or bound parameters",
				  psprintf("Found another argument in %s.", cxt->where));
	return NULL;
}

/* An argument that must be known while planning (a zone, a shift, buckets): a constant. */
static Const *
DpKeyLiteral(Node *arg, DpKeyContext *cxt)
{
	if (!IsA(arg, Const))
		DpGuardRefuse("the time zones, shifts and buckets of a generalising function must be constants",
					  psprintf("Found a bound parameter or an expression in %s; they are checked while planning.", cxt->where));
	return (Const *) arg;
}

/* The first argument is the value; the others must be constants. */
static Node *
DpKeyValueAndConsts(FuncExpr *f, DpKeyContext *cxt, int valueargno)
{
	FuncExpr   *copy = (FuncExpr *) copyObject(f);
	ListCell   *lc;
	int			i = 0;

	foreach(lc, copy->args)
	{
		if (i == valueargno)
			lfirst(lc) = DpKeyMutator(lfirst(lc), cxt);
		else
			lfirst(lc) = DpKeyConstArg(lfirst(lc), cxt);
		i++;
	}
	return (Node *) copy;
}

/* A constant interval shifting a date or time by at most about 100 years. */
static bool
DpSmallInterval(Const *c)
{
	Interval   *iv;

	if (c->consttype != INTERVALOID)
		return false;
	iv = DatumGetIntervalP(c->constvalue);
	return iv->month <= 1200 && iv->month >= -1200 &&
		iv->day <= DP_KEY_MAX_SHIFT_DAYS && iv->day >= -DP_KEY_MAX_SHIFT_DAYS &&
		iv->time <= (int64) DP_KEY_MAX_SHIFT_DAYS * USECS_PER_DAY &&
		iv->time >= -(int64) DP_KEY_MAX_SHIFT_DAYS * USECS_PER_DAY;
}

/* The field of extract / date_part (a constant text), lower-cased. */
static char *
DpExtractField(FuncExpr *f)
{
	Const	   *c = (Const *) linitial(f->args);
	text	   *t = DatumGetTextPP(c->constvalue);

	return downcase_truncate_identifier(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), false);
}

/*
 * How a function (or an operator's function) of the grammar treats its
 * arguments.  Every rule is total on values inside the key window.
 */
typedef enum DpKeyRule
{
	DP_KEY_NONE,
	DP_KEY_UNARY,				/* one argument: casts, floor / ceil / round / trunc, length */
	DP_KEY_VALUE_CONSTS,		/* the value, then constants: round(x, n), trunc(x, n), left, right, substr */
	DP_KEY_SEARCH,				/* strpos, position, starts_with: a deterministic collation */
	DP_KEY_CASE_MAP,			/* lower, upper: a superuser's collation, its locale opened now */
	DP_KEY_MOVE,				/* a unit or zone, then the value, moved by less than 1000 years */
	DP_KEY_FIELD,				/* extract / date_part: a field, then the value */
	DP_KEY_BUCKET,				/* width_bucket(value, low, high, count) */
	DP_KEY_TO_INT,				/* a narrowing cast: only of extract's small fields */
	DP_KEY_SHIFT_INTERVAL,		/* date or time +/- a constant interval */
	DP_KEY_SHIFT_DAYS			/* date +/- a constant number of days */
} DpKeyRule;

static const struct
{
	Oid			fn;
	DpKeyRule	rule;
}			dp_key_rules[] = {
	/* exact conversions; a time zone's offset stays within the window's margin */
	{F_NUMERIC_FLOAT8, DP_KEY_UNARY}, {F_FLOAT8_NUMERIC, DP_KEY_UNARY},
	{F_DATE_TIMESTAMP, DP_KEY_UNARY}, {F_DATE_TIMESTAMPTZ, DP_KEY_UNARY},
	{F_TIMESTAMP_TIMESTAMPTZ, DP_KEY_UNARY}, {F_TIMESTAMPTZ_TIMESTAMP, DP_KEY_UNARY},
	{F_TIMESTAMP_DATE, DP_KEY_UNARY}, {F_TIMESTAMPTZ_DATE, DP_KEY_UNARY},
	{F_FLOOR_FLOAT8, DP_KEY_UNARY}, {F_FLOOR_NUMERIC, DP_KEY_UNARY},
	{F_CEIL_FLOAT8, DP_KEY_UNARY}, {F_CEIL_NUMERIC, DP_KEY_UNARY},
	{F_CEILING_FLOAT8, DP_KEY_UNARY}, {F_CEILING_NUMERIC, DP_KEY_UNARY},
	{F_ROUND_FLOAT8, DP_KEY_UNARY}, {F_ROUND_NUMERIC, DP_KEY_UNARY},
	{F_TRUNC_FLOAT8, DP_KEY_UNARY}, {F_TRUNC_NUMERIC, DP_KEY_UNARY},
	{F_TEXT_BPCHAR, DP_KEY_UNARY}, {F_LENGTH_TEXT, DP_KEY_UNARY},
	{F_CHAR_LENGTH_TEXT, DP_KEY_UNARY}, {F_CHARACTER_LENGTH_TEXT, DP_KEY_UNARY},
	{F_OCTET_LENGTH_TEXT, DP_KEY_UNARY},
	{F_ROUND_NUMERIC_INT4, DP_KEY_VALUE_CONSTS}, {F_TRUNC_NUMERIC_INT4, DP_KEY_VALUE_CONSTS},
	/* a negative substring length fails for every row alike (the trials) */
	{F_LEFT, DP_KEY_VALUE_CONSTS}, {F_RIGHT, DP_KEY_VALUE_CONSTS},
	{F_SUBSTR_TEXT_INT4, DP_KEY_VALUE_CONSTS}, {F_SUBSTRING_TEXT_INT4, DP_KEY_VALUE_CONSTS},
	{F_SUBSTR_TEXT_INT4_INT4, DP_KEY_VALUE_CONSTS}, {F_SUBSTRING_TEXT_INT4_INT4, DP_KEY_VALUE_CONSTS},
	{F_STRPOS, DP_KEY_SEARCH}, {F_POSITION_TEXT_TEXT, DP_KEY_SEARCH}, {F_STARTS_WITH, DP_KEY_SEARCH},
	{F_LOWER_TEXT, DP_KEY_CASE_MAP}, {F_UPPER_TEXT, DP_KEY_CASE_MAP},
	/* AT TIME ZONE '<zone>': a zone's offset, less than a week */
	{F_DATE_TRUNC_TEXT_TIMESTAMP, DP_KEY_MOVE}, {F_DATE_TRUNC_TEXT_TIMESTAMPTZ, DP_KEY_MOVE},
	{F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT, DP_KEY_MOVE},
	{F_TIMEZONE_TEXT_TIMESTAMPTZ, DP_KEY_MOVE}, {F_TIMEZONE_TEXT_TIMESTAMP, DP_KEY_MOVE},
	{F_DATE_PART_TEXT_DATE, DP_KEY_FIELD}, {F_DATE_PART_TEXT_TIMESTAMP, DP_KEY_FIELD},
	{F_DATE_PART_TEXT_TIMESTAMPTZ, DP_KEY_FIELD}, {F_EXTRACT_TEXT_DATE, DP_KEY_FIELD},
	{F_EXTRACT_TEXT_TIMESTAMP, DP_KEY_FIELD}, {F_EXTRACT_TEXT_TIMESTAMPTZ, DP_KEY_FIELD},
	{F_WIDTH_BUCKET_FLOAT8_FLOAT8_FLOAT8_INT4, DP_KEY_BUCKET},
	{F_WIDTH_BUCKET_NUMERIC_NUMERIC_NUMERIC_INT4, DP_KEY_BUCKET},
	{F_INT8_NUMERIC, DP_KEY_TO_INT}, {F_INT4_NUMERIC, DP_KEY_TO_INT},
	{F_INT8_FLOAT8, DP_KEY_TO_INT}, {F_INT4_FLOAT8, DP_KEY_TO_INT},
	{F_DATE_PL_INTERVAL, DP_KEY_SHIFT_INTERVAL}, {F_DATE_MI_INTERVAL, DP_KEY_SHIFT_INTERVAL},
	{F_TIMESTAMP_PL_INTERVAL, DP_KEY_SHIFT_INTERVAL}, {F_TIMESTAMP_MI_INTERVAL, DP_KEY_SHIFT_INTERVAL},
	{F_TIMESTAMPTZ_PL_INTERVAL, DP_KEY_SHIFT_INTERVAL}, {F_TIMESTAMPTZ_MI_INTERVAL, DP_KEY_SHIFT_INTERVAL},
	{F_DATE_PLI, DP_KEY_SHIFT_DAYS}, {F_DATE_MII, DP_KEY_SHIFT_DAYS},
};

/*
 * A time zone argument must name a zone of the time zone database (or be a
 * POSIX zone specification): an abbreviation ('SAT', 'WST') depends on
 * timezone_abbreviations, which may change between planning and a run of
 * the plan, and would then fail on the first row that reaches it.  A zone
 * name never fails (it is looked up after the abbreviations).
 */
static void
DpCheckZone(Node *zone, DpKeyContext *cxt)
{
	char	   *name = TextDatumGetCString(DpKeyLiteral(zone, cxt)->constvalue);

	if (pg_tzset(name) == NULL)
		DpGuardRefuse("a time zone on a protected table must be a time zone name",
					  psprintf("\"%s\" in %s is not a zone of the time zone database (an abbreviation depends on "
							   "timezone_abbreviations); write a name such as 'UTC' or 'Europe/Paris'.", name, cxt->where));
}

/* The grammar's rule for function fn (widening numeric casts are unary). */
static DpKeyRule
DpKeyRuleOf(Oid fn)
{
	if (DpIsWideningCast(fn))
		return DP_KEY_UNARY;
	for (int i = 0; i < lengthof(dp_key_rules); i++)
		if (dp_key_rules[i].fn == fn)
			return dp_key_rules[i].rule;
	return DP_KEY_NONE;
}

/* A narrowing cast's argument: extract / date_part of a small field (to int4: not epoch)? */
static bool
DpSmallField(FuncExpr *cast, Node *arg)
{
	return IsA(arg, FuncExpr) && DpKeyRuleOf(((FuncExpr *) arg)->funcid) == DP_KEY_FIELD &&
		IsA(linitial(((FuncExpr *) arg)->args), Const) &&
		(cast->funcid == F_INT8_NUMERIC || cast->funcid == F_INT8_FLOAT8 ||
		 strcmp(DpExtractField((FuncExpr *) arg), "epoch") != 0) &&
		OidIsValid(DpKeyFiniteFunction(exprType(arg)));
}

/* A date or time shifted by a constant (operator op): at most about 100 years. */
static Node *
DpKeyShift(OpExpr *op, DpKeyRule rule, DpKeyContext *cxt)
{
	Const	   *c = DpKeyLiteral(DpKeyConstArg(lsecond(op->args), cxt), cxt);
	bool		small;

	if (rule == DP_KEY_SHIFT_INTERVAL)
		small = DpSmallInterval(c);
	else
		small = DatumGetInt32(c->constvalue) <= DP_KEY_MAX_SHIFT_DAYS &&
			DatumGetInt32(c->constvalue) >= -DP_KEY_MAX_SHIFT_DAYS;
	if (!small)
		DpGuardRefuse("a date or time on a protected table may be shifted by at most 100 years",
					  psprintf("Found a larger shift in %s.", cxt->where));
	cxt->moves++;
	linitial(op->args) = DpKeyMutator(linitial(op->args), cxt);
	lsecond(op->args) = c;
	return (Node *) op;
}

/* A function call of the grammar, by its rule. */
static Node *
DpKeyFunction(FuncExpr *f, DpKeyRule rule, DpKeyContext *cxt)
{
	switch (rule)
	{
		case DP_KEY_NONE:
		case DP_KEY_SHIFT_INTERVAL:
		case DP_KEY_SHIFT_DAYS:
			break;
		case DP_KEY_UNARY:
			if (list_length(f->args) != 1)
				break;
			return expression_tree_mutator((Node *) f, DpKeyMutator, cxt);
		case DP_KEY_CASE_MAP:
			DpCheckCollation(f->inputcollid, TEXTOID, false, cxt->where);
			return expression_tree_mutator((Node *) f, DpKeyMutator, cxt);
		case DP_KEY_SEARCH:
			/* substring searches fail under a nondeterministic collation */
			DpCheckCollation(f->inputcollid, TEXTOID, true, cxt->where);
			return DpKeyValueAndConsts(f, cxt, 0);
		case DP_KEY_VALUE_CONSTS:
			return DpKeyValueAndConsts(f, cxt, 0);
		case DP_KEY_MOVE:
			{
				FuncExpr   *m;

				cxt->moves++;
				m = (FuncExpr *) DpKeyValueAndConsts(f, cxt, 1);
				/* the zone of date_trunc(unit, t, zone) and of AT TIME ZONE */
				if (f->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT)
					DpCheckZone(lthird(m->args), cxt);
				else if (f->funcid == F_TIMEZONE_TEXT_TIMESTAMPTZ || f->funcid == F_TIMEZONE_TEXT_TIMESTAMP)
					DpCheckZone(linitial(m->args), cxt);
				return (Node *) m;
			}
		case DP_KEY_FIELD:
			return DpKeyValueAndConsts(f, cxt, 1);
		case DP_KEY_BUCKET:
			{
				FuncExpr   *w = (FuncExpr *) DpKeyValueAndConsts(f, cxt, 0);
				int32		n;

				for (int b = 1; b <= 3; b++)
					(void) DpKeyLiteral(list_nth(w->args, b), cxt);
				n = DatumGetInt32(((Const *) lfourth(w->args))->constvalue);

				/* bounds far from float8's limits (the trials check the rest) */
				if (f->funcid == F_WIDTH_BUCKET_FLOAT8_FLOAT8_FLOAT8_INT4)
					for (int b = 1; b <= 2; b++)
					{
						float8		v = DatumGetFloat8(((Const *) list_nth(w->args, b))->constvalue);

						if (!(v >= -1e300 && v <= 1e300))
							DpGuardRefuse("width_bucket's bounds must lie within +-1e300",
										  psprintf("Found %g in %s.", v, cxt->where));
					}
				/* count + 1 for a value above the range must not overflow */
				if (n <= 0 || n >= PG_INT32_MAX)
					DpGuardRefuse("width_bucket needs between 1 and 2147483646 buckets",
								  psprintf("Found %d in %s.", n, cxt->where));
				return (Node *) w;
			}
		case DP_KEY_TO_INT:
			{
				/*
				 * narrowing: only the small fields of extract / date_part,
				 * made finite first (an infinite date has an infinite year)
				 */
				Node	   *arg = linitial(f->args);

				if (IsA(arg, FuncExpr) && list_length(((FuncExpr *) arg)->args) == 1 &&
					((FuncExpr *) arg)->funcid == DpKeyFiniteFunction(exprType(arg)))
					arg = linitial(((FuncExpr *) arg)->args);	/* a rewritten key */
				if (DpSmallField(f, arg))
				{
					FuncExpr   *cast = (FuncExpr *) copyObject(f);

					linitial(cast->args) = makeFuncExpr(DpKeyFiniteFunction(exprType(arg)), exprType(arg),
														list_make1(DpKeyMutator(arg, cxt)),
														InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
					return (Node *) cast;
				}
				break;
			}
	}
	/* a column already read through its key window (a rewritten key) */
	if (list_length(f->args) == 1 && IsA(linitial(f->args), Var) &&
		f->funcid == DpKeyWindowFunction(exprType(linitial(f->args))))
	{
		(void) DpKeyMutator(linitial(f->args), cxt);
		return (Node *) copyObject(f);
	}
	DpGuardRefuse("this function is not allowed on a protected table",
				  psprintf("Function %s in %s could raise errors that reveal private values; on a column only "
						   "comparisons, widening casts and the generalising functions date_trunc, extract, "
						   "date_part, width_bucket, floor, ceil, round, trunc, lower, upper, casts to date, "
						   "strpos, starts_with, left, right, substr and length are allowed.",
						   get_func_name(f->funcid) ? get_func_name(f->funcid) : "?", cxt->where));
	return NULL;
}

static Node *
DpKeyMutator(Node *node, DpKeyContext *cxt)
{
	if (node == NULL)
		return NULL;
	switch (nodeTag(node))
	{
		case T_Var:
			{
				Var		   *v = (Var *) node;
				Oid			window = DpKeyWindowFunction(v->vartype);

				if (v->varlevelsup != 0 || v->varattno <= 0 || !bms_is_member(v->varno, cxt->rtis))
					DpGuardRefuse("system columns and whole-row references are not allowed",
								  psprintf("Found one in %s.", cxt->where));
				cxt->nvars++;
				cxt->var = v;
				if (OidIsValid(window))
					return (Node *) makeFuncExpr(window, v->vartype, list_make1(copyObject(v)),
												 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
				switch (v->vartype)
				{
					case INT2OID:
					case INT4OID:
					case INT8OID:
					case TEXTOID:
					case VARCHAROID:
					case BPCHAROID:
						return node;
					default:
						DpGuardRefuse("this column cannot be generalised",
									  psprintf("Generalising functions apply to dates, times, numbers and text (%s).",
											   cxt->where));
				}
				return NULL;
			}
		case T_List:
		case T_RelabelType:
			return expression_tree_mutator(node, DpKeyMutator, cxt);
		case T_CollateExpr:
			/* <column> COLLATE "C": a superuser's collation, its locale opened now (canonical.c) */
			DpCheckCollation(((CollateExpr *) node)->collOid, exprType(node), false, cxt->where);
			return expression_tree_mutator(node, DpKeyMutator, cxt);
		case T_FuncExpr:
			return DpKeyFunction((FuncExpr *) node, DpKeyRuleOf(((FuncExpr *) node)->funcid), cxt);
		case T_OpExpr:
			{
				OpExpr	   *op = (OpExpr *) copyObject(node);
				DpKeyRule	rule;

				op->opfuncid = get_opcode(op->opno);
				rule = DpKeyRuleOf(op->opfuncid);
				if (rule == DP_KEY_SHIFT_INTERVAL || rule == DP_KEY_SHIFT_DAYS)
					return DpKeyShift(op, rule, cxt);
				break;
			}
		default:
			break;
	}
	DpGuardRefuse("this expression is not allowed on a protected table",
				  psprintf("Functions, casts and arithmetic on private columns in %s could raise errors that reveal values; "
						   "only comparisons, LIKE, AND/OR/NOT, IS NULL, CASE WHEN, COALESCE and generalising functions "
						   "(date_trunc, extract, width_bucket, floor, round, casts to date) are allowed.", cxt->where));
	return NULL;
}

/* Mutator: the column becomes a constant (for the trial evaluation). */
static Node *
DpKeyTrialMutator(Node *node, Const *c)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
		return (Node *) copyObject(c);
	return expression_tree_mutator(node, DpKeyTrialMutator, c);
}

/* Evaluate expr with its column replaced by c (errors are raised now, for every table alike). */
static void
DpKeyTrial(Node *expr, Const *c)
{
	EState	   *estate = CreateExecutorState();
	MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
	Expr	   *e = expression_planner((Expr *) DpKeyTrialMutator(expr, c));
	ExprState  *es = ExecInitExpr(e, NULL);
	bool		isnull;

	(void) ExecEvalExprSwitchContext(es, GetPerTupleExprContext(estate), &isnull);
	MemoryContextSwitchTo(old);
	FreeExecutorState(estate);
}

/*
 * The trial of expr on c: now, or, when a bound parameter is among its
 * constants, before the query runs (a run-time constant of the query's
 * WHERE, dp_pg.run_check(<expr on c>), computed with the bound values
 * before anything is read or charged: an error then is the same for every
 * table).
 */
static void
DpKeyTrialOrCheck(Node *expr, Const *c, bool params)
{
	Oid			check;

	if (!params)
	{
		DpKeyTrial(expr, c);
		return;
	}
	{
		Oid			anyel = ANYELEMENTOID;

		check = LookupFuncName(list_make2(makeString("dp_pg"), makeString("run_check")), 1, &anyel, true);
	}
	if (!OidIsValid(check))
		DpGuardRefuse("the dp_pg installation is incomplete", "dp_pg.run_check is missing.");
	key_checks = lappend(key_checks,
						 DpRunConstant((Node *) makeFuncExpr(check, BOOLOID, list_make1(DpKeyTrialMutator(expr, c)),
															 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL)));
}

/* dp_pg.run_check(x): true, whatever x (its argument is what is checked: computed without error). */
PG_FUNCTION_INFO_V1(dp_run_check);

Datum
dp_run_check(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(true);
}

/* A constant of the column's type from its text form. */
static Const *
DpKeyTrialConst(Var *v, const char *text)
{
	Oid			typinput;
	Oid			typioparam;

	if (text == NULL)
		return makeNullConst(v->vartype, v->vartypmod, v->varcollid);
	getTypeInputInfo(v->vartype, &typinput, &typioparam);
	return makeConst(v->vartype, v->vartypmod, v->varcollid, get_typlen(v->vartype),
					 OidInputFunctionCall(typinput, (char *) text, typioparam, -1),
					 false, get_typbyval(v->vartype));
}

/* Is node a generalising expression's top (a function or operator of the grammar)? */
bool
DpIsGeneralising(Node *node)
{
	if (IsA(node, FuncExpr))
		return DpKeyRuleOf(((FuncExpr *) node)->funcid) != DP_KEY_NONE;
	if (IsA(node, OpExpr))
	{
		DpKeyRule	rule = DpKeyRuleOf(get_opcode(((OpExpr *) node)->opno));

		return rule == DP_KEY_SHIFT_INTERVAL || rule == DP_KEY_SHIFT_DAYS;
	}
	return false;
}

/*
 * A generalising expression of one column (see the file comment), with the
 * column read through its key window; refused (42501) if it is not one.
 * Its constants are checked now by evaluating it on the window's edges and
 * beyond, infinities, NaN and NULL.
 */
Node *
DpGeneralise(Node *node, Bitmapset *rtis, const char *where)
{
	static const char *const datetimes[] = {"2000-02-29 12:34:56", "0500-01-01 BC", "200000-01-01",
	"4713-11-24 BC", "infinity", "-infinity", "294276-12-31", NULL};
	static const char *const dates[] = {"2000-02-29", "0500-01-01 BC", "200000-01-01", "4713-11-24 BC",
	"5874897-12-31", "infinity", "-infinity", NULL};
	static const char *const numbers[] = {"0", "-1.5", "1e300", "-1e300", "1e308", "-1e308", "Infinity",
	"-Infinity", "NaN", NULL};
	static const char *const bigger[] = {"1e1000", "-1e1000", "1e-1000", "-1e-16000", NULL};
	static const char *const reals[] = {"0", "-1.5", "3e38", "-3e38", "Infinity", "-Infinity", "NaN", NULL};
	static const char *const ints[] = {"0", "-1", "32767", "-32768", NULL};
	static const char *const texts[] = {"", "aZ", NULL};
	DpKeyContext cxt = {rtis, where, 0, 0, NULL, false};
	Node	   *result = DpKeyMutator(node, &cxt);
	const char *const *trials;

	if (cxt.nvars != 1)
		DpGuardRefuse("a generalising expression reads exactly one column",
					  psprintf("Found one of %d columns in %s.", cxt.nvars, where));
	if (cxt.moves > DP_KEY_MAX_MOVES)
		DpGuardRefuse("too many date_trunc and interval steps in one expression",
					  psprintf("At most %d in %s.", DP_KEY_MAX_MOVES, where));
	switch (cxt.var->vartype)
	{
		case DATEOID:
			trials = dates;
			break;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			trials = datetimes;
			break;
		case NUMERICOID:
		case FLOAT8OID:
			trials = numbers;
			break;
		case FLOAT4OID:
			trials = reals;
			break;
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
			trials = texts;
			break;
		default:
			trials = ints;
			break;
	}
	for (;; trials++)
	{
		DpKeyTrialOrCheck(result, DpKeyTrialConst(cxt.var, *trials), cxt.params);
		if (*trials == NULL)
			break;
	}
	if (cxt.var->vartype == NUMERICOID)
		for (trials = bigger; *trials; trials++)
			DpKeyTrialOrCheck(result, DpKeyTrialConst(cxt.var, *trials), cxt.params);
	return result;
}


/* ------------------------------------------------------------------------
 * Public values of a generalising key
 * ------------------------------------------------------------------------
 */

#define DP_KEY_MAX_LISTED 100000

/* Fields of extract / date_part whose values are known whatever the data. */
static const struct
{
	const char *field;
	int			lo,
				hi;
}			dp_fixed_fields[] = {
	{"month", 1, 12}, {"quarter", 1, 4}, {"dow", 0, 6}, {"isodow", 1, 7}, {"hour", 0, 23},
	{"minute", 0, 59}, {"day", 1, 31}, {"doy", 1, 366}, {"week", 1, 53},
};

/* Walker: the key's column. */
static bool
DpKeyFindVar(Node *node, Var **var)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		*var = (Var *) node;
		return false;
	}
	return expression_tree_walker(node, DpKeyFindVar, var);
}

/* A text[] of the strings keys[0..n-1]. */
static ArrayType *
DpTextArray(char **keys, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(keys[i]);
	return construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT);
}

/*
 * The complete list of a generalising GROUP BY key's values when it is
 * public (text[]), or NULL: width_bucket (0 .. count + 1: its constants say
 * them), extract / date_part of a field with fixed values (month 1..12, dow
 * 0..6, hour 0..23, ...), and any generalising expression of a column of
 * relid (range-table entry keyrti) with declared public keys, on those keys.
 * The list is made of public values only, so it needs no partition
 * selection: rows whose key is not listed are ignored, like rows with
 * undeclared keys.
 */
ArrayType *
DpGeneralisedPublicKeys(Node *key, Oid relid, int keyrti)
{
	Node	   *top = key;
	Var		   *var = NULL;
	ArrayType  *declared;

	/* a bound parameter among its constants: its values are not known while planning */
	if (DpContainsParamWalker(key, NULL))
		return NULL;
	/* integer casts of a bucket or a field */
	if (IsA(top, FuncExpr) && (DpKeyRuleOf(((FuncExpr *) top)->funcid) == DP_KEY_TO_INT ||
							   DpIsWideningCast(((FuncExpr *) top)->funcid)))
		top = linitial(((FuncExpr *) top)->args);
	if (IsA(top, FuncExpr) && list_length(((FuncExpr *) top)->args) == 1 &&
		((FuncExpr *) top)->funcid == DpKeyFiniteFunction(exprType(top)))
		top = linitial(((FuncExpr *) top)->args);
	if (IsA(top, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) top;
		DpKeyRule	rule = DpKeyRuleOf(f->funcid);
		int			lo = 0,
					hi = -1;
		char	  **keys;

		if (rule == DP_KEY_BUCKET && IsA(lfourth(f->args), Const))
		{
			int32		count = DatumGetInt32(((Const *) lfourth(f->args))->constvalue);

			if (count >= 1 && count <= DP_KEY_MAX_LISTED - 2)
				hi = count + 1;
		}
		else if (rule == DP_KEY_FIELD && IsA(linitial(f->args), Const))
		{
			char	   *field = DpExtractField(f);

			for (int i = 0; i < lengthof(dp_fixed_fields); i++)
				if (strcmp(field, dp_fixed_fields[i].field) == 0)
				{
					lo = dp_fixed_fields[i].lo;
					hi = dp_fixed_fields[i].hi;
				}
		}
		if (hi >= lo)
		{
			keys = palloc(sizeof(char *) * (hi - lo + 1));
			for (int v = lo; v <= hi; v++)
				keys[v - lo] = psprintf("%d", v);
			return DpTextArray(keys, hi - lo + 1);
		}
	}

	/* an expression of a column with declared public keys, on those keys */
	(void) DpKeyFindVar(key, &var);
	if (var == NULL || var->varno != keyrti || var->varlevelsup != 0 || var->varattno <= 0)
		return NULL;
	declared = DpPublicKeys(relid, get_attname(relid, var->varattno, false));
	if (declared == NULL || ArrayGetNItems(ARR_NDIM(declared), ARR_DIMS(declared)) > 10 * DP_KEY_MAX_LISTED)
		return NULL;
	return DpKeyOnValues(key, (Node *) var, declared);	/* on the declared keys (bounds.c) */
}

/* ------------------------------------------------------------------------
 * Keys evaluated on public values
 * ------------------------------------------------------------------------
 */

/* Mutator: subexpression part becomes parameter $1. */
Node *
DpPartToParam(Node *node, Node *part)
{
	if (node == NULL)
		return NULL;
	if (equal(node, part))
	{
		Param	   *p = makeNode(Param);

		p->paramkind = PARAM_EXTERN;
		p->paramid = 1;
		p->paramtype = exprType(part);
		p->paramtypmod = exprTypmod(part);
		p->paramcollid = exprCollation(part);
		p->location = -1;
		return (Node *) p;
	}
	return expression_tree_mutator(node, DpPartToParam, part);
}

/* qsort comparator of C strings. */
static int
DpCompareCStrings(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * The text forms of expr with its subexpression part replaced by each of
 * values[0..n-1] (text forms of part's type): out[i], NULL where expr is
 * NULL.  Evaluated now, on public values only.
 */
void
DpEvalOnValues(Node *expr, Node *part, Datum *values, int n, char **out)
{
	EState	   *estate = CreateExecutorState();
	MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
	ExprContext *econtext = GetPerTupleExprContext(estate);
	ParamListInfo params = makeParamList(1);
	ExprState  *es = ExecInitExpr(expression_planner((Expr *) DpPartToParam(expr, part)), NULL);
	Oid			typinput,
				typioparam,
				typoutput;
	bool		typvarlena;

	MemoryContextSwitchTo(old);
	getTypeInputInfo(exprType(part), &typinput, &typioparam);
	getTypeOutputInfo(exprType(expr), &typoutput, &typvarlena);
	params->numParams = 1;
	params->params[0].ptype = exprType(part);
	params->params[0].pflags = PARAM_FLAG_CONST;
	econtext->ecxt_param_list_info = params;
	for (int i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		v;

		params->params[0].value = OidInputFunctionCall(typinput, TextDatumGetCString(values[i]), typioparam,
													   exprTypmod(part));
		params->params[0].isnull = false;
		v = ExecEvalExprSwitchContext(es, econtext, &isnull);
		out[i] = isnull ? NULL : OidOutputFunctionCall(typoutput, v);
		ResetExprContext(econtext);
	}
	FreeExecutorState(estate);
}

/* The distinct values (text[], sorted, no NULL) of key with its part replaced by each of values (text[]). */
ArrayType *
DpKeyOnValues(Node *key, Node *part, ArrayType *values)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			m = 0;
	char	  **out;
	Datum	   *result;

	deconstruct_array(values, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			elems[m++] = elems[i];
	out = palloc(sizeof(char *) * Max(m, 1));
	DpEvalOnValues(key, part, elems, m, out);
	n = 0;
	for (int i = 0; i < m; i++)
		if (out[i] != NULL)
			out[n++] = out[i];
	qsort(out, n, sizeof(char *), DpCompareCStrings);
	result = palloc(sizeof(Datum) * Max(n, 1));
	m = 0;
	for (int i = 0; i < n; i++)
		if (m == 0 || strcmp(out[i], out[i - 1]) != 0)
			result[m++] = CStringGetTextDatum(out[i]);
	return construct_array(result, m, TEXTOID, -1, false, TYPALIGN_INT);
}
