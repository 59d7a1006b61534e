--
-- dp_sum and dp_avg: every signature, clamping, NULLs, empty input, GROUP BY,
-- parallel plans, prepared statements, and every error path.
--
-- Noisy answers are checked by properties, never by value.  dp_test.tol(m, s)
-- is 25 b for Laplace noise of scale b (discrete Laplace: P(|noise| >= 25 b)
-- <= 2 e^-25 < 3e-11) and 7 sigma + 1 for Gaussian and OSGT noise (< 1e-11,
-- dp_count.sql), at the sum's sensitivity s = max(|lower|, |upper|).  This
-- file makes fewer than 100 such checks: it fails by chance with
-- probability < 3e-9.
--
CREATE FUNCTION dp_test.tol(mech dp_mechanism, sensitivity float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN c.family = 'laplace' THEN 25 * c.scale ELSE 7 * c.sigma + 1 END
	FROM dp_pg.calibrate(mech, sensitivity) c
$$;

-- 1000 rows: v = g % 10 (sum 4500) in every type; f = v / 4 (sum 1125); grp = g % 4
CREATE TABLE nums AS
SELECT g AS id, (g % 10)::int2 AS i2, (g % 10)::int4 AS i4, (g % 10)::int8 AS i8,
       (g % 10) / 4.0::float8 AS f, ((g % 10) / 4.0)::numeric AS n, g % 4 AS grp
FROM generate_series(1, 1000) g;
-- a row of NULLs is skipped by every aggregate
INSERT INTO nums (id) VALUES (0);
CREATE TABLE nothing (i2 int2, i4 int4, i8 int8, f float8, n numeric);

-- every signature and its result type
SELECT pg_typeof(dp_sum(i2, 0::int2, 9::int2, 'laplace(epsilon=1)')) AS int2_sum,
       pg_typeof(dp_sum(i4, 0, 9, 'laplace(epsilon=1)')) AS int4_sum,
       pg_typeof(dp_sum(i8, 0, 9, 'laplace(epsilon=1)')) AS int8_sum,
       pg_typeof(dp_sum(f, 0, 2.25, 'laplace(epsilon=1)')) AS float8_sum,
       pg_typeof(dp_sum(n, 0, 2.25, 'laplace(epsilon=1)')) AS numeric_sum,
       pg_typeof(dp_avg(f, 0, 2.25, 'laplace(epsilon=1)')) AS avg
FROM nums;

-- each type, each mechanism family: within tol of the true sum
SELECT abs(dp_sum(i2, 0::int2, 9::int2, 'laplace(epsilon=1)') - 4500) <= dp_test.tol('laplace(epsilon=1)', 9) AS int2_laplace,
       abs(dp_sum(i4, 0, 9, 'laplace(epsilon=1)') - 4500) <= dp_test.tol('laplace(epsilon=1)', 9) AS int4_laplace,
       abs(dp_sum(i8, 0, 9, 'laplace(epsilon=1)') - 4500) <= dp_test.tol('laplace(epsilon=1)', 9) AS int8_laplace,
       abs(dp_sum(f, 0, 2.25, 'laplace(epsilon=1)') - 1125) <= dp_test.tol('laplace(epsilon=1)', 2.25) AS float8_laplace,
       abs(dp_sum(n, 0, 2.25, 'laplace(epsilon=1)') - 1125) <= dp_test.tol('laplace(epsilon=1)', 2.25) AS numeric_laplace
FROM nums;
SELECT abs(dp_sum(i2, 0::int2, 9::int2, 'gaussian(epsilon=1, delta=1e-6)') - 4500) <= dp_test.tol('gaussian(epsilon=1, delta=1e-6)', 9) AS int2_gauss,
       abs(dp_sum(i4, 0, 9, 'gaussian(rho=0.5)') - 4500) <= dp_test.tol('gaussian(rho=0.5)', 9) AS int4_zcdp,
       abs(dp_sum(i8, 0, 9, 'osgt(epsilon=1, delta=1e-6)') - 4500) <= dp_test.tol('osgt(epsilon=1, delta=1e-6)', 9) AS int8_osgt,
       abs(dp_sum(f, 0, 2.25, 'gaussian(epsilon=0.5, delta=1e-8)') - 1125) <= dp_test.tol('gaussian(epsilon=0.5, delta=1e-8)', 2.25) AS float8_gauss,
       abs(dp_sum(f, 0, 2.25, dp_osgt(1, 1e-6)) - 1125) <= dp_test.tol(dp_osgt(1, 1e-6), 2.25) AS float8_osgt,
       abs(dp_sum(n, 0, 2.25, dp_gaussian_zcdp(0.1)) - 1125) <= dp_test.tol(dp_gaussian_zcdp(0.1), 2.25) AS numeric_zcdp,
       abs(dp_sum(n, 0, 2.25, 'osgt(epsilon=2, delta=1e-9)') - 1125) <= dp_test.tol('osgt(epsilon=2, delta=1e-9)', 2.25) AS numeric_osgt
FROM nums;

-- integer sums keep the integer lattice; numeric sums show the decimals of
-- their lattice (noise scale 2.25 -> lattice 2^-28 -> 9 decimals)
SELECT dp_sum(i4, 0, 9, 'gaussian(epsilon=1, delta=1e-6)') % 1 = 0 AS integral,
       scale(dp_sum(n, 0, 2.25, 'laplace(epsilon=1)')) = 9 AS numeric_scale
FROM nums;

-- clamping: values outside [lower, upper] count as the nearest bound
SELECT abs(dp_sum(i4, 0, 4, 'laplace(epsilon=1)') - (100 * (0+1+2+3+4) + 500 * 4)) <= dp_test.tol('laplace(epsilon=1)', 4) AS int4_upper,
       abs(dp_sum(i8, 5, 100, 'laplace(epsilon=1)') - (500 * 5 + 100 * (5+6+7+8+9))) <= dp_test.tol('laplace(epsilon=1)', 100) AS int8_lower,
       abs(dp_sum(f, -1, 1, 'laplace(epsilon=1)') - (100 * (0 + 0.25 + 0.5 + 0.75) + 600)) <= dp_test.tol('laplace(epsilon=1)', 1) AS float8_clamped,
       abs(dp_sum(n, 0.5, 1.5, 'laplace(epsilon=1)') - (300 * 0.5 + 100 * (0.75 + 1 + 1.25) + 400 * 1.5)) <= dp_test.tol('laplace(epsilon=1)', 1.5) AS numeric_clamped,
       abs(dp_sum(i4, -9, -1, 'laplace(epsilon=1)') - (-1000)) <= dp_test.tol('laplace(epsilon=1)', 9) AS negative_range
FROM nums;
-- lower = upper: every value counts as that bound
SELECT abs(dp_sum(i4, 3, 3, 'laplace(epsilon=1)') - 3000) <= dp_test.tol('laplace(epsilon=1)', 3) AS pinned
FROM nums;
-- NaN is skipped like NULL; +-Infinity clamps to the bounds
SELECT abs(dp_sum(v, -2, 2, 'laplace(epsilon=1)') - (2 - 2 + 1)) <= dp_test.tol('laplace(epsilon=1)', 2) AS float8_special,
       abs(dp_sum(v::numeric, -2, 2, 'laplace(epsilon=1)') - (2 - 2 + 1)) <= dp_test.tol('laplace(epsilon=1)', 2) AS numeric_special
FROM (VALUES ('NaN'::float8), ('Infinity'), ('-Infinity'), (1), (NULL)) v(v);

-- empty input: a noisy number, never NULL
SELECT dp_sum(i2, 0::int2, 9::int2, 'laplace(epsilon=1)') IS NOT NULL AS int2,
       dp_sum(i4, 0, 9, 'laplace(epsilon=1)') IS NOT NULL AS int4,
       dp_sum(i8, 0, 9, 'laplace(epsilon=1)') IS NOT NULL AS int8,
       dp_sum(f, 0, 9, 'laplace(epsilon=1)') IS NOT NULL AS float8,
       dp_sum(n, 0, 9, 'laplace(epsilon=1)') IS NOT NULL AS numeric,
       dp_avg(f, 0, 9, 'laplace(epsilon=1)') IS NOT NULL AS avg
FROM nothing;
SELECT abs(dp_sum(i8, 0, 9, 'laplace(epsilon=1)')) <= dp_test.tol('laplace(epsilon=1)', 9) AS close,
       abs(dp_sum(f, -1, 1, 'osgt(epsilon=1, delta=1e-6)')) <= dp_test.tol('osgt(epsilon=1, delta=1e-6)', 1) AS close_f
FROM nothing;
-- only NULLs: the same
SELECT dp_sum(i4, 0, 9, 'laplace(epsilon=1)') IS NOT NULL AS int4, dp_sum(n, 0, 9, 'laplace(epsilon=1)') IS NOT NULL AS numeric
FROM nums WHERE id = 0;

-- dp_avg: noisy centred sum / noisy count, each with half the budget;
-- the answer stays within [lower, upper]
SELECT abs(dp_avg(f, 0, 2.25, 'laplace(epsilon=1)') - 1.125) <= 0.2 AS avg_laplace,
       abs(dp_avg(i4, 0, 9, 'gaussian(epsilon=1, delta=1e-6)') - 4.5) <= 0.5 AS avg_gauss,
       abs(dp_avg(n, 0, 2.25, 'osgt(epsilon=1, delta=1e-6)') - 1.125) <= 0.2 AS avg_osgt,
       abs(dp_avg(f, 0, 2.25, 'gaussian(rho=0.5)') - 1.125) <= 0.2 AS avg_zcdp,
       dp_avg(f, 0, 0.5, 'laplace(epsilon=1)') BETWEEN 0 AND 0.5 AS within_bounds,
       abs(dp_avg(f, 1, 1, 'laplace(epsilon=1)') - 1) = 0 AS pinned
FROM nums;
SELECT dp_avg(f, -3, 5, 'laplace(epsilon=0.01)') BETWEEN -3 AND 5 AS within_bounds FROM nothing;

-- GROUP BY: one noisy value per group
SELECT count(*) AS groups,
       bool_and(abs(s - t) <= dp_test.tol('laplace(epsilon=1)', 9)) AS all_close
FROM (SELECT grp, dp_sum(i4, 0, 9, 'laplace(epsilon=1)') AS s, sum(i4) AS t FROM nums WHERE id > 0 GROUP BY grp) q;
SELECT count(*) AS groups,
       bool_and(abs(s - t) <= dp_test.tol('gaussian(epsilon=1, delta=1e-6)', 2.25)) AS all_close,
       bool_and(abs(a - ta) <= 0.5) AS avg_close
FROM (SELECT grp, dp_sum(f, 0, 2.25, 'gaussian(epsilon=1, delta=1e-6)') AS s, sum(f) AS t,
             dp_avg(f, 0, 2.25, 'gaussian(epsilon=1, delta=1e-6)') AS a, avg(f) AS ta
      FROM nums WHERE id > 0 GROUP BY grp) q;
-- several dp aggregates with different bounds in one query
SELECT abs(dp_sum(i4, 0, 9, 'laplace(epsilon=1)') - 4500) <= dp_test.tol('laplace(epsilon=1)', 9) AS a,
       abs(dp_sum(i4, 0, 4, 'laplace(epsilon=1)') - 3000) <= dp_test.tol('laplace(epsilon=1)', 4) AS b
FROM nums;

-- the noise is really there: 50 groups with the same sum do not all agree
SELECT count(DISTINCT s) > 1 AS varies
FROM (SELECT g, dp_sum(5, 0, 10, 'laplace(epsilon=1)') AS s FROM generate_series(1, 50) g, generate_series(1, 10) r GROUP BY g) q;
SELECT count(DISTINCT s) > 1 AS varies
FROM (SELECT g, dp_sum(0.5::float8, 0, 1, 'laplace(epsilon=1)') AS s FROM generate_series(1, 50) g GROUP BY g) q;

-- overflow saturates, never wraps and never fails after the release (3 x 2^62
-- does not fit a bigint; the noise scale is 2^62 / 100, the margin 2^62: the
-- noisy sum is below bigint's largest value with probability e^-100 / 2)
SELECT dp_sum(v, 0, 4611686018427387904, 'laplace(epsilon=100)') = 9223372036854775807 AS saturated
FROM (VALUES (4611686018427387904::int8), (4611686018427387904), (4611686018427387904)) t(v);
-- ... while large sums that fit are released (bounds up to the int8 range;
-- the noise scale is b = bound / 100, on a lattice of 2^-30 b: 25.001 b)
SELECT abs(dp_sum(v, 0, 4611686018427387903, 'laplace(epsilon=100)') - 4611686018427387903)
       <= 25.001 * 4611686018427387903 / 100 AS fits
FROM (VALUES (4611686018427387903::int8)) t(v);
SELECT abs(dp_sum(v, -9223372036854775808, 0, 'laplace(epsilon=100)') + 4611686018427387904)
       <= 25.001 * 9223372036854775808 / 100 AS fits_min
FROM (VALUES (-4611686018427387904::int8)) t(v);

-- prepared statements with bound mechanism and bounds (JDBC/ODBC send $n)
PREPARE sum_with(float8, float8, dp_mechanism) AS
	SELECT abs(dp_sum(f, $1, $2, $3) - 1125) <= dp_test.tol($3, greatest(abs($1), abs($2))) AS close FROM nums;
PREPARE sum_text(int4, int4, text) AS
	SELECT abs(dp_sum(i4, $1, $2, $3) - 4500) <= dp_test.tol($3::dp_mechanism, 9) AS close FROM nums;
PREPARE sum_untyped AS
	SELECT abs(dp_sum(i8, $1, $2, $3) - 4500) <= dp_test.tol($3, 9) AS close FROM nums;
PREPARE avg_with(dp_mechanism) AS
	SELECT abs(dp_avg(f, 0, 2.25, $1) - 1.125) <= 0.2 AS close FROM nums;
PREPARE sum_eps(float8) AS
	SELECT abs(dp_sum(n, 0, 2.25, dp_laplace($1)) - 1125) <= dp_test.tol(dp_laplace($1), 2.25) AS close FROM nums;
EXECUTE sum_with(0, 2.25, 'laplace(epsilon=1)');
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE sum_with(0, 2.25, 'laplace(epsilon=1)');
EXECUTE sum_with(0, 2.25, 'laplace(epsilon=1)');
EXECUTE sum_with(-2.25, 2.25, 'gaussian(epsilon=1, delta=1e-6)');
EXECUTE sum_text(0, 9, 'osgt(epsilon=1, delta=1e-6)');
EXECUTE sum_untyped(0, 9, 'laplace(epsilon=0.5)');
EXECUTE avg_with('laplace(epsilon=1)');
EXECUTE sum_eps(2);
-- bad bound parameters are caught at execution, as literals are
EXECUTE sum_with(2.25, 0, 'laplace(epsilon=1)');
EXECUTE sum_with('NaN', 1, 'laplace(epsilon=1)');
EXECUTE sum_with(NULL, 1, 'laplace(epsilon=1)');
EXECUTE sum_text(0, 9, 'laplace(epsilon=-1)');
EXECUTE sum_eps(0);
RESET plan_cache_mode;

-- PL/pgSQL variables are bound parameters too
DO $$
DECLARE
	lo float8 := 0;
	hi float8 := 2.25;
	m dp_mechanism := 'laplace(epsilon=1)';
	s float8;
BEGIN
	SELECT dp_sum(f, lo, hi, m) INTO s FROM nums;
	RAISE NOTICE 'plpgsql close: %', abs(s - 1125) <= 25 * 2.25;
END $$;

-- forced parallel plans: Partial Aggregate in the workers, noise once in the leader
CREATE TABLE par_nums AS SELECT g AS id, (g % 10)::int4 AS i4, (g % 10)::int8 AS i8,
	(g % 10) / 4.0::float8 AS f, ((g % 10) / 4.0)::numeric AS n, g % 3 AS grp
FROM generate_series(1, 60000) g;
ANALYZE par_nums;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT dp_sum(i4, 0, 9, 'laplace(epsilon=1)') FROM par_nums;
EXPLAIN (COSTS OFF) SELECT dp_sum(i8, 0, 9, 'laplace(epsilon=1)') FROM par_nums;
EXPLAIN (COSTS OFF) SELECT dp_sum(f, 0, 2.25, 'laplace(epsilon=1)') FROM par_nums;
EXPLAIN (COSTS OFF) SELECT dp_sum(n, 0, 2.25, 'laplace(epsilon=1)') FROM par_nums;
EXPLAIN (COSTS OFF) SELECT dp_avg(f, 0, 2.25, 'laplace(epsilon=1)') FROM par_nums;
SELECT abs(dp_sum(i4, 0, 9, 'laplace(epsilon=1)') - 270000) <= dp_test.tol('laplace(epsilon=1)', 9) AS int4,
       abs(dp_sum(i8, 0, 9, 'gaussian(epsilon=1, delta=1e-6)') - 270000) <= dp_test.tol('gaussian(epsilon=1, delta=1e-6)', 9) AS int8,
       abs(dp_sum(f, 0, 2.25, 'osgt(epsilon=1, delta=1e-6)') - 67500) <= dp_test.tol('osgt(epsilon=1, delta=1e-6)', 2.25) AS float8,
       abs(dp_sum(n, 0, 2.25, 'laplace(epsilon=1)') - 67500) <= dp_test.tol('laplace(epsilon=1)', 2.25) AS numeric,
       abs(dp_avg(f, 0, 2.25, 'laplace(epsilon=1)') - 1.125) <= 0.01 AS avg
FROM par_nums;
EXPLAIN (COSTS OFF) SELECT grp, dp_sum(f, 0, 2.25, 'laplace(epsilon=1)') FROM par_nums GROUP BY grp;
SELECT count(*) AS groups, bool_and(abs(s - 22500) <= dp_test.tol('laplace(epsilon=1)', 2.25)) AS all_close
FROM (SELECT grp, dp_sum(f, 0, 2.25, 'laplace(epsilon=1)') AS s FROM par_nums GROUP BY grp) q;
-- a bound parameter under a parallel generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE par_sum(float8, float8, text) AS
	SELECT abs(dp_sum(f, $1, $2, $3) - 67500) <= dp_test.tol($3::dp_mechanism, 2.25) AS close FROM par_nums;
EXPLAIN (COSTS OFF) EXECUTE par_sum(0, 2.25, 'laplace(epsilon=1)');
EXECUTE par_sum(0, 2.25, 'laplace(epsilon=1)');
RESET plan_cache_mode;

-- partial states are validated before use: an aggregate whose deserialize
-- function does not match its serialize function is refused (XX001)
CREATE AGGREGATE pg_temp.mixed_sum(float8, float8, float8, dp_mechanism) (
	SFUNC = dp_sum_float8_trans, STYPE = internal, COMBINEFUNC = dp_sum_fixed_combine,
	SERIALFUNC = dp_sum_fixed_serialize, DESERIALFUNC = dp_sum_int8_deserialize,
	FINALFUNC = dp_sum_float8_final, PARALLEL = SAFE);
CREATE AGGREGATE pg_temp.foreign_sum(numeric, numeric, numeric, dp_mechanism) (
	SFUNC = dp_sum_numeric_trans, STYPE = internal, COMBINEFUNC = dp_sum_fixed_combine,
	SERIALFUNC = numeric_avg_serialize, DESERIALFUNC = dp_sum_float8_deserialize,
	FINALFUNC = dp_sum_float8_final, PARALLEL = SAFE);
SELECT pg_temp.mixed_sum(f, 0, 1, 'laplace(epsilon=1)') FROM par_nums;
SELECT pg_temp.foreign_sum(n, 0, 1, 'laplace(epsilon=1)') FROM par_nums;
-- serial plans never deserialize; the final function still refuses an
-- aggregate dp_pg did not plan
SET max_parallel_workers_per_gather = 0;
SELECT pg_temp.mixed_sum(f, 0, 1, 'laplace(epsilon=1)') FROM par_nums;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;

-- every error: bounds (22004 null, 22023 invalid), mechanism, constancy, shapes
SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT dp_sum(i4, 9, 0, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(i2, 9::int2, 0::int2, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(i8, 9, -9, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(f, 1, 0, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(n, 1, 0, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_avg(f, 1, 0, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(f, ''NaN'', 1, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(f, 0, ''Infinity'', ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(f, ''-Infinity'', 0, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_avg(f, 0, ''NaN'', ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(n, ''NaN'', 1, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(n, 0, ''Infinity'', ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(f, 0, 1e301, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(n, -1e301, 0, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(i4, NULL, 9, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(i8, 0, NULL, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(f, NULL, 1, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(n, 0, NULL, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_avg(f, NULL, NULL, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(i4, 0, 9, NULL) FROM nums',
	'SELECT dp_avg(f, 0, 1, NULL::dp_mechanism) FROM nums',
	'SELECT dp_sum(i4, 0, 9, ''laplace(scale=1)'') FROM nums',
	'SELECT dp_sum(f, 0, 1, ''gaussian(sigma=1)'') FROM nums',
	'SELECT dp_avg(f, 0, 1, ''osgt(sigma=1, m=0)'') FROM nums',
	'SELECT dp_sum(n, 0, 1, ''laplace(epsilon=0)'') FROM nums',
	'SELECT dp_sum(i4, 0, i4, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(f, f, 1, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_avg(f, 0, random(), ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(n, (SELECT min(n) FROM nums), 1, ''laplace(epsilon=1)'') FROM nums',
	'SELECT dp_sum(i4, 0, 9, dp_laplace(i4 + 1)) FROM nums',
	'SELECT dp_sum(i4, 0, 9, ''laplace(epsilon=1)'') OVER () FROM nums',
	'SELECT dp_avg(f, 0, 1, ''laplace(epsilon=1)'') OVER (PARTITION BY grp) FROM nums',
	'SELECT grp, dp_sum(f, 0, 1, ''laplace(epsilon=1)'') FROM nums GROUP BY ROLLUP (grp)',
	'SELECT dp_sum_int_final(5)',
	'SELECT dp_sum_int8_final(NULL)',
	'SELECT dp_sum_float8_final(NULL)',
	'SELECT dp_sum_numeric_final(NULL)',
	'SELECT dp_avg_final(NULL)',
	'SELECT dp_sum(''a''::text, 0, 1, ''laplace(epsilon=1)'')'
]) AS q;
-- an aggregate of one's own around dp_pg's final function releases nothing
CREATE AGGREGATE evil_sum(int4, int4, int4, dp_mechanism) (SFUNC = dp_sum_int4_trans, STYPE = int8,
	FINALFUNC = dp_sum_int_final, INITCOND = '1000000');
SELECT evil_sum(i4, 0, 9, 'laplace(epsilon=1)') FROM nums;
DROP AGGREGATE evil_sum(int4, int4, int4, dp_mechanism);
-- EXPLAIN without ANALYZE plans nothing and releases nothing
EXPLAIN (COSTS OFF) SELECT dp_sum(i4, 9, 0, 'laplace(epsilon=1)') FROM nums;
-- bounds up to the 1e300 limit calibrate for every family, numeric and float8 alike
-- (the noise is about 1e300; |answer| < 1e306 fails with probability far below 1e-9)
SELECT abs(dp_sum(n, -1e300, 1e300, 'laplace(epsilon=1)')) < 1e306 AS numeric_ok,
	abs(dp_sum(f, -1e300, 1e300, 'laplace(epsilon=1)')) < 1e306 AS float8_ok,
	abs(dp_avg(f, -1e300, 1e300, 'laplace(epsilon=1)')) < 1e306 AS avg_ok FROM nums;
SELECT abs(dp_sum(n, -1e300, 1e300, 'gaussian(epsilon=1, delta=1e-6)')) < 1e306 AS numeric_ok,
	abs(dp_sum(f, -1e300, 1e300, 'gaussian(epsilon=1, delta=1e-6)')) < 1e306 AS float8_ok,
	abs(dp_avg(f, -1e300, 1e300, 'gaussian(epsilon=1, delta=1e-6)')) < 1e306 AS avg_ok FROM nums;
SELECT abs(dp_sum(n, -1e300, 1e300, 'gaussian(rho=0.5)')) < 1e306 AS numeric_ok,
	abs(dp_sum(f, -1e300, 1e300, 'gaussian(rho=0.5)')) < 1e306 AS float8_ok,
	abs(dp_avg(f, -1e300, 1e300, 'gaussian(rho=0.5)')) < 1e306 AS avg_ok FROM nums;
SELECT abs(dp_sum(n, -1e300, 1e300, 'osgt(epsilon=1, delta=1e-6)')) < 1e306 AS numeric_ok,
	abs(dp_sum(f, -1e300, 1e300, 'osgt(epsilon=1, delta=1e-6)')) < 1e306 AS float8_ok,
	abs(dp_avg(f, -1e300, 1e300, 'osgt(epsilon=1, delta=1e-6)')) < 1e306 AS avg_ok FROM nums;
