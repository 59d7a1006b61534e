/*
 * callsite.c — find a query's dp aggregate call sites and plan them before it runs.
 *
 * Protocol
 * --------
 * ExecutorStart (hooks.c), before the standard start: the constant arguments
 * of every dp aggregate in the plan (mechanisms, bounds, bins, the bounds of
 * the unit-bounded forms) that are not literals already -- bound parameters,
 * stable functions of them -- are evaluated once with the query's parameters
 * and the plan (a copy of it) carries the values as constants.  So they are
 * never evaluated per row, and rows are clamped with exactly the values the
 * noise is planned for.
 *
 * ExecutorStart, after the standard start (every backend and parallel
 * worker): walk the PlanState tree; for every
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
 * Then, in the leader (never in a parallel worker, whose leader charged the
 * whole plan), the query's cost — the sequential composition of its call
 * sites; the groups of one call compose in parallel — is charged to every
 * budgeted role the query runs for (ledger/requests.c), durably and before the first
 * row is produced.  A refused charge is an ERROR before execution: nothing
 * is released.  Only then are the sites marked charged.
 *
 * Final functions look their call site up by the Aggref pointer they run for
 * (AggGetAggref).  A final function with no planned site releases nothing:
 * that is the fail-closed path for aggregates that did not go through this
 * hook (library not preloaded, a user-defined aggregate reusing dp_pg's
 * final function, a path this file does not know).
 *
 * Shapes whose number of releases is not known at start are rejected here:
 * dp aggregates as window functions and under GROUPING SETS / ROLLUP / CUBE.
 *
 * Layer release/ (docs/development.md): may call the ledger, common/ and
 * the numeric core, nothing above.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/inval.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "access/parallel.h"
#include "lib/stringinfo.h"
#include "parser/analyze.h"
#include "parser/parse_func.h"
#include "tcop/tcopprot.h"
#include "utils/snapmgr.h"

#include "agg_common.h"
#include "accuracy.h"
#include "calibrate.h"
#include "release.h"
#include "guc.h"
#include "ledger.h"
#include "plantree.h"
#include "protected.h"

PG_FUNCTION_INFO_V1(dp_estimate_query_cost);

/* The call sites of one running query. */
typedef struct DpQuerySites
{
	struct DpQuerySites *next;
	List	   *sites;			/* DpCallSite * */
	EState	   *estate;			/* the query's executor state */
	MemoryContextCallback cb;
} DpQuerySites;


/* the EXPLAIN-only start of DpEstimateQueryCost's plan: compose, do not charge */
static QueryDesc *estimate_query = NULL;
static DpCost estimate_total;
static bool estimate_want_bars = false;
static struct DpSiteBar *estimate_bars = NULL;
static int	estimate_nbars = 0;
static MemoryContext estimate_bars_cxt = NULL;
static int	estimate_sites = 0;
static DpQuerySites *active_queries = NULL;

/* dp_pg.accuracy_cost: the accuracy every site that takes one asks for, while it plans its query */
static const DpMechanism *accuracy_override = NULL;
/* ... and the mechanisms its sites were planned with ("; "-separated, in the caller's context) */
static StringInfo estimate_mechs = NULL;

/* The unit seeds bound into the plan of the last query bound (DpCallSitesSeeds). */
static QueryDesc *seeds_query = NULL;
static List *seeds_consts = NIL;

/* The answer cache's side of the call sites (cache.c registers it at load). */
static const DpCallSiteCache *site_cache = NULL;

/* Register the answer cache's side of the call sites (DpCacheInit, at load). */
void
DpCallSitesSetCache(const DpCallSiteCache *cache)
{
	site_cache = cache;
}


/* Walker: true if the expression uses a Param that is not a bound parameter, or a subquery (see release.h). */
bool
DpContainsNonExternParam(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind != PARAM_EXTERN;
	if (IsA(node, SubLink) || IsA(node, SubPlan) || IsA(node, AlternativeSubPlan))
		return true;
	return expression_tree_walker(node, DpContainsNonExternParam, context);
}

/*
 * The arguments of the Aggref as written: for a finalizing Aggref that
 * combines partial states, follow its single argument down the plan to the
 * Partial Aggregate's Aggref.  *argplan is the Agg node whose input the
 * arguments' Vars refer to.
 */
static List *
DpOriginalArgs(Aggref *aggref, Plan *plan, Plan **argplan)
{
	Node	   *expr;

	*argplan = plan;
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
		{
			*argplan = plan;
			return ((Aggref *) expr)->args;
		}
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
		DpContainsNonExternParam((Node *) expr, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the parameters of %s must be constant for the query", kind->name),
				 errdetail("Use literals, bound parameters, or constructors such as dp_laplace(1.0); "
						   "column references, volatile functions and subqueries are not allowed.")));
	es = ExecInitExpr(expr, NULL);
	return ExecEvalExprSwitchContext(es, econtext, isnull);
}

