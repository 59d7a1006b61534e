--
-- The released-answer cache (src/release/cache.c) and the session's error bars
-- (dp_pg.last_releases).  An identical dp query from the same budgets on
-- unchanged data is served again, uncharged, with the same values; every
-- kind of data change, every change of the query or its parameters, and
-- another set of budgets misses (a new release, charged).
--
-- Noisy values are never printed: a served answer is compared with the
-- release it repeats (equal, exactly), and a miss is seen in the ledger (one
-- charge) and in dp_pg.last_releases.from_cache; none of the checks depends
-- on the noise drawn.
--
-- (errors only: protect() warns about every analyst of other test files)
SET client_min_messages = error;
CREATE ROLE dp_c_owner;
CREATE ROLE dp_c_an;
CREATE ROLE dp_c_other;
CREATE ROLE dp_c_team;
CREATE ROLE dp_c_m1 IN ROLE dp_c_team;
CREATE ROLE dp_c_m2 IN ROLE dp_c_team;
CREATE SCHEMA cache_t AUTHORIZATION dp_c_owner;
GRANT USAGE ON SCHEMA cache_t TO PUBLIC;
SET ROLE dp_c_owner;
CREATE TABLE cache_t.t (id int PRIMARY KEY, region text NOT NULL, amount float8 NOT NULL, person int NOT NULL, d date);
INSERT INTO cache_t.t SELECT g, (ARRAY['n', 's'])[g % 2 + 1], g % 100, g % 200, date '2024-01-01' + g % 3 FROM generate_series(1, 1000) g;
CREATE TABLE cache_t.u AS SELECT * FROM cache_t.t;
CREATE TABLE cache_t.spare AS SELECT * FROM cache_t.t;
RESET ROLE;
SELECT dp_pg.protect('cache_t.t');
SELECT dp_pg.set_public_keys('cache_t.t', 'region', ARRAY['n', 's']);
SELECT dp_pg.protect('cache_t.u', 'person', 2, 5);
SELECT dp_pg.set_budget('dp_c_an', 1e6, 1e-3);
SELECT dp_pg.set_budget('dp_c_other', 1e6, 1e-3);
SELECT dp_pg.set_budget('dp_c_team', 1e6, 1e-3);
-- protect() put the change trigger on the table, firing ALWAYS
SELECT tgname, tgenabled, tgtype FROM pg_trigger WHERE tgrelid = 'cache_t.t'::regclass AND NOT tgisinternal;
-- charges of a role (readable by the analysts), and whether the last query was served from the cache
CREATE FUNCTION cache_t.charges(r regrole) RETURNS bigint LANGUAGE sql SECURITY DEFINER
	SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger WHERE role = r AND kind = 'charge'
$$;
CREATE FUNCTION cache_t.served() RETURNS boolean LANGUAGE sql
	SET search_path = pg_catalog AS $$
	SELECT bool_and(from_cache) FROM dp_pg.last_releases
$$;
GRANT EXECUTE ON FUNCTION cache_t.charges(regrole), cache_t.served() TO PUBLIC;
-- the test clusters run with the cache off (test/lib.sh); this file turns it on
SET dp_pg.answer_cache = on;

SET SESSION AUTHORIZATION dp_c_an;
-- an analyst can neither change the setting nor see or clear the cache
SET dp_pg.answer_cache = off;
SELECT * FROM dp_pg.answer_cache;
SELECT dp_pg.clear_answer_cache();

-- 1. the same query again: the same values, one charge, served from the cache
SELECT cache_t.charges('dp_c_an') AS c0 \gset
SELECT dp_count(id, 'laplace(epsilon=1)') AS a FROM cache_t.t \gset
SELECT cache_t.served() AS served;
SELECT dp_count(id, 'laplace(epsilon=1)') AS b FROM cache_t.t \gset
SELECT cache_t.served() AS served, :a = :b AS same, cache_t.charges('dp_c_an') - :c0 AS charges;
-- spelled differently (case, spaces, a comment): the same plan, served
select DP_COUNT(id,   'laplace(epsilon=1)') /* again */ AS b FROM cache_t.t \gset
SELECT cache_t.served() AS served, :a = :b AS same, cache_t.charges('dp_c_an') - :c0 AS charges;
-- several rows (GROUP BY public keys), several aggregates
SELECT array_agg(region ORDER BY region) AS ka, array_agg(n ORDER BY region) AS na, array_agg(s ORDER BY region) AS sa
FROM (SELECT region, dp_count(*) AS n, dp_sum(amount, 0, 100, 'laplace(epsilon=1)') AS s FROM cache_t.t GROUP BY region) q \gset
SELECT array_agg(region ORDER BY region) AS kb, array_agg(n ORDER BY region) AS nb, array_agg(s ORDER BY region) AS sb
FROM (SELECT region, dp_count(*) AS n, dp_sum(amount, 0, 100, 'laplace(epsilon=1)') AS s FROM cache_t.t GROUP BY region) q \gset
\set a :ka:na:sa
\set b :kb:nb:sb
SELECT cache_t.served() AS served, :'a' = :'b' AS same, cache_t.charges('dp_c_an') - :c0 AS charges;

