/*
 * guard/perunit.c — questions about persons, not rows: aggregates over
 * per-unit aggregates.
 *
 * "How many orders does a customer place?" is written
 *
 *   SELECT avg(n) FROM (SELECT customer_id, count(*) AS n
 *                       FROM orders GROUP BY customer_id) s
 *
 * (dbplyr's group_by(customer_id) %>% summarise(n = n()) %>% summarise(mean(n))),
 * with sum, min, max, median, percentiles and histograms (GROUP BY n) of the
 * per-unit values, and GROUP BY of public keys outside.  On a table with a
 * privacy unit (dp_pg.protect(table, unit, g, r)) such a query is one
 * release over a virtual table V with one row per unit (and per cell, below):
 *
 *   V = SELECT unit, <keys K>, v_1, ..., v_m FROM <table> WHERE ... GROUP BY unit, K
 *       [HAVING <per-unit filter>]
 *
 * where each per-unit value v_i is the inner aggregate clamped to a domain
 * known before the query runs:
 *
 *   count(*), count(x)       least(count, R)                       [1 or 0, R]
 *   sum(x), x in [lo, hi]    sum(clamp(x, lo, hi)) clamped to
 *                            [min(0, R lo), max(0, R hi)]
 *   avg(x)                   the mean of clamp(x, lo, hi)           [lo, hi]
 *   min(x), max(x)           of clamp(x, lo, hi)                    [lo, hi]
 *
 * with [lo, hi] the value domain of x (its CHECK constraints,
 * dp_pg.set_domain, or the interval of arithmetic over such columns:
 * bounds.c) and R the unit's row bound: g * r rows when K is empty (a unit's
 * one row of V holds all its rows), r per cell when the unit's rows are
 * spread over cells of K (each unit keeps at most g cells, as units.c keeps
 * them: a uniformly random set, here by a ranking window).  A unit with more
 * rows than R is clamped, not dropped.
 *
 * The outer query is then a dp query over V, whose rows are units: each
 * outer aggregate's argument is a row expression over V's columns, read
 * through their domains and computed by total operators (bounds.c), and
 * becomes a unit-bounded dp aggregate (dp_pg.bounded_*) with the mechanism
 * split over the G <= g cells a unit reaches:
 *
 *   count(*)              bounded_count(1, 0, 1)            sensitivity 1
 *   count(e)              bounded_count(e IS NOT NULL, 0, 1)
 *   sum(e), e in [a, b]   bounded_sum(e, a, b)               max(|a|, |b|)
 *   avg(e)                bounded_avg(e, a, b, 1, 1)         (b - a) / 2 and 1
 *   min / max / percentile_cont / percentile_disc (q), dp_quantile, dp_median
 *                         bounded_quantile(ARRAY[e], q, a, b, 1, 1)   rank 1
 *   dp_count / dp_sum / dp_avg / dp_quantile / dp_median written by hand:
 *                         the same with the bounds and mechanism given
 *
 * so adding or removing a unit adds or removes one row of V in each of at
 * most G cells, each moving a release by at most its bound: the
 * sensitivity of a per-unit release is one unit's clamped value.  GROUP BY
 * K lists the declared public keys of K (or uses partition selection that
 * counts units); GROUP BY a per-unit value (n: "how many customers ordered
 * 1, 2, 3... times") lists every value of its domain when it is an integer
 * of at most DP_PERUNIT_LISTED values or a boolean (public: the domain is),
 * and uses partition selection otherwise.  A unit is in one value group of
 * each cell, so such a key adds no cell.
 *
 * What leaves: the inner per-unit values never do.  They are read only by
 * the outer dp aggregates, their FILTER clauses, the outer WHERE and the
 * inner HAVING (a per-unit filter: a function of the unit's own rows), and
 * the outer GROUP BY; an inner ORDER BY, LIMIT, OFFSET, DISTINCT or window
 * (which would choose units by other units' values), an outer reference to
 * a per-unit value outside those, a GROUP BY on the unit, and a second level
 * of per-unit nesting (the inner query must read the protected table
 * itself) are refused before anything is charged.  Everything the outer
 * query does above its dp aggregates (HAVING, ORDER BY, LIMIT, windows) is
 * post-processing of released values, as for any dp query (release.c).
 *
 * Without a privacy unit a row is a person, and an inner GROUP BY is not a
 * per-person grouping: such a query is judged as before (a dp query wrapped
 * in post-processing; a GROUP BY on a unique key is refused as groups of
 * single persons).
 *
 * Layer guard/, floor releases (docs/development.md): may call guard/'s
 * floors base, fences, reads, rows and releases, the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parse_node.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/typcache.h"

#include "aggregates.h"
#include "release.h"
#include "guard/floor_releases.h"
#include "guc.h"

/* A per-unit value used as a GROUP BY key is listed when it has at most this many values. */
#define DP_PERUNIT_LISTED 1000

/* ------------------------------------------------------------------------
 * Small builders
 * ------------------------------------------------------------------------
 */

/* x clamped to [lo, hi] (constants of x's type); NULL stays NULL only if the caller filters it. */
static Expr *
PuClamp(Expr *x, Oid type, double lo, double hi)
{
	return DpMinMax(IS_LEAST, type, DpMinMax(IS_GREATEST, type, x, (Expr *) DpBoundConstOf(type, lo)),
					(Expr *) DpBoundConstOf(type, hi));
}

/* dp_pg's function schema.name(argtypes), or ERROR (installation incomplete). */
static Oid
PuFunc(const char *name, int nargs, const Oid *argtypes)
{
	Oid			fn = LookupFuncName(list_make2(makeString("dp_pg"), makeString((char *) name)), nargs, argtypes, true);

	if (!OidIsValid(fn))
		DpGuardRefuse("the dp_pg installation is incomplete", psprintf("dp_pg.%s is missing; ALTER EXTENSION dp_pg UPDATE.", name));
	return fn;
}

/* a AND b (either may be NULL). */
static Expr *
PuAnd(Expr *a, Expr *b)
{
	if (a == NULL)
		return b;
	if (b == NULL)
		return a;
	return makeBoolExpr(AND_EXPR, list_make2(a, b), -1);
}

/* A float8 constant. */
static Const *
PuFloat8(double v)
{
	return makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(v), false, FLOAT8PASSBYVAL);
}

/* The NaN of a float8 or numeric type. */
static Expr *
PuNaN(Oid type)
{
	if (type == NUMERICOID)
		return (Expr *) makeConst(NUMERICOID, -1, InvalidOid, -1,
								  DirectFunctionCall3(numeric_in, CStringGetDatum("NaN"),
													  ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)),
								  false, false);
	return (Expr *) PuFloat8(get_float8_nan());
}

/* ERROR 42501 for a per-unit query, with the rule it broke. */
static void
PuRefuse(const char *rule, const char *detail)
{
	DpGuardRefuseHint(rule, detail,
					  "Write SELECT <aggregate of the per-unit values> FROM (SELECT <unit>, count(*) AS n, sum(<column>) AS s, ... "
					  "FROM <table> GROUP BY <unit>) s [GROUP BY <public keys or per-unit values>].");
}

/* The largest magnitude a per-unit value of type type keeps (within the type, and +-1e300). */
static double
PuTypeLimit(Oid type)
{
	switch (type)
	{
		case INT2OID:
			return PG_INT16_MAX;
		case INT4OID:
			return PG_INT32_MAX;
		case INT8OID:
			return 9.2233720368547738e18;	/* the largest double below 2^63 */
		case FLOAT4OID:
			return FLT_MAX;
		default:
			return DP_READ_MAX;
	}
}

/* ------------------------------------------------------------------------
 * Recognising a per-unit query
 * ------------------------------------------------------------------------
 */

/* The FROM-subquery entry of q, if q reads exactly one thing and it is a subquery (0 otherwise). */
static int
PuSubqueryEntry(Query *q)
{
	int			rti = 0;
	int			found = 0;
	ListCell   *lc;

	if (q->jointree == NULL || list_length(q->jointree->fromlist) != 1 ||
		!IsA(linitial(q->jointree->fromlist), RangeTblRef))
		return 0;
	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst_node(RangeTblEntry, lc);

		rti++;
#if PG_VERSION_NUM >= 180000
		if (r->rtekind == RTE_GROUP)
			continue;
#endif
		if (r->rtekind == RTE_JOIN)
			continue;
		if (found != 0 || r->rtekind != RTE_SUBQUERY || r->subquery == NULL || r->lateral ||
			r->relkind == RELKIND_VIEW || DpMultiIsReleased(r))
			return 0;
		found = rti;
	}
	if (found == 0 || ((RangeTblRef *) linitial(q->jointree->fromlist))->rtindex != found)
		return 0;
	return found;
}

