/*
 * guard/narrow.c — filters narrow the listed keys of generalised GROUP BY
 * keys.
 *
 * A GROUP BY key computed from a column with declared public keys (say
 * date_trunc('week', day), every day of four years declared) lists every
 * value the expression takes on the declared keys (groups.c), empty groups
 * too.  A WHERE on that column ("the last 30 days") keeps only some rows;
 * listing all 209 weeks would release 205 groups of pure noise.  So each
 * listed key value is kept only if one of the declared keys it comes from
 * passes the WHERE conjuncts that read nothing but that column (and, when
 * the other GROUP BY keys are columns, the conjuncts on each of them): the
 * key list becomes
 *
 *   SELECT DISTINCT key1, ..., keyN
 *   FROM (VALUES (key1, ..., keyN, base1, ...), ...) dp_key_base
 *   WHERE <those conjuncts, on the base columns>
 *
 * with one row per combination of key values and the declared keys that
 * give them.  The conjuncts are total row expressions already (shape.c)
 * and run here on declared values only, after bound parameters and
 * relative dates are known (they are run-time constants, bound before the
 * query runs): what is listed is a function of public values and the
 * query's constants.  Rows are not filtered here (the WHERE still does
 * that); without such conjuncts, or beyond DP_NARROW_MAX_ROWS combinations,
 * the list stays whole.
 *
 * Layer guard/, floor releases (docs/development.md): may call guard/'s
 * floors base, fences, reads, rows and releases, the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "guard/floor_releases.h"

#define DP_NARROW_MAX_ROWS 1000000

/* One key whose list can be narrowed. */
typedef struct DpNarrowKey
{
	int			k;				/* its position among the GROUP BY keys */
	Node	   *key;			/* the key expression (a column: NULL) */
	AttrNumber	base;			/* its column */
	Oid			basetype;
	int32		basetypmod;
	Oid			basecoll;
	ArrayType  *declared;		/* the column's declared keys (text[]); NULL for a column key */
	List	   *quals;			/* the conjuncts on the column */
} DpNarrowKey;

/* Context of DpOneColumnWalker. */
typedef struct DpOneColumn
{
	int			rti;
	AttrNumber	attno;			/* 0: not found yet */
	bool		other;			/* another column, or something that is not a row expression */
} DpOneColumn;

/* Walker: the single column (of entry rti) an expression reads, or other. */
static bool
DpOneColumnWalker(Node *node, DpOneColumn *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup != 0 || v->varno != cxt->rti || v->varattno <= 0 ||
			(cxt->attno != 0 && cxt->attno != v->varattno))
			cxt->other = true;
		else
			cxt->attno = v->varattno;
		return false;
	}
	if (IsA(node, SubLink) || IsA(node, Aggref) || IsA(node, WindowFunc) || IsA(node, Query) ||
		IsA(node, GroupingFunc))
	{
		cxt->other = true;
		return false;
	}
	return expression_tree_walker(node, DpOneColumnWalker, cxt);
}

/* The column of entry rti that node reads, alone; 0 if none or several. */
static AttrNumber
DpOneColumnOf(Node *node, int rti)
{
	DpOneColumn cxt = {rti, 0, false};

	(void) DpOneColumnWalker(node, &cxt);
	return cxt.other ? 0 : cxt.attno;
}

/* Walker: the Var of column attno of entry rti in an expression (*found). */
typedef struct DpFindColumn
{
	int			rti;
	AttrNumber	attno;
	Var		   *found;
} DpFindColumn;

static bool
DpFindColumnWalker(Node *node, DpFindColumn *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && ((Var *) node)->varno == cxt->rti && ((Var *) node)->varattno == cxt->attno)
	{
		cxt->found = (Var *) node;
		return true;
	}
	return expression_tree_walker(node, DpFindColumnWalker, cxt);
}

/* The Var node of column attno of entry rti in expr (exactly as it appears), or *var unchanged. */
static void
DpFindColumnPart(Node *expr, int rti, AttrNumber attno, Var **var)
{
	DpFindColumn cxt = {rti, attno, NULL};

	if (DpFindColumnWalker(expr, &cxt))
		*var = cxt.found;
}

/* The type of column attno of relid. */
static void
DpColumnType(Oid relid, AttrNumber attno, Oid *type, int32 *typmod, Oid *coll)
{
	get_atttypetypmodcoll(relid, attno, type, typmod, coll);
}

/*
 * The keys (of a DP level grouped on public keys: keys[0..nkeys-1], columns
 * of relid at entry rti) whose lists the conjuncts of where narrow: a
 * generalising key of one column with declared public keys, and, beside
 * one, a column key; each with the conjuncts that read only its column.
 * NIL when there is nothing to narrow (all keys columns: groups.c's
 * key-only conjuncts do it).
 */
