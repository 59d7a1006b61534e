--
-- The query guard: an analyst (a role with a budget) reaches a protected
-- table only through dp queries; everything else is refused before it runs,
-- with its SQLSTATE, and charges nothing.
--
-- 1. set-up: a DBA-owned protected table clinic.patients (1000 rows), a public
--    table clinic.regions, an analyst dp_g_analyst granted nothing on
--    patients, a trusted role dp_g_trusted without a budget;
-- 2. the ALLOWED corpus: dp queries that pass and release noisy answers,
--    checked by properties; the ledger grows by exactly their cost;
-- 3. the BYPASS corpus: known attacks run as the analyst through
--    dp_test.g_err (SQLSTATE: message; "[CHARGED]" if the ledger grew) or
--    directly (COPY, PREPARE, cursors, SET ROLE), then a check that the
--    ledger did not change at all;
-- 4. catalog side channels read NULL for the protected table while psql's
--    and BI tools' catalog queries keep working.
--
-- Noisy answers are checked by properties, never by value (sql/dp_count.sql):
-- a Laplace answer of scale b within 25 b of the truth (fails with
-- probability <= 2 e^-25 < 3e-11), a Gaussian one within 7 sigma + 1
-- (< 1e-11).  This file makes fewer than 100 such checks (histogram bins
-- counted one by one): it fails by chance with probability < 3e-9.
--
-- Truths (g = 1..1000): region = north/south/east/west for g % 4 = 0/1/2/3
-- (250 each); age = 18 + g % 70 (sum 52020); income = (g % 100) * 1000
-- (float8, sum 49500000, 100 rows per 10000-wide bin); sensitive = g % 10 = 0
-- (100 rows, age sum 4770); name = 'patient g'; note non-NULL for g % 5 = 0
-- (200 rows; patient 500's note ends in a backslash).
--

--
-- 1. set-up (superuser)
--
CREATE ROLE dp_g_owner;
CREATE ROLE dp_g_analyst;
CREATE ROLE dp_g_trusted;
CREATE SCHEMA clinic AUTHORIZATION dp_g_owner;
GRANT USAGE ON SCHEMA clinic TO PUBLIC;
CREATE SCHEMA ana AUTHORIZATION dp_g_analyst;	-- the analyst's own objects
GRANT USAGE ON SCHEMA dp_test TO PUBLIC;

SET ROLE dp_g_owner;
CREATE TABLE clinic.patients (
	id int PRIMARY KEY,
	region text NOT NULL,
	age int NOT NULL,
	income float8,
	sensitive boolean NOT NULL,
	name text NOT NULL,
	note text
);
INSERT INTO clinic.patients
SELECT g, (ARRAY['north', 'south', 'east', 'west'])[g % 4 + 1], 18 + g % 70, (g % 100) * 1000,
       g % 10 = 0, 'patient ' || g, CASE WHEN g % 5 = 0 THEN 'note ' || g END
FROM generate_series(1, 1000) g;
-- a note ending in the LIKE escape character, and a long one (stored in TOAST)
UPDATE clinic.patients SET note = 'note 500\' WHERE id = 500;
UPDATE clinic.patients SET note = (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 400) i) WHERE id = 1000;
CREATE INDEX patients_age ON clinic.patients (age);
CREATE TABLE clinic.regions (region text PRIMARY KEY, population int);
INSERT INTO clinic.regions VALUES ('north', 100), ('south', 200), ('east', 300), ('west', 400);
GRANT SELECT ON clinic.regions TO PUBLIC;
-- public tables whose key does not bound a join: a DEFERRABLE unique constraint,
-- a unique index of the parent only (its child repeats the key), a table the
-- analyst may write, and one whose unique index has another collation than a join
CREATE TABLE clinic.regions_def (region text UNIQUE DEFERRABLE, population int);
CREATE TABLE clinic.regions_par (region text PRIMARY KEY, population int);
CREATE TABLE clinic.regions_kid () INHERITS (clinic.regions_par);
CREATE TABLE clinic.regions_w (region text PRIMARY KEY, population int);
CREATE TABLE clinic.regions_ci (region text PRIMARY KEY, population int);
INSERT INTO clinic.regions_def SELECT * FROM clinic.regions;
INSERT INTO clinic.regions_par SELECT * FROM clinic.regions;
INSERT INTO clinic.regions_kid SELECT * FROM clinic.regions;
INSERT INTO clinic.regions_w SELECT * FROM clinic.regions;
INSERT INTO clinic.regions_ci SELECT * FROM clinic.regions;
GRANT SELECT ON clinic.regions_def, clinic.regions_par, clinic.regions_kid, clinic.regions_w, clinic.regions_ci TO PUBLIC;
GRANT INSERT ON clinic.regions_w TO dp_g_analyst;
-- a view the DBA (carelessly) grants to everyone, and one that checks the caller's rights
CREATE VIEW clinic.patients_v AS SELECT * FROM clinic.patients;
CREATE VIEW clinic.patients_inv WITH (security_invoker) AS SELECT * FROM clinic.patients;
GRANT SELECT ON clinic.patients_v, clinic.patients_inv TO PUBLIC;
RESET ROLE;
ANALYZE clinic.patients, clinic.regions;

