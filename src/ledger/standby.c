/*
 * standby.c — charges of a hot standby, forwarded to the primary.
 *
 * Both sides of the link (the protocol is described at the head of
 * worker_standby.c, the ledger worker on a hot standby):
 *
 *  - the standby's ledger worker is a libpq client of its primary.  By
 *    default it connects the way the standby's replication does, with
 *    primary_conninfo (so a `pg_basebackup -R` standby needs no setting),
 *    to dp_pg.ledger_database; dp_pg.primary_conninfo (superuser-only,
 *    server configuration) overrides it.  Every wait is on the worker's
 *    latch and the socket, bounded by dp_pg.charge_timeout, so a primary
 *    that does not answer fails the charges instead of hanging them.
 *
 *  - on the primary, dp_pg.forward_charges() and dp_pg.forward_refusals()
 *    take a batch from a standby.  Only a superuser or a role with the
 *    REPLICATION attribute may call them (a role that can already stream
 *    every row of the cluster): an analyst gets 42501 and nothing happens.
 *
 * The values travel as text in PostgreSQL's own formats: costs as float8
 * text of 17 significant digits (exact round trip; Infinity as such), arrays
 * as array literals.  A cascading standby's upstream is itself a standby,
 * whose worker forwards the batch on: the charge is always recorded on the
 * one primary.
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above.
 */
#include "postgres.h"

#include <math.h>
#include <poll.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
#include "utils/wait_event.h"

#include "ledger.h"

PG_FUNCTION_INFO_V1(dp_forward_charges);
PG_FUNCTION_INFO_V1(dp_forward_refusals);

/* dp_pg.primary_conninfo */
static char *dp_primary_conninfo = NULL;

/* The forwarder (DpLedgerForwarder, ledger.h). */
static bool DpForwardCharges(int n, const DpChargeRequest *reqs, DpChargeVerdict *out,
							 int *sqlerrcode, char *err, size_t errlen);
static bool DpForwardRefusals(int n, const TimestampTz *at, const Oid *session_user,
							  const Oid *current_user, const Oid *database,
							  const int *sqlerrcode, const char *const *rule,
							  const char *const *query, int64 missed,
							  char *err, size_t errlen);
static void DpForwardDisconnect(void);

/* The worker's connection to its primary, and the conninfo it was opened with. */
static PGconn *fwd_conn = NULL;
static char *fwd_conninfo = NULL;
/* the primary's dp_pg.forward_charges takes table budgets and rdp_delta (0.2.0) */
static bool fwd_tables = false;

/* What the ledger worker calls on a standby (DpLedgerSetForwarder). */
static const DpLedgerForwarder standby_forwarder = {
	.charges = DpForwardCharges,
	.refusals = DpForwardRefusals,
	.disconnect = DpForwardDisconnect,
};

/* Define dp_pg.primary_conninfo and register the forwarder with the ledger. */
void
DpStandbyInit(void)
{
	DefineCustomStringVariable("dp_pg.primary_conninfo",
							   "Connection string a hot standby's ledger worker uses to forward charges to the primary.",
							   "Empty (the default): the standby's primary_conninfo, with dbname set to dp_pg.ledger_database.",
							   &dp_primary_conninfo,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
	DpLedgerSetForwarder(&standby_forwarder);
}

/* Close the connection to the primary. */
static void
DpForwardDisconnect(void)
{
	if (fwd_conn)
		PQfinish(fwd_conn);
	fwd_conn = NULL;
	if (fwd_conninfo)
		pfree(fwd_conninfo);
	fwd_conninfo = NULL;
}

/* The conninfo to use: the override, or the replication's own. */
static const char *
DpForwardConninfo(void)
{
	const char *info;

	if (dp_primary_conninfo && dp_primary_conninfo[0] != '\0')
		return dp_primary_conninfo;
	info = GetConfigOption("primary_conninfo", true, false);
	return info ? info : "";
}

/* The first line of libpq's last message (it ends in a newline). */
static void
DpConnError(const char *what, char *err, size_t errlen)
{
	const char *m = fwd_conn ? PQerrorMessage(fwd_conn) : "out of memory";
	size_t		len = strcspn(m, "\n");

	snprintf(err, errlen, "%s: %.*s", what, (int) Min(len, 200), m);
}

/*
 * Wait for the socket (events: WL_SOCKET_READABLE / WRITEABLE) or the
 * deadline; false when the deadline passed.
 */
static bool
DpWaitSocket(int events, TimestampTz deadline)
{
	long		remain = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
	int			rc;

	if (remain <= 0)
		return false;
	rc = WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | events,
						   PQsocket(fwd_conn), remain, PG_WAIT_EXTENSION);
	if (rc & WL_LATCH_SET)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return true;
}

