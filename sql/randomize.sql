--
-- Locally private columns (dp_pg.randomize, src/common/randomized.c) and the
-- estimates read from them (dp_rr_count, dp_rr_proportion, dp_rr_histogram,
-- src/aggregates/agg_rr.c).
--
-- 1. Declarations: boolean, enum, keys given, public keys; every refusal.
-- 2. Writes: INSERT, COPY, UPDATE (only the columns it assigns draw again),
--    NULL, values that are not keys, session_replication_role = replica.
-- 3. What keeps the trigger first: every DDL that would let something see a
--    written value before it (dp_pg_keep_randomized), dropped columns and
--    tables forgotten.
-- 4. Estimates: free (no charge, no noise) on a table that is not protected,
--    one charged release on a protected one (analyst), per GROUP BY key;
--    their error bars; every error; a table with a privacy unit refused.
-- 5. unrandomize; the free helpers (seed 002's worked example).
--
-- Nothing prints a random value.  The randomized checks: stored shares within
-- Hoeffding's bound at 1e-10 of their expectation, estimates within the
-- lecture's bound at 1e-10 (plus the noise's 1e-12 tail where noised), and
-- events of probability below 1e-100 (a thousand reports all equal to their
-- value at epsilon 1); fewer than 40 of them: the file fails by chance with
-- probability below 1e-9.
--
CREATE SCHEMA lp;
SET search_path = lp, public;
CREATE TYPE lp.mood AS ENUM ('sad', 'ok', 'happy');
-- 6,000 answers: region by id, smoker for 30% of them, mood 1:2:3, a colour
CREATE TABLE lp.survey (id int PRIMARY KEY, region text NOT NULL, smoker boolean, mood lp.mood,
	colour text, note text);
INSERT INTO lp.survey
SELECT g, CASE WHEN g % 3 = 0 THEN 'north' ELSE 'south' END, g % 10 < 3,
       (ARRAY['sad', 'ok', 'ok', 'happy', 'happy', 'happy'])[g % 6 + 1]::lp.mood,
       (ARRAY['red', 'green', 'blue', 'grey'])[g % 4 + 1], 'n'
FROM generate_series(1, 6000) g;
UPDATE lp.survey SET smoker = NULL WHERE id <= 100;		-- 100 give no answer (30 of them smokers)

-- Hoeffding at 1e-10: a count of n independent indicators with the given
-- expectation is within sqrt(n ln(2e10) / 2) of it
CREATE FUNCTION lp.near(count bigint, expected float8, n bigint) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
	SELECT abs(count - expected) <= sqrt(n * ln(2e10) / 2)
$$;

--
-- 1. Declarations
--
SELECT dp_pg.randomize('lp.survey', 'smoker', 'rr(epsilon=1)');
SELECT dp_pg.randomize('lp.survey', 'mood', dp_rr(2));
SELECT dp_pg.randomize('lp.survey', 'colour', 'rr(epsilon=1.5)', ARRAY['red', 'green', 'blue', 'grey']);
SELECT relid, attname, epsilon, keys, type FROM dp_pg.randomized_columns ORDER BY attname;
SELECT tgname, tgenabled, tgfoid::regprocedure, tgtype FROM pg_trigger WHERE tgrelid = 'lp.survey'::regclass;
-- the stored values were randomized once: every report is a key, shares near their expectation
SELECT lp.near(count(*) FILTER (WHERE smoker), 1770 * 0.7310585786300049 + 4130 * 0.2689414213699951, 5900) AS smokers,
       count(*) FILTER (WHERE smoker IS NULL) = 100 AS nulls_stay,
       lp.near(count(*) FILTER (WHERE mood = 'sad'), 1000 * exp(2) / (exp(2) + 2) + 5000 / (exp(2) + 2), 6000) AS sad,
       bool_and(colour IN ('red', 'green', 'blue', 'grey')) AS colours_are_keys,
       lp.near(count(*) FILTER (WHERE colour = 'red'), 1500 * exp(1.5) / (exp(1.5) + 3) + 4500 / (exp(1.5) + 3), 6000) AS red
