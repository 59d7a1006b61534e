--
-- dp_histogram: public bins, equal-width bins, private partition selection;
-- labels, clamping, NULLs, empty input, GROUP BY, parallel plans, prepared
-- statements, limits and every error path.
--
-- Each noisy count is checked against dp_test.tol(mech, 1) (dp_sum.sql:
-- 25 b or 7 sigma + 1, each check failing with probability < 3e-11).  This
-- file makes fewer than 150 such per-bin checks, and partition-selection
-- checks whose false-failure probability is stated where they are made
-- (each < 1e-13): it fails by chance with probability < 5e-9.
--
SET datestyle = 'ISO, YMD';	-- labels are the keys' text forms
CREATE TABLE visits AS
SELECT g AS id,
       (ARRAY['red', 'green', 'blue', 'mauve'])[g % 4 + 1] AS colour,	-- 250 each
       (g % 5)::int4 AS k,												-- 200 each
       (g % 100) / 10.0::float8 AS x,									-- 100 per 0.1 step in [0, 10)
       g % 3 AS grp,
       date '2024-01-01' + g % 2 AS day									-- 500 each
FROM generate_series(1, 1000) g;
INSERT INTO visits (id) VALUES (0);		-- NULL keys are ignored
CREATE TABLE none_yet (colour text, k int4, x float8);

-- the noisy count of each bin, and whether all are within tol of the truth
CREATE FUNCTION dp_test.hist_close(h jsonb, truth jsonb, mech dp_mechanism) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(h) k)
	       = (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(truth) k)
	   AND bool_and(abs((h->>t.key)::numeric - t.value::numeric) <= dp_test.tol(mech, 1))
	FROM jsonb_each_text(truth) t
$$;

--
-- public bins: dp_histogram(key, bins, mech)
--
SELECT pg_typeof(dp_histogram(colour, ARRAY['red', 'green'], 'laplace(epsilon=1)')) FROM visits;
-- every listed bin appears (zeros too); unlisted keys and NULLs are ignored
SELECT dp_test.hist_close(dp_histogram(colour, ARRAY['red', 'green', 'blue', 'cyan'], 'laplace(epsilon=1)'),
       '{"red": 250, "green": 250, "blue": 250, "cyan": 0}', 'laplace(epsilon=1)') AS text_bins
FROM visits;
SELECT dp_test.hist_close(dp_histogram(k, ARRAY[0, 1, 2, 7], 'gaussian(epsilon=1, delta=1e-6)'),
       '{"0": 200, "1": 200, "2": 200, "7": 0}', 'gaussian(epsilon=1, delta=1e-6)') AS int_bins
FROM visits;
SELECT dp_test.hist_close(dp_histogram(k::int8, ARRAY[3, 4]::int8[], 'osgt(epsilon=1, delta=1e-6)'),
       '{"3": 200, "4": 200}', 'osgt(epsilon=1, delta=1e-6)') AS int8_bins,
       dp_test.hist_close(dp_histogram(k::int2, ARRAY[3, 4]::int2[], 'gaussian(rho=0.5)'),
       '{"3": 200, "4": 200}', 'gaussian(rho=0.5)') AS int2_bins,
       dp_test.hist_close(dp_histogram(day, ARRAY[date '2024-01-01', date '2024-01-02', date '2025-01-01'], dp_laplace(1)),
       '{"2024-01-01": 500, "2024-01-02": 500, "2025-01-01": 0}', dp_laplace(1)) AS date_bins,
       dp_test.hist_close(dp_histogram(k::numeric / 2, ARRAY[0, 0.5, 1.0], dp_osgt(2, 1e-8)),
       '{"0": 200, "0.5": 200, "1.0": 200}', dp_osgt(2, 1e-8)) AS numeric_bins
FROM visits;
-- keys and bins of different types meet at a common type (varchar key, text[] bins; int key, numeric bins)
SELECT dp_test.hist_close(dp_histogram(colour::varchar, ARRAY['red', 'blue'], 'laplace(epsilon=1)'),
       '{"red": 250, "blue": 250}', 'laplace(epsilon=1)') AS varchar_key,
       dp_test.hist_close(dp_histogram(k, ARRAY[1.0, 1.5], 'laplace(epsilon=1)'),
       '{"1.0": 200, "1.5": 0}', 'laplace(epsilon=1)') AS int_key_numeric_bins
