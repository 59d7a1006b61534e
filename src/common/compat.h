/*
 * compat.h — what differs between the PostgreSQL versions dp_pg builds
 * against (15 to 18), in one place.  Every file includes it after
 * postgres.h (through the headers that need it).
 *
 *  - DP_NORETURN: a function that never returns, written before the
 *    declaration (PostgreSQL 18 replaced the trailing
 *    pg_attribute_noreturn() with the leading pg_noreturn).
 *  - varatt.h: the varlena macros (VARDATA_ANY, VARSIZE_ANY, ...) moved
 *    there from postgres.h in 16.
 *  - DpGucMalloc: a GUC check hook's *extra must come from guc_malloc from
 *    16 on (the GUC code frees it with guc_free); plain malloc before.
 *  - DpSetCheckAsUser / DpMoveRangeTable: 16 moved the permission fields of
 *    a range-table entry (checkAsUser, requiredPerms, selectedCols) to
 *    Query.rteperminfos, indexed by the entry's perminfoindex; a rewrite that
 *    moves a range table into a new Query must move the permissions with it.
 *  - DpProcAclCheck: pg_proc_aclcheck became object_aclcheck in 16.
 *  - DpFlattenJoinAliasVars, DpOpenCollation: changed signatures (16, 18).
 *  - DP_EXECUTOR_RUN_PARAMS / _ARGS: ExecutorRun_hook lost execute_once in 18.
 *  - DpFormMinimalTuple: heap_form_minimal_tuple takes extra space from 18.
 *  - DpFlattenGroupVars: 18 adds an RTE_GROUP entry to a grouped query, and
 *    its select list and HAVING refer to the grouped expressions through
 *    Vars of that entry; the guard reads the expressions themselves.
 */
#ifndef DP_COMPAT_H
#define DP_COMPAT_H

#include "nodes/parsenodes.h"

#if PG_VERSION_NUM < 150000
#error "dp_pg needs PostgreSQL 15 or newer"
#endif

#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#include "parser/parse_relation.h"
#endif
#include "optimizer/optimizer.h"
#include "utils/pg_locale.h"

#if PG_VERSION_NUM >= 180000
#define DP_NORETURN pg_noreturn
#else
#define DP_NORETURN __attribute__((noreturn))
#endif

#if PG_VERSION_NUM >= 160000
#include "utils/guc.h"
#define DpGucMalloc(size) guc_malloc(LOG, (size))
#else
#define DpGucMalloc(size) malloc(size)
#endif

/* EXECUTE right of a function (16 folded the per-catalog checks into object_aclcheck). */
#if PG_VERSION_NUM >= 160000
#include "catalog/pg_proc.h"
#include "utils/acl.h"
#define DpProcAclCheck(fn, role, mode) object_aclcheck(ProcedureRelationId, (fn), (role), (mode))
#else
#define DpProcAclCheck(fn, role, mode) pg_proc_aclcheck((fn), (role), (mode))
#endif

/* Join alias Vars replaced by the joined columns (16 added a PlannerInfo argument). */
#if PG_VERSION_NUM >= 160000
#define DpFlattenJoinAliasVars(q, node) flatten_join_alias_vars(NULL, (q), (node))
#else
#define DpFlattenJoinAliasVars(q, node) flatten_join_alias_vars((q), (node))
#endif

/*
 * Open a collation's locale now (an invalid one fails here, before any row);
 * 18 removed lc_collate_is_c and opens C collations too.
 */
#if PG_VERSION_NUM >= 180000
#define DpOpenCollation(coll) ((void) pg_newlocale_from_collation(coll))
#else
#define DpOpenCollation(coll) \
	do { if (!lc_collate_is_c(coll)) (void) pg_newlocale_from_collation(coll); } while (0)
#endif

/* ExecutorRun_hook's parameters and the call passing them on (18 dropped execute_once). */
#if PG_VERSION_NUM >= 180000
#define DpFormMinimalTuple(desc, values, nulls) heap_form_minimal_tuple((desc), (values), (nulls), 0)
#else
#define DpFormMinimalTuple(desc, values, nulls) heap_form_minimal_tuple((desc), (values), (nulls))
#endif

