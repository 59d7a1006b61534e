/*
 * guard.c — analysts reach protected tables only through dp queries.
 *
 * Protocol
 * --------
 * A protected table (dp_pg.protect) has no privileges for PUBLIC; analysts
 * (roles with a budget, ledger.c) are granted none.  Every query an analyst
 * plans goes through DpGuardPlanner (planner_hook, after rewriting, so views
 * are expanded and SQL functions inlined).  If it touches a protected table
 * it must have the one shape whose cost dp_pg knows before it runs; then,
 * and only then, the protected table's range-table entry is checked as its
 * owner (checkAsUser), for this plan only (the plan is marked role
 * dependent, so a cached plan is never reused by another role).  Anything
 * else is ERROR 42501 before execution: nothing is charged or released.
 *
 * Fail closed: without the library (no hook) an analyst's query meets the
 * table's ordinary privileges — permission denied.  If the ledger cannot say
 * whether a user is an analyst, a query touching a protected table fails.
 *
 * The allowed shape (version 1):
 *   SELECT <expressions over dp aggregates, GROUP BY keys and constants>
 *   FROM <one protected table>
 *     [JOIN <public table> ON <its single-column unique key> = <protected column> ...]
 *   [WHERE <row predicate>] [GROUP BY <columns of the table>]
 *   [HAVING <expression over dp aggregates>]
 *   [ORDER BY / LIMIT / OFFSET over the released values]
 * with no subquery, CTE, set operation, window function, set-returning
 * function, DISTINCT, row lock, grouping sets or TABLESAMPLE.  A GROUP BY
 * on columns with declared public keys lists every key combination (the
 * query is rewritten to a LEFT JOIN from the key list, DpRewritePublicGroups);
 * any other GROUP BY releases its keys only through private partition
 * selection: the guard adds dp_pg.partition_keep(dp_pg.partition_mechanism)
 * to HAVING, a dp call site charged with the query (a group shows only if
 * its noisy row count reaches the threshold; a key held by one row shows
 * with probability at most delta).  Row predicates (WHERE, aggregate FILTER) and the value
 * arguments of dp aggregates may use only the table's user columns,
 * constants, bound parameters, AND/OR/NOT, IS [NOT] NULL, IS TRUE/FALSE,
 * CASE WHEN, COALESCE, binary-compatible relabelling, widening numeric
 * casts, built-in comparison operators on basic types and LIKE/ILIKE with a
 * constant pattern: none of
 * them can raise an error that depends on a private value (no error
 * oracle); subexpressions without table columns are constants.
 *
 * Side channels: EXPLAIN (with or without ANALYZE) of a plan that reads a
 * protected table is refused for analysts (ExecutorStart, which sees
 * EXPLAIN EXECUTE too), since estimates reveal row counts.  For every user
 * who may not SELECT a protected table, the catalog numbers that reveal its
 * size read as NULL: pg_class.reltuples / relpages / relallvisible, the
 * pg_stat_get_* functions (behind pg_stat_user_tables and friends) and the
 * relation size functions, for the table, its indexes and its TOAST table.
 * The rewrite wraps each in CASE WHEN oid = ANY(hidden) THEN NULL, so psql's
 * \d and the catalog queries of BI tools keep working.  (pg_stats already
 * shows only tables the user may read; pg_statistic is superuser-only.)
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "executor/executor.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_statistic_ext.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "optimizer/planner.h"
#include "tcop/utility.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "parser/parse_oper.h"
#include "parser/parse_coerce.h"
#include "parser/parse_node.h"
#include "utils/float.h"
#include "utils/acl.h"
#include "access/sysattr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "parser/parsetree.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "agg_common.h"
#include "cost.h"
#include "guard.h"
#include "guc.h"
#include "ledger.h"

static planner_hook_type prev_planner = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

PG_FUNCTION_INFO_V1(dp_invalidate_guard);

/* A protected table as dp_pg.protected_tables lists it. */
typedef struct DpProtected
{
	Oid			relid;
	bool		has_unit;		/* a privacy unit is declared */
	NameData	unit;			/* its column */
	int32		max_groups;		/* max_groups_contributed */
	int32		max_rows;		/* max_rows_per_unit */
} DpProtected;

/* ERROR 42501 naming the rule a query broke. */
static void
DpGuardRefuse(const char *rule, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("dp_pg: %s", rule),
			 errdetail("%s", detail),
			 errhint("On a protected table an analyst may only run SELECT <dp aggregates> FROM <table> [JOIN <public table> ON <unique key> = <column>] [WHERE <simple comparisons>] [GROUP BY <columns>].")));
}

/*
 * Backend cache of dp_pg.protected_tables: read once, then kept until a
 * relcache invalidation of that table (dp_pg.protect and friends send one at
 * commit) or of everything.
 */
static List *protected_cache = NIL;
static bool protected_cache_valid = false;
static Oid	protected_cache_relid = InvalidOid;

/* Relcache callback: forget the cached protected tables. */
static void
DpGuardRelcacheCallback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == protected_cache_relid)
		protected_cache_valid = false;
}

/* The OID of dp_pg.protected_tables in this database, or InvalidOid. */
static Oid
DpProtectedTablesRelid(void)
{
	Oid			nsp = get_namespace_oid("dp_pg", true);

	return OidIsValid(nsp) ? get_relname_relid("protected_tables", nsp) : InvalidOid;
}

/* The protected tables of the current database (empty if dp_pg is not installed). */
static List *
DpProtectedTables(void)
{
	Oid			relid = DpProtectedTablesRelid();
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	MemoryContext old;

	if (!OidIsValid(relid))
		return NIL;
	if (protected_cache_valid && relid == protected_cache_relid)
		return protected_cache;

	list_free_deep(protected_cache);
	protected_cache = NIL;
	protected_cache_relid = relid;
	protected_cache_valid = true;	/* an invalidation during the scan clears it again */
	rel = table_open(relid, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	old = MemoryContextSwitchTo(TopMemoryContext);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		DpProtected *p = palloc(sizeof(DpProtected));

		Datum		unit;

		p->relid = DatumGetObjectId(heap_getattr(tup, 1, RelationGetDescr(rel), &isnull));
		unit = heap_getattr(tup, 2, RelationGetDescr(rel), &isnull);
		p->has_unit = !isnull;
		memset(&p->unit, 0, sizeof(NameData));
		if (!isnull)
			namestrcpy(&p->unit, NameStr(*DatumGetName(unit)));
		p->max_groups = DatumGetInt32(heap_getattr(tup, 3, RelationGetDescr(rel), &isnull));
		p->max_rows = DatumGetInt32(heap_getattr(tup, 4, RelationGetDescr(rel), &isnull));
		protected_cache = lappend(protected_cache, p);
	}
	MemoryContextSwitchTo(old);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return protected_cache;
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
static DpProtected *
DpFindProtected(List *prot, Oid relid)
{
	ListCell   *lc;

	foreach(lc, prot)
		if (((DpProtected *) lfirst(lc))->relid == relid)
			return lfirst(lc);
	return NULL;
}

/* Walker: true if the query (at any depth) reads a protected table. */
static bool
DpTouchesProtectedWalker(Node *node, List *prot)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		return rte->rtekind == RTE_RELATION && DpFindProtected(prot, rte->relid) != NULL;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, DpTouchesProtectedWalker, prot, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, DpTouchesProtectedWalker, prot);
}

/* True if a plan's range table reads a protected table. */
bool
DpPlanTouchesProtected(PlannedStmt *stmt)
{
	List	   *prot;
	ListCell   *lc;

	if (stmt->commandType == CMD_UTILITY)
		return false;
	prot = DpProtectedTables();
	if (prot == NIL)
		return false;
	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION && DpFindProtected(prot, rte->relid) != NULL)
			return true;
	}
	return false;
}

/* Type whose built-in comparison operators cannot fail. */
static bool
DpSafeComparisonType(Oid type)
{
	switch (type)
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
		case CHAROID:
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case INTERVALOID:
		case OIDOID:
			return true;
		default:
			return false;
	}
}

/* Is opno a built-in comparison (or LIKE) operator on safe types?  Sets *is_like. */
static bool
DpSafeOperator(Oid opno, bool *is_like)
{
	HeapTuple	tup;
	Form_pg_operator op;
	const char *name;
	bool		ok;

	*is_like = false;
	if (opno >= FirstNormalObjectId)
		return false;
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	if (!HeapTupleIsValid(tup))
		return false;
	op = (Form_pg_operator) GETSTRUCT(tup);
	name = NameStr(op->oprname);
	ok = op->oprresult == BOOLOID && op->oprkind == 'b' &&
		DpSafeComparisonType(op->oprleft) && DpSafeComparisonType(op->oprright);
	if (ok)
	{
		if (strcmp(name, "~~") == 0 || strcmp(name, "~~*") == 0 ||
			strcmp(name, "!~~") == 0 || strcmp(name, "!~~*") == 0)
			*is_like = true;
		else if (!(strcmp(name, "=") == 0 || strcmp(name, "<>") == 0 ||
				   strcmp(name, "<") == 0 || strcmp(name, "<=") == 0 ||
				   strcmp(name, ">") == 0 || strcmp(name, ">=") == 0))
			ok = false;
	}
	ReleaseSysCache(tup);
	return ok;
}

/* Walker: true if the expression contains a Param. */
static bool
DpContainsParamWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return true;
	return expression_tree_walker(node, DpContainsParamWalker, context);
}

/*
 * True if node is a constant the planner folds before execution: no Var, no
 * Param and only immutable functions.  Such an expression either fails while
 * planning, for every row alike, or never; anything evaluated per row (a
 * stable function, a parameter fed to a function) could fail only on the
 * rows that reach it, an error oracle.
 */
static bool
DpIsConstantExpr(Node *node)
{
	return !contain_var_clause(node) && !contain_mutable_functions(node) &&
		!contain_agg_clause(node) && !contain_subplans(node) &&
		!DpContainsParamWalker(node, NULL);
}

/* A constant, a bound parameter, or an array of those: values that are only compared. */
static bool
DpIsBoundValue(Node *node)
{
	if (node == NULL)
		return false;
	if (IsA(node, RelabelType))
		return DpIsBoundValue((Node *) ((RelabelType *) node)->arg);
	if (IsA(node, Param))
		return ((Param *) node)->paramkind == PARAM_EXTERN;
	if (IsA(node, ArrayExpr))
	{
		ListCell   *lc;

		foreach(lc, ((ArrayExpr *) node)->elements)
			if (!DpIsBoundValue(lfirst(lc)))
				return false;
		return true;
	}
	return DpIsConstantExpr(node);
}

static void DpCheckRowExpr(Node *node, const char *where);

/* Check each element of a list of row expressions. */
static void
DpCheckRowList(List *list, const char *where)
{
	ListCell   *lc;

	foreach(lc, list)
		DpCheckRowExpr(lfirst(lc), where);
}

/*
 * A row expression (WHERE, FILTER, dp aggregate value): only what cannot
 * fail on a private value.
 */
