/*
 * guard/bounds.c — row expressions with derived bounds: arithmetic on
 * columns whose values are known to lie in a domain (invariant 4).
 *
 * What it accepts.  + - * / % and unary minus of integers, floats and
 * numeric (between columns and constants), abs, sign, floor, ceil, round,
 * trunc (round(x, n) with a constant n), casts between the number types and
 * from boolean to integer, numeric(p, s), date - date, date +/- integer,
 * extract / date_part of a date or time, CASE WHEN / COALESCE / NULLIF /
 * GREATEST / LEAST of those, over columns that have a value domain (CHECK
 * constraints, dp_pg.set_domain, or the range of the declared public keys),
 * constants, and the generalising expressions of keys.c whose values are
 * known (extract's fixed fields).  Metabase's FLOOR((age - 0.0) / 10.0) *
 * 10.0, dbplyr's EXTRACT('dow' FROM DATE(d) + 0) + 1.0, sum(amount *
 * quantity), AVG(2026 - birth_year).
 *
 Why it is total: by construction, not by the intervals.  Every column is
 * read through dp_pg.domain_read(col, lo, hi) (domainread.c), which is total
 * and puts the value inside the domain: NaN becomes NULL, +-Infinity and
 * values outside are clamped to the domain (cut to +-1e300, and for dates
 * and times to dp_pg's window of 500 BC to 200000 AD), a float or numeric
 * nearer to zero than 2^-60 of the domain's larger bound becomes 0, a
 * numeric gets a bounded scale (in a GROUP BY key, dp_pg.domain_key_read
 * also trims trailing zeros: a canonical operand).  Every step that
 * PostgreSQL could fail on — + - * / %, unary minus, abs, div, the casts
 * that narrow, numeric(p, s), date arithmetic — is rewritten to dp_pg's
 * total operator for it (total.c: saturation, NULL for a zero divisor, 0
 * for an underflow); the steps kept (floor, ceil, round, trunc, sign, the
 * widening casts, CASE, COALESCE, NULLIF, GREATEST, LEAST) cannot fail on
 * any value those produce; extract / date_part is tried while planning on
 * a date or time of every kind (finite, the window's edges, +-infinity) of
 * its argument's type, so a field the type lacks fails for every table
 * alike, uncharged.  So no row can make an accepted expression raise an
 * error, whatever the table holds, whatever the domains say.
 *
 * The intervals.  The interval of every subexpression is computed from its
 * operands' (interval arithmetic, in doubles rounded outwards by 1e-12 of
 * each bound).  They are the bounds of a translated sum / avg / quantile
 * (translate.c) and of variances (moments.c), and an expression is refused
 * while planning where its interval shows a step that would saturate or
 * divide by zero (integers beyond their type, floats and numerics beyond
 * +-1e300, a divisor's interval holding zero, a cast that does not fit):
 * the analyst learns it from the refusal rather than from a clamped
 * answer.  A wrong interval costs accuracy (the aggregates clamp to their
 * bounds), never privacy.
 *
 * Run-time constants (bound parameters, CURRENT_DATE) are not allowed in
 * arithmetic: their values, and so the intervals, are not known while
 * planning.  Conditions (CASE WHEN, a comparison cast to an integer) are
 * checked by shape.c's row checks.
 *
 * Keys.  A GROUP BY key that is such an expression (or a comparison, a CASE)
 * is released through partition selection, or listed without it when its
 * values are public: a boolean, a CASE whose results are constants, an
 * expression of one column with declared public keys (keys.c evaluates it on
 * them) or of one of extract's fixed fields (evaluated on the field's
 * values).  Its released form is canonical (DpCanonicalKey): a numeric
 * without trailing zeros, a float without -0, so a released key never shows
 * how one row spelled its value (DESIGN 8.8).
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"


#include "catalog/pg_collation.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "parser/scansup.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "guard/guard.h"
#include "guc.h"


#define DP_BOUNDS_MAX8		DP_READ_MAX	/* float8 and numeric values stay within */
#define DP_BOUNDS_MAX4		1e38	/* float4 values stay within */
#define DP_BOUNDS_MARGIN	1e-12	/* relative outward rounding of every bound */
#define DP_BOUNDS_MAX_DIGITS 100	/* significant digits of a numeric constant in arithmetic */

/* The steps of the grammar. */
typedef enum DpBoundsOp
{
	DP_OP_NONE,
	DP_OP_ADD,
	DP_OP_SUB,
	DP_OP_MUL,
	DP_OP_DIV,
	DP_OP_MOD,
	DP_OP_NEG,
	DP_OP_POS,
	DP_OP_ABS,
	DP_OP_SIGN,
	DP_OP_FLOOR,
	DP_OP_CEIL,
	DP_OP_ROUND,
	DP_OP_TRUNC,
	DP_OP_ROUND_SCALE,
	DP_OP_TRUNC_SCALE,
	DP_OP_CAST,
	DP_OP_TYPMOD,
	DP_OP_DATE_DIFF,
	DP_OP_DATE_ADD,
	DP_OP_DATE_SUB,
	DP_OP_TIME_FIELD
} DpBoundsOp;

static const struct
{
	Oid			fn;
	DpBoundsOp	op;
}			dp_bounds_ops[] = {
	{F_INT2PL, DP_OP_ADD}, {F_INT4PL, DP_OP_ADD}, {F_INT8PL, DP_OP_ADD}, {F_INT24PL, DP_OP_ADD},
	{F_INT42PL, DP_OP_ADD}, {F_INT48PL, DP_OP_ADD}, {F_INT84PL, DP_OP_ADD}, {F_INT28PL, DP_OP_ADD},
	{F_INT82PL, DP_OP_ADD}, {F_FLOAT4PL, DP_OP_ADD}, {F_FLOAT8PL, DP_OP_ADD}, {F_FLOAT48PL, DP_OP_ADD},
	{F_FLOAT84PL, DP_OP_ADD}, {F_NUMERIC_ADD, DP_OP_ADD},
	{F_INT2MI, DP_OP_SUB}, {F_INT4MI, DP_OP_SUB}, {F_INT8MI, DP_OP_SUB}, {F_INT24MI, DP_OP_SUB},
	{F_INT42MI, DP_OP_SUB}, {F_INT48MI, DP_OP_SUB}, {F_INT84MI, DP_OP_SUB}, {F_INT28MI, DP_OP_SUB},
	{F_INT82MI, DP_OP_SUB}, {F_FLOAT4MI, DP_OP_SUB}, {F_FLOAT8MI, DP_OP_SUB}, {F_FLOAT48MI, DP_OP_SUB},
	{F_FLOAT84MI, DP_OP_SUB}, {F_NUMERIC_SUB, DP_OP_SUB},
	{F_INT2MUL, DP_OP_MUL}, {F_INT4MUL, DP_OP_MUL}, {F_INT8MUL, DP_OP_MUL}, {F_INT24MUL, DP_OP_MUL},
	{F_INT42MUL, DP_OP_MUL}, {F_INT48MUL, DP_OP_MUL}, {F_INT84MUL, DP_OP_MUL}, {F_INT28MUL, DP_OP_MUL},
	{F_INT82MUL, DP_OP_MUL}, {F_FLOAT4MUL, DP_OP_MUL}, {F_FLOAT8MUL, DP_OP_MUL}, {F_FLOAT48MUL, DP_OP_MUL},
	{F_FLOAT84MUL, DP_OP_MUL}, {F_NUMERIC_MUL, DP_OP_MUL},
	{F_INT2DIV, DP_OP_DIV}, {F_INT4DIV, DP_OP_DIV}, {F_INT8DIV, DP_OP_DIV}, {F_INT24DIV, DP_OP_DIV},
	{F_INT42DIV, DP_OP_DIV}, {F_INT48DIV, DP_OP_DIV}, {F_INT84DIV, DP_OP_DIV}, {F_INT28DIV, DP_OP_DIV},
	{F_INT82DIV, DP_OP_DIV}, {F_FLOAT4DIV, DP_OP_DIV}, {F_FLOAT8DIV, DP_OP_DIV}, {F_FLOAT48DIV, DP_OP_DIV},
	{F_FLOAT84DIV, DP_OP_DIV}, {F_NUMERIC_DIV, DP_OP_DIV}, {F_NUMERIC_DIV_TRUNC, DP_OP_DIV},
	{F_INT2MOD, DP_OP_MOD}, {F_INT4MOD, DP_OP_MOD}, {F_INT8MOD, DP_OP_MOD}, {F_NUMERIC_MOD, DP_OP_MOD},
	{F_INT2UM, DP_OP_NEG}, {F_INT4UM, DP_OP_NEG}, {F_INT8UM, DP_OP_NEG}, {F_FLOAT4UM, DP_OP_NEG},
	{F_FLOAT8UM, DP_OP_NEG}, {F_NUMERIC_UMINUS, DP_OP_NEG},
	{F_INT2UP, DP_OP_POS}, {F_INT4UP, DP_OP_POS}, {F_INT8UP, DP_OP_POS}, {F_FLOAT4UP, DP_OP_POS},
	{F_FLOAT8UP, DP_OP_POS}, {F_NUMERIC_UPLUS, DP_OP_POS},
	{F_INT2ABS, DP_OP_ABS}, {F_INT4ABS, DP_OP_ABS}, {F_INT8ABS, DP_OP_ABS}, {F_FLOAT4ABS, DP_OP_ABS},
	{F_FLOAT8ABS, DP_OP_ABS}, {F_NUMERIC_ABS, DP_OP_ABS}, {F_ABS_INT2, DP_OP_ABS}, {F_ABS_INT4, DP_OP_ABS},
	{F_ABS_INT8, DP_OP_ABS}, {F_ABS_FLOAT4, DP_OP_ABS}, {F_ABS_FLOAT8, DP_OP_ABS}, {F_ABS_NUMERIC, DP_OP_ABS},
	{F_SIGN_NUMERIC, DP_OP_SIGN}, {F_SIGN_FLOAT8, DP_OP_SIGN},
	{F_FLOOR_FLOAT8, DP_OP_FLOOR}, {F_FLOOR_NUMERIC, DP_OP_FLOOR},
	{F_CEIL_FLOAT8, DP_OP_CEIL}, {F_CEIL_NUMERIC, DP_OP_CEIL}, {F_CEILING_FLOAT8, DP_OP_CEIL},
	{F_CEILING_NUMERIC, DP_OP_CEIL},
	{F_ROUND_FLOAT8, DP_OP_ROUND}, {F_ROUND_NUMERIC, DP_OP_ROUND},
	{F_TRUNC_FLOAT8, DP_OP_TRUNC}, {F_TRUNC_NUMERIC, DP_OP_TRUNC},
	{F_ROUND_NUMERIC_INT4, DP_OP_ROUND_SCALE}, {F_TRUNC_NUMERIC_INT4, DP_OP_TRUNC_SCALE},
	/* conversions between the number types, and boolean to integer */
	{F_INT4_INT2, DP_OP_CAST}, {F_INT8_INT2, DP_OP_CAST}, {F_INT8_INT4, DP_OP_CAST},
	{F_INT2_INT4, DP_OP_CAST}, {F_INT2_INT8, DP_OP_CAST}, {F_INT4_INT8, DP_OP_CAST},
	{F_FLOAT4_INT2, DP_OP_CAST}, {F_FLOAT4_INT4, DP_OP_CAST}, {F_FLOAT4_INT8, DP_OP_CAST},
	{F_FLOAT8_INT2, DP_OP_CAST}, {F_FLOAT8_INT4, DP_OP_CAST}, {F_FLOAT8_INT8, DP_OP_CAST},
	{F_NUMERIC_INT2, DP_OP_CAST}, {F_NUMERIC_INT4, DP_OP_CAST}, {F_NUMERIC_INT8, DP_OP_CAST},
	{F_INT2_FLOAT4, DP_OP_CAST}, {F_INT4_FLOAT4, DP_OP_CAST}, {F_INT8_FLOAT4, DP_OP_CAST},
	{F_INT2_FLOAT8, DP_OP_CAST}, {F_INT4_FLOAT8, DP_OP_CAST}, {F_INT8_FLOAT8, DP_OP_CAST},
	{F_INT2_NUMERIC, DP_OP_CAST}, {F_INT4_NUMERIC, DP_OP_CAST}, {F_INT8_NUMERIC, DP_OP_CAST},
	{F_FLOAT8_FLOAT4, DP_OP_CAST}, {F_FLOAT4_FLOAT8, DP_OP_CAST},
	{F_NUMERIC_FLOAT4, DP_OP_CAST}, {F_NUMERIC_FLOAT8, DP_OP_CAST},
	{F_FLOAT4_NUMERIC, DP_OP_CAST}, {F_FLOAT8_NUMERIC, DP_OP_CAST},
	{F_INT4_BOOL, DP_OP_CAST},
	{F_NUMERIC_NUMERIC_INT4, DP_OP_TYPMOD},
	{F_DATE_MI, DP_OP_DATE_DIFF}, {F_DATE_PLI, DP_OP_DATE_ADD}, {F_INTEGER_PL_DATE, DP_OP_DATE_ADD},
	{F_DATE_MII, DP_OP_DATE_SUB},
	{F_DATE_PART_TEXT_DATE, DP_OP_TIME_FIELD}, {F_DATE_PART_TEXT_TIMESTAMP, DP_OP_TIME_FIELD},
	{F_DATE_PART_TEXT_TIMESTAMPTZ, DP_OP_TIME_FIELD}, {F_EXTRACT_TEXT_DATE, DP_OP_TIME_FIELD},
	{F_EXTRACT_TEXT_TIMESTAMP, DP_OP_TIME_FIELD}, {F_EXTRACT_TEXT_TIMESTAMPTZ, DP_OP_TIME_FIELD},
};

