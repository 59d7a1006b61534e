/*
 * randomized.c — locally private columns: their declarations
 * (dp_pg.randomized_columns) and the row trigger that randomizes them.
 *
 * Protocol
 * --------
 * dp_pg.randomize(table, column, 'rr(epsilon=E)') (sql/dp_pg--0.2.0.sql)
 * declares a column locally private: a boolean (binary randomized response)
 * or a column of int2/int4/int8/text/varchar/an enum with k declared keys
 * (k-ary randomized response).  It puts the trigger DP_RANDOMIZE_TRIGGER,
 * dp_pg.randomize_row(), on the table, BEFORE INSERT OR UPDATE FOR EACH ROW,
 * ENABLE ALWAYS, then rewrites every existing row through it once.
 *
 * From then on every row that reaches the table — INSERT, UPDATE, COPY,
 * MERGE, INSERT ... ON CONFLICT, logical replication's apply (ALWAYS fires
 * under session_replication_role = replica too) — passes through
 * dp_pg.randomize_row() before any other trigger, CHECK constraint, unique
 * index, generated column, foreign key or the WAL sees it: PostgreSQL runs
 * BEFORE ROW triggers first, in the order of their names, and
 * DP_RANDOMIZE_TRIGGER sorts before any name that is not quoted to sort
 * lower; the trigger replaces the true value by its randomized report
 * (core/rr.c, OpenSSL's CSPRNG through the backend's generator), so the
 * tuple stored, logged and replicated holds the report only.  NULL stays
 * NULL (whether a value is given is not protected); an UPDATE draws again
 * only for the columns it assigns (tg_updatedcols), so an UPDATE of other
 * columns leaves a stored report as it is, and never re-randomizes a
 * report.  A value that is not one of the keys is an ERROR whose message
 * names the table and column, never the value.
 *
 * What keeps another trigger from seeing the truth (fail closed):
 *   - dp_pg.randomize() refuses a table with rules, inheritance or
 *     partitions, and a BEFORE ROW INSERT/UPDATE trigger whose name sorts
 *     before DP_RANDOMIZE_TRIGGER;
 *   - the extension's event trigger dp_pg_keep_randomized refuses, at the
 *     end of any DDL, a state that breaks this (a rule, a trigger sorting
 *     first, a rename or retype of the column, the trigger dropped,
 *     disabled or made ORIGIN/REPLICA-only: it is made ALWAYS again), and
 *     forgets declarations of dropped tables and columns;
 *   - and this trigger checks, before it reads a value, that it is the
 *     first BEFORE ROW trigger of its event, that the table has no rule and
 *     is not a partition, and that each declared column still has its type
 *     — else ERROR, before any value is read.  (A trigger that fired before
 *     it already ran; its transactional effects roll back with the error.)
 *
 * The declarations are read once per statement (cached in fn_extra, in the
 * query's memory), by a direct scan of the catalog table: no privilege of
 * the writer is needed, and none is given.  A table with the trigger but no
 * declaration (its last locally private column dropped) stores values as
 * they are written: nothing is declared locally private there.
 *
 * Layer common/ (docs/development.md): may call the numeric core (core/)
 * and the rest of common/, nothing above.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "agg_common.h"
#include "randomized.h"

PG_FUNCTION_INFO_V1(dp_randomize_row);
PG_FUNCTION_INFO_V1(dp_randomize_epsilon);

/* Columns of dp_pg.randomized_columns (sql/dp_pg--0.2.0.sql). */
#define RC_RELID		1
#define RC_ATTNAME		2
#define RC_EPSILON		3
#define RC_KEYS			4
#define RC_TYPE			5

/* The OID of dp_pg.randomized_columns in this database, or InvalidOid. */
static Oid
DpRandomizedColumnsRelid(void)
{
	Oid			nsp = get_namespace_oid("dp_pg", true);

	return OidIsValid(nsp) ? get_relname_relid("randomized_columns", nsp) : InvalidOid;
}

/* True for the types randomized response is declared for (randomize() checks the same). */
static bool
DpRandomizableType(Oid typid)
{
	return typid == BOOLOID || typid == INT2OID || typid == INT4OID || typid == INT8OID ||
		typid == TEXTOID || typid == VARCHAROID || type_is_enum(typid);
}

/*
 * Fill col from a catalog row (relid and attname already set): its epsilon,
 * type and keys read with the type's input function.  The keys were
 * canonicalised by dp_pg.randomize(); a key the type no longer reads (an
 * enum label renamed) is an ERROR, before any value is read.
 */
