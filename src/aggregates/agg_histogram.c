/*
 * agg_histogram.c — dp_histogram in three forms, each releasing a jsonb
 * object {"label": noisy count, ...}.
 *
 *   dp_histogram(key, bins anycompatiblearray, mech)
 *       public bins: every listed bin appears (zeros too), labelled by the
 *       bin's text form; rows whose key is not listed (or NULL) are ignored.
 *   dp_histogram(x float8, lower, upper, nbins, mech)
 *       nbins equal-width bins [a,b) over [lower, upper); x below lower
 *       counts in the first bin, x at or above upper in the last (clamped);
 *       NULL and NaN are ignored.
 *   dp_histogram(key anyelement, mech)
 *       private partition selection: only keys present in the data whose
 *       noisy count reaches a threshold tau are released.
 *
 * Sensitivity: neighbouring inputs differ by one row, which adds 1 to at
 * most one bin, so the vector of bin counts has L1 = L2 = 1 whatever the
 * number of bins (the disjoint-bins argument, seed 004 §5; its Lap(2/eps)
 * is for replace-one neighbours, which move two bins).  A whole histogram
 * is therefore one release of noise with sensitivity 1 per bin, charged
 * once per call site (and groups compose in parallel).
 *
 * Partition selection.  Each key present in the data gets count + Z with Z
 * the mechanism's noise at sensitivity 1, and is released iff count + Z >=
 * tau.  For neighbours D' = D + one row of key k:
 *   - k present in D: only k's noisy count differs, (eps, delta)-DP by the
 *     noise; thresholding is post-processing;
 *   - k absent from D: the outputs differ only by whether k is released at
 *     all, with probability P(1 + Z >= tau) <= delta in D' and 0 in D,
 *     which is (0, delta)-DP.
 * Both cases are within (eps, delta): the key set costs no more than the
 * mechanism's delta.  tau is the smallest integer with P(Z >= tau - 1) <=
 * delta by a proven upper bound on the discrete tail (DpPartitionThreshold).
 * Pure-epsilon or rho mechanisms state no delta: ERROR 22023 with a hint.
 * No Rényi or zCDP bound exists for the key set (a key may appear with
 * probability 0 on one side), so the charge states rho = +Inf and an
 * infinite Rényi curve: only (epsilon, delta) composition applies to it.
 *
 * Limits: at most DP_HIST_MAX_BINS bins, and at most DP_HIST_MAX_KEYS
 * distinct keys per group for partition selection; beyond them ERROR 54000.
 * Each group's state is bounded, and PostgreSQL's hash aggregation spills
 * groups beyond work_mem, so memory is bounded too.
 *
 * Bins are found by hashing the key with the type's hash and equality
 * functions (the key's collation), with inline fast paths for int2/int4/
 * int8 and for text/varchar under deterministic collations.
 *
 * Layer aggregates/ (docs/development.md): may call the release path
 * (call sites, cache), the ledger, common/ and the numeric core.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "common/shortest_dec.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "aggregates.h"
#include "agg_state.h"
#include "release.h"
#include "calibrate.h"
#include "canonical.h"

PG_FUNCTION_INFO_V1(dp_histogram_bins_trans);
PG_FUNCTION_INFO_V1(dp_histogram_bins_final);
PG_FUNCTION_INFO_V1(dp_histogram_width_trans);
PG_FUNCTION_INFO_V1(dp_histogram_width_final);
PG_FUNCTION_INFO_V1(dp_histogram_counts_combine);
PG_FUNCTION_INFO_V1(dp_histogram_counts_serialize);
PG_FUNCTION_INFO_V1(dp_histogram_counts_deserialize);
PG_FUNCTION_INFO_V1(dp_histogram_keys_trans);
PG_FUNCTION_INFO_V1(dp_histogram_keys_final);
PG_FUNCTION_INFO_V1(dp_histogram_keys_combine);
PG_FUNCTION_INFO_V1(dp_histogram_keys_serialize);
PG_FUNCTION_INFO_V1(dp_histogram_keys_deserialize);
PG_FUNCTION_INFO_V1(dp_partition_threshold);

#define DP_HIST_MAX_BINS 100000
#define DP_HIST_MAX_KEYS 1000000

static const char *const hist_name = "dp_histogram";

/*
 * Keys: hashing and equality
 */

typedef enum DpKeyMode
{
	DP_KEY_INT,					/* int2, int4, int8: compare values */
	DP_KEY_TEXT,				/* text, varchar, deterministic collation: bytes */
	DP_KEY_GENERIC				/* the type's hash and equality functions */
} DpKeyMode;

/* How to hash and compare keys of one type and collation. */
typedef struct DpKeyOps
{
	Oid			typid;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Oid			collation;
	DpKeyMode	mode;
	FmgrInfo   *hash;			/* generic: the type cache's (persistent) */
	FmgrInfo   *eq;
} DpKeyOps;

/* Set up key hashing for a type and collation; ERROR 42883 if the type has no hash support. */
static void
DpKeyOpsInit(DpKeyOps *ops, Oid typid, Oid collation)
{
	TypeCacheEntry *tce;

	ops->typid = typid;
	ops->collation = collation;
	get_typlenbyvalalign(typid, &ops->typlen, &ops->typbyval, &ops->typalign);
	ops->hash = ops->eq = NULL;
	if (typid == INT2OID || typid == INT4OID || typid == INT8OID)
	{
		ops->mode = DP_KEY_INT;
		return;
	}
	if ((typid == TEXTOID || typid == VARCHAROID) && OidIsValid(collation) &&
		get_collation_isdeterministic(collation))
	{
		ops->mode = DP_KEY_TEXT;
		return;
	}
	tce = lookup_type_cache(typid, TYPECACHE_HASH_PROC_FINFO | TYPECACHE_EQ_OPR_FINFO);
	if (!OidIsValid(tce->hash_proc_finfo.fn_oid) || !OidIsValid(tce->eq_opr_finfo.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify a hash function for type %s", format_type_be(typid)),
				 errdetail("dp_histogram finds bins by hashing their keys.")));
	ops->mode = DP_KEY_GENERIC;
	ops->hash = &tce->hash_proc_finfo;
	ops->eq = &tce->eq_opr_finfo;
}

/* The int64 value of an integer key. */
static inline int64
DpKeyInt(const DpKeyOps *ops, Datum key)
{
	switch (ops->typid)
	{
		case INT2OID:
			return DatumGetInt16(key);
		case INT4OID:
			return DatumGetInt32(key);
		default:
			return DatumGetInt64(key);
	}
}

/* A key ready for hashing, comparing and keeping (never a toast pointer). */
static inline Datum
DpKeyPrepare(const DpKeyOps *ops, Datum key)
{
	if (ops->mode == DP_KEY_TEXT)
		return PointerGetDatum(pg_detoast_datum_packed((struct varlena *) DatumGetPointer(key)));
	if (ops->typlen == -1)
		return PointerGetDatum(PG_DETOAST_DATUM(key));
	return key;
}

