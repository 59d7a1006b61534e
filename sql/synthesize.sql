--
-- dp_pg.synthesize (src/synth): synthetic twins of protected tables.
--
-- What is exact is checked exactly: the twin's columns, types, owner and
-- privileges, that every value lies in its domain or key list, that a call
-- is charged exactly once with the cost of its mechanism, and that every
-- refusal is an error with its SQLSTATE that charges nothing and leaves no
-- table.  Noisy values are checked by properties: the row count of a twin
-- made with laplace(epsilon=50) is the inverse-variance mean of the noisy
-- marginals' sums, whose noise has standard deviation below 3 here (every
-- cell's Laplace scale is below 1.5 at this epsilon); |count - n| <= 100 fails with
-- probability below 1e-12.
--
SET client_min_messages = error;
CREATE ROLE dp_s_owner;
CREATE ROLE dp_s_an;
CREATE ROLE dp_s_an2;
CREATE ROLE dp_s_other;
CREATE SCHEMA st AUTHORIZATION dp_s_owner;
CREATE SCHEMA st_twins;
GRANT USAGE ON SCHEMA st TO PUBLIC;
GRANT USAGE, CREATE ON SCHEMA st_twins TO dp_s_an, dp_s_an2, dp_s_other;
SET ROLE dp_s_owner;
CREATE TABLE st.people (
	id int PRIMARY KEY,
	region text NOT NULL,
	age int NOT NULL CHECK (age >= 0 AND age <= 99),
	smoker boolean,
	score numeric(6, 2) CHECK (score BETWEEN 0 AND 100),
	seen date NOT NULL CHECK (seen BETWEEN '2020-01-01' AND '2024-12-31'),
	note text
);
INSERT INTO st.people
SELECT i, (ARRAY['north', 'south', 'east', 'west'])[1 + i % 4], (i * 7) % 100,
       CASE WHEN i % 10 = 0 THEN NULL ELSE i % 3 = 0 END, (i % 1000) / 10.0,
       date '2020-01-01' + (i * 13) % 1800, 'note ' || i
FROM generate_series(1, 4000) i;
-- a value outside the declared keys: the row is left out
INSERT INTO st.people VALUES (4001, 'elsewhere', 50, true, 50, '2022-02-02', NULL);
CREATE TABLE st.visits (person int NOT NULL, dept text NOT NULL, cost int NOT NULL CHECK (cost BETWEEN 0 AND 1000));
INSERT INTO st.visits SELECT i % 500, (ARRAY['a', 'b', 'c'])[1 + i % 3], (i * 37) % 1001 FROM generate_series(1, 3000) i;
CREATE TABLE st.open (k text, v int CHECK (v BETWEEN 0 AND 9));
INSERT INTO st.open SELECT 'x', i % 10 FROM generate_series(1, 100) i;
CREATE TABLE st.tenants (tenant int NOT NULL CHECK (tenant BETWEEN 0 AND 9));
INSERT INTO st.tenants SELECT i % 10 FROM generate_series(1, 100) i;
CREATE VIEW st.people_view AS SELECT region, age FROM st.people;
RESET ROLE;
SELECT dp_pg.protect('st.people');
SELECT dp_pg.set_public_keys('st.people', 'region', ARRAY['north', 'south', 'east', 'west']);
SELECT dp_pg.protect('st.visits', 'person', 2, 1);
SELECT dp_pg.set_public_keys('st.visits', 'dept', ARRAY['a', 'b', 'c']);
SELECT dp_pg.protect('st.tenants');
ALTER TABLE st.tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON st.tenants USING (tenant = 3);
SELECT dp_pg.set_budget('dp_s_an', 1000, 1e-3);
SELECT dp_pg.set_budget('dp_s_an2', 1000, 1e-3);
SELECT dp_pg.set_budget('dp_s_other', 1, NULL);
CREATE FUNCTION st.charges(r text DEFAULT 'dp_s_an') RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger WHERE role = r::regrole AND kind = 'charge'
$$;
GRANT EXECUTE ON FUNCTION st.charges(text) TO PUBLIC;
CREATE FUNCTION st.last_charge(r text DEFAULT 'dp_s_an') RETURNS dp_pg.ledger LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
	SELECT * FROM dp_pg.ledger WHERE role = r::regrole AND kind = 'charge' ORDER BY id DESC LIMIT 1
$$;
GRANT EXECUTE ON FUNCTION st.last_charge(text) TO PUBLIC;

