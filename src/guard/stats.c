/*
 * guard/stats.c — statistics, sizes and counters of protected tables
 * (invariant 2).
 *
 * Hidden relations: for an analyst, every protected table of the database
 * (a direct grant does not make its statistics safe), for any other user but
 * a superuser the protected tables it may not read; with each one, its
 * partitions and inheritance children at any depth, their indexes, TOAST
 * tables and TOAST indexes, the sequences they own, and its parents.
 * The set is computed per user and cached until the session's analyst epoch,
 * the user or the protected set changes (protected.c).
 *
 * The planner: planning for a user from whom a relation is hidden never looks
 * at what ANALYZE or VACUUM stored about it — no pg_statistic rows (so no
 * most-common value, histogram or null fraction is ever compared with a
 * constant of the query), no extended statistics, no average widths, no
 * reltuples, relpages or relallvisible; its row count is estimated from its
 * size on disk and its column types alone, as if it had never been analysed.
 * (Its size in pages is what a reader timing a scan sees anyway.)
 *
 * Functions and catalog columns that reveal sizes and counters run, for a
 * restricted session (an analyst, or anyone from whom something is hidden),
 * only masked, and they are masked in the query the planner receives, after
 * views are expanded:
 *   - relation-level ones (pg_relation_size & co, pg_stat_get_* of a relation)
 *     and cluster-wide ones (database and tablespace sizes, pg_stat_database
 *     counters, I/O, WAL and buffer counters, which include the reads of
 *     protected tables) are called through dp_pg.masked_call, which returns
 *     NULL for a hidden relation and, for a restricted session, for every
 *     cluster-wide counter;
 *   - functions that cannot be masked (set-returning or composite counters,
 *     progress reports, file access, pgstattuple and friends,
 *     pg_stat_statements) are refused;
 *   - pg_class.reltuples, relpages, relallvisible (and relallfrozen where it
 *     exists) read as NULL for hidden relations (dp_pg.hidden_relation), whole
 *     rows of pg_class are refused, and pg_statistic / pg_statistic_ext rows
 *     of hidden relations are filtered out.
 * Anywhere a query is not planned — EXECUTE parameters, CALL arguments,
 * COPY FROM WHERE, defaults, constraints, DDL — the raw functions meet the
 * object-access hook and are refused (DpStatsCheckExecute).  Catalogs read
 * through SQL functions that the planner inlines after the guard looked are
 * refused when the plan is final (reads.c).
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "access/genam.h"
#include "access/stratnum.h"
#include "utils/fmgroids.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_statistic_ext.h"
#include "catalog/pg_statistic_ext_data.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/plancat.h"
#include "parser/parse_func.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "guard/guard.h"
#include "ledger.h"

PG_FUNCTION_INFO_V1(dp_masked_call);
PG_FUNCTION_INFO_V1(dp_hidden_relation);

/* ------------------------------------------------------------------------
 * Hidden relations
 * ------------------------------------------------------------------------
 */

static HTAB *hidden_set = NULL;	/* Oid -> present */
static bool hidden_valid = false;
static Oid	hidden_user = InvalidOid;
static uint32 hidden_epoch = 0;
static uint64 hidden_generation = 0;
static int	hidden_count = 0;

/* Add relid to the hidden set. */
static void
DpHide(Oid relid)
{
	bool		found;

	(void) hash_search(hidden_set, &relid, HASH_ENTER, &found);
	if (!found)
		hidden_count++;
}

