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

# The Debian packages dp_pg builds and tests with on PostgreSQL $DP_PGVER (the
# test command installs these, test/newpg.sh's build dependencies and the
# suites' own packages: test/all.sh DP_SUITE_PACKAGES; README lists them all).
DP_BASE_PACKAGES="postgresql-$DP_PGVER postgresql-server-dev-$DP_PGVER postgresql-contrib libssl-dev libipc-run-perl make gcc perl rsync"

# Install the base packages and the extra packages named as arguments (only
# missing ones), in one apt transaction.  Runs of several suites (and of
# other checkouts on the same machine) may install at once: apt is entered
# under one lock file, and waits for dpkg's own lock.
dp_install_deps() {
	local pkgs="$DP_BASE_PACKAGES $*"
	local missing=""
	local p
	for p in $pkgs; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	[ -n "$missing" ] || return 0
	if [ "$(id -u)" != 0 ]; then
		echo "dp_pg: missing packages:$missing (run as root to install them)" >&2
		return 1
	fi
	echo "dp_pg: installing$missing"
	(
		export DEBIAN_FRONTEND=noninteractive
		flock 9
		# another run may have installed them while this one waited
		missing=$(for p in $missing; do
			dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
		done)
		[ -n "$missing" ] || exit 0
		apt-get -o DPkg::Lock::Timeout=600 update -qq &&
			apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
	) 9>/var/lock/dp_pg-apt.lock
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

# Build with PG_CONFIG $1 and extra compiler flags $2 and install.  With a
# build directory $3, the source tree is copied there first (dp_sync_tree) and
# built there, and the build is skipped when sources, flags and server are
# those of the build already installed (a key in $3/.dp_pg-build); without
# one, make clean and build in the source tree.  $4 = noinstall: build only.
dp_make_install() {
	local pgc=$1 flags=$2 dir=${3:-$DP_ROOT} install=${4:-install} key=""
	local mk=(make -C "$dir" -s -j"$(nproc)" PG_CONFIG="$pgc" COPT="-Werror $flags")
	if [ -n "${3:-}" ]; then
		dp_sync_tree "$dir" || return 1
		key="$(cd "$dir" && find Makefile ./*.control src sql -type f ! -name '*.o' ! -name '*.so' ! -name '*.bc' |
			LC_ALL=C sort | xargs cksum | cksum) $flags $("$pgc" --version) $(cksum <"$("$pgc" --bindir)/postgres")"
		if [ "$(cat "$dir/.dp_pg-build" 2>/dev/null)" = "$key" ] &&
			{ [ "$install" = noinstall ] || [ -f "$("$pgc" --pkglibdir)/dp_pg.so" ]; }; then
			echo "dp_pg: sources, flags and server unchanged since the last build in $dir: not rebuilt"
			return 0
		fi
		rm -f "$dir/.dp_pg-build"
	fi
	"${mk[@]}" clean >/dev/null
	"${mk[@]}" || return 1
	if [ "$install" = noinstall ]; then
		:
	elif [ "$(id -u)" = 0 ]; then
		"${mk[@]}" install || return 1
	else
		sudo "${mk[@]}" install || return 1
	fi
	[ -z "$key" ] || echo "$key" >"$dir/.dp_pg-build"
}

# Copy the source tree (no .git, no build products) to $1, keeping the build
# products already there: rsync updates only what changed and deletes what
# the tree no longer has, so make there rebuilds only what changed.
dp_sync_tree() {
	local dest=$1
	mkdir -p "$dest" || return 1
	if command -v rsync >/dev/null; then
		rsync -a --delete --exclude=/.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
			--exclude=/test/unit/bin --exclude=/test/stat/bin --exclude=/test/bench/bin \
			--exclude='/.dp_pg-*' --exclude=node_modules --exclude=tmp_check --exclude=results \
			--exclude=/log --exclude=/.deps "$DP_ROOT/" "$dest/"
	else
		# no rsync: a fresh copy every time (everything is rebuilt)
		find "$dest" -mindepth 1 -delete &&
			tar -C "$DP_ROOT" --exclude=./.git -cf - . | tar -C "$dest" -xf -
	fi
}

