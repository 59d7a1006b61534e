/* dp_pg 0.1.0 -> 0.2.0 upgrade script */

\echo Use "ALTER EXTENSION dp_pg UPDATE TO '0.2.0'" to load this file. \quit

-- Every catalog change of 0.2.0 is made here as well as in dp_pg--0.2.0.sql:
-- a database updated from 0.1.0 must end with the catalog of a fresh 0.2.0
-- install (the upgrade test compares every member object and its definition).

-- Canonical released keys (src/common/canonical.c, src/guard/canonical.c): the guard
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

--
-- Accuracy: what each error bar covers, an average's and a quantile's own
-- intervals (new columns of dp_pg.last_releases and dp_pg.error_bars, which
-- are made again); protect() warns only of privileges it revoked; dp_sum and
-- dp_avg without a mechanism; the bounds helpers.
--
DROP VIEW dp_pg.last_releases;
DROP FUNCTION dp_pg.last_release_rows();
DROP FUNCTION dp_pg.error_bars(text);
-- Error bars of the session's last dp query (served from the cache or not):
-- one row per call site (per released value for dp_avg, whose interval is
-- its own); free (public parameters and released values only).
CREATE FUNCTION dp_pg.last_release_rows(OUT site int, OUT aggregate text, OUT mechanism text,
	OUT noise_sd float8, OUT ci95_halfwidth float8, OUT epsilon float8, OUT delta float8, OUT rho float8,
	OUT from_cache boolean, OUT released_at timestamptz, OUT value float8, OUT ci95_lower float8,
	OUT ci95_upper float8, OUT ci95_rank_halfwidth float8, OUT note text)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'dp_last_releases' LANGUAGE C VOLATILE;
CREATE VIEW dp_pg.last_releases AS SELECT * FROM dp_pg.last_release_rows();
CREATE FUNCTION dp_pg.error_bars(query text, OUT site int, OUT aggregate text, OUT mechanism text,
	OUT noise_sd float8, OUT ci95_halfwidth float8, OUT epsilon float8, OUT delta float8, OUT rho float8,
	OUT ci95_rank_halfwidth float8, OUT note text)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'dp_error_bars' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION dp_pg.error_bars(text) IS
	'the error bars a query''s answers have: planned, not run, not charged (its noise depends on public parameters only); note says what each interval covers';
GRANT SELECT ON dp_pg.last_releases TO PUBLIC;
COMMENT ON VIEW dp_pg.last_releases IS
	'the error bar of each value the session''s last dp query released: the closed 95% interval [answer - h, answer + h] of the noise (h = ci95_halfwidth), an average''s own [ci95_lower, ci95_upper], a quantile''s rank interval; note says what each covers (clamping and unit bounding are in none)';

-- the interval is closed: its ends are included
COMMENT ON FUNCTION dp_confidence_interval(float8, dp_mechanism, float8, float8) IS
	'closed interval [lower, upper] (both ends included) that covers the true answer with probability at least level';

-- protect(): only privileges granted to the analyst itself are revoked (and warned of)
CREATE OR REPLACE FUNCTION dp_pg.revoke_from_analysts(tbl regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	r regrole;
BEGIN
	-- privileges granted to the analyst itself, on the table or its columns
	-- (what REVOKE ... FROM it removes; those of dp_pg_analyst are protect()'s)
	FOR r IN SELECT b.role FROM dp_pg.budgets b
	         WHERE b.role <> (SELECT relowner FROM pg_class WHERE oid = tbl)
	           AND (EXISTS (SELECT 1 FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = tbl AND a.grantee = b.role)
	                OR EXISTS (SELECT 1 FROM pg_attribute t, aclexplode(t.attacl) a
	                           WHERE t.attrelid = tbl AND a.grantee = b.role))
	LOOP
		EXECUTE format('REVOKE ALL ON %s FROM %s', tbl, r);
		RAISE WARNING 'revoked the privileges of analyst % on protected table %', r, tbl;
	END LOOP;
END $$;

--
-- dp_sum(x, lower, upper) and dp_avg(x, lower, upper) without a mechanism
-- (src/aggregates/agg_sum.c): dp_pg.default_mechanism, like dp_count(*).  The
-- transition functions are the four-argument forms' C functions (they never
-- read the mechanism); the final functions name the kind.
--
CREATE FUNCTION dp_sum_int2_trans(int8, int2, int2, int2) RETURNS int8
	AS 'MODULE_PATHNAME', 'dp_sum_int2_trans' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_sum_int4_trans(int8, int4, int4, int4) RETURNS int8
	AS 'MODULE_PATHNAME', 'dp_sum_int4_trans' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_sum_int_default_final(int8) RETURNS int8
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE AGGREGATE dp_sum(int2, int2, int2) (
	SFUNC = dp_sum_int2_trans,
	STYPE = int8,
	COMBINEFUNC = pg_catalog.int8pl,
	FINALFUNC = dp_sum_int_default_final,
	INITCOND = '0',
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE dp_sum(int2, int2, int2) IS
	'noisy sum of values clamped to [lower, upper], mechanism from dp_pg.default_mechanism';
CREATE AGGREGATE dp_sum(int4, int4, int4) (
	SFUNC = dp_sum_int4_trans,
	STYPE = int8,
	COMBINEFUNC = pg_catalog.int8pl,
	FINALFUNC = dp_sum_int_default_final,
	INITCOND = '0',
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE dp_sum(int4, int4, int4) IS
	'noisy sum of values clamped to [lower, upper], mechanism from dp_pg.default_mechanism';
CREATE FUNCTION dp_sum_int8_trans(internal, int8, int8, int8) RETURNS internal
	AS 'MODULE_PATHNAME', 'dp_sum_int8_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION dp_sum_int8_default_final(internal) RETURNS int8
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE AGGREGATE dp_sum(int8, int8, int8) (
	SFUNC = dp_sum_int8_trans,
	STYPE = internal,
	SSPACE = 48,
	COMBINEFUNC = dp_sum_fixed_combine,
	SERIALFUNC = dp_sum_fixed_serialize,
	DESERIALFUNC = dp_sum_int8_deserialize,
	FINALFUNC = dp_sum_int8_default_final,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE dp_sum(int8, int8, int8) IS
	'noisy sum of values clamped to [lower, upper], mechanism from dp_pg.default_mechanism';
CREATE FUNCTION dp_sum_float8_trans(internal, float8, float8, float8) RETURNS internal
	AS 'MODULE_PATHNAME', 'dp_sum_float8_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION dp_sum_float8_default_final(internal) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE AGGREGATE dp_sum(float8, float8, float8) (
	SFUNC = dp_sum_float8_trans,
	STYPE = internal,
	SSPACE = 48,
	COMBINEFUNC = dp_sum_fixed_combine,
	SERIALFUNC = dp_sum_fixed_serialize,
	DESERIALFUNC = dp_sum_float8_deserialize,
	FINALFUNC = dp_sum_float8_default_final,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE dp_sum(float8, float8, float8) IS
	'noisy sum of values clamped to [lower, upper], mechanism from dp_pg.default_mechanism';
CREATE FUNCTION dp_sum_numeric_trans(internal, numeric, numeric, numeric) RETURNS internal
	AS 'MODULE_PATHNAME', 'dp_sum_numeric_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION dp_sum_numeric_default_final(internal) RETURNS numeric
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE AGGREGATE dp_sum(numeric, numeric, numeric) (
	SFUNC = dp_sum_numeric_trans,
	STYPE = internal,
	SSPACE = 128,
	COMBINEFUNC = pg_catalog.numeric_avg_combine,
	SERIALFUNC = pg_catalog.numeric_avg_serialize,
	DESERIALFUNC = pg_catalog.numeric_avg_deserialize,
	FINALFUNC = dp_sum_numeric_default_final,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE dp_sum(numeric, numeric, numeric) IS
	'noisy sum of values clamped to [lower, upper], mechanism from dp_pg.default_mechanism';
CREATE FUNCTION dp_avg_trans(internal, float8, float8, float8) RETURNS internal
	AS 'MODULE_PATHNAME', 'dp_avg_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION dp_avg_default_final(internal) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE AGGREGATE dp_avg(float8, float8, float8) (
	SFUNC = dp_avg_trans,
	STYPE = internal,
	SSPACE = 48,
	COMBINEFUNC = dp_sum_fixed_combine,
	SERIALFUNC = dp_sum_fixed_serialize,
	DESERIALFUNC = dp_avg_deserialize,
	FINALFUNC = dp_avg_default_final,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE dp_avg(float8, float8, float8) IS
	'noisy mean of values clamped to [lower, upper], mechanism from dp_pg.default_mechanism (half on the sum, half on the count)';

--
-- Choosing a privacy unit's bounds (docs/dba.md, "Choosing the bounds"): how
-- many rows and groups the units of a table have, and what each candidate
-- (max_groups_contributed, max_rows_per_unit) keeps of its rows and of a
-- column's total.  They read raw rows: for the DBA (superuser, or a role the
-- DBA grants EXECUTE and that may read the table), never for analysts.
--
CREATE FUNCTION dp_pg.bounds_source(tbl regclass, group_by name, privacy_unit name)
RETURNS name LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	unit name := privacy_unit;
BEGIN
	IF tbl IS NULL THEN
		RAISE EXCEPTION 'table must not be null' USING ERRCODE = '22004';
	END IF;
	IF EXISTS (SELECT 1 FROM dp_pg.charged_roles()) THEN
		RAISE EXCEPTION 'the bounds helpers read raw rows: they are for the DBA, not for analysts'
			USING ERRCODE = '42501';
	END IF;
	IF unit IS NULL THEN
		SELECT p.privacy_unit INTO unit FROM dp_pg.protected_tables p WHERE p.relid = tbl;
	END IF;
	IF unit IS NULL THEN
		RAISE EXCEPTION 'table "%" has no privacy unit', tbl
			USING ERRCODE = '22023', HINT = 'Name the unit column (privacy_unit => ...), or declare it with dp_pg.protect().';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = tbl AND attname = unit AND attnum > 0 AND NOT attisdropped) THEN
		RAISE EXCEPTION 'column "%" of "%" does not exist', unit, tbl USING ERRCODE = '42703';
	END IF;
	IF group_by IS NOT NULL AND NOT EXISTS (
		SELECT 1 FROM pg_attribute WHERE attrelid = tbl AND attname = group_by AND attnum > 0 AND NOT attisdropped) THEN
		RAISE EXCEPTION 'column "%" of "%" does not exist', group_by, tbl USING ERRCODE = '42703';
	END IF;
	RETURN unit;
END $$;

CREATE FUNCTION dp_pg.unit_profile(tbl regclass, group_by name DEFAULT NULL, privacy_unit name DEFAULT NULL)
RETURNS TABLE (statistic text, rows_per_unit float8, groups_per_unit float8, rows_per_unit_and_group float8)
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	unit name := dp_pg.bounds_source(tbl, group_by, privacy_unit);
BEGIN
	RETURN QUERY EXECUTE format($q$
		WITH uc AS (SELECT %1$I AS u, %2$s AS c, count(*)::float8 AS n FROM %3$s GROUP BY 1, 2),
		     uu AS (SELECT sum(n) AS n, count(*)::float8 AS g FROM uc GROUP BY u),
		     s(statistic, q) AS (VALUES ('min', 0.0::float8), ('p25', 0.25), ('median', 0.5), ('p75', 0.75),
		                               ('p90', 0.9), ('p99', 0.99), ('max', 1.0))
		SELECT 'units', (SELECT count(*)::float8 FROM uu), NULL::float8, (SELECT count(*)::float8 FROM uc)
		UNION ALL
		SELECT 'mean', (SELECT avg(n) FROM uu), (SELECT avg(g) FROM uu), (SELECT avg(n) FROM uc)
		UNION ALL
		(SELECT s.statistic,
		        (SELECT percentile_disc(s.q) WITHIN GROUP (ORDER BY n) FROM uu),
		        (SELECT percentile_disc(s.q) WITHIN GROUP (ORDER BY g) FROM uu),
		        (SELECT percentile_disc(s.q) WITHIN GROUP (ORDER BY n) FROM uc)
		 FROM s ORDER BY s.q)$q$,
		unit, CASE WHEN group_by IS NULL THEN '0' ELSE quote_ident(group_by) END, tbl);
END $$;
COMMENT ON FUNCTION dp_pg.unit_profile(regclass, name, name) IS
	'how many rows (and groups of group_by) the privacy units of a table have: count, mean and percentiles (DBA only: reads raw rows)';

CREATE FUNCTION dp_pg.bound_choices(tbl regclass, group_by name DEFAULT NULL, value_column name DEFAULT NULL,
	lower numeric DEFAULT NULL, upper numeric DEFAULT NULL,
	max_groups int[] DEFAULT '{1,2,3,5,10}', max_rows int[] DEFAULT '{1,2,3,5,10,20,50}',
	privacy_unit name DEFAULT NULL)
RETURNS TABLE (max_groups_contributed int, max_rows_per_unit int, units_whole float8, rows_kept float8,
	total_kept float8)
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	unit name := dp_pg.bounds_source(tbl, group_by, privacy_unit);
	x text := 'NULL::numeric';
	gs int[];
	rs int[];
	lo numeric := lower;
	hi numeric := upper;
BEGIN
	IF value_column IS NOT NULL THEN
		IF NOT EXISTS (SELECT 1 FROM pg_attribute
		               WHERE attrelid = tbl AND attname = value_column AND attnum > 0 AND NOT attisdropped) THEN
			RAISE EXCEPTION 'column "%" of "%" does not exist', value_column, tbl USING ERRCODE = '42703';
		END IF;
		x := format('(%I)::numeric', value_column);
		-- the bounds of the column's values when none are given: clamping then moves nothing
		IF lo IS NULL OR hi IS NULL THEN
			EXECUTE format('SELECT min(%1$s), max(%1$s) FROM %2$s WHERE %1$s <> ''NaN''', x, tbl)
				INTO STRICT lower, upper;
			lo := coalesce(lo, lower);
			hi := coalesce(hi, upper);
		END IF;
		IF lo > hi THEN
			RAISE EXCEPTION 'lower must not be greater than upper' USING ERRCODE = '22023';
		END IF;
	END IF;
	-- the candidates, with the table's declared bounds among them
	SELECT array_agg(DISTINCT v ORDER BY v) INTO gs
	FROM unnest(max_groups || (SELECT array_agg(p.max_groups_contributed) FROM dp_pg.protected_tables p
	                           WHERE p.relid = tbl)) v WHERE v IS NOT NULL;
	SELECT array_agg(DISTINCT v ORDER BY v) INTO rs
	FROM unnest(max_rows || (SELECT array_agg(p.max_rows_per_unit) FROM dp_pg.protected_tables p
	                         WHERE p.relid = tbl)) v WHERE v IS NOT NULL;
	IF gs IS NULL OR rs IS NULL OR gs[1] < 1 OR rs[1] < 1 THEN
		RAISE EXCEPTION 'the candidate bounds must be positive' USING ERRCODE = '22023';
	END IF;
	IF group_by IS NULL THEN
		gs := ARRAY[1];		-- one group per unit: max_groups_contributed does not matter
	END IF;
	-- per (unit, group): rows n, values k, clamped sum s (each unit's sum is then
	-- clamped to [least(k, r) lo, least(k, r) hi]); a unit with c groups keeps
	-- each with probability least(1, g / c) (g of them at random)
	RETURN QUERY EXECUTE format($q$
		WITH uc AS (SELECT %1$I AS u, count(*)::float8 AS n, count(%3$s)::float8 AS k,
		                   sum(least(greatest(%3$s, $1), $2))::float8 AS s, sum(%3$s)::float8 AS raw
		            FROM %4$s GROUP BY %1$I, %2$s),
		     j AS (SELECT n, k, s, (count(*) OVER w)::float8 AS c, max(n) OVER w AS most, row_number() OVER w = 1 AS first
		           FROM uc WINDOW w AS (PARTITION BY u)),
		     d AS (SELECT n, k, s, c, most, first, count(*)::float8 AS m FROM j GROUP BY 1, 2, 3, 4, 5, 6),
		     tot AS (SELECT sum(n) AS n, sum(raw) AS raw FROM uc)
		SELECT CASE WHEN $5 THEN g END, r,
		       sum(m) FILTER (WHERE first AND c <= g AND most <= r) / sum(m) FILTER (WHERE first),
		       sum(m * least(d.n, r) * least(1.0, g / c)) / max(tot.n),
		       sum(m * coalesce(least(greatest(s, least(k, r) * $1::float8), least(k, r) * $2::float8), 0)
		           * least(1.0, g / c)) / nullif(max(tot.raw), 0)
		FROM d, tot, unnest($3) g, unnest($4) r
		GROUP BY g, r ORDER BY g, r$q$,
		unit, CASE WHEN group_by IS NULL THEN '0::int' ELSE quote_ident(group_by) END, x, tbl)
	USING lo, hi, gs, rs, group_by IS NOT NULL;
END $$;
COMMENT ON FUNCTION dp_pg.bound_choices(regclass, name, name, numeric, numeric, int[], int[], name) IS
	'for each candidate (max_groups_contributed, max_rows_per_unit): the share of units kept whole, of rows and of a column''s total that the bounding keeps (DBA only: reads raw rows)';
REVOKE EXECUTE ON FUNCTION dp_pg.bounds_source(regclass, name, name), dp_pg.unit_profile(regclass, name, name),
	dp_pg.bound_choices(regclass, name, name, numeric, numeric, int[], int[], name) FROM PUBLIC;

-- Synthetic twins (src/synth; docs/analyst.md, "Synthetic twins"): a new
-- table owned by the caller, filled with rows drawn from a model fitted to
-- differentially private measurements of a protected table, charged once
-- with the cost of the mechanism.
CREATE FUNCTION dp_pg.synthesize(source regclass, target text, mechanism dp_mechanism,
	columns name[] DEFAULT NULL, bins int DEFAULT 10, rows bigint DEFAULT NULL)
	RETURNS bigint AS 'MODULE_PATHNAME', 'dp_synthesize' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dp_pg.synthesize(regclass, text, dp_mechanism, name[], int, bigint) IS
	'make table target, a synthetic twin of a protected table: rows drawn from differentially private 1-way and 2-way marginals, charged once with the cost of mechanism; returns its number of rows';

--
-- Names, not OIDs (docs/dba.md, "Backup, restore and upgrades"): roles are
-- stored as regrole, tables as regclass, the refusal log's database as its
-- name.  Rows of roles dropped before 0.2.0 kept a bare OID that another
-- role may hold after a restore: they lose it (detail keeps the old OID).
--
ALTER TABLE dp_pg.ledger_entries ALTER COLUMN role DROP NOT NULL, ALTER COLUMN requested_by DROP NOT NULL;
UPDATE dp_pg.ledger_entries e SET role = NULL,
	detail = coalesce(e.detail, '{}') || jsonb_build_object('dropped_role_oid', e.role::bigint)
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid = e.role);
UPDATE dp_pg.ledger_entries e SET requested_by = NULL,
	detail = coalesce(e.detail, '{}') || jsonb_build_object('dropped_requested_by_oid', e.requested_by::bigint)
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid = e.requested_by);
ALTER TABLE dp_pg.ledger_entries ALTER COLUMN role TYPE regrole, ALTER COLUMN requested_by TYPE regrole;
ALTER TABLE dp_pg.budget_limits ALTER COLUMN role TYPE regrole;

UPDATE dp_pg.guard_refusal_log e SET role = NULL WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid = e.role);
UPDATE dp_pg.guard_refusal_log e SET as_role = NULL WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid = e.as_role);
CREATE FUNCTION dp_pg.upgrade_database_name(oid) RETURNS text
	LANGUAGE sql STABLE AS 'SELECT datname::text FROM pg_catalog.pg_database WHERE oid = $1';
