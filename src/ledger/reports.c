/*
 * reports.c — reports of privacy loss: the epsilon the budget filter
 * certifies for a set of charges.
 *
 * dp_pg.composed_epsilon(epsilon, delta, rho, rdp, rdp_delta, delta_limit
 * ORDER BY id) composes the charges it aggregates, in ledger order, exactly
 * as a budget does (dp_cost_append: rounded up, approximate parts in their
 * place) and returns the epsilon its certificates give at delta_limit
 * (NULL: none, or no charge).  The reports dp_pg.budget_windows and
 * dp_pg.table_budget_windows call it over each role's and each table
 * budget's charges per window (sql/dp_pg--0.2.0.sql); it reads only the rows
 * it is given (dp_pg.ledger shows each reader only the rows it may see).
 * Rows are checked like a charge (dp_cost_valid_charge): anything else is
 * ERROR 22023, so no report composes what no ledger row could hold.
 *
 * Layer ledger/ (docs/development.md): may call common/ and the numeric
 * core, nothing above; within ledger/ it calls nothing.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "accountant.h"
#include "ledger.h"

PG_FUNCTION_INFO_V1(dp_composed_epsilon_trans);
PG_FUNCTION_INFO_V1(dp_composed_epsilon_final);

/* The aggregate's state: the charges so far and the delta limit given. */
typedef struct DpComposedState
{
	DpCost		total;
	double		delta_limit;	/* NaN: not limited */
	int64		charges;
} DpComposedState;

/* A float8 argument, or dflt when NULL. */
static double
DpArgOr(FunctionCallInfo fcinfo, int argno, double dflt)
{
	return PG_ARGISNULL(argno) ? dflt : PG_GETARG_FLOAT8(argno);
}

/* Transition: one ledger row's cost appended, in the aggregate's (ORDER BY) order. */
Datum
dp_composed_epsilon_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	DpComposedState *st;
	DpCost		c;
	char		why[200];

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "dp_pg.composed_epsilon_trans called in non-aggregate context");
	if (PG_ARGISNULL(0))
	{
		st = MemoryContextAllocZero(aggcxt, sizeof(DpComposedState));
		dp_cost_zero(&st->total);
		st->delta_limit = NAN;
	}
	else
		st = (DpComposedState *) PG_GETARG_POINTER(0);

	dp_cost_zero(&c);
	c.epsilon = DpArgOr(fcinfo, 1, INFINITY);
	c.delta = DpArgOr(fcinfo, 2, 0.0);
	c.rho = DpArgOr(fcinfo, 3, INFINITY);
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		c.rdp[i] = INFINITY;
	if (!PG_ARGISNULL(4))
	{
		ArrayType  *a = PG_GETARG_ARRAYTYPE_P(4);
		Datum	   *elems;
		bool	   *nulls;
		int			n;

		if (ARR_ELEMTYPE(a) != FLOAT8OID || ARR_NDIM(a) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rdp must be a one-dimensional float8 array")));
		deconstruct_array(a, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
		if (n == DP_RDP_NALPHAS)
			for (int i = 0; i < n; i++)
				if (!nulls[i])
					c.rdp[i] = DatumGetFloat8(elems[i]);
	}
	c.rdp_delta = DpArgOr(fcinfo, 5, 0.0);
	c.rdp_mark = c.rdp_delta;
	if (!dp_cost_valid_charge(&c, why, sizeof(why)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dp_pg.composed_epsilon: a row that is not a valid charge"),
				 errdetail("As a charge, %s.", why)));
	if (!PG_ARGISNULL(6))
	{
		double		d = PG_GETARG_FLOAT8(6);

		if (!(d >= 0.0 && d < 1.0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("delta_limit must be at least 0 and less than 1, got %g", d)));
		st->delta_limit = d;
	}
	dp_cost_append(&st->total, &c);
	st->charges++;
	PG_RETURN_POINTER(st);
}

/* Final: the epsilon the certificates give at the delta limit (NULL: none, or no charge). */
Datum
dp_composed_epsilon_final(PG_FUNCTION_ARGS)
{
	DpComposedState *st;
	double		e;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (DpComposedState *) PG_GETARG_POINTER(0);
	if (st->charges == 0)
		PG_RETURN_NULL();
	e = dp_spent_epsilon(&st->total, st->delta_limit, NULL);
	if (!isfinite(e))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(e);
}
