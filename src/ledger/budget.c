/*
 * budget.c — SQL interface of the per-role privacy budgets.
 *
 * set_budget / drop_budget / reset_budget are requests to the ledger worker
 * (requests.c): they take effect durably when they return, whatever the
 * caller's transaction does afterwards, and each is logged in the ledger.
 * EXECUTE on them is revoked from PUBLIC by the install script.
 *
 * budget_rows() reads the worker's published totals.  A superuser, and a
 * monitoring role (pg_read_all_stats, which pg_monitor includes) that is not
 * an analyst, sees every role; anyone else sees only the roles their own
 * queries are charged to (DpViewerSeesAll).
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "accountant.h"
#include "agg_common.h"
#include "ledger.h"
#include "noise.h"
#include "shared.h"

PG_FUNCTION_INFO_V1(dp_set_budget);
PG_FUNCTION_INFO_V1(dp_set_query_cap);
PG_FUNCTION_INFO_V1(dp_ledger_rows);
PG_FUNCTION_INFO_V1(dp_charge_rows);
PG_FUNCTION_INFO_V1(dp_refusal_rows);
PG_FUNCTION_INFO_V1(dp_drop_budget);
PG_FUNCTION_INFO_V1(dp_reset_budget);
PG_FUNCTION_INFO_V1(dp_budget_rows);
PG_FUNCTION_INFO_V1(dp_charged_roles);
PG_FUNCTION_INFO_V1(dp_ledger_status);

/*
 * A limit argument: NULL -> NaN (not limited); else checked.  The delta limit
 * (below_one) may be 0: pure DP, only charges without delta fit.
 */
double
DpBoundArg(FunctionCallInfo fcinfo, int argno, const char *name, const char *what, bool below_one)
{
	double		v;

	if (PG_ARGISNULL(argno))
		return NAN;
	v = PG_GETARG_FLOAT8(argno);
	if (isnan(v) || isinf(v) || v < 0.0 || (v == 0.0 && !below_one) || (below_one && v >= 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s %s must be %s, got %g", name, what,
						below_one ? "at least 0 (pure DP) and less than 1" : "a finite number greater than 0", v)));
	return v;
}

#define DpLimitArg(fcinfo, argno, name, below_one) DpBoundArg(fcinfo, argno, name, "limit", below_one)
#define DpCapArg(fcinfo, argno, name, below_one) DpBoundArg(fcinfo, argno, name, "cap", below_one)

/* The role argument. */
static Oid
DpRoleArg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("role must not be null")));
	return PG_GETARG_OID(0);
}

/*
 * Membership of role in dp_pg_analyst, the group dp_pg.protect() grants
 * SELECT on protected tables to (so that BI tools' table pickers list them)
 * and whose row-level security policy gives no row without the guard.
 * Granted with a budget (unless the role is a member already, through
 * another role), its direct grant revoked with it; a role whose budget
 * outlived a rolled-back grant is granted again by the next
 * dp_pg.protect().  A change of membership makes PostgreSQL replan every
 * cached plan that depends on the role (its plancache's role callback).
 */
static void
DpAnalystMembership(Oid role, bool member)
{
	Oid			group = get_role_oid("dp_pg_analyst", true);
	char	   *name;
	char	   *sql;
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2];
	bool		direct;

	if (!OidIsValid(group) || role == group)
		return;
	name = GetUserNameFromId(role, true);
	if (name == NULL)
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "dp_pg: SPI_connect failed");
	args[0] = ObjectIdGetDatum(group);
	args[1] = ObjectIdGetDatum(role);
	if (SPI_execute_with_args("SELECT 1 FROM pg_catalog.pg_auth_members WHERE roleid = $1 AND member = $2",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "dp_pg: could not read pg_auth_members");
	direct = SPI_processed > 0;
	if (member && !direct && !is_member_of_role(role, group))
		sql = psprintf("GRANT dp_pg_analyst TO %s", quote_identifier(name));
	else if (!member && direct)
		sql = psprintf("REVOKE dp_pg_analyst FROM %s", quote_identifier(name));
	else
		sql = NULL;
	if (sql != NULL && SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "dp_pg: could not change the membership of %s in dp_pg_analyst", name);
	SPI_finish();
}

/*
 * The renewal arguments renew (argno) and renew_from (argno + 1), when the
 * function has them (0.2.0): NULL renew, no renewal (renew_from must then be
 * NULL too); renew_from NULL: DT_NOBEGIN, the worker's choice.  Checked.
 */
