/*
 * guard/floor_releases.h — the guard's floor releases: what a dp query
 * releases and how its DP levels are made (docs/development.md, "The
 * guard's floors").  Lowest first:
 *
 *   joins.c     joins in which a protected row meets at most one row
 *   multi.c     several releases in one query: released subqueries,
 *               grouping sets, constant series (each release guarded by the
 *               guard guard.c hands it: DpGuardQuery)
 *   unitjoin.c  two protected tables joined on their shared privacy unit
 *   release.c   the release level: the DP level split from post-processing
 *   order.c     error bars beside their groups, in the output's order
 *   derived.c   STDDEV / VARIANCE and count(DISTINCT) from other releases
 *   narrow.c    filters narrow the listed keys of generalised keys
 *   groups.c    GROUP BY: every public key, or partition selection
 *   shape.c     the accepted shape of the DP level
 *   translate.c BI tools' plain aggregates made dp aggregates
 *   unitkeys.c  no group of a single unit
 *   units.c     per-unit contribution bounding
 *   dpquery.c   the dp query inside an analyst's query
 *   perunit.c   aggregates over per-unit aggregates
 *
 * Inner header of guard/; includes the floor below.
 */
#ifndef DP_GUARD_FLOOR_RELEASES_H
#define DP_GUARD_FLOOR_RELEASES_H

#include "guard/floor_rows.h"

/* What validation found (shape.c). */
typedef struct DpShape
{
	int			prot_rti;		/* range-table index of the protected table */
	DpProtected *prot;			/* its declaration (or a trusted role's request) */
	int			ndp;			/* dp aggregate calls */
	int			partner_rti;	/* a second protected table joined on the unit (unitjoin.c), or 0 */
	Oid			partner_relid;
	DpProtected *partner;		/* its declaration */
	AttrNumber	unit_attno;		/* the first table's column that carries the joined rows' unit */
} DpShape;

/* ------------------------------------------------------------------------
 * joins.c — joins in which a protected row meets at most one row
 * ------------------------------------------------------------------------
 */

/* True if conjunct c equates a column at rti_a with one at rti_b by their type's equality (sets *a, *b). */
extern bool DpEquatedColumns(Node *c, int rti_a, int rti_b, Var **a, Var **b);

/* True if the conjuncts cover a unique key of pub_relid (at pub_rti) by equalities with columns at prot_rti. */
extern bool DpJoinedOnUniqueKey(List *quals, int pub_rti, Oid pub_relid, int prot_rti);

/* ------------------------------------------------------------------------
 * multi.c — several releases in one query
 * ------------------------------------------------------------------------
 */

/*
 * The guard of one query level (guard.c's DpGuardDpQuery or
 * DpGuardCountedQuery): multi.c guards each release it makes with the one
 * guard.c hands it, so that no release file calls up into guard.c.
 */
typedef void (*DpGuardQuery) (Query *q, List *prot, DpPlanCheck *check, int depth);

/* Forget the released subqueries of an earlier query. */
extern void DpMultiReset(void);

/* Guard the dp subqueries that filter the protected table's rows (released subqueries); returns the reads guarded. */
extern int	DpMultiReleasedSubqueries(Query *q, List *prot, DpPlanCheck *check, DpGuardQuery guard);

/* True if r is a released subquery. */
extern bool DpMultiIsReleased(RangeTblEntry *r);

/* True if released entry r (at rti) is joined to the protected table on every column it keeps. */
extern bool DpMultiReleasedJoined(List *quals, int rti, RangeTblEntry *r, int prot_rti);

/* Take the released subqueries that filter only GROUP BY keys out of DP level q's join tree (see multi.c). */
extern List *DpMultiDetachKeyFilters(Query *q, int prot_rti, Node **keys, int nkeys);

/* Join them to q's list of public keys instead (after DpRewritePublicGroupsCore). */
extern void DpMultiAttachKeyFilters(Query *q, List *filters);

/* Decompose a query level with grouping sets or a constant series into one release each. */
extern bool DpMultiSplit(Query *q, List *prot, DpPlanCheck *check, int depth, DpGuardQuery guard);

