/*
 * release.h — the face of release/: the release path of a query's dp
 * aggregates, from the catalogue of dp aggregates (catalogue.c) through the
 * call sites planned and charged before the query runs (callsite.c, cost.c)
 * to the error bars of releases (bars.c) and the answer cache (cache.c,
 * with the data changes it counts: changes.c).  The only header of release/
 * that files outside it include (test/layering.pl checks it).
 *
 * Layer release/ (docs/development.md): sits on ledger/, common/ and the
 * numeric core.  Within it, catalogue.c and changes.c call nothing of
 * release/, the call sites call the catalogue, the error bars call the call
 * sites, and the cache calls them all (it registers itself with the call
 * sites: DpCallSitesSetCache).
 */
#ifndef DP_RELEASE_H
#define DP_RELEASE_H

#include "postgres.h"

#include "executor/execdesc.h"
#include "fmgr.h"
#include "nodes/pg_list.h"
#include "nodes/primnodes.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

#include "accountant.h"
#include "mechanism.h"
#include "noise.h"
#include "compat.h"

/* ------------------------------------------------------------------------
 * The catalogue of dp aggregates (catalogue.c)
 * ------------------------------------------------------------------------ */

/*
 * What dp_pg knows about each of its aggregates (DpAggKind) and which
 * aggregate of the database is which.  The kinds themselves are defined by
 * the aggregates (aggregates/), which add them here when the library loads
 * (DpAggregatesRegister, aggregates/kinds.c).
 */

/* defined below */
typedef struct DpCallSite DpCallSite;
struct DpSiteBar;

#define DP_MAX_CONST_ARGS 4

/*
 * What dp_pg knows about one of its aggregates.  The aggregate is recognised
 * by its C final function (and by belonging to the dp_pg extension).  Its
 * mechanism and the arguments listed in const_argnos must be constant for the
 * query; they are evaluated once, before execution, and handed to plan().
 */
typedef struct DpAggKind
{
	const char *name;			/* SQL name, for messages */
	PGFunction	finalfn;		/* C final function identifying the aggregate */
	int			nargs;			/* arguments of the user-level aggregate */
	int			mech_argno;		/* 0-based; -1: dp_pg.default_mechanism */
	int			nconst;			/* further constant arguments */
	int			const_argnos[DP_MAX_CONST_ARGS];

	/*
	 * The unit-bounded form (dp_pg.bounded_*, written by the guard for tables
	 * with a privacy unit) has this many more trailing arguments: 1 =
	 * (groups int4); 3 = (weight int8, rows int8, groups int4), the weight
	 * being a row argument.  0: no bounded form.
	 */
	int			bounded_extra;
	/* plan() sets the site's cost itself (not the cost of an additive noise plan) */
	bool		own_cost;
	/* partition selection: which groups are released is decided after the final functions */
	bool		selects_groups;
	/* releases only the groups whose noisy count reaches a threshold (no zCDP split over cells) */
	bool		thresholded;
	/* estimates from a locally private column (agg_rr.c): no bounded form, no privacy unit */
	bool		local;
	/* releases counts with dp_noise_release: groupwise(rho, r) is accepted */
	bool		groupwise;
	/* accuracy(halfwidth, level[, rows]) is accepted: its values have an error bar of their own */
	bool		accuracy;

	/*
	 * Optional, with accuracy: the half-width at level of a planned site's
	 * values (for a group of at least rows rows, where that matters: an
	 * average's); NULL: the additive plan's, dp_noise_plan_halfwidth.
	 */
	double		(*halfwidth) (const struct DpCallSite *site, double level, int64 rows);
	/* Plan the noise of a call site; ERROR on invalid arguments. */
	void		(*plan) (DpCallSite *site, Datum *values, bool *isnull);

	/*
	 * Optional: fill what the error bar of a planned site says beyond the
	 * noise of an additive plan (struct DpSiteBar, below) -- an average's
	 * or a quantile's own interval and what it covers.
	 */
	void		(*bar) (const DpCallSite *site, struct DpSiteBar *bar);
} DpAggKind;

/* Add the kinds of dp_pg's aggregates to the catalogue (once, at load). */
extern void DpCatalogueAdd(const DpAggKind *const *kinds, int n);

