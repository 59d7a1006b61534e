#!/usr/bin/env bash
# test/all.sh — run every dp_pg test suite; exit non-zero if any test fails.
#
#   bash test/all.sh            every suite on both legs (what CI runs: .ci/run)
#   bash test/all.sh --quick    the development check: build, unit tests,
#                               pg_regress and isolation on PostgreSQL 15
#
# Two legs, each a server with dp_pg's test build (-DDP_PG_TEST_SWITCHES) in a
# private copy (test/lib.sh dp_test_install), never the system's PostgreSQL:
#
#   pg15    Debian's PostgreSQL 15
#   newest  the newest PostgreSQL of Debian unstable (18 today), built once
#           from its source package by test/newpg.sh with AddressSanitizer and
#           UndefinedBehaviorSanitizer (cached between runs): every suite of
#           this leg also runs under the sanitizers, and the leg passes only
#           if no sanitizer wrote a report and the sanitizers' positive
#           controls did; the plain-C unit tests run here compiled with
#           them.  Statistical sampling runs only on pg15: the statistical
#           tests (test/stat) and that of t/050_unit_privacy.pl
#           (DP_TAP_STATISTICS=0 here).  Their power is a property of the same
#           C on every build, and the code they draw through runs under the
#           sanitizers here in the unit tests (every sampler, smaller sizes)
#           and in every server suite (each dp aggregate draws through it);
#           under the sanitizers they would cost twice their pg15 time
#
# The suites are the table below ("suite" lines).  Every suite runs in a job
# of its own (this script again, with --job) with its own scratch directory,
# cluster and ports; jobs run side by side, DP_JOBS at a time (default: the
# number of cores), longest first (by this machine's last run).  The critical
# paths are not niced: the builds (in a cold run the newest server's build,
# started at once, is the longest job) and each leg's longest job (TAP); the
# other jobs are, and fill the cores those leave idle.  A job's output is
# printed in one piece when it ends, closed by its counts and its time: wall
# seconds and CPU seconds of every process it started, servers included
# (test/timed.pl).  The run ends with a timing table and "total: N passed,
# M failed".
#
# Switches (environment):
#   DP_TEST_LEGS="pg15 newest"   the legs to run (DP_TEST_NEWPG=0: pg15 only)
#   DP_TEST_ONLY="regress tap"   only these suites;  DP_TEST_<SUITE>=0 skips
#                                one (DP_TEST_TAP=0, DP_TEST_BI=0, ...;
#                                DP_TEST_C_SUITES=0 skips layout, unit, stat)
#   DP_TEST_SANITIZE=0           the newest leg on a plain build, without the
#                                sanitizers (and without the plain-C suites)
#   DP_TAP_ONLY=REGEX            only the TAP files whose name matches
#   DP_JOBS=N                    jobs side by side;  DP_TAP_JOBS=N  TAP files
#                                side by side (default: the number of cores)
#   DP_TIMING=FILE               append this run's timing table to FILE
#   DP_TEST_COLD=1               delete this run's caches first (a cold run
#                                apart from the Debian packages; see
#                                docs/development.md, "Timing")
#   DP_KEEP_SCRATCH=1            keep the scratch directory (every job's log)
#   DP_HISTORY=FILE              this machine's job times, which order the
#                                next run (default: under DP_TEST_PGROOT's
#                                builds directory)
# Ports: the pg15 leg uses DP_PORT (default 55432) .. +199, the newest leg
# DP_PORT + 200 .. +399 (fuzz +38, BI +40/+41, attack corpus +50, further
# script suites +100 + 10 k, in each leg).
set -uo pipefail

# prove --exec helper: run one plain-C test program, keep its TAP output
if [ "${1:-}" = --tee-tap ]; then
	out="$2/$(basename "$3").tap"
	"$3" | tee "$out"
	exit "${PIPESTATUS[0]}"
fi

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SELF=$DP_ROOT/test/all.sh

# ------------------------------------------------------------------------
# The suites.  One line each:
#
#   suite NAME LEGS NEEDS "WHAT IT CHECKS" COMMAND [ARGS...]
#
# LEGS: pg15, newest or both (pg15,newest).  NEEDS: "-" (plain C, runs at
# once) or "server" (after the leg's build and the suites' packages).
# COMMAND: a suite_* function below, or `suite_script test/DIR/SCRIPT.sh`
# for a self-contained script: it finds the server through DP_PGBIN (test
# build installed), uses the ports DP_SUITE_PORT .. +9 (or, through lib.sh,
# DP_PORT's fuzz/BI/attack ports), its own scratch directory, and ends with
# "NAME: N passed, M failed" (else its exit status counts as one test).
# "packages NAME PKG..." names the Debian packages a suite installs for
# itself: they are installed at once with the others, beside the first suites.
# New TAP files (test/t), attack classes (test/attack), regress tests
# (Makefile REGRESS), isolation specs, unit and statistical programs
# (test/unit, test/stat) and BI legs need no line here.

SUITES=()
declare -A S_LEGS S_NEEDS S_WHAT S_CMD S_PKGS
suite() {
	SUITES+=("$1")
	S_LEGS[$1]=$2 S_NEEDS[$1]=$3 S_WHAT[$1]=$4
	S_CMD[$1]="${*:5}"
}
packages() { S_PKGS[$1]="${*:2}"; }

suite layout  pg15        -      "src/core includes no PostgreSQL header (it is plain C); the layers of src/ (test/layering.pl)" suite_layout
suite unit    pg15,newest -      "plain-C unit tests of src/core against test/reference (test/unit)" suite_c unit
suite stat    pg15        -      "statistical tests of the samplers, with positive controls (test/stat)" suite_c stat
suite regress pg15,newest server "pg_regress (sql/, expected/), then the isolation specs (test/isolation), on one cluster" suite_regress
suite tap     pg15,newest server "TAP files (test/t) side by side: restarts, crashes, standbys, unit privacy, the attack corpus, a database's life (dump/restore, pg_upgrade from the pg15 leg's server in the newest leg, extension updates, point-in-time recovery)" suite_tap
suite fuzz    pg15,newest server "sqlsmith as a hostile analyst (test/fuzz), then its positive control" suite_fuzz
suite exprfuzz pg15,newest server "the expression fuzzer: random accepted row expressions on rows made to break them never fail where they succeed on an empty table (test/fuzz/exprfuzz.sh), then its positive control" suite_script test/fuzz/exprfuzz.sh
suite bi      pg15,newest server "BI tools' SQL through their drivers and generators (test/bi/run.sh)" suite_script test/bi/run.sh
suite rootclone pg15      server "the test command from a clone only root can enter (/root is 0700): it runs from a copy the postgres user can read, and a TAP file that dies before its plan is counted and named (test/rootclone.sh)" suite_script test/rootclone.sh
suite demo    pg15        server "the demo (test/demo.sh) on the test build: it runs to its end and says what is true — answers near the true values of the same bounding, balanced data, charges as explained, refused queries with their SQL, readable numbers (test/demo_check.sh)" suite_script test/demo_check.sh
suite package pg15        server "META.json; the Debian package built, installed into the system's PostgreSQL 15, make installcheck against it (test/package.sh)" suite_package

