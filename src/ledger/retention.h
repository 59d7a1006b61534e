/*
 * retention.h — the ledger over a database's life: kept from DROP, live
 * across restores, by name when roles go, held after a point-in-time
 * recovery (retention.c).
 */
#ifndef DP_RETENTION_H
#define DP_RETENTION_H

#include "postgres.h"

#include "access/xlogdefs.h"
#include "nodes/plannodes.h"

/* GUC and the transaction callback (from _PG_init, preloaded only). */
extern void DpRetentionInit(void);

/*
 * ProcessUtility: refuse what would drop a non-empty ledger; note what a
 * commit must tell the ledger worker (a re-enabled trigger on its tables,
 * dropped roles).  Nothing in binary-upgrade mode.
 */
extern void DpRetentionCheckUtility(PlannedStmt *pstmt);

#endif							/* DP_RETENTION_H */