/* Hash of a prepared key. */
static inline uint32
DpKeyHash(const DpKeyOps *ops, Datum key)
{
	switch (ops->mode)
	{
		case DP_KEY_INT:
			{
				uint64		v = (uint64) DpKeyInt(ops, key);

				return murmurhash32((uint32) v ^ (uint32) (v >> 32));
			}
		case DP_KEY_TEXT:
			{
				struct varlena *t = (struct varlena *) DatumGetPointer(key);

				return hash_bytes((unsigned char *) VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
			}
		default:
			return DatumGetUInt32(FunctionCall1Coll(ops->hash, ops->collation, key));
	}
}

/* Equality of two prepared keys. */
static inline bool
DpKeyEqual(const DpKeyOps *ops, Datum a, Datum b)
{
	switch (ops->mode)
	{
		case DP_KEY_INT:
			return DpKeyInt(ops, a) == DpKeyInt(ops, b);
		case DP_KEY_TEXT:
			{
				struct varlena *ta = (struct varlena *) DatumGetPointer(a);
				struct varlena *tb = (struct varlena *) DatumGetPointer(b);
				Size		la = VARSIZE_ANY_EXHDR(ta);

				return la == VARSIZE_ANY_EXHDR(tb) && memcmp(VARDATA_ANY(ta), VARDATA_ANY(tb), la) == 0;
			}
		default:
			return DatumGetBool(FunctionCall2Coll(ops->eq, ops->collation, a, b));
	}
}

/* The text form of a key (its label). */
static char *
DpKeyLabel(const DpKeyOps *ops, Datum key)
{
	Oid			outfn;
	bool		isvarlena;

	getTypeOutputInfo(ops->typid, &outfn, &isvarlena);
	return OidOutputFunctionCall(outfn, key);
}

/*
 * An open-addressing index over n keys (power-of-two slots, load <= 1/2):
 * slots hold key positions, -1 when empty.
 */
typedef struct DpKeyIndex
{
	int32	   *slots;
	uint32		mask;
} DpKeyIndex;

/* An empty index in cxt with room for n keys (replacing any previous one). */
static void
DpKeyIndexInit(DpKeyIndex *ix, MemoryContext cxt, int n)
{
	uint32		size = 16;

	while (size < (uint32) n * 2 + 2)
		size <<= 1;
	if (ix->slots != NULL)
		pfree(ix->slots);
	ix->slots = MemoryContextAlloc(cxt, size * sizeof(int32));
	memset(ix->slots, 0xff, size * sizeof(int32));
	ix->mask = size - 1;
}

/* (Re)build an index over keys[0..n) with their hashes, in cxt. */
static void
DpKeyIndexBuild(DpKeyIndex *ix, MemoryContext cxt, const uint32 *hashes, int n)
{
	DpKeyIndexInit(ix, cxt, n);
	for (int i = 0; i < n; i++)
	{
		uint32		s = hashes[i] & ix->mask;

		while (ix->slots[s] >= 0)
			s = (s + 1) & ix->mask;
		ix->slots[s] = i;
	}
}

/* Position of key (hash h) among keys, or -1; *slot is where it would go. */
static inline int
DpKeyIndexFind(const DpKeyIndex *ix, const DpKeyOps *ops, const Datum *keys,
			   const uint32 *hashes, Datum key, uint32 h, uint32 *slot)
{
	uint32		s = h & ix->mask;

	for (;;)
	{
		int			i = ix->slots[s];

		if (i < 0)
		{
			if (slot)
				*slot = s;
			return -1;
		}
		if (hashes[i] == h && DpKeyEqual(ops, keys[i], key))
			return i;
		s = (s + 1) & ix->mask;
	}
}

/*
 * Public bins
 */

/* The bins of a call, indexed for lookup (transition: fn_extra; plan: site). */
typedef struct DpBinIndex
{
	DpKeyOps	ops;
	Datum		arg;			/* the bins argument datum it was built from */
	ArrayType  *array;			/* a private copy (content comparison) */
	int			nbins;
	Datum	   *elems;			/* prepared keys, pointing into array */
	uint32	   *hashes;
	DpKeyIndex	index;
} DpBinIndex;

/* Build the index of a bins array in cxt; ERROR 22004/22023/54000 for invalid bins. */
static DpBinIndex *
DpBinIndexBuild(MemoryContext cxt, Datum arg, Oid collation)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	DpBinIndex *bx = palloc0(sizeof(DpBinIndex));
	ArrayType  *arr = DatumGetArrayTypePCopy(arg);
	bool	   *nulls;
	int			n;

	bx->arg = arg;
	bx->array = arr;
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bins of %s must be a one-dimensional array", hist_name)));
	n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	if (n < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bins of %s must not be empty", hist_name)));
	if (n > DP_HIST_MAX_BINS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s supports at most %d bins, got %d", hist_name, DP_HIST_MAX_BINS, n),
				 errhint("Group the keys into fewer bins, or use dp_histogram(key, mechanism) to release only the frequent keys.")));
	DpKeyOpsInit(&bx->ops, ARR_ELEMTYPE(arr), collation);
	deconstruct_array(arr, bx->ops.typid, bx->ops.typlen, bx->ops.typbyval, bx->ops.typalign,
					  &bx->elems, &nulls, &n);
	bx->nbins = n;
	bx->hashes = palloc(n * sizeof(uint32));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the bins of %s must not contain null", hist_name)));
		bx->elems[i] = DpKeyPrepare(&bx->ops, bx->elems[i]);
		bx->hashes[i] = DpKeyHash(&bx->ops, bx->elems[i]);
	}
	/* insert one by one to find duplicates */
	DpKeyIndexInit(&bx->index, cxt, n);
	for (int i = 0; i < n; i++)
	{
		uint32		slot;

		if (DpKeyIndexFind(&bx->index, &bx->ops, bx->elems, bx->hashes,
						   bx->elems[i], bx->hashes[i], &slot) >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the bins of %s must be distinct", hist_name),
					 errdetail("Bin %s is listed more than once.", DpKeyLabel(&bx->ops, bx->elems[i]))));
		bx->index.slots[slot] = i;
	}
	MemoryContextSwitchTo(old);
	return bx;
}

/*
 * The bin index of the transition call in fcinfo, cached in fn_extra for
 * the query.  The bins are constant for the query (checked at ExecutorStart);
 * a different datum with the same bytes reuses the index, different bytes
 * are an ERROR.
 */
