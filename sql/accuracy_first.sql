--
-- Accuracy first: accuracy(halfwidth=H, level=L[, rows=N]) (src/core/accuracy.c,
-- src/release/callsite.c) names the accuracy instead of the budget.
-- dp_count(expr, mech), dp_sum, dp_avg and dp_histogram with bins resolve it
-- into the cheapest mechanism of the family the role's accounting chooses
-- (laplace for a pure-epsilon budget, gaussian(rho) under a rho limit, the
-- cheaper of the two for an (epsilon, delta) budget, the default mechanism's
-- family without a budget); dp_pg.estimate_cost and dp_pg.accuracy_cost say
-- what it costs before anything runs.
--
-- The chosen mechanisms are functions of (H, L, the sensitivity): printed.
-- Noisy checks ask for a level of 1 - 1e-12 and check |answer - truth| <= H:
-- each fails with probability at most 1e-12; the file fails by chance with
-- probability below 1e-10.
--
CREATE SCHEMA af;
SET search_path = af, public;
CREATE TABLE af.people AS
SELECT g AS id, (20 + g % 60)::float8 AS age, (ARRAY['n', 's'])[1 + g % 2] AS region FROM generate_series(1, 20000) g;

-- text form, constructor, rows
SELECT 'accuracy(halfwidth=50, level=0.95)'::dp_mechanism, dp_accuracy(2.5), dp_accuracy(1, 0.9, 400),
       'Accuracy ( Level = 0.99 , HalfWidth = 3, Rows = 10 )'::dp_mechanism;
SELECT m::text::dp_mechanism = m AS round_trip
FROM (VALUES ('accuracy(halfwidth=0.125, level=0.975, rows=1000)'::dp_mechanism)) v(m);

-- the chosen mechanism meets the half-width at the level: printed, with the charge
SELECT dp_count(1, 'accuracy(halfwidth=50, level=0.95)') IS NOT NULL FROM af.people;
SELECT aggregate, mechanism, ci95_halfwidth, epsilon, note LIKE '%Asked: accuracy(halfwidth=5e+01, level=0.95), the cheapest laplace meeting it.' AS note
FROM dp_pg.last_releases;
SELECT abs(dp_count(id, 'accuracy(halfwidth=50, level=0.999999999999)') - 20000) <= 50 AS count_within FROM af.people;
SELECT abs(dp_sum(age, 0, 100, 'accuracy(halfwidth=2000, level=0.999999999999)') - 990000) <= 2000 AS sum_within FROM af.people;
SELECT mechanism, ci95_halfwidth <= 2000 AS meets FROM dp_pg.last_releases;
SELECT abs(dp_avg(age, 0, 100, 'accuracy(halfwidth=0.5, level=0.999999999999, rows=10000)') - 49.5) <= 0.5 AS avg_within
FROM af.people;
SELECT mechanism FROM dp_pg.last_releases;
SELECT region, abs(dp_avg(age, 0, 100, dp_accuracy(0.5, 0.95, 10000)) - 49.5) <= 5 AS per_region
FROM af.people GROUP BY region ORDER BY region;
SELECT (SELECT bool_and(abs((h->>k)::float8 - 10000) <= 20) FROM jsonb_object_keys(h) k) AS bins_within
FROM (SELECT dp_histogram(region, ARRAY['n', 's'], 'accuracy(halfwidth=20, level=0.999999999999)') AS h FROM af.people) s;

