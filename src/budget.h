/*
 * budget.h — the SQL interface of budgets (budget.c).
 */
#ifndef DP_BUDGET_H
#define DP_BUDGET_H

#include "postgres.h"

#include "nodes/nodes.h"

/* ProcessUtility: ERROR for DROP ROLE of a role that still has a budget. */
extern void DpBudgetCheckUtility(Node *stmt);

#endif							/* DP_BUDGET_H */