ALTER TABLE dp_pg.guard_refusal_log ALTER COLUMN role TYPE regrole, ALTER COLUMN as_role TYPE regrole,
	ALTER COLUMN database TYPE text USING dp_pg.upgrade_database_name(database);
DROP FUNCTION dp_pg.upgrade_database_name(oid);
DROP VIEW dp_pg.guard_refusals;
DROP FUNCTION dp_pg.refusal_rows();
CREATE FUNCTION dp_pg.refusal_rows(OUT id bigint, OUT refused_at timestamptz, OUT role regrole,
	OUT as_role regrole, OUT database text, OUT sqlstate text, OUT rule text, OUT query text)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'dp_refusal_rows' LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION dp_pg.refusal_rows() FROM PUBLIC;
CREATE VIEW dp_pg.guard_refusals AS
	SELECT r.id, r.refused_at, r.role, r.as_role, r.database, r.sqlstate, r.rule, r.query
	FROM dp_pg.refusal_rows() r;
COMMENT ON VIEW dp_pg.guard_refusals IS 'refused analyst queries (who, when, which rule), newest dp_pg.refusal_log_size kept; superusers only, from any database';
REVOKE ALL ON dp_pg.guard_refusals FROM PUBLIC;

ALTER TABLE dp_pg.protected_tables ALTER COLUMN relid TYPE regclass;
ALTER TABLE dp_pg.public_keys ALTER COLUMN relid TYPE regclass;
ALTER TABLE dp_pg.column_domains ALTER COLUMN relid TYPE regclass;

DROP VIEW dp_pg.answer_cache;
CREATE VIEW dp_pg.answer_cache AS
	SELECT a.roles, d.datname AS database, a.released_at, a.last_served, a.nrows, a.bytes, a.epsilon,
		a.delta, a.query
	FROM dp_pg.answer_cache_rows() a LEFT JOIN pg_catalog.pg_database d ON d.oid = a.database;
REVOKE ALL ON dp_pg.answer_cache FROM PUBLIC;
COMMENT ON VIEW dp_pg.answer_cache IS
	'the kept answers of every budget set (superuser): served again uncharged to the same budgets until a table they read changes';

--
-- A database's life (docs/dba.md, "Backup, restore and upgrades";
-- src/common/names.c, src/ledger/retention.c, src/guard/grants.c)
--

-- Stored roles and tables are regrole / regclass (above).  PostgreSQL has no
-- = for these types (they compare as oid), so `WHERE role = 'ana'` would read
-- 'ana' as an oid; these operators take exactly that case, a regrole or
-- regclass against an untyped literal, and read the literal as a role or
-- table name.  Typed comparisons keep PostgreSQL's oid operators.
CREATE FUNCTION dp_pg.regrole_eq_literal(regrole, unknown) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_regrole_eq_literal' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.literal_eq_regrole(unknown, regrole) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_literal_eq_regrole' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.regrole_ne_literal(regrole, unknown) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_regrole_ne_literal' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.literal_ne_regrole(unknown, regrole) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_literal_ne_regrole' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.regclass_eq_literal(regclass, unknown) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_regclass_eq_literal' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.literal_eq_regclass(unknown, regclass) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_literal_eq_regclass' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.regclass_ne_literal(regclass, unknown) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_regclass_ne_literal' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.literal_ne_regclass(unknown, regclass) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_literal_ne_regclass' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OPERATOR = (LEFTARG = regrole, RIGHTARG = unknown, FUNCTION = dp_pg.regrole_eq_literal,
	COMMUTATOR = =, NEGATOR = <>);
CREATE OPERATOR = (LEFTARG = unknown, RIGHTARG = regrole, FUNCTION = dp_pg.literal_eq_regrole,
	COMMUTATOR = =, NEGATOR = <>);
CREATE OPERATOR <> (LEFTARG = regrole, RIGHTARG = unknown, FUNCTION = dp_pg.regrole_ne_literal,
	COMMUTATOR = <>, NEGATOR = =);
CREATE OPERATOR <> (LEFTARG = unknown, RIGHTARG = regrole, FUNCTION = dp_pg.literal_ne_regrole,
	COMMUTATOR = <>, NEGATOR = =);
CREATE OPERATOR = (LEFTARG = regclass, RIGHTARG = unknown, FUNCTION = dp_pg.regclass_eq_literal,
	COMMUTATOR = =, NEGATOR = <>);
CREATE OPERATOR = (LEFTARG = unknown, RIGHTARG = regclass, FUNCTION = dp_pg.literal_eq_regclass,
	COMMUTATOR = =, NEGATOR = <>);
CREATE OPERATOR <> (LEFTARG = regclass, RIGHTARG = unknown, FUNCTION = dp_pg.regclass_ne_literal,
	COMMUTATOR = <>, NEGATOR = =);
CREATE OPERATOR <> (LEFTARG = unknown, RIGHTARG = regclass, FUNCTION = dp_pg.literal_ne_regclass,
	COMMUTATOR = <>, NEGATOR = =);

-- A write into the ledger tables by anyone but the ledger worker (a restore,
-- COPY, an import) makes the worker load them again when it commits:
-- restored budgets are live at once.  ALWAYS: also under
-- session_replication_role = replica.
CREATE FUNCTION dp_pg.ledger_changed() RETURNS trigger
	AS 'MODULE_PATHNAME', 'dp_ledger_changed' LANGUAGE C;
CREATE TRIGGER dp_pg_ledger_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dp_pg.budget_limits
	FOR EACH STATEMENT EXECUTE FUNCTION dp_pg.ledger_changed();
ALTER TABLE dp_pg.budget_limits ENABLE ALWAYS TRIGGER dp_pg_ledger_changed;
CREATE TRIGGER dp_pg_ledger_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dp_pg.ledger_entries
	FOR EACH STATEMENT EXECUTE FUNCTION dp_pg.ledger_changed();
ALTER TABLE dp_pg.ledger_entries ENABLE ALWAYS TRIGGER dp_pg_ledger_changed;
-- who set a budget or ran a query, for the rows of a role dropped since
CREATE INDEX ON dp_pg.ledger_entries (requested_by);

-- Point-in-time recovery.  A recovery that stops at a target starts a new
-- timeline and may leave charges (and answers already released) out of the
-- ledger; the ledger worker then refuses every charge until a superuser
-- accepts the timeline here, after importing the entries exported before the
-- restore.  Not dumped: a restored database starts from its server's timeline.
CREATE TABLE dp_pg.ledger_timelines (
	timeline int PRIMARY KEY CHECK (timeline > 0),
	accepted_at timestamptz NOT NULL DEFAULT now(),
	accepted_by regrole,
	recovery_target text		-- where the recovery that began it stopped (NULL: none)
);
REVOKE ALL ON dp_pg.ledger_timelines FROM PUBLIC;
CREATE TRIGGER dp_pg_ledger_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dp_pg.ledger_timelines
	FOR EACH STATEMENT EXECUTE FUNCTION dp_pg.ledger_changed();
