/*
 * names.c — a stored role or table compared with its name.
 *
 * dp_pg stores references to roles as regrole and to tables as regclass
 * (dp_pg.budget_limits, dp_pg.ledger_entries, dp_pg.protected_tables, ...):
 * the value is the OID, so a rename is followed and nothing is matched by a
 * name by accident, while pg_dump writes the name and a restore reads it back
 * onto the object of that name.  PostgreSQL has no = operator of its own for
 * these types (they compare as oid), so `WHERE role = 'ana'` reads 'ana' as
 * an oid and fails.  The operators defined over these functions take exactly
 * that case, a regrole or regclass against an untyped literal, and read the
 * literal as PostgreSQL's input function for the type does (a name, quoted
 * or not; a table name through the search path; or a number).  A typed
 * comparison (role = 'ana'::regrole, relid = some_oid) does not match them
 * and keeps PostgreSQL's oid operators and their indexes.  An unknown name is
 * an error, as in the cast 'nobody'::regrole.
 *
 * Layer common/ (docs/development.md): may call the numeric core (core/)
 * and the rest of common/, nothing above.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

/* The OID an untyped literal (a C string) names, read by the type's input function. */
static Oid
DpLiteralOid(Datum literal, PGFunction input)
{
	return DatumGetObjectId(DirectFunctionCall1(input, CStringGetDatum(DatumGetCString(literal))));
}

/*
 * One comparison function: name(stored, literal) or name(literal, stored),
 * the literal at argument literal_arg, read with input, compared with op.
 */
#define DP_LITERAL_COMPARISON(name, input, op, literal_arg) \
PG_FUNCTION_INFO_V1(name); \
Datum \
name(PG_FUNCTION_ARGS) \
{ \
	Oid			stored = PG_GETARG_OID(1 - (literal_arg)); \
	Oid			named = DpLiteralOid(PG_GETARG_DATUM(literal_arg), input); \
\
	PG_RETURN_BOOL(stored op named); \
}

DP_LITERAL_COMPARISON(dp_regrole_eq_literal, regrolein, ==, 1)
DP_LITERAL_COMPARISON(dp_literal_eq_regrole, regrolein, ==, 0)
DP_LITERAL_COMPARISON(dp_regrole_ne_literal, regrolein, !=, 1)
DP_LITERAL_COMPARISON(dp_literal_ne_regrole, regrolein, !=, 0)
DP_LITERAL_COMPARISON(dp_regclass_eq_literal, regclassin, ==, 1)
DP_LITERAL_COMPARISON(dp_literal_eq_regclass, regclassin, ==, 0)
DP_LITERAL_COMPARISON(dp_regclass_ne_literal, regclassin, !=, 1)
DP_LITERAL_COMPARISON(dp_literal_ne_regclass, regclassin, !=, 0)