-- objects the analyst made while the table was not yet protected (PostgreSQL
-- checks a view's rights when it is read, not when it is created)
SET ROLE dp_g_analyst;
CREATE VIEW ana.v_early AS SELECT * FROM clinic.patients;
CREATE VIEW ana.v_early_dp AS SELECT dp_count(*) AS n FROM clinic.patients;
CREATE FUNCTION ana.f_early() RETURNS SETOF text LANGUAGE sql SECURITY DEFINER
	AS $$ SELECT name FROM clinic.patients $$;
CREATE FUNCTION ana.read_count(bigint) RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM clinic.patients $$;
-- the analyst's code, made before it got its budget: none of it may run once it has one
CREATE FUNCTION ana.leak(anyelement) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
	RAISE NOTICE 'leaked: %', $1;
	RETURN true;
END $$;
CREATE FUNCTION ana.gt30(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$ SELECT $1 > 30 $$;
CREATE FUNCTION ana.stable_bound() RETURNS int LANGUAGE plpgsql STABLE AS $$
BEGIN
	RAISE NOTICE 'evaluated';
	RETURN 100;
END $$;
CREATE FUNCTION ana.eq_leak(int, int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	RAISE NOTICE 'leaked: %', $1;
	RETURN $1 = $2;
END $$;
CREATE OPERATOR ana.= (LEFTARG = int, RIGHTARG = int, FUNCTION = ana.eq_leak);
CREATE DOMAIN ana.age_d AS int CHECK (ana.leak(VALUE));
CREATE FUNCTION ana.collect(text[], text, dp_mechanism) RETURNS text[] LANGUAGE sql AS $$ SELECT $1 || $2 $$;
CREATE AGGREGATE ana.dp_count(text, dp_mechanism) (SFUNC = ana.collect, STYPE = text[], INITCOND = '{}');
CREATE FUNCTION ana.read_names(bigint) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	RETURN (SELECT string_agg(name, ',') FROM clinic.patients WHERE sensitive);
END $$;
CREATE TABLE ana.mine (id int, region text);
INSERT INTO ana.mine VALUES (17, 'north');
-- (an analyst's own table with forced row-level security: its policy would run
-- once per matching private row, a membership oracle)
CREATE TABLE ana.rls_keys (id int PRIMARY KEY);
INSERT INTO ana.rls_keys SELECT g FROM generate_series(1, 20) g;
ALTER TABLE ana.rls_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE ana.rls_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY p ON ana.rls_keys USING (id > 0);
-- expressions PostgreSQL evaluates without planning them (a domain and a table
-- CHECK, a DEFAULT filled by INSERT and COPY FROM, a trigger WHEN clause) and
-- a function reading pg_class, aimed at the sizes of the protected table
CREATE DOMAIN ana.small AS float8 CHECK (VALUE < pg_catalog.pg_relation_size('clinic.patients'));
CREATE TABLE ana.checked (x int CHECK (pg_catalog.pg_stat_get_live_tuples('clinic.patients'::regclass) IS NULL
                                       AND pg_catalog.pg_relation_size('clinic.patients') IS NULL));
CREATE TABLE ana.sizes (tag text, size bigint DEFAULT pg_catalog.pg_total_relation_size('clinic.patients'));
CREATE FUNCTION ana.fired() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE NOTICE 'trigger fired: the size is visible';
	RETURN NEW;
END $$;
CREATE TRIGGER sized BEFORE INSERT ON ana.mine FOR EACH ROW
	WHEN (pg_catalog.pg_relation_size('clinic.patients') > 0) EXECUTE FUNCTION ana.fired();
CREATE FUNCTION ana.reltuples_of(regclass) RETURNS real LANGUAGE plpgsql AS $$
BEGIN
	RETURN (SELECT reltuples FROM pg_class WHERE oid = $1);
END $$;
RESET ROLE;
-- a function the DBA wrote for everyone (SECURITY DEFINER: runs as the owner)
SET ROLE dp_g_owner;
CREATE FUNCTION clinic.count_all() RETURNS bigint LANGUAGE sql SECURITY DEFINER
	AS $$ SELECT count(*) FROM clinic.patients $$;
RESET ROLE;
-- contrib modules an attacker would reach for
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS pgstattuple;

SELECT dp_pg.protect('clinic.patients');
GRANT SELECT ON clinic.patients TO dp_g_trusted;
SELECT dp_pg.set_budget('dp_g_analyst', 100, 1e-4);

-- the analyst holds SELECT on the protected table only through dp_pg_analyst
-- (for table pickers: its policy reads no row without the guard), no other
-- privilege; PUBLIC none
SELECT has_table_privilege('dp_g_analyst', 'clinic.patients', 'SELECT') AS analyst_select,
       has_table_privilege('dp_g_analyst', 'clinic.patients', 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER') AS analyst_other,
       has_table_privilege('dp_g_trusted', 'clinic.patients', 'SELECT') AS trusted_select;

-- a nondeterministic collation of a superuser's, and functions of a superuser's
-- that read the protected table or pg_class (a SQL one is inlined by the planner)
CREATE COLLATION dp_test.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE FUNCTION dp_test.all_patients() RETURNS SETOF clinic.patients LANGUAGE sql STABLE
	AS 'SELECT * FROM clinic.patients';
CREATE FUNCTION dp_test.all_patients_pl() RETURNS SETOF clinic.patients LANGUAGE plpgsql
	AS 'BEGIN RETURN QUERY SELECT * FROM clinic.patients; END';
CREATE FUNCTION dp_test.class_sizes() RETURNS TABLE (relname name, reltuples real) LANGUAGE sql STABLE
	AS 'SELECT relname, reltuples FROM pg_catalog.pg_class';

-- ledger bookkeeping (superuser only): the analyst's charges since a mark
CREATE TABLE dp_test.g_mark (n bigint, eps numeric, delta numeric);
CREATE FUNCTION dp_test.g_set_mark() RETURNS void LANGUAGE sql AS $$
	DELETE FROM dp_test.g_mark;
	INSERT INTO dp_test.g_mark
	SELECT count(*), coalesce(sum(epsilon), 0), coalesce(sum(delta), 0)
	FROM dp_pg.ledger WHERE role = 'dp_g_analyst'::regrole AND kind = 'charge';
$$;
-- charges, epsilon and delta since the mark, and whether they are the expected ones
CREATE FUNCTION dp_test.g_since_mark(exp_charges bigint, exp_eps numeric, exp_delta numeric,
	OUT charges bigint, OUT epsilon numeric, OUT delta numeric, OUT as_expected boolean)
LANGUAGE sql AS $$
	SELECT c.n - m.n, round(c.eps - m.eps, 9), round(c.delta - m.delta, 15),
	       c.n - m.n = exp_charges AND round(c.eps - m.eps, 9) = exp_eps
	       AND round(c.delta - m.delta, 15) = exp_delta
	FROM dp_test.g_mark m,
	     (SELECT count(*) AS n, coalesce(sum(epsilon), 0)::numeric AS eps, coalesce(sum(delta), 0)::numeric AS delta
	      FROM dp_pg.ledger WHERE role = 'dp_g_analyst'::regrole AND kind = 'charge') c;
$$;
-- the analyst's number of charges, readable by the analyst (for g_err)
CREATE FUNCTION dp_test.g_charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER
	SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger WHERE role = 'dp_g_analyst'::regrole AND kind = 'charge'
$$;
-- every statement of the bypass corpus and its outcome
CREATE TABLE dp_test.g_corpus (n serial, result text, statement text);
GRANT INSERT, SELECT ON dp_test.g_corpus TO dp_g_analyst;
GRANT USAGE ON SEQUENCE dp_test.g_corpus_n_seq TO dp_g_analyst;
-- run a statement; report "SQLSTATE: message" (or "no error"), and
-- " [CHARGED]" if the ledger grew while it ran; record it in the corpus
CREATE FUNCTION dp_test.g_err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	before bigint := dp_test.g_charges();
	r text;
BEGIN
	BEGIN
		EXECUTE q;
		r := 'no error';
	EXCEPTION WHEN OTHERS THEN
		-- PostgreSQL's own permission errors are worded differently by
		-- version: their SQLSTATE is what counts here
		r := SQLSTATE || ': ' || CASE WHEN SQLSTATE = '42501' AND SQLERRM NOT LIKE 'dp_pg%'
		                                   AND SQLERRM NOT LIKE 'permission denied to set %'
		                              THEN '(PostgreSQL''s permission error)'
		                              WHEN SQLSTATE = '2F003' THEN '(PostgreSQL''s error)'
		                              ELSE SQLERRM END;
	END;
	IF dp_test.g_charges() <> before THEN
		r := r || ' [CHARGED]';
	END IF;
	INSERT INTO dp_test.g_corpus (result, statement) VALUES (r, q);
	RETURN r;
END $$;
-- a released histogram has exactly the truth's keys, each within tol
CREATE FUNCTION dp_test.g_hist_close(h jsonb, truth jsonb, tol numeric) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(h) k)
	       = (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(truth) k)
	   AND bool_and(abs((h ->> t.key)::numeric - t.value::numeric) <= tol)
	FROM jsonb_each_text(truth) t
$$;

-- controls: the trusted role (no budget) and the superuser read rows as usual
SET ROLE dp_g_trusted;
SELECT count(*), sum(age), count(*) FILTER (WHERE sensitive) AS sensitive FROM clinic.patients;
SELECT reltuples, relpages > 0 AS has_pages FROM pg_class WHERE oid = 'clinic.patients'::regclass;
EXPLAIN (COSTS OFF) SELECT name FROM clinic.patients WHERE id = 17;
RESET ROLE;

SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
SELECT current_user, session_user, (SELECT count(*) FROM dp_pg.my_budget) AS has_budget;

-- the analyst's tools for the attacks below (none reads the protected table);
-- its code was made before it had a budget (section 1)
CREATE SEQUENCE ana.s;
CREATE COLLATION ana.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
-- with a budget it may not make code, nor expressions PostgreSQL runs outside a plan
SELECT dp_test.g_err(q) AS refused, q AS statement FROM unnest(ARRAY[
	$q$CREATE FUNCTION ana.late(int) RETURNS int LANGUAGE sql AS 'SELECT $1'$q$,
	$q$CREATE PROCEDURE ana.late_p() LANGUAGE sql AS 'SELECT 1'$q$,
	$q$CREATE AGGREGATE ana.late_agg(int) (SFUNC = int4pl, STYPE = int)$q$,
	$q$CREATE OPERATOR ana.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = int4eq)$q$,
	$q$CREATE CAST (ana.age_d AS text) WITH INOUT$q$,
	$q$CREATE TYPE ana.r AS RANGE (SUBTYPE = int4)$q$,
	$q$CREATE DOMAIN ana.late_d AS int CHECK (VALUE > 0)$q$,
	$q$CREATE TABLE ana.late_t (x int DEFAULT 1)$q$,
	$q$CREATE TABLE ana.late_c (x int CHECK (x > 0))$q$,
	$q$CREATE TABLE ana.late_g (x int, y int GENERATED ALWAYS AS (x + 1) STORED)$q$,
	$q$ALTER TABLE ana.mine ALTER COLUMN id SET DEFAULT 1$q$,
	$q$ALTER TABLE ana.mine ADD CONSTRAINT c CHECK (id > 0)$q$,
	$q$CREATE INDEX ON ana.mine ((id + 1))$q$,
	$q$CREATE INDEX ON ana.mine (id) WHERE id > 0$q$,
	$q$CREATE TRIGGER late BEFORE INSERT ON ana.mine FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()$q$,
	$q$CREATE RULE late AS ON INSERT TO ana.mine DO ALSO NOTIFY x$q$,
	$q$CREATE POLICY late ON ana.mine USING (true)$q$
]) q;

--
-- 2. ALLOWED corpus: every statement passes and releases noisy answers
--
RESET SESSION AUTHORIZATION;
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;

-- A1-A3: counts (default mechanism laplace(epsilon=1); 0.5; 0.5)
SELECT abs(dp_count(*) - 1000) <= 25 AS close FROM patients;
SELECT abs(dp_count(id, 'laplace(epsilon=0.5)') - 1000) <= 50 AS close FROM patients;
SELECT abs(dp_count(note, 'laplace(epsilon=0.5)') - 200) <= 50 AS close FROM patients;
-- A4: FILTER, two call sites (0.5 + 0.5)
SELECT abs(dp_count(id, 'laplace(epsilon=0.5)') FILTER (WHERE region = 'north') - 250) <= 50 AS north,
       abs(dp_count(id, 'laplace(epsilon=0.5)') FILTER (WHERE sensitive) - 100) <= 50 AS sensitive
FROM patients;
-- A5-A10: WHERE from the allowlist (0.25 each)
SELECT abs(dp_count(id, 'laplace(epsilon=0.25)') - 250) <= 100 AS close FROM patients WHERE region = 'south';
SELECT abs(dp_count(id, 'laplace(epsilon=0.25)') - 134) <= 100 AS close FROM patients
WHERE age BETWEEN 30 AND 39 AND NOT sensitive;
SELECT abs(dp_count(id, 'laplace(epsilon=0.25)') - 900) <= 100 AS close FROM patients
WHERE region IN ('east', 'west') OR note IS NULL;
SELECT abs(dp_count(id, 'laplace(epsilon=0.25)') FILTER (WHERE name LIKE 'patient 1%') - 112) <= 100 AS like_close,
       abs(dp_count(id, 'laplace(epsilon=0.25)') FILTER (WHERE name ILIKE 'PATIENT 99%') - 11) <= 100 AS ilike_close
FROM patients;
SELECT abs(dp_count(id, 'laplace(epsilon=0.25)') - 50) <= 100 AS close FROM patients
WHERE sensitive IS TRUE AND age <> 20 AND age >= 18 AND income < 50000 AND note IS NOT NULL;
SELECT abs(dp_count(id, 'laplace(epsilon=0.25)') - 673) <= 100 AS close FROM patients
WHERE NOT (region = 'north' OR age > 80) AND sensitive IS NOT UNKNOWN AND (sensitive IS NOT TRUE OR sensitive IS FALSE OR true);
-- A11-A12: sums (1 each): age in [0, 100]: b = 100; income in [0, 100000]: b = 100000
SELECT abs(dp_sum(age, 0, 100, 'laplace(epsilon=1)') - 52020) <= 2500 AS close FROM patients;
SELECT abs(dp_sum(income, 0, 100000, 'laplace(epsilon=1)') - 49500000) <= 2500000 AS close FROM patients;
-- A13: dp_avg (2, split in half: centred sum b = 50000, count b = 1): the
-- average is within [48205, 50769] unless a noise exceeds 25 b
SELECT dp_avg(income, 0, 100000, 'laplace(epsilon=2)') BETWEEN 48000 AND 51000 AS close FROM patients;
-- A14-A16: histograms: public bins (1), equal-width bins (1), partition selection (1, 1e-8)
SELECT dp_histogram(region, ARRAY['north', 'south', 'east', 'west', 'nowhere'], 'laplace(epsilon=1)') AS h FROM patients \gset
SELECT dp_test.g_hist_close(:'h', '{"north": 250, "south": 250, "east": 250, "west": 250, "nowhere": 0}', 25) AS close;
SELECT dp_histogram(income, 0, 100000, 10, 'laplace(epsilon=1)') AS h FROM patients \gset
SELECT count(*) = 10 AS ten_bins, bool_and(abs(v::numeric - 100) <= 25) AS close FROM jsonb_each_text(:'h') t(k, v);
-- (250 rows per key, more than 40 sigma above the threshold)
SELECT dp_histogram(region, 'gaussian(epsilon=1, delta=1e-8)') AS h FROM patients \gset
SELECT dp_test.g_hist_close(:'h', '{"north": 250, "south": 250, "east": 250, "west": 250}',
       (7 * (dp_pg.calibrate('gaussian(epsilon=1, delta=1e-8)', 1)).sigma + 1)::numeric) AS close;
-- A17: Gaussian count (0.5, 1e-7)
SELECT abs(dp_count(id, 'gaussian(epsilon=0.5, delta=1e-7)') - 1000)
       <= 7 * (dp_pg.calibrate('gaussian(epsilon=0.5, delta=1e-7)', 1)).sigma + 1 AS close FROM patients;
-- A18: several aggregates, one query (0.5 + 1 + 0.5)
SELECT abs(dp_count(id, 'laplace(epsilon=0.5)') FILTER (WHERE sensitive) - 100) <= 50 AS n_close,
       abs(dp_sum(age, 0, 100, 'laplace(epsilon=1)') FILTER (WHERE sensitive) - 4770) <= 2500 AS sum_close,
       dp_test.g_hist_close(dp_histogram(region, ARRAY['north', 'south'], 'laplace(epsilon=0.5)'),
                            '{"north": 250, "south": 250}', 50) AS hist_close
FROM patients;
-- A19: post-processing in the target list; an identical call is one release (0.5)
SELECT dp_nonnegative(dp_count(id, 'laplace(epsilon=0.5)')) >= 0 AS nonneg,
       CASE WHEN dp_count(id, 'laplace(epsilon=0.5)') > 500 THEN 'many' ELSE 'few' END AS size,
       round(dp_count(id, 'laplace(epsilon=0.5)') / 100.0) BETWEEN 9 AND 11 AS hundreds,
       format('%s patients', dp_count(id, 'laplace(epsilon=0.5)')) LIKE '% patients' AS formatted
FROM patients;
-- A20: HAVING on a dp result, without GROUP BY (0.5; 0.5)
SELECT 'answered' AS r FROM patients HAVING dp_count(id, 'laplace(epsilon=0.5)') > 500;
SELECT 'answered' AS r FROM patients HAVING dp_count(id, 'laplace(epsilon=0.5)') > 5000;
-- A21: ORDER BY / LIMIT / OFFSET on the released row (0.5; 0.5)
SELECT abs(dp_count(id, 'laplace(epsilon=0.5)') - 1000) <= 50 AS close FROM patients ORDER BY 1 LIMIT 1;
SELECT dp_count(id, 'laplace(epsilon=0.5)') > 0 AS positive FROM patients ORDER BY dp_count(id, 'laplace(epsilon=0.5)') DESC LIMIT 5 OFFSET 0;
-- A22: schema-qualified calls and operators (0.25)
SELECT abs(public.dp_count(id, 'laplace(epsilon=0.25)') - 250) <= 100 AS close FROM clinic.patients
WHERE region OPERATOR(pg_catalog.=) 'north';
-- A23: binary-compatible relabelling (text -> varchar) (0.25)
SELECT abs(dp_count(id, 'laplace(epsilon=0.25)') - 250) <= 100 AS close FROM patients WHERE region::varchar = 'west';
-- A24: a "difference attack" made of allowed predicates is a dp query like any
-- other: charged, and noisy (0.25 + 0.25)
SELECT dp_count(id, 'laplace(epsilon=0.25)') IS NOT NULL AS answered FROM patients WHERE sensitive;
SELECT dp_count(id, 'laplace(epsilon=0.25)') IS NOT NULL AS answered FROM patients WHERE sensitive AND name <> 'patient 10';
-- A25: empty input: a noisy number, never NULL (0.25)
SELECT dp_count(id, 'laplace(epsilon=0.25)') IS NOT NULL AS not_null FROM patients WHERE age > 200;
RESET SESSION AUTHORIZATION;
-- A1-A25: 28 queries, one charge each; epsilon 1 + 0.5 + 0.5 + 1 + 7 * 0.25 + 1 + 1 + 2
-- + 1 + 1 + 1 + 0.5 + 2 + 0.5 + 2 * 0.5 + 2 * 0.5 + 0.25 + 0.25 + 2 * 0.25 + 0.25 = 18;
-- delta 1e-8 + 1e-7
SELECT * FROM dp_test.g_since_mark(28, 18, 1.1e-7);

-- A26-A31: post-processing above the release (the DP level is a level of its
-- own): window functions, DISTINCT and volatile functions act on released rows
-- only, and a HAVING that would fail on a key never meets an unreleased one
-- (names are held by one row each: one is released with probability <= 1e-15,
-- all 1000 with <= 1e-12); released groups come out in key order
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
SELECT abs(dp_count(id, 'laplace(epsilon=0.5)') - 1000) <= 50 AS close, rank() OVER () AS r FROM patients;
SELECT abs(sum(dp_count(id, 'laplace(epsilon=0.5)')) OVER () - 1000) <= 50 AS close FROM patients;
SELECT DISTINCT abs(dp_count(id, 'laplace(epsilon=0.5)') - 1000) <= 50 AS close FROM patients;
SELECT region, sum(dp_count(*)) OVER (ORDER BY region) > 0 AS running FROM patients GROUP BY region;
SET dp_pg.partition_mechanism = 'gaussian(epsilon=0.5, delta=1e-15)';
SELECT name, dp_count(*) FROM patients GROUP BY name HAVING (name || ':' || dp_count(*))::int < 0;
RESET dp_pg.partition_mechanism;
SELECT region FROM patients GROUP BY region;
RESET SESSION AUTHORIZATION;
-- 6 charges: 0.5 + 0.5 + 0.5 + (1 + 0.5) + (1 + 0.5) + 0.5 = 5; delta 1e-8 + 1e-15 + 1e-8
SELECT * FROM dp_test.g_since_mark(6, 5, 0.000000020000001);

-- A26-A29: prepared statements with bound mechanisms and bound WHERE values,
-- custom and generic plans (each EXECUTE is one charge)
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
PREPARE g_count(dp_mechanism) AS SELECT abs(dp_count(id, $1) - 1000) <= 50 AS close FROM patients;
EXECUTE g_count('laplace(epsilon=0.5)');
EXECUTE g_count(dp_laplace(1));
PREPARE g_region(text, float8) AS
	SELECT abs(dp_count(id, dp_laplace($2)) - 250) <= 25 / $2 AS close FROM patients WHERE region = $1;
EXECUTE g_region('west', 0.5);
PREPARE g_age(int, int, text) AS
	SELECT abs(dp_count(id, $3) - 140) <= 100 AS close FROM patients WHERE age BETWEEN $1 AND $2;
EXECUTE g_age(40, 49, 'laplace(epsilon=0.25)');
PREPARE g_sum(float8, float8) AS
	SELECT abs(dp_sum(income, $1, $2, 'laplace(epsilon=1)') - 49500000) <= 2500000 AS close FROM patients;
EXECUTE g_sum(0, 100000);
SET plan_cache_mode = force_generic_plan;
EXECUTE g_count('laplace(epsilon=0.5)');
EXECUTE g_region('east', 1);
EXECUTE g_age(40, 49, 'laplace(epsilon=0.25)');
RESET plan_cache_mode;
DEALLOCATE ALL;
RESET SESSION AUTHORIZATION;
-- 8 charges: 0.5 + 1 + 0.5 + 0.25 + 1 + 0.5 + 1 + 0.25 = 5
SELECT * FROM dp_test.g_since_mark(8, 5, 0);

-- A30-A33: cursors (charged once, at the first fetch or before), PL/pgSQL
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
BEGIN;
DECLARE c1 CURSOR FOR SELECT abs(dp_count(id, 'laplace(epsilon=0.5)') - 1000) <= 50 AS close FROM patients;
FETCH c1;
FETCH c1;
CLOSE c1;
COMMIT;
BEGIN;
DECLARE c2 NO SCROLL CURSOR FOR SELECT abs(dp_sum(age, 0, 100, 'laplace(epsilon=0.5)') - 52020) <= 5000 AS close FROM patients;
FETCH NEXT FROM c2;
ROLLBACK;
-- a scroll cursor re-reads the same release (no fresh noise, no second charge)
BEGIN;
DECLARE c3 SCROLL CURSOR FOR SELECT dp_count(id, 'laplace(epsilon=0.5)') AS n FROM patients;
FETCH FIRST FROM c3 \gset first_
FETCH PRIOR FROM c3;
FETCH ABSOLUTE 1 FROM c3 \gset again_
COMMIT;
SELECT :first_n = :again_n AS same_release, abs(:first_n - 1000) <= 50 AS close;
-- PL/pgSQL variables are bound parameters (compared as they are: arithmetic on
-- them is computed beforehand, since per-row arithmetic could fail only on some rows)
DO $$
DECLARE
	m dp_mechanism := 'laplace(epsilon=0.5)';
	lo int := 40;
	hi int := lo + 9;
	n bigint;
BEGIN
	SELECT dp_count(id, m) INTO n FROM clinic.patients WHERE age >= lo AND age <= hi;
	RAISE NOTICE 'plpgsql close: %', abs(n - 140) <= 50;
END $$;
RESET SESSION AUTHORIZATION;
-- 4 charges: 0.5 + 0.5 + 0.5 + 0.5 = 2
SELECT * FROM dp_test.g_since_mark(4, 2, 0);

--
-- 2b. GROUP BY a protected column: the guard adds private partition selection
-- (dp_pg.partition_keep with dp_pg.partition_mechanism) to HAVING, so a group
-- is released only if its noisy row count reaches the threshold, and that
-- selection is charged with the query.  The 4 regions (about 250 rows each,
-- threshold about 65 at the default gaussian(0.5, 1e-8)) come out with
-- probability > 1 - 1e-30; unique names (one row each) come out with
-- probability <= 1000 x 1e-15 at delta 1e-15.  Row counts via :ROW_COUNT.
--
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
SELECT region, dp_count(*) FROM patients GROUP BY region \g /dev/null
\echo regions released: :ROW_COUNT
SET dp_pg.partition_mechanism = 'gaussian(epsilon=0.5, delta=1e-15)';
SELECT name, dp_count(*) FROM patients GROUP BY name \g /dev/null
\echo names released: :ROW_COUNT
SELECT dp_count(*) FROM patients GROUP BY name \g /dev/null
\echo groups released: :ROW_COUNT
SELECT 1 FROM patients GROUP BY name HAVING dp_count(*) > 0 \g /dev/null
\echo rows released: :ROW_COUNT
RESET dp_pg.partition_mechanism;
BEGIN;
DECLARE c_group CURSOR FOR SELECT region, dp_count(*) FROM clinic.patients GROUP BY region;
FETCH ALL FROM c_group \g /dev/null
\echo cursor rows: :ROW_COUNT
COMMIT;
-- a key expression could fail on private values: refused
SELECT dp_test.g_err($q$SELECT md5(name), dp_count(*) FROM patients GROUP BY md5(name)$q$) AS key_expression;
RESET SESSION AUTHORIZATION;
-- 5 charges of laplace(epsilon=1) (dp_count(*)) + partition selection (0.5, delta)
SELECT * FROM dp_test.g_since_mark(5, 7.5, 0.000000020000003);

-- GROUP BY on declared public keys: every key appears, empty ones too (with
-- noise), rows with undeclared keys are ignored, and no partition selection
-- is charged (the key set is public).  Noisy counts are checked against
-- 25 t (laplace), each failing by chance with probability < 3e-11.
SELECT dp_pg.set_public_keys('clinic.patients', 'region', ARRAY['north', 'south', 'east', 'atlantis']);
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
SELECT region, abs(dp_count(*) - CASE WHEN region = 'atlantis' THEN 0 ELSE 250 END) <= 25 AS close
FROM patients GROUP BY region ORDER BY region;
-- a WHERE on the key column is a predicate on public values: it restricts the listed keys
SELECT region, abs(dp_count(*) - 250) <= 25 AS close FROM patients WHERE region = 'north' GROUP BY region;
SELECT region FROM patients WHERE region IN ('north', 'atlantis', 'nowhere') AND age > 0 GROUP BY region;
PREPARE pub_groups(dp_mechanism) AS
	SELECT region, dp_count(id, $1) AS n, dp_histogram(age, 0, 100, 2, $1) AS h
	FROM patients WHERE age >= 0 GROUP BY region ORDER BY region;
EXECUTE pub_groups('laplace(epsilon=1)') \g /dev/null
\echo keys released by a prepared statement: :ROW_COUNT
BEGIN;
DECLARE c_pub CURSOR FOR SELECT region, dp_count(*) FROM patients GROUP BY region ORDER BY region;
FETCH ALL FROM c_pub \g /dev/null
\echo keys released by a cursor: :ROW_COUNT
COMMIT;
RESET SESSION AUTHORIZATION;
-- 4 charges of epsilon 1 (dp_count) / 2 (count + histogram): no selection, no delta
-- (the keys-only query releases nothing private: no charge)
SELECT * FROM dp_test.g_since_mark(4, 5, 0);

--
-- 2c. inner joins with public tables on a unique key of theirs (each private
-- row meets at most one public row, so sensitivities are unchanged); their
-- columns may filter (with the same safe predicates) and group (through
-- partition selection).  Bounds 25 t as above; region truths 250 each.
--
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
SELECT abs(dp_count(*) - 1000) <= 25 AS close FROM patients p JOIN regions r USING (region);
SELECT abs(dp_count(*) - 1000) <= 25 AS close FROM patients NATURAL JOIN regions;
SELECT abs(dp_count(*) - 500) <= 25 AS close FROM patients p, regions r WHERE r.region = p.region AND r.population >= 300;
SELECT r.population, abs(dp_count(*) - 250) <= 25 AS close
FROM patients p JOIN regions r ON r.region = p.region GROUP BY r.population ORDER BY 1;
SELECT dp_test.g_err(q) AS refused, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_count(*) FROM patients p JOIN regions r ON r.population = p.age$q$,
	$q$SELECT dp_count(*) FROM patients p FULL JOIN regions r ON r.region = p.region$q$,
	$q$SELECT dp_count(*) FROM patients p LEFT JOIN regions r ON r.population = p.age$q$,
	$q$SELECT dp_count(*) FROM patients p JOIN regions r ON r.region = p.region WHERE r.population / (p.age - 30) > 0$q$,
	$q$SELECT r.population + p.age, dp_count(*) FROM patients p JOIN regions r ON r.region = p.region GROUP BY 1$q$,
	$q$SELECT dp_count(*) FROM patients p JOIN ana.rls_keys k ON k.id = p.id$q$,
	$q$SELECT dp_count(*) FROM patients p JOIN regions_def r ON r.region = p.region$q$,
	$q$SELECT dp_count(*) FROM patients p JOIN regions_par r ON r.region = p.region$q$,
	$q$SELECT dp_count(*) FROM patients p JOIN regions_w r ON r.region = p.region$q$,
	$q$SELECT dp_count(*) FROM patients p JOIN regions_ci r ON r.region = p.region COLLATE dp_test.ci$q$,
	$q$SELECT dp_count(*) FROM patients p JOIN regions r ON r.region < p.region$q$
]) q;
RESET SESSION AUTHORIZATION;
-- 4 answered (epsilon 1 each, the grouped one + partition selection 0.5, 1e-8); 4 refused
SELECT * FROM dp_test.g_since_mark(4, 4.5, 0.00000001);

