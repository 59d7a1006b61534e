/*
 * requests.c — what a backend asks of the ledger worker: charges (one, or a
 * forwarded batch), budget and cap changes, pages of the ledger tables for
 * the views of any database, refusals for the durable log, reloads, and
 * the names of dropped roles.  Each request goes through a slot (shared.c)
 * and waits for its verdict.
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above; within ledger/ it calls shared.c.
 */
#include "postgres.h"

#include <math.h>

#include "common/shortest_dec.h"
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "funcapi.h"
#include "shared.h"

/* The value of a limit for messages. */
static const char *
DpRefusalName(DpRefusal r)
{
	switch (r)
	{
		case DP_REFUSE_EPSILON:
		case DP_REFUSE_QUERY_EPSILON:
			return "epsilon";
		case DP_REFUSE_DELTA:
		case DP_REFUSE_QUERY_DELTA:
			return "delta";
		case DP_REFUSE_RHO:
		case DP_REFUSE_QUERY_RHO:
			return "rho";
		default:
			return "budget";
	}
}

/* A role's name for messages (its OID if it has none any more). */
static const char *
DpRoleName(Oid role)
{
	const char *name = GetUserNameFromId(role, true);

	return name ? name : psprintf("%u", role);
}

/* ERROR 22023 unless cost is a charge the ledger can record (see dp_cost_valid_charge). */
void
DpLedgerCheckCost(const DpCost *cost)
{
	char		why[256];

	if (!dp_cost_valid_charge(cost, why, sizeof(why)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the privacy cost of this query is not a valid charge"),
				 errdetail("Summed over the query's dp aggregate calls, %s.  Nothing was charged and nothing was released.", why),
				 errhint("Use fewer dp aggregate calls in one query, or mechanisms with a smaller delta.")));
}

/* Fill a slot that is ours (FILLING) with a charge request. */
static void
DpFillCharge(DpLedgerSlot *slot, Oid requested_by, const Oid *roles, int nroles,
			 const pg_uuid_t *tables, int ntables, const DpCost *cost, const char *query, const char *detail)
{
	int			qlen;

	slot->kind = DP_REQ_CHARGE;
	slot->requested_by = requested_by;
#ifdef DP_PG_TEST_SWITCHES
	slot->debug_poison = dp_debug_poison_charge;
#endif
	slot->forwarded = false;
	slot->nroles = nroles;
	memcpy(slot->roles, roles, sizeof(Oid) * nroles);
	slot->ntables = ntables;
	if (ntables > 0)
		memcpy(slot->tables, tables, sizeof(pg_uuid_t) * ntables);
	memset(&slot->renew, 0, sizeof(slot->renew));
	slot->renew_from_given = false;
	slot->cost = *cost;
	qlen = query ? pg_mbcliplen(query, strlen(query), DP_QUERY_TEXT_LEN - 1) : 0;
	if (qlen > 0)
		memcpy(slot->query, query, qlen);
	slot->query[qlen] = '\0';
	if (detail && strlen(detail) < DP_DETAIL_LEN)
		strcpy(slot->detail, detail);
	else
		strcpy(slot->detail, "{\"truncated\": true}");
}

