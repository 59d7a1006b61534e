/*
 * agg_units.c — a privacy unit's cells, kept while aggregating.
 *
 * A bounded dp query keeps at most g cells (GROUP BY keys or histogram
 * bins) per privacy unit (guard/units.c).  Instead of aggregating every
 * (unit, cell) pair and then sorting all of them by a random priority, the
 * guard groups the rows by unit alone and aggregates them with
 *
 *   dp_pg.unit_cells(NULL::internal, "g:spec", seed, unit, key..., accumulator args...)
 *
 * whose state is the unit's kept cells: at most g of them, each with its
 * keys and its accumulators (count(*), count(x), sums, min).  A cell's
 * priority is a keyed hash of (unit, keys) under a secret 64-bit seed drawn
 * from OpenSSL once per execution, ties broken by the keys' btree order; the
 * state holds the g cells of least (priority, keys) seen so far.  A row of a
 * held cell is accumulated; a row of a new cell either takes a free place,
 * replaces the worst held cell (which is dropped with its partial sums) or is
 * dropped.  Since priorities are fixed per cell and the worst held cell only
 * gets better, a cell is admitted at its first row or never, and a dropped
 * cell never comes back: the kept cells are exactly the unit's g least cells,
 * each with all of its rows — the same answer as ranking every cell, without
 * the sort, in g cells of memory per unit (inside PostgreSQL's hash
 * aggregation, which spills to disk beyond work_mem).
 *
 * Privacy does not rest on the priorities: whatever the rule, each unit
 * keeps at most g cells chosen from its own rows only (the seed is the
 * query's, the order a strict total order on the unit's own cells), and the
 * per-cell values are clamped above this level.  The priorities make the
 * choice a uniformly random one for utility.
 *
 * dp_pg.unit_cell(state, field, witness) then returns, one row per kept cell,
 * field number `field` (keys first, then accumulators) as the type of
 * witness; the guard calls it once per field in one select list, so the
 * calls advance together.  The aggregate returns `internal`, so only these
 * functions can consume it; neither can be called by an analyst (the guard
 * allows no dp_pg-internal function in analysts' SQL).
 *
 * Layer aggregates/ (docs/development.md): may call the release path
 * (call sites, cache), the ledger, common/ and the numeric core.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "port/pg_bitutils.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/typcache.h"

#include "aggregates.h"
#include "guc.h"
#include "core/random.h"

#define DP_UNIT_CELLS_MAGIC 0x44505543	/* "DPUC" */
#define DP_UNIT_MAX_ACCS 32		/* accumulators of one call */
#define DP_UNIT_MAX_FIELDS (INDEX_MAX_KEYS + 2 * DP_UNIT_MAX_ACCS)	/* keys and accumulators' fields */

typedef enum DpAccKind
{
	DP_ACC_COUNT_STAR = 'c',	/* count(*): args (filter) */
	DP_ACC_COUNT = 'n',			/* count(x): (x, filter) */
	DP_ACC_FSUM = 'f',			/* unit_float_sum(float8): (x, filter) */
	DP_ACC_ISUM = 'i',			/* sum(int2 / int4) -> int8: (x, filter) */
	DP_ACC_LSUM = 'l',			/* sum(int8) -> numeric: (x, filter) */
	DP_ACC_FMIN = 'm',			/* min(float8): (x, filter) */

	/*
	 * A bounded sum's two inner aggregates in one (guard/units.c): the sum
	 * of least(greatest(x, lo), hi) over the values x that are not NULL (nor
	 * NaN), and how many they are — two fields, the sum as 'f' / 'i' / 'l'
	 * gives it and the count as count(x).  Args (x, lo, hi, filter).  The
	 * clamp is GREATEST's and LEAST's (the type's btree order, a NULL bound
	 * skipped), so the fields equal those of
	 *   sum(least(greatest(x, lo), hi)) FILTER (WHERE f AND x <> 'NaN'),
	 *   count(x) FILTER (WHERE f AND x <> 'NaN')   (x IS NOT NULL for integers)
	 * without evaluating the clamp, the NaN test, x and f twice per row.
	 * The count is kept in 32 bits, saturating: it is only ever read as
	 * least(count, r), r <= DP_MAX_UNIT_ROWS < 2^32 - 1, which saturation
	 * leaves exact; it lives in the cell's padding, so that a cell of one
	 * key and one such sum takes 24 bytes, as a plain sum's.
	 */
	DP_ACC_FCLAMP = 'F',		/* float8 */
	DP_ACC_ICLAMP = 'I',		/* int2 / int4, summed as int8 */
	DP_ACC_LCLAMP = 'L'			/* int8, summed as numeric */
} DpAccKind;

#define DpAccIsClamp(k) ((k) == DP_ACC_FCLAMP || (k) == DP_ACC_ICLAMP || (k) == DP_ACC_LCLAMP)
#define DpAccIsWide(k) ((k) == DP_ACC_ISUM || (k) == DP_ACC_LSUM || (k) == DP_ACC_ICLAMP || (k) == DP_ACC_LCLAMP)

/* A key column of the cells. */
typedef struct DpCellKey
{
	Oid			type;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	bool		bitwise;		/* equality is equality of the Datum */
	int			argno;			/* its argument of the transition function */
	int			allowed_argno;	/* its declared public keys' array argument, or -1 */
	int			nallowed;		/* those keys (NULLs left out), sorted; read at the first row */
	Datum	   *allowed;
	FmgrInfo	eq;
	FmgrInfo	cmp;
	FmgrInfo	hash;			/* extended (seeded) hash */
} DpCellKey;

typedef struct DpCellAcc
{
	char		kind;
	bool		int2;			/* sum of int2 (else int4) */
	int			argno;			/* x (none for count(*)) */
	int			lo_argno;		/* clamped sums: the bounds */
	int			hi_argno;
	int			filter_argno;	/* its FILTER, or -1 (none) */
	int			count_slot;		/* clamped sums: their count's place in the cell */
} DpCellAcc;

/* What one call site's cells look like, and its seed: per execution. */
typedef struct DpCellShape
{
	int32		magic;			/* DP_UNIT_CELLS_MAGIC */
	int32		groups;			/* g */
	int			nkeys;
	int			naccs;
	DpCellKey	keys[INDEX_MAX_KEYS];
	DpCellAcc	accs[DP_UNIT_MAX_ACCS];
	FmgrInfo	unit_hash;
	Oid			unit_collation;
	uint64		seed;
	bool		broken;			/* test builds: priorities of the keys alone */
	int			nfields;		/* fields of the accumulators (2 for a clamped sum) */
	int8		field_acc[DP_UNIT_MAX_FIELDS];	/* per field: its accumulator */
	bool		field_count[DP_UNIT_MAX_FIELDS];	/* ... and whether it is a clamped sum's count */
	int			ncounts;		/* 32-bit counts of the clamped sums */
	Size		count_start;	/* offset of the counts in a cell */
	Size		state_start;	/* offset of what a partial state carries besides the keys */
	Size		acc_start;		/* offset of the accumulators in a cell */
	Size		acc_off[DP_UNIT_MAX_ACCS];	/* each one's, from acc_start */
	Size		accbytes;		/* all of them */
	Size		cellsize;
} DpCellShape;

