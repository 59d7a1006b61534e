/*
 * dp_pg.c — module entry point.
 *
 * dp_pg gives analysts differentially private aggregates and DBAs per-role
 * privacy budgets.  _PG_init only calls each concept's init function; see the
 * files named there for what each subsystem does and the rules it follows.
 *
 * dp_pg must be loaded through shared_preload_libraries.  When it is loaded
 * any other way (a plain CREATE EXTENSION / LOAD), the aggregates fail closed:
 * they refuse to release anything and say how to fix the configuration.
 *
 * The top layer (docs/development.md): calls every folder's init.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "aggregates.h"
#include "release.h"
#include "guard/guard.h"
#include "guc.h"
#include "hooks.h"
#include "ledger.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Module load: one call per subsystem. */
void
_PG_init(void)
{
	dp_pg_preloaded = process_shared_preload_libraries_in_progress;

	DpGucInit();
	DpAggCommonInit();
	DpAggregatesRegister();
	DpCacheInit();
	DpCallSitesInit();
	if (dp_pg_preloaded)
	{
		DpCatalogueInit();
		DpLedgerInit();
		DpStandbyInit();
		DpRetentionInit();
		DpGuardInit();
		DpHooksInit();
	}

	/* after every concept defined its parameters */
	MarkGUCPrefixReserved("dp_pg");
}