-- 2. a different query misses: another mechanism, bound, filter, grouping
SELECT cache_t.charges('dp_c_an') AS c0 \gset
SELECT dp_count(id, 'laplace(epsilon=2)') AS x FROM cache_t.t \gset
SELECT cache_t.served() AS served;
SELECT dp_count(id, 'gaussian(epsilon=1, delta=1e-6)') AS x FROM cache_t.t \gset
SELECT cache_t.served() AS served;
SELECT dp_sum(amount, 0, 50, 'laplace(epsilon=1)') AS x FROM cache_t.t \gset
SELECT cache_t.served() AS served;
SELECT dp_count(id, 'laplace(epsilon=1)') AS x FROM cache_t.t WHERE amount < 50 \gset
SELECT cache_t.served() AS served;
SELECT dp_count(id, 'laplace(epsilon=1)') AS x FROM cache_t.t WHERE amount < 51 \gset
SELECT cache_t.served() AS served;
SELECT cache_t.charges('dp_c_an') - :c0 AS charges;
-- the default mechanism is part of the query
SELECT dp_count(*) AS x FROM cache_t.t \gset
SELECT dp_count(*) AS x FROM cache_t.t \gset
SELECT cache_t.served() AS served;
SET dp_pg.default_mechanism = 'laplace(epsilon=0.5)';
SELECT dp_count(*) AS x FROM cache_t.t \gset
SELECT cache_t.served() AS served;
RESET dp_pg.default_mechanism;
SELECT dp_count(*) AS x FROM cache_t.t \gset
SELECT cache_t.served() AS served;

-- 3. bound parameters: the same values are served, others miss
PREPARE c_q(float8, dp_mechanism) AS SELECT dp_count(id, $2) FROM cache_t.t WHERE amount < $1;
SELECT cache_t.charges('dp_c_an') AS c0 \gset
EXECUTE c_q(30, 'laplace(epsilon=1)') \gset a_
EXECUTE c_q(30, 'laplace(epsilon=1)') \gset b_
SELECT cache_t.served() AS served, :a_dp_count = :b_dp_count AS same;
EXECUTE c_q(31, 'laplace(epsilon=1)') \gset b_
SELECT cache_t.served() AS served;
EXECUTE c_q(30, 'laplace(epsilon=3)') \gset b_
SELECT cache_t.served() AS served, cache_t.charges('dp_c_an') - :c0 AS charges;
DEALLOCATE c_q;

-- 4. a privacy-unit table (its per-execution seed is not part of the key)
SELECT dp_count(*) AS a FROM cache_t.u \gset
SELECT dp_count(*) AS b FROM cache_t.u \gset
SELECT cache_t.served() AS served, :a = :b AS same;

-- 5. a cursor without SCROLL fetched to its end is kept; a scrollable one is
-- never served or kept (it may be read backwards)
BEGIN;
DECLARE c NO SCROLL CURSOR FOR SELECT region, dp_count(*) FROM cache_t.t WHERE amount > 10 GROUP BY region;
FETCH 1 FROM c \gset
MOVE FORWARD ALL IN c;
COMMIT;
SELECT cache_t.served() AS served;
SELECT cache_t.charges('dp_c_an') AS c0 \gset
BEGIN;
DECLARE c NO SCROLL CURSOR FOR SELECT region, dp_count(*) FROM cache_t.t WHERE amount > 10 GROUP BY region;
MOVE FORWARD ALL IN c;
COMMIT;
SELECT cache_t.served() AS served, cache_t.charges('dp_c_an') - :c0 AS charges;
BEGIN;
DECLARE s SCROLL CURSOR FOR SELECT dp_count(*) FROM cache_t.t WHERE amount > 20;
FETCH 1 FROM s \gset
COMMIT;
BEGIN;
DECLARE s SCROLL CURSOR FOR SELECT dp_count(*) FROM cache_t.t WHERE amount > 20;
FETCH 1 FROM s \gset
COMMIT;
SELECT cache_t.served() AS served, cache_t.charges('dp_c_an') - :c0 AS charges;
RESET SESSION AUTHORIZATION;

