/*
 * guard/shape.c — the accepted shape of an analyst's query on a protected
 * table (invariants 4 and 6).
 *
 * The query's top level is the DP level and what sits on it:
 *
 *   SELECT <expressions over GROUP BY keys, dp aggregates, constants>
 *   FROM <the protected table>
 *        [[LEFT] JOIN <public table> ON <its unique key> = <protected column> ...]
 *   [WHERE <row predicate>] [GROUP BY <columns>]
 *   [HAVING ...] [WINDOW ...] [ORDER BY ...] [DISTINCT ...] [LIMIT / OFFSET]
 *
 * The DP level is FROM, WHERE, GROUP BY and the dp aggregates (their value
 * arguments, FILTER clauses, bounds, bins and mechanisms); release.c makes it
 * a level of its own.  Everything else is post-processing of released values
 * and may use any trusted SQL (window functions, DISTINCT, subqueries,
 * volatile functions), as long as it names no column of the tables except a
 * GROUP BY key and calls no aggregate but dp aggregates.
 *
 * Rows are evaluated only by *total* expressions — nothing that can raise an
 * error, a notice or a side effect depending on a private value, or on
 * whether a private row reaches it: table columns, bound parameters,
 * constants, AND / OR / NOT, IS [NOT] NULL, IS [NOT] TRUE / FALSE / UNKNOWN,
 * CASE WHEN, COALESCE, binary-compatible relabelling, widening numeric casts,
 * built-in comparisons of basic types, IN / = ANY over constants, and LIKE /
 * ILIKE with a constant pattern that is valid as a whole (no trailing
 * escape) under a deterministic collation.  Every subexpression without a
 * column or parameter is computed now, while planning (so it fails, if it
 * fails, for every row alike), every collation is a superuser's and its
 * locale is opened now, not on the first row that reaches it.  Bounds, bins
 * and mechanisms may be constants, bound parameters and stable functions of
 * those; callsite.c evaluates them once and the plan carries the values.
 *
 * Public tables (invariant 6): a plain table without inheritance children or
 * row-level security, that no analyst owns or can write (INSERT, UPDATE,
 * DELETE, TRUNCATE, TRIGGER, column-level INSERT / UPDATE, or the owner's
 * privileges), joined through equalities that cover every column of one of
 * its unique, non-deferrable, valid indexes without expressions or
 * predicate, each equality an equality of the index's operator family under
 * the index's collation or a deterministic one: each protected row meets at
 * most one of its rows, so no sensitivity changes.
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include <float.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "aggregates.h"
#include "release.h"
#include "guard/guard.h"
#include "ledger.h"

/* ERROR 42501 naming the rule a query broke (its detail says why, or what to write). */
void
DpGuardRefuse(const char *rule, const char *detail)
{
	DpGuardRefuseHint(rule, detail, NULL);
}

/* ERROR 42501 naming the rule a query broke, with a short hint saying what to write instead. */
void
DpGuardRefuseHint(const char *rule, const char *detail, const char *hint)
{
	DpLedgerNoteRefusal(rule, ERRCODE_INSUFFICIENT_PRIVILEGE);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("dp_pg: %s", rule),
			 errdetail("%s", detail),
			 hint != NULL ? errhint("%s", hint) : 0));
}

/* ------------------------------------------------------------------------
 * Row expressions
 * ------------------------------------------------------------------------
 */

/* Context of DpRowExprMutator. */
typedef struct DpRowContext
{
	const char *where;			/* for messages */
	Bitmapset  *rtis;			/* range-table entries whose columns may be read */
	List	   *rtable;			/* the query's range table (bounds.c reads the columns' domains) */
	bool		key;			/* a GROUP BY key: numeric columns read in canonical form (bounds.c) */
} DpRowContext;

/* Is fn a widening numeric cast (smallint to integer, any integer to numeric or float8, real to float8)? */
bool
DpIsWideningCast(Oid fn)
{
	switch (fn)
	{
		case F_INT4_INT2:
		case F_INT8_INT2:
		case F_INT8_INT4:
		case F_NUMERIC_INT2:
		case F_NUMERIC_INT4:
		case F_NUMERIC_INT8:
		case F_FLOAT8_INT2:
		case F_FLOAT8_INT4:
		case F_FLOAT8_INT8:
		case F_FLOAT8_FLOAT4:
			return true;
		default:
			return false;
	}
}

/* Type whose built-in comparison operators cannot fail. */
static bool
DpSafeComparisonType(Oid type)
{
	switch (type)
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
		case CHAROID:
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case INTERVALOID:
		case OIDOID:
			return true;
		default:
			return false;
	}
}

/* Is opno a built-in comparison (or LIKE) operator on safe types?  Sets *is_like. */
static bool
DpSafeOperator(Oid opno, bool *is_like)
{
	HeapTuple	tup;
	Form_pg_operator op;
	const char *name;
	bool		ok;

	*is_like = false;
	if (opno >= FirstNormalObjectId)
		return false;
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	if (!HeapTupleIsValid(tup))
		return false;
	op = (Form_pg_operator) GETSTRUCT(tup);
	name = NameStr(op->oprname);
	ok = op->oprresult == BOOLOID && op->oprkind == 'b' &&
		DpSafeComparisonType(op->oprleft) && DpSafeComparisonType(op->oprright);
	if (ok)
	{
		if (strcmp(name, "~~") == 0 || strcmp(name, "~~*") == 0 ||
			strcmp(name, "!~~") == 0 || strcmp(name, "!~~*") == 0)
			*is_like = true;
		else if (!(strcmp(name, "=") == 0 || strcmp(name, "<>") == 0 ||
				   strcmp(name, "<") == 0 || strcmp(name, "<=") == 0 ||
				   strcmp(name, ">") == 0 || strcmp(name, ">=") == 0))
			ok = false;
	}
	ReleaseSysCache(tup);
	return ok;
}

/* check_functions_in_node callback: true for a function that is not trusted. */
static bool
DpUntrustedFunctionCallback(Oid fn, void *context)
{
	return !DpTrustedFunction(fn);
}

/* Walker: true if the expression contains a Param. */
bool
DpContainsParamWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return true;
	return expression_tree_walker(node, DpContainsParamWalker, context);
}

/* True if node needs no row and no parameter: the planner can compute it now. */
static bool
DpIsConstantExpr(Node *node)
{
	return !contain_var_clause(node) && !contain_mutable_functions(node) &&
		!contain_agg_clause(node) && !contain_subplans(node) &&
		!expression_returns_set(node) && !DpContainsParamWalker(node, NULL);
}

