/*
 * synth/synthesize.c — dp_pg.synthesize(source, target, mechanism, columns,
 * bins, rows): make a synthetic twin of a protected table.
 *
 * Protocol (who may do what, and when)
 * ------------------------------------
 * 1. Checks that read nothing of the table's rows, each an ERROR with
 *    nothing charged: dp_pg preloaded; not on a hot standby nor in a
 *    read-only transaction (the twin is a new table: make it on the
 *    primary, it replicates); every argument constant for the statement (a
 *    literal, a bound parameter or a folded expression of them: no column
 *    nor volatile function, so one call is one release); source a plain
 *    table; the caller may read it — an analyst (a role with a budget) any
 *    protected table, as with dp queries; anyone else needs SELECT on the
 *    columns read (a non-analyst's twin of an unprotected table is refused:
 *    nothing would be protected and nothing charged); no row-level security
 *    policy but dp_pg's own applies to the caller (this read would not
 *    apply it); the columns qualify (columns.c); bins, rows and the
 *    mechanism valid; the cost planned (measure.c).
 * 2. The target is created, owned by the current user, with the chosen
 *    columns' names and types (SPI: CREATE TABLE, so event triggers and the
 *    guard's checks of utility statements see it), and checked to be a
 *    plain empty table the caller may insert into.  Every failure of DDL
 *    (a name that exists, no CREATE on its schema) happens here, uncharged.
 * 3. The cost is charged to every budgeted role the call runs for (ledger/requests.c:
 *    durable before it returns; a refusal (DP001) ends the call, and the
 *    transaction's rollback drops the new table).  Only then is a row read.
 * 4. One pass over the table (the statement's snapshot; no executor, no
 *    plan, no search_path lookup, only the columns' total functions, no
 *    message) counts every 1-way and 2-way table exactly; a table with a
 *    privacy unit first keeps a uniformly random set of at most
 *    max_groups_contributed * max_rows_per_unit rows of each unit (a sort on
 *    (unit, random priority), spilled to disk beyond work_mem).
 * 5. The private steps (noise, the exponential mechanism) and the model,
 *    then the rows: post-processing of released values only, written into
 *    the new table with bulk inserts.  Returns the number of rows made.
 * The call never consults or fills the released-answer cache: each call is
 * a new release with new noise, charged in full.  A rollback of the
 * caller's transaction drops the twin but never the charge.
 *
 * Layer synth/ (docs/development.md): may call the guard and every layer
 * below it.
 */
#include "postgres.h"

#include <math.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "miscadmin.h"
#include "rewrite/rowsecurity.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplesort.h"
#include "utils/typcache.h"
#include "utils/varlena.h"

#include "agg_common.h"
#include "plantree.h"
#include "release.h"
#include "guard/guard.h"
#include "ledger.h"
#include "synth.h"
#include "synth/columns.h"

PG_FUNCTION_INFO_V1(dp_synthesize);

#define SYNTH_MAX_BINS 1000
#define SYNTH_MAX_ROWS INT64CONST(100000000)
#define SYNTH_BLOCK_ROWS 65536
#define SYNTH_INSERT_BATCH 1000

static const char *const synth_arg_names[] = {"source", "target", "mechanism", "columns", "bins", "rows"};

/* The context the numeric parts allocate in during one call. */
static MemoryContext synth_cxt = NULL;

/* SynthAllocFn of the server: zeroed memory in the call's context. */
static void *
SynthPalloc(size_t size)
{
	return MemoryContextAllocExtended(synth_cxt, size, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
}

/* ERROR unless every argument is constant for the statement (one call, one release). */
static void
SynthCheckConstantArguments(FunctionCallInfo fcinfo)
{
	for (int i = 0; i < PG_NARGS(); i++)
		if (!get_fn_expr_arg_stable(fcinfo->flinfo, i))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the arguments of dp_pg.synthesize must be constant for the statement"),
					 errdetail("Argument \"%s\" is not a literal or a bound parameter.  Nothing was charged for this call.",
							   synth_arg_names[Min(i, (int) lengthof(synth_arg_names) - 1)]),
					 errhint("Call it once, as SELECT dp_pg.synthesize('table', 'twin', 'laplace(epsilon=1)').")));
}