-- 6. every kind of data change misses once, then the new answer is served
CREATE FUNCTION cache_t.probe(OUT served boolean, OUT charges bigint) LANGUAGE plpgsql AS $$
DECLARE
	c0 bigint := cache_t.charges('dp_c_an');
	v bigint;
BEGIN
	EXECUTE 'SET SESSION AUTHORIZATION dp_c_an';
	EXECUTE 'SELECT dp_count(id, ''laplace(epsilon=1)'') FROM cache_t.t' INTO v;
	served := cache_t.served();
	EXECUTE 'RESET SESSION AUTHORIZATION';
	charges := cache_t.charges('dp_c_an') - c0;
END $$;
SELECT * FROM cache_t.probe();
SELECT * FROM cache_t.probe();
INSERT INTO cache_t.t VALUES (5001, 'n', 1, 1);
SELECT * FROM cache_t.probe();
SELECT * FROM cache_t.probe();
UPDATE cache_t.t SET amount = 2 WHERE id = 5001;
SELECT * FROM cache_t.probe();
DELETE FROM cache_t.t WHERE id = 5001;
SELECT * FROM cache_t.probe();
-- a write that does not change a row is still a write
UPDATE cache_t.t SET amount = amount WHERE id = 1;
SELECT * FROM cache_t.probe();
COPY cache_t.t FROM stdin;
5002	s	3	3	2024-01-02
\.
SELECT * FROM cache_t.probe();
TRUNCATE cache_t.t;
SELECT * FROM cache_t.probe();
INSERT INTO cache_t.t SELECT * FROM cache_t.spare;
SELECT * FROM cache_t.probe();
SELECT * FROM cache_t.probe();
-- a rolled-back write changes nothing: served
BEGIN;
INSERT INTO cache_t.t VALUES (5003, 'n', 1, 1);
ROLLBACK;
SELECT * FROM cache_t.probe();
-- a write whose subtransaction rolled back, then a kept write in the same transaction: a miss
BEGIN;
SAVEPOINT s1;
INSERT INTO cache_t.t VALUES (5004, 'n', 1, 1);
ROLLBACK TO s1;
INSERT INTO cache_t.t VALUES (5005, 'n', 1, 1);
COMMIT;
SELECT * FROM cache_t.probe();
-- a write to another table (even a protected one) changes nothing here
INSERT INTO cache_t.u VALUES (9999, 'n', 1, 1);
SELECT * FROM cache_t.probe();
-- protection settings: a domain, public keys, the protection itself
SELECT dp_pg.set_domain('cache_t.t', 'amount', 0, 100);
SELECT * FROM cache_t.probe();
SELECT dp_pg.set_public_keys('cache_t.t', 'region', ARRAY['n', 's', 'e']);
SELECT * FROM cache_t.probe();
SELECT dp_pg.protect('cache_t.t');
SELECT * FROM cache_t.probe();
SELECT * FROM cache_t.probe();
-- under session_replication_role = replica the trigger still fires (ALWAYS)
SET session_replication_role = replica;
INSERT INTO cache_t.t VALUES (5006, 'n', 1, 1);
RESET session_replication_role;
SELECT * FROM cache_t.probe();
-- a disabled change trigger: never served, never kept; writes made while it
-- was disabled are not counted, so enabling it again makes a new key (a miss)
ALTER TABLE cache_t.t DISABLE TRIGGER dp_pg_data_changed;
SELECT * FROM cache_t.probe();
DELETE FROM cache_t.t WHERE id = 5006;
SELECT * FROM cache_t.probe();
ALTER TABLE cache_t.t ENABLE ALWAYS TRIGGER dp_pg_data_changed;
SELECT * FROM cache_t.probe();
SELECT * FROM cache_t.probe();
-- a change trigger that never fires (WHEN false) is not dp_pg's: never served;
-- protect() makes it again
DROP TRIGGER dp_pg_data_changed ON cache_t.t;
CREATE TRIGGER dp_pg_data_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON cache_t.t
	FOR EACH STATEMENT WHEN (false) EXECUTE FUNCTION dp_pg.data_changed();