static void
DpRandomizedColumnFill(DpRandomizedColumn *col, HeapTuple tup, TupleDesc desc)
{
	bool		isnull;
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	Oid			infn;
	Oid			ioparam;
	char		typalign;

	col->epsilon = DatumGetFloat8(heap_getattr(tup, RC_EPSILON, desc, &isnull));
	col->typid = DatumGetObjectId(heap_getattr(tup, RC_TYPE, desc, &isnull));
	arr = DatumGetArrayTypeP(heap_getattr(tup, RC_KEYS, desc, &isnull));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n < 2 || n > DP_RR_MAX_KEYS || !DpRandomizableType(col->typid))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the declaration of locally private column \"%s\" of \"%s\" is corrupt",
						NameStr(col->attname), get_rel_name(col->relid))));
	get_typlenbyvalalign(col->typid, &col->typlen, &col->typbyval, &typalign);
	getTypeInputInfo(col->typid, &infn, &ioparam);
	col->nkeys = n;
	col->labels = palloc(n * sizeof(char *));
	col->keys = palloc(n * sizeof(Datum));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the declaration of locally private column \"%s\" of \"%s\" is corrupt",
							NameStr(col->attname), get_rel_name(col->relid))));
		col->labels[i] = TextDatumGetCString(elems[i]);
		col->keys[i] = OidInputFunctionCall(infn, col->labels[i], ioparam, -1);
	}
}

/* The index of value among col's keys, or -1 (see randomized.h). */
int
DpRandomizedKeyIndex(const DpRandomizedColumn *col, Datum value)
{
	switch (col->typid)
	{
		case BOOLOID:
			for (int i = 0; i < col->nkeys; i++)
				if (DatumGetBool(col->keys[i]) == DatumGetBool(value))
					return i;
			return -1;
		case INT2OID:
			for (int i = 0; i < col->nkeys; i++)
				if (DatumGetInt16(col->keys[i]) == DatumGetInt16(value))
					return i;
			return -1;
		case INT4OID:
			for (int i = 0; i < col->nkeys; i++)
				if (DatumGetInt32(col->keys[i]) == DatumGetInt32(value))
					return i;
			return -1;
		case INT8OID:
			for (int i = 0; i < col->nkeys; i++)
				if (DatumGetInt64(col->keys[i]) == DatumGetInt64(value))
					return i;
			return -1;
		case TEXTOID:
		case VARCHAROID:
			{
				/* a deterministic collation (randomize() checks): equal means the same bytes */
				struct varlena *v = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value));
				Size		len = VARSIZE_ANY_EXHDR(v);

				for (int i = 0; i < col->nkeys; i++)
				{
					struct varlena *k = (struct varlena *) DatumGetPointer(col->keys[i]);

					if (VARSIZE_ANY_EXHDR(k) == len && memcmp(VARDATA_ANY(k), VARDATA_ANY(v), len) == 0)
						return i;
				}
				return -1;
			}
		default:
			/* an enum: values are the labels' OIDs */
			for (int i = 0; i < col->nkeys; i++)
				if (DatumGetObjectId(col->keys[i]) == DatumGetObjectId(value))
					return i;
			return -1;
	}
}