static DpBinIndex *
DpBinIndexForCall(FunctionCallInfo fcinfo)
{
	DpBinIndex *bx = (DpBinIndex *) fcinfo->flinfo->fn_extra;
	Datum		arg;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the bins of %s must not be null", hist_name)));
	arg = PG_GETARG_DATUM(2);
	if (likely(bx != NULL && bx->arg == arg))
		return bx;
	if (bx != NULL)
	{
		ArrayType  *now = DatumGetArrayTypeP(arg);

		if (VARSIZE(now) != VARSIZE(bx->array) || memcmp(now, bx->array, VARSIZE(now)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the parameters of %s must be constant for the query", hist_name),
					 errdetail("The bins changed between rows.")));
		bx->arg = arg;
		return bx;
	}
	bx = DpBinIndexBuild(fcinfo->flinfo->fn_mcxt, arg, PG_GET_COLLATION());
	fcinfo->flinfo->fn_extra = bx;
	return bx;
}

/* Exact per-bin counts of one group (public and equal-width bins). */
typedef struct DpHistState
{
	int32		nbins;
	int64		total;			/* rows counted in some bin */
	int64		counts[FLEXIBLE_ARRAY_MEMBER];
} DpHistState;

/* A zeroed histogram state in cxt. */
static DpHistState *
DpHistStateNew(MemoryContext cxt, int nbins)
{
	DpHistState *state = MemoryContextAllocZero(cxt, offsetof(DpHistState, counts) + nbins * sizeof(int64));

	state->nbins = nbins;
	return state;
}

/* Transition of dp_histogram(key, bins, mech): count the key's bin. */
Datum
dp_histogram_bins_trans(PG_FUNCTION_ARGS)
{
	DpHistState *state;
	DpBinIndex *bx = DpBinIndexForCall(fcinfo);

	if (PG_ARGISNULL(0))
		state = DpHistStateNew(DpAggMemoryContext(fcinfo, "dp_histogram_bins_trans"), bx->nbins);
	else
		state = (DpHistState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		Datum		key = DpKeyPrepare(&bx->ops, PG_GETARG_DATUM(1));
		int			b = DpKeyIndexFind(&bx->index, &bx->ops, bx->elems, bx->hashes,
									   key, DpKeyHash(&bx->ops, key), NULL);

		if (b >= 0)
		{
			state->counts[b]++;
			state->total++;
		}
	}
	PG_RETURN_POINTER(state);
}

/*
 * Equal-width bins
 */

/* Edges of nbins equal-width bins over [lower, upper) (transition: fn_extra; plan: site). */
typedef struct DpWidthBins
{
	double		lower;
	double		upper;
	int32		nbins;
	double		scale;			/* nbins / (upper - lower) */
	double	   *edges;			/* nbins + 1, strictly increasing */
} DpWidthBins;

/* Check the bounds and bin count and compute the edges in cxt. */
static DpWidthBins *
DpWidthBinsMake(MemoryContext cxt, bool lower_null, double lower, bool upper_null, double upper,
				bool nbins_null, int32 nbins)
{
	DpWidthBins *wb;
	double		width = upper - lower;

	if (lower_null || upper_null || nbins_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the bounds and bin count of %s must not be null", hist_name)));
	if (isnan(lower) || isnan(upper) || isinf(lower) || isinf(upper))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bounds of %s must be finite numbers", hist_name),
				 errdetail("lower = %s, upper = %s", float8out_internal(lower), float8out_internal(upper))));
	if (!(lower < upper))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the lower bound of %s must be less than its upper bound", hist_name),
				 errdetail("lower = %s, upper = %s", float8out_internal(lower), float8out_internal(upper))));
	if (isinf(width))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bounds of %s are too far apart: upper - lower overflows float8", hist_name),
				 errdetail("lower = %s, upper = %s", float8out_internal(lower), float8out_internal(upper))));
	if (nbins < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the number of bins of %s must be at least 1, got %d", hist_name, nbins)));
	if (nbins > DP_HIST_MAX_BINS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s supports at most %d bins, got %d", hist_name, DP_HIST_MAX_BINS, nbins)));

	wb = MemoryContextAlloc(cxt, sizeof(DpWidthBins));
	wb->lower = lower;
	wb->upper = upper;
	wb->nbins = nbins;
	wb->scale = nbins / width;
	wb->edges = MemoryContextAlloc(cxt, (nbins + 1) * sizeof(double));
	for (int i = 0; i < nbins; i++)
		wb->edges[i] = lower + width * i / nbins;
	wb->edges[nbins] = upper;
	for (int i = 0; i < nbins; i++)
		if (!(wb->edges[i] < wb->edges[i + 1]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%d bins are too narrow for [%s, %s) in float8", nbins,
							float8out_internal(lower), float8out_internal(upper))));
	return wb;
}

/* The bin of x: [edges[i], edges[i+1]), out-of-range values in the edge bins. */
static inline int
DpWidthBin(const DpWidthBins *wb, double x)
{
	int			n = wb->nbins;
	int			i;

	if (n == 1 || x < wb->edges[1])
		return 0;
	if (x >= wb->edges[n - 1])
		return n - 1;
	/* edges[1] <= x < edges[n-1]: estimate, then correct for rounding */
	i = (int) ((x - wb->lower) * wb->scale);
	if (i < 1)
		i = 1;
	if (i > n - 2)
		i = n - 2;
	while (x < wb->edges[i])
		i--;
	while (x >= wb->edges[i + 1])
		i++;
	return i;
}

/*
 * The width bins of the call in fcinfo, whose lower, upper and nbins are
 * arguments argno .. argno + 2, cached in fn_extra.
 */
static DpWidthBins *
DpWidthBinsForCall(FunctionCallInfo fcinfo, int argno)
{
	DpWidthBins *wb = (DpWidthBins *) fcinfo->flinfo->fn_extra;
	bool		lnull = PG_ARGISNULL(argno);
	bool		unull = PG_ARGISNULL(argno + 1);
	bool		nnull = PG_ARGISNULL(argno + 2);

	if (likely(wb != NULL) && !lnull && !unull && !nnull &&
		wb->lower == PG_GETARG_FLOAT8(argno) && wb->upper == PG_GETARG_FLOAT8(argno + 1) &&
		wb->nbins == PG_GETARG_INT32(argno + 2))
		return wb;
	if (wb != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the parameters of %s must be constant for the query", hist_name),
				 errdetail("The bounds or bin count changed between rows.")));
	wb = DpWidthBinsMake(fcinfo->flinfo->fn_mcxt,
						 lnull, lnull ? 0 : PG_GETARG_FLOAT8(argno),
						 unull, unull ? 0 : PG_GETARG_FLOAT8(argno + 1),
						 nnull, nnull ? 0 : PG_GETARG_INT32(argno + 2));
	fcinfo->flinfo->fn_extra = wb;
	return wb;
}

/* Transition of dp_histogram(x, lower, upper, nbins, mech): count x's bin. */
Datum
dp_histogram_width_trans(PG_FUNCTION_ARGS)
{
	DpHistState *state;
	DpWidthBins *wb = DpWidthBinsForCall(fcinfo, 2);

	if (PG_ARGISNULL(0))
		state = DpHistStateNew(DpAggMemoryContext(fcinfo, "dp_histogram_width_trans"), wb->nbins);
	else
		state = (DpHistState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		double		x = PG_GETARG_FLOAT8(1);

		if (likely(!isnan(x)))
		{
			state->counts[DpWidthBin(wb, x)]++;
			state->total++;
		}
	}
	PG_RETURN_POINTER(state);
}

