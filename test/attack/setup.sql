--
-- Attack corpus set-up, run as superuser in database postgres by
-- test/t/060_attack_corpus.pl.  Parameters in at-signs are substituted by the
-- driver (random per run): @CNRY@ is the canary prefix, @NROWS@, @NHEAVY@,
-- @NEV@, @NPART@ and @NPV@ row counts, @SALT@ varies the incomes.
--
-- Roles
--   atk_owner    owns the protected tables and the DBA's objects (no budget)
--   atk_analyst  the attacker: a budget, TEMP, schema ana of its own; the
--                objects in ana were made BEFORE it got its budget
--   atk_helper   a non-superuser without budget who writes code for the
--                analyst (schema helper: functions, operators, casts,
--                aggregates, domains, collations, types), granted to PUBLIC
--   atk_honest   another analyst whose dp queries must keep working
--   atk_greedy   an analyst whose budget has no delta limit (class 7)
--   atk_cache,   analysts with the answer cache on (off for the others, as in
--   atk_cache2   every test cluster), each with a budget of its own (class 10)
-- Protected tables (no privilege for the analyst)
--   clinic.patients  @NROWS@ rows, one per person: names and notes are
--                    canaries, one rare diagnosis is a canary (id 17);
--                    id 17 and every tenth id are "sensitive", id 18 is not
--   clinic.visits    privacy unit person (g = 1, r = 1): person 1 has
--                    @NHEAVY@ visits, persons 100..499 one or two
--   clinic.secret_events  protected, later made an inheritance child of the
--                    public pub.events by the DBA
--   clinic.secret_part    protected, later attached as a partition of the
--                    public pub.parted by the DBA
--   clinic.pvisits, clinic.pdet, clinic.pinh  protected partitioned tables and
--                    an inheritance parent, a foreign partition on a loopback
--                    server (class 25, below)
-- Public tables (schema pub, SELECT for PUBLIC)
--
SET client_min_messages = warning;

CREATE ROLE atk_owner;
CREATE ROLE atk_analyst LOGIN;
CREATE ROLE atk_helper LOGIN;
CREATE ROLE atk_honest LOGIN;
CREATE ROLE atk_greedy LOGIN;
CREATE ROLE atk_cache LOGIN;
CREATE ROLE atk_cache2 LOGIN;
ALTER ROLE atk_cache SET dp_pg.answer_cache = on;
ALTER ROLE atk_cache2 SET dp_pg.answer_cache = on;
GRANT TEMP ON DATABASE postgres TO atk_analyst;

CREATE SCHEMA clinic AUTHORIZATION atk_owner;
CREATE SCHEMA pub AUTHORIZATION atk_owner;
CREATE SCHEMA dba AUTHORIZATION atk_owner;
CREATE SCHEMA helper AUTHORIZATION atk_helper;
CREATE SCHEMA ana AUTHORIZATION atk_analyst;
CREATE SCHEMA atk_meta;
GRANT USAGE ON SCHEMA clinic, pub, dba, helper TO PUBLIC;
REVOKE ALL ON SCHEMA atk_meta FROM PUBLIC;

CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS pgstattuple;
CREATE EXTENSION IF NOT EXISTS pg_visibility;
CREATE EXTENSION IF NOT EXISTS pg_freespacemap;
CREATE EXTENSION IF NOT EXISTS pg_buffercache;
CREATE EXTENSION IF NOT EXISTS pageinspect;
CREATE EXTENSION IF NOT EXISTS pgrowlocks;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS citext;
CREATE EXTENSION IF NOT EXISTS tsm_system_rows;
\if :have_pgss
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
\endif

--
-- protected data (owner atk_owner)
--
SET ROLE atk_owner;
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
UPDATE clinic.patients SET note = '@CNRY@_slash\' WHERE id = 500;
CREATE INDEX patients_age ON clinic.patients (age);
CREATE INDEX patients_lname ON clinic.patients (lower(name));
CREATE INDEX patients_code ON clinic.patients (code);
CREATE STATISTICS clinic.patients_st (ndistinct, dependencies, mcv) ON region, diagnosis FROM clinic.patients;
CREATE STATISTICS clinic.patients_expr ON (lower(name)) FROM clinic.patients;
-- a careless DBA lets everyone use the id sequence (applications insert)
GRANT USAGE, SELECT ON SEQUENCE clinic.patients_id_seq TO PUBLIC;

CREATE TABLE clinic.visits (person int NOT NULL, ward int NOT NULL, cost float8 NOT NULL, note text NOT NULL);
INSERT INTO clinic.visits SELECT 1, g % 4, 400, '@CNRY@_heavy' || g FROM generate_series(1, @NHEAVY@) g;
INSERT INTO clinic.visits SELECT p, p % 4, 10, '@CNRY@_v' || p || '_' || k
FROM generate_series(100, 499) p, generate_series(1, 1 + p % 2) k;
CREATE INDEX visits_person ON clinic.visits (person);

CREATE TABLE clinic.secret_events (id int NOT NULL, what text NOT NULL);
INSERT INTO clinic.secret_events SELECT g, '@CNRY@_ev' || g FROM generate_series(1, @NEV@) g;

