--
-- Questions about persons, not rows (src/guard/perunit.c): aggregates over
-- per-unit aggregates on a table with a privacy unit, private distinct counts,
-- and the audit's findings (top-N subqueries over listed keys, sums of
-- generalising functions, LEAST / GREATEST intervals, error bars beside their
-- groups: src/guard/order.c).
--
-- 1. exact answers (dp_pg.debug_noiseless, test builds: the analyst path
--    through SET ROLE under a superuser session) equal the bounded values
--    computed here in plain SQL: per-unit counts clamped to R = g r rows
--    (one cell per unit) or r (per cell of a key), sums of clamped values
--    clamped to R values' range, minima, filters on per-unit values (outer
--    WHERE, inner HAVING), histograms of per-unit counts with every value of
--    the domain listed, public keys outside, distinct counts;
-- 2. one unit's influence: a heavy customer moves a per-unit sum by at most
--    its clamp;
-- 3. the charge (the mechanism not split when a unit has one cell, split
--    over g cells otherwise) and the error bars;
-- 4. refusals, uncharged: per-unit values released raw, through ORDER BY,
--    LIMIT, windows, GROUP BY on the unit, a second level of nesting, keys of
--    the inner query missing outside, non-total expressions;
-- 5. the audit's findings.
-- No noisy value is printed.
--
CREATE ROLE pu_owner;
CREATE ROLE pu_analyst;
CREATE SCHEMA pu AUTHORIZATION pu_owner;
GRANT USAGE ON SCHEMA pu TO pu_analyst;
SET client_min_messages = warning;
-- orders: unit customer_id, g = 2, r = 3 (R = 6 without keys); customers
-- 1..40 have 1 to 8 orders in one region each (so at most 2 cells each),
-- customer 1 (heavy) 60 more
CREATE TABLE pu.orders (id int PRIMARY KEY, customer_id int NOT NULL, region text NOT NULL,
                        amount numeric(8, 2) NOT NULL CHECK (amount BETWEEN 0 AND 100),
                        qty int NOT NULL CHECK (qty BETWEEN 1 AND 9), y float8 NOT NULL,
                        d date NOT NULL CHECK (d BETWEEN '2024-01-01' AND '2024-12-31'));
INSERT INTO pu.orders
SELECT row_number() OVER (), c, (ARRAY['north','south','east','west'])[1 + c % 4], (c * k) % 97 + 0.5,
       1 + (c + k) % 9, ((c * 7 + k) % 23) / 2.0, date '2024-01-01' + (c * 11 + k * 5) % 360
FROM generate_series(1, 40) c, generate_series(1, 1 + c % 8) k;
INSERT INTO pu.orders SELECT 1000 + i, 1, 'north', 100, 9, 11.5, '2024-06-01' FROM generate_series(1, 60) i;
-- customers: one row per person (unit customer_id, g = 1, r = 1), joined to the orders on the unit
CREATE TABLE pu.customers (customer_id int PRIMARY KEY, segment text NOT NULL);
INSERT INTO pu.customers SELECT c, (ARRAY['retail','business'])[1 + c % 2] FROM generate_series(1, 45) c;
-- visits: no unit (a row is a person), public keys on region
CREATE TABLE pu.visits (id int PRIMARY KEY, region text NOT NULL, amount int NOT NULL CHECK (amount BETWEEN 0 AND 1000),
                        y float8 NOT NULL, code int NOT NULL);
INSERT INTO pu.visits SELECT i, (ARRAY['north','south','east','west'])[1 + i % 4], i % 1000, (i % 21) / 2.0, i % 37
FROM generate_series(1, 400) i;
RESET client_min_messages;
ALTER TABLE pu.orders OWNER TO pu_owner;
ALTER TABLE pu.visits OWNER TO pu_owner;
ALTER TABLE pu.customers OWNER TO pu_owner;
SELECT dp_pg.protect('pu.orders', 'customer_id', 2, 3) IS NOT NULL AS orders;
SELECT dp_pg.protect('pu.visits') IS NOT NULL AS visits;
SELECT dp_pg.protect('pu.customers', 'customer_id', 1, 1) IS NOT NULL AS customers;
SELECT dp_pg.set_public_keys('pu.customers', 'segment', ARRAY['retail','business']) IS NOT NULL AS keys;
SELECT dp_pg.set_public_keys('pu.orders', 'region', ARRAY['north','south','east','west']) IS NOT NULL AS keys;
SELECT dp_pg.set_public_keys('pu.visits', 'region', ARRAY['north','south','east','west']) IS NOT NULL AS keys;
SELECT dp_pg.set_domain('pu.visits', 'y', 0, 20) IS NOT NULL AS domain;
SELECT dp_pg.set_budget('pu_analyst', epsilon => 100000, delta => 1e-2) IS NOT NULL AS budget;
ALTER ROLE pu_analyst SET dp_pg.default_mechanism = 'laplace(epsilon=1)';

