/*
 * tablebudget.c — SQL interface of table budgets: a limit on the total
 * privacy loss of a protected table over every role.
 *
 * Ten analysts with epsilon 1 each may together spend epsilon 10 on the
 * same people; a table budget bounds that total.  It lives in the ledger
 * (dp_pg.table_budget_limits, in the ledger database, under a uuid), and a
 * protected table is bound to it by dp_pg.protected_tables.table_budget in
 * the table's own database: the binding is dumped with the protection and
 * restored onto the table of the same name (regclass), follows a rename,
 * and is replicated to hot standbys, whose backends send it with their
 * charges.  A query that reads protected tables is charged to their table
 * budgets with its roles' budgets, in one subtransaction of the ledger
 * worker's batch (worker.c): every budget has room, or none is charged and
 * nothing is released.  Only queries charged to some role's budget (an
 * analyst's) are charged to table budgets: a trusted role reads the rows
 * themselves.
 *
 * set_table_budget and drop_table_budget are requests to the ledger worker,
 * durable when they return whatever the caller's transaction does
 * afterwards (as set_budget); the binding is written in the caller's
 * transaction.  If that transaction rolls back, the budget stays in the
 * ledger without a table, and the next set_table_budget of the table (by
 * database and qualified name) binds it again, spending included: a table
 * budget is found again by name, also after a restore that lost the binding
 * or a drop of the budget.  A binding whose budget the ledger does not hold
 * (this database restored into a cluster without its ledger) fails closed:
 * the table's dp queries are refused (55000) until a DBA sets or drops the
 * table's budget.  EXECUTE on both is revoked from PUBLIC by the install
 * script.
 *
 * table_budget_rows(): superusers and monitoring roles that are not
 * analysts (DpViewerSeesAll) see every database's table budgets; anyone else
 * those bound to this database's protected tables, which are readable by
 * everyone like dp_pg.protected_tables.  A table budget is shared by every
 * analyst: what is spent of it tells an analyst that others queried the
 * table and with what privacy parameters (never what they were answered),
 * as a refusal by it would.
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above; within ledger/ it calls requests.c, windows.c and
 * budget.c.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/uuid.h"

#include "protected.h"
#include "shared.h"

PG_FUNCTION_INFO_V1(dp_set_table_budget);
PG_FUNCTION_INFO_V1(dp_drop_table_budget);
PG_FUNCTION_INFO_V1(dp_table_budget_rows);

/*
 * The table argument: a protected table of this database, whose protection
 * row is locked (FOR UPDATE) until the end of the transaction; its binding
 * into *budget (false: none).
 */
static Oid
DpTableArg(FunctionCallInfo fcinfo, pg_uuid_t *budget, bool *bound)
{
	Oid			relid;
	Oid			types[1] = {OIDOID};
	Datum		values[1];
	bool		isnull;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("table must not be null")));
	relid = PG_GETARG_OID(0);
	values[0] = ObjectIdGetDatum(relid);
	if (SPI_execute_with_args("SELECT table_budget FROM dp_pg.protected_tables WHERE relid = $1 FOR UPDATE",
							  1, types, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read dp_pg.protected_tables");
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("table \"%s\" is not protected", get_rel_name(relid) ? get_rel_name(relid) : "?"),
				 errdetail("A table budget limits what every analyst together learns of a protected table."),
				 errhint("Protect it first: SELECT dp_pg.protect('%s');", get_rel_name(relid) ? get_rel_name(relid) : "?")));
	values[0] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	*bound = !isnull;
	memset(budget, 0, sizeof(*budget));
	if (!isnull)
		*budget = *DatumGetUUIDP(values[0]);
	return relid;
}

/* The table's qualified name as a table budget keeps it. */
static char *
DpTableName(Oid relid)
{
	char	   *nsp = get_namespace_name(get_rel_namespace(relid));
	char	   *rel = get_rel_name(relid);

	if (nsp == NULL || rel == NULL)
		elog(ERROR, "cache lookup failed for relation %u", relid);
	return quote_qualified_identifier(nsp, rel);
}