static void
DpCheckRowExpr(Node *node, const char *where)
{
	if (node == NULL)
		return;
	if (DpIsConstantExpr(node))
		return;					/* folded while planning: errors cannot depend on rows */
	switch (nodeTag(node))
	{
		case T_Param:
			if (((Param *) node)->paramkind != PARAM_EXTERN)
				DpGuardRefuse("only bound parameters may appear on a protected table",
							  psprintf("Found another parameter in %s.", where));
			return;				/* a bound value, compared as it is: cannot fail */
		case T_Var:
			{
				Var		   *v = (Var *) node;

				if (v->varlevelsup != 0 || v->varattno <= 0)
					DpGuardRefuse("system columns and whole-row references are not allowed",
								  psprintf("Found one in %s.", where));
				return;
			}
		case T_BoolExpr:
			DpCheckRowList(((BoolExpr *) node)->args, where);
			return;
		case T_NullTest:
			DpCheckRowExpr((Node *) ((NullTest *) node)->arg, where);
			return;
		case T_BooleanTest:
			DpCheckRowExpr((Node *) ((BooleanTest *) node)->arg, where);
			return;
		case T_RelabelType:
			DpCheckRowExpr((Node *) ((RelabelType *) node)->arg, where);
			return;
		case T_FuncExpr:
			{
				/* widening numeric casts cannot fail; nothing else is allowed */
				FuncExpr   *f = (FuncExpr *) node;

				switch (f->funcid)
				{
					case F_INT4_INT2:
					case F_INT8_INT2:
					case F_INT8_INT4:
					case F_NUMERIC_INT2:
					case F_NUMERIC_INT4:
					case F_NUMERIC_INT8:
					case F_FLOAT8_INT2:
					case F_FLOAT8_INT4:
					case F_FLOAT8_INT8:
					case F_FLOAT8_FLOAT4:
						if (f->funcformat == COERCE_IMPLICIT_CAST || f->funcformat == COERCE_EXPLICIT_CAST)
						{
							DpCheckRowList(f->args, where);
							return;
						}
						break;
					default:
						break;
				}
				DpGuardRefuse("this function is not allowed on a protected table",
							  psprintf("Function %s in %s could raise errors that reveal private values; "
									   "only widening numeric casts are allowed on columns.",
									   get_func_name(f->funcid) ? get_func_name(f->funcid) : "?", where));
				return;
			}
		case T_CoalesceExpr:
			DpCheckRowList(((CoalesceExpr *) node)->args, where);
			return;
		case T_CaseExpr:
			{
				CaseExpr   *c = (CaseExpr *) node;
				ListCell   *lc;

				if (c->arg != NULL)
					DpGuardRefuse("CASE with a test expression is not allowed on a protected table",
								  psprintf("Use CASE WHEN <comparison> THEN ... in %s.", where));
				foreach(lc, c->args)
				{
					CaseWhen   *w = lfirst_node(CaseWhen, lc);

					DpCheckRowExpr((Node *) w->expr, where);
					DpCheckRowExpr((Node *) w->result, where);
				}
				DpCheckRowExpr((Node *) c->defresult, where);
				return;
			}
		case T_OpExpr:
		case T_DistinctExpr:
			{
				OpExpr	   *op = (OpExpr *) node;
				bool		is_like;

				if (!DpSafeOperator(op->opno, &is_like))
					DpGuardRefuse("this operator is not allowed on a protected table",
								  psprintf("Operator %s in %s could fail or leak on private values; only comparisons and LIKE are allowed.",
										   get_opname(op->opno) ? get_opname(op->opno) : "?", where));
				if (is_like && !DpIsConstantExpr(lsecond(op->args)))
					DpGuardRefuse("a LIKE pattern must be a constant",
								  psprintf("Found a pattern built from table columns or parameters in %s.", where));
				if (is_like && OidIsValid(op->inputcollid) && !get_collation_isdeterministic(op->inputcollid))
					DpGuardRefuse("LIKE under a nondeterministic collation is not allowed on a protected table",
								  psprintf("It fails only on the rows that reach it (%s).", where));
				DpCheckRowList(op->args, where);
				return;
			}
		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *sa = (ScalarArrayOpExpr *) node;
				bool		is_like;

				if (!DpSafeOperator(sa->opno, &is_like) || is_like ||
					!DpIsBoundValue(lsecond(sa->args)))
					DpGuardRefuse("only IN / = ANY over a constant list is allowed",
								  psprintf("Found another array comparison in %s.", where));
				DpCheckRowExpr(linitial(sa->args), where);
				return;
			}
		default:
			DpGuardRefuse("this expression is not allowed on a protected table",
						  psprintf("Functions, casts and arithmetic on private columns in %s could raise errors that reveal values; "
								   "only comparisons, LIKE, AND/OR/NOT, IS NULL, CASE WHEN and COALESCE are allowed.", where));
	}
}

#define DP_GROUP_KEY(varno, attno) ((varno) * 2048 + (attno))

/* Context of the released-value check. */
typedef struct DpReleaseContext
{
	int			ndp;			/* dp aggregates found */
	Bitmapset  *group_atts;		/* GROUP BY keys, as DP_GROUP_KEY(varno, attno) */
} DpReleaseContext;

/*
 * Walker over the target list and HAVING: table columns only inside dp
 * aggregates, whose row arguments are checked; no other aggregate.
 */
static bool
DpCheckReleasedWalker(Node *node, DpReleaseContext *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Aggref	   *agg = (Aggref *) node;
		const DpAggKind *kind = DpKindOfAggregate(agg->aggfnoid);
		ListCell   *lc;
		int			argno = 0;

		if (kind == NULL)
			DpGuardRefuse("only dp aggregates may read a protected table",
						  psprintf("Aggregate %s is not differentially private.", get_func_name(agg->aggfnoid)));
		if (DpAggNumArgs(agg->args) != kind->nargs)
			DpGuardRefuse("dp_pg's internal aggregates cannot be called on a protected table",
						  psprintf("%s is written by dp_pg itself for tables with a privacy unit.", get_func_name(agg->aggfnoid)));
		if (agg->aggdistinct != NIL || agg->aggorder != NIL)
			DpGuardRefuse("DISTINCT and ORDER BY inside a dp aggregate are not allowed on a protected table",
						  "Use the aggregate on the column itself.");
		DpCheckRowExpr((Node *) agg->aggfilter, "an aggregate FILTER clause");
		foreach(lc, agg->args)
		{
			Node	   *arg = (Node *) lfirst_node(TargetEntry, lc)->expr;
			bool		is_const = (argno == kind->mech_argno);

			for (int i = 0; i < kind->nconst; i++)
				if (kind->const_argnos[i] == argno)
					is_const = true;
			if (is_const)
			{
				if (contain_var_clause(arg))
					DpGuardRefuse("dp aggregate parameters must be constants",
								  "Mechanisms and bounds may not depend on table columns.");
			}
			else
				DpCheckRowExpr(arg, "a dp aggregate argument");
			argno++;
		}
		cxt->ndp++;
		return false;			/* do not look into the arguments again */
	}
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup == 0 && v->varattno > 0 &&
			bms_is_member(DP_GROUP_KEY(v->varno, v->varattno), cxt->group_atts))
			return false;		/* a GROUP BY key: released as a key */
		DpGuardRefuse("table columns may only appear inside dp aggregates or as GROUP BY keys",
					  "Selecting or ordering by another protected column would release it.");
	}
	if (IsA(node, WindowFunc) || IsA(node, SubLink) || IsA(node, GroupingFunc))
		DpGuardRefuse("window functions, subqueries and GROUPING() are not allowed on a protected table",
					  "Each of them could release values outside the dp aggregates.");
	return expression_tree_walker(node, DpCheckReleasedWalker, cxt);
}

/* Append the AND-ed conjuncts of qual to *list. */
static void
DpAddConjuncts(List **list, Node *qual)
{
	if (qual == NULL)
		return;
	if (IsA(qual, BoolExpr) && ((BoolExpr *) qual)->boolop == AND_EXPR)
	{
		ListCell   *lc;

		foreach(lc, ((BoolExpr *) qual)->args)
			DpAddConjuncts(list, lfirst(lc));
	}
	else
		*list = lappend(*list, qual);
}

/* Collect the quals of a join tree (inner joins only); ERROR on other nodes. */
static void
DpCollectJoinQuals(Node *node, List **quals)
{
	if (IsA(node, RangeTblRef))
		return;
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			DpCollectJoinQuals(lfirst(lc), quals);
		DpAddConjuncts(quals, ((FromExpr *) node)->quals);
		return;
	}
	if (IsA(node, JoinExpr) && ((JoinExpr *) node)->jointype == JOIN_INNER)
	{
		JoinExpr   *j = (JoinExpr *) node;

		DpCollectJoinQuals(j->larg, quals);
		DpCollectJoinQuals(j->rarg, quals);
		DpAddConjuncts(quals, j->quals);
		return;
	}
	DpGuardRefuse("only inner joins with public tables are allowed on a protected table",
				  "Outer joins could release rows of the public table for keys that depend on private rows.");
}

/* The Var under binary-compatible relabelling, or NULL. */
static Var *
DpStripVar(Node *node)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return (node && IsA(node, Var) && ((Var *) node)->varlevelsup == 0) ? (Var *) node : NULL;
}

/* True if column attno of relid alone is a unique key (a plain unique index on it). */
static bool
DpIsUniqueColumn(Oid relid, AttrNumber attno)
{
	Relation	rel = table_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		unique = false;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index idx;

		if (!HeapTupleIsValid(tup))
			continue;
		idx = (Form_pg_index) GETSTRUCT(tup);
		if (idx->indisunique && idx->indisvalid && idx->indnkeyatts == 1 &&
			idx->indkey.values[0] == attno &&
			heap_attisnull(tup, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(tup, Anum_pg_index_indexprs, NULL))
			unique = true;
		ReleaseSysCache(tup);
	}
	table_close(rel, AccessShareLock);
	return unique;
}

/*
 * True if some conjunct is "public.col = protected.col" with public.col a
 * unique key of the public table: each private row then meets at most one
 * row of it, so the join cannot multiply a person's contribution.
 */
static bool
DpJoinedOnUniqueKey(List *quals, int pub_rti, Oid pub_relid, int prot_rti)
{
	ListCell   *lc;

	foreach(lc, quals)
	{
		OpExpr	   *op = lfirst(lc);
		Var		   *a;
		Var		   *b;
		bool		is_like;
		char	   *name;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2 || !DpSafeOperator(op->opno, &is_like) || is_like)
			continue;
		name = get_opname(op->opno);
		if (name == NULL || strcmp(name, "=") != 0)
			continue;
		a = DpStripVar(linitial(op->args));
		b = DpStripVar(lsecond(op->args));
		if (a == NULL || b == NULL)
			continue;
		if (a->varno == prot_rti && b->varno == pub_rti)
		{
			Var		   *t = a;

			a = b;
			b = t;
		}
		if (a->varno == pub_rti && b->varno == prot_rti && a->varattno > 0 &&
			DpIsUniqueColumn(pub_relid, a->varattno))
			return true;
	}
	return false;
}