/*
 * Send sql (with nparams text parameters) and wait for its last result;
 * NULL (and err) on a failure of the connection or of the statement, whose
 * SQLSTATE goes to *code.  The caller PQclear()s the result.
 */
static PGresult *
DpForwardExec(const char *sql, int nparams, const char *const *params, TimestampTz deadline,
			  int *code, char *err, size_t errlen)
{
	PGresult   *last = NULL;
	PGresult   *res;
	int			sent = nparams > 0 ? PQsendQueryParams(fwd_conn, sql, nparams, NULL, params, NULL, NULL, 0)
		: PQsendQuery(fwd_conn, sql);

	*code = ERRCODE_CONNECTION_FAILURE;
	if (!sent)
	{
		DpConnError("lost the connection to the primary", err, errlen);
		return NULL;
	}
	for (;;)
	{
		int			f = PQflush(fwd_conn);

		if (f == 0)
			break;
		if (f < 0 || !DpWaitSocket(WL_SOCKET_WRITEABLE | WL_SOCKET_READABLE, deadline))
		{
			if (f < 0)
				DpConnError("lost the connection to the primary", err, errlen);
			else
				snprintf(err, errlen, "the primary did not answer within dp_pg.charge_timeout");
			return NULL;
		}
		if (!PQconsumeInput(fwd_conn))
		{
			DpConnError("lost the connection to the primary", err, errlen);
			return NULL;
		}
	}
	for (;;)
	{
		while (PQisBusy(fwd_conn))
		{
			if (!DpWaitSocket(WL_SOCKET_READABLE, deadline))
			{
				if (last)
					PQclear(last);
				snprintf(err, errlen, "the primary did not answer within dp_pg.charge_timeout");
				return NULL;
			}
			if (!PQconsumeInput(fwd_conn))
			{
				if (last)
					PQclear(last);
				DpConnError("lost the connection to the primary", err, errlen);
				return NULL;
			}
		}
		res = PQgetResult(fwd_conn);
		if (res == NULL)
			break;
		if (last)
			PQclear(last);
		last = res;
	}
	if (last == NULL || (PQresultStatus(last) != PGRES_TUPLES_OK && PQresultStatus(last) != PGRES_COMMAND_OK))
	{
		const char *state = last ? PQresultErrorField(last, PG_DIAG_SQLSTATE) : NULL;
		const char *msg = last ? PQresultErrorField(last, PG_DIAG_MESSAGE_PRIMARY) : NULL;

		if (state && strlen(state) == 5)
			*code = MAKE_SQLSTATE(state[0], state[1], state[2], state[3], state[4]);
		snprintf(err, errlen, "the primary refused the forwarded request: %s",
				 msg ? msg : (last ? PQresStatus(PQresultStatus(last)) : "no result"));
		if (last)
			PQclear(last);
		return NULL;
	}
	return last;
}

/*
 * Connect to the primary unless connected (with the current conninfo);
 * false (and err) if that fails before the deadline.
 */
