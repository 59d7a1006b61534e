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
# and the generator legs (test/bi/gen): questions whose SQL real libraries
# write, run through their real drivers, judged by test/bi/gen/judge.py against
# test/bi/gen/expect/<leg>.txt:
#
#   dbplyr      R dbplyr with RPostgreSQL (r-cran-dbplyr, r-cran-rpostgresql)
#   sqlalchemy  SQLAlchemy Core as Superset's query builder (python3-sqlalchemy)
#   pandas      pandas read_sql (python3-pandas)
#   pgcli       pgcli's connect, completion refresh and backslash commands
#   pgbouncer   SQLAlchemy through pgbouncer in transaction pooling
#   knex        knex with node-postgres (npm)
#   malloy      Malloy's compiler and its Postgres connection (npm)
#   cube        Cube's schema compiler 0.33 and node-postgres (npm)
#
#   bash test/bi/run.sh        (as root, or the postgres user with the packages installed)
#   DP_BI_LEGS="knex malloy" bash test/bi/run.sh     (some of the legs; default all)
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
ALL_TOOLS="metabase tableau superset"
ALL_GEN="dbplyr sqlalchemy pandas pgcli pgbouncer knex malloy cube"
LEGS=${DP_BI_LEGS:-$ALL_TOOLS $ALL_GEN}
TOOLS=""
GEN=""
for leg in $LEGS; do
	case " $ALL_TOOLS " in *" $leg "*) TOOLS="$TOOLS $leg"; continue ;; esac
	case " $ALL_GEN " in *" $leg "*) GEN="$GEN $leg"; continue ;; esac
	echo "test/bi/run.sh: unknown leg $leg (legs: $ALL_TOOLS $ALL_GEN)" >&2
	exit 2
done
GEN_DIR=$BI_DIR/gen
BOUNCER_PORT=$((PORT + 1))
# npm's download cache and the installed node_modules, kept between runs
NPM_CACHE=${DP_BI_NPM_CACHE:-/var/tmp/dp_pg-npm-cache}
NODE_DIR=${DP_BI_NODE_DIR:-/var/tmp/dp_pg-bi-node}

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

# the Debian packages of the chosen legs
pkgs="python3-psycopg2"
for leg in $TOOLS; do
	case $leg in
	metabase) pkgs="$pkgs default-jdk-headless libpostgresql-jdbc-java" ;;
	tableau) pkgs="$pkgs odbc-postgresql unixodbc python3-pyodbc" ;;
	esac
done
# every generator leg reads carData's SLID, loaded through R
[ -n "$GEN" ] && pkgs="$pkgs r-base-core r-cran-dbi r-cran-rpostgresql r-cran-cardata"
for leg in $GEN; do
	case $leg in
	dbplyr) pkgs="$pkgs r-cran-dbplyr" ;;
	sqlalchemy) pkgs="$pkgs python3-sqlalchemy" ;;
	pandas) pkgs="$pkgs python3-pandas python3-sqlalchemy" ;;
	pgcli) pkgs="$pkgs pgcli" ;;
	pgbouncer) pkgs="$pkgs pgbouncer python3-sqlalchemy" ;;
	knex | malloy | cube) command -v npm >/dev/null || pkgs="$pkgs nodejs npm" ;;
	esac
done
if ! dp_install_deps $pkgs; then
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
trap 'stop_bouncer; dp_cluster_stop "$PGDIR"; [ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"' EXIT
stop_bouncer() {
	[ -f "$SCRATCH/bouncer/pgbouncer.pid" ] && kill "$(cat "$SCRATCH/bouncer/pgbouncer.pid")" 2>/dev/null
	return 0
}

