/*
 * guard/partitions.c — partitioned tables, inheritance parents and their
 * foreign partitions (shards on other servers) under the guard.
 *
 * A protected table's family (common/protected.c, DpFamilyOf) is the table
 * with its partitions and inheritance children at any depth: its
 * declaration — privacy unit, value domains, public keys — holds for every
 * member, now and later.  Here:
 *
 *  - Reads (invariant 3).  An analyst reads a family only through the table
 *    at its top, in a dp query: the planner expands it, prunes partitions
 *    (plan-time and run-time, on public bounds only), runs parallel appends
 *    and partitionwise aggregation, and the bounding per privacy unit sits
 *    above the whole append, so one person's rows are bounded across every
 *    partition.  A member named on its own (SELECT ... FROM a partition, a
 *    view over one) is refused before planning, whatever the privileges on
 *    it; so is an unprotected parent of a protected table (an ancestor),
 *    unless read with ONLY.  After planning, reads.c counts the expanded
 *    members under their root (stmt->appendRelations).
 *
 *  - Changes of the families (invariant 9).  A statement that changes
 *    pg_inherits invalidates every backend's family cache at commit.  A
 *    table that joins a family (CREATE TABLE ... PARTITION OF / INHERITS,
 *    ATTACH PARTITION, ALTER TABLE ... INHERIT) must be one no analyst can
 *    shape: owned by no analyst, no privilege of PUBLIC or of a role an
 *    analyst is a member of, nothing in its dependency closure owned by an
 *    analyst (ddl.c), a foreign table only through postgres_fdw; checked
 *    after the statement, in its transaction, for everyone (a DBA's ATTACH
 *    too; not in binary-upgrade mode).  A table that leaves a family
 *    (DETACH PARTITION, also CONCURRENTLY, and NO INHERIT) stays protected:
 *    before the statement runs (before the first transaction of a
 *    concurrent detach commits) it is protected with the declaration of the
 *    family's root (dp_pg.protect_detached), until a superuser runs
 *    dp_pg.unprotect on it.  The parent is locked first, with the lock the
 *    statement takes, so the order is the statement's own.
 *
 *  - Shards (invariants 4 and 5 on the remote server).  A family may hold
 *    postgres_fdw foreign tables.  Whatever postgres_fdw ships to a remote
 *    server is evaluated by the remote's operators, not by the guard's
 *    total ones; so for a dp query over such a family: the planner's copy
 *    of postgres_fdw's routine for each of its foreign tables cannot push
 *    a join or an aggregate (also partitionwise) down: each is computed
 *    here, once, and charged here, once; every row predicate that
 *    postgres_fdw could ship and that is
 *    not a comparison of a column with a constant or parameter (built-in,
 *    same-type or integer comparison of a basic type, IS [NOT] NULL, a
 *    boolean column, = ANY of a constant array) is wrapped in
 *    dp_pg.keep_local, which no remote server is told it may run, so it is
 *    evaluated here by the guard's rewrite.  After planning, every foreign
 *    scan of a family must scan one foreign table (no pushed join or
 *    aggregate), through postgres_fdw (its handler, in its extension), on a
 *    server that does not list dp_pg among its shippable extensions and
 *    does not ask the remote for estimates (use_remote_estimate would read
 *    the remote's statistics of protected rows), its remote conditions all
 *    of the accepted form, its remote ORDER BY plain columns: otherwise the
 *    query is refused (42501), before anything is charged.  The remote
 *    tables are the DBA's: their column types must be the partitions'
 *    (IMPORT FOREIGN SCHEMA), so that no remote value can fail its
 *    conversion (docs/dba.md).
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/tablecmds.h"
#include "executor/spi.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "guard/guard.h"
#include "plantree.h"

PG_FUNCTION_INFO_V1(dp_check_family);
PG_FUNCTION_INFO_V1(dp_keep_local);

/* A relation's name, schema-qualified where needed, for messages. */
static const char *
DpRelName(Oid relid)
{
	char	   *name = get_rel_name(relid);

	if (name == NULL)
		return psprintf("%u", relid);
	return RelationIsVisible(relid) ? quote_identifier(name) :
		quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), name);
}

/* ------------------------------------------------------------------------
 * Reads
 * ------------------------------------------------------------------------
 */