static bool
DpForwardConnect(TimestampTz deadline, int *code, char *err, size_t errlen)
{
	const char *info = DpForwardConninfo();
	const char *keys[6];
	const char *vals[6];
	PGresult   *res;

	*code = ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION;
	if (fwd_conn && PQstatus(fwd_conn) == CONNECTION_OK && fwd_conninfo && strcmp(fwd_conninfo, info) == 0)
	{
		struct pollfd pfd;

		/*
		 * An idle connection has nothing to read unless the primary ended it
		 * (a restart, a crash, a terminated session): then open a new one
		 * now, before a batch is sent into a dead connection.
		 */
		pfd.fd = PQsocket(fwd_conn);
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, 0) == 0)
			return true;
	}
	DpForwardDisconnect();
	if (info[0] == '\0')
	{
		snprintf(err, errlen, "this hot standby has no primary_conninfo (and dp_pg.primary_conninfo is empty)");
		return false;
	}
	/* the conninfo first (expanded), then what dp_pg sets on top of it */
	keys[0] = "dbname";
	vals[0] = info;
	keys[1] = "dbname";
	vals[1] = dp_ledger_database ? dp_ledger_database : "postgres";
	keys[2] = "fallback_application_name";
	vals[2] = "dp_pg ledger forwarder";
	keys[3] = "client_encoding";
	vals[3] = GetDatabaseEncodingName();
	keys[4] = NULL;
	vals[4] = NULL;
	fwd_conn = PQconnectStartParams(keys, vals, 1);
	if (fwd_conn == NULL || PQstatus(fwd_conn) == CONNECTION_BAD)
	{
		DpConnError("cannot reach the primary", err, errlen);
		DpForwardDisconnect();
		return false;
	}
	for (;;)
	{
		PostgresPollingStatusType st = PQconnectPoll(fwd_conn);

		if (st == PGRES_POLLING_OK)
			break;
		if (st == PGRES_POLLING_FAILED ||
			!DpWaitSocket(st == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE, deadline))
		{
			if (st == PGRES_POLLING_FAILED)
				DpConnError("cannot reach the primary", err, errlen);
			else
				snprintf(err, errlen, "cannot reach the primary: no connection within dp_pg.charge_timeout");
			DpForwardDisconnect();
			return false;
		}
	}
	/* nothing of the connecting user's may resolve in our SQL; exact floats */
	res = DpForwardExec("SET search_path = pg_catalog; SET extra_float_digits = 3", 0, NULL, deadline,
						code, err, errlen);
	if (res == NULL)
	{
		DpForwardDisconnect();
		return false;
	}
	PQclear(res);
	/* which forward_charges the primary's catalog has (0.1.0: no table budgets) */
	res = DpForwardExec("SELECT count(*) FROM pg_catalog.pg_proc WHERE proname = 'forward_charges' "
						"AND pronamespace = 'dp_pg'::pg_catalog.regnamespace AND pronargs = 12", 0, NULL, deadline,
						code, err, errlen);
	if (res == NULL || PQntuples(res) != 1)
	{
		if (res)
			PQclear(res);
		DpForwardDisconnect();
		return false;
	}
	fwd_tables = strcmp(PQgetvalue(res, 0, 0), "1") == 0;
	PQclear(res);
	fwd_conninfo = MemoryContextStrdup(TopMemoryContext, info);
	return true;
}

/* Append a float8 array element in text that reads back exactly. */
static void
DpAppendFloat(StringInfo buf, double v)
{
	if (isnan(v))
		appendStringInfoString(buf, "NaN");
	else if (isinf(v))
		appendStringInfoString(buf, v > 0 ? "Infinity" : "-Infinity");
	else
		appendStringInfo(buf, "%.17g", v);
}

/* Append a text array element, quoted. */
static void
DpAppendQuoted(StringInfo buf, const char *s)
{
	appendStringInfoChar(buf, '"');
	for (; s && *s; s++)
	{
		if (*s == '"' || *s == '\\')
			appendStringInfoChar(buf, '\\');
		appendStringInfoChar(buf, *s);
	}
	appendStringInfoChar(buf, '"');
}

/* Parse a one-dimensional array of numbers ("{1,2.5,Infinity}") into out[]; returns the count. */
static int
DpParseNumbers(const char *s, double *out, int max)
{
	int			n = 0;

	if (s == NULL || *s != '{')
		return 0;
	s++;
	while (*s && *s != '}' && n < max)
	{
		char	   *end;

		out[n++] = strtod(s, &end);
		if (end == s)
			break;
		s = end;
		if (*s == ',')
			s++;
	}
	return n;
}