/*
 * An accumulator: 8 bytes (a count, a float sum or min), or 16 for an
 * integer sum (low, high 64 bits) — only integer sums touch hi.
 */
typedef struct DpAcc
{
	union
	{
		int64		n;			/* count(*), count(x) */
		double		f;			/* float sum, min */
		uint64		lo;			/* integer sum: low 64 bits */
	}			u;
	int64		hi;				/* integer sum: high 64 bits */
} DpAcc;						/* whether a value was added: the cell's any flags */

static inline int128
DpAccInt(const DpAcc *a)
{
	return (int128) (((uint128) (uint64) a->hi << 64) | (uint128) a->u.lo);
}

static inline void
DpAccAddInt(DpAcc *a, int64 x)
{
	int128		v = DpAccInt(a) + x;

	a->u.lo = (uint64) v;
	a->hi = (int64) (v >> 64);
}

/*
 * One kept cell, shape->cellsize bytes: Datum keys[nkeys]; bool nulls[nkeys],
 * any[naccs]; uint32 counts[ncounts] (4-aligned); padding; the accumulators.
 * No priority is stored: it is recomputed from the unit's hash and the keys
 * when a full unit meets a new cell (a unit with more than g cells), which
 * keeps the per-unit state small — what decides how many units fit in
 * work_mem before hash aggregation spills.
 */
typedef char DpCell;

/*
 * A unit's state: this header with its cells right after it, in one chunk
 * that grows (repalloc) as cells are admitted.  16 bytes, so a unit with two
 * one-key count cells takes a 64-byte chunk.
 */
typedef struct DpUnitCells
{
	int32		ncells;
	uint32		unit_hash;		/* 32 bits of the unit's keyed hash */
	DpCellShape *shape;
	/* then, MAXALIGNed, room for ncells cells (DpUnitCellsRoom) */
} DpUnitCells;

#define DP_UNIT_CELLS_HEADER MAXALIGN(sizeof(DpUnitCells))
#define DpCellAt(st, i) ((DpCell *) ((char *) (st) + DP_UNIT_CELLS_HEADER + (Size) (i) * (st)->shape->cellsize))
#define DpUnitCellsSize(sh, n) (DP_UNIT_CELLS_HEADER + (Size) (n) * (sh)->cellsize)

/*
 * The cells a state of n cells has room for: 1, then doubling up to g, so
 * that growing to g cells copies O(g) cells in all.  Implied by n: the room
 * is the least power of two >= n (n >= 1), or g.
 */
static inline int32
DpUnitCellsRoom(int32 n, int32 g)
{
	uint32		room = n <= 1 ? 1 : pg_nextpower2_32((uint32) n);

	return (int32) Min(room, (uint32) g);
}

static inline Datum *
DpCellKeys(DpCell *c)
{
	return (Datum *) c;
}

static inline bool *
DpCellNulls(DpCell *c, const DpCellShape *sh)
{
	return (bool *) (c + sizeof(Datum) * sh->nkeys);
}

static inline DpAcc *
DpCellAccAt(DpCell *c, const DpCellShape *sh, int i)
{
	return (DpAcc *) (c + sh->acc_start + sh->acc_off[i]);
}

/* Per accumulator: was a value added (else its aggregate is NULL)? */
static inline bool *
DpCellAny(DpCell *c, const DpCellShape *sh)
{
	return (bool *) (c + sizeof(Datum) * sh->nkeys + sh->nkeys);
}

/* A clamped sum's count of values (32 bits, saturating: see DP_ACC_FCLAMP). */
static inline uint32 *
DpCellCount(DpCell *c, const DpCellShape *sh, const DpCellAcc *a)
{
	return (uint32 *) (c + sh->count_start) + a->count_slot;
}

static inline void
DpCountAdd(uint32 *n, uint32 add)
{
	*n = (*n > PG_UINT32_MAX - add) ? PG_UINT32_MAX : *n + add;
}

/*
 * The layout of a cell of the shape (its keys and accumulators' kinds set),
 * and which accumulator each field reads.  ERROR for an unknown kind or too
 * many fields (a malformed spec or partial state).
 */
static void
DpShapeLayout(DpCellShape *sh)
{
	Size		off = 0;

	sh->magic = DP_UNIT_CELLS_MAGIC;
	sh->nfields = 0;
	sh->ncounts = 0;
	for (int i = 0; i < sh->naccs; i++)
	{
		DpCellAcc  *a = &sh->accs[i];
		int			nf = DpAccIsClamp(a->kind) ? 2 : 1;

		switch (a->kind)
		{
			case DP_ACC_COUNT_STAR:
			case DP_ACC_COUNT:
			case DP_ACC_FSUM:
			case DP_ACC_ISUM:
			case DP_ACC_LSUM:
			case DP_ACC_FMIN:
			case DP_ACC_FCLAMP:
			case DP_ACC_ICLAMP:
			case DP_ACC_LCLAMP:
				break;
			default:
				elog(ERROR, "dp_pg.unit_cells: unknown accumulator");
		}
		if (sh->nkeys + sh->nfields + nf > DP_UNIT_MAX_FIELDS)
			ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							errmsg("dp_pg.unit_cells: too many fields")));
		for (int f = 0; f < nf; f++)
		{
			sh->field_acc[sh->nfields] = (int8) i;
			sh->field_count[sh->nfields] = f == 1;
			sh->nfields++;
		}
		a->count_slot = DpAccIsClamp(a->kind) ? sh->ncounts++ : -1;
	}
	sh->state_start = sizeof(Datum) * sh->nkeys + sh->nkeys;
	sh->count_start = TYPEALIGN(sizeof(uint32), sh->state_start + sh->naccs);
	sh->acc_start = MAXALIGN(sh->count_start + sizeof(uint32) * sh->ncounts);
	for (int i = 0; i < sh->naccs; i++)
	{
		sh->acc_off[i] = off;
		off += DpAccIsWide(sh->accs[i].kind) ? sizeof(DpAcc) : sizeof(int64);
	}
	sh->accbytes = off;
	sh->cellsize = MAXALIGN(sh->acc_start + off);
}

