/*
 * tap.h — minimal TAP output for dp_pg's plain-C tests (unit, stat).
 *
 * Each test program prints "ok N - name" / "not ok N - name" lines, then the
 * plan "1..N" and exits non-zero if anything failed, so prove(1) runs them.
 */
#ifndef DP_TAP_H
#define DP_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int	tap_count;
static int	tap_failed;

/* Record one test result; returns cond. */
static inline int
tap_ok(int cond, const char *fmt,...)
{
	va_list		ap;

	tap_count++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

/* Print a diagnostic line (ignored by prove). */
static inline void
tap_diag(const char *fmt,...)
{
	va_list		ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Print the plan and return the process exit status. */
static inline int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	if (tap_failed)
		printf("# %d of %d tests failed\n", tap_failed, tap_count);
	return tap_failed ? 1 : 0;
}

#endif							/* DP_TAP_H */
