/*
 * worker_standby.c — the ledger worker on a hot standby: it forwards every
 * charge and refusal to the primary through the forwarder the standby
 * registered (standby.c, DpLedgerSetForwarder), serves reads, and follows
 * the replicated tables.
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above; within ledger/ it calls shared.c and worker.c.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "shared.h"

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
			DpLedgerSlot *slot = &dp_ledger->slots[charges[c + k]];

			reqs[k].requested_by = slot->requested_by;
			reqs[k].nroles = slot->nroles;
			memcpy(reqs[k].roles, slot->roles, sizeof(Oid) * slot->nroles);
			reqs[k].ntables = slot->ntables;
			memcpy(reqs[k].tables, slot->tables, sizeof(pg_uuid_t) * slot->ntables);
			reqs[k].cost = slot->cost;
			reqs[k].query = slot->query;
			reqs[k].detail = slot->detail;
		}
		DpDebugPause("standby_before_forward");
		pgstat_report_activity(STATE_RUNNING, "dp_pg ledger: forwarding charges to the primary");
		ok = dp_forwarder->charges(m, reqs, out, &code, err, sizeof(err));
		pgstat_report_activity(STATE_IDLE, NULL);
		for (int k = 0; k < m; k++)
		{
			DpLedgerSlot *slot = &dp_ledger->slots[charges[c + k]];

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
	DpWorkBatch wb = {NULL, NULL, false, 0};
	MemoryContext old = CurrentMemoryContext;

	PG_TRY();
	{
		DpWorkerBegin(NULL);
		for (int k = 0; k < n; k++)
			DpWorkerRequest(&dp_ledger->slots[reads[k]], &wb, n);
		DpWorkerCommit();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = DpWorkerAbort(old);
		for (int k = 0; k < n; k++)
			DpWorkerFail(&dp_ledger->slots[reads[k]], ERRCODE_INTERNAL_ERROR,
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
	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	for (int i = 0; i < DP_LEDGER_SLOTS; i++)
	{
		DpLedgerSlot *slot = &dp_ledger->slots[i];

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
	LWLockRelease(dp_ledger->lock);
	if (nbatch == 0)
		return false;

	for (int k = 0; k < ncharges; k++)
	{
		DpLedgerSlot *slot = &dp_ledger->slots[charges[k]];

		slot->verdict = 0;
		slot->nwarn = 0;
	}
	if (ncharges > 0)
		DpStandbyForward(charges, ncharges);
	if (nreads > 0)
		DpStandbyReads(reads, nreads);
	DpDebugPause("standby_after_forward");

	/* hand out the verdicts */
	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	for (int b = 0; b < nbatch; b++)
	{
		DpLedgerSlot *slot = &dp_ledger->slots[batch[b]];

		slot->state = slot->abandoned ? DP_SLOT_FREE : DP_SLOT_DONE;
	}
	LWLockRelease(dp_ledger->lock);
	for (int b = 0; b < nbatch; b++)
		ConditionVariableBroadcast(&dp_ledger->slots[batch[b]].cv);
	ConditionVariableBroadcast(&dp_ledger->slot_freed);
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
		if (SPI_execute_with_args(DpWorkerLayoutV2() ?
								  "SELECT id, role, kind, epsilon, delta, rho, rdp, charged_at, table_budget, rdp_delta "
								  "FROM dp_pg.ledger_entries WHERE id > $1 ORDER BY id LIMIT 100000" :
								  "SELECT id, role, kind, epsilon, delta, rho, rdp, charged_at, NULL::pg_catalog.uuid, "
								  "NULL::pg_catalog.float8 FROM dp_pg.ledger_entries WHERE id > $1 ORDER BY id LIMIT 100000",
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
			HTAB	   *local;
			HTAB	   *tables;
			int64		newupto = 0;

			SPI_freetuptable(SPI_tuptable);
			local = DpBudgetTable("dp_pg standby budgets");
			tables = DpTableBudgetTable("dp_pg standby table budgets");
			DpWorkerLoad(local, tables, &newupto);
			DpWorkerInstall(local, tables, newupto > 0, true);
			*upto = newupto;
		}
		else if (n > 0)
		{
			LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
			for (uint64 r = 0; r < n; r++)
			{
				HeapTuple	tup = SPI_tuptable->vals[r];
				TupleDesc	desc = SPI_tuptable->tupdesc;
				bool		isnull;
				bool		tnull;
				Oid			role = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
				char	   *kind = SPI_getvalue(tup, desc, 3);
				TimestampTz at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 8, &isnull));
				Datum		table = SPI_getbinval(tup, desc, 9, &tnull);
				DpCost		c;

				*upto = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
				DpRowCost(tup, desc, 4, 10, &c);
				DpApplyLedgerRow(dp_budgets, dp_table_budgets, role, tnull ? NULL : DatumGetUUIDP(table),
								 strcmp(kind, "reset") == 0, at, &c);
			}
			LWLockRelease(dp_ledger->lock);
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
	if (!dp_forwarder->refusals(n, at, su, cu, db, code, rule, query, missed, err, sizeof(err)))
		ereport(LOG, (errmsg("dp_pg ledger: %d refusals could not be forwarded to the primary's log: %s",
							 n, err)));
}

/* The standby worker's loop; exits (to be restarted as the writer) after a promotion. */
void
DpStandbyLoop(int64 upto)
{
	TimestampTz last_refresh = GetCurrentTimestamp();

	for (;;)
	{
		bool		busy;

		if (!RecoveryInProgress())
		{
			ereport(LOG, (errmsg("dp_pg ledger: this server was promoted; the ledger worker restarts as the ledger's writer")));
			dp_forwarder->disconnect();
			proc_exit(1);
		}
		do
		{
			busy = DpStandbyBatch();
			DpStandbyForwardRefusals();
			DpWorkerRollWindows();
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
		DpWorkerReloadConfig();
	}
}

