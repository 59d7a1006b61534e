#!/usr/bin/env bash
# test/bench/agg_bench.sh — dp aggregates against the built-ins (DESIGN.md §6).
#
# Starts a throw-away cluster (test/lib.sh) on a private port, creates a
# table of DP_BENCH_ROWS rows (default 10M), and times every query in ONE
# psql session, round-robin, DP_BENCH_RUNS times (default 9) after a warm-up
# round; reports the median of each and the ratios the design asks for:
#
#   dp_count(*) / count(*)                          <= 1.05
#   dp_sum / sum, float8 and bigint                 <= 1.25
#   GROUP BY 1,000 keys: dp_count(*) / count(*)     <= 1.10
#   dp_histogram over 1,000 public bins / GROUP BY count(*)   <= 1.10
#   2 parallel workers: dp speedup / built-in speedup          >= 0.9
#
# Uses the installed dp_pg (run `make install` first).  Run as root or as a
# user who can run the server (lib.sh runs it as postgres).
#
#   bash test/bench/agg_bench.sh
#   DP_BENCH_ROWS=1000000 DP_BENCH_RUNS=5 bash test/bench/agg_bench.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PORT=${DP_BENCH_PORT:-55451}
ROWS=${DP_BENCH_ROWS:-10000000}
RUNS=${DP_BENCH_RUNS:-9}
MECH="laplace(epsilon=1)"

SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT

# the whole table stays in shared buffers; JIT off so that both sides run
# the same (interpreted) executor
dp_cluster_start "$SCRATCH" "$PORT" "shared_buffers = '2GB'
work_mem = '64MB'
jit = off
max_worker_processes = 8
max_parallel_workers = 2
parallel_leader_participation = on" >/dev/null
if type dp_ledger_db >/dev/null 2>&1; then
	dp_ledger_db "$SCRATCH" "$PORT" postgres
else
	dp_psql "$SCRATCH" "$PORT" postgres -c "CREATE EXTENSION dp_pg"
fi

echo "dp_pg aggregate benchmark: $ROWS rows, median of $RUNS runs (one session), $(nproc) CPUs"
dp_psql "$SCRATCH" "$PORT" postgres <<SQL
CREATE TABLE bench AS
SELECT g AS id, (g % 1000)::int4 AS k, (g % 100000)::int8 AS b, random() * 100 AS x
FROM generate_series(1, $ROWS) g;
VACUUM (FREEZE, ANALYZE) bench;
CREATE FUNCTION dp_bench_plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS \$\$
BEGIN
	RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || q;
END \$\$;
SQL

BINS="{$(seq -s, 0 999)}"

# name|query; the serial set runs without workers, the parallel set with 2
QUERIES=(
	"count|SELECT count(*) FROM bench"
	"dp_count|SELECT dp_count(*) FROM bench"
	"sum_float8|SELECT sum(x) FROM bench"
	"dp_sum_float8|SELECT dp_sum(x, 0, 100, '$MECH') FROM bench"
	"sum_bigint|SELECT sum(b) FROM bench"
	"dp_sum_bigint|SELECT dp_sum(b, 0, 100000, '$MECH') FROM bench"
	"group_count|SELECT k, count(*) FROM bench GROUP BY k"
	"group_dp_count|SELECT k, dp_count(*) FROM bench GROUP BY k"
	"dp_histogram|SELECT dp_histogram(k, '$BINS'::int4[], '$MECH') FROM bench"
)

