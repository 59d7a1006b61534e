/*
 * guard/runconst.c — run-time constants (dp_pg.run_constant), bound before the query runs.
 *
 * The guard wraps every subexpression of a row predicate or dp aggregate
 * argument on a protected table that reads no column but a bound parameter
 * or a stable function (now(), current_date - interval '30 days', $1 + 1) in
 * dp_pg.run_constant(expr).  Here, before the executor starts and so before
 * the charge, each such call is evaluated once and replaced by its value:
 * an error it raises depends on no row.  A call that would remain in the
 * plan (a plan field not visited below) stops the query here, before it
 * runs: the plan is searched for the function as text.
 *
 * Owns the binding of run-time constants (called by hooks.c at ExecutorStart,
 * before the call sites bind their constant arguments).  May call the guard's
 * own files (reads.c's plan stamps, shape.c's LIKE check), the release path's
 * DpContainsNonExternParam (release/release.h) and common/plantree.h.
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "release.h"
#include "guard/guard.h"
#include "plantree.h"

/* dp_pg.run_constant(anyelement), or InvalidOid. */
Oid
DpRunConstantFunction(void)
{
	Oid			argtypes[1] = {ANYELEMENTOID};

	return LookupFuncName(list_make2(makeString("dp_pg"), makeString("run_constant")), 1, argtypes, true);
}

/* dp_pg.run_like_pattern(text), or InvalidOid. */
Oid
DpRunLikePatternFunction(void)
{
	Oid			argtypes[1] = {TEXTOID};

	return LookupFuncName(list_make2(makeString("dp_pg"), makeString("run_like_pattern")), 1, argtypes, true);
}

typedef struct DpRunConstContext
{
	Oid			fn;
	Oid			likefn;			/* dp_pg.run_like_pattern: the value is a LIKE pattern */
	ExprContext *econtext;
	MemoryContext cxt;
} DpRunConstContext;

static Node *
DpRunConstMutator(Node *node, DpRunConstContext *c)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, FuncExpr) && (((FuncExpr *) node)->funcid == c->fn ||
								 (OidIsValid(c->likefn) && ((FuncExpr *) node)->funcid == c->likefn)))
	{
		FuncExpr   *f = (FuncExpr *) node;
		Expr	   *arg = linitial(f->args);
		Oid			type = exprType((Node *) f);
		int16		typlen;
		bool		typbyval;
		bool		isnull;
		Datum		v;
		MemoryContext old;

		if (contain_var_clause((Node *) arg) || contain_volatile_functions((Node *) arg) ||
			contain_agg_clause((Node *) arg) || contain_subplans((Node *) arg) ||
			expression_returns_set((Node *) arg) || DpContainsNonExternParam((Node *) arg, NULL))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("dp_pg.run_constant takes an expression of constants, bound parameters and stable functions")));
		v = ExecEvalExprSwitchContext(ExecInitExpr(arg, NULL), c->econtext, &isnull);
		if (f->funcid == c->likefn && !isnull && !DpLikePatternComplete(TextDatumGetCString(v)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_ESCAPE_SEQUENCE),
					 errmsg("this LIKE pattern ends with its escape character"),
					 errdetail("A bound pattern is checked before the query runs: it would fail only on the rows that reach its end.  Nothing was charged.")));
		get_typlenbyval(type, &typlen, &typbyval);
		old = MemoryContextSwitchTo(c->cxt);
		node = (Node *) makeConst(type, exprTypmod((Node *) f), f->funccollid, typlen,
								  isnull ? (Datum) 0 : datumCopy(v, typbyval, typlen), isnull, typbyval);
		MemoryContextSwitchTo(old);
		return node;
	}
	return expression_tree_mutator(node, DpRunConstMutator, c);
}

#define DP_BIND_FIELD(f) ((f) = (void *) DpRunConstMutator((Node *) (f), c))

/*
 * The run-time constants of a partition pruning's steps: a WHERE on the
 * partition key with a bound parameter or a stable function (day >=
 * current_date - 30) prunes partitions when the executor starts, with the
 * value bound here.
 */
static void
DpRunConstPruning(PartitionPruneInfo *pi, DpRunConstContext *c)
{
	ListCell   *lc;
	ListCell   *lc2;
	ListCell   *lc3;

	if (pi == NULL)
		return;
	foreach(lc, pi->prune_infos)
		foreach(lc2, (List *) lfirst(lc))
		{
			PartitionedRelPruneInfo *p = lfirst_node(PartitionedRelPruneInfo, lc2);
			List	   *steps = list_concat(list_copy(p->initial_pruning_steps), p->exec_pruning_steps);

			foreach(lc3, steps)
				if (IsA(lfirst(lc3), PartitionPruneStepOp))
					DP_BIND_FIELD(((PartitionPruneStepOp *) lfirst(lc3))->exprs);
		}
}

