--
-- Privacy units: each unit's cells kept while aggregating (dp_pg.unit_cells,
-- src/aggregates/agg_units.c) instead of a window over every (unit, cell).
--
-- 1. plans: a bounded GROUP BY or histogram aggregates by unit alone with
--    dp_pg.unit_cells, without a WindowAgg or a sort of the cells; a numeric
--    dp_sum (no accumulator for it) keeps the window form;
-- 2. the same exact values (dp_pg.debug_noiseless) as the window form
--    (dp_pg.debug_unit_cells = window) where no unit has more than g cells,
--    for every dp aggregate and cell kind, NULL units and keys, two keys,
--    bound parameters, and with the hash aggregation spilled to disk
--    (work_mem = 64kB); bounded sums (clamped and counted in C) on NaN,
--    infinities, -0, NULL and every integer width, serial, spilled and in
--    parallel;
-- 3. exactness where units lose cells: units of 3 cells with 1, 2 and 3 rows
--    (rows interleaved over the table): every kept cell keeps all its rows
--    (a key's total is a multiple of its cell size) and each unit keeps
--    exactly g cells, also spilled and in parallel plans (partial states per
--    worker, combined), where the values equal the serial plan's;
-- 4. the choice is uniform and fresh per query: with g = 1 of 3 equal cells,
--    each key's share over 3000 units is Binomial(3000, 1/3); Hoeffding:
--    P(|X - 1000| >= 190) <= 2 exp(-2 190^2 / 3000) < 7e-11 per key;
--    one unit's choice over 40 queries is not always the same (all agree
--    with probability 3^-39 < 3e-18); positive control: with priorities
--    that ignore the unit and the seed (debug_unit_cells = broken_priority)
--    both checks fail, always;
-- 5. no SQL can call the functions: their state is of type internal.
-- The noiseless checks cannot fail by chance; the file fails by chance with
-- probability < 3e-10.
--
SET search_path = uc_test, public;
CREATE SCHEMA uc_test;
CREATE FUNCTION uc_test.run(q text, p1 float8 DEFAULT NULL, p2 float8 DEFAULT NULL)
RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	FOR r IN EXECUTE q USING p1, p2 LOOP
		RETURN NEXT to_jsonb(r);
	END LOOP;
END $$;
-- the plan of q as one text (EXPLAIN options opts)
CREATE FUNCTION uc_test.plan(q text, opts text DEFAULT 'COSTS OFF, VERBOSE') RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; p text := '';
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (' || opts || ') ' || q LOOP
		p := p || l || E'\n';
	END LOOP;
	RETURN p;
END $$;
-- the rows of q as text, every column (to_jsonb keeps one of equal names)
CREATE FUNCTION uc_test.rows(q text, p1 float8 DEFAULT NULL, p2 float8 DEFAULT NULL)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	FOR r IN EXECUTE q USING p1, p2 LOOP
		RETURN NEXT r::text;
	END LOOP;
END $$;
-- the rows of q under both forms: the same multiset?
CREATE FUNCTION uc_test.same(q text, p1 float8 DEFAULT NULL, p2 float8 DEFAULT NULL,
	OUT same boolean, OUT nrows bigint) LANGUAGE plpgsql AS $$
DECLARE a text[]; b text[];
BEGIN
	SET LOCAL dp_pg.debug_unit_cells = 'on';
	SELECT array_agg(j ORDER BY j) INTO a FROM uc_test.rows(q, p1, p2) j;
	SET LOCAL dp_pg.debug_unit_cells = 'window';
	SELECT array_agg(j ORDER BY j) INTO b FROM uc_test.rows(q, p1, p2) j;
	same := a IS NOT DISTINCT FROM b;
	nrows := coalesce(cardinality(a), 0);
END $$;

