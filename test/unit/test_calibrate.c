/*
 * test_calibrate.c — the calibration module (calibrate.h) against the CSV
 * files of test/reference.
 *
 * Every row of every reference file is checked, every numeric column that
 * the module produces, with the tolerances of reference/README.md §10
 * (including the one-sided rules: delta never under-reported, eps and
 * calibrated scales never below the reference).  One TAP line per row;
 * a failing row prints each failing column with its case_id.  The worst
 * margin (error / allowed error) per tolerance class is printed at the end.
 *
 * The reference directory is test/reference (../reference relative to
 * test/unit) unless DP_PG_REFERENCE names another one.
 *
 * Property tests of the same functions live in test_calib_props.c.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "tap.h"

#define MAX_COLS 32
#define MAX_LINE 4096

/* One parsed CSV file: the header and the current row. */
typedef struct Csv
{
	FILE	   *f;
	const char *name;
	int			ncols;
	char		header_buf[MAX_LINE];
	char		row_buf[MAX_LINE];
	char	   *head[MAX_COLS];
	char	   *cell[MAX_COLS];
} Csv;

/* Worst margin seen in one tolerance class. */
typedef struct Worst
{
	const char *name;
	double		margin;
	char		case_id[64];
	int			checks;
	double		low;			/* one-sided classes: min of got/ref - 1 */
	char		low_case[64];
} Worst;

enum
{
	W_DELTA, W_EPS, W_SCALE, W_EXACT, W_VAR, W_RDP, W_CONV, W_ALPHA, W_UNCON,
	W_DDELTA, W_DVAR, W_NCLASS
};

static Worst worst[W_NCLASS] = {
	{"delta profiles (1e-12 abs or 1e-8 rel, one-sided)", 0.0, "", 0, INFINITY, ""},
	{"eps_of_delta (1e-9 rel, one-sided)", 0.0, "", 0, INFINITY, ""},
	{"calibrated sigma/b (1e-9 rel, >= ref(1-1e-12))", 0.0, "", 0, INFINITY, ""},
	{"closed forms (1e-12 rel)", 0.0, "", 0, INFINITY, ""},
	{"OSGT variance (1e-10 rel)", 0.0, "", 0, INFINITY, ""},
	{"RDP values (1e-9 rel / 1e-12 abs)", 0.0, "", 0, INFINITY, ""},
	{"CKS / RDP->DP eps and delta (1e-9 rel)", 0.0, "", 0, INFINITY, ""},
	{"minimising alpha (1e-6 rel)", 0.0, "", 0, INFINITY, ""},
	{"unconstrained optimum variance (1e-6 rel)", 0.0, "", 0, INFINITY, ""},
	{"discrete delta (as profiles)", 0.0, "", 0, INFINITY, ""},
	{"discrete variance (1e-10 rel)", 0.0, "", 0, INFINITY, ""},
};

static const char *cur_case = "";
static bool row_ok;
static char row_cols[512];

/* Split line in place at commas into fields; returns the count. */
static int
split_csv(char *line, char **fields)
{
	int			n = 0;
	char	   *p = line;
	size_t		len = strlen(line);

	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = '\0';
	fields[n++] = p;
	for (; *p; p++)
		if (*p == ',' && n < MAX_COLS)
		{
			*p = '\0';
			fields[n++] = p + 1;
		}
	return n;
}

/* Open dir/name and read its header. */
static bool
csv_open(Csv *c, const char *dir, const char *name)
{
	char		path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	c->name = name;
	c->f = fopen(path, "r");
	if (!c->f || !fgets(c->header_buf, sizeof(c->header_buf), c->f))
	{
		tap_ok(0, "open %s", path);
		return false;
	}
	c->ncols = split_csv(c->header_buf, c->head);
	return true;
}

/* Read the next row; false at end of file. */
static bool
csv_next(Csv *c)
{
	int			n;

	do
	{
		if (!fgets(c->row_buf, sizeof(c->row_buf), c->f))
			return false;
	} while (c->row_buf[0] == '\n' || c->row_buf[0] == '\0');
	n = split_csv(c->row_buf, c->cell);
	if (n != c->ncols)
	{
		tap_ok(0, "%s: row with %d fields, header has %d", c->name, n, c->ncols);
		return csv_next(c);
	}
	return true;
}

