/*
 * mechanism.c — parsing, validation and formatting of dp_mechanism values.
 *
 * Plain C (no PostgreSQL header): the SQL type in mechanism_type.c and the
 * GUC check hook both call in here, and so can the unit tests.  Every error
 * message names the offending text or value, since the caller turns it into
 * an ERROR with SQLSTATE 22023.
 *
 * Grammar:  family '(' key '=' number { ',' key '=' number } ')'
 * with blanks anywhere between tokens, names case-insensitive, numbers in
 * plain decimal notation (no hex floats, no nan/inf spellings).
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include "mechanism.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DP_MECH_MAX_KEYS 3
#define DP_MECH_TOKEN_LEN 64

/* One key=value pair as written. */
typedef struct DpMechArg
{
	char		key[DP_MECH_TOKEN_LEN];
	char		text[DP_MECH_TOKEN_LEN];
	double		value;
} DpMechArg;

static void format_double(double v, char *buf, size_t buflen);

/* Names of the families, indexed by DpMechFamily. */
static const char *const family_names[] = {NULL, "laplace", "gaussian", "osgt", "rr", "groupwise", "accuracy"};

#define DP_MECH_NAMES "laplace, gaussian, osgt, groupwise, accuracy or rr"

/* The family's name, or "unknown". */
const char *
dp_mechanism_family_name(int family)
{
	if (family >= DP_MECH_LAPLACE && family <= DP_MECH_ACCURACY)
		return family_names[family];
	return "unknown";
}

/* True for the privacy forms of additive noise (laplace, gaussian, osgt). */
bool
dp_mechanism_is_privacy_form(const DpMechanism *mech)
{
	return mech->family >= DP_MECH_LAPLACE && mech->family <= DP_MECH_OSGT &&
		(mech->form == DP_FORM_EPSILON ||
		 mech->form == DP_FORM_EPSILON_DELTA ||
		 mech->form == DP_FORM_RHO);
}

/* True for groupwise(rho, r). */
bool
dp_mechanism_is_groupwise(const DpMechanism *mech)
{
	return mech->family == DP_MECH_GROUPWISE && mech->form == DP_FORM_GROUPWISE;
}

/* True for accuracy(halfwidth, level[, rows]). */
bool
dp_mechanism_is_accuracy(const DpMechanism *mech)
{
	return mech->family == DP_MECH_ACCURACY;
}

/* Check a mechanism's parameters and that it states privacy (epsilon, delta or rho). */
bool
dp_mechanism_validate_privacy(const DpMechanism *mech, char *err, size_t errlen)
{
	if (!dp_mechanism_validate(mech, err, errlen))
		return false;
	if (mech->family == DP_MECH_RR)
	{
		snprintf(err, errlen, "rr(epsilon=..) declares a locally private column (dp_pg.randomize); "
				 "a release takes laplace, gaussian, osgt, groupwise or accuracy");
		return false;
	}
	if (mech->family == DP_MECH_GROUPWISE)
	{
		snprintf(err, errlen, "groupwise(rho=.., r=..) releases counts and histograms only (dp_count, dp_histogram with bins)");
		return false;
	}
	if (mech->family == DP_MECH_ACCURACY)
	{
		snprintf(err, errlen, "accuracy(halfwidth=.., level=..) is resolved by the aggregates that release with error bars "
				 "(dp_count, dp_sum, dp_avg, dp_histogram with bins); state epsilon (and delta) or rho here");
		return false;
	}
	if (!dp_mechanism_is_privacy_form(mech))
	{
		snprintf(err, errlen, "noise-parameter mechanisms are for inspection only; state epsilon (and delta) or rho");
		return false;
	}
	return true;
}

/* Skip blanks. */
static const char *
skip_blanks(const char *s)
{
	while (*s && isspace((unsigned char) *s))
		s++;
	return s;
}

