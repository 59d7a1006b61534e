/*
 * agg_common.h — what every dp aggregate shares.
 *
 * Memory-context contract of the aggregate support functions:
 *  - transition and combine functions work on exact values only (int8 counts,
 *    int128 / fixed-point sums, exact per-bin counts) and never see noise;
 *  - state that outlives a row lives in the aggregate context
 *    (AggCheckCallContext), never in CurrentMemoryContext;
 *  - final functions add noise exactly once per released value.  They find
 *    their call site's noise plan through DpCallSiteForFinal() (cost.h); it
 *    was planned before the query started, so calibration is per query,
 *    never per row or group;
 *  - a final function releases nothing unless dp_pg was preloaded.
 */
#ifndef DP_AGG_COMMON_H
#define DP_AGG_COMMON_H

#include "postgres.h"

#include "compat.h"

#include "fmgr.h"

#include "mechanism.h"
#include "noise.h"
#include "random.h"

/* True when the library was loaded by shared_preload_libraries (set by dp_pg.c). */
extern bool dp_pg_preloaded;

/* Install the numeric core's error handler. */
extern void DpAggCommonInit(void);

/* ERROR unless dp_pg was loaded by shared_preload_libraries (fail closed). */
extern void DpRequirePreload(void);

/* The backend's random generator (OpenSSL), created on first use. */
extern DpRng *DpBackendRng(void);


/* Throw 22023 for a mechanism error message from the plain-C core. */
extern DP_NORETURN void DpReportMechanismError(const char *err);

#endif							/* DP_AGG_COMMON_H */