#if PG_VERSION_NUM >= 180000
#define DP_EXECUTOR_RUN_PARAMS QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define DP_EXECUTOR_RUN_ARGS queryDesc, direction, count
#else
#define DP_EXECUTOR_RUN_PARAMS QueryDesc *queryDesc, ScanDirection direction, uint64 count, bool execute_once
#define DP_EXECUTOR_RUN_ARGS queryDesc, direction, count, execute_once
#endif

/* The role whose rights the permission check of rte (in query q) uses. */
static inline void
DpSetCheckAsUser(Query *q, RangeTblEntry *rte, Oid role)
{
#if PG_VERSION_NUM >= 160000
	getRTEPermissionInfo(q->rteperminfos, rte)->checkAsUser = role;
#else
	(void) q;
	rte->checkAsUser = role;
#endif
}

/* dst takes over src's range table (and, from 16 on, its permission infos). */
static inline void
DpMoveRangeTable(Query *dst, Query *src)
{
	dst->rtable = src->rtable;
#if PG_VERSION_NUM >= 160000
	dst->rteperminfos = src->rteperminfos;
	src->rteperminfos = NIL;
#endif
}

/*
 * Replace references to the RTE_GROUP entry by the grouped expressions, and
 * drop the entry (18+): the guard's rewrites then see the range table that
 * 15 to 17 have.
 */
static inline void
DpFlattenGroupVars(Query *q)
{
#if PG_VERSION_NUM >= 180000
	if (q->hasGroupRTE)
	{
		q->targetList = (List *) flatten_group_exprs(NULL, q, (Node *) q->targetList);
		q->havingQual = flatten_group_exprs(NULL, q, q->havingQual);
		/* nothing refers to the entry now: drop it when it is the last one (as the parser adds it) */
		if (q->rtable != NIL && llast_node(RangeTblEntry, q->rtable)->rtekind == RTE_GROUP)
		{
			q->rtable = list_delete_last(q->rtable);
			q->hasGroupRTE = false;
		}
	}
#else
	(void) q;
#endif
}

/* ReplaceVarsFromTargetList (18 added the result relation, 0: none). */
#include "rewrite/rewriteManip.h"
#if PG_VERSION_NUM >= 180000
#define DpReplaceVarsFromTargetList(node, varno, up, rte, tlist, nomatch, nomatch_varno, hassub) \
	ReplaceVarsFromTargetList((node), (varno), (up), (rte), (tlist), 0, (nomatch), (nomatch_varno), (hassub))
#else
#define DpReplaceVarsFromTargetList(node, varno, up, rte, tlist, nomatch, nomatch_varno, hassub) \
	ReplaceVarsFromTargetList((node), (varno), (up), (rte), (tlist), (nomatch), (nomatch_varno), (hassub))
#endif

/*
 * The permission info of range-table entry rte of src moves to dst (which
 * takes rte over): from 16 on, appended to dst's list and re-indexed.
 */
static inline void
DpMovePermInfo(Query *dst, Query *src, RangeTblEntry *rte)
{
#if PG_VERSION_NUM >= 160000
	if (rte->perminfoindex != 0)
	{
		RTEPermissionInfo *pi = getRTEPermissionInfo(src->rteperminfos, rte);

		dst->rteperminfos = lappend(dst->rteperminfos, pi);
		rte->perminfoindex = list_length(dst->rteperminfos);
	}
#else
	(void) dst;
	(void) src;
	(void) rte;
#endif
}

/* dst takes over src's whole range table: its permission infos too (16+). */
static inline void
DpTakePermInfos(Query *dst, Query *src)
{
#if PG_VERSION_NUM >= 160000
	dst->rteperminfos = src->rteperminfos;
#else
	(void) dst;
	(void) src;
#endif
}

/* q reads no relation any more: drop its permission infos (16+). */
static inline void
DpClearPermInfos(Query *q)
{
#if PG_VERSION_NUM >= 160000
	q->rteperminfos = NIL;
#else
	(void) q;
#endif
}

/* q no longer groups through its RTE_GROUP entry (its Vars were flattened). */
static inline void
DpClearGroupRTE(Query *q)
{
#if PG_VERSION_NUM >= 180000
	q->hasGroupRTE = false;
#else
	(void) q;
#endif
}


#endif							/* DP_COMPAT_H */
