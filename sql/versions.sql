--
-- What PostgreSQL versions add to the catalog surface: a new pg_class column
-- or a new statistics function would be a new way to read a protected
-- table's size or counters.  Each test lists what it finds that dp_pg has
-- not classified (it must list nothing), so a version that adds one fails
-- here until dp_pg masks, refuses or knowingly allows it.  Run as the
-- analyst against a protected table that has been read, written, vacuumed
-- and analysed, so that every counter of it is non-zero.
--
CREATE ROLE ver_ana;
CREATE SCHEMA ver;
CREATE TABLE ver.t (id int PRIMARY KEY, v text);
INSERT INTO ver.t SELECT g, repeat('x', g % 100) FROM generate_series(1, 5000) g;
DELETE FROM ver.t WHERE id % 7 = 0;
VACUUM (ANALYZE) ver.t;
SELECT count(*) > 0 AS read FROM ver.t WHERE id > 10;
SELECT pg_stat_force_next_flush();
SELECT dp_pg.protect('ver.t') IS NOT NULL AS protected;
SELECT dp_pg.set_budget('ver_ana', 10, 1e-6) IS NOT NULL AS budget;
GRANT USAGE ON SCHEMA ver TO ver_ana;

-- 1. pg_class: every column is either masked for hidden relations (sizes and
-- counts of tuples and pages) or known not to reveal the table's contents
CREATE TEMP TABLE ver_class_masked (attname name);
INSERT INTO ver_class_masked VALUES ('reltuples'), ('relpages'), ('relallvisible'), ('relallfrozen');
SELECT attname AS unclassified_pg_class_column
FROM pg_attribute
WHERE attrelid = 'pg_class'::regclass AND attnum > 0 AND NOT attisdropped
  AND attname NOT IN (SELECT attname FROM ver_class_masked)
  AND attname NOT IN ('oid', 'relname', 'relnamespace', 'reltype', 'reloftype', 'relowner', 'relam',
                      'relfilenode', 'reltablespace', 'reltoastrelid', 'relhasindex', 'relisshared',
                      'relpersistence', 'relkind', 'relnatts', 'relchecks', 'relhasrules', 'relhastriggers',
                      'relhassubclass', 'relrowsecurity', 'relforcerowsecurity', 'relispopulated',
                      'relreplident', 'relispartition', 'relrewrite', 'relfrozenxid', 'relminmxid',
                      'relacl', 'reloptions', 'relpartbound')
ORDER BY 1;
-- the masked columns this server has read NULL for the analyst
GRANT SELECT ON ver_class_masked TO ver_ana;
SET ROLE ver_ana;
DO $$
DECLARE
	col name;
	val text;
	shown text := '';
BEGIN
	FOR col IN SELECT m.attname FROM ver_class_masked m
	           JOIN pg_attribute a ON a.attrelid = 'pg_class'::regclass AND a.attname = m.attname ORDER BY 1
	LOOP
		EXECUTE format('SELECT %I::text FROM pg_class WHERE oid = %L::regclass', col, 'ver.t') INTO val;
		IF val IS NOT NULL THEN
			shown := shown || format(' %s=%s', col, val);
		END IF;
	END LOOP;
	RAISE NOTICE 'pg_class size columns shown to the analyst:%', CASE WHEN shown = '' THEN ' none' ELSE shown END;
END $$;
RESET ROLE;