/* Charge a batch of requests and wait for every verdict (see ledger.h). */
void
DpLedgerChargeMany(int n, const DpChargeRequest *reqs, DpChargeVerdict *out)
{
	int			idx[DP_FORWARD_MAX];
	int			of[DP_FORWARD_MAX];
	volatile int taken = 0;
	DpLedgerSlot *results;
	char		why[200];

	Assert(n > 0 && n <= DP_FORWARD_MAX);
	DpLedgerAwaitReady();
	PG_TRY();
	{
		for (int r = 0; r < n; r++)
		{
			DpLedgerSlot *slot;

			memset(&out[r], 0, sizeof(DpChargeVerdict));
			out[r].refused_table = -1;
			if (reqs[r].nroles < 1 || reqs[r].nroles > DP_MAX_CHARGE_ROLES ||
				reqs[r].ntables < 0 || reqs[r].ntables > DP_MAX_CHARGE_TABLES ||
				!dp_cost_valid_charge(&reqs[r].cost, why, sizeof(why)))
			{
				out[r].verdict = DP_VERDICT_ERROR;
				out[r].sqlerrcode = ERRCODE_INVALID_PARAMETER_VALUE;
				snprintf(out[r].errmsg, sizeof(out[r].errmsg), "the forwarded charge is not valid: %s",
						 reqs[r].nroles < 1 || reqs[r].nroles > DP_MAX_CHARGE_ROLES ? "bad number of roles" :
						 reqs[r].ntables < 0 || reqs[r].ntables > DP_MAX_CHARGE_TABLES ? "bad number of tables" : why);
				continue;
			}
			idx[taken] = DpLedgerTakeSlot();
			of[taken] = r;
			taken++;
			slot = &dp_ledger->slots[idx[taken - 1]];
			DpFillCharge(slot, reqs[r].requested_by, reqs[r].roles, reqs[r].nroles,
						 reqs[r].tables, reqs[r].ntables, &reqs[r].cost, reqs[r].query, reqs[r].detail);
		}
	}
	PG_CATCH();
	{
		/* slots taken but never submitted go back */
		LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
		for (int k = 0; k < taken; k++)
			dp_ledger->slots[idx[k]].state = DP_SLOT_FREE;
		LWLockRelease(dp_ledger->lock);
		ConditionVariableBroadcast(&dp_ledger->slot_freed);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (taken == 0)
		return;
	results = palloc(sizeof(DpLedgerSlot) * taken);
	DpLedgerSubmitMany(taken, idx, results);
	for (int k = 0; k < taken; k++)
		DpSlotToVerdict(&results[k], &out[of[k]]);
	pfree(results);
}

/* The name of the budget a verdict names: a role's, or a table's of this request. */
static const char *
DpBudgetName(Oid role, int table, const DpTableCharge *tables, int ntables)
{
	if (table >= 0 && table < ntables)
	{
		char	   *rel = get_rel_name(tables[table].relid);

		return psprintf("table \"%s\"", rel ? rel : "?");
	}
	return psprintf("role \"%s\"", DpRoleName(role));
}

/* Charge cost to roles and table budgets, durably and outside the caller's transaction. */
void
DpLedgerCharge(const Oid *roles, int nroles, const DpTableCharge *tables, int ntables,
			   const DpCost *cost, const char *query, const char *detail)
{
	int			i;
	DpLedgerSlot *slot;
	DpLedgerSlot result;
	pg_uuid_t	budgets[DP_MAX_CHARGE_TABLES];
	const char *who;
	const char *owner;

	Assert(nroles > 0 && nroles <= DP_MAX_CHARGE_ROLES);
	if (ntables > DP_MAX_CHARGE_TABLES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a query may read the protected tables of at most %d table budgets", DP_MAX_CHARGE_TABLES)));
	for (int t = 0; t < ntables; t++)
		budgets[t] = tables[t].budget;
	/* a cost the ledger could not record must never enter a batch */
	DpLedgerCheckCost(cost);
	DpDebugPause("before_charge");
	i = DpLedgerTakeSlot();
	slot = &dp_ledger->slots[i];
	/* the slot is ours (FILLING: the worker ignores it): fill it without the lock */
	DpFillCharge(slot, GetSessionUserId(), roles, nroles, budgets, ntables, cost, query, detail);
	DpLedgerSubmit(i, &result);
	who = DpBudgetName(result.refused_role, result.refused_table, tables, ntables);
	owner = result.refused_table >= 0 ? "table's" : "role's";

	if (result.verdict == DP_VERDICT_REFUSED)
	{
		bool		per_query = result.refusal == DP_REFUSE_QUERY_EPSILON ||
			result.refusal == DP_REFUSE_QUERY_DELTA || result.refusal == DP_REFUSE_QUERY_RHO;
		bool		above_asked;
		char		rule[DP_REFUSAL_RULE_LEN];

		snprintf(rule, sizeof(rule), "%s %s of %s",
				 per_query ? "per-query cap on" : "budget limit on",
				 DpRefusalName(result.refusal), who);
		DpLedgerNoteRefusal(rule, ERRCODE_DP_BUDGET_EXCEEDED);

		/*
		 * An (epsilon, delta) charge is accounted at its own epsilon by basic
		 * composition only while the deltas add up to half the delta limit
		 * (the other half pays for the Renyi certificates): beyond, its
		 * epsilon is the Renyi one, larger than asked.  Say so.
		 */
		above_asked = result.refusal == DP_REFUSE_EPSILON || result.refusal == DP_REFUSE_QUERY_EPSILON;
		above_asked = above_asked && cost->delta > 0.0 && isfinite(result.requested) &&
			result.requested - result.spent > cost->epsilon * (1.0 + 1e-9);
		if (per_query)
			ereport(ERROR,
					(errcode(ERRCODE_DP_BUDGET_EXCEEDED),
					 errmsg("this query exceeds the per-query %s cap of %s",
							DpRefusalName(result.refusal), who),
					 above_asked ?
					 errdetail("The query's epsilon is %.6g (it asks for epsilon %.6g with delta %.6g; basic composition takes a delta only up to half the role's delta limit, so its epsilon is the Renyi accounting's); one query may spend at most %.6g.",
							   result.requested, cost->epsilon, cost->delta, result.limit) :
					 errdetail("The query's %s is %.6g; one query may spend at most %.6g.",
							   DpRefusalName(result.refusal), result.requested, result.limit),
					 errhint("Nothing was charged and nothing was released.  Ask for a smaller %s%s.",
							 DpRefusalName(result.refusal),
							 above_asked ? " or a delta of at most half the delta limit" : "")));
		ereport(ERROR,
				(errcode(ERRCODE_DP_BUDGET_EXCEEDED),
				 errmsg("privacy budget of %s exceeded", who),
				 result.refusal == DP_REFUSE_DELTA && result.limit == 0.0 ?
				 errdetail("The delta limit is 0 (pure differential privacy): only queries without delta fit, and this one has delta %.6g.",
						   result.requested - result.spent) :
				 result.refusal == DP_REFUSE_EPSILON && isinf(result.requested) ?
				 errdetail("epsilon spent %.6g, limit %.6g; this query's epsilon has no finite bound at the delta the %s has left (its delta limit is spent, or too little of it is left).",
						   result.spent, result.limit, result.refused_table >= 0 ? "table" : "role") :
				 above_asked ?
				 errdetail("epsilon spent %.6g, limit %.6g, this query would bring it to %.6g: it asks for epsilon %.6g with delta %.6g, but basic composition counts a charge at its own epsilon only while the deltas add up to at most half the %s delta limit; beyond that its epsilon is the Renyi accounting's, larger here.",
						   result.spent, result.limit, result.requested, cost->epsilon, cost->delta, owner) :
				 errdetail("%s spent %.6g, limit %.6g, this query would bring it to %.6g.",
						   DpRefusalName(result.refusal), result.spent, result.limit, result.requested),
				 result.refused_table >= 0 ?
				 errhint("Nothing was charged and nothing was released.  The table's budget is shared by every role that queries it%s; ask the DBA for a larger one.",
						 " (dp_pg.table_budgets shows it)") :
				 above_asked ?
				 errhint("Nothing was charged and nothing was released.  Give the mechanism a delta of at most half of what is left of the delta limit (or a smaller epsilon), or ask the DBA for a larger budget.") :
				 errhint("Nothing was charged and nothing was released.  Ask for a smaller %s (in the mechanism, or dp_pg.default_mechanism for calls that name none and dp_pg.partition_mechanism for GROUP BY keys without public values), or ask the DBA for a larger budget.",
						 DpRefusalName(result.refusal))));
	}
	if (result.verdict != DP_VERDICT_OK && result.refused_table >= 0)
		ereport(ERROR,
				(errcode(result.sqlerrcode),
				 errmsg("the dp_pg ledger could not charge the privacy budget of %s: %s", who, result.errmsg),
				 errdetail("Nothing was charged and nothing was released."),
				 errhint("The table is bound to a table budget that the ledger does not hold (a restore of this database without the ledger's): a DBA runs dp_pg.set_table_budget (or dp_pg.drop_table_budget) for it.")));
	if (result.verdict != DP_VERDICT_OK)
		ereport(ERROR,
				(errcode(result.sqlerrcode),
				 errmsg("the dp_pg ledger could not record the charge: %s", result.errmsg),
				 errdetail("Nothing was charged and nothing was released.")));
	/* charged: say so when a budget's spending passed 90% of a limit */
	for (int w = 0; w < result.nwarn && w < DP_MAX_WARNINGS; w++)
		ereport(WARNING,
				(errmsg("%s has spent %.0f%% of its %s limit",
						DpBudgetName(result.warn[w].role, result.warn[w].table, tables, ntables),
						floor(100.0 * result.warn[w].spent / result.warn[w].limit),
						DpRefusalName(result.warn[w].what)),
				 errdetail("%s spent %.6g of %.6g, this query included.",
						   DpRefusalName(result.warn[w].what), result.warn[w].spent, result.warn[w].limit)));
}

/* A JSON number, or null for NaN / Inf. */
static void
DpJsonNumber(StringInfo buf, const char *key, double v)
{
	char		num[DOUBLE_SHORTEST_DECIMAL_LEN];

	if (isnan(v) || isinf(v))
		appendStringInfo(buf, "\"%s\": null", key);
	else
	{
		/* the shortest text that reads back as v */
		double_to_shortest_decimal_buf(v, num);
		appendStringInfo(buf, "\"%s\": %s", key, num);
	}
}

/* The renewal of a change, for its ledger row's detail: ", "renew": "1 mon"" (nothing without one). */
static void
DpJsonRenew(StringInfo buf, const DpRenew *renew)
{
	if (renew == NULL || !DpRenewIsSet(renew))
		return;
	appendStringInfo(buf, ", \"renew\": \"%s\"",
					 DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(&renew->every))));
	if (renew->from != DT_NOBEGIN)
		appendStringInfo(buf, ", \"renew_from\": \"%s\"", timestamptz_to_str(renew->from));
}