/* splitmix64's finalizer: a bijection that mixes all bits. */
static inline uint64
DpMix64(uint64 x)
{
	x ^= x >> 30;
	x *= UINT64CONST(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64CONST(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

/* Types whose equality operator is equality of the Datum. */
static bool
DpBitwiseEqualType(Oid type)
{
	switch (type)
	{
		case BOOLOID:
		case CHAROID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return true;
		default:
			return false;
	}
}

/* The hash, equality and order of a key type, or ERROR. */
static void
DpSetupKey(DpCellKey *k, Oid type, Oid collation, MemoryContext mcxt)
{
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_EQ_OPR_FINFO | TYPECACHE_CMP_PROC_FINFO |
										   TYPECACHE_HASH_EXTENDED_PROC_FINFO);

	if (!OidIsValid(tc->eq_opr_finfo.fn_oid) || !OidIsValid(tc->cmp_proc_finfo.fn_oid) ||
		!OidIsValid(tc->hash_extended_proc_finfo.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("dp_pg.unit_cells: type %s has no equality, order or extended hash", format_type_be(type))));
	k->type = type;
	k->collation = collation;
	k->allowed_argno = -1;
	get_typlenbyval(type, &k->typlen, &k->typbyval);
	k->bitwise = DpBitwiseEqualType(type);
	fmgr_info_copy(&k->eq, &tc->eq_opr_finfo, mcxt);
	fmgr_info_copy(&k->cmp, &tc->cmp_proc_finfo, mcxt);
	fmgr_info_copy(&k->hash, &tc->hash_extended_proc_finfo, mcxt);
}

/*
 * The order the declared public keys are sorted and searched in: the type's,
 * or for a type whose equality is the Datum's (DpBitwiseEqualType) the
 * Datums' own, which finds the same keys without a function call.
 */
static inline int
DpAllowedOrder(const DpCellKey *k, Datum a, Datum b)
{
	if (k->bitwise)
		return a < b ? -1 : a > b ? 1 : 0;
	return DatumGetInt32(FunctionCall2Coll((FmgrInfo *) &k->cmp, k->collation, a, b));
}

static int
DpAllowedCompare(const void *a, const void *b, void *arg)
{
	return DpAllowedOrder((DpCellKey *) arg, *(const Datum *) a, *(const Datum *) b);
}

/* A key's declared public keys, sorted (DpAllowedOrder), copied into mcxt. */
static void
DpSetupAllowed(DpCellKey *k, ArrayType *arr, MemoryContext mcxt)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			kept = 0;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	MemoryContext old = MemoryContextSwitchTo(mcxt);

	get_typlenbyvalalign(k->type, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, k->type, typlen, typbyval, typalign, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			elems[kept++] = k->typbyval ? elems[i] : datumCopy(elems[i], false, k->typlen);
	qsort_arg(elems, kept, sizeof(Datum), DpAllowedCompare, k);
	k->allowed = elems;
	k->nallowed = kept;
	MemoryContextSwitchTo(old);
}

/* Is a key value among its declared public keys (NULL never is)? */
static bool
DpKeyAllowed(DpCellKey *k, Datum v, bool isnull)
{
	int			lo = 0;
	int			hi = k->nallowed - 1;

	if (isnull)
		return false;
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = DpAllowedOrder(k, v, k->allowed[mid]);

		if (c == 0)
			return true;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return false;
}

/*
 * Read the call's shape (the constant spec and seed), once per execution.
 * spec: "<g>:" then "k<collation oid>," per key ("k<oid>=," when the key's
 * declared public keys follow it as an array), then one letter per
 * accumulator, followed by "?" when it has a FILTER argument.  Arguments:
 * state, dummy, spec, seed, the unit, the keys (each with its public keys
 * after it, with "="), then per accumulator its value (not for c), its
 * bounds (F, I, L) and its filter (with "?").  The fewer the arguments, the
 * less PostgreSQL does per row.
 */
static DpCellShape *
DpCellShapeOf(FunctionCallInfo fcinfo)
{
	DpCellShape *sh = (DpCellShape *) fcinfo->flinfo->fn_extra;
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	const char *spec;
	const char *p;
	int			argno = 4;		/* state, dummy, spec, seed, then the unit */
	int			nargs = PG_NARGS();
	Oid			unit_type;

	if (sh != NULL)
		return sh;
	if (PG_ARGISNULL(2) || PG_ARGISNULL(3) || nargs < 5)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("dp_pg.unit_cells: spec and seed must not be NULL and the unit must be given")));
	sh = MemoryContextAllocZero(mcxt, sizeof(DpCellShape));
	spec = text_to_cstring(PG_GETARG_TEXT_PP(2));
	{
		char	   *end;
		long		g = strtol(spec, &end, 10);

		if (end == spec || *end != ':' || g < 1 || g > 1000000)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("dp_pg.unit_cells: malformed spec \"%s\" (groups between 1 and 1000000 first)", spec)));
		sh->groups = (int32) g;
		p = end + 1;
	}
	unit_type = get_fn_expr_argtype(fcinfo->flinfo, argno);
	{
		TypeCacheEntry *tc = lookup_type_cache(unit_type, TYPECACHE_HASH_EXTENDED_PROC_FINFO);

		if (!OidIsValid(tc->hash_extended_proc_finfo.fn_oid))
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
							errmsg("dp_pg.unit_cells: type %s has no extended hash", format_type_be(unit_type))));
		fmgr_info_copy(&sh->unit_hash, &tc->hash_extended_proc_finfo, mcxt);
		sh->unit_collation = get_typcollation(unit_type);
	}
	argno++;
	/* k<collation oid> per key, then one letter per accumulator */
	while (*p == 'k')
	{
		char	   *end;
		unsigned long coll = strtoul(p + 1, &end, 10);

		if (end == p + 1 || sh->nkeys >= INDEX_MAX_KEYS || argno >= nargs)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("dp_pg.unit_cells: malformed spec \"%s\"", spec)));
		DpSetupKey(&sh->keys[sh->nkeys], get_fn_expr_argtype(fcinfo->flinfo, argno), (Oid) coll, mcxt);
		sh->keys[sh->nkeys].argno = argno++;
		sh->keys[sh->nkeys].allowed_argno = -1;
		if (*end == '=')
		{
			/* the key's declared public keys: an array of its type, a constant */
			Oid			at = argno < nargs ? get_fn_expr_argtype(fcinfo->flinfo, argno) : InvalidOid;

			if (!OidIsValid(at) || get_element_type(at) != sh->keys[sh->nkeys].type || PG_ARGISNULL(argno))
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("dp_pg.unit_cells: the public keys of key %d are not an array of its type",
									   sh->nkeys + 1)));
			DpSetupAllowed(&sh->keys[sh->nkeys], PG_GETARG_ARRAYTYPE_P(argno), mcxt);
			sh->keys[sh->nkeys].allowed_argno = argno++;
			end++;
		}
		if (*end == ',')
			end++;
		sh->nkeys++;
		p = end;
	}
	for (; *p; p++)
	{
		DpCellAcc  *a;
		Oid			want = InvalidOid;

		if (sh->naccs >= DP_UNIT_MAX_ACCS)
			ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							errmsg("dp_pg.unit_cells: too many accumulators")));
		a = &sh->accs[sh->naccs];
		a->kind = *p;
		a->filter_argno = -1;
		a->lo_argno = a->hi_argno = -1;
		switch (*p)
		{
			case DP_ACC_COUNT_STAR:
				break;
			case DP_ACC_COUNT:
				want = InvalidOid;	/* any type */
				break;
			case DP_ACC_FSUM:
			case DP_ACC_FMIN:
			case DP_ACC_FCLAMP:
				want = FLOAT8OID;
				break;
			case DP_ACC_ISUM:
			case DP_ACC_ICLAMP:
				want = INT4OID;
				break;
			case DP_ACC_LSUM:
			case DP_ACC_LCLAMP:
				want = INT8OID;
				break;
			default:
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("dp_pg.unit_cells: malformed spec \"%s\"", spec)));
		}
		a->argno = argno;
		if (*p != DP_ACC_COUNT_STAR)
		{
			/* x, and the bounds of a clamped sum: all of one type */
			int			nvals = DpAccIsClamp(*p) ? 3 : 1;

			if (argno + nvals > nargs)
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("dp_pg.unit_cells: too few arguments for spec \"%s\"", spec)));
			for (int v = 0; v < nvals; v++)
			{
				Oid			t = get_fn_expr_argtype(fcinfo->flinfo, argno + v);

				if ((*p == DP_ACC_ISUM || *p == DP_ACC_ICLAMP) && t == INT2OID && (v == 0 || a->int2))
				{
					a->int2 = true;
					t = INT4OID;
				}
				else if (v > 0 && a->int2)
					t = InvalidOid; /* int2 x, other bounds */
				if (OidIsValid(want) && t != want)
					ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
									errmsg("dp_pg.unit_cells: accumulator %c takes %s, not %s", *p,
										   format_type_be(want), format_type_be(get_fn_expr_argtype(fcinfo->flinfo, argno + v)))));
			}
			if (nvals == 3)
			{
				a->lo_argno = argno + 1;
				a->hi_argno = argno + 2;
			}
			argno += nvals;
		}
		/* "?": a FILTER argument follows */
		if (p[1] == '?')
		{
			p++;
			if (argno >= nargs || get_fn_expr_argtype(fcinfo->flinfo, argno) != BOOLOID)
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("dp_pg.unit_cells: a FILTER of \"%s\" is not boolean", spec)));
			a->filter_argno = argno++;
		}
		sh->naccs++;
	}
	if (argno != nargs)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("dp_pg.unit_cells: %d arguments do not match spec \"%s\"", nargs, spec)));
	DpShapeLayout(sh);
	/*
	 * The seed of the execution: dp_pg.unit_seed(), bound to one value per
	 * execution before it starts (callsite.c), so that the workers of a
	 * parallel plan give every cell the same priority; read at the first row.
	 */
	sh->seed = (uint64) PG_GETARG_INT64(3);
	if (dp_debug_unit_cells == DP_UNIT_CELLS_BROKEN)
	{
		/* the positive control of the tests: same priorities for every unit and query */
		sh->broken = true;
		sh->seed = 0;
	}
	fcinfo->flinfo->fn_extra = sh;
	return sh;
}

