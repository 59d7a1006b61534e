/* dp_pg 0.1.0 -> 0.2.0 upgrade script */

\echo Use "ALTER EXTENSION dp_pg UPDATE TO '0.2.0'" to load this file. \quit

-- Every catalog change of 0.2.0 is made here as well as in dp_pg--0.2.0.sql:
-- a database updated from 0.1.0 must end with the catalog of a fresh 0.2.0
-- install (the upgrade test compares every member object and its definition).

-- Synthetic twins (src/synth; docs/analyst.md, "Synthetic twins"): a new
-- table owned by the caller, filled with rows drawn from a model fitted to
-- differentially private measurements of a protected table, charged once
-- with the cost of the mechanism.
CREATE FUNCTION dp_pg.synthesize(source regclass, target text, mechanism dp_mechanism,
	columns name[] DEFAULT NULL, bins int DEFAULT 10, rows bigint DEFAULT NULL)
	RETURNS bigint AS 'MODULE_PATHNAME', 'dp_synthesize' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dp_pg.synthesize(regclass, text, dp_mechanism, name[], int, bigint) IS
	'make table target, a synthetic twin of a protected table: rows drawn from differentially private 1-way and 2-way marginals, charged once with the cost of mechanism; returns its number of rows';

-- Monitoring without a superuser (docs/dba.md, "Monitoring"): members of
-- pg_read_all_stats, and so of pg_monitor (what a monitoring agent such as
-- Prometheus' postgres_exporter logs in as), read every role's rows of
-- dp_pg.budgets and dp_pg.ledger (granted to PUBLIC; the C functions decide
-- the rows), the log of refused queries and the kept answers' metadata.  The
-- C functions keep a member that is an analyst to its own rows.
GRANT EXECUTE ON FUNCTION dp_pg.refusal_rows() TO pg_read_all_stats;
GRANT SELECT ON dp_pg.guard_refusals TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION dp_pg.answer_cache_rows() TO pg_read_all_stats;
GRANT SELECT ON dp_pg.answer_cache TO pg_read_all_stats;
COMMENT ON VIEW dp_pg.guard_refusals IS 'refused analyst queries (who, when, which rule), newest dp_pg.refusal_log_size kept; superusers and monitoring roles (pg_read_all_stats, pg_monitor) without a budget, from any database';
COMMENT ON VIEW dp_pg.answer_cache IS
	'the kept answers of every budget set (superusers and monitoring roles without a budget): served again uncharged to the same budgets until a table they read changes';
