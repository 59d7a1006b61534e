-- test/bi/setup.sql — the data of the BI driver leg (test/bi/run.sh), run as
-- the superuser (the DBA) in the leg's ledger database.
--
-- Truths (g = 1..2000), the same in public.visits and public.orders:
--   region     north/south/east/west for g % 4 = 0..3 (500 each; public keys)
--   channel    web/app/store for g % 3 = 0..2 (no public keys: partition selection)
--   person_id  g % 300 (300 persons, 6 or 7 rows each, all in one region)
--   amount     numeric (g % 50) * 10.5      CHECK [0, 5000]
--   age        int4 18 + g % 60             CHECK [0, 120]
--   qty        int2 g % 7                   CHECK [0, 99]
--   big        int8 g                       CHECK (0, 10000]
--   ratio      float4 (g % 10) / 4          CHECK [0, 10]
--   score      float8 g % 7                 no CHECK: dp_pg.set_domain [0, 10]
--   visit_date date 2024-01-01 + g % 90
--   visited_at timestamp 2024-01-01 00:00 + g hours (2024-01-01 01:00 .. 2024-03-24 08:00)
--   created_at timestamptz, the same instants in UTC
--   is_member  boolean g % 5 = 0
-- public.orders has the privacy unit person_id (dp_pg.protect(..., 'person_id',
-- 1, 5): each person in one group, at most 5 rows).  public.regions is a
-- public dimension table (primary key region; no row for 'west'), readable
-- by the analyst.
SET client_min_messages = warning;
CREATE ROLE bi_owner;
CREATE ROLE analyst LOGIN;
GRANT CREATE ON SCHEMA public TO bi_owner;
SET ROLE bi_owner;
CREATE TABLE public.visits (
	id int PRIMARY KEY,
	region text NOT NULL,
	channel text NOT NULL,
	person_id int NOT NULL,
	amount numeric CHECK (amount >= 0 AND amount <= 5000),
	age int CHECK (age BETWEEN 0 AND 120),
	qty smallint CHECK (qty >= 0) CHECK (qty < 100),
	big bigint CHECK (big > 0 AND big <= 10000),
	ratio real CHECK (ratio BETWEEN 0 AND 10),
	score float8,
	visit_date date NOT NULL,
	visited_at timestamp NOT NULL,
	created_at timestamptz NOT NULL,
	is_member boolean NOT NULL
);
INSERT INTO public.visits
SELECT g, (ARRAY['north', 'south', 'east', 'west'])[g % 4 + 1], (ARRAY['web', 'app', 'store'])[g % 3 + 1],
       g % 300, (g % 50) * 10.5, 18 + g % 60, g % 7, g, (g % 10) / 4.0, g % 7,
       date '2024-01-01' + g % 90, timestamp '2024-01-01 00:00' + g * interval '1 hour',
       (timestamp '2024-01-01 00:00' + g * interval '1 hour') AT TIME ZONE 'UTC', g % 5 = 0
FROM generate_series(1, 2000) g;
CREATE TABLE public.orders (LIKE public.visits INCLUDING CONSTRAINTS);
INSERT INTO public.orders SELECT * FROM public.visits;
CREATE TABLE public.regions (region text PRIMARY KEY, label text NOT NULL, population int NOT NULL);
INSERT INTO public.regions VALUES ('north', 'North', 1200), ('south', 'South', 3400), ('east', 'East', 560);
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM bi_owner;
GRANT SELECT ON public.regions TO analyst;
SELECT dp_pg.protect('public.visits');
SELECT dp_pg.protect('public.orders', 'person_id', 1, 5);
SELECT dp_pg.set_public_keys('public.visits', 'region', ARRAY['north', 'south', 'east', 'west']);
SELECT dp_pg.set_public_keys('public.orders', 'region', ARRAY['north', 'south', 'east', 'west']);
SELECT dp_pg.set_domain('public.visits', 'score', 0, 10);
SELECT dp_pg.set_domain('public.orders', 'score', 0, 10);
SELECT dp_pg.set_budget('analyst', 1e9, 1e-3);
-- as a DBA would: the analyst's plain aggregates use this mechanism; epsilon
-- 100 keeps the noise small enough to compare answers with the truth
ALTER ROLE analyst SET dp_pg.default_mechanism = 'laplace(epsilon=100)';
ANALYZE;
