/*
 * guard/views.c — views over protected tables that a DBA defined: judged as
 * the query they expand to.
 *
 * PostgreSQL expands a view into a subquery before the guard sees the query
 * (on 15 the subquery holds the view as two placeholder entries, *OLD* and
 * *NEW*, that carry its permission check; from 16 on the subquery's own
 * entry keeps the view's OID and permission info).  A view that reads a
 * protected table is *trusted* when a superuser owns it, or the owner of a
 * protected table it reads (the DBA, who may read and write the data
 * anyway), and no role an analyst can act as is that owner; every view it
 * reads must be trusted too.  Then no analyst (nor a helper writing for
 * one) could have written or changed its definition, and the guard
 * unwraps it into a plain subquery, which is then
 * judged like any other (flattened into the dp query around it when it
 * filters, projects or joins public tables, a wrapped dp query when it holds
 * aggregates, refused otherwise).  Its expressions are checked as row
 * expressions like the analyst's own, so a security_barrier view needs no
 * barrier (nothing accepted can leak through a condition's order) and
 * security_invoker changes only whose rights read the tables it names.  A
 * view an analyst owns or could have shaped stays a view and is refused.
 *
 * Unwrapping removes the view's own entry, so its permission check is made
 * here, while planning, for the role the executor would check (the
 * invoker, or the owner of the view that reads it), and the view's OID goes
 * into the plan's relation list (guard.c), so that a GRANT, REVOKE or
 * CREATE OR REPLACE of the view makes PostgreSQL plan the query again.
 *
 * A materialized view is not a view: it holds the rows its query read.  One
 * that reads a protected table (directly or through views and materialized
 * views) is never readable by an analyst, whatever its grants, unless an
 * analyst owns it (its refreshes were the guard's, charged).
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "guard/guard.h"

/* Context of the walk. */
typedef struct DpViewsWalk
{
	Query	   *query;			/* the query whose range table is being walked */
	List	   *analysts;		/* roles an analyst can act as (read once) */
	bool		analysts_known;
	List	   *views;			/* OIDs of the views unwrapped */
} DpViewsWalk;

/* The view a subquery entry was expanded from, its permission role and columns; InvalidOid if none. */
static Oid
DpViewOfEntry(Query *q, RangeTblEntry *r, Oid *checkas, Bitmapset **cols)
{
	if (r->rtekind != RTE_SUBQUERY || r->subquery == NULL)
		return InvalidOid;
#if PG_VERSION_NUM >= 160000
	(void) q;
	if (r->relkind == RELKIND_VIEW && OidIsValid(r->relid) && r->perminfoindex != 0)
	{
		RTEPermissionInfo *pi = getRTEPermissionInfo(q->rteperminfos, r);

		*checkas = pi->checkAsUser;
		*cols = pi->selectedCols;
		return r->relid;
	}
#else
	(void) q;
	if (list_length(r->subquery->rtable) >= 2)
	{
		RangeTblEntry *old = linitial_node(RangeTblEntry, r->subquery->rtable);
		RangeTblEntry *new = lsecond_node(RangeTblEntry, r->subquery->rtable);

		if (old->rtekind == RTE_RELATION && old->relkind == RELKIND_VIEW && new->rtekind == RTE_RELATION &&
			new->relid == old->relid)
		{
			*checkas = old->checkAsUser;
			*cols = old->selectedCols;
			return old->relid;
		}
	}
#endif
	return InvalidOid;
}