List *
DpNarrowingOf(Node *where, int rti, Oid relid, Node **keys, int nkeys)
{
	List	   *conjuncts;
	List	   *result = NIL;
	bool		any_expression = false;

	if (where == NULL)
		return NIL;
	conjuncts = make_ands_implicit((Expr *) copyObject(where));
	for (int k = 0; k < nkeys; k++)
	{
		DpNarrowKey *nk;
		AttrNumber	base;
		ListCell   *lc;

		if (IsA(keys[k], Var))
			base = ((Var *) keys[k])->varno == rti ? ((Var *) keys[k])->varattno : 0;
		else
			base = DpOneColumnOf(keys[k], rti);
		if (base == 0)
			continue;
		nk = palloc0(sizeof(DpNarrowKey));
		nk->k = k;
		nk->base = base;
		DpColumnType(relid, base, &nk->basetype, &nk->basetypmod, &nk->basecoll);
		if (!IsA(keys[k], Var))
		{
			/* listed from the column's declared keys, not from fixed values (extract's fields, buckets) */
			if (exprType(keys[k]) == BOOLOID || DpGeneralisedPublicKeys(keys[k], InvalidOid, 0) != NULL)
				continue;
			nk->declared = DpPublicKeys(relid, get_attname(relid, base, false));
			if (nk->declared == NULL)
				continue;
			nk->key = keys[k];
		}
		foreach(lc, conjuncts)
		{
			Node	   *c = lfirst(lc);

			if (contain_var_clause(c) && DpOneColumnOf(c, rti) == base)
				nk->quals = lappend(nk->quals, c);
		}
		if (nk->quals == NIL)
			continue;
		any_expression |= nk->key != NULL;
		result = lappend(result, nk);
	}
	return any_expression ? result : NIL;
}

/* Mutator: column base of entry rti becomes column col of entry 1 (the VALUES of the subquery). */
typedef struct DpRetarget
{
	int			rti;
	AttrNumber	base;
	AttrNumber	col;
} DpRetarget;

static Node *
DpRetargetMutator(Node *node, DpRetarget *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == cxt->rti && ((Var *) node)->varattno == cxt->base &&
		((Var *) node)->varlevelsup == 0)
	{
		Var		   *v = (Var *) copyObject(node);

		v->varno = 1;
		v->varattno = cxt->col;
		v->varnosyn = 0;
		v->varattnosyn = 0;
#if PG_VERSION_NUM >= 160000
		v->varnullingrels = NULL;
#endif
		return (Node *) v;
	}
	return expression_tree_mutator(node, DpRetargetMutator, cxt);
}

/* The listed key entry of q (the VALUES list groups.c builds), or 0. */
static int
DpKeyListEntry(Query *q)
{
	int			rti = 0;
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		rti++;
		if (r->rtekind == RTE_VALUES && r->eref != NULL && strcmp(r->eref->aliasname, "dp_public_keys") == 0)
			return rti;
	}
	return 0;
}

/* For narrowed key nk: the declared values (as Consts of the column) grouped by their key's text form. */
static List *
DpBasesOfKey(DpNarrowKey *nk, const char *keytext, char **keys, List *bases)
{
	List	   *found = NIL;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, bases)
	{
		if (keys[i] != NULL && strcmp(keys[i], keytext) == 0)
			found = lappend(found, lfirst(lc));
		i++;
	}
	return found;
}

/*
 * Replace the listed keys of q (after groups.c's rewrite: its VALUES entry
 * dp_public_keys) by the narrowed list (see the file comment).  narrow:
 * DpNarrowingOf's result, quals on entry rti of the query it was made for.
 */