FROM visits;
-- text under a non-deterministic collation: equal keys meet in one bin
CREATE COLLATION dp_test.nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT dp_test.hist_close(dp_histogram(upper(colour) COLLATE dp_test.nocase, ARRAY['red', 'Green'], 'laplace(epsilon=1)'),
       '{"red": 250, "Green": 250}', 'laplace(epsilon=1)') AS nocase
FROM visits;
-- counts are integers
SELECT bool_and(jsonb_typeof(v) = 'number' AND v::numeric % 1 = 0) AS integers
FROM jsonb_each((SELECT dp_histogram(k, ARRAY[0, 1, 2], 'gaussian(epsilon=1, delta=1e-6)') FROM visits)) e(k, v);
-- empty input: every bin, noisy around 0
SELECT dp_test.hist_close(dp_histogram(colour, ARRAY['red', 'green'], 'laplace(epsilon=1)'),
       '{"red": 0, "green": 0}', 'laplace(epsilon=1)') AS empty
FROM none_yet;

--
-- equal-width bins: dp_histogram(x, lower, upper, nbins, mech)
--
SELECT array_agg(k ORDER BY (substring(k from 2 for position(',' in k) - 2))::float8) AS labels
FROM jsonb_object_keys((SELECT dp_histogram(x, 0, 1, 10, 'laplace(epsilon=1)') FROM visits)) k;
SELECT array_agg(k ORDER BY (substring(k from 2 for position(',' in k) - 2))::float8) AS labels
FROM jsonb_object_keys((SELECT dp_histogram(x, -1.5, 3, 3, 'laplace(epsilon=1)') FROM visits)) k;
-- x in [0, 10): 100 rows per 0.1; 4 bins of [0, 8): 200 each, 8.0..9.9 clamped into the last
SELECT dp_test.hist_close(dp_histogram(x, 0, 8, 4, 'laplace(epsilon=1)'),
       '{"[0,2)": 200, "[2,4)": 200, "[4,6)": 200, "[6,8)": 400}', 'laplace(epsilon=1)') AS clamped_high,
       dp_test.hist_close(dp_histogram(x, 5, 10, 2, 'gaussian(epsilon=1, delta=1e-6)'),
       '{"[5,7.5)": 750, "[7.5,10)": 250}', 'gaussian(epsilon=1, delta=1e-6)') AS clamped_low,
       dp_test.hist_close(dp_histogram(k, 0, 5, 5, 'osgt(epsilon=1, delta=1e-6)'),
       '{"[0,1)": 200, "[1,2)": 200, "[2,3)": 200, "[3,4)": 200, "[4,5)": 200}', 'osgt(epsilon=1, delta=1e-6)') AS int_input
FROM visits;
-- edges are exact: 0.3 falls in [0.3,0.4), however (x - lower) * nbins / width rounds
SELECT dp_test.hist_close(dp_histogram(v, 0, 1, 10, 'laplace(epsilon=1)'),
       '{"[0,0.1)": 0, "[0.1,0.2)": 1, "[0.2,0.3)": 0, "[0.3,0.4)": 1, "[0.4,0.5)": 0, "[0.5,0.6)": 0,
         "[0.6,0.7)": 1, "[0.7,0.8)": 0, "[0.8,0.9)": 0, "[0.9,1)": 1}', 'laplace(epsilon=1)') AS edges
FROM (VALUES (0.1::float8), (0.3), (0.6), (0.9)) v(v);
-- NaN and NULL are ignored; +-Infinity go to the edge bins; one bin takes everything
SELECT dp_test.hist_close(dp_histogram(v, 0, 1, 2, 'laplace(epsilon=1)'),
       '{"[0,0.5)": 1, "[0.5,1)": 1}', 'laplace(epsilon=1)') AS special,
       dp_test.hist_close(dp_histogram(v, 0, 1, 1, 'laplace(epsilon=1)'),
       '{"[0,1)": 2}', 'laplace(epsilon=1)') AS one_bin
FROM (VALUES ('NaN'::float8), ('Infinity'), ('-Infinity'), (NULL)) v(v);
SELECT dp_test.hist_close(dp_histogram(x, 0, 1, 2, 'laplace(epsilon=1)'),
       '{"[0,0.5)": 0, "[0.5,1)": 0}', 'laplace(epsilon=1)') AS empty
FROM none_yet;

