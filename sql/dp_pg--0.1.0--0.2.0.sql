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
-- src/names.c, src/retention.c, src/guard/grants.c)
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