/* The protected table with a privacy unit that q's GROUP BY groups by (its rti), or NULL. */
static DpProtected *
PuGroupedUnit(Query *q, List *prot, int *prot_rti)
{
	ListCell   *lc;

	foreach(lc, q->groupClause)
	{
		Node	   *key = (Node *) get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc), q->targetList);
		Var		   *v = DpStripVar(DpFlattenJoinAliasVars(q, copyObject(key)));
		RangeTblEntry *r;
		DpProtected *p;

		if (v == NULL || v->varattno <= 0 || v->varno > list_length(q->rtable))
			continue;
		r = rt_fetch(v->varno, q->rtable);
		if (r->rtekind != RTE_RELATION || (p = DpFindProtected(prot, r->relid)) == NULL || !p->has_unit)
			continue;
		if (strcmp(get_attname(r->relid, v->varattno, false), NameStr(p->unit)) != 0)
			continue;
		*prot_rti = v->varno;
		return p;
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * The inner query: V
 * ------------------------------------------------------------------------
 */

/* What the rewrite carries. */
typedef struct DpPerUnit
{
	Query	   *q;				/* the outer query */
	int			s_rti;			/* its FROM-subquery */
	Query	   *inner;			/* the inner query (validated in place) */
	DpProtected *p;
	int			prot_rti;
	DpShape		shape;
	DpUnitBound ub;
	int64		rows;			/* R: the rows a unit's per-unit value counts at most */
	Bitmapset  *rtis;			/* entries of the inner query whose columns rows may read */
	ParseState *ps;
	Query	   *v;				/* V */
	int			nkeys;			/* K: the inner GROUP BY keys besides the unit */
	Node	   *keys[INDEX_MAX_KEYS];	/* their (validated) expressions */
	AttrNumber	keycols[INDEX_MAX_KEYS];	/* their columns in V */
	AttrNumber *colof;			/* inner resno -> V column (0: none) */
	int			ncolof;
	List	   *domains;		/* DpPerUnitColumn * of V's value columns */
	DpPerUnitDomains *registered;
} DpPerUnit;

/* Add a column to V; returns its attno. */
static AttrNumber
PuAddColumn(DpPerUnit *pu, Expr *expr, const char *name)
{
	TargetEntry *te = makeTargetEntry(expr, list_length(pu->v->targetList) + 1, pstrdup(name), false);

	pu->v->targetList = lappend(pu->v->targetList, te);
	return te->resno;
}

/* Record the domain of V column attno (a per-unit value). */
static void
PuAddDomain(DpPerUnit *pu, AttrNumber attno, double lo, double hi, bool integral)
{
	DpPerUnitColumn *c = palloc0(sizeof(DpPerUnitColumn));

	c->attno = attno;
	c->lo = lo;
	c->hi = hi;
	c->integral = integral;
	c->value = true;
	pu->domains = lappend(pu->domains, c);
}

/* The inner query's argument x of aggregate a (join aliases flattened), checked as a row expression. */
static Expr *
PuRowArg(DpPerUnit *pu, Node *x, const char *where)
{
	if (x == NULL)
		return NULL;
	x = DpFlattenJoinAliasVars(pu->inner, copyObject(x));
	return (Expr *) DpRowExpression(x, pu->rtis, pu->inner->rtable, where);
}

/* True for a type whose values min, max and DISTINCT compare without failing. */
static bool
PuComparable(Oid type)
{
	switch (type)
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
			return true;
		default:
			return false;
	}
}

/*
 * The per-unit value of inner aggregate a (a plain count, sum, avg, min or
 * max over the inner query's rows), clamped to its domain; sets the domain.
 * Its type is a's.
 */
