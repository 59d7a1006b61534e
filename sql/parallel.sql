--
-- parallel plans: partial states combine, noise is added once in the leader
--
-- Bounds are 25 t for discrete Laplace scale t: each check fails by chance
-- with probability < 3e-11.
--
CREATE TABLE par AS SELECT g AS id, g % 7 AS k FROM generate_series(1, 100000) g;
ANALYZE par;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;

EXPLAIN (COSTS OFF) SELECT dp_count(*) FROM par;
SELECT abs(dp_count(*) - 100000) <= 25 AS close FROM par;
EXPLAIN (COSTS OFF) SELECT dp_count(id, 'laplace(epsilon=1)') FROM par;
SELECT abs(dp_count(id, 'laplace(epsilon=1)') - 100000) <= 25 AS close FROM par;

-- grouped parallel aggregation
EXPLAIN (COSTS OFF) SELECT k, dp_count(*) FROM par GROUP BY k;
SELECT count(*) AS groups, bool_and(abs(n - 100000 / 7.0) <= 26) AS all_close
FROM (SELECT k, dp_count(*) AS n FROM par GROUP BY k) s;

-- bound parameter under a parallel plan
PREPARE par_count(dp_mechanism) AS SELECT abs(dp_count(id, $1) - 100000) <= 25 AS close FROM par;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE par_count('laplace(epsilon=1)');
EXECUTE par_count('laplace(epsilon=1)');
RESET plan_cache_mode;

-- the parallel answer matches the serial one within noise
SELECT abs(dp_count(*) - 40000) <= 25 AS close FROM par WHERE id % 5 < 2;
SET max_parallel_workers_per_gather = 0;
SELECT abs(dp_count(*) - 40000) <= 25 AS close FROM par WHERE id % 5 < 2;
