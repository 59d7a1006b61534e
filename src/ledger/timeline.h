/*
 * timeline.h — whether a timeline began with a recovery that stopped at a
 * target (timeline.c).
 */
#ifndef DP_TIMELINE_H
#define DP_TIMELINE_H

#include "postgres.h"

#include "access/xlogdefs.h"

/*
 * True if timeline tli began with a recovery that stopped at a target
 * (recovery_target_time, _xid, _lsn, _name or immediate): charges recorded
 * after that point of the old timeline are not in the ledger.  reason gets
 * PostgreSQL's words for the stop ("before 2025-01-01 00:00:00+00").
 */
extern bool DpTimelineRecoveryTarget(TimeLineID tli, char *reason, size_t len);

#endif							/* DP_TIMELINE_H */