--
-- 3. BYPASS corpus: every statement is refused before it runs, and the ledger
-- does not move.  One line per statement: result|statement.
--
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
\pset format unaligned

-- raw reads, through every door
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT * FROM patients$q$,
	$q$SELECT id, name FROM patients$q$,
	$q$SELECT name FROM patients WHERE id = 17$q$,
	$q$SELECT sensitive FROM patients WHERE name = 'patient 17'$q$,
	$q$SELECT 1 FROM patients WHERE sensitive AND id = 10$q$,
	$q$TABLE patients$q$,
	$q$SELECT * FROM ONLY patients$q$,
	$q$SELECT patients FROM patients$q$,
	$q$SELECT row_to_json(p) FROM patients p$q$,
	$q$SELECT p::text FROM patients p WHERE id = 1$q$,
	$q$SELECT ctid, xmin, xmax, tableoid FROM patients$q$,
	$q$SELECT 1 FROM patients LIMIT 1$q$,
	$q$SELECT EXISTS (SELECT 1 FROM patients WHERE id = 10 AND sensitive)$q$,
	$q$SELECT (SELECT name FROM patients WHERE id = 1)$q$,
	$q$VALUES ((SELECT name FROM patients LIMIT 1))$q$,
	$q$SELECT ARRAY(SELECT name FROM patients WHERE sensitive)$q$,
	$q$SELECT * FROM patients TABLESAMPLE SYSTEM (10)$q$,
	$q$SELECT * FROM patients FOR UPDATE$q$,
	$q$SELECT id FROM patients FOR SHARE SKIP LOCKED$q$,
	$q$SELECT id FROM patients ORDER BY age DESC LIMIT 1$q$,
	$q$SELECT * FROM clinic.patients_v$q$,
	$q$SELECT name FROM clinic.patients_v WHERE sensitive$q$,
	$q$SELECT dp_count(*) FROM ana.v_early$q$,
	$q$SELECT * FROM clinic.patients_inv$q$,
	$q$SELECT * FROM ana.v_early$q$,
	$q$SELECT n FROM ana.v_early_dp$q$,
	$q$SELECT * FROM ana.f_early()$q$,
	$q$SELECT pg_catalog.record_out(p) FROM patients p$q$
]) AS q;

