--
-- Two protected tables joined on their shared privacy unit
-- (src/guard/unitjoin.c): the joined rows are bounded per unit with the
-- products of the two tables' bounds, so the guarantee stays per person.
--
-- 1. exact answers (dp_pg.debug_noiseless, test builds: the analyst path
--    through SET ROLE under a superuser session) equal the bounded values
--    computed here in plain SQL from the raw tables: revenue by customer
--    segment, a filter on the unit table, a LEFT JOIN from the unit table
--    (units without orders count), a customers table protected without a unit
--    (one row per person, joined on its unique key);
-- 2. one unit's influence is bounded: adding the heavy customer (60 orders,
--    and two customer rows: duplicate amplification 60 x 2) moves a count by
--    at most r1 r2 per cell and at most g1 g2 cells, and no more;
-- 3. the charge: each call site's mechanism split over g1 g2 cells, as
--    dp_pg.estimate_cost says;
-- 4. refusals, uncharged: joins on a column that is not the unit, across
--    types or under a nondeterministic collation, self-joins, three protected
--    tables, two tables without a unit, outer joins that preserve the second
--    table, a unit table read through a subquery.
-- No noisy value is printed.
--
CREATE ROLE uj_owner;
CREATE ROLE uj_analyst;
CREATE SCHEMA uj AUTHORIZATION uj_owner;
GRANT USAGE ON SCHEMA uj TO uj_analyst;
SET client_min_messages = warning;
-- orders: unit customer_id, g = 2, r = 3; customers 1..40 have 4 to 11
-- orders each in both regions, customer 1 (heavy) 60 more in north
CREATE TABLE uj.orders (id int PRIMARY KEY, customer_id int NOT NULL, region text NOT NULL,
                        amount int NOT NULL CHECK (amount BETWEEN 0 AND 100));
INSERT INTO uj.orders SELECT i, 1 + i % 40, (ARRAY['north','south'])[1 + (i / 40) % 2], i % 100
FROM generate_series(1, 300) i;
INSERT INTO uj.orders SELECT 1000 + i, 1, 'north', 100 FROM generate_series(1, 60) i;
-- customers: unit customer_id, g = 1, r = 1; 45 customers (41..45 without
-- orders), and a second row for customer 1 (a unit with two rows)
CREATE TABLE uj.customers (row_id int PRIMARY KEY, customer_id int NOT NULL, segment text NOT NULL);
INSERT INTO uj.customers SELECT c, c, (ARRAY['retail','business'])[1 + c % 2] FROM generate_series(1, 45) c;
INSERT INTO uj.customers VALUES (100, 1, 'retail');
-- people: the same persons, protected without a unit (one row per person, customer_id unique)
CREATE TABLE uj.people (customer_id int PRIMARY KEY, segment text NOT NULL, code text COLLATE "C" NOT NULL);
INSERT INTO uj.people SELECT c, (ARRAY['retail','business'])[1 + c % 2], 'p' || c FROM generate_series(1, 45) c;
-- a third protected table, and one without a unit that is not unique on customer_id
CREATE TABLE uj.visits (customer_id int NOT NULL, n int NOT NULL);
INSERT INTO uj.visits SELECT c, c FROM generate_series(1, 45) c;
CREATE TABLE uj.notes (customer_id int NOT NULL, note text NOT NULL);
INSERT INTO uj.notes SELECT c, 'n' FROM generate_series(1, 45) c;
-- two tables whose unit is a name (text)
CREATE TABLE uj.ta (name text NOT NULL, v int NOT NULL);
INSERT INTO uj.ta VALUES ('ann', 1), ('ANN', 2), ('bob', 3);
CREATE TABLE uj.tb (name text NOT NULL, w int NOT NULL);
INSERT INTO uj.tb VALUES ('ann', 1), ('Ann', 2), ('bob', 3);
RESET client_min_messages;
ALTER TABLE uj.orders OWNER TO uj_owner;
ALTER TABLE uj.customers OWNER TO uj_owner;
ALTER TABLE uj.people OWNER TO uj_owner;
ALTER TABLE uj.visits OWNER TO uj_owner;
ALTER TABLE uj.notes OWNER TO uj_owner;
ALTER TABLE uj.ta OWNER TO uj_owner;
ALTER TABLE uj.tb OWNER TO uj_owner;
SELECT dp_pg.protect('uj.orders', 'customer_id', 2, 3) IS NOT NULL AS orders;
SELECT dp_pg.protect('uj.customers', 'customer_id', 1, 1) IS NOT NULL AS customers;
SELECT dp_pg.protect('uj.people') IS NOT NULL AS people;
SELECT dp_pg.protect('uj.visits', 'customer_id', 1, 1) IS NOT NULL AS visits;
SELECT dp_pg.protect('uj.notes') IS NOT NULL AS notes;
SELECT dp_pg.protect('uj.ta', 'name', 1, 2) IS NOT NULL AS ta;
SELECT dp_pg.protect('uj.tb', 'name', 1, 2) IS NOT NULL AS tb;
SELECT dp_pg.set_budget('uj_analyst', epsilon => 10000, delta => 1e-2) IS NOT NULL AS budget;

