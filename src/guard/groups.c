/*
 * guard/groups.c — GROUP BY of a DP level: every declared public key, or
 * private partition selection.
 *
 * A GROUP BY on columns whose values the DBA declared public
 * (dp_pg.set_public_keys) lists every combination of public keys, empty
 * groups too (their aggregates add noise to an empty input), and ignores rows
 * with other keys: the DP level becomes
 *     FROM (VALUES <public keys>) k LEFT JOIN <table> ON <table>.col = k.col AND <WHERE>
 *     GROUP BY k.col
 * with every dp aggregate filtered to the table's real rows.  No partition
 * selection is needed: the key set is public.
 *
 * Any other GROUP BY releases its keys only through private partition
 * selection: dp_pg.partition_keep(<dp_pg.partition_mechanism>) is added to
 * the DP level's HAVING (an aggregate, so it stays there), a call site
 * charged with the query: a group shows only if its noisy row count reaches
 * the threshold of dp_pg.partition_threshold, so a key held by one row shows
 * with probability at most delta.  With a privacy unit it is
 * dp_pg.bounded_partition_keep(mech, groups), counting units (units.c).
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "aggregates.h"
#include "release.h"
#include "guard/guard.h"
#include "guc.h"

/* The dp_mechanism type (the argument type of dp_pg.partition_keep, so no search_path lookup). */
Oid
DpMechanismType(void)
{
	Oid			fn = LookupFuncName(list_make2(makeString("dp_pg"), makeString("partition_keep")), -1, NULL, true);
	Oid		   *argtypes;
	int			nargs;

	if (!OidIsValid(fn) || DpKindOfAggregate(fn) != &dp_partition_keep_kind)
		DpGuardRefuse("GROUP BY needs dp_pg.partition_keep", "The dp_pg installation is incomplete.");
	(void) get_func_signature(fn, &argtypes, &nargs);
	return argtypes[0];
}

/* A dp_mechanism constant. */
Const *
DpMechanismConst(const DpMechanism *mech)
{
	DpMechanism *copy = palloc(sizeof(DpMechanism));

	*copy = *mech;
	return makeConst(DpMechanismType(), -1, InvalidOid, sizeof(DpMechanism), PointerGetDatum(copy), false, false);
}

/*
 * Add dp_pg.partition_keep(<dp_pg.partition_mechanism>) to q's HAVING: the
 * private partition selection of a GROUP BY on keys that are not public.
 * Only groups whose noisy row count reaches the threshold are released, so
 * the set of keys costs that mechanism's (epsilon, delta), charged as a call
 * site.  With a privacy unit (groups > 0) it is dp_pg.bounded_partition_keep(mech,
 * groups), counting the units of each group, each unit in at most groups.
 */
void
DpAddPartitionKeep(Query *q, int32 groups)
{
	Const	   *mech = DpMechanismConst(dp_partition_mechanism);
	Node	   *keep;

	if (groups > 0)
	{
		Oid			argtypes[2] = {mech->consttype, INT4OID};

		keep = (Node *) DpMakeAggref(LookupFuncName(list_make2(makeString("dp_pg"), makeString("bounded_partition_keep")),
													2, argtypes, false),
									 BOOLOID, list_make2(mech, DpInt4Const(groups)), InvalidOid, NULL, false);
	}
	else
		keep = (Node *) DpMakeAggref(LookupFuncName(list_make2(makeString("dp_pg"), makeString("partition_keep")),
													1, &mech->consttype, false),
									 BOOLOID, list_make1(mech), InvalidOid, NULL, false);
	q->havingQual = q->havingQual ?
		(Node *) makeBoolExpr(AND_EXPR, list_make2(keep, q->havingQual), -1) : keep;
}


/* ------------------------------------------------------------------------
 * GROUP BY on declared public keys
 * ------------------------------------------------------------------------
 */

#define DP_MAX_PUBLIC_GROUPS 100000


/* Context of DpPublicKeyOrder. */
typedef struct DpKeyOrder
{
	FmgrInfo   *cmp;
	Oid			coll;
	Datum	   *values;
} DpKeyOrder;

