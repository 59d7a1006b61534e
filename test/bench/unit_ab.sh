#!/usr/bin/env bash
# test/bench/unit_ab.sh — unit_bench.sh's queries on two builds side by side,
# for a machine shared with other work: two throw-away clusters with the same
# data (the same seed), one psql session on each, taking turns query by
# query (a query on one build, then the same query on the other, the first
# of the pair alternating each round), so that both builds' timings of a
# query come from the same minute of the machine's load.  Reports, per
# build, the medians and the ratios unit_bench.sh reports, and per query the
# median of the paired ratios build 2 / build 1.
#
#   DP_AB_BIN1=<bindir> DP_AB_BIN2=<bindir> bash test/bench/unit_ab.sh
#
# Each bindir is a server with a dp_pg build installed (e.g. a release build
# from test/bench/release_install.sh).  Environment as unit_bench.sh:
# DP_BENCH_ROWS (default 2M), DP_BENCH_UNITS (200k), DP_BENCH_RUNS (7 timed
# rounds after a warm-up), DP_BENCH_WORK_MEM (13MB: 64MB scaled to the
# units, as for unit_bench.sh's 10M rows), DP_BENCH_MODES ("serial forced":
# no workers, and 2 workers forced by parallel_setup_cost =
# parallel_tuple_cost = 0), DP_BENCH_PORT (55490 and +1).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

BIN1=${DP_AB_BIN1:?set DP_AB_BIN1 and DP_AB_BIN2 to two bindirs}
BIN2=${DP_AB_BIN2:?set DP_AB_BIN1 and DP_AB_BIN2 to two bindirs}
PORT=${DP_BENCH_PORT:-55490}
ROWS=${DP_BENCH_ROWS:-2000000}
UNITS=${DP_BENCH_UNITS:-200000}
RUNS=${DP_BENCH_RUNS:-7}
WORK_MEM=${DP_BENCH_WORK_MEM:-13MB}
MODES=${DP_BENCH_MODES:-serial forced}
G=2
R=5
MECH="laplace(epsilon=1)"

SCRATCH=$(dp_scratch)
cleanup() {
	for i in 1 2; do
		DP_PGBIN=$([ $i = 1 ] && echo "$BIN1" || echo "$BIN2") dp_cluster_stop "$SCRATCH/c$i"
	done
	rm -rf "$SCRATCH"
}
trap cleanup EXIT

for i in 1 2; do
	mkdir -p "$SCRATCH/c$i"
	[ "$(id -u)" = 0 ] && chown postgres "$SCRATCH/c$i"
	bin=$([ $i = 1 ] && echo "$BIN1" || echo "$BIN2")
	DP_PGBIN=$bin dp_cluster_start "$SCRATCH/c$i" $((PORT + i - 1)) "shared_buffers = '1GB'
work_mem = '$WORK_MEM'
jit = off
max_worker_processes = 8
max_parallel_workers = 2
parallel_leader_participation = on" >/dev/null
	dp_ledger_db "$SCRATCH/c$i" $((PORT + i - 1)) postgres
	dp_psql "$SCRATCH/c$i" $((PORT + i - 1)) postgres -q <<SQL >/dev/null
SELECT setseed(0.7);
CREATE TABLE events AS
SELECT p AS person_id,
       CASE WHEN random() < 0.9 THEN (p % 20)::int4 ELSE floor(random() * 20)::int4 END AS region,
       random() * 110 - 5 AS amount
FROM (SELECT 1 + floor(random() * $UNITS)::int8 AS p FROM generate_series(1, $ROWS) OFFSET 0) s;
CREATE TABLE events_pub AS TABLE events;
VACUUM (FREEZE, ANALYZE) events, events_pub;
SELECT dp_pg.protect('events', 'person_id', max_groups_contributed => $G, max_rows_per_unit => $R);
SELECT dp_pg.protect('events_pub', 'person_id', max_groups_contributed => $G, max_rows_per_unit => $R);
SELECT dp_pg.set_public_keys('events_pub', 'region', (SELECT array_agg(k) FROM generate_series(0, 19) k));
SQL
done
echo "dp_pg privacy units, two builds side by side: $ROWS rows, $UNITS units, work_mem $WORK_MEM, median of $RUNS rounds, $(nproc) CPUs, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build 1: $BIN1"
echo "build 2: $BIN2"

