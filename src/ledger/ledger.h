/*
 * ledger.h — the face of ledger/: durable, rollback-proof charging of privacy
 * costs, per-role budgets, the ledger over a database's life and a hot
 * standby's forwarding.  The only header of ledger/ that files outside it
 * include (test/layering.pl checks it); the folder's own files share
 * shared.h (the state and the protocol) and timeline.h.
 *
 * Layer ledger/ (docs/development.md): sits on common/ and the numeric core.
 */
#ifndef DP_LEDGER_H
#define DP_LEDGER_H

#include "postgres.h"

#include "accountant.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "nodes/nodes.h"
#include "nodes/plannodes.h"
#include "utils/uuid.h"

#define DP_MAX_CHARGE_ROLES 16
#define DP_MAX_CHARGE_TABLES 8
/* a table's qualified name as a table budget keeps it ("schema"."table") */
#define DP_TABLE_NAME_LEN (2 * NAMEDATALEN + 8)

/*
 * A budget's renewal (windows.c): back-to-back windows of length `every`
 * from `from`, computed by the ledger worker in the server's time zone;
 * every all zero: the budget does not renew.
 */
typedef struct DpRenew
{
	Interval	every;
	TimestampTz from;
} DpRenew;

/*
 * What a budget -- a role's or a table's -- may spend and has spent: its
 * limits, its renewal, the current window (DT_NOBEGIN .. DT_NOEND when it
 * does not renew), the spending in that window since the last reset, and
 * every charge ever (lifetime).
 */
typedef struct DpSpending
{
	DpLimits	limits;
	DpRenew		renew;
	TimestampTz window_start;
	TimestampTz window_end;
	DpCost		spent;
	int64		charges;
	DpCost		lifetime;
	int64		lifetime_charges;
} DpSpending;

/* A budgeted role as the ledger worker knows it (a copy, for views). */
typedef struct DpBudgetRow
{
	Oid			role;
	DpLimits	caps;			/* per-query caps (NaN: none) */
	DpSpending	s;
} DpBudgetRow;

/* A table budget as the ledger worker knows it (a copy, for views). */
typedef struct DpTableBudgetRow
{
	pg_uuid_t	budget;
	char		database[NAMEDATALEN];	/* where it was last set */
	char		table_name[DP_TABLE_NAME_LEN];	/* under this name */
	DpSpending	s;
} DpTableBudgetRow;

/*
 * A table budget a query is charged to: the budget (dp_pg.protected_tables
 * .table_budget) and, for messages, the table of this database it guards.
 */
typedef struct DpTableCharge
{
	pg_uuid_t	budget;
	Oid			relid;
} DpTableCharge;

/* What a read request reads (DpLedgerReadRows). */
typedef enum DpReadWhat
{
	DP_READ_LEDGER = 1,			/* dp_pg.ledger_entries */
	DP_READ_REFUSALS,			/* dp_pg.guard_refusal_log */
	DP_READ_CHARGES				/* the charges of dp_pg.ledger_entries, for the reports */
} DpReadWhat;

/* GUCs */
extern char *dp_ledger_database;
extern int	dp_charge_timeout_ms;
extern int	dp_refusal_log_size;

/*
 * Fault injection for the crash tests (superuser only, off by default):
 * sleep dp_pg.debug_pause_ms at the step named by dp_pg.debug_pause.
 */
extern void DpDebugPause(const char *step);

/* shmem_request_hook and shmem_startup_hook bodies (installed by hooks.c). */
extern void DpLedgerShmemRequest(void);
extern void DpLedgerShmemStartup(void);

/* Shared memory, the background worker and GUCs (from _PG_init, preloaded only). */
extern void DpLedgerInit(void);

/* True once the worker has loaded the ledger and accepts requests. */
extern bool DpLedgerReady(void);

/* 'ready', 'not ready' or 'held' (a restored ledger not yet accepted): dp_pg.ledger_status(). */
extern const char *DpLedgerStatus(void);

/*
 * Ask the worker to load the ledger tables again: a writer other than the
 * worker committed a change of them (retention.c, at its commit).  Until the
 * worker has, callers that need the budgets wait for it and the guard counts
 * every session as an analyst.  No-op in the worker itself.
 */
extern void DpLedgerRequestReload(void);

/* True in the ledger worker itself. */
extern bool DpLedgerIsWorker(void);

/*
 * Whether the ledger holds a budget or a row, as the worker last loaded or
 * wrote it; *known is false while the worker is not ready.
 */
extern bool DpLedgerHoldsEntries(bool *known);

/*
 * Roles whose DROP ROLE committed in another database: the worker converts
 * their ledger rows to keep their names (reload.c, DpWorkerForgetDroppedRoles).
 * Never waits.
 */
extern void DpLedgerNoteDroppedRoles(int n, const Oid *oids, const NameData *names);

