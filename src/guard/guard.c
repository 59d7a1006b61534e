/*
 * guard/guard.c — the guard's entry points, called by the thin hook bodies
 * of hooks.c; the threat model and the invariants are in guard.h.
 *
 * Planning a query (planner_hook), in this order:
 *   1. superusers' sessions: only the per-unit bounding that every role's dp
 *      queries on a table with a privacy unit get (units.c);
 *   2. everyone else: sizes and counters masked (stats.c);
 *   3. an analyst's query that reads a protected table: a column probe
 *      (LIMIT 0, constant-false WHERE) becomes an empty query reading
 *      nothing; else that read must be in the FROM of the dp query, which is
 *      the top level or a FROM-subquery it wraps (the levels around it are
 *      post-processing), after FROM-subqueries that only filter and project
 *      the table are flattened; its plain count / sum / avg become dp
 *      aggregates (translate.c); the dp query must have the accepted shape
 *      (shape.c); it is split into the DP level and post-processing
 *      (release.c); the DP level reads the table with its owner's rights,
 *      for this plan only; its GROUP BY lists every public key or goes
 *      through partition selection (groups.c), or, with a privacy unit, each
 *      unit's contribution is bounded first (units.c);
 *   4. the query's relations are counted (reads.c), the standard planner
 *      runs, and the final plan is checked against the counts and stamped.
 * Anything refused is ERROR before execution: nothing is charged or
 * released.
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/namespace.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "guard/guard.h"

/* The protected table the top level of q reads, or NULL. */
static DpProtected *
DpTopLevelProtected(Query *q, List *prot)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);
		DpProtected *p;

		if (r->rtekind == RTE_RELATION && (p = DpFindProtected(prot, r->relid)) != NULL)
			return p;
	}
	return NULL;
}

/*
 * Read the DP level's protected table with its owner's rights (this plan
 * only: reads.c stamps it), and without the row-level security policy
 * dp_pg.protect() gives analysts (dp_pg_analyst: no row, the table pickers'
 * SELECT grant reads nothing without the guard): its qual, the marker
 * dp_pg.analyst_rows(), is dropped from the entry's security quals.  Every
 * other policy stays (a DBA's policy that scopes an analyst to a tenant's
 * rows scopes the dp query too).
 */
void
DpGuardElevate(Query *d, RangeTblEntry *rte)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rte->relid));
	Oid			marker = DpAnalystRowsFunction();
	List	   *kept = NIL;
	ListCell   *lc;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", rte->relid);
	DpSetCheckAsUser(d, rte, ((Form_pg_class) GETSTRUCT(tup))->relowner);
	ReleaseSysCache(tup);
	foreach(lc, rte->securityQuals)
	{
		Node	   *qual = lfirst(lc);

		if (IsA(qual, FuncExpr) && OidIsValid(marker) && ((FuncExpr *) qual)->funcid == marker)
			continue;
		kept = lappend(kept, qual);
	}
	rte->securityQuals = kept;
}

/* dp_pg.analyst_rows(), the qual of the policy that gives analysts no row, or InvalidOid. */
Oid
DpAnalystRowsFunction(void)
{
	return LookupFuncName(list_make2(makeString("dp_pg"), makeString("analyst_rows")), 0, NULL, true);
}

/* Everyone's dp query on a table with a privacy unit (or a trusted role's request) is bounded. */
static void
DpGuardBoundTrusted(Query *parse, List *prot, DpPlanCheck *check)
{
	DpProtected *p = DpTrustedUnitTarget(parse, prot);
	DpShape		shape;
	Query	   *d;
	DpUnitBound ub;

	if (p == NULL)
		return;
	DpShapeValidate(parse, p, &shape);
	d = DpReleaseSplit(parse, &shape);
	if (shape.partner_rti != 0)
		DpUnitJoinBound(&shape, &ub);	/* two tables joined on their unit */
	else
		(void) DpUnitBoundOf(p, &ub);
	DpBoundUnits(d, shape.prot_rti, p->relid, DpFindProtected(prot, p->relid) != NULL, &ub);
	check->bounded = true;
}

