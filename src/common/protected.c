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
 * The family (DpFamilyOf): a protected table is read with its partitions
 * and inheritance children at any depth, so each of those is a member of
 * its family, protected with it: its declaration holds for every member,
 * now and later.  A protected table below another protected table is a
 * member of that one's family (its own declaration waits for the day it is
 * detached).  An unprotected table above a protected one is an ancestor:
 * reading it reads protected rows.  The families are cached per backend in
 * a hash table and built again (lazily) after a relcache invalidation of
 * dp_pg.protected_tables (every change of the protected set, and every
 * statement that changes pg_inherits: guard/partitions.c), of a relation in
 * a family, or a full reset.  So its cost per query is a lookup, whatever
 * the number of partitions.
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
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/syscache.h"
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

/* An entry of the family cache. */
typedef struct DpFamilyEntry
{
	Oid			relid;			/* hash key */
	DpFamilyKind kind;
	Oid			via;			/* a member: the protected table it was found under; else its root */
	Oid			root;
	bool		has_foreign;	/* a root: its family holds a foreign table */
} DpFamilyEntry;

static HTAB *family_cache = NULL;
static bool family_valid = false;

/* Relcache callback: forget the protected set when it, a protected table or a relation of a family changes. */
static void
DpProtectedRelcacheCallback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == protected_cache_relid ||
		(protected_cache_valid && DpFindProtected(protected_cache, relid) != NULL) ||
		(family_valid && family_cache != NULL && hash_search(family_cache, &relid, HASH_FIND, NULL) != NULL))
	{
		protected_cache_valid = false;
		family_valid = false;
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

/* ------------------------------------------------------------------------
 * The family
 * ------------------------------------------------------------------------
 */

/* The entry of relid (entering it as kind if absent and kind is not NONE), or NULL. */
static DpFamilyEntry *
DpFamilyEnter(Oid relid, DpFamilyKind kind, Oid via)
{
	bool		found;
	DpFamilyEntry *e = hash_search(family_cache, &relid, kind == DP_FAMILY_NONE ? HASH_FIND : HASH_ENTER, &found);

	if (e != NULL && !found)
	{
		e->kind = kind;
		e->via = via;
		e->root = InvalidOid;
		e->has_foreign = false;
	}
	return e;
}

/* The root of a member or root e: the protected table at the top of the chain it was found through. */
static Oid
DpFamilyTop(DpFamilyEntry *e)
{
	int			steps = 0;

	while (e != NULL && e->kind == DP_FAMILY_MEMBER && steps++ < 1000)
		e = DpFamilyEnter(e->via, DP_FAMILY_NONE, InvalidOid);
	return e != NULL ? e->relid : InvalidOid;
}

/* The parents of relid (pg_inherits). */
static List *
DpFamilyParents(Relation inh, Oid relid)
{
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *parents = NIL;

	ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(inh, InheritsRelidSeqnoIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		parents = lappend_oid(parents, ((Form_pg_inherits) GETSTRUCT(tup))->inhparent);
	systable_endscan(scan);
	return parents;
}

/* Mark the unprotected parents of relid, at any depth, as ancestors of root. */
static void
DpFamilyMarkAncestors(Relation inh, Oid relid, Oid root)
{
	List	   *todo = DpFamilyParents(inh, relid);

	while (todo != NIL)
	{
		Oid			parent = linitial_oid(todo);
		DpFamilyEntry *e;

		todo = list_delete_first(todo);
		e = DpFamilyEnter(parent, DP_FAMILY_NONE, InvalidOid);
		if (e != NULL)
			continue;			/* a root, a member or an ancestor already */
		e = DpFamilyEnter(parent, DP_FAMILY_ANCESTOR, InvalidOid);
		e->root = root;
		todo = list_concat(todo, DpFamilyParents(inh, parent));
	}
}

/* Build the family cache (see the file comment). */
static void
DpFamilyBuild(void)
{
	List	   *prot = DpProtectedTables();
	HASHCTL		ctl;
	DpFamilyEntry *e;
	List	   *members = NIL;
	Relation	inh;
	ListCell   *lc;

	if (family_cache != NULL)
		hash_destroy(family_cache);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(DpFamilyEntry);
	family_cache = hash_create("dp_pg protected families", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	family_valid = true;		/* an invalidation while building clears it again */

	/* members: every table below a protected one */
	foreach(lc, prot)
	{
		Oid			relid = ((DpProtected *) lfirst(lc))->relid;
		List	   *below;
		ListCell   *lc2;

		if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
			continue;			/* dropped since it was protected */
		below = find_all_inheritors(relid, NoLock, NULL);
		foreach(lc2, below)
		{
			Oid			kid = lfirst_oid(lc2);

			if (kid != relid && DpFamilyEnter(kid, DP_FAMILY_NONE, InvalidOid) == NULL)
			{
				(void) DpFamilyEnter(kid, DP_FAMILY_MEMBER, relid);
				members = lappend_oid(members, kid);
			}
		}
	}
	/* roots: the protected tables that are no member */
	foreach(lc, prot)
	{
		Oid			relid = ((DpProtected *) lfirst(lc))->relid;

		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)) &&
			(e = DpFamilyEnter(relid, DP_FAMILY_ROOT, InvalidOid))->kind == DP_FAMILY_ROOT)
			e->root = relid;
	}
	/* each member's root, and the roots whose family holds a foreign table */
	foreach(lc, members)
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(lfirst_oid(lc)));

		e = DpFamilyEnter(lfirst_oid(lc), DP_FAMILY_NONE, InvalidOid);
		e->root = DpFamilyTop(e);
		if (HeapTupleIsValid(tup))
		{
			if (((Form_pg_class) GETSTRUCT(tup))->relkind == RELKIND_FOREIGN_TABLE)
			{
				DpFamilyEntry *r = DpFamilyEnter(e->root, DP_FAMILY_NONE, InvalidOid);

				if (r != NULL)
					r->has_foreign = true;
			}
			/* a partition's one parent is in the family; an inheritance child may have others */
			if (((Form_pg_class) GETSTRUCT(tup))->relispartition)
				lfirst_oid(lc) = InvalidOid;
			ReleaseSysCache(tup);
		}
	}
	/* ancestors: the parents above the roots, and above members with other parents */
	inh = table_open(InheritsRelationId, AccessShareLock);
	foreach(lc, prot)
	{
		e = DpFamilyEnter(((DpProtected *) lfirst(lc))->relid, DP_FAMILY_NONE, InvalidOid);
		if (e != NULL && e->kind == DP_FAMILY_ROOT)
			DpFamilyMarkAncestors(inh, e->relid, e->relid);
	}
	foreach(lc, members)
	{
		if (!OidIsValid(lfirst_oid(lc)))
			continue;
		e = DpFamilyEnter(lfirst_oid(lc), DP_FAMILY_NONE, InvalidOid);
		DpFamilyMarkAncestors(inh, e->relid, e->root);
	}
	table_close(inh, AccessShareLock);
	list_free(members);
}

