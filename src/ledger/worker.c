/*
 * worker.c — the ledger worker on a primary: loading the ledger tables
 * into the budget table, deciding and writing each batch of requests in one
 * transaction (a subtransaction per request), publishing the totals after
 * the commit, serving reads, and writing the refusal log.
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above; within ledger/ it calls shared.c.
 */
#include "postgres.h"

#include <math.h>

#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "funcapi.h"
#include "shared.h"

/* ------------------------------------------------------------------------
 * The ledger worker
 * ------------------------------------------------------------------------
 */

/* A float8 Datum for a cost component; NULL when infinite (never stored). */
static Datum
DpCostDatum(double v, char *null)
{
	if (isinf(v) || isnan(v))
	{
		*null = 'n';
		return (Datum) 0;
	}
	*null = ' ';
	return Float8GetDatum(v);
}

/* The Rényi curve as a float8[] Datum; NULL when it is unbounded somewhere. */
static Datum
DpRdpArray(const DpCost *c, char *null)
{
	Datum		elems[DP_RDP_NALPHAS];

	*null = ' ';
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
	{
		if (!isfinite(c->rdp[i]))
		{
			*null = 'n';
			return (Datum) 0;
		}
		elems[i] = Float8GetDatum(c->rdp[i]);
	}
	return PointerGetDatum(construct_array(elems, DP_RDP_NALPHAS, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/* The boolean a one-row query about the ledger tables' layout returns (what: for the message). */
static bool
DpLayoutQuery(const char *sql, const char *what)
{
	bool		isnull;

	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the layout of %s", what);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* True if the ledger tables have the 0.2.0 layout (names: regrole role, NULL once dropped). */
bool
DpLedgerHasNames(void)
{
	return DpLayoutQuery("SELECT NOT a.attnotnull FROM pg_catalog.pg_attribute a "
						 "WHERE a.attrelid = 'dp_pg.ledger_entries'::pg_catalog.regclass AND a.attname = 'role'",
						 "dp_pg.ledger_entries");
}

/* True if the refusal log keeps database names (0.2.0), not OIDs. */
static bool
DpRefusalLogHasNames(void)
{
	return DpLayoutQuery("SELECT a.atttypid = 'pg_catalog.text'::pg_catalog.regtype FROM pg_catalog.pg_attribute a "
						 "WHERE a.attrelid = 'dp_pg.guard_refusal_log'::pg_catalog.regclass AND a.attname = 'database'",
						 "dp_pg.guard_refusal_log");
}

/* Insert one ledger row; returns nothing, ERROR on failure. */
static void
DpWorkerInsert(Oid role, const char *kind, const DpLedgerSlot *slot)
{
	static const char *sql =
		"INSERT INTO dp_pg.ledger_entries (role, kind, requested_by, query, epsilon, delta, rho, rdp, detail) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)";
	Oid			types[9] = {OIDOID, TEXTOID, OIDOID, TEXTOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8ARRAYOID, TEXTOID};
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		charge = strcmp(kind, "charge") == 0;

	values[0] = ObjectIdGetDatum(role);
	values[1] = CStringGetTextDatum(kind);
	values[2] = ObjectIdGetDatum(slot->requested_by);
	values[3] = CStringGetTextDatum(slot->query);
	if (charge)
	{
		values[4] = DpCostDatum(slot->cost.epsilon, &nulls[4]);
		values[5] = DpCostDatum(slot->cost.delta, &nulls[5]);
		values[6] = DpCostDatum(slot->cost.rho, &nulls[6]);
		values[7] = DpRdpArray(&slot->cost, &nulls[7]);
	}
	else
	{
		nulls[4] = nulls[5] = nulls[6] = nulls[7] = 'n';
		values[4] = values[5] = values[6] = values[7] = (Datum) 0;
	}
	values[8] = CStringGetTextDatum(slot->detail);
	if (SPI_execute_with_args(sql, 9, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into dp_pg.ledger_entries");
}

/* Write a role's limits and caps to dp_pg.budget_limits (or delete them). */
static void
DpWorkerWriteLimits(Oid role, const DpLimits *l, const DpLimits *caps, bool remove)
{
	Oid			types[7] = {OIDOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = ObjectIdGetDatum(role);
	if (remove)
	{
		if (SPI_execute_with_args("DELETE FROM dp_pg.budget_limits WHERE role = $1",
								  1, types, values, nulls, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not delete from dp_pg.budget_limits");
		return;
	}
	values[1] = DpCostDatum(l->epsilon, &nulls[1]);
	values[2] = DpCostDatum(l->delta, &nulls[2]);
	values[3] = DpCostDatum(l->rho, &nulls[3]);
	values[4] = DpCostDatum(caps->epsilon, &nulls[4]);
	values[5] = DpCostDatum(caps->delta, &nulls[5]);
	values[6] = DpCostDatum(caps->rho, &nulls[6]);
	if (SPI_execute_with_args("INSERT INTO dp_pg.budget_limits (role, epsilon_limit, delta_limit, rho_limit, "
							  "max_epsilon_per_query, max_delta_per_query, max_rho_per_query) "
							  "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (role) DO UPDATE SET "
							  "epsilon_limit = EXCLUDED.epsilon_limit, delta_limit = EXCLUDED.delta_limit, "
							  "rho_limit = EXCLUDED.rho_limit, max_epsilon_per_query = EXCLUDED.max_epsilon_per_query, "
							  "max_delta_per_query = EXCLUDED.max_delta_per_query, "
							  "max_rho_per_query = EXCLUDED.max_rho_per_query, updated_at = now()",
							  7, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write dp_pg.budget_limits");
}

/* A double from an SPI result column (NULL -> dflt). */
static double
DpSpiDouble(HeapTuple tup, TupleDesc desc, int col, double dflt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? dflt : DatumGetFloat8(d);
}

/* The cost of a ledger row whose epsilon, delta, rho, rdp are columns col.. col+3. */
void
DpRowCost(HeapTuple tup, TupleDesc desc, int col, DpCost *c)
{
	bool		isnull;
	Datum		arr;

	c->epsilon = DpSpiDouble(tup, desc, col, INFINITY);
	c->delta = DpSpiDouble(tup, desc, col + 1, 0.0);
	c->rho = DpSpiDouble(tup, desc, col + 2, INFINITY);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c->rdp[i] = INFINITY;
	arr = SPI_getbinval(tup, desc, col + 3, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			nelems;

		deconstruct_array(DatumGetArrayTypeP(arr), FLOAT8OID, 8, FLOAT8PASSBYVAL,
						  TYPALIGN_DOUBLE, &elems, &nulls, &nelems);
		for (int i = 0; i < DP_RDP_NALPHAS && i < nelems; i++)
			if (!nulls[i])
				c->rdp[i] = DatumGetFloat8(elems[i]);
	}
}

/*
 * Load limits and spent totals from the tables into the local table into
 * (installed at once afterwards: DpWorkerInstall).  Charges are replayed up
 * to ledger row *upto; with *upto = 0 up to the last row, whose id is stored
 * there.
 */
void
DpWorkerLoad(HTAB *into, int64 *upto)
{
	DpBudgetEntry *e;
	uint64		n;

	if (*upto == 0)
	{
		bool		isnull;

		if (SPI_execute("SELECT coalesce(max(id), 0) FROM dp_pg.ledger_entries", true, 0) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "could not read dp_pg.ledger_entries");
		*upto = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}

	if (SPI_execute("SELECT role, epsilon_limit, delta_limit, rho_limit, max_epsilon_per_query, "
					"max_delta_per_query, max_rho_per_query FROM dp_pg.budget_limits",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read dp_pg.budget_limits");
	n = SPI_processed;
	if (n > DP_MAX_BUDGETS)
		elog(ERROR, "too many dp_pg budgets (at most %d)", DP_MAX_BUDGETS);
	for (uint64 r = 0; r < n; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Oid			role = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		bool		found;

		e = hash_search(into, &role, HASH_ENTER, &found);
		e->limits.epsilon = DpSpiDouble(tup, desc, 2, NAN);
		e->limits.delta = DpSpiDouble(tup, desc, 3, NAN);
		e->limits.rho = DpSpiDouble(tup, desc, 4, NAN);
		e->caps.epsilon = DpSpiDouble(tup, desc, 5, NAN);
		e->caps.delta = DpSpiDouble(tup, desc, 6, NAN);
		e->caps.rho = DpSpiDouble(tup, desc, 7, NAN);
		e->budgeted = true;
		dp_cost_zero(&e->spent);
		e->charges = 0;
	}

	/*
	 * Replay the charges since each role's last reset in ledger order with
	 * the same rounded-up additions the worker made online, so a restart
	 * reproduces the totals bit for bit.  A NULL epsilon (rho forms) makes
	 * basic composition unavailable (+Inf).
	 */
	{
		Portal		portal;
		SPIPlanPtr	plan;
		Oid			types[1] = {INT8OID};
		Datum		values[1] = {Int64GetDatum(*upto)};

		plan = SPI_prepare("WITH last AS (SELECT role, max(id) AS rid FROM dp_pg.ledger_entries "
						   "WHERE kind = 'reset' AND id <= $1 GROUP BY role) "
						   "SELECT e.role, e.epsilon, e.delta, e.rho, e.rdp FROM dp_pg.ledger_entries e "
						   "LEFT JOIN last l USING (role) "
						   "WHERE e.kind = 'charge' AND e.id > coalesce(l.rid, 0) AND e.id <= $1 ORDER BY e.id",
						   1, types);
		if (plan == NULL)
			elog(ERROR, "could not prepare the ledger replay");
		portal = SPI_cursor_open(NULL, plan, values, NULL, true);
		for (;;)
		{
			SPI_cursor_fetch(portal, true, 10000);
			if (SPI_processed == 0)
				break;
			for (uint64 r = 0; r < SPI_processed; r++)
			{
				HeapTuple	tup = SPI_tuptable->vals[r];
				TupleDesc	desc = SPI_tuptable->tupdesc;
				bool		isnull;
				Oid			role = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
				DpCost		c;

				e = hash_search(into, &role, HASH_FIND, NULL);
				if (e == NULL)
					continue;	/* charges of a role whose budget was removed */
				DpRowCost(tup, desc, 2, &c);
				dp_cost_add(&e->spent, &c);
				e->charges++;
			}
			SPI_freetuptable(SPI_tuptable);
		}
		SPI_cursor_close(portal);
	}
}

/*
 * Install a loaded table of budgets at once (a reader never sees a partial
 * set), note whether the ledger holds anything, and with announce bump the
 * budget generation (not while the worker is not ready yet: becoming ready
 * bumps it).
 */
void
DpWorkerInstall(HTAB *local, bool has_rows, bool announce)
{
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *e;

	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, dp_budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
		hash_search(dp_budgets, &e->role, HASH_REMOVE, NULL);
	hash_seq_init(&seq, local);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		DpBudgetEntry *s = hash_search(dp_budgets, &e->role, HASH_ENTER_NULL, NULL);

		if (s == NULL)
		{
			LWLockRelease(dp_ledger->lock);
			elog(FATAL, "too many dp_pg budgets (at most %d)", DP_MAX_BUDGETS);
		}
		*s = *e;
	}
	dp_ledger->has_entries = has_rows || hash_get_num_entries(dp_budgets) > 0;
	if (announce)
		DpLedgerBumpGeneration();
	LWLockRelease(dp_ledger->lock);
}

/* The limits of a working copy whose budget the batch dropped. */
#define DP_REMOVED_LIMIT (-1.0)

/* True if the batch dropped the budget of this working copy. */
static bool
DpEntryRemoved(const DpBudgetEntry *e)
{
	return e->limits.epsilon == DP_REMOVED_LIMIT && e->limits.delta == DP_REMOVED_LIMIT;
}

/*
 * The batch's working copy of role's budget entry: created on first use from
 * the published entry (or empty, with no limits, if the role has none).
 */
static DpBudgetEntry *
DpPendingEntry(HTAB *pending, Oid role)
{
	bool		found;
	DpBudgetEntry *e = hash_search(pending, &role, HASH_ENTER, &found);

	if (!found)
	{
		DpBudgetEntry *shared;

		LWLockAcquire(dp_ledger->lock, LW_SHARED);
		shared = hash_search(dp_budgets, &role, HASH_FIND, NULL);
		if (shared)
			*e = *shared;
		else
		{
			e->role = role;
			e->budgeted = false;
			e->limits.epsilon = e->limits.delta = e->limits.rho = NAN;
			e->caps = e->limits;
			dp_cost_zero(&e->spent);
			e->charges = 0;
		}
		LWLockRelease(dp_ledger->lock);
	}
	return e;
}

/* Give a request an error verdict (nothing of it is written). */
void
DpWorkerFail(DpLedgerSlot *slot, int sqlerrcode, const char *message)
{
	slot->verdict = DP_VERDICT_ERROR;
	slot->sqlerrcode = sqlerrcode;
	strlcpy(slot->errmsg, message, sizeof(slot->errmsg));
}

/*
 * Check a request again before it touches the tables: the requester
 * validated it, but a slot the ledger cannot record must not reach an
 * INSERT.  False if it got an error verdict.
 */
static bool
DpWorkerCheck(DpLedgerSlot *slot)
{
	char		why[200];
	char		message[256];

	if (slot->kind == DP_REQ_READ)
	{
		if (slot->nroles < 0 || slot->nroles > DP_MAX_CHARGE_ROLES ||
			(slot->read_what != DP_READ_LEDGER && slot->read_what != DP_READ_REFUSALS))
		{
			DpWorkerFail(slot, ERRCODE_INTERNAL_ERROR, "malformed ledger request");
			return false;
		}
		return true;
	}
	if (dp_ledger->held)
	{
		snprintf(message, sizeof(message),
				 "it was restored to an earlier point (timeline %u: %s) and is held until a superuser runs "
				 "dp_pg.accept_restored_ledger()", dp_ledger->held_timeline, dp_ledger->held_reason);
		DpWorkerFail(slot, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, message);
		return false;
	}
	if (slot->nroles < 1 || slot->nroles > DP_MAX_CHARGE_ROLES ||
		(slot->kind != DP_REQ_CHARGE && slot->nroles != 1) ||
		(slot->kind != DP_REQ_CHARGE && slot->kind != DP_REQ_SET_BUDGET &&
		 slot->kind != DP_REQ_REMOVE_BUDGET && slot->kind != DP_REQ_RESET &&
		 slot->kind != DP_REQ_SET_CAPS))
	{
		DpWorkerFail(slot, ERRCODE_INTERNAL_ERROR, "malformed ledger request");
		return false;
	}
	if (slot->kind == DP_REQ_CHARGE && !dp_cost_valid_charge(&slot->cost, why, sizeof(why)))
	{
		snprintf(message, sizeof(message), "the privacy cost is not a valid charge: %s", why);
		DpWorkerFail(slot, ERRCODE_INVALID_PARAMETER_VALUE, message);
		return false;
	}
	return true;
}

/*
 * Decide a request against the batch's working copies, without changing
 * them: its verdict is OK, or REFUSED with the numbers of the broken limit.
 * Every working copy it needs is made here, so applying it allocates nothing.
 */
static void
DpWorkerJudge(DpLedgerSlot *slot, HTAB *pending)
{
	DpBudgetEntry *local[DP_MAX_CHARGE_ROLES];

	for (int r = 0; r < slot->nroles; r++)
		local[r] = DpPendingEntry(pending, slot->roles[r]);
	slot->verdict = DP_VERDICT_OK;
	slot->nwarn = 0;
	/* a change of the limits keeps the caps, and the other way round */
	if (slot->kind == DP_REQ_SET_BUDGET)
		slot->caps = local[0]->budgeted ? local[0]->caps : slot->limits;
	if (slot->kind == DP_REQ_SET_CAPS)
		slot->limits = local[0]->budgeted ? local[0]->limits : slot->caps;
	if ((slot->kind == DP_REQ_SET_BUDGET || slot->kind == DP_REQ_SET_CAPS) && !local[0]->budgeted)
	{
		/* a new budget: what was not set is not limited */
		if (slot->kind == DP_REQ_SET_BUDGET)
			slot->caps.epsilon = slot->caps.delta = slot->caps.rho = NAN;
		else
			slot->limits.epsilon = slot->limits.delta = slot->limits.rho = NAN;
	}
	if (slot->kind != DP_REQ_CHARGE)
		return;
	for (int r = 0; r < slot->nroles; r++)
	{
		DpRefusal	why;
		DpCost		after;
		double		value;
		double		cap;

		if (!local[r]->budgeted)
			continue;			/* no budget, or dropped earlier in this batch: no limit */
		why = dp_admits_query(&slot->cost, &local[r]->caps, local[r]->limits.delta, &value, &cap);
		if (why != DP_ADMIT)
		{
			slot->verdict = DP_VERDICT_REFUSED;
			slot->refused_role = slot->roles[r];
			slot->refusal = why;
			slot->spent = 0.0;
			slot->limit = cap;
			slot->requested = value;
			return;
		}
		why = dp_admits(&local[r]->spent, &slot->cost, &local[r]->limits);
		if (why == DP_ADMIT)
			continue;
		after = local[r]->spent;
		dp_cost_add(&after, &slot->cost);
		slot->verdict = DP_VERDICT_REFUSED;
		slot->refused_role = slot->roles[r];
		slot->refusal = why;
		switch (why)
		{
			case DP_REFUSE_EPSILON:
				slot->spent = dp_spent_epsilon(&local[r]->spent, local[r]->limits.delta, NULL);
				slot->limit = local[r]->limits.epsilon;
				slot->requested = dp_spent_epsilon(&after, local[r]->limits.delta, NULL);
				break;
			case DP_REFUSE_DELTA:
				slot->spent = local[r]->spent.delta;
				slot->limit = local[r]->limits.delta;
				slot->requested = after.delta;
				break;
			default:
				slot->spent = local[r]->spent.rho;
				slot->limit = local[r]->limits.rho;
				slot->requested = after.rho;
				break;
		}
		return;
	}
	/* admitted: the limits whose 90% this charge passes */
	for (int r = 0; r < slot->nroles && slot->nwarn < DP_MAX_WARNINGS; r++)
	{
		DpLimitWarning *w = &slot->warn[slot->nwarn];

		if (!local[r]->budgeted)
			continue;
		w->what = dp_passes_fraction(&local[r]->spent, &slot->cost, &local[r]->limits, 0.9,
									 &w->spent, &w->limit);
		if (w->what == DP_ADMIT)
			continue;
		w->role = slot->roles[r];
		slot->nwarn++;
	}
}

/* Write the rows of an admitted request (inside its subtransaction). */
static void
DpWorkerWrite(const DpLedgerSlot *slot)
{
	switch (slot->kind)
	{
		case DP_REQ_CHARGE:
			for (int r = 0; r < slot->nroles; r++)
				DpWorkerInsert(slot->roles[r], "charge", slot);
			break;
		case DP_REQ_SET_BUDGET:
		case DP_REQ_REMOVE_BUDGET:
			DpWorkerWriteLimits(slot->roles[0], &slot->limits, &slot->caps, slot->kind == DP_REQ_REMOVE_BUDGET);
			DpWorkerInsert(slot->roles[0], slot->kind == DP_REQ_REMOVE_BUDGET ? "remove" : "limit", slot);
			break;
		case DP_REQ_SET_CAPS:
			DpWorkerWriteLimits(slot->roles[0], &slot->limits, &slot->caps, false);
			DpWorkerInsert(slot->roles[0], "cap", slot);
			break;
		case DP_REQ_READ:
			break;
		case DP_REQ_RESET:
			DpWorkerInsert(slot->roles[0], "reset", slot);
			break;
	}
#ifdef DP_PG_TEST_SWITCHES
	/* fault injection: the rows are written, then the request fails */
	if (slot->debug_poison)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("dp_pg.debug_poison_charge: simulated failure of this request's ledger write")));
#endif
}

/* Apply a request whose rows are written to the batch's working copies. */
static void
DpWorkerApply(const DpLedgerSlot *slot, DpWorkBatch *wb)
{
	for (int r = 0; r < slot->nroles; r++)
	{
		DpBudgetEntry *e = hash_search(wb->pending, &slot->roles[r], HASH_FIND, NULL);

		if (e == NULL)
			elog(ERROR, "dp_pg ledger: no working copy for role %u", slot->roles[r]);
		switch (slot->kind)
		{
			case DP_REQ_CHARGE:
				dp_cost_add(&e->spent, &slot->cost);
				e->charges++;
				break;
			case DP_REQ_SET_BUDGET:
			case DP_REQ_SET_CAPS:
				e->limits = slot->limits;
				e->caps = slot->caps;
				e->budgeted = true;
				wb->limits_changed = true;
				break;
			case DP_REQ_REMOVE_BUDGET:
				e->limits.epsilon = e->limits.delta = e->limits.rho = DP_REMOVED_LIMIT;
				e->caps.epsilon = e->caps.delta = e->caps.rho = NAN;
				e->budgeted = false;
				wb->limits_changed = true;
				break;
			case DP_REQ_READ:
				break;
			case DP_REQ_RESET:
				dp_cost_zero(&e->spent);
				e->charges = 0;
				break;
		}
	}
}

/* Append one column of a row to the reply; false if it does not fit. */
static bool
DpReadPut(DpReadReply *reply, Size cap, Form_pg_attribute att, Datum d, bool isnull)
{
	int32		len;
	Size		need;
	char	   *p = reply->data + reply->used;

	if (isnull)
		len = -1;
	else if (att->attbyval)
		len = sizeof(Datum);
	else if (att->attlen == -1)
	{
		d = PointerGetDatum(PG_DETOAST_DATUM(d));
		len = VARSIZE(DatumGetPointer(d));
	}
	else
		elog(ERROR, "dp_pg ledger: column \"%s\" has an unsupported type", NameStr(att->attname));
	need = sizeof(int32) + Max(len, 0);
	if (offsetof(DpReadReply, data) + reply->used + need > cap)
		return false;
	memcpy(p, &len, sizeof(int32));
	if (len == (int32) sizeof(Datum) && att->attbyval)
		memcpy(p + sizeof(int32), &d, sizeof(Datum));
	else if (len > 0)
		memcpy(p + sizeof(int32), DatumGetPointer(d), len);
	reply->used += need;
	return true;
}

/*
 * A read request: a page of rows into the requester's segment (see
 * "Reading the ledger tables from any database").  The columns are the
 * SQL-level result columns of dp_pg.ledger_rows() and dp_pg.refusal_rows().
 */
static void
DpWorkerRead(DpLedgerSlot *slot)
{
	static const char *ledger_sql =
		"SELECT id, role, kind, charged_at, requested_by, query, epsilon, delta, rho, rdp, detail "
		"FROM dp_pg.ledger_entries WHERE id > $1 AND ($2 OR role = ANY ($3)) ORDER BY id LIMIT $4";
	static const char *refusals_sql =
		"SELECT id, refused_at, role, as_role, %s, sqlstate, rule, query "
		"FROM dp_pg.guard_refusal_log WHERE id > $1 AND ($2 OR role = ANY ($3)) ORDER BY id LIMIT $4";
	const char *sql = ledger_sql;
	Oid			types[4] = {INT8OID, BOOLOID, OIDARRAYOID, INT4OID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	Datum		roles[DP_MAX_CHARGE_ROLES];
	dsm_segment *seg;
	DpReadReply *reply;
	uint64		n;

	for (int r = 0; r < slot->nroles; r++)
		roles[r] = ObjectIdGetDatum(slot->roles[r]);
	values[0] = Int64GetDatum(slot->read_after);
	values[1] = BoolGetDatum(slot->read_all);
	values[2] = PointerGetDatum(construct_array(roles, slot->nroles, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
	values[3] = Int32GetDatum(DP_READ_PAGE_ROWS);
	if (slot->read_what == DP_READ_REFUSALS)
	{
		/* the database as the reader's catalog has it, whatever the log's layout */
		bool		stored = DpRefusalLogHasNames();
		const char *database;

		if (stored == slot->read_names)
			database = "database";
		else if (slot->read_names)
			database = "(SELECT d.datname::pg_catalog.text FROM pg_catalog.pg_database d WHERE d.oid = database)";
		else
			database = "(SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = database)";
		sql = psprintf(refusals_sql, database);
	}
	if (SPI_execute_with_args(sql, 4, types, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dp_pg ledger");
	n = SPI_processed;

	seg = dsm_attach(slot->read_handle);
	if (seg == NULL)
		elog(ERROR, "the reader is gone");
	reply = dsm_segment_address(seg);
	reply->natts = SPI_tuptable->tupdesc->natts;
	reply->nrows = 0;
	reply->used = 0;
	reply->more = n == DP_READ_PAGE_ROWS;
	for (uint64 r = 0; r < n; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Size		mark = reply->used;
		bool		fits = true;
		bool		isnull;

		for (int c = 0; c < desc->natts && fits; c++)
		{
			Datum		d = SPI_getbinval(tup, desc, c + 1, &isnull);

			fits = DpReadPut(reply, DP_READ_BUFFER, TupleDescAttr(desc, c), d, isnull);
		}
		if (!fits)
		{
			reply->used = mark;
			if (reply->nrows == 0)
				elog(ERROR, "a ledger row is larger than the read buffer");
			reply->more = true;
			break;
		}
		reply->nrows++;
		reply->last_id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	}
	dsm_detach(seg);
}

/*
 * Handle one request of the batch in its own subtransaction (the pattern of
 * PL/pgSQL's exception blocks): check, decide, write.  If anything fails,
 * only this subtransaction is rolled back and only this request gets an
 * error verdict; the working copies change only after its writes succeeded.
 */
void
DpWorkerRequest(DpLedgerSlot *slot, DpWorkBatch *wb, int nbatch)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool failed = false;

	if (!DpWorkerCheck(slot))
	{
		ereport(LOG,
				(errmsg("dp_pg ledger: refused a request of a batch of %d: %s", nbatch, slot->errmsg)));
		return;
	}
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		if (slot->kind == DP_REQ_READ)
		{
			DpWorkerRead(slot);
			slot->verdict = DP_VERDICT_OK;
		}
		else
		{
			DpWorkerJudge(slot, wb->pending);
			if (slot->verdict == DP_VERDICT_OK)
				DpWorkerWrite(slot);
		}
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		DpWorkerFail(slot, ERRCODE_INTERNAL_ERROR, edata->message ? edata->message : "unknown error");
		FreeErrorData(edata);
		failed = true;
	}
	PG_END_TRY();

	if (failed)
		ereport(LOG,
				(errmsg("dp_pg ledger: a request of a batch of %d failed and was rolled back: %s",
						nbatch, slot->errmsg),
				 errdetail("The other requests of the batch are not affected.")));
	else if (slot->verdict == DP_VERDICT_OK && slot->kind != DP_REQ_READ)
		DpWorkerApply(slot, wb);
}

/* Publish the batch's committed entries to shared memory. */
static void
DpWorkerPublish(DpWorkBatch *wb)
{
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *p;

	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, wb->pending);
	while ((p = hash_seq_search(&seq)) != NULL)
	{
		bool		found;
		DpBudgetEntry *e;

		if (DpEntryRemoved(p))
		{
			hash_search(dp_budgets, &p->role, HASH_REMOVE, NULL);
			continue;
		}
		if (!p->budgeted)
			continue;			/* reset of (or charge to) a role with no budget */
		e = hash_search(dp_budgets, &p->role, HASH_ENTER_NULL, &found);
		if (e == NULL)
		{
			LWLockRelease(dp_ledger->lock);
			elog(FATAL, "too many dp_pg budgets (at most %d)", DP_MAX_BUDGETS);
		}
		*e = *p;
	}
	if (wb->limits_changed)
		DpLedgerBumpGeneration();
	if (hash_get_num_entries(wb->pending) > 0)
		dp_ledger->has_entries = true;
	LWLockRelease(dp_ledger->lock);
}

/* True if some request is waiting for the worker. */
bool
DpWorkerAnyPending(void)
{
	bool		any = false;

	LWLockAcquire(dp_ledger->lock, LW_SHARED);
	for (int i = 0; i < DP_LEDGER_SLOTS && !any; i++)
		any = dp_ledger->slots[i].state == DP_SLOT_PENDING;
	LWLockRelease(dp_ledger->lock);
	return any;
}

/*
 * The worker's transactions: begin one, connected to SPI with a snapshot,
 * showing activity (NULL: none) in pg_stat_activity; commit it.
 */
void
DpWorkerBegin(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (activity)
		pgstat_report_activity(STATE_RUNNING, activity);
}

/* Commit the transaction of DpWorkerBegin. */
void
DpWorkerCommit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * In a PG_CATCH of the worker, for a transaction that failed as a whole:
 * the error copied into cxt (which becomes current), the error state
 * flushed, the transaction aborted.  The caller reports and frees it.
 */
ErrorData *
DpWorkerAbort(MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	AbortCurrentTransaction();
	return edata;
}

/* Process every pending request in one transaction; returns true if any. */
bool
DpWorkerBatch(void)
{
	int			batch[DP_LEDGER_SLOTS];
	int			nbatch = 0;
	DpWorkBatch wb;
	HASHCTL		info;
	MemoryContext batch_cxt;
	MemoryContext old;

	if (!DpWorkerAnyPending())
		return false;
	/* fault injection: let more requests arrive, so that they share a batch */
	DpDebugPause("worker_before_batch");
	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	for (int i = 0; i < DP_LEDGER_SLOTS; i++)
		if (dp_ledger->slots[i].state == DP_SLOT_PENDING)
		{
			dp_ledger->slots[i].state = DP_SLOT_WORKING;
			batch[nbatch++] = i;
		}
	LWLockRelease(dp_ledger->lock);
	if (nbatch == 0)
		return false;

	batch_cxt = AllocSetContextCreate(TopMemoryContext, "dp_pg ledger batch", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(batch_cxt);
	info.keysize = sizeof(Oid);
	info.entrysize = sizeof(DpBudgetEntry);
	info.hcxt = batch_cxt;
	wb.pending = hash_create("dp_pg ledger batch", 64, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	wb.limits_changed = false;

	PG_TRY();
	{
		DpWorkerBegin("dp_pg ledger: recording charges");
		for (int b = 0; b < nbatch; b++)
			DpWorkerRequest(&dp_ledger->slots[batch[b]], &wb, nbatch);
		SPI_finish();
		PopActiveSnapshot();
		DpDebugPause("worker_before_commit");

		/*
		 * From the commit to the published verdicts nothing may interrupt us:
		 * a worker that exited in between would leave committed charges in
		 * slots that its successor would charge again.  (A crash instead
		 * restarts every backend and wipes the slots.)
		 */
		HOLD_INTERRUPTS();
		CommitTransactionCommand();
		DpDebugPause("worker_after_commit");
		pgstat_report_activity(STATE_IDLE, NULL);
		MemoryContextSwitchTo(batch_cxt);
		DpWorkerPublish(&wb);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* the batch's transaction failed as a whole: nothing of it is written */
		edata = DpWorkerAbort(batch_cxt);
		for (int b = 0; b < nbatch; b++)
			DpWorkerFail(&dp_ledger->slots[batch[b]], ERRCODE_INTERNAL_ERROR,
						 edata->message ? edata->message : "unknown error");
		ereport(LOG, (errmsg("dp_pg ledger: batch failed: %s", edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();

	MemoryContextSwitchTo(old);
	MemoryContextDelete(batch_cxt);

	/* hand out the verdicts */
	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	for (int b = 0; b < nbatch; b++)
	{
		DpLedgerSlot *slot = &dp_ledger->slots[batch[b]];

		if (slot->abandoned)
			slot->state = DP_SLOT_FREE;
		else
			slot->state = DP_SLOT_DONE;
	}
	LWLockRelease(dp_ledger->lock);
	if (InterruptHoldoffCount > 0)
		RESUME_INTERRUPTS();
	for (int b = 0; b < nbatch; b++)
		ConditionVariableBroadcast(&dp_ledger->slots[batch[b]].cv);
	ConditionVariableBroadcast(&dp_ledger->slot_freed);
	return true;
}

/*
 * Take the queued refusals out of the ring into recs (at most
 * DP_REFUSAL_RING) and the count of those that did not fit into *missed;
 * returns how many.
 */
int
DpTakeRefusals(DpRefusalRecord *recs, int64 *missed)
{
	int			n;

	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	n = dp_ledger->refusal_count;
	for (int i = 0; i < n; i++)
		recs[i] = dp_ledger->refusals[(dp_ledger->refusal_head + i) % DP_REFUSAL_RING];
	*missed = dp_ledger->refusals_missed;
	dp_ledger->refusal_head = (dp_ledger->refusal_head + n) % DP_REFUSAL_RING;
	dp_ledger->refusal_count = 0;
	dp_ledger->refusals_missed = 0;
	LWLockRelease(dp_ledger->lock);
	return n;
}

/*
 * Write the queued refusals to dp_pg.guard_refusal_log in one transaction,
 * with a row counting those that did not fit in the queue, and delete the
 * oldest rows beyond dp_pg.refusal_log_size.  A failure loses this batch of
 * refusals (logged), never a charge: charges are separate transactions.
 */
void
DpWorkerDrainRefusals(void)
{
	DpRefusalRecord recs[DP_REFUSAL_RING];
	int			n;
	int64		missed;

	n = DpTakeRefusals(recs, &missed);
	if ((n == 0 && missed == 0) || dp_refusal_log_size == 0)
		return;

	PG_TRY();
	{
		static const char *sql =
			"INSERT INTO dp_pg.guard_refusal_log (refused_at, role, as_role, database, sqlstate, rule, query) "
			"VALUES ($1, $2, $3, $4, $5, $6, $7)";
		Oid			types[7] = {TIMESTAMPTZOID, OIDOID, OIDOID, OIDOID, TEXTOID, TEXTOID, TEXTOID};
		Datum		values[7];
		char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
		bool		names;

		DpWorkerBegin("dp_pg ledger: logging refusals");
		/* 0.2.0 keeps the database's name (a dump restores it as it was), 0.1.0 its OID */
		names = DpRefusalLogHasNames();
		if (names)
			types[3] = TEXTOID;
		for (int i = 0; i <= n; i++)
		{
			if (i == n)
			{
				char		rule[128];

				if (missed == 0)
					break;
				/* the refusals the full queue could only count */
				snprintf(rule, sizeof(rule), "%lld more refusals were not logged (the queue was full)",
						 (long long) missed);
				values[0] = TimestampTzGetDatum(GetCurrentTimestamp());
				nulls[1] = nulls[2] = nulls[3] = nulls[6] = 'n';
				values[4] = CStringGetTextDatum("");
				values[5] = CStringGetTextDatum(rule);
			}
			else
			{
				values[0] = TimestampTzGetDatum(recs[i].at);
				values[1] = ObjectIdGetDatum(recs[i].session_user);
				values[2] = ObjectIdGetDatum(recs[i].current_user);
				if (names)
				{
					char	   *datname = get_database_name(recs[i].database);

					nulls[3] = datname ? ' ' : 'n';
					values[3] = datname ? CStringGetTextDatum(datname) : (Datum) 0;
				}
				else
					values[3] = ObjectIdGetDatum(recs[i].database);
				values[4] = CStringGetTextDatum(unpack_sql_state(recs[i].sqlerrcode));
				values[5] = CStringGetTextDatum(recs[i].rule);
				values[6] = CStringGetTextDatum(recs[i].query);
			}
			if (SPI_execute_with_args(sql, 7, types, values, nulls, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not insert into dp_pg.guard_refusal_log");
		}
		{
			Oid			dtypes[1] = {INT8OID};
			Datum		dvalues[1] = {Int64GetDatum((int64) dp_refusal_log_size)};

			if (SPI_execute_with_args("DELETE FROM dp_pg.guard_refusal_log "
									  "WHERE id <= (SELECT max(id) FROM dp_pg.guard_refusal_log) - $1",
									  1, dtypes, dvalues, NULL, false, 0) != SPI_OK_DELETE)
				elog(ERROR, "could not trim dp_pg.guard_refusal_log");
		}
		DpWorkerCommit();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = DpWorkerAbort(TopMemoryContext);
		ereport(LOG,
				(errmsg("dp_pg ledger: %d refusals could not be logged: %s", n, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/* Take a new configuration (SIGHUP) now: also between batches under load. */
void
DpWorkerReloadConfig(void)
{
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