/* The fields of extract / date_part whose values are known whatever the time. */
static const struct
{
	const char *field;
	double		lo;
	double		hi;
}			dp_field_ranges[] = {
	{"month", 1, 12}, {"quarter", 1, 4}, {"dow", 0, 6}, {"isodow", 1, 7}, {"hour", 0, 24},
	{"minute", 0, 59}, {"day", 1, 31}, {"doy", 1, 366}, {"week", 1, 53}, {"second", 0, 61},
	{"milliseconds", 0, 61000}, {"microseconds", 0, 61000000},
};

/* Fields that grow with the time (evaluated on the domain's ends, widened by one unit for time zones). */
static const char *const dp_monotone_fields[] = {
	"epoch", "year", "isoyear", "decade", "century", "millennium", "julian",
};

/* Context of the walk. */
typedef struct DpBoundsCxt
{
	Bitmapset  *rtis;			/* entries whose columns may be read (NULL: any relation of rtable) */
	List	   *rtable;
	const char *where;
	bool		rewrite;		/* rewrite (shape.c), or only compute the interval (translate.c) */
	bool		key;			/* a GROUP BY key: numeric columns read in canonical form */
} DpBoundsCxt;

static Node *DpBoundsWalk(Node *node, DpBoundsCxt *cxt, DpInterval *iv);
static void DpCheckDateOperand(DpBoundsCxt *cxt, const DpInterval *a);

/* The step of function fn, or DP_OP_NONE. */
static DpBoundsOp
DpBoundsOpOf(Oid fn)
{
	for (int i = 0; i < lengthof(dp_bounds_ops); i++)
		if (dp_bounds_ops[i].fn == fn)
			return dp_bounds_ops[i].op;
	return DP_OP_NONE;
}

/* The function of a FuncExpr or OpExpr node, or InvalidOid. */
static Oid
DpBoundsFunction(Node *node)
{
	if (IsA(node, FuncExpr))
		return ((FuncExpr *) node)->funcid;
	if (IsA(node, OpExpr))
		return get_opcode(((OpExpr *) node)->opno);
	return InvalidOid;
}

/* The arguments of a FuncExpr or OpExpr node. */
static List *
DpBoundsArgs(Node *node)
{
	return IsA(node, FuncExpr) ? ((FuncExpr *) node)->args : ((OpExpr *) node)->args;
}

/* A number type the grammar computes with (its callers take dates and times apart). */
static bool
DpBoundsType(Oid type)
{
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
			return true;
		default:
			return false;
	}
}

