/*
 * worker_main.c — the ledger worker's entry point: its start (slots a
 * previous worker left, waiting for CREATE EXTENSION, the first load) and
 * its loop, as the primary's writer or as a hot standby's forwarder.
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above; within ledger/ it calls shared.c, worker.c, reload.c and
 * worker_standby.c.
 */
#include "postgres.h"

#include "commands/extension.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"

#include "shared.h"

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
	if (dp_ledger == NULL)
		return;
	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	if (dp_ledger->ready)
		DpLedgerBumpGeneration();
	dp_ledger->ready = false;
	dp_ledger->worker_latch = NULL;
	dp_ledger->worker_pid = 0;
	/* requests in flight get no verdict; their requesters time out */
	LWLockRelease(dp_ledger->lock);
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

	dp_am_ledger_worker = true;
	BackgroundWorkerInitializeConnection(dp_ledger_database, NULL, 0);
	/* every ledger commit waits for its WAL flush, whatever the defaults say */
	SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);
	/* nothing a user created in the ledger database may resolve in our SQL */
	SetConfigOption("search_path", "pg_catalog", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", "dp_pg ledger", PGC_USERSET, PGC_S_SESSION);

	before_shmem_exit(DpWorkerExit, (Datum) 0);
	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	dp_ledger->worker_pid = MyProcPid;
	dp_ledger->worker_latch = MyLatch;
	if (dp_ledger->ready)
		DpLedgerBumpGeneration();
	dp_ledger->ready = false;
	/*
	 * Slots a previous worker had taken got no verdict from it: retry them,
	 * except charges a standby's worker had forwarded to the primary, which
	 * may be recorded there (a retry could charge them twice): they fail.
	 */
	for (int i = 0; i < DP_LEDGER_SLOTS; i++)
	{
		DpLedgerSlot *slot = &dp_ledger->slots[i];

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
	LWLockRelease(dp_ledger->lock);
	ConditionVariableBroadcast(&dp_ledger->slot_freed);

	/* wait for CREATE EXTENSION dp_pg in the ledger database */
	while (!DpWorkerExtensionExists())
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		DpWorkerReloadConfig();
	}

	/* a hot standby's worker forwards charges; after a promotion it restarts */
	standby = RecoveryInProgress();
	DpWorkerReload(true, &upto);

	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	dp_ledger->ready = true;
	/* a crash may have lost dropped roles from the queue: look for them all once */
	dp_ledger->dropped_overflow = !standby;
	DpLedgerBumpGeneration();
	LWLockRelease(dp_ledger->lock);
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
			DpWorkerRollWindows();
			CHECK_FOR_INTERRUPTS();
			DpWorkerReloadConfig();
		} while (busy);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		DpWorkerReloadConfig();
	}
}