/* Forward a batch of charges to the primary (see ledger.h). */
static bool
DpForwardCharges(int n, const DpChargeRequest *reqs, DpChargeVerdict *out,
				 int *sqlerrcode, char *err, size_t errlen)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), dp_charge_timeout_ms * 4 / 5);
	StringInfoData p[12];
	const char *params[12];
	PGresult   *res;
	bool		ok = true;
	int			nparams;
	int			ntab = 0;

	if (!DpForwardConnect(deadline, sqlerrcode, err, errlen))
		return false;
	nparams = fwd_tables ? 12 : 9;
	for (int r = 0; r < n; r++)
		if (reqs[r].ntables > 0 && !fwd_tables)
		{
			snprintf(err, errlen, "the primary's dp_pg has no table budgets yet (run ALTER EXTENSION dp_pg UPDATE there)");
			*sqlerrcode = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
			return false;
		}
	for (int i = 0; i < nparams; i++)
	{
		initStringInfo(&p[i]);
		appendStringInfoChar(&p[i], '{');
	}
	for (int r = 0; r < n; r++)
	{
		const char *sep = r > 0 ? "," : "";
		DpCost		cost = reqs[r].cost;

		/* a primary without rdp_delta takes the charge without its approximate curve */
		if (!fwd_tables && cost.rdp_delta > 0.0)
		{
			for (int a = 0; a < DP_RDP_NALPHAS; a++)
				cost.rdp[a] = INFINITY;
			cost.rdp_delta = 0.0;
		}
		appendStringInfo(&p[0], "%s%u", sep, reqs[r].requested_by);
		appendStringInfo(&p[1], "%s%d", sep, reqs[r].nroles);
		for (int k = 0; k < reqs[r].nroles; k++)
			appendStringInfo(&p[2], "%s%u", (r > 0 || k > 0) ? "," : "", reqs[r].roles[k]);
		appendStringInfoString(&p[3], sep);
		DpAppendFloat(&p[3], cost.epsilon);
		appendStringInfoString(&p[4], sep);
		DpAppendFloat(&p[4], cost.delta);
		appendStringInfoString(&p[5], sep);
		DpAppendFloat(&p[5], cost.rho);
		for (int a = 0; a < DP_RDP_NALPHAS; a++)
		{
			if (r > 0 || a > 0)
				appendStringInfoChar(&p[6], ',');
			DpAppendFloat(&p[6], cost.rdp[a]);
		}
		appendStringInfoString(&p[7], sep);
		DpAppendQuoted(&p[7], reqs[r].query);
		appendStringInfoString(&p[8], sep);
		DpAppendQuoted(&p[8], reqs[r].detail);
		if (!fwd_tables)
			continue;
		appendStringInfoString(&p[9], sep);
		DpAppendFloat(&p[9], cost.rdp_delta);
		appendStringInfo(&p[10], "%s%d", sep, reqs[r].ntables);
		for (int t = 0; t < reqs[r].ntables; t++)
			appendStringInfo(&p[11], "%s%s", ntab++ > 0 ? "," : "",
							 DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum((pg_uuid_t *) &reqs[r].tables[t]))));
	}
	for (int i = 0; i < nparams; i++)
	{
		appendStringInfoChar(&p[i], '}');
		params[i] = p[i].data;
	}
	res = DpForwardExec(fwd_tables ?
						"SELECT ord, verdict, refused_role, refusal, spent, lim, requested, sqlstate, message, "
						"warn_role, warn_what, warn_spent, warn_limit, refused_table, warn_table "
						"FROM dp_pg.forward_charges($1::pg_catalog.oid[], $2::pg_catalog.int4[], $3::pg_catalog.oid[], "
						"$4::pg_catalog.float8[], $5::pg_catalog.float8[], $6::pg_catalog.float8[], "
						"$7::pg_catalog.float8[], $8::pg_catalog.text[], $9::pg_catalog.text[], "
						"$10::pg_catalog.float8[], $11::pg_catalog.int4[], $12::pg_catalog.uuid[]) ORDER BY ord" :
						"SELECT ord, verdict, refused_role, refusal, spent, lim, requested, sqlstate, message, "
						"warn_role, warn_what, warn_spent, warn_limit "
						"FROM dp_pg.forward_charges($1::pg_catalog.oid[], $2::pg_catalog.int4[], $3::pg_catalog.oid[], "
						"$4::pg_catalog.float8[], $5::pg_catalog.float8[], $6::pg_catalog.float8[], "
						"$7::pg_catalog.float8[], $8::pg_catalog.text[], $9::pg_catalog.text[]) ORDER BY ord",
						nparams, params, deadline, sqlerrcode, err, errlen);
	for (int i = 0; i < nparams; i++)
		pfree(p[i].data);
	if (res == NULL)
	{
		/* the connection may be in any state: start afresh next time */
		DpForwardDisconnect();
		return false;
	}
	if (PQntuples(res) != n || PQnfields(res) != (fwd_tables ? 15 : 13))
	{
		snprintf(err, errlen, "the primary answered %d verdicts for %d forwarded charges", PQntuples(res), n);
		*sqlerrcode = ERRCODE_PROTOCOL_VIOLATION;
		PQclear(res);
		DpForwardDisconnect();
		return false;
	}
	for (int r = 0; r < n && ok; r++)
	{
		DpChargeVerdict *v = &out[r];
		const char *state = PQgetvalue(res, r, 7);
		double		nums[DP_FORWARD_WARNINGS];
		int			nw;

		memset(v, 0, sizeof(*v));
		v->verdict = atoi(PQgetvalue(res, r, 1));
		v->refused_role = (Oid) strtoul(PQgetvalue(res, r, 2), NULL, 10);
		v->refused_table = fwd_tables ? atoi(PQgetvalue(res, r, 13)) : -1;
		v->refusal = atoi(PQgetvalue(res, r, 3));
		v->spent = strtod(PQgetvalue(res, r, 4), NULL);
		v->limit = strtod(PQgetvalue(res, r, 5), NULL);
		v->requested = strtod(PQgetvalue(res, r, 6), NULL);
		v->sqlerrcode = strlen(state) == 5 ?
			MAKE_SQLSTATE(state[0], state[1], state[2], state[3], state[4]) : ERRCODE_INTERNAL_ERROR;
		strlcpy(v->errmsg, PQgetvalue(res, r, 8), sizeof(v->errmsg));
		nw = DpParseNumbers(PQgetvalue(res, r, 9), nums, DP_FORWARD_WARNINGS);
		v->nwarn = nw;
		for (int w = 0; w < nw; w++)
			v->warn_role[w] = (Oid) nums[w];
		if (DpParseNumbers(PQgetvalue(res, r, 10), nums, DP_FORWARD_WARNINGS) != nw)
			ok = false;
		for (int w = 0; w < nw; w++)
			v->warn_what[w] = (int) nums[w];
		if (DpParseNumbers(PQgetvalue(res, r, 11), v->warn_spent, DP_FORWARD_WARNINGS) != nw ||
			DpParseNumbers(PQgetvalue(res, r, 12), v->warn_limit, DP_FORWARD_WARNINGS) != nw)
			ok = false;
		for (int w = 0; w < nw; w++)
			v->warn_table[w] = -1;
		if (fwd_tables)
		{
			if (DpParseNumbers(PQgetvalue(res, r, 14), nums, DP_FORWARD_WARNINGS) != nw)
				ok = false;
			for (int w = 0; w < nw; w++)
				v->warn_table[w] = (int) nums[w];
		}
		if (atoi(PQgetvalue(res, r, 0)) != r + 1 || v->verdict < 1 || v->verdict > 3 ||
			v->refused_table < -1 || v->refused_table >= Max(reqs[r].ntables, 1))
			ok = false;
	}
	PQclear(res);
	if (!ok)
	{
		snprintf(err, errlen, "the primary's verdicts for the forwarded charges are malformed");
		*sqlerrcode = ERRCODE_PROTOCOL_VIOLATION;
		DpForwardDisconnect();
	}
	return ok;
}