FROM lp.survey;
-- public keys declared for a protected table's column are its keys
CREATE TABLE lp.visits (id int, ward int4, unit int);
INSERT INTO lp.visits SELECT g, g % 3 + 1, g % 50 FROM generate_series(1, 300) g;
SELECT dp_pg.protect('lp.visits');
SELECT dp_pg.set_public_keys('lp.visits', 'ward', ARRAY[1, 2, 3]);
SELECT dp_pg.randomize('lp.visits', 'ward', 'rr(epsilon=3)');
SELECT keys, type FROM dp_pg.randomized_columns WHERE relid = 'lp.visits'::regclass;
-- keys are stored in the type's canonical spelling and must fit the column
CREATE TABLE lp.codes (c varchar(3), n int8);
SELECT dp_pg.randomize('lp.codes', 'n', 'rr(epsilon=1)', ARRAY['01', '+2', '3']);
SELECT keys FROM dp_pg.randomized_columns WHERE relid = 'lp.codes'::regclass;
-- every refusal, none of which declares anything
CREATE TABLE lp.parted (k int, b boolean) PARTITION BY LIST (k);
CREATE TABLE lp.part1 PARTITION OF lp.parted FOR VALUES IN (1);
CREATE TABLE lp.gen (a int, b boolean GENERATED ALWAYS AS (a > 0) STORED, i int GENERATED ALWAYS AS IDENTITY,
	f float8, t text COLLATE "C", d lp.mood);