/* ERROR for an analyst's read of relid, a member or an ancestor of a family. */
static void
DpRefuseFamilyRead(Oid relid, bool inh)
{
	Oid			root;
	DpFamilyKind kind = DpFamilyOf(relid, &root);
	const char *rel;
	const char *top;

	if (kind == DP_FAMILY_MEMBER)
	{
		bool		partition = get_rel_relispartition(relid);

		rel = DpRelName(relid);
		top = DpRelName(root);
		DpGuardRefuseHint(psprintf("%s is %s of protected table %s: analysts read it only through %s", rel,
								   partition ? "a partition" : "an inheritance child", top, top),
						  psprintf("The protection of %s holds for each of its partitions and inheritance children; a dp query "
								   "on %s reads them all, bounded per privacy unit across them.", top, top),
						  partition ?
						  psprintf("Read %s in a dp query and filter on the partition key: only the partitions the filter "
								   "selects are read.", top) :
						  psprintf("Read %s in a dp query (with its children; ONLY %s for its own rows).", top, top));
	}
	if (kind == DP_FAMILY_ANCESTOR && inh)
	{
		rel = DpRelName(relid);
		top = DpRelName(root);
		DpGuardRefuseHint(psprintf("%s holds the rows of protected table %s", rel, top),
						  psprintf("Reading %s reads its partitions or inheritance children, and %s is one of them or "
								   "below one.", rel, top),
						  psprintf("Read %s in a dp query, or ONLY %s for its own rows; a DBA may protect %s itself.",
								   top, rel, rel));
	}
}

/* Walker: every relation of a query tree. */
static bool
DpFamilyReadWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *r = (RangeTblEntry *) node;

		if (r->rtekind == RTE_RELATION)
			DpRefuseFamilyRead(r->relid, r->inh);
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, DpFamilyReadWalker, context, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, DpFamilyReadWalker, context);
}

/* See guard.h. */
void
DpPartitionsCheckQuery(Query *parse)
{
	if (DpProtectedTables() == NIL)
		return;
	(void) DpFamilyReadWalker((Node *) parse, NULL);
}

/* Walker: does the query read a family that holds a foreign table? */
static bool
DpForeignFamilyWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *r = (RangeTblEntry *) node;
		Oid			root;

		return r->rtekind == RTE_RELATION && DpFamilyOf(r->relid, &root) != DP_FAMILY_NONE &&
			(DpFamilyHasForeign(root) || r->relkind == RELKIND_FOREIGN_TABLE);
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, DpForeignFamilyWalker, context, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, DpForeignFamilyWalker, context);
}

static void DpCheckShardTable(Oid relid);

/* Walker: the foreign tables of the families the query reads, checked before planning (the file comment). */
static bool
DpCheckShardsWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *r = (RangeTblEntry *) node;
		Oid			root;
		ListCell   *lc;

		if (r->rtekind == RTE_RELATION && DpFamilyOf(r->relid, &root) == DP_FAMILY_ROOT)
		{
			List	   *members = DpFamilyRelids(false);

			foreach(lc, members)
			{
				Oid			top;

				if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_FOREIGN_TABLE &&
					DpFamilyOf(lfirst_oid(lc), &top) != DP_FAMILY_NONE && top == root)
					DpCheckShardTable(lfirst_oid(lc));
			}
			if (get_rel_relkind(r->relid) == RELKIND_FOREIGN_TABLE)
				DpCheckShardTable(r->relid);	/* a foreign table protected on its own (detached) */
		}
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, DpCheckShardsWalker, context, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, DpCheckShardsWalker, context);
}

/* See guard.h. */
void
DpPartitionsCheckShards(Query *parse)
{
	/* before postgres_fdw plans anything: its wrapper and options (use_remote_estimate asks while planning) */
	if (DpProtectedTables() != NIL && DpForeignFamilyWalker((Node *) parse, NULL))
		(void) DpCheckShardsWalker((Node *) parse, NULL);
}

/*
 * See guard.h.  postgres_fdw pushes a join of two of its tables, or an
 * aggregate over one (also a partition's, under partitionwise aggregation),
 * to their server through the FdwRoutine the planner copies from the
 * scanned table into the join and upper relations: for a table of a family
 * planned for an analyst, that copy lacks both entry points, so every join
 * and aggregate is computed here.  The executor opens the table's own
 * routine: it scans.
 */
void
DpPartitionsRelationInfo(Oid relid, RelOptInfo *rel)
{
	FdwRoutine *copy;

	if (rel->fdwroutine == NULL || (rel->fdwroutine->GetForeignUpperPaths == NULL &&
									rel->fdwroutine->GetForeignJoinPaths == NULL) ||
		DpProtectedTables() == NIL || DpSessionIsSuperuser() || !DpSessionIsAnalyst() ||
		(DpFamilyOf(relid, NULL) == DP_FAMILY_NONE && !DpIsProtected(relid)))
		return;
	copy = palloc(sizeof(FdwRoutine));
	memcpy(copy, rel->fdwroutine, sizeof(FdwRoutine));
	copy->GetForeignUpperPaths = NULL;
	copy->GetForeignJoinPaths = NULL;
	rel->fdwroutine = copy;
}

