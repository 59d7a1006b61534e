/*
 * guard/guard.h — analysts learn about protected tables only what charged
 * releases tell them.
 *
 * Threat model
 * ------------
 * An *analyst* is a role with a budget, or a member of one (ledger/shared.c).  It
 * may hold TEMP, own a schema, have created objects before it got its budget,
 * be granted objects of other roles, and send any SQL over any client.
 * Trusted: superusers and what they own (PostgreSQL's built-in objects,
 * dp_pg's, those of extensions), and what the DBA declares: protected tables,
 * public keys, public tables that no analyst can shape.  Leaks by design:
 * that a query ran, its timing and the resources it used (so also the size of
 * a protected table in pages, and resource-limit errors such as
 * temp_file_limit or out of memory), the volume of writes in the cluster (WAL
 * position, transaction ids).
 *
 * Invariants, each enforced at one chokepoint of PostgreSQL (file in brackets):
 *  1. Analysts run only trusted code: in an analyst's session nothing owned by
 *     a non-superuser is executed — functions, procedures, aggregates,
 *     operators' and casts' functions, type I/O, triggers — wherever it
 *     appears; checked where PostgreSQL initialises or calls a function (the
 *     object-access hook's function-execute event, the fmgr hook), not in a
 *     query tree.  Analysts create no objects that hold code or expressions
 *     that run outside a query plan.  [trust.c]
 *  2. Statistics and sizes are closed at the source: the planner sees no
 *     statistics of a protected table the user may not read (so estimates,
 *     plan choice and selectivity code evaluate nothing against its values);
 *     functions that reveal sizes and counters of protected tables run only
 *     through dp_pg.masked_call, which returns NULL for them, and are refused
 *     anywhere else [stats.c]; messages below NOTICE never reach an analyst
 *     (a check hook on client_min_messages) [session.c].
 *  3. Every read of a protected table in an analyst's session is the DP level
 *     of a validated query, read with the owner's rights for that plan only:
 *     reads that appear after the guard looked (inlined SQL functions,
 *     inheritance under an unprotected parent) are refused where the plan is
 *     final, and a plan runs only in the session state it was planned for.
 *     [reads.c]  A partitioned table or inheritance parent is one protected
 *     table with its partitions and children at any depth, now and later:
 *     read through the table at the top only, never a member alone; a table
 *     joining it must be one no analyst can shape, one leaving it stays
 *     protected; a foreign partition's server evaluates nothing that could
 *     fail there and aggregates nothing.  [partitions.c]
 *  4. Bounds, bins and mechanisms are evaluated once, before the charge, and
 *     the plan carries the values (callsite.c).  Every expression evaluated on
 *     protected rows is total: no data-dependent error, notice or side effect;
 *     its constants are computed while planning; arithmetic reads its columns
 *     through their value domains and is admitted only when interval
 *     arithmetic shows no step can fail.  [shape.c, bounds.c, regex.c]
 *  5. Only released values leave the DP level: the DP level is a
 *     MATERIALIZED common table expression whose rows (GROUP BY keys, noisy
 *     aggregates) are sorted by key; HAVING, ORDER BY, LIMIT, DISTINCT, window
 *     functions and the select list are post-processing above it.  [release.c]
 *     A statement may hold several DP levels (grouping sets, a constant
 *     series, a dp subquery whose released rows filter another), charged
 *     together before any runs.  [multi.c]
 *  6. A public table joins a protected one only when no analyst can shape it
 *     and each protected row provably meets at most one of its rows.  [shape.c]
 *     Two protected tables join only on their shared privacy unit, the joined
 *     rows bounded per unit.  [unitjoin.c]
 *  7. No request can make another's charge fail (ledger/worker.c).
 *  8. A released key (GROUP BY key, histogram label, DISTINCT value) is a
 *     function of its equality class, never of one row's spelling of it:
 *     released in a canonical spelling, or refused.  [canonical.c]
 *  9. Nothing an analyst runs — utility statements included — makes
 *     PostgreSQL read a protected table outside a DP level, or changes what
 *     a protected table depends on: refused before it runs.  [ddl.c]
 */
