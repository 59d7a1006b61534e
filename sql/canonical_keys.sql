--
-- canonical_keys: a released key is a function of its equality class, never
-- of one row's spelling of it (guard/canonical.c).  Person 1's row holds odd
-- spellings of values every other row holds canonically (numeric 5.000
-- among 5s, -0 among 0s, 24 hours among 1 days, ...) and is the first row
-- every aggregation meets; GROUP BY, DISTINCT, dp_histogram's labels, the
-- unit-table forms and a joined public table's keys all release the
-- canonical spelling, with or without person 1's row (the predicate-oracle
-- twin).  Keys of types without a canonical spelling are refused before the
-- charge.  Released keys are printed; noisy counts only as booleans: each
-- group has 2000 rows, and partition selection (gaussian(epsilon=0.5,
-- delta=1e-8), threshold below 60) drops one with probability < 1e-300.
--
\set VERBOSITY terse
CREATE SCHEMA ck;
CREATE ROLE ck_ana;
GRANT USAGE ON SCHEMA ck TO ck_ana;
CREATE COLLATION ck.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TYPE ck.pair AS (amt numeric, cur text);
CREATE DOMAIN ck.amt AS numeric;

-- 1. the canonical spellings themselves (superuser; dp_pg.canonical_key is total)
SELECT v::text AS input, dp_pg.canonical_key(v)::text AS canonical, dp_pg.canonical_key(v) = v AS equal
FROM (VALUES (5.000::numeric), (-2.50), (0.000), (100), ('NaN'), ('Infinity'), (1e-20)) t(v);
SELECT v::text AS input, dp_pg.canonical_key(v)::text AS canonical, dp_pg.canonical_key(v) = v AS equal
FROM (VALUES ('-0'::float8), ('0'), ('-1.5'), ('NaN'), ('-Infinity')) t(v);
SELECT dp_pg.canonical_key('-0'::real)::text AS real_zero, dp_pg.canonical_key('-0'::real) = 0 AS equal;
SELECT v::text AS input, dp_pg.canonical_key(v)::text AS canonical, dp_pg.canonical_key(v) = v AS equal
FROM (VALUES ('24 hours'::interval), ('30 days'), ('36 hours'), ('1 mon -1 day'), ('-1 day +2 hours'),
             ('1 year 400 days'), ('0'), ('-24 hours'),
             ('178956970 years 7 months 2147483647 days 2562047788:00:54.775806'),
             ('-178956970 years -8 months -2147483648 days -2562047788:00:54.775807'),
             ('2147483647 days 2147483647 hours')) t(v);
SELECT v::text AS input, dp_pg.canonical_key(v)::text AS canonical, dp_pg.canonical_key(v) = v AS equal
FROM (VALUES ('{"a": 1.0, "b": [2.50, "2.50", {"c": 0.0}]}'::jsonb), ('5.000'), ('[1.0]'), ('"x"'), ('null')) t(v);
SELECT octet_length(dp_pg.canonical_key('x  '::bpchar)) AS bpchar_len, dp_pg.canonical_key('x  '::bpchar) = 'x' AS equal,
       octet_length(dp_pg.canonical_key('x'::char(3))) AS char3_len;
SELECT dp_pg.canonical_key(ARRAY[5.0, NULL, 1.10])::text AS arr, dp_pg.canonical_key('[2:3]={-0,1}'::float8[])::text AS bounds,
       dp_pg.canonical_key('{}'::numeric[])::text AS empty,
       dp_pg.canonical_key('[5.0,6.00)'::numrange)::text AS rng, dp_pg.canonical_key('empty'::numrange)::text AS empty_rng,
       dp_pg.canonical_key('{[1.0,2.0), [3.0,)}'::nummultirange)::text AS mrng,
       dp_pg.canonical_key(ROW(5.000, 'eur')::ck.pair)::text AS pair,
       dp_pg.canonical_key(5.000::ck.amt)::text AS domain,
       dp_pg.canonical_key(5.000::numeric(10,3))::text AS typmod;
