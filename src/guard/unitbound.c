/*
 * guard/unitbound.c — a table's privacy unit as the guard bounds it: the
 * unit bound of a protected table's declaration (its unit column, g cells
 * per unit, r rows per cell: dp_pg.protect(table, unit, g, r)), and whether
 * a table has a unit at all, declared or requested by dp_pg.privacy_unit
 * (units.c bounds the units; reads.c counts the reads of unit tables).
 *
 * Layer guard/, floor base (docs/development.md): may call the other files of
 * the floor base, the aggregates, the release path, the ledger, common/ and
 * the numeric core, nothing above.
 */
#include "postgres.h"

#include "utils/lsyscache.h"

#include "guard/floor_base.h"
#include "guc.h"

/* The unit bound of a protected table's declaration, or false if it has none. */
bool
DpUnitBoundOf(DpProtected *p, DpUnitBound *ub)
{
	if (p == NULL || !p->has_unit)
		return false;
	ub->attno = get_attnum(p->relid, NameStr(p->unit));
	if (ub->attno == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("the privacy unit \"%s\" of protected table \"%s\" does not exist",
						NameStr(p->unit), get_rel_name(p->relid)),
				 errhint("Declare it again with dp_pg.protect().")));
	ub->groups = p->max_groups;
	ub->rows = p->max_rows;
	return true;
}

/* Does relation relid have a privacy unit, declared or requested (dp_pg.privacy_unit)? */
bool
DpIsUnitTable(List *prot, Oid relid)
{
	DpProtected *p = DpFindProtected(prot, relid);

	if (p != NULL)
		return p->has_unit;
	return dp_privacy_unit != NULL && dp_privacy_unit[0] != '\0' &&
		get_attnum(relid, dp_privacy_unit) != InvalidAttrNumber;
}
