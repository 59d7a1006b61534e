/*
 * guard/guard.h — analysts learn about protected tables only what charged
 * releases tell them.
 *
 * Threat model
 * ------------
 * An *analyst* is a role with a budget, or a member of one (ledger/shared.c).  It
 * may hold TEMP, own a schema, have created objects before it got its budget,
 * be granted objects of other roles, and send any SQL over any client.
 * Trusted: superusers and what they own (PostgreSQL's built-in objects,
 * dp_pg's, those of extensions), and what the DBA declares: protected tables,
 * public keys, public tables that no analyst can shape.  Leaks by design:
 * that a query ran, its timing and the resources it used (so also the size of
 * a protected table in pages, and resource-limit errors such as
 * temp_file_limit or out of memory), the volume of writes in the cluster (WAL
 * position, transaction ids).
 *
 * Invariants, each enforced at one chokepoint of PostgreSQL (file in brackets):
 *  1. Analysts run only trusted code: in an analyst's session nothing owned by
 *     a non-superuser is executed — functions, procedures, aggregates,
 *     operators' and casts' functions, type I/O, triggers — wherever it
 *     appears; checked where PostgreSQL initialises or calls a function (the
 *     object-access hook's function-execute event, the fmgr hook), not in a
 *     query tree.  Analysts create no objects that hold code or expressions
 *     that run outside a query plan.  [trust.c]
 *  2. Statistics and sizes are closed at the source: the planner sees no
 *     statistics of a protected table the user may not read (so estimates,
 *     plan choice and selectivity code evaluate nothing against its values);
 *     functions that reveal sizes and counters of protected tables run only
 *     through dp_pg.masked_call, which returns NULL for them, and are refused
 *     anywhere else [stats.c]; messages below NOTICE never reach an analyst
 *     (a check hook on client_min_messages) [session.c].
 *  3. Every read of a protected table in an analyst's session is the DP level
 *     of a validated query, read with the owner's rights for that plan only:
 *     reads that appear after the guard looked (inlined SQL functions,
 *     inheritance under an unprotected parent) are refused where the plan is
 *     final, and a plan runs only in the session state it was planned for.
 *     [reads.c]  A partitioned table or inheritance parent is one protected
 *     table with its partitions and children at any depth, now and later:
 *     read through the table at the top only, never a member alone; a table
 *     joining it must be one no analyst can shape, one leaving it stays
 *     protected; a foreign partition's server evaluates nothing that could
 *     fail there and aggregates nothing.  [partitions.c]
 *  4. Bounds, bins and mechanisms are evaluated once, before the charge, and
 *     the plan carries the values (callsite.c).  Every expression evaluated on
 *     protected rows is total: no data-dependent error, notice or side effect;
 *     its constants are computed while planning; arithmetic reads its columns
 *     through their value domains and is admitted only when interval
 *     arithmetic shows no step can fail.  [rowexpr.c, bounds.c, total.c,
 *     keys.c, regex.c]
 *  5. Only released values leave the DP level: the DP level is a
 *     MATERIALIZED common table expression whose rows (GROUP BY keys, noisy
 *     aggregates) are sorted by key; HAVING, ORDER BY, LIMIT, DISTINCT, window
 *     functions and the select list are post-processing above it.  [release.c]
 *     A statement may hold several DP levels (grouping sets, a constant
 *     series, a dp subquery whose released rows filter another), charged
 *     together before any runs.  [multi.c]
 *  6. A public table joins a protected one only when no analyst can shape it
 *     and each protected row provably meets at most one of its rows.
 *     [shape.c, joins.c]
 *     Two protected tables join only on their shared privacy unit, the joined
 *     rows bounded per unit.  [unitjoin.c]
 *  7. No request can make another's charge fail (ledger/worker.c).
 *  8. A released key (GROUP BY key, histogram label, DISTINCT value) is a
 *     function of its equality class, never of one row's spelling of it:
 *     released in a canonical spelling, or refused.  [canonical.c]
 *  9. Nothing an analyst runs — utility statements included — makes
 *     PostgreSQL read a protected table outside a DP level, or changes what
 *     a protected table depends on: refused before it runs.  [ddl.c]
 *
 * This header is guard/'s face: what the rest of dp_pg calls (the hooks,
 * _PG_init, synth/).  Inside guard/ the files stand on floors, lowest first
 * — base, fences, reads, rows, releases, and guard.c on top — and a file
 * calls only its own floor and the floors below (docs/development.md, "The
 * guard's floors"; test/layering.pl checks it).  Each floor's header,
 * floor_<name>.h, declares what it offers the floors above and includes the
 * one below; guard/'s own files include their floor's header.
 */
#ifndef DP_GUARD_H
#define DP_GUARD_H

#include "postgres.h"

#include "compat.h"

#include "catalog/objectaddress.h"
#include "executor/execdesc.h"
#include "nodes/parsenodes.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"
#include "utils/array.h"
#include "utils/selfuncs.h"

#include "mechanism.h"

/* protected.c — the protected tables and their public keys: common/protected.h */
#include "protected.h"

/* ------------------------------------------------------------------------
 * The planner hook and the utility hook (guard.c)
 * ------------------------------------------------------------------------
 */