static Expr *
PuInnerValue(DpPerUnit *pu, Aggref *a, double *dlo, double *dhi, bool *integral)
{
	ParseState *ps = pu->ps;
	int64		R = pu->rows;
	Expr	   *filter = a->aggfilter ? PuRowArg(pu, (Node *) a->aggfilter, "an aggregate FILTER clause of the per-unit subquery") : NULL;
	Node	   *arg = a->args != NIL ? (Node *) linitial_node(TargetEntry, a->args)->expr : NULL;
	Oid			argtype = arg ? exprType(arg) : InvalidOid;
	Expr	   *x;
	double		lo,
				hi;

	if (a->agglevelsup != 0 || a->aggkind != AGGKIND_NORMAL || a->aggorder != NIL || a->aggdirectargs != NIL ||
		DpKindOfAggregate(a->aggfnoid) != NULL)
		PuRefuse("the per-unit subquery computes count, sum, avg, min or max per unit",
				 "Other aggregates, ordered aggregates and dp aggregates are not per-unit values.");
	if (a->aggdistinct != NIL && a->aggfnoid != F_COUNT_ANY)
		PuRefuse("DISTINCT inside a per-unit aggregate is only allowed in count(DISTINCT ...)",
				 "Its value would not be bounded otherwise.");
	*integral = false;
	switch (a->aggfnoid)
	{
		case F_COUNT_:
		case F_COUNT_ANY:
			{
				Aggref	   *c;

				if (a->aggfnoid == F_COUNT_)
					c = DpMakeAggref(F_COUNT_, INT8OID, NIL, InvalidOid, filter, true);
				else
				{
					x = PuRowArg(pu, arg, "a per-unit count");
					if (a->aggdistinct != NIL && !PuComparable(exprType((Node *) x)))
						PuRefuse("count(DISTINCT ...) per unit compares numbers, dates and text",
								 psprintf("Its argument is of type %s.", format_type_be(exprType((Node *) x))));
					c = DpMakeAggref(F_COUNT_ANY, INT8OID, list_make1(x), a->inputcollid, filter, false);
					if (a->aggdistinct != NIL)
					{
						c->aggdistinct = copyObject(a->aggdistinct);
						linitial_node(TargetEntry, c->args)->ressortgroupref =
							linitial_node(TargetEntry, a->args)->ressortgroupref;
					}
				}
				/* a unit's group has a row: count(*) (or count(1)) without FILTER is at least 1 */
				*dlo = ((a->aggfnoid == F_COUNT_ ||
						 (IsA(arg, Const) && !((Const *) arg)->constisnull && a->aggdistinct == NIL)) &&
						filter == NULL) ? 1 : 0;
				*dhi = (double) R;
				*integral = true;
				return DpMinMax(IS_LEAST, INT8OID, (Expr *) c, (Expr *) DpInt8Const(R));
			}
		case F_SUM_INT2:
		case F_SUM_INT4:
		case F_SUM_INT8:
		case F_SUM_FLOAT4:
		case F_SUM_FLOAT8:
		case F_SUM_NUMERIC:
		case F_AVG_INT2:
		case F_AVG_INT4:
		case F_AVG_INT8:
		case F_AVG_FLOAT4:
		case F_AVG_FLOAT8:
		case F_AVG_NUMERIC:
			{
				bool		avg = a->aggfnoid == F_AVG_INT2 || a->aggfnoid == F_AVG_INT4 || a->aggfnoid == F_AVG_INT8 ||
					a->aggfnoid == F_AVG_FLOAT4 || a->aggfnoid == F_AVG_FLOAT8 || a->aggfnoid == F_AVG_NUMERIC;
				bool		floats = argtype == FLOAT4OID || argtype == FLOAT8OID;
				bool		ints = argtype == INT2OID || argtype == INT4OID || argtype == INT8OID;
				Oid			ct = floats ? FLOAT8OID : (ints && !avg ? argtype : NUMERICOID);	/* clamped type */
				Expr	   *clamped;
				Expr	   *sum;
				Expr	   *f2;
				double		slo,
							shi;
				Oid			restype = a->aggtype;

				/* the bounds of x: its value domain (translate.c, bounds.c) */
				DpTranslateArgumentBounds(pu->inner, pu->p, pu->prot_rti, a, avg ? "avg" : "sum",
										  ints ? argtype : FLOAT8OID, &lo, &hi);
				x = PuRowArg(pu, arg, avg ? "a per-unit avg" : "a per-unit sum");
				if (exprType((Node *) x) != argtype)
					elog(ERROR, "dp_pg: the per-unit argument changed its type");
				/* NULL and NaN are skipped, as the aggregates skip them */
				f2 = PuAnd(filter, (Expr *) DpIsNotNull((Expr *) copyObject(x)));
				if (floats || argtype == NUMERICOID)
					f2 = PuAnd(f2, DpOp(ps, "<>", (Expr *) copyObject(x), DpCoerce(ps, PuNaN(floats ? FLOAT8OID : NUMERICOID), argtype)));
				clamped = PuClamp(DpCoerce(ps, x, ct), ct, lo, hi);
				if (avg)
				{
					*dlo = lo;
					*dhi = hi;
					if (ct == FLOAT8OID)
					{
						/* sum / count without PostgreSQL's overflow ERROR, then clamped (an infinite sum too) */
						Oid			f8 = FLOAT8OID;
						Expr	   *s = (Expr *) DpMakeAggref(PuFunc("unit_float_sum", 1, &f8), FLOAT8OID,
															  list_make1(clamped), InvalidOid, f2, false);
						Expr	   *n = (Expr *) DpMakeAggref(F_COUNT_ANY, INT8OID, list_make1(copyObject(x)),
															  InvalidOid, copyObject(f2), false);

						return PuClamp(DpOp(ps, "/", s, DpCoerce(ps, n, FLOAT8OID)), FLOAT8OID, lo, hi);
					}
					/* numeric: PostgreSQL's exact average (never fails) */
					return (Expr *) DpMakeAggref(F_AVG_NUMERIC, NUMERICOID, list_make1(clamped), InvalidOid, f2, false);
				}
				/* a unit's sum: at most R values' worth, [min(0, R lo), max(0, R hi)] */
				slo = Max(Min(0.0, (double) R * lo), -PuTypeLimit(restype));
				shi = Min(Max(0.0, (double) R * hi), PuTypeLimit(restype));
				if (ints)
				{
					slo = ceil(slo);
					shi = floor(shi);
					*integral = true;
				}
				*dlo = slo;
				*dhi = shi;
				if (ct == FLOAT8OID)
				{
					Oid			f8 = FLOAT8OID;

					sum = (Expr *) DpMakeAggref(PuFunc("unit_float_sum", 1, &f8), FLOAT8OID, list_make1(clamped),
												InvalidOid, f2, false);
					sum = PuClamp(sum, FLOAT8OID, slo, shi);
					if (restype == FLOAT4OID)
						sum = (Expr *) makeFuncExpr(DpTotalFunction(DP_TOTAL_FLOAT4), FLOAT4OID, list_make1(sum),
													InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
					return sum;
				}
				{
					Oid			sumfn = LookupFuncName(list_make2(makeString("pg_catalog"), makeString("sum")), 1, &ct, false);
					Oid			st = get_func_rettype(sumfn);

					if (st != restype)
						elog(ERROR, "dp_pg: a per-unit sum of %s is not of type %s", format_type_be(ct), format_type_be(restype));
					sum = (Expr *) DpMakeAggref(sumfn, st, list_make1(clamped), InvalidOid, f2, false);
					return PuClamp(sum, st, slo, shi);
				}
			}
		case F_MIN_INT2:
		case F_MIN_INT4:
		case F_MIN_INT8:
		case F_MIN_FLOAT4:
		case F_MIN_FLOAT8:
		case F_MIN_NUMERIC:
		case F_MIN_DATE:
		case F_MIN_TIMESTAMP:
		case F_MIN_TIMESTAMPTZ:
		case F_MAX_INT2:
		case F_MAX_INT4:
		case F_MAX_INT8:
		case F_MAX_FLOAT4:
		case F_MAX_FLOAT8:
		case F_MAX_NUMERIC:
		case F_MAX_DATE:
		case F_MAX_TIMESTAMP:
		case F_MAX_TIMESTAMPTZ:
			{
				bool		time = argtype == DATEOID || argtype == TIMESTAMPOID || argtype == TIMESTAMPTZOID;
				bool		ints = argtype == INT2OID || argtype == INT4OID || argtype == INT8OID;
				Expr	   *f2;

				if (time)
				{
					Var		   *v = DpStripVar(DpFlattenJoinAliasVars(pu->inner, copyObject(arg)));
					RangeTblEntry *r = v ? rt_fetch(v->varno, pu->inner->rtable) : NULL;

					if (v == NULL || r->rtekind != RTE_RELATION ||
						!DpColumnDomain(r->relid, v->varattno, argtype, &lo, &hi))
						PuRefuse("min and max of dates per unit need a date column with a value domain",
								 "Declare it with dp_pg.set_domain(table, column, first, last).");
					*integral = argtype == DATEOID;
				}
				else
				{
					DpTranslateArgumentBounds(pu->inner, pu->p, pu->prot_rti, a, "min",
											  ints ? argtype : FLOAT8OID, &lo, &hi);
					*integral = ints;
				}
				x = PuRowArg(pu, arg, "a per-unit min or max");
				f2 = PuAnd(filter, (Expr *) DpIsNotNull((Expr *) copyObject(x)));
				if (argtype == FLOAT4OID || argtype == FLOAT8OID || argtype == NUMERICOID)
					f2 = PuAnd(f2, DpOp(ps, "<>", (Expr *) copyObject(x),
										DpCoerce(ps, PuNaN(argtype == NUMERICOID ? NUMERICOID : FLOAT8OID), argtype)));
				if (argtype == FLOAT4OID)
				{
					lo = Max(lo, -FLT_MAX);
					hi = Min(hi, FLT_MAX);
				}
				*dlo = lo;
				*dhi = hi;
				{
					Expr	   *clamped = PuClamp(x, argtype, lo, hi);
					Aggref	   *m = DpMakeAggref(a->aggfnoid, argtype, list_make1(clamped), a->inputcollid, f2, false);

					return (Expr *) m;
				}
			}
		default:
			PuRefuse("the per-unit subquery computes count, sum, avg, min or max per unit",
					 psprintf("Aggregate %s is not one of them.", get_func_name(a->aggfnoid)));
	}
	return NULL;				/* keep the compiler quiet */
}

/*
 * A select-list entry of the inner query as a per-unit value: an aggregate
 * (PuInnerValue), a number constant, or COALESCE of those (Malloy's
 * COALESCE(SUM(x), 0)), with the hull of their domains.  NULL if e is none
 * of them.
 */
static Expr *
PuInnerExpr(DpPerUnit *pu, Node *e, double *lo, double *hi, bool *integral)
{
	while (e && IsA(e, RelabelType))
		e = (Node *) ((RelabelType *) e)->arg;
	if (e == NULL)
		return NULL;
	if (IsA(e, Aggref))
		return PuInnerValue(pu, (Aggref *) e, lo, hi, integral);
	if (!IsA(e, Const) && !contain_var_clause(e) && !contain_agg_clause(e) && !contain_mutable_functions(e) &&
		!contain_subplans(e) && !expression_returns_set(e) && !DpContainsParamWalker(e, NULL))
		e = eval_const_expressions(NULL, copyObject(e));	/* a constant, folded now (0::numeric) */
	if (IsA(e, Const) && !((Const *) e)->constisnull && DpConstValue((Const *) e, InvalidOid, lo) && isfinite(*lo))
	{
		*hi = *lo;
		*integral = floor(*lo) == *lo;
		return (Expr *) copyObject(e);
	}
	if (IsA(e, CoalesceExpr))
	{
		CoalesceExpr *c = (CoalesceExpr *) copyObject(e);
		List	   *args = NIL;
		ListCell   *lc;
		bool		first = true;

		foreach(lc, ((CoalesceExpr *) e)->args)
		{
			double		l,
						h;
			bool		in;
			Expr	   *a = PuInnerExpr(pu, lfirst(lc), &l, &h, &in);

			if (a == NULL)
				return NULL;
			if (exprType((Node *) a) != c->coalescetype)
				return NULL;
			args = lappend(args, a);
			*lo = first ? l : Min(*lo, l);
			*hi = first ? h : Max(*hi, h);
			*integral = first ? in : (*integral && in);
			first = false;
		}
		c->args = args;
		return (Expr *) c;
	}
	return NULL;
}

/*
 * Build V from the inner query (validated): its FROM and WHERE grouped by
 * the unit and K, one column per inner select-list entry.
 */
static void
PuBuildV(DpPerUnit *pu)
{
	Query	   *in = pu->inner;
	Query	   *v = makeNode(Query);
	ListCell   *lc;
	int			maxres = 0;
	SortGroupClause *unit_sgc = NULL;

	pu->v = v;
	v->commandType = CMD_SELECT;
	v->querySource = QSRC_ORIGINAL;
	v->canSetTag = true;
	DpMoveRangeTable(v, in);
	v->hasRowSecurity = in->hasRowSecurity;
	v->jointree = in->jointree;
	v->hasAggs = true;
	foreach(lc, in->targetList)
		maxres = Max(maxres, lfirst_node(TargetEntry, lc)->resno);
	pu->ncolof = maxres + 1;
	pu->colof = palloc0(sizeof(AttrNumber) * pu->ncolof);

	/* 1: the unit, 2: a marker of real rows (the public-key rewrite), then K */
	foreach(lc, in->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *te = get_sortgroupclause_tle(sgc, in->targetList);
		Var		   *u = DpStripVar((Node *) te->expr);

		if (u != NULL && u->varno == pu->prot_rti && u->varattno == pu->ub.attno && unit_sgc == NULL)
		{
			TargetEntry *nte = makeTargetEntry((Expr *) copyObject(te->expr), 1, pstrdup("dp_unit"), false);
			SortGroupClause *c = copyObject(sgc);

			nte->ressortgroupref = 1;
			c->tleSortGroupRef = 1;
			v->targetList = lappend(v->targetList, nte);
			unit_sgc = c;
			if (!te->resjunk)
				pu->colof[te->resno] = 1;
		}
	}
	if (unit_sgc == NULL)
		elog(ERROR, "dp_pg: the per-unit subquery lost its unit");
	v->groupClause = list_make1(unit_sgc);
	PuAddColumn(pu, (Expr *) makeBoolConst(true, false), "dp_present");
	foreach(lc, in->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *te = get_sortgroupclause_tle(sgc, in->targetList);
		Var		   *u = DpStripVar((Node *) te->expr);
		AttrNumber	col;
		SortGroupClause *c;
		char		name[NAMEDATALEN];

		if (u != NULL && u->varno == pu->prot_rti && u->varattno == pu->ub.attno)
			continue;
		if (pu->nkeys >= INDEX_MAX_KEYS - 2)
			PuRefuse("too many GROUP BY keys in the per-unit subquery", "Group by fewer keys.");
		snprintf(name, sizeof(name), "dp_key%d", pu->nkeys + 1);
		col = PuAddColumn(pu, (Expr *) copyObject(te->expr), name);
		list_nth_node(TargetEntry, v->targetList, col - 1)->ressortgroupref = col;
		c = copyObject(sgc);
		c->tleSortGroupRef = col;
		v->groupClause = lappend(v->groupClause, c);
		pu->keys[pu->nkeys] = (Node *) te->expr;
		pu->keycols[pu->nkeys] = col;
		pu->nkeys++;
		if (!te->resjunk)
			pu->colof[te->resno] = col;
	}
	/* the per-unit values: each select-list entry that is not a key */
	foreach(lc, in->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		Node	   *e = (Node *) te->expr;
		char		name[NAMEDATALEN];
		AttrNumber	col;
		double		lo,
					hi;
		bool		integral;

		if (te->resjunk || pu->colof[te->resno] != 0)
			continue;
		snprintf(name, sizeof(name), "dp_value%d", te->resno);
		{
			Expr	   *val = PuInnerExpr(pu, e, &lo, &hi, &integral);

			if (val != NULL)
			{
				if (exprType((Node *) val) != exprType((Node *) te->expr))
					val = (Expr *) makeRelabelType(val, exprType((Node *) te->expr), -1, InvalidOid, COERCE_IMPLICIT_CAST);
				col = PuAddColumn(pu, val, name);
				PuAddDomain(pu, col, lo, hi, integral);
			}
			else if (IsA(e, Const))
				col = PuAddColumn(pu, (Expr *) copyObject(te->expr), name);	/* NULL or not a number: no domain */
			else
				PuRefuse("the per-unit subquery selects its unit, its GROUP BY keys and aggregates of its rows",
						 "Compute other expressions of the per-unit values in the outer query (avg(s / n), not avg(q) over s / n AS q).");
		}
		pu->colof[te->resno] = col;
	}
}

/* ------------------------------------------------------------------------
 * The outer query over V
 * ------------------------------------------------------------------------
 */

/* Context of the mapping of the outer query's references to V. */
typedef struct PuMap
{
	DpPerUnit  *pu;
	int			depth;
} PuMap;

/* Mutator: Vars of the FROM-subquery become Vars of V (entry 1 of the outer query). */
static Node *
PuMapMutator(Node *node, PuMap *m)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
	{
		Query	   *q;

		m->depth++;
		q = query_tree_mutator((Query *) node, PuMapMutator, m, 0);
		m->depth--;
		return (Node *) q;
	}
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == m->depth && ((Var *) node)->varno == m->pu->s_rti)
	{
		Var		   *v = (Var *) copyObject(node);
		AttrNumber	col;

		if (v->varattno <= 0 || v->varattno >= m->pu->ncolof || (col = m->pu->colof[v->varattno]) == 0)
			PuRefuse("whole-row references to the per-unit subquery are not allowed", "Name its columns.");
		v->varno = 1;
		v->varattno = col;
		v->varnosyn = 0;
		v->varattnosyn = 0;
		return (Node *) v;
	}
	return expression_tree_mutator(node, PuMapMutator, m);
}