/* The declaration of column attno of relid (see randomized.h). */
bool
DpRandomizedColumnOf(Oid relid, AttrNumber attno, DpRandomizedColumn *col)
{
	Oid			catid = DpRandomizedColumnsRelid();
	char	   *attname;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	if (!OidIsValid(catid) || attno <= 0)
		return false;
	attname = get_attname(relid, attno, true);
	if (attname == NULL)
		return false;
	rel = table_open(catid, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (!found && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		bool		isnull;

		if (DatumGetObjectId(heap_getattr(tup, RC_RELID, desc, &isnull)) != relid ||
			strcmp(NameStr(*DatumGetName(heap_getattr(tup, RC_ATTNAME, desc, &isnull))), attname) != 0)
			continue;
		memset(col, 0, sizeof(*col));
		col->relid = relid;
		namestrcpy(&col->attname, attname);
		col->attno = attno;
		{
			Oid			typid;
			int32		typmod;

			get_atttypetypmodcoll(relid, attno, &typid, &typmod, &col->collation);
		}
		DpRandomizedColumnFill(col, tup, desc);
		found = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* What the row trigger knows about its table for one statement. */
typedef struct DpRandomizeState
{
	Oid			relid;
	int			ncols;
	DpRandomizedColumn *cols;
	DpRR	   *rr;
	int		   *attnos;
	Datum	   *values;			/* scratch for heap_modify_tuple_by_cols */
	bool	   *isnull;
} DpRandomizeState;

/*
 * ERROR unless trigger is the first BEFORE ROW trigger of the event that
 * fired it, the table has no rule and is not a partition (see the file
 * comment).  Triggers are kept in name order, the order they fire in.
 */
static void
DpRandomizeCheckOrder(Relation rel, const Trigger *self)
{
	TriggerDesc *td = rel->trigdesc;

	if (self->tgqual != NULL || self->tgnattr != 0 || self->tgnargs != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the trigger of the locally private columns of \"%s\" is not the one dp_pg.randomize() made",
						RelationGetRelationName(rel))));
	if (rel->rd_rules != NULL || rel->rd_rel->relispartition || rel->rd_rel->relhassubclass)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("locally private columns of \"%s\" cannot be written while it has rules, partitions or inheritance children",
						RelationGetRelationName(rel)),
				 errdetail("A rule or a partition's routing would see the true value before dp_pg randomizes it.")));
	for (int i = 0; td != NULL && i < td->numtriggers; i++)
	{
		const Trigger *t = &td->triggers[i];

		if (t->tgoid == self->tgoid)
			return;
		if (TRIGGER_FOR_ROW(t->tgtype) && TRIGGER_FOR_BEFORE(t->tgtype) &&
			(TRIGGER_FOR_INSERT(t->tgtype) || TRIGGER_FOR_UPDATE(t->tgtype)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("trigger \"%s\" on \"%s\" fires before dp_pg randomizes its locally private columns",
							t->tgname, RelationGetRelationName(rel)),
					 errhint("Rename it so that it sorts after \"%s\", or drop it.", DP_RANDOMIZE_TRIGGER)));
	}
	elog(ERROR, "dp_pg.randomize_row: trigger not found on its table");
}

/* Read the table's declarations for this statement (see the file comment). */
static DpRandomizeState *
DpRandomizeStateLoad(FunctionCallInfo fcinfo, Relation rel)
{
	MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	DpRandomizeState *st = palloc0(sizeof(DpRandomizeState));
	Oid			catid = DpRandomizedColumnsRelid();
	TupleDesc	reldesc = RelationGetDescr(rel);
	int			cap = 4;

	st->relid = RelationGetRelid(rel);
	st->cols = palloc0(cap * sizeof(DpRandomizedColumn));
	if (OidIsValid(catid))
	{
		Relation	cat = table_open(catid, AccessShareLock);
		SysScanDesc scan = systable_beginscan(cat, InvalidOid, false, NULL, 0, NULL);
		HeapTuple	tup;

		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			TupleDesc	desc = RelationGetDescr(cat);
			bool		isnull;
			DpRandomizedColumn *col;
			const char *attname;
			AttrNumber	attno = InvalidAttrNumber;

			if (DatumGetObjectId(heap_getattr(tup, RC_RELID, desc, &isnull)) != st->relid)
				continue;
			attname = NameStr(*DatumGetName(heap_getattr(tup, RC_ATTNAME, desc, &isnull)));
			for (int i = 0; i < reldesc->natts; i++)
			{
				Form_pg_attribute a = TupleDescAttr(reldesc, i);

				if (!a->attisdropped && strcmp(NameStr(a->attname), attname) == 0)
					attno = a->attnum;
			}
			if (st->ncols == cap)
			{
				cap *= 2;
				st->cols = repalloc(st->cols, cap * sizeof(DpRandomizedColumn));
			}
			col = &st->cols[st->ncols++];
			memset(col, 0, sizeof(*col));
			col->relid = st->relid;
			namestrcpy(&col->attname, attname);
			col->attno = attno;
			DpRandomizedColumnFill(col, tup, desc);
			if (attno == InvalidAttrNumber || TupleDescAttr(reldesc, attno - 1)->atttypid != col->typid)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("locally private column \"%s\" of \"%s\" was renamed, dropped or changed its type",
								attname, RelationGetRelationName(rel)),
						 errhint("Call dp_pg.unrandomize() for it, then dp_pg.randomize() for the column as it is now.")));
			col->collation = TupleDescAttr(reldesc, attno - 1)->attcollation;
			if ((col->typid == TEXTOID || col->typid == VARCHAROID) &&
				(!OidIsValid(col->collation) || !get_collation_isdeterministic(col->collation)))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("locally private column \"%s\" of \"%s\" has a nondeterministic collation",
								attname, RelationGetRelationName(rel))));
		}
		systable_endscan(scan);
		table_close(cat, AccessShareLock);
	}
	st->rr = palloc(Max(st->ncols, 1) * sizeof(DpRR));
	st->attnos = palloc(Max(st->ncols, 1) * sizeof(int));
	st->values = palloc(Max(st->ncols, 1) * sizeof(Datum));
	st->isnull = palloc(Max(st->ncols, 1) * sizeof(bool));
	for (int i = 0; i < st->ncols; i++)
	{
		char		err[256];

		if (!dp_rr_prepare(&st->rr[i], st->cols[i].epsilon, st->cols[i].nkeys, err, sizeof(err)))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the declaration of locally private column \"%s\" of \"%s\" is corrupt: %s",
							NameStr(st->cols[i].attname), RelationGetRelationName(rel), err)));
	}
	MemoryContextSwitchTo(old);
	return st;
}