/* ------------------------------------------------------------------------
 * Shards: what postgres_fdw may ship
 * ------------------------------------------------------------------------
 */

/*
 * True if type is one whose built-in comparisons cannot fail on any value
 * (a text comparison orders by the remote server's collation of the same
 * name: it may order differently, never fail).
 */
static bool
DpShippableType(Oid type)
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
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case UUIDOID:
		case OIDOID:
			return true;
		default:
			return false;
	}
}

static bool
DpIntegerType(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/* A column, a constant or a parameter (under binary-compatible relabelling). */
static bool
DpShippableOperand(Node *n)
{
	while (n != NULL && IsA(n, RelabelType))
		n = (Node *) ((RelabelType *) n)->arg;
	return n != NULL && (IsA(n, Var) || IsA(n, Const) || IsA(n, Param));
}

/* True if opno is a built-in comparison (=, <>, <, <=, >, >=) of the accepted types. */
static bool
DpShippableComparison(Oid opno, Oid left, Oid right)
{
	HeapTuple	tup;
	Form_pg_operator op;
	const char *name;
	bool		ok;

	if (opno >= FirstGenbkiObjectId)
		return false;
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	if (!HeapTupleIsValid(tup))
		return false;
	op = (Form_pg_operator) GETSTRUCT(tup);
	name = NameStr(op->oprname);
	ok = op->oprresult == BOOLOID && op->oprcode < FirstGenbkiObjectId &&
		(strcmp(name, "=") == 0 || strcmp(name, "<>") == 0 || strcmp(name, "<") == 0 ||
		 strcmp(name, "<=") == 0 || strcmp(name, ">") == 0 || strcmp(name, ">=") == 0) &&
		DpShippableType(left) && DpShippableType(right) &&
		(left == right || (DpIntegerType(left) && DpIntegerType(right)) ||
		 ((left == FLOAT4OID || left == FLOAT8OID) && (right == FLOAT4OID || right == FLOAT8OID)));
	ReleaseSysCache(tup);
	return ok;
}

/*
 * True if a remote server may evaluate expression e: it can fail on no value
 * and means there what it means here (see the file comment).
 */
static bool
DpShippableSafe(Node *e)
{
	ListCell   *lc;

	if (e == NULL)
		return true;
	switch (nodeTag(e))
	{
		case T_Var:
			return exprType(e) == BOOLOID;
		case T_Const:
			return true;
		case T_RelabelType:
			return DpShippableSafe((Node *) ((RelabelType *) e)->arg);
		case T_BoolExpr:
			foreach(lc, ((BoolExpr *) e)->args)
				if (!DpShippableSafe(lfirst(lc)))
					return false;
			return true;
		case T_NullTest:
			return DpShippableOperand((Node *) ((NullTest *) e)->arg) &&
				!type_is_rowtype(exprType((Node *) ((NullTest *) e)->arg));
		case T_BooleanTest:
			return DpShippableOperand((Node *) ((BooleanTest *) e)->arg);
		case T_OpExpr:
			{
				OpExpr	   *op = (OpExpr *) e;

				return list_length(op->args) == 2 &&
					DpShippableOperand(linitial(op->args)) && DpShippableOperand(lsecond(op->args)) &&
					DpShippableComparison(op->opno, exprType(linitial(op->args)), exprType(lsecond(op->args)));
			}
		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *sa = (ScalarArrayOpExpr *) e;
				Node	   *arr = lsecond(sa->args);

				return sa->useOr && DpShippableOperand(linitial(sa->args)) && IsA(arr, Const) &&
					DpShippableComparison(sa->opno, exprType(linitial(sa->args)),
										  get_element_type(exprType(arr)));
			}
		default:
			return false;
	}
}

/* check_functions_in_node callback: a function that is not built into PostgreSQL. */
static bool
DpNotBuiltin(Oid fn, void *context)
{
	return fn >= FirstGenbkiObjectId;
}

/* Walker: true if the expression calls a function that is not built in (postgres_fdw ships none). */
static bool
DpCallsNonBuiltin(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, DpNotBuiltin, context))
		return true;
	return expression_tree_walker(node, DpCallsNonBuiltin, context);
}