/* Forward refusals to the primary's log (see ledger.h). */
static bool
DpForwardRefusals(int n, const TimestampTz *at, const Oid *session_user,
				  const Oid *current_user, const Oid *database,
				  const int *sqlerrcode, const char *const *rule,
				  const char *const *query, int64 missed,
				  char *err, size_t errlen)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), dp_charge_timeout_ms * 4 / 5);
	StringInfoData p[8];
	const char *params[8];
	PGresult   *res;
	int			code;

	if (!DpForwardConnect(deadline, &code, err, errlen))
		return false;
	for (int i = 0; i < 7; i++)
	{
		initStringInfo(&p[i]);
		appendStringInfoChar(&p[i], '{');
	}
	for (int r = 0; r < n; r++)
	{
		const char *sep = r > 0 ? "," : "";

		appendStringInfo(&p[0], "%s\"%s\"", sep, timestamptz_to_str(at[r]));
		appendStringInfo(&p[1], "%s%u", sep, session_user[r]);
		appendStringInfo(&p[2], "%s%u", sep, current_user[r]);
		appendStringInfo(&p[3], "%s%u", sep, database[r]);
		appendStringInfo(&p[4], "%s%s", sep, unpack_sql_state(sqlerrcode[r]));
		appendStringInfoString(&p[5], sep);
		DpAppendQuoted(&p[5], rule[r]);
		appendStringInfoString(&p[6], sep);
		DpAppendQuoted(&p[6], query[r]);
	}
	for (int i = 0; i < 7; i++)
	{
		appendStringInfoChar(&p[i], '}');
		params[i] = p[i].data;
	}
	initStringInfo(&p[7]);
	appendStringInfo(&p[7], INT64_FORMAT, missed);
	params[7] = p[7].data;
	res = DpForwardExec("SELECT dp_pg.forward_refusals($1::pg_catalog.timestamptz[], $2::pg_catalog.oid[], "
						"$3::pg_catalog.oid[], $4::pg_catalog.oid[], $5::pg_catalog.text[], $6::pg_catalog.text[], "
						"$7::pg_catalog.text[], $8::pg_catalog.int8)",
						8, params, deadline, &code, err, errlen);
	for (int i = 0; i < 8; i++)
		pfree(p[i].data);
	if (res == NULL)
	{
		DpForwardDisconnect();
		return false;
	}
	PQclear(res);
	return true;
}

