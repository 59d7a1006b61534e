/*
 * guard/reads.c — every read of a protected table is a released read
 * (invariant 3).
 *
 * The guard validates and rewrites the query the planner receives
 * (guard.c), but the planner still adds relations of its own: it inlines SQL
 * functions (their bodies may read any table, even pg_class) and expands
 * inheritance.  So the final plan is checked against what the guard saw:
 *   - before planning, the relations of the whole query tree are counted —
 *     protected tables, the catalogs whose sizes are masked (stats.c), tables
 *     with a privacy unit — and whether it has dp aggregates;
 *   - after planning, the flattened range table of the plan (every relation
 *     the plan reads, also those of subplans and of pruned or inlined parts)
 *     may hold no more of each: a read the guard did not see is refused
 *     (42501; 0A000 for an unbounded read of a unit table under a dp
 *     aggregate).
 * An analyst's approved plan is stamped with the session's analyst epoch
 * (session.c): a PlanInvalItem of a cache id no catalog cache has, which
 * PostgreSQL keeps with the plan and copies with it, and which no query can
 * produce.  At ExecutorStart (every plan execution: portals, SPI, SQL
 * functions, cursors, EXPLAIN), an analyst's plan that reads a protected
 * table must carry the stamp of the current epoch, and a stamped plan runs in
 * no other epoch — so a plan made before a role got its budget (which may
 * read a table through a privilege, a view or a SECURITY DEFINER function)
 * never runs once it has one, and the owner's rights the guard gave a plan
 * never outlive the analyst's epoch.  EXPLAIN of such a plan is refused for
 * analysts (estimates would reveal the table's size), except the EXPLAIN-only
 * start of dp_pg.estimate_cost's own plan, which runs nothing.
 *
 * Nested reads: while a dp query runs (ExecutorRun), a plan started inside it
 * (a PL/pgSQL or SQL function that was not inlined) that reads a table with a
 * privacy unit must itself be a bounded dp query, otherwise its rows would
 * feed the outer dp aggregate unbounded (0A000).  This applies to every role.
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/transam.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "commands/extension.h"
#include "utils/guc.h"
#include "utils/varlena.h"
#include "catalog/pg_class.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"

#include "release.h"
#include "plantree.h"
#include "guard/guard.h"
#include "ledger.h"

/* Stamps in PlannedStmt->invalItems (cache ids no catalog cache has). */
#define DP_STAMP_ANALYST (-4201)	/* hashValue: the analyst epoch of the approval */
#define DP_STAMP_BOUNDED (-4202)	/* its unit tables are bounded dp reads */
#define DP_STAMP_RUNCONST (-4203)	/* it holds run-time constants to bind (callsite.c) */

static int	running_dp_queries = 0;

/* Context of the counting walk. */
typedef struct DpReadCount
{
	List	   *prot;
	int			protected_reads;
	int			catalog_reads;
	int			unit_reads;
	int			sequence_reads;	/* hidden sequences (owned by protected tables) */
	bool		dp_aggregates;
} DpReadCount;

/*
 * Count one relation read (inh: with its inheritance children or
 * partitions).  A member of a protected table's family read on its own (a
 * partition named in the query), or an ancestor read with its children,
 * reads protected rows: a protected read.
 */
static void
DpCountRelation(Oid relid, bool inh, DpReadCount *c)
{
	DpFamilyKind kind = c->prot != NIL ? DpFamilyOf(relid, NULL) : DP_FAMILY_NONE;

	if (DpFindProtected(c->prot, relid) != NULL || kind == DP_FAMILY_MEMBER ||
		(kind == DP_FAMILY_ANCESTOR && inh))
		c->protected_reads++;
	if (DpStatsMaskedCatalog(relid))
		c->catalog_reads++;
	if (DpIsUnitTable(c->prot, relid))
		c->unit_reads++;
	if (c->prot != NIL && get_rel_relkind(relid) == RELKIND_SEQUENCE && DpStatsHidden(relid))
		c->sequence_reads++;
}

