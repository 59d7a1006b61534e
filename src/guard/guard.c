/*
 * guard/guard.c — the guard's entry points, called by the thin hook bodies
 * of hooks.c; the threat model and the invariants are in guard.h.
 *
 * Planning a query (planner_hook), in this order:
 *   1. superusers' sessions: only the per-unit bounding that every role's dp
 *      queries on a table with a privacy unit get (units.c);
 *   2. everyone else: sizes and counters masked (stats.c);
 *   3. an analyst's query that reads a protected table: a column probe
 *      (LIMIT 0, constant-false WHERE) becomes an empty query reading
 *      nothing; else that read must be in the FROM of the dp query, which is
 *      the top level or a FROM-subquery it wraps (the levels around it are
 *      post-processing), after FROM-subqueries that only filter and project
 *      the table are flattened; its plain count / sum / avg become dp
 *      aggregates (translate.c); the dp query must have the accepted shape
 *      (shape.c); it is split into the DP level and post-processing
 *      (release.c); the DP level reads the table with its owner's rights,
 *      for this plan only; its GROUP BY lists every public key or goes
 *      through partition selection (groups.c), or, with a privacy unit, each
 *      unit's contribution is bounded first (units.c);
 *   4. the query's relations are counted (reads.c), the standard planner
 *      runs, and the final plan is checked against the counts and stamped.
 * Anything refused is ERROR before execution: nothing is charged or
 * released.
 *
 * Layer guard/, floor top (docs/development.md): the one file that runs the
 * floors in order; may call every floor of guard/, the aggregates, the
 * release path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/namespace.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "guard/floor_releases.h"

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
	if (shape.partner_rti != 0)
		DpUnitJoinBound(&shape, &ub);	/* two tables joined on their unit */
	else
		(void) DpUnitBoundOf(p, &ub);
	DpBoundUnits(d, shape.prot_rti, p->relid, DpFindProtected(prot, p->relid) != NULL, &ub);
	check->bounded = true;
}

/* The DP query of an analyst's query (q itself, or the query it wraps), processed (a DpGuardQuery). */
static void
DpGuardDpQuery(Query *parse, List *prot, DpPlanCheck *check, int depth)
{
	DpProtected *p;
	DpShape		shape;
	Query	   *d;
	DpUnitBound ub;

	p = DpTopLevelProtected(parse, prot);
	if (p == NULL && DpGuardFlatten(parse, prot))
		p = DpTopLevelProtected(parse, prot);
	/* an aggregate over per-unit aggregates of a table with a privacy unit (perunit.c) */
	if (p == NULL && DpPerUnitQuery(parse, prot, check, depth))
		return;
	if (p == NULL)
	{
		RangeTblEntry *sub = DpWrappedDpQuery(parse);

		if (sub == NULL || sub->lateral || depth >= 8)
			DpGuardRefuseHint("a protected table may only be read by a dp query in FROM",
							  "The dp query may be wrapped in outer queries (FROM (<dp query>) AS s); "
							  "CTEs, scalar subqueries, set operations and LATERAL could release rows or a second result.",
							  "Put the dp query in FROM: SELECT ... FROM (SELECT dp_count(*) FROM t) AS s.");
		DpGuardDpQuery(sub->subquery, prot, check, depth + 1);
		return;
	}
	/* grouping sets, or a constant series: one release each (multi.c) */
	if (DpMultiSplit(parse, prot, check, depth, DpGuardDpQuery))
		return;
	DpTranslatePlainAggregates(parse, p);
	DpShapeValidate(parse, p, &shape);
	DpRefuseUnitGroups(parse, p, shape.prot_rti);
	d = DpReleaseSplit(parse, &shape);
	DpGuardElevate(d, rt_fetch(shape.prot_rti, d->rtable));
	if (shape.partner_rti != 0)
	{
		/* two tables joined on their unit: the joined rows are bounded per unit (unitjoin.c) */
		DpGuardElevate(d, rt_fetch(shape.partner_rti, d->rtable));
		DpUnitJoinBound(&shape, &ub);
		DpBoundUnits(d, shape.prot_rti, p->relid, true, &ub);
		check->bounded = true;
	}
	else if (DpUnitBoundOf(p, &ub))
	{
		DpBoundUnits(d, shape.prot_rti, p->relid, true, &ub);
		check->bounded = true;
	}
	else
		DpGroupRelease(d, p->relid);
	DpCanonicalReleasedKeys(d);
	/* the error bars of averages beside their groups, in the output's order (order.c) */
	DpReleaseNoteKeys(d);
	if (depth == 0)
		DpReleaseOrderWrap(parse, d);
	/* foreign partitions: what their servers may not evaluate stays here (partitions.c) */
	DpPartitionsKeepLocal(d);
}

/*
 * Guard q, which reads protected tables (its top level, or a released
 * subquery of it: multi.c): every one of its protected reads, at any depth,
 * must be a DP level that the guard validates — the released subqueries
 * beside the table, then one protected table, or two joined on their unit.
 * Any other read (a second FROM item or a subquery of the dp query or of its
 * wrappers) is refused before anything is checked further.
 */