/* The parents of relid (inheritance or partitioning). */
static List *
DpParentsOf(Oid relid)
{
	Relation	inh = table_open(InheritsRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *parents = NIL;

	ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(inh, InheritsRelidSeqnoIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		parents = lappend_oid(parents, ((Form_pg_inherits) GETSTRUCT(tup))->inhparent);
	systable_endscan(scan);
	table_close(inh, AccessShareLock);
	return parents;
}


/*
 * Hide relid, its indexes and its TOAST table (and the TOAST table's
 * indexes), read from the catalogs without opening or locking the relation:
 * a lock a DBA holds on a protected table or on dp_pg's ledger must not make
 * another session's query wait.
 */
static void
DpHideRelation(Oid relid)
{
	Oid			rels[2] = {relid, InvalidOid};
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));

	if (!HeapTupleIsValid(tup))
		return;
	rels[1] = ((Form_pg_class) GETSTRUCT(tup))->reltoastrelid;
	ReleaseSysCache(tup);
	for (int i = 0; i < 2; i++)
	{
		Relation	pg_index;
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	itup;

		if (!OidIsValid(rels[i]))
			continue;
		DpHide(rels[i]);
		pg_index = table_open(IndexRelationId, AccessShareLock);
		ScanKeyInit(&key, Anum_pg_index_indrelid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(rels[i]));
		scan = systable_beginscan(pg_index, IndexIndrelidIndexId, true, NULL, 1, &key);
		while (HeapTupleIsValid(itup = systable_getnext(scan)))
			DpHide(((Form_pg_index) GETSTRUCT(itup))->indexrelid);
		systable_endscan(scan);
		table_close(pg_index, AccessShareLock);
	}
}