packages tap  pgbouncer prometheus-postgres-exporter postgresql-$DP_PGVER-partman	# t/095_pgbouncer.pl, t/090_monitoring.pl, t/109_partman.pl
packages fuzz sqlsmith libdbd-pg-perl
packages exprfuzz libdbd-pg-perl
packages package build-essential debhelper dpkg-dev fakeroot postgresql-server-dev-all
packages bi   python3-psycopg2 default-jdk-headless libpostgresql-jdbc-java odbc-postgresql unixodbc \
	python3-pyodbc r-base-core r-cran-dbi r-cran-rpostgresql r-cran-cardata r-cran-dbplyr \
	python3-sqlalchemy python3-pandas pgcli pgbouncer $(command -v npm >/dev/null || echo nodejs npm)

# ------------------------------------------------------------------------
# Settings shared by the parent and its jobs

PORT0=${DP_PORT:-55432}
FUZZ_PORT0=${DP_FUZZ_PORT:-$((PORT0 + 38))}
BI_PORT0=${DP_BI_PORT:-$((PORT0 + 40))}
ATTACK_PORT0=${DP_ATTACK_PORT:-$((PORT0 + 50))}
ROOT15=${DP_TEST_PGROOT:-/var/tmp/dp_pg-test-pg$DP_PGVER}
ROOTNEW=${DP_TEST_NEWPG_ROOT:-$ROOT15-newest}
BUILDS=$ROOT15-builds	# the plain-C suites' build directories, per leg
SYSBIN=$DP_PGBIN	# the server the pg15 leg copies
SANITIZE=${DP_TEST_SANITIZE:-1}
NCPU=$(nproc)
TAP_JOBS=${DP_TAP_JOBS:-$NCPU}
export PG_TEST_PORT_DIR=${PG_TEST_PORT_DIR:-/tmp}

# The prefix of leg $1's result names.
leg_label() {
	[ "$1" = newest ] && echo "$(cat "$RUN/newest.label" 2>/dev/null || echo newest)-"
}

# Set the environment of leg $1 (ports, server, sanitizers); sets LEG, LABEL
# (the prefix of its result names) and CBUILD.
leg_env() {
	LEG=$1
	local off=0
	if [ "$LEG" = newest ]; then
		off=200
		LABEL=$(leg_label newest)
		export DP_TEST_PGROOT=$ROOTNEW
		# statistical TAP sampling (the same C on every version) runs once,
		# on the pg15 leg, when that leg runs too (t/050_unit_privacy.pl)
		case " ${DP_RUN_LEGS:-} " in *" pg15 "*) export DP_TAP_STATISTICS=0 ;; esac
		# the old version for tests that need two (pg_upgrade): PostgreSQL 15
		# with dp_pg's test build, when this run has the pg15 leg
		[ -f "$RUN/pg15.pgbin" ] && export DP_OLD_PGBIN="$(cat "$RUN/pg15.pgbin")"
		if [ "$SANITIZE" = 1 ]; then
			export DP_SANITIZE=1
			export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$RUN/reports/asan"
			export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
			export DP_SANITIZER_REPORTS=$RUN/reports
		fi
	else
		LABEL=""
		export DP_TEST_PGROOT=$ROOT15
	fi
	CBUILD=$BUILDS/$LEG
	export DP_PORT=$((PORT0 + off)) DP_FUZZ_PORT=$((FUZZ_PORT0 + off)) DP_BI_PORT=$((BI_PORT0 + off))
	export DP_ATTACK_PORT=$((ATTACK_PORT0 + off))
	if [ -f "$RUN/$LEG.pgbin" ]; then
		export DP_PGBIN
		DP_PGBIN=$(cat "$RUN/$LEG.pgbin")
		DP_PG_CONFIG=$DP_PGBIN/pg_config
		export PATH="$DP_PGBIN:$PATH"
	fi
	PGXS_DIR=$(dirname "$("$DP_PG_CONFIG" --pgxs)")/../..
}

# Record a result of the job: name, passed, failed (and the test files of
# it that stopped before their plan: their number, their names in $5).
record() {
	echo "$LABEL$1 $2 $3 ${4:-0}" >>"$COUNTS"
	[ "${4:-0}" = 0 ] || echo "$LABEL$1: ${5:-}" >>"$COUNTS.noplan"
}

