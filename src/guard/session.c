/*
 * guard/session.c — who the session is: superuser, analyst, or neither.
 *
 * An analyst is a session whose queries are charged to a budget: the session
 * user, the outer (SET ROLE) user or the current user is (a member of) a
 * budgeted role (ledger.c, DpLedgerChargedRolesNoWait).  The answer is asked
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
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/plancache.h"
#include "utils/syscache.h"

#include "guard/guard.h"
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
 * Messages below NOTICE (LOG, DEBUG: debug_print_plan, trace_sort, auto_explain
 * and the like) never reach an analyst's client: raised again at the start of
 * every statement an analyst plans or runs.
 */
void
DpSessionMessageFloor(void)
{
	if (client_min_messages < NOTICE && DpSessionIsAnalyst())
		SetConfigOption("client_min_messages", "notice", PGC_USERSET, PGC_S_SESSION);
}

/* Register the cache invalidation callbacks. */
void
DpSessionInit(void)
{
	CacheRegisterSyscacheCallback(AUTHOID, DpSessionAuthCallback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMMEMROLE, DpSessionAuthCallback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, DpSessionAuthCallback, (Datum) 0);
}
