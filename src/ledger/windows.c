/*
 * windows.c — budget windows: a budget that renews every fixed period.
 *
 * A budget (a role's or a table's) may renew every `every` (an interval)
 * from `from` (a timestamp): its windows are [from + k every, from +
 * (k + 1) every) for every integer k, back to back, computed with
 * PostgreSQL's timestamptz + interval in the time zone of the process that
 * computes them -- the ledger worker, so the server's `timezone` setting:
 * '1 month' from midnight on the first of a month is the calendar month
 * (from + k months, so the 31st stays the 31st where the month has one);
 * '1 day' is a calendar day across daylight-saving changes; '10 seconds' is
 * ten seconds.  Windows are fixed, not rolling: a window's spending counts
 * the charges made in it (since the last reset, dp_pg.reset_budget), and
 * when it ends the next one starts from zero -- nothing carries over, unused
 * budget is not saved and an overspent one cannot happen.  The lifetime
 * totals count every charge.
 *
 * The privacy guarantee is per window: the filter (core/accountant.c) holds
 * the releases of each window within the limits, given everything released
 * before it; over n windows the releases compose, at most n times the
 * limits (basic composition) and usually much less (the lifetime columns
 * show the composed total, as the accountant certifies it).
 *
 * Who computes windows: only the ledger worker (load, each batch at the
 * batch's time, and a periodic roll of the published budgets), so every
 * window a budget has is the worker's.  A batch's time never goes back
 * (worker.c keeps a monotone clock, also across restarts: the last
 * charged_at in the ledger), so the replay of the ledger rows after a
 * restart counts each charge in the window the worker counted it in.
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above; within ledger/ it calls nothing.
 */
#include "postgres.h"

#include <math.h>

#include "common/int.h"
#include "datatype/timestamp.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"

#include "shared.h"

/* The shortest and longest periods: a second (tests), a hundred years. */
#define DP_RENEW_MIN_USECS USECS_PER_SEC
#define DP_RENEW_MAX_MONTHS (100 * MONTHS_PER_YEAR)
/* renew_from within this many years of now */
#define DP_RENEW_FROM_YEARS 100

/* True if r renews (a period is set). */
bool
DpRenewIsSet(const DpRenew *r)
{
	return r->every.month != 0 || r->every.day != 0 || r->every.time != 0;
}

/* True if two renewals are the same windows. */
bool
DpRenewSame(const DpRenew *a, const DpRenew *b)
{
	if (!DpRenewIsSet(a) || !DpRenewIsSet(b))
		return DpRenewIsSet(a) == DpRenewIsSet(b);
	return a->every.month == b->every.month && a->every.day == b->every.day &&
		a->every.time == b->every.time && a->from == b->from;
}

/* The period's approximate length in microseconds (a month 30.436875 days, a day 24 hours). */
static double
DpRenewApproxUsecs(const Interval *every)
{
	return (double) every->time + (double) every->day * USECS_PER_DAY +
		(double) every->month * (365.2425 / 12.0) * USECS_PER_DAY;
}

/* ERROR 22023 unless every (and from, if given) can renew a budget. */
void
DpRenewCheck(const Interval *every, TimestampTz from, bool from_given)
{
	double		usecs = DpRenewApproxUsecs(every);
	char	   *text = DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(every)));

	if (every->month < 0 || every->day < 0 || every->time < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("renew must not have a negative part, got %s", text)));
	if (usecs < DP_RENEW_MIN_USECS || every->month > DP_RENEW_MAX_MONTHS ||
		usecs > (double) DP_RENEW_MAX_MONTHS * 31.0 * USECS_PER_DAY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("renew must be between 1 second and 100 years, got %s", text)));
	if (from_given)
	{
		TimestampTz now = GetCurrentTimestamp();

		if (TIMESTAMP_NOT_FINITE(from) ||
			fabs((double) from - (double) now) > (double) DP_RENEW_FROM_YEARS * DAYS_PER_YEAR * USECS_PER_DAY)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("renew_from must be within %d years of now", DP_RENEW_FROM_YEARS)));
	}
}

/* from + k every (ERROR if out of range: checked renewals never are). */
static TimestampTz
DpWindowBound(const DpRenew *r, int64 k)
{
	Interval	iv;
	int64		month;
	int64		day;
	int64		time;

	if (pg_mul_s64_overflow(r->every.month, k, &month) || month > PG_INT32_MAX || month < PG_INT32_MIN ||
		pg_mul_s64_overflow(r->every.day, k, &day) || day > PG_INT32_MAX || day < PG_INT32_MIN ||
		pg_mul_s64_overflow(r->every.time, k, &time))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("a budget window is out of range")));
	iv.month = (int32) month;
	iv.day = (int32) day;
	iv.time = time;
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(r->from),
												   IntervalPGetDatum(&iv)));
}

/* The window of r that holds t: [*start, *end). */
static void
DpWindowOf(const DpRenew *r, TimestampTz t, TimestampTz *start, TimestampTz *end)
{
	double		approx = DpRenewApproxUsecs(&r->every);
	int64		k = (int64) floor(((double) t - (double) r->from) / approx);
	TimestampTz lo;
	TimestampTz hi;

	/* the estimate is off by a few periods at most (months of 28 to 31 days, DST) */
	lo = DpWindowBound(r, k);
	while (lo > t)
	{
		k--;
		lo = DpWindowBound(r, k);
	}
	hi = DpWindowBound(r, k + 1);
	while (hi <= t)
	{
		k++;
		lo = hi;
		hi = DpWindowBound(r, k + 1);
	}
	*start = lo;
	*end = hi;
}

/* Budget spending with no limits, no renewal and nothing spent. */
void
DpSpendingInit(DpSpending *s)
{
	memset(s, 0, sizeof(*s));
	s->limits.epsilon = s->limits.delta = s->limits.rho = NAN;
	s->window_start = DT_NOBEGIN;
	s->window_end = DT_NOEND;
	dp_cost_zero(&s->spent);
	dp_cost_zero(&s->lifetime);
}

/* Give s a renewal (none: every zero); its window is computed at the next roll. */
void
DpSpendingSetRenew(DpSpending *s, const DpRenew *renew)
{
	s->renew = *renew;
	s->window_start = DT_NOBEGIN;
	s->window_end = DpRenewIsSet(renew) ? DT_NOBEGIN : DT_NOEND;
}

/* Move s to the window holding t if it renews and t is past its window. */
void
DpSpendingRoll(DpSpending *s, TimestampTz t)
{
	if (!DpRenewIsSet(&s->renew))
	{
		s->window_start = DT_NOBEGIN;
		s->window_end = DT_NOEND;
		return;
	}
	/* a window not yet computed has end DT_NOBEGIN (DpSpendingSetRenew) */
	if (t < s->window_end)
		return;
	DpWindowOf(&s->renew, t, &s->window_start, &s->window_end);
	dp_cost_zero(&s->spent);
	s->charges = 0;
}

/* A charge of cost at t: in the window of t and in the lifetime totals. */
void
DpSpendingCharge(DpSpending *s, const DpCost *cost, TimestampTz t)
{
	DpSpendingRoll(s, t);
	dp_cost_append(&s->spent, cost);
	s->charges++;
	dp_cost_append(&s->lifetime, cost);
	s->lifetime_charges++;
}

/* A reset: the current window's spending starts again from zero. */
void
DpSpendingReset(DpSpending *s)
{
	dp_cost_zero(&s->spent);
	s->charges = 0;
}