void
DpRenewArgs(FunctionCallInfo fcinfo, int argno, DpRenew *r)
{
	bool		from_given = PG_NARGS() > argno + 1 && !PG_ARGISNULL(argno + 1);

	memset(r, 0, sizeof(*r));
	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
	{
		if (from_given)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("renew_from needs renew"),
					 errhint("Give the period the budget renews with: renew => interval '1 month'.")));
		return;
	}
	r->every = *PG_GETARG_INTERVAL_P(argno);
	r->from = from_given ? PG_GETARG_TIMESTAMPTZ(argno + 1) : DT_NOBEGIN;
	DpRenewCheck(&r->every, r->from, from_given);
}

/*
 * dp_pg.set_budget(role, epsilon, delta, rho, renew, renew_from): create or
 * change a role's limits (0.1.0's catalog: the first four).
 */
Datum
dp_set_budget(PG_FUNCTION_ARGS)
{
	Oid			role = DpRoleArg(fcinfo);
	DpLimits	lim;
	DpRenew		renew;

	lim.epsilon = DpLimitArg(fcinfo, 1, "epsilon", false);
	lim.delta = DpLimitArg(fcinfo, 2, "delta", true);
	lim.rho = DpLimitArg(fcinfo, 3, "rho", false);
	DpRenewArgs(fcinfo, 4, &renew);
	DpAnalystMembership(role, true);
	DpLedgerSetBudget(role, &lim, &renew, false);
	PG_RETURN_VOID();
}

/*
 * dp_pg.set_query_cap(role, epsilon, delta, rho): the most one query may
 * spend (NULL: no cap; all NULL removes the caps).  A role without a budget
 * gets one with no limits.
 */
Datum
dp_set_query_cap(PG_FUNCTION_ARGS)
{
	Oid			role = DpRoleArg(fcinfo);
	DpLimits	caps;

	caps.epsilon = DpCapArg(fcinfo, 1, "epsilon", false);
	caps.delta = DpCapArg(fcinfo, 2, "delta", true);
	caps.rho = DpCapArg(fcinfo, 3, "rho", false);
	DpAnalystMembership(role, true);
	DpLedgerSetCaps(role, &caps);
	PG_RETURN_VOID();
}

/* dp_pg.drop_budget(role): the role is no longer an analyst; its ledger rows stay. */
Datum
dp_drop_budget(PG_FUNCTION_ARGS)
{
	Oid			role = DpRoleArg(fcinfo);

	DpLedgerSetBudget(role, NULL, NULL, true);
	DpAnalystMembership(role, false);
	PG_RETURN_VOID();
}

/* dp_pg.reset_budget(role): start the role's spending from zero (logged). */
Datum
dp_reset_budget(PG_FUNCTION_ARGS)
{
	DpLedgerResetBudget(DpRoleArg(fcinfo));
	PG_RETURN_VOID();
}

/* True if role is one the current user's queries are charged to. */
static bool
DpRoleVisible(Oid role, const Oid *mine, int nmine)
{
	for (int i = 0; i < nmine; i++)
		if (mine[i] == role)
			return true;
	return false;
}

/*
 * See ledger.h.  A monitoring role reads what pg_stat_activity and
 * pg_stat_statements already show it of every session (roles, query texts)
 * plus the privacy accounting, which depends on no row of any table.  An
 * analyst stays restricted to its own rows even as a member of pg_monitor,
 * and inside a superuser's SECURITY DEFINER function (its session user is
 * still charged, so the guard still treats the session as the analyst's):
 * the guard treats every analyst as hostile, and other analysts' charges
 * and kept answers are releases made to them, not to it.
 */
bool
DpViewerSeesAll(Oid *mine, int *nmine)
{
	*nmine = 0;
	/* a superuser's own session (not an analyst's inside a superuser's SECURITY DEFINER function) */
	if (superuser() && superuser_arg(GetSessionUserId()))
		return true;
	/* charged as the guard charges: the session user, the outer user and the current user */
	*nmine = DpLedgerChargedRoles(mine);
	return *nmine == 0 && (superuser() || has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS));
}

/* A float8 Datum, or NULL for NaN / Inf. */
Datum
DpNullableFloat(double v, bool *isnull)
{
	*isnull = isnan(v) || isinf(v);
	return *isnull ? (Datum) 0 : Float8GetDatum(v);
}

