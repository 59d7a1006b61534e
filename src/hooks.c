/*
 * hooks.c — every PostgreSQL hook dp_pg installs, each a thin body that
 * delegates to the concept that owns the decision.
 *
 * Hooks are chained through the saved prev_ pointers.  They are installed
 * only when dp_pg is preloaded (shared_preload_libraries); without them the
 * aggregates fail closed (callsite.c) and analysts meet the protected
 * tables' privileges, which they do not have.
 *
 *   shmem_request_hook,     ledger/shared.c: the ledger's shared state
 *   shmem_startup_hook
 *   planner_hook            guard/guard.c: masking, validation, release
 *                           level and rewrites before planning; the final
 *                           plan's checks and stamp after
 *   ExecutorStart_hook      guard/reads.c (which plans may run, EXPLAIN),
 *                           callsite.c (constant arguments bound before the
 *                           standard start; call sites planned and charged
 *                           after it)
 *   ExecutorRun_hook        guard/reads.c: dp queries being executed;
 *                           cache.c: answers served from the cache, or
 *                           kept after the run
 *   ExecutorCheckPerms_hook guard/grants.c: no read through dp_pg's grant
 *                           to dp_pg_analyst outside the guard's dp read
 *   ProcessUtility_hook     guard/guard.c: the message floor, objects
 *                           analysts may not create, COPY of masked
 *                           catalogs, statements that would read a
 *                           protected table or act on what one depends on
 *                           (guard/ddl.c); guard/grants.c: grants to
 *                           dp_pg_analyst; guard/partitions.c: tables
 *                           joining (checked after) or leaving (protected
 *                           before) a protected table's family; budget.c:
 *                           DROP ROLE of a role with a budget;
 *                           retention.c: drops of the
 *                           ledger, what the ledger worker must learn at
 *                           commit; cache.c: subscriptions' changes,
 *                           DISCARD ALL
 *   (client_min_messages'   guard/session.c: the message floor on the
 *    check hook)            setting itself (installed there, not a hook
 *                           variable)
 *   object_access_hook      guard/trust.c and guard/stats.c, on the
 *                           function-execute event
 *   needs_fmgr_hook,        guard/trust.c: untrusted functions called
 *   fmgr_hook               outside the executor
 *   get_relation_info_hook, guard/stats.c: the planner sees no statistics of
 *   get_relation_stats_hook,  hidden relations; guard/partitions.c: no join
 *   get_index_stats_hook,     or aggregate of a protected foreign table is
 *   get_attavgwidth_hook      pushed to its server
 *   emit_log_hook           agg_count.c: a hint for dp_count(*, mechanism),
 *                           a syntax error
 *
 * The top layer (docs/development.md): may call every folder.
 */
#include "postgres.h"

#include "catalog/objectaccess.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "optimizer/plancat.h"
#include "optimizer/planner.h"
#include "tcop/utility.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "aggregates.h"
#include "ledger.h"
#include "release.h"
#include "guard/guard.h"
#include "synth/synth.h"
#include "hooks.h"

static shmem_request_hook_type prev_shmem_request = NULL;
static shmem_startup_hook_type prev_shmem_startup = NULL;
static planner_hook_type prev_planner = NULL;
static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorCheckPerms_hook_type prev_ExecutorCheckPerms = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static object_access_hook_type prev_object_access = NULL;
static needs_fmgr_hook_type prev_needs_fmgr = NULL;
static fmgr_hook_type prev_fmgr = NULL;
static get_relation_info_hook_type prev_relation_info = NULL;
static get_relation_stats_hook_type prev_relation_stats = NULL;
static get_index_stats_hook_type prev_index_stats = NULL;
static get_attavgwidth_hook_type prev_attavgwidth = NULL;
static emit_log_hook_type prev_emit_log = NULL;

/* shmem_request_hook */
static void
DpShmemRequestHook(void)
{
	if (prev_shmem_request)
		prev_shmem_request();
	DpLedgerShmemRequest();
}