CREATE TABLE lp.ruled (b boolean);
CREATE RULE r AS ON INSERT TO lp.ruled DO ALSO NOTIFY lp_ruled;
CREATE TABLE lp.early (b boolean);
CREATE FUNCTION lp.pass() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER " early" BEFORE INSERT ON lp.early FOR EACH ROW EXECUTE FUNCTION lp.pass();
CREATE VIEW lp.v AS SELECT * FROM lp.early;
SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT dp_pg.randomize(''lp.survey'', ''smoker'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.randomize(''lp.survey'', ''note'', ''laplace(epsilon=1)'', ARRAY[''n''])',
	'SELECT dp_pg.randomize(''lp.survey'', ''note'', ''rr(epsilon=0)'', ARRAY[''n''])',
	'SELECT dp_pg.randomize(''lp.survey'', ''note'', ''rr(epsilon=101)'', ARRAY[''n'', ''m''])',
	'SELECT dp_pg.randomize(''lp.survey'', ''note'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.randomize(''lp.survey'', ''note'', ''rr(epsilon=1)'', ARRAY[''n''])',
	'SELECT dp_pg.randomize(''lp.survey'', ''note'', ''rr(epsilon=1)'', ARRAY[''n'', ''n''])',
	'SELECT dp_pg.randomize(''lp.survey'', ''note'', ''rr(epsilon=1)'', ARRAY[''n'', NULL])',
	'SELECT dp_pg.randomize(''lp.survey'', ''note'', ''rr(epsilon=1)'', NULL::text[])',
	'SELECT dp_pg.randomize(''lp.survey'', ''note'', ''rr(epsilon=1)'', array_fill(''k''::text, ARRAY[1001]))',
	'SELECT dp_pg.randomize(''lp.survey'', ''nope'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.randomize(''lp.survey'', ''id'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.randomize(''lp.codes'', ''c'', ''rr(epsilon=1)'', ARRAY[''abcd'', ''e''])',
	'SELECT dp_pg.randomize(''lp.gen'', ''b'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.randomize(''lp.gen'', ''i'', ''rr(epsilon=1)'', ARRAY[1, 2])',
	'SELECT dp_pg.randomize(''lp.gen'', ''f'', ''rr(epsilon=1)'', ARRAY[1, 2])',
	'SELECT dp_pg.randomize(''lp.gen'', ''d'', ''rr(epsilon=1)'', ARRAY[''sad'', ''glad''])',
	'SELECT dp_pg.randomize(''lp.gen'', ''a'', ''rr(epsilon=1)'', ARRAY[''x'', ''y''])',
	'SELECT dp_pg.randomize(''lp.gen'', ''b'', ''rr(epsilon=1)'', ARRAY[true, false])',
	'SELECT dp_pg.randomize(''lp.parted'', ''b'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.randomize(''lp.part1'', ''b'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.randomize(''lp.v'', ''b'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.randomize(''lp.ruled'', ''b'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.randomize(''lp.early'', ''b'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.randomize(NULL, ''b'', ''rr(epsilon=1)'')',
	'SELECT dp_pg.unrandomize(''lp.early'', ''b'')'
]) AS q;
SELECT count(*) AS declared FROM dp_pg.randomized_columns;
SELECT 'rr(epsilon=0.5)'::dp_mechanism, dp_rr(0.25), 'RR ( EPSILON = 2 )'::dp_mechanism;

--
-- 2. Writes
--
CREATE TABLE lp.w (id int, b boolean, c text);
SELECT dp_pg.randomize('lp.w', 'b', 'rr(epsilon=1)');
INSERT INTO lp.w SELECT g, true, 'x' FROM generate_series(1, 2000) g;
COPY lp.w FROM stdin;
2001	t	copied
2002	t	copied
2003	\N	copied
\.
INSERT INTO lp.w SELECT g, true, 'copied' FROM generate_series(2004, 3000) g;
-- every value written was true: some reports say false, as many as randomized response keeps
SELECT lp.near(count(*) FILTER (WHERE b), 2999 * 0.7310585786300049, 2999) AS kept_share,
       count(*) FILTER (WHERE b IS NULL) = 1 AS null_stays
FROM lp.w;
-- an UPDATE of other columns leaves the reports; one that assigns the column draws again
CREATE TEMP TABLE w_before AS SELECT id, b FROM lp.w;
UPDATE lp.w SET c = 'y';
SELECT count(*) FILTER (WHERE w.b IS DISTINCT FROM x.b) = 0 AS others_keep FROM lp.w JOIN w_before x USING (id);
UPDATE lp.w SET b = b WHERE id <= 1000;
SELECT count(*) FILTER (WHERE w.b IS DISTINCT FROM x.b) > 0 AS assigned_draws_again,
       count(*) FILTER (WHERE w.id > 1000 AND w.b IS DISTINCT FROM x.b) = 0 AS unassigned_keep
FROM lp.w JOIN w_before x USING (id);
-- ON CONFLICT, MERGE: the value proposed is randomized like any other
CREATE TABLE lp.u (id int PRIMARY KEY, b boolean);
SELECT dp_pg.randomize('lp.u', 'b', 'rr(epsilon=1)');
INSERT INTO lp.u SELECT g, true FROM generate_series(1, 1000) g ON CONFLICT (id) DO NOTHING;
MERGE INTO lp.u USING (SELECT g FROM generate_series(1001, 2000) g) s ON u.id = s.g
	WHEN NOT MATCHED THEN INSERT VALUES (s.g, true);
SELECT count(*) FILTER (WHERE b AND id <= 1000) < 1000 AS upsert_randomized,
       count(*) FILTER (WHERE b AND id > 1000) < 1000 AS merge_randomized
FROM lp.u;
-- a superuser's replica role (logical replication's apply, pg_restore --disable-triggers aside): still randomized
SET session_replication_role = replica;
INSERT INTO lp.u SELECT g, true FROM generate_series(2001, 3000) g;
RESET session_replication_role;
SELECT count(*) FILTER (WHERE b AND id > 2000) < 1000 AS replica_randomized FROM lp.u;
-- a value that is not a key: an error naming the column, never the value
INSERT INTO lp.codes VALUES ('a', 3), ('b', 1);
SELECT dp_test.err('INSERT INTO lp.codes VALUES (''c'', 42)') AS not_a_key;
SELECT count(*) = 2 AS two_rows, bool_and(n IN (1, 2, 3)) AS reports_are_keys FROM lp.codes;

--
-- 3. What keeps the trigger first
--
CREATE TRIGGER z BEFORE INSERT ON lp.w FOR EACH ROW EXECUTE FUNCTION lp.pass();
CREATE TABLE lp.wparted (id int, b boolean, c text) PARTITION BY LIST (id);
SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'DROP TRIGGER "!dp_pg_randomize" ON lp.w',
	'ALTER TABLE lp.w DISABLE TRIGGER "!dp_pg_randomize"',
	'ALTER TABLE lp.w DISABLE TRIGGER ALL',
	'ALTER TABLE lp.w ENABLE REPLICA TRIGGER "!dp_pg_randomize"',
	'ALTER TRIGGER "!dp_pg_randomize" ON lp.w RENAME TO randomize',
	'CREATE OR REPLACE TRIGGER "!dp_pg_randomize" BEFORE INSERT OR UPDATE ON lp.w FOR EACH ROW WHEN (false) EXECUTE FUNCTION dp_pg.randomize_row()',
	'CREATE TRIGGER " first" BEFORE INSERT ON lp.w FOR EACH ROW EXECUTE FUNCTION lp.pass()',
	'CREATE TRIGGER "!" BEFORE UPDATE ON lp.w FOR EACH ROW EXECUTE FUNCTION lp.pass()',
	'ALTER TRIGGER z ON lp.w RENAME TO " z"',
	'CREATE RULE r AS ON INSERT TO lp.w DO ALSO NOTIFY lp_w',
	'ALTER TABLE lp.w RENAME COLUMN b TO bb',
	'ALTER TABLE lp.w ALTER COLUMN b TYPE int USING b::int',
	'CREATE TABLE lp.w_child () INHERITS (lp.w)',
	'ALTER TABLE lp.wparted ATTACH PARTITION lp.w DEFAULT'
]) AS q;
-- what may be done: a trigger after it (z, above), an index, a renamed table, a trigger enabled for origin sessions
CREATE INDEX ON lp.w (b);
ALTER TABLE lp.w RENAME TO w2;
ALTER TABLE lp.w2 RENAME TO w;
ALTER TABLE lp.w ENABLE TRIGGER "!dp_pg_randomize";
SELECT tgenabled AS made_always_again FROM pg_trigger WHERE tgrelid = 'lp.w'::regclass AND tgname = '!dp_pg_randomize';
-- the trigger itself refuses a table where something fires before it (the event trigger held off)
ALTER EVENT TRIGGER dp_pg_keep_randomized DISABLE;
CREATE TRIGGER " first" BEFORE INSERT ON lp.w FOR EACH ROW EXECUTE FUNCTION lp.pass();
ALTER EVENT TRIGGER dp_pg_keep_randomized ENABLE ALWAYS;
SELECT dp_test.err('INSERT INTO lp.w VALUES (0, true)') AS first_trigger_refused;
DROP TRIGGER " first" ON lp.w;
SELECT count(*) AS w_rows FROM lp.w;
-- dropped columns and tables are forgotten
CREATE TABLE lp.gone (a boolean, b boolean);
SELECT dp_pg.randomize('lp.gone', 'a', 'rr(epsilon=1)');
SELECT dp_pg.randomize('lp.gone', 'b', 'rr(epsilon=1)');
ALTER TABLE lp.gone DROP COLUMN a;
SELECT attname FROM dp_pg.randomized_columns WHERE relid = 'lp.gone'::regclass;
DROP TABLE lp.gone;
SELECT count(*) AS gone FROM dp_pg.randomized_columns WHERE relid::text LIKE '%gone%';

