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
 * Budgets are kept per role (dp_budgets) and per table (dp_table_budgets),
 * each a DpSpending: limits, renewal and window (windows.c), spending in the
 * window and over its life.  A charge is decided against every budget it
 * names -- its roles' and the table budgets of the protected tables its
 * query reads -- in one subtransaction of the batch: every one has room, or
 * the request is refused and nothing of it is written.  Its rows (one per
 * role, one per table budget, role NULL) carry the batch's time, which never
 * goes back (worker_clock), and the window each budget counted it in.
 */

/* The ledger tables have the 0.2.0 layout (names, table budgets, windows); set at each load. */
static bool layout_v2 = false;

/* The latest charged_at written or loaded: a batch's time never goes back. */
static TimestampTz worker_clock = DT_NOBEGIN;

/* The insert of a ledger row, prepared for each layout (0.1.0, 0.2.0) */
static SPIPlanPtr insert_plan[2] = {NULL, NULL};

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

/* The layout the last load found (0.2.0: table budgets, windows, rdp_delta). */
bool
DpWorkerLayoutV2(void)
{
	return layout_v2;
}

/* True if the refusal log keeps database names (0.2.0), not OIDs. */
static bool
DpRefusalLogHasNames(void)
{
	return DpLayoutQuery("SELECT a.atttypid = 'pg_catalog.text'::pg_catalog.regtype FROM pg_catalog.pg_attribute a "
						 "WHERE a.attrelid = 'dp_pg.guard_refusal_log'::pg_catalog.regclass AND a.attname = 'database'",
						 "dp_pg.guard_refusal_log");
}

/* A uuid Datum (a copy in the current memory context). */
static Datum
DpUuidDatum(const pg_uuid_t *u)
{
	pg_uuid_t  *copy = palloc(sizeof(pg_uuid_t));

	*copy = *u;
	return UUIDPGetDatum(copy);
}

/* True if u is all zero (no table budget). */
static bool
DpUuidIsZero(const pg_uuid_t *u)
{
	static const pg_uuid_t zero;

	return memcmp(u, &zero, sizeof(pg_uuid_t)) == 0;
}

/*
 * Insert one ledger row of the request: for role (or, InvalidOid, for the
 * table budget table), of kind, at the batch's time, in the window of sp (a
 * charge) -- ERROR on failure.
 */
