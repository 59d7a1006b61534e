/*
 * guard/multi.c — several releases in one query.
 *
 * BI tools ask for more than one release in a statement: Superset's series
 * limit joins the query to a top-N subquery of the same table (the released
 * keys of one release filter the rows of another), GROUPING SETS / ROLLUP /
 * CUBE ask for one release per grouping set, and Malloy spells grouping sets
 * as a join to a constant series (CROSS JOIN GENERATE_SERIES(0, n, 1) AS
 * group_set, with CASE WHEN group_set = k THEN ... END in keys and
 * aggregates).  Each release is an ordinary DP level of its own (shape.c,
 * release.c, groups.c, units.c): the statement is decomposed into them before
 * the shape check, and what remains is post-processing of their released
 * rows.  All of them are planned at executor start and charged together as
 * one ledger row listing every call site (callsite.c): their costs compose
 * sequentially (a person may be in every release), so the charge is known
 * before the first row is read, whatever the data.
 *
 * Grouping sets (and series).  A query level q with grouping sets S_1 ... S_n
 * (or with a series of n constant values v_1 ... v_n joined to its protected
 * table) becomes
 *
 *   SELECT <q's select list over u's columns>
 *   FROM (B_1 UNION ALL ... UNION ALL B_n) u
 *   WHERE <q's HAVING over u's columns> [WINDOW, DISTINCT, ORDER BY, LIMIT as q's]
 *
 * where B_i is q's FROM and WHERE grouped by the keys of S_i only, selecting
 * every GROUP BY key (NULL where not in S_i, as SQL has it), every aggregate
 * and the GROUPING() values of S_i as constants; for a series, B_i has the
 * series column replaced by the constant v_i (and folded: CASE WHEN 1 = 1
 * THEN region END is region, CASE WHEN 0 = 1 ... is NULL; GROUP BY keys that
 * became constants leave its GROUP BY, aggregates whose argument became NULL
 * are the constant they always are) and no series.  Each B_i is then guarded
 * as a dp query of its own.  A person is in every grouping set, so the sets
 * compose sequentially: the charge is the sum of the n releases' costs (each
 * release's groups compose in parallel as usual, and on a table with a
 * privacy unit each release bounds every unit to g cells of its own).  A
 * branch left without aggregates and keys is a constant row: it reads
 * nothing and costs nothing.  At most DP_MULTI_MAX_SETS sets.
 *
 * Released subqueries.  A subquery in FROM beside the protected table that
 * is itself a dp query (Superset's JOIN (SELECT region, sum(amount) ... GROUP
 * BY region ORDER BY 2 DESC LIMIT 5) AS anon_1 ON region = region__) is
 * guarded first as a release of its own, by the rule of the top level
 * (guard.c, DpGuardCountedQuery): each of its protected reads must be one of
 * its DP levels — a raw read beside its dp query, in its select list or
 * HAVING, or in a wrapper around it, is refused — so its rows are released
 * values.  It then stands beside the protected table as
 *
 *   (SELECT DISTINCT <the columns the outer query uses, the others NULL> FROM <it>)
 *
 * and shape.c lets it join only through equalities between each column the
 * outer query uses and a column of the protected table, the only place those
 * columns may appear: its rows are distinct on them, so each protected row
 * meets at most one of its rows and is kept or dropped by released values —
 * a filter chosen by an earlier release (adaptive composition; both costs are
 * fixed before either runs).  Its DP level is a MATERIALIZED common table
 * expression without outer references, computed once however often the join
 * scans it (callsite.c).
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/parse_agg.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "release.h"
#include "guard/guard.h"
#include "ledger.h"

#define DP_MULTI_MAX_SETS 64

/* The released subqueries made for the query being guarded (their Query nodes). */
static List *released_subqueries = NIL;

/* Forget the released subqueries of an earlier query. */
void
DpMultiReset(void)
{
	released_subqueries = NIL;
}

/* True if range-table entry r is a released subquery made by DpMultiReleasedSubqueries. */
bool
DpMultiIsReleased(RangeTblEntry *r)
{
	return r->rtekind == RTE_SUBQUERY && r->subquery != NULL &&
		list_member_ptr(released_subqueries, r->subquery);
}

/* ------------------------------------------------------------------------
 * Released subqueries
 * ------------------------------------------------------------------------
 */

/* True if sq only filters and projects what it reads (guard.c flattens such a subquery). */
static bool
DpMultiIsRawSubquery(Query *sq)
{
	return sq->commandType == CMD_SELECT && sq->setOperations == NULL && sq->cteList == NIL &&
		!sq->hasAggs && !sq->hasWindowFuncs && !sq->hasTargetSRFs && sq->groupClause == NIL &&
		sq->groupingSets == NIL && sq->havingQual == NULL && sq->distinctClause == NIL &&
		sq->limitCount == NULL && sq->limitOffset == NULL;
}

/* Does range-table entry r read a protected table (itself, or in its subquery)? */
static bool
DpMultiReadsProtected(RangeTblEntry *r, List *prot)
{
	if (r->rtekind == RTE_RELATION)
		return DpFindProtected(prot, r->relid) != NULL;
	if (r->rtekind == RTE_SUBQUERY && r->subquery != NULL)
		return DpReadsProtected(r->subquery) > 0;
	return false;
}

/* Context of DpMultiColumnsWalker. */
typedef struct DpMultiCols
{
	int			rti;
	int			depth;
	Bitmapset  *cols;			/* columns of entry rti that are read */
} DpMultiCols;

/* Walker: the columns of entry rti read anywhere in a query level (any depth). */
static bool
DpMultiColumnsWalker(Node *node, DpMultiCols *c)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		bool		r;

		c->depth++;
		r = query_tree_walker((Query *) node, DpMultiColumnsWalker, c, 0);
		c->depth--;
		return r;
	}
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == c->depth && ((Var *) node)->varno == c->rti)
	{
		if (((Var *) node)->varattno <= 0)
			DpGuardRefuse("a released subquery is joined only on its columns",
						  "Whole-row references to it are not allowed.");
		c->cols = bms_add_member(c->cols, ((Var *) node)->varattno);
		return false;
	}
	return expression_tree_walker(node, DpMultiColumnsWalker, c);
}