ALTER TABLE cache_t.t ENABLE ALWAYS TRIGGER dp_pg_data_changed;
SELECT * FROM cache_t.probe();
SELECT * FROM cache_t.probe();
SELECT dp_pg.protect('cache_t.t');
SELECT tgqual IS NULL AS plain, tgenabled FROM pg_trigger WHERE tgrelid = 'cache_t.t'::regclass AND tgname = 'dp_pg_data_changed';
SELECT * FROM cache_t.probe();
SELECT * FROM cache_t.probe();
-- a rewrite (new relfilenode) misses
ALTER TABLE cache_t.t ALTER COLUMN amount TYPE float8 USING amount + 0;
SELECT * FROM cache_t.probe();
-- the changes table folds its rows without changing the count a snapshot sees
SELECT sum(writes) > 0 AS counted, count(*) >= 1 AS rows FROM dp_pg.data_changes WHERE relid = 'cache_t.t'::regclass;

-- what the plan computes beyond the table must not depend on the session:
-- such queries are released every time (never served, never kept)
CREATE FUNCTION cache_t.twice(q text, OUT first_served boolean, OUT second_served boolean, OUT charges bigint)
LANGUAGE plpgsql AS $$
DECLARE
	c0 bigint := cache_t.charges('dp_c_an');
BEGIN
	EXECUTE 'SET SESSION AUTHORIZATION dp_c_an';
	EXECUTE q;
	first_served := cache_t.served();
	EXECUTE q;
	second_served := cache_t.served();
	EXECUTE 'RESET SESSION AUTHORIZATION';
	charges := cache_t.charges('dp_c_an') - c0;
END $$;
-- the same query twice (control: served the second time)
SELECT * FROM cache_t.twice($$SELECT n FROM (SELECT dp_count(id, 'laplace(epsilon=1)') AS n FROM cache_t.t WHERE amount < 4) q$$);
-- now(), random(), current_user, a sequence, current_setting() around the release
SELECT * FROM cache_t.twice($$SELECT n, now() FROM (SELECT dp_count(id, 'laplace(epsilon=1)') AS n FROM cache_t.t WHERE amount < 4) q$$);
SELECT * FROM cache_t.twice($$SELECT n, random() FROM (SELECT dp_count(id, 'laplace(epsilon=1)') AS n FROM cache_t.t WHERE amount < 4) q$$);
SELECT * FROM cache_t.twice($$SELECT n, current_user FROM (SELECT dp_count(id, 'laplace(epsilon=1)') AS n FROM cache_t.t WHERE amount < 4) q$$);
SELECT * FROM cache_t.twice($$SELECT n, current_setting('application_name') FROM (SELECT dp_count(id, 'laplace(epsilon=1)') AS n FROM cache_t.t WHERE amount < 4) q$$);
-- a text cast of a date (its output depends on DateStyle): released each time
SELECT * FROM cache_t.twice($$SELECT n::text || now()::date::text FROM (SELECT dp_count(id, 'laplace(epsilon=1)') AS n FROM cache_t.t WHERE amount < 4) q$$);
-- an anonymous record (its type exists only in the session that made it) is never kept
SELECT * FROM cache_t.twice($$SELECT ARRAY[ROW(1::int8, n)] FROM (SELECT dp_count(id, 'laplace(epsilon=1)') AS n FROM cache_t.t WHERE amount < 4) q$$);
SELECT * FROM cache_t.twice($$SELECT ROW(n, 'x') FROM (SELECT dp_count(id, 'laplace(epsilon=1)') AS n FROM cache_t.t WHERE amount < 4) q$$);
-- a histogram's labels are written with the session's DateStyle: part of the key
SET SESSION AUTHORIZATION dp_c_an;
SET DateStyle = 'ISO, MDY';
SELECT dp_histogram(d, ARRAY[date '2024-01-01', date '2024-01-02'], 'laplace(epsilon=1)') AS h FROM cache_t.t \gset
SELECT dp_histogram(d, ARRAY[date '2024-01-01', date '2024-01-02'], 'laplace(epsilon=1)') AS h FROM cache_t.t \gset
SELECT cache_t.served() AS served, :'h' LIKE '%2024-01-01%' AS iso_labels;
SET DateStyle = 'German';
SELECT dp_histogram(d, ARRAY[date '2024-01-01', date '2024-01-02'], 'laplace(epsilon=1)') AS h FROM cache_t.t \gset
SELECT cache_t.served() AS served, :'h' LIKE '%01.01.2024%' AS german_labels;
RESET DateStyle;
SELECT dp_histogram(amount, ARRAY[1.5::float8, 2.5], 'laplace(epsilon=1)') AS h FROM cache_t.t \gset
SELECT dp_histogram(amount, ARRAY[1.5::float8, 2.5], 'laplace(epsilon=1)') AS h FROM cache_t.t \gset
SELECT cache_t.served() AS served;
SET extra_float_digits = -5;
SELECT dp_histogram(amount, ARRAY[1.5::float8, 2.5], 'laplace(epsilon=1)') AS h FROM cache_t.t \gset
SELECT cache_t.served() AS served;
RESET extra_float_digits;
SET DateStyle = 'German';
SELECT dp_histogram(amount, ARRAY[1.5::float8, 2.5], 'laplace(epsilon=1)') AS h FROM cache_t.t \gset
SELECT cache_t.served() AS served;
RESET DateStyle;
RESET SESSION AUTHORIZATION;
-- a row-level security policy of the DBA's (it may read the user): never kept
CREATE POLICY cache_tenant ON cache_t.t AS RESTRICTIVE FOR SELECT USING (region <> 'x');
SELECT * FROM cache_t.probe();
SELECT * FROM cache_t.probe();
DROP POLICY cache_tenant ON cache_t.t;
SELECT * FROM cache_t.probe();
SELECT * FROM cache_t.probe();

