/*
 * postprocess.c — free post-processing of released values.
 *
 * Post-processing a differentially private release with public information
 * only (here: the mechanism and sensitivity that produced it, which are
 * public parameters) is differentially private at no extra cost, so these
 * functions read no data and charge nothing.  They take a released
 * histogram (the jsonb of dp_histogram) or a vector of released values
 * (float8[]):
 *
 *   dp_nonnegative(h)     every value max(v, 0)
 *   dp_round(h)           every value rounded to an integer (half away from 0)
 *   dp_james_stein(h, mech, sensitivity = 1)
 *       positive-part James-Stein shrinkage towards 0 (seed 003 §4, Thm 11):
 *       y (1 - (d - 2) s^2 / |y|^2)_+ with s^2 the variance of one value's
 *       noise and d >= 3 values (fewer are returned unchanged: James-Stein
 *       improves on y only from d = 3);
 *   dp_soft_threshold(h, mech, sensitivity = 1)
 *       soft thresholding sign(y) (|y| - lambda)_+ (seed 003 §4, Thm 12,
 *       Donoho 1995) at the universal threshold lambda = sigma sqrt(2 ln d)
 *       for Gaussian and OSGT noise (sigma its sub-Gaussian scale) and the
 *       Laplace analogue lambda = b ln d (b its scale).
 * The noise is the one dp_pg.calibrate(mech, sensitivity) reports (a privacy
 * form: the discrete noise sampled; a noise form such as
 * gaussian(sigma=3): that noise).  Using the mechanism of another release
 * gives wrong shrinkage, not a privacy loss.
 *
 * Layer aggregates/ (docs/development.md): may call the release path
 * (call sites, cache), the ledger, common/ and the numeric core.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "aggregates.h"

PG_FUNCTION_INFO_V1(dp_nonnegative_jsonb);
PG_FUNCTION_INFO_V1(dp_round_jsonb);
PG_FUNCTION_INFO_V1(dp_james_stein_jsonb);
PG_FUNCTION_INFO_V1(dp_james_stein_array);
PG_FUNCTION_INFO_V1(dp_soft_threshold_jsonb);
PG_FUNCTION_INFO_V1(dp_soft_threshold_array);

/* The public noise a release carries: its variance and tail scale. */
typedef struct DpNoiseScale
{
	int			family;
	double		variance;		/* variance of one value's noise */
	double		sigma;			/* Gaussian / OSGT sub-Gaussian scale */
	double		scale;			/* Laplace b */
} DpNoiseScale;

/* The noise of mech at sensitivity (as dp_pg.calibrate reports it), or ERROR 22023. */
static DpNoiseScale
DpNoiseScaleOf(const DpMechanism *mech, double sensitivity)
{
	DpNoiseScale ns;
	char		err[256];

	if (!dp_mechanism_validate(mech, err, sizeof(err)))
		DpReportMechanismError(err);
	if (isnan(sensitivity) || !(sensitivity > 0.0) || sensitivity > 1e15)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sensitivity must be a finite number greater than 0 and at most 1e+15, got %g",
						sensitivity)));
	ns.family = mech->family;
	if (dp_mechanism_is_privacy_form(mech))
	{
		DpNoisePlan plan;

		if (!dp_noise_plan_real(&plan, mech, sensitivity, err, sizeof(err)))
			DpReportMechanismError(err);
		ns.variance = plan.variance;
		ns.sigma = plan.sigma;
		ns.scale = plan.scale;
	}
	else
	{
		/* a noise form states the noise itself (sensitivity does not matter) */
		ns.variance = dp_noise_form_variance(mech);
		ns.sigma = mech->family == DP_MECH_LAPLACE ? 0.0 : mech->p[0];
		ns.scale = mech->family == DP_MECH_LAPLACE ? mech->p[0] : 0.0;
	}
	return ns;
}

