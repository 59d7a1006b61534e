/*
 * guard/unitkeys.c — GROUP BY keys that give every privacy unit a group of
 * its own are refused before anything is charged.
 *
 * Partition selection (groups.c) releases a group only when its noisy count
 * of units reaches a threshold that a single unit reaches with probability
 * at most delta.  A GROUP BY on the privacy unit — or on a key that takes a
 * different value for every unit — makes every group a single unit: no group
 * can ever be released, yet the query would be charged.  Such keys are:
 *   - the unit column of a table with a privacy unit;
 *   - on any protected table, columns that cover a unique index (without
 *     predicate or expressions, every column NOT NULL or NULLS NOT
 *     DISTINCT): every group is one row, so one unit;
 *   - one-to-one images of those: binary relabelling, COLLATE, widening
 *     casts, casts between dates and times, the key window (keys.c),
 *     rounding of an integer, adding or subtracting a constant and the
 *     domain read of an integer (bounds.c);
 *   - a public table's column that an inner join or the WHERE clause equates
 *     with such a column.
 * dp_histogram(key, mech) on such a key is refused alike (its keys go
 * through partition selection).  GROUP BY on keys the DBA declared public is
 * not: every declared key is released with its noise, without partition
 * selection.  count(DISTINCT <unit>) counts the units of coarser groups.
 *
 * Layer guard/, floor releases (docs/development.md): may call guard/'s
 * floors base, fences, reads, rows and releases, the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "aggregates.h"
#include "guard/floor_releases.h"
#include "ledger.h"

/* Is type an integer type (rounding it changes nothing)? */
static bool
DpIntegerType(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/* node without the widening casts bounds.c puts on the operands of a mixed total operator. */
static Node *
DpStripWiden(Node *node)
{
	while (IsA(node, FuncExpr) && list_length(((FuncExpr *) node)->args) == 1 &&
		   DpIsWideningCast(((FuncExpr *) node)->funcid))
		node = linitial(((FuncExpr *) node)->args);
	return node;
}

/*
 * The column under a one-to-one image (see the file comment), or NULL.
 * *rounds is set when a rounding function was passed: the column must then
 * be an integer.
 */
static Var *
DpOneToOneColumn(Node *node, bool *rounds)
{
	while (node != NULL)
	{
		if (IsA(node, Var))
			return ((Var *) node)->varlevelsup == 0 && ((Var *) node)->varattno > 0 ? (Var *) node : NULL;
		if (IsA(node, RelabelType))
			node = (Node *) ((RelabelType *) node)->arg;
		else if (IsA(node, CollateExpr))
			node = (Node *) ((CollateExpr *) node)->arg;
		else if (IsA(node, OpExpr))
		{
			/* x + c, x - c, c + x, c - x, -x (bounds.c admits them only where they cannot overflow) */
			OpExpr	   *op = (OpExpr *) node;
			char	   *name = get_opname(op->opno);
			Node	   *arg;

			if (name == NULL || (strcmp(name, "+") != 0 && strcmp(name, "-") != 0))
				return NULL;
			if (list_length(op->args) == 1)
				arg = linitial(op->args);
			else if (IsA(lsecond(op->args), Const) && !((Const *) lsecond(op->args))->constisnull)
				arg = linitial(op->args);
			else if (IsA(linitial(op->args), Const) && !((Const *) linitial(op->args))->constisnull)
				arg = lsecond(op->args);
			else
				return NULL;
			/* exact in integers and numerics; a float sum rounds */
			if (!DpIntegerType(op->opresulttype) && op->opresulttype != NUMERICOID)
				*rounds = true;
			node = arg;
		}
		else if (IsA(node, FuncExpr) && list_length(((FuncExpr *) node)->args) >= 1)
		{
			FuncExpr   *f = (FuncExpr *) node;

			if (DpTotalKindOf(f->funcid) == DP_TOTAL_ADD || DpTotalKindOf(f->funcid) == DP_TOTAL_SUB ||
				DpTotalKindOf(f->funcid) == DP_TOTAL_NEG)
			{
				/* the same as an operator, through dp_pg's total operators (bounds.c, total.c) */
				Node	   *arg;

				if (list_length(f->args) == 1)
					arg = linitial(f->args);
				else if (IsA(DpStripWiden(lsecond(f->args)), Const))
					arg = linitial(f->args);
				else if (IsA(DpStripWiden(linitial(f->args)), Const))
					arg = lsecond(f->args);
				else
					return NULL;
				if (!DpIntegerType(f->funcresulttype) && f->funcresulttype != NUMERICOID)
					*rounds = true;
				node = arg;
				continue;
			}
			if (DpIsDomainRead(f->funcid))
			{
				/* a column read through its domain (bounds.c): a clamp, and a rounding unless integer */
				if (!DpIntegerType(f->funcresulttype))
					*rounds = true;
				node = linitial(f->args);
				continue;
			}
			switch (f->funcid)
			{
				case F_TRIM_SCALE:	/* the canonical form of a key (bounds.c) */
					break;
				case F_DATE_TIMESTAMP:
				case F_DATE_TIMESTAMPTZ:
				case F_TIMESTAMP_TIMESTAMPTZ:
				case F_TIMESTAMPTZ_TIMESTAMP:
					break;
				case F_FLOOR_NUMERIC:
				case F_FLOOR_FLOAT8:
				case F_CEIL_NUMERIC:
				case F_CEIL_FLOAT8:
				case F_CEILING_NUMERIC:
				case F_CEILING_FLOAT8:
				case F_ROUND_NUMERIC:
				case F_ROUND_FLOAT8:
				case F_TRUNC_NUMERIC:
				case F_TRUNC_FLOAT8:
				case F_ROUND_NUMERIC_INT4:
				case F_TRUNC_NUMERIC_INT4:
					*rounds = true;
					break;
				default:
					if (!DpIsWideningCast(f->funcid) && !DpIsKeyWindowCall(node))
						return NULL;
					break;
			}
			node = linitial(f->args);
		}
		else
			return NULL;
	}
	return NULL;
}

/* Append the conjuncts that equate columns: WHERE and the inner joins' ON clauses. */
static void
DpEqualities(Node *node, List **quals)
{
	Node	   *q = NULL;

	if (node == NULL)
		return;
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			DpEqualities(lfirst(lc), quals);
		q = ((FromExpr *) node)->quals;
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;

		DpEqualities(j->larg, quals);
		DpEqualities(j->rarg, quals);
		if (j->jointype == JOIN_INNER)
			q = j->quals;
	}
	if (q != NULL && IsA(q, BoolExpr) && ((BoolExpr *) q)->boolop == AND_EXPR)
		*quals = list_concat(*quals, ((BoolExpr *) q)->args);
	else if (q != NULL)
		*quals = lappend(*quals, q);
}