# node_modules of test/bi/gen/node for the npm legs: installed by npm ci from the
# committed package-lock.json into NODE_DIR/<the lock's checksum> (once per lock;
# npm's downloads cached in NPM_CACHE), used through NODE_PATH
node_modules() {
	local sum dir tmp
	sum=$(cat "$GEN_DIR/node/package.json" "$GEN_DIR/node/package-lock.json" | sha256sum | cut -c1-16)
	dir=$NODE_DIR/$sum
	if [ ! -f "$dir/node_modules/.dp_pg-installed" ]; then
		mkdir -p "$NODE_DIR" "$NPM_CACHE" || return 1
		tmp=$(mktemp -d "$NODE_DIR/install.XXXXXX") || return 1
		cp "$GEN_DIR/node/package.json" "$GEN_DIR/node/package-lock.json" "$tmp/" &&
			(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --cache "$NPM_CACHE" >npm.log 2>&1) &&
			touch "$tmp/node_modules/.dp_pg-installed" || { cat "$tmp/npm.log" >&2; rm -rf "$tmp"; return 1; }
		# another run may have installed the same lock meanwhile: keep the first
		mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
	fi
	export NODE_PATH=$dir/node_modules
}
case " $GEN " in
*" knex "* | *" malloy "* | *" cube "*)
	t0=$(date +%s)
	if node_modules; then
		ok "npm ci of test/bi/gen/node ($(($(date +%s) - t0)) s, $NODE_PATH)"
	else
		not_ok "npm ci of test/bi/gen/node failed"
		GEN=$(echo "$GEN" | sed 's/ knex\b//; s/ malloy\b//; s/ cube\b//')
	fi ;;
esac

echo "=== BI drivers and generators:${TOOLS}${GEN}; port $PORT"
# listen_addresses comes after dp_cluster_start's default ('') and wins;
# initdb --auth=trust trusts local and host connections.  The prefix's %e
# gives each logged error its SQLSTATE (test/bi/gen/judge.py)
if DP_LEDGER_DB=$DB dp_cluster_start "$PGDIR" "$PORT" "listen_addresses = '127.0.0.1'
log_line_prefix = '%m [%p] %u %e '" &&
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

# the generator legs' data and analysts: the shop, carData's SLID, a role per leg
if [ -n "$GEN" ]; then
	if dp_psql "$PGDIR" "$PORT" $DB -f "$GEN_DIR/shop.sql" >"$OUT/gen_setup.out" 2>&1 &&
		Rscript "$GEN_DIR/cardata.R" "$PGDIR" "$PORT" $DB postgres >>"$OUT/gen_setup.out" 2>&1 &&
		dp_psql "$PGDIR" "$PORT" $DB -f "$GEN_DIR/cardata.sql" >>"$OUT/gen_setup.out" 2>&1 &&
		for leg in $GEN; do
			dp_psql "$PGDIR" "$PORT" $DB -v role="gen_$leg" -f "$GEN_DIR/role.sql" >>"$OUT/gen_setup.out" 2>&1 || exit 1
		done; then
		ok "setup of the generator legs (test/bi/gen/shop.sql, carData's SLID, a role for each of${GEN})"
	else
		cat "$OUT/gen_setup.out"
		not_ok "setup of the generator legs"
		GEN=""
	fi
fi
case " $GEN " in
*" pgbouncer "*)
	# pgbouncer in transaction pooling on 127.0.0.1:BOUNCER_PORT in front of
	# the cluster's socket, as the postgres user (it refuses to run as root)
	mkdir -p "$SCRATCH/bouncer"
	cat >"$SCRATCH/bouncer/pgbouncer.ini" <<INI