/*
 * A column probe: a query whose answer has no row whatever the data (LIMIT 0,
 * or a WHERE that is constantly false or NULL on a query without
 * aggregates), as BI tools send to learn a query's columns.  It is replaced
 * by a query of the same columns and no row that reads nothing: nothing is
 * charged, nothing evaluated.
 */
static bool
DpIsColumnProbe(Query *q)
{
	Node	   *quals;

	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL || q->setOperations != NULL ||
		q->rowMarks != NIL || q->hasModifyingCTE)
		return false;
	if (q->limitCount != NULL && !contain_volatile_functions(q->limitCount) && !q->hasSubLinks)
	{
		Node	   *limit = eval_const_expressions(NULL, copyObject(q->limitCount));

		/* LIMIT 0 (an int4 literal is a cast to int8 until folded) */
		if (IsA(limit, Const) && !((Const *) limit)->constisnull &&
			DatumGetInt64(((Const *) limit)->constvalue) == 0)
			return true;
	}
	if (q->hasAggs || q->groupClause != NIL || q->groupingSets != NIL || q->havingQual != NULL ||
		q->hasTargetSRFs || q->jointree == NULL || q->jointree->quals == NULL ||
		q->hasSubLinks || contain_volatile_functions(q->jointree->quals))
		return false;
	quals = eval_const_expressions(NULL, copyObject(q->jointree->quals));
	return IsA(quals, Const) && (((Const *) quals)->constisnull || !DatumGetBool(((Const *) quals)->constvalue));
}

/* Make q a query of the same columns and no row, reading nothing. */
static void
DpEmptyProbe(Query *q)
{
	ListCell   *lc;

	foreach(lc, q->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		te->expr = (Expr *) makeNullConst(exprType((Node *) te->expr), exprTypmod((Node *) te->expr),
										  exprCollation((Node *) te->expr));
		te->resorigtbl = InvalidOid;
		te->resorigcol = 0;
		te->ressortgroupref = 0;
	}
	q->rtable = NIL;
	DpClearPermInfos(q);
	q->cteList = NIL;
	q->jointree = makeFromExpr(NIL, (Node *) makeBoolConst(false, false));
	q->groupClause = NIL;
	q->groupingSets = NIL;
	q->havingQual = NULL;
	q->windowClause = NIL;
	q->distinctClause = NIL;
	q->sortClause = NIL;
	q->limitCount = NULL;
	q->limitOffset = NULL;
	q->hasAggs = false;
	q->hasWindowFuncs = false;
	q->hasTargetSRFs = false;
	q->hasSubLinks = false;
	q->hasDistinctOn = false;
	q->hasRecursive = false;
	q->hasRowSecurity = false;
	DpClearGroupRTE(q);
}

static bool DpIsExpandedView(RangeTblEntry *r);

/*
 * The FROM-subquery of q that reads the protected table (directly, or in a
 * subquery of its own FROM), or NULL.  A wrapper - an outer query over a dp
 * query, as BI tools write around a custom SQL question - is post-processing
 * of the dp query's released rows: it sees nothing else.
 */
static RangeTblEntry *
DpWrappedDpQuery(Query *q)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		if (r->rtekind == RTE_SUBQUERY && r->subquery != NULL && !DpIsExpandedView(r) &&
			!DpMultiIsReleased(r) && DpReadsProtected(r->subquery) > 0)
			return r;
	}
	return NULL;
}

/*
 * True if range-table entry r is an expanded view: from 16 on it keeps the
 * view's relkind; on 15 its query holds the view itself as a placeholder
 * entry.  Views over protected tables are not unwrapped (yet): their queries
 * stay where the guard refuses a protected table.
 */
static bool
DpIsExpandedView(RangeTblEntry *r)
{
	ListCell   *lc;

	if (r->relkind == RELKIND_VIEW)
		return true;
	if (r->subquery == NULL)
		return false;
	foreach(lc, r->subquery->rtable)
	{
		RangeTblEntry *e = lfirst_node(RangeTblEntry, lc);

		if (e->rtekind == RTE_RELATION && e->relkind == RELKIND_VIEW)
			return true;
	}
	return false;
}