--
-- private partition selection: dp_histogram(key, mech)
--
-- A key is released iff its noisy count reaches dp_pg.partition_threshold(mech):
-- a key with one row is released with probability <= delta.
SELECT dp_pg.partition_threshold('gaussian(epsilon=1, delta=1e-6)') AS gauss,
       dp_pg.partition_threshold('osgt(epsilon=1, delta=1e-6)') AS osgt,
       dp_pg.partition_threshold(dp_gaussian(1, 1e-12)) AS gauss_small_delta;
-- the threshold is a proven tail bound: P(noise >= threshold - 1) <= delta,
-- checked by summing the discrete Gaussian pmf (sigma^2 from calibrate)
SELECT sum(exp(-(j * j) / (2 * s2))) FILTER (WHERE j >= t - 1) / sum(exp(-(j * j) / (2 * s2))) <= 1e-6 AS tail_ok,
       sum(exp(-(j * j) / (2 * s2))) FILTER (WHERE j >= t - 3) / sum(exp(-(j * j) / (2 * s2))) > 1e-6 AS not_wasteful
FROM (SELECT (c.sigma)^2 AS s2, dp_pg.partition_threshold('gaussian(epsilon=1, delta=1e-6)') AS t
      FROM dp_pg.calibrate('gaussian(epsilon=1, delta=1e-6)', 1) c) p,
     generate_series(-100, 100) j
GROUP BY s2, t;
-- frequent keys are released with their noisy counts (250 rows: > 40 sigma above the threshold)
SELECT dp_test.hist_close(dp_histogram(colour, 'gaussian(epsilon=1, delta=1e-6)'),
       '{"red": 250, "green": 250, "blue": 250, "mauve": 250}', 'gaussian(epsilon=1, delta=1e-6)') AS text_keys,
       dp_test.hist_close(dp_histogram(k, 'osgt(epsilon=1, delta=1e-6)'),
       '{"0": 200, "1": 200, "2": 200, "3": 200, "4": 200}', 'osgt(epsilon=1, delta=1e-6)') AS int_keys,
       dp_test.hist_close(dp_histogram(day, 'gaussian(epsilon=0.5, delta=1e-8)'),
       '{"2024-01-01": 500, "2024-01-02": 500}', 'gaussian(epsilon=0.5, delta=1e-8)') AS date_keys
FROM visits;
-- rare keys are not: 1000 keys of one row each at delta = 1e-6 release at most
-- 3 (P(more) < C(1000,4) 1e-24 < 5e-14); keys of 100 rows all appear
SELECT (SELECT count(*) FROM jsonb_object_keys(dp_histogram(g, 'gaussian(epsilon=1, delta=1e-6)'))) <= 3 AS rare_hidden
FROM generate_series(1, 1000) g;
SELECT (SELECT count(*) FROM jsonb_object_keys(dp_histogram(g % 10, 'gaussian(epsilon=1, delta=1e-6)'))) = 10 AS frequent_shown
FROM generate_series(1, 1000) g;
-- empty input releases no key (an empty object, not NULL)
SELECT dp_histogram(colour, 'gaussian(epsilon=1, delta=1e-6)') AS empty FROM none_yet;

--
-- GROUP BY: one histogram per group (parallel composition)
--
SELECT count(*) AS groups,
       bool_and(dp_test.hist_close(h, jsonb_build_object('0', t0, '1', t1), 'laplace(epsilon=1)')) AS all_close
FROM (SELECT grp, dp_histogram(k, ARRAY[0, 1], 'laplace(epsilon=1)') AS h,
             count(*) FILTER (WHERE k = 0) AS t0, count(*) FILTER (WHERE k = 1) AS t1
      FROM visits WHERE id > 0 GROUP BY grp) q;
SELECT count(*) AS groups,
       bool_and(dp_test.hist_close(h, jsonb_build_object('[0,5)', t0, '[5,10)', t1), 'laplace(epsilon=1)')) AS all_close
FROM (SELECT grp, dp_histogram(x, 0, 10, 2, 'laplace(epsilon=1)') AS h,
             count(*) FILTER (WHERE x < 5) AS t0, count(*) FILTER (WHERE x >= 5) AS t1
      FROM visits WHERE id > 0 GROUP BY grp) q;
SELECT count(*) AS groups,
       bool_and((SELECT count(*) FROM jsonb_object_keys(h)) = 4) AS four_colours_each
FROM (SELECT grp, dp_histogram(colour, 'gaussian(epsilon=1, delta=1e-6)') AS h FROM visits WHERE id > 0 GROUP BY grp) q;