/* The domain of a row expression over V (its interval; bounds.c). */
static void
PuInterval(DpPerUnit *pu, Node *e, Query *o, const char *where, double *lo, double *hi, bool *integral)
{
	DpInterval	iv;

	DpBoundsOf(e, o->rtable, where, &iv);
	if (iv.lo > iv.hi)
	{
		iv.lo = iv.hi = 0;		/* only NULL: nothing is added */
	}
	*lo = iv.lo;
	*hi = iv.hi;
	*integral = iv.integral;
}

/* A row expression over V: columns read through their domains, total operators (bounds.c, shape.c). */
static Node *
PuRowOverV(DpPerUnit *pu, Query *o, Node *e, const char *where)
{
	return DpRowExpression(e, bms_make_singleton(1), o->rtable, where);
}

/* True if node is constant for the query (a literal, a bound parameter, a stable function of those). */
static bool
PuIsQueryConstant(Node *node)
{
	return !contain_var_clause(node) && !contain_volatile_functions(node) && !contain_agg_clause(node) &&
		!contain_subplans(node) && !IsA(node, SubLink) && !expression_returns_set(node) &&
		!DpContainsNonExternParam(node, NULL);
}

/* The number type of an outer sum's contribution: int8, float8 or numeric. */
static Oid
PuSumType(Oid t)
{
	if (t == INT2OID || t == INT4OID || t == INT8OID)
		return INT8OID;
	if (t == FLOAT4OID || t == FLOAT8OID)
		return FLOAT8OID;
	return NUMERICOID;
}

/*
 * A per-unit value as float8 for bounded_avg and bounded_quantile: a
 * numeric through dp_pg.clamp_float8, which never fails (a numeric nearer
 * to zero than a double holds, 1e-400, is 0; PostgreSQL's cast would raise
 * an error on that unit's row), the others by their widening casts.
 */
