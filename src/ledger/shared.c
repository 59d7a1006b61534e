/*
 * shared.c — the ledger's shared state: shared memory and its lock, the
 * GUCs and the background worker's registration, the readiness flags and
 * the budget generation, the budgeted roles, and the request slots through
 * which backends hand requests to the worker (the protocol is in shared.h).
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above; within ledger/ it calls nothing (every other ledger
 * file calls it).
 */
#include "postgres.h"

#include "executor/spi.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "shared.h"

char	   *dp_ledger_database = NULL;
int			dp_charge_timeout_ms = 10000;
int			dp_refusal_log_size = 10000;
static char *dp_debug_pause = NULL;
static int	dp_debug_pause_ms = 0;
#ifdef DP_PG_TEST_SWITCHES
bool		dp_debug_poison_charge = false;
#endif

DpLedgerShared *dp_ledger = NULL;
HTAB	   *dp_budgets = NULL;
HTAB	   *dp_table_budgets = NULL;
bool		dp_am_ledger_worker = false;	/* this process is the ledger worker */

/* A hot standby's link to its primary (standby.c registers it at load). */
const DpLedgerForwarder *dp_forwarder = NULL;

/* Register the standby's forwarder (standby.c, at load). */
void
DpLedgerSetForwarder(const DpLedgerForwarder *fwd)
{
	dp_forwarder = fwd;
}

