/*
 * guard/derived.c — BI aggregates answered from other dp releases
 * (translate.c hands them over).
 *
 * STDDEV / VARIANCE (stddev, stddev_pop, stddev_samp, variance, var_pop,
 * var_samp) of x with bounds [lo, hi] (the value domain of x, bounds.c for
 * expressions) become three releases, each with a third of the role's
 * default mechanism (basic composition: the charge is the mechanism's
 * epsilon and delta, or rho), and their post-processing:
 *
 *   dp_pg.variance_from_moments(dp_count(x, m/3),
 *                               dp_sum(x - c, -h, h, m/3),
 *                               dp_sum((x - c) * (x - c), 0, h * h, m/3),
 *                               h, <sample>, <root>)
 *
 * with c = (lo + hi) / 2 and h = (hi - lo) / 2: sums of centred values,
 * whose sensitivity is the domain's half-width (src/aggregates/moments.c,
 * src/core/moments.c; FILTER kept on each).  The arithmetic is checked like
 * any (bounds.c); on a table with a privacy unit each moment is bounded per
 * unit like any dp_count / dp_sum.
 *
 * count(DISTINCT col) of a column with declared public keys: which of the
 * public keys occur is the private part; it is released as a histogram over
 * the public keys (one release, sensitivity one row, or the unit's bounds)
 * whose bins above the noise's 1 - 0.05/bins quantile are counted:
 *
 *   dp_pg.present_keys(dp_histogram(col, <public keys>, m), m, r, groups)
 *
 * (post-processing; a key held by few rows may not count, an absent one
 * counts with probability at most 0.05 / bins).
 *
 * Layer guard/, floor releases (docs/development.md): may call guard/'s
 * floors base, fences, reads, rows and releases, the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "agg_common.h"
#include "release.h"
#include "guard/floor_releases.h"
#include "guc.h"

/* The dispersion aggregates of PostgreSQL: sample or population, square root or not. */
static const struct
{
	Oid			fn;
	bool		sample;
	bool		root;
}			dp_dispersions[] = {
	{F_VARIANCE_INT2, true, false}, {F_VARIANCE_INT4, true, false}, {F_VARIANCE_INT8, true, false},
	{F_VARIANCE_FLOAT4, true, false}, {F_VARIANCE_FLOAT8, true, false}, {F_VARIANCE_NUMERIC, true, false},
	{F_VAR_SAMP_INT2, true, false}, {F_VAR_SAMP_INT4, true, false}, {F_VAR_SAMP_INT8, true, false},
	{F_VAR_SAMP_FLOAT4, true, false}, {F_VAR_SAMP_FLOAT8, true, false}, {F_VAR_SAMP_NUMERIC, true, false},
	{F_VAR_POP_INT2, false, false}, {F_VAR_POP_INT4, false, false}, {F_VAR_POP_INT8, false, false},
	{F_VAR_POP_FLOAT4, false, false}, {F_VAR_POP_FLOAT8, false, false}, {F_VAR_POP_NUMERIC, false, false},
	{F_STDDEV_INT2, true, true}, {F_STDDEV_INT4, true, true}, {F_STDDEV_INT8, true, true},
	{F_STDDEV_FLOAT4, true, true}, {F_STDDEV_FLOAT8, true, true}, {F_STDDEV_NUMERIC, true, true},
	{F_STDDEV_SAMP_INT2, true, true}, {F_STDDEV_SAMP_INT4, true, true}, {F_STDDEV_SAMP_INT8, true, true},
	{F_STDDEV_SAMP_FLOAT4, true, true}, {F_STDDEV_SAMP_FLOAT8, true, true}, {F_STDDEV_SAMP_NUMERIC, true, true},
	{F_STDDEV_POP_INT2, false, true}, {F_STDDEV_POP_INT4, false, true}, {F_STDDEV_POP_INT8, false, true},
	{F_STDDEV_POP_FLOAT4, false, true}, {F_STDDEV_POP_FLOAT8, false, true}, {F_STDDEV_POP_NUMERIC, false, true},
};

/* True if aggfnoid is a STDDEV / VARIANCE aggregate (sets *sample, *root). */
bool
DpIsDispersion(Oid aggfnoid, bool *sample, bool *root)
{
	for (int i = 0; i < lengthof(dp_dispersions); i++)
		if (dp_dispersions[i].fn == aggfnoid)
		{
			*sample = dp_dispersions[i].sample;
			*root = dp_dispersions[i].root;
			return true;
		}
	return false;
}

/* dp_pg.name(argtypes), or ERROR (the installation is incomplete). */
static Oid
DpDerivedFunction(const char *name, int nargs, const Oid *argtypes)
{
	Oid			fn = LookupFuncName(list_make2(makeString("dp_pg"), makeString((char *) name)), nargs, argtypes, true);

	if (!OidIsValid(fn))
		DpGuardRefuse("the dp_pg installation is incomplete",
					  psprintf("dp_pg.%s is missing; ALTER EXTENSION dp_pg UPDATE.", name));
	return fn;
}

/* A float8 constant. */
static Const *
DpF8(double v)
{
	return makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(v), false, FLOAT8PASSBYVAL);
}