ALTER TABLE dp_pg.ledger_timelines ENABLE ALWAYS TRIGGER dp_pg_ledger_changed;
CREATE FUNCTION dp_pg.timeline(OUT timeline int, OUT recovery_target text)
	AS 'MODULE_PATHNAME', 'dp_timeline' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION dp_pg.timeline() IS
	'the server''s timeline, and where the point-in-time recovery that began it stopped (NULL: none)';
-- a ledger is accepted on the timeline it was updated on
INSERT INTO dp_pg.ledger_timelines (timeline, accepted_by, recovery_target)
	SELECT t.timeline, session_user::text::regrole, t.recovery_target FROM dp_pg.timeline() t;

CREATE FUNCTION dp_pg.accept_restored_ledger() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
	IF current_database() <> current_setting('dp_pg.ledger_database') THEN
		RAISE EXCEPTION 'the ledger lives in database "%"', current_setting('dp_pg.ledger_database')
			USING ERRCODE = '55000';
	END IF;
	INSERT INTO dp_pg.ledger_timelines (timeline, accepted_by, recovery_target)
	SELECT t.timeline, session_user::text::regrole, t.recovery_target FROM dp_pg.timeline() t
	ON CONFLICT (timeline) DO NOTHING;
END $$;
COMMENT ON FUNCTION dp_pg.accept_restored_ledger() IS
	'after a point-in-time recovery (and dp_pg.import_ledger of what was exported before it): record charges again';

CREATE FUNCTION dp_pg.import_ledger(entries regclass) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	last_id bigint;
	last_at timestamptz;
	n bigint;
	r record;
BEGIN
	IF current_database() <> current_setting('dp_pg.ledger_database') THEN
		RAISE EXCEPTION 'the ledger lives in database "%"', current_setting('dp_pg.ledger_database')
			USING ERRCODE = '55000';
	END IF;
	LOCK TABLE dp_pg.ledger_entries IN EXCLUSIVE MODE;
	SELECT e.id, e.charged_at INTO last_id, last_at FROM dp_pg.ledger_entries e ORDER BY e.id DESC LIMIT 1;
	-- the entries must continue this ledger: its last row is among them, unchanged
	IF last_id IS NOT NULL THEN
		EXECUTE format('SELECT count(*) FROM %s WHERE id = $1 AND charged_at = $2', entries)
			INTO n USING last_id, last_at;
		IF n = 0 THEN
			RAISE EXCEPTION 'the entries in % do not continue this ledger', entries
				USING ERRCODE = '22023',
				DETAIL = format('Its last row (id %s, charged at %s) is not among them.', last_id, last_at);
		END IF;
	END IF;
	EXECUTE format('INSERT INTO dp_pg.ledger_entries (id, role, kind, charged_at, requested_by, query, epsilon, '
		'delta, rho, rdp, detail) SELECT id, role, kind, charged_at, requested_by, query, epsilon, delta, rho, '
		'rdp, detail FROM %s WHERE id > $1 ORDER BY id', entries) USING coalesce(last_id, 0);
	GET DIAGNOSTICS n = ROW_COUNT;
	PERFORM setval('dp_pg.ledger_entries_id_seq',
		greatest((SELECT max(id) FROM dp_pg.ledger_entries), (SELECT last_value FROM dp_pg.ledger_entries_id_seq)));
	-- budget changes are rows here but live in dp_pg.budget_limits: say which to make again
	FOR r IN EXECUTE format('SELECT role, kind, charged_at, detail FROM %s WHERE id > $1 AND kind IN (''limit'', ''cap'', ''remove'') ORDER BY id', entries)
		USING coalesce(last_id, 0) LOOP
		RAISE WARNING 'imported a budget change (%) of role % made at %: dp_pg.budget_limits does not hold it', r.kind, r.role, r.charged_at
			USING DETAIL = r.detail::text, HINT = 'Make it again (dp_pg.set_budget, set_query_cap or drop_budget) once the ledger is accepted.';
	END LOOP;
	RETURN n;
END $$;
COMMENT ON FUNCTION dp_pg.import_ledger(regclass) IS
	'add the ledger entries of a table (with the columns of dp_pg.ledger) that continue this ledger: what a point-in-time recovery cut off';
REVOKE EXECUTE ON FUNCTION dp_pg.accept_restored_ledger(), dp_pg.import_ledger(regclass), dp_pg.timeline() FROM PUBLIC;

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

-- BI aggregates answered from other releases (src/aggregates/moments.c,
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

-- The total operators (src/guard/total.c): the arithmetic the guard writes in
-- place of PostgreSQL's operators in an analyst's row expressions.  Each
-- returns what the operator it stands for returns wherever that returns a
-- value, and never raises an error: an overflow saturates, a zero divisor
-- gives NULL, a float underflow 0, a date stays within 500 BC .. 200000 AD.
-- The guard writes these calls itself; an analyst's query that calls one is
-- refused.
CREATE FUNCTION dp_pg.total_add(anycompatible, anycompatible) RETURNS anycompatible
	AS 'MODULE_PATHNAME', 'dp_total_add' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_sub(anycompatible, anycompatible) RETURNS anycompatible
	AS 'MODULE_PATHNAME', 'dp_total_sub' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_mul(anycompatible, anycompatible) RETURNS anycompatible
	AS 'MODULE_PATHNAME', 'dp_total_mul' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_div(anycompatible, anycompatible) RETURNS anycompatible
	AS 'MODULE_PATHNAME', 'dp_total_div' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_mod(anycompatible, anycompatible) RETURNS anycompatible
	AS 'MODULE_PATHNAME', 'dp_total_mod' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_div_trunc(numeric, numeric) RETURNS numeric
	AS 'MODULE_PATHNAME', 'dp_total_div_trunc' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_neg(anyelement) RETURNS anyelement
	AS 'MODULE_PATHNAME', 'dp_total_neg' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_abs(anyelement) RETURNS anyelement
	AS 'MODULE_PATHNAME', 'dp_total_abs' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_int2("any") RETURNS int2
	AS 'MODULE_PATHNAME', 'dp_total_int2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_int4("any") RETURNS int4
	AS 'MODULE_PATHNAME', 'dp_total_int4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_int8("any") RETURNS int8
	AS 'MODULE_PATHNAME', 'dp_total_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_float4("any") RETURNS real
	AS 'MODULE_PATHNAME', 'dp_total_float4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_float8("any") RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_total_float8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_numeric("any") RETURNS numeric
	AS 'MODULE_PATHNAME', 'dp_total_numeric' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_numeric_typmod(numeric, int4) RETURNS numeric
	AS 'MODULE_PATHNAME', 'dp_total_numeric_typmod' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_date_add(date, int4) RETURNS date
	AS 'MODULE_PATHNAME', 'dp_total_date_add' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_date_sub(date, int4) RETURNS date
	AS 'MODULE_PATHNAME', 'dp_total_date_sub' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_pg.total_date_diff(date, date) RETURNS int4
	AS 'MODULE_PATHNAME', 'dp_total_date_diff' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Value domains of dates and times (src/guard/translate.c, DpColumnDomain):
-- dp_pg.set_domain takes the bounds of a date, timestamp or timestamptz
-- column as values of its type ('2024-01-01', or typed values), the bounds
-- of min() / max() / percentile_disc of the column and of a synthetic twin's
-- bins.  dp_pg.column_domains keeps them as seconds since 1970-01-01 00:00
-- UTC (extract(epoch from ...); to_timestamp(lower) shows one).
CREATE FUNCTION dp_pg.store_domain(tbl regclass, col name, lower numeric, upper numeric) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
	IF lower IS NULL AND upper IS NULL THEN
		DELETE FROM dp_pg.column_domains WHERE relid = tbl AND attname = col;
		RETURN;
	END IF;
	IF lower IS NULL OR upper IS NULL OR lower = 'NaN' OR upper = 'NaN' OR lower IN ('Infinity', '-Infinity')
	   OR upper IN ('Infinity', '-Infinity') OR lower > upper THEN
		RAISE EXCEPTION 'a value domain needs finite bounds with lower <= upper (both NULL removes it)'
			USING ERRCODE = '22023';
	END IF;
	INSERT INTO dp_pg.column_domains (relid, attname, lower, upper) VALUES (tbl, col, lower, upper)
	ON CONFLICT (relid, attname) DO UPDATE SET lower = EXCLUDED.lower, upper = EXCLUDED.upper;
END $$;
COMMENT ON FUNCTION dp_pg.store_domain(regclass, name, numeric, numeric) IS
	'dp_pg.set_domain''s store: a column''s value domain in dp_pg.column_domains (NULL, NULL removes it)';
CREATE OR REPLACE FUNCTION dp_pg.set_domain(tbl regclass, col name, lower numeric, upper numeric) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	typ regtype;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM dp_pg.protected_tables WHERE relid = tbl) THEN
		RAISE EXCEPTION 'table "%" is not protected', tbl USING ERRCODE = '22023';
	END IF;
	SELECT atttypid INTO typ FROM pg_attribute WHERE attrelid = tbl AND attname = col AND attnum > 0 AND NOT attisdropped;
	IF typ IS NULL THEN
		RAISE EXCEPTION 'column "%" of "%" does not exist', col, tbl USING ERRCODE = '42703';
	END IF;
	IF typ IN ('date'::regtype, 'timestamp', 'timestamptz') THEN
		RAISE EXCEPTION 'column "%" of "%" is of type %: its bounds are values of that type, not numbers', col, tbl, typ
			USING ERRCODE = '42804',
			HINT = format('For example SELECT dp_pg.set_domain(%L, %L, %L, %L);', tbl::text, col, '2024-01-01', '2024-12-31');
	END IF;
	IF typ NOT IN ('int2'::regtype, 'int4', 'int8', 'float4', 'float8', 'numeric') THEN
		RAISE EXCEPTION 'column "%" of "%" is of type %, not a number, date or time', col, tbl, typ USING ERRCODE = '42804';
	END IF;
	PERFORM dp_pg.store_domain(tbl, col, lower, upper);
END $$;
COMMENT ON FUNCTION dp_pg.set_domain(regclass, name, numeric, numeric) IS
	'declare (or with NULL, NULL remove) the value domain of a numeric column of a protected table: the bounds of plain sum() / avg() / min() / max()';
-- bounds as text: numbers of a numeric column, dates and times of a date or time column
-- (quoted literals resolve to this one: set_domain('visits', 'visit_date', '2024-01-01', '2024-12-31'))
CREATE FUNCTION dp_pg.set_domain(tbl regclass, col name, lower text, upper text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	typ regtype;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM dp_pg.protected_tables WHERE relid = tbl) THEN
		RAISE EXCEPTION 'table "%" is not protected', tbl USING ERRCODE = '22023';
	END IF;
	SELECT atttypid INTO typ FROM pg_attribute WHERE attrelid = tbl AND attname = col AND attnum > 0 AND NOT attisdropped;
	IF typ IS NULL THEN
		RAISE EXCEPTION 'column "%" of "%" does not exist', col, tbl USING ERRCODE = '42703';
	END IF;
	IF typ IN ('int2'::regtype, 'int4', 'int8', 'float4', 'float8', 'numeric') THEN
		PERFORM dp_pg.set_domain(tbl, col, lower::numeric, upper::numeric);
	ELSIF typ = 'date'::regtype THEN
		PERFORM dp_pg.store_domain(tbl, col, extract(epoch FROM lower::date), extract(epoch FROM upper::date));
	ELSIF typ = 'timestamp'::regtype THEN
		PERFORM dp_pg.store_domain(tbl, col, extract(epoch FROM lower::timestamp), extract(epoch FROM upper::timestamp));
	ELSIF typ = 'timestamptz'::regtype THEN
		PERFORM dp_pg.store_domain(tbl, col, extract(epoch FROM lower::timestamptz), extract(epoch FROM upper::timestamptz));
	ELSE
		RAISE EXCEPTION 'column "%" of "%" is of type %, not a number, date or time', col, tbl, typ USING ERRCODE = '42804';
	END IF;
END $$;
COMMENT ON FUNCTION dp_pg.set_domain(regclass, name, text, text) IS
	'declare (or with NULL, NULL remove) the value domain of a number, date or time column of a protected table, its bounds written as values of the column''s type';
-- typed dates and times (a date or timestamp argument is cast to this; a date column takes
-- the date of a time in the session's TimeZone)
CREATE FUNCTION dp_pg.set_domain(tbl regclass, col name, lower timestamptz, upper timestamptz) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	typ regtype;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM dp_pg.protected_tables WHERE relid = tbl) THEN
		RAISE EXCEPTION 'table "%" is not protected', tbl USING ERRCODE = '22023';
	END IF;
	SELECT atttypid INTO typ FROM pg_attribute WHERE attrelid = tbl AND attname = col AND attnum > 0 AND NOT attisdropped;
	IF typ IS NULL THEN
		RAISE EXCEPTION 'column "%" of "%" does not exist', col, tbl USING ERRCODE = '42703';
	END IF;
	IF typ = 'date'::regtype THEN
		PERFORM dp_pg.store_domain(tbl, col, extract(epoch FROM lower::date), extract(epoch FROM upper::date));
	ELSIF typ = 'timestamp'::regtype THEN
		PERFORM dp_pg.store_domain(tbl, col, extract(epoch FROM lower::timestamp), extract(epoch FROM upper::timestamp));
	ELSIF typ = 'timestamptz'::regtype THEN
		PERFORM dp_pg.store_domain(tbl, col, extract(epoch FROM lower), extract(epoch FROM upper));
	ELSE
		RAISE EXCEPTION 'column "%" of "%" is of type %, not a date or time', col, tbl, typ USING ERRCODE = '42804';
	END IF;
