/*
 * catalogue.c — the catalogue of dp aggregates (release.h).
 *
 * Owns the list of aggregate kinds (added by the aggregates at load,
 * DpCatalogueAdd) and the backend's cache of which aggregate OID is which
 * kind: an aggregate is one of dp_pg's when it belongs to the dp_pg
 * extension and its final function is a kind's C final function.  Read by
 * the call sites, the answer cache and the guard.
 *
 * Layer release/ (docs/development.md), its lowest part: calls nothing of
 * dp_pg's (PostgreSQL's catalogs only).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "nodes/primnodes.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "release.h"

#define DP_MAX_KINDS 64

/* Cached answer for one aggregate OID: which kind it is, if any. */
typedef struct DpKindCacheEntry
{
	Oid			aggfnoid;		/* hash key */
	const DpAggKind *kind;		/* NULL: not a dp aggregate */
} DpKindCacheEntry;

static HTAB *kind_cache = NULL;

/* Every aggregate kind dp_pg defines (aggregates/kinds.c adds them at load). */
static const DpAggKind *kinds[DP_MAX_KINDS];
static int	nkinds = 0;

/* Add the kinds of dp_pg's aggregates to the catalogue (once, at load). */
void
DpCatalogueAdd(const DpAggKind *const *add, int n)
{
	if (nkinds + n > DP_MAX_KINDS)
		elog(ERROR, "dp_pg: too many aggregate kinds");
	for (int i = 0; i < n; i++)
		kinds[nkinds++] = add[i];
}

/* Forget cached aggregate kinds when pg_proc changes. */
static void
DpKindCacheInvalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	if (kind_cache != NULL)
	{
		hash_destroy(kind_cache);
		kind_cache = NULL;
	}
}

/* The DpAggKind of aggregate aggfnoid, or NULL if it is not one of dp_pg's. */
const DpAggKind *
DpKindOfAggregate(Oid aggfnoid)
{
	DpKindCacheEntry *entry;
	bool		found;
	const DpAggKind *kind = NULL;

	if (kind_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(DpKindCacheEntry);
		kind_cache = hash_create("dp_pg aggregate kinds", 32, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(kind_cache, &aggfnoid, HASH_FIND, &found);
	if (found)
		return entry->kind;

	{
		HeapTuple	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));

		if (HeapTupleIsValid(tup))
		{
			Oid			finalfn = ((Form_pg_aggregate) GETSTRUCT(tup))->aggfinalfn;

			ReleaseSysCache(tup);
			if (OidIsValid(finalfn))
			{
				Oid			ext = get_extension_oid("dp_pg", true);

				if (OidIsValid(ext) &&
					getExtensionOfObject(ProcedureRelationId, aggfnoid) == ext)
				{
					FmgrInfo	flinfo;

					fmgr_info(finalfn, &flinfo);
					for (int i = 0; i < nkinds; i++)
						if (kinds[i]->finalfn == flinfo.fn_addr)
							kind = kinds[i];
				}
			}
		}
	}
	entry = hash_search(kind_cache, &aggfnoid, HASH_ENTER, &found);
	entry->kind = kind;
	return kind;
}

/* Register the aggregate-kind cache's invalidation (only when preloaded). */
void
DpCatalogueInit(void)
{
	CacheRegisterSyscacheCallback(PROCOID, DpKindCacheInvalidate, (Datum) 0);
}

/* The number of arguments of an aggregate call (its ORDER BY items are not arguments). */
int
DpAggNumArgs(List *args)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, args)
		if (!lfirst_node(TargetEntry, lc)->resjunk)
			n++;
	return n;
}