/* The permission check of a view the executor would have made (SELECT, for role or the invoker). */
static void
DpCheckViewPermission(Oid view, Oid checkas, Bitmapset *cols)
{
	Oid			role = OidIsValid(checkas) ? checkas : GetUserId();
	bool		ok = true;
	int			col = -1;

	if (pg_class_aclcheck(view, role, ACL_SELECT) == ACLCHECK_OK)
		return;
	/* column privileges, as the executor accepts them */
	if (bms_is_empty(cols))
		ok = pg_attribute_aclcheck_all(view, role, ACL_SELECT, ACLMASK_ANY) == ACLCHECK_OK;
	while ((col = bms_next_member(cols, col)) >= 0 && ok)
	{
		AttrNumber	att = col + FirstLowInvalidHeapAttributeNumber;

		if (att == InvalidAttrNumber)
			ok = pg_attribute_aclcheck_all(view, role, ACL_SELECT, ACLMASK_ALL) == ACLCHECK_OK;
		else
			ok = pg_attribute_aclcheck(view, att, role, ACL_SELECT) == ACLCHECK_OK;
	}
	if (!ok)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_VIEW, get_rel_name(view));
}

/* Remove the view's identity from subquery entry r of q: a plain subquery now. */
static void
DpForgetView(Query *q, RangeTblEntry *r)
{
#if PG_VERSION_NUM >= 160000
	/* its permission info stays in q's list, unreferenced: the planner keeps only referenced ones */
	(void) q;
	r->relid = InvalidOid;
	r->relkind = 0;
	r->rellockmode = 0;
	r->perminfoindex = 0;
#else
	/* drop *OLD* and *NEW* (entries 1 and 2) and renumber the rest, as the rewriter added them */
	(void) q;
	r->subquery->rtable = list_delete_first(list_delete_first(r->subquery->rtable));
	OffsetVarNodes((Node *) r->subquery, -2, 0);
#endif
	r->security_barrier = false;
}

/* The owner of relation relid. */
static Oid
DpRelationOwner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/* Walker: true if the query reads a protected table that role owns (at any level). */
static bool
DpOwnsProtectedWalker(Node *node, Oid *role)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, DpOwnsProtectedWalker, role, QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *r = (RangeTblEntry *) node;

		return r->rtekind == RTE_RELATION && DpIsProtected(r->relid) && DpRelationOwner(r->relid) == *role;
	}
	return expression_tree_walker(node, DpOwnsProtectedWalker, role);
}

/* True if the view's query reads a protected table that role owns. */
static bool
DpOwnsProtectedRead(Node *query, Oid role)
{
	return DpOwnsProtectedWalker(query, &role);
}

/* One range-table entry of cxt->query: a view over a protected table is unwrapped if trusted, else refused. */
static void
DpViewEntry(RangeTblEntry *r, DpViewsWalk *cxt)
{
	Oid			checkas = InvalidOid;
	Bitmapset  *cols = NULL;
	Oid			view = DpViewOfEntry(cxt->query, r, &checkas, &cols);
	Oid			owner;

	if (!OidIsValid(view) || DpReadsProtected(r->subquery) == 0)
		return;
	if (!cxt->analysts_known)
	{
		cxt->analysts = DpAnalystReachableRoles();
		cxt->analysts_known = true;
	}
	owner = DpRelationOwner(view);
	if (list_member_oid(cxt->analysts, owner))
		DpGuardRefuse("a view an analyst owns cannot read a protected table",
					  psprintf("View \"%s\" belongs to a role an analyst can act as, who could give it any definition; "
							   "a DBA's views over protected tables are judged as the query they expand to.",
							   get_rel_name(view)));
	if (!superuser_arg(owner) && !DpOwnsProtectedRead((Node *) r->subquery, owner))
		DpGuardRefuse("only a superuser or the owner of the protected table may define a view over it",
					  psprintf("View \"%s\" belongs to a role that owns none of the protected tables it reads.",
							   get_rel_name(view)));
	DpCheckViewPermission(view, checkas, cols);
	DpForgetView(cxt->query, r);
	cxt->views = lappend_oid(cxt->views, view);
}

/* Context of DpReadsProtectedWalker. */
typedef struct DpMatviewWalk
{
	int			depth;			/* views and materialized views followed so far */
	List	   *path;			/* their OIDs (15's rules name the relation itself: *OLD*, *NEW*) */
} DpMatviewWalk;

