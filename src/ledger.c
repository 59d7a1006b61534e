/*
 * ledger.c — durable, rollback-proof charging of privacy costs.
 *
 * Protocol
 * --------
 * Who: one background worker ("dp_pg ledger") owns the ledger.  It connects
 * to dp_pg.ledger_database (postmaster setting), where CREATE EXTENSION
 * dp_pg must have been run, and is the only writer of dp_pg.ledger_entries
 * and dp_pg.budget_limits there.  Budgets are cluster-wide: a query in any
 * database is charged through this one worker.
 *
 * Shared state (DpLedgerShared, under its LWLock): the request slots and the
 * budget table (limits and spent totals per role), a cache of the ledger
 * tables that only the worker writes, after its commits.
 *
 * A charge (backend, leader only, at ExecutorStart, before any row exists):
 *  1. take a FREE slot, fill in the roles, the composed cost and the query
 *     text, mark it PENDING and wake the worker;
 *  2. sleep on the slot's condition variable until it is DONE, at most
 *     dp_pg.charge_timeout; a timeout or a cancel marks the slot ABANDONED
 *     and raises an ERROR (the worker may still commit the charge: an
 *     unreleased charge is the safe direction);
 *  3. read the verdict: admitted (committed) or refused (DP001, nothing
 *     written).
 * The worker takes every PENDING slot, decides each in order against the
 * totals (including earlier admissions of the same batch), inserts one
 * ledger row per charged role for the admitted ones in ONE transaction with
 * synchronous_commit = on, commits (group commit: one WAL flush per batch),
 * then publishes the new totals and the verdicts.  Nothing is published
 * before the commit, so a verdict "admitted" is durable: it survives the
 * caller's ROLLBACK, errors, crashes of the caller, of the worker or of the
 * server (WAL).  A crash before the commit loses the charge and the verdict
 * together; the caller never released anything for it.
 *
 * Totals are loaded from the tables when the worker starts (crash recovery
 * reinitialises shared memory and restarts the worker), rounded up.
 * Backup/restore, PITR and failover to an asynchronous standby can roll the
 * ledger back to an earlier state: see README.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "ledger.h"

/* SQLSTATE of an exhausted budget */
#define ERRCODE_DP_BUDGET_EXCEEDED MAKE_SQLSTATE('D', 'P', '0', '0', '1')

#define DP_LEDGER_SLOTS 64
#define DP_MAX_BUDGETS 4096
#define DP_QUERY_TEXT_LEN 1024
#define DP_DETAIL_LEN 8192

typedef enum DpSlotState
{
	DP_SLOT_FREE = 0,
	DP_SLOT_FILLING,			/* taken by a requester, being filled */
	DP_SLOT_PENDING,			/* filled, waiting for the worker */
	DP_SLOT_WORKING,			/* taken by the worker */
	DP_SLOT_DONE				/* verdict written */
} DpSlotState;

typedef enum DpRequestKind
{
	DP_REQ_CHARGE = 1,
	DP_REQ_SET_BUDGET,
	DP_REQ_REMOVE_BUDGET,
	DP_REQ_RESET
} DpRequestKind;

typedef enum DpVerdict
{
	DP_VERDICT_OK = 1,
	DP_VERDICT_REFUSED,
	DP_VERDICT_ERROR
} DpVerdict;

typedef struct DpLedgerSlot
{
	DpSlotState state;
	bool		abandoned;		/* the requester gave up; worker frees it */
	DpRequestKind kind;
	Oid			requested_by;	/* session user */
	int			nroles;
	Oid			roles[DP_MAX_CHARGE_ROLES];
	DpCost		cost;
	DpLimits	limits;			/* DP_REQ_SET_BUDGET */
	char		query[DP_QUERY_TEXT_LEN];
	char		detail[DP_DETAIL_LEN];
	/* verdict */
	DpVerdict	verdict;
	Oid			refused_role;
	DpRefusal	refusal;
	double		spent;			/* of the limit broken, before the charge */
	double		limit;
	double		requested;		/* after the charge */
	char		errmsg[256];
	ConditionVariable cv;
} DpLedgerSlot;

typedef struct DpBudgetEntry
{
	Oid			role;			/* hash key */
	DpLimits	limits;
	DpCost		spent;
	int64		charges;
} DpBudgetEntry;

typedef struct DpLedgerShared
{
	LWLock	   *lock;
	pid_t		worker_pid;
	Latch	   *worker_latch;
	bool		ready;			/* totals loaded, accepting requests */
	uint64		budget_generation;	/* changes with every published limit and readiness */
	ConditionVariable slot_freed;
	DpLedgerSlot slots[DP_LEDGER_SLOTS];
} DpLedgerShared;

