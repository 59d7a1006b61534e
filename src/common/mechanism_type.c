/*
 * mechanism_type.c — the SQL type dp_mechanism and its constructors.
 *
 * A dp_mechanism is a fixed-length 24-byte value (DpMechanism).  Text input
 * goes through the plain-C parser in mechanism.c; binary input is validated
 * the same way, so no unchecked parameter can reach a sampler.  Every error
 * is SQLSTATE 22023 with the offending value named.
 *
 * Layer common/ (docs/development.md): may call the numeric core (core/)
 * and the rest of common/, nothing above.
 */
#include "postgres.h"

#include "fmgr.h"
#include "libpq/pqformat.h"

#include "agg_common.h"
#include "mechanism.h"

PG_FUNCTION_INFO_V1(dp_mechanism_in);
PG_FUNCTION_INFO_V1(dp_mechanism_out);
PG_FUNCTION_INFO_V1(dp_mechanism_recv);
PG_FUNCTION_INFO_V1(dp_mechanism_send);
PG_FUNCTION_INFO_V1(dp_mechanism_eq);
PG_FUNCTION_INFO_V1(dp_laplace);
PG_FUNCTION_INFO_V1(dp_gaussian);
PG_FUNCTION_INFO_V1(dp_gaussian_zcdp);
PG_FUNCTION_INFO_V1(dp_osgt);
PG_FUNCTION_INFO_V1(dp_rr);
PG_FUNCTION_INFO_V1(dp_groupwise);
PG_FUNCTION_INFO_V1(dp_accuracy);

/* Return mech as a new Datum after validating it. */
static Datum
DpMechanismDatum(const DpMechanism *mech)
{
	DpMechanism *result;
	char		err[256];

	if (!dp_mechanism_validate(mech, err, sizeof(err)))
		DpReportMechanismError(err);
	result = (DpMechanism *) palloc(sizeof(DpMechanism));
	*result = *mech;
	return PointerGetDatum(result);
}

/* Text input: laplace(epsilon=1) and the other forms of mechanism.h. */
Datum
dp_mechanism_in(PG_FUNCTION_ARGS)
{
	char	   *text = PG_GETARG_CSTRING(0);
	DpMechanism mech;
	char		err[256];

	if (!dp_mechanism_parse(text, &mech, err, sizeof(err)))
		DpReportMechanismError(err);
	return DpMechanismDatum(&mech);
}

/* Text output in canonical form. */
Datum
dp_mechanism_out(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = (DpMechanism *) PG_GETARG_POINTER(0);
	char	   *buf = palloc(DP_MECH_TEXT_LEN);

	dp_mechanism_format(mech, buf, DP_MECH_TEXT_LEN);
	PG_RETURN_CSTRING(buf);
}

/* Binary input: family int4, form int4, two float8; validated like text. */
Datum
dp_mechanism_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	DpMechanism mech;

	mech.family = pq_getmsgint(buf, 4);
	mech.form = pq_getmsgint(buf, 4);
	mech.p[0] = pq_getmsgfloat8(buf);
	mech.p[1] = pq_getmsgfloat8(buf);
	return DpMechanismDatum(&mech);
}

