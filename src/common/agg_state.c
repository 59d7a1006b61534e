/*
 * agg_state.c — shared handling of the dp aggregates' partial states
 * (agg_state.h): aggregate context, serialized header, checked reads.
 *
 * The reads here never use pq_getmsg*(), whose errors speak of protocol
 * messages: a short or malformed state is reported as corrupt data naming
 * the aggregate.
 *
 * Layer common/ (docs/development.md): may call the numeric core (core/)
 * and the rest of common/, nothing above.
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "port/pg_bswap.h"

#include "agg_state.h"

/* The aggregate memory context of a support function, or ERROR if not called as one. */
MemoryContext
DpAggMemoryContext(FunctionCallInfo fcinfo, const char *fname)
{
	MemoryContext aggcxt;

	if (AggCheckCallContext(fcinfo, &aggcxt) != AGG_CONTEXT_AGGREGATE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s can only be called as part of a dp aggregate", fname)));
	return aggcxt;
}

/* Start a serialized state of the given kind in buf (initialises buf). */
void
DpStateSendBegin(StringInfo buf, DpStateKind kind)
{
	pq_begintypsend(buf);
	pq_sendint32(buf, DP_STATE_MAGIC);
	pq_sendbyte(buf, DP_STATE_VERSION);
	pq_sendbyte(buf, (uint8) kind);
	pq_sendint16(buf, 0);
}

/* The finished serialized state as a bytea. */
bytea *
DpStateSendEnd(StringInfo buf)
{
	return pq_endtypsend(buf);
}

/* Report a partial state that fails validation (ERROR XX001). */
void
DpStateCorrupt(const char *aggname, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid partial state of %s", aggname),
			 errdetail("%s", detail)));
}

/* Copy n bytes out of buf, or report a truncated state. */
static void
DpStateGetBytes(StringInfo buf, void *dst, int n, const char *aggname)
{
	if (n < 0 || buf->cursor > buf->len - n)
		DpStateCorrupt(aggname, "The serialized state is truncated.");
	memcpy(dst, buf->data + buf->cursor, n);
	buf->cursor += n;
}

/* Read fixed-width fields, or ERROR XX001 if the bytes run out. */
int32
DpStateGetInt32(StringInfo buf, const char *aggname)
{
	uint32		v;

	DpStateGetBytes(buf, &v, 4, aggname);
	return (int32) pg_ntoh32(v);
}

int64
DpStateGetInt64(StringInfo buf, const char *aggname)
{
	uint64		v;

	DpStateGetBytes(buf, &v, 8, aggname);
	return (int64) pg_ntoh64(v);
}

double
DpStateGetFloat8(StringInfo buf, const char *aggname)
{
	union
	{
		int64		i;
		double		d;
	}			u;

	u.i = DpStateGetInt64(buf, aggname);
	return u.d;
}

int128
DpStateGetInt128(StringInfo buf, const char *aggname)
{
	int64		hi = DpStateGetInt64(buf, aggname);
	uint64		lo = (uint64) DpStateGetInt64(buf, aggname);

	return (int128) (((uint128) (uint64) hi << 64) | lo);
}

/* Append an int128 (high then low 64 bits). */
void
DpStateSendInt128(StringInfo buf, int128 v)
{
	pq_sendint64(buf, (int64) (v >> 64));
	pq_sendint64(buf, (int64) (uint64) v);
}

/*
 * Start reading a serialized state: header, kind and minimum length (see
 * agg_state.h).
 */
void
DpStateRecvBegin(StringInfo buf, bytea *bytes, DpStateKind kind, int min_len,
				 const char *aggname)
{
	uint32		magic;
	uint8		version;
	uint8		got_kind;
	uint16		zero;

	buf->data = VARDATA_ANY(bytes);
	buf->len = VARSIZE_ANY_EXHDR(bytes);
	buf->maxlen = buf->len;
	buf->cursor = 0;
	if (buf->len < DP_STATE_HEADER_LEN || buf->len < min_len)
		DpStateCorrupt(aggname, psprintf("The serialized state has %d bytes, expected at least %d.",
										 buf->len, Max(min_len, DP_STATE_HEADER_LEN)));
	DpStateGetBytes(buf, &magic, 4, aggname);
	DpStateGetBytes(buf, &version, 1, aggname);
	DpStateGetBytes(buf, &got_kind, 1, aggname);
	DpStateGetBytes(buf, &zero, 2, aggname);
	if (pg_ntoh32(magic) != DP_STATE_MAGIC)
		DpStateCorrupt(aggname, "The serialized state does not start with the dp_pg marker.");
	if (version != DP_STATE_VERSION)
		DpStateCorrupt(aggname, psprintf("The serialized state has version %d; this dp_pg reads version %d.",
										 version, DP_STATE_VERSION));
	if (got_kind != (uint8) kind)
		DpStateCorrupt(aggname, psprintf("The serialized state is of kind %d, expected %d.",
										 got_kind, (int) kind));
	if (zero != 0)
		DpStateCorrupt(aggname, "The serialized state's reserved header bytes are not zero.");
}

/* ERROR unless every byte of buf was read. */
void
DpStateRecvEnd(StringInfo buf, const char *aggname)
{
	if (buf->cursor != buf->len)
		DpStateCorrupt(aggname, psprintf("The serialized state has %d trailing bytes.",
										 buf->len - buf->cursor));
}
