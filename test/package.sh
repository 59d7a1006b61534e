#!/usr/bin/env bash
# test/package.sh — dp_pg as a package: META.json, the Debian package, and
# `make installcheck` against the installed release build.
#
#   bash test/package.sh      (as root on Debian 12; test/all.sh runs it as a leg)
#
#  1. META.json meets the PGXN Meta Spec 1.0.0 and agrees with the tree
#     (test/pgxn_meta.pl, with its positive controls).
#  2. The Debian package: a copy of the tracked files (a clean clone, no build
#     output), `dpkg-buildpackage -b -us -uc`, which must make one
#     postgresql-NN-dp-pg package per supported version; the one for
#     PostgreSQL $DP_PGVER is installed with apt-get.
#  3. The installed package in a throw-away cluster of the system's
#     PostgreSQL (dp_pg preloaded, CREATE EXTENSION in the ledger database):
#     it is the release build (no test switch), CREATE EXTENSION works, and
#     `make installcheck` passes and leaves nothing behind — the roles,
#     budgets, ledger rows, refused queries, kept answers and databases of
#     the server are the same after it as before.
# The package is removed again at the end unless it was installed before.
# Prints one "ok" / "not ok" line per check and ends with
# "package: N passed, M failed"; exits non-zero on a failure.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=${DP_PACKAGE_PORT:-$((${DP_PORT:-55432} + 60))}
passed=0
failed=0
# Record a check: "ok" / "not ok" and the counts.
check() {
	local ok=$1 what=$2
	if [ "$ok" = 0 ]; then
		echo "ok - $what"; passed=$((passed + 1))
	else
		echo "not ok - $what"; failed=$((failed + 1))
	fi
}
finish() {
	echo "package: $passed passed, $failed failed"
	[ "$failed" = 0 ]
	exit $?
}

