/*
 * guard/joins.c — joins beside a protected table in which each protected
 * row provably meets at most one row of the other side (invariant 6), so
 * that no sensitivity changes: equalities between two columns by their
 * type's equality under a deterministic collation (a released subquery's
 * filter, multi.c; two protected tables joined on their privacy unit,
 * unitjoin.c), and equalities that cover a unique key of a public table
 * (shape.c): every column of one of its unique, non-deferrable, valid
 * indexes without expressions or predicate, each equality an equality of
 * the index's operator family under the index's collation or a
 * deterministic one.
 *
 * Layer guard/, floor releases (docs/development.md): may call guard/'s
 * floors base, fences, reads, rows and releases, the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/genam.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_index.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "guard/floor_releases.h"

/*
 * True if conjunct c is "<column at rti_a> = <column at rti_b>" (either way
 * round) of one type, by that type's default equality, under no collation or
 * a deterministic one: rows meet only on equal values (a multi-release filter
 * or a join on the privacy unit, multi.c and unitjoin.c).  Sets *a and *b.
 */
bool
DpEquatedColumns(Node *c, int rti_a, int rti_b, Var **a, Var **b)
{
	OpExpr	   *op = (OpExpr *) c;
	Var		   *x;
	Var		   *y;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2)
		return false;
	x = DpStripVar(linitial(op->args));
	y = DpStripVar(lsecond(op->args));
	if (x == NULL || y == NULL)
		return false;
	if (x->varno == rti_b && y->varno == rti_a)
	{
		Var		   *t = x;

		x = y;
		y = t;
	}
	if (x->varno != rti_a || y->varno != rti_b || x->varattno <= 0 || y->varattno <= 0 ||
		x->vartype != y->vartype || op->opno != lookup_type_cache(x->vartype, TYPECACHE_EQ_OPR)->eq_opr)
		return false;
	if (OidIsValid(op->inputcollid) && !get_collation_isdeterministic(op->inputcollid))
		return false;
	*a = x;
	*b = y;
	return true;
}

/*
 * True if the conjuncts equate column attno of the public table (at pub_rti)
 * with a column of the protected table (at prot_rti) by an equality of
 * opfamily, under collation indcoll or a deterministic one.
 */
static bool
DpKeyColumnJoined(List *quals, int pub_rti, AttrNumber attno, int prot_rti, Oid opfamily, Oid indcoll)
{
	ListCell   *lc;

	foreach(lc, quals)
	{
		OpExpr	   *op = lfirst(lc);
		Var		   *a;
		Var		   *b;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		a = DpStripVar(linitial(op->args));
		b = DpStripVar(lsecond(op->args));
		if (a == NULL || b == NULL)
			continue;
		if (a->varno == prot_rti && b->varno == pub_rti)
		{
			Var		   *t = a;

			a = b;
			b = t;
		}
		if (a->varno != pub_rti || b->varno != prot_rti || a->varattno != attno)
			continue;
		if (get_op_opfamily_strategy(op->opno, opfamily) != BTEqualStrategyNumber)
			continue;
		if (OidIsValid(op->inputcollid) && op->inputcollid != indcoll &&
			!get_collation_isdeterministic(op->inputcollid))
			continue;
		return true;
	}
	return false;
}

/*
 * True if the conjuncts cover every key column of one unique index of the
 * public table that PostgreSQL enforces at once, on plain columns, without a
 * predicate: each protected row then meets at most one public row.
 */
bool
DpJoinedOnUniqueKey(List *quals, int pub_rti, Oid pub_relid, int prot_rti)
{
	Relation	rel = table_open(pub_relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		unique = false;

	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = idx->rd_index;
		bool		covered = form->indisunique && form->indimmediate && form->indisvalid &&
			form->indislive && form->indnkeyatts > 0 &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indexprs, NULL);

		for (int k = 0; covered && k < form->indnkeyatts; k++)
			covered = form->indkey.values[k] > 0 &&
				DpKeyColumnJoined(quals, pub_rti, form->indkey.values[k], prot_rti,
								  idx->rd_opfamily[k], idx->rd_indcollation[k]);
		index_close(idx, AccessShareLock);
		if (covered)
		{
			unique = true;
			break;
		}
	}
	table_close(rel, AccessShareLock);
	return unique;
}