SET SESSION AUTHORIZATION dp_s_an;
SELECT st.charges() AS c0 \gset

-- every column that qualifies (note is free text, id has no domain): one charge of laplace(epsilon=50)
SELECT dp_pg.synthesize('st.people', 'st_twins.people', 'laplace(epsilon=50)') AS n \gset
SELECT abs(:n - 4000) <= 100 AS count_near_n, (SELECT count(*) FROM st_twins.people) = :n AS rows_made,
       st.charges() - :c0 AS charges;
SELECT epsilon = 50 OR (epsilon < 50 AND epsilon > 49.999) AS epsilon_is_the_mechanisms, delta = 0 AS pure,
       query LIKE '%synthesize%' AS query_kept, detail->'synthesize'->>'columns' AS columns
FROM st.last_charge();
SELECT column_name, data_type, is_nullable FROM information_schema.columns
WHERE table_schema = 'st_twins' AND table_name = 'people' ORDER BY ordinal_position;
SELECT relowner = 'dp_s_an'::regrole AS owned_by_caller, relacl IS NULL AS default_privileges
FROM pg_class WHERE oid = 'st_twins.people'::regclass;
SELECT bool_and(region IN ('north', 'south', 'east', 'west')) AS keys_only,
       bool_and(age BETWEEN 0 AND 99) AS ages_in_domain,
       bool_and(score BETWEEN 0 AND 100 AND score = round(score, 2)) AS scores_in_domain,
       bool_and(seen BETWEEN '2020-01-01' AND '2024-12-31') AS dates_in_domain,
       count(DISTINCT region) = 4 AS every_region
FROM st_twins.people;
-- it is an ordinary table its owner may use freely
SELECT count(*) > 0 AS browsable FROM (SELECT * FROM st_twins.people LIMIT 10) s;
UPDATE st_twins.people SET age = 0 WHERE false;

-- chosen columns, in the order given, and the other mechanism forms
SELECT st.charges() AS c1 \gset
SELECT dp_pg.synthesize('st.people', 'st_twins.p2', 'gaussian(epsilon=1, delta=1e-6)', ARRAY['age', 'region']::name[], bins => 5) > 0 AS made;
SELECT epsilon <= 1 AND epsilon > 0.99 AS epsilon_within, delta = 1e-6 AS delta_is_the_mechanisms, rho > 0 AS has_rho
FROM st.last_charge();
SELECT dp_pg.synthesize('st.people', 'st_twins.p3', 'gaussian(rho=0.5)', ARRAY['smoker']::name[]) >= 0 AS made;
SELECT rho <= 0.5 AND rho > 0.4999 AS rho_is_the_mechanisms FROM st.last_charge();
SELECT dp_pg.synthesize('st.people', 'st_twins.p4', 'osgt(epsilon=2, delta=1e-6)', ARRAY['region', 'smoker']::name[], rows => 100) AS n4;
SELECT epsilon <= 2 AND epsilon > 1.999 AS epsilon_within, delta <= 1e-6 AS delta_within FROM st.last_charge();
SELECT string_agg(column_name, ',' ORDER BY ordinal_position) AS p2_columns
FROM information_schema.columns WHERE table_schema = 'st_twins' AND table_name = 'p2';
SELECT count(*) AS p4_rows, bool_and(smoker IS NULL OR smoker IN (true, false)) AS booleans FROM st_twins.p4;
SELECT st.charges() - :c1 AS charges;

-- a table with a privacy unit: at most 2 x 1 rows of each person are measured
SELECT st.charges() AS c2 \gset
SELECT dp_pg.synthesize('st.visits', 'st_twins.visits', 'laplace(epsilon=50)') AS nv \gset
SELECT abs(:nv - 1000) <= 100 AS two_rows_per_person, st.charges() - :c2 AS charges,
       (detail->'synthesize'->>'unit_rows')::int AS unit_rows
FROM st.last_charge();
SELECT string_agg(column_name, ',' ORDER BY ordinal_position) AS visit_columns
FROM information_schema.columns WHERE table_schema = 'st_twins' AND table_name = 'visits';

-- another analyst may not read the twin unless its owner grants it
SET SESSION AUTHORIZATION dp_s_an2;
SELECT count(*) FROM st_twins.people;
SET SESSION AUTHORIZATION dp_s_an;
GRANT SELECT ON st_twins.people TO dp_s_an2;
SET SESSION AUTHORIZATION dp_s_an2;
SELECT count(*) > 0 AS shared FROM st_twins.people;