/* The column a site's argument reads (see release.h). */
bool
DpCallSiteArgColumn(const DpCallSite *site, int argno, Oid *relid, AttrNumber *attno)
{
	Plan	   *plan;
	List	   *args = DpOriginalArgs(site->aggref, site->aggplan, &plan);
	Expr	   *expr;

	if (argno < 0 || argno >= list_length(args))
		return false;
	expr = list_nth_node(TargetEntry, args, argno)->expr;
	/* each step goes one plan node down; a plan is far shallower than this */
	for (int depth = 0; depth < 1000; depth++)
	{
		Var		   *v;
		List	   *tlist;

		while (IsA(expr, RelabelType))
			expr = ((RelabelType *) expr)->arg;
		if (!IsA(expr, Var) || ((Var *) expr)->varattno <= 0)
			return false;
		v = (Var *) expr;
		if (IsA(plan, Append) || IsA(plan, MergeAppend))
			return false;		/* rows of several relations */
		if (v->varno == OUTER_VAR || v->varno == INNER_VAR)
		{
			plan = v->varno == OUTER_VAR ? outerPlan(plan) : innerPlan(plan);
			tlist = plan ? plan->targetlist : NIL;
		}
		else if (v->varno == INDEX_VAR)
		{
			if (!IsA(plan, IndexOnlyScan))
				return false;	/* a foreign or custom scan's own list */
			tlist = ((IndexOnlyScan *) plan)->indextlist;
		}
		else if (IsA(plan, SubqueryScan))
		{
			plan = ((SubqueryScan *) plan)->subplan;
			tlist = plan->targetlist;
		}
		else
		{
			RangeTblEntry *rte = exec_rt_fetch(v->varno, site->estate);

			if (rte->rtekind != RTE_RELATION)
				return false;
			*relid = rte->relid;
			*attno = v->varattno;
			return true;
		}
		if (v->varattno > list_length(tlist))
			return false;
		expr = list_nth_node(TargetEntry, tlist, v->varattno - 1)->expr;
	}
	return false;
}

/* True if the site's statement reads a protected table anywhere (see release.h). */
bool
DpCallSiteReadsProtected(const DpCallSite *site)
{
	ListCell   *lc;

	foreach(lc, site->estate->es_range_table)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION && DpIsProtected(rte->relid))
			return true;
	}
	return false;
}

/*
 * The largest rho whose zCDP implies (epsilon, delta)-DP by the
 * Canonne-Kamath-Steinke conversion (bisection: its epsilon(rho) increases
 * with rho); 0 if none is found.
 */
static double
DpZcdpRhoFor(double epsilon, double delta)
{
	double		lo = 0.0;
	double		hi = epsilon;	/* eps_cks(rho, delta) >= rho: epsilon is too much */

	if (!(epsilon > 0.0) || !isfinite(epsilon) || !(delta > 0.0) || !(delta < 1.0))
		return 0.0;
	for (int i = 0; i < 100; i++)
	{
		double		mid = 0.5 * (lo + hi);
		double		e = dp_zcdp_eps_cks(mid, delta, NULL);

		if (e <= epsilon)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}


/* An int8 / int4 constant argument of a bounded form, checked to lie in [1, max]. */
static int64
DpBoundArg(const DpAggKind *kind, List *args, int argno, Oid type, int64 max, ExprContext *econtext)
{
	bool		isnull;
	Datum		d = DpEvalConstArg(kind, list_nth_node(TargetEntry, args, argno)->expr, econtext, &isnull);
	int64		v;

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the contribution bounds of %s must not be null", kind->name)));
	v = type == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
	if (v < 1 || v > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a contribution bound of %s is out of range", kind->name),
				 errdetail("It is " INT64_FORMAT "; it must be between 1 and " INT64_FORMAT ".", v, max)));
	return v;
}

/*
 * Plan a site's noise for the mechanism orig_mech (before any split over a
 * unit's cells) with its evaluated constant arguments, and set its cost: the
 * split over the unit's cells, the kind's plan, the zCDP alternative for a
 * split Gaussian, the composition over the cells.
 */
