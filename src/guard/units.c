/*
 * guard/units.c — per-unit contribution bounding (privacy units).
 *
 * A dp query on a table with a privacy unit (dp_pg.protect(tbl, unit, g, r),
 * or dp_pg.privacy_unit for a trusted role) is rewritten, before planning,
 * into two levels:
 *
 *   SELECT <keys>, <bounded dp aggregates over the contributions>
 *   FROM (SELECT unit, <cell>, <one contribution per dp aggregate>,
 *                row_number() OVER (PARTITION BY unit
 *                                   ORDER BY dp_pg.unit_priority()) AS dp_rank
 *         FROM <the query's FROM and WHERE>
 *         GROUP BY unit, <cell>) dp_units
 *   WHERE dp_rank <= g
 *   GROUP BY <keys>
 *
 * The cell is the GROUP BY key, or for a lone dp_histogram its key (the bin
 * of x for the equal-width form); without either there is one cell and no
 * ranking.  Per (unit, cell) the inner level computes, exactly:
 *   count:      least(count, r)
 *   sum:        least(greatest(sum(clamp(x, lo, hi)), k*lo), k*hi),
 *               k = least(count(x), r): the values it adds, at most r
 *   histogram:  least(count, r) as the weight of the cell's key
 * and the ranking keeps a uniformly random set of at most g cells per unit
 * (priorities from OpenSSL).  Where every inner aggregate has an accumulator
 * in dp_pg.unit_cells (all but a numeric sum), the inner level is instead
 * one aggregation by unit that keeps the unit's g cells while it aggregates
 * (DpUnitCellsQuery, src/aggregates/agg_units.c): the same cells and values, without
 * the sort of every (unit, cell).  The outer dp aggregates are dp_pg.bounded_*,
 * which clamp each contribution again (to [0, r], or for sums to
 * [least(0, r*lo), greatest(0, r*hi)], the hull of every [k*lo, k*hi]) and
 * plan their noise for sensitivity r (r*max(|lo|, |hi|) for sums) per cell
 * with the mechanism split over g cells (callsite.c).  A sum's unit is thus
 * clamped to what its own kept values can span, never raised to r*lo: the
 * released sum is the bounded truth plus noise, also when lo > 0.  So adding or removing one unit changes at most g released
 * values, each by at most the per-cell bound, whatever the unit's rows.
 *
 * Parallel plans: the inner GROUP BY is finalized (partial states of the
 * workers combined) before the ranking and the outer aggregates, so a unit
 * whose rows are read by several workers is still one unit.  Memory: the
 * inner level is PostgreSQL's hash aggregation (one small group per unit and
 * cell, spilled to disk beyond work_mem) and a sort for the ranking; with
 * dp_pg.unit_cells, one small group per unit (at most g cells).
 *
 * Layer guard/, floor releases (docs/development.md): may call guard/'s
 * floors base, fences, reads, rows and releases, the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parse_node.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "lib/stringinfo.h"
#include "access/stratnum.h"

#include "aggregates.h"
#include "release.h"
#include "guard/floor_releases.h"
#include "ledger.h"
#include "guc.h"


/* The bounded form of one dp aggregate of the query. */
typedef struct DpBoundedAgg
{
	Aggref	   *orig;			/* the user's call */
	const DpAggKind *kind;
	Node	   *replacement;	/* the outer-level dp_pg.bounded_* call */
} DpBoundedAgg;

/*
 * A bounded sum's inner contribution, least(greatest(sum(clamp(x, lo, hi)),
 * k*lo), k*hi) with k = least(count(x), r): its two inner aggregates, which
 * dp_pg.unit_cells computes as one accumulator (agg_units.c, DP_ACC_FCLAMP).
 */
typedef struct DpUnitSum
{
	AttrNumber	col;			/* the contribution's column of q1 */
	char		acc;			/* unit_cells' letter: F, I or L */
	Aggref	   *sum;			/* sum(least(greatest(x, lo), hi)) FILTER (f AND x <> NaN / x IS NOT NULL) */
	Aggref	   *count;			/* count(x), the same FILTER */
	Expr	   *x;
	Expr	   *lo;
	Expr	   *hi;
	Expr	   *filter;			/* f: the user's FILTER, or NULL */
} DpUnitSum;

/* Context of the rewrite. */
typedef struct DpUnitRewrite
{
	Query	   *q1;				/* the inner (per unit and cell) query */
	int			prot_rti;
	const DpUnitBound *ub;
	ParseState *pstate;
	List	   *aggs;			/* DpBoundedAgg * */
	int			nkeys;
	Node	   *keys[INDEX_MAX_KEYS];	/* original GROUP BY keys: Vars, or generalising expressions */
	AttrNumber	keycols[INDEX_MAX_KEYS];	/* their columns in q1 */
	int32		groups;			/* g, or 1 without cells */
	Expr	   *pubkeys_in[INDEX_MAX_KEYS];	/* key = ANY(<declared keys>) added to q1's WHERE, or NULL */
	List	   *unit_sums;		/* DpUnitSum *: the bounded sums' contributions */
	AttrNumber	distinct_col;	/* count(DISTINCT x): x's column in q1 (then q1's rows are (unit, cell, x)) */
} DpUnitRewrite;

/* Collect the dp aggregates of an expression. */
static bool
DpCollectDpAggs(Node *node, List **aggs)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		const DpAggKind *kind = DpKindOfAggregate(((Aggref *) node)->aggfnoid);

		if (kind != NULL)
			*aggs = lappend(*aggs, node);
		return false;
	}
	return expression_tree_walker(node, DpCollectDpAggs, aggs);
}

/* The OID of function schema.name(argtypes), or ERROR (installation incomplete). */
static Oid
DpLookupFunc(const char *schema, const char *name, int nargs, const Oid *argtypes)
{
	List	   *fname = schema ? list_make2(makeString((char *) schema), makeString((char *) name))
		: list_make1(makeString((char *) name));

	return LookupFuncName(fname, nargs, argtypes, false);
}

/* Append a target entry to q1; returns its resno. */
static AttrNumber
DpAddColumn(Query *q1, Expr *expr, const char *name, bool junk)
{
	TargetEntry *te = makeTargetEntry(expr, list_length(q1->targetList) + 1, pstrdup(name), junk);

	q1->targetList = lappend(q1->targetList, te);
	return te->resno;
}

/* Make q1's column resno a GROUP BY (or window) key; returns the clause. */
static SortGroupClause *
DpSortGroupFor(Query *q1, AttrNumber resno, bool need_sort)
{
	TargetEntry *te = list_nth_node(TargetEntry, q1->targetList, resno - 1);
	Oid			type = exprType((Node *) te->expr);
	Oid			sortop;
	Oid			eqop;
	bool		hashable;
	SortGroupClause *sgc = makeNode(SortGroupClause);
	Index		ref = 0;
	ListCell   *lc;

	get_sort_group_operators(type, need_sort, true, false, &sortop, &eqop, NULL, &hashable);
	if (te->ressortgroupref == 0)
	{
		foreach(lc, q1->targetList)
			ref = Max(ref, lfirst_node(TargetEntry, lc)->ressortgroupref);
		te->ressortgroupref = ref + 1;
	}
	sgc->tleSortGroupRef = te->ressortgroupref;
	sgc->eqop = eqop;
	sgc->sortop = sortop;
	sgc->nulls_first = false;
	sgc->hashable = hashable;
	return sgc;
}



static Expr *
DpAggArg(Aggref *a, int i)
{
	return (Expr *) copyObject(list_nth_node(TargetEntry, a->args, i)->expr);
}

/* The mechanism argument of a call, or the default mechanism as a constant. */
static Expr *
DpAggMechanism(Aggref *a, const DpAggKind *kind)
{
	if (kind->mech_argno >= 0)
		return DpAggArg(a, kind->mech_argno);
	return (Expr *) DpMechanismConst(dp_default_mechanism);
}

/* a AND b (either may be NULL). */
static Expr *
DpAnd(Expr *a, Expr *b)
{
	if (a == NULL)
		return b;
	if (b == NULL)
		return a;
	return makeBoolExpr(AND_EXPR, list_make2(a, b), -1);
}

/*
 * key = ANY(bins) with the equality of the key's type (its default hash
 * opclass, the one dp_histogram finds bins with), under the key's collation.
 */
static Expr *
DpKeyInBins(Expr *key, Expr *bins, Oid collid)
{
	Oid			type = exprType((Node *) key);
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_HASH_OPFAMILY | TYPECACHE_EQ_OPR);
	Oid			eqop = InvalidOid;
	ScalarArrayOpExpr *sa;

	if (OidIsValid(tc->hash_opf))
		eqop = get_opfamily_member(tc->hash_opf, tc->hash_opintype, tc->hash_opintype, HTEqualStrategyNumber);
	if (!OidIsValid(eqop))
		eqop = tc->eq_opr;
	if (!OidIsValid(eqop))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify an equality operator for type %s", format_type_be(type))));
	sa = makeNode(ScalarArrayOpExpr);
	sa->opno = eqop;
	sa->opfuncid = InvalidOid;
	sa->hashfuncid = InvalidOid;
	sa->negfuncid = InvalidOid;
	sa->useOr = true;
	sa->inputcollid = collid;
	sa->args = list_make2(key, bins);
	sa->location = -1;
	set_sa_opfuncid(sa);
	return (Expr *) sa;
}

/* CASE WHEN lo <= hi THEN valid ELSE invalid END (lo, hi: the user's bounds). */
static Expr *
DpIfBoundsValid(ParseState *pstate, Expr *lo, Expr *hi, Expr *valid, Expr *invalid)
{
	CaseExpr   *c = makeNode(CaseExpr);
	CaseWhen   *w = makeNode(CaseWhen);

	w->expr = DpOp(pstate, "<=", (Expr *) copyObject(lo), (Expr *) copyObject(hi));
	w->result = valid;
	w->location = -1;
	c->casetype = exprType((Node *) valid);
	c->casecollid = InvalidOid;
	c->arg = NULL;
	c->args = list_make1(w);
	c->defresult = invalid;
	c->location = -1;
	return (Expr *) c;
}