/*
 * The column of the protected table (range-table entry prot_rti) that key is
 * a one-to-one image of, directly or through an equality with a public
 * table's column; 0 if none.
 */
static AttrNumber
DpKeyUnitColumn(Node *key, List *quals, int prot_rti)
{
	bool		rounds = false;
	Var		   *v = DpOneToOneColumn(key, &rounds);
	ListCell   *lc;

	if (v == NULL || (rounds && !DpIntegerType(v->vartype)))
		return 0;
	if (v->varno == prot_rti)
		return v->varattno;
	/* a public table's column equated with a protected column */
	foreach(lc, quals)
	{
		OpExpr	   *op = lfirst(lc);
		Var		   *a;
		Var		   *b;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2 || !op_mergejoinable(op->opno, exprType(linitial(op->args))))
			continue;
		rounds = false;
		a = DpOneToOneColumn(linitial(op->args), &rounds);
		b = DpOneToOneColumn(lsecond(op->args), &rounds);
		if (a == NULL || b == NULL || rounds)
			continue;
		if (a->varno == v->varno && a->varattno == v->varattno && b->varno == prot_rti)
			return b->varattno;
		if (b->varno == v->varno && b->varattno == v->varattno && a->varno == prot_rti)
			return a->varattno;
	}
	return 0;
}

/* True if the columns cols of relid cover a unique index whose groups are single rows. */
static bool
DpCoversUniqueIndex(Oid relid, Bitmapset *cols)
{
	Relation	rel = table_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	TupleDesc	desc = RelationGetDescr(rel);
	ListCell   *lc;
	bool		covered = false;

	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = idx->rd_index;
		bool		ok = form->indisunique && form->indisvalid && form->indnkeyatts > 0 &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indexprs, NULL);

		for (int k = 0; ok && k < form->indnkeyatts; k++)
		{
			AttrNumber	a = form->indkey.values[k];

			/* NULLs of a unique column share one group, unless they are not distinct */
			ok = a > 0 && bms_is_member(a, cols) &&
				(TupleDescAttr(desc, a - 1)->attnotnull || form->indnullsnotdistinct);
		}
		index_close(idx, AccessShareLock);
		if (ok)
		{
			covered = true;
			break;
		}
	}
	table_close(rel, AccessShareLock);
	return covered;
}

