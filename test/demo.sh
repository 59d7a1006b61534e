#!/usr/bin/env bash
# test/demo.sh — dp_pg's main job, end to end, on a fresh Debian 12 machine.
#
# Installs what it needs, builds and installs the release build of dp_pg (no
# test switches) into the system's PostgreSQL 15, starts a throw-away cluster
# (postgres system user, scratch directory, private port), creates synthetic
# data in SQL, gives an analyst a budget and runs example dp queries as that
# analyst.  Every answer is shown with the true value (computed by the
# superuser, only because this is a demo, with the same bounding the answer
# used), its 95% interval and what it was charged, and every charge is
# explained; refused queries are shown with their SQL and their error.
# DP_KEEP_SCRATCH=1 keeps the cluster's directory; the server is always
# stopped at the end.  DP_DEMO_NO_BUILD=1 skips the packages and the build
# and uses the dp_pg already installed in DP_PGBIN's server (test/demo_check.sh
# runs the demo so, on the test leg's server, and checks what it says).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DP_PORT=${DP_PORT:-55433}
step() { echo; echo "[$1/6] $2"; }

echo "=== dp_pg demo"
if [ -n "${DP_DEMO_NO_BUILD:-}" ]; then
	step 1 "Installing the Debian packages: skipped (DP_DEMO_NO_BUILD=1)"
	step 2 "Building dp_pg: skipped (DP_DEMO_NO_BUILD=1): the dp_pg installed in $DP_PGBIN"
else
	step 1 "Installing the Debian packages dp_pg needs (PostgreSQL 15, its server headers, OpenSSL;"
	echo "      only the missing ones: a few minutes on a fresh machine, nothing otherwise)"
	dp_install_deps

	step 2 "Building the release build of dp_pg and installing it into PostgreSQL 15"
	echo "      (the build users get: no test switches, no dp_pg.debug_noiseless)"
	LOG=$(mktemp /tmp/dp_pg-demo-build.XXXXXX.log)
	if ! dp_build_install >"$LOG" 2>&1; then
		echo "build failed; its output is in $LOG" >&2
		tail -20 "$LOG" >&2
		exit 1
	fi
	rm -f "$LOG"
fi
echo "      installed: $("$DP_PG_CONFIG" --pkglibdir)/dp_pg.so"