/* ERROR 42501 unless the current user may SELECT every column the twin reads. */
static void
SynthRequireSelect(Relation rel, SynthColumn *cols, int ncols, AttrNumber unit_attno)
{
	Oid			relid = RelationGetRelid(rel);

	/* dp_pg's grant to dp_pg_analyst opens no table without its protection (guard/grants.c) */
	(void) DpGrantsCheckRelation(relid, GetUserId(), true);
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK)
		return;
	for (int j = 0; j <= ncols; j++)
	{
		AttrNumber	a = j < ncols ? cols[j].attno : unit_attno;

		if (a != InvalidAttrNumber && pg_attribute_aclcheck(relid, a, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for table %s", RelationGetRelationName(rel)),
					 errdetail("Making a twin reads the columns it holds.  Nothing was charged for this call.")));
	}
}

/* ERROR unless the privacy unit's type can be sorted and compared by trusted functions. */
static void
SynthCheckUnitType(Relation rel, AttrNumber unit_attno)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), unit_attno - 1);
	TypeCacheEntry *tce = lookup_type_cache(att->atttypid, TYPECACHE_LT_OPR | TYPECACHE_EQ_OPR_FINFO);

	if (!OidIsValid(tce->lt_opr) || !OidIsValid(tce->eq_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("the privacy unit's type %s has no ordering", format_type_be(att->atttypid)),
				 errdetail("A twin sorts the rows by unit.  Nothing was charged for this call.")));
	if (!DpTrustedFunction(get_opcode(tce->lt_opr)) || !DpTrustedFunction(tce->eq_opr_finfo.fn_oid) ||
		(OidIsValid(att->attcollation) && !DpTrustedCollation(att->attcollation)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the privacy unit's ordering or collation is not a superuser's"),
				 errdetail("dp_pg.synthesize runs only trusted code on protected rows.  Nothing was charged for this call.")));
}

/* The ledger's detail of the charge: each kind of release with its noise and cost. */
static char *
SynthChargeDetail(const SynthPlan *plan, Relation rel, SynthColumn *cols)
{
	StringInfoData buf;
	static const char *const kinds[] = {"", "synthesize: 1-way marginal", "synthesize: selection", "synthesize: 2-way marginals"};

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"synthesize\": {\"source\": %u, \"columns\": %d, \"unit_rows\": " INT64_FORMAT "}, \"alphas\": [",
					 RelationGetRelid(rel), plan->d, plan->unit_rows);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		DpJsonNumber(&buf, DP_RDP_ALPHAS[i]);
	}
	appendStringInfoString(&buf, "], \"sites\": [");
	for (int r = 0; r < plan->nreleases; r++)
	{
		const SynthRelease *rel_ = &plan->releases[r];
		char		mech[DP_MECH_TEXT_LEN];

		dp_mechanism_format(&rel_->mech, mech, sizeof(mech));
		if (r > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfo(&buf, "{\"aggregate\": \"%s\", \"mechanism\": \"%s\", \"releases\": %d, \"l1\": " INT64_FORMAT ", \"l2\": " INT64_FORMAT,
						 kinds[rel_->kind], mech, rel_->count, plan->unit_rows, plan->unit_rows);
		if (rel_->kind == SYNTH_REL_ONEWAY)
		{
			appendStringInfoString(&buf, ", \"column\": ");
			escape_json(&buf, NameStr(cols[rel_->column].name));
		}
		appendStringInfoString(&buf, ", \"scale\": ");
		DpJsonNumber(&buf, rel_->scale);
		appendStringInfoString(&buf, ", \"sigma\": ");
		DpJsonNumber(&buf, rel_->sigma);
		appendStringInfoString(&buf, ", \"m\": ");
		DpJsonNumber(&buf, rel_->m);
		appendStringInfoString(&buf, ", \"epsilon\": ");
		DpJsonNumber(&buf, rel_->cost.epsilon);
		appendStringInfoString(&buf, ", \"delta\": ");
		DpJsonNumber(&buf, rel_->cost.delta);
		appendStringInfoString(&buf, ", \"rho\": ");
		DpJsonNumber(&buf, rel_->cost.rho);
		appendStringInfoString(&buf, "}");
	}
	appendStringInfoString(&buf, "]}");
	return buf.data;
}