/* Walker: true if a function of the expression is not trusted (not built in, not a superuser's). */
static bool
DpUntrustedFunctionWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, (check_function_callback) DpUntrustedFunctionCallback, NULL))
		return true;
	return expression_tree_walker(node, DpUntrustedFunctionWalker, context);
}

/*
 * True if node is a run-time constant: no column, aggregate, subquery,
 * volatile function or set-returning function, only trusted functions, but
 * a bound parameter or a stable function, so that it cannot be computed
 * while planning.  callsite.c computes it once before the query runs.
 */
bool
DpIsRunConstantExpr(Node *node)
{
	return !IsA(node, Const) && !IsA(node, Param) &&
		!contain_var_clause(node) && !contain_volatile_functions(node) &&
		!contain_agg_clause(node) && !contain_subplans(node) && !IsA(node, SubLink) &&
		!expression_returns_set(node) && !DpContainsNonExternParam(node, NULL) &&
		!DpUntrustedFunctionWalker(node, NULL) && OidIsValid(DpRunConstantFunction());
}

/* Run-time constants made so far in this backend (never reset: see DpRunConstantsMade). */
static uint64 run_constants_made = 0;

/* The number of run-time constants the guard has made in this backend (see guard.h). */
uint64
DpRunConstantsMade(void)
{
	return run_constants_made;
}

/* dp_pg.run_constant(node): evaluated once before the query runs (callsite.c). */
Node *
DpRunConstant(Node *node)
{
	Oid			type = exprType(node);
	Oid			coll = exprCollation(node);

	run_constants_made++;
	return (Node *) makeFuncExpr(DpRunConstantFunction(), type, list_make1(node), coll, coll, COERCE_EXPLICIT_CALL);
}

/* A constant, a bound parameter, or an array of those: values that are only compared. */
static bool
DpIsBoundValue(Node *node)
{
	if (node == NULL)
		return false;
	if (IsA(node, RelabelType))
		return DpIsBoundValue((Node *) ((RelabelType *) node)->arg);
	if (IsA(node, Param))
		return ((Param *) node)->paramkind == PARAM_EXTERN;
	if (IsA(node, ArrayExpr))
	{
		ListCell   *lc;

		foreach(lc, ((ArrayExpr *) node)->elements)
			if (!DpIsBoundValue(lfirst(lc)))
				return false;
		return true;
	}
	return IsA(node, Const);
}

/*
 * A collation used on protected rows: a superuser's, and its locale opened
 * now (a locale that cannot be opened fails here, not on the first row that
 * reaches the comparison).  Collatable inputs need one.
 */
void
DpCheckCollation(Oid coll, Oid argtype, bool need_deterministic, const char *where)
{
	if (!OidIsValid(coll))
	{
		if (type_is_collatable(argtype))
			DpGuardRefuse("a comparison of text needs a collation",
						  psprintf("The collations in %s conflict; add a COLLATE clause.", where));
		return;
	}
	if (!DpTrustedCollation(coll))
		DpGuardRefuse("only collations owned by a superuser may be used on a protected table",
					  psprintf("Found another one in %s.", where));
	if (need_deterministic && !get_collation_isdeterministic(coll))
		DpGuardRefuse("LIKE under a nondeterministic collation is not allowed on a protected table",
					  psprintf("It fails only on the rows that reach it (%s).", where));
	DpOpenCollation(coll);
}

/*
 * A LIKE / ILIKE pattern is matched lazily, so a trailing escape character
 * fails only when a row's value reaches the end of the pattern: refuse such
 * a pattern now.
 */
static void
DpCheckLikePattern(Const *pattern, const char *where)
{
	if (pattern->constisnull)
		return;
	if (!DpLikePatternComplete(TextDatumGetCString(pattern->constvalue)))
		DpGuardRefuse("this LIKE pattern ends with its escape character",
					  psprintf("It would fail only on the rows that reach its end (%s).", where));
}

/* False if LIKE pattern p ends with its escape character (see guard.h). */
bool
DpLikePatternComplete(const char *p)
{
	int			len = strlen(p);

	for (int i = 0; i < len;)
	{
		if (p[i] == '\\')
		{
			if (i + 1 >= len)
				return false;
			i++;
		}
		i += pg_mblen(p + i);
	}
	return true;
}

static Node *DpRowExprMutator(Node *node, DpRowContext *cxt);

/*
 * The steps of the row expressions of the query being planned: at most
 * DP_MAX_ROW_STEPS.  Every accepted step takes bounded time on any value
 * (total.c bounds the digits of numerics), so a row that reaches a CASE
 * branch adds at most that many bounded steps to the query's time: not
 * enough to be seen, however the branch was written.
 */
#define DP_MAX_ROW_STEPS 10000
static int	row_steps = 0;

/* See guard.h. */
void
DpRowStepsReset(void)
{
	row_steps = 0;
}

/* See guard.h. */
void
DpRowStep(const char *where)
{
	if (++row_steps > DP_MAX_ROW_STEPS)
		DpGuardRefuse(psprintf("the row expressions of a query on a protected table have at most %d steps",
							   DP_MAX_ROW_STEPS),
					  psprintf("This query has more (in %s); their time on one row could be seen in the query's.",
							   where));
}

/*
 * A row expression (WHERE, JOIN, FILTER, dp aggregate value): only what
 * cannot fail on a private value; constants are computed now.  Returns the
 * expression with its constants folded.
 */
static Node *
DpRowExpr(Node *node, DpRowContext *cxt)
{
	return DpRowExprMutator(node, cxt);
}

/* A row expression checked as above, for bounds.c (see guard.h). */
Node *
DpRowExpression(Node *node, Bitmapset *rtis, List *rtable, const char *where)
{
	DpRowContext cxt = {where, rtis, rtable, false};

	return DpRowExprMutator(node, &cxt);
}