END $$;
COMMENT ON FUNCTION dp_pg.set_domain(regclass, name, timestamptz, timestamptz) IS
	'declare (or with NULL, NULL remove) the value domain of a date or time column of a protected table';
REVOKE EXECUTE ON FUNCTION dp_pg.store_domain(regclass, name, numeric, numeric),
	dp_pg.set_domain(regclass, name, text, text), dp_pg.set_domain(regclass, name, timestamptz, timestamptz) FROM PUBLIC;

-- Readable numbers (src/common/inspect.c, dp_display_round): the budget,
-- ledger and release views show epsilon, delta, rho, noise and intervals to
-- six significant digits (48.49999999896455 reads 48.5; an interval's ends
-- and half-widths rounded outwards, so it still covers what it covered).  The
-- values kept are unchanged, and the functions behind the views give them
-- exactly: dp_pg.budget_rows(), dp_pg.ledger_rows(), dp_pg.last_release_rows(),
-- dp_pg.answer_cache_rows().
CREATE FUNCTION dp_pg.display_round(x float8, direction int4 DEFAULT 0) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_display_round' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.display_round(float8, int4) IS
	'x to six significant digits, for display (direction 1 / -1: not below / not above x)';
CREATE OR REPLACE VIEW dp_pg.budgets AS
	SELECT b.role, b.epsilon_limit, b.delta_limit, b.rho_limit, dp_pg.display_round(b.epsilon_spent) AS epsilon_spent,
		dp_pg.display_round(b.delta_spent) AS delta_spent, dp_pg.display_round(b.rho_spent) AS rho_spent,
		dp_pg.display_round(b.epsilon_remaining) AS epsilon_remaining, b.charges, b.accounting,
		b.max_epsilon_per_query, b.max_delta_per_query, b.max_rho_per_query
	FROM dp_pg.budget_rows() b;
COMMENT ON VIEW dp_pg.budgets IS
	'one row per role with a budget (non-superusers: their own roles only); spent and remaining to six significant digits (exactly: dp_pg.budget_rows())';
CREATE OR REPLACE VIEW dp_pg.my_budget AS
	SELECT b.role, b.epsilon_limit, b.delta_limit, b.rho_limit, dp_pg.display_round(b.epsilon_spent) AS epsilon_spent,
		dp_pg.display_round(b.delta_spent) AS delta_spent, dp_pg.display_round(b.rho_spent) AS rho_spent,
		dp_pg.display_round(b.epsilon_remaining) AS epsilon_remaining, b.charges, b.accounting,
		b.max_epsilon_per_query, b.max_delta_per_query, b.max_rho_per_query
	FROM dp_pg.budget_rows() b WHERE b.role IN (SELECT dp_pg.charged_roles());
COMMENT ON VIEW dp_pg.my_budget IS
	'the budgets the current user''s queries are charged to; spent and remaining to six significant digits';
CREATE OR REPLACE VIEW dp_pg.ledger AS
	SELECT l.id, l.role, l.kind, l.charged_at, l.requested_by, l.query, dp_pg.display_round(l.epsilon) AS epsilon,
		dp_pg.display_round(l.delta) AS delta, dp_pg.display_round(l.rho) AS rho, l.rdp, l.detail
	FROM dp_pg.ledger_rows() l;
COMMENT ON VIEW dp_pg.ledger IS
	'one row per charge and budget change, from any database (non-superusers: their own roles only); epsilon, delta and rho to six significant digits (exactly, for exports: dp_pg.ledger_rows())';
CREATE OR REPLACE VIEW dp_pg.last_releases AS
	SELECT r.site, r.aggregate, r.mechanism, dp_pg.display_round(r.noise_sd) AS noise_sd,
		dp_pg.display_round(r.ci95_halfwidth, 1) AS ci95_halfwidth, dp_pg.display_round(r.epsilon) AS epsilon,
		dp_pg.display_round(r.delta) AS delta, dp_pg.display_round(r.rho) AS rho, r.from_cache, r.released_at, r.value,
		dp_pg.display_round(r.ci95_lower, -1) AS ci95_lower, dp_pg.display_round(r.ci95_upper, 1) AS ci95_upper,
		dp_pg.display_round(r.ci95_rank_halfwidth, 1) AS ci95_rank_halfwidth, r.note
	FROM dp_pg.last_release_rows() r;
COMMENT ON VIEW dp_pg.last_releases IS
	'the error bar of each value the session''s last dp query released: the closed 95% interval [answer - h, answer + h] of the noise (h = ci95_halfwidth), an average''s own [ci95_lower, ci95_upper], a quantile''s rank interval; note says what each covers (clamping and unit bounding are in none); six significant digits, intervals rounded outwards (exactly: dp_pg.last_release_rows())';
CREATE OR REPLACE VIEW dp_pg.answer_cache AS
	SELECT a.roles, d.datname AS database, a.released_at, a.last_served, a.nrows, a.bytes,
		dp_pg.display_round(a.epsilon) AS epsilon, dp_pg.display_round(a.delta) AS delta, a.query
	FROM dp_pg.answer_cache_rows() a LEFT JOIN pg_catalog.pg_database d ON d.oid = a.database;
COMMENT ON VIEW dp_pg.answer_cache IS
	'the kept answers of every budget set (superusers and monitoring roles without a budget): served again uncharged to the same budgets until a table they read changes; epsilon and delta to six significant digits';

-- CREATE EXTENSION without the preload warns at once (src/common/agg_common.c):
-- every dp aggregate, the query guard and the ledger stay off until
-- shared_preload_libraries has dp_pg and the server restarted.
CREATE FUNCTION dp_pg.preloaded() RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_preloaded' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.preloaded() IS
	'whether this server loaded dp_pg through shared_preload_libraries (without it nothing is answered)';
DO $$
BEGIN
	IF NOT dp_pg.preloaded() THEN
		RAISE WARNING 'dp_pg is not in shared_preload_libraries: its dp aggregates, query guard and ledger stay off until it is'
			USING HINT = 'Add dp_pg to shared_preload_libraries in postgresql.conf and restart the server (docs/dba.md, "Installing by hand").';
	END IF;
END $$;

