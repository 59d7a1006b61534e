/*
 * cache.h — the released-answer cache and the session's error bars (cache.c).
 */
#ifndef DP_CACHE_H
#define DP_CACHE_H

#include "postgres.h"

#include "executor/execdesc.h"
#include "nodes/pg_list.h"

#include "compat.h"
#include "callsite.h"
#include "mechanism.h"

#define DP_BAR_NOTE_LEN 512

/*
 * The error bar of one call site (kept in an entry and for the session).
 * NaN for what does not apply (shown as NULL): an average's sd and h95 are
 * per released value (DpValueBar), a quantile has a rank interval instead.
 */
typedef struct DpSiteBar
{
	char		aggregate[NAMEDATALEN];
	char		mechanism[DP_MECH_TEXT_LEN];
	double		sd;				/* noise standard deviation (output units) */
	double		h95;			/* P(|noise| <= h95) >= 0.95: the closed [answer - h95, answer + h95] */
	double		epsilon;
	double		delta;
	double		rho;
	double		rank_h95;		/* quantiles: P(rank error > d_min + rank_h95) <= 0.05 */
	bool		per_value;		/* intervals per released value (dp_avg) */
	char		note[DP_BAR_NOTE_LEN];	/* what the interval covers and what it leaves out */
} DpSiteBar;

/* The interval of one released value of a per_value site (dp_avg). */
typedef struct DpValueBar
{
	int32		bar;			/* its site's row */
	double		value;			/* the released value */
	double		sd;				/* about how far it may be from the truth (the noise's) */
	double		lower;			/* a closed 95% interval of the truth */
	double		upper;
} DpValueBar;

/* The error bars of a query's distinct call sites (palloc'd in the current context). */
extern DpSiteBar *DpCacheSiteBars(List *sites, int *n);

/*
 * A final function released value with its own 95% interval (dp_avg): kept
 * for dp_pg.last_releases (and in the answer's cache entry).
 */
extern void DpCacheNoteValue(const DpCallSite *site, double value, double sd, double lower, double upper);

/*
 * A utility statement is about to run: subscriptions' changes count as data
 * changes; DISCARD ALL forgets the session's last release.
 */
extern void DpCacheUtility(Node *stmt);

/* Define dp_pg.answer_cache and dp_pg.answer_cache_size; transaction callbacks. */
extern void DpCacheInit(void);

/* True if rel has a row-level security policy other than dp_pg.protect()'s own two. */
extern bool DpHasOtherPolicies(Relation rel);

/*
 * At ExecutorStart, after the call sites are planned and before the charge:
 * true if the query's answer was released before to the same budgets (it is
 * then served from the cache, uncharged); false to charge and run it (its
 * answer is then kept, if it may be).
 */
extern bool DpCacheLookup(QueryDesc *queryDesc, int eflags, List *sites);

/* The query's call sites were charged: remember them as the session's last release. */
extern void DpCacheNoteRelease(QueryDesc *queryDesc, List *sites);

/*
 * ExecutorRun: true if the run was done here (an answer served from the
 * cache).  Otherwise the caller runs the plan between DpCacheCaptureBegin and
 * DpCacheCaptureEnd (which keeps a complete answer) and always calls
 * DpCacheCaptureRestore.
 */
extern bool DpCacheServe(QueryDesc *queryDesc, ScanDirection direction, uint64 count);
extern void DpCacheCaptureBegin(QueryDesc *queryDesc);
extern void DpCacheCaptureEnd(QueryDesc *queryDesc, ScanDirection direction, uint64 count);
extern void DpCacheCaptureRestore(QueryDesc *queryDesc);

#endif							/* DP_CACHE_H */