static Node *
DpRowExprMutator(Node *node, DpRowContext *cxt)
{
	const char *where = cxt->where;

	if (node == NULL)
		return NULL;
	if (IsA(node, List) || IsA(node, CaseWhen))
		return expression_tree_mutator(node, DpRowExprMutator, cxt);
	DpRowStep(where);
	if (DpIsConstantExpr(node) && !IsA(node, Const))
	{
		/* computed while planning: an error cannot depend on rows */
		Node	   *folded = eval_const_expressions(NULL, copyObject(node));

		if (!IsA(folded, Const))
			DpGuardRefuse("a constant on a protected table must be computable while planning",
						  psprintf("The planner could not compute a constant expression in %s.", where));
		return folded;
	}
	if (DpIsRunConstantExpr(node))
		return DpRunConstant(node);		/* computed once before the query runs */
	/* arithmetic on columns with value domains (bounds.c) */
	if (DpIsBoundedExpression(node) || (IsA(node, FuncExpr) && DpIsDomainRead(((FuncExpr *) node)->funcid)))
		return DpBoundedRowExpr(node, cxt->rtis, cxt->rtable, where, cxt->key);
	switch (nodeTag(node))
	{
		case T_Const:
			return node;
		case T_Param:
			if (((Param *) node)->paramkind != PARAM_EXTERN)
				DpGuardRefuse("only bound parameters may appear on a protected table",
							  psprintf("Found another parameter in %s.", where));
			return node;		/* a bound value, compared as it is: cannot fail */
		case T_Var:
			{
				Var		   *v = (Var *) node;

				if (v->varlevelsup != 0 || v->varattno <= 0 || !bms_is_member(v->varno, cxt->rtis))
					DpGuardRefuse("system columns and whole-row references are not allowed",
								  psprintf("Found one in %s.", where));
				return node;
			}
		case T_BoolExpr:
		case T_NullTest:
		case T_BooleanTest:
		case T_RelabelType:
		case T_CoalesceExpr:
			return expression_tree_mutator(node, DpRowExprMutator, cxt);
		case T_FuncExpr:
			{
				/* widening numeric casts cannot fail; nothing else is allowed */
				FuncExpr   *f = (FuncExpr *) node;

				if (DpIsWideningCast(f->funcid) &&
					(f->funcformat == COERCE_IMPLICIT_CAST || f->funcformat == COERCE_EXPLICIT_CAST))
					return expression_tree_mutator(node, DpRowExprMutator, cxt);
				switch (f->funcid)
				{
					case F_FLOAT8_NUMERIC:
						/*
						 * numeric to float8 fails beyond the range of a double
						 * (1e400, 1e-400): a numeric column with bounds given as
						 * float8 (dp_sum(amount, 0.0, 100.0, ...), as drivers bind
						 * doubles) is converted by the total clamp instead; the
						 * aggregate clamps to its own bounds anyway
						 */
						if ((f->funcformat == COERCE_IMPLICIT_CAST || f->funcformat == COERCE_EXPLICIT_CAST) &&
							OidIsValid(DpClampFloat8Function()))
						{
							Node	   *arg = DpRowExprMutator(linitial(f->args), cxt);

							return (Node *) makeFuncExpr(DpClampFloat8Function(), FLOAT8OID,
														 list_make3(arg,
																	makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
																			  Float8GetDatum(-DBL_MAX), false, FLOAT8PASSBYVAL),
																	makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
																			  Float8GetDatum(DBL_MAX), false, FLOAT8PASSBYVAL)),
														 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
						}
						break;
					case F_LOWER_TEXT:
					case F_UPPER_TEXT:
						/* case mapping of valid text under a collation opened now cannot fail */
						DpCheckCollation(f->inputcollid, TEXTOID, false, where);
						return expression_tree_mutator(node, DpRowExprMutator, cxt);
					default:
						break;
				}
				/* dp_pg.clamp_float8 (a translated avg of a numeric column) cannot fail either */
				if (f->funcid == DpClampFloat8Function())
					return expression_tree_mutator(node, DpRowExprMutator, cxt);
				/* date_trunc, extract, width_bucket, floor, casts to date, ... of a column (keys.c) */
				if (DpIsGeneralising(node))
					return DpGeneralise(node, cxt->rtis, where);
				DpGuardRefuseHint("this function is not allowed on a protected table",
								  psprintf("Function %s in %s could raise errors that reveal private values; "
										   "only widening numeric casts are allowed on columns.",
										   get_func_name(f->funcid) ? get_func_name(f->funcid) : "?", where),
								  "Compute it over the released values, in a query around the dp query.");
				return NULL;
			}
		case T_CaseExpr:
			if (((CaseExpr *) node)->arg != NULL)
				DpGuardRefuse("CASE with a test expression is not allowed on a protected table",
							  psprintf("Use CASE WHEN <comparison> THEN ... in %s.", where));
			return expression_tree_mutator(node, DpRowExprMutator, cxt);
		case T_OpExpr:
		case T_DistinctExpr:
			if (IsA(node, OpExpr) && DpIsGeneralising(node))
				return DpGeneralise(node, cxt->rtis, where);	/* a date shifted by an interval */
			{
				OpExpr	   *op = (OpExpr *) expression_tree_mutator(node, DpRowExprMutator, cxt);
				bool		is_like;

				if (IsA(op, OpExpr) && DpIsRegexOperator(op->opno))
					return DpRegexRowExpr(op, where);	/* a constant regular expression (regex.c) */
				if (!DpSafeOperator(op->opno, &is_like))
					DpGuardRefuseHint("this operator is not allowed on a protected table",
									  psprintf("Operator %s in %s could fail or leak on private values; only comparisons and LIKE are allowed.",
											   get_opname(op->opno) ? get_opname(op->opno) : "?", where),
									  "Compare the column itself with a constant (amount > 10, not amount * 2 > 20); for bins use width_bucket.");
				if (is_like)
				{
					Node	   *pat = lsecond(op->args);

					/* a bound or run-time pattern: checked once before the query runs (callsite.c) */
					if (IsA(pat, FuncExpr) && ((FuncExpr *) pat)->funcid == DpRunConstantFunction())
						pat = linitial(((FuncExpr *) pat)->args);
					if ((IsA(pat, Param) || !IsA(pat, Const)) && exprType(pat) == TEXTOID &&
						!contain_var_clause(pat) && OidIsValid(DpRunLikePatternFunction()))
					{
						run_constants_made++;
						lsecond(op->args) = makeFuncExpr(DpRunLikePatternFunction(), TEXTOID, list_make1(pat),
														 exprCollation(pat), exprCollation(pat), COERCE_EXPLICIT_CALL);
					}
					else if (!IsA(pat, Const))
						DpGuardRefuse("a LIKE pattern must be a constant or a bound parameter",
									  psprintf("Found a pattern built from table columns in %s.", where));
					else
						DpCheckLikePattern((Const *) pat, where);
				}
				DpCheckCollation(op->inputcollid, exprType(linitial(op->args)), is_like, where);
				return (Node *) op;
			}
		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *sa = (ScalarArrayOpExpr *) node;
				bool		is_like;
				Node	   *right = lsecond(sa->args);

				if (DpIsConstantExpr(right) && !IsA(right, Const))
					right = eval_const_expressions(NULL, copyObject(right));
				if (!DpSafeOperator(sa->opno, &is_like) || is_like || !DpIsBoundValue(right))
					DpGuardRefuse("only IN / = ANY over a constant list is allowed",
								  psprintf("Found another array comparison in %s.", where));
				sa = copyObject(sa);
				sa->args = list_make2(DpRowExprMutator(linitial(sa->args), cxt), right);
				DpCheckCollation(sa->inputcollid, exprType(linitial(sa->args)), false, where);
				return (Node *) sa;
			}
		default:
			DpGuardRefuseHint("this expression is not allowed on a protected table",
							  psprintf("Functions, casts and arithmetic on private columns in %s could raise errors that reveal values; "
									   "only comparisons, LIKE, AND/OR/NOT, IS NULL, CASE WHEN and COALESCE are allowed.", where),
							  "Compute it over the released values, in a query around the dp query.");
	}
	return NULL;				/* keep compiler quiet */
}