--
-- Table budgets, budget windows and reports of privacy loss (docs/dba.md,
-- "Table budgets", "Budget windows" and "Reports"; docs/privacy.md, "The
-- budget filter"; src/ledger/tablebudget.c, windows.c, reports.c).
--
-- A budget may renew every fixed period: windows of `renew` from
-- `renew_from` (the instant the renewal was set, unless given), in the
-- server's time zone; what a role may spend is counted in its current window,
-- every charge is kept (lifetime totals).
ALTER TABLE dp_pg.budget_limits
	ADD COLUMN renew interval,
	ADD COLUMN renew_from timestamptz,
	ADD CHECK ((renew IS NULL) = (renew_from IS NULL));
-- A limit on the total privacy loss of a protected table over every role,
-- charged with the roles' budgets in the same ledger transaction.  The table
-- is bound to its budget by dp_pg.protected_tables.table_budget in its own
-- database (dumped with its protection, by name); here, in the ledger
-- database, the budget keeps the name it was last set under.
CREATE TABLE dp_pg.table_budget_limits (
	budget uuid PRIMARY KEY,
	database text NOT NULL,
	table_name text NOT NULL,
	epsilon_limit float8 CHECK (epsilon_limit > 0 AND epsilon_limit < 'Infinity'),
	delta_limit float8 CHECK (delta_limit >= 0 AND delta_limit < 1),
	rho_limit float8 CHECK (rho_limit > 0 AND rho_limit < 'Infinity'),
	renew interval,
	renew_from timestamptz,
	updated_at timestamptz NOT NULL DEFAULT now(),
	CHECK ((renew IS NULL) = (renew_from IS NULL))
);
REVOKE ALL ON dp_pg.table_budget_limits FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('dp_pg.table_budget_limits', '');
CREATE TRIGGER dp_pg_ledger_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dp_pg.table_budget_limits
	FOR EACH STATEMENT EXECUTE FUNCTION dp_pg.ledger_changed();
ALTER TABLE dp_pg.table_budget_limits ENABLE ALWAYS TRIGGER dp_pg_ledger_changed;
-- a table budget's rows (role NULL), the window a charge was counted in,
-- and the part of a charge's delta outside which its Renyi curve holds
ALTER TABLE dp_pg.ledger_entries
	ADD COLUMN table_budget uuid,
	ADD COLUMN budget_window tstzrange,
	ADD COLUMN rdp_delta float8 CHECK (rdp_delta >= 0 AND rdp_delta < 1);
CREATE INDEX ON dp_pg.ledger_entries (table_budget, id) WHERE table_budget IS NOT NULL;
-- which table budget a protected table of this database is charged to
ALTER TABLE dp_pg.protected_tables ADD COLUMN table_budget uuid;

DROP FUNCTION dp_pg.set_budget(regrole, float8, float8, float8);
CREATE FUNCTION dp_pg.set_budget(role regrole, epsilon float8, delta float8, rho float8 DEFAULT NULL,
	renew interval DEFAULT NULL, renew_from timestamptz DEFAULT NULL)
	RETURNS void AS 'MODULE_PATHNAME', 'dp_set_budget' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION dp_pg.set_budget(regrole, float8, float8, float8, interval, timestamptz) IS
	'create or change a role''s privacy budget (NULL: not limited), renewed every renew from renew_from; durable at once, logged';
CREATE FUNCTION dp_pg.set_table_budget(tab regclass, epsilon float8, delta float8, rho float8 DEFAULT NULL,
	renew interval DEFAULT NULL, renew_from timestamptz DEFAULT NULL)
	RETURNS void AS 'MODULE_PATHNAME', 'dp_set_table_budget' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION dp_pg.set_table_budget(regclass, float8, float8, float8, interval, timestamptz) IS
	'limit the total privacy loss of a protected table over every role (NULL: not limited), renewed every renew from renew_from; durable at once, logged';
CREATE FUNCTION dp_pg.drop_table_budget(tab regclass)
	RETURNS void AS 'MODULE_PATHNAME', 'dp_drop_table_budget' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION dp_pg.drop_table_budget(regclass) IS 'remove a table''s privacy budget (its ledger rows stay); logged';
REVOKE EXECUTE ON FUNCTION dp_pg.set_budget(regrole, float8, float8, float8, interval, timestamptz),
	dp_pg.set_table_budget(regclass, float8, float8, float8, interval, timestamptz),
	dp_pg.drop_table_budget(regclass) FROM PUBLIC;

-- the budgets' rows: also the window and the lifetime totals
DROP VIEW dp_pg.my_budget;
DROP VIEW dp_pg.budgets;
DROP FUNCTION dp_pg.budget_rows();
CREATE FUNCTION dp_pg.budget_rows(OUT role regrole, OUT epsilon_limit float8, OUT delta_limit float8,
	OUT rho_limit float8, OUT epsilon_spent float8, OUT delta_spent float8, OUT rho_spent float8,
	OUT epsilon_remaining float8, OUT charges bigint, OUT accounting text,
	OUT max_epsilon_per_query float8, OUT max_delta_per_query float8, OUT max_rho_per_query float8,
	OUT renew interval, OUT window_start timestamptz, OUT window_end timestamptz,
	OUT lifetime_epsilon float8, OUT lifetime_delta float8, OUT lifetime_rho float8, OUT lifetime_charges bigint)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'dp_budget_rows' LANGUAGE C VOLATILE;
CREATE VIEW dp_pg.budgets AS SELECT * FROM dp_pg.budget_rows();
COMMENT ON VIEW dp_pg.budgets IS
	'one row per role with a budget: limits, spending in the current window, lifetime totals (non-superusers: their own roles only)';
CREATE VIEW dp_pg.my_budget AS
	SELECT * FROM dp_pg.budget_rows() WHERE role IN (SELECT dp_pg.charged_roles());
COMMENT ON VIEW dp_pg.my_budget IS 'the budgets the current user''s queries are charged to';
GRANT SELECT ON dp_pg.budgets, dp_pg.my_budget TO PUBLIC;

CREATE FUNCTION dp_pg.table_budget_rows(OUT budget uuid, OUT relid regclass, OUT database text, OUT table_name text,
	OUT epsilon_limit float8, OUT delta_limit float8, OUT rho_limit float8,
	OUT epsilon_spent float8, OUT delta_spent float8, OUT rho_spent float8, OUT epsilon_remaining float8,
	OUT charges bigint, OUT accounting text,
	OUT renew interval, OUT window_start timestamptz, OUT window_end timestamptz,
	OUT lifetime_epsilon float8, OUT lifetime_delta float8, OUT lifetime_rho float8, OUT lifetime_charges bigint)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'dp_table_budget_rows' LANGUAGE C VOLATILE;
CREATE VIEW dp_pg.table_budgets AS SELECT * FROM dp_pg.table_budget_rows();
COMMENT ON VIEW dp_pg.table_budgets IS
	'one row per table budget: limits, spending over every role in the current window, lifetime totals (superusers and monitoring roles: every database''s; others: this database''s protected tables)';
GRANT SELECT ON dp_pg.table_budgets TO PUBLIC;

-- the ledger's rows: also the table budget, the window and rdp_delta
DROP VIEW dp_pg.ledger;
DROP FUNCTION dp_pg.ledger_rows();
CREATE FUNCTION dp_pg.ledger_rows(OUT id bigint, OUT role regrole, OUT kind text, OUT charged_at timestamptz,
	OUT requested_by regrole, OUT query text, OUT epsilon float8, OUT delta float8, OUT rho float8,
	OUT rdp float8[], OUT detail jsonb, OUT table_budget uuid, OUT budget_window tstzrange, OUT rdp_delta float8)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'dp_ledger_rows' LANGUAGE C VOLATILE;
CREATE VIEW dp_pg.ledger AS SELECT * FROM dp_pg.ledger_rows();
COMMENT ON VIEW dp_pg.ledger IS
	'one row per charge and budget change, from any database (non-superusers: their own roles'' rows only; a table budget''s rows have no role)';
GRANT SELECT ON dp_pg.ledger TO PUBLIC;

-- Reports: privacy loss per role and per table, per window, from the
-- ledger's charges (charge_rows: dp_pg.ledger's rows of kind 'charge'
-- without their query text and detail, the same rows for the same reader:
-- monitoring roles see every row, an analyst its own roles' rows).
-- composed_epsilon is the epsilon the budget filter certifies for the
-- charges it aggregates, in ledger order, at a delta limit
-- (src/ledger/reports.c).
CREATE FUNCTION dp_pg.charge_rows(OUT id bigint, OUT role regrole, OUT table_budget uuid,
	OUT charged_at timestamptz, OUT requested_by regrole, OUT epsilon float8, OUT delta float8,
	OUT rho float8, OUT rdp float8[], OUT rdp_delta float8, OUT budget_window tstzrange)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'dp_charge_rows' LANGUAGE C VOLATILE;
CREATE FUNCTION dp_pg.composed_epsilon_trans(internal, float8, float8, float8, float8[], float8, float8)
	RETURNS internal AS 'MODULE_PATHNAME', 'dp_composed_epsilon_trans' LANGUAGE C IMMUTABLE;
CREATE FUNCTION dp_pg.composed_epsilon_final(internal) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_composed_epsilon_final' LANGUAGE C IMMUTABLE;
CREATE AGGREGATE dp_pg.composed_epsilon(epsilon float8, delta float8, rho float8, rdp float8[],
	rdp_delta float8, delta_limit float8) (
	SFUNC = dp_pg.composed_epsilon_trans,
	STYPE = internal,
	FINALFUNC = dp_pg.composed_epsilon_final
);
COMMENT ON AGGREGATE dp_pg.composed_epsilon(float8, float8, float8, float8[], float8, float8) IS
	'epsilon of the charges aggregated (call it with ORDER BY id) at delta_limit, by the budget filter''s certificates (NULL: none)';
CREATE VIEW dp_pg.budget_windows AS
	SELECT l.role, lower(l.budget_window) AS window_start, upper(l.budget_window) AS window_end,
		count(*) AS charges,
		dp_pg.composed_epsilon(l.epsilon, l.delta, l.rho, l.rdp, l.rdp_delta, b.delta_limit ORDER BY l.id) AS epsilon_spent,
		sum(l.delta) AS delta_spent,
		CASE WHEN count(l.rho) = count(*) THEN sum(l.rho) END AS rho_spent,
		min(l.charged_at) AS first_charge, max(l.charged_at) AS last_charge
	FROM dp_pg.charge_rows() l LEFT JOIN dp_pg.budgets b ON b.role = l.role
	WHERE l.role IS NOT NULL
	GROUP BY l.role, l.budget_window, b.delta_limit;
COMMENT ON VIEW dp_pg.budget_windows IS
	'privacy loss per role and budget window (window NULL: a budget that does not renew), every charge counted, resets included';
CREATE VIEW dp_pg.table_budget_windows AS
	SELECT l.table_budget AS budget, t.relid, t.database, t.table_name,
		lower(l.budget_window) AS window_start, upper(l.budget_window) AS window_end,
		count(*) AS charges,
		dp_pg.composed_epsilon(l.epsilon, l.delta, l.rho, l.rdp, l.rdp_delta, t.delta_limit ORDER BY l.id) AS epsilon_spent,
		sum(l.delta) AS delta_spent,
		CASE WHEN count(l.rho) = count(*) THEN sum(l.rho) END AS rho_spent,
		count(DISTINCT l.requested_by) AS roles,
		min(l.charged_at) AS first_charge, max(l.charged_at) AS last_charge
	FROM dp_pg.charge_rows() l LEFT JOIN dp_pg.table_budget_rows() t ON t.budget = l.table_budget
	WHERE l.table_budget IS NOT NULL
	GROUP BY l.table_budget, t.relid, t.database, t.table_name, l.budget_window, t.delta_limit;
COMMENT ON VIEW dp_pg.table_budget_windows IS
	'privacy loss per table budget and window (window NULL: a budget that does not renew) over every role; superusers and monitoring roles';
GRANT SELECT ON dp_pg.budget_windows, dp_pg.table_budget_windows TO PUBLIC;

-- a hot standby forwards its charges with their table budgets and rdp_delta
DROP FUNCTION dp_pg.forward_charges(oid[], int4[], oid[], float8[], float8[], float8[], float8[], text[], text[]);
CREATE FUNCTION dp_pg.forward_charges(requested_by oid[], nroles int4[], roles oid[],
	epsilon float8[], delta float8[], rho float8[], rdp float8[], query text[], detail text[],
	rdp_delta float8[], ntables int4[], tables uuid[])
	RETURNS TABLE (ord int4, verdict int4, refused_role oid, refusal int4, spent float8, lim float8,
		requested float8, sqlstate text, message text, warn_role oid[], warn_what int4[],
		warn_spent float8[], warn_limit float8[], refused_table int4, warn_table int4[])
	AS 'MODULE_PATHNAME', 'dp_forward_charges' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION dp_pg.forward_charges(oid[], int4[], oid[], float8[], float8[], float8[], float8[], text[], text[],
	float8[], int4[], uuid[])
	IS 'a hot standby''s charges, recorded on this server''s ledger (superusers and REPLICATION roles only)';

-- import: the new columns too; table budget changes are named
CREATE OR REPLACE FUNCTION dp_pg.import_ledger(entries regclass) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	last_id bigint;
	last_at timestamptz;
	n bigint;
	r record;
BEGIN
	IF current_database() <> current_setting('dp_pg.ledger_database') THEN
		RAISE EXCEPTION 'the ledger lives in database "%"', current_setting('dp_pg.ledger_database')
			USING ERRCODE = '55000';
	END IF;
	LOCK TABLE dp_pg.ledger_entries IN EXCLUSIVE MODE;
	SELECT e.id, e.charged_at INTO last_id, last_at FROM dp_pg.ledger_entries e ORDER BY e.id DESC LIMIT 1;
	-- the entries must continue this ledger: its last row is among them, unchanged
	IF last_id IS NOT NULL THEN
		EXECUTE format('SELECT count(*) FROM %s WHERE id = $1 AND charged_at = $2', entries)
			INTO n USING last_id, last_at;
		IF n = 0 THEN
			RAISE EXCEPTION 'the entries in % do not continue this ledger', entries
				USING ERRCODE = '22023',
				DETAIL = format('Its last row (id %s, charged at %s) is not among them.', last_id, last_at);
		END IF;
	END IF;
	EXECUTE format('INSERT INTO dp_pg.ledger_entries (id, role, kind, charged_at, requested_by, query, epsilon, '
		'delta, rho, rdp, detail, table_budget, budget_window, rdp_delta) SELECT id, role, kind, charged_at, '
		'requested_by, query, epsilon, delta, rho, rdp, detail, table_budget, budget_window, rdp_delta '
		'FROM %s WHERE id > $1 ORDER BY id', entries) USING coalesce(last_id, 0);
	GET DIAGNOSTICS n = ROW_COUNT;
	PERFORM setval('dp_pg.ledger_entries_id_seq',
		greatest((SELECT max(id) FROM dp_pg.ledger_entries), (SELECT last_value FROM dp_pg.ledger_entries_id_seq)));
	-- budget changes are rows here but live in dp_pg.budget_limits / table_budget_limits: say which to make again
	FOR r IN EXECUTE format('SELECT role, table_budget, kind, charged_at, detail FROM %s WHERE id > $1 '
		'AND kind IN (''limit'', ''cap'', ''remove'') ORDER BY id', entries)
		USING coalesce(last_id, 0) LOOP
		IF r.table_budget IS NOT NULL THEN
			RAISE WARNING 'imported a budget change (%) of table % (database %) made at %: dp_pg.table_budget_limits does not hold it',
				r.kind, r.detail->>'table', r.detail->>'database', r.charged_at
				USING DETAIL = r.detail::text,
				HINT = 'Make it again (dp_pg.set_table_budget or drop_table_budget, in the table''s database) once the ledger is accepted.';
		ELSE
			RAISE WARNING 'imported a budget change (%) of role % made at %: dp_pg.budget_limits does not hold it', r.kind, r.role, r.charged_at
				USING DETAIL = r.detail::text, HINT = 'Make it again (dp_pg.set_budget, set_query_cap or drop_budget) once the ledger is accepted.';
		END IF;
	END LOOP;
	RETURN n;
END $$;

-- Readable numbers with table budgets and windows (the views above, remade
-- by the table budgets' section, show their numbers to six significant
-- digits again; the functions behind them still give them exactly).
CREATE OR REPLACE VIEW dp_pg.budgets AS
	SELECT b.role, b.epsilon_limit, b.delta_limit, b.rho_limit, dp_pg.display_round(b.epsilon_spent) AS epsilon_spent,
		dp_pg.display_round(b.delta_spent) AS delta_spent, dp_pg.display_round(b.rho_spent) AS rho_spent,
		dp_pg.display_round(b.epsilon_remaining) AS epsilon_remaining, b.charges, b.accounting,
		b.max_epsilon_per_query, b.max_delta_per_query, b.max_rho_per_query, b.renew, b.window_start, b.window_end,
		dp_pg.display_round(b.lifetime_epsilon) AS lifetime_epsilon, dp_pg.display_round(b.lifetime_delta) AS lifetime_delta,
		dp_pg.display_round(b.lifetime_rho) AS lifetime_rho, b.lifetime_charges
	FROM dp_pg.budget_rows() b;
COMMENT ON VIEW dp_pg.budgets IS
	'one row per role with a budget: limits, spending in the current window, lifetime totals (non-superusers: their own roles only); spent, remaining and lifetime to six significant digits (exactly: dp_pg.budget_rows())';
CREATE OR REPLACE VIEW dp_pg.my_budget AS
	SELECT b.role, b.epsilon_limit, b.delta_limit, b.rho_limit, dp_pg.display_round(b.epsilon_spent) AS epsilon_spent,
		dp_pg.display_round(b.delta_spent) AS delta_spent, dp_pg.display_round(b.rho_spent) AS rho_spent,
		dp_pg.display_round(b.epsilon_remaining) AS epsilon_remaining, b.charges, b.accounting,
		b.max_epsilon_per_query, b.max_delta_per_query, b.max_rho_per_query, b.renew, b.window_start, b.window_end,
		dp_pg.display_round(b.lifetime_epsilon) AS lifetime_epsilon, dp_pg.display_round(b.lifetime_delta) AS lifetime_delta,
		dp_pg.display_round(b.lifetime_rho) AS lifetime_rho, b.lifetime_charges
	FROM dp_pg.budget_rows() b WHERE b.role IN (SELECT dp_pg.charged_roles());
COMMENT ON VIEW dp_pg.my_budget IS
	'the budgets the current user''s queries are charged to; spent, remaining and lifetime to six significant digits';
CREATE OR REPLACE VIEW dp_pg.ledger AS
	SELECT l.id, l.role, l.kind, l.charged_at, l.requested_by, l.query, dp_pg.display_round(l.epsilon) AS epsilon,
		dp_pg.display_round(l.delta) AS delta, dp_pg.display_round(l.rho) AS rho, l.rdp, l.detail,
		l.table_budget, l.budget_window, dp_pg.display_round(l.rdp_delta) AS rdp_delta
	FROM dp_pg.ledger_rows() l;
COMMENT ON VIEW dp_pg.ledger IS
	'one row per charge and budget change, from any database (non-superusers: their own roles'' rows only; a table budget''s rows have no role); epsilon, delta and rho to six significant digits (exactly, for exports: dp_pg.ledger_rows())';
CREATE OR REPLACE VIEW dp_pg.table_budgets AS
	SELECT t.budget, t.relid, t.database, t.table_name, t.epsilon_limit, t.delta_limit, t.rho_limit,
		dp_pg.display_round(t.epsilon_spent) AS epsilon_spent, dp_pg.display_round(t.delta_spent) AS delta_spent,
		dp_pg.display_round(t.rho_spent) AS rho_spent, dp_pg.display_round(t.epsilon_remaining) AS epsilon_remaining,
		t.charges, t.accounting, t.renew, t.window_start, t.window_end,
		dp_pg.display_round(t.lifetime_epsilon) AS lifetime_epsilon, dp_pg.display_round(t.lifetime_delta) AS lifetime_delta,
		dp_pg.display_round(t.lifetime_rho) AS lifetime_rho, t.lifetime_charges
	FROM dp_pg.table_budget_rows() t;
COMMENT ON VIEW dp_pg.table_budgets IS
	'one row per table budget: limits, spending over every role in the current window, lifetime totals (superusers and monitoring roles: every database''s; others: this database''s protected tables); spent, remaining and lifetime to six significant digits (exactly: dp_pg.table_budget_rows())';

-- Locally private columns: randomized response (src/common/randomized.c,
-- src/core/rr.c, src/aggregates/agg_rr.c; docs/privacy.md, "Locally private
-- columns").  dp_pg.randomize() makes a column locally private at a stated
-- epsilon: every value written to it is replaced by its randomized report
-- before anything else sees it, by the trigger "!dp_pg_randomize" (BEFORE
-- INSERT OR UPDATE FOR EACH ROW, ENABLE ALWAYS, first by name); existing
-- values are randomized once.  The estimates read the reports: free when the
-- statement reads no protected table, one charged histogram release of the
-- report counts otherwise.
CREATE FUNCTION dp_rr(epsilon float8) RETURNS dp_mechanism
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_rr(float8) IS
	'randomized response at epsilon, for dp_pg.randomize: each stored value is epsilon-DP';
CREATE TABLE dp_pg.randomized_columns (
	relid regclass NOT NULL,
	attname name NOT NULL,
	epsilon float8 NOT NULL CHECK (epsilon >= 8.673617379884035e-19 AND epsilon <= 100),
	keys text[] NOT NULL CHECK (cardinality(keys) BETWEEN 2 AND 1000 AND array_position(keys, NULL) IS NULL),
	type regtype NOT NULL,
	randomized_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (relid, attname)
);
REVOKE ALL ON dp_pg.randomized_columns FROM PUBLIC;
GRANT SELECT ON dp_pg.randomized_columns TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('dp_pg.randomized_columns', '');
COMMENT ON TABLE dp_pg.randomized_columns IS
	'the locally private columns (dp_pg.randomize): each stored value is a randomized report over keys, epsilon-DP for the value written';
CREATE TRIGGER dp_pg_data_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dp_pg.randomized_columns
	FOR EACH STATEMENT EXECUTE FUNCTION dp_pg.data_changed('settings');
CREATE FUNCTION dp_pg.randomize_row() RETURNS trigger
	AS 'MODULE_PATHNAME', 'dp_randomize_row' LANGUAGE C;
COMMENT ON FUNCTION dp_pg.randomize_row() IS
	'the trigger of a table with locally private columns: stores each written value''s randomized report';
CREATE FUNCTION dp_pg.randomize_epsilon(mech dp_mechanism) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_randomize_epsilon' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- the declaration (the keys as given, NULL for a boolean, an enum's labels or
-- the column's public keys): checks, catalog row, trigger, existing rows
CREATE FUNCTION dp_pg.randomize_column(tbl regclass, col name, mechanism dp_mechanism, keys text[])
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	eps float8;
	att record;
	canon text[];
	fits boolean;
	n bigint;
BEGIN
	IF tbl IS NULL OR col IS NULL OR mechanism IS NULL THEN
		RAISE EXCEPTION 'table, column and mechanism must not be null' USING ERRCODE = '22004';
	END IF;
	eps := dp_pg.randomize_epsilon(mechanism);
	IF (SELECT relkind FROM pg_class WHERE oid = tbl) IS DISTINCT FROM 'r' THEN
		RAISE EXCEPTION 'only plain tables can have locally private columns, "%" is not one', tbl
			USING ERRCODE = '0A000';
	END IF;
	IF (SELECT relispartition FROM pg_class WHERE oid = tbl)
	   OR EXISTS (SELECT 1 FROM pg_inherits WHERE inhparent = tbl OR inhrelid = tbl) THEN
		RAISE EXCEPTION 'partitions and tables with inheritance children or parents cannot have locally private columns: "%"', tbl
			USING ERRCODE = '0A000',
			DETAIL = 'A partition''s routing reads the true value before any trigger.';
	END IF;
	SELECT a.attnum, a.atttypid::regtype AS typ, a.atttypmod, a.attgenerated, a.attidentity, a.attcollation,
		t.typtype, format_type(a.atttypid, a.atttypmod) AS typname
	INTO att FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
	WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of "%" does not exist', col, tbl USING ERRCODE = '42703';
	END IF;
	IF att.attgenerated <> '' OR att.attidentity <> '' THEN
		RAISE EXCEPTION 'column "%" of "%" is generated or an identity column; it cannot be locally private', col, tbl
			USING ERRCODE = '0A000';
	END IF;
	IF EXISTS (SELECT 1 FROM dp_pg.randomized_columns r WHERE r.relid = tbl AND r.attname = col) THEN
		RAISE EXCEPTION 'column "%" of "%" is already locally private', col, tbl USING ERRCODE = '42710',
			HINT = 'dp_pg.unrandomize() it first (its stored values stay randomized; randomizing them again would only add noise).';
	END IF;
	IF att.typ = 'boolean'::regtype THEN
		IF keys IS NOT NULL THEN
			RAISE EXCEPTION 'a boolean column is randomized over false and true: give no keys' USING ERRCODE = '22023';
		END IF;
		canon := '{f,t}';
	ELSIF att.typtype = 'e' THEN
		IF keys IS NULL THEN
			SELECT array_agg(enumlabel::text ORDER BY enumsortorder) INTO canon FROM pg_enum WHERE enumtypid = att.typ;
		END IF;
	ELSIF att.typ IN ('int2'::regtype, 'int4', 'int8', 'text', 'varchar') THEN
		IF att.typ IN ('text'::regtype, 'varchar') AND NOT EXISTS (
			SELECT 1 FROM pg_collation WHERE oid = att.attcollation AND collisdeterministic) THEN
			RAISE EXCEPTION 'column "%" of "%" has a nondeterministic collation', col, tbl USING ERRCODE = '0A000',
				DETAIL = 'Its values are compared with the keys byte by byte.';
		END IF;
		IF keys IS NULL THEN
			SELECT k.keys INTO keys FROM dp_pg.public_keys k WHERE k.relid = tbl AND k.attname = col;
		END IF;
		IF keys IS NULL THEN
			RAISE EXCEPTION 'column "%" of "%" needs its keys: the values it may hold', col, tbl USING ERRCODE = '22023',
				HINT = 'Pass them: dp_pg.randomize(table, column, mechanism, keys), or declare them with dp_pg.set_public_keys().';
		END IF;
	ELSE
		RAISE EXCEPTION 'column "%" of "%" is of type %; locally private columns are boolean, int2, int4, int8, text, varchar or an enum',
			col, tbl, att.typ USING ERRCODE = '0A000';
	END IF;
	IF canon IS NULL THEN
		IF array_position(keys, NULL) IS NOT NULL THEN
			RAISE EXCEPTION 'the keys of a locally private column must not contain null' USING ERRCODE = '22004';
		END IF;
		-- each key in the canonical spelling of the column's type, which the column can hold as it is
		EXECUTE format('SELECT array_agg(k::%s::text ORDER BY o), bool_and(k::%s::text = k::%s::text) '
			'FROM unnest($1) WITH ORDINALITY u(k, o)', att.typ, att.typ, att.typname)
			INTO canon, fits USING keys;
		IF NOT fits THEN
			RAISE EXCEPTION 'a key of column "%" of "%" does not fit its type %', col, tbl, att.typname USING ERRCODE = '22023';
		END IF;
	END IF;
	IF cardinality(canon) IS NULL OR cardinality(canon) < 2 OR cardinality(canon) > 1000 THEN
		RAISE EXCEPTION 'a locally private column needs between 2 and 1000 keys, got %', coalesce(cardinality(canon), 0)
			USING ERRCODE = '22023';
	END IF;
	IF (SELECT count(DISTINCT c) FROM unnest(canon) c) <> cardinality(canon) THEN
		RAISE EXCEPTION 'the keys of a locally private column must be distinct' USING ERRCODE = '22023';
	END IF;
	-- nothing may see a written value before the trigger does
	IF EXISTS (SELECT 1 FROM pg_rewrite WHERE ev_class = tbl) THEN
		RAISE EXCEPTION 'table "%" has rules; a rule would see the true value before it is randomized', tbl
			USING ERRCODE = '0A000';
	END IF;
	IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = tbl AND tgname <> '!dp_pg_randomize'
	           AND tgname::text COLLATE "C" < '!dp_pg_randomize' AND (tgtype & 3) = 3 AND (tgtype & 20) <> 0) THEN
		RAISE EXCEPTION 'table "%" has a BEFORE ROW INSERT or UPDATE trigger that would fire before dp_pg''s', tbl
			USING ERRCODE = '0A000', HINT = 'Rename it so that it sorts after "!dp_pg_randomize".';
	END IF;
	INSERT INTO dp_pg.randomized_columns (relid, attname, epsilon, keys, type) VALUES (tbl, col, eps, canon, att.typ);
	IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = tbl AND tgname = '!dp_pg_randomize') THEN
		EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION dp_pg.randomize_row()',
			'!dp_pg_randomize', tbl);
	END IF;
	EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', tbl, '!dp_pg_randomize');
	-- the values stored so far: randomized once, through the trigger
	EXECUTE format('UPDATE %s SET %I = %I WHERE %I IS NOT NULL', tbl, col, col, col);
	GET DIAGNOSTICS n = ROW_COUNT;
	IF n > 0 THEN
		RAISE NOTICE 'randomized the % values already in column "%" of "%"', n, col, tbl
			USING DETAIL = 'They were stored before: earlier WAL, backups and the table''s free space may hold them.',
			HINT = 'VACUUM FULL the table, then take a new base backup and remove the older ones and their WAL.';
	END IF;