void
DpNarrowKeyList(Query *q, List *narrow, int rti)
{
	int			vrti = DpKeyListEntry(q);
	RangeTblEntry *vals;
	int			nkeys;
	List	   *rows = NIL;
	List	  **bases;
	char	 ***basekeys;
	double		nrows = 0;
	Query	   *sub;
	RangeTblEntry *inner;
	List	   *tlist = NIL;
	List	   *quals = NIL;
	List	   *colnames;
	ListCell   *lc;
	int			j;

	if (narrow == NIL || vrti == 0)
		return;
	vals = rt_fetch(vrti, q->rtable);
	nkeys = list_length(vals->coltypes);

	/* each narrowed key's declared values and the key each gives */
	bases = palloc0(sizeof(List *) * list_length(narrow));
	basekeys = palloc0(sizeof(char **) * list_length(narrow));
	j = 0;
	foreach(lc, narrow)
	{
		DpNarrowKey *nk = lfirst(lc);

		if (nk->key != NULL)
		{
			Datum	   *elems;
			bool	   *nulls;
			int			n;
			int			m = 0;
			Var		   *base = makeVar(rti, nk->base, nk->basetype, nk->basetypmod, nk->basecoll, 0);
			Oid			typinput;
			Oid			typioparam;

			deconstruct_array(nk->declared, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
			for (int i = 0; i < n; i++)
				if (!nulls[i])
					elems[m++] = elems[i];
			basekeys[j] = palloc(sizeof(char *) * Max(m, 1));
			DpFindColumnPart(nk->key, rti, nk->base, &base);
			DpEvalOnValues(nk->key, (Node *) base, elems, m, basekeys[j]);
			getTypeInputInfo(nk->basetype, &typinput, &typioparam);
			for (int i = 0; i < m; i++)
				bases[j] = lappend(bases[j],
								   makeConst(nk->basetype, nk->basetypmod, nk->basecoll, get_typlen(nk->basetype),
											 OidInputFunctionCall(typinput, TextDatumGetCString(elems[i]), typioparam,
																  nk->basetypmod),
											 false, get_typbyval(nk->basetype)));
		}
		j++;
	}

	/* the rows: each listed combination, with every declared value that gives its narrowed keys */
	foreach(lc, vals->values_lists)
	{
		List	   *row = lfirst(lc);
		List	   *partial = list_make1(list_copy(row));
		ListCell   *nc;

		j = 0;
		foreach(nc, narrow)
		{
			DpNarrowKey *nk = lfirst(nc);
			Const	   *keyconst = list_nth_node(Const, row, nk->k);
			List	   *next = NIL;
			List	   *extra;
			ListCell   *pc;

			if (keyconst->constisnull)
				return;			/* the row of NULLs of an empty key list (groups.c): nothing to narrow */
			if (nk->key == NULL)
				extra = list_make1(keyconst);	/* a column key is its own base */
			else
			{
				Oid			typoutput;
				bool		typvarlena;

				getTypeOutputInfo(keyconst->consttype, &typoutput, &typvarlena);
				extra = DpBasesOfKey(nk, OidOutputFunctionCall(typoutput, keyconst->constvalue), basekeys[j],
									 bases[j]);
			}
			foreach(pc, partial)
			{
				ListCell   *ec;

				foreach(ec, extra)
					next = lappend(next, lappend(list_copy(lfirst(pc)), lfirst(ec)));
			}
			partial = next;
			j++;
		}
		nrows += list_length(partial);
		if (nrows > DP_NARROW_MAX_ROWS)
			return;				/* too many: the list stays whole */
		rows = list_concat(rows, partial);
	}
	if (rows == NIL)
		return;					/* VALUES needs a row: the list stays whole */

	/* the subquery: the key columns of the rows that pass the conjuncts */
	sub = makeNode(Query);
	sub->commandType = CMD_SELECT;
	sub->querySource = QSRC_ORIGINAL;
	sub->canSetTag = true;
	inner = makeNode(RangeTblEntry);
	inner->rtekind = RTE_VALUES;
	inner->values_lists = rows;
	inner->coltypes = list_copy(vals->coltypes);
	inner->coltypmods = list_copy(vals->coltypmods);
	inner->colcollations = list_copy(vals->colcollations);
	colnames = list_copy(vals->eref->colnames);
	j = 0;
	foreach(lc, narrow)
	{
		DpNarrowKey *nk = lfirst(lc);
		DpRetarget	rt = {rti, nk->base, nkeys + j + 1};
		ListCell   *qc;

		inner->coltypes = lappend_oid(inner->coltypes, nk->basetype);
		inner->coltypmods = lappend_int(inner->coltypmods, nk->basetypmod);
		inner->colcollations = lappend_oid(inner->colcollations, nk->basecoll);
		colnames = lappend(colnames, makeString(psprintf("base%d", j + 1)));
		foreach(qc, nk->quals)
			quals = lappend(quals, DpRetargetMutator(lfirst(qc), &rt));
		j++;
	}
	inner->eref = makeAlias("dp_key_base", colnames);
	inner->inFromCl = true;
	sub->rtable = list_make1(inner);
	sub->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)),
								 (Node *) make_ands_explicit(quals));
	((RangeTblRef *) linitial(sub->jointree->fromlist))->rtindex = 1;
	for (int k = 0; k < nkeys; k++)
	{
		Oid			type = list_nth_oid(vals->coltypes, k);
		TargetEntry *te = makeTargetEntry((Expr *) makeVar(1, k + 1, type, list_nth_int(vals->coltypmods, k),
														   list_nth_oid(vals->colcollations, k), 0),
										  k + 1, pstrdup(strVal(list_nth(vals->eref->colnames, k))), false);
		SortGroupClause *sgc = makeNode(SortGroupClause);
		bool		hashable;

		te->ressortgroupref = k + 1;
		get_sort_group_operators(type, false, true, false, &sgc->sortop, &sgc->eqop, NULL, &hashable);
		sgc->tleSortGroupRef = k + 1;
		sgc->nulls_first = false;
		sgc->hashable = hashable;
		tlist = lappend(tlist, te);
		sub->distinctClause = lappend(sub->distinctClause, sgc);
	}
	sub->targetList = tlist;

	/* the entry becomes the subquery (its name and columns kept: the rest of q refers to them) */
	vals->rtekind = RTE_SUBQUERY;
	vals->subquery = sub;
	vals->values_lists = NIL;
	vals->coltypes = NIL;
	vals->coltypmods = NIL;
	vals->colcollations = NIL;
	vals->security_barrier = false;
	vals->lateral = false;
}
