#!/usr/bin/env bash
# test/bi/run.sh — the BI driver leg: the SQL that Metabase, Tableau and
# Superset send, run as an analyst through their real client drivers from
# Debian 12 packages, each statement checked against its expected outcome
# (test/bi/README.md):
#
#   Metabase  PostgreSQL JDBC driver (libpostgresql-jdbc-java), Runner.java
#   Tableau   psqlODBC through unixODBC (odbc-postgresql), pyodbc, runner.py
#   Superset  psycopg2 (python3-psycopg2), runner.py
#
#   bash test/bi/run.sh        (as root, or the postgres user with the packages installed)
#
# Assumes dp_pg's test build is installed into the server of DP_PGBIN
# (test/all.sh does that; standalone: see test/bi/README.md).  Starts a
# throw-away cluster in a scratch directory on port DP_BI_PORT (default
# DP_PORT + 40, DP_PORT default 55432), listening on its Unix socket and on
# 127.0.0.1 (the JDBC driver needs TCP), creates the tables of
# test/bi/setup.sql, runs the corpora test/bi/corpus/{metabase,tableau,superset}.txt
# and the positive control test/bi/control.txt through each driver.
#
# Prints "ok TOOL NAME ..." or "not ok TOOL NAME: REASON" per statement, the
# leg's own checks as "ok bi ..." / "not ok bi ...", and ends with
# "bi: N passed, M failed"; exits non-zero on any failure.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

BI_DIR=$DP_ROOT/test/bi
DP_PORT=${DP_PORT:-55432}
PORT=${DP_BI_PORT:-$((DP_PORT + 40))}
DB=dp_bi
ANALYST=analyst
JAVA=/usr/bin/java
PYTHON=/usr/bin/python3	# Debian's, with python3-pyodbc and python3-psycopg2
JDBC_JAR=/usr/share/java/postgresql.jar
TOOLS="metabase tableau superset"

t_begin=$(date +%s)
passed=0
failed=0
ok() { echo "ok bi $*"; passed=$((passed + 1)); }
not_ok() { echo "not ok bi $*"; failed=$((failed + 1)); }
finish() {
	echo "# bi runtime: $(($(date +%s) - t_begin)) s ($("$DP_PG_CONFIG" --version))"
	echo "bi: $passed passed, $failed failed"
	[ "$failed" = 0 ]
	exit
}

if ! dp_install_deps default-jdk-headless libpostgresql-jdbc-java odbc-postgresql unixodbc \
	python3-pyodbc python3-psycopg2; then
	not_ok "packages: could not install the drivers"
	finish
fi
if [ ! -f "$("$DP_PG_CONFIG" --pkglibdir)/dp_pg.so" ]; then
	not_ok "build: dp_pg is not installed into the server of $DP_PGBIN (see test/bi/README.md)"
	finish
fi

# psqlODBC's Unicode driver, named by its file in a DSN-less connection string
# (no odbcinst.ini needed)
BI_ODBC_DRIVER=$(dpkg -L odbc-postgresql 2>/dev/null | grep '/psqlodbcw\.so$' | head -n 1)
export BI_ODBC_DRIVER=${BI_ODBC_DRIVER:-/usr/lib/x86_64-linux-gnu/odbc/psqlodbcw.so}

SCRATCH=$(dp_scratch dp_bi)
PGDIR=$SCRATCH/pg
OUT=$SCRATCH/out
mkdir -p "$PGDIR" "$OUT"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$PGDIR"
trap 'dp_cluster_stop "$PGDIR"; [ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"' EXIT

echo "=== BI drivers: Metabase (JDBC), Tableau (psqlODBC), Superset (psycopg2); port $PORT"
# listen_addresses comes after dp_cluster_start's default ('') and wins;
# initdb --auth=trust trusts local and host connections
if DP_LEDGER_DB=$DB dp_cluster_start "$PGDIR" "$PORT" "listen_addresses = '127.0.0.1'
log_line_prefix = '%m [%p] %u '" &&
	dp_ledger_db "$PGDIR" "$PORT" $DB &&
	dp_psql "$PGDIR" "$PORT" $DB -f "$BI_DIR/setup.sql" >"$OUT/setup.out" 2>&1; then
	ok "setup (cluster, CREATE EXTENSION dp_pg, test/bi/setup.sql)"