#ifndef DP_GUARD_H
#define DP_GUARD_H

#include "postgres.h"

#include "compat.h"

#include "catalog/objectaddress.h"
#include "executor/execdesc.h"
#include "nodes/parsenodes.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"
#include "utils/array.h"
#include "utils/selfuncs.h"

#include "mechanism.h"

/* protected.c — the protected tables and their public keys: common/protected.h */
#include "protected.h"

/* ------------------------------------------------------------------------
 * translate.c — the value domain of a column
 * ------------------------------------------------------------------------
 */

/*
 * A constant's value as a double, if it can bound a column of type coltype
 * (translate.c): a number for a number column, a finite date or timestamp of
 * the column's own type for a date or timestamp column (days, microseconds);
 * coltype InvalidOid takes numbers whatever the column.
 */
extern bool DpConstValue(Const *c, Oid coltype, double *v);

/*
 * The value domain of column attno of relid (translate.c): its CHECK
 * constraints (conjuncts "column op constant", op one of < <= > >= =, the
 * constants read by DpConstValue for coltype) intersected with
 * dp_pg.set_domain's bounds (a date or time column's in its own units: days
 * or microseconds since 2000).  False if either end is unbounded.
 */
extern bool DpColumnDomain(Oid relid, AttrNumber attno, Oid coltype, double *lo, double *hi);

/* ------------------------------------------------------------------------
 * grants.c — the analysts' grant never opens a table without its protection
 * ------------------------------------------------------------------------
 */

/*
 * ExecutorCheckPerms_hook: false (with report, ERROR) if a member of
 * dp_pg_analyst reads a relation through dp_pg's grant to that group.
 * rtePermInfos is NIL before PostgreSQL 16 (the range table carries them).
 */
extern bool DpGrantsCheckPermissions(List *rangeTable, List *rtePermInfos, bool report);

/*
 * One read of relation relid with the rights of user (a permission check's
 * checkAsUser, or the current user) outside the executor: false if it would
 * go through dp_pg's grant to dp_pg_analyst; with report, ERROR instead.
 */
extern bool DpGrantsCheckRelation(Oid relid, Oid user, bool report);

/* ProcessUtility: ERROR for a grant to dp_pg_analyst other than SELECT on a protected table. */
extern void DpGrantsCheckUtility(Node *stmt);

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

/* ------------------------------------------------------------------------
 * trust.c — code trust
 * ------------------------------------------------------------------------
 */

/* True if function fn is trusted: owned by a superuser. */
extern bool DpTrustedFunction(Oid fn);

/* True if collation coll may be used on protected rows: owned by a superuser. */
extern bool DpTrustedCollation(Oid coll);

/* Object-access hook, function-execute event: ERROR for untrusted code in an analyst's session. */
extern void DpTrustCheckExecute(Oid fn);

/* needs_fmgr_hook: route calls of untrusted functions through DpTrustCheckCall in analysts' sessions. */
extern bool DpTrustNeedsFmgrHook(Oid fn);

/* fmgr_hook, function entry: ERROR for untrusted code in an analyst's session. */
extern void DpTrustCheckCall(Oid fn);

/* ProcessUtility: ERROR if an analyst creates code or expressions evaluated outside a plan. */
extern void DpTrustCheckUtility(Node *stmt);

/* Register the cache invalidation callbacks. */
extern void DpTrustInit(void);

/* ------------------------------------------------------------------------
 * stats.c — statistics and side channels
 * ------------------------------------------------------------------------
 */

/*
 * True if the size and statistics of relation relid (a protected table, one
 * of its indexes, its TOAST table or owned sequences) are hidden from the
 * current user: every protected relation for an analyst, the ones it may not
 * read for anyone else but a superuser.
 */
extern bool DpStatsHidden(Oid relid);

/* True if anything is hidden from the current user. */
extern bool DpStatsAnyHidden(void);

/* Mask sizes and counters in a query about to be planned (see stats.c). */
extern void DpStatsMaskQuery(Query *parse);