/* ------------------------------------------------------------------------
 * Joins and public tables
 * ------------------------------------------------------------------------
 */

/* Append the AND-ed conjuncts of qual to *list. */
static void
DpAddConjuncts(List **list, Node *qual)
{
	if (qual == NULL)
		return;
	if (IsA(qual, BoolExpr) && ((BoolExpr *) qual)->boolop == AND_EXPR)
	{
		ListCell   *lc;

		foreach(lc, ((BoolExpr *) qual)->args)
			DpAddConjuncts(list, lfirst(lc));
	}
	else
		*list = lappend(*list, qual);
}

/* True if the join tree node reads range-table entry rti. */
static bool
DpJoinTreeHas(Node *node, int rti)
{
	if (IsA(node, RangeTblRef))
		return ((RangeTblRef *) node)->rtindex == rti;
	if (IsA(node, JoinExpr))
		return DpJoinTreeHas(((JoinExpr *) node)->larg, rti) || DpJoinTreeHas(((JoinExpr *) node)->rarg, rti);
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			if (DpJoinTreeHas(lfirst(lc), rti))
				return true;
	}
	return false;
}

/*
 * Check (and fold) the quals of a join tree, collecting its conjuncts: inner
 * joins, and the LEFT JOIN from the protected table (its side preserved) to
 * one public table that BI tools write (RIGHT JOIN mirrored): every protected
 * row comes out once, joined to at most one public row (its unique key,
 * checked with the other joins') or to NULLs, as for the inner join.
 */
static void
DpCheckJoinTree(Node *node, List **quals, DpRowContext *cxt, int prot_rti)
{
	if (IsA(node, RangeTblRef))
		return;
	if (IsA(node, FromExpr))
	{
		FromExpr   *f = (FromExpr *) node;
		ListCell   *lc;

		foreach(lc, f->fromlist)
			DpCheckJoinTree(lfirst(lc), quals, cxt, prot_rti);
		f->quals = DpRowExpr(f->quals, cxt);
		DpAddConjuncts(quals, f->quals);
		return;
	}
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;
		bool		ok = j->jointype == JOIN_INNER;

		if (j->jointype == JOIN_LEFT)
			ok = DpJoinTreeHas(j->larg, prot_rti) && IsA(j->rarg, RangeTblRef);
		else if (j->jointype == JOIN_RIGHT)
			ok = DpJoinTreeHas(j->rarg, prot_rti) && IsA(j->larg, RangeTblRef);
		if (ok)
		{
			DpCheckJoinTree(j->larg, quals, cxt, prot_rti);
			DpCheckJoinTree(j->rarg, quals, cxt, prot_rti);
			j->quals = DpRowExpr(j->quals, cxt);
			DpAddConjuncts(quals, j->quals);
			return;
		}
	}
	DpGuardRefuse("only inner joins, and LEFT JOINs from the protected table, with public tables are allowed on a protected table",
				  "Other outer joins could release rows of the public table for keys that depend on private rows.");
}

/* The Var under binary-compatible relabelling (this query level), or NULL. */
Var *
DpStripVar(Node *node)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return (node && IsA(node, Var) && ((Var *) node)->varlevelsup == 0) ? (Var *) node : NULL;
}

/*
 * True if conjunct c is "<column at rti_a> = <column at rti_b>" (either way
 * round) of one type, by that type's default equality, under no collation or
 * a deterministic one: rows meet only on equal values (a multi-release filter
 * or a join on the privacy unit, multi.c and unitjoin.c).  Sets *a and *b.
 */
bool
DpEquatedColumns(Node *c, int rti_a, int rti_b, Var **a, Var **b)
{
	OpExpr	   *op = (OpExpr *) c;
	Var		   *x;
	Var		   *y;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2)
		return false;
	x = DpStripVar(linitial(op->args));
	y = DpStripVar(lsecond(op->args));
	if (x == NULL || y == NULL)
		return false;
	if (x->varno == rti_b && y->varno == rti_a)
	{
		Var		   *t = x;

		x = y;
		y = t;
	}
	if (x->varno != rti_a || y->varno != rti_b || x->varattno <= 0 || y->varattno <= 0 ||
		x->vartype != y->vartype || op->opno != lookup_type_cache(x->vartype, TYPECACHE_EQ_OPR)->eq_opr)
		return false;
	if (OidIsValid(op->inputcollid) && !get_collation_isdeterministic(op->inputcollid))
		return false;
	*a = x;
	*b = y;
	return true;
}

/*
 * True if the conjuncts equate column attno of the public table (at pub_rti)
 * with a column of the protected table (at prot_rti) by an equality of
 * opfamily, under collation indcoll or a deterministic one.
 */
static bool
DpKeyColumnJoined(List *quals, int pub_rti, AttrNumber attno, int prot_rti, Oid opfamily, Oid indcoll)
{
	ListCell   *lc;

	foreach(lc, quals)
	{
		OpExpr	   *op = lfirst(lc);
		Var		   *a;
		Var		   *b;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		a = DpStripVar(linitial(op->args));
		b = DpStripVar(lsecond(op->args));
		if (a == NULL || b == NULL)
			continue;
		if (a->varno == prot_rti && b->varno == pub_rti)
		{
			Var		   *t = a;

			a = b;
			b = t;
		}
		if (a->varno != pub_rti || b->varno != prot_rti || a->varattno != attno)
			continue;
		if (get_op_opfamily_strategy(op->opno, opfamily) != BTEqualStrategyNumber)
			continue;
		if (OidIsValid(op->inputcollid) && op->inputcollid != indcoll &&
			!get_collation_isdeterministic(op->inputcollid))
			continue;
		return true;
	}
	return false;
}

