/*
 * guard/trust.c — analysts run only trusted code (invariant 1).
 *
 * Trusted code is code a superuser owns: a function (procedure, aggregate,
 * window function) whose pg_proc owner is a superuser, which covers
 * everything built into PostgreSQL, dp_pg's objects and those of extensions
 * (a trusted extension installed by a database owner belongs to the
 * bootstrap superuser).  Operators, casts and types run code only through
 * functions, so they are judged by those.  Collations are not code, but a
 * collation used on protected rows must be a superuser's too, and is opened
 * while planning (DpCheckCollation, for the row expressions).
 *
 * In an analyst's session (session.c) untrusted code never runs:
 *  - the object-access hook's function-execute event fires wherever
 *    PostgreSQL initialises a function for execution — every expression of a
 *    plan (including the planner's own constant folding, which evaluates
 *    through the executor), aggregates and their support functions, window
 *    functions, set-returning functions, CALL, the fast-path interface,
 *    defaults, CHECK and domain constraints, trigger WHEN clauses, COPY FROM
 *    WHERE, partition bounds — and refuses an untrusted function there;
 *  - needs_fmgr_hook asks for every untrusted function to be called through
 *    fmgr_security_definer, whose fmgr_hook refuses it on entry: that covers
 *    calls made without the executor (type I/O, triggers, operator selectivity
 *    estimators, language handlers' callbacks) and keeps the planner from
 *    inlining an untrusted SQL function (inline_function skips functions that
 *    need the hook), so its body is never spliced into a query either.
 * Analysts may not create code or expressions that PostgreSQL evaluates
 * outside a query plan (DpTrustCheckUtility).
 *
 * The trust decision per function is cached and forgotten when pg_proc or a
 * role changes.
 *
 * Layer guard/, floor base (docs/development.md): may call the other files of
 * the floor base, the aggregates, the release path, the ledger, common/ and
 * the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/syscache.h"

#include "guard/floor_base.h"
#include "ledger.h"

/* Cached trust of one function. */
typedef struct DpTrustEntry
{
	Oid			fn;				/* hash key */
	bool		trusted;
} DpTrustEntry;

static HTAB *trust_cache = NULL;

/* Forget every cached decision (pg_proc or pg_authid changed). */
static void
DpTrustInvalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	if (trust_cache != NULL)
	{
		hash_destroy(trust_cache);
		trust_cache = NULL;
	}
}

/* True if function fn is trusted: owned by a superuser. */
bool
DpTrustedFunction(Oid fn)
{
	DpTrustEntry *e;
	bool		found;
	HeapTuple	tup;
	bool		trusted = false;

	if (fn < FirstNormalObjectId)
		return true;			/* built into PostgreSQL */
	if (trust_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(DpTrustEntry);
		trust_cache = hash_create("dp_pg function trust", 128, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	e = hash_search(trust_cache, &fn, HASH_FIND, &found);
	if (found)
		return e->trusted;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	if (HeapTupleIsValid(tup))
	{
		trusted = superuser_arg(((Form_pg_proc) GETSTRUCT(tup))->proowner);
		ReleaseSysCache(tup);
	}
	e = hash_search(trust_cache, &fn, HASH_ENTER, &found);
	e->trusted = trusted;
	return trusted;
}

/* True if collation coll may be used on protected rows: owned by a superuser. */
bool
DpTrustedCollation(Oid coll)
{
	HeapTuple	tup;
	bool		trusted = false;

	if (!OidIsValid(coll) || coll < FirstNormalObjectId)
		return true;
	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(coll));
	if (HeapTupleIsValid(tup))
	{
		trusted = superuser_arg(((Form_pg_collation) GETSTRUCT(tup))->collowner);
		ReleaseSysCache(tup);
	}
	return trusted;
}

/* ERROR: untrusted function fn may not run in this session. */
static void
DpTrustRefuse(Oid fn)
{
	char	   *name = get_func_name(fn);

	DpLedgerNoteRefusal(psprintf("function %s may not run in an analyst's session", name ? name : "?"),
						ERRCODE_INSUFFICIENT_PRIVILEGE);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("dp_pg: function %s may not run in an analyst's session", name ? name : "?"),
			 errdetail("Analysts run only code owned by a superuser; this function is owned by another role."),
			 errhint("Ask a DBA to review the function and have a superuser own it.")));
}

/* Object-access hook, function-execute event: ERROR for untrusted code in an analyst's session. */
void
DpTrustCheckExecute(Oid fn)
{
	if (fn < FirstNormalObjectId || !IsTransactionState())
		return;
	if (!DpTrustedFunction(fn) && DpSessionIsAnalyst())
		DpTrustRefuse(fn);
}

/* needs_fmgr_hook: calls of untrusted functions go through DpTrustCheckCall in analysts' sessions. */
bool
DpTrustNeedsFmgrHook(Oid fn)
{
	if (fn < FirstNormalObjectId || !IsTransactionState())
		return false;
	return !DpTrustedFunction(fn) && DpSessionIsAnalyst();
}

/* fmgr_hook, function entry: ERROR for untrusted code in an analyst's session. */
void
DpTrustCheckCall(Oid fn)
{
	DpTrustCheckExecute(fn);
}

/* True if a list of Constraint nodes has a CHECK, DEFAULT or GENERATED expression. */
static bool
DpHasExpressionConstraint(List *constraints)
{
	ListCell   *lc;

	foreach(lc, constraints)
	{
		Constraint *c = (Constraint *) lfirst(lc);

		if (IsA(c, Constraint) &&
			(c->contype == CONSTR_CHECK || c->contype == CONSTR_DEFAULT || c->contype == CONSTR_GENERATED))
			return true;
	}
	return false;
}