/* Rebuild the hidden set for the current user if its inputs changed. */
static void
DpHiddenRefresh(void)
{
	Oid			user = GetUserId();
	uint32		epoch;
	uint64		generation;
	List	   *prot;
	bool		analyst;
	ListCell   *lc;

	if (!IsTransactionState())
		return;					/* keep the last set */
	epoch = DpSessionEpoch();
	generation = DpProtectedGeneration();
	if (hidden_valid && user == hidden_user && epoch == hidden_epoch && generation == hidden_generation)
		return;

	if (hidden_set == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(Oid);
		hidden_set = hash_create("dp_pg hidden relations", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	else
	{
		HASH_SEQ_STATUS seq;
		Oid		   *e;

		hash_seq_init(&seq, hidden_set);
		while ((e = hash_seq_search(&seq)) != NULL)
			(void) hash_search(hidden_set, e, HASH_REMOVE, NULL);
	}
	hidden_count = 0;

	prot = DpSessionIsSuperuser() ? NIL : DpProtectedTables();
	analyst = prot != NIL && DpSessionIsAnalyst();
	foreach(lc, prot)
	{
		DpProtected *p = lfirst(lc);
		List	   *owned;
		List	   *members;
		List	   *ancestors;
		ListCell   *lc2;
		bool		missing = false;

		if ((!analyst && pg_class_aclcheck_ext(p->relid, user, ACL_SELECT, &missing) == ACLCHECK_OK) || missing)
			continue;			/* readable, or dropped since it was protected */
		/* with its partitions and inheritance children: its family (common/protected.c) */
		members = find_all_inheritors(p->relid, NoLock, NULL);
		foreach(lc2, members)
		{
			ListCell   *lc3;

			DpHideRelation(lfirst_oid(lc2));
			owned = getOwnedSequences(lfirst_oid(lc2));
			foreach(lc3, owned)
				DpHide(lfirst_oid(lc3));
		}
		/* a parent's numbers (inherited statistics, reltuples of a partitioned table) include it */
		ancestors = DpParentsOf(p->relid);
		foreach(lc2, ancestors)
		{
			DpHideRelation(lfirst_oid(lc2));
			ancestors = list_concat(ancestors, DpParentsOf(lfirst_oid(lc2)));
		}
	}
	/* dp_pg's own ledger: its sizes and counters count every role's charges and refusals */
	if (analyst)
	{
		static const char *const ledger_tables[] = {"ledger_entries", "budget_limits", "guard_refusal_log"};
		Oid			nsp = get_namespace_oid("dp_pg", true);

		for (int i = 0; OidIsValid(nsp) && i < lengthof(ledger_tables); i++)
		{
			Oid			relid = get_relname_relid(ledger_tables[i], nsp);

			if (OidIsValid(relid))
			{
				List	   *owned = getOwnedSequences(relid);
				ListCell   *lc2;

				DpHideRelation(relid);
				foreach(lc2, owned)
					DpHide(lfirst_oid(lc2));
			}
		}
	}
	hidden_user = user;
	hidden_epoch = epoch;
	hidden_generation = generation;
	hidden_valid = true;
}

/* True if relid's size and statistics are hidden from the current user (see the file comment). */
bool
DpStatsHidden(Oid relid)
{
	bool		found;

	DpHiddenRefresh();
	if (hidden_count == 0)
		return false;
	(void) hash_search(hidden_set, &relid, HASH_FIND, &found);
	return found;
}

/* True if anything is hidden from the current user. */
bool
DpStatsAnyHidden(void)
{
	DpHiddenRefresh();
	return hidden_count > 0;
}

/* A restricted session: an analyst, or a user from whom something is hidden. */
static bool
DpStatsRestricted(void)
{
	if (DpSessionIsSuperuser())
		return false;
	return DpSessionIsAnalyst() || DpStatsAnyHidden();
}

/* dp_pg.hidden_relation(oid): true if that relation's numbers are hidden from the current user. */
Datum
dp_hidden_relation(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(DpStatsHidden(PG_GETARG_OID(0)));
}

/* ------------------------------------------------------------------------
 * Functions that reveal sizes and counters
 * ------------------------------------------------------------------------
 */

typedef enum DpSideClass
{
	DP_SIDE_NONE = 0,			/* reveals nothing about protected tables */
	DP_SIDE_RELATION,			/* a number about its first argument, a relation: masked */
	DP_SIDE_CLUSTER,			/* a cluster- or database-wide number: masked */
	DP_SIDE_REFUSE				/* cannot be masked: refused */
} DpSideClass;

typedef struct DpSideEntry
{
	Oid			fn;				/* hash key */
	DpSideClass cls;
} DpSideEntry;

static HTAB *side_cache = NULL;
static Oid	masked_call_fn[2] = {InvalidOid, InvalidOid};	/* stable, volatile */
static Oid	hidden_relation_fn = InvalidOid;

/* Names of functions that are refused for restricted sessions (any schema: contrib modules too). */
static const char *const dp_refused_functions[] = {
	"pg_stat_get_progress_info", "pg_stat_get_io", "pg_stat_get_wal", "pg_stat_get_slru",
	"pg_stat_get_backend_io", "pg_stat_get_backend_wal",	/* 18: a backend's I/O and WAL, reads of protected tables too */
	"pgstattuple", "pgstattuple_approx", "pgstatindex", "pgstatginindex", "pgstathashindex", "pg_relpages",
	"pg_visibility", "pg_visibility_map", "pg_visibility_map_summary", "pg_check_frozen", "pg_check_visible",
	"pg_freespace", "pg_buffercache_pages", "pg_buffercache_summary", "pg_buffercache_usage_counts",
	"pg_stat_statements", "pg_stat_statements_info", "get_raw_page", "pg_prewarm",
	"pg_ls_dir", "pg_ls_tmpdir", "pg_ls_logdir", "pg_ls_waldir", "pg_ls_archive_statusdir",
	"pg_ls_logicalsnapdir", "pg_ls_logicalmapdir", "pg_ls_replslotdir",
	"pg_stat_file", "pg_read_file", "pg_read_binary_file", "pg_get_backend_memory_contexts",
	NULL
};

/* Names of pg_stat_get_* functions that reveal nothing about tables. */
static const char *const dp_harmless_stat_prefixes[] = {
	"pg_stat_get_function_", "pg_stat_get_xact_function_", "pg_stat_get_backend_", "pg_stat_get_activity",
	"pg_stat_get_snapshot_timestamp", "pg_stat_get_archiver", "pg_stat_get_subscription",
	"pg_stat_get_replication_slot", "pg_stat_get_wal_senders", "pg_stat_get_wal_receiver",
	"pg_stat_get_recovery_prefetch",
	NULL
};

/* Forget cached classes and function OIDs (pg_proc changed). */
static void
DpSideInvalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	if (side_cache != NULL)
	{
		hash_destroy(side_cache);
		side_cache = NULL;
	}
	masked_call_fn[0] = masked_call_fn[1] = InvalidOid;
	hidden_relation_fn = InvalidOid;
}

/* True if name is one of list. */
static bool
DpNameIn(const char *name, const char *const *list, bool prefix)
{
	for (int i = 0; list[i] != NULL; i++)
		if (prefix ? strncmp(name, list[i], strlen(list[i])) == 0 : strcmp(name, list[i]) == 0)
			return true;
	return false;
}

/* Classify a function by its name and signature (built-in or superuser-owned only). */
static DpSideClass
DpSideClassify(Oid fn)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Form_pg_proc proc;
	const char *name;
	DpSideClass cls = DP_SIDE_NONE;
	bool		first_is_rel;
	bool		scalar;

	if (!HeapTupleIsValid(tup))
		return DP_SIDE_NONE;
	proc = (Form_pg_proc) GETSTRUCT(tup);
	name = NameStr(proc->proname);
	first_is_rel = proc->pronargs >= 1 &&
		(proc->proargtypes.values[0] == OIDOID || proc->proargtypes.values[0] == REGCLASSOID);
	scalar = !proc->proretset && get_typtype(proc->prorettype) != TYPTYPE_COMPOSITE &&
		proc->prorettype != RECORDOID;

	if (DpNameIn(name, dp_refused_functions, false))
		cls = DP_SIDE_REFUSE;
	else if (strncmp(name, "pg_stat_get_", 12) == 0)
	{
		if (DpNameIn(name, dp_harmless_stat_prefixes, true))
			cls = DP_SIDE_NONE;
		else if (strncmp(name, "pg_stat_get_db_", 15) == 0 || !first_is_rel)
			cls = DP_SIDE_CLUSTER;
		else
			cls = DP_SIDE_RELATION;
	}
	else if (strcmp(name, "pg_relation_size") == 0 || strcmp(name, "pg_table_size") == 0 ||
			 strcmp(name, "pg_indexes_size") == 0 || strcmp(name, "pg_total_relation_size") == 0 ||
			 strcmp(name, "pg_sequence_last_value") == 0 || strcmp(name, "pg_sequence_parameters") == 0 ||
			 strcmp(name, "nextval") == 0 || strcmp(name, "currval") == 0 || strcmp(name, "setval") == 0)
		cls = first_is_rel ? DP_SIDE_RELATION : DP_SIDE_REFUSE;
	else if (strcmp(name, "pg_database_size") == 0 || strcmp(name, "pg_tablespace_size") == 0)
		cls = DP_SIDE_CLUSTER;
	if (cls != DP_SIDE_NONE && cls != DP_SIDE_REFUSE && !scalar)
		cls = DP_SIDE_REFUSE;
	if (cls != DP_SIDE_NONE && fn >= FirstNormalObjectId && !superuser_arg(proc->proowner))
		cls = DP_SIDE_NONE;		/* someone else's function of that name: code trust judges it */
	ReleaseSysCache(tup);
	return cls;
}

