/*
 * moments.c — the BI aggregates answered from other releases: STDDEV /
 * VARIANCE from noisy moments, count(DISTINCT <public-key column>) from a
 * histogram over the public keys.
 *
 * Both are post-processing (free, public information only) of releases the
 * guard writes into the query (src/guard/derived.c): they read no data
 * and charge nothing; the releases they read were charged.
 *
 *   dp_pg.variance_from_moments(n, s1, s2, h, sample, root)
 *       the variance (its square root when root) of src/core/moments.c;
 *   dp_pg.present_keys(h, mech, rows, groups)
 *       the number of bins of a released histogram h whose noisy count
 *       exceeds tau, the noise's (1 - 0.05 / bins) one-sided quantile: a bin
 *       nobody holds counts with probability at most 0.05 / bins (0.05 in
 *       all), a bin held by more than tau + a few noise scales counts almost
 *       surely.  The noise is the histogram's: mech split over groups cells,
 *       sensitivity rows (1 and 1 without a privacy unit).
 *
 * Layer aggregates/ (docs/development.md): may call the release path
 * (call sites, cache), the ledger, common/ and the numeric core.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "aggregates.h"
#include "moments.h"

PG_FUNCTION_INFO_V1(dp_variance_from_moments);
PG_FUNCTION_INFO_V1(dp_present_keys);

/* dp_pg.variance_from_moments(n int8, s1 float8, s2 float8, h float8, sample bool, root bool) -> float8 */
Datum
dp_variance_from_moments(PG_FUNCTION_ARGS)
{
	double		v = dp_moments_variance((double) PG_GETARG_INT64(0), PG_GETARG_FLOAT8(1), PG_GETARG_FLOAT8(2),
										PG_GETARG_FLOAT8(3), PG_GETARG_BOOL(4));

	if (isnan(v))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("moments and half-width must be numbers, the half-width at least 0")));
	PG_RETURN_FLOAT8(PG_GETARG_BOOL(5) ? sqrt(v) : v);
}

/* dp_pg.present_keys(h jsonb, mech dp_mechanism, rows int8, groups int4) -> int8 (see above) */
Datum
dp_present_keys(PG_FUNCTION_ARGS)
{
	Jsonb	   *jb = PG_GETARG_JSONB_P(0);
	DpMechanism *mech = (DpMechanism *) PG_GETARG_POINTER(1);
	int64		rows = PG_GETARG_INT64(2);
	int32		groups = PG_GETARG_INT32(3);
	DpMechanism part;
	DpNoisePlan plan;
	char		err[256];
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int64		nbins = JB_ROOT_COUNT(jb);
	int64		present = 0;
	double		tau;

	if (!dp_mechanism_validate(mech, err, sizeof(err)))
		DpReportMechanismError(err);
	if (rows < 1 || rows > 1000000 || groups < 1 || groups > 1000000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rows and groups must be between 1 and 1000000, got %lld and %d", (long long) rows, groups)));
	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dp_pg.present_keys takes a histogram (a jsonb object of numbers)")));
	part = DpSplitMechanism(mech, groups);
	if (!dp_noise_plan(&plan, &part, rows, rows, 0, err, sizeof(err)))
		DpReportMechanismError(err);
	/* P(noise > tau) <= 0.05 / bins: the two-sided half-width at level 1 - 0.1 / bins */
	tau = dp_noise_plan_halfwidth(&plan, 1.0 - 0.1 / (double) Max(nbins, 1));
	it = JsonbIteratorInit(&jb->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_VALUE)
			continue;
		if (v.type != jbvNumeric)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("dp_pg.present_keys takes a histogram (a jsonb object of numbers)")));
		if (!numeric_is_nan(v.val.numeric) &&
			DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, NumericGetDatum(v.val.numeric))) > tau)
			present++;
	}
	PG_RETURN_INT64(present);
}