/* Read an identifier [A-Za-z_][A-Za-z0-9_]* into buf (lower-cased). */
static const char *
read_ident(const char *s, char *buf, size_t buflen)
{
	size_t		n = 0;

	if (!(isalpha((unsigned char) *s) || *s == '_'))
		return NULL;
	while (isalnum((unsigned char) *s) || *s == '_')
	{
		if (n + 1 >= buflen)
			return NULL;
		buf[n++] = (char) tolower((unsigned char) *s);
		s++;
	}
	buf[n] = '\0';
	return s;
}

/*
 * Read a plain decimal number [+-]digits[.digits][(e|E)[+-]digits] (at least
 * one digit in the mantissa) into buf; returns the end or NULL.
 */
static const char *
read_number(const char *s, char *buf, size_t buflen)
{
	const char *start = s;
	int			digits = 0;
	size_t		n;

	if (*s == '+' || *s == '-')
		s++;
	while (isdigit((unsigned char) *s))
		s++, digits++;
	if (*s == '.')
	{
		s++;
		while (isdigit((unsigned char) *s))
			s++, digits++;
	}
	if (digits == 0)
		return NULL;
	if (*s == 'e' || *s == 'E')
	{
		const char *e = s + 1;
		int			edigits = 0;

		if (*e == '+' || *e == '-')
			e++;
		while (isdigit((unsigned char) *e))
			e++, edigits++;
		if (edigits == 0)
			return NULL;
		s = e;
	}
	n = (size_t) (s - start);
	if (n + 1 >= buflen)
		return NULL;
	memcpy(buf, start, n);
	buf[n] = '\0';
	return s;
}

/* Copy at most the first 40 characters of s for an error message. */
static void
excerpt(const char *s, char *buf, size_t buflen)
{
	size_t		n = strlen(s);

	if (n > 40)
		snprintf(buf, buflen, "%.40s...", s);
	else
		snprintf(buf, buflen, "%s", s);
}

/* Copy the token starting at s (up to a blank, comma or parenthesis) for an error message. */
static void
excerpt_token(const char *s, char *buf, size_t buflen)
{
	size_t		n = strcspn(s, " \t\r\n,()");

	if (n == 0)
		n = strcspn(s, " \t\r\n,");
	if (n > 40)
		snprintf(buf, buflen, "%.40s...", s);
	else
		snprintf(buf, buflen, "%.*s", (int) n, s);
}

/* Find the argument named key among args; NULL if absent. */
static const DpMechArg *
find_arg(const DpMechArg *args, int nargs, const char *key)
{
	for (int i = 0; i < nargs; i++)
		if (strcmp(args[i].key, key) == 0)
			return &args[i];
	return NULL;
}

