--
-- Several releases in one query (src/guard/multi.c): GROUPING SETS, ROLLUP,
-- CUBE, Malloy's grouping sets spelled as a join to a constant series,
-- Superset's series limit (a top-N dp subquery whose released keys filter
-- the outer query), Cube's rolling windows (a window over released rows).
--
-- 1. exact answers: the analyst path (guard rewrite) through SET ROLE under a
--    superuser session with dp_pg.debug_noiseless on (test builds: no noise)
--    equals the plain SQL the superuser runs on the same rows;
-- 2. one charge row per statement, listing every call site with its release
--    (DP level), whose total is the sum of the releases (sequential
--    composition over releases), equal to what dp_pg.estimate_cost and
--    dp_pg.error_bars say before it runs;
-- 3. the answer cache keys and serves such statements (a repeat is served
--    uncharged; another constant in one release misses);
-- 4. refusals, each uncharged: a series that is not a GROUP BY key, not
--    constant or empty, too many grouping sets, a released subquery used
--    beyond its join columns, joined on a column that is not its output's or
--    LATERAL, or reading protected rows beside its DP level, a window over
--    protected rows, a dp aggregate as a window function.
-- No noisy value is printed: the noiseless checks cannot fail by chance.
--
CREATE ROLE rel_owner;
CREATE ROLE rel_analyst;
CREATE SCHEMA rel AUTHORIZATION rel_owner;
GRANT USAGE ON SCHEMA rel TO rel_analyst;
SET client_min_messages = warning;
CREATE TABLE rel.orders (
	id int PRIMARY KEY,
	region text NOT NULL,
	category text NOT NULL,
	amount numeric NOT NULL CHECK (amount BETWEEN 0 AND 100),
	day date NOT NULL
);
RESET client_min_messages;
ALTER TABLE rel.orders OWNER TO rel_owner;
-- 400 rows: 100 per region, about 133 per category, 40 per day
INSERT INTO rel.orders
SELECT i, (ARRAY['north','south','east','west'])[1 + i % 4], (ARRAY['books','toys','food'])[1 + (i / 4) % 3],
       (i * 7) % 100, date '2024-01-01' + (i % 10)
FROM generate_series(1, 400) i;
SELECT dp_pg.protect('rel.orders') IS NOT NULL AS protected;
SELECT dp_pg.set_public_keys('rel.orders', 'region', ARRAY['north','south','east','west']) IS NOT NULL AS region_keys;
SELECT dp_pg.set_public_keys('rel.orders', 'category', ARRAY['books','toys','food']) IS NOT NULL AS category_keys;
SELECT dp_pg.set_budget('rel_analyst', epsilon => 10000, delta => 1e-2) IS NOT NULL AS budget;

CREATE FUNCTION rel.charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS
	$$SELECT count(*) FROM dp_pg.ledger_entries WHERE role = 'rel_analyst'::regrole AND kind = 'charge'$$;
-- the SQLSTATE of a statement run as the analyst, and whether it charged
CREATE FUNCTION rel.try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	before bigint := rel.charges();
	state text := 'ok';
BEGIN
	BEGIN
		EXECUTE q;
	EXCEPTION WHEN OTHERS THEN
		state := SQLSTATE;
	END;
	RETURN state || CASE WHEN rel.charges() > before THEN ' [charged]' ELSE '' END;
END $$;
-- the last charge: its total epsilon, its call sites and their releases
CREATE FUNCTION rel.last_charge(OUT epsilon float8, OUT sites int, OUT releases int, OUT site_sum float8)
LANGUAGE sql SECURITY DEFINER AS $$
	SELECT e.epsilon, jsonb_array_length(e.detail->'sites'),
	       (SELECT count(DISTINCT s->>'release')::int FROM jsonb_array_elements(e.detail->'sites') s),
	       (SELECT sum((s->>'epsilon')::float8) FROM jsonb_array_elements(e.detail->'sites') s)
	FROM dp_pg.ledger_entries e
	WHERE e.role = 'rel_analyst'::regrole AND e.kind = 'charge'
	ORDER BY e.id DESC LIMIT 1 $$;