step 3 "Starting a throw-away cluster (as the postgres user, private port $DP_PORT)"
SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; [ -n "${DP_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"' EXIT
DP_ANSWER_CACHE=on dp_cluster_start "$SCRATCH" "$DP_PORT"
dp_ledger_db "$SCRATCH" "$DP_PORT" postgres
echo "      cluster in $SCRATCH; CREATE EXTENSION dp_pg done in the ledger database (postgres)"

# (stdout line-buffered: piped into a file or a pager, each refused query's
# SQL stays before its error)
psql_demo() {
	stdbuf -oL psql -X -v ON_ERROR_STOP=1 -h "$SCRATCH" -p "$DP_PORT" -U postgres -d postgres "$@"
}

step 4 "Creating synthetic data: 1,000,000 people, and 1,010,000 clinic visits of 200,000 of them"
echo "      (every age from 18 to 90, region and ward equally likely; each person visits two wards,"
echo "      a home ward and one other; person 42 has 10,000 visits more, 5,000 in each of theirs)"
psql_demo -q <<'SQL'
SELECT setseed(0.42) \g /dev/null
CREATE TABLE people AS
SELECT g AS id,
       18 + floor(random() * 73)::int AS age,
       (ARRAY['north','south','east','west','central'])[1 + floor(random() * 5)::int] AS region,
       round((20000 + random() * 180000)::numeric, 2) AS income,
       random() < 0.08 AS sensitive
FROM generate_series(1, 1000000) g;
-- person p's home ward is p % 4, the other one of the three others, each half of the visits
CREATE TABLE visits AS
SELECT p AS person_id,
       (ARRAY['a','b','c','d'])[1 + CASE WHEN random() < 0.5 THEN p % 4 ELSE (p + 1 + (p / 4) % 3) % 4 END] AS ward,
       round((random() * 400)::numeric, 2)::float8 AS cost
FROM (SELECT 1 + floor(random() * 200000)::int AS p FROM generate_series(1, 1000000)) v;
-- one person with 10,000 visits: without a privacy unit they would dominate
INSERT INTO visits
SELECT 42, (ARRAY['a','b','c','d'])[1 + CASE WHEN g % 2 = 0 THEN 42 % 4 ELSE (42 + 1 + (42 / 4) % 3) % 4 END], 400
FROM generate_series(1, 10000) g;
ANALYZE people, visits;
SQL

step 5 "The DBA protects the tables and gives the role 'analyst' a budget"
psql_demo -At <<'SQL'
SELECT CASE WHEN count(*) = 0 THEN '      release build: dp_pg.debug_noiseless is not a setting here'
            ELSE '      WARNING: a test build is installed (dp_pg.debug_noiseless exists)' END
FROM pg_settings WHERE name = 'dp_pg.debug_noiseless';
SQL
psql_demo -q <<'SQL'
\o /dev/null
SELECT dp_pg.protect('people');
SELECT dp_pg.set_public_keys('people', 'region', ARRAY['north','south','east','west','central']);
SELECT dp_pg.protect('visits', 'person_id', max_groups_contributed => 2, max_rows_per_unit => 3);
SELECT dp_pg.set_public_keys('visits', 'ward', ARRAY['a','b','c','d']);
CREATE ROLE analyst LOGIN;
SELECT dp_pg.set_budget('analyst', epsilon => 10, delta => 1e-6);
-- the demo's helper: the analyst's last charge
CREATE FUNCTION last_charge(OUT epsilon float8, OUT delta float8) LANGUAGE sql AS
$$ SELECT epsilon, delta FROM dp_pg.ledger
   WHERE role = 'analyst'::regrole AND kind = 'charge' ORDER BY id DESC LIMIT 1 $$;
\o
\echo '      protected: people (public keys: region), visits (privacy unit person_id, public keys: ward)'
\echo '      budget of analyst: epsilon 10, delta 1e-6'
SQL

step 6 "Questions, asked as the analyst"
psql_demo <<'SQL'
\set QUIET on
\pset footer off
\echo
\echo '=== 1. How many people are over 65?   SELECT dp_count(*) FROM people WHERE age > 65'
SET ROLE analyst;
SELECT dp_count(*) AS answer FROM people WHERE age > 65 \gset
\set first_answer :answer
RESET ROLE;
SELECT :answer AS dp_answer, (SELECT count(*) FROM people WHERE age > 65) AS true_value,
       format('%s .. %s', ci.lower, ci.upper) AS interval_95, c.epsilon AS charged_epsilon, c.delta AS charged_delta
FROM dp_confidence_interval(:answer, current_setting('dp_pg.default_mechanism')::dp_mechanism, 1, 0.95) ci, last_charge() c;
\echo 'Charge explained: dp_count(*) names no mechanism, so it used dp_pg.default_mechanism'
\echo '(laplace(epsilon=1)): epsilon 1, no delta.  The interval is the noise''s 95% range around the'
\echo 'answer (dp_confidence_interval with sensitivity 1: one person changes a count by at most 1).'
\echo '(true value: shown only because this is a demo; an analyst never sees it)'

\echo
\echo '=== 2. People per region (region has declared public keys), epsilon 0.5'
SET ROLE analyst;
CREATE TEMP TABLE r2 AS SELECT region, dp_count(id, 'laplace(epsilon=0.5)') AS answer FROM people GROUP BY region;
RESET ROLE;
SELECT r.region, r.answer AS dp_answer, t.n AS true_value,
       format('%s .. %s', ci.lower, ci.upper) AS interval_95
FROM r2 r JOIN (SELECT region, count(*) AS n FROM people GROUP BY region) t USING (region),
     dp_confidence_interval(r.answer, 'laplace(epsilon=0.5)', 1, 0.95) ci ORDER BY r.region;
SELECT epsilon AS charged_epsilon, delta AS charged_delta FROM last_charge();
\echo 'Charge explained: epsilon 0.5 once, not 5 times: each person is in exactly one region, so'
\echo 'the groups compose in parallel.  Every declared region is listed (also an empty one),'
\echo 'so which regions appear reveals nothing and costs nothing.'

\echo
\echo '=== 3. People per age over 85 (age has no declared keys), epsilon 0.2'
SET ROLE analyst;
CREATE TEMP TABLE r3 AS SELECT age, dp_count(id, 'laplace(epsilon=0.2)') AS answer FROM people WHERE age > 85 GROUP BY age;
RESET ROLE;
SELECT r.age, r.answer AS dp_answer, t.n AS true_value, format('%s .. %s', ci.lower, ci.upper) AS interval_95
FROM r3 r JOIN (SELECT age, count(*) AS n FROM people WHERE age > 85 GROUP BY age) t USING (age),
     dp_confidence_interval(r.answer, 'laplace(epsilon=0.2)', 1, 0.95) ci ORDER BY r.age;
SELECT epsilon AS charged_epsilon, delta AS charged_delta, current_setting('dp_pg.partition_mechanism') AS partition_mechanism
FROM last_charge();
\echo 'Charge explained: 0.2 for the counts plus 0.5 and delta 1e-8 for private partition selection'
\echo '(dp_pg.partition_mechanism): without declared keys, which ages exist is itself private, so'
\echo 'a group is released only when its own noisy count passes a threshold, and that costs too.'
\echo 'dp_pg.estimate_cost shows such a total before anything runs.'

\echo
\echo '=== 4. Total income of the sensitive people, gaussian(epsilon=0.5, delta=1e-8), bounds 0 .. 200000'
SET ROLE analyst;
SELECT dp_sum(income, 0, 200000, 'gaussian(epsilon=0.5, delta=1e-8)') AS answer FROM people WHERE sensitive \gset
RESET ROLE;
SELECT round(:answer::numeric) AS dp_answer, (SELECT sum(income) FROM people WHERE sensitive) AS true_value,
       format('%s .. %s', round(ci.lower::numeric), round(ci.upper::numeric)) AS interval_95,
       c.epsilon AS charged_epsilon, c.delta AS charged_delta
FROM dp_confidence_interval(:answer, 'gaussian(epsilon=0.5, delta=1e-8)', 200000, 0.95) ci, last_charge() c;
\echo 'Charge explained: the (epsilon, delta) of the mechanism asked for.  One person moves the sum'
\echo 'by at most 200000 (the upper bound), so that is the sensitivity of the interval; incomes'
\echo 'outside the bounds would be clamped, which the interval does not include.'

\echo
\echo '=== 5. Visits per ward: a privacy unit (person_id) bounds each person first'
\echo '(at most 2 wards and 3 visits per ward count per person; person 42 has 10,000 visits)'
SET ROLE analyst;
CREATE TEMP TABLE r5 AS SELECT ward, dp_count(*) AS answer FROM visits GROUP BY ward;
RESET ROLE;
SELECT r.ward, r.answer AS dp_answer, t.raw AS true_raw_count, t.bounded AS true_bounded_count,
       format('%s .. %s', ci.lower, ci.upper) AS interval_95
FROM r5 r JOIN (SELECT ward, sum(n) AS raw, sum(least(n, 3)) AS bounded
                FROM (SELECT person_id, ward, count(*) AS n FROM visits GROUP BY 1, 2) s GROUP BY ward) t USING (ward),
     dp_confidence_interval(r.answer, 'laplace(epsilon=0.5)', 3, 0.95) ci ORDER BY r.ward;
SELECT epsilon AS charged_epsilon, delta AS charged_delta,
       (SELECT max(k) FROM (SELECT count(DISTINCT ward) AS k FROM visits GROUP BY person_id) w) AS most_wards_of_a_person
FROM last_charge();
\echo 'Charge explained: dp_count(*) used the default laplace(epsilon=1).  A person may add up to'
\echo '3 to each of 2 wards, so each ward''s noise is planned for sensitivity 3 with epsilon 1/2'
\echo '(the interval above uses exactly that), and the two halves compose to the epsilon 1 charged.'
\echo 'The answers estimate the bounded count, not the raw one: each person''s visits count at most 3'
\echo 'times per ward, so person 42''s 10,000 visits count as 6.  No person visits more than 2 wards'
\echo '(most_wards_of_a_person), so the bound on wards keeps every ward of everyone and'
\echo 'true_bounded_count, each person''s min(visits, 3) per ward, is exactly what the answers estimate.'
\echo '(A person with visits in more wards would keep 2 of them, chosen at random.)'

\echo

\echo '=== 6. A rolled-back query is charged all the same'
SET ROLE analyst;
BEGIN;
SELECT dp_count(id, 'laplace(epsilon=0.5)') IS NOT NULL AS answered FROM people WHERE sensitive;
ROLLBACK;
RESET ROLE;
SELECT epsilon AS charged_epsilon FROM last_charge();
\echo 'Charge explained: the charge is written (and committed) before the first row is read,'
\echo 'outside the analyst''s transaction: ROLLBACK, errors and crashes cannot take it back.'

\echo
\echo '=== 7. A dashboard refresh: the same question again is served free'
SELECT count(*) AS charges_before FROM dp_pg.ledger \gset
SET ROLE analyst;
SELECT dp_count(*) AS again FROM people WHERE age > 65 \gset
SELECT :first_answer AS first_answer, :again AS answer_now, from_cache, noise_sd, ci95_halfwidth FROM dp_pg.last_releases;
RESET ROLE;
SELECT count(*) - :charges_before AS new_charges FROM dp_pg.ledger;
\echo 'Explained: the identical query from the same budget on unchanged data gets the answer already'
\echo 'released (re-sending it is post-processing: no new noise, no charge).  dp_pg.last_releases'
\echo 'gives any answer''s error bar: the noise''s standard deviation and the 95% half-width.'
\echo 'A new person (id 1000001, aged 70) is added to people:'
INSERT INTO people (id, age, region, income, sensitive) VALUES (1000001, 70, 'north', 1000, false);
SET ROLE analyst;
SELECT dp_count(*) AS again FROM people WHERE age > 65 \gset
SELECT from_cache FROM dp_pg.last_releases;
RESET ROLE;
SELECT count(*) - :charges_before AS new_charges FROM dp_pg.ledger;
\echo 'After a write to the table the same question is a new release, charged again.'

\echo
\echo '=== 8. A plain count(*), as BI tools write it: answered as dp_count, and charged'
SELECT count(*) AS charges_before FROM dp_pg.ledger \gset
SET ROLE analyst;
SELECT count(*) AS answer FROM people \gset
RESET ROLE;
SELECT :answer AS dp_answer, (SELECT count(*) FROM people) AS true_value,
       format('%s .. %s', ci.lower, ci.upper) AS interval_95, c.epsilon AS charged_epsilon,
       (SELECT count(*) FROM dp_pg.ledger) - :charges_before AS new_charges
FROM dp_confidence_interval(:answer, current_setting('dp_pg.default_mechanism')::dp_mechanism, 1, 0.95) ci,
     last_charge() c;
\echo 'true_value: the 1,000,000 people of step 4 and the one added in section 7, 1,000,001.'
\echo 'Charge explained: on a protected table the guard plans count(*), sum and avg as dp_count,'
\echo 'dp_sum and dp_avg with dp_pg.default_mechanism (sum and avg need a value domain), so a'
\echo 'BI tool''s SQL works unchanged: each such aggregate is a release, charged like any dp query.'

\set ON_ERROR_STOP 0
SET ROLE analyst;
\echo
\echo '=== Refused (as intended): reading raw rows of a protected table (the hint says what to do instead)'
\set ECHO queries
SELECT * FROM people LIMIT 1;
\set ECHO none
\echo
\echo '=== Refused (as intended): an aggregate that has no differentially private form'
\set ECHO queries
SELECT string_agg(region, ',') FROM people;
\set ECHO none
\echo
\echo '=== Refused (as intended): a WHERE that could fail on one person''s row (a data-dependent error)'
\set ECHO queries
SELECT dp_count(*) FROM people WHERE 1 / (age - 40) > 0;
\set ECHO none
\echo
\echo '=== Refused (as intended): asking for more than the budget has left (DP001: nothing charged)'
\set ECHO queries
SELECT dp_count(id, 'laplace(epsilon=50)') FROM people;
\set ECHO none
\echo
\echo '=== Not refused, but masked: statistics and sizes of a protected table read NULL'
\set ECHO queries
SELECT relname, reltuples, relpages FROM pg_class WHERE relname = 'people';
\set ECHO none
RESET ROLE;
\set ON_ERROR_STOP 1

\echo
\echo '=== The analyst''s budget after all this'
SET ROLE analyst;
SELECT role, epsilon_limit, epsilon_spent, epsilon_remaining, delta_limit, delta_spent, charges, accounting
FROM dp_pg.my_budget;
RESET ROLE;
\echo '(epsilon_spent is the tightest bound the accountant can prove for the whole history:'
\echo ' Renyi composition can make it less than the sum of the charges; "accounting" names the bound.'
\echo ' The budget and ledger views show six significant digits; dp_pg.budget_rows() and'
\echo ' dp_pg.ledger_rows() give the exact values)'
\echo
\echo '=== The ledger (what the DBA sees)'
SELECT id, role, kind, epsilon, delta, left(query, 60) AS query FROM dp_pg.ledger ORDER BY id;
\echo '(a limit row for set_budget, then one charge per answered question: sections 1 to 8;'
\echo ' the served refresh of section 7 and the refused queries have none)'
SQL
echo
echo "=== dp_pg demo done (its cluster is removed; for a cluster of your own to follow README's"
echo "    tour, see docs/dba.md, \"Installing by hand\", or README's Debian package)"