/* The text of column col of the current row. */
static const char *
csv_str(const Csv *c, const char *col)
{
	for (int i = 0; i < c->ncols; i++)
		if (strcmp(c->head[i], col) == 0)
			return c->cell[i];
	fprintf(stderr, "no column %s in %s\n", col, c->name);
	exit(2);
}

/* Column col as a number (NAN when empty). */
static double
csv_num(const Csv *c, const char *col)
{
	const char *s = csv_str(c, col);

	return *s ? strtod(s, NULL) : NAN;
}

/* Start checking one row. */
static void
row_begin(const char *case_id)
{
	cur_case = case_id;
	row_ok = true;
	row_cols[0] = '\0';
}

/* Finish a row: one TAP line naming the columns checked. */
static void
row_end(const char *what)
{
	tap_ok(row_ok, "%s %s:%s", cur_case, what, row_cols);
}

/* Record a column check (margin = error/allowed; <= 1 passes). */
static void
record(int cls, const char *col, double got, double ref, double margin, bool ok)
{
	Worst	   *w = &worst[cls];
	size_t		l = strlen(row_cols);

	w->checks++;
	if (isnan(margin) || margin > w->margin || w->checks == 1)
	{
		w->margin = margin;
		snprintf(w->case_id, sizeof(w->case_id), "%s %s", cur_case, col);
	}
	snprintf(row_cols + l, sizeof(row_cols) - l, " %s", col);
	if (!ok)
	{
		row_ok = false;
		tap_diag("FAIL %s %s: got %.17g ref %.17g (margin %.3g)", cur_case, col, got, ref, margin);
	}
}

/* Track how close a one-sided check came to its bound (got/ref - 1, for ref > 0). */
static void
record_low(int cls, const char *col, double got, double ref)
{
	Worst	   *w = &worst[cls];

	if (ref > 0 && got / ref - 1 < w->low)
	{
		w->low = got / ref - 1;
		snprintf(w->low_case, sizeof(w->low_case), "%s %s", cur_case, col);
	}
}

/* Two-sided relative tolerance, or absolute tolerance abs_tol when |ref| < abs_below. */
static void
check_rel(int cls, const char *col, double got, double ref, double rel, double abs_tol,
		  double abs_below)
{
	double		allowed = fabs(ref) < abs_below ? abs_tol : rel * fabs(ref);
	double		err = fabs(got - ref);
	double		margin = allowed > 0 ? err / allowed : (err == 0 ? 0 : INFINITY);

	record(cls, col, got, ref, margin, margin <= 1.0);
}

/* delta: |d - ref| <= 1e-12 or <= 1e-8 ref, and d >= ref(1 - 1e-8) - 1e-15. */
static void
check_delta(int cls, const char *col, double got, double ref)
{
	double		allowed = fmax(1e-12, 1e-8 * fabs(ref));
	double		margin = fabs(got - ref) / allowed;
	bool		ok = margin <= 1.0 && got >= ref * (1.0 - 1e-8) - 1e-15;

	if (!(got >= ref * (1.0 - 1e-8) - 1e-15))
		margin = fmax(margin, 1e9);
	if (ref > 1e-12)			/* below, the absolute rule applies */
		record_low(cls, col, got, ref);
	record(cls, col, got, ref, margin, ok);
}

/* eps_of_delta: relative 1e-9 (absolute 1e-12 below 1e-3), never below ref(1 - 1e-9). */
static void
check_eps(const char *col, double got, double ref)
{
	double		allowed = ref < 1e-3 ? 1e-12 : 1e-9 * ref;
	double		margin = fabs(got - ref) / allowed;
	bool		ok = margin <= 1.0 && got >= ref * (1.0 - 1e-9);

	record_low(W_EPS, col, got, ref);
	record(W_EPS, col, got, ref, margin, ok);
}

/* Calibrated scale: relative 1e-9 and got >= ref(1 - 1e-12). */
static void
check_scale(const char *col, double got, double ref)
{
	double		margin = fabs(got - ref) / (1e-9 * ref);
	bool		ok = margin <= 1.0 && got >= ref * (1.0 - 1e-12);

	record_low(W_SCALE, col, got, ref);
	record(W_SCALE, col, got, ref, margin, ok);
}