char	   *dp_ledger_database = NULL;
int			dp_charge_timeout_ms = 10000;
static char *dp_debug_pause = NULL;
static int	dp_debug_pause_ms = 0;

static DpLedgerShared *ledger = NULL;
static HTAB *budgets = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Shared memory size. */
static Size
DpLedgerShmemSize(void)
{
	return add_size(MAXALIGN(sizeof(DpLedgerShared)),
					hash_estimate_size(DP_MAX_BUDGETS, sizeof(DpBudgetEntry)));
}

/* shmem_request_hook: reserve memory and the lock. */
static void
DpLedgerShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(DpLedgerShmemSize());
	RequestNamedLWLockTranche("dp_pg_ledger", 1);
}

/* shmem_startup_hook: create or attach the shared state. */
static void
DpLedgerShmemStartup(void)
{
	bool		found;
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ledger = ShmemInitStruct("dp_pg ledger", sizeof(DpLedgerShared), &found);
	if (!found)
	{
		memset(ledger, 0, sizeof(DpLedgerShared));
		ledger->lock = &(GetNamedLWLockTranche("dp_pg_ledger"))->lock;
		ConditionVariableInit(&ledger->slot_freed);
		for (int i = 0; i < DP_LEDGER_SLOTS; i++)
			ConditionVariableInit(&ledger->slots[i].cv);
	}
	info.keysize = sizeof(Oid);
	info.entrysize = sizeof(DpBudgetEntry);
	budgets = ShmemInitHash("dp_pg budgets", DP_MAX_BUDGETS, DP_MAX_BUDGETS,
							&info, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
}

/* Shared memory, the background worker and GUCs (from _PG_init, preloaded only). */
void
DpLedgerInit(void)
{
	BackgroundWorker worker;

	DefineCustomStringVariable("dp_pg.ledger_database",
							   "Database where the dp_pg ledger lives (CREATE EXTENSION dp_pg there).",
							   "Budgets are cluster-wide; every database charges through this one.",
							   &dp_ledger_database,
							   "postgres",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("dp_pg.charge_timeout",
							"Longest wait for the ledger to record a charge (ms, 100 to 600000).",
							"A query that cannot be charged in time fails; nothing is released.",
							&dp_charge_timeout_ms,
							10000, 100, 600000,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomStringVariable("dp_pg.debug_pause",
							   "Testing only: step at which to pause (before_charge, worker_before_commit, worker_after_commit, before_release).",
							   NULL,
							   &dp_debug_pause,
							   "",
							   PGC_SUSET,
							   GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("dp_pg.debug_pause_ms",
							"Testing only: length of the pause at dp_pg.debug_pause (ms, 0 disables).",
							NULL,
							&dp_debug_pause_ms,
							0, 0, 60000,
							PGC_SUSET,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = DpLedgerShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = DpLedgerShmemStartup;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "dp_pg");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "DpLedgerWorkerMain");
	snprintf(worker.bgw_name, BGW_MAXLEN, "dp_pg ledger");
	snprintf(worker.bgw_type, BGW_MAXLEN, "dp_pg ledger");
	RegisterBackgroundWorker(&worker);
}

/* Fault injection for the crash tests (see ledger.h). */
void
DpDebugPause(const char *step)
{
	if (dp_debug_pause_ms <= 0 || dp_debug_pause == NULL || strcmp(dp_debug_pause, step) != 0)
		return;
	ereport(LOG, (errmsg("dp_pg debug pause at %s", step)));
	for (int waited = 0; waited < dp_debug_pause_ms; waited += 10)
	{
		pg_usleep(10000L);
		CHECK_FOR_INTERRUPTS();
	}
}

/* True once the worker has loaded the ledger and accepts requests. */
bool
DpLedgerReady(void)
{
	bool		ready;

	if (ledger == NULL)
		return false;
	LWLockAcquire(ledger->lock, LW_SHARED);
	ready = ledger->ready;
	LWLockRelease(ledger->lock);
	return ready;
}

/* ERROR: the ledger cannot take requests now (fail closed). */
static void
DpLedgerNotReady(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the dp_pg ledger is not available"),
			 errdetail("No dp query can run until the ledger worker has loaded the budgets."),
			 errhint("Run CREATE EXTENSION dp_pg in database \"%s\" (dp_pg.ledger_database) and check the server log.",
					 dp_ledger_database ? dp_ledger_database : "postgres")));
}

/* Wait (bounded by the charge timeout) until the worker is ready. */
static void
DpLedgerAwaitReady(void)
{
	TimestampTz start = GetCurrentTimestamp();

	if (ledger == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("dp_pg must be loaded via shared_preload_libraries"),
				 errhint("Add dp_pg to shared_preload_libraries in postgresql.conf and restart the server.")));
	while (!DpLedgerReady())
	{
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), dp_charge_timeout_ms))
			DpLedgerNotReady();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Add role to roles[] (no duplicates); ERROR past the limit. */
