/*
 * budget.h — the SQL interface of budgets (budget.c).
 */
#ifndef DP_BUDGET_H
#define DP_BUDGET_H

#include "postgres.h"

#include "nodes/nodes.h"

/*
 * Whose rows of dp_pg.budgets, dp_pg.ledger, dp_pg.guard_refusals and
 * dp_pg.answer_cache the current user reads: true (every role's) for
 * superusers and for monitoring roles — members of pg_read_all_stats, so of
 * pg_monitor — whose own queries no budget is charged to; otherwise false,
 * with the budgeted roles its queries are charged to (its own rows) in
 * mine[0 .. *nmine - 1] (DP_MAX_CHARGE_ROLES places).
 */
extern bool DpViewerSeesAll(Oid *mine, int *nmine);

/* A float8 Datum, or NULL for NaN / Inf. */
extern Datum DpNullableFloat(double v, bool *isnull);

/* ProcessUtility: ERROR for DROP ROLE of a role that still has a budget. */
extern void DpBudgetCheckUtility(Node *stmt);

#endif							/* DP_BUDGET_H */
