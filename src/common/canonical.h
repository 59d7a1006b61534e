/*
 * canonical.h — the canonical spelling of a released key (canonical.c).
 *
 * Values that are equal to PostgreSQL can be spelled differently (5 and
 * 5.000, -0 and 0, '1 day' and '24 hours', {"a": 1.0} and {"a": 1}).  A key
 * that leaves the DP level — a GROUP BY key, a histogram label — must be a
 * function of its equality class, never of the row the aggregation met
 * first: it is released in its canonical spelling.
 */
#ifndef DP_CANONICAL_H
#define DP_CANONICAL_H

#include "postgres.h"

/* How values of one type are brought to their canonical spelling (opaque). */
typedef struct DpCanon DpCanon;

/*
 * The canonical form of values of type (typmod, collation), allocated in the
 * current memory context: NULL when equal values are already spelled alike
 * (nothing to do).  When equal values can be spelled differently and no
 * canonical spelling exists (a nondeterministic collation, a type without
 * one), *refusal says why (otherwise it is set to NULL) and NULL is returned.
 */
extern DpCanon *DpCanonPlan(Oid type, int32 typmod, Oid collation, const char **refusal);

/* The canonical spelling of non-NULL value v (v itself when it is already canonical). */
extern Datum DpCanonValue(const DpCanon *canon, Datum v);

#endif							/* DP_CANONICAL_H */