-- built-in (non-dp) aggregates over the protected table
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT min(age) FROM patients$q$,
	$q$SELECT max(name) FROM patients WHERE sensitive$q$,
	$q$SELECT sum(income) FROM patients$q$,
	$q$SELECT avg(age) FROM patients$q$,
	$q$SELECT min(age), max(age) FROM patients$q$,
	$q$SELECT array_agg(name) FROM patients$q$,
	$q$SELECT string_agg(name, ',') FROM patients WHERE sensitive$q$,
	$q$SELECT bool_or(sensitive) FROM patients WHERE id = 10$q$,
	$q$SELECT bool_and(sensitive), every(sensitive) FROM patients$q$,
	$q$SELECT json_agg(p) FROM patients p$q$,
	$q$SELECT jsonb_object_agg(name, sensitive) FROM patients$q$,
	$q$SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY income) FROM patients$q$,
	$q$SELECT mode() WITHIN GROUP (ORDER BY region) FROM patients$q$,
	$q$SELECT rank(30) WITHIN GROUP (ORDER BY age) FROM patients$q$,
	$q$SELECT stddev(age), variance(income) FROM patients$q$,
	$q$SELECT bit_or(age) FROM patients$q$,
	$q$SELECT corr(age, income), regr_count(age, income) FROM patients$q$,
	$q$SELECT count(DISTINCT (name, note)) FROM patients$q$,
	$q$SELECT dp_count(*), min(age) FROM patients$q$,
	$q$SELECT dp_count(*) + max(age) FROM patients$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=1)') FILTER (WHERE age > 30) FROM patients HAVING min(age) > 1$q$,
	$q$SELECT ana.dp_count(name, 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=1)') FROM patients WHERE age > 30 HAVING min(age) > 30$q$
]) AS q;

-- window functions
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT row_number() OVER () FROM patients$q$,
	$q$SELECT dp_count(*) OVER () FROM patients$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=1)') OVER (PARTITION BY region) FROM patients$q$,
	$q$SELECT sum(age) OVER (ORDER BY id) FROM patients$q$,
	$q$SELECT first_value(name) OVER (ORDER BY age) FROM patients$q$,
	$q$SELECT ntile(2) OVER (ORDER BY income) FROM patients$q$,
	$q$SELECT lag(name) OVER w FROM patients WINDOW w AS (ORDER BY id)$q$,
	$q$SELECT dp_count(*) FILTER (WHERE id = 10) OVER () FROM patients$q$
]) AS q;

-- subqueries in every position, LATERAL, dp aggregates in correlated subqueries
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_count(*), (SELECT count(*) FROM patients) FROM patients$q$,
	$q$SELECT (SELECT dp_count(*) FROM patients)$q$,
	-- (a subquery that only filters and projects is flattened into the dp query,
	-- and a dp query may be wrapped: sql/bi.sql; these stay refused)
	$q$SELECT dp_count(*) FROM (SELECT *, 1 / (age - 30) AS x FROM patients) s WHERE x > 0$q$,
	$q$SELECT dp_count(*) FROM (SELECT * FROM patients WHERE sensitive LIMIT 1) s$q$,
	$q$SELECT dp_count(*) FROM (SELECT * FROM patients UNION ALL SELECT * FROM patients) s$q$,
	$q$SELECT * FROM (SELECT name FROM patients) s$q$,
	$q$SELECT s.n, (SELECT dp_count(*) FROM patients) FROM (SELECT dp_count(*) AS n FROM patients) s$q$,
	$q$SELECT dp_count(*) FROM patients WHERE id IN (SELECT id FROM patients WHERE sensitive)$q$,
	$q$SELECT dp_count(*) FROM patients p WHERE EXISTS (SELECT 1 FROM patients q WHERE q.id = p.id + 1 AND q.sensitive)$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age > (SELECT avg(age) FROM patients)$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age = ANY (ARRAY(SELECT age FROM patients WHERE sensitive))$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age > ALL (SELECT age FROM patients WHERE id < 3)$q$,
	$q$SELECT dp_count(*) FROM patients WHERE region IN (SELECT region FROM regions)$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age IN (SELECT 30)$q$,
	$q$SELECT dp_count(*) FILTER (WHERE id IN (SELECT id FROM patients WHERE sensitive)) FROM patients$q$,
	$q$SELECT 1 FROM patients HAVING dp_count(*) > (SELECT count(*) FROM patients)$q$,
	$q$SELECT dp_sum((SELECT max(age) FROM patients), 0, 100, 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_count(id, (SELECT dp_laplace(max(age)) FROM patients)) FROM patients$q$,
	$q$SELECT dp_sum(income, 0, (SELECT max(income) FROM patients), 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_count(*) FROM patients ORDER BY (SELECT max(age) FROM patients)$q$,
	$q$SELECT dp_count(*) FROM patients LIMIT (SELECT count(*) FROM patients)$q$,
	$q$SELECT dp_count(*) FROM patients OFFSET (SELECT min(age) FROM patients)$q$,
	$q$SELECT r.region, (SELECT dp_count(*) FROM patients p WHERE p.region = r.region) FROM regions r$q$,
	$q$SELECT r.region, s.n FROM regions r, LATERAL (SELECT dp_count(*) AS n FROM patients p WHERE p.region = r.region) s$q$,
	$q$SELECT g, s.n FROM generate_series(1, 3) g, LATERAL (SELECT dp_count(*) AS n FROM patients WHERE age > g) s$q$,
	$q$SELECT 1 WHERE EXISTS (SELECT dp_count(*) FROM patients)$q$,
	$q$SELECT g FROM generate_series(1, 3) g WHERE g < (SELECT dp_count(*) FROM patients WHERE age = g)$q$,
	$q$SELECT p.name FROM regions r, LATERAL (SELECT name FROM patients WHERE region = r.region LIMIT 1) p$q$
]) AS q;

