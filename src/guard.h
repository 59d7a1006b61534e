/*
 * guard.h — analysts reach protected tables only through dp queries.
 */
#ifndef DP_GUARD_H
#define DP_GUARD_H

#include "postgres.h"

#include "executor/execdesc.h"
#include "nodes/plannodes.h"

/* Install the planner hook (only when preloaded). */
extern void DpGuardInit(void);

/* ERROR if an analyst EXPLAINs a plan that reads a protected table (ExecutorStart). */
extern void DpGuardExplain(QueryDesc *queryDesc, int eflags);

/* True if a plan's range table reads a protected table. */
extern bool DpPlanTouchesProtected(PlannedStmt *stmt);

#endif							/* DP_GUARD_H */