END $$;
REVOKE EXECUTE ON FUNCTION dp_pg.randomize_column(regclass, name, dp_mechanism, text[]) FROM PUBLIC;
CREATE FUNCTION dp_pg.randomize(tbl regclass, col name, mechanism dp_mechanism) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
	PERFORM dp_pg.randomize_column(tbl, col, mechanism, NULL::text[]);
END $$;
CREATE FUNCTION dp_pg.randomize(tbl regclass, col name, mechanism dp_mechanism, keys anyarray) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
	IF keys IS NULL THEN
		RAISE EXCEPTION 'keys must not be null (leave them out for a boolean or an enum column)' USING ERRCODE = '22004';
	END IF;
	PERFORM dp_pg.randomize_column(tbl, col, mechanism, keys::text[]);
END $$;
COMMENT ON FUNCTION dp_pg.randomize(regclass, name, dp_mechanism) IS
	'make a boolean or enum column (or one with declared public keys) locally private: every value written is stored as its randomized report, rr(epsilon=E)';
COMMENT ON FUNCTION dp_pg.randomize(regclass, name, dp_mechanism, anyarray) IS
	'make a column locally private over the given keys: every value written is stored as its randomized report, rr(epsilon=E)';
CREATE FUNCTION dp_pg.unrandomize(tbl regclass, col name) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
	DELETE FROM dp_pg.randomized_columns r WHERE r.relid = tbl AND r.attname = col;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of "%" is not locally private', col, tbl USING ERRCODE = '22023';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM dp_pg.randomized_columns r WHERE r.relid = tbl) THEN
		EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', '!dp_pg_randomize', tbl);
	END IF;
END $$;
COMMENT ON FUNCTION dp_pg.unrandomize(regclass, name) IS
	'stop randomizing a column: values written from now on are stored as they are (those stored stay randomized)';
REVOKE EXECUTE ON FUNCTION dp_pg.randomize(regclass, name, dp_mechanism),
	dp_pg.randomize(regclass, name, dp_mechanism, anyarray), dp_pg.unrandomize(regclass, name) FROM PUBLIC;

-- what keeps the trigger first (docs/dba.md, "Locally private columns"): at the
-- end of any DDL that could change it, a table with locally private columns
-- must still be a plain table without rules, partitions or inheritance, keep
-- each column's name and type, and hold the trigger "!dp_pg_randomize" as
-- randomize() made it (made ALWAYS again if it was set to fire on origin
-- sessions only), with no BEFORE ROW INSERT/UPDATE trigger sorting before it;
-- dropped tables and columns are forgotten
CREATE FUNCTION dp_pg.forget_randomized() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM dp_pg.randomized_columns) THEN
		DELETE FROM dp_pg.randomized_columns r USING pg_event_trigger_dropped_objects() d
		WHERE d.classid = 'pg_class'::regclass AND d.objid = r.relid::oid
		  AND (d.objsubid = 0 OR (d.object_type = 'table column' AND d.address_names[3] = r.attname));
	END IF;
