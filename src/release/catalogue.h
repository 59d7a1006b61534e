/*
 * catalogue.h — the catalogue of dp aggregates: what dp_pg knows about each
 * of its aggregates (DpAggKind) and which aggregate of the database is which.
 *
 * The face of the catalogue (release/catalogue.c), the lowest part of the
 * release path: the call sites (callsite.c), the answer cache and the guard
 * read it; it calls nothing of dp_pg's.  The kinds themselves are defined by
 * the aggregates (aggregates/), which add them here when the library loads
 * (DpAggregatesRegister, aggregates/kinds.c).
 */
#ifndef DP_CATALOGUE_H
#define DP_CATALOGUE_H

#include "postgres.h"

#include "fmgr.h"
#include "nodes/pg_list.h"

typedef struct DpCallSite DpCallSite;
struct DpSiteBar;

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
	/* partition selection: which groups are released is decided after the final functions */
	bool		selects_groups;
	/* releases only the groups whose noisy count reaches a threshold (no zCDP split over cells) */
	bool		thresholded;
	/* Plan the noise of a call site; ERROR on invalid arguments. */
	void		(*plan) (DpCallSite *site, Datum *values, bool *isnull);

	/*
	 * Optional: fill what the error bar of a planned site says beyond the
	 * noise of an additive plan (struct DpSiteBar, cache.h) -- an average's
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

#endif							/* DP_CATALOGUE_H */
