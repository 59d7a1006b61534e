/*
 * guard/floor_rows.h — the guard's floor rows: what an expression evaluated
 * on protected rows may be, and its rewrite into one that cannot fail
 * (invariant 4; docs/development.md, "The guard's floors").  Lowest first:
 *
 *   total.c       dp_pg's total operators and dp_pg.clamp_float8 (SQL
 *                 functions that never raise)
 *   domainread.c  dp_pg.domain_read: a column read through its domain
 *   regex.c       constant regular expressions
 *   runconst.c    run-time constants: made while planning, bound before the
 *                 query runs
 *   domains.c     value domains of columns and of per-unit values
 *   keys.c        generalising expressions of a column, and keys evaluated
 *                 on public values
 *   bounds.c      arithmetic with bounds derived from value domains,
 *                 rewritten to total operators
 *   canonical.c   released keys in their canonical spelling
 *   rowexpr.c     the row checks, which hand arithmetic to bounds.c (and
 *                 bounds.c hands the conditions inside it back through the
 *                 function it is given: DpRowCheck)
 *
 * Inner header of guard/; includes the floor below.
 */
#ifndef DP_GUARD_FLOOR_ROWS_H
#define DP_GUARD_FLOOR_ROWS_H

#include "guard/floor_reads.h"

/*
 * A value a domain read (domainread.c) takes as 0: nearer to zero than this
 * times the larger magnitude of the domain's bounds.
 */
#define DP_READ_FLOOR 0x1p-60

/* Floats and numerics in row expressions stay within +-DP_READ_MAX (reads, constants, total.c). */
#define DP_READ_MAX 1e300

/*
 * dp_pg's window of dates and times: 500 BC (astronomical year -499) to
 * 200000 AD.  Key columns are read through it (keys.c), date arithmetic
 * stays inside it (total.c), a date or time domain is cut to it (bounds.c).
 */
#define DP_WINDOW_LO_YEAR (-499)
#define DP_WINDOW_HI_YEAR 200000

/* ------------------------------------------------------------------------
 * total.c — dp_pg's total operators, written by bounds.c in place of
 * PostgreSQL's operators that can raise (see the file comment)
 * ------------------------------------------------------------------------
 */
typedef enum DpTotalKind
{
	DP_TOTAL_NONE,
	DP_TOTAL_ADD,
	DP_TOTAL_SUB,
	DP_TOTAL_MUL,
	DP_TOTAL_DIV,
	DP_TOTAL_MOD,
	DP_TOTAL_DIV_TRUNC,
	DP_TOTAL_NEG,
	DP_TOTAL_ABS,
	DP_TOTAL_INT2,
	DP_TOTAL_INT4,
	DP_TOTAL_INT8,
	DP_TOTAL_FLOAT4,
	DP_TOTAL_FLOAT8,
	DP_TOTAL_NUMERIC,
	DP_TOTAL_NUMERIC_TYPMOD,
	DP_TOTAL_DATE_ADD,
	DP_TOTAL_DATE_SUB,
	DP_TOTAL_DATE_DIFF
} DpTotalKind;

/* The total operator of kind (its SQL function); ERROR 42501 if the installation lacks it. */
extern Oid	DpTotalFunction(DpTotalKind kind);

/* The kind of total operator fn is, or DP_TOTAL_NONE. */
extern DpTotalKind DpTotalKindOf(Oid fn);

/* The total conversion to type (int2 .. numeric), or DP_TOTAL_NONE. */
extern DpTotalKind DpTotalCastTo(Oid type);

/* dp_pg.clamp_float8(numeric, float8, float8), total; InvalidOid if absent. */
extern Oid	DpClampFloat8Function(void);

/* ------------------------------------------------------------------------
 * regex.c — constant regular expressions on protected rows
 * ------------------------------------------------------------------------
 */

/* True if opno is a built-in regular-expression match operator (~, ~*, !~, !~*). */
extern bool DpIsRegexOperator(Oid opno);

