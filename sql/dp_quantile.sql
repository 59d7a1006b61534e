--
-- dp_quantile / dp_median (src/aggregates/agg_quantile.c, src/core/quantile.c) and the
-- quantiles BI tools write (percentile_cont, percentile_disc, min, max).
--
-- Noisy answers are checked by properties.  The table holds x = 0 .. 9999
-- once each in [0, 10000) (1,024 cells of width 9.765625); with
-- laplace(epsilon=10) (gamma = 5) the exponential mechanism's answer has a
-- rank error above (2 / 10)(ln 1025 + 25) < 6.4 with probability below e^-25
-- (1.4e-11); a boundary within 6.4 ranks of rank r lies within 6.4 + 9.8 of
-- the value of rank r, so every accuracy check allows 20 (fewer than 20
-- checks: false failure below 3e-10).  Everything else here is exact: the
-- answer is always one of the 1,025 cell boundaries, errors are raised
-- before the charge.
--
SET client_min_messages = error;
CREATE ROLE dp_q_owner;
CREATE ROLE dp_q_an;
CREATE SCHEMA qt AUTHORIZATION dp_q_owner;
GRANT USAGE ON SCHEMA qt TO PUBLIC;
SET ROLE dp_q_owner;
CREATE TABLE qt.t (i int CHECK (i BETWEEN 0 AND 10000), x float8, g int, n numeric CHECK (n BETWEEN 0 AND 10000));
INSERT INTO qt.t SELECT i, i, i % 4, i FROM generate_series(0, 9999) i;
-- NULLs and NaNs are skipped
INSERT INTO qt.t VALUES (5000, NULL, 0, NULL), (5000, 'NaN', 0, 'NaN');
CREATE TABLE qt.u AS SELECT i AS person, i::float8 AS x FROM generate_series(1, 100) i;
CREATE TABLE qt.v AS SELECT i AS person, i::float8 AS x FROM generate_series(1, 100) i;
RESET ROLE;
SELECT dp_pg.protect('qt.t');
SELECT dp_pg.set_public_keys('qt.t', 'g', ARRAY[0, 1, 2, 3]);
SELECT dp_pg.set_domain('qt.t', 'x', 0, 10000);
SELECT dp_pg.protect('qt.u', 'person', 1, 1);
SELECT dp_pg.protect('qt.v', 'person', 1, 3);
SELECT dp_pg.set_budget('dp_q_an', 1e9, 1e-3);
CREATE FUNCTION qt.charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger WHERE role = 'dp_q_an'::regrole AND kind = 'charge'
$$;
GRANT EXECUTE ON FUNCTION qt.charges() TO PUBLIC;
-- an answer is a boundary lower + j (upper - lower) / 1024
CREATE FUNCTION qt.on_lattice(v float8, lo float8, hi float8) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
	SELECT v >= lo AND v <= hi AND (v - lo) * 1024 / (hi - lo) = round((v - lo) * 1024 / (hi - lo))
$$;
GRANT EXECUTE ON FUNCTION qt.on_lattice(float8, float8, float8) TO PUBLIC;
SET dp_pg.default_mechanism = 'laplace(epsilon=10)';
SET SESSION AUTHORIZATION dp_q_an;
SELECT qt.charges() AS c0 \gset

-- the median, other quantiles, the shorthand, on the lattice
SELECT dp_quantile(x, 0.5, 0, 10000, 'laplace(epsilon=10)') AS m,
       dp_quantile(x, 0.25, 0, 10000, 'laplace(epsilon=10)') AS q1,
       dp_median(x, 0, 10000, 'laplace(epsilon=10)') AS md,
       dp_median(x, 0, 10000) AS md_default FROM qt.t \gset
SELECT abs(:m - 5000) <= 20 AS median_ok, abs(:q1 - 2500) <= 20 AS q1_ok, abs(:md - 5000) <= 20 AS md_ok,
       abs(:md_default - 5000) <= 20 AS default_ok,
       qt.on_lattice(:m, 0, 10000) AND qt.on_lattice(:q1, 0, 10000) AND qt.on_lattice(:md, 0, 10000) AS on_lattice;