-- 2. statistics functions: every pg_stat_get_* function of this server,
-- called by the analyst with the protected table's oid (or the analyst's
-- own backend), returns NULL or is refused, unless it is on the list of
-- those that say nothing about tables (functions, backends' activity text
-- and times, archiver, replication, subscriptions)
CREATE TEMP TABLE ver_harmless (proname name);
INSERT INTO ver_harmless VALUES
	('pg_stat_get_activity'), ('pg_stat_get_archiver'), ('pg_stat_get_snapshot_timestamp'),
	('pg_stat_get_subscription'), ('pg_stat_get_subscription_stats'), ('pg_stat_get_replication_slot'),
	('pg_stat_get_wal_senders'), ('pg_stat_get_wal_receiver'), ('pg_stat_get_recovery_prefetch'),
	('pg_stat_get_backend_idset'), ('pg_stat_get_backend_pid'), ('pg_stat_get_backend_dbid'),
	('pg_stat_get_backend_userid'), ('pg_stat_get_backend_activity'), ('pg_stat_get_backend_wait_event'),
	('pg_stat_get_backend_wait_event_type'), ('pg_stat_get_backend_activity_start'),
	('pg_stat_get_backend_xact_start'), ('pg_stat_get_backend_start'), ('pg_stat_get_backend_client_addr'),
	('pg_stat_get_backend_client_port'), ('pg_stat_get_backend_subxact'),
	('pg_stat_get_function_calls'), ('pg_stat_get_function_total_time'), ('pg_stat_get_function_self_time'),
	('pg_stat_get_xact_function_calls'), ('pg_stat_get_xact_function_total_time'),
	('pg_stat_get_xact_function_self_time');
GRANT SELECT ON ver_harmless TO ver_ana;
-- the statistics functions that answer the current user (not NULL, zero or refused)
CREATE FUNCTION ver.answers() RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	f record;
	args text;
	val text;
	shown text[] := '{}';
BEGIN
	FOR f IN SELECT p.oid, p.proname, p.proretset, p.pronargs, p.proargtypes::oid[] AS types
	         FROM pg_proc p
	         WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname LIKE 'pg\_stat\_get\_%'
	           AND p.proname NOT IN (SELECT proname FROM ver_harmless)
	         ORDER BY p.proname, p.oid
	LOOP
		-- arguments: the table's oid, the analyst's backend (pid or index), or none
		SELECT string_agg(CASE t WHEN 'oid'::regtype THEN quote_literal('ver.t'::regclass::oid) || '::oid'
		                         WHEN 'regclass'::regtype THEN quote_literal('ver.t') || '::regclass'
		                         WHEN 'int4'::regtype THEN pg_backend_pid()::text
		                         WHEN 'text'::regtype THEN quote_literal('x')
		                         ELSE 'NULL::' || t::regtype::text END, ', ' ORDER BY o)
		INTO args FROM unnest(f.types) WITH ORDINALITY u(t, o);
		BEGIN
			IF f.proretset THEN
				EXECUTE format('SELECT string_agg(r::text, '','') FROM pg_catalog.%I(%s) r', f.proname, coalesce(args, '')) INTO val;
			ELSE
				EXECUTE format('SELECT pg_catalog.%I(%s)::text', f.proname, coalesce(args, '')) INTO val;
			END IF;
		EXCEPTION WHEN OTHERS THEN	-- refused, or not callable with these arguments
			val := NULL;
		END;
		IF val IS NOT NULL AND val NOT IN ('0', '', '(0)') THEN
			shown := shown || format('%s(%s)', f.proname, coalesce(args, ''));
		END IF;
	END LOOP;
	RETURN shown;
END $$;
GRANT USAGE ON SCHEMA ver TO ver_ana;
SET ROLE ver_ana;
SELECT ver.answers() AS answered_the_analyst;
RESET ROLE;

-- 3. positive control: the superuser sees the counters the analyst does not
SELECT cardinality(ver.answers()) >= 10 AS answered_the_superuser;
SELECT pg_stat_get_live_tuples('ver.t'::regclass) > 0 AS live, pg_stat_get_numscans('ver.t'::regclass) > 0 AS scans,
       (SELECT relpages > 0 FROM pg_class WHERE oid = 'ver.t'::regclass) AS pages;

DROP TABLE ver_class_masked, ver_harmless;
SELECT count(*) AS unprotected FROM (SELECT dp_pg.unprotect('ver.t')) s;
SELECT dp_pg.drop_budget('ver_ana') IS NOT NULL AS dropped;
DROP SCHEMA ver CASCADE;
-- the roles of this file, their budgets and ledger rows
\set forget 'ver_ana'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
