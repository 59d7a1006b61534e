#!/usr/bin/env bash
# test/bench/release_install.sh — install dp_pg's RELEASE build (the flags of
# `make` and of the Debian package: no -DDP_PG_TEST_SWITCHES) into a private
# copy of the server, for benchmarks that must not measure the test build and
# must not touch the system's PostgreSQL.
#
#   bash test/bench/release_install.sh ROOT [SOURCE_DIR]
#
# ROOT: where the private copy lives (made once: the server's lib and share
# directories copied, its headers linked, as test/lib.sh's dp_test_install
# does for the test build); SOURCE_DIR: the dp_pg tree to build (default:
# this one), e.g. `git archive <commit> | tar -x -C DIR` for an earlier
# release.  The build happens in ROOT/build (a copy of SOURCE_DIR).  Prints
# the copy's bindir last: pass it as DP_PGBIN to the benchmarks, e.g.
#
#   B=$(bash test/bench/release_install.sh /var/tmp/dp_pg-rel | tail -1)
#   DP_PGBIN=$B bash test/bench/unit_bench.sh
set -euo pipefail
ROOT=${1:?usage: release_install.sh ROOT [SOURCE_DIR]}
SRC=$(cd "${2:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)
PGVER=${DP_PGVER:-15}
PGC=/usr/lib/postgresql/$PGVER/bin/pg_config

bindir=$("$PGC" --bindir)
sharedir=$("$PGC" --sharedir)
incdir=$("$PGC" --includedir)
top=$(dirname "$bindir")
stamp="$("$PGC" --version) $(cksum <"$bindir/postgres")"
if [ "$(cat "$ROOT/.stamp" 2>/dev/null)" != "$stamp" ]; then
	echo "dp_pg: preparing the private server copy in $ROOT"
	rm -rf "$ROOT"
	mkdir -p "$ROOT$(dirname "$top")"
	cp -a "$top" "$ROOT$top"
	case "$sharedir" in
	"$top"/*) ;;
	*) mkdir -p "$ROOT$(dirname "$sharedir")" && cp -a "$sharedir" "$ROOT$sharedir" ;;
	esac
	case "$incdir" in
	"$top"/*) ;;
	*) mkdir -p "$ROOT$(dirname "$incdir")" && ln -sfn "$incdir" "$ROOT$incdir" ;;
	esac
	echo "$stamp" >"$ROOT/.stamp"
fi
mkdir -p "$ROOT/build"
rsync -a --delete --exclude=/.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' --exclude=/test \
	--exclude=/log --exclude=/.deps "$SRC/" "$ROOT/build/"
PGC=$ROOT$bindir/pg_config
make -C "$ROOT/build" -s clean PG_CONFIG="$PGC" >/dev/null
make -C "$ROOT/build" -s -j"$(nproc)" PG_CONFIG="$PGC" COPT="-Werror" >/dev/null
make -C "$ROOT/build" -s install PG_CONFIG="$PGC" >/dev/null
echo "dp_pg release build of $SRC ($(cd "$SRC" && git describe --always --dirty 2>/dev/null || echo 'no git')) installed in $ROOT$bindir"
echo "$ROOT$bindir"
