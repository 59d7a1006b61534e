#!/usr/bin/env bash
# test/bench/sqlsmith_bench.sh — the sqlsmith fuzz run of test/fuzz/sqlsmith.sh
# (sqlsmith as a hostile analyst; oracles crash, leak, charge) with many more
# queries, for a long run outside CI.
#
#   bash test/bench/sqlsmith_bench.sh          (as root or the postgres user)
#
# SQLSMITH_QUERIES (default 50000), SQLSMITH_SEED (default 1) and the other
# variables of test/fuzz/sqlsmith.sh apply; the generated queries, the per
# statement log (statements.tsv), the violations and the server log are kept in
# FUZZ_OUT (default /tmp/dp_pg_sqlsmith_bench).  Takes about 11 minutes per
# 50,000 queries on a 2-core machine.  Exits as test/fuzz/sqlsmith.sh does:
# non-zero on any violation.
set -uo pipefail
export SQLSMITH_QUERIES=${SQLSMITH_QUERIES:-50000}
export SQLSMITH_SEED=${SQLSMITH_SEED:-1}
export FUZZ_OUT=${FUZZ_OUT:-/tmp/dp_pg_sqlsmith_bench}
export DP_FUZZ_PORT=${DP_FUZZ_PORT:-55471}
rm -rf "$FUZZ_OUT"
start=$(date +%s)
bash "$(dirname "${BASH_SOURCE[0]}")/../fuzz/sqlsmith.sh"
rc=$?
echo "sqlsmith bench: $SQLSMITH_QUERIES queries, seed $SQLSMITH_SEED, $(($(date +%s) - start)) s, exit $rc; files in $FUZZ_OUT"
exit $rc