CREATE FUNCTION uj.charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS
	$$SELECT count(*) FROM dp_pg.ledger_entries WHERE role = 'uj_analyst'::regrole AND kind = 'charge'$$;
CREATE FUNCTION uj.try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	before bigint := uj.charges();
	state text := 'ok';
BEGIN
	BEGIN
		EXECUTE q;
	EXCEPTION WHEN OTHERS THEN
		state := SQLSTATE;
	END;
	RETURN state || CASE WHEN uj.charges() > before THEN ' [charged]' ELSE '' END;
END $$;
GRANT EXECUTE ON FUNCTION uj.charges(), uj.try(text) TO uj_analyst;
-- a statement's rows as the analyst (noiseless, test build), sorted as text
CREATE FUNCTION uj.released(q text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	r text[];
BEGIN
	SET dp_pg.debug_noiseless = on;
	EXECUTE 'SET ROLE uj_analyst';
	EXECUTE format('SELECT array_agg(x::text ORDER BY x::text) FROM (%s) x', q) INTO r;
	RESET ROLE;
	RESET dp_pg.debug_noiseless;
	RETURN r;
END $$;
-- the same from the superuser's plain SQL
CREATE FUNCTION uj.truth(q text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	r text[];
BEGIN
	EXECUTE format('SELECT array_agg(x::text ORDER BY x::text) FROM (%s) x', q) INTO r;
	RETURN r;
END $$;
-- partition selection (split over g = 2 cells per unit) that keeps every key
-- of 4 units or more: the keys below are held by 20 units or more
SET dp_pg.partition_mechanism = 'gaussian(epsilon=20, delta=1e-4)';
SELECT dp_pg.partition_threshold('gaussian(epsilon=10, delta=5e-5)') <= 4 AS low_threshold;

--
-- 1. exact answers: the per-unit bounded truth in plain SQL.  Joined rows of
--    a unit: its orders times its customer rows; per (unit, cell) at most
--    r = 3 x 1 rows (count least(n, 3), sum of amounts clamped to [0, 3 x 100]),
--    at most g = 2 x 1 cells per unit (every unit here has at most 2 cells)
--
SELECT uj.released($q$SELECT c.segment, sum(o.amount) AS s, count(*) AS n
	FROM uj.orders o JOIN uj.customers c USING (customer_id) GROUP BY c.segment$q$)
     = uj.truth($q$SELECT segment, sum(least(s, 300)) AS s, sum(least(n, 3)) AS n
	FROM (SELECT o.customer_id, c.segment, sum(o.amount) s, count(*) n
	      FROM uj.orders o JOIN uj.customers c USING (customer_id) GROUP BY 1, 2) x GROUP BY 1$q$) AS revenue_by_segment;
SELECT uj.released($q$SELECT o.region, count(*) AS n FROM uj.customers c JOIN uj.orders o ON o.customer_id = c.customer_id
	WHERE c.segment = 'retail' GROUP BY o.region$q$)
     = uj.truth($q$SELECT region, sum(least(n, 3)) AS n
	FROM (SELECT o.customer_id, o.region, count(*) n FROM uj.customers c JOIN uj.orders o ON o.customer_id = c.customer_id
	      WHERE c.segment = 'retail' GROUP BY 1, 2) x GROUP BY 1$q$) AS filter_on_unit_table;
-- a LEFT JOIN from the customers: the 5 units without orders count their row
SELECT uj.released($q$SELECT count(*) AS n, count(o.id) AS with_orders FROM uj.customers c LEFT JOIN uj.orders o USING (customer_id)$q$)
     = uj.truth($q$SELECT sum(least(n, 3)) AS n, sum(least(k, 3)) AS with_orders
	FROM (SELECT c.customer_id, count(*) n, count(o.id) k FROM uj.customers c LEFT JOIN uj.orders o USING (customer_id) GROUP BY 1) x$q$)
       AS left_join_units_in_one_table;
-- a table of one row per person without a unit, joined on its unique key: the orders' bounds
SELECT uj.released($q$SELECT p.segment, count(*) AS n FROM uj.orders o JOIN uj.people p USING (customer_id) GROUP BY p.segment$q$)
     = uj.truth($q$SELECT segment, sum(least(n, 3)) AS n
	FROM (SELECT o.customer_id, p.segment, count(*) n FROM uj.orders o JOIN uj.people p USING (customer_id) GROUP BY 1, 2) x
	GROUP BY 1$q$) AS person_table_without_unit;
-- count(DISTINCT unit): persons with an order, by segment
SELECT uj.released($q$SELECT c.segment, count(DISTINCT o.customer_id) AS persons FROM uj.orders o JOIN uj.customers c USING (customer_id) GROUP BY 1$q$)
     = uj.truth($q$SELECT c.segment, count(DISTINCT o.customer_id) AS persons FROM uj.orders o JOIN uj.customers c USING (customer_id) GROUP BY 1$q$)
       AS distinct_persons;

--
-- 2. one unit's influence: the heavy customer 1 (60 + 7 orders, 2 customer
--    rows: 134 joined rows) moves each cell by at most r1 r2 = 3 rows
--
SELECT uj.released($q$SELECT o.region, count(*) AS n FROM uj.orders o JOIN uj.customers c USING (customer_id) GROUP BY o.region$q$) AS with_heavy \gset
SELECT uj.released($q$SELECT o.region, count(*) AS n FROM uj.orders o JOIN uj.customers c USING (customer_id)
	WHERE o.customer_id <> 1 GROUP BY o.region$q$) AS without_heavy \gset
SELECT (SELECT count(*) FROM uj.orders o JOIN uj.customers c USING (customer_id) WHERE o.customer_id = 1) AS heavy_joined_rows;
SELECT a.region, (a.n - b.n) AS moved, (a.n - b.n) <= 3 AS within_r
FROM (SELECT split_part(trim(x, '()'), ',', 1) AS region, split_part(trim(x, '()'), ',', 2)::int AS n FROM unnest(:'with_heavy'::text[]) x) a
JOIN (SELECT split_part(trim(x, '()'), ',', 1) AS region, split_part(trim(x, '()'), ',', 2)::int AS n FROM unnest(:'without_heavy'::text[]) x) b
USING (region) ORDER BY 1;

--
-- 3. the charge: g = 2 cells per unit (2 x 1), the mechanism split over them
--
SET SESSION AUTHORIZATION uj_analyst;
SELECT epsilon, call_sites FROM dp_pg.estimate_cost($q$SELECT c.segment, count(*) FROM uj.orders o JOIN uj.customers c USING (customer_id) GROUP BY 1$q$);
SELECT uj.charges() AS before \gset
SELECT count(*) >= 0 AS answered FROM (SELECT c.segment, count(*) FROM uj.orders o JOIN uj.customers c USING (customer_id) GROUP BY 1) s;
RESET SESSION AUTHORIZATION;
SELECT uj.charges() - :before AS charge_rows, e.epsilon,
       (SELECT array_agg((s->>'aggregate') || ' g=' || coalesce(s->>'unit_groups', '1') ORDER BY s->>'aggregate')
        FROM jsonb_array_elements(e.detail->'sites') s) AS sites
FROM dp_pg.ledger_entries e WHERE e.role = 'uj_analyst'::regrole AND e.kind = 'charge' ORDER BY e.id DESC LIMIT 1;

--
-- 4. refused, nothing charged
--
CREATE COLLATION uj.nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SET SESSION AUTHORIZATION uj_analyst;
SELECT q AS statement, uj.try(q) AS result FROM (VALUES
	-- a column that is not the unit (rows of different persons would meet)
	($q$SELECT count(*) FROM uj.orders o JOIN uj.customers c ON c.customer_id = o.id$q$),
	($q$SELECT count(*) FROM uj.orders o JOIN uj.customers c ON c.row_id = o.customer_id$q$),
	($q$SELECT count(*) FROM uj.orders o, uj.customers c$q$),
	($q$SELECT count(*) FROM uj.orders o JOIN uj.customers c ON c.customer_id <= o.customer_id$q$),
	-- across types, or under a nondeterministic collation
	($q$SELECT count(*) FROM uj.orders o JOIN uj.customers c ON c.customer_id::int8 = o.customer_id::int8$q$),
	($q$SELECT count(*) FROM uj.ta JOIN uj.tb ON ta.name = tb.name COLLATE uj.nocase$q$),
	-- a table joined to itself; three protected tables
	($q$SELECT count(*) FROM uj.orders o JOIN uj.orders o2 USING (customer_id)$q$),
	($q$SELECT count(*) FROM uj.orders o JOIN uj.customers c USING (customer_id) JOIN uj.visits v USING (customer_id)$q$),
	-- two tables without a unit; a table without a unit not unique on the join column
	($q$SELECT count(*) FROM uj.people p JOIN uj.notes n USING (customer_id)$q$),
	($q$SELECT count(*) FROM uj.orders o JOIN uj.notes n USING (customer_id)$q$),
	-- outer joins that preserve the second table, or both
	($q$SELECT count(*) FROM uj.orders o RIGHT JOIN uj.customers c USING (customer_id)$q$),
	($q$SELECT count(*) FROM uj.orders o FULL JOIN uj.customers c USING (customer_id)$q$),
	-- the second table through a subquery, or in a scalar subquery
	($q$SELECT count(*) FROM uj.orders o JOIN (SELECT * FROM uj.customers WHERE segment = 'retail') c USING (customer_id)$q$),
	($q$SELECT count(*) FROM uj.orders o WHERE o.customer_id IN (SELECT customer_id FROM uj.customers WHERE segment = 'retail')$q$)
) AS c(q);
-- the text units under their own (deterministic) collation: allowed
SELECT uj.try($q$SELECT count(*) FROM uj.ta JOIN uj.tb USING (name)$q$) AS text_unit_join;
RESET SESSION AUTHORIZATION;

SET client_min_messages = warning;
DROP SCHEMA uj CASCADE;
RESET client_min_messages;
SELECT dp_pg.drop_budget('uj_analyst');
DROP ROLE uj_analyst;
DROP ROLE uj_owner;
RESET dp_pg.partition_mechanism;