/* Object-access hook: ERROR if a size or counter function is initialised unmasked. */
extern void DpStatsCheckExecute(Oid fn);

/* The planner hooks of stats.c. */
extern void DpStatsRelationInfo(PlannerInfo *root, Oid relid, bool inhparent, RelOptInfo *rel);
extern bool DpStatsRelationStats(PlannerInfo *root, RangeTblEntry *rte, AttrNumber attnum,
								 VariableStatData *vardata);
extern bool DpStatsIndexStats(PlannerInfo *root, Oid indexOid, AttrNumber indexattnum,
							  VariableStatData *vardata);
extern int32 DpStatsAttWidth(Oid relid, AttrNumber attnum);

/* ProcessUtility: ERROR for COPY of a catalog that would show hidden sizes. */
extern void DpStatsCheckUtility(Node *stmt);

/* True if relid is one of the catalogs whose rows or columns the masking rewrites. */
extern bool DpStatsMaskedCatalog(Oid relid);

/* Register the cache invalidation callbacks. */
extern void DpStatsInit(void);

/* ------------------------------------------------------------------------
 * shape.c — the accepted shape of an analyst's query on a protected table
 * ------------------------------------------------------------------------
 */

/* ERROR 42501 naming the rule a query broke. */
extern DP_NORETURN void DpGuardRefuse(const char *rule, const char *detail);

/* The same, with a short hint saying what to write instead (NULL: none). */
extern DP_NORETURN void DpGuardRefuseHint(const char *rule, const char *detail, const char *hint);

/* The Var under binary-compatible relabelling (this query level), or NULL. */
extern Var *DpStripVar(Node *node);

/* True if conjunct c equates a column at rti_a with one at rti_b by their type's equality (sets *a, *b). */
extern bool DpEquatedColumns(Node *c, int rti_a, int rti_b, Var **a, Var **b);

/* True if the conjuncts cover a unique key of pub_relid (at pub_rti) by equalities with columns at prot_rti. */
extern bool DpJoinedOnUniqueKey(List *quals, int pub_rti, Oid pub_relid, int prot_rti);

/* What validation found. */
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

/*
 * Validate q, a query whose top level reads protected table (or unit table)
 * target: the DP level must have the accepted shape, and everything else
 * must act on released values only.  Row expressions are rewritten in place
 * (their constants folded).  ERROR 42501 otherwise.
 */
extern void DpShapeValidate(Query *q, DpProtected *target, DpShape *shape);

/*
 * translate.c: an analyst's plain count / sum / avg of the top level on
 * protected table p become dp aggregates with the default mechanism, bounds
 * from the column's value domain (ERROR without one).  Before the shape check.
 */
extern void DpTranslatePlainAggregates(Query *q, DpProtected *p);

/* translate.c: the bounds of aggregate a's argument over protected table p (at prot_rti) of q (ERROR without). */
extern void DpTranslateArgumentBounds(Query *q, DpProtected *p, int prot_rti, Aggref *a, const char *agg,
									  Oid argtype, double *lo, double *hi);

/* False if a LIKE pattern ends with its escape character (it would fail on the rows that reach its end). */
extern bool DpLikePatternComplete(const char *p);

/*
 * Run-time constants (dp_pg.run_constant, run_like_pattern) the row checks
 * have made in this backend so far: a counter that only grows, so planning
 * nested inside planning cannot hide the outer query's.
 */
extern uint64 DpRunConstantsMade(void);

/* True if the plan is stamped as holding run-time constants to bind (reads.c). */
extern bool DpPlanHasRunConstants(PlannedStmt *stmt);

/*
 * The steps of the current query's row expressions (shape.c): reset before
 * each query is planned (guard.c); each step counted, ERROR 42501 beyond
 * the limit.
 */
extern void DpRowStepsReset(void);
extern void DpRowStep(const char *where);

/* A row expression, checked and rewritten as shape.c checks WHERE clauses (columns of rtis, entries of rtable). */
extern Node *DpRowExpression(Node *node, Bitmapset *rtis, List *rtable, const char *where);

