/*
 * guard/refuse.c — the guard's refusals: ERROR 42501 naming the rule a query
 * broke (noted first for the durable log dp_pg.guard_refusals), and the one
 * budget every query's row expressions share, DP_MAX_ROW_STEPS steps.
 *
 * Every file of the guard refuses through here, so a refusal always has the
 * same SQLSTATE, the same "dp_pg: <rule>" message and a ledger note, and
 * never depends on a protected row: the guard refuses while planning, from
 * the query's text, its catalogs and the declarations alone.
 *
 * Layer guard/, floor base (docs/development.md): calls nothing else of
 * guard/; may call the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "guard/floor_base.h"
#include "ledger.h"

/* ERROR 42501 naming the rule a query broke (its detail says why, or what to write). */
void
DpGuardRefuse(const char *rule, const char *detail)
{
	DpGuardRefuseHint(rule, detail, NULL);
}

/* ERROR 42501 naming the rule a query broke, with a short hint saying what to write instead. */
void
DpGuardRefuseHint(const char *rule, const char *detail, const char *hint)
{
	DpLedgerNoteRefusal(rule, ERRCODE_INSUFFICIENT_PRIVILEGE);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("dp_pg: %s", rule),
			 errdetail("%s", detail),
			 hint != NULL ? errhint("%s", hint) : 0));
}

/*
 * The steps of the row expressions of the query being planned: at most
 * DP_MAX_ROW_STEPS.  Every accepted step takes bounded time on any value
 * (total.c bounds the digits of numerics), so a row that reaches a CASE
 * branch adds at most that many bounded steps to the query's time: not
 * enough to be seen, however the branch was written.
 */
#define DP_MAX_ROW_STEPS 10000
static int	row_steps = 0;

/* See guard.h. */
void
DpRowStepsReset(void)
{
	row_steps = 0;
}

/* See guard.h. */
void
DpRowStep(const char *where)
{
	if (++row_steps > DP_MAX_ROW_STEPS)
		DpGuardRefuse(psprintf("the row expressions of a query on a protected table have at most %d steps",
							   DP_MAX_ROW_STEPS),
					  psprintf("This query has more (in %s); their time on one row could be seen in the query's.",
							   where));
}