/* The side-channel class of function fn (cached). */
static DpSideClass
DpSideClassOf(Oid fn)
{
	DpSideEntry *e;
	bool		found;

	if (side_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(DpSideEntry);
		side_cache = hash_create("dp_pg side-channel functions", 256, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	e = hash_search(side_cache, &fn, HASH_FIND, &found);
	if (found)
		return e->cls;
	{
		DpSideClass cls = DpSideClassify(fn);

		e = hash_search(side_cache, &fn, HASH_ENTER, &found);
		e->cls = cls;
		return cls;
	}
}

/* ERROR: function fn would reveal the size or counters of protected tables. */
static void
DpSideRefuse(Oid fn, bool maskable)
{
	char	   *name = get_func_name(fn);

	DpLedgerNoteRefusal(psprintf("%s is not available while protected tables are hidden", name ? name : "?"),
						ERRCODE_INSUFFICIENT_PRIVILEGE);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("dp_pg: %s is not available while protected tables are hidden from you", name ? name : "?"),
			 maskable ?
			 errdetail("It reveals sizes or counters of protected tables; it is available in queries, where it reads NULL for them.") :
			 errdetail("It reveals sizes or counters of protected tables.")));
}

/* Object-access hook: ERROR if a size or counter function is initialised unmasked. */
void
DpStatsCheckExecute(Oid fn)
{
	DpSideClass cls;

	if (!IsTransactionState())
		return;
	cls = DpSideClassOf(fn);
	if (cls == DP_SIDE_NONE || DpSessionIsSuperuser())
		return;
	if (cls == DP_SIDE_RELATION ? DpStatsAnyHidden() : DpStatsRestricted())
		DpSideRefuse(fn, cls != DP_SIDE_REFUSE);
}

