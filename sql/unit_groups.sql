--
-- unit_groups: a query whose every group would be a single privacy unit (or a
-- single row of a table whose rows are persons) is refused before anything is
-- charged: partition selection could never release one of its groups
-- (guard/unitkeys.c).  count(DISTINCT <unit>) — also written as
-- dp_count(DISTINCT <unit>, <mechanism>) — counts the persons of coarser
-- groups.  Noisy values are printed as booleans: a count of n within 25 noise
-- scales (b = 1/epsilon) of the truth, false failure < 3e-11 each.
--
\set VERBOSITY terse
CREATE SCHEMA ugk;
CREATE ROLE ugk_ana;
GRANT USAGE ON SCHEMA ugk TO ugk_ana;
-- visits: privacy unit person (g = 1, r = 2), 500 persons with 2 visits each,
-- each visit its own visit_id (the primary key)
CREATE TABLE ugk.visits (visit_id int PRIMARY KEY, person int NOT NULL, ward int NOT NULL, code text NOT NULL,
	nick text);
INSERT INTO ugk.visits SELECT g, (g + 1) / 2, g % 4, 'c' || g, NULL FROM generate_series(1, 1000) g;
CREATE UNIQUE INDEX ON ugk.visits (code);
SELECT dp_pg.protect('ugk.visits', 'person', 1, 2);
-- people: one row per person (no unit): id is the primary key, email unique but nullable,
-- badge unique among the rows whose badge > 0 only
CREATE TABLE ugk.people (id int PRIMARY KEY, region text NOT NULL, email text UNIQUE, badge int NOT NULL);
CREATE UNIQUE INDEX ON ugk.people (badge) WHERE badge > 0;
INSERT INTO ugk.people SELECT g, (ARRAY['north', 'south'])[g % 2 + 1], CASE WHEN g % 2 = 0 THEN 'p' || g || '@x' END,
	CASE WHEN g <= 900 THEN g ELSE 0 END FROM generate_series(1, 1000) g;
SELECT dp_pg.protect('ugk.people');
-- a public table that maps each person to a tag, on its primary key
CREATE TABLE ugk.tags (person int PRIMARY KEY, tag text NOT NULL);
INSERT INTO ugk.tags SELECT g, 't' || g FROM generate_series(1, 1000) g;
GRANT SELECT ON ugk.tags TO PUBLIC;
SELECT dp_pg.set_budget('ugk_ana', 1000, 1e-3);

-- statements' outcomes: dp_test.outcome (sql/canonical_keys.sql)

SET SESSION AUTHORIZATION ugk_ana;
-- 1. every group one unit (or one row): refused, nothing charged
SELECT dp_test.outcome(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT person, dp_count(*) FROM ugk.visits GROUP BY person$q$,
	$q$SELECT person, count(*) FROM ugk.visits GROUP BY person$q$,
	$q$SELECT DISTINCT person FROM ugk.visits$q$,
	$q$SELECT person, ward, dp_count(*) FROM ugk.visits GROUP BY person, ward$q$,
	$q$SELECT person::numeric, dp_count(*) FROM ugk.visits GROUP BY 1$q$,
	$q$SELECT round(person::numeric), dp_count(*) FROM ugk.visits GROUP BY 1$q$,
	$q$SELECT visit_id, dp_count(*) FROM ugk.visits GROUP BY visit_id$q$,
	$q$SELECT code, dp_count(*) FROM ugk.visits GROUP BY code$q$,
	$q$SELECT t.tag, dp_count(*) FROM ugk.visits v JOIN ugk.tags t ON t.person = v.person GROUP BY t.person, t.tag$q$,
	$q$SELECT dp_histogram(person, 'gaussian(epsilon=1, delta=1e-6)') FROM ugk.visits$q$,
	$q$SELECT id, dp_count(*) FROM ugk.people GROUP BY id$q$,
	$q$SELECT id::float8, dp_count(*) FROM ugk.people GROUP BY 1$q$,
	$q$SELECT region, id, dp_count(*) FROM ugk.people GROUP BY region, id$q$,
	$q$SELECT dp_histogram(id, 'gaussian(epsilon=1, delta=1e-6)') FROM ugk.people$q$
]) AS q;