/* ERROR 42501 before the charge: every group of this query is a single unit. */
static void
DpRefuseSingleUnitGroups(DpProtected *p, const char *what)
{
	const char *unit = p->has_unit ? NameStr(p->unit) : NULL;
	char	   *rule = psprintf("%s gives every %s a group of its own", what, unit ? "privacy unit" : "row");

	DpLedgerNoteRefusal(rule, ERRCODE_INSUFFICIENT_PRIVILEGE);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("dp_pg: %s", rule),
			 errdetail("Partition selection releases only groups that enough %s share, so no group of this query "
					   "could be released; it is not run and nothing is charged.",
					   unit ? "units" : "rows (persons)"),
			 unit ?
			 errhint("Group by a coarser key (a region, width_bucket(), date_trunc()), or count persons with "
					 "count(DISTINCT %s).", unit) :
			 errhint("Group by a coarser key (a region, width_bucket(), date_trunc()); count(*) counts persons.")));
}

/* True if the protected columns cols give every unit (or row) of p a group of its own. */
static bool
DpSingleUnitColumns(DpProtected *p, Bitmapset *cols)
{
	if (p->has_unit)
	{
		AttrNumber	unit = get_attnum(p->relid, NameStr(p->unit));

		if (unit != InvalidAttrNumber && bms_is_member(unit, cols))
			return true;
	}
	return !bms_is_empty(cols) && DpCoversUniqueIndex(p->relid, cols);
}

/* What the walk over a query's dp_histogram calls knows. */
typedef struct DpUnitKeysContext
{
	DpProtected *p;
	List	   *quals;
	int			prot_rti;
} DpUnitKeysContext;

/* Walker: ERROR for a dp_histogram(key, mech) whose key gives every unit a key of its own. */
static bool
DpHistogramKeysWalker(Node *node, DpUnitKeysContext *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref) && DpKindOfAggregate(((Aggref *) node)->aggfnoid) == &dp_histogram_keys_kind)
	{
		Aggref	   *a = (Aggref *) node;
		AttrNumber	col = DpKeyUnitColumn((Node *) linitial_node(TargetEntry, a->args)->expr, cxt->quals, cxt->prot_rti);

		if (col != 0 && DpSingleUnitColumns(cxt->p, bms_make_singleton(col)))
			DpRefuseSingleUnitGroups(cxt->p, "dp_histogram(key, mechanism) on this key");
		return false;
	}
	if (IsA(node, Query))
		return false;
	return expression_tree_walker(node, DpHistogramKeysWalker, cxt);
}

/*
 * ERROR before the charge if every group of validated query q (protected
 * table p at range-table entry prot_rti) would be a single unit (see the
 * file comment).
 */
void
DpRefuseUnitGroups(Query *q, DpProtected *p, int prot_rti)
{
	DpUnitKeysContext cxt = {p, NIL, prot_rti};
	ListCell   *lc;

	DpEqualities((Node *) q->jointree, &cxt.quals);
	(void) DpHistogramKeysWalker((Node *) q->targetList, &cxt);
	(void) DpHistogramKeysWalker(q->havingQual, &cxt);
	if (q->groupClause != NIL && list_length(q->groupClause) <= INDEX_MAX_KEYS)
	{
		ArrayType  *arrs[INDEX_MAX_KEYS];
		Bitmapset  *cols = NULL;

		/* declared public keys are released without partition selection */
		if (DpGroupPublicKeys(q, p->relid, prot_rti, arrs))
			return;
		foreach(lc, q->groupClause)
		{
			Node	   *key = (Node *) get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc), q->targetList);
			AttrNumber	col = DpKeyUnitColumn(key, cxt.quals, prot_rti);

			if (col != 0)
				cols = bms_add_member(cols, col);
		}
		if (DpSingleUnitColumns(p, cols))
			DpRefuseSingleUnitGroups(p, "this GROUP BY");
	}
}