END $$;
REVOKE EXECUTE ON FUNCTION dp_pg.forget_randomized() FROM PUBLIC;
CREATE EVENT TRIGGER dp_pg_forget_randomized ON sql_drop EXECUTE FUNCTION dp_pg.forget_randomized();
ALTER EVENT TRIGGER dp_pg_forget_randomized ENABLE ALWAYS;
CREATE FUNCTION dp_pg.keep_randomized() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
DECLARE
	r record;
	t record;
	bad text;
BEGIN
	FOR r IN SELECT DISTINCT c.relid::oid AS relid FROM dp_pg.randomized_columns c LOOP
		bad := NULL;
		IF (SELECT relkind FROM pg_class WHERE oid = r.relid) IS DISTINCT FROM 'r'
		   OR (SELECT relispartition FROM pg_class WHERE oid = r.relid)
		   OR EXISTS (SELECT 1 FROM pg_inherits WHERE inhparent = r.relid OR inhrelid = r.relid) THEN
			bad := 'it would become a partition, get inheritance children or parents, or stop being a plain table';
		ELSIF EXISTS (SELECT 1 FROM dp_pg.randomized_columns c WHERE c.relid = r.relid AND NOT EXISTS (
			SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.relid AND a.attname = c.attname AND a.attnum > 0
			AND NOT a.attisdropped AND a.atttypid = c.type)) THEN
			bad := 'a locally private column would be renamed or change its type';
		ELSIF EXISTS (SELECT 1 FROM pg_rewrite WHERE ev_class = r.relid) THEN
			bad := 'it would have a rule, which sees the true value before the trigger';
		ELSIF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = r.relid AND tgname <> '!dp_pg_randomize'
		              AND tgname::text COLLATE "C" < '!dp_pg_randomize' AND (tgtype & 3) = 3 AND (tgtype & 20) <> 0) THEN
			bad := 'a BEFORE ROW INSERT or UPDATE trigger would fire before dp_pg''s';
		ELSE
			SELECT g.tgenabled, g.tgfoid, g.tgtype, g.tgqual, g.tgattr::text AS tgattr, g.tgnargs INTO t
			FROM pg_trigger g WHERE g.tgrelid = r.relid AND g.tgname = '!dp_pg_randomize';
			IF NOT FOUND THEN
				-- (a restore makes the trigger in its post-data section, after the catalog's rows)
				IF tg_tag IN ('DROP TRIGGER', 'ALTER TRIGGER') THEN
					bad := 'its trigger "!dp_pg_randomize" would be dropped or renamed';
				END IF;
			ELSIF t.tgfoid <> 'dp_pg.randomize_row()'::regprocedure OR t.tgtype <> 23 OR t.tgqual IS NOT NULL
			      OR t.tgattr <> '' OR t.tgnargs <> 0 THEN
				bad := 'its trigger "!dp_pg_randomize" would not be the one dp_pg.randomize() made';
			ELSIF t.tgenabled IN ('D', 'R') THEN
				bad := 'its trigger "!dp_pg_randomize" would be disabled';
			ELSIF t.tgenabled = 'O' THEN
				EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', r.relid::regclass, '!dp_pg_randomize');
			END IF;
		END IF;
		IF bad IS NOT NULL THEN
			RAISE EXCEPTION 'table "%" has locally private columns: %', r.relid::regclass, bad
				USING ERRCODE = '0A000',
				HINT = 'dp_pg.unrandomize() its columns first, or leave the table as it is.';
		END IF;
	END LOOP;
END $$;
REVOKE EXECUTE ON FUNCTION dp_pg.keep_randomized() FROM PUBLIC;
CREATE EVENT TRIGGER dp_pg_keep_randomized ON ddl_command_end
	WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE TRIGGER', 'ALTER TRIGGER', 'DROP TRIGGER', 'CREATE RULE',
	             'ALTER RULE')
	EXECUTE FUNCTION dp_pg.keep_randomized();
ALTER EVENT TRIGGER dp_pg_keep_randomized ENABLE ALWAYS;

-- the estimates (src/aggregates/agg_rr.c): the key-count state of
-- dp_histogram(key, mech), read as randomized response over the column's keys
CREATE FUNCTION dp_pg.rr_trans(internal, anyelement) RETURNS internal
	AS 'MODULE_PATHNAME', 'dp_histogram_keys_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION dp_pg.rr_trans(internal, anyelement, dp_mechanism) RETURNS internal
	AS 'MODULE_PATHNAME', 'dp_histogram_keys_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION dp_pg.rr_trans(internal, anyelement, anyelement) RETURNS internal
	AS 'MODULE_PATHNAME', 'dp_histogram_keys_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION dp_pg.rr_trans(internal, anyelement, anyelement, dp_mechanism) RETURNS internal
	AS 'MODULE_PATHNAME', 'dp_histogram_keys_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION dp_pg.rr_count_final(internal) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_rr_count_final' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION dp_pg.rr_count_mech_final(internal) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_rr_count_mech_final' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION dp_pg.rr_proportion_final(internal) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_rr_proportion_final' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION dp_pg.rr_proportion_mech_final(internal) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_rr_proportion_mech_final' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION dp_pg.rr_histogram_final(internal) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'dp_rr_histogram_final' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION dp_pg.rr_histogram_mech_final(internal) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'dp_rr_histogram_mech_final' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE AGGREGATE dp_rr_count(anyelement, anyelement) (
	SFUNC = dp_pg.rr_trans, STYPE = internal, COMBINEFUNC = dp_histogram_keys_combine,
	SERIALFUNC = dp_histogram_keys_serialize, DESERIALFUNC = dp_histogram_keys_deserialize,
	FINALFUNC = dp_pg.rr_count_final, PARALLEL = SAFE
);
CREATE AGGREGATE dp_rr_count(anyelement, anyelement, dp_mechanism) (
	SFUNC = dp_pg.rr_trans, STYPE = internal, COMBINEFUNC = dp_histogram_keys_combine,
	SERIALFUNC = dp_histogram_keys_serialize, DESERIALFUNC = dp_histogram_keys_deserialize,
	FINALFUNC = dp_pg.rr_count_mech_final, PARALLEL = SAFE
);
CREATE AGGREGATE dp_rr_proportion(anyelement, anyelement) (
	SFUNC = dp_pg.rr_trans, STYPE = internal, COMBINEFUNC = dp_histogram_keys_combine,
	SERIALFUNC = dp_histogram_keys_serialize, DESERIALFUNC = dp_histogram_keys_deserialize,
	FINALFUNC = dp_pg.rr_proportion_final, PARALLEL = SAFE
);
CREATE AGGREGATE dp_rr_proportion(anyelement, anyelement, dp_mechanism) (
	SFUNC = dp_pg.rr_trans, STYPE = internal, COMBINEFUNC = dp_histogram_keys_combine,
	SERIALFUNC = dp_histogram_keys_serialize, DESERIALFUNC = dp_histogram_keys_deserialize,
	FINALFUNC = dp_pg.rr_proportion_mech_final, PARALLEL = SAFE
);
CREATE AGGREGATE dp_rr_histogram(anyelement) (
	SFUNC = dp_pg.rr_trans, STYPE = internal, COMBINEFUNC = dp_histogram_keys_combine,
	SERIALFUNC = dp_histogram_keys_serialize, DESERIALFUNC = dp_histogram_keys_deserialize,
	FINALFUNC = dp_pg.rr_histogram_final, PARALLEL = SAFE
);
CREATE AGGREGATE dp_rr_histogram(anyelement, dp_mechanism) (
	SFUNC = dp_pg.rr_trans, STYPE = internal, COMBINEFUNC = dp_histogram_keys_combine,
	SERIALFUNC = dp_histogram_keys_serialize, DESERIALFUNC = dp_histogram_keys_deserialize,
	FINALFUNC = dp_pg.rr_histogram_mech_final, PARALLEL = SAFE
);
COMMENT ON AGGREGATE dp_rr_count(anyelement, anyelement) IS
	'unbiased estimate of how many rows hold value in a locally private column (free without a protected table, else a charged release with the default mechanism)';
COMMENT ON AGGREGATE dp_rr_count(anyelement, anyelement, dp_mechanism) IS
	'unbiased estimate of how many rows hold value in a locally private column (free without a protected table, else a charged release with mechanism)';
COMMENT ON AGGREGATE dp_rr_proportion(anyelement, anyelement) IS
	'estimated share of the rows holding value in a locally private column';
COMMENT ON AGGREGATE dp_rr_proportion(anyelement, anyelement, dp_mechanism) IS
	'estimated share of the rows holding value in a locally private column';
COMMENT ON AGGREGATE dp_rr_histogram(anyelement) IS
	'unbiased estimated count of every key of a locally private column, as jsonb';
COMMENT ON AGGREGATE dp_rr_histogram(anyelement, dp_mechanism) IS
	'unbiased estimated count of every key of a locally private column, as jsonb';

-- free helpers: the estimate and the lecture's bound from counts one already has
CREATE FUNCTION dp_pg.rr_estimate(reported float8, n float8, epsilon float8, k int4 DEFAULT 2) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_rr_estimate_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.rr_estimate(float8, float8, float8, int4) IS
	'unbiased estimate of how many of n rows hold a value that `reported` of them report, under randomized response at epsilon over k keys';
CREATE FUNCTION dp_pg.rr_halfwidth(n float8, epsilon float8, beta float8 DEFAULT 0.05, k int4 DEFAULT 2) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_rr_halfwidth_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.rr_halfwidth(float8, float8, float8, int4) IS
	'the Chernoff (Hoeffding) bound of randomized response: the estimated count of n rows is within this of the truth with probability 1 - beta (divide by n for a share)';

-- Group-wise relative error (src/core/groupwise.c; docs/privacy.md,
-- "Group-wise relative error"): seed 001's Algorithm 1 as a mechanism of
-- dp_count and dp_histogram with bins, groupwise(rho=R, r=X), charged its rho;
-- the per-group guarantee as a function of a group's size, computed
-- numerically from public inputs (free).
CREATE FUNCTION dp_groupwise(rho float8, r float8) RETURNS dp_mechanism
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_groupwise(float8, float8) IS
	'group-wise relative error (seed 001, Algorithm 1): a discrete Gaussian at rho, then noise of relative size r; rho-zCDP';
CREATE FUNCTION dp_pg.groupwise_divergence(mech dp_mechanism, group_size int8, alpha float8) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_groupwise_divergence_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.groupwise_divergence(dp_mechanism, int8, float8) IS
	'the largest Renyi divergence of order alpha between groupwise releases of counts group_size and group_size +- 1 (computed numerically)';
CREATE FUNCTION dp_pg.groupwise_rho(mech dp_mechanism, group_size int8) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_groupwise_rho_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.groupwise_rho(dp_mechanism, int8) IS
	'the per-group zCDP parameter of a group of group_size rows under a groupwise mechanism: max over alpha in [1.25, 64] of D_alpha / alpha';

-- Accuracy first (src/core/accuracy.c, src/core/interval.c; docs/privacy.md,
-- "Accuracy first"): accuracy(halfwidth=H, level=L[, rows=N]) names the
-- accuracy instead of the budget; dp_count, dp_sum, dp_avg and dp_histogram
-- with bins resolve it into the cheapest mechanism of the family the role's
-- accounting chooses.  dp_pg.accuracy_cost answers what a query would cost at
-- a given accuracy (planned, not run, not charged).
CREATE FUNCTION dp_accuracy(halfwidth float8, level float8 DEFAULT 0.95, rows int4 DEFAULT 1) RETURNS dp_mechanism
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_accuracy(float8, float8, int4) IS
	'the cheapest noise whose closed interval [answer - halfwidth, answer + halfwidth] holds the truth with probability level (dp_avg: for groups of rows values or more)';
CREATE FUNCTION dp_pg.accuracy_cost(query text, halfwidth float8, level float8 DEFAULT 0.95, rows int4 DEFAULT 1,
	OUT epsilon float8, OUT delta float8, OUT rho float8, OUT call_sites int4, OUT mechanisms text)
	RETURNS record AS 'MODULE_PATHNAME', 'dp_accuracy_cost' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION dp_pg.accuracy_cost(text, float8, float8, int4) IS
	'what a query would cost if each dp aggregate with an error bar asked for accuracy(halfwidth, level, rows), and the mechanisms chosen (planned, not run, not charged)';

-- Error bars beside their groups (src/guard/order.c, src/release/bars.c):
-- dp_pg.last_releases gives each released value of its own (an average per
-- group) its group's keys, in the order of the query's output.  The guard
-- writes dp_pg.release_keys into a DP level's projection and
-- dp_pg.release_order around the top level; analysts may not call them.
-- release_keys is declared STABLE (it only notes what it is given): a volatile
-- function in a DP level's select list would be evaluated after its ORDER BY,
-- once every group is final, not with each group's projection
CREATE FUNCTION dp_pg.release_keys(VARIADIC "any") RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_release_keys' LANGUAGE C STABLE PARALLEL RESTRICTED COST 1;
COMMENT ON FUNCTION dp_pg.release_keys(VARIADIC "any") IS
	'the keys of a released group, named in its DP level for dp_pg.last_releases (written by the guard)';
CREATE FUNCTION dp_pg.release_order(VARIADIC "any") RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_release_order' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION dp_pg.release_order(VARIADIC "any") IS
	'a released group reached the query''s output, in its order, for dp_pg.last_releases (written by the guard)';