static Expr *
PuAsFloat8(DpPerUnit *pu, Expr *x)
{
	if (exprType((Node *) x) == NUMERICOID)
	{
		if (!OidIsValid(DpClampFloat8Function()))
			DpGuardRefuse("the dp_pg installation is incomplete", "dp_pg.clamp_float8 is missing; ALTER EXTENSION dp_pg UPDATE.");
		return (Expr *) makeFuncExpr(DpClampFloat8Function(), FLOAT8OID,
									 list_make3(x, PuFloat8(-DBL_MAX), PuFloat8(DBL_MAX)),
									 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	}
	return DpCoerce(pu->ps, x, FLOAT8OID);
}

/* bounded_sum(x, lo, hi, mech, groups) of contribution type ct. */
static Aggref *
PuBoundedSum(DpPerUnit *pu, Oid ct, Expr *x, Expr *lo, Expr *hi, Expr *mech, Expr *filter)
{
	Oid			argtypes[5] = {ct, ct, ct, DpMechanismType(), INT4OID};

	return DpMakeAggref(PuFunc("bounded_sum", 5, argtypes), ct,
						list_make5(DpCoerce(pu->ps, x, ct), DpCoerce(pu->ps, lo, ct), DpCoerce(pu->ps, hi, ct), mech,
								   DpInt4Const(pu->ub.groups)),
						InvalidOid, filter, false);
}

/* The outer aggregate's released value in the plain aggregate's type (a noisy float8 saturates). */
static Expr *
PuAsType(Expr *e, Oid type)
{
	Oid			from = exprType((Node *) e);

	if (from == type)
		return e;
	if (type == NUMERICOID)
		return (Expr *) makeFuncExpr(from == INT8OID ? F_NUMERIC_INT8 : F_NUMERIC_FLOAT8, NUMERICOID, list_make1(e),
									 InvalidOid, InvalidOid, COERCE_IMPLICIT_CAST);
	if (DpTotalCastTo(type) == DP_TOTAL_NONE)
		elog(ERROR, "dp_pg: no total conversion to %s", format_type_be(type));
	return (Expr *) makeFuncExpr(DpTotalFunction(DpTotalCastTo(type)), type, list_make1(e), InvalidOid, InvalidOid,
								 COERCE_EXPLICIT_CALL);
}

/* The bounded dp aggregate (over V's rows, units) of an outer aggregate a (its references mapped to V). */
static Node *
PuOuterAggregate(DpPerUnit *pu, Query *o, Aggref *a)
{
	const DpAggKind *kind = DpKindOfAggregate(a->aggfnoid);
	Expr	   *filter = a->aggfilter ? (Expr *) PuRowOverV(pu, o, (Node *) a->aggfilter, "an aggregate FILTER clause") : NULL;
	Expr	   *mech = (Expr *) DpMechanismConst(dp_default_mechanism);
	Oid			argtypes[8];
	Node	   *arg = a->args != NIL ? (Node *) linitial_node(TargetEntry, a->args)->expr : NULL;
	Expr	   *x;
	double		lo,
				hi;
	bool		integral;
	double		q = -1;
	Expr	   *qexpr = NULL;
	Expr	   *loexpr = NULL;
	Expr	   *hiexpr = NULL;
	enum
	{
		PU_COUNT, PU_SUM, PU_AVG, PU_QUANTILE
	}			what;

	if (a->aggdistinct != NIL || (a->aggorder != NIL && a->aggkind != AGGKIND_ORDERED_SET))
		PuRefuse("DISTINCT and ORDER BY inside an aggregate over per-unit values are not allowed",
				 "Each unit is one row of the per-unit subquery already.");
	if (kind != NULL)
	{
		/* a dp aggregate written by hand: its bounds and mechanism */
		int			nargs = DpAggNumArgs(a->args);

		if (nargs != kind->nargs)
			PuRefuse("dp_pg's internal aggregates cannot be called on per-unit values", "dp_pg writes them itself.");
		for (int i = 0; i < kind->nconst; i++)
		{
			Node	   *c = (Node *) list_nth_node(TargetEntry, a->args, kind->const_argnos[i])->expr;

			if (!PuIsQueryConstant(c))
				PuRefuse("dp aggregate parameters must be constant for the query",
						 "Bounds and mechanisms may be literals, bound parameters and stable functions of those.");
		}
		if (kind->mech_argno >= 0)
		{
			mech = (Expr *) copyObject(list_nth_node(TargetEntry, a->args, kind->mech_argno)->expr);
			if (!PuIsQueryConstant((Node *) mech))
				PuRefuse("dp aggregate parameters must be constant for the query",
						 "Bounds and mechanisms may be literals, bound parameters and stable functions of those.");
		}
		if (kind == &dp_count_star_kind || kind == &dp_count_kind)
			what = PU_COUNT;
		else if (kind == &dp_sum_int_kind || kind == &dp_sum_int8_kind || kind == &dp_sum_float8_kind ||
				 kind == &dp_sum_numeric_kind || kind == &dp_sum_int_default_kind ||
				 kind == &dp_sum_int8_default_kind || kind == &dp_sum_float8_default_kind ||
				 kind == &dp_sum_numeric_default_kind)
			what = PU_SUM;
		else if (kind == &dp_avg_kind || kind == &dp_avg_default_kind)
			what = PU_AVG;
		else if (kind == &dp_quantile_kind || kind == &dp_quantile_default_kind)
		{
			what = PU_QUANTILE;
			qexpr = (Expr *) copyObject(lsecond_node(TargetEntry, a->args)->expr);
			loexpr = (Expr *) copyObject(lthird_node(TargetEntry, a->args)->expr);
			hiexpr = (Expr *) copyObject(lfourth_node(TargetEntry, a->args)->expr);
		}
		else if (kind == &dp_median_kind || kind == &dp_median_default_kind)
		{
			what = PU_QUANTILE;
			qexpr = (Expr *) PuFloat8(0.5);
			loexpr = (Expr *) copyObject(lsecond_node(TargetEntry, a->args)->expr);
			hiexpr = (Expr *) copyObject(lthird_node(TargetEntry, a->args)->expr);
		}
		else
			PuRefuse("this dp aggregate cannot be used over per-unit values",
					 "Use dp_count, dp_sum, dp_avg, dp_quantile or dp_median (or count, sum, avg, min, max, percentiles).");
		if (what == PU_SUM || what == PU_AVG)
		{
			loexpr = (Expr *) copyObject(lsecond_node(TargetEntry, a->args)->expr);
			hiexpr = (Expr *) copyObject(lthird_node(TargetEntry, a->args)->expr);
		}
		if (a->aggstar)
			arg = NULL;
	}
	else
	{
		switch (a->aggfnoid)
		{
			case F_COUNT_:
			case F_COUNT_ANY:
				what = PU_COUNT;
				if (a->aggfnoid == F_COUNT_)
					arg = NULL;
				break;
			case F_SUM_INT2:
			case F_SUM_INT4:
			case F_SUM_INT8:
			case F_SUM_FLOAT4:
			case F_SUM_FLOAT8:
			case F_SUM_NUMERIC:
				what = PU_SUM;
				break;
			case F_AVG_INT2:
			case F_AVG_INT4:
			case F_AVG_INT8:
			case F_AVG_FLOAT4:
			case F_AVG_FLOAT8:
			case F_AVG_NUMERIC:
				what = PU_AVG;
				break;
			case F_MIN_INT2:
			case F_MIN_INT4:
			case F_MIN_INT8:
			case F_MIN_FLOAT4:
			case F_MIN_FLOAT8:
			case F_MIN_NUMERIC:
				what = PU_QUANTILE;
				q = 0;
				break;
			case F_MAX_INT2:
			case F_MAX_INT4:
			case F_MAX_INT8:
			case F_MAX_FLOAT4:
			case F_MAX_FLOAT8:
			case F_MAX_NUMERIC:
				what = PU_QUANTILE;
				q = 1;
				break;
			case F_PERCENTILE_CONT_FLOAT8_FLOAT8:
			case F_PERCENTILE_DISC_FLOAT8_ANYELEMENT:
				{
					SortGroupClause *sgc;
					TypeCacheEntry *tc;

					if (list_length(a->aggdirectargs) != 1 || list_length(a->aggorder) != 1)
						PuRefuse("a percentile over per-unit values takes one fraction", "Write percentile_cont(q).");
					sgc = linitial_node(SortGroupClause, a->aggorder);
					tc = lookup_type_cache(exprType(arg), TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
					qexpr = (Expr *) copyObject(linitial(a->aggdirectargs));
					if (exprType((Node *) qexpr) != FLOAT8OID || !PuIsQueryConstant((Node *) qexpr))
						PuRefuse("the fraction of a percentile must be constant for the query", "Use a number.");
					if (OidIsValid(tc->gt_opr) && sgc->sortop == tc->gt_opr)
						qexpr = DpOp(pu->ps, "-", (Expr *) PuFloat8(1.0), qexpr);
					else if (!OidIsValid(tc->lt_opr) || sgc->sortop != tc->lt_opr)
						PuRefuse("a percentile over per-unit values orders them by < or >", "Use ORDER BY <value> [DESC].");
					what = PU_QUANTILE;
					break;
				}
			default:
				PuRefuse("aggregates over per-unit values are count, sum, avg, min, max and the percentiles",
						 psprintf("Aggregate %s is not one of them (dp_count, dp_sum, dp_avg, dp_quantile, dp_median may be written too).",
								  get_func_name(a->aggfnoid)));
		}
	}
	if (q >= 0)
		qexpr = (Expr *) PuFloat8(q);

	if (what == PU_COUNT)
	{
		Expr	   *one;

		argtypes[0] = argtypes[1] = argtypes[2] = INT8OID;
		argtypes[3] = DpMechanismType();
		argtypes[4] = INT4OID;
		if (arg == NULL)
			one = (Expr *) DpInt8Const(1);
		else
		{
			CaseExpr   *c = makeNode(CaseExpr);
			CaseWhen   *w = makeNode(CaseWhen);

			x = (Expr *) PuRowOverV(pu, o, arg, "the argument of a count over per-unit values");
			w->expr = (Expr *) DpIsNotNull(x);
			w->result = (Expr *) DpInt8Const(1);
			w->location = -1;
			c->casetype = INT8OID;
			c->args = list_make1(w);
			c->defresult = (Expr *) DpInt8Const(0);
			c->location = -1;
			one = (Expr *) c;
		}
		return (Node *) PuAsType((Expr *) DpMakeAggref(PuFunc("bounded_count", 5, argtypes), INT8OID,
													   list_make5(one, DpInt8Const(0), DpInt8Const(1), mech,
																  DpInt4Const(pu->ub.groups)),
													   InvalidOid, filter, false), a->aggtype);
	}
	if (arg == NULL || !OidIsValid(exprType(arg)))
		PuRefuse("an aggregate over per-unit values takes a value", "Found none.");
	if (PuSumType(exprType(arg)) != exprType(arg) && exprType(arg) != INT2OID && exprType(arg) != INT4OID &&
		exprType(arg) != FLOAT4OID)
		PuRefuse("aggregates over per-unit values take numbers",
				 psprintf("Found a value of type %s.", format_type_be(exprType(arg))));
	/* the argument: a row expression over V, and its interval */
	x = (Expr *) PuRowOverV(pu, o, arg, "the argument of an aggregate over per-unit values");
	if (loexpr == NULL)
	{
		PuInterval(pu, arg, o, "the argument of an aggregate over per-unit values", &lo, &hi, &integral);
		if (integral || exprType(arg) == INT2OID || exprType(arg) == INT4OID || exprType(arg) == INT8OID)
		{
			lo = ceil(lo);
			hi = floor(hi);
		}
	}
	if (what == PU_SUM)
	{
		Oid			ct = PuSumType(exprType(arg));
		Oid			restype = kind != NULL ? kind == &dp_sum_numeric_kind || kind == &dp_sum_numeric_default_kind ? NUMERICOID :
			kind == &dp_sum_float8_kind || kind == &dp_sum_float8_default_kind ? FLOAT8OID : INT8OID : a->aggtype;

		if (loexpr == NULL)
		{
			loexpr = (Expr *) DpBoundConstOf(ct, lo);
			hiexpr = (Expr *) DpBoundConstOf(ct, hi);
		}
		return (Node *) PuAsType((Expr *) PuBoundedSum(pu, ct, x, loexpr, hiexpr, mech, filter), restype);
	}
	if (what == PU_AVG)
	{
		argtypes[0] = argtypes[1] = argtypes[2] = FLOAT8OID;
		argtypes[3] = DpMechanismType();
		argtypes[4] = argtypes[5] = INT8OID;
		argtypes[6] = INT4OID;
		if (loexpr == NULL)
		{
			loexpr = (Expr *) PuFloat8(lo);
			hiexpr = (Expr *) PuFloat8(hi);
		}
		return (Node *) PuAsType((Expr *) DpMakeAggref(PuFunc("bounded_avg", 7, argtypes), FLOAT8OID,
													   lappend(lappend(list_make5(PuAsFloat8(pu, x),
																				  DpCoerce(pu->ps, loexpr, FLOAT8OID),
																				  DpCoerce(pu->ps, hiexpr, FLOAT8OID), mech,
																				  DpInt8Const(1)),
																	   DpInt8Const(1)), DpInt4Const(pu->ub.groups)),
													   InvalidOid, filter, false),
								 kind != NULL ? FLOAT8OID : a->aggtype);
	}
	/* quantiles: one value per unit, rank sensitivity 1 */
	{
		ArrayExpr  *arr = makeNode(ArrayExpr);

		if (loexpr == NULL)
		{
			if (!(lo < hi))
				hi = lo + 1;	/* a single value: any cell holds it */
			loexpr = (Expr *) PuFloat8(lo);
			hiexpr = (Expr *) PuFloat8(hi);
		}
		arr->array_typeid = FLOAT8ARRAYOID;
		arr->element_typeid = FLOAT8OID;
		arr->array_collid = InvalidOid;
		arr->elements = list_make1(PuAsFloat8(pu, x));
		arr->multidims = false;
		arr->location = -1;
		argtypes[0] = FLOAT8ARRAYOID;
		argtypes[1] = argtypes[2] = argtypes[3] = FLOAT8OID;
		argtypes[4] = DpMechanismType();
		argtypes[5] = argtypes[6] = INT8OID;
		argtypes[7] = INT4OID;
		return (Node *) PuAsType((Expr *) DpMakeAggref(PuFunc("bounded_quantile", 8, argtypes), FLOAT8OID,
													   lappend(lappend(lappend(list_make5(arr, DpCoerce(pu->ps, qexpr, FLOAT8OID),
																						  DpCoerce(pu->ps, loexpr, FLOAT8OID),
																						  DpCoerce(pu->ps, hiexpr, FLOAT8OID), mech),
																			   DpInt8Const(1)), DpInt8Const(1)),
															   DpInt4Const(pu->ub.groups)),
													   InvalidOid, filter, false),
								 kind != NULL ? FLOAT8OID : a->aggtype);
	}
}

/* ------------------------------------------------------------------------
 * Keys, filters and what is released
 * ------------------------------------------------------------------------
 */

/* Context of the outer query's post-processing check. */
typedef struct PuReleased
{
	int			depth;
	List	   *keys;			/* the outer GROUP BY keys (over V) */
} PuReleased;

/* Walker: after the rewrite, V's columns appear only in the keys (and inside the dp aggregates). */
static bool
PuReleasedWalker(Node *node, PuReleased *c)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		bool		r;

		c->depth++;
		r = query_tree_walker((Query *) node, PuReleasedWalker, c, 0);
		c->depth--;
		return r;
	}
	if (c->depth == 0 && list_member(c->keys, node))
		return false;
	if (IsA(node, Aggref) && ((Aggref *) node)->agglevelsup == c->depth)
		return false;			/* a bounded dp aggregate: its arguments are checked */
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == c->depth)
		PuRefuse("per-unit values leave only through the dp aggregates over them",
				 "A per-unit value outside an aggregate, other than a GROUP BY key of the outer query, would release it.");
	if (IsA(node, GroupingFunc))
		PuRefuse("GROUPING() is not allowed over per-unit values", "There are no grouping sets.");
	return expression_tree_walker(node, PuReleasedWalker, c);
}

