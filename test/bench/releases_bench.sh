#!/usr/bin/env bash
# test/bench/releases_bench.sh — several releases in one query, and joins of
# two protected tables on their privacy unit (issue 27; DESIGN.md §6).
# Targets: a query with several releases <= 1.1x its releases run one by one;
# a join on the privacy unit <= 1.2x the plain SQL computing the same bounded
# values.
#
# Starts a throw-away cluster (test/lib.sh) on a private port, creates
#
#   orders(id, customer_id, region, category, amount, day)      DP_BENCH_ROWS rows (default 2M)
#   customers(customer_id, segment)                               DP_BENCH_UNITS rows (default 200k)
#
# (each order of a uniformly random customer; 20 regions and 8 categories
# declared public keys; amount uniform in [0, 100]), protects orders with the
# unit customer_id (g = 2, r = 5) and customers with the same unit (g = 1,
# r = 1), and times, as an analyst with a large budget (the guard's rewrites
# are the analyst's path; every dp query is charged, durably), in ONE psql
# session, round-robin, DP_BENCH_RUNS rounds (default 5) after a warm-up:
#
#   rollup   SELECT region, category, count(*), sum(amount) ... GROUP BY ROLLUP(region, category)
#            against its three releases run one by one (GROUP BY region, category; GROUP BY region; no GROUP BY)
#   series   Malloy's CROSS JOIN GENERATE_SERIES(0,1,1) AS group_set (totals and per region)
#            against its two releases one by one
#   topn     Superset's series limit (top 5 regions by sum, then per category)
#            against the top-5 query and the outer query with the 5 keys as a literal IN list
#   unitjoin SELECT c.segment, dp_count(*), dp_sum(o.amount, 0, 100) FROM orders o JOIN customers c USING
#            (customer_id) GROUP BY 1 as the superuser (bounded per unit like anyone's query, with noise,
#            uncharged; the planner sees the statistics, as for the plain SQL), against the plain SQL
#            computing the same bounded values:
#            per (customer, segment) least(count, 5) and the sum of amounts clamped to [0, 500],
#            at most g = 2 cells per customer kept in random order (as unit_bench.sh's B_l0)
#
# and prints medians and ratios.  The machine may be shared: the figures are
# what this run measured.
#
#   bash test/bench/releases_bench.sh
#   DP_BENCH_ROWS=500000 DP_BENCH_UNITS=50000 DP_BENCH_RUNS=3 bash test/bench/releases_bench.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PORT=${DP_BENCH_PORT:-55490}
ROWS=${DP_BENCH_ROWS:-2000000}
UNITS=${DP_BENCH_UNITS:-200000}
RUNS=${DP_BENCH_RUNS:-5}

SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT
dp_cluster_start "$SCRATCH" "$PORT" "shared_buffers = '1GB'
work_mem = '64MB'
jit = off
max_parallel_workers_per_gather = 0" >/dev/null
dp_ledger_db "$SCRATCH" "$PORT" postgres

echo "dp_pg several-releases and unit-join benchmark: $ROWS orders, $UNITS customers, median of $RUNS runs (one session), $(nproc) CPUs, $(date -u +%Y-%m-%d)"
dp_psql "$SCRATCH" "$PORT" postgres -Atq <<SQL >/dev/null
SELECT setseed(0.3);
CREATE TABLE orders AS
SELECT g AS id, 1 + floor(random() * $UNITS)::int AS customer_id, (g % 20)::int AS region, ((g / 20) % 8)::int AS category,
       round((random() * 100)::numeric, 2) AS amount, date '2024-01-01' + (g % 365) AS day
FROM generate_series(1, $ROWS) g;
ALTER TABLE orders ADD PRIMARY KEY (id), ADD CHECK (amount BETWEEN 0 AND 100);
CREATE TABLE customers AS SELECT c AS customer_id, (ARRAY['retail', 'business', 'public'])[1 + c % 3] AS segment
FROM generate_series(1, $UNITS) c;
ALTER TABLE customers ADD PRIMARY KEY (customer_id);
VACUUM (FREEZE, ANALYZE) orders, customers;
SELECT dp_pg.protect('orders', 'customer_id', 2, 5);
SELECT dp_pg.protect('customers', 'customer_id', 1, 1);
SELECT dp_pg.set_public_keys('orders', 'region', (SELECT array_agg(k) FROM generate_series(0, 19) k));
SELECT dp_pg.set_public_keys('orders', 'category', (SELECT array_agg(k) FROM generate_series(0, 7) k));
CREATE ROLE bench_analyst LOGIN;
SELECT dp_pg.set_budget('bench_analyst', 1e9, 0.5);
SQL

