/*
 * bars.c — the error bars of releases: what each call site's noise means
 * for its answers (standard deviation, a closed 95% interval, an average's
 * or a quantile's own interval and what the interval leaves out), and the
 * session's last release with them (dp_pg.last_releases, also for answers
 * served from the cache: their entry keeps them), and the bars a query would
 * have (dp_pg.error_bars).  All of it is public: the mechanism's parameters,
 * never the data.
 *
 * The session's last release is shown only to the session user and current
 * user that asked it, until DISCARD ALL (a pooler's reset between clients).
 *
 * Layer release/ (docs/development.md): may call the call sites (callsite.c,
 * DpEstimateQueryBars), the catalogue, common/ and the numeric core; the
 * answer cache calls it.
 */
#include "postgres.h"

#include <math.h>

#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "release.h"

PG_FUNCTION_INFO_V1(dp_last_releases);
PG_FUNCTION_INFO_V1(dp_error_bars);
PG_FUNCTION_INFO_V1(dp_release_keys);
PG_FUNCTION_INFO_V1(dp_release_order);

static void DpPutBars(ReturnSetInfo *rsinfo, const DpSiteBar *bars, int n, bool session, bool cached,
					  TimestampTz at, const DpValueBar *vals, int nvals);

/*
 * The session's last release (TopMemoryContext), and who asked it: shown
 * only to the same session user and current user, so that a connection
 * shared through a pooler by roles that switch with SET ROLE (PostgREST and
 * the like) never shows one role's releases to another; DISCARD ALL (a
 * pooler's reset between clients) forgets it.
 */
static DpSiteBar *last_bars = NULL;
static int	last_nbars = 0;
static bool last_cached = false;
static TimestampTz last_at = 0;
static uint64 last_release = 0;		/* counts the session's releases */
static QueryDesc *last_query = NULL;	/* the query that made it (compared only while it runs) */

/* Its released values with their own intervals (dp_avg), at most DP_MAX_VALUE_BARS. */
static DpValueBar *last_values = NULL;
static int	last_nvalues = 0;
static int	last_values_cap = 0;
static bool last_values_dropped = false;
static int	last_keyed = 0;			/* values before this one have their keys */
static int	last_rank = 0;			/* the next place in the output */
static Oid	last_session_user = InvalidOid;
static Oid	last_user = InvalidOid;

/* See release.h. */
DpSiteBar *
DpBarsOfSites(List *sites, int *n)
{
	DpSiteBar  *bars = palloc0(sizeof(DpSiteBar) * Max(list_length(sites), 1));
	ListCell   *lc;
	bool		selection = false;

	/*
	 * Partition selection decides after the final functions which groups are
	 * released: a value per group would count the groups it dropped.
	 */
	foreach(lc, sites)
		if (((DpCallSite *) lfirst(lc))->kind->selects_groups)
			selection = true;
	*n = 0;
	foreach(lc, sites)
	{
		DpCallSite *s = lfirst(lc);
		DpSiteBar  *b;
		size_t		len;

		if (s->duplicate)
			continue;
		s->bar_index = *n;
		b = &bars[(*n)++];
		strlcpy(b->aggregate, s->kind->name, sizeof(b->aggregate));
		dp_mechanism_format(&s->mech, b->mechanism, sizeof(b->mechanism));
		b->sd = sqrt(s->plan.variance);
		b->h95 = dp_noise_plan_halfwidth(&s->plan, 0.95);
		b->epsilon = s->cost.epsilon;
		b->delta = s->cost.delta;
		b->rho = s->cost.rho;
		b->rank_h95 = NAN;
		if (s->kind->bar != NULL)
			s->kind->bar(s, b);
		if (s->plan.groupwise)
		{
			/* the second step's noise depends on the value: an interval per value */
			b->sd = NAN;
			b->h95 = NAN;
			b->per_value = true;
			snprintf(b->note, sizeof(b->note),
					 "Per value: groupwise relative error (seed 001, Algorithm 1): X = x + N_Z(0, %.6g), then "
					 "y = X + N_Z(0, (%.6g X)^2).  [ci95_lower, ci95_upper] holds x with probability 0.95 or more: "
					 "y +- (h1 + s r |y| / (1 - s r)), h1 the first step's 97.5%% half-width, s = sqrt(2 ln 80)%s.  "
					 "noise_sd is about sqrt(sigma1^2 + r^2 (y^2 + sigma1^2)).  Larger groups have a smaller "
					 "per-group divergence than rho: dp_pg.groupwise_rho(mechanism, group_size).",
					 s->plan.variance, s->plan.gw.r,
					 2.960303 * s->plan.gw.r >= 1.0 ? " (none here: r is too large, s r >= 1)" : "");
		}
		len = strlen(b->note);
		if (b->per_value && selection && len < sizeof(b->note))
		{
			b->per_value = false;
			snprintf(b->note + len, sizeof(b->note) - len,
					 " Partition selection chose the groups: their intervals are not listed (the formula gives them).");
		}
		if (b->note[0] == '\0')
			strlcpy(b->note, "[answer - h, answer + h] (closed, h = ci95_halfwidth) holds the true value with "
					"probability 0.95 or more: the noise alone.", sizeof(b->note));
		len = strlen(b->note);
		if (dp_mechanism_is_accuracy(&s->asked) && len < sizeof(b->note))
		{
			char		asked[DP_MECH_TEXT_LEN];

			dp_mechanism_format(&s->asked, asked, sizeof(asked));
			snprintf(b->note + len, sizeof(b->note) - len,
					 " Asked: %s, the cheapest %s meeting it.", asked, dp_mechanism_family_name(s->mech.family));
		}
		/* what unit bounding leaves out is in no interval (bounding bias) */
		len = strlen(b->note);
		if (s->bounded && len < sizeof(b->note))
			snprintf(b->note + len, sizeof(b->note) - len,
					 " %s the rows and groups of each privacy unit beyond max_rows_per_unit and "
					 "max_groups_contributed (dp_pg.protected_tables), left out before the noise: bounding bias.",
					 strstr(b->note, "Not in it") != NULL ? "Nor" : "Not in it:");
	}
	return bars;
}

