/*
 * guard/session.c — who the session is: superuser, analyst, or neither.
 *
 * An analyst is a session whose queries are charged to a budget: the session
 * user, the outer (SET ROLE) user or the current user is (a member of) a
 * budgeted role (ledger/shared.c, DpLedgerChargedRolesNoWait).  The answer is asked
 * on hot paths (every function a plan initialises, every fmgr call of an
 * untrusted function), so it is cached per backend and recomputed only when
 * one of its inputs changes: the three user ids, the ledger's budget
 * generation (any set_budget / drop_budget, the worker becoming ready), or
 * the role catalogs (membership, superuser flag).  While the ledger cannot
 * tell, every session but a superuser's counts as an analyst (fail closed).
 *
 * Each change of the answer starts a new *epoch* and resets the backend's
 * plan cache: a plan is only ever run in the epoch it was planned in (the
 * guard stamps plans with their epoch, reads.c), so no plan made before a
 * role got (or lost) its budget reads a protected table afterwards.
 *
 * The message floor: no message below NOTICE (DEBUG and LOG lines —
 * debug_print_plan, trace_sort, auto_explain, a utility statement's debug
 * output) reaches an analyst's client.  PostgreSQL sends a message to the
 * client by client_min_messages alone (emit_log_hook sees only what goes to
 * the server log), so the floor is kept on the setting itself: a check hook
 * on client_min_messages raises every value below NOTICE to NOTICE in an
 * analyst's session, whichever way it arrives — SET, SET LOCAL, set_config(),
 * PGOPTIONS, ALTER ROLE / DATABASE ... SET, a function's SET clause — and
 * every statement an analyst plans, runs or sends as a utility command
 * raises it again first (for a session that became an analyst's after it
 * lowered the setting: SET ROLE, a new budget).  INFO, which PostgreSQL
 * always sends, comes from VACUUM, ANALYZE, CLUSTER and REINDEX VERBOSE,
 * which analysts may not run on protected tables (ddl.c), and from RAISE INFO
 * in trusted code.
 *
 * The roles an analyst can act as (DpAnalystReachableRoles): the analysts
 * and every role one of them is a member of.  A public table joined to a
 * protected one (shape.c) and a view's owner (views.c) must be none of them.
 *
 * Layer guard/, floor base (docs/development.md): may call the other files of
 * the floor base, the aggregates, the release path, the ledger, common/ and
 * the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/inval.h"
#include "utils/plancache.h"
#include "utils/syscache.h"

#include "guard/floor_base.h"
#include "ledger.h"

static bool cache_valid = false;
static Oid	cache_users[3];
static uint64 cache_budget_gen;
static uint64 cache_auth_gen;
static bool cache_answer;
static uint64 auth_generation = 1;
static uint32 epoch = 1;

/* Syscache callback: role flags or memberships changed. */
static void
DpSessionAuthCallback(Datum arg, int cacheid, uint32 hashvalue)
{
	auth_generation++;
}

/* True in a session whose session user is a superuser running as a superuser. */
bool
DpSessionIsSuperuser(void)
{
	Oid			session = GetSessionUserId();

	return !OidIsValid(session) || (superuser() && superuser_arg(session));
}

/* True if queries run now are charged (or the ledger cannot tell); see the file comment. */
bool
DpSessionIsAnalyst(void)
{
	Oid			users[3];
	uint64		gen;
	bool		answer;
	Oid			roles[DP_MAX_CHARGE_ROLES];
	bool		known;

	users[0] = GetSessionUserId();
	users[1] = GetOuterUserId();
	users[2] = GetUserId();
	if (!OidIsValid(users[0]))
		return false;			/* no session: a background process */
	gen = DpLedgerBudgetGeneration();
	if (cache_valid && memcmp(users, cache_users, sizeof(users)) == 0 &&
		gen == cache_budget_gen && auth_generation == cache_auth_gen)
		return cache_answer;
	if (!IsTransactionState())
		return cache_valid ? cache_answer : true;	/* no catalog access: keep the last answer */

	if (DpSessionIsSuperuser())
		answer = false;
	else
		answer = DpLedgerChargedRolesNoWait(roles, &known) > 0 || !known;

	if (cache_valid && answer != cache_answer)
	{
		epoch++;
		ResetPlanCache();
	}
	memcpy(cache_users, users, sizeof(users));
	cache_budget_gen = gen;
	cache_auth_gen = auth_generation;
	cache_answer = answer;
	cache_valid = true;
	return answer;
}

/* A number that changes whenever DpSessionIsAnalyst() changes its answer. */
uint32
DpSessionEpoch(void)
{
	(void) DpSessionIsAnalyst();
	return epoch;
}