static int
DpAddRole(Oid *roles, int n, Oid role)
{
	for (int i = 0; i < n; i++)
		if (roles[i] == role)
			return n;
	if (n >= DP_MAX_CHARGE_ROLES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a query would be charged to more than %d budgeted roles", DP_MAX_CHARGE_ROLES)));
	roles[n] = role;
	return n + 1;
}

/* The budgeted roles a query run now must be charged to (see ledger.h). */
int
DpLedgerChargedRoles(Oid *roles)
{
	Oid			users[3];
	Oid		   *budgeted;
	int			nbudgeted = 0;
	int			n = 0;
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *e;

	DpLedgerAwaitReady();
	users[0] = GetSessionUserId();
	users[1] = GetOuterUserId();
	users[2] = GetUserId();

	/* copy the budgeted roles, then check memberships without the lock */
	LWLockAcquire(ledger->lock, LW_SHARED);
	budgeted = palloc(sizeof(Oid) * Max(hash_get_num_entries(budgets), 1));
	hash_seq_init(&seq, budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
		budgeted[nbudgeted++] = e->role;
	LWLockRelease(ledger->lock);

	for (int b = 0; b < nbudgeted; b++)
		for (int u = 0; u < 3; u++)
			if (users[u] == budgeted[b] || is_member_of_role_nosuper(users[u], budgeted[b]))
			{
				n = DpAddRole(roles, n, budgeted[b]);
				break;
			}
	pfree(budgeted);
	return n;
}

/* A counter that changes whenever budgets are published or readiness changes. */
uint64
DpLedgerBudgetGeneration(void)
{
	uint64		gen;

	if (ledger == NULL)
		return 0;
	LWLockAcquire(ledger->lock, LW_SHARED);
	gen = ledger->budget_generation;
	LWLockRelease(ledger->lock);
	return gen;
}

/* DpLedgerChargedRoles without waiting: 0 and *known = false while the ledger is not ready. */
int
DpLedgerChargedRolesNoWait(Oid *roles, bool *known)
{
	*known = DpLedgerReady();
	if (!*known)
		return 0;
	return DpLedgerChargedRoles(roles);
}

/* Take a free slot (waiting for one up to the timeout); returns its index. */
static int
DpLedgerTakeSlot(void)
{
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		long		remain;

		LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
		if (!ledger->ready)
		{
			LWLockRelease(ledger->lock);
			DpLedgerNotReady();
		}
		for (int i = 0; i < DP_LEDGER_SLOTS; i++)
		{
			DpLedgerSlot *slot = &ledger->slots[i];

			if (slot->state == DP_SLOT_FREE)
			{
				slot->state = DP_SLOT_FILLING;
				slot->abandoned = false;
				slot->verdict = 0;
				LWLockRelease(ledger->lock);
				return i;
			}
		}
		LWLockRelease(ledger->lock);
		remain = dp_charge_timeout_ms -
			(long) ((GetCurrentTimestamp() - start) / 1000);
		if (remain <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("timed out waiting for the dp_pg ledger"),
					 errdetail("All %d request slots stayed busy for dp_pg.charge_timeout.", DP_LEDGER_SLOTS)));
		ConditionVariableTimedSleep(&ledger->slot_freed, Min(remain, 100), PG_WAIT_EXTENSION);
		ConditionVariableCancelSleep();
	}
}

/*
 * Submit the request in slot i and wait for its verdict.  The slot must have
 * been filled (its state is FILLING).  On return the slot is FREE again and
 * *out holds a copy of it.
 */
