/*
 * protected.h — the protected tables of this database and their public keys
 * (common/protected.c).
 *
 * What the DBA declared (dp_pg.protected_tables, dp_pg.public_keys, the
 * declared domains), read by the guard, the answer cache and synthesis; it
 * calls nothing of dp_pg's.
 */
#ifndef DP_PROTECTED_H
#define DP_PROTECTED_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/uuid.h"

/* A protected table as dp_pg.protected_tables lists it. */
typedef struct DpProtected
{
	Oid			relid;
	bool		has_unit;		/* a privacy unit is declared */
	NameData	unit;			/* its column */
	int32		max_groups;		/* max_groups_contributed */
	int32		max_rows;		/* max_rows_per_unit */
	bool		has_budget;		/* bound to a table budget (0.2.0: table_budget) */
	pg_uuid_t	budget;			/* its table budget in the ledger */
} DpProtected;

/* The protected tables of the current database (cached; empty without dp_pg). */
extern List *DpProtectedTables(void);

/* The entry of relid among the protected tables, or NULL. */
extern DpProtected *DpFindProtected(List *prot, Oid relid);

/* True if relid is a protected table. */
extern bool DpIsProtected(Oid relid);

/* The declared public keys (text[]) of column attname of relid, or NULL. */
extern ArrayType *DpPublicKeys(Oid relid, const char *attname);

/* The value domain a DBA declared for a column (dp_pg.set_domain); false if none. */
extern bool DpDeclaredDomain(Oid relid, const char *attname, double *lo, double *hi);

/* Changes whenever the protected set or a protected table's relcache entry is invalidated. */
extern uint64 DpProtectedGeneration(void);

/* Register the cache invalidation callbacks. */
extern void DpProtectedInit(void);

#endif							/* DP_PROTECTED_H */