/* Create the target table (step 2); returns it opened with RowExclusiveLock. */
static Relation
SynthCreateTarget(text *target, SynthColumn *cols, int ncols)
{
	List	   *names = textToQualifiedNameList(target);
	RangeVar   *rv = makeRangeVarFromNameList(names);
	Oid			nsp;
	StringInfoData sql;
	Oid			relid;
	Relation	rel;

	nsp = RangeVarGetCreationNamespace(rv);
	if (OidIsValid(get_relname_relid(rv->relname, nsp)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", rv->relname),
				 errdetail("dp_pg.synthesize makes a new table.  Nothing was charged for this call.")));
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (",
					 quote_qualified_identifier(get_namespace_name(nsp), rv->relname));
	for (int j = 0; j < ncols; j++)
		appendStringInfo(&sql, "%s%s", j > 0 ? ", " : "", SynthColumnDefinition(&cols[j]));
	appendStringInfoChar(&sql, ')');

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "dp_pg.synthesize: SPI_connect failed");
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "dp_pg.synthesize: could not create the target table");
	SPI_finish();

	relid = get_relname_relid(rv->relname, nsp);
	if (!OidIsValid(relid))
		elog(ERROR, "dp_pg.synthesize: the new table is not found");
	rel = table_open(relid, RowExclusiveLock);
	/* exactly the plain table asked for (an event trigger could have added to it) */
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->trigdesc != NULL || rel->rd_rules != NULL ||
		rel->rd_rel->relrowsecurity || rel->rd_rel->relhasindex || RelationGetIndexList(rel) != NIL ||
		RelationGetDescr(rel)->natts != ncols ||
		(RelationGetDescr(rel)->constr != NULL && RelationGetDescr(rel)->constr->num_check > 0))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the new table \"%s\" is not a plain table without indexes, triggers, rules or policies",
						rv->relname),
				 errdetail("An event trigger may have changed it.  Nothing was charged for this call.")));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to insert into the new table \"%s\"", rv->relname),
				 errdetail("Default privileges of its schema take INSERT from its owner.  Nothing was charged for this call.")));
	return rel;
}

/* The categories of one row into x (false: a value is not among the declared keys). */
static inline bool
SynthRowCategories(TupleTableSlot *slot, SynthColumn *cols, int ncols, uint32 *x)
{
	for (int j = 0; j < ncols; j++)
	{
		AttrNumber	a = cols[j].attno;
		int			k = SynthCategory(&cols[j], slot->tts_values[a - 1], slot->tts_isnull[a - 1]);

		if (k < 0)
			return false;
		x[j] = (uint32) k;
	}
	return true;
}