/*
 * True if the conjuncts cover every key column of one unique index of the
 * public table that PostgreSQL enforces at once, on plain columns, without a
 * predicate: each protected row then meets at most one public row.
 */
bool
DpJoinedOnUniqueKey(List *quals, int pub_rti, Oid pub_relid, int prot_rti)
{
	Relation	rel = table_open(pub_relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		unique = false;

	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = idx->rd_index;
		bool		covered = form->indisunique && form->indimmediate && form->indisvalid &&
			form->indislive && form->indnkeyatts > 0 &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indexprs, NULL);

		for (int k = 0; covered && k < form->indnkeyatts; k++)
			covered = form->indkey.values[k] > 0 &&
				DpKeyColumnJoined(quals, pub_rti, form->indkey.values[k], prot_rti,
								  idx->rd_opfamily[k], idx->rd_indcollation[k]);
		index_close(idx, AccessShareLock);
		if (covered)
		{
			unique = true;
			break;
		}
	}
	table_close(rel, AccessShareLock);
	return unique;
}

/*
 * The roles whose rights an analyst can use: the analysts (budgeted roles and
 * their members) and every role one of them is a member of, with or without
 * INHERIT (SET ROLE reaches it).  Superusers are left out: an analyst that
 * can become one is not guarded by anything.  Waits for the ledger (ERROR
 * when it is not ready: fail closed).
 */
List *
DpAnalystReachableRoles(void)
{
	DpBudgetRow *rows;
	int			n = DpLedgerBudgetRows(&rows);
	List	   *roles = NIL;
	List	   *analysts = NIL;
	List	   *result = NIL;
	Relation	authid;
	SysScanDesc scan;
	HeapTuple	tup;
	ListCell   *lc;

	if (n == 0)
		return NIL;
	authid = table_open(AuthIdRelationId, AccessShareLock);
	scan = systable_beginscan(authid, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_authid role = (Form_pg_authid) GETSTRUCT(tup);

		if (!role->rolsuper)
			roles = lappend_oid(roles, role->oid);
	}
	systable_endscan(scan);
	table_close(authid, AccessShareLock);

	foreach(lc, roles)
		for (int i = 0; i < n; i++)
			if (is_member_of_role_nosuper(lfirst_oid(lc), rows[i].role))
			{
				analysts = lappend_oid(analysts, lfirst_oid(lc));
				break;
			}
	foreach(lc, roles)
	{
		ListCell   *a;

		foreach(a, analysts)
			if (is_member_of_role_nosuper(lfirst_oid(a), lfirst_oid(lc)))
			{
				result = lappend_oid(result, lfirst_oid(lc));
				break;
			}
	}
	return result;
}

/* A public table joined to a protected one: no role an analyst can act as may shape it. */
static void
DpCheckPublicTable(RangeTblEntry *r, List *analysts)
{
	const char *name = get_rel_name(r->relid);
	Oid			owner;
	HeapTuple	tup;
	ListCell   *lc;

	if (get_rel_relkind(r->relid) != RELKIND_RELATION || r->tablesample != NULL)
		DpGuardRefuse("only plain public tables may be joined to a protected table",
					  "Views are expanded; other relation kinds and TABLESAMPLE are not allowed.");
	if (r->securityQuals != NIL)
		DpGuardRefuse("public tables with row-level security cannot be joined to a protected table",
					  "Their policies would run once per matching private row.");
	if (find_inheritance_children(r->relid, NoLock) != NIL)
		DpGuardRefuse("a public table with inheritance children or partitions cannot be joined to a protected table",
					  psprintf("The unique key of \"%s\" does not hold across its children.", name));
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(r->relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", r->relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	foreach(lc, analysts)
	{
		Oid			a = lfirst_oid(lc);

		if (a == owner)
			DpGuardRefuse("a public table an analyst owns cannot be joined to a protected table",
						  psprintf("\"%s\" belongs to an analyst, who could give it any rows.", name));
		if (pg_class_aclmask(r->relid, a, ACL_INSERT | ACL_UPDATE | ACL_DELETE | ACL_TRUNCATE | ACL_TRIGGER,
							 ACLMASK_ANY) != 0 ||
			pg_attribute_aclcheck_all(r->relid, a, ACL_INSERT | ACL_UPDATE, ACLMASK_ANY) == ACLCHECK_OK)
			DpGuardRefuse("a public table analysts can write cannot be joined to a protected table",
						  psprintf("An analyst may change the rows of \"%s\".", name));
	}
}

/* ------------------------------------------------------------------------
 * The released values
 * ------------------------------------------------------------------------
 */

#define DP_GROUP_KEY(varno, attno) ((varno) * 2048 + (attno))

/* Context of the post-processing walk. */
typedef struct DpReleaseCheck
{
	int			depth;			/* query levels below the top */
	int			ndp;
	Bitmapset  *group_atts;		/* GROUP BY keys, as DP_GROUP_KEY(varno, attno) */
	List	   *group_exprs;	/* GROUP BY keys that are generalising expressions (keys.c) */
	DpRowContext row;
	DpProtected *prot;			/* the protected table, at prot_rti */
	int			prot_rti;
	bool		browsing;		/* no aggregate, no GROUP BY: rows asked for */
} DpReleaseCheck;

/*
 * The hint of a query that asks for rows (no aggregate, no GROUP BY): the
 * accepted form of browsing is a synthetic twin (synth/), or dp aggregates.
 */
static const char *
DpBrowsingHint(DpProtected *prot)
{
	const char *rel = quote_qualified_identifier(get_namespace_name(get_rel_namespace(prot->relid)),
												 get_rel_name(prot->relid));

	return psprintf("To browse rows, make a synthetic twin once and read it freely: "
					"SELECT dp_pg.synthesize('%s', 'pg_temp.%s', 'laplace(epsilon=1)') (charged once; "
					"analyst's guide, \"Synthetic twins\").  To count, use dp aggregates: "
					"SELECT <column>, dp_count(*) FROM %s GROUP BY <column>.",
					rel, quote_identifier(psprintf("%s_twin", get_rel_name(prot->relid))), rel);
}

/* The argument positions of a dp aggregate that must be constant for the query. */
static bool
DpIsConstArg(const DpAggKind *kind, int argno)
{
	if (argno == kind->mech_argno)
		return true;
	for (int i = 0; i < kind->nconst; i++)
		if (kind->const_argnos[i] == argno)
			return true;
	return false;
}

/* Walker: true if node has a SubLink, an aggregate, or a Var (any level). */
static bool
DpConstArgForbidden(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, SubLink) || IsA(node, Aggref) || IsA(node, Var) || IsA(node, WindowFunc))
		return true;
	if (IsA(node, Param) && ((Param *) node)->paramkind != PARAM_EXTERN)
		return true;
	return expression_tree_walker(node, DpConstArgForbidden, context);
}