/* qsort_arg comparator of key positions: by value, then by position. */
static int
DpPublicKeyOrder(const void *a, const void *b, void *arg)
{
	DpKeyOrder *o = (DpKeyOrder *) arg;
	int			i = *(const int *) a;
	int			j = *(const int *) b;
	int32		c = DatumGetInt32(FunctionCall2Coll(o->cmp, o->coll, o->values[i], o->values[j]));

	if (c != 0)
		return c < 0 ? -1 : 1;
	return i < j ? -1 : (i > j ? 1 : 0);
}

/*
 * The first of each run of equal keys in consts (key type type, collation
 * coll), in their order.  Two declared keys that are equal (5 and 5.000, 'a'
 * and 'A' under a case-insensitive collation, -0 and 0 of a generalised key)
 * would each meet the same rows: one row counted in two groups, twice the
 * sensitivity the noise is calibrated for.
 */
static List *
DpDistinctKeyConsts(List *consts, Oid type, Oid coll)
{
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_CMP_PROC_FINFO);
	int			n = list_length(consts);
	DpKeyOrder	o;
	int		   *pos;
	bool	   *keep;
	List	   *result = NIL;
	int			i = 0;
	ListCell   *lc;

	if (n < 2 || !OidIsValid(tc->cmp_proc_finfo.fn_oid))
		return consts;
	o.cmp = &tc->cmp_proc_finfo;
	o.coll = coll;
	o.values = palloc(sizeof(Datum) * n);
	pos = palloc(sizeof(int) * n);
	keep = palloc0(sizeof(bool) * n);
	foreach(lc, consts)
	{
		o.values[i] = ((Const *) lfirst(lc))->constvalue;
		pos[i] = i;
		i++;
	}
	qsort_arg(pos, n, sizeof(int), DpPublicKeyOrder, &o);
	for (i = 0; i < n; i++)
		keep[pos[i]] = i == 0 ||
			DatumGetInt32(FunctionCall2Coll(o.cmp, coll, o.values[pos[i - 1]], o.values[pos[i]])) != 0;
	i = 0;
	foreach(lc, consts)
		if (keep[i++])
			result = lappend(result, lfirst(lc));
	return result;
}

/* The declared public keys arr (text[]) as constants of key's type, NULLs and repeated keys left out. */
List *
DpPublicKeyConsts(ArrayType *arr, Node *key)
{
	Oid			type = exprType(key);
	int32		typmod = exprTypmod(key);
	Oid			coll = exprCollation(key);
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	Oid			typinput;
	Oid			typioparam;
	List	   *consts = NIL;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &nelems);
	getTypeInputInfo(type, &typinput, &typioparam);
	for (int i = 0; i < nelems; i++)
	{
		if (nulls[i])
			continue;
		consts = lappend(consts,
						 makeConst(type, typmod, coll, get_typlen(type),
								   OidInputFunctionCall(typinput, TextDatumGetCString(elems[i]),
														typioparam, typmod),
								   false, get_typbyval(type)));
	}
	return DpDistinctKeyConsts(consts, type, coll);
}

/* Context of the public-group rewrite. */
typedef struct DpGroupRewrite
{
	int			nkeys;
	AttrNumber	atts[INDEX_MAX_KEYS];	/* grouped columns of the protected table (0: an expression) */
	Node	   *exprs[INDEX_MAX_KEYS];	/* the keys */
	int			values_rti;		/* the VALUES list of public keys */
	Node	   *real_row;		/* "<table>.ctid IS NOT NULL" */
} DpGroupRewrite;