/*
 * A FROM-subquery that only filters and projects the protected table (what a
 * BI tool wraps around a dataset's SQL: SELECT region, count(*) FROM (SELECT
 * * FROM visits WHERE ... [ORDER BY ...]) AS virtual_table GROUP BY region) is flattened
 * into the query around it: the subquery's entry becomes the table itself,
 * the outer query's references to its columns become the subquery's
 * expressions and its WHERE joins the outer WHERE.  The result is checked
 * as if written so: the subquery's expressions are row expressions there.
 * Returns true if it flattened one.
 */
static bool
DpFlattenRawSubquery(Query *q, List *prot)
{
	int			rti = 0;
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);
		Query	   *sq = r->subquery;
		RangeTblEntry *inner;
		Node	   *quals;

		rti++;
		if (r->rtekind != RTE_SUBQUERY || sq == NULL || r->lateral || r->security_barrier || DpIsExpandedView(r))
			continue;
		/* a dataset's SQL may itself select from a subquery: flatten from the inside out */
		(void) DpFlattenRawSubquery(sq, prot);
		if (sq->commandType != CMD_SELECT || sq->utilityStmt != NULL || sq->setOperations != NULL ||
			sq->cteList != NIL || sq->hasAggs || sq->hasWindowFuncs || sq->hasTargetSRFs ||
			sq->hasSubLinks || sq->groupClause != NIL || sq->groupingSets != NIL || sq->havingQual != NULL ||
			sq->distinctClause != NIL || sq->limitCount != NULL ||
			sq->limitOffset != NULL || sq->rowMarks != NIL || sq->hasForUpdate ||
			list_length(sq->rtable) != 1 || sq->jointree == NULL ||
			list_length(sq->jointree->fromlist) != 1 || !IsA(linitial(sq->jointree->fromlist), RangeTblRef))
			continue;
		inner = linitial_node(RangeTblEntry, sq->rtable);
		if (inner->rtekind != RTE_RELATION || DpFindProtected(prot, inner->relid) == NULL)
			continue;
		sq = copyObject(sq);
		inner = linitial_node(RangeTblEntry, sq->rtable);
		/* an ORDER BY without LIMIT orders nothing the outer query keeps: dropped */
		/* the subquery's expressions and WHERE, as expressions of entry rti of q */
		ChangeVarNodes((Node *) sq->targetList, 1, rti, 0);
		quals = sq->jointree->quals;
		ChangeVarNodes(quals, 1, rti, 0);
		/* every reference (select list, WHERE, HAVING, joins' alias lists, 18's grouping entry, sublinks) */
		{
			Query	   *nq = (Query *) DpReplaceVarsFromTargetList((Node *) q, rti, 0, r, sq->targetList,
																   REPLACEVARS_REPORT_ERROR, 0, &q->hasSubLinks);

			memcpy(q, nq, sizeof(Query));
		}
		if (quals != NULL)
			q->jointree->quals = q->jointree->quals ?
				(Node *) makeBoolExpr(AND_EXPR, list_make2(quals, q->jointree->quals), -1) : quals;
		/* the entry is the table now (its alias kept for messages) */
		inner->alias = makeAlias(r->eref->aliasname, NIL);
		inner->eref->aliasname = r->eref->aliasname;
		inner->inFromCl = r->inFromCl;
		DpMovePermInfo(q, sq, inner);
		lfirst(list_nth_cell(q->rtable, rti - 1)) = inner;
		q->hasSubLinks |= sq->hasSubLinks;
		q->hasRowSecurity |= sq->hasRowSecurity;	/* the table's policies come with its entry */
		return true;
	}
	return false;
}

/*
 * A query whose only FROM item is a subquery that joins the protected table
 * to public tables and filters and projects the result (a BI tool's dataset
 * with a dimension join: SELECT label, COUNT(*) FROM (SELECT v.*, r.label
 * FROM visits v LEFT JOIN regions r ON r.region = v.region) AS virtual_table
 * GROUP BY label) takes over the subquery's FROM and WHERE: its references
 * to the subquery's columns become the subquery's expressions.  The result
 * is checked as if written so (each join on a public table's unique key, or
 * two protected tables on their privacy unit: dbplyr's left_join).
 * Returns true if it flattened one.
 */