/* Register the aggregate-kind cache's invalidation (only when preloaded). */
extern void DpCatalogueInit(void);

/* The DpAggKind of aggregate aggfnoid, or NULL if it is not one of dp_pg's. */
extern const DpAggKind *DpKindOfAggregate(Oid aggfnoid);

/* The number of arguments of an aggregate call (not counting its ORDER BY items). */
extern int	DpAggNumArgs(List *args);

/* ------------------------------------------------------------------------
 * Call sites: planned and charged before the query runs (callsite.c, cost.c)
 * ------------------------------------------------------------------------ */

/* One dp aggregate call of the running query (lives in the query's memory). */
struct DpCallSite
{
	const DpAggKind *kind;
	Aggref	   *aggref;			/* the finalizing Aggref in the plan */
	DpMechanism mech;			/* its mechanism, evaluated once */
	DpNoisePlan plan;			/* the noise its final function draws */
	int64		unit_rows;		/* bounded form: per-cell contribution bound (1 otherwise) */
	int32		unit_groups;	/* bounded form: cells per unit the mechanism is split over */
	DpCost		cost;			/* what its releases cost (all groups together) */
	int			release;		/* its DP level (Agg node) in the query, from 1 (multi.c) */
	bool		duplicate;		/* shares the result of an identical call */
	bool		charged;		/* the query's cost is in the ledger */
	bool		bounded;		/* the unit-bounded form (a table with a privacy unit) */
	int			bar_index;		/* its row of the session's error bars, or -1 (cache.c) */
	uint64		session_release;	/* the session's release it belongs to (cache.c) */
	void	   *extra;			/* kind-specific per-query data */
	DpMechanism asked;			/* accuracy(..) asked for, resolved into mech (family 0: none) */
	Plan	   *aggplan;		/* the Agg node it finalizes in (while planned) */
	EState	   *estate;			/* the query's executor state (while planned) */
};

/* cost.c: the mechanism with 1/k of its budget (epsilon and delta, or rho, divided by k). */
extern DpMechanism DpSplitMechanism(const DpMechanism *mech, int k);

/*
 * cost.c: the families accuracy(..) is resolved in (their number), by the
 * accounting of the roles the query is charged to: laplace when any of their
 * budgets has a delta limit of 0 (it admits nothing else); otherwise by the
 * session user's budget (else the first charged): gaussian(rho) under a rho
 * limit, laplace without a delta limit, else both laplace(epsilon) and
 * gaussian(rho), of which the site keeps the one that adds less to that
 * budget's spent epsilon at its delta limit (DpAccuracyPrefer); without a
 * budget, the family and delta of dp_pg.default_mechanism.
 */
typedef struct DpAccuracyShape
{
	int			family;
	int			form;
	double		delta;			/* for (epsilon, delta) forms */
} DpAccuracyShape;
extern int	DpAccuracyShapes(DpAccuracyShape shapes[2]);

/* cost.c: would cost a add less than cost b to the spent epsilon of the budget DpAccuracyShapes follows? */
extern bool DpAccuracyPrefer(const DpCost *a, const DpCost *b);

/* cost.c: the composed cost of the distinct call sites (and their count). */
extern int	DpComposeSites(List *sites, DpCost *total);

/* cost.c: charge the query's cost (leader only) and mark its sites charged. */
extern void DpChargeQuery(QueryDesc *queryDesc, List *sites);

/* cost.c: the (epsilon, delta, rho, call_sites) record of a cost, for fcinfo's result. */
extern Datum DpCostRecord(FunctionCallInfo fcinfo, const DpCost *c, int sites);

/*
 * callsite.c, for a kind's plan(): the column of a table that argument argno
 * of the site reads, when it is a plain column reference through the plan
 * (scans, joins, sorts, gathers; not an expression, an Append or a foreign
 * scan); false otherwise.
 */
extern bool DpCallSiteArgColumn(const DpCallSite *site, int argno, Oid *relid, AttrNumber *attno);

/* callsite.c: true if the site's statement reads a protected table anywhere. */
extern bool DpCallSiteReadsProtected(const DpCallSite *site);