/* Validate an analyst's query that touches a protected table; returns that table's RTE. */
static RangeTblEntry *
DpGuardValidate(Query *q, List *prot)
{
	RangeTblEntry *rte = NULL;
	DpReleaseContext cxt = {0};
	FromExpr   *from = q->jointree;
	int			prot_rti = 0;
	int			rti = 0;
	List	   *quals = NIL;
	ListCell   *lc;

	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		DpGuardRefuse("only SELECT may read a protected table", "Data changes and utility commands are not dp queries.");
	if (q->cteList != NIL || q->hasRecursive || q->hasModifyingCTE)
		DpGuardRefuse("WITH is not allowed on a protected table", "A CTE could release a second result.");
	if (q->setOperations != NULL)
		DpGuardRefuse("UNION, INTERSECT and EXCEPT are not allowed on a protected table", "Each branch would be a release of its own.");
	if (q->hasSubLinks)
		DpGuardRefuse("subqueries are not allowed on a protected table", "A subquery could read rows or release a second result.");
	if (q->hasWindowFuncs)
		DpGuardRefuse("window functions are not allowed on a protected table", "They release one value per row.");
	if (q->hasTargetSRFs)
		DpGuardRefuse("set-returning functions are not allowed on a protected table", "They can multiply releases.");
	if (q->groupingSets != NIL || q->groupDistinct)
		DpGuardRefuse("GROUPING SETS, ROLLUP and CUBE are not allowed on a protected table",
					  "Each row would be released once per grouping set.");
	if (q->distinctClause != NIL || q->hasDistinctOn)
		DpGuardRefuse("DISTINCT is not allowed on a protected table", "It is not needed on a single released row.");
	if (q->rowMarks != NIL || q->hasForUpdate)
		DpGuardRefuse("FOR UPDATE / SHARE is not allowed on a protected table", "Row locks act on private rows.");
	if (!q->hasAggs)
		DpGuardRefuse("a query on a protected table must release only dp aggregates", "Raw rows are never released.");
	if (from == NULL)
		DpGuardRefuse("a dp query reads exactly one protected table", "No FROM clause.");

	/* one protected table; besides it only plain public tables (and the joins between them) */
	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		rti++;
		if (r->rtekind == RTE_JOIN)
			continue;
		if (r->rtekind != RTE_RELATION)
			DpGuardRefuse("a dp query reads one protected table, optionally joined to public tables",
						  "Subqueries in FROM, functions and VALUES are not allowed beside a protected table.");
		if (DpFindProtected(prot, r->relid) != NULL)
		{
			if (rte != NULL)
				DpGuardRefuse("a dp query reads exactly one protected table",
							  "Joining protected tables (or one with itself) could multiply a person's rows.");
			rte = r;
			prot_rti = rti;
		}
		else if (get_rel_relkind(r->relid) != RELKIND_RELATION || r->tablesample != NULL)
			DpGuardRefuse("only plain public tables may be joined to a protected table",
						  "Views are expanded; other relation kinds and TABLESAMPLE are not allowed.");
		else if (r->securityQuals != NIL)
			DpGuardRefuse("public tables with row-level security cannot be joined to a protected table",
						  "Their policies would run once per matching private row.");
	}
	if (rte == NULL)
		DpGuardRefuse("a dp query reads exactly one protected table", "The protected table must be in FROM.");
	if (rte->tablesample != NULL)
		DpGuardRefuse("TABLESAMPLE is not allowed on a protected table", "Sampling is not a dp aggregate.");

	/* row predicates of WHERE and every join; each public table on a unique key */
	DpCollectJoinQuals((Node *) from, &quals);
	foreach(lc, quals)
		DpCheckRowExpr(lfirst(lc), "the WHERE or JOIN clause");
	rti = 0;
	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		rti++;
		if (r->rtekind == RTE_RELATION && rti != prot_rti &&
			!DpJoinedOnUniqueKey(quals, rti, r->relid, prot_rti))
			DpGuardRefuse("a public table must be joined on its unique key",
						  psprintf("Join %s with \"%s.<unique column> = <protected column>\" so that each private row meets at most one of its rows.",
								   get_rel_name(r->relid), get_rel_name(r->relid)));
	}

	/* GROUP BY keys: plain columns of the protected or a joined public table */
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Var		   *key = (Var *) get_sortgroupclause_expr(sgc, q->targetList);
		RangeTblEntry *kr;

		if (!IsA(key, Var) || key->varlevelsup != 0 || key->varattno <= 0 ||
			(kr = rt_fetch(key->varno, q->rtable))->rtekind != RTE_RELATION)
			DpGuardRefuse("GROUP BY keys must be columns of the tables",
						  "Expressions as keys could fail on private values; group by the column itself.");
		cxt.group_atts = bms_add_member(cxt.group_atts, DP_GROUP_KEY(key->varno, key->varattno));
	}
	DpCheckReleasedWalker((Node *) q->targetList, &cxt);
	DpCheckReleasedWalker(q->havingQual, &cxt);
	if (contain_volatile_functions((Node *) q->targetList) || contain_volatile_functions(q->havingQual) ||
		contain_volatile_functions(q->limitCount) || contain_volatile_functions(q->limitOffset))
		DpGuardRefuse("functions with side effects are not allowed on a protected table",
					  "nextval, set_config, pg_notify, advisory locks, pg_sleep and other volatile functions "
					  "are refused, also over released values.");
	if (contain_var_clause(q->limitCount) || contain_var_clause(q->limitOffset))
		DpGuardRefuse("LIMIT and OFFSET must be constants", "They may not depend on table columns.");
	if (cxt.ndp == 0)
		DpGuardRefuse("a query on a protected table must release only dp aggregates", "Raw rows are never released.");
	return rte;
}

/* ------------------------------------------------------------------------
 * Catalog side channels
 * ------------------------------------------------------------------------
 */

static bool DpCurrentUserIsAnalyst(void);

/* Context of the masking rewrite. */
typedef struct DpMaskContext
{
	Const	   *hidden;			/* oid[] of relations whose size is hidden */
	Oid			oid_eq;			/* oid = oid */
	List	   *levels;			/* per query level (innermost last): Bitmapset of pg_class rt indexes */
	bool		changed;
} DpMaskContext;

/*
 * Relations whose size and statistics the current user may not see: the
 * protected tables he cannot read, or all of them for an analyst (a direct
 * grant does not make statistics safe), with their indexes and TOAST.
 */
static List *
DpHiddenRelations(List *prot)
{
	List	   *hidden = NIL;
	ListCell   *lc;
	/* while the ledger cannot tell, hide as for an analyst (fail closed, no wait) */
	bool		analyst = !DpLedgerReady() || DpCurrentUserIsAnalyst();

	foreach(lc, prot)
	{
		DpProtected *p = lfirst(lc);
		Relation	rel;

		if (!analyst && pg_class_aclcheck(p->relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK)
			continue;
		rel = try_relation_open(p->relid, AccessShareLock);
		if (rel == NULL)
			continue;
		hidden = lappend_oid(hidden, p->relid);
		hidden = list_concat(hidden, RelationGetIndexList(rel));
		if (OidIsValid(rel->rd_rel->reltoastrelid))
		{
			Relation	toast = try_relation_open(rel->rd_rel->reltoastrelid, AccessShareLock);

			hidden = lappend_oid(hidden, rel->rd_rel->reltoastrelid);
			if (toast != NULL)
			{
				hidden = list_concat(hidden, RelationGetIndexList(toast));
				relation_close(toast, AccessShareLock);
			}
		}
		relation_close(rel, AccessShareLock);
	}
	return hidden;
}

/* oidexpr = ANY(hidden) */
static Expr *
DpMaskTest(Node *oidexpr, DpMaskContext *cxt)
{
	ScalarArrayOpExpr *sa = makeNode(ScalarArrayOpExpr);

	sa->opno = cxt->oid_eq;
	sa->opfuncid = F_OIDEQ;
	sa->useOr = true;
	sa->inputcollid = InvalidOid;
	sa->args = list_make2(oidexpr, copyObject(cxt->hidden));
	sa->location = -1;
	return (Expr *) sa;
}

/* CASE WHEN oidexpr = ANY(hidden) THEN NULL ELSE expr END */
static Node *
DpMaskExpr(Node *expr, Node *oidexpr, DpMaskContext *cxt)
{
	CaseExpr   *c = makeNode(CaseExpr);
	CaseWhen   *w = makeNode(CaseWhen);
	Oid			type = exprType(expr);

	w->expr = DpMaskTest(oidexpr, cxt);
	w->result = (Expr *) makeNullConst(type, exprTypmod(expr), exprCollation(expr));
	w->location = -1;
	c->casetype = type;
	c->casecollid = exprCollation(expr);
	c->arg = NULL;
	c->args = list_make1(w);
	c->defresult = (Expr *) expr;
	c->location = -1;
	cxt->changed = true;
	return (Node *) c;
}

/* Does a function reveal a relation's size or row counts? (first argument: the relation) */
static bool
DpSizeFunction(Oid funcid)
{
	char	   *name;
	bool		result;

	if (funcid >= FirstNormalObjectId)
		return false;
	name = get_func_name(funcid);
	if (name == NULL)
		return false;
	result = strncmp(name, "pg_stat_get_", 12) == 0 ||
		strcmp(name, "pg_relation_size") == 0 || strcmp(name, "pg_table_size") == 0 ||
		strcmp(name, "pg_indexes_size") == 0 || strcmp(name, "pg_total_relation_size") == 0;
	pfree(name);
	return result;
}

/* Mutator: mask size columns of pg_class and size / statistics functions. */
static Node *
DpMaskMutator(Node *node, DpMaskContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;
		Bitmapset  *pgclass = NULL;
		int			rti = 0;
		ListCell   *lc;

		foreach(lc, q->rtable)
		{
			RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

			rti++;
			if (rte->rtekind == RTE_RELATION && rte->relid == RelationRelationId)
				pgclass = bms_add_member(pgclass, rti);
		}
		cxt->levels = lappend(cxt->levels, pgclass);
		q = query_tree_mutator(q, DpMaskMutator, cxt, QTW_DONT_COPY_QUERY);
		cxt->levels = list_delete_last(cxt->levels);

		/* statistics rows (pg_stats, pg_stats_ext) of hidden relations are filtered out */
		rti = 0;
		foreach(lc, q->rtable)
		{
			RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
			AttrNumber	relcol = 0;

			rti++;
			if (rte->rtekind != RTE_RELATION)
				continue;
			if (rte->relid == StatisticRelationId)
				relcol = Anum_pg_statistic_starelid;
			else if (rte->relid == StatisticExtRelationId)
				relcol = Anum_pg_statistic_ext_stxrelid;
			if (relcol != 0 && q->jointree != NULL)
			{
				Node	   *keep = (Node *) makeBoolExpr(NOT_EXPR,
														 list_make1(DpMaskTest((Node *) makeVar(rti, relcol, OIDOID, -1, InvalidOid, 0), cxt)),
														 -1);

				q->jointree->quals = q->jointree->quals ?
					(Node *) makeBoolExpr(AND_EXPR, list_make2(q->jointree->quals, keep), -1) : keep;
				cxt->changed = true;
			}
		}
		return (Node *) q;
	}
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;
		int			level = list_length(cxt->levels) - 1 - (int) v->varlevelsup;

		if (v->varattno == 0 && level >= 0 &&
			bms_is_member(v->varno, (Bitmapset *) list_nth(cxt->levels, level)))
			DpGuardRefuse("whole-row references to pg_class are not allowed here",
						  "They would show the size of protected tables; name the columns instead.");
		if ((v->varattno == Anum_pg_class_reltuples || v->varattno == Anum_pg_class_relpages ||
			 v->varattno == Anum_pg_class_relallvisible) &&
			level >= 0 && bms_is_member(v->varno, (Bitmapset *) list_nth(cxt->levels, level)))
			return DpMaskExpr(node, (Node *) makeVar(v->varno, Anum_pg_class_oid, OIDOID, -1,
													 InvalidOid, v->varlevelsup), cxt);
		return node;
	}
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) expression_tree_mutator(node, DpMaskMutator, cxt);

		if (f->args != NIL && DpSizeFunction(f->funcid))
		{
			Node	   *arg = linitial(f->args);
			Oid			argtype = exprType(arg);

			if (argtype == OIDOID || argtype == REGCLASSOID)
				return DpMaskExpr((Node *) f,
								  (Node *) makeRelabelType((Expr *) copyObject(arg), OIDOID, -1, InvalidOid,
														   COERCE_IMPLICIT_CAST), cxt);
		}
		return (Node *) f;
	}
	return expression_tree_mutator(node, DpMaskMutator, cxt);
}

/* Walker: does the query read pg_class or call a size / statistics function? */
static bool
DpNeedsMaskWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
		return ((RangeTblEntry *) node)->rtekind == RTE_RELATION &&
			(((RangeTblEntry *) node)->relid == RelationRelationId ||
			 ((RangeTblEntry *) node)->relid == StatisticRelationId ||
			 ((RangeTblEntry *) node)->relid == StatisticExtRelationId);
	if (IsA(node, FuncExpr) && DpSizeFunction(((FuncExpr *) node)->funcid))
		return true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, DpNeedsMaskWalker, context, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, DpNeedsMaskWalker, context);
}

/* Hide the size of protected tables the user cannot read; true if the query changed. */
static bool
DpMaskCatalog(Query *parse, List *prot)
{
	List	   *hidden;
	DpMaskContext cxt;
	Datum	   *elems;
	int			n;
	ListCell   *lc;
	int			i = 0;

	if (!DpNeedsMaskWalker((Node *) parse, NULL))
		return false;
	hidden = DpHiddenRelations(prot);
	n = list_length(hidden);
	if (n == 0)
		return false;
	elems = palloc(sizeof(Datum) * n);
	foreach(lc, hidden)
		elems[i++] = ObjectIdGetDatum(lfirst_oid(lc));
	cxt.hidden = makeConst(OIDARRAYOID, -1, InvalidOid, -1,
						   PointerGetDatum(construct_array(elems, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT)),
						   false, false);
	cxt.oid_eq = OpernameGetOprid(list_make1(makeString("=")), OIDOID, OIDOID);
	cxt.levels = NIL;
	cxt.changed = false;
	(void) DpMaskMutator((Node *) parse, &cxt);
	return cxt.changed;
}

static Aggref *DpMakeAggref(Oid fn, Oid rettype, List *args, Oid inputcollid, Expr *filter, bool star);
static Const *DpInt4Const(int32 v);

