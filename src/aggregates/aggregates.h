/*
 * aggregates.h — the dp aggregates (aggregates/): their kinds, as the
 * catalogue of dp aggregates (release/release.h) and the guard know them.
 *
 * The face of aggregates/.  An aggregate's final function finds its planned
 * call site through the release path (release/release.h); what every aggregate
 * shares is common/agg_common.h.
 */
#ifndef DP_AGGREGATES_H
#define DP_AGGREGATES_H

#include "postgres.h"

#include "agg_common.h"
#include "release.h"

/* A hint for the syntax error of dp_count(*, mechanism) (emit_log_hook). */
extern void DpCountSyntaxHint(ErrorData *edata);

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
extern const DpAggKind dp_rr_count_kind;
extern const DpAggKind dp_rr_count_mech_kind;
extern const DpAggKind dp_rr_proportion_kind;
extern const DpAggKind dp_rr_proportion_mech_kind;
extern const DpAggKind dp_rr_histogram_kind;
extern const DpAggKind dp_rr_histogram_mech_kind;

/*
 * agg_histogram.c, for agg_rr.c: the exact counts of keys[0..n) (values of
 * typid) in the key-count state of dp_histogram(key, mech).
 */
extern void DpKeyStateCountKeys(void *state, Oid typid, Oid collation, const Datum *keys, int n,
								int64 *counts);

/* Add every aggregate kind to the catalogue of dp aggregates (aggregates/kinds.c, at load). */
extern void DpAggregatesRegister(void);

#endif							/* DP_AGGREGATES_H */
