/*
 * guard/unitjoin.c — two protected tables joined on their shared privacy unit.
 *
 * Revenue by customer segment joins the orders (a privacy unit customer_id,
 * many rows per person) to the customers (one row per person: a unit
 * customer_id of its own, or no unit and customer_id a unique key):
 *
 *   SELECT c.segment, sum(o.amount) FROM orders o JOIN customers c USING (customer_id) GROUP BY c.segment
 *
 * Such a join is one DP level whose rows are the joined rows, bounded per
 * unit like the rows of one table (units.c): the unit of a joined row is the
 * unit column of the first of the two tables, which the join makes equal to
 * the other's.
 *
 * Why the guarantee stays per person.  Neighbouring databases differ by all
 * the rows of one unit u in every protected table.  The join condition
 * equates the two unit columns, so a joined row is made of rows of one unit
 * only: removing u removes exactly the joined rows of u (its rows in either
 * table meet nobody else's) and changes no other unit's joined rows; a unit
 * in one table only has no joined row (an inner join), or, on the preserved
 * side of a LEFT JOIN, joined rows of its own unit with NULLs for the other
 * table.  The bounding then treats the joined rows as one table with a
 * privacy unit: at most g cells and r rows' worth per cell for each unit,
 * whatever it holds, so each release moves by at most the bounded
 * sensitivity.  Duplicate amplification (a unit's n rows in one table each
 * meeting its m rows in the other: n m joined rows) is what the bound cuts:
 * a unit never contributes more than g cells of r rows.
 *
 * Which bounds.  Each table declares (g, r) for its own rows; a table without
 * a unit counts as g = r = 1 (its rows are persons, joined on a unique key).
 * A unit within both declarations has at most r1 r2 joined rows in a cell and
 * reaches at most g1 g2 cells, so the joined rows are bounded by the
 * products: a table of one row per person (g = r = 1, the usual customers
 * table) leaves the other's bounds as they are.  The bound is applied to the
 * joined rows, not assumed: a unit beyond it is cut, as on one table.
 *
 * What is refused (42501): a join not on an equality of the two unit columns
 * (or of a unit column and a single-column unique key of a table without a
 * unit) of the same type, by its type's default equality, under a
 * deterministic collation (otherwise rows of two units could meet: 'A' and
 * 'a' under a case-insensitive collation); two tables without a unit; a table
 * joined to itself; a third protected table; outer joins other than a LEFT
 * JOIN whose preserved side is the first table (its unit column then never
 * reads NULL for a row of another unit).
 *
 * Layer guard/, floor releases (docs/development.md): may call guard/'s
 * floors base, fences, reads, rows and releases, the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "guard/floor_releases.h"
#include "guc.h"

/*
 * True if column attno of table p may stand for its person in a join: its
 * unit column, or, without a unit, a single-column unique key.
 */
static bool
DpUnitJoinIdentity(DpProtected *p, AttrNumber attno, Node *conjunct, int rti, int other_rti)
{
	if (p->has_unit)
		return get_attnum(p->relid, NameStr(p->unit)) == attno;
	/* the conjunct alone covers a unique key: a single-column one */
	return DpJoinedOnUniqueKey(list_make1(conjunct), rti, p->relid, other_rti);
}

/*
 * Check the join of the two protected tables of a DP level (shape->prot at
 * shape->prot_rti and the one at shape->partner_rti) against the conjuncts of
 * its join tree (see the file comment); ERROR 42501 otherwise.  Sets
 * shape->partner and shape->unit_attno.
 */
void
DpUnitJoinCheck(DpShape *shape, List *quals, List *prot)
{
	DpProtected *p1 = shape->prot;
	ListCell   *lc;

	shape->partner = DpFindProtected(prot, shape->partner_relid);
	if (shape->partner == NULL)
		DpGuardRefuse("a dp query reads exactly one protected table",
					  "Joining protected tables could multiply a person's rows.");
	if (!p1->has_unit && !shape->partner->has_unit)
		DpGuardRefuse("two protected tables are joined only on a shared privacy unit",
					  "Neither table declares a privacy unit: their rows cannot be tied to one person (dp_pg.protect(table, privacy_unit => ...)).");
	foreach(lc, quals)
	{
		Var		   *a;
		Var		   *b;

		if (!DpEquatedColumns(lfirst(lc), shape->prot_rti, shape->partner_rti, &a, &b))
			continue;
		if (!DpUnitJoinIdentity(p1, a->varattno, lfirst(lc), shape->prot_rti, shape->partner_rti) ||
			!DpUnitJoinIdentity(shape->partner, b->varattno, lfirst(lc), shape->partner_rti, shape->prot_rti))
			continue;
		shape->unit_attno = a->varattno;
		return;
	}
	DpGuardRefuse("two protected tables are joined only on their shared privacy unit",
				  psprintf("Join \"%s\" and \"%s\" with an equality of their privacy unit columns (or of one's unit and the "
						   "other's single-column unique key, for a table of one row per person), of the same type and a "
						   "deterministic collation: other joins could pair the rows of different persons.",
						   get_rel_name(p1->relid), get_rel_name(shape->partner->relid)));
}

/*
 * The bound of the joined rows of a checked unit join: the unit column of the
 * first table, g = g1 g2 cells and r = r1 r2 rows per cell (a table without a
 * unit counting 1 and 1), within dp_pg's limits.
 */