/* dp_pg.clamp_float8(numeric, float8, float8), total; InvalidOid if absent. */
/* guard.c */
extern void DpInlineProtectedCtes(Query *q);
/* Read a DP level's protected table (entry rte of d) with its owner's rights, without the analysts' policy. */
extern void DpGuardElevate(Query *d, RangeTblEntry *rte);
/* Flatten q's FROM-subqueries that only filter, project or join its protected table; true if it did. */
extern bool DpGuardFlatten(Query *q, List *prot);
extern Oid	DpAnalystRowsFunction(void);

/* keys.c — generalising expressions of a column (date_trunc, extract, width_bucket, ...) */
extern bool DpIsGeneralising(Node *node);
extern bool DpIsKeyWindowCall(Node *node);
extern Node *DpGeneralise(Node *node, Bitmapset *rtis, const char *where);
extern ArrayType *DpGeneralisedPublicKeys(Node *key, Oid relid, int keyrti);
extern void DpCheckCollation(Oid coll, Oid argtype, bool need_deterministic, const char *where);
extern bool DpIsWideningCast(Oid fn);
extern Node *DpRunConstant(Node *node);
extern bool DpIsRunConstantExpr(Node *node);
extern bool DpContainsParamWalker(Node *node, void *context);
extern List *DpTakeKeyChecks(void);
extern Oid	DpClampFloat8Function(void);

/* ------------------------------------------------------------------------
 * bounds.c — row expressions with derived bounds (interval arithmetic)
 * ------------------------------------------------------------------------
 */

/* The values a numeric (or date) row expression can take. */
typedef struct DpInterval
{
	double		lo;				/* every non-NULL value lies in [lo, hi]; lo > hi: only NULL */
	double		hi;
	bool		integral;		/* every value is an integer */
} DpInterval;

/* True if node is arithmetic (or holds arithmetic under a rounding function) that bounds.c judges. */
extern bool DpIsBoundedExpression(Node *node);

/*
 * The arithmetic row expression node, its columns read through their value
 * domains (numeric ones in canonical form when key: a GROUP BY key); refused
 * (42501) unless total.
 */
extern Node *DpBoundedRowExpr(Node *node, Bitmapset *rtis, List *rtable, const char *where, bool key);

/* The interval of a numeric row expression over the entries of rtable (ERROR 42501 when it has none). */
extern void DpBoundsOf(Node *node, List *rtable, const char *where, DpInterval *iv);

/* A constant of type type from a bound (a number; a date's days, a time's microseconds since 2000). */
extern Const *DpBoundConstOf(Oid type, double v);

/*
 * A value a domain read (domainread.c) takes as 0: nearer to zero than this
 * times the larger magnitude of the domain's bounds.
 */
#define DP_READ_FLOOR 0x1p-60

/* Floats and numerics in row expressions stay within +-DP_READ_MAX (reads, constants, total.c). */
#define DP_READ_MAX 1e300

/*
 * dp_pg's window of dates and times: 500 BC (astronomical year -499) to
 * 200000 AD.  Key columns are read through it (keys.c), date arithmetic
 * stays inside it (total.c), a date or time domain is cut to it (bounds.c).
 */
#define DP_WINDOW_LO_YEAR (-499)
#define DP_WINDOW_HI_YEAR 200000

/* ------------------------------------------------------------------------
 * total.c — dp_pg's total operators, written by bounds.c in place of
 * PostgreSQL's operators that can raise (see the file comment)
 * ------------------------------------------------------------------------
 */
typedef enum DpTotalKind
{
	DP_TOTAL_NONE,
	DP_TOTAL_ADD,
	DP_TOTAL_SUB,
	DP_TOTAL_MUL,
	DP_TOTAL_DIV,
	DP_TOTAL_MOD,
	DP_TOTAL_DIV_TRUNC,
	DP_TOTAL_NEG,
	DP_TOTAL_ABS,
	DP_TOTAL_INT2,
	DP_TOTAL_INT4,
	DP_TOTAL_INT8,
	DP_TOTAL_FLOAT4,
	DP_TOTAL_FLOAT8,
	DP_TOTAL_NUMERIC,
	DP_TOTAL_NUMERIC_TYPMOD,
	DP_TOTAL_DATE_ADD,
	DP_TOTAL_DATE_SUB,
	DP_TOTAL_DATE_DIFF
} DpTotalKind;