-- CTEs (plain, MATERIALIZED, recursive, data-modifying)
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$WITH t AS (SELECT * FROM patients) SELECT name FROM t$q$,
	$q$WITH t AS (SELECT * FROM patients) SELECT dp_count(*) FROM t, t AS t2$q$,
	$q$WITH t AS MATERIALIZED (SELECT * FROM patients WHERE sensitive LIMIT 5) SELECT dp_count(*) FROM t$q$,
	$q$WITH t AS NOT MATERIALIZED (SELECT * FROM patients) SELECT dp_count(*) FROM t WHERE name IN (SELECT name FROM t)$q$,
	$q$WITH c AS (SELECT * FROM patients ORDER BY income LIMIT 1) SELECT dp_count(*) FROM c$q$,
	$q$WITH c AS MATERIALIZED (SELECT dp_count(*) AS n FROM patients) SELECT c.n, c2.n FROM c, c AS c2$q$,
	$q$WITH x AS (SELECT 1) SELECT dp_count(*) FROM patients$q$,
	$q$WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < (SELECT dp_count(*) FROM patients WHERE age < 20)) SELECT count(*) FROM r$q$,
	$q$WITH RECURSIVE r(id, name) AS (SELECT id, name FROM patients WHERE id = 1 UNION ALL SELECT p.id, p.name FROM patients p JOIN r ON p.id = r.id + 1) SELECT * FROM r$q$,
	$q$WITH d AS (DELETE FROM patients WHERE id = 1 RETURNING *) SELECT * FROM d$q$,
	$q$WITH u AS (UPDATE patients SET age = age WHERE sensitive RETURNING name) SELECT count(*) FROM u$q$
]) AS q;

-- joins (self, public tables, cross, outer), set operations, DISTINCT
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_count(*) FROM patients a JOIN patients b ON a.id = b.id + 1$q$,
	$q$SELECT dp_count(*) FROM patients a, patients b$q$,
	$q$SELECT dp_count(*) FROM patients, regions$q$,
	$q$SELECT r.region, p.name FROM regions r LEFT JOIN patients p ON p.region = r.region$q$,
	$q$SELECT dp_count(*) FROM regions r FULL JOIN patients p ON p.region = r.region$q$,
	$q$SELECT dp_count(*) FROM patients p JOIN (VALUES (1), (1), (1)) v(x) ON p.id = v.x$q$,
	$q$SELECT dp_count(*) FROM patients, generate_series(1, 1000)$q$,
	$q$SELECT dp_count(*) FROM patients p JOIN ana.mine m ON m.id = p.id$q$,
	$q$SELECT dp_count(*) FROM patients p, pg_class c WHERE c.relname = p.name$q$,
	$q$SELECT dp_count(*) FROM patients UNION ALL SELECT dp_count(*) FROM patients$q$,
	$q$SELECT name FROM patients UNION SELECT 'x'$q$,
	$q$SELECT 1 UNION ALL SELECT dp_count(*) FROM patients UNION ALL SELECT dp_count(*) FROM patients$q$,
	$q$SELECT name FROM patients INTERSECT SELECT 'patient 10'$q$,
	$q$SELECT region FROM regions EXCEPT SELECT region FROM patients$q$,
	$q$SELECT dp_count(*) FROM patients WHERE sensitive EXCEPT SELECT dp_count(*) FROM patients$q$,
	$q$SELECT DISTINCT region, count(*) OVER () FROM patients$q$,
	$q$SELECT DISTINCT ON (region) name FROM patients$q$
]) AS q;

-- GROUP BY with raw aggregates or keys, also in GROUPING SETS, ROLLUP, CUBE
-- (plain GROUP BY with dp aggregates is allowed: section 2b; grouping sets of
-- allowed keys are one release each: sql/releases.sql)
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT region, min(age) FROM patients GROUP BY region$q$,
	$q$SELECT region, dp_count(*), max(age) FROM patients GROUP BY region$q$,
	$q$SELECT region, name, dp_count(*) FROM patients GROUP BY region$q$,
	$q$SELECT age + 1, dp_count(*) FROM patients GROUP BY age + 1$q$,
	$q$SELECT age + 1, dp_count(*) FROM patients GROUP BY ROLLUP (age + 1)$q$,
	$q$SELECT region, sensitive, min(age) FROM patients GROUP BY CUBE (region, sensitive)$q$,
	$q$SELECT g, dp_count(id, dp_laplace(1)) FROM patients CROSS JOIN generate_series(1, 2) g GROUP BY ROLLUP (g)$q$
]) AS q;

-- ORDER BY / LIMIT tricks
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_count(*) FROM patients ORDER BY age$q$,
	$q$SELECT dp_count(*) FROM patients ORDER BY max(age)$q$,
	$q$SELECT dp_count(*) FROM patients LIMIT dp_count(*)$q$,
	$q$SELECT dp_count(*) FROM patients FOR UPDATE$q$,
	$q$SELECT dp_count(*) FROM patients FOR SHARE$q$,
	$q$SELECT dp_count(*) FROM patients TABLESAMPLE BERNOULLI (50) REPEATABLE (1)$q$
]) AS q;

-- side effects in WHERE, FILTER and aggregate arguments
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_count(*) FROM patients WHERE nextval('ana.s') > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE sensitive AND nextval('ana.s') > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE id = 10 AND sensitive AND set_config('dp_test.hit', 'yes', false) = 'yes'$q$,
	$q$SELECT dp_count(*) FROM patients WHERE id = 10 AND sensitive AND pg_notify('leak', 'hit') IS NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE sensitive AND pg_advisory_lock(42) IS NOT NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE setval('ana.s', age) > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE sensitive AND set_config('dp_test.leak', name, false) IS NOT NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE pg_notify('leak', name) IS NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE pg_advisory_lock(age) IS NOT NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE sensitive AND pg_try_advisory_xact_lock(id)$q$,
	$q$SELECT dp_count(*) FROM patients WHERE sensitive AND pg_sleep(0) IS NOT NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE random() < 0.5$q$,
	$q$SELECT dp_count(*) FROM patients WHERE clock_timestamp() > now()$q$,
	$q$SELECT dp_count(*) FROM patients WHERE lo_from_bytea(0, convert_to(name, 'UTF8')) > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE ana.leak(name)$q$,
	$q$SELECT dp_count(*) FROM patients WHERE ana.gt30(age)$q$,
	$q$SELECT dp_count(*) FILTER (WHERE ana.leak(age)) FROM patients$q$,
	$q$SELECT dp_count(ana.leak(name), 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=1)' ORDER BY ana.leak(name)) FROM patients$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age OPERATOR(ana.=) 30$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age::ana.age_d = 30$q$,
	$q$SELECT dp_count(*) FROM patients WHERE dblink_connect('dbname=dp_regress') IS NOT NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE ana.read_count(id) > 0$q$,
	$q$SELECT dp_sum(age, 0, ana.stable_bound(), 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_count(id, dp_laplace(ana.stable_bound())) FROM patients$q$,
	$q$SELECT region, dp_count(*) FROM patients GROUP BY region HAVING ana.leak(region)$q$,
	$q$SELECT region, dp_count(*) FROM patients GROUP BY region ORDER BY ana.leak(region)$q$,
	$q$SELECT ana.gt30(dp_count(*)::int) FROM patients$q$
]) AS q;
-- (nothing ran: the sequence, the setting and the advisory locks are untouched)
SELECT (SELECT is_called FROM ana.s) AS sequence_used, current_setting('dp_test.hit', true) AS hit,
       (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS advisory_locks;

-- error oracles: arithmetic, casts, functions that fail on private values
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_count(*) FROM patients WHERE 1 / (age - 30) > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age % (age - 18) = 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age * 100000000 > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age + 1 > 30$q$,
	$q$SELECT dp_count(*) FROM patients WHERE -age < 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE income::int2 > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE income::numeric(3, 0) > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE name::int > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE substr(name, 9)::int > 500$q$,
	$q$SELECT dp_count(*) FROM patients WHERE CAST(note AS int) IS NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age::text = '30'$q$,
	$q$SELECT dp_count(*) FROM patients WHERE name::varchar(3) = 'pat'$q$,
	$q$SELECT dp_count(*) FROM patients WHERE sqrt(age - 50) > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE ln(income) > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE log(income) > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE power(age, 1000) > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE exp(income) > 0$q$,
	$q$SELECT dp_count(*) FROM patients WHERE abs(age) > 30$q$,
	$q$SELECT dp_count(*) FROM patients WHERE bit_length(name) > 10$q$,
	$q$SELECT dp_count(*) FROM patients WHERE md5(name) = 'x'$q$,
	$q$SELECT dp_count(*) FROM patients WHERE (ARRAY[1, 2, 3])[age] IS NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE (string_to_array(name, ' '))[2]::int > 500$q$,
	$q$SELECT dp_count(*) FROM patients WHERE to_date(note, 'YYYY') IS NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE CASE WHEN sensitive THEN 1 / (age - age) ELSE 1 END = 1$q$,
	$q$SELECT dp_count(*) FROM patients WHERE nullif(age, 30) IS NULL$q$,
	$q$SELECT dp_count(*) FROM patients WHERE greatest(age, 30) = 30$q$,
	$q$SELECT dp_count(*) FROM patients WHERE name ~ '^(patient) \1'$q$,
	$q$SELECT dp_count(*) FROM patients WHERE 'abc' ~ name$q$,
	$q$SELECT dp_count(*) FROM patients WHERE name SIMILAR TO note$q$,
	$q$SELECT dp_count(*) FROM patients WHERE age = ANY (ARRAY[30, 1 / (age - 30)])$q$,
	$q$SELECT dp_count(*) FROM patients WHERE jsonb_build_object('n', name) ->> 'n' = 'x'$q$,
	$q$SELECT dp_count(*) FILTER (WHERE 100 / (age - 30) > 1) FROM patients$q$,
	$q$SELECT dp_count(*) FILTER (WHERE name::int > 0) FROM patients$q$,
	$q$SELECT dp_count(1 / (age - 30), 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_sum(income / (age - 30), 0, 100, 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_sum(age * 2, 0, 200, 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_sum(bit_length(name), 0, 20, 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_histogram(name::int, ARRAY[1, 2], 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_histogram(region || name, ARRAY['x'], 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_avg(sqrt(income - 50000), 0, 1000, 'laplace(epsilon=1)') FROM patients$q$
]) AS q;

-- dp aggregates with parameters taken from the data
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_count(id, dp_laplace(age)) FROM patients$q$,
	$q$SELECT dp_count(id, CASE WHEN sensitive THEN 'laplace(epsilon=1)'::dp_mechanism ELSE 'laplace(epsilon=2)' END) FROM patients$q$,
	$q$SELECT dp_count(id, name::dp_mechanism) FROM patients$q$,
	$q$SELECT dp_sum(income, 0, income, 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_sum(age, age, 100, 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_histogram(income, 0, 100000, age, 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_histogram(region, ARRAY[name], 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_count(id, NULL::dp_mechanism) FROM patients$q$,
	$q$SELECT dp_count(id, 'laplace(scale=1)') FROM patients$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0)') FROM patients$q$,
	$q$SELECT dp_sum(income, 100000, 0, 'laplace(epsilon=1)') FROM patients$q$,
	$q$SELECT dp_count_final(5)$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=1000)') FROM patients$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=99)') FROM patients$q$
]) AS q;

-- reads through functions (of a superuser's: the analyst's own may not run at all)
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_count(*) FROM dp_test.all_patients()$q$,
	$q$SELECT region, dp_count(*) FROM dp_test.all_patients() GROUP BY region$q$,
	$q$SELECT dp_count(*) FROM dp_test.all_patients_pl()$q$,
	$q$SELECT name FROM dp_test.all_patients()$q$,
	$q$SELECT reltuples FROM dp_test.class_sizes() WHERE relname = 'patients'$q$,
	$q$SELECT dp_pg.masked_call('pg_read_file(text)'::regprocedure, NULL::text, '/etc/hostname'::text)$q$,
	$q$SELECT dp_pg.masked_call('pg_relation_size(regclass)'::regprocedure, NULL::int4, 'clinic.patients'::regclass)$q$
]) AS q;
SELECT dp_pg.masked_call('pg_relation_size(regclass)'::regprocedure, NULL::int8, 'clinic.patients'::regclass) IS NULL AS direct_call_masked,
       dp_pg.masked_call('pg_relation_size(regclass)'::regprocedure, NULL::int8, 'clinic.regions'::regclass) > 0 AS public_size_shown;
-- messages below NOTICE never reach an analyst (planner debug output, sort
-- traces): client_min_messages is raised again when a statement is planned
SET debug_print_plan = on;
SET trace_sort = on;
SET client_min_messages = log;
SELECT region FROM patients GROUP BY region ORDER BY region DESC;
SHOW client_min_messages;
RESET debug_print_plan;
RESET trace_sort;
RESET client_min_messages;

-- EXPLAIN, with and without ANALYZE
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$EXPLAIN SELECT dp_count(*) FROM patients$q$,
	$q$EXPLAIN ANALYZE SELECT dp_count(*) FROM patients$q$,
	$q$EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT dp_count(*) FROM patients WHERE sensitive$q$,
	$q$EXPLAIN (ANALYZE, BUFFERS) SELECT dp_count(*) FROM patients WHERE age > 80$q$,
	$q$EXPLAIN SELECT * FROM patients$q$,
	$q$EXPLAIN (FORMAT JSON) SELECT dp_count(*) FROM patients WHERE age BETWEEN 30 AND 39$q$,
	$q$EXPLAIN SELECT * FROM regions WHERE region IN (SELECT region FROM patients)$q$,
	$q$EXPLAIN SELECT * FROM clinic.patients_v$q$,
	$q$EXPLAIN (COSTS OFF) SELECT dp_count(*) FROM patients$q$
]) AS q;

