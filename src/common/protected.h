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

/*
 * What a relation is to the protected tables (protected.c, "The family"):
 * each protected table with its partitions and inheritance children at any
 * depth is one family, read as a whole through the table at its top.
 */
typedef enum DpFamilyKind
{
	DP_FAMILY_NONE = 0,			/* no protected row in it */
	DP_FAMILY_ROOT,				/* a protected table no other protected table contains */
	DP_FAMILY_MEMBER,			/* a partition or inheritance child, at any depth, of a protected table */
	DP_FAMILY_ANCESTOR			/* an unprotected parent, at any depth, of a protected table or member */
} DpFamilyKind;

/*
 * The kind of relation relid, and its root (a member's or a root's: the
 * protected table at the top; an ancestor's: a root below it).  Cached;
 * the cache is built again after any change of the protected set, of
 * pg_inherits, or of a relation in a family.
 */
extern DpFamilyKind DpFamilyOf(Oid relid, Oid *root);

/* Every root and member (with_ancestors: and ancestor) of the families, in no particular order. */
extern List *DpFamilyRelids(bool with_ancestors);

/* True if the family of root holds a foreign table. */
extern bool DpFamilyHasForeign(Oid root);

/* Make every backend build the families again (at commit; at once in this one, at the next command). */
extern void DpFamilyInvalidate(void);

/* Register the cache invalidation callbacks. */
extern void DpProtectedInit(void);

#endif							/* DP_PROTECTED_H */