--
-- 4. Estimates
--
CREATE ROLE lp_analyst;
GRANT USAGE ON SCHEMA lp TO lp_analyst;
GRANT SELECT ON lp.survey TO lp_analyst;
SELECT dp_pg.set_budget('lp_analyst', 100, 1e-5) IS NOT NULL AS budget;
CREATE FUNCTION lp.charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger WHERE role = 'lp_analyst'::regrole AND kind = 'charge'
$$;
GRANT EXECUTE ON FUNCTION lp.charges() TO lp_analyst;
-- dp_test.err for the analyst
CREATE FUNCTION lp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- the lecture's bound at 1e-10 for n rows (k keys)
CREATE FUNCTION lp.close(est float8, truth float8, n float8, eps float8, k int) RETURNS boolean LANGUAGE sql AS $$
	SELECT abs(est - truth) <= dp_pg.rr_halfwidth(n, eps, 1e-10, k)
$$;
-- a table that is not protected: free, no noise beyond the randomization
SET ROLE lp_analyst;
SELECT lp.close(dp_rr_count(smoker, true), 1770, 5900, 1, 2) AS smokers,
       lp.close(dp_rr_count(smoker, false), 4130, 5900, 1, 2) AS non_smokers,
       lp.close(dp_rr_count(mood, 'happy'), 3000, 6000, 2, 3) AS happy,
       abs(dp_rr_proportion(smoker, true) - 0.3) <= dp_pg.rr_halfwidth(5900, 1, 1e-10) / 5900 AS share