-- ~2000 units of about 10 rows over 7 regions (mostly the unit's own) and 5
-- tags; NULL units and NULL keys; at most 20 cells per unit for (region, tag),
-- so g = 20 keeps every cell in both forms (a generous partition mechanism:
-- the cells are released in both)
CREATE TABLE uc_test.ev AS
SELECT CASE WHEN i % 997 = 0 THEN NULL ELSE (i * 7919) % 2000 END::int8 AS pid,
       CASE WHEN i % 10 = 0 THEN i % 7 WHEN i % 101 = 0 THEN NULL ELSE ((i * 7919) % 2000) % 7 END AS region,
       CASE WHEN i % 13 = 0 THEN NULL ELSE 't' || (i * 31) % 5 END AS tag,
       (((i * 37) % 1100) / 10.0 - 5)::float8 AS amount,
       ((i * 37) % 1100) / 10.0 - 5 AS nm,
       (i * 37) % 1100 - 50 AS x4,
       ((i * 37) % 1100 - 50)::int8 * 1000000000000 AS x8
FROM generate_series(1, 20000) i;
SELECT max(n) AS max_cells_per_unit FROM (SELECT pid, count(DISTINCT (region, tag)) AS n FROM uc_test.ev GROUP BY pid) s;
SELECT dp_pg.protect('uc_test.ev', 'pid', max_groups_contributed => 20, max_rows_per_unit => 4);
SET dp_pg.debug_noiseless = on;
SET dp_pg.partition_mechanism = 'gaussian(epsilon=100, delta=0.01)';

-- 1. plans
SELECT position('unit_cells' IN p) > 0 AS cells, position('WindowAgg' IN p) = 0 AS no_window,
       position('unit_priority' IN p) = 0 AS no_priority_sort
FROM uc_test.plan($q$SELECT region, dp_count(*), dp_sum(amount, 0.0, 100.0, 'laplace(epsilon=1)') FROM ev GROUP BY region$q$) p;
SELECT position('unit_cells' IN p) > 0 AS cells, position('WindowAgg' IN p) = 0 AS no_window
FROM uc_test.plan($q$SELECT dp_histogram(amount, 0, 100, 30, 'laplace(epsilon=1)') FROM ev$q$) p;
SELECT position('unit_cells' IN p) = 0 AS no_cells, position('WindowAgg' IN p) > 0 AS window
FROM uc_test.plan($q$SELECT region, dp_sum(nm, 0, 100, 'laplace(epsilon=1)') FROM ev GROUP BY region$q$) p;
-- without cells (no GROUP BY, no histogram) nothing is ranked
SELECT position('unit_cells' IN p) = 0 AS no_cells, position('WindowAgg' IN p) = 0 AS no_window
FROM uc_test.plan($q$SELECT dp_count(*) FROM ev$q$) p;

-- more arguments than dp_pg.unit_cells takes (100: a float sum is one
-- accumulator of three arguments, x and its bounds, so 31 sums take 98 and
-- 32 take 101; 55 sums): the window form, no error
CREATE FUNCTION uc_test.many_sums(n int) RETURNS text LANGUAGE sql AS $$
	SELECT 'SELECT region, ' || string_agg(format('dp_sum(amount, 0, %s, ''laplace(epsilon=1)'')', i), ', ')
	       || ' FROM ev GROUP BY region' FROM generate_series(1, n) i $$;
SELECT n, position('unit_cells' IN p) = 0 AS no_cells, position('WindowAgg' IN p) > 0 AS window,
       (SELECT count(*) FROM uc_test.run(uc_test.many_sums(n))) AS released_groups
FROM unnest(ARRAY[31, 32, 55]) n, LATERAL uc_test.plan(uc_test.many_sums(n)) p ORDER BY n;

-- 2. the same exact values as the window form
SELECT * FROM uc_test.same($q$SELECT region, dp_count(*), dp_sum(amount, 0.0, 100.0, 'laplace(epsilon=1)'),
	dp_avg(amount, 0.0, 100.0, 'laplace(epsilon=1)'), dp_count(tag, 'laplace(epsilon=1)') FILTER (WHERE amount > 50)
	FROM ev GROUP BY region$q$);
SELECT * FROM uc_test.same($q$SELECT region, tag, dp_count(*), dp_sum(x4, -10, 1000, 'laplace(epsilon=1)'),
	dp_sum(x8, -10000000000000, 1000000000000000, 'laplace(epsilon=1)') FROM ev GROUP BY region, tag$q$);
SELECT * FROM uc_test.same($q$SELECT tag, dp_sum(nm, 0, 10, 'laplace(epsilon=1)') FROM ev GROUP BY tag$q$);
SELECT * FROM uc_test.same($q$SELECT dp_histogram(region, ARRAY[0, 1, 2, 3, 4, 5, 6], 'laplace(epsilon=1)') FROM ev$q$);
SELECT * FROM uc_test.same($q$SELECT dp_histogram(amount, 0, 100, 30, 'laplace(epsilon=1)') FROM ev$q$);
SELECT * FROM uc_test.same($q$SELECT dp_histogram(tag, 'gaussian(epsilon=1, delta=1e-6)') FROM ev$q$);
SELECT * FROM uc_test.same($q$SELECT tag, dp_count(*) FROM ev WHERE amount < 80 GROUP BY tag$q$);
-- bound parameters in a bound and in WHERE
SELECT * FROM uc_test.same($q$SELECT region, dp_sum(amount, 0.0, $1, 'laplace(epsilon=1)'), dp_count(*)
	FROM ev WHERE amount < $2 GROUP BY region$q$, 50, 90);
-- bounded sums: one accumulator per sum that clamps, skips NULL and NaN and
-- counts the unit's values in C (F, I, L in the spec); the same values as
-- the SQL of the window form on NaN, infinities, -0, NULL, values at and
-- beyond the bounds, int2, int4 and int8, FILTERs and a domain below 0.
-- 1800 units, each with rows in the 3 regions (g = 3 keeps every cell), r = 4
-- or more rows per cell (the clamp to [k lo, k hi] acts)
CREATE TABLE uc_test.edge AS
SELECT i % 1800 AS pid, (i / 1800) % 3 AS region,
       (ARRAY['NaN', 'Infinity', '-Infinity', '-0', '0', '1e300', '-1e300', '5', '100', '100.5', '-3', NULL]::float8[])
       [1 + (i * 7) % 12] AS f,
       CASE WHEN i % 11 = 0 THEN NULL ELSE ((i * 13) % 61 - 20) END::int2 AS x2,
       CASE WHEN i % 7 = 0 THEN NULL ELSE ((i * 17) % 3001 - 1000) END::int4 AS x4,
       CASE WHEN i % 5 = 0 THEN NULL ELSE ((i * 19) % 3001 - 1000)::int8 * 100000000000 END AS x8
FROM generate_series(1, 21600) i;
SELECT dp_pg.protect('uc_test.edge', 'pid', max_groups_contributed => 3, max_rows_per_unit => 4);
SELECT position(':k0,F?I?IL?F' IN p) > 0 AS clamped_sums, position('WindowAgg' IN p) = 0 AS no_window
FROM uc_test.plan($q$SELECT region, dp_sum(f, 0, 100, 'laplace(epsilon=1)') FILTER (WHERE x4 > 0),
	dp_sum(x2, -5, 30, 'laplace(epsilon=1)') FILTER (WHERE f > 1), dp_sum(x4, 10, 900, 'laplace(epsilon=1)'),
	dp_sum(x8, -100000000000000, -1000, 'laplace(epsilon=1)') FILTER (WHERE x2 IS NULL),
	dp_sum(f, -1e299, -1, 'laplace(epsilon=1)') FROM edge GROUP BY region$q$) p;
SELECT * FROM uc_test.same($q$SELECT region, dp_sum(f, 0, 100, 'laplace(epsilon=1)') FILTER (WHERE x4 > 0),
	dp_sum(x2, -5, 30, 'laplace(epsilon=1)') FILTER (WHERE f > 1), dp_sum(x4, 10, 900, 'laplace(epsilon=1)'),
	dp_sum(x8, -100000000000000, -1000, 'laplace(epsilon=1)') FILTER (WHERE x2 IS NULL),
	dp_sum(f, -1e299, -1, 'laplace(epsilon=1)'), dp_sum(f, 0, 5, 'laplace(epsilon=1)'),
	dp_avg(f, 0, 100, 'laplace(epsilon=1)'), dp_count(f, 'laplace(epsilon=1)') FROM edge GROUP BY region$q$);
-- the bounds as parameters, spilled, and in a parallel plan (counts combined)
SELECT * FROM uc_test.same($q$SELECT region, dp_sum(f, $1, $2, 'laplace(epsilon=1)') FROM edge GROUP BY region$q$, -2, 50);
SET work_mem = '64kB';
SELECT position('Disk Usage' IN p) > 0 AS spilled
FROM uc_test.plan($q$SELECT region, dp_sum(f, 0, 100, 'laplace(epsilon=1)'), dp_sum(x4, -1000, 0, 'laplace(epsilon=1)')
	FROM edge GROUP BY region$q$, 'ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF') p;
SELECT * FROM uc_test.same($q$SELECT region, dp_sum(f, 0, 100, 'laplace(epsilon=1)'), dp_sum(x4, -1000, 0, 'laplace(epsilon=1)')
	FROM edge GROUP BY region$q$);
RESET work_mem;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT position('Partial' IN p) > 0 AS partial_states
FROM uc_test.plan($q$SELECT region, dp_sum(f, 0, 100, 'laplace(epsilon=1)'), dp_sum(x8, 0, 100000000000000, 'laplace(epsilon=1)')
	FROM edge GROUP BY region$q$) p;
SELECT * FROM uc_test.same($q$SELECT region, dp_sum(f, 0, 100, 'laplace(epsilon=1)'),
	dp_sum(x8, 0, 100000000000000, 'laplace(epsilon=1)'), dp_sum(x2, 1, 40, 'laplace(epsilon=1)') FROM edge GROUP BY region$q$);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- the per-unit hash aggregation spilled to disk
SET work_mem = '64kB';
SELECT * FROM uc_test.same($q$SELECT region, tag, dp_count(*), dp_sum(amount, 0.0, 100.0, 'laplace(epsilon=1)') FROM ev GROUP BY region, tag$q$);
RESET work_mem;
RESET dp_pg.partition_mechanism;

-- 2b. declared public keys: rows with an undeclared key (or a NULL one) take
-- none of a unit's cells.  Each of 1000 units has one row in 'a' or 'b' (a
-- declared key) and three rows in 'z' or NULL (undeclared), g = 1: every unit
-- keeps its declared cell, so the counts of 'a' and 'b' sum to 1000 and 'c'
-- (declared, no rows) is 0.  The unit_cells form tests the declared keys for
-- rows of cells it does not hold, not by a WHERE on every row (no = ANY); the
-- window form keeps the WHERE; both release the same values, serial and in
-- parallel.
CREATE TABLE uc_test.pk AS
SELECT u AS pid, cell FROM generate_series(1, 1000) u,
       LATERAL (VALUES (CASE WHEN u % 3 = 0 THEN 'b' ELSE 'a' END), ('z'), (NULL), ('z')) v(cell)
