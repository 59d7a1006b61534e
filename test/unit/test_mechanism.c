/*
 * test_mechanism.c — the dp_mechanism parser, validator and formatter.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mechanism.h"
#include "tap.h"

/* Parse text; expect success with the given family/form/params. */
static void
expect_ok(const char *text, int family, int form, double p0, double p1)
{
	DpMechanism m;
	char		err[256] = "";
	int			ok = dp_mechanism_parse(text, &m, err, sizeof(err));

	tap_ok(ok && m.family == family && m.form == form && m.p[0] == p0 && m.p[1] == p1,
		   "parses \"%s\"%s%s", text, ok ? "" : ": ", ok ? "" : err);
}

/* Parse text; expect failure with a message containing want. */
static void
expect_err(const char *text, const char *want)
{
	DpMechanism m;
	char		err[256] = "";
	int			ok = dp_mechanism_parse(text, &m, err, sizeof(err));

	tap_ok(!ok && strstr(err, want) != NULL, "rejects \"%s\" (%s)", text, err);
}

/* xorshift for the fuzz loop (test-only determinism). */
static uint64_t
next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int
main(void)
{
	char		buf[DP_MECH_TEXT_LEN];
	uint64_t	seed = 0x9e3779b97f4a7c15ULL;
	int			fuzz_ok = 1;
	int			roundtrip_ok = 1;

	expect_ok("laplace(epsilon=1)", DP_MECH_LAPLACE, DP_FORM_EPSILON, 1.0, 0.0);
	expect_ok("  Laplace ( EPSILON = .5 ) ", DP_MECH_LAPLACE, DP_FORM_EPSILON, 0.5, 0.0);
	expect_ok("gaussian(epsilon=0.5, delta=1e-7)", DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA, 0.5, 1e-7);
	expect_ok("gaussian(delta=1e-7,epsilon=0.5)", DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA, 0.5, 1e-7);
	expect_ok("gaussian(rho=0.125)", DP_MECH_GAUSSIAN, DP_FORM_RHO, 0.125, 0.0);
	expect_ok("osgt(epsilon=1, delta=1e-8)", DP_MECH_OSGT, DP_FORM_EPSILON_DELTA, 1.0, 1e-8);
	expect_ok("laplace(scale=2)", DP_MECH_LAPLACE, DP_FORM_NOISE, 2.0, 0.0);
	expect_ok("gaussian(sigma=3.5)", DP_MECH_GAUSSIAN, DP_FORM_NOISE, 3.5, 0.0);
	expect_ok("osgt(m=3, sigma=6)", DP_MECH_OSGT, DP_FORM_NOISE, 6.0, 3.0);
	expect_ok("osgt(sigma=6, m=0)", DP_MECH_OSGT, DP_FORM_NOISE, 6.0, 0.0);
	expect_ok("laplace(epsilon=100)", DP_MECH_LAPLACE, DP_FORM_EPSILON, 100.0, 0.0);

	expect_err("", "mechanism name");
	expect_err("cauchy(epsilon=1)", "unknown mechanism \"cauchy\"");
	expect_err("laplace", "expected \"(\"");
	expect_err("laplace()", "parameter name");
	expect_err("laplace(epsilon)", "expected \"=\"");
	expect_err("laplace(epsilon=)", "not a decimal number");
	expect_err("laplace(epsilon=nan)", "not a decimal number");
	expect_err("laplace(epsilon=inf)", "not a decimal number");
	expect_err("laplace(epsilon=0x10)", "expected \",\" or \")\"");
	expect_err("laplace(epsilon=1e)", "not a decimal number");
	expect_err("laplace(epsilon=1) junk", "unexpected text");
	expect_err("laplace(epsilon=1, epsilon=1)", "more than once");
	expect_err("laplace(epsilon=1, delta=0.1)", "wrong parameters for laplace");
	expect_err("gaussian(epsilon=1)", "wrong parameters for gaussian");
	expect_err("osgt(rho=1)", "wrong parameters for osgt");
	expect_err("laplace(epsilon=0)", "epsilon must be");
	expect_err("laplace(epsilon=-0)", "epsilon must be");
	expect_err("laplace(epsilon=1e999)", "got inf");
	expect_err("laplace(epsilon=100.000001)", "at most 100");
	expect_err("gaussian(epsilon=1, delta=1)", "delta must be");
	expect_err("gaussian(epsilon=1, delta=0)", "delta must be");
	expect_err("gaussian(rho=0)", "rho must be");
	expect_err("osgt(sigma=1, m=-1)", "m must be");
	expect_err("laplace(scale=0)", "scale must be");

	/* Validation rejects what parsing would: NaN, Inf, bad form combinations. */
	{
		DpMechanism m = {DP_MECH_LAPLACE, DP_FORM_EPSILON, {NAN, 0}};
		char		err[256];

		tap_ok(!dp_mechanism_validate(&m, err, sizeof(err)), "validate rejects NaN epsilon");
		m.p[0] = INFINITY;
		tap_ok(!dp_mechanism_validate(&m, err, sizeof(err)), "validate rejects Inf epsilon");
		m.p[0] = 1;
		m.form = DP_FORM_RHO;
		tap_ok(!dp_mechanism_validate(&m, err, sizeof(err)), "validate rejects laplace with rho");
		m.family = 7;
		tap_ok(!dp_mechanism_validate(&m, err, sizeof(err)), "validate rejects unknown family");
		m = (DpMechanism) {DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA, {1, NAN}};
		tap_ok(!dp_mechanism_validate(&m, err, sizeof(err)), "validate rejects NaN delta");
	}

	/* Formatting reads back as the identical value, for many random doubles. */
	for (int i = 0; i < 20000; i++)
	{
		DpMechanism m = {DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA, {0, 0}};
		DpMechanism back;
		char		err[256];

		m.p[0] = ldexp((double) (next_rand(&seed) >> 11) + 1.0, -53) * 99.0 + 1e-9;
		m.p[1] = ldexp((double) (next_rand(&seed) >> 11) + 1.0, -53) * 0.999;
		dp_mechanism_format(&m, buf, sizeof(buf));
		if (!dp_mechanism_parse(buf, &back, err, sizeof(err)) ||
			back.p[0] != m.p[0] || back.p[1] != m.p[1] || back.form != m.form)
		{
			roundtrip_ok = 0;
			tap_diag("round trip failed for %s: %s", buf, err);
			break;
		}
	}
	tap_ok(roundtrip_ok, "format/parse round trip of 20000 random mechanisms");

	/* Random byte strings never crash the parser and always get a message. */
	for (int i = 0; i < 200000; i++)
	{
		static const char alphabet[] = "laplcegusiosgtrhomdx()=,.+-eE0123456789 \t";
		char		text[48];
		int			len = (int) (next_rand(&seed) % 40);
		DpMechanism m;
		char		err[256] = "";

		for (int j = 0; j < len; j++)
			text[j] = alphabet[next_rand(&seed) % (sizeof(alphabet) - 1)];
		text[len] = '\0';
		if (!dp_mechanism_parse(text, &m, err, sizeof(err)) && err[0] == '\0')
			fuzz_ok = 0;
		else if (dp_mechanism_parse(text, &m, err, sizeof(err)) &&
				 !dp_mechanism_validate(&m, err, sizeof(err)))
			fuzz_ok = 0;
	}
	tap_ok(fuzz_ok, "200000 random strings: every rejection has a message, every acceptance validates");

	dp_mechanism_format(&(DpMechanism) {DP_MECH_OSGT, DP_FORM_NOISE, {6.324555320336759, 3}}, buf, sizeof(buf));
	tap_ok(strcmp(buf, "osgt(sigma=6.324555320336759, m=3)") == 0, "format osgt noise form: %s", buf);
	dp_mechanism_format(&(DpMechanism) {DP_MECH_GAUSSIAN, DP_FORM_EPSILON_DELTA, {0.1, 1e-7}}, buf, sizeof(buf));
	tap_ok(strcmp(buf, "gaussian(epsilon=0.1, delta=1e-07)") == 0, "format gaussian: %s", buf);

	return tap_done();
}
