/*
 * changes.c — the data changes the answer cache's key counts: dp_pg's
 * statement trigger on protected tables and on the protection settings
 * (dp_pg.data_changed), which notes each writing transaction in
 * dp_pg.data_changes (see cache.c's head comment, "Data changes"), the
 * count of committed writes a snapshot sees, and the trigger's presence as
 * protect() made it.
 *
 * Layer release/ (docs/development.md): calls common/ only (guc.c, to run
 * its statements as the superuser); the answer cache (cache.c) calls it.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "catalog/namespace.h"
#include "catalog/pg_trigger.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "guc.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "release.h"

PG_FUNCTION_INFO_V1(dp_data_changed);

#define DP_CACHE_TRIGGER "dp_pg_data_changed"

/* Tables whose change this transaction has noted (reset at its end and at a subtransaction abort). */
static Oid	noted[32];
static int	nnoted = 0;

static void
DpChangesXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		nnoted = 0;
	}
}

static void
DpChangesSubXactCallback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	/* a rolled-back subtransaction may have held the only note of a table */
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		nnoted = 0;
	}
}

/* OID of dp_pg.data_changes in this database, or InvalidOid. */
Oid
DpDataChangesRelid(void)
{
	Oid			nsp = get_namespace_oid("dp_pg", true);

	return OidIsValid(nsp) ? get_relname_relid("data_changes", nsp) : InvalidOid;
}

/* Insert (relid, 1) into dp_pg.data_changes in this transaction; now and then fold its rows. */
void
DpNoteChange(Oid relid)
{
	Oid			save_userid;
	int			save_sec;
	char		sql[512];
	int			ret;
	int			nestlevel;

	for (int i = 0; i < nnoted; i++)
		if (noted[i] == relid)
			return;
	/*
	 * As the superuser on behalf of whoever wrote the table: the writer's
	 * search_path must not choose the functions or operators of the
	 * statements below (sum, count, =, ANY).
	 */
	nestlevel = DpAsSuperuserBegin(SECURITY_RESTRICTED_OPERATION, &save_userid, &save_sec);
	PG_TRY();
	{
		if ((ret = SPI_connect()) != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed: %d", ret);
		snprintf(sql, sizeof(sql), "INSERT INTO dp_pg.data_changes (relid, writes) VALUES (%u, 1)", relid);
		if ((ret = SPI_execute(sql, false, 0)) != SPI_OK_INSERT)
			elog(ERROR, "could not note a change of relation %u: %d", relid, ret);
		/*
		 * Fold (about one write in 64, READ COMMITTED only, never waiting):
		 * the rows this transaction can lock become one row with their sum,
		 * in one statement, so every snapshot sees the same total.
		 */
		if (XactIsoLevel == XACT_READ_COMMITTED && (pg_prng_uint32(&pg_global_prng_state) & 63) == 0)
		{
			snprintf(sql, sizeof(sql),
					 "WITH d AS (DELETE FROM dp_pg.data_changes WHERE ctid = ANY (ARRAY("
					 "SELECT ctid FROM dp_pg.data_changes WHERE relid = %u FOR UPDATE SKIP LOCKED)) RETURNING writes) "
					 "INSERT INTO dp_pg.data_changes (relid, writes) SELECT %u, sum(writes) FROM d HAVING count(*) > 0",
					 relid, relid);
			if ((ret = SPI_execute(sql, false, 0)) != SPI_OK_INSERT)
				elog(ERROR, "could not fold the changes of relation %u: %d", relid, ret);
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		DpAsSuperuserEnd(nestlevel, save_userid, save_sec);
	}
	PG_END_TRY();
	/* (beyond the array a table is noted again: only slower) */
	if (nnoted < lengthof(noted))
		noted[nnoted++] = relid;
}

/*
 * dp_pg.data_changed(): statement trigger on protected tables (INSERT,
 * UPDATE, DELETE, TRUNCATE) and on dp_pg's protection settings (argument
 * 'settings': counted under relid 0).
 */
Datum
dp_data_changed(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	Oid			relid;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("dp_pg.data_changed() is a trigger function")));
	if (td->tg_trigger->tgnargs > 0 && strcmp(td->tg_trigger->tgargs[0], "settings") == 0)
		relid = InvalidOid;
	else
		relid = RelationGetRelid(td->tg_relation);
	DpNoteChange(relid);
	return PointerGetDatum(NULL);
}

