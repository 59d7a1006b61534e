/*
 * agg_count.c — dp_count(*) and dp_count(expr, mechanism).
 *
 * The transition state is a plain int8 count (pass by value), so dp_count(*)
 * runs PostgreSQL's own int8inc / int8pl as transition and combine functions
 * and costs what count(*) costs; only the final function differs.  The
 * count's sensitivity is 1 (one row is one person until a protected table
 * says otherwise).
 *
 * Layer aggregates/ (docs/development.md): may call the release path
 * (call sites, cache), the ledger, common/ and the numeric core.
 */
#include "postgres.h"

#include <ctype.h>

#include "common/int.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "tcop/tcopprot.h"

#include "aggregates.h"

PG_FUNCTION_INFO_V1(dp_count_trans);
PG_FUNCTION_INFO_V1(dp_count_star_final);
PG_FUNCTION_INFO_V1(dp_count_final);

/* Plan a count's noise: L1 = L2 = 1 row, integer output. */
static void
DpCountPlan(DpCallSite *site, Datum *values, bool *isnull)
{
	char		err[256];

	if (!dp_noise_plan(&site->plan, &site->mech, 1.0, 1.0, 0, err, sizeof(err)))
		DpReportMechanismError(err);
}

const DpAggKind dp_count_star_kind = {
	.name = "dp_count",
	.finalfn = dp_count_star_final,
	.nargs = 0,
	.mech_argno = -1,
	.plan = DpCountPlan,
};

const DpAggKind dp_count_kind = {
	.name = "dp_count",
	.finalfn = dp_count_final,
	.nargs = 2,
	.mech_argno = 1,
	.groupwise = true,
	.accuracy = true,
	.plan = DpCountPlan,
};

/* Transition of dp_count(expr, mech): strict, so NULL expr rows are skipped. */
Datum
dp_count_trans(PG_FUNCTION_ARGS)
{
	int64		count = PG_GETARG_INT64(0);

	if (unlikely(pg_add_s64_overflow(count, 1, &count)))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	PG_RETURN_INT64(count);
}

/* An exact count released with the call site's noise (groupwise's two steps, with its own interval). */
static int64
DpNoisyCount(FunctionCallInfo fcinfo, DpCallSite *site)
{
	int64		count = PG_ARGISNULL(0) ? 0 : PG_GETARG_INT64(0);
	bool		overflow;
	int64		result = dp_noise_release(&site->plan, count, DpBackendRng(), &overflow);

	if (overflow)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	DpBarsNoteGroupwise(site, result);
	return result;
}

/* Final function of dp_count(*): default mechanism. */
Datum
dp_count_star_final(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(DpNoisyCount(fcinfo, DpCallSiteForFinal(fcinfo, &dp_count_star_kind)));
}

/* Final function of dp_count(expr, mech): mechanism is the second argument. */
Datum
dp_count_final(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(DpNoisyCount(fcinfo, DpCallSiteForFinal(fcinfo, &dp_count_kind)));
}

/*
 * dp_count(*, mechanism) is not SQL (an aggregate's * stands alone), so the
 * parser stops at its comma with a bare syntax error: give that error a hint
 * saying what to write (the statement's own text, nothing else, is read).
 */
void
DpCountSyntaxHint(ErrorData *edata)
{
	const char *q = debug_query_string;
	int			off;
	int			i;

	if (edata->elevel != ERROR || edata->sqlerrcode != ERRCODE_SYNTAX_ERROR || edata->hint != NULL ||
		edata->cursorpos <= 1 || q == NULL)
		return;
	/* cursorpos counts characters from 1: the byte of the token the parser stopped at */
	off = pg_mbcharcliplen(q, strlen(q), edata->cursorpos - 1);
	if (q[off] != ',')
		return;
	i = off - 1;
	while (i >= 0 && isspace((unsigned char) q[i]))
		i--;
	if (i < 0 || q[i] != '*')
		return;
	i--;
	while (i >= 0 && isspace((unsigned char) q[i]))
		i--;
	if (i < 0 || q[i] != '(')
		return;
	i--;
	while (i >= 0 && isspace((unsigned char) q[i]))
		i--;
	/* "dp_count" (or "public".dp_count ...), not a longer name ending in it */
	if (i < 7 || pg_strncasecmp(q + i - 7, "dp_count", 8) != 0 ||
		(i >= 8 && (isalnum((unsigned char) q[i - 8]) || q[i - 8] == '_')))
		return;
	edata->hint = pstrdup("dp_count(*) takes no mechanism: count rows with dp_count(1, '<mechanism>'), "
						  "or set dp_pg.default_mechanism, which dp_count(*) uses.");
}
