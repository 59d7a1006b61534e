#!/usr/bin/env bash
# test/bench/unit_bench.sh — bounded dp queries on a table with a privacy unit
# against the plain SQL that does the same per-unit bounding without noise
# (issue 7; DESIGN.md §3).  Target: bounded dp / plain SQL <= 1.10 (issue 13;
# 1.5 before each unit's cells were kept while aggregating).
#
# Starts a throw-away cluster (test/lib.sh) on a private port, creates
#
#   events(person_id int8, region int4, amount float8)
#
# with DP_BENCH_ROWS rows (default 10M) over DP_BENCH_UNITS persons (default
# 1M): each row belongs to a uniformly random person (so ~Poisson(10) rows per
# person, a person's rows scattered over the table, as in an event log); a
# person's home region is person_id % 20; a row is in the home region with
# probability 0.9, else in a uniformly random one of the 20 regions (possibly
# home again); amount is uniform in [-5, 105) (dp_sum(amount, 0, 100) clamps
# both ends).  The table is protected with person_id as the privacy unit:
#
#   dp_pg.protect('events', 'person_id', max_groups_contributed => 2, max_rows_per_unit => 5)
#
# and a copy, events_pub, also declares the 20 regions public keys.  As
# superuser (dp queries bounded like anyone's, never charged) it times, in ONE
# psql session, round-robin, DP_BENCH_RUNS rounds (default 5) after a warm-up
# round, serial (max_parallel_workers_per_gather = 0), with 2 workers allowed
# (default costs: the planner picks serial plans for all of these at 10M rows)
# and with 2 workers forced (parallel_setup_cost = parallel_tuple_cost = 0):
#
#   A     SELECT region, dp_count(*) FROM events GROUP BY region   (partition selection)
#   A_pub the same on events_pub (public keys: no selection)
#   B     SELECT region, sum(c) FROM (SELECT person_id, region, least(count(*), 5) AS c
#         FROM events GROUP BY person_id, region) s GROUP BY region      (rows per unit only)
#   B_l0  B plus the groups-per-unit step: keep the cells with
#         row_number() OVER (PARTITION BY person_id ORDER BY random()) <= 2
#   the same three shapes for dp_sum(amount, 0, 100) (per-unit sum of the
#   clamped values, clamped to [0, 500]) and, without GROUP BY, dp_count(*)
#   against SELECT sum(least(c, 5)) FROM (... GROUP BY person_id) s;
#
# then prints medians and the ratios, and the memory of the per-unit
# aggregation: EXPLAIN (ANALYZE, BUFFERS) of the serial queries (A, A_pub,
# sum_dp and their plain counterparts) at
# work_mem = 1GB (nothing spills: Memory Usage / units = bytes per unit),
# 64MB (the timed runs) and 4MB (hash aggregation spills: Batches > 1).
#
# Uses the installed dp_pg (run `make install` first).  Run as root or as a
# user who can run the server (lib.sh runs it as postgres).
#
#   bash test/bench/unit_bench.sh
#   DP_BENCH_ROWS=1000000 DP_BENCH_UNITS=100000 bash test/bench/unit_bench.sh
#   DP_BENCH_WORK_MEM=13MB ...   work_mem of the timed runs (default 64MB): to keep
#                                a smaller table's units as short of memory as 10M
#                                rows' at 64MB, scale it with the units (2M rows,
#                                200k units: 13MB)
#   DP_BENCH_PLAIN_ONLY=1 ...   only the plain-SQL side (a build without units)
#   DP_BENCH_KEEP_PLANS=/tmp/plans.txt ...   keep the EXPLAIN ANALYZE output
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PORT=${DP_BENCH_PORT:-55480}
ROWS=${DP_BENCH_ROWS:-10000000}
UNITS=${DP_BENCH_UNITS:-1000000}
RUNS=${DP_BENCH_RUNS:-5}
WORK_MEM=${DP_BENCH_WORK_MEM:-64MB}
PLAIN_ONLY=${DP_BENCH_PLAIN_ONLY:-0}
G=2 # max_groups_contributed
R=5 # max_rows_per_unit
MECH="laplace(epsilon=1)"

SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT

# as agg_bench.sh: the tables stay in shared buffers, JIT off so that both
# sides run the same (interpreted) executor
dp_cluster_start "$SCRATCH" "$PORT" "shared_buffers = '2GB'
work_mem = '$WORK_MEM'
jit = off
max_worker_processes = 8
max_parallel_workers = 2
parallel_leader_participation = on" >/dev/null
dp_ledger_db "$SCRATCH" "$PORT" postgres

echo "dp_pg privacy-unit benchmark: $ROWS rows, $UNITS units, median of $RUNS runs (one session), $(nproc) CPUs, $(date -u +%Y-%m-%d)"
dp_psql "$SCRATCH" "$PORT" postgres -Atc "SELECT 'settings: ' || string_agg(name || ' = ' || setting || coalesce(unit, ''), ', ' ORDER BY name)
	FROM pg_settings WHERE name IN ('shared_buffers', 'work_mem', 'hash_mem_multiplier', 'jit', 'max_parallel_workers')"
dp_psql "$SCRATCH" "$PORT" postgres -Atc "SELECT 'dp_pg ' || extversion || CASE WHEN EXISTS (SELECT FROM pg_settings WHERE name = 'dp_pg.debug_noiseless')
	THEN ', test build (DP_PG_TEST_SWITCHES)' ELSE '' END FROM pg_extension WHERE extname = 'dp_pg'"
dp_psql "$SCRATCH" "$PORT" postgres <<SQL
SELECT setseed(0.7) \\g /dev/null
CREATE TABLE events AS
SELECT p AS person_id,
       CASE WHEN random() < 0.9 THEN (p % 20)::int4 ELSE floor(random() * 20)::int4 END AS region,
       random() * 110 - 5 AS amount
FROM (SELECT 1 + floor(random() * $UNITS)::int8 AS p FROM generate_series(1, $ROWS) OFFSET 0) s;
CREATE TABLE events_pub AS TABLE events;
VACUUM (FREEZE, ANALYZE) events, events_pub;
CREATE FUNCTION dp_bench_plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS \$\$
BEGIN
	RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || q;
END \$\$;
SQL
if [ "$PLAIN_ONLY" != 1 ]; then
	dp_psql "$SCRATCH" "$PORT" postgres -Atq <<SQL >/dev/null
SELECT dp_pg.protect('events', 'person_id', max_groups_contributed => $G, max_rows_per_unit => $R);
SELECT dp_pg.protect('events_pub', 'person_id', max_groups_contributed => $G, max_rows_per_unit => $R);
SELECT dp_pg.set_public_keys('events_pub', 'region', (SELECT array_agg(k) FROM generate_series(0, 19) k));
SQL
fi

echo
echo "Data (table size, units, cells = (person, region) pairs):"
dp_psql "$SCRATCH" "$PORT" postgres <<SQL
SET max_parallel_workers_per_gather = 2;
SET work_mem = '1GB';
WITH cells AS (SELECT person_id, region, count(*) AS n FROM events GROUP BY 1, 2),
     units AS (SELECT person_id, count(*) AS cells, sum(n) AS n, sum(least(n, $R)) AS n_capped FROM cells GROUP BY 1)
SELECT pg_size_pretty(pg_table_size('events')) AS table_size,
       count(*) AS units, sum(cells) AS cells, round(avg(n), 2) AS rows_per_unit, max(n) AS max_rows,
       round(avg((cells > $G)::int), 3) AS units_over_${G}_cells,
       (SELECT round(avg((n > $R)::int), 3) FROM cells) AS cells_over_${R}_rows,
       round(sum(n_capped)::numeric / sum(n), 3) AS rows_kept_by_cap
FROM units;
SQL

