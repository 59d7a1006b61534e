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
SELECT setseed(0.42) \g /dev/null
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

\echo '--- Other noise: Gaussian and OSGT (what each costs and how noisy it is)'
SELECT dp_count(id, 'gaussian(epsilon=0.5, delta=1e-8)') AS dp_gaussian,
       dp_count(id, 'osgt(epsilon=0.5, delta=1e-8)') AS dp_osgt, count(*) AS true_answer
FROM people WHERE region = 'north';
SELECT mech AS mechanism, round(c.sigma::numeric, 3) AS sigma, round(c.m::numeric, 3) AS offset_m,
       round(sqrt(c.variance)::numeric, 3) AS stddev
FROM unnest(ARRAY['gaussian(epsilon=0.5, delta=1e-8)', 'osgt(epsilon=0.5, delta=1e-8)']::dp_mechanism[]) mech,
     dp_pg.calibrate(mech, 1) c;

\echo '--- A budget for an analyst: epsilon 2, delta 1e-6'
CREATE ROLE analyst LOGIN;
GRANT SELECT ON people TO analyst;
SELECT dp_pg.set_budget('analyst', 2, 1e-6);
SET ROLE analyst;
SELECT * FROM dp_pg.estimate_cost('SELECT region, dp_count(id, ''laplace(epsilon=0.5)'') FROM people GROUP BY region');
SELECT region, dp_count(id, 'laplace(epsilon=0.5)') AS dp_answer FROM people GROUP BY region ORDER BY region;
BEGIN;
SELECT dp_count(id, 'laplace(epsilon=0.5)') AS dp_answer FROM people WHERE sensitive;
ROLLBACK;
\echo '(the rolled-back query was charged all the same)'
SELECT role, epsilon_limit, round(epsilon_spent::numeric, 4) AS epsilon_spent,
       round(epsilon_remaining::numeric, 4) AS epsilon_remaining, charges, accounting FROM dp_pg.my_budget;
\echo '--- Asking for more than is left: DP001, nothing charged, nothing released'
\set ON_ERROR_STOP 0
SELECT dp_count(id, 'laplace(epsilon=1.5)') FROM people;
\set ON_ERROR_STOP 1
RESET ROLE;
\echo '--- Protecting the table: the analyst now reaches it only through dp queries'
SELECT dp_pg.protect('people');
SELECT dp_pg.set_public_keys('people', 'region', ARRAY['north','south','east','west','central']);
SET ROLE analyst;
SELECT region, dp_count(id, 'laplace(epsilon=0.2)') AS dp_answer FROM people GROUP BY region ORDER BY region;
\echo '(GROUP BY on a column with undeclared values: only groups that pass private partition selection)'
SELECT age, dp_count(id, 'laplace(epsilon=0.2)') AS dp_answer FROM people WHERE age > 85 GROUP BY age ORDER BY age;
\set ON_ERROR_STOP 0
SELECT * FROM people LIMIT 1;
SELECT count(*) FROM people;
SELECT dp_count(*) FROM people WHERE 1 / (age - 40) > 0;
SELECT relname, reltuples FROM pg_class WHERE relname = 'people';
\set ON_ERROR_STOP 1
SELECT role, round(epsilon_spent::numeric, 4) AS epsilon_spent, round(delta_spent::numeric, 12) AS delta_spent,
       charges, accounting FROM dp_pg.my_budget;
RESET ROLE;
\echo '--- Many rows per person: a privacy unit bounds each person before noise'
\echo '(visits: ~5 per person, and one person with 10,000; at most 2 wards and 3 visits per ward count)'
CREATE TABLE visits AS
SELECT 1 + (random() * 199999)::int AS person_id,
       (ARRAY['a','b','c','d'])[1 + (random() * 3)::int] AS ward,
       round((random() * 400)::numeric, 2)::float8 AS cost
FROM generate_series(1, 1000000);
INSERT INTO visits SELECT 42, (ARRAY['a','b','c','d'])[1 + g % 4], 400 FROM generate_series(1, 10000) g;
SELECT dp_pg.protect('visits', 'person_id', max_groups_contributed => 2, max_rows_per_unit => 3);
SELECT dp_pg.set_public_keys('visits', 'ward', ARRAY['a','b','c','d']);
SELECT dp_pg.set_budget('analyst', 5, 1e-6);
SET ROLE analyst;
SELECT ward, dp_count(*) AS dp_visits, dp_sum(cost, 0, 400, 'laplace(epsilon=0.5)') AS dp_cost
FROM visits GROUP BY ward ORDER BY ward;
RESET ROLE;
\echo '(the same per person, bounded but without noise, and the raw totals)'
SELECT ward, sum(least(n, 3)) FILTER (WHERE keep) AS bounded_visits, sum(n) AS raw_visits
FROM (SELECT person_id, ward, count(*) AS n,
             row_number() OVER (PARTITION BY person_id ORDER BY random()) <= 2 AS keep
      FROM visits GROUP BY person_id, ward) s
GROUP BY ward ORDER BY ward;
\echo '--- The ledger (what the DBA sees)'
SELECT id, role, kind, round(epsilon::numeric, 4) AS epsilon, left(query, 60) AS query FROM dp_pg.ledger ORDER BY id;
SQL
echo "=== dp_pg demo done"