/* Step 4: read the table once into counts (at most unit_rows rows per unit when unit_attno > 0). */
static void
SynthReadTable(Relation rel, SynthColumn *cols, int ncols, AttrNumber unit_attno, int64 unit_rows,
			   SynthCounts *counts)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	TableScanDesc scan;
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext, "dp_pg synthesize row", ALLOCSET_SMALL_SIZES);
	MemoryContext old;
	AttrNumber	maxatt = unit_attno;
	uint32		x[SYNTH_MAX_COLUMNS];
	Tuplesortstate *sort = NULL;
	TupleDesc	sortdesc = NULL;
	TupleTableSlot *sortslot = NULL;
	TupleTableSlot *putslot = NULL;
	Form_pg_attribute uatt = NULL;
	FmgrInfo	ueq;

	for (int j = 0; j < ncols; j++)
		maxatt = Max(maxatt, cols[j].attno);

	if (unit_attno != InvalidAttrNumber)
	{
		TypeCacheEntry *tce;
		AttrNumber	keys[2] = {1, 2};
		Oid			ops[2];
		Oid			colls[2];
		bool		nf[2] = {false, false};

		uatt = TupleDescAttr(RelationGetDescr(rel), unit_attno - 1);
		tce = lookup_type_cache(uatt->atttypid, TYPECACHE_LT_OPR | TYPECACHE_EQ_OPR_FINFO | TYPECACHE_CMP_PROC);
		ops[0] = tce->lt_opr;
		ops[1] = Int8LessOperator;
		colls[0] = uatt->attcollation;
		colls[1] = InvalidOid;
		fmgr_info_copy(&ueq, &tce->eq_opr_finfo, CurrentMemoryContext);
		sortdesc = CreateTemplateTupleDesc(ncols + 2);
		TupleDescInitEntry(sortdesc, 1, "unit", uatt->atttypid, uatt->atttypmod, 0);
		TupleDescInitEntryCollation(sortdesc, 1, uatt->attcollation);
		TupleDescInitEntry(sortdesc, 2, "priority", INT8OID, -1, 0);
		for (int j = 0; j < ncols; j++)
			TupleDescInitEntry(sortdesc, j + 3, NULL, INT4OID, -1, 0);
		sort = tuplesort_begin_heap(sortdesc, 2, keys, ops, colls, nf, work_mem, NULL, TUPLESORT_NONE);
		putslot = MakeSingleTupleTableSlot(sortdesc, &TTSOpsVirtual);
		sortslot = MakeSingleTupleTableSlot(sortdesc, &TTSOpsMinimalTuple);
	}

	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		slot_getsomeattrs(slot, maxatt);
		old = MemoryContextSwitchTo(rowcxt);
		if (SynthRowCategories(slot, cols, ncols, x))
		{
			if (sort == NULL)
				synth_counts_add(counts, x);
			else
			{
				ExecClearTuple(putslot);
				putslot->tts_values[0] = slot->tts_values[unit_attno - 1];
				putslot->tts_isnull[0] = slot->tts_isnull[unit_attno - 1];
				putslot->tts_values[1] = Int64GetDatum((int64) dp_rng_u64(DpBackendRng()));
				putslot->tts_isnull[1] = false;
				for (int j = 0; j < ncols; j++)
				{
					putslot->tts_values[j + 2] = Int32GetDatum((int32) x[j]);
					putslot->tts_isnull[j + 2] = false;
				}
				ExecStoreVirtualTuple(putslot);
				MemoryContextSwitchTo(old);
				tuplesort_puttupleslot(sort, putslot);
			}
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(rowcxt);
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);

	if (sort != NULL)
	{
		/* each unit's first unit_rows rows by random priority: a uniform subset */
		bool		have_prev = false;
		bool		prev_null = false;
		Datum		prev = (Datum) 0;
		int64		kept = 0;
		MemoryContext prevcxt = AllocSetContextCreate(CurrentMemoryContext, "dp_pg synthesize unit", ALLOCSET_SMALL_SIZES);

		tuplesort_performsort(sort);
		while (tuplesort_gettupleslot(sort, true, false, sortslot, NULL))
		{
			bool		isnull;
			Datum		u;
			bool		same;

			CHECK_FOR_INTERRUPTS();
			slot_getallattrs(sortslot);
			u = sortslot->tts_values[0];
			isnull = sortslot->tts_isnull[0];
			if (!have_prev)
				same = false;
			else if (isnull || prev_null)
				same = isnull && prev_null;
			else
				same = DatumGetBool(FunctionCall2Coll(&ueq, uatt->attcollation, u, prev));
			if (!same)
			{
				MemoryContextReset(prevcxt);
				old = MemoryContextSwitchTo(prevcxt);
				prev = isnull ? (Datum) 0 : datumCopy(u, uatt->attbyval, uatt->attlen);
				MemoryContextSwitchTo(old);
				prev_null = isnull;
				have_prev = true;
				kept = 0;
			}
			if (kept++ < unit_rows)
			{
				for (int j = 0; j < ncols; j++)
					x[j] = (uint32) DatumGetInt32(sortslot->tts_values[j + 2]);
				synth_counts_add(counts, x);
			}
		}
		tuplesort_end(sort);
		ExecDropSingleTupleTableSlot(sortslot);
		ExecDropSingleTupleTableSlot(putslot);
		MemoryContextDelete(prevcxt);
	}
	MemoryContextDelete(rowcxt);
}

