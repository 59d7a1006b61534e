/*
 * guard/guard.c — the guard's entry points, called by the thin hook bodies
 * of hooks.c; the threat model and the invariants are in guard.h.
 *
 * Planning a query (planner_hook), in this order:
 *   1. superusers' sessions: only the per-unit bounding that every role's dp
 *      queries on a table with a privacy unit get (units.c);
 *   2. everyone else: sizes and counters masked (stats.c);
 *   3. an analyst's query that reads a protected table: that read must be in
 *      the top level's FROM; its plain count / sum / avg become dp
 *      aggregates (translate.c); the query must have the accepted shape
 *      (shape.c); it is split into the DP level and post-processing
 *      (release.c); the DP level reads the table with its owner's rights,
 *      for this plan only; its GROUP BY lists every public key or goes
 *      through partition selection (groups.c), or, with a privacy unit, each
 *      unit's contribution is bounded first (units.c);
 *   4. the query's relations are counted (reads.c), the standard planner
 *      runs, and the final plan is checked against the counts and stamped.
 * Anything refused is ERROR before execution: nothing is charged or
 * released.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/syscache.h"

#include "guard/guard.h"

/* The protected table the top level of q reads, or NULL. */
static DpProtected *
DpTopLevelProtected(Query *q, List *prot)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);
		DpProtected *p;

		if (r->rtekind == RTE_RELATION && (p = DpFindProtected(prot, r->relid)) != NULL)
			return p;
	}
	return NULL;
}

/* Read the DP level's protected table with its owner's rights (this plan only: reads.c stamps it). */
static void
DpElevate(Query *d, RangeTblEntry *rte)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rte->relid));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", rte->relid);
	DpSetCheckAsUser(d, rte, ((Form_pg_class) GETSTRUCT(tup))->relowner);
	ReleaseSysCache(tup);
}

/* Everyone's dp query on a table with a privacy unit (or a trusted role's request) is bounded. */
static void
DpGuardBoundTrusted(Query *parse, List *prot, DpPlanCheck *check)
{
	DpProtected *p = DpTrustedUnitTarget(parse, prot);
	DpShape		shape;
	Query	   *d;
	DpUnitBound ub;

	if (p == NULL)
		return;
	DpShapeValidate(parse, p, &shape);
	d = DpReleaseSplit(parse, &shape);
	(void) DpUnitBoundOf(p, &ub);
	DpBoundUnits(d, shape.prot_rti, p->relid, DpFindProtected(prot, p->relid) != NULL, &ub);
	check->bounded = true;
}

/* An analyst's query that reads a protected table: validate, split, rewrite. */
static void
DpGuardAnalystQuery(Query *parse, List *prot, DpPlanCheck *check)
{
	int			reads = DpReadsProtected(parse);
	DpProtected *p;
	DpShape		shape;
	Query	   *d;
	DpUnitBound ub;

	if (reads == 0)
	{
		DpGuardBoundTrusted(parse, prot, check);	/* dp_pg.privacy_unit on an analyst's own table */
		return;
	}
	p = DpTopLevelProtected(parse, prot);
	if (p == NULL || reads > 1)
		DpGuardRefuse(reads > 1 ? "a dp query reads exactly one protected table, once" :
					  "a protected table may only be read in the outermost query",
					  "Subqueries, CTEs, set operations and self-joins could release rows or a second result.");
	DpTranslatePlainAggregates(parse, p);
	DpShapeValidate(parse, p, &shape);
	d = DpReleaseSplit(parse, &shape);
	DpElevate(d, rt_fetch(shape.prot_rti, d->rtable));
	if (DpUnitBoundOf(p, &ub))
	{
		DpBoundUnits(d, shape.prot_rti, p->relid, true, &ub);
		check->bounded = true;
	}
	else
		DpGroupRelease(d, p->relid);
}

/* Before planning: masking, validation, the release level and its rewrites. */
void
DpGuardBeforePlanning(Query *parse, DpPlanCheck *check)
{
	List	   *prot;

	memset(check, 0, sizeof(DpPlanCheck));
	if (parse->commandType == CMD_UTILITY)
		return;
	prot = DpProtectedTables();
	if (!DpSessionIsSuperuser())
	{
		check->analyst = DpSessionIsAnalyst();
		if (check->analyst)
			DpSessionMessageFloor();
		if (prot != NIL || check->analyst)
		{
			DpStatsMaskQuery(parse);
			check->masked = true;
		}
	}
	if (check->analyst && prot != NIL)
		DpGuardAnalystQuery(parse, prot, check);
	else
		DpGuardBoundTrusted(parse, prot, check);
	check->active = true;
	DpReadsBeforePlanning(parse, check);
}

/* After planning: the final plan's checks and stamp. */
void
DpGuardAfterPlanning(PlannedStmt *stmt, DpPlanCheck *check)
{
	DpReadsAfterPlanning(stmt, check);
	if (check->masked)
		stmt->dependsOnRole = true;	/* the masking depends on the user */
}

/* ProcessUtility: the guard's checks of utility statements. */
void
DpGuardUtility(PlannedStmt *pstmt)
{
	if (DpSessionIsSuperuser())
		return;
	DpTrustCheckUtility(pstmt->utilityStmt);
	DpStatsCheckUtility(pstmt->utilityStmt);
}

/* Set up the guard's caches (from _PG_init, preloaded only). */
void
DpGuardInit(void)
{
	DpProtectedInit();
	DpSessionInit();
	DpTrustInit();
	DpStatsInit();
}