/* x as a float8 (a widening cast, or numeric's conversion, which the row checks make total). */
static Expr *
DpAsFloat8(Expr *x)
{
	Oid			fn;

	switch (exprType((Node *) x))
	{
		case INT2OID:
			fn = F_FLOAT8_INT2;
			break;
		case INT4OID:
			fn = F_FLOAT8_INT4;
			break;
		case INT8OID:
			fn = F_FLOAT8_INT8;
			break;
		case FLOAT4OID:
			fn = F_FLOAT8_FLOAT4;
			break;
		case NUMERICOID:
			fn = F_FLOAT8_NUMERIC;
			break;
		default:
			return x;
	}
	return (Expr *) makeFuncExpr(fn, FLOAT8OID, list_make1(x), InvalidOid, InvalidOid, COERCE_IMPLICIT_CAST);
}

/*
 * The STDDEV / VARIANCE a (of argument x over [lo, hi]) as three dp
 * releases and their post-processing (see above); count_fn is dp_count(any,
 * mech), sum_fn dp_sum(float8, float8, float8, mech).
 */
Node *
DpTranslateDispersion(Aggref *a, double lo, double hi, Oid count_fn, Oid sum_fn, bool sample, bool root)
{
	DpMechanism third = DpSplitMechanism(dp_default_mechanism, 3);
	Expr	   *x = (Expr *) copyObject(linitial_node(TargetEntry, a->args)->expr);
	double		c = (lo + hi) / 2;
	double		h = (hi - lo) / 2;
	Expr	   *d;
	Aggref	   *n,
			   *s1,
			   *s2;
	Oid			argtypes[6] = {INT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, BOOLOID, BOOLOID};
	Expr	   *v;

	d = (Expr *) makeFuncExpr(F_FLOAT8MI, FLOAT8OID, list_make2(DpAsFloat8(x), DpF8(c)), InvalidOid, InvalidOid,
							  COERCE_EXPLICIT_CALL);
	n = DpMakeAggref(count_fn, INT8OID, list_make2(copyObject(x), DpMechanismConst(&third)), a->inputcollid,
					 copyObject(a->aggfilter), false);
	s1 = DpMakeAggref(sum_fn, FLOAT8OID, list_make4(copyObject(d), DpF8(-h), DpF8(h), DpMechanismConst(&third)),
					  InvalidOid, copyObject(a->aggfilter), false);
	s2 = DpMakeAggref(sum_fn, FLOAT8OID,
					  list_make4(makeFuncExpr(F_FLOAT8MUL, FLOAT8OID, list_make2(copyObject(d), copyObject(d)),
											  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL),
								 DpF8(0), DpF8(h * h), DpMechanismConst(&third)),
					  InvalidOid, copyObject(a->aggfilter), false);
	v = (Expr *) makeFuncExpr(DpDerivedFunction("variance_from_moments", 6, argtypes), FLOAT8OID,
							  lappend(lappend(list_make4(n, s1, s2, DpF8(h)), makeBoolConst(sample, false)), makeBoolConst(root, false)),
							  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	/* the plain aggregate's result type (numeric for integers and numeric, float8 for floats) */
	if (a->aggtype == NUMERICOID)
		v = (Expr *) makeFuncExpr(F_NUMERIC_FLOAT8, NUMERICOID, list_make1(v), InvalidOid, InvalidOid,
								  COERCE_IMPLICIT_CAST);
	return (Node *) v;
}

/*
 * count(DISTINCT col) of a column with declared public keys (keys, text[])
 * as dp_pg.present_keys over a histogram of them (see above); hist_fn is
 * dp_histogram(anycompatible, anycompatiblearray, mech); rows and groups the
 * table's unit bounds (1, 1 without a unit).
 */
Node *
DpTranslateDistinctKeys(Aggref *a, ArrayType *keys, Oid hist_fn, int64 rows, int32 groups)
{
	Expr	   *col = (Expr *) copyObject(linitial_node(TargetEntry, a->args)->expr);
	List	   *consts = DpPublicKeyConsts(keys, (Node *) col);
	ArrayExpr  *bins = makeNode(ArrayExpr);
	Const	   *mech = DpMechanismConst(dp_default_mechanism);
	Oid			argtypes[4] = {JSONBOID, DpMechanismType(), INT8OID, INT4OID};
	Aggref	   *hist;

	if (consts == NIL || !OidIsValid(get_array_type(exprType((Node *) col))))
		DpGuardRefuse("count(DISTINCT ...) needs the column's public keys in its type",
					  "The declared keys are empty, or the column's type has no array type.");
	bins->array_typeid = get_array_type(exprType((Node *) col));
	bins->array_collid = exprCollation((Node *) col);
	bins->element_typeid = exprType((Node *) col);
	bins->elements = consts;
	bins->multidims = false;
	bins->location = -1;
	hist = DpMakeAggref(hist_fn, JSONBOID, list_make3(col, bins, mech), a->inputcollid,
						copyObject(a->aggfilter), false);
	return (Node *) makeFuncExpr(DpDerivedFunction("present_keys", 4, argtypes), INT8OID,
								 list_make4(hist, copyObject(mech), DpInt8Const(rows),
											DpInt4Const(Min(groups, list_length(consts)))),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}