/* The total operator of kind (its SQL function); ERROR 42501 if the installation lacks it. */
extern Oid	DpTotalFunction(DpTotalKind kind);

/* The kind of total operator fn is, or DP_TOTAL_NONE. */
extern DpTotalKind DpTotalKindOf(Oid fn);

/* The total conversion to type (int2 .. numeric), or DP_TOTAL_NONE. */
extern DpTotalKind DpTotalCastTo(Oid type);

/* True if fn is one of dp_pg.domain_read(...), the total reads of a column through its domain. */
extern bool DpIsDomainRead(Oid fn);

/* The text forms of expr with subexpression part replaced by each of the text values (NULL: NULL). */
extern void DpEvalOnValues(Node *expr, Node *part, Datum *values, int n, char **out);

/* The distinct text forms of key with subexpression part replaced by each of values (text[]), sorted. */
extern ArrayType *DpKeyOnValues(Node *key, Node *part, ArrayType *values);

/* A released key's canonical form: numeric without trailing zeros, floats without -0. */
extern Node *DpCanonicalKey(Node *key);

/* The public values of a GROUP BY expression key (text[]), or NULL: partition selection. */
extern ArrayType *DpExpressionPublicKeys(Node *key, Oid relid, int keyrti);

/* A date or time column as a float8 (days or seconds) with its bounds, and back (min / max). */
extern Expr *DpTimeAsNumber(Expr *x, List *rtable, double *lo, double *hi);
extern Expr *DpNumberAsTime(Expr *d, Oid type);

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
 * views.c — a DBA's views over protected tables
 * ------------------------------------------------------------------------
 */

/* Unwrap the trusted views over protected tables at every level of q (refuse the others); their OIDs. */
extern List *DpUnwrapTrustedViews(Query *q);

/* The roles whose rights an analyst can use (shape.c). */
extern List *DpAnalystReachableRoles(void);

/* ------------------------------------------------------------------------
 * regex.c — constant regular expressions on protected rows
 * ------------------------------------------------------------------------
 */

/* True if opno is a built-in regular-expression match operator (~, ~*, !~, !~*). */
extern bool DpIsRegexOperator(Oid opno);

/* The match op of the row checks: a constant pattern, compiled now; refused (42501) otherwise. */
extern Node *DpRegexRowExpr(OpExpr *op, const char *where);

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
 * canonical.c — released keys are functions of their equality class
 * ------------------------------------------------------------------------
 */

/* Release the DP level's row keys in their canonical spelling; ERROR for keys without one. */
extern void DpCanonicalReleasedKeys(Query *d);

/* ERROR before the charge if values of key, released as what, have no canonical spelling. */
extern void DpCanonicalCheckKey(Node *key, const char *what);

/* unitkeys.c: ERROR before the charge if every group of validated query q would be a single unit. */
extern void DpRefuseUnitGroups(Query *q, DpProtected *p, int prot_rti);

/* ------------------------------------------------------------------------
 * groups.c — GROUP BY: public keys or partition selection
 * ------------------------------------------------------------------------
 */

/* The dp_mechanism type (no search_path lookup). */
extern Oid	DpMechanismType(void);

/* A dp_mechanism constant. */
extern Const *DpMechanismConst(const DpMechanism *mech);

/* Add private partition selection to a DP level's HAVING (groups > 0: over units). */
extern void DpAddPartitionKeep(Query *q, int32 groups);

/* The public key lists of the GROUP BY columns (columns of relid at range-table index keyrti), or false. */
extern bool DpGroupPublicKeys(Query *q, Oid relid, int keyrti, ArrayType **arrs);

/* The public key consts of arr (text[]) in key's type. */
extern List *DpPublicKeyConsts(ArrayType *arr, Node *key);

/* The WHERE conjuncts that read only GROUP BY key columns, over key placeholders (groups.c). */
extern List *DpKeyOnlyQuals(Node *quals, int rti, const AttrNumber *atts, int nkeys);

