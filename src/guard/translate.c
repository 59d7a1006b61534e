/*
 * guard/translate.c — the aggregates BI tools write, made private.
 *
 * A BI tool's question builder writes count(*), count(col), count(1),
 * sum(col) and avg(col).  On a protected table an analyst's plain aggregate
 * of the top level is planned as its dp counterpart with the role's default
 * mechanism (dp_pg.default_mechanism) before the shape is checked, so the
 * rest of the guard sees an ordinary dp query and checks it as one:
 *
 *   count(*)           dp_count(*)
 *   count(x)           dp_count(x, <default mechanism>)
 *   sum(x)             dp_sum(x, lower, upper, <default mechanism>)
 *   avg(x)             dp_avg(x::float8, lower, upper, <default mechanism>)
 *   percentile_cont(q) / percentile_disc(q) WITHIN GROUP (ORDER BY x)
 *                      dp_quantile(x::float8, q, lower, upper, <default mechanism>)
 *   min(x), max(x)     the same with q = 0, q = 1
 *
 * with FILTER kept, and the result cast back to the plain aggregate's type
 * (sum(int8) is numeric, avg(int) is numeric, ...), so that the columns a
 * client was told about at Describe keep their types.
 *
 * Bounds come from the column's value domain (what Snowflake calls a
 * privacy domain): the intersection of the column's CHECK constraints of the
 * form column >= / > / <= / < constant (BETWEEN is two of them) and of the
 * domain a DBA declared with dp_pg.set_domain().  Privacy never rests on the
 * domain being true: dp_sum and dp_avg clamp every value to the bounds they
 * are given and calibrate to them.  A constraint the owner wrote and
 * PostgreSQL enforces is merely the tightest bound that loses nothing.  An
 * integer column's bounds are rounded inwards to integers.  Without a domain
 * the query is refused with the way to declare one.
 *
 * Not translated (the shape check then refuses them as before): aggregates
 * below the top level, DISTINCT or ORDER BY inside an aggregate (except
 * count(DISTINCT <privacy unit>), below), other aggregates (string_agg, ...),
 * sums of money or intervals, and sums or averages of expressions that are
 * not a column of the protected table.
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "aggregates.h"
#include "release.h"
#include "guard/guard.h"
#include "guc.h"

PG_FUNCTION_INFO_V1(dp_clamp_float8);
PG_FUNCTION_INFO_V1(dp_run_constant);

typedef struct DpTranslate
{
	DpProtected *prot;
	int			prot_rti;
	Oid			extschema;		/* where dp_count, dp_sum, dp_avg live */
	Query	   *q;
} DpTranslate;

/* The OID of dp aggregate name(argtypes) in dp_pg's schema, checked to be dp_pg's. */
static Oid
DpExtAggregate(DpTranslate *t, const char *name, int nargs, const Oid *argtypes, const DpAggKind *kind)
{
	Oid			fn = LookupFuncName(list_make2(makeString(get_namespace_name(t->extschema)),
											   makeString((char *) name)),
									nargs, argtypes, true);

	if (!OidIsValid(fn) || DpKindOfAggregate(fn) != kind)
		DpGuardRefuse("the dp_pg installation is incomplete", psprintf("%s is missing.", name));
	return fn;
}

/* dp_pg.clamp_float8(numeric, float8, float8), or InvalidOid. */
Oid
DpClampFloat8Function(void)
{
	Oid			argtypes[3] = {NUMERICOID, FLOAT8OID, FLOAT8OID};

	return LookupFuncName(list_make2(makeString("dp_pg"), makeString("clamp_float8")), 3, argtypes, true);
}

/* A float8 constant. */
static Const *
DpFloat8Const(double v)
{
	return makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(v), false, FLOAT8PASSBYVAL);
}

/* A cast of expr by function fn to type rettype. */
static Expr *
DpCast(Oid fn, Oid rettype, Expr *expr)
{
	return (Expr *) makeFuncExpr(fn, rettype, list_make1(expr), InvalidOid, InvalidOid, COERCE_IMPLICIT_CAST);
}

/*
 * A released float8 (a noisy sum, a quantile) as the plain aggregate's type:
 * dp_pg's total conversion, so that a noisy value beyond the type saturates
 * instead of failing after the release.
 */