static void
DpPlanSiteMechanism(DpCallSite *site, const DpMechanism *orig_mech, Datum *values, bool *nulls)
{
	const DpAggKind *kind = site->kind;
	bool		zcdp_split = false;

	/* a unit touches at most unit_groups cells: each cell gets 1/groups of the budget */
	site->mech = *orig_mech;
	if (site->unit_groups > 1)
		site->mech = DpSplitMechanism(&site->mech, site->unit_groups);
	kind->plan(site, values, nulls);

	/*
	 * Gaussian (epsilon, delta) over several cells: splitting epsilon and
	 * delta is basic composition; splitting zCDP is often much tighter (the
	 * discrete Gaussian's rho is exact for integer shifts and adds up over
	 * cells, and the Canonne-Kamath-Steinke conversion of the total gives
	 * (epsilon, delta)).  Plan both; keep the one with the smaller sigma.
	 */
	if (site->unit_groups > 1 && orig_mech->family == DP_MECH_GAUSSIAN &&
		orig_mech->form == DP_FORM_EPSILON_DELTA &&
		!kind->thresholded)
	{
		DpCallSite	alt = *site;
		double		rho = DpZcdpRhoFor(orig_mech->p[0], orig_mech->p[1]);

		if (rho > 0.0)
		{
			alt.mech.family = DP_MECH_GAUSSIAN;
			alt.mech.form = DP_FORM_RHO;
			alt.mech.p[0] = rho / site->unit_groups;
			alt.mech.p[1] = 0.0;
			kind->plan(&alt, values, nulls);
			if (alt.plan.sigma < site->plan.sigma)
			{
				*site = alt;
				zcdp_split = true;
			}
		}
	}

	/*
	 * The releases of one call compose in parallel over groups; a unit that
	 * reaches unit_groups cells is in unit_groups of them: their composition.
	 */
	if (!kind->own_cost)
		dp_noise_plan_cost(&site->plan, &site->cost);
	if (site->unit_groups > 1)
	{
		DpCost		one = site->cost;

		for (int i = 1; i < site->unit_groups; i++)
			dp_cost_add(&site->cost, &one);
	}
	if (zcdp_split)
	{
		/* (epsilon, delta) of the composed rho (<= the requested epsilon, rounded up) */
		site->cost.epsilon = nextafter(dp_zcdp_eps_cks(site->cost.rho, orig_mech->p[1], NULL), INFINITY);
		site->cost.delta = orig_mech->p[1];
		if (!(site->cost.epsilon <= orig_mech->p[0] * (1.0 + 1e-9)))
			elog(ERROR, "dp_pg: zCDP split of %s does not meet its epsilon", kind->name);
	}
}

/* What the accuracy search plans with (DpAccuracyHalfwidth's arg). */
typedef struct DpAccuracySearch
{
	DpCallSite *site;
	Datum	   *values;
	bool	   *nulls;
	double		level;
	int64		rows;
	MemoryContext cxt;			/* each candidate's plan is made and forgotten here */
} DpAccuracySearch;

/* The half-width at the asked level of the site planned with mech (NAN on a planning error). */
static double
DpAccuracyHalfwidth(const DpMechanism *mech, void *arg)
{
	DpAccuracySearch *a = (DpAccuracySearch *) arg;
	DpCallSite	trial = *a->site;
	MemoryContext old = MemoryContextSwitchTo(a->cxt);
	volatile double h = NAN;

	PG_TRY();
	{
		DpPlanSiteMechanism(&trial, mech, a->values, a->nulls);
		h = trial.kind->halfwidth != NULL ? trial.kind->halfwidth(&trial, a->level, a->rows)
			: dp_noise_plan_halfwidth(&trial.plan, a->level);
	}
	PG_CATCH();
	{
		/* a candidate the kind cannot plan (noise beyond the samplers' range) does not meet it */
		MemoryContextSwitchTo(a->cxt);
		FlushErrorState();
		h = NAN;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextReset(a->cxt);
	return h;
}

/*
 * accuracy(halfwidth=H, level=L[, rows=N]): plan the site with the cheapest
 * mechanism of the family the role's accounting chooses (cost.c) whose
 * half-width at L is at most H (core/accuracy.c).
 */
static void
DpPlanSiteAccuracy(DpCallSite *site, const DpMechanism *asked, Datum *values, bool *nulls)
{
	DpAccuracySearch a;
	DpAccuracyShape shapes[2];
	int			nshapes;
	DpCallSite	best;
	bool		have = false;
	char		text[DP_MECH_TEXT_LEN];
	char		err[256];

	if (!site->kind->accuracy)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s does not take accuracy(halfwidth=.., level=..)", site->kind->name),
				 errdetail("accuracy() is resolved by the aggregates with an error bar of their value: dp_count(expr, mechanism), "
						   "dp_sum, dp_avg and dp_histogram with bins.")));
	dp_mechanism_format(asked, text, sizeof(text));
	nshapes = DpAccuracyShapes(shapes);
	a.values = values;
	a.nulls = nulls;
	a.level = asked->p[1];
	a.rows = asked->form;
	for (int i = 0; i < nshapes; i++)
	{
		DpMechanism chosen;
		DpMechanism most = {shapes[i].family, shapes[i].form,
		{shapes[i].form == DP_FORM_RHO ? DP_MAX_RHO : DP_MAX_EPSILON, shapes[i].delta}};
		DpCallSite	trial = *site;

		/* the kind's own errors (its bounds, bins) come here, uncaught: only the noise varies below */
		DpPlanSiteMechanism(&trial, &most, values, nulls);
		a.site = site;
		a.cxt = AllocSetContextCreate(CurrentMemoryContext, "dp_pg accuracy search", ALLOCSET_SMALL_SIZES);
		if (!dp_accuracy_resolve(shapes[i].family, shapes[i].form, shapes[i].delta, asked->p[0],
								 DpAccuracyHalfwidth, &a, &chosen, err, sizeof(err)))
		{
			MemoryContextDelete(a.cxt);
			continue;
		}
		MemoryContextDelete(a.cxt);
		trial = *site;
		DpPlanSiteMechanism(&trial, &chosen, values, nulls);
		if (!have || DpAccuracyPrefer(&trial.cost, &best.cost))
			best = trial;
		have = true;
	}
	if (!have)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s cannot meet %s", site->kind->name, text),
				 errdetail("%s.", err),
				 errhint("Ask for a wider half-width or a lower level%s.",
						 strcmp(site->kind->name, "dp_avg") == 0 ? ", or only for larger groups (rows=N)" : "")));
	*site = best;
	site->asked = *asked;
}

