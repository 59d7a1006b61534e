#!/usr/bin/env bash
# test/sanitize.sh — dp_pg's suites once against the test build compiled with
# AddressSanitizer and UndefinedBehaviorSanitizer (gcc's -fsanitize=address,
# undefined, every report fatal).  PostgreSQL itself is not rebuilt: the
# sanitizers' runtimes are preloaded (LD_PRELOAD) into everything the suites
# start, the servers included, so dp_pg.so runs instrumented inside an
# ordinary server.  Leak detection is off (PostgreSQL frees by memory
# context, not by free()).  Passes when the suites pass and no sanitizer
# wrote a report (log files under the scratch directory, printed if any).
#
#   bash test/sanitize.sh                      PostgreSQL 15, regress, isolation, TAP
#   DP_SANITIZE_SUITES=regress bash test/sanitize.sh
#
# Uses its own private server copy (DP_TEST_PGROOT default
# /var/tmp/dp_pg-test-asan) and ports 55800-55899.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
for f in "$asan" "$ubsan"; do
	[ -f "$f" ] || { echo "sanitize: runtime $f not found (gcc's libasan / libubsan)" >&2; exit 1; }
done
REPORTS=$(mktemp -d /tmp/dp_pg-sanitize.XXXXXX)
chmod 1777 "$REPORTS"

export DP_SANITIZE=1
export DP_TEST_PGROOT=${DP_TEST_PGROOT:-/var/tmp/dp_pg-test-asan}
export DP_TEST_NEWPG=0
export DP_PORT=${DP_PORT:-55800}
export DP_TEST_FUZZ=${DP_TEST_FUZZ:-0}
export DP_TEST_C_SUITES=${DP_TEST_C_SUITES:-0}
export ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1:log_path=$REPORTS/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$REPORTS/ubsan"
# into every process the suites start (servers, psql, perl); set only after
# the build: test/all.sh exports it as LD_PRELOAD after dp_test_install
export DP_SANITIZE_PRELOAD="$asan $ubsan"

bash "$ROOT/test/all.sh" 2>&1 | tee "$REPORTS/all.out"
rc=${PIPESTATUS[0]}

reports=$(ls "$REPORTS" | grep -E '^(asan|ubsan)\.' || true)
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