/*
 * Combine, serialize, deserialize of per-bin counts (both bin forms)
 */

/* Combine two histogram states bin by bin. */
Datum
dp_histogram_counts_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_histogram_counts_combine");
	DpHistState *s1 = PG_ARGISNULL(0) ? NULL : (DpHistState *) PG_GETARG_POINTER(0);
	DpHistState *s2 = PG_ARGISNULL(1) ? NULL : (DpHistState *) PG_GETARG_POINTER(1);

	if (s2 == NULL)
	{
		if (s1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s1);
	}
	if (s1 == NULL)
	{
		s1 = DpHistStateNew(aggcxt, s2->nbins);
		memcpy(s1, s2, offsetof(DpHistState, counts) + s2->nbins * sizeof(int64));
		PG_RETURN_POINTER(s1);
	}
	if (s1->nbins != s2->nbins)
		DpStateCorrupt(hist_name, psprintf("Two partial states have %d and %d bins.", s1->nbins, s2->nbins));
	for (int i = 0; i < s1->nbins; i++)
		if (pg_add_s64_overflow(s1->counts[i], s2->counts[i], &s1->counts[i]))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("bigint out of range")));
	if (pg_add_s64_overflow(s1->total, s2->total, &s1->total))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	PG_RETURN_POINTER(s1);
}

/* Serialize a histogram state: header, nbins, total, counts. */
Datum
dp_histogram_counts_serialize(PG_FUNCTION_ARGS)
{
	DpHistState *state = (DpHistState *) PG_GETARG_POINTER(0);
	StringInfoData buf;
	bytea	   *result;

	DpAggMemoryContext(fcinfo, "dp_histogram_counts_serialize");
	DpStateSendBegin(&buf, DP_STATE_HIST_BINS);
	pq_sendint32(&buf, state->nbins);
	pq_sendint64(&buf, state->total);
	for (int i = 0; i < state->nbins; i++)
		pq_sendint64(&buf, state->counts[i]);
	result = DpStateSendEnd(&buf);
	Assert(VARSIZE(result) - VARHDRSZ == DP_STATE_HEADER_LEN + 12 + 8 * state->nbins);
	PG_RETURN_BYTEA_P(result);
}

/* Deserialize and validate a histogram state (lengths, counts >= 0, total adds up). */
Datum
dp_histogram_counts_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_histogram_counts_deserialize");
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	DpHistState *state;
	int32		nbins;
	int64		total;
	int64		sum = 0;

	DpStateRecvBegin(&buf, bytes, DP_STATE_HIST_BINS, DP_STATE_HEADER_LEN + 12, hist_name);
	nbins = DpStateGetInt32(&buf, hist_name);
	if (nbins < 1 || nbins > DP_HIST_MAX_BINS)
		DpStateCorrupt(hist_name, psprintf("The state claims %d bins.", nbins));
	if (buf.len != DP_STATE_HEADER_LEN + 12 + 8 * nbins)
		DpStateCorrupt(hist_name, psprintf("The state has %d bytes, expected %d for %d bins.",
										   buf.len, DP_STATE_HEADER_LEN + 12 + 8 * nbins, nbins));
	total = DpStateGetInt64(&buf, hist_name);
	state = DpHistStateNew(aggcxt, nbins);
	for (int i = 0; i < nbins; i++)
	{
		int64		c = DpStateGetInt64(&buf, hist_name);

		if (c < 0 || pg_add_s64_overflow(sum, c, &sum))
			DpStateCorrupt(hist_name, "A bin count is negative or the counts overflow.");
		state->counts[i] = c;
	}
	DpStateRecvEnd(&buf, hist_name);
	if (sum != total)
		DpStateCorrupt(hist_name, "The bin counts do not add up to the state's total.");
	state->total = total;
	PG_RETURN_POINTER(state);
}

/*
 * Releases of the bin forms
 */

/* Per-query data of a bin-form call site: the bins' labels. */
typedef struct DpHistSite
{
	int			nbins;
	char	  **labels;
	int64		threshold;		/* partition selection: release iff noisy count >= threshold */
	bool		canon_ready;	/* partition selection: canon is set */
	DpCanon    *canon;			/* the keys' canonical spelling (canonical.c), or NULL */
} DpHistSite;

/* ERROR 22023 if two labels are equal (they would collide as jsonb keys). */
static void
DpCheckLabelsDistinct(char **labels, int n)
{
	char	  **sorted = palloc(n * sizeof(char *));

	memcpy(sorted, labels, n * sizeof(char *));
	qsort(sorted, n, sizeof(char *), pg_qsort_strcmp);
	for (int i = 1; i < n; i++)
		if (strcmp(sorted[i - 1], sorted[i]) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("two bins of %s have the same label \"%s\"", hist_name, sorted[i])));
	pfree(sorted);
}

/*
 * Plan a histogram's noise: sensitivity 1 per bin (disjoint bins), or the
 * unit's per-cell bound in the bounded form; integer lattice.
 */
static void
DpHistNoisePlan(DpCallSite *site)
{
	char		err[256];

	if (!dp_noise_plan(&site->plan, &site->mech, site->unit_rows, site->unit_rows, 0, err, sizeof(err)))
		DpReportMechanismError(err);
}

/* Plan dp_histogram(key, bins, mech): validate the bins, label them. */
static void
DpHistBinsPlan(DpCallSite *site, Datum *values, bool *isnull)
{
	DpHistSite *ex = palloc0(sizeof(DpHistSite));
	DpBinIndex *bx;

	if (isnull[0])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the bins of %s must not be null", hist_name)));
	bx = DpBinIndexBuild(CurrentMemoryContext, values[0], site->aggref->inputcollid);
	ex->nbins = bx->nbins;
	ex->labels = palloc(bx->nbins * sizeof(char *));
	for (int i = 0; i < bx->nbins; i++)
		ex->labels[i] = DpKeyLabel(&bx->ops, bx->elems[i]);
	DpCheckLabelsDistinct(ex->labels, ex->nbins);
	site->extra = ex;
	DpHistNoisePlan(site);
}