/* Mutator: grouped columns outside aggregates read the key list; dp aggregates skip phantom rows. */
static Node *
DpGroupMutator(Node *node, DpGroupRewrite *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
	{
		Aggref	   *a = (Aggref *) copyObject(node);

		a->aggfilter = a->aggfilter ?
			(Expr *) makeBoolExpr(AND_EXPR, list_make2(a->aggfilter, copyObject(cxt->real_row)), -1) :
			(Expr *) copyObject(cxt->real_row);
		return (Node *) a;
	}
	if (!IsA(node, Var))
	{
		/* a generalising key (keys.c) */
		for (int i = 0; i < cxt->nkeys; i++)
			if (cxt->atts[i] == 0 && equal(cxt->exprs[i], node))
				return (Node *) makeVar(cxt->values_rti, i + 1, exprType(node), exprTypmod(node),
										exprCollation(node), 0);
	}
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup == 0 && v->varno == 1)
			for (int i = 0; i < cxt->nkeys; i++)
				if (cxt->atts[i] != 0 && cxt->atts[i] == v->varattno)
					return (Node *) makeVar(cxt->values_rti, i + 1, v->vartype, v->vartypmod,
											v->varcollid, 0);
		return node;
	}
	return expression_tree_mutator(node, DpGroupMutator, cxt);
}

/* The columns of range-table entry rti (a table or a subquery) as join alias names and Vars. */
static void
DpRteColumns(RangeTblEntry *rte, int rti, List **names, List **vars, List **cols)
{
	if (rte->rtekind == RTE_RELATION)
	{
		Relation	rel = table_open(rte->relid, AccessShareLock);

		for (int a = 0; a < RelationGetDescr(rel)->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), a);

			*names = lappend(*names, makeString(pstrdup(att->attisdropped ? "" : NameStr(att->attname))));
			*vars = lappend(*vars, att->attisdropped ? NULL :
							makeVar(rti, att->attnum, att->atttypid, att->atttypmod, att->attcollation, 0));
			*cols = lappend_int(*cols, att->attnum);
		}
		table_close(rel, AccessShareLock);
	}
	else
	{
		ListCell   *lc;

		Assert(rte->rtekind == RTE_SUBQUERY);
		foreach(lc, rte->subquery->targetList)
		{
			TargetEntry *te = lfirst_node(TargetEntry, lc);

			if (te->resjunk)
				continue;
			*names = lappend(*names, makeString(pstrdup(te->resname)));
			*vars = lappend(*vars, makeVar(rti, te->resno, exprType((Node *) te->expr),
										   exprTypmod((Node *) te->expr), exprCollation((Node *) te->expr), 0));
			*cols = lappend_int(*cols, te->resno);
		}
	}
}

/* Context of DpKeyOnlyWalker. */
typedef struct DpKeyOnly
{
	int			rti;
	const AttrNumber *atts;
	int			nkeys;
} DpKeyOnly;

/* Walker: true if node reads anything but the key columns (or a subquery, aggregate, window). */
static bool
DpKeyOnlyWalker(Node *node, DpKeyOnly *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup != 0 || v->varno != cxt->rti)
			return true;
		for (int k = 0; k < cxt->nkeys; k++)
			if (cxt->atts[k] == v->varattno)
				return false;
		return true;
	}
	if (IsA(node, SubLink) || IsA(node, Aggref) || IsA(node, WindowFunc) || IsA(node, Query))
		return true;
	return expression_tree_walker(node, DpKeyOnlyWalker, cxt);
}

/* Mutator: key column k (varno rti) becomes Var(0, k + 1), a placeholder for the key list's column. */
static Node *
DpKeyPlaceholderMutator(Node *node, DpKeyOnly *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) copyObject(node);

		for (int k = 0; k < cxt->nkeys; k++)
			if (cxt->atts[k] == v->varattno)
			{
				v->varno = 0;
				v->varattno = k + 1;
				v->varnosyn = 0;
				v->varattnosyn = 0;
				return (Node *) v;
			}
	}
	return expression_tree_mutator(node, DpKeyPlaceholderMutator, cxt);
}

/*
 * The AND-ed conjuncts of quals that read nothing but GROUP BY key columns
 * (of range-table entry rti, columns atts[0..nkeys-1]), as expressions over
 * placeholders of the key list's columns (see DpRetargetKeyVars).  They are
 * predicates on public values: they restrict the listed keys.
 */