/*
 * The released subquery sq, guarded, as it stands beside the protected
 * table: SELECT DISTINCT <the used columns; the others NULL> FROM sq.
 */
static Query *
DpMultiDistinctOver(Query *sq, Bitmapset *used)
{
	Query	   *d = makeNode(Query);
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	List	   *colnames = NIL;
	ListCell   *lc;

	foreach(lc, sq->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		if (!te->resjunk)
			colnames = lappend(colnames, makeString(pstrdup(te->resname ? te->resname : "?column?")));
	}
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = sq;
	rte->eref = makeAlias("dp_released", colnames);
	rte->inFromCl = true;
	d->commandType = CMD_SELECT;
	d->querySource = QSRC_ORIGINAL;
	d->canSetTag = true;
	d->rtable = list_make1(rte);
	d->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)), NULL);
	((RangeTblRef *) linitial(d->jointree->fromlist))->rtindex = 1;
	foreach(lc, sq->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		Node	   *e = (Node *) te->expr;
		TargetEntry *nte;

		if (te->resjunk)
			continue;
		if (bms_is_member(te->resno, used))
			e = (Node *) makeVar(1, te->resno, exprType(e), exprTypmod(e), exprCollation(e), 0);
		else
			e = (Node *) makeNullConst(exprType(e), exprTypmod(e), exprCollation(e));
		nte = makeTargetEntry((Expr *) e, te->resno, te->resname ? pstrdup(te->resname) : NULL, false);
		d->targetList = lappend(d->targetList, nte);
		if (bms_is_member(te->resno, used))
		{
			Oid			sortop;
			Oid			eqop;
			bool		hashable;
			SortGroupClause *sgc = makeNode(SortGroupClause);

			get_sort_group_operators(exprType(e), false, true, false, &sortop, &eqop, NULL, &hashable);
			nte->ressortgroupref = te->resno;
			sgc->tleSortGroupRef = te->resno;
			sgc->eqop = eqop;
			sgc->sortop = sortop;
			sgc->hashable = hashable;
			d->distinctClause = lappend(d->distinctClause, sgc);
		}
	}
	if (list_length(d->targetList) != list_length(colnames))
		DpGuardRefuse("a released subquery is joined only on its columns", "Its select list has hidden columns.");
	return d;
}

/*
 * The query level whose range table holds two or more entries that read a
 * protected table (q, or the FROM-subquery of a wrapper), or NULL.
 */
static Query *
DpMultiLevel(Query *q, List *prot, int depth)
{
	ListCell   *lc;
	RangeTblEntry *only = NULL;
	int			n = 0;

	if (depth > 8)
		return NULL;
	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		if (DpMultiReadsProtected(r, prot))
		{
			n++;
			only = r;
		}
	}
	if (n >= 2)
		return q;
	if (n == 1 && only->rtekind == RTE_SUBQUERY && !only->lateral)
		return DpMultiLevel(only->subquery, prot, depth + 1);
	return NULL;
}

/*
 * Released subqueries (see the file comment): in the query level that reads
 * the protected table beside FROM-subqueries that are dp queries, guard each
 * of those as a release of its own and let it stand as its distinct used
 * columns.  Returns the number of protected reads guarded so.
 */
int
DpMultiReleasedSubqueries(Query *q, List *prot, DpPlanCheck *check)
{
	Query	   *level = DpMultiLevel(q, prot, 0);
	ListCell   *lc;
	int			rti = 0;
	int			guarded = 0;
	int			plain = 0;

	if (level == NULL)
		return 0;
	foreach(lc, level->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		if (DpMultiReadsProtected(r, prot) &&
			(r->rtekind == RTE_RELATION || DpMultiIsRawSubquery(r->subquery)))
			plain++;
	}
	if (plain != 1)
		return 0;				/* not one table filtered by releases: refused as before */
	foreach(lc, level->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);
		DpMultiCols cols = {0, 0, NULL};
		int			reads;

		rti++;
		if (r->rtekind != RTE_SUBQUERY || !DpMultiReadsProtected(r, prot) || DpMultiIsRawSubquery(r->subquery))
			continue;
		if (r->lateral)
			DpGuardRefuse("a released subquery may not be LATERAL",
						  "It would be released once per row of the tables before it.");
		/* every read in it is one of its DP levels, as at the top level (guard.c) */
		reads = DpReadsProtected(r->subquery);
		DpGuardCountedQuery(r->subquery, prot, check, 1);
		cols.rti = rti;
		(void) query_tree_walker(level, DpMultiColumnsWalker, &cols, QTW_IGNORE_JOINALIASES);
		r->subquery = DpMultiDistinctOver(r->subquery, cols.cols);
		r->security_barrier = false;
		released_subqueries = lappend(released_subqueries, r->subquery);
		guarded += reads;
	}
	return guarded;
}

/*
 * True if every column of released entry r (at rti) that is not NULL is
 * equated, in the conjuncts quals, to a column of the protected table (at
 * prot_rti) by the default equality of its type (the one its DISTINCT used)
 * under a deterministic collation: each protected row meets at most one of
 * its rows.
 */
