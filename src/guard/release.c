/*
 * guard/release.c — only released values leave the DP level (invariant 5).
 *
 * A validated query (shape.c) becomes two levels:
 *
 *   WITH dp_release AS MATERIALIZED (
 *       SELECT <GROUP BY keys>, <each distinct dp aggregate>
 *       FROM <the protected table> [JOIN <public tables>] WHERE <row predicate>
 *       GROUP BY <keys> [HAVING <partition selection, groups.c>]
 *       ORDER BY <keys>)
 *   SELECT <the select list over dp_release's columns>
 *   FROM dp_release
 *   WHERE <the HAVING clause over dp_release's columns>
 *   [WINDOW ...] [DISTINCT ...] [ORDER BY ...] [LIMIT / OFFSET]
 *
 * The DP level (the common table expression) is planned and run on its own:
 * PostgreSQL never pushes a condition of the outer query into a MATERIALIZED
 * CTE, never inlines it, and runs it once, so HAVING, ORDER BY, LIMIT,
 * DISTINCT, window functions, set-returning functions, subqueries and any
 * function of the select list see only the rows the DP level released — after
 * partition selection, with their noise.  The released rows come out sorted
 * by their keys, so nothing above can read the DP level's internal order (a
 * hash table's layout depends on the groups that were not released).  Later
 * widenings of what analysts may write around a dp query belong above this
 * line and do not touch the DP level.
 *
 * Layer guard/, floor releases (docs/development.md): may call guard/'s
 * floors base, fences, reads, rows and releases, the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/parse_oper.h"
#include "utils/lsyscache.h"

#include "release.h"
#include "guard/floor_releases.h"

/* Context of the split. */
typedef struct DpSplitContext
{
	int			depth;			/* query levels below the post level */
	List	   *aggs;			/* distinct dp Aggrefs (as at the top level) */
	List	   *keys;			/* GROUP BY keys: Vars, or generalising expressions */
	int			first_agg_col;	/* dp_release column of the first aggregate */
	List	   *colnames;
} DpSplitContext;

/* Collect the distinct top-level dp aggregates of an expression (any subquery depth). */
static bool
DpCollectAggsWalker(Node *node, DpSplitContext *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		bool		r;

		cxt->depth++;
		r = query_tree_walker((Query *) node, DpCollectAggsWalker, cxt, 0);
		cxt->depth--;
		return r;
	}
	if (IsA(node, Aggref) && ((Aggref *) node)->agglevelsup == cxt->depth)
	{
		Aggref	   *a = copyObject((Aggref *) node);
		ListCell   *lc;

		a->agglevelsup = 0;
		foreach(lc, cxt->aggs)
			if (equal(lfirst(lc), a))
				return false;
		cxt->aggs = lappend(cxt->aggs, a);
		return false;
	}
	return expression_tree_walker(node, DpCollectAggsWalker, cxt);
}

/* Mutator: dp aggregates and GROUP BY keys become columns of dp_release (range-table index 1). */
static Node *
DpSplitMutator(Node *node, DpSplitContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
	{
		Query	   *q;

		cxt->depth++;
		q = query_tree_mutator((Query *) node, DpSplitMutator, cxt, 0);
		cxt->depth--;
		return (Node *) q;
	}
	if (IsA(node, Aggref) && ((Aggref *) node)->agglevelsup == cxt->depth)
	{
		Aggref	   *a = copyObject((Aggref *) node);
		int			col = cxt->first_agg_col;
		ListCell   *lc;

		a->agglevelsup = 0;
		foreach(lc, cxt->aggs)
		{
			if (equal(lfirst(lc), a))
				return (Node *) makeVar(1, col, a->aggtype, -1, a->aggcollid, cxt->depth);
			col++;
		}
		elog(ERROR, "dp_pg: a dp aggregate was not collected for the release level");
	}
	if (cxt->depth == 0 && !IsA(node, Var))
	{
		/* a generalising GROUP BY key (keys.c) */
		int			col = 1;
		ListCell   *lc;

		foreach(lc, cxt->keys)
		{
			if (equal(lfirst(lc), node))
				return (Node *) makeVar(1, col, exprType(node), exprTypmod(node), exprCollation(node), 0);
			col++;
		}
	}
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == cxt->depth)
	{
		Var		   *v = (Var *) node;
		int			col = 1;
		ListCell   *lc;

		foreach(lc, cxt->keys)
		{
			Var		   *k = lfirst(lc);

			if (IsA(k, Var) && k->varno == v->varno && k->varattno == v->varattno)
				return (Node *) makeVar(1, col, v->vartype, v->vartypmod, v->varcollid, cxt->depth);
			col++;
		}
		elog(ERROR, "dp_pg: a column outside the GROUP BY keys above the release level");
	}
	return expression_tree_mutator(node, DpSplitMutator, cxt);
}