-- statistics, storage and catalog side channels that must fail
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT * FROM pg_statistic WHERE starelid = 'clinic.patients'::regclass$q$,
	$q$SELECT * FROM pg_statistic_ext_data$q$,
	$q$SELECT * FROM pgstattuple('clinic.patients')$q$,
	$q$SELECT pg_read_binary_file(pg_relation_filepath('clinic.patients'))$q$,
	$q$SELECT * FROM pg_stat_file(pg_relation_filepath('clinic.patients'))$q$,
	$q$SELECT pg_ls_dir('base')$q$,
	$q$SELECT * FROM pg_create_logical_replication_slot('g_slot', 'test_decoding')$q$,
	$q$SELECT pg_stat_reset()$q$,
	$q$SELECT pg_stat_reset_single_table_counters('clinic.patients'::regclass)$q$,
	$q$COPY patients TO '/tmp/dp_g_patients'$q$,
	$q$COPY patients TO PROGRAM 'cat'$q$,
	$q$COPY patients FROM '/dev/null'$q$
]) AS q;

-- roles and dp_pg's settings (SET SESSION AUTHORIZATION is not tried: this
-- session was opened by a superuser, so PostgreSQL would allow it)
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SET ROLE dp_g_owner$q$,
	$q$SET ROLE dp_g_trusted$q$,
	$q$SET ROLE postgres$q$,
	$q$SELECT set_config('role', 'dp_g_owner', false)$q$,
	$q$GRANT dp_g_trusted TO dp_g_analyst$q$,
	$q$ALTER ROLE dp_g_analyst SUPERUSER$q$,
	$q$ALTER ROLE dp_g_analyst SET dp_pg.charge_timeout = 1$q$,
	$q$SET dp_pg.charge_timeout = 1$q$,
	$q$SELECT set_config('dp_pg.charge_timeout', '1', false)$q$,
	$q$SET dp_pg.debug_pause = 'before_commit'$q$,
	$q$SET dp_pg.debug_pause_ms = 1$q$,
	$q$SET dp_pg.ledger_database = 'postgres'$q$,
	$q$SET session_replication_role = replica$q$,
	$q$LOAD 'dp_pg'$q$
]) AS q;

-- writes and DDL on the protected table, and dp_pg's administration
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$INSERT INTO patients VALUES (2000, 'north', 40, 1, false, 'x', NULL)$q$,
	$q$INSERT INTO patients SELECT * FROM patients$q$,
	$q$UPDATE patients SET name = 'x' WHERE id = 1$q$,
	$q$UPDATE patients SET age = age WHERE sensitive RETURNING name$q$,
	$q$DELETE FROM patients WHERE id = 1$q$,
	$q$DELETE FROM patients WHERE NOT sensitive RETURNING *$q$,
	$q$MERGE INTO patients p USING ana.mine m ON p.id = m.id WHEN MATCHED THEN DO NOTHING$q$,
	$q$TRUNCATE patients$q$,
	$q$LOCK TABLE patients IN ACCESS SHARE MODE$q$,
	$q$ALTER TABLE patients ADD COLUMN x int$q$,
	$q$ALTER TABLE patients RENAME TO patients2$q$,
	$q$ALTER TABLE patients OWNER TO dp_g_analyst$q$,
	$q$ALTER TABLE patients ENABLE ROW LEVEL SECURITY$q$,
	$q$CREATE INDEX ON patients (name)$q$,
	$q$CREATE TRIGGER t BEFORE UPDATE ON patients FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()$q$,
	$q$CREATE POLICY p ON patients USING (true)$q$,
	$q$COMMENT ON TABLE patients IS 'x'$q$,
	$q$REINDEX TABLE patients$q$,
	$q$CLUSTER patients USING patients_pkey$q$,
	$q$DROP TABLE patients$q$,
	$q$CREATE TABLE ana.child () INHERITS (clinic.patients)$q$,
	$q$CREATE TABLE ana.copy (LIKE clinic.patients)$q$,
	$q$CREATE TABLE ana.fk (id int REFERENCES clinic.patients (id))$q$,
	$q$SELECT dp_pg.unprotect('clinic.patients')$q$,
	$q$SELECT dp_pg.protect('clinic.patients', 'id', 100, 100)$q$,
	$q$SELECT dp_pg.protect('ana.mine')$q$,
	$q$SELECT dp_pg.set_public_keys('clinic.patients', 'name', ARRAY['patient 10'])$q$,
	$q$SELECT dp_pg.set_budget('dp_g_analyst', 1000, 0.1)$q$,
	$q$SELECT dp_pg.reset_budget('dp_g_analyst')$q$,
	$q$SELECT dp_pg.drop_budget('dp_g_analyst')$q$,
	$q$DELETE FROM dp_pg.ledger_entries$q$,
	$q$UPDATE dp_pg.budget_limits SET epsilon_limit = 1000$q$,
	$q$DELETE FROM dp_pg.protected_tables$q$,
	$q$INSERT INTO dp_pg.public_keys VALUES ('clinic.patients'::regclass, 'name', ARRAY['patient 10'])$q$,
	$q$SELECT dp_pg.invalidate_guard()$q$,
	$q$UPDATE pg_class SET relacl = NULL WHERE oid = 'clinic.patients'::regclass$q$
]) AS q;

-- the analyst's own views, functions, tables and code
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$CREATE VIEW ana.v AS SELECT * FROM clinic.patients$q$,
	$q$SELECT * FROM ana.v$q$,
	$q$CREATE VIEW ana.vb WITH (security_barrier) AS SELECT name FROM clinic.patients WHERE sensitive$q$,
	$q$SELECT * FROM ana.vb$q$,
	$q$CREATE VIEW ana.vdp AS SELECT dp_count(*) AS n FROM clinic.patients$q$,
	$q$SELECT * FROM ana.vdp$q$,
	$q$CREATE MATERIALIZED VIEW ana.mv AS SELECT * FROM clinic.patients$q$,
	$q$CREATE TABLE ana.t AS SELECT * FROM clinic.patients$q$,
	$q$SELECT * INTO ana.t2 FROM clinic.patients$q$,
	$q$INSERT INTO ana.mine SELECT id, region FROM clinic.patients$q$,
	$q$CREATE FUNCTION ana.f1() RETURNS SETOF text LANGUAGE sql SECURITY DEFINER AS 'SELECT name FROM clinic.patients'$q$,
	$q$SELECT * FROM ana.f1()$q$,
	$q$CREATE FUNCTION ana.f2() RETURNS bigint LANGUAGE sql SECURITY DEFINER BEGIN ATOMIC SELECT count(*) FROM clinic.patients; END$q$,
	$q$SELECT ana.f2()$q$,
	$q$CREATE FUNCTION ana.f3() RETURNS SETOF clinic.patients LANGUAGE plpgsql SECURITY DEFINER AS $f$ BEGIN RETURN QUERY SELECT * FROM clinic.patients; END $f$$q$,
	$q$SELECT * FROM ana.f3()$q$,
	$q$DO $d$ DECLARE r record; BEGIN FOR r IN SELECT name FROM clinic.patients WHERE sensitive LOOP RAISE NOTICE '%', r.name; END LOOP; END $d$$q$,
	$q$DO $d$ DECLARE n bigint; BEGIN SELECT min(age) INTO n FROM clinic.patients; RAISE NOTICE '%', n; END $d$$q$,
	$q$DO $d$ DECLARE n bigint; BEGIN EXECUTE 'SELECT min(age) FROM clinic.patients' INTO n; RAISE NOTICE '%', n; END $d$$q$,
	$q$DO $d$ DECLARE c refcursor; r record; BEGIN OPEN c FOR SELECT * FROM clinic.patients; FETCH c INTO r; RAISE NOTICE '%', r; END $d$$q$,
	$q$DO $d$ BEGIN PERFORM ana.leak(name) FROM clinic.patients; END $d$$q$,
	$q$DO $d$ DECLARE n bigint; BEGIN SELECT dp_count(*) INTO n FROM clinic.patients WHERE ana.leak(age); END $d$$q$,
	$q$DO $d$ DECLARE n bigint; BEGIN SELECT dp_count(id, dp_laplace(age)) INTO n FROM clinic.patients; END $d$$q$,
	$q$SELECT * FROM dblink('dbname=dp_regress', 'SELECT name FROM clinic.patients') AS t(name text)$q$,
	$q$PREPARE p_raw AS SELECT * FROM clinic.patients$q$,
	$q$EXECUTE p_raw$q$,
	$q$DECLARE c_raw CURSOR FOR SELECT name FROM clinic.patients$q$,
	$q$DECLARE c_scroll SCROLL CURSOR FOR SELECT name FROM clinic.patients$q$,
	$q$DECLARE c_hold CURSOR WITH HOLD FOR SELECT * FROM clinic.patients$q$,
	$q$DECLARE c_group_raw CURSOR FOR SELECT region, min(age) FROM clinic.patients GROUP BY region$q$
]) AS q;