bool
DpMultiReleasedJoined(List *quals, int rti, RangeTblEntry *r, int prot_rti)
{
	ListCell   *lc;

	foreach(lc, r->subquery->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		bool		joined = false;
		ListCell   *q;

		if (IsA(te->expr, Const))
			continue;
		foreach(q, quals)
		{
			Var		   *mine;
			Var		   *theirs;

			if (DpEquatedColumns(lfirst(q), rti, prot_rti, &mine, &theirs) && mine->varattno == te->resno)
			{
				joined = true;
				break;
			}
		}
		if (!joined)
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Released subqueries that filter listed keys
 * ------------------------------------------------------------------------
 */

/* A released subquery detached from a DP level's join tree: it filters the listed keys. */
typedef struct DpKeyFilter
{
	RangeTblEntry *rte;			/* the released subquery */
	int			nkeys;
	AttrNumber	cols[INDEX_MAX_KEYS];	/* its columns, */
	int			keys[INDEX_MAX_KEYS];	/* each equated to this GROUP BY key (0-based), */
	Oid			eqops[INDEX_MAX_KEYS];	/* by this equality */
	Oid			colls[INDEX_MAX_KEYS];
} DpKeyFilter;

/* Walker: true if node reads a column of range-table entry *rti (this query level). */
static bool
DpMultiReadsEntry(Node *node, int *rti)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varlevelsup == 0 && ((Var *) node)->varno == *rti;
	if (IsA(node, Query))
		return false;
	return expression_tree_walker(node, DpMultiReadsEntry, rti);
}

/* The AND-ed conjuncts of qual appended to *list. */
static void
DpMultiConjuncts(List **list, Node *qual)
{
	if (qual == NULL)
		return;
	if (IsA(qual, BoolExpr) && ((BoolExpr *) qual)->boolop == AND_EXPR)
	{
		ListCell   *lc;

		foreach(lc, ((BoolExpr *) qual)->args)
			DpMultiConjuncts(list, lfirst(lc));
	}
	else
		*list = lappend(*list, qual);
}

/*
 * The join tree node without the reference to entry rti, which must be a
 * member of an inner join (or of the FROM list); the quals of the inner
 * joins it dissolves are appended to *quals.  Sets *found.  NULL in place of
 * the reference itself.
 */
static Node *
DpMultiDropRef(Node *node, int rti, List **quals, bool *found, bool *outer)
{
	if (IsA(node, RangeTblRef))
	{
		if (((RangeTblRef *) node)->rtindex != rti)
			return node;
		*found = true;
		return NULL;
	}
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;
		bool		before = *found;

		j->larg = DpMultiDropRef(j->larg, rti, quals, found, outer);
		j->rarg = DpMultiDropRef(j->rarg, rti, quals, found, outer);
		if (*found && !before)
		{
			if (j->jointype != JOIN_INNER)
				*outer = true;
			if (j->larg == NULL || j->rarg == NULL)
			{
				/* the join of the other side with it: the other side, its condition a filter */
				DpMultiConjuncts(quals, j->quals);
				return j->larg != NULL ? j->larg : j->rarg;
			}
		}
		return node;
	}
	if (IsA(node, FromExpr))
	{
		FromExpr   *f = (FromExpr *) node;
		List	   *items = NIL;
		ListCell   *lc;

		foreach(lc, f->fromlist)
		{
			Node	   *item = DpMultiDropRef(lfirst(lc), rti, quals, found, outer);

			if (item != NULL)
				items = lappend(items, item);
		}
		f->fromlist = items;
		return node;
	}
	return node;
}

/*
 * Released subqueries of DP level q (a top-N subquery joined to the
 * protected table, at prot_rti) whose every column is equated only to a
 * GROUP BY key column of the table (keys[0..nkeys-1], the DP level's keys):
 * they filter which keys are released, not which rows are counted, so on a
 * GROUP BY of public keys they are taken out of the join tree (their slots
 * left empty) and DpMultiAttachKeyFilters joins them to the key list
 * instead: only the listed keys among their released keys appear, without
 * partition selection.  A row whose key they do not hold then falls into no
 * listed group, as before into no joined row.  NIL (q unchanged) if q has
 * none, or one that is joined otherwise (then it stays a filter of rows).
 */
List *
DpMultiDetachKeyFilters(Query *q, int prot_rti, Node **keys, int nkeys)
{
	List	   *filters = NIL;
	List	   *conjuncts = NIL;
	ListCell   *lc;
	int			rti = 0;

	if (q->jointree == NULL)
		return NIL;
	/* every conjunct of the join tree (the inner joins' and WHERE) */
	{
		List	   *stack = list_make1(q->jointree);

		while (stack != NIL)
		{
			Node	   *n = linitial(stack);

			stack = list_delete_first(stack);
			if (IsA(n, FromExpr))
			{
				DpMultiConjuncts(&conjuncts, ((FromExpr *) n)->quals);
				stack = list_concat(stack, list_copy(((FromExpr *) n)->fromlist));
			}
			else if (IsA(n, JoinExpr))
			{
				DpMultiConjuncts(&conjuncts, ((JoinExpr *) n)->quals);
				stack = lappend(lappend(stack, ((JoinExpr *) n)->larg), ((JoinExpr *) n)->rarg);
			}
		}
	}
	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);
		DpKeyFilter *f;
		ListCell   *c;

		rti++;
		if (!DpMultiIsReleased(r))
			continue;
		f = palloc0(sizeof(DpKeyFilter));
		f->rte = r;
		foreach(c, conjuncts)
		{
			Var		   *mine;
			Var		   *theirs;
			int			k = -1;

			if (!DpMultiReadsEntry(lfirst(c), &rti))
				continue;
			if (DpEquatedColumns(lfirst(c), rti, prot_rti, &mine, &theirs))
				for (int i = 0; i < nkeys; i++)
					if (IsA(keys[i], Var) && ((Var *) keys[i])->varno == prot_rti &&
						((Var *) keys[i])->varattno == theirs->varattno)
						k = i;
			if (k < 0 || f->nkeys >= INDEX_MAX_KEYS)
				return NIL;		/* joined to something else: a filter of rows */
			f->cols[f->nkeys] = mine->varattno;
			f->keys[f->nkeys] = k;
			f->eqops[f->nkeys] = ((OpExpr *) lfirst(c))->opno;
			f->colls[f->nkeys] = ((OpExpr *) lfirst(c))->inputcollid;
			f->nkeys++;
		}
		if (f->nkeys == 0)
			return NIL;
		filters = lappend(filters, f);
	}
	if (filters == NIL)
		return NIL;
	/* out of the join tree: their references, the joins they dissolve, their equalities */
	{
		List	   *quals = NIL;
		List	   *kept = NIL;
		bool		outer = false;
		FromExpr   *tree = copyObject(q->jointree);
		int			n = list_length(q->rtable);

		for (rti = 1; rti <= n; rti++)
		{
			bool		found = false;

			if (!DpMultiIsReleased(rt_fetch(rti, q->rtable)))
				continue;
			(void) DpMultiDropRef((Node *) tree, rti, &quals, &found, &outer);
			if (!found || outer)
				return NIL;		/* under an outer join: left as it is */
		}
		DpMultiConjuncts(&quals, tree->quals);
		foreach(lc, quals)
		{
			bool		released = false;

			for (rti = 1; rti <= n; rti++)
				if (DpMultiIsReleased(rt_fetch(rti, q->rtable)) && DpMultiReadsEntry(lfirst(lc), &rti))
					released = true;
			if (!released)
				kept = lappend(kept, lfirst(lc));
		}
		tree->quals = kept == NIL ? NULL :
			list_length(kept) == 1 ? linitial(kept) : (Node *) makeBoolExpr(AND_EXPR, kept, -1);
		q->jointree = tree;
	}
	/* their slots hold nothing now (each is read once, where it is attached) */
	rti = 0;
	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		rti++;
		if (DpMultiIsReleased(r))
		{
			RangeTblEntry *empty = makeNode(RangeTblEntry);

			empty->rtekind = RTE_RESULT;
			empty->eref = makeAlias("dp_key_filter", NIL);
			lfirst(lc) = empty;
		}
	}
	return filters;
}