/* Plan visitor: replace the run-time constants of the expressions a row meets. */
static bool
DpRunConstVisitor(Plan *plan, void *context)
{
	DpRunConstContext *c = (DpRunConstContext *) context;

	DP_BIND_FIELD(plan->targetlist);
	DP_BIND_FIELD(plan->qual);
	switch (nodeTag(plan))
	{
		case T_IndexScan:
			DP_BIND_FIELD(((IndexScan *) plan)->indexqual);
			DP_BIND_FIELD(((IndexScan *) plan)->indexqualorig);
			DP_BIND_FIELD(((IndexScan *) plan)->indexorderby);
			DP_BIND_FIELD(((IndexScan *) plan)->indexorderbyorig);
			break;
		case T_IndexOnlyScan:
			DP_BIND_FIELD(((IndexOnlyScan *) plan)->indexqual);
			DP_BIND_FIELD(((IndexOnlyScan *) plan)->recheckqual);
			DP_BIND_FIELD(((IndexOnlyScan *) plan)->indexorderby);
			break;
		case T_BitmapIndexScan:
			DP_BIND_FIELD(((BitmapIndexScan *) plan)->indexqual);
			DP_BIND_FIELD(((BitmapIndexScan *) plan)->indexqualorig);
			break;
		case T_BitmapHeapScan:
			DP_BIND_FIELD(((BitmapHeapScan *) plan)->bitmapqualorig);
			break;
		case T_TidScan:
			DP_BIND_FIELD(((TidScan *) plan)->tidquals);
			break;
		case T_TidRangeScan:
			DP_BIND_FIELD(((TidRangeScan *) plan)->tidrangequals);
			break;
		case T_NestLoop:
			DP_BIND_FIELD(((NestLoop *) plan)->join.joinqual);
			break;
		case T_MergeJoin:
			DP_BIND_FIELD(((MergeJoin *) plan)->join.joinqual);
			DP_BIND_FIELD(((MergeJoin *) plan)->mergeclauses);
			break;
		case T_HashJoin:
			DP_BIND_FIELD(((HashJoin *) plan)->join.joinqual);
			DP_BIND_FIELD(((HashJoin *) plan)->hashclauses);
			break;
		case T_Result:
			DP_BIND_FIELD(((Result *) plan)->resconstantqual);
			break;
		case T_Limit:
			DP_BIND_FIELD(((Limit *) plan)->limitOffset);
			DP_BIND_FIELD(((Limit *) plan)->limitCount);
			break;
		case T_ForeignScan:
			DP_BIND_FIELD(((ForeignScan *) plan)->fdw_exprs);
			DP_BIND_FIELD(((ForeignScan *) plan)->fdw_recheck_quals);
			break;
		case T_Hash:
			DP_BIND_FIELD(((Hash *) plan)->hashkeys);
			break;
		case T_Memoize:
			DP_BIND_FIELD(((Memoize *) plan)->param_exprs);
			break;
#if PG_VERSION_NUM < 180000
		case T_Append:
			DpRunConstPruning(((Append *) plan)->part_prune_info, c);
			break;
		case T_MergeAppend:
			DpRunConstPruning(((MergeAppend *) plan)->part_prune_info, c);
			break;
#endif
		default:
			break;
	}
	return false;
}

/* True if the statement's text form holds a call of fn. */
static bool
DpPlanCallsFunction(PlannedStmt *stmt, Oid fn)
{
	char		pattern[32];
	char	   *text = nodeToString(stmt);
	bool		found;

	snprintf(pattern, sizeof(pattern), ":funcid %u ", fn);
	found = strstr(text, pattern) != NULL;
	pfree(text);
	return found;
}

/*
 * Before the standard ExecutorStart: evaluate and bind the run-time constants
 * of an analyst's plan (see above).  Nothing to do for EXPLAIN without
 * ANALYZE or a utility statement.
 */
void
DpRunConstantsBind(QueryDesc *queryDesc, int eflags)
{
	DpRunConstContext c;
	MemoryContext old;

	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0 || queryDesc->plannedstmt->commandType == CMD_UTILITY)
		return;

	/*
	 * Only plans the guard stamped hold them (a leader's: a parallel worker
	 * gets the bound plan without stamps); anywhere else dp_pg.run_constant
	 * is the identity, as the guard never wrapped a row expression there.
	 */
	if (!DpPlanHasRunConstants(queryDesc->plannedstmt))
		return;
	c.fn = DpRunConstantFunction();
	c.likefn = DpRunLikePatternFunction();
	if (!OidIsValid(c.fn) ||
		(!DpPlanCallsFunction(queryDesc->plannedstmt, c.fn) &&
		 (!OidIsValid(c.likefn) || !DpPlanCallsFunction(queryDesc->plannedstmt, c.likefn))))
		return;
	c.cxt = GetMemoryChunkContext(queryDesc);
	c.econtext = CreateStandaloneExprContext();
	c.econtext->ecxt_param_list_info = queryDesc->params;
	PG_TRY();
	{
		old = MemoryContextSwitchTo(c.cxt);
		queryDesc->plannedstmt = copyObject(queryDesc->plannedstmt);
		MemoryContextSwitchTo(old);
		(void) DpPlanWalkStmt(queryDesc->plannedstmt, DpRunConstVisitor, &c);
#if PG_VERSION_NUM >= 180000
		{
			ListCell   *lc;

			foreach(lc, queryDesc->plannedstmt->partPruneInfos)
				DpRunConstPruning(lfirst_node(PartitionPruneInfo, lc), &c);
		}
#endif
	}
	PG_FINALLY();
	{
		FreeExprContext(c.econtext, true);
	}
	PG_END_TRY();
	if (DpPlanCallsFunction(queryDesc->plannedstmt, c.fn) ||
		(OidIsValid(c.likefn) && DpPlanCallsFunction(queryDesc->plannedstmt, c.likefn)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a run-time constant of this query could not be evaluated before it runs"),
				 errdetail("Nothing was charged and nothing was released."),
				 errhint("Write the constant as a literal.")));
}