ORDER BY (u * 2654435761 + coalesce(ascii(cell), 7) * 40503) % 1000003;
SELECT dp_pg.protect('uc_test.pk', 'pid', max_groups_contributed => 1, max_rows_per_unit => 5);
SELECT dp_pg.set_public_keys('uc_test.pk', 'cell', ARRAY['a', 'b', 'c']);
SELECT position('unit_cells' IN p) > 0 AS cells, position('= ANY' IN p) = 0 AS no_row_filter
FROM uc_test.plan($q$SELECT cell, dp_count(*) FROM pk GROUP BY cell$q$) p;
SET dp_pg.debug_unit_cells = 'window';
SELECT position('= ANY' IN p) > 0 AS window_row_filter
FROM uc_test.plan($q$SELECT cell, dp_count(*) FROM pk GROUP BY cell$q$) p;
RESET dp_pg.debug_unit_cells;
SELECT string_agg((j->>'cell') || '=' || (j->>'dp_count'), ' ' ORDER BY j->>'cell') AS released
FROM uc_test.run($q$SELECT cell, dp_count(*) FROM pk GROUP BY cell$q$) j;
SELECT * FROM uc_test.same($q$SELECT cell, dp_count(*) FROM pk GROUP BY cell$q$);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT string_agg((j->>'cell') || '=' || (j->>'dp_count'), ' ' ORDER BY j->>'cell') AS released_parallel
FROM uc_test.run($q$SELECT cell, dp_count(*) FROM pk GROUP BY cell$q$) j;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- 3. exactness where units lose cells: unit u has cells a (1 row), b (2 rows)
-- and c (3 rows), its rows spread over the table; g = 2 and g = 1, r = 3
CREATE TABLE uc_test.three AS
SELECT u AS pid, cell FROM generate_series(1, 3000) u,
       LATERAL (VALUES ('a'), ('b'), ('b'), ('c'), ('c'), ('c')) v(cell)