/* Remember bars (and the values with their own intervals) as the session's last release. */
static void
DpBarsSetLast(const DpSiteBar *bars, int n, bool cached, const DpValueBar *values, int nvalues)
{
	if (last_bars != NULL)
		pfree(last_bars);
	last_bars = MemoryContextAlloc(TopMemoryContext, sizeof(DpSiteBar) * Max(n, 1));
	if (n > 0)
		memcpy(last_bars, bars, sizeof(DpSiteBar) * n);
	last_nbars = n;
	last_cached = cached;
	last_at = GetCurrentTimestamp();
	last_session_user = GetSessionUserId();
	last_user = GetUserId();
	last_release++;
	last_query = NULL;
	last_nvalues = 0;
	last_keyed = 0;
	last_rank = 0;
	last_values_dropped = false;
	if (nvalues > 0)
	{
		if (last_values != NULL)
			pfree(last_values);
		last_values = MemoryContextAlloc(TopMemoryContext, sizeof(DpValueBar) * nvalues);
		last_values_cap = nvalues;
		memcpy(last_values, values, sizeof(DpValueBar) * nvalues);
		last_nvalues = nvalues;
		last_keyed = nvalues;
	}
}

/* See release.h. */
void
DpBarsNoteValue(const DpCallSite *site, double value, double sd, double lower, double upper)
{
	DpValueBar *v;

	/*
	 * only values of the session's last release (not of a query that ran
	 * inside it), of a site whose every value is released
	 */
	if (site->session_release != last_release || site->bar_index < 0 || site->bar_index >= last_nbars ||
		!last_bars[site->bar_index].per_value)
		return;
	if (last_nvalues >= DP_MAX_VALUE_BARS)
	{
		last_values_dropped = true;
		return;
	}
	if (last_nvalues == last_values_cap)
	{
		int			cap = last_values_cap == 0 ? 16 : 2 * last_values_cap;

		last_values = last_values == NULL
			? MemoryContextAlloc(TopMemoryContext, sizeof(DpValueBar) * cap)
			: repalloc(last_values, sizeof(DpValueBar) * cap);
		last_values_cap = cap;
	}
	v = &last_values[last_nvalues++];
	memset(v, 0, sizeof(DpValueBar));
	v->bar = site->bar_index;
	v->value = value;
	v->sd = sd;
	v->lower = lower;
	v->upper = upper;
	v->rank = -1;
}

/* See release.h. */
void
DpBarsNoteKeys(const char *keys)
{
	for (; last_keyed < last_nvalues; last_keyed++)
	{
		DpValueBar *v = &last_values[last_keyed];

		v->keyed = strlen(keys) < sizeof(v->keys);
		if (v->keyed)
			strlcpy(v->keys, keys, sizeof(v->keys));
	}
}

/* See release.h. */
void
DpBarsNoteOrder(const char *keys)
{
	for (int i = 0; i < last_nvalues; i++)
	{
		DpValueBar *v = &last_values[i];

		/* the first time the output shows the group (a rescan shows it again) */
		if (v->keyed && v->rank < 0 && strcmp(v->keys, keys) == 0)
			v->rank = last_rank;
	}
	last_rank++;
}

