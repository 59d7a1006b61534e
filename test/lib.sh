# test/lib.sh — shared by test/all.sh and test/demo.sh (sourced, not run).
#
# Installs what dp_pg needs on Debian 12, builds and installs the extension,
# and starts / stops throw-away clusters as the postgres system user (the
# server refuses to run as root) in a scratch directory on a private port.

DP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DP_PGVER=${DP_PGVER:-15}
DP_PGBIN=${DP_PGBIN:-/usr/lib/postgresql/$DP_PGVER/bin}
DP_PG_CONFIG=$DP_PGBIN/pg_config
export PATH="$DP_PGBIN:$PATH"

# Run a command as the postgres system user when we are root.
dp_as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# Install the Debian packages dp_pg builds and tests with (only missing ones),
# and the extra packages named as arguments.
dp_install_deps() {
	local pkgs="postgresql-$DP_PGVER postgresql-server-dev-$DP_PGVER postgresql-contrib libssl-dev libipc-run-perl make gcc perl $*"
	local missing=""
	local p
	for p in $pkgs; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		if [ "$(id -u)" != 0 ]; then
			echo "dp_pg: missing packages:$missing (run as root to install them)" >&2
			return 1
		fi
		echo "dp_pg: installing$missing"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends $missing >/dev/null
	fi
}

# Install Debian packages that the tests run as programs of their own
# (pgbouncer, prometheus-postgres-exporter) without leaving their system
# services running: a service the install started is stopped and disabled.
dp_install_tools() {
	local p newly=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || newly="$newly $p"
	done
	[ -n "$newly" ] || return 0
	dp_install_deps $newly || return 1
	if [ -d /run/systemd/system ]; then
		for p in $newly; do
			systemctl disable --now "$p" >/dev/null 2>&1 || true
		done
	fi
}

# Build and install the release build of the extension into the PostgreSQL
# of DP_PGBIN (warnings are errors).  This is what the demo and users get.
dp_build_install() {
	dp_make_install "$DP_PG_CONFIG" ""
}

# make clean, build and install with PG_CONFIG $1 and extra compiler flags $2.
dp_make_install() {
	local pgc=$1 flags=$2
	make -C "$DP_ROOT" -s PG_CONFIG="$pgc" COPT="-Werror $flags" clean >/dev/null
	make -C "$DP_ROOT" -s PG_CONFIG="$pgc" COPT="-Werror $flags" || return 1
	if [ "$(id -u)" = 0 ]; then
		make -C "$DP_ROOT" -s PG_CONFIG="$pgc" install
	else
		sudo make -C "$DP_ROOT" -s PG_CONFIG="$pgc" install
	fi
}