ORDER BY (u * 2654435761 + length(cell) * 40503 + ascii(cell) * 977) % 1000003;
CREATE TABLE uc_test.three1 AS SELECT * FROM uc_test.three;
SELECT dp_pg.protect('uc_test.three', 'pid', max_groups_contributed => 2, max_rows_per_unit => 3);
SELECT dp_pg.protect('uc_test.three1', 'pid', max_groups_contributed => 1, max_rows_per_unit => 3);
-- (cell, released count): kept cells of size 2 and 3 were never cut short,
-- and the number of kept cells is 3000 g
SELECT g, bool_and(CASE cell WHEN 'a' THEN true WHEN 'b' THEN n % 2 = 0 ELSE n % 3 = 0 END) AS whole_cells,
       sum(CASE cell WHEN 'a' THEN n WHEN 'b' THEN n / 2 ELSE n / 3 END) = 3000 * g AS g_cells_per_unit
FROM (SELECT 2 AS g, j->>'cell' AS cell, (j->>'dp_count')::bigint AS n
      FROM uc_test.run($q$SELECT cell, dp_count(*) FROM three GROUP BY cell$q$) j
      UNION ALL
      SELECT 1, j->>'cell', (j->>'dp_count')::bigint
      FROM uc_test.run($q$SELECT cell, dp_count(*) FROM three1 GROUP BY cell$q$) j) s