/* laplace_profile.csv */
static void
test_laplace_profile(const char *dir)
{
	Csv			c;

	if (!csv_open(&c, dir, "laplace_profile.csv"))
		return;
	while (csv_next(&c))
	{
		double		D = csv_num(&c, "Delta"),
					b = csv_num(&c, "b"),
					eps = csv_num(&c, "eps"),
					delta = csv_num(&c, "delta"),
					dq = csv_num(&c, "delta_quad");

		row_begin(csv_str(&c, "case_id"));
		if (strcmp(csv_str(&c, "query"), "delta_of_eps") == 0)
		{
			check_delta(W_DELTA, "delta", dp_laplace_delta(eps, D, b), delta);
			check_delta(W_DELTA, "delta_quad", dp_laplace_delta(eps, D, b), dq);
		}
		else
		{
			check_eps("eps", dp_laplace_eps(delta, D, b), eps);
			check_delta(W_DELTA, "delta_quad", dp_laplace_delta(eps, D, b), dq);
		}
		row_end("laplace");
	}
	fclose(c.f);
}

/* gaussian_profile.csv */
static void
test_gaussian_profile(const char *dir)
{
	Csv			c;

	if (!csv_open(&c, dir, "gaussian_profile.csv"))
		return;
	while (csv_next(&c))
	{
		double		D = csv_num(&c, "Delta"),
					s = csv_num(&c, "sigma"),
					eps = csv_num(&c, "eps"),
					delta = csv_num(&c, "delta"),
					dq = csv_num(&c, "delta_quad");

		row_begin(csv_str(&c, "case_id"));
		check_rel(W_EXACT, "variance", s * s, csv_num(&c, "variance"), 1e-12, 0, 0);
		if (strcmp(csv_str(&c, "query"), "delta_of_eps") == 0)
		{
			check_delta(W_DELTA, "delta", dp_gauss_delta(eps, D, s), delta);
			check_delta(W_DELTA, "delta_quad", dp_gauss_delta(eps, D, s), dq);
		}
		else
		{
			check_eps("eps", dp_gauss_eps(delta, D, s), eps);
			check_delta(W_DELTA, "delta_quad", dp_gauss_delta(eps, D, s), dq);
		}
		row_end("gaussian");
	}
	fclose(c.f);
}

/* osgt_profile.csv */
static void
test_osgt_profile(const char *dir)
{
	Csv			c;

	if (!csv_open(&c, dir, "osgt_profile.csv"))
		return;
	while (csv_next(&c))
	{
		double		D = csv_num(&c, "Delta"),
					m = csv_num(&c, "m"),
					s = csv_num(&c, "sigma"),
					eps = csv_num(&c, "eps"),
					delta = csv_num(&c, "delta"),
					dq = csv_num(&c, "delta_quad");
		int			fc = atoi(csv_str(&c, "formula_case"));

		row_begin(csv_str(&c, "case_id"));
		check_rel(W_VAR, "variance", dp_osgt_variance(m, s), csv_num(&c, "variance"), 1e-10, 0, 0);
		check_rel(W_EXACT, "eps0", dp_osgt_eps0(D, m, s), csv_num(&c, "eps0"), 1e-12, 0, 0);
		/* at eps = eps0 (to rounding) both cases give the same delta */
		record(W_EXACT, "formula_case", dp_osgt_formula_case(eps, D, m, s), fc, 0,
			   dp_osgt_formula_case(eps, D, m, s) == fc ||
			   fabs(eps - dp_osgt_eps0(D, m, s)) <= 1e-12 * eps);
		if (strcmp(csv_str(&c, "query"), "delta_of_eps") == 0)
		{
			check_delta(W_DELTA, "delta", dp_osgt_delta(eps, D, m, s), delta);
			check_delta(W_DELTA, "delta_quad", dp_osgt_delta(eps, D, m, s), dq);
		}
		else
		{
			check_eps("eps", dp_osgt_eps(delta, D, m, s), eps);
			check_delta(W_DELTA, "delta_quad", dp_osgt_delta(eps, D, m, s), dq);
		}
		row_end("osgt");
	}
	fclose(c.f);
}

