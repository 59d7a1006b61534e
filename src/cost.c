/*
 * cost.c — find a query's dp aggregate call sites and plan them before it runs.
 *
 * Protocol
 * --------
 * ExecutorStart (hook, every backend and parallel worker, after the standard
 * start so that parameters are bound): walk the PlanState tree; for every
 * Agg node, every Aggref whose final function runs there and which is one of
 * dp_pg's aggregates (a member of the dp_pg extension whose final function
 * is a known DpAggKind) becomes a DpCallSite:
 *   - its mechanism and other constant arguments are found (for a Finalize
 *     Aggregate above a parallel Gather, in the Partial Aggregate below it,
 *     since the finalizing Aggref only has the partial state as argument),
 *     checked to be constant for the query (no Var, no volatile function, no
 *     subquery or outer-query Param), and evaluated once with the query's
 *     bound parameters;
 *   - its noise is planned (calibration happens here, once per query).
 * The sites live in the query's memory context and are unlinked when it is
 * deleted.  EXPLAIN without ANALYZE plans nothing and runs nothing.
 *
 * Final functions look their call site up by the Aggref pointer they run for
 * (AggGetAggref).  A final function with no planned site releases nothing:
 * that is the fail-closed path for aggregates that did not go through this
 * hook (library not preloaded, a user-defined aggregate reusing dp_pg's
 * final function, a path this file does not know).
 *
 * Shapes whose number of releases is not known at start are rejected here:
 * dp aggregates as window functions and under GROUPING SETS / ROLLUP / CUBE.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "agg_common.h"
#include "cost.h"
#include "guc.h"

/* The call sites of one running query. */
typedef struct DpQuerySites
{
	struct DpQuerySites *next;
	List	   *sites;			/* DpCallSite * */
	MemoryContextCallback cb;
} DpQuerySites;

/* Cached answer for one aggregate OID: which kind it is, if any. */
typedef struct DpKindCacheEntry
{
	Oid			aggfnoid;		/* hash key */
	const DpAggKind *kind;		/* NULL: not a dp aggregate */
} DpKindCacheEntry;

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static DpQuerySites *active_queries = NULL;
static HTAB *kind_cache = NULL;

/* Every aggregate kind dp_pg defines. */
static const DpAggKind *const all_kinds[] = {
	&dp_count_star_kind,
	&dp_count_kind,
};

/* Forget cached aggregate kinds when pg_proc changes. */
static void
DpKindCacheInvalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	if (kind_cache != NULL)
	{
		hash_destroy(kind_cache);
		kind_cache = NULL;
	}
}

/* The DpAggKind of aggregate aggfnoid, or NULL if it is not one of dp_pg's. */
static const DpAggKind *
DpKindOfAggregate(Oid aggfnoid)
{
	DpKindCacheEntry *entry;
	bool		found;
	const DpAggKind *kind = NULL;

	if (kind_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(DpKindCacheEntry);
		kind_cache = hash_create("dp_pg aggregate kinds", 32, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(kind_cache, &aggfnoid, HASH_FIND, &found);
	if (found)
		return entry->kind;

	{
		HeapTuple	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));

		if (HeapTupleIsValid(tup))
		{
			Oid			finalfn = ((Form_pg_aggregate) GETSTRUCT(tup))->aggfinalfn;

			ReleaseSysCache(tup);
			if (OidIsValid(finalfn))
			{
				Oid			ext = get_extension_oid("dp_pg", true);

				if (OidIsValid(ext) &&
					getExtensionOfObject(ProcedureRelationId, aggfnoid) == ext)
				{
					FmgrInfo	flinfo;

					fmgr_info(finalfn, &flinfo);
					for (int i = 0; i < lengthof(all_kinds); i++)
						if (all_kinds[i]->finalfn == flinfo.fn_addr)
							kind = all_kinds[i];
				}
			}
		}
	}
	entry = hash_search(kind_cache, &aggfnoid, HASH_ENTER, &found);
	entry->kind = kind;
	return kind;
}

/* Walker: true if the expression uses a Param that is not a bound parameter. */
static bool
contains_non_extern_param(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind != PARAM_EXTERN;
	if (IsA(node, SubLink) || IsA(node, SubPlan) || IsA(node, AlternativeSubPlan))
		return true;
	return expression_tree_walker(node, contains_non_extern_param, context);
}

/*
 * The arguments of the Aggref as written: for a finalizing Aggref that
 * combines partial states, follow its single argument down the plan to the
 * Partial Aggregate's Aggref.
 */