SCRIPT=$SCRATCH/bench.sql
{
	echo "SET dp_pg.default_mechanism = '$MECH';"
	echo "\\o /dev/null"
	for round in $(seq 0 "$RUNS"); do
		for mode in serial parallel; do
			if [ $mode = serial ]; then
				echo "SET max_parallel_workers_per_gather = 0;"
			else
				echo "SET max_parallel_workers_per_gather = 2;"
			fi
			echo "\\timing on"
			# round 0 warms up and is not counted; each round starts one
			# query later, so no query is always first (or always after
			# the same one)
			for i in "${!QUERIES[@]}"; do
				q=${QUERIES[$(((i + round) % ${#QUERIES[@]}))]}
				echo "\\echo @@ $round ${mode}_${q%%|*}"
				echo "${q#*|};"
			done
			echo "\\timing off"
		done
	done
	echo "\\o"
	# which plans the parallel set ran (a Partial Aggregate under a Gather)
	echo "SET max_parallel_workers_per_gather = 2;"
	echo "\\echo @@plans"
	for q in "${QUERIES[@]}"; do
		echo "SELECT '${q%%|*}' AS query, count(*) FILTER (WHERE p ~ 'Partial') > 0 AS partial_aggregate,"
		echo "       count(*) FILTER (WHERE p ~ 'Workers Planned: 2') > 0 AS two_workers"
		echo "FROM dp_bench_plan(\$\$${q#*|}\$\$) p \\g (tuples_only=on)"
	done
} >"$SCRIPT"

OUT=$SCRATCH/bench.out
dp_psql "$SCRATCH" "$PORT" postgres -f "$SCRIPT" >"$OUT"

# medians per query (rounds >= 1), then the ratios
awk -v runs="$RUNS" '
	/^@@ [0-9]+ / { round = $2; name = $3; next }
	/^Time: / { if (round > 0) { n[name]++; t[name, n[name]] = $2 + 0 } next }
	function median(name,    i, j, k, a, m, tmp) {
		m = n[name]
		for (i = 1; i <= m; i++) a[i] = t[name, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { tmp = a[i]; a[i] = a[j]; a[j] = tmp }
		return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	END {
		split("count dp_count sum_float8 dp_sum_float8 sum_bigint dp_sum_bigint group_count group_dp_count dp_histogram", names, " ")
		printf "\n| query | serial ms | 2 workers ms |\n|---|---:|---:|\n"
		for (i = 1; i <= 9; i++) {
			s[names[i]] = median("serial_" names[i]); p[names[i]] = median("parallel_" names[i])
			printf "| %s | %.1f | %.1f |\n", names[i], s[names[i]], p[names[i]]
		}
		printf "\n| ratio | serial | 2 workers | target |\n|---|---:|---:|---|\n"
		printf "| dp_count(*) / count(*) | %.3f | %.3f | <= 1.05 |\n", s["dp_count"] / s["count"], p["dp_count"] / p["count"]
		printf "| dp_sum / sum, float8 | %.3f | %.3f | <= 1.25 |\n", s["dp_sum_float8"] / s["sum_float8"], p["dp_sum_float8"] / p["sum_float8"]
		printf "| dp_sum / sum, bigint | %.3f | %.3f | <= 1.25 |\n", s["dp_sum_bigint"] / s["sum_bigint"], p["dp_sum_bigint"] / p["sum_bigint"]
		printf "| GROUP BY 1,000 keys: dp_count / count | %.3f | %.3f | <= 1.10 |\n", s["group_dp_count"] / s["group_count"], p["group_dp_count"] / p["group_count"]
		printf "| dp_histogram 1,000 bins / GROUP BY count | %.3f | %.3f | <= 1.10 |\n", s["dp_histogram"] / s["group_count"], p["dp_histogram"] / p["group_count"]
		printf "\n| parallel speedup (serial / 2 workers) | built-in | dp | dp / built-in | target |\n|---|---:|---:|---:|---|\n"
		printf "| count(*) vs dp_count(*) | %.2f | %.2f | %.3f | >= 0.9 |\n", s["count"] / p["count"], s["dp_count"] / p["dp_count"], (s["dp_count"] / p["dp_count"]) / (s["count"] / p["count"])
		printf "| sum vs dp_sum, float8 | %.2f | %.2f | %.3f | >= 0.9 |\n", s["sum_float8"] / p["sum_float8"], s["dp_sum_float8"] / p["dp_sum_float8"], (s["dp_sum_float8"] / p["dp_sum_float8"]) / (s["sum_float8"] / p["sum_float8"])
		printf "| sum vs dp_sum, bigint | %.2f | %.2f | %.3f | >= 0.9 |\n", s["sum_bigint"] / p["sum_bigint"], s["dp_sum_bigint"] / p["dp_sum_bigint"], (s["dp_sum_bigint"] / p["dp_sum_bigint"]) / (s["sum_bigint"] / p["sum_bigint"])
		printf "| GROUP BY count vs dp_count | %.2f | %.2f | %.3f | >= 0.9 |\n", s["group_count"] / p["group_count"], s["group_dp_count"] / p["group_dp_count"], (s["group_dp_count"] / p["group_dp_count"]) / (s["group_count"] / p["group_count"])
		printf "| GROUP BY count vs dp_histogram | %.2f | %.2f | %.3f | >= 0.9 |\n", s["group_count"] / p["group_count"], s["dp_histogram"] / p["dp_histogram"], (s["dp_histogram"] / p["dp_histogram"]) / (s["group_count"] / p["group_count"])
	}' "$OUT"
echo
echo "Plans of the parallel set:"
sed -n '/^@@plans/,$p' "$OUT" | tail -n +2 | sed '/^$/d'