SCRATCH=$(dp_scratch dp_pg-package)
pkg=postgresql-$DP_PGVER-dp-pg
was_installed=0
dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" && was_installed=1
cleanup() {
	dp_cluster_stop "$SCRATCH/pg"
	if [ "$was_installed" = 0 ] && dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
		dpkg --purge "$pkg" >/dev/null 2>&1
	fi
	[ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"
}
trap cleanup EXIT

echo "=== META.json (PGXN Meta Spec 1.0.0)"
perl "$DP_ROOT/test/pgxn_meta.pl" "$DP_ROOT/META.json" | tee "$SCRATCH/meta.out"
passed=$((passed + $(grep -c '^ok ' "$SCRATCH/meta.out")))
failed=$((failed + $(grep -c '^not ok ' "$SCRATCH/meta.out")))
grep -q '^pgxn_meta: ' "$SCRATCH/meta.out" || check 1 "test/pgxn_meta.pl ran to the end"

echo "=== the Debian package (dpkg-buildpackage -b -us -uc)"
if [ "$(id -u)" != 0 ]; then
	check 1 "building and installing the package needs root"
	finish
fi
dp_install_deps debhelper dpkg-dev fakeroot postgresql-server-dev-all libssl-dev >/dev/null || check 1 "the build dependencies install"
# the tracked files only, as a clone has them (no build output of this tree)
mkdir -p "$SCRATCH/src/dp_pg"
if git -C "$DP_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$DP_ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf -) | tar -xf - -C "$SCRATCH/src/dp_pg"
else
	cp -a "$DP_ROOT/." "$SCRATCH/src/dp_pg/"
fi
(cd "$SCRATCH/src/dp_pg" && dpkg-buildpackage -b -us -uc) >"$SCRATCH/build.log" 2>&1
check $? "dpkg-buildpackage -b -us -uc builds the packages (log: build.log)" || true
[ "$failed" = 0 ] || tail -n 40 "$SCRATCH/build.log"
# one package per version debian/control lists (pg_buildext checks it
# against debian/pgversions and the versions supported here)
versions=$(sed -n 's/^Package: postgresql-\([0-9]*\)-dp-pg$/\1/p' "$SCRATCH/src/dp_pg/debian/control")
for v in $versions; do
	ls "$SCRATCH/src"/postgresql-"$v"-dp-pg_*.deb >/dev/null 2>&1
	check $? "postgresql-$v-dp-pg is built"
done
deb=$(ls "$SCRATCH/src/${pkg}"_*.deb 2>/dev/null | head -1)
if [ -z "$deb" ]; then
	check 1 "$pkg is built"
	finish
fi
dpkg-deb -c "$deb" >"$SCRATCH/contents"
grep -q "/usr/lib/postgresql/$DP_PGVER/lib/dp_pg.so$" "$SCRATCH/contents" &&
	grep -q "/usr/share/postgresql/$DP_PGVER/extension/dp_pg.control$" "$SCRATCH/contents" &&
	grep -q "/usr/share/postgresql/$DP_PGVER/extension/dp_pg--0.1.0--0.2.0.sql$" "$SCRATCH/contents" &&
	grep -q "/usr/share/doc/$pkg/examples/postgres_exporter.yaml$" "$SCRATCH/contents"
check $? "$pkg holds the library, the control file, the install and upgrade scripts and the exporter's query file"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall "$deb" >"$SCRATCH/install.log" 2>&1
check $? "apt-get install $(basename "$deb")" || { cat "$SCRATCH/install.log"; finish; }

echo "=== make installcheck against the installed package"
mkdir -p "$SCRATCH/pg"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$SCRATCH/pg"
# the server's defaults, answer cache on, as a user's server has them
if ! DP_ANSWER_CACHE=on dp_cluster_start "$SCRATCH/pg" "$PORT" || ! dp_ledger_db "$SCRATCH/pg" "$PORT" postgres; then
	check 1 "a cluster with dp_pg preloaded starts and CREATE EXTENSION dp_pg works in its ledger database"
	finish
fi
check 0 "a cluster with dp_pg preloaded starts and CREATE EXTENSION dp_pg works in its ledger database"
dp_psql "$SCRATCH/pg" "$PORT" postgres -Atc "SELECT extversion FROM pg_extension WHERE extname = 'dp_pg'" | grep -qx 0.2.0
check $? "the installed extension is version 0.2.0"
dp_psql "$SCRATCH/pg" "$PORT" postgres -c "SHOW dp_pg.debug_noiseless" >/dev/null 2>&1
[ $? != 0 ]
check $? "the packaged library is the release build (no test switch such as dp_pg.debug_noiseless)"
dp_psql "$SCRATCH/pg" "$PORT" postgres -c "CREATE DATABASE pkg_other" -c "ALTER DATABASE pkg_other OWNER TO postgres" &&
	dp_psql "$SCRATCH/pg" "$PORT" pkg_other -Atc "CREATE EXTENSION dp_pg; SELECT dp_pg.ledger_status()" | grep -qx ready &&
	dp_psql "$SCRATCH/pg" "$PORT" pkg_other -Atc "SELECT dp_count(*) IS NOT NULL FROM generate_series(1, 10)" | grep -qx t &&
	dp_psql "$SCRATCH/pg" "$PORT" postgres -c "DROP DATABASE pkg_other"
check $? "CREATE EXTENSION dp_pg in another database, and a dp query there"

# everything the server holds, before and after
state() {
	dp_psql "$SCRATCH/pg" "$PORT" postgres -At <<'SQL'
SELECT 'role ' || rolname FROM pg_roles ORDER BY 1;
SELECT 'database ' || datname FROM pg_database ORDER BY 1;
SELECT 'budget ' || role::text FROM dp_pg.budgets ORDER BY 1;
SELECT 'ledger rows ' || count(*) FROM dp_pg.ledger_entries;
SELECT 'refusals ' || count(*) FROM dp_pg.guard_refusal_log;
SELECT 'kept answers ' || count(*) FROM dp_pg.answer_cache;
SELECT 'role settings ' || count(*) FROM pg_db_role_setting;
SQL
	echo "answer directories $(find "$SCRATCH/pg/data/dp_pg_answers" -mindepth 1 2>/dev/null | wc -l)"
}
state >"$SCRATCH/before"
# pg_regress runs as the invoking user; the source tree is read by psql only
(cd "$DP_ROOT" && PGHOST="$SCRATCH/pg" PGPORT=$PORT PGUSER=postgres \
	make -s installcheck PG_CONFIG="$DP_PG_CONFIG" EXTRA_REGRESS_OPTS="--outputdir=$SCRATCH/regress") \
	>"$SCRATCH/installcheck.out" 2>&1
rc=$?
grep -E '^(test |ok |not ok |=+|.*tests (passed|failed))' "$SCRATCH/installcheck.out"
check $rc "make installcheck passes against the installed release build"
[ $rc = 0 ] || { [ -f "$SCRATCH/regress/regression.diffs" ] && head -n 200 "$SCRATCH/regress/regression.diffs"; }
sleep 1
state >"$SCRATCH/after"
diff "$SCRATCH/before" "$SCRATCH/after"
check $? "make installcheck leaves nothing behind (roles, databases, budgets, ledger rows, refusals, kept answers, settings)"
finish
