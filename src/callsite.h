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

#define DP_MAX_CONST_ARGS 4

typedef struct DpCallSite DpCallSite;
struct DpSiteBar;

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
	/* Plan the noise of a call site; ERROR on invalid arguments. */
	void		(*plan) (DpCallSite *site, Datum *values, bool *isnull);

	/*
	 * Optional: fill what the error bar of a planned site says beyond the
	 * noise of an additive plan (struct DpSiteBar, cache.h) -- an average's
	 * or a quantile's own interval and what it covers.
	 */
	void		(*bar) (const DpCallSite *site, struct DpSiteBar *bar);
} DpAggKind;

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

/* The number of arguments of an aggregate call (not counting its ORDER BY items). */
extern int	DpAggNumArgs(List *args);

/* The mechanism with 1/k of its budget (epsilon and delta, or rho, divided by k). */
extern DpMechanism DpSplitMechanism(const DpMechanism *mech, int k);

/* The DpAggKind of aggregate aggfnoid, or NULL if it is not one of dp_pg's. */
extern const DpAggKind *DpKindOfAggregate(Oid aggfnoid);

/* Register the aggregate-kind cache's invalidation (only when preloaded). */
extern void DpCallSitesInit(void);

/* Before the standard ExecutorStart: bind the dp aggregates' constant arguments (callsite.c). */
extern void DpCallSitesBindArguments(QueryDesc *queryDesc, int eflags);

/* Walker: true for a Param that is not a bound parameter, or a subquery. */
extern bool DpContainsNonExternParam(Node *node, void *context);

/* dp_pg.run_constant(anyelement) (the guard's run-time constants), or InvalidOid. */
extern Oid	DpRunConstantFunction(void);

/* dp_pg.run_like_pattern(text) (a bound LIKE pattern, checked before the query runs), or InvalidOid. */
extern Oid	DpRunLikePatternFunction(void);

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

/* Append a double to a JSON text (null for NaN / Inf): the ledger's detail of a charge. */
extern void DpJsonNumber(StringInfo buf, double v);

#endif							/* DP_CALLSITE_H */
