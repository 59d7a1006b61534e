/*
 * guard/rowexpr.c — the row checks: what an expression evaluated on
 * protected rows may be (invariant 4), and its rewrite into one that cannot
 * fail.
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
 * locale is opened now, not on the first row that reaches it.
 *
 *
 * What else a row expression may hold is judged by the files below this one:
 * arithmetic on columns with value domains (bounds.c, which hands the
 * conditions inside it — CASE WHEN, a comparison cast to an integer — back
 * to these checks through the function it is given), generalising
 * expressions of a column (keys.c), constant regular expressions (regex.c),
 * run-time constants (runconst.c).  Every step counts against the query's
 * budget of row steps (refuse.c).
 *
 * Layer guard/, floor rows (docs/development.md): may call guard/'s floors
 * base, fences, reads and rows, the aggregates, the release path, the ledger,
 * common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include <float.h>

#include "access/htup_details.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "guard/floor_rows.h"

/* Type whose built-in comparison operators cannot fail. */
bool
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

/* True if node needs no row and no parameter: the planner can compute it now. */
static bool
DpIsConstantExpr(Node *node)
{
	return !contain_var_clause(node) && !contain_mutable_functions(node) &&
		!contain_agg_clause(node) && !contain_subplans(node) &&
		!expression_returns_set(node) && !DpContainsParamWalker(node, NULL);
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

static Node *DpRowExprMutator(Node *node, DpRowContext *cxt);

/*
 * A row expression (WHERE, JOIN, FILTER, dp aggregate value): only what
 * cannot fail on a private value; constants are computed now.  Returns the
 * expression with its constants folded.
 */
Node *
DpRowExpr(Node *node, DpRowContext *cxt)
{
	return DpRowExprMutator(node, cxt);
}

/* A row expression checked as above (see guard.h): the row checker bounds.c is given. */
Node *
DpRowExpression(Node *node, Bitmapset *rtis, List *rtable, const char *where)
{
	DpRowContext cxt = {where, rtis, rtable, false};

	return DpRowExprMutator(node, &cxt);
}

/* A subexpression without a column or parameter: computed now, while planning (an error cannot depend on rows). */
static Node *
DpRowFolded(Node *node, const char *where)
{
	Node	   *folded = eval_const_expressions(NULL, copyObject(node));

	if (!IsA(folded, Const))
		DpGuardRefuse("a constant on a protected table must be computable while planning",
					  psprintf("The planner could not compute a constant expression in %s.", where));
	return folded;
}

/* A column: of an entry the expression may read, not a system column or a whole row. */
static Node *
DpRowVar(Var *v, DpRowContext *cxt)
{
	if (v->varlevelsup != 0 || v->varattno <= 0 || !bms_is_member(v->varno, cxt->rtis))
		DpGuardRefuse("system columns and whole-row references are not allowed",
					  psprintf("Found one in %s.", cxt->where));
	return (Node *) v;
}

/*
 * numeric to float8 fails beyond the range of a double (1e400, 1e-400): a
 * numeric column with bounds given as float8 (dp_sum(amount, 0.0, 100.0,
 * ...), as drivers bind doubles) is converted by the total clamp instead;
 * the aggregate clamps to its own bounds anyway.
 */
static Node *
DpRowClampFloat8(FuncExpr *f, DpRowContext *cxt)
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

/*
 * A function call: widening numeric casts, numeric to float8 through the
 * total clamp, lower / upper, dp_pg.clamp_float8 and the generalising
 * functions of keys.c; nothing else.
 */
static Node *
DpRowFunction(FuncExpr *f, DpRowContext *cxt)
{
	const char *where = cxt->where;
	Node	   *node = (Node *) f;

	if (DpIsWideningCast(f->funcid) &&
		(f->funcformat == COERCE_IMPLICIT_CAST || f->funcformat == COERCE_EXPLICIT_CAST))
		return expression_tree_mutator(node, DpRowExprMutator, cxt);
	switch (f->funcid)
	{
		case F_FLOAT8_NUMERIC:
			if ((f->funcformat == COERCE_IMPLICIT_CAST || f->funcformat == COERCE_EXPLICIT_CAST) &&
				OidIsValid(DpClampFloat8Function()))
				return DpRowClampFloat8(f, cxt);
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

/*
 * The pattern of a LIKE / ILIKE: a constant, checked now; a bound or
 * run-time pattern, checked once before the query runs (callsite.c).
 */
static void
DpRowLikePattern(OpExpr *op, const char *where)
{
	Node	   *pat = lsecond(op->args);

	if (IsA(pat, FuncExpr) && ((FuncExpr *) pat)->funcid == DpRunConstantFunction())
		pat = linitial(((FuncExpr *) pat)->args);
	if ((IsA(pat, Param) || !IsA(pat, Const)) && exprType(pat) == TEXTOID &&
		!contain_var_clause(pat) && OidIsValid(DpRunLikePatternFunction()))
	{
		lsecond(op->args) = DpRunLikePattern(pat);
	}
	else if (!IsA(pat, Const))
		DpGuardRefuse("a LIKE pattern must be a constant or a bound parameter",
					  psprintf("Found a pattern built from table columns in %s.", where));
	else
		DpCheckLikePattern((Const *) pat, where);
}

/*
 * An operator: a date shifted by an interval (keys.c), a constant regular
 * expression (regex.c), or a built-in comparison or LIKE of safe types under
 * a collation opened now.
 */
static Node *
DpRowOperator(Node *node, DpRowContext *cxt)
{
	const char *where = cxt->where;

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
			DpRowLikePattern(op, where);
		DpCheckCollation(op->inputcollid, exprType(linitial(op->args)), is_like, where);
		return (Node *) op;
	}
}

/* IN / = ANY over a constant list (or bound values): a safe comparison of each. */
static Node *
DpRowArrayComparison(ScalarArrayOpExpr *sa, DpRowContext *cxt)
{
	const char *where = cxt->where;
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

/*
 * The row checks' mutator: each node is a step of the query's budget; a
 * constant part is computed now, a run-time constant is marked, arithmetic
 * goes to bounds.c, and each kind of node the grammar admits to its step
 * above.
 */
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
		return DpRowFolded(node, where);	/* computed while planning: an error cannot depend on rows */
	if (DpIsRunConstantExpr(node))
		return DpRunConstant(node);		/* computed once before the query runs */
	/* arithmetic on columns with value domains (bounds.c) */
	if (DpIsBoundedExpression(node) || (IsA(node, FuncExpr) && DpIsDomainRead(((FuncExpr *) node)->funcid)))
		return DpBoundedRowExpr(node, cxt->rtis, cxt->rtable, where, cxt->key, DpRowExpression);
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
			return DpRowVar((Var *) node, cxt);
		case T_BoolExpr:
		case T_NullTest:
		case T_BooleanTest:
		case T_RelabelType:
		case T_CoalesceExpr:
			return expression_tree_mutator(node, DpRowExprMutator, cxt);
		case T_FuncExpr:
			return DpRowFunction((FuncExpr *) node, cxt);
		case T_CaseExpr:
			if (((CaseExpr *) node)->arg != NULL)
				DpGuardRefuse("CASE with a test expression is not allowed on a protected table",
							  psprintf("Use CASE WHEN <comparison> THEN ... in %s.", where));
			return expression_tree_mutator(node, DpRowExprMutator, cxt);
		case T_OpExpr:
		case T_DistinctExpr:
			return DpRowOperator(node, cxt);
		case T_ScalarArrayOpExpr:
			return DpRowArrayComparison((ScalarArrayOpExpr *) node, cxt);
		default:
			DpGuardRefuseHint("this expression is not allowed on a protected table",
							  psprintf("Functions, casts and arithmetic on private columns in %s could raise errors that reveal values; "
									   "only comparisons, LIKE, AND/OR/NOT, IS NULL, CASE WHEN and COALESCE are allowed.", where),
							  "Compute it over the released values, in a query around the dp query.");
	}
	return NULL;				/* keep compiler quiet */
}