\pset format aligned
-- the search path cannot swap in the analyst's own "=" or "dp_count"
SET search_path = ana, pg_catalog, clinic, public;
SELECT dp_test.g_err($q$SELECT dp_count(*) FROM patients WHERE age = 30$q$) AS shadowed_eq;
SELECT dp_test.g_err($q$SELECT dp_count(name, 'laplace(epsilon=1)') FROM patients$q$) AS shadowed_dp_count;
SET search_path = clinic, public;

-- COPY, \copy, PREPARE / EXECUTE, cursors and SET ROLE at the top level
COPY patients TO STDOUT;
\echo :SQLSTATE
COPY patients (name) TO STDOUT;
\echo :SQLSTATE
COPY (SELECT name FROM patients WHERE sensitive) TO STDOUT;
\echo :SQLSTATE
COPY (SELECT min(age) FROM patients) TO STDOUT;
\echo :SQLSTATE
\copy (SELECT * FROM patients) TO STDOUT
\echo :SQLSTATE
PREPARE p_names AS SELECT name FROM patients;
\echo :SQLSTATE
EXECUTE p_names;
\echo :SQLSTATE
PREPARE p_one(int) AS SELECT sensitive FROM patients WHERE id = $1;
\echo :SQLSTATE
PREPARE p_count(int) AS SELECT min(age) FROM patients WHERE age > $1;
\echo :SQLSTATE
PREPARE p_mech(int) AS SELECT dp_count(id, dp_laplace($1 + age)) FROM patients;
\echo :SQLSTATE
PREPARE p_oracle(int) AS SELECT dp_count(*) FROM patients WHERE 1 / (age - $1) > 0;
\echo :SQLSTATE
PREPARE p_group AS SELECT region, min(age) FROM patients GROUP BY region;
\echo :SQLSTATE
-- (PREPARE only parses; the guard refuses when the plan is made)
EXECUTE p_one(10);
\echo :SQLSTATE
EXECUTE p_count(30);
\echo :SQLSTATE
EXECUTE p_mech(1);
\echo :SQLSTATE
EXECUTE p_oracle(30);
\echo :SQLSTATE
EXECUTE p_group;
\echo :SQLSTATE
SET plan_cache_mode = force_generic_plan;
EXECUTE p_one(10);
\echo :SQLSTATE
RESET plan_cache_mode;
DEALLOCATE ALL;
ALTER SYSTEM SET dp_pg.charge_timeout = 1;
\echo :SQLSTATE
BEGIN;
DECLARE c_raw CURSOR FOR SELECT * FROM patients;
\echo :SQLSTATE
ROLLBACK;
BEGIN;
DECLARE c_scroll SCROLL CURSOR FOR SELECT name, sensitive FROM patients;
\echo :SQLSTATE
ROLLBACK;
BEGIN;
DECLARE c_hold CURSOR WITH HOLD FOR SELECT min(age) FROM patients;
\echo :SQLSTATE
ROLLBACK;
SET ROLE dp_g_owner;
\echo :SQLSTATE
SET ROLE dp_g_trusted;
\echo :SQLSTATE
SELECT current_user;
-- ANALYZE and VACUUM of a protected table: refused before they run (guard/ddl.c;
-- PostgreSQL would skip them for a non-owner, but not for a database owner):
-- no INFO line (always shown) of VERBOSE
SET client_min_messages = error;
ANALYZE VERBOSE patients;
VACUUM VERBOSE patients;
RESET client_min_messages;
-- GRANT by a non-owner: nothing granted (a warning); SELECT only through dp_pg_analyst
GRANT SELECT ON patients TO dp_g_analyst;
SELECT has_table_privilege('clinic.patients', 'SELECT') AS analyst_select;

RESET SESSION AUTHORIZATION;
-- the corpus: how many statements, how many refused, and the ledger (must be +0)
SELECT count(*) AS statements, count(*) FILTER (WHERE result NOT LIKE 'no error%' AND result NOT LIKE '%[CHARGED]') AS refused,
       count(*) FILTER (WHERE result LIKE '%[CHARGED]') AS charged
FROM dp_test.g_corpus;
SELECT n, result, statement FROM dp_test.g_corpus
WHERE result LIKE 'no error%' OR result LIKE '%[CHARGED]' ORDER BY n;
SELECT * FROM dp_test.g_since_mark(0, 0, 0);
-- the table is intact and still protected
SELECT count(*), sum(age) FROM clinic.patients;
SELECT has_table_privilege('dp_g_analyst', 'clinic.patients', 'SELECT') AS analyst_select;

-- Error oracles among the allowlisted predicates.  A query that passes the
-- guard and then fails while it runs, depending on which rows reach the
-- failing expression, tells a private fact exactly (here: patient 10 is
-- sensitive, patient 11 is not), for one small charge.
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
\pset format unaligned
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	-- a constant LIKE pattern ending in the escape character fails while the
	-- plan is made (selectivity), for every row or none: no oracle
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE id = 10 AND sensitive AND name LIKE '%\'$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE id = 11 AND sensitive AND name LIKE '%\'$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE id = 10 AND sensitive AND name ILIKE '%\'$q$,
	-- patterns from private columns are refused
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE id = 500 AND note LIKE note$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FILTER (WHERE note ILIKE note) FROM patients$q$,
	-- (closed) LIKE under a nondeterministic collation (the analyst can create
	-- one) fails only on rows that reach it
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE id = 10 AND sensitive AND name LIKE 'x' COLLATE ana.ci$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE id = 11 AND sensitive AND name LIKE 'x' COLLATE ana.ci$q$,
	-- (closed) stable functions counted as constants, but they are evaluated
	-- (and fail) only where an OR or CASE reaches them: now computed once
	-- before the query runs (dp_pg.run_constant), they fail for both twins alike
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE NOT (id = 10 AND sensitive) OR current_setting('dp_test.missing') IS NULL$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE NOT (id = 11 AND sensitive) OR current_setting('dp_test.missing') IS NULL$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE CASE WHEN id = 10 AND sensitive THEN to_date('x', 'YYYY') IS NULL ELSE false END$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE CASE WHEN id = 11 AND sensitive THEN to_date('x', 'YYYY') IS NULL ELSE false END$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE CASE WHEN id = 10 AND sensitive THEN 'nope'::text::regclass IS NULL ELSE false END$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE CASE WHEN id = 11 AND sensitive THEN 'nope'::text::regclass IS NULL ELSE false END$q$
]) AS q;
-- (closed) a bound LIKE pattern in a generic plan is not seen by the planner,
-- so it fails only on rows that reach it
SET plan_cache_mode = force_generic_plan;
PREPARE like_param(text, int) AS
	SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM patients WHERE id = $2 AND sensitive AND name LIKE $1;
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$EXECUTE like_param('%\', 10)$q$,
	$q$EXECUTE like_param('%\', 11)$q$
]) AS q;
RESET plan_cache_mode;
DEALLOCATE like_param;
\pset format aligned
-- (closed) a stable function with a side effect (it assigns a transaction id),
-- reached only through the OR when patient 10 is sensitive: now computed once
-- before the query runs, so the transaction id is assigned for both twins
BEGIN;
SELECT dp_count(id, 'laplace(epsilon=0.01)') IS NOT NULL AS answered FROM patients
WHERE NOT (id = 10 AND sensitive) OR pg_current_xact_id() IS NULL;
SELECT pg_current_xact_id_if_assigned() IS NOT NULL AS xid_assigned_10;
ROLLBACK;
BEGIN;
SELECT dp_count(id, 'laplace(epsilon=0.01)') IS NOT NULL AS answered FROM patients
WHERE NOT (id = 11 AND sensitive) OR pg_current_xact_id() IS NULL;
SELECT pg_current_xact_id_if_assigned() IS NOT NULL AS xid_assigned_11;
ROLLBACK;
RESET SESSION AUTHORIZATION;
SELECT charges, epsilon FROM dp_test.g_since_mark(0, 0, 0);

-- Policy edges: shapes the v1 rules do not name, or name as allowed although
-- they look odd.  Each is either refused (no charge) or answered (one charge
-- of epsilon 0.1): 18 are answered (post-processing with volatile functions included).
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
\pset format unaligned
SELECT dp_test.g_err(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_count(DISTINCT region, 'laplace(epsilon=0.1)') FROM patients$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients GROUP BY ()$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients LIMIT 0$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE ctid = '(0,1)'$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE patients IS NOT NULL$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE CASE WHEN sensitive THEN age > 30 ELSE false END$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE coalesce(note, 'x') = 'x'$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE age > abs(-30)$q$,
	$q$SELECT dp_avg(age, 0, 100, 'laplace(epsilon=0.1)') FROM patients$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE age > 30.5$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE age = 30::int8$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE age = ANY ('{30, 31}')$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE age IN (id, 30)$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE age > id$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE sensitive = (age > 30)$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE (age, income) > (30, 1000)$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE income IS DISTINCT FROM 0$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE age BETWEEN SYMMETRIC 40 AND 30$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE name COLLATE "C" > 'patient 5'$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE name LIKE 'patient 1%' ESCAPE '#'$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)'), nextval('ana.s') FROM patients$q$,
	$q$SELECT pg_sleep(0), dp_count(id, 'laplace(epsilon=0.1)') FROM patients$q$,
	$q$CREATE TABLE ana.released AS SELECT dp_count(id, 'laplace(epsilon=0.1)') AS n FROM clinic.patients$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE txid_current() > 0$q$,
	$q$SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM patients WHERE pg_current_xact_id() IS NOT NULL$q$,
	-- user functions applied to released values are post-processing (charged);
	-- one that reads the table is refused inside
	$q$SELECT ana.read_count(dp_count(id, 'laplace(epsilon=0.1)')) FROM patients$q$,
	$q$SELECT ana.read_names(dp_count(id, 'laplace(epsilon=0.1)')) FROM patients$q$,
	-- a SECURITY DEFINER function of the DBA's: refused for an analyst's session
	$q$SELECT clinic.count_all()$q$,
	-- estimate_cost of a dp query on a protected table (free, nothing executed)
	$q$SELECT * FROM dp_pg.estimate_cost('SELECT dp_count(id, ''laplace(epsilon=0.1)'') FROM clinic.patients')$q$,
	$q$SELECT * FROM dp_pg.estimate_cost('SELECT * FROM clinic.patients')$q$
]) AS q;
\pset format aligned
COPY (SELECT dp_count(id, 'laplace(epsilon=0.1)') IS NOT NULL AS answered FROM patients) TO STDOUT;
\echo :SQLSTATE
RESET SESSION AUTHORIZATION;
SELECT charges, epsilon, delta FROM dp_test.g_since_mark(0, 0, 0);

