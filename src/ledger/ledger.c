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
 *  0. validate the composed cost (dp_cost_valid_charge: exactly what a
 *     ledger row accepts); an invalid one is ERROR 22023 before any slot is
 *     taken, so it never reaches a batch;
 *  1. take a FREE slot, fill in the roles, the composed cost and the query
 *     text, mark it PENDING and wake the worker;
 *  2. sleep on the slot's condition variable until it is DONE, at most
 *     dp_pg.charge_timeout; a timeout or a cancel marks the slot ABANDONED
 *     and raises an ERROR (the worker may still commit the charge: an
 *     unreleased charge is the safe direction);
 *  3. read the verdict: admitted (committed), refused (DP001, nothing
 *     written) or error (nothing written).
 * The worker takes every PENDING slot and handles the batch in ONE
 * transaction with synchronous_commit = on.  Each request is decided and
 * written in its own subtransaction: it is checked again (an invalid slot
 * gets an error verdict without touching the tables), decided against the
 * batch's working copies of the totals (which include the earlier
 * admissions of the same batch), and its ledger rows are inserted.  If
 * anything in that fails, only that subtransaction is rolled back: the
 * request gets an error verdict and the working copies never saw it (they
 * are updated only after its writes succeeded), so no request can make
 * another's fail.  Then the worker commits (group commit: one WAL flush per
 * batch), publishes the new totals, and only then hands out the verdicts.
 * Nothing is published before the commit, so a verdict "admitted" is
 * durable: it survives the caller's ROLLBACK, errors, crashes of the
 * caller, of the worker or of the server (WAL).  A crash before the commit
 * loses the charges and the verdicts together; the callers never released
 * anything for them.  If the commit itself fails, every request of the batch
 * gets an error verdict and nothing of it is published.
 *
 * For the guard (which must never wait for the worker) the shared state also
 * holds a generation counter, bumped under the lock whenever the worker
 * publishes a change of the budgeted roles or their limits and whenever it
 * becomes ready or stops being ready; it is read without the lock.
 *
 * Totals are loaded from the tables when the worker starts (crash recovery
 * reinitialises shared memory and restarts the worker), rounded up.
 * Backup/restore, PITR and failover to an asynchronous standby can roll the
 * ledger back to an earlier state: see docs/dba.md, "Operations".
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above.
 */
#include "postgres.h"

#include "access/xlog.h"

#include <float.h>
#include <math.h>

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
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
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "funcapi.h"
#include "ledger.h"
#include "timeline.h"

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
	DP_REQ_RESET,
	DP_REQ_SET_CAPS,			/* the per-query caps (dp_pg.set_query_cap) */
	DP_REQ_READ					/* a page of rows for a view in any database */
} DpRequestKind;

/* At most this many 90%-of-a-limit warnings per charge. */
#define DP_MAX_WARNINGS 4

/* A limit whose 90% a charge passed. */
typedef struct DpLimitWarning
{
	Oid			role;
	DpRefusal	what;			/* DP_REFUSE_EPSILON, _DELTA or _RHO */
	double		spent;			/* after the charge */
	double		limit;
} DpLimitWarning;

/* Rows of a read request, per page: at most this many, and what fits. */
#define DP_READ_PAGE_ROWS 500
#define DP_READ_BUFFER (256 * 1024)

/* The reply of a read request in its dynamic shared memory. */
typedef struct DpReadReply
{
	int			natts;			/* columns per row */
	int			nrows;
	bool		more;			/* rows after last_id may exist */
	int64		last_id;
	Size		used;			/* bytes of data[] */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} DpReadReply;

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
	bool		forwarded;		/* a standby's worker sent it to the primary */
	DpRequestKind kind;
	Oid			requested_by;	/* session user */
#ifdef DP_PG_TEST_SWITCHES
	bool		debug_poison;	/* dp_pg.debug_poison_charge of the requester */
#endif
	int			nroles;
	Oid			roles[DP_MAX_CHARGE_ROLES];
	DpCost		cost;
	DpLimits	limits;			/* DP_REQ_SET_BUDGET */
	DpLimits	caps;			/* DP_REQ_SET_CAPS */
	/* DP_REQ_READ: rows of read_what with id > read_after (roles[] unless read_all) */
	DpReadWhat	read_what;
	bool		read_all;
	bool		read_names;		/* DP_READ_REFUSALS: database as its name (text), else its OID */
	int64		read_after;
	dsm_handle	read_handle;
	char		query[DP_QUERY_TEXT_LEN];
	char		detail[DP_DETAIL_LEN];
	/* verdict */
	DpVerdict	verdict;
	Oid			refused_role;
	DpRefusal	refusal;
	double		spent;			/* of the limit broken, before the charge */
	double		limit;
	double		requested;		/* after the charge */
	int			sqlerrcode;		/* DP_VERDICT_ERROR: the SQLSTATE for the requester */
	char		errmsg[256];
	int			nwarn;			/* DP_VERDICT_OK charge: limits whose 90% it passed */
	DpLimitWarning warn[DP_MAX_WARNINGS];
	ConditionVariable cv;
} DpLedgerSlot;

typedef struct DpBudgetEntry
{
	Oid			role;			/* hash key */
	bool		budgeted;		/* has a budget (always, in shared memory) */
	DpLimits	limits;
	DpLimits	caps;			/* per-query caps (NaN: none) */
	DpCost		spent;
	int64		charges;
} DpBudgetEntry;

/*
 * Refusals waiting for the worker to write them to dp_pg.guard_refusal_log
 * (a ring: when it is full, further refusals are only counted).
 */
#define DP_REFUSAL_RING 64
#define DP_REFUSAL_RULE_LEN 256
#define DP_REFUSAL_QUERY_LEN 512

typedef struct DpRefusalRecord
{
	TimestampTz at;
	Oid			session_user;
	Oid			current_user;
	Oid			database;
	int			sqlerrcode;
	char		rule[DP_REFUSAL_RULE_LEN];
	char		query[DP_REFUSAL_QUERY_LEN];
} DpRefusalRecord;

/* Roles dropped (committed) whose ledger rows the worker has not converted yet. */
#define DP_DROPPED_RING 64

typedef struct DpLedgerShared
{
	LWLock	   *lock;
	pid_t		worker_pid;
	Latch	   *worker_latch;
	bool		ready;			/* totals loaded, accepting requests */
	pg_atomic_uint64 budget_generation; /* see DpLedgerBudgetGeneration */
	/* loads of the ledger tables: asked for by writers other than the worker, done by it */
	pg_atomic_uint64 reload_requested;
	pg_atomic_uint64 reload_done;
	ConditionVariable reloaded;
	bool		has_entries;	/* the ledger holds a budget or a row (DpLedgerHoldsEntries) */
	/* a point-in-time recovery began this timeline: requests refused until accepted */
	bool		held;
	uint32		held_timeline;
	char		held_reason[128];
	/* roles whose DROP ROLE committed, to be converted in the ledger rows */
	int			ndropped;
	bool		dropped_overflow;
	Oid			dropped_oid[DP_DROPPED_RING];
	NameData	dropped_name[DP_DROPPED_RING];
	ConditionVariable slot_freed;
	DpLedgerSlot slots[DP_LEDGER_SLOTS];
	/* refusals to log: refusal_count records from refusal_head, and how many did not fit */
	int			refusal_head;
	int			refusal_count;
	int64		refusals_missed;
	DpRefusalRecord refusals[DP_REFUSAL_RING];
} DpLedgerShared;

char	   *dp_ledger_database = NULL;
int			dp_charge_timeout_ms = 10000;
int			dp_refusal_log_size = 10000;
static char *dp_debug_pause = NULL;
static int	dp_debug_pause_ms = 0;
#ifdef DP_PG_TEST_SWITCHES
static bool dp_debug_poison_charge = false;
#endif

static DpLedgerShared *ledger = NULL;
static HTAB *budgets = NULL;
static bool am_ledger_worker = false;	/* this process is the ledger worker */

/* A hot standby's link to its primary (standby.c registers it at load). */
static const DpLedgerForwarder *forwarder = NULL;

/* Register the standby's forwarder (standby.c, at load). */
void
DpLedgerSetForwarder(const DpLedgerForwarder *fwd)
{
	forwarder = fwd;
}

/* Shared memory size. */
static Size
DpLedgerShmemSize(void)
{
	return add_size(MAXALIGN(sizeof(DpLedgerShared)),
					hash_estimate_size(DP_MAX_BUDGETS, sizeof(DpBudgetEntry)));
}

/* shmem_request_hook (hooks.c): reserve memory and the lock. */
void
DpLedgerShmemRequest(void)
{
	RequestAddinShmemSpace(DpLedgerShmemSize());
	RequestNamedLWLockTranche("dp_pg_ledger", 1);
}