# Count results of a prove run from its output file: sets P, F, and NOPLAN /
# NOPLAN_FILES (the test files that stopped before their plan).  From prove's
# "Test Summary Report": a failed test counts once; a file that planned N
# tests and ran fewer counts the missing ones as failed; a file that died
# before printing a plan (a Perl script it could not open, a BAIL_OUT before
# the plan) ran an unknown number of tests: it counts as one failure and is
# named (NOPLAN), so the run's last line tells that tests did not run; any
# other non-zero exit or parse error of a file with no failure counts one.
prove_counts() {
	local out=$1 res
	res=$(awk '
		function flush() {
			if (cur == "") return
			fe = f + missing
			if (noplan) { fe += 1; np++; npf = npf (npf == "" ? "" : " ") cur }
			if (fe == 0 && (nonzero || perr)) fe = 1
			failed_tests += f; failed += fe; cur = ""
		}
		/^Test Summary Report/ { insum = 1; next }
		insum && /^[^ ].*\(Wstat: / {
			flush()
			cur = $1; sub(/^.*\//, "", cur)
			f = $0; sub(/.* Failed: /, "", f); sub(/\).*/, "", f); f += 0
			missing = 0; noplan = 0; nonzero = 0; perr = 0
			next
		}
		insum && /^  / && cur != "" {
			if ($0 ~ /No plan found/) noplan = 1
			else if ($0 ~ /Bad plan/) {
				pl = $0; sub(/.*planned /, "", pl); sub(/ tests.*/, "", pl)
				rn = $0; sub(/.* but ran /, "", rn); sub(/\..*/, "", rn)
				if (pl - rn > 0) missing = pl - rn
			} else if ($0 ~ /Parse errors/) perr = 1
			if ($0 ~ /Non-zero (exit|wait) status/) nonzero = 1
			next
		}
		/^Files=[0-9]+, Tests=[0-9]+/ {
			flush(); insum = 0; files = 1
			t = $0; sub(/^Files=[0-9]+, Tests=/, "", t); sub(/,.*/, "", t); tests = t + 0
		}
		/^Result: PASS/ { pass = 1 }
		END {
			flush()
			if (!files) { tests = 0; failed_tests = 0; if (failed == 0) failed = 1 }
			else if (!pass && failed == 0) failed = 1
			p = tests - failed_tests; if (p < 0) p = 0
			print p, failed + 0, np + 0, npf
		}' "$out")
	read -r P F NOPLAN NOPLAN_FILES <<<"$res"
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

# ------------------------------------------------------------------------
# The suites' commands (run in a job: leg_env done, SCRATCH and COUNTS set)

# The numeric core includes only the C library, OpenSSL and its own headers.
suite_layout() {
	local P=0 F=0 f bad
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
	# the layers of src/ (docs/development.md): no upward call or #include, no circle; and its positive controls
	echo "=== layering (test/layering.pl)"
	if perl "$DP_ROOT/test/layering.pl"; then P=1; F=0; else P=0; F=1; fi
	if perl "$DP_ROOT/test/layering.pl" --control; then P=$((P + 1)); else F=$((F + 1)); fi
	record layering $P $F
}

# A plain-C suite (test/unit or test/stat: one TAP program per test_*.c),
# built in a copy of the tree of this leg (with the sanitizers on the newest
# leg); a failing program's first failure is printed with its diagnostics.
suite_c() {
	local name=$1 t f line
	local dir=$CBUILD/$name cflags="-O2 -g -Wall -Wextra -Werror -std=gnu11" tapdir=$SCRATCH/tap-output rname=$name
	[ -n "${DP_SANITIZE:-}" ] && cflags="-O1 -g -Wall -Wextra -Werror -std=gnu11 $DP_SANITIZE_FLAGS" rname=san-$name
	if [ -n "${DP_PG_REFERENCE:-}" ] && [ ! -d "$DP_PG_REFERENCE" ]; then
		echo "$name: the reference values are missing: no directory DP_PG_REFERENCE=$DP_PG_REFERENCE"
	fi
	dp_sync_tree "$dir" || { LABEL="" record "$rname" 0 1; return; }
	[ "$(cat "$dir/.dp_pg-cflags" 2>/dev/null)" = "$cflags" ] ||
		{ make -s -C "$dir/test/$name" clean; echo "$cflags" >"$dir/.dp_pg-cflags"; }
	if ! make -s -C "$dir/test/$name" -j"$NCPU" CFLAGS="$cflags" all; then
		echo "$name: the build failed"
		LABEL="" record "$rname" 0 1
		return
	fi
	mkdir -p "$tapdir"
	(cd "$dir/test/$name" && prove --timer -j"$NCPU" --exec "bash $SELF --tee-tap $tapdir" bin/test_*) 2>&1 | tee "$SCRATCH/$name.out"
	prove_counts "$SCRATCH/$name.out"
	LABEL="" record "$rname" $P $F $NOPLAN "$NOPLAN_FILES"
	[ "$F" = 0 ] && return
	# the reason of each failing program's first failure
	for t in $(sed -n 's/^\(bin\/test_[a-z0-9_]*\) .*(Wstat.*/\1/p' "$SCRATCH/$name.out"); do
		f=$tapdir/$(basename "$t").tap
		line=$(grep -n -m1 '^not ok' "$f" | cut -d: -f1)
		if [ -n "$line" ]; then
			echo "$name: first failure of $(basename "$t"): $(sed -n "${line}p" "$f")"
			sed -n "$((line + 1)),\$p" "$f" | sed -n '/^#/!q; p' | head -10
		else
			echo "$name: $(basename "$t") failed without a failing test line; its last output:"
			tail -5 "$f"
		fi
	done
}

# Run the tests $4... with pg_regress or pg_isolation_regress ($2; inputs in
# $3) on suite_regress's cluster and record them as $1; prints the diffs.
regress_run() {
	local name=$1 prog=$2 inputdir=$3
	shift 3
	(cd "$DP_ROOT" && "$prog" --inputdir="$inputdir" --outputdir="$SCRATCH/$name" \
		--bindir="$DP_PGBIN" --host="$SCRATCH/pg" --port="$DP_PORT" --user=postgres \
		--use-existing --dbname=dp_regress "$@") 2>&1 | tee "$SCRATCH/$name.out"
	regress_counts "$SCRATCH/$name.out"
	record "$name" $P $F
	[ -f "$SCRATCH/$name/regression.diffs" ] && cat "$SCRATCH/$name/regression.diffs"
}

# pg_regress and the isolation specs on one cluster (the regression database
# is the ledger database, prepared before pg_regress).
suite_regress() {
	mkdir -p "$SCRATCH/pg"
	[ "$(id -u)" = 0 ] && chown postgres:postgres "$SCRATCH/pg"
	if DP_LEDGER_DB=dp_regress dp_cluster_start "$SCRATCH/pg" "$DP_PORT" &&
		dp_ledger_db "$SCRATCH/pg" "$DP_PORT" dp_regress; then
		regress_run regress "$PGXS_DIR/src/test/regress/pg_regress" "$DP_ROOT" $(make -s -C "$DP_ROOT" print-REGRESS print-REGRESS_TEST_BUILD)
		echo "--- isolation (test/isolation)"
		regress_run isolation "$PGXS_DIR/src/test/isolation/pg_isolation_regress" "$DP_ROOT/test/isolation" \
			$(make -s -C "$DP_ROOT" print-TEST_ISOLATION)
	else
		record regress 0 1
		record isolation 0 1
	fi
	dp_cluster_stop "$SCRATCH/pg"
}

# The TAP files, TAP_JOBS at a time, as the postgres user; every node starts
# with test/t/tests.conf (the answer cache off: see the file).  Where the
# server's test modules support it (PostgreSQL 16 and later), nodes are
# copies of one initdb template instead of an initdb each.
suite_tap() {
	local template="" f
	dp_install_packaged_extensions	# pg_partman (t/109_partman.pl)
	mkdir -p "$SCRATCH/tap/times"
	cp -r "$DP_ROOT/test/t" "$SCRATCH/tap/t"
	[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$SCRATCH/tap"
	if grep -q INITDB_TEMPLATE "$PGXS_DIR/src/test/perl/PostgreSQL/Test/Cluster.pm" &&
		dp_as_pg env LC_MESSAGES=C "$DP_PGBIN/initdb" -A trust -N -D "$SCRATCH/tap/initdb-template" >"$SCRATCH/initdb-template.log" 2>&1; then
		template=$SCRATCH/tap/initdb-template
	fi
	echo "TAP: $(ls "$SCRATCH"/tap/t/*.pl | grep -cE "${DP_TAP_ONLY:-.}") files${DP_TAP_ONLY:+ matching $DP_TAP_ONLY}, $TAP_JOBS at a time${template:+, nodes copied from an initdb template}"
	# each file measured by test/timed.pl (its nodes' CPU time included)
	(cd "$SCRATCH/tap" && dp_as_pg env PATH="$PATH" DP_ROOT="$DP_ROOT" DP_TIMED_GRACE=2 TESTDIR="$SCRATCH/tap" \
		TESTDATADIR="$SCRATCH/tap/tmp_check" TESTLOGDIR="$SCRATCH/tap/tmp_check/log" \
		TEMP_CONFIG="$SCRATCH/tap/t/tests.conf" ${template:+INITDB_TEMPLATE="$template"} \
		PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" \
		prove --timer -j"$TAP_JOBS" \
		--exec "perl $DP_ROOT/test/timed.pl $SCRATCH/tap/times/ perl -I $PGXS_DIR/src/test/perl -I t" \
		$(ls t/*.pl | grep -E "${DP_TAP_ONLY:-.}")) 2>&1 | tee "$SCRATCH/tap.out"
	prove_counts "$SCRATCH/tap.out"; record tap $P $F $NOPLAN "$NOPLAN_FILES"
	# UBSan's reports in the nodes' logs (it writes them to stderr)
	if [ -n "${DP_SANITIZER_REPORTS:-}" ]; then
		for f in $(grep -l 'runtime error:' "$SCRATCH"/tap/tmp_check/log/*.log 2>/dev/null); do
			grep -B2 -A30 'runtime error:' "$f" >"$DP_SANITIZER_REPORTS/ubsan-tap.$(basename "$f")"
		done
	fi
	# "NAME WALL CPU" per file, slowest first
	for f in "$SCRATCH"/tap/times/*.res; do
		[ -f "$f" ] && echo "$(basename "$f" .pl.res) $(cut -d' ' -f1,2 "$f")"
	done | sort -k2,2nr >"$JOBDIR/$LEG-tap.files"
	echo "TAP: slowest files (wall s / CPU s): $(head -6 "$JOBDIR/$LEG-tap.files" | awk '{printf "%s%s %.0f/%.0f", (NR > 1 ? ", " : ""), $1, $2, $3}')"
	if [ "$F" != 0 ]; then
		for f in "$SCRATCH"/tap/tmp_check/log/*; do
			[ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }
		done
	fi
}

# sqlsmith as a hostile analyst: one test per oracle (crash, leak, charge);
# then its positive control, which breaks the system on purpose: one test,
# passed if every oracle fired.  On the sanitized leg the control's SIGSEGV
# must also leave a sanitizer report (in a directory of its own).
suite_fuzz() {
	local fuzz_env=(DP_FUZZ_SKIP_BUILD=1) P F fired ctl_reports=$RUN/control-reports
	env "${fuzz_env[@]}" SQLSMITH_QUERIES="${SQLSMITH_QUERIES:-2000}" FUZZ_OUT="$SCRATCH/fuzz" \
		bash "$DP_ROOT/test/fuzz/sqlsmith.sh" 2>&1 | tee "$SCRATCH/fuzz.out"
	P=$(grep -c '^fuzz oracle [a-z]*: ok$' "$SCRATCH/fuzz.out")
	F=$(grep -c '^fuzz oracle [a-z]*: \(VIOLATION\|FAILED\)' "$SCRATCH/fuzz.out")
	grep -q '^fuzz result: ' "$SCRATCH/fuzz.out" || F=$((F + 1))
	echo "--- fuzz positive control (FUZZ_POSITIVE_CONTROL=1): the system broken on purpose, every oracle must report a violation"
	[ -n "${ASAN_OPTIONS:-}" ] &&
		fuzz_env+=(ASAN_OPTIONS="${ASAN_OPTIONS%%:log_path=*}:log_path=$ctl_reports/asan" DP_SANITIZER_REPORTS="$ctl_reports")
	mkdir -p "$ctl_reports" && chmod 1777 "$ctl_reports"
	env "${fuzz_env[@]}" SQLSMITH_QUERIES=200 FUZZ_POSITIVE_CONTROL=1 FUZZ_OUT="$SCRATCH/fuzz_control" \
		bash "$DP_ROOT/test/fuzz/sqlsmith.sh" >"$SCRATCH/fuzz_control.out" 2>&1
	grep '^fuzz ' "$SCRATCH/fuzz_control.out" | sed 's/^/positive control, expected: /'
	fired=$(grep -c '^fuzz oracle \(crash\|leak\|charge\): VIOLATION' "$SCRATCH/fuzz_control.out")
	if [ "$fired" = 3 ] && ! grep -q '^fuzz oracle harness' "$SCRATCH/fuzz_control.out"; then
		echo "positive control: passed, every oracle fired"; P=$((P + 1))
	else
		echo "positive control: FAILED, only $fired of 3 oracles fired"; F=$((F + 1))
	fi
	record fuzz $P $F
	if [ -n "${ASAN_OPTIONS:-}" ]; then
		if grep -l 'AddressSanitizer: SEGV' "$ctl_reports"/asan.* >/dev/null 2>&1; then
			echo "sanitizer positive control: passed, the control's SIGSEGV left an AddressSanitizer report ($(ls "$ctl_reports" | head -1))"
			LABEL="" record san-control-server 1 0
		else
			echo "sanitizer positive control: FAILED, the control's SIGSEGV left no AddressSanitizer report in $ctl_reports"
			LABEL="" record san-control-server 0 1
		fi
	fi
}

# A self-contained script: counts from its last "NAME: N passed, M failed"
# line (a non-zero exit adds a failure if it counted none); without one its
# exit status counts as one test.
suite_script() {
	local script=$1 rc line p f
	shift
	bash "$DP_ROOT/$script" "$@" 2>&1 | tee "$SCRATCH/script.out"
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^[A-Za-z0-9_. -]+: [0-9]+ passed, [0-9]+ failed$' "$SCRATCH/script.out" | tail -1)
	if [ -n "$line" ]; then
		p=$(echo "$line" | sed 's/.*: \([0-9]*\) passed, .*/\1/')
		f=$(echo "$line" | sed 's/.* passed, \([0-9]*\) failed$/\1/')
		[ "$rc" != 0 ] && [ "$f" = 0 ] && { echo "$script: exit status $rc"; f=1; }
	elif [ "$rc" = 0 ]; then
		p=1 f=0
	else
		echo "$script: exit status $rc"
		p=0 f=1
	fi
	record "$NAME" "$p" "$f"
}

# The package leg: test/package.sh against the system's PostgreSQL (it
# installs the release build's Debian package there and removes it again).
suite_package() {
	DP_PGBIN=/usr/lib/postgresql/$DP_PGVER/bin DP_PACKAGE_PORT=$DP_SUITE_PORT suite_script test/package.sh
}

# The sanitized leg's verdict, after its other jobs: no sanitizer report in
# any of them, and a positive control: a heap overflow and a signed overflow
# built with the suites' flags must each leave a report.
suite_sanitizer() {
	local reports f ctl=$SCRATCH/control
	reports=$(ls "$RUN/reports" 2>/dev/null | grep -E '^(asan|ubsan)' || true)
	# a report a program printed to its own stderr (UBSan's always go there)
	if grep -hE 'runtime error:|ERROR: AddressSanitizer' "$JOBDIR"/newest-*.log >"$SCRATCH/in-output" 2>/dev/null; then
		cp "$SCRATCH/in-output" "$RUN/reports/in-output"
		reports="$reports in-output"
	fi
	if [ -n "$reports" ]; then
		for f in $reports; do
			echo "--- sanitizer report $f"
			head -60 "$RUN/reports/$f"
		done
		echo "sanitize: $(echo $reports | wc -w) sanitizer report(s)"
		LABEL="" record san-reports 0 1
	else
		echo "sanitize: no sanitizer report"
		LABEL="" record san-reports 1 0
	fi
	mkdir -p "$ctl"
	printf '%s\n' '#include <limits.h>' '#include <stdlib.h>' \
		'int main(int argc, char **argv) {' \
		'	if (argv[1][0] == 0x61) { volatile char *p = malloc(8); p[8] = 1; return p[0]; }' \
		'	int x = INT_MAX - 1 + argc; return x + argc; }' >"$ctl/control.c"
	# (AddressSanitizer writes to its log_path, UBSan to stderr: both kept)
	if gcc $DP_SANITIZE_FLAGS -o "$ctl/control" "$ctl/control.c" &&
		! ASAN_OPTIONS="detect_leaks=0:log_path=$ctl/heap" "$ctl/control" a 2>"$ctl/heap.stderr" &&
		! ASAN_OPTIONS="detect_leaks=0" UBSAN_OPTIONS="halt_on_error=1" "$ctl/control" u 2>"$ctl/signed.stderr" &&
		cat "$ctl"/heap.* | grep -q 'heap-buffer-overflow' && grep -q 'signed integer overflow' "$ctl/signed.stderr"; then
		echo "sanitizer positive control: passed, a heap overflow and a signed overflow each left a report"
		LABEL="" record san-control 1 0
	else
		echo "sanitizer positive control: FAILED, a deliberate heap overflow or signed overflow left no report"
		LABEL="" record san-control 0 1
	fi
}

# The build of leg $LEG: the server (the newest one built first) and dp_pg's
# test build in its private copy.
leg_build() {
	local bin ver
	if [ "$LEG" = newest ]; then
		echo "newest: the newest PostgreSQL of Debian unstable${DP_SANITIZE:+, with AddressSanitizer and UndefinedBehaviorSanitizer} (test/newpg.sh)"
		if ! bin=$(DP_NEWPG_SANITIZE=${DP_SANITIZE:-0} bash "$DP_ROOT/test/newpg.sh" | tail -1) || [ ! -x "$bin/pg_config" ]; then
			echo "newest: test/newpg.sh failed"
			LABEL=newest- record build 0 1
			return
		fi
		ver=$("$bin/pg_config" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')
		echo "pg$ver" >"$RUN/newest.label"
		LABEL=pg$ver-
		DP_PGBIN=$bin
		DP_PG_CONFIG=$bin/pg_config
	else
		DP_PGBIN=$SYSBIN
		DP_PG_CONFIG=$SYSBIN/pg_config
	fi
	echo "$LEG: dp_pg's test build into the private server copy $DP_TEST_PGROOT ($("$DP_PG_CONFIG" --version))"
	if ! dp_test_install; then
		record build 0 1
		return
	fi
	echo "$DP_PGBIN" >"$RUN/$LEG.pgbin"
	record build 1 0
	if [ "$LEG" = newest ] && [ -n "${DP_SANITIZE:-}" ]; then
		# the sanitized build is at -O1: check that the release flags (-O2)
		# compile without a warning against this version's headers too
		echo "$LEG: dp_pg at -O2 with -Werror against $("$DP_PG_CONFIG" --version) (compiled, not installed)"
		if dp_make_install "$DP_PG_CONFIG" "-O2" "$BUILDS/$LEG/O2" noinstall; then
			record build-O2 1 0
		else
			record build-O2 0 1
		fi
	fi
}

# ------------------------------------------------------------------------
# A job: bash test/all.sh --job LEG SUITE (the parent sets RUN)

if [ "${1:-}" = --job ]; then
	leg_env "$2"
	NAME=$3
	JOBDIR=$RUN/jobs
	COUNTS=$JOBDIR/$LEG-$NAME.counts
	: >"$COUNTS"
	SCRATCH=$(dp_scratch "dp_pg-$LEG-$NAME")
	trap 'dp_cluster_stop "$SCRATCH/pg"; [ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"' EXIT
	case $NAME in
	build) leg_build ;;
	# (a service a package starts, pgbouncer's or the exporter's, is stopped:
	# the suites run their own)
	packages) dp_install_tools $(cat "$RUN/packages") && LABEL="" record packages 1 0 || LABEL="" record packages 0 1 ;;
	sanitizer) suite_sanitizer ;;
	*)
		i=0
		for s in "${SUITES[@]}"; do [ "$s" = "$NAME" ] && break; i=$((i + 1)); done
		export DP_SUITE_PORT=$((DP_PORT + 100 + 10 * i))
		${S_CMD[$NAME]} ;;
	esac
	exit 0
fi

# ------------------------------------------------------------------------
# The parent: choose the jobs, install the packages, run the jobs, report.
# (All in functions, called from the last line: the whole script is read
# before the run starts, so editing it meanwhile cannot derail the run.)

# Is suite $1 chosen?
chosen() {
	local up
	up=$(echo "$1" | tr a-z- A-Z_)
	case $1 in layout | unit | stat) [ "${DP_TEST_C_SUITES:-1}" = 1 ] || return 1 ;; esac
	[ "$(eval echo "\${DP_TEST_$up:-1}")" = 0 ] && return 1
	[ -z "${DP_TEST_ONLY:-}" ] || case " $DP_TEST_ONLY " in *" $1 "*) ;; *) return 1 ;; esac
}