-- values whose equality is equality of the image come back as they are
SELECT dp_pg.canonical_key(42) AS int, dp_pg.canonical_key('Key'::text) AS text, dp_pg.canonical_key(date '2024-01-02') AS date;

-- 2. a protected table whose first row spells every value oddly
CREATE TABLE ck.labels (id int PRIMARY KEY, label numeric NOT NULL);
INSERT INTO ck.labels VALUES (1, 5.000), (2, 5);
GRANT SELECT ON ck.labels TO PUBLIC;
CREATE TABLE ck.pay (id int PRIMARY KEY, salary int NOT NULL, lab int NOT NULL,
	amount numeric, f8 float8, f4 real, x float8, iv interval, j jsonb, b bpchar, b5 char(5), n2 numeric(10,2),
	arr numeric[], rng numrange, pr ck.pair, dn ck.amt, t text, tci text COLLATE ck.ci, tv tsvector);
INSERT INTO ck.pay VALUES (1, 60000, 1, 5.000, '-0', '-0', -0.4, '24 hours', '{"a": 1.0}', 'x  ', 'ab', 5,
	'{5.0}', '[5.0,6.0)', '(5.000,eur)', 5.000, 'ab', 'KEY', 'a:1');
INSERT INTO ck.pay SELECT g, 1000, 2, 5, 0, 0, 0.3, '1 day', '{"a": 1}', 'x', 'ab', 5,
	'{5}', '[5,6)', '(5,eur)', 5, 'ab', 'key', 'a:2' FROM generate_series(2, 2001) g;
SELECT dp_pg.protect('ck.pay');
-- the same as a table with a privacy unit (person 1 first, one row each)
CREATE TABLE ck.upay (person int NOT NULL, salary int NOT NULL, amount numeric NOT NULL, cost numeric NOT NULL);
INSERT INTO ck.upay VALUES (1, 60000, 5.000, 1);
INSERT INTO ck.upay SELECT g, 1000, 5, 1 FROM generate_series(2, 2001) g;
SELECT dp_pg.protect('ck.upay', 'person', 1, 1);
-- declared public keys, two of them equal
CREATE TABLE ck.dup (id int PRIMARY KEY, amount numeric NOT NULL, tci text COLLATE ck.ci NOT NULL);
INSERT INTO ck.dup SELECT g, 5, 'key' FROM generate_series(1, 2000) g;
SELECT dp_pg.protect('ck.dup');
SELECT dp_pg.set_public_keys('ck.dup', 'amount', ARRAY['5', '5.000', '7']);
SELECT dp_pg.set_public_keys('ck.dup', 'tci', ARRAY['key', 'KEY', 'other']);
SELECT dp_pg.set_budget('ck_ana', 1000, 1e-3);