DROP VIEW dp_pg.last_releases;
DROP FUNCTION dp_pg.last_release_rows();
CREATE FUNCTION dp_pg.last_release_rows(OUT site int, OUT aggregate text, OUT mechanism text,
	OUT noise_sd float8, OUT ci95_halfwidth float8, OUT epsilon float8, OUT delta float8, OUT rho float8,
	OUT from_cache boolean, OUT released_at timestamptz, OUT value float8, OUT ci95_lower float8,
	OUT ci95_upper float8, OUT ci95_rank_halfwidth float8, OUT note text, OUT group_keys text[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'dp_last_releases' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION dp_pg.last_release_rows() IS
	'the session''s last release, exactly: one row per call site, and per released value of a site with values of their own (group_keys: its group''s keys, rows in the order of the query''s output)';
CREATE VIEW dp_pg.last_releases AS
	SELECT r.site, r.aggregate, r.group_keys, r.mechanism, dp_pg.display_round(r.noise_sd) AS noise_sd,
		dp_pg.display_round(r.ci95_halfwidth, 1) AS ci95_halfwidth, dp_pg.display_round(r.epsilon) AS epsilon,
		dp_pg.display_round(r.delta) AS delta, dp_pg.display_round(r.rho) AS rho, r.from_cache, r.released_at, r.value,
		dp_pg.display_round(r.ci95_lower, -1) AS ci95_lower, dp_pg.display_round(r.ci95_upper, 1) AS ci95_upper,
		dp_pg.display_round(r.ci95_rank_halfwidth, 1) AS ci95_rank_halfwidth, r.note
	FROM dp_pg.last_release_rows() r;
GRANT SELECT ON dp_pg.last_releases TO PUBLIC;
COMMENT ON VIEW dp_pg.last_releases IS
	'the error bar of each value the session''s last dp query released: the closed 95% interval [answer - h, answer + h] of the noise (h = ci95_halfwidth), an average''s own [ci95_lower, ci95_upper] with its group''s keys (group_keys, in the output''s order), a quantile''s rank interval; note says what each covers (clamping and unit bounding are in none); six significant digits, intervals rounded outwards (exactly: dp_pg.last_release_rows())';

-- Partitioned tables, inheritance parents and foreign partitions
-- (src/guard/partitions.c, src/common/protected.c; docs/dba.md, "Partitioned
-- tables").  protect() takes a partitioned table or an inheritance parent:
-- its declaration holds for every partition and inheritance child, now and
-- later, which are read only through it.  It locks the table before it
-- changes anything of it, so that it cannot deadlock with the VACUUM
-- ANALYZE autovacuum runs on a table just loaded.  A table detached from a
-- protected one stays protected (protect_detached, run by the guard before
-- the DETACH); row predicates a foreign partition's server may not evaluate
-- are wrapped in keep_local.
--
CREATE FUNCTION dp_pg.check_family(tbl regclass) RETURNS void
	AS 'MODULE_PATHNAME', 'dp_check_family' LANGUAGE C STRICT;
COMMENT ON FUNCTION dp_pg.check_family(regclass) IS
	'error if a partition or inheritance child of the table (at any depth) is something an analyst could shape';
CREATE FUNCTION dp_pg.keep_local(boolean) RETURNS boolean
	AS 'MODULE_PATHNAME', 'dp_keep_local' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.keep_local(boolean) IS
	'its argument: the guard wraps a row predicate in it that no foreign server may evaluate (postgres_fdw ships no call of it)';

CREATE OR REPLACE FUNCTION dp_pg.protect(tbl regclass, privacy_unit name DEFAULT NULL,
	max_groups_contributed int DEFAULT 1, max_rows_per_unit int DEFAULT 1)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	kind "char";
	seq regclass;
	r regrole;
	member regclass;
BEGIN
	IF tbl IS NULL THEN
		RAISE EXCEPTION 'table must not be null' USING ERRCODE = '22004';
	END IF;
	SELECT relkind INTO kind FROM pg_class WHERE oid = tbl;
	IF kind IS NULL OR kind NOT IN ('r', 'p', 'f') THEN
		RAISE EXCEPTION 'only tables, partitioned tables and foreign tables can be protected, "%" is not one', tbl
			USING ERRCODE = '0A000';
	END IF;
	IF privacy_unit IS NOT NULL AND NOT EXISTS (
		SELECT 1 FROM pg_attribute WHERE attrelid = tbl AND attname = privacy_unit AND attnum > 0 AND NOT attisdropped) THEN
		RAISE EXCEPTION 'column "%" of "%" does not exist', privacy_unit, tbl USING ERRCODE = '42703';
	END IF;
	IF max_groups_contributed IS NULL OR max_groups_contributed < 1 OR max_groups_contributed > 100000 OR
	   max_rows_per_unit IS NULL OR max_rows_per_unit < 1 OR max_rows_per_unit > 1000000000 THEN
		RAISE EXCEPTION 'max_groups_contributed must be between 1 and 100000 and max_rows_per_unit between 1 and 1000000000'
			USING ERRCODE = '22023';
	END IF;
	-- the table first, before any catalog row of it changes: a VACUUM ANALYZE
	-- of a table just loaded (autovacuum) then waits for this transaction or
	-- is cancelled, and never holds the table while it waits for a row we
	-- changed (its partitions are not locked: nothing below waits for them)
	IF kind <> 'f' THEN
		EXECUTE format('LOCK TABLE ONLY %s IN ACCESS EXCLUSIVE MODE', tbl);
	END IF;
	INSERT INTO dp_pg.protected_tables (relid, privacy_unit, max_groups_contributed, max_rows_per_unit)
	VALUES (tbl, privacy_unit, max_groups_contributed, max_rows_per_unit)
	ON CONFLICT (relid) DO UPDATE SET privacy_unit = EXCLUDED.privacy_unit,
		max_groups_contributed = EXCLUDED.max_groups_contributed,
		max_rows_per_unit = EXCLUDED.max_rows_per_unit;
	EXECUTE format('REVOKE ALL ON %s FROM PUBLIC', tbl);
	-- its sequences count its rows
	FOR seq IN SELECT d.objid::regclass FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
	           WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
	             AND d.refobjid = tbl AND d.deptype IN ('a', 'i') AND c.relkind = 'S' LOOP
		EXECUTE format('REVOKE ALL ON SEQUENCE %s FROM PUBLIC', seq);
	END LOOP;
	-- analysts must hold no privilege on it (the guard reads it for them)
	PERFORM dp_pg.revoke_from_analysts(tbl);
	-- nor on its partitions and inheritance children (at any depth), which are
	-- protected with it; none of them may be something an analyst could shape
	FOR member IN WITH RECURSIVE m(relid) AS (
	                  SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = tbl
	                  UNION SELECT i.inhrelid FROM pg_inherits i JOIN m ON i.inhparent = m.relid)
	              SELECT m.relid::regclass FROM m ORDER BY m.relid LOOP
		EXECUTE format('REVOKE ALL ON %s FROM PUBLIC', member);
		PERFORM dp_pg.revoke_from_analysts(member);
	END LOOP;
	PERFORM dp_pg.check_family(tbl);
	-- table pickers list it: SELECT for dp_pg_analyst, whose rows outside
	-- the guard are none (a restrictive policy); other roles' access unchanged
	-- (a foreign table has no row-level security: it is not listed)
	IF kind <> 'f' THEN
		IF NOT (SELECT relrowsecurity FROM pg_class WHERE oid = tbl) THEN
			EXECUTE format('ALTER TABLE ONLY %s ENABLE ROW LEVEL SECURITY', tbl);
			IF NOT EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = tbl AND polname = 'dp_pg_others') THEN
				EXECUTE format('CREATE POLICY dp_pg_others ON %s USING (true) WITH CHECK (true)', tbl);
			END IF;
		END IF;
		IF NOT EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = tbl AND polname = 'dp_pg_analysts') THEN
			EXECUTE format('CREATE POLICY dp_pg_analysts ON %s AS RESTRICTIVE FOR SELECT TO dp_pg_analyst USING (dp_pg.analyst_rows())', tbl);
		END IF;
		EXECUTE format('GRANT SELECT ON %s TO dp_pg_analyst', tbl);
		-- its writes make its kept answers miss (src/cache.c), also under session_replication_role = replica
		-- (made again each time: exactly this trigger, whatever was there before)
		IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = tbl AND tgname = 'dp_pg_data_changed') THEN
			EXECUTE format('DROP TRIGGER dp_pg_data_changed ON %s', tbl);
		END IF;
		EXECUTE format('CREATE TRIGGER dp_pg_data_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s '
			'FOR EACH STATEMENT EXECUTE FUNCTION dp_pg.data_changed()', tbl);
		EXECUTE format('ALTER TABLE ONLY %s ENABLE ALWAYS TRIGGER dp_pg_data_changed', tbl);
		EXECUTE format('GRANT USAGE ON SCHEMA %I TO dp_pg_analyst',
			(SELECT nspname FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid WHERE c.oid = tbl));
	END IF;
	-- every role with a budget is in dp_pg_analyst (again, if a grant was rolled back)
	FOR r IN SELECT b.role FROM dp_pg.budgets b
	         WHERE EXISTS (SELECT 1 FROM pg_roles WHERE oid = b.role) AND NOT EXISTS (SELECT 1 FROM pg_auth_members m
	               WHERE m.roleid = 'dp_pg_analyst'::regrole AND m.member = b.role) LOOP
		EXECUTE format('GRANT dp_pg_analyst TO %s', r);
	END LOOP;
END $$;
COMMENT ON FUNCTION dp_pg.protect(regclass, name, int, int) IS
	'mark a table private: analysts reach it only through dp aggregates (revokes PUBLIC privileges; SELECT for dp_pg_analyst with a policy that gives it no row outside the guard); a partitioned table or inheritance parent with every partition and child, now and later';

CREATE OR REPLACE FUNCTION dp_pg.unprotect(tbl regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM dp_pg.protected_tables WHERE relid = tbl) THEN
		RETURN;
	END IF;
	-- the table first, as protect() does
	IF (SELECT relkind FROM pg_class WHERE oid = tbl) <> 'f' THEN
		EXECUTE format('LOCK TABLE ONLY %s IN ACCESS EXCLUSIVE MODE', tbl);
	END IF;
	DELETE FROM dp_pg.protected_tables WHERE relid = tbl;
	-- what protect() added for table pickers goes; other privileges stay as they are
	IF EXISTS (SELECT 1 FROM pg_class c, aclexplode(c.relacl) a
	           WHERE c.oid = tbl AND a.grantee = 'dp_pg_analyst'::regrole) THEN
		EXECUTE format('REVOKE SELECT ON %s FROM dp_pg_analyst', tbl);
	END IF;
	IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = tbl AND tgname = 'dp_pg_data_changed') THEN
		EXECUTE format('DROP TRIGGER dp_pg_data_changed ON %s', tbl);
	END IF;
	IF EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = tbl AND polname = 'dp_pg_analysts') THEN
		EXECUTE format('DROP POLICY dp_pg_analysts ON %s', tbl);
	END IF;
	IF EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = tbl AND polname = 'dp_pg_others') THEN
		EXECUTE format('DROP POLICY dp_pg_others ON %s', tbl);
		IF NOT EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = tbl) THEN
			EXECUTE format('ALTER TABLE ONLY %s DISABLE ROW LEVEL SECURITY', tbl);
		END IF;
	END IF;
END $$;
COMMENT ON FUNCTION dp_pg.unprotect(regclass) IS
	'remove the protection (its SELECT for dp_pg_analyst and its policies go; other privileges are left as they are); a partitioned table''s partitions with it, a table detached from a protected one that stayed protected';

-- a table about to leave a protected table's family (DETACH PARTITION, NO
-- INHERIT): the guard runs this before the statement, as dp_pg's owner
CREATE FUNCTION dp_pg.protect_detached(tbl regclass, root regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	p record;
BEGIN
	SELECT * INTO p FROM dp_pg.protected_tables t WHERE t.relid = root;
	IF NOT FOUND OR EXISTS (SELECT 1 FROM dp_pg.protected_tables t WHERE t.relid = tbl) THEN
		RETURN;
	END IF;
	PERFORM dp_pg.protect(tbl, p.privacy_unit, p.max_groups_contributed, p.max_rows_per_unit);
	INSERT INTO dp_pg.public_keys (relid, attname, keys)
		SELECT tbl, k.attname, k.keys FROM dp_pg.public_keys k WHERE k.relid = root
		ON CONFLICT DO NOTHING;
	INSERT INTO dp_pg.column_domains (relid, attname, lower, upper)
		SELECT tbl, d.attname, d.lower, d.upper FROM dp_pg.column_domains d WHERE d.relid = root
		ON CONFLICT DO NOTHING;
	RAISE NOTICE 'dp_pg: % stays protected as it leaves %, with the privacy unit, value domains and public keys of %', tbl, root, root
		USING HINT = format('A superuser ends its protection with SELECT dp_pg.unprotect(%L).', tbl::text);
END $$;
COMMENT ON FUNCTION dp_pg.protect_detached(regclass, regclass) IS
	'protect a table leaving a protected table''s family with that table''s declaration (the guard calls it before DETACH PARTITION and NO INHERIT)';
REVOKE EXECUTE ON FUNCTION dp_pg.check_family(regclass), dp_pg.protect_detached(regclass, regclass) FROM PUBLIC;