# "RANK LEG:NAME": the job's wall time in the last run on this machine, else
# its place in ORDER (longest first).
rank() {
	local j=$1 t i=0 s
	t=$(awk -v j="$j" '$1 == j {print int($2)}' "$HISTORY" 2>/dev/null | tail -1)
	if [ -z "$t" ]; then
		t=0
		for s in $ORDER; do i=$((i + 1)); [ "${j#*:}" = "$s" ] && t=$((1000 - i)); done
	fi
	echo "$t $j"
}

# Stop the jobs still running (an interrupted run) and remove the scratch
# (and the copy of the tree this run ran from, if it made one).
cleanup() {
	local j
	for j in "${!PIDS[@]}"; do kill "${PIDS[$j]}" 2>/dev/null; done
	[ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$RUN"
	[ -z "${DP_KEEP_SCRATCH:-}" ] && [ "${DP_SRC_COPY:-}" = "$DP_ROOT" ] && rm -rf "$DP_SRC_COPY"
	return 0
}

# Can the postgres user read the tree in $1 (what its jobs read there)?
pg_reads_tree() {
	runuser -u postgres -- sh -c 'test -r "$1/test/timed.pl" && test -r "$1/test/t/tests.conf" &&
		test -x "$1/test/t" && test -r "$1/test/attack/README.md"' sh "$1" 2>/dev/null
}

# Why the postgres user cannot read the tree in $1, in a few words.
why_unreadable() {
	local d="" part
	for part in $(echo "$1" | tr / ' '); do
		d="$d/$part"
		runuser -u postgres -- test -x "$d" 2>/dev/null ||
			{ echo "it cannot enter $d (mode $(stat -c %a "$d"), owner $(stat -c %U "$d"))"; return; }
	done
	echo "it cannot read files in it (test/timed.pl: mode $(stat -c %a "$1/test/timed.pl" 2>/dev/null || echo unknown))"
}

# The servers, and the TAP files beside them, run as the postgres user (the
# server refuses to run as root), and the TAP files read this tree (timed.pl,
# test/t, the attack corpus, docs/postgres_exporter.yaml).  A root user's
# clone that the postgres user cannot read (in /root, which is 0700; or made
# under umask 077) is copied to a scratch directory it can read, and the run
# goes on from there (the copy is removed at the end); if even that cannot
# be read, the run stops at once, saying why and what to do.
run_from_readable_tree() {
	local copy why commit
	[ "$(id -u)" = 0 ] || return 0
	if ! id -u postgres >/dev/null 2>&1; then
		# a fresh machine: the postgres user comes with the server's package
		dp_install_deps || return 0
		id -u postgres >/dev/null 2>&1 || return 0
	fi
	pg_reads_tree "$DP_ROOT" && return 0
	why=$(why_unreadable "$DP_ROOT")
	copy=$(mktemp -d "${TMPDIR:-/tmp}/dp_pg-src.XXXXXX") && chmod 755 "$copy" || copy=""
	if [ -n "$copy" ]; then
		if git -C "$DP_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
			# the work tree as it is (uncommitted changes included), without what git ignores
			(cd "$DP_ROOT" && git ls-files -z --cached --others --exclude-standard |
				while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
				tar --null -T - -cf -) | tar -C "$copy" -xf -
			commit=$(git -C "$DP_ROOT" rev-parse --short HEAD 2>/dev/null)
		else
			dp_sync_tree "$copy"
		fi
		chmod -R a+rX "$copy"
	fi
	if [ -z "$copy" ] || ! pg_reads_tree "$copy"; then
		[ -n "$copy" ] && rm -rf "$copy"
		echo "dp_pg: the test servers run as the postgres user, which cannot read $DP_ROOT ($why), nor a copy of it in ${TMPDIR:-/tmp}: clone dp_pg into a directory it can enter (e.g. /opt/dp_pg) and run bash test/all.sh there"
		exit 1
	fi
	echo "=== the postgres user cannot read $DP_ROOT ($why): running from a copy the test servers can read, $copy (removed at the end)"
	exec env DP_SRC_COPY="$copy" DP_SRC_COMMIT="${DP_SRC_COMMIT:-$commit}" bash "$copy/test/all.sh" "$@"
}


# One line of the timing table: job, wall, CPU, result.
timing_line() {
	TIMING="$TIMING$(printf '  %-22s %7s %7s  %s' "$1" "$2" "$3" "$4")"$'\n'
}

# What job NAME does, in a few words.
job_what() {
	case $1 in
	build) echo "the server and dp_pg's test build in its private copy" ;;
	packages) echo "the Debian packages of the suites: $(cat "$RUN/packages")" ;;
	sanitizer) echo "no sanitizer report in the leg's jobs; the sanitizers' positive control" ;;
	*) echo "${S_WHAT[$1]}" ;;
	esac
}

