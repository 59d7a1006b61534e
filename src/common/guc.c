/*
 * guc.c — dp_pg's configuration parameters (prefix dp_pg, reserved).
 *
 * dp_pg.default_mechanism (PGC_USERSET): the mechanism of aggregate calls
 * that name none, such as dp_count(*).  Any role may choose it, because
 * choosing a mechanism never weakens the guarantee: every call is charged for
 * the mechanism it actually uses.  A DBA may set it per role with ALTER ROLE.
 * Parameters that could weaken privacy or touch the ledger are PGC_SUSET and
 * live with their concept.  Also: running dp_pg's own statements as the
 * superuser with a fixed search_path (DpAsSuperuserBegin / End).
 *
 * Layer common/ (docs/development.md): may call the numeric core (core/)
 * and the rest of common/, nothing above.
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/plancache.h"

#include "compat.h"
#include "guc.h"

#define DP_DEFAULT_MECHANISM_TEXT "laplace(epsilon=1)"

static char *default_mechanism_text = NULL;
static char *partition_mechanism_text = NULL;
static DpMechanism partition_mechanism_fallback = {DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA, {0.5, 1e-8}};

const DpMechanism *dp_partition_mechanism = &partition_mechanism_fallback;
static DpMechanism default_mechanism_fallback = {DP_MECH_LAPLACE, DP_FORM_EPSILON, {1.0, 0.0}};

const DpMechanism *dp_default_mechanism = &default_mechanism_fallback;

/*
 * Parse a mechanism setting into *extra (DpGucMalloc); false (with the GUC
 * error detail set) if it does not parse or, with need_delta, has no delta.
 */
static bool
DpCheckMechanismSetting(const char *value, void **extra, bool need_delta)
{
	DpMechanism mech;
	DpMechanism *copy;
	char		err[256];

	if (!dp_mechanism_parse(value, &mech, err, sizeof(err)))
	{
		GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
		GUC_check_errdetail("%s", err);
		return false;
	}
	if (!dp_mechanism_is_privacy_form(&mech) || (need_delta && mech.form != DP_FORM_EPSILON_DELTA))
	{
		GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
		GUC_check_errdetail(need_delta ?
							"Partition selection needs gaussian(epsilon=E, delta=D) or osgt(epsilon=E, delta=D)." :
							"The default mechanism must state epsilon (and delta) or rho; noise-parameter forms are for inspection only.");
		return false;
	}
	copy = (DpMechanism *) DpGucMalloc(sizeof(DpMechanism));
	if (copy == NULL)
		return false;
	*copy = mech;
	*extra = copy;
	return true;
}

/* Check hook: the value must parse as a privacy-form mechanism. */
static bool
check_default_mechanism(char **newval, void **extra, GucSource source)
{
	return DpCheckMechanismSetting(*newval, extra, false);
}

/*
 * Assign hook: publish the parsed value.  Cached plans carry the mechanism
 * of the aggregates the guard wrote (a translated count(col), partition
 * selection): they are planned again with the new one.
 */
static void
assign_default_mechanism(const char *newval, void *extra)
{
	dp_default_mechanism = extra ? (const DpMechanism *) extra : &default_mechanism_fallback;
	ResetPlanCache();
}

/* Check hook: a mechanism with epsilon and delta (partition selection needs a delta). */
static bool
check_partition_mechanism(char **newval, void **extra, GucSource source)
{
	return DpCheckMechanismSetting(*newval, extra, true);
}

/* Assign hook: publish the parsed value. */
static void
assign_partition_mechanism(const char *newval, void *extra)
{
	dp_partition_mechanism = extra ? (const DpMechanism *) extra : &partition_mechanism_fallback;
	ResetPlanCache();			/* as for the default mechanism */
}

char	   *dp_privacy_unit = NULL;
int			dp_max_groups_contributed = 1;
int			dp_max_rows_per_unit = 1;
bool		dp_debug_noiseless = false;
bool		dp_debug_raw_operators = false;
int			dp_debug_unit_cells = DP_UNIT_CELLS_ON;

