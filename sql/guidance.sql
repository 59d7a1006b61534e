--
-- Guidance that points the right way (issue "a newcomer's first hour"):
--   1. refusals that name the accepted form: browsing rows -> a synthetic
--      twin (dp_pg.synthesize); a filter by a second protected table's
--      IN / EXISTS subquery -> the join on the privacy unit (answered);
--   2. dp_pg.set_domain for date, timestamp and timestamptz columns, and
--      min / max of a date without a domain refused as needing a value
--      domain, with a hint whose call works;
--   3. dp_pg.synthesize says which columns it left out, and why (NOTICE);
--   4. the budget, ledger and release views show six significant digits,
--      the functions behind them the exact values.
-- Noisy values are never printed: an answer is checked by properties that
-- hold whatever the noise (a quantile lies in its domain).
--
SET client_min_messages = error;
CREATE ROLE dp_g_owner;
CREATE ROLE dp_g_an;
CREATE SCHEMA gd AUTHORIZATION dp_g_owner;
GRANT USAGE ON SCHEMA gd TO PUBLIC;
SET ROLE dp_g_owner;
CREATE TABLE gd.people (id int PRIMARY KEY, age int NOT NULL CHECK (age BETWEEN 0 AND 99), region text NOT NULL,
	note text);
INSERT INTO gd.people SELECT g, g % 100, (ARRAY['n', 's'])[1 + g % 2], 'note ' || g FROM generate_series(1, 2000) g;
CREATE TABLE gd.visits (person_id int NOT NULL, visit_date date NOT NULL, seen_at timestamp NOT NULL,
	booked_at timestamptz NOT NULL, ward text NOT NULL, cost int NOT NULL CHECK (cost BETWEEN 0 AND 400));
INSERT INTO gd.visits
SELECT 1 + g % 2000, date '2024-01-01' + g % 366, timestamp '2024-01-01' + g * interval '17 minutes',
       timestamptz '2024-01-01 00:00+00' + g * interval '17 minutes', (ARRAY['a', 'b'])[1 + g % 2], g % 401
FROM generate_series(1, 6000) g;
-- two tables of one row per person without a unit: nothing joins them
CREATE TABLE gd.other (id int PRIMARY KEY, x int NOT NULL);
INSERT INTO gd.other SELECT g, g % 7 FROM generate_series(1, 100) g;
RESET ROLE;
SELECT dp_pg.protect('gd.people');
SELECT dp_pg.set_public_keys('gd.people', 'region', ARRAY['n', 's']);
SELECT dp_pg.protect('gd.visits', 'person_id', 2, 3);
SELECT dp_pg.protect('gd.other');
SELECT dp_pg.set_budget('dp_g_an', epsilon => 1000, delta => 1e-3);
CREATE FUNCTION gd.charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS
	$$ SELECT count(*) FROM dp_pg.ledger_rows() WHERE role = 'dp_g_an'::regrole AND kind = 'charge' $$;
GRANT EXECUTE ON FUNCTION gd.charges() TO dp_g_an;
RESET client_min_messages;

-- 1. Refusals that name the accepted form (each refused uncharged).
SET SESSION AUTHORIZATION dp_g_an;
SELECT gd.charges() AS c0 \gset
-- browsing rows: a synthetic twin
SELECT * FROM gd.people LIMIT 10;
SELECT 1 FROM gd.people;
SELECT note FROM gd.people WHERE age > 30;
-- (a query with aggregates keeps the hint about its columns)
SELECT note, dp_count(*) FROM gd.people GROUP BY id;
-- a filter by another protected table: the join on the privacy unit
SELECT dp_count(*) FROM gd.visits WHERE person_id IN (SELECT id FROM gd.people WHERE age > 30);
SELECT dp_count(*) FROM gd.people WHERE id IN (SELECT person_id FROM gd.visits WHERE ward = 'a');
SELECT dp_count(*) FROM gd.visits v WHERE EXISTS (SELECT 1 FROM gd.people p WHERE p.id = v.person_id AND p.age > 30);
-- no such form: NOT IN is no join, a comparison with ANY is none, and two
-- tables without a unit are joined on nothing
SELECT dp_count(*) FROM gd.visits WHERE person_id NOT IN (SELECT id FROM gd.people WHERE age > 30);
SELECT dp_count(*) FROM gd.visits WHERE person_id < ANY (SELECT id FROM gd.people WHERE age > 30);
SELECT dp_count(*) FROM gd.people WHERE id IN (SELECT id FROM gd.other);
SELECT gd.charges() - :c0 AS charges;
-- the form the hint names is answered, one charge
SELECT dp_count(*) IS NOT NULL AS answered
FROM gd.visits JOIN gd.people ON people.id = visits.person_id WHERE age > 30;
SELECT gd.charges() - :c0 AS charges;

