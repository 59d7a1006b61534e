/*
 * reload.c — the ledger over time, in the worker: loading the tables again
 * after a writer other than the worker changed them, holding the ledger
 * after a point-in-time recovery (timeline.c), and keeping the names of
 * dropped roles in their ledger rows.
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above; within ledger/ it calls shared.c, worker.c and
 * timeline.c.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "funcapi.h"
#include "shared.h"
#include "timeline.h"

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
void
DpWorkerReload(bool initial, int64 *upto)
{
	uint64		want = pg_atomic_read_u64(&dp_ledger->reload_requested);
	MemoryContext old = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "dp_pg ledger load", ALLOCSET_DEFAULT_SIZES);

	PG_TRY();
	{
		HTAB	   *local;
		HTAB	   *tables;
		uint32		timeline = 0;
		char		reason[128];
		bool		held;
		bool		was_held;

		*upto = 0;
		MemoryContextSwitchTo(cxt);
		local = DpBudgetTable("dp_pg budgets being loaded");
		tables = DpTableBudgetTable("dp_pg table budgets being loaded");
		MemoryContextSwitchTo(old);
		DpWorkerBegin("dp_pg ledger: loading the ledger tables");
		DpWorkerLoad(local, tables, upto);
		held = DpWorkerRestoreHeld(&timeline, reason, sizeof(reason));
		DpWorkerCommit();
		MemoryContextSwitchTo(old);

		LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
		was_held = dp_ledger->held;
		dp_ledger->held = held;
		dp_ledger->held_timeline = timeline;
		strlcpy(dp_ledger->held_reason, held ? reason : "", sizeof(dp_ledger->held_reason));
		LWLockRelease(dp_ledger->lock);
		DpWorkerInstall(local, tables, *upto > 0, !initial);
		pg_atomic_write_u64(&dp_ledger->reload_done, want);
		ConditionVariableBroadcast(&dp_ledger->reloaded);
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
void
DpWorkerReloadIfAsked(void)
{
	int64		upto;

	if (pg_atomic_read_u64(&dp_ledger->reload_requested) != pg_atomic_read_u64(&dp_ledger->reload_done))
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
void
DpWorkerForgetDroppedRoles(void)
{
	Oid			oids[DP_DROPPED_RING];
	NameData	names[DP_DROPPED_RING];
	int			n;
	bool		sweep;
	MemoryContext old = CurrentMemoryContext;

	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	n = dp_ledger->ndropped;
	sweep = dp_ledger->dropped_overflow;
	memcpy(oids, dp_ledger->dropped_oid, sizeof(Oid) * n);
	memcpy(names, dp_ledger->dropped_name, sizeof(NameData) * n);
	dp_ledger->ndropped = 0;
	dp_ledger->dropped_overflow = false;
	LWLockRelease(dp_ledger->lock);
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