/* Plan one dp aggregate call site of an Agg node. */
static DpCallSite *
DpPlanCallSite(const DpAggKind *kind, Aggref *aggref, Plan *plan, EState *estate)
{
	Plan	   *argplan;
	List	   *args = DpOriginalArgs(aggref, plan, &argplan);
	ExprContext *econtext = CreateExprContext(estate);
	DpCallSite *site = palloc0(sizeof(DpCallSite));
	Datum		values[DP_MAX_CONST_ARGS];
	bool		nulls[DP_MAX_CONST_ARGS];
	int			nargs = DpAggNumArgs(args);
	DpMechanism orig_mech;

	site->kind = kind;
	site->aggref = aggref;
	site->aggplan = plan;
	site->estate = estate;
	site->unit_rows = 1;
	site->unit_groups = 1;
	site->bar_index = -1;
	if (nargs != kind->nargs)
	{
		site->bounded = true;
		/* the unit-bounded form (guard/units.c): trailing [weight, rows,] groups */
		if (kind->bounded_extra <= 0 || nargs != kind->nargs + kind->bounded_extra)
			elog(ERROR, "%s: %d arguments where %d were expected", kind->name, nargs, kind->nargs);
		site->unit_groups = (int32) DpBoundArg(kind, args, nargs - 1, INT4OID, DP_MAX_UNIT_GROUPS, econtext);
		if (kind->bounded_extra == 3)
			site->unit_rows = DpBoundArg(kind, args, nargs - 2, INT8OID, DP_MAX_UNIT_ROWS, econtext);
	}
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
	/* dp_pg.accuracy_cost: every site that takes it asks for that accuracy */
	if (accuracy_override != NULL && kind->accuracy && kind->mech_argno >= 0)
		site->mech = *accuracy_override;
	if (dp_mechanism_is_groupwise(&site->mech) && !kind->groupwise)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s does not take groupwise(rho=.., r=..)", kind->name),
				 errdetail("The group-wise relative-error mechanism releases counts: dp_count(expr, mechanism) and "
						   "dp_histogram with bins (on a table with a privacy unit, dp_histogram only).")));
	orig_mech = site->mech;
	for (int i = 0; i < kind->nconst; i++)
	{
		if (kind->const_argnos[i] >= list_length(args))
			elog(ERROR, "%s: no argument %d", kind->name, kind->const_argnos[i] + 1);
		values[i] = DpEvalConstArg(kind, list_nth_node(TargetEntry, args, kind->const_argnos[i])->expr,
								   econtext, &nulls[i]);
	}
	if (dp_mechanism_is_accuracy(&orig_mech))
		DpPlanSiteAccuracy(site, &orig_mech, values, nulls);
	else
		DpPlanSiteMechanism(site, &orig_mech, values, nulls);
	FreeExprContext(econtext, true);
	DpCheckReleaseFloor(kind->name, &site->cost);
	return site;
}

/*
 * dp_pg.min_release_epsilon: the least one release may cost.  Defence in
 * depth against an oracle the guard might one day let through (an error, a
 * notice, a timing that depends on one row answers a yes/no question about
 * it): each such question then costs real budget, not epsilon = 1e-6.
 */
double		dp_min_release_epsilon = DP_MIN_RELEASE_EPSILON_DEFAULT;

/* See release.h. */
void
DpCheckReleaseFloor(const char *what, const DpCost *c)
{
	double		f = dp_min_release_epsilon;

	/* epsilon; for a zCDP release (no epsilon of its own) rho: a pure f-DP release is f^2 / 2-zCDP */
	if (!(f > 0.0) || (isinf(c->epsilon) ? c->rho >= f * f / 2.0 : c->epsilon >= f))
		return;
	/* a free call site (an estimate from a locally private column that reads no protected table) */
	if (c->epsilon == 0.0 && c->delta == 0.0 && c->rho == 0.0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("a release of %s must cost at least epsilon = %g", what, f),
			 errdetail("This one would cost epsilon = %g, rho = %g.  dp_pg.min_release_epsilon is the least "
					   "one release may cost (set by a superuser for the cluster, a database or a role); "
					   "nothing was charged.", c->epsilon, c->rho),
			 errhint("Ask with epsilon >= %g (or rho >= %g): a cheaper answer would be mostly noise.",
					 f, f * f / 2.0)));
}