/* The dp_mechanism type (the argument type of dp_pg.partition_keep, so no search_path lookup). */
static Oid
DpMechanismType(void)
{
	Oid			fn = LookupFuncName(list_make2(makeString("dp_pg"), makeString("partition_keep")), -1, NULL, true);
	Oid		   *argtypes;
	int			nargs;

	if (!OidIsValid(fn) || DpKindOfAggregate(fn) != &dp_partition_keep_kind)
		DpGuardRefuse("GROUP BY needs dp_pg.partition_keep", "The dp_pg installation is incomplete.");
	(void) get_func_signature(fn, &argtypes, &nargs);
	return argtypes[0];
}

/* A dp_mechanism constant. */
static Const *
DpMechanismConst(const DpMechanism *mech)
{
	DpMechanism *copy = palloc(sizeof(DpMechanism));

	*copy = *mech;
	return makeConst(DpMechanismType(), -1, InvalidOid, sizeof(DpMechanism), PointerGetDatum(copy), false, false);
}

/*
 * Add dp_pg.partition_keep(<dp_pg.partition_mechanism>) to q's HAVING: the
 * private partition selection of a GROUP BY on keys that are not public.
 * Only groups whose noisy row count reaches the threshold are released, so
 * the set of keys costs that mechanism's (epsilon, delta), charged as a call
 * site.  With a privacy unit (groups > 0) it is dp_pg.bounded_partition_keep(mech,
 * groups), counting the units of each group, each unit in at most groups.
 */
static void
DpAddPartitionKeep(Query *q, int32 groups)
{
	Const	   *mech = DpMechanismConst(dp_partition_mechanism);
	Node	   *keep;

	if (groups > 0)
	{
		Oid			argtypes[2] = {mech->consttype, INT4OID};

		keep = (Node *) DpMakeAggref(LookupFuncName(list_make2(makeString("dp_pg"), makeString("bounded_partition_keep")),
													2, argtypes, false),
									 BOOLOID, list_make2(mech, DpInt4Const(groups)), InvalidOid, NULL, false);
	}
	else
		keep = (Node *) DpMakeAggref(LookupFuncName(list_make2(makeString("dp_pg"), makeString("partition_keep")),
													1, &mech->consttype, false),
									 BOOLOID, list_make1(mech), InvalidOid, NULL, false);
	q->havingQual = q->havingQual ?
		(Node *) makeBoolExpr(AND_EXPR, list_make2(keep, q->havingQual), -1) : keep;
}

/* ------------------------------------------------------------------------
 * GROUP BY on declared public keys
 * ------------------------------------------------------------------------
 */

#define DP_MAX_PUBLIC_GROUPS 100000

/* The declared public keys of column attname of relid, or NULL if none. */
static ArrayType *
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

/* The declared public keys arr (text[]) as constants of key's type, NULLs left out. */
static List *
DpPublicKeyConsts(ArrayType *arr, Var *key)
{
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	Oid			typinput;
	Oid			typioparam;
	List	   *consts = NIL;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &nelems);
	getTypeInputInfo(key->vartype, &typinput, &typioparam);
	for (int i = 0; i < nelems; i++)
	{
		if (nulls[i])
			continue;
		consts = lappend(consts,
						 makeConst(key->vartype, key->vartypmod, key->varcollid,
								   get_typlen(key->vartype),
								   OidInputFunctionCall(typinput, TextDatumGetCString(elems[i]),
														typioparam, key->vartypmod),
								   false, get_typbyval(key->vartype)));
	}
	return consts;
}

/* Context of the public-group rewrite. */
typedef struct DpGroupRewrite
{
	int			nkeys;
	AttrNumber	atts[INDEX_MAX_KEYS];	/* grouped columns of the protected table */
	int			values_rti;		/* the VALUES list of public keys */
	Node	   *real_row;		/* "<table>.ctid IS NOT NULL" */
} DpGroupRewrite;

/* Mutator: grouped columns outside aggregates read the key list; dp aggregates skip phantom rows. */
static Node *
DpGroupMutator(Node *node, DpGroupRewrite *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
	{
		Aggref	   *a = (Aggref *) copyObject(node);

		a->aggfilter = a->aggfilter ?
			(Expr *) makeBoolExpr(AND_EXPR, list_make2(a->aggfilter, copyObject(cxt->real_row)), -1) :
			(Expr *) copyObject(cxt->real_row);
		return (Node *) a;
	}
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup == 0 && v->varno == 1)
			for (int i = 0; i < cxt->nkeys; i++)
				if (cxt->atts[i] == v->varattno)
					return (Node *) makeVar(cxt->values_rti, i + 1, v->vartype, v->vartypmod,
											v->varcollid, 0);
		return node;
	}
	return expression_tree_mutator(node, DpGroupMutator, cxt);
}

/* The columns of range-table entry rti (a table or a subquery) as join alias names and Vars. */
static void
DpRteColumns(RangeTblEntry *rte, int rti, List **names, List **vars, List **cols)
{
	if (rte->rtekind == RTE_RELATION)
	{
		Relation	rel = table_open(rte->relid, AccessShareLock);

		for (int a = 0; a < RelationGetDescr(rel)->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), a);

			*names = lappend(*names, makeString(pstrdup(att->attisdropped ? "" : NameStr(att->attname))));
			*vars = lappend(*vars, att->attisdropped ? NULL :
							makeVar(rti, att->attnum, att->atttypid, att->atttypmod, att->attcollation, 0));
			*cols = lappend_int(*cols, att->attnum);
		}
		table_close(rel, AccessShareLock);
	}
	else
	{
		ListCell   *lc;

		Assert(rte->rtekind == RTE_SUBQUERY);
		foreach(lc, rte->subquery->targetList)
		{
			TargetEntry *te = lfirst_node(TargetEntry, lc);

			if (te->resjunk)
				continue;
			*names = lappend(*names, makeString(pstrdup(te->resname)));
			*vars = lappend(*vars, makeVar(rti, te->resno, exprType((Node *) te->expr),
										   exprTypmod((Node *) te->expr), exprCollation((Node *) te->expr), 0));
			*cols = lappend_int(*cols, te->resno);
		}
	}
}

/*
 * GROUP BY on columns whose values the DBA declared public: every
 * combination of public keys appears, empty groups too (their aggregates get
 * noise on an empty input), and rows with other keys are ignored.  The query
 * becomes
 *     FROM (VALUES <public keys>) k LEFT JOIN <table> ON <table>.col = k.col AND <WHERE>
 *     GROUP BY k.col
 * with every dp aggregate filtered to the table's real rows (real_row).  No
 * partition selection is needed: the key set is public.  The query's only
 * range-table entry is the table, or the per-unit subquery of a table with a
 * privacy unit (DpBoundUnits); arrs holds the key lists of the GROUP BY
 * columns, in order.
 */
static void
DpRewritePublicGroupsCore(Query *q, ArrayType **arrs, Node *real_row)
{
	DpGroupRewrite cxt;
	List	   *keylists[INDEX_MAX_KEYS];
	Oid			types[INDEX_MAX_KEYS];
	int32		typmods[INDEX_MAX_KEYS];
	Oid			colls[INDEX_MAX_KEYS];
	Oid			eqops[INDEX_MAX_KEYS];
	List	   *rows = NIL;
	double		ncombos = 1;
	ListCell   *lc;
	RangeTblEntry *vals;
	RangeTblEntry *join;
	JoinExpr   *je;
	List	   *quals = NIL;
	List	   *colnames = NIL;
	List	   *aliasvars = NIL;
	List	   *leftcols = NIL;
	List	   *rightcols = NIL;
	int			join_rti;
	RangeTblEntry *base = rt_fetch(1, q->rtable);

	cxt.nkeys = 0;
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Var		   *key = (Var *) get_sortgroupclause_expr(sgc, q->targetList);
		ArrayType  *arr = arrs[cxt.nkeys];
		int			k = cxt.nkeys;

		keylists[k] = DpPublicKeyConsts(arr, key);
		ncombos *= Max(list_length(keylists[k]), 1);
		cxt.atts[k] = key->varattno;
		types[k] = key->vartype;
		typmods[k] = key->vartypmod;
		colls[k] = key->varcollid;
		eqops[k] = sgc->eqop;
		cxt.nkeys++;
	}
	if (ncombos > DP_MAX_PUBLIC_GROUPS)
		DpGuardRefuse("too many combinations of public keys",
					  psprintf("At most %d groups; this GROUP BY would have %.0f.", DP_MAX_PUBLIC_GROUPS, ncombos));

	/* every combination of the key lists, in declaration order */
	rows = list_make1(NIL);
	for (int k = 0; k < cxt.nkeys; k++)
	{
		List	   *next = NIL;
		ListCell   *r;

		foreach(r, rows)
		{
			ListCell   *c;

			foreach(c, keylists[k])
				next = lappend(next, lappend(list_copy(lfirst(r)), copyObject(lfirst(c))));
		}
		rows = next;
	}

	vals = makeNode(RangeTblEntry);
	vals->rtekind = RTE_VALUES;
	vals->values_lists = rows;
	for (int k = 0; k < cxt.nkeys; k++)
	{
		vals->coltypes = lappend_oid(vals->coltypes, types[k]);
		vals->coltypmods = lappend_int(vals->coltypmods, typmods[k]);
		vals->colcollations = lappend_oid(vals->colcollations, colls[k]);
		colnames = lappend(colnames, makeString(psprintf("key%d", k + 1)));
	}
	vals->eref = makeAlias("dp_public_keys", colnames);
	vals->inFromCl = true;
	q->rtable = lappend(q->rtable, vals);
	cxt.values_rti = list_length(q->rtable);

	/* the join RTE: its columns are the keys, then the table's */
	colnames = list_copy(colnames);
	for (int k = 0; k < cxt.nkeys; k++)
	{
		aliasvars = lappend(aliasvars, makeVar(cxt.values_rti, k + 1, types[k], typmods[k], colls[k], 0));
		leftcols = lappend_int(leftcols, k + 1);
	}
	DpRteColumns(base, 1, &colnames, &aliasvars, &rightcols);
	join = makeNode(RangeTblEntry);
	join->rtekind = RTE_JOIN;
	join->jointype = JOIN_LEFT;
	join->joinmergedcols = 0;
	join->joinaliasvars = aliasvars;
	join->joinleftcols = leftcols;
	join->joinrightcols = rightcols;
	join->eref = makeAlias("unnamed_join", colnames);
	join->inFromCl = true;
	q->rtable = lappend(q->rtable, join);
	join_rti = list_length(q->rtable);

	for (int k = 0; k < cxt.nkeys; k++)
	{
		OpExpr	   *eq = (OpExpr *) make_opclause(eqops[k], BOOLOID, false,
												  (Expr *) makeVar(1, cxt.atts[k], types[k], typmods[k], colls[k], 0),
												  (Expr *) makeVar(cxt.values_rti, k + 1, types[k], typmods[k], colls[k], 0),
												  InvalidOid, colls[k]);

		set_opfuncid(eq);
		quals = lappend(quals, eq);
	}
	if (q->jointree->quals)
		quals = lappend(quals, q->jointree->quals);
	je = makeNode(JoinExpr);
	je->jointype = JOIN_LEFT;
	je->isNatural = false;
	je->larg = (Node *) makeNode(RangeTblRef);
	((RangeTblRef *) je->larg)->rtindex = cxt.values_rti;
	je->rarg = (Node *) makeNode(RangeTblRef);
	((RangeTblRef *) je->rarg)->rtindex = 1;
	je->quals = list_length(quals) == 1 ? linitial(quals) : (Node *) makeBoolExpr(AND_EXPR, quals, -1);
	je->rtindex = join_rti;
	q->jointree = makeFromExpr(list_make1(je), NULL);

	cxt.real_row = real_row;
	q->targetList = (List *) DpGroupMutator((Node *) q->targetList, &cxt);
	q->havingQual = DpGroupMutator(q->havingQual, &cxt);
}

/* "<expr> IS NOT NULL" */
static Node *
DpIsNotNull(Expr *arg)
{
	NullTest   *nt = makeNode(NullTest);

	nt->arg = arg;
	nt->nulltesttype = IS_NOT_NULL;
	nt->argisrow = false;
	nt->location = -1;
	return (Node *) nt;
}

/*
 * The public key lists of the GROUP BY columns (columns of relid, the query's
 * range-table entry 1... or keyrti), or false if some key has none.
 */