/* Plan dp_histogram(x, lower, upper, nbins, mech): edges and labels "[a,b)". */
static void
DpHistWidthPlan(DpCallSite *site, Datum *values, bool *isnull)
{
	DpHistSite *ex = palloc0(sizeof(DpHistSite));
	DpWidthBins *wb;

	wb = DpWidthBinsMake(CurrentMemoryContext,
						 isnull[0], isnull[0] ? 0 : DatumGetFloat8(values[0]),
						 isnull[1], isnull[1] ? 0 : DatumGetFloat8(values[1]),
						 isnull[2], isnull[2] ? 0 : DatumGetInt32(values[2]));
	ex->nbins = wb->nbins;
	ex->labels = palloc(wb->nbins * sizeof(char *));
	for (int i = 0; i < wb->nbins; i++)
	{
		char		a[DOUBLE_SHORTEST_DECIMAL_LEN];
		char		b[DOUBLE_SHORTEST_DECIMAL_LEN];

		double_to_shortest_decimal_buf(wb->edges[i], a);
		double_to_shortest_decimal_buf(wb->edges[i + 1], b);
		ex->labels[i] = psprintf("[%s,%s)", a, b);
	}
	DpCheckLabelsDistinct(ex->labels, ex->nbins);
	site->extra = ex;
	DpHistNoisePlan(site);
}

const DpAggKind dp_histogram_bins_kind = {
	.name = "dp_histogram",
	.finalfn = dp_histogram_bins_final,
	.nargs = 3,
	.bounded_extra = 3,
	.groupwise = true,
	.accuracy = true,
	.mech_argno = 2,
	.nconst = 1,
	.const_argnos = {1},
	.plan = DpHistBinsPlan,
};

const DpAggKind dp_histogram_width_kind = {
	.name = "dp_histogram",
	.finalfn = dp_histogram_width_final,
	.nargs = 5,
	.bounded_extra = 3,
	.groupwise = true,
	.accuracy = true,
	.mech_argno = 4,
	.nconst = 3,
	.const_argnos = {1, 2, 3},
	.plan = DpHistWidthPlan,
};

/* A count released with the site's noise (groupwise's two steps, with its own interval), or ERROR 22003. */
static int64
DpNoisyCount(const DpCallSite *site, int64 count)
{
	bool		overflow;
	int64		r = dp_noise_release(&site->plan, count, DpBackendRng(), &overflow);

	if (overflow)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	DpBarsNoteGroupwise(site, r);
	return r;
}

/* Add {"label": n} to a jsonb object under construction. */
static void
DpJsonbPut(JsonbParseState **ps, const char *label, int64 n)
{
	JsonbValue	k;
	JsonbValue	v;

	k.type = jbvString;
	k.val.string.val = (char *) label;
	k.val.string.len = strlen(label);
	pushJsonbValue(ps, WJB_KEY, &k);
	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(n);
	pushJsonbValue(ps, WJB_VALUE, &v);
}

/* Every bin with one draw of noise, as jsonb. */
static Datum
DpHistRelease(FunctionCallInfo fcinfo, const DpAggKind *kind)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, kind);
	DpHistSite *ex = site->extra;
	DpHistState *state = PG_ARGISNULL(0) ? NULL : (DpHistState *) PG_GETARG_POINTER(0);
	JsonbParseState *ps = NULL;
	JsonbValue *res;

	if (state != NULL && state->nbins != ex->nbins)
		DpStateCorrupt(hist_name, "The state has another number of bins than the query planned.");
	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	for (int i = 0; i < ex->nbins; i++)
		DpJsonbPut(&ps, ex->labels[i], DpNoisyCount(site, state ? state->counts[i] : 0));
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	PG_RETURN_JSONB_P(JsonbValueToJsonb(res));
}

/* Final function of dp_histogram(key, bins, mech). */
Datum
dp_histogram_bins_final(PG_FUNCTION_ARGS)
{
	return DpHistRelease(fcinfo, &dp_histogram_bins_kind);
}

/* Final function of dp_histogram(x, lower, upper, nbins, mech). */
Datum
dp_histogram_width_final(PG_FUNCTION_ARGS)
{
	return DpHistRelease(fcinfo, &dp_histogram_width_kind);
}

/*
 * Partition selection: dp_histogram(key, mech)
 */

/* Exact counts of the distinct keys of one group. */
typedef struct DpKeyState
{
	DpKeyOps	ops;
	MemoryContext cxt;
	int32		nkeys;
	int32		capacity;
	Datum	   *keys;
	int64	   *counts;
	uint32	   *hashes;
	DpKeyIndex	index;			/* slots == NULL: not indexed (deserialized) */
} DpKeyState;

/* An empty key state in cxt. */
static DpKeyState *
DpKeyStateNew(MemoryContext cxt, Oid typid, Oid collation)
{
	DpKeyState *ks = MemoryContextAllocZero(cxt, sizeof(DpKeyState));

	DpKeyOpsInit(&ks->ops, typid, collation);
	ks->cxt = cxt;
	ks->capacity = 8;
	ks->keys = MemoryContextAlloc(cxt, ks->capacity * sizeof(Datum));
	ks->counts = MemoryContextAlloc(cxt, ks->capacity * sizeof(int64));
	ks->hashes = MemoryContextAlloc(cxt, ks->capacity * sizeof(uint32));
	return ks;
}

/* Append a (prepared) key with its hash and count, copying it into the state's context. */
static void
DpKeyStateAppend(DpKeyState *ks, Datum key, uint32 h, int64 count)
{
	if (ks->nkeys >= DP_HIST_MAX_KEYS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s supports at most %d distinct keys per group", hist_name, DP_HIST_MAX_KEYS),
				 errhint("Group the keys into fewer bins, or list public bins: dp_histogram(key, bins, mechanism).")));
	if (ks->nkeys == ks->capacity)
	{
		ks->capacity *= 2;
		ks->keys = repalloc(ks->keys, ks->capacity * sizeof(Datum));
		ks->counts = repalloc(ks->counts, ks->capacity * sizeof(int64));
		ks->hashes = repalloc(ks->hashes, ks->capacity * sizeof(uint32));
	}
	ks->keys[ks->nkeys] = ks->ops.typbyval ? key :
		datumCopy(key, false, ks->ops.typlen);
	ks->hashes[ks->nkeys] = h;
	ks->counts[ks->nkeys] = count;
	ks->nkeys++;
}

/* Add count to key (prepared) in an indexed state. */
static void
DpKeyStateAdd(DpKeyState *ks, Datum key, int64 count)
{
	uint32		h = DpKeyHash(&ks->ops, key);
	uint32		slot;
	int			i = DpKeyIndexFind(&ks->index, &ks->ops, ks->keys, ks->hashes, key, h, &slot);

	if (i >= 0)
	{
		if (pg_add_s64_overflow(ks->counts[i], count, &ks->counts[i]))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("bigint out of range")));
		return;
	}
	{
		MemoryContext old = MemoryContextSwitchTo(ks->cxt);

		DpKeyStateAppend(ks, key, h, count);
		MemoryContextSwitchTo(old);
	}
	if ((uint32) ks->nkeys * 2 + 2 > ks->index.mask + 1)
		DpKeyIndexBuild(&ks->index, ks->cxt, ks->hashes, ks->nkeys);
	else
		ks->index.slots[slot] = ks->nkeys - 1;
}