static bool
DpFlattenJoinedSubquery(Query *q, List *prot)
{
	RangeTblEntry *r;
	Query	   *sq;
	Node	   *quals;

	if (q->rtable == NIL || q->setOperations != NULL || q->rowMarks != NIL || q->jointree == NULL ||
		list_length(q->jointree->fromlist) != 1 || !IsA(linitial(q->jointree->fromlist), RangeTblRef))
		return false;
	r = linitial_node(RangeTblEntry, q->rtable);
	sq = r->subquery;
	if (r->rtekind != RTE_SUBQUERY || sq == NULL || r->lateral || r->security_barrier || DpIsExpandedView(r) ||
		sq->commandType != CMD_SELECT || sq->utilityStmt != NULL || sq->setOperations != NULL ||
		sq->cteList != NIL || sq->hasAggs || sq->hasWindowFuncs || sq->hasTargetSRFs ||
		sq->hasSubLinks || sq->groupClause != NIL || sq->groupingSets != NIL || sq->havingQual != NULL ||
		sq->distinctClause != NIL || sq->limitCount != NULL || sq->limitOffset != NULL ||
		sq->rowMarks != NIL || sq->hasForUpdate || sq->jointree == NULL ||
		DpReadsProtected(sq) != 1 + DpUnitJoinReads(sq, prot) || DpTopLevelProtected(sq, prot) == NULL)
		return false;
	DpFlattenGroupVars(q);		/* 18: the grouping entry is gone, grouped Vars are the subquery's */
	if (list_length(q->rtable) != 1)
		return false;
	sq = copyObject(sq);
	{
		Query	   *nq = (Query *) DpReplaceVarsFromTargetList((Node *) q, 1, 0, r, sq->targetList,
															   REPLACEVARS_REPORT_ERROR, 0, &q->hasSubLinks);

		memcpy(q, nq, sizeof(Query));
	}
	quals = q->jointree->quals;
	q->rtable = sq->rtable;
	DpTakePermInfos(q, sq);
	q->jointree = sq->jointree;
	if (quals != NULL)
		q->jointree->quals = q->jointree->quals ?
			(Node *) makeBoolExpr(AND_EXPR, list_make2(q->jointree->quals, quals), -1) : quals;
	q->hasRowSecurity |= sq->hasRowSecurity;
	return true;
}

/* Context of DpInlineCteWalker. */
typedef struct DpInlineCte
{
	CommonTableExpr *cte;
	int			depth;			/* query levels below the CTE's own */
} DpInlineCte;

/*
 * Walker: each reference to the CTE becomes a FROM-subquery of its query;
 * a reference d levels below the CTE's query level gets a copy whose outer
 * CTE references reach d levels further up.
 */
static bool
DpInlineCteWalker(Node *node, DpInlineCte *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		bool		r;

		cxt->depth++;
		r = query_tree_walker((Query *) node, DpInlineCteWalker, cxt, QTW_EXAMINE_RTES_AFTER);
		cxt->depth--;
		return r;
	}
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *r = (RangeTblEntry *) node;

		if (r->rtekind == RTE_CTE && r->ctelevelsup == cxt->depth &&
			strcmp(r->ctename, cxt->cte->ctename) == 0)
		{
			Query	   *sub = copyObject((Query *) cxt->cte->ctequery);

			if (cxt->depth > 0)
				IncrementVarSublevelsUp((Node *) sub, cxt->depth, 1);
			r->rtekind = RTE_SUBQUERY;
			r->subquery = sub;
			r->security_barrier = false;
			r->ctename = NULL;
			r->ctelevelsup = 0;
			r->self_reference = false;
			r->coltypes = NIL;
			r->coltypmods = NIL;
			r->colcollations = NIL;
		}
		return false;
	}
	return expression_tree_walker(node, DpInlineCteWalker, cxt);
}

/* Walker: DpInlineProtectedCtes on every query level below the top. */
static bool
DpInlineCtesBelow(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		DpInlineProtectedCtes((Query *) node);
		return false;
	}
	return expression_tree_walker(node, DpInlineCtesBelow, context);
}