/* Equality of two cells' keys (NULLs equal, as GROUP BY). */
static inline bool
DpKeysEqual(const DpCellShape *sh, const Datum *ka, const bool *na, const Datum *kb, const bool *nb)
{
	for (int i = 0; i < sh->nkeys; i++)
	{
		const DpCellKey *k = &sh->keys[i];

		if (na[i] != nb[i])
			return false;
		if (na[i])
			continue;
		if (k->bitwise)
		{
			if (ka[i] != kb[i])
				return false;
		}
		else if (!DatumGetBool(FunctionCall2Coll((FmgrInfo *) &k->eq, k->collation, ka[i], kb[i])))
			return false;
	}
	return true;
}

/* Order of two cells of one unit: priority, then keys (NULLs last). */
static int
DpCellCompare(const DpCellShape *sh, uint64 prio_a, const Datum *ka, const bool *na,
			  uint64 prio_b, const Datum *kb, const bool *nb)
{
	if (prio_a != prio_b)
		return prio_a < prio_b ? -1 : 1;
	for (int i = 0; i < sh->nkeys; i++)
	{
		int32		c;

		if (na[i] || nb[i])
		{
			if (na[i] && nb[i])
				continue;
			return na[i] ? 1 : -1;
		}
		c = DatumGetInt32(FunctionCall2Coll((FmgrInfo *) &sh->keys[i].cmp, sh->keys[i].collation, ka[i], kb[i]));
		if (c != 0)
			return c < 0 ? -1 : 1;
	}
	return 0;
}

static void
DpAccumulate(const DpCellShape *sh, DpCell *c, FunctionCallInfo fcinfo)
{
	bool	   *any = DpCellAny(c, sh);

	for (int i = 0; i < sh->naccs; i++)
	{
		const DpCellAcc *a = &sh->accs[i];
		DpAcc	   *acc = DpCellAccAt(c, sh, i);
		int			f = a->filter_argno;

		if (f >= 0 && (PG_ARGISNULL(f) || !PG_GETARG_BOOL(f)))
			continue;
		if (a->kind == DP_ACC_COUNT_STAR)
		{
			acc->u.n++;
			continue;
		}
		if (PG_ARGISNULL(a->argno))
			continue;
		switch (a->kind)
		{
			case DP_ACC_FCLAMP:
				{
					/* NaN skipped (x <> 'NaN'); GREATEST, then LEAST, in float8's btree order */
					float8		x = PG_GETARG_FLOAT8(a->argno);

					if (isnan(x))
						continue;
					if (!PG_ARGISNULL(a->lo_argno) && float8_lt(x, PG_GETARG_FLOAT8(a->lo_argno)))
						x = PG_GETARG_FLOAT8(a->lo_argno);
					if (!PG_ARGISNULL(a->hi_argno) && float8_gt(x, PG_GETARG_FLOAT8(a->hi_argno)))
						x = PG_GETARG_FLOAT8(a->hi_argno);
					/* IEEE addition as dp_pg.unit_float_sum: no overflow ERROR */
					acc->u.f = any[i] ? acc->u.f + x : x;
					DpCountAdd(DpCellCount(c, sh, a), 1);
				}
				break;
			case DP_ACC_ICLAMP:
				{
					int32		x = a->int2 ? PG_GETARG_INT16(a->argno) : PG_GETARG_INT32(a->argno);

					if (!PG_ARGISNULL(a->lo_argno))
					{
						int32		lo = a->int2 ? PG_GETARG_INT16(a->lo_argno) : PG_GETARG_INT32(a->lo_argno);

						if (x < lo)
							x = lo;
					}
					if (!PG_ARGISNULL(a->hi_argno))
					{
						int32		hi = a->int2 ? PG_GETARG_INT16(a->hi_argno) : PG_GETARG_INT32(a->hi_argno);

						if (x > hi)
							x = hi;
					}
					DpAccAddInt(acc, x);
					DpCountAdd(DpCellCount(c, sh, a), 1);
				}
				break;
			case DP_ACC_LCLAMP:
				{
					int64		x = PG_GETARG_INT64(a->argno);

					if (!PG_ARGISNULL(a->lo_argno) && x < PG_GETARG_INT64(a->lo_argno))
						x = PG_GETARG_INT64(a->lo_argno);
					if (!PG_ARGISNULL(a->hi_argno) && x > PG_GETARG_INT64(a->hi_argno))
						x = PG_GETARG_INT64(a->hi_argno);
					DpAccAddInt(acc, x);
					DpCountAdd(DpCellCount(c, sh, a), 1);
				}
				break;
			case DP_ACC_COUNT:
				acc->u.n++;
				break;
			case DP_ACC_FSUM:
				/* IEEE addition as dp_pg.unit_float_sum: no overflow ERROR */
				acc->u.f = any[i] ? acc->u.f + PG_GETARG_FLOAT8(a->argno) : PG_GETARG_FLOAT8(a->argno);
				break;
			case DP_ACC_FMIN:
				{
					float8		x = PG_GETARG_FLOAT8(a->argno);

					if (!any[i] || float8_lt(x, acc->u.f))
						acc->u.f = x;
				}
				break;
			case DP_ACC_ISUM:
				DpAccAddInt(acc, a->int2 ? PG_GETARG_INT16(a->argno) : PG_GETARG_INT32(a->argno));
				break;
			case DP_ACC_LSUM:
				DpAccAddInt(acc, PG_GETARG_INT64(a->argno));
				break;
		}
		any[i] = true;
	}
}