/*
 * The columns a budget's spending shows, from values[0] on: epsilon_spent,
 * delta_spent, rho_spent, epsilon_remaining, charges, accounting (6), then
 * from more[0] on: renew, window_start, window_end, lifetime_epsilon,
 * lifetime_delta, lifetime_rho, lifetime_charges (7; more NULL: not shown).
 */
void
DpSpendingColumns(const DpSpending *s, Datum *values, bool *nulls, Datum *more, bool *mnulls)
{
	int			method;
	double		spent = dp_spent_epsilon(&s->spent, s->limits.delta, &method);
	double		life = dp_spent_epsilon(&s->lifetime, s->limits.delta, NULL);

	if (s->charges == 0)
	{
		spent = 0.0;
		method = 0;
	}
	values[0] = DpNullableFloat(spent, &nulls[0]);
	values[1] = Float8GetDatum(s->spent.delta);
	values[2] = DpNullableFloat(s->spent.rho, &nulls[2]);
	if (isnan(s->limits.epsilon))
		nulls[3] = true;
	else
		values[3] = Float8GetDatum(spent >= s->limits.epsilon ? 0.0 : s->limits.epsilon - spent);
	values[4] = Int64GetDatum(s->charges);
	values[5] = CStringGetTextDatum(s->charges == 0 ? "none" : dp_spent_method_name(method));
	if (more == NULL)
		return;
	if (DpRenewIsSet(&s->renew))
	{
		Interval   *every = palloc(sizeof(Interval));

		*every = s->renew.every;
		more[0] = IntervalPGetDatum(every);
		more[1] = TimestampTzGetDatum(s->window_start);
		more[2] = TimestampTzGetDatum(s->window_end);
	}
	else
		mnulls[0] = mnulls[1] = mnulls[2] = true;
	if (s->lifetime_charges == 0)
		life = 0.0;
	more[3] = DpNullableFloat(life, &mnulls[3]);
	more[4] = Float8GetDatum(s->lifetime.delta);
	more[5] = DpNullableFloat(s->lifetime.rho, &mnulls[5]);
	more[6] = Int64GetDatum(s->lifetime_charges);
}

/* dp_pg.budget_rows(): one row per visible budgeted role. */
Datum
dp_budget_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DpBudgetRow *rows;
	int			n;
	Oid			mine[DP_MAX_CHARGE_ROLES];
	int			nmine;
	bool		all = DpViewerSeesAll(mine, &nmine);
	bool		windows;

	InitMaterializedSRF(fcinfo, 0);
	/* 0.2.0's catalog shows the window and the lifetime totals too */
	windows = rsinfo->setDesc->natts >= 20;
	n = DpLedgerBudgetRows(&rows);
	for (int i = 0; i < n; i++)
	{
		DpBudgetRow *r = &rows[i];
		Datum		values[20];
		bool		nulls[20] = {false};

		if (!all && !DpRoleVisible(r->role, mine, nmine))
			continue;
		values[0] = ObjectIdGetDatum(r->role);
		values[1] = DpNullableFloat(r->s.limits.epsilon, &nulls[1]);
		values[2] = DpNullableFloat(r->s.limits.delta, &nulls[2]);
		values[3] = DpNullableFloat(r->s.limits.rho, &nulls[3]);
		DpSpendingColumns(&r->s, &values[4], &nulls[4], windows ? &values[13] : NULL, &nulls[13]);
		values[10] = DpNullableFloat(r->caps.epsilon, &nulls[10]);
		values[11] = DpNullableFloat(r->caps.delta, &nulls[11]);
		values[12] = DpNullableFloat(r->caps.rho, &nulls[12]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * dp_pg.ledger_rows(): the ledger's rows, read through the ledger worker so
 * that every database sees the one cluster-wide ledger.  A superuser or a
 * monitoring role sees every row; anyone else the rows of the roles their
 * queries are charged to.
 */
Datum
dp_ledger_rows(PG_FUNCTION_ARGS)
{
	Oid			mine[DP_MAX_CHARGE_ROLES];
	int			nmine;
	bool		all = DpViewerSeesAll(mine, &nmine);

	DpLedgerReadRows(fcinfo, DP_READ_LEDGER, all, mine, nmine);
	return (Datum) 0;
}

/*
 * dp_pg.charge_rows(): the ledger's charges without their query text and
 * detail, for the reports (dp_pg.budget_windows, table_budget_windows);
 * whose rows as dp_pg.ledger_rows().
 */
Datum
dp_charge_rows(PG_FUNCTION_ARGS)
{
	Oid			mine[DP_MAX_CHARGE_ROLES];
	int			nmine;
	bool		all = DpViewerSeesAll(mine, &nmine);

	DpLedgerReadRows(fcinfo, DP_READ_CHARGES, all, mine, nmine);
	return (Datum) 0;
}

/*
 * dp_pg.refusal_rows(): the log of refused analyst queries, for superusers
 * and monitoring roles only (EXECUTE is granted to pg_read_all_stats; an
 * analyst among its members is refused here).
 */
Datum
dp_refusal_rows(PG_FUNCTION_ARGS)
{
	Oid			mine[DP_MAX_CHARGE_ROLES];
	int			nmine;

	if (!DpViewerSeesAll(mine, &nmine))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the log of refused queries"),
				 errdetail("Only superusers and members of pg_read_all_stats (or pg_monitor) that have no privacy budget may read it.")));
	DpLedgerReadRows(fcinfo, DP_READ_REFUSALS, true, NULL, 0);
	return (Datum) 0;
}