/* dp_pg.keep_local(boolean), or InvalidOid. */
static Oid
DpKeepLocalFunction(void)
{
	Oid			argtypes[1] = {BOOLOID};

	return LookupFuncName(list_make2(makeString("dp_pg"), makeString("keep_local")), 1, argtypes, true);
}

/* One conjunct of a row predicate: wrapped in keep_local if postgres_fdw could ship it but may not. */
static Node *
DpKeepLocalConjunct(Node *c, Oid fn)
{
	if (c == NULL || DpShippableSafe(c) || DpCallsNonBuiltin(c, NULL))
		return c;
	return (Node *) makeFuncExpr(fn, BOOLOID, list_make1(c), InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/* The conjuncts of a qual, each through DpKeepLocalConjunct. */
static Node *
DpKeepLocalQual(Node *qual, Oid fn)
{
	List	   *conj;
	List	   *out = NIL;
	ListCell   *lc;

	if (qual == NULL)
		return NULL;
	conj = make_ands_implicit((Expr *) qual);
	foreach(lc, conj)
		out = lappend(out, DpKeepLocalConjunct(lfirst(lc), fn));
	return (Node *) make_ands_explicit(out);
}

/* Walker over a jointree: the quals of its joins. */
static void
DpKeepLocalJoins(Node *jt, Oid fn)
{
	ListCell   *lc;

	if (jt == NULL)
		return;
	if (IsA(jt, FromExpr))
	{
		foreach(lc, ((FromExpr *) jt)->fromlist)
			DpKeepLocalJoins(lfirst(lc), fn);
		((FromExpr *) jt)->quals = DpKeepLocalQual(((FromExpr *) jt)->quals, fn);
	}
	else if (IsA(jt, JoinExpr))
	{
		DpKeepLocalJoins(((JoinExpr *) jt)->larg, fn);
		DpKeepLocalJoins(((JoinExpr *) jt)->rarg, fn);
		((JoinExpr *) jt)->quals = DpKeepLocalQual(((JoinExpr *) jt)->quals, fn);
	}
}

/* Walker: every query level that reads a relation of a family with a foreign table. */
static bool
DpKeepLocalWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;

		if (DpForeignFamilyWalker((Node *) q->rtable, NULL))
			DpKeepLocalJoins((Node *) q->jointree, *(Oid *) context);
		return query_tree_walker(q, DpKeepLocalWalker, context, 0);
	}
	return expression_tree_walker(node, DpKeepLocalWalker, context);
}

/* See guard.h. */
void
DpPartitionsKeepLocal(Query *d)
{
	Oid			fn;

	if (!DpForeignFamilyWalker((Node *) d, NULL))
		return;
	fn = DpKeepLocalFunction();
	if (!OidIsValid(fn))
		DpGuardRefuse("this installation of dp_pg lacks dp_pg.keep_local",
					  "A dp query over foreign partitions needs it; ALTER EXTENSION dp_pg UPDATE adds it.");
	(void) DpKeepLocalWalker((Node *) d, &fn);
}

/* dp_pg.keep_local(boolean): its argument (the guard writes it; see the file comment). */
Datum
dp_keep_local(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_BOOL(0));
}

