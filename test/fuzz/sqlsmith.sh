#!/usr/bin/env bash
# test/fuzz/sqlsmith.sh — sqlsmith as a hostile analyst against the query guard.
#
#   bash test/fuzz/sqlsmith.sh            (as root or the postgres user)
#
# Starts a throw-away cluster with dp_pg preloaded, creates the database of
# test/fuzz/setup.sql (two protected tables full of canary values, one with a
# privacy unit; public tables; a view and SECURITY DEFINER functions over the
# protected tables granted to the analyst; an analyst with a huge budget), then
# lets sqlsmith generate and run random SQL as the analyst: most of the queries
# without the system catalogs (--exclude-catalog), SQLSMITH_CATALOG_PERCENT of
# them with.  sqlsmith never writes a query the guard answers, so
# test/fuzz/derive.pl also puts every predicate sqlsmith wrote on a protected
# table into dp queries of the guard's shape.  Every statement (sqlsmith's, the
# derived ones, and test/fuzz/sanity.sql: dp queries that must be answered and
# charged) is then replayed as the analyst by test/fuzz/replay.pl.  Oracles,
# each a failure:
#
#   crash   the server stays up for the whole run: no backend terminated by a
#           signal, no PANIC, no crash restart, the postmaster still runs and
#           answers at the end (also as the analyst, ledger ready);
#   leak    no canary secret (the private strings and numbers, the protected
#           tables' row counts and sizes, test/fuzz/secrets.sql) appears in any
#           replayed statement's rows, error message or notices;
#   charge  every replayed statement that names a protected table or a view or
#           function over one and succeeds has charged the analyst's budget.
#
# Environment: SQLSMITH_QUERIES (default 2000), SQLSMITH_SEED (default 1),
# SQLSMITH_CATALOG_PERCENT (default 20), SQLSMITH_CHUNK (queries per sqlsmith
# run, default 500; run k has seed SQLSMITH_SEED + k), DP_FUZZ_PORT (default 55470),
# FUZZ_OUT (keep queries, logs and violations there; default: a scratch
# directory, removed), DP_FUZZ_SKIP_BUILD=1 (dp_pg already built and
# installed, as test/all.sh does), FUZZ_REPLAY=FILE (no sqlsmith: replay the
# statements of FILE instead, each ending with ";" at the end of a line, e.g.
# the violations of an earlier run), FUZZ_POSITIVE_CONTROL=1 (break the system on
# purpose — a backend killed by SIGSEGV, `patients` unprotected and granted
# to the analyst, hand-written leaking queries — so that every oracle must
# report a violation).
#
# Ends with one line per oracle ("fuzz oracle NAME: ok" or "... VIOLATION")
# and "fuzz result: PASS" or "fuzz result: FAIL"; exits non-zero on any
# violation or if the harness itself failed.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

FUZZ_DIR=$DP_ROOT/test/fuzz
PORT=${DP_FUZZ_PORT:-55470}
QUERIES=${SQLSMITH_QUERIES:-2000}
SEED=${SQLSMITH_SEED:-1}
CATALOG_PERCENT=${SQLSMITH_CATALOG_PERCENT:-20}
CONTROL=${FUZZ_POSITIVE_CONTROL:-0}
[ "$CONTROL" = 0 ] && CONTROL=""
DB=dp_fuzz
ANALYST=analyst
# protected tables and views over them: a statement naming one touches
# protected data; functions over them: a statement calling one does (oracle charge)
TOUCH='\b(patients|visits|patient_view|visit_view)\b'
FUNCTIONS=patient_name,ward_visit_count,ward_dp_count

t_begin=$(date +%s)
harness_fail() {
	echo "fuzz oracle harness: FAILED ($*)"
	echo "fuzz result: FAIL"
	exit 2
}

dp_install_deps sqlsmith libdbd-pg-perl || harness_fail "missing packages"
if [ -z "${DP_FUZZ_SKIP_BUILD:-}" ]; then
	dp_test_install || harness_fail "build"
fi

SCRATCH=$(dp_scratch dp_fuzz)
OUT=${FUZZ_OUT:-$SCRATCH/out}
mkdir -p "$OUT" "$SCRATCH/pg"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/queries_*.sql "$OUT"/sqlsmith_*.err "$OUT"/statements.tsv "$OUT"/violations.txt "$OUT"/summary.txt
[ "$(id -u)" = 0 ] && chown postgres:postgres "$SCRATCH/pg"
trap 'dp_cluster_stop "$SCRATCH/pg"; [ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"' EXIT
PGDIR=$SCRATCH/pg
LOG=$PGDIR/server.log

