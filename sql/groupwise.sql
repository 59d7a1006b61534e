--
-- groupwise(rho=R, r=X): seed 001's group-wise relative-error counts
-- (src/core/groupwise.c) as a mechanism of dp_count and dp_histogram with
-- bins: accepted where it releases counts, refused elsewhere, charged its rho,
-- an interval per released value, and the per-group guarantee computed
-- numerically (dp_pg.groupwise_rho, dp_pg.groupwise_divergence).
--
-- Noisy checks: a release of x is within 7 sigma1 + 1 + 7 r (x + 7 sigma1 + 1)
-- of x, which fails with probability below 2e-11 (both steps' discrete
-- Gaussian tails beyond 7 sds, 2 e^-24.5 each); fewer than 20 such checks:
-- the file fails by chance with probability below 1e-9.
--
CREATE SCHEMA gw;
SET search_path = gw, public;
CREATE TABLE gw.visits AS
SELECT g AS id, (ARRAY['a', 'b', 'c'])[g % 3 + 1] AS ward, (g % 100) / 10.0::float8 AS x
FROM generate_series(1, 30000) g;
CREATE FUNCTION gw.near(y float8, x float8, rho float8, r float8) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
	SELECT abs(y - x) <= 7 * sqrt(1 / (2 * rho)) + 1 + 7 * r * (x + 7 * sqrt(1 / (2 * rho)) + 1)
$$;

-- text form, constructor, round trip
SELECT 'groupwise(rho=0.5, r=0.05)'::dp_mechanism, dp_groupwise(0.25, 0.1),
       'GroupWise ( R = 0.2 , Rho = 1 )'::dp_mechanism;
SELECT m::text::dp_mechanism = m AS round_trip FROM (VALUES ('groupwise(rho=0.5, r=0.123456789)'::dp_mechanism)) v(m);

-- dp_count and dp_histogram with bins (public and equal-width), per group too
SELECT gw.near(dp_count(1, 'groupwise(rho=0.5, r=0.05)'), 30000, 0.5, 0.05) AS count_all FROM gw.visits;
SELECT ward, gw.near(dp_count(id, dp_groupwise(0.5, 0.1)), 10000, 0.5, 0.1) AS per_ward
FROM gw.visits GROUP BY ward ORDER BY ward;
SELECT (SELECT bool_and(gw.near((h->>k)::float8, CASE k WHEN 'z' THEN 0 ELSE 10000 END, 0.5, 0.05))
        FROM jsonb_object_keys(h) k) AS bins
FROM (SELECT dp_histogram(ward, ARRAY['a', 'b', 'c', 'z'], 'groupwise(rho=0.5, r=0.05)') AS h FROM gw.visits) s;
SELECT (SELECT count(*) FROM jsonb_object_keys(h)) AS width_bins
FROM (SELECT dp_histogram(x, 0, 10, 5, 'groupwise(rho=0.5, r=0.05)') AS h FROM gw.visits) s;
-- an interval per released value, holding the value; the note says what it covers
SELECT dp_histogram(ward, ARRAY['a', 'b', 'c', 'z'], 'groupwise(rho=0.5, r=0.05)') IS NOT NULL FROM gw.visits;
SELECT count(*) AS per_value_rows, bool_and(value BETWEEN ci95_lower AND ci95_upper) AS intervals,
       bool_and(noise_sd > 0) AS sd, bool_and(rho >= 0.5 AND epsilon = 'Infinity') AS charged_rho,
       bool_and(note LIKE 'Per value: groupwise relative error%') AS note
FROM dp_pg.last_releases;
-- r too large for an interval: none (NULL), said in the note
SELECT dp_count(1, 'groupwise(rho=0.5, r=0.5)') IS NOT NULL FROM gw.visits;
SELECT ci95_lower IS NULL AND ci95_upper IS NULL AS no_interval, note LIKE '%r is too large%' AS said
FROM dp_pg.last_releases;
-- inspection: the first step's noise and its cost
SELECT family, sigma, round(variance::numeric, 6) AS variance FROM dp_pg.calibrate('groupwise(rho=0.5, r=0.05)', 1);
SELECT epsilon, delta, round(rho::numeric, 12) AS rho, call_sites FROM dp_pg.estimate_cost('groupwise(rho=0.5, r=0.05)', 1);
SELECT epsilon, round(rho::numeric, 12) AS rho
FROM dp_pg.estimate_cost('SELECT ward, dp_count(1, ''groupwise(rho=0.25, r=0.1)'') FROM gw.visits GROUP BY ward');

-- the per-group guarantee: at most rho, smaller for larger groups, tending to alpha/(2 r^2 x^2)
SELECT x, round(dp_pg.groupwise_rho('groupwise(rho=0.5, r=0.05)', x)::numeric, 5) AS rho_of_group
FROM unnest(ARRAY[0, 1, 10, 20, 50, 100, 1000]) x;
SELECT round(dp_pg.groupwise_divergence('groupwise(rho=0.5, r=0.05)', 1000, 2)::numeric, 7) AS d2,
       round((2 / (2 * 0.05 ^ 2 * 1000 ^ 2))::numeric, 7) AS asymptote;

-- refusals
SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT dp_sum(id, 0, 10, ''groupwise(rho=0.5, r=0.05)'') FROM gw.visits',
	'SELECT dp_avg(x, 0, 10, ''groupwise(rho=0.5, r=0.05)'') FROM gw.visits',
	'SELECT dp_quantile(x, 0.5, 0, 10, ''groupwise(rho=0.5, r=0.05)'') FROM gw.visits',
	'SELECT dp_histogram(ward, ''groupwise(rho=0.5, r=0.05)'') FROM gw.visits',
	'SET dp_pg.default_mechanism = ''groupwise(rho=0.5, r=0.05)''',
	'SELECT ''groupwise(rho=0.5)''::dp_mechanism',
	'SELECT ''groupwise(rho=0.5, r=0.05, epsilon=1)''::dp_mechanism',
	'SELECT ''groupwise(rho=0.5, r=0)''::dp_mechanism',
	'SELECT ''groupwise(rho=0.5, r=1.5)''::dp_mechanism',
	'SELECT ''groupwise(rho=1e-13, r=0.1)''::dp_mechanism',
	'SELECT dp_count(1, ''groupwise(rho=0.5, r=0.01234567891)'') FROM gw.visits',
	'SELECT dp_pg.calibrate(''groupwise(rho=0.5, r=0.05)'', 0.5)',
	'SELECT dp_pg.groupwise_rho(''gaussian(rho=0.5)'', 10)',
	'SELECT dp_pg.groupwise_rho(''groupwise(rho=0.5, r=0.05)'', -1)',
	'SELECT dp_pg.groupwise_divergence(''groupwise(rho=0.5, r=0.05)'', 10, 1)',
	'SELECT dp_pg.groupwise_rho(''groupwise(rho=0.5, r=1)'', 100000000)',
	'SELECT dp_pg.synthesize(''gw.visits'', ''pg_temp.t'', ''groupwise(rho=0.5, r=0.05)'')'
]) AS q;

RESET search_path;
DROP SCHEMA gw CASCADE;