/* Index a state's keys (for a deserialized state, with this call's collation). */
static void
DpKeyStateIndex(DpKeyState *ks, Oid collation)
{
	if (ks->index.slots != NULL)
		return;
	DpKeyOpsInit(&ks->ops, ks->ops.typid, collation);
	for (int i = 0; i < ks->nkeys; i++)
		ks->hashes[i] = DpKeyHash(&ks->ops, ks->keys[i]);
	DpKeyIndexBuild(&ks->index, ks->cxt, ks->hashes, ks->nkeys);
}

/*
 * The exact counts of keys[0..n) (values of typid) in a key state, ERROR if
 * the state holds keys of another type; keys the state holds that are not
 * among them are left out (the estimates of locally private columns,
 * agg_rr.c, count its declared keys only).
 */
void
DpKeyStateCountKeys(void *state, Oid typid, Oid collation, const Datum *keys, int n, int64 *counts)
{
	DpKeyState *ks = (DpKeyState *) state;

	memset(counts, 0, n * sizeof(int64));
	if (ks == NULL)
		return;
	if (ks->ops.typid != typid)
		DpStateCorrupt(hist_name, "The state's key type is not the aggregate's.");
	DpKeyStateIndex(ks, collation);
	for (int i = 0; i < n; i++)
	{
		Datum		key = DpKeyPrepare(&ks->ops, keys[i]);
		int			j = DpKeyIndexFind(&ks->index, &ks->ops, ks->keys, ks->hashes, key,
									   DpKeyHash(&ks->ops, key), NULL);

		if (j >= 0)
			counts[i] = ks->counts[j];
	}
}

/* Transition of dp_histogram(key, mech): count each distinct key. */
Datum
dp_histogram_keys_trans(PG_FUNCTION_ARGS)
{
	DpKeyState *ks;

	if (PG_ARGISNULL(0))
	{
		MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_histogram_keys_trans");

		ks = DpKeyStateNew(aggcxt, get_fn_expr_argtype(fcinfo->flinfo, 1), PG_GET_COLLATION());
		DpKeyIndexInit(&ks->index, aggcxt, 0);
	}
	else
		ks = (DpKeyState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
		DpKeyStateAdd(ks, DpKeyPrepare(&ks->ops, PG_GETARG_DATUM(1)), 1);
	PG_RETURN_POINTER(ks);
}

/* Combine two key states: merge the right one's keys into the left. */
Datum
dp_histogram_keys_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_histogram_keys_combine");
	DpKeyState *s1 = PG_ARGISNULL(0) ? NULL : (DpKeyState *) PG_GETARG_POINTER(0);
	DpKeyState *s2 = PG_ARGISNULL(1) ? NULL : (DpKeyState *) PG_GETARG_POINTER(1);

	if (s2 == NULL)
	{
		if (s1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s1);
	}
	if (s1 == NULL)
	{
		s1 = DpKeyStateNew(aggcxt, s2->ops.typid, PG_GET_COLLATION());
		DpKeyIndexInit(&s1->index, aggcxt, s2->nkeys);
	}
	else
		DpKeyStateIndex(s1, PG_GET_COLLATION());
	if (s1->ops.typid != s2->ops.typid)
		DpStateCorrupt(hist_name, "Two partial states have keys of different types.");
	for (int i = 0; i < s2->nkeys; i++)
		DpKeyStateAdd(s1, s2->keys[i], s2->counts[i]);
	PG_RETURN_POINTER(s1);
}

/* Serialize a key state: header, key type, nkeys, then (count, length, binary key) each. */
Datum
dp_histogram_keys_serialize(PG_FUNCTION_ARGS)
{
	DpKeyState *ks = (DpKeyState *) PG_GETARG_POINTER(0);
	StringInfoData buf;
	Oid			sendfn;
	bool		isvarlena;
	FmgrInfo	flinfo;

	DpAggMemoryContext(fcinfo, "dp_histogram_keys_serialize");
	getTypeBinaryOutputInfo(ks->ops.typid, &sendfn, &isvarlena);
	fmgr_info(sendfn, &flinfo);
	DpStateSendBegin(&buf, DP_STATE_HIST_KEYS);
	pq_sendint32(&buf, ks->ops.typid);
	pq_sendint32(&buf, ks->nkeys);
	for (int i = 0; i < ks->nkeys; i++)
	{
		bytea	   *b = SendFunctionCall(&flinfo, ks->keys[i]);

		pq_sendint64(&buf, ks->counts[i]);
		pq_sendint32(&buf, VARSIZE(b) - VARHDRSZ);
		pq_sendbytes(&buf, VARDATA(b), VARSIZE(b) - VARHDRSZ);
		pfree(b);
	}
	PG_RETURN_BYTEA_P(DpStateSendEnd(&buf));
}

/*
 * Deserialize and validate a key state: known type with a binary input
 * function, 0 <= nkeys <= limit, counts >= 1, lengths within the bytes, each
 * key accepted by the type's receive function using all of its bytes.
 */
Datum
dp_histogram_keys_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_histogram_keys_deserialize");
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	StringInfoData item;
	DpKeyState *ks;
	Oid			typid;
	int32		nkeys;
	Oid			recvfn;
	Oid			ioparam;
	FmgrInfo	flinfo;
	MemoryContext old;

	DpStateRecvBegin(&buf, bytes, DP_STATE_HIST_KEYS, DP_STATE_HEADER_LEN + 8, hist_name);
	typid = (Oid) DpStateGetInt32(&buf, hist_name);
	nkeys = DpStateGetInt32(&buf, hist_name);
	if (!SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(typid)))
		DpStateCorrupt(hist_name, psprintf("The state's key type %u does not exist.", typid));
	if (nkeys < 0 || nkeys > DP_HIST_MAX_KEYS)
		DpStateCorrupt(hist_name, psprintf("The state claims %d keys.", nkeys));
	/* each key takes at least 12 bytes: reject impossible counts before allocating */
	if ((int64) nkeys * 12 > buf.len - buf.cursor)
		DpStateCorrupt(hist_name, "The state is too short for its number of keys.");
	getTypeBinaryInputInfo(typid, &recvfn, &ioparam);
	fmgr_info(recvfn, &flinfo);

	ks = DpKeyStateNew(aggcxt, typid, InvalidOid);
	initStringInfo(&item);
	for (int i = 0; i < nkeys; i++)
	{
		int64		count = DpStateGetInt64(&buf, hist_name);
		int32		len = DpStateGetInt32(&buf, hist_name);
		Datum		key;

		if (count < 1)
			DpStateCorrupt(hist_name, "A key's count is not positive.");
		if (len < 0 || len > buf.len - buf.cursor)
			DpStateCorrupt(hist_name, "A key's length exceeds the state.");
		resetStringInfo(&item);
		appendBinaryStringInfo(&item, buf.data + buf.cursor, len);
		buf.cursor += len;
		old = MemoryContextSwitchTo(aggcxt);
		key = ReceiveFunctionCall(&flinfo, &item, ioparam, -1);
		if (item.cursor != item.len)
			DpStateCorrupt(hist_name, "A key's bytes are not a value of its type.");
		DpKeyStateAppend(ks, DpKeyPrepare(&ks->ops, key), 0, count);
		MemoryContextSwitchTo(old);
	}
	DpStateRecvEnd(&buf, hist_name);
	pfree(item.data);
	PG_RETURN_POINTER(ks);
}