static void
DpGuardCountedQuery(Query *q, List *prot, DpPlanCheck *check, int depth)
{
	int			reads = DpReadsProtected(q);

	/* dp subqueries whose released rows filter the table are releases of their own (multi.c) */
	if (reads > 1)
		reads -= DpMultiReleasedSubqueries(q, prot, check, DpGuardCountedQuery);
	/* two protected tables joined on their unit are one DP level (unitjoin.c; the shape check decides) */
	if (reads == 2)
		reads -= DpUnitJoinReads(q, prot);
	if (reads > 1)
	{
		const char *join = DpUnitJoinHint(q, prot);

		DpGuardRefuseHint("a dp query reads exactly one protected table, once",
						  "Subqueries, CTEs, set operations and self-joins could release rows or a second result.",
						  join != NULL ? join : "Ask each protected table in a query of its own.");
	}
	DpGuardDpQuery(q, prot, check, depth);
}

/* An analyst's query that reads a protected table: validate, split, rewrite. */
static void
DpGuardAnalystQuery(Query *parse, List *prot, DpPlanCheck *check)
{
	/* a partition or inheritance child read on its own, an unprotected parent of one (partitions.c) */
	DpPartitionsCheckQuery(parse);
	check->views = DpUnwrapTrustedViews(parse);	/* a DBA's views: judged as what they expand to */
	DpInlineProtectedCtes(parse);
	if (DpReadsProtected(parse) == 0)
	{
		DpGuardBoundTrusted(parse, prot, check);	/* dp_pg.privacy_unit on an analyst's own table */
		return;
	}
	if (query_tree_walker(parse, DpCallsGuardRowFunction, NULL, 0))
		DpGuardRefuseHint("dp_pg's row functions are the guard's own",
						  "dp_pg.domain_read, the total operators (dp_pg.total_*), the key windows and the run-time "
						  "constants are what the guard writes into a query; their bounds are the guard's, not a query's.",
						  "Write the arithmetic itself (amount * 2, a / b): the guard reads each column through its "
						  "value domain and computes with total operators.");
	if (DpIsColumnProbe(parse))
	{
		DpEmptyProbe(parse);
		return;
	}
	DpGuardCountedQuery(parse, prot, check, 0);
}

/* Before planning: masking, validation, the release level and its rewrites. */
void
DpGuardBeforePlanning(Query *parse, DpPlanCheck *check)
{
	List	   *prot;
	uint64		made = DpRunConstantsMade();

	memset(check, 0, sizeof(DpPlanCheck));
	DpMultiReset();				/* no released subquery of an earlier query is one of this one's */
	DpPerUnitReset();			/* nor a per-unit subquery */
	DpRowStepsReset();
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
	check->run_constants = DpRunConstantsMade() != made;
	/* a family with foreign partitions: postgres_fdw tables with safe options (partitions.c) */
	if (check->analyst && check->protected_reads > 0)
		DpPartitionsCheckShards(parse);
}

/* After planning: the final plan's checks and stamp. */
void
DpGuardAfterPlanning(PlannedStmt *stmt, DpPlanCheck *check)
{
	DpReadsAfterPlanning(stmt, check);
	if (check->active && check->analyst && stmt->commandType != CMD_UTILITY)
		DpPartitionsCheckPlan(stmt);
	/* the views unwrapped: a change of one (or of its privileges) plans the query again */
	stmt->relationOids = list_concat(stmt->relationOids, check->views);
	if (check->masked)
		stmt->dependsOnRole = true;	/* the masking depends on the user */
}

/* ProcessUtility: the guard's checks of utility statements. */
void
DpGuardUtility(PlannedStmt *pstmt)
{
	/* an EXECUTE's plan is checked, and gets the message floor, when it starts (reads.c) */
	bool		analyst;

	if (DpSessionIsSuperuser())
		return;
	analyst = !IsA(pstmt->utilityStmt, ExecuteStmt) && DpSessionIsAnalyst();
	/* messages of the statement stay at NOTICE and above (session.c) */
	if (analyst)
		DpSessionMessageFloor();
	/* the SELECT analysts hold for table pickers does not let them lock a protected table */
	if (IsA(pstmt->utilityStmt, LockStmt) && DpSessionIsAnalyst())
	{
		ListCell   *lc;

		foreach(lc, ((LockStmt *) pstmt->utilityStmt)->relations)
		{
			Oid			relid = RangeVarGetRelid(lfirst_node(RangeVar, lc), NoLock, true);

			if (OidIsValid(relid) && DpIsProtected(relid))
				DpGuardRefuse("LOCK is not allowed on a protected table",
							  "Analysts read protected tables only through dp queries.");
		}
	}
	DpTrustCheckUtility(pstmt->utilityStmt);
	DpStatsCheckUtility(pstmt->utilityStmt);
	/* nothing that reads a protected table or acts on what one depends on (ddl.c) */
	if (analyst)
		DpDdlCheckUtility(pstmt->utilityStmt);
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