# name|role|SQL (one line each); a name ending in .N is the N-th part of a one-by-one run
cat >"$SCRATCH/queries.txt" <<'Q'
rollup|bench_analyst|SELECT region, category, count(*), sum(amount) FROM orders GROUP BY ROLLUP(region, category)
rollup.1|bench_analyst|SELECT region, category, count(*), sum(amount) FROM orders GROUP BY region, category
rollup.2|bench_analyst|SELECT region, count(*), sum(amount) FROM orders GROUP BY region
rollup.3|bench_analyst|SELECT count(*), sum(amount) FROM orders
series|bench_analyst|WITH __stage0 AS (SELECT group_set, CASE WHEN group_set=1 THEN base.region END AS region__1, COALESCE(SUM(base.amount),0) AS total__0 FROM orders AS base CROSS JOIN GENERATE_SERIES(0,1,1) AS group_set GROUP BY 1,2) SELECT region__1, MAX(CASE WHEN group_set=1 THEN total__0 END), MAX(MAX(CASE WHEN group_set=0 THEN total__0 END)) OVER () FROM __stage0 GROUP BY 1
series.1|bench_analyst|SELECT COALESCE(SUM(amount),0) FROM orders
series.2|bench_analyst|SELECT region, COALESCE(SUM(amount),0) FROM orders GROUP BY 1
topn|bench_analyst|SELECT category, region, sum(amount) FROM orders JOIN (SELECT region AS region__, sum(amount) AS mme_inner__ FROM orders GROUP BY region ORDER BY mme_inner__ DESC LIMIT 5) AS anon_1 ON region = region__ GROUP BY category, region ORDER BY 3 DESC LIMIT 10000
topn.1|bench_analyst|SELECT region AS region__, sum(amount) AS mme_inner__ FROM orders GROUP BY region ORDER BY mme_inner__ DESC LIMIT 5
topn.2|bench_analyst|SELECT category, region, sum(amount) FROM orders WHERE region IN (0, 1, 2, 3, 4) GROUP BY category, region ORDER BY 3 DESC LIMIT 10000
unitjoin|postgres|SELECT c.segment, dp_count(*), dp_sum(o.amount, 0, 100, 'laplace(epsilon=1)') FROM orders o JOIN customers c USING (customer_id) GROUP BY 1
unitjoin.plain|postgres|SELECT segment, sum(n), sum(s) FROM (SELECT segment, n, s, row_number() OVER (PARTITION BY customer_id ORDER BY random()) AS rn FROM (SELECT o.customer_id, c.segment, least(count(*), 5) AS n, least(greatest(sum(least(greatest(o.amount, 0), 100)), 0), 500) AS s FROM orders o JOIN customers c USING (customer_id) GROUP BY 1, 2) x) y WHERE rn <= 2 GROUP BY 1
Q

# one session: SET ROLE per statement, \timing, round-robin rounds (round 0 warms up)
{
	echo '\timing on'
	for round in $(seq 0 "$RUNS"); do
		while IFS='|' read -r name role sql; do
			echo "\\echo @@ $round $name"
			# (a trusted role's bounded dp query must be the outermost query: not wrapped)
			if [ "$role" = postgres ]; then echo "RESET ROLE;"; echo "$sql;"; else echo "SET ROLE $role;"; echo "SELECT count(*) FROM ($sql) s;"; fi
		done <"$SCRATCH/queries.txt"
	done
} >"$SCRATCH/run.sql"
dp_psql "$SCRATCH" "$PORT" postgres -f "$SCRATCH/run.sql" >"$SCRATCH/out.txt"

awk -v runs="$RUNS" '
	/^@@ / { round = $2; name = $3; next }
	/^Time: / && name != "" { last[round, name] = $2; }
	function median(s,   a, n, i, j, x) {
		n = split(s, a, " ");
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2;
	}
	END {
		# the last time of a block is its query (the first, SET ROLE)
		for (k in last) { split(k, rk, SUBSEP); if (rk[1] > 0) t[rk[2]] = t[rk[2]] " " last[k]; }
		for (k in t) m[k] = median(t[k]);
		printf "\n%-16s %10s\n", "query", "median ms";
		n = split("rollup rollup.1 rollup.2 rollup.3 series series.1 series.2 topn topn.1 topn.2 unitjoin unitjoin.plain", order, " ");
		for (i = 1; i <= n; i++) printf "%-16s %10.1f\n", order[i], m[order[i]];
		printf "\nseveral releases / one by one (target <= 1.10):\n";
		printf "  rollup (3 releases)   %.3f\n", m["rollup"] / (m["rollup.1"] + m["rollup.2"] + m["rollup.3"]);
		printf "  series (2 releases)   %.3f\n", m["series"] / (m["series.1"] + m["series.2"]);
		printf "  top-N  (2 releases)   %.3f\n", m["topn"] / (m["topn.1"] + m["topn.2"]);
		printf "join on the privacy unit / plain bounded SQL (target <= 1.20):\n";
		printf "  unitjoin              %.3f\n", m["unitjoin"] / m["unitjoin.plain"];
	}' "$SCRATCH/out.txt"
