--
-- message_floor: no message below NOTICE reaches an analyst, whatever the
-- statement (utility statements included) and whichever way
-- client_min_messages arrives: SET, SET LOCAL, set_config(), ALTER ROLE ...
-- SET, PGOPTIONS, a function's SET clause, or a session that becomes an
-- analyst's after lowering it (guard/session.c).  Each case runs DDL whose
-- DEBUG1 lines ("CREATE TABLE / PRIMARY KEY will create implicit index ...")
-- would appear in this file if they reached the analyst; other roles keep
-- their setting.
--
CREATE SCHEMA mf;
CREATE ROLE mf_ana LOGIN;
GRANT USAGE, CREATE ON SCHEMA mf TO mf_ana;
SELECT dp_pg.set_budget('mf_ana', 10, 1e-6);
-- a superuser's function with a SET clause, which an analyst may call
CREATE FUNCTION mf.noisy() RETURNS text LANGUAGE plpgsql SET client_min_messages = debug1 AS $$
BEGIN
	CREATE TABLE IF NOT EXISTS mf.by_function (a int PRIMARY KEY);
	DROP TABLE mf.by_function;
	RETURN current_setting('client_min_messages');
END $$;
GRANT EXECUTE ON FUNCTION mf.noisy() TO mf_ana;

-- the superuser's own setting is its own
SELECT current_user AS superuser \gset
SET client_min_messages = debug1;
SHOW client_min_messages;
RESET client_min_messages;

\c - mf_ana
-- SET: raised to NOTICE, so the DDL below says nothing
SET client_min_messages = debug1;
SHOW client_min_messages;
CREATE TABLE mf.t1 (a int PRIMARY KEY);
-- set_config(), and SET LOCAL in a transaction
SELECT set_config('client_min_messages', 'log', false) AS set_config;
CREATE TABLE mf.t2 (a int PRIMARY KEY);
BEGIN;
SET LOCAL client_min_messages = debug1;
SHOW client_min_messages;
CREATE TABLE mf.t3 (a int PRIMARY KEY);
COMMIT;
-- a function's SET clause
SELECT mf.noisy() AS in_function;
-- raising the floor is the analyst's choice
SET client_min_messages = warning;
SHOW client_min_messages;
RESET client_min_messages;
SHOW client_min_messages;
-- ALTER ROLE ... SET (applied at the next login)
ALTER ROLE mf_ana SET client_min_messages = debug1;
\c - mf_ana
SHOW client_min_messages;
CREATE TABLE mf.t4 (a int PRIMARY KEY);
ALTER ROLE mf_ana RESET client_min_messages;
-- PGOPTIONS (the connection's options)
\c -reuse-previous=on "user=mf_ana options=-cclient_min_messages=debug1"
SHOW client_min_messages;
CREATE TABLE mf.t5 (a int PRIMARY KEY);

-- a session that lowered the setting before it became an analyst's: its next
-- statement raises it again
\c - :"superuser"
SET client_min_messages = debug1;
SET SESSION AUTHORIZATION mf_ana;
CREATE TABLE mf.t6 (a int PRIMARY KEY);
SHOW client_min_messages;
RESET SESSION AUTHORIZATION;
SET client_min_messages = notice;
SELECT count(*) AS tables_made FROM pg_tables WHERE schemaname = 'mf';

-- clean up: the tables, and the roles of this file with their budgets and ledger rows
SET client_min_messages = warning;
DROP SCHEMA mf CASCADE;
RESET client_min_messages;
\set forget 'mf_ana'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