/*
 * A WITH query that reads a protected table (what a BI tool's dataset or a
 * hand-written question may hold: WITH v AS (SELECT * FROM visits WHERE ...)
 * SELECT region, count(*) FROM v GROUP BY region) is inlined: every
 * reference becomes a FROM-subquery of its query, which is then judged like
 * any other (a wrapper, a flattened filter, or refused).  A CTE referenced
 * twice is two reads, refused as such; an unreferenced one is never run.
 * Recursive and data-modifying CTEs stay, and stay refused.
 */
void
DpInlineProtectedCtes(Query *q)
{
	ListCell   *lc;
	List	   *kept = NIL;

	if (!q->hasRecursive && !q->hasModifyingCTE)
		foreach(lc, q->cteList)
		{
			CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);
			DpInlineCte cxt = {cte, -1};

			if (cte->cterecursive || !IsA(cte->ctequery, Query) ||
				((Query *) cte->ctequery)->commandType != CMD_SELECT ||
				DpReadsProtected((Query *) cte->ctequery) == 0)
			{
				kept = lappend(kept, cte);
				continue;
			}
			(void) DpInlineCteWalker((Node *) q, &cxt);
		}
	else
		kept = q->cteList;
	q->cteList = kept;
	(void) query_tree_walker(q, DpInlineCtesBelow, NULL, 0);
}

/* See guard.h: flatten the FROM-subqueries of q that only filter, project or join the protected table. */
bool
DpGuardFlatten(Query *q, List *prot)
{
	if (DpTopLevelProtected(q, prot) != NULL)
		return false;
	return DpFlattenRawSubquery(q, prot) || DpFlattenJoinedSubquery(q, prot);
}

/* The DP query of an analyst's query (q itself, or the query it wraps), processed. */
void
DpGuardDpQuery(Query *parse, List *prot, DpPlanCheck *check, int depth)
{
	DpProtected *p;
	DpShape		shape;
	Query	   *d;
	DpUnitBound ub;

	p = DpTopLevelProtected(parse, prot);
	if (p == NULL && (DpFlattenRawSubquery(parse, prot) || DpFlattenJoinedSubquery(parse, prot)))
		p = DpTopLevelProtected(parse, prot);
	/* an aggregate over per-unit aggregates of a table with a privacy unit (perunit.c) */
	if (p == NULL && DpPerUnitQuery(parse, prot, check, depth))
		return;
	if (p == NULL)
	{
		RangeTblEntry *sub = DpWrappedDpQuery(parse);

		if (sub == NULL || sub->lateral || depth >= 8)
			DpGuardRefuseHint("a protected table may only be read by a dp query in FROM",
							  "The dp query may be wrapped in outer queries (FROM (<dp query>) AS s); "
							  "CTEs, scalar subqueries, set operations and LATERAL could release rows or a second result.",
							  "Put the dp query in FROM: SELECT ... FROM (SELECT dp_count(*) FROM t) AS s.");
		DpGuardDpQuery(sub->subquery, prot, check, depth + 1);
		return;
	}
	/* grouping sets, or a constant series: one release each (multi.c) */
	if (DpMultiSplit(parse, prot, check, depth))
		return;
	DpTranslatePlainAggregates(parse, p);
	DpShapeValidate(parse, p, &shape);
	DpRefuseUnitGroups(parse, p, shape.prot_rti);
	d = DpReleaseSplit(parse, &shape);
	DpGuardElevate(d, rt_fetch(shape.prot_rti, d->rtable));
	if (shape.partner_rti != 0)
	{
		/* two tables joined on their unit: the joined rows are bounded per unit (unitjoin.c) */
		DpGuardElevate(d, rt_fetch(shape.partner_rti, d->rtable));
		DpUnitJoinBound(&shape, &ub);
		DpBoundUnits(d, shape.prot_rti, p->relid, true, &ub);
		check->bounded = true;
	}
	else if (DpUnitBoundOf(p, &ub))
	{
		DpBoundUnits(d, shape.prot_rti, p->relid, true, &ub);
		check->bounded = true;
	}
	else
		DpGroupRelease(d, p->relid);
	DpCanonicalReleasedKeys(d);
	/* the error bars of averages beside their groups, in the output's order (order.c) */
	DpReleaseNoteKeys(d);
	if (depth == 0)
		DpReleaseOrderWrap(parse, d);
	/* foreign partitions: what their servers may not evaluate stays here (partitions.c) */
	DpPartitionsKeepLocal(d);
}

