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
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"

#include "accuracy.h"
#include "agg_common.h"
#include "guc.h"
#include "ledger.h"
#include "protected.h"
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

/*
 * The budget row whose accounting chooses accuracy first's family: the
 * session user's own when it is charged, else the first charged; false
 * without one.  *any_pure: some charged budget has a delta limit of 0 (it
 * admits only pure-epsilon charges, so the family must be Laplace whatever
 * the chosen row says).
 */
static bool
DpAccuracyRole(DpBudgetRow *row, bool *any_pure)
{
	Oid			roles[DP_MAX_CHARGE_ROLES];
	int			nroles = DpLedgerChargedRoles(roles);
	DpBudgetRow *rows;
	int			n;
	bool		found = false;

	*any_pure = false;
	if (nroles == 0)
		return false;
	n = DpLedgerBudgetRows(&rows);
	for (int r = 0; r < nroles; r++)
		for (int i = 0; i < n; i++)
		{
			if (rows[i].role != roles[r])
				continue;
			if (rows[i].s.limits.delta == 0.0)
				*any_pure = true;
			if (!found || rows[i].role == GetSessionUserId())
			{
				*row = rows[i];
				found = true;
			}
		}
	return found;
}

/* See release.h. */
int
DpAccuracyShapes(DpAccuracyShape shapes[2])
{
	DpBudgetRow row;
	bool		any_pure;

	if (!DpAccuracyRole(&row, &any_pure))
	{
		/* no budget: the default mechanism's family (and delta) */
		const DpMechanism *d = dp_default_mechanism;

		shapes[0].family = d->family;
		shapes[0].form = d->form;
		shapes[0].delta = d->form == DP_FORM_EPSILON_DELTA ? d->p[1] : 0.0;
		return 1;
	}
	if (any_pure)
	{
		/* a charged budget takes pure-epsilon charges only */
		shapes[0] = (DpAccuracyShape) {DP_MECH_LAPLACE, DP_FORM_EPSILON, 0.0};
		return 1;
	}
	if (!isnan(row.s.limits.rho))
	{
		/* zCDP accounting */
		shapes[0] = (DpAccuracyShape) {DP_MECH_GAUSSIAN, DP_FORM_RHO, 0.0};
		return 1;
	}
	shapes[0] = (DpAccuracyShape) {DP_MECH_LAPLACE, DP_FORM_EPSILON, 0.0};
	if (isnan(row.s.limits.delta) || row.s.limits.delta == 0.0)
		return 1;				/* pure epsilon (or basic composition only) */
	shapes[1] = (DpAccuracyShape) {DP_MECH_GAUSSIAN, DP_FORM_RHO, 0.0};
	return 2;
}

