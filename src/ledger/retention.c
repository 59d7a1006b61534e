/*
 * retention.c — the ledger over a database's life: kept, never silently lost.
 *
 * The ledger (dp_pg.budget_limits and dp_pg.ledger_entries in
 * dp_pg.ledger_database) is the privacy record of the cluster: what every
 * role may still spend follows from it.  This file keeps it
 *
 *  - from DROP.  DROP EXTENSION dp_pg, DROP SCHEMA ... CASCADE of the schema
 *    dp_pg is installed in, DROP OWNED BY the extension's owner (all in the
 *    ledger database) and DROP DATABASE of the ledger database are refused
 *    while the ledger holds a budget or a row, with what to keep first; a
 *    superuser who really means it sets dp_pg.allow_ledger_drop in that
 *    session.  (Without the library loaded there is no ledger worker either.)
 *
 *  - live across restores.  A write into the ledger tables by anyone but the
 *    ledger worker (pg_restore, psql < dump, COPY, INSERT, TRUNCATE, an
 *    import) fires dp_pg.ledger_changed, a statement trigger on each table
 *    (enabled ALWAYS: also under session_replication_role = replica), and
 *    the ALTER TABLE ... ENABLE TRIGGER that ends a --disable-triggers
 *    restore is noticed here: at that transaction's commit the worker is
 *    asked to load the tables again (requests.c, DpLedgerRequestReload), and
 *    whoever needs the budgets afterwards waits for that load.  Restored
 *    budgets are live at once, without a restart.
 *
 *  - by name when a role is dropped.  In the ledger database the role's
 *    ledger rows keep its name in the DROP ROLE's own transaction
 *    (reload.c, DpLedgerKeepRoleName); elsewhere the roles a DROP ROLE drops
 *    are noted (OID and name) and handed to the worker when the drop
 *    commits, and it converts their rows (DpWorkerForgetDroppedRoles).
 *
 *  - across a point-in-time recovery.  DpTimelineRecoveryTarget reads how
 *    the server's timeline began, from its history file: a recovery that
 *    stopped at a target (a time, a transaction, an LSN, a restore point, or
 *    the end of the base backup) may have cut charges that were recorded,
 *    and answers that were released, off the ledger.  A PITR cannot roll
 *    that fact back.  reload.c holds such a ledger until a superuser accepts
 *    it (dp_pg.ledger_timelines).
 *
 * A transaction that wrote the ledger tables or dropped a role cannot be
 * prepared for two-phase commit (its commit would happen in another session,
 * out of our sight).  Nothing here acts in binary-upgrade mode: pg_upgrade
 * restores schemas, drops and recreates databases, and copies the ledger's
 * data whole.
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above.
 */
#include "postgres.h"

#include <errno.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogrecovery.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/fd.h"
#include "guc.h"
#include "utils/acl.h"
#include "catalog/pg_authid.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "ledger.h"
#include "timeline.h"

PG_FUNCTION_INFO_V1(dp_ledger_changed);
PG_FUNCTION_INFO_V1(dp_timeline);

static bool allow_ledger_drop = false;

/* What this transaction must tell the ledger worker when it commits. */
static bool reload_at_commit = false;
static int	ndropped = 0;
static int	maxdropped = 0;
static Oid *dropped_oids = NULL;	/* in TopTransactionContext */
static NameData *dropped_names = NULL;

/* The ledger tables, in schema dp_pg of the ledger database. */
static const char *const ledger_tables[] = {"budget_limits", "ledger_entries", "ledger_timelines", "table_budget_limits"};

/* True if this backend is connected to dp_pg.ledger_database. */
static bool
DpInLedgerDatabase(void)
{
	static int	cached = -1;

	if (cached < 0)
	{
		char	   *name;

		if (!OidIsValid(MyDatabaseId) || dp_ledger_database == NULL || !IsTransactionState())
			return false;
		name = get_database_name(MyDatabaseId);
		cached = name != NULL && strcmp(name, dp_ledger_database) == 0;
	}
	return cached == 1;
}

/* Forget what this transaction noted (at its end). */
static void
DpRetentionReset(void)
{
	reload_at_commit = false;
	ndropped = 0;
	maxdropped = 0;
	dropped_oids = NULL;
	dropped_names = NULL;
}

/* Transaction callback: tell the worker at commit; nothing otherwise. */
static void
DpRetentionXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (reload_at_commit || ndropped > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that changed the dp_pg ledger tables or dropped a role"),
						 errdetail("The ledger worker must learn of the change when it commits.")));
			break;
		case XACT_EVENT_COMMIT:
			if (reload_at_commit)
				DpLedgerRequestReload();
			if (ndropped > 0)
				DpLedgerNoteDroppedRoles(ndropped, dropped_oids, dropped_names);
			DpRetentionReset();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			DpRetentionReset();
			break;
		default:
			break;
	}
}

/*
 * dp_pg.ledger_changed(): statement trigger on the ledger tables.  A write by
 * anyone but the ledger worker, in the ledger database, makes the worker load
 * the tables again when the transaction commits.
 */
