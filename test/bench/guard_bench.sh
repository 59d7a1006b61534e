#!/usr/bin/env bash
# test/bench/guard_bench.sh — the fixed cost the guard adds to a query:
# planning with the guard, calibration and the durable charge of an
# analyst's dp query on a small protected table, against the same query by a
# trusted role (no guard, no charge), and the cost of the guard on queries
# that never touch a protected table (catalog queries with masking, SELECT 1).
#
#   bash test/bench/guard_bench.sh            (as root or the postgres user)
#
# DP_PGBIN may point at another PostgreSQL installation (test/lib.sh), so two
# builds can be measured side by side.  Prints p50/p99 latency per query,
# single session, pgbench, SECONDS_PER_RUN seconds each (default 10); fsync on.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
DP_PORT=${DP_PORT:-55470}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}

dp_install_deps
SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT
dp_cluster_start "$SCRATCH" "$DP_PORT" "max_connections = 40"
dp_ledger_db "$SCRATCH" "$DP_PORT" postgres
dp_psql "$SCRATCH" "$DP_PORT" postgres <<'SQL' >/dev/null
CREATE TABLE prot AS SELECT g AS id, (ARRAY['a','b','c','d'])[g % 4 + 1] AS region,
	date '2024-01-01' + g AS seen FROM generate_series(1, 100) g;
CREATE TABLE pub (region text PRIMARY KEY, label text);
INSERT INTO pub VALUES ('a', 'A'), ('b', 'B'), ('c', 'C'), ('d', 'D');
CREATE ROLE ana LOGIN;
CREATE ROLE trusted LOGIN;
GRANT SELECT ON pub TO ana, trusted;
SELECT dp_pg.protect('prot');
GRANT SELECT ON prot TO trusted;
SELECT dp_pg.set_budget('ana', 1e9, NULL);
ANALYZE prot, pub;
SQL
echo "fsync = $(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc 'SHOW fsync'), $(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc 'SELECT version()' | cut -d' ' -f1-2)"

q() { printf '%s\n' "$2" > "$SCRATCH/$1.sql"; chmod 644 "$SCRATCH/$1.sql"; }
q count "SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM prot;"
q group "SELECT region, dp_count(id, 'laplace(epsilon=0.01)') FROM prot GROUP BY region;"
q join "SELECT p.label, dp_count(*) FROM prot JOIN pub p USING (region) WHERE prot.id > 10 GROUP BY p.label HAVING dp_count(*) > 0 ORDER BY 2 DESC LIMIT 3;"
# the SQL BI tools write (src/guard/translate.c): a plain count, the same with
# a relative-date filter computed before the query runs (dp_pg.run_constant)
q bi_count "SELECT \"region\", COUNT(*) AS \"count\" FROM \"public\".\"prot\" GROUP BY \"region\" ORDER BY \"region\" ASC LIMIT 2000;"
q bi_dp "SELECT region, dp_count(*) AS count FROM prot GROUP BY region ORDER BY region ASC LIMIT 2000;"
q bi_date "SELECT count(*) FROM prot WHERE seen >= CURRENT_DATE - INTERVAL '30 days';"
q bi_date_lit "SELECT count(*) FROM prot WHERE seen >= date '2024-01-01';"
q bi_wrap "SELECT * FROM (SELECT region, COUNT(*) AS count FROM prot GROUP BY region) AS \"source\" LIMIT 2000;"
q bi_flat "SELECT region, COUNT(*) FROM (SELECT * FROM prot WHERE id > 10) AS virtual_table GROUP BY region LIMIT 10000;"
q bi_probe "SELECT * FROM (SELECT region, COUNT(*) AS count FROM prot GROUP BY region) AS \"source\" LIMIT 0;"
# generalising keys (src/guard/keys.c) and CTEs: a month breakout (partition
# selection), days of the week (listed), a dataset's WITH inlined, CountIf
q bi_month "SELECT date_trunc('month', \"prot\".\"seen\") AS \"seen\", COUNT(*) AS \"count\" FROM \"public\".\"prot\" GROUP BY 1 ORDER BY 1 ASC;"
q bi_day "SELECT \"prot\".\"seen\" AS \"seen\", COUNT(*) AS \"count\" FROM \"public\".\"prot\" GROUP BY 1 ORDER BY 1 ASC;"
q bi_dow "SELECT extract(dow FROM seen) AS dow, COUNT(*) AS count FROM prot GROUP BY 1 ORDER BY 1;"
q bi_cte "WITH v AS (SELECT * FROM prot WHERE id > 10) SELECT region, COUNT(*) FROM v GROUP BY region;"
q bi_countif "SELECT SUM(CASE WHEN region = 'a' THEN 1 ELSE 0 END) AS count_where FROM prot;"
q catalog "SELECT c.relname, c.reltuples, pg_relation_size(c.oid) FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace;"
q one "SELECT 1;"

latency() { dp_bench_latency "$@"; }
latency ana count "dp_count, analyst (guard + charge)"
latency trusted count "dp_count, trusted role (no guard, no charge)"
latency ana group "GROUP BY + partition selection, analyst"
latency trusted group "GROUP BY, trusted role (no partition selection)"
latency ana join "join + HAVING/ORDER/LIMIT over releases, analyst"
latency ana bi_count "BI: COUNT(*) GROUP BY, translated, analyst"
latency ana bi_dp "BI: the same written with dp_count(*), analyst"
latency ana bi_date "BI: count(*) WHERE seen >= CURRENT_DATE - 30 days"
latency ana bi_date_lit "BI: count(*) WHERE seen >= date literal"
latency ana bi_wrap "BI: the GROUP BY wrapped (Metabase's source)"
latency ana bi_flat "BI: dataset subquery flattened (virtual_table)"
latency ana bi_probe "BI: LIMIT 0 column probe (no charge)"
latency ana bi_month "BI: GROUP BY date_trunc('month', seen)"
latency ana bi_day "BI: GROUP BY seen (the column itself)"
latency ana bi_dow "BI: GROUP BY extract(dow) (seven listed keys)"
latency ana bi_cte "BI: WITH dataset inlined and flattened"
latency ana bi_countif "BI: SUM(CASE WHEN .. THEN 1 ELSE 0 END)"
latency ana catalog "pg_class sizes (masked), analyst"
latency trusted catalog "pg_class sizes, trusted role"
latency ana one "SELECT 1, analyst"
latency trusted one "SELECT 1, trusted role"