/* What the planner hook knew before planning, checked against the final plan (reads.c). */
typedef struct DpPlanCheck
{
	bool		active;			/* checks apply */
	bool		analyst;		/* planned in an analyst's session */
	bool		masked;			/* sizes and counters were masked */
	int			protected_reads;	/* protected relations in the query */
	int			catalog_reads;	/* masked catalogs in the query */
	int			unit_reads;		/* tables with a privacy unit in the query */
	bool		bounded;		/* its unit tables are bounded (or it has no dp aggregate) */
	bool		dp_aggregates;	/* a dp aggregate anywhere */
	bool		run_constants;	/* the guard made run-time constants (dp_pg.run_constant) */
	List	   *views;			/* views the guard unwrapped (views.c): the plan depends on them */
} DpPlanCheck;

/* Before planning: masking, validation, the release level and its rewrites. */
extern void DpGuardBeforePlanning(Query *parse, DpPlanCheck *check);

/* After planning: the final plan's checks and stamp. */
extern void DpGuardAfterPlanning(PlannedStmt *stmt, DpPlanCheck *check);

/* ProcessUtility: the guard's checks of utility statements. */
extern void DpGuardUtility(PlannedStmt *pstmt);

/* Set up the guard's caches (from _PG_init, preloaded only). */
extern void DpGuardInit(void);

/* ------------------------------------------------------------------------
 * The executor: plans run as they were approved (reads.c, runconst.c)
 * ------------------------------------------------------------------------
 */

/* ExecutorStart: a plan reading protected tables runs only as it was approved. */
extern void DpReadsExecutorStart(QueryDesc *queryDesc, int eflags);

/* ExecutorRun: track the dp queries being executed (for nested reads). */
extern bool DpReadsRunPush(QueryDesc *queryDesc);
extern void DpReadsRunPop(bool pushed);

/* ExecutorStart: bind the run-time constants (dp_pg.run_constant) of the plan, before the call sites. */
extern void DpRunConstantsBind(QueryDesc *queryDesc, int eflags);

/* ------------------------------------------------------------------------
 * Code trust (trust.c): the object-access and fmgr hooks, and synth/
 * ------------------------------------------------------------------------
 */

/* True if function fn is trusted: owned by a superuser. */
extern bool DpTrustedFunction(Oid fn);

/* True if collation coll may be used on protected rows: owned by a superuser. */
extern bool DpTrustedCollation(Oid coll);

/* Object-access hook, function-execute event: ERROR for untrusted code in an analyst's session. */
extern void DpTrustCheckExecute(Oid fn);

/* needs_fmgr_hook: route calls of untrusted functions through DpTrustCheckCall in analysts' sessions. */
extern bool DpTrustNeedsFmgrHook(Oid fn);

/* fmgr_hook, function entry: ERROR for untrusted code in an analyst's session. */
extern void DpTrustCheckCall(Oid fn);

/* ------------------------------------------------------------------------
 * Statistics and sizes (stats.c): the planner's statistics hooks
 * ------------------------------------------------------------------------
 */

/* Object-access hook: ERROR if a size or counter function is initialised unmasked. */
extern void DpStatsCheckExecute(Oid fn);

/* The planner hooks of stats.c. */
extern void DpStatsRelationInfo(PlannerInfo *root, Oid relid, bool inhparent, RelOptInfo *rel);
extern bool DpStatsRelationStats(PlannerInfo *root, RangeTblEntry *rte, AttrNumber attnum,
								 VariableStatData *vardata);
extern bool DpStatsIndexStats(PlannerInfo *root, Oid indexOid, AttrNumber indexattnum,
							  VariableStatData *vardata);
extern int32 DpStatsAttWidth(Oid relid, AttrNumber attnum);

/* ------------------------------------------------------------------------
 * Partitioned tables and inheritance parents (partitions.c)
 * ------------------------------------------------------------------------
 */

/* get_relation_info_hook: a foreign table of a family, planned for an analyst, has no join or aggregate pushed to its server. */
extern void DpPartitionsRelationInfo(Oid relid, RelOptInfo *rel);

/* ProcessUtility, before (after = false) and after the statement ran: tables joining or leaving a family. */
extern void DpPartitionsUtility(Node *stmt, bool after);

/* ------------------------------------------------------------------------
 * grants.c — the analysts' grant never opens a table without its protection
 * ------------------------------------------------------------------------
 */

/*
 * ExecutorCheckPerms_hook: false (with report, ERROR) if a member of
 * dp_pg_analyst reads a relation through dp_pg's grant to that group.
 * rtePermInfos is NIL before PostgreSQL 16 (the range table carries them).
 */
extern bool DpGrantsCheckPermissions(List *rangeTable, List *rtePermInfos, bool report);

/*
 * One read of relation relid with the rights of user (a permission check's
 * checkAsUser, or the current user) outside the executor: false if it would
 * go through dp_pg's grant to dp_pg_analyst; with report, ERROR instead.
 */
extern bool DpGrantsCheckRelation(Oid relid, Oid user, bool report);

/* ProcessUtility: ERROR for a grant to dp_pg_analyst other than SELECT on a protected table. */
extern void DpGrantsCheckUtility(Node *stmt);

/* ------------------------------------------------------------------------
 * Value domains (domains.c): synth/ reads them too
 * ------------------------------------------------------------------------
 */

/*
 * The value domain of column attno of relid: its CHECK constraints
 * (conjuncts "column op constant", op one of < <= > >= =, the constants
 * read by DpConstValue for coltype) intersected with dp_pg.set_domain's
 * bounds (a date or time column's in its own units: days or microseconds
 * since 2000).  False if either end is unbounded.
 */
extern bool DpColumnDomain(Oid relid, AttrNumber attno, Oid coltype, double *lo, double *hi);

#endif							/* DP_GUARD_H */