FROM lp.survey;
SELECT lp.charges() AS charges;
SELECT count(*) AS rows, bool_and(value BETWEEN ci95_lower AND ci95_upper) AS intervals_hold_the_value,
       bool_and(noise_sd > 0) AS sd, bool_and(epsilon = 0 AND rho = 0) AS free,
       min(mechanism) AS mechanism, bool_and(note LIKE '%free%') AS note
FROM dp_pg.last_releases;
-- per GROUP BY key; a histogram of every key; the estimates are a function of the reports (same answer again)
SELECT region, lp.close(dp_rr_count(smoker, true), CASE region WHEN 'north' THEN 591 ELSE 1179 END,
                        CASE region WHEN 'north' THEN 1967 ELSE 3933 END, 1, 2) AS per_region
FROM lp.survey GROUP BY region ORDER BY region;
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(h) k) AS keys,
       lp.close((h->>'sad')::float8, 1000, 6000, 2, 3) AND lp.close((h->>'ok')::float8, 2000, 6000, 2, 3)
       AND lp.close((h->>'happy')::float8, 3000, 6000, 2, 3) AS close
FROM (SELECT dp_rr_histogram(mood) AS h FROM lp.survey) s;
SELECT (SELECT dp_rr_count(colour, 'grey') FROM lp.survey) = (SELECT dp_rr_count(colour, 'grey') FROM lp.survey)
	AS post_processing;
SELECT lp.charges() AS still_free;
RESET ROLE;
-- a protected table: one charged release of the report counts per call, noised
SELECT dp_pg.protect('lp.survey');
SELECT dp_pg.set_public_keys('lp.survey', 'region', ARRAY['north', 'south']);
SET ROLE lp_analyst;
-- the bound at 1e-10 plus the noise of 2 keys within 30 (laplace(epsilon=1): P(|Z| > 30) < 1e-12)
SELECT abs(dp_rr_count(smoker, true, 'laplace(epsilon=1)') - 1770)
	<= dp_pg.rr_halfwidth(5900 + 60, 1, 1e-10) + 30 * (exp(1) + 1) / (exp(1) - 1) AS noised
FROM lp.survey;
SELECT lp.charges() AS charges;
SELECT count(*) AS rows, bool_and(epsilon = 1) AS charged, min(mechanism) AS mechanism,
       bool_and(note LIKE '%with noise%') AS note
