/*
 * guc.h — dp_pg's configuration parameters.
 */
#ifndef DP_GUC_H
#define DP_GUC_H

#include "mechanism.h"

/* dp_pg.default_mechanism, parsed (never NULL after DpGucInit). */
extern const DpMechanism *dp_default_mechanism;

/* dp_pg.partition_mechanism, parsed (an (epsilon, delta) form). */
extern const DpMechanism *dp_partition_mechanism;

/* Bounds of a unit's contribution (dp_pg.protect and the settings below). */
#define DP_MAX_UNIT_GROUPS 100000
#define DP_MAX_UNIT_ROWS 1000000000

/* dp_pg.privacy_unit ("" = none), dp_pg.max_groups_contributed, dp_pg.max_rows_per_unit. */
extern char *dp_privacy_unit;
extern int	dp_max_groups_contributed;
extern int	dp_max_rows_per_unit;

/* dp_pg.debug_noiseless (test builds only; always false otherwise). */
extern bool dp_debug_noiseless;

/* dp_pg.debug_raw_operators (test builds only; always false otherwise): guard/bounds.c keeps PostgreSQL's operators. */
extern bool dp_debug_raw_operators;

/* dp_pg.debug_unit_cells (test builds only; always DP_UNIT_CELLS_ON otherwise). */
#define DP_UNIT_CELLS_ON 0
#define DP_UNIT_CELLS_WINDOW 1
#define DP_UNIT_CELLS_BROKEN 2
extern int	dp_debug_unit_cells;

/*
 * Run dp_pg's own SPI statements in a user's session as the bootstrap
 * superuser (with sec_flags added to the security context) and search_path
 * pg_catalog, pg_temp, so that the caller's search_path chooses no function
 * or operator a superuser would run.  Returns the GUC nest level for
 * DpAsSuperuserEnd; an error undoes both with the (sub)transaction.
 */
extern int	DpAsSuperuserBegin(int sec_flags, Oid *save_user, int *save_sec);

/* End what DpAsSuperuserBegin began: the caller's search_path and user again. */
extern void DpAsSuperuserEnd(int nestlevel, Oid save_user, int save_sec);

/* Define the general dp_pg.* parameters (concepts define their own). */
extern void DpGucInit(void);

#endif							/* DP_GUC_H */