List *
DpKeyOnlyQuals(Node *quals, int rti, const AttrNumber *atts, int nkeys)
{
	DpKeyOnly	cxt = {rti, atts, nkeys};
	List	   *conjuncts = NIL;
	List	   *result = NIL;
	ListCell   *lc;

	if (quals == NULL)
		return NIL;
	if (IsA(quals, BoolExpr) && ((BoolExpr *) quals)->boolop == AND_EXPR)
		conjuncts = ((BoolExpr *) quals)->args;
	else if (IsA(quals, List))
		conjuncts = (List *) quals;
	else
		conjuncts = list_make1(quals);
	foreach(lc, conjuncts)
	{
		Node	   *c = lfirst(lc);

		if (contain_var_clause(c) && !DpKeyOnlyWalker(c, &cxt))
			result = lappend(result, DpKeyPlaceholderMutator(c, &cxt));
	}
	return result;
}

/* Mutator: the key placeholders (varno 0) become columns of range-table entry *rti. */
static Node *
DpRetargetKeyVars(Node *node, int *rti)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == 0)
	{
		Var		   *v = (Var *) copyObject(node);

		v->varno = *rti;
		return (Node *) v;
	}
	return expression_tree_mutator(node, DpRetargetKeyVars, rti);
}

#if PG_VERSION_NUM >= 160000
/*
 * Mutator: Vars of range-table entry nulling[0] (this query level) are
 * nulled by the outer join nulling[1].  From 16 on the planner reasons with
 * each Var's varnullingrels: unmarked, "x IS NOT NULL" of a column that is
 * never NULL in the table would be taken as always true above the join.
 */
static Node *
DpMarkNulledVars(Node *node, int *nulling)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == nulling[0] && ((Var *) node)->varlevelsup == 0)
	{
		Var		   *v = (Var *) copyObject(node);

		v->varnullingrels = bms_add_member(v->varnullingrels, nulling[1]);
		return (Node *) v;
	}
	return expression_tree_mutator(node, DpMarkNulledVars, nulling);
}
#endif

/*
 * GROUP BY on columns whose values the DBA declared public: every
 * combination of public keys appears, empty groups too (their aggregates get
 * noise on an empty input), and rows with other keys are ignored.  The query
 * becomes
 *     FROM (VALUES <public keys>) k LEFT JOIN <table> ON <table>.col = k.col AND <WHERE>
 *     GROUP BY k.col
 * with every dp aggregate filtered to the table's real rows (real_row).  No
 * partition selection is needed: the key set is public.  The query's only
 * range-table entry is the table, or the per-unit subquery of a table with a
 * privacy unit (DpBoundUnits); arrs holds the key lists of the GROUP BY
 * columns, in order.
 */