/*
 * Guard q, which reads protected tables (its top level, or a released
 * subquery of it: multi.c): every one of its protected reads, at any depth,
 * must be a DP level that the guard validates — the released subqueries
 * beside the table, then one protected table, or two joined on their unit.
 * Any other read (a second FROM item or a subquery of the dp query or of its
 * wrappers) is refused before anything is checked further.
 */
void
DpGuardCountedQuery(Query *q, List *prot, DpPlanCheck *check, int depth)
{
	int			reads = DpReadsProtected(q);

	/* dp subqueries whose released rows filter the table are releases of their own (multi.c) */
	if (reads > 1)
		reads -= DpMultiReleasedSubqueries(q, prot, check);
	/* two protected tables joined on their unit are one DP level (unitjoin.c; the shape check decides) */
	if (reads == 2)
		reads -= DpUnitJoinReads(q, prot);
	if (reads > 1)
	{
		const char *join = DpUnitJoinHint(q, prot);

		DpGuardRefuseHint("a dp query reads exactly one protected table, once",
						  "Subqueries, CTEs, set operations and self-joins could release rows or a second result.",
						  join != NULL ? join : "Ask each protected table in a query of its own.");
	}
	DpGuardDpQuery(q, prot, check, depth);
}

/*
 * The functions the guard writes into an analyst's row expressions: the
 * domain reads, the total operators, the key windows, the run-time
 * constants.  Each is total on the values the guard gives it, not on an
 * analyst's: domain_read(x, 1e-30, 2e-30) promises bounds that the guard
 * never checked.  So they are the guard's alone.
 */
static const char *const dp_guard_row_functions[] = {
	"domain_read", "domain_key_read", "clamp_float8", "key_window", "key_finite",
	"run_constant", "run_like_pattern", "run_check", "canonical_key", "release_keys", "release_order",
	"keep_local",
};

/* check_functions_in_node callback: is fn one of the guard's own row functions? */
static bool
DpIsGuardRowFunction(Oid fn, void *context)
{
	char	   *name;
	char	   *nsp;

	if (fn < FirstNormalObjectId)
		return false;
	if (DpTotalKindOf(fn) != DP_TOTAL_NONE)
		return true;
	name = get_func_name(fn);
	if (name == NULL)
		return false;
	for (int i = 0; i < lengthof(dp_guard_row_functions); i++)
		if (strcmp(name, dp_guard_row_functions[i]) == 0)
		{
			nsp = get_namespace_name(get_func_namespace(fn));
			return nsp != NULL && strcmp(nsp, "dp_pg") == 0;
		}
	return false;
}

/* Walker: true if the query calls one of the guard's row functions anywhere (subqueries, CTEs too). */
static bool
DpCallsGuardRowFunction(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, DpCallsGuardRowFunction, context, 0);
	if (check_functions_in_node(node, DpIsGuardRowFunction, context))
		return true;
	return expression_tree_walker(node, DpCallsGuardRowFunction, context);
}

/* An analyst's query that reads a protected table: validate, split, rewrite. */
static void
DpGuardAnalystQuery(Query *parse, List *prot, DpPlanCheck *check)
{
	/* a partition or inheritance child read on its own, an unprotected parent of one (partitions.c) */
	DpPartitionsCheckQuery(parse);
	check->views = DpUnwrapTrustedViews(parse);	/* a DBA's views: judged as what they expand to */
	DpInlineProtectedCtes(parse);
	if (DpReadsProtected(parse) == 0)
	{
		DpGuardBoundTrusted(parse, prot, check);	/* dp_pg.privacy_unit on an analyst's own table */
		return;
	}
	if (query_tree_walker(parse, DpCallsGuardRowFunction, NULL, 0))
		DpGuardRefuseHint("dp_pg's row functions are the guard's own",
						  "dp_pg.domain_read, the total operators (dp_pg.total_*), the key windows and the run-time "
						  "constants are what the guard writes into a query; their bounds are the guard's, not a query's.",
						  "Write the arithmetic itself (amount * 2, a / b): the guard reads each column through its "
						  "value domain and computes with total operators.");
	if (DpIsColumnProbe(parse))
	{
		DpEmptyProbe(parse);
		return;
	}
	DpGuardCountedQuery(parse, prot, check, 0);
}