GROUP BY g ORDER BY g;
-- the same with the hash aggregation spilled
SET work_mem = '64kB';
SELECT bool_and(CASE j->>'cell' WHEN 'a' THEN true WHEN 'b' THEN (j->>'dp_count')::bigint % 2 = 0
                ELSE (j->>'dp_count')::bigint % 3 = 0 END) AS whole_cells_spilled,
       sum(CASE j->>'cell' WHEN 'a' THEN (j->>'dp_count')::bigint WHEN 'b' THEN (j->>'dp_count')::bigint / 2
           ELSE (j->>'dp_count')::bigint / 3 END) = 6000 AS g_cells_spilled
FROM uc_test.run($q$SELECT cell, dp_count(*) FROM three GROUP BY cell$q$) j;
RESET work_mem;

-- parallel plans (partial states per worker, combined): the same values
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
-- (partial states in workers that were launched; states of different seeds
-- would be refused when combined)
SELECT position('Partial HashAggregate' IN p) > 0 AS partial_cells, p ~ 'Workers Launched: [12]' AS workers_ran
FROM uc_test.plan($q$SELECT cell, dp_count(*) FROM three GROUP BY cell$q$, 'ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF') p;
SELECT bool_and(CASE j->>'cell' WHEN 'a' THEN true WHEN 'b' THEN (j->>'dp_count')::bigint % 2 = 0
                ELSE (j->>'dp_count')::bigint % 3 = 0 END) AS whole_cells_parallel,
       sum(CASE j->>'cell' WHEN 'a' THEN (j->>'dp_count')::bigint WHEN 'b' THEN (j->>'dp_count')::bigint / 2
           ELSE (j->>'dp_count')::bigint / 3 END) = 6000 AS g_cells_parallel
FROM uc_test.run($q$SELECT cell, dp_count(*) FROM three GROUP BY cell$q$) j;
SET dp_pg.partition_mechanism = 'gaussian(epsilon=100, delta=0.01)';
CREATE TABLE uc_test.serial_ev AS
SELECT j FROM uc_test.rows($q$SELECT region, tag, dp_count(*), dp_sum(x4, -10, 1000, 'laplace(epsilon=1)'),
	dp_sum(x8, -10000000000000, 1000000000000000, 'laplace(epsilon=1)'), dp_count(tag, 'laplace(epsilon=1)')
	FROM ev GROUP BY region, tag$q$) j LIMIT 0;
