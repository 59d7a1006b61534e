/*
 * synth/columns.c — the columns of a twin: which qualify, their categories,
 * values to categories (while the table is read) and back (while the twin
 * is filled).
 *
 * A column qualifies when its values are public up to a bin:
 *   - public keys (dp_pg.set_public_keys): the declared values, in their
 *     order, each read with the column's type input and type modifier (a
 *     value equal to an earlier one is dropped); a row whose value is not
 *     among them is left out of every measurement, as a GROUP BY on public
 *     keys leaves it out;
 *   - boolean: false and true;
 *   - int2 / int4 / int8 / date / timestamp / timestamptz / float4 / float8 /
 *     numeric with a finite value domain: the guard's DpColumnDomain, i.e.
 *     the column's CHECK constraints (column op constant, op one of < <= >
 *     >= =, the constant of the column's kind: a number, or a date or
 *     timestamp of the column's own type) intersected with dp_pg.set_domain's
 *     bounds, and with the type's own range (numeric(p, s): what it can hold).  The
 *     domain is cut into `bins` equal-width bins (an integer, date or
 *     timestamp column into at most one bin per value, each bin a run of
 *     whole values); a value outside the domain counts in the nearest edge
 *     bin (NaN in the last).  A made value is uniform within its bin:
 *     integers stay integers, numerics get the column's scale (or a few
 *     digits below the bin width), every value stays in the domain.
 * A nullable column (no NOT NULL) has NULL as one more category.
 *
 * Every function run on a row is total (no error, notice or side effect
 * whatever the value): the key columns' hash and equality functions (the
 * type cache's, checked to be trusted, i.e. a superuser's, before anything
 * is charged), direct reads of integers, floats and timestamps, and
 * numeric_float8_no_overflow.
 *
 * Layer synth/ (docs/development.md): may call the guard and every layer
 * below it.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "guard/guard.h"
#include "synth.h"
#include "synth/columns.h"

/* The numeric kind of a column type (0 if it has none). */
static SynthColKind
SynthBinKind(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case DATEOID:
			return SYNTH_COL_INT;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return SYNTH_COL_TIME;
		case FLOAT4OID:
		case FLOAT8OID:
			return SYNTH_COL_FLOAT;
		case NUMERICOID:
			return SYNTH_COL_NUMERIC;
		default:
			return 0;
	}
}

/* ERROR 42501 unless function fn may run on protected rows (a superuser's). */
static void
SynthRequireTrusted(Oid fn, SynthColumn *col, const char *what)
{
	if (!OidIsValid(fn) || !DpTrustedFunction(fn))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("column \"%s\" cannot be in a twin: the %s of its type is not a superuser's",
						NameStr(col->name), what),
				 errdetail("dp_pg.synthesize runs only trusted code on protected rows.  Nothing was charged for this call.")));
}