/* ERROR 42501 unless the caller may forward (superuser or REPLICATION). */
static void
DpCheckForwarder(void)
{
	if (!superuser() && !has_rolreplication(GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser or a role with the REPLICATION attribute may forward dp_pg charges"),
				 errdetail("A hot standby's ledger worker calls this function on its primary."),
				 errhint("Nothing was charged.")));
}

/* Elements of a one-dimensional array argument, without NULLs; ERROR otherwise. */
static int
DpArgArray(FunctionCallInfo fcinfo, int arg, Oid type, Datum **elems)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(arg);
	bool	   *nulls;
	int			n;
	int16		len;
	bool		byval;
	char		align;

	if (ARR_ELEMTYPE(a) != type || ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("malformed forwarded batch: argument %d", arg + 1)));
	get_typlenbyvalalign(type, &len, &byval, &align);
	deconstruct_array(a, type, len, byval, align, elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("malformed forwarded batch: a NULL in argument %d", arg + 1)));
	return n;
}

/* An array of n values of a by-value type, as a Datum. */
static Datum
DpArrayOf(Datum *values, int n, Oid type)
{
	int16		len;
	bool		byval;
	char		align;

	get_typlenbyvalalign(type, &len, &byval, &align);
	return PointerGetDatum(construct_array(values, n, type, len, byval, align));
}