/*
 * Keep the name of a role that is dropped in its ledger rows: role (and
 * requested_by) become NULL, detail keeps dropped_role (dropped_requested_by)
 * with the name and the old OID; its refused queries leave the log.  In the
 * ledger database, SPI connected, with the rights to write the ledger
 * tables; false (nothing done) on the 0.1.0 layout, which has no room for it.
 */
extern bool DpLedgerKeepRoleName(Oid role, const char *name);

/*
 * The budgeted roles a query run now must be charged to: every role with a
 * budget that the session user, the outer (SET ROLE) user or the current
 * user is a member of (or is).  Returns how many (at most DP_MAX_CHARGE_ROLES).
 * ERROR when the ledger is not ready (fail closed).
 */
extern int	DpLedgerChargedRoles(Oid *roles);

/*
 * DpLedgerChargedRoles (same membership rules) for callers that must never
 * wait for the worker: if the ledger is not ready (or dp_pg is not
 * preloaded), returns 0 with *known = false; else *known = true.  Takes the
 * ledger's lock in shared mode only to copy the budgeted roles.
 */
extern int	DpLedgerChargedRolesNoWait(Oid *roles, bool *known);

/*
 * A counter that changes whenever the worker publishes a change of the set
 * of budgeted roles or of their limits (set_budget, drop_budget; not charges
 * or resets) and whenever it becomes ready or stops being ready.  A caller
 * may cache what it derived from the budgets while the value is unchanged.
 * Lock-free, never waits; 0 without shared memory.
 */
extern uint64 DpLedgerBudgetGeneration(void);

/* ERROR 22023 unless cost is a charge the ledger can record (every query's composed cost is checked). */
extern void DpLedgerCheckCost(const DpCost *cost);

/*
 * Charge cost to roles and to the table budgets of the protected tables
 * the query reads (tables[0 .. ntables - 1], distinct), durably and outside
 * the caller's transaction, in one ledger transaction: every budget has room
 * or none is charged.  Returns after the ledger worker committed it
 * (synchronous commit).  ERROR 22023 if the cost is not a valid charge
 * (dp_cost_valid_charge; checked before it is queued), DP001 if any role's
 * or table's budget would be exceeded, 55000 if a table's budget is not in
 * the ledger, 55P03 on timeout; in each case nothing is charged.
 */
extern void DpLedgerCharge(const Oid *roles, int nroles, const DpTableCharge *tables, int ntables,
						   const DpCost *cost, const char *query, const char *detail);

/*
 * Set (or with all NaN, remove) a role's limits and renewal (NULL: none; its
 * from DT_NOBEGIN: kept if the period is unchanged, else now); durable, logged.
 */
extern void DpLedgerSetBudget(Oid role, const DpLimits *limits, const DpRenew *renew, bool remove);

/*
 * Set a table budget's limits and renewal (NULL: none): budget is the
 * table's binding (all zero: none yet), database and table_name where and
 * under which name it is set.  Without a binding the worker takes the budget
 * last set under the same name in the same database (restore by name), or a
 * new one.  Returns the budget set; durable, logged.
 */
extern pg_uuid_t DpLedgerSetTableBudget(const pg_uuid_t *budget, const char *database, const char *table_name,
										const DpLimits *limits, const DpRenew *renew);

/* Remove a table budget (its ledger rows stay); durable, logged. */
extern void DpLedgerRemoveTableBudget(const pg_uuid_t *budget, const char *database, const char *table_name);

/* Copy out the table budgets (palloc'd array); returns the count. */
extern int	DpLedgerTableBudgetRows(DpTableBudgetRow **rows);

/* ERROR 22023 unless every is a renewal period a budget can have (windows.c). */
extern void DpRenewCheck(const Interval *every, TimestampTz from, bool from_given);

/* True if r renews (a period is set). */
extern bool DpRenewIsSet(const DpRenew *r);

/* Set (all NaN: remove) a role's per-query caps; durable, logged. */
extern void DpLedgerSetCaps(Oid role, const DpLimits *caps);

/* Reset a role's spending (DBA only); durable, logged. */
extern void DpLedgerResetBudget(Oid role);

/* Copy out the budget rows (palloc'd array); returns the count. */
extern int	DpLedgerBudgetRows(DpBudgetRow **rows);

/*
 * Read the rows of a ledger table (in dp_pg.ledger_database) from any
 * database, through the ledger worker, a page at a time, into the
 * materialized SRF of fcinfo (whose result columns are the table's, in
 * order).  all: every row; else only those whose role is in roles[].
 */
extern void DpLedgerReadRows(FunctionCallInfo fcinfo, DpReadWhat what, bool all,
							 const Oid *roles, int nroles);

/*
 * Note a refusal of an analyst's query (not of superusers) for the durable
 * log dp_pg.guard_refusals: rule names what was refused.  Never waits and
 * never fails: if the queue is full the refusal is only counted.
 */
