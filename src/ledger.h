/*
 * ledger.h — durable, rollback-proof charging of privacy costs.
 */
#ifndef DP_LEDGER_H
#define DP_LEDGER_H

#include "postgres.h"

#include "accountant.h"

#define DP_MAX_CHARGE_ROLES 16

/* A budgeted role as the ledger worker knows it (a copy, for views). */
typedef struct DpBudgetRow
{
	Oid			role;
	DpLimits	limits;
	DpCost		spent;
	int64		charges;
} DpBudgetRow;

/* GUCs */
extern char *dp_ledger_database;
extern int	dp_charge_timeout_ms;

/*
 * Fault injection for the crash tests (superuser only, off by default):
 * sleep dp_pg.debug_pause_ms at the step named by dp_pg.debug_pause.
 */
extern void DpDebugPause(const char *step);

/* Shared memory, the background worker and GUCs (from _PG_init, preloaded only). */
extern void DpLedgerInit(void);

/* True once the worker has loaded the ledger and accepts requests. */
extern bool DpLedgerReady(void);

/*
 * The budgeted roles a query run now must be charged to: every role with a
 * budget that the session user, the outer (SET ROLE) user or the current
 * user is a member of (or is).  Returns how many (at most DP_MAX_CHARGE_ROLES).
 * ERROR when the ledger is not ready (fail closed).
 */
extern int	DpLedgerChargedRoles(Oid *roles);

/* A counter that changes whenever budgets are published or the ledger's readiness changes. */
extern uint64 DpLedgerBudgetGeneration(void);

/* DpLedgerChargedRoles without waiting: returns 0 with *known = false while the ledger is not ready. */
extern int	DpLedgerChargedRolesNoWait(Oid *roles, bool *known);

/*
 * Charge cost to roles, durably and outside the caller's transaction; returns
 * after the ledger worker committed it (synchronous commit).  ERROR DP001 if
 * any role's budget would be exceeded (nothing charged), or on timeout.
 */
extern void DpLedgerCharge(const Oid *roles, int nroles, const DpCost *cost,
						   const char *query, const char *detail);

/* Set (or with all NaN, remove) a role's limits; durable, logged. */
extern void DpLedgerSetBudget(Oid role, const DpLimits *limits, bool remove);

/* Reset a role's spending (DBA only); durable, logged. */
extern void DpLedgerResetBudget(Oid role);

/* Copy out the budget rows (palloc'd array); returns the count. */
extern int	DpLedgerBudgetRows(DpBudgetRow **rows);

/* Worker entry point. */
extern PGDLLEXPORT void DpLedgerWorkerMain(Datum arg);

#endif							/* DP_LEDGER_H */