/* The family cache, built if needed; NULL without a protected table. */
static HTAB *
DpFamilyCache(void)
{
	if (!IsTransactionState())
		return family_valid ? family_cache : NULL;
	if (DpProtectedTables() == NIL)
		return NULL;
	if (!family_valid)
		DpFamilyBuild();
	return family_cache;
}

/* See protected.h. */
DpFamilyKind
DpFamilyOf(Oid relid, Oid *root)
{
	HTAB	   *cache = DpFamilyCache();
	DpFamilyEntry *e = cache != NULL ? hash_search(cache, &relid, HASH_FIND, NULL) : NULL;

	if (root != NULL)
		*root = e != NULL ? e->root : InvalidOid;
	return e != NULL ? e->kind : DP_FAMILY_NONE;
}

/* See protected.h. */
List *
DpFamilyRelids(bool with_ancestors)
{
	HTAB	   *cache = DpFamilyCache();
	HASH_SEQ_STATUS seq;
	DpFamilyEntry *e;
	List	   *relids = NIL;

	if (cache == NULL)
		return NIL;
	hash_seq_init(&seq, cache);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (with_ancestors || e->kind != DP_FAMILY_ANCESTOR)
			relids = lappend_oid(relids, e->relid);
	return relids;
}

/* See protected.h. */
bool
DpFamilyHasForeign(Oid root)
{
	HTAB	   *cache = DpFamilyCache();
	DpFamilyEntry *e = cache != NULL ? hash_search(cache, &root, HASH_FIND, NULL) : NULL;

	return e != NULL && e->has_foreign;
}

/* See protected.h. */
void
DpFamilyInvalidate(void)
{
	Oid			relid = DpProtectedTablesRelid();

	if (OidIsValid(relid))
		CacheInvalidateRelcacheByRelid(relid);
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