static bool
DpGroupPublicKeys(Query *q, Oid relid, int keyrti, ArrayType **arrs)
{
	int			k = 0;
	ListCell   *lc;

	if (list_length(q->groupClause) > INDEX_MAX_KEYS)
		return false;
	foreach(lc, q->groupClause)
	{
		Var		   *key = (Var *) get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc), q->targetList);

		if (!IsA(key, Var) || key->varno != keyrti)
			return false;
		arrs[k] = DpPublicKeys(relid, get_attname(relid, key->varattno, false));
		if (arrs[k] == NULL)
			return false;
		k++;
	}
	return true;
}

/* GROUP BY on public keys of a query reading one protected table (see DpRewritePublicGroupsCore). */
static bool
DpRewritePublicGroups(Query *q, Oid relid)
{
	ArrayType  *arrs[INDEX_MAX_KEYS];

	if (list_length(q->rtable) != 1 || !DpGroupPublicKeys(q, relid, 1, arrs))
		return false;
	DpRewritePublicGroupsCore(q, arrs,
							  DpIsNotNull((Expr *) makeVar(1, SelfItemPointerAttributeNumber, TIDOID, -1, InvalidOid, 0)));
	return true;
}

/* ------------------------------------------------------------------------
 * Privacy units: per-unit contribution bounding
 * ------------------------------------------------------------------------
 *
 * A dp query on a table with a privacy unit (dp_pg.protect(tbl, unit, g, r),
 * or dp_pg.privacy_unit for a trusted role) is rewritten, before planning,
 * into two levels:
 *
 *   SELECT <keys>, <bounded dp aggregates over the contributions>
 *   FROM (SELECT unit, <cell>, <one contribution per dp aggregate>,
 *                row_number() OVER (PARTITION BY unit
 *                                   ORDER BY dp_pg.unit_priority()) AS dp_rank
 *         FROM <the query's FROM and WHERE>
 *         GROUP BY unit, <cell>) dp_units
 *   WHERE dp_rank <= g
 *   GROUP BY <keys>
 *
 * The cell is the GROUP BY key, or for a lone dp_histogram its key (the bin
 * of x for the equal-width form); without either there is one cell and no
 * ranking.  Per (unit, cell) the inner level computes, exactly:
 *   count:      least(count, r)
 *   sum:        least(greatest(sum(clamp(x, lo, hi)), r*lo), r*hi)
 *   histogram:  least(count, r) as the weight of the cell's key
 * and the ranking keeps a uniformly random set of at most g cells per unit
 * (priorities from OpenSSL).  The outer dp aggregates are dp_pg.bounded_*,
 * which clamp each contribution again (to [0, r] or [r*lo, r*hi]) and plan
 * their noise for sensitivity r per cell with the mechanism split over g
 * cells (cost.c).  So adding or removing one unit changes at most g released
 * values, each by at most the per-cell bound, whatever the unit's rows.
 *
 * Parallel plans: the inner GROUP BY is finalized (partial states of the
 * workers combined) before the ranking and the outer aggregates, so a unit
 * whose rows are read by several workers is still one unit.  Memory: the
 * inner level is PostgreSQL's hash aggregation (one small group per unit and
 * cell, spilled to disk beyond work_mem) and a sort for the ranking.
 */

/* How one table's units are bounded in this query. */
typedef struct DpUnitBound
{
	AttrNumber	attno;			/* unit column */
	int32		groups;			/* g: cells per unit */
	int32		rows;			/* r: rows (or row-equivalents) per cell */
} DpUnitBound;

/* The bounded form of one dp aggregate of the query. */
typedef struct DpBoundedAgg
{
	Aggref	   *orig;			/* the user's call */
	const DpAggKind *kind;
	Node	   *replacement;	/* the outer-level dp_pg.bounded_* call */
} DpBoundedAgg;

/* Context of the rewrite. */
typedef struct DpUnitRewrite
{
	Query	   *q1;				/* the inner (per unit and cell) query */
	int			prot_rti;
	const DpUnitBound *ub;
	ParseState *pstate;
	List	   *aggs;			/* DpBoundedAgg * */
	int			nkeys;
	Var		   *keys[INDEX_MAX_KEYS];	/* original GROUP BY key Vars */
	AttrNumber	keycols[INDEX_MAX_KEYS];	/* their columns in q1 */
	int32		groups;			/* g, or 1 without cells */
} DpUnitRewrite;

/* Collect the dp aggregates of an expression. */
static bool
DpCollectDpAggs(Node *node, List **aggs)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		const DpAggKind *kind = DpKindOfAggregate(((Aggref *) node)->aggfnoid);

		if (kind != NULL)
			*aggs = lappend(*aggs, node);
		return false;
	}
	return expression_tree_walker(node, DpCollectDpAggs, aggs);
}

/* The OID of function schema.name(argtypes), or ERROR (installation incomplete). */
static Oid
DpLookupFunc(const char *schema, const char *name, int nargs, const Oid *argtypes)
{
	List	   *fname = schema ? list_make2(makeString((char *) schema), makeString((char *) name))
		: list_make1(makeString((char *) name));

	return LookupFuncName(fname, nargs, argtypes, false);
}

/* Append a target entry to q1; returns its resno. */
static AttrNumber
DpAddColumn(Query *q1, Expr *expr, const char *name, bool junk)
{
	TargetEntry *te = makeTargetEntry(expr, list_length(q1->targetList) + 1, pstrdup(name), junk);

	q1->targetList = lappend(q1->targetList, te);
	return te->resno;
}

/* Make q1's column resno a GROUP BY (or window) key; returns the clause. */
static SortGroupClause *
DpSortGroupFor(Query *q1, AttrNumber resno, bool need_sort)
{
	TargetEntry *te = list_nth_node(TargetEntry, q1->targetList, resno - 1);
	Oid			type = exprType((Node *) te->expr);
	Oid			sortop;
	Oid			eqop;
	bool		hashable;
	SortGroupClause *sgc = makeNode(SortGroupClause);
	Index		ref = 0;
	ListCell   *lc;

	get_sort_group_operators(type, need_sort, true, false, &sortop, &eqop, NULL, &hashable);
	if (te->ressortgroupref == 0)
	{
		foreach(lc, q1->targetList)
			ref = Max(ref, lfirst_node(TargetEntry, lc)->ressortgroupref);
		te->ressortgroupref = ref + 1;
	}
	sgc->tleSortGroupRef = te->ressortgroupref;
	sgc->eqop = eqop;
	sgc->sortop = sortop;
	sgc->nulls_first = false;
	sgc->hashable = hashable;
	return sgc;
}

/* An aggregate call fn(args) of result type rettype. */
static Aggref *
DpMakeAggref(Oid fn, Oid rettype, List *args, Oid inputcollid, Expr *filter, bool star)
{
	Aggref	   *a = makeNode(Aggref);
	ListCell   *lc;
	int			i = 1;

	a->aggfnoid = fn;
	a->aggtype = rettype;
	a->aggcollid = InvalidOid;
	a->inputcollid = inputcollid;
	a->aggtranstype = InvalidOid;
	a->aggargtypes = NIL;
	a->args = NIL;
	foreach(lc, args)
	{
		a->aggargtypes = lappend_oid(a->aggargtypes, exprType(lfirst(lc)));
		a->args = lappend(a->args, makeTargetEntry(lfirst(lc), i++, NULL, false));
	}
	a->aggdirectargs = NIL;
	a->aggorder = NIL;
	a->aggdistinct = NIL;
	a->aggfilter = filter;
	a->aggstar = star;
	a->aggvariadic = false;
	a->aggkind = AGGKIND_NORMAL;
	a->agglevelsup = 0;
	a->aggsplit = AGGSPLIT_SIMPLE;
	a->aggno = -1;
	a->aggtransno = -1;
	a->location = -1;
	return a;
}

/* LEAST / GREATEST of two expressions of type type. */
static Expr *
DpMinMax(MinMaxOp op, Oid type, Expr *a, Expr *b)
{
	MinMaxExpr *m = makeNode(MinMaxExpr);

	m->minmaxtype = type;
	m->minmaxcollid = InvalidOid;
	m->inputcollid = InvalidOid;
	m->op = op;
	m->args = list_make2(a, b);
	m->location = -1;
	return (Expr *) m;
}

/* expr coerced to type (an implicit or assignment cast, e.g. int4 -> int8 -> numeric). */
static Expr *
DpCoerce(ParseState *pstate, Expr *expr, Oid type)
{
	Node	   *n = coerce_to_target_type(pstate, (Node *) expr, exprType((Node *) expr), type, -1,
										  COERCION_EXPLICIT, COERCE_IMPLICIT_CAST, -1);

	if (n == NULL)
		elog(ERROR, "dp_pg: cannot cast type %s to %s", format_type_be(exprType((Node *) expr)), format_type_be(type));
	return (Expr *) n;
}

/*
 * a op b, op a built-in operator: looked up in pg_catalog explicitly, never
 * through the search_path (where a user could shadow it with a function of
 * his own that would then see private values).
 */
static Expr *
DpOp(ParseState *pstate, const char *op, Expr *a, Expr *b)
{
	return make_op(pstate, list_make2(makeString("pg_catalog"), makeString((char *) op)),
				   (Node *) a, (Node *) b, NULL, -1);
}

static Const *
DpInt8Const(int64 v)
{
	return makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(v), false, FLOAT8PASSBYVAL);
}

static Const *
DpInt4Const(int32 v)
{
	return makeConst(INT4OID, -1, InvalidOid, sizeof(int32), Int32GetDatum(v), false, true);
}

/* The i-th (0-based) argument expression of an Aggref. */
static Expr *
DpAggArg(Aggref *a, int i)
{
	return (Expr *) copyObject(list_nth_node(TargetEntry, a->args, i)->expr);
}

/* The mechanism argument of a call, or the default mechanism as a constant. */
static Expr *
DpAggMechanism(Aggref *a, const DpAggKind *kind)
{
	if (kind->mech_argno >= 0)
		return DpAggArg(a, kind->mech_argno);
	return (Expr *) DpMechanismConst(dp_default_mechanism);
}

/* a AND b (either may be NULL). */
static Expr *
DpAnd(Expr *a, Expr *b)
{
	if (a == NULL)
		return b;
	if (b == NULL)
		return a;
	return makeBoolExpr(AND_EXPR, list_make2(a, b), -1);
}