/*
 * The text[] text form of the variadic "any" arguments of fcinfo from
 * argument first on: {"<element>",...}, each element its output function's
 * text in double quotes (backslash before " and \\), NULL for NULL —
 * what array_in reads back.
 */
static char *
DpKeysText(FunctionCallInfo fcinfo, int first)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = first; i < PG_NARGS(); i++)
	{
		Oid			type = get_fn_expr_argtype(fcinfo->flinfo, i);
		Oid			out;
		bool		varlena;

		if (i > first)
			appendStringInfoChar(&buf, ',');
		if (PG_ARGISNULL(i))
		{
			appendStringInfoString(&buf, "NULL");
			continue;
		}
		if (!OidIsValid(type))
			elog(ERROR, "dp_pg: a released key of unknown type");
		getTypeOutputInfo(type, &out, &varlena);
		appendStringInfoChar(&buf, '"');
		for (const char *c = OidOutputFunctionCall(out, PG_GETARG_DATUM(i)); *c; c++)
		{
			if (*c == '"' || *c == '\\')
				appendStringInfoChar(&buf, '\\');
			appendStringInfoChar(&buf, *c);
		}
		appendStringInfoChar(&buf, '"');
	}
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/*
 * dp_pg.release_keys(VARIADIC "any"): true.  The guard writes it into a
 * DP level's projection, where it runs for each released group right after
 * that group's final functions: the values they noted get these keys (the
 * group's canonical keys, released with it).
 */
Datum
dp_release_keys(PG_FUNCTION_ARGS)
{
	if (last_keyed < last_nvalues)
		DpBarsNoteKeys(DpKeysText(fcinfo, 0));
	PG_RETURN_BOOL(true);
}

/*
 * dp_pg.release_order(VARIADIC "any"): true.  The guard writes it around
 * the top level of a query with values of their own (dp_avg), where it runs
 * for each row the query outputs, in their order: the values of the group
 * with these keys come next in dp_pg.last_releases.
 */
Datum
dp_release_order(PG_FUNCTION_ARGS)
{
	if (last_nvalues > 0)
		DpBarsNoteOrder(DpKeysText(fcinfo, 0));
	PG_RETURN_BOOL(true);
}

/* See release.h. */
void
DpBarsNoteGroupwise(const DpCallSite *site, int64 y)
{
	double		unit = ldexp(1.0, site->plan.lattice_exp);
	double		sd,
				lower,
				upper;

	if (!site->plan.groupwise)
		return;
	dp_noise_groupwise_bar(&site->plan, (double) y, 0.95, &sd, &lower, &upper);
	DpBarsNoteValue(site, (double) y * unit, sd * unit, lower * unit, upper * unit);
}

/* See release.h. */
void
DpBarsNoteRelease(QueryDesc *queryDesc, List *sites)
{
	int			n;
	DpSiteBar  *bars = DpBarsOfSites(sites, &n);
	ListCell   *lc;

	DpBarsSetLast(bars, n, false, NULL, 0);
	last_query = queryDesc;
	foreach(lc, sites)
		((DpCallSite *) lfirst(lc))->session_release = last_release;
	pfree(bars);
}

/* See release.h. */
void
DpBarsNoteServed(const DpSiteBar *bars, int n, const DpValueBar *values, int nvalues)
{
	DpBarsSetLast(bars, n, true, values, nvalues);
}

/* See release.h. */
bool
DpBarsLastValues(QueryDesc *queryDesc, const DpValueBar **values, int *n)
{
	if (last_query != queryDesc || last_values_dropped)
		return false;
	*values = last_values;
	*n = last_nvalues;
	return true;
}

/* See release.h. */
void
DpBarsForget(void)
{
	last_nbars = 0;
	last_nvalues = 0;
}

/*
 * dp_pg.last_releases(): the error bars of the session's last dp query, one
 * row per call site (free: public parameters only).
 */
Datum
dp_last_releases(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (last_session_user == GetSessionUserId() && last_user == GetUserId())
		DpPutBars(rsinfo, last_bars, last_nbars, true, last_cached, last_at, last_values, last_nvalues);
	return (Datum) 0;
}

/* A float8 column: NULL for NaN (what does not apply). */
static void
DpPutFloat(Datum *values, bool *nulls, int i, double v)
{
	nulls[i] = isnan(v);
	values[i] = Float8GetDatum(v);
}