static List *
DpOriginalArgs(Aggref *aggref, Plan *plan)
{
	Node	   *expr;

	if (!DO_AGGSPLIT_COMBINE(aggref->aggsplit))
		return aggref->args;

	/*
	 * expr is evaluated in plan's target list context: a Var there refers to
	 * the target list of plan's input (an Append's dummy Vars refer to every
	 * child alike; any child tells the arguments of the same call).
	 */
	expr = (Node *) ((TargetEntry *) linitial(aggref->args))->expr;
	for (;;)
	{
		Plan	   *child;
		AttrNumber	attno;

		if (IsA(expr, Aggref))
			return ((Aggref *) expr)->args;
		if (!IsA(expr, Var))
			break;
		attno = ((Var *) expr)->varattno;
		if (IsA(plan, Append))
			child = ((Append *) plan)->appendplans ? linitial(((Append *) plan)->appendplans) : NULL;
		else
			child = outerPlan(plan);
		if (child == NULL || attno < 1 || attno > list_length(child->targetlist))
			break;
		expr = (Node *) list_nth_node(TargetEntry, child->targetlist, attno - 1)->expr;
		plan = child;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("dp_pg could not find the arguments of a combined dp aggregate in this plan"),
			 errhint("Disable parallel query for this statement (SET max_parallel_workers_per_gather = 0).")));
	return NIL;					/* keep compiler quiet */
}

/* Evaluate a constant-for-the-query argument expression once. */
static Datum
DpEvalConstArg(const DpAggKind *kind, Expr *expr, ExprContext *econtext, bool *isnull)
{
	ExprState  *es;

	if (contain_var_clause((Node *) expr) ||
		contain_volatile_functions((Node *) expr) ||
		contain_agg_clause((Node *) expr) ||
		expression_returns_set((Node *) expr) ||
		contains_non_extern_param((Node *) expr, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the parameters of %s must be constant for the query", kind->name),
				 errdetail("Use literals, bound parameters, or constructors such as dp_laplace(1.0); "
						   "column references, volatile functions and subqueries are not allowed.")));
	es = ExecInitExpr(expr, NULL);
	return ExecEvalExprSwitchContext(es, econtext, isnull);
}

/* Plan one dp aggregate call site of an Agg node. */
static DpCallSite *
DpPlanCallSite(const DpAggKind *kind, Aggref *aggref, Plan *plan, EState *estate)
{
	List	   *args = DpOriginalArgs(aggref, plan);
	ExprContext *econtext = CreateExprContext(estate);
	DpCallSite *site = palloc0(sizeof(DpCallSite));
	Datum		values[DP_MAX_CONST_ARGS];
	bool		nulls[DP_MAX_CONST_ARGS];

	site->kind = kind;
	site->aggref = aggref;
	if (kind->mech_argno < 0)
		site->mech = *dp_default_mechanism;
	else
	{
		bool		isnull;
		Datum		d;
		char		err[256];

		if (kind->mech_argno >= list_length(args))
			elog(ERROR, "%s: no argument %d", kind->name, kind->mech_argno + 1);
		d = DpEvalConstArg(kind, list_nth_node(TargetEntry, args, kind->mech_argno)->expr,
						   econtext, &isnull);
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the mechanism of %s must not be null", kind->name)));
		memcpy(&site->mech, DatumGetPointer(d), sizeof(DpMechanism));
		if (!dp_mechanism_validate(&site->mech, err, sizeof(err)))
			DpReportMechanismError(err);
	}
	for (int i = 0; i < kind->nconst; i++)
	{
		if (kind->const_argnos[i] >= list_length(args))
			elog(ERROR, "%s: no argument %d", kind->name, kind->const_argnos[i] + 1);
		values[i] = DpEvalConstArg(kind, list_nth_node(TargetEntry, args, kind->const_argnos[i])->expr,
								   econtext, &nulls[i]);
	}
	kind->plan(site, values, nulls);
	FreeExprContext(econtext, true);
	return site;
}

/* Context of the PlanState walk. */
typedef struct DpWalkContext
{
	EState	   *estate;
	List	   *sites;
} DpWalkContext;

/* Walker over expressions: reject dp aggregates used as window functions. */
static bool
DpRejectWindowCalls(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, WindowFunc))
	{
		const DpAggKind *kind = DpKindOfAggregate(((WindowFunc *) node)->winfnoid);

		if (kind != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s cannot be used as a window function", kind->name),
					 errdetail("A dp aggregate releases one noisy value per group; its cost must be known before the query runs.")));
	}
	return expression_tree_walker(node, DpRejectWindowCalls, context);
}