static void
DpLedgerSubmit(int i, DpLedgerSlot *out)
{
	DpLedgerSlot *slot = &ledger->slots[i];
	TimestampTz start = GetCurrentTimestamp();
	volatile bool done = false;

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	slot->state = DP_SLOT_PENDING;
	if (ledger->worker_latch)
		SetLatch(ledger->worker_latch);
	LWLockRelease(ledger->lock);

	PG_TRY();
	{
		ConditionVariablePrepareToSleep(&slot->cv);
		for (;;)
		{
			long		remain;

			LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
			if (slot->state == DP_SLOT_DONE)
			{
				memcpy(out, slot, offsetof(DpLedgerSlot, cv));
				slot->state = DP_SLOT_FREE;
				done = true;
				LWLockRelease(ledger->lock);
				break;
			}
			LWLockRelease(ledger->lock);
			remain = dp_charge_timeout_ms - (long) ((GetCurrentTimestamp() - start) / 1000);
			if (remain <= 0)
				ereport(ERROR,
						(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
						 errmsg("timed out waiting for the dp_pg ledger"),
						 errdetail("The ledger worker did not record the charge within dp_pg.charge_timeout; nothing was released."),
						 errhint("Check that the \"dp_pg ledger\" worker is running and that the ledger tables are not locked.")));
			ConditionVariableTimedSleep(&slot->cv, remain, PG_WAIT_EXTENSION);
		}
		ConditionVariableCancelSleep();
	}
	PG_FINALLY();
	{
		if (!done)
		{
			ConditionVariableCancelSleep();
			LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
			if (slot->state == DP_SLOT_DONE)
				slot->state = DP_SLOT_FREE;
			else
				slot->abandoned = true;
			LWLockRelease(ledger->lock);
		}
		ConditionVariableBroadcast(&ledger->slot_freed);
	}
	PG_END_TRY();
}

/* The value of a limit for messages. */
static const char *
DpRefusalName(DpRefusal r)
{
	switch (r)
	{
		case DP_REFUSE_EPSILON:
			return "epsilon";
		case DP_REFUSE_DELTA:
			return "delta";
		case DP_REFUSE_RHO:
			return "rho";
		default:
			return "budget";
	}
}

/* Charge cost to roles, durably and outside the caller's transaction. */
void
DpLedgerCharge(const Oid *roles, int nroles, const DpCost *cost,
			   const char *query, const char *detail)
{
	int			i;
	DpLedgerSlot *slot;
	DpLedgerSlot result;
	int			qlen;

	Assert(nroles > 0 && nroles <= DP_MAX_CHARGE_ROLES);
	DpDebugPause("before_charge");
	i = DpLedgerTakeSlot();
	slot = &ledger->slots[i];
	/* the slot is ours (FILLING: the worker ignores it): fill it without the lock */
	slot->kind = DP_REQ_CHARGE;
	slot->requested_by = GetSessionUserId();
	slot->nroles = nroles;
	memcpy(slot->roles, roles, sizeof(Oid) * nroles);
	slot->cost = *cost;
	qlen = query ? pg_mbcliplen(query, strlen(query), DP_QUERY_TEXT_LEN - 1) : 0;
	if (qlen > 0)
		memcpy(slot->query, query, qlen);
	slot->query[qlen] = '\0';
	if (detail && strlen(detail) < DP_DETAIL_LEN)
		strcpy(slot->detail, detail);
	else
		strcpy(slot->detail, "{\"truncated\": true}");

	DpLedgerSubmit(i, &result);

	if (result.verdict == DP_VERDICT_REFUSED)
		ereport(ERROR,
				(errcode(ERRCODE_DP_BUDGET_EXCEEDED),
				 errmsg("privacy budget of role \"%s\" exceeded",
						GetUserNameFromId(result.refused_role, true) ?
						GetUserNameFromId(result.refused_role, true) : "?"),
				 errdetail("%s spent %.6g, limit %.6g, this query would bring it to %.6g.",
						   DpRefusalName(result.refusal), result.spent, result.limit, result.requested),
				 errhint("Nothing was charged and nothing was released.")));
	if (result.verdict != DP_VERDICT_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("the dp_pg ledger could not record the charge: %s", result.errmsg),
				 errdetail("Nothing was released.")));
}

/* Send a budget administration request and wait for it. */
static void
DpLedgerAdmin(DpRequestKind kind, Oid role, const DpLimits *limits)
{
	int			i;
	DpLedgerSlot *slot;
	DpLedgerSlot result;

	DpLedgerAwaitReady();
	i = DpLedgerTakeSlot();
	slot = &ledger->slots[i];
	slot->kind = kind;
	slot->requested_by = GetSessionUserId();
	slot->nroles = 1;
	slot->roles[0] = role;
	dp_cost_zero(&slot->cost);
	if (limits)
		slot->limits = *limits;
	slot->query[0] = '\0';
	strcpy(slot->detail, "{}");
	DpLedgerSubmit(i, &result);
	if (result.verdict != DP_VERDICT_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("the dp_pg ledger could not record the change: %s", result.errmsg)));
}

/* Set (or remove) a role's limits; durable, logged. */
void
DpLedgerSetBudget(Oid role, const DpLimits *limits, bool remove)
{
	DpLedgerAdmin(remove ? DP_REQ_REMOVE_BUDGET : DP_REQ_SET_BUDGET, role, limits);
}

