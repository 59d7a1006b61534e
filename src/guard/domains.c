/*
 * guard/domains.c — value domains: the bounds a column's values are known
 * to lie in, which row expressions read their columns through (bounds.c)
 * and which give a translated aggregate its bounds (translate.c).
 *
 * A column's domain is the intersection of its CHECK constraints of the form
 * column op constant (op one of < <= > >= =; BETWEEN is two of them) and of
 * the domain a DBA declared with dp_pg.set_domain (common/protected.c), in
 * the column's own units: days of a date and microseconds of a time since
 * 2000.  Privacy never rests on a domain being true: the aggregates clamp
 * to the bounds they are given, and the domain reads clamp every value into
 * its domain (domainread.c).
 *
 * A per-unit subquery's columns (perunit.c: one row per unit, each per-unit
 * value clamped to a domain known before the query runs) have domains too:
 * perunit.c registers them for the statement being guarded, bounds.c reads
 * them here.
 *
 * Layer guard/, floor rows (docs/development.md): may call guard/'s floors
 * base, fences, reads and rows, the aggregates, the release path, the ledger,
 * common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include <math.h>

#include "access/table.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "guard/floor_rows.h"

/* See guard.h. */
bool
DpConstValue(Const *c, Oid coltype, double *v)
{
	bool		numbers = coltype == InvalidOid || coltype == INT2OID || coltype == INT4OID ||
		coltype == INT8OID || coltype == FLOAT4OID || coltype == FLOAT8OID || coltype == NUMERICOID;

	if (c->constisnull)
		return false;
	switch (c->consttype)
	{
		case INT2OID:
			*v = DatumGetInt16(c->constvalue);
			return numbers;
		case INT4OID:
			*v = DatumGetInt32(c->constvalue);
			return numbers;
		case INT8OID:
			*v = (double) DatumGetInt64(c->constvalue);
			return numbers;
		case FLOAT4OID:
			*v = DatumGetFloat4(c->constvalue);
			return numbers && !isnan(*v);
		case FLOAT8OID:
			*v = DatumGetFloat8(c->constvalue);
			return numbers && !isnan(*v);
		case NUMERICOID:
			if (!numbers || numeric_is_nan(DatumGetNumeric(c->constvalue)))
				return false;
			*v = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, c->constvalue));
			return true;
		case DATEOID:
			if (coltype != DATEOID || DATE_NOT_FINITE(DatumGetDateADT(c->constvalue)))
				return false;
			*v = DatumGetDateADT(c->constvalue);
			return true;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			if (coltype != c->consttype || TIMESTAMP_NOT_FINITE(DatumGetTimestamp(c->constvalue)))
				return false;
			*v = (double) DatumGetTimestamp(c->constvalue);
			return true;
		default:
			return false;
	}
}

/*
 * Narrow [*lo, *hi] by one conjunct of a CHECK constraint of the form
 * column op constant or constant op column (op <, <=, >, >=, =).
 */
static void
DpNarrowByConjunct(Node *c, AttrNumber attno, Oid coltype, double *lo, double *hi)
{
	OpExpr	   *op;
	Node	   *l,
			   *r;
	const char *name;
	double		v;
	bool		var_left;

	if (!IsA(c, OpExpr) || list_length(((OpExpr *) c)->args) != 2)
		return;
	op = (OpExpr *) c;
	l = DpStripRelabel(linitial(op->args));
	r = DpStripRelabel(lsecond(op->args));
	if (IsA(l, Var) && ((Var *) l)->varattno == attno && IsA(r, Const))
		var_left = true;
	else if (IsA(r, Var) && ((Var *) r)->varattno == attno && IsA(l, Const))
		var_left = false;
	else
		return;
	if (!DpConstValue((Const *) (var_left ? r : l), coltype, &v))
		return;
	/* the constraint is the owner's, on a built-in type: its operators are the standard ones */
	name = get_opname(op->opno);
	if (name == NULL)
		return;
	if (strcmp(name, "=") == 0)
	{
		*lo = Max(*lo, v);
		*hi = Min(*hi, v);
	}
	else if ((var_left && (strcmp(name, ">=") == 0 || strcmp(name, ">") == 0)) ||
			 (!var_left && (strcmp(name, "<=") == 0 || strcmp(name, "<") == 0)))
		*lo = Max(*lo, v);
	else if ((var_left && (strcmp(name, "<=") == 0 || strcmp(name, "<") == 0)) ||
			 (!var_left && (strcmp(name, ">=") == 0 || strcmp(name, ">") == 0)))
		*hi = Min(*hi, v);
}

