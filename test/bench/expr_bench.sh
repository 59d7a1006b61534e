#!/usr/bin/env bash
# test/bench/expr_bench.sh — the per-row work of arithmetic on protected
# columns (src/guard/bounds.c): an analyst's sum(amount * qty) reads each
# column through dp_pg.domain_read (clamp; for numeric also the floor, the
# rounding to a canonical scale and trim_scale), against the same dp_sum
# written by a superuser (no guard, no domain read) and the plain SQL sum.
# Numeric, float8 and integer columns; a GROUP BY of Metabase's auto-binning
# (partition selection) against the superuser's GROUP BY of the same key.
# Median of RUNS timed runs (default 5) after one warm-up, one session each
# (\timing), serial plans (the guard's rewrite adds per-row work only, so
# parallel plans scale alike).
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

# median time in ms of a query as a user, RUNS runs after a warm-up
t() {
	local label=$1 user=$2 sql=$3
	{
		echo '\timing on'
		for i in $(seq 0 "$RUNS"); do echo "$sql"; done
	} | dp_psql "$SCRATCH" "$DP_PORT" postgres -c "SET ROLE $user" -f - -o /dev/null 2>&1 | grep '^Time:' | tail -n "$RUNS" |
		awk '{print $2}' | sort -n | awk -v l="$label" '{a[NR]=$1} END {printf "%-62s %10.1f ms\n", l, a[int((NR+1)/2)]}'
}
mech="'laplace(epsilon=1)'"
t "plain sum(amount * qty) (superuser)" postgres "SELECT sum(amount * qty) FROM sales;"
t "dp_sum(amount * qty, 0, 495000) (superuser: no domain read)" postgres "SELECT dp_sum(amount * qty, 0, 495000, $mech) FROM sales;"
t "sum(amount * qty) (analyst: numeric and int2 domain reads)" bench_analyst "SELECT sum(amount * qty) FROM sales;"
t "dp_sum(price * 2, 0, 2000) (superuser)" postgres "SELECT dp_sum(price * 2, 0, 2000, $mech) FROM sales;"
t "sum(price * 2) (analyst: float8 domain read)" bench_analyst "SELECT sum(price * 2) FROM sales;"
t "dp_sum(age * 2, 0, 240) (superuser)" postgres "SELECT dp_sum(age * 2, 0, 240, $mech) FROM sales;"
t "sum(age * 2) (analyst: int4 domain read)" bench_analyst "SELECT sum(age * 2) FROM sales;"
t "GROUP BY floor((age - 0.0) / 10.0) * 10.0, dp_count (superuser)" postgres \
	"SELECT floor((age - 0.0) / 10.0) * 10.0 AS b, dp_count(*), dp_pg.partition_keep('gaussian(epsilon=1, delta=1e-6)') FROM sales GROUP BY 1;"
t "GROUP BY floor((age - 0.0) / 10.0) * 10.0, count (analyst)" bench_analyst \
	"SELECT floor((age - 0.0) / 10.0) * 10.0 AS b, count(*) FROM sales GROUP BY 1;"