/* The match op of the row checks: a constant pattern, compiled now; refused (42501) otherwise. */
extern Node *DpRegexRowExpr(OpExpr *op, const char *where);

/* ------------------------------------------------------------------------
 * runconst.c — run-time constants (DpRunConstantsBind is in guard.h)
 * ------------------------------------------------------------------------
 */

/* dp_pg.run_constant(anyelement) and dp_pg.run_like_pattern(text), or InvalidOid. */
extern Oid	DpRunConstantFunction(void);
extern Oid	DpRunLikePatternFunction(void);

/*
 * True if node is a run-time constant: no column, aggregate, subquery,
 * volatile or set-returning function, only trusted functions, but a bound
 * parameter or a stable function, so that it cannot be computed while
 * planning.
 */
extern bool DpIsRunConstantExpr(Node *node);

/* dp_pg.run_constant(node): evaluated once before the query runs. */
extern Node *DpRunConstant(Node *node);

/* dp_pg.run_like_pattern(pat): a bound or run-time LIKE pattern, checked once before the query runs. */
extern Node *DpRunLikePattern(Node *pat);

/*
 * Run-time constants (dp_pg.run_constant, run_like_pattern) the row checks
 * have made in this backend so far: a counter that only grows, so planning
 * nested inside planning cannot hide the outer query's.
 */
extern uint64 DpRunConstantsMade(void);

/* False if a LIKE pattern ends with its escape character (it would fail on the rows that reach its end). */
extern bool DpLikePatternComplete(const char *p);

/* ------------------------------------------------------------------------
 * domains.c — value domains (DpColumnDomain is in guard.h)
 * ------------------------------------------------------------------------
 */

/*
 * A constant's value as a double, if it can bound a column of type coltype:
 * a number for a number column, a finite date or timestamp of the column's
 * own type for a date or timestamp column (days, microseconds); coltype
 * InvalidOid takes numbers whatever the column.
 */
extern bool DpConstValue(Const *c, Oid coltype, double *v);

/* A column of a per-unit subquery V (perunit.c): its domain, when it is a per-unit value. */
typedef struct DpPerUnitColumn
{
	AttrNumber	attno;
	double		lo;
	double		hi;
	bool		integral;
	bool		value;			/* a per-unit value (its domain is known) */
} DpPerUnitColumn;

/* The domains of the columns of one V (found by bounds.c through its Query). */
typedef struct DpPerUnitDomains
{
	Query	   *v;
	int			n;
	DpPerUnitColumn *cols;
} DpPerUnitDomains;

/* Forget the per-unit subqueries of an earlier statement. */
extern void DpPerUnitReset(void);

/* Register the domains of a per-unit subquery of this statement (perunit.c). */
extern void DpPerUnitAddDomains(DpPerUnitDomains *reg);

/* The domain of column attno of per-unit subquery v, if it is a per-unit value (bounds.c reads it). */
extern bool DpPerUnitDomain(Query *v, AttrNumber attno, double *lo, double *hi, bool *integral);

/* ------------------------------------------------------------------------
 * keys.c — generalising expressions of a column (date_trunc, extract,
 * width_bucket, ...), and keys evaluated on public values
 * ------------------------------------------------------------------------
 */

/* True if node is a generalising expression of keys.c's grammar. */
extern bool DpIsGeneralising(Node *node);

/* True if node is dp_pg.key_window(column), a key column read through the key window. */
extern bool DpIsKeyWindowCall(Node *node);

/* The generalising expression node of one column of rtis, its column read through the key window; ERROR 42501 otherwise. */
extern Node *DpGeneralise(Node *node, Bitmapset *rtis, const char *where);

/* The complete list of a generalising GROUP BY key's values when it is public (text[]), or NULL. */
extern ArrayType *DpGeneralisedPublicKeys(Node *key, Oid relid, int keyrti);

/* The bind-time checks of generalising expressions with bound parameters made so far (taken: the list is emptied). */
extern List *DpTakeKeyChecks(void);

/* expr with its subexpression part replaced by parameter $1. */
extern Node *DpPartToParam(Node *node, Node *part);