/* True if a's first argument is the privacy unit (count(DISTINCT unit)). */
static bool
DpIsUnitArg(DpUnitRewrite *cxt, Aggref *a)
{
	Var		   *v = DpStripVar((Node *) linitial_node(TargetEntry, a->args)->expr);

	return v != NULL && v->varno == cxt->prot_rti && v->varattno == cxt->ub->attno;
}

/*
 * q1 of a distinct count (grouped by unit, cells and the value, column
 * distinct_col) as the distinct (cell, value) pairs that some unit keeps:
 * each unit keeps a uniformly random set of at most r of its distinct
 * values in each cell (row_number() over the unit's cell in the order of
 * dp_pg.unit_priority(), a fresh secure draw per value: a choice made from
 * the unit's own rows only), and the pairs are then distinct whatever
 * units kept them.  The columns keep their places (the unit's is
 * NULL), so the outer query reads them as before.
 */
static Query *
DpDistinctValues(DpUnitRewrite *cxt, Query *q1, int64 r)
{
	Query	   *q2 = makeNode(Query);
	WindowFunc *wf = makeNode(WindowFunc);
	WindowClause *wc = makeNode(WindowClause);
	RangeTblEntry *sub = makeNode(RangeTblEntry);
	List	   *colnames = NIL;
	AttrNumber	xr;
	AttrNumber	prio;
	ListCell   *lc;

	/* the rank of each value among the unit's values of its cell, in a uniformly random order */
	wf->winfnoid = F_ROW_NUMBER;
	wf->wintype = INT8OID;
	wf->winref = 1;
	wf->location = -1;
	xr = DpAddColumn(q1, (Expr *) wf, "dp_value_rank", false);
	wc->partitionClause = list_truncate(list_copy(q1->groupClause), list_length(q1->groupClause) - 1);
	prio = DpAddColumn(q1, (Expr *) makeFuncExpr(DpLookupFunc("dp_pg", "unit_priority", 0, NULL), INT8OID, NIL,
												 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL),
					   "dp_value_priority", true);
	wc->orderClause = list_make1(DpSortGroupFor(q1, prio, true));
	wc->frameOptions = FRAMEOPTION_DEFAULTS;
	wc->winref = 1;
	q1->windowClause = list_make1(wc);
	q1->hasWindowFuncs = true;

	foreach(lc, q1->targetList)
		if (!lfirst_node(TargetEntry, lc)->resjunk)
			colnames = lappend(colnames, makeString(pstrdup(lfirst_node(TargetEntry, lc)->resname)));
	sub->rtekind = RTE_SUBQUERY;
	sub->subquery = q1;
	sub->eref = makeAlias("dp_unit_values", colnames);
	sub->inFromCl = true;
	q2->commandType = CMD_SELECT;
	q2->querySource = QSRC_ORIGINAL;
	q2->canSetTag = true;
	q2->rtable = list_make1(sub);
	q2->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)),
								(Node *) DpOp(cxt->pstate, "<=", (Expr *) makeVar(1, xr, INT8OID, -1, InvalidOid, 0),
											  (Expr *) DpInt8Const(r)));
	((RangeTblRef *) linitial(q2->jointree->fromlist))->rtindex = 1;
	q2->hasAggs = false;
	foreach(lc, q1->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		Node	   *e = (Node *) te->expr;
		TargetEntry *nte;
		bool		grouped = false;
		ListCell   *g;

		if (te->resjunk)
			continue;
		/* the cells' keys and the value are grouped on; the unit and the ranks are not kept */
		if (te->ressortgroupref != 0)
			foreach(g, q1->groupClause)
				if (lfirst_node(SortGroupClause, g)->tleSortGroupRef == te->ressortgroupref &&
					g != list_head(q1->groupClause))
					grouped = true;
		if (grouped)
			nte = makeTargetEntry((Expr *) makeVar(1, te->resno, exprType(e), exprTypmod(e), exprCollation(e), 0),
								  te->resno, pstrdup(te->resname), false);
		else if (te->resno == 2 || IsA(e, Const))
			nte = makeTargetEntry((Expr *) copyObject(e), te->resno, pstrdup(te->resname), false);
		else
			nte = makeTargetEntry((Expr *) makeNullConst(exprType(e), exprTypmod(e), exprCollation(e)),
								  te->resno, pstrdup(te->resname), false);
		q2->targetList = lappend(q2->targetList, nte);
		if (grouped)
		{
			SortGroupClause *sgc = copyObject(get_sortgroupref_clause(te->ressortgroupref, q1->groupClause));

			nte->ressortgroupref = te->ressortgroupref;
			q2->groupClause = lappend(q2->groupClause, sgc);
		}
	}
	return q2;
}

/* The outer call of a count: dp_pg.bounded_count(q1's column col, 0, r, mechanism, g). */
static Node *
DpBoundedCountCall(DpUnitRewrite *cxt, DpBoundedAgg *ba, AttrNumber col, int64 r)
{
	Oid			argtypes[5] = {INT8OID, INT8OID, INT8OID, DpMechanismType(), INT4OID};

	return (Node *)
		DpMakeAggref(DpLookupFunc("dp_pg", "bounded_count", 5, argtypes), INT8OID,
					 list_make5(makeVar(1, col, INT8OID, -1, InvalidOid, 0),
								DpInt8Const(0), DpInt8Const(r),
								DpAggMechanism(ba->orig, ba->kind), DpInt4Const(cxt->groups)),
					 InvalidOid, NULL, false);
}

/*
 * A distinct count of a value x: q1 is grouped by x too, and keeps at most
 * r of a unit's values per cell (its r least, DpBoundUnits); every distinct
 * kept value of a cell counts 1, a unit adds or removes at most r of them in
 * each of its cells.
 */
static void
DpBoundUnitDistinctCount(DpUnitRewrite *cxt, DpBoundedAgg *ba, Expr *filter, int64 r, char *name)
{
	Query	   *q1 = cxt->q1;
	Aggref	   *a = ba->orig;
	Expr	   *x = DpAggArg(a, 0);
	AttrNumber	col;

	cxt->distinct_col = DpAddColumn(q1, (Expr *) copyObject(x), "dp_value", false);
	q1->groupClause = lappend(q1->groupClause, DpSortGroupFor(q1, cxt->distinct_col, true));
	q1->jointree->quals = (Node *) DpAnd(DpAnd((Expr *) q1->jointree->quals, filter),
										 (Expr *) DpIsNotNull((Expr *) copyObject(x)));
	col = DpAddColumn(q1, (Expr *) DpInt8Const(1), name, false);
	ba->replacement = DpBoundedCountCall(cxt, ba, col, r);
}

/* A count: each unit adds least(its rows, r) to its cell. */
static void
DpBoundUnitCount(DpUnitRewrite *cxt, DpBoundedAgg *ba, Expr *filter, int64 r, char *name, int n)
{
	/* least(count, r): the same as counting r sampled rows of the unit */
	Query	   *q1 = cxt->q1;
	Aggref	   *a = ba->orig;
	const DpAggKind *kind = ba->kind;
	Aggref	   *cnt;
	AttrNumber	col;

	if (kind == &dp_count_star_kind)
		cnt = DpMakeAggref(F_COUNT_, INT8OID, NIL, InvalidOid, filter, true);
	else
		cnt = DpMakeAggref(F_COUNT_ANY, INT8OID, list_make1(DpAggArg(a, 0)), a->inputcollid, filter, false);
	col = DpAddColumn(q1, DpMinMax(IS_LEAST, INT8OID, (Expr *) cnt, (Expr *) DpInt8Const(r)), name, false);
	ba->replacement = DpBoundedCountCall(cxt, ba, col, r);
}