/*
 * dp_count(DISTINCT unit, mech) (what count(DISTINCT unit) becomes): the
 * number of units, each counted once per group.  Only on a table with a
 * privacy unit, whose per-unit bounding (units.c) replaces it by a bounded
 * count of one per unit and cell, so the DISTINCT itself never runs.
 */
static bool
DpIsDistinctUnitCount(Aggref *agg, const DpAggKind *kind, DpReleaseCheck *cxt)
{
	Var		   *v;
	ListCell   *lc;
	bool		unit = false;

	if (kind != &dp_count_kind || cxt->prot == NULL || !cxt->prot->has_unit || agg->aggorder != NIL ||
		agg->aggdistinct == NIL)
		return false;
	/*
	 * DISTINCT applies to every argument: the unit, and in dp_count(DISTINCT
	 * unit, mech) written by the analyst the mechanism too (a constant for
	 * the query, checked below like any mechanism)
	 */
	foreach(lc, agg->aggdistinct)
	{
		TargetEntry *te = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), agg->args);

		if (te->resno == 1)
			unit = true;
		else if (te->resno != kind->mech_argno + 1)
			return false;
	}
	if (!unit)
		return false;
	v = (Var *) linitial_node(TargetEntry, agg->args)->expr;
	while (v && IsA(v, RelabelType))
		v = (Var *) ((RelabelType *) v)->arg;
	return v && IsA(v, Var) && v->varlevelsup == 0 && v->varno == cxt->prot_rti && v->varattno > 0 &&
		strcmp(get_attname(cxt->prot->relid, v->varattno, false), NameStr(cxt->prot->unit)) == 0;
}

/*
 * dp_count(DISTINCT x, mech) of any other value x (what count(DISTINCT x)
 * becomes without public keys): the number of distinct values, a noisy
 * count whose sensitivity is the values one person can add or remove — 1
 * on a table without a privacy unit (one row), and on a table with one the
 * at most max_rows_per_unit values each unit keeps per cell (units.c,
 * distinct.c).  x must be of a type whose equality and ordering cannot
 * fail (the DISTINCT sorts or hashes it): numbers, dates, times, booleans,
 * text under a deterministic collation (a nondeterministic one would merge
 * spellings of one value: still at most one class per row, but refused like
 * such keys).
 */
static bool
DpIsDistinctValueCount(Aggref *agg, const DpAggKind *kind)
{
	ListCell   *lc;
	bool		value = false;
	Oid			type;

	if (kind != &dp_count_kind || agg->aggorder != NIL || agg->aggdistinct == NIL)
		return false;
	foreach(lc, agg->aggdistinct)
	{
		TargetEntry *te = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), agg->args);

		if (te->resno == 1)
			value = true;
		else if (te->resno != kind->mech_argno + 1)
			return false;
	}
	type = exprType((Node *) linitial_node(TargetEntry, agg->args)->expr);
	if (!value || !DpSafeComparisonType(type))
		return false;
	if (OidIsValid(agg->inputcollid) && !get_collation_isdeterministic(agg->inputcollid))
		return false;
	return true;
}

/* A dp aggregate of the DP level: its kind, arguments and FILTER (rewritten in place). */
static void
DpCheckDpAggregate(Aggref *agg, DpReleaseCheck *cxt)
{
	const DpAggKind *kind = DpKindOfAggregate(agg->aggfnoid);
	ListCell   *lc;
	int			argno = 0;

	if (kind == NULL)
		DpGuardRefuseHint("only dp aggregates may read a protected table",
						  psprintf("Aggregate %s is not differentially private.", get_func_name(agg->aggfnoid)),
						  "Use dp_count, dp_sum, dp_avg, dp_quantile or dp_histogram (count, sum, avg, min, max and percentile_cont of a column with a value domain are planned as them).");
	/*
	 * dp_pg.partition_keep written by the user is one more released value (a
	 * noisy count compared with its threshold, charged like any call site);
	 * the key set is still released only through the selection the guard
	 * adds itself (groups.c), so it cannot widen what is released.
	 */
	if (DpAggNumArgs(agg->args) != kind->nargs)
		DpGuardRefuse("dp_pg's internal aggregates cannot be called on a protected table",
					  psprintf("%s is written by dp_pg itself.", get_func_name(agg->aggfnoid)));
	/* its released labels are keys (canonical.c) */
	if (kind == &dp_histogram_keys_kind && DpSessionIsAnalyst())
		DpCanonicalCheckKey((Node *) linitial_node(TargetEntry, agg->args)->expr, "a dp_histogram key");
	if ((agg->aggdistinct != NIL && !DpIsDistinctUnitCount(agg, kind, cxt) && !DpIsDistinctValueCount(agg, kind)) ||
		agg->aggorder != NIL)
		DpGuardRefuse("DISTINCT and ORDER BY inside a dp aggregate are not allowed on a protected table",
					  "Use the aggregate on the column itself; count(DISTINCT <privacy unit>) counts persons, "
					  "count(DISTINCT <column>) the distinct values of a number, date, time, boolean or text column.");
	cxt->row.where = "an aggregate FILTER clause";
	agg->aggfilter = (Expr *) DpRowExpr((Node *) agg->aggfilter, &cxt->row);
	foreach(lc, agg->args)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		if (DpIsConstArg(kind, argno))
		{
			if (DpConstArgForbidden((Node *) te->expr, NULL) ||
				contain_volatile_functions((Node *) te->expr) ||
				expression_returns_set((Node *) te->expr))
				DpGuardRefuse("dp aggregate parameters must be constant for the query",
							  "Mechanisms, bounds and bins may be literals, bound parameters and stable functions of those; "
							  "not table columns, subqueries or volatile functions.");
		}
		else
		{
			cxt->row.where = "a dp aggregate argument";
			te->expr = (Expr *) DpRowExpr((Node *) te->expr, &cxt->row);
		}
		argno++;
	}
	cxt->ndp++;
}

