--
-- ddl_fence: nothing an analyst runs — DDL included — makes PostgreSQL read
-- a protected table outside a charged DP level, or changes what a protected
-- table depends on (guard/ddl.c).  The analyst df_ana owns objects that the
-- DBA's protected tables depend on: the table a foreign key references, the
-- domains, enum, sequence and collation of columns, an inheritance parent, a
-- partitioned table with a protected default partition, a schema.  Every
-- statement on them, or on a protected table, or one that would process a
-- protected table unnamed, is refused before it runs and charges nothing;
-- the analyst's other objects stay its own to change.
--
\set VERBOSITY terse
CREATE SCHEMA df;
CREATE ROLE df_ana;
GRANT USAGE ON SCHEMA df TO df_ana;
CREATE SCHEMA dfa AUTHORIZATION df_ana;
CREATE SCHEMA dfo AUTHORIZATION df_ana;
-- the analyst's objects (made before it has a budget)
SET ROLE df_ana;
CREATE TABLE dfa.codes (code text PRIMARY KEY, label text NOT NULL);
INSERT INTO dfa.codes SELECT 'c' || g, 'label' FROM generate_series(1, 20) g;
CREATE TABLE dfa.other (id int);
CREATE DOMAIN dfa.pos AS int;
CREATE DOMAIN dfa.posv AS int;
CREATE TYPE dfa.mood AS ENUM ('calm', 'tense');
CREATE SEQUENCE dfa.seq;
CREATE COLLATION dfa.coll (provider = icu, locale = 'und');
CREATE TABLE dfa.parent (id int NOT NULL, what text);
CREATE TABLE dfa.parted (id int NOT NULL, what text) PARTITION BY LIST (id);
CREATE TABLE dfa.parted_1 PARTITION OF dfa.parted FOR VALUES IN (1);
CREATE TABLE dfa.spare (id int NOT NULL, what text);
CREATE TABLE dfo.mine (id int);
RESET ROLE;
GRANT REFERENCES ON dfa.codes TO PUBLIC;
-- the DBA's protected tables
CREATE TABLE df.rows (id int PRIMARY KEY, code text NOT NULL REFERENCES dfa.codes, n dfa.pos, v dfa.posv,
	m dfa.mood NOT NULL DEFAULT 'calm', s bigint DEFAULT nextval('dfa.seq'), t text COLLATE dfa.coll);
INSERT INTO df.rows (id, code, n, v) SELECT g, 'c' || (g % 20 + 1), g, CASE WHEN g = 17 THEN -1 ELSE g END
FROM generate_series(1, 200) g;
SELECT dp_pg.protect('df.rows');
-- the analyst's domain gets a constraint that the protected row 17 breaks (not validated)
SET ROLE df_ana;
ALTER DOMAIN dfa.posv ADD CONSTRAINT posv_check CHECK (VALUE > 0) NOT VALID;
RESET ROLE;
CREATE TABLE df.child (id int NOT NULL, what text);
INSERT INTO df.child SELECT g, 'secret' FROM generate_series(1, 100) g;
SELECT dp_pg.protect('df.child');
ALTER TABLE df.child INHERIT dfa.parent;
CREATE TABLE df.part (id int NOT NULL, what text);
INSERT INTO df.part SELECT g, 'secret' FROM generate_series(10, 30) g;
SELECT dp_pg.protect('df.part');
ALTER TABLE dfa.parted ATTACH PARTITION df.part DEFAULT;
-- a protected table in the analyst's schema
CREATE TABLE dfa.kept (id int PRIMARY KEY);
INSERT INTO dfa.kept SELECT g FROM generate_series(1, 10) g;
SELECT dp_pg.protect('dfa.kept');
SELECT dp_pg.set_budget('df_ana', 1000, 1e-3);

-- statements' outcomes: dp_test.outcome (sql/canonical_keys.sql)
-- what the DBA's tables look like before
CREATE TABLE df.shape AS
SELECT c.relname, count(DISTINCT k.oid) AS constraints, count(DISTINCT a.attnum) AS columns
FROM pg_class c LEFT JOIN pg_constraint k ON k.conrelid = c.oid
     LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.oid IN ('df.rows'::regclass, 'df.child'::regclass, 'df.part'::regclass, 'dfa.kept'::regclass)
GROUP BY c.relname;