static Expr *
DpReleasedAs(Oid rettype, Expr *expr)
{
	return (Expr *) makeFuncExpr(DpTotalFunction(DpTotalCastTo(rettype)), rettype, list_make1(expr),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

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

/* Strip binary-compatible relabelling. */
static Node *
DpStrip(Node *n)
{
	while (n && IsA(n, RelabelType))
		n = (Node *) ((RelabelType *) n)->arg;
	return n;
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
	l = DpStrip(linitial(op->args));
	r = DpStrip(lsecond(op->args));
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

/* The bounds of column v for agg, or ERROR naming how to declare them. */
static void
DpDomainBounds(DpTranslate *t, Var *v, const char *agg, double *lo, double *hi)
{
	const char *rel = quote_qualified_identifier(get_namespace_name(get_rel_namespace(t->prot->relid)),
												 get_rel_name(t->prot->relid));
	const char *col = get_attname(t->prot->relid, v->varattno, false);

	bool		sum_or_avg = strcmp(agg, "sum") == 0 || strcmp(agg, "avg") == 0;

	if (DpColumnDomain(t->prot->relid, v->varattno, InvalidOid, lo, hi))
		return;
	if (strcmp(agg, "stddev") == 0 || strcmp(agg, "variance") == 0)
		DpGuardRefuse(psprintf("%s(%s) needs a value domain for column \"%s\"", agg, col, col),
					  psprintf("A dp %s sums values clamped to known bounds.  The table's owner can add "
							   "CHECK (%s BETWEEN <lower> AND <upper>) to \"%s\", or a DBA can declare them with "
							   "SELECT dp_pg.set_domain('%s', '%s', <lower>, <upper>).", agg, col, rel, rel, col));
	DpGuardRefuse(psprintf("%s(%s) needs a value domain for column \"%s\"", agg, col, col),
				  psprintf("A dp %s clamps every value to known bounds.  The table's owner can add "
						   "CHECK (%s BETWEEN <lower> AND <upper>) to \"%s\", or a DBA can declare them with "
						   "SELECT dp_pg.set_domain('%s', '%s', <lower>, <upper>); or write %s(%s, %s<lower>, <upper>, <mechanism>).",
						   sum_or_avg ? "sum or average" : "quantile", col, rel, rel, col,
						   sum_or_avg ? psprintf("dp_%s", agg) : "dp_quantile", col,
						   sum_or_avg ? "" : "<q>, "));
}

/*
 * A bound derived by interval arithmetic, to ten significant digits: the
 * intervals are rounded outwards by 1e-12 of each bound for their own
 * soundness, which would only show as noise in the bounds (the aggregates
 * clamp to whatever bounds they are given).
 */
static double
DpTidyBound(double v)
{
	char		buf[64];

	snprintf(buf, sizeof(buf), "%.10g", v);
	return strtod(buf, NULL);
}

/* True if type is a number type whose intervals bounds.c computes. */
static bool
DpIsNumberType(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID || type == FLOAT4OID ||
		type == FLOAT8OID || type == NUMERICOID;
}

/* Context of DpExprDomain. */
typedef struct DpDomainWalk
{
	DpTranslate *t;
	const char *agg;
	double		lo,
				hi;				/* the hull so far (lo > hi: no value yet) */
} DpDomainWalk;

/*
 * Widen the hull by the values expression e of a sum or avg argument can
 * take: a column of the protected table (its value domain), a constant, a
 * widening cast of those, CASE WHEN ... THEN ... ELSE ... END and COALESCE
 * of those (what BI tools write: SUM(CASE WHEN member THEN 1 ELSE 0 END),
 * SUM(CASE WHEN ... THEN amount ELSE 0 END), SUM(1), AVG(CAST(age AS DOUBLE
 * PRECISION))).  NULL adds nothing (the aggregates skip it).  ERROR for
 * anything else: its values are not known.
 */
static void
DpExprDomain(Node *e, DpDomainWalk *w)
{
	double		lo,
				hi;
	ListCell   *lc;

	e = DpStrip(e);
	switch (nodeTag(e))
	{
		case T_Var:
			{
				Var		   *v = (Var *) DpStrip(DpFlattenJoinAliasVars(w->t->q, copyObject(e)));

				if (!IsA(v, Var) || v->varlevelsup != 0 || v->varno != w->t->prot_rti || v->varattno <= 0)
					DpGuardRefuse(psprintf("%s() on a protected table takes columns of the table", w->agg),
								  psprintf("The bounds of %s() come from the columns' value domains; for other expressions write "
										   "dp_%s(<expression>, <lower>, <upper>, <mechanism>).", w->agg, w->agg));
				DpDomainBounds(w->t, v, w->agg, &lo, &hi);
				break;
			}
		case T_Const:
			if (((Const *) e)->constisnull)
				return;
			if (!DpConstValue((Const *) e, InvalidOid, &lo) || !isfinite(lo))
				DpGuardRefuse(psprintf("%s() of a constant that is not a finite number", w->agg), "Use a number.");
			hi = lo;
			break;
		case T_FuncExpr:
			if (DpIsWideningCast(((FuncExpr *) e)->funcid) || ((FuncExpr *) e)->funcid == F_FLOAT8_NUMERIC ||
				((FuncExpr *) e)->funcid == F_NUMERIC_FLOAT8)
			{
				DpExprDomain(linitial(((FuncExpr *) e)->args), w);
				return;
			}
			/* FALLTHROUGH */
		case T_OpExpr:
		case T_NullIfExpr:
		case T_MinMaxExpr:
			/*
			 * arithmetic, and the generalising functions of a number that
			 * arithmetic takes as operands (floor(y), round(y), extract(day
			 * FROM d): what "+ 0" would make arithmetic)
			 */
			if (DpIsBoundedExpression(e) ||
				(DpIsGeneralising(e) && DpIsNumberType(exprType(e))))
			{
				/* arithmetic: the interval of its values (bounds.c), tidied (the aggregate clamps to it) */
				DpInterval	iv;

				DpBoundsOf(e, w->t->q->rtable, psprintf("the argument of %s()", w->agg), &iv);
				if (iv.lo > iv.hi)
					return;		/* only NULL */
				lo = DpTidyBound(iv.lo);
				hi = DpTidyBound(iv.hi);
				break;
			}
			/* FALLTHROUGH */
		default:
			DpGuardRefuse(psprintf("%s() on a protected table takes a column, a constant, or CASE / COALESCE of those", w->agg),
						  psprintf("The bounds of %s() come from the columns' value domains; for other expressions write "
								   "dp_%s(<expression>, <lower>, <upper>, <mechanism>).", w->agg, w->agg));
			return;
		case T_CaseExpr:
			{
				CaseExpr   *c = (CaseExpr *) e;

				foreach(lc, c->args)
					DpExprDomain((Node *) lfirst_node(CaseWhen, lc)->result, w);
				if (c->defresult != NULL)
					DpExprDomain((Node *) c->defresult, w);
				return;
			}
		case T_CoalesceExpr:
			foreach(lc, ((CoalesceExpr *) e)->args)
				DpExprDomain(lfirst(lc), w);
			return;
	}
	if (w->lo > w->hi)
	{
		w->lo = lo;
		w->hi = hi;
	}
	else
	{
		w->lo = Min(w->lo, lo);
		w->hi = Max(w->hi, hi);
	}
}

/*
 * The bounds of a sum or avg argument of type argtype: the hull of the
 * values it can take (DpExprDomain), rounded inward to integers for an
 * integer argument.
 */
static void
DpArgumentBounds(DpTranslate *t, Aggref *a, const char *agg, Oid argtype, double *lo, double *hi)
{
	DpDomainWalk w = {t, agg, 1, 0};

	DpExprDomain((Node *) linitial_node(TargetEntry, a->args)->expr, &w);
	if (w.lo > w.hi)
		w.lo = w.hi = 0;		/* only NULL: every value is skipped */
	*lo = w.lo;
	*hi = w.hi;
	if (argtype == INT2OID || argtype == INT4OID || argtype == INT8OID)
	{
		double		tmin = argtype == INT2OID ? PG_INT16_MIN : argtype == INT4OID ? PG_INT32_MIN : -9.2233720368547748e18;
		double		tmax = argtype == INT2OID ? PG_INT16_MAX : argtype == INT4OID ? PG_INT32_MAX : 9.2233720368547748e18;

		*lo = Max(ceil(*lo), tmin);
		*hi = Min(floor(*hi), tmax);
		if (argtype == INT8OID && *hi >= 9.2233720368547748e18)
			*hi = 9.2233720368547738e18;	/* the largest double below 2^63 */
	}
	if (*lo > *hi)
		DpGuardRefuse(psprintf("the value domain of the argument of %s() is empty", agg),
					  psprintf("Its bounds are %g and %g.", *lo, *hi));
}

/* See guard.h: the bounds of aggregate a's argument over protected table p (at prot_rti) of query q. */
void
DpTranslateArgumentBounds(Query *q, DpProtected *p, int prot_rti, Aggref *a, const char *agg, Oid argtype,
						  double *lo, double *hi)
{
	DpTranslate t;

	memset(&t, 0, sizeof(t));
	t.prot = p;
	t.prot_rti = prot_rti;
	t.q = q;
	DpArgumentBounds(&t, a, agg, argtype, lo, hi);
}

/* The mechanism argument of a translated call: the role's default mechanism. */
static Expr *
DpDefaultMechanism(void)
{
	return (Expr *) DpMechanismConst(dp_default_mechanism);
}

/* A dp aggregate call like plain aggregate a (its FILTER kept). */
static Aggref *
DpLike(Aggref *a, Oid fn, Oid rettype, List *args, bool star)
{
	return DpMakeAggref(fn, rettype, args, a->inputcollid, a->aggfilter, star);
}

/*
 * count(DISTINCT x): of a column with public keys, the keys present in a
 * histogram over them (derived.c); of anything else, dp_count(DISTINCT x)
 * (the privacy unit: persons, once per unit; another value: its distinct
 * values, units.c and distinct.c bound them per unit).
 */
static Node *
DpTranslateCountDistinct(DpTranslate *t, Aggref *a)
{
	Node	   *arg = DpStrip((Node *) linitial_node(TargetEntry, a->args)->expr);
	Var		   *v;

	arg = DpStrip(DpFlattenJoinAliasVars(t->q, copyObject(arg)));
	v = IsA(arg, Var) ? (Var *) arg : NULL;
	if (v != NULL && v->varno == t->prot_rti && v->varlevelsup == 0 && v->varattno > 0 &&
		!(t->prot->has_unit && strcmp(get_attname(t->prot->relid, v->varattno, false), NameStr(t->prot->unit)) == 0))
	{
		/* a column with declared public keys: the keys present in a histogram over them (derived.c) */
		ArrayType  *keys = DpPublicKeys(t->prot->relid, get_attname(t->prot->relid, v->varattno, false));

		if (keys != NULL)
		{
			Oid			argtypes[3] = {ANYCOMPATIBLEOID, ANYCOMPATIBLEARRAYOID, DpMechanismType()};

			return DpTranslateDistinctKeys(a, keys, DpExtAggregate(t, "dp_histogram", 3, argtypes, &dp_histogram_bins_kind),
										   t->prot->has_unit ? t->prot->max_rows : 1,
										   t->prot->has_unit ? t->prot->max_groups : 1);
		}
	}
	/*
	 * any other value: a private count of its distinct values (its
	 * sensitivity the values one person holds: shape.c, units.c); the
	 * privacy unit: the number of persons
	 */
	{
		Oid			argtypes[2] = {ANYOID, DpMechanismType()};
		Oid			fn = DpExtAggregate(t, "dp_count", 2, argtypes, &dp_count_kind);
		Aggref	   *d = DpLike(a, fn, INT8OID, list_make2(copyObject(linitial_node(TargetEntry, a->args)->expr),
														  DpDefaultMechanism()), false);

		d->aggdistinct = copyObject(a->aggdistinct);
		/* the DISTINCT clause refers to the unit's argument by its sort-group reference */
		linitial_node(TargetEntry, d->args)->ressortgroupref = linitial_node(TargetEntry, a->args)->ressortgroupref;
		{
			/* and, as in dp_count(DISTINCT x, mech) parsed, to the (constant) mechanism */
			SortGroupClause *sgc = makeNode(SortGroupClause);
			Index		ref = linitial_node(TargetEntry, d->args)->ressortgroupref + 1;
			bool		hashable;

			get_sort_group_operators(DpMechanismType(), true, true, false, &sgc->sortop, &sgc->eqop, NULL, &hashable);
			sgc->hashable = hashable;
			sgc->tleSortGroupRef = ref;
			lsecond_node(TargetEntry, d->args)->ressortgroupref = ref;
			d->aggdistinct = lappend(d->aggdistinct, sgc);
		}
		return (Node *) d;
	}
}

/*
 * min / max / percentile_disc of a date or time column x: ERROR saying how
 * to declare its value domain if it has none (no CHECK bounds, no declared
 * domain, no public keys).  Other expressions of dates are left to bounds.c.
 */
static void
DpTimeDomainCheck(DpTranslate *t, Expr *x, const char *agg)
{
	Var		   *v = (Var *) DpStrip(DpFlattenJoinAliasVars(t->q, copyObject((Node *) x)));
	const char *rel;
	const char *col;
	double		lo,
				hi;

	if (!IsA(v, Var) || v->varlevelsup != 0 || v->varno != t->prot_rti || v->varattno <= 0)
		return;
	col = get_attname(t->prot->relid, v->varattno, false);
	if (DpColumnDomain(t->prot->relid, v->varattno, v->vartype, &lo, &hi) ||
		DpPublicKeys(t->prot->relid, col) != NULL)
		return;
	rel = quote_qualified_identifier(get_namespace_name(get_rel_namespace(t->prot->relid)),
									 get_rel_name(t->prot->relid));
	DpGuardRefuseHint(psprintf("%s(%s) needs a value domain for column \"%s\"", agg, col, col),
					  psprintf("A dp %s of a %s is a quantile over the values the column can take: its first and last "
							   "possible %s must be known.", agg, format_type_be(v->vartype),
							   v->vartype == DATEOID ? "dates" : "times"),
					  psprintf("A DBA declares them with SELECT dp_pg.set_domain('%s', '%s', '<first>', '<last>'), "
							   "%s in quotes such as '%s'; or the table's owner adds "
							   "CHECK (%s BETWEEN '<first>' AND '<last>') to \"%s\"; or declare the column's public keys.",
							   rel, col, v->vartype == DATEOID ? "dates" : "times",
							   v->vartype == DATEOID ? "2024-01-01" : "2024-01-01 00:00", quote_identifier(col), rel));
}

/*
 * percentile_cont / percentile_disc (q) WITHIN GROUP (ORDER BY x), min(x),
 * max(x) of a numeric column: dp_quantile(x::float8, q, lower, upper) over
 * the column's value domain with the default mechanism (q = 0 for min, 1 for
 * max), cast back to the plain aggregate's type.
 */
static Node *
DpTranslateQuantile(DpTranslate *t, Aggref *a, Expr *q, const char *agg)
{
	Expr	   *x = (Expr *) copyObject(linitial_node(TargetEntry, a->args)->expr);
	Oid			argtype = exprType((Node *) x);	/* (aggargtypes starts with the direct arguments') */
	Oid			argtypes[5] = {FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, InvalidOid};
	double		lo,
				hi;
	Oid			fn;
	Aggref	   *d;

	switch (argtype)
	{
		case INT2OID:
			x = DpCast(F_FLOAT8_INT2, FLOAT8OID, x);
			break;
		case INT4OID:
			x = DpCast(F_FLOAT8_INT4, FLOAT8OID, x);
			break;
		case INT8OID:
			x = DpCast(F_FLOAT8_INT8, FLOAT8OID, x);
			break;
		case FLOAT4OID:
			x = DpCast(F_FLOAT8_FLOAT4, FLOAT8OID, x);
			break;
		case NUMERICOID:
			x = DpCast(F_FLOAT8_NUMERIC, FLOAT8OID, x);
			break;
		case FLOAT8OID:
			break;
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			/* a date or time as days or seconds, over its domain or public keys (bounds.c) */
			DpTimeDomainCheck(t, x, agg);
			x = DpTimeAsNumber(x, t->q->rtable, &lo, &hi);
			break;
		default:
			return NULL;
	}
	/* an integer column's bounds within its type, so the cast back never fails */
	if (argtype != DATEOID && argtype != TIMESTAMPOID && argtype != TIMESTAMPTZOID)
		DpArgumentBounds(t, a, agg, (argtype == INT2OID || argtype == INT4OID || argtype == INT8OID) ? argtype : FLOAT8OID,
						 &lo, &hi);
	if (argtype == FLOAT4OID)
	{
		lo = Max(lo, -FLT_MAX);
		hi = Min(hi, FLT_MAX);
	}
	if (!(lo < hi))
		DpGuardRefuse(psprintf("the value domain of the argument of %s() is a single value", agg),
					  psprintf("Its bounds are %g and %g: declare a wider domain.", lo, hi));
	argtypes[4] = DpMechanismType();
	fn = DpExtAggregate(t, "dp_quantile", 5, argtypes, &dp_quantile_kind);
	d = DpLike(a, fn, FLOAT8OID, list_make5(x, q, DpFloat8Const(lo), DpFloat8Const(hi), DpDefaultMechanism()), false);
	switch (a->aggtype)
	{
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return (Node *) DpNumberAsTime((Expr *) d, a->aggtype);
		case INT2OID:
			return (Node *) DpReleasedAs(INT2OID, (Expr *) d);
		case INT4OID:
			return (Node *) DpReleasedAs(INT4OID, (Expr *) d);
		case INT8OID:
			return (Node *) DpReleasedAs(INT8OID, (Expr *) d);
		case FLOAT4OID:
			return (Node *) DpReleasedAs(FLOAT4OID, (Expr *) d);
		case NUMERICOID:
			return (Node *) DpCast(F_NUMERIC_FLOAT8, NUMERICOID, (Expr *) d);
		default:
			return (Node *) d;
	}
}

/* The dp counterpart of plain aggregate a, or NULL if it is not one to translate. */
static Node *
DpTranslateAggref(DpTranslate *t, Aggref *a)
{
	Oid			mechtype;
	Oid			fn;
	double		lo,
				hi;
	Expr	   *x;

	/*
	 * The quantiles of BI tools: percentile_cont / percentile_disc (q)
	 * WITHIN GROUP (ORDER BY x [ASC | DESC]); descending order asks for the
	 * (1 - q)-quantile.  Any other ordering operator is not translated.
	 */
	if (a->aggkind == AGGKIND_ORDERED_SET && a->aggdistinct == NIL && list_length(a->aggdirectargs) == 1 &&
		list_length(a->args) == 1 && list_length(a->aggorder) == 1 &&
		(a->aggfnoid == F_PERCENTILE_CONT_FLOAT8_FLOAT8 || a->aggfnoid == F_PERCENTILE_DISC_FLOAT8_ANYELEMENT))
	{
		SortGroupClause *sgc = linitial_node(SortGroupClause, a->aggorder);
		Oid			type = exprType((Node *) linitial_node(TargetEntry, a->args)->expr);
		TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
		Expr	   *q = (Expr *) copyObject(linitial(a->aggdirectargs));

		if (exprType((Node *) q) != FLOAT8OID)
			return NULL;
		if (OidIsValid(tc->gt_opr) && sgc->sortop == tc->gt_opr)
			q = (Expr *) makeFuncExpr(F_FLOAT8MI, FLOAT8OID, list_make2(DpFloat8Const(1.0), q),
									  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		else if (!OidIsValid(tc->lt_opr) || sgc->sortop != tc->lt_opr)
			return NULL;
		return DpTranslateQuantile(t, a, q,
								   a->aggfnoid == F_PERCENTILE_CONT_FLOAT8_FLOAT8 ? "percentile_cont" : "percentile_disc");
	}
	if (a->aggkind != AGGKIND_NORMAL || a->aggorder != NIL || a->aggdirectargs != NIL)
		return NULL;
	{
		/* STDDEV / VARIANCE: three noisy moments over the domain (derived.c) */
		bool		sample,
					root;

		if (DpIsDispersion(a->aggfnoid, &sample, &root) && a->aggdistinct == NIL)
		{
			Oid			cargs[2] = {ANYOID, DpMechanismType()};
			Oid			sargs[4] = {FLOAT8OID, FLOAT8OID, FLOAT8OID, DpMechanismType()};

			DpArgumentBounds(t, a, root ? "stddev" : "variance", FLOAT8OID, &lo, &hi);
			return DpTranslateDispersion(a, lo, hi, DpExtAggregate(t, "dp_count", 2, cargs, &dp_count_kind),
										 DpExtAggregate(t, "dp_sum", 4, sargs, &dp_sum_float8_kind), sample, root);
		}
	}
	switch (a->aggfnoid)
	{
		case F_MIN_INT2:
		case F_MIN_INT4:
		case F_MIN_INT8:
		case F_MIN_FLOAT4:
		case F_MIN_FLOAT8:
		case F_MIN_NUMERIC:
		case F_MIN_DATE:
		case F_MIN_TIMESTAMP:
		case F_MIN_TIMESTAMPTZ:
			return DpTranslateQuantile(t, a, (Expr *) DpFloat8Const(0.0), "min");
		case F_MAX_INT2:
		case F_MAX_INT4:
		case F_MAX_INT8:
		case F_MAX_FLOAT4:
		case F_MAX_FLOAT8:
		case F_MAX_NUMERIC:
		case F_MAX_DATE:
		case F_MAX_TIMESTAMP:
		case F_MAX_TIMESTAMPTZ:
			return DpTranslateQuantile(t, a, (Expr *) DpFloat8Const(1.0), "max");
		case F_COUNT_:
			if (a->aggdistinct != NIL)
				return NULL;
			fn = DpExtAggregate(t, "dp_count", 0, NULL, &dp_count_star_kind);
			return (Node *) DpLike(a, fn, INT8OID, NIL, true);
		case F_COUNT_ANY:
			if (a->aggdistinct != NIL)
				return DpTranslateCountDistinct(t, a);
			mechtype = DpMechanismType();
			{
				Oid			argtypes[2] = {ANYOID, mechtype};

				fn = DpExtAggregate(t, "dp_count", 2, argtypes, &dp_count_kind);
			}
			return (Node *) DpLike(a, fn, INT8OID,
								   list_make2(copyObject(linitial_node(TargetEntry, a->args)->expr), DpDefaultMechanism()),
								   false);
		case F_SUM_INT2:
		case F_SUM_INT4:
		case F_SUM_INT8:
		case F_SUM_FLOAT4:
		case F_SUM_FLOAT8:
		case F_SUM_NUMERIC:
			{
				Oid			argtype;
				Oid			rettype;
				Oid			argtypes[4];
				const DpAggKind *kind;
				Aggref	   *d;

				if (a->aggdistinct != NIL)
					return NULL;
				x = (Expr *) copyObject(linitial_node(TargetEntry, a->args)->expr);
				switch (a->aggfnoid)
				{
					case F_SUM_INT2:
					case F_SUM_INT4:
						argtype = a->aggfnoid == F_SUM_INT2 ? INT2OID : INT4OID;
						rettype = INT8OID;
						kind = &dp_sum_int_kind;
						break;
					case F_SUM_INT8:
						argtype = rettype = INT8OID;
						kind = &dp_sum_int8_kind;
						break;
					case F_SUM_NUMERIC:
						argtype = rettype = NUMERICOID;
						kind = &dp_sum_numeric_kind;
						break;
					default:
						if (a->aggfnoid == F_SUM_FLOAT4)
							x = DpCast(F_FLOAT8_FLOAT4, FLOAT8OID, x);
						argtype = rettype = FLOAT8OID;
						kind = &dp_sum_float8_kind;
						break;
				}
				DpArgumentBounds(t, a, "sum", argtype, &lo, &hi);
				argtypes[0] = argtypes[1] = argtypes[2] = argtype;
				argtypes[3] = DpMechanismType();
				fn = DpExtAggregate(t, "dp_sum", 4, argtypes, kind);
				d = DpLike(a, fn, rettype,
						   list_make4(x, DpBoundConstOf(argtype, lo), DpBoundConstOf(argtype, hi), DpDefaultMechanism()),
						   false);
				/* the plain aggregate's result type */
				if (a->aggfnoid == F_SUM_INT8)
					return (Node *) DpCast(F_NUMERIC_INT8, NUMERICOID, (Expr *) d);
				if (a->aggfnoid == F_SUM_FLOAT4)
					return (Node *) DpReleasedAs(FLOAT4OID, (Expr *) d);
				return (Node *) d;
			}
		case F_AVG_INT2:
		case F_AVG_INT4:
		case F_AVG_INT8:
		case F_AVG_FLOAT4:
		case F_AVG_FLOAT8:
		case F_AVG_NUMERIC:
			{
				Oid			argtypes[4] = {FLOAT8OID, FLOAT8OID, FLOAT8OID, InvalidOid};
				Aggref	   *d;

				if (a->aggdistinct != NIL)
					return NULL;
				DpArgumentBounds(t, a, "avg", FLOAT8OID, &lo, &hi);
				x = (Expr *) copyObject(linitial_node(TargetEntry, a->args)->expr);
				switch (a->aggfnoid)
				{
					case F_AVG_INT2:
						x = DpCast(F_FLOAT8_INT2, FLOAT8OID, x);
						break;
					case F_AVG_INT4:
						x = DpCast(F_FLOAT8_INT4, FLOAT8OID, x);
						break;
					case F_AVG_INT8:
						x = DpCast(F_FLOAT8_INT8, FLOAT8OID, x);
						break;
					case F_AVG_FLOAT4:
						x = DpCast(F_FLOAT8_FLOAT4, FLOAT8OID, x);
						break;
					case F_AVG_NUMERIC:
						/* the row checks make this cast the total clamp (shape.c) */
						x = DpCast(F_FLOAT8_NUMERIC, FLOAT8OID, x);
						break;
					default:
						break;
				}
				argtypes[3] = DpMechanismType();
				fn = DpExtAggregate(t, "dp_avg", 4, argtypes, &dp_avg_kind);
				d = DpLike(a, fn, FLOAT8OID,
						   list_make4(x, DpFloat8Const(lo), DpFloat8Const(hi), DpDefaultMechanism()), false);
				if (a->aggtype == NUMERICOID)
					return (Node *) DpCast(F_NUMERIC_FLOAT8, NUMERICOID, (Expr *) d);
				return (Node *) d;
			}
		default:
			return NULL;
	}
}

static Node *
DpTranslateMutator(Node *node, DpTranslate *t)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
		return node;			/* subqueries are not translated (and refused on a protected table) */
	if (IsA(node, Aggref) && ((Aggref *) node)->agglevelsup == 0)
	{
		Node	   *d = DpTranslateAggref(t, (Aggref *) node);

		return d ? d : node;
	}
	return expression_tree_mutator(node, DpTranslateMutator, t);
}

/* The schema of extension ext (pg_extension.extnamespace). */
static Oid
DpExtensionSchema(Oid ext)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/* Translate the plain aggregates of an analyst's query on protected table p (see above). */
void
DpTranslatePlainAggregates(Query *q, DpProtected *p)
{
	DpTranslate t;
	ListCell   *lc;
	int			rti = 0;
	Oid			ext;

	/*
	 * SELECT DISTINCT <columns> without aggregates (Superset's filter values,
	 * a tool's distinct-values list) is GROUP BY <columns>: its keys are
	 * released like any GROUP BY's (public keys, or partition selection)
	 */
	if (q->distinctClause != NIL && !q->hasDistinctOn && q->groupClause == NIL && q->groupingSets == NIL &&
		!q->hasAggs && !q->hasWindowFuncs && !q->hasTargetSRFs && q->havingQual == NULL)
	{
		q->groupClause = q->distinctClause;
		q->distinctClause = NIL;
	}
	if (!q->hasAggs)
		return;
	memset(&t, 0, sizeof(t));
	t.prot = p;
	t.q = q;
	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		rti++;
		if (r->rtekind == RTE_RELATION && r->relid == p->relid && t.prot_rti == 0)
			t.prot_rti = rti;
	}
	ext = get_extension_oid("dp_pg", true);
	if (t.prot_rti == 0 || !OidIsValid(ext))
		return;
	t.extschema = DpExtensionSchema(ext);
	q->targetList = (List *) DpTranslateMutator((Node *) q->targetList, &t);
	q->havingQual = DpTranslateMutator(q->havingQual, &t);
}

/*
 * dp_pg.clamp_float8(x numeric, lower float8, upper float8): x clamped to
 * [lower, upper], as float8.  Total (it runs on private rows): x is
 * converted only when it lies between two finite doubles; NaN stays NaN
 * (which dp_sum and dp_avg skip, as for float8 columns); a value too small
 * for a double becomes 0 instead of an error; bounds that are not finite or
 * not ordered give NULL.
 */
typedef struct DpClampBounds
{
	double		lo,
				hi;
	Datum		nlo,
				nhi;			/* as numeric, in fn_mcxt */
} DpClampBounds;

Datum
dp_clamp_float8(PG_FUNCTION_ARGS)
{
	Datum		x = PG_GETARG_DATUM(0);
	double		lo = PG_GETARG_FLOAT8(1);
	double		hi = PG_GETARG_FLOAT8(2);
	DpClampBounds *b = (DpClampBounds *) fcinfo->flinfo->fn_extra;
	char	   *text;
	double		v;

	if (!isfinite(lo) || !isfinite(hi) || lo > hi)
		PG_RETURN_NULL();		/* never an error: it may run on private rows */
	if (numeric_is_nan(DatumGetNumeric(x)))
		PG_RETURN_FLOAT8(get_float8_nan());	/* skipped by dp_sum / dp_avg, like a float NaN */
	/* the bounds as numeric, made once per call site (they are constants) */
	if (b == NULL || b->lo != lo || b->hi != hi)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		if (b == NULL)
			b = fcinfo->flinfo->fn_extra = palloc(sizeof(DpClampBounds));
		b->lo = lo;
		b->hi = hi;
		b->nlo = DirectFunctionCall1(float8_numeric, Float8GetDatum(lo));
		b->nhi = DirectFunctionCall1(float8_numeric, Float8GetDatum(hi));
		MemoryContextSwitchTo(old);
	}
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, x, b->nlo)) < 0)
		PG_RETURN_FLOAT8(lo);
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, x, b->nhi)) > 0)
		PG_RETURN_FLOAT8(hi);
	text = DatumGetCString(DirectFunctionCall1(numeric_out, x));
	v = strtod(text, NULL);
	pfree(text);
	PG_RETURN_FLOAT8(Min(Max(v, lo), hi));
}

/* dp_pg.run_constant(x): x (the guard's marker of a run-time constant, bound before the query runs). */
Datum
dp_run_constant(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	PG_RETURN_DATUM(PG_GETARG_DATUM(0));
}