/* Context of the outer aggregates' replacement. */
typedef struct PuAggs
{
	DpPerUnit  *pu;
	Query	   *o;
	int			depth;
} PuAggs;

/* Mutator: the outer query's aggregates become bounded dp aggregates over V. */
static Node *
PuAggsMutator(Node *node, PuAggs *c)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
	{
		Query	   *q;

		c->depth++;
		q = query_tree_mutator((Query *) node, PuAggsMutator, c, 0);
		c->depth--;
		return (Node *) q;
	}
	if (IsA(node, Aggref) && ((Aggref *) node)->agglevelsup == c->depth)
	{
		Node	   *r;

		if (c->depth != 0)
			PuRefuse("aggregates over per-unit values belong to the outer query itself",
					 "An aggregate of the outer query inside one of its subqueries is not allowed.");
		r = PuOuterAggregate(c->pu, c->o, (Aggref *) node);
		return r;
	}
	return expression_tree_mutator(node, PuAggsMutator, c);
}

/* Mutator: Var(1, col) of V becomes V's expression for col (a filter checked over V, evaluated in V's HAVING). */
static Node *
PuSubstituteMutator(Node *node, Query *v)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == 0 && ((Var *) node)->varno == 1)
		return copyObject((Node *) list_nth_node(TargetEntry, v->targetList, ((Var *) node)->varattno - 1)->expr);
	return expression_tree_mutator(node, PuSubstituteMutator, v);
}

/* Context of the inner HAVING's mapping onto V. */
typedef struct PuHaving
{
	DpPerUnit  *pu;
} PuHaving;

/* Mutator: the inner HAVING over V's columns (aggregates become value columns of V, keys V's keys). */
static Node *
PuHavingMutator(Node *node, PuHaving *h)
{
	DpPerUnit  *pu = h->pu;

	if (node == NULL)
		return NULL;
	if (IsA(node, Query) || IsA(node, SubLink))
		PuRefuse("subqueries are not allowed in the per-unit subquery's HAVING", "Compare its aggregates with constants.");
	if (IsA(node, Aggref))
	{
		double		lo,
					hi;
		bool		integral;
		Expr	   *val = PuInnerValue(pu, (Aggref *) node, &lo, &hi, &integral);
		AttrNumber	col = PuAddColumn(pu, val, psprintf("dp_filter%d", list_length(pu->v->targetList) + 1));

		PuAddDomain(pu, col, lo, hi, integral);
		return (Node *) makeVar(1, col, exprType((Node *) val), -1, exprCollation((Node *) val), 0);
	}
	if (IsA(node, Var))
	{
		Var		   *v = DpStripVar(DpFlattenJoinAliasVars(pu->inner, copyObject(node)));

		if (v != NULL && v->varno == pu->prot_rti && v->varattno == pu->ub.attno)
			return (Node *) makeVar(1, 1, v->vartype, v->vartypmod, v->varcollid, 0);
		for (int k = 0; k < pu->nkeys; k++)
			if (v != NULL && equal(v, pu->keys[k]))
				return (Node *) makeVar(1, pu->keycols[k], v->vartype, v->vartypmod, v->varcollid, 0);
		PuRefuse("the per-unit subquery's HAVING reads its aggregates and GROUP BY keys",
				 "Other columns are not values of a unit.");
	}
	for (int k = 0; k < pu->nkeys; k++)
		if (!IsA(pu->keys[k], Var) && equal(node, pu->keys[k]))
			return (Node *) makeVar(1, pu->keycols[k], exprType(node), exprTypmod(node), exprCollation(node), 0);
	return expression_tree_mutator(node, PuHavingMutator, h);
}

/* The integers lo..hi as a text[] of keys. */
static ArrayType *
PuIntegerKeys(double lo, double hi)
{
	int			n = (int) (hi - lo + 1);
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(psprintf("%.0f", lo + i));
	return construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT);
}

/* The listed values of an outer GROUP BY key over per-unit values, or NULL (partition selection). */
static ArrayType *
PuValueKeys(DpPerUnit *pu, Query *o, Node *key)
{
	Oid			type = exprType(key);

	if (type == BOOLOID)
	{
		Datum		elems[2] = {CStringGetTextDatum("false"), CStringGetTextDatum("true")};

		return construct_array(elems, 2, TEXTOID, -1, false, TYPALIGN_INT);
	}
	if (IsA(key, CaseExpr))
	{
		/* a CASE whose results are constants: exactly those */
		CaseExpr   *c = (CaseExpr *) key;
		List	   *results = NIL;
		ListCell   *lc;
		Datum	   *elems;
		int			n = 0;
		Oid			out;
		bool		varlena;

		foreach(lc, c->args)
			results = lappend(results, lfirst_node(CaseWhen, lc)->result);
		if (c->defresult != NULL)
			results = lappend(results, c->defresult);
		elems = palloc(sizeof(Datum) * list_length(results));
		getTypeOutputInfo(type, &out, &varlena);
		foreach(lc, results)
		{
			Node	   *r = lfirst(lc);

			while (r && IsA(r, RelabelType))
				r = (Node *) ((RelabelType *) r)->arg;
			if (!IsA(r, Const))
				return NULL;
			if (!((Const *) r)->constisnull)
				elems[n++] = CStringGetTextDatum(OidOutputFunctionCall(out, ((Const *) r)->constvalue));
		}
		return construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT);
	}
	if (type == INT2OID || type == INT4OID || type == INT8OID || type == NUMERICOID ||
		type == FLOAT4OID || type == FLOAT8OID)
	{
		double		lo,
					hi;
		bool		integral;

		PuInterval(pu, key, o, "a GROUP BY key", &lo, &hi, &integral);
		if ((integral || type == INT2OID || type == INT4OID || type == INT8OID) && isfinite(lo) && isfinite(hi))
		{
			lo = ceil(lo);
			hi = floor(hi);
			if (lo <= hi && hi - lo + 1 <= DP_PERUNIT_LISTED)
				return PuIntegerKeys(lo, hi);
		}
	}
	return NULL;
}