CREATE FUNCTION pu.charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS
	$$SELECT count(*) FROM dp_pg.ledger_entries WHERE role = 'pu_analyst'::regrole AND kind = 'charge'$$;
CREATE FUNCTION pu.try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	before bigint := pu.charges();
	state text := 'ok';
BEGIN
	BEGIN
		EXECUTE q;
	EXCEPTION WHEN OTHERS THEN
		state := SQLSTATE;
	END;
	RETURN state || CASE WHEN pu.charges() > before THEN ' [charged]' ELSE '' END;
END $$;
GRANT EXECUTE ON FUNCTION pu.charges(), pu.try(text) TO pu_analyst;
-- a statement's rows as the analyst (noiseless, test build), sorted as text
CREATE FUNCTION pu.released(q text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	r text[];
BEGIN
	SET dp_pg.debug_noiseless = on;
	SET dp_pg.default_mechanism = 'laplace(epsilon=1)';
	EXECUTE 'SET ROLE pu_analyst';
	EXECUTE format('SELECT array_agg(x::text ORDER BY x::text) FROM (%s) x', q) INTO r;
	RESET ROLE;
	RESET dp_pg.debug_noiseless;
	RESET dp_pg.default_mechanism;
	RETURN r;
END $$;
-- the same from the superuser's plain SQL
CREATE FUNCTION pu.truth(q text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	r text[];
BEGIN
	EXECUTE format('SELECT array_agg(x::text ORDER BY x::text) FROM (%s) x', q) INTO r;
	RETURN r;
END $$;
-- rows (as text) equal field by field, numbers within 1e-9 (averages are ratios of exact sums)
CREATE FUNCTION pu.close(a text[], b text[]) RETURNS boolean LANGUAGE sql AS $$
	SELECT cardinality(a) = cardinality(b) AND bool_and(
		CASE WHEN x ~ '^-?[0-9.]+(e[-+]?[0-9]+)?$' AND y ~ '^-?[0-9.]+(e[-+]?[0-9]+)?$'
		     THEN abs(x::float8 - y::float8) <= 1e-9 * (1 + abs(y::float8)) ELSE x = y END)
	FROM unnest(a, b) AS r(ra, rb),
	     unnest(string_to_array(trim(ra, '()'), ','), string_to_array(trim(rb, '()'), ',')) AS f(x, y)
$$;

--
-- 1. exact answers: the per-unit bounded truth in plain SQL
--
-- one cell per unit: a unit's count clamped to R = g r = 6 rows
SELECT pu.close(pu.released($q$SELECT avg(n) AS a, sum(n) AS s, count(*) AS units
	FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$),
	pu.truth($q$SELECT avg(least(n, 6)) AS a, sum(least(n, 6)) AS s, count(*) AS units
	FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$)) AS orders_per_customer;
-- "how many customers ordered 1, 2, 3... times": every value 1..6 listed, zeros too
SELECT pu.released($q$SELECT n, count(*) AS customers
	FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s GROUP BY n$q$)
     = pu.truth($q$SELECT v AS n, count(s.n) AS customers FROM generate_series(1, 6) v
	LEFT JOIN (SELECT customer_id, least(count(*), 6) AS n FROM pu.orders GROUP BY customer_id) s ON s.n = v GROUP BY v$q$)
       AS histogram;
-- sums of clamped amounts per unit, clamped to [0, 6 x 100]; an average order per customer
SELECT pu.close(pu.released($q$SELECT sum(t) AS total, avg(t / n) AS per_order
	FROM (SELECT customer_id, count(*) AS n, sum(amount) AS t FROM pu.orders GROUP BY customer_id) s$q$),
	pu.truth($q$SELECT sum(least(t, 600)) AS total, avg(least(t, 600) / least(n, 6)) AS per_order
	FROM (SELECT customer_id, count(*) AS n, sum(amount) AS t FROM pu.orders GROUP BY customer_id) s$q$)) AS sums;
-- repeat customers (a CASE over per-unit values), filters: the outer WHERE and the inner HAVING
SELECT pu.close(pu.released($q$SELECT avg(CASE WHEN n > 1 THEN 1.0 ELSE 0 END) AS repeat_share
	FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$),
	pu.truth($q$SELECT avg(CASE WHEN n > 1 THEN 1.0 ELSE 0 END) AS repeat_share
	FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$)) AS repeat_share;
SELECT pu.released($q$SELECT count(*) AS units, sum(n) AS s FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s WHERE n >= 4$q$)
     = pu.truth($q$SELECT count(*) AS units, sum(least(n, 6)) AS s FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s WHERE least(n, 6) >= 4$q$)
       AS outer_where;
SELECT pu.released($q$SELECT count(*) AS units FROM (SELECT customer_id FROM pu.orders GROUP BY customer_id HAVING sum(qty) > 20) s$q$)
     = pu.truth($q$SELECT count(*) AS units FROM (SELECT customer_id FROM pu.orders GROUP BY customer_id HAVING least(sum(qty), 54) > 20) s$q$)
       AS inner_having;
-- minima and maxima per unit (within the column's domain), averaged
SELECT pu.close(pu.released($q$SELECT avg(lo) AS lo, avg(hi) AS hi FROM (SELECT customer_id, min(qty) AS lo, max(amount) AS hi FROM pu.orders GROUP BY customer_id) s$q$),
	pu.truth($q$SELECT avg(lo) AS lo, avg(hi) AS hi FROM (SELECT customer_id, min(qty) AS lo, max(amount) AS hi FROM pu.orders GROUP BY customer_id) s$q$)) AS minima;
-- distinct customers, in dbplyr's spelling of distinct() %>% count()
SELECT pu.released($q$SELECT count(*) AS n FROM (SELECT DISTINCT customer_id FROM pu.orders) q01$q$)
     = pu.truth($q$SELECT count(DISTINCT customer_id) AS n FROM pu.orders$q$) AS distinct_units;
-- public keys outside: a cell per (unit, region), r = 3 rows each; every region listed
SELECT pu.close(pu.released($q$SELECT region, avg(n) AS a, count(*) AS units
	FROM (SELECT customer_id, region, count(*) AS n FROM pu.orders GROUP BY customer_id, region) s GROUP BY region$q$),
	pu.truth($q$SELECT region, avg(least(n, 3)) AS a, count(*) AS units
	FROM (SELECT customer_id, region, count(*) AS n FROM pu.orders GROUP BY customer_id, region) s GROUP BY region$q$)) AS by_region;
-- a histogram per region: every (region, value) pair listed
SELECT cardinality(pu.released($q$SELECT region, n, count(*) FROM (SELECT customer_id, region, count(*) AS n FROM pu.orders
	GROUP BY customer_id, region) s GROUP BY region, n$q$)) AS region_value_pairs;
-- hand-written dp aggregates with their own bounds (n clamped to [0, 4] by dp_sum)
SELECT pu.released($q$SELECT dp_sum(n, 0, 4, 'laplace(epsilon=1)') AS s FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$)
     = pu.truth($q$SELECT sum(least(least(n, 6), 4)) AS s FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$) AS explicit_bounds;
-- two tables joined on their unit (unitjoin.c): g = 2 x 1, r = 3 x 1, so R = 6 again
SELECT pu.close(pu.released($q$SELECT avg(n) AS a, count(*) AS units FROM (SELECT o.customer_id, count(*) AS n
	FROM pu.orders o JOIN pu.customers c USING (customer_id) GROUP BY o.customer_id) s$q$),
	pu.truth($q$SELECT avg(least(n, 6)) AS a, count(*) AS units FROM (SELECT o.customer_id, count(*) AS n
	FROM pu.orders o JOIN pu.customers c USING (customer_id) GROUP BY o.customer_id) s$q$)) AS unit_join;
SELECT pu.close(pu.released($q$SELECT segment, avg(n) AS a FROM (SELECT o.customer_id, c.segment, count(*) AS n
	FROM pu.orders o JOIN pu.customers c USING (customer_id) GROUP BY o.customer_id, c.segment) s GROUP BY segment$q$),
	pu.truth($q$SELECT segment, avg(least(n, 3)) AS a FROM (SELECT o.customer_id, c.segment, count(*) AS n
	FROM pu.orders o JOIN pu.customers c USING (customer_id) GROUP BY o.customer_id, c.segment) s GROUP BY segment$q$)) AS unit_join_by_segment;
-- a wrapper around the release is post-processing
SELECT pu.released($q$SELECT n * 10 AS tens, c FROM (SELECT n, count(*) AS c FROM (SELECT customer_id, count(*) AS n FROM pu.orders
	GROUP BY customer_id) s GROUP BY n) w WHERE c > 0$q$)
     = pu.truth($q$SELECT n * 10 AS tens, count(*) AS c FROM (SELECT customer_id, least(count(*), 6) AS n FROM pu.orders
	GROUP BY customer_id) s GROUP BY n$q$) AS wrapped;
-- distinct values: on a table without a unit (one row, at most one value), and with one
-- (each unit keeps at most r = 3 of its values; here no unit has more than 3 distinct ones among the kept rows' holders)
SELECT pu.released($q$SELECT count(DISTINCT code) AS n FROM pu.visits$q$)
     = pu.truth($q$SELECT count(DISTINCT code) AS n FROM pu.visits$q$) AS distinct_values;
SELECT pu.released($q$SELECT region, count(DISTINCT code) AS n FROM pu.visits GROUP BY region$q$)
     = pu.truth($q$SELECT region, count(DISTINCT code) AS n FROM pu.visits GROUP BY region$q$) AS distinct_by_key;
SELECT pu.released($q$SELECT count(DISTINCT qty) AS n FROM pu.orders$q$)
     = pu.truth($q$SELECT count(DISTINCT qty) AS n FROM pu.orders$q$) AS distinct_unit_table;

--
-- 2. one unit's influence: the heavy customer 1 (61 orders) adds at most
--    R = 6 to the sum of counts, 6 x 100 to the sum of amounts
--
SELECT pu.released($q$SELECT sum(n) AS s, sum(t) AS t FROM (SELECT customer_id, count(*) AS n, sum(amount) AS t FROM pu.orders GROUP BY customer_id) s$q$)
	AS with_heavy \gset
SELECT pu.released($q$SELECT sum(n) AS s, sum(t) AS t FROM (SELECT customer_id, count(*) AS n, sum(amount) AS t FROM pu.orders
	WHERE customer_id <> 1 GROUP BY customer_id) s$q$) AS without_heavy \gset
SELECT (split_part(trim((:'with_heavy'::text[])[1], '()'), ',', 1)::numeric
        - split_part(trim((:'without_heavy'::text[])[1], '()'), ',', 1)::numeric) AS count_moved,
       (split_part(trim((:'with_heavy'::text[])[1], '()'), ',', 2)::numeric
        - split_part(trim((:'without_heavy'::text[])[1], '()'), ',', 2)::numeric) <= 600 AS sum_within_clamp;

--
-- 3. the charge and the error bars
--
SET SESSION AUTHORIZATION pu_analyst;
-- one cell per unit: the mechanism whole; a cell per region: split over g = 2
SELECT epsilon, call_sites FROM dp_pg.estimate_cost($q$SELECT avg(n) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$);
SELECT aggregate, mechanism, noise_sd > 0 AS noisy FROM dp_pg.error_bars($q$SELECT n, count(*) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s GROUP BY n$q$);
SELECT aggregate, mechanism FROM dp_pg.error_bars($q$SELECT region, count(*) FROM (SELECT customer_id, region, count(*) AS n FROM pu.orders GROUP BY customer_id, region) s GROUP BY region$q$);
SELECT pu.charges() AS before \gset
SELECT count(*) = 6 AS six_values FROM (SELECT n, count(*) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s GROUP BY n) h;
SELECT pu.charges() - :before AS one_charge;
RESET SESSION AUTHORIZATION;
SELECT (SELECT array_agg((s->>'aggregate') || ' l1=' || (s->>'l1') ORDER BY s->>'aggregate')
        FROM jsonb_array_elements(e.detail->'sites') s) AS sites
FROM dp_pg.ledger_entries e WHERE e.role = 'pu_analyst'::regrole AND e.kind = 'charge' ORDER BY e.id DESC LIMIT 1;

--
-- 4. refused, nothing charged
--
SET SESSION AUTHORIZATION pu_analyst;
SELECT q AS statement, pu.try(q) AS result FROM (VALUES
	-- per-unit values released raw, or chosen by other units' values
	($q$SELECT n FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$),
	($q$SELECT * FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$),
	($q$SELECT max(n), n FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$),
	($q$SELECT avg(n) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id ORDER BY n DESC LIMIT 5) s$q$),
	($q$SELECT avg(n) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id OFFSET 1) s$q$),
	($q$SELECT avg(r) FROM (SELECT customer_id, rank() OVER (ORDER BY count(*)) AS r FROM pu.orders GROUP BY customer_id) s$q$),
	($q$SELECT count(*) FROM (SELECT DISTINCT ON (customer_id) customer_id, amount FROM pu.orders) s$q$),
	($q$SELECT count(*) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s HAVING max(n) > 0 ORDER BY n$q$),
	-- groups that are single persons; a unit counted once per key of the inner query in one group
	($q$SELECT customer_id, avg(n) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s GROUP BY customer_id$q$),
	($q$SELECT avg(n) FROM (SELECT customer_id, region, count(*) AS n FROM pu.orders GROUP BY customer_id, region) s$q$),
	-- a second level of nesting
	($q$SELECT avg(m) FROM (SELECT customer_id, count(*) AS m FROM (SELECT customer_id, d, count(*) AS n FROM pu.orders GROUP BY customer_id, d) x GROUP BY customer_id) y$q$),
	-- expressions that could fail on a per-unit value, or are not per-unit values
	($q$SELECT avg(1 / (n - 3)) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s$q$),
	($q$SELECT count(*) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s WHERE 10 % (n - 2) = 0$q$),
	($q$SELECT avg(q) FROM (SELECT customer_id, sum(amount) / count(*) AS q FROM pu.orders GROUP BY customer_id) s$q$),
	($q$SELECT avg(l) FROM (SELECT customer_id, string_agg(region, ',') AS l FROM pu.orders GROUP BY customer_id) s$q$),
	($q$SELECT avg(s) FROM (SELECT customer_id, dp_count(*) AS s FROM pu.orders GROUP BY customer_id) s$q$),
	($q$SELECT avg(n) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id HAVING 1 / (count(*) - 2) > 0) s$q$),
	($q$SELECT avg(n) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s WHERE n IN (SELECT 1)$q$),
	-- a distinct count beside another aggregate on a unit table, or over keys a unit reaches more than g of
	($q$SELECT count(DISTINCT qty), count(*) FROM pu.orders$q$),
	($q$SELECT region, count(DISTINCT qty) FROM pu.orders GROUP BY region$q$),
	($q$SELECT count(DISTINCT (region, qty)) FROM pu.orders$q$),
	-- without a unit, a GROUP BY of the rows' key is still a group per person
	($q$SELECT avg(n) FROM (SELECT id, count(*) AS n FROM pu.visits GROUP BY id) s$q$)
) AS c(q);
-- above the dp aggregates everything is post-processing of released values: allowed
SELECT pu.try($q$SELECT count(*) FROM (SELECT customer_id, count(*) AS n FROM pu.orders GROUP BY customer_id) s ORDER BY max(n)$q$)
       AS order_by_a_release;
RESET SESSION AUTHORIZATION;

--
-- 5. the audit's findings
--
SET SESSION AUTHORIZATION pu_analyst;
-- a top-N subquery over a column with public keys (Superset's series limit on
-- a small table): the outer release lists the keys it released, without
-- partition selection (two call sites, no dp_pg.partition_keep)
SELECT pu.charges() AS before \gset
SELECT count(*) AS regions FROM (SELECT region, count(*) AS count FROM pu.visits
	JOIN (SELECT region AS region__, count(*) AS mme_inner__ FROM pu.visits GROUP BY region ORDER BY mme_inner__ DESC LIMIT 2) AS anon_1
	ON region = region__ GROUP BY region) s;
SELECT pu.charges() - :before AS one_charge;
SELECT aggregate, mechanism FROM dp_pg.error_bars($q$SELECT region, count(*) FROM pu.visits
	JOIN (SELECT region AS region__, count(*) AS c FROM pu.visits GROUP BY region ORDER BY c DESC LIMIT 2) AS anon_1
	ON region = region__ GROUP BY region$q$);
-- sums of generalising functions, as with "+ 0"
SELECT q AS statement, pu.try(q) AS result FROM (VALUES
	($q$SELECT sum(floor(y)) FROM pu.visits$q$),
	($q$SELECT sum(round(y)) FROM pu.visits$q$),
	($q$SELECT avg(ceil(y)) FROM pu.visits$q$),
	($q$SELECT sum(extract(day FROM d)) FROM pu.orders$q$),
	($q$SELECT sum(width_bucket(y, 0, 20, 4)) FROM pu.visits$q$)
) AS c(q);
-- LEAST / GREATEST: the bounds of a translated sum come from the tighter interval
-- (laplace(epsilon=1): noise_sd = sqrt(2) x the bound of one row's value)
SELECT aggregate, round(noise_sd / sqrt(2)) AS bound FROM dp_pg.error_bars($q$SELECT sum(least(amount, 10)) FROM pu.visits$q$);
SELECT aggregate, round(noise_sd / sqrt(2)) AS bound FROM dp_pg.error_bars($q$SELECT sum(amount) FROM pu.visits$q$);
SELECT aggregate, round(noise_sd / sqrt(2)) AS bound FROM dp_pg.error_bars($q$SELECT sum(greatest(amount - 900, 0)) FROM pu.visits$q$);
SELECT aggregate, round(noise_sd / sqrt(2)) AS bound FROM dp_pg.error_bars($q$SELECT sum(least(amount, 10, 50)) FROM pu.visits$q$);
-- a NULL may reach LEAST: it is skipped, so the other argument's bound does not cap it
SELECT aggregate, round(noise_sd / sqrt(2)) AS bound FROM dp_pg.error_bars($q$SELECT sum(least(amount, NULLIF(amount, 3))) FROM pu.visits$q$);
-- averages' error bars carry their group's keys, in the output's order (the values not printed)
\o /dev/null
SELECT region, avg(y) AS a FROM pu.visits GROUP BY region ORDER BY region DESC;
\o
SELECT array_agg(group_keys[1]) AS output_order FROM dp_pg.last_releases;
\o /dev/null
SELECT region, avg(y), count(*) FROM pu.visits GROUP BY region ORDER BY region DESC LIMIT 2;
\o
SELECT array_agg(aggregate || ':' || coalesce(group_keys::text, 'every group')) AS limit_then_the_rest FROM dp_pg.last_releases;
\o /dev/null
SELECT n, avg(t) FROM (SELECT customer_id, count(*) AS n, sum(amount) AS t FROM pu.orders GROUP BY customer_id) s GROUP BY n ORDER BY n DESC;
\o
SELECT array_agg(group_keys[1]) AS per_unit_output_order FROM dp_pg.last_releases;
-- a wrapper's output is not the release's: by the keys' text
\o /dev/null
SELECT * FROM (SELECT region, avg(y) AS a FROM pu.visits GROUP BY region) s ORDER BY region DESC;
\o
SELECT array_agg(group_keys[1]) AS by_keys FROM dp_pg.last_releases;
-- release_keys and release_order are the guard's: refused in a query that reads a protected table
SELECT pu.try($q$SELECT dp_pg.release_order(region) FROM (SELECT region, avg(y) FROM pu.visits GROUP BY region) s$q$) AS release_order,
       pu.try($q$SELECT region, dp_pg.release_keys(region) FROM pu.visits GROUP BY region$q$) AS release_keys;
RESET SESSION AUTHORIZATION;

SET client_min_messages = warning;
DROP SCHEMA pu CASCADE;
RESET client_min_messages;
SELECT dp_pg.drop_budget('pu_analyst');
DROP ROLE pu_analyst;
DROP ROLE pu_owner;
