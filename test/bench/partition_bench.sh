#!/usr/bin/env bash
# test/bench/partition_bench.sh — protected partitioned tables (issue 34).
#
#  1. ROWS rows (default 10,000,000; the issue's figure is 100,000,000) in 120
#     monthly partitions, protected without a privacy unit: an analyst's
#     dp_count, dp_sum and GROUP BY month against the same plain query by the
#     superuser, over the last 3 months (pruned to 3 partitions) and over the
#     whole table (parallel plans: max_parallel_workers_per_gather = 2).  Per
#     query, pgbench, one session, SECONDS_PER_RUN seconds (default 10; the
#     whole-table queries WHOLE_SECONDS, by default the same: at 100M rows a
#     GROUP BY month takes longer than 10 s, so give it 60), p50
#     of pgbench's per-transaction log; the roles alternate, ROUNDS rounds
#     (default 3), and the table gives each query's median p50.
#  2. Planning on tables of 10 and PARTS (default 1,000) partitions of about
#     a page each (200 rows, so that estimates from sizes on disk, all an
#     analyst's plan may use, match the superuser's from statistics): the mean
#     planning time (pg_stat_statements.track_planning; pg_stat_statements is
#     loaded after dp_pg, so its timer includes the guard) of the analyst's
#     dp_count against the superuser's plain count(*), pruned to one
#     partition and over all of them; PLAN_SECONDS (default 5) each, ROUNDS
#     rounds, medians.  The guard's cost is the difference, which must not
#     grow with the number of partitions.
#
#   bash test/bench/partition_bench.sh         (as root or the postgres user)
#
# DP_PGBIN may point at another PostgreSQL installation (test/lib.sh).  The
# cluster: fsync on, shared_buffers 2GB, jit off (JIT compiles the big plans
# of both roles at different moments on a 2-core machine: noise), the answer
# cache off (every dp query is computed and charged).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
DP_PORT=${DP_PORT:-55480}
ROWS=${ROWS:-10000000}
PARTS=${PARTS:-1000}
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
WHOLE_SECONDS=${WHOLE_SECONDS:-$SECONDS_PER_RUN}	# the whole-table queries' window (100M rows: 60)
PLAN_SECONDS=${PLAN_SECONDS:-5}

dp_install_deps
SCRATCH=$(dp_scratch dp_pg-partbench)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT
dp_cluster_start "$SCRATCH" "$DP_PORT" "max_connections = 40
shared_buffers = 2GB
jit = off
shared_preload_libraries = 'dp_pg,pg_stat_statements'
pg_stat_statements.track_planning = on
max_parallel_workers_per_gather = 2"
dp_ledger_db "$SCRATCH" "$DP_PORT" postgres
t0=$(date +%s)
dp_psql "$SCRATCH" "$DP_PORT" postgres -v rows="$ROWS" -v parts="$PARTS" <<'SQL' >/dev/null
CREATE EXTENSION pg_stat_statements;
CREATE ROLE ana LOGIN;
SELECT dp_pg.set_budget('ana', 1e12, NULL);
CREATE TABLE sales (id bigint NOT NULL, person int NOT NULL, day date NOT NULL,
	amount int NOT NULL CHECK (amount BETWEEN 0 AND 1000), region text NOT NULL) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE sales_%s PARTITION OF sales FOR VALUES FROM (%L) TO (%L)', m,
	date '2015-01-01' + make_interval(months => m), date '2015-01-01' + make_interval(months => m + 1))
FROM generate_series(0, 119) m \gexec
INSERT INTO sales SELECT g, g % 100000, date '2015-01-01' + (g % 3653), (g * 7) % 1001, (ARRAY['n','s','e','w'])[g % 4 + 1]
FROM generate_series(1, :rows) g;
VACUUM ANALYZE sales;
SELECT dp_pg.protect('sales');
-- planning: tables of 10 and :parts daily partitions, 200 rows (about a page) each
CREATE TABLE few (id int NOT NULL, day date NOT NULL) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE few_%s PARTITION OF few FOR VALUES FROM (%L) TO (%L)', d,
	date '2020-01-01' + d, date '2020-01-01' + d + 1) FROM generate_series(0, 9) d \gexec
CREATE TABLE many (id int NOT NULL, day date NOT NULL) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE many_%s PARTITION OF many FOR VALUES FROM (%L) TO (%L)', d,
	date '2020-01-01' + d, date '2020-01-01' + d + 1) FROM generate_series(0, :parts - 1) d \gexec
INSERT INTO few SELECT g, date '2020-01-01' + g % 10 FROM generate_series(1, 10 * 200) g;
INSERT INTO many SELECT g, date '2020-01-01' + g % :parts FROM generate_series(1, :parts * 200) g;
VACUUM ANALYZE few, many;
SELECT dp_pg.protect('few');
SELECT dp_pg.protect('many');
SQL
echo "loaded $ROWS rows in 120 partitions and the planning tables in $(($(date +%s) - t0)) s"
echo "fsync = $(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc 'SHOW fsync'), $(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc 'SELECT version()' | cut -d' ' -f1-2), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