/* The declared public keys of inner GROUP BY key k, or NULL. */
static ArrayType *
PuInnerKeyList(DpPerUnit *pu, int k)
{
	Node	   *key = pu->keys[k];
	Var		   *v = DpStripVar(key);

	if (v != NULL)
	{
		RangeTblEntry *r = rt_fetch(v->varno, pu->v->rtable);

		if (r->rtekind != RTE_RELATION || !DpIsProtected(r->relid))
			return NULL;
		return DpPublicKeys(r->relid, get_attname(r->relid, v->varattno, false));
	}
	return DpExpressionPublicKeys(key, pu->p->relid, pu->prot_rti);
}

/* Mutator: each outer GROUP BY key expression (pair[0]) becomes its checked form (pair[1]). */
static Node *
PuReplaceKeyMutator(Node *node, Node **pair)
{
	if (node == NULL || IsA(node, Aggref) || IsA(node, Query) || IsA(node, SubLink))
		return node;
	if (equal(node, pair[0]))
		return copyObject(pair[1]);
	return expression_tree_mutator(node, PuReplaceKeyMutator, pair);
}

/* ------------------------------------------------------------------------
 * The whole query
 * ------------------------------------------------------------------------
 */

/* What a per-unit query (q over the per-unit subquery in) may not do: refused. */
static void
PuRefuseShapes(Query *q, Query *in)
{
	if (in->cteList != NIL || in->hasRecursive || in->hasModifyingCTE)
		PuRefuse("WITH is not allowed in the per-unit subquery", "Write the per-unit subquery in FROM.");
	if (in->groupingSets != NIL || in->groupDistinct)
		PuRefuse("GROUPING SETS are not allowed in the per-unit subquery", "Group by the unit and keys.");
	if (in->limitCount != NULL || in->limitOffset != NULL || in->hasWindowFuncs || in->distinctClause != NIL ||
		in->hasTargetSRFs)
		PuRefuse("per-unit values never leave the DP level",
				 "LIMIT, OFFSET, DISTINCT, window and set-returning functions in the per-unit subquery would choose "
				 "or show units by their values.");
	if (q->groupingSets != NIL || q->groupDistinct)
		PuRefuse("GROUPING SETS are not allowed over per-unit values", "Run one GROUP BY per grouping set.");
	if (q->setOperations != NULL || q->cteList != NIL || q->rowMarks != NIL || q->hasRecursive)
		PuRefuse("this query over per-unit values is not allowed", "WITH, set operations and row locks are not.");
	if (!q->hasAggs && q->groupClause == NIL)
		PuRefuse("per-unit values leave only through the dp aggregates over them",
				 "Select aggregates of the per-unit values (avg(n), count(*) ... GROUP BY n), never the values themselves.");
}

/*
 * The inner query's FROM, WHERE and keys, checked as a dp query's (shape.c):
 * a copy of in (its keys first, then its aggregates), with the unit's bound,
 * the tables elevated and pu->rtis its relations; returned (also pu->inner).
 */
static Query *
PuCheckInner(DpPerUnit *pu, Query *in)
{
	Query	   *iv;
	List	   *aggtles = NIL;
	List	   *keytles = NIL;
	ListCell   *lc;

	iv = copyObject(in);
	foreach(lc, iv->targetList)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		if (te->ressortgroupref != 0 && get_sortgroupref_clause_noerr(te->ressortgroupref, iv->groupClause) != NULL)
			keytles = lappend(keytles, te);
		else
			aggtles = lappend(aggtles, te);
	}
	iv->targetList = keytles;
	{
		Node	   *having = iv->havingQual;

		iv->havingQual = NULL;
		iv->hasAggs = false;
		DpShapeValidate(iv, pu->p, &pu->shape);
		iv->havingQual = having;
		iv->hasAggs = in->hasAggs;
	}
	iv->targetList = list_concat(iv->targetList, aggtles);
	pu->inner = iv;
	if (pu->shape.prot_rti != pu->prot_rti)
		PuRefuse("the per-unit subquery groups by the privacy unit of its first protected table",
				 "Group by that table's unit column.");
	if (pu->shape.partner_rti != 0)
		DpUnitJoinBound(&pu->shape, &pu->ub);		/* two tables joined on their unit */
	else
		(void) DpUnitBoundOf(pu->p, &pu->ub);
	DpGuardElevate(iv, rt_fetch(pu->shape.prot_rti, iv->rtable));
	if (pu->shape.partner_rti != 0)
		DpGuardElevate(iv, rt_fetch(pu->shape.partner_rti, iv->rtable));
	{
		int			rti = 0;

		foreach(lc, iv->rtable)
		{
			rti++;
			if (lfirst_node(RangeTblEntry, lc)->rtekind == RTE_RELATION)
				pu->rtis = bms_add_member(pu->rtis, rti);
		}
	}
	return iv;
}

/*
 * The outer GROUP BY: K (each of them), or per-unit values (released in
 * canonical form); never the unit.  Each key's listed values in arrs (NULL:
 * not listed, then *listed is false), the keys in *okeys, their number *nk.
 */
static void
PuOuterGroupKeys(DpPerUnit *pu, Query *q, ArrayType **arrs, List **okeys, bool *listed, int *nk)
{
	bool		kseen[INDEX_MAX_KEYS] = {0};
	ListCell   *lc;

	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *te = get_sortgroupclause_tle(sgc, q->targetList);
		Node	   *key = (Node *) te->expr;
		Var		   *kv = DpStripVar(key);
		int			kk = -1;
		Node	   *pair[2];

		if (contain_agg_clause(key) || contain_subplans(key) || contain_volatile_functions(key))
			PuRefuse("GROUP BY keys over per-unit values are values and expressions of them", "Found another key.");
		if (kv != NULL && kv->varno == 1 && kv->varattno == 1)
			DpGuardRefuseHint("groups that are single persons are refused",
							  "A GROUP BY on the privacy unit would release each person's value.",
							  "Aggregate over the units: SELECT avg(n) FROM (...) s, or GROUP BY n for a histogram.");
		if (kv != NULL)
			for (int k = 0; k < pu->nkeys; k++)
				if (kv->varattno == pu->keycols[k])
					kk = k;
		if (*nk >= INDEX_MAX_KEYS)
			PuRefuse("too many GROUP BY keys over per-unit values", "Group by fewer keys.");
		if (kk >= 0)
		{
			kseen[kk] = true;
			arrs[*nk] = PuInnerKeyList(pu, kk);
			pair[0] = pair[1] = key;
		}
		else
		{
			/* a per-unit value, or an expression of them: a total row expression, released in canonical form */
			pair[0] = key;
			if (DpIsBoundedExpression(key))
				pair[1] = DpCanonicalKey(DpBoundedRowExpr(key, bms_make_singleton(1), q->rtable, "a GROUP BY key", true,
																	 DpRowExpression));
			else
				pair[1] = PuRowOverV(pu, q, key, "a GROUP BY key");
			arrs[*nk] = PuValueKeys(pu, q, key);
			te->expr = (Expr *) copyObject(pair[1]);
			q->targetList = (List *) PuReplaceKeyMutator((Node *) q->targetList, pair);
			q->havingQual = PuReplaceKeyMutator(q->havingQual, pair);
		}
		if (arrs[*nk] == NULL)
			*listed = false;
		*okeys = lappend(*okeys, te->expr);
		(*nk)++;
	}
	for (int k = 0; k < pu->nkeys; k++)
		if (!kseen[k])
			PuRefuse("every GROUP BY key of the per-unit subquery must be a GROUP BY key of the outer query",
					 "Otherwise a unit would count once per key value in one group.");
}

/*
 * Cells per unit: the combinations of K a unit can reach, at most g kept;
 * pu->ub.groups becomes the cells a unit reaches.  True if they must be
 * ranked (more combinations than g).
 */