# The slowest TAP files of leg $1 ("name wall/CPU, ...", seconds).
slowest_tap() {
	head -6 "$JOBDIR/$1-tap.files" | awk '{printf "%s%s %.0f/%.0f", (NR > 1 ? ", " : ""), $1, $2, $3}'
}

# Print job $1's log, closed by its counts and time; add its results up.
report_job() {
	local j=$1 leg=${1%%:*} name=${1#*:} wall cpu rc n p f counts=""
	read -r wall cpu rc <"$JOBDIR/$leg-$name.res"
	echo
	echo "=== [$leg] $name — $(job_what "$name") (started $(date -d @"${STARTED[$j]}" +%T))"
	cat "$JOBDIR/$leg-$name.log"
	while read -r n p f d; do
		[ -n "$n" ] || continue
		d=${d:-0} note=""
		[ "$d" = 0 ] || note=" ($d of them test files that stopped before their plan)"
		total_passed=$((total_passed + p))
		total_failed=$((total_failed + f))
		total_noplan=$((total_noplan + d))
		summary="$summary$(printf '  %-22s %5d passed, %d failed%s' "$n" "$p" "$f" "$note")"$'\n'
		counts="$counts${counts:+; }$n $p passed, $f failed$note"
	done <"$JOBDIR/$leg-$name.counts"
	if [ -s "$JOBDIR/$leg-$name.counts.noplan" ]; then
		sed 's/^/stopped before their plan (their tests did not run): /' "$JOBDIR/$leg-$name.counts.noplan"
		noplan_lines="$noplan_lines$(cat "$JOBDIR/$leg-$name.counts.noplan")"$'\n'
	fi
	if [ -z "$counts" ]; then
		counts="no result (exit status $rc)"
		total_failed=$((total_failed + 1))
		summary="$summary$(printf '  %-22s %5d passed, %d failed' "$leg-$name" 0 1)"$'\n'
	fi
	echo "--- [$leg] $name: $counts — ${wall%.*} s (CPU ${cpu%.*} s)"
	timing_line "$leg $name" "$wall" "$cpu" "$counts"
	echo "$j $wall $cpu" >>"$RUN/timings"
	touch "$RUN/done/$j"
}

# Is job $1 ready to start?  0 ready, 1 not yet, 2 never (its leg's build failed).
ready() {
	local j=$1 leg=${1%%:*} name=${1#*:} k
	case $name in
	build | packages) return 0 ;;
	sanitizer)
		for k in "${JOBS[@]}"; do
			[ "${k%%:*}" = "$leg" ] && [ "$k" != "$j" ] && [ ! -f "$RUN/done/$k" ] && return 1
		done
		return 0 ;;
	esac
	[ "${S_NEEDS[$name]}" = - ] && return 0
	[ -z "$PKG_JOB" ] || [ -f "$RUN/done/all:packages" ] || return 1
	[ -f "$RUN/done/$leg:build" ] || return 1
	[ -f "$RUN/$leg.pgbin" ] || return 2
	# the newest leg's server suites may use the pg15 server too (DP_OLD_PGBIN)
	[ "$leg" = pg15 ] || case " $LEGS " in *" pg15 "*) [ -f "$RUN/done/pg15:build" ] || return 1 ;; esac
	return 0
}