SQL_B="SELECT region, sum(c) FROM (SELECT person_id, region, least(count(*), $R) AS c FROM events GROUP BY person_id, region) s GROUP BY region"
SQL_B_L0="SELECT region, sum(c) FROM (SELECT region, c, row_number() OVER (PARTITION BY person_id ORDER BY random()) AS rn FROM (SELECT person_id, region, least(count(*), $R) AS c FROM events GROUP BY person_id, region) s) t WHERE rn <= $G GROUP BY region"
SQL_A="SELECT region, dp_count(*) FROM events GROUP BY region"
SUMX="least(sum(least(greatest(amount, 0), 100)), $R * 100)"
QUERIES=(
	"A|$SQL_A"
	"A_pub|SELECT region, dp_count(*) FROM events_pub GROUP BY region"
	"B|$SQL_B"
	"B_l0|$SQL_B_L0"
	"sum_dp|SELECT region, dp_sum(amount, 0, 100, '$MECH') FROM events GROUP BY region"
	"sum_B|SELECT region, sum(s) FROM (SELECT person_id, region, $SUMX AS s FROM events GROUP BY person_id, region) t GROUP BY region"
	"sum_B_l0|SELECT region, sum(s) FROM (SELECT region, s, row_number() OVER (PARTITION BY person_id ORDER BY random()) AS rn FROM (SELECT person_id, region, $SUMX AS s FROM events GROUP BY person_id, region) t) u WHERE rn <= $G GROUP BY region"
	"total_dp|SELECT dp_count(*) FROM events"
	"total_B|SELECT sum(least(c, $R)) FROM (SELECT person_id, count(*) AS c FROM events GROUP BY person_id) s"
)
# the earlier form of the groups-per-unit step (a window over every cell),
# kept in test builds behind dp_pg.debug_unit_cells = window
if [ "$PLAIN_ONLY" != 1 ] && [ "$(dp_psql "$SCRATCH" "$PORT" postgres -Atc "SELECT count(*) FROM pg_settings WHERE name = 'dp_pg.debug_unit_cells'")" = 1 ]; then
	QUERIES+=("A_win|$SQL_A" "sum_win|SELECT region, dp_sum(amount, 0, 100, '$MECH') FROM events GROUP BY region")
fi
if [ "$PLAIN_ONLY" = 1 ]; then
	PLAIN=()
	for q in "${QUERIES[@]}"; do
		case ${q%%|*} in A | A_pub | sum_dp | total_dp) ;; *) PLAIN+=("$q") ;; esac
	done
	QUERIES=("${PLAIN[@]}")
fi

if [ "$PLAIN_ONLY" != 1 ]; then
	echo "Exactness check (dp_pg.debug_noiseless, test builds only): noiseless bounded releases vs plain SQL"
	dp_psql "$SCRATCH" "$PORT" postgres -v ON_ERROR_STOP=0 <<SQL 2>&1
SET dp_pg.debug_noiseless = on;
SET dp_pg.default_mechanism = '$MECH';
SELECT dp_count(*) AS total_dp_noiseless FROM events;
SELECT sum(least(c, $R)) AS total_plain FROM (SELECT person_id, count(*) AS c FROM events GROUP BY person_id) s;
CREATE TEMP TABLE a_noiseless AS $SQL_A;
CREATE TEMP TABLE a_pub_noiseless AS SELECT region, dp_count(*) FROM events_pub GROUP BY region;
CREATE TEMP TABLE b_plain AS $SQL_B_L0;
SELECT count(*) AS regions, sum(dp_count) AS rows FROM a_noiseless
UNION ALL SELECT count(*), sum(dp_count) FROM a_pub_noiseless
UNION ALL SELECT count(*), sum(sum) FROM b_plain;
SQL
fi

