#!/usr/bin/env bash
# test/sanitize.sh — dp_pg's suites once with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc's -fsanitize=address,undefined, every
# report fatal): the server is the newest PostgreSQL of Debian unstable built
# with them (test/newpg.sh with DP_NEWPG_SANITIZE=1, cached in
# /var/tmp/dp_pg-newpg/pg-X.Y-san), dp_pg's test build and the plain-C
# suites are compiled with them too.  (Preloading the runtimes into Debian's
# own server instead deadlocks at its start.)  Leak detection is off:
# PostgreSQL frees by memory context, not by free().  Passes when the suites
# pass and no sanitizer wrote a report (log files, printed if any).
#
#   bash test/sanitize.sh
#
# Uses its own private server copy (DP_TEST_PGROOT default
# /var/tmp/dp_pg-test-san) and ports 55800-55899.  The fuzz suite is left
# out (DP_TEST_FUZZ=1 adds it).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

REPORTS=$(mktemp -d /tmp/dp_pg-sanitize.XXXXXX)
chmod 1777 "$REPORTS"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$REPORTS/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$REPORTS/ubsan"

newbin=$(DP_NEWPG_SANITIZE=1 bash "$ROOT/test/newpg.sh" | tail -1)
[ -x "$newbin/pg_config" ] || { echo "sanitize: no sanitized server" >&2; exit 1; }

export DP_PGBIN=$newbin
export DP_SANITIZE=1
export DP_TEST_PGROOT=${DP_TEST_PGROOT:-/var/tmp/dp_pg-test-san}
export DP_TEST_NEWPG=0
export DP_PORT=${DP_PORT:-55800}
export DP_TEST_FUZZ=${DP_TEST_FUZZ:-0}
# the plain-C suites (test/unit, test/stat) take CFLAGS from the environment
export CFLAGS="-O1 -g -Wall -Wextra -Werror -std=gnu11 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

# their binaries are rebuilt with the sanitizers, and again without afterwards
make -s -C "$ROOT/test/unit" clean; make -s -C "$ROOT/test/stat" clean
bash "$ROOT/test/all.sh" 2>&1 | tee "$REPORTS/all.out"
rc=${PIPESTATUS[0]}
make -s -C "$ROOT/test/unit" clean; make -s -C "$ROOT/test/stat" clean

reports=$(ls "$REPORTS" | grep -E '^(asan|ubsan)\.' || true)
# a report a test program printed to its own stderr instead
if grep -qE 'runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer' "$REPORTS/all.out"; then
	grep -nE 'runtime error:|ERROR: AddressSanitizer' "$REPORTS/all.out" | head -20 > "$REPORTS/ubsan.in-output"
	reports="$reports ubsan.in-output"
fi
if [ -n "$reports" ]; then
	for f in $reports; do
		echo "--- sanitizer report $f"
		head -60 "$REPORTS/$f"
	done
	echo "sanitize: $(echo "$reports" | wc -l) sanitizer report(s)"
	rc=1
else
	echo "sanitize: no sanitizer report"
fi
[ "$rc" = 0 ] && rm -rf "$REPORTS"
exit "$rc"