/* See guard.h. */
bool
DpColumnDomain(Oid relid, AttrNumber attno, Oid coltype, double *lo, double *hi)
{
	Relation	rel = table_open(relid, AccessShareLock);
	TupleConstr *constr = rel->rd_att->constr;
	const char *attname = get_attname(relid, attno, false);
	double		dlo,
				dhi;

	*lo = -INFINITY;
	*hi = INFINITY;
	/* the column's type is built in: its comparison operators are the standard ones */
	for (int i = 0; constr != NULL && i < constr->num_check; i++)
	{
		ConstrCheck *cc = &constr->check[i];
		/* constants folded (CHECK (amount >= 0) on a numeric column stores numeric(0)) */
		List	   *conj = make_ands_implicit((Expr *) eval_const_expressions(NULL, stringToNode(cc->ccbin)));
		ListCell   *lc;

		foreach(lc, conj)
			DpNarrowByConjunct((Node *) lfirst(lc), attno, coltype, lo, hi);
	}
	table_close(rel, AccessShareLock);
	if (DpDeclaredDomain(relid, attname, &dlo, &dhi))
	{
		/*
		 * a date or time column's domain is kept in seconds since 1970
		 * (dp_pg.set_domain): in the column's own units, days of a date and
		 * microseconds of a time since 2000 (those of its CHECK constants),
		 * a date's rounded inwards
		 */
		switch (get_atttype(relid, attno))
		{
			case DATEOID:
				dlo = ceil(dlo / SECS_PER_DAY) - (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE);
				dhi = floor(dhi / SECS_PER_DAY) - (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE);
				break;
			case TIMESTAMPOID:
			case TIMESTAMPTZOID:
				dlo = (dlo - (double) SECS_PER_DAY * (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * USECS_PER_SEC;
				dhi = (dhi - (double) SECS_PER_DAY * (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * USECS_PER_SEC;
				break;
			default:
				break;
		}
		*lo = Max(*lo, dlo);
		*hi = Min(*hi, dhi);
	}
	return isfinite(*lo) && isfinite(*hi);
}

/* The V queries of the statement being guarded. */
static List *perunit_domains = NIL;

/* Forget the V queries of an earlier statement. */
void
DpPerUnitReset(void)
{
	perunit_domains = NIL;
}

/* Register the domains of a V query of this statement (perunit.c). */
void
DpPerUnitAddDomains(DpPerUnitDomains *reg)
{
	perunit_domains = lappend(perunit_domains, reg);
}

/* The domain of column attno of a per-unit subquery v, if it is a per-unit value. */
bool
DpPerUnitDomain(Query *v, AttrNumber attno, double *lo, double *hi, bool *integral)
{
	ListCell   *lc;

	foreach(lc, perunit_domains)
	{
		DpPerUnitDomains *d = lfirst(lc);

		if (d->v != v)
			continue;
		for (int i = 0; i < d->n; i++)
			if (d->cols[i].attno == attno && d->cols[i].value)
			{
				if (lo)
					*lo = d->cols[i].lo;
				if (hi)
					*hi = d->cols[i].hi;
				if (integral)
					*integral = d->cols[i].integral;
				return true;
			}
	}
	return false;
}