Datum
dp_ledger_changed(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("dp_pg.ledger_changed() must be called as a trigger")));
	if (!IsBinaryUpgrade && !DpLedgerIsWorker() && DpInLedgerDatabase())
		reload_at_commit = true;
	return PointerGetDatum(NULL);
}

/* True if relid is one of the ledger tables (schema dp_pg). */
static bool
DpIsLedgerTable(Oid relid)
{
	Oid			nsp = get_namespace_oid("dp_pg", true);

	if (!OidIsValid(relid) || !OidIsValid(nsp) || get_rel_namespace(relid) != nsp)
		return false;
	for (int i = 0; i < lengthof(ledger_tables); i++)
		if (get_relname_relid(ledger_tables[i], nsp) == relid)
			return true;
	return false;
}

/* Note a role this transaction drops (it reaches the worker if the drop commits). */
static void
DpNoteDroppedRole(Oid role, const char *name)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	if (ndropped >= maxdropped)
	{
		maxdropped = Max(8, maxdropped * 2);
		dropped_oids = dropped_oids ? repalloc(dropped_oids, sizeof(Oid) * maxdropped)
			: palloc(sizeof(Oid) * maxdropped);
		dropped_names = dropped_names ? repalloc(dropped_names, sizeof(NameData) * maxdropped)
			: palloc(sizeof(NameData) * maxdropped);
	}
	dropped_oids[ndropped] = role;
	namestrcpy(&dropped_names[ndropped], name);
	ndropped++;
	MemoryContextSwitchTo(old);
}

/*
 * In the ledger database, keep the name of a role being dropped in its
 * ledger rows now, in the DROP ROLE's own transaction (it commits or rolls
 * back with the drop), in DpAsSuperuserBegin's session (guc.h): true if done.
 */
static bool
DpKeepRoleNameHere(Oid role, const char *name)
{
	Oid			save_user;
	int			save_sec;
	int			nestlevel;
	bool		done;

	if (!DpInLedgerDatabase() || !OidIsValid(get_extension_oid("dp_pg", true)))
		return false;
	nestlevel = DpAsSuperuserBegin(0, &save_user, &save_sec);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "dp_pg: SPI_connect failed");
	done = DpLedgerKeepRoleName(role, name);
	SPI_finish();
	DpAsSuperuserEnd(nestlevel, save_user, save_sec);
	return done;
}

/* ERROR: what stmt would do drops the non-empty ledger; what holds it and how to keep it. */
static void
DpRefuseLedgerDrop(const char *what, const char *holds)
{
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("%s would delete the dp_pg privacy ledger", what),
			 errdetail("Database \"%s\" holds the ledger of this cluster (%s): the record of every privacy charge. "
					   "A new ledger would start every role's spending from zero.",
					   dp_ledger_database, holds),
			 superuser()
			 ? errhint("Keep it first (pg_dump --data-only --table='dp_pg.*' \"%s\", or \\copy each of "
					   "dp_pg.budget_limits and dp_pg.ledger_entries to a file); then, to drop it anyway, a superuser "
					   "runs SET dp_pg.allow_ledger_drop = on in the same session.  See docs/dba.md.",
					   dp_ledger_database)
			 : errhint("Only a superuser can drop the ledger, after keeping it (docs/dba.md).")));
}

/*
 * In the ledger database: if the ledger tables hold anything, refuse what
 * (see DpRefuseLedgerDrop).  Counted in DpAsSuperuserBegin's session (guc.h),
 * whoever asks: a role that may not read the tables gets this refusal (or
 * PostgreSQL's own, later), not an error about reading them.
 */
static void
DpCheckLedgerTables(const char *what)
{
	int64		budgets;
	int64		rows;
	bool		isnull;
	Oid			save_user;
	int			save_sec;
	int			nestlevel;

	if (allow_ledger_drop || !DpInLedgerDatabase() || !OidIsValid(get_extension_oid("dp_pg", true)))
		return;
	nestlevel = DpAsSuperuserBegin(0, &save_user, &save_sec);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "dp_pg: SPI_connect failed");
	if (SPI_execute("SELECT (SELECT count(*) FROM dp_pg.budget_limits), (SELECT count(*) FROM dp_pg.ledger_entries)",
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "dp_pg: could not read the ledger tables");
	budgets = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	SPI_finish();
	DpAsSuperuserEnd(nestlevel, save_user, save_sec);
	if (budgets > 0 || rows > 0)
		DpRefuseLedgerDrop(what, psprintf(INT64_FORMAT " budgets, " INT64_FORMAT " ledger rows", budgets, rows));
}