/* Walker over a whole query tree: relations read and dp aggregates. */
static bool
DpCountWalker(Node *node, DpReadCount *c)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *r = (RangeTblEntry *) node;

		if (r->rtekind == RTE_RELATION)
			DpCountRelation(r->relid, r->inh, c);
		return false;
	}
	if (IsA(node, Aggref) && DpKindOfAggregate(((Aggref *) node)->aggfnoid) != NULL)
		c->dp_aggregates = true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, DpCountWalker, c, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, DpCountWalker, c);
}

/* The number of protected relations a query tree reads (at any depth). */
int
DpReadsProtected(Query *parse)
{
	DpReadCount c;

	memset(&c, 0, sizeof(c));
	c.prot = DpProtectedTables();
	(void) DpCountWalker((Node *) parse, &c);
	return c.protected_reads;
}

/*
 * Is dp_pg beside Citus: its library preloaded, or its extension in this
 * database?  Citus can run a whole query, dp aggregates and their noise
 * included, on its worker nodes, where this server's ledger never sees it
 * (a query grouped by the distribution column, filtered to one shard, or
 * wrapped in a subquery).  Until an integration is built and tested
 * (docs/citus.md), no dp answer is released beside it: fail closed.
 */
static bool
DpBesideCitus(void)
{
	static int	preloaded = -1;

	if (preloaded < 0)
	{
		const char *libs = GetConfigOption("shared_preload_libraries", true, false);
		List	   *names = NIL;
		ListCell   *lc;
		char	   *raw = pstrdup(libs ? libs : "");

		preloaded = 0;
		if (SplitDirectoriesString(raw, ',', &names))
			foreach(lc, names)
			{
				const char *base = strrchr((char *) lfirst(lc), '/');

				base = base ? base + 1 : (char *) lfirst(lc);
				if (strcmp(base, "citus") == 0 || strcmp(base, "citus.so") == 0)
					preloaded = 1;
			}
	}
	return preloaded == 1 || OidIsValid(get_extension_oid("citus", true));
}

/*
 * Refuse a dp query beside Citus (see DpBesideCitus).  Before planning is
 * enough: Citus is always preloaded (it refuses to load otherwise), so no
 * dp plan is ever made beside it.
 */
static void
DpRefuseBesideCitus(void)
{
	if (!DpBesideCitus())
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("dp_pg does not release answers on a server with Citus"),
			 errdetail("Citus can run a query, noise included, on its worker nodes, where this server's ledger does not charge it."),
			 errhint("Run dp queries on a PostgreSQL server without Citus; see dp_pg's docs/citus.md.")));
}

/* Count what the query reads (before planning). */
void
DpReadsBeforePlanning(Query *parse, DpPlanCheck *check)
{
	DpReadCount c;

	memset(&c, 0, sizeof(c));
	c.prot = DpProtectedTables();
	(void) DpCountWalker((Node *) parse, &c);
	check->protected_reads = c.protected_reads;
	check->catalog_reads = c.catalog_reads;
	check->unit_reads = c.unit_reads;
	check->dp_aggregates = c.dp_aggregates;
	if (c.dp_aggregates)
		DpRefuseBesideCitus();
	if (check->masked && c.sequence_reads > 0)
		DpGuardRefuse("the sequences of protected tables are hidden",
					  "Their values count the rows inserted into the table.");
	if (c.dp_aggregates && c.unit_reads > 0 && !check->bounded)
	{
		DpLedgerNoteRefusal("dp aggregates over a table with a privacy unit must read it directly in the outermost query",
							ERRCODE_FEATURE_NOT_SUPPORTED);
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("dp aggregates over a table with a privacy unit must read it directly in the outermost query"),
				 errdetail("Only that shape bounds each person's contribution; in a subquery, CTE or view the answer would protect rows, not persons."),
				 errhint("Read the table in the FROM of the query that has the dp aggregates; queries may wrap that one.")));
	}
}

/* Expression walker: true if it has a dp aggregate. */
static bool
DpHasDpAggrefWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref) && DpKindOfAggregate(((Aggref *) node)->aggfnoid) != NULL)
		return true;
	return expression_tree_walker(node, DpHasDpAggrefWalker, context);
}