/* dp_pg.charged_roles(): the budgeted roles the current user's queries are charged to. */
Datum
dp_charged_roles(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			roles[DP_MAX_CHARGE_ROLES];
	int			n;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	n = DpLedgerChargedRoles(roles);
	for (int i = 0; i < n; i++)
	{
		Datum		v = ObjectIdGetDatum(roles[i]);
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &v, &isnull);
	}
	return (Datum) 0;
}

/* dp_pg.ledger_status(): 'ready' once the ledger worker accepts requests ('held': see reload.c). */
Datum
dp_ledger_status(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(DpLedgerStatus()));
}

#ifdef DP_PG_TEST_SWITCHES
/*
 * Test builds only: the guard's lock-free views of the ledger, for the TAP
 * tests, which declare them (no install script does).
 */
PG_FUNCTION_INFO_V1(dp_debug_budget_generation);
PG_FUNCTION_INFO_V1(dp_debug_charged_roles_nowait);

/* DpLedgerBudgetGeneration() as int8. */
Datum
dp_debug_budget_generation(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64((int64) DpLedgerBudgetGeneration());
}

/* DpLedgerChargedRolesNoWait() as oid[]; NULL when not known. */
Datum
dp_debug_charged_roles_nowait(PG_FUNCTION_ARGS)
{
	Oid			roles[DP_MAX_CHARGE_ROLES];
	Datum		elems[DP_MAX_CHARGE_ROLES];
	bool		known;
	int			n = DpLedgerChargedRolesNoWait(roles, &known);

	if (!known)
		PG_RETURN_NULL();
	for (int i = 0; i < n; i++)
		elems[i] = ObjectIdGetDatum(roles[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}
#endif

/*
 * ProcessUtility: a role that has a budget cannot be dropped until its budget
 * is (dp_pg.drop_budget); its ledger history stays in dp_pg.ledger either
 * way.  While the ledger cannot tell, DROP ROLE is refused (fail closed).
 */
void
DpBudgetCheckUtility(Node *stmt)
{
	ListCell   *lc;
	DpBudgetRow *rows = NULL;
	int			n = -1;

	if (!IsA(stmt, DropRoleStmt))
		return;
	foreach(lc, ((DropRoleStmt *) stmt)->roles)
	{
		Oid			role = get_rolespec_oid(lfirst(lc), true);

		if (!OidIsValid(role))
			continue;
		if (n < 0)
		{
			if (!DpLedgerReady())
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("roles cannot be dropped while the dp_pg ledger is not available"),
						 errdetail("dp_pg could not check whether \"%s\" has a budget.",
								   get_rolespec_name(lfirst(lc))),
						 errhint("Run CREATE EXTENSION dp_pg in the ledger database (dp_pg.ledger_database) and retry.")));
			n = DpLedgerBudgetRows(&rows);
		}
		for (int i = 0; i < n; i++)
			if (rows[i].role == role)
				ereport(ERROR,
						(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
						 errmsg("role \"%s\" has a dp_pg privacy budget", get_rolespec_name(lfirst(lc))),
						 errdetail("Its budget must be dropped before the role; its ledger history stays readable in dp_pg.ledger."),
						 errhint("SELECT dp_pg.drop_budget('%s');", get_rolespec_name(lfirst(lc)))));
	}
}