/* calibration.csv */
static void
test_calibration(const char *dir)
{
	Csv			c;

	if (!csv_open(&c, dir, "calibration.csv"))
		return;
	while (csv_next(&c))
	{
		const char *method = csv_str(&c, "method");
		double		D = csv_num(&c, "Delta"),
					eps = csv_num(&c, "eps"),
					delta = csv_num(&c, "delta"),
					value = csv_num(&c, "value"),
					ref_m = csv_num(&c, "m"),
					ref_s = csv_num(&c, "sigma"),
					ref_v = csv_num(&c, "variance"),
					ratio = csv_num(&c, "var_ratio_vs_analytic_gauss"),
					achieved = csv_num(&c, "achieved_delta");
		double		sg = dp_gauss_sigma_analytic(D, eps, delta);
		double		vg = sg * sg;

		row_begin(csv_str(&c, "case_id"));
		if (strcmp(method, "laplace_pure") == 0)
		{
			double		b = dp_laplace_scale(D, eps);

			check_rel(W_EXACT, "value", b, value, 1e-12, 0, 0);
			check_rel(W_EXACT, "variance", 2 * b * b, ref_v, 1e-12, 0, 0);
			check_delta(W_DELTA, "achieved_delta", dp_laplace_delta(eps, D, b), achieved);
			check_rel(W_CONV, "var_ratio", 2 * b * b / vg, ratio, 1e-9, 0, 0);
		}
		else if (strcmp(method, "laplace_min_b") == 0)
		{
			double		b = dp_laplace_scale_min(D, eps, delta);

			check_scale("value", b, value);
			check_rel(W_VAR, "variance", 2 * b * b, ref_v, 1e-10, 0, 0);
			check_delta(W_DELTA, "achieved_delta", dp_laplace_delta(eps, D, b), achieved);
			check_rel(W_CONV, "var_ratio", 2 * b * b / vg, ratio, 1e-9, 0, 0);
		}
		else if (strcmp(method, "gauss_classical") == 0)
		{
			double		s = dp_gauss_sigma_classical(D, eps, delta);

			check_rel(W_EXACT, "value", s, value, 1e-12, 0, 0);
			check_rel(W_EXACT, "sigma", s, ref_s, 1e-12, 0, 0);
			check_rel(W_EXACT, "variance", s * s, ref_v, 1e-12, 0, 0);
			check_delta(W_DELTA, "achieved_delta", dp_gauss_delta(eps, D, s), achieved);
			check_rel(W_CONV, "var_ratio", s * s / vg, ratio, 1e-9, 0, 0);
		}
		else if (strcmp(method, "gauss_analytic") == 0)
		{
			double		ach = dp_gauss_delta(eps, D, sg);

			check_scale("value", sg, value);
			check_scale("sigma", sg, ref_s);
			check_rel(W_VAR, "variance", vg, ref_v, 1e-10, 0, 0);
			check_delta(W_DELTA, "achieved_delta", ach, achieved);
			record(W_DELTA, "achieved<=target", ach, delta, ach <= delta ? 0.0 : INFINITY, ach <= delta);
			check_rel(W_CONV, "var_ratio", 1.0, ratio, 1e-9, 0, 0);
		}
		else if (strcmp(method, "osgt_fixed_m") == 0)
		{
			double		s = dp_osgt_sigma_fixed_m(D, eps, delta, ref_m);
			double		v = dp_osgt_variance(ref_m, s);
			double		ach = dp_osgt_delta(eps, D, ref_m, s);

			check_scale("value", s, value);
			check_scale("sigma", s, ref_s);
			check_rel(W_VAR, "variance", v, ref_v, 1e-10, 0, 0);
			check_delta(W_DELTA, "achieved_delta", ach, achieved);
			record(W_DELTA, "achieved<=target", ach, delta, ach <= delta ? 0.0 : INFINITY, ach <= delta);
			check_rel(W_CONV, "var_ratio", v / vg, ratio, 1e-9, 0, 0);
		}
		else if (strcmp(method, "osgt_opt_subgaussian") == 0)
		{
			DpOsgtParams p = dp_osgt_opt_subgaussian(D, eps, delta);
			double		ach = dp_osgt_delta(eps, D, p.m, p.sigma);

			check_scale("value", p.sigma, value);
			check_scale("sigma", p.sigma, ref_s);
			check_rel(W_SCALE, "m", p.m, ref_m, 1e-9, 0, 0);
			check_rel(W_VAR, "variance", p.variance, ref_v, 1e-10, 0, 0);
			check_delta(W_DELTA, "achieved_delta", ach, achieved);
			record(W_DELTA, "achieved<=target", ach, delta, ach <= delta ? 0.0 : INFINITY, ach <= delta);
			record(W_EXACT, "m/sigma<=Q^-1(1/4)", p.m / p.sigma, DP_OSGT_SUBGAUSS_RATIO, 0,
				   p.m <= DP_OSGT_SUBGAUSS_RATIO * p.sigma);
			check_rel(W_CONV, "var_ratio", p.variance / vg, ratio, 1e-9, 0, 0);
		}
		else if (strcmp(method, "osgt_opt_unconstrained") == 0)
		{
			DpOsgtParams p = dp_osgt_opt_unconstrained(D, eps, delta);
			double		ach = dp_osgt_delta(eps, D, p.m, p.sigma);

			check_rel(W_UNCON, "variance", p.variance, ref_v, 1e-6, 0, 0);
			record(W_UNCON, "achieved<=target(1+1e-9)", ach, delta,
				   ach <= delta * (1 + 1e-9) ? 0.0 : INFINITY, ach <= delta * (1 + 1e-9));
			check_rel(W_UNCON, "var_ratio", p.variance / vg, ratio, 1e-6, 0, 0);
		}
		else
			record(W_EXACT, method, 0, 0, INFINITY, false);
		row_end(method);
	}
	fclose(c.f);
}