/* Plan visitor: an Agg node that computes a dp aggregate. */
static bool
DpDpAggregateVisitor(Plan *plan, void *context)
{
	return IsA(plan, Agg) &&
		(DpHasDpAggrefWalker((Node *) plan->targetlist, NULL) || DpHasDpAggrefWalker((Node *) plan->qual, NULL));
}

/* Plan visitor: a scan of the rows of a function that is not built into PostgreSQL. */
static bool
DpFunctionScanVisitor(Plan *plan, void *context)
{
	ListCell   *lc;

	if (!IsA(plan, FunctionScan))
		return false;
	foreach(lc, ((FunctionScan *) plan)->functions)
	{
		Node	   *e = lfirst_node(RangeTblFunction, lc)->funcexpr;

		if (!IsA(e, FuncExpr) || ((FuncExpr *) e)->funcid >= FirstNormalObjectId)
			return true;
	}
	return false;
}

/* True if a statement (any of its plans) computes a dp aggregate. */
static bool
DpStmtHasDpAggregate(PlannedStmt *stmt)
{
	return DpPlanWalkStmt(stmt, DpDpAggregateVisitor, NULL);
}

/*
 * Count the relations of a plan's flattened range table.  A partition or
 * inheritance child the planner expanded from a protected table (an
 * appendrel child of it, at any depth: stmt->appendRelations) is read under
 * that table's protection, as part of its one read; any other relation
 * counts on its own, so a protected table or member reached through an
 * unprotected parent (a UNION ALL, an ancestor) is a read the guard never
 * saw.
 */
static void
DpCountPlan(PlannedStmt *stmt, DpReadCount *c)
{
	ListCell   *lc;
	int			n = list_length(stmt->rtable);
	Index	   *parent = NULL;
	Index		i = 0;

	memset(c, 0, sizeof(*c));
	c->prot = DpProtectedTables();
	if (stmt->appendRelations != NIL && c->prot != NIL)
	{
		parent = palloc0(sizeof(Index) * (n + 1));
		foreach(lc, stmt->appendRelations)
		{
			AppendRelInfo *a = lfirst_node(AppendRelInfo, lc);

			if (a->child_relid >= 1 && a->child_relid <= n && a->parent_relid <= n)
				parent[a->child_relid] = a->parent_relid;
		}
	}
	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);
		bool		covered = false;

		i++;
		if (r->rtekind != RTE_RELATION)
			continue;
		if (parent != NULL)
		{
			Index		up = parent[i];

			for (int steps = 0; up != 0 && !covered && steps < n; steps++)
			{
				RangeTblEntry *p = rt_fetch(up, stmt->rtable);

				covered = p->rtekind == RTE_RELATION && DpFindProtected(c->prot, p->relid) != NULL;
				up = parent[up];
			}
		}
		if (!covered)
			DpCountRelation(r->relid, r->inh, c);
	}
	if (parent != NULL)
		pfree(parent);
}

/* The stamp of kind cacheid on a plan, or NULL. */
static PlanInvalItem *
DpFindStamp(PlannedStmt *stmt, int cacheid)
{
	ListCell   *lc;

	foreach(lc, stmt->invalItems)
	{
		PlanInvalItem *item = lfirst(lc);

		if (IsA(item, PlanInvalItem) && item->cacheId == cacheid)
			return item;
	}
	return NULL;
}

/* Stamp a plan. */
static void
DpStamp(PlannedStmt *stmt, int cacheid, uint32 value)
{
	PlanInvalItem *item = makeNode(PlanInvalItem);

	item->cacheId = cacheid;
	item->hashValue = value;
	stmt->invalItems = lappend(stmt->invalItems, item);
}

/* True if the plan holds run-time constants to bind (see guard.h). */
bool
DpPlanHasRunConstants(PlannedStmt *stmt)
{
	return DpFindStamp(stmt, DP_STAMP_RUNCONST) != NULL;
}