/* See release.h. */
bool
DpAccuracyPrefer(const DpCost *a, const DpCost *b)
{
	DpBudgetRow row;
	bool		any_pure;
	DpCost		ta,
				tb;
	int			method;

	if (!DpAccuracyRole(&row, &any_pure))
		return true;
	ta = row.s.spent;
	tb = row.s.spent;
	dp_cost_add(&ta, a);
	dp_cost_add(&tb, b);
	return dp_spent_epsilon(&ta, row.s.limits.delta, &method) <= dp_spent_epsilon(&tb, row.s.limits.delta, &method);
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
		if (dp_mechanism_is_accuracy(&s->asked))
		{
			char		asked[DP_MECH_TEXT_LEN];

			dp_mechanism_format(&s->asked, asked, sizeof(asked));
			appendStringInfo(&buf, ", \"asked\": \"%s\"", asked);
		}
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

/*
 * The table budgets of the protected tables the plan reads (its flattened
 * range table holds every relation of every subquery, CTE and view), each
 * once, with a table of this database for messages; returns how many.
 */
static int
DpQueryTableBudgets(PlannedStmt *pstmt, DpTableCharge *out)
{
	List	   *prot = DpProtectedTables();
	ListCell   *lc;
	int			n = 0;

	if (prot == NIL)
		return 0;
	foreach(lc, pstmt->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		DpProtected *p;
		bool		seen = false;

		if (rte->rtekind != RTE_RELATION || (p = DpFindProtected(prot, rte->relid)) == NULL || !p->has_budget)
			continue;
		for (int i = 0; i < n && !seen; i++)
			seen = memcmp(&out[i].budget, &p->budget, sizeof(pg_uuid_t)) == 0;
		if (seen)
			continue;
		if (n == DP_MAX_CHARGE_TABLES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("a dp query may read protected tables of at most %d table budgets", DP_MAX_CHARGE_TABLES),
					 errdetail("Nothing was charged and nothing was released.")));
		out[n].budget = p->budget;
		out[n].relid = p->relid;
		n++;
	}
	return n;
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
			DpTableCharge tables[DP_MAX_CHARGE_TABLES];
			int			ntables = DpQueryTableBudgets(queryDesc->plannedstmt, tables);

			DpLedgerCharge(roles, nroles, tables, ntables, &total, queryDesc->sourceText, DpChargeDetail(sites));
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

/* What an accuracy search plans with at a real sensitivity. */
typedef struct DpAccuracyReal
{
	double		sensitivity;
	double		level;
} DpAccuracyReal;

/* The half-width at the asked level of one additive release at the sensitivity (NAN: not plannable). */
static double
DpAccuracyRealHalfwidth(const DpMechanism *mech, void *arg)
{
	DpAccuracyReal *a = (DpAccuracyReal *) arg;
	DpNoisePlan plan;
	char		err[256];

	if (!dp_noise_plan_real(&plan, mech, a->sensitivity, err, sizeof(err)))
		return NAN;
	return dp_noise_plan_halfwidth(&plan, a->level);
}

/*
 * dp_pg.estimate_cost(mech, sensitivity): what one release with this
 * mechanism costs; for accuracy(halfwidth, level), one release of a value
 * with that sensitivity at the cheapest mechanism meeting it (the role's
 * family, as the aggregates choose it).
 */
Datum
dp_estimate_mechanism_cost(PG_FUNCTION_ARGS)
{
	DpMechanism *mech = (DpMechanism *) PG_GETARG_POINTER(0);
	double		sensitivity = PG_GETARG_FLOAT8(1);
	DpNoisePlan plan;
	DpCost		c;
	char		err[256];

	if (dp_mechanism_is_accuracy(mech))
	{
		DpAccuracyShape shapes[2];
		int			n = DpAccuracyShapes(shapes);
		DpAccuracyReal a = {sensitivity, mech->p[1]};
		bool		have = false;

		if (!dp_mechanism_validate(mech, err, sizeof(err)))
			DpReportMechanismError(err);
		if (!(sensitivity > 0.0) || !(sensitivity <= 1e15))
			DpReportMechanismError(psprintf("sensitivity must be a finite number greater than 0 and at most 1e15, got %g", sensitivity));
		for (int i = 0; i < n; i++)
		{
			DpMechanism chosen;
			DpCost		ci;

			if (!dp_accuracy_resolve(shapes[i].family, shapes[i].form, shapes[i].delta, mech->p[0],
									 DpAccuracyRealHalfwidth, &a, &chosen, err, sizeof(err)) ||
				!dp_noise_plan_real(&plan, &chosen, sensitivity, err, sizeof(err)))
				continue;
			dp_noise_plan_cost(&plan, &ci);
			if (!have || DpAccuracyPrefer(&ci, &c))
				c = ci;
			have = true;
		}
		if (!have)
			DpReportMechanismError(err);
		return DpCostRecord(fcinfo, &c, 1);
	}
	if (!dp_noise_plan_real(&plan, mech, sensitivity, err, sizeof(err)))
		DpReportMechanismError(err);
	dp_noise_plan_cost(&plan, &c);
	return DpCostRecord(fcinfo, &c, 1);
}