/* True if the comma-separated list holds name (postgres_fdw's extensions option). */
static bool
DpListNames(const char *list, const char *name)
{
	char	   *raw = pstrdup(list);
	List	   *names = NIL;
	ListCell   *lc;

	if (!SplitIdentifierString(raw, ',', &names))
		return true;			/* unreadable: fail closed */
	foreach(lc, names)
		if (strcmp((char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

/* ERROR 42501 for a foreign table of a family (see the file comment). */
static void
DpRefuseShard(Oid relid, const char *what, const char *hint)
{
	DpGuardRefuseHint(psprintf("foreign table %s of a protected table %s", DpRelName(relid), what),
					  "dp_pg answers a query over foreign partitions here, once: whatever postgres_fdw sends to the "
					  "remote server must be a plain read of rows, filtered by comparisons of columns with constants.",
					  hint);
}

/* The checks of a foreign table of a family that do not depend on the plan: its wrapper and options. */
static void
DpCheckShardTable(Oid relid)
{
	ForeignTable *ft = GetForeignTable(relid);
	ForeignServer *server = GetForeignServer(ft->serverid);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
	Oid			ext = get_extension_oid("postgres_fdw", true);
	char	   *handler = OidIsValid(fdw->fdwhandler) ? get_func_name(fdw->fdwhandler) : NULL;
	List	   *options = list_concat(list_copy(server->options), ft->options);
	ListCell   *lc;

	if (handler == NULL || strcmp(handler, "postgres_fdw_handler") != 0 || !OidIsValid(ext) ||
		getExtensionOfObject(ProcedureRelationId, fdw->fdwhandler) != ext)
		DpRefuseShard(relid, "is not a postgres_fdw table",
					  "Only postgres_fdw foreign tables may be partitions of a protected table.");
	foreach(lc, options)
	{
		DefElem    *d = lfirst_node(DefElem, lc);

		if (strcmp(d->defname, "use_remote_estimate") == 0 && defGetBoolean(d))
			DpRefuseShard(relid, "asks its server for estimates (use_remote_estimate)",
						  psprintf("Remote estimates read the remote statistics of protected rows: "
								   "ALTER SERVER %s OPTIONS (SET use_remote_estimate 'false') (and the table's option).",
								   quote_identifier(server->servername)));
		if (strcmp(d->defname, "extensions") == 0 && DpListNames(defGetString(d), "dp_pg"))
			DpRefuseShard(relid, "may ship dp_pg's functions to its server (extensions)",
						  psprintf("dp aggregates and the guard's row functions run here only: remove dp_pg from "
								   "the extensions option of server %s.", quote_identifier(server->servername)));
	}
}

/*
 * True if a remote query's ORDER BY (if any) sorts by plain columns only:
 * outside quoted names and literals, only names, dots, commas, blanks and
 * ASC / DESC / NULLS FIRST / LAST follow it.
 */
static bool
DpRemoteOrderPlain(const char *sql)
{
	const char *p = sql;
	const char *order = NULL;
	int			depth = 0;

	/* the top-level ORDER BY, outside literals, quoted names and parentheses */
	while (*p)
	{
		if (*p == '\'' || *p == '"')
		{
			char		q = *p++;

			while (*p && !(*p == q && p[1] != q))
				p += (*p == q) ? 2 : 1;
			if (*p)
				p++;
			continue;
		}
		if (*p == '(')
			depth++;
		else if (*p == ')')
			depth--;
		else if (depth == 0 && strncmp(p, " ORDER BY ", 10) == 0)
			order = p + 10;
		p++;
	}
	if (order == NULL)
		return true;
	for (p = order; *p; p++)
	{
		if (*p == '"')
		{
			p++;
			while (*p && !(*p == '"' && p[1] != '"'))
				p += (*p == '"') ? 2 : 1;
			if (!*p)
				return false;
			continue;
		}
		if (!(isalnum((unsigned char) *p) || *p == '_' || *p == '.' || *p == ',' || *p == ' '))
			return false;
	}
	return true;
}

/* The checks of one foreign scan of a plan. */
typedef struct DpShardScan
{
	List	   *rtable;
	List	   *prot;
} DpShardScan;

/* True if rti of the plan's range table is a relation of a family. */
static bool
DpFamilyEntryAt(DpShardScan *c, Index rti, Oid *relid)
{
	RangeTblEntry *r;

	if (rti < 1 || rti > list_length(c->rtable))
		return false;
	r = rt_fetch(rti, c->rtable);
	*relid = r->relid;
	return r->rtekind == RTE_RELATION &&
		(DpFindProtected(c->prot, r->relid) != NULL || DpFamilyOf(r->relid, NULL) != DP_FAMILY_NONE);
}

/* Plan visitor: the foreign scans of a family (see the file comment). */
static bool
DpShardScanVisitor(Plan *plan, void *context)
{
	DpShardScan *c = (DpShardScan *) context;
	ForeignScan *fs;
	Oid			relid = InvalidOid;
	ListCell   *lc;

	if (!IsA(plan, ForeignScan))
		return false;
	fs = (ForeignScan *) plan;
	if (fs->scan.scanrelid == 0)
	{
		int			rti = -1;

		while ((rti = bms_next_member(fs->fs_relids, rti)) >= 0)
			if (DpFamilyEntryAt(c, rti, &relid))
				DpRefuseShard(relid, "would be joined or aggregated on its remote server",
							  "dp_pg computes joins and aggregates of protected rows here; ask a DBA to check the "
							  "server's options.");
		return false;
	}
	if (!DpFamilyEntryAt(c, fs->scan.scanrelid, &relid))
		return false;
	DpCheckShardTable(relid);
	/* postgres_fdw: the remote conditions of a scan of one table */
	foreach(lc, fs->fdw_recheck_quals)
		if (!DpShippableSafe(lfirst(lc)))
			DpRefuseShard(relid, "would evaluate a row predicate on its remote server",
						  "Remote servers evaluate only comparisons of columns with constants; write the other "
						  "predicates so that dp_pg evaluates them here (a DBA may check the server's options).");
	if (fs->fdw_private != NIL && IsA(linitial(fs->fdw_private), String) &&
		!DpRemoteOrderPlain(strVal(linitial(fs->fdw_private))))
		DpRefuseShard(relid, "would sort by an expression on its remote server",
					  "Group foreign partitions by columns, or by expressions dp_pg evaluates here.");
	return false;
}

/* See guard.h. */
void
DpPartitionsCheckPlan(PlannedStmt *stmt)
{
	DpShardScan c;

	c.prot = DpProtectedTables();
	if (c.prot == NIL)
		return;
	c.rtable = stmt->rtable;
	(void) DpPlanWalkStmt(stmt, DpShardScanVisitor, &c);
}

/* ------------------------------------------------------------------------
 * Joining and leaving a family
 * ------------------------------------------------------------------------
 */

/* The group every analyst is a member of, or InvalidOid. */
static Oid
DpAnalystGroupOid(void)
{
	return get_role_oid("dp_pg_analyst", true);
}

/* True if role is an analyst (a member of dp_pg_analyst, not a superuser), or the group itself. */
static bool
DpRoleIsAnalyst(Oid role, Oid group)
{
	return OidIsValid(group) && OidIsValid(role) &&
		(role == group || (is_member_of_role(role, group) && !superuser_arg(role)));
}

/* An analyst that holds the privileges of grantee (PUBLIC: any analyst), or InvalidOid. */
static Oid
DpAnalystOf(Oid grantee, Oid group)
{
	Relation	authid;
	TableScanDesc scan;
	HeapTuple	tup;
	Oid			found = InvalidOid;

	if (!OidIsValid(group))
		return InvalidOid;
	if (grantee != ACL_ID_PUBLIC && DpRoleIsAnalyst(grantee, group))
		return grantee;
	authid = table_open(AuthIdRelationId, AccessShareLock);
	scan = table_beginscan_catalog(authid, 0, NULL);
	while (!OidIsValid(found) && HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Oid			role = ((Form_pg_authid) GETSTRUCT(tup))->oid;

		if (role != group && DpRoleIsAnalyst(role, group) &&
			(grantee == ACL_ID_PUBLIC || is_member_of_role(role, grantee)))
			found = role;
	}
	table_endscan(scan);
	table_close(authid, AccessShareLock);
	return found;
}

/* ERROR: table relid may not be part of protected table root. */
static void
DpRefuseMember(Oid relid, Oid root, const char *why, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("dp_pg: %s cannot be part of protected table %s: %s", DpRelName(relid), DpRelName(root), why),
			 errdetail("Every partition and inheritance child of a protected table is protected with it; an analyst "
					   "must not be able to shape one (its rows, its definition, what it depends on)."),
			 errhint("%s", hint)));
}

/* The privileges an analyst holds on relid (its ACL or a column's), as the analyst's name, or NULL. */
static char *
DpAnalystPrivilege(Oid relid, Oid group)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	List	   *acls = NIL;
	bool		isnull;
	Datum		d;
	ListCell   *lc;
	AttrNumber	natts;

	if (!HeapTupleIsValid(tup))
		return NULL;
	natts = ((Form_pg_class) GETSTRUCT(tup))->relnatts;
	d = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relacl, &isnull);
	if (!isnull)
		acls = lappend(acls, DatumGetAclPCopy(d));
	ReleaseSysCache(tup);
	for (AttrNumber a = 1; a <= natts; a++)
	{
		HeapTuple	at = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(a));

		if (!HeapTupleIsValid(at))
			continue;
		d = SysCacheGetAttr(ATTNUM, at, Anum_pg_attribute_attacl, &isnull);
		if (!isnull)
			acls = lappend(acls, DatumGetAclPCopy(d));
		ReleaseSysCache(at);
	}
	foreach(lc, acls)
	{
		Acl		   *acl = lfirst(lc);
		AclItem    *items = ACL_DAT(acl);

		for (int i = 0; i < ACL_NUM(acl); i++)
		{
			Oid			grantee = items[i].ai_grantee;
			Oid			analyst;

			if (ACLITEM_GET_PRIVS(items[i]) == 0)
				continue;
			/* protect()'s grant for table pickers, behind its policy: a protected table attached again */
			if (grantee == group && ACLITEM_GET_PRIVS(items[i]) == ACL_SELECT && DpIsProtected(relid))
				continue;
			if (grantee == ACL_ID_PUBLIC)
				return pstrdup("PUBLIC");
			if (OidIsValid(analyst = DpAnalystOf(grantee, group)))
				return analyst == grantee ? psprintf("analyst %s", GetUserNameFromId(analyst, false)) :
					psprintf("analyst %s (through role %s)", GetUserNameFromId(analyst, false),
							 GetUserNameFromId(grantee, false));
		}
	}
	return NULL;
}