-- 2. Value domains of dates and times.
-- min / max of a date or time without a domain: refused, saying how to declare one
SELECT min(visit_date) FROM gd.visits;
SELECT max(seen_at) FROM gd.visits;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY booked_at) FROM gd.visits;
SELECT gd.charges() - :c0 AS charges;
RESET SESSION AUTHORIZATION;
-- the hint's call works: dates and times as quoted literals, or typed values
SELECT dp_pg.set_domain('gd.visits', 'visit_date', '2024-01-01', '2024-12-31');
SELECT dp_pg.set_domain('gd.visits', 'seen_at', timestamp '2024-01-01', timestamp '2024-04-01 12:00');
SET TimeZone = 'UTC';
SELECT dp_pg.set_domain('gd.visits', 'booked_at', '2024-01-01 00:00+00', '2024-04-01 00:00+00');
-- a number column still takes numbers, written as numbers or as text
SELECT dp_pg.set_domain('gd.visits', 'cost', 0, 300);
SELECT dp_pg.set_domain('gd.visits', 'cost', '0', '250.5');
-- kept as seconds since 1970 (a number column's bounds as they are)
SELECT attname, lower, upper, CASE WHEN attname <> 'cost' THEN to_timestamp(lower) END AS lower_shown,
       CASE WHEN attname <> 'cost' THEN to_timestamp(upper) END AS upper_shown
FROM dp_pg.column_domains WHERE relid = 'gd.visits'::regclass ORDER BY attname;
RESET TimeZone;
-- bad declarations: errors with their SQLSTATEs, nothing changed
\set VERBOSITY sqlstate
SELECT dp_pg.set_domain('gd.visits', 'visit_date', 0, 100);
SELECT dp_pg.set_domain('gd.visits', 'visit_date', '2024-13-01', '2024-12-31');
SELECT dp_pg.set_domain('gd.visits', 'visit_date', 'infinity', '2024-12-31');
SELECT dp_pg.set_domain('gd.visits', 'visit_date', '2025-01-01', '2024-12-31');
SELECT dp_pg.set_domain('gd.visits', 'visit_date', '2024-01-01', NULL);
SELECT dp_pg.set_domain('gd.visits', 'ward', 'a', 'b');
SELECT dp_pg.set_domain('gd.visits', 'ward', date '2024-01-01', date '2024-12-31');
SELECT dp_pg.set_domain('gd.visits', 'nosuch', '2024-01-01', '2024-12-31');
SELECT dp_pg.set_domain('gd.visits', 'cost', 'many', '250');
\set VERBOSITY default
SELECT dp_pg.set_domain('gd.visits', 'visit_date', 0, 100);
SELECT count(*) AS domains, min(lower) AS date_lower FROM dp_pg.column_domains
WHERE relid = 'gd.visits'::regclass AND attname = 'visit_date';
-- an analyst may not declare one
SET SESSION AUTHORIZATION dp_g_an;
SELECT dp_pg.set_domain('gd.visits', 'visit_date', '2000-01-01', '2099-12-31');
-- min, max and percentile_disc are answered now, inside their domains
SELECT min(visit_date) BETWEEN '2024-01-01' AND '2024-12-31' AS min_in_domain,
       max(visit_date) BETWEEN '2024-01-01' AND '2024-12-31' AS max_in_domain,
       max(seen_at) BETWEEN '2024-01-01' AND '2024-04-01 12:00' AS max_seen_in_domain,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY booked_at)
         BETWEEN '2024-01-01 00:00+00' AND '2024-04-01 00:00+00' AS median_in_domain