/* A JSON string (escaped) as the value of key. */
static void
DpJsonText(StringInfo buf, const char *key, const char *value)
{
	appendStringInfo(buf, "\"%s\": ", key);
	escape_json(buf, value);
}

/* Send a budget administration request and wait for it; the verdict into *out (if given). */
static void
DpLedgerAdmin(DpRequestKind kind, Oid role, const DpLimits *limits, const DpRenew *renew,
			  const pg_uuid_t *table, const char *database, const char *table_name, DpLedgerSlot *out)
{
	int			i;
	DpLedgerSlot *slot;
	DpLedgerSlot result;
	StringInfoData detail;
	bool		table_kind = kind == DP_REQ_SET_TABLE_BUDGET || kind == DP_REQ_REMOVE_TABLE_BUDGET;

	/* the ledger row of a change records the values it set */
	initStringInfo(&detail);
	appendStringInfoChar(&detail, '{');
	if ((kind == DP_REQ_SET_BUDGET || kind == DP_REQ_SET_TABLE_BUDGET) && limits)
	{
		DpJsonNumber(&detail, "epsilon_limit", limits->epsilon);
		appendStringInfoString(&detail, ", ");
		DpJsonNumber(&detail, "delta_limit", limits->delta);
		appendStringInfoString(&detail, ", ");
		DpJsonNumber(&detail, "rho_limit", limits->rho);
		DpJsonRenew(&detail, renew);
	}
	else if (kind == DP_REQ_SET_CAPS && limits)
	{
		DpJsonNumber(&detail, "max_epsilon_per_query", limits->epsilon);
		appendStringInfoString(&detail, ", ");
		DpJsonNumber(&detail, "max_delta_per_query", limits->delta);
		appendStringInfoString(&detail, ", ");
		DpJsonNumber(&detail, "max_rho_per_query", limits->rho);
	}
	if (table_kind)
	{
		/* by name: a budget found again after its binding was lost (DpTableBudgetByName) */
		if (detail.len > 1)
			appendStringInfoString(&detail, ", ");
		DpJsonText(&detail, "database", database);
		appendStringInfoString(&detail, ", ");
		DpJsonText(&detail, "table", table_name);
	}
	appendStringInfoChar(&detail, '}');

	DpLedgerAwaitReady();
	i = DpLedgerTakeSlot();
	slot = &dp_ledger->slots[i];
	slot->kind = kind;
	slot->requested_by = GetSessionUserId();
#ifdef DP_PG_TEST_SWITCHES
	slot->debug_poison = dp_debug_poison_charge;
#endif
	slot->nroles = table_kind ? 0 : 1;
	slot->roles[0] = role;
	slot->ntables = table_kind ? 1 : 0;
	memset(&slot->tables[0], 0, sizeof(pg_uuid_t));
	if (table != NULL)
		slot->tables[0] = *table;
	strlcpy(slot->database, database ? database : "", sizeof(slot->database));
	strlcpy(slot->table_name, table_name ? table_name : "", sizeof(slot->table_name));
	dp_cost_zero(&slot->cost);
	slot->limits.epsilon = slot->limits.delta = slot->limits.rho = NAN;
	slot->caps = slot->limits;
	memset(&slot->renew, 0, sizeof(slot->renew));
	slot->renew_from_given = false;
	if (renew != NULL && DpRenewIsSet(renew))
	{
		slot->renew = *renew;
		/* from DT_NOBEGIN: the worker chooses (kept if the period is unchanged, else now) */
		slot->renew_from_given = renew->from != DT_NOBEGIN;
	}
	if (limits && kind == DP_REQ_SET_CAPS)
		slot->caps = *limits;
	else if (limits)
		slot->limits = *limits;
	slot->query[0] = '\0';
	strlcpy(slot->detail, detail.data, DP_DETAIL_LEN);
	DpLedgerSubmit(i, &result);
	if (result.verdict != DP_VERDICT_OK)
		ereport(ERROR,
				(errcode(result.sqlerrcode),
				 errmsg("the dp_pg ledger could not record the change: %s", result.errmsg),
				 errdetail("Nothing was changed.")));
	if (out != NULL)
		*out = result;
}