/*
 * Join the released subqueries that DpMultiDetachKeyFilters took out of q's
 * join tree to q's list of public keys (its VALUES entry, after
 * DpRewritePublicGroupsCore), on the key columns they were equated to.
 */
void
DpMultiAttachKeyFilters(Query *q, List *filters)
{
	int			values_rti = 0;
	int			rti = 0;
	ListCell   *lc;
	List	   *quals = NIL;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		rti++;
		if (r->rtekind == RTE_VALUES && strcmp(r->eref->aliasname, "dp_public_keys") == 0)
			values_rti = rti;
	}
	if (values_rti == 0)
		elog(ERROR, "dp_pg: the released keys of a top-N subquery have no key list to filter");
	DpMultiConjuncts(&quals, q->jointree->quals);
	foreach(lc, filters)
	{
		DpKeyFilter *f = lfirst(lc);
		RangeTblEntry *vals = rt_fetch(values_rti, q->rtable);
		RangeTblRef *ref = makeNode(RangeTblRef);

		q->rtable = lappend(q->rtable, f->rte);
		ref->rtindex = list_length(q->rtable);
		q->jointree->fromlist = lappend(q->jointree->fromlist, ref);
		for (int i = 0; i < f->nkeys; i++)
		{
			TargetEntry *te = list_nth_node(TargetEntry, f->rte->subquery->targetList, f->cols[i] - 1);
			Node	   *mine = (Node *) makeVar(ref->rtindex, f->cols[i], exprType((Node *) te->expr),
												exprTypmod((Node *) te->expr), exprCollation((Node *) te->expr), 0);
			int			k = f->keys[i];
			Node	   *key = (Node *) makeVar(values_rti, k + 1, list_nth_oid(vals->coltypes, k),
											   list_nth_int(vals->coltypmods, k), list_nth_oid(vals->colcollations, k), 0);
			OpExpr	   *eq = (OpExpr *) make_opclause(f->eqops[i], BOOLOID, false, (Expr *) key, (Expr *) mine,
													  InvalidOid, f->colls[i]);

			set_opfuncid(eq);
			quals = lappend(quals, eq);
		}
	}
	q->jointree->quals = list_length(quals) == 1 ? linitial(quals) : (Node *) makeBoolExpr(AND_EXPR, quals, -1);
}

/* ------------------------------------------------------------------------
 * Grouping sets and constant series
 * ------------------------------------------------------------------------
 */

/* What the branches of a decomposed query level share. */
typedef struct DpMultiSplitInfo
{
	Query	   *q;				/* the level (its post-processing stays here) */
	int			nkeys;
	Index	   *refs;			/* sortgrouprefs of the GROUP BY keys */
	Node	  **keys;			/* their expressions */
	List	   *aggs;			/* distinct Aggrefs of the level (agglevelsup 0) */
	List	   *groupings;		/* distinct GroupingFuncs of the level */
	int			series_rti;		/* the series' entry, or 0 */
	int64		series_first;
	int64		series_step;
	int			series_count;
	Oid			series_type;
} DpMultiSplitInfo;

/* Context of the collecting walk. */
typedef struct DpMultiCollect
{
	int			depth;
	List	   *aggs;
	List	   *groupings;
} DpMultiCollect;

/* Walker: the distinct aggregates and GROUPING() calls of the level (any subquery depth). */
static bool
DpMultiCollectWalker(Node *node, DpMultiCollect *c)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		bool		r;

		c->depth++;
		r = query_tree_walker((Query *) node, DpMultiCollectWalker, c, 0);
		c->depth--;
		return r;
	}
	if (IsA(node, Aggref) && ((Aggref *) node)->agglevelsup == c->depth)
	{
		Aggref	   *a = copyObject((Aggref *) node);

		if (c->depth > 0)
			IncrementVarSublevelsUp((Node *) a, -c->depth, 0);
		if (!list_member(c->aggs, a))
			c->aggs = lappend(c->aggs, a);
		return false;
	}
	if (IsA(node, GroupingFunc) && ((GroupingFunc *) node)->agglevelsup == c->depth)
	{
		GroupingFunc *g = copyObject((GroupingFunc *) node);

		if (c->depth > 0)
			IncrementVarSublevelsUp((Node *) g, -c->depth, 0);
		if (!list_member(c->groupings, g))
			c->groupings = lappend(c->groupings, g);
		return false;
	}
	return expression_tree_walker(node, DpMultiCollectWalker, c);
}