/* Free a cell's by-reference keys. */
static void
DpCellFreeKeys(const DpCellShape *sh, DpCell *c)
{
	Datum	   *ck = DpCellKeys(c);
	bool	   *cn = DpCellNulls(c, sh);

	for (int i = 0; i < sh->nkeys; i++)
		if (!cn[i] && !sh->keys[i].typbyval)
			pfree(DatumGetPointer(ck[i]));
}

/* A new state for the shape, in cxt, with room for one cell. */
static DpUnitCells *
DpUnitCellsNew(DpCellShape *sh, MemoryContext cxt, uint32 unit_hash)
{
	DpUnitCells *st = MemoryContextAllocZero(cxt, DpUnitCellsSize(sh, 1));

	st->shape = sh;
	st->unit_hash = unit_hash;
	return st;
}

/* The held cell with these keys, or NULL. */
static inline DpCell *
DpFindCell(DpUnitCells *st, const Datum *keys, const bool *nulls)
{
	const DpCellShape *sh = st->shape;

	for (int i = 0; i < st->ncells; i++)
	{
		DpCell	   *c = DpCellAt(st, i);

		if (DpKeysEqual(sh, DpCellKeys(c), DpCellNulls(c, sh), keys, nulls))
			return c;
	}
	return NULL;
}

/* The priority of a unit's cell: a keyed hash of (unit, keys). */
static uint64
DpCellPriority(const DpCellShape *sh, uint32 unit_hash, const Datum *keys, const bool *nulls)
{
	uint64		prio = DpMix64(unit_hash);

	for (int i = 0; i < sh->nkeys; i++)
	{
		const DpCellKey *k = &sh->keys[i];
		uint64		h = nulls[i] ? UINT64CONST(0x9e3779b97f4a7c15) :
			DatumGetUInt64(FunctionCall2Coll((FmgrInfo *) &k->hash, k->collation, keys[i],
											 UInt64GetDatum(sh->seed + i + 1)));

		prio = DpMix64(prio ^ DpMix64(h + i));
	}
	return DpMix64(prio ^ sh->seed);
}

/*
 * Offer a cell that is not held: it takes a free place (the state's room may
 * double, so *stp may move), or replaces the held cell of greatest
 * (priority, keys) if it is less than that one.  The zeroed cell to
 * accumulate into, with keys copied into keycxt; NULL if the cell is not
 * kept.  Priorities are computed only here, when the unit is full.
 */
static DpCell *
DpOfferCell(DpUnitCells **stp, const Datum *keys, const bool *nulls, MemoryContext keycxt)
{
	DpUnitCells *st = *stp;
	const DpCellShape *sh = st->shape;
	DpCell	   *c;

	if (st->ncells < sh->groups)
	{
		/* full room: double it (up to g); repalloc keeps a chunk that fits */
		if (st->ncells > 0 && st->ncells == DpUnitCellsRoom(st->ncells, sh->groups))
		{
			st = repalloc(st, DpUnitCellsSize(sh, Min((int64) st->ncells * 2, (int64) sh->groups)));
			*stp = st;
		}
		c = DpCellAt(st, st->ncells);
		st->ncells++;
	}
	else
	{
		int			worst = 0;
		uint64		worst_prio = 0;
		uint64		prio = DpCellPriority(sh, st->unit_hash, keys, nulls);

		for (int i = 0; i < st->ncells; i++)
		{
			DpCell	   *a = DpCellAt(st, i);
			DpCell	   *w = DpCellAt(st, worst);
			uint64		a_prio = DpCellPriority(sh, st->unit_hash, DpCellKeys(a), DpCellNulls(a, sh));

			if (i == 0 || DpCellCompare(sh, a_prio, DpCellKeys(a), DpCellNulls(a, sh),
										worst_prio, DpCellKeys(w), DpCellNulls(w, sh)) > 0)
			{
				worst = i;
				worst_prio = a_prio;
			}
		}
		c = DpCellAt(st, worst);
		if (DpCellCompare(sh, prio, keys, nulls, worst_prio, DpCellKeys(c), DpCellNulls(c, sh)) >= 0)
			return NULL;		/* never kept: its rows are dropped */
		DpCellFreeKeys(sh, c);
	}
	memset(c, 0, sh->cellsize);
	for (int i = 0; i < sh->nkeys; i++)
	{
		DpCellNulls(c, sh)[i] = nulls[i];
		if (nulls[i] || sh->keys[i].typbyval)
			DpCellKeys(c)[i] = keys[i];
		else
		{
			MemoryContext old = MemoryContextSwitchTo(keycxt);

			DpCellKeys(c)[i] = datumCopy(keys[i], false, sh->keys[i].typlen);
			MemoryContextSwitchTo(old);
		}
	}
	return c;
}

/* 32 bits of the unit's keyed hash (argument 4; 0 for a NULL unit or the broken control). */
static uint32
DpUnitHash(const DpCellShape *sh, FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(4) || sh->broken)
		return 0;
	return (uint32) DatumGetUInt64(FunctionCall2Coll((FmgrInfo *) &sh->unit_hash, sh->unit_collation,
													 PG_GETARG_DATUM(4), UInt64GetDatum(sh->seed)));
}

PG_FUNCTION_INFO_V1(dp_unit_cells_trans);

