#!/usr/bin/env bash
# test/bench/keys_bench.sh — what releasing GROUP BY keys in their canonical
# spelling (src/common/canonical.c, src/guard/canonical.c) costs: an analyst's
# GROUP BY through partition selection on 1M rows (ROWS), by key type — int (no
# canonical form needed), numeric, float8, interval, jsonb (each released key
# through dp_pg.canonical_key) — with 1,000 and with 100,000 groups, and the
# same query by a trusted role with plain count(*) (no guard) as the yardstick.
#
#   bash test/bench/keys_bench.sh             (as root or the postgres user)
#
# DP_PGBIN may point at another installation (test/lib.sh), so that two builds
# (this one and main's) are measured alike.  Prints p50/p99 latency per query,
# single session, pgbench, SECONDS_PER_RUN seconds each (default 20).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
DP_PORT=${DP_PORT:-55480}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-20}
ROWS=${ROWS:-1000000}

dp_install_deps
SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT
dp_cluster_start "$SCRATCH" "$DP_PORT" "max_parallel_workers_per_gather = 0
work_mem = '64MB'"
dp_ledger_db "$SCRATCH" "$DP_PORT" postgres
dp_psql "$SCRATCH" "$DP_PORT" postgres -v rows="$ROWS" <<'SQL' >/dev/null
-- :rows rows; k1000 / k100k: the group of each row among 1,000 or 100,000,
-- spelled with a varying number of trailing zeros where the type has them
CREATE TABLE prot AS
SELECT g AS id, g % 1000 AS i1000, g % 100000 AS i100k,
       round((g % 1000)::numeric, g % 3) AS n1000, round((g % 100000)::numeric, g % 3) AS n100k,
       (g % 1000)::float8 AS f1000, (g % 100000)::float8 AS f100k,
       CASE WHEN g % 2 = 0 THEN (g % 1000) * interval '1 hour' ELSE (g % 1000) * interval '60 minutes' END AS iv1000,
       jsonb_build_object('k', round((g % 1000)::numeric, g % 3)) AS j1000,
       jsonb_build_object('k', round((g % 100000)::numeric, g % 3)) AS j100k
FROM generate_series(1, :rows) g;
CREATE ROLE ana LOGIN;
CREATE ROLE trusted LOGIN;
SELECT dp_pg.protect('prot');
GRANT SELECT ON prot TO trusted;
SELECT dp_pg.set_budget('ana', 1e12, NULL);
VACUUM ANALYZE prot;
SQL
echo "$(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc 'SELECT version()' | cut -d' ' -f1-2), $ROWS rows, no parallel workers, work_mem 64MB"

q() { printf '%s\n' "$2" > "$SCRATCH/$1.sql"; chmod 644 "$SCRATCH/$1.sql"; }
for k in i1000 n1000 f1000 iv1000 j1000 i100k n100k f100k j100k; do
	q "dp_$k" "SELECT count(*) FROM (SELECT $k, dp_count(1, 'laplace(epsilon=0.01)') FROM prot GROUP BY $k) s;"
	q "plain_$k" "SELECT count(*) FROM (SELECT $k, count(*) FROM prot GROUP BY $k) s;"
done

for k in i1000 n1000 f1000 iv1000 j1000 i100k n100k f100k j100k; do
	dp_bench_latency trusted "plain_$k" "count(*) GROUP BY $k, trusted role"
	dp_bench_latency ana "dp_$k" "dp_count GROUP BY $k, analyst (partition selection)"
done

# the canonical spelling's own cost per call (1 call per row here, 1 per
# released group in a dp query): count(dp_pg.canonical_key(col)) against
# count(col) over the same rows (only where the build has the function)
if [ "$(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc "SELECT to_regprocedure('dp_pg.canonical_key(anyelement)') IS NOT NULL")" = t ]; then
	for k in n100k f100k iv1000 j100k; do
		q "call_$k" "SELECT count(dp_pg.canonical_key($k)) FROM prot;"
		q "nocall_$k" "SELECT count($k) FROM prot;"
		dp_bench_latency trusted "nocall_$k" "count($k) over $ROWS rows"
		dp_bench_latency trusted "call_$k" "count(dp_pg.canonical_key($k)) over $ROWS rows"
	done
fi
