/*
 * mechanism.h — the dp_mechanism value: a noise family and its parameters.
 *
 * The struct and the parser are plain C (no PostgreSQL header) so the numeric
 * core and its tests can use them; mechanism.c adds the SQL type around them.
 *
 * Text forms (case-insensitive names, blanks allowed, every key required
 * exactly once, values decimal numbers):
 *   privacy forms (usable by the aggregates)
 *     laplace(epsilon=E)              (E, 0)-DP
 *     gaussian(epsilon=E, delta=D)    (E, D)-DP, analytic calibration
 *     gaussian(rho=R)                 R-zCDP
 *     osgt(epsilon=E, delta=D)        (E, D)-DP, variance-optimal sub-Gaussian OSGT
 *     groupwise(rho=R, r=X)           R-zCDP; counts and histograms only: the
 *                                     group-wise relative-error mechanism of
 *                                     seed 001 (Algorithm 1, core/groupwise.c)
 *   an accuracy form (resolved to a privacy form before a release, release/)
 *     accuracy(halfwidth=H, level=L)          the cheapest noise whose closed
 *     accuracy(halfwidth=H, level=L, rows=N)  interval [answer - H, answer + H]
 *                                     holds the truth with probability >= L
 *                                     (dp_avg: for groups of N rows or more)
 *   a local form (dp_pg.randomize only: a column, not a release)
 *     rr(epsilon=E)                   randomized response, E-DP per value
 *   noise forms (inspection functions only)
 *     laplace(scale=B), gaussian(sigma=S), osgt(sigma=S, m=M)
 */
#ifndef DP_MECHANISM_H
#define DP_MECHANISM_H

#include <stdbool.h>
#include <stddef.h>

typedef enum DpMechFamily
{
	DP_MECH_LAPLACE = 1,
	DP_MECH_GAUSSIAN = 2,
	DP_MECH_OSGT = 3,
	DP_MECH_RR = 4,
	DP_MECH_GROUPWISE = 5,
	DP_MECH_ACCURACY = 6
} DpMechFamily;

typedef enum DpMechForm
{
	DP_FORM_EPSILON = 1,		/* laplace(epsilon) */
	DP_FORM_EPSILON_DELTA = 2,	/* gaussian / osgt (epsilon, delta) */
	DP_FORM_RHO = 3,			/* gaussian(rho) */
	DP_FORM_NOISE = 4,			/* laplace(scale), gaussian(sigma), osgt(sigma, m) */
	DP_FORM_LOCAL = 5,			/* rr(epsilon) */
	DP_FORM_GROUPWISE = 6		/* groupwise(rho, r) */
	/* accuracy(halfwidth, level, rows): form holds rows (>= 1), see below */
} DpMechForm;

/*
 * The on-disk and in-memory value of type dp_mechanism (fixed length, 24
 * bytes, double aligned).  p[] by form:
 *   EPSILON: p[0] = epsilon             EPSILON_DELTA: p[0] = epsilon, p[1] = delta
 *   RHO:     p[0] = rho                 NOISE: laplace p[0] = scale; gaussian p[0] = sigma;
 *                                              osgt p[0] = sigma, p[1] = m
 *   LOCAL:   p[0] = epsilon             GROUPWISE: p[0] = rho, p[1] = r
 * The accuracy family has one form, and its form field holds the smallest
 * group that must meet the half-width (rows, 1 .. DP_MAX_ACCURACY_ROWS; 1
 * when not written): p[0] = halfwidth, p[1] = level.  The value stays the
 * 24 bytes of 0.1.0's type.
 */
typedef struct DpMechanism
{
	int			family;			/* DpMechFamily */
	int			form;			/* DpMechForm */
	double		p[2];
} DpMechanism;

/* Parameter limits; outside them a mechanism is rejected. */
#define DP_MAX_EPSILON		100.0
#define DP_MAX_RHO			10000.0
#define DP_MIN_NOISE		1e-300
#define DP_MAX_NOISE		1e15
#define DP_MAX_ACCURACY_ROWS 2147483647
/* rr: the exact dyadic form of epsilon must fit 128 bits (core/rr.c) */
#define DP_RR_MIN_EPSILON	0x1p-60
/* groupwise: the first stage's sigma stays far inside the samplers' range */
#define DP_MIN_GROUPWISE_RHO 1e-12

/* Parse text into *mech; on failure return false with a message in err. */
extern bool dp_mechanism_parse(const char *text, DpMechanism *mech,
							   char *err, size_t errlen);

/* Check a mechanism's parameters; on failure return false with a message. */
extern bool dp_mechanism_validate(const DpMechanism *mech, char *err, size_t errlen);

/* Family name ("laplace", "gaussian", "osgt", "rr", "groupwise", "accuracy"). */
extern const char *dp_mechanism_family_name(int family);

/* Canonical text of a valid mechanism into buf (DP_MECH_TEXT_LEN bytes suffice). */
#define DP_MECH_TEXT_LEN 96
extern void dp_mechanism_format(const DpMechanism *mech, char *buf, size_t buflen);

/* True if the mechanism states privacy parameters of additive noise (laplace, gaussian, osgt). */
extern bool dp_mechanism_is_privacy_form(const DpMechanism *mech);

/* True for groupwise(rho, r). */
extern bool dp_mechanism_is_groupwise(const DpMechanism *mech);

/* True for accuracy(halfwidth, level[, rows]). */
extern bool dp_mechanism_is_accuracy(const DpMechanism *mech);

/* Check a mechanism's parameters and that it states privacy; on failure return false with a message. */
extern bool dp_mechanism_validate_privacy(const DpMechanism *mech, char *err, size_t errlen);

#endif							/* DP_MECHANISM_H */