SCRIPT=$SCRATCH/bench.sql
{
	echo "SET dp_pg.default_mechanism = '$MECH';"
	echo "\\o /dev/null"
	for round in $(seq 0 "$RUNS"); do
		for mode in serial parallel forced; do
			case $mode in
			serial) echo "SET max_parallel_workers_per_gather = 0;" ;;
			parallel) echo "SET max_parallel_workers_per_gather = 2; RESET parallel_setup_cost; RESET parallel_tuple_cost;" ;;
			forced) echo "SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;" ;;
			esac
			echo "\\timing on"
			# round 0 warms up and is not counted; each round starts one
			# query later
			for i in "${!QUERIES[@]}"; do
				q=${QUERIES[$(((i + round) % ${#QUERIES[@]}))]}
				case ${q%%|*} in
				*_win) echo "\\timing off"; echo "SET dp_pg.debug_unit_cells = 'window';"; echo "\\timing on" ;;
				esac
				echo "\\echo @@ $round ${mode}_${q%%|*}"
				echo "${q#*|};"
				case ${q%%|*} in
				*_win) echo "\\timing off"; echo "RESET dp_pg.debug_unit_cells;"; echo "\\timing on" ;;
				esac
			done
			echo "\\timing off"
		done
	done
	echo "\\o"
	echo "SET max_parallel_workers_per_gather = 2;"
	echo "\\echo @@plans"
	for q in "${QUERIES[@]}"; do
		for costs in default forced; do
			if [ $costs = default ]; then
				echo "RESET parallel_setup_cost; RESET parallel_tuple_cost;"
			else
				echo "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
			fi
			echo "SELECT rpad('${q%%|*}', 9) AS query, rpad('$costs', 7) AS costs, count(*) FILTER (WHERE p ~ 'Workers Planned') > 0 AS gather,"
			echo "       count(*) FILTER (WHERE p ~ 'Partial') > 0 AS partial_aggregate"
			echo "FROM dp_bench_plan(\$\$${q#*|}\$\$) p \\g (tuples_only=on)"
		done
	done
} >"$SCRIPT"

OUT=$SCRATCH/bench.out
dp_psql "$SCRATCH" "$PORT" postgres -f "$SCRIPT" >"$OUT"

awk '
	/^@@ [0-9]+ / { round = $2; name = $3; if (!(name in seen)) { seen[name] = 1; order[++nn] = name } next }
	/^Time: / { if (round > 0) { n[name]++; t[name, n[name]] = $2 + 0 } next }
	function median(name,    i, j, a, m, tmp) {
		m = n[name]
		if (m == 0) return 0
		for (i = 1; i <= m; i++) a[i] = t[name, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { tmp = a[i]; a[i] = a[j]; a[j] = tmp }
		return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	function ratio(a, b, mode) { return (m[mode "_" a] > 0 && m[mode "_" b] > 0) ? sprintf("%.3f", m[mode "_" a] / m[mode "_" b]) : "-" }
	function row(label, a, b, target) { printf "| %s | %s | %s | %s | %s |\n", label, ratio(a, b, "serial"), ratio(a, b, "parallel"), ratio(a, b, "forced"), target }
	END {
		printf "\n| query | serial ms | 2 workers ms | 2 workers, forced ms |\n|---|---:|---:|---:|\n"
		for (i = 1; i <= nn; i++) {
			q = order[i]; sub(/^(serial|parallel|forced)_/, "", q)
			if (q in done) continue
			done[q] = 1
			m["serial_" q] = median("serial_" q); m["parallel_" q] = median("parallel_" q); m["forced_" q] = median("forced_" q)
			printf "| %s | %.1f | %.1f | %.1f |\n", q, m["serial_" q], m["parallel_" q], m["forced_" q]
		}
		printf "\n| ratio | serial | 2 workers | 2 workers, forced | target |\n|---|---:|---:|---:|---|\n"
		row("A / B (dp_count GROUP BY, partition selection / per-unit cap)", "A", "B", "<= 1.10")
		row("A_win / B (the window form)", "A_win", "B", "")
		row("A / B_l0 (… / per-unit cap + groups-per-unit window)", "A", "B_l0", "")
		row("A_pub / B (public keys)", "A_pub", "B", "<= 1.10")
		row("A_pub / B_l0", "A_pub", "B_l0", "")
		row("sum_dp / sum_B (dp_sum GROUP BY)", "sum_dp", "sum_B", "<= 1.10")
		row("sum_win / sum_B (the window form)", "sum_win", "sum_B", "")
		row("sum_dp / sum_B_l0", "sum_dp", "sum_B_l0", "")
		row("total_dp / total_B (no GROUP BY)", "total_dp", "total_B", "<= 1.10")
	}' "$OUT"
echo
echo "Plans with 2 workers allowed, default and forced (parallel_setup_cost = parallel_tuple_cost = 0) costs:"
sed -n '/^@@plans/,$p' "$OUT" | tail -n +2 | sed '/^$/d'

# memory of the per-unit aggregation: EXPLAIN ANALYZE (TIMING OFF: no clock
# reads per row) of the serial plans at three work_mem settings
MEMQ=("B|$SQL_B" "B_l0|$SQL_B_L0" "sum_B|SELECT region, sum(s) FROM (SELECT person_id, region, $SUMX AS s FROM events GROUP BY person_id, region) t GROUP BY region"
	"total_B|SELECT sum(least(c, $R)) FROM (SELECT person_id, count(*) AS c FROM events GROUP BY person_id) s")
if [ "$PLAIN_ONLY" != 1 ]; then
	MEMQ=("A|$SQL_A" "A_pub|SELECT region, dp_count(*) FROM events_pub GROUP BY region"
		"sum_dp|SELECT region, dp_sum(amount, 0, 100, '$MECH') FROM events GROUP BY region" "${MEMQ[@]}"
		"total_dp|SELECT dp_count(*) FROM events")
fi
MEMSQL=$SCRATCH/mem.sql
{
	echo "SET max_parallel_workers_per_gather = 0;"
	echo "SET dp_pg.default_mechanism = '$MECH';"
	for wm in 1GB "$WORK_MEM" 4MB; do
		echo "SET work_mem = '$wm';"
		for q in "${MEMQ[@]}"; do
			echo "\\echo @@ $wm ${q%%|*}"
			echo "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, COSTS OFF) ${q#*|};"
		done
	done
} >"$MEMSQL"
MEMOUT=$SCRATCH/mem.out
dp_psql "$SCRATCH" "$PORT" postgres -v ON_ERROR_STOP=0 -f "$MEMSQL" >"$MEMOUT" 2>&1
echo
echo "Per-unit aggregation memory, serial, EXPLAIN (ANALYZE, TIMING OFF); hash_mem_multiplier = $(dp_psql "$SCRATCH" "$PORT" postgres -Atc 'SHOW hash_mem_multiplier'):"
echo "(largest HashAggregate; sorts; bytes per unit = that HashAggregate's Memory Usage / $UNITS units)"
awk -v units="$UNITS" '
	function flush() {
		if (key == "") return
		if (err != "") { printf "| %s | %s | ERROR: %s | | | | |\n", wm, q, err; key = ""; return }
		printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", wm, q, hmem ? hmem " kB" : "-", hbat ? hbat : "-", hdisk ? hdisk " kB" : "0",
			(hmem && hbat == 1) ? sprintf("%.0f", hmem * 1024 / units) : "(spilled)", sorts ? sorts : "-", exec
		key = ""
	}
	BEGIN { printf "| work_mem | query | HashAgg Memory Usage | Batches | Disk Usage | bytes/unit | sorts | execution ms |\n|---|---|---:|---:|---:|---:|---|---:|\n" }
	/^@@ / { flush(); wm = $2; q = $3; key = wm q; hmem = 0; hbat = 0; hdisk = 0; sorts = ""; exec = "-"; err = ""; node = ""; next }
	/HashAggregate/ { node = "hash" }
	/ Sort / || /->  Sort/ || /^ *Sort / { node = "sort" }
	/Batches:/ && node == "hash" {
		b = $0; sub(/.*Batches: */, "", b); b += 0
		mm = $0; sub(/.*Memory Usage: */, "", mm); mm += 0
		d = 0; if ($0 ~ /Disk Usage:/) { d = $0; sub(/.*Disk Usage: */, "", d); d += 0 }
		if (mm > hmem) { hmem = mm; hbat = b; hdisk = d }
	}
	/Sort Method:/ {
		s = $0; sub(/^ *Sort Method: */, "", s); gsub(/  +/, " ", s)
		sorts = sorts (sorts ? "; " : "") s
	}
	/Execution Time:/ { exec = $3 }
	/ERROR:/ { e = $0; sub(/.*ERROR: */, "", e); err = e }
	END { flush() }' "$MEMOUT"
if [ -n "${DP_BENCH_KEEP_PLANS:-}" ]; then
	cp "$MEMOUT" "$DP_BENCH_KEEP_PLANS"
	echo "(full plans copied to $DP_BENCH_KEEP_PLANS)"
fi