SET SESSION AUTHORIZATION df_ana;
-- 1. objects a protected table depends on: refused before they run, nothing charged
SELECT dp_test.outcome(q) AS result, q AS statement FROM unnest(ARRAY[
	-- the table a foreign key references: a type change re-checks the key on every protected row
	$q$ALTER TABLE dfa.codes ALTER COLUMN code TYPE name$q$,
	$q$ALTER TABLE dfa.codes ALTER COLUMN code TYPE varchar(10)$q$,
	$q$ALTER TABLE dfa.codes DROP CONSTRAINT codes_pkey CASCADE$q$,
	$q$ALTER TABLE dfa.codes ADD COLUMN z int$q$,
	$q$ALTER TABLE dfa.codes RENAME TO codes2$q$,
	$q$ALTER TABLE dfa.codes OWNER TO df_ana$q$,
	$q$DROP TABLE dfa.codes CASCADE$q$,
	$q$DROP INDEX dfa.codes_pkey CASCADE$q$,
	$q$TRUNCATE dfa.codes CASCADE$q$,
	$q$COMMENT ON TABLE dfa.codes IS 'x'$q$,
	$q$COMMENT ON COLUMN dfa.codes.code IS 'x'$q$,
	$q$GRANT SELECT ON dfa.codes TO PUBLIC$q$,
	$q$GRANT SELECT ON ALL TABLES IN SCHEMA dfa TO PUBLIC$q$,
	$q$LOCK TABLE dfa.codes$q$,
	$q$REINDEX TABLE dfa.codes$q$,
	$q$CLUSTER dfa.codes USING codes_pkey$q$,
	$q$VACUUM FULL dfa.codes$q$,
	-- domains, enum, sequence, collation of its columns
	$q$ALTER DOMAIN dfa.pos SET NOT NULL$q$,
	$q$ALTER DOMAIN dfa.posv VALIDATE CONSTRAINT posv_check$q$,
	$q$ALTER DOMAIN dfa.posv DROP CONSTRAINT posv_check$q$,
	$q$DROP DOMAIN dfa.pos CASCADE$q$,
	$q$ALTER TYPE dfa.mood ADD VALUE 'angry'$q$,
	$q$ALTER TYPE dfa.mood RENAME VALUE 'calm' TO 'serene'$q$,
	$q$DROP TYPE dfa.mood CASCADE$q$,
	$q$ALTER TYPE dfa.mood RENAME TO mood2$q$,
	$q$ALTER TYPE dfa.mood OWNER TO df_ana$q$,
	$q$ALTER TYPE dfa.mood SET SCHEMA df$q$,
	$q$ALTER DOMAIN dfa.pos RENAME TO pos2$q$,
	$q$ALTER DOMAIN dfa.posv RENAME CONSTRAINT posv_check TO posv_check2$q$,
	$q$GRANT USAGE ON TYPE dfa.mood TO PUBLIC$q$,
	$q$GRANT USAGE ON DOMAIN dfa.pos TO PUBLIC$q$,
	$q$COMMENT ON TYPE dfa.mood IS 'x'$q$,
	$q$COMMENT ON DOMAIN dfa.pos IS 'x'$q$,
	$q$ALTER SEQUENCE dfa.seq RESTART$q$,
	$q$DROP SEQUENCE dfa.seq CASCADE$q$,
	$q$ALTER COLLATION dfa.coll REFRESH VERSION$q$,
	$q$DROP COLLATION dfa.coll CASCADE$q$,
	-- an inheritance parent: ANALYZE samples the protected child, NOT NULL scans it (an
	-- error if it has a row)
	$q$ANALYZE dfa.parent$q$,
	$q$VACUUM ANALYZE dfa.parent$q$,
	$q$ALTER TABLE dfa.parent ALTER COLUMN what SET NOT NULL$q$,
	$q$ALTER TABLE dfa.parent ADD COLUMN w int NOT NULL$q$,
	$q$CREATE INDEX ON dfa.parent (id)$q$,
	$q$CREATE TABLE dfa.child2 () INHERITS (dfa.parent)$q$,
	-- a partitioned table with a protected default partition: a new partition's bound scans it
	$q$CREATE TABLE dfa.parted_17 PARTITION OF dfa.parted FOR VALUES IN (17)$q$,
	$q$ALTER TABLE dfa.parted ATTACH PARTITION dfa.spare FOR VALUES IN (18)$q$,
	$q$ALTER TABLE dfa.parted DETACH PARTITION df.part$q$,
	$q$CREATE UNIQUE INDEX ON dfa.parted (id, what)$q$,
	$q$ANALYZE dfa.parted$q$,
	-- the schema of a protected table, and every object of the analyst at once
	$q$DROP SCHEMA dfa CASCADE$q$,
	$q$ALTER SCHEMA dfa RENAME TO dfb$q$,
	$q$REINDEX SCHEMA dfa$q$,
	$q$DROP OWNED BY df_ana CASCADE$q$,
	$q$REASSIGN OWNED BY df_ana TO df_ana$q$
]) AS q;