SET max_parallel_workers_per_gather = 0;
INSERT INTO uc_test.serial_ev
SELECT j FROM uc_test.rows($q$SELECT region, tag, dp_count(*), dp_sum(x4, -10, 1000, 'laplace(epsilon=1)'),
	dp_sum(x8, -10000000000000, 1000000000000000, 'laplace(epsilon=1)'), dp_count(tag, 'laplace(epsilon=1)')
	FROM ev GROUP BY region, tag$q$) j;
SET max_parallel_workers_per_gather = 2;
SELECT count(*) AS cells, count(*) = (SELECT count(*) FROM uc_test.serial_ev) AS same_count,
       bool_and(EXISTS (SELECT FROM uc_test.serial_ev s WHERE s.j = p.j)) AS parallel_equals_serial
FROM uc_test.rows($q$SELECT region, tag, dp_count(*), dp_sum(x4, -10, 1000, 'laplace(epsilon=1)'),
	dp_sum(x8, -10000000000000, 1000000000000000, 'laplace(epsilon=1)'), dp_count(tag, 'laplace(epsilon=1)')
	FROM ev GROUP BY region, tag$q$) p(j);
RESET dp_pg.partition_mechanism;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- 4. uniform and fresh: g = 1 of 3 cells of one row each
CREATE TABLE uc_test.uni AS
SELECT u AS pid, cell FROM generate_series(1, 3000) u, unnest(ARRAY['a', 'b', 'c']) cell
ORDER BY (u * 2654435761 + ascii(cell) * 40503) % 1000003;
CREATE TABLE uc_test.one AS SELECT 1 AS pid, cell FROM unnest(ARRAY['a', 'b', 'c']) cell;
SELECT dp_pg.protect('uc_test.uni', 'pid', max_groups_contributed => 1, max_rows_per_unit => 1);
SELECT dp_pg.protect('uc_test.one', 'pid', max_groups_contributed => 1, max_rows_per_unit => 1);
SELECT dp_pg.set_public_keys('uc_test.one', 'cell', ARRAY['a', 'b', 'c']);
CREATE FUNCTION uc_test.uniform() RETURNS boolean LANGUAGE sql AS $$
	SELECT count(*) = 3 AND bool_and(abs((j->>'dp_count')::bigint - 1000) < 190)
	FROM uc_test.run($q$SELECT cell, dp_count(*) FROM uni GROUP BY cell$q$) j $$;
CREATE FUNCTION uc_test.varies() RETURNS boolean LANGUAGE sql AS $$
	SELECT count(DISTINCT c) > 1 FROM generate_series(1, 40) rep,
	LATERAL (SELECT string_agg(j->>'cell', '' ORDER BY j->>'cell') FILTER (WHERE (j->>'dp_count')::bigint > 0) AS c
	         FROM uc_test.run($q$SELECT cell, dp_count(*) FROM one GROUP BY cell$q$ || repeat(' ', rep)) j) s $$;
SELECT uc_test.uniform() AS uniform, uc_test.varies() AS varies;
-- positive control: priorities of the keys alone, the same in every query
SET dp_pg.debug_unit_cells = 'broken_priority';
SELECT uc_test.uniform() AS uniform_broken, uc_test.varies() AS varies_broken;
RESET dp_pg.debug_unit_cells;

-- 5. no SQL can call them: nothing of type internal can be written
SELECT dp_pg.unit_cell(NULL::internal, 0, 1);
SELECT count(*) FROM (SELECT dp_pg.unit_cells(NULL::internal, '2:k0,c', 1, pid, cell) FROM uc_test.uni GROUP BY pid) s;

RESET dp_pg.debug_noiseless;
SELECT dp_pg.unprotect('uc_test.pk') IS NOT NULL AS pk_unprotected;
SELECT dp_pg.unprotect('uc_test.edge') IS NOT NULL AS edge_unprotected;
SELECT dp_pg.unprotect('uc_test.ev'), dp_pg.unprotect('uc_test.three'), dp_pg.unprotect('uc_test.three1'),
       dp_pg.unprotect('uc_test.uni'), dp_pg.unprotect('uc_test.one');
DROP SCHEMA uc_test CASCADE;
RESET search_path;
