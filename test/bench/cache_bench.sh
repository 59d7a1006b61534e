#!/usr/bin/env bash
# test/bench/cache_bench.sh — a dashboard's answer served from the
# released-answer cache (src/release/cache.c) against the same dp query run (and
# charged) each time, on a 10M-row protected table and on a 100-row one: the
# cached answer's latency must not depend on the table's size (target: p50
# <= 2 ms at any size).  Also the cost the change trigger adds to writes.
#
#   bash test/bench/cache_bench.sh            (as root or the postgres user)
#
# DP_PGBIN may point at another PostgreSQL installation (test/lib.sh).  One
# session, pgbench, SECONDS_PER_RUN seconds per query (default 10), latency
# percentiles from pgbench's per-transaction log; fsync on; BENCH_ROWS rows
# (default 10000000).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
DP_PORT=${DP_PORT:-55475}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
BENCH_ROWS=${BENCH_ROWS:-10000000}

dp_install_deps
SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT
DP_ANSWER_CACHE=on dp_cluster_start "$SCRATCH" "$DP_PORT" "max_connections = 40
shared_buffers = 1GB
work_mem = 64MB
jit = off"
dp_ledger_db "$SCRATCH" "$DP_PORT" postgres
dp_psql "$SCRATCH" "$DP_PORT" postgres <<SQL >/dev/null
CREATE TABLE big AS SELECT g AS id, (ARRAY['north','south','east','west'])[g % 4 + 1] AS region,
	(g % 1000)::float8 AS amount, date '2024-01-01' + g % 365 AS day FROM generate_series(1, $BENCH_ROWS) g;
CREATE TABLE small AS SELECT * FROM big WHERE id <= 100;
CREATE TABLE w (id int, v int);
CREATE TABLE w_plain (id int, v int);
CREATE ROLE ana LOGIN;
CREATE ROLE ana_off LOGIN;
ALTER ROLE ana_off SET dp_pg.answer_cache = off;
SELECT dp_pg.protect('big');
SELECT dp_pg.protect('small');
SELECT dp_pg.protect('w');
SELECT dp_pg.set_public_keys('big', 'region', ARRAY['north','south','east','west']);
SELECT dp_pg.set_public_keys('small', 'region', ARRAY['north','south','east','west']);
SELECT dp_pg.set_budget('ana', 1e9, 1e-3);
SELECT dp_pg.set_budget('ana_off', 1e9, 1e-3);
VACUUM ANALYZE big, small;
SQL
echo "rows = $BENCH_ROWS, fsync = $(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc 'SHOW fsync'), $(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc 'SELECT version()' | cut -d' ' -f1-2)"

q() { printf '%s\n' "$2" > "$SCRATCH/$1.sql"; chmod 644 "$SCRATCH/$1.sql"; }
# a dashboard tile (Metabase: count and sum by region) and a time series (days: 365 rows)
q tile_big "SELECT \"region\", COUNT(*) AS \"count\", SUM(\"amount\") AS \"sum\" FROM \"public\".\"big\" GROUP BY \"region\" ORDER BY \"region\";"
q tile_small "SELECT \"region\", COUNT(*) AS \"count\", SUM(\"amount\") AS \"sum\" FROM \"public\".\"small\" GROUP BY \"region\" ORDER BY \"region\";"
q days_big "SELECT day, dp_count(*) FROM big WHERE day >= date '2024-01-01' GROUP BY day ORDER BY day;"
q insert_w "INSERT INTO w VALUES (1, 1);"
q insert_plain "INSERT INTO w_plain VALUES (1, 1);"
q copy_w "INSERT INTO w SELECT g, g FROM generate_series(1, 10000) g;"
q copy_plain "INSERT INTO w_plain SELECT g, g FROM generate_series(1, 10000) g;"
dp_psql "$SCRATCH" "$DP_PORT" postgres -c "SELECT dp_pg.set_domain('big', 'amount', 0, 1000); SELECT dp_pg.set_domain('small', 'amount', 0, 1000);" >/dev/null
dp_psql "$SCRATCH" "$DP_PORT" postgres -c "GRANT INSERT ON w_plain TO PUBLIC" >/dev/null

latency() { dp_bench_latency "$@"; }
# the first run of each (the release) is not in the served figures: pgbench's first
# transaction is the miss, every later one a hit
latency ana tile_big "tile, 10M rows, served from the cache (analyst)"
latency ana tile_small "tile, 100 rows, served from the cache (analyst)"
latency ana days_big "365 days, 10M rows, served from the cache (analyst)"
latency ana_off tile_small "tile, 100 rows, released and charged each run" 
latency ana_off tile_big "tile, 10M rows, released and charged each run" 30
latency postgres insert_w "INSERT of one row, protected table (change trigger)"
latency postgres insert_plain "INSERT of one row, plain table"
latency postgres copy_w "INSERT of 10,000 rows, protected table (change trigger)"
latency postgres copy_plain "INSERT of 10,000 rows, plain table"
dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc "SELECT 'kept answers: ' || count(*) || ', ' || sum(bytes) || ' bytes; changes rows for w: ' || (SELECT count(*) FROM dp_pg.data_changes WHERE relid = 'w'::regclass) FROM dp_pg.answer_cache"