void
DpRewritePublicGroupsCore(Query *q, ArrayType **arrs, Node *real_row, List *key_quals)
{
	DpGroupRewrite cxt;
	List	   *keylists[INDEX_MAX_KEYS];
	Oid			types[INDEX_MAX_KEYS];
	int32		typmods[INDEX_MAX_KEYS];
	Oid			colls[INDEX_MAX_KEYS];
	Oid			eqops[INDEX_MAX_KEYS];
	List	   *rows = NIL;
	double		ncombos = 1;
	ListCell   *lc;
	RangeTblEntry *vals;
	RangeTblEntry *join;
	JoinExpr   *je;
	List	   *quals = NIL;
	List	   *colnames = NIL;
	List	   *aliasvars = NIL;
	List	   *leftcols = NIL;
	List	   *rightcols = NIL;
	int			join_rti;
	RangeTblEntry *base = rt_fetch(1, q->rtable);

	cxt.nkeys = 0;
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Node	   *key = (Node *) get_sortgroupclause_expr(sgc, q->targetList);
		ArrayType  *arr = arrs[cxt.nkeys];
		int			k = cxt.nkeys;

		keylists[k] = DpPublicKeyConsts(arr, key);
		ncombos *= Max(list_length(keylists[k]), 1);
		cxt.atts[k] = IsA(key, Var) ? ((Var *) key)->varattno : 0;
		cxt.exprs[k] = key;
		types[k] = exprType(key);
		typmods[k] = exprTypmod(key);
		colls[k] = exprCollation(key);
		eqops[k] = sgc->eqop;
		cxt.nkeys++;
	}
	if (ncombos > DP_MAX_PUBLIC_GROUPS)
		DpGuardRefuse("too many combinations of public keys",
					  psprintf("At most %d groups; this GROUP BY would have %.0f.", DP_MAX_PUBLIC_GROUPS, ncombos));

	/* every combination of the key lists, in declaration order */
	rows = list_make1(NIL);
	for (int k = 0; k < cxt.nkeys; k++)
	{
		List	   *next = NIL;
		ListCell   *r;

		foreach(r, rows)
		{
			ListCell   *c;

			foreach(c, keylists[k])
				next = lappend(next, lappend(list_copy(lfirst(r)), copyObject(lfirst(c))));
		}
		rows = next;
	}
	if (rows == NIL)
	{
		/*
		 * no key at all (a key whose listed values are all NULL): VALUES
		 * needs a row, so one of NULLs that the WHERE removes (the query
		 * answers no group, as its key list says)
		 */
		List	   *row = NIL;

		for (int k = 0; k < cxt.nkeys; k++)
			row = lappend(row, makeNullConst(types[k], typmods[k], colls[k]));
		rows = list_make1(row);
		key_quals = lappend(list_copy(key_quals), makeBoolConst(false, false));
	}

	vals = makeNode(RangeTblEntry);
	vals->rtekind = RTE_VALUES;
	vals->values_lists = rows;
	for (int k = 0; k < cxt.nkeys; k++)
	{
		vals->coltypes = lappend_oid(vals->coltypes, types[k]);
		vals->coltypmods = lappend_int(vals->coltypmods, typmods[k]);
		vals->colcollations = lappend_oid(vals->colcollations, colls[k]);
		colnames = lappend(colnames, makeString(psprintf("key%d", k + 1)));
	}
	vals->eref = makeAlias("dp_public_keys", colnames);
	vals->inFromCl = true;

	/*
	 * Without an aggregate the answer is the key list itself, whatever the
	 * rows (SELECT DISTINCT region, a filter's values): the query reads the
	 * list only, not the table, so no row can make it behave differently
	 */
	if (!contain_agg_clause((Node *) q->targetList) && !contain_agg_clause(q->havingQual))
	{
		int			one = 1;

		q->rtable = list_make1(vals);
		DpClearPermInfos(q);
		cxt.values_rti = 1;
		key_quals = (List *) DpRetargetKeyVars((Node *) copyObject(key_quals), &one);
		q->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)),
								   key_quals == NIL ? NULL :
								   list_length(key_quals) == 1 ? linitial(key_quals) :
								   (Node *) makeBoolExpr(AND_EXPR, key_quals, -1));
		((RangeTblRef *) linitial(q->jointree->fromlist))->rtindex = 1;
		cxt.real_row = real_row;
		q->targetList = (List *) DpGroupMutator((Node *) q->targetList, &cxt);
		q->havingQual = DpGroupMutator(q->havingQual, &cxt);
		q->hasAggs = false;
		q->hasRowSecurity = false;
		return;
	}
	q->rtable = lappend(q->rtable, vals);
	cxt.values_rti = list_length(q->rtable);

	/* the join RTE: its columns are the keys, then the table's */
	colnames = list_copy(colnames);
	for (int k = 0; k < cxt.nkeys; k++)
	{
		aliasvars = lappend(aliasvars, makeVar(cxt.values_rti, k + 1, types[k], typmods[k], colls[k], 0));
		leftcols = lappend_int(leftcols, k + 1);
	}
	DpRteColumns(base, 1, &colnames, &aliasvars, &rightcols);
	join = makeNode(RangeTblEntry);
	join->rtekind = RTE_JOIN;
	join->jointype = JOIN_LEFT;
	join->joinmergedcols = 0;
	join->joinaliasvars = aliasvars;
	join->joinleftcols = leftcols;
	join->joinrightcols = rightcols;
	join->eref = makeAlias("unnamed_join", colnames);
	join->inFromCl = true;
	q->rtable = lappend(q->rtable, join);
	join_rti = list_length(q->rtable);

	for (int k = 0; k < cxt.nkeys; k++)
	{
		OpExpr	   *eq = (OpExpr *) make_opclause(eqops[k], BOOLOID, false,
												  (Expr *) copyObject(cxt.exprs[k]),
												  (Expr *) makeVar(cxt.values_rti, k + 1, types[k], typmods[k], colls[k], 0),
												  InvalidOid, colls[k]);

		set_opfuncid(eq);
		quals = lappend(quals, eq);
	}
	if (q->jointree->quals)
		quals = lappend(quals, q->jointree->quals);
	je = makeNode(JoinExpr);
	je->jointype = JOIN_LEFT;
	je->isNatural = false;
	je->larg = (Node *) makeNode(RangeTblRef);
	((RangeTblRef *) je->larg)->rtindex = cxt.values_rti;
	je->rarg = (Node *) makeNode(RangeTblRef);
	((RangeTblRef *) je->rarg)->rtindex = 1;
	je->quals = list_length(quals) == 1 ? linitial(quals) : (Node *) makeBoolExpr(AND_EXPR, quals, -1);
	je->rtindex = join_rti;
	/* key-only predicates of the WHERE clause restrict the listed keys (public values) */
	key_quals = (List *) DpRetargetKeyVars((Node *) copyObject(key_quals), &cxt.values_rti);
	q->jointree = makeFromExpr(list_make1(je),
							   key_quals == NIL ? NULL :
							   list_length(key_quals) == 1 ? linitial(key_quals) :
							   (Node *) makeBoolExpr(AND_EXPR, key_quals, -1));

	cxt.real_row = real_row;
	q->targetList = (List *) DpGroupMutator((Node *) q->targetList, &cxt);
	q->havingQual = DpGroupMutator(q->havingQual, &cxt);