/* Build the inner contribution(s) and the outer bounded call of one dp aggregate. */
static void
DpBoundOneAgg(DpUnitRewrite *cxt, DpBoundedAgg *ba, int n)
{
	Query	   *q1 = cxt->q1;
	Aggref	   *a = ba->orig;
	const DpAggKind *kind = ba->kind;
	ParseState *pstate = cxt->pstate;
	int64		r = cxt->ub->rows;
	Oid			mechtype = DpMechanismType();
	char		name[NAMEDATALEN];
	Expr	   *filter = (Expr *) copyObject(a->aggfilter);

	snprintf(name, sizeof(name), "dp_contribution%d", n);

	if (kind == &dp_count_star_kind || kind == &dp_count_kind)
	{
		/* least(count, r): the same as counting r sampled rows of the unit */
		Aggref	   *cnt;
		AttrNumber	col;
		Oid			argtypes[5] = {INT8OID, INT8OID, INT8OID, mechtype, INT4OID};

		if (kind == &dp_count_star_kind)
			cnt = DpMakeAggref(F_COUNT_, INT8OID, NIL, InvalidOid, filter, true);
		else
			cnt = DpMakeAggref(F_COUNT_ANY, INT8OID, list_make1(DpAggArg(a, 0)), a->inputcollid, filter, false);
		col = DpAddColumn(q1, DpMinMax(IS_LEAST, INT8OID, (Expr *) cnt, (Expr *) DpInt8Const(r)), name, false);
		ba->replacement = (Node *)
			DpMakeAggref(DpLookupFunc("dp_pg", "bounded_count", 5, argtypes), INT8OID,
						 list_make5(makeVar(1, col, INT8OID, -1, InvalidOid, 0),
									DpInt8Const(0), DpInt8Const(r),
									DpAggMechanism(a, kind), DpInt4Const(cxt->groups)),
						 InvalidOid, NULL, false);
	}
	else if (kind == &dp_sum_int_kind || kind == &dp_sum_int8_kind ||
			 kind == &dp_sum_float8_kind || kind == &dp_sum_numeric_kind)
	{
		Oid			t = linitial_oid(a->aggargtypes);
		Oid			ct = (t == FLOAT8OID || t == NUMERICOID) ? t : INT8OID;	/* contribution / outer type */
		Oid			st;			/* type of sum(t) */
		Expr	   *x = DpAggArg(a, 0);
		Expr	   *lo = DpAggArg(a, 1);
		Expr	   *hi = DpAggArg(a, 2);
		Expr	   *inner;
		Expr	   *sum;
		Expr	   *rlo;
		Expr	   *rhi;
		AttrNumber	col;
		Oid			argtypes[5];
		Oid			sumfn;

		/* the unit's sum of clamped values (NULL and NaN skipped, as dp_sum does) */
		inner = DpMinMax(IS_LEAST, t, DpMinMax(IS_GREATEST, t, x, lo), hi);
		if (t == FLOAT8OID || t == NUMERICOID)
		{
			Expr	   *nan;

			if (t == FLOAT8OID)
				nan = (Expr *) makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
										 Float8GetDatum(get_float8_nan()), false, FLOAT8PASSBYVAL);
			else
				nan = (Expr *) makeConst(NUMERICOID, -1, InvalidOid, -1,
										 DirectFunctionCall3(numeric_in, CStringGetDatum("NaN"),
															 ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)),
										 false, false);
			filter = DpAnd(filter, DpOp(pstate, "<>", DpAggArg(a, 0), nan));
		}
		if (t == FLOAT8OID)
			sumfn = DpLookupFunc("dp_pg", "unit_float_sum", 1, &t);	/* no overflow ERROR */
		else
			sumfn = LookupFuncName(list_make2(makeString("pg_catalog"), makeString("sum")), 1, &t, false);
		st = get_func_rettype(sumfn);
		sum = (Expr *) DpMakeAggref(sumfn, st, list_make1(inner), InvalidOid, filter, false);
		/* clamped to [r*lo, r*hi] in the sum's type */
		rlo = DpOp(pstate, "*", DpCoerce(pstate, (Expr *) DpInt8Const(r), st), DpCoerce(pstate, DpAggArg(a, 1), st));
		rhi = DpOp(pstate, "*", DpCoerce(pstate, (Expr *) DpInt8Const(r), st), DpCoerce(pstate, DpAggArg(a, 2), st));
		sum = DpMinMax(IS_LEAST, st, DpMinMax(IS_GREATEST, st, sum, rlo), rhi);
		if (st != ct)
		{
			/* int8 input: numeric sum, within int8 once clamped into the int8 range */
			sum = DpMinMax(IS_LEAST, st,
						   DpMinMax(IS_GREATEST, st, sum, DpCoerce(pstate, (Expr *) DpInt8Const(PG_INT64_MIN), st)),
						   DpCoerce(pstate, (Expr *) DpInt8Const(PG_INT64_MAX), st));
			sum = DpCoerce(pstate, sum, ct);
		}
		col = DpAddColumn(q1, sum, name, false);
		argtypes[0] = argtypes[1] = argtypes[2] = ct;
		argtypes[3] = mechtype;
		argtypes[4] = INT4OID;
		ba->replacement = (Node *)
			DpMakeAggref(DpLookupFunc("dp_pg", "bounded_sum", 5, argtypes), ct,
						 list_make5(makeVar(1, col, ct, -1, InvalidOid, 0),
									DpOp(pstate, "*", DpCoerce(pstate, (Expr *) DpInt8Const(r), ct), DpCoerce(pstate, lo, ct)),
									DpOp(pstate, "*", DpCoerce(pstate, (Expr *) DpInt8Const(r), ct), DpCoerce(pstate, hi, ct)),
									DpAggMechanism(a, kind), DpInt4Const(cxt->groups)),
						 InvalidOid, NULL, false);
	}
	else if (kind == &dp_histogram_bins_kind || kind == &dp_histogram_width_kind ||
			 kind == &dp_histogram_keys_kind)
	{
		/* the cell is the key (or bin): q1 groups by it; the weight is least(rows, r) */
		Expr	   *cell;
		AttrNumber	cellcol;
		AttrNumber	wcol;
		Expr	   *wvar;
		List	   *args;
		const char *fname;
		Oid		   *argtypes;
		int			nargs;
		Expr	   *keyarg = DpAggArg(a, 0);

		if (kind == &dp_histogram_width_kind)
		{
			Oid			bt[4] = {FLOAT8OID, FLOAT8OID, FLOAT8OID, INT4OID};

			cell = (Expr *) makeFuncExpr(DpLookupFunc("dp_pg", "histogram_bucket", 4, bt), INT4OID,
										 list_make4(DpAggArg(a, 0), DpAggArg(a, 1), DpAggArg(a, 2), DpAggArg(a, 3)),
										 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		}
		else
			cell = keyarg;
		cellcol = DpAddColumn(q1, cell, "dp_cell", false);
		q1->groupClause = lappend(q1->groupClause, DpSortGroupFor(q1, cellcol, false));
		/* only rows this histogram counts take a cell (a lone histogram: its FILTER is the query's) */
		q1->jointree->quals = (Node *) DpAnd(DpAnd((Expr *) q1->jointree->quals, filter),
											 (Expr *) DpIsNotNull((Expr *) copyObject(cell)));
		wcol = DpAddColumn(q1, DpMinMax(IS_LEAST, INT8OID,
										(Expr *) DpMakeAggref(F_COUNT_, INT8OID, NIL, InvalidOid, NULL, true),
										(Expr *) DpInt8Const(r)), name, false);
		wvar = (Expr *) makeVar(1, wcol, INT8OID, -1, InvalidOid, 0);
		if (kind == &dp_histogram_width_kind)
		{
			/* a value of the cell: its bin is the cell (min of float8 ignores NULL; NaN has no cell) */
			Oid			f8 = FLOAT8OID;
			AttrNumber	xcol = DpAddColumn(q1, (Expr *) DpMakeAggref(LookupFuncName(list_make2(makeString("pg_catalog"), makeString("min")), 1, &f8, false),
																	 FLOAT8OID, list_make1(keyarg), InvalidOid, NULL, false),
										   "dp_cell_value", false);

			args = list_make4(makeVar(1, xcol, FLOAT8OID, -1, InvalidOid, 0), DpAggArg(a, 1), DpAggArg(a, 2), DpAggArg(a, 3));
			args = lappend(args, DpAggArg(a, 4));
			fname = "bounded_histogram_width";
		}
		else
		{
			Var		   *kv = makeVar(1, cellcol, exprType((Node *) keyarg), exprTypmod((Node *) keyarg),
									 exprCollation((Node *) keyarg), 0);

			if (kind == &dp_histogram_bins_kind)
			{
				args = list_make3(kv, DpAggArg(a, 1), DpAggArg(a, 2));
				fname = "bounded_histogram_bins";
			}
			else
			{
				args = list_make2(kv, DpAggArg(a, 1));
				fname = "bounded_histogram_keys";
			}
		}
		args = lappend(args, wvar);
		args = lappend(args, DpInt8Const(r));
		args = lappend(args, DpInt4Const(cxt->groups));
		{
			List	   *fnames = list_make2(makeString("dp_pg"), makeString((char *) fname));
			FuncCandidateList cands = FuncnameGetCandidates(fnames, -1, NIL, false, false, false, false);

			if (cands == NULL || cands->next != NULL)
				elog(ERROR, "dp_pg: function dp_pg.%s is missing or ambiguous", fname);
			nargs = cands->nargs;
			argtypes = cands->args;
			if (nargs != list_length(args))
				elog(ERROR, "dp_pg: dp_pg.%s has %d arguments", fname, nargs);
			ba->replacement = (Node *) DpMakeAggref(cands->oid, JSONBOID, args, a->inputcollid, NULL, false);
		}
		(void) argtypes;
	}
	else if (kind == &dp_avg_kind)
	{
		/* the unit's mean of clamped values, weighted by least(its rows, r) */
		Expr	   *x = DpAggArg(a, 0);
		Expr	   *inner = DpMinMax(IS_LEAST, FLOAT8OID, DpMinMax(IS_GREATEST, FLOAT8OID, x, DpAggArg(a, 1)),
									 DpAggArg(a, 2));
		Expr	   *nan = (Expr *) makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
											 Float8GetDatum(get_float8_nan()), false, FLOAT8PASSBYVAL);
		Oid			f8 = FLOAT8OID;
		Oid			sumfn = DpLookupFunc("dp_pg", "unit_float_sum", 1, &f8);
		AttrNumber	mcol;
		AttrNumber	wcol;
		List	   *args;
		Oid			argtypes[7] = {FLOAT8OID, FLOAT8OID, FLOAT8OID, mechtype, INT8OID, INT8OID, INT4OID};

		filter = DpAnd(filter, DpOp(pstate, "<>", DpAggArg(a, 0), nan));
		/* mean = sum / count, without PostgreSQL's overflow ERRORs (+-Infinity is clamped later) */
		mcol = DpAddColumn(q1, DpOp(pstate, "/",
									(Expr *) DpMakeAggref(sumfn, FLOAT8OID, list_make1(inner), InvalidOid,
														  (Expr *) copyObject(filter), false),
									DpCoerce(pstate, (Expr *) DpMakeAggref(F_COUNT_ANY, INT8OID, list_make1(DpAggArg(a, 0)),
																		   InvalidOid, (Expr *) copyObject(filter), false),
											 FLOAT8OID)),
						   name, false);
		snprintf(name, sizeof(name), "dp_weight%d", n);
		wcol = DpAddColumn(q1, DpMinMax(IS_LEAST, INT8OID,
										(Expr *) DpMakeAggref(F_COUNT_ANY, INT8OID, list_make1(DpAggArg(a, 0)),
															  InvalidOid, filter, false),
										(Expr *) DpInt8Const(r)), name, false);
		args = list_make5(makeVar(1, mcol, FLOAT8OID, -1, InvalidOid, 0), DpAggArg(a, 1), DpAggArg(a, 2),
						  DpAggArg(a, 3), makeVar(1, wcol, INT8OID, -1, InvalidOid, 0));
		args = lappend(args, DpInt8Const(r));
		args = lappend(args, DpInt4Const(cxt->groups));
		ba->replacement = (Node *) DpMakeAggref(DpLookupFunc("dp_pg", "bounded_avg", 7, argtypes), FLOAT8OID,
												args, InvalidOid, NULL, false);
	}
	else
		elog(ERROR, "dp_pg: no bounded form of %s", kind->name);
}

/* Mutator: dp aggregates become their bounded calls, GROUP BY columns read q1. */
static Node *
DpUnitMutator(Node *node, DpUnitRewrite *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
	{
		ListCell   *lc;

		foreach(lc, cxt->aggs)
		{
			DpBoundedAgg *ba = lfirst(lc);

			if (ba->orig == (Aggref *) node)
				return copyObject(ba->replacement);
		}
		elog(ERROR, "dp_pg: an aggregate of a bounded query was not rewritten");
	}
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		for (int k = 0; k < cxt->nkeys; k++)
			if (v->varlevelsup == 0 && v->varno == cxt->keys[k]->varno && v->varattno == cxt->keys[k]->varattno)
				return (Node *) makeVar(1, cxt->keycols[k], v->vartype, v->vartypmod, v->varcollid, 0);
		elog(ERROR, "dp_pg: a column outside the GROUP BY keys in a bounded query");
	}
	return expression_tree_mutator(node, DpUnitMutator, cxt);
}

/*
 * An upper bound on the number of cells a bounded query can release whatever
 * the data: the public key combinations of its GROUP BY, or the bins of its
 * histogram when they are constants; INT64_MAX when unknown (partition
 * selection, histogram keys, bound parameters).
 */