/* True if type holds integers. */
static bool
DpIntegerType(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/* ------------------------------------------------------------------------
 * Which expressions are bounds.c's
 * ------------------------------------------------------------------------
 */

static bool DpContainsBoundedWalker(Node *node, void *context);

/* Is fn an extract / date_part, or dp_pg.key_finite of one (the rewritten key of keys.c)? */
static bool
DpIsFieldOf(Node *arg)
{
	if (!IsA(arg, FuncExpr))
		return false;
	if (DpBoundsOpOf(((FuncExpr *) arg)->funcid) == DP_OP_TIME_FIELD)
		return true;
	return list_length(((FuncExpr *) arg)->args) == 1 && DpIsFieldOf(linitial(((FuncExpr *) arg)->args)) &&
		strcmp(get_func_name(((FuncExpr *) arg)->funcid), "key_finite") == 0;
}

/*
 * True if node is arithmetic (or holds arithmetic under a rounding function
 * or cast) that this file judges.  What keys.c already accepts on a column
 * (a date shifted by a constant, floor(col), casts of extract) is not.
 */
bool
DpIsBoundedExpression(Node *node)
{
	DpBoundsOp	op;
	List	   *args;

	if (node == NULL)
		return false;
	if ((IsA(node, NullIfExpr) || IsA(node, MinMaxExpr)) && DpBoundsType(exprType(node)))
		return true;
	if (!IsA(node, FuncExpr) && !IsA(node, OpExpr))
		return false;
	op = DpBoundsOpOf(DpBoundsFunction(node));
	args = DpBoundsArgs(node);
	switch (op)
	{
		case DP_OP_NONE:
			return false;
		case DP_OP_ADD:
		case DP_OP_SUB:
		case DP_OP_MUL:
		case DP_OP_DIV:
		case DP_OP_MOD:
		case DP_OP_NEG:
		case DP_OP_POS:
		case DP_OP_ABS:
		case DP_OP_SIGN:
		case DP_OP_TYPMOD:
		case DP_OP_DATE_DIFF:
			return true;
		case DP_OP_DATE_ADD:
		case DP_OP_DATE_SUB:
			{
				/* a date shifted by a constant number of days is a generalising expression (keys.c) */
				ListCell   *lc;

				foreach(lc, args)
					if (exprType(lfirst(lc)) == INT4OID && !IsA(lfirst(lc), Const))
					return true;
				return DpContainsBoundedWalker((Node *) args, NULL);
			}
		case DP_OP_CAST:
			{
				Oid			fn = DpBoundsFunction(node);
				Node	   *arg = linitial(args);

				/* widening, exact conversions and keys.c's casts of extract apply to any column */
				if (DpIsWideningCast(fn) || fn == F_FLOAT8_NUMERIC || fn == F_NUMERIC_FLOAT8 ||
					((fn == F_INT4_NUMERIC || fn == F_INT8_NUMERIC || fn == F_INT4_FLOAT8 || fn == F_INT8_FLOAT8) &&
					 DpIsFieldOf(arg)))
					return DpContainsBoundedWalker(arg, NULL);
				return true;
			}
		case DP_OP_FLOOR:
		case DP_OP_CEIL:
		case DP_OP_ROUND:
		case DP_OP_TRUNC:
		case DP_OP_ROUND_SCALE:
		case DP_OP_TRUNC_SCALE:
		case DP_OP_TIME_FIELD:
			return DpContainsBoundedWalker((Node *) args, NULL);
	}
	return false;
}

/* Walker: true if a subexpression (not inside a subquery) is bounds.c's. */
static bool
DpContainsBoundedWalker(Node *node, void *context)
{
	if (node == NULL || IsA(node, SubLink) || IsA(node, Query))
		return false;
	if (DpIsBoundedExpression(node))
		return true;
	return expression_tree_walker(node, DpContainsBoundedWalker, context);
}

/* ------------------------------------------------------------------------
 * Intervals
 * ------------------------------------------------------------------------
 */

/* v moved outwards (down if dir < 0): a bound computed in doubles, made safe. */
static double
DpOutward(double v, int dir)
{
	if (v == 0 || isinf(v) || isnan(v))
		return v;
	v += dir * fabs(v) * DP_BOUNDS_MARGIN;
	return nextafter(v, dir < 0 ? -INFINITY : INFINITY);
}

/* An interval [lo, hi] rounded outwards (inwards to integers when integral). */
static void
DpSetInterval(DpInterval *iv, double lo, double hi, bool integral)
{
	iv->lo = DpOutward(lo, -1);
	iv->hi = DpOutward(hi, 1);
	iv->integral = integral;
	if (integral)
	{
		iv->lo = ceil(iv->lo);
		iv->hi = floor(iv->hi);
	}
}

/* True if the interval holds no value (only NULL). */
static bool
DpEmpty(const DpInterval *iv)
{
	return iv->lo > iv->hi;
}

/* The hull of two intervals (either may be empty). */
static void
DpHull(DpInterval *acc, const DpInterval *b)
{
	if (DpEmpty(b))
		return;
	if (DpEmpty(acc))
	{
		*acc = *b;
		return;
	}
	acc->lo = Min(acc->lo, b->lo);
	acc->hi = Max(acc->hi, b->hi);
	acc->integral = acc->integral && b->integral;
}

/*
 * True if node is never NULL: a constant that is not NULL, a cast of one,
 * or a COALESCE / GREATEST / LEAST with such an argument.  (Columns may be
 * NULL, and so may a total quotient: it is NULL for a zero divisor.)
 */
static bool
DpNeverNull(Node *node)
{
	ListCell   *lc;

	while (node != NULL && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node == NULL)
		return false;
	if (IsA(node, Const))
		return !((Const *) node)->constisnull;
	if (IsA(node, FuncExpr) && list_length(((FuncExpr *) node)->args) == 1 &&
		DpBoundsOpOf(((FuncExpr *) node)->funcid) == DP_OP_CAST)
		return DpNeverNull(linitial(((FuncExpr *) node)->args));
	if (IsA(node, CoalesceExpr) || IsA(node, MinMaxExpr))
		foreach(lc, IsA(node, CoalesceExpr) ? ((CoalesceExpr *) node)->args : ((MinMaxExpr *) node)->args)
			if (DpNeverNull(lfirst(lc)))
				return true;
	return false;
}

/* The empty interval (only NULL). */
static void
DpSetEmpty(DpInterval *iv)
{
	iv->lo = 1;
	iv->hi = 0;
	iv->integral = true;
}

/* ERROR 42501: step "what" of the expression could fail on some row. */
static void
DpBoundsRefuse(DpBoundsCxt *cxt, const char *rule, const char *detail)
{
	DpGuardRefuse(rule, psprintf("%s (%s).", detail, cxt->where));
}

/* The largest value of type type (its smallest is the negative, an integer's one less). */
static double
DpTypeMax(Oid type)
{
	switch (type)
	{
		case INT2OID:
			return PG_INT16_MAX;
		case INT4OID:
			return PG_INT32_MAX;
		case INT8OID:
			return 9223372036854774784.0;	/* the largest double below 2^63 */
		case FLOAT4OID:
			return DP_BOUNDS_MAX4;
		default:
			return DP_BOUNDS_MAX8;
	}
}

/* ERROR unless every value of iv fits type without an overflow (nor, for floats, an underflow). */
static void
DpCheckFits(DpBoundsCxt *cxt, Oid type, const DpInterval *iv, const char *step)
{
	double		max = DpTypeMax(type);

	if (DpEmpty(iv) || type == DATEOID)
		return;
	if (!(iv->lo >= -max - (DpIntegerType(type) ? 1 : 0) && iv->hi <= max))
		DpBoundsRefuse(cxt, "arithmetic on a protected table could overflow",
					   psprintf("%s can reach %g .. %g, beyond what %s holds; narrow the columns' value domains",
								step, iv->lo, iv->hi, format_type_be(type)));
}

/* The significant digits of a numeric (its text form without sign, point, leading and trailing zeros). */
static int
DpSignificantDigits(Datum num)
{
	char	   *text = DatumGetCString(DirectFunctionCall1(numeric_out, num));
	char	   *first = NULL;
	char	   *last = NULL;
	int			n = 0;

	for (char *p = text; *p; p++)
		if (*p >= '1' && *p <= '9')
		{
			if (first == NULL)
				first = p;
			last = p;
		}
	for (char *p = first; p != NULL && p <= last; p++)
		n += (*p >= '0' && *p <= '9');
	pfree(text);
	return n;
}

/* The interval of a constant node (a number, a date, NULL). */
static void
DpConstInterval(DpBoundsCxt *cxt, Const *c, DpInterval *iv)
{
	double		v;

	if (c->constisnull)
	{
		DpSetEmpty(iv);
		return;
	}
	switch (c->consttype)
	{
		case INT2OID:
			v = DatumGetInt16(c->constvalue);
			break;
		case INT4OID:
			v = DatumGetInt32(c->constvalue);
			break;
		case INT8OID:
			v = (double) DatumGetInt64(c->constvalue);
			break;
		case FLOAT4OID:
			v = DatumGetFloat4(c->constvalue);
			break;
		case FLOAT8OID:
			v = DatumGetFloat8(c->constvalue);
			break;
		case NUMERICOID:
			if (numeric_is_nan(DatumGetNumeric(c->constvalue)) || numeric_is_inf(DatumGetNumeric(c->constvalue)))
				v = NAN;
			else
				v = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, c->constvalue));
			break;
		case DATEOID:
			v = DATE_NOT_FINITE(DatumGetDateADT(c->constvalue)) ? NAN : DatumGetDateADT(c->constvalue);
			break;
		case BOOLOID:
			v = DatumGetBool(c->constvalue) ? 1 : 0;
			break;
		default:
			v = NAN;
			break;
	}
	if (!isfinite(v) || fabs(v) > DP_BOUNDS_MAX8)
		DpBoundsRefuse(cxt, "a constant in arithmetic on a protected table must be a finite number",
					   "NaN, infinities and values beyond 1e300 could make a step fail");
	if (c->consttype == NUMERICOID && DpSignificantDigits(c->constvalue) > DP_BOUNDS_MAX_DIGITS)
		DpBoundsRefuse(cxt, "a numeric constant in arithmetic on a protected table has at most 100 significant digits",
					   "A step's time grows with its operands' digits, and a row that reaches it would be seen "
					   "in the query's time");
	DpSetInterval(iv, v, v,
				  v == rint(v) && c->consttype != FLOAT4OID && c->consttype != FLOAT8OID && c->consttype != NUMERICOID);
	iv->integral = v == rint(v);
	/* a numeric nearer to zero than a double holds (1e-330) reads as 0 here, but is not an integer */
	if (v == 0 && c->consttype == NUMERICOID &&
		DatumGetInt32(DirectFunctionCall2(numeric_cmp, c->constvalue,
										  NumericGetDatum(int64_to_numeric(0)))) != 0)
		iv->integral = false;
	if (DpIntegerType(c->consttype) || c->consttype == DATEOID || c->consttype == BOOLOID)
		iv->lo = iv->hi = v;	/* exact */
}

/* ------------------------------------------------------------------------
 * Columns: read through their value domain
 * ------------------------------------------------------------------------
 */

/* dp_pg.domain_read(type, type, type) (or domain_key_read: canonical numerics), or InvalidOid. */
static Oid
DpDomainReadFunction(Oid type, bool key)
{
	Oid			argtypes[3] = {type, type, type};

	return LookupFuncName(list_make2(makeString("dp_pg"), makeString(key && type == NUMERICOID ? "domain_key_read" : "domain_read")),
						  3, argtypes, true);
}

/* True if fn is one of dp_pg.domain_read(...). */
bool
DpIsDomainRead(Oid fn)
{
	char	   *name;
	Oid			type;

	if (fn < FirstNormalObjectId)
		return false;
	name = get_func_name(fn);
	if (name == NULL || (strcmp(name, "domain_read") != 0 && strcmp(name, "domain_key_read") != 0))
		return false;
	/* dp_pg's own, for the type it returns */
	type = get_func_rettype(fn);
	return fn == DpDomainReadFunction(type, false) || fn == DpDomainReadFunction(type, true);
}

/* A value of type type (text form s) as a double: the number, days of a date, microseconds of a time. */
static bool
DpValueOf(Oid type, const char *s, double *v)
{
	Oid			typinput;
	Oid			typioparam;
	Datum		d;

	getTypeInputInfo(type, &typinput, &typioparam);
	d = OidInputFunctionCall(typinput, (char *) s, typioparam, -1);
	switch (type)
	{
		case INT2OID:
			*v = DatumGetInt16(d);
			break;
		case INT4OID:
			*v = DatumGetInt32(d);
			break;
		case INT8OID:
			*v = (double) DatumGetInt64(d);
			break;
		case FLOAT4OID:
			*v = DatumGetFloat4(d);
			break;
		case FLOAT8OID:
			*v = DatumGetFloat8(d);
			break;
		case NUMERICOID:
			if (numeric_is_nan(DatumGetNumeric(d)) || numeric_is_inf(DatumGetNumeric(d)))
				return false;
			*v = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d));
			break;
		case DATEOID:
			if (DATE_NOT_FINITE(DatumGetDateADT(d)))
				return false;
			*v = DatumGetDateADT(d);
			break;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			if (TIMESTAMP_NOT_FINITE(DatumGetTimestamp(d)))
				return false;
			*v = (double) DatumGetTimestamp(d);
			break;
		default:
			return false;
	}
	return isfinite(*v);
}

/*
 * The value domain of column attno of relid (of type type): its CHECK
 * constraints and dp_pg.set_domain (translate.c), an end that they leave open
 * taken from the range of the declared public keys.  False if an end stays
 * open.  Dates in days, times in microseconds since 2000.
 */
static bool
DpBoundsDomain(Oid relid, AttrNumber attno, Oid type, double *lo, double *hi)
{
	ArrayType  *keys;

	if (DpColumnDomain(relid, attno, type, lo, hi))
		return true;
	keys = DpIsProtected(relid) ? DpPublicKeys(relid, get_attname(relid, attno, false)) : NULL;
	if (keys != NULL)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;
		double		klo = INFINITY,
					khi = -INFINITY;

		deconstruct_array(keys, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
		for (int i = 0; i < n; i++)
		{
			double		v;

			if (nulls[i])
				continue;
			if (!DpValueOf(type, TextDatumGetCString(elems[i]), &v))
				return false;
			klo = Min(klo, v);
			khi = Max(khi, v);
		}
		*lo = Max(*lo, klo);
		*hi = Min(*hi, khi);
	}
	return isfinite(*lo) && isfinite(*hi) && *lo <= *hi;
}

