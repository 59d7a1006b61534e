/*
 * callsite.h — dp aggregate call sites of a query, found and planned before it runs.
 */
#ifndef DP_CALLSITE_H
#define DP_CALLSITE_H

#include "postgres.h"

#include "fmgr.h"
#include "executor/execdesc.h"
#include "nodes/primnodes.h"

#include "accountant.h"
#include "mechanism.h"
#include "noise.h"

#include "catalogue.h"


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
};

/* cost.c: the mechanism with 1/k of its budget (epsilon and delta, or rho, divided by k). */
extern DpMechanism DpSplitMechanism(const DpMechanism *mech, int k);

/* cost.c: the composed cost of the distinct call sites (and their count). */
extern int	DpComposeSites(List *sites, DpCost *total);

/* cost.c: charge the query's cost (leader only) and mark its sites charged. */
extern void DpChargeQuery(QueryDesc *queryDesc, List *sites);

/* cost.c: the (epsilon, delta, rho, call_sites) record of a cost, for fcinfo's result. */
extern Datum DpCostRecord(FunctionCallInfo fcinfo, const DpCost *c, int sites);

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
	/* the error bars of planned sites (struct DpSiteBar, cache.h), for DpEstimateQueryBars */
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

/* The error bars of a query's call sites, planned as DpEstimateQueryCost does (struct DpSiteBar, cache.h). */
extern struct DpSiteBar *DpEstimateQueryBars(const char *query, int *n);

/* cost.c: append a double to a JSON text (null for NaN / Inf): the ledger's detail of a charge. */
extern void DpJsonNumber(StringInfo buf, double v);

#endif							/* DP_CALLSITE_H */