/* A bounded sum: each unit adds its sum of clamped values, clamped to [k*lo, k*hi]. */
static void
DpBoundUnitSum(DpUnitRewrite *cxt, DpBoundedAgg *ba, Expr *filter, int64 r, char *name, int n)
{
	Query	   *q1 = cxt->q1;
	Aggref	   *a = ba->orig;
	const DpAggKind *kind = ba->kind;
	ParseState *pstate = cxt->pstate;
	Oid			mechtype = DpMechanismType();
	Oid			t = linitial_oid(a->aggargtypes);
	Oid			ct = (t == FLOAT8OID || t == NUMERICOID) ? t : INT8OID;	/* contribution / outer type */
	Oid			st;			/* type of sum(t) */
	Expr	   *x = DpAggArg(a, 0);
	Expr	   *lo = DpAggArg(a, 1);
	Expr	   *hi = DpAggArg(a, 2);
	Expr	   *inner;
	Expr	   *sum;
	Expr	   *kvals;
	Expr	   *rlo;
	Expr	   *rhi;
	Expr	   *zero;
	AttrNumber	col;
	Oid			argtypes[5];
	Oid			sumfn;
	DpUnitSum  *us = palloc0(sizeof(DpUnitSum));

	us->acc = t == FLOAT8OID ? 'F' : (t == INT2OID || t == INT4OID) ? 'I' : t == INT8OID ? 'L' : 0;
	us->x = (Expr *) copyObject(x);
	us->lo = (Expr *) copyObject(lo);
	us->hi = (Expr *) copyObject(hi);
	us->filter = (Expr *) copyObject(filter);

	/* the unit's sum of clamped values (NULL and NaN skipped, as dp_sum does) */
	inner = DpMinMax(IS_LEAST, t, DpMinMax(IS_GREATEST, t, x, lo), hi);
	if (t == FLOAT8OID || t == NUMERICOID)
	{
		Expr	   *nan;

		if (t == FLOAT8OID)
			nan = (Expr *) makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
									 Float8GetDatum(get_float8_nan()), false, FLOAT8PASSBYVAL);
		else
			nan = (Expr *) makeConst(NUMERICOID, -1, InvalidOid, -1,
									 DirectFunctionCall3(numeric_in, CStringGetDatum("NaN"),
														 ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)),
									 false, false);
		filter = DpAnd(filter, DpOp(pstate, "<>", DpAggArg(a, 0), nan));
	}
	else
	{
		/* least / greatest skip a NULL: a NULL x would add lo */
		filter = DpAnd(filter, (Expr *) DpIsNotNull(DpAggArg(a, 0)));
	}
	if (t == FLOAT8OID)
		sumfn = DpLookupFunc("dp_pg", "unit_float_sum", 1, &t);	/* no overflow ERROR */
	else
		sumfn = LookupFuncName(list_make2(makeString("pg_catalog"), makeString("sum")), 1, &t, false);
	st = get_func_rettype(sumfn);
	sum = (Expr *) DpMakeAggref(sumfn, st, list_make1(inner), InvalidOid, (Expr *) copyObject(filter), false);

	/*
	 * clamped to [k*lo, k*hi], k = least(the values it adds, r): a unit
	 * with k <= r values is left as it is (its sum lies there already),
	 * one with more is clamped to r values' range; a unit without a
	 * value adds 0 (never r*lo).  |contribution| <= r*max(|lo|, |hi|).
	 */
	us->sum = (Aggref *) sum;
	us->count = DpMakeAggref(F_COUNT_ANY, INT8OID, list_make1(DpAggArg(a, 0)), InvalidOid, filter, false);
	kvals = DpMinMax(IS_LEAST, INT8OID, (Expr *) us->count, (Expr *) DpInt8Const(r));
	rlo = DpOp(pstate, "*", DpCoerce(pstate, kvals, st), DpCoerce(pstate, DpAggArg(a, 1), st));
	rhi = DpOp(pstate, "*", DpCoerce(pstate, copyObject(kvals), st), DpCoerce(pstate, DpAggArg(a, 2), st));
	sum = DpMinMax(IS_LEAST, st, DpMinMax(IS_GREATEST, st, sum, rlo), rhi);
	if (st != ct)
	{
		/* int8 input: numeric sum, within int8 once clamped into the int8 range */
		sum = DpMinMax(IS_LEAST, st,
					   DpMinMax(IS_GREATEST, st, sum, DpCoerce(pstate, (Expr *) DpInt8Const(PG_INT64_MIN), st)),
					   DpCoerce(pstate, (Expr *) DpInt8Const(PG_INT64_MAX), st));
		sum = DpCoerce(pstate, sum, ct);
	}
	col = DpAddColumn(q1, sum, name, false);
	us->col = col;
	if (us->acc != 0)
		cxt->unit_sums = lappend(cxt->unit_sums, us);
	argtypes[0] = argtypes[1] = argtypes[2] = ct;
	argtypes[3] = mechtype;
	argtypes[4] = INT4OID;

	/*
	 * The outer clamp: the hull of every [k*lo, k*hi], k = 0..r, i.e.
	 * [least(0, r*lo), greatest(0, r*hi)]; its sensitivity is the same
	 * r*max(|lo|, |hi|) as [r*lo, r*hi]'s, without moving a contribution
	 * of fewer than r values up to r*lo (the bias of a domain above 0).
	 * Bounds that are NULL, NaN or reversed stay [r*lo, r*hi], which
	 * dp_sum refuses as it would refuse [lo, hi].
	 */
	zero = DpCoerce(pstate, (Expr *) DpInt8Const(0), ct);
	rlo = DpOp(pstate, "*", DpCoerce(pstate, (Expr *) DpInt8Const(r), ct), DpCoerce(pstate, lo, ct));
	rhi = DpOp(pstate, "*", DpCoerce(pstate, (Expr *) DpInt8Const(r), ct), DpCoerce(pstate, hi, ct));
	ba->replacement = (Node *)
		DpMakeAggref(DpLookupFunc("dp_pg", "bounded_sum", 5, argtypes), ct,
					 list_make5(makeVar(1, col, ct, -1, InvalidOid, 0),
								DpIfBoundsValid(pstate, lo, hi, DpMinMax(IS_LEAST, ct, zero, rlo), copyObject(rlo)),
								DpIfBoundsValid(pstate, lo, hi, DpMinMax(IS_GREATEST, ct, copyObject(zero), rhi),
												copyObject(rhi)),
								DpAggMechanism(a, kind), DpInt4Const(cxt->groups)),
					 InvalidOid, NULL, false);
}

/* A histogram: its key (or bin) is the cell; each unit weighs least(its rows, r). */
static void
DpBoundUnitHistogram(DpUnitRewrite *cxt, DpBoundedAgg *ba, Expr *filter, int64 r, char *name, int n)
{
	/* the cell is the key (or bin): q1 groups by it; the weight is least(rows, r) */
	Query	   *q1 = cxt->q1;
	Aggref	   *a = ba->orig;
	const DpAggKind *kind = ba->kind;
	Expr	   *cell;
	AttrNumber	cellcol;
	AttrNumber	wcol;
	Expr	   *wvar;
	List	   *args;
	const char *fname;
	Oid		   *argtypes;
	int			nargs;
	Expr	   *keyarg = DpAggArg(a, 0);

	if (kind == &dp_histogram_width_kind)
	{
		Oid			bt[4] = {FLOAT8OID, FLOAT8OID, FLOAT8OID, INT4OID};

		cell = (Expr *) makeFuncExpr(DpLookupFunc("dp_pg", "histogram_bucket", 4, bt), INT4OID,
									 list_make4(DpAggArg(a, 0), DpAggArg(a, 1), DpAggArg(a, 2), DpAggArg(a, 3)),
									 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	}
	else
		cell = keyarg;
	cellcol = DpAddColumn(q1, cell, "dp_cell", false);
	q1->groupClause = lappend(q1->groupClause, DpSortGroupFor(q1, cellcol, false));
	/*
	 * Only rows this histogram counts take a cell (a lone histogram: its
	 * FILTER is the query's): with public bins, rows whose key is not a
	 * bin are never counted, so they must not take one of the unit's g
	 * cells either (key = ANY(bins), the bins' equality as the
	 * histogram's).
	 */
	q1->jointree->quals = (Node *) DpAnd(DpAnd((Expr *) q1->jointree->quals, filter),
										 (Expr *) DpIsNotNull((Expr *) copyObject(cell)));
	if (kind == &dp_histogram_bins_kind)
		q1->jointree->quals = (Node *) DpAnd((Expr *) q1->jointree->quals,
											 DpKeyInBins(DpAggArg(a, 0), DpAggArg(a, 1), a->inputcollid));
	wcol = DpAddColumn(q1, DpMinMax(IS_LEAST, INT8OID,
									(Expr *) DpMakeAggref(F_COUNT_, INT8OID, NIL, InvalidOid, NULL, true),
									(Expr *) DpInt8Const(r)), name, false);
	wvar = (Expr *) makeVar(1, wcol, INT8OID, -1, InvalidOid, 0);
	if (kind == &dp_histogram_width_kind)
	{
		/* a value of the cell: its bin is the cell (min of float8 ignores NULL; NaN has no cell) */
		Oid			f8 = FLOAT8OID;
		AttrNumber	xcol = DpAddColumn(q1, (Expr *) DpMakeAggref(LookupFuncName(list_make2(makeString("pg_catalog"), makeString("min")), 1, &f8, false),
																 FLOAT8OID, list_make1(keyarg), InvalidOid, NULL, false),
									   "dp_cell_value", false);

		args = list_make4(makeVar(1, xcol, FLOAT8OID, -1, InvalidOid, 0), DpAggArg(a, 1), DpAggArg(a, 2), DpAggArg(a, 3));
		args = lappend(args, DpAggArg(a, 4));
		fname = "bounded_histogram_width";
	}
	else
	{
		Var		   *kv = makeVar(1, cellcol, exprType((Node *) keyarg), exprTypmod((Node *) keyarg),
								 exprCollation((Node *) keyarg), 0);

		if (kind == &dp_histogram_bins_kind)
		{
			args = list_make3(kv, DpAggArg(a, 1), DpAggArg(a, 2));
			fname = "bounded_histogram_bins";
		}
		else
		{
			args = list_make2(kv, DpAggArg(a, 1));
			fname = "bounded_histogram_keys";
		}
	}
	args = lappend(args, wvar);
	args = lappend(args, DpInt8Const(r));
	args = lappend(args, DpInt4Const(cxt->groups));
	{
		List	   *fnames = list_make2(makeString("dp_pg"), makeString((char *) fname));
		FuncCandidateList cands = FuncnameGetCandidates(fnames, -1, NIL, false, false, false, false);

		if (cands == NULL || cands->next != NULL)
			elog(ERROR, "dp_pg: function dp_pg.%s is missing or ambiguous", fname);
		nargs = cands->nargs;
		argtypes = cands->args;
		if (nargs != list_length(args))
			elog(ERROR, "dp_pg: dp_pg.%s has %d arguments", fname, nargs);
		ba->replacement = (Node *) DpMakeAggref(cands->oid, JSONBOID, args, a->inputcollid, NULL, false);
	}
	(void) argtypes;
}

/* An average: each unit's mean of clamped values, weighted by least(its rows, r). */
static void
DpBoundUnitAvg(DpUnitRewrite *cxt, DpBoundedAgg *ba, Expr *filter, int64 r, char *name, int n)
{
	/* the unit's mean of clamped values, weighted by least(its rows, r) */
	Query	   *q1 = cxt->q1;
	Aggref	   *a = ba->orig;
	const DpAggKind *kind = ba->kind;
	ParseState *pstate = cxt->pstate;
	Oid			mechtype = DpMechanismType();
	Expr	   *x = DpAggArg(a, 0);
	Expr	   *inner = DpMinMax(IS_LEAST, FLOAT8OID, DpMinMax(IS_GREATEST, FLOAT8OID, x, DpAggArg(a, 1)),
								 DpAggArg(a, 2));
	Expr	   *nan = (Expr *) makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
										 Float8GetDatum(get_float8_nan()), false, FLOAT8PASSBYVAL);
	Oid			f8 = FLOAT8OID;
	Oid			sumfn = DpLookupFunc("dp_pg", "unit_float_sum", 1, &f8);
	AttrNumber	mcol;
	AttrNumber	wcol;
	List	   *args;
	Oid			argtypes[7] = {FLOAT8OID, FLOAT8OID, FLOAT8OID, mechtype, INT8OID, INT8OID, INT4OID};

	filter = DpAnd(filter, DpOp(pstate, "<>", DpAggArg(a, 0), nan));
	/* mean = sum / count, without PostgreSQL's overflow ERRORs (+-Infinity is clamped later) */
	mcol = DpAddColumn(q1, DpOp(pstate, "/",
								(Expr *) DpMakeAggref(sumfn, FLOAT8OID, list_make1(inner), InvalidOid,
													  (Expr *) copyObject(filter), false),
								DpCoerce(pstate, (Expr *) DpMakeAggref(F_COUNT_ANY, INT8OID, list_make1(DpAggArg(a, 0)),
																	   InvalidOid, (Expr *) copyObject(filter), false),
										 FLOAT8OID)),
					   name, false);
	snprintf(name, NAMEDATALEN, "dp_weight%d", n);
	wcol = DpAddColumn(q1, DpMinMax(IS_LEAST, INT8OID,
									(Expr *) DpMakeAggref(F_COUNT_ANY, INT8OID, list_make1(DpAggArg(a, 0)),
														  InvalidOid, filter, false),
									(Expr *) DpInt8Const(r)), name, false);
	args = list_make5(makeVar(1, mcol, FLOAT8OID, -1, InvalidOid, 0), DpAggArg(a, 1), DpAggArg(a, 2),
					  DpAggMechanism(a, kind), makeVar(1, wcol, INT8OID, -1, InvalidOid, 0));
	args = lappend(args, DpInt8Const(r));
	args = lappend(args, DpInt4Const(cxt->groups));
	ba->replacement = (Node *) DpMakeAggref(DpLookupFunc("dp_pg", "bounded_avg", 7, argtypes), FLOAT8OID,
											args, InvalidOid, NULL, false);
}