/*
 * Smallest integer tau >= 1 + rows with P(rows + Z >= tau) <= delta, Z the
 * planned discrete Gaussian (m = 0) or OSGT noise in lattice units (rows = 1
 * without a privacy unit; otherwise the most a unit adds to one key).  Below,
 * j is found with P(Z >= j) <= delta and tau = j + rows (rows = 1 shown).
 *
 * With w(k) = exp(-(k^2 + 2 m |k|)/(2 sigma^2)), decreasing in |k|, and
 * c = m^2/(2 sigma^2):
 *   sum_{k>=j} w(k) <= integral_{j-1}^inf w = e^c sigma sqrt(2 pi) Q((j-1+m)/sigma),  j >= 1;
 *   Z_norm = 2 sum_{k>=0} w(k) - 1 >= max(1, 2 e^c sigma sqrt(2 pi) Q(m/sigma) - 1)
 *          = max(1, 2 sigma Mills(m/sigma) - 1).
 * So P(Z >= j) <= delta once log Q((j-1+m)/sigma) <= log delta + log Z_low
 * - c - log(sigma sqrt(2 pi)); tau = j + 1.  Computed in logs, valid for any
 * delta > 0.
 */
static int64
DpPartitionThreshold(const DpNoisePlan *plan, double delta, int64 rows)
{
	double		sigma = sqrt(plan->sigma2);
	double		m = plan->mech.family == DP_MECH_OSGT ? plan->m_lattice : 0.0;
	double		c = m * m / (2.0 * plan->sigma2);
	double		zlow = Max(1.0, 2.0 * sigma * dp_mills(m / sigma) - 1.0);
	double		target = log(delta) + log(zlow) - c - log(sigma * sqrt(2.0 * M_PI));
	double		y;
	double		j;

	if (dp_norm_log_q(-60.0) <= target)
		return 1 + rows;
	/* y satisfies the bound; j - 1 + m >= sigma y */
	y = dp_norm_log_q_inv(target);
	j = ceil(sigma * y - m + 1.0);
	if (j < 1.0)
		j = 1.0;
	if (j > 1e15)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("the partition selection threshold of %s is out of range", hist_name)));
	/* a new key holds at most rows (1 without a privacy unit): P(rows + Z >= tau) <= delta */
	return (int64) j + rows;
}

/* Check a mechanism for partition selection and plan its noise and threshold. */
static int64
DpPartitionPlan(DpNoisePlan *plan, const DpMechanism *mech, int64 rows)
{
	char		err[256];

	if (mech->form != DP_FORM_EPSILON_DELTA)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s(key, mechanism) needs a mechanism with a delta", hist_name),
				 errdetail("Releasing which keys occur has a small chance of revealing a single row; that chance is bounded by the mechanism's delta, and %s has none.",
						   mech->family == DP_MECH_LAPLACE ? "a pure-epsilon laplace mechanism" :
						   mech->family == DP_MECH_GROUPWISE ? "a groupwise (rho-zCDP) mechanism" : "a rho-zCDP mechanism"),
				 errhint("Use gaussian(epsilon=.., delta=..) or osgt(epsilon=.., delta=..), or list public bins: dp_histogram(key, bins, mechanism).")));
	if (!dp_noise_plan(plan, mech, rows, rows, 0, err, sizeof(err)))
		DpReportMechanismError(err);
	return DpPartitionThreshold(plan, mech->p[1], rows);
}

/* Plan dp_histogram(key, mech): noise, threshold, and an (epsilon, delta)-only charge. */
static void
DpHistKeysPlan(DpCallSite *site, Datum *values, bool *isnull)
{
	DpHistSite *ex = palloc0(sizeof(DpHistSite));

	ex->threshold = DpPartitionPlan(&site->plan, &site->mech, site->unit_rows);
	/* the key set has no Rényi / zCDP guarantee (see the file header) */
	site->plan.rho = INFINITY;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		site->plan.rdp[i] = INFINITY;
	site->extra = ex;
}

/* What partition selection's interval covers (DpAggKind.bar). */
static void
DpHistKeysBar(const DpCallSite *site, DpSiteBar *bar)
{
	const DpHistSite *ex = site->extra;

	snprintf(bar->note, sizeof(bar->note),
			 "[answer - h, answer + h] (closed, h = ci95_halfwidth) holds a released key's count with "
			 "probability 0.95 or more: the noise alone.  Keys (groups) whose noisy count is below "
			 INT64_FORMAT " are not released at all.", ex->threshold);
}

const DpAggKind dp_histogram_keys_kind = {
	.name = "dp_histogram",
	.finalfn = dp_histogram_keys_final,
	.nargs = 2,
	.bounded_extra = 3,
	.mech_argno = 1,
	.nconst = 0,
	.thresholded = true,
	.plan = DpHistKeysPlan,
	.bar = DpHistKeysBar,
};

/* Final function of dp_histogram(key, mech): the keys whose noisy count reaches the threshold. */
Datum
dp_histogram_keys_final(PG_FUNCTION_ARGS)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, &dp_histogram_keys_kind);
	DpHistSite *ex = site->extra;
	DpKeyState *ks = PG_ARGISNULL(0) ? NULL : (DpKeyState *) PG_GETARG_POINTER(0);
	JsonbParseState *ps = NULL;
	JsonbValue *res;

	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	if (ks != NULL)
	{
		Aggref	   *aggref = AggGetAggref(fcinfo);

		if (aggref == NULL || linitial_oid(aggref->aggargtypes) != ks->ops.typid)
			DpStateCorrupt(hist_name, "The state's key type is not the aggregate's.");
		if (!ex->canon_ready)
		{
			/* a released label is its key's canonical spelling, never the first row's */
			MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(ex));
			const char *refusal;

			ex->canon = DpCanonPlan(ks->ops.typid, exprTypmod((Node *) linitial_node(TargetEntry, aggref->args)->expr),
									PG_GET_COLLATION(), &refusal);
			ex->canon_ready = true;
			MemoryContextSwitchTo(old);
		}
		for (int i = 0; i < ks->nkeys; i++)
		{
			int64		n = DpNoisyCount(site, ks->counts[i]);

			if (n >= ex->threshold)
				DpJsonbPut(&ps, DpKeyLabel(&ks->ops, DpCanonValue(ex->canon, ks->keys[i])), n);
		}
	}
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	PG_RETURN_JSONB_P(JsonbValueToJsonb(res));
}

