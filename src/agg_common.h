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

#include "callsite.h"
#include "mechanism.h"
#include "noise.h"
#include "random.h"

/* True when the library was loaded by shared_preload_libraries (dp_pg.c). */
extern bool dp_pg_preloaded;

/* Install the numeric core's error handler. */
extern void DpAggCommonInit(void);

/* A hint for the syntax error of dp_count(*, mechanism) (emit_log_hook). */
extern void DpCountSyntaxHint(ErrorData *edata);

/* ERROR unless dp_pg was loaded by shared_preload_libraries (fail closed). */
extern void DpRequirePreload(void);

/* The backend's random generator (OpenSSL), created on first use. */
extern DpRng *DpBackendRng(void);

/* The aggregate kinds (agg_*.c). */
extern const DpAggKind dp_count_star_kind;
extern const DpAggKind dp_count_kind;
extern const DpAggKind dp_sum_int_kind;
extern const DpAggKind dp_sum_int8_kind;
extern const DpAggKind dp_sum_float8_kind;
extern const DpAggKind dp_sum_numeric_kind;
extern const DpAggKind dp_avg_kind;
extern const DpAggKind dp_sum_int_default_kind;
extern const DpAggKind dp_sum_int8_default_kind;
extern const DpAggKind dp_sum_float8_default_kind;
extern const DpAggKind dp_sum_numeric_default_kind;
extern const DpAggKind dp_avg_default_kind;
extern const DpAggKind dp_bounded_count_kind;
extern const DpAggKind dp_histogram_bins_kind;
extern const DpAggKind dp_histogram_width_kind;
extern const DpAggKind dp_histogram_keys_kind;
extern const DpAggKind dp_partition_keep_kind;
extern const DpAggKind dp_quantile_kind;
extern const DpAggKind dp_quantile_default_kind;
extern const DpAggKind dp_median_kind;
extern const DpAggKind dp_median_default_kind;
extern const DpAggKind dp_bounded_quantile_kind;

/* Throw 22023 for a mechanism error message from the plain-C core. */
extern DP_NORETURN void DpReportMechanismError(const char *err);

#endif							/* DP_AGG_COMMON_H */