/* Parse text into *mech; on failure return false with a message in err. */
bool
dp_mechanism_parse(const char *text, DpMechanism *mech, char *err, size_t errlen)
{
	char		family[DP_MECH_TOKEN_LEN];
	char		where[64];
	DpMechArg	args[DP_MECH_MAX_KEYS];
	int			nargs = 0;
	const char *s = skip_blanks(text);
	int			fam;

	memset(mech, 0, sizeof(*mech));
	s = read_ident(s, family, sizeof(family));
	if (s == NULL)
	{
		excerpt(text, where, sizeof(where));
		snprintf(err, errlen, "expected a mechanism name (" DP_MECH_NAMES ") at the start of \"%s\"", where);
		return false;
	}
	if (strcmp(family, "laplace") == 0)
		fam = DP_MECH_LAPLACE;
	else if (strcmp(family, "gaussian") == 0)
		fam = DP_MECH_GAUSSIAN;
	else if (strcmp(family, "osgt") == 0)
		fam = DP_MECH_OSGT;
	else if (strcmp(family, "rr") == 0)
		fam = DP_MECH_RR;
	else if (strcmp(family, "groupwise") == 0)
		fam = DP_MECH_GROUPWISE;
	else if (strcmp(family, "accuracy") == 0)
		fam = DP_MECH_ACCURACY;
	else
	{
		snprintf(err, errlen, "unknown mechanism \"%s\"; expected " DP_MECH_NAMES, family);
		return false;
	}
	s = skip_blanks(s);
	if (*s != '(')
	{
		snprintf(err, errlen, "expected \"(\" after \"%s\"", family);
		return false;
	}
	s = skip_blanks(s + 1);
	for (;;)
	{
		DpMechArg  *a;
		const char *t;
		char	   *end;

		if (nargs == DP_MECH_MAX_KEYS)
		{
			snprintf(err, errlen, "too many parameters for %s", family);
			return false;
		}
		a = &args[nargs];
		t = read_ident(s, a->key, sizeof(a->key));
		if (t == NULL)
		{
			excerpt(s, where, sizeof(where));
			snprintf(err, errlen, "expected a parameter name at \"%s\"", where);
			return false;
		}
		if (find_arg(args, nargs, a->key) != NULL)
		{
			snprintf(err, errlen, "parameter \"%s\" is given more than once", a->key);
			return false;
		}
		s = skip_blanks(t);
		if (*s != '=')
		{
			snprintf(err, errlen, "expected \"=\" after parameter \"%s\"", a->key);
			return false;
		}
		s = skip_blanks(s + 1);
		t = read_number(s, a->text, sizeof(a->text));
		if (t == NULL)
		{
			excerpt_token(s, where, sizeof(where));
			snprintf(err, errlen, "invalid value for parameter \"%s\": \"%s\" is not a decimal number", a->key, where);
			return false;
		}
		a->value = strtod(a->text, &end);
		if (*end != '\0')
		{
			snprintf(err, errlen, "invalid value for parameter \"%s\": \"%s\"", a->key, a->text);
			return false;
		}
		nargs++;
		s = skip_blanks(t);
		if (*s == ',')
		{
			s = skip_blanks(s + 1);
			continue;
		}
		if (*s == ')')
			break;
		excerpt(s, where, sizeof(where));
		snprintf(err, errlen, "expected \",\" or \")\" at \"%s\"", where);
		return false;
	}
	s = skip_blanks(s + 1);
	if (*s != '\0')
	{
		excerpt(s, where, sizeof(where));
		snprintf(err, errlen, "unexpected text \"%s\" after the mechanism", where);
		return false;
	}

	/* Match the set of keys against the forms of this family. */
	mech->family = fam;
	{
		const DpMechArg *eps = find_arg(args, nargs, "epsilon");
		const DpMechArg *delta = find_arg(args, nargs, "delta");
		const DpMechArg *rho = find_arg(args, nargs, "rho");
		const DpMechArg *scale = find_arg(args, nargs, "scale");
		const DpMechArg *sigma = find_arg(args, nargs, "sigma");
		const DpMechArg *m = find_arg(args, nargs, "m");
		const DpMechArg *r = find_arg(args, nargs, "r");
		const DpMechArg *halfwidth = find_arg(args, nargs, "halfwidth");
		const DpMechArg *level = find_arg(args, nargs, "level");
		const DpMechArg *rows = find_arg(args, nargs, "rows");

		if (nargs == 3 && fam != DP_MECH_ACCURACY)
		{
			snprintf(err, errlen, "too many parameters for %s", family);
			return false;
		}
		if (fam == DP_MECH_RR && nargs == 1 && eps)
		{
			mech->form = DP_FORM_LOCAL;
			mech->p[0] = eps->value;
		}
		else if (fam == DP_MECH_GROUPWISE && nargs == 2 && rho && r)
		{
			mech->form = DP_FORM_GROUPWISE;
			mech->p[0] = rho->value;
			mech->p[1] = r->value;
		}
		else if (fam == DP_MECH_ACCURACY && halfwidth && level && nargs == (rows ? 3 : 2))
		{
			mech->p[0] = halfwidth->value;
			mech->p[1] = level->value;
			mech->form = 1;
			if (rows)
			{
				if (!(rows->value >= 1.0 && rows->value <= (double) DP_MAX_ACCURACY_ROWS &&
					  rows->value == floor(rows->value)))
				{
					snprintf(err, errlen, "rows must be a whole number between 1 and %d, got %s",
							 DP_MAX_ACCURACY_ROWS, rows->text);
					return false;
				}
				mech->form = (int) rows->value;
			}
		}
		else if (fam == DP_MECH_LAPLACE && nargs == 1 && eps)
		{
			mech->form = DP_FORM_EPSILON;
			mech->p[0] = eps->value;
		}
		else if (fam == DP_MECH_LAPLACE && nargs == 1 && scale)
		{
			mech->form = DP_FORM_NOISE;
			mech->p[0] = scale->value;
		}
		else if (fam != DP_MECH_LAPLACE && nargs == 2 && eps && delta)
		{
			mech->form = DP_FORM_EPSILON_DELTA;
			mech->p[0] = eps->value;
			mech->p[1] = delta->value;
		}
		else if (fam == DP_MECH_GAUSSIAN && nargs == 1 && rho)
		{
			mech->form = DP_FORM_RHO;
			mech->p[0] = rho->value;
		}
		else if (fam == DP_MECH_GAUSSIAN && nargs == 1 && sigma)
		{
			mech->form = DP_FORM_NOISE;
			mech->p[0] = sigma->value;
		}
		else if (fam == DP_MECH_OSGT && nargs == 2 && sigma && m)
		{
			mech->form = DP_FORM_NOISE;
			mech->p[0] = sigma->value;
			mech->p[1] = m->value;
		}
		else
		{
			static const char *const usage[] = {
				NULL,
				"laplace(epsilon=E) or laplace(scale=B)",
				"gaussian(epsilon=E, delta=D), gaussian(rho=R) or gaussian(sigma=S)",
				"osgt(epsilon=E, delta=D) or osgt(sigma=S, m=M)",
				"rr(epsilon=E)",
				"groupwise(rho=R, r=X)",
				"accuracy(halfwidth=H, level=L) or accuracy(halfwidth=H, level=L, rows=N)"
			};

			snprintf(err, errlen, "wrong parameters for %s; expected %s", family, usage[fam]);
			return false;
		}
	}
	return dp_mechanism_validate(mech, err, errlen);
}

