--
-- dp_count: noisy answers checked by properties, never by value.
--
-- Discrete Laplace noise with scale t has P(|noise| >= k) <= 2 exp(-k/t).
-- Every Laplace bound below is 25 t, so a correct implementation fails one
-- check with probability <= 2 e^-25 < 3e-11; Gaussian and OSGT bounds are
-- 7 sigma + 1 (< 1e-11, see below).  This file makes fewer than 30 such
-- checks, so it fails by chance with probability < 1e-9.
--
CREATE TABLE people AS
SELECT g AS id, (g % 10) AS region, CASE WHEN g % 10 = 0 THEN NULL ELSE g END AS maybe
FROM generate_series(1, 1000) g;
CREATE TABLE nobody (x int);

SHOW dp_pg.default_mechanism;
-- default mechanism laplace(epsilon=1): t = 1, bound 25
SELECT abs(dp_count(*) - 1000) <= 25 AS close FROM people;
SELECT pg_typeof(dp_count(*)) FROM people;
-- counts non-null values
SELECT abs(dp_count(maybe, 'laplace(epsilon=0.5)') - 900) <= 50 AS close FROM people;
-- dp_count(1, mech) counts rows; constructors work as mechanisms
SELECT abs(dp_count(1, dp_laplace(2)) - 1000) <= 12.5 AS close FROM people;
SELECT abs(dp_count(id, dp_laplace(epsilon => 1)) - 1000) <= 25 AS close FROM people;
-- every family: discrete Gaussian / OSGT noise exceeds 7 sigma + 1 with
-- probability < 1e-11 (tail sum bounded by Q(7) over the normaliser bound)
SELECT abs(dp_count(id, 'gaussian(epsilon=1, delta=1e-6)') - 1000)
       <= 7 * (dp_pg.calibrate('gaussian(epsilon=1, delta=1e-6)', 1)).sigma + 1 AS close FROM people;
SELECT abs(dp_count(id, dp_gaussian(0.5, 1e-9)) - 1000)
       <= 7 * (dp_pg.calibrate(dp_gaussian(0.5, 1e-9), 1)).sigma + 1 AS close FROM people;
SELECT abs(dp_count(id, 'gaussian(rho=0.5)') - 1000) <= 7 * 1 + 1 AS close FROM people;
SELECT abs(dp_count(id, dp_gaussian_zcdp(0.01)) - 1000) <= 7 * sqrt(1 / 0.02) + 1 AS close FROM people;
SELECT abs(dp_count(id, 'osgt(epsilon=1, delta=1e-6)') - 1000)
       <= 7 * (dp_pg.calibrate('osgt(epsilon=1, delta=1e-6)', 1)).sigma + 1 AS close FROM people;
SELECT abs(dp_count(id, dp_osgt(2, 1e-10)) - 1000)
       <= 7 * (dp_pg.calibrate(dp_osgt(2, 1e-10), 1)).sigma + 1 AS close FROM people;
SET dp_pg.default_mechanism = 'osgt(epsilon=1, delta=1e-8)';
SELECT abs(dp_count(*) - 1000) <= 7 * (dp_pg.calibrate('osgt(epsilon=1, delta=1e-8)', 1)).sigma + 1 AS close FROM people;
RESET dp_pg.default_mechanism;
SELECT dp_count(x, 'gaussian(epsilon=1, delta=1e-6)') IS NOT NULL AS not_null,
       dp_count(x, 'osgt(epsilon=1, delta=1e-6)') IS NOT NULL AS not_null2 FROM nobody;

-- FILTER and WHERE
SELECT abs(dp_count(*) FILTER (WHERE region = 3) - 100) <= 25 AS close FROM people;
SELECT abs(dp_count(*) - 100) <= 25 AS close FROM people WHERE region = 3;

-- empty input: a noisy number, never NULL
SELECT dp_count(*) IS NOT NULL AS not_null, abs(dp_count(*)) <= 25 AS close FROM nobody;
SELECT dp_count(x, 'laplace(epsilon=1)') IS NOT NULL AS not_null FROM nobody;
SELECT abs(dp_count(*)) <= 25 AS close FROM people WHERE false;

-- GROUP BY: one noisy count per group, each within its bound
SELECT count(*) AS groups, bool_and(abs(n - 100) <= 25) AS all_close
FROM (SELECT region, dp_count(*) AS n FROM people GROUP BY region) s;

-- the noise is really there: 50 groups of 100 rows do not all come out at 100
-- (P(noise = 0) = tanh(1/2) < 0.47 at epsilon 1, so P(all 50 exact) < 1e-16)
SELECT count(DISTINCT n) > 1 AS varies, bool_and(abs(n - 100) <= 25) AS all_close
FROM (SELECT g, dp_count(*) AS n FROM generate_series(1, 50) g, generate_series(1, 100) r GROUP BY g) s;

