/*
 * standby.h — a hot standby's link to its primary (standby.c): the standby's
 * ledger worker forwards charges and refusals there, the primary takes them
 * with dp_pg.forward_charges / dp_pg.forward_refusals.  The standby sits on
 * the ledger (ledger.h) and registers its forwarder with it at load.
 */
#ifndef DP_STANDBY_H
#define DP_STANDBY_H

#include "ledger.h"

/* dp_pg.primary_conninfo */
extern char *dp_primary_conninfo;

/* Define dp_pg.primary_conninfo and register the forwarder with the ledger. */
extern void DpStandbyInit(void);

/* The forwarder (DpLedgerForwarder, ledger.h). */
extern bool DpForwardCharges(int n, const DpChargeRequest *reqs, DpChargeVerdict *out,
							 int *sqlerrcode, char *err, size_t errlen);
extern bool DpForwardRefusals(int n, const TimestampTz *at, const Oid *session_user,
							  const Oid *current_user, const Oid *database,
							  const int *sqlerrcode, const char *const *rule,
							  const char *const *query, int64 missed,
							  char *err, size_t errlen);
extern void DpForwardDisconnect(void);

#endif							/* DP_STANDBY_H */
