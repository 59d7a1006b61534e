--
-- units_guard: a hostile analyst against a table with a privacy unit.
-- Every refusal changes nothing (the analyst's ledger rows are counted around
-- each statement); every allowed shape is still bounded by the catalog's
-- declaration, whatever the analyst sets.
--
\set VERBOSITY terse
CREATE SCHEMA ug;
CREATE ROLE ug_owner;
CREATE ROLE ug_analyst;
GRANT USAGE ON SCHEMA ug TO ug_owner, ug_analyst;
GRANT CREATE ON SCHEMA ug TO ug_owner, ug_analyst;
-- the analyst's own operators, made before it had a budget (it may not make code once it has one)
SET ROLE ug_analyst;
CREATE FUNCTION ug.spy(float8, float8) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'spy saw %', $1; END $$;
CREATE FUNCTION ug.spy_mul(float8, float8) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'spy_mul saw %', $1; END $$;
CREATE OPERATOR ug.<> (LEFTARG = float8, RIGHTARG = float8, FUNCTION = ug.spy);
CREATE OPERATOR ug.* (LEFTARG = float8, RIGHTARG = float8, FUNCTION = ug.spy_mul);
CREATE OPERATOR ug./ (LEFTARG = float8, RIGHTARG = float8, FUNCTION = ug.spy_mul);
RESET ROLE;
SELECT dp_pg.set_budget('ug_analyst', 1000, 1e-3);

SET ROLE ug_owner;
-- one heavy person (1,000 visits in 4 wards) and 300 light ones (1 visit)
CREATE TABLE ug.visits (person int8, ward int4, cost float8, note text);
INSERT INTO ug.visits SELECT 1, g % 4, 500, 'heavy' FROM generate_series(1, 1000) g;
INSERT INTO ug.visits SELECT 100 + g, g % 4, 10, 'light' FROM generate_series(1, 300) g;
RESET ROLE;
SELECT dp_pg.protect('ug.visits', 'person', 2, 3);
SELECT dp_pg.set_public_keys('ug.visits', 'ward', ARRAY[0, 1, 2, 3]);

-- the analyst's number of charges, readable by the analyst
CREATE FUNCTION ug.charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER
	SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger WHERE role = 'ug_analyst'::regrole AND kind = 'charge'
$$;
-- run a statement: "SQLSTATE" or "ok", and " [CHARGED]" if the ledger grew
CREATE FUNCTION ug.try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	before bigint := ug.charges();
	r text;
BEGIN
	BEGIN
		EXECUTE q;
		r := 'ok';
	EXCEPTION WHEN OTHERS THEN
		r := SQLSTATE;
	END;
	IF ug.charges() <> before THEN
		r := r || ' [CHARGED]';
	END IF;
	RETURN r;
