/*
 * guard/floor_reads.h — the guard's floor reads: what a query reads, and
 * what it may learn besides the releases (docs/development.md, "The guard's
 * floors").
 *
 *   stats.c        statistics, sizes and counters of protected tables masked
 *   reads.c        every read of a protected table is a released read; plan
 *                  stamps
 *   views.c        a DBA's views over protected tables, unwrapped
 *   partitions.c   partitioned tables, inheritance parents, foreign
 *                  partitions
 *
 * Inner header of guard/; includes the floor below.
 */
#ifndef DP_GUARD_FLOOR_READS_H
#define DP_GUARD_FLOOR_READS_H

#include "guard/floor_fences.h"

/* ------------------------------------------------------------------------
 * stats.c — statistics and side channels (the planner's hooks are in guard.h)
 * ------------------------------------------------------------------------
 */

/*
 * True if the size and statistics of relation relid (a protected table, one
 * of its indexes, its TOAST table or owned sequences) are hidden from the
 * current user: every protected relation for an analyst, the ones it may not
 * read for anyone else but a superuser.
 */
extern bool DpStatsHidden(Oid relid);

/* True if anything is hidden from the current user. */
extern bool DpStatsAnyHidden(void);

/* Mask sizes and counters in a query about to be planned (see stats.c). */
extern void DpStatsMaskQuery(Query *parse);

/* ProcessUtility: ERROR for COPY of a catalog that would show hidden sizes. */
extern void DpStatsCheckUtility(Node *stmt);

/* True if relid is one of the catalogs whose rows or columns the masking rewrites. */
extern bool DpStatsMaskedCatalog(Oid relid);

/* Register the cache invalidation callbacks. */
extern void DpStatsInit(void);

/* ------------------------------------------------------------------------
 * reads.c — every read is a released read (the executor's hooks are in guard.h)
 * ------------------------------------------------------------------------
 */

/* The number of protected relations a query tree reads (at any depth). */
extern int	DpReadsProtected(Query *parse);

/* Count what the query reads (before planning). */
extern void DpReadsBeforePlanning(Query *parse, DpPlanCheck *check);

/* Check and stamp the final plan. */
extern void DpReadsAfterPlanning(PlannedStmt *stmt, DpPlanCheck *check);

/* True if the plan is stamped as holding run-time constants to bind. */
extern bool DpPlanHasRunConstants(PlannedStmt *stmt);

/* ------------------------------------------------------------------------
 * views.c — a DBA's views over protected tables
 * ------------------------------------------------------------------------
 */

/* Unwrap the trusted views over protected tables at every level of q (refuse the others); their OIDs. */
extern List *DpUnwrapTrustedViews(Query *q);

/* ------------------------------------------------------------------------
 * partitions.c — partitioned tables, inheritance parents, foreign partitions
 * ------------------------------------------------------------------------
 */

/* ERROR 42501 if an analyst's query reads a partition or inheritance child of a protected table on its own, or an unprotected parent of one. */
extern void DpPartitionsCheckQuery(Query *parse);

/* Before planning an analyst's query that reads a family holding foreign tables: ERROR 42501 unless each is a postgres_fdw table fit to be read. */
extern void DpPartitionsCheckShards(Query *parse);

/* A DP level over a family with foreign tables: row predicates a remote server may not evaluate stay here (dp_pg.keep_local). */
extern void DpPartitionsKeepLocal(Query *d);

/* After planning an analyst's query: ERROR 42501 unless each foreign scan of a family is a plain, safe postgres_fdw read. */
extern void DpPartitionsCheckPlan(PlannedStmt *stmt);

#endif							/* DP_GUARD_FLOOR_READS_H */