/* shmem_startup_hook */
static void
DpShmemStartupHook(void)
{
	if (prev_shmem_startup)
		prev_shmem_startup();
	DpLedgerShmemStartup();
}

/* planner_hook */
static PlannedStmt *
DpPlannerHook(Query *parse, const char *query_string, int cursorOptions, ParamListInfo boundParams)
{
	DpPlanCheck check;
	PlannedStmt *result;

	DpGuardBeforePlanning(parse, &check);
	if (prev_planner)
		result = prev_planner(parse, query_string, cursorOptions, boundParams);
	else
		result = standard_planner(parse, query_string, cursorOptions, boundParams);
	DpGuardAfterPlanning(result, &check);
	return result;
}

/* ExecutorStart_hook */
static void
DpExecutorStartHook(QueryDesc *queryDesc, int eflags)
{
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
		DpSynthesizeCheckStatement(queryDesc->plannedstmt);
	DpReadsExecutorStart(queryDesc, eflags);
	DpRunConstantsBind(queryDesc, eflags);
	DpCallSitesBindArguments(queryDesc, eflags);
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	DpCallSitesStart(queryDesc, eflags);
}

/* ExecutorRun_hook */
static void
DpExecutorRunHook(DP_EXECUTOR_RUN_PARAMS)
{
	bool		pushed = DpReadsRunPush(queryDesc);

	PG_TRY();
	{
		/* an answer served from the cache (cache.c); else run, keeping a complete answer */
		if (!DpCacheServe(queryDesc, direction, count))
		{
			DpCacheCaptureBegin(queryDesc);
			if (prev_ExecutorRun)
				prev_ExecutorRun(DP_EXECUTOR_RUN_ARGS);
			else
				standard_ExecutorRun(DP_EXECUTOR_RUN_ARGS);
			DpCacheCaptureEnd(queryDesc, direction, count);
		}
	}
	PG_FINALLY();
	{
		DpCacheCaptureRestore(queryDesc);
		DpReadsRunPop(pushed);
	}
	PG_END_TRY();
}

/* ExecutorCheckPerms_hook (16 added the permission infos) */
#if PG_VERSION_NUM >= 160000
static bool
DpExecutorCheckPermsHook(List *rangeTable, List *rtePermInfos, bool ereport_on_violation)
{
	if (prev_ExecutorCheckPerms && !prev_ExecutorCheckPerms(rangeTable, rtePermInfos, ereport_on_violation))
		return false;
	return DpGrantsCheckPermissions(rangeTable, rtePermInfos, ereport_on_violation);
}
#else
static bool
DpExecutorCheckPermsHook(List *rangeTable, bool ereport_on_violation)
{
	if (prev_ExecutorCheckPerms && !prev_ExecutorCheckPerms(rangeTable, ereport_on_violation))
		return false;
	return DpGrantsCheckPermissions(rangeTable, NIL, ereport_on_violation);
}
#endif

/* ProcessUtility_hook */
static void
DpProcessUtilityHook(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					 ProcessUtilityContext context, ParamListInfo params,
					 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	DpGuardUtility(pstmt);
	DpGrantsCheckUtility(pstmt->utilityStmt);
	DpBudgetCheckUtility(pstmt->utilityStmt);
	DpRetentionCheckUtility(pstmt);
	DpCacheUtility(pstmt->utilityStmt);
	DpPartitionsUtility(pstmt->utilityStmt, false);
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	DpPartitionsUtility(pstmt->utilityStmt, true);
}

/* object_access_hook */
static void
DpObjectAccessHook(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	if (prev_object_access)
		prev_object_access(access, classId, objectId, subId, arg);
	if (access == OAT_FUNCTION_EXECUTE && classId == ProcedureRelationId)
	{
		DpTrustCheckExecute(objectId);
		DpStatsCheckExecute(objectId);
	}
}