/* dp_pg.masked_call (or its volatile twin), looked up in dp_pg's schema; InvalidOid if absent. */
static Oid
DpMaskedCallFunction(bool is_volatile)
{
	if (!OidIsValid(masked_call_fn[is_volatile ? 1 : 0]))
	{
		Oid			argtypes[3] = {OIDOID, ANYELEMENTOID, ANYOID};

		masked_call_fn[is_volatile ? 1 : 0] =
			LookupFuncName(list_make2(makeString("dp_pg"),
									  makeString(is_volatile ? "masked_call_volatile" : "masked_call")),
						   3, argtypes, true);
	}
	return masked_call_fn[is_volatile ? 1 : 0];
}

/* dp_pg.hidden_relation(oid), or InvalidOid if dp_pg is not installed here. */
static Oid
DpHiddenRelationFunction(void)
{
	if (!OidIsValid(hidden_relation_fn))
	{
		Oid			argtype = OIDOID;

		hidden_relation_fn = LookupFuncName(list_make2(makeString("dp_pg"), makeString("hidden_relation")),
											1, &argtype, true);
	}
	return hidden_relation_fn;
}

/* Context of DpMaskMutator. */
typedef struct DpMaskContext
{
	List	   *levels;			/* per query level (innermost last): Bitmapset of pg_class rt indexes */
	AttrNumber	size_atts[4];	/* pg_class columns that reveal sizes */
	int			nsize_atts;
	bool		relations;		/* some relations are hidden: mask relation-level numbers */
} DpMaskContext;