/* Set up a public-key column: the keys as values of its type, and their hash table. */
static void
SynthKeysInit(SynthColumn *col, ArrayType *arr)
{
	Datum	   *texts;
	bool	   *nulls;
	int			n;
	Oid			typinput,
				typioparam;
	TypeCacheEntry *tce = lookup_type_cache(col->typid, TYPECACHE_HASH_PROC_FINFO | TYPECACHE_EQ_OPR_FINFO);

	if (!OidIsValid(tce->hash_proc) || !OidIsValid(tce->eq_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("column \"%s\" cannot be in a twin: its type %s has no hash and equality functions",
						NameStr(col->name), format_type_be(col->typid)),
				 errdetail("Nothing was charged for this call.")));
	SynthRequireTrusted(tce->hash_proc, col, "hash function");
	SynthRequireTrusted(tce->eq_opr_finfo.fn_oid, col, "equality function");
	if (OidIsValid(col->collation) && !DpTrustedCollation(col->collation))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("column \"%s\" cannot be in a twin: its collation is not a superuser's", NameStr(col->name)),
				 errdetail("Nothing was charged for this call.")));
	fmgr_info_copy(&col->hash, &tce->hash_proc_finfo, CurrentMemoryContext);
	fmgr_info_copy(&col->eq, &tce->eq_opr_finfo, CurrentMemoryContext);
	getTypeInputInfo(col->typid, &typinput, &typioparam);
	SynthRequireTrusted(typinput, col, "input function");

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &texts, &nulls, &n);
	col->keys = palloc(sizeof(Datum) * Max(n, 1));
	col->nslots = 16;
	while (col->nslots < 2 * n)
		col->nslots *= 2;
	col->slots = palloc(sizeof(int) * col->nslots);
	for (int i = 0; i < col->nslots; i++)
		col->slots[i] = -1;
	col->nvalues = 0;
	for (int i = 0; i < n; i++)
	{
		Datum		v;

		if (nulls[i])
			continue;
		/* (a key that does not read as the type fails here, before any charge) */
		v = OidInputFunctionCall(typinput, TextDatumGetCString(texts[i]), typioparam, col->typmod);
		if (SynthCategory(col, v, false) >= 0)
			continue;			/* equal to an earlier key */
		col->keys[col->nvalues] = v;
		for (uint32 h = DatumGetUInt32(FunctionCall1Coll(&col->hash, col->collation, v));; h++)
			if (col->slots[h & (col->nslots - 1)] < 0)
			{
				col->slots[h & (col->nslots - 1)] = col->nvalues;
				break;
			}
		col->nvalues++;
	}
}

/* The decimal places of a numeric column's made values (its typmod's scale, or from the bin width). */
static int
SynthNumericScale(SynthColumn *col)
{
	double		width = (col->hi - col->lo) / col->nvalues;

	if (col->typmod >= (int32) VARHDRSZ)
	{
		int32		t = col->typmod - VARHDRSZ;

		return ((t & 0x7ff) ^ 1024) - 1024;
	}
	if (!(width > 0.0))
		return 0;
	return Max(0, Min(15, 2 - (int) floor(log10(width))));
}

/* Set up a binned column over [lo, hi]; false if the domain is not finite. */
static bool
SynthBinsInit(SynthColumn *col, double lo, double hi, int bins)
{
	double		tmin = -INFINITY,
				tmax = INFINITY;

	/* a declared domain, not the type's own range (an id's range is no domain) */
	if (!isfinite(lo) || !isfinite(hi))
		return false;
	switch (col->typid)
	{
		case INT2OID:
			tmin = PG_INT16_MIN;
			tmax = PG_INT16_MAX;
			break;
		case INT4OID:
		case DATEOID:
			tmin = PG_INT32_MIN;
			tmax = PG_INT32_MAX;
			if (col->typid == DATEOID)
			{
				/* finite dates only */
				tmin = (double) (DATETIME_MIN_JULIAN - POSTGRES_EPOCH_JDATE);
				tmax = (double) (DATE_END_JULIAN - POSTGRES_EPOCH_JDATE - 1);
			}
			break;
		case INT8OID:
			tmin = -9.2233720368547758e18;
			tmax = 9.2233720368547748e18;
			break;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			tmin = (double) MIN_TIMESTAMP;
			tmax = (double) (END_TIMESTAMP - 1);
			break;
		case FLOAT4OID:
			tmin = -FLT_MAX;
			tmax = FLT_MAX;
			break;
		case NUMERICOID:
			if (col->typmod >= (int32) VARHDRSZ)
			{
				int32		t = col->typmod - VARHDRSZ;
				int			precision = (t >> 16) & 0xffff;
				int			scale = ((t & 0x7ff) ^ 1024) - 1024;

				tmax = pow(10.0, precision - scale) - pow(10.0, -scale);
				tmin = -tmax;
			}
			break;
		default:
			break;
	}
	lo = Max(lo, tmin);
	hi = Min(hi, tmax);
	if (!isfinite(lo) || !isfinite(hi) || lo > hi)
		return false;
	col->lo = lo;
	col->hi = hi;
	if (col->kind == SYNTH_COL_INT || col->kind == SYNTH_COL_TIME)
	{
		unsigned __int128 width;

		col->ilo = (int64) ceil(lo);
		col->ihi = (int64) floor(hi);
		if (col->ilo > col->ihi)
			return false;
		width = (unsigned __int128) ((__int128) col->ihi - (__int128) col->ilo) + 1;
		col->nvalues = width < (unsigned __int128) bins ? (int) width : bins;
	}
	else
		col->nvalues = lo < hi ? bins : 1;
	if (col->kind == SYNTH_COL_NUMERIC)
		col->scale = SynthNumericScale(col);
	return true;
}