#if PG_VERSION_NUM >= 160000
	{
		/* above the LEFT JOIN the table's columns can be NULL (16+ marks them so) */
		int			nulling[2] = {1, join_rti};

		q->targetList = (List *) DpMarkNulledVars((Node *) q->targetList, nulling);
		q->havingQual = DpMarkNulledVars(q->havingQual, nulling);
	}
#endif
}

/* "<expr> IS NOT NULL" */
Node *
DpIsNotNull(Expr *arg)
{
	NullTest   *nt = makeNode(NullTest);

	nt->arg = arg;
	nt->nulltesttype = IS_NOT_NULL;
	nt->argisrow = false;
	nt->location = -1;
	return (Node *) nt;
}

/*
 * The public key lists of the GROUP BY columns (columns of relid, the query's
 * range-table entry 1... or keyrti), or false if some key has none.
 */
bool
DpGroupPublicKeys(Query *q, Oid relid, int keyrti, ArrayType **arrs)
{
	int			k = 0;
	ListCell   *lc;

	if (list_length(q->groupClause) > INDEX_MAX_KEYS)
		return false;
	foreach(lc, q->groupClause)
	{
		Var		   *key = (Var *) get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc), q->targetList);

		if (!IsA(key, Var))
		{
			/* an expression key whose values are public (keys.c, bounds.c) */
			arrs[k] = DpExpressionPublicKeys((Node *) key, relid, keyrti);
			if (arrs[k] == NULL)
				return false;
			k++;
			continue;
		}
		if (key->varno != keyrti)
			return false;
		arrs[k] = DpPublicKeys(relid, get_attname(relid, key->varattno, false));
		if (arrs[k] == NULL)
			return false;
		k++;
	}
	return true;
}