/*
 * ERROR unless table relid, and every table below it, is one no analyst can
 * shape, fit to be part of protected table root (see the file comment).
 */
static void
DpCheckMemberShape(Oid relid, Oid root)
{
	Oid			group = DpAnalystGroupOid();
	List	   *tables = find_all_inheritors(relid, NoLock, NULL);
	ListCell   *lc;
	ObjectAddress dep;
	Oid			owner;

	foreach(lc, tables)
	{
		Oid			t = lfirst_oid(lc);
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(t));
		char		kind;
		char	   *who;

		if (!HeapTupleIsValid(tup))
			continue;
		owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
		kind = ((Form_pg_class) GETSTRUCT(tup))->relkind;
		ReleaseSysCache(tup);
		if (DpRoleIsAnalyst(owner, group))
			DpRefuseMember(t, root, psprintf("it belongs to analyst %s", GetUserNameFromId(owner, false)),
						   psprintf("A superuser gives it to the DBA first: ALTER TABLE %s OWNER TO ...", DpRelName(t)));
		if ((who = DpAnalystPrivilege(t, group)) != NULL)
			DpRefuseMember(t, root, psprintf("%s holds privileges on it", who),
						   psprintf("REVOKE ALL ON %s FROM PUBLIC (and from the roles analysts are members of), "
									"then attach it.", DpRelName(t)));
		if (kind == RELKIND_FOREIGN_TABLE)
		{
			ForeignServer *server = GetForeignServer(GetForeignTable(t)->serverid);
			ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
			Oid			ext = get_extension_oid("postgres_fdw", true);
			char	   *handler = OidIsValid(fdw->fdwhandler) ? get_func_name(fdw->fdwhandler) : NULL;

			if (handler == NULL || strcmp(handler, "postgres_fdw_handler") != 0 || !OidIsValid(ext) ||
				getExtensionOfObject(ProcedureRelationId, fdw->fdwhandler) != ext)
				DpRefuseMember(t, root, "it is a foreign table of another wrapper than postgres_fdw",
							   "Foreign partitions of a protected table are postgres_fdw tables (docs/dba.md, \"Shards\").");
			if (DpRoleIsAnalyst(server->owner, group))
				DpRefuseMember(t, root, psprintf("its server %s belongs to analyst %s", quote_identifier(server->servername),
												 GetUserNameFromId(server->owner, false)),
							   "Use a server of the DBA's.");
		}
	}
	if (DpDdlAnalystDependency(tables, group, &dep, &owner))
		DpRefuseMember(relid, root,
					   psprintf("it depends on %s, which belongs to analyst %s", getObjectDescription(&dep, false),
								GetUserNameFromId(owner, false)),
					   "Give the object to the DBA first (ALTER ... OWNER TO, as a superuser), or use the DBA's own.");
}