/*
 * dp_pg.forward_charges(requested_by oid[], nroles int4[], roles oid[],
 *   epsilon float8[], delta float8[], rho float8[], rdp float8[],
 *   query text[], detail text[], rdp_delta float8[], ntables int4[],
 *   tables uuid[]) RETURNS TABLE (ord, verdict, ..., refused_table,
 *   warn_table): the primary's side of a forwarded batch (roles, rdp and
 *   tables flattened).  The 0.1.0 catalog's form has the first nine
 *   arguments and thirteen result columns: no table budgets.
 */
Datum
dp_forward_charges(PG_FUNCTION_ARGS)
{
	Datum	   *by,
			   *nr,
			   *ro,
			   *eps,
			   *del,
			   *rho,
			   *rdp,
			   *qry,
			   *det;
	Datum	   *rdel = NULL,
			   *nt = NULL,
			   *tb = NULL;
	int			n,
				nroles_total,
				ntables_total = 0,
				pos = 0,
				tpos = 0;
	bool		v2 = PG_NARGS() >= 12;
	DpChargeRequest *reqs;
	DpChargeVerdict *out;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	DpCheckForwarder();
	n = DpArgArray(fcinfo, 0, OIDOID, &by);
	if (n < 1 || n > DP_FORWARD_MAX ||
		DpArgArray(fcinfo, 1, INT4OID, &nr) != n ||
		DpArgArray(fcinfo, 3, FLOAT8OID, &eps) != n ||
		DpArgArray(fcinfo, 4, FLOAT8OID, &del) != n ||
		DpArgArray(fcinfo, 5, FLOAT8OID, &rho) != n ||
		DpArgArray(fcinfo, 6, FLOAT8OID, &rdp) != n * DP_RDP_NALPHAS ||
		DpArgArray(fcinfo, 7, TEXTOID, &qry) != n ||
		DpArgArray(fcinfo, 8, TEXTOID, &det) != n ||
		(v2 && (DpArgArray(fcinfo, 9, FLOAT8OID, &rdel) != n || DpArgArray(fcinfo, 10, INT4OID, &nt) != n)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("malformed forwarded batch: 1 to %d charges, every array of the same length", DP_FORWARD_MAX)));
	nroles_total = DpArgArray(fcinfo, 2, OIDOID, &ro);
	if (v2)
		ntables_total = DpArgArray(fcinfo, 11, UUIDOID, &tb);
	reqs = palloc0(sizeof(DpChargeRequest) * n);
	out = palloc0(sizeof(DpChargeVerdict) * n);
	for (int r = 0; r < n; r++)
	{
		int			k = DatumGetInt32(nr[r]);

		if (k < 1 || k > DP_MAX_CHARGE_ROLES || pos + k > nroles_total)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("malformed forwarded batch: charge %d names %d roles", r + 1, k)));
		reqs[r].requested_by = DatumGetObjectId(by[r]);
		reqs[r].nroles = k;
		for (int i = 0; i < k; i++)
			reqs[r].roles[i] = DatumGetObjectId(ro[pos++]);
		reqs[r].cost.epsilon = DatumGetFloat8(eps[r]);
		reqs[r].cost.delta = DatumGetFloat8(del[r]);
		reqs[r].cost.rho = DatumGetFloat8(rho[r]);
		for (int a = 0; a < DP_RDP_NALPHAS; a++)
			reqs[r].cost.rdp[a] = DatumGetFloat8(rdp[r * DP_RDP_NALPHAS + a]);
		reqs[r].query = TextDatumGetCString(qry[r]);
		reqs[r].detail = TextDatumGetCString(det[r]);
		if (v2)
		{
			int			t = DatumGetInt32(nt[r]);

			reqs[r].cost.rdp_delta = DatumGetFloat8(rdel[r]);
			reqs[r].cost.rdp_mark = reqs[r].cost.rdp_delta;
			if (t < 0 || t > DP_MAX_CHARGE_TABLES || tpos + t > ntables_total)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("malformed forwarded batch: charge %d names %d table budgets", r + 1, t)));
			reqs[r].ntables = t;
			for (int i = 0; i < t; i++)
				reqs[r].tables[i] = *DatumGetUUIDP(tb[tpos++]);
		}
	}
	if (pos != nroles_total || tpos != ntables_total)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("malformed forwarded batch: %d roles for %d", nroles_total, pos)));

	DpLedgerChargeMany(n, reqs, out);

	InitMaterializedSRF(fcinfo, 0);
	for (int r = 0; r < n; r++)
	{
		Datum		values[15];
		bool		nulls[15] = {0};
		Datum		w[5][DP_FORWARD_WARNINGS];
		DpChargeVerdict *v = &out[r];

		values[0] = Int32GetDatum(r + 1);
		values[1] = Int32GetDatum(v->verdict);
		values[2] = ObjectIdGetDatum(v->refused_role);
		values[3] = Int32GetDatum(v->refusal);
		values[4] = Float8GetDatum(v->spent);
		values[5] = Float8GetDatum(v->limit);
		values[6] = Float8GetDatum(v->requested);
		values[7] = CStringGetTextDatum(v->verdict == 3 ? unpack_sql_state(v->sqlerrcode) : "00000");
		values[8] = CStringGetTextDatum(v->errmsg);
		for (int k = 0; k < v->nwarn; k++)
		{
			w[0][k] = ObjectIdGetDatum(v->warn_role[k]);
			w[1][k] = Int32GetDatum(v->warn_what[k]);
			w[2][k] = Float8GetDatum(v->warn_spent[k]);
			w[3][k] = Float8GetDatum(v->warn_limit[k]);
			w[4][k] = Int32GetDatum(v->warn_table[k]);
		}
		values[9] = DpArrayOf(w[0], v->nwarn, OIDOID);
		values[10] = DpArrayOf(w[1], v->nwarn, INT4OID);
		values[11] = DpArrayOf(w[2], v->nwarn, FLOAT8OID);
		values[12] = DpArrayOf(w[3], v->nwarn, FLOAT8OID);
		values[13] = Int32GetDatum(v->refused_table);
		values[14] = DpArrayOf(w[4], v->nwarn, INT4OID);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * dp_pg.forward_refusals(refused_at timestamptz[], session_user oid[],
 *   current_user oid[], database oid[], sqlstate text[], rule text[],
 *   query text[], missed int8): a standby's refusals into this server's log.
 */
Datum
dp_forward_refusals(PG_FUNCTION_ARGS)
{
	Datum	   *at,
			   *su,
			   *cu,
			   *db,
			   *st,
			   *ru,
			   *qy;
	int			n;
	int64		missed = PG_GETARG_INT64(7);

	DpCheckForwarder();
	n = DpArgArray(fcinfo, 0, TIMESTAMPTZOID, &at);
	if (DpArgArray(fcinfo, 1, OIDOID, &su) != n ||
		DpArgArray(fcinfo, 2, OIDOID, &cu) != n ||
		DpArgArray(fcinfo, 3, OIDOID, &db) != n ||
		DpArgArray(fcinfo, 4, TEXTOID, &st) != n ||
		DpArgArray(fcinfo, 5, TEXTOID, &ru) != n ||
		DpArgArray(fcinfo, 6, TEXTOID, &qy) != n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("malformed forwarded refusals: every array of the same length")));
	for (int r = 0; r < n; r++)
	{
		char	   *state = TextDatumGetCString(st[r]);

		if (strlen(state) != 5)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("malformed forwarded refusals: SQLSTATE \"%s\"", state)));
		DpLedgerNoteRefusalFrom(DatumGetTimestampTz(at[r]), DatumGetObjectId(su[r]),
								DatumGetObjectId(cu[r]), DatumGetObjectId(db[r]),
								MAKE_SQLSTATE(state[0], state[1], state[2], state[3], state[4]),
								TextDatumGetCString(ru[r]), TextDatumGetCString(qy[r]));
	}
	if (missed > 0)
		DpLedgerNoteRefusalsMissed(missed);
	PG_RETURN_VOID();
}