# The test build: dp_pg compiled with -DDP_PG_TEST_SWITCHES, which adds the
# superuser-only test switches (dp_pg.debug_noiseless, dp_pg.debug_poison_charge)
# and the test-only debug functions.  It is never installed into the system's
# PostgreSQL: it goes into a private copy of that server (binaries, libraries,
# share files; headers by symlink) under DP_TEST_PGROOT, default
# /var/tmp/dp_pg-test-pg<version>, refreshed when the system's server changes.
# PostgreSQL finds its libraries relative to its own binary, so the copy is a
# complete server of its own.  Points DP_PGBIN, DP_PG_CONFIG and PATH at it.
dp_test_install() {
	local root=${DP_TEST_PGROOT:-/var/tmp/dp_pg-test-pg$DP_PGVER}
	local bindir sharedir incdir top stamp
	case "$DP_PGBIN" in
	"$root"/*)	# already pointing at the copy (a suite run by test/all.sh)
		dp_make_install "$DP_PG_CONFIG" "-DDP_PG_TEST_SWITCHES${DP_SANITIZE:+ $DP_SANITIZE_FLAGS}" && dp_install_fixtures
		return ;;
	esac
	bindir=$("$DP_PG_CONFIG" --bindir) || return 1
	sharedir=$("$DP_PG_CONFIG" --sharedir) || return 1
	incdir=$("$DP_PG_CONFIG" --includedir) || return 1
	top=$(dirname "$bindir")
	stamp="$("$DP_PG_CONFIG" --version) $(cksum <"$bindir/postgres")"
	if [ "$(cat "$root/.stamp" 2>/dev/null)" != "$stamp" ]; then
		echo "dp_pg: preparing the private server copy for the test build in $root"
		rm -rf "$root"
		mkdir -p "$root$(dirname "$top")" || return 1
		cp -a "$top" "$root$top" || return 1
		# a packaged server keeps its share files and headers elsewhere (a
		# server built from source keeps them under its prefix, copied above)
		case "$sharedir" in
		"$top"/*) ;;
		*) mkdir -p "$root$(dirname "$sharedir")" && cp -a "$sharedir" "$root$sharedir" || return 1 ;;
		esac
		case "$incdir" in
		"$top"/*) ;;
		*) mkdir -p "$root$(dirname "$incdir")" && ln -sfn "$incdir" "$root$incdir" || return 1 ;;
		esac
		echo "$stamp" >"$root/.stamp"
	fi
	export DP_PGBIN=$root$bindir
	DP_PG_CONFIG=$DP_PGBIN/pg_config
	export PATH="$DP_PGBIN:$PATH"
	dp_make_install "$DP_PG_CONFIG" "-DDP_PG_TEST_SWITCHES${DP_SANITIZE:+ $DP_SANITIZE_FLAGS}" && dp_install_fixtures
}

# With DP_SANITIZE=1 (test/sanitize.sh) the test build is compiled with
# AddressSanitizer and UndefinedBehaviorSanitizer, for a server built with
# them too (test/newpg.sh with DP_NEWPG_SANITIZE=1).
DP_SANITIZE_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g"

# Test fixtures for the private server copy only: the stand-in extension
# named citus (test/fixtures), so that the suites can check that dp_pg
# refuses dp queries beside Citus.
dp_install_fixtures() {
	cp "$DP_ROOT"/test/fixtures/citus.control "$DP_ROOT"/test/fixtures/citus--0.sql \
		"$("$DP_PG_CONFIG" --sharedir)/extension/"
}

# Create a scratch directory readable by the postgres user; prints its path.
# $1 names it (default dp_pg: $TMPDIR/dp_pg.XXXXXX, TMPDIR default /tmp).
dp_scratch() {
	local d
	d=$(mktemp -d "${TMPDIR:-/tmp}/${1:-dp_pg}.XXXXXX")
	chmod 755 "$d"
	[ "$(id -u)" = 0 ] && chown postgres:postgres "$d"
	echo "$d"
}

# Start a cluster in $1 on port $2 with dp_pg preloaded; extra conf lines in $3.
dp_cluster_start() {
	local dir=$1 port=$2 extra=${3:-}
	dp_as_pg "$DP_PGBIN/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log"; return 1; }
	dp_as_pg tee -a "$dir/data/postgresql.conf" >/dev/null <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
shared_preload_libraries = 'dp_pg'
dp_pg.ledger_database = '${DP_LEDGER_DB:-postgres}'
max_parallel_workers_per_gather = 2
# suites count the charges of repeated queries: the answer cache is on only
# where a suite asks for it (sql/cache.sql, the demo)
dp_pg.answer_cache = ${DP_ANSWER_CACHE:-off}
$extra
CONF
	dp_as_pg "$DP_PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null ||
		{ cat "$dir/server.log"; return 1; }
}

# psql against the cluster in $1 on port $2 as postgres: dp_psql DIR PORT DB args...
dp_psql() {
	local dir=$1 port=$2 db=$3
	shift 3
	psql -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d "$db" "$@"
}

# Create database $3 with dp_pg in it and wait until the ledger worker is ready.
dp_ledger_db() {
	local dir=$1 port=$2 db=$3 i
	if [ "$db" != postgres ]; then
		dp_psql "$dir" "$port" postgres -c "CREATE DATABASE $db" || return 1
	fi
	dp_psql "$dir" "$port" "$db" -c "CREATE EXTENSION dp_pg" || return 1
	for i in $(seq 1 100); do
		[ "$(dp_psql "$dir" "$port" "$db" -Atc 'SELECT dp_pg.ledger_status()')" = ready ] && return 0
		sleep 0.2
	done
	echo "dp_pg: ledger worker not ready" >&2
	return 1
}

# Stop the cluster in $1 (ignore errors: it may already be down).
dp_cluster_stop() {
	dp_as_pg "$DP_PGBIN/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null 2>&1 || true
}

# Latency percentiles of one pgbench session against the cluster in $SCRATCH
# on $DP_PORT (benchmarks): dp_bench_latency USER SCRIPT TAG [SECONDS]; SCRIPT
# is $SCRATCH/SCRIPT.sql; SECONDS defaults to $SECONDS_PER_RUN.  Percentiles
# come from pgbench's per-transaction log (column 3: microseconds).
dp_bench_latency() {
	local user=$1 script=$2 tag=$3 secs=${4:-$SECONDS_PER_RUN}
	rm -f "$SCRATCH"/pgbench_log.*
	(cd "$SCRATCH" && dp_as_pg "$DP_PGBIN/pgbench" -n -h "$SCRATCH" -p "$DP_PORT" -U "$user" -c 1 -T "$secs" \
		-f "$SCRATCH/$script.sql" -l postgres >/dev/null 2>&1)
	cat "$SCRATCH"/pgbench_log.* | awk '{print $3}' | sort -n |
		awk -v tag="$tag" '{a[NR]=$1} END {printf "%-60s n=%-7d p50=%.3f ms  p99=%.3f ms\n", tag, NR, a[int(NR*0.5)]/1000, a[int(NR*0.99)]/1000}'
}