-- before running: what a query would cost, what an accuracy would cost
SELECT * FROM dp_pg.estimate_cost('SELECT dp_count(1, ''accuracy(halfwidth=50, level=0.95)'') FROM af.people');
SELECT * FROM dp_pg.estimate_cost('accuracy(halfwidth=50, level=0.95)', 1);
SELECT * FROM dp_pg.estimate_cost('accuracy(halfwidth=50, level=0.95)', 0.5);
SELECT * FROM dp_pg.accuracy_cost('SELECT region, dp_count(1, ''laplace(epsilon=1)''), dp_avg(age, 0, 100, ''laplace(epsilon=1)''),
	dp_quantile(age, 0.5, 0, 100, ''laplace(epsilon=1)'') FROM af.people GROUP BY region', 50, 0.95, 100);
SELECT aggregate, mechanism FROM dp_pg.error_bars('SELECT dp_sum(age, 0, 100, dp_accuracy(500)) FROM af.people');

-- the family follows the role's accounting
CREATE ROLE af_pure;
CREATE ROLE af_zcdp;
CREATE ROLE af_approx;
GRANT USAGE ON SCHEMA af TO af_pure, af_zcdp, af_approx;
GRANT SELECT ON af.people TO af_pure, af_zcdp, af_approx;
SELECT dp_pg.set_budget('af_pure', 100, 0) IS NOT NULL AS pure,
       dp_pg.set_budget('af_zcdp', NULL, NULL, 100) IS NOT NULL AS zcdp,
       dp_pg.set_budget('af_approx', 100, 1e-5) IS NOT NULL AS approx;
SET ROLE af_pure;
SELECT dp_count(1, 'accuracy(halfwidth=50, level=0.95)') IS NOT NULL FROM af.people;
SELECT mechanism FROM dp_pg.last_releases;
RESET ROLE;
SET ROLE af_zcdp;
SELECT dp_count(1, 'accuracy(halfwidth=50, level=0.95)') IS NOT NULL FROM af.people;
SELECT mechanism FROM dp_pg.last_releases;
SELECT * FROM dp_pg.estimate_cost('accuracy(halfwidth=50, level=0.95)', 1);
RESET ROLE;
SET ROLE af_approx;
-- one release: laplace adds less to the spent epsilon at delta 1e-5 than a Gaussian of the same accuracy
SELECT dp_count(1, 'accuracy(halfwidth=50, level=0.95)') IS NOT NULL FROM af.people;
SELECT mechanism FROM dp_pg.last_releases;
RESET ROLE;
-- a team budget that is pure: Laplace, whatever the member's own (zCDP) budget says
CREATE ROLE af_team;
SELECT dp_pg.set_budget('af_team', 100, 0) IS NOT NULL AS team;
GRANT af_team TO af_zcdp;
SET ROLE af_zcdp;
SELECT dp_count(1, 'accuracy(halfwidth=50, level=0.95)') IS NOT NULL FROM af.people;
SELECT mechanism FROM dp_pg.last_releases;
RESET ROLE;
REVOKE af_team FROM af_zcdp;
SELECT role, detail->'sites'->0->>'mechanism' AS mechanism, detail->'sites'->0->>'asked' AS asked
FROM dp_pg.ledger WHERE role IN ('af_pure', 'af_zcdp', 'af_approx') AND kind = 'charge' ORDER BY id;
-- the team's row of the last charge (written beside af_zcdp's, in either order)
SELECT role, detail->'sites'->0->>'mechanism' AS mechanism
FROM dp_pg.ledger WHERE role = 'af_team' AND kind = 'charge';

-- refusals, none of them charged
SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT ''accuracy(halfwidth=0, level=0.95)''::dp_mechanism',
	'SELECT ''accuracy(halfwidth=50, level=1)''::dp_mechanism',
	'SELECT ''accuracy(halfwidth=50, level=0)''::dp_mechanism',
	'SELECT ''accuracy(halfwidth=''''NaN'''', level=0.9)''::dp_mechanism',
	'SELECT ''accuracy(halfwidth=50)''::dp_mechanism',
	'SELECT ''accuracy(halfwidth=50, level=0.9, rows=0)''::dp_mechanism',
	'SELECT ''accuracy(halfwidth=50, level=0.9, rows=2.5)''::dp_mechanism',
	'SELECT ''accuracy(halfwidth=50, level=0.9, rows=10, epsilon=1)''::dp_mechanism',
	'SELECT dp_accuracy(50, 0.9, -1)',
	'SET dp_pg.default_mechanism = ''accuracy(halfwidth=50, level=0.95)''',
	'SELECT dp_quantile(age, 0.5, 0, 100, ''accuracy(halfwidth=1, level=0.95)'') FROM af.people',
	'SELECT dp_histogram(region, ''accuracy(halfwidth=1, level=0.95)'') FROM af.people',
	'SELECT dp_avg(age, 0, 100, ''accuracy(halfwidth=0.01, level=0.95)'') FROM af.people',
	'SELECT dp_sum(age, 0, 100, ''accuracy(halfwidth=1e-300, level=0.95)'') FROM af.people',
	'SELECT dp_pg.calibrate(''accuracy(halfwidth=50, level=0.95)'', 1)',
	'SELECT dp_pg.synthesize(''af.people'', ''pg_temp.t'', ''accuracy(halfwidth=50, level=0.95)'')'
]) AS q;

RESET search_path;
DROP SCHEMA af CASCADE;
\set forget 'af_pure af_zcdp af_approx af_team'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