/* Before the standard ExecutorStart: bind the dp aggregates' constant arguments (callsite.c). */
extern void DpCallSitesBindArguments(QueryDesc *queryDesc, int eflags);

/* Walker: true for a Param that is not a bound parameter, or a subquery. */
extern bool DpContainsNonExternParam(Node *node, void *context);

/*
 * What the answer cache (cache.c) does for the call sites: it sits above
 * them and registers these when the library loads (DpCacheInit).
 */
typedef struct DpCallSiteCache
{
	/* at a query's start, before its charge: serve an answer kept for the same budgets (true: no charge) */
	bool		(*lookup) (QueryDesc *queryDesc, int eflags, List *sites);
	/* the query's sites were charged (leader): remember them as the session's last release */
	void		(*note_release) (QueryDesc *queryDesc, List *sites);
	/* the error bars of planned sites (struct DpSiteBar, below), for DpEstimateQueryBars */
	struct DpSiteBar *(*site_bars) (List *sites, int *n);
} DpCallSiteCache;

/* Register the answer cache's side of the call sites (DpCacheInit, at load). */
extern void DpCallSitesSetCache(const DpCallSiteCache *cache);

/* After the standard ExecutorStart: plan the query's dp call sites and charge them. */
extern void DpCallSitesStart(QueryDesc *queryDesc, int eflags);

/* The per-execution unit seeds (Consts) bound into queryDesc's plan, if it was the last bound. */
extern List *DpCallSitesSeeds(QueryDesc *queryDesc);

/* True if the query started by queryDesc has planned dp call sites. */
extern bool DpCallSitesActive(QueryDesc *queryDesc);

/* True for the EXPLAIN-only start of dp_pg.estimate_cost's own plan (it runs nothing). */
extern bool DpCallSitesIsEstimate(QueryDesc *queryDesc);

/*
 * The call site of the final function running in fcinfo.  ERROR (and nothing
 * released) when dp_pg is not preloaded, when called as a window function or
 * directly, or when the call was not planned before the query started.
 */
extern DpCallSite *DpCallSiteForFinal(FunctionCallInfo fcinfo, const DpAggKind *kind);

/*
 * What a query would cost, without charging: plan it and compose its call
 * sites.  Returns the number of dp aggregate call sites.
 */
extern int	DpEstimateQueryCost(const char *query, DpCost *total);

/*
 * dp_pg.min_release_epsilon (callsite.c): the least one release may cost.
 * 0.01: below it a count's 95% interval is wider than +-300 (Laplace) and
 * no analysis needs it, while an oracle's probe at 0.01 costs 10,000 times
 * what it would at 1e-6.  DpCheckReleaseFloor: ERROR 22023 for a release
 * (named what) that costs less; DpCallSitesInit defines the setting.
 */
#define DP_MIN_RELEASE_EPSILON_DEFAULT 0.01
extern double dp_min_release_epsilon;
extern void DpCheckReleaseFloor(const char *what, const DpCost *c);
extern void DpCallSitesInit(void);

/* The error bars of a query's call sites, planned as DpEstimateQueryCost does (struct DpSiteBar, below). */
extern struct DpSiteBar *DpEstimateQueryBars(const char *query, int *n);

/* cost.c: append a double to a JSON text (null for NaN / Inf): the ledger's detail of a charge. */
extern void DpJsonNumber(StringInfo buf, double v);

/* ------------------------------------------------------------------------
 * The error bars (bars.c), the answer cache (cache.c) and its data changes
 * (changes.c)
 * ------------------------------------------------------------------------ */

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

/* A release keeps at most this many values with their own intervals. */
#define DP_MAX_VALUE_BARS 10000

/* A released value's group keys, as the text of a text[], fit in this (else they are not shown). */
#define DP_VALUE_KEYS_LEN 128

/* The interval of one released value of a per_value site (dp_avg). */
typedef struct DpValueBar
{
	int32		bar;			/* its site's row */
	double		value;			/* the released value */
	double		sd;				/* about how far it may be from the truth (the noise's) */
	double		lower;			/* a closed 95% interval of the truth */
	double		upper;
	int32		rank;			/* its group's place in the query's output, from 0; -1: not seen there */
	bool		keyed;			/* keys holds its group's keys */
	char		keys[DP_VALUE_KEYS_LEN];	/* its group's keys (text[] text form, canonical), or "" */
} DpValueBar;