/* Reset a role's spending (DBA only); durable, logged. */
void
DpLedgerResetBudget(Oid role)
{
	DpLedgerAdmin(DP_REQ_RESET, role, NULL);
}

/* Copy out the budget rows (palloc'd array); returns the count. */
int
DpLedgerBudgetRows(DpBudgetRow **rows)
{
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *e;
	int			n = 0;
	int			cap;
	DpBudgetRow *out;

	DpLedgerAwaitReady();
	LWLockAcquire(ledger->lock, LW_SHARED);
	cap = hash_get_num_entries(budgets);
	out = palloc(sizeof(DpBudgetRow) * Max(cap, 1));
	hash_seq_init(&seq, budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (n < cap)
		{
			out[n].role = e->role;
			out[n].limits = e->limits;
			out[n].spent = e->spent;
			out[n].charges = e->charges;
			n++;
		}
	}
	LWLockRelease(ledger->lock);
	*rows = out;
	return n;
}

/* ------------------------------------------------------------------------
 * The ledger worker
 * ------------------------------------------------------------------------
 */

/* A float8 Datum for a cost component; NULL when infinite (never stored). */
static Datum
DpCostDatum(double v, char *null)
{
	if (isinf(v) || isnan(v))
	{
		*null = 'n';
		return (Datum) 0;
	}
	*null = ' ';
	return Float8GetDatum(v);
}