void
DpUnitJoinBound(DpShape *shape, DpUnitBound *ub)
{
	int64		g1 = shape->prot->has_unit ? shape->prot->max_groups : 1;
	int64		r1 = shape->prot->has_unit ? shape->prot->max_rows : 1;
	int64		g2 = shape->partner->has_unit ? shape->partner->max_groups : 1;
	int64		r2 = shape->partner->has_unit ? shape->partner->max_rows : 1;

	ub->attno = shape->unit_attno;
	ub->groups = (int32) Min(g1 * g2, DP_MAX_UNIT_GROUPS);
	ub->rows = (int32) Min(r1 * r2, Min((int64) PG_INT32_MAX, DP_MAX_UNIT_ROWS));
}

/*
 * The number of protected reads a unit join adds to a query (see guard.c):
 * 1 if a query level (q or a FROM-subquery it wraps) reads two different
 * protected tables side by side, else 0.  The shape check decides.
 */
int
DpUnitJoinReads(Query *q, List *prot)
{
	ListCell   *lc;
	Oid			first = InvalidOid;
	int			n = 0;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		if (r->rtekind == RTE_RELATION && DpFindProtected(prot, r->relid) != NULL)
		{
			if (n == 1 && r->relid == first)
				return 0;		/* a table joined to itself */
			first = r->relid;
			n++;
		}
		else if (r->rtekind == RTE_SUBQUERY && r->subquery != NULL && !r->lateral &&
				 DpReadsProtected(r->subquery) == 2 && list_length(q->rtable) <= 2)
			return DpUnitJoinReads(r->subquery, prot);
	}
	return n == 2 ? 1 : 0;
}

/* The one protected table q reads at its own level (its range table), or NULL; *rti its index. */
static DpProtected *
DpLevelProtected(Query *q, List *prot, int *rti)
{
	DpProtected *found = NULL;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);
		DpProtected *p;

		i++;
		if (r->rtekind == RTE_RELATION && (p = DpFindProtected(prot, r->relid)) != NULL)
		{
			if (found != NULL)
				return NULL;
			found = p;
			*rti = i;
		}
	}
	return found;
}

/* Name of table p, schema-qualified. */
static const char *
DpTableName(DpProtected *p)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(p->relid)), get_rel_name(p->relid));
}

/*
 * The hint of a query refused for reading a second protected table in a
 * WHERE subquery, when the join on the privacy unit is the accepted form of
 * it: "WHERE person_id IN (SELECT id FROM people WHERE age > 30)" on visits
 * is "visits JOIN people ON people.id = visits.person_id WHERE age > 30".
 * NULL when the query is not such a filter (or neither table has a unit).
 */
const char *
DpUnitJoinHint(Query *q, List *prot)
{
	int			rti = 0;
	DpProtected *a = DpLevelProtected(q, prot, &rti);
	List	   *conj;
	ListCell   *lc;

	if (a == NULL || q->jointree == NULL || q->jointree->quals == NULL)
		return NULL;
	conj = make_ands_implicit((Expr *) copyObject(q->jointree->quals));
	foreach(lc, conj)
	{
		SubLink    *s = lfirst(lc);
		Query	   *sub;
		int			srti = 0;
		DpProtected *b;
		OpExpr	   *op;
		Var		   *va;
		TargetEntry *te;
		Var		   *vb;
		const char *an;
		const char *bn;

		if (!IsA(s, SubLink) || !IsA(s->subselect, Query) ||
			(s->subLinkType != EXISTS_SUBLINK && s->subLinkType != ANY_SUBLINK))
			continue;
		sub = (Query *) s->subselect;
		b = DpLevelProtected(sub, prot, &srti);
		if (b == NULL || b->relid == a->relid || (!a->has_unit && !b->has_unit))
			continue;
		an = DpTableName(a);
		bn = DpTableName(b);
		/* column IN (SELECT column FROM b ...): the join on those two columns */
		op = s->testexpr != NULL && IsA(s->testexpr, OpExpr) ? (OpExpr *) s->testexpr : NULL;
		te = sub->targetList != NIL ? linitial_node(TargetEntry, sub->targetList) : NULL;
		va = op != NULL && list_length(op->args) == 2 ? (Var *) strip_implicit_coercions(linitial(op->args)) : NULL;
		vb = te != NULL ? (Var *) strip_implicit_coercions((Node *) te->expr) : NULL;
		if (s->subLinkType == ANY_SUBLINK && op != NULL &&
			(get_opname(op->opno) == NULL || strcmp(get_opname(op->opno), "=") != 0))
			continue;			/* (x < ANY (...) is no join on the unit) */
		if (s->subLinkType == ANY_SUBLINK && va != NULL && IsA(va, Var) && va->varlevelsup == 0 && va->varno == rti &&
			va->varattno > 0 && vb != NULL && IsA(vb, Var) && vb->varlevelsup == 0 && vb->varno == srti && vb->varattno > 0)
			return psprintf("Join the two tables on the privacy unit instead of a subquery: "
							"... FROM %s JOIN %s ON %s.%s = %s.%s WHERE <the subquery's conditions> (a join pairs "
							"each row with every matching row) — two protected tables joined on their shared "
							"privacy unit are one release "
							"(analyst's guide, \"Queries on protected tables\").",
							an, bn, quote_identifier(get_rel_name(b->relid)),
							quote_identifier(get_attname(b->relid, vb->varattno, false)),
							quote_identifier(get_rel_name(a->relid)),
							quote_identifier(get_attname(a->relid, va->varattno, false)));
		return psprintf("Join the two tables on the privacy unit instead of a subquery: "
						"... FROM %s JOIN %s ON <their privacy unit columns> WHERE <the subquery's conditions> (a join "
						"pairs each row with every matching row) — two protected tables joined on their shared "
						"privacy unit are one release "
						"(analyst's guide, \"Queries on protected tables\").", an, bn);
	}
	return NULL;
}
