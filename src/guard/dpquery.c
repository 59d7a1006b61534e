/*
 * guard/dpquery.c — the dp query inside an analyst's query, found before it
 * is checked: what BI tools and hand-written questions wrap around it made
 * into what the shape check judges.
 *
 *  - a column probe (LIMIT 0, a constantly false WHERE) becomes an empty
 *    query that reads nothing;
 *  - a call of one of the guard's own row functions (domain reads, total
 *    operators, key windows, run-time constants) is refused: their bounds
 *    are the guard's, not a query's;
 *  - a WITH query that reads a protected table is inlined;
 *  - a FROM-subquery that only filters, projects or joins the protected
 *    table is flattened into the query around it;
 *  - a wrapper (an outer query over the dp query) is post-processing: its
 *    FROM-subquery is the dp query;
 *  - the DP level reads its protected table with the owner's rights, for
 *    this plan only (DpGuardElevate).
 *
 * guard.c runs these in its order (see there).
 *
 * Layer guard/, floor releases (docs/development.md): may call guard/'s
 * floors base, fences, reads, rows and releases, the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "guard/floor_releases.h"

/*
 * A column probe: a query whose answer has no row whatever the data (LIMIT 0,
 * or a WHERE that is constantly false or NULL on a query without
 * aggregates), as BI tools send to learn a query's columns.  It is replaced
 * by a query of the same columns and no row that reads nothing: nothing is
 * charged, nothing evaluated.
 */
bool
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
void
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
bool
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

/* The protected table the top level of q reads, or NULL. */
DpProtected *
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
 * The FROM-subquery of q that reads the protected table (directly, or in a
 * subquery of its own FROM), or NULL.  A wrapper - an outer query over a dp
 * query, as BI tools write around a custom SQL question - is post-processing
 * of the dp query's released rows: it sees nothing else.
 */
RangeTblEntry *
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

/* See guard.h: flatten the FROM-subqueries of q that only filter, project or join the protected table. */
bool
DpGuardFlatten(Query *q, List *prot)
{
	if (DpTopLevelProtected(q, prot) != NULL)
		return false;
	return DpFlattenRawSubquery(q, prot) || DpFlattenJoinedSubquery(q, prot);
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

/* dp_pg.analyst_rows(), the qual of the policy that gives analysts no row, or InvalidOid. */
Oid
DpAnalystRowsFunction(void)
{
	return LookupFuncName(list_make2(makeString("dp_pg"), makeString("analyst_rows")), 0, NULL, true);
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