/* Write the table's binding (NULL: none) in the caller's transaction. */
static void
DpWriteBinding(Oid relid, const pg_uuid_t *budget)
{
	Oid			types[2] = {OIDOID, UUIDOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	values[0] = ObjectIdGetDatum(relid);
	if (budget != NULL)
	{
		pg_uuid_t  *copy = palloc(sizeof(pg_uuid_t));

		*copy = *budget;
		values[1] = UUIDPGetDatum(copy);
	}
	else
	{
		values[1] = (Datum) 0;
		nulls[1] = 'n';
	}
	if (SPI_execute_with_args("UPDATE dp_pg.protected_tables SET table_budget = $2 WHERE relid = $1",
							  2, types, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not write dp_pg.protected_tables");
}

/*
 * dp_pg.set_table_budget(tab, epsilon, delta, rho, renew, renew_from):
 * create or change a protected table's budget (NULL: not limited).
 */
Datum
dp_set_table_budget(PG_FUNCTION_ARGS)
{
	pg_uuid_t	bound_to;
	bool		bound;
	Oid			relid;
	DpLimits	lim;
	DpRenew		renew;
	pg_uuid_t	set;
	char	   *database;

	lim.epsilon = DpBoundArg(fcinfo, 1, "epsilon", "limit", false);
	lim.delta = DpBoundArg(fcinfo, 2, "delta", "limit", true);
	lim.rho = DpBoundArg(fcinfo, 3, "rho", "limit", false);
	DpRenewArgs(fcinfo, 4, &renew);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "dp_pg: SPI_connect failed");
	relid = DpTableArg(fcinfo, &bound_to, &bound);
	database = get_database_name(MyDatabaseId);
	set = DpLedgerSetTableBudget(bound ? &bound_to : NULL, database, DpTableName(relid), &lim, &renew);
	if (!bound || memcmp(&set, &bound_to, sizeof(pg_uuid_t)) != 0)
		DpWriteBinding(relid, &set);
	SPI_finish();
	PG_RETURN_VOID();
}

/* dp_pg.drop_table_budget(tab): the table is no longer limited as a whole; its ledger rows stay. */
Datum
dp_drop_table_budget(PG_FUNCTION_ARGS)
{
	pg_uuid_t	budget;
	bool		bound;
	Oid			relid;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "dp_pg: SPI_connect failed");
	relid = DpTableArg(fcinfo, &budget, &bound);
	if (!bound)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table \"%s\" has no privacy budget", get_rel_name(relid))));
	DpLedgerRemoveTableBudget(&budget, get_database_name(MyDatabaseId), DpTableName(relid));
	DpWriteBinding(relid, NULL);
	SPI_finish();
	PG_RETURN_VOID();
}

/* The protected table of this database bound to budget, or InvalidOid. */
static Oid
DpBoundTable(List *prot, const pg_uuid_t *budget)
{
	ListCell   *lc;

	foreach(lc, prot)
	{
		DpProtected *p = lfirst(lc);

		if (p->has_budget && memcmp(&p->budget, budget, sizeof(pg_uuid_t)) == 0)
			return p->relid;
	}
	return InvalidOid;
}

/* dp_pg.table_budget_rows(): one row per visible table budget. */
Datum
dp_table_budget_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DpTableBudgetRow *rows;
	int			n;
	Oid			mine[DP_MAX_CHARGE_ROLES];
	int			nmine;
	bool		all = DpViewerSeesAll(mine, &nmine);
	List	   *prot = DpProtectedTables();

	InitMaterializedSRF(fcinfo, 0);
	n = DpLedgerTableBudgetRows(&rows);
	for (int i = 0; i < n; i++)
	{
		DpTableBudgetRow *r = &rows[i];
		Datum		values[20];
		bool		nulls[20] = {false};
		Oid			relid = DpBoundTable(prot, &r->budget);
		pg_uuid_t  *budget = palloc(sizeof(pg_uuid_t));

		if (!all && !OidIsValid(relid))
			continue;
		*budget = r->budget;
		values[0] = UUIDPGetDatum(budget);
		values[1] = ObjectIdGetDatum(relid);
		nulls[1] = !OidIsValid(relid);
		values[2] = CStringGetTextDatum(r->database);
		values[3] = CStringGetTextDatum(r->table_name);
		values[4] = DpNullableFloat(r->s.limits.epsilon, &nulls[4]);
		values[5] = DpNullableFloat(r->s.limits.delta, &nulls[5]);
		values[6] = DpNullableFloat(r->s.limits.rho, &nulls[6]);
		DpSpendingColumns(&r->s, &values[7], &nulls[7], &values[13], &nulls[13]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