/* An ascending sort on column resno of q's target list (its ressortgroupref set if needed). */
static SortGroupClause *
DpSortOn(Query *q, TargetEntry *te)
{
	SortGroupClause *sgc = makeNode(SortGroupClause);
	Oid			sortop;
	Oid			eqop;
	bool		hashable;

	get_sort_group_operators(exprType((Node *) te->expr), true, true, false, &sortop, &eqop, NULL, &hashable);
	sgc->tleSortGroupRef = te->ressortgroupref;
	sgc->sortop = sortop;
	sgc->eqop = eqop;
	sgc->nulls_first = false;
	sgc->hashable = hashable;
	return sgc;
}

/* Split a validated query into the DP level (returned) and post-processing over it (q). */
Query *
DpReleaseSplit(Query *q, DpShape *shape)
{
	DpSplitContext cxt;
	Query	   *d = makeNode(Query);
	CommonTableExpr *cte = makeNode(CommonTableExpr);
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	RangeTblRef *ref = makeNode(RangeTblRef);
	AttrNumber	resno = 0;
	ListCell   *lc;
	Node	   *having;

	memset(&cxt, 0, sizeof(cxt));
	(void) DpCollectAggsWalker((Node *) q->targetList, &cxt);
	(void) DpCollectAggsWalker(q->havingQual, &cxt);

	/* the DP level: keys, then aggregates; grouped and sorted by the keys */
	d->commandType = CMD_SELECT;
	d->querySource = QSRC_ORIGINAL;
	d->canSetTag = true;
	DpMoveRangeTable(d, q);
	d->hasRowSecurity = q->hasRowSecurity;	/* the tables' policies went with their entries */
	d->jointree = q->jointree;
	d->hasAggs = true;
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = copyObject(lfirst_node(SortGroupClause, lc));
		Node	   *key = (Node *) copyObject(get_sortgroupclause_expr(sgc, q->targetList));
		char		name[NAMEDATALEN];
		TargetEntry *te;

		snprintf(name, sizeof(name), "dp_key%d", resno + 1);
		te = makeTargetEntry((Expr *) key, ++resno, pstrdup(name), false);
		te->ressortgroupref = resno;
		sgc->tleSortGroupRef = resno;
		d->targetList = lappend(d->targetList, te);
		d->groupClause = lappend(d->groupClause, sgc);
		d->sortClause = lappend(d->sortClause, DpSortOn(d, te));
		cxt.keys = lappend(cxt.keys, key);
		cxt.colnames = lappend(cxt.colnames, makeString(pstrdup(name)));
	}
	cxt.first_agg_col = resno + 1;
	foreach(lc, cxt.aggs)
	{
		char		name[NAMEDATALEN];

		snprintf(name, sizeof(name), "dp_release%d", resno + 1);
		d->targetList = lappend(d->targetList, makeTargetEntry(copyObject(lfirst(lc)), ++resno, pstrdup(name), false));
		cxt.colnames = lappend(cxt.colnames, makeString(pstrdup(name)));
	}

	/* the post-processing level reads the DP level's rows */
	cte->ctename = pstrdup("dp_release");
	cte->aliascolnames = NIL;
	cte->ctematerialized = CTEMaterializeAlways;
	cte->ctequery = (Node *) d;
	cte->location = -1;
	cte->cterecursive = false;
	cte->cterefcount = 1;
	cte->ctecolnames = cxt.colnames;
	foreach(lc, d->targetList)
	{
		Node	   *e = (Node *) lfirst_node(TargetEntry, lc)->expr;

		cte->ctecoltypes = lappend_oid(cte->ctecoltypes, exprType(e));
		cte->ctecoltypmods = lappend_int(cte->ctecoltypmods, exprTypmod(e));
		cte->ctecolcollations = lappend_oid(cte->ctecolcollations, exprCollation(e));
	}
	rte->rtekind = RTE_CTE;
	rte->ctename = cte->ctename;
	rte->ctelevelsup = 0;
	rte->self_reference = false;
	rte->coltypes = list_copy(cte->ctecoltypes);
	rte->coltypmods = list_copy(cte->ctecoltypmods);
	rte->colcollations = list_copy(cte->ctecolcollations);
	rte->eref = makeAlias(cte->ctename, list_copy(cte->ctecolnames));
	rte->inFromCl = true;
	rte->lateral = false;
	rte->inh = false;
	ref->rtindex = 1;

	cxt.depth = 0;
	q->targetList = (List *) DpSplitMutator((Node *) q->targetList, &cxt);
	having = DpSplitMutator(q->havingQual, &cxt);
	q->cteList = list_make1(cte);
	q->rtable = list_make1(rte);
	q->jointree = makeFromExpr(list_make1(ref), having);
	q->groupClause = NIL;
	q->groupingSets = NIL;
	q->groupDistinct = false;
	q->havingQual = NULL;
	q->hasAggs = false;
	DpClearGroupRTE(q);
	q->hasRowSecurity = false;
	return d;
}
