--
-- First test of `make installcheck`: the server is ready for the suite, and
-- what exists before it runs is written down, so that the last test
-- (cleanup.sql) can check that the suite left nothing behind: no role, no
-- budget, no ledger row, no refused query, no kept answer (the answers kept
-- before it are written down as they are: a server may hold those of roles
-- dropped before dp_pg forgot them with the role).
--
-- dp_pg is preloaded and its ledger (in dp_pg.ledger_database) is ready
SELECT dp_pg.ledger_status();
SELECT current_setting('shared_preload_libraries') ~ '(^|[ ,])dp_pg($|[ ,])' AS preloaded;
-- the suites count the charges of repeated identical queries: the answer
-- cache is off in the regression database (cache.sql turns it on where it
-- tests it); the setting goes with the database
ALTER DATABASE :"DBNAME" SET dp_pg.answer_cache = off;
-- what the server holds before the suite
CREATE TABLE public.dp_regress_before AS
SELECT (SELECT array_agg(oid) FROM pg_roles) AS roles,
       (SELECT coalesce(max(id), 0) FROM dp_pg.ledger) AS ledger_id,
       (SELECT coalesce(max(id), 0) FROM dp_pg.guard_refusals) AS refusal_id,
       (SELECT coalesce(array_agg(roles::oid[]::text || ' ' || released_at), '{}') FROM dp_pg.answer_cache) AS answers;