static int64
DpReleasedCellsAtMost(Query *q, List *aggs, bool public_groups, ArrayType **pubkeys)
{
	if (q->groupClause != NIL)
	{
		int64		n = 1;

		if (!public_groups)
			return PG_INT64_MAX;
		for (int k = 0; k < list_length(q->groupClause); k++)
		{
			n *= Max(ArrayGetNItems(ARR_NDIM(pubkeys[k]), ARR_DIMS(pubkeys[k])), 1);
			if (n > PG_INT32_MAX)
				return PG_INT64_MAX;
		}
		return n;
	}
	if (list_length(aggs) == 1)
	{
		Aggref	   *a = linitial(aggs);
		const DpAggKind *kind = DpKindOfAggregate(a->aggfnoid);
		Node	   *arg;

		if (kind == &dp_histogram_bins_kind)
		{
			arg = eval_const_expressions(NULL, copyObject((Node *) list_nth_node(TargetEntry, a->args, 1)->expr));
			if (IsA(arg, Const) && !((Const *) arg)->constisnull)
			{
				ArrayType  *arr = DatumGetArrayTypeP(((Const *) arg)->constvalue);

				return ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
			}
		}
		if (kind == &dp_histogram_width_kind)
		{
			arg = eval_const_expressions(NULL, copyObject((Node *) list_nth_node(TargetEntry, a->args, 3)->expr));
			if (IsA(arg, Const) && !((Const *) arg)->constisnull)
				return Max(DatumGetInt32(((Const *) arg)->constvalue), 1);
		}
	}
	return PG_INT64_MAX;
}

/*
 * Rewrite q (validated: one protected table at prot_rti, dp aggregates,
 * GROUP BY on columns) so that each unit's contribution is bounded before
 * noise (see the section comment).  relid: for the public keys of GROUP BY
 * columns of a protected table.  Adds partition selection or the public-key
 * join for GROUP BY, as for tables without a unit.
 */
static void
DpBoundUnits(Query *q, int prot_rti, Oid relid, bool is_protected, const DpUnitBound *ub)
{
	DpUnitRewrite cxt;
	Query	   *q1 = makeNode(Query);
	List	   *found = NIL;
	List	   *distinct = NIL;
	ListCell   *lc;
	RangeTblEntry *rte = rt_fetch(prot_rti, q->rtable);
	RangeTblEntry *sub;
	List	   *colnames = NIL;
	AttrNumber	unitcol;
	AttrNumber	rankcol = 0;
	bool		has_histogram = false;
	bool		cells;
	bool		ranked;
	int64		max_cells;
	ArrayType  *pubkeys[INDEX_MAX_KEYS];
	bool		public_groups = false;
	int			n = 0;

	memset(&cxt, 0, sizeof(cxt));
	cxt.q1 = q1;
	cxt.prot_rti = prot_rti;
	cxt.ub = ub;
	cxt.pstate = make_parsestate(NULL);

	DpCollectDpAggs((Node *) q->targetList, &found);
	DpCollectDpAggs(q->havingQual, &found);
	foreach(lc, found)
	{
		Aggref	   *a = lfirst(lc);
		const DpAggKind *kind = DpKindOfAggregate(a->aggfnoid);
		ListCell   *lc2;
		bool		dup = false;

		if (DpAggNumArgs(a->args) != kind->nargs)
			DpGuardRefuse("dp_pg's internal aggregates cannot be called directly on a table with a privacy unit",
						  "dp_pg writes them itself.");
		if (kind == &dp_histogram_bins_kind || kind == &dp_histogram_width_kind || kind == &dp_histogram_keys_kind)
			has_histogram = true;
		foreach(lc2, distinct)
			if (equal(lfirst(lc2), a))
				dup = true;
		if (!dup)
			distinct = lappend(distinct, a);
	}
	if (has_histogram && (list_length(distinct) > 1 || q->groupClause != NIL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("on a table with a privacy unit, dp_histogram must be the only dp aggregate of its query, without GROUP BY"),
				 errdetail("Its bins are the cells each unit's contribution is bounded over."),
				 errhint("Run the histogram in a query of its own.")));
	cells = has_histogram || q->groupClause != NIL;

	/* public keys of the GROUP BY columns (before the query changes) */
	if (q->groupClause != NIL && is_protected)
		public_groups = DpGroupPublicKeys(q, relid, prot_rti, pubkeys);

	/*
	 * When the released cells are at most g whatever the data (every public
	 * key combination, or the bins of a histogram with constant bins), no
	 * unit can reach more than g of them: the ranking is not needed (cells
	 * outside them are never released), and fewer than g cells split the
	 * mechanism fewer ways.
	 */
	max_cells = cells ? DpReleasedCellsAtMost(q, distinct, public_groups, pubkeys) : 1;
	ranked = cells && max_cells > ub->groups;
	/* a unit reaches at most this many released cells: the mechanism is split over them */
	cxt.groups = (int32) Min((int64) ub->groups, Max(max_cells, 1));

	/* the inner query: the user's FROM and WHERE, grouped by unit and cell */
	q1->commandType = CMD_SELECT;
	q1->querySource = QSRC_ORIGINAL;
	q1->canSetTag = true;
	q1->rtable = q->rtable;
	q1->jointree = q->jointree;
	q1->hasAggs = true;
	{
		Form_pg_attribute att;
		Relation	rel = table_open(rte->relid, AccessShareLock);

		if (ub->attno < 1 || ub->attno > RelationGetDescr(rel)->natts ||
			(att = TupleDescAttr(RelationGetDescr(rel), ub->attno - 1))->attisdropped)
			elog(ERROR, "dp_pg: the privacy unit column of \"%s\" does not exist", RelationGetRelationName(rel));
		unitcol = DpAddColumn(q1, (Expr *) makeVar(prot_rti, ub->attno, att->atttypid, att->atttypmod,
												   att->attcollation, 0), "dp_unit", false);
		table_close(rel, AccessShareLock);
	}
	q1->groupClause = list_make1(DpSortGroupFor(q1, unitcol, ranked));
	DpAddColumn(q1, (Expr *) makeBoolConst(true, false), "dp_present", false);
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Var		   *key = (Var *) get_sortgroupclause_expr(sgc, q->targetList);
		char		kname[NAMEDATALEN];
		TargetEntry *te;
		SortGroupClause *copy = copyObject(sgc);

		snprintf(kname, sizeof(kname), "dp_key%d", cxt.nkeys + 1);
		cxt.keys[cxt.nkeys] = key;
		cxt.keycols[cxt.nkeys] = DpAddColumn(q1, (Expr *) copyObject(key), kname, false);
		te = list_nth_node(TargetEntry, q1->targetList, cxt.keycols[cxt.nkeys] - 1);
		te->ressortgroupref = cxt.keycols[cxt.nkeys] + 1000;
		copy->tleSortGroupRef = te->ressortgroupref;
		q1->groupClause = lappend(q1->groupClause, copy);
		cxt.nkeys++;
	}
	/*
	 * GROUP BY on public keys: rows with undeclared keys are never released,
	 * so they take none of a unit's g cells (key = ANY(<declared keys>)).
	 */
	if (public_groups)
	{
		for (int k = 0; k < cxt.nkeys; k++)
		{
			Var		   *key = cxt.keys[k];
			Oid			arrtype = get_array_type(key->vartype);
			SortGroupClause *sgc = list_nth_node(SortGroupClause, q->groupClause, k);
			List	   *consts = DpPublicKeyConsts(pubkeys[k], key);
			ArrayExpr  *ae;
			ScalarArrayOpExpr *sa;

			if (!OidIsValid(arrtype) || consts == NIL)
				continue;
			ae = makeNode(ArrayExpr);
			ae->array_typeid = arrtype;
			ae->array_collid = key->varcollid;
			ae->element_typeid = key->vartype;
			ae->elements = consts;
			ae->multidims = false;
			ae->location = -1;
			sa = makeNode(ScalarArrayOpExpr);
			sa->opno = sgc->eqop;
			sa->opfuncid = InvalidOid;
			sa->hashfuncid = InvalidOid;
			sa->negfuncid = InvalidOid;
			sa->useOr = true;
			sa->inputcollid = key->varcollid;
			sa->args = list_make2(copyObject(key), ae);
			sa->location = -1;
			set_sa_opfuncid(sa);
			q1->jointree->quals = (Node *) DpAnd((Expr *) q1->jointree->quals, (Expr *) sa);
		}
	}

	foreach(lc, distinct)
	{
		DpBoundedAgg *ba = palloc0(sizeof(DpBoundedAgg));

		ba->orig = lfirst(lc);
		ba->kind = DpKindOfAggregate(ba->orig->aggfnoid);
		DpBoundOneAgg(&cxt, ba, ++n);
		cxt.aggs = lappend(cxt.aggs, ba);
	}
	/* identical calls share the bounded call of the first */
	foreach(lc, found)
	{
		ListCell   *lc2;

		foreach(lc2, cxt.aggs)
		{
			DpBoundedAgg *ba = lfirst(lc2);

			if (ba->orig != lfirst(lc) && equal(ba->orig, lfirst(lc)))
			{
				DpBoundedAgg *alias = palloc(sizeof(DpBoundedAgg));

				*alias = *ba;
				alias->orig = lfirst(lc);
				cxt.aggs = lappend(cxt.aggs, alias);
				break;
			}
		}
	}

	/* at most g cells per unit: rank each unit's cells in random order */
	if (ranked)
	{
		WindowFunc *wf = makeNode(WindowFunc);
		WindowClause *wc = makeNode(WindowClause);
		AttrNumber	prio;

		wf->winfnoid = F_ROW_NUMBER;
		wf->wintype = INT8OID;
		wf->wincollid = InvalidOid;
		wf->inputcollid = InvalidOid;
		wf->args = NIL;
		wf->aggfilter = NULL;
		wf->winref = 1;
		wf->winstar = false;
		wf->winagg = false;
		wf->location = -1;
		rankcol = DpAddColumn(q1, (Expr *) wf, "dp_rank", false);
		prio = DpAddColumn(q1, (Expr *) makeFuncExpr(DpLookupFunc("dp_pg", "unit_priority", 0, NULL), INT8OID, NIL,
													 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL),
						   "dp_priority", true);
		wc->name = NULL;
		wc->refname = NULL;
		wc->partitionClause = list_make1(copyObject(linitial(q1->groupClause)));
		wc->orderClause = list_make1(DpSortGroupFor(q1, prio, true));
		wc->frameOptions = FRAMEOPTION_DEFAULTS;
		wc->winref = 1;
		wc->copiedOrder = false;
		q1->windowClause = list_make1(wc);
		q1->hasWindowFuncs = true;
	}

	/* the outer query reads q1 */
	foreach(lc, q1->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		if (!te->resjunk)
			colnames = lappend(colnames, makeString(pstrdup(te->resname)));
	}
	sub = makeNode(RangeTblEntry);
	sub->rtekind = RTE_SUBQUERY;
	sub->subquery = q1;
	sub->eref = makeAlias("dp_units", colnames);
	sub->lateral = false;
	sub->inh = false;
	sub->inFromCl = true;
	q->targetList = (List *) DpUnitMutator((Node *) q->targetList, &cxt);
	q->havingQual = DpUnitMutator(q->havingQual, &cxt);
	q->rtable = list_make1(sub);
	q->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)),
							   ranked ? (Node *) DpOp(cxt.pstate, "<=",
													 (Expr *) makeVar(1, rankcol, INT8OID, -1, InvalidOid, 0),
													 (Expr *) DpInt8Const(ub->groups)) : NULL);
	((RangeTblRef *) linitial(q->jointree->fromlist))->rtindex = 1;
	q->hasAggs = true;

	/* GROUP BY: every public key, or private partition selection over units */
	if (q->groupClause != NIL)
	{
		if (public_groups)
			DpRewritePublicGroupsCore(q, pubkeys,
									  DpIsNotNull((Expr *) makeVar(1, 2, BOOLOID, -1, InvalidOid, 0)));
		else
			DpAddPartitionKeep(q, cxt.groups);
	}
	free_parsestate(cxt.pstate);
}

/* The unit bound of a protected table's declaration, or false if it has none. */
static bool
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

/* True if the top level of q calls a dp aggregate. */
static bool
DpHasDpAggregate(Query *q)
{
	List	   *found = NIL;

	if (!q->hasAggs || q->commandType != CMD_SELECT)
		return false;
	DpCollectDpAggs((Node *) q->targetList, &found);
	DpCollectDpAggs(q->havingQual, &found);
	return found != NIL;
}

/* Does relation relid have a privacy unit, declared or requested (dp_pg.privacy_unit)? */
static bool
DpIsUnitTable(List *prot, Oid relid)
{
	DpProtected *p = DpFindProtected(prot, relid);

	if (p != NULL)
		return p->has_unit;
	return dp_privacy_unit != NULL && dp_privacy_unit[0] != '\0' &&
		get_attnum(relid, dp_privacy_unit) != InvalidAttrNumber;
}