/*
 * Messages below NOTICE never reach an analyst's client (the file comment):
 * raised again at the start of every statement an analyst plans, runs or
 * sends as a utility command.
 */
void
DpSessionMessageFloor(void)
{
	if (client_min_messages < NOTICE && DpSessionIsAnalyst())
		SetConfigOption("client_min_messages", "notice", PGC_USERSET, PGC_S_SESSION);
}

/* The check hook client_min_messages had before ours (none in PostgreSQL). */
static GucEnumCheckHook prev_client_min_messages_check = NULL;

/*
 * Does the floor apply to a value of client_min_messages from source?  In a
 * transaction: if the session is an analyst's.  Outside one (a
 * configuration file reloaded) the last answer for these users; a session
 * whose answer is not known yet keeps a value from the server's
 * configuration (its next statement raises the floor if it must) and has a
 * value of its own raised (fail closed).
 */
static bool
DpSessionFloorApplies(GucSource source)
{
	Oid			users[3];

	if (!OidIsValid(GetSessionUserId()))
		return false;			/* the postmaster, a background process */
	if (IsTransactionState())
		return DpSessionIsAnalyst();
	users[0] = GetSessionUserId();
	users[1] = GetOuterUserId();
	users[2] = GetUserId();
	if (cache_valid && memcmp(users, cache_users, sizeof(users)) == 0)
		return cache_answer;
	return source > PGC_S_ARGV;
}

/* Check hook of client_min_messages: below NOTICE is NOTICE in an analyst's session. */
static bool
DpClientMinMessagesCheck(int *newval, void **extra, GucSource source)
{
	if (prev_client_min_messages_check && !prev_client_min_messages_check(newval, extra, source))
		return false;
	if (*newval < NOTICE && DpSessionFloorApplies(source))
		*newval = NOTICE;
	return true;
}

/* Put the floor's check hook on client_min_messages (a core setting). */
static void
DpSessionInstallMessageFloor(void)
{
	struct config_generic *gen = NULL;

#if PG_VERSION_NUM >= 160000
	gen = find_option("client_min_messages", false, false, ERROR);
#else
	struct config_generic **vars = get_guc_variables();
	int			n = GetNumConfigOptions();

	for (int i = 0; i < n && gen == NULL; i++)
		if (strcmp(vars[i]->name, "client_min_messages") == 0)
			gen = vars[i];
#endif
	if (gen == NULL || gen->vartype != PGC_ENUM)
		elog(ERROR, "dp_pg: setting client_min_messages not found");
	prev_client_min_messages_check = ((struct config_enum *) gen)->check_hook;
	((struct config_enum *) gen)->check_hook = DpClientMinMessagesCheck;
}

/* Register the cache invalidation callbacks and the message floor. */
void
DpSessionInit(void)
{
	CacheRegisterSyscacheCallback(AUTHOID, DpSessionAuthCallback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMMEMROLE, DpSessionAuthCallback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, DpSessionAuthCallback, (Datum) 0);
	DpSessionInstallMessageFloor();
}

/*
 * The roles whose rights an analyst can use: the analysts (budgeted roles and
 * their members) and every role one of them is a member of, with or without
 * INHERIT (SET ROLE reaches it).  Superusers are left out: an analyst that
 * can become one is not guarded by anything.  Waits for the ledger (ERROR
 * when it is not ready: fail closed).
 */
List *
DpAnalystReachableRoles(void)
{
	DpBudgetRow *rows;
	int			n = DpLedgerBudgetRows(&rows);
	List	   *roles = NIL;
	List	   *analysts = NIL;
	List	   *result = NIL;
	Relation	authid;
	SysScanDesc scan;
	HeapTuple	tup;
	ListCell   *lc;

	if (n == 0)
		return NIL;
	authid = table_open(AuthIdRelationId, AccessShareLock);
	scan = systable_beginscan(authid, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_authid role = (Form_pg_authid) GETSTRUCT(tup);

		if (!role->rolsuper)
			roles = lappend_oid(roles, role->oid);
	}
	systable_endscan(scan);
	table_close(authid, AccessShareLock);

	foreach(lc, roles)
		for (int i = 0; i < n; i++)
			if (is_member_of_role_nosuper(lfirst_oid(lc), rows[i].role))
			{
				analysts = lappend_oid(analysts, lfirst_oid(lc));
				break;
			}
	foreach(lc, roles)
	{
		ListCell   *a;

		foreach(a, analysts)
			if (is_member_of_role_nosuper(lfirst_oid(a), lfirst_oid(lc)))
			{
				result = lappend_oid(result, lfirst_oid(lc));
				break;
			}
	}
	return result;
}