/* The Rényi curve as a float8[] Datum; NULL when it is unbounded somewhere. */
static Datum
DpRdpArray(const DpCost *c, char *null)
{
	Datum		elems[DP_RDP_NALPHAS];

	*null = ' ';
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
	{
		if (!isfinite(c->rdp[i]))
		{
			*null = 'n';
			return (Datum) 0;
		}
		elems[i] = Float8GetDatum(c->rdp[i]);
	}
	return PointerGetDatum(construct_array(elems, DP_RDP_NALPHAS, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/* Insert one ledger row; returns nothing, ERROR on failure. */
static void
DpWorkerInsert(Oid role, const char *kind, const DpLedgerSlot *slot)
{
	static const char *sql =
		"INSERT INTO dp_pg.ledger_entries (role, kind, requested_by, query, epsilon, delta, rho, rdp, detail) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)";
	Oid			types[9] = {OIDOID, TEXTOID, OIDOID, TEXTOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8ARRAYOID, TEXTOID};
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		charge = strcmp(kind, "charge") == 0;

	values[0] = ObjectIdGetDatum(role);
	values[1] = CStringGetTextDatum(kind);
	values[2] = ObjectIdGetDatum(slot->requested_by);
	values[3] = CStringGetTextDatum(slot->query);
	if (charge)
	{
		values[4] = DpCostDatum(slot->cost.epsilon, &nulls[4]);
		values[5] = DpCostDatum(slot->cost.delta, &nulls[5]);
		values[6] = DpCostDatum(slot->cost.rho, &nulls[6]);
		values[7] = DpRdpArray(&slot->cost, &nulls[7]);
	}
	else
	{
		nulls[4] = nulls[5] = nulls[6] = nulls[7] = 'n';
		values[4] = values[5] = values[6] = values[7] = (Datum) 0;
	}
	values[8] = CStringGetTextDatum(slot->detail);
	if (SPI_execute_with_args(sql, 9, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into dp_pg.ledger_entries");
}

/* Write a role's limits to dp_pg.budget_limits (or delete them). */
static void
DpWorkerWriteLimits(Oid role, const DpLimits *l, bool remove)
{
	Oid			types[4] = {OIDOID, FLOAT8OID, FLOAT8OID, FLOAT8OID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = ObjectIdGetDatum(role);
	if (remove)
	{
		if (SPI_execute_with_args("DELETE FROM dp_pg.budget_limits WHERE role = $1",
								  1, types, values, nulls, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not delete from dp_pg.budget_limits");
		return;
	}
	values[1] = DpCostDatum(l->epsilon, &nulls[1]);
	values[2] = DpCostDatum(l->delta, &nulls[2]);
	values[3] = DpCostDatum(l->rho, &nulls[3]);
	if (SPI_execute_with_args("INSERT INTO dp_pg.budget_limits (role, epsilon_limit, delta_limit, rho_limit) "
							  "VALUES ($1, $2, $3, $4) ON CONFLICT (role) DO UPDATE SET "
							  "epsilon_limit = EXCLUDED.epsilon_limit, delta_limit = EXCLUDED.delta_limit, "
							  "rho_limit = EXCLUDED.rho_limit, updated_at = now()",
							  4, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write dp_pg.budget_limits");
}

/* A double from an SPI result column (NULL -> dflt). */
static double
DpSpiDouble(HeapTuple tup, TupleDesc desc, int col, double dflt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? dflt : DatumGetFloat8(d);
}

/* Load limits and spent totals from the tables into shared memory. */
static void
DpWorkerLoad(void)
{
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *e;
	uint64		n;

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
		hash_search(budgets, &e->role, HASH_REMOVE, NULL);
	LWLockRelease(ledger->lock);

	if (SPI_execute("SELECT role, epsilon_limit, delta_limit, rho_limit FROM dp_pg.budget_limits",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read dp_pg.budget_limits");
	n = SPI_processed;
	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	for (uint64 r = 0; r < n; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Oid			role = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		bool		found;

		e = hash_search(budgets, &role, HASH_ENTER_NULL, &found);
		if (e == NULL)
			elog(ERROR, "too many dp_pg budgets (at most %d)", DP_MAX_BUDGETS);
		e->limits.epsilon = DpSpiDouble(tup, desc, 2, NAN);
		e->limits.delta = DpSpiDouble(tup, desc, 3, NAN);
		e->limits.rho = DpSpiDouble(tup, desc, 4, NAN);
		dp_cost_zero(&e->spent);
		e->charges = 0;
	}
	LWLockRelease(ledger->lock);

	/*
	 * Replay the charges since each role's last reset in ledger order with
	 * the same rounded-up additions the worker made online, so a restart
	 * reproduces the totals bit for bit.  A NULL epsilon (rho forms) makes
	 * basic composition unavailable (+Inf).
	 */
	{
		Portal		portal;
		SPIPlanPtr	plan;

		plan = SPI_prepare("WITH last AS (SELECT role, max(id) AS rid FROM dp_pg.ledger_entries "
						   "WHERE kind = 'reset' GROUP BY role) "
						   "SELECT e.role, e.epsilon, e.delta, e.rho, e.rdp FROM dp_pg.ledger_entries e "
						   "LEFT JOIN last l USING (role) "
						   "WHERE e.kind = 'charge' AND e.id > coalesce(l.rid, 0) ORDER BY e.id",
						   0, NULL);
		if (plan == NULL)
			elog(ERROR, "could not prepare the ledger replay");
		portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
		for (;;)
		{
			SPI_cursor_fetch(portal, true, 10000);
			if (SPI_processed == 0)
				break;
			LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
			for (uint64 r = 0; r < SPI_processed; r++)
			{
				HeapTuple	tup = SPI_tuptable->vals[r];
				TupleDesc	desc = SPI_tuptable->tupdesc;
				bool		isnull;
				Oid			role = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
				DpCost		c;
				Datum		arr;

				e = hash_search(budgets, &role, HASH_FIND, NULL);
				if (e == NULL)
					continue;	/* charges of a role whose budget was removed */
				c.epsilon = DpSpiDouble(tup, desc, 2, INFINITY);
				c.delta = DpSpiDouble(tup, desc, 3, 0.0);
				c.rho = DpSpiDouble(tup, desc, 4, INFINITY);
				for (int i = 0; i < DP_RDP_NALPHAS; i++)
					c.rdp[i] = INFINITY;
				arr = SPI_getbinval(tup, desc, 5, &isnull);
				if (!isnull)
				{
					Datum	   *elems;
					bool	   *nulls;
					int			nelems;

					deconstruct_array(DatumGetArrayTypeP(arr), FLOAT8OID, 8, FLOAT8PASSBYVAL,
									  TYPALIGN_DOUBLE, &elems, &nulls, &nelems);
					for (int i = 0; i < DP_RDP_NALPHAS && i < nelems; i++)
						if (!nulls[i])
							c.rdp[i] = DatumGetFloat8(elems[i]);
				}
				dp_cost_add(&e->spent, &c);
				e->charges++;
			}
			LWLockRelease(ledger->lock);
			SPI_freetuptable(SPI_tuptable);
		}
		SPI_cursor_close(portal);
	}
}

/*
 * The batch's working copy of role's budget entry: created on first use from
 * the published entry (or empty, with no limits, if the role has none).
 */
static DpBudgetEntry *
DpPendingEntry(HTAB *pending, Oid role)
{
	bool		found;
	DpBudgetEntry *e = hash_search(pending, &role, HASH_ENTER, &found);

	if (!found)
	{
		DpBudgetEntry *shared;

		LWLockAcquire(ledger->lock, LW_SHARED);
		shared = hash_search(budgets, &role, HASH_FIND, NULL);
		if (shared)
			*e = *shared;
		else
		{
			e->role = role;
			e->limits.epsilon = e->limits.delta = e->limits.rho = NAN;
			dp_cost_zero(&e->spent);
			e->charges = 0;
		}
		LWLockRelease(ledger->lock);
	}
	return e;
}

/* Decide and record one request inside the worker's open transaction. */
static void
DpWorkerDecide(DpLedgerSlot *slot, HTAB *pending)
{
	/* pending: local copies of entries changed by earlier requests of this batch */
	slot->verdict = DP_VERDICT_OK;
	switch (slot->kind)
	{
		case DP_REQ_CHARGE:
			{
				DpBudgetEntry *local[DP_MAX_CHARGE_ROLES];

				for (int r = 0; r < slot->nroles; r++)
					local[r] = DpPendingEntry(pending, slot->roles[r]);
				for (int r = 0; r < slot->nroles; r++)
				{
					DpRefusal why = dp_admits(&local[r]->spent, &slot->cost, &local[r]->limits);

					if (why != DP_ADMIT)
					{
						DpCost		after = local[r]->spent;

						dp_cost_add(&after, &slot->cost);
						slot->verdict = DP_VERDICT_REFUSED;
						slot->refused_role = slot->roles[r];
						slot->refusal = why;
						switch (why)
						{
							case DP_REFUSE_EPSILON:
								slot->spent = dp_spent_epsilon(&local[r]->spent, local[r]->limits.delta, NULL);
								slot->limit = local[r]->limits.epsilon;
								slot->requested = dp_spent_epsilon(&after, local[r]->limits.delta, NULL);
								break;
							case DP_REFUSE_DELTA:
								slot->spent = local[r]->spent.delta;
								slot->limit = local[r]->limits.delta;
								slot->requested = after.delta;
								break;
							default:
								slot->spent = local[r]->spent.rho;
								slot->limit = local[r]->limits.rho;
								slot->requested = after.rho;
								break;
						}
						return;
					}
				}
				for (int r = 0; r < slot->nroles; r++)
				{
					DpWorkerInsert(slot->roles[r], "charge", slot);
					dp_cost_add(&local[r]->spent, &slot->cost);
					local[r]->charges++;
				}
				break;
			}
		case DP_REQ_SET_BUDGET:
		case DP_REQ_REMOVE_BUDGET:
			{
				DpBudgetEntry *e = DpPendingEntry(pending, slot->roles[0]);

				DpWorkerWriteLimits(slot->roles[0], &slot->limits, slot->kind == DP_REQ_REMOVE_BUDGET);
				DpWorkerInsert(slot->roles[0], slot->kind == DP_REQ_REMOVE_BUDGET ? "remove" : "limit", slot);
				if (slot->kind == DP_REQ_REMOVE_BUDGET)
					e->limits.epsilon = e->limits.delta = e->limits.rho = -1.0;	/* marker: remove */
				else
					e->limits = slot->limits;
				break;
			}
		case DP_REQ_RESET:
			{
				DpBudgetEntry *e = DpPendingEntry(pending, slot->roles[0]);

				DpWorkerInsert(slot->roles[0], "reset", slot);
				dp_cost_zero(&e->spent);
				e->charges = 0;
				break;
			}
	}
}

/* Publish the batch's committed entries to shared memory. */
static void
DpWorkerPublish(HTAB *pending)
{
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *p;

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	ledger->budget_generation++;
	hash_seq_init(&seq, pending);
	while ((p = hash_seq_search(&seq)) != NULL)
	{
		bool		found;
		DpBudgetEntry *e;

		if (p->limits.epsilon == -1.0 && p->limits.delta == -1.0)
		{
			hash_search(budgets, &p->role, HASH_REMOVE, NULL);
			continue;
		}
		if (isnan(p->limits.epsilon) && isnan(p->limits.delta) && isnan(p->limits.rho) &&
			hash_search(budgets, &p->role, HASH_FIND, NULL) == NULL)
			continue;			/* reset of a role with no budget */
		e = hash_search(budgets, &p->role, HASH_ENTER_NULL, &found);
		if (e == NULL)
		{
			LWLockRelease(ledger->lock);
			elog(FATAL, "too many dp_pg budgets (at most %d)", DP_MAX_BUDGETS);
		}
		*e = *p;
	}
	LWLockRelease(ledger->lock);
}

/* Process every pending request in one transaction; returns true if any. */
static bool
DpWorkerBatch(void)
{
	int			batch[DP_LEDGER_SLOTS];
	int			nbatch = 0;
	HTAB	   *pending;
	HASHCTL		info;
	MemoryContext batch_cxt;
	MemoryContext old;

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	for (int i = 0; i < DP_LEDGER_SLOTS; i++)
		if (ledger->slots[i].state == DP_SLOT_PENDING)
		{
			ledger->slots[i].state = DP_SLOT_WORKING;
			batch[nbatch++] = i;
		}
	LWLockRelease(ledger->lock);
	if (nbatch == 0)
		return false;

	batch_cxt = AllocSetContextCreate(TopMemoryContext, "dp_pg ledger batch", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(batch_cxt);
	info.keysize = sizeof(Oid);
	info.entrysize = sizeof(DpBudgetEntry);
	info.hcxt = batch_cxt;
	pending = hash_create("dp_pg ledger batch", 64, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		SPI_connect();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "dp_pg ledger: recording charges");
		for (int b = 0; b < nbatch; b++)
			DpWorkerDecide(&ledger->slots[batch[b]], pending);
		SPI_finish();
		PopActiveSnapshot();
		DpDebugPause("worker_before_commit");

		/*
		 * From the commit to the published verdicts nothing may interrupt us:
		 * a worker that exited in between would leave committed charges in
		 * slots that its successor would charge again.  (A crash instead
		 * restarts every backend and wipes the slots.)
		 */
		HOLD_INTERRUPTS();
		CommitTransactionCommand();
		DpDebugPause("worker_after_commit");
		pgstat_report_activity(STATE_IDLE, NULL);
		MemoryContextSwitchTo(batch_cxt);
		DpWorkerPublish(pending);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(batch_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		for (int b = 0; b < nbatch; b++)
		{
			DpLedgerSlot *slot = &ledger->slots[batch[b]];

			slot->verdict = DP_VERDICT_ERROR;
			strlcpy(slot->errmsg, edata->message ? edata->message : "unknown error", sizeof(slot->errmsg));
		}
		ereport(LOG, (errmsg("dp_pg ledger: batch failed: %s", edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();

	MemoryContextSwitchTo(old);
	MemoryContextDelete(batch_cxt);

	/* hand out the verdicts */
	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	for (int b = 0; b < nbatch; b++)
	{
		DpLedgerSlot *slot = &ledger->slots[batch[b]];

		if (slot->abandoned)
			slot->state = DP_SLOT_FREE;
		else
			slot->state = DP_SLOT_DONE;
	}
	LWLockRelease(ledger->lock);
	if (InterruptHoldoffCount > 0)
		RESUME_INTERRUPTS();
	for (int b = 0; b < nbatch; b++)
		ConditionVariableBroadcast(&ledger->slots[batch[b]].cv);
	ConditionVariableBroadcast(&ledger->slot_freed);
	return true;
}

/* True (in a transaction) if the dp_pg extension exists in this database. */
static bool
DpWorkerExtensionExists(void)
{
	bool		exists;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	exists = OidIsValid(get_extension_oid("dp_pg", true));
	CommitTransactionCommand();
	return exists;
}

/* Worker exit: stop accepting requests. */
static void
DpWorkerExit(int code, Datum arg)
{
	if (ledger == NULL)
		return;
	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	ledger->ready = false;
	ledger->budget_generation++;
	ledger->worker_latch = NULL;
	ledger->worker_pid = 0;
	/* requests in flight get no verdict; their requesters time out */
	LWLockRelease(ledger->lock);
}

/* Worker entry point. */
void
DpLedgerWorkerMain(Datum arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnection(dp_ledger_database, NULL, 0);
	/* every ledger commit waits for its WAL flush, whatever the defaults say */
	SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);
	/* nothing a user created in the ledger database may resolve in our SQL */
	SetConfigOption("search_path", "pg_catalog", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", "dp_pg ledger", PGC_USERSET, PGC_S_SESSION);

	before_shmem_exit(DpWorkerExit, (Datum) 0);
	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	ledger->worker_pid = MyProcPid;
	ledger->worker_latch = MyLatch;
	ledger->ready = false;
	/* slots a previous worker had taken get no verdict from it: retry them */
	for (int i = 0; i < DP_LEDGER_SLOTS; i++)
		if (ledger->slots[i].state == DP_SLOT_WORKING)
			ledger->slots[i].state = DP_SLOT_PENDING;
	LWLockRelease(ledger->lock);

	/* wait for CREATE EXTENSION dp_pg in the ledger database */
	while (!DpWorkerExtensionExists())
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	DpWorkerLoad();
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	ledger->ready = true;
	ledger->budget_generation++;
	LWLockRelease(ledger->lock);
	ereport(LOG, (errmsg("dp_pg ledger ready in database \"%s\"", dp_ledger_database)));

	for (;;)
	{
		while (DpWorkerBatch())
			CHECK_FOR_INTERRUPTS();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}