--
-- prepared statements: bins, bounds and mechanism as bound parameters
--
PREPARE hist_bins(text[], dp_mechanism) AS
	SELECT dp_test.hist_close(dp_histogram(colour, $1, $2), '{"red": 250, "blue": 250}', $2) AS close FROM visits;
PREPARE hist_width(float8, float8, int4, text) AS
	SELECT dp_test.hist_close(dp_histogram(x, $1, $2, $3, $4), '{"[0,5)": 500, "[5,10)": 500}', $4::dp_mechanism) AS close FROM visits;
PREPARE hist_keys(text) AS
	SELECT dp_test.hist_close(dp_histogram(k, $1), '{"0": 200, "1": 200, "2": 200, "3": 200, "4": 200}', $1::dp_mechanism) AS close FROM visits;
EXECUTE hist_bins(ARRAY['red', 'blue'], 'laplace(epsilon=1)');
SET plan_cache_mode = force_generic_plan;
EXECUTE hist_bins(ARRAY['red', 'blue'], 'gaussian(epsilon=1, delta=1e-6)');
EXECUTE hist_width(0, 10, 2, 'laplace(epsilon=1)');
EXECUTE hist_keys('osgt(epsilon=1, delta=1e-6)');
EXECUTE hist_bins(ARRAY['red', 'red'], 'laplace(epsilon=1)');
EXECUTE hist_width(0, 10, 0, 'laplace(epsilon=1)');
EXECUTE hist_keys('laplace(epsilon=1)');
-- the bin-count limit: 100000 bins at most (54000)
SELECT dp_test.err(format('SELECT dp_histogram(k, %L::int4[], ''laplace(epsilon=1)'') FROM visits',
                          ARRAY(SELECT generate_series(1, n)))) AS error
FROM (VALUES (100000), (100001)) v(n);
RESET plan_cache_mode;
-- and at most 1000000 distinct keys per group under partition selection (54000)
SELECT dp_histogram(g, 'gaussian(epsilon=1, delta=1e-6)') FROM generate_series(1, 1000001) g;

--
-- forced parallel plans: Partial Aggregate, then one release in the leader
--
CREATE TABLE par_visits AS SELECT g AS id, (g % 5)::int4 AS k, (g % 100) / 10.0::float8 AS x,
	(ARRAY['red', 'green', 'blue'])[g % 3 + 1] AS colour, g % 2 AS grp
FROM generate_series(1, 60000) g;
ANALYZE par_visits;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT dp_histogram(k, ARRAY[0, 1, 9], 'laplace(epsilon=1)') FROM par_visits;
EXPLAIN (COSTS OFF) SELECT dp_histogram(x, 0, 10, 4, 'laplace(epsilon=1)') FROM par_visits;
EXPLAIN (COSTS OFF) SELECT dp_histogram(colour, 'gaussian(epsilon=1, delta=1e-6)') FROM par_visits;
SELECT dp_test.hist_close(dp_histogram(k, ARRAY[0, 1, 9], 'laplace(epsilon=1)'),
       '{"0": 12000, "1": 12000, "9": 0}', 'laplace(epsilon=1)') AS bins,
       dp_test.hist_close(dp_histogram(x, 0, 10, 4, 'gaussian(epsilon=1, delta=1e-6)'),
       '{"[0,2.5)": 15000, "[2.5,5)": 15000, "[5,7.5)": 15000, "[7.5,10)": 15000}', 'gaussian(epsilon=1, delta=1e-6)') AS width,
       dp_test.hist_close(dp_histogram(colour, 'gaussian(epsilon=1, delta=1e-6)'),
       '{"red": 20000, "green": 20000, "blue": 20000}', 'gaussian(epsilon=1, delta=1e-6)') AS text_keys,
       dp_test.hist_close(dp_histogram(k, 'osgt(epsilon=1, delta=1e-6)'),
       '{"0": 12000, "1": 12000, "2": 12000, "3": 12000, "4": 12000}', 'osgt(epsilon=1, delta=1e-6)') AS int_keys
FROM par_visits;
EXPLAIN (COSTS OFF) SELECT grp, dp_histogram(colour, 'gaussian(epsilon=1, delta=1e-6)') FROM par_visits GROUP BY grp;
SELECT count(*) AS groups, bool_and(dp_test.hist_close(h, '{"red": 10000, "green": 10000, "blue": 10000}',
                                                  'gaussian(epsilon=1, delta=1e-6)')) AS all_close
