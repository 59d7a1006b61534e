/*
 * guard/regex.c — constant regular expressions on protected rows:
 * col ~ 'pattern', ~*, !~, !~* (and SIMILAR TO, whose pattern is a constant
 * once folded), where LIKE is accepted (invariant 4).
 *
 * A regular expression is compiled lazily, on the first row that reaches
 * it, and can fail there (a malformed pattern, one too large for the
 * engine, a nondeterministic collation); matching can fail on memory only
 * where back-references make the engine search (REG_ESPACE).  So a pattern
 * on a protected table must be a constant, at most DP_REGEX_MAX_BYTES long,
 * without back-references, under a superuser's deterministic collation; it
 * is compiled now, while planning, with the operator's flags (ARE, and
 * case-insensitive for ~*), and run once on the empty string, so that
 * whatever fails, fails for every table alike before anything is charged.
 * Without back-references PostgreSQL answers a boolean match with its DFA
 * alone (regexec.c, find(): no submatches are asked), in time linear in the
 * text for a given pattern.  Lookahead and lookbehind constraints are
 * refused too: each is matched again from every position, in time
 * quadratic in the text, so that one long value reached by a CASE branch
 * would be seen in the query's time (and statement_timeout makes time an
 * error).  Bound parameters as patterns are not accepted (a LIKE pattern
 * may be one: its check is simpler).
 *
 * Layer guard/, floor rows (docs/development.md): may call guard/'s floors
 * base, fences, reads and rows, the aggregates, the release path, the ledger,
 * common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "guard/floor_rows.h"

#define DP_REGEX_MAX_BYTES 1000

/* The regular-expression match functions and whether they ignore case. */
static const struct
{
	Oid			fn;
	bool		icase;
}			dp_regex_functions[] = {
	{F_TEXTREGEXEQ, false}, {F_TEXTREGEXNE, false}, {F_TEXTICREGEXEQ, true}, {F_TEXTICREGEXNE, true},
	{F_BPCHARREGEXEQ, false}, {F_BPCHARREGEXNE, false}, {F_BPCHARICREGEXEQ, true}, {F_BPCHARICREGEXNE, true},
	{F_NAMEREGEXEQ, false}, {F_NAMEREGEXNE, false}, {F_NAMEICREGEXEQ, true}, {F_NAMEICREGEXNE, true},
};

/* The index of fn in dp_regex_functions, or -1. */
static int
DpRegexFunctionIndex(Oid fn)
{
	for (int i = 0; i < lengthof(dp_regex_functions); i++)
		if (dp_regex_functions[i].fn == fn)
			return i;
	return -1;
}

/* True if opno is a built-in regular-expression match operator. */
bool
DpIsRegexOperator(Oid opno)
{
	return opno < FirstNormalObjectId && DpRegexFunctionIndex(get_opcode(opno)) >= 0;
}

/* Compile pattern as the operator will (flags, collation): ERROR 42501 if it cannot be, or has back-references. */
static void
DpCheckRegexPattern(const char *pattern, int len, bool icase, Oid coll, const char *where)
{
	pg_wchar   *wide = palloc((len + 1) * sizeof(pg_wchar));
	int			wlen = pg_mb2wchar_with_len(pattern, wide, len);
	regex_t		re;
	int			rc;

	rc = pg_regcomp(&re, wide, wlen, REG_ADVANCED | (icase ? REG_ICASE : 0), coll);
	if (rc != REG_OKAY)
	{
		char		msg[256];

		pg_regerror(rc, &re, msg, sizeof(msg));
		DpGuardRefuse("this regular expression cannot be used on a protected table",
					  psprintf("It does not compile (%s) in %s.", msg, where));
	}
	if (re.re_info & REG_UBACKREF)
	{
		pg_regfree(&re);
		DpGuardRefuse("a regular expression on a protected table may not use back-references",
					  psprintf("Matching them can fail or take exponential time on some values (%s).", where));
	}
	if (re.re_info & REG_ULOOKAROUND)
	{
		pg_regfree(&re);
		DpGuardRefuse("a regular expression on a protected table may not use lookahead or lookbehind",
					  psprintf("Matching them takes time quadratic in a value's length, which one row could make "
							   "long enough to be seen (%s).", where));
	}
	pg_regfree(&re);
	pfree(wide);
}

/*
 * A regular-expression match of the row checks (its operands already
 * checked by shape.c): a constant pattern, compiled now (see above).
 */
Node *
DpRegexRowExpr(OpExpr *op, const char *where)
{
	int			i = DpRegexFunctionIndex(get_opcode(op->opno));
	Node	   *pat = lsecond(op->args);
	Oid			coll = op->inputcollid;
	text	   *t;

	Assert(i >= 0);
	while (IsA(pat, RelabelType))
		pat = (Node *) ((RelabelType *) pat)->arg;
	if (!IsA(pat, Const))
		DpGuardRefuse("a regular expression on a protected table must be a constant",
					  psprintf("Found a pattern that is not a literal in %s; a LIKE pattern may be a bound parameter.",
							   where));
	if (((Const *) pat)->constisnull)
		return (Node *) op;		/* NULL for every row */
	if (OidIsValid(coll) && !get_collation_isdeterministic(coll))
		DpGuardRefuse("a regular expression under a nondeterministic collation is not allowed on a protected table",
					  psprintf("It fails when it is compiled (%s).", where));
	DpCheckCollation(coll, TEXTOID, false, where);
	t = DatumGetTextPP(((Const *) pat)->constvalue);
	if (VARSIZE_ANY_EXHDR(t) > DP_REGEX_MAX_BYTES)
		DpGuardRefuse("a regular expression on a protected table is at most 1000 bytes long",
					  psprintf("Found one of %d bytes in %s.", (int) VARSIZE_ANY_EXHDR(t), where));
	DpCheckRegexPattern(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), dp_regex_functions[i].icase, coll, where);
	/* the operator's own path, once, now: compiled into this backend's cache, or failing for every table */
	(void) DirectFunctionCall2Coll(dp_regex_functions[i].icase ? texticregexeq : textregexeq,
								   coll, CStringGetTextDatum(""), PointerGetDatum(t));
	return (Node *) op;
}