/* The text forms of expr with subexpression part replaced by each of the text values (NULL: NULL). */
extern void DpEvalOnValues(Node *expr, Node *part, Datum *values, int n, char **out);

/* The distinct text forms of key with subexpression part replaced by each of values (text[]), sorted. */
extern ArrayType *DpKeyOnValues(Node *key, Node *part, ArrayType *values);

/* ------------------------------------------------------------------------
 * bounds.c — row expressions with derived bounds (interval arithmetic)
 * ------------------------------------------------------------------------
 */

/* The values a numeric (or date) row expression can take. */
typedef struct DpInterval
{
	double		lo;				/* every non-NULL value lies in [lo, hi]; lo > hi: only NULL */
	double		hi;
	bool		integral;		/* every value is an integer */
} DpInterval;

/*
 * A row checker (rowexpr.c's DpRowExpression): node checked and rewritten as
 * a row expression over the columns of rtis, entries of rtable.  bounds.c
 * hands the conditions inside arithmetic (CASE WHEN, a comparison cast to an
 * integer) to the one it is given.
 */
typedef Node *(*DpRowCheck) (Node *node, Bitmapset *rtis, List *rtable, const char *where);

/* True if node is arithmetic (or holds arithmetic under a rounding function) that bounds.c judges. */
extern bool DpIsBoundedExpression(Node *node);

/* True if fn is one of dp_pg.domain_read(...), the total reads of a column through its domain. */
extern bool DpIsDomainRead(Oid fn);

/*
 * The arithmetic row expression node, its columns read through their value
 * domains (numeric ones in canonical form when key: a GROUP BY key), the
 * conditions inside it checked by cond; refused (42501) unless total.
 */
extern Node *DpBoundedRowExpr(Node *node, Bitmapset *rtis, List *rtable, const char *where, bool key,
							   DpRowCheck cond);

/* The interval of a numeric row expression over the entries of rtable (ERROR 42501 when it has none). */
extern void DpBoundsOf(Node *node, List *rtable, const char *where, DpInterval *iv);

/* A date or time column as a float8 (days or seconds) with its bounds, and back (min / max). */
extern Expr *DpTimeAsNumber(Expr *x, List *rtable, double *lo, double *hi);
extern Expr *DpNumberAsTime(Expr *d, Oid type);

/* ------------------------------------------------------------------------
 * canonical.c — released keys are functions of their equality class
 * ------------------------------------------------------------------------
 */

/* A released key's canonical form: numeric without trailing zeros, floats without -0. */
extern Node *DpCanonicalKey(Node *key);

/* key without DpCanonicalKey's wrapper. */
extern Node *DpStripCanonical(Node *key);

/* Release the DP level's row keys in their canonical spelling; ERROR for keys without one. */
extern void DpCanonicalReleasedKeys(Query *d);

/* ERROR before the charge if values of key, released as what, have no canonical spelling. */
extern void DpCanonicalCheckKey(Node *key, const char *what);

/* ------------------------------------------------------------------------
 * rowexpr.c — the row checks
 * ------------------------------------------------------------------------
 */

/* What the row checks may read, and where they are (for messages). */
typedef struct DpRowContext
{
	const char *where;			/* for messages */
	Bitmapset  *rtis;			/* range-table entries whose columns may be read */
	List	   *rtable;			/* the query's range table (bounds.c reads the columns' domains) */
	bool		key;			/* a GROUP BY key: numeric columns read in canonical form (bounds.c) */
} DpRowContext;

/* A row expression (WHERE, JOIN, FILTER, dp aggregate value, GROUP BY key) checked and rewritten. */
extern Node *DpRowExpr(Node *node, DpRowContext *cxt);

/* The same for the columns of rtis, entries of rtable (not a GROUP BY key): a DpRowCheck. */
extern Node *DpRowExpression(Node *node, Bitmapset *rtis, List *rtable, const char *where);

/* True if type's built-in comparison operators cannot fail. */
extern bool DpSafeComparisonType(Oid type);

#endif							/* DP_GUARD_FLOOR_ROWS_H */