/* A constant of type type from a bound (integers and dates exact, times in microseconds). */
Const *
DpBoundConstOf(Oid type, double v)
{
	switch (type)
	{
		case INT2OID:
			return makeConst(INT2OID, -1, InvalidOid, sizeof(int16), Int16GetDatum((int16) v), false, true);
		case INT4OID:
			return DpInt4Const((int32) v);
		case INT8OID:
			return DpInt8Const((int64) v);
		case FLOAT4OID:
			return makeConst(FLOAT4OID, -1, InvalidOid, sizeof(float4), Float4GetDatum((float4) v), false, true);
		case FLOAT8OID:
			return makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(v), false, FLOAT8PASSBYVAL);
		case NUMERICOID:
			return makeConst(NUMERICOID, -1, InvalidOid, -1, DirectFunctionCall1(float8_numeric, Float8GetDatum(v)),
							 false, false);
		case DATEOID:
			return makeConst(DATEOID, -1, InvalidOid, sizeof(DateADT), DateADTGetDatum((DateADT) v), false, true);
		default:
			return makeConst(type, -1, InvalidOid, sizeof(Timestamp), TimestampGetDatum((Timestamp) v), false,
							 FLOAT8PASSBYVAL);
	}
}

/* A column in arithmetic: read through dp_pg.domain_read (see the file comment). */
static Node *
DpBoundsVar(Var *v, DpBoundsCxt *cxt, DpInterval *iv)
{
	RangeTblEntry *rte;
	double		lo,
				hi;
	const char *col;
	Oid			type = v->vartype;
	Oid			readfn;
	bool		perunit;

	if (v->varlevelsup != 0 || v->varattno <= 0 || v->varno <= 0 || v->varno > list_length(cxt->rtable) ||
		(cxt->rtis != NULL && !bms_is_member(v->varno, cxt->rtis)))
		DpBoundsRefuse(cxt, "system columns and whole-row references are not allowed", "Found one");
	rte = rt_fetch(v->varno, cxt->rtable);
	/* a per-unit value (perunit.c): a column of a subquery whose domain its clamp gives */
	perunit = rte->rtekind == RTE_SUBQUERY && DpPerUnitDomain(rte->subquery, v->varattno, &lo, &hi, NULL);
	if (rte->rtekind != RTE_RELATION && !perunit)
		DpBoundsRefuse(cxt, "arithmetic on a protected table reads columns of its tables", "Found another column");
	if (type == BOOLOID)
	{
		DpSetInterval(iv, 0, 1, true);
		return (Node *) v;
	}
	col = perunit ? strVal(list_nth(rte->eref->colnames, v->varattno - 1)) : get_attname(rte->relid, v->varattno, false);
	if (!DpBoundsType(type) && type != DATEOID && type != TIMESTAMPOID && type != TIMESTAMPTZOID)
		DpBoundsRefuse(cxt, "arithmetic on a protected table takes numbers and dates",
					   psprintf("Column \"%s\" is of type %s", col, format_type_be(type)));
	if (!perunit && !DpBoundsDomain(rte->relid, v->varattno, type, &lo, &hi))
	{
		const char *rel = quote_qualified_identifier(get_namespace_name(get_rel_namespace(rte->relid)),
													 get_rel_name(rte->relid));

		bool		time = type == DATEOID || type == TIMESTAMPOID || type == TIMESTAMPTZOID;

		DpGuardRefuse(psprintf("arithmetic on column \"%s\" needs a value domain", col),
					  psprintf("Its bounds come from the column's value domain (%s).  The table's owner can add "
							   "CHECK (%s BETWEEN %s AND %s) to \"%s\", a DBA can declare them with "
							   "SELECT dp_pg.set_domain('%s', '%s', %s, %s) or declare its public keys.",
							   cxt->where, col, time ? "'2020-01-01'" : "<lower>", time ? "'2025-12-31'" : "<upper>",
							   rel, rel, col, time ? "'2020-01-01'" : "<lower>", time ? "'2025-12-31'" : "<upper>"));
	}
	if (DpIntegerType(type) || type == DATEOID)
	{
		lo = ceil(lo);
		hi = floor(hi);
	}
	if (type == FLOAT4OID)
	{
		lo = Max(lo, -FLT_MAX);
		hi = Min(hi, FLT_MAX);
	}
	if (type == FLOAT8OID || type == NUMERICOID)
	{
		/* no read is beyond +-1e300 (total.c counts on it) */
		lo = Max(lo, -DP_READ_MAX);
		hi = Min(hi, DP_READ_MAX);
	}
	if (DpIntegerType(type))
	{
		lo = Max(lo, -DpTypeMax(type) - 1);
		hi = Min(hi, DpTypeMax(type));
	}
	if (type == DATEOID || type == TIMESTAMPOID || type == TIMESTAMPTZOID)
	{
		/* nor a date or time outside dp_pg's window (a field of it never fails) */
		double		wlo = date2j(DP_WINDOW_LO_YEAR, 1, 1) - POSTGRES_EPOCH_JDATE;
		double		whi = date2j(DP_WINDOW_HI_YEAR, 1, 1) - POSTGRES_EPOCH_JDATE;

		if (type != DATEOID)
		{
			wlo *= (double) USECS_PER_DAY;
			whi *= (double) USECS_PER_DAY;
		}
		lo = Max(lo, wlo);
		hi = Min(hi, whi);
	}
	if (lo > hi)
		DpGuardRefuse(psprintf("the value domain of column \"%s\" is empty", col),
					  psprintf("Its bounds are %g and %g.", lo, hi));
	readfn = DpDomainReadFunction(type, cxt->key);
	if (!OidIsValid(readfn))
		DpGuardRefuse("the dp_pg installation is incomplete", "dp_pg.domain_read is missing; ALTER EXTENSION dp_pg UPDATE.");
	if (DpIntegerType(type) || type == DATEOID || type == TIMESTAMPOID || type == TIMESTAMPTZOID)
	{
		iv->lo = lo;
		iv->hi = hi;
		iv->integral = true;
	}
	else
	{
		DpSetInterval(iv, lo, hi, false);
		if (type == FLOAT4OID)
		{
			/* the read rounds its double result to real */
			iv->lo -= fabs(iv->lo) * 1e-6;
			iv->hi += fabs(iv->hi) * 1e-6;
		}
	}
	if (!cxt->rewrite)
		return (Node *) v;
	return (Node *) makeFuncExpr(readfn, type, list_make3(copyObject(v), DpBoundConstOf(type, lo), DpBoundConstOf(type, hi)),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/* The interval of an existing dp_pg.domain_read(col, lo, hi) (a translated query's). */
static Node *
DpBoundsDomainRead(FuncExpr *f, DpBoundsCxt *cxt, DpInterval *iv)
{
	Oid			type = f->funcresulttype;
	DpInterval	a,
				b;
	Var		   *v = (Var *) linitial(f->args);

	if (!IsA(v, Var) || !IsA(lsecond(f->args), Const) || !IsA(lthird(f->args), Const) ||
		((Const *) lsecond(f->args))->constisnull || ((Const *) lthird(f->args))->constisnull)
		DpBoundsRefuse(cxt, "dp_pg.domain_read takes a column and constant bounds", "Found another argument");
	{
		DpBoundsCxt check = *cxt;

		check.rewrite = false;
		(void) DpBoundsVar(v, &check, iv);	/* the column's checks */
	}
	if (type == TIMESTAMPOID || type == TIMESTAMPTZOID)
	{
		a.lo = a.hi = (double) DatumGetTimestamp(((Const *) lsecond(f->args))->constvalue);
		b.lo = b.hi = (double) DatumGetTimestamp(((Const *) lthird(f->args))->constvalue);
	}
	else
	{
		DpConstInterval(cxt, (Const *) lsecond(f->args), &a);
		DpConstInterval(cxt, (Const *) lthird(f->args), &b);
	}
	iv->lo = a.lo;
	iv->hi = b.hi;
	if (iv->lo > iv->hi)
		DpBoundsRefuse(cxt, "dp_pg.domain_read needs lower <= upper", "Found reversed bounds");
	return (Node *) f;
}

/* ------------------------------------------------------------------------
 * The steps
 * ------------------------------------------------------------------------
 */

/* The interval of a binary step op on a and b (the operands' intervals). */
static void
DpBinaryInterval(DpBoundsCxt *cxt, DpBoundsOp op, bool truncate, const DpInterval *a,
				 const DpInterval *b, DpInterval *iv)
{
	bool		integral = a->integral && b->integral;
	double		c[4];
	double		lo,
				hi;

	if (DpEmpty(a) || DpEmpty(b))
	{
		DpSetEmpty(iv);
		return;
	}
	if (!isfinite(a->lo) || !isfinite(a->hi) || !isfinite(b->lo) || !isfinite(b->hi))
		DpBoundsRefuse(cxt, "arithmetic on a protected table needs bounded operands",
					   "An operand's values are not bounded: give its columns value domains");
	switch (op)
	{
		case DP_OP_ADD:
		case DP_OP_SUB:
			lo = op == DP_OP_ADD ? a->lo + b->lo : a->lo - b->hi;
			hi = op == DP_OP_ADD ? a->hi + b->hi : a->hi - b->lo;
			DpSetInterval(iv, lo, hi, integral);
			break;
		case DP_OP_MUL:
			c[0] = a->lo * b->lo;
			c[1] = a->lo * b->hi;
			c[2] = a->hi * b->lo;
			c[3] = a->hi * b->hi;
			lo = Min(Min(c[0], c[1]), Min(c[2], c[3]));
			hi = Max(Max(c[0], c[1]), Max(c[2], c[3]));
			/* (a float product nearer to zero than the type holds is 0: total.c) */
			DpSetInterval(iv, lo, hi, integral);
			break;
		case DP_OP_DIV:
			if (b->lo <= 0 && b->hi >= 0)
				DpBoundsRefuse(cxt, "a division on a protected table could divide by zero",
							   psprintf("The divisor can take any value in %g .. %g; divide by a constant or by an "
										"expression whose value domain excludes zero", b->lo, b->hi));
			c[0] = a->lo / b->lo;
			c[1] = a->lo / b->hi;
			c[2] = a->hi / b->lo;
			c[3] = a->hi / b->hi;
			lo = Min(Min(c[0], c[1]), Min(c[2], c[3]));
			hi = Max(Max(c[0], c[1]), Max(c[2], c[3]));
			if (truncate)
			{
				/* integer division (and div()) truncates towards zero: monotone in the quotient */
				iv->lo = trunc(DpOutward(lo, -1));
				iv->hi = trunc(DpOutward(hi, 1));
				iv->integral = true;
				return;
			}
			DpSetInterval(iv, lo, hi, false);
			break;
		case DP_OP_MOD:
			{
				double		m = Max(fabs(b->lo), fabs(b->hi));

				if (b->lo <= 0 && b->hi >= 0)
					DpBoundsRefuse(cxt, "a modulo on a protected table could divide by zero",
								   psprintf("The divisor can take any value in %g .. %g", b->lo, b->hi));
				if (integral)
					m = m - 1;	/* an integer remainder is at most |divisor| - 1 */
				/* the remainder has the dividend's sign and is smaller than the divisor */
				lo = a->lo >= 0 ? 0 : Max(a->lo, -m);
				hi = a->hi <= 0 ? 0 : Min(a->hi, m);
				DpSetInterval(iv, lo, hi, integral);
				break;
			}
		default:
			elog(ERROR, "dp_pg: not a binary step");
	}
}

/* The interval of a unary step op on a (integral results are integers). */
static void
DpUnaryInterval(DpBoundsCxt *cxt, DpBoundsOp op, const DpInterval *a, DpInterval *iv)
{
	if (DpEmpty(a))
	{
		DpSetEmpty(iv);
		return;
	}
	if (!isfinite(a->lo) || !isfinite(a->hi))
		DpBoundsRefuse(cxt, "arithmetic on a protected table needs bounded operands",
					   "An operand's values are not bounded: give its columns value domains");
	switch (op)
	{
		case DP_OP_NEG:
			DpSetInterval(iv, -a->hi, -a->lo, a->integral);
			break;
		case DP_OP_POS:
			*iv = *a;
			break;
		case DP_OP_ABS:
			DpSetInterval(iv, (a->lo <= 0 && a->hi >= 0) ? 0 : Min(fabs(a->lo), fabs(a->hi)),
						  Max(fabs(a->lo), fabs(a->hi)), a->integral);
			break;
		case DP_OP_SIGN:
			DpSetInterval(iv, a->lo < 0 ? -1 : a->lo > 0 ? 1 : 0, a->hi > 0 ? 1 : a->hi < 0 ? -1 : 0, true);
			break;
		case DP_OP_FLOOR:
			DpSetInterval(iv, floor(a->lo), floor(a->hi), true);
			break;
		case DP_OP_CEIL:
			DpSetInterval(iv, ceil(a->lo), ceil(a->hi), true);
			break;
		case DP_OP_ROUND:
			DpSetInterval(iv, ceil(a->lo - 0.5), floor(a->hi + 0.5), true);
			break;
		case DP_OP_TRUNC:
			DpSetInterval(iv, trunc(a->lo), trunc(a->hi), true);
			break;
		default:
			elog(ERROR, "dp_pg: not a unary step");
	}
}

/* A constant argument of a step (a scale, a typmod, a field): folded now, never NULL. */
static Const *
DpBoundsConstArg(Node *arg, DpBoundsCxt *cxt)
{
	if (!IsA(arg, Const))
		arg = eval_const_expressions(NULL, copyObject(arg));
	if (!IsA(arg, Const) || ((Const *) arg)->constisnull)
		DpBoundsRefuse(cxt, "the scales, fields and type modifiers in arithmetic must be constants",
					   "Found a column, a parameter or NULL");
	return (Const *) arg;
}

/* The interval of a conversion to rettype of an operand with interval a. */
static void
DpCastInterval(DpBoundsCxt *cxt, Oid rettype, const DpInterval *a, DpInterval *iv)
{
	*iv = *a;
	if (DpEmpty(a))
		return;
	if (!isfinite(a->lo) || !isfinite(a->hi))
		DpBoundsRefuse(cxt, "a cast on a protected table needs a bounded operand",
					   "The operand's values are not bounded: give its columns value domains");
	if (DpIntegerType(rettype) && !a->integral)
		DpSetInterval(iv, ceil(a->lo - 0.5), floor(a->hi + 0.5), true); /* rounded to the nearest (any tie rule) */
	else if (!DpIntegerType(rettype))
		DpSetInterval(iv, a->lo, a->hi, a->integral);	/* rounded to the type */
	DpCheckFits(cxt, rettype, iv, "a cast");
}

/* The typmod precision and scale of numeric(p, s); false for no typmod. */
static bool
DpNumericTypmod(int32 typmod, int *precision, int *scale)
{
	if (typmod < (int32) VARHDRSZ)
		return false;
	*precision = ((typmod - VARHDRSZ) >> 16) & 0xffff;
	*scale = (((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;
	return true;
}

/* The field of extract / date_part (a constant text), lower-cased. */
static char *
DpFieldName(Const *c)
{
	text	   *t = DatumGetTextPP(c->constvalue);

	return downcase_truncate_identifier(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), false);
}

/* The known range of field of extract / date_part, or false. */
static bool
DpFixedField(const char *field, double *lo, double *hi)
{
	for (int i = 0; i < lengthof(dp_field_ranges); i++)
		if (strcmp(field, dp_field_ranges[i].field) == 0)
		{
			*lo = dp_field_ranges[i].lo;
			*hi = dp_field_ranges[i].hi;
			return true;
		}
	return false;
}

/* A date or time of a domain read as a constant of type type (days or microseconds). */
static Const *
DpTimeConst(Oid type, double v)
{
	return DpBoundConstOf(type, v);
}

/* Field of a time value as a double (the function fn on constant v of type type). */
static double
DpFieldValue(Oid fn, Const *field, Oid type, double v)
{
	Datum		r = OidFunctionCall2(fn, field->constvalue, DpTimeConst(type, v)->constvalue);

	if (get_func_rettype(fn) == NUMERICOID)
		return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, r));
	return DatumGetFloat8(r);
}

/*
 * The field function fn (extract or date_part) tried now on a date or time
 * of every kind its argument of type type may hold: dp_pg's window's edges,
 * a time with a fraction of a second, and +-infinity (a date computed with
 * dp_pg's total operators is one of those, or NULL).  A field the type
 * lacks ("hour" of a date) fails here, for every table alike, before
 * anything is read or charged; a field that succeeds on these succeeds on
 * every value (what PostgreSQL checks is the field, the type and whether
 * the value is finite).
 */
static void
DpFieldTrial(Oid fn, Const *field, Oid type)
{
	double		day = (double) USECS_PER_DAY;
	double		lo = date2j(DP_WINDOW_LO_YEAR, 1, 1) - POSTGRES_EPOCH_JDATE;
	double		hi = date2j(DP_WINDOW_HI_YEAR, 1, 1) - POSTGRES_EPOCH_JDATE;
	double		probes[] = {lo, hi, 0, 8766.5};
	Datum		special[2];
	FmgrInfo	flinfo;

	LOCAL_FCINFO(fcinfo, 2);

	if (type == DATEOID)
	{
		special[0] = DateADTGetDatum(DATEVAL_NOBEGIN);
		special[1] = DateADTGetDatum(DATEVAL_NOEND);
	}
	else
	{
		special[0] = TimestampGetDatum(DT_NOBEGIN);
		special[1] = TimestampGetDatum(DT_NOEND);
	}
	fmgr_info(fn, &flinfo);
	for (int i = 0; i < lengthof(probes) + 2; i++)
	{
		double		v = type == DATEOID ? floor(probes[i % lengthof(probes)]) :
			probes[i % lengthof(probes)] * day + 0.25 * USECS_PER_SEC;

		/* a NULL result (an oscillating field of an infinite date) is a value, not an error */
		InitFunctionCallInfoData(*fcinfo, &flinfo, 2, InvalidOid, NULL, NULL);
		fcinfo->args[0].value = field->constvalue;
		fcinfo->args[0].isnull = false;
		fcinfo->args[1].value = i < lengthof(probes) ? DpBoundConstOf(type, v)->constvalue :
			special[i - lengthof(probes)];
		fcinfo->args[1].isnull = false;
		(void) FunctionCallInvoke(fcinfo);
	}
}

/*
 * extract / date_part (field, t) in arithmetic: a fixed field's range, or a
 * monotone field on the ends of t's domain (t read through it).
 */
static Node *
DpBoundsTimeField(FuncExpr *f, DpBoundsCxt *cxt, DpInterval *iv)
{
	Const	   *field = DpBoundsConstArg(linitial(f->args), cxt);
	Node	   *t = lsecond(f->args);
	char	   *name = DpFieldName(field);
	double		lo,
				hi;
	FuncExpr   *copy;

	bool		monotone = false;

	for (int i = 0; i < lengthof(dp_monotone_fields); i++)
		monotone |= strcmp(name, dp_monotone_fields[i]) == 0;
	if (!monotone && !DpFixedField(name, &lo, &hi))
		DpBoundsRefuse(cxt, "this field of a date or time cannot be used in arithmetic on a protected table",
					   psprintf("Field \"%s\" has no known range", name));
	if (exprType(t) != DATEOID && exprType(t) != TIMESTAMPOID && exprType(t) != TIMESTAMPTZOID)
		DpBoundsRefuse(cxt, "extract and date_part on a protected table take a date or a time",
					   "Found another type");
	DpFieldTrial(f->funcid, field, exprType(t));
	if (DpFixedField(name, &lo, &hi))
	{
		Node	   *g;

		if (!DpContainsBoundedWalker(t, NULL))
		{
			/* any time: the column read through its key window (keys.c), so an infinite date gives NULL */
			g = cxt->rewrite ? DpGeneralise((Node *) f, cxt->rtis, cxt->where) : (Node *) f;
		}
		else
		{
			/* date arithmetic inside: its dates are bounded (and finite) */
			DpInterval	a;

			copy = (FuncExpr *) copyObject(f);
			linitial(copy->args) = field;
			lsecond(copy->args) = DpBoundsWalk(t, cxt, &a);
			DpCheckDateOperand(cxt, &a);
			g = (Node *) copy;
		}
		/* seconds and milliseconds have fractions (of a microsecond) */
		DpSetInterval(iv, lo, hi, strcmp(name, "second") != 0 && strcmp(name, "milliseconds") != 0);
		return g;
	}
	for (int i = 0; i < lengthof(dp_monotone_fields); i++)
		if (strcmp(name, dp_monotone_fields[i]) == 0)
		{
			DpInterval	a;
			Node	   *arg = DpBoundsWalk(t, cxt, &a);
			Oid			type = exprType(t);

			if (DpEmpty(&a))
			{
				DpSetEmpty(iv);
				return (Node *) f;
			}
			if (type != DATEOID && type != TIMESTAMPOID && type != TIMESTAMPTZOID)
				break;
			if (!isfinite(a.lo) || !isfinite(a.hi))
			{
				/* a time without bounds (a generalising expression's): so is its field */
				DpSetInterval(iv, -INFINITY, INFINITY, false);
				copy = (FuncExpr *) copyObject(f);
				linitial(copy->args) = field;
				lsecond(copy->args) = arg;
				return (Node *) copy;
			}
			lo = DpFieldValue(f->funcid, field, type, a.lo);
			hi = DpFieldValue(f->funcid, field, type, a.hi);
			/* a time zone moves a timestamptz's fields by at most a day: one unit either side */
			DpSetInterval(iv, Min(lo, hi) - (strcmp(name, "epoch") == 0 ? 0 : 1),
						  Max(lo, hi) + (strcmp(name, "epoch") == 0 ? 0 : 1), false);
			copy = (FuncExpr *) copyObject(f);
			linitial(copy->args) = field;
			lsecond(copy->args) = arg;
			return (Node *) copy;
		}
	DpBoundsRefuse(cxt, "this field of a date or time cannot be used in arithmetic on a protected table",
				   psprintf("Field \"%s\" has no known range", name));
	return NULL;
}

/* A date or time in arithmetic (date - date, date + integer) must have a domain. */
static void
DpCheckDateOperand(DpBoundsCxt *cxt, const DpInterval *a)
{
	if (!DpEmpty(a) && (!isfinite(a->lo) || !isfinite(a->hi)))
		DpBoundsRefuse(cxt, "date arithmetic on a protected table needs bounded dates",
					   "Give the date columns value domains (CHECK constraints or public keys)");
}

/* arg converted to type by a widening cast (the common type of a mixed total operator). */
static Node *
DpWiden(Node *arg, Oid type)
{
	Oid			from = exprType(arg);
	Oid			fn = InvalidOid;

	if (from == type)
		return arg;
	if (type == INT4OID && from == INT2OID)
		fn = F_INT4_INT2;
	else if (type == INT8OID && from == INT2OID)
		fn = F_INT8_INT2;
	else if (type == INT8OID && from == INT4OID)
		fn = F_INT8_INT4;
	else if (type == FLOAT8OID && from == FLOAT4OID)
		fn = F_FLOAT8_FLOAT4;
	else
		elog(ERROR, "dp_pg: no widening cast from %s to %s", format_type_be(from), format_type_be(type));
	return (Node *) makeFuncExpr(fn, type, list_make1(arg), InvalidOid, InvalidOid, COERCE_IMPLICIT_CAST);
}

/*
 * The step op (function fn, result rettype) on the rewritten arguments args
 * as dp_pg's total operator (total.c), or NULL for a step that cannot fail
 * on any value its operands produce and stays PostgreSQL's.
 */
static Node *
DpTotalStep(DpBoundsOp op, Oid fn, Oid rettype, List *args)
{
	DpTotalKind kind = DP_TOTAL_NONE;

#ifdef DP_PG_TEST_SWITCHES
	if (dp_debug_raw_operators)
		return NULL;			/* the expression fuzzer's positive control */
#endif
	switch (op)
	{
		case DP_OP_ADD:
			kind = DP_TOTAL_ADD;
			break;
		case DP_OP_SUB:
			kind = DP_TOTAL_SUB;
			break;
		case DP_OP_MUL:
			kind = DP_TOTAL_MUL;
			break;
		case DP_OP_DIV:
			kind = fn == F_NUMERIC_DIV_TRUNC ? DP_TOTAL_DIV_TRUNC : DP_TOTAL_DIV;
			break;
		case DP_OP_MOD:
			kind = DP_TOTAL_MOD;
			break;
		case DP_OP_NEG:
			kind = DP_TOTAL_NEG;
			break;
		case DP_OP_ABS:
			kind = DP_TOTAL_ABS;
			break;
		case DP_OP_CAST:
			/* a float to numeric: within +-1e300 (total.c keeps numerics there) */
			if (fn == F_NUMERIC_FLOAT4 || fn == F_NUMERIC_FLOAT8)
				kind = DP_TOTAL_NUMERIC;
			/* widening conversions, integers to real, a boolean to an integer: cannot fail */
			else if (DpIsWideningCast(fn) || fn == F_INT4_BOOL || fn == F_FLOAT4_INT2 || fn == F_FLOAT4_INT4 ||
					 fn == F_FLOAT4_INT8)
				return NULL;
			/* the others narrow: total.c's */
			else
				kind = DpTotalCastTo(rettype);
			break;
		case DP_OP_TYPMOD:
			kind = DP_TOTAL_NUMERIC_TYPMOD;
			break;
		case DP_OP_DATE_DIFF:
			kind = DP_TOTAL_DATE_DIFF;
			break;
		case DP_OP_DATE_ADD:
			kind = DP_TOTAL_DATE_ADD;
			/* integer + date: the date first */
			if (exprType(linitial(args)) != DATEOID)
				args = list_make2(lsecond(args), linitial(args));
			break;
		case DP_OP_DATE_SUB:
			kind = DP_TOTAL_DATE_SUB;
			break;
		default:
			return NULL;		/* POS, SIGN, FLOOR, CEIL, ROUND, TRUNC and their scales */
	}
	if (kind == DP_TOTAL_NONE)
		return NULL;
	if (kind >= DP_TOTAL_ADD && kind <= DP_TOTAL_MOD)
		args = list_make2(DpWiden(linitial(args), rettype), DpWiden(lsecond(args), rettype));
	return (Node *) makeFuncExpr(DpTotalFunction(kind), rettype, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/* A step of the grammar (FuncExpr or OpExpr of dp_bounds_ops). */
static Node *
DpBoundsStep(Node *node, DpBoundsOp op, DpBoundsCxt *cxt, DpInterval *iv)
{
	List	   *args = DpBoundsArgs(node);
	Oid			rettype = exprType(node);
	Oid			fn = DpBoundsFunction(node);
	DpInterval	a,
				b;
	Node	   *copy;
	List	   *newargs = NIL;

	if (op == DP_OP_TIME_FIELD)
		return DpBoundsTimeField((FuncExpr *) node, cxt, iv);
	if (IsA(node, OpExpr) && ((OpExpr *) node)->opno >= FirstNormalObjectId)
		DpBoundsRefuse(cxt, "only built-in operators may compute on a protected table", "Found another one");
	switch (op)
	{
		case DP_OP_ADD:
		case DP_OP_SUB:
		case DP_OP_MUL:
		case DP_OP_DIV:
		case DP_OP_MOD:
			newargs = list_make2(DpBoundsWalk(linitial(args), cxt, &a), DpBoundsWalk(lsecond(args), cxt, &b));
			DpBinaryInterval(cxt, op, DpIntegerType(rettype) || fn == F_NUMERIC_DIV_TRUNC, &a, &b, iv);
			break;
		case DP_OP_NEG:
		case DP_OP_POS:
		case DP_OP_ABS:
		case DP_OP_SIGN:
		case DP_OP_FLOOR:
		case DP_OP_CEIL:
		case DP_OP_ROUND:
		case DP_OP_TRUNC:
			newargs = list_make1(DpBoundsWalk(linitial(args), cxt, &a));
			DpUnaryInterval(cxt, op, &a, iv);
			break;
		case DP_OP_ROUND_SCALE:
		case DP_OP_TRUNC_SCALE:
			{
				Const	   *s = DpBoundsConstArg(lsecond(args), cxt);
				int32		scale = DatumGetInt32(s->constvalue);
				double		unit = pow(10, -(double) Max(Min(scale, 300), -300));

				newargs = list_make2(DpBoundsWalk(linitial(args), cxt, &a), s);
				if (DpEmpty(&a))
					DpSetEmpty(iv);
				else if (!isfinite(a.lo) || !isfinite(a.hi))
					DpBoundsRefuse(cxt, "round and trunc on a protected table need bounded operands",
								   "The operand's values are not bounded");
				else
					DpSetInterval(iv, a.lo - unit, a.hi + unit, a.integral || scale <= 0);
				break;
			}
		case DP_OP_CAST:
			newargs = list_make1(DpBoundsWalk(linitial(args), cxt, &a));
			DpCastInterval(cxt, rettype, &a, iv);
			break;
		case DP_OP_TYPMOD:
			{
				Const	   *tm = DpBoundsConstArg(lsecond(args), cxt);
				int			precision,
							scale;

				newargs = list_make2(DpBoundsWalk(linitial(args), cxt, &a), tm);
				*iv = a;
				if (!DpEmpty(&a) && DpNumericTypmod(DatumGetInt32(tm->constvalue), &precision, &scale))
				{
					double		unit = pow(10, -(double) scale);

					if (!isfinite(a.lo) || !isfinite(a.hi) ||
						Max(fabs(a.lo), fabs(a.hi)) + unit >= pow(10, precision - scale) * (1 - 1e-9))
						DpBoundsRefuse(cxt, "a cast to numeric(p, s) on a protected table could overflow",
									   psprintf("Values up to %g do not fit numeric(%d, %d)",
												Max(fabs(a.lo), fabs(a.hi)), precision, scale));
					DpSetInterval(iv, a.lo - unit, a.hi + unit, a.integral);
				}
				break;
			}
		case DP_OP_DATE_DIFF:
			newargs = list_make2(DpBoundsWalk(linitial(args), cxt, &a), DpBoundsWalk(lsecond(args), cxt, &b));
			DpCheckDateOperand(cxt, &a);
			DpCheckDateOperand(cxt, &b);
			if (DpEmpty(&a) || DpEmpty(&b))
				DpSetEmpty(iv);
			else
				DpSetInterval(iv, a.lo - b.hi, a.hi - b.lo, true);
			break;
		case DP_OP_DATE_ADD:
		case DP_OP_DATE_SUB:
			{
				bool		date_first = exprType(linitial(args)) == DATEOID;
				DpInterval *d = date_first ? &a : &b;
				DpInterval *n = date_first ? &b : &a;

				newargs = list_make2(DpBoundsWalk(linitial(args), cxt, &a), DpBoundsWalk(lsecond(args), cxt, &b));
				DpCheckDateOperand(cxt, d);
				if (DpEmpty(&a) || DpEmpty(&b))
					DpSetEmpty(iv);
				else
				{
					if (!isfinite(n->lo) || !isfinite(n->hi))
						DpBoundsRefuse(cxt, "date arithmetic on a protected table needs bounded day counts",
									   "Give the integer columns value domains");
					if (op == DP_OP_DATE_ADD)
						DpSetInterval(iv, d->lo + n->lo, d->hi + n->hi, true);
					else
						DpSetInterval(iv, d->lo - n->hi, d->hi - n->lo, true);
					/* inside the dates PostgreSQL holds (date_pli's and date_mii's check) */
					if (iv->lo < DATETIME_MIN_JULIAN - POSTGRES_EPOCH_JDATE ||
						iv->hi >= DATE_END_JULIAN - POSTGRES_EPOCH_JDATE)
						DpBoundsRefuse(cxt, "date arithmetic on a protected table could leave the range of dates",
									   "Narrow the value domains");
				}
				break;
			}
		default:
			elog(ERROR, "dp_pg: unexpected step");
	}
	if (rettype == FLOAT4OID && !DpEmpty(iv))
	{
		/* real rounds to 24 bits: a value of the interval may round just beyond it */
		iv->lo -= fabs(iv->lo) * 1e-6;
		iv->hi += fabs(iv->hi) * 1e-6;
	}
	if (rettype != DATEOID)
		DpCheckFits(cxt, rettype, iv, "a step");
	if (!cxt->rewrite)
		return node;
	copy = DpTotalStep(op, fn, rettype, newargs);
	if (copy != NULL)
		return copy;
	/* a step that cannot fail on any value (floor, round, sign, a widening cast, ...): PostgreSQL's */
	copy = copyObject(node);
	if (IsA(copy, FuncExpr))
		((FuncExpr *) copy)->args = newargs;
	else
		((OpExpr *) copy)->args = newargs;
	return copy;
}

/* The interval of a generalising expression of keys.c (without arithmetic): a fixed field's, or unbounded. */
static Node *
DpBoundsGeneralised(Node *node, DpBoundsCxt *cxt, DpInterval *iv)
{
	Node	   *top = node;

	DpSetInterval(iv, -INFINITY, INFINITY, false);
	/* integer casts of a field, and the field itself */
	while (IsA(top, FuncExpr) && list_length(((FuncExpr *) top)->args) == 1 &&
		   DpBoundsOpOf(((FuncExpr *) top)->funcid) == DP_OP_CAST)
		top = linitial(((FuncExpr *) top)->args);
	if (IsA(top, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) top;

		switch (f->funcid)
		{
			case F_WIDTH_BUCKET_FLOAT8_FLOAT8_FLOAT8_INT4:
			case F_WIDTH_BUCKET_NUMERIC_NUMERIC_NUMERIC_INT4:
				/* buckets 0 .. count + 1 */
				if (IsA(lfourth(f->args), Const) && !((Const *) lfourth(f->args))->constisnull)
					DpSetInterval(iv, 0, (double) DatumGetInt32(((Const *) lfourth(f->args))->constvalue) + 1, true);
				break;
			case F_LENGTH_TEXT:
			case F_CHAR_LENGTH_TEXT:
			case F_CHARACTER_LENGTH_TEXT:
			case F_OCTET_LENGTH_TEXT:
			case F_STRPOS:
			case F_POSITION_TEXT_TEXT:
				/* positions and lengths in a text of at most 1 GB */
				DpSetInterval(iv, 0, MaxAllocSize, true);
				break;
			default:
				break;
		}
	}
	if (IsA(top, FuncExpr) && DpBoundsOpOf(((FuncExpr *) top)->funcid) == DP_OP_TIME_FIELD &&
		IsA(linitial(((FuncExpr *) top)->args), Const))
	{
		double		lo,
					hi;

		if (DpFixedField(DpFieldName(linitial(((FuncExpr *) top)->args)), &lo, &hi))
			DpSetInterval(iv, lo, hi, false);
	}
	return cxt->rewrite ? DpGeneralise(node, cxt->rtis, cxt->where) : node;
}

/*
 * The walk: node rewritten (its columns read through their domains) and its
 * interval.  Anything outside the grammar is refused.
 */
static Node *
DpBoundsWalk(Node *node, DpBoundsCxt *cxt, DpInterval *iv)
{
	Oid			type;

	check_stack_depth();
	if (node == NULL)
	{
		DpSetEmpty(iv);
		return NULL;
	}
	if (cxt->rewrite)
		DpRowStep(cxt->where);
	type = exprType(node);
	if (IsA(node, RelabelType))
	{
		RelabelType *r = (RelabelType *) copyObject(node);

		r->arg = (Expr *) DpBoundsWalk((Node *) r->arg, cxt, iv);
		return (Node *) r;
	}
	if (IsA(node, Const))
	{
		DpConstInterval(cxt, (Const *) node, iv);
		return node;
	}
	if (IsA(node, Var))
		return DpBoundsVar((Var *) node, cxt, iv);
	if (IsA(node, Param) || (!contain_var_clause(node) && contain_mutable_functions(node)))
		DpBoundsRefuse(cxt, "arithmetic on a protected table takes literal constants",
					   "Bound parameters and stable functions (CURRENT_DATE, now()) have values that are not known "
					   "while planning, so the expression's bounds are not either");
	if (!contain_var_clause(node) && !contain_agg_clause(node) && !contain_subplans(node) &&
		!IsA(node, SubLink) && !expression_returns_set(node))
	{
		/* a constant subexpression: computed now (it fails, if it fails, for every table alike) */
		Node	   *folded = eval_const_expressions(NULL, copyObject(node));

		if (!IsA(folded, Const))
			DpBoundsRefuse(cxt, "a constant on a protected table must be computable while planning",
						   "The planner could not compute a constant expression");
		DpConstInterval(cxt, (Const *) folded, iv);
		return folded;
	}
	if (type == BOOLOID)
	{
		/* a condition inside arithmetic (a comparison cast to an integer): shape.c's row checks */
		DpSetInterval(iv, 0, 1, true);
		return cxt->rewrite ? DpRowExpression(node, cxt->rtis, cxt->rtable, cxt->where) : node;
	}
	if (IsA(node, FuncExpr) && DpIsDomainRead(((FuncExpr *) node)->funcid))
		return DpBoundsDomainRead((FuncExpr *) node, cxt, iv);
	if (IsA(node, FuncExpr) || IsA(node, OpExpr))
	{
		DpBoundsOp	op = DpBoundsOpOf(DpBoundsFunction(node));

		if (op == DP_OP_NONE)
		{
			if (DpIsGeneralising(node))
				return DpBoundsGeneralised(node, cxt, iv);
			DpBoundsRefuse(cxt, "this function is not allowed in arithmetic on a protected table",
						   psprintf("Function %s could raise errors that reveal private values",
									get_func_name(DpBoundsFunction(node)) ? get_func_name(DpBoundsFunction(node)) : "?"));
		}
		return DpBoundsStep(node, op, cxt, iv);
	}
	switch (nodeTag(node))
	{
		case T_CaseExpr:
			{
				CaseExpr   *c = (CaseExpr *) copyObject(node);
				DpInterval	r;
				ListCell   *lc;

				if (c->arg != NULL)
					DpBoundsRefuse(cxt, "CASE with a test expression is not allowed on a protected table",
								   "Use CASE WHEN <comparison> THEN ...");
				DpSetEmpty(iv);
				foreach(lc, c->args)
				{
					CaseWhen   *w = lfirst_node(CaseWhen, lc);

					if (cxt->rewrite)
						w->expr = (Expr *) DpRowExpression((Node *) w->expr, cxt->rtis, cxt->rtable, cxt->where);
					w->result = (Expr *) DpBoundsWalk((Node *) w->result, cxt, &r);
					DpHull(iv, &r);
				}
				c->defresult = (Expr *) DpBoundsWalk((Node *) c->defresult, cxt, &r);
				DpHull(iv, &r);
				return cxt->rewrite ? (Node *) c : node;
			}
		case T_CoalesceExpr:
		case T_MinMaxExpr:
			{
				List	   *args = IsA(node, CoalesceExpr) ? ((CoalesceExpr *) node)->args : ((MinMaxExpr *) node)->args;
				List	   *newargs = NIL;
				DpInterval	r;
				DpInterval	strict;
				Node	   *copy = copyObject(node);
				ListCell   *lc;
				bool		least = IsA(node, MinMaxExpr) && ((MinMaxExpr *) node)->op == IS_LEAST;
				bool		greatest = IsA(node, MinMaxExpr) && ((MinMaxExpr *) node)->op == IS_GREATEST;

				if (IsA(node, MinMaxExpr) && (!DpBoundsType(type) || ((MinMaxExpr *) node)->minmaxtype != type))
					DpBoundsRefuse(cxt, "GREATEST and LEAST on a protected table compare numbers", "Found another type");
				DpSetEmpty(iv);
				DpSetEmpty(&strict);
				foreach(lc, args)
				{
					newargs = lappend(newargs, DpBoundsWalk(lfirst(lc), cxt, &r));
					DpHull(iv, &r);
					/*
					 * LEAST(a, b) lies in [min(a.lo, b.lo), min(a.hi, b.hi)]
					 * over the arguments that are never NULL (it skips a NULL
					 * one): a never-NULL argument's upper bound caps it
					 * (LEAST(x, 10) <= 10); GREATEST alike, mirrored
					 */
					if ((least || greatest) && !DpEmpty(&r) && DpNeverNull(lfirst(lc)))
					{
						if (DpEmpty(&strict))
							strict = r;
						else if (least)
							strict.hi = Min(strict.hi, r.hi);
						else
							strict.lo = Max(strict.lo, r.lo);
					}
				}
				if (!DpEmpty(&strict) && !DpEmpty(iv))
				{
					if (least)
						iv->hi = Min(iv->hi, strict.hi);
					else
						iv->lo = Max(iv->lo, strict.lo);
				}
				if (IsA(copy, CoalesceExpr))
					((CoalesceExpr *) copy)->args = newargs;
				else
					((MinMaxExpr *) copy)->args = newargs;
				return cxt->rewrite ? copy : node;
			}
		case T_NullIfExpr:
			{
				NullIfExpr *n = (NullIfExpr *) copyObject(node);
				DpInterval	r;

				/* a built-in equality of numbers cannot fail */
				if (n->opno >= FirstNormalObjectId || !DpBoundsType(exprType(linitial(n->args))) ||
					!DpBoundsType(exprType(lsecond(n->args))))
					DpBoundsRefuse(cxt, "NULLIF on a protected table compares numbers", "Found another comparison");
				n->args = list_make2(DpBoundsWalk(linitial(n->args), cxt, iv), DpBoundsWalk(lsecond(n->args), cxt, &r));
				return cxt->rewrite ? (Node *) n : node;
			}
		default:
			break;
	}
	DpBoundsRefuse(cxt, "this expression is not allowed in arithmetic on a protected table",
				   "Arithmetic takes numbers and dates: columns with value domains, constants, + - * / %, abs, "
				   "floor, ceil, round, trunc, casts, extract, CASE WHEN, COALESCE, NULLIF, GREATEST and LEAST");
	return NULL;
}

/* The arithmetic row expression node, rewritten (see guard.h). */
Node *
DpBoundedRowExpr(Node *node, Bitmapset *rtis, List *rtable, const char *where, bool key)
{
	DpBoundsCxt cxt = {rtis, rtable, where, true, key};
	DpInterval	iv;

	return DpBoundsWalk(node, &cxt, &iv);
}

/* The interval of a numeric row expression (see guard.h). */
void
DpBoundsOf(Node *node, List *rtable, const char *where, DpInterval *iv)
{
	DpBoundsCxt cxt = {NULL, rtable, where, false, false};

	(void) DpBoundsWalk(node, &cxt, iv);
}

/* ------------------------------------------------------------------------
 * Keys
 * ------------------------------------------------------------------------
 */

/* A released key's canonical form (see guard.h). */
Node *
DpCanonicalKey(Node *key)
{
	switch (exprType(key))
	{
		case NUMERICOID:
			return (Node *) makeFuncExpr(F_TRIM_SCALE, NUMERICOID, list_make1(key), InvalidOid, InvalidOid,
										 COERCE_EXPLICIT_CALL);
		case FLOAT8OID:
			/* -0 + 0 is +0 */
			return (Node *) makeFuncExpr(F_FLOAT8PL, FLOAT8OID, list_make2(key, DpBoundConstOf(FLOAT8OID, 0.0)),
										 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		case FLOAT4OID:
			return (Node *) makeFuncExpr(F_FLOAT4PL, FLOAT4OID, list_make2(key, DpBoundConstOf(FLOAT4OID, 0.0)),
										 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		default:
			return key;
	}
}

/* Context of DpCountColumns. */
typedef struct DpColumns
{
	List	   *vars;			/* distinct columns */
	List	   *fields;			/* fixed-field extracts (generalising subexpressions with public values) */
} DpColumns;

/* Walker: the distinct columns of an expression. */
static bool
DpCountColumns(Node *node, DpColumns *cols)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		ListCell   *lc;

		foreach(lc, cols->vars)
			if (((Var *) lfirst(lc))->varno == ((Var *) node)->varno &&
				((Var *) lfirst(lc))->varattno == ((Var *) node)->varattno)
			return false;
		cols->vars = lappend(cols->vars, node);
		return false;
	}
	return expression_tree_walker(node, DpCountColumns, cols);
}

/* Walker: the first subexpression that keys.c lists (a fixed field, width_bucket) and holds a column. */
static bool
DpFindListedPart(Node *node, Node **found)
{
	if (node == NULL)
		return false;
	if (DpIsGeneralising(node) && contain_var_clause(node) &&
		DpGeneralisedPublicKeys(node, InvalidOid, 0) != NULL)
	{
		*found = node;
		return true;
	}
	return expression_tree_walker(node, DpFindListedPart, found);
}

/* Mutator: subexpression part becomes parameter $1. */
static Node *
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

/* Strip the canonical form's wrapper (DpCanonicalKey). */
static Node *
DpStripCanonical(Node *key)
{
	if (IsA(key, FuncExpr) && (((FuncExpr *) key)->funcid == F_TRIM_SCALE ||
							   ((((FuncExpr *) key)->funcid == F_FLOAT8PL || ((FuncExpr *) key)->funcid == F_FLOAT4PL) &&
								IsA(lsecond(((FuncExpr *) key)->args), Const))))
		return linitial(((FuncExpr *) key)->args);
	return key;
}

/*
 * The public values of a GROUP BY expression key (see guard.h): a boolean
 * (false, true), a CASE whose results are constants, an expression whose
 * only column sits in a part keys.c lists (extract's fixed fields,
 * width_bucket: evaluated on each of its values), an expression of one
 * column with declared public keys (keys.c evaluates it on them).  NULL
 * otherwise.
 */
ArrayType *
DpExpressionPublicKeys(Node *key, Oid relid, int keyrti)
{
	Node	   *inner = DpStripCanonical(key);
	DpColumns	cols = {NIL, NIL};
	Node	   *part = NULL;

	if (DpContainsParamWalker(key, NULL))
		return NULL;
	if (exprType(key) == BOOLOID)
	{
		char	   *vals[2] = {"false", "true"};
		Datum		d[2] = {CStringGetTextDatum(vals[0]), CStringGetTextDatum(vals[1])};

		return construct_array(d, 2, TEXTOID, -1, false, TYPALIGN_INT);
	}
	if (IsA(inner, CaseExpr))
	{
		CaseExpr   *c = (CaseExpr *) inner;
		bool		constant = c->defresult == NULL || IsA(c->defresult, Const);
		ListCell   *lc;

		foreach(lc, c->args)
			constant &= IsA(lfirst_node(CaseWhen, lc)->result, Const);
		if (constant)
		{
			/* the results, as the key's (canonical) text: evaluated on a placeholder for the whole CASE */
			List	   *results = NIL;
			Oid			typoutput;
			bool		typvarlena;
			Datum	   *elems;
			int			n = 0;

			foreach(lc, c->args)
				results = lappend(results, lfirst_node(CaseWhen, lc)->result);
			if (c->defresult != NULL)
				results = lappend(results, c->defresult);
			getTypeOutputInfo(exprType(inner), &typoutput, &typvarlena);
			elems = palloc(sizeof(Datum) * Max(list_length(results), 1));
			foreach(lc, results)
				if (!((Const *) lfirst(lc))->constisnull)
				elems[n++] = CStringGetTextDatum(OidOutputFunctionCall(typoutput, ((Const *) lfirst(lc))->constvalue));
			return DpKeyOnValues(key, inner, construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
		}
	}
	(void) DpCountColumns(key, &cols);
	if (list_length(cols.vars) != 1)
		return NULL;
	/* a fixed field or bucket of the column, under arithmetic: the expression on the part's values */
	if (!DpIsGeneralising(inner) && DpFindListedPart(key, &part))
	{
		DpColumns	outside = {NIL, NIL};

		(void) DpCountColumns(DpPartToParam(key, part), &outside);
		if (outside.vars == NIL)
			return DpKeyOnValues(key, part, DpGeneralisedPublicKeys(part, relid, keyrti));
	}
	/* an expression of one column with declared public keys: on those keys (keys.c) */
	return DpGeneralisedPublicKeys(key, relid, keyrti);
}

/* ------------------------------------------------------------------------
 * Dates and times as numbers (min / max)
 * ------------------------------------------------------------------------
 */

/*
 * A date (days since 2000-01-01) or time (seconds since 1970) column x as a
 * float8, read through its domain, with the bounds of that number.
 */
Expr *
DpTimeAsNumber(Expr *x, List *rtable, double *lo, double *hi)
{
	Oid			type = exprType((Node *) x);
	Expr	   *e;
	DpInterval	iv;

	if (type == DATEOID)
		e = (Expr *) makeFuncExpr(F_FLOAT8_INT4, FLOAT8OID,
								  list_make1(makeFuncExpr(F_DATE_MI, INT4OID, list_make2(x, DpBoundConstOf(DATEOID, 0)),
														  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL)),
								  InvalidOid, InvalidOid, COERCE_IMPLICIT_CAST);
	else
		e = (Expr *) makeFuncExpr(type == TIMESTAMPOID ? F_DATE_PART_TEXT_TIMESTAMP : F_DATE_PART_TEXT_TIMESTAMPTZ,
								  FLOAT8OID, list_make2(makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
																  CStringGetTextDatum("epoch"), false, false), x),
								  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	DpBoundsOf((Node *) e, rtable, "min / max of a date or time", &iv);
	*lo = iv.lo;
	*hi = iv.hi;
	return e;
}

/* A number of DpTimeAsNumber back as a date or time of type type (post-processing of a released value). */
Expr *
DpNumberAsTime(Expr *d, Oid type)
{
	Expr	   *r = (Expr *) makeFuncExpr(F_ROUND_FLOAT8, FLOAT8OID, list_make1(d), InvalidOid, InvalidOid,
										  COERCE_EXPLICIT_CALL);

	if (type == DATEOID)
		return (Expr *) makeFuncExpr(DpTotalFunction(DP_TOTAL_DATE_ADD), DATEOID,
									 list_make2(DpBoundConstOf(DATEOID, 0),
												makeFuncExpr(DpTotalFunction(DP_TOTAL_INT4), INT4OID, list_make1(r),
															 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL)),
									 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	r = (Expr *) makeFuncExpr(F_TO_TIMESTAMP_FLOAT8, TIMESTAMPTZOID, list_make1(d), InvalidOid, InvalidOid,
							  COERCE_EXPLICIT_CALL);
	if (type == TIMESTAMPOID)
		r = (Expr *) makeFuncExpr(F_TIMESTAMP_TIMESTAMPTZ, TIMESTAMPOID, list_make1(r), InvalidOid, InvalidOid,
								  COERCE_EXPLICIT_CAST);
	return r;
}