/* A partition selection written by the user: it counts the units of the cell. */
static void
DpBoundUnitPartitionKeep(DpUnitRewrite *cxt, DpBoundedAgg *ba, Expr *filter, int64 r, char *name, int n)
{
	Query	   *q1 = cxt->q1;
	Aggref	   *a = ba->orig;
	const DpAggKind *kind = ba->kind;
	ParseState *pstate = cxt->pstate;
	Oid			mechtype = DpMechanismType();
	/*
	 * Partition selection written by the user: it counts the units of the
	 * cell (each (unit, cell) row of q1 is one unit), as the selection the
	 * guard adds itself (DpAddPartitionKeep).  A FILTER keeps the units
	 * with a row that passes it.
	 */
	Oid			argtypes[2] = {mechtype, INT4OID};
	Expr	   *outer_filter = NULL;

	if (filter != NULL)
	{
		AttrNumber	fcol = DpAddColumn(q1, DpOp(pstate, ">",
											   (Expr *) DpMakeAggref(F_COUNT_, INT8OID, NIL, InvalidOid, filter, true),
											   (Expr *) DpInt8Const(0)),
									   name, false);

		outer_filter = (Expr *) makeVar(1, fcol, BOOLOID, -1, InvalidOid, 0);
	}
	ba->replacement = (Node *)
		DpMakeAggref(DpLookupFunc("dp_pg", "bounded_partition_keep", 2, argtypes), BOOLOID,
					 list_make2(DpAggMechanism(a, kind), DpInt4Const(cxt->groups)),
					 InvalidOid, outer_filter, false);
}

/* A quantile: at most r of the unit's values in the cell. */
static void
DpBoundUnitQuantile(DpUnitRewrite *cxt, DpBoundedAgg *ba, Expr *filter, int64 r, char *name, int n)
{
	/* at most r of the unit's values in the cell; counted by the outer bounded_quantile */
	Query	   *q1 = cxt->q1;
	Aggref	   *a = ba->orig;
	const DpAggKind *kind = ba->kind;
	Oid			mechtype = DpMechanismType();
	bool		median = kind->nconst == 2;
	Oid			inargs[2] = {FLOAT8OID, INT8OID};
	Oid			argtypes[8] = {FLOAT8ARRAYOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, mechtype, INT8OID, INT8OID, INT4OID};
	Aggref	   *vals;
	AttrNumber	col;
	List	   *args;

	vals = DpMakeAggref(DpLookupFunc("dp_pg", "unit_values", 2, inargs), FLOAT8ARRAYOID,
						list_make2(DpAggArg(a, 0), DpInt8Const(r)), InvalidOid, filter, false);
	col = DpAddColumn(q1, (Expr *) vals, name, false);
	args = list_make5(makeVar(1, col, FLOAT8ARRAYOID, -1, InvalidOid, 0),
					  median ? (Expr *) makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(0.5),
												  false, FLOAT8PASSBYVAL)
					  : DpAggArg(a, 1),
					  DpAggArg(a, median ? 1 : 2), DpAggArg(a, median ? 2 : 3), DpAggMechanism(a, kind));
	args = lappend(args, DpInt8Const(1));
	args = lappend(args, DpInt8Const(r));
	args = lappend(args, DpInt4Const(cxt->groups));
	ba->replacement = (Node *)
		DpMakeAggref(DpLookupFunc("dp_pg", "bounded_quantile", 8, argtypes), FLOAT8OID, args,
					 InvalidOid, NULL, false);
}

/* Build the inner contribution(s) and the outer bounded call of one dp aggregate, by its kind. */
static void
DpBoundOneAgg(DpUnitRewrite *cxt, DpBoundedAgg *ba, int n)
{
	Aggref	   *a = ba->orig;
	const DpAggKind *kind = ba->kind;
	int64		r = cxt->ub->rows;
	char		name[NAMEDATALEN];
	Expr	   *filter = (Expr *) copyObject(a->aggfilter);

	snprintf(name, sizeof(name), "dp_contribution%d", n);

	/* count(DISTINCT x) of a value x: the distinct values the units keep */
	if (a->aggdistinct != NIL && kind == &dp_count_kind && !DpIsUnitArg(cxt, a))
	{
		DpBoundUnitDistinctCount(cxt, ba, filter, r, name);
		return;
	}
	/* count(DISTINCT unit): each unit counts once per cell (shape.c) */
	if (a->aggdistinct != NIL)
		r = 1;
	if (kind == &dp_count_star_kind || kind == &dp_count_kind)
		DpBoundUnitCount(cxt, ba, filter, r, name, n);
	else if (kind == &dp_sum_int_kind || kind == &dp_sum_int8_kind ||
			 kind == &dp_sum_float8_kind || kind == &dp_sum_numeric_kind ||
			 kind == &dp_sum_int_default_kind || kind == &dp_sum_int8_default_kind ||
			 kind == &dp_sum_float8_default_kind || kind == &dp_sum_numeric_default_kind)
		DpBoundUnitSum(cxt, ba, filter, r, name, n);
	else if (kind == &dp_histogram_bins_kind || kind == &dp_histogram_width_kind ||
			 kind == &dp_histogram_keys_kind)
		DpBoundUnitHistogram(cxt, ba, filter, r, name, n);
	else if (kind == &dp_avg_kind || kind == &dp_avg_default_kind)
		DpBoundUnitAvg(cxt, ba, filter, r, name, n);
	else if (kind == &dp_partition_keep_kind)
		DpBoundUnitPartitionKeep(cxt, ba, filter, r, name, n);
	else if (kind == &dp_quantile_kind || kind == &dp_quantile_default_kind ||
			 kind == &dp_median_kind || kind == &dp_median_default_kind)
		DpBoundUnitQuantile(cxt, ba, filter, r, name, n);
	else
		elog(ERROR, "dp_pg: no bounded form of %s", kind->name);
}

/* Mutator: dp aggregates become their bounded calls, GROUP BY columns read q1. */
static Node *
DpUnitMutator(Node *node, DpUnitRewrite *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
	{
		ListCell   *lc;

		foreach(lc, cxt->aggs)
		{
			DpBoundedAgg *ba = lfirst(lc);

			if (ba->orig == (Aggref *) node)
				return copyObject(ba->replacement);
		}
		elog(ERROR, "dp_pg: an aggregate of a bounded query was not rewritten");
	}
	if (!IsA(node, Var))
	{
		/* a generalising GROUP BY key (keys.c) */
		for (int k = 0; k < cxt->nkeys; k++)
			if (!IsA(cxt->keys[k], Var) && equal(cxt->keys[k], node))
				return (Node *) makeVar(1, cxt->keycols[k], exprType(node), exprTypmod(node), exprCollation(node), 0);
	}
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		for (int k = 0; k < cxt->nkeys; k++)
			if (v->varlevelsup == 0 && IsA(cxt->keys[k], Var) && v->varno == ((Var *) cxt->keys[k])->varno &&
				v->varattno == ((Var *) cxt->keys[k])->varattno)
				return (Node *) makeVar(1, cxt->keycols[k], v->vartype, v->vartypmod, v->varcollid, 0);
		elog(ERROR, "dp_pg: a column outside the GROUP BY keys in a bounded query");
	}
	return expression_tree_mutator(node, DpUnitMutator, cxt);
}

/*
 * One accumulator of dp_pg.unit_cells: an inner aggregate (one field), or a
 * bounded sum's two (DpUnitSum: its sum and count fields).
 */
typedef struct DpCellsAcc
{
	char		kind;			/* unit_cells' letter */
	Aggref	   *agg;			/* the inner aggregate; a clamped sum's sum */
	DpUnitSum  *us;				/* a clamped sum, or NULL */
	int			field;			/* its (first) field, 0 = the first after the keys */
} DpCellsAcc;

/* Context of the rewrite into dp_pg.unit_cells. */
typedef struct DpCellsRewrite
{
	Query	   *q1;
	List	   *aggs;			/* the inner Aggrefs of contributions other than a clamped sum's */
	List	   *accs;			/* DpCellsAcc *, in field order */
	int			nfields;
	int			nkeys;
	AttrNumber	keytle[INDEX_MAX_KEYS]; /* q1 columns that are cell keys */
	AttrNumber	unittle;
	int			first_field_col;	/* column of field 0 in the new inner query */
	DpUnitSum  *sum;			/* DpCellsMutator: the clamped sum of the column it rewrites, or NULL */
	int			sum_field;		/* ... and its first field */
	bool		ok;
} DpCellsRewrite;