static bool
PuCellsPerUnit(DpPerUnit *pu, List *okeys, ArrayType **arrs, int nk)
{
	int64		max_cells = 1;
	bool		ranked = false;

	if (pu->nkeys > 0)
	{
		max_cells = 1;
		for (int i = 0, k = 0; i < nk; i++)
		{
			Var		   *kv = DpStripVar((Node *) list_nth(okeys, i));

			if (kv == NULL || kv->varno != 1)
				continue;
			for (k = 0; k < pu->nkeys; k++)
				if (kv->varattno == pu->keycols[k])
				{
					if (arrs[i] == NULL)
						max_cells = PG_INT64_MAX;
					else if (max_cells != PG_INT64_MAX)
					{
						max_cells *= Max(ArrayGetNItems(ARR_NDIM(arrs[i]), ARR_DIMS(arrs[i])), 1);
						if (max_cells > PG_INT32_MAX)
							max_cells = PG_INT64_MAX;
					}
				}
		}
		ranked = max_cells > pu->ub.groups;
		pu->ub.groups = (int32) Min((int64) pu->ub.groups, Max(max_cells, 1));
	}
	else
		pu->ub.groups = 1;		/* one row of V per unit */
	return ranked;
}

/*
 * If q is an aggregate over per-unit aggregates of a table with a privacy
 * unit (see the file comment), validate and rewrite it into its release
 * (DP level and post-processing) and return true; false if q is not of
 * that shape (the caller judges it otherwise).  ERROR 42501 for a per-unit
 * query that breaks a rule.
 */
bool
DpPerUnitQuery(Query *q, List *prot, DpPlanCheck *check, int depth)
{
	DpPerUnit	pu;
	RangeTblEntry *s;
	Query	   *in;
	Query	   *iv;
	ListCell   *lc;
	bool		ranked = false;
	AttrNumber	rankcol = 0;
	RangeTblEntry *vrte;
	List	   *colnames = NIL;
	Node	   *filter;
	PuMap		map;
	List	   *okeys = NIL;
	ArrayType  *arrs[INDEX_MAX_KEYS];
	bool		listed = true;
	int			nk = 0;
	Query	   *d;
	DpPerUnitDomains *reg;

	memset(&pu, 0, sizeof(pu));
	pu.s_rti = PuSubqueryEntry(q);
	if (pu.s_rti == 0 || q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		return false;
	s = rt_fetch(pu.s_rti, q->rtable);
	in = s->subquery;
	if (in->commandType != CMD_SELECT || in->utilityStmt != NULL || in->setOperations != NULL)
		return false;
	(void) DpGuardFlatten(in, prot);	/* a dataset's raw subquery inside it */
	DpFlattenGroupVars(in);
	/* SELECT DISTINCT unit is GROUP BY unit */
	if (in->distinctClause != NIL && !in->hasDistinctOn && in->groupClause == NIL && in->groupingSets == NIL &&
		!in->hasAggs && !in->hasWindowFuncs && !in->hasTargetSRFs && in->havingQual == NULL)
	{
		in->groupClause = in->distinctClause;
		in->distinctClause = NIL;
	}
	pu.p = PuGroupedUnit(in, prot, &pu.prot_rti);
	if (pu.p == NULL)
		return false;			/* not grouped by a privacy unit: a dp query wrapped in post-processing */

	/* from here on it is a per-unit query: what it may not do is refused */
	PuRefuseShapes(q, in);
	/* an ORDER BY without LIMIT orders nothing the outer query keeps */
	in->sortClause = NIL;
	DpFlattenGroupVars(q);
	q->targetList = (List *) DpFlattenJoinAliasVars(q, (Node *) q->targetList);
	q->havingQual = DpFlattenJoinAliasVars(q, q->havingQual);
	q->jointree = (FromExpr *) DpFlattenJoinAliasVars(q, (Node *) q->jointree);

	/* the inner query's FROM, WHERE and keys, checked as a dp query's (shape.c) */
	iv = PuCheckInner(&pu, in);
	pu.ps = make_parsestate(NULL);
	/* the cells: K; R, the rows a unit's value counts at most: all g * r of its rows in one cell, r in each of g */
	pu.nkeys = list_length(iv->groupClause) - 1;
	pu.rows = pu.nkeys == 0 ? Min((int64) pu.ub.groups * pu.ub.rows, (int64) DP_MAX_UNIT_ROWS) : pu.ub.rows;
	pu.nkeys = 0;
	PuBuildV(&pu);
	reg = palloc0(sizeof(DpPerUnitDomains));
	reg->v = pu.v;
	pu.registered = reg;

	/* q over V: its entry 1 */
	foreach(lc, pu.v->targetList)
		colnames = lappend(colnames, makeString(pstrdup(lfirst_node(TargetEntry, lc)->resname)));
	vrte = makeNode(RangeTblEntry);
	vrte->rtekind = RTE_SUBQUERY;
	vrte->subquery = pu.v;
	vrte->eref = makeAlias("dp_units", colnames);
	vrte->inFromCl = true;
	map.pu = &pu;
	map.depth = 0;
	filter = PuMapMutator(q->jointree->quals, &map);
	q->targetList = (List *) PuMapMutator((Node *) q->targetList, &map);
	q->havingQual = PuMapMutator(q->havingQual, &map);
	q->rtable = list_make1(vrte);
	DpClearPermInfos(q);
	q->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)), NULL);
	((RangeTblRef *) linitial(q->jointree->fromlist))->rtindex = 1;
	q->hasRowSecurity = false;
	DpClearGroupRTE(q);

	/* the inner HAVING over V (its aggregates as value columns), then the per-unit filter */
	if (iv->havingQual != NULL)
	{
		PuHaving	h = {&pu};
		Node	   *hv = PuHavingMutator(DpFlattenJoinAliasVars(iv, copyObject(iv->havingQual)), &h);

		filter = filter ? (Node *) makeBoolExpr(AND_EXPR, list_make2(hv, filter), -1) : hv;
	}
	/* the domains are known now: bounds.c reads V's values through them */
	reg->n = list_length(pu.domains);
	reg->cols = palloc0(sizeof(DpPerUnitColumn) * Max(reg->n, 1));
	{
		int			i = 0;

		foreach(lc, pu.domains)
			reg->cols[i++] = *(DpPerUnitColumn *) lfirst(lc);
	}
	DpPerUnitAddDomains(reg);
	/* colnames again: HAVING may have added values */
	colnames = NIL;
	foreach(lc, pu.v->targetList)
		colnames = lappend(colnames, makeString(pstrdup(lfirst_node(TargetEntry, lc)->resname)));
	vrte->eref = makeAlias("dp_units", colnames);
	if (filter != NULL)
	{
		/* checked over V (total, its values through their domains), evaluated per unit in V's HAVING */
		Node	   *checked = PuRowOverV(&pu, q, filter, "a filter of per-unit values");

		checked = PuSubstituteMutator(checked, pu.v);
		pu.v->havingQual = pu.v->havingQual ? (Node *) makeBoolExpr(AND_EXPR, list_make2(pu.v->havingQual, checked), -1)
			: checked;
	}

	/* the outer GROUP BY: K (each of them), or per-unit values; never the unit */
	PuOuterGroupKeys(&pu, q, arrs, &okeys, &listed, &nk);

	/* cells per unit: the combinations of K a unit can reach, at most g kept (ranked) */
	ranked = PuCellsPerUnit(&pu, okeys, arrs, nk);

	/* the aggregates over V: bounded dp aggregates; nothing else reads V */
	{
		PuAggs		c = {&pu, q, 0};
		PuReleased r = {0, okeys};

		q->targetList = (List *) PuAggsMutator((Node *) q->targetList, &c);
		q->havingQual = PuAggsMutator(q->havingQual, &c);
		(void) PuReleasedWalker((Node *) q->targetList, &r);
		(void) PuReleasedWalker(q->havingQual, &r);
		if (contain_var_clause(q->limitCount) || contain_var_clause(q->limitOffset))
			PuRefuse("LIMIT and OFFSET must be constants", "They may not depend on per-unit values.");
	}
	q->hasAggs = true;
	if (ranked)
	{
		rankcol = DpUnitRankColumn(pu.v);
		q->jointree->quals = (Node *) DpOp(pu.ps, "<=", (Expr *) makeVar(1, rankcol, INT8OID, -1, InvalidOid, 0),
										   (Expr *) DpInt8Const(pu.ub.groups));
		colnames = lappend(colnames, makeString(pstrdup("dp_rank")));
		vrte->eref = makeAlias("dp_units", colnames);
	}

	/* the release: the DP level over V, post-processing above (release.c) */
	d = DpReleaseSplit(q, &pu.shape);
	if (d->groupClause != NIL)
	{
		if (listed)
			DpRewritePublicGroupsCore(d, arrs, DpIsNotNull((Expr *) makeVar(1, 2, BOOLOID, -1, InvalidOid, 0)), NIL);
		else
			DpAddPartitionKeep(d, pu.ub.groups);
	}
	DpCanonicalReleasedKeys(d);
	DpReleaseNoteKeys(d);
	if (depth == 0)
		DpReleaseOrderWrap(q, d);
	check->bounded = true;
	free_parsestate(pu.ps);
	return true;
}