-- 7. budgets: another role misses; roles charged to the same budgets only
-- (a team budget, no budget of their own) share answers
SET SESSION AUTHORIZATION dp_c_other;
SELECT cache_t.charges('dp_c_other') AS o0 \gset
SELECT dp_count(id, 'laplace(epsilon=1)') AS x FROM cache_t.t \gset
SELECT cache_t.served() AS served, cache_t.charges('dp_c_other') - :o0 AS charges;
RESET SESSION AUTHORIZATION;
SELECT cache_t.charges('dp_c_team') AS t0 \gset
SET SESSION AUTHORIZATION dp_c_m1;
SELECT dp_count(id, 'laplace(epsilon=1)') AS a FROM cache_t.t \gset
SELECT cache_t.served() AS served;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION dp_c_m2;
SELECT dp_count(id, 'laplace(epsilon=1)') AS b FROM cache_t.t \gset
SELECT cache_t.served() AS served, :a = :b AS same;
RESET SESSION AUTHORIZATION;
SELECT cache_t.charges('dp_c_team') - :t0 AS team_charges;
-- a member who also has a budget of its own is another set of budgets: a miss
SELECT dp_pg.set_budget('dp_c_m2', 1e6, 1e-3);
SET SESSION AUTHORIZATION dp_c_m2;
SELECT dp_count(id, 'laplace(epsilon=1)') AS b FROM cache_t.t \gset
SELECT cache_t.served() AS served;
RESET SESSION AUTHORIZATION;
SELECT cache_t.charges('dp_c_team') - :t0 AS team_charges, cache_t.charges('dp_c_m2') AS m2_charges;
-- a served answer costs nothing, so an exhausted budget still gets it
-- (re-sending a released value is post-processing); a new query is refused
SELECT epsilon_spent AS spent FROM dp_pg.budgets WHERE role = 'dp_c_an'::regrole \gset
SELECT dp_pg.set_budget('dp_c_an', :spent, 1e-3);
SET SESSION AUTHORIZATION dp_c_an;
SELECT dp_count(id, 'laplace(epsilon=1)') AS x FROM cache_t.t \gset
SELECT cache_t.served() AS served;
\set VERBOSITY terse
SELECT dp_count(id, 'laplace(epsilon=1)') AS x FROM cache_t.t WHERE amount > 1;
\set VERBOSITY default
RESET SESSION AUTHORIZATION;
SELECT dp_pg.set_budget('dp_c_an', 1e6, 1e-3);