/* Context of the series substitution. */
typedef struct DpMultiSubst
{
	int			rti;
	int			depth;
	Const	   *value;
} DpMultiSubst;

/* Mutator: the series' column becomes the branch's constant. */
static Node *
DpMultiSubstMutator(Node *node, DpMultiSubst *s)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
	{
		Query	   *q;

		s->depth++;
		q = query_tree_mutator((Query *) node, DpMultiSubstMutator, s, 0);
		s->depth--;
		return (Node *) q;
	}
	if (IsA(node, Var) && ((Var *) node)->varno == s->rti && ((Var *) node)->varlevelsup == s->depth)
	{
		if (((Var *) node)->varattno != 1)
			DpGuardRefuse("a series beside a protected table is read only by its value",
						  "Whole-row references to it are not allowed.");
		return copyObject((Node *) s->value);
	}
	return expression_tree_mutator(node, DpMultiSubstMutator, s);
}

/* An expression of the branch: the series' value substituted, constants folded. */
static Node *
DpMultiBranchExpr(DpMultiSplitInfo *info, Node *e, Const *value)
{
	e = copyObject(e);
	if (value != NULL)
	{
		DpMultiSubst s = {info->series_rti, 0, value};

		e = DpMultiSubstMutator(e, &s);
		e = eval_const_expressions(NULL, e);
	}
	return e;
}

/* True if e is a NULL constant. */
static bool
DpMultiIsNull(Node *e)
{
	return e != NULL && IsA(e, Const) && ((Const *) e)->constisnull;
}

/*
 * An aggregate of the branch that is a constant whatever the rows: a plain
 * aggregate over NULL arguments only, or with a FILTER that is constantly
 * false or NULL (count: 0; sum, avg, min, max and the rest: NULL).  It reads
 * nothing, so it is no release.  NULL if the aggregate depends on the rows
 * (or is not one of count, sum, avg, min, max).
 */
static Node *
DpMultiConstantAggregate(Aggref *a)
{
	bool		all_null = a->args != NIL;
	ListCell   *lc;
	const char *name = get_func_name(a->aggfnoid);

	/* the plain aggregates BI tools write, whose value on no input (or only NULLs) is NULL or 0 */
	if (DpKindOfAggregate(a->aggfnoid) != NULL || a->aggorder != NIL || a->aggdirectargs != NIL ||
		get_func_namespace(a->aggfnoid) != PG_CATALOG_NAMESPACE || name == NULL ||
		(strcmp(name, "count") != 0 && strcmp(name, "sum") != 0 && strcmp(name, "avg") != 0 &&
		 strcmp(name, "min") != 0 && strcmp(name, "max") != 0))
		return NULL;
	foreach(lc, a->args)
		if (!DpMultiIsNull((Node *) lfirst_node(TargetEntry, lc)->expr))
			all_null = false;
	if (a->aggfilter != NULL && IsA(a->aggfilter, Const) &&
		(((Const *) a->aggfilter)->constisnull || !DatumGetBool(((Const *) a->aggfilter)->constvalue)))
		all_null = true;
	if (!all_null)
		return NULL;
	if (a->aggfnoid == F_COUNT_ || a->aggfnoid == F_COUNT_ANY)
		return (Node *) DpInt8Const(0);
	return (Node *) makeNullConst(a->aggtype, -1, a->aggcollid);
}

/* Remove range-table entry rti of q (nothing refers to it) and renumber the later ones. */
static void
DpMultiDropEntry(Query *q, int rti)
{
	int			n = list_length(q->rtable);

	q->rtable = list_delete_nth_cell(q->rtable, rti - 1);
	for (int i = rti + 1; i <= n; i++)
		ChangeVarNodes((Node *) q, i, i - 1, 0);
}

/*
 * Remove the series' reference from a join tree: a cross join with it (no
 * qualification, or a constant true one) becomes its other side.  Sets
 * *join_rti to the join's entry.  Returns the new node.
 */
static Node *
DpMultiDropSeries(Node *node, int rti, int *join_rti, bool *found)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, FromExpr))
	{
		FromExpr   *f = (FromExpr *) node;
		List	   *kept = NIL;
		ListCell   *lc;

		foreach(lc, f->fromlist)
		{
			Node	   *item = lfirst(lc);

			if (IsA(item, RangeTblRef) && ((RangeTblRef *) item)->rtindex == rti)
			{
				*found = true;
				continue;
			}
			kept = lappend(kept, DpMultiDropSeries(item, rti, join_rti, found));
		}
		f->fromlist = kept;
		return node;
	}
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;
		bool		cross = j->jointype == JOIN_INNER &&
			(j->quals == NULL || (IsA(j->quals, Const) && !((Const *) j->quals)->constisnull &&
								  DatumGetBool(((Const *) j->quals)->constvalue)));

		if (cross && IsA(j->rarg, RangeTblRef) && ((RangeTblRef *) j->rarg)->rtindex == rti)
		{
			*found = true;
			*join_rti = j->rtindex;
			return DpMultiDropSeries(j->larg, rti, join_rti, found);
		}
		if (cross && IsA(j->larg, RangeTblRef) && ((RangeTblRef *) j->larg)->rtindex == rti)
		{
			*found = true;
			*join_rti = j->rtindex;
			return DpMultiDropSeries(j->rarg, rti, join_rti, found);
		}
		j->larg = DpMultiDropSeries(j->larg, rti, join_rti, found);
		j->rarg = DpMultiDropSeries(j->rarg, rti, join_rti, found);
	}
	return node;
}