/* needs_fmgr_hook */
static bool
DpNeedsFmgrHook(Oid fn_oid)
{
	if (prev_needs_fmgr && prev_needs_fmgr(fn_oid))
		return true;
	return DpTrustNeedsFmgrHook(fn_oid);
}

/* fmgr_hook */
static void
DpFmgrHook(FmgrHookEventType event, FmgrInfo *flinfo, Datum *private)
{
	if (event == FHET_START)
		DpTrustCheckCall(flinfo->fn_oid);
	if (prev_fmgr)
		prev_fmgr(event, flinfo, private);
}

/* get_relation_info_hook */
static void
DpRelationInfoHook(PlannerInfo *root, Oid relationObjectId, bool inhparent, RelOptInfo *rel)
{
	if (prev_relation_info)
		prev_relation_info(root, relationObjectId, inhparent, rel);
	DpStatsRelationInfo(root, relationObjectId, inhparent, rel);
	DpPartitionsRelationInfo(relationObjectId, rel);
}

/* get_relation_stats_hook */
static bool
DpRelationStatsHook(PlannerInfo *root, RangeTblEntry *rte, AttrNumber attnum, VariableStatData *vardata)
{
	if (DpStatsRelationStats(root, rte, attnum, vardata))
		return true;
	return prev_relation_stats ? prev_relation_stats(root, rte, attnum, vardata) : false;
}

/* get_index_stats_hook */
static bool
DpIndexStatsHook(PlannerInfo *root, Oid indexOid, AttrNumber indexattnum, VariableStatData *vardata)
{
	if (DpStatsIndexStats(root, indexOid, indexattnum, vardata))
		return true;
	return prev_index_stats ? prev_index_stats(root, indexOid, indexattnum, vardata) : false;
}

/* get_attavgwidth_hook */
static int32
DpAttWidthHook(Oid relid, AttrNumber attnum)
{
	int32		width = DpStatsAttWidth(relid, attnum);

	if (width > 0)
		return width;
	return prev_attavgwidth ? prev_attavgwidth(relid, attnum) : 0;
}

/* emit_log_hook */
static void
DpEmitLogHook(ErrorData *edata)
{
	DpCountSyntaxHint(edata);
	if (prev_emit_log)
		prev_emit_log(edata);
}

/* Install every hook (only when preloaded). */
void
DpHooksInit(void)
{
	if (!dp_pg_preloaded)
		return;
	prev_shmem_request = shmem_request_hook;
	shmem_request_hook = DpShmemRequestHook;
	prev_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = DpShmemStartupHook;
	prev_planner = planner_hook;
	planner_hook = DpPlannerHook;
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = DpExecutorStartHook;
	prev_ExecutorRun = ExecutorRun_hook;
	ExecutorRun_hook = DpExecutorRunHook;
	prev_ExecutorCheckPerms = ExecutorCheckPerms_hook;
	ExecutorCheckPerms_hook = DpExecutorCheckPermsHook;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = DpProcessUtilityHook;
	prev_object_access = object_access_hook;
	object_access_hook = DpObjectAccessHook;
	prev_needs_fmgr = needs_fmgr_hook;
	needs_fmgr_hook = DpNeedsFmgrHook;
	prev_fmgr = fmgr_hook;
	fmgr_hook = DpFmgrHook;
	prev_relation_info = get_relation_info_hook;
	get_relation_info_hook = DpRelationInfoHook;
	prev_relation_stats = get_relation_stats_hook;
	get_relation_stats_hook = DpRelationStatsHook;
	prev_index_stats = get_index_stats_hook;
	get_index_stats_hook = DpIndexStatsHook;
	prev_attavgwidth = get_attavgwidth_hook;
	get_attavgwidth_hook = DpAttWidthHook;
	prev_emit_log = emit_log_hook;
	emit_log_hook = DpEmitLogHook;
}