/* Fill col for attribute att; false if it does not qualify (why says so). */
static bool
SynthColumnInit(Relation rel, Form_pg_attribute att, int bins, SynthColumn *col, const char **why)
{
	ArrayType  *keys;
	double		lo,
				hi;

	memset(col, 0, sizeof(*col));
	col->attno = att->attnum;
	col->name = att->attname;
	col->typid = att->atttypid;
	col->typmod = att->atttypmod;
	col->collation = att->attcollation;
	col->typlen = att->attlen;
	col->typbyval = att->attbyval;
	col->nullable = !att->attnotnull;

	keys = DpPublicKeys(RelationGetRelid(rel), NameStr(att->attname));
	if (keys != NULL)
	{
		col->kind = SYNTH_COL_KEYS;
		SynthKeysInit(col, keys);
		if (col->nvalues == 0)
		{
			*why = "its public key list has no value";
			return false;
		}
	}
	else if (att->atttypid == BOOLOID)
	{
		col->kind = SYNTH_COL_BOOL;
		col->nvalues = 2;
	}
	else if ((col->kind = SynthBinKind(att->atttypid)) != 0)
	{
		/* the same domain dp_sum and dp_avg clamp to, read for the column's type */
		(void) DpColumnDomain(RelationGetRelid(rel), att->attnum, att->atttypid, &lo, &hi);
		if (!SynthBinsInit(col, lo, hi, bins))
		{
			*why = "it has neither public keys nor a finite value domain";
			return false;
		}
	}
	else
	{
		*why = "it has no public keys, and its type has no value domain (only numbers, dates and timestamps have one)";
		return false;
	}
	col->K = col->nvalues + (col->nullable ? 1 : 0);
	return true;
}