/*
 * The constant series of q's FROM, if any: generate_series(first, last
 * [, step]) of int4 or int8 constants, at most DP_MULTI_MAX_SETS values,
 * cross joined (no other join condition) beside the protected table.  Sets
 * info's series fields; false if there is none.
 */
static bool
DpMultiFindSeries(Query *q, DpMultiSplitInfo *info)
{
	ListCell   *lc;
	int			rti = 0;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);
		RangeTblFunction *rf;
		FuncExpr   *fe;
		int64		v[3] = {0, 0, 1};
		int			i = 0;
		ListCell   *a;
		int128		span;
		int128		n;

		rti++;
		if (r->rtekind != RTE_FUNCTION)
			continue;
		if (list_length(r->functions) != 1 || r->funcordinality || r->lateral)
			return false;
		rf = linitial_node(RangeTblFunction, r->functions);
		fe = (FuncExpr *) eval_const_expressions(NULL, copyObject(rf->funcexpr));
		if (!IsA(fe, FuncExpr) ||
			(fe->funcid != F_GENERATE_SERIES_INT4_INT4 && fe->funcid != F_GENERATE_SERIES_INT4_INT4_INT4 &&
			 fe->funcid != F_GENERATE_SERIES_INT8_INT8 && fe->funcid != F_GENERATE_SERIES_INT8_INT8_INT8))
			return false;
		foreach(a, fe->args)
		{
			Const	   *c = (Const *) lfirst(a);

			if (!IsA(c, Const) || c->constisnull)
				return false;
			v[i++] = c->consttype == INT8OID ? DatumGetInt64(c->constvalue) : DatumGetInt32(c->constvalue);
		}
		/* its number of values, exactly (int128: no bound or step overflows it); none if it runs away from stop */
		span = (int128) v[1] - (int128) v[0];
		if (v[2] == 0)
			n = 0;
		else if (span != 0 && (span > 0) != (v[2] > 0))
			n = 0;
		else
			n = span / v[2] + 1;
		if (n < 1 || n > DP_MULTI_MAX_SETS)
			DpGuardRefuse("a series joined to a protected table has 1 to 64 values",
						  "Each value is a release of its own (a grouping set).");
		info->series_rti = rti;
		info->series_first = v[0];
		info->series_step = v[2];
		info->series_count = (int) n;
		info->series_type = exprType((Node *) fe);
		return true;
	}
	return false;
}

/* Context of the mapping of the post-processing onto the union's columns. */
typedef struct DpMultiMap
{
	DpMultiSplitInfo *info;
	int			depth;
} DpMultiMap;

/* The union's column of the expression at the top level, or 0. */
static int
DpMultiColumnOf(DpMultiSplitInfo *info, Node *node)
{
	int			col = 1;
	ListCell   *lc;

	for (int k = 0; k < info->nkeys; k++, col++)
		if (equal(info->keys[k], node))
			return col;
	foreach(lc, info->aggs)
	{
		if (equal(lfirst(lc), node))
			return col;
		col++;
	}
	foreach(lc, info->groupings)
	{
		if (equal(lfirst(lc), node))
			return col;
		col++;
	}
	return 0;
}

/* Mutator: keys, aggregates and GROUPING() of the level become columns of the union (entry 1). */
static Node *
DpMultiMapMutator(Node *node, DpMultiMap *m)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
	{
		Query	   *q;

		m->depth++;
		q = query_tree_mutator((Query *) node, DpMultiMapMutator, m, 0);
		m->depth--;
		return (Node *) q;
	}
	if ((IsA(node, Aggref) && ((Aggref *) node)->agglevelsup == m->depth) ||
		(IsA(node, GroupingFunc) && ((GroupingFunc *) node)->agglevelsup == m->depth) ||
		(m->depth == 0 && !IsA(node, Const)) ||
		(IsA(node, Var) && ((Var *) node)->varlevelsup == m->depth))
	{
		Node	   *probe = copyObject(node);
		int			col;

		if (m->depth > 0)
			IncrementVarSublevelsUp(probe, -m->depth, 0);
		col = DpMultiColumnOf(m->info, probe);
		if (col > 0)
		{
			Node	   *e = col <= m->info->nkeys ? m->info->keys[col - 1] : probe;

			return (Node *) makeVar(1, col, exprType(e), exprTypmod(e), exprCollation(e), m->depth);
		}
		if (IsA(node, Var) || IsA(node, Aggref) || IsA(node, GroupingFunc))
			DpGuardRefuse("table columns may only appear inside aggregates or as GROUP BY keys",
						  "Selecting, filtering or ordering by another column would release it.");
	}
	return expression_tree_mutator(node, DpMultiMapMutator, m);
}

/* GROUPING(args) in the branch of set refs: bit i (from the right) set if argument i is not grouped. */
static int32
DpMultiGroupingValue(GroupingFunc *g, List *set)
{
	int32		v = 0;
	ListCell   *lc;

	foreach(lc, g->refs)
		v = (v << 1) | (list_member_int(set, lfirst_int(lc)) ? 0 : 1);
	return v;
}

/*
 * One branch: q's FROM and WHERE grouped by the keys of set (sortgrouprefs;
 * NIL: every key, for a series), the series' value substituted.
 */
