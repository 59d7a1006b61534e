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
 * Rows are evaluated only by total row expressions (rowexpr.c checks the
 * WHERE and JOIN clauses, FILTER clauses and dp aggregate values).  Bounds,
 * bins and mechanisms may be constants, bound parameters and stable
 * functions of those; callsite.c evaluates them once and the plan carries
 * the values.
 *
 * Public tables (invariant 6): a plain table without inheritance children or
 * row-level security, that no analyst owns or can write (INSERT, UPDATE,
 * DELETE, TRUNCATE, TRIGGER, column-level INSERT / UPDATE, or the owner's
 * privileges), joined through equalities that cover a unique key of it
 * (joins.c): each protected row meets at most one of its rows, so no
 * sensitivity changes.
 *
 * Layer guard/, floor releases (docs/development.md): may call guard/'s
 * floors base, fences, reads, rows and releases, the aggregates, the release
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
#include "guard/floor_releases.h"
#include "ledger.h"

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

/* The statement: a plain SELECT with a FROM clause, without WITH, set operations, grouping sets or row locks. */
static void
DpShapeStatement(Query *q)
{
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
}

/*
 * The tables: one protected table (target; another protected one only as
 * the partner of a join on the unit, unitjoin.c), released subqueries, and
 * besides them only public tables and the joins between them.  Sets the
 * shape's entries and the entries whose columns row expressions may read.
 */
static void
DpShapeTables(Query *q, DpProtected *target, DpShape *shape, DpReleaseCheck *cxt)
{
	int			rti = 0;
	List	   *analysts = NIL;
	bool		analysts_known = false;
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		rti++;
		if (!DpRteKindReadsRows(r->rtekind))
			continue;
		if (DpMultiIsReleased(r))
		{
			/* released rows of another release, joined on what they keep (multi.c) */
			cxt->row.rtis = bms_add_member(cxt->row.rtis, rti);
			continue;
		}
		if (r->rtekind != RTE_RELATION)
			DpGuardRefuse("a dp query reads one protected table, optionally joined to public tables",
						  "Subqueries in FROM, functions and VALUES are not allowed beside a protected table.");
		cxt->row.rtis = bms_add_member(cxt->row.rtis, rti);
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
}

/*
 * The joins: the row predicates of WHERE and every join (constants computed
 * now), a partner protected table only on the shared unit, each released
 * subquery joined on every column it keeps, each public table on a unique
 * key (joins.c).
 */
static void
DpShapeJoins(Query *q, DpShape *shape, DpReleaseCheck *cxt)
{
	List	   *quals = NIL;
	int			rti = 0;
	ListCell   *lc;

	cxt->row.where = "the WHERE or JOIN clause";
	DpCheckJoinTree((Node *) q->jointree, &quals, &cxt->row, shape->prot_rti);
	if (shape->partner_rti != 0)
		DpUnitJoinCheck(shape, quals, DpProtectedTables());
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
}

/*
 * GROUP BY keys: columns of the tables, or generalising expressions of one
 * column (keys.c: date_trunc, extract, width_bucket, ...), of a type with
 * an ordering.  An expression key is rewritten to read its column through
 * the key window, everywhere it appears outside the dp aggregates (each
 * aggregate's arguments are row expressions, rewritten alike when checked).
 */
static void
DpShapeGroupKeys(Query *q, DpReleaseCheck *cxt)
{
	ListCell   *lc;

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

			if (v->varlevelsup != 0 || v->varattno <= 0 || !bms_is_member(v->varno, cxt->row.rtis))
				DpGuardRefuse("GROUP BY keys must be columns of the tables",
							  "Group by a column or a generalising expression of one (date_trunc, extract, width_bucket, floor, ...).");
			cxt->group_atts = bms_add_member(cxt->group_atts, DP_GROUP_KEY(v->varno, v->varattno));
		}
		else
		{
			Node	   *pair[2];

			pair[0] = key;
			/* generalising functions, casts and COLLATE of a column (keys.c); arithmetic and the rest: bounds.c */
			if ((DpIsGeneralising(key) || IsA(key, FuncExpr) || IsA(key, CollateExpr) || IsA(key, RelabelType)) &&
				!DpIsBoundedExpression(key))
				pair[1] = DpGeneralise(key, cxt->row.rtis, "a GROUP BY key");
			else
			{
				/* arithmetic, a comparison, CASE ...: a total row expression, released in canonical form */
				cxt->row.where = "a GROUP BY key";
				cxt->row.key = true;
				pair[1] = DpCanonicalKey(DpRowExpr(key, &cxt->row));
				cxt->row.key = false;
			}
			q->targetList = (List *) DpReplaceKeyMutator((Node *) q->targetList, pair);
			q->havingQual = DpReplaceKeyMutator(q->havingQual, pair);
			cxt->group_exprs = lappend(cxt->group_exprs, pair[1]);
		}
	}
}

/* The bind-time checks of generalising expressions with bound parameters (keys.c), added to WHERE. */
static void
DpShapeKeyChecks(Query *q)
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

/* Validate an analyst's (or a bounded trusted) query on target (see guard.h). */
void
DpShapeValidate(Query *q, DpProtected *target, DpShape *shape)
{
	DpReleaseCheck cxt;

	memset(shape, 0, sizeof(DpShape));
	memset(&cxt, 0, sizeof(cxt));
	(void) DpTakeKeyChecks();	/* none left over from a query refused before its end */
	DpShapeStatement(q);

	/* references to grouped expressions (18+) and join columns (USING, NATURAL) become the tables' own columns */
	DpFlattenGroupVars(q);
	q->targetList = (List *) DpFlattenJoinAliasVars(q, (Node *) q->targetList);
	q->havingQual = DpFlattenJoinAliasVars(q, q->havingQual);
	q->jointree = (FromExpr *) DpFlattenJoinAliasVars(q, (Node *) q->jointree);

	DpShapeTables(q, target, shape, &cxt);
	shape->prot = target;
	cxt.row.rtable = q->rtable;
	cxt.prot = target;
	cxt.prot_rti = shape->prot_rti;
	cxt.browsing = !q->hasAggs && q->groupClause == NIL && q->groupingSets == NIL;
	DpShapeJoins(q, shape, &cxt);
	DpShapeGroupKeys(q, &cxt);

	/* the post-processing parts act on released values only */
	(void) DpCheckReleasedWalker((Node *) q->targetList, &cxt);
	(void) DpCheckReleasedWalker(q->havingQual, &cxt);
	if (contain_var_clause(q->limitCount) || contain_var_clause(q->limitOffset))
		DpGuardRefuse("LIMIT and OFFSET must be constants", "They may not depend on table columns.");
	DpShapeKeyChecks(q);
	if (cxt.ndp == 0 && q->groupClause == NIL)
		DpGuardRefuseHint("a query on a protected table must release only dp aggregates", "Raw rows are never released.",
						  cxt.browsing ? DpBrowsingHint(target) :
						  "Select dp aggregates and GROUP BY keys: SELECT region, dp_count(*) FROM t GROUP BY region.");
	shape->ndp = cxt.ndp;
}