SUMX="least(sum(least(greatest(amount, 0), 100)), $R * 100)"
QUERIES=(
	"A|SELECT region, dp_count(*) FROM events GROUP BY region"
	"A_pub|SELECT region, dp_count(*) FROM events_pub GROUP BY region"
	"B|SELECT region, sum(c) FROM (SELECT person_id, region, least(count(*), $R) AS c FROM events GROUP BY person_id, region) s GROUP BY region"
	"sum_dp|SELECT region, dp_sum(amount, 0, 100, '$MECH') FROM events GROUP BY region"
	"sum_B|SELECT region, sum(s) FROM (SELECT person_id, region, $SUMX AS s FROM events GROUP BY person_id, region) t GROUP BY region"
	"total_dp|SELECT dp_count(*) FROM events"
	"total_B|SELECT sum(least(c, $R)) FROM (SELECT person_id, count(*) AS c FROM events GROUP BY person_id) s"
)

# One script per build; before each query a session waits for its turn (a
# token file), and after it hands the turn on.  Turn t (0, 1, 2, ...) is
# build 1's when t is even; each round swaps which build goes first in a pair.
turn=0
for i in 1 2; do
	{
		echo "SET dp_pg.default_mechanism = '$MECH';"
		echo "\\o /dev/null"
	} >"$SCRATCH/s$i.sql"
done
for round in $(seq 0 "$RUNS"); do
	for mode in $MODES; do
		case $mode in
		serial) set_mode="SET max_parallel_workers_per_gather = 0;" ;;
		forced) set_mode="SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;" ;;
		*) echo "unknown mode $mode" >&2; exit 1 ;;
		esac
		for q in "${QUERIES[@]}"; do
			for k in 0 1; do
				i=$(((k + round) % 2 + 1))
				{
					echo "\\! while [ ! -e $SCRATCH/turn.$turn ]; do sleep 0.05; done"
					echo "$set_mode"
					echo "\\echo @@ $round ${mode}_${q%%|*}"
					echo "\\timing on"
					echo "${q#*|};"
					echo "\\timing off"
					echo "\\! touch $SCRATCH/turn.$((turn + 1))"
				} >>"$SCRATCH/s$i.sql"
				turn=$((turn + 1))
			done
		done
	done
done
touch "$SCRATCH/turn.0"
chmod 777 "$SCRATCH"
for i in 1 2; do
	DP_PGBIN=$([ $i = 1 ] && echo "$BIN1" || echo "$BIN2") \
		dp_psql "$SCRATCH/c$i" $((PORT + i - 1)) postgres -v ON_ERROR_STOP=0 -f "$SCRATCH/s$i.sql" >"$SCRATCH/out$i" 2>&1 &
done
wait

awk -v runs="$RUNS" '
	FNR == 1 { b++ }
	/^@@ [0-9]+ / { round = $2; name = $3; if (!(name in seen)) { seen[name] = 1; order[++nn] = name } next }
	/^Time: / { if (round > 0) { n[b, name]++; t[b, name, n[b, name]] = $2 + 0; tr[b, name, round] = $2 + 0 } next }
	function median(arr, m,    i, j, tmp) {
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (arr[j] < arr[i]) { tmp = arr[i]; arr[i] = arr[j]; arr[j] = tmp }
		return (m % 2) ? arr[(m + 1) / 2] : (arr[m / 2] + arr[m / 2 + 1]) / 2
	}
	function med(bb, name,    i, a) { for (i = 1; i <= n[bb, name]; i++) a[i] = t[bb, name, i]; return median(a, n[bb, name]) }
	function pairmed(name,    r, a, m) { m = 0; for (r = 1; r <= runs; r++) if ((1, name, r) in tr && (2, name, r) in tr) a[++m] = tr[2, name, r] / tr[1, name, r]; return m ? median(a, m) : 0 }
	END {
		printf "\n| query | mode | build 1 ms | build 2 ms | paired build 2 / build 1 |\n|---|---|---:|---:|---:|\n"
		for (i = 1; i <= nn; i++) {
			q = order[i]; mode = q; sub(/_.*/, "", mode); name = q; sub(/^[a-z]+_/, "", name)
			m1[q] = med(1, q); m2[q] = med(2, q)
			printf "| %s | %s | %.1f | %.1f | %.3f |\n", name, mode, m1[q], m2[q], pairmed(q)
		}
		printf "\n| ratio (medians) | mode | build 1 | build 2 | target |\n|---|---|---:|---:|---|\n"
		split("A/B A_pub/B sum_dp/sum_B total_dp/total_B", rs, " ")
		split("serial forced", ms, " ")
		for (j = 1; j <= 2; j++) for (k = 1; k <= 4; k++) {
			split(rs[k], ab, "/"); x = ms[j] "_" ab[1]; y = ms[j] "_" ab[2]
			if (!(x in m1) || m1[y] == 0 || m2[y] == 0) continue
			printf "| %s | %s | %.3f | %.3f | <= 1.10 |\n", rs[k], ms[j], m1[x] / m1[y], m2[x] / m2[y]
		}
	}' "$SCRATCH/out1" "$SCRATCH/out2"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