-- refusals: each an error with its SQLSTATE, nothing charged, no table left
SET SESSION AUTHORIZATION dp_s_an;
\set VERBOSITY sqlstate
SELECT st.charges() AS c3 \gset
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', ARRAY['note']::name[]);
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', ARRAY['id']::name[]);
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', ARRAY['nosuch']::name[]);
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', ARRAY['age', 'age']::name[]);
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', ARRAY['age', NULL]::name[]);
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', ARRAY[]::name[]);
SELECT dp_pg.synthesize('st.people', 'st_twins.people', 'laplace(epsilon=1)');
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', bins => 0);
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', bins => 1001);
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', bins => NULL);
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', rows => -1);
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)', rows => 1000000000000);
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=NaN)');
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=Infinity)');
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(scale=1)');
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', NULL);
SELECT dp_pg.synthesize('st.people', NULL, 'laplace(epsilon=1)');
SELECT dp_pg.synthesize(NULL, 'st_twins.r1', 'laplace(epsilon=1)');
SELECT dp_pg.synthesize('st.people', '', 'laplace(epsilon=1)');
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1e-300)');
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'gaussian(rho=1e-19)');
-- non-constant arguments: one call per row would be one release per row
SELECT dp_pg.synthesize('st.people', 'st_twins.r' || g, 'laplace(epsilon=1)') FROM generate_series(1, 2) g;
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', dp_laplace(random() + 1));
-- not a table; an unprotected table the analyst may not read; a schema without CREATE
SELECT dp_pg.synthesize('st.people_view', 'st_twins.r1', 'laplace(epsilon=1)');
SELECT dp_pg.synthesize('st.open', 'st_twins.r1', 'laplace(epsilon=1)', ARRAY['v']::name[]);
SELECT dp_pg.synthesize('st.people', 'st.r1', 'laplace(epsilon=1)');
-- another policy would scope the rows: not applied by a twin, so refused
SELECT dp_pg.synthesize('st.tenants', 'st_twins.r1', 'laplace(epsilon=1)');
-- read-only transaction
BEGIN TRANSACTION READ ONLY;
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1)');
ROLLBACK;
SELECT st.charges() - :c3 AS charges, to_regclass('st_twins.r1') IS NULL AND to_regclass('st_twins.r2') IS NULL AS no_table;
-- over budget: DP001, nothing charged, and the new table goes with the transaction
SET SESSION AUTHORIZATION dp_s_other;
SELECT st.charges('dp_s_other') AS c4 \gset
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=2)');
SELECT st.charges('dp_s_other') - :c4 AS charges, to_regclass('st_twins.r1') IS NULL AS no_table;
\set VERBOSITY default
-- a budget too small for any exact sampler: a bad parameter (22023), said so
SET SESSION AUTHORIZATION dp_s_an;
SELECT dp_pg.synthesize('st.people', 'st_twins.r1', 'laplace(epsilon=1e-300)', ARRAY['region']::name[]);
SELECT st.charges() - :c3 AS charges, to_regclass('st_twins.r1') IS NULL AS no_table;
RESET SESSION AUTHORIZATION;

-- a non-analyst: no charge; its twin of an unprotected table is refused
SET ROLE dp_s_owner;
SELECT dp_pg.synthesize('st.open', 'st_twins.r1', 'laplace(epsilon=1)', ARRAY['v']::name[]);
RESET ROLE;
-- the owner of a protected table may make a twin of it, uncharged (no budget)
SELECT dp_pg.synthesize('st.people', 'st_twins.by_dba', 'laplace(epsilon=50)', ARRAY['region']::name[]) > 0 AS made;
-- an analyst who may read an unprotected table is charged for its twin
GRANT SELECT ON st.open TO dp_s_an;
SET SESSION AUTHORIZATION dp_s_an;
SELECT st.charges() AS c5 \gset
SELECT dp_pg.synthesize('st.open', 'st_twins.open', 'laplace(epsilon=5)', ARRAY['v']::name[]) >= 0 AS made;
SELECT st.charges() - :c5 AS charges;
RESET SESSION AUTHORIZATION;

DROP SCHEMA st_twins CASCADE;
DROP SCHEMA st CASCADE;
SELECT dp_pg.drop_budget('dp_s_an');
SELECT dp_pg.drop_budget('dp_s_an2');
SELECT dp_pg.drop_budget('dp_s_other');
-- the roles of this file, their budgets and ledger rows
\set forget 'dp_s_owner dp_s_an dp_s_an2 dp_s_other'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
