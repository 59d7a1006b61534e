/*
 * canonical.c — the canonical spelling of a released key (invariant 8 of
 * guard/guard.h: a released key is a function of its equality class, never
 * of one row's spelling of it).
 *
 * GROUP BY, DISTINCT and a histogram's keys merge rows whose keys are equal
 * under the type's btree (or hash) equality, and keep the key datum of the
 * first row they met.  Where equality is not equality of the stored image,
 * that datum can tell which row came first: numeric 5.000 among 5s, -0 among
 * 0s, '24 hours' among '1 day's.  PostgreSQL says which types are safe: a
 * btree operator class's BTEQUALIMAGE_PROC (support function 4) is true when
 * equal values have equal images (B-tree deduplication relies on it).  Every
 * other key type is either brought to a canonical spelling here, once per
 * released key, or refused before the query runs (guard/canonical.c):
 *
 *   numeric        trailing fractional zeros trimmed (trim_scale: 5.000 is
 *                  5, 2.50 is 2.5); a numeric(p,s) column already holds
 *                  every value with scale s
 *   float4/float8  -0 is 0; every NaN is the one NaN PostgreSQL makes
 *   interval       justified like justify_interval, without its overflow:
 *                  the 128-bit span that interval equality compares, cut
 *                  greedily into months of 30 days, days of 24 hours and
 *                  microseconds, all of one sign (24 hours is 1 day, 30 days
 *                  1 mon, 1 mon -1 day 29 days); a part that would leave its
 *                  range stays in the next smaller one, so it never fails
 *   jsonb          every number trimmed as numeric ({"a": 1.0} is {"a": 1});
 *                  strings, keys and structure are compared bytewise already
 *   bpchar         trailing blanks removed (unbounded bpchar keeps them, and
 *                  equality ignores them); bpchar(n) pads every value to n
 *   arrays         rebuilt: canonical elements, and no null bitmap unless an
 *                  element is NULL (binary output shows the bitmap)
 *   ranges, multiranges, composite types: canonical bounds or attributes
 *   domains        as their base type
 *
 * Under a nondeterministic collation equal strings may differ in any way
 * (case, accents): no spelling is canonical, so such keys are refused, as
 * are types whose operator class does not promise equal images and that
 * have no rule above (tsvector, citext, ...).  Each rule is total: no
 * canonical spelling can fail, whatever the value.
 *
 * Layer common/ (docs/development.md): may call the numeric core (core/)
 * and the rest of common/, nothing above.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/nbtree.h"
#include "catalog/pg_am.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/primnodes.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/multirangetypes.h"
#include "utils/rangetypes.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "canonical.h"
#include "compat.h"

/* The rule a type's values follow. */
typedef enum DpCanonKind
{
	DP_CANON_NUMERIC,
	DP_CANON_FLOAT4,
	DP_CANON_FLOAT8,
	DP_CANON_INTERVAL,
	DP_CANON_JSONB,
	DP_CANON_BPCHAR,
	DP_CANON_ARRAY,
	DP_CANON_RANGE,
	DP_CANON_MULTIRANGE,
	DP_CANON_RECORD
} DpCanonKind;

struct DpCanon
{
	DpCanonKind kind;
	/* arrays: the element type and the elements' rule (NULL: already canonical) */
	Oid			elemtype;
	int16		elemlen;
	bool		elembyval;
	char		elemalign;
	DpCanon    *elem;
	/* ranges: the range type; multiranges: theirs; both with the bounds' (ranges') rule in elem */
	TypeCacheEntry *typcache;
	Oid			mltrngtype;
	/* composite types: the row type and each attribute's rule (NULL: already canonical) */
	TupleDesc	tupdesc;
	DpCanon   **atts;
};

/* Is collation coll deterministic (no collation: yes)? */
static bool
DpCanonDeterministic(Oid coll)
{
	return !OidIsValid(coll) || get_collation_isdeterministic(coll);
}

/*
 * True if equal values of type (under collation) are equal images: the
 * default btree operator class has BTEQUALIMAGE_PROC and it says so.
 */
static bool
DpCanonEqualImage(Oid type, Oid collation)
{
	Oid			opclass = GetDefaultOpClass(type, BTREE_AM_OID);
	Oid			opcintype;
	Oid			proc;

	if (!OidIsValid(opclass))
		return false;
	opcintype = get_opclass_input_type(opclass);
	proc = get_opfamily_proc(get_opclass_family(opclass), opcintype, opcintype, BTEQUALIMAGE_PROC);
	if (!OidIsValid(proc))
		return false;
	if (!OidIsValid(collation) && type_is_collatable(type))
		return false;
	return DatumGetBool(OidFunctionCall1Coll(proc, collation, ObjectIdGetDatum(opcintype)));
}

