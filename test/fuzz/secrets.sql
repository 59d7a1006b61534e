-- test/fuzz/secrets.sql — the canary secrets of test/fuzz/setup.sql, computed
-- as superuser before sqlsmith runs; one line each for test/fuzz/replay.pl:
-- "P text" case-insensitive substring, "S text" exact text, "N number" token.
\set ON_ERROR_STOP 1
CREATE TEMP TABLE secret_rels AS
SELECT c.oid FROM pg_class c
WHERE c.oid IN (SELECT relid FROM dp_pg.protected_tables)
   OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT relid FROM dp_pg.protected_tables))
   OR c.oid IN (SELECT reltoastrelid FROM pg_class WHERE oid IN (SELECT relid FROM dp_pg.protected_tables));
INSERT INTO secret_rels
SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM secret_rels WHERE oid::regclass::text LIKE 'pg_toast.%');

-- sizes of a set of relations, in bytes (only distinctive ones: >= 64 kB)
CREATE TEMP VIEW rel_sizes AS
SELECT c.oid, s.bytes
FROM pg_class c,
     LATERAL (VALUES (pg_relation_size(c.oid)), (pg_relation_size(c.oid, 'fsm')),
                     (pg_relation_size(c.oid, 'vm')), (pg_table_size(c.oid)),
                     (pg_indexes_size(c.oid)), (pg_total_relation_size(c.oid))) s(bytes)
WHERE c.relkind IN ('r', 'i', 't', 'm') AND s.bytes >= 65536;

CREATE TEMP TABLE secrets (line text);
INSERT INTO secrets VALUES ('P cnry_'), ('P ' || encode('cnry_', 'hex')), ('P _yrnc'), ('P Y25yeV');
INSERT INTO secrets SELECT DISTINCT 'N ' || ssn FROM patients;
INSERT INTO secrets SELECT DISTINCT 'N ' || amount FROM visits;
INSERT INTO secrets SELECT 'N ' || count(*) FROM patients;
INSERT INTO secrets SELECT 'N ' || count(*) FROM visits;
INSERT INTO secrets SELECT DISTINCT 'N ' || bytes FROM rel_sizes WHERE oid IN (SELECT oid FROM secret_rels);
INSERT INTO secrets SELECT DISTINCT 'S ' || pg_size_pretty(bytes) FROM rel_sizes WHERE oid IN (SELECT oid FROM secret_rels);

-- a secret must not be a number or size the analyst may read anyway (another
-- relation's size or row estimate): a match would prove nothing, so such a
-- secret is left out (relation sizes differ by server version, and one of
-- them can equal a catalog's); the row counts and values must stay
CREATE TEMP TABLE clashes AS
SELECT line FROM secrets
WHERE line IN (SELECT 'N ' || bytes FROM rel_sizes WHERE oid NOT IN (SELECT oid FROM secret_rels)
               UNION SELECT 'S ' || pg_size_pretty(bytes) FROM rel_sizes WHERE oid NOT IN (SELECT oid FROM secret_rels)
               UNION SELECT 'N ' || reltuples::bigint FROM pg_class WHERE oid NOT IN (SELECT oid FROM secret_rels));
DELETE FROM secrets WHERE line IN (SELECT line FROM clashes);
DO $$
BEGIN
	IF EXISTS (SELECT FROM clashes WHERE line IN (SELECT 'N ' || count(*) FROM patients UNION ALL SELECT 'N ' || count(*) FROM visits)) THEN
		RAISE EXCEPTION 'fuzz set-up: a row count equals a value the analyst may read legitimately: %',
			(SELECT string_agg(line, ', ') FROM clashes);
	END IF;
END $$;
\pset format unaligned
\pset tuples_only on
SELECT line FROM secrets ORDER BY line;