/* Rewrite a DP level grouped on public keys so that every key (that key_quals admits) appears. */
extern void DpRewritePublicGroupsCore(Query *q, ArrayType **arrs, Node *real_row, List *key_quals);

/* GROUP BY of a DP level reading one protected table: public keys, or partition selection. */
extern void DpGroupRelease(Query *d, Oid relid);

/* "<expr> IS NOT NULL" */
extern Node *DpIsNotNull(Expr *arg);

/* Small node builders shared by the rewrites. */
extern Aggref *DpMakeAggref(Oid fn, Oid rettype, List *args, Oid inputcollid, Expr *filter, bool star);
extern Const *DpInt4Const(int32 v);
extern Const *DpInt8Const(int64 v);

/* ------------------------------------------------------------------------
 * units.c — per-unit contribution bounding
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

/* Bound a DP level's units before noise (see units.c). */
extern void DpBoundUnits(Query *d, int prot_rti, Oid relid, bool is_protected, const DpUnitBound *ub);

/* The table a trusted role's dp query must bound per unit, or NULL (see units.c). */
extern DpProtected *DpTrustedUnitTarget(Query *q, List *prot);

/* Keep at most g cells per unit of q1 (grouped by the unit first): its row_number() column in random order. */
extern AttrNumber DpUnitRankColumn(Query *q1);

/* True if relid has a privacy unit, declared or requested by dp_pg.privacy_unit. */
extern bool DpIsUnitTable(List *prot, Oid relid);

/* ------------------------------------------------------------------------
 * reads.c — every read is a released read
 * ------------------------------------------------------------------------
 */

/* What the planner hook knew before planning, checked against the final plan. */
typedef struct DpPlanCheck
{
	bool		active;			/* checks apply */
	bool		analyst;		/* planned in an analyst's session */
	bool		masked;			/* sizes and counters were masked */
	int			protected_reads;	/* protected relations in the query */
	int			catalog_reads;	/* masked catalogs in the query */
	int			unit_reads;		/* tables with a privacy unit in the query */
	bool		bounded;		/* its unit tables are bounded (or it has no dp aggregate) */
	bool		dp_aggregates;	/* a dp aggregate anywhere */
	bool		run_constants;	/* the guard made run-time constants (dp_pg.run_constant) */
	List	   *views;			/* views the guard unwrapped (views.c): the plan depends on them */
} DpPlanCheck;

/* The number of protected relations a query tree reads (at any depth). */
extern int	DpReadsProtected(Query *parse);

/* Count what the query reads (before planning). */
extern void DpReadsBeforePlanning(Query *parse, DpPlanCheck *check);

/* Check and stamp the final plan. */
extern void DpReadsAfterPlanning(PlannedStmt *stmt, DpPlanCheck *check);

/* ExecutorStart: a plan reading protected tables runs only as it was approved. */
extern void DpReadsExecutorStart(QueryDesc *queryDesc, int eflags);

/* ExecutorRun: track the dp queries being executed (for nested reads). */
extern bool DpReadsRunPush(QueryDesc *queryDesc);
extern void DpReadsRunPop(bool pushed);

/* ------------------------------------------------------------------------
 * partitions.c — partitioned tables, inheritance parents, foreign partitions
 * ------------------------------------------------------------------------
 */

/* ERROR 42501 if an analyst's query reads a partition or inheritance child of a protected table on its own, or an unprotected parent of one. */
extern void DpPartitionsCheckQuery(Query *parse);

/* Before planning an analyst's query that reads a family holding foreign tables: ERROR 42501 unless each is a postgres_fdw table fit to be read (partitions.c). */
extern void DpPartitionsCheckShards(Query *parse);

/* get_relation_info_hook: a foreign table of a family, planned for an analyst, has no join or aggregate pushed to its server. */
extern void DpPartitionsRelationInfo(Oid relid, RelOptInfo *rel);

/* A DP level over a family with foreign tables: row predicates a remote server may not evaluate stay here (dp_pg.keep_local). */
extern void DpPartitionsKeepLocal(Query *d);