extern void DpLedgerNoteRefusal(const char *rule, int sqlerrcode);

/*
 * Charges forwarded from a hot standby (standby.c)
 * ------------------------------------------------
 * A standby's ledger worker sends the charges of its backends to the
 * primary, where dp_pg.forward_charges() hands them to the primary's ledger
 * worker as one batch; the verdicts travel back.
 */
#define DP_FORWARD_MAX 16		/* charges per forwarded batch */
#define DP_FORWARD_WARNINGS 4	/* 90%-of-a-limit warnings per charge */

typedef struct DpChargeRequest
{
	Oid			requested_by;	/* session user of the query */
	int			nroles;
	Oid			roles[DP_MAX_CHARGE_ROLES];
	int			ntables;
	pg_uuid_t	tables[DP_MAX_CHARGE_TABLES];
	DpCost		cost;
	const char *query;
	const char *detail;
} DpChargeRequest;

typedef struct DpChargeVerdict
{
	int			verdict;		/* 1 admitted, 2 refused, 3 error */
	Oid			refused_role;
	int			refused_table;	/* -1, or the index of the table budget refused (or missing) */
	int			refusal;		/* a DpRefusal */
	double		spent;
	double		limit;
	double		requested;
	int			sqlerrcode;		/* verdict 3 */
	char		errmsg[256];
	int			nwarn;
	Oid			warn_role[DP_FORWARD_WARNINGS];
	int			warn_table[DP_FORWARD_WARNINGS];	/* -1: the role's */
	int			warn_what[DP_FORWARD_WARNINGS];
	double		warn_spent[DP_FORWARD_WARNINGS];
	double		warn_limit[DP_FORWARD_WARNINGS];
} DpChargeVerdict;

/*
 * Charge n (at most DP_FORWARD_MAX) requests through this server's ledger
 * worker as one batch and wait for every verdict (the primary's side of a
 * forwarded batch).  An invalid request gets an error verdict; the others
 * are charged as DpLedgerCharge would, without raising their refusals.
 */
extern void DpLedgerChargeMany(int n, const DpChargeRequest *reqs, DpChargeVerdict *out);

/* A refusal noted on a standby, queued here for the refusal log. */
extern void DpLedgerNoteRefusalFrom(TimestampTz at, Oid session_user, Oid current_user,
									Oid database, int sqlerrcode, const char *rule,
									const char *query);

/* Count refusals that were not queued (a standby's full queue). */
extern void DpLedgerNoteRefusalsMissed(int64 n);

/*
 * How a hot standby's ledger worker reaches its primary: the standby
 * (standby.c) registers its forwarder here when the library loads; the
 * ledger worker calls it on a standby only.  charges and refusals return
 * false with a message in err when the primary could not be reached;
 * disconnect closes the link (after a promotion).
 */
typedef struct DpLedgerForwarder
{
	bool		(*charges) (int n, const DpChargeRequest *reqs, DpChargeVerdict *out,
							int *sqlerrcode, char *err, size_t errlen);
	bool		(*refusals) (int n, const TimestampTz *at, const Oid *session_user,
							 const Oid *current_user, const Oid *database,
							 const int *sqlerrcode, const char *const *rule,
							 const char *const *query, int64 missed,
							 char *err, size_t errlen);
	void		(*disconnect) (void);
} DpLedgerForwarder;

/* Register the standby's forwarder (standby.c, at load). */
extern void DpLedgerSetForwarder(const DpLedgerForwarder *forwarder);

/*
 * Budgets in SQL (budget.c)
 * -------------------------
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

/*
 * The ledger over a database's life (retention.c)
 * -----------------------------------------------
 * Kept from DROP, live across restores, by name when roles go, held after a
 * point-in-time recovery.
 */

/* GUC and the transaction callback (from _PG_init, preloaded only). */
extern void DpRetentionInit(void);

/*
 * ProcessUtility: refuse what would drop a non-empty ledger; note what a
 * commit must tell the ledger worker (a re-enabled trigger on its tables,
 * dropped roles).  Nothing in binary-upgrade mode.
 */
extern void DpRetentionCheckUtility(PlannedStmt *pstmt);

/*
 * A hot standby's link to its primary (standby.c)
 * -----------------------------------------------
 * The standby's ledger worker forwards charges and refusals to the primary,
 * which takes them with dp_pg.forward_charges / dp_pg.forward_refusals.
 * Defines dp_pg.primary_conninfo and registers the forwarder with the ledger
 * (DpLedgerSetForwarder); from _PG_init.
 */
extern void DpStandbyInit(void);

/* Worker entry point. */
extern PGDLLEXPORT void DpLedgerWorkerMain(Datum arg);

#endif							/* DP_LEDGER_H */