/* The accumulator letter of an inner aggregate, or 0 when unit_cells has none. */
static char
DpCellsAccKind(Aggref *a)
{
	Oid			f8 = FLOAT8OID;

	if (a->aggdistinct != NIL || a->aggorder != NIL || a->aggdirectargs != NIL || a->aggkind != AGGKIND_NORMAL ||
		a->agglevelsup != 0)
		return 0;
	switch (a->aggfnoid)
	{
		case F_COUNT_:
			return 'c';
		case F_COUNT_ANY:
			return 'n';
		case F_SUM_INT2:
		case F_SUM_INT4:
			return 'i';
		case F_SUM_INT8:
			return 'l';
		case F_MIN_FLOAT8:
			return 'm';
		default:
			break;
	}
	if (a->aggfnoid == DpLookupFunc("dp_pg", "unit_float_sum", 1, &f8))
		return 'f';
	return 0;
}

/* Collect the inner aggregates; false where one has no accumulator. */
static bool
DpCellsCollect(Node *node, DpCellsRewrite *cx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		if (DpCellsAccKind((Aggref *) node) == 0)
			cx->ok = false;
		else if (!list_member(cx->aggs, node))
		{
			DpCellsAcc *acc = palloc0(sizeof(DpCellsAcc));

			acc->kind = DpCellsAccKind((Aggref *) node);
			acc->agg = (Aggref *) node;
			acc->field = cx->nfields++;
			cx->aggs = lappend(cx->aggs, node);
			cx->accs = lappend(cx->accs, acc);
		}
		return false;
	}
	if (IsA(node, Var) || IsA(node, WindowFunc) || IsA(node, SubLink) || IsA(node, GroupingFunc))
	{
		/* contributions are expressions of aggregates, constants and parameters */
		cx->ok = false;
		return false;
	}
	return expression_tree_walker(node, DpCellsCollect, cx);
}

/*
 * Is a bounded sum's contribution column made of its two aggregates,
 * constants and parameters only (as DpBoundOneAgg writes it)?
 */
static bool
DpCellsSumOnly(Node *node, DpUnitSum *us)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
		return !equal(node, us->sum) && !equal(node, us->count);
	if (IsA(node, Var) || IsA(node, WindowFunc) || IsA(node, SubLink) || IsA(node, GroupingFunc))
		return true;
	return expression_tree_walker(node, DpCellsSumOnly, us);
}

/* Replace the inner aggregates by the fields of the kept cells. */
static Node *
DpCellsMutator(Node *node, DpCellsRewrite *cx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
	{
		ListCell   *lc;

		/* a clamped sum's column: its sum, then its count */
		if (cx->sum != NULL && equal(node, cx->sum->sum))
			return (Node *) makeVar(1, cx->first_field_col + cx->nkeys + cx->sum_field, exprType(node), -1,
									exprCollation(node), 0);
		if (cx->sum != NULL && equal(node, cx->sum->count))
			return (Node *) makeVar(1, cx->first_field_col + cx->nkeys + cx->sum_field + 1, INT8OID, -1,
									InvalidOid, 0);
		foreach(lc, cx->accs)
		{
			DpCellsAcc *acc = lfirst(lc);

			if (acc->us == NULL && equal(acc->agg, node))
				return (Node *) makeVar(1, cx->first_field_col + cx->nkeys + acc->field, exprType(node), -1,
										exprCollation(node), 0);
		}
		elog(ERROR, "dp_pg: an inner aggregate of a bounded query has no field");
	}
	return expression_tree_mutator(node, DpCellsMutator, cx);
}

/*
 * The WHERE of q1 without its key = ANY(<declared keys>) restrictions (the
 * nodes themselves, in the AND chain they were added to): true in their place.
 */
static Node *
DpDropPublicKeyQuals(Node *node, Expr **pubkeys_in)
{
	if (node == NULL)
		return NULL;
	for (int k = 0; k < INDEX_MAX_KEYS; k++)
		if (pubkeys_in[k] != NULL && node == (Node *) pubkeys_in[k])
			return makeBoolConst(true, false);
	if (IsA(node, BoolExpr) && ((BoolExpr *) node)->boolop == AND_EXPR)
	{
		BoolExpr   *b = (BoolExpr *) node;
		List	   *args = NIL;
		ListCell   *lc;

		foreach(lc, b->args)
			args = lappend(args, DpDropPublicKeyQuals(lfirst(lc), pubkeys_in));
		b->args = args;
	}
	return node;
}

/*
 * The cell keys of q1 (its GROUP BY after the unit, in cx->keytle), each
 * added to spec; false if unit_cells cannot hold one of them or the unit.
 */
static bool
DpCellsKeys(DpCellsRewrite *cx, Query *q1, TargetEntry *unit_te, Expr **pubkeys_in, StringInfo spec)
{
	ListCell   *lc;

	/* the cell keys: the GROUP BY clauses after the unit */
	for_each_from(lc, q1->groupClause, 1)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *te = get_sortgroupclause_tle(sgc, q1->targetList);
		Oid			type = exprType((Node *) te->expr);
		Oid			coll = exprCollation((Node *) te->expr);
		TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_EQ_OPR | TYPECACHE_CMP_PROC |
											   TYPECACHE_HASH_EXTENDED_PROC | TYPECACHE_HASH_OPFAMILY);

		/* the cells must be GROUP BY's: its equality, hashed by the same opfamily */
		if (!OidIsValid(tc->eq_opr) || tc->eq_opr != sgc->eqop || !OidIsValid(tc->cmp_proc) ||
			!OidIsValid(tc->hash_extended_proc) || !OidIsValid(tc->hash_opf) ||
			!op_in_opfamily(sgc->eqop, tc->hash_opf) || cx->nkeys >= INDEX_MAX_KEYS - 1)
			return false;
		if (OidIsValid(coll) && !get_collation_isdeterministic(coll))
			return false;
		/* "=": the key's declared public keys follow it (tested when a row's cell is not held) */
		appendStringInfo(spec, "k%u%s,", coll, pubkeys_in[cx->nkeys] != NULL ? "=" : "");
		cx->keytle[cx->nkeys++] = te->resno;
	}
	if (cx->nkeys == 0)
		return false;
	{
		Oid			ut = exprType((Node *) unit_te->expr);
		TypeCacheEntry *tc = lookup_type_cache(ut, TYPECACHE_HASH_EXTENDED_PROC);

		if (!OidIsValid(tc->hash_extended_proc))
			return false;
	}
	return true;
}

/*
 * The contributions of q1 (cx->accs): expressions of aggregates and
 * constants only; false if one is not, or there are too many.  A bounded
 * sum's two aggregates are one accumulator of two fields.
 */
static bool
DpCellsContributions(DpCellsRewrite *cx, Query *q1, List *unit_sums)
{
	ListCell   *lc;
	ListCell   *lc2;

	foreach(lc, q1->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		bool		is_key = te->resno == cx->unittle;
		DpUnitSum  *us = NULL;

		for (int k = 0; k < cx->nkeys; k++)
			if (cx->keytle[k] == te->resno)
				is_key = true;
		if (is_key)
			continue;
		foreach(lc2, unit_sums)
			if (((DpUnitSum *) lfirst(lc2))->col == te->resno)
				us = lfirst(lc2);
		if (us != NULL && !DpCellsSumOnly((Node *) te->expr, us))
		{
			DpCellsAcc *acc = palloc0(sizeof(DpCellsAcc));

			acc->kind = us->acc;
			acc->agg = us->sum;
			acc->us = us;
			acc->field = cx->nfields;
			cx->nfields += 2;
			cx->accs = lappend(cx->accs, acc);
		}
		else
			DpCellsCollect((Node *) te->expr, cx);
		if (!cx->ok)
			return false;
	}
	/* unit_cells keeps at most 32 accumulators and 96 fields (agg_units.c) */
	if (cx->nfields + cx->nkeys > 96 || list_length(cx->accs) > 32)
		return false;
	return true;
}

/*
 * The call that keeps each unit's cells while aggregating:
 * dp_pg.unit_cells(NULL, "g:spec", dp_pg.unit_seed(), unit, keys...,
 * accumulators...); NULL if it would take too many arguments.
 */
static Aggref *
DpCellsCall(DpCellsRewrite *cx, Query *q1, TargetEntry *unit_te, Expr **pubkeys_in, StringInfo spec)
{
	List	   *args = NIL;
	Oid			cellsfn;
	ListCell   *lc;

	{
		List	   *fnames = list_make2(makeString("dp_pg"), makeString("unit_cells"));
		FuncCandidateList cands = FuncnameGetCandidates(fnames, -1, NIL, false, false, false, false);

		if (cands == NULL || cands->next != NULL)
			elog(ERROR, "dp_pg: function dp_pg.unit_cells is missing or ambiguous");
		cellsfn = cands->oid;
	}

	/* dp_pg.unit_cells(NULL, "g:spec", dp_pg.unit_seed(), unit, keys..., accumulators...) */
	foreach(lc, cx->accs)
	{
		DpCellsAcc *acc = lfirst(lc);

		appendStringInfoChar(spec, acc->kind);
		if (acc->us != NULL ? acc->us->filter != NULL : acc->agg->aggfilter != NULL)
			appendStringInfoChar(spec, '?');
	}
	args = list_make4(makeNullConst(INTERNALOID, -1, InvalidOid),
					  makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1, CStringGetTextDatum(spec->data), false, false),
					  makeFuncExpr(DpLookupFunc("dp_pg", "unit_seed", 0, NULL), INT8OID, NIL, InvalidOid, InvalidOid,
								   COERCE_EXPLICIT_CALL),
					  copyObject(unit_te->expr));
	for (int k = 0; k < cx->nkeys; k++)
	{
		args = lappend(args, copyObject(list_nth_node(TargetEntry, q1->targetList, cx->keytle[k] - 1)->expr));
		if (pubkeys_in[k] != NULL)
			args = lappend(args, copyObject(lsecond(castNode(ScalarArrayOpExpr, pubkeys_in[k])->args)));
	}
	foreach(lc, cx->accs)
	{
		DpCellsAcc *acc = lfirst(lc);
		Aggref	   *a = acc->agg;

		if (acc->us != NULL)
		{
			/* x, lo, hi and the user's FILTER: the clamp and the NaN / NULL test are unit_cells' */
			args = lappend(args, copyObject(acc->us->x));
			args = lappend(args, copyObject(acc->us->lo));
			args = lappend(args, copyObject(acc->us->hi));
			if (acc->us->filter != NULL)
				args = lappend(args, copyObject(acc->us->filter));
			continue;
		}
		if (!a->aggstar)
			args = lappend(args, copyObject(linitial_node(TargetEntry, a->args)->expr));
		if (a->aggfilter != NULL)
			args = lappend(args, copyObject(a->aggfilter));
	}
	/* an aggregate takes at most FUNC_MAX_ARGS arguments: beyond, the window form */
	if (list_length(args) > FUNC_MAX_ARGS)
		return NULL;
	return DpMakeAggref(cellsfn, INTERNALOID, args, InvalidOid, NULL, false);
}

