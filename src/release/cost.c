/*
 * cost.c — what the releases of a query cost, composed and charged.
 *
 * Owns the composition of a query's call sites into one cost (sequential
 * over call sites, a call's groups in parallel), the ledger's detail of a
 * charge, the charge itself (leader only, before the first row), a
 * mechanism's share of a split budget, and dp_pg.estimate_cost(mech,
 * sensitivity).  Called by the call sites (callsite.c).
 *
 * Layer release/ (docs/development.md): may call the ledger (ledger.h),
 * common/ and the numeric core.
 */
#include "postgres.h"

#include <math.h>

#include "access/parallel.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "agg_common.h"
#include "ledger.h"
#include "release.h"

PG_FUNCTION_INFO_V1(dp_estimate_mechanism_cost);

/*
 * The mechanism with 1/k of its budget: epsilon (and delta) or rho divided
 * by k.  k releases of it compose to at most the original (basic composition
 * for (epsilon, delta), additivity of rho); the accountant composes their
 * Rényi curves, which is often tighter still.
 */
DpMechanism
DpSplitMechanism(const DpMechanism *mech, int k)
{
	DpMechanism part = *mech;

	switch (mech->form)
	{
		case DP_FORM_EPSILON:
		case DP_FORM_RHO:
		case DP_FORM_GROUPWISE:
			part.p[0] = mech->p[0] / k;	/* groupwise: its rho (r stays) */
			break;
		case DP_FORM_EPSILON_DELTA:
			part.p[0] = mech->p[0] / k;
			part.p[1] = mech->p[1] / k;
			break;
		default:
			break;				/* noise forms: refused by the planner */
	}
	return part;
}

/* See release.h. */
void
DpJsonNumber(StringInfo buf, double v)
{
	if (isnan(v) || isinf(v))
		appendStringInfoString(buf, "null");
	else
		appendStringInfo(buf, "%.17g", v);
}

/* The composed cost of the distinct call sites (and their count). */
int
DpComposeSites(List *sites, DpCost *total)
{
	ListCell   *lc;
	int			n = 0;

	dp_cost_zero(total);
	foreach(lc, sites)
	{
		DpCallSite *s = lfirst(lc);

		if (s->duplicate)
			continue;
		dp_cost_add(total, &s->cost);
		n++;
	}
	return n;
}

/* The ledger's detail: each call site with its mechanism, sensitivity, noise and Rényi curve. */
static char *
DpChargeDetail(List *sites)
{
	StringInfoData buf;
	ListCell   *lc;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"alphas\": [");
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		DpJsonNumber(&buf, DP_RDP_ALPHAS[i]);
	}
	appendStringInfoString(&buf, "], \"sites\": [");
	foreach(lc, sites)
	{
		DpCallSite *s = lfirst(lc);
		char		mech[DP_MECH_TEXT_LEN];

		if (s->duplicate)
			continue;
		dp_mechanism_format(&s->mech, mech, sizeof(mech));
		if (!first)
			appendStringInfoString(&buf, ", ");
		first = false;
		appendStringInfo(&buf, "{\"aggregate\": \"%s\", \"release\": %d, \"mechanism\": \"%s\", \"l1\": %lld, \"l2\": %lld, \"lattice_exp\": %d",
						 s->kind->name, s->release, mech, s->plan.l1, s->plan.l2, s->plan.lattice_exp);
		if (s->unit_groups > 1 || s->unit_rows > 1)
			appendStringInfo(&buf, ", \"unit_groups\": %d, \"unit_rows\": " INT64_FORMAT,
							 s->unit_groups, s->unit_rows);
		appendStringInfoString(&buf, ", \"scale\": ");
		DpJsonNumber(&buf, s->plan.scale);
		appendStringInfoString(&buf, ", \"sigma\": ");
		DpJsonNumber(&buf, s->plan.sigma);
		appendStringInfoString(&buf, ", \"m\": ");
		DpJsonNumber(&buf, s->plan.m);
		appendStringInfoString(&buf, ", \"epsilon\": ");
		DpJsonNumber(&buf, s->cost.epsilon);
		appendStringInfoString(&buf, ", \"delta\": ");
		DpJsonNumber(&buf, s->cost.delta);
		appendStringInfoString(&buf, ", \"rho\": ");
		DpJsonNumber(&buf, s->cost.rho);
		appendStringInfoString(&buf, ", \"rdp\": [");
		for (int i = 0; i < DP_RDP_NALPHAS; i++)
		{
			if (i > 0)
				appendStringInfoString(&buf, ", ");
			DpJsonNumber(&buf, s->cost.rdp[i]);
		}
		appendStringInfoString(&buf, "]}");
	}
	appendStringInfoString(&buf, "]}");
	return buf.data;
}

/* True if a composed cost is nothing at all: only free call sites (estimates of reports anyone may read). */
static bool
DpCostIsFree(const DpCost *c)
{
	if (c->epsilon != 0.0 || c->delta != 0.0 || c->rho != 0.0)
		return false;
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		if (c->rdp[i] != 0.0)
			return false;
	return true;
}

/* Charge the query's cost (leader only) and mark its sites charged. */
void
DpChargeQuery(QueryDesc *queryDesc, List *sites)
{
	ListCell   *lc;

	if (!IsParallelWorker())
	{
		Oid			roles[DP_MAX_CHARGE_ROLES];
		int			nroles;
		DpCost		total;

		/* a cost no ledger row could hold is refused for every role, charged or not */
		DpComposeSites(sites, &total);
		DpLedgerCheckCost(&total);
		nroles = DpLedgerChargedRoles(roles);
		if (nroles > 0 && !DpCostIsFree(&total))
		{
			DpLedgerCharge(roles, nroles, &total, queryDesc->sourceText, DpChargeDetail(sites));
			DpDebugPause("before_release");
		}
	}
	foreach(lc, sites)
		((DpCallSite *) lfirst(lc))->charged = true;
}

/* The (epsilon, delta, rho, call_sites) record of a cost. */
Datum
DpCostRecord(FunctionCallInfo fcinfo, const DpCost *c, int sites)
{
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = DpNullableFloat(c->epsilon, &nulls[0]);
	values[1] = Float8GetDatum(c->delta);
	values[2] = DpNullableFloat(c->rho, &nulls[2]);
	values[3] = Int32GetDatum(sites);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* dp_pg.estimate_cost(mech, sensitivity): what one release with this mechanism costs. */
Datum
dp_estimate_mechanism_cost(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = (DpMechanism *) PG_GETARG_POINTER(0);
	double		sensitivity = PG_GETARG_FLOAT8(1);
	DpNoisePlan plan;
	DpCost		c;
	char		err[256];

	if (!dp_noise_plan_real(&plan, mech, sensitivity, err, sizeof(err)))
		DpReportMechanismError(err);
	dp_noise_plan_cost(&plan, &c);
	return DpCostRecord(fcinfo, &c, 1);
}