SELECT qt.charges() - :c0 AS charges;
-- values outside the bounds are clamped: the answer stays in [lower, upper]
SELECT dp_quantile(x, 0.5, 100, 200, 'laplace(epsilon=10)') AS c FROM qt.t \gset
SELECT :c >= 100 AND :c <= 200 AS clamped, :c >= 195 AS at_the_top, qt.on_lattice(:c, 100, 200) AS on_lattice;
-- min and max: the k-th smallest and largest values, k = max(ceil((ln 1025 + 4) / gamma), n / 20) = 500
SELECT dp_quantile(x, 0, 0, 10000, 'laplace(epsilon=10)') AS lo, dp_quantile(x, 1, 0, 10000, 'laplace(epsilon=10)') AS hi FROM qt.t \gset
SELECT abs(:lo - 500) <= 20 AS min_ok, abs(:hi - 9500) <= 20 AS max_ok;
-- GROUP BY public keys: each group's median (x = g mod 4: medians near 5000)
SELECT bool_and(abs(m - 5000) <= 25) AS group_medians_ok, count(*) AS groups
FROM (SELECT g, dp_median(x, 0, 10000, 'laplace(epsilon=10)') AS m FROM qt.t GROUP BY g) s;
-- a parallel plan (partial states combined)
RESET SESSION AUTHORIZATION;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET SESSION AUTHORIZATION dp_q_an;
SELECT dp_median(x, 0, 10000, 'laplace(epsilon=10)') AS pm FROM qt.t \gset
SELECT abs(:pm - 5000) <= 20 AS parallel_ok;
RESET SESSION AUTHORIZATION;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
SET SESSION AUTHORIZATION dp_q_an;
-- no row at all: still one answer on the lattice (nothing is withheld), charged
SELECT qt.charges() AS c1 \gset
SELECT dp_median(x, 0, 10000, 'laplace(epsilon=10)') AS e FROM qt.t WHERE i > 20000 \gset
SELECT qt.on_lattice(:e, 0, 10000) AS empty_on_lattice, qt.charges() - :c1 AS charges;

-- a table with a privacy unit: each person's values bounded (max_rows_per_unit = 1, one cell),
-- the sensitivity w = 1; x = 1 .. 100 once per person: the median within 8 (0.1-wide cells)
SELECT dp_median(x, 0, 100, 'laplace(epsilon=10)') AS um FROM qt.u \gset
SELECT abs(:um - 50) <= 8 AS unit_median_ok, qt.on_lattice(:um, 0, 100) AS on_lattice;
-- a person with many rows counts at most max_rows_per_unit of them (here 3): 1,000 rows of 100
-- for person 1 move the median by at most a few ranks (sensitivity 3: epsilon 30 for the same bound)
RESET SESSION AUTHORIZATION;
INSERT INTO qt.v SELECT 1, 100 FROM generate_series(1, 1000);
SET SESSION AUTHORIZATION dp_q_an;
SELECT dp_median(x, 0, 100, 'laplace(epsilon=30)') AS vm FROM qt.v \gset
SELECT abs(:vm - 50) <= 10 AS heavy_person_bounded;
RESET SESSION AUTHORIZATION;
SELECT detail->'sites'->0->>'unit_rows' AS rows_per_unit, detail->'sites'->0->>'aggregate' AS aggregate, epsilon
FROM dp_pg.ledger WHERE role = 'dp_q_an'::regrole AND kind = 'charge' ORDER BY id DESC LIMIT 1;
SET SESSION AUTHORIZATION dp_q_an;

-- what a release costs: epsilon, no delta, rho = epsilon^2 / 8 (bounded range), the exponential mechanism
RESET SESSION AUTHORIZATION;
SELECT epsilon, delta, round(rho::numeric, 6) AS rho, detail->'sites'->0->>'aggregate' AS aggregate,
       detail->'sites'->0->>'mechanism' AS mechanism, round((detail->'sites'->0->'rdp'->>0)::numeric, 6) AS rdp_first
FROM dp_pg.ledger WHERE role = 'dp_q_an'::regrole AND kind = 'charge' ORDER BY id DESC LIMIT 1;
SET SESSION AUTHORIZATION dp_q_an;

-- the quantiles BI tools write, on the column's value domain, with the plain aggregates' types
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS pc, percentile_disc(0.5) WITHIN GROUP (ORDER BY i) AS pd,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY n) AS pcn, min(i) AS mn, max(n) AS mx FROM qt.t \gset
SELECT abs(:pc - 5000) <= 20 AS cont_ok, abs(:pd - 5000) <= 20 AS disc_ok, abs(:pcn - 5000) <= 20 AS numeric_ok,
       abs(:mn - 500) <= 20 AS min_ok, abs(:mx - 9500) <= 20 AS max_ok;