else
	[ -f "$OUT/setup.out" ] && cat "$OUT/setup.out"
	not_ok "setup (cluster, CREATE EXTENSION dp_pg, test/bi/setup.sql)"
	finish
fi

# run_tool TOOL FILE OUTPUT: one runner over one file, as the analyst
run_tool() {
	local tool=$1 file=$2 out=$3
	case $tool in
	metabase)
		timeout -k 10 600 "$JAVA" -cp "$JDBC_JAR" "$BI_DIR/Runner.java" "$file" 127.0.0.1 "$PORT" $DB $ANALYST postgres ;;
	*)
		timeout -k 10 600 "$PYTHON" "$BI_DIR/runner.py" "$tool" "$file" "$PGDIR" "$PORT" $DB $ANALYST postgres ;;
	esac >"$out" 2>&1
}

# the corpora: one line per statement, counted here
counted=0
for tool in $TOOLS; do
	run_tool $tool "$BI_DIR/corpus/$tool.txt" "$OUT/$tool.out"
	rc=$?
	grep -E '^(not )?ok ' "$OUT/$tool.out"
	p=$(grep -c '^ok ' "$OUT/$tool.out")
	f=$(grep -c '^not ok ' "$OUT/$tool.out")
	passed=$((passed + p))
	failed=$((failed + f))
	if summary=$(grep "^# $tool: " "$OUT/$tool.out"); then
		echo "$summary"
		counted=$((counted + $(echo "$summary" | sed -n 's/.* \([0-9]*\) charges$/\1/p')))
	else
		# the runner died (a parse error of the corpus, a driver that did not load)
		grep -vE '^(not )?ok ' "$OUT/$tool.out" | tail -n 20
		not_ok "$tool runner: exited with $rc without its summary"
	fi
done

# the positive control: every wrong expectation must fail, for its reason
n_control=$(grep -c '^=== ' "$BI_DIR/control.txt")
for tool in $TOOLS; do
	run_tool $tool "$BI_DIR/control.txt" "$OUT/control_$tool.out"
	if summary=$(grep "^# $tool: " "$OUT/control_$tool.out"); then
		counted=$((counted + $(echo "$summary" | sed -n 's/.* \([0-9]*\) charges$/\1/p')))
	fi
	missed=""
	while read -r name fires; do
		grep -F "not ok $tool $name: " "$OUT/control_$tool.out" | grep -qF "$fires" || missed="$missed $name"
	done < <(awk '/^=== /{n=$2} /^note: fires "/{s=$0; sub(/^note: fires "/, "", s); sub(/".*/, "", s); print n, s}' "$BI_DIR/control.txt")
	if [ -z "$missed" ] && [ "$(grep -c '^ok ' "$OUT/control_$tool.out")" = 0 ] &&
		[ "$(grep -c '^not ok ' "$OUT/control_$tool.out")" = "$n_control" ]; then
		ok "control $tool ($n_control wrong expectations, each oracle fired)"
	else
		sed 's/^/  | /' "$OUT/control_$tool.out" | head -n 40
		not_ok "control $tool: did not fire for${missed:- some entries}"
	fi
done

# every charge of the analyst was seen by a runner: none outside the statements
ledger=$(dp_psql "$PGDIR" "$PORT" $DB -Atc "SELECT count(*) FROM dp_pg.ledger_entries WHERE role = '$ANALYST'::regrole AND kind = 'charge'")
if [ "$ledger" = "$counted" ]; then
	ok "ledger ($ledger charges of the analyst, each seen after its statement)"
else
	not_ok "ledger: $ledger charges of the analyst in the ledger, the runners saw $counted"
fi

# the server stayed up, and answers the analyst
if ! grep -qE 'terminated by signal|PANIC|was terminated|server process .* exited with exit code [^0]' "$PGDIR/server.log" &&
	[ "$(psql -X -h "$PGDIR" -p "$PORT" -U $ANALYST -d $DB -Atc "SELECT count(*) >= 0 FROM public.visits" 2>&1)" = t ]; then
	ok "server (no crash, still answering the analyst)"
else
	grep -E 'terminated by signal|PANIC|was terminated|exited with exit code' "$PGDIR/server.log" | head -n 10
	not_ok "server: crashed or not answering"
fi

finish