/* ------------------------------------------------------------------------
 * unitjoin.c — two protected tables joined on their shared privacy unit
 * ------------------------------------------------------------------------
 */

/* Check the join of a DP level's two protected tables (ERROR 42501 unless on the shared unit). */
extern void DpUnitJoinCheck(DpShape *shape, List *quals, List *prot);

/* The bound of the joined rows of a checked unit join. */
extern void DpUnitJoinBound(DpShape *shape, DpUnitBound *ub);

/* 1 if a query level reads two different protected tables side by side (a candidate unit join), else 0. */
extern int	DpUnitJoinReads(Query *q, List *prot);

/* The hint naming the join on the unit for a filter by a second protected table's subquery, or NULL. */
extern const char *DpUnitJoinHint(Query *q, List *prot);

/* ------------------------------------------------------------------------
 * release.c — the release level
 * ------------------------------------------------------------------------
 */

/* Split a validated query into the DP level (returned) and post-processing over it (q). */
extern Query *DpReleaseSplit(Query *q, DpShape *shape);

/* ------------------------------------------------------------------------
 * order.c — the error bars of released values beside their groups
 * ------------------------------------------------------------------------
 */

/* DP level d names the keys of each released group whose values have bars of their own (dp_avg). */
extern void DpReleaseNoteKeys(Query *d);

/* The top level q over DP level d reports the order of its output rows (plain post-processing only). */
extern void DpReleaseOrderWrap(Query *q, Query *d);

/* ------------------------------------------------------------------------
 * derived.c — BI aggregates answered from other dp releases
 * ------------------------------------------------------------------------
 */

/* True if aggfnoid is a STDDEV / VARIANCE aggregate (sets *sample, *root). */
extern bool DpIsDispersion(Oid aggfnoid, bool *sample, bool *root);

/* STDDEV / VARIANCE a of its argument over [lo, hi] as three noisy moments. */
extern Node *DpTranslateDispersion(Aggref *a, double lo, double hi, Oid count_fn, Oid sum_fn, bool sample, bool root);

/* count(DISTINCT col) of a column with public keys as the keys present in a histogram over them. */
extern Node *DpTranslateDistinctKeys(Aggref *a, ArrayType *keys, Oid hist_fn, int64 rows, int32 groups);

/* ------------------------------------------------------------------------
 * narrow.c — filters narrow the listed keys of generalised GROUP BY keys
 * ------------------------------------------------------------------------
 */

/* The keys (columns of relid at rti) whose listed values the conjuncts of where narrow, or NIL. */
extern List *DpNarrowingOf(Node *where, int rti, Oid relid, Node **keys, int nkeys);

/* Narrow the listed keys of q (after DpRewritePublicGroupsCore) by DpNarrowingOf's result. */
extern void DpNarrowKeyList(Query *q, List *narrow, int rti);

/* ------------------------------------------------------------------------
 * groups.c — GROUP BY: public keys or partition selection
 * ------------------------------------------------------------------------
 */

/* Add private partition selection to a DP level's HAVING (groups > 0: over units). */
extern void DpAddPartitionKeep(Query *q, int32 groups);

/* The public values of a GROUP BY expression key (text[]), or NULL: partition selection. */
extern ArrayType *DpExpressionPublicKeys(Node *key, Oid relid, int keyrti);

/* The public key lists of the GROUP BY columns (columns of relid at range-table index keyrti), or false. */
extern bool DpGroupPublicKeys(Query *q, Oid relid, int keyrti, ArrayType **arrs);

/* The public key consts of arr (text[]) in key's type. */
extern List *DpPublicKeyConsts(ArrayType *arr, Node *key);

/* The WHERE conjuncts that read only GROUP BY key columns, over key placeholders. */
extern List *DpKeyOnlyQuals(Node *quals, int rti, const AttrNumber *atts, int nkeys);

/* Rewrite a DP level grouped on public keys so that every key (that key_quals admits) appears. */
extern void DpRewritePublicGroupsCore(Query *q, ArrayType **arrs, Node *real_row, List *key_quals);

