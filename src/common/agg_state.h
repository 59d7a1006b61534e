/*
 * agg_state.h — partial states of dp_sum, dp_avg and dp_histogram:
 * the aggregate context, the serialized header, and validation.
 *
 * Partial states cross process boundaries (parallel workers) and, under
 * Citus, machines: the bytes a deserialize function receives are never
 * trusted.  Every serialized state starts with
 *
 *     uint32 magic 'DPST' | uint8 version | uint8 kind | uint16 zero
 *
 * in network byte order (pqformat), followed by a kind-specific payload.
 * Deserialize functions check the header, the exact length, every field's
 * range and the payload's internal consistency (counts non-negative, sums
 * within count x per-row bound, bin totals adding up) before building a
 * state; anything else is ERROR XX001 (data corrupted) and nothing is
 * combined.  Serialized states carry exact values only, never noise.
 */
#ifndef DP_AGG_STATE_H
#define DP_AGG_STATE_H

#include "postgres.h"

#include "compat.h"

#include "fmgr.h"
#include "lib/stringinfo.h"

#define DP_STATE_MAGIC		0x44505354	/* "DPST" */
#define DP_STATE_VERSION	1
#define DP_STATE_HEADER_LEN 8

/* Which aggregate family a serialized state belongs to. */
typedef enum DpStateKind
{
	DP_STATE_SUM_INT8 = 1,		/* dp_sum(int8): int128 sum of clamped values */
	DP_STATE_SUM_FLOAT8 = 2,	/* dp_sum(float8): int128 sum of 2^unit units */
	DP_STATE_AVG = 3,			/* dp_avg: centred fixed-point sum and count */
	DP_STATE_HIST_BINS = 4,		/* dp_histogram, public or equal-width bins */
	DP_STATE_HIST_KEYS = 5		/* dp_histogram(key, mech): counts per key */
} DpStateKind;

/* The aggregate memory context of a support function, or ERROR if not called as one. */
extern MemoryContext DpAggMemoryContext(FunctionCallInfo fcinfo, const char *fname);

/* Start a serialized state of the given kind in buf (initialises buf). */
extern void DpStateSendBegin(StringInfo buf, DpStateKind kind);

/* The finished serialized state as a bytea. */
extern bytea *DpStateSendEnd(StringInfo buf);

/*
 * Start reading a serialized state: check its header and kind, and that its
 * total length is at least min_len bytes (the header included).  buf reads
 * the bytes in place; position is after the header.
 */
extern void DpStateRecvBegin(StringInfo buf, bytea *bytes, DpStateKind kind,
							 int min_len, const char *aggname);

/* ERROR unless every byte of buf was read. */
extern void DpStateRecvEnd(StringInfo buf, const char *aggname);

/* Report a partial state that fails validation (ERROR XX001). */
extern DP_NORETURN void DpStateCorrupt(const char *aggname, const char *detail);

/* Read fixed-width fields, or ERROR XX001 if the bytes run out. */
extern int32 DpStateGetInt32(StringInfo buf, const char *aggname);
extern int64 DpStateGetInt64(StringInfo buf, const char *aggname);
extern double DpStateGetFloat8(StringInfo buf, const char *aggname);
extern int128 DpStateGetInt128(StringInfo buf, const char *aggname);

/* Append an int128 (high then low 64 bits). */
extern void DpStateSendInt128(StringInfo buf, int128 v);

#endif							/* DP_AGG_STATE_H */