/* Define dp_pg.min_release_epsilon (at load). */
void
DpCallSitesInit(void)
{
	DefineCustomRealVariable("dp_pg.min_release_epsilon",
							 "The least epsilon one release (a dp aggregate call, partition selection, a synthetic twin) may cost.",
							 "A release with a smaller epsilon (and rho below its square over 2) is refused, uncharged. "
							 "Superuser only; per role with ALTER ROLE ... SET. 0 turns the floor off.",
							 &dp_min_release_epsilon,
							 DP_MIN_RELEASE_EPSILON_DEFAULT, 0.0, 1e6,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
}

/* Context of the PlanState walk. */
typedef struct DpWalkContext
{
	EState	   *estate;
	List	   *sites;
	int			rescanned;		/* > 0 below a node that re-executes its child */
	int			releases;		/* Agg nodes with dp call sites so far */
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

static bool DpWalkChildren(PlanState *ps, DpWalkContext *cxt);

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
		int			release = 0;

		foreach(lc, as->aggs)
		{
			Aggref	   *aggref = lfirst_node(Aggref, lc);
			const DpAggKind *kind;

			if (DO_AGGSPLIT_SKIPFINAL(aggref->aggsplit))
				continue;
			kind = DpKindOfAggregate(aggref->aggfnoid);
			if (kind == NULL)
				continue;
			if (cxt->rescanned > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("%s cannot be used where its query part is re-executed", kind->name),
						 errdetail("Correlated subqueries, LATERAL, the inner side of nested loops and recursive queries "
								   "would release it once per execution; its cost must be known before the query runs."),
						 errhint("Compute the dp aggregate once, in the outermost query or an uncorrelated subquery.")));
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
					alias->duplicate = true;
					cxt->sites = lappend(cxt->sites, alias);
					continue;
				}
			}
			seen = bms_add_member(seen, aggref->aggno);
			if (release == 0)
				release = ++cxt->releases;
			cxt->sites = lappend(cxt->sites, DpPlanCallSite(kind, aggref, ps->plan, cxt->estate));
			((DpCallSite *) llast(cxt->sites))->release = release;
		}
	}
	if (IsA(ps, WindowAggState))
		DpRejectWindowCalls((Node *) ps->plan->targetlist, NULL);
	return DpWalkChildren(ps, cxt);
}

/* Walk a list of SubPlanStates, re-executed (rescan > 0) or not. */
static void
DpWalkSubPlans(List *subplans, DpWalkContext *cxt, int rescan)
{
	ListCell   *lc;

	cxt->rescanned += rescan;
	foreach(lc, subplans)
		DpFindCallSites(((SubPlanState *) lfirst(lc))->planstate, cxt);
	cxt->rescanned -= rescan;
}

/*
 * Walk the InitPlans of a node.  One whose plan reads no parameter of the
 * plans around it (empty extParam: an uncorrelated subquery, or the
 * MATERIALIZED common table expression of a DP level) runs at most once per
 * execution of the query, however often the node it hangs on is rescanned:
 * PostgreSQL evaluates it again only when a parameter it reads changed
 * (ExecReScan, ExecReScanCteScan).  So it is not re-executed, even below a
 * nested loop's inner side (a dp query joined to a series, as Cube's rolling
 * windows write it).  The others share their node's fate.
 */
static void
DpWalkInitPlans(List *initplans, DpWalkContext *cxt)
{
	ListCell   *lc;

	foreach(lc, initplans)
	{
		PlanState  *sub = ((SubPlanState *) lfirst(lc))->planstate;
		int			saved = cxt->rescanned;

		if (sub != NULL && bms_is_empty(sub->plan->extParam))
			cxt->rescanned = 0;
		DpFindCallSites(sub, cxt);
		cxt->rescanned = saved;
	}
}

/* Walk a PlanState child, counting it as re-executed if rescan > 0. */
static void
DpWalkChild(PlanState *child, DpWalkContext *cxt, int rescan)
{
	cxt->rescanned += rescan;
	DpFindCallSites(child, cxt);
	cxt->rescanned -= rescan;
}

/*
 * Walk every child of ps.  A child that ps may execute more than once — the
 * inner side of a nested loop (LATERAL), the child of a Memoize, both sides
 * of a recursive union, a SubPlan evaluated per row — is marked re-executed:
 * a dp aggregate there would be released once per execution.  InitPlans run
 * once per execution of their parent, or once per query (DpWalkInitPlans).
 */
static bool
DpWalkChildren(PlanState *ps, DpWalkContext *cxt)
{
	bool		rescan_all = IsA(ps, MemoizeState) || IsA(ps, RecursiveUnionState);

	DpWalkInitPlans(ps->initPlan, cxt);
	DpWalkChild(outerPlanState(ps), cxt, rescan_all ? 1 : 0);
	DpWalkChild(innerPlanState(ps), cxt, (rescan_all || IsA(ps, NestLoopState)) ? 1 : 0);
	switch (nodeTag(ps))
	{
		case T_AppendState:
			for (int i = 0; i < ((AppendState *) ps)->as_nplans; i++)
				DpWalkChild(((AppendState *) ps)->appendplans[i], cxt, 0);
			break;
		case T_MergeAppendState:
			for (int i = 0; i < ((MergeAppendState *) ps)->ms_nplans; i++)
				DpWalkChild(((MergeAppendState *) ps)->mergeplans[i], cxt, 0);
			break;
		case T_BitmapAndState:
			for (int i = 0; i < ((BitmapAndState *) ps)->nplans; i++)
				DpWalkChild(((BitmapAndState *) ps)->bitmapplans[i], cxt, 0);
			break;
		case T_BitmapOrState:
			for (int i = 0; i < ((BitmapOrState *) ps)->nplans; i++)
				DpWalkChild(((BitmapOrState *) ps)->bitmapplans[i], cxt, 0);
			break;
		case T_SubqueryScanState:
			DpWalkChild(((SubqueryScanState *) ps)->subplan, cxt, 0);
			break;
		case T_CustomScanState:
			{
				ListCell   *lc;

				foreach(lc, ((CustomScanState *) ps)->custom_ps)
					DpWalkChild((PlanState *) lfirst(lc), cxt, 0);
				break;
			}
		default:
			break;
	}
	/* SubPlans in this node's expressions may run once per row */
	DpWalkSubPlans(ps->subPlan, cxt, 1);
	return false;
}