/* GROUP BY of a DP level reading one protected table: public keys, or partition selection. */
extern void DpGroupRelease(Query *d, Oid relid);

/* ------------------------------------------------------------------------
 * shape.c — the accepted shape of an analyst's query on a protected table
 * ------------------------------------------------------------------------
 */

/*
 * Validate q, a query whose top level reads protected table (or unit table)
 * target: the DP level must have the accepted shape, and everything else
 * must act on released values only.  Row expressions are rewritten in place
 * (their constants folded).  ERROR 42501 otherwise.
 */
extern void DpShapeValidate(Query *q, DpProtected *target, DpShape *shape);

/* ------------------------------------------------------------------------
 * translate.c — BI tools' plain aggregates
 * ------------------------------------------------------------------------
 */

/*
 * An analyst's plain count / sum / avg of the top level on protected table
 * p become dp aggregates with the default mechanism, bounds from the
 * column's value domain (ERROR without one).  Before the shape check.
 */
extern void DpTranslatePlainAggregates(Query *q, DpProtected *p);

/* The bounds of aggregate a's argument over protected table p (at prot_rti) of q (ERROR without). */
extern void DpTranslateArgumentBounds(Query *q, DpProtected *p, int prot_rti, Aggref *a, const char *agg,
									  Oid argtype, double *lo, double *hi);

/* ------------------------------------------------------------------------
 * unitkeys.c — no group of a single unit
 * ------------------------------------------------------------------------
 */

/* ERROR before the charge if every group of validated query q would be a single unit. */
extern void DpRefuseUnitGroups(Query *q, DpProtected *p, int prot_rti);

/* ------------------------------------------------------------------------
 * units.c — per-unit contribution bounding
 * ------------------------------------------------------------------------
 */

/* Bound a DP level's units before noise (see units.c). */
extern void DpBoundUnits(Query *d, int prot_rti, Oid relid, bool is_protected, const DpUnitBound *ub);

/* The table a trusted role's dp query must bound per unit, or NULL (see units.c). */
extern DpProtected *DpTrustedUnitTarget(Query *q, List *prot);

/* Keep at most g cells per unit of q1 (grouped by the unit first): its row_number() column in random order. */
extern AttrNumber DpUnitRankColumn(Query *q1);

/* ------------------------------------------------------------------------
 * dpquery.c — the dp query inside an analyst's query
 * ------------------------------------------------------------------------
 */

/* True if q is a column probe (LIMIT 0, a constantly false WHERE): it has no row whatever the data. */
extern bool DpIsColumnProbe(Query *q);

/* Make q a query of the same columns and no row, reading nothing. */
extern void DpEmptyProbe(Query *q);

/* Walker: true if the query calls one of the guard's own row functions anywhere. */
extern bool DpCallsGuardRowFunction(Node *node, void *context);

/* Inline the WITH queries of q (at every level) that read a protected table. */
extern void DpInlineProtectedCtes(Query *q);

/* The protected table the top level of q reads, or NULL. */
extern DpProtected *DpTopLevelProtected(Query *q, List *prot);

/* The FROM-subquery of q that reads the protected table (the dp query a wrapper wraps), or NULL. */
extern RangeTblEntry *DpWrappedDpQuery(Query *q);

/* Flatten q's FROM-subqueries that only filter, project or join its protected table; true if it did. */
extern bool DpGuardFlatten(Query *q, List *prot);

/* dp_pg.analyst_rows(), the qual of the policy that gives analysts no row, or InvalidOid. */
extern Oid	DpAnalystRowsFunction(void);

/* Read a DP level's protected table (entry rte of d) with its owner's rights, without the analysts' policy. */
extern void DpGuardElevate(Query *d, RangeTblEntry *rte);

/* ------------------------------------------------------------------------
 * perunit.c — aggregates over per-unit aggregates
 * ------------------------------------------------------------------------
 */

/* Validate and rewrite an aggregate over per-unit aggregates of a unit table; false if q is not one. */
extern bool DpPerUnitQuery(Query *q, List *prot, DpPlanCheck *check, int depth);

#endif							/* DP_GUARD_FLOOR_RELEASES_H */