/*
 * dp_pg.check_family(tbl): ERROR if a partition or inheritance child of tbl
 * (at any depth) is something an analyst could shape (protect() calls it).
 */
Datum
dp_check_family(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	List	   *below = find_all_inheritors(relid, NoLock, NULL);
	ListCell   *lc;

	foreach(lc, below)
		if (lfirst_oid(lc) != relid)
			DpCheckMemberShape(lfirst_oid(lc), relid);
	PG_RETURN_VOID();
}

/* The root of relid's family if relid is a protected table or a member of one's family, else InvalidOid. */
static Oid
DpFamilyRootOf(Oid relid)
{
	Oid			root;
	DpFamilyKind kind;

	if (!OidIsValid(relid))
		return InvalidOid;
	kind = DpFamilyOf(relid, &root);
	if (kind == DP_FAMILY_ROOT || kind == DP_FAMILY_MEMBER)
		return root;
	return DpIsProtected(relid) ? relid : InvalidOid;
}

/*
 * Protect table part, about to leave the family of root, with root's
 * declaration (dp_pg.protect_detached), as the extension's owner: the
 * statement's role owns the parent, not necessarily dp_pg.
 */
static void
DpProtectDetached(Oid part, Oid root)
{
	Oid			argtypes[2] = {REGCLASSOID, REGCLASSOID};
	Oid			fn = LookupFuncName(list_make2(makeString("dp_pg"), makeString("protect_detached")), 2, argtypes, true);
	Datum		args[2];
	Oid			owner = InvalidOid;
	Oid			save_user;
	int			save_sec;
	HeapTuple	tup;

	if (!OidIsValid(fn))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("dp_pg: %s would leave protected table %s unprotected", DpRelName(part), DpRelName(root)),
				 errdetail("This installation of dp_pg lacks dp_pg.protect_detached, which keeps it protected."),
				 errhint("ALTER EXTENSION dp_pg UPDATE, then detach it.")));
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	if (HeapTupleIsValid(tup))
	{
		owner = ((Form_pg_proc) GETSTRUCT(tup))->proowner;
		ReleaseSysCache(tup);
	}
	args[0] = ObjectIdGetDatum(part);
	args[1] = ObjectIdGetDatum(root);
	GetUserIdAndSecContext(&save_user, &save_sec);
	if (OidIsValid(owner) && superuser_arg(owner))
		SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE);
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (SPI_execute_with_args("SELECT dp_pg.protect_detached($1, $2)", 2, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "dp_pg.protect_detached failed");
		SPI_finish();
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_user, save_sec);
	}
	PG_END_TRY();
}