/* dp_pg.hidden_relation(oidexpr), or refuse when dp_pg is not installed in this database. */
static Expr *
DpHiddenTest(Node *oidexpr)
{
	Oid			fn = DpHiddenRelationFunction();

	if (!OidIsValid(fn))
		DpGuardRefuse("catalog sizes cannot be masked in a database without dp_pg",
					  "Run CREATE EXTENSION dp_pg in this database.");
	return (Expr *) makeFuncExpr(fn, BOOLOID, list_make1(oidexpr), InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/* CASE WHEN dp_pg.hidden_relation(oidexpr) THEN NULL ELSE expr END */
static Node *
DpMaskExpr(Node *expr, Node *oidexpr)
{
	CaseExpr   *c = makeNode(CaseExpr);
	CaseWhen   *w = makeNode(CaseWhen);
	Oid			type = exprType(expr);

	w->expr = DpHiddenTest(oidexpr);
	w->result = (Expr *) makeNullConst(type, exprTypmod(expr), exprCollation(expr));
	w->location = -1;
	c->casetype = type;
	c->casecollid = exprCollation(expr);
	c->arg = NULL;
	c->args = list_make1(w);
	c->defresult = (Expr *) expr;
	c->location = -1;
	return (Node *) c;
}

/* A size or counter function call routed through dp_pg.masked_call. */
static Node *
DpMaskCall(FuncExpr *f)
{
	bool		is_volatile = func_volatile(f->funcid) == PROVOLATILE_VOLATILE;
	Oid			wrapper = DpMaskedCallFunction(is_volatile);
	FuncExpr   *w;

	if (!OidIsValid(wrapper))
		DpSideRefuse(f->funcid, false);
	/* VARIADIC "any" takes one argument at least: a function without any gets a NULL int4 */
	w = makeFuncExpr(wrapper, f->funcresulttype,
					 lcons(makeConst(OIDOID, -1, InvalidOid, sizeof(Oid), ObjectIdGetDatum(f->funcid), false, true),
						   lcons(makeNullConst(f->funcresulttype, -1, InvalidOid),
								 f->args != NIL ? f->args : list_make1(makeNullConst(INT4OID, -1, InvalidOid)))),
					 f->funccollid, f->inputcollid, COERCE_EXPLICIT_CALL);
	w->location = f->location;
	return (Node *) w;
}

/* Mutator: mask size columns of pg_class, size and counter functions, statistics rows. */
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
			if (relcol != 0 && q->jointree != NULL && cxt->relations)
			{
				Node	   *keep = (Node *) makeBoolExpr(NOT_EXPR,
														 list_make1(DpHiddenTest((Node *) makeVar(rti, relcol, OIDOID, -1, InvalidOid, 0))),
														 -1);

				q->jointree->quals = q->jointree->quals ?
					(Node *) makeBoolExpr(AND_EXPR, list_make2(q->jointree->quals, keep), -1) : keep;
			}
		}
		return (Node *) q;
	}
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;
		int			level = list_length(cxt->levels) - 1 - (int) v->varlevelsup;

		if (!cxt->relations || level < 0 ||
			!bms_is_member(v->varno, (Bitmapset *) list_nth(cxt->levels, level)))
			return node;
		if (v->varattno == 0)
			DpGuardRefuse("whole-row references to pg_class are not allowed here",
						  "They would show the size of protected tables; name the columns instead.");
		for (int i = 0; i < cxt->nsize_atts; i++)
			if (v->varattno == cxt->size_atts[i])
				return DpMaskExpr(node, (Node *) makeVar(v->varno, Anum_pg_class_oid, OIDOID, -1,
														 InvalidOid, v->varlevelsup));
		return node;
	}
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) expression_tree_mutator(node, DpMaskMutator, cxt);

		switch (DpSideClassOf(f->funcid))
		{
			case DP_SIDE_RELATION:
				if (!cxt->relations)
					break;		/* nothing to hide here */
				return DpMaskCall(f);
			case DP_SIDE_CLUSTER:
				return DpMaskCall(f);
			case DP_SIDE_REFUSE:
				DpSideRefuse(f->funcid, false);
				break;
			default:
				break;
		}
		return (Node *) f;
	}
	return expression_tree_mutator(node, DpMaskMutator, cxt);
}

/* True if relid is one of the catalogs whose rows or columns the masking rewrites. */
bool
DpStatsMaskedCatalog(Oid relid)
{
	return relid == RelationRelationId || relid == StatisticRelationId ||
		relid == StatisticExtRelationId || relid == StatisticExtDataRelationId;
}

/* Mask sizes and counters in a query about to be planned (restricted sessions only). */
void
DpStatsMaskQuery(Query *parse)
{
	DpMaskContext cxt;
	static const char *const size_columns[] = {"reltuples", "relpages", "relallvisible", "relallfrozen"};

	if (!DpStatsRestricted())
		return;
	cxt.levels = NIL;
	cxt.nsize_atts = 0;
	cxt.relations = DpStatsAnyHidden();
	for (int i = 0; i < lengthof(size_columns); i++)
	{
		AttrNumber	a = get_attnum(RelationRelationId, size_columns[i]);

		if (a != InvalidAttrNumber)
			cxt.size_atts[cxt.nsize_atts++] = a;
	}
	(void) DpMaskMutator((Node *) parse, &cxt);
}