-- a statement's outcome for the session's analyst: "ok" or its SQLSTATE and
-- message, and " [CHARGED]" if its ledger grew (also used by unit_groups.sql
-- and ddl_fence.sql, which run after this file; schema dp_test is mechanism.sql's)
CREATE FUNCTION dp_test.session_charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger WHERE role = session_user::regrole AND kind = 'charge'
$$;
CREATE FUNCTION dp_test.outcome(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	before bigint := dp_test.session_charges();
	r text;
BEGIN
	BEGIN
		EXECUTE q;
		r := 'ok';
	EXCEPTION WHEN OTHERS THEN
		r := SQLSTATE || ': ' || SQLERRM;
	END;
	IF dp_test.session_charges() <> before THEN
		r := r || ' [CHARGED]';
	END IF;
	RETURN r;
END $$;
GRANT EXECUTE ON FUNCTION dp_test.session_charges(), dp_test.outcome(text) TO PUBLIC;

SET SESSION AUTHORIZATION ck_ana;
-- 3. GROUP BY through partition selection: the canonical spelling of each key
SELECT amount, f8, f4, iv, j, octet_length(b) AS b_len, b5, n2, arr, rng, pr, dn, t, dp_count(*) > 0 AS released
FROM ck.pay GROUP BY amount, f8, f4, iv, j, b, b5, n2, arr, rng, pr, dn, t;
-- the predicate oracle: with and without person 1's row, the same keys
SELECT amount, f8, iv, j, arr, dp_count(*) > 0 AS released
FROM ck.pay WHERE (id = 1 AND salary > 50000) OR id > 1 GROUP BY amount, f8, iv, j, arr;
SELECT amount, f8, iv, j, arr, dp_count(*) > 0 AS released
FROM ck.pay WHERE (id = 1 AND salary > 90000) OR id > 1 GROUP BY amount, f8, iv, j, arr;
-- SELECT DISTINCT, a plain count (translated), a generalising key (round(-0.4) is -0), a key of a joined public table
SELECT DISTINCT amount FROM ck.pay;
SELECT amount, count(*) > 0 AS released FROM ck.pay GROUP BY amount;
SELECT round(x) AS r, dp_count(*) > 0 AS released FROM ck.pay GROUP BY 1;
SELECT l.label, dp_count(*) > 0 AS released FROM ck.pay p JOIN ck.labels l ON l.id = p.lab GROUP BY l.label;
-- post-processing sees the canonical key only
SELECT amount::text = '5' AS canonical FROM (SELECT amount, dp_count(*) AS n FROM ck.pay GROUP BY amount) s;
-- dp_histogram(key, mech): its labels are canonical
SELECT jsonb_object_keys(dp_histogram(amount, 'gaussian(epsilon=1, delta=1e-6)')) AS label FROM ck.pay;
SELECT jsonb_object_keys(dp_histogram(iv, 'gaussian(epsilon=1, delta=1e-6)')) AS label FROM ck.pay;
-- 4. the unit table: dp_pg.unit_cells, the window form (a numeric sum), the histogram's bounded form
SELECT amount, dp_count(*) > 0 AS released FROM ck.upay GROUP BY amount;
SELECT amount, dp_count(*) > 0 AS released FROM ck.upay WHERE (person = 1 AND salary > 50000) OR person > 1 GROUP BY amount;
SELECT amount, dp_sum(cost, 0, 10, 'laplace(epsilon=1)') IS NOT NULL AS released FROM ck.upay GROUP BY amount;
SELECT jsonb_object_keys(dp_histogram(amount, 'gaussian(epsilon=1, delta=1e-6)')) AS label FROM ck.upay;

-- 5. keys without a canonical spelling: refused, nothing charged
SELECT dp_test.outcome(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT tci, dp_count(*) FROM ck.pay GROUP BY tci$q$,
	$q$SELECT lower(tci), dp_count(*) FROM ck.pay GROUP BY 1$q$,
	$q$SELECT tv, dp_count(*) FROM ck.pay GROUP BY tv$q$,
	$q$SELECT DISTINCT tci FROM ck.pay$q$,
	$q$SELECT dp_histogram(tci, 'gaussian(epsilon=1, delta=1e-6)') FROM ck.pay$q$,
	$q$SELECT dp_histogram(tv, 'gaussian(epsilon=1, delta=1e-6)') FROM ck.pay$q$
]) AS q;
-- what works instead: the column under a deterministic collation (each spelling its own group)
SELECT tci COLLATE "C" AS key, dp_count(*) > 0 AS released FROM ck.pay GROUP BY 1;

-- 6. declared public keys are released as declared; two equal ones are one key,
-- so no row counts twice (the count of 2000 rows within 25 noise scales of the
-- truth: false failure < 3e-11 each)
SELECT amount, abs(dp_count(1, 'laplace(epsilon=1)') - CASE amount WHEN 5 THEN 2000 ELSE 0 END) <= 25 AS counted_once
FROM ck.dup GROUP BY amount ORDER BY amount;
SELECT tci, abs(dp_count(1, 'laplace(epsilon=1)') - CASE WHEN tci = 'key' THEN 2000 ELSE 0 END) <= 25 AS counted_once
FROM ck.dup GROUP BY tci ORDER BY tci COLLATE "C";
RESET SESSION AUTHORIZATION;

-- clean up: the tables, and the roles of this file with their budgets and ledger rows
SET client_min_messages = warning;
DROP SCHEMA ck CASCADE;
RESET client_min_messages;
\set forget 'ck_ana'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
