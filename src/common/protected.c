/*
 * protected.c — which tables are protected, and their public keys.
 *
 * dp_pg.protected_tables and dp_pg.public_keys (sql/dp_pg--0.1.0.sql) are
 * written by the DBA through dp_pg.protect() / set_public_keys(); a statement
 * trigger on protected_tables sends a relcache invalidation of that catalog
 * table at commit (dp_pg.invalidate_guard), so every backend re-reads the set.
 * The backend cache also forgets everything on a relcache invalidation of a
 * protected table itself (its privileges, indexes or owner changed) and on a
 * full reset; DpProtectedGeneration() counts those events, so caches derived
 * from the set (stats.c's hidden relations) know when to rebuild.
 *
 * Read by the guard, the answer cache (release/cache.c) and synthesis.
 *
 * Layer common/ (docs/development.md): calls nothing of dp_pg's
 * (PostgreSQL's catalogs only).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "protected.h"

PG_FUNCTION_INFO_V1(dp_invalidate_guard);

static List *protected_cache = NIL;
static bool protected_cache_valid = false;
static Oid	protected_cache_relid = InvalidOid;
static uint64 protected_generation = 1;

/* Relcache callback: forget the protected set when it or a protected table changes. */
static void
DpProtectedRelcacheCallback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == protected_cache_relid ||
		(protected_cache_valid && DpFindProtected(protected_cache, relid) != NULL))
	{
		protected_cache_valid = false;
		protected_generation++;
	}
}

/* The OID of dp_pg.protected_tables in this database, or InvalidOid. */
static Oid
DpProtectedTablesRelid(void)
{
	Oid			nsp = get_namespace_oid("dp_pg", true);

	return OidIsValid(nsp) ? get_relname_relid("protected_tables", nsp) : InvalidOid;
}

/* The protected tables of the current database (empty if dp_pg is not installed). */
List *
DpProtectedTables(void)
{
	Oid			relid;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	MemoryContext old;
	int			budget_att;

	if (!IsTransactionState())
		return NIL;
	/* (without dp_pg in this database, look again each time: CREATE EXTENSION sends no event we see) */
	if (protected_cache_valid && OidIsValid(protected_cache_relid))
		return protected_cache;
	relid = DpProtectedTablesRelid();
	if (protected_cache_valid && relid == protected_cache_relid)
		return protected_cache;
	list_free_deep(protected_cache);
	protected_cache = NIL;
	protected_cache_relid = relid;
	protected_cache_valid = true;	/* an invalidation during the scan clears it again */
	protected_generation++;
	if (!OidIsValid(relid))
		return NIL;
	rel = table_open(relid, AccessShareLock);
	/* 0.2.0: the table budget a table is bound to (dp_pg.set_table_budget) */
	budget_att = 0;
	for (int a = 0; a < RelationGetDescr(rel)->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), a);

		if (!att->attisdropped && strcmp(NameStr(att->attname), "table_budget") == 0)
			budget_att = a + 1;
	}
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	old = MemoryContextSwitchTo(TopMemoryContext);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		DpProtected *p = palloc0(sizeof(DpProtected));
		Datum		unit;

		p->relid = DatumGetObjectId(heap_getattr(tup, 1, RelationGetDescr(rel), &isnull));
		unit = heap_getattr(tup, 2, RelationGetDescr(rel), &isnull);
		p->has_unit = !isnull;
		if (!isnull)
			namestrcpy(&p->unit, NameStr(*DatumGetName(unit)));
		p->max_groups = DatumGetInt32(heap_getattr(tup, 3, RelationGetDescr(rel), &isnull));
		p->max_rows = DatumGetInt32(heap_getattr(tup, 4, RelationGetDescr(rel), &isnull));
		if (budget_att > 0)
		{
			Datum		b = heap_getattr(tup, budget_att, RelationGetDescr(rel), &isnull);

			p->has_budget = !isnull;
			if (!isnull)
				p->budget = *DatumGetUUIDP(b);
		}
		protected_cache = lappend(protected_cache, p);
	}
	MemoryContextSwitchTo(old);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return protected_cache;
}

/* Changes whenever the protected set may have changed. */
uint64
DpProtectedGeneration(void)
{
	(void) DpProtectedTables();
	return protected_generation;
}

/* dp_pg.invalidate_guard(): make every backend re-read the protected tables (at commit). */
Datum
dp_invalidate_guard(PG_FUNCTION_ARGS)
{
	Oid			relid = DpProtectedTablesRelid();

	if (OidIsValid(relid))
		CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
}

/* The entry of relid among the protected tables, or NULL. */
DpProtected *
DpFindProtected(List *prot, Oid relid)
{
	ListCell   *lc;

	foreach(lc, prot)
		if (((DpProtected *) lfirst(lc))->relid == relid)
			return lfirst(lc);
	return NULL;
}

/* True if relid is a protected table. */
bool
DpIsProtected(Oid relid)
{
	return DpFindProtected(DpProtectedTables(), relid) != NULL;
}

/* The declared public keys of column attname of relid, or NULL if none. */
ArrayType *
DpPublicKeys(Oid relid, const char *attname)
{
	Oid			nsp = get_namespace_oid("dp_pg", true);
	Oid			tab = OidIsValid(nsp) ? get_relname_relid("public_keys", nsp) : InvalidOid;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	ArrayType  *result = NULL;

	if (!OidIsValid(tab))
		return NULL;
	rel = table_open(tab, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (result == NULL && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		TupleDesc	desc = RelationGetDescr(rel);

		if (DatumGetObjectId(heap_getattr(tup, 1, desc, &isnull)) == relid &&
			strcmp(NameStr(*DatumGetName(heap_getattr(tup, 2, desc, &isnull))), attname) == 0)
			result = DatumGetArrayTypePCopy(heap_getattr(tup, 3, desc, &isnull));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/* The domain a DBA declared for column attname of relid (dp_pg.column_domains); false if none. */
bool
DpDeclaredDomain(Oid relid, const char *attname, double *lo, double *hi)
{
	Oid			nsp = get_namespace_oid("dp_pg", true);
	Oid			tab = OidIsValid(nsp) ? get_relname_relid("column_domains", nsp) : InvalidOid;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	if (!OidIsValid(tab))
		return false;
	rel = table_open(tab, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (!found && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		TupleDesc	desc = RelationGetDescr(rel);

		if (DatumGetObjectId(heap_getattr(tup, 1, desc, &isnull)) == relid &&
			strcmp(NameStr(*DatumGetName(heap_getattr(tup, 2, desc, &isnull))), attname) == 0)
		{
			*lo = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, heap_getattr(tup, 3, desc, &isnull)));
			*hi = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, heap_getattr(tup, 4, desc, &isnull)));
			found = true;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* Register the cache invalidation callbacks. */
void
DpProtectedInit(void)
{
	CacheRegisterRelcacheCallback(DpProtectedRelcacheCallback, (Datum) 0);
}

/*
 * dp_pg.analyst_rows(): false.  The qual of the row-level security policy
 * dp_pg.protect() gives dp_pg_analyst, so that the SELECT it grants for
 * table pickers reads no row without the guard, which drops this qual from
 * the DP level it reads for an analyst (guard.c, DpElevate).
 */
PG_FUNCTION_INFO_V1(dp_analyst_rows);

Datum
dp_analyst_rows(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(false);
}