/* A new rule of kind k. */
static DpCanon *
DpCanonNew(DpCanonKind k)
{
	DpCanon    *c = palloc0(sizeof(DpCanon));

	c->kind = k;
	return c;
}

/* The refusal for a nondeterministic collation. */
static const char *
DpCanonCollationRefusal(Oid type, Oid collation)
{
	char	   *name = get_collation_name(collation);

	return psprintf("Under the nondeterministic collation \"%s\" equal values of type %s can be spelled "
					"differently (in case, accents or the like), and no spelling is canonical.",
					name ? name : "?", format_type_be(type));
}

/* The canonical form of values of type (typmod, collation); see canonical.h. */
DpCanon *
DpCanonPlan(Oid type, int32 typmod, Oid collation, const char **refusal)
{
	Oid			base;
	int32		basemod = typmod;
	char		typtype;
	DpCanon    *c;

	*refusal = NULL;
	base = getBaseTypeAndTypmod(type, &basemod);
	switch (base)
	{
		case NUMERICOID:
			/* numeric(p, s) holds every value with scale s */
			return basemod >= 0 ? NULL : DpCanonNew(DP_CANON_NUMERIC);
		case FLOAT4OID:
			return DpCanonNew(DP_CANON_FLOAT4);
		case FLOAT8OID:
			return DpCanonNew(DP_CANON_FLOAT8);
		case INTERVALOID:
			return DpCanonNew(DP_CANON_INTERVAL);
		case JSONBOID:
			return DpCanonNew(DP_CANON_JSONB);
		case BPCHAROID:
			if (!DpCanonDeterministic(collation))
			{
				*refusal = DpCanonCollationRefusal(base, collation);
				return NULL;
			}
			/* bpchar(n) pads every value to n characters */
			return basemod >= 0 ? NULL : DpCanonNew(DP_CANON_BPCHAR);
		case RECORDOID:
			*refusal = "An anonymous record has no known attribute types.";
			return NULL;
		default:
			break;
	}

	if (type_is_array(base))
	{
		const char *r;

		c = DpCanonNew(DP_CANON_ARRAY);
		c->elemtype = get_element_type(base);
		get_typlenbyvalalign(c->elemtype, &c->elemlen, &c->elembyval, &c->elemalign);
		/* an array's typmod is its elements' */
		c->elem = DpCanonPlan(c->elemtype, basemod, collation, &r);
		if (r != NULL)
		{
			*refusal = r;
			return NULL;
		}
		return c;				/* rebuilt even when the elements are canonical: the null bitmap */
	}

	typtype = get_typtype(base);
	if (typtype == TYPTYPE_RANGE)
	{
		TypeCacheEntry *tc = lookup_type_cache(base, TYPECACHE_RANGE_INFO);
		DpCanon    *sub = DpCanonPlan(tc->rngelemtype->type_id, -1, tc->rng_collation, refusal);

		if (sub == NULL)
			return NULL;
		c = DpCanonNew(DP_CANON_RANGE);
		c->typcache = tc;
		c->elem = sub;
		return c;
	}
	if (typtype == TYPTYPE_MULTIRANGE)
	{
		TypeCacheEntry *tc = lookup_type_cache(base, TYPECACHE_MULTIRANGE_INFO);
		DpCanon    *sub = DpCanonPlan(tc->rngtype->type_id, -1, InvalidOid, refusal);

		if (sub == NULL)
			return NULL;
		c = DpCanonNew(DP_CANON_MULTIRANGE);
		c->typcache = tc->rngtype;
		c->mltrngtype = base;
		c->elem = sub;
		return c;
	}
	if (typtype == TYPTYPE_COMPOSITE)
	{
		TupleDesc	td = lookup_rowtype_tupdesc_copy(base, basemod);
		bool		any = false;

		c = DpCanonNew(DP_CANON_RECORD);
		c->tupdesc = td;
		c->atts = palloc0(sizeof(DpCanon *) * Max(td->natts, 1));
		for (int i = 0; i < td->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(td, i);

			if (att->attisdropped)
				continue;
			c->atts[i] = DpCanonPlan(att->atttypid, att->atttypmod, att->attcollation, refusal);
			if (*refusal != NULL)
				return NULL;
			any |= c->atts[i] != NULL;
		}
		return any ? c : NULL;
	}

	if (type_is_collatable(base) && !DpCanonDeterministic(collation))
	{
		*refusal = DpCanonCollationRefusal(base, collation);
		return NULL;
	}
	if (!DpCanonEqualImage(base, collation))
		*refusal = psprintf("Equal values of type %s can be stored in different spellings, and dp_pg knows no "
							"canonical one.", format_type_be(base));
	return NULL;
}

