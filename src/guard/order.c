/*
 * guard/order.c — the error bars of released values beside their groups.
 *
 * dp_avg's interval is its own for each released value (bars.c:
 * dp_pg.last_releases has a row per released average).  So that a tool can
 * put each beside the right group, every such row carries its group's keys
 * and the rows follow the query's output:
 *
 *   - the DP level's projection calls dp_pg.release_keys(<its released
 *     keys>) for each released group (a hidden column): it runs right after
 *     that group's final functions, whose values get these keys (the
 *     canonical keys the group is released with, so nothing beyond them);
 *   - the top level of the statement, when it is a plain post-processing
 *     of the release (a select list over its columns, a filter, ORDER BY,
 *     LIMIT), is wrapped as
 *
 *       SELECT <its columns> FROM (<it>, with the released keys as hidden
 *       columns, and OFFSET 0 if it has no LIMIT or OFFSET) s
 *       WHERE dp_pg.release_order(<s's keys>)
 *
 *     whose filter runs once per output row in the output's order (the
 *     OFFSET keeps the planner from pushing it below the subquery's ORDER
 *     BY; it is volatile, so it is never dropped): the values of that
 *     row's group come next in dp_pg.last_releases.
 *
 * Values whose groups the output does not show (a HAVING or LIMIT above the
 * release) follow, by their keys' text.  release_keys is declared STABLE:
 * PostgreSQL evaluates a volatile function of a select list after the
 * query's ORDER BY, here the DP level's sort by its keys, once every group
 * is final.  Both functions return true whatever
 * happens and read only released values; they are the guard's (an
 * analyst's query that calls one is refused, guard.c).
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"

#include "aggregates.h"
#include "release.h"
#include "guard/guard.h"

/* dp_pg.release_keys / release_order (VARIADIC "any"), or InvalidOid on an older catalog. */
static Oid
DpOrderFunction(const char *name)
{
	Oid			argtypes[1] = {ANYOID};

	return LookupFuncName(list_make2(makeString("dp_pg"), makeString((char *) name)), -1, argtypes, true);
}

/* Walker: true if the expression holds a dp aggregate whose values have intervals of their own (dp_avg). */
static bool
DpHasValueBars(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		const DpAggKind *kind = DpKindOfAggregate(((Aggref *) node)->aggfnoid);

		return kind == &dp_avg_kind || kind == &dp_avg_default_kind;
	}
	return expression_tree_walker(node, DpHasValueBars, context);
}

/* The released key columns of DP level d (its first non-hidden columns, one per GROUP BY key). */
static List *
DpReleasedKeys(Query *d)
{
	List	   *keys = NIL;
	int			n = list_length(d->groupClause);
	ListCell   *lc;

	foreach(lc, d->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		if (list_length(keys) >= n)
			break;
		if (te->resjunk)
			continue;
		keys = lappend(keys, te);
	}
	return keys;
}