GRANT EXECUTE ON FUNCTION rel.charges(), rel.try(text), rel.last_charge() TO rel_analyst;
-- a statement's rows (as text, sorted), run as the analyst or as the superuser
CREATE FUNCTION rel.rows(q text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	r text[];
BEGIN
	EXECUTE format('SELECT array_agg(x::text ORDER BY x::text) FROM (%s) x', q) INTO r;
	RETURN r;
END $$;
GRANT EXECUTE ON FUNCTION rel.rows(text) TO rel_analyst;
-- the same statement as the analyst (noiseless, test build) and as the
-- superuser: equal answers?  plain is the superuser's SQL, defaulting to q
CREATE FUNCTION rel.same(q text, plain text DEFAULT NULL) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	a text[];
	b text[];
BEGIN
	SET dp_pg.debug_noiseless = on;
	EXECUTE 'SET ROLE rel_analyst';
	a := rel.rows(q);
	RESET ROLE;
	b := rel.rows(coalesce(plain, q));
	RESET dp_pg.debug_noiseless;
	RETURN a IS NOT DISTINCT FROM b AND a IS NOT NULL;
END $$;

-- partition selection that keeps every key held by 30 or more rows
SET dp_pg.partition_mechanism = 'gaussian(epsilon=10, delta=1e-4)';
SELECT dp_pg.partition_threshold('gaussian(epsilon=10, delta=1e-4)') <= 30 AS threshold_below_30;

--
-- 1. exact answers (sums are compared as integers: the lattice of a numeric
--    dp sum shows more decimals)
--
SELECT rel.same($q$SELECT region, category, sum(amount)::int AS s, count(*) AS n, GROUPING(region, category) AS g
	FROM rel.orders GROUP BY ROLLUP(region, category)$q$) AS rollup;
SELECT rel.same($q$SELECT region, category, count(*) AS n FROM rel.orders GROUP BY CUBE(region, category)$q$) AS cube;
SELECT rel.same($q$SELECT category, day, count(*), GROUPING(day) FROM rel.orders
	GROUP BY GROUPING SETS ((category), (day), ())$q$) AS grouping_sets_partition_selection;
SELECT rel.same($q$SELECT region, category, count(*) FROM rel.orders GROUP BY region, ROLLUP(category)
	HAVING count(*) > 33 ORDER BY 3 DESC, 1, 2 NULLS FIRST LIMIT 6$q$) AS mixed_having_order_limit;
SELECT rel.same($q$SELECT region, category, sum(count(*)) OVER (PARTITION BY GROUPING(category)) AS share
	FROM rel.orders WHERE category <> 'food' GROUP BY ROLLUP(region, category)$q$) AS window_over_released_rows;
-- Malloy: grouping sets as a join to a constant series, percent of total
SELECT rel.same($q$
	WITH __stage0 AS (
	  SELECT group_set,
	    CASE WHEN group_set=1 THEN base."region" END as "region__1",
	    COALESCE(SUM(base."amount"),0)::int as "total__0",
	    COUNT(CASE WHEN group_set=1 THEN 1 END) as "n__1"
	  FROM "rel"."orders" as base
	  CROSS JOIN GENERATE_SERIES(0,1,1) as group_set
	  GROUP BY 1,2
	)
	SELECT "region__1" as "region",
	  MAX(CASE WHEN group_set=1 THEN "total__0" END) as "total",
	  MAX(CASE WHEN group_set=1 THEN "total__0" END)*1.0/MAX(MAX(CASE WHEN group_set=0 THEN "total__0" END)) OVER () as "pct",
	  MAX(CASE WHEN group_set=1 THEN "n__1" END) as "n"
	FROM __stage0
	WHERE group_set = 1
	GROUP BY 1$q$) AS malloy_percent_of_total;
-- a series at the ends of bigint (its values counted exactly, as generate_series makes them)
SELECT rel.same($q$SELECT g, count(*) FROM rel.orders
	CROSS JOIN generate_series(-9223372036854775808, 9223372036854775807, 9223372036854775807) g GROUP BY g$q$) AS series_bigint_ends;
SELECT rel.same($q$SELECT g, count(*) FROM rel.orders CROSS JOIN generate_series(10, 0, -3) g GROUP BY g$q$) AS series_descending;
-- Superset: the series limit (top 2 regions by sum, then per day)
SELECT rel.same($q$
	SELECT day AS __timestamp, region AS region, sum(amount)::int AS "SUM(amount)"
	FROM rel.orders
	JOIN (SELECT region AS region__, sum(amount) AS mme_inner__ FROM rel.orders
	      GROUP BY region ORDER BY mme_inner__ DESC LIMIT 2) AS anon_1 ON region = region__
	WHERE day >= '2024-01-01' AND day < '2024-01-04'
	GROUP BY day, region ORDER BY "SUM(amount)" DESC LIMIT 10000$q$) AS superset_series_limit;
-- Cube: a rolling window (a dp query per day, summed over 3 days at the top)
SELECT rel.same($q$
	SELECT s.date_from AS day, sum(b.n) AS rolling_count
	FROM (SELECT d AS date_from, d + interval '1 day' - interval '1 millisecond' AS date_to
	      FROM generate_series('2024-01-01'::timestamp, '2024-01-10'::timestamp, '1 day') d) AS s
	LEFT JOIN (SELECT date_trunc('day', o.day) AS day, count(*) AS n FROM rel.orders AS o GROUP BY 1) AS b
	ON b.day >= s.date_from - interval '2 day' AND b.day <= s.date_to
	GROUP BY 1$q$) AS cube_rolling_window;

--
-- 2. one charge row per statement: every call site listed with its release,
--    the total the sum of the sites; estimate_cost and error_bars say it first
--
SET SESSION AUTHORIZATION rel_analyst;
SELECT epsilon, call_sites FROM dp_pg.estimate_cost($q$SELECT region, category, count(*) FROM rel.orders GROUP BY ROLLUP(region, category)$q$);
SELECT count(*) AS bars, count(DISTINCT aggregate) AS kinds
FROM dp_pg.error_bars($q$SELECT region, category, count(*) FROM rel.orders GROUP BY ROLLUP(region, category)$q$);
SELECT rel.charges() AS before \gset
SELECT count(*) AS rows FROM (SELECT region, category, count(*) FROM rel.orders GROUP BY ROLLUP(region, category)) s;
SELECT rel.charges() - :before AS charge_rows, * FROM rel.last_charge();
-- the series limit: the top-N release (sum) and the outer one (sum, partition selection)
SELECT epsilon, delta, call_sites FROM dp_pg.estimate_cost($q$SELECT day, sum(amount) FROM rel.orders
	JOIN (SELECT region AS r, sum(amount) FROM rel.orders GROUP BY region ORDER BY 2 DESC LIMIT 2) t ON region = r GROUP BY day$q$);
SELECT rel.charges() AS before \gset
SELECT count(*) >= 0 AS answered FROM (SELECT day, sum(amount) FROM rel.orders
	JOIN (SELECT region AS r, sum(amount) FROM rel.orders GROUP BY region ORDER BY 2 DESC LIMIT 2) t ON region = r GROUP BY day) s;
SELECT rel.charges() - :before AS charge_rows, * FROM rel.last_charge();
-- Malloy's series of 3 values: three releases of the one count
SELECT epsilon, call_sites FROM dp_pg.estimate_cost($q$SELECT group_set, CASE WHEN group_set > 0 THEN region END, count(*)
	FROM rel.orders CROSS JOIN generate_series(0, 2) AS group_set GROUP BY 1, 2$q$);
RESET SESSION AUTHORIZATION;

--
-- 3. the answer cache: the statement's plan (all its releases) is the key
--
SELECT dp_pg.clear_answer_cache() >= 0 AS cleared;
SET dp_pg.answer_cache = on;
SET SESSION AUTHORIZATION rel_analyst;
SELECT rel.charges() AS before \gset
SELECT array_agg(region ORDER BY region NULLS FIRST) AS ka, array_agg(n ORDER BY region NULLS FIRST) AS na
FROM (SELECT region, count(*) AS n FROM rel.orders GROUP BY ROLLUP(region)) s \gset
SELECT bool_or(from_cache) AS first_from_cache, count(*) AS sites FROM dp_pg.last_releases;
SELECT array_agg(region ORDER BY region NULLS FIRST) AS kb, array_agg(n ORDER BY region NULLS FIRST) AS nb
FROM (SELECT region, count(*) AS n FROM rel.orders GROUP BY ROLLUP(region)) s \gset
SELECT bool_and(from_cache) AS served_again, :'ka' = :'kb' AND :'na' = :'nb' AS same_rows FROM dp_pg.last_releases;
SELECT rel.charges() - :before AS charges_one_for_two;
-- another constant in the releases: a new release, charged
SELECT array_agg(n ORDER BY region NULLS FIRST) AS nc
FROM (SELECT region, count(*) AS n FROM rel.orders WHERE day > '2024-01-02' GROUP BY ROLLUP(region)) s \gset
SELECT bool_or(from_cache) AS other_constant_from_cache FROM dp_pg.last_releases;
SELECT rel.charges() - :before AS charges_two;
RESET SESSION AUTHORIZATION;
SET dp_pg.answer_cache = off;
SELECT dp_pg.clear_answer_cache() >= 0 AS cleared;

--
-- 4. refused, nothing charged
--
SET SESSION AUTHORIZATION rel_analyst;
SELECT q AS statement, rel.try(q) AS result FROM (VALUES
	-- a series that is not a GROUP BY key would count each row once per value
	($q$SELECT region, count(*) FROM rel.orders CROSS JOIN generate_series(1, 3) g GROUP BY region$q$),
	-- a series joined on anything but true, or not constant, or too long
	($q$SELECT g, count(*) FROM rel.orders JOIN generate_series(1, 3) g ON g < 2 GROUP BY g$q$),
	($q$SELECT g, count(*) FROM rel.orders CROSS JOIN generate_series(1, (SELECT 3)) g GROUP BY g$q$),
	($q$SELECT g, count(*) FROM rel.orders CROSS JOIN generate_series(1, 100) g GROUP BY g$q$),
	-- an empty series (its step runs away from its end; one that overflowed bigint arithmetic)
	($q$SELECT g, count(*) FROM rel.orders CROSS JOIN generate_series(0, 1, -2) g GROUP BY g$q$),
	($q$SELECT g, count(*) FROM rel.orders CROSS JOIN generate_series(-9223372036854775808, 0, -1) g GROUP BY g$q$),
	-- a series and grouping sets together
	($q$SELECT g, region, count(*) FROM rel.orders CROSS JOIN generate_series(0, 1) g GROUP BY g, ROLLUP(region)$q$),
	-- more than 64 grouping sets (CUBE of 7 keys)
	($q$SELECT count(*) FROM rel.orders GROUP BY CUBE(region, category, day, id, amount, region || 'x', category || 'y')$q$),
	-- a released subquery whose noisy value is joined (not a key it released as such), or used elsewhere
	($q$SELECT region, count(*) FROM rel.orders JOIN (SELECT region AS r, count(*) AS n FROM rel.orders GROUP BY region) t
		ON region = r AND id = n GROUP BY region$q$),
	($q$SELECT region, count(*), max(t.n) FROM rel.orders JOIN (SELECT region AS r, count(*) AS n FROM rel.orders GROUP BY region) t
		ON region = r GROUP BY region$q$),
	($q$SELECT t.n, count(*) FROM rel.orders JOIN (SELECT region AS r, count(*) AS n FROM rel.orders GROUP BY region) t
		ON region = r GROUP BY t.n$q$),
	($q$SELECT region, count(*) FROM rel.orders JOIN (SELECT region AS r FROM rel.orders GROUP BY region) t
		ON region < r GROUP BY region$q$),
	($q$SELECT region, count(*) FROM rel.orders, LATERAL (SELECT count(*) AS n FROM rel.orders o2 WHERE o2.region = orders.region) t
		GROUP BY region$q$),
	-- a released subquery reading protected rows beside its DP level: in its select list, HAVING, or a wrapper
	($q$SELECT region, count(*) FROM rel.orders JOIN (SELECT (SELECT max(region) FROM rel.orders) AS r, count(*) AS n
		FROM rel.orders) t ON region = r GROUP BY region$q$),
	($q$SELECT region, count(*) FROM rel.orders JOIN (SELECT region AS r, count(*) FROM rel.orders GROUP BY region
		HAVING region IN (SELECT region FROM rel.orders WHERE amount > 99)) t ON region = r GROUP BY region$q$),
	($q$SELECT region, count(*) FROM rel.orders JOIN (SELECT b.region AS r FROM (SELECT region, count(*) FROM rel.orders
		GROUP BY region) a, (SELECT region FROM rel.orders WHERE amount > 99) b LIMIT ALL) t ON region = r GROUP BY region$q$),
	-- keys taken from protected rows without a release
	($q$SELECT region, count(*) FROM rel.orders JOIN (SELECT region AS r FROM rel.orders WHERE amount > 99) t
		ON region = r GROUP BY region$q$),
	($q$SELECT region, count(*) FROM rel.orders WHERE region IN (SELECT region FROM rel.orders WHERE amount > 99) GROUP BY region$q$),
	-- a window over protected rows; a dp aggregate as a window function
	($q$SELECT count(*) FROM (SELECT amount, sum(amount) OVER (ORDER BY day ROWS 2 PRECEDING) AS s FROM rel.orders) x WHERE s > 100$q$),
	($q$SELECT day, count(*) OVER (ORDER BY day ROWS 2 PRECEDING) FROM rel.orders$q$),
	($q$SELECT day, dp_count(*) OVER (ORDER BY day) FROM rel.orders GROUP BY day$q$)
) AS c(q);
RESET SESSION AUTHORIZATION;

SET client_min_messages = warning;
DROP SCHEMA rel CASCADE;
RESET client_min_messages;
SELECT dp_pg.drop_budget('rel_analyst');
DROP ROLE rel_analyst;
DROP ROLE rel_owner;
RESET dp_pg.partition_mechanism;