# The test build: dp_pg compiled with -DDP_PG_TEST_SWITCHES, which adds the
# superuser-only test switches (dp_pg.debug_noiseless, dp_pg.debug_poison_charge)
# and the test-only debug functions.  It is never installed into the system's
# PostgreSQL: it goes into a private copy of that server (binaries, libraries,
# share files; headers by symlink) under DP_TEST_PGROOT, default
# /var/tmp/dp_pg-test-pg<version>, refreshed when the system's server changes.
# PostgreSQL finds its libraries relative to its own binary, so the copy is a
# complete server of its own.  dp_pg is built in a copy of the source tree,
# $DP_TEST_PGROOT/build, and not rebuilt while sources, flags and server stay
# the same (dp_make_install).  Points DP_PGBIN, DP_PG_CONFIG and PATH at it.
dp_test_install() {
	local root=${DP_TEST_PGROOT:-/var/tmp/dp_pg-test-pg$DP_PGVER}
	local bindir sharedir incdir top stamp
	case "$DP_PGBIN" in
	"$root"/*)	# already pointing at the copy (a suite run by test/all.sh)
		dp_make_install "$DP_PG_CONFIG" "-DDP_PG_TEST_SWITCHES${DP_SANITIZE:+ $DP_SANITIZE_FLAGS}" "$root/build" &&
			dp_install_fixtures
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
	dp_make_install "$DP_PG_CONFIG" "-DDP_PG_TEST_SWITCHES${DP_SANITIZE:+ $DP_SANITIZE_FLAGS}" "$root/build" &&
		dp_install_fixtures
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

# Extensions of Debian packages that TAP tests use (pg_partman: t/109_partman.pl)
# are installed into the system's PostgreSQL; copy their files into the
# private server copy of DP_PG_CONFIG when the package of its major version is
# installed (test/all.sh's suite_tap, after the suites' packages).  A copy
# without them (the newest leg: no Debian package of pg_partman for it) makes
# those tests skip.
dp_install_packaged_extensions() {
	local major pkg f lib share
	major=$("$DP_PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
	lib=$("$DP_PG_CONFIG" --pkglibdir) share=$("$DP_PG_CONFIG" --sharedir)/extension
	for pkg in "postgresql-$major-partman"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || continue
		for f in $(dpkg -L "$pkg"); do
			case "$f" in
			/usr/lib/postgresql/"$major"/lib/*.so) [ "$lib" = "$(dirname "$f")" ] || cp "$f" "$lib/" ;;
			/usr/share/postgresql/"$major"/extension/*) [ "$share" = "$(dirname "$f")" ] || cp "$f" "$share/" ;;
			esac
		done
	done
}

# Create a scratch directory readable by the postgres user; prints its path.
# $1 names it (default dp_pg: $TMPDIR/dp_pg.XXXXXX, TMPDIR default /tmp).
dp_scratch() {
	local d
	d=$(mktemp -d "${TMPDIR:-/tmp}/${1:-dp_pg}.XXXXXX")
	chmod 755 "$d"
	[ "$(id -u)" = 0 ] && id -u postgres >/dev/null 2>&1 && chown postgres:postgres "$d"
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

# Stop the cluster in $1 (ignore errors: it may already be down).  On a
# server built with the sanitizers (test/all.sh sets DP_SANITIZER_REPORTS), a
# report UndefinedBehaviorSanitizer wrote into the server's log (its reports
# go to stderr even with a log_path) is copied into that directory.
dp_cluster_stop() {
	dp_as_pg "$DP_PGBIN/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null 2>&1 || true
	if [ -n "${DP_SANITIZER_REPORTS:-}" ] && grep -q 'runtime error:' "$1/server.log" 2>/dev/null; then
		grep -B2 -A30 'runtime error:' "$1/server.log" >"$DP_SANITIZER_REPORTS/ubsan-server.$(basename "$(dirname "$1")").$$"
	fi
	return 0
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