/* rdp.csv */
static void
test_rdp(const char *dir)
{
	Csv			c;

	if (!csv_open(&c, dir, "rdp.csv"))
		return;
	while (csv_next(&c))
	{
		const char *mech = csv_str(&c, "mechanism");
		double		D = csv_num(&c, "Delta"),
					a = csv_num(&c, "alpha"),
					ref = csv_num(&c, "rdp"),
					refq = csv_num(&c, "rdp_quad"),
					got;

		row_begin(csv_str(&c, "case_id"));
		if (strcmp(mech, "laplace") == 0)
		{
			double		b = csv_num(&c, "b");

			got = dp_laplace_rdp(a, D, b);
			check_rel(W_EXACT, "variance", 2 * b * b, csv_num(&c, "variance"), 1e-12, 0, 0);
		}
		else if (strcmp(mech, "gaussian") == 0)
		{
			double		s = csv_num(&c, "sigma");

			got = dp_gauss_rdp(a, D, s);
			check_rel(W_EXACT, "variance", s * s, csv_num(&c, "variance"), 1e-12, 0, 0);
		}
		else
		{
			double		m = csv_num(&c, "m"),
						s = csv_num(&c, "sigma");
			double		v = dp_osgt_variance(m, s);

			got = dp_osgt_rdp(a, D, m, s);
			check_rel(W_VAR, "variance", v, csv_num(&c, "variance"), 1e-10, 0, 0);
			check_rel(W_RDP, "rdp_zeta_bound", dp_osgt_rdp_zeta_bound(a, D, m, s),
					  csv_num(&c, "rdp_zeta_bound"), 1e-9, 1e-12, 1e-3);
			check_rel(W_RDP, "rdp_gauss_same_variance", dp_gauss_rdp(a, D, sqrt(v)),
					  csv_num(&c, "rdp_gauss_same_variance"), 1e-9, 1e-12, 1e-3);
			check_rel(W_RDP, "Bbar", exp(dp_osgt_rdp_log_bbar(a, D, m, s)),
					  csv_num(&c, "Bbar"), 1e-9, 1e-12, 1e-3);
			record(W_RDP, "rdp<=zeta", got, csv_num(&c, "rdp_zeta_bound"), 0,
				   got <= dp_osgt_rdp_zeta_bound(a, D, m, s) * (1 + 1e-12));
		}
		check_rel(W_RDP, "rdp", got, ref, 1e-9, 1e-12, 1e-3);
		check_rel(W_RDP, "rdp_quad", got, refq, 1e-9, 1e-12, 1e-3);
		record(W_RDP, "rdp>=ref(1-1e-12)", got, ref, 0, got >= ref * (1 - 1e-12));
		row_end(mech);
	}
	fclose(c.f);
}

