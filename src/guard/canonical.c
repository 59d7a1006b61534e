/*
 * guard/canonical.c — released keys are functions of their equality class
 * (invariant 8 of guard.h).
 *
 * The DP level (release.c) groups rows by its keys and releases, for each
 * group that partition selection keeps, the key datum of the first row the
 * aggregation met.  Equal keys can be spelled differently (canonical.c), so
 * that datum could tell one row from the others: with person 1's amount
 * stored as 5.000 among many 5s, "GROUP BY amount" would show 5.000 or 5
 * depending on whether person 1's row is in the input — a predicate on one
 * person, answered exactly by a charged query.  So every key the DP level
 * releases from rows goes through dp_pg.canonical_key(), evaluated once per
 * released group in the DP level's projection (after HAVING): its select
 * list shows canonical_key(key), and the key itself stays a hidden column
 * that the grouping and the order refer to.  Keys of the declared public
 * key lists (groups.c) come from the DBA's list, not from rows, and are left
 * as declared.  A key whose type has no canonical spelling (a
 * nondeterministic collation, citext, tsvector, ...) is refused while
 * planning, before anything is charged; so is such a key of dp_histogram(key,
 * mech), whose labels agg_histogram.c canonicalises itself.
 *
 * Layer guard/, floor rows (docs/development.md): may call guard/'s floors
 * base, fences, reads and rows, the aggregates, the release path, the ledger,
 * common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/tlist.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "canonical.h"
#include "guard/floor_rows.h"
#include "ledger.h"

/* ERROR 42501 (before any charge): keys of this type cannot be released. */
static void
DpCanonicalRefuse(Node *key, const char *what, const char *refusal)
{
	Oid			coll = exprCollation(key);
	bool		collation = OidIsValid(coll) && !get_collation_isdeterministic(coll);
	char	   *rule = psprintf("%s of type %s cannot be released", what, format_type_be(exprType(key)));

	DpLedgerNoteRefusal(rule, ERRCODE_INSUFFICIENT_PRIVILEGE);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("dp_pg: %s", rule),
			 errdetail("%s A released key must not depend on which row spelled it.", refusal),
			 collation ?
			 errhint("Group by the column under a deterministic collation (<column> COLLATE \"C\"), "
					 "or ask a DBA to declare its public keys (dp_pg.set_public_keys), which are released as declared.") :
			 errhint("Group by a generalising expression of the column (width_bucket, round, trunc, date_trunc), "
					 "or ask a DBA to declare its public keys (dp_pg.set_public_keys), which are released as declared.")));
}

/* dp_pg.canonical_key(anyelement), or InvalidOid on a catalog older than 0.2.0. */
static Oid
DpCanonicalKeyFunction(void)
{
	Oid			anyel = ANYELEMENTOID;

	return LookupFuncName(list_make2(makeString("dp_pg"), makeString("canonical_key")), 1, &anyel, true);
}

/* True if key is a column of a public key list (a VALUES list the guard made, groups.c). */
static bool
DpIsPublicKeyList(Query *d, Node *key)
{
	Var		   *v = (Var *) key;

	return IsA(key, Var) && v->varlevelsup == 0 && v->varno >= 1 && v->varno <= list_length(d->rtable) &&
		rt_fetch(v->varno, d->rtable)->rtekind == RTE_VALUES;
}

/* ERROR before the charge if values of key, released as what, have no canonical spelling. */
void
DpCanonicalCheckKey(Node *key, const char *what)
{
	const char *refusal;

	(void) DpCanonPlan(exprType(key), exprTypmod(key), exprCollation(key), &refusal);
	if (refusal != NULL)
		DpCanonicalRefuse(key, what, refusal);
}

/*
 * Every GROUP BY key the DP level d releases from rows is released through
 * dp_pg.canonical_key (see the file comment); ERROR before the charge for a
 * key without a canonical spelling.  After the rewrites of groups.c and
 * units.c: the keys are d's final grouping expressions.
 */
void
DpCanonicalReleasedKeys(Query *d)
{
	Oid			fn = InvalidOid;
	ListCell   *lc;

	foreach(lc, d->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *te = get_sortgroupclause_tle(sgc, d->targetList);
		Node	   *key = (Node *) te->expr;
		const char *refusal;
		DpCanon    *canon;
		TargetEntry *hidden;

		if (te->resjunk || DpIsPublicKeyList(d, key))
			continue;
		canon = DpCanonPlan(exprType(key), exprTypmod(key), exprCollation(key), &refusal);
		if (refusal != NULL)
			DpCanonicalRefuse(key, "a GROUP BY key", refusal);
		if (canon == NULL)
			continue;			/* equal keys are spelled alike */
		if (!OidIsValid(fn) && !OidIsValid(fn = DpCanonicalKeyFunction()))
			DpGuardRefuse("this GROUP BY key needs dp_pg 0.2.0",
						  psprintf("Keys of type %s are released in a canonical spelling by dp_pg.canonical_key; "
								   "run ALTER EXTENSION dp_pg UPDATE.", format_type_be(exprType(key))));
		/* the key itself: hidden, grouped and sorted on */
		hidden = flatCopyTargetEntry(te);
		hidden->resno = list_length(d->targetList) + 1;
		hidden->resname = NULL;
		hidden->resjunk = true;
		d->targetList = lappend(d->targetList, hidden);
		/* the released column: its canonical spelling, computed per group */
		te->expr = (Expr *) makeFuncExpr(fn, exprType(key), list_make1(copyObject(key)),
										 exprCollation(key), exprCollation(key), COERCE_EXPLICIT_CALL);
		te->ressortgroupref = 0;
	}
}

/* A released key's canonical form (see guard.h). */
Node *
DpCanonicalKey(Node *key)
{
	switch (exprType(key))
	{
		case NUMERICOID:
			return (Node *) makeFuncExpr(F_TRIM_SCALE, NUMERICOID, list_make1(key), InvalidOid, InvalidOid,
										 COERCE_EXPLICIT_CALL);
		case FLOAT8OID:
			/* -0 + 0 is +0 */
			return (Node *) makeFuncExpr(F_FLOAT8PL, FLOAT8OID, list_make2(key, DpBoundConstOf(FLOAT8OID, 0.0)),
										 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		case FLOAT4OID:
			return (Node *) makeFuncExpr(F_FLOAT4PL, FLOAT4OID, list_make2(key, DpBoundConstOf(FLOAT4OID, 0.0)),
										 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		default:
			return key;
	}
}

/* Strip the canonical form's wrapper (DpCanonicalKey). */
Node *
DpStripCanonical(Node *key)
{
	if (IsA(key, FuncExpr) && (((FuncExpr *) key)->funcid == F_TRIM_SCALE ||
							   ((((FuncExpr *) key)->funcid == F_FLOAT8PL || ((FuncExpr *) key)->funcid == F_FLOAT4PL) &&
								IsA(lsecond(((FuncExpr *) key)->args), Const))))
		return linitial(((FuncExpr *) key)->args);
	return key;
}