echo "=== sqlsmith fuzz: $QUERIES queries, seed $SEED, port $PORT${CONTROL:+, POSITIVE CONTROL}"
DP_LEDGER_DB=$DB dp_cluster_start "$PGDIR" "$PORT" "log_line_prefix = '%m [%p] %u '
max_connections = 30
track_functions = all" || harness_fail "cluster start"
dp_ledger_db "$PGDIR" "$PORT" $DB || harness_fail "ledger database"
dp_psql "$PGDIR" "$PORT" $DB -f "$FUZZ_DIR/setup.sql" >"$OUT/setup.out" 2>&1 ||
	{ cat "$OUT/setup.out"; harness_fail "setup.sql"; }
dp_psql "$PGDIR" "$PORT" $DB -f "$FUZZ_DIR/secrets.sql" >"$OUT/secrets.txt" 2>"$OUT/secrets.err" ||
	{ cat "$OUT/secrets.err"; harness_fail "secrets.sql"; }
echo "secrets: $(grep -c '^N ' "$OUT/secrets.txt") numbers, $(grep -c '^S ' "$OUT/secrets.txt") sizes, prefixes $(sed -n 's/^P //p' "$OUT/secrets.txt" | tr '\n' ' ')"

# ---- sqlsmith as the analyst (it sets statement_timeout = 1s itself)
n_cat=$((QUERIES * CATALOG_PERCENT / 100))
n_nocat=$((QUERIES - n_cat))
CONN="host=$PGDIR port=$PORT dbname=$DB user=$ANALYST"
# sqlsmith in runs of at most CHUNK queries, each with its own seed: sqlsmith
# blacklists the productions that keep failing ("impedance"), and against the
# guard most do (joins, subqueries, CTEs, DML), so a long run would stop
# writing them; a new run starts afresh
CHUNK=${SQLSMITH_CHUNK:-500}
next_seed=$SEED
smith() {
	local name=$1 n=$2 m rc runs=0
	shift 2
	: >"$OUT/queries_$name.sql"
	: >"$OUT/sqlsmith_$name.err"
	while [ "$n" -gt 0 ]; do
		m=$((n < CHUNK ? n : CHUNK))
		# generous wall-clock limit: a hang of the server is a failure too
		timeout -k 10 $((60 + m / 5)) sqlsmith --target="$CONN" --seed="$next_seed" --max-queries="$m" \
			--dump-all-queries --verbose "$@" >>"$OUT/queries_$name.sql" 2>>"$OUT/sqlsmith_$name.err"
		rc=$?
		# killed by the time limit: the server may hang (a failure); any other
		# exit of sqlsmith itself is its own problem: the statements it wrote
		# are replayed all the same
		case $rc in
		0) ;;
		124 | 137) echo "sqlsmith ($name, seed $next_seed) did not finish in time"; smith_failed=1 ;;
		*) echo "sqlsmith ($name, seed $next_seed) exited with $rc (warning)" ;;
		esac
		next_seed=$((next_seed + 1))
		runs=$((runs + 1))
		n=$((n - m))
	done
	echo "sqlsmith ($name): $(grep -c ';[[:space:]]*$' "$OUT/queries_$name.sql") queries generated in $runs runs"
}
smith_failed=""
t0=$(date +%s)
if [ -n "${FUZZ_REPLAY:-}" ]; then
	cp "$FUZZ_REPLAY" "$OUT/queries_replay.sql" || harness_fail "no file $FUZZ_REPLAY"
else
	[ "$n_nocat" -gt 0 ] && smith nocatalog "$n_nocat" --exclude-catalog
	[ "$n_cat" -gt 0 ] && smith catalog "$n_cat"
	# sqlsmith's predicates on a protected table, put into dp queries the guard
	# may answer (test/fuzz/derive.pl)
	perl "$FUZZ_DIR/derive.pl" "$OUT"/queries_nocatalog.sql "$OUT"/queries_catalog.sql \
		>"$OUT/queries_derived.sql" || harness_fail "derive.pl"
fi
t_smith=$(($(date +%s) - t0))

# ---- positive control: break the system so that every oracle must fire
if [ -n "$CONTROL" ]; then
	echo "--- positive control: SIGSEGV to a backend, patients unprotected and granted, leaking queries"
	psql -X -h "$PGDIR" -p "$PORT" -U $ANALYST -d $DB -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
	sleeper=$!
	pid=""
	for i in $(seq 1 50); do
		pid=$(dp_psql "$PGDIR" "$PORT" $DB -Atc "SELECT pid FROM pg_stat_activity WHERE usename = '$ANALYST' AND query LIKE '%pg_sleep(60)%'")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] && kill -SEGV "$pid"
	wait $sleeper
	for i in $(seq 1 100); do
		dp_psql "$PGDIR" "$PORT" $DB -Atc "SELECT dp_pg.ledger_status()" 2>/dev/null | grep -q ready && break
		sleep 0.2
	done
	dp_psql "$PGDIR" "$PORT" $DB -c "SELECT dp_pg.unprotect('patients'); GRANT SELECT ON patients TO $ANALYST" >/dev/null
	cat >"$OUT/queries_control.sql" <<'SQL'