/*
 * The inner query: one row per kept cell, q1's FROM and WHERE (moved from
 * q1, without the public keys' tests) grouped by the unit, the keys and
 * accumulators' fields read from the call's state (dp_pg.unit_cell).
 */
static Query *
DpCellsInnerQuery(DpCellsRewrite *cx, Query *q1, Aggref *cells, TargetEntry *unit_te,
				  SortGroupClause *unit_sgc, Expr **pubkeys_in)
{
	Query	   *qf;
	List	   *tlist = NIL;
	Oid			cellargs[3] = {INTERNALOID, INT4OID, ANYELEMENTOID};
	Oid			cellfn = DpLookupFunc("dp_pg", "unit_cell", 3, cellargs);
	int			field = 0;
	ListCell   *lc;

	/* the inner query: one row per kept cell */
	qf = makeNode(Query);
	qf->commandType = CMD_SELECT;
	qf->querySource = QSRC_ORIGINAL;
	qf->canSetTag = true;
	DpMoveRangeTable(qf, q1);
	/* the cells take only declared keys: the WHERE need not test every row */
	q1->jointree->quals = DpDropPublicKeyQuals(q1->jointree->quals, pubkeys_in);
	qf->jointree = q1->jointree;
	qf->hasAggs = true;
	qf->hasTargetSRFs = true;
	{
		TargetEntry *te = makeTargetEntry(copyObject(unit_te->expr), 1, pstrdup("dp_unit"), false);
		SortGroupClause *sgc = copyObject(unit_sgc);

		te->ressortgroupref = 1;
		sgc->tleSortGroupRef = 1;
		tlist = list_make1(te);
		qf->groupClause = list_make1(sgc);
	}
	cx->first_field_col = 2;
	for (int k = 0; k < cx->nkeys + cx->nfields; k++)
	{
		Oid			type = InvalidOid;
		int32		typmod = -1;
		Oid			coll = InvalidOid;
		FuncExpr   *fe;
		char		name[NAMEDATALEN];

		if (k < cx->nkeys)
		{
			Expr	   *e = list_nth_node(TargetEntry, q1->targetList, cx->keytle[k] - 1)->expr;

			type = exprType((Node *) e);
			typmod = exprTypmod((Node *) e);
			coll = exprCollation((Node *) e);
		}
		else
		{
			/* an accumulator's field: its aggregate's type, or a clamped sum's count */
			foreach(lc, cx->accs)
			{
				DpCellsAcc *acc = lfirst(lc);

				if (acc->field == k - cx->nkeys)
					type = exprType((Node *) acc->agg);
				else if (acc->us != NULL && acc->field + 1 == k - cx->nkeys)
					type = INT8OID;
			}
			Assert(OidIsValid(type));
		}
		fe = makeFuncExpr(cellfn, type,
						  list_make3(copyObject(cells), DpInt4Const(field++), makeNullConst(type, typmod, coll)),
						  coll, InvalidOid, COERCE_EXPLICIT_CALL);
		fe->funcretset = true;
		snprintf(name, sizeof(name), "dp_field%d", k);
		tlist = lappend(tlist, makeTargetEntry((Expr *) fe, list_length(tlist) + 1, pstrdup(name), false));
	}
	qf->targetList = tlist;
	return qf;
}

/* The projection over the inner query qf: q1's columns, in q1's order. */
static Query *
DpCellsProjection(DpCellsRewrite *cx, Query *q1, Query *qf)
{
	Query	   *qp;
	List	   *tlist = NIL;
	List	   *colnames = NIL;
	RangeTblEntry *sub;
	ListCell   *lc;
	ListCell   *lc2;

	/* the projection: q1's columns, in q1's order */
	qp = makeNode(Query);
	qp->commandType = CMD_SELECT;
	qp->querySource = QSRC_ORIGINAL;
	qp->canSetTag = true;
	tlist = NIL;
	foreach(lc, q1->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		Expr	   *e;
		TargetEntry *nte;

		if (te->resno == cx->unittle)
			e = (Expr *) makeVar(1, 1, exprType((Node *) te->expr), exprTypmod((Node *) te->expr),
								 exprCollation((Node *) te->expr), 0);
		else
		{
			int			k;

			for (k = 0; k < cx->nkeys; k++)
				if (cx->keytle[k] == te->resno)
					break;
			if (k < cx->nkeys)
				e = (Expr *) makeVar(1, cx->first_field_col + k, exprType((Node *) te->expr),
									 exprTypmod((Node *) te->expr), exprCollation((Node *) te->expr), 0);
			else
			{
				/* a clamped sum's column reads its two fields */
				cx->sum = NULL;
				foreach(lc2, cx->accs)
				{
					DpCellsAcc *acc = lfirst(lc2);

					if (acc->us != NULL && acc->us->col == te->resno)
					{
						cx->sum = acc->us;
						cx->sum_field = acc->field;
					}
				}
				e = (Expr *) DpCellsMutator((Node *) te->expr, cx);
			}
		}
		nte = makeTargetEntry(e, te->resno, te->resname ? pstrdup(te->resname) : NULL, te->resjunk);
		tlist = lappend(tlist, nte);
	}
	qp->targetList = tlist;
	foreach(lc2, qf->targetList)
		colnames = lappend(colnames, makeString(pstrdup(lfirst_node(TargetEntry, lc2)->resname)));
	sub = makeNode(RangeTblEntry);
	sub->rtekind = RTE_SUBQUERY;
	sub->subquery = qf;
	sub->eref = makeAlias("dp_cells", colnames);
	sub->lateral = false;
	sub->inh = false;
	sub->inFromCl = true;
	qp->rtable = list_make1(sub);
	qp->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)), NULL);
	((RangeTblRef *) linitial(qp->jointree->fromlist))->rtindex = 1;
	return qp;
}

/*
 * The inner level of a ranked bounded query (q1: GROUP BY unit, cells; one
 * contribution per dp aggregate), as
 *
 *   SELECT <q1's columns, aggregates read from fields>
 *   FROM (SELECT unit, dp_pg.unit_cell(c, 0, NULL::<key type>), ...,
 *                dp_pg.unit_cell(c, k, NULL::<accumulator type>) ...
 *         FROM <q1's FROM and WHERE> GROUP BY unit) dp_cells
 *
 * where c = dp_pg.unit_cells(NULL, "g:spec", seed, unit, keys..., accumulator
 * arguments...) keeps each unit's g cells while aggregating (agg_units.c) —
 * no sort of every cell.  A bounded sum's two inner aggregates (the sum of
 * clamped values and their count, DpUnitSum) are one accumulator that takes
 * x and the bounds and clamps, skips NaN / NULL and counts in C: the same
 * fields, with x read once per row and a cell no larger than a plain sum's.  A key with declared public keys passes them after
 * it, and its key = ANY(...) leaves q1's WHERE: a row whose cell the unit does
 * not hold is tested against them (a binary search) before it may take a
 * place, so a cell outside them is never kept — what the WHERE gave, without
 * a test of every row (rows of held cells are not tested again).  NULL when
 * q1 has an aggregate or key type that unit_cells does not handle, or too
 * many of them: q1 then stays as it is and is ranked by a window (the same
 * cells, by another random order).
 */
static Query *
DpUnitCellsQuery(Query *q1, int32 groups, Expr **pubkeys_in, List *unit_sums)
{
	DpCellsRewrite cx;
	Query	   *qf;
	StringInfoData spec;
	Aggref	   *cells;
	TargetEntry *unit_te;
	SortGroupClause *unit_sgc = linitial_node(SortGroupClause, q1->groupClause);

	memset(&cx, 0, sizeof(cx));
	cx.q1 = q1;
	cx.ok = true;
	if (q1->havingQual != NULL || q1->windowClause != NIL || q1->hasTargetSRFs || q1->hasSubLinks ||
		q1->groupingSets != NIL || q1->distinctClause != NIL)
		return NULL;
	unit_te = get_sortgroupclause_tle(unit_sgc, q1->targetList);
	cx.unittle = unit_te->resno;
	initStringInfo(&spec);
	appendStringInfo(&spec, "%d:", groups);
	if (!DpCellsKeys(&cx, q1, unit_te, pubkeys_in, &spec))
		return NULL;
	if (!DpCellsContributions(&cx, q1, unit_sums))
		return NULL;
	cells = DpCellsCall(&cx, q1, unit_te, pubkeys_in, &spec);
	if (cells == NULL)
		return NULL;
	qf = DpCellsInnerQuery(&cx, q1, cells, unit_te, unit_sgc, pubkeys_in);
	return DpCellsProjection(&cx, q1, qf);
}

/*
 * An upper bound on the number of cells a bounded query can release whatever
 * the data: the public key combinations of its GROUP BY, or the bins of its
 * histogram when they are constants; INT64_MAX when unknown (partition
 * selection, histogram keys, bound parameters).
 */
static int64
DpReleasedCellsAtMost(Query *q, List *aggs, bool public_groups, ArrayType **pubkeys)
{
	if (q->groupClause != NIL)
	{
		int64		n = 1;

		if (!public_groups)
			return PG_INT64_MAX;
		for (int k = 0; k < list_length(q->groupClause); k++)
		{
			n *= Max(ArrayGetNItems(ARR_NDIM(pubkeys[k]), ARR_DIMS(pubkeys[k])), 1);
			if (n > PG_INT32_MAX)
				return PG_INT64_MAX;
		}
		return n;
	}
	if (list_length(aggs) == 1)
	{
		Aggref	   *a = linitial(aggs);
		const DpAggKind *kind = DpKindOfAggregate(a->aggfnoid);
		Node	   *arg;

		if (kind == &dp_histogram_bins_kind)
		{
			arg = eval_const_expressions(NULL, copyObject((Node *) list_nth_node(TargetEntry, a->args, 1)->expr));
			if (IsA(arg, Const) && !((Const *) arg)->constisnull)
			{
				ArrayType  *arr = DatumGetArrayTypeP(((Const *) arg)->constvalue);

				return ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
			}
		}
		if (kind == &dp_histogram_width_kind)
		{
			arg = eval_const_expressions(NULL, copyObject((Node *) list_nth_node(TargetEntry, a->args, 3)->expr));
			if (IsA(arg, Const) && !((Const *) arg)->constisnull)
				return Max(DatumGetInt32(((Const *) arg)->constvalue), 1);
		}
	}
	return PG_INT64_MAX;
}