-- descending order asks for the (1 - q)-quantile
SELECT percentile_cont(0.1) WITHIN GROUP (ORDER BY x DESC) AS d90, percentile_disc(0.25) WITHIN GROUP (ORDER BY i DESC) AS d75
FROM qt.t \gset
SELECT abs(:d90 - 9000) <= 20 AS desc_cont_ok, abs(:d75 - 7500) <= 20 AS desc_disc_ok;
-- the widest domain: boundaries stay finite
SELECT dp_median(x, -1e308, 1e308, 'laplace(epsilon=10)') AS w FROM qt.t \gset
SELECT :w >= -1e308 AND :w <= 1e308 AS finite;
SELECT pg_typeof(percentile_disc(0.5) WITHIN GROUP (ORDER BY i)) AS disc_type, pg_typeof(min(i)) AS min_type,
       pg_typeof(max(n)) AS max_type, pg_typeof(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)) AS cont_type FROM qt.t;
SELECT site, aggregate, mechanism FROM dp_pg.error_bars('SELECT min(i), percentile_cont(0.9) WITHIN GROUP (ORDER BY x) FROM qt.t');

-- refused or rejected before anything is charged
SELECT qt.charges() AS c2 \gset
\set VERBOSITY terse
SELECT dp_quantile(x, 0.5, 0, 10000, 'gaussian(epsilon=1, delta=1e-6)') FROM qt.t;
SELECT dp_quantile(x, 1.5, 0, 10000, 'laplace(epsilon=1)') FROM qt.t;
SELECT dp_quantile(x, -0.1, 0, 10000, 'laplace(epsilon=1)') FROM qt.t;
SELECT dp_quantile(x, 'NaN', 0, 10000, 'laplace(epsilon=1)') FROM qt.t;
SELECT dp_quantile(x, NULL, 0, 10000, 'laplace(epsilon=1)') FROM qt.t;
SELECT dp_quantile(x, 0.5, 10, 10, 'laplace(epsilon=1)') FROM qt.t;
SELECT dp_quantile(x, 0.5, 10, 0, 'laplace(epsilon=1)') FROM qt.t;
SELECT dp_quantile(x, 0.5, 0, 'Infinity', 'laplace(epsilon=1)') FROM qt.t;
-- bounds a few subnormals apart (no cell width): rejected before the charge
SELECT dp_quantile(x, 0.5, -5e-324, 5e-324, 'laplace(epsilon=1)') FROM qt.t;
SELECT dp_quantile(x, 0.5, NULL, 10, 'laplace(epsilon=1)') FROM qt.t;
SELECT dp_quantile(x, 0.5, 0, 10000, NULL) FROM qt.t;
SELECT dp_quantile(x, 0.5, 0, 10000, 'laplace(epsilon=1e-300)') FROM qt.t;
-- non-constant parameters (a column as the quantile or a bound)
SELECT dp_quantile(x, i / 10000.0, 0, 10000, 'laplace(epsilon=1)') FROM qt.t;
SELECT dp_quantile(x, 0.5, 0, x, 'laplace(epsilon=1)') FROM qt.t;
-- a default mechanism that is not a pure epsilon form
SET dp_pg.default_mechanism = 'gaussian(epsilon=1, delta=1e-6)';
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM qt.t;
RESET dp_pg.default_mechanism;
-- several fractions at once, and a column without a value domain
SELECT percentile_cont(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY x) FROM qt.t;
SELECT max(g) FROM qt.t;
\set VERBOSITY default
SELECT qt.charges() - :c2 AS charges_of_refusals;
RESET SESSION AUTHORIZATION;
RESET dp_pg.default_mechanism;

SELECT dp_pg.unprotect('qt.t');
SELECT dp_pg.unprotect('qt.u');
SELECT dp_pg.unprotect('qt.v');
SELECT dp_pg.drop_budget('dp_q_an');
DROP SCHEMA qt CASCADE;
-- the roles of this file, their budgets and ledger rows
\set forget 'dp_q_owner dp_q_an'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
