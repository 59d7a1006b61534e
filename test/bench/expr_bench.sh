#!/usr/bin/env bash
# test/bench/expr_bench.sh — the per-row work of arithmetic on protected
# columns (src/guard/bounds.c): an analyst's sum(amount * qty) reads each
# column through dp_pg.domain_read (clamp; for numeric also the floor, the
# rounding to a canonical scale and trim_scale), against the same dp_sum
# written by a superuser (no guard, no domain read) and the plain SQL sum.
# Numeric, float8 and integer columns; a GROUP BY of Metabase's auto-binning
# (partition selection) against the superuser's GROUP BY of the same key;
# the numeric read alone.  Medians of RUNS timed runs (default 5) after one
# warm-up, the two queries of a pair alternating in one session (\timing),
# serial plans (the guard's rewrite adds per-row work only, so parallel plans
# scale alike).
#
#   bash test/bench/expr_bench.sh         (as root or the postgres user)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
DP_PORT=${DP_PORT:-55479}
RUNS=${RUNS:-5}
BENCH_ROWS=${BENCH_ROWS:-5000000}

dp_install_deps
SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT
dp_cluster_start "$SCRATCH" "$DP_PORT" "shared_buffers = 1GB
work_mem = 256MB
jit = off
max_parallel_workers_per_gather = 0"
dp_ledger_db "$SCRATCH" "$DP_PORT" postgres
dp_psql "$SCRATCH" "$DP_PORT" postgres <<SQL >/dev/null
CREATE TABLE sales (id int, amount numeric CHECK (amount BETWEEN 0 AND 5000), qty int2 CHECK (qty BETWEEN 0 AND 99),
	price float8 CHECK (price BETWEEN 0 AND 1000), age int CHECK (age BETWEEN 0 AND 120));
INSERT INTO sales SELECT g, (g % 50) * 10.5, g % 7, (g % 20) * 2.5, 18 + g % 60 FROM generate_series(1, $BENCH_ROWS) g;
VACUUM ANALYZE sales;
SELECT dp_pg.protect('sales');
CREATE ROLE bench_analyst LOGIN;
SELECT dp_pg.set_budget('bench_analyst', 1e12, 0.5);
ALTER ROLE bench_analyst SET dp_pg.default_mechanism = 'laplace(epsilon=1)';
ALTER ROLE bench_analyst SET dp_pg.partition_mechanism = 'gaussian(epsilon=1, delta=1e-6)';
SQL
echo "rows = $BENCH_ROWS, $(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc 'SELECT version()' | cut -d' ' -f1-2)"

# the median times in ms of a superuser's query and an analyst's, RUNS runs
# each after a warm-up, alternating in one session (so that a noisy machine
# slows both alike), and their ratio
pair() {
	local label=$1 su_sql=$2 an_sql=$3 an_role=${4:-bench_analyst}
	{
		echo '\timing on'
		for i in $(seq 0 "$RUNS"); do
			echo "RESET ROLE;"
			echo "$su_sql"
			echo "SET ROLE $an_role;"
			echo "$an_sql"
		done
	} | dp_psql "$SCRATCH" "$DP_PORT" postgres -f - -o /dev/null 2>&1 | grep '^Time:' | awk '{print $2}' |
		awk -v l="$label" -v runs="$RUNS" '
			NR % 4 == 2 && NR > 4 { su[++n] = $1 }
			NR % 4 == 0 && NR > 4 { an[++m] = $1 }
			function median(a, k,   i, j, t) {
				for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
				return a[int((k + 1) / 2)]
			}
			END { s = median(su, n); a = median(an, m); printf "%-52s %9.1f ms %9.1f ms  %5.2fx\n", l, s, a, a / s }'
}
mech="'laplace(epsilon=1)'"
printf "%-52s %12s %12s  %s\n" "query (superuser's dp query / analyst's plain one)" "superuser" "analyst" "ratio"
pair "sum(amount * qty): numeric and int2 domain reads" \
	"SELECT dp_sum(amount * qty, 0, 495000, $mech) FROM sales;" "SELECT sum(amount * qty) FROM sales;"
pair "sum(price * 2): float8 domain read" \
	"SELECT dp_sum(price * 2, 0, 2000, $mech) FROM sales;" "SELECT sum(price * 2) FROM sales;"
pair "sum(age * 2): int4 domain read" \
	"SELECT dp_sum(age * 2, 0, 240, $mech) FROM sales;" "SELECT sum(age * 2) FROM sales;"
pair "GROUP BY floor((age - 0.0) / 10.0) * 10.0, counts" \
	"SELECT floor((age - 0.0) / 10.0) * 10.0 AS b, dp_count(*), dp_pg.partition_keep('gaussian(epsilon=1, delta=1e-6)') FROM sales GROUP BY 1;" \
	"SELECT floor((age - 0.0) / 10.0) * 10.0 AS b, count(*) FROM sales GROUP BY 1;"
pair "the numeric read alone (superuser both): sum(amount), sum(dp_pg.domain_read(amount, 0, 5000))" \
	"SELECT sum(amount) FROM sales;" "SELECT sum(dp_pg.domain_read(amount, 0, 5000)) FROM sales;" postgres