/*
 * The distinct dp aggregates of q's target list and HAVING (all of them in
 * *found), refusing those that have no bounded form on a table with a
 * privacy unit; *has_histogram if one is a histogram.
 */
static List *
DpUnitCollectAggs(Query *q, List **found, bool *has_histogram)
{
	List	   *distinct = NIL;
	ListCell   *lc;

	DpCollectDpAggs((Node *) q->targetList, found);
	DpCollectDpAggs(q->havingQual, found);
	foreach(lc, *found)
	{
		Aggref	   *a = lfirst(lc);
		const DpAggKind *kind = DpKindOfAggregate(a->aggfnoid);
		ListCell   *lc2;
		bool		dup = false;

		if (DpAggNumArgs(a->args) != kind->nargs)
			DpGuardRefuse("dp_pg's internal aggregates cannot be called directly on a table with a privacy unit",
						  "dp_pg writes them itself.");
		if (kind->local)
			DpGuardRefuse(psprintf("%s cannot be used on a table with a privacy unit", kind->name),
						  "Each row of a locally private column is randomized on its own: a person with several rows "
						  "has the column's epsilon once per row, and estimates have no per-unit bound yet.");
		if (kind == &dp_histogram_bins_kind || kind == &dp_histogram_width_kind || kind == &dp_histogram_keys_kind)
			*has_histogram = true;
		foreach(lc2, distinct)
			if (equal(lfirst(lc2), a))
				dup = true;
		if (!dup)
			distinct = lappend(distinct, a);
	}
	return distinct;
}

/*
 * Is the query a distinct count of a value (count(DISTINCT x), x not the
 * unit)?  It must then be the only dp aggregate; a histogram must be the
 * only one too, without GROUP BY.
 */
static bool
DpUnitDistinctCount(Query *q, List *distinct, int prot_rti, const DpUnitBound *ub, bool has_histogram)
{
	bool		distinct_count = false;
	ListCell   *lc;

	/* count(DISTINCT x) of a value: the only dp aggregate, over public keys reaching at most g cells */
	foreach(lc, distinct)
	{
		Aggref	   *a = lfirst(lc);
		Var		   *v;

		if (a->aggdistinct == NIL || a->args == NIL)
			continue;
		v = DpStripVar((Node *) linitial_node(TargetEntry, a->args)->expr);
		if (v != NULL && v->varno == prot_rti && v->varattno == ub->attno)
			continue;
		if (list_length(distinct) > 1)
			DpGuardRefuse("on a table with a privacy unit, count(DISTINCT <column>) must be the only dp aggregate of its query",
						  "Each person's distinct values are kept per cell before they are counted.");
		distinct_count = true;
	}
	if (has_histogram && (list_length(distinct) > 1 || q->groupClause != NIL))
	{
		DpLedgerNoteRefusal("on a table with a privacy unit, dp_histogram must be the only dp aggregate of its query",
							ERRCODE_FEATURE_NOT_SUPPORTED);
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("on a table with a privacy unit, dp_histogram must be the only dp aggregate of its query, without GROUP BY"),
				 errdetail("Its bins are the cells each unit's contribution is bounded over."),
				 errhint("Run the histogram in a query of its own.")));
	}
	return distinct_count;
}

/*
 * q1, the inner query: q's FROM and WHERE (moved from q), grouped by the
 * unit (ordered if its cells are ranked) and by q's GROUP BY keys (in
 * cxt->keys and cxt->keycols), with a column that is true in every row.
 */
static void
DpUnitInnerQuery(DpUnitRewrite *cxt, Query *q, bool ranked)
{
	Query	   *q1 = cxt->q1;
	RangeTblEntry *rte = rt_fetch(cxt->prot_rti, q->rtable);
	const DpUnitBound *ub = cxt->ub;
	int			prot_rti = cxt->prot_rti;
	AttrNumber	unitcol;
	ListCell   *lc;

	q1->commandType = CMD_SELECT;
	q1->querySource = QSRC_ORIGINAL;
	q1->canSetTag = true;
	DpMoveRangeTable(q1, q);
	q1->hasRowSecurity = q->hasRowSecurity;
	q1->jointree = q->jointree;
	q1->hasAggs = true;
	{
		Form_pg_attribute att;
		Relation	rel = table_open(rte->relid, AccessShareLock);

		if (ub->attno < 1 || ub->attno > RelationGetDescr(rel)->natts ||
			(att = TupleDescAttr(RelationGetDescr(rel), ub->attno - 1))->attisdropped)
			elog(ERROR, "dp_pg: the privacy unit column of \"%s\" does not exist", RelationGetRelationName(rel));
		unitcol = DpAddColumn(q1, (Expr *) makeVar(prot_rti, ub->attno, att->atttypid, att->atttypmod,
												   att->attcollation, 0), "dp_unit", false);
		table_close(rel, AccessShareLock);
	}
	q1->groupClause = list_make1(DpSortGroupFor(q1, unitcol, ranked));
	DpAddColumn(q1, (Expr *) makeBoolConst(true, false), "dp_present", false);
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Node	   *key = (Node *) get_sortgroupclause_expr(sgc, q->targetList);
		char		kname[NAMEDATALEN];
		TargetEntry *te;
		SortGroupClause *copy = copyObject(sgc);

		snprintf(kname, sizeof(kname), "dp_key%d", cxt->nkeys + 1);
		cxt->keys[cxt->nkeys] = key;
		cxt->keycols[cxt->nkeys] = DpAddColumn(q1, (Expr *) copyObject(key), kname, false);
		te = list_nth_node(TargetEntry, q1->targetList, cxt->keycols[cxt->nkeys] - 1);
		te->ressortgroupref = cxt->keycols[cxt->nkeys] + 1000;
		copy->tleSortGroupRef = te->ressortgroupref;
		q1->groupClause = lappend(q1->groupClause, copy);
		cxt->nkeys++;
	}
}

/*
 * GROUP BY on public keys: rows with undeclared keys are never released, so
 * they take none of a unit's g cells (key = ANY(<declared keys>) added to
 * q1's WHERE, in cxt->pubkeys_in); *key_quals and *narrow: the key-only
 * predicates and the generalised keys' narrowing, for the outer query.
 */
static void
DpUnitPublicKeysIn(DpUnitRewrite *cxt, Query *q, Oid relid, ArrayType **pubkeys, List **key_quals, List **narrow)
{
	Query	   *q1 = cxt->q1;
	int			prot_rti = cxt->prot_rti;

	AttrNumber	atts[INDEX_MAX_KEYS];
	bool		all_columns = true;

	for (int k = 0; k < cxt->nkeys; k++)
	{
		all_columns &= IsA(cxt->keys[k], Var);
		atts[k] = IsA(cxt->keys[k], Var) ? ((Var *) cxt->keys[k])->varattno : 0;
	}
	/* key-only predicates restrict the listed keys of columns, and of generalised keys (narrow.c) */
	if (all_columns)
		*key_quals = DpKeyOnlyQuals(q1->jointree->quals, prot_rti, atts, cxt->nkeys);
	*narrow = DpNarrowingOf(q1->jointree->quals, prot_rti, relid, cxt->keys, cxt->nkeys);
	for (int k = 0; k < cxt->nkeys; k++)
	{
		Node	   *key = cxt->keys[k];
		Oid			arrtype = get_array_type(exprType(key));
		SortGroupClause *sgc = list_nth_node(SortGroupClause, q->groupClause, k);
		List	   *consts = DpPublicKeyConsts(pubkeys[k], key);
		ArrayExpr  *ae;
		ScalarArrayOpExpr *sa;

		if (!OidIsValid(arrtype) || consts == NIL)
			continue;
		ae = makeNode(ArrayExpr);
		ae->array_typeid = arrtype;
		ae->array_collid = exprCollation(key);
		ae->element_typeid = exprType(key);
		ae->elements = consts;
		ae->multidims = false;
		ae->location = -1;
		sa = makeNode(ScalarArrayOpExpr);
		sa->opno = sgc->eqop;
		sa->opfuncid = InvalidOid;
		sa->hashfuncid = InvalidOid;
		sa->negfuncid = InvalidOid;
		sa->useOr = true;
		sa->inputcollid = exprCollation(key);
		sa->args = list_make2(copyObject(key), ae);
		sa->location = -1;
		set_sa_opfuncid(sa);
		q1->jointree->quals = (Node *) DpAnd((Expr *) q1->jointree->quals, (Expr *) sa);
		cxt->pubkeys_in[k] = (Expr *) sa;
	}
}

/*
 * Each distinct dp aggregate's inner contribution and outer bounded call
 * (DpBoundOneAgg); identical calls (the others of found) share the bounded
 * call of the first.
 */
static void
DpUnitBoundAggs(DpUnitRewrite *cxt, List *distinct, List *found)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, distinct)
	{
		DpBoundedAgg *ba = palloc0(sizeof(DpBoundedAgg));

		ba->orig = lfirst(lc);
		ba->kind = DpKindOfAggregate(ba->orig->aggfnoid);
		DpBoundOneAgg(cxt, ba, ++n);
		cxt->aggs = lappend(cxt->aggs, ba);
	}
	/* identical calls share the bounded call of the first */
	foreach(lc, found)
	{
		ListCell   *lc2;

		foreach(lc2, cxt->aggs)
		{
			DpBoundedAgg *ba = lfirst(lc2);

			if (ba->orig != lfirst(lc) && equal(ba->orig, lfirst(lc)))
			{
				DpBoundedAgg *alias = palloc(sizeof(DpBoundedAgg));

				*alias = *ba;
				alias->orig = lfirst(lc);
				cxt->aggs = lappend(cxt->aggs, alias);
				break;
			}
		}
	}
}