/* dp_pg.partition_threshold(mech): the release threshold of dp_histogram(key, mech). */
Datum
dp_partition_threshold(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = (DpMechanism *) PG_GETARG_POINTER(0);
	DpNoisePlan plan;
	char		err[256];

	if (!dp_mechanism_validate(mech, err, sizeof(err)))
		DpReportMechanismError(err);
	PG_RETURN_INT64(DpPartitionPlan(&plan, mech, 1));
}

/*
 * dp_pg.partition_keep(mechanism): private partition selection for GROUP BY
 * on a key that is not public (the guard adds it to HAVING).  It counts the
 * group's rows and is true iff count + noise reaches the threshold tau of
 * dp_histogram(key, mech); so releasing the set of groups costs (epsilon,
 * delta) of the mechanism, charged like any dp aggregate call site.
 */
PG_FUNCTION_INFO_V1(dp_partition_keep_final);

const DpAggKind dp_partition_keep_kind = {
	.name = "partition selection",
	.finalfn = dp_partition_keep_final,
	.nargs = 1,
	.bounded_extra = 1,
	.mech_argno = 0,
	.nconst = 0,
	.selects_groups = true,
	.thresholded = true,
	.plan = DpHistKeysPlan,
	.bar = DpHistKeysBar,
};

/* Final function of dp_pg.partition_keep: is the group's noisy count at least tau? */
Datum
dp_partition_keep_final(PG_FUNCTION_ARGS)
{
	DpCallSite *site = DpCallSiteForFinal(fcinfo, &dp_partition_keep_kind);
	DpHistSite *ex = site->extra;
	int64		count = PG_ARGISNULL(0) ? 0 : PG_GETARG_INT64(0);

	PG_RETURN_BOOL(DpNoisyCount(site, count) >= ex->threshold);
}

/*
 * Unit-bounded forms (guard.c, privacy units).  dp_pg.bounded_histogram_*
 * take the arguments of their dp_histogram form and then (weight, rows,
 * groups): each input row is one (unit, cell) of the bounded query and adds
 * its weight — the unit's row count in that cell — capped at rows.  Noise
 * and threshold are planned for sensitivity rows per cell, with the
 * mechanism split over groups cells (cost.c).
 */
PG_FUNCTION_INFO_V1(dp_histogram_bins_wtrans);
PG_FUNCTION_INFO_V1(dp_histogram_width_wtrans);
PG_FUNCTION_INFO_V1(dp_histogram_keys_wtrans);
PG_FUNCTION_INFO_V1(dp_histogram_bucket);

/* The weight of a bounded-form row: argument argno capped to [0, argument argno + 1]. */
static inline int64
DpBoundedWeight(FunctionCallInfo fcinfo, int argno)
{
	int64		w;
	int64		rows;

	if (PG_ARGISNULL(argno) || PG_ARGISNULL(argno + 1))
		return 0;
	w = PG_GETARG_INT64(argno);
	rows = PG_GETARG_INT64(argno + 1);
	if (w > rows)
		w = rows;
	return w > 0 ? w : 0;
}

/* Add weight w to bin b of a histogram state, or ERROR 22003. */
static void
DpHistAddWeight(DpHistState *state, int b, int64 w)
{
	if (pg_add_s64_overflow(state->counts[b], w, &state->counts[b]) ||
		pg_add_s64_overflow(state->total, w, &state->total))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
}

/* Transition of dp_pg.bounded_histogram_bins(key, bins, mech, weight, rows, groups). */
Datum
dp_histogram_bins_wtrans(PG_FUNCTION_ARGS)
{
	DpHistState *state;
	DpBinIndex *bx = DpBinIndexForCall(fcinfo);
	int64		w = DpBoundedWeight(fcinfo, 4);

	if (PG_ARGISNULL(0))
		state = DpHistStateNew(DpAggMemoryContext(fcinfo, "dp_histogram_bins_wtrans"), bx->nbins);
	else
		state = (DpHistState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1) && w > 0)
	{
		Datum		key = DpKeyPrepare(&bx->ops, PG_GETARG_DATUM(1));
		int			b = DpKeyIndexFind(&bx->index, &bx->ops, bx->elems, bx->hashes,
									   key, DpKeyHash(&bx->ops, key), NULL);

		if (b >= 0)
			DpHistAddWeight(state, b, w);
	}
	PG_RETURN_POINTER(state);
}

/* Transition of dp_pg.bounded_histogram_width(x, lower, upper, nbins, mech, weight, rows, groups). */
Datum
dp_histogram_width_wtrans(PG_FUNCTION_ARGS)
{
	DpHistState *state;
	DpWidthBins *wb = DpWidthBinsForCall(fcinfo, 2);
	int64		w = DpBoundedWeight(fcinfo, 6);

	if (PG_ARGISNULL(0))
		state = DpHistStateNew(DpAggMemoryContext(fcinfo, "dp_histogram_width_wtrans"), wb->nbins);
	else
		state = (DpHistState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1) && w > 0)
	{
		double		x = PG_GETARG_FLOAT8(1);

		if (!isnan(x))
			DpHistAddWeight(state, DpWidthBin(wb, x), w);
	}
	PG_RETURN_POINTER(state);
}

/* Transition of dp_pg.bounded_histogram_keys(key, mech, weight, rows, groups). */
Datum
dp_histogram_keys_wtrans(PG_FUNCTION_ARGS)
{
	DpKeyState *ks;
	int64		w = DpBoundedWeight(fcinfo, 3);

	if (PG_ARGISNULL(0))
	{
		MemoryContext aggcxt = DpAggMemoryContext(fcinfo, "dp_histogram_keys_wtrans");

		ks = DpKeyStateNew(aggcxt, get_fn_expr_argtype(fcinfo->flinfo, 1), PG_GET_COLLATION());
		DpKeyIndexInit(&ks->index, aggcxt, 0);
	}
	else
		ks = (DpKeyState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1) && w > 0)
		DpKeyStateAdd(ks, DpKeyPrepare(&ks->ops, PG_GETARG_DATUM(1)), w);
	PG_RETURN_POINTER(ks);
}

/*
 * dp_pg.histogram_bucket(x, lower, upper, nbins): the bin (0-based) that
 * dp_histogram(x, lower, upper, nbins, mech) counts x in, NULL for NaN.  The
 * bounded form groups a unit's rows by it, so that a unit's cells are
 * exactly the bins.  Bounds and bin count must be constant (as in the
 * aggregate); the edges are cached.  Not strict: NULL bounds are an ERROR.
 */
Datum
dp_histogram_bucket(PG_FUNCTION_ARGS)
{
	DpWidthBins *wb = DpWidthBinsForCall(fcinfo, 1);
	double		x;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	x = PG_GETARG_FLOAT8(0);
	if (isnan(x))
		PG_RETURN_NULL();
	PG_RETURN_INT32(DpWidthBin(wb, x));
}