/*
 * The interval of span s microseconds (months of 30 days, days of 24 hours):
 * months, days and microseconds of s's sign, each as large as its range
 * allows, greedily from the months down.  The span came from an interval, so
 * this fits: the greedy months are at least its months, what is left is at
 * most its days and time, and so on.
 */
static Interval *
DpCanonInterval(const Interval *iv)
{
	const int128 day = USECS_PER_DAY;
	const int128 month = (int128) DAYS_PER_MONTH * USECS_PER_DAY;
	int128		s = (int128) iv->time + ((int128) iv->month * DAYS_PER_MONTH + iv->day) * USECS_PER_DAY;
	int128		m;
	int128		d;
	int128		t;
	Interval   *r = palloc(sizeof(Interval));

	m = s / month;				/* truncated toward zero: the sign of s */
	m = Max(Min(m, (int128) PG_INT32_MAX), (int128) PG_INT32_MIN);
	s -= m * month;
	d = s / day;
	d = Max(Min(d, (int128) PG_INT32_MAX), (int128) PG_INT32_MIN);
	t = s - d * day;
	if (t > PG_INT64_MAX || t < PG_INT64_MIN)
	{
		/* cannot happen (see above); the value as it is rather than an error */
		*r = *iv;
		return r;
	}
	r->month = (int32) m;
	r->day = (int32) d;
	r->time = (int64) t;
	return r;
}

/* The jsonb value with every number trimmed. */
static Datum
DpCanonJsonb(Jsonb *jb)
{
	JsonbIterator *it = JsonbIteratorInit(&jb->root);
	JsonbParseState *ps = NULL;
	JsonbValue	v;
	JsonbValue *res = NULL;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if ((tok == WJB_VALUE || tok == WJB_ELEM) && v.type == jbvNumeric)
			v.val.numeric = DatumGetNumeric(DirectFunctionCall1(numeric_trim_scale, NumericGetDatum(v.val.numeric)));
		if (tok == WJB_KEY || tok == WJB_VALUE || tok == WJB_ELEM ||
			(tok == WJB_BEGIN_ARRAY && v.val.array.rawScalar))
			res = pushJsonbValue(&ps, tok, &v);
		else
			res = pushJsonbValue(&ps, tok, NULL);
	}
	return JsonbPGetDatum(JsonbValueToJsonb(res));
}

/* bpchar without its trailing blanks. */
static Datum
DpCanonBpchar(Datum v)
{
	BpChar	   *b = DatumGetBpCharPP(v);
	const char *s = VARDATA_ANY(b);
	int			len = VARSIZE_ANY_EXHDR(b);
	int			n = len;

	while (n > 0 && s[n - 1] == ' ')
		n--;
	if (n == len)
		return v;
	return PointerGetDatum(cstring_to_text_with_len(s, n));
}

/* The array rebuilt with canonical elements. */
static Datum
DpCanonArray(const DpCanon *c, ArrayType *a)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (ARR_NDIM(a) == 0)
		return PointerGetDatum(construct_empty_array(c->elemtype));
	deconstruct_array(a, c->elemtype, c->elemlen, c->elembyval, c->elemalign, &elems, &nulls, &n);
	if (c->elem != NULL)
		for (int i = 0; i < n; i++)
			if (!nulls[i])
				elems[i] = DpCanonValue(c->elem, elems[i]);
	return PointerGetDatum(construct_md_array(elems, nulls, ARR_NDIM(a), ARR_DIMS(a), ARR_LBOUND(a),
											  c->elemtype, c->elemlen, c->elembyval, c->elemalign));
}

/* The range with canonical bounds. */
static RangeType *
DpCanonRange(const DpCanon *c, RangeType *r)
{
	RangeBound	lower;
	RangeBound	upper;
	bool		empty;

	range_deserialize(c->typcache, r, &lower, &upper, &empty);
	if (empty)
		return r;
	if (!lower.infinite)
		lower.val = DpCanonValue(c->elem, lower.val);
	if (!upper.infinite)
		upper.val = DpCanonValue(c->elem, upper.val);
#if PG_VERSION_NUM >= 160000
	return range_serialize(c->typcache, &lower, &upper, false, NULL);
#else
	return range_serialize(c->typcache, &lower, &upper, false);
#endif
}