/* Step 5: write nrows rows drawn from the model into target. */
static void
SynthFill(Relation target, const SynthModel *model, SynthColumn *cols, int ncols, int64 nrows)
{
	DpRng	   *rng = DpBackendRng();
	BulkInsertState bis = GetBulkInsertState();
	CommandId	cid = GetCurrentCommandId(true);
	TupleTableSlot *slots[SYNTH_INSERT_BATCH];
	int			nused = 0;
	int64		block = Min(nrows, (int64) SYNTH_BLOCK_ROWS);
	uint32	   *x = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint32) * Max(block, 1) * ncols);
	uint32	   *work = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint32) * 3 * Max(block, 1));
	MemoryContext batchcxt = AllocSetContextCreate(CurrentMemoryContext, "dp_pg synthesize batch", ALLOCSET_DEFAULT_SIZES);

	for (int i = 0; i < SYNTH_INSERT_BATCH; i++)
		slots[i] = table_slot_create(target, NULL);
	for (int64 done = 0; done < nrows; done += block)
	{
		int64		nb = Min(block, nrows - done);

		synth_sample_block(model, rng, nb, x, work);
		for (int64 i = 0; i < nb; i++)
		{
			TupleTableSlot *slot = slots[nused];
			MemoryContext old = MemoryContextSwitchTo(batchcxt);

			ExecClearTuple(slot);
			for (int j = 0; j < ncols; j++)
				slot->tts_values[j] = SynthValue(&cols[j], (int) x[(size_t) i * ncols + j], rng, &slot->tts_isnull[j]);
			ExecStoreVirtualTuple(slot);
			MemoryContextSwitchTo(old);
			if (++nused == SYNTH_INSERT_BATCH)
			{
				CHECK_FOR_INTERRUPTS();
				table_multi_insert(target, slots, nused, cid, TABLE_INSERT_SKIP_FSM, bis);
				for (int s = 0; s < nused; s++)
					ExecClearTuple(slots[s]);
				MemoryContextReset(batchcxt);
				nused = 0;
			}
		}
	}
	if (nused > 0)
		table_multi_insert(target, slots, nused, cid, TABLE_INSERT_SKIP_FSM, bis);
	for (int i = 0; i < SYNTH_INSERT_BATCH; i++)
		ExecDropSingleTupleTableSlot(slots[i]);
	FreeBulkInsertState(bis);
	table_finish_bulk_insert(target, TABLE_INSERT_SKIP_FSM);
	MemoryContextDelete(batchcxt);
}

/* ------------------------------------------------------------------------
 * One twin per statement
 * ------------------------------------------------------------------------
 */

/* dp_pg.synthesize's OID (InvalidOid: not installed), looked up once per backend and call of this. */
static Oid
SynthFunction(void)
{
	return LookupFuncName(list_make2(makeString("dp_pg"), makeString("synthesize")), -1, NULL, true);
}