-- public tables
CREATE TABLE pub.regions (region text PRIMARY KEY, population int NOT NULL);
INSERT INTO pub.regions VALUES ('north', 100), ('south', 200), ('east', 300), ('west', 400);
-- amplification: the unique key is the parent's; a child (no index) repeats ids 17 and 18
CREATE TABLE pub.idmap (id int PRIMARY KEY, tag text NOT NULL);
INSERT INTO pub.idmap SELECT g, 't' || g FROM generate_series(1, 100) g;
CREATE TABLE pub.idmap_more () INHERITS (pub.idmap);
INSERT INTO pub.idmap_more SELECT 17 + g % 2, 'dup' FROM generate_series(1, 4000) g;
-- a deferrable unique constraint anyone may insert into
CREATE TABLE pub.defer_keys (id int UNIQUE DEFERRABLE INITIALLY DEFERRED, tag text);
INSERT INTO pub.defer_keys SELECT g, 't' FROM generate_series(1, 100) g;
GRANT INSERT, UPDATE, DELETE ON pub.defer_keys TO PUBLIC;
-- a partial unique index, and an expression-only one
CREATE TABLE pub.partial_keys (id int NOT NULL, tag text);
CREATE UNIQUE INDEX partial_keys_big ON pub.partial_keys (id) WHERE id > 1000000;
INSERT INTO pub.partial_keys SELECT 17 + g % 2, 'dup' FROM generate_series(1, 4000) g;
-- a public table anyone may write, with a proper primary key
CREATE TABLE pub.writable (id int PRIMARY KEY, tag text);
GRANT INSERT, UPDATE, DELETE, TRUNCATE ON pub.writable TO PUBLIC;
-- numbers for the positive controls
CREATE TABLE pub.open_numbers (x int);
INSERT INTO pub.open_numbers SELECT g FROM generate_series(1, 10) g;
-- events: public parent; the DBA later makes the protected table its child
CREATE TABLE pub.events (id int NOT NULL, what text NOT NULL);
INSERT INTO pub.events VALUES (0, 'public');
-- a partitioned public table; the DBA later attaches a protected partition
CREATE TABLE pub.parted (id int NOT NULL, what text NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE pub.parted_low PARTITION OF pub.parted FOR VALUES FROM (0) TO (1000);
INSERT INTO pub.parted VALUES (1, 'public');
CREATE TABLE clinic.secret_part (id int NOT NULL, what text NOT NULL);
INSERT INTO clinic.secret_part SELECT 1000 + g % 1000, '@CNRY@_part' || g FROM generate_series(1, @NPART@) g;
GRANT SELECT ON ALL TABLES IN SCHEMA pub TO PUBLIC;
REVOKE SELECT ON pub.open_numbers FROM PUBLIC;
GRANT SELECT ON pub.open_numbers TO atk_analyst;

--
-- the DBA's objects (owner atk_owner unless said otherwise)
--
CREATE VIEW dba.patients_v AS SELECT * FROM clinic.patients;
CREATE VIEW dba.patients_inv WITH (security_invoker) AS SELECT * FROM clinic.patients;
CREATE VIEW dba.patients_barrier WITH (security_barrier) AS SELECT id, region, age FROM clinic.patients WHERE NOT sensitive;
CREATE VIEW dba.region_counts AS SELECT region, count(*) AS n FROM clinic.patients GROUP BY region;
GRANT SELECT ON dba.patients_v, dba.patients_inv, dba.patients_barrier, dba.region_counts TO PUBLIC;
CREATE FUNCTION dba.count_all() RETURNS bigint LANGUAGE sql SECURITY DEFINER
	AS $$ SELECT count(*) FROM clinic.patients $$;
CREATE FUNCTION dba.diagnosis_of(int) RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
	AS $$ SELECT diagnosis FROM clinic.patients WHERE id = $1 $$;
-- set-returning functions over the protected tables: inlinable SQL (invoker's
-- rights), SECURITY DEFINER SQL, PL/pgSQL
CREATE FUNCTION dba.patients_sql() RETURNS SETOF clinic.patients LANGUAGE sql STABLE
	AS $$ SELECT * FROM clinic.patients $$;
CREATE FUNCTION dba.patients_sd() RETURNS SETOF clinic.patients LANGUAGE sql STABLE SECURITY DEFINER
	AS $$ SELECT * FROM clinic.patients $$;
CREATE FUNCTION dba.patients_plpgsql() RETURNS SETOF clinic.patients LANGUAGE plpgsql SECURITY DEFINER
	AS $$ BEGIN RETURN QUERY SELECT * FROM clinic.patients; END $$;
CREATE VIEW dba.visits_v AS SELECT * FROM clinic.visits;
GRANT SELECT ON dba.visits_v TO PUBLIC;
CREATE FUNCTION dba.visits_sql() RETURNS SETOF clinic.visits LANGUAGE sql STABLE
	AS $$ SELECT * FROM clinic.visits $$;
CREATE FUNCTION dba.visits_sd() RETURNS SETOF clinic.visits LANGUAGE sql STABLE SECURITY DEFINER
	AS $$ SELECT * FROM clinic.visits $$;
CREATE FUNCTION dba.visits_plpgsql() RETURNS SETOF clinic.visits LANGUAGE plpgsql SECURITY DEFINER
	AS $$ BEGIN RETURN QUERY SELECT * FROM clinic.visits; END $$;
RESET ROLE;
-- superuser SECURITY DEFINER functions
CREATE FUNCTION dba.su_visits() RETURNS SETOF clinic.visits LANGUAGE plpgsql SECURITY DEFINER
	AS $$ BEGIN RETURN QUERY SELECT * FROM clinic.visits; END $$;
CREATE FUNCTION dba.su_visits_sql() RETURNS SETOF clinic.visits LANGUAGE sql STABLE SECURITY DEFINER
	AS $$ SELECT * FROM clinic.visits $$;
CREATE FUNCTION dba.su_count(tbl regclass) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
	AS $$ DECLARE n bigint; BEGIN EXECUTE format('SELECT count(*) FROM %s', tbl) INTO n; RETURN n; END $$;
CREATE FUNCTION dba.su_exec(q text) RETURNS SETOF text LANGUAGE plpgsql SECURITY DEFINER
	AS $$ BEGIN RETURN QUERY EXECUTE q; END $$;
CREATE FUNCTION dba.su_table_size(tbl regclass) RETURNS bigint LANGUAGE sql SECURITY DEFINER
	AS $$ SELECT pg_catalog.pg_total_relation_size(tbl) $$;
ALTER FUNCTION dba.su_visits() OWNER TO postgres;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA dba TO PUBLIC;

--
-- the helper's code (non-superuser, no budget), usable by everyone
--
SET ROLE atk_helper;
CREATE FUNCTION helper.say(anyelement) RETURNS boolean LANGUAGE plpgsql COST 0.0001 AS $$
BEGIN RAISE NOTICE 'saw %', $1; RETURN true; END $$;
CREATE FUNCTION helper.say_imm(anyelement) RETURNS boolean LANGUAGE plpgsql IMMUTABLE COST 0.0001 AS $$
BEGIN RAISE NOTICE 'saw %', $1; RETURN true; END $$;
CREATE FUNCTION helper.say_sql(text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$ SELECT helper.say($1) $$;
CREATE FUNCTION helper.stable_bound() RETURNS float8 LANGUAGE plpgsql STABLE AS $$
BEGIN RAISE NOTICE 'bound evaluated'; RETURN 100000; END $$;
CREATE FUNCTION helper.stable_ibound() RETURNS int LANGUAGE plpgsql STABLE AS $$
BEGIN RAISE NOTICE 'bound evaluated'; RETURN 100; END $$;
CREATE FUNCTION helper.stable_mech() RETURNS dp_mechanism LANGUAGE plpgsql STABLE AS $$
BEGIN RAISE NOTICE 'mechanism evaluated'; RETURN 'laplace(epsilon=1)'; END $$;
CREATE FUNCTION helper.stable_bins() RETURNS text[] LANGUAGE plpgsql STABLE AS $$
BEGIN RAISE NOTICE 'bins evaluated'; RETURN ARRAY['north', 'south']; END $$;
-- returns 1 at its first call in a statement's session, a huge bound afterwards
CREATE FUNCTION helper.flip_bound() RETURNS float8 LANGUAGE plpgsql STABLE AS $$
BEGIN
	IF coalesce(current_setting('helper.flip', true), '') = '' THEN
		PERFORM set_config('helper.flip', 'x', false);
		RETURN 1;
	END IF;
	RETURN 1e15;
END $$;
CREATE FUNCTION helper.flip_mech() RETURNS dp_mechanism LANGUAGE plpgsql STABLE AS $$
BEGIN
	IF coalesce(current_setting('helper.flipm', true), '') = '' THEN
		PERFORM set_config('helper.flipm', 'x', false);
		RETURN 'laplace(epsilon=0.01)';
	END IF;
	RETURN 'laplace(epsilon=100)';
END $$;
CREATE TYPE helper.pair AS (a int, b int);
CREATE FUNCTION helper.rec() RETURNS record LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'record evaluated'; RETURN ROW(1, 2)::helper.pair; END $$;
CREATE FUNCTION helper.pair_imm() RETURNS helper.pair LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'pair evaluated'; RETURN ROW(1, 2)::helper.pair; END $$;
CREATE FUNCTION helper.fail_if(boolean) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN IF $1 THEN RAISE EXCEPTION 'condition held'; END IF; RETURN true; END $$;
-- operators whose functions talk; eqsel / scalarltsel make the planner run them on statistics
CREATE FUNCTION helper.eq_say(text, text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'eq % %', $1, $2; RETURN $1 = $2; END $$;
CREATE OPERATOR helper.=== (LEFTARG = text, RIGHTARG = text, FUNCTION = helper.eq_say,
	RESTRICT = eqsel, JOIN = eqjoinsel);
CREATE FUNCTION helper.lt_say(text, text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'lt % %', $1, $2; RETURN $1 < $2; END $$;
CREATE OPERATOR helper.<<< (LEFTARG = text, RIGHTARG = text, FUNCTION = helper.lt_say,
	RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE FUNCTION helper.int_eq_say(int, int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'int eq % %', $1, $2; RETURN $1 = $2; END $$;
CREATE OPERATOR helper.= (LEFTARG = int, RIGHTARG = int, FUNCTION = helper.int_eq_say,
	RESTRICT = eqsel, JOIN = eqjoinsel);
CREATE FUNCTION helper.text_eq_say(text, text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'text eq % %', $1, $2; RETURN $1 = $2; END $$;
CREATE OPERATOR helper.= (LEFTARG = text, RIGHTARG = text, FUNCTION = helper.text_eq_say,
	RESTRICT = eqsel, JOIN = eqjoinsel);
CREATE FUNCTION helper.text_gt_say(text, text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'text gt % %', $1, $2; RETURN $1 > $2; END $$;
CREATE OPERATOR helper.> (LEFTARG = text, RIGHTARG = text, FUNCTION = helper.text_gt_say,
	RESTRICT = scalargtsel, JOIN = scalargtjoinsel);
-- a (composite) type with an implicit cast from text that talks
CREATE TYPE helper.tag AS (v text);
CREATE FUNCTION helper.to_tag(text) RETURNS helper.tag LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'cast %', $1; RETURN ROW($1)::helper.tag; END $$;
CREATE CAST (text AS helper.tag) WITH FUNCTION helper.to_tag(text) AS IMPLICIT;
CREATE FUNCTION helper.tag_eq(helper.tag, text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'tag eq %', $1; RETURN ($1).v = $2; END $$;
CREATE OPERATOR helper.= (LEFTARG = helper.tag, RIGHTARG = text, FUNCTION = helper.tag_eq);
CREATE DOMAIN helper.said AS int CHECK (helper.say(VALUE));
CREATE DOMAIN helper.said_text AS text CHECK (helper.say(VALUE));
-- an aggregate that collects its input, named like dp_pg's
CREATE FUNCTION helper.collect(text[], text, dp_mechanism) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$ SELECT $1 || $2 $$;
CREATE AGGREGATE helper.dp_count(text, dp_mechanism) (SFUNC = helper.collect, STYPE = text[], INITCOND = '{}');
CREATE FUNCTION helper.collect1(text[], text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$ SELECT $1 || $2 $$;
CREATE AGGREGATE helper.gather(text) (SFUNC = helper.collect1, STYPE = text[], INITCOND = '{}');
-- collations: case-, accent- and punctuation-insensitive (nondeterministic)
CREATE COLLATION helper.loose (provider = icu, locale = 'und-u-ka-shifted-ks-level1', deterministic = false);
CREATE COLLATION helper.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
-- text keys that are equal under helper.loose: unique under "C" only
CREATE TABLE helper.loose_keys (k text COLLATE helper.loose NOT NULL, tag text);
CREATE UNIQUE INDEX loose_keys_c ON helper.loose_keys (k COLLATE "C");
INSERT INTO helper.loose_keys
SELECT 'key' || n || repeat('-', g), 'dup' FROM generate_series(1, 2000) g, (VALUES (17), (18)) v(n);
INSERT INTO helper.loose_keys SELECT 'key' || g, 'one' FROM generate_series(19, 100) g;
GRANT SELECT ON helper.loose_keys TO PUBLIC;
-- a unique-looking key on a citext column
CREATE TABLE helper.cit_keys (k citext PRIMARY KEY, tag text);
INSERT INTO helper.cit_keys SELECT 'key' || g, 't' FROM generate_series(1, 100) g;
GRANT SELECT ON helper.cit_keys TO PUBLIC;
-- size and counter readers: an inlinable SQL function, default arguments,
-- a procedure with an INOUT argument, an inlinable set-returning function
CREATE FUNCTION helper.sz(regclass) RETURNS bigint LANGUAGE sql VOLATILE
	AS $$ SELECT pg_catalog.pg_relation_size($1) $$;
CREATE FUNCTION helper.live(regclass) RETURNS bigint LANGUAGE sql VOLATILE
	AS $$ SELECT pg_catalog.pg_stat_get_live_tuples($1::oid) $$;
CREATE FUNCTION helper.sz_default(t regclass DEFAULT 'clinic.patients',
	s bigint DEFAULT pg_catalog.pg_total_relation_size('clinic.patients')) RETURNS bigint
	LANGUAGE sql VOLATILE AS $$ SELECT $2 $$;
CREATE FUNCTION helper.live_default(n bigint DEFAULT pg_catalog.pg_stat_get_live_tuples('clinic.patients'::regclass))
	RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN RETURN n; END $$;
CREATE PROCEDURE helper.echo(INOUT x bigint) LANGUAGE plpgsql AS $$ BEGIN NULL; END $$;
CREATE PROCEDURE helper.say_proc(x bigint) LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'proc %', x; END $$;
CREATE FUNCTION helper.classes() RETURNS SETOF pg_catalog.pg_class LANGUAGE sql STABLE
	AS $$ SELECT * FROM pg_catalog.pg_class $$;
CREATE FUNCTION helper.stats() RETURNS SETOF pg_catalog.pg_stats LANGUAGE sql STABLE
	AS $$ SELECT * FROM pg_catalog.pg_stats $$;
CREATE FUNCTION helper.reltuples_of(oid) RETURNS real LANGUAGE sql STABLE
	AS $$ SELECT reltuples FROM pg_catalog.pg_class WHERE oid = $1 $$;
CREATE FUNCTION helper.reltuples_plpgsql(oid) RETURNS real LANGUAGE plpgsql STABLE
	AS $$ BEGIN RETURN (SELECT reltuples FROM pg_catalog.pg_class WHERE oid = $1); END $$;
CREATE VIEW helper.class_view AS SELECT oid, relname, reltuples, relpages FROM pg_catalog.pg_class;
GRANT SELECT ON helper.class_view TO PUBLIC;
-- a table with a trigger that reports what is written
CREATE TABLE helper.sink (v text);
GRANT INSERT, SELECT ON helper.sink TO PUBLIC;
RESET ROLE;

--
-- objects the analyst made before it got its budget
--
SET ROLE atk_analyst;
CREATE FUNCTION ana.leak(anyelement) RETURNS boolean LANGUAGE plpgsql COST 0.0001 AS $$
BEGIN RAISE NOTICE 'leaked %', $1; RETURN true; END $$;
CREATE FUNCTION ana.stable_bound() RETURNS float8 LANGUAGE plpgsql STABLE AS $$
BEGIN RAISE NOTICE 'own bound evaluated'; RETURN 100000; END $$;
CREATE FUNCTION ana.read_names() RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN RETURN QUERY SELECT name FROM clinic.patients WHERE sensitive; END $$;
CREATE FUNCTION ana.rows_sql() RETURNS SETOF clinic.patients LANGUAGE sql STABLE AS $$ SELECT * FROM clinic.patients $$;
CREATE FUNCTION ana.visits_sql() RETURNS SETOF clinic.visits LANGUAGE sql STABLE AS $$ SELECT * FROM clinic.visits $$;
CREATE FUNCTION ana.visits_plpgsql() RETURNS SETOF clinic.visits LANGUAGE plpgsql STABLE AS $$ BEGIN RETURN QUERY SELECT * FROM clinic.visits; END $$;
CREATE VIEW ana.early_v AS SELECT * FROM clinic.patients;
CREATE VIEW ana.early_dp AS SELECT dp_count(1, 'laplace(epsilon=1)') AS n FROM clinic.patients;
-- defaults, checks and triggers that read the sizes (evaluated without planning)
CREATE TABLE ana.sizes (
	tag text,
	heap bigint DEFAULT pg_catalog.pg_relation_size('clinic.patients'),
	total bigint DEFAULT pg_catalog.pg_total_relation_size('clinic.patients'),
	live bigint DEFAULT pg_catalog.pg_stat_get_live_tuples('clinic.patients'::regclass),
	ins bigint DEFAULT pg_catalog.pg_stat_get_tuples_inserted('clinic.patients'::regclass),
	seq bigint DEFAULT pg_catalog.pg_sequence_last_value('clinic.patients_id_seq'),
	reltuples float8 DEFAULT (pg_catalog.pg_stat_get_live_tuples('clinic.visits'::regclass))
);
CREATE TABLE ana.checked (x bigint CHECK (x < pg_catalog.pg_relation_size('clinic.patients')));
CREATE DOMAIN ana.below_size AS bigint CHECK (VALUE < pg_catalog.pg_relation_size('clinic.patients'));
CREATE FUNCTION ana.trg_report() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE NOTICE 'trigger fired'; RETURN NEW; END $$;
CREATE TABLE ana.trig_tab (x bigint);
CREATE TRIGGER size_gt BEFORE INSERT ON ana.trig_tab FOR EACH ROW
	WHEN (NEW.x < pg_catalog.pg_relation_size('clinic.patients')) EXECUTE FUNCTION ana.trg_report();
CREATE TABLE ana.own_keys (id int PRIMARY KEY, tag text);
INSERT INTO ana.own_keys SELECT g, 't' FROM generate_series(1, 100) g;
CREATE TABLE ana.rls_keys (id int PRIMARY KEY);
INSERT INTO ana.rls_keys SELECT g FROM generate_series(1, 100) g;
ALTER TABLE ana.rls_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE ana.rls_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY p ON ana.rls_keys USING (helper.say(id));
CREATE TABLE ana.partial_keys (id int NOT NULL);
CREATE UNIQUE INDEX own_partial ON ana.partial_keys (id) WHERE id < 0;
INSERT INTO ana.partial_keys SELECT 17 + g % 2 FROM generate_series(1, 4000) g;
-- a unique index left invalid by a failed CREATE INDEX CONCURRENTLY (made below, outside a transaction)
CREATE TABLE ana.invalid_keys (id int NOT NULL);
INSERT INTO ana.invalid_keys SELECT 17 + g % 2 FROM generate_series(1, 4000) g;
CREATE SEQUENCE ana.s;
CREATE VIEW ana.class_view AS SELECT oid, relname, reltuples, relpages FROM pg_catalog.pg_class;
CREATE MATERIALIZED VIEW ana.class_mv AS SELECT oid, relname, reltuples, relpages FROM pg_catalog.pg_class WITH NO DATA;
CREATE TABLE ana.log (v text);
RESET ROLE;
\set ON_ERROR_STOP 0
SET ROLE atk_analyst;
CREATE UNIQUE INDEX CONCURRENTLY invalid_keys_id ON ana.invalid_keys (id);
RESET ROLE;
\set ON_ERROR_STOP 1

-- statistics everywhere (the protected tables' MCVs and histograms exist)
ANALYZE;

--
-- protection and budgets
--
SELECT dp_pg.protect('clinic.patients');
-- a value domain for age: BI tools' min / max / percentiles of it (class 11)
SELECT dp_pg.set_domain('clinic.patients', 'age', 0, 120);
SELECT dp_pg.protect('clinic.visits', 'person', 1, 1);
SELECT dp_pg.set_public_keys('clinic.visits', 'ward', ARRAY[0, 1, 2, 3]);
SELECT dp_pg.protect('clinic.secret_events');
SELECT dp_pg.protect('clinic.secret_part');
-- later, the DBA attaches protected tables to public parents
SET ROLE atk_owner;
ALTER TABLE clinic.secret_events INHERIT pub.events;
ALTER TABLE pub.parted ATTACH PARTITION clinic.secret_part FOR VALUES FROM (1000) TO (2000);
RESET ROLE;
-- and keeps the parents' statistics fresh (inherited statistics include the children)
ANALYZE pub.events, pub.parted;
-- what BI tools' plain aggregates read (test/attack/09_bi.atk): a unit table
-- with a numeric column whose DBA-declared domain is [0, 1000] while single
-- rows hold 1e400, 1e-400 and NaN, and an integer column bounded by CHECK
SET ROLE atk_owner;
CREATE TABLE clinic.amounts (id int PRIMARY KEY, person int NOT NULL, amt numeric,
	qty int CHECK (qty BETWEEN 0 AND 10), tag text NOT NULL);
INSERT INTO clinic.amounts
SELECT g, g % 50, CASE g WHEN 2 THEN 1e400 WHEN 3 THEN 1e-400 WHEN 4 THEN 'NaN' ELSE g * 1.5 END, g % 11,
       CASE WHEN g = 17 THEN '@CNRY@_tag' ELSE 'plain' END
FROM generate_series(1, 200) g;
RESET ROLE;
SELECT dp_pg.protect('clinic.amounts', 'person', 2, 3);
SELECT dp_pg.set_domain('clinic.amounts', 'amt', 0, 1000);
-- what generalising keys read (date_trunc, extract, width_bucket, floor,
-- casts): single rows at the ends of every type's range, infinities and NaN
-- (id 2: the smallest dates and times, NaN floats, 1e-400; id 3: the largest,
-- 1e400; id 4: infinities; id 5: NaN numeric), and one date only person 17 has
SET ROLE atk_owner;
CREATE TABLE clinic.moments (id int PRIMARY KEY, person int NOT NULL, d date, t timestamp, tz timestamptz,
	f float8, r real, n numeric);
INSERT INTO clinic.moments
SELECT g, g % 40,
       CASE g WHEN 2 THEN date '4713-11-24 BC' WHEN 3 THEN date '5874897-12-31' WHEN 4 THEN date 'infinity'
              WHEN 17 THEN date '1917-07-17' ELSE date '2024-01-01' + g END,
       CASE g WHEN 2 THEN timestamp '4713-11-24 00:00 BC' WHEN 3 THEN timestamp '294276-12-31 23:59:59'
              WHEN 4 THEN timestamp '-infinity' ELSE timestamp '2024-01-01' + g * interval '1 hour' END,
       CASE g WHEN 2 THEN timestamptz '4713-11-24 00:00+00 BC' WHEN 3 THEN timestamptz '294276-12-31 23:59:59+00'
              WHEN 4 THEN timestamptz 'infinity' ELSE timestamptz '2024-01-01' + g * interval '1 hour' END,
       CASE g WHEN 2 THEN 'NaN'::float8 WHEN 3 THEN 1.7e308 WHEN 4 THEN '-Infinity' ELSE g / 10.0 END,
       CASE g WHEN 2 THEN 'NaN'::real WHEN 3 THEN 3.4e38 WHEN 4 THEN 'Infinity' ELSE g / 10.0 END,
       CASE g WHEN 2 THEN 1e-400 WHEN 3 THEN 1e400 WHEN 4 THEN 'Infinity' WHEN 5 THEN 'NaN' ELSE g * 1.5 END
FROM generate_series(1, 200) g;
RESET ROLE;
SELECT dp_pg.protect('clinic.moments', 'person', 2, 3);
-- class 11 (11_quantile.atk): value domains of dates and times declared by
-- dp_pg.set_domain (quoted and typed bounds), over rows at the ends of every
-- type's range and beyond the domains (id 2: the smallest, id 3: the
-- largest, id 4: infinities), and one date only person 17 has
SET ROLE atk_owner;
CREATE TABLE clinic.dated (id int PRIMARY KEY, person int NOT NULL, d date, t timestamp, tz timestamptz);
INSERT INTO clinic.dated
SELECT g, g % 40,
       CASE g WHEN 2 THEN date '4713-11-24 BC' WHEN 3 THEN date '5874897-12-31' WHEN 4 THEN date 'infinity'
              WHEN 17 THEN date '1917-07-17' ELSE date '2024-01-01' + g END,
       CASE g WHEN 2 THEN timestamp '4713-11-24 00:00 BC' WHEN 3 THEN timestamp '294276-12-31 23:59:59'
              WHEN 4 THEN timestamp '-infinity' ELSE timestamp '2024-01-01' + g * interval '1 hour' END,
       CASE g WHEN 2 THEN timestamptz '4713-11-24 00:00+00 BC' WHEN 3 THEN timestamptz '294276-12-31 23:59:59+00'
              WHEN 4 THEN timestamptz 'infinity' ELSE timestamptz '2024-01-01' + g * interval '1 hour' END
FROM generate_series(1, 200) g;
RESET ROLE;
SELECT dp_pg.protect('clinic.dated', 'person', 2, 3);
SELECT dp_pg.set_domain('clinic.dated', 'd', '2024-01-01', '2024-12-31');
SELECT dp_pg.set_domain('clinic.dated', 't', timestamp '2024-01-01', timestamp '2024-02-01');
SELECT dp_pg.set_domain('clinic.dated', 'tz', '2024-01-01 00:00+00', '2024-02-01 00:00+00');
-- class 12 (12_keys.atk): twin spellings.  Person 1's row, stored first so
-- that every aggregation meets it first, spells each value oddly (numeric
-- 5.000, float -0, 24 hours, {"a": 1.0}, 'x  ', 'KEY' under a case-insensitive
-- collation, ...); the other 3000 rows spell the same values canonically.
CREATE COLLATION pub.ci_su (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SET ROLE atk_owner;
CREATE TYPE pub.money_pair AS (amt numeric, cur text);
CREATE DOMAIN pub.amount_d AS numeric;
CREATE TABLE pub.spell_labels (id int PRIMARY KEY, label numeric NOT NULL);
INSERT INTO pub.spell_labels VALUES (1, 5.000), (2, 5);
GRANT SELECT ON pub.spell_labels TO PUBLIC;
CREATE TABLE clinic.spell (id int PRIMARY KEY, salary int NOT NULL, lab int NOT NULL, amount numeric NOT NULL,
	f8 float8, f4 real, x float8, iv interval, j jsonb, b bpchar, arr numeric[], rng numrange, pr pub.money_pair,
	dn pub.amount_d, ci text COLLATE pub.ci_su, ct citext);
INSERT INTO clinic.spell VALUES (1, 60000, 1, 5.000, '-0', '-0', -0.4, '24 hours', '{"a": 1.0}', 'x  ', '{5.0}',
	'[5.0,6.0)', '(5.000,eur)', 5.000, 'KEY', 'KEY');
INSERT INTO clinic.spell SELECT g, 1000, 2, 5, 0, 0, 0.3, '1 day', '{"a": 1}', 'x', '{5}', '[5,6)', '(5,eur)', 5,
	'key', 'key' FROM generate_series(2, 3001) g;
CREATE TABLE clinic.uspell (person int NOT NULL, salary int NOT NULL, amount numeric NOT NULL, cost numeric NOT NULL);
INSERT INTO clinic.uspell VALUES (1, 60000, 5.000, 1);
INSERT INTO clinic.uspell SELECT g, 1000, 5, 1 FROM generate_series(2, 3001) g;
RESET ROLE;
SELECT dp_pg.protect('clinic.spell');
SELECT dp_pg.protect('clinic.uspell', 'person', 1, 1);
-- class 13 (13_ddl.atk): the DBA's protected tables depend on the analyst's
-- objects, made before its budget: a referenced table (one code longer than
-- a name's 63 bytes, used by person 17 only), domains (person 17's value NULL,
-- or breaking a NOT VALID constraint), an inheritance parent, a partitioned
-- table whose default partition is protected (ids 10 to 30)
SET ROLE atk_analyst;
CREATE TABLE ana.codes (code text PRIMARY KEY);
CREATE TABLE ana.codes2 (code text PRIMARY KEY);
INSERT INTO ana.codes SELECT 'k' || g FROM generate_series(1, 50) g;
INSERT INTO ana.codes VALUES (repeat('L', 70) || '17'), ('spare');
INSERT INTO ana.codes2 SELECT code FROM ana.codes;
CREATE DOMAIN ana.pos_a AS int;
CREATE DOMAIN ana.pos_b AS int;
CREATE DOMAIN ana.chk_a AS int;
CREATE DOMAIN ana.chk_b AS int;
CREATE TABLE ana.inh_parent (id int NOT NULL, what text);
CREATE TABLE ana.parted (id int NOT NULL, what text) PARTITION BY LIST (id);
CREATE TABLE ana.parted_0 PARTITION OF ana.parted FOR VALUES IN (0);
GRANT REFERENCES ON ana.codes, ana.codes2 TO atk_owner;
GRANT USAGE ON SCHEMA ana TO atk_owner;
RESET ROLE;
SET ROLE atk_owner;
CREATE TABLE clinic.coded (id int PRIMARY KEY, code text NOT NULL REFERENCES ana.codes,
	code2 text NOT NULL REFERENCES ana.codes2, a ana.pos_a, b ana.pos_b, ca ana.chk_a, cb ana.chk_b);
INSERT INTO clinic.coded
SELECT g, CASE WHEN g = 17 THEN repeat('L', 70) || '17' ELSE 'k' || (g % 50 + 1) END, 'k' || (g % 50 + 1),
       CASE WHEN g = 17 THEN NULL ELSE g END, g, CASE WHEN g = 17 THEN -1 ELSE g END, g
FROM generate_series(1, 200) g;
CREATE TABLE clinic.inh_child (id int NOT NULL, what text);
INSERT INTO clinic.inh_child SELECT g, '@CNRY@_inh' || g FROM generate_series(1, @NEV@ + 7) g;
CREATE TABLE clinic.def_part (id int NOT NULL, what text);
INSERT INTO clinic.def_part SELECT 10 + g % 21, '@CNRY@_def' || g FROM generate_series(1, 500) g;
RESET ROLE;
SET ROLE atk_analyst;
ALTER DOMAIN ana.chk_a ADD CONSTRAINT pos CHECK (VALUE > 0) NOT VALID;
ALTER DOMAIN ana.chk_b ADD CONSTRAINT pos CHECK (VALUE > 0) NOT VALID;
RESET ROLE;
SELECT dp_pg.protect('clinic.coded');
SELECT dp_pg.protect('clinic.inh_child');
SELECT dp_pg.protect('clinic.def_part');
ALTER TABLE clinic.inh_child INHERIT ana.inh_parent;
ALTER TABLE ana.parted ATTACH PARTITION clinic.def_part DEFAULT;
-- class 14 (14_messages.atk): a superuser's function with a SET clause that runs DDL
CREATE FUNCTION dba.su_noisy() RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET client_min_messages = debug1 AS $$
BEGIN
	CREATE TEMP TABLE IF NOT EXISTS noisy_t (a int PRIMARY KEY);
	DROP TABLE noisy_t;
	RETURN 'ran';
END $$;
GRANT EXECUTE ON FUNCTION dba.su_noisy() TO PUBLIC;
-- several releases and unit joins (test/attack/19_releases.atk, 20_unitjoin.atk):
-- clinic.persons, privacy unit person (g = 1, r = 1), one row for persons
-- 1..600 (person 17's code a canary), and 40 more rows for person 1 (a
-- careless DBA's table: joined to clinic.visits, person 1's rows multiply to
-- 41 @NHEAVY@); clinic.person_notes, protected without a unit and not unique
-- on person
SET ROLE atk_owner;
CREATE TABLE clinic.persons (person int NOT NULL, grp text NOT NULL, code text NOT NULL, flag boolean NOT NULL);
INSERT INTO clinic.persons SELECT p, (ARRAY['a', 'b', 'c'])[1 + p % 3],
       CASE WHEN p = 17 THEN '@CNRY@_pcode' ELSE 'pc' || p END, p % 10 = 0 OR p = 17
FROM generate_series(1, 600) p;
INSERT INTO clinic.persons SELECT 1, 'a', 'pc1', false FROM generate_series(1, 40);
CREATE TABLE clinic.person_notes (person int NOT NULL, note text NOT NULL);
INSERT INTO clinic.person_notes SELECT p % 300, '@CNRY@_pn' || p FROM generate_series(1, 600) p;
RESET ROLE;
SELECT dp_pg.protect('clinic.persons', 'person', 1, 1);
SELECT dp_pg.protect('clinic.person_notes');
SELECT dp_pg.set_budget('atk_analyst', 1e9, 0.9);
SELECT dp_pg.set_budget('atk_honest', 1e9, 1e-3);
-- a DBA's careless budget: no delta limit
SELECT dp_pg.set_budget('atk_greedy', 1e9, NULL);
SELECT dp_pg.set_budget('atk_cache', 1e9, 1e-3);
SELECT dp_pg.set_budget('atk_cache2', 1e9, 1e-3);

--
-- Class 25 (test/attack/25_partitions.atk): partitioned tables.
-- clinic.pvisits: privacy unit person (g = 2, r = 1), partitioned by month:
-- clinic.pv_2024_01 (person 17's visits: their notes are canaries; @NPV@
-- rows), clinic.pv_2024_02 sub-partitioned by hash of person
-- (clinic.pv_2024_02_h0, _h1), clinic.pv_2024_03, a default partition
-- clinic.pv_default (person 17's one visit in May 2031), and
-- clinic.pv_remote (2025), a postgres_fdw foreign table on a loopback
-- server (database atk_shard) whose rows' notes are canaries and whose
-- amounts (0..100, CHECK) include 5 but never 77.  The analyst was granted
-- SELECT, INSERT, UPDATE, DELETE on clinic.pv_2024_01 and SELECT on
-- clinic.pv_default before its budget (a DBA's mistake), and a DBA's view
-- over a partition is granted to PUBLIC.  clinic.pdet: a second partitioned
-- table whose month clinic.pdet_old the DBA detached CONCURRENTLY (it stays
-- protected).  clinic.pinh: a protected inheritance parent with a child
-- made after it was protected (clinic.pinh_later).
--
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
CREATE DATABASE atk_shard;
\connect atk_shard
CREATE TABLE pv_remote (id int NOT NULL, person int NOT NULL, day date NOT NULL, amount int NOT NULL, note text NOT NULL);
INSERT INTO pv_remote SELECT 500000 + g, g % 300, date '2025-01-01' + g % 200, CASE WHEN g % 97 = 0 THEN 5 ELSE 10 + g % 60 END,
	'@CNRY@_rem' || g FROM generate_series(1, @NPV@ / 2 + 3) g;
\connect postgres
SET client_min_messages = warning;
DO $$
BEGIN
	EXECUTE format('CREATE SERVER atk_loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host %L, port %L, dbname %L)',
		split_part(current_setting('unix_socket_directories'), ',', 1), current_setting('port'), 'atk_shard');
	EXECUTE format('CREATE USER MAPPING FOR atk_owner SERVER atk_loop OPTIONS (user %L, password_required %L)', current_user, 'false');
	EXECUTE format('CREATE USER MAPPING FOR %I SERVER atk_loop OPTIONS (user %L)', current_user, current_user);
END $$;
GRANT USAGE ON FOREIGN SERVER atk_loop TO atk_owner;
SET ROLE atk_owner;
CREATE TABLE clinic.pvisits (id int NOT NULL, person int NOT NULL, day date NOT NULL,
	amount int NOT NULL CHECK (amount BETWEEN 0 AND 100), note text NOT NULL) PARTITION BY RANGE (day);
CREATE TABLE clinic.pv_2024_01 PARTITION OF clinic.pvisits FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
CREATE TABLE clinic.pv_2024_02 PARTITION OF clinic.pvisits FOR VALUES FROM ('2024-02-01') TO ('2024-03-01')
	PARTITION BY HASH (person);
CREATE TABLE clinic.pv_2024_02_h0 PARTITION OF clinic.pv_2024_02 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE clinic.pv_2024_02_h1 PARTITION OF clinic.pv_2024_02 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE clinic.pv_2024_03 PARTITION OF clinic.pvisits FOR VALUES FROM ('2024-03-01') TO ('2024-04-01');
CREATE TABLE clinic.pv_default PARTITION OF clinic.pvisits DEFAULT;
CREATE FOREIGN TABLE clinic.pv_remote PARTITION OF clinic.pvisits FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')
	SERVER atk_loop OPTIONS (schema_name 'public', table_name 'pv_remote');
INSERT INTO clinic.pvisits SELECT g, CASE WHEN g % 500 = 0 THEN 17 ELSE 100 + g % 400 END, date '2024-01-01' + g % 31,
	g % 90, CASE WHEN g % 500 = 0 THEN '@CNRY@_pv' || g ELSE 'pv' || g END FROM generate_series(1, @NPV@) g;
INSERT INTO clinic.pvisits SELECT 900000 + g, 100 + g % 400, date '2024-02-01' + g % 60, g % 90, 'pv' || g FROM generate_series(1, 3000) g;
INSERT INTO clinic.pvisits VALUES (999999, 17, '2031-05-05', 50, '@CNRY@_pvdef');
CREATE TABLE clinic.pdet (id int NOT NULL, person int NOT NULL, day date NOT NULL, note text NOT NULL) PARTITION BY RANGE (day);
CREATE TABLE clinic.pdet_old PARTITION OF clinic.pdet FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
CREATE TABLE clinic.pdet_new PARTITION OF clinic.pdet FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
INSERT INTO clinic.pdet SELECT g, g % 200, date '2023-06-01' + g % 300, '@CNRY@_det' || g FROM generate_series(1, 1200) g;
CREATE TABLE clinic.pinh (id int NOT NULL, person int NOT NULL, note text NOT NULL);
CREATE TABLE clinic.pinh_kid () INHERITS (clinic.pinh);
INSERT INTO clinic.pinh SELECT g, g, 'pinh' || g FROM generate_series(1, 100) g;
INSERT INTO clinic.pinh_kid SELECT g, g, '@CNRY@_kid' || g FROM generate_series(1, 300) g;
RESET ROLE;
SELECT dp_pg.protect('clinic.pvisits', 'person', 2, 1);
SELECT dp_pg.protect('clinic.pdet', 'person', 1, 1);
SELECT dp_pg.protect('clinic.pinh', 'person', 1, 1);
SET ROLE atk_owner;
CREATE TABLE clinic.pinh_later () INHERITS (clinic.pinh);
INSERT INTO clinic.pinh_later SELECT g, 1000 + g, '@CNRY@_later' || g FROM generate_series(1, 50) g;
GRANT SELECT, INSERT, UPDATE, DELETE ON clinic.pv_2024_01 TO atk_analyst;
GRANT SELECT ON clinic.pv_default, clinic.pinh_later TO atk_analyst;
CREATE VIEW dba.pv_jan AS SELECT * FROM clinic.pv_2024_01;
GRANT SELECT ON dba.pv_jan TO PUBLIC;
RESET ROLE;
ALTER TABLE clinic.pdet DETACH PARTITION clinic.pdet_old CONCURRENTLY;
ANALYZE clinic.pvisits, clinic.pv_2024_01, clinic.pv_2024_03, clinic.pdet, clinic.pinh;

-- the pg_stat_statements rows of the set-up exist (tracked as superuser)
SELECT count(*) >= 0 FROM clinic.patients;
SELECT pg_sleep(1.1);

-- numeric canaries (superuser's truth), read by the driver
CREATE FUNCTION atk_meta.numeric_canaries(OUT name text, OUT value numeric) RETURNS SETOF record
LANGUAGE sql AS $$
	SELECT 'rows.patients', count(*)::numeric FROM clinic.patients
	UNION ALL SELECT 'rows.visits', count(*) FROM clinic.visits
	UNION ALL SELECT 'rows.heavy', count(*) FROM clinic.visits WHERE person = 1
	UNION ALL SELECT 'sum.income', sum(income)::numeric FROM clinic.patients
	UNION ALL SELECT 'sum.age', sum(age) FROM clinic.patients
	UNION ALL SELECT 'sum.visits_cost', sum(cost)::numeric FROM clinic.visits
	UNION ALL SELECT 'seq.patients', last_value FROM clinic.patients_id_seq
	UNION ALL SELECT 'heap.patients', pg_relation_size('clinic.patients')
	UNION ALL SELECT 'table.patients', pg_table_size('clinic.patients')
	UNION ALL SELECT 'total.patients', pg_total_relation_size('clinic.patients')
	UNION ALL SELECT 'indexes.patients', pg_indexes_size('clinic.patients')
	UNION ALL SELECT 'pages.patients', relpages FROM pg_class WHERE oid = 'clinic.patients'::regclass
	UNION ALL SELECT 'live.patients', pg_stat_get_live_tuples('clinic.patients'::regclass)
	UNION ALL SELECT 'ins.patients', pg_stat_get_tuples_inserted('clinic.patients'::regclass)
	UNION ALL SELECT 'live.visits', pg_stat_get_live_tuples('clinic.visits'::regclass)
	UNION ALL SELECT 'rows.secret_events', count(*) FROM clinic.secret_events
	UNION ALL SELECT 'rows.secret_part', count(*) FROM clinic.secret_part
	UNION ALL SELECT 'rows.inh_child', count(*) FROM clinic.inh_child
	UNION ALL SELECT 'rows.events_parent', count(*) FROM pub.events
	UNION ALL SELECT 'rows.parted_parent', count(*) FROM pub.parted
	UNION ALL SELECT 'heap.secret_events', pg_relation_size('clinic.secret_events')
	UNION ALL SELECT 'heap.secret_part', pg_relation_size('clinic.secret_part')
	UNION ALL SELECT 'heap.visits', pg_relation_size('clinic.visits')
	UNION ALL SELECT 'total.visits', pg_total_relation_size('clinic.visits')
	UNION ALL SELECT 'hidden_total', sum(pg_total_relation_size(relid)) FROM dp_pg.protected_tables
	UNION ALL SELECT 'rows.pv_2024_01', count(*) FROM clinic.pv_2024_01
	UNION ALL SELECT 'rows.pvisits', count(*) FROM clinic.pvisits
	UNION ALL SELECT 'rows.pv_remote', count(*) FROM clinic.pv_remote
	UNION ALL SELECT 'sum.pv_amount', sum(amount) FROM clinic.pvisits
	UNION ALL SELECT 'heap.pv_2024_01', pg_relation_size('clinic.pv_2024_01')
	UNION ALL SELECT 'total.pv_2024_02_h1', pg_total_relation_size('clinic.pv_2024_02_h1')
	UNION ALL SELECT 'rows.pdet_old', count(*) FROM clinic.pdet_old
	UNION ALL SELECT 'heap.pdet_old', pg_relation_size('clinic.pdet_old')
	UNION ALL SELECT 'idx.' || c.relname, pg_relation_size(c.oid)
	          FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	          WHERE i.indrelid IN ('clinic.patients'::regclass, 'clinic.visits'::regclass)
	            AND pg_relation_size(c.oid) >= 100000
$$;

-- the control database: the same data, unprotected, readable by the analyst
CREATE DATABASE atk_ctl;

--
-- Class 18 (test/attack/18_expr.atk): row expressions with derived bounds,
-- expression keys, regular expressions, variances, count(DISTINCT), a DBA's
-- views, filters that narrow listed keys.  clinic.sales_x (row-level):
-- value domains by CHECK (amt, qty), a CHECK NOT VALID that rows break
-- (nv), declared domains (f, r) with rows far outside them, a date with
-- public keys (day) and one with a CHECK (shipped); id 2: NaN / -infinity /
-- subnormals, id 3: 1e308 / 1e400 / infinity, id 4: a text of 200,000
-- characters; id 17 is the only row of category '@CNRY@_cat' and its f is
-- a secret near 42.
--
SET ROLE atk_owner;
CREATE TABLE clinic.sales_x (id int PRIMARY KEY, person int NOT NULL,
	amt numeric CHECK (amt BETWEEN 0 AND 1000), qty int CHECK (qty BETWEEN 0 AND 10),
	nv numeric, f float8, r real, day date, shipped date CHECK (shipped BETWEEN '2024-01-01' AND '2024-12-31'),
	cat text NOT NULL, sensitive boolean NOT NULL);
INSERT INTO clinic.sales_x
SELECT g, g % 100, (g % 40) * 2.5, g % 11, CASE WHEN g = 3 THEN 1e400 ELSE g % 30 END,
       CASE g WHEN 2 THEN 'NaN' WHEN 3 THEN 1.7e308 WHEN 5 THEN -4.9e-324 WHEN 17 THEN 42.0 + @SALT@ % 7 / 10.0 ELSE g % 20 END,
       CASE g WHEN 2 THEN '-Infinity' WHEN 3 THEN 3.4e38 ELSE (g % 10) / 4.0 END,
       CASE g WHEN 2 THEN date '-infinity' WHEN 3 THEN date 'infinity' ELSE date '2024-01-01' + g % 120 END,
       date '2024-01-01' + g % 200,
       CASE WHEN g = 17 THEN '@CNRY@_cat' WHEN g = 4 THEN repeat('a', 200000) ELSE (ARRAY['Computers', 'Books', 'Games'])[g % 3 + 1] END,
       g % 10 = 0 OR g = 17
FROM generate_series(1, 3000) g;
ALTER TABLE clinic.sales_x ADD CONSTRAINT nv_domain CHECK (nv BETWEEN 0 AND 50) NOT VALID;
-- a DBA's views: a plain one, one that calls the helper's code, one over a
-- view, one with aggregates inside; and a view the helper owns
CREATE VIEW dba.sales_v AS SELECT * FROM clinic.sales_x WHERE qty > 0;
CREATE VIEW dba.sales_said AS SELECT * FROM clinic.sales_x WHERE helper.say(cat);
CREATE VIEW dba.sales_vv AS SELECT * FROM dba.sales_v WHERE amt > 1;
CREATE VIEW dba.sales_by_cat AS SELECT cat, count(*) AS n FROM clinic.sales_x GROUP BY cat;
GRANT SELECT ON dba.sales_v, dba.sales_said, dba.sales_vv, dba.sales_by_cat TO PUBLIC;
RESET ROLE;
GRANT SELECT ON clinic.sales_x TO atk_helper;
SET ROLE atk_helper;
CREATE VIEW helper.sales_h AS SELECT * FROM clinic.sales_x;
GRANT SELECT ON helper.sales_h TO PUBLIC;
RESET ROLE;
REVOKE SELECT ON clinic.sales_x FROM atk_helper;
SELECT dp_pg.protect('clinic.sales_x');
SELECT dp_pg.set_domain('clinic.sales_x', 'f', 0, 100);
SELECT dp_pg.set_domain('clinic.sales_x', 'r', 0, 10);
SELECT dp_pg.set_public_keys('clinic.sales_x', 'day',
	ARRAY(SELECT d::date FROM generate_series(date '2024-01-01', date '2024-12-31', interval '1 day') d));
SELECT dp_pg.set_public_keys('clinic.sales_x', 'qty', ARRAY(SELECT generate_series(0, 10)));

--
-- Class 23 (test/attack/23_edges.atk): integer edges of derived bounds.
-- clinic.edges_x (row-level): value domains that include the smallest
-- value of each integer type (i4: INT_MIN, i2 and s4: -32768, i8:
-- INT8_MIN, by set_domain and CHECK), a numeric whose domain ends where
-- numeric(4, 1) rounds over (n: 999.95) and one whose domain ends where a
-- cast to integer rounds below INT_MIN (m: -2147483648.5), a real whose
-- domain's end is beyond integer once rounded to real (r4: 2147483600, as
-- a real 2147483648; rows 1, 17, 18 hold 3e9).  Rows 1, 17 and
-- 18 hold those edges, every other row small values (id 5: 5); row 17 is
-- sensitive, 18 is not; only row 1 has d = 2024-12-31.
--
SET ROLE atk_owner;
CREATE TABLE clinic.edges_x (id int PRIMARY KEY, person int NOT NULL, i4 int, i2 smallint CHECK (i2 BETWEEN -32768 AND 32767),
	i8 bigint, s4 int CHECK (s4 BETWEEN -32768 AND 32767), n numeric, m numeric,
	d date CHECK (d BETWEEN '2024-01-01' AND '2024-12-31'), r4 real, sensitive boolean NOT NULL);
INSERT INTO clinic.edges_x
SELECT g, g % 100,
       CASE WHEN g IN (1, 17, 18) THEN -2147483648 ELSE g % 50 END,
       CASE WHEN g IN (1, 17, 18) THEN -32768 ELSE g % 50 END,
       CASE WHEN g IN (1, 17, 18) THEN -9223372036854775808 ELSE g % 50 END,
       CASE WHEN g IN (1, 17, 18) THEN -32768 ELSE g % 50 END,
       CASE WHEN g IN (1, 17, 18) THEN 999.95 ELSE g % 50 END,
       CASE WHEN g IN (1, 17, 18) THEN -2147483648.5 ELSE -(g % 50) END,
       CASE WHEN g = 1 THEN date '2024-12-31' ELSE date '2024-01-01' + g % 120 END,
       CASE WHEN g IN (1, 17, 18) THEN 3e9 ELSE g % 50 END,
       g % 10 = 0 OR g = 17
FROM generate_series(1, 2000) g;
RESET ROLE;
SELECT dp_pg.protect('clinic.edges_x');
SELECT dp_pg.set_domain('clinic.edges_x', 'i4', -2147483648, 2147483647);
SELECT dp_pg.set_domain('clinic.edges_x', 'i8', -9223372036854775808, 9223372036854775807);
SELECT dp_pg.set_domain('clinic.edges_x', 'n', 0, 999.95);
SELECT dp_pg.set_domain('clinic.edges_x', 'm', -2147483648.5, 0);
SELECT dp_pg.set_domain('clinic.edges_x', 'r4', 0, 2147483600);

--
-- Class 24 (test/attack/24_total.atk): row expressions total by
-- construction.  clinic.total_x (row-level, 2000 rows): value domains by
-- CHECK constraints added NOT VALID after rows that break them were stored
-- (amt BETWEEN 0.01 AND 1e19, float domains that exclude zero (w in
-- [1e-300, 1e300], w2 in [1e-300, 1e-250]), a real one, a numeric within
-- +-1e300, dates, an integer day count, times); rows 1, 17 and 18 hold the
-- edges (amt 0.001 and 0.04, subnormal w, w2 and r,
-- numeric 1e-16383, a day count of INT_MAX, fractional seconds, a time near
-- 294276 AD, a text of 40,000 characters), row 2 NaN and the infinities,
-- row 5 plain values (5); row 17 is sensitive, 18 is not.
-- clinic.total_u: the same edges under the privacy unit person (person 17
-- holds them in three rows).
--
SET ROLE atk_owner;
CREATE TABLE clinic.total_x (id int PRIMARY KEY, person int NOT NULL, amt numeric, w float8, w2 float8, r real, n numeric,
	d date, a int, ts timestamp, tz timestamptz, txt text, sensitive boolean NOT NULL);
INSERT INTO clinic.total_x
SELECT g, g % 100, 1 + g % 40, 1 + g % 30, (1 + g % 30) * 1e-260, (1 + g % 9)::real, g % 50,
       date '2024-01-01' + g % 300, g % 100, timestamp '2024-01-01' + g * interval '1 hour',
       timestamptz '2024-01-01 00:00+00' + g * interval '1 hour', 'text' || g % 7,
       g % 10 = 0 OR g = 17
FROM generate_series(1, 2000) g;
UPDATE clinic.total_x SET amt = CASE id WHEN 18 THEN 0.04 ELSE 0.001 END, w = 1e-310, w2 = 1e-310, r = 1e-40, n = 1e-16383,
	d = date '2000-01-01', a = 2147483647, ts = timestamp '2024-01-01 00:00:00.000001',
	tz = timestamptz '294276-12-30 23:59:59.5+00', txt = repeat('a', 40000)
WHERE id IN (1, 17, 18);
UPDATE clinic.total_x SET amt = 'NaN', w = '-Infinity', w2 = 'NaN', r = 'NaN', n = '-Infinity', d = 'infinity', a = -2147483648,
	ts = '-infinity', tz = 'infinity', txt = NULL
WHERE id = 2;
UPDATE clinic.total_x SET amt = 5, w = 5, w2 = 1e-260, r = 5, n = 5, d = date '2024-06-01', a = 5, ts = timestamp '2024-06-01 12:00:05',
	tz = timestamptz '2024-06-01 12:00:05+00', txt = 'aaaaa'
WHERE id = 5;
ALTER TABLE clinic.total_x ADD CONSTRAINT amt_dom CHECK (amt BETWEEN 0.01 AND 1e19) NOT VALID,
	ADD CONSTRAINT w_dom CHECK (w BETWEEN 1e-300 AND 1e300) NOT VALID,
	ADD CONSTRAINT w2_dom CHECK (w2 BETWEEN 1e-300 AND 1e-250) NOT VALID,
	ADD CONSTRAINT r_dom CHECK (r BETWEEN 1e-30 AND 1e30) NOT VALID,
	ADD CONSTRAINT n_dom CHECK (n BETWEEN -1e300 AND 1e300) NOT VALID,
	ADD CONSTRAINT d_dom CHECK (d BETWEEN '2000-01-01' AND '2030-12-31') NOT VALID,
	ADD CONSTRAINT a_dom CHECK (a BETWEEN 0 AND 1000) NOT VALID,
	ADD CONSTRAINT ts_dom CHECK (ts BETWEEN '2000-01-01' AND '2030-12-31') NOT VALID,
	ADD CONSTRAINT tz_dom CHECK (tz BETWEEN '2000-01-01 00:00+00' AND '2030-12-31 00:00+00') NOT VALID;
CREATE TABLE clinic.total_u (person int NOT NULL, w float8 CHECK (w BETWEEN 1e-300 AND 1e300), d date, a int,
	ts timestamp, flag boolean NOT NULL);
INSERT INTO clinic.total_u SELECT p, 1 + p % 30, date '2024-01-01' + p % 300, p % 100,
	timestamp '2024-01-01' + p * interval '1 hour', p = 17
FROM generate_series(1, 400) p, generate_series(1, 3) k;
ALTER TABLE clinic.total_u DROP CONSTRAINT total_u_w_check;
UPDATE clinic.total_u SET w = 1e-310, d = date '2000-01-01', a = 2147483647, ts = timestamp '2024-01-01 00:00:00.000001'
WHERE person IN (17, 18);
ALTER TABLE clinic.total_u ADD CONSTRAINT w_dom CHECK (w BETWEEN 1e-300 AND 1e300) NOT VALID,
	ADD CONSTRAINT d_dom CHECK (d BETWEEN '2000-01-01' AND '2030-12-31') NOT VALID,
	ADD CONSTRAINT a_dom CHECK (a BETWEEN 0 AND 1000) NOT VALID,
	ADD CONSTRAINT ts_dom CHECK (ts BETWEEN '2000-01-01' AND '2030-12-31') NOT VALID;
CREATE VIEW dba.total_v AS SELECT * FROM clinic.total_x WHERE id > 0;
GRANT SELECT ON dba.total_v TO PUBLIC;
-- the DBA's materialized views over protected tables: raw rows, granted to everyone
-- (class 24: never readable by an analyst)
CREATE MATERIALIZED VIEW dba.patients_mv AS SELECT * FROM clinic.patients;
CREATE MATERIALIZED VIEW dba.patients_mv2 AS SELECT id, name, diagnosis FROM dba.patients_mv;
CREATE MATERIALIZED VIEW dba.patients_via_view AS SELECT * FROM dba.patients_v;
GRANT SELECT ON dba.patients_mv, dba.patients_mv2, dba.patients_via_view TO PUBLIC;
RESET ROLE;
SELECT dp_pg.protect('clinic.total_x');
SELECT dp_pg.protect('clinic.total_u', 'person', 3, 3);

--
-- Class 27 (test/attack/27_rr.atk): locally private columns.  clinic.survey
-- is protected, one row per person, its answer (smoker) randomized at
-- epsilon 1; a name canary per row, person 17 and every tenth sensitive.
-- pub.poll is public (SELECT for PUBLIC) with a randomized answer: its
-- estimates are free.  pub.poll_ids is a public list of poll ids, readable
-- by the analyst, joined to the protected table by the attacks.
--
SET ROLE atk_owner;
CREATE TABLE clinic.survey (id int PRIMARY KEY, name text NOT NULL, region text NOT NULL, smoker boolean NOT NULL,
	sensitive boolean NOT NULL);
INSERT INTO clinic.survey
SELECT g, '@CNRY@_sv' || g, (ARRAY['north', 'south', 'east', 'west'])[g % 4 + 1], g % 3 = 0, g % 10 = 0 OR g = 17
FROM generate_series(1, 400) g;
CREATE TABLE pub.poll (id int PRIMARY KEY, answer boolean NOT NULL);
INSERT INTO pub.poll SELECT g, g % 2 = 0 FROM generate_series(1, 400) g;
GRANT SELECT ON pub.poll TO PUBLIC;
RESET ROLE;
SELECT dp_pg.protect('clinic.survey');
SELECT dp_pg.set_public_keys('clinic.survey', 'region', ARRAY['north', 'south', 'east', 'west']);
SELECT dp_pg.randomize('clinic.survey', 'smoker', 'rr(epsilon=1)');
SELECT dp_pg.randomize('pub.poll', 'answer', 'rr(epsilon=1)');