/*
 * Transition of dp_pg.unit_cells(internal, spec text, seed int8,
 * VARIADIC "any"): arguments after the seed are the unit, the keys (one per
 * 'k<collation>' of spec) and, per accumulator letter, its value (not for c)
 * and its filter (letters followed by '?').
 */
Datum
dp_unit_cells_trans(PG_FUNCTION_ARGS)
{
	DpUnitCells *st;
	DpCellShape *sh;
	DpCell	   *c;
	Datum		keys[INDEX_MAX_KEYS];
	bool		nulls[INDEX_MAX_KEYS];

	if (PG_ARGISNULL(0))
	{
		/*
		 * A unit's first row.  Only an aggregate's state is a non-NULL
		 * internal argument (SQL cannot make one), so the context is checked
		 * here, once per unit; the state's chunk is in the aggregate's
		 * context, where its keys are copied too (DpOfferCell).
		 */
		MemoryContext aggcxt;

		if (!AggCheckCallContext(fcinfo, &aggcxt))
			ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							errmsg("dp_pg.unit_cells_trans called in non-aggregate context")));
		sh = DpCellShapeOf(fcinfo);
		st = DpUnitCellsNew(sh, aggcxt, DpUnitHash(sh, fcinfo));
	}
	else
	{
		st = (DpUnitCells *) PG_GETARG_POINTER(0);
		sh = st->shape;
	}

	for (int i = 0; i < sh->nkeys; i++)
	{
		nulls[i] = PG_ARGISNULL(sh->keys[i].argno);
		keys[i] = nulls[i] ? (Datum) 0 : PG_GETARG_DATUM(sh->keys[i].argno);
	}
	/* a held cell accumulates; a new one is offered a place (if its keys may be released) */
	c = DpFindCell(st, keys, nulls);
	if (c == NULL)
	{
		for (int i = 0; i < sh->nkeys; i++)
			if (sh->keys[i].allowed_argno >= 0 && !DpKeyAllowed(&sh->keys[i], keys[i], nulls[i]))
				PG_RETURN_POINTER(st);	/* an undeclared key: the row takes no cell */
		c = DpOfferCell(&st, keys, nulls, GetMemoryChunkContext(st));
	}
	if (c != NULL)
		DpAccumulate(sh, c, fcinfo);
	PG_RETURN_POINTER(st);
}

/* Add accumulators b into a (the same cell of two partial states). */
static void
DpMergeAccs(const DpCellShape *sh, DpCell *ca, DpCell *cb)
{
	bool	   *aany = DpCellAny(ca, sh);
	const bool *bany = DpCellAny(cb, sh);

	for (int i = 0; i < sh->naccs; i++)
	{
		DpAcc	   *a = DpCellAccAt(ca, sh, i);
		const DpAcc *b = DpCellAccAt(cb, sh, i);

		switch (sh->accs[i].kind)
		{
			case DP_ACC_COUNT_STAR:
			case DP_ACC_COUNT:
				a->u.n += b->u.n;
				break;
			case DP_ACC_FSUM:
				if (bany[i])
					a->u.f = aany[i] ? a->u.f + b->u.f : b->u.f;
				break;
			case DP_ACC_FMIN:
				if (bany[i] && (!aany[i] || float8_lt(b->u.f, a->u.f)))
					a->u.f = b->u.f;
				break;
			case DP_ACC_ISUM:
			case DP_ACC_LSUM:
			case DP_ACC_ICLAMP:
			case DP_ACC_LCLAMP:
				{
					int128		v = DpAccInt(a) + DpAccInt(b);

					a->u.lo = (uint64) v;
					a->hi = (int64) (v >> 64);
				}
				break;
			case DP_ACC_FCLAMP:
				if (bany[i])
					a->u.f = aany[i] ? a->u.f + b->u.f : b->u.f;
				break;
		}
		if (DpAccIsClamp(sh->accs[i].kind))
			DpCountAdd(DpCellCount(ca, sh, &sh->accs[i]), *DpCellCount(cb, sh, &sh->accs[i]));
		aany[i] = aany[i] || bany[i];
	}
}

PG_FUNCTION_INFO_V1(dp_unit_cells_combine);

/*
 * Combine two partial states of one unit (parallel plans).  Every cell of
 * the unit's g least is among the g least of each part (a part has no more
 * cells less than it), so each part holds it with all its rows there, and
 * keeping the g least of the union gives exactly the serial cells.
 */
Datum
dp_unit_cells_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	DpUnitCells *a;
	DpUnitCells *b;
	const DpCellShape *sh;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("dp_pg.unit_cells_combine called in non-aggregate context")));
	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	b = (DpUnitCells *) PG_GETARG_POINTER(1);
	sh = b->shape;
	if (PG_ARGISNULL(0))
		a = DpUnitCellsNew(b->shape, aggcxt, b->unit_hash);
	else
		a = (DpUnitCells *) PG_GETARG_POINTER(0);
	for (int i = 0; i < b->ncells; i++)
	{
		DpCell	   *cb = DpCellAt(b, i);
		DpCell	   *ca = DpFindCell(a, DpCellKeys(cb), DpCellNulls(cb, sh));

		if (ca == NULL)
			ca = DpOfferCell(&a, DpCellKeys(cb), DpCellNulls(cb, sh), aggcxt);
		if (ca != NULL)
			DpMergeAccs(sh, ca, cb);
	}
	PG_RETURN_POINTER(a);
}

/*
 * Serialized state: a header that names the shape (groups, seed, key types
 * and collations, accumulator kinds), then the unit's hash, the cells'
 * count and per cell what it holds besides its keys (the any flags, the
 * counts and the accumulators, padding included: a cell is zeroed when it
 * is made) and its keys (datumSerialize).
 */
typedef struct DpCellsWireHeader
{
	int32		magic;
	int32		groups;
	uint64		seed;
	int32		nkeys;
	int32		naccs;
	bool		broken;
} DpCellsWireHeader;

PG_FUNCTION_INFO_V1(dp_unit_cells_serialize);

