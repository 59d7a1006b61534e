/* dp_pg 0.1.0 -> 0.2.0 upgrade script */

\echo Use "ALTER EXTENSION dp_pg UPDATE TO '0.2.0'" to load this file. \quit

-- Every catalog change of 0.2.0 is made here as well as in dp_pg--0.2.0.sql:
-- a database updated from 0.1.0 must end with the catalog of a fresh 0.2.0
-- install (the upgrade test compares every member object and its definition).

-- Canonical released keys (src/canonical.c, src/guard/canonical.c): the guard
-- releases every GROUP BY key in its canonical spelling, so that a released
-- key is a function of its equality class, never of one row's spelling
-- (numeric 5.000 is 5, float -0 is 0, interval 24 hours is 1 day, ...).
CREATE FUNCTION dp_pg.canonical_key(anyelement) RETURNS anyelement
	AS 'MODULE_PATHNAME', 'dp_canonical_key' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.canonical_key(anyelement) IS
	'the canonical spelling of a key (trailing zeros of numbers trimmed, -0 as 0, intervals justified, ...)';

-- An order on dp_mechanism (family, form, parameters): with it the
-- mechanism argument of dp_count(DISTINCT <privacy unit>, <mechanism>) can be
-- sorted with the unit, as DISTINCT in an aggregate requires.
CREATE FUNCTION dp_pg.mechanism_cmp(dp_mechanism, dp_mechanism) RETURNS int4
	AS 'MODULE_PATHNAME', 'dp_mechanism_cmp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.mechanism_lt(dp_mechanism, dp_mechanism) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_mechanism_lt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.mechanism_le(dp_mechanism, dp_mechanism) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_mechanism_le' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.mechanism_gt(dp_mechanism, dp_mechanism) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_mechanism_gt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.mechanism_ge(dp_mechanism, dp_mechanism) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_mechanism_ge' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.mechanism_ne(dp_mechanism, dp_mechanism) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_mechanism_ne' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR < (LEFTARG = dp_mechanism, RIGHTARG = dp_mechanism, FUNCTION = dp_pg.mechanism_lt,
	COMMUTATOR = >, NEGATOR = >=);
CREATE OPERATOR <= (LEFTARG = dp_mechanism, RIGHTARG = dp_mechanism, FUNCTION = dp_pg.mechanism_le,
	COMMUTATOR = >=, NEGATOR = >);
CREATE OPERATOR > (LEFTARG = dp_mechanism, RIGHTARG = dp_mechanism, FUNCTION = dp_pg.mechanism_gt,
	COMMUTATOR = <, NEGATOR = <=);
CREATE OPERATOR >= (LEFTARG = dp_mechanism, RIGHTARG = dp_mechanism, FUNCTION = dp_pg.mechanism_ge,
	COMMUTATOR = <=, NEGATOR = <);
CREATE OPERATOR <> (LEFTARG = dp_mechanism, RIGHTARG = dp_mechanism, FUNCTION = dp_pg.mechanism_ne,
	COMMUTATOR = <>, NEGATOR = =);
CREATE OPERATOR CLASS dp_pg.mechanism_ops DEFAULT FOR TYPE dp_mechanism USING btree AS
	OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
	FUNCTION 1 dp_pg.mechanism_cmp(dp_mechanism, dp_mechanism);
-- Synthetic twins (src/synth; docs/analyst.md, "Synthetic twins"): a new
-- table owned by the caller, filled with rows drawn from a model fitted to
-- differentially private measurements of a protected table, charged once
-- with the cost of the mechanism.
CREATE FUNCTION dp_pg.synthesize(source regclass, target text, mechanism dp_mechanism,
	columns name[] DEFAULT NULL, bins int DEFAULT 10, rows bigint DEFAULT NULL)
	RETURNS bigint AS 'MODULE_PATHNAME', 'dp_synthesize' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dp_pg.synthesize(regclass, text, dp_mechanism, name[], int, bigint) IS
	'make table target, a synthetic twin of a protected table: rows drawn from differentially private 1-way and 2-way marginals, charged once with the cost of mechanism; returns its number of rows';
