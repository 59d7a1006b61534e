--
-- The positive controls' database atk_ctl: the same patients (same canaries,
-- same row count), NOT protected and readable by the analyst.  dp_pg is not
-- installed here.  Run as superuser by the driver after setup.sql.
--
SET client_min_messages = warning;
CREATE SCHEMA clinic;
CREATE SCHEMA helper;
GRANT USAGE ON SCHEMA clinic, helper TO PUBLIC;
CREATE TABLE clinic.patients (
	id serial PRIMARY KEY,
	name text NOT NULL,
	region text NOT NULL,
	diagnosis text NOT NULL,
	age int NOT NULL,
	income float8 NOT NULL,
	sensitive boolean NOT NULL,
	note text,
	code text NOT NULL
);
INSERT INTO clinic.patients (name, region, diagnosis, age, income, sensitive, note, code)
SELECT '@CNRY@_n' || g,
       (ARRAY['north', 'south', 'east', 'west'])[g % 4 + 1],
       CASE WHEN g = 17 THEN '@CNRY@_rare' ELSE (ARRAY['flu', 'cold', 'asthma', 'none'])[(g / 7) % 4 + 1] END,
       18 + g % 70,
       ((g::bigint * 7919 + @SALT@) % 100000)::float8,
       g % 10 = 0 OR g = 17,
       CASE WHEN g % 5 = 0 THEN '@CNRY@_note' || g END,
       'key' || g
FROM generate_series(1, @NROWS@) g;
GRANT SELECT ON clinic.patients TO atk_analyst;
CREATE FUNCTION helper.say(anyelement) RETURNS boolean LANGUAGE plpgsql COST 0.0001 AS $$
BEGIN RAISE NOTICE 'saw %', $1; RETURN true; END $$;
ANALYZE clinic.patients;