/* Check that v is finite and in (lo, hi] (or [lo, hi] when lo_inclusive). */
static bool
check_range(const char *name, double v, double lo, bool lo_inclusive, double hi,
			char *err, size_t errlen)
{
	if (isnan(v) || isinf(v) || v < lo || (v == lo && !lo_inclusive) || v > hi)
	{
		char		got[32];

		format_double(v, got, sizeof(got));
		snprintf(err, errlen, "%s must be a finite number %s %g and at most %g, got %s",
				 name, lo_inclusive ? "at least" : "greater than", lo, hi, got);
		return false;
	}
	return true;
}

/* Check a mechanism's parameters; on failure return false with a message. */
bool
dp_mechanism_validate(const DpMechanism *mech, char *err, size_t errlen)
{
	if (mech->family == DP_MECH_ACCURACY)
	{
		if (mech->form < 1 || mech->form > DP_MAX_ACCURACY_ROWS)
			snprintf(err, errlen, "corrupt dp_mechanism value (family %d, form %d)", mech->family, mech->form);
		else if (!check_range("halfwidth", mech->p[0], 0.0, false, DP_MAX_NOISE, err, errlen))
			return false;
		else if (isnan(mech->p[1]) || !(mech->p[1] > 0.0 && mech->p[1] < 1.0))
		{
			char		got[32];

			format_double(mech->p[1], got, sizeof(got));
			snprintf(err, errlen, "level must be a number greater than 0 and less than 1, got %s", got);
		}
		else
			return true;
		return false;
	}
	switch (mech->form)
	{
		case DP_FORM_EPSILON:
			if (mech->family != DP_MECH_LAPLACE)
				break;
			return check_range("epsilon", mech->p[0], 0.0, false, DP_MAX_EPSILON, err, errlen);
		case DP_FORM_EPSILON_DELTA:
			if (mech->family != DP_MECH_GAUSSIAN && mech->family != DP_MECH_OSGT)
				break;
			if (!check_range("epsilon", mech->p[0], 0.0, false, DP_MAX_EPSILON, err, errlen))
				return false;
			if (isnan(mech->p[1]) || !(mech->p[1] > 0.0 && mech->p[1] < 1.0))
			{
				char		got[32];

				format_double(mech->p[1], got, sizeof(got));
				snprintf(err, errlen, "delta must be a number greater than 0 and less than 1, got %s", got);
				return false;
			}
			return true;
		case DP_FORM_RHO:
			if (mech->family != DP_MECH_GAUSSIAN)
				break;
			return check_range("rho", mech->p[0], 0.0, false, DP_MAX_RHO, err, errlen);
		case DP_FORM_LOCAL:
			if (mech->family != DP_MECH_RR)
				break;
			return check_range("epsilon", mech->p[0], DP_RR_MIN_EPSILON, true, DP_MAX_EPSILON, err, errlen);
		case DP_FORM_GROUPWISE:
			if (mech->family != DP_MECH_GROUPWISE)
				break;
			return check_range("rho", mech->p[0], DP_MIN_GROUPWISE_RHO, true, DP_MAX_RHO, err, errlen) &&
				check_range("r", mech->p[1], 0.0, false, 1.0, err, errlen);
		case DP_FORM_NOISE:
			if (mech->family == DP_MECH_LAPLACE)
				return check_range("scale", mech->p[0], DP_MIN_NOISE, true, DP_MAX_NOISE, err, errlen);
			if (mech->family == DP_MECH_GAUSSIAN)
				return check_range("sigma", mech->p[0], DP_MIN_NOISE, true, DP_MAX_NOISE, err, errlen);
			if (mech->family == DP_MECH_OSGT)
				return check_range("sigma", mech->p[0], DP_MIN_NOISE, true, DP_MAX_NOISE, err, errlen) &&
					check_range("m", mech->p[1], 0.0, true, DP_MAX_NOISE, err, errlen);
			break;
	}
	snprintf(err, errlen, "corrupt dp_mechanism value (family %d, form %d)", mech->family, mech->form);
	return false;
}

