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