/*
 * One row of bar b (site site), with the interval of one released value v
 * or none.  The columns are those the catalog declares: dp_pg.last_releases
 * (session: ..., from_cache, released_at, value, ci95_lower, ci95_upper,
 * ci95_rank_halfwidth, note) or dp_pg.error_bars (..., ci95_rank_halfwidth,
 * note); a catalog still at 0.1.0 has only the columns before these.
 */
static void
DpPutBar(ReturnSetInfo *rsinfo, int site, const DpSiteBar *b, const DpValueBar *v, bool session,
		 bool cached, TimestampTz at)
{
	int			natts = rsinfo->setDesc->natts;
	Datum		values[17];
	bool		nulls[17] = {0};
	int			i = 8;

	values[0] = Int32GetDatum(site);
	values[1] = CStringGetTextDatum(b->aggregate);
	values[2] = CStringGetTextDatum(b->mechanism);
	DpPutFloat(values, nulls, 3, v ? v->sd : b->sd);
	/* a value's interval may not be symmetric: h covers it */
	DpPutFloat(values, nulls, 4, v ? Max(v->value - v->lower, v->upper - v->value) : b->h95);
	values[5] = Float8GetDatum(b->epsilon);
	values[6] = Float8GetDatum(b->delta);
	values[7] = Float8GetDatum(b->rho);
	if (session && natts >= 10)
	{
		values[8] = BoolGetDatum(cached);
		values[9] = TimestampTzGetDatum(at);
		i = 10;
	}
	if (natts >= i + 2)
	{
		if (session)
		{
			DpPutFloat(values, nulls, i++, v ? v->value : NAN);
			DpPutFloat(values, nulls, i++, v ? v->lower : NAN);
			DpPutFloat(values, nulls, i++, v ? v->upper : NAN);
		}
		DpPutFloat(values, nulls, i++, b->rank_h95);
		values[i++] = CStringGetTextDatum(b->note);
	}
	if (session && natts >= i + 1)
	{
		/* the group's keys (a value of its own; NULL: the bar holds for every group) */
		nulls[i] = v == NULL || !v->keyed;
		if (!nulls[i])
			values[i] = OidInputFunctionCall(F_ARRAY_IN, (char *) v->keys, TEXTOID, -1);
		i++;
	}
	Assert(i <= natts && natts <= 17);
	for (; i < natts; i++)
		nulls[i] = true;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * qsort comparator of released values: in the query's output order, then
 * the values whose groups the output did not show (a HAVING or LIMIT above
 * the release) by their keys' text, then as noted.  Never the order the
 * final functions ran in (a hash table's, which groups that were not
 * released could shape).
 */
static int
DpValueOrder(const void *a, const void *b)
{
	const DpValueBar *x = *(const DpValueBar *const *) a;
	const DpValueBar *y = *(const DpValueBar *const *) b;
	int			c;

	if ((x->rank >= 0) != (y->rank >= 0))
		return x->rank >= 0 ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	c = strcmp(x->keys, y->keys);
	if (c != 0)
		return c;
	return x < y ? -1 : (x > y ? 1 : 0);
}

/* The rows of bars: one per site, or per released value of a site with its own intervals. */
static void
DpPutBars(ReturnSetInfo *rsinfo, const DpSiteBar *bars, int n, bool session, bool cached, TimestampTz at,
		  const DpValueBar *vals, int nvals)
{
	const DpValueBar **sorted = palloc(sizeof(DpValueBar *) * Max(nvals, 1));

	for (int k = 0; k < nvals; k++)
		sorted[k] = &vals[k];
	qsort(sorted, nvals, sizeof(DpValueBar *), DpValueOrder);
	for (int i = 0; i < n; i++)
	{
		bool		any = false;

		if (session && bars[i].per_value)
			for (int k = 0; k < nvals; k++)
				if (sorted[k]->bar == i)
				{
					DpPutBar(rsinfo, i + 1, &bars[i], sorted[k], session, cached, at);
					any = true;
				}
		if (!any)
			DpPutBar(rsinfo, i + 1, &bars[i], NULL, session, cached, at);
	}
	pfree(sorted);
}

/*
 * dp_pg.error_bars(query text): the error bars the query's answers would
 * have -- planned, not run, not charged (public parameters only).  A BI tile
 * can show them beside its answer from any connection.
 */
Datum
dp_error_bars(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int			n;
	DpSiteBar  *bars;

	InitMaterializedSRF(fcinfo, 0);
	bars = DpEstimateQueryBars(query, &n);
	DpPutBars(rsinfo, bars, n, false, false, 0, NULL, 0);
	return (Datum) 0;
}