-- prepared statements with a bound mechanism (JDBC/ODBC send $1), custom and generic plans
PREPARE count_with(dp_mechanism) AS SELECT abs(dp_count(id, $1) - 1000) <= 25 AS close FROM people;
EXECUTE count_with('laplace(epsilon=1)');
EXECUTE count_with(dp_laplace(4));
PREPARE count_text(text) AS SELECT abs(dp_count(id, $1) - 1000) <= 25 AS close FROM people;
PREPARE count_varchar(varchar) AS SELECT abs(dp_count(id, $1) - 1000) <= 25 AS close FROM people;
PREPARE count_eps(float8) AS SELECT abs(dp_count(id, dp_laplace($1)) - 1000) <= 25 AS close FROM people;
SET plan_cache_mode = force_generic_plan;
EXECUTE count_with('laplace(epsilon=1)');
EXECUTE count_text('laplace(epsilon=1)');
EXECUTE count_varchar('laplace(epsilon=1)');
EXECUTE count_eps(1);
EXECUTE count_text('laplace(epsilon=nan)');
EXECUTE count_eps('NaN');
EXECUTE count_eps(-1);
EXECUTE count_with(NULL);
RESET plan_cache_mode;

-- PL/pgSQL variables are bound parameters too
DO $$
DECLARE
	m dp_mechanism := 'laplace(epsilon=1)';
	n bigint;
BEGIN
	SELECT dp_count(id, m) INTO n FROM people;
	RAISE NOTICE 'plpgsql close: %', abs(n - 1000) <= 25;
END $$;

-- the mechanism must be constant for the query (22023), not null (22004),
-- a privacy form (22023); one release per group: no window calls, no GROUPING
-- SETS, no direct calls of the final functions (0A000)
SELECT dp_count(id, dp_laplace(region + 1)) FROM people;
SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT dp_count(id, dp_laplace(region + 1)) FROM people',
	'SELECT dp_count(id, CASE WHEN id > 500 THEN ''laplace(epsilon=1)''::dp_mechanism ELSE ''laplace(epsilon=2)'' END) FROM people',
	'SELECT dp_count(id, dp_laplace(random() + 1)) FROM people',
	'SELECT dp_count(id, (SELECT dp_laplace(1))) FROM people',
	'SELECT dp_count(id, (SELECT dp_laplace(max(id)) FROM people)) FROM people',
	'SELECT p.region, (SELECT dp_count(x, dp_laplace(p.region + 1)) FROM nobody) FROM people p WHERE id = 1',
	'SELECT dp_count(id, NULL) FROM people',
	'SELECT dp_count(x, NULL::dp_mechanism) FROM nobody',
	'SELECT dp_count(id, ''laplace(scale=1)'') FROM people',
	'SELECT dp_count(id, ''gaussian(sigma=1)'') FROM people',
	'SELECT dp_count(id, ''osgt(sigma=1, m=1)'') FROM people',
	'SELECT dp_count(id, ''laplace(epsilon=0)'') FROM people',
	'SELECT dp_count(id, ''laplace(epsilon=one)'') FROM people',
	'SELECT dp_count(id, ''laplace(epsilon=NaN)'') FROM people',
	'SELECT dp_count(id, dp_laplace(''Infinity'')) FROM people',
	'SELECT dp_count(*) OVER () FROM people',
	'SELECT dp_count(id, dp_laplace(1)) OVER (PARTITION BY region) FROM people',
	'SELECT region, dp_count(*) FROM people GROUP BY ROLLUP (region)',
	'SELECT region, dp_count(id, dp_laplace(1)) FROM people GROUP BY GROUPING SETS ((region), ())',
	'SELECT dp_count_star_final(5)',
	'SELECT dp_count_final(5)',
	'SELECT g, (SELECT dp_count(*) FROM people WHERE id > g) FROM generate_series(1, 3) g',
	'SELECT g, (SELECT dp_count(id, ''laplace(epsilon=1)'') FROM people) FROM generate_series(1, 3) g WHERE g IN (SELECT dp_count(*) FROM nobody)',
	'SELECT g, s.n FROM generate_series(1, 3) g, LATERAL (SELECT dp_count(*) AS n FROM people WHERE id > g) s',
	'SELECT * FROM generate_series(1, 3) g WHERE EXISTS (SELECT dp_count(*) FROM people WHERE id = g)',
	'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < (SELECT dp_count(*) FROM people WHERE id < r.n)) SELECT count(*) FROM r',
	-- (an uncorrelated subquery in a recursive term is an InitPlan: computed
	-- once however often the term runs, so it is answered)
	'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < (SELECT dp_count(*) FROM people WHERE id < 3)) SELECT count(*) FROM r'
]) AS q;
-- computed once, a dp aggregate may feed the rest of the query (post-processing)
SELECT (SELECT abs(dp_count(*) - 1000) <= 25 FROM people) AS uncorrelated_subquery;
WITH s AS MATERIALIZED (SELECT dp_count(*) AS n FROM people)
SELECT count(*) AS rows, bool_and(abs(n - 1000) <= 25) AS close FROM generate_series(1, 3) g, s;
-- an aggregate of one's own around dp_pg's final function releases nothing
CREATE AGGREGATE evil_count(*) (SFUNC = int8inc, STYPE = int8, FINALFUNC = dp_count_star_final, INITCOND = '1000000');
SELECT evil_count(*) FROM people;
DROP AGGREGATE evil_count(*);
-- EXPLAIN without ANALYZE plans nothing and releases nothing
EXPLAIN (COSTS OFF) SELECT dp_count(id, 'laplace(epsilon=1)') FROM people;