/* The committed writes on relid (and on the settings, relid 0) visible to snapshot. */
int64
DpChangeCount(Relation changes, Oid relid, Snapshot snapshot)
{
	TableScanDesc scan;
	HeapTuple	tup;
	int64		n = 0;

	scan = table_beginscan(changes, snapshot, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		Datum		r = heap_getattr(tup, 1, RelationGetDescr(changes), &isnull);
		Datum		w;

		if (isnull || DatumGetObjectId(r) != relid)
			continue;
		w = heap_getattr(tup, 2, RelationGetDescr(changes), &isnull);
		if (!isnull)
			n += DatumGetInt64(w);
	}
	table_endscan(scan);
	return n;
}

/*
 * dp_pg's change trigger on rel, exactly as protect() makes it: statement
 * level, INSERT, UPDATE, DELETE and TRUNCATE, enabled ALWAYS, no WHEN, no
 * column list, no argument.  Returns its OID, or InvalidOid.
 */
Oid
DpChangeTrigger(Relation rel)
{
	TriggerDesc *td = rel->trigdesc;
	Oid			nsp = get_namespace_oid("dp_pg", true);

	if (td == NULL || !OidIsValid(nsp))
		return InvalidOid;
	for (int i = 0; i < td->numtriggers; i++)
	{
		Trigger    *t = &td->triggers[i];
		char	   *fname;

		if (strcmp(t->tgname, DP_CACHE_TRIGGER) != 0 || t->tgenabled != TRIGGER_FIRES_ALWAYS ||
			TRIGGER_FOR_ROW(t->tgtype) || !TRIGGER_FOR_AFTER(t->tgtype) ||
			!TRIGGER_FOR_INSERT(t->tgtype) || !TRIGGER_FOR_UPDATE(t->tgtype) ||
			!TRIGGER_FOR_DELETE(t->tgtype) || !TRIGGER_FOR_TRUNCATE(t->tgtype) ||
			t->tgqual != NULL || t->tgnattr != 0 || t->tgnargs != 0)
			continue;
		fname = get_func_name(t->tgfoid);
		if (fname == NULL || strcmp(fname, "data_changed") != 0 || get_func_namespace(t->tgfoid) != nsp)
			continue;
		return t->tgoid;
	}
	return InvalidOid;
}

/*
 * The xmin of the row of catalog catid whose attribute attno (the first
 * column of index indexid) is key, or InvalidTransactionId if there is none.
 */
TransactionId
DpCatalogRowXmin(Oid catid, Oid indexid, AttrNumber attno, Oid key)
{
	Relation	rel = table_open(catid, AccessShareLock);
	ScanKeyData skey;
	SysScanDesc scan;
	HeapTuple	tup;
	TransactionId xmin = InvalidTransactionId;

	ScanKeyInit(&skey, attno, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(key));
	scan = systable_beginscan(rel, indexid, true, NULL, 1, &skey);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
		xmin = HeapTupleHeaderGetRawXmin(tup->t_data);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return xmin;
}

/*
 * The xmin of trigger trigoid's pg_trigger row: it changes whenever the
 * trigger is disabled, enabled or replaced, so writes made while it did
 * not fire can never leave an answer servable.
 */
TransactionId
DpTriggerXmin(Oid trigoid)
{
	return DpCatalogRowXmin(TriggerRelationId, TriggerOidIndexId, Anum_pg_trigger_oid, trigoid);
}

/* See release.h. */
void
DpChangesInit(void)
{
	RegisterXactCallback(DpChangesXactCallback, NULL);
	RegisterSubXactCallback(DpChangesSubXactCallback, NULL);
}