Datum
dp_unit_cells_serialize(PG_FUNCTION_ARGS)
{
	DpUnitCells *st;
	const DpCellShape *sh;
	DpCellsWireHeader h;
	Size		size;
	bytea	   *out;
	char	   *p;

	if (!AggCheckCallContext(fcinfo, NULL))
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("dp_pg.unit_cells_serialize called in non-aggregate context")));
	st = (DpUnitCells *) PG_GETARG_POINTER(0);
	sh = st->shape;
	memset(&h, 0, sizeof(h));
	h.magic = DP_UNIT_CELLS_MAGIC;
	h.groups = sh->groups;
	h.seed = sh->seed;
	h.nkeys = sh->nkeys;
	h.naccs = sh->naccs;
	h.broken = sh->broken;
	size = VARHDRSZ + sizeof(h) + sh->nkeys * (sizeof(Oid) * 2) + sh->naccs * 2 + sizeof(uint32) + sizeof(int32);
	for (int i = 0; i < st->ncells; i++)
	{
		DpCell	   *c = DpCellAt(st, i);

		size += sh->cellsize - sh->state_start;
		for (int k = 0; k < sh->nkeys; k++)
			size += datumEstimateSpace(DpCellKeys(c)[k], DpCellNulls(c, sh)[k], sh->keys[k].typbyval, sh->keys[k].typlen);
	}
	out = palloc(size);
	SET_VARSIZE(out, size);
	p = VARDATA(out);
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	for (int k = 0; k < sh->nkeys; k++)
	{
		memcpy(p, &sh->keys[k].type, sizeof(Oid));
		memcpy(p + sizeof(Oid), &sh->keys[k].collation, sizeof(Oid));
		p += sizeof(Oid) * 2;
	}
	for (int i = 0; i < sh->naccs; i++)
	{
		*p++ = sh->accs[i].kind;
		*p++ = sh->accs[i].int2 ? 1 : 0;
	}
	memcpy(p, &st->unit_hash, sizeof(uint32));
	p += sizeof(uint32);
	memcpy(p, &st->ncells, sizeof(int32));
	p += sizeof(int32);
	for (int i = 0; i < st->ncells; i++)
	{
		DpCell	   *c = DpCellAt(st, i);

		/* the any flags, the counts and the accumulators, as held */
		memcpy(p, c + sh->state_start, sh->cellsize - sh->state_start);
		p += sh->cellsize - sh->state_start;
		for (int k = 0; k < sh->nkeys; k++)
			datumSerialize(DpCellKeys(c)[k], DpCellNulls(c, sh)[k], sh->keys[k].typbyval, sh->keys[k].typlen, &p);
	}
	Assert(p == (char *) out + size);
	PG_RETURN_BYTEA_P(out);
}

PG_FUNCTION_INFO_V1(dp_unit_cells_deserialize);

Datum
dp_unit_cells_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	bytea	   *in;
	const char *p;
	const char *end;
	DpCellsWireHeader h;
	DpCellShape *sh;
	DpUnitCells *st;
	uint32		unit_hash;
	int32		ncells;
	Size		shape_bytes;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("dp_pg.unit_cells_deserialize called in non-aggregate context")));
	in = PG_GETARG_BYTEA_PP(0);
	p = VARDATA_ANY(in);
	end = p + VARSIZE_ANY_EXHDR(in);
	if (end - p < (long) sizeof(h))
		elog(ERROR, "dp_pg.unit_cells: malformed partial state");
	memcpy(&h, p, sizeof(h));
	if (h.magic != DP_UNIT_CELLS_MAGIC || h.nkeys < 0 || h.nkeys > INDEX_MAX_KEYS || h.naccs < 0 ||
		h.naccs > DP_UNIT_MAX_ACCS || h.groups < 1)
		elog(ERROR, "dp_pg.unit_cells: malformed partial state");
	shape_bytes = sizeof(h) + h.nkeys * sizeof(Oid) * 2 + h.naccs * 2;
	if (end - p < (long) (shape_bytes + sizeof(uint32) + sizeof(int32)))
		elog(ERROR, "dp_pg.unit_cells: malformed partial state");
	/* the shape: built once per execution from the first state */
	sh = (DpCellShape *) fcinfo->flinfo->fn_extra;
	if (sh == NULL)
	{
		const char *q = p + sizeof(h);
		MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;

		sh = MemoryContextAllocZero(mcxt, sizeof(DpCellShape));
		sh->groups = h.groups;
		sh->seed = h.seed;
		sh->broken = h.broken;
		sh->nkeys = h.nkeys;
		sh->naccs = h.naccs;
		for (int k = 0; k < h.nkeys; k++)
		{
			Oid			type;
			Oid			coll;

			memcpy(&type, q, sizeof(Oid));
			memcpy(&coll, q + sizeof(Oid), sizeof(Oid));
			q += sizeof(Oid) * 2;
			DpSetupKey(&sh->keys[k], type, coll, mcxt);
		}
		for (int i = 0; i < h.naccs; i++)
		{
			sh->accs[i].kind = *q++;
			sh->accs[i].int2 = *q++ != 0;
		}
		DpShapeLayout(sh);
		fcinfo->flinfo->fn_extra = sh;
	}
	else
	{
		/* every partial state must have the shape of the first: keys' types, accumulators' kinds */
		const char *q = p + sizeof(h);
		bool		same = sh->seed == h.seed && sh->nkeys == h.nkeys && sh->naccs == h.naccs &&
			sh->groups == h.groups && sh->broken == h.broken;

		for (int k = 0; same && k < h.nkeys; k++, q += sizeof(Oid) * 2)
		{
			Oid			type;
			Oid			coll;

			memcpy(&type, q, sizeof(Oid));
			memcpy(&coll, q + sizeof(Oid), sizeof(Oid));
			same = type == sh->keys[k].type && coll == sh->keys[k].collation;
		}
		for (int i = 0; same && i < h.naccs; i++, q += 2)
			same = q[0] == sh->accs[i].kind && (q[1] != 0) == sh->accs[i].int2;
		if (!same)
			elog(ERROR, "dp_pg.unit_cells: partial states of different shapes");
	}
	p += shape_bytes;
	memcpy(&unit_hash, p, sizeof(uint32));
	p += sizeof(uint32);
	memcpy(&ncells, p, sizeof(int32));
	p += sizeof(int32);
	if (ncells < 0 || ncells > sh->groups)
		elog(ERROR, "dp_pg.unit_cells: malformed partial state");
	st = DpUnitCellsNew(sh, CurrentMemoryContext, unit_hash);
	for (int i = 0; i < ncells; i++)
	{
		Datum		keys[INDEX_MAX_KEYS];
		bool		nulls[INDEX_MAX_KEYS];
		DpCell	   *c;
		const char *accs;
		char	   *rp;

		if (end - p < (long) (sh->cellsize - sh->state_start))
			elog(ERROR, "dp_pg.unit_cells: malformed partial state");
		accs = p;
		p += sh->cellsize - sh->state_start;
		rp = (char *) p;
		for (int k = 0; k < sh->nkeys; k++)
			keys[k] = datumRestore(&rp, &nulls[k]);	/* copied into aggcxt when offered */
		p = rp;
		if (p > end)
			elog(ERROR, "dp_pg.unit_cells: malformed partial state");
		/* the cells of one state are distinct and at most g: each takes a place */
		c = DpOfferCell(&st, keys, nulls, CurrentMemoryContext);
		if (c == NULL)
			elog(ERROR, "dp_pg.unit_cells: malformed partial state");
		memcpy(c + sh->state_start, accs, sh->cellsize - sh->state_start);
	}
	PG_RETURN_POINTER(st);
}