/* EXPLAIN-only start of a query planned by DpEstimateQueryCost: compose its cost. */
static void
DpEstimatePlanned(QueryDesc *queryDesc)
{
	DpWalkContext cxt;
	MemoryContext old = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);

	cxt.estate = queryDesc->estate;
	cxt.sites = NIL;
	cxt.rescanned = 0;
	cxt.releases = 0;
	DpFindCallSites(queryDesc->planstate, &cxt);
	estimate_sites = DpComposeSites(cxt.sites, &estimate_total);
	if (estimate_mechs != NULL)
	{
		ListCell   *lc;

		foreach(lc, cxt.sites)
		{
			DpCallSite *site = lfirst(lc);
			char		text[DP_MECH_TEXT_LEN];

			if (site->duplicate)
				continue;
			dp_mechanism_format(&site->mech, text, sizeof(text));
			appendStringInfo(estimate_mechs, "%s%s %s", estimate_mechs->len > 0 ? "; " : "", site->kind->name, text);
		}
	}
	if (estimate_want_bars)
	{
		MemoryContextSwitchTo(estimate_bars_cxt);
		estimate_bars = site_cache->site_bars(cxt.sites, &estimate_nbars);
	}
	MemoryContextSwitchTo(old);
}

/* What a query would cost, without charging (see release.h). */
int
DpEstimateQueryCost(const char *query, DpCost *total)
{
	List	   *raw;
	RawStmt    *stmt;
	List	   *querytrees;
	PlannedStmt *plan;
	QueryDesc  *qd;

	raw = pg_parse_query(query);
	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("estimate_cost takes exactly one statement")));
	stmt = linitial_node(RawStmt, raw);
	querytrees = pg_analyze_and_rewrite_fixedparams(stmt, query, NULL, 0, NULL);
	if (list_length(querytrees) != 1 || linitial_node(Query, querytrees)->commandType != CMD_SELECT ||
		linitial_node(Query, querytrees)->utilityStmt != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("estimate_cost takes one SELECT statement")));
	plan = pg_plan_query(linitial_node(Query, querytrees), query, CURSOR_OPT_PARALLEL_OK, NULL);
	qd = CreateQueryDesc(plan, query, GetActiveSnapshot(), InvalidSnapshot,
						 None_Receiver, NULL, NULL, 0);
	estimate_query = qd;
	estimate_sites = 0;
	dp_cost_zero(&estimate_total);
	PG_TRY();
	{
		ExecutorStart(qd, EXEC_FLAG_EXPLAIN_ONLY);
	}
	PG_FINALLY();
	{
		estimate_query = NULL;
	}
	PG_END_TRY();
	ExecutorEnd(qd);
	FreeQueryDesc(qd);
	*total = estimate_total;
	return estimate_sites;
}

/* The error bars of a query's call sites, planned as DpEstimateQueryCost does (see release.h). */
struct DpSiteBar *
DpEstimateQueryBars(const char *query, int *n)
{
	DpCost		total;

	estimate_want_bars = true;
	estimate_bars = NULL;
	estimate_nbars = 0;
	estimate_bars_cxt = CurrentMemoryContext;
	PG_TRY();
	{
		(void) DpEstimateQueryCost(query, &total);
	}
	PG_FINALLY();
	{
		estimate_want_bars = false;
	}
	PG_END_TRY();
	*n = estimate_nbars;
	return estimate_bars;
}

/* dp_pg.estimate_cost(query): what running the query would cost, without charging. */
Datum
dp_estimate_query_cost(PG_FUNCTION_ARGS)
{
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	DpCost		c;
	int			n;

	DpRequirePreload();
	n = DpEstimateQueryCost(query, &c);
	return DpCostRecord(fcinfo, &c, n);
}

PG_FUNCTION_INFO_V1(dp_accuracy_cost);

/*
 * dp_pg.accuracy_cost(query, halfwidth, level, rows): what the query would
 * cost with every dp aggregate that has an error bar of its values asking
 * for accuracy(halfwidth, level, rows) instead of its own mechanism (the
 * others keep theirs) — planned, not run, not charged — and the mechanisms
 * chosen.
 */