/* Set (or remove) a role's limits and renewal; durable, logged. */
void
DpLedgerSetBudget(Oid role, const DpLimits *limits, const DpRenew *renew, bool remove)
{
	DpLedgerAdmin(remove ? DP_REQ_REMOVE_BUDGET : DP_REQ_SET_BUDGET, role, limits, renew, NULL, NULL, NULL, NULL);
}

/* Set (all NaN: remove) a role's per-query caps; durable, logged. */
void
DpLedgerSetCaps(Oid role, const DpLimits *caps)
{
	DpLedgerAdmin(DP_REQ_SET_CAPS, role, caps, NULL, NULL, NULL, NULL, NULL);
}

/* Reset a role's spending (DBA only); durable, logged. */
void
DpLedgerResetBudget(Oid role)
{
	DpLedgerAdmin(DP_REQ_RESET, role, NULL, NULL, NULL, NULL, NULL, NULL);
}

/* Set a table budget's limits and renewal (see ledger.h); returns the budget set. */
pg_uuid_t
DpLedgerSetTableBudget(const pg_uuid_t *budget, const char *database, const char *table_name,
					   const DpLimits *limits, const DpRenew *renew)
{
	DpLedgerSlot result;

	DpLedgerAdmin(DP_REQ_SET_TABLE_BUDGET, InvalidOid, limits, renew, budget, database, table_name, &result);
	return result.tables[0];
}