/* After planning an analyst's query: ERROR 42501 unless each foreign scan of a family is a plain, safe postgres_fdw read. */
extern void DpPartitionsCheckPlan(PlannedStmt *stmt);

/* ProcessUtility, before (after = false) and after the statement ran: tables joining or leaving a family. */
extern void DpPartitionsUtility(Node *stmt, bool after);

/* ddl.c: true if the dependency closure of relids holds an object of an analyst (a member of group): it, and its owner. */
extern bool DpDdlAnalystDependency(List *relids, Oid group, ObjectAddress *found, Oid *owner);

/* ------------------------------------------------------------------------
 * multi.c — several releases in one query
 * ------------------------------------------------------------------------
 */

/* Forget the released subqueries of an earlier query. */
extern void DpMultiReset(void);

/* Guard the dp subqueries that filter the protected table's rows (released subqueries); returns the reads guarded. */
extern int	DpMultiReleasedSubqueries(Query *q, List *prot, DpPlanCheck *check);

/* True if r is a released subquery. */
extern bool DpMultiIsReleased(RangeTblEntry *r);

/* True if released entry r (at rti) is joined to the protected table on every column it keeps. */
extern bool DpMultiReleasedJoined(List *quals, int rti, RangeTblEntry *r, int prot_rti);

/* Take the released subqueries that filter only GROUP BY keys out of DP level q's join tree (see multi.c). */
extern List *DpMultiDetachKeyFilters(Query *q, int prot_rti, Node **keys, int nkeys);

/* Join them to q's list of public keys instead (after DpRewritePublicGroupsCore). */
extern void DpMultiAttachKeyFilters(Query *q, List *filters);

/* Decompose a query level with grouping sets or a constant series into one release each. */
extern bool DpMultiSplit(Query *q, List *prot, DpPlanCheck *check, int depth);

/* ------------------------------------------------------------------------
 * perunit.c — aggregates over per-unit aggregates
 * ------------------------------------------------------------------------
 */

/* Forget the per-unit subqueries of an earlier statement. */
extern void DpPerUnitReset(void);

/* Validate and rewrite an aggregate over per-unit aggregates of a unit table; false if q is not one. */
extern bool DpPerUnitQuery(Query *q, List *prot, DpPlanCheck *check, int depth);

/* The domain of column attno of per-unit subquery v, if it is a per-unit value (bounds.c reads it). */
extern bool DpPerUnitDomain(Query *v, AttrNumber attno, double *lo, double *hi, bool *integral);

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
 * guard.c — the planner hook's two halves
 * ------------------------------------------------------------------------
 */

/* The DP query of an analyst's query (q itself, or the query it wraps), validated and rewritten. */
extern void DpGuardDpQuery(Query *parse, List *prot, DpPlanCheck *check, int depth);

/* DpGuardDpQuery of a query whose every protected read must be one of its DP levels (ERROR 42501 otherwise). */
extern void DpGuardCountedQuery(Query *q, List *prot, DpPlanCheck *check, int depth);

/* Before planning: masking, validation, the release level and its rewrites. */
extern void DpGuardBeforePlanning(Query *parse, DpPlanCheck *check);

/* After planning: the final plan's checks and stamp. */
extern void DpGuardAfterPlanning(PlannedStmt *stmt, DpPlanCheck *check);

/* ddl.c: ERROR if an analyst's utility statement would read a protected table or change what one depends on. */
extern void DpDdlCheckUtility(Node *stmt);

/* ProcessUtility: the guard's checks of utility statements. */
extern void DpGuardUtility(PlannedStmt *pstmt);

/* Set up the guard's caches (from _PG_init, preloaded only). */
extern void DpGuardInit(void);

/* runconst.c: run-time constants (dp_pg.run_constant), bound before the query runs */
extern Oid	DpRunConstantFunction(void);
extern Oid	DpRunLikePatternFunction(void);
extern void DpRunConstantsBind(QueryDesc *queryDesc, int eflags);

#endif							/* DP_GUARD_H */