/* Context of the statement check's walk. */
typedef struct SynthCalls
{
	Oid			fn;
	int			calls;			/* calls of fn anywhere in the statement's plans */
} SynthCalls;

/* Expression walker: count the calls of fn. */
static bool
SynthCountCalls(Node *node, SynthCalls *c)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr) && ((FuncExpr *) node)->funcid == c->fn)
		c->calls++;
	return expression_tree_walker(node, SynthCountCalls, c);
}

/* Plan visitor: the calls in a node's expressions (its target list, quals, functions, parameters). */
static bool
SynthVisitPlan(Plan *plan, void *context)
{
	SynthCalls *c = context;

	(void) SynthCountCalls((Node *) plan->targetlist, c);
	(void) SynthCountCalls((Node *) plan->qual, c);
	if (IsA(plan, Result))
		(void) SynthCountCalls(((Result *) plan)->resconstantqual, c);
	if (IsA(plan, FunctionScan))
		(void) SynthCountCalls((Node *) ((FunctionScan *) plan)->functions, c);
	if (IsA(plan, ValuesScan))
		(void) SynthCountCalls((Node *) ((ValuesScan *) plan)->values_lists, c);
	return false;
}

/* True if plan is the one call of fn: SELECT dp_pg.synthesize(...) or SELECT * FROM dp_pg.synthesize(...). */
static bool
SynthIsSingleCall(Plan *plan, Oid fn)
{
	if (IsA(plan, Result))
		return plan->lefttree == NULL && plan->righttree == NULL && plan->qual == NIL &&
			((Result *) plan)->resconstantqual == NULL;
	if (IsA(plan, FunctionScan) && plan->qual == NIL && list_length(((FunctionScan *) plan)->functions) == 1 &&
		!((FunctionScan *) plan)->funcordinality)
	{
		Node	   *call = linitial_node(RangeTblFunction, ((FunctionScan *) plan)->functions)->funcexpr;

		/* the function scanned is the call itself (not a set of rows it would run for) */
		return IsA(call, FuncExpr) && ((FuncExpr *) call)->funcid == fn;
	}
	return false;
}

/*
 * Before a statement runs (hooks.c): a statement that calls
 * dp_pg.synthesize must call it once, alone (SELECT dp_pg.synthesize(...)
 * or SELECT * FROM dp_pg.synthesize(...)).  A call for every row of a FROM
 * clause or of a set-returning function, or two calls, would make several
 * twins in one statement, and the first failure among them would roll back
 * twins already charged: refused now, before anything is made or charged.
 * Only statements whose plan depends on a function of dp_pg's are looked at.
 */
void
DpSynthesizeCheckStatement(PlannedStmt *stmt)
{
	SynthCalls	c;
	ListCell   *lc;
	bool		maybe = false;
	uint32		hash;

	if (stmt->commandType != CMD_SELECT || stmt->invalItems == NIL)
		return;
	c.fn = SynthFunction();
	if (!OidIsValid(c.fn))
		return;
	hash = GetSysCacheHashValue1(PROCOID, ObjectIdGetDatum(c.fn));
	foreach(lc, stmt->invalItems)
	{
		PlanInvalItem *item = lfirst_node(PlanInvalItem, lc);

		if (item->cacheId == PROCOID && item->hashValue == hash)
			maybe = true;
	}
	if (!maybe)
		return;
	c.calls = 0;
	(void) DpPlanWalkStmt(stmt, SynthVisitPlan, &c);
	if (c.calls == 0 || (c.calls == 1 && SynthIsSingleCall(stmt->planTree, c.fn)))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("dp_pg.synthesize makes one twin per statement"),
			 errdetail("This statement could call it %s; if a later call failed, the twins made before it would be "
					   "rolled back, charged.  Nothing was made or charged.",
					   c.calls > 1 ? "more than once" : "for each row of its FROM clause"),
			 errhint("Call it alone: SELECT dp_pg.synthesize(...); one statement per twin.")));
}