/* Remove a table budget (its ledger rows stay); durable, logged. */
void
DpLedgerRemoveTableBudget(const pg_uuid_t *budget, const char *database, const char *table_name)
{
	DpLedgerAdmin(DP_REQ_REMOVE_TABLE_BUDGET, InvalidOid, NULL, NULL, budget, database, table_name, NULL);
}

/* Copy out the budget rows (palloc'd array); returns the count. */
int
DpLedgerBudgetRows(DpBudgetRow **rows)
{
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *e;
	int			n = 0;
	int			cap;
	DpBudgetRow *out;

	DpLedgerAwaitReady();
	LWLockAcquire(dp_ledger->lock, LW_SHARED);
	cap = hash_get_num_entries(dp_budgets);
	out = palloc(sizeof(DpBudgetRow) * Max(cap, 1));
	hash_seq_init(&seq, dp_budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (n < cap)
		{
			out[n].role = e->role;
			out[n].caps = e->caps;
			out[n].s = e->s;
			n++;
		}
	}
	LWLockRelease(dp_ledger->lock);
	*rows = out;
	return n;
}

/* Copy out the table budgets (palloc'd array); returns the count. */
int
DpLedgerTableBudgetRows(DpTableBudgetRow **rows)
{
	HASH_SEQ_STATUS seq;
	DpTableBudgetEntry *e;
	int			n = 0;
	int			cap;
	DpTableBudgetRow *out;

	DpLedgerAwaitReady();
	LWLockAcquire(dp_ledger->lock, LW_SHARED);
	cap = hash_get_num_entries(dp_table_budgets);
	out = palloc(sizeof(DpTableBudgetRow) * Max(cap, 1));
	hash_seq_init(&seq, dp_table_budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (n < cap)
		{
			out[n].budget = e->budget;
			memcpy(out[n].database, e->database, sizeof(out[n].database));
			memcpy(out[n].table_name, e->table_name, sizeof(out[n].table_name));
			out[n].s = e->s;
			n++;
		}
	}
	LWLockRelease(dp_ledger->lock);
	*rows = out;
	return n;
}