/*
 * Walker over the post-processing parts (select list, HAVING, at any
 * subquery depth): table columns only as GROUP BY keys, aggregates of the
 * top level only dp aggregates (checked and rewritten in place).
 */
static bool
DpCheckReleasedWalker(Node *node, DpReleaseCheck *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		bool		r;

		cxt->depth++;
		r = query_tree_walker((Query *) node, DpCheckReleasedWalker, cxt, 0);
		cxt->depth--;
		return r;
	}
	if (cxt->depth == 0 && cxt->group_exprs != NIL && list_member(cxt->group_exprs, node))
		return false;			/* a generalising GROUP BY key: released as a key */
	if (IsA(node, Aggref) && ((Aggref *) node)->agglevelsup == cxt->depth)
	{
		DpCheckDpAggregate((Aggref *) node, cxt);
		return false;			/* its arguments are row expressions, checked */
	}
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == cxt->depth)
	{
		Var		   *v = (Var *) node;

		if (v->varattno > 0 && bms_is_member(DP_GROUP_KEY(v->varno, v->varattno), cxt->group_atts))
			return false;		/* a GROUP BY key: released as a key */
		DpGuardRefuseHint("table columns may only appear inside dp aggregates or as GROUP BY keys",
						  "Selecting, filtering or ordering by another column would release it.",
						  cxt->browsing && cxt->prot != NULL ? DpBrowsingHint(cxt->prot) :
						  "Put the column inside a dp aggregate or in GROUP BY.");
	}
	if (IsA(node, WindowFunc) && DpKindOfAggregate(((WindowFunc *) node)->winfnoid) != NULL)
	{
		DpLedgerNoteRefusal("a dp aggregate used as a window function", ERRCODE_FEATURE_NOT_SUPPORTED);
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot be used as a window function", get_func_name(((WindowFunc *) node)->winfnoid)),
				 errdetail("A dp aggregate releases one noisy value per group; its cost must be known before the query runs.")));
	}
	if (IsA(node, GroupingFunc))
		DpGuardRefuse("GROUPING() is not allowed on a protected table", "There are no grouping sets.");
	return expression_tree_walker(node, DpCheckReleasedWalker, cxt);
}

/* ------------------------------------------------------------------------
 * The whole query
 * ------------------------------------------------------------------------
 */

/*
 * Does a range-table entry of this kind produce rows of its own?  Joins and
 * (18+) the grouping entry only refer to other entries' columns.  The switch
 * names every kind and has no default: a PostgreSQL version that adds a kind
 * fails to compile here (-Wswitch, warnings are errors) until it is judged.
 */
static bool
DpRteKindReadsRows(RTEKind kind)
{
	switch (kind)
	{
		case RTE_RELATION:
		case RTE_SUBQUERY:
		case RTE_FUNCTION:
		case RTE_TABLEFUNC:
		case RTE_VALUES:
		case RTE_CTE:
		case RTE_NAMEDTUPLESTORE:
		case RTE_RESULT:
			return true;
		case RTE_JOIN:
#if PG_VERSION_NUM >= 180000
		case RTE_GROUP:
#endif
			return false;
	}
	return true;
}

/*
 * Mutator: every occurrence of a GROUP BY key expression pair[0] outside the
 * dp aggregates and subqueries becomes its rewritten form pair[1].
 */
static Node *
DpReplaceKeyMutator(Node *node, Node **pair)
{
	if (node == NULL || IsA(node, Aggref) || IsA(node, Query) || IsA(node, SubLink))
		return node;
	if (equal(node, pair[0]))
		return copyObject(pair[1]);
	return expression_tree_mutator(node, DpReplaceKeyMutator, pair);
}

