/*
 * guard/floor_base.h — the guard's floor base: what every file of guard/
 * may use (docs/development.md, "The guard's floors").
 *
 *   refuse.c     refusals (ERROR 42501 naming the rule), the row-step budget
 *   nodes.c      small node builders and node facts
 *   session.c    who the session is: superuser, analyst; the roles an
 *                analyst can act as
 *   trust.c      code trust (functions, collations)
 *   unitbound.c  a table's privacy unit as the guard bounds it
 *
 * Inner header of guard/: only guard/'s files include it (through their
 * floor's header); the rest of dp_pg sees guard/guard.h.
 */
#ifndef DP_GUARD_FLOOR_BASE_H
#define DP_GUARD_FLOOR_BASE_H

#include "guard/guard.h"
#include "parser/parse_node.h"

/* ------------------------------------------------------------------------
 * refuse.c — refusals and the row-step budget
 * ------------------------------------------------------------------------
 */

/* ERROR 42501 naming the rule a query broke. */
extern DP_NORETURN void DpGuardRefuse(const char *rule, const char *detail);

/* The same, with a short hint saying what to write instead (NULL: none). */
extern DP_NORETURN void DpGuardRefuseHint(const char *rule, const char *detail, const char *hint);

/*
 * The steps of the current query's row expressions: reset before each query
 * is planned (guard.c); each step counted (rowexpr.c, bounds.c), ERROR
 * 42501 beyond the limit.
 */
extern void DpRowStepsReset(void);
extern void DpRowStep(const char *where);

/* ------------------------------------------------------------------------
 * nodes.c — small node builders and node facts
 * ------------------------------------------------------------------------
 */

/* An int4 and an int8 constant. */
extern Const *DpInt4Const(int32 v);
extern Const *DpInt8Const(int64 v);

/* A constant of type type from a bound (a number; a date's days, a time's microseconds since 2000). */
extern Const *DpBoundConstOf(Oid type, double v);

/* The dp_mechanism type (no search_path lookup). */
extern Oid	DpMechanismType(void);

/* A dp_mechanism constant. */
extern Const *DpMechanismConst(const DpMechanism *mech);

/* An aggregate call fn(args) of result type rettype. */
extern Aggref *DpMakeAggref(Oid fn, Oid rettype, List *args, Oid inputcollid, Expr *filter, bool star);

/* "<expr> IS NOT NULL" */
extern Node *DpIsNotNull(Expr *arg);

/* n without binary-compatible relabelling. */
extern Node *DpStripRelabel(Node *n);

/* The Var under binary-compatible relabelling (this query level), or NULL. */
extern Var *DpStripVar(Node *node);

/* Walker: true if the expression contains a Param. */
extern bool DpContainsParamWalker(Node *node, void *context);

/* True if fn is a widening numeric cast (smallint to integer, any integer to numeric or float8, real to float8). */
extern bool DpIsWideningCast(Oid fn);

/* LEAST / GREATEST of a and b of type type. */
extern Expr *DpMinMax(MinMaxOp op, Oid type, Expr *a, Expr *b);

/* expr coerced to type (an implicit or assignment cast, e.g. int4 -> int8 -> numeric). */
extern Expr *DpCoerce(ParseState *pstate, Expr *expr, Oid type);

/* a <op> b, op a pg_catalog operator. */
extern Expr *DpOp(ParseState *pstate, const char *op, Expr *a, Expr *b);

/* ------------------------------------------------------------------------
 * session.c — who the session is
 * ------------------------------------------------------------------------
 */

/* True in a session whose session user is a superuser running as a superuser. */
extern bool DpSessionIsSuperuser(void);

/*
 * True if queries run now are charged to a budget (an analyst), or if the
 * ledger cannot tell yet (fail closed).  Never waits; cached.
 */
extern bool DpSessionIsAnalyst(void);

/* A number that changes whenever DpSessionIsAnalyst() changes its answer. */
extern uint32 DpSessionEpoch(void);

/* Keep messages below NOTICE away from an analyst's client. */
extern void DpSessionMessageFloor(void);

/* Register the cache invalidation callbacks. */
extern void DpSessionInit(void);

/* The roles whose rights an analyst can use (public tables, views' owners). */
extern List *DpAnalystReachableRoles(void);

/* ------------------------------------------------------------------------
 * trust.c — code trust (its hooks are in guard.h)
 * ------------------------------------------------------------------------
 */

/* ProcessUtility: ERROR if an analyst creates code or expressions evaluated outside a plan. */
extern void DpTrustCheckUtility(Node *stmt);

/* Register the cache invalidation callbacks. */
extern void DpTrustInit(void);

/*
 * A collation used on protected rows (in where): a superuser's, its locale
 * opened now; deterministic if need_deterministic; collatable inputs of type
 * argtype need one.  ERROR 42501 otherwise.
 */
extern void DpCheckCollation(Oid coll, Oid argtype, bool need_deterministic, const char *where);

/* ------------------------------------------------------------------------
 * unitbound.c — a table's privacy unit as the guard bounds it
 * ------------------------------------------------------------------------
 */

/* How one table's units are bounded in this query. */
typedef struct DpUnitBound
{
	AttrNumber	attno;			/* unit column */
	int32		groups;			/* g: cells per unit */
	int32		rows;			/* r: rows (or row-equivalents) per cell */
} DpUnitBound;

/* The unit bound of a protected table's declaration, or false if it has none. */
extern bool DpUnitBoundOf(DpProtected *p, DpUnitBound *ub);

/* True if relid has a privacy unit, declared or requested by dp_pg.privacy_unit. */
extern bool DpIsUnitTable(List *prot, Oid relid);

#endif							/* DP_GUARD_FLOOR_BASE_H */