/* Soft-threshold level for d values under noise ns. */
static double
DpUniversalThreshold(const DpNoiseScale *ns, int d)
{
	if (d < 2)
		return 0.0;
	if (ns->family == DP_MECH_LAPLACE)
		return ns->scale * log((double) d);
	return ns->sigma * sqrt(2.0 * log((double) d));
}

/*
 * jsonb histograms: {"label": number, ...}
 */

/* The values of a flat jsonb object of numbers (keys in *keys), or ERROR 22023. */
static int
DpJsonbNumbers(Jsonb *jb, const char *fname, JsonbValue **keys, Numeric **values)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			n = 0;
	int			cap;

	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s expects a jsonb object of numbers, such as the result of dp_histogram", fname)));
	cap = Max(JB_ROOT_COUNT(jb), 1);
	*keys = palloc(cap * sizeof(JsonbValue));
	*values = palloc(cap * sizeof(Numeric));
	it = JsonbIteratorInit(&jb->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			(*keys)[n] = v;
		else if (tok == WJB_VALUE)
		{
			if (v.type != jbvNumeric)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s expects a jsonb object of numbers, such as the result of dp_histogram", fname),
						 errdetail("The value of \"%.*s\" is not a number.",
								   (*keys)[n].val.string.len, (*keys)[n].val.string.val)));
			(*values)[n++] = v.val.numeric;
		}
	}
	return n;
}

/* A jsonb object from keys and numeric values. */
static Jsonb *
DpJsonbFromNumbers(JsonbValue *keys, Numeric *values, int n)
{
	JsonbParseState *ps = NULL;
	JsonbValue *res;

	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	for (int i = 0; i < n; i++)
	{
		JsonbValue	v;

		pushJsonbValue(&ps, WJB_KEY, &keys[i]);
		v.type = jbvNumeric;
		v.val.numeric = values[i];
		pushJsonbValue(&ps, WJB_VALUE, &v);
	}
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

/* numeric -> float8 */
static double
DpNumericToDouble(Numeric n)
{
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(n)));
}

/* float8 -> numeric */
static Numeric
DpDoubleToNumeric(double v)
{
	return DatumGetNumeric(DirectFunctionCall1(float8_numeric, Float8GetDatum(v)));
}

/* dp_nonnegative(jsonb): every value max(v, 0). */
Datum
dp_nonnegative_jsonb(PG_FUNCTION_ARGS)
{
	JsonbValue *keys;
	Numeric    *values;
	int			n = DpJsonbNumbers(PG_GETARG_JSONB_P(0), "dp_nonnegative", &keys, &values);
	Datum		zero = NumericGetDatum(int64_to_numeric(0));

	for (int i = 0; i < n; i++)
		values[i] = DatumGetNumeric(DirectFunctionCall2(numeric_larger, NumericGetDatum(values[i]), zero));
	PG_RETURN_JSONB_P(DpJsonbFromNumbers(keys, values, n));
}

/* dp_round(jsonb): every value rounded to an integer. */
Datum
dp_round_jsonb(PG_FUNCTION_ARGS)
{
	JsonbValue *keys;
	Numeric    *values;
	int			n = DpJsonbNumbers(PG_GETARG_JSONB_P(0), "dp_round", &keys, &values);

	for (int i = 0; i < n; i++)
		values[i] = DatumGetNumeric(DirectFunctionCall2(numeric_round, NumericGetDatum(values[i]),
														Int32GetDatum(0)));
	PG_RETURN_JSONB_P(DpJsonbFromNumbers(keys, values, n));
}

/* The James-Stein shrinkage factor of y[0..d) under noise variance s2. */
static double
DpJamesSteinFactor(const double *y, int d, double s2)
{
	double		norm2 = 0.0;

	if (d < 3)
		return 1.0;
	for (int i = 0; i < d; i++)
		norm2 += y[i] * y[i];
	if (!(norm2 > 0.0))
		return 0.0;
	return Max(0.0, 1.0 - (d - 2) * s2 / norm2);
}

/* y f without a negative zero. */
static double
DpScale(double y, double f)
{
	double		v = y * f;

	return v == 0.0 ? 0.0 : v;
}