static Query *
DpMultiBranch(DpMultiSplitInfo *info, List *set, Const *value)
{
	Query	   *q = info->q;
	Query	   *b = makeNode(Query);
	AttrNumber	resno = 0;
	ListCell   *lc;
	bool		reads = false;

	b->commandType = CMD_SELECT;
	b->querySource = QSRC_ORIGINAL;
	b->canSetTag = true;
	b->rtable = copyObject(q->rtable);
#if PG_VERSION_NUM >= 160000
	b->rteperminfos = copyObject(q->rteperminfos);
#endif
	b->jointree = (FromExpr *) DpMultiBranchExpr(info, (Node *) q->jointree, value);
	b->hasRowSecurity = q->hasRowSecurity;
	b->hasSubLinks = q->hasSubLinks;
	for (int k = 0; k < info->nkeys; k++)
	{
		Node	   *key = info->keys[k];
		bool		grouped = value != NULL || list_member_int(set, info->refs[k]);
		Node	   *e = grouped ? DpMultiBranchExpr(info, key, value) :
			(Node *) makeNullConst(exprType(key), exprTypmod(key), exprCollation(key));
		TargetEntry *te;

		if (IsA(e, Const))
			e = (Node *) makeConst(exprType(key), exprTypmod(key), exprCollation(key),
								   ((Const *) e)->constlen, ((Const *) e)->constvalue,
								   ((Const *) e)->constisnull, ((Const *) e)->constbyval);
		te = makeTargetEntry((Expr *) e, ++resno, psprintf("dp_key%d", k + 1), false);
		b->targetList = lappend(b->targetList, te);
		if (grouped && !IsA(e, Const))
		{
			SortGroupClause *sgc = NULL;

			foreach(lc, q->groupClause)
				if (lfirst_node(SortGroupClause, lc)->tleSortGroupRef == info->refs[k])
					sgc = copyObject(lfirst_node(SortGroupClause, lc));
			te->ressortgroupref = resno;
			sgc->tleSortGroupRef = resno;
			b->groupClause = lappend(b->groupClause, sgc);
			reads = true;
		}
	}
	foreach(lc, info->aggs)
	{
		Node	   *e = DpMultiBranchExpr(info, lfirst(lc), value);
		Node	   *c = IsA(e, Aggref) ? DpMultiConstantAggregate((Aggref *) e) : NULL;

		if (c != NULL)
			e = c;
		else
			reads = true;
		resno++;
		b->targetList = lappend(b->targetList, makeTargetEntry((Expr *) e, resno, psprintf("dp_agg%d", resno), false));
		b->hasAggs |= contain_agg_clause(e);
	}
	foreach(lc, info->groupings)
	{
		resno++;
		b->targetList = lappend(b->targetList,
								makeTargetEntry((Expr *) DpInt4Const(DpMultiGroupingValue(lfirst(lc), set)),
												resno, psprintf("dp_grouping%d", resno), false));
	}
	if (value != NULL)
	{
		int			join_rti = 0;
		bool		found = false;

		b->jointree = (FromExpr *) DpMultiDropSeries((Node *) b->jointree, info->series_rti, &join_rti, &found);
		if (!found)
			DpGuardRefuse("a series beside a protected table must be cross joined to it",
						  "Write CROSS JOIN generate_series(first, last, step) AS group_set.");
		if (join_rti > info->series_rti)
			DpMultiDropEntry(b, join_rti);
		DpMultiDropEntry(b, info->series_rti);
		if (join_rti > 0 && join_rti < info->series_rti)
			DpMultiDropEntry(b, join_rti);
	}
	if (!reads)
	{
		/* nothing of the rows is released: one constant row, reading nothing */
		b->rtable = NIL;
		DpClearPermInfos(b);
		b->jointree = makeFromExpr(NIL, NULL);
		b->hasAggs = false;
		b->hasRowSecurity = false;
		b->hasSubLinks = false;
	}
	return b;
}

/* A UNION ALL of the branches (already guarded), as a query whose columns are the first's. */
static Query *
DpMultiUnion(List *branches, List *colnames)
{
	Query	   *u = makeNode(Query);
	Query	   *first = linitial(branches);
	Node	   *tree = NULL;
	List	   *types = NIL;
	List	   *typmods = NIL;
	List	   *colls = NIL;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, first->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		if (te->resjunk)
			continue;
		types = lappend_oid(types, exprType((Node *) te->expr));
		typmods = lappend_int(typmods, -1);
		colls = lappend_oid(colls, exprCollation((Node *) te->expr));
	}
	u->commandType = CMD_SELECT;
	u->querySource = QSRC_ORIGINAL;
	u->canSetTag = true;
	foreach(lc, branches)
	{
		RangeTblEntry *rte = makeNode(RangeTblEntry);
		RangeTblRef *ref = makeNode(RangeTblRef);

		rte->rtekind = RTE_SUBQUERY;
		rte->subquery = lfirst(lc);
		rte->eref = makeAlias(psprintf("dp_set%d", ++i), list_copy(colnames));
		rte->inFromCl = false;
		u->rtable = lappend(u->rtable, rte);
		ref->rtindex = i;
		if (tree == NULL)
			tree = (Node *) ref;
		else
		{
			SetOperationStmt *s = makeNode(SetOperationStmt);

			s->op = SETOP_UNION;
			s->all = true;
			s->larg = tree;
			s->rarg = (Node *) ref;
			s->colTypes = list_copy(types);
			s->colTypmods = list_copy(typmods);
			s->colCollations = list_copy(colls);
			tree = (Node *) s;
		}
	}
	u->jointree = makeFromExpr(NIL, NULL);
	u->setOperations = tree;
	/*
	 * LIMIT ALL: the planner then plans the union as one subquery instead of
	 * flattening it into the query around it, where the MIN / MAX
	 * optimisation (planagg.c) would plan every branch a second time — a
	 * second read of each protected table in the plan, which reads.c refuses
	 */
	u->limitCount = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64), (Datum) 0, true, FLOAT8PASSBYVAL);
	i = 0;
	foreach(lc, types)
	{
		i++;
		u->targetList = lappend(u->targetList,
								makeTargetEntry((Expr *) makeVar(1, i, lfirst_oid(lc), -1,
																 list_nth_oid(colls, i - 1), 0),
												i, pstrdup(strVal(list_nth(colnames, i - 1))), false));
	}
	if (list_length(branches) == 1)
		return first;
	return u;
}