/* See guard.h: the DP level d names the keys of each released group with values of their own. */
void
DpReleaseNoteKeys(Query *d)
{
	Oid			fn;
	List	   *args = NIL;
	ListCell   *lc;
	FuncExpr   *f;

	if (d->groupClause == NIL || !DpHasValueBars((Node *) d->targetList, NULL) ||
		!OidIsValid(fn = DpOrderFunction("release_keys")))
		return;
	foreach(lc, DpReleasedKeys(d))
		args = lappend(args, copyObject(lfirst_node(TargetEntry, lc)->expr));
	if (args == NIL)
		return;
	f = makeFuncExpr(fn, BOOLOID, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	d->targetList = lappend(d->targetList,
							makeTargetEntry((Expr *) f, list_length(d->targetList) + 1, NULL, true));
}

/*
 * See guard.h: the top level q of a statement whose only release is DP
 * level d (q's CTE) reports its output order.  Only for a plain
 * post-processing of d's rows (no aggregate, grouping, DISTINCT, window,
 * set-returning function or set operation, and d its only entry); q is
 * rewritten in place.
 */
void
DpReleaseOrderWrap(Query *q, Query *d)
{
	Oid			fn;
	Query	   *inner;
	RangeTblEntry *sub;
	RangeTblEntry *cte;
	List	   *keys;
	List	   *tlist = NIL;
	List	   *junk = NIL;
	List	   *colnames = NIL;
	List	   *args = NIL;
	AttrNumber	resno = 0;
	AttrNumber	visible;
	ListCell   *lc;
	int			k = 0;

	if (d->groupClause == NIL || !DpHasValueBars((Node *) d->targetList, NULL) ||
		!OidIsValid(fn = DpOrderFunction("release_order")))
		return;
	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL || q->setOperations != NULL || q->hasAggs ||
		q->groupClause != NIL || q->groupingSets != NIL || q->havingQual != NULL || q->distinctClause != NIL ||
		q->hasWindowFuncs || q->hasTargetSRFs || q->rowMarks != NIL || q->hasForUpdate ||
		list_length(q->rtable) != 1 || list_length(q->cteList) != 1 || q->jointree == NULL ||
		list_length(q->jointree->fromlist) != 1)
		return;
	cte = linitial_node(RangeTblEntry, q->rtable);
	if (cte->rtekind != RTE_CTE || cte->ctelevelsup != 0 ||
		linitial_node(CommonTableExpr, q->cteList)->ctequery != (Node *) d)
		return;
	keys = DpReleasedKeys(d);

	/* the inner query: q, with the released keys as columns before its hidden ones */
	inner = palloc(sizeof(Query));
	memcpy(inner, q, sizeof(Query));
	foreach(lc, inner->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		if (te->resjunk)
			junk = lappend(junk, te);
		else
		{
			te->resno = ++resno;
			tlist = lappend(tlist, te);
		}
	}
	visible = resno;
	foreach(lc, keys)
	{
		TargetEntry *kte = lfirst_node(TargetEntry, lc);
		Expr	   *e = kte->expr;

		k++;
		tlist = lappend(tlist, makeTargetEntry((Expr *) makeVar(1, kte->resno, exprType((Node *) e),
																  exprTypmod((Node *) e), exprCollation((Node *) e), 0),
											   ++resno, psprintf("dp_order_key%d", k), false));
	}
	foreach(lc, junk)
	{
		lfirst_node(TargetEntry, lc)->resno = ++resno;
		tlist = lappend(tlist, lfirst(lc));
	}
	inner->targetList = tlist;
	/*
	 * an OFFSET 0 fence: PostgreSQL pushes a qual into a subquery below its
	 * ORDER BY (not below a LIMIT or OFFSET), where it would run before the
	 * sort
	 */
	if (inner->limitOffset == NULL && inner->limitCount == NULL)
		inner->limitOffset = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(0), false,
												FLOAT8PASSBYVAL);

	/* q: its columns over the inner query, release_order(keys) as the filter */
	foreach(lc, inner->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		if (!te->resjunk)
			colnames = lappend(colnames, makeString(pstrdup(te->resname ? te->resname : "?column?")));
	}
	sub = makeNode(RangeTblEntry);
	sub->rtekind = RTE_SUBQUERY;
	sub->subquery = inner;
	sub->eref = makeAlias("dp_output", colnames);
	sub->inFromCl = true;
	tlist = NIL;
	resno = 0;
	foreach(lc, inner->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		TargetEntry *nte;
		Var		   *v;

		if (te->resjunk)
			continue;
		v = makeVar(1, te->resno, exprType((Node *) te->expr), exprTypmod((Node *) te->expr),
					exprCollation((Node *) te->expr), 0);
		if (te->resno > visible)
		{
			args = lappend(args, v);
			continue;
		}
		nte = makeTargetEntry((Expr *) v, ++resno, te->resname ? pstrdup(te->resname) : NULL, false);
		nte->resorigtbl = te->resorigtbl;
		nte->resorigcol = te->resorigcol;
		tlist = lappend(tlist, nte);
	}
	q->targetList = tlist;
	q->cteList = NIL;
	q->rtable = list_make1(sub);
	DpClearPermInfos(q);
	q->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)),
							   (Node *) makeFuncExpr(fn, BOOLOID, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL));
	((RangeTblRef *) linitial(q->jointree->fromlist))->rtindex = 1;
	q->sortClause = NIL;
	q->limitCount = NULL;
	q->limitOffset = NULL;
	q->limitOption = LIMIT_OPTION_COUNT;
	q->hasSubLinks = false;
	q->hasRowSecurity = false;
}
