#!/usr/bin/env bash
# test/all.sh — run every dp_pg test suite; exit non-zero if any test fails.
#
#   plain-C unit tests (numeric core vs test/reference)        test/unit
#   statistical tests of the samplers (with positive controls) test/stat
#   pg_regress (SQL behaviour and every error path)            sql/, expected/
#   isolation specs (concurrent sessions)                      test/isolation
#   TAP (restarts, configuration, crashes)                     test/t
#   fuzz: sqlsmith as a hostile analyst, and its positive      test/fuzz
#         control (every oracle must fire)
#
# Works on a fresh Debian 12 machine as root: installs the packages it needs,
# builds dp_pg's test build into a private copy of the server, and runs the server as the postgres user in a
# scratch directory on a private port.  Ends with "total: N passed, M failed".
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DP_PORT=${DP_PORT:-55432}

total_passed=0
total_failed=0
summary=""

# Record a suite's result: name, passed, failed.
record() {
	total_passed=$((total_passed + $2))
	total_failed=$((total_failed + $3))
	summary="$summary$(printf '  %-12s %5d passed, %d failed' "$1" "$2" "$3")"$'\n'
}

# Count results of a prove run from its output file: sets P and F.
prove_counts() {
	local out=$1 tests failed
	tests=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$out" | tail -1)
	failed=$(sed -n 's/.*Failed \([0-9]*\)\/[0-9]* subtests.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
	tests=${tests:-0}
	# a test program that died without a plan counts as one failure
	if ! grep -q '^Result: PASS' "$out" && [ "$failed" = 0 ]; then failed=1; fi
	P=$((tests - failed)); [ $P -lt 0 ] && P=0
	F=$failed
}

# Count results of a pg_regress run from its output file: sets P and F.
regress_counts() {
	local out=$1 n m
	if n=$(sed -n 's/.*All \([0-9]*\) tests passed.*/\1/p' "$out" | tail -1) && [ -n "$n" ]; then
		P=$n; F=0
	elif m=$(sed -n 's/.* \([0-9]*\) of \([0-9]*\) tests failed.*/\1 \2/p' "$out" | tail -1) && [ -n "$m" ]; then
		set -- $m; F=$1; P=$(($2 - $1))
	else
		P=0; F=1
	fi
}

set -e
dp_install_deps
# the test build (with its test-only switches) goes into a private copy of the
# server, never into the system's PostgreSQL (test/lib.sh dp_test_install)
dp_test_install
set +e
PGXS_DIR=$(dirname "$("$DP_PG_CONFIG" --pgxs)")/../..

SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; [ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"' EXIT

# plain C, independent of the server version: once (DP_TEST_C_SUITES=0 skips)
if [ "${DP_TEST_C_SUITES:-1}" = 1 ]; then
	# the numeric core (src/core) is plain C: none of its files includes a
	# PostgreSQL header, only the C library, OpenSSL and the core's own headers
	echo "=== layout (src/core includes no PostgreSQL header)"
	P=0; F=0
	for f in "$DP_ROOT"/src/core/*.[ch]; do
		bad=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\(["<][^">]*[">]\).*/\1/p' "$f" | while read -r inc; do
			case "$inc" in
			\"*\") [ -f "$DP_ROOT/src/core/${inc//\"/}" ] || echo "$inc" ;;
			\<openssl/*) ;;
			\<*) h=${inc#<}; h=${h%>}
				# a header of the C library or the compiler, never the server's
				[ -f "/usr/include/$h" ] || [ -f "/usr/include/x86_64-linux-gnu/$h" ] ||
					[ -n "$(gcc -print-file-name="include/$h" | grep /)" ] && [ ! -f "$("$DP_PG_CONFIG" --includedir-server)/$h" ] || echo "$inc" ;;
			*) echo "$inc" ;;
			esac
		done)
		if [ -z "$bad" ]; then P=$((P + 1)); else echo "not ok: $(basename "$f") includes $bad"; F=$((F + 1)); fi
	done
	echo "layout: $P files plain C, $F with a PostgreSQL or unknown header"
	record layout $P $F

	echo "=== unit tests (test/unit)"
	make -C "$DP_ROOT/test/unit" -s check 2>&1 | tee "$SCRATCH/unit.out"
	prove_counts "$SCRATCH/unit.out"; record unit $P $F

	echo "=== statistical tests (test/stat)"
	make -C "$DP_ROOT/test/stat" -s check 2>&1 | tee "$SCRATCH/stat.out"
	prove_counts "$SCRATCH/stat.out"; record stat $P $F
fi

echo "=== pg_regress (sql/, expected/)"
mkdir -p "$SCRATCH/pg"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$SCRATCH/pg"
# the regression database is the ledger database, prepared before pg_regress
if DP_LEDGER_DB=dp_regress dp_cluster_start "$SCRATCH/pg" "$DP_PORT" &&
	dp_ledger_db "$SCRATCH/pg" "$DP_PORT" dp_regress; then
	"$PGXS_DIR/src/test/regress/pg_regress" \
		--inputdir="$DP_ROOT" --outputdir="$SCRATCH/regress" \
		--bindir="$DP_PGBIN" --host="$SCRATCH/pg" --port="$DP_PORT" --user=postgres \
		--use-existing --dbname=dp_regress \
		$(make -s -C "$DP_ROOT" print-REGRESS print-REGRESS_TEST_BUILD) 2>&1 | tee "$SCRATCH/regress.out"
	regress_counts "$SCRATCH/regress.out"; record regress $P $F
	[ -f "$SCRATCH/regress/regression.diffs" ] && cat "$SCRATCH/regress/regression.diffs"

	echo "=== isolation (test/isolation)"
	"$PGXS_DIR/src/test/isolation/pg_isolation_regress" \
		--inputdir="$DP_ROOT/test/isolation" --outputdir="$SCRATCH/isolation" \
		--bindir="$DP_PGBIN" --host="$SCRATCH/pg" --port="$DP_PORT" --user=postgres \
		--use-existing --dbname=dp_regress \
		$(make -s -C "$DP_ROOT" print-TEST_ISOLATION) 2>&1 | tee "$SCRATCH/isolation.out"
	regress_counts "$SCRATCH/isolation.out"; record isolation $P $F
	[ -f "$SCRATCH/isolation/regression.diffs" ] && cat "$SCRATCH/isolation/regression.diffs"
	dp_cluster_stop "$SCRATCH/pg"
else
	record regress 0 1
	record isolation 0 1
fi

if [ "${DP_TEST_TAP:-1}" = 1 ]; then
echo "=== TAP (test/t)"
# t/090_monitoring.pl runs Prometheus' exporter, t/095_pgbouncer.pl pgbouncer
dp_install_tools pgbouncer prometheus-postgres-exporter
mkdir -p "$SCRATCH/tap"
cp -r "$DP_ROOT/test/t" "$SCRATCH/tap/t"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$SCRATCH/tap"
# every node starts with test/t/tests.conf (the answer cache off: see the file)
(cd "$SCRATCH/tap" && dp_as_pg env PATH="$PATH" TESTDIR="$SCRATCH/tap" DP_ROOT="$DP_ROOT" \
	TEMP_CONFIG="$SCRATCH/tap/t/tests.conf" \
	PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" \
	prove -I "$PGXS_DIR/src/test/perl" -I t t/*.pl) 2>&1 | tee "$SCRATCH/tap.out"
prove_counts "$SCRATCH/tap.out"; record tap $P $F
if [ "$F" != 0 ]; then
	for f in "$SCRATCH"/tap/tmp_check/log/*; do
		[ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }
	done
fi
fi

if [ "${DP_TEST_FUZZ:-1}" = 1 ]; then
echo "=== fuzz (test/fuzz/sqlsmith.sh, sqlsmith as a hostile analyst)"
# one test per oracle (crash, leak, charge); then the positive control, which
# breaks the system on purpose: one test, passed if every oracle fired
fuzz_env="DP_FUZZ_PORT=${DP_FUZZ_PORT:-$((DP_PORT + 38))} DP_FUZZ_SKIP_BUILD=1"
env $fuzz_env SQLSMITH_QUERIES="${SQLSMITH_QUERIES:-2000}" FUZZ_OUT="$SCRATCH/fuzz" \
	bash "$DP_ROOT/test/fuzz/sqlsmith.sh" 2>&1 | tee "$SCRATCH/fuzz.out"
P=$(grep -c '^fuzz oracle [a-z]*: ok$' "$SCRATCH/fuzz.out")
F=$(grep -c '^fuzz oracle [a-z]*: \(VIOLATION\|FAILED\)' "$SCRATCH/fuzz.out")
grep -q '^fuzz result: ' "$SCRATCH/fuzz.out" || F=$((F + 1))
echo "--- fuzz positive control (FUZZ_POSITIVE_CONTROL=1: every oracle must report a violation)"
env $fuzz_env SQLSMITH_QUERIES=200 FUZZ_POSITIVE_CONTROL=1 FUZZ_OUT="$SCRATCH/fuzz_control" \
	bash "$DP_ROOT/test/fuzz/sqlsmith.sh" >"$SCRATCH/fuzz_control.out" 2>&1
grep '^fuzz ' "$SCRATCH/fuzz_control.out"
fired=$(grep -c '^fuzz oracle \(crash\|leak\|charge\): VIOLATION' "$SCRATCH/fuzz_control.out")
if [ "$fired" = 3 ] && ! grep -q '^fuzz oracle harness' "$SCRATCH/fuzz_control.out"; then
	echo "positive control: every oracle fired"; P=$((P + 1))
else
	echo "positive control: only $fired of 3 oracles fired"; F=$((F + 1))
fi
record fuzz $P $F
fi

if [ "${DP_TEST_BI:-1}" = 1 ]; then
echo "=== BI tools' SQL through their client drivers and generators (test/bi/run.sh: JDBC, psqlODBC, psycopg2; dbplyr, SQLAlchemy, pandas, pgcli, pgbouncer, knex, Malloy, Cube)"
# one test per corpus statement, per generator leg's question, per positive
# control and per check of the leg
DP_BI_PORT=${DP_BI_PORT:-$((DP_PORT + 40))} bash "$DP_ROOT/test/bi/run.sh" 2>&1 | tee "$SCRATCH/bi.out"
P=$(grep -c '^ok ' "$SCRATCH/bi.out")
F=$(grep -c '^not ok ' "$SCRATCH/bi.out")
grep -q '^bi: [0-9]* passed, [0-9]* failed$' "$SCRATCH/bi.out" || F=$((F + 1))
record bi $P $F
fi

# The package leg (test/package.sh): META.json, the Debian package built,
# installed into the system's PostgreSQL $DP_PGVER, and make installcheck
# against it.  DP_TEST_PACKAGE=0 skips it; the nested runs do.
if [ "${DP_TEST_PACKAGE:-1}" = 1 ] && [ "${DP_TEST_NEWPG:-1}" = 1 ]; then
	echo "=== package (test/package.sh)"
	DP_PGBIN=/usr/lib/postgresql/$DP_PGVER/bin DP_PACKAGE_PORT=$((DP_PORT + 60)) \
		bash "$DP_ROOT/test/package.sh" 2>&1 | tee "$SCRATCH/package.out"
	P=$(grep -c '^ok ' "$SCRATCH/package.out")
	F=$(grep -c '^not ok ' "$SCRATCH/package.out")
	grep -q '^package: [0-9]* passed, [0-9]* failed$' "$SCRATCH/package.out" || F=$((F + 1))
	record package $P $F
fi

# The same suites on the newest PostgreSQL that Debian's unstable suite
# carries as a source package, built by test/newpg.sh (cached between runs)
# into a private prefix.  DP_TEST_NEWPG=0 skips it; the nested run sets it.
if [ "${DP_TEST_NEWPG:-1}" = 1 ]; then
	echo
	echo "=== the newest PostgreSQL (test/newpg.sh)"
	if newbin=$(bash "$DP_ROOT/test/newpg.sh" | tail -1) && [ -x "$newbin/pg_config" ]; then
		newver=$("$newbin/pg_config" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')
		DP_PGBIN=$newbin DP_TEST_PGROOT=/var/tmp/dp_pg-test-pg$newver DP_TEST_NEWPG=0 DP_TEST_C_SUITES=0 \
			DP_PORT=$((DP_PORT + 200)) DP_FUZZ_PORT=$((DP_PORT + 238)) \
			bash "$DP_ROOT/test/all.sh" 2>&1 | tee "$SCRATCH/newpg.out"
		if grep -q '^total: ' "$SCRATCH/newpg.out"; then
			while read -r name p _ f _; do
				record "pg$newver-$name" "$p" "$f"
			done < <(sed -n '/^=== dp_pg test summary/,/^total:/p' "$SCRATCH/newpg.out" | sed -n 's/^  \([a-z]*\) *\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2 x \3 x/p')
		else
			record "pg$newver" 0 1
		fi
	else
		echo "test/newpg.sh failed"
		record newpg 0 1
	fi
fi

# The sanitizer leg: the plain-C suites, pg_regress and the isolation specs
# once more, on a server and a dp_pg built with AddressSanitizer and
# UndefinedBehaviorSanitizer (test/sanitize.sh; its full run, TAP included,
# takes ~15 minutes more than CI can spare).  DP_TEST_SANITIZE=0 skips it.
if [ "${DP_TEST_SANITIZE:-1}" = 1 ] && [ "${DP_TEST_NEWPG:-1}" = 1 ]; then
	echo
	echo "=== sanitizers (test/sanitize.sh without TAP and fuzz)"
	DP_TEST_TAP=0 DP_PORT=$((DP_PORT + 300)) bash "$DP_ROOT/test/sanitize.sh" 2>&1 | tee "$SCRATCH/sanitize.out"
	if grep -q '^total: ' "$SCRATCH/sanitize.out"; then
		while read -r name p _ f _; do
			record "san-$name" "$p" "$f"
		done < <(sed -n '/^=== dp_pg test summary/,/^total:/p' "$SCRATCH/sanitize.out" | sed -n 's/^  \([a-z0-9-]*\) *\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2 x \3 x/p')
		grep -q '^sanitize: no sanitizer report' "$SCRATCH/sanitize.out" && record san-reports 1 0 || record san-reports 0 1
	else
		record sanitize 0 1
	fi
fi

echo
echo "=== dp_pg test summary ($("$DP_PG_CONFIG" --version))"
printf '%s' "$summary"
echo "total: $total_passed passed, $total_failed failed"
[ "$total_failed" = 0 ]
