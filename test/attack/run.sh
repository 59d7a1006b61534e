#!/usr/bin/env bash
# Run only the attack corpus TAP test (test/t/060_attack_corpus.pl), exactly
# as test/all.sh runs TAP tests: build and install dp_pg's test build, copy test/t to a
# postgres-owned scratch directory, prove as postgres.
#   DP_PGBIN=...            another PostgreSQL 15 installation (test/lib.sh)
#   ATTACK_REPORT_ONLY=1    report leaks as diagnostics instead of failing
#   ATTACK_ONLY=regex       run only the attacks whose id matches
#   ATTACK_VERBOSE=1        note what the analyst received in each attack
#   ATTACK_NO_BUILD=1       skip the build and install
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
[ -n "${ATTACK_NO_BUILD:-}" ] || dp_test_install || exit 1
PGXS_DIR=$(dirname "$("$DP_PG_CONFIG" --pgxs)")/../..
SCRATCH=$(dp_scratch)
trap '[ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/tap"
cp -r "$DP_ROOT/test/t" "$SCRATCH/tap/t"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$SCRATCH/tap"
# every node starts with test/t/tests.conf (the answer cache off), as in test/all.sh
cd "$SCRATCH/tap" && dp_as_pg env PATH="$PATH" TESTDIR="$SCRATCH/tap" DP_ROOT="$DP_ROOT" \
	TEMP_CONFIG="$SCRATCH/tap/t/tests.conf" \
	ATTACK_REPORT_ONLY="${ATTACK_REPORT_ONLY:-}" ATTACK_ONLY="${ATTACK_ONLY:-}" ATTACK_VERBOSE="${ATTACK_VERBOSE:-}" \
	ATTACK_LEAK_FILE="${ATTACK_LEAK_FILE:-}" DP_ATTACK_PORT="${DP_ATTACK_PORT:-}" \
	PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" \
	prove -v -I "$PGXS_DIR/src/test/perl" -I t t/060_attack_corpus.pl
