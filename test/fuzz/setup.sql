-- test/fuzz/setup.sql — the database sqlsmith attacks (run as superuser by
-- test/fuzz/sqlsmith.sh).  Canary values: every private string starts with
-- 'cnry_', every patients.ssn is a 10-digit number 777xxxxxxx, every
-- visits.amount ends in .3141; the row counts (33461, 77813) are above any
-- PID (pid_max 32768 on Linux by default) and the OIDs of this database.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

-- two protected tables
CREATE TABLE patients (
	id int PRIMARY KEY,
	region text NOT NULL,
	age int NOT NULL,
	income float8,
	name text NOT NULL,
	ssn bigint NOT NULL
);
INSERT INTO patients
SELECT g, (ARRAY['north', 'south', 'east', 'west'])[g % 4 + 1], 18 + g % 70,
       (g % 97) * 1000 + 0.5, 'cnry_' || left(md5('p' || g), 12), 7770000000 + g * 13
FROM generate_series(1, 33461) g;
CREATE INDEX patients_age ON patients (age, income);
CREATE STATISTICS patients_region_age ON region, age FROM patients;

CREATE TABLE visits (
	id int PRIMARY KEY,
	patient_id int NOT NULL,
	ward text NOT NULL,
	visited date NOT NULL,
	amount numeric(12,4) NOT NULL,
	diagnosis text
);
INSERT INTO visits
SELECT g, 1 + (g * 7919) % 20011, (ARRAY['cardio', 'neuro', 'ortho', 'onco', 'derm'])[g % 5 + 1],
       date '2020-01-01' + (g % 1500), 90000 + (g * 7919) % 9973 + 0.3141,
       CASE WHEN g % 3 = 0 THEN 'cnry_' || left(md5('v' || g), 12) END
FROM generate_series(1, 77813) g;
CREATE INDEX visits_patient ON visits (patient_id);

-- public tables the analyst may read (and join on their unique keys)
CREATE TABLE regions (region text PRIMARY KEY, population int, capital text);
INSERT INTO regions VALUES ('north', 120, 'Nordby'), ('south', 230, 'Sudham'),
	('east', 340, 'Ostwick'), ('west', 450, 'Westerby');
CREATE TABLE wards (ward text PRIMARY KEY, floor int, beds int, head text);
INSERT INTO wards VALUES ('cardio', 1, 20, 'Dr. A'), ('neuro', 2, 15, 'Dr. B'),
	('ortho', 3, 25, 'Dr. C'), ('onco', 4, 30, 'Dr. D'), ('derm', 5, 10, 'Dr. E');

-- views and functions over the protected tables, granted to the analyst
CREATE VIEW patient_view AS SELECT id, region, age, income, name FROM patients;
CREATE VIEW visit_view WITH (security_barrier) AS
	SELECT patient_id, ward, visited, amount FROM visits WHERE amount > 0;
-- a DBA's SECURITY DEFINER helpers (run as the superuser owner)
CREATE FUNCTION patient_name(int) RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
	AS $$ SELECT name FROM public.patients WHERE id = $1 $$;
CREATE FUNCTION ward_visit_count(text) RETURNS bigint LANGUAGE sql STABLE SECURITY DEFINER
	AS $$ SELECT count(*) FROM public.visits WHERE ward = $1 $$;
CREATE FUNCTION ward_dp_count(text) RETURNS bigint LANGUAGE sql STABLE SECURITY DEFINER
	AS $$ SELECT dp_count(*) FROM public.visits WHERE ward = $1 $$;

SELECT dp_pg.protect('patients');
SELECT dp_pg.protect('visits', 'patient_id', max_groups_contributed => 2, max_rows_per_unit => 3);
SELECT dp_pg.set_public_keys('patients', 'region', ARRAY['north', 'south', 'east', 'west']);
VACUUM (ANALYZE);

-- the analyst: a huge budget, a short statement timeout, and by default noise so
-- large (scale 1e9) that no honest release equals a secret number by chance
CREATE ROLE analyst LOGIN;
SELECT dp_pg.set_budget('analyst', epsilon => 1e12, delta => 0.5);
ALTER ROLE analyst SET statement_timeout = '2s';
ALTER ROLE analyst SET lock_timeout = '1s';
ALTER ROLE analyst SET dp_pg.default_mechanism = 'laplace(epsilon=0.000000001)';
-- tiny charges for a huge number of queries: below the default least cost of a release
ALTER ROLE analyst SET dp_pg.min_release_epsilon = 0;
GRANT SELECT ON regions, wards, patient_view, visit_view TO analyst;
GRANT EXECUTE ON FUNCTION patient_name(int), ward_visit_count(text), ward_dp_count(text) TO analyst;

-- sqlsmith learns tables from information_schema.tables, which lists only
-- tables the user holds a privilege on; make it list the protected tables too
-- (their names are public anyway: dp_pg.protected_tables)
DO $$
DECLARE
	d text := pg_get_viewdef('information_schema.tables'::regclass);
BEGIN
	IF position('pg_has_role(c.relowner' IN d) = 0 THEN
		RAISE EXCEPTION 'information_schema.tables has an unexpected definition';
	END IF;
	d := replace(d, 'pg_has_role(c.relowner',
		'c.oid IN (SELECT relid FROM dp_pg.protected_tables) OR pg_has_role(c.relowner');
	EXECUTE 'CREATE OR REPLACE VIEW information_schema.tables AS ' || d;
END $$;