FROM dp_pg.last_releases;
SELECT region, abs(dp_rr_count(smoker, true) - CASE region WHEN 'north' THEN 591 ELSE 1179 END)
	<= dp_pg.rr_halfwidth(3933 + 60, 1, 1e-10) + 30 * (exp(1) + 1) / (exp(1) - 1) AS default_mechanism
FROM lp.survey GROUP BY region ORDER BY region;
SELECT lp.charges() AS charges;
SELECT jsonb_typeof(dp_rr_histogram(mood, 'gaussian(rho=0.5)')) AS histogram FROM lp.survey;
SELECT lp.charges() AS charges;
-- raw reports of a protected table are refused like any column
SELECT lp.err('SELECT smoker FROM lp.survey') AS raw_refused;
SELECT lp.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT dp_rr_count(region, ''north'') FROM lp.survey',
	'SELECT dp_rr_count(NOT smoker, true) FROM lp.survey',
	'SELECT dp_rr_count(colour, ''purple'') FROM lp.survey',
	'SELECT dp_rr_count(smoker, NULL) FROM lp.survey',
	'SELECT dp_rr_count(smoker, true, ''rr(epsilon=1)'') FROM lp.survey',
	'SELECT dp_rr_count(smoker, true, ''groupwise(rho=1, r=0.1)'') FROM lp.survey',
	'SELECT dp_rr_count(smoker, smoker) FROM lp.survey',
	'SELECT dp_rr_histogram(smoker) OVER () FROM lp.survey'
]) AS q;
SELECT lp.charges() AS no_charge_for_errors;
RESET ROLE;
-- a table with a privacy unit: refused (each row is randomized on its own)
SELECT dp_pg.protect('lp.visits', 'unit');
SET ROLE lp_analyst;
SELECT lp.err('SELECT dp_rr_histogram(ward) FROM lp.visits') AS unit_refused;
RESET ROLE;
-- error bars of a query not run
SELECT aggregate, mechanism, note LIKE 'Per value%' AS per_value
FROM dp_pg.error_bars('SELECT dp_rr_proportion(smoker, true) FROM lp.survey');

--
-- 5. unrandomize, helpers
--
SELECT dp_pg.unrandomize('lp.w', 'b');
SELECT count(*) AS trigger_left FROM pg_trigger WHERE tgrelid = 'lp.w'::regclass AND tgname = '!dp_pg_randomize';
INSERT INTO lp.w SELECT g, true, 'after' FROM generate_series(5001, 5100) g;
SELECT bool_and(b) AS stored_as_written FROM lp.w WHERE c = 'after';
SELECT dp_test.err('SELECT dp_pg.unrandomize(''lp.w'', ''b'')') AS not_declared;
-- seed 002's worked example: 1,000,000 patients, epsilon 1, beta 0.05
SELECT round(dp_pg.rr_halfwidth(1e6, 1, 0.05)::numeric, 1) AS patients,
       round((dp_pg.rr_halfwidth(1e6, 1, 0.05) / 1e6)::numeric, 7) AS share,
       round(dp_pg.rr_estimate(3000, 10000, 1)::numeric, 6) AS estimate,
       dp_pg.rr_estimate(10000 * exp(1) / (1 + exp(1)), 10000, 1) BETWEEN 9999.999 AND 10000.001 AS unbiased;
SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT dp_pg.rr_halfwidth(1e6, 0, 0.05)',
	'SELECT dp_pg.rr_halfwidth(1e6, 1, 1.5)',
	'SELECT dp_pg.rr_halfwidth(-1, 1, 0.05)',
	'SELECT dp_pg.rr_estimate(1, 10, 1, 1)',
	'SELECT dp_pg.rr_estimate(''NaN'', 10, 1)'
]) AS q;

RESET search_path;
DROP SCHEMA lp CASCADE;
\set forget 'lp_analyst'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