-- 8. off for a role (a superuser's setting): every run is a release
SET dp_pg.answer_cache = off;
SET SESSION AUTHORIZATION dp_c_an;
SELECT cache_t.charges('dp_c_an') AS c0 \gset
SELECT dp_count(id, 'laplace(epsilon=1)') AS x FROM cache_t.t \gset
SELECT cache_t.served() AS served;
SELECT dp_count(id, 'laplace(epsilon=1)') AS x FROM cache_t.t \gset
SELECT cache_t.served() AS served, cache_t.charges('dp_c_an') - :c0 AS charges;
RESET SESSION AUTHORIZATION;
SET dp_pg.answer_cache = on;

-- 9. the DBA's view and clearing
SELECT roles, nrows > 0 AS has_rows, bytes > 0 AS has_bytes, epsilon > 0 AS charged,
       released_at <= last_served AS times, database = current_database() AS here
FROM dp_pg.answer_cache WHERE query LIKE '%cache_t.t%' AND 'dp_c_an'::regrole = ANY (roles) LIMIT 1;
SELECT dp_pg.clear_answer_cache('dp_c_other') >= 1 AS cleared_other;
SELECT count(*) AS other_left FROM dp_pg.answer_cache WHERE 'dp_c_other'::regrole = ANY (roles);
SELECT count(*) > 0 AS an_kept FROM dp_pg.answer_cache WHERE 'dp_c_an'::regrole = ANY (roles);
-- (only this file's answers: the server may keep others)
SELECT sum(dp_pg.clear_answer_cache(r)) >= 1 AS cleared
FROM unnest('{dp_c_an, dp_c_other, dp_c_team, dp_c_m2}'::regrole[]) r;
SELECT count(*) AS left FROM dp_pg.answer_cache WHERE roles && '{dp_c_an, dp_c_other, dp_c_team, dp_c_m2}'::regrole[];
SELECT * FROM cache_t.probe();

-- 10. error bars: exact for the mechanism and sensitivity, also when served
SET SESSION AUTHORIZATION dp_c_an;
SELECT dp_count(id, 'laplace(epsilon=1)') AS x, dp_sum(amount, 0, 100, 'laplace(epsilon=1)') AS y FROM cache_t.t \gset
SELECT site, aggregate, mechanism, round(noise_sd::numeric, 6) AS sd, ci95_halfwidth, epsilon, delta, from_cache
FROM dp_pg.last_releases ORDER BY site;
SELECT dp_count(id, 'laplace(epsilon=1)') AS x, dp_sum(amount, 0, 100, 'laplace(epsilon=1)') AS y FROM cache_t.t \gset
SELECT site, aggregate, mechanism, round(noise_sd::numeric, 6) AS sd, ci95_halfwidth, epsilon, delta, from_cache
FROM dp_pg.last_releases ORDER BY site;
-- the same numbers as the inspection functions give
SELECT round(dp_noise_stddev('laplace(epsilon=1)', 1)::numeric, 6) AS sd,
       (dp_confidence_interval(0, 'laplace(epsilon=1)', 1, 0.95)).upper AS h95;
-- the error bars of any query, planned, not run and not charged (for a BI tile's companion)
SELECT cache_t.charges('dp_c_an') AS c0 \gset
SELECT site, aggregate, mechanism, round(noise_sd::numeric, 6) AS sd, ci95_halfwidth, epsilon
FROM dp_pg.error_bars($$SELECT region, COUNT(*), dp_sum(amount, 0, 100, 'laplace(epsilon=1)') FROM cache_t.t GROUP BY region$$);
SELECT site, aggregate, mechanism FROM dp_pg.error_bars('SELECT dp_count(*) FROM cache_t.u');
SELECT cache_t.charges('dp_c_an') - :c0 AS charges;
SELECT * FROM dp_pg.error_bars('SELECT * FROM cache_t.t');
SELECT * FROM dp_pg.error_bars('SELECT 1');
-- partition selection is listed too (its noise decides which groups appear)
SELECT count(*) >= 0 AS ok FROM (SELECT person, dp_count(*) FROM cache_t.t GROUP BY person) q;
SELECT site, aggregate, mechanism FROM dp_pg.last_releases ORDER BY site;
RESET SESSION AUTHORIZATION;

-- The data-change trigger's own statements run with superuser rights on
-- behalf of whoever writes the table: the writer's search_path must not pick
-- their functions or operators.  The owner of the table plants an operator
-- =(oid, integer) (an exact match for "relid = <oid>" in the trigger's fold,
-- which runs about once in 64 writes) that records who called it, and writes
-- the table in 2000 transactions (no fold at all: probability (63/64)^2000 <
-- 3e-14).  The control shows the trap is live in the owner's own statement.
SET ROLE dp_c_owner;
CREATE TABLE cache_t.seen (who name, su bool);
CREATE FUNCTION cache_t.trap(a oid, b int) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO cache_t.seen SELECT current_user, rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user;
	RETURN a OPERATOR(pg_catalog.=) b::oid;
END $$;
CREATE OPERATOR cache_t.= (LEFTARG = oid, RIGHTARG = int, FUNCTION = cache_t.trap);
SET search_path = cache_t, pg_catalog;
SELECT 1::oid = 1 AS trap_fires;
DO $$ BEGIN FOR i IN 1..2000 LOOP UPDATE cache_t.t SET amount = amount WHERE id = 1; COMMIT; END LOOP; END $$;
RESET search_path;
SELECT count(*) FILTER (WHERE su) AS as_superuser, count(*) FILTER (WHERE NOT su) AS as_writer FROM cache_t.seen;
RESET ROLE;
DROP OPERATOR cache_t.= (oid, int);
DROP FUNCTION cache_t.trap(oid, int);

-- A dropped role's kept answers go with it (a new role may later get its
-- OID): they stay while a DROP ROLE of it is rolled back (to a savepoint),
-- and go when one commits.
SET dp_pg.answer_cache = on;
CREATE ROLE dp_c_gone;
SELECT dp_pg.set_budget('dp_c_gone', 1e6, 1e-3);
SET SESSION AUTHORIZATION dp_c_gone;
SELECT dp_count(id, 'laplace(epsilon=1)') IS NOT NULL AS answered FROM cache_t.t;
RESET SESSION AUTHORIZATION;
SELECT 'dp_c_gone'::regrole::oid AS gone_oid \gset
SELECT count(*) AS kept FROM dp_pg.answer_cache_rows() WHERE :gone_oid = ANY (roles::oid[]);
SELECT dp_pg.drop_budget('dp_c_gone');
BEGIN;
SAVEPOINT s;
DROP ROLE dp_c_gone;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT count(*) AS kept_after_a_drop_rolled_back FROM dp_pg.answer_cache_rows() WHERE :gone_oid = ANY (roles::oid[]);
DROP ROLE dp_c_gone;
SELECT count(*) AS kept_after_the_drop FROM dp_pg.answer_cache_rows() WHERE :gone_oid = ANY (roles::oid[]);

DROP FUNCTION cache_t.probe();
DROP FUNCTION cache_t.twice(text);
SELECT dp_pg.unprotect('cache_t.t');
SELECT count(*) AS trigger_left FROM pg_trigger WHERE tgrelid = 'cache_t.t'::regclass AND tgname = 'dp_pg_data_changed';
SELECT dp_pg.unprotect('cache_t.u');
SELECT dp_pg.drop_budget('dp_c_an');
SELECT dp_pg.drop_budget('dp_c_other');
SELECT dp_pg.drop_budget('dp_c_team');
SELECT dp_pg.drop_budget('dp_c_m2');
DROP SCHEMA cache_t CASCADE;
-- the roles of this file, their budgets and ledger rows
\set forget 'dp_c_owner dp_c_an dp_c_other dp_c_m1 dp_c_m2 dp_c_team'
\set forget_gone :gone_oid
-- (dp_c_gone's rows no longer name it: since its drop they keep its old OID
-- in detail, where forget_roles.inc does not look; from a database other
-- than the ledger's the ledger worker converts them as the drop commits, so
-- wait for it)
SELECT set_config('dp_test.gone', :'gone_oid', false) IS NOT NULL AS noted \gset
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN NOT EXISTS (SELECT 1 FROM dp_pg.ledger_rows() e WHERE e.role::oid = current_setting('dp_test.gone')::oid);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT current_setting('dp_pg.ledger_database') AS cache_ledger_db, current_database() AS cache_home_db \gset
\c :"cache_ledger_db"
DELETE FROM dp_pg.ledger_entries WHERE (detail->>'dropped_role_oid')::oid IN (:forget_gone)
	OR (detail->>'dropped_requested_by_oid')::oid IN (:forget_gone);
\c :"cache_home_db"
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