/* See columns.h. */
int
SynthResolveColumns(Relation rel, ArrayType *columns, int bins, AttrNumber unit_attno, SynthColumn **out)
{
	TupleDesc	desc = RelationGetDescr(rel);
	SynthColumn *cols = palloc0(sizeof(SynthColumn) * (desc->natts + 1));
	int			n = 0;
	const char *relname = RelationGetRelationName(rel);

	if (columns == NULL)
	{
		StringInfoData left;
		int			nleft = 0;

		initStringInfo(&left);
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);
			const char *why;

			if (att->attisdropped)
				continue;
			if (att->attnum == unit_attno)
				why = "the privacy unit, which identifies persons";
			else if (SynthColumnInit(rel, att, bins, &cols[n], &why))
			{
				n++;
				continue;
			}
			appendStringInfo(&left, "%s%s: %s", nleft > 0 ? "; " : "", quote_identifier(NameStr(att->attname)), why);
			nleft++;
		}
		/* which columns the twin has is the caller's to know (the catalog says it), before anything is charged */
		if (nleft > 0 && n > 0)
			ereport(NOTICE,
					(errmsg("the twin of \"%s\" leaves out %d column%s: %s", relname, nleft, nleft > 1 ? "s" : "", left.data),
					 errhint("A column is in a twin with public keys (dp_pg.set_public_keys), or a value domain "
							 "(a CHECK constraint or dp_pg.set_domain) for numbers, dates and timestamps; booleans need nothing.")));
		if (n == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("no column of \"%s\" can be in a twin", relname),
					 errdetail("A column needs public keys (dp_pg.set_public_keys), or a value domain (a CHECK constraint or dp_pg.set_domain) for numbers, dates and timestamps; booleans need nothing.  Nothing was charged for this call.")));
	}
	else
	{
		Datum	   *names;
		bool	   *nulls;
		int			nn;

		if (ARR_NDIM(columns) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("columns must be a one-dimensional array of column names")));
		deconstruct_array(columns, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &names, &nulls, &nn);
		if (nn == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("columns must name at least one column (NULL: every column that qualifies)")));
		for (int i = 0; i < nn; i++)
		{
			const char *name;
			AttrNumber	attno = InvalidAttrNumber;
			const char *why;

			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("columns must not contain NULL")));
			name = NameStr(*DatumGetName(names[i]));
			for (int a = 0; a < desc->natts; a++)
				if (!TupleDescAttr(desc, a)->attisdropped &&
					strcmp(NameStr(TupleDescAttr(desc, a)->attname), name) == 0)
					attno = TupleDescAttr(desc, a)->attnum;
			if (attno == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("column \"%s\" of \"%s\" does not exist", name, relname)));
			for (int j = 0; j < n; j++)
				if (cols[j].attno == attno)
					ereport(ERROR,
							(errcode(ERRCODE_DUPLICATE_COLUMN),
							 errmsg("column \"%s\" is named twice", name)));
			if (n >= SYNTH_MAX_COLUMNS)
				break;
			if (!SynthColumnInit(rel, TupleDescAttr(desc, attno - 1), bins, &cols[n], &why))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("column \"%s\" of \"%s\" cannot be in a twin: %s", name, relname, why),
						 errdetail("Free text and identifiers are never released.  Nothing was charged for this call."),
						 errhint("Declare its values with dp_pg.set_public_keys, or (numbers, dates, timestamps) "
								 "a value domain with a CHECK constraint or dp_pg.set_domain; or leave it out of columns.")));
			n++;
		}
	}
	if (n > SYNTH_MAX_COLUMNS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a twin has at most %d columns", SYNTH_MAX_COLUMNS),
				 errdetail("Nothing was charged for this call.")));
	*out = cols;
	return n;
}

/* An integer-like value of the column as int64. */
static inline int64
SynthIntValue(SynthColumn *col, Datum v)
{
	switch (col->typid)
	{
		case INT2OID:
			return DatumGetInt16(v);
		case INT4OID:
			return DatumGetInt32(v);
		case DATEOID:
			return DatumGetDateADT(v);
		default:
			return DatumGetInt64(v);
	}
}

/* See columns.h. */
int
SynthCategory(SynthColumn *col, Datum value, bool isnull)
{
	if (isnull)
		return col->nullable ? col->nvalues : -1;
	switch (col->kind)
	{
		case SYNTH_COL_KEYS:
			{
				uint32		h = DatumGetUInt32(FunctionCall1Coll(&col->hash, col->collation, value));

				for (;; h++)
				{
					int			k = col->slots[h & (col->nslots - 1)];

					if (k < 0)
						return -1;
					if (DatumGetBool(FunctionCall2Coll(&col->eq, col->collation, value, col->keys[k])))
						return k;
				}
			}
		case SYNTH_COL_BOOL:
			return DatumGetBool(value) ? 1 : 0;
		case SYNTH_COL_INT:
		case SYNTH_COL_TIME:
			{
				int64		v = SynthIntValue(col, value);
				unsigned __int128 width = (unsigned __int128) ((__int128) col->ihi - (__int128) col->ilo) + 1;

				if (v <= col->ilo)
					return 0;
				if (v >= col->ihi)
					return col->nvalues - 1;
				return (int) ((unsigned __int128) ((__int128) v - (__int128) col->ilo) * (unsigned) col->nvalues / width);
			}
		case SYNTH_COL_FLOAT:
		case SYNTH_COL_NUMERIC:
			{
				double		v;
				int			k;

				if (col->kind == SYNTH_COL_NUMERIC)
					v = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, value));
				else
					v = col->typid == FLOAT4OID ? (double) DatumGetFloat4(value) : DatumGetFloat8(value);
				if (isnan(v) || v >= col->hi)
					return col->nvalues - 1;
				if (v <= col->lo)
					return 0;
				k = (int) floor((v - col->lo) / (col->hi - col->lo) * col->nvalues);
				return k < 0 ? 0 : (k >= col->nvalues ? col->nvalues - 1 : k);
			}
	}
	return -1;
}