/*
 * Decompose query level q (reading protected table p at its top level) into
 * one release per grouping set or series value (see the file comment), each
 * guarded as a dp query, and leave q as the post-processing over their
 * union.  False (and q untouched) if q has neither.
 */
bool
DpMultiSplit(Query *q, List *prot, DpPlanCheck *check, int depth)
{
	DpMultiSplitInfo info;
	DpMultiCollect collect = {0, NIL, NIL};
	List	   *sets = NIL;
	List	   *branches = NIL;
	List	   *colnames = NIL;
	ListCell   *lc;
	DpMultiMap map;
	RangeTblEntry *rte;
	Query	   *u;
	int			nbranches;
	int			k = 0;

	memset(&info, 0, sizeof(info));
	info.q = q;
	if (q->commandType != CMD_SELECT || q->setOperations != NULL || q->cteList != NIL)
		return false;
	if (q->groupingSets == NIL && !(q->groupClause != NIL && DpMultiFindSeries(q, &info)))
		return false;
	if (q->groupingSets != NIL && DpMultiFindSeries(q, &info))
		DpGuardRefuse("GROUPING SETS and a series cannot be combined on a protected table",
					  "Use one of them.");
	if (q->hasTargetSRFs)
		DpGuardRefuse("set-returning functions in the select list are not allowed with grouping sets",
					  "Each would multiply released rows.");

	/* keys, aggregates and GROUPING() of the level, as the branches select them */
	DpFlattenGroupVars(q);
	q->targetList = (List *) DpFlattenJoinAliasVars(q, (Node *) q->targetList);
	q->havingQual = DpFlattenJoinAliasVars(q, q->havingQual);
	q->jointree = (FromExpr *) DpFlattenJoinAliasVars(q, (Node *) q->jointree);
	info.nkeys = list_length(q->groupClause);
	info.refs = palloc(sizeof(Index) * Max(info.nkeys, 1));
	info.keys = palloc(sizeof(Node *) * Max(info.nkeys, 1));
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);

		info.refs[k] = sgc->tleSortGroupRef;
		info.keys[k] = (Node *) get_sortgroupclause_expr(sgc, q->targetList);
		colnames = lappend(colnames, makeString(psprintf("dp_key%d", k + 1)));
		k++;
	}
	if (info.series_rti != 0)
	{
		/* the series' value must be a key: each value is then a grouping set */
		Var		   *sv = makeVar(info.series_rti, 1, info.series_type, -1, InvalidOid, 0);
		bool		keyed = false;

		for (int i = 0; i < info.nkeys; i++)
			if (IsA(info.keys[i], Var) && ((Var *) info.keys[i])->varno == sv->varno &&
				((Var *) info.keys[i])->varattno == 1 && ((Var *) info.keys[i])->varlevelsup == 0)
				keyed = true;
		if (!keyed)
			DpGuardRefuse("a series joined to a protected table must be a GROUP BY key",
						  "Otherwise it would count each row once per value of the series.");
	}
	(void) DpMultiCollectWalker((Node *) q->targetList, &collect);
	(void) DpMultiCollectWalker(q->havingQual, &collect);
	info.aggs = collect.aggs;
	info.groupings = collect.groupings;
	for (int i = 0; i < list_length(info.aggs); i++)
		colnames = lappend(colnames, makeString(psprintf("dp_agg%d", info.nkeys + i + 1)));
	for (int i = 0; i < list_length(info.groupings); i++)
		colnames = lappend(colnames, makeString(psprintf("dp_grouping%d", info.nkeys + list_length(info.aggs) + i + 1)));

	if (q->groupingSets != NIL)
	{
		/* (NIL beyond the limit) */
		sets = expand_grouping_sets(q->groupingSets, q->groupDistinct, DP_MULTI_MAX_SETS);
		if (sets == NIL || list_length(sets) > DP_MULTI_MAX_SETS)
			DpGuardRefuse("at most 64 grouping sets on a protected table",
						  "Each grouping set is a release of its own.");
		nbranches = list_length(sets);
	}
	else
		nbranches = info.series_count;

	/* the branches, each a dp query of its own */
	for (int i = 0; i < nbranches; i++)
	{
		Query	   *b;

		if (sets != NIL)
			b = DpMultiBranch(&info, list_nth(sets, i), NULL);
		else
		{
			int64		v = (int64) ((int128) info.series_first + (int128) i * info.series_step);
			Const	   *c = info.series_type == INT8OID ? DpInt8Const(v) : DpInt4Const((int32) v);

			b = DpMultiBranch(&info, NIL, c);
		}
		if (b->rtable != NIL)
			DpGuardDpQuery(b, prot, check, depth + 1);
		branches = lappend(branches, b);
	}

	/* q: the post-processing over their union */
	u = DpMultiUnion(branches, colnames);
	map.info = &info;
	map.depth = 0;
	{
		List	   *tlist = NIL;

		foreach(lc, q->targetList)
		{
			TargetEntry *te = copyObject(lfirst_node(TargetEntry, lc));

			te->expr = (Expr *) DpMultiMapMutator((Node *) te->expr, &map);
			te->resorigtbl = InvalidOid;
			te->resorigcol = 0;
			tlist = lappend(tlist, te);
		}
		q->targetList = tlist;
	}
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = u;
	rte->eref = makeAlias("dp_sets", colnames);
	rte->inFromCl = true;
	q->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)), DpMultiMapMutator(q->havingQual, &map));
	((RangeTblRef *) linitial(q->jointree->fromlist))->rtindex = 1;
	q->rtable = list_make1(rte);
	DpClearPermInfos(q);
	q->havingQual = NULL;
	q->groupClause = NIL;
	q->groupingSets = NIL;
	q->groupDistinct = false;
	q->hasAggs = false;
	q->hasRowSecurity = false;
	DpClearGroupRTE(q);
	return true;
}