/* What dp_masked_call keeps about its target across calls. */
typedef struct DpMaskedTarget
{
	Oid			fn;
	DpSideClass cls;
	bool		strict;
	int			nargs;
	FmgrInfo	flinfo;
} DpMaskedTarget;

/*
 * dp_pg.masked_call(fn oid, result anyelement, VARIADIC args "any"): call
 * size or counter function fn on args, or return NULL if it would reveal a
 * hidden relation (or, for a restricted session, a cluster-wide counter).
 * Called directly it is no more than fn itself: fn must be one of those
 * functions, the caller must may EXECUTE it, and the arguments and result
 * must have exactly fn's types (a function without arguments gets one NULL
 * int4, as VARIADIC needs one).
 */
Datum
dp_masked_call(PG_FUNCTION_ARGS)
{
	DpMaskedTarget *t = (DpMaskedTarget *) fcinfo->flinfo->fn_extra;
	LOCAL_FCINFO(call, FUNC_MAX_ARGS);
	Datum		result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (t == NULL || t->fn != PG_GETARG_OID(0))
	{
		Oid			fn = PG_GETARG_OID(0);
		HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
		Form_pg_proc proc;
		DpSideClass cls = DpSideClassOf(fn);

		if (!HeapTupleIsValid(tup) || cls == DP_SIDE_NONE || cls == DP_SIDE_REFUSE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("dp_pg.masked_call only calls size and counter functions")));
		proc = (Form_pg_proc) GETSTRUCT(tup);
		if (DpProcAclCheck(fn, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_FUNCTION, NameStr(proc->proname));
		if (proc->proretset || Max(proc->pronargs, 1) != PG_NARGS() - 2 ||
			get_fn_expr_argtype(fcinfo->flinfo, 1) != proc->prorettype ||
			(proc->pronargs == 0 && (get_fn_expr_argtype(fcinfo->flinfo, 2) != INT4OID || !PG_ARGISNULL(2))))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("dp_pg.masked_call: arguments do not match %s", NameStr(proc->proname))));
		for (int i = 0; i < proc->pronargs; i++)
			if (get_fn_expr_argtype(fcinfo->flinfo, i + 2) != proc->proargtypes.values[i])
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("dp_pg.masked_call: arguments do not match %s", NameStr(proc->proname))));
		t = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(DpMaskedTarget));
		t->fn = fn;
		t->cls = cls;
		t->strict = proc->proisstrict;
		t->nargs = proc->pronargs;
		ReleaseSysCache(tup);
		fmgr_info_cxt(fn, &t->flinfo, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = t;
	}
	if (t->cls == DP_SIDE_CLUSTER && DpStatsRestricted())
		PG_RETURN_NULL();
	if (t->cls == DP_SIDE_RELATION && !PG_ARGISNULL(2) && DpStatsHidden(PG_GETARG_OID(2)))
		PG_RETURN_NULL();
	InitFunctionCallInfoData(*call, &t->flinfo, t->nargs, PG_GET_COLLATION(), NULL, NULL);
	for (int i = 0; i < t->nargs; i++)
	{
		call->args[i].value = PG_GETARG_DATUM(i + 2);
		call->args[i].isnull = PG_ARGISNULL(i + 2);
		if (t->strict && call->args[i].isnull)
			PG_RETURN_NULL();
	}
	result = FunctionCallInvoke(call);
	if (call->isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/* ------------------------------------------------------------------------
 * The planner
 * ------------------------------------------------------------------------
 */

/* get_relation_info_hook: a hidden relation is estimated from its size on disk and its types only. */
void
DpStatsRelationInfo(PlannerInfo *root, Oid relid, bool inhparent, RelOptInfo *rel)
{
	Relation	r;
	BlockNumber pages;
	int32		width;
	double		density;
	char		kind;
	ListCell   *lc;

	if (!DpStatsHidden(relid))
		return;
	r = table_open(relid, NoLock);
	kind = r->rd_rel->relkind;
	if (kind == RELKIND_FOREIGN_TABLE)
	{
		/* a foreign table's reltuples (from ANALYZE's remote sample): unknown, its wrapper's default */
		rel->pages = 0;
		rel->tuples = -1;
	}
	else if (!inhparent && RELKIND_HAS_STORAGE(kind))
	{
		/*
		 * its blocks on disk, as PostgreSQL just counted them, at least 10 as
		 * for a table never vacuumed; a partition's own count (PostgreSQL's
		 * 10 may stand for fewer): ten pages for each of a thousand small
		 * partitions would plan a large table
		 */
		pages = rel->pages;
		if (!r->rd_rel->relispartition)
			pages = Max(pages, 10);
		else if (pages == 10)
			pages = RelationGetNumberOfBlocks(r);
		width = get_rel_data_width(r, NULL) + MAXALIGN(SizeofHeapTupleHeader) + sizeof(ItemIdData);
		density = (BLCKSZ - SizeOfPageHeaderData) / Max(width, 1);
		rel->pages = pages;
		rel->tuples = rint(density * pages);
	}
	/* (a parent's size is its children's, summed by the planner) */
	table_close(r, NoLock);
	rel->allvisfrac = 0;
	rel->statlist = NIL;
	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *info = lfirst(lc);

		info->tuples = rel->tuples;
		info->tree_height = -1;
	}
}