/* True if a column definition carries an expression. */
static bool
DpColumnHasExpression(ColumnDef *col)
{
	return col->raw_default != NULL || col->cooked_default != NULL ||
		DpHasExpressionConstraint(col->constraints);
}

/*
 * What a DDL statement would store that PostgreSQL later runs outside a
 * query plan — code (functions, procedures, aggregates, operators, casts,
 * conversions, languages, transforms, range types with a subtype
 * difference, triggers, rules, policies) or expressions (CHECK, DEFAULT and
 * GENERATED, domain constraints, trigger WHEN clauses, index expressions and
 * predicates, ALTER COLUMN TYPE ... USING) — or NULL if nothing.
 */
static const char *
DpStoredCode(Node *stmt)
{
	ListCell   *lc;

	switch (nodeTag(stmt))
	{
		case T_CreateFunctionStmt:
			return "functions and procedures";
		case T_DefineStmt:
			switch (((DefineStmt *) stmt)->kind)
			{
				case OBJECT_AGGREGATE:
					return "aggregates";
				case OBJECT_OPERATOR:
					return "operators";
				case OBJECT_TYPE:
					return "base types";
				default:
					return NULL;
			}
		case T_CreateRangeStmt:
			return "range types";
		case T_CreateCastStmt:
			return "casts";
		case T_CreateConversionStmt:
			return "conversions";
		case T_CreatePLangStmt:
			return "languages";
		case T_CreateTransformStmt:
			return "transforms";
		case T_CreateTrigStmt:
			return "triggers";
		case T_RuleStmt:
			return "rules";
		case T_CreatePolicyStmt:
		case T_AlterPolicyStmt:
			return "row-level security policies";
		case T_CreateDomainStmt:
			return DpHasExpressionConstraint(((CreateDomainStmt *) stmt)->constraints) ?
				"domain constraints and defaults" : NULL;
		case T_AlterDomainStmt:
			return (((AlterDomainStmt *) stmt)->subtype == 'C' || ((AlterDomainStmt *) stmt)->subtype == 'T') ?
				"domain constraints and defaults" : NULL;
		case T_CreateStmt:
			foreach(lc, ((CreateStmt *) stmt)->tableElts)
				if (IsA(lfirst(lc), ColumnDef) && DpColumnHasExpression(lfirst(lc)))
					return "column defaults, generated columns and CHECK constraints";
			return DpHasExpressionConstraint(((CreateStmt *) stmt)->constraints) ?
				"column defaults, generated columns and CHECK constraints" : NULL;
		case T_AlterTableStmt:
			foreach(lc, ((AlterTableStmt *) stmt)->cmds)
			{
				AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

				if ((cmd->subtype == AT_ColumnDefault && cmd->def != NULL) ||
					(cmd->subtype == AT_AddConstraint && cmd->def &&
					 DpHasExpressionConstraint(list_make1(cmd->def))) ||
					(cmd->subtype == AT_AddColumn && cmd->def && IsA(cmd->def, ColumnDef) &&
					 DpColumnHasExpression((ColumnDef *) cmd->def)) ||
					(cmd->subtype == AT_AlterColumnType && cmd->def && IsA(cmd->def, ColumnDef) &&
					 ((ColumnDef *) cmd->def)->raw_default != NULL))
					return "column defaults, CHECK constraints and ALTER TYPE ... USING";
			}
			return NULL;
		case T_IndexStmt:
			if (((IndexStmt *) stmt)->whereClause != NULL)
				return "index predicates";
			foreach(lc, ((IndexStmt *) stmt)->indexParams)
				if (((IndexElem *) lfirst(lc))->expr != NULL)
					return "index expressions";
			return NULL;
		default:
			return NULL;
	}
}

/* ProcessUtility: ERROR if an analyst creates code or expressions evaluated outside a plan. */
void
DpTrustCheckUtility(Node *stmt)
{
	const char *what = DpStoredCode(stmt);

	if (what != NULL && DpSessionIsAnalyst())
	{
		DpLedgerNoteRefusal(psprintf("analysts may not create %s", what), ERRCODE_INSUFFICIENT_PRIVILEGE);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("dp_pg: analysts may not create %s", what),
				 errdetail("Analysts run only code owned by a superuser; code and expressions that run outside a query plan are not allowed."),
				 errhint("Ask a DBA to create the object.")));
	}
}

/* Register the cache invalidation callbacks. */
void
DpTrustInit(void)
{
	CacheRegisterSyscacheCallback(PROCOID, DpTrustInvalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, DpTrustInvalidate, (Datum) 0);
}

/*
 * A collation used on protected rows: a superuser's, and its locale opened
 * now (a locale that cannot be opened fails here, not on the first row that
 * reaches the comparison).  Collatable inputs need one.
 */
void
DpCheckCollation(Oid coll, Oid argtype, bool need_deterministic, const char *where)
{
	if (!OidIsValid(coll))
	{
		if (type_is_collatable(argtype))
			DpGuardRefuse("a comparison of text needs a collation",
						  psprintf("The collations in %s conflict; add a COLLATE clause.", where));
		return;
	}
	if (!DpTrustedCollation(coll))
		DpGuardRefuse("only collations owned by a superuser may be used on a protected table",
					  psprintf("Found another one in %s.", where));
	if (need_deterministic && !get_collation_isdeterministic(coll))
		DpGuardRefuse("LIKE under a nondeterministic collation is not allowed on a protected table",
					  psprintf("It fails only on the rows that reach it (%s).", where));
	DpOpenCollation(coll);
}