/* Context of DpUnitUseWalker. */
typedef struct DpUnitUse
{
	List	   *prot;
	bool		dp_aggregate;	/* a dp aggregate somewhere */
	bool		unit_table;		/* a table with a privacy unit somewhere */
} DpUnitUse;

/* Walker over a whole query (every level): dp aggregates and tables with a unit. */
static bool
DpUnitUseWalker(Node *node, DpUnitUse *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref) && DpKindOfAggregate(((Aggref *) node)->aggfnoid) != NULL)
		cxt->dp_aggregate = true;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *r = (RangeTblEntry *) node;

		if (r->rtekind == RTE_RELATION && DpIsUnitTable(cxt->prot, r->relid))
			cxt->unit_table = true;
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, DpUnitUseWalker, cxt, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, DpUnitUseWalker, cxt);
}

/*
 * Bounding for a query that the analyst path did not handle: a top-level dp
 * query reading a protected table with a privacy unit (any role), or reading
 * a table with the column named by dp_pg.privacy_unit (a trusted role's
 * explicit request).  The query must have the dp shape (DpGuardValidate).
 * A dp aggregate elsewhere in a query that reads such a table (a subquery,
 * a CTE, a view) cannot be bounded: ERROR, rather than an answer whose
 * guarantee is per row instead of per person.
 */
static void
DpBoundTrusted(Query *q, List *prot)
{
	ListCell   *lc;
	int			rti = 0;
	int			found_rti = 0;
	DpProtected *target = NULL;
	DpProtected *guc = NULL;
	DpUnitBound ub;
	bool		any_unit = dp_privacy_unit != NULL && dp_privacy_unit[0] != '\0';
	DpUnitUse	use = {prot, false, false};
	int			relations = 0;
	int			protected_relations = 0;

	foreach(lc, prot)
		if (((DpProtected *) lfirst(lc))->has_unit)
			any_unit = true;
	if (!any_unit || q->commandType == CMD_UTILITY)
		return;

	if (DpHasDpAggregate(q))
	{
		foreach(lc, q->rtable)
		{
			RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);
			DpProtected *p;

			rti++;
			if (r->rtekind != RTE_RELATION)
				continue;
			p = DpFindProtected(prot, r->relid);
			relations++;
			if (p != NULL)
				protected_relations++;
			if (p != NULL && p->has_unit)
			{
				target = p;
				found_rti = rti;
			}
			else if (p == NULL && DpIsUnitTable(prot, r->relid))
			{
				if (guc != NULL)
					ereport(ERROR,
							(errcode(ERRCODE_AMBIGUOUS_COLUMN),
							 errmsg("more than one table of this dp query has the privacy unit column \"%s\"", dp_privacy_unit)));
				guc = palloc0(sizeof(DpProtected));
				guc->relid = r->relid;
				guc->has_unit = true;
				namestrcpy(&guc->unit, dp_privacy_unit);
				guc->max_groups = dp_max_groups_contributed;
				guc->max_rows = dp_max_rows_per_unit;
				if (target == NULL)
					found_rti = rti;
			}
		}
		if (target == NULL && guc == NULL && dp_privacy_unit != NULL && dp_privacy_unit[0] != '\0' &&
			relations > 0 && protected_relations == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("no table of this dp query has the privacy unit column \"%s\"", dp_privacy_unit),
					 errhint("SET dp_pg.privacy_unit to a column of the table, or RESET it.")));
	}
	if (target == NULL && guc == NULL)
	{
		/* no top-level bounding: a dp aggregate must not meet a unit table anywhere */
		(void) DpUnitUseWalker((Node *) q, &use);
		if (use.dp_aggregate && use.unit_table)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("dp aggregates over a table with a privacy unit must read it directly in the outermost query"),
					 errdetail("Only that shape bounds each person's contribution; in a subquery, CTE or view the answer would protect rows, not persons."),
					 errhint("SELECT <dp aggregates> FROM <table> [WHERE ...] [GROUP BY <columns>].")));
		return;
	}
	if (target == NULL)
		target = guc;
	(void) DpGuardValidate(q, list_make1(target));
	(void) DpUnitBoundOf(target, &ub);
	DpBoundUnits(q, found_rti, target->relid, guc != target, &ub);
}

/* True if the current user is an analyst (fail closed if unknown). */
static bool
DpCurrentUserIsAnalyst(void)
{
	Oid			roles[DP_MAX_CHARGE_ROLES];

	return DpLedgerChargedRoles(roles) > 0;
}

/* planner_hook: guard analysts' queries on protected tables. */
static PlannedStmt *
DpGuardPlanner(Query *parse, const char *query_string, int cursorOptions,
			   ParamListInfo boundParams)
{
	PlannedStmt *result;
	bool		elevated = false;
	bool		analyst_query = false;

	/*
	 * Superuser sessions skip the guard; anyone else is checked, also inside
	 * a superuser's SECURITY DEFINER function called by an analyst (the
	 * session user is charged and guarded: ledger.c).
	 */
	if (!(superuser() && superuser_arg(GetSessionUserId())))
	{
		List	   *prot = DpProtectedTables();

		if (prot != NIL && DpMaskCatalog(parse, prot))
			elevated = true;	/* the rewrite depends on the user's privileges */
		if (prot != NIL &&
			DpTouchesProtectedWalker((Node *) parse, prot) &&
			DpCurrentUserIsAnalyst())
		{
			RangeTblEntry *rte = DpGuardValidate(parse, prot);
			HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rte->relid));
			DpUnitBound ub;

			if (!HeapTupleIsValid(tup))
				elog(ERROR, "cache lookup failed for relation %u", rte->relid);
			/* this plan, and only this plan, reads the table as its owner */
			rte->checkAsUser = ((Form_pg_class) GETSTRUCT(tup))->relowner;
			ReleaseSysCache(tup);
			elevated = true;
			analyst_query = true;
			if (DpUnitBoundOf(DpFindProtected(prot, rte->relid), &ub))
			{
				int			rti = 1;
				ListCell   *lc;

				foreach(lc, parse->rtable)
				{
					if (lfirst(lc) == rte)
						break;
					rti++;
				}
				DpBoundUnits(parse, rti, rte->relid, true, &ub);
			}
			/* public keys all appear; other keys only through private partition selection */
			else if (parse->groupClause != NIL && !DpRewritePublicGroups(parse, rte->relid))
				DpAddPartitionKeep(parse, 0);
		}
	}
	/* everyone's dp queries on tables with a privacy unit are bounded too */
	if (!analyst_query)
		DpBoundTrusted(parse, DpProtectedTables());

	if (prev_planner)
		result = prev_planner(parse, query_string, cursorOptions, boundParams);
	else
		result = standard_planner(parse, query_string, cursorOptions, boundParams);
	if (elevated)
		result->dependsOnRole = true;
	return result;
}

/* ERROR if an analyst EXPLAINs a plan that reads a protected table (ExecutorStart). */
void
DpGuardExplain(QueryDesc *queryDesc, int eflags)
{
	if (((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 && queryDesc->instrument_options == 0) ||
		(superuser() && superuser_arg(GetSessionUserId())))
		return;
	if (DpPlanTouchesProtected(queryDesc->plannedstmt) && DpCurrentUserIsAnalyst())
		DpGuardRefuse("EXPLAIN is not allowed on a protected table",
					  "Plan estimates and run-time statistics reveal row counts.");
}

/* True if a list of Constraint nodes has a CHECK, DEFAULT or GENERATED expression. */
static bool
DpHasExpressionConstraint(List *constraints)
{
	ListCell   *lc;

	foreach(lc, constraints)
	{
		Constraint *c = (Constraint *) lfirst(lc);

		if (IsA(c, Constraint) &&
			(c->contype == CONSTR_CHECK || c->contype == CONSTR_DEFAULT || c->contype == CONSTR_GENERATED))
			return true;
	}
	return false;
}

/* True if a column definition carries an expression evaluated without planning. */
static bool
DpColumnHasExpression(ColumnDef *col)
{
	return col->raw_default != NULL || col->cooked_default != NULL ||
		DpHasExpressionConstraint(col->constraints);
}

/*
 * True if a DDL statement stores an expression that PostgreSQL later
 * evaluates without planning it (so the guard's catalog masking cannot reach
 * it): domain and table CHECK constraints, column DEFAULT and GENERATED
 * expressions (COPY FROM fills defaults unplanned), trigger WHEN clauses,
 * index expressions and predicates, ALTER COLUMN TYPE ... USING.
 */
static bool
DpStoresUnplannedExpression(Node *stmt)
{
	ListCell   *lc;

	switch (nodeTag(stmt))
	{
		case T_CreateDomainStmt:
			return DpHasExpressionConstraint(((CreateDomainStmt *) stmt)->constraints);
		case T_AlterDomainStmt:
			return ((AlterDomainStmt *) stmt)->subtype == 'C' || ((AlterDomainStmt *) stmt)->subtype == 'T';
		case T_CreateStmt:
			foreach(lc, ((CreateStmt *) stmt)->tableElts)
				if (IsA(lfirst(lc), ColumnDef) && DpColumnHasExpression(lfirst(lc)))
					return true;
			return DpHasExpressionConstraint(((CreateStmt *) stmt)->constraints);
		case T_AlterTableStmt:
			foreach(lc, ((AlterTableStmt *) stmt)->cmds)
			{
				AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

				if ((cmd->subtype == AT_ColumnDefault && cmd->def != NULL) ||
					(cmd->subtype == AT_AddConstraint && cmd->def &&
					 DpHasExpressionConstraint(list_make1(cmd->def))) ||
					(cmd->subtype == AT_AddColumn && cmd->def && IsA(cmd->def, ColumnDef) &&
					 DpColumnHasExpression((ColumnDef *) cmd->def)) ||
					(cmd->subtype == AT_AlterColumnType && cmd->def && IsA(cmd->def, ColumnDef) &&
					 ((ColumnDef *) cmd->def)->raw_default != NULL))
					return true;
			}
			return false;
		case T_CreateTrigStmt:
			return ((CreateTrigStmt *) stmt)->whenClause != NULL;
		case T_IndexStmt:
			if (((IndexStmt *) stmt)->whereClause != NULL)
				return true;
			foreach(lc, ((IndexStmt *) stmt)->indexParams)
				if (((IndexElem *) lfirst(lc))->expr != NULL)
					return true;
			return false;
		default:
			return false;
	}
}

/*
 * ProcessUtility hook.  COPY of a catalog table is not planned, so the size
 * columns of pg_class could not be hidden there: refuse it while protected
 * tables are hidden from the user.  For the same reason an analyst may not
 * store expressions that are evaluated without planning (see
 * DpStoresUnplannedExpression) while the database has protected tables.
 */
static void
DpGuardProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					  ProcessUtilityContext context, ParamListInfo params,
					  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;

	if (IsA(stmt, CopyStmt) && ((CopyStmt *) stmt)->relation != NULL &&
		!(superuser() && superuser_arg(GetSessionUserId())))
	{
		Oid			relid = RangeVarGetRelid(((CopyStmt *) stmt)->relation, NoLock, true);

		if ((relid == RelationRelationId || relid == StatisticRelationId ||
			 relid == StatisticExtRelationId) &&
			DpHiddenRelations(DpProtectedTables()) != NIL)
			DpGuardRefuse("COPY of this catalog is not allowed while protected tables are hidden",
						  "It would show their size; use COPY (SELECT ...) TO instead.");
	}
	if (!(superuser() && superuser_arg(GetSessionUserId())) && DpStoresUnplannedExpression(stmt) &&
		DpProtectedTables() != NIL && (!DpLedgerReady() || DpCurrentUserIsAnalyst()))
		DpGuardRefuse("analysts may not store expressions evaluated outside a query plan",
					  "CHECK, DEFAULT and GENERATED expressions, trigger WHEN clauses, index expressions and "
					  "ALTER TYPE ... USING run unguarded and could read the size of protected tables.");
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
}

/* Install the planner hook (only when preloaded). */
void
DpGuardInit(void)
{
	if (!dp_pg_preloaded)
		return;
	prev_planner = planner_hook;
	planner_hook = DpGuardPlanner;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = DpGuardProcessUtility;
	CacheRegisterRelcacheCallback(DpGuardRelcacheCallback, (Datum) 0);
}