[databases]
$DB = host=$PGDIR port=$PORT dbname=$DB
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $SCRATCH/bouncer/users.txt
pool_mode = transaction
default_pool_size = 2
max_client_conn = 50
server_check_query = select 1
server_check_delay = 0
ignore_startup_parameters = extra_float_digits,application_name
logfile = $SCRATCH/bouncer/pgbouncer.log
pidfile = $SCRATCH/bouncer/pgbouncer.pid
INI
	echo '"gen_pgbouncer" ""' >"$SCRATCH/bouncer/users.txt"
	[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$SCRATCH/bouncer"
	if dp_as_pg pgbouncer -d "$SCRATCH/bouncer/pgbouncer.ini" && sleep 0.5 &&
		[ -f "$SCRATCH/bouncer/pgbouncer.pid" ]; then
		ok "pgbouncer $(pgbouncer --version | head -n 1 | awk '{print $2}') in transaction pooling on port $BOUNCER_PORT"
	else
		cat "$SCRATCH/bouncer/pgbouncer.log" 2>/dev/null
		not_ok "pgbouncer did not start"
		GEN=$(echo "$GEN" | sed 's/ pgbouncer\b//')
	fi ;;
esac

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

# the generator legs: the leg's program asks its questions, judge.py judges
for leg in $GEN; do
	t0=$(date +%s)
	args=("$OUT/$leg.steps" "$PGDIR" "$PORT" $DB postgres "gen_$leg")
	case $leg in
	dbplyr) cmd=(Rscript "$GEN_DIR/dbplyr.R") ;;
	knex | malloy | cube) cmd=(node "$GEN_DIR/$leg.js") ;;
	pgbouncer) cmd=("$PYTHON" "$GEN_DIR/pgbouncer_leg.py"); args+=("$BOUNCER_PORT") ;;
	*) cmd=("$PYTHON" "$GEN_DIR/${leg}_leg.py") ;;
	esac
	timeout -k 10 600 "${cmd[@]}" "${args[@]}" >"$OUT/$leg.out" 2>&1
	rc=$?
	if [ $rc != 0 ]; then
		tail -n 30 "$OUT/$leg.out"
		not_ok "$leg program: exited with $rc"
	fi
	"$PYTHON" "$GEN_DIR/judge.py" ${DP_BI_FLIP:+--flip} "$leg" "$GEN_DIR/expect/$leg.txt" "$OUT/$leg.steps" \
		"$PGDIR/server.log" "$PGDIR" "$PORT" $DB postgres "gen_$leg" >"$OUT/$leg.judged" 2>&1
	grep -E '^(not )?ok |^#   ' "$OUT/$leg.judged"
	passed=$((passed + $(grep -c '^ok ' "$OUT/$leg.judged")))
	failed=$((failed + $(grep -c '^not ok ' "$OUT/$leg.judged")))
	if grep -q "^# $leg: [0-9]* passed" "$OUT/$leg.judged"; then
		grep "^# $leg: " "$OUT/$leg.judged"
		echo "# $leg: $(($(date +%s) - t0)) s"
	else
		tail -n 20 "$OUT/$leg.judged"
		not_ok "$leg judge: exited without its summary"
	fi
done

# the judge's positive control: wrong expectations for the sqlalchemy leg's
# steps, each must fail for the reason its comment names
case " $GEN " in
*" sqlalchemy "*)
	"$PYTHON" "$GEN_DIR/judge.py" sqlalchemy "$GEN_DIR/control.txt" "$OUT/sqlalchemy.steps" "$PGDIR/server.log" \
		"$PGDIR" "$PORT" $DB postgres gen_sqlalchemy >"$OUT/control_judge.out" 2>&1
	missed=""
	n=0
	while read -r name fires; do
		n=$((n + 1))
		grep -F "not ok sqlalchemy $name: " "$OUT/control_judge.out" | grep -qF "$fires" || missed="$missed $name"
		grep -q "^ok sqlalchemy $name " "$OUT/control_judge.out" && missed="$missed $name(ok)"
	done < <(sed -n 's/^\([a-z0-9_]*\) .*# fires "\([^"]*\)".*/\1 \2/p' "$GEN_DIR/control.txt")
	if [ -z "$missed" ] && [ "$n" -gt 0 ]; then
		ok "control judge ($n wrong expectations, each oracle fired)"
	else
		grep -E '^(not )?ok ' "$OUT/control_judge.out" | sed 's/^/  | /' | head -n 40
		not_ok "control judge: did not fire for${missed:- some entries}"
	fi ;;
esac

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
if [ -z "$TOOLS" ]; then
	:	# the generator legs check their roles' ledgers themselves
elif [ "$ledger" = "$counted" ]; then
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