/* A kept accumulator as the value of its aggregate (NULL where that gives NULL). */
static Datum
DpAccValue(const DpCellAcc *a, DpAcc *acc, bool any, bool *isnull)
{
	*isnull = false;
	switch (a->kind)
	{
		case DP_ACC_COUNT_STAR:
		case DP_ACC_COUNT:
			return Int64GetDatum(acc->u.n);
		default:
			break;
	}
	if (!any)
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (a->kind)
	{
		case DP_ACC_FSUM:
		case DP_ACC_FMIN:
		case DP_ACC_FCLAMP:
			return Float8GetDatum(acc->u.f);
		case DP_ACC_ISUM:
		case DP_ACC_ICLAMP:
			/* saturated, never an ERROR (clamped to the unit's bounds above) */
			if (DpAccInt(acc) > PG_INT64_MAX)
				return Int64GetDatum(PG_INT64_MAX);
			if (DpAccInt(acc) < PG_INT64_MIN)
				return Int64GetDatum(PG_INT64_MIN);
			return Int64GetDatum((int64) DpAccInt(acc));
		case DP_ACC_LSUM:
		case DP_ACC_LCLAMP:
			{
				/* hi * 2^32 * 2^32 + lo, exactly, as numeric */
				int128		v = DpAccInt(acc);
				int64		hi;
				uint64		lo;
				Datum		r;
				Datum		two32;

				if (v >= PG_INT64_MIN && v <= PG_INT64_MAX)
					return NumericGetDatum(int64_to_numeric((int64) v));
				hi = (int64) (v >> 64);
				lo = (uint64) v;
				two32 = NumericGetDatum(int64_to_numeric(INT64CONST(4294967296)));
				r = NumericGetDatum(int64_to_numeric(hi));
				r = DirectFunctionCall2(numeric_mul, r, two32);
				r = DirectFunctionCall2(numeric_mul, r, two32);
				r = DirectFunctionCall2(numeric_add, r, NumericGetDatum(int64_to_numeric((int64) (lo >> 32))));
				r = DirectFunctionCall2(numeric_mul, r, NumericGetDatum(int64_to_numeric(INT64CONST(4294967296))));
				r = DirectFunctionCall2(numeric_add, r, NumericGetDatum(int64_to_numeric((int64) (lo & 0xffffffff))));
				return r;
			}
	}
	elog(ERROR, "dp_pg.unit_cell: unknown accumulator");
	return (Datum) 0;
}

/* Where a series of dp_pg.unit_cell calls stands. */
typedef struct DpCellIter
{
	DpUnitCells *st;
	int			next;
	Oid			have;			/* the witness's type */
} DpCellIter;

PG_FUNCTION_INFO_V1(dp_unit_cell);

/* The state field 0 of dp_pg.unit_cell last started a series on. */
static DpUnitCells *last_field0_state = NULL;

/*
 * dp_pg.unit_cell(cells internal, field int4, witness anyelement) RETURNS
 * SETOF anyelement: field `field` of each kept cell (0-based: the keys, then
 * the accumulators' fields: one each, two for a clamped sum — its sum, then
 * its count), one row per cell, in the cells' order.  Value per call.
 */
Datum
dp_unit_cell(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsi = (ReturnSetInfo *) fcinfo->resultinfo;
	DpCellIter *it = (DpCellIter *) fcinfo->flinfo->fn_extra;
	DpUnitCells *st;
	const DpCellShape *sh;
	DpCell	   *c;
	int32		field;
	Oid			want;
	bool		isnull;
	Datum		v;

	if (rsi == NULL || !IsA(rsi, ReturnSetInfo) || (rsi->allowedModes & SFRM_ValuePerCall) == 0)
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("dp_pg.unit_cell must be called in a select list")));
	if (it == NULL)
	{
		it = fcinfo->flinfo->fn_extra = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(DpCellIter));
		it->have = get_fn_expr_argtype(fcinfo->flinfo, 2);
	}
	rsi->returnMode = SFRM_ValuePerCall;
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
	{
		rsi->isDone = ExprEndResult;
		PG_RETURN_NULL();
	}
	st = (DpUnitCells *) PG_GETARG_POINTER(0);
	if (st->shape == NULL || st->shape->magic != DP_UNIT_CELLS_MAGIC)
		elog(ERROR, "dp_pg.unit_cell: not the state of dp_pg.unit_cells");
	sh = st->shape;
	field = PG_GETARG_INT32(1);
	if (field < 0 || field >= sh->nkeys + sh->nfields)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("dp_pg.unit_cell: no field %d", field)));
	if (it->st != st)
	{
		/*
		 * A new series.  The guard's calls read one aggregate (identical
		 * calls are one): field 0 runs first in the select list, and every
		 * other field must read the state it read.
		 */
		if (field == 0)
			last_field0_state = st;
		else if (st != last_field0_state)
			elog(ERROR, "dp_pg.unit_cell: the fields of a cell come from different states");
		it->st = st;
		it->next = 0;
	}
	if (it->next >= st->ncells)
	{
		it->st = NULL;
		rsi->isDone = ExprEndResult;
		PG_RETURN_NULL();
	}
	rsi->isDone = ExprMultipleResult;
	c = DpCellAt(st, it->next);
	it->next++;
	if (field < sh->nkeys)
	{
		want = sh->keys[field].type;
		isnull = DpCellNulls(c, sh)[field];
		v = DpCellKeys(c)[field];
	}
	else if (sh->field_count[field - sh->nkeys])
	{
		/* a clamped sum's count of values */
		want = INT8OID;
		isnull = false;
		v = Int64GetDatum((int64) *DpCellCount(c, sh, &sh->accs[sh->field_acc[field - sh->nkeys]]));
	}
	else
	{
		int			i = sh->field_acc[field - sh->nkeys];
		const DpCellAcc *a = &sh->accs[i];

		switch (a->kind)
		{
			case DP_ACC_FSUM:
			case DP_ACC_FMIN:
			case DP_ACC_FCLAMP:
				want = FLOAT8OID;
				break;
			case DP_ACC_LSUM:
			case DP_ACC_LCLAMP:
				want = NUMERICOID;
				break;
			default:
				want = INT8OID;
				break;
		}
		v = DpAccValue(a, DpCellAccAt(c, sh, i), DpCellAny(c, sh)[i], &isnull);
	}
	if (it->have != want)
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("dp_pg.unit_cell: field %d is of type %s, not %s", field,
							   format_type_be(want), format_type_be(it->have))));
	if (isnull)
		PG_RETURN_NULL();
	return v;
}

PG_FUNCTION_INFO_V1(dp_unit_seed);

/*
 * dp_pg.unit_seed(): the secret seed of dp_pg.unit_cells' priorities, a
 * uniform int8 from the backend's OpenSSL generator.  The guard's rewrite
 * passes it as an argument; callsite.c evaluates it once per execution
 * before the plan starts, so every parallel worker uses the same seed.
 */
Datum
dp_unit_seed(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64((int64) dp_rng_u64(DpBackendRng()));
}