-- 2. protected tables themselves, and foreign keys to them
SELECT dp_test.outcome(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$COPY df.rows TO '/dev/null'$q$,
	$q$COPY df.child (what) TO '/dev/null'$q$,
	$q$ANALYZE df.rows$q$,
	$q$VACUUM df.part$q$,
	$q$REINDEX INDEX df.rows_pkey$q$,
	$q$ALTER TABLE dfa.kept ADD COLUMN x int$q$,
	$q$CREATE TABLE dfa.fk (id int REFERENCES df.rows)$q$,
	$q$ALTER TABLE dfa.other ADD FOREIGN KEY (id) REFERENCES df.rows (id)$q$
]) AS q;

-- 3. data changes of the referenced table: the foreign key's own query on the
-- protected table is refused by the planner's guard whatever the protected rows
-- (a referenced code and an unreferenced one give the same answer); an update
-- that keeps the key runs no such query
SELECT dp_test.outcome($q$DELETE FROM dfa.codes WHERE code = 'c1'$q$) AS referenced,
       dp_test.outcome($q$INSERT INTO dfa.codes VALUES ('c99', 'new')$q$) AS inserted,
       dp_test.outcome($q$DELETE FROM dfa.codes WHERE code = 'c99'$q$) AS unreferenced,
       dp_test.outcome($q$UPDATE dfa.codes SET label = 'changed'$q$) AS same_keys;

-- 4. the analyst's objects that no protected table depends on stay its own
SELECT dp_test.outcome(q) AS result, q AS statement FROM unnest(ARRAY[
	$q$CREATE TABLE dfa.free (id int PRIMARY KEY, code text REFERENCES dfa.codes)$q$,
	$q$ALTER TABLE dfa.free ADD COLUMN note text$q$,
	$q$CREATE INDEX ON dfa.free (note)$q$,
	$q$ANALYZE dfa.free$q$,
	$q$COMMENT ON TABLE dfa.free IS 'mine'$q$,
	$q$DROP TABLE dfa.free$q$,
	$q$ALTER TABLE dfa.other ADD COLUMN y int$q$,
	-- a schema of the analyst's that holds nothing a protected table depends on
	$q$GRANT SELECT ON ALL TABLES IN SCHEMA dfo TO PUBLIC$q$
]) AS q;
RESET SESSION AUTHORIZATION;

-- 5. a database owner would vacuum, analyze and reindex every table: unnamed, refused
-- (the message names a protected table of this database: which one depends on the tests before)
SELECT datdba::regrole AS db_owner FROM pg_database WHERE datname = current_database() \gset
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I OWNER TO df_ana', current_database()); END $$;
SET SESSION AUTHORIZATION df_ana;
SELECT regexp_replace(dp_test.outcome(q), '"[^"]*"', '"..."') AS result, replace(q, current_database(), '<this database>') AS statement
FROM unnest(ARRAY[
	$q$VACUUM$q$,
	$q$ANALYZE$q$,
	$q$VACUUM (ANALYZE)$q$,
	$q$REINDEX DATABASE $q$ || quote_ident(current_database())
]) AS q;
RESET SESSION AUTHORIZATION;
ALTER DATABASE :"DBNAME" OWNER TO :"db_owner";

-- nothing of the DBA's changed, nothing was charged
SELECT c.relname, count(DISTINCT k.oid) = s.constraints AS same_constraints,
       count(DISTINCT a.attnum) = s.columns AS same_columns
FROM pg_class c JOIN df.shape s ON s.relname = c.relname LEFT JOIN pg_constraint k ON k.conrelid = c.oid
     LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.oid IN ('df.rows'::regclass, 'df.child'::regclass, 'df.part'::regclass, 'dfa.kept'::regclass)
GROUP BY c.relname, s.constraints, s.columns ORDER BY 1;
SELECT count(*) AS charges FROM dp_pg.ledger WHERE role = 'df_ana'::regrole AND kind = 'charge';
-- the DBA (a superuser) still changes what the tables depend on
ALTER TABLE dfa.codes ADD COLUMN z int;
ALTER DOMAIN dfa.pos SET NOT NULL;

-- clean up: the tables, and the roles of this file with their budgets and ledger rows
SET client_min_messages = warning;
DROP SCHEMA df, dfa, dfo CASCADE;
RESET client_min_messages;
\set forget 'df_ana'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
