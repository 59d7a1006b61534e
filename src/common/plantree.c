/*
 * plantree.c — walking a finished plan: every node of every plan of a statement.
 *
 * PostgreSQL has walkers for expressions and for PlanState trees, not for
 * Plan trees; dp_pg walks plans before the executor starts (to bind the
 * constant arguments of dp aggregates, callsite.c) and right after planning
 * (to check what a plan computes and scans, guard/reads.c).
 *
 * Layer common/ (docs/development.md): may call the numeric core (core/)
 * and the rest of common/, nothing above.
 */
#include "postgres.h"

#include "nodes/pg_list.h"

#include "plantree.h"

/* Visit plan and every plan below it; true if visit stopped the walk. */
static bool
DpPlanWalk(Plan *plan, DpPlanVisitor visit, void *context)
{
	List	   *children = NIL;
	ListCell   *lc;

	if (plan == NULL)
		return false;
	if (visit(plan, context))
		return true;
	if (DpPlanWalk(plan->lefttree, visit, context) || DpPlanWalk(plan->righttree, visit, context))
		return true;
	switch (nodeTag(plan))
	{
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_BitmapAnd:
			children = ((BitmapAnd *) plan)->bitmapplans;
			break;
		case T_BitmapOr:
			children = ((BitmapOr *) plan)->bitmapplans;
			break;
		case T_CustomScan:
			children = ((CustomScan *) plan)->custom_plans;
			break;
		case T_SubqueryScan:
			return DpPlanWalk(((SubqueryScan *) plan)->subplan, visit, context);
		default:
			break;
	}
	foreach(lc, children)
		if (DpPlanWalk(lfirst(lc), visit, context))
			return true;
	return false;
}

/* Visit every node of a statement's plans (see plantree.h). */
bool
DpPlanWalkStmt(PlannedStmt *stmt, DpPlanVisitor visit, void *context)
{
	ListCell   *lc;

	if (DpPlanWalk(stmt->planTree, visit, context))
		return true;
	foreach(lc, stmt->subplans)
		if (DpPlanWalk(lfirst(lc), visit, context))
			return true;
	return false;
}
