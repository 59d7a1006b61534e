/*
 * kinds.c — the list of dp_pg's aggregate kinds, added to the catalogue of
 * dp aggregates (release/release.h) when the library loads.
 *
 * Owns nothing but the list; each kind is defined by its aggregate's file
 * (agg_count.c, agg_sum.c, agg_histogram.c, agg_quantile.c, agg_rr.c).
 *
 * Layer aggregates/ (docs/development.md): calls the catalogue of the
 * release path only.
 */
#include "postgres.h"

#include "aggregates.h"
#include "release.h"

/* Every aggregate kind dp_pg defines, in the order the catalogue matches them. */
static const DpAggKind *const all_kinds[] = {
	&dp_count_star_kind,
	&dp_count_kind,
	&dp_sum_int_kind,
	&dp_sum_int8_kind,
	&dp_sum_float8_kind,
	&dp_sum_numeric_kind,
	&dp_avg_kind,
	&dp_sum_int_default_kind,
	&dp_sum_int8_default_kind,
	&dp_sum_float8_default_kind,
	&dp_sum_numeric_default_kind,
	&dp_avg_default_kind,
	&dp_bounded_count_kind,
	&dp_histogram_bins_kind,
	&dp_histogram_width_kind,
	&dp_histogram_keys_kind,
	&dp_partition_keep_kind,
	&dp_quantile_kind,
	&dp_quantile_default_kind,
	&dp_median_kind,
	&dp_median_default_kind,
	&dp_bounded_quantile_kind,
	&dp_rr_count_kind,
	&dp_rr_count_mech_kind,
	&dp_rr_proportion_kind,
	&dp_rr_proportion_mech_kind,
	&dp_rr_histogram_kind,
	&dp_rr_histogram_mech_kind,
};

/* Add every aggregate kind to the catalogue of dp aggregates (_PG_init). */
void
DpAggregatesRegister(void)
{
	DpCatalogueAdd(all_kinds, lengthof(all_kinds));
}