/* The composite value with canonical attributes. */
static Datum
DpCanonRecord(const DpCanon *c, HeapTupleHeader th)
{
	HeapTupleData tup;
	TupleDesc	td = c->tupdesc;
	Datum	   *values = palloc(sizeof(Datum) * Max(td->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(td->natts, 1));

	tup.t_len = HeapTupleHeaderGetDatumLength(th);
	ItemPointerSetInvalid(&tup.t_self);
	tup.t_tableOid = InvalidOid;
	tup.t_data = th;
	heap_deform_tuple(&tup, td, values, nulls);
	for (int i = 0; i < td->natts; i++)
		if (c->atts[i] != NULL && !nulls[i])
			values[i] = DpCanonValue(c->atts[i], values[i]);
	return HeapTupleGetDatum(heap_form_tuple(td, values, nulls));
}

/* The canonical spelling of non-NULL value v; see canonical.h. */
Datum
DpCanonValue(const DpCanon *c, Datum v)
{
	if (c == NULL)
		return v;
	switch (c->kind)
	{
		case DP_CANON_NUMERIC:
			return DirectFunctionCall1(numeric_trim_scale, v);
		case DP_CANON_FLOAT4:
			{
				float4		x = DatumGetFloat4(v);

				if (isnan(x))
					return Float4GetDatum(get_float4_nan());
				return x == 0 ? Float4GetDatum(0.0f) : v;
			}
		case DP_CANON_FLOAT8:
			{
				float8		x = DatumGetFloat8(v);

				if (isnan(x))
					return Float8GetDatum(get_float8_nan());
				return x == 0 ? Float8GetDatum(0.0) : v;
			}
		case DP_CANON_INTERVAL:
			{
				Interval   *iv = DatumGetIntervalP(v);

#ifdef INTERVAL_NOT_FINITE
				if (INTERVAL_NOT_FINITE(iv))
					return v;	/* +-infinity: one spelling each */
#endif
				return IntervalPGetDatum(DpCanonInterval(iv));
			}
		case DP_CANON_JSONB:
			return DpCanonJsonb(DatumGetJsonbP(v));
		case DP_CANON_BPCHAR:
			return DpCanonBpchar(v);
		case DP_CANON_ARRAY:
			return DpCanonArray(c, DatumGetArrayTypeP(v));
		case DP_CANON_RANGE:
			return RangeTypePGetDatum(DpCanonRange(c, DatumGetRangeTypeP(v)));
		case DP_CANON_MULTIRANGE:
			{
				MultirangeType *mr = DatumGetMultirangeTypeP(v);
				int32		n;
				RangeType **ranges;

				multirange_deserialize(c->typcache, mr, &n, &ranges);
				for (int i = 0; i < n; i++)
					ranges[i] = DpCanonRange(c->elem, ranges[i]);
				return MultirangeTypePGetDatum(make_multirange(c->mltrngtype, c->typcache, n, ranges));
			}
		case DP_CANON_RECORD:
			return DpCanonRecord(c, DatumGetHeapTupleHeader(v));
	}
	return v;
}

/* The per-call-site state of dp_pg.canonical_key. */
typedef struct DpCanonCall
{
	Oid			type;
	DpCanon    *canon;
} DpCanonCall;

PG_FUNCTION_INFO_V1(dp_canonical_key);

/*
 * dp_pg.canonical_key(anyelement) RETURNS anyelement: the canonical spelling
 * of a key (its type, typmod and the call's collation).  The guard releases
 * every GROUP BY key through it (guard/canonical.c); a value of a type
 * without a canonical spelling, which the guard refuses before a query runs,
 * comes back unchanged.  Strict, immutable, never fails.
 */
Datum
dp_canonical_key(PG_FUNCTION_ARGS)
{
	DpCanonCall *call = (DpCanonCall *) fcinfo->flinfo->fn_extra;
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 0);

	if (call == NULL || call->type != type)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
		Node	   *expr = fcinfo->flinfo->fn_expr;
		int32		typmod = -1;
		const char *refusal;

		if (expr != NULL && IsA(expr, FuncExpr) && list_length(((FuncExpr *) expr)->args) == 1)
			typmod = exprTypmod(linitial(((FuncExpr *) expr)->args));
		call = palloc0(sizeof(DpCanonCall));
		call->type = type;
		call->canon = DpCanonPlan(type, typmod, PG_GET_COLLATION(), &refusal);
		fcinfo->flinfo->fn_extra = call;
		MemoryContextSwitchTo(old);
	}
	PG_RETURN_DATUM(DpCanonValue(call->canon, PG_GETARG_DATUM(0)));
}