FROM (SELECT grp, dp_histogram(colour, 'gaussian(epsilon=1, delta=1e-6)') AS h FROM par_visits GROUP BY grp) q;
SET plan_cache_mode = force_generic_plan;
PREPARE par_hist(int4[], text) AS
	SELECT dp_test.hist_close(dp_histogram(k, $1, $2), '{"0": 12000, "4": 12000}', $2::dp_mechanism) AS close FROM par_visits;
EXPLAIN (COSTS OFF) EXECUTE par_hist(ARRAY[0, 4], 'laplace(epsilon=1)');
EXECUTE par_hist(ARRAY[0, 4], 'laplace(epsilon=1)');
RESET plan_cache_mode;
-- mismatched serialize / deserialize functions are refused (XX001)
CREATE AGGREGATE pg_temp.mixed_hist(anyelement, dp_mechanism) (
	SFUNC = dp_histogram_keys_trans, STYPE = internal, COMBINEFUNC = dp_histogram_keys_combine,
	SERIALFUNC = dp_histogram_keys_serialize, DESERIALFUNC = dp_histogram_counts_deserialize,
	FINALFUNC = dp_histogram_keys_final, PARALLEL = SAFE);
SELECT pg_temp.mixed_hist(k, 'gaussian(epsilon=1, delta=1e-6)') FROM par_visits;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;

--
-- every error path
--
-- partition selection needs a delta (22023, with a hint)
SELECT dp_histogram(colour, 'laplace(epsilon=1)') FROM visits;
SELECT dp_histogram(colour, 'gaussian(rho=0.5)') FROM visits;
-- labels must be distinct jsonb keys
SET extra_float_digits = -15;
SELECT dp_histogram(x, ARRAY[0.1::float8, 0.10000000000000002], 'laplace(epsilon=1)') FROM visits;
RESET extra_float_digits;
SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT dp_histogram(colour, NULL::text[], ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(colour, ARRAY[]::text[], ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(colour, ARRAY[[''a'', ''b''], [''c'', ''d'']], ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(colour, ARRAY[''red'', NULL], ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(colour, ARRAY[''red'', ''blue'', ''red''], ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(k, ARRAY[1, 2, 1.0], ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(colour, ARRAY[colour], ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(colour, ARRAY[''red''], NULL) FROM visits',
	'SELECT dp_histogram(colour, ARRAY[''red''], ''gaussian(sigma=1)'') FROM visits',
	'SELECT dp_histogram(point(k, k), ARRAY[point(1, 1)], ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, 1, 0, 10, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, 1, 1, 10, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, ''NaN'', 1, 10, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, 0, ''Infinity'', 10, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, -1e308, 1e308, 10, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, NULL, 1, 10, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, 0, 1, NULL, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, 0, 1, 0, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, 0, 1, -3, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, 0, 1, 100001, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, 0, 5e-324, 2, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, 0, k, 10, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(x, 0, 1, k, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(colour, ''laplace(epsilon=1)'') FROM visits',
	'SELECT dp_histogram(colour, ''gaussian(rho=0.5)'') FROM visits',
	'SELECT dp_histogram(colour, ''osgt(sigma=1, m=0)'') FROM visits',
	'SELECT dp_histogram(colour, NULL::dp_mechanism) FROM visits',
	'SELECT dp_histogram(colour, dp_gaussian(k + 1, 1e-6)) FROM visits',
	'SELECT dp_histogram(point(k, k), ''gaussian(epsilon=1, delta=1e-6)'') FROM visits',
	'SELECT dp_histogram(k, ARRAY[1], ''laplace(epsilon=1)'') OVER () FROM visits',
	'SELECT dp_histogram(x, 0, 1, 2, ''laplace(epsilon=1)'') OVER (PARTITION BY grp) FROM visits',
	'SELECT dp_histogram(colour, ''gaussian(epsilon=1, delta=1e-6)'') OVER () FROM visits',
	'SELECT grp, dp_histogram(k, ARRAY[1], ''laplace(epsilon=1)'') FROM visits GROUP BY CUBE (grp)',
	'SELECT dp_pg.partition_threshold(''laplace(epsilon=1)'')',
	'SELECT dp_pg.partition_threshold(''gaussian(epsilon=1, delta=0)'')'
]) AS q;
RESET datestyle;