/* get_relation_stats_hook: no pg_statistic row of a hidden relation. */
bool
DpStatsRelationStats(PlannerInfo *root, RangeTblEntry *rte, AttrNumber attnum, VariableStatData *vardata)
{
	if (rte->rtekind != RTE_RELATION || !DpStatsHidden(rte->relid))
		return false;
	vardata->statsTuple = NULL;
	vardata->freefunc = NULL;
	return true;
}

/* get_index_stats_hook: no pg_statistic row of a hidden index. */
bool
DpStatsIndexStats(PlannerInfo *root, Oid indexOid, AttrNumber indexattnum, VariableStatData *vardata)
{
	if (!DpStatsHidden(indexOid))
		return false;
	vardata->statsTuple = NULL;
	vardata->freefunc = NULL;
	return true;
}

/* get_attavgwidth_hook: a hidden column's width is its type's (0: ask PostgreSQL). */
int32
DpStatsAttWidth(Oid relid, AttrNumber attnum)
{
	Oid			type;
	int32		typmod;
	Oid			coll;

	if (!DpStatsHidden(relid))
		return 0;
	get_atttypetypmodcoll(relid, attnum, &type, &typmod, &coll);
	return Max(get_typavgwidth(type, typmod), 1);
}

/* ProcessUtility: COPY of a catalog whose size columns are masked is refused (it is not planned). */
void
DpStatsCheckUtility(Node *stmt)
{
	if (IsA(stmt, CopyStmt) && ((CopyStmt *) stmt)->relation != NULL && DpStatsRestricted())
	{
		Oid			relid = RangeVarGetRelid(((CopyStmt *) stmt)->relation, NoLock, true);

		if (DpStatsMaskedCatalog(relid))
			DpGuardRefuse("COPY of this catalog is not allowed while protected tables are hidden",
						  "It would show their size; use COPY (SELECT ...) TO instead.");
	}
}

/* Register the cache invalidation callbacks. */
void
DpStatsInit(void)
{
	CacheRegisterSyscacheCallback(PROCOID, DpSideInvalidate, (Datum) 0);
}