/* Validate an analyst's (or a bounded trusted) query on target (see guard.h). */
void
DpShapeValidate(Query *q, DpProtected *target, DpShape *shape)
{
	DpReleaseCheck cxt;
	int			rti = 0;
	List	   *quals = NIL;
	List	   *analysts = NIL;
	bool		analysts_known = false;
	ListCell   *lc;

	memset(shape, 0, sizeof(DpShape));
	memset(&cxt, 0, sizeof(cxt));
	(void) DpTakeKeyChecks();	/* none left over from a query refused before its end */
	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		DpGuardRefuse("only SELECT may read a protected table", "Data changes and utility commands are not dp queries.");
	if (q->cteList != NIL || q->hasRecursive || q->hasModifyingCTE)
		DpGuardRefuseHint("WITH is not allowed on a protected table", "A CTE could release a second result.",
						  "Write the dp query in FROM of the query around it instead.");
	if (q->setOperations != NULL)
		DpGuardRefuseHint("UNION, INTERSECT and EXCEPT are not allowed on a protected table", "Each branch would be a release of its own.",
						  "Run each branch as a dp query of its own, or combine dp queries in a query around them.");
	if (q->groupingSets != NIL || q->groupDistinct)
		DpGuardRefuseHint("GROUPING SETS, ROLLUP and CUBE are not allowed on a protected table",
						  "Each row would be released once per grouping set.",
						  "Run one GROUP BY per grouping set.");
	if (q->rowMarks != NIL || q->hasForUpdate)
		DpGuardRefuse("FOR UPDATE / SHARE is not allowed on a protected table", "Row locks act on private rows.");
	if (q->jointree == NULL || q->jointree->fromlist == NIL)
		DpGuardRefuse("a dp query reads exactly one protected table", "No FROM clause.");

	/* references to grouped expressions (18+) and join columns (USING, NATURAL) become the tables' own columns */
	DpFlattenGroupVars(q);
	q->targetList = (List *) DpFlattenJoinAliasVars(q, (Node *) q->targetList);
	q->havingQual = DpFlattenJoinAliasVars(q, q->havingQual);
	q->jointree = (FromExpr *) DpFlattenJoinAliasVars(q, (Node *) q->jointree);

	/* one protected table; besides it only public tables and the joins between them */
	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		rti++;
		if (!DpRteKindReadsRows(r->rtekind))
			continue;
		if (DpMultiIsReleased(r))
		{
			/* released rows of another release, joined on what they keep (multi.c) */
			cxt.row.rtis = bms_add_member(cxt.row.rtis, rti);
			continue;
		}
		if (r->rtekind != RTE_RELATION)
			DpGuardRefuse("a dp query reads one protected table, optionally joined to public tables",
						  "Subqueries in FROM, functions and VALUES are not allowed beside a protected table.");
		cxt.row.rtis = bms_add_member(cxt.row.rtis, rti);
		if (r->relid == target->relid || DpIsProtected(r->relid))
		{
			if (r->tablesample != NULL)
				DpGuardRefuse("TABLESAMPLE is not allowed on a protected table", "Sampling is not a dp aggregate.");
			if (shape->prot_rti == 0 && r->relid == target->relid)
				shape->prot_rti = rti;
			else if (shape->partner_rti == 0 && r->relid != target->relid)
			{
				/* another protected table: only on the shared unit (unitjoin.c, checked below) */
				shape->partner_rti = rti;
				shape->partner_relid = r->relid;
			}
			else
				DpGuardRefuse("a dp query reads exactly one protected table",
							  "Joining protected tables (or one with itself) could multiply a person's rows.");
			continue;
		}
		if (!analysts_known)
		{
			analysts = DpAnalystReachableRoles();
			analysts_known = true;
		}
		DpCheckPublicTable(r, analysts);
	}
	if (shape->prot_rti == 0)
		DpGuardRefuse("a dp query reads exactly one protected table", "The protected table must be in FROM.");
	shape->prot = target;
	cxt.row.rtable = q->rtable;
	cxt.prot = target;
	cxt.prot_rti = shape->prot_rti;
	cxt.browsing = !q->hasAggs && q->groupClause == NIL && q->groupingSets == NIL;

	/* row predicates of WHERE and every join (constants computed now); each public table on a unique key */
	cxt.row.where = "the WHERE or JOIN clause";
	DpCheckJoinTree((Node *) q->jointree, &quals, &cxt.row, shape->prot_rti);
	if (shape->partner_rti != 0)
		DpUnitJoinCheck(shape, quals, DpProtectedTables());
	rti = 0;
	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		rti++;
		if (DpMultiIsReleased(r) && !DpMultiReleasedJoined(quals, rti, r, shape->prot_rti))
			DpGuardRefuse("a released subquery must be joined on every column the query uses",
						  "Join it with \"<protected column> = <its column>\" for each of its columns that the query reads, "
						  "and use them nowhere else: each private row then meets at most one of its rows.");
		if (r->rtekind == RTE_RELATION && rti != shape->prot_rti && rti != shape->partner_rti &&
			!DpJoinedOnUniqueKey(quals, rti, r->relid, shape->prot_rti))
			DpGuardRefuse("a public table must be joined on a unique key",
						  psprintf("Join %s with \"%s.<unique column> = <protected column>\" (every column of a unique, "
								   "non-deferrable index) so that each private row meets at most one of its rows.",
								   get_rel_name(r->relid), get_rel_name(r->relid)));
	}

	/*
	 * GROUP BY keys: columns of the tables, or generalising expressions of
	 * one column (keys.c: date_trunc, extract, width_bucket, ...), of a type
	 * with an ordering.  An expression key is rewritten to read its column
	 * through the key window, everywhere it appears outside the dp
	 * aggregates (each aggregate's arguments are row expressions, rewritten
	 * alike when checked).
	 */
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Node	   *key = (Node *) get_sortgroupclause_expr(sgc, q->targetList);

		if (!OidIsValid(lookup_type_cache(exprType(key), TYPECACHE_LT_OPR)->lt_opr))
			DpGuardRefuse("GROUP BY keys must have an ordering",
						  "Released groups are ordered by their keys, so that their order reveals nothing else.");
		if (IsA(key, Var))
		{
			Var		   *v = (Var *) key;

			if (v->varlevelsup != 0 || v->varattno <= 0 || !bms_is_member(v->varno, cxt.row.rtis))
				DpGuardRefuse("GROUP BY keys must be columns of the tables",
							  "Group by a column or a generalising expression of one (date_trunc, extract, width_bucket, floor, ...).");
			cxt.group_atts = bms_add_member(cxt.group_atts, DP_GROUP_KEY(v->varno, v->varattno));
		}
		else
		{
			Node	   *pair[2];

			pair[0] = key;
			/* generalising functions, casts and COLLATE of a column (keys.c); arithmetic and the rest: bounds.c */
			if ((DpIsGeneralising(key) || IsA(key, FuncExpr) || IsA(key, CollateExpr) || IsA(key, RelabelType)) &&
				!DpIsBoundedExpression(key))
				pair[1] = DpGeneralise(key, cxt.row.rtis, "a GROUP BY key");
			else
			{
				/* arithmetic, a comparison, CASE ...: a total row expression, released in canonical form */
				cxt.row.where = "a GROUP BY key";
				cxt.row.key = true;
				pair[1] = DpCanonicalKey(DpRowExpr(key, &cxt.row));
				cxt.row.key = false;
			}
			q->targetList = (List *) DpReplaceKeyMutator((Node *) q->targetList, pair);
			q->havingQual = DpReplaceKeyMutator(q->havingQual, pair);
			cxt.group_exprs = lappend(cxt.group_exprs, pair[1]);
		}
	}

	/* the post-processing parts act on released values only */
	(void) DpCheckReleasedWalker((Node *) q->targetList, &cxt);
	(void) DpCheckReleasedWalker(q->havingQual, &cxt);
	if (contain_var_clause(q->limitCount) || contain_var_clause(q->limitOffset))
		DpGuardRefuse("LIMIT and OFFSET must be constants", "They may not depend on table columns.");
	/* the bind-time checks of generalising expressions with bound parameters (keys.c) */
	{
		List	   *checks = DpTakeKeyChecks();

		if (checks != NIL)
		{
			if (q->jointree->quals)
				checks = lcons(q->jointree->quals, checks);
			q->jointree->quals = list_length(checks) == 1 ? linitial(checks) :
				(Node *) makeBoolExpr(AND_EXPR, checks, -1);
		}
	}
	if (cxt.ndp == 0 && q->groupClause == NIL)
		DpGuardRefuseHint("a query on a protected table must release only dp aggregates", "Raw rows are never released.",
						  cxt.browsing ? DpBrowsingHint(target) :
						  "Select dp aggregates and GROUP BY keys: SELECT region, dp_count(*) FROM t GROUP BY region.");
	shape->ndp = cxt.ndp;
}