/*
 * dp_pg.randomize_row(): BEFORE INSERT OR UPDATE FOR EACH ROW trigger of a
 * table with locally private columns: store each assigned value's
 * randomized report instead of the value (see the file comment).
 */
Datum
dp_randomize_row(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	DpRandomizeState *st;
	HeapTuple	tuple;
	TupleDesc	desc;
	bool		update;
	int			n = 0;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(td->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(td->tg_event) || TRIGGER_FIRED_BY_UPDATE(td->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("dp_pg.randomize_row() must be a BEFORE INSERT OR UPDATE FOR EACH ROW trigger")));
	update = TRIGGER_FIRED_BY_UPDATE(td->tg_event);
	tuple = update ? td->tg_newtuple : td->tg_trigtuple;
	desc = RelationGetDescr(td->tg_relation);

	st = (DpRandomizeState *) fcinfo->flinfo->fn_extra;
	if (st == NULL || st->relid != RelationGetRelid(td->tg_relation))
	{
		DpRandomizeCheckOrder(td->tg_relation, td->tg_trigger);
		st = DpRandomizeStateLoad(fcinfo, td->tg_relation);
		fcinfo->flinfo->fn_extra = st;
	}
	if (st->ncols == 0)
		return PointerGetDatum(tuple);

	for (int i = 0; i < st->ncols; i++)
	{
		DpRandomizedColumn *col = &st->cols[i];
		bool		isnull;
		Datum		value;
		int			x;

		/* an UPDATE draws only for the columns it assigns */
		if (update && !bms_is_member(col->attno - FirstLowInvalidHeapAttributeNumber, td->tg_updatedcols))
			continue;
		value = heap_getattr(tuple, col->attno, desc, &isnull);
		if (isnull)
			continue;
		x = DpRandomizedKeyIndex(col, value);
		if (x < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a value written to locally private column \"%s\" of \"%s\" is not one of its keys",
							NameStr(col->attname), RelationGetRelationName(td->tg_relation)),
					 errdetail("The column's keys are listed in dp_pg.randomized_columns.")));
		st->attnos[n] = col->attno;
		st->values[n] = col->keys[dp_rr_draw(&st->rr[i], x, DpBackendRng())];
		st->isnull[n] = false;
		n++;
	}
	if (n == 0)
		return PointerGetDatum(tuple);
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, desc, n, st->attnos, st->values, st->isnull));
}

/* dp_pg.randomize_epsilon(mech): the epsilon of rr(epsilon=E), for dp_pg.randomize(); 22023 otherwise. */
Datum
dp_randomize_epsilon(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = (DpMechanism *) PG_GETARG_POINTER(0);
	char		err[256];
	DpRR		rr;

	if (!dp_mechanism_validate(mech, err, sizeof(err)))
		DpReportMechanismError(err);
	if (mech->family != DP_MECH_RR)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dp_pg.randomize() takes a randomized response mechanism, rr(epsilon=E)"),
				 errdetail("Other mechanisms add noise to released values; a locally private column randomizes each stored value.")));
	if (!dp_rr_prepare(&rr, mech->p[0], 2, err, sizeof(err)))
		DpReportMechanismError(err);
	PG_RETURN_FLOAT8(mech->p[0]);
}