--
-- 4. catalog side channels: NULL for the protected table, its indexes and its
-- TOAST table; psql's and BI tools' catalog queries keep working
--
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET search_path = clinic, public;
-- the superuser's view: statistics exist (control, below as the analyst)
SELECT c.relname, c.reltuples IS NULL AS reltuples_hidden, c.relpages IS NULL AS relpages_hidden,
       c.relallvisible IS NULL AS relallvisible_hidden
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'clinic' ORDER BY c.relname;
SELECT c.reltuples IS NULL AND c.relpages IS NULL AND c.relallvisible IS NULL AS toast_hidden
FROM pg_class c WHERE c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'clinic.patients'::regclass);
SELECT bool_and(c.reltuples IS NULL AND c.relpages IS NULL) AS toast_index_hidden
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'clinic.patients'::regclass);
-- every way of reading the row (whole-row references to pg_class are refused)
SELECT (row_to_json(c) ->> 'reltuples') IS NULL AS json_hidden, (c).relpages IS NULL AS whole_row_hidden,
       c::text LIKE '%,1000,%' AS text_shows_1000
FROM pg_class c WHERE c.oid = 'clinic.patients'::regclass;
SELECT reltuples FROM pg_catalog.pg_class WHERE relname = 'patients' AND relnamespace = 'clinic'::regnamespace;
SELECT max(reltuples) IS NULL AS max_hidden, sum(relpages) IS NULL AS sum_hidden
FROM pg_class WHERE oid = 'clinic.patients'::regclass;
SELECT count(*) AS rows_with_reltuples_1000 FROM pg_class WHERE reltuples = 1000 AND relnamespace = 'clinic'::regnamespace;
-- statistics functions and views
SELECT pg_stat_get_live_tuples(c) IS NULL AS live, pg_stat_get_dead_tuples(c) IS NULL AS dead,
       pg_stat_get_tuples_inserted(c) IS NULL AS inserted, pg_stat_get_tuples_updated(c) IS NULL AS updated,
       pg_stat_get_tuples_returned(c) IS NULL AS returned, pg_stat_get_tuples_fetched(c) IS NULL AS fetched,
       pg_stat_get_numscans(c) IS NULL AS scans, pg_stat_get_blocks_fetched(c) IS NULL AS blocks,
       pg_stat_get_blocks_hit(c) IS NULL AS hits, pg_stat_get_mod_since_analyze(c) IS NULL AS mod,
       pg_stat_get_ins_since_vacuum(c) IS NULL AS ins_vac, pg_stat_get_xact_tuples_inserted(c) IS NULL AS xact_ins
FROM (SELECT 'clinic.patients'::regclass::oid AS c) s;
SELECT pg_stat_get_numscans(c) IS NULL AS index_scans, pg_stat_get_tuples_returned(c) IS NULL AS index_returned
FROM (SELECT 'clinic.patients_pkey'::regclass::oid AS c) s;
SELECT n_live_tup IS NULL AS live, n_dead_tup IS NULL AS dead, seq_tup_read IS NULL AS seq_read,
       n_tup_ins IS NULL AS ins, n_mod_since_analyze IS NULL AS mod
FROM pg_stat_user_tables WHERE relid = 'clinic.patients'::regclass;
SELECT heap_blks_read IS NULL AS heap_read, heap_blks_hit IS NULL AS heap_hit
FROM pg_statio_user_tables WHERE relid = 'clinic.patients'::regclass;
SELECT bool_and(idx_tup_read IS NULL AND idx_scan IS NULL) AS index_stats_hidden
FROM pg_stat_user_indexes WHERE relid = 'clinic.patients'::regclass;
SELECT count(*) AS pg_stats_rows FROM pg_stats WHERE schemaname = 'clinic' AND tablename = 'patients';
SELECT count(*) AS pg_stats_ext_rows FROM pg_stats_ext WHERE schemaname = 'clinic' AND tablename = 'patients';
-- sizes
SELECT pg_relation_size('clinic.patients') IS NULL AS rel, pg_relation_size('clinic.patients', 'fsm') IS NULL AS fsm,
       pg_table_size('clinic.patients') IS NULL AS tbl, pg_total_relation_size('clinic.patients') IS NULL AS total,
       pg_indexes_size('clinic.patients') IS NULL AS idx, pg_relation_size('clinic.patients_pkey') IS NULL AS pkey,
       pg_relation_size('clinic.patients_age') IS NULL AS age_idx,
       pg_relation_size((SELECT reltoastrelid FROM pg_class WHERE oid = 'clinic.patients'::regclass)) IS NULL AS toast;
-- the public table is not hidden
SELECT reltuples, relpages > 0 AS has_pages, pg_relation_size('clinic.regions') > 0 AS has_size
FROM pg_class WHERE oid = 'clinic.regions'::regclass;
-- psql's \d, \dt, \dt+ and the information schema still work
\d clinic.patients
-- (rows only: psql's titles differ by version)
\pset tuples_only on
\dt clinic.*
\dt+ clinic.*
\pset tuples_only off
SELECT c.relname, c.relkind, n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = 'patients';
SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a
WHERE a.attrelid = 'clinic.patients'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum;
SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'clinic' ORDER BY table_name;
SELECT column_name, data_type FROM information_schema.columns
WHERE table_schema = 'clinic' AND table_name = 'patients' ORDER BY ordinal_position;
SELECT pg_catalog.pg_get_indexdef(i.indexrelid) FROM pg_catalog.pg_index i
WHERE i.indrelid = 'clinic.patients'::regclass ORDER BY 1;
-- (closed) expressions PostgreSQL evaluates without planning them (domain
-- and table CHECK constraints, trigger WHEN conditions, INSERT and COPY FROM
-- defaults) and the analyst's own functions, all made before it had a budget
-- (section 1): the size functions meet the object-access hook there and are
-- refused, and so is the analyst's code; (closed) COPY of a whole catalog
-- table is refused while protected tables are hidden
SELECT dp_test.g_err($q$SELECT 0::float8::ana.small$q$) AS below_size,
       dp_test.g_err($q$SELECT 1e12::float8::ana.small$q$) AS above_size;
SELECT dp_test.g_err($q$INSERT INTO ana.checked VALUES (1)$q$) AS check_constraint;
SELECT dp_test.g_err($q$INSERT INTO ana.sizes (tag) VALUES ('insert')$q$) AS insert_default;
COPY ana.sizes (tag) FROM STDIN;
copy
\.
SELECT tag, size IS NULL AS hidden FROM ana.sizes ORDER BY tag;
SELECT dp_test.g_err($q$INSERT INTO ana.mine VALUES (18, 'south')$q$) AS trigger_when;
SELECT dp_test.g_err($q$SELECT ana.reltuples_of('clinic.patients')$q$) AS own_function;
-- the same sizes through EXECUTE parameters, CALL arguments and COPY FROM WHERE,
-- none of which is planned
PREPARE sized(bigint) AS SELECT $1 IS NULL AS hidden;
SELECT dp_test.g_err($q$EXECUTE sized(pg_catalog.pg_relation_size('clinic.patients'))$q$) AS execute_param;
DEALLOCATE sized;
COPY ana.mine FROM STDIN WHERE pg_catalog.pg_relation_size('clinic.patients') > 0;
19	east
\.
\getenv abs_builddir PG_ABS_BUILDDIR
\set copy_file :abs_builddir '/results/guard_pg_class.copy'
\o :copy_file
COPY pg_catalog.pg_class (relname, reltuples, relpages) TO STDOUT;
\o
RESET SESSION AUTHORIZATION;
SELECT split_part(l, E'\t', 1) AS relname, split_part(l, E'\t', 2) = '\N' AS reltuples_hidden,
       split_part(l, E'\t', 3) = '\N' AS relpages_hidden
FROM regexp_split_to_table(pg_read_file(:'copy_file'), E'\n') l
WHERE l ~ '^patients(_pkey|_age)?\t' ORDER BY l;
SELECT * FROM dp_test.g_since_mark(0, 0, 0);
-- the superuser still sees the real statistics
SELECT reltuples, relpages > 0 AS has_pages, pg_relation_size('clinic.patients') > 0 AS has_size
FROM pg_class WHERE oid = 'clinic.patients'::regclass;

--
-- 5. a table the analyst could read before it was protected: a direct grant
-- survives protect() (which revokes PUBLIC's privileges only), but the guard
-- still refuses raw reads, a cached generic plan is not reused, and its
-- statistics are hidden
--
SET ROLE dp_g_owner;
CREATE TABLE clinic.staff (id int PRIMARY KEY, salary int NOT NULL);
INSERT INTO clinic.staff SELECT g, 1000 * g FROM generate_series(1, 100) g;
GRANT SELECT ON clinic.staff TO dp_g_analyst;
RESET ROLE;
ANALYZE clinic.staff;
SELECT dp_test.g_set_mark();
SET SESSION AUTHORIZATION dp_g_analyst;
SET plan_cache_mode = force_generic_plan;
PREPARE staff_raw AS SELECT count(*) AS n, sum(salary) AS total FROM clinic.staff;
EXECUTE staff_raw;
PREPARE staff_dp AS SELECT abs(dp_count(id, 'laplace(epsilon=0.5)') - 100) <= 50 AS close FROM clinic.staff;
RESET SESSION AUTHORIZATION;
SELECT dp_pg.protect('clinic.staff');
SELECT EXISTS (SELECT 1 FROM pg_class c, aclexplode(c.relacl) a
               WHERE c.oid = 'clinic.staff'::regclass AND a.grantee = 'dp_g_analyst'::regrole) AS direct_grant_kept;
SET SESSION AUTHORIZATION dp_g_analyst;
EXECUTE staff_raw;
\echo :SQLSTATE
SELECT dp_test.g_err($q$SELECT * FROM clinic.staff WHERE id = 1$q$) AS raw_read,
       dp_test.g_err($q$SELECT max(salary) FROM clinic.staff$q$) AS builtin_aggregate,
       dp_test.g_err($q$EXPLAIN SELECT dp_count(*) FROM clinic.staff$q$) AS explain;
EXECUTE staff_dp;
RESET plan_cache_mode;
DEALLOCATE ALL;
-- (closed) with a direct grant the analyst may SELECT the table in
-- PostgreSQL's eyes, so pg_stats (histograms, most common values) and the
-- size numbers are visible
SELECT count(*) AS pg_stats_rows FROM pg_stats WHERE schemaname = 'clinic' AND tablename = 'staff';
SELECT reltuples IS NULL AS reltuples_hidden, pg_relation_size('clinic.staff') IS NULL AS size_hidden
FROM pg_class WHERE oid = 'clinic.staff'::regclass;
RESET SESSION AUTHORIZATION;
SELECT * FROM dp_test.g_since_mark(1, 0.5, 0);

-- the roles of this file, their budgets and ledger rows
\set forget 'dp_g_owner dp_g_analyst dp_g_trusted'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