/* GROUP BY of a DP level reading one protected table: every public key, or partition selection. */
void
DpGroupRelease(Query *d, Oid relid)
{
	ArrayType  *arrs[INDEX_MAX_KEYS];

	List	   *filters = NIL;
	bool		alone = list_length(d->rtable) == 1;

	if (d->groupClause == NIL)
		return;
	if (!alone && d->hasAggs && list_length(d->groupClause) <= INDEX_MAX_KEYS)
	{
		/*
		 * beside the table only released subqueries (a top-N subquery) and
		 * the joins to them: where they filter the keys alone, the keys stay
		 * listed, among their released keys (multi.c)
		 */
		bool		others = false;
		int			rti = 0;
		ListCell   *lc;

		foreach(lc, d->rtable)
		{
			RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

			if (++rti > 1 && r->rtekind != RTE_JOIN && !DpMultiIsReleased(r))
				others = true;
		}
		if (!others && DpGroupPublicKeys(d, relid, 1, arrs))
		{
			Node	   *keys[INDEX_MAX_KEYS];
			int			k = 0;

			foreach(lc, d->groupClause)
				keys[k++] = (Node *) get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc), d->targetList);
			filters = DpMultiDetachKeyFilters(d, 1, keys, k);
			alone = filters != NIL;
		}
	}
	if (alone && DpGroupPublicKeys(d, relid, 1, arrs))
	{
		AttrNumber	atts[INDEX_MAX_KEYS];
		Node	   *keys[INDEX_MAX_KEYS];
		int			k = 0;
		bool		all_columns = true;
		ListCell   *lc;
		List	   *narrow;

		foreach(lc, d->groupClause)
		{
			Node	   *key = (Node *) get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc), d->targetList);

			all_columns &= IsA(key, Var);
			keys[k] = key;
			atts[k++] = IsA(key, Var) ? ((Var *) key)->varattno : 0;
		}
		/* key-only predicates restrict the listed keys of columns, and of generalised keys (narrow.c) */
		narrow = DpNarrowingOf(d->jointree->quals, 1, relid, keys, k);
		DpRewritePublicGroupsCore(d, arrs,
								  DpIsNotNull((Expr *) makeVar(1, SelfItemPointerAttributeNumber, TIDOID, -1, InvalidOid, 0)),
								  all_columns ? DpKeyOnlyQuals(d->jointree->quals, 1, atts, k) : NIL);
		DpNarrowKeyList(d, narrow, 1);
		if (filters != NIL)
			DpMultiAttachKeyFilters(d, filters);
	}
	else
		DpAddPartitionKeep(d, 0);
}


/* An aggregate call fn(args) of result type rettype. */
Aggref *
DpMakeAggref(Oid fn, Oid rettype, List *args, Oid inputcollid, Expr *filter, bool star)
{
	Aggref	   *a = makeNode(Aggref);
	ListCell   *lc;
	int			i = 1;

	a->aggfnoid = fn;
	a->aggtype = rettype;
	a->aggcollid = InvalidOid;
	a->inputcollid = inputcollid;
	a->aggtranstype = InvalidOid;
	a->aggargtypes = NIL;
	a->args = NIL;
	foreach(lc, args)
	{
		a->aggargtypes = lappend_oid(a->aggargtypes, exprType(lfirst(lc)));
		a->args = lappend(a->args, makeTargetEntry(lfirst(lc), i++, NULL, false));
	}
	a->aggdirectargs = NIL;
	a->aggorder = NIL;
	a->aggdistinct = NIL;
	a->aggfilter = filter;
	a->aggstar = star;
	a->aggvariadic = false;
	a->aggkind = AGGKIND_NORMAL;
	a->agglevelsup = 0;
	a->aggsplit = AGGSPLIT_SIMPLE;
	a->aggno = -1;
	a->aggtransno = -1;
	a->location = -1;
	return a;
}

/* LEAST / GREATEST of two expressions of type type. */

Const *
DpInt8Const(int64 v)
{
	return makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(v), false, FLOAT8PASSBYVAL);
}

Const *
DpInt4Const(int32 v)
{
	return makeConst(INT4OID, -1, InvalidOid, sizeof(int32), Int32GetDatum(v), false, true);
}

/* The i-th (0-based) argument expression of an Aggref. */