/* Check and stamp the final plan. */
void
DpReadsAfterPlanning(PlannedStmt *stmt, DpPlanCheck *check)
{
	DpReadCount c;

	if (!check->active || stmt->commandType == CMD_UTILITY)
		return;
	if (check->run_constants)
		DpStamp(stmt, DP_STAMP_RUNCONST, 0);
	DpCountPlan(stmt, &c);
	if ((c.protected_reads > check->protected_reads && check->analyst) ||
		(c.catalog_reads > check->catalog_reads && check->masked && (check->analyst || DpStatsAnyHidden())) ||
		(c.sequence_reads > 0 && check->masked))
		DpGuardRefuse("this query reads a protected table or a masked catalog through a function",
					  "Functions that the planner inlines are not guarded; read the table directly in a dp query.");
	if (c.unit_reads > 0 && DpStmtHasDpAggregate(stmt))
	{
		if (c.unit_reads > check->unit_reads || !check->bounded)
		{
			DpLedgerNoteRefusal("dp aggregates over a table with a privacy unit must read it directly in the outermost query",
								ERRCODE_FEATURE_NOT_SUPPORTED);
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("dp aggregates over a table with a privacy unit must read it directly in the outermost query"),
					 errdetail("This query reads it through a function, where no person's contribution is bounded."),
					 errhint("Read the table in the FROM of the query that has the dp aggregates.")));
		}
		DpStamp(stmt, DP_STAMP_BOUNDED, 0);
	}
	/*
	 * The rows of a function that is not built in could come from a protected
	 * table read inside it, which its own query would have refused only after
	 * this one is charged: refuse it here, before the charge.
	 */
	if (check->analyst && DpStmtHasDpAggregate(stmt) && DpPlanWalkStmt(stmt, DpFunctionScanVisitor, NULL))
		DpGuardRefuse("dp aggregates over the rows of a function are not allowed for analysts",
					  "The function could read a protected table where no dp query bounds it.");
	if (check->analyst && c.protected_reads > 0)
	{
		DpStamp(stmt, DP_STAMP_ANALYST, DpSessionEpoch());
		stmt->dependsOnRole = true;
	}
}

/* ExecutorStart: a plan reading protected tables runs only as it was approved (see the file comment). */
void
DpReadsExecutorStart(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;
	PlanInvalItem *stamp;
	DpReadCount c;

	if (IsParallelWorker() || stmt->commandType == CMD_UTILITY)
		return;
	DpCountPlan(stmt, &c);

	if (!DpSessionIsSuperuser())
	{
		bool		analyst = DpSessionIsAnalyst();

		if (analyst)
			DpSessionMessageFloor();
		stamp = DpFindStamp(stmt, DP_STAMP_ANALYST);
		if (c.protected_reads > 0)
		{
			if (analyst && (stamp == NULL || stamp->hashValue != DpSessionEpoch()))
				DpGuardRefuse("this plan was not made by dp_pg's guard for this session",
							  "It was planned before the role's budget changed, or outside the guard; run the statement again.");
			if (!analyst && stamp != NULL)
				DpGuardRefuse("this plan was made for an analyst's session",
							  "The role's budget changed since it was planned; run the statement again.");
			if (analyst && !DpCallSitesIsEstimate(queryDesc) &&
				((eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0 || queryDesc->instrument_options != 0))
				DpGuardRefuseHint("EXPLAIN is not allowed on a protected table",
								  "Plan estimates and run-time statistics reveal row counts.",
								  "dp_pg.estimate_cost('<query>') and dp_pg.error_bars('<query>') say what it would cost and how accurate it is.");
		}
	}
	if (running_dp_queries > 0 && c.unit_reads > 0 && DpFindStamp(stmt, DP_STAMP_BOUNDED) == NULL)
	{
		DpLedgerNoteRefusal("a table with a privacy unit cannot be read inside a running dp query",
							ERRCODE_FEATURE_NOT_SUPPORTED);
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a table with a privacy unit cannot be read inside a running dp query"),
				 errdetail("Its rows would reach the dp aggregate without bounding each person's contribution."),
				 errhint("Run the two queries one after the other.")));
	}
}

/* ExecutorRun: a query starts running; true if it is a dp query (pass it to DpReadsRunPop). */
bool
DpReadsRunPush(QueryDesc *queryDesc)
{
	if (!DpCallSitesActive(queryDesc))
		return false;
	running_dp_queries++;
	return true;
}

/* ExecutorRun: the query stops running (also on error). */
void
DpReadsRunPop(bool pushed)
{
	if (pushed && running_dp_queries > 0)
		running_dp_queries--;
}