Datum
dp_accuracy_cost(PG_FUNCTION_ARGS)
{
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	DpMechanism asked;
	StringInfoData mechs;
	DpCost		c;
	int			n;
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false};
	char		err[256];

	DpRequirePreload();
	asked.family = DP_MECH_ACCURACY;
	asked.p[0] = PG_GETARG_FLOAT8(1);
	asked.p[1] = PG_GETARG_FLOAT8(2);
	asked.form = PG_GETARG_INT32(3);
	if (!dp_mechanism_validate(&asked, err, sizeof(err)))
		DpReportMechanismError(err);
	initStringInfo(&mechs);
	accuracy_override = &asked;
	estimate_mechs = &mechs;
	PG_TRY();
	{
		n = DpEstimateQueryCost(query, &c);
	}
	PG_FINALLY();
	{
		accuracy_override = NULL;
		estimate_mechs = NULL;
	}
	PG_END_TRY();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = DpNullableFloat(c.epsilon, &nulls[0]);
	values[1] = Float8GetDatum(c.delta);
	values[2] = DpNullableFloat(c.rho, &nulls[2]);
	values[3] = Int32GetDatum(n);
	values[4] = CStringGetTextDatum(mechs.data);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
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

/* After the standard ExecutorStart: plan the query's dp call sites and charge them. */
void
DpCallSitesStart(QueryDesc *queryDesc, int eflags)
{
	DpWalkContext cxt;
	MemoryContext old;

#ifdef DP_PG_TEST_SWITCHES
	/* dp_pg.debug_noiseless: exact releases for superuser sessions (test builds only) */
	dp_sampler_debug_zero = dp_debug_noiseless && superuser_arg(GetSessionUserId());
#endif
	if (queryDesc->planstate == NULL)
		return;
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0)
	{
		if (queryDesc == estimate_query)
			DpEstimatePlanned(queryDesc);
		return;
	}

	old = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);
	cxt.estate = queryDesc->estate;
	cxt.sites = NIL;
	cxt.rescanned = 0;
	cxt.releases = 0;
	DpFindCallSites(queryDesc->planstate, &cxt);
	/* an answer released before to the same budgets is served again, uncharged (cache.c) */
	if (cxt.sites != NIL && !site_cache->lookup(queryDesc, eflags, cxt.sites))
	{
		DpChargeQuery(queryDesc, cxt.sites);
		if (!IsParallelWorker())
			site_cache->note_release(queryDesc, cxt.sites);
	}
	if (cxt.sites != NIL)
	{
		DpQuerySites *q = palloc0(sizeof(DpQuerySites));

		q->sites = cxt.sites;
		q->estate = queryDesc->estate;
		q->cb.func = DpQuerySitesRelease;
		q->cb.arg = q;
		MemoryContextRegisterResetCallback(queryDesc->estate->es_query_cxt, &q->cb);
		q->next = active_queries;
		active_queries = q;
	}
	MemoryContextSwitchTo(old);
}

/* True for the EXPLAIN-only start of dp_pg.estimate_cost's own plan (it runs nothing). */
bool
DpCallSitesIsEstimate(QueryDesc *queryDesc)
{
	return queryDesc == estimate_query;
}

/* True if the query started by queryDesc has planned dp call sites. */
bool
DpCallSitesActive(QueryDesc *queryDesc)
{
	for (DpQuerySites *q = active_queries; q != NULL; q = q->next)
		if (q->estate == queryDesc->estate)
			return true;
	return false;
}

/* The unit seeds (Consts) bound into queryDesc's plan (see release.h). */
List *
DpCallSitesSeeds(QueryDesc *queryDesc)
{
	return queryDesc == seeds_query ? seeds_consts : NIL;
}

/* Context of the argument binding. */
typedef struct DpBindContext
{
	bool		modify;			/* replace the arguments (else: only find them) */
	bool		found;			/* an argument to bind exists */
	ExprContext *econtext;
	MemoryContext cxt;			/* where the constants live: the QueryDesc's */
} DpBindContext;

/* True if argument argno of a call of kind with nargs arguments is constant for the query. */
static bool
DpConstArgPosition(const DpAggKind *kind, int nargs, int argno)
{
	if (argno == kind->mech_argno)
		return true;
	for (int i = 0; i < kind->nconst; i++)
		if (kind->const_argnos[i] == argno)
			return true;
	/* the unit-bounded forms: trailing (groups) or (rows, groups) */
	if (nargs > kind->nargs && argno >= nargs - (kind->bounded_extra == 3 ? 2 : 1))
		return true;
	return false;
}

/*
 * The seed argument of dp_pg.unit_cells (guard/units.c): the call
 * dp_pg.unit_seed() becomes one random constant for the whole execution, so
 * that a parallel plan's workers give each cell the same priority.  True if
 * a is a call of dp_pg.unit_cells (its third argument is dp_pg.unit_seed(),
 * checked by name only after the cheap tests).
 */
