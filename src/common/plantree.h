/*
 * plantree.h — walking a finished plan: every node of every plan of a statement.
 */
#ifndef DP_PLANTREE_H
#define DP_PLANTREE_H

#include "postgres.h"

#include "nodes/plannodes.h"

/* Visit one plan node; return true to stop the walk. */
typedef bool (*DpPlanVisitor) (Plan *plan, void *context);

/*
 * Visit every node of a statement's plans (the main plan and every subplan:
 * initplans, subqueries, CTEs), each child of every node kind that has
 * children; stops and returns true as soon as visit does.
 */
extern bool DpPlanWalkStmt(PlannedStmt *stmt, DpPlanVisitor visit, void *context);

#endif							/* DP_PLANTREE_H */
