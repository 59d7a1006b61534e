/*
 * agg_common.c — shared machinery of the dp aggregates.
 *
 * Randomness protocol: each backend (or parallel worker) creates its DpRng on
 * the first draw, in TopMemoryContext, reading OpenSSL's CSPRNG.  The
 * postmaster never draws, so no buffered bytes are inherited by fork; the
 * owning pid is recorded anyway and a mismatch discards the buffer.  An RNG
 * failure or a rejection loop reaching its bound raises an ERROR through the
 * core's failure handler; there is no fallback source.
 *
 * Layer common/ (docs/development.md): may call the numeric core (core/)
 * and the rest of common/, nothing above.
 */
#include "postgres.h"

#include <unistd.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "agg_common.h"

PG_FUNCTION_INFO_V1(dp_preloaded);

/* True when the library was loaded by shared_preload_libraries (set by _PG_init). */
bool		dp_pg_preloaded = false;

static DpRng *backend_rng = NULL;
static pid_t backend_rng_pid = 0;

/*
 * dp_pg.preloaded(): whether this server loaded dp_pg through
 * shared_preload_libraries (CREATE EXTENSION warns at once when it did not).
 */
Datum
dp_preloaded(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(dp_pg_preloaded);
}

/* Failure handler of the numeric core: turn it into an ERROR. */
static void
DpCoreFailHandler(DpCoreError code, const char *msg)
{
	switch (code)
	{
		case DP_ERR_RNG:
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("dp_pg could not obtain random bytes"),
					 errdetail("%s", msg)));
			break;
		case DP_ERR_RANGE:
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("dp_pg noise parameter out of range"),
					 errdetail("%s", msg)));
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("dp_pg sampler failed"),
					 errdetail("%s", msg)));
	}
	pg_unreachable();
}

/* Install the numeric core's error handler. */
void
DpAggCommonInit(void)
{
	dp_core_set_fail_handler(DpCoreFailHandler);
}

/* ERROR unless dp_pg was loaded by shared_preload_libraries (fail closed). */
void
DpRequirePreload(void)
{
	if (!dp_pg_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("dp_pg must be loaded via shared_preload_libraries"),
				 errhint("Add dp_pg to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/* The backend's random generator (OpenSSL), created on first use. */
DpRng *
DpBackendRng(void)
{
	if (backend_rng == NULL)
	{
		backend_rng = MemoryContextAllocZero(TopMemoryContext, sizeof(DpRng));
		dp_rng_init(backend_rng, dp_random_openssl_fill, NULL);
		backend_rng_pid = getpid();
	}
	else if (backend_rng_pid != getpid())
	{
		dp_rng_discard(backend_rng);
		backend_rng_pid = getpid();
	}
	return backend_rng;
}

/* Throw 22023 for a mechanism error message from the plain-C core. */
void
DpReportMechanismError(const char *err)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid dp_mechanism: %s", err)));
}

PG_FUNCTION_INFO_V1(dp_unit_priority);

/*
 * dp_pg.unit_priority(): a uniform int8 from the backend's OpenSSL generator.
 * The guard orders each unit's cells by it to keep a uniformly random subset
 * of max_groups_contributed of them (ties have probability 2^-64 per pair).
 */
Datum
dp_unit_priority(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64((int64) dp_rng_u64(DpBackendRng()));
}

PG_FUNCTION_INFO_V1(dp_unit_float_sum);

/*
 * Transition and combine function of dp_pg.unit_float_sum(float8): IEEE
 * addition without PostgreSQL's overflow check.  A privacy unit's sum of
 * clamped values (guard.c) may overflow to +-Infinity when the bounds are
 * huge; it is clamped to the unit's bounds afterwards, and an overflow ERROR
 * there would tell how many large values a person has.
 */
Datum
dp_unit_float_sum(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(PG_GETARG_FLOAT8(0) + PG_GETARG_FLOAT8(1));
}