static bool
DpBindUnitSeed(Aggref *a, DpBindContext *cxt)
{
	TargetEntry *te;
	FuncExpr   *fe;
	char	   *name;
	char	   *fname;

	if (list_length(a->args) < 4)
		return false;
	te = list_nth_node(TargetEntry, a->args, 2);
	if (!IsA(te->expr, FuncExpr) || ((FuncExpr *) te->expr)->args != NIL)
		return false;
	fe = (FuncExpr *) te->expr;
	fname = get_func_name(fe->funcid);
	if (fname == NULL || strcmp(fname, "unit_seed") != 0 ||
		(name = get_namespace_name(get_func_namespace(fe->funcid))) == NULL || strcmp(name, "dp_pg") != 0)
		return false;
	fname = get_func_name(a->aggfnoid);
	if (fname == NULL || strcmp(fname, "unit_cells") != 0 || get_func_namespace(a->aggfnoid) != get_func_namespace(fe->funcid))
		return false;
	cxt->found = true;
	if (cxt->modify)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt->cxt);

		te->expr = (Expr *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
									  Int64GetDatum((int64) dp_rng_u64(DpBackendRng())), false, FLOAT8PASSBYVAL);
		seeds_consts = lappend(seeds_consts, te->expr);
		MemoryContextSwitchTo(old);
	}
	return true;
}

/* Walker over a plan's expressions: bind the constant arguments of dp aggregates. */
static bool
DpBindWalker(Node *node, DpBindContext *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Aggref	   *a = (Aggref *) node;
		const DpAggKind *kind;
		int			nargs;
		int			argno = 0;
		ListCell   *lc;

		if (DO_AGGSPLIT_COMBINE(a->aggsplit) || DpBindUnitSeed(a, cxt) ||
			(kind = DpKindOfAggregate(a->aggfnoid)) == NULL)
			return false;
		nargs = DpAggNumArgs(a->args);
		foreach(lc, a->args)
		{
			TargetEntry *te = lfirst_node(TargetEntry, lc);

			if (!te->resjunk && DpConstArgPosition(kind, nargs, argno) && !IsA(te->expr, Const))
			{
				cxt->found = true;
				if (cxt->modify)
				{
					Oid			type = exprType((Node *) te->expr);
					int16		typlen;
					bool		typbyval;
					bool		isnull;
					Datum		v = DpEvalConstArg(kind, te->expr, cxt->econtext, &isnull);
					MemoryContext old = MemoryContextSwitchTo(cxt->cxt);

					get_typlenbyval(type, &typlen, &typbyval);
					te->expr = (Expr *) makeConst(type, exprTypmod((Node *) te->expr),
												  exprCollation((Node *) te->expr), typlen,
												  isnull ? (Datum) 0 : datumCopy(v, typbyval, typlen),
												  isnull, typbyval);
					MemoryContextSwitchTo(old);
				}
			}
			argno++;
		}
		return false;
	}
	return expression_tree_walker(node, DpBindWalker, cxt);
}

/* Plan visitor: bind the constant arguments of an Agg node's dp aggregates. */
static bool
DpBindVisitor(Plan *plan, void *context)
{
	if (IsA(plan, Agg))
	{
		(void) DpBindWalker((Node *) plan->targetlist, (DpBindContext *) context);
		(void) DpBindWalker((Node *) plan->qual, (DpBindContext *) context);
	}
	return false;
}

/*
 * Before the standard ExecutorStart: evaluate the constant arguments of the
 * plan's dp aggregates once and let a copy of the plan carry them (see the
 * file comment).  Nothing to do for EXPLAIN without ANALYZE.
 */
void
DpCallSitesBindArguments(QueryDesc *queryDesc, int eflags)
{
	DpBindContext cxt;

	/* (a later query may reuse this QueryDesc's address: forget the last one's seeds) */
	seeds_query = NULL;
	seeds_consts = NIL;
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0 || queryDesc->plannedstmt->commandType == CMD_UTILITY)
		return;
	memset(&cxt, 0, sizeof(cxt));
	(void) DpPlanWalkStmt(queryDesc->plannedstmt, DpBindVisitor, &cxt);
	if (!cxt.found)
		return;
	cxt.modify = true;
	cxt.cxt = GetMemoryChunkContext(queryDesc);
	seeds_query = queryDesc;
	cxt.econtext = CreateStandaloneExprContext();
	cxt.econtext->ecxt_param_list_info = queryDesc->params;
	PG_TRY();
	{
		MemoryContext old = MemoryContextSwitchTo(cxt.cxt);

		queryDesc->plannedstmt = copyObject(queryDesc->plannedstmt);
		MemoryContextSwitchTo(old);
		(void) DpPlanWalkStmt(queryDesc->plannedstmt, DpBindVisitor, &cxt);
	}
	PG_FINALLY();
	{
		FreeExprContext(cxt.econtext, true);
	}
	PG_END_TRY();
}

/* The call site of the final function running in fcinfo (see release.h). */
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
	if (site == NULL || !site->charged)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s was not planned and charged by dp_pg before the query started; nothing is released", kind->name),
				 errdetail("dp_pg aggregates can only be finalized by the query that planned them.")));
	fcinfo->flinfo->fn_extra = site;
	return site;
}