/* The schema dp_pg is installed in and its owner; false if it is not installed here. */
static bool
DpExtensionInfo(Oid *schema, Oid *owner)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ, CStringGetDatum("dp_pg"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	found = HeapTupleIsValid(tup);
	if (found)
	{
		*schema = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
		*owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* True if a DROP SCHEMA of schema names drops dp_pg (its own schema, or the one it is installed in). */
static bool
DpDropsExtensionSchema(List *names)
{
	Oid			extschema;
	Oid			owner;
	ListCell   *lc;

	if (!DpExtensionInfo(&extschema, &owner))
		return false;
	foreach(lc, names)
	{
		Oid			nsp = get_namespace_oid(strVal(lfirst(lc)), true);

		if (OidIsValid(nsp) && (nsp == extschema || strcmp(strVal(lfirst(lc)), "dp_pg") == 0))
			return true;
	}
	return false;
}

/* ProcessUtility: see ledger.h. */
void
DpRetentionCheckUtility(PlannedStmt *pstmt)
{
	Node	   *stmt = pstmt->utilityStmt;

	if (IsBinaryUpgrade)
		return;
	if (IsA(stmt, DropStmt))
	{
		DropStmt   *drop = (DropStmt *) stmt;
		ListCell   *lc;

		if (drop->removeType == OBJECT_EXTENSION)
		{
			foreach(lc, drop->objects)
				if (strcmp(strVal(lfirst(lc)), "dp_pg") == 0)
					DpCheckLedgerTables("DROP EXTENSION dp_pg");
		}
		else if (drop->removeType == OBJECT_SCHEMA && drop->behavior == DROP_CASCADE)
		{
			foreach(lc, drop->objects)
				if (DpDropsExtensionSchema(list_make1(lfirst(lc))))
					DpCheckLedgerTables(psprintf("DROP SCHEMA %s CASCADE", strVal(lfirst(lc))));
		}
	}
	else if (IsA(stmt, DropOwnedStmt))
	{
		Oid			extschema;
		Oid			owner;
		ListCell   *lc;

		if (DpExtensionInfo(&extschema, &owner))
			foreach(lc, ((DropOwnedStmt *) stmt)->roles)
				if (get_rolespec_oid(lfirst(lc), true) == owner)
					DpCheckLedgerTables(psprintf("DROP OWNED BY %s", get_rolespec_name(lfirst(lc))));
	}
	else if (IsA(stmt, DropdbStmt))
	{
		DropdbStmt *drop = (DropdbStmt *) stmt;
		bool		known;
		bool		holds;

		if (allow_ledger_drop || dp_ledger_database == NULL || strcmp(drop->dbname, dp_ledger_database) != 0 ||
			!OidIsValid(get_database_oid(drop->dbname, true)))
			return;
		holds = DpLedgerHoldsEntries(&known);
		if (holds || !known)
			DpRefuseLedgerDrop(psprintf("DROP DATABASE %s", drop->dbname),
							   known ? "budgets or ledger rows" : "the ledger worker cannot tell what it holds now");
	}
	else if (IsA(stmt, AlterTableStmt))
	{
		/* ENABLE TRIGGER ALL ends a --disable-triggers restore of the table's data */
		Oid			relid = RangeVarGetRelid(((AlterTableStmt *) stmt)->relation, NoLock, true);

		if (DpInLedgerDatabase() && DpIsLedgerTable(relid))
			reload_at_commit = true;
	}
	else if (IsA(stmt, AlterExtensionStmt))
	{
		/* an update changes the ledger tables' layout (0.2.0: table budgets, windows): load them again */
		if (strcmp(((AlterExtensionStmt *) stmt)->extname, "dp_pg") == 0 && DpInLedgerDatabase())
			reload_at_commit = true;
	}
	else if (IsA(stmt, DropRoleStmt))
	{
		ListCell   *lc;

		foreach(lc, ((DropRoleStmt *) stmt)->roles)
		{
			Oid			role = get_rolespec_oid(lfirst(lc), true);

			if (OidIsValid(role) && !DpKeepRoleNameHere(role, get_rolespec_name(lfirst(lc))))
				DpNoteDroppedRole(role, get_rolespec_name(lfirst(lc)));
		}
	}
}

/*
 * dp_pg.timeline(): the server's timeline, and the target its recovery
 * stopped at when a point-in-time recovery began it (else NULL).
 */
Datum
dp_timeline(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	TimeLineID	tli;
	char		reason[256];

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (RecoveryInProgress())
		(void) GetXLogReplayRecPtr(&tli);
	else
		tli = GetWALInsertionTimeLine();
	values[0] = Int32GetDatum((int32) tli);
	if (DpTimelineRecoveryTarget(tli, reason, sizeof(reason)))
		values[1] = CStringGetTextDatum(reason);
	else
		nulls[1] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/* GUC and the transaction callback (from _PG_init, preloaded only). */
void
DpRetentionInit(void)
{
	DefineCustomBoolVariable("dp_pg.allow_ledger_drop",
							 "Let DROP EXTENSION dp_pg, DROP SCHEMA ... CASCADE, DROP OWNED and DROP DATABASE delete a non-empty ledger.",
							 "Off: they are refused while the ledger holds a budget or a row.  Set it only in the session that drops a ledger you have kept.",
							 &allow_ledger_drop,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	RegisterXactCallback(DpRetentionXactCallback, NULL);
}