/* The table an ALTER TABLE command adds to a family or takes out of it (and its parent). */
static bool
DpInheritanceCommand(AlterTableStmt *as, AlterTableCmd *cmd, RangeVar **child, RangeVar **parent, bool *leaves)
{
	switch (cmd->subtype)
	{
		case AT_AttachPartition:
		case AT_DetachPartition:
		case AT_DetachPartitionFinalize:
			if (cmd->def == NULL || !IsA(cmd->def, PartitionCmd))
				return false;
			*child = ((PartitionCmd *) cmd->def)->name;
			*parent = as->relation;
			*leaves = cmd->subtype != AT_AttachPartition;
			return true;
		case AT_AddInherit:
		case AT_DropInherit:
			if (cmd->def == NULL || !IsA(cmd->def, RangeVar))
				return false;
			*child = as->relation;
			*parent = (RangeVar *) cmd->def;
			*leaves = cmd->subtype == AT_DropInherit;
			return true;
		default:
			return false;
	}
}

/* See guard.h. */
void
DpPartitionsUtility(Node *stmt, bool after)
{
	ListCell   *lc;

	if (IsBinaryUpgrade || !IsTransactionState())
		return;
	if (IsA(stmt, CreateStmt) || IsA(stmt, CreateForeignTableStmt))
	{
		CreateStmt *cs = IsA(stmt, CreateStmt) ? (CreateStmt *) stmt : &((CreateForeignTableStmt *) stmt)->base;

		if (cs->inhRelations == NIL)
			return;
		if (!after)
		{
			DpFamilyInvalidate();
			return;
		}
		foreach(lc, cs->inhRelations)
		{
			Oid			root = DpFamilyRootOf(RangeVarGetRelid(lfirst_node(RangeVar, lc), NoLock, true));

			if (OidIsValid(root))
				DpCheckMemberShape(RangeVarGetRelid(cs->relation, NoLock, false), root);
		}
		return;
	}
	if (!IsA(stmt, AlterTableStmt))
		return;
	foreach(lc, ((AlterTableStmt *) stmt)->cmds)
	{
		AlterTableStmt *as = (AlterTableStmt *) stmt;
		RangeVar   *child;
		RangeVar   *parent;
		bool		leaves;
		Oid			root;
		Oid			part;

		if (!DpInheritanceCommand(as, lfirst_node(AlterTableCmd, lc), &child, &parent, &leaves))
			continue;
		if (!after)
			DpFamilyInvalidate();
		if (after == leaves)
			continue;			/* joins are checked after, departures prepared before */
		root = DpFamilyRootOf(RangeVarGetRelid(parent, NoLock, true));
		part = RangeVarGetRelid(child, NoLock, true);
		if (!OidIsValid(root) || !OidIsValid(part))
			continue;
		if (after)
		{
			DpCheckMemberShape(part, root);
			continue;
		}
		if (DpIsProtected(part))
			continue;			/* declared itself: it stays so */
		/* the statement's lock on its table first (the parent of a detach), as it would take it */
		(void) RangeVarGetRelid(as->relation, AlterTableGetLockLevel(as->cmds), true);
		DpProtectDetached(part, root);
	}
}