/*
 * q becomes the outer query: it reads q1 (the units' contributions, as the
 * subquery dp_units; rows of rank at most g if rankcol is not 0), its dp
 * aggregates replaced by their bounded calls.
 */
static void
DpUnitOuterQuery(DpUnitRewrite *cxt, Query *q, Query *q1, AttrNumber rankcol)
{
	const DpUnitBound *ub = cxt->ub;
	List	   *colnames = NIL;
	RangeTblEntry *sub;
	ListCell   *lc;

	/* the outer query reads q1 */
	foreach(lc, q1->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		if (!te->resjunk)
			colnames = lappend(colnames, makeString(pstrdup(te->resname)));
	}
	sub = makeNode(RangeTblEntry);
	sub->rtekind = RTE_SUBQUERY;
	sub->subquery = q1;
	sub->eref = makeAlias("dp_units", colnames);
	sub->lateral = false;
	sub->inh = false;
	sub->inFromCl = true;
	q->targetList = (List *) DpUnitMutator((Node *) q->targetList, cxt);
	q->havingQual = DpUnitMutator(q->havingQual, cxt);
	q->rtable = list_make1(sub);
	q->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)),
							   rankcol != 0 ? (Node *) DpOp(cxt->pstate, "<=",
													 (Expr *) makeVar(1, rankcol, INT8OID, -1, InvalidOid, 0),
													 (Expr *) DpInt8Const(ub->groups)) : NULL);
	((RangeTblRef *) linitial(q->jointree->fromlist))->rtindex = 1;
	q->hasAggs = true;
}

/*
 * Rewrite q (validated: one protected table at prot_rti, dp aggregates,
 * GROUP BY on columns) so that each unit's contribution is bounded before
 * noise (see the section comment).  relid: for the public keys of GROUP BY
 * columns of a protected table.  Adds partition selection or the public-key
 * join for GROUP BY, as for tables without a unit.
 */
void
DpBoundUnits(Query *q, int prot_rti, Oid relid, bool is_protected, const DpUnitBound *ub)
{
	DpUnitRewrite cxt;
	Query	   *q1 = makeNode(Query);
	List	   *found = NIL;
	List	   *distinct = NIL;
	AttrNumber	rankcol = 0;
	bool		has_histogram = false;
	bool		distinct_count = false;
	bool		cells;
	bool		ranked;
	int64		max_cells;
	ArrayType  *pubkeys[INDEX_MAX_KEYS];
	bool		public_groups = false;
	List	   *key_quals = NIL;
	List	   *narrow = NIL;

	memset(&cxt, 0, sizeof(cxt));
	cxt.q1 = q1;
	cxt.prot_rti = prot_rti;
	cxt.ub = ub;
	cxt.pstate = make_parsestate(NULL);

	distinct = DpUnitCollectAggs(q, &found, &has_histogram);
	distinct_count = DpUnitDistinctCount(q, distinct, prot_rti, ub, has_histogram);
	cells = has_histogram || q->groupClause != NIL;

	/* public keys of the GROUP BY columns (before the query changes) */
	if (q->groupClause != NIL && is_protected)
		public_groups = DpGroupPublicKeys(q, relid, prot_rti, pubkeys);

	/*
	 * When the released cells are at most g whatever the data (every public
	 * key combination, or the bins of a histogram with constant bins), no
	 * unit can reach more than g of them: the ranking is not needed (cells
	 * outside them are never released), and fewer than g cells split the
	 * mechanism fewer ways.
	 */
	max_cells = cells ? DpReleasedCellsAtMost(q, distinct, public_groups, pubkeys) : 1;
	ranked = cells && max_cells > ub->groups;
	if (distinct_count && (ranked || (q->groupClause != NIL && !public_groups)))
		DpGuardRefuse("on a table with a privacy unit, count(DISTINCT <column>) is grouped only by public keys reaching at most max_groups_contributed groups",
					  "Each person keeps at most max_rows_per_unit of its values in each of its groups; "
					  "a GROUP BY that a person could reach more often, or partition selection, would need its rows.");
	/* a unit reaches at most this many released cells: the mechanism is split over them */
	cxt.groups = (int32) Min((int64) ub->groups, Max(max_cells, 1));

	/* the inner query: the user's FROM and WHERE, grouped by unit and cell */
	DpUnitInnerQuery(&cxt, q, ranked);
	/* GROUP BY on public keys: rows with undeclared keys take no cell */
	if (public_groups)
		DpUnitPublicKeysIn(&cxt, q, relid, pubkeys, &key_quals, &narrow);

	DpUnitBoundAggs(&cxt, distinct, found);

	/* a distinct count: the distinct (cell, value) pairs the units keep */
	if (cxt.distinct_col != 0)
		q1 = DpDistinctValues(&cxt, q1, ub->rows);

	/*
	 * at most g cells per unit: kept while aggregating (dp_pg.unit_cells),
	 * or, for aggregates it does not handle, ranked in random order
	 */
	if (ranked && dp_debug_unit_cells != DP_UNIT_CELLS_WINDOW)
	{
		Query	   *qp = DpUnitCellsQuery(q1, ub->groups, cxt.pubkeys_in, cxt.unit_sums);

		if (qp != NULL)
		{
			q1 = qp;
			ranked = false;
		}
	}
	if (ranked)
		rankcol = DpUnitRankColumn(q1);

	/* the outer query reads q1 */
	DpUnitOuterQuery(&cxt, q, q1, rankcol);

	/* GROUP BY: every public key, or private partition selection over units */
	if (q->groupClause != NIL)
	{
		if (public_groups)
		{
			DpRewritePublicGroupsCore(q, pubkeys,
									  DpIsNotNull((Expr *) makeVar(1, 2, BOOLOID, -1, InvalidOid, 0)),
									  key_quals);
			DpNarrowKeyList(q, narrow, prot_rti);
		}
		else
			DpAddPartitionKeep(q, cxt.groups);
	}
	free_parsestate(cxt.pstate);
}

/*
 * Rank the cells of each unit of q1 (grouped by the unit first, then the
 * cell) in a uniformly random order: row_number() OVER (PARTITION BY unit
 * ORDER BY dp_pg.unit_priority()), appended as a column (its attno
 * returned; the priority is a hidden column after it).  The caller keeps
 * the rows of rank at most g.
 */
AttrNumber
DpUnitRankColumn(Query *q1)
{
	WindowFunc *wf = makeNode(WindowFunc);
	WindowClause *wc = makeNode(WindowClause);
	AttrNumber	prio;
	AttrNumber	rankcol;

	wf->winfnoid = F_ROW_NUMBER;
	wf->wintype = INT8OID;
	wf->wincollid = InvalidOid;
	wf->inputcollid = InvalidOid;
	wf->args = NIL;
	wf->aggfilter = NULL;
	wf->winref = 1;
	wf->winstar = false;
	wf->winagg = false;
	wf->location = -1;
	rankcol = DpAddColumn(q1, (Expr *) wf, "dp_rank", false);
	prio = DpAddColumn(q1, (Expr *) makeFuncExpr(DpLookupFunc("dp_pg", "unit_priority", 0, NULL), INT8OID, NIL,
												 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL),
					   "dp_priority", true);
	wc->name = NULL;
	wc->refname = NULL;
	wc->partitionClause = list_make1(copyObject(linitial(q1->groupClause)));
	wc->orderClause = list_make1(DpSortGroupFor(q1, prio, true));
	wc->frameOptions = FRAMEOPTION_DEFAULTS;
	wc->winref = 1;
	wc->copiedOrder = false;
	q1->windowClause = list_make1(wc);
	q1->hasWindowFuncs = true;
	return rankcol;
}

/*
 * The table a dp query that the analyst path did not handle must bound per
 * unit, or NULL: a protected table with a privacy unit read by the top level
 * of a dp query (any role), or a table with the column named by
 * dp_pg.privacy_unit (a trusted role's explicit request).  A dp aggregate
 * elsewhere in a query that reads such a table (a subquery, a CTE, a view)
 * cannot be bounded: ERROR, rather than an answer whose guarantee is per row
 * instead of per person (reads.c refuses what only planning reveals).
 */
DpProtected *
DpTrustedUnitTarget(Query *q, List *prot)
{
	ListCell   *lc;
	DpProtected *target = NULL;
	DpProtected *guc = NULL;
	bool		requested = dp_privacy_unit != NULL && dp_privacy_unit[0] != '\0';
	bool		any_unit = requested;
	List	   *found = NIL;
	int			relations = 0;
	int			protected_relations = 0;

	foreach(lc, prot)
		if (((DpProtected *) lfirst(lc))->has_unit)
			any_unit = true;
	if (!any_unit || q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		return NULL;

	if (q->hasAggs)
	{
		DpCollectDpAggs((Node *) q->targetList, &found);
		DpCollectDpAggs(q->havingQual, &found);
	}
	if (found != NIL)
	{
		foreach(lc, q->rtable)
		{
			RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);
			DpProtected *p;

			if (r->rtekind != RTE_RELATION)
				continue;
			p = DpFindProtected(prot, r->relid);
			relations++;
			if (p != NULL)
				protected_relations++;
			if (p != NULL && p->has_unit)
				target = p;
			else if (p == NULL && DpIsUnitTable(prot, r->relid))
			{
				if (guc != NULL)
					ereport(ERROR,
							(errcode(ERRCODE_AMBIGUOUS_COLUMN),
							 errmsg("more than one table of this dp query has the privacy unit column \"%s\"", dp_privacy_unit)));
				guc = palloc0(sizeof(DpProtected));
				guc->relid = r->relid;
				guc->has_unit = true;
				namestrcpy(&guc->unit, dp_privacy_unit);
				guc->max_groups = dp_max_groups_contributed;
				guc->max_rows = dp_max_rows_per_unit;
			}
		}
		if (target == NULL && guc == NULL && requested && relations > 0 && protected_relations == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("no table of this dp query has the privacy unit column \"%s\"", dp_privacy_unit),
					 errhint("SET dp_pg.privacy_unit to a column of the table, or RESET it.")));
	}
	return target != NULL ? target : guc;
}