static bool DpRelationReadsProtected(Oid relid, DpMatviewWalk *cxt);

/* Walker: true if a query reads a protected table, directly or through views and materialized views. */
static bool
DpReadsProtectedWalker(Node *node, DpMatviewWalk *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, DpReadsProtectedWalker, cxt, QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *r = (RangeTblEntry *) node;

		return r->rtekind == RTE_RELATION &&
			(DpIsProtected(r->relid) ||
			 ((r->relkind == RELKIND_VIEW || r->relkind == RELKIND_MATVIEW) && DpRelationReadsProtected(r->relid, cxt)));
	}
	return expression_tree_walker(node, DpReadsProtectedWalker, cxt);
}

/* True if the stored query of view or materialized view relid reads a protected table (at any depth). */
static bool
DpRelationReadsProtected(Oid relid, DpMatviewWalk *cxt)
{
	Relation	rel;
	bool		found = false;

	if (list_member_oid(cxt->path, relid))
		return false;			/* the relation itself, or a view already being followed */
	/* too deep to follow: taken as reading one (fail closed) */
	if (++cxt->depth > 32)
		return true;
	cxt->path = lappend_oid(cxt->path, relid);
	rel = relation_open(relid, AccessShareLock);
	for (int i = 0; rel->rd_rules != NULL && i < rel->rd_rules->numLocks && !found; i++)
		found = DpReadsProtectedWalker((Node *) rel->rd_rules->rules[i]->actions, cxt);
	relation_close(rel, AccessShareLock);
	cxt->path = list_delete_last(cxt->path);
	cxt->depth--;
	return found;
}

/*
 * A materialized view holds the rows its query read when it was last
 * refreshed: over a protected table, raw rows that no guard stands in front
 * of, unless its owner is a role an analyst can act as — then every refresh
 * ran its query through the guard, as that analyst's, and charged it: it
 * holds released values.  Any other one an analyst's query may not read
 * (whatever the grants say): the DBA's materialized views are the DBA's own.
 */
static void
DpRefuseProtectedMatview(RangeTblEntry *r, DpViewsWalk *walk)
{
	DpMatviewWalk cxt = {0, NIL};

	if (r->rtekind != RTE_RELATION || r->relkind != RELKIND_MATVIEW || DpIsProtected(r->relid))
		return;
	if (!walk->analysts_known)
	{
		walk->analysts = DpAnalystReachableRoles();
		walk->analysts_known = true;
	}
	if (list_member_oid(walk->analysts, DpRelationOwner(r->relid)))
		return;
	if (DpRelationReadsProtected(r->relid, &cxt))
		DpGuardRefuseHint("a materialized view over a protected table is not readable by analysts",
						  psprintf("\"%s\" holds the rows its query read from a protected table, which no dp query "
								   "stands in front of.", get_rel_name(r->relid)),
						  "Ask the protected table itself with dp aggregates, or a DBA's (plain) view over it.");
}

/* Walker over every query level: views in range tables (before their subqueries are walked). */
static bool
DpViewsWalker(Node *node, DpViewsWalk *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *save = cxt->query;
		bool		r;

		cxt->query = (Query *) node;
		r = query_tree_walker((Query *) node, DpViewsWalker, cxt, QTW_EXAMINE_RTES_BEFORE);
		cxt->query = save;
		return r;
	}
	if (IsA(node, RangeTblEntry))
	{
		DpRefuseProtectedMatview((RangeTblEntry *) node, cxt);
		DpViewEntry((RangeTblEntry *) node, cxt);
		return false;
	}
	return expression_tree_walker(node, DpViewsWalker, cxt);
}

/* Unwrap the trusted views over protected tables at every level of q; returns their OIDs (see above). */
List *
DpUnwrapTrustedViews(Query *q)
{
	DpViewsWalk cxt;

	memset(&cxt, 0, sizeof(cxt));
	(void) DpViewsWalker((Node *) q, &cxt);
	return cxt.views;
}