select name, ssn from public.patients order by id limit 3;
select count(*) as c0 from public.patients;
SQL
fi

# ---- replay every generated statement as the analyst
echo "--- replay"
t0=$(date +%s)
# after sqlsmith's statements, a few hand-written dp queries the guard must
# answer and charge (sqlsmith itself almost never writes one): they show that
# answered statements are seen and their charges counted
cp "$FUZZ_DIR/sanity.sql" "$OUT/queries_sanity.sql"
qfiles=()
for f in nocatalog catalog derived replay sanity control; do
	[ -f "$OUT/queries_$f.sql" ] && qfiles+=("$OUT/queries_$f.sql")
done
# a wall-clock limit far above what the replay needs (about 5 ms a statement)
n_stmts=$(cat "${qfiles[@]}" | grep -c ';[[:space:]]*$')
timeout -k 10 $((300 + n_stmts / 10)) perl "$FUZZ_DIR/replay.pl" --host "$PGDIR" --port "$PORT" --db $DB --analyst $ANALYST \
	--secrets "$OUT/secrets.txt" --touch "$TOUCH" --functions "$FUNCTIONS" --out "$OUT" "${qfiles[@]}"
replay_rc=$?
t_replay=$(($(date +%s) - t0))

# ---- oracle crash: the server log, the postmaster, a last query
crash=0
crash_why=""
if grep -E "terminated by signal|server process .* was terminated|exited with exit code ([2-9]|[1-9][0-9]+)|PANIC:|TRAP:|all server processes terminated|terminating any other active server processes" "$LOG" >"$OUT/crash_lines.txt"; then
	crash=$((crash + $(wc -l <"$OUT/crash_lines.txt")))
	crash_why="server log: $(head -1 "$OUT/crash_lines.txt")"
fi
if ! dp_as_pg "$DP_PGBIN/pg_ctl" -D "$PGDIR/data" status >/dev/null 2>&1; then
	crash=$((crash + 1)); crash_why="$crash_why; postmaster not running"
fi
if ! psql -X -At -h "$PGDIR" -p "$PORT" -U $ANALYST -d $DB -c "SELECT 1" >/dev/null 2>&1 ||
	[ "$(dp_psql "$PGDIR" "$PORT" $DB -Atc 'SELECT dp_pg.ledger_status()' 2>/dev/null)" != ready ]; then
	crash=$((crash + 1)); crash_why="$crash_why; final query failed"
fi
cp "$LOG" "$OUT/server.log" 2>/dev/null

# ---- summary
get() { sed -n "s/^$1=//p" "$OUT/summary.txt" 2>/dev/null | head -1; }
leak=$(get leak); charge=$(get charge)
generated=$(cat "$OUT"/queries_nocatalog.sql "$OUT"/queries_catalog.sql 2>/dev/null | grep -c ';[[:space:]]*$')
echo
echo "=== sqlsmith fuzz summary"
echo "queries generated by sqlsmith: $generated (asked for $QUERIES), replayed: $(get executed) of $(get statements)"
echo "time: sqlsmith ${t_smith}s, replay ${t_replay}s, total $(($(date +%s) - t_begin))s; files in $OUT"
[ -s "$OUT/violations.txt" ] && { echo "--- violations (first 60 lines of $OUT/violations.txt)"; head -60 "$OUT/violations.txt"; }
fail=0
report() {
	if [ "$2" = 0 ]; then echo "fuzz oracle $1: ok"
	else echo "fuzz oracle $1: VIOLATION ($2) $3"; fail=1; fi
}
if [ $replay_rc != 0 ] || [ -z "$leak" ] || [ -z "$charge" ]; then
	echo "fuzz oracle harness: FAILED (replay exited with $replay_rc)"; fail=1
elif [ -n "$smith_failed" ]; then
	echo "fuzz oracle harness: FAILED (sqlsmith did not finish in time)"; fail=1
fi
report crash "$crash" "$crash_why"
report leak "${leak:-?}" "statements whose output holds a canary secret"
report charge "${charge:-?}" "statements that read protected data and charged nothing"
if [ $fail = 0 ]; then echo "fuzz result: PASS"; else echo "fuzz result: FAIL"; fi
exit $fail