/*
 * Reading the ledger tables from any database
 * -------------------------------------------
 * The tables live in the ledger database; a backend elsewhere cannot read
 * them.  So a read is a request to the worker, like a charge: the backend
 * creates a dynamic shared memory segment, and asks for the rows after the
 * last id it has, a page at a time (at most DP_READ_PAGE_ROWS rows, as many
 * as fit in the segment); the worker runs the SELECT in its batch
 * transaction (its own subtransaction: a failed read fails alone) and
 * writes the rows there.  A row travels as its columns: a pass-by-value
 * Datum as is, a varlena detoasted and flat (text, jsonb and arrays are
 * position-independent), NULL as a length of -1.  Pages keep the worker's
 * share of a big read short, so charges are never held up for long.
 */

/* Read the rows of a ledger table into fcinfo's materialized SRF (see ledger.h). */
void
DpLedgerReadRows(FunctionCallInfo fcinfo, DpReadWhat what, bool all, const Oid *roles, int nroles)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	desc;
	dsm_segment *seg;
	DpReadReply *reply;
	int64		after = 0;
	Datum	   *values;
	bool	   *nulls;

	Assert(nroles >= 0 && nroles <= DP_MAX_CHARGE_ROLES);
	InitMaterializedSRF(fcinfo, 0);
	desc = rsinfo->setDesc;
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	DpLedgerAwaitReady();
	seg = dsm_create(DP_READ_BUFFER, 0);
	reply = dsm_segment_address(seg);
	for (;;)
	{
		int			i = DpLedgerTakeSlot();
		DpLedgerSlot *slot = &dp_ledger->slots[i];
		DpLedgerSlot result;
		const char *p;

		slot->kind = DP_REQ_READ;
		slot->requested_by = GetSessionUserId();
#ifdef DP_PG_TEST_SWITCHES
		slot->debug_poison = false;
#endif
		slot->nroles = nroles;
		if (nroles > 0)
			memcpy(slot->roles, roles, sizeof(Oid) * nroles);
		dp_cost_zero(&slot->cost);
		slot->read_what = what;
		slot->read_all = all;
		/* a database still at the 0.1.0 catalog reads the refusals' database as an OID */
		slot->read_names = what == DP_READ_REFUSALS && desc->natts > 4 &&
			TupleDescAttr(desc, 4)->atttypid == TEXTOID;
		/* a database at the 0.2.0 catalog reads the ledger's table budgets, windows and rdp_delta */
		slot->read_v2 = what == DP_READ_LEDGER && desc->natts >= 14;
		slot->ntables = 0;
		slot->read_after = after;
		slot->read_handle = dsm_segment_handle(seg);
		slot->query[0] = '\0';
		slot->detail[0] = '\0';
		reply->natts = 0;
		reply->nrows = 0;
		reply->used = 0;
		reply->more = false;
		DpLedgerSubmit(i, &result);
		if (result.verdict != DP_VERDICT_OK)
			ereport(ERROR,
					(errcode(result.sqlerrcode),
					 errmsg("the dp_pg ledger could not read its rows: %s", result.errmsg)));
		if (reply->nrows > 0 && reply->natts != desc->natts)
			elog(ERROR, "dp_pg ledger: a row of %d columns where %d were expected",
				 reply->natts, desc->natts);
		p = reply->data;
		for (int r = 0; r < reply->nrows; r++)
		{
			for (int c = 0; c < desc->natts; c++)
			{
				Form_pg_attribute att = TupleDescAttr(desc, c);
				int32		len;

				memcpy(&len, p, sizeof(int32));
				p += sizeof(int32);
				nulls[c] = len < 0;
				if (len < 0)
					values[c] = (Datum) 0;
				else if (att->attbyval)
				{
					Datum		d;

					memcpy(&d, p, sizeof(Datum));
					values[c] = d;
				}
				else
				{
					char	   *v = palloc(len);

					memcpy(v, p, len);
					values[c] = PointerGetDatum(v);
				}
				p += Max(len, 0);
			}
			tuplestore_putvalues(rsinfo->setResult, desc, values, nulls);
			for (int c = 0; c < desc->natts; c++)
				if (!nulls[c] && !TupleDescAttr(desc, c)->attbyval)
					pfree(DatumGetPointer(values[c]));
		}
		if (!reply->more)
			break;
		after = reply->last_id;
		CHECK_FOR_INTERRUPTS();
	}
	dsm_detach(seg);
}