#ifdef DP_PG_TEST_SWITCHES
static const struct config_enum_entry unit_cells_options[] = {
	{"on", DP_UNIT_CELLS_ON, false},
	{"window", DP_UNIT_CELLS_WINDOW, false},
	{"broken_priority", DP_UNIT_CELLS_BROKEN, false},
	{NULL, 0, false}
};
#endif

/* Define the general dp_pg.* parameters (concepts define their own). */
void
DpGucInit(void)
{
	DefineCustomStringVariable("dp_pg.privacy_unit",
							   "Column that identifies a person in dp queries on tables that are not protected.",
							   "When set, a dp query reading one table with this column bounds each unit's "
							   "contribution by dp_pg.max_groups_contributed and dp_pg.max_rows_per_unit. "
							   "Protected tables use their own declaration (dp_pg.protect).",
							   &dp_privacy_unit,
							   "",
							   PGC_USERSET,
							   0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("dp_pg.max_groups_contributed",
							"With dp_pg.privacy_unit: the most groups (cells) one unit contributes to.",
							NULL,
							&dp_max_groups_contributed,
							1, 1, DP_MAX_UNIT_GROUPS,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("dp_pg.max_rows_per_unit",
							"With dp_pg.privacy_unit: the most rows of one unit counted in one group.",
							NULL,
							&dp_max_rows_per_unit,
							1, 1, DP_MAX_UNIT_ROWS,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
#ifdef DP_PG_TEST_SWITCHES
	DefineCustomBoolVariable("dp_pg.debug_noiseless",
							 "Testing only: release exact values (no noise) to superuser sessions.",
							 "Exists only in test builds (DP_PG_TEST_SWITCHES); charges are made as usual.",
							 &dp_debug_noiseless,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("dp_pg.debug_raw_operators",
							 "Testing only: leave PostgreSQL's operators in analysts' row expressions (no total operators).",
							 "Exists only in test builds (DP_PG_TEST_SWITCHES): the positive control of the "
							 "expression fuzzer (test/fuzz/exprfuzz.pl), which must then find an expression that fails.",
							 &dp_debug_raw_operators,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomEnumVariable("dp_pg.debug_unit_cells",
							 "Testing only: how a privacy unit's cells are kept.",
							 "Exists only in test builds (DP_PG_TEST_SWITCHES). on: dp_pg.unit_cells while "
							 "aggregating; window: a window over all cells (for comparisons and benchmarks); "
							 "broken_priority: unit_cells with priorities that ignore the unit and the seed "
							 "(the positive control of the uniformity tests).",
							 &dp_debug_unit_cells,
							 DP_UNIT_CELLS_ON,
							 unit_cells_options,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
#endif

	DefineCustomStringVariable("dp_pg.default_mechanism",
							   "Mechanism used by dp aggregate calls that name none, e.g. dp_count(*).",
							   "A privacy form: laplace(epsilon=E), gaussian(epsilon=E, delta=D), "
							   "gaussian(rho=R) or osgt(epsilon=E, delta=D).",
							   &default_mechanism_text,
							   DP_DEFAULT_MECHANISM_TEXT,
							   PGC_USERSET,
							   0,
							   check_default_mechanism,
							   assign_default_mechanism,
							   NULL);
	DefineCustomStringVariable("dp_pg.partition_mechanism",
							   "Mechanism of the private partition selection added to GROUP BY on non-public keys.",
							   "An (epsilon, delta) form; its cost is charged with the query.",
							   &partition_mechanism_text,
							   "gaussian(epsilon=0.5, delta=1e-8)",
							   PGC_USERSET,
							   0,
							   check_partition_mechanism,
							   assign_partition_mechanism,
							   NULL);
}

/* See guc.h. */
int
DpAsSuperuserBegin(int sec_flags, Oid *save_user, int *save_sec)
{
	int			nestlevel;

	GetUserIdAndSecContext(save_user, save_sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, *save_sec | SECURITY_LOCAL_USERID_CHANGE | sec_flags);
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

/* See guc.h. */
void
DpAsSuperuserEnd(int nestlevel, Oid save_user, int save_sec)
{
	AtEOXact_GUC(true, nestlevel);
	SetUserIdAndSecContext(save_user, save_sec);
}