/* See columns.h. */
Datum
SynthValue(SynthColumn *col, int k, DpRng *rng, bool *isnull)
{
	*isnull = false;
	if (k >= col->nvalues)
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (col->kind)
	{
		case SYNTH_COL_KEYS:
			return col->keys[k];
		case SYNTH_COL_BOOL:
			return BoolGetDatum(k == 1);
		case SYNTH_COL_INT:
		case SYNTH_COL_TIME:
			{
				unsigned __int128 width = (unsigned __int128) ((__int128) col->ihi - (__int128) col->ilo) + 1;
				unsigned __int128 a = width * (unsigned) k / (unsigned) col->nvalues;
				unsigned __int128 b = width * (unsigned) (k + 1) / (unsigned) col->nvalues;
				int64		v = (int64) ((__int128) col->ilo + (__int128) (a + dp_rng_uniform128(rng, b - a)));

				switch (col->typid)
				{
					case INT2OID:
						return Int16GetDatum((int16) v);
					case INT4OID:
						return Int32GetDatum((int32) v);
					case DATEOID:
						return DateADTGetDatum((DateADT) v);
					case INT8OID:
						return Int64GetDatum(v);
					default:
						return TimestampGetDatum((Timestamp) v);
				}
			}
		case SYNTH_COL_FLOAT:
		case SYNTH_COL_NUMERIC:
			{
				double		x = col->lo + ((double) k + synth_uniform(rng)) * ((col->hi - col->lo) / col->nvalues);

				x = x < col->lo ? col->lo : (x > col->hi ? col->hi : x);
				if (col->typid == FLOAT4OID)
				{
					float		f = (float) x;

					if ((double) f > col->hi)
						f = nextafterf(f, -INFINITY);
					if ((double) f < col->lo)
						f = nextafterf(f, INFINITY);
					return Float4GetDatum(f);
				}
				if (col->typid == FLOAT8OID)
					return Float8GetDatum(x);
				{
					/* at the column's scale, rounded back into the domain */
					double		p = pow(10.0, col->scale);
					double		r = round(x * p) / p;
					char		buf[400];

					if (r > col->hi)
						r = floor(col->hi * p) / p;
					if (r < col->lo)
						r = ceil(col->lo * p) / p;
					snprintf(buf, sizeof(buf), "%.*f", Max(col->scale, 0), r);
					return DirectFunctionCall3(numeric_in, CStringGetDatum(buf), ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(col->typmod));
				}
			}
	}
	*isnull = true;
	return (Datum) 0;
}

/* See columns.h. */
char *
SynthColumnDefinition(SynthColumn *col)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "%s %s", quote_identifier(NameStr(col->name)),
					 format_type_extended(col->typid, col->typmod,
										  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY));
	if (OidIsValid(col->collation) && col->collation != get_typcollation(col->typid))
	{
		HeapTuple	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(col->collation));

		if (HeapTupleIsValid(tup))
		{
			Form_pg_collation c = (Form_pg_collation) GETSTRUCT(tup);

			appendStringInfo(&buf, " COLLATE %s",
							 quote_qualified_identifier(get_namespace_name(c->collnamespace), NameStr(c->collname)));
			ReleaseSysCache(tup);
		}
	}
	if (!col->nullable)
		appendStringInfoString(&buf, " NOT NULL");
	return buf.data;
}