/* Shortest decimal text that reads back as exactly v. */
static void
format_double(double v, char *buf, size_t buflen)
{
	for (int prec = 1; prec <= 17; prec++)
	{
		snprintf(buf, buflen, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* Canonical text of a (valid) mechanism into buf. */
void
dp_mechanism_format(const DpMechanism *mech, char *buf, size_t buflen)
{
	char		a[32];
	char		b[32];
	const char *fam = dp_mechanism_family_name(mech->family);

	format_double(mech->p[0], a, sizeof(a));
	format_double(mech->p[1], b, sizeof(b));
	if (mech->family == DP_MECH_ACCURACY)
	{
		if (mech->form > 1)
			snprintf(buf, buflen, "%s(halfwidth=%s, level=%s, rows=%d)", fam, a, b, mech->form);
		else
			snprintf(buf, buflen, "%s(halfwidth=%s, level=%s)", fam, a, b);
		return;
	}
	switch (mech->form)
	{
		case DP_FORM_EPSILON:
		case DP_FORM_LOCAL:
			snprintf(buf, buflen, "%s(epsilon=%s)", fam, a);
			break;
		case DP_FORM_GROUPWISE:
			snprintf(buf, buflen, "%s(rho=%s, r=%s)", fam, a, b);
			break;
		case DP_FORM_EPSILON_DELTA:
			snprintf(buf, buflen, "%s(epsilon=%s, delta=%s)", fam, a, b);
			break;
		case DP_FORM_RHO:
			snprintf(buf, buflen, "%s(rho=%s)", fam, a);
			break;
		case DP_FORM_NOISE:
			if (mech->family == DP_MECH_LAPLACE)
				snprintf(buf, buflen, "%s(scale=%s)", fam, a);
			else if (mech->family == DP_MECH_GAUSSIAN)
				snprintf(buf, buflen, "%s(sigma=%s)", fam, a);
			else
				snprintf(buf, buflen, "%s(sigma=%s, m=%s)", fam, a, b);
			break;
		default:
			snprintf(buf, buflen, "invalid");
	}
}