FROM gd.visits;
RESET SESSION AUTHORIZATION;
-- a CHECK constraint and a declared domain: their intersection
SET ROLE dp_g_owner;
DELETE FROM gd.visits WHERE visit_date < '2024-03-01';
ALTER TABLE gd.visits ADD CHECK (visit_date >= '2024-03-01');
RESET ROLE;
SET SESSION AUTHORIZATION dp_g_an;
SELECT min(visit_date) BETWEEN '2024-03-01' AND '2024-12-31' AS min_in_both FROM gd.visits;
RESET SESSION AUTHORIZATION;
-- NULL, NULL removes a declaration (typed or not)
SELECT dp_pg.set_domain('gd.visits', 'seen_at', NULL, NULL);
SELECT dp_pg.set_domain('gd.visits', 'booked_at', NULL::timestamptz, NULL::timestamptz);
SELECT attname FROM dp_pg.column_domains WHERE relid = 'gd.visits'::regclass ORDER BY attname;

-- 3. dp_pg.synthesize names the columns it leaves out, and why (every
-- other column qualifies: the twin has them)
SET SESSION AUTHORIZATION dp_g_an;
SELECT dp_pg.synthesize('gd.visits', 'pg_temp.visits_twin', 'laplace(epsilon=1)') >= 0 AS made;
SELECT attname FROM pg_attribute WHERE attrelid = 'pg_temp.visits_twin'::regclass AND attnum > 0 ORDER BY attnum;
SELECT min(visit_date) >= '2024-03-01' AND max(visit_date) <= '2024-12-31' AS twin_dates_in_domain FROM pg_temp.visits_twin;
-- naming the columns: nothing to say
SELECT dp_pg.synthesize('gd.people', 'pg_temp.people_twin', 'laplace(epsilon=1)', columns => ARRAY['region', 'age']) >= 0 AS made;
SELECT dp_pg.synthesize('gd.people', 'pg_temp.people_twin2', 'laplace(epsilon=1)') >= 0 AS made;

-- 4. Readable numbers: the views show six significant digits, the functions
-- behind them the exact values (a charge of 1/3 and one of 0.1 + 0.2)
SELECT gd.charges() AS c1 \gset
SELECT dp_count(id, 'laplace(epsilon=0.3333333333333333)') IS NOT NULL AS answered FROM gd.people;
SELECT dp_count(id, 'laplace(epsilon=0.30000000000000004)') IS NOT NULL AS answered FROM gd.people;
SELECT l.epsilon AS shown, r.epsilon AS exact, l.epsilon = dp_pg.display_round(r.epsilon) AS shown_is_rounded
FROM dp_pg.ledger l JOIN dp_pg.ledger_rows() r USING (id) WHERE l.role = 'dp_g_an'::regrole ORDER BY id DESC LIMIT 2;
SELECT m.epsilon_spent = dp_pg.display_round(b.epsilon_spent) AS spent_rounded,
       m.epsilon_remaining = dp_pg.display_round(b.epsilon_remaining) AS remaining_rounded,
       length(m.epsilon_spent::text) <= 8 AS spent_readable
FROM dp_pg.my_budget m JOIN dp_pg.budget_rows() b USING (role);
SELECT dp_sum(cost, 0, 400, 'gaussian(epsilon=0.5, delta=1e-6)') IS NOT NULL AS answered FROM gd.visits;
SELECT v.noise_sd = dp_pg.display_round(r.noise_sd) AS sd_rounded,
       v.ci95_halfwidth >= r.ci95_halfwidth AND v.ci95_halfwidth = dp_pg.display_round(r.ci95_halfwidth, 1) AS h_outwards,
       v.epsilon, v.delta
FROM dp_pg.last_releases v JOIN dp_pg.last_release_rows() r USING (site);
RESET SESSION AUTHORIZATION;
SELECT dp_pg.display_round(48.49999999896455) AS a, dp_pg.display_round(0.49999999949999996) AS b,
       dp_pg.display_round(0.1 + 0.2::float8) AS c, dp_pg.display_round(1.0000000000000002e-08) AS d,
       dp_pg.display_round(0.1234564, 1) AS up, dp_pg.display_round(0.1234566, -1) AS down,
       dp_pg.display_round(-9.999994, 1) AS neg_up, dp_pg.display_round(0) AS zero,
       dp_pg.display_round('Infinity') AS inf, dp_pg.display_round('NaN') AS nan, dp_pg.display_round(NULL) AS null;

DROP SCHEMA gd CASCADE;
SELECT dp_pg.drop_budget('dp_g_an');
-- the roles of this file, their budgets and ledger rows
\set forget 'dp_g_owner dp_g_an'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