/* shmem_startup_hook (hooks.c): create or attach the shared state. */
void
DpLedgerShmemStartup(void)
{
	bool		found;
	HASHCTL		info;


	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ledger = ShmemInitStruct("dp_pg ledger", sizeof(DpLedgerShared), &found);
	if (!found)
	{
		memset(ledger, 0, sizeof(DpLedgerShared));
		ledger->lock = &(GetNamedLWLockTranche("dp_pg_ledger"))->lock;
		ConditionVariableInit(&ledger->slot_freed);
		ConditionVariableInit(&ledger->reloaded);
		pg_atomic_init_u64(&ledger->budget_generation, 0);
		pg_atomic_init_u64(&ledger->reload_requested, 0);
		pg_atomic_init_u64(&ledger->reload_done, 0);
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
	DefineCustomIntVariable("dp_pg.refusal_log_size",
							"Rows kept in the log of refused analyst queries (dp_pg.guard_refusals); 0 keeps none.",
							"The ledger worker writes each refusal durably and deletes the oldest rows beyond this many.",
							&dp_refusal_log_size,
							10000, 0, 10000000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomStringVariable("dp_pg.debug_pause",
							   "Testing only: step at which to pause (before_charge, worker_before_batch, worker_before_commit, worker_after_commit, before_release).",
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
#ifdef DP_PG_TEST_SWITCHES
	DefineCustomBoolVariable("dp_pg.debug_poison_charge",
							 "Testing only: the ledger worker fails the writes of this session's requests.",
							 "Exists only in test builds (DP_PG_TEST_SWITCHES); simulates a failing INSERT inside the request's subtransaction.",
							 &dp_debug_poison_charge,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
#endif

	/*
	 * No worker under pg_upgrade (binary-upgrade mode, as PostgreSQL's own
	 * launchers): it would write the ledger and keep the ledger database
	 * busy while pg_upgrade drops and restores the databases.
	 */
	if (IsBinaryUpgrade)
		return;
	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	/* on a hot standby too: there it forwards the charges to the primary */
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
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

/* The worker's state flags, read together under the lock. */
typedef struct DpLedgerFlags
{
	bool		ready;
	bool		held;
	bool		has_entries;
} DpLedgerFlags;

/* A consistent copy of the worker's state flags (all false without shared memory). */
static DpLedgerFlags
DpLedgerReadFlags(void)
{
	DpLedgerFlags f = {false, false, false};

	if (ledger == NULL)
		return f;
	LWLockAcquire(ledger->lock, LW_SHARED);
	f.ready = ledger->ready;
	f.held = ledger->held;
	f.has_entries = ledger->has_entries;
	LWLockRelease(ledger->lock);
	return f;
}

/* True once the worker has loaded the ledger and accepts requests. */
bool
DpLedgerReady(void)
{
	return DpLedgerReadFlags().ready;
}

/* 'ready', 'not ready' or 'held' (a restored ledger not yet accepted), for dp_pg.ledger_status(). */
const char *
DpLedgerStatus(void)
{
	DpLedgerFlags f = DpLedgerReadFlags();

	return !f.ready ? "not ready" : f.held ? "held" : "ready";
}

/*
 * True if the published budgets are at least as new as every write into the
 * ledger tables committed before want was read (reload_requested): a
 * restore's budgets are never overlooked by a caller that arrives after it.
 */
static bool
DpLedgerReloaded(uint64 want)
{
	return pg_atomic_read_u64(&ledger->reload_done) >= want;
}

/* The budget generation (see ledger.h); read without the lock, never waits. */
uint64
DpLedgerBudgetGeneration(void)
{
	if (ledger == NULL)
		return 0;
	return pg_atomic_read_u64(&ledger->budget_generation);
}

/*
 * Bump the budget generation (worker, holding the lock exclusively, right
 * after the change it announces is visible in shared memory).
 */
static void
DpLedgerBumpGeneration(void)
{
	Assert(LWLockHeldByMeInMode(ledger->lock, LW_EXCLUSIVE));
	pg_atomic_fetch_add_u64(&ledger->budget_generation, 1);
}

/* ERROR: the ledger cannot take requests now (fail closed). */
static void
DpLedgerNotReady(void)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the dp_pg ledger is not available on this hot standby"),
				 errdetail("On a hot standby the ledger worker forwards every charge to the primary; it has not loaded the replicated budgets yet."),
				 errhint("Check that dp_pg is in shared_preload_libraries here, that CREATE EXTENSION dp_pg ran in database \"%s\" on the primary, and the server log.",
						 dp_ledger_database ? dp_ledger_database : "postgres")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the dp_pg ledger is not available"),
			 errdetail("No dp query can run until the ledger worker has loaded the budgets."),
			 errhint("Run CREATE EXTENSION dp_pg in database \"%s\" (dp_pg.ledger_database) and check the server log.",
					 dp_ledger_database ? dp_ledger_database : "postgres")));
}

/*
 * Wait (bounded by the charge timeout) until the worker is ready and has
 * loaded every write into the ledger tables committed so far.
 */
static void
DpLedgerAwaitReady(void)
{
	TimestampTz start = GetCurrentTimestamp();
	uint64		want;

	if (ledger == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("dp_pg must be loaded via shared_preload_libraries"),
				 errhint("Add dp_pg to shared_preload_libraries in postgresql.conf and restart the server.")));
	want = pg_atomic_read_u64(&ledger->reload_requested);
	while (!DpLedgerReady() || !DpLedgerReloaded(want))
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

/*
 * Copy the published budgeted roles into a palloc'd *out and return how
 * many; with require_ready, return -1 instead if the worker is not ready or
 * has a write into the ledger tables still to load.
 * Holds the lock (shared) only for the copy.
 */
static int
DpLedgerBudgetedRoles(Oid **out, bool require_ready)
{
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *e;
	int			n = 0;

	LWLockAcquire(ledger->lock, LW_SHARED);
	if (require_ready && (!ledger->ready || !DpLedgerReloaded(pg_atomic_read_u64(&ledger->reload_requested))))
	{
		LWLockRelease(ledger->lock);
		*out = NULL;
		return -1;
	}
	*out = palloc(sizeof(Oid) * Max(hash_get_num_entries(budgets), 1));
	hash_seq_init(&seq, budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
		(*out)[n++] = e->role;
	LWLockRelease(ledger->lock);
	return n;
}

/*
 * Of the budgeted roles, those a query run now is charged to (the
 * membership rules of ledger.h); checked without the ledger's lock.
 */
static int
DpChargedAmong(const Oid *budgeted, int nbudgeted, Oid *roles)
{
	Oid			users[3];
	int			n = 0;

	users[0] = GetSessionUserId();
	users[1] = GetOuterUserId();
	users[2] = GetUserId();
	for (int b = 0; b < nbudgeted; b++)
		for (int u = 0; u < 3; u++)
			if (users[u] == budgeted[b] || is_member_of_role_nosuper(users[u], budgeted[b]))
			{
				n = DpAddRole(roles, n, budgeted[b]);
				break;
			}
	return n;
}

/* The budgeted roles a query run now must be charged to (see ledger.h). */
int
DpLedgerChargedRoles(Oid *roles)
{
	Oid		   *budgeted;
	int			nbudgeted;
	int			n;

	DpLedgerAwaitReady();
	nbudgeted = DpLedgerBudgetedRoles(&budgeted, false);
	n = DpChargedAmong(budgeted, nbudgeted, roles);
	pfree(budgeted);
	return n;
}

/* DpLedgerChargedRoles without waiting for the worker (see ledger.h). */
int
DpLedgerChargedRolesNoWait(Oid *roles, bool *known)
{
	Oid		   *budgeted;
	int			nbudgeted;
	int			n;

	*known = false;
	if (ledger == NULL)
		return 0;
	nbudgeted = DpLedgerBudgetedRoles(&budgeted, true);
	if (nbudgeted < 0)
		return 0;
	n = DpChargedAmong(budgeted, nbudgeted, roles);
	pfree(budgeted);
	*known = true;
	return n;
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
 * Submit the requests in slots idx[0..n-1] and wait for their verdicts.  The
 * slots must have been filled (their state is FILLING).  On return they are
 * FREE again and out[k] holds a copy of slot idx[k].  On an error (timeout,
 * cancel) every slot without its verdict is abandoned to the worker.
 */
static void
DpLedgerSubmitMany(int n, const int *idx, DpLedgerSlot *out)
{
	TimestampTz start = GetCurrentTimestamp();
	volatile int ndone = 0;

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	for (int k = 0; k < n; k++)
		ledger->slots[idx[k]].state = DP_SLOT_PENDING;
	if (ledger->worker_latch)
		SetLatch(ledger->worker_latch);
	LWLockRelease(ledger->lock);

	PG_TRY();
	{
		/* the verdicts of one batch come together: wait for them in order */
		while (ndone < n)
		{
			DpLedgerSlot *slot = &ledger->slots[idx[ndone]];

			ConditionVariablePrepareToSleep(&slot->cv);
			for (;;)
			{
				long		remain;

				LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
				if (slot->state == DP_SLOT_DONE)
				{
					memcpy(&out[ndone], slot, offsetof(DpLedgerSlot, cv));
					slot->state = DP_SLOT_FREE;
					ndone++;
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
	}
	PG_FINALLY();
	{
		if (ndone < n)
		{
			ConditionVariableCancelSleep();
			LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
			for (int k = ndone; k < n; k++)
			{
				DpLedgerSlot *slot = &ledger->slots[idx[k]];

				if (slot->state == DP_SLOT_DONE)
					slot->state = DP_SLOT_FREE;
				else
					slot->abandoned = true;
			}
			LWLockRelease(ledger->lock);
		}
		ConditionVariableBroadcast(&ledger->slot_freed);
	}
	PG_END_TRY();
}

/* DpLedgerSubmitMany of one slot. */
static void
DpLedgerSubmit(int i, DpLedgerSlot *out)
{
	DpLedgerSubmitMany(1, &i, out);
}

/* The value of a limit for messages. */
static const char *
DpRefusalName(DpRefusal r)
{
	switch (r)
	{
		case DP_REFUSE_EPSILON:
		case DP_REFUSE_QUERY_EPSILON:
			return "epsilon";
		case DP_REFUSE_DELTA:
		case DP_REFUSE_QUERY_DELTA:
			return "delta";
		case DP_REFUSE_RHO:
		case DP_REFUSE_QUERY_RHO:
			return "rho";
		default:
			return "budget";
	}
}

/* A role's name for messages (its OID if it has none any more). */
static const char *
DpRoleName(Oid role)
{
	const char *name = GetUserNameFromId(role, true);

	return name ? name : psprintf("%u", role);
}

/* ERROR 22023 unless cost is a charge the ledger can record (see dp_cost_valid_charge). */
void
DpLedgerCheckCost(const DpCost *cost)
{
	char		why[256];

	if (!dp_cost_valid_charge(cost, why, sizeof(why)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the privacy cost of this query is not a valid charge"),
				 errdetail("Summed over the query's dp aggregate calls, %s.  Nothing was charged and nothing was released.", why),
				 errhint("Use fewer dp aggregate calls in one query, or mechanisms with a smaller delta.")));
}

/* Fill a slot that is ours (FILLING) with a charge request. */
static void
DpFillCharge(DpLedgerSlot *slot, Oid requested_by, const Oid *roles, int nroles,
			 const DpCost *cost, const char *query, const char *detail)
{
	int			qlen;

	slot->kind = DP_REQ_CHARGE;
	slot->requested_by = requested_by;
#ifdef DP_PG_TEST_SWITCHES
	slot->debug_poison = dp_debug_poison_charge;
#endif
	slot->forwarded = false;
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
}

/* A slot's verdict as a DpChargeVerdict. */
static void
DpSlotToVerdict(const DpLedgerSlot *slot, DpChargeVerdict *v)
{
	memset(v, 0, sizeof(*v));
	v->verdict = slot->verdict;
	v->refused_role = slot->refused_role;
	v->refusal = slot->refusal;
	v->spent = slot->spent;
	v->limit = slot->limit;
	v->requested = slot->requested;
	v->sqlerrcode = slot->sqlerrcode;
	strlcpy(v->errmsg, slot->errmsg, sizeof(v->errmsg));
	v->nwarn = Min(slot->nwarn, DP_FORWARD_WARNINGS);
	for (int w = 0; w < v->nwarn; w++)
	{
		v->warn_role[w] = slot->warn[w].role;
		v->warn_what[w] = slot->warn[w].what;
		v->warn_spent[w] = slot->warn[w].spent;
		v->warn_limit[w] = slot->warn[w].limit;
	}
}

/* A forwarded verdict into the slot it answers (standby worker). */
static void
DpVerdictToSlot(const DpChargeVerdict *v, DpLedgerSlot *slot)
{
	slot->verdict = v->verdict;
	slot->refused_role = v->refused_role;
	slot->refusal = v->refusal;
	slot->spent = v->spent;
	slot->limit = v->limit;
	slot->requested = v->requested;
	slot->sqlerrcode = v->sqlerrcode;
	strlcpy(slot->errmsg, v->errmsg, sizeof(slot->errmsg));
	slot->nwarn = Min(v->nwarn, DP_MAX_WARNINGS);
	for (int w = 0; w < slot->nwarn; w++)
	{
		slot->warn[w].role = v->warn_role[w];
		slot->warn[w].what = v->warn_what[w];
		slot->warn[w].spent = v->warn_spent[w];
		slot->warn[w].limit = v->warn_limit[w];
	}
}

/* Charge a batch of requests and wait for every verdict (see ledger.h). */
void
DpLedgerChargeMany(int n, const DpChargeRequest *reqs, DpChargeVerdict *out)
{
	int			idx[DP_FORWARD_MAX];
	int			of[DP_FORWARD_MAX];
	volatile int taken = 0;
	DpLedgerSlot *results;
	char		why[200];

	Assert(n > 0 && n <= DP_FORWARD_MAX);
	DpLedgerAwaitReady();
	PG_TRY();
	{
		for (int r = 0; r < n; r++)
		{
			DpLedgerSlot *slot;

			memset(&out[r], 0, sizeof(DpChargeVerdict));
			if (reqs[r].nroles < 1 || reqs[r].nroles > DP_MAX_CHARGE_ROLES ||
				!dp_cost_valid_charge(&reqs[r].cost, why, sizeof(why)))
			{
				out[r].verdict = DP_VERDICT_ERROR;
				out[r].sqlerrcode = ERRCODE_INVALID_PARAMETER_VALUE;
				snprintf(out[r].errmsg, sizeof(out[r].errmsg), "the forwarded charge is not valid: %s",
						 reqs[r].nroles < 1 || reqs[r].nroles > DP_MAX_CHARGE_ROLES ? "bad number of roles" : why);
				continue;
			}
			idx[taken] = DpLedgerTakeSlot();
			of[taken] = r;
			taken++;
			slot = &ledger->slots[idx[taken - 1]];
			DpFillCharge(slot, reqs[r].requested_by, reqs[r].roles, reqs[r].nroles,
						 &reqs[r].cost, reqs[r].query, reqs[r].detail);
		}
	}
	PG_CATCH();
	{
		/* slots taken but never submitted go back */
		LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
		for (int k = 0; k < taken; k++)
			ledger->slots[idx[k]].state = DP_SLOT_FREE;
		LWLockRelease(ledger->lock);
		ConditionVariableBroadcast(&ledger->slot_freed);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (taken == 0)
		return;
	results = palloc(sizeof(DpLedgerSlot) * taken);
	DpLedgerSubmitMany(taken, idx, results);
	for (int k = 0; k < taken; k++)
		DpSlotToVerdict(&results[k], &out[of[k]]);
	pfree(results);
}

/* Charge cost to roles, durably and outside the caller's transaction. */
void
DpLedgerCharge(const Oid *roles, int nroles, const DpCost *cost,
			   const char *query, const char *detail)
{
	int			i;
	DpLedgerSlot *slot;
	DpLedgerSlot result;

	Assert(nroles > 0 && nroles <= DP_MAX_CHARGE_ROLES);
	/* a cost the ledger could not record must never enter a batch */
	DpLedgerCheckCost(cost);
	DpDebugPause("before_charge");
	i = DpLedgerTakeSlot();
	slot = &ledger->slots[i];
	/* the slot is ours (FILLING: the worker ignores it): fill it without the lock */
	DpFillCharge(slot, GetSessionUserId(), roles, nroles, cost, query, detail);
	DpLedgerSubmit(i, &result);

	if (result.verdict == DP_VERDICT_REFUSED)
	{
		bool		per_query = result.refusal == DP_REFUSE_QUERY_EPSILON ||
			result.refusal == DP_REFUSE_QUERY_DELTA || result.refusal == DP_REFUSE_QUERY_RHO;
		bool		above_asked;
		char		rule[DP_REFUSAL_RULE_LEN];

		snprintf(rule, sizeof(rule), "%s %s of role \"%s\"",
				 per_query ? "per-query cap on" : "budget limit on",
				 DpRefusalName(result.refusal), DpRoleName(result.refused_role));
		DpLedgerNoteRefusal(rule, ERRCODE_DP_BUDGET_EXCEEDED);

		/*
		 * An (epsilon, delta) charge is accounted at its own epsilon by basic
		 * composition only while the deltas add up to half the delta limit
		 * (the other half pays for the Renyi certificates): beyond, its
		 * epsilon is the Renyi one, larger than asked.  Say so.
		 */
		above_asked = result.refusal == DP_REFUSE_EPSILON || result.refusal == DP_REFUSE_QUERY_EPSILON;
		above_asked = above_asked && cost->delta > 0.0 && isfinite(result.requested) &&
			result.requested - result.spent > cost->epsilon * (1.0 + 1e-9);
		if (per_query)
			ereport(ERROR,
					(errcode(ERRCODE_DP_BUDGET_EXCEEDED),
					 errmsg("this query exceeds the per-query %s cap of role \"%s\"",
							DpRefusalName(result.refusal), DpRoleName(result.refused_role)),
					 above_asked ?
					 errdetail("The query's epsilon is %.6g (it asks for epsilon %.6g with delta %.6g; basic composition takes a delta only up to half the role's delta limit, so its epsilon is the Renyi accounting's); one query may spend at most %.6g.",
							   result.requested, cost->epsilon, cost->delta, result.limit) :
					 errdetail("The query's %s is %.6g; one query may spend at most %.6g.",
							   DpRefusalName(result.refusal), result.requested, result.limit),
					 errhint("Nothing was charged and nothing was released.  Ask for a smaller %s%s.",
							 DpRefusalName(result.refusal),
							 above_asked ? " or a delta of at most half the delta limit" : "")));
		ereport(ERROR,
				(errcode(ERRCODE_DP_BUDGET_EXCEEDED),
				 errmsg("privacy budget of role \"%s\" exceeded", DpRoleName(result.refused_role)),
				 result.refusal == DP_REFUSE_DELTA && result.limit == 0.0 ?
				 errdetail("The delta limit is 0 (pure differential privacy): only queries without delta fit, and this one has delta %.6g.",
						   result.requested - result.spent) :
				 result.refusal == DP_REFUSE_EPSILON && isinf(result.requested) ?
				 errdetail("epsilon spent %.6g, limit %.6g; this query's epsilon has no finite bound at the delta the role has left (its delta limit is spent, or too little of it is left).",
						   result.spent, result.limit) :
				 above_asked ?
				 errdetail("epsilon spent %.6g, limit %.6g, this query would bring it to %.6g: it asks for epsilon %.6g with delta %.6g, but basic composition counts a charge at its own epsilon only while the deltas add up to at most half the role's delta limit; beyond that its epsilon is the Renyi accounting's, larger here.",
						   result.spent, result.limit, result.requested, cost->epsilon, cost->delta) :
				 errdetail("%s spent %.6g, limit %.6g, this query would bring it to %.6g.",
						   DpRefusalName(result.refusal), result.spent, result.limit, result.requested),
				 above_asked ?
				 errhint("Nothing was charged and nothing was released.  Give the mechanism a delta of at most half of what is left of the delta limit (or a smaller epsilon), or ask the DBA for a larger budget.") :
				 errhint("Nothing was charged and nothing was released.  Ask for a smaller %s (in the mechanism, or dp_pg.default_mechanism for calls that name none and dp_pg.partition_mechanism for GROUP BY keys without public values), or ask the DBA for a larger budget.",
						 DpRefusalName(result.refusal))));
	}
	if (result.verdict != DP_VERDICT_OK)
		ereport(ERROR,
				(errcode(result.sqlerrcode),
				 errmsg("the dp_pg ledger could not record the charge: %s", result.errmsg),
				 errdetail("Nothing was charged and nothing was released.")));
	/* charged: say so when a role's spending passed 90% of a limit */
	for (int w = 0; w < result.nwarn && w < DP_MAX_WARNINGS; w++)
		ereport(WARNING,
				(errmsg("role \"%s\" has spent %.0f%% of its %s limit",
						DpRoleName(result.warn[w].role),
						floor(100.0 * result.warn[w].spent / result.warn[w].limit),
						DpRefusalName(result.warn[w].what)),
				 errdetail("%s spent %.6g of %.6g, this query included.",
						   DpRefusalName(result.warn[w].what), result.warn[w].spent, result.warn[w].limit)));
}

/* A JSON number, or null for NaN / Inf. */
static void
DpJsonNumber(StringInfo buf, const char *key, double v)
{
	char		num[DOUBLE_SHORTEST_DECIMAL_LEN];

	if (isnan(v) || isinf(v))
		appendStringInfo(buf, "\"%s\": null", key);
	else
	{
		/* the shortest text that reads back as v */
		double_to_shortest_decimal_buf(v, num);
		appendStringInfo(buf, "\"%s\": %s", key, num);
	}
}

/* Send a budget administration request and wait for it. */
static void
DpLedgerAdmin(DpRequestKind kind, Oid role, const DpLimits *limits)
{
	int			i;
	DpLedgerSlot *slot;
	DpLedgerSlot result;
	StringInfoData detail;

	/* the ledger row of a change records the values it set */
	initStringInfo(&detail);
	appendStringInfoChar(&detail, '{');
	if (kind == DP_REQ_SET_BUDGET && limits)
	{
		DpJsonNumber(&detail, "epsilon_limit", limits->epsilon);
		appendStringInfoString(&detail, ", ");
		DpJsonNumber(&detail, "delta_limit", limits->delta);
		appendStringInfoString(&detail, ", ");
		DpJsonNumber(&detail, "rho_limit", limits->rho);
	}
	else if (kind == DP_REQ_SET_CAPS && limits)
	{
		DpJsonNumber(&detail, "max_epsilon_per_query", limits->epsilon);
		appendStringInfoString(&detail, ", ");
		DpJsonNumber(&detail, "max_delta_per_query", limits->delta);
		appendStringInfoString(&detail, ", ");
		DpJsonNumber(&detail, "max_rho_per_query", limits->rho);
	}
	appendStringInfoChar(&detail, '}');

	DpLedgerAwaitReady();
	i = DpLedgerTakeSlot();
	slot = &ledger->slots[i];
	slot->kind = kind;
	slot->requested_by = GetSessionUserId();
#ifdef DP_PG_TEST_SWITCHES
	slot->debug_poison = dp_debug_poison_charge;
#endif
	slot->nroles = 1;
	slot->roles[0] = role;
	dp_cost_zero(&slot->cost);
	slot->limits.epsilon = slot->limits.delta = slot->limits.rho = NAN;
	slot->caps = slot->limits;
	if (limits && kind == DP_REQ_SET_CAPS)
		slot->caps = *limits;
	else if (limits)
		slot->limits = *limits;
	slot->query[0] = '\0';
	strlcpy(slot->detail, detail.data, DP_DETAIL_LEN);
	DpLedgerSubmit(i, &result);
	if (result.verdict != DP_VERDICT_OK)
		ereport(ERROR,
				(errcode(result.sqlerrcode),
				 errmsg("the dp_pg ledger could not record the change: %s", result.errmsg),
				 errdetail("Nothing was changed.")));
}

/* Set (or remove) a role's limits; durable, logged. */
void
DpLedgerSetBudget(Oid role, const DpLimits *limits, bool remove)
{
	DpLedgerAdmin(remove ? DP_REQ_REMOVE_BUDGET : DP_REQ_SET_BUDGET, role, limits);
}

/* Set (all NaN: remove) a role's per-query caps; durable, logged. */
void
DpLedgerSetCaps(Oid role, const DpLimits *caps)
{
	DpLedgerAdmin(DP_REQ_SET_CAPS, role, caps);
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
			out[n].caps = e->caps;
			out[n].spent = e->spent;
			out[n].charges = e->charges;
			n++;
		}
	}
	LWLockRelease(ledger->lock);
	*rows = out;
	return n;
}

/*
 * Reading the ledger tables from any database
 * -------------------------------------------
 * The tables live in the ledger database; a backend elsewhere cannot read
 * them.  So a read is a request to the worker, like a charge: the backend
 * creates a dynamic shared memory segment, and asks for the rows after the
 * last id it has, a page at a time (at most DP_READ_PAGE_ROWS rows, as many
 * as fit in the segment); the worker runs the SELECT in its batch
 * transaction (its own subtransaction: a failed read fails alone) and
 * writes the rows there.  A row travels as its columns: a pass-by-value
 * Datum as is, a varlena detoasted and flat (text, jsonb and arrays are
 * position-independent), NULL as a length of -1.  Pages keep the worker's
 * share of a big read short, so charges are never held up for long.
 */

/* Append one column of a row to the reply; false if it does not fit. */
static bool
DpReadPut(DpReadReply *reply, Size cap, Form_pg_attribute att, Datum d, bool isnull)
{
	int32		len;
	Size		need;
	char	   *p = reply->data + reply->used;

	if (isnull)
		len = -1;
	else if (att->attbyval)
		len = sizeof(Datum);
	else if (att->attlen == -1)
	{
		d = PointerGetDatum(PG_DETOAST_DATUM(d));
		len = VARSIZE(DatumGetPointer(d));
	}
	else
		elog(ERROR, "dp_pg ledger: column \"%s\" has an unsupported type", NameStr(att->attname));
	need = sizeof(int32) + Max(len, 0);
	if (offsetof(DpReadReply, data) + reply->used + need > cap)
		return false;
	memcpy(p, &len, sizeof(int32));
	if (len == (int32) sizeof(Datum) && att->attbyval)
		memcpy(p + sizeof(int32), &d, sizeof(Datum));
	else if (len > 0)
		memcpy(p + sizeof(int32), DatumGetPointer(d), len);
	reply->used += need;
	return true;
}

/* Read the rows of a ledger table into fcinfo's materialized SRF (see ledger.h). */
void
DpLedgerReadRows(FunctionCallInfo fcinfo, DpReadWhat what, bool all, const Oid *roles, int nroles)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	desc;
	dsm_segment *seg;
	DpReadReply *reply;
	int64		after = 0;
	Datum	   *values;
	bool	   *nulls;

	Assert(nroles >= 0 && nroles <= DP_MAX_CHARGE_ROLES);
	InitMaterializedSRF(fcinfo, 0);
	desc = rsinfo->setDesc;
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	DpLedgerAwaitReady();
	seg = dsm_create(DP_READ_BUFFER, 0);
	reply = dsm_segment_address(seg);
	for (;;)
	{
		int			i = DpLedgerTakeSlot();
		DpLedgerSlot *slot = &ledger->slots[i];
		DpLedgerSlot result;
		const char *p;

		slot->kind = DP_REQ_READ;
		slot->requested_by = GetSessionUserId();
#ifdef DP_PG_TEST_SWITCHES
		slot->debug_poison = false;
#endif
		slot->nroles = nroles;
		if (nroles > 0)
			memcpy(slot->roles, roles, sizeof(Oid) * nroles);
		dp_cost_zero(&slot->cost);
		slot->read_what = what;
		slot->read_all = all;
		/* a database still at the 0.1.0 catalog reads the refusals' database as an OID */
		slot->read_names = what == DP_READ_REFUSALS && desc->natts > 4 &&
			TupleDescAttr(desc, 4)->atttypid == TEXTOID;
		slot->read_after = after;
		slot->read_handle = dsm_segment_handle(seg);
		slot->query[0] = '\0';
		slot->detail[0] = '\0';
		reply->natts = 0;
		reply->nrows = 0;
		reply->used = 0;
		reply->more = false;
		DpLedgerSubmit(i, &result);
		if (result.verdict != DP_VERDICT_OK)
			ereport(ERROR,
					(errcode(result.sqlerrcode),
					 errmsg("the dp_pg ledger could not read its rows: %s", result.errmsg)));
		if (reply->nrows > 0 && reply->natts != desc->natts)
			elog(ERROR, "dp_pg ledger: a row of %d columns where %d were expected",
				 reply->natts, desc->natts);
		p = reply->data;
		for (int r = 0; r < reply->nrows; r++)
		{
			for (int c = 0; c < desc->natts; c++)
			{
				Form_pg_attribute att = TupleDescAttr(desc, c);
				int32		len;

				memcpy(&len, p, sizeof(int32));
				p += sizeof(int32);
				nulls[c] = len < 0;
				if (len < 0)
					values[c] = (Datum) 0;
				else if (att->attbyval)
				{
					Datum		d;

					memcpy(&d, p, sizeof(Datum));
					values[c] = d;
				}
				else
				{
					char	   *v = palloc(len);

					memcpy(v, p, len);
					values[c] = PointerGetDatum(v);
				}
				p += Max(len, 0);
			}
			tuplestore_putvalues(rsinfo->setResult, desc, values, nulls);
			for (int c = 0; c < desc->natts; c++)
				if (!nulls[c] && !TupleDescAttr(desc, c)->attbyval)
					pfree(DatumGetPointer(values[c]));
		}
		if (!reply->more)
			break;
		after = reply->last_id;
		CHECK_FOR_INTERRUPTS();
	}
	dsm_detach(seg);
}

/* Note a refusal of an analyst's query for the durable log (see ledger.h). */
void
DpLedgerNoteRefusal(const char *rule, int sqlerrcode)
{
	Oid			user = GetSessionUserId();

	if (ledger == NULL || !OidIsValid(user) || superuser_arg(user))
		return;
	DpLedgerNoteRefusalFrom(GetCurrentTimestamp(), user, GetUserId(), MyDatabaseId,
							sqlerrcode, rule, debug_query_string);
}

/* Count refusals that were not queued (see ledger.h). */
void
DpLedgerNoteRefusalsMissed(int64 n)
{
	if (ledger == NULL)
		return;
	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	ledger->refusals_missed += n;
	if (ledger->worker_latch)
		SetLatch(ledger->worker_latch);
	LWLockRelease(ledger->lock);
}

/* Queue a refusal for the log (see ledger.h); never waits, never fails. */
void
DpLedgerNoteRefusalFrom(TimestampTz at, Oid session_user, Oid current_user, Oid database,
						int sqlerrcode, const char *rule, const char *query)
{
	DpRefusalRecord *rec;

	if (ledger == NULL)
		return;
	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	if (ledger->refusal_count >= DP_REFUSAL_RING)
	{
		ledger->refusals_missed++;
		LWLockRelease(ledger->lock);
		return;
	}
	rec = &ledger->refusals[(ledger->refusal_head + ledger->refusal_count) % DP_REFUSAL_RING];
	ledger->refusal_count++;
	rec->at = at;
	rec->session_user = session_user;
	rec->current_user = current_user;
	rec->database = database;
	rec->sqlerrcode = sqlerrcode;
	rec->rule[0] = '\0';
	if (rule)
	{
		int			rlen = pg_mbcliplen(rule, strlen(rule), DP_REFUSAL_RULE_LEN - 1);

		memcpy(rec->rule, rule, rlen);
		rec->rule[rlen] = '\0';
	}
	rec->query[0] = '\0';
	if (query)
	{
		int			qlen = pg_mbcliplen(query, strlen(query), DP_REFUSAL_QUERY_LEN - 1);

		memcpy(rec->query, query, qlen);
		rec->query[qlen] = '\0';
	}
	if (ledger->worker_latch)
		SetLatch(ledger->worker_latch);
	LWLockRelease(ledger->lock);
}

/* Ask the worker to load the ledger tables again (see ledger.h). */
void
DpLedgerRequestReload(void)
{
	if (ledger == NULL || am_ledger_worker)
		return;
	pg_atomic_fetch_add_u64(&ledger->reload_requested, 1);
	LWLockAcquire(ledger->lock, LW_SHARED);
	if (ledger->worker_latch)
		SetLatch(ledger->worker_latch);
	LWLockRelease(ledger->lock);
}

/* True in the ledger worker itself. */
bool
DpLedgerIsWorker(void)
{
	return am_ledger_worker;
}

/* Whether the ledger holds a budget or a row (see ledger.h). */
bool
DpLedgerHoldsEntries(bool *known)
{
	DpLedgerFlags f = DpLedgerReadFlags();

	*known = f.ready;
	return f.has_entries;
}

/* Queue committed role drops for the worker (see ledger.h); never waits, never fails. */
void
DpLedgerNoteDroppedRoles(int n, const Oid *oids, const NameData *names)
{
	if (ledger == NULL || n == 0)
		return;
	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	for (int i = 0; i < n; i++)
	{
		if (ledger->ndropped >= DP_DROPPED_RING)
		{
			ledger->dropped_overflow = true;
			break;
		}
		ledger->dropped_oid[ledger->ndropped] = oids[i];
		ledger->dropped_name[ledger->ndropped] = names[i];
		ledger->ndropped++;
	}
	if (ledger->worker_latch)
		SetLatch(ledger->worker_latch);
	LWLockRelease(ledger->lock);
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

/* The boolean a one-row query about the ledger tables' layout returns (what: for the message). */
static bool
DpLayoutQuery(const char *sql, const char *what)
{
	bool		isnull;

	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the layout of %s", what);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* True if the ledger tables have the 0.2.0 layout (names: regrole role, NULL once dropped). */
static bool
DpLedgerHasNames(void)
{
	return DpLayoutQuery("SELECT NOT a.attnotnull FROM pg_catalog.pg_attribute a "
						 "WHERE a.attrelid = 'dp_pg.ledger_entries'::pg_catalog.regclass AND a.attname = 'role'",
						 "dp_pg.ledger_entries");
}

/* True if the refusal log keeps database names (0.2.0), not OIDs. */
static bool
DpRefusalLogHasNames(void)
{
	return DpLayoutQuery("SELECT a.atttypid = 'pg_catalog.text'::pg_catalog.regtype FROM pg_catalog.pg_attribute a "
						 "WHERE a.attrelid = 'dp_pg.guard_refusal_log'::pg_catalog.regclass AND a.attname = 'database'",
						 "dp_pg.guard_refusal_log");
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

/* Write a role's limits and caps to dp_pg.budget_limits (or delete them). */
static void
DpWorkerWriteLimits(Oid role, const DpLimits *l, const DpLimits *caps, bool remove)
{
	Oid			types[7] = {OIDOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

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
	values[4] = DpCostDatum(caps->epsilon, &nulls[4]);
	values[5] = DpCostDatum(caps->delta, &nulls[5]);
	values[6] = DpCostDatum(caps->rho, &nulls[6]);
	if (SPI_execute_with_args("INSERT INTO dp_pg.budget_limits (role, epsilon_limit, delta_limit, rho_limit, "
							  "max_epsilon_per_query, max_delta_per_query, max_rho_per_query) "
							  "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (role) DO UPDATE SET "
							  "epsilon_limit = EXCLUDED.epsilon_limit, delta_limit = EXCLUDED.delta_limit, "
							  "rho_limit = EXCLUDED.rho_limit, max_epsilon_per_query = EXCLUDED.max_epsilon_per_query, "
							  "max_delta_per_query = EXCLUDED.max_delta_per_query, "
							  "max_rho_per_query = EXCLUDED.max_rho_per_query, updated_at = now()",
							  7, types, values, nulls, false, 0) != SPI_OK_INSERT)
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

/* The cost of a ledger row whose epsilon, delta, rho, rdp are columns col.. col+3. */
static void
DpRowCost(HeapTuple tup, TupleDesc desc, int col, DpCost *c)
{
	bool		isnull;
	Datum		arr;

	c->epsilon = DpSpiDouble(tup, desc, col, INFINITY);
	c->delta = DpSpiDouble(tup, desc, col + 1, 0.0);
	c->rho = DpSpiDouble(tup, desc, col + 2, INFINITY);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c->rdp[i] = INFINITY;
	arr = SPI_getbinval(tup, desc, col + 3, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			nelems;

		deconstruct_array(DatumGetArrayTypeP(arr), FLOAT8OID, 8, FLOAT8PASSBYVAL,
						  TYPALIGN_DOUBLE, &elems, &nulls, &nelems);
		for (int i = 0; i < DP_RDP_NALPHAS && i < nelems; i++)
			if (!nulls[i])
				c->rdp[i] = DatumGetFloat8(elems[i]);
	}
}

/*
 * Load limits and spent totals from the tables into the local table into
 * (installed at once afterwards: DpWorkerInstall).  Charges are replayed up
 * to ledger row *upto; with *upto = 0 up to the last row, whose id is stored
 * there.
 */
static void
DpWorkerLoad(HTAB *into, int64 *upto)
{
	DpBudgetEntry *e;
	uint64		n;

	if (*upto == 0)
	{
		bool		isnull;

		if (SPI_execute("SELECT coalesce(max(id), 0) FROM dp_pg.ledger_entries", true, 0) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "could not read dp_pg.ledger_entries");
		*upto = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}

	if (SPI_execute("SELECT role, epsilon_limit, delta_limit, rho_limit, max_epsilon_per_query, "
					"max_delta_per_query, max_rho_per_query FROM dp_pg.budget_limits",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read dp_pg.budget_limits");
	n = SPI_processed;
	if (n > DP_MAX_BUDGETS)
		elog(ERROR, "too many dp_pg budgets (at most %d)", DP_MAX_BUDGETS);
	for (uint64 r = 0; r < n; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Oid			role = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		bool		found;

		e = hash_search(into, &role, HASH_ENTER, &found);
		e->limits.epsilon = DpSpiDouble(tup, desc, 2, NAN);
		e->limits.delta = DpSpiDouble(tup, desc, 3, NAN);
		e->limits.rho = DpSpiDouble(tup, desc, 4, NAN);
		e->caps.epsilon = DpSpiDouble(tup, desc, 5, NAN);
		e->caps.delta = DpSpiDouble(tup, desc, 6, NAN);
		e->caps.rho = DpSpiDouble(tup, desc, 7, NAN);
		e->budgeted = true;
		dp_cost_zero(&e->spent);
		e->charges = 0;
	}

	/*
	 * Replay the charges since each role's last reset in ledger order with
	 * the same rounded-up additions the worker made online, so a restart
	 * reproduces the totals bit for bit.  A NULL epsilon (rho forms) makes
	 * basic composition unavailable (+Inf).
	 */
	{
		Portal		portal;
		SPIPlanPtr	plan;
		Oid			types[1] = {INT8OID};
		Datum		values[1] = {Int64GetDatum(*upto)};

		plan = SPI_prepare("WITH last AS (SELECT role, max(id) AS rid FROM dp_pg.ledger_entries "
						   "WHERE kind = 'reset' AND id <= $1 GROUP BY role) "
						   "SELECT e.role, e.epsilon, e.delta, e.rho, e.rdp FROM dp_pg.ledger_entries e "
						   "LEFT JOIN last l USING (role) "
						   "WHERE e.kind = 'charge' AND e.id > coalesce(l.rid, 0) AND e.id <= $1 ORDER BY e.id",
						   1, types);
		if (plan == NULL)
			elog(ERROR, "could not prepare the ledger replay");
		portal = SPI_cursor_open(NULL, plan, values, NULL, true);
		for (;;)
		{
			SPI_cursor_fetch(portal, true, 10000);
			if (SPI_processed == 0)
				break;
			for (uint64 r = 0; r < SPI_processed; r++)
			{
				HeapTuple	tup = SPI_tuptable->vals[r];
				TupleDesc	desc = SPI_tuptable->tupdesc;
				bool		isnull;
				Oid			role = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
				DpCost		c;

				e = hash_search(into, &role, HASH_FIND, NULL);
				if (e == NULL)
					continue;	/* charges of a role whose budget was removed */
				DpRowCost(tup, desc, 2, &c);
				dp_cost_add(&e->spent, &c);
				e->charges++;
			}
			SPI_freetuptable(SPI_tuptable);
		}
		SPI_cursor_close(portal);
	}
}

/*
 * Install a loaded table of budgets at once (a reader never sees a partial
 * set), note whether the ledger holds anything, and with announce bump the
 * budget generation (not while the worker is not ready yet: becoming ready
 * bumps it).
 */
static void
DpWorkerInstall(HTAB *local, bool has_rows, bool announce)
{
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *e;

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
		hash_search(budgets, &e->role, HASH_REMOVE, NULL);
	hash_seq_init(&seq, local);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		DpBudgetEntry *s = hash_search(budgets, &e->role, HASH_ENTER_NULL, NULL);

		if (s == NULL)
		{
			LWLockRelease(ledger->lock);
			elog(FATAL, "too many dp_pg budgets (at most %d)", DP_MAX_BUDGETS);
		}
		*s = *e;
	}
	ledger->has_entries = has_rows || hash_get_num_entries(budgets) > 0;
	if (announce)
		DpLedgerBumpGeneration();
	LWLockRelease(ledger->lock);
}

/* A batch of requests in the hands of the worker. */
typedef struct DpWorkBatch
{
	HTAB	   *pending;		/* working copies of the budget entries it touches */
	bool		limits_changed; /* a set_budget or drop_budget of it was written */
} DpWorkBatch;

/* The limits of a working copy whose budget the batch dropped. */
#define DP_REMOVED_LIMIT (-1.0)

/* True if the batch dropped the budget of this working copy. */
static bool
DpEntryRemoved(const DpBudgetEntry *e)
{
	return e->limits.epsilon == DP_REMOVED_LIMIT && e->limits.delta == DP_REMOVED_LIMIT;
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
			e->budgeted = false;
			e->limits.epsilon = e->limits.delta = e->limits.rho = NAN;
			e->caps = e->limits;
			dp_cost_zero(&e->spent);
			e->charges = 0;
		}
		LWLockRelease(ledger->lock);
	}
	return e;
}

/* Give a request an error verdict (nothing of it is written). */
static void
DpWorkerFail(DpLedgerSlot *slot, int sqlerrcode, const char *message)
{
	slot->verdict = DP_VERDICT_ERROR;
	slot->sqlerrcode = sqlerrcode;
	strlcpy(slot->errmsg, message, sizeof(slot->errmsg));
}

/*
 * Check a request again before it touches the tables: the requester
 * validated it, but a slot the ledger cannot record must not reach an
 * INSERT.  False if it got an error verdict.
 */
static bool
DpWorkerCheck(DpLedgerSlot *slot)
{
	char		why[200];
	char		message[256];

	if (slot->kind == DP_REQ_READ)
	{
		if (slot->nroles < 0 || slot->nroles > DP_MAX_CHARGE_ROLES ||
			(slot->read_what != DP_READ_LEDGER && slot->read_what != DP_READ_REFUSALS))
		{
			DpWorkerFail(slot, ERRCODE_INTERNAL_ERROR, "malformed ledger request");
			return false;
		}
		return true;
	}
	if (ledger->held)
	{
		snprintf(message, sizeof(message),
				 "it was restored to an earlier point (timeline %u: %s) and is held until a superuser runs "
				 "dp_pg.accept_restored_ledger()", ledger->held_timeline, ledger->held_reason);
		DpWorkerFail(slot, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, message);
		return false;
	}
	if (slot->nroles < 1 || slot->nroles > DP_MAX_CHARGE_ROLES ||
		(slot->kind != DP_REQ_CHARGE && slot->nroles != 1) ||
		(slot->kind != DP_REQ_CHARGE && slot->kind != DP_REQ_SET_BUDGET &&
		 slot->kind != DP_REQ_REMOVE_BUDGET && slot->kind != DP_REQ_RESET &&
		 slot->kind != DP_REQ_SET_CAPS))
	{
		DpWorkerFail(slot, ERRCODE_INTERNAL_ERROR, "malformed ledger request");
		return false;
	}
	if (slot->kind == DP_REQ_CHARGE && !dp_cost_valid_charge(&slot->cost, why, sizeof(why)))
	{
		snprintf(message, sizeof(message), "the privacy cost is not a valid charge: %s", why);
		DpWorkerFail(slot, ERRCODE_INVALID_PARAMETER_VALUE, message);
		return false;
	}
	return true;
}

/*
 * Decide a request against the batch's working copies, without changing
 * them: its verdict is OK, or REFUSED with the numbers of the broken limit.
 * Every working copy it needs is made here, so applying it allocates nothing.
 */
static void
DpWorkerJudge(DpLedgerSlot *slot, HTAB *pending)
{
	DpBudgetEntry *local[DP_MAX_CHARGE_ROLES];

	for (int r = 0; r < slot->nroles; r++)
		local[r] = DpPendingEntry(pending, slot->roles[r]);
	slot->verdict = DP_VERDICT_OK;
	slot->nwarn = 0;
	/* a change of the limits keeps the caps, and the other way round */
	if (slot->kind == DP_REQ_SET_BUDGET)
		slot->caps = local[0]->budgeted ? local[0]->caps : slot->limits;
	if (slot->kind == DP_REQ_SET_CAPS)
		slot->limits = local[0]->budgeted ? local[0]->limits : slot->caps;
	if ((slot->kind == DP_REQ_SET_BUDGET || slot->kind == DP_REQ_SET_CAPS) && !local[0]->budgeted)
	{
		/* a new budget: what was not set is not limited */
		if (slot->kind == DP_REQ_SET_BUDGET)
			slot->caps.epsilon = slot->caps.delta = slot->caps.rho = NAN;
		else
			slot->limits.epsilon = slot->limits.delta = slot->limits.rho = NAN;
	}
	if (slot->kind != DP_REQ_CHARGE)
		return;
	for (int r = 0; r < slot->nroles; r++)
	{
		DpRefusal	why;
		DpCost		after;
		double		value;
		double		cap;

		if (!local[r]->budgeted)
			continue;			/* no budget, or dropped earlier in this batch: no limit */
		why = dp_admits_query(&slot->cost, &local[r]->caps, local[r]->limits.delta, &value, &cap);
		if (why != DP_ADMIT)
		{
			slot->verdict = DP_VERDICT_REFUSED;
			slot->refused_role = slot->roles[r];
			slot->refusal = why;
			slot->spent = 0.0;
			slot->limit = cap;
			slot->requested = value;
			return;
		}
		why = dp_admits(&local[r]->spent, &slot->cost, &local[r]->limits);
		if (why == DP_ADMIT)
			continue;
		after = local[r]->spent;
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
	/* admitted: the limits whose 90% this charge passes */
	for (int r = 0; r < slot->nroles && slot->nwarn < DP_MAX_WARNINGS; r++)
	{
		DpLimitWarning *w = &slot->warn[slot->nwarn];

		if (!local[r]->budgeted)
			continue;
		w->what = dp_passes_fraction(&local[r]->spent, &slot->cost, &local[r]->limits, 0.9,
									 &w->spent, &w->limit);
		if (w->what == DP_ADMIT)
			continue;
		w->role = slot->roles[r];
		slot->nwarn++;
	}
}

/* Write the rows of an admitted request (inside its subtransaction). */
static void
DpWorkerWrite(const DpLedgerSlot *slot)
{
	switch (slot->kind)
	{
		case DP_REQ_CHARGE:
			for (int r = 0; r < slot->nroles; r++)
				DpWorkerInsert(slot->roles[r], "charge", slot);
			break;
		case DP_REQ_SET_BUDGET:
		case DP_REQ_REMOVE_BUDGET:
			DpWorkerWriteLimits(slot->roles[0], &slot->limits, &slot->caps, slot->kind == DP_REQ_REMOVE_BUDGET);
			DpWorkerInsert(slot->roles[0], slot->kind == DP_REQ_REMOVE_BUDGET ? "remove" : "limit", slot);
			break;
		case DP_REQ_SET_CAPS:
			DpWorkerWriteLimits(slot->roles[0], &slot->limits, &slot->caps, false);
			DpWorkerInsert(slot->roles[0], "cap", slot);
			break;
		case DP_REQ_READ:
			break;
		case DP_REQ_RESET:
			DpWorkerInsert(slot->roles[0], "reset", slot);
			break;
	}
#ifdef DP_PG_TEST_SWITCHES
	/* fault injection: the rows are written, then the request fails */
	if (slot->debug_poison)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("dp_pg.debug_poison_charge: simulated failure of this request's ledger write")));
#endif
}

/* Apply a request whose rows are written to the batch's working copies. */
static void
DpWorkerApply(const DpLedgerSlot *slot, DpWorkBatch *wb)
{
	for (int r = 0; r < slot->nroles; r++)
	{
		DpBudgetEntry *e = hash_search(wb->pending, &slot->roles[r], HASH_FIND, NULL);

		if (e == NULL)
			elog(ERROR, "dp_pg ledger: no working copy for role %u", slot->roles[r]);
		switch (slot->kind)
		{
			case DP_REQ_CHARGE:
				dp_cost_add(&e->spent, &slot->cost);
				e->charges++;
				break;
			case DP_REQ_SET_BUDGET:
			case DP_REQ_SET_CAPS:
				e->limits = slot->limits;
				e->caps = slot->caps;
				e->budgeted = true;
				wb->limits_changed = true;
				break;
			case DP_REQ_REMOVE_BUDGET:
				e->limits.epsilon = e->limits.delta = e->limits.rho = DP_REMOVED_LIMIT;
				e->caps.epsilon = e->caps.delta = e->caps.rho = NAN;
				e->budgeted = false;
				wb->limits_changed = true;
				break;
			case DP_REQ_READ:
				break;
			case DP_REQ_RESET:
				dp_cost_zero(&e->spent);
				e->charges = 0;
				break;
		}
	}
}

/*
 * A read request: a page of rows into the requester's segment (see
 * "Reading the ledger tables from any database").  The columns are the
 * SQL-level result columns of dp_pg.ledger_rows() and dp_pg.refusal_rows().
 */
static void
DpWorkerRead(DpLedgerSlot *slot)
{
	static const char *ledger_sql =
		"SELECT id, role, kind, charged_at, requested_by, query, epsilon, delta, rho, rdp, detail "
		"FROM dp_pg.ledger_entries WHERE id > $1 AND ($2 OR role = ANY ($3)) ORDER BY id LIMIT $4";
	static const char *refusals_sql =
		"SELECT id, refused_at, role, as_role, %s, sqlstate, rule, query "
		"FROM dp_pg.guard_refusal_log WHERE id > $1 AND ($2 OR role = ANY ($3)) ORDER BY id LIMIT $4";
	const char *sql = ledger_sql;
	Oid			types[4] = {INT8OID, BOOLOID, OIDARRAYOID, INT4OID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	Datum		roles[DP_MAX_CHARGE_ROLES];
	dsm_segment *seg;
	DpReadReply *reply;
	uint64		n;

	for (int r = 0; r < slot->nroles; r++)
		roles[r] = ObjectIdGetDatum(slot->roles[r]);
	values[0] = Int64GetDatum(slot->read_after);
	values[1] = BoolGetDatum(slot->read_all);
	values[2] = PointerGetDatum(construct_array(roles, slot->nroles, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
	values[3] = Int32GetDatum(DP_READ_PAGE_ROWS);
	if (slot->read_what == DP_READ_REFUSALS)
	{
		/* the database as the reader's catalog has it, whatever the log's layout */
		bool		stored = DpRefusalLogHasNames();
		const char *database;

		if (stored == slot->read_names)
			database = "database";
		else if (slot->read_names)
			database = "(SELECT d.datname::pg_catalog.text FROM pg_catalog.pg_database d WHERE d.oid = database)";
		else
			database = "(SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = database)";
		sql = psprintf(refusals_sql, database);
	}
	if (SPI_execute_with_args(sql, 4, types, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dp_pg ledger");
	n = SPI_processed;

	seg = dsm_attach(slot->read_handle);
	if (seg == NULL)
		elog(ERROR, "the reader is gone");
	reply = dsm_segment_address(seg);
	reply->natts = SPI_tuptable->tupdesc->natts;
	reply->nrows = 0;
	reply->used = 0;
	reply->more = n == DP_READ_PAGE_ROWS;
	for (uint64 r = 0; r < n; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Size		mark = reply->used;
		bool		fits = true;
		bool		isnull;

		for (int c = 0; c < desc->natts && fits; c++)
		{
			Datum		d = SPI_getbinval(tup, desc, c + 1, &isnull);

			fits = DpReadPut(reply, DP_READ_BUFFER, TupleDescAttr(desc, c), d, isnull);
		}
		if (!fits)
		{
			reply->used = mark;
			if (reply->nrows == 0)
				elog(ERROR, "a ledger row is larger than the read buffer");
			reply->more = true;
			break;
		}
		reply->nrows++;
		reply->last_id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	}
	dsm_detach(seg);
}

/*
 * Handle one request of the batch in its own subtransaction (the pattern of
 * PL/pgSQL's exception blocks): check, decide, write.  If anything fails,
 * only this subtransaction is rolled back and only this request gets an
 * error verdict; the working copies change only after its writes succeeded.
 */
static void
DpWorkerRequest(DpLedgerSlot *slot, DpWorkBatch *wb, int nbatch)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool failed = false;

	if (!DpWorkerCheck(slot))
	{
		ereport(LOG,
				(errmsg("dp_pg ledger: refused a request of a batch of %d: %s", nbatch, slot->errmsg)));
		return;
	}
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		if (slot->kind == DP_REQ_READ)
		{
			DpWorkerRead(slot);
			slot->verdict = DP_VERDICT_OK;
		}
		else
		{
			DpWorkerJudge(slot, wb->pending);
			if (slot->verdict == DP_VERDICT_OK)
				DpWorkerWrite(slot);
		}
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		DpWorkerFail(slot, ERRCODE_INTERNAL_ERROR, edata->message ? edata->message : "unknown error");
		FreeErrorData(edata);
		failed = true;
	}
	PG_END_TRY();

	if (failed)
		ereport(LOG,
				(errmsg("dp_pg ledger: a request of a batch of %d failed and was rolled back: %s",
						nbatch, slot->errmsg),
				 errdetail("The other requests of the batch are not affected.")));
	else if (slot->verdict == DP_VERDICT_OK && slot->kind != DP_REQ_READ)
		DpWorkerApply(slot, wb);
}

/* Publish the batch's committed entries to shared memory. */
static void
DpWorkerPublish(DpWorkBatch *wb)
{
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *p;

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, wb->pending);
	while ((p = hash_seq_search(&seq)) != NULL)
	{
		bool		found;
		DpBudgetEntry *e;

		if (DpEntryRemoved(p))
		{
			hash_search(budgets, &p->role, HASH_REMOVE, NULL);
			continue;
		}
		if (!p->budgeted)
			continue;			/* reset of (or charge to) a role with no budget */
		e = hash_search(budgets, &p->role, HASH_ENTER_NULL, &found);
		if (e == NULL)
		{
			LWLockRelease(ledger->lock);
			elog(FATAL, "too many dp_pg budgets (at most %d)", DP_MAX_BUDGETS);
		}
		*e = *p;
	}
	if (wb->limits_changed)
		DpLedgerBumpGeneration();
	if (hash_get_num_entries(wb->pending) > 0)
		ledger->has_entries = true;
	LWLockRelease(ledger->lock);
}

/* True if some request is waiting for the worker. */
static bool
DpWorkerAnyPending(void)
{
	bool		any = false;

	LWLockAcquire(ledger->lock, LW_SHARED);
	for (int i = 0; i < DP_LEDGER_SLOTS && !any; i++)
		any = ledger->slots[i].state == DP_SLOT_PENDING;
	LWLockRelease(ledger->lock);
	return any;
}

/*
 * The worker's transactions: begin one, connected to SPI with a snapshot,
 * showing activity (NULL: none) in pg_stat_activity; commit it.
 */
static void
DpWorkerBegin(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (activity)
		pgstat_report_activity(STATE_RUNNING, activity);
}

/* Commit the transaction of DpWorkerBegin. */
static void
DpWorkerCommit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * In a PG_CATCH of the worker, for a transaction that failed as a whole:
 * the error copied into cxt (which becomes current), the error state
 * flushed, the transaction aborted.  The caller reports and frees it.
 */
static ErrorData *
DpWorkerAbort(MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	AbortCurrentTransaction();
	return edata;
}

/* Process every pending request in one transaction; returns true if any. */
static bool
DpWorkerBatch(void)
{
	int			batch[DP_LEDGER_SLOTS];
	int			nbatch = 0;
	DpWorkBatch wb;
	HASHCTL		info;
	MemoryContext batch_cxt;
	MemoryContext old;

	if (!DpWorkerAnyPending())
		return false;
	/* fault injection: let more requests arrive, so that they share a batch */
	DpDebugPause("worker_before_batch");
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
	wb.pending = hash_create("dp_pg ledger batch", 64, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	wb.limits_changed = false;

	PG_TRY();
	{
		DpWorkerBegin("dp_pg ledger: recording charges");
		for (int b = 0; b < nbatch; b++)
			DpWorkerRequest(&ledger->slots[batch[b]], &wb, nbatch);
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
		DpWorkerPublish(&wb);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* the batch's transaction failed as a whole: nothing of it is written */
		edata = DpWorkerAbort(batch_cxt);
		for (int b = 0; b < nbatch; b++)
			DpWorkerFail(&ledger->slots[batch[b]], ERRCODE_INTERNAL_ERROR,
						 edata->message ? edata->message : "unknown error");
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

/*
 * Take the queued refusals out of the ring into recs (at most
 * DP_REFUSAL_RING) and the count of those that did not fit into *missed;
 * returns how many.
 */
static int
DpTakeRefusals(DpRefusalRecord *recs, int64 *missed)
{
	int			n;

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	n = ledger->refusal_count;
	for (int i = 0; i < n; i++)
		recs[i] = ledger->refusals[(ledger->refusal_head + i) % DP_REFUSAL_RING];
	*missed = ledger->refusals_missed;
	ledger->refusal_head = (ledger->refusal_head + n) % DP_REFUSAL_RING;
	ledger->refusal_count = 0;
	ledger->refusals_missed = 0;
	LWLockRelease(ledger->lock);
	return n;
}

/*
 * Write the queued refusals to dp_pg.guard_refusal_log in one transaction,
 * with a row counting those that did not fit in the queue, and delete the
 * oldest rows beyond dp_pg.refusal_log_size.  A failure loses this batch of
 * refusals (logged), never a charge: charges are separate transactions.
 */
static void
DpWorkerDrainRefusals(void)
{
	DpRefusalRecord recs[DP_REFUSAL_RING];
	int			n;
	int64		missed;

	n = DpTakeRefusals(recs, &missed);
	if ((n == 0 && missed == 0) || dp_refusal_log_size == 0)
		return;

	PG_TRY();
	{
		static const char *sql =
			"INSERT INTO dp_pg.guard_refusal_log (refused_at, role, as_role, database, sqlstate, rule, query) "
			"VALUES ($1, $2, $3, $4, $5, $6, $7)";
		Oid			types[7] = {TIMESTAMPTZOID, OIDOID, OIDOID, OIDOID, TEXTOID, TEXTOID, TEXTOID};
		Datum		values[7];
		char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
		bool		names;

		DpWorkerBegin("dp_pg ledger: logging refusals");
		/* 0.2.0 keeps the database's name (a dump restores it as it was), 0.1.0 its OID */
		names = DpRefusalLogHasNames();
		if (names)
			types[3] = TEXTOID;
		for (int i = 0; i <= n; i++)
		{
			if (i == n)
			{
				char		rule[128];

				if (missed == 0)
					break;
				/* the refusals the full queue could only count */
				snprintf(rule, sizeof(rule), "%lld more refusals were not logged (the queue was full)",
						 (long long) missed);
				values[0] = TimestampTzGetDatum(GetCurrentTimestamp());
				nulls[1] = nulls[2] = nulls[3] = nulls[6] = 'n';
				values[4] = CStringGetTextDatum("");
				values[5] = CStringGetTextDatum(rule);
			}
			else
			{
				values[0] = TimestampTzGetDatum(recs[i].at);
				values[1] = ObjectIdGetDatum(recs[i].session_user);
				values[2] = ObjectIdGetDatum(recs[i].current_user);
				if (names)
				{
					char	   *datname = get_database_name(recs[i].database);

					nulls[3] = datname ? ' ' : 'n';
					values[3] = datname ? CStringGetTextDatum(datname) : (Datum) 0;
				}
				else
					values[3] = ObjectIdGetDatum(recs[i].database);
				values[4] = CStringGetTextDatum(unpack_sql_state(recs[i].sqlerrcode));
				values[5] = CStringGetTextDatum(recs[i].rule);
				values[6] = CStringGetTextDatum(recs[i].query);
			}
			if (SPI_execute_with_args(sql, 7, types, values, nulls, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not insert into dp_pg.guard_refusal_log");
		}
		{
			Oid			dtypes[1] = {INT8OID};
			Datum		dvalues[1] = {Int64GetDatum((int64) dp_refusal_log_size)};

			if (SPI_execute_with_args("DELETE FROM dp_pg.guard_refusal_log "
									  "WHERE id <= (SELECT max(id) FROM dp_pg.guard_refusal_log) - $1",
									  1, dtypes, dvalues, NULL, false, 0) != SPI_OK_DELETE)
				elog(ERROR, "could not trim dp_pg.guard_refusal_log");
		}
		DpWorkerCommit();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = DpWorkerAbort(TopMemoryContext);
		ereport(LOG,
				(errmsg("dp_pg ledger: %d refusals could not be logged: %s", n, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/* ------------------------------------------------------------------------
 * The ledger worker on a hot standby
 * ------------------------------------------------------------------------
 * A standby cannot write its ledger tables (they are the primary's,
 * replicated), so its worker forwards every charge to the primary
 * (standby.c: a libpq connection, by default through primary_conninfo),
 * where dp_pg.forward_charges() hands the batch to the primary's worker:
 * the charge is committed there, synchronously, before the verdict comes
 * back, so a standby releases nothing that the primary's ledger does not
 * hold, and every budget is one budget across all servers.  A slot is marked
 * forwarded before it is sent: if this worker stops before the verdict
 * arrives, its successor fails the slot instead of sending it again (the
 * primary may have recorded it; a retry could charge it twice).  If the
 * primary cannot be reached, or does not answer within the charge timeout,
 * the charges fail (nothing is released; a charge the primary recorded stays
 * charged, the safe direction).
 *
 * What the guard and the views need locally -- the budgeted roles, their
 * limits and totals -- is read from the replicated tables: at start, and
 * then every DP_STANDBY_REFRESH_MS the ledger rows written since (a change
 * of limits reloads everything and bumps the budget generation).  Reads of
 * the ledger tables are served here; changes of budgets are refused (they
 * are made on the primary).  Refusals noted here are forwarded to the
 * primary's log.  After a promotion the worker exits and is restarted as
 * the ledger's writer.
 */
#define DP_STANDBY_REFRESH_MS 500

/* Forward the charges of slots charges[0..n-1] and fill in their verdicts. */
static void
DpStandbyForward(const int *charges, int n)
{
	for (int c = 0; c < n; c += DP_FORWARD_MAX)
	{
		int			m = Min(DP_FORWARD_MAX, n - c);
		DpChargeRequest reqs[DP_FORWARD_MAX];
		DpChargeVerdict out[DP_FORWARD_MAX];
		int			code = ERRCODE_CONNECTION_FAILURE;
		char		err[256];
		bool		ok;

		for (int k = 0; k < m; k++)
		{
			DpLedgerSlot *slot = &ledger->slots[charges[c + k]];

			reqs[k].requested_by = slot->requested_by;
			reqs[k].nroles = slot->nroles;
			memcpy(reqs[k].roles, slot->roles, sizeof(Oid) * slot->nroles);
			reqs[k].cost = slot->cost;
			reqs[k].query = slot->query;
			reqs[k].detail = slot->detail;
		}
		DpDebugPause("standby_before_forward");
		pgstat_report_activity(STATE_RUNNING, "dp_pg ledger: forwarding charges to the primary");
		ok = forwarder->charges(m, reqs, out, &code, err, sizeof(err));
		pgstat_report_activity(STATE_IDLE, NULL);
		for (int k = 0; k < m; k++)
		{
			DpLedgerSlot *slot = &ledger->slots[charges[c + k]];

			if (ok)
				DpVerdictToSlot(&out[k], slot);
			else
				DpWorkerFail(slot, code, err);
		}
		if (!ok)
			ereport(LOG, (errmsg("dp_pg ledger: %d charges could not be forwarded to the primary: %s", m, err)));
	}
}

/* Serve the read requests of a batch (read-only transaction). */
static void
DpStandbyReads(const int *reads, int n)
{
	DpWorkBatch wb = {NULL, false};
	MemoryContext old = CurrentMemoryContext;

	PG_TRY();
	{
		DpWorkerBegin(NULL);
		for (int k = 0; k < n; k++)
			DpWorkerRequest(&ledger->slots[reads[k]], &wb, n);
		DpWorkerCommit();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = DpWorkerAbort(old);
		for (int k = 0; k < n; k++)
			DpWorkerFail(&ledger->slots[reads[k]], ERRCODE_INTERNAL_ERROR,
						 edata->message ? edata->message : "unknown error");
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
}

/* Handle every pending request (standby); returns true if any. */
static bool
DpStandbyBatch(void)
{
	int			charges[DP_LEDGER_SLOTS];
	int			reads[DP_LEDGER_SLOTS];
	int			batch[DP_LEDGER_SLOTS];
	int			ncharges = 0,
				nreads = 0,
				nbatch = 0;

	if (!DpWorkerAnyPending())
		return false;
	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	for (int i = 0; i < DP_LEDGER_SLOTS; i++)
	{
		DpLedgerSlot *slot = &ledger->slots[i];

		if (slot->state != DP_SLOT_PENDING)
			continue;
		slot->state = DP_SLOT_WORKING;
		batch[nbatch++] = i;
		if (slot->kind == DP_REQ_CHARGE)
		{
			slot->forwarded = true;
			charges[ncharges++] = i;
		}
		else if (slot->kind == DP_REQ_READ)
			reads[nreads++] = i;
		else
			DpWorkerFail(slot, ERRCODE_READ_ONLY_SQL_TRANSACTION,
						 "this server is a hot standby: budgets are changed on the primary");
	}
	LWLockRelease(ledger->lock);
	if (nbatch == 0)
		return false;

	for (int k = 0; k < ncharges; k++)
	{
		DpLedgerSlot *slot = &ledger->slots[charges[k]];

		slot->verdict = 0;
		slot->nwarn = 0;
	}
	if (ncharges > 0)
		DpStandbyForward(charges, ncharges);
	if (nreads > 0)
		DpStandbyReads(reads, nreads);
	DpDebugPause("standby_after_forward");

	/* hand out the verdicts */
	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	for (int b = 0; b < nbatch; b++)
	{
		DpLedgerSlot *slot = &ledger->slots[batch[b]];

		slot->state = slot->abandoned ? DP_SLOT_FREE : DP_SLOT_DONE;
	}
	LWLockRelease(ledger->lock);
	for (int b = 0; b < nbatch; b++)
		ConditionVariableBroadcast(&ledger->slots[batch[b]].cv);
	ConditionVariableBroadcast(&ledger->slot_freed);
	return true;
}

/*
 * Bring the standby's copy of the budgets up to the replicated tables:
 * apply the ledger rows after *upto; a change of limits reloads everything.
 * A failure (a recovery conflict, say) is logged and retried next time.
 */
static void
DpStandbyRefresh(int64 *upto)
{
	MemoryContext old = CurrentMemoryContext;

	PG_TRY();
	{
		Oid			types[1] = {INT8OID};
		Datum		values[1] = {Int64GetDatum(*upto)};
		bool		full = false;
		uint64		n;

		DpWorkerBegin(NULL);
		if (SPI_execute_with_args("SELECT id, role, kind, epsilon, delta, rho, rdp FROM dp_pg.ledger_entries "
								  "WHERE id > $1 ORDER BY id LIMIT 100000",
								  1, types, values, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read dp_pg.ledger_entries");
		n = SPI_processed;
		for (uint64 r = 0; r < n && !full; r++)
		{
			char	   *kind = SPI_getvalue(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 3);

			full = kind == NULL || (strcmp(kind, "charge") != 0 && strcmp(kind, "reset") != 0);
		}
		if (full)
		{
			HASHCTL		info;
			HTAB	   *local;
			int64		newupto = 0;

			info.keysize = sizeof(Oid);
			info.entrysize = sizeof(DpBudgetEntry);
			info.hcxt = CurrentMemoryContext;
			local = hash_create("dp_pg standby budgets", 64, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
			SPI_freetuptable(SPI_tuptable);
			DpWorkerLoad(local, &newupto);
			DpWorkerInstall(local, newupto > 0, true);
			*upto = newupto;
		}
		else if (n > 0)
		{
			LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
			for (uint64 r = 0; r < n; r++)
			{
				HeapTuple	tup = SPI_tuptable->vals[r];
				TupleDesc	desc = SPI_tuptable->tupdesc;
				bool		isnull;
				Oid			role = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
				char	   *kind = SPI_getvalue(tup, desc, 3);
				DpBudgetEntry *e = hash_search(budgets, &role, HASH_FIND, NULL);

				*upto = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
				if (e == NULL)
					continue;
				if (strcmp(kind, "reset") == 0)
				{
					dp_cost_zero(&e->spent);
					e->charges = 0;
				}
				else
				{
					DpCost		c;

					DpRowCost(tup, desc, 4, &c);
					dp_cost_add(&e->spent, &c);
					e->charges++;
				}
			}
			LWLockRelease(ledger->lock);
		}
		DpWorkerCommit();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = DpWorkerAbort(old);
		ereport(LOG, (errmsg("dp_pg ledger: could not refresh the replicated budgets: %s", edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
}

/* Forward the queued refusals to the primary's log (lost, and logged, if it cannot be reached). */
static void
DpStandbyForwardRefusals(void)
{
	DpRefusalRecord recs[DP_REFUSAL_RING];
	TimestampTz at[DP_REFUSAL_RING];
	Oid			su[DP_REFUSAL_RING],
				cu[DP_REFUSAL_RING],
				db[DP_REFUSAL_RING];
	int			code[DP_REFUSAL_RING];
	const char *rule[DP_REFUSAL_RING];
	const char *query[DP_REFUSAL_RING];
	char		err[256];
	int			n;
	int64		missed;

	n = DpTakeRefusals(recs, &missed);
	if (n == 0 && missed == 0)
		return;
	for (int i = 0; i < n; i++)
	{
		at[i] = recs[i].at;
		su[i] = recs[i].session_user;
		cu[i] = recs[i].current_user;
		db[i] = recs[i].database;
		code[i] = recs[i].sqlerrcode;
		rule[i] = recs[i].rule;
		query[i] = recs[i].query;
	}
	if (!forwarder->refusals(n, at, su, cu, db, code, rule, query, missed, err, sizeof(err)))
		ereport(LOG, (errmsg("dp_pg ledger: %d refusals could not be forwarded to the primary's log: %s",
							 n, err)));
}

/* Take a new configuration (SIGHUP) now: also between batches under load. */
static void
DpWorkerReloadConfig(void)
{
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

/* The standby worker's loop; exits (to be restarted as the writer) after a promotion. */
static void
DpStandbyLoop(int64 upto)
{
	TimestampTz last_refresh = GetCurrentTimestamp();

	for (;;)
	{
		bool		busy;

		if (!RecoveryInProgress())
		{
			ereport(LOG, (errmsg("dp_pg ledger: this server was promoted; the ledger worker restarts as the ledger's writer")));
			forwarder->disconnect();
			proc_exit(1);
		}
		do
		{
			busy = DpStandbyBatch();
			DpStandbyForwardRefusals();
			CHECK_FOR_INTERRUPTS();
			DpWorkerReloadConfig();
		} while (busy);
		if (TimestampDifferenceExceeds(last_refresh, GetCurrentTimestamp(), DP_STANDBY_REFRESH_MS))
		{
			DpStandbyRefresh(&upto);
			last_refresh = GetCurrentTimestamp();
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, DP_STANDBY_REFRESH_MS / 2,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}

/* ------------------------------------------------------------------------
 * Loading the ledger again, restores, dropped roles
 * ------------------------------------------------------------------------
 * The worker loads the tables when it starts, and again whenever a writer
 * other than itself changed them (a restore, COPY, an import: retention.c
 * asks at that writer's commit, DpLedgerRequestReload); until the load is
 * done, callers that need the budgets wait for it (DpLedgerAwaitReady) and
 * the guard counts every session as an analyst.  With the load it decides
 * whether a point-in-time recovery holds the ledger: the server's timeline
 * began with a recovery that stopped at a target (timeline.c,
 * DpTimelineRecoveryTarget), so charges recorded after that point may be
 * missing, and dp_pg.ledger_timelines does not list the timeline as
 * accepted.  A held ledger refuses every charge and budget change (reads go
 * on) until a superuser accepts it (dp_pg.accept_restored_ledger, after
 * dp_pg.import_ledger of the entries exported before the restore).
 */

/*
 * Whether a point-in-time recovery holds the ledger (see above); on a
 * primary only, and only with dp_pg.ledger_timelines (0.2.0).  Fills
 * *timeline and reason when it does.
 */
static bool
DpWorkerRestoreHeld(uint32 *timeline, char *reason, size_t len)
{
	TimeLineID	tli;
	Oid			types[1] = {INT4OID};
	Datum		values[1];
	bool		isnull;

	if (RecoveryInProgress())
		return false;
	tli = GetWALInsertionTimeLine();
	if (!DpTimelineRecoveryTarget(tli, reason, len))
		return false;
	if (SPI_execute("SELECT pg_catalog.to_regclass('dp_pg.ledger_timelines') IS NOT NULL", true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not look for dp_pg.ledger_timelines");
	if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
		return false;
	values[0] = Int32GetDatum((int32) tli);
	if (SPI_execute_with_args("SELECT 1 FROM dp_pg.ledger_timelines WHERE timeline = $1",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read dp_pg.ledger_timelines");
	*timeline = tli;
	return SPI_processed == 0;
}

/*
 * Load the ledger tables into a local table and install it at once, with the
 * restore decision; the load counts as done for every write committed before
 * it began.  *upto: the last ledger row replayed.  At the start (initial) an
 * error ends the worker (it is restarted); later it is logged, the published
 * state stays, the callers waiting for the load time out (fail closed), and
 * it is tried again at the next wake-up.
 */
static void
DpWorkerReload(bool initial, int64 *upto)
{
	uint64		want = pg_atomic_read_u64(&ledger->reload_requested);
	MemoryContext old = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "dp_pg ledger load", ALLOCSET_DEFAULT_SIZES);

	PG_TRY();
	{
		HASHCTL		info;
		HTAB	   *local;
		uint32		timeline = 0;
		char		reason[128];
		bool		held;
		bool		was_held;

		*upto = 0;
		info.keysize = sizeof(Oid);
		info.entrysize = sizeof(DpBudgetEntry);
		info.hcxt = cxt;
		local = hash_create("dp_pg budgets being loaded", 64, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		DpWorkerBegin("dp_pg ledger: loading the ledger tables");
		DpWorkerLoad(local, upto);
		held = DpWorkerRestoreHeld(&timeline, reason, sizeof(reason));
		DpWorkerCommit();
		MemoryContextSwitchTo(old);

		LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
		was_held = ledger->held;
		ledger->held = held;
		ledger->held_timeline = timeline;
		strlcpy(ledger->held_reason, held ? reason : "", sizeof(ledger->held_reason));
		LWLockRelease(ledger->lock);
		DpWorkerInstall(local, *upto > 0, !initial);
		pg_atomic_write_u64(&ledger->reload_done, want);
		ConditionVariableBroadcast(&ledger->reloaded);
		if (held)
			ereport(WARNING,
					(errmsg("dp_pg ledger: this server's timeline %u began with a point-in-time recovery (%s); "
							"charges recorded after that point are not in the ledger", timeline, reason),
					 errdetail("Every charge and budget change is refused until a superuser accepts the restored ledger."),
					 errhint("Import the ledger entries exported before the restore (dp_pg.import_ledger), then run "
							 "SELECT dp_pg.accept_restored_ledger() in database \"%s\"; see docs/dba.md.",
							 dp_ledger_database)));
		else if (was_held)
			ereport(LOG, (errmsg("dp_pg ledger: the restored ledger was accepted; charges are recorded again")));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		if (initial)
			PG_RE_THROW();
		edata = DpWorkerAbort(old);
		ereport(LOG, (errmsg("dp_pg ledger: could not load the ledger tables again: %s", edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* Load the tables again if a writer other than the worker asked (see above). */
static void
DpWorkerReloadIfAsked(void)
{
	int64		upto;

	if (pg_atomic_read_u64(&ledger->reload_requested) != pg_atomic_read_u64(&ledger->reload_done))
		DpWorkerReload(false, &upto);
}

/* Keep the name of a role that is dropped in its ledger rows (see ledger.h). */
bool
DpLedgerKeepRoleName(Oid role, const char *name)
{
	static const char *const by_oid[] = {
		"UPDATE dp_pg.ledger_entries SET role = NULL, detail = coalesce(detail, '{}') || "
		"pg_catalog.jsonb_build_object('dropped_role', $2::pg_catalog.text, 'dropped_role_oid', $1::pg_catalog.int8) "
		"WHERE role = $1",
		"UPDATE dp_pg.ledger_entries SET requested_by = NULL, detail = coalesce(detail, '{}') || "
		"pg_catalog.jsonb_build_object('dropped_requested_by', $2::pg_catalog.text, 'dropped_requested_by_oid', $1::pg_catalog.int8) "
		"WHERE requested_by = $1",
	};
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		values[2];

	if (!DpLedgerHasNames())
		return false;
	values[0] = ObjectIdGetDatum(role);
	values[1] = CStringGetTextDatum(name);
	for (int q = 0; q < lengthof(by_oid); q++)
		if (SPI_execute_with_args(by_oid[q], 2, types, values, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not keep the name of a dropped role in the ledger");
	/* its refused queries leave the log (a recent, bounded record) with it */
	if (SPI_execute_with_args("DELETE FROM dp_pg.guard_refusal_log WHERE role = $1 OR as_role = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not remove a dropped role's refused queries");
	return true;
}

/*
 * The ledger rows of roles dropped since (their DROP ROLE committed in
 * another database: see DpLedgerNoteDroppedRoles) keep the role's name
 * instead of its OID (DpLedgerKeepRoleName), so that a dump restored into
 * another cluster never puts them on a role that got the same OID there.
 * After an overflow of the queue, and once at the start (a crash may have
 * lost the queue), every row whose role no longer exists is converted
 * (detail keeps only its old OID).  Only on the 0.2.0 layout.
 */
static void
DpWorkerForgetDroppedRoles(void)
{
	Oid			oids[DP_DROPPED_RING];
	NameData	names[DP_DROPPED_RING];
	int			n;
	bool		sweep;
	MemoryContext old = CurrentMemoryContext;

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	n = ledger->ndropped;
	sweep = ledger->dropped_overflow;
	memcpy(oids, ledger->dropped_oid, sizeof(Oid) * n);
	memcpy(names, ledger->dropped_name, sizeof(NameData) * n);
	ledger->ndropped = 0;
	ledger->dropped_overflow = false;
	LWLockRelease(ledger->lock);
	if (n == 0 && !sweep)
		return;

	PG_TRY();
	{
		static const char *const sweeps[] = {
			"UPDATE dp_pg.ledger_entries e SET role = NULL, detail = coalesce(detail, '{}') || "
			"pg_catalog.jsonb_build_object('dropped_role_oid', e.role::pg_catalog.oid::pg_catalog.int8) "
			"WHERE e.role IS NOT NULL AND NOT EXISTS (SELECT FROM pg_catalog.pg_authid a WHERE a.oid = e.role)",
			"UPDATE dp_pg.ledger_entries e SET requested_by = NULL, detail = coalesce(detail, '{}') || "
			"pg_catalog.jsonb_build_object('dropped_requested_by_oid', e.requested_by::pg_catalog.oid::pg_catalog.int8) "
			"WHERE e.requested_by IS NOT NULL AND NOT EXISTS (SELECT FROM pg_catalog.pg_authid a WHERE a.oid = e.requested_by)",
			"DELETE FROM dp_pg.guard_refusal_log e "
			"WHERE (e.role IS NOT NULL AND NOT EXISTS (SELECT FROM pg_catalog.pg_authid a WHERE a.oid = e.role)) "
			"   OR (e.as_role IS NOT NULL AND NOT EXISTS (SELECT FROM pg_catalog.pg_authid a WHERE a.oid = e.as_role))",
		};

		DpWorkerBegin("dp_pg ledger: keeping the names of dropped roles");
		if (DpLedgerHasNames())
		{
			/* (a DROP ROLE rolled back in a subtransaction left the role as it was) */
			for (int i = 0; i < n; i++)
				if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(oids[i])))
					(void) DpLedgerKeepRoleName(oids[i], NameStr(names[i]));
			if (sweep)
				for (int q = 0; q < lengthof(sweeps); q++)
					if (SPI_execute(sweeps[q], false, 0) < 0)
						elog(ERROR, "could not convert the ledger rows of dropped roles");
		}
		DpWorkerCommit();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = DpWorkerAbort(old);
		ereport(LOG, (errmsg("dp_pg ledger: could not keep the names of dropped roles: %s", edata->message),
					  errdetail("Their rows are converted when the worker starts again.")));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
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
	if (ledger->ready)
		DpLedgerBumpGeneration();
	ledger->ready = false;
	ledger->worker_latch = NULL;
	ledger->worker_pid = 0;
	/* requests in flight get no verdict; their requesters time out */
	LWLockRelease(ledger->lock);
}

/* Worker entry point. */
void
DpLedgerWorkerMain(Datum arg)
{
	bool		standby;
	int64		upto = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	am_ledger_worker = true;
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
	if (ledger->ready)
		DpLedgerBumpGeneration();
	ledger->ready = false;
	/*
	 * Slots a previous worker had taken got no verdict from it: retry them,
	 * except charges a standby's worker had forwarded to the primary, which
	 * may be recorded there (a retry could charge them twice): they fail.
	 */
	for (int i = 0; i < DP_LEDGER_SLOTS; i++)
	{
		DpLedgerSlot *slot = &ledger->slots[i];

		if (slot->state != DP_SLOT_WORKING)
			continue;
		if (!slot->forwarded)
		{
			slot->state = DP_SLOT_PENDING;
			continue;
		}
		DpWorkerFail(slot, ERRCODE_CONNECTION_FAILURE,
					 "the ledger worker stopped while the charge was forwarded to the primary, which may have recorded it");
		slot->state = slot->abandoned ? DP_SLOT_FREE : DP_SLOT_DONE;
		ConditionVariableBroadcast(&slot->cv);
	}
	LWLockRelease(ledger->lock);
	ConditionVariableBroadcast(&ledger->slot_freed);

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

	/* a hot standby's worker forwards charges; after a promotion it restarts */
	standby = RecoveryInProgress();
	DpWorkerReload(true, &upto);

	LWLockAcquire(ledger->lock, LW_EXCLUSIVE);
	ledger->ready = true;
	/* a crash may have lost dropped roles from the queue: look for them all once */
	ledger->dropped_overflow = !standby;
	DpLedgerBumpGeneration();
	LWLockRelease(ledger->lock);
	if (standby)
		ereport(LOG, (errmsg("dp_pg ledger ready in database \"%s\" on a hot standby: charges are forwarded to the primary",
							 dp_ledger_database)));
	else
		ereport(LOG, (errmsg("dp_pg ledger ready in database \"%s\"", dp_ledger_database)));

	if (standby)
		DpStandbyLoop(upto);
	for (;;)
	{
		bool		busy;

		do
		{
			DpWorkerReloadIfAsked();
			DpWorkerForgetDroppedRoles();
			busy = DpWorkerBatch();
			DpWorkerDrainRefusals();
			CHECK_FOR_INTERRUPTS();
			DpWorkerReloadConfig();
		} while (busy);
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