/* Binary output. */
Datum
dp_mechanism_send(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = (DpMechanism *) PG_GETARG_POINTER(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint32(&buf, mech->family);
	pq_sendint32(&buf, mech->form);
	pq_sendfloat8(&buf, mech->p[0]);
	pq_sendfloat8(&buf, mech->p[1]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Equality: same family, form and parameters. */
Datum
dp_mechanism_eq(PG_FUNCTION_ARGS)
{
	DpMechanism *a = (DpMechanism *) PG_GETARG_POINTER(0);
	DpMechanism *b = (DpMechanism *) PG_GETARG_POINTER(1);

	PG_RETURN_BOOL(a->family == b->family && a->form == b->form &&
				   a->p[0] == b->p[0] && a->p[1] == b->p[1]);
}

/* Build a mechanism from a family, a form and its parameters. */
static Datum
DpMechanismMake(int family, int form, double p0, double p1)
{
	DpMechanism mech;

	mech.family = family;
	mech.form = form;
	mech.p[0] = p0;
	mech.p[1] = p1;
	return DpMechanismDatum(&mech);
}

/* dp_laplace(epsilon): (epsilon, 0)-DP discrete Laplace noise. */
Datum
dp_laplace(PG_FUNCTION_ARGS)
{
	return DpMechanismMake(DP_MECH_LAPLACE, DP_FORM_EPSILON, PG_GETARG_FLOAT8(0), 0.0);
}

/* dp_gaussian(epsilon, delta): analytic Gaussian. */
Datum
dp_gaussian(PG_FUNCTION_ARGS)
{
	return DpMechanismMake(DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA,
						   PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1));
}

/* dp_gaussian_zcdp(rho): rho-zCDP Gaussian. */
Datum
dp_gaussian_zcdp(PG_FUNCTION_ARGS)
{
	return DpMechanismMake(DP_MECH_GAUSSIAN, DP_FORM_RHO, PG_GETARG_FLOAT8(0), 0.0);
}

/* dp_osgt(epsilon, delta): variance-optimal sub-Gaussian OSGT. */
Datum
dp_osgt(PG_FUNCTION_ARGS)
{
	return DpMechanismMake(DP_MECH_OSGT, DP_FORM_EPSILON_DELTA,
						   PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1));
}

/* dp_rr(epsilon): randomized response, for dp_pg.randomize. */
Datum
dp_rr(PG_FUNCTION_ARGS)
{
	return DpMechanismMake(DP_MECH_RR, DP_FORM_LOCAL, PG_GETARG_FLOAT8(0), 0.0);
}

/* dp_groupwise(rho, r): seed 001's group-wise relative-error counts. */
Datum
dp_groupwise(PG_FUNCTION_ARGS)
{
	return DpMechanismMake(DP_MECH_GROUPWISE, DP_FORM_GROUPWISE, PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1));
}

/* dp_accuracy(halfwidth, level, rows): the cheapest noise meeting a half-width. */
Datum
dp_accuracy(PG_FUNCTION_ARGS)
{
	int32		rows = PG_GETARG_INT32(2);

	if (rows < 1)
		DpReportMechanismError(psprintf("rows must be a whole number between 1 and %d, got %d",
										DP_MAX_ACCURACY_ROWS, rows));
	return DpMechanismMake(DP_MECH_ACCURACY, rows, PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1));
}

/*
 * The order of mechanisms (the btree operator class dp_pg.mechanism_ops):
 * family, form, then the parameters, which are finite (validated).  With it
 * a mechanism can be sorted with the other arguments of an aggregate call
 * with DISTINCT: dp_count(DISTINCT <privacy unit>, <mechanism>).
 */
static int
DpMechanismCompare(const DpMechanism *a, const DpMechanism *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	if (a->form != b->form)
		return a->form < b->form ? -1 : 1;
	for (int i = 0; i < 2; i++)
		if (a->p[i] != b->p[i])
			return a->p[i] < b->p[i] ? -1 : 1;
	return 0;
}

PG_FUNCTION_INFO_V1(dp_mechanism_cmp);
PG_FUNCTION_INFO_V1(dp_mechanism_lt);
PG_FUNCTION_INFO_V1(dp_mechanism_le);
PG_FUNCTION_INFO_V1(dp_mechanism_gt);
PG_FUNCTION_INFO_V1(dp_mechanism_ge);
PG_FUNCTION_INFO_V1(dp_mechanism_ne);

#define DP_MECH_CMP_ARGS ((DpMechanism *) PG_GETARG_POINTER(0)), ((DpMechanism *) PG_GETARG_POINTER(1))

/* btree support: -1, 0 or 1. */
Datum
dp_mechanism_cmp(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(DpMechanismCompare(DP_MECH_CMP_ARGS));
}

/* a < b */
Datum
dp_mechanism_lt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(DpMechanismCompare(DP_MECH_CMP_ARGS) < 0);
}

/* a <= b */
Datum
dp_mechanism_le(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(DpMechanismCompare(DP_MECH_CMP_ARGS) <= 0);
}

/* a > b */
Datum
dp_mechanism_gt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(DpMechanismCompare(DP_MECH_CMP_ARGS) > 0);
}

/* a >= b */
Datum
dp_mechanism_ge(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(DpMechanismCompare(DP_MECH_CMP_ARGS) >= 0);
}

/* a <> b */
Datum
dp_mechanism_ne(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(DpMechanismCompare(DP_MECH_CMP_ARGS) != 0);
}