-- 2. coarser keys run and are charged: a key that merely reads the unit
-- (width_bucket), a unique column that may be NULL (its NULL group holds many),
-- a partial unique index, a LEFT JOIN's key (NULL for every unmatched person)
SELECT dp_test.outcome(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT width_bucket(person, 0, 500, 5), dp_count(*) FROM ugk.visits GROUP BY 1$q$,
	$q$SELECT ward, dp_count(*) FROM ugk.visits GROUP BY ward$q$,
	$q$SELECT email, dp_count(*) FROM ugk.people GROUP BY email$q$,
	$q$SELECT badge, dp_count(*) FROM ugk.people GROUP BY badge$q$
]) AS q;
RESET SESSION AUTHORIZATION;
-- declared public keys of the unit column list every person, without partition selection: allowed
SELECT dp_pg.set_public_keys('ugk.visits', 'person', ARRAY(SELECT g FROM generate_series(1, 5) g));
SET SESSION AUTHORIZATION ugk_ana;
SELECT person, abs(dp_count(1, 'laplace(epsilon=1)') - 2) <= 25 AS close FROM ugk.visits GROUP BY person ORDER BY person;
RESET SESSION AUTHORIZATION;
DELETE FROM dp_pg.public_keys WHERE relid = 'ugk.visits'::regclass;

-- 3. count(DISTINCT unit) and dp_count(DISTINCT unit, mechanism): persons, each once per group
SET SESSION AUTHORIZATION ugk_ana;
SELECT abs(count(DISTINCT person) - 500) <= 25 AS plain_close,
       abs(dp_count(DISTINCT person, 'laplace(epsilon=1)') - 500) <= 25 AS dp_close
FROM ugk.visits;
-- per ward: each person keeps one of its two wards (max_groups_contributed = 1),
-- so the wards' persons add up to the 500 (four noises of scale 1: within 100)
SELECT count(*) AS wards, abs(sum(n) - 500) <= 100 AS close FROM (
	SELECT ward, dp_count(DISTINCT person, 'laplace(epsilon=1)') AS n FROM ugk.visits GROUP BY ward) s;
RESET SESSION AUTHORIZATION;
-- charged as a count of sensitivity 1 per person, like count(DISTINCT person)
SELECT s->>'mechanism' AS mechanism, (s->>'l1')::float8 AS l1
FROM dp_pg.ledger e, jsonb_array_elements(e.detail->'sites') s
WHERE e.role = 'ugk_ana'::regrole AND e.kind = 'charge' AND e.id = (
	SELECT max(id) FROM dp_pg.ledger WHERE role = 'ugk_ana'::regrole AND kind = 'charge')
ORDER BY 1;
SET SESSION AUTHORIZATION ugk_ana;
-- DISTINCT of anything else stays refused
SELECT dp_test.outcome(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_count(DISTINCT ward, 'laplace(epsilon=1)') FROM ugk.visits$q$,
	$q$SELECT dp_count(DISTINCT id, 'laplace(epsilon=1)') FROM ugk.people$q$
]) AS q;
RESET SESSION AUTHORIZATION;

-- 4. the order on dp_mechanism that DISTINCT sorts by
SELECT 'laplace(epsilon=1)'::dp_mechanism < 'laplace(epsilon=2)' AS lt,
       'laplace(epsilon=1)'::dp_mechanism <= 'laplace(epsilon=1)' AS le,
       'gaussian(epsilon=1, delta=1e-6)'::dp_mechanism > 'laplace(epsilon=2)' AS gt_family,
       'laplace(epsilon=1)'::dp_mechanism <> 'laplace(epsilon=1)' AS ne,
       dp_pg.mechanism_cmp('osgt(epsilon=1, delta=1e-6)', 'osgt(epsilon=1, delta=1e-7)') AS cmp;
SELECT m FROM (VALUES ('laplace(epsilon=2)'::dp_mechanism), ('gaussian(rho=0.5)'), ('laplace(epsilon=1)'),
	('gaussian(epsilon=1, delta=1e-6)')) v(m) ORDER BY m;

-- clean up: the tables, and the roles of this file with their budgets and ledger rows
SET client_min_messages = warning;
DROP SCHEMA ugk CASCADE;
RESET client_min_messages;
\set forget 'ugk_ana'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
