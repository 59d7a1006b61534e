#!/usr/bin/env bash
# test/bench/quantile_bench.sh — dp_quantile (the exponential mechanism over
# 1,024 cells, src/aggregates/agg_quantile.c) against PostgreSQL's percentile_cont on a
# 10M-row table: the median of a float8 column, whole table and GROUP BY 4
# keys, serially and with 2 workers.  Median of RUNS timed runs (default 5)
# after one warm-up, one session (\timing), as superuser (never charged).
#
#   bash test/bench/quantile_bench.sh         (as root or the postgres user)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
DP_PORT=${DP_PORT:-55478}
RUNS=${RUNS:-5}
BENCH_ROWS=${BENCH_ROWS:-10000000}

dp_install_deps
SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT
dp_cluster_start "$SCRATCH" "$DP_PORT" "shared_buffers = 1GB
work_mem = 256MB
jit = off"
dp_ledger_db "$SCRATCH" "$DP_PORT" postgres
dp_psql "$SCRATCH" "$DP_PORT" postgres <<SQL >/dev/null
CREATE TABLE big AS SELECT g AS id, g % 4 AS k, random() * 1000 AS x FROM generate_series(1, $BENCH_ROWS) g;
VACUUM ANALYZE big;
SQL
echo "rows = $BENCH_ROWS, $(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc 'SELECT version()' | cut -d' ' -f1-2)"

# median time in ms of a query, RUNS runs after a warm-up, with the given settings
t() {
	local label=$1 settings=$2 sql=$3
	{
		echo "$settings"
		echo '\timing on'
		for i in $(seq 0 "$RUNS"); do echo "$sql"; done
	} | dp_psql "$SCRATCH" "$DP_PORT" postgres -o /dev/null 2>&1 | grep '^Time:' | tail -n "$RUNS" |
		awk '{print $2}' | sort -n | awk -v l="$label" '{a[NR]=$1} END {printf "%-58s %10.1f ms\n", l, a[int((NR+1)/2)]}'
}
serial="SET max_parallel_workers_per_gather = 0;"
par="SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
q_pc="SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM big;"
q_dp="SELECT dp_quantile(x, 0.5, 0, 1000, 'laplace(epsilon=1)') FROM big;"
q_pcg="SELECT k, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM big GROUP BY k;"
q_dpg="SELECT k, dp_quantile(x, 0.5, 0, 1000, 'laplace(epsilon=1)') FROM big GROUP BY k;"
q_cnt="SELECT count(x) FROM big;"
t "count(x) (the scan itself), serial" "$serial" "$q_cnt"
t "percentile_cont(0.5), serial" "$serial" "$q_pc"
t "dp_quantile(x, 0.5, 0, 1000), serial" "$serial" "$q_dp"
t "percentile_cont(0.5) GROUP BY 4 keys, serial" "$serial" "$q_pcg"
t "dp_quantile GROUP BY 4 keys, serial" "$serial" "$q_dpg"
t "count(x), 2 workers" "$par" "$q_cnt"
t "percentile_cont(0.5), 2 workers (it runs serially)" "$par" "$q_pc"
t "dp_quantile, 2 workers" "$par" "$q_dp"
t "dp_quantile GROUP BY 4 keys, 2 workers" "$par" "$q_dpg"