q() { printf '%s\n' "$2" >"$SCRATCH/$1.sql"; chmod 644 "$SCRATCH/$1.sql"; }
M="'laplace(epsilon=0.01)'"
LAST="day >= '2024-10-01'"
q dp_count_3m "SELECT dp_count(1, $M) FROM sales WHERE $LAST;"
q count_3m "SELECT count(1) FROM sales WHERE $LAST;"
q dp_sum_3m "SELECT dp_sum(amount, 0, 1000, $M) FROM sales WHERE $LAST;"
q sum_3m "SELECT sum(amount) FROM sales WHERE $LAST;"
q dp_month_3m "SELECT date_trunc('month', day) AS m, dp_count(1, $M) FROM sales WHERE $LAST GROUP BY 1;"
q month_3m "SELECT date_trunc('month', day) AS m, count(1) FROM sales WHERE $LAST GROUP BY 1;"
q dp_count_all "SELECT dp_count(1, $M) FROM sales;"
q count_all "SELECT count(1) FROM sales;"
q dp_sum_all "SELECT dp_sum(amount, 0, 1000, $M) FROM sales;"
q sum_all "SELECT sum(amount) FROM sales;"
q dp_month_all "SELECT date_trunc('month', day) AS m, dp_count(1, $M) FROM sales GROUP BY 1;"
q month_all "SELECT date_trunc('month', day) AS m, count(1) FROM sales GROUP BY 1;"
for t in few many; do
	q "plan_dp_${t}_one" "SELECT dp_count(1, $M) FROM $t WHERE day = '2020-01-05';"
	q "plan_${t}_one" "SELECT count(1) FROM $t WHERE day = '2020-01-05';"
	q "plan_dp_${t}_all" "SELECT dp_count(1, $M) FROM $t;"
	q "plan_${t}_all" "SELECT count(1) FROM $t;"
done

# one p50 (ms) of one query as one role
p50() {
	dp_bench_latency "$1" "$2" "$2" "$3" | sed -E 's/.*p50=([0-9.]+) ms.*/\1/'
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

declare -A RES
pairs="count_3m sum_3m month_3m count_all sum_all month_all"
for r in $(seq 1 "$ROUNDS"); do
	for p in $pairs; do
		# alternate which role goes first
		secs=$SECONDS_PER_RUN
		case $p in *_all) secs=$WHOLE_SECONDS ;; esac
		if [ $((r % 2)) = 1 ]; then
			RES[dp_$p]+="$(p50 ana "dp_$p" "$secs") "
			RES[$p]+="$(p50 postgres "$p" "$secs") "
		else
			RES[$p]+="$(p50 postgres "$p" "$secs") "
			RES[dp_$p]+="$(p50 ana "dp_$p" "$secs") "
		fi
	done
	echo "round $r of $ROUNDS done (load $(cut -d' ' -f1 /proc/loadavg))"
done
echo
printf '%-16s %14s %14s %7s   %s\n' query "analyst p50" "plain p50" ratio "the rounds' p50s (analyst / plain)"
for p in $pairs; do
	a=$(echo "${RES[dp_$p]}" | tr ' ' '\n' | grep . | median)
	b=$(echo "${RES[$p]}" | tr ' ' '\n' | grep . | median)
	if [ "$(echo "$a > 0 && $b > 0" | bc -l)" != 1 ]; then
		echo "$p: a run finished no query within its window (raise WHOLE_SECONDS or SECONDS_PER_RUN)"
		continue
	fi
	printf '%-16s %11.1f ms %11.1f ms %7.3f   %s / %s\n' "$p" "$a" "$b" "$(echo "$a / $b" | bc -l)" "${RES[dp_$p]}" "${RES[$p]}"
done

# planning: mean plan time of each query, per round
plan_ms() {
	local role=$1 file=$2
	dp_psql "$SCRATCH" "$DP_PORT" postgres -qc 'SELECT pg_stat_statements_reset()' >/dev/null
	dp_bench_latency "$role" "$file" "$file" "$PLAN_SECONDS" >/dev/null
	dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc "SELECT round(mean_plan_time::numeric, 4) FROM pg_stat_statements
		WHERE userid = '$role'::regrole AND query ~* 'count' ORDER BY calls DESC LIMIT 1"
}
declare -A PL
for r in $(seq 1 "$ROUNDS"); do
	for t in few many; do
		for w in one all; do
			PL[dp_${t}_$w]+="$(plan_ms ana "plan_dp_${t}_$w") "
			PL[${t}_$w]+="$(plan_ms postgres "plan_${t}_$w") "
		done
	done
done
echo
printf '%-28s %12s %12s %10s %7s\n' "planning" "analyst" "plain" "difference" ratio
for t in few many; do
	n=$([ "$t" = few ] && echo 10 || echo "$PARTS")
	for w in one all; do
		a=$(echo "${PL[dp_${t}_$w]}" | tr ' ' '\n' | grep . | median)
		b=$(echo "${PL[${t}_$w]}" | tr ' ' '\n' | grep . | median)
		printf '%-28s %9.3f ms %9.3f ms %7.3f ms %7.3f\n' "$n partitions, $([ "$w" = one ] && echo 'pruned to 1' || echo 'all read')" \
			"$a" "$b" "$(echo "$a - $b" | bc -l)" "$(echo "$a / $b" | bc -l)"
	done
done
