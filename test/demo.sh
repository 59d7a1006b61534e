#!/usr/bin/env bash
# test/demo.sh — dp_pg's main job, end to end, on a fresh Debian 12 machine.
#
# Installs what it needs, builds and installs dp_pg, starts a throw-away
# cluster (postgres system user, scratch directory, private port), creates a
# synthetic dataset of 1M people in SQL, and runs example DP queries in psql,
# each DP answer printed beside the true answer.  DP_KEEP_SCRATCH=1 keeps the
# cluster's directory; the server is always stopped at the end.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DP_PORT=${DP_PORT:-55433}
dp_install_deps
dp_build_install

SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; [ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"' EXIT
dp_cluster_start "$SCRATCH" "$DP_PORT"
dp_ledger_db "$SCRATCH" "$DP_PORT" postgres

psql_demo() {
	psql -X -v ON_ERROR_STOP=1 -h "$SCRATCH" -p "$DP_PORT" -U postgres -d postgres "$@"
}

echo "=== dp_pg demo: cluster in $SCRATCH, port $DP_PORT"
psql_demo -q <<'SQL'
SELECT setseed(0.42);
CREATE TABLE people AS
SELECT g AS id,
       18 + (random() * 72)::int AS age,
       (ARRAY['north','south','east','west','central'])[1 + (random() * 4)::int] AS region,
       round((20000 + random() * 180000)::numeric, 2) AS income,
       random() < 0.08 AS sensitive
FROM generate_series(1, 1000000) g;
ANALYZE people;
SQL

psql_demo <<'SQL'
\echo
\echo '--- How many people?  dp_count(*) uses dp_pg.default_mechanism'
SHOW dp_pg.default_mechanism;
SELECT dp_count(*) AS dp_answer, count(*) AS true_answer FROM people;

\echo '--- People per region (one noisy count per group, epsilon = 0.5)'
SELECT region, dp_count(id, 'laplace(epsilon=0.5)') AS dp_answer, count(*) AS true_answer
FROM people GROUP BY region ORDER BY region;

\echo '--- How many carry the sensitive flag, among people over 65?'
SELECT dp_count(id, dp_laplace(0.1)) AS dp_answer, count(*) AS true_answer
FROM people WHERE sensitive AND age > 65;

\echo '--- A BI client binds the mechanism as a parameter'
PREPARE by_age(text) AS
SELECT age / 10 * 10 AS decade, dp_count(id, $1) AS dp_answer, count(*) AS true_answer
FROM people GROUP BY 1 ORDER BY 1;
EXECUTE by_age('laplace(epsilon=1)');

\echo '--- Even an empty selection gets a noisy answer (never NULL)'
SELECT dp_count(*) AS dp_answer, count(*) AS true_answer FROM people WHERE age > 200;
SQL
echo "=== dp_pg demo done"