/* Before planning: masking, validation, the release level and its rewrites. */
void
DpGuardBeforePlanning(Query *parse, DpPlanCheck *check)
{
	List	   *prot;
	uint64		made = DpRunConstantsMade();

	memset(check, 0, sizeof(DpPlanCheck));
	DpMultiReset();				/* no released subquery of an earlier query is one of this one's */
	DpPerUnitReset();			/* nor a per-unit subquery */
	DpRowStepsReset();
	if (parse->commandType == CMD_UTILITY)
		return;
	prot = DpProtectedTables();
	if (!DpSessionIsSuperuser())
	{
		check->analyst = DpSessionIsAnalyst();
		if (check->analyst)
			DpSessionMessageFloor();
		if (prot != NIL || check->analyst)
		{
			DpStatsMaskQuery(parse);
			check->masked = true;
		}
	}
	if (check->analyst && prot != NIL)
		DpGuardAnalystQuery(parse, prot, check);
	else
		DpGuardBoundTrusted(parse, prot, check);
	check->active = true;
	DpReadsBeforePlanning(parse, check);
	check->run_constants = DpRunConstantsMade() != made;
	/* a family with foreign partitions: postgres_fdw tables with safe options (partitions.c) */
	if (check->analyst && check->protected_reads > 0)
		DpPartitionsCheckShards(parse);
}

/* After planning: the final plan's checks and stamp. */
void
DpGuardAfterPlanning(PlannedStmt *stmt, DpPlanCheck *check)
{
	DpReadsAfterPlanning(stmt, check);
	if (check->active && check->analyst && stmt->commandType != CMD_UTILITY)
		DpPartitionsCheckPlan(stmt);
	/* the views unwrapped: a change of one (or of its privileges) plans the query again */
	stmt->relationOids = list_concat(stmt->relationOids, check->views);
	if (check->masked)
		stmt->dependsOnRole = true;	/* the masking depends on the user */
}

/* ProcessUtility: the guard's checks of utility statements. */
void
DpGuardUtility(PlannedStmt *pstmt)
{
	/* an EXECUTE's plan is checked, and gets the message floor, when it starts (reads.c) */
	bool		analyst;

	if (DpSessionIsSuperuser())
		return;
	analyst = !IsA(pstmt->utilityStmt, ExecuteStmt) && DpSessionIsAnalyst();
	/* messages of the statement stay at NOTICE and above (session.c) */
	if (analyst)
		DpSessionMessageFloor();
	/* the SELECT analysts hold for table pickers does not let them lock a protected table */
	if (IsA(pstmt->utilityStmt, LockStmt) && DpSessionIsAnalyst())
	{
		ListCell   *lc;

		foreach(lc, ((LockStmt *) pstmt->utilityStmt)->relations)
		{
			Oid			relid = RangeVarGetRelid(lfirst_node(RangeVar, lc), NoLock, true);

			if (OidIsValid(relid) && DpIsProtected(relid))
				DpGuardRefuse("LOCK is not allowed on a protected table",
							  "Analysts read protected tables only through dp queries.");
		}
	}
	DpTrustCheckUtility(pstmt->utilityStmt);
	DpStatsCheckUtility(pstmt->utilityStmt);
	/* nothing that reads a protected table or acts on what one depends on (ddl.c) */
	if (analyst)
		DpDdlCheckUtility(pstmt->utilityStmt);
}

/* Set up the guard's caches (from _PG_init, preloaded only). */
void
DpGuardInit(void)
{
	DpProtectedInit();
	DpSessionInit();
	DpTrustInit();
	DpStatsInit();
}