# Start job $1 in the background, measured by test/timed.pl.  The critical
# paths run first: the builds (in a cold run the newest server's build is the
# longest job) and each leg's longest job run at normal priority, the others
# (and the servers they start) niced, filling the cores those leave idle.
start_job() {
	local j=$1 leg=${1%%:*} name=${1#*:} nice="nice -n 5"
	STARTED[$j]=$(date +%s)
	{ [ "$name" = build ] || [ "${LONG[$leg]:-}" = "$j" ]; } && nice=""
	echo "... [$leg] $name started at $(date +%T)"
	$nice perl "$DP_ROOT/test/timed.pl" "$JOBDIR/$leg-$name.res" bash "$SELF" --job "$leg" "$name" \
		>"$JOBDIR/$leg-$name.log" 2>&1 &
	PIDS[$j]=$!
}

# Run the jobs: DP_JOBS at a time; the builds, the packages job and each
# leg's longest server job (TAP: the critical path) start as soon as they can.
run_pool() {
	local j running rest pending=("${JOBS[@]}") maxjobs=${DP_JOBS:-$NCPU}
	for j in "${JOBS[@]}"; do
		case ${j#*:} in build | packages | sanitizer) continue ;; esac
		[ "${S_NEEDS[${j#*:}]}" = server ] && [ -z "${LONG[${j%%:*}]:-}" ] && LONG[${j%%:*}]=$j
	done
	while :; do
		running=0
		for j in "${!PIDS[@]}"; do
			if [ -f "$JOBDIR/${j%%:*}-${j#*:}.res" ]; then
				wait "${PIDS[$j]}" 2>/dev/null
				unset "PIDS[$j]"
				report_job "$j"
			else
				case ${j#*:} in build | packages) ;; *) [ "${LONG[${j%%:*}]:-}" = "$j" ] || running=$((running + 1)) ;; esac
			fi
		done
		rest=()
		for j in "${pending[@]}"; do
			ready "$j"
			case $? in
			0)
				if [ "${j#*:}" = build ] || [ "${j#*:}" = packages ] || [ "${LONG[${j%%:*}]:-}" = "$j" ]; then
					start_job "$j"
				elif [ "$running" -lt "$maxjobs" ]; then
					start_job "$j"
					running=$((running + 1))
				else
					rest+=("$j")
				fi ;;
			2)
				# the leg's build failed: the suite cannot run
				echo "$(leg_label "${j%%:*}")${j#*:} 0 1" >"$JOBDIR/${j%%:*}-${j#*:}.counts"
				echo "0.0 0.0 1" >"$JOBDIR/${j%%:*}-${j#*:}.res"
				echo "not run: the leg's build failed" >"$JOBDIR/${j%%:*}-${j#*:}.log"
				STARTED[$j]=$(date +%s)
				report_job "$j" ;;
			*) rest+=("$j") ;;
			esac
		done
		pending=("${rest[@]}")
		[ ${#pending[@]} = 0 ] && [ ${#PIDS[@]} = 0 ] && return
		if [ ${#PIDS[@]} = 0 ]; then
			echo "dp_pg: jobs that cannot start: ${pending[*]}"
			for j in "${pending[@]}"; do
				total_failed=$((total_failed + 1))
				summary="$summary$(printf '  %-22s %5d passed, %d failed' "${j/:/-}" 0 1)"$'\n'
			done
			return
		fi
		sleep 1
	done
}

# Print the timing table (and append it to DP_TIMING).
report_timing() {
	local leg cpu_sum
	cpu_sum=$(awk '{s += $3} END {printf "%.0f", s}' "$RUN/timings" 2>/dev/null)
	echo
	echo "=== timing (seconds; CPU: every process of the job, servers included; load average $LOAD_START at the start, $(cut -d' ' -f1 /proc/loadavg) at the end)"
	printf '  %-22s %7s %7s  %s\n' job wall CPU result
	printf '%s' "$TIMING"
	printf '  %-22s %7s %7s  %s\n' "whole run" "$((T_END - T_START))" "$cpu_sum" "the jobs' CPU time on $NCPU cores: at least $((cpu_sum / NCPU)) s of wall time"
	for leg in $LEGS; do
		[ -s "$JOBDIR/$leg-tap.files" ] && echo "  slowest TAP files ($leg; wall/CPU s): $(slowest_tap "$leg")"
	done
	[ -n "${DP_TIMING:-}" ] || return 0
	{
		echo
		echo "### $(date '+%F %T'), commit ${DP_SRC_COMMIT:-$(git -C "$DP_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}, legs $LEGS, $NCPU cores, load average $LOAD_START at the start"
		echo
		echo "| job | wall s | CPU s | result |"
		echo "|---|---:|---:|---|"
		printf '%s' "$TIMING" | sed 's/^  \(.\{22\}\) *\([^ ]*\) *\([^ ]*\)  \(.*\)$/| \1 | \2 | \3 | \4 |/; s/  *|/ |/g'
		echo "| **whole run** | **$((T_END - T_START))** | $cpu_sum | |"
		for leg in $LEGS; do
			[ -s "$JOBDIR/$leg-tap.files" ] && echo "| slowest TAP files ($leg; wall/CPU s) | | | $(slowest_tap "$leg") |"
		done
	} >>"$DP_TIMING"
	echo "  (appended to $DP_TIMING)"
}

run_all() {
	local leg s j t0 base_pkgs pkgs
	QUICK=""
	if [ "${1:-}" = --quick ]; then
		QUICK=1
		DP_TEST_LEGS=pg15
		DP_TEST_ONLY=${DP_TEST_ONLY:-layout unit regress}
	fi
	LEGS=${DP_TEST_LEGS:-pg15 newest}
	[ "${DP_TEST_NEWPG:-1}" = 1 ] || LEGS=${LEGS//newest/}
	LEGS=$(echo $LEGS)
	run_from_readable_tree "$@"

	RUN=$(dp_scratch dp_pg-run)
	export RUN DP_RUN_LEGS=$LEGS
	mkdir -p "$RUN/jobs" "$RUN/done" "$RUN/reports"
	chmod 1777 "$RUN/reports"
	JOBDIR=$RUN/jobs
	T_START=$(date +%s)
	LOAD_START=$(cut -d' ' -f1 /proc/loadavg)
	trap cleanup EXIT

	if [ "${DP_TEST_COLD:-0}" = 1 ]; then
		echo "=== cold run: deleting this run's caches"
		for s in "$ROOT15" "$ROOTNEW" "$BUILDS" ${DP_NEWPG_CACHE:+"$DP_NEWPG_CACHE"} \
			${DP_BI_NPM_CACHE:+"$DP_BI_NPM_CACHE"} ${DP_BI_NODE_DIR:+"$DP_BI_NODE_DIR"}; do
			echo "  rm -rf $s"
			rm -rf "$s"
		done
		[ -n "${DP_NEWPG_CACHE:-}" ] || echo "  (kept: the newest PostgreSQL's build in /var/tmp/dp_pg-newpg; set DP_NEWPG_CACHE to a directory of this run's own)"
		[ -n "${DP_BI_NODE_DIR:-}" ] || echo "  (kept: the BI leg's npm downloads and node_modules in /var/tmp; set DP_BI_NPM_CACHE and DP_BI_NODE_DIR)"
	fi

	# the jobs (LEG:NAME), longest first
	JOBS=()
	for leg in $LEGS; do
		JOBS+=("$leg:build")
		for s in "${SUITES[@]}"; do
			case ",${S_LEGS[$s]}," in *",$leg,"*) ;; *) continue ;; esac
			chosen "$s" || continue
			# on a plain newest build the plain-C suites would only repeat pg15's
			[ "$leg" = newest ] && [ "$SANITIZE" != 1 ] && [ "${S_NEEDS[$s]}" = - ] && continue
			JOBS+=("$leg:$s")
		done
		[ "$leg" = newest ] && [ "$SANITIZE" = 1 ] && JOBS+=("newest:sanitizer")
	done
	JOBS=($(for j in "${JOBS[@]}"; do rank "$j"; done | sort -k1,1nr -s | awk '{print $2}'))

	# the suites' packages: a job beside the first suites
	pkgs=""
	for j in "${JOBS[@]}"; do pkgs="$pkgs ${S_PKGS[${j#*:}]:-}"; done
	pkgs=$(echo $pkgs | tr ' ' '\n' | sort -u | tr '\n' ' ')
	echo "$pkgs" >"$RUN/packages"
	PKG_JOB=""
	[ -n "${pkgs// /}" ] && PKG_JOB=1 && JOBS=("all:packages" "${JOBS[@]}")

	echo "=== dp_pg tests: legs ${LEGS:-none}; ${#JOBS[@]} jobs, ${DP_JOBS:-$NCPU} at a time (and each leg's TAP), TAP files $TAP_JOBS at a time; load average $LOAD_START; scratch $RUN"

	# first the base packages and the newest server's build dependencies
	t0=$(date +%s)
	base_pkgs=""
	case " $LEGS " in *" newest "*) base_pkgs=$(bash "$DP_ROOT/test/newpg.sh" --packages) ;; esac
	if ! dp_install_deps $base_pkgs; then
		echo "dp_pg: the packages could not be installed"
		echo "total: 0 passed, 1 failed"
		return 1
	fi
	timing_line "base packages" "$(($(date +%s) - t0))" - "$(echo $DP_BASE_PACKAGES $base_pkgs | wc -w) packages present"

	run_pool
	T_END=$(date +%s)
	# this machine's history of times (the order of the next run): this
	# run's jobs, and the other jobs' last times
	mkdir -p "$BUILDS" && touch "$HISTORY" && [ -f "$RUN/timings" ] &&
		awk 'NR == FNR {seen[$1] = 1; print; next} !($1 in seen)' "$RUN/timings" "$HISTORY" >"$HISTORY.new" &&
		mv "$HISTORY.new" "$HISTORY"
	report_timing

	echo
	echo "=== dp_pg test summary ($("$SYSBIN/pg_config" --version)${QUICK:+; --quick: build, unit, regress and isolation on PostgreSQL 15 only})"
	printf '%s' "$summary"
	if [ "$total_noplan" != 0 ]; then
		printf 'stopped before their plan (their tests did not run; each counted as one failure):\n%s' "$noplan_lines" | sed '2,$s/^/  /'
		echo "total: $total_passed passed, $total_failed failed, $total_noplan of them test files that stopped before their plan: their tests did not run"
	else
		echo "total: $total_passed passed, $total_failed failed"
	fi
	[ "$total_failed" = 0 ]
}

ORDER="tap bi package fuzz stat regress unit layout"
HISTORY=${DP_HISTORY:-$BUILDS/timings}
declare -A PIDS STARTED LONG
JOBS=()
PKG_JOB=""
TIMING=""
total_passed=0
total_failed=0
total_noplan=0
noplan_lines=""
summary=""
run_all "$@"
exit