/*
 * dp_pg.synthesize(source regclass, target text, mechanism dp_mechanism,
 * columns name[] DEFAULT NULL, bins int DEFAULT 10, rows bigint DEFAULT NULL)
 * RETURNS bigint: the twin's number of rows (see the file comment).
 */
Datum
dp_synthesize(PG_FUNCTION_ARGS)
{
	Oid			source;
	text	   *target;
	DpMechanism mech;
	ArrayType  *columns;
	int32		bins;
	volatile int64 rows = -1;
	Relation	rel;
	Relation	twin;
	DpProtected *prot;
	Oid			roles[DP_MAX_CHARGE_ROLES];
	int			nroles;
	volatile AttrNumber unit_attno = InvalidAttrNumber;
	volatile int64 unit_rows = 1;
	SynthColumn *cols;
	int			ncols;
	int			K[SYNTH_MAX_COLUMNS];
	SynthPlan  *plan;
	char		err[256];
	volatile int64 made = 0;

	/* 1. checks that read no row */
	DpRequirePreload();
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("dp_pg.synthesize cannot run on a hot standby"),
				 errdetail("A twin is a new table.  Nothing was charged for this call."),
				 errhint("Make the twin on the primary: it replicates to every standby.")));
	PreventCommandIfReadOnly("dp_pg.synthesize()");
	PreventCommandIfParallelMode("dp_pg.synthesize()");
	SynthCheckConstantArguments(fcinfo);
	for (int i = 0; i < 3; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s of dp_pg.synthesize must not be null", synth_arg_names[i])));
	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("bins of dp_pg.synthesize must not be null")));
	source = PG_GETARG_OID(0);
	target = PG_GETARG_TEXT_PP(1);
	memcpy(&mech, PG_GETARG_POINTER(2), sizeof(DpMechanism));
	columns = PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3);
	bins = PG_GETARG_INT32(4);
	if (bins < 1 || bins > SYNTH_MAX_BINS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bins must be between 1 and %d, not %d", SYNTH_MAX_BINS, bins)));
	if (!PG_ARGISNULL(5))
	{
		rows = PG_GETARG_INT64(5);
		if (rows < 0 || rows > SYNTH_MAX_ROWS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rows must be between 0 and " INT64_FORMAT ", not " INT64_FORMAT, SYNTH_MAX_ROWS, rows)));
	}
	if (!dp_mechanism_validate(&mech, err, sizeof(err)))
		DpReportMechanismError(err);
	if (!dp_mechanism_is_privacy_form(&mech))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dp_pg.synthesize needs a privacy form of mechanism"),
				 errdetail("State epsilon (and delta) or rho, as in laplace(epsilon=1) or gaussian(epsilon=1, delta=1e-6).")));

	rel = table_open(source, AccessShareLock);
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(rel)),
				 errdetail("dp_pg.synthesize makes twins of plain tables.  Nothing was charged for this call.")));
	/* a twin reads the table's own rows: not a protected table's partition, nor a table with children */
	if (DpFamilyOf(source, NULL) == DP_FAMILY_MEMBER || DpFamilyOf(source, NULL) == DP_FAMILY_ANCESTOR ||
		rel->rd_rel->relhassubclass)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("\"%s\" is part of a partitioned table or an inheritance tree", RelationGetRelationName(rel)),
				 errdetail("dp_pg.synthesize makes twins of plain tables without partitions, inheritance children or "
						   "parents.  Nothing was charged for this call.")));
	prot = DpFindProtected(DpProtectedTables(), source);
	nroles = DpLedgerChargedRoles(roles);
	if (prot == NULL && nroles == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is not protected", RelationGetRelationName(rel)),
				 errdetail("A twin protects the rows of a protected table; this one is not, and no budget would be charged."),
				 errhint("Protect it with dp_pg.protect(), or copy it with CREATE TABLE ... AS.")));
	if (prot != NULL && prot->has_unit)
	{
		unit_attno = get_attnum(source, NameStr(prot->unit));
		if (unit_attno == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("the privacy unit \"%s\" of \"%s\" does not exist", NameStr(prot->unit),
							RelationGetRelationName(rel))));
		unit_rows = (int64) prot->max_groups * prot->max_rows;
		if (unit_rows > SYNTH_MAX_UNIT_ROWS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the privacy unit of \"%s\" allows " INT64_FORMAT " rows per unit; a twin measures at most %d",
							RelationGetRelationName(rel), unit_rows, SYNTH_MAX_UNIT_ROWS),
					 errdetail("A twin keeps max_groups_contributed * max_rows_per_unit rows of each unit.  Nothing was charged for this call.")));
		SynthCheckUnitType(rel, unit_attno);
	}
	if (check_enable_rls(source, InvalidOid, true) == RLS_ENABLED &&
		(prot == NULL || DpHasOtherPolicies(rel)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("dp_pg.synthesize cannot apply the row-level security policies of \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail("Its policies restrict the rows you may read; a twin is made from every row.  Nothing was charged for this call.")));

	ncols = SynthResolveColumns(rel, columns, bins, unit_attno, &cols);
	/* analysts read protected tables through dp_pg (as dp queries do); anyone else needs SELECT */
	if (prot == NULL || nroles == 0)
		SynthRequireSelect(rel, cols, ncols, unit_attno);
	for (int j = 0; j < ncols; j++)
		K[j] = cols[j].K;

	synth_cxt = AllocSetContextCreate(CurrentMemoryContext, "dp_pg synthesize", ALLOCSET_DEFAULT_SIZES);
	synth_set_allocator(SynthPalloc);
	PG_TRY();
	{
		SynthCounts counts;
		SynthMeasured meas;
		SynthModel	model;
		DpCost		total;

		plan = MemoryContextAllocZero(synth_cxt, sizeof(SynthPlan));
		if (!synth_plan(plan, &mech, ncols, K, unit_rows, err, sizeof(err)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cannot plan the twin's measurements: %s", err),
					 errdetail("Nothing was charged for this call.")));
		total = plan->total;
		DpLedgerCheckCost(&total);
		DpCheckReleaseFloor("dp_pg.synthesize", &total);

		/* 2. the target */
		twin = SynthCreateTarget(target, cols, ncols);

		/* 3. the charge, durable before any row is read */
		if (nroles > 0)
		{
			DpTableCharge table;

			memset(&table, 0, sizeof(table));
			/* the source's table budget too */
			if (prot != NULL && prot->has_budget)
			{
				table.budget = prot->budget;
				table.relid = source;
			}
			DpLedgerCharge(roles, nroles, &table, prot != NULL && prot->has_budget ? 1 : 0, &total,
						   debug_query_string ? debug_query_string : "SELECT dp_pg.synthesize(...)",
						   SynthChargeDetail(plan, rel, cols));
			DpDebugPause("before_release");
		}

		/* 4. one pass */
		synth_counts_init(&counts, ncols, K);
		SynthReadTable(rel, cols, ncols, unit_attno, unit_rows, &counts);

		/* 5. the private steps, the model, the rows */
		synth_measure(plan, &counts, DpBackendRng(), &meas);
		synth_fit(&meas, &model);
		if (rows < 0)
		{
			double		n = floor(model.total + 0.5);

			rows = n > (double) SYNTH_MAX_ROWS ? SYNTH_MAX_ROWS : (int64) n;
		}
		SynthFill(twin, &model, cols, ncols, rows);
		made = rows;
		table_close(twin, NoLock);
	}
	PG_FINALLY();
	{
		synth_set_allocator(NULL);
		MemoryContextDelete(synth_cxt);
		synth_cxt = NULL;
	}
	PG_END_TRY();
	table_close(rel, AccessShareLock);
	PG_RETURN_INT64(made);
}