static void
DpWorkerInsert(const DpLedgerSlot *slot, Oid role, const pg_uuid_t *table, const char *kind,
			   TimestampTz at, const DpSpending *sp)
{
	static const char *sql_v2 =
		"INSERT INTO dp_pg.ledger_entries (role, kind, requested_by, query, epsilon, delta, rho, rdp, detail, "
		"charged_at, table_budget, budget_window, rdp_delta) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, "
		"CASE WHEN $12 IS NULL THEN NULL ELSE pg_catalog.tstzrange($12, $13) END, $14)";
	static const char *sql_v1 =
		"INSERT INTO dp_pg.ledger_entries (role, kind, requested_by, query, epsilon, delta, rho, rdp, detail, charged_at) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10)";
	Oid			types[14] = {OIDOID, TEXTOID, OIDOID, TEXTOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8ARRAYOID,
	TEXTOID, TIMESTAMPTZOID, UUIDOID, TIMESTAMPTZOID, TIMESTAMPTZOID, FLOAT8OID};
	Datum		values[14];
	char		nulls[14];
	bool		charge = strcmp(kind, "charge") == 0;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = ObjectIdGetDatum(role);
	if (!OidIsValid(role))
		nulls[0] = 'n';
	values[1] = CStringGetTextDatum(kind);
	values[2] = ObjectIdGetDatum(slot->requested_by);
	values[3] = CStringGetTextDatum(slot->query);
	if (charge)
	{
		values[4] = DpCostDatum(slot->cost.epsilon, &nulls[4]);
		values[5] = DpCostDatum(slot->cost.delta, &nulls[5]);
		values[6] = DpCostDatum(slot->cost.rho, &nulls[6]);
		values[7] = DpRdpArray(&slot->cost, &nulls[7]);
		values[13] = Float8GetDatum(slot->cost.rdp_delta);
	}
	else
	{
		nulls[4] = nulls[5] = nulls[6] = nulls[7] = nulls[13] = 'n';
		values[4] = values[5] = values[6] = values[7] = values[13] = (Datum) 0;
	}
	values[8] = CStringGetTextDatum(slot->detail);
	values[9] = TimestampTzGetDatum(at);
	if (table != NULL)
		values[10] = DpUuidDatum(table);
	else
	{
		values[10] = (Datum) 0;
		nulls[10] = 'n';
	}
	if (charge && sp != NULL && DpRenewIsSet(&sp->renew))
	{
		values[11] = TimestampTzGetDatum(sp->window_start);
		values[12] = TimestampTzGetDatum(sp->window_end);
	}
	else
	{
		values[11] = values[12] = (Datum) 0;
		nulls[11] = nulls[12] = 'n';
	}
	if (!layout_v2 && table != NULL)
		elog(ERROR, "the ledger tables have no table budgets before dp_pg 0.2.0");
	/* prepared once per layout and kept (the plan cache replans it after DDL on the table) */
	if (insert_plan[layout_v2] == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(layout_v2 ? sql_v2 : sql_v1, layout_v2 ? 14 : 10, types);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare the insert into dp_pg.ledger_entries");
		insert_plan[layout_v2] = plan;
	}
	if (SPI_execute_plan(insert_plan[layout_v2], values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into dp_pg.ledger_entries");
}

/* The interval and start of a renewal as two Datums (NULL when it does not renew). */
static void
DpRenewDatums(const DpRenew *r, Datum *values, char *nulls)
{
	if (!DpRenewIsSet(r))
	{
		values[0] = values[1] = (Datum) 0;
		nulls[0] = nulls[1] = 'n';
		return;
	}
	values[0] = IntervalPGetDatum(&r->every);
	values[1] = TimestampTzGetDatum(r->from);
	nulls[0] = nulls[1] = ' ';
}

/* Write a role's limits, caps and renewal to dp_pg.budget_limits (or delete them). */
static void
DpWorkerWriteLimits(Oid role, const DpLimits *l, const DpLimits *caps, const DpRenew *renew, bool remove)
{
	Oid			types[9] = {OIDOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID,
	INTERVALOID, TIMESTAMPTZOID};
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

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
	DpRenewDatums(renew, &values[7], &nulls[7]);
	if (!layout_v2 && DpRenewIsSet(renew))
		elog(ERROR, "budget windows need dp_pg 0.2.0 in the ledger database (ALTER EXTENSION dp_pg UPDATE)");
	if (SPI_execute_with_args(layout_v2 ?
							  "INSERT INTO dp_pg.budget_limits (role, epsilon_limit, delta_limit, rho_limit, "
							  "max_epsilon_per_query, max_delta_per_query, max_rho_per_query, renew, renew_from) "
							  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (role) DO UPDATE SET "
							  "epsilon_limit = EXCLUDED.epsilon_limit, delta_limit = EXCLUDED.delta_limit, "
							  "rho_limit = EXCLUDED.rho_limit, max_epsilon_per_query = EXCLUDED.max_epsilon_per_query, "
							  "max_delta_per_query = EXCLUDED.max_delta_per_query, "
							  "max_rho_per_query = EXCLUDED.max_rho_per_query, renew = EXCLUDED.renew, "
							  "renew_from = EXCLUDED.renew_from, updated_at = now()" :
							  "INSERT INTO dp_pg.budget_limits (role, epsilon_limit, delta_limit, rho_limit, "
							  "max_epsilon_per_query, max_delta_per_query, max_rho_per_query) "
							  "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (role) DO UPDATE SET "
							  "epsilon_limit = EXCLUDED.epsilon_limit, delta_limit = EXCLUDED.delta_limit, "
							  "rho_limit = EXCLUDED.rho_limit, max_epsilon_per_query = EXCLUDED.max_epsilon_per_query, "
							  "max_delta_per_query = EXCLUDED.max_delta_per_query, "
							  "max_rho_per_query = EXCLUDED.max_rho_per_query, updated_at = now()",
							  layout_v2 ? 9 : 7, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write dp_pg.budget_limits");
}

/* Write a table budget's limits and renewal to dp_pg.table_budget_limits (or delete them). */
static void
DpWorkerWriteTableLimits(const DpLedgerSlot *slot, bool remove)
{
	Oid			types[8] = {UUIDOID, TEXTOID, TEXTOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, INTERVALOID, TIMESTAMPTZOID};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = DpUuidDatum(&slot->tables[0]);
	if (remove)
	{
		if (SPI_execute_with_args("DELETE FROM dp_pg.table_budget_limits WHERE budget = $1",
								  1, types, values, nulls, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not delete from dp_pg.table_budget_limits");
		return;
	}
	values[1] = CStringGetTextDatum(slot->database);
	values[2] = CStringGetTextDatum(slot->table_name);
	values[3] = DpCostDatum(slot->limits.epsilon, &nulls[3]);
	values[4] = DpCostDatum(slot->limits.delta, &nulls[4]);
	values[5] = DpCostDatum(slot->limits.rho, &nulls[5]);
	DpRenewDatums(&slot->renew, &values[6], &nulls[6]);
	if (SPI_execute_with_args("INSERT INTO dp_pg.table_budget_limits (budget, database, table_name, epsilon_limit, "
							  "delta_limit, rho_limit, renew, renew_from) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
							  "ON CONFLICT (budget) DO UPDATE SET database = EXCLUDED.database, "
							  "table_name = EXCLUDED.table_name, epsilon_limit = EXCLUDED.epsilon_limit, "
							  "delta_limit = EXCLUDED.delta_limit, rho_limit = EXCLUDED.rho_limit, "
							  "renew = EXCLUDED.renew, renew_from = EXCLUDED.renew_from, updated_at = now()",
							  8, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write dp_pg.table_budget_limits");
}

/* A double from an SPI result column (NULL -> dflt). */
static double
DpSpiDouble(HeapTuple tup, TupleDesc desc, int col, double dflt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? dflt : DatumGetFloat8(d);
}

/* A renewal from two SPI result columns (interval, timestamptz; NULL: none). */
static void
DpSpiRenew(HeapTuple tup, TupleDesc desc, int col, DpRenew *r)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	memset(r, 0, sizeof(*r));
	if (isnull)
		return;
	r->every = *DatumGetIntervalP(d);
	d = SPI_getbinval(tup, desc, col + 1, &isnull);
	if (isnull)
		memset(r, 0, sizeof(*r));
	else
		r->from = DatumGetTimestampTz(d);
}

/* The cost of a ledger row: epsilon, delta, rho, rdp are columns col .. col+3, rdp_delta dcol (0: none). */
void
DpRowCost(HeapTuple tup, TupleDesc desc, int col, int dcol, DpCost *c)
{
	bool		isnull;
	Datum		arr;

	dp_cost_zero(c);
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
	if (dcol > 0)
		c->rdp_delta = DpSpiDouble(tup, desc, dcol, 0.0);
	c->rdp_mark = c->rdp_delta;
}

/* A local hash table of role budgets (in the current memory context). */
HTAB *
DpBudgetTable(const char *name)
{
	HASHCTL		info;

	info.keysize = sizeof(Oid);
	info.entrysize = sizeof(DpBudgetEntry);
	info.hcxt = CurrentMemoryContext;
	return hash_create(name, 64, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* A local hash table of table budgets (in the current memory context). */
HTAB *
DpTableBudgetTable(const char *name)
{
	HASHCTL		info;

	info.keysize = sizeof(pg_uuid_t);
	info.entrysize = sizeof(DpTableBudgetEntry);
	info.hcxt = CurrentMemoryContext;
	return hash_create(name, 16, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* Apply one ledger row to the budgets it belongs to (see shared.h). */
void
DpApplyLedgerRow(HTAB *roles, HTAB *tables, Oid role, const pg_uuid_t *table,
				 bool reset, TimestampTz at, const DpCost *cost)
{
	DpSpending *s = NULL;

	if (OidIsValid(role) && roles != NULL)
	{
		DpBudgetEntry *e = hash_search(roles, &role, HASH_FIND, NULL);

		if (e != NULL)
			s = &e->s;
	}
	else if (table != NULL && tables != NULL)
	{
		DpTableBudgetEntry *t = hash_search(tables, table, HASH_FIND, NULL);

		if (t != NULL)
			s = &t->s;
	}
	if (s == NULL)
		return;					/* rows of a budget that was removed */
	if (reset)
		DpSpendingReset(s);
	else
		DpSpendingCharge(s, cost, at);
}

/*
 * Replay the charge and reset rows up to upto, in ledger order, into the
 * budgets of roles and tables (only_role / only_table: the rows of that one
 * budget, into *only).  The same rounded-up additions, in the same windows,
 * as the worker made online, so a restart reproduces the totals bit for bit.
 */
static void
DpWorkerReplay(HTAB *roles, HTAB *tables, int64 upto, Oid only_role, const pg_uuid_t *only_table,
			   DpSpending *only)
{
	Portal		portal;
	SPIPlanPtr	plan;
	Oid			types[2] = {INT8OID, OIDOID};
	Datum		values[2];
	const char *which;
	char	   *sql;

	values[0] = Int64GetDatum(upto);
	values[1] = ObjectIdGetDatum(only_role);
	if (only_table != NULL)
	{
		types[1] = UUIDOID;
		values[1] = DpUuidDatum(only_table);
		which = " AND table_budget = $2";
	}
	else if (OidIsValid(only_role))
		which = " AND role = $2";
	else
		which = " AND $2 IS NOT NULL";
	sql = psprintf(layout_v2 ?
				   "SELECT role, table_budget, kind, charged_at, epsilon, delta, rho, rdp, rdp_delta "
				   "FROM dp_pg.ledger_entries WHERE kind IN ('charge', 'reset') AND id <= $1%s ORDER BY id" :
				   "SELECT role, NULL::pg_catalog.uuid, kind, charged_at, epsilon, delta, rho, rdp, NULL::float8 "
				   "FROM dp_pg.ledger_entries WHERE kind IN ('charge', 'reset') AND id <= $1%s ORDER BY id",
				   which);
	plan = SPI_prepare(sql, 2, types);
	if (plan == NULL)
		elog(ERROR, "could not prepare the ledger replay");
	/* (a replay inside a batch sees the batch's own rows: a new snapshot) */
	portal = SPI_cursor_open(NULL, plan, values, NULL, only == NULL);
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
			bool		tnull;
			Oid			role = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
			Datum		table = SPI_getbinval(tup, desc, 2, &tnull);
			char	   *kind = TextDatumGetCString(SPI_getbinval(tup, desc, 3, &isnull));
			TimestampTz at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 4, &isnull));
			bool		reset = strcmp(kind, "reset") == 0;
			DpCost		c;

			DpRowCost(tup, desc, 5, 9, &c);
			if (only != NULL)
			{
				if (reset)
					DpSpendingReset(only);
				else
					DpSpendingCharge(only, &c, at);
			}
			else
				DpApplyLedgerRow(roles, tables, role, tnull ? NULL : DatumGetUUIDP(table), reset, at, &c);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
}

/*
 * Load limits and spent totals from the tables into the local tables
 * (installed at once afterwards: DpWorkerInstall).  Charges are replayed up
 * to ledger row *upto; with *upto = 0 up to the last row, whose id is stored
 * there.
 */
void
DpWorkerLoad(HTAB *roles, HTAB *tables, int64 *upto)
{
	TimestampTz clock = DT_NOBEGIN;
	TimestampTz now;
	HASH_SEQ_STATUS seq;
	uint64		n;
	bool		isnull;

	layout_v2 = DpLedgerHasNames();
	if (SPI_execute("SELECT coalesce(max(id), 0), max(charged_at) FROM dp_pg.ledger_entries", true, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read dp_pg.ledger_entries");
	if (*upto == 0)
		*upto = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);

		if (!isnull)
			clock = DatumGetTimestampTz(d);
	}

	if (SPI_execute(layout_v2 ?
					"SELECT role, epsilon_limit, delta_limit, rho_limit, max_epsilon_per_query, "
					"max_delta_per_query, max_rho_per_query, renew, renew_from FROM dp_pg.budget_limits" :
					"SELECT role, epsilon_limit, delta_limit, rho_limit, max_epsilon_per_query, "
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
		Oid			role = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		DpBudgetEntry *e = hash_search(roles, &role, HASH_ENTER, NULL);
		DpRenew		renew;

		memset(&renew, 0, sizeof(renew));
		if (layout_v2)
			DpSpiRenew(tup, desc, 8, &renew);
		DpSpendingInit(&e->s);
		e->s.limits.epsilon = DpSpiDouble(tup, desc, 2, NAN);
		e->s.limits.delta = DpSpiDouble(tup, desc, 3, NAN);
		e->s.limits.rho = DpSpiDouble(tup, desc, 4, NAN);
		e->caps.epsilon = DpSpiDouble(tup, desc, 5, NAN);
		e->caps.delta = DpSpiDouble(tup, desc, 6, NAN);
		e->caps.rho = DpSpiDouble(tup, desc, 7, NAN);
		DpSpendingSetRenew(&e->s, &renew);
		e->budgeted = true;
		e->removed = false;
	}
	if (layout_v2 && tables != NULL)
	{
		if (SPI_execute("SELECT budget, database, table_name, epsilon_limit, delta_limit, rho_limit, renew, renew_from "
						"FROM dp_pg.table_budget_limits", true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read dp_pg.table_budget_limits");
		n = SPI_processed;
		if (n > DP_MAX_TABLE_BUDGETS)
			elog(ERROR, "too many dp_pg table budgets (at most %d)", DP_MAX_TABLE_BUDGETS);
		for (uint64 r = 0; r < n; r++)
		{
			HeapTuple	tup = SPI_tuptable->vals[r];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			pg_uuid_t	budget = *DatumGetUUIDP(SPI_getbinval(tup, desc, 1, &isnull));
			DpTableBudgetEntry *t = hash_search(tables, &budget, HASH_ENTER, NULL);
			DpRenew		renew;

			DpSpiRenew(tup, desc, 7, &renew);
			DpSpendingInit(&t->s);
			strlcpy(t->database, TextDatumGetCString(SPI_getbinval(tup, desc, 2, &isnull)), sizeof(t->database));
			strlcpy(t->table_name, TextDatumGetCString(SPI_getbinval(tup, desc, 3, &isnull)), sizeof(t->table_name));
			t->s.limits.epsilon = DpSpiDouble(tup, desc, 4, NAN);
			t->s.limits.delta = DpSpiDouble(tup, desc, 5, NAN);
			t->s.limits.rho = DpSpiDouble(tup, desc, 6, NAN);
			DpSpendingSetRenew(&t->s, &renew);
			t->budgeted = true;
			t->removed = false;
		}
	}

	DpWorkerReplay(roles, tables, *upto, InvalidOid, NULL, NULL);

	/* the windows of now (never before a charge already written) */
	now = Max(GetCurrentTimestamp(), clock);
	hash_seq_init(&seq, roles);
	{
		DpBudgetEntry *e;

		while ((e = hash_seq_search(&seq)) != NULL)
			DpSpendingRoll(&e->s, now);
	}
	if (tables != NULL)
	{
		DpTableBudgetEntry *t;

		hash_seq_init(&seq, tables);
		while ((t = hash_seq_search(&seq)) != NULL)
			DpSpendingRoll(&t->s, now);
	}
	if (clock > worker_clock)
		worker_clock = clock;
}

/*
 * Install loaded tables of budgets at once (a reader never sees a partial
 * set), note whether the ledger holds anything, and with announce bump the
 * budget generation (not while the worker is not ready yet: becoming ready
 * bumps it).
 */
void
DpWorkerInstall(HTAB *roles, HTAB *tables, bool has_rows, bool announce)
{
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *e;
	DpTableBudgetEntry *t;

	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, dp_budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
		hash_search(dp_budgets, &e->role, HASH_REMOVE, NULL);
	hash_seq_init(&seq, dp_table_budgets);
	while ((t = hash_seq_search(&seq)) != NULL)
		hash_search(dp_table_budgets, &t->budget, HASH_REMOVE, NULL);
	hash_seq_init(&seq, roles);
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
	if (tables != NULL)
	{
		hash_seq_init(&seq, tables);
		while ((t = hash_seq_search(&seq)) != NULL)
		{
			DpTableBudgetEntry *s = hash_search(dp_table_budgets, &t->budget, HASH_ENTER_NULL, NULL);

			if (s == NULL)
			{
				LWLockRelease(dp_ledger->lock);
				elog(FATAL, "too many dp_pg table budgets (at most %d)", DP_MAX_TABLE_BUDGETS);
			}
			*s = *t;
		}
	}
	dp_ledger->has_entries = has_rows || hash_get_num_entries(dp_budgets) > 0 ||
		hash_get_num_entries(dp_table_budgets) > 0;
	if (announce)
		DpLedgerBumpGeneration();
	LWLockRelease(dp_ledger->lock);
}

/* Open the windows that ended by now of the published budgets (at most once a second). */
void
DpWorkerRollWindows(void)
{
	static TimestampTz last = 0;
	TimestampTz now = GetCurrentTimestamp();
	HASH_SEQ_STATUS seq;
	DpBudgetEntry *e;
	DpTableBudgetEntry *t;
	bool		due = false;

	if (!TimestampDifferenceExceeds(last, now, 1000))
		return;
	last = now;
	LWLockAcquire(dp_ledger->lock, LW_SHARED);
	hash_seq_init(&seq, dp_budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (DpRenewIsSet(&e->s.renew) && now >= e->s.window_end)
			due = true;
	hash_seq_init(&seq, dp_table_budgets);
	while ((t = hash_seq_search(&seq)) != NULL)
		if (DpRenewIsSet(&t->s.renew) && now >= t->s.window_end)
			due = true;
	LWLockRelease(dp_ledger->lock);
	if (!due)
		return;
	/* a batch's rows are never before its window: no earlier than the last batch */
	now = Max(now, worker_clock);
	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, dp_budgets);
	while ((e = hash_seq_search(&seq)) != NULL)
		DpSpendingRoll(&e->s, now);
	hash_seq_init(&seq, dp_table_budgets);
	while ((t = hash_seq_search(&seq)) != NULL)
		DpSpendingRoll(&t->s, now);
	LWLockRelease(dp_ledger->lock);
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
			e->caps.epsilon = e->caps.delta = e->caps.rho = NAN;
			DpSpendingInit(&e->s);
		}
		e->removed = false;
		LWLockRelease(dp_ledger->lock);
	}
	return e;
}

/* The batch's working copy of a table budget (not budgeted if the ledger has none). */
static DpTableBudgetEntry *
DpPendingTable(HTAB *pending, const pg_uuid_t *budget)
{
	bool		found;
	DpTableBudgetEntry *t = hash_search(pending, budget, HASH_ENTER, &found);

	if (!found)
	{
		DpTableBudgetEntry *shared;

		LWLockAcquire(dp_ledger->lock, LW_SHARED);
		shared = hash_search(dp_table_budgets, budget, HASH_FIND, NULL);
		if (shared)
			*t = *shared;
		else
		{
			t->budget = *budget;
			t->budgeted = false;
			t->database[0] = t->table_name[0] = '\0';
			DpSpendingInit(&t->s);
		}
		t->removed = false;
		LWLockRelease(dp_ledger->lock);
	}
	return t;
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
 * INSERT.  False if it got an error verdict.  On the 0.1.0 layout a charge
 * with a Rényi curve that holds only outside rdp_delta is recorded without
 * that curve (the row has no rdp_delta), as the replay will count it.
 */
static bool
DpWorkerCheck(DpLedgerSlot *slot)
{
	char		why[200];
	char		message[256];
	bool		table_kind = slot->kind == DP_REQ_SET_TABLE_BUDGET || slot->kind == DP_REQ_REMOVE_TABLE_BUDGET;

	slot->refused_table = -1;
	slot->refused_role = InvalidOid;
	if (slot->kind == DP_REQ_READ)
	{
		if (slot->nroles < 0 || slot->nroles > DP_MAX_CHARGE_ROLES ||
			(slot->read_what != DP_READ_LEDGER && slot->read_what != DP_READ_REFUSALS &&
			 slot->read_what != DP_READ_CHARGES))
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
	if (slot->ntables < 0 || slot->ntables > DP_MAX_CHARGE_TABLES ||
		(table_kind && (slot->nroles != 0 || slot->ntables != 1)) ||
		(!table_kind && (slot->nroles < 1 || slot->nroles > DP_MAX_CHARGE_ROLES)) ||
		(!table_kind && slot->kind != DP_REQ_CHARGE && (slot->nroles != 1 || slot->ntables != 0)) ||
		(slot->kind != DP_REQ_CHARGE && slot->kind != DP_REQ_SET_BUDGET &&
		 slot->kind != DP_REQ_REMOVE_BUDGET && slot->kind != DP_REQ_RESET &&
		 slot->kind != DP_REQ_SET_CAPS && !table_kind))
	{
		DpWorkerFail(slot, ERRCODE_INTERNAL_ERROR, "malformed ledger request");
		return false;
	}
	if (!layout_v2 && (table_kind || slot->ntables > 0 || DpRenewIsSet(&slot->renew)))
	{
		DpWorkerFail(slot, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					 "table budgets and budget windows need dp_pg 0.2.0 in the ledger database: run ALTER EXTENSION dp_pg UPDATE there");
		return false;
	}
	if (slot->kind == DP_REQ_CHARGE && !layout_v2 && slot->cost.rdp_delta > 0.0)
	{
		for (int i = 0; i < DP_RDP_NALPHAS; i++)
			slot->cost.rdp[i] = INFINITY;
		slot->cost.rdp_delta = slot->cost.rdp_mark = 0.0;
		if (!dp_cost_valid_charge(&slot->cost, why, sizeof(why)))
		{
			DpWorkerFail(slot, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
						 "a query of a rho release and key selection needs dp_pg 0.2.0 in the ledger database: run ALTER EXTENSION dp_pg UPDATE there");
			return false;
		}
	}
	if (slot->kind == DP_REQ_CHARGE && !dp_cost_valid_charge(&slot->cost, why, sizeof(why)))
	{
		snprintf(message, sizeof(message), "the privacy cost is not a valid charge: %s", why);
		DpWorkerFail(slot, ERRCODE_INVALID_PARAMETER_VALUE, message);
		return false;
	}
	return true;
}

/* Fill the slot's refusal with the numbers of the limit why of spending s (before the charge). */
static void
DpRefusalNumbers(DpLedgerSlot *slot, DpRefusal why, const DpSpending *s)
{
	DpCost		after = s->spent;

	dp_cost_append(&after, &slot->cost);
	slot->verdict = DP_VERDICT_REFUSED;
	slot->refusal = why;
	switch (why)
	{
		case DP_REFUSE_EPSILON:
			slot->spent = dp_spent_epsilon(&s->spent, s->limits.delta, NULL);
			slot->limit = s->limits.epsilon;
			slot->requested = dp_spent_epsilon(&after, s->limits.delta, NULL);
			break;
		case DP_REFUSE_DELTA:
			slot->spent = s->spent.delta;
			slot->limit = s->limits.delta;
			slot->requested = after.delta;
			break;
		default:
			slot->spent = s->spent.rho;
			slot->limit = s->limits.rho;
			slot->requested = after.rho;
			break;
	}
}

/*
 * The budget last set under this database and table name: a live one
 * (published or of this batch), else the latest in the ledger's 'limit'
 * rows of table budgets; false if none.
 */
static bool
DpTableBudgetByName(HTAB *pending, const char *database, const char *table_name, pg_uuid_t *out)
{
	HASH_SEQ_STATUS seq;
	DpTableBudgetEntry *t;
	bool		found = false;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];

	hash_seq_init(&seq, pending);
	while ((t = hash_seq_search(&seq)) != NULL)
		if (!found && t->budgeted && !t->removed && strcmp(t->database, database) == 0 &&
			strcmp(t->table_name, table_name) == 0)
		{
			*out = t->budget;
			found = true;
		}
	if (found)
		return true;
	LWLockAcquire(dp_ledger->lock, LW_SHARED);
	hash_seq_init(&seq, dp_table_budgets);
	while ((t = hash_seq_search(&seq)) != NULL)
		if (!found && strcmp(t->database, database) == 0 && strcmp(t->table_name, table_name) == 0)
		{
			*out = t->budget;
			found = true;
		}
	LWLockRelease(dp_ledger->lock);
	if (found)
	{
		/* (a budget this batch removed is not taken) */
		t = hash_search(pending, out, HASH_FIND, NULL);
		return t == NULL || !t->removed;
	}
	values[0] = CStringGetTextDatum(database);
	values[1] = CStringGetTextDatum(table_name);
	if (SPI_execute_with_args("SELECT table_budget FROM dp_pg.ledger_entries WHERE table_budget IS NOT NULL "
							  "AND kind = 'limit' AND detail->>'database' = $1 AND detail->>'table' = $2 "
							  "ORDER BY id DESC LIMIT 1", 2, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read dp_pg.ledger_entries");
	if (SPI_processed == 1)
	{
		bool		isnull;

		*out = *DatumGetUUIDP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		return true;
	}
	return false;
}

/* The anchor of a renewal the request sets: given, kept if the period is unchanged, else now. */
static void
DpRenewAnchor(DpLedgerSlot *slot, const DpSpending *current, bool budgeted, TimestampTz now)
{
	if (!DpRenewIsSet(&slot->renew))
	{
		memset(&slot->renew, 0, sizeof(slot->renew));
		return;
	}
	if (slot->renew_from_given)
		return;
	if (budgeted && DpRenewIsSet(&current->renew) &&
		current->renew.every.month == slot->renew.every.month &&
		current->renew.every.day == slot->renew.every.day &&
		current->renew.every.time == slot->renew.every.time)
		slot->renew.from = current->renew.from;
	else
		slot->renew.from = now;
}

/*
 * Decide a request against the batch's working copies, without changing
 * them: its verdict is OK, or REFUSED with the numbers of the broken limit
 * (an ERROR verdict for a table budget the ledger does not hold).  Every
 * working copy it needs is made here, so applying it allocates nothing.
 */
static void
DpWorkerJudge(DpLedgerSlot *slot, DpWorkBatch *wb)
{
	DpBudgetEntry *local[DP_MAX_CHARGE_ROLES];
	DpTableBudgetEntry *tlocal[DP_MAX_CHARGE_TABLES];

	slot->verdict = DP_VERDICT_OK;
	slot->nwarn = 0;
	slot->respent = false;
	if (slot->kind == DP_REQ_SET_TABLE_BUDGET && DpUuidIsZero(&slot->tables[0]) &&
		!DpTableBudgetByName(wb->pending_tables, slot->database, slot->table_name, &slot->tables[0]))
	{
		/* a new table budget */
		if (!pg_strong_random(&slot->tables[0], sizeof(pg_uuid_t)))
			elog(ERROR, "could not generate a random table budget id");
		slot->tables[0].data[6] = (slot->tables[0].data[6] & 0x0f) | 0x40;	/* version 4 */
		slot->tables[0].data[8] = (slot->tables[0].data[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
	}
	for (int r = 0; r < slot->nroles; r++)
	{
		local[r] = DpPendingEntry(wb->pending, slot->roles[r]);
		DpSpendingRoll(&local[r]->s, wb->at);
	}
	for (int t = 0; t < slot->ntables; t++)
	{
		tlocal[t] = DpPendingTable(wb->pending_tables, &slot->tables[t]);
		DpSpendingRoll(&tlocal[t]->s, wb->at);
	}
	/* a change of the limits keeps the caps, and the other way round */
	if (slot->kind == DP_REQ_SET_BUDGET)
		slot->caps = local[0]->budgeted ? local[0]->caps : slot->limits;
	if (slot->kind == DP_REQ_SET_CAPS)
	{
		slot->limits = local[0]->budgeted ? local[0]->s.limits : slot->caps;
		if (local[0]->budgeted)
			slot->renew = local[0]->s.renew;
		else
			memset(&slot->renew, 0, sizeof(slot->renew));
	}
	if ((slot->kind == DP_REQ_SET_BUDGET || slot->kind == DP_REQ_SET_CAPS) && !local[0]->budgeted)
	{
		/* a new budget: what was not set is not limited */
		if (slot->kind == DP_REQ_SET_BUDGET)
			slot->caps.epsilon = slot->caps.delta = slot->caps.rho = NAN;
		else
			slot->limits.epsilon = slot->limits.delta = slot->limits.rho = NAN;
	}
	/* new renewal settings (or a new budget): its spending is replayed in the new windows (write) */
	if (slot->kind == DP_REQ_SET_BUDGET || slot->kind == DP_REQ_SET_CAPS)
	{
		if (slot->kind == DP_REQ_SET_BUDGET)
			DpRenewAnchor(slot, &local[0]->s, local[0]->budgeted, wb->at);
		slot->respent = !local[0]->budgeted || !DpRenewSame(&slot->renew, &local[0]->s.renew);
	}
	if (slot->kind == DP_REQ_SET_TABLE_BUDGET)
	{
		DpRenewAnchor(slot, &tlocal[0]->s, tlocal[0]->budgeted, wb->at);
		slot->respent = !tlocal[0]->budgeted || !DpRenewSame(&slot->renew, &tlocal[0]->s.renew);
	}
	if (slot->kind != DP_REQ_CHARGE)
		return;
	for (int r = 0; r < slot->nroles; r++)
	{
		DpRefusal	why;
		double		value;
		double		cap;

		if (!local[r]->budgeted)
			continue;			/* no budget, or dropped earlier in this batch: no limit */
		why = dp_admits_query(&slot->cost, &local[r]->caps, local[r]->s.limits.delta, &value, &cap);
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
		why = dp_admits(&local[r]->s.spent, &slot->cost, &local[r]->s.limits);
		if (why == DP_ADMIT)
			continue;
		slot->refused_role = slot->roles[r];
		DpRefusalNumbers(slot, why, &local[r]->s);
		return;
	}
	for (int t = 0; t < slot->ntables; t++)
	{
		DpRefusal	why;

		if (!tlocal[t]->budgeted)
		{
			/* the table is bound to a budget the ledger does not hold (a partial restore): fail closed */
			DpWorkerFail(slot, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
						 "the table's privacy budget is not in the ledger");
			slot->refused_table = t;
			return;
		}
		why = dp_admits(&tlocal[t]->s.spent, &slot->cost, &tlocal[t]->s.limits);
		if (why == DP_ADMIT)
			continue;
		slot->refused_table = t;
		DpRefusalNumbers(slot, why, &tlocal[t]->s);
		return;
	}
	/* admitted: the limits whose 90% this charge passes */
	for (int r = 0; r < slot->nroles + slot->ntables && slot->nwarn < DP_MAX_WARNINGS; r++)
	{
		DpLimitWarning *w = &slot->warn[slot->nwarn];
		const DpSpending *s;

		if (r < slot->nroles)
		{
			if (!local[r]->budgeted)
				continue;
			s = &local[r]->s;
			w->role = slot->roles[r];
			w->table = -1;
		}
		else
		{
			s = &tlocal[r - slot->nroles]->s;
			w->role = InvalidOid;
			w->table = r - slot->nroles;
		}
		w->what = dp_passes_fraction(&s->spent, &slot->cost, &s->limits, 0.9, &w->spent, &w->limit);
		if (w->what == DP_ADMIT)
			continue;
		slot->nwarn++;
	}
}

/* The working copy's spending of the request's role or table budget, replayed with the new settings. */
static void
DpWorkerRespend(DpLedgerSlot *slot, DpWorkBatch *wb)
{
	DpSpendingInit(&slot->respend);
	slot->respend.limits = slot->limits;
	DpSpendingSetRenew(&slot->respend, &slot->renew);
	if (slot->kind == DP_REQ_SET_TABLE_BUDGET)
		DpWorkerReplay(NULL, NULL, PG_INT64_MAX, InvalidOid, &slot->tables[0], &slot->respend);
	else
		DpWorkerReplay(NULL, NULL, PG_INT64_MAX, slot->roles[0], NULL, &slot->respend);
	DpSpendingRoll(&slot->respend, wb->at);
}

/* Write the rows of an admitted request (inside its subtransaction). */
static void
DpWorkerWrite(DpLedgerSlot *slot, DpWorkBatch *wb)
{
	switch (slot->kind)
	{
		case DP_REQ_CHARGE:
			for (int r = 0; r < slot->nroles; r++)
			{
				DpBudgetEntry *e = hash_search(wb->pending, &slot->roles[r], HASH_FIND, NULL);

				DpWorkerInsert(slot, slot->roles[r], NULL, "charge", wb->at, e ? &e->s : NULL);
			}
			for (int t = 0; t < slot->ntables; t++)
			{
				DpTableBudgetEntry *e = hash_search(wb->pending_tables, &slot->tables[t], HASH_FIND, NULL);

				DpWorkerInsert(slot, InvalidOid, &slot->tables[t], "charge", wb->at, e ? &e->s : NULL);
			}
			break;
		case DP_REQ_SET_BUDGET:
		case DP_REQ_REMOVE_BUDGET:
			DpWorkerWriteLimits(slot->roles[0], &slot->limits, &slot->caps, &slot->renew,
								slot->kind == DP_REQ_REMOVE_BUDGET);
			DpWorkerInsert(slot, slot->roles[0], NULL, slot->kind == DP_REQ_REMOVE_BUDGET ? "remove" : "limit",
						   wb->at, NULL);
			break;
		case DP_REQ_SET_CAPS:
			DpWorkerWriteLimits(slot->roles[0], &slot->limits, &slot->caps, &slot->renew, false);
			DpWorkerInsert(slot, slot->roles[0], NULL, "cap", wb->at, NULL);
			break;
		case DP_REQ_SET_TABLE_BUDGET:
		case DP_REQ_REMOVE_TABLE_BUDGET:
			DpWorkerWriteTableLimits(slot, slot->kind == DP_REQ_REMOVE_TABLE_BUDGET);
			DpWorkerInsert(slot, InvalidOid, &slot->tables[0],
						   slot->kind == DP_REQ_REMOVE_TABLE_BUDGET ? "remove" : "limit", wb->at, NULL);
			break;
		case DP_REQ_READ:
			break;
		case DP_REQ_RESET:
			DpWorkerInsert(slot, slot->roles[0], NULL, "reset", wb->at, NULL);
			break;
	}
	if (slot->respent)
		DpWorkerRespend(slot, wb);
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
				DpSpendingCharge(&e->s, &slot->cost, wb->at);
				break;
			case DP_REQ_SET_BUDGET:
			case DP_REQ_SET_CAPS:
				if (slot->respent)
					e->s = slot->respend;
				e->s.limits = slot->limits;
				e->caps = slot->caps;
				e->budgeted = true;
				e->removed = false;
				wb->limits_changed = true;
				break;
			case DP_REQ_REMOVE_BUDGET:
				e->caps.epsilon = e->caps.delta = e->caps.rho = NAN;
				e->budgeted = false;
				e->removed = true;
				wb->limits_changed = true;
				break;
			case DP_REQ_RESET:
				DpSpendingReset(&e->s);
				break;
			default:
				break;
		}
	}
	for (int t = 0; t < slot->ntables; t++)
	{
		DpTableBudgetEntry *e = hash_search(wb->pending_tables, &slot->tables[t], HASH_FIND, NULL);

		if (e == NULL)
			elog(ERROR, "dp_pg ledger: no working copy of a table budget");
		switch (slot->kind)
		{
			case DP_REQ_CHARGE:
				DpSpendingCharge(&e->s, &slot->cost, wb->at);
				break;
			case DP_REQ_SET_TABLE_BUDGET:
				if (slot->respent)
					e->s = slot->respend;
				e->s.limits = slot->limits;
				strlcpy(e->database, slot->database, sizeof(e->database));
				strlcpy(e->table_name, slot->table_name, sizeof(e->table_name));
				e->budgeted = true;
				e->removed = false;
				break;
			case DP_REQ_REMOVE_TABLE_BUDGET:
				e->budgeted = false;
				e->removed = true;
				break;
			default:
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
	else if (att->attlen > 0)
		len = att->attlen;		/* fixed length by reference (uuid) */
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
		"SELECT id, role, kind, charged_at, requested_by, query, epsilon, delta, rho, rdp, detail%s "
		"FROM dp_pg.ledger_entries WHERE id > $1 AND ($2 OR role = ANY ($3)) ORDER BY id LIMIT $4";
	static const char *refusals_sql =
		"SELECT id, refused_at, role, as_role, %s, sqlstate, rule, query "
		"FROM dp_pg.guard_refusal_log WHERE id > $1 AND ($2 OR role = ANY ($3)) ORDER BY id LIMIT $4";
	static const char *charges_sql =
		"SELECT id, role, %s, charged_at, requested_by, epsilon, delta, rho, rdp, %s, %s "
		"FROM dp_pg.ledger_entries WHERE kind = 'charge' AND id > $1 AND ($2 OR role = ANY ($3)) "
		"ORDER BY id LIMIT $4";
	const char *sql;
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
	/* the columns of the reader's catalog (0.2.0: three more), whatever the ledger's layout */
	sql = psprintf(ledger_sql, !slot->read_v2 ? "" : layout_v2 ? ", table_budget, budget_window, rdp_delta" :
				   ", NULL::pg_catalog.uuid, NULL::pg_catalog.tstzrange, NULL::pg_catalog.float8");
	if (slot->read_what == DP_READ_CHARGES)
		sql = layout_v2 ? psprintf(charges_sql, "table_budget", "rdp_delta", "budget_window") :
			psprintf(charges_sql, "NULL::pg_catalog.uuid", "NULL::pg_catalog.float8", "NULL::pg_catalog.tstzrange");
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
			DpWorkerJudge(slot, wb);
			if (slot->verdict == DP_VERDICT_OK)
				DpWorkerWrite(slot, wb);
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
	DpTableBudgetEntry *tp;

	LWLockAcquire(dp_ledger->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, wb->pending);
	while ((p = hash_seq_search(&seq)) != NULL)
	{
		bool		found;
		DpBudgetEntry *e;

		if (p->removed)
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
	hash_seq_init(&seq, wb->pending_tables);
	while ((tp = hash_seq_search(&seq)) != NULL)
	{
		DpTableBudgetEntry *e;

		if (tp->removed)
		{
			hash_search(dp_table_budgets, &tp->budget, HASH_REMOVE, NULL);
			continue;
		}
		if (!tp->budgeted)
			continue;
		e = hash_search(dp_table_budgets, &tp->budget, HASH_ENTER_NULL, NULL);
		if (e == NULL)
		{
			LWLockRelease(dp_ledger->lock);
			elog(FATAL, "too many dp_pg table budgets (at most %d)", DP_MAX_TABLE_BUDGETS);
		}
		*e = *tp;
	}
	if (wb->limits_changed)
		DpLedgerBumpGeneration();
	if (hash_get_num_entries(wb->pending) > 0 || hash_get_num_entries(wb->pending_tables) > 0)
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
	wb.pending = DpBudgetTable("dp_pg ledger batch");
	wb.pending_tables = DpTableBudgetTable("dp_pg ledger batch tables");
	wb.limits_changed = false;

	PG_TRY();
	{
		DpWorkerBegin("dp_pg ledger: recording charges");
		/* the batch's time: its transaction's start, never before an earlier batch's */
		wb.at = Max(GetCurrentTransactionStartTimestamp(), worker_clock);
		worker_clock = wb.at;
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

