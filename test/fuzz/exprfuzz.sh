#!/usr/bin/env bash
# test/fuzz/exprfuzz.sh — the expression fuzzer (test/fuzz/exprfuzz.pl) on a
# throw-away cluster: random accepted row expressions on rows made to break
# them must never fail where they succeed on an empty table; then its
# positive control (PostgreSQL's own operators let through with the test
# build's dp_pg.debug_raw_operators) must be caught.
#
#   bash test/fuzz/exprfuzz.sh        (as root or the postgres user; test build installed)
#
# Environment: EXPRFUZZ_N (expressions, default 2000), EXPRFUZZ_SEED
# (default: the day of the year, so that runs explore), EXPRFUZZ_CONTROL_N
# (the control's expressions, default 1000: it stops at its third violation),
# DP_SUITE_PORT (default 55480).  Ends with "exprfuzz: N passed, M failed".
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PORT=${DP_SUITE_PORT:-55480}
N=${EXPRFUZZ_N:-2000}
SEED=${EXPRFUZZ_SEED:-$((10#$(date +%j)))}
dp_install_deps libdbd-pg-perl || { echo "exprfuzz: 0 passed, 1 failed"; exit 1; }
SCRATCH=$(dp_scratch dp_exprfuzz)
trap 'dp_cluster_stop "$SCRATCH/pg"; [ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/pg"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$SCRATCH/pg"
t0=$(date +%s)
if ! dp_cluster_start "$SCRATCH/pg" "$PORT" "fsync = off
max_parallel_workers_per_gather = 0" || ! dp_ledger_db "$SCRATCH/pg" "$PORT" postgres; then
	echo "exprfuzz: the cluster did not start"
	echo "exprfuzz: 0 passed, 1 failed"
	exit 1
fi
dp_psql "$SCRATCH/pg" "$PORT" postgres -c "CREATE ROLE fz_analyst LOGIN" \
	-c "SELECT dp_pg.set_budget('fz_analyst', epsilon => 1e12, delta => 0.5)" >/dev/null
SU="dbi:Pg:dbname=postgres;host=$SCRATCH/pg;port=$PORT;user=postgres"
AN="dbi:Pg:dbname=postgres;host=$SCRATCH/pg;port=$PORT;user=fz_analyst"

P=0 F=0
perl "$DP_ROOT/test/fuzz/exprfuzz.pl" "$SU" "$AN" "$N" "$SEED" | tee "$SCRATCH/run.out"
line=$(grep -E '^exprfuzz: [0-9]+ passed, [0-9]+ failed$' "$SCRATCH/run.out" | tail -1)
if [ -n "$line" ]; then
	P=$((P + $(echo "$line" | sed 's/exprfuzz: \([0-9]*\) passed.*/\1/')))
	F=$((F + $(echo "$line" | sed 's/.* passed, \([0-9]*\) failed/\1/')))
else
	echo "exprfuzz: the fuzzer did not finish"
	F=$((F + 1))
fi
echo "--- exprfuzz positive control: dp_pg.debug_raw_operators keeps PostgreSQL's operators; violations must be found"
EXPRFUZZ_CONTROL=1 perl "$DP_ROOT/test/fuzz/exprfuzz.pl" "$SU" "$AN" "${EXPRFUZZ_CONTROL_N:-1000}" "$SEED" |
	tee "$SCRATCH/control.out" | grep -E '^(exprfuzz control|VIOLATION)' | head -8
if grep -q '^exprfuzz control: 1 passed, 0 failed$' "$SCRATCH/control.out"; then
	P=$((P + 1))
else
	F=$((F + 1))
fi
if grep -E 'TRAP:|terminated by signal|PANIC' "$SCRATCH/pg/server.log" >/dev/null 2>&1; then
	echo "exprfuzz: the server crashed:"
	grep -E 'TRAP:|terminated by signal|PANIC' "$SCRATCH/pg/server.log" | head -5
	F=$((F + 1))
fi
echo "exprfuzz: $(($(date +%s) - t0)) s"
echo "exprfuzz: $P passed, $F failed"
[ "$F" = 0 ]