/* Note a refusal of an analyst's query for the durable log (see ledger.h). */
void
DpLedgerNoteRefusal(const char *rule, int sqlerrcode)
{
	Oid			user = GetSessionUserId();

	if (dp_ledger == NULL || !OidIsValid(user) || superuser_arg(user))
		return;
	DpLedgerNoteRefusalFrom(GetCurrentTimestamp(), user, GetUserId(), MyDatabaseId,
							sqlerrcode, rule, debug_query_string);
}

/* Count refusals that were not queued (see ledger.h). */
void
DpLedgerNoteRefusalsMissed(int64 n)
{
	if (dp_ledger == NULL)
		return;
	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	dp_ledger->refusals_missed += n;
	if (dp_ledger->worker_latch)
		SetLatch(dp_ledger->worker_latch);
	LWLockRelease(dp_ledger->lock);
}

/* Queue a refusal for the log (see ledger.h); never waits, never fails. */
void
DpLedgerNoteRefusalFrom(TimestampTz at, Oid session_user, Oid current_user, Oid database,
						int sqlerrcode, const char *rule, const char *query)
{
	DpRefusalRecord *rec;

	if (dp_ledger == NULL)
		return;
	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	if (dp_ledger->refusal_count >= DP_REFUSAL_RING)
	{
		dp_ledger->refusals_missed++;
		LWLockRelease(dp_ledger->lock);
		return;
	}
	rec = &dp_ledger->refusals[(dp_ledger->refusal_head + dp_ledger->refusal_count) % DP_REFUSAL_RING];
	dp_ledger->refusal_count++;
	rec->at = at;
	rec->session_user = session_user;
	rec->current_user = current_user;
	rec->database = database;
	rec->sqlerrcode = sqlerrcode;
	rec->rule[0] = '\0';
	if (rule)
	{
		int			rlen = pg_mbcliplen(rule, strlen(rule), DP_REFUSAL_RULE_LEN - 1);

		memcpy(rec->rule, rule, rlen);
		rec->rule[rlen] = '\0';
	}
	rec->query[0] = '\0';
	if (query)
	{
		int			qlen = pg_mbcliplen(query, strlen(query), DP_REFUSAL_QUERY_LEN - 1);

		memcpy(rec->query, query, qlen);
		rec->query[qlen] = '\0';
	}
	if (dp_ledger->worker_latch)
		SetLatch(dp_ledger->worker_latch);
	LWLockRelease(dp_ledger->lock);
}

/* Ask the worker to load the ledger tables again (see ledger.h). */
void
DpLedgerRequestReload(void)
{
	if (dp_ledger == NULL || dp_am_ledger_worker)
		return;
	pg_atomic_fetch_add_u64(&dp_ledger->reload_requested, 1);
	LWLockAcquire(dp_ledger->lock, LW_SHARED);
	if (dp_ledger->worker_latch)
		SetLatch(dp_ledger->worker_latch);
	LWLockRelease(dp_ledger->lock);
}

/* True in the ledger worker itself. */
bool
DpLedgerIsWorker(void)
{
	return dp_am_ledger_worker;
}

/* Whether the ledger holds a budget or a row (see ledger.h). */
bool
DpLedgerHoldsEntries(bool *known)
{
	DpLedgerFlags f = DpLedgerReadFlags();

	*known = f.ready;
	return f.has_entries;
}

/* Queue committed role drops for the worker (see ledger.h); never waits, never fails. */
void
DpLedgerNoteDroppedRoles(int n, const Oid *oids, const NameData *names)
{
	if (dp_ledger == NULL || n == 0)
		return;
	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	for (int i = 0; i < n; i++)
	{
		if (dp_ledger->ndropped >= DP_DROPPED_RING)
		{
			dp_ledger->dropped_overflow = true;
			break;
		}
		dp_ledger->dropped_oid[dp_ledger->ndropped] = oids[i];
		dp_ledger->dropped_name[dp_ledger->ndropped] = names[i];
		dp_ledger->ndropped++;
	}
	if (dp_ledger->worker_latch)
		SetLatch(dp_ledger->worker_latch);
	LWLockRelease(dp_ledger->lock);
}