/* Parse "1.5;2;4" into alphas; returns the count. */
static int
parse_grid(const char *s, double *alphas, int max)
{
	int			n = 0;
	char	   *end;

	while (*s && n < max)
	{
		alphas[n++] = strtod(s, &end);
		s = *end == ';' ? end + 1 : end;
		if (end == s && *s != '\0')
			break;
	}
	return n;
}

/* rdp_conversion.csv */
static void
test_rdp_conversion(const char *dir)
{
	Csv			c;

	if (!csv_open(&c, dir, "rdp_conversion.csv"))
		return;
	while (csv_next(&c))
	{
		const char *mech = csv_str(&c, "mechanism");
		double		D = csv_num(&c, "Delta"),
					b = csv_num(&c, "b"),
					m = csv_num(&c, "m"),
					s = csv_num(&c, "sigma"),
					delta = csv_num(&c, "delta");
		double		alphas[64],
					rdp[64],
					am,
					ai,
					em,
					ei,
					ex;
		int			n = parse_grid(csv_str(&c, "alpha_grid"), alphas, 64);

		row_begin(csv_str(&c, "case_id"));
		for (int i = 0; i < n; i++)
		{
			if (strcmp(mech, "laplace") == 0)
				rdp[i] = dp_laplace_rdp(alphas[i], D, b);
			else if (strcmp(mech, "gaussian") == 0)
				rdp[i] = dp_gauss_rdp(alphas[i], D, s);
			else
				rdp[i] = dp_osgt_rdp(alphas[i], D, m, s);
		}
		if (strcmp(mech, "laplace") == 0)
			ex = dp_laplace_eps(delta, D, b);
		else if (strcmp(mech, "gaussian") == 0)
			ex = dp_gauss_eps(delta, D, s);
		else
			ex = dp_osgt_eps(delta, D, m, s);
		em = dp_rdp_eps_mironov(n, alphas, rdp, delta, &am);
		ei = dp_rdp_eps_improved(n, alphas, rdp, delta, &ai);
		check_rel(W_CONV, "eps_rdp_mironov", em, csv_num(&c, "eps_rdp_mironov"), 1e-9, 0, 0);
		check_rel(W_ALPHA, "alpha_mironov", am, csv_num(&c, "alpha_mironov"), 1e-6, 0, 0);
		check_rel(W_CONV, "eps_rdp_improved", ei, csv_num(&c, "eps_rdp_improved"), 1e-9, 0, 0);
		check_rel(W_ALPHA, "alpha_improved", ai, csv_num(&c, "alpha_improved"), 1e-6, 0, 0);
		check_eps("eps_exact_profile", ex, csv_num(&c, "eps_exact_profile"));
		row_end(mech);
	}
	fclose(c.f);
}