/* Soft threshold of one value. */
static double
DpSoftThreshold(double y, double lambda)
{
	double		a = fabs(y) - lambda;

	if (a <= 0.0)
		return 0.0;
	return y < 0 ? -a : a;
}

/* Denoise a jsonb histogram: James-Stein (js) or soft threshold. */
static Datum
DpDenoiseJsonb(FunctionCallInfo fcinfo, bool js, const char *fname)
{
	DpNoiseScale ns = DpNoiseScaleOf((DpMechanism *) PG_GETARG_POINTER(1), PG_GETARG_FLOAT8(2));
	JsonbValue *keys;
	Numeric    *values;
	int			n = DpJsonbNumbers(PG_GETARG_JSONB_P(0), fname, &keys, &values);
	double	   *y = palloc(Max(n, 1) * sizeof(double));

	for (int i = 0; i < n; i++)
		y[i] = DpNumericToDouble(values[i]);
	if (js)
	{
		double		f = DpJamesSteinFactor(y, n, ns.variance);

		for (int i = 0; i < n; i++)
			values[i] = DpDoubleToNumeric(DpScale(y[i], f));
	}
	else
	{
		double		lambda = DpUniversalThreshold(&ns, n);

		for (int i = 0; i < n; i++)
			values[i] = DpDoubleToNumeric(DpSoftThreshold(y[i], lambda));
	}
	PG_RETURN_JSONB_P(DpJsonbFromNumbers(keys, values, n));
}

/* dp_james_stein(jsonb, mech, sensitivity). */
Datum
dp_james_stein_jsonb(PG_FUNCTION_ARGS)
{
	return DpDenoiseJsonb(fcinfo, true, "dp_james_stein");
}

/* dp_soft_threshold(jsonb, mech, sensitivity). */
Datum
dp_soft_threshold_jsonb(PG_FUNCTION_ARGS)
{
	return DpDenoiseJsonb(fcinfo, false, "dp_soft_threshold");
}

/*
 * float8[] vectors of released values
 */

/* Denoise a float8 array (one-dimensional or empty, no nulls). */
static Datum
DpDenoiseArray(FunctionCallInfo fcinfo, bool js, const char *fname)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	DpNoiseScale ns = DpNoiseScaleOf((DpMechanism *) PG_GETARG_POINTER(1), PG_GETARG_FLOAT8(2));
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	double	   *y;
	ArrayType  *result;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s expects a one-dimensional array", fname)));
	deconstruct_array(arr, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &n);
	y = palloc(Max(n, 1) * sizeof(double));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s expects an array without nulls", fname)));
		y[i] = DatumGetFloat8(elems[i]);
		if (isnan(y[i]) || isinf(y[i]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s expects finite values", fname)));
	}
	if (js)
	{
		double		f = DpJamesSteinFactor(y, n, ns.variance);

		for (int i = 0; i < n; i++)
			elems[i] = Float8GetDatum(DpScale(y[i], f));
	}
	else
	{
		double		lambda = DpUniversalThreshold(&ns, n);

		for (int i = 0; i < n; i++)
			elems[i] = Float8GetDatum(DpSoftThreshold(y[i], lambda));
	}
	if (n == 0)
		PG_RETURN_ARRAYTYPE_P(arr);
	result = construct_array(elems, n, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	/* keep the input's lower bound */
	ARR_LBOUND(result)[0] = ARR_LBOUND(arr)[0];
	PG_RETURN_ARRAYTYPE_P(result);
}

/* dp_james_stein(float8[], mech, sensitivity). */
Datum
dp_james_stein_array(PG_FUNCTION_ARGS)
{
	return DpDenoiseArray(fcinfo, true, "dp_james_stein");
}

/* dp_soft_threshold(float8[], mech, sensitivity). */
Datum
dp_soft_threshold_array(PG_FUNCTION_ARGS)
{
	return DpDenoiseArray(fcinfo, false, "dp_soft_threshold");
}