/* Shared memory size. */
static Size
DpLedgerShmemSize(void)
{
	return add_size(add_size(MAXALIGN(sizeof(DpLedgerShared)),
							 hash_estimate_size(DP_MAX_BUDGETS, sizeof(DpBudgetEntry))),
					hash_estimate_size(DP_MAX_TABLE_BUDGETS, sizeof(DpTableBudgetEntry)));
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
	dp_ledger = ShmemInitStruct("dp_pg ledger", sizeof(DpLedgerShared), &found);
	if (!found)
	{
		memset(dp_ledger, 0, sizeof(DpLedgerShared));
		dp_ledger->lock = &(GetNamedLWLockTranche("dp_pg_ledger"))->lock;
		ConditionVariableInit(&dp_ledger->slot_freed);
		ConditionVariableInit(&dp_ledger->reloaded);
		pg_atomic_init_u64(&dp_ledger->budget_generation, 0);
		pg_atomic_init_u64(&dp_ledger->reload_requested, 0);
		pg_atomic_init_u64(&dp_ledger->reload_done, 0);
		for (int i = 0; i < DP_LEDGER_SLOTS; i++)
			ConditionVariableInit(&dp_ledger->slots[i].cv);
	}
	info.keysize = sizeof(Oid);
	info.entrysize = sizeof(DpBudgetEntry);
	dp_budgets = ShmemInitHash("dp_pg budgets", DP_MAX_BUDGETS, DP_MAX_BUDGETS,
							&info, HASH_ELEM | HASH_BLOBS);
	info.keysize = sizeof(pg_uuid_t);
	info.entrysize = sizeof(DpTableBudgetEntry);
	dp_table_budgets = ShmemInitHash("dp_pg table budgets", DP_MAX_TABLE_BUDGETS, DP_MAX_TABLE_BUDGETS,
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

/* A consistent copy of the worker's state flags (all false without shared memory). */
DpLedgerFlags
DpLedgerReadFlags(void)
{
	DpLedgerFlags f = {false, false, false};

	if (dp_ledger == NULL)
		return f;
	LWLockAcquire(dp_ledger->lock, LW_SHARED);
	f.ready = dp_ledger->ready;
	f.held = dp_ledger->held;
	f.has_entries = dp_ledger->has_entries;
	LWLockRelease(dp_ledger->lock);
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
	return pg_atomic_read_u64(&dp_ledger->reload_done) >= want;
}

/* The budget generation (see ledger.h); read without the lock, never waits. */
uint64
DpLedgerBudgetGeneration(void)
{
	if (dp_ledger == NULL)
		return 0;
	return pg_atomic_read_u64(&dp_ledger->budget_generation);
}

/*
 * Bump the budget generation (worker, holding the lock exclusively, right
 * after the change it announces is visible in shared memory).
 */
void
DpLedgerBumpGeneration(void)
{
	Assert(LWLockHeldByMeInMode(dp_ledger->lock, LW_EXCLUSIVE));
	pg_atomic_fetch_add_u64(&dp_ledger->budget_generation, 1);
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
void
DpLedgerAwaitReady(void)
{
	TimestampTz start = GetCurrentTimestamp();
	uint64		want;

	if (dp_ledger == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("dp_pg must be loaded via shared_preload_libraries"),
				 errhint("Add dp_pg to shared_preload_libraries in postgresql.conf and restart the server.")));
	want = pg_atomic_read_u64(&dp_ledger->reload_requested);
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

	LWLockAcquire(dp_ledger->lock, LW_SHARED);
	if (require_ready && (!dp_ledger->ready || !DpLedgerReloaded(pg_atomic_read_u64(&dp_ledger->reload_requested))))
	{
		LWLockRelease(dp_ledger->lock);
		*out = NULL;
		return -1;
	}
	*out = palloc(sizeof(Oid) * Max(hash_get_num_entries(dp_budgets), 1));
	hash_seq_init(&seq, dp_budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
		(*out)[n++] = e->role;
	LWLockRelease(dp_ledger->lock);
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
	if (dp_ledger == NULL)
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
int
DpLedgerTakeSlot(void)
{
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		long		remain;

		LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
		if (!dp_ledger->ready)
		{
			LWLockRelease(dp_ledger->lock);
			DpLedgerNotReady();
		}
		for (int i = 0; i < DP_LEDGER_SLOTS; i++)
		{
			DpLedgerSlot *slot = &dp_ledger->slots[i];

			if (slot->state == DP_SLOT_FREE)
			{
				slot->state = DP_SLOT_FILLING;
				slot->abandoned = false;
				slot->verdict = 0;
				LWLockRelease(dp_ledger->lock);
				return i;
			}
		}
		LWLockRelease(dp_ledger->lock);
		remain = dp_charge_timeout_ms -
			(long) ((GetCurrentTimestamp() - start) / 1000);
		if (remain <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("timed out waiting for the dp_pg ledger"),
					 errdetail("All %d request slots stayed busy for dp_pg.charge_timeout.", DP_LEDGER_SLOTS)));
		ConditionVariableTimedSleep(&dp_ledger->slot_freed, Min(remain, 100), PG_WAIT_EXTENSION);
		ConditionVariableCancelSleep();
	}
}

/*
 * Submit the requests in slots idx[0..n-1] and wait for their verdicts.  The
 * slots must have been filled (their state is FILLING).  On return they are
 * FREE again and out[k] holds a copy of slot idx[k].  On an error (timeout,
 * cancel) every slot without its verdict is abandoned to the worker.
 */
void
DpLedgerSubmitMany(int n, const int *idx, DpLedgerSlot *out)
{
	TimestampTz start = GetCurrentTimestamp();
	volatile int ndone = 0;

	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	for (int k = 0; k < n; k++)
		dp_ledger->slots[idx[k]].state = DP_SLOT_PENDING;
	if (dp_ledger->worker_latch)
		SetLatch(dp_ledger->worker_latch);
	LWLockRelease(dp_ledger->lock);

	PG_TRY();
	{
		/* the verdicts of one batch come together: wait for them in order */
		while (ndone < n)
		{
			DpLedgerSlot *slot = &dp_ledger->slots[idx[ndone]];

			ConditionVariablePrepareToSleep(&slot->cv);
			for (;;)
			{
				long		remain;

				LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
				if (slot->state == DP_SLOT_DONE)
				{
					memcpy(&out[ndone], slot, offsetof(DpLedgerSlot, cv));
					slot->state = DP_SLOT_FREE;
					ndone++;
					LWLockRelease(dp_ledger->lock);
					break;
				}
				LWLockRelease(dp_ledger->lock);
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
			LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
			for (int k = ndone; k < n; k++)
			{
				DpLedgerSlot *slot = &dp_ledger->slots[idx[k]];

				if (slot->state == DP_SLOT_DONE)
					slot->state = DP_SLOT_FREE;
				else
					slot->abandoned = true;
			}
			LWLockRelease(dp_ledger->lock);
		}
		ConditionVariableBroadcast(&dp_ledger->slot_freed);
	}
	PG_END_TRY();
}

/* DpLedgerSubmitMany of one slot. */
void
DpLedgerSubmit(int i, DpLedgerSlot *out)
{
	DpLedgerSubmitMany(1, &i, out);
}

/* A slot's verdict as a DpChargeVerdict. */
void
DpSlotToVerdict(const DpLedgerSlot *slot, DpChargeVerdict *v)
{
	memset(v, 0, sizeof(*v));
	v->verdict = slot->verdict;
	v->refused_role = slot->refused_role;
	v->refused_table = slot->refused_table;
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
		v->warn_table[w] = slot->warn[w].table;
		v->warn_what[w] = slot->warn[w].what;
		v->warn_spent[w] = slot->warn[w].spent;
		v->warn_limit[w] = slot->warn[w].limit;
	}
}

/* A forwarded verdict into the slot it answers (standby worker). */
void
DpVerdictToSlot(const DpChargeVerdict *v, DpLedgerSlot *slot)
{
	slot->verdict = v->verdict;
	slot->refused_role = v->refused_role;
	slot->refused_table = v->refused_table;
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
		slot->warn[w].table = v->warn_table[w];
		slot->warn[w].what = v->warn_what[w];
		slot->warn[w].spent = v->warn_spent[w];
		slot->warn[w].limit = v->warn_limit[w];
	}
}