/* zcdp_conversion.csv */
static void
test_zcdp(const char *dir)
{
	Csv			c;

	if (!csv_open(&c, dir, "zcdp_conversion.csv"))
		return;
	while (csv_next(&c))
	{
		double		rho = csv_num(&c, "rho"),
					D = csv_num(&c, "Delta"),
					delta = csv_num(&c, "delta"),
					eps = csv_num(&c, "eps"),
					a;
		double		s = dp_gauss_sigma_zcdp(D, rho);

		row_begin(csv_str(&c, "case_id"));
		check_rel(W_EXACT, "sigma", s, csv_num(&c, "sigma"), 1e-12, 0, 0);
		if (strcmp(csv_str(&c, "query"), "eps_of_delta") == 0)
		{
			check_rel(W_EXACT, "eps_bun_steinke", dp_zcdp_eps_bun_steinke(rho, delta),
					  csv_num(&c, "eps_bun_steinke"), 1e-12, 0, 0);
			check_rel(W_CONV, "eps_cks", dp_zcdp_eps_cks(rho, delta, &a),
					  csv_num(&c, "eps_cks"), 1e-9, 0, 0);
			check_rel(W_ALPHA, "alpha_cks", a, csv_num(&c, "alpha_cks"), 1e-6, 0, 0);
			check_eps("eps_gauss_exact", dp_gauss_eps(delta, D, s), csv_num(&c, "eps_gauss_exact"));
		}
		else
		{
			check_rel(W_CONV, "delta_cks", dp_zcdp_delta_cks(rho, eps, &a),
					  csv_num(&c, "delta_cks"), 1e-9, 0, 0);
			check_rel(W_ALPHA, "alpha_cks", a, csv_num(&c, "alpha_cks"), 1e-6, 0, 0);
			check_delta(W_DELTA, "delta_gauss_exact", dp_gauss_delta(eps, D, s),
						csv_num(&c, "delta_gauss_exact"));
		}
		row_end(csv_str(&c, "query"));
	}
	fclose(c.f);
}

/* discrete_profile.csv */
static void
test_discrete(const char *dir)
{
	Csv			c;

	if (!csv_open(&c, dir, "discrete_profile.csv"))
		return;
	while (csv_next(&c))
	{
		const char *mech = csv_str(&c, "mechanism");
		double		D = csv_num(&c, "Delta"),
					eps = csv_num(&c, "eps"),
					ref = csv_num(&c, "delta"),
					refc = csv_num(&c, "delta_continuous_same_params"),
					refv = csv_num(&c, "variance");
		int64_t		Di = (int64_t) D;

		row_begin(csv_str(&c, "case_id"));
		if (strcmp(mech, "dlaplace") == 0)
		{
			double		t = csv_num(&c, "t");

			check_delta(W_DDELTA, "delta", dp_discrete_laplace_delta(eps, Di, t), ref);
			check_delta(W_DELTA, "delta_continuous", dp_laplace_delta(eps, D, t), refc);
			check_rel(W_DVAR, "variance", dp_discrete_laplace_variance(t), refv, 1e-10, 0, 0);
		}
		else if (strcmp(mech, "dgauss") == 0)
		{
			double		s = csv_num(&c, "sigma");

			check_delta(W_DDELTA, "delta", dp_discrete_gauss_delta(eps, Di, s * s), ref);
			check_delta(W_DELTA, "delta_continuous", dp_gauss_delta(eps, D, s), refc);
			check_rel(W_DVAR, "variance", dp_discrete_gauss_variance(s * s), refv, 1e-10, 0, 0);
		}
		else
		{
			double		s = csv_num(&c, "sigma"),
						m = csv_num(&c, "m");

			check_delta(W_DDELTA, "delta", dp_discrete_osgt_delta(eps, Di, m, s * s), ref);
			check_delta(W_DELTA, "delta_continuous", dp_osgt_delta(eps, D, m, s), refc);
			check_rel(W_DVAR, "variance", dp_discrete_osgt_variance(m, s * s), refv, 1e-10, 0, 0);
		}
		row_end(mech);
	}
	fclose(c.f);
}

/* Check every reference file; print the worst margins. */
int
main(void)
{
	const char *dir = getenv("DP_PG_REFERENCE");

	if (!dir || !*dir)
		dir = "../reference";
	tap_diag("reference directory: %s", dir);

	test_laplace_profile(dir);
	test_gaussian_profile(dir);
	test_osgt_profile(dir);
	test_calibration(dir);
	test_rdp(dir);
	test_rdp_conversion(dir);
	test_zcdp(dir);
	test_discrete(dir);

	tap_diag("worst margins (error / allowed; one-sided violations count as failures):");
	for (int i = 0; i < W_NCLASS; i++)
	{
		tap_diag("  %-52s %5d checks, worst %.3g at %s", worst[i].name, worst[i].checks,
				 worst[i].margin, worst[i].case_id);
		if (isfinite(worst[i].low))
			tap_diag("  %-52s closest to the one-sided bound: got/ref - 1 = %.3g at %s",
					 "", worst[i].low, worst[i].low_case);
	}
	return tap_done();
}
