/*
 * guard/nodes.c — the small node builders and node facts that every rewrite
 * of the guard shares: constants (int4, int8, a bound of a type, a
 * dp_mechanism), aggregate calls, IS NOT NULL, a column under relabelling,
 * bound parameters, the widening numeric casts.
 *
 * Layer guard/, floor base (docs/development.md): may call the other files of
 * the floor base, the aggregates, the release path, the ledger, common/ and
 * the numeric core, nothing above.
 */
#include "postgres.h"

#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_coerce.h"
#include "parser/parse_oper.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "aggregates.h"
#include "guard/floor_base.h"

/* An int4 constant. */
Const *
DpInt4Const(int32 v)
{
	return makeConst(INT4OID, -1, InvalidOid, sizeof(int32), Int32GetDatum(v), false, true);
}

/* An int8 constant. */
Const *
DpInt8Const(int64 v)
{
	return makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(v), false, FLOAT8PASSBYVAL);
}

/* A constant of type type from a bound (integers and dates exact, times in microseconds). */
Const *
DpBoundConstOf(Oid type, double v)
{
	switch (type)
	{
		case INT2OID:
			return makeConst(INT2OID, -1, InvalidOid, sizeof(int16), Int16GetDatum((int16) v), false, true);
		case INT4OID:
			return DpInt4Const((int32) v);
		case INT8OID:
			return DpInt8Const((int64) v);
		case FLOAT4OID:
			return makeConst(FLOAT4OID, -1, InvalidOid, sizeof(float4), Float4GetDatum((float4) v), false, true);
		case FLOAT8OID:
			return makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(v), false, FLOAT8PASSBYVAL);
		case NUMERICOID:
			return makeConst(NUMERICOID, -1, InvalidOid, -1, DirectFunctionCall1(float8_numeric, Float8GetDatum(v)),
							 false, false);
		case DATEOID:
			return makeConst(DATEOID, -1, InvalidOid, sizeof(DateADT), DateADTGetDatum((DateADT) v), false, true);
		default:
			return makeConst(type, -1, InvalidOid, sizeof(Timestamp), TimestampGetDatum((Timestamp) v), false,
							 FLOAT8PASSBYVAL);
	}
}

/* The dp_mechanism type (the argument type of dp_pg.partition_keep, so no search_path lookup). */
Oid
DpMechanismType(void)
{
	Oid			fn = LookupFuncName(list_make2(makeString("dp_pg"), makeString("partition_keep")), -1, NULL, true);
	Oid		   *argtypes;
	int			nargs;

	if (!OidIsValid(fn) || DpKindOfAggregate(fn) != &dp_partition_keep_kind)
		DpGuardRefuse("GROUP BY needs dp_pg.partition_keep", "The dp_pg installation is incomplete.");
	(void) get_func_signature(fn, &argtypes, &nargs);
	return argtypes[0];
}

/* A dp_mechanism constant. */
Const *
DpMechanismConst(const DpMechanism *mech)
{
	DpMechanism *copy = palloc(sizeof(DpMechanism));

	*copy = *mech;
	return makeConst(DpMechanismType(), -1, InvalidOid, sizeof(DpMechanism), PointerGetDatum(copy), false, false);
}

/* An aggregate call fn(args) of result type rettype. */
Aggref *
DpMakeAggref(Oid fn, Oid rettype, List *args, Oid inputcollid, Expr *filter, bool star)
{
	Aggref	   *a = makeNode(Aggref);
	ListCell   *lc;
	int			i = 1;

	a->aggfnoid = fn;
	a->aggtype = rettype;
	a->aggcollid = InvalidOid;
	a->inputcollid = inputcollid;
	a->aggtranstype = InvalidOid;
	a->aggargtypes = NIL;
	a->args = NIL;
	foreach(lc, args)
	{
		a->aggargtypes = lappend_oid(a->aggargtypes, exprType(lfirst(lc)));
		a->args = lappend(a->args, makeTargetEntry(lfirst(lc), i++, NULL, false));
	}
	a->aggdirectargs = NIL;
	a->aggorder = NIL;
	a->aggdistinct = NIL;
	a->aggfilter = filter;
	a->aggstar = star;
	a->aggvariadic = false;
	a->aggkind = AGGKIND_NORMAL;
	a->agglevelsup = 0;
	a->aggsplit = AGGSPLIT_SIMPLE;
	a->aggno = -1;
	a->aggtransno = -1;
	a->location = -1;
	return a;
}

/* "<expr> IS NOT NULL" */
Node *
DpIsNotNull(Expr *arg)
{
	NullTest   *nt = makeNode(NullTest);

	nt->arg = arg;
	nt->nulltesttype = IS_NOT_NULL;
	nt->argisrow = false;
	nt->location = -1;
	return (Node *) nt;
}

/* Strip binary-compatible relabelling. */
Node *
DpStripRelabel(Node *n)
{
	while (n && IsA(n, RelabelType))
		n = (Node *) ((RelabelType *) n)->arg;
	return n;
}

/* The Var under binary-compatible relabelling (this query level), or NULL. */
Var *
DpStripVar(Node *node)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return (node && IsA(node, Var) && ((Var *) node)->varlevelsup == 0) ? (Var *) node : NULL;
}

/* Walker: true if the expression contains a Param. */
bool
DpContainsParamWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return true;
	return expression_tree_walker(node, DpContainsParamWalker, context);
}

/* Is fn a widening numeric cast (smallint to integer, any integer to numeric or float8, real to float8)? */
bool
DpIsWideningCast(Oid fn)
{
	switch (fn)
	{
		case F_INT4_INT2:
		case F_INT8_INT2:
		case F_INT8_INT4:
		case F_NUMERIC_INT2:
		case F_NUMERIC_INT4:
		case F_NUMERIC_INT8:
		case F_FLOAT8_INT2:
		case F_FLOAT8_INT4:
		case F_FLOAT8_INT8:
		case F_FLOAT8_FLOAT4:
			return true;
		default:
			return false;
	}
}

Expr *
DpMinMax(MinMaxOp op, Oid type, Expr *a, Expr *b)
{
	MinMaxExpr *m = makeNode(MinMaxExpr);

	m->minmaxtype = type;
	m->minmaxcollid = InvalidOid;
	m->inputcollid = InvalidOid;
	m->op = op;
	m->args = list_make2(a, b);
	m->location = -1;
	return (Expr *) m;
}

/* expr coerced to type (an implicit or assignment cast, e.g. int4 -> int8 -> numeric). */
Expr *
DpCoerce(ParseState *pstate, Expr *expr, Oid type)
{
	Node	   *n = coerce_to_target_type(pstate, (Node *) expr, exprType((Node *) expr), type, -1,
										  COERCION_EXPLICIT, COERCE_IMPLICIT_CAST, -1);

	if (n == NULL)
		elog(ERROR, "dp_pg: cannot cast type %s to %s", format_type_be(exprType((Node *) expr)), format_type_be(type));
	return (Expr *) n;
}

/*
 * a op b, op a built-in operator: looked up in pg_catalog explicitly, never
 * through the search_path (where a user could shadow it with a function of
 * his own that would then see private values).
 */
Expr *
DpOp(ParseState *pstate, const char *op, Expr *a, Expr *b)
{
	return make_op(pstate, list_make2(makeString("pg_catalog"), makeString((char *) op)),
				   (Node *) a, (Node *) b, NULL, -1);
}
