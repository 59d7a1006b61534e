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

-- Row expressions with derived bounds (src/guard/bounds.c): a column in
-- arithmetic on a protected table is read through its value domain, totally
-- (NaN is NULL, values outside and infinities are clamped, a float or numeric
-- nearer to zero than 2^-60 of the larger bound is 0, a numeric gets a
-- bounded scale).  The guard writes these calls itself.
CREATE FUNCTION dp_pg.domain_read(int2, int2, int2) RETURNS int2
	AS 'MODULE_PATHNAME', 'dp_domain_read_int2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.domain_read(int4, int4, int4) RETURNS int4
	AS 'MODULE_PATHNAME', 'dp_domain_read_int4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.domain_read(int8, int8, int8) RETURNS int8
	AS 'MODULE_PATHNAME', 'dp_domain_read_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.domain_read(real, real, real) RETURNS real
	AS 'MODULE_PATHNAME', 'dp_domain_read_float4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.domain_read(float8, float8, float8) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_domain_read_float8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.domain_read(numeric, numeric, numeric) RETURNS numeric
	AS 'MODULE_PATHNAME', 'dp_domain_read_numeric' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
-- the same in canonical form (trailing zeros trimmed), for GROUP BY keys
CREATE FUNCTION dp_pg.domain_key_read(numeric, numeric, numeric) RETURNS numeric
	AS 'MODULE_PATHNAME', 'dp_domain_key_read_numeric' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.domain_read(date, date, date) RETURNS date
	AS 'MODULE_PATHNAME', 'dp_domain_read_date' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.domain_read(timestamp, timestamp, timestamp) RETURNS timestamp
	AS 'MODULE_PATHNAME', 'dp_domain_read_timestamp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.domain_read(timestamptz, timestamptz, timestamptz) RETURNS timestamptz
	AS 'MODULE_PATHNAME', 'dp_domain_read_timestamp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- BI aggregates answered from other releases (src/moments.c,
-- src/guard/derived.c): STDDEV / VARIANCE from three noisy moments,
-- count(DISTINCT <column with public keys>) from a histogram over the keys.
-- Post-processing of released values: they read no data, charge nothing.
CREATE FUNCTION dp_pg.variance_from_moments(n int8, s1 float8, s2 float8, h float8, sample boolean, root boolean)
	RETURNS float8 AS 'MODULE_PATHNAME', 'dp_variance_from_moments' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.variance_from_moments(int8, float8, float8, float8, boolean, boolean) IS
	'the variance (its square root with root) estimated from a noisy count and noisy sums of x - c and (x - c)^2 of values within c +- h';
CREATE FUNCTION dp_pg.present_keys(h jsonb, mech dp_mechanism, rows int8, groups int4)
	RETURNS int8 AS 'MODULE_PATHNAME', 'dp_present_keys' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.present_keys(jsonb, dp_mechanism, int8, int4) IS
	'the bins of a released histogram whose noisy count exceeds its noise''s 1 - 0.05/bins quantile';