END $$;
-- the number of rows a statement returns
CREATE FUNCTION ug.rows(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE q;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END $$;
GRANT EXECUTE ON FUNCTION ug.try(text), ug.charges(), ug.rows(text) TO ug_analyst;

SET SESSION AUTHORIZATION ug_analyst;
-- refused before execution, nothing charged
SELECT q, ug.try(q) FROM (VALUES
	($q$SELECT * FROM ug.visits$q$),
	($q$SELECT person, count(*) FROM ug.visits GROUP BY person$q$),
	($q$SELECT dp_pg.bounded_sum(person, 0::int8, 1000000::int8, 'laplace(epsilon=1)', 1) FROM ug.visits$q$),
	($q$SELECT dp_pg.bounded_sum(1::int8, 0::int8, 1::int8, 'laplace(epsilon=1)', 1) FROM ug.visits$q$),
	($q$SELECT dp_pg.bounded_count(person, 0::int8, 1000000::int8, 'laplace(epsilon=1)', 1) FROM ug.visits$q$),
	($q$SELECT dp_pg.bounded_histogram_keys(note, 'gaussian(epsilon=1, delta=1e-6)', 1000::int8, 1000::int8, 1) FROM ug.visits$q$),
	($q$SELECT ward, dp_count(*) FROM ug.visits GROUP BY ward HAVING dp_pg.bounded_partition_keep('gaussian(epsilon=1, delta=1e-6)', 1)$q$),
	($q$SELECT dp_count(*) FROM ug.visits WHERE dp_pg.unit_priority() > 0$q$),
	($q$SELECT dp_count(*) FROM ug.visits WHERE dp_pg.histogram_bucket(cost, 0, 1000, 10) = 1$q$),
	($q$SELECT dp_count(*) FROM ug.visits v JOIN ug.visits w ON v.person = w.person$q$),
	($q$SELECT dp_count(*) FROM (SELECT DISTINCT ON (person) person, cost FROM ug.visits) s$q$),
	($q$SELECT dp_count(*) OVER () FROM ug.visits$q$),
	($q$EXPLAIN SELECT dp_count(*) FROM ug.visits$q$),
	($q$SELECT dp_histogram(ward, ARRAY[0,1], 'laplace(epsilon=1)'), dp_count(*) FROM ug.visits$q$),
	($q$SELECT ward, dp_histogram(note, ARRAY['heavy'], 'laplace(epsilon=1)') FROM ug.visits GROUP BY ward$q$),
	($q$SELECT dp_sum(cost, 0, 'Infinity', 'laplace(epsilon=1)') FROM ug.visits$q$),
	($q$SET dp_pg.debug_noiseless = on$q$)
) AS c(q);

-- the analyst's settings do not loosen the catalog's bounds (person, g = 2, r = 3)
SET dp_pg.privacy_unit = 'ward';
SET dp_pg.max_groups_contributed = 100000;
SET dp_pg.max_rows_per_unit = 1000000;
SELECT ug.try($q$SELECT ward, dp_count(*) FROM ug.visits GROUP BY ward$q$) AS grouped;
SELECT ug.try($q$SELECT dp_sum(cost, 0, 1000, 'laplace(epsilon=1)') FROM ug.visits WHERE person = 1$q$) AS one_person;
-- a view of the analyst's own over the table is a subquery: refused, not charged
CREATE VIEW ug.my_view AS SELECT person, ward FROM ug.visits;
SELECT ug.try($q$SELECT ward, dp_count(*) FROM ug.my_view GROUP BY ward$q$) AS through_view;
-- operators of the analyst's own (made before it had a budget), first in the
-- search_path, never run inside the bounding rewrite (it names pg_catalog's
-- operators; and an analyst's code never runs in its session: 42501, not P0001)
SET search_path = ug, pg_catalog, public;
SELECT ug.try($q$SELECT dp_sum(cost, 0, 1000, 'laplace(epsilon=1)') FROM ug.visits$q$) AS sum_shadowed,
       ug.try($q$SELECT dp_avg(cost, 0, 1000, 'laplace(epsilon=1)') FROM ug.visits$q$) AS avg_shadowed;
RESET search_path;
RESET dp_pg.privacy_unit;
RESET dp_pg.max_groups_contributed;
RESET dp_pg.max_rows_per_unit;
RESET SESSION AUTHORIZATION;

-- each allowed query was charged with the declared bounds: rows 3 per cell, and for
-- GROUP BY the mechanism split over g = 2 of the 4 public wards
SELECT e.epsilon, s->>'mechanism' AS mechanism, (s->>'l1')::int AS l1,
       coalesce((s->>'unit_groups')::int, 1) AS unit_groups
FROM dp_pg.ledger e, jsonb_array_elements(e.detail->'sites') s
WHERE e.role = 'ug_analyst'::regrole AND e.kind = 'charge'
ORDER BY e.id, s->>'mechanism';

-- a WHERE on the public-key column restricts the listed keys (and the units' cells)
SET SESSION AUTHORIZATION ug_analyst;
SELECT ward, dp_count(*) IS NOT NULL AS answered FROM ug.visits WHERE ward IN (1, 3) GROUP BY ward;
RESET SESSION AUTHORIZATION;

-- GROUP BY the privacy unit itself: every group would be one unit, so an
-- analyst's query is refused before anything is charged (sql/unit_groups.sql);
-- partition selection over units would release no person's key anyway, as a
-- trusted role's query (bounded and selected alike) shows (each of the 301 keys
-- appears with probability at most delta / g = 5e-13: false failure <= 1.6e-10)
SET dp_pg.partition_mechanism = 'gaussian(epsilon=0.5, delta=1e-12)';
SET SESSION AUTHORIZATION ug_analyst;
SELECT ug.try($q$SELECT person, dp_count(*) FROM ug.visits GROUP BY person$q$) AS analyst;
RESET SESSION AUTHORIZATION;
SELECT ug.rows($q$SELECT person, dp_count(*) FROM ug.visits GROUP BY person$q$) AS persons_released;
RESET dp_pg.partition_mechanism;

-- a trusted role (here the superuser) is bounded too, so a dp aggregate over the
-- table anywhere but directly in the outermost query is refused
SELECT q, ug.try(q) FROM (VALUES
	($q$SELECT dp_count(*) FROM (SELECT * FROM ug.visits) s$q$),
	($q$SELECT (SELECT dp_count(*) FROM ug.visits)$q$),
	($q$WITH c AS (SELECT dp_count(*) FROM ug.visits) SELECT * FROM c$q$),
	($q$SELECT dp_count(*) FROM ug.my_view$q$),
	($q$SELECT dp_count(*) FROM ug.visits$q$),
	($q$SELECT count(*) FROM (SELECT * FROM ug.visits) s$q$)
) AS c(q);

-- nor through a function returning the table's rows: a SQL function is inlined
-- after the guard looked (the final plan is checked), a PL/pgSQL one runs its
-- own query while the dp query runs (checked when it starts); a GROUP BY over
-- one would release a person's key without partition selection
CREATE FUNCTION ug.rows_sql() RETURNS SETOF ug.visits LANGUAGE sql STABLE AS 'SELECT * FROM ug.visits';
CREATE FUNCTION ug.rows_pl() RETURNS SETOF ug.visits LANGUAGE plpgsql AS 'BEGIN RETURN QUERY SELECT * FROM ug.visits; END';
SELECT q, ug.try(q) FROM (VALUES
	($q$SELECT dp_count(1, 'laplace(epsilon=1)') FROM ug.rows_sql()$q$),
	($q$SELECT dp_count(1, 'laplace(epsilon=1)') FROM ug.rows_pl()$q$),
	($q$SELECT person, dp_count(*) FROM ug.rows_sql() GROUP BY person$q$),
	($q$SELECT dp_count(*) FROM ug.rows_sql() WHERE person = 1$q$),
	($q$SELECT count(*) FROM ug.rows_sql()$q$),
	($q$SELECT count(*) FROM ug.rows_pl()$q$)
) AS c(q);
SET SESSION AUTHORIZATION ug_analyst;
SELECT q, ug.try(q) FROM (VALUES
	($q$SELECT dp_count(1, 'laplace(epsilon=1)') FROM ug.rows_sql()$q$),
	($q$SELECT dp_count(1, 'laplace(epsilon=1)') FROM ug.rows_pl()$q$),
	($q$SELECT 1::float8 OPERATOR(ug.<>) 2::float8$q$)
) AS c(q);
RESET SESSION AUTHORIZATION;

-- GROUP BY public keys: rows with undeclared keys never take one of a unit's g
-- cells (exact values, test build): with wards 0 and 1 declared and g = 2, the
-- heavy person always counts r = 3 in both, whatever its rows in wards 2 and 3
CREATE TABLE ug.visits2 AS SELECT * FROM ug.visits;
SELECT dp_pg.protect('ug.visits2', 'person', 2, 3);
SELECT dp_pg.set_public_keys('ug.visits2', 'ward', ARRAY[0, 1]);
SET dp_pg.debug_noiseless = on;
CREATE TABLE ug.runs AS SELECT 0 AS run, 0 AS ward, 0::bigint AS n WHERE false;
DO $$
DECLARE
	rec record;
BEGIN
	FOR i IN 1..10 LOOP
		FOR rec IN SELECT ward, dp_count(*) AS n FROM ug.visits2 GROUP BY ward LOOP
			INSERT INTO ug.runs VALUES (i, rec.ward, rec.n);
		END LOOP;
	END LOOP;
END $$;
SELECT ward, min(n) AS min_n, max(n) AS max_n,
       (SELECT count(*) FROM ug.visits2 v WHERE v.ward = r.ward AND person <> 1) + 3 AS expected
FROM ug.runs r GROUP BY ward ORDER BY ward;
RESET dp_pg.debug_noiseless;

DROP SCHEMA ug CASCADE;
SELECT dp_pg.drop_budget('ug_analyst');
DROP ROLE ug_analyst;
DROP ROLE ug_owner;