/* Walker over the PlanState tree: plan the dp call sites of every Agg node. */
static bool
DpFindCallSites(PlanState *ps, void *context)
{
	DpWalkContext *cxt = (DpWalkContext *) context;

	if (ps == NULL)
		return false;
	if (IsA(ps, AggState))
	{
		AggState   *as = (AggState *) ps;
		Agg		   *agg = (Agg *) ps->plan;
		ListCell   *lc;
		Bitmapset  *seen = NULL;

		foreach(lc, as->aggs)
		{
			Aggref	   *aggref = lfirst_node(Aggref, lc);
			const DpAggKind *kind;

			if (DO_AGGSPLIT_SKIPFINAL(aggref->aggsplit))
				continue;
			kind = DpKindOfAggregate(aggref->aggfnoid);
			if (kind == NULL)
				continue;
			if (agg->groupingSets != NIL || agg->chain != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("%s cannot be used with GROUPING SETS, ROLLUP or CUBE", kind->name),
						 errdetail("Each row would be released once per grouping set.")));
			/* identical calls share one result (aggno): one release */
			if (bms_is_member(aggref->aggno, seen))
			{
				DpCallSite *dup = NULL;
				ListCell   *lc2;

				foreach(lc2, cxt->sites)
				{
					DpCallSite *s = lfirst(lc2);

					if (s->aggref->aggno == aggref->aggno && s->kind == kind &&
						equal(s->aggref, aggref))
						dup = s;
				}
				if (dup != NULL)
				{
					DpCallSite *alias = palloc(sizeof(DpCallSite));

					*alias = *dup;
					alias->aggref = aggref;
					cxt->sites = lappend(cxt->sites, alias);
					continue;
				}
			}
			seen = bms_add_member(seen, aggref->aggno);
			cxt->sites = lappend(cxt->sites, DpPlanCallSite(kind, aggref, ps->plan, cxt->estate));
		}
	}
	if (IsA(ps, WindowAggState))
		DpRejectWindowCalls((Node *) ps->plan->targetlist, NULL);
	return planstate_tree_walker(ps, DpFindCallSites, context);
}

/* Memory-context callback: unlink a finished query's sites. */
static void
DpQuerySitesRelease(void *arg)
{
	DpQuerySites *q = (DpQuerySites *) arg;
	DpQuerySites **p;

	for (p = &active_queries; *p != NULL; p = &(*p)->next)
		if (*p == q)
		{
			*p = q->next;
			break;
		}
}

/* ExecutorStart hook: standard start, then plan the query's dp call sites. */
static void
DpExecutorStart(QueryDesc *queryDesc, int eflags)
{
	DpWalkContext cxt;
	MemoryContext old;

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0 || queryDesc->planstate == NULL)
		return;

	old = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);
	cxt.estate = queryDesc->estate;
	cxt.sites = NIL;
	DpFindCallSites(queryDesc->planstate, &cxt);
	if (cxt.sites != NIL)
	{
		DpQuerySites *q = palloc0(sizeof(DpQuerySites));

		q->sites = cxt.sites;
		q->cb.func = DpQuerySitesRelease;
		q->cb.arg = q;
		MemoryContextRegisterResetCallback(queryDesc->estate->es_query_cxt, &q->cb);
		q->next = active_queries;
		active_queries = q;
	}
	MemoryContextSwitchTo(old);
}

/* Install the executor hooks (only when preloaded). */
void
DpCostInit(void)
{
	if (!dp_pg_preloaded)
		return;
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = DpExecutorStart;
	CacheRegisterSyscacheCallback(PROCOID, DpKindCacheInvalidate, (Datum) 0);
}

/* The call site of the final function running in fcinfo (see cost.h). */
DpCallSite *
DpCallSiteForFinal(FunctionCallInfo fcinfo, const DpAggKind *kind)
{
	DpCallSite *site = (DpCallSite *) fcinfo->flinfo->fn_extra;
	Aggref	   *aggref;

	if (site != NULL)
		return site;

	DpRequirePreload();
	if (AggCheckCallContext(fcinfo, NULL) != AGG_CONTEXT_AGGREGATE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot be used as a window function or called directly", kind->name),
				 errdetail("A dp aggregate releases one noisy value per group; its cost must be known before the query runs.")));

	aggref = AggGetAggref(fcinfo);
	for (DpQuerySites *q = active_queries; q != NULL && site == NULL; q = q->next)
	{
		ListCell   *lc;

		foreach(lc, q->sites)
		{
			DpCallSite *s = lfirst(lc);

			if (s->aggref == aggref && s->kind == kind)
			{
				site = s;
				break;
			}
		}
	}
	if (site == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s was not planned by dp_pg before the query started; nothing is released", kind->name),
				 errdetail("dp_pg aggregates can only be finalized by the query that planned them.")));
	fcinfo->flinfo->fn_extra = site;
	return site;
}