/* The error bars of a query's distinct call sites (palloc'd in the current context; bars.c). */
extern DpSiteBar *DpBarsOfSites(List *sites, int *n);

/*
 * A final function released y (lattice units) with a groupwise(rho, r) plan:
 * keep its own interval (bars.c; nothing for other plans).
 */
extern void DpBarsNoteGroupwise(const DpCallSite *site, int64 y);

/*
 * The query's call sites were charged: remember their bars as the session's
 * last release (bars.c; the call sites' note_release).
 */
extern void DpBarsNoteRelease(QueryDesc *queryDesc, List *sites);

/* An answer served from the cache with these bars: the session's last release (bars.c). */
extern void DpBarsNoteServed(const DpSiteBar *bars, int n, const DpValueBar *values, int nvalues);

/*
 * The values with their own intervals that queryDesc released, if it made
 * the session's last release and none was dropped (bars.c; kept in its
 * answer's cache entry).
 */
extern bool DpBarsLastValues(QueryDesc *queryDesc, const DpValueBar **values, int *n);

/* DISCARD ALL: forget the session's last release (bars.c). */
extern void DpBarsForget(void);

/*
 * A final function released value with its own 95% interval (dp_avg): kept
 * for dp_pg.last_releases (and in the answer's cache entry).
 */
extern void DpBarsNoteValue(const DpCallSite *site, double value, double sd, double lower, double upper);

/*
 * The DP level's projection of a released group (dp_pg.release_keys, which
 * the guard writes there): its keys are those of the values its final
 * functions just noted (bars.c).
 */
extern void DpBarsNoteKeys(const char *keys);

/*
 * The query's output reached the released group of these keys
 * (dp_pg.release_order, which the guard writes around the top level): its
 * values come next in dp_pg.last_releases (bars.c).
 */
extern void DpBarsNoteOrder(const char *keys);

/*
 * A utility statement is about to run: subscriptions' changes count as data
 * changes; DISCARD ALL forgets the session's last release; the kept answers
 * of the roles a DROP ROLE drops go when it commits.
 */
extern void DpCacheUtility(Node *stmt);

/* Define dp_pg.answer_cache and dp_pg.answer_cache_size; transaction callbacks. */
extern void DpCacheInit(void);

/*
 * Data changes (changes.c): the answer cache's view of writes to protected
 * tables and to dp_pg's protection settings (relid 0).
 */

/* The transaction callbacks that forget the tables noted (DpCacheInit). */
extern void DpChangesInit(void);

/* OID of dp_pg.data_changes in this database, or InvalidOid. */
extern Oid	DpDataChangesRelid(void);

/* Note a write of relid (InvalidOid: the settings) in this transaction, once. */
extern void DpNoteChange(Oid relid);

/* The committed writes on relid (and on the settings, relid 0) visible to snapshot. */
extern int64 DpChangeCount(Relation changes, Oid relid, Snapshot snapshot);

/* dp_pg's change trigger on rel, exactly as protect() makes it; InvalidOid if none. */
extern Oid	DpChangeTrigger(Relation rel);

/* The xmin of the row of catalog catid whose attribute attno (index indexid's first column) is key. */
extern TransactionId DpCatalogRowXmin(Oid catid, Oid indexid, AttrNumber attno, Oid key);

/* The xmin of trigger trigoid's pg_trigger row (changes when it is disabled, enabled or replaced). */
extern TransactionId DpTriggerXmin(Oid trigoid);

/* True if rel has a row-level security policy other than dp_pg.protect()'s own two. */
extern bool DpHasOtherPolicies(Relation rel);

/*
 * At ExecutorStart, after the call sites are planned and before the charge:
 * true if the query's answer was released before to the same budgets (it is
 * then served from the cache, uncharged); false to charge and run it (its
 * answer is then kept, if it may be).
 */
extern bool DpCacheLookup(QueryDesc *queryDesc, int eflags, List *sites);


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

#endif							/* DP_RELEASE_H */
