--
-- Post-processing: free functions of released values and public parameters.
-- Deterministic inputs give deterministic outputs; the two checks on real
-- releases at the end state their false-failure probability.
--

-- non-negativity and rounding
SELECT dp_nonnegative(-3::bigint) AS bigint, dp_nonnegative(2.5::float8) AS float8,
       dp_nonnegative(-0.5::numeric) AS numeric, dp_nonnegative(NULL::bigint) AS null_in;
SELECT dp_nonnegative('{"a": -2, "b": 0, "c": 7, "d": -0.5}'::jsonb);
SELECT dp_round('{"a": -2.5, "b": 0.49, "c": 7.5, "d": 3}'::jsonb);
SELECT dp_round(dp_nonnegative('{"a": -2.5, "b": 1.5}'::jsonb));
SELECT dp_nonnegative('{}'::jsonb) AS empty, dp_round('{}'::jsonb) AS empty_round;

-- James-Stein: y (1 - (d - 2) s^2 / |y|^2)_+, s^2 the noise variance.
-- gaussian(sigma=2): s^2 = 4, d = 4, |y|^2 = 134: factor 1 - 8/134
SELECT dp_james_stein('{"a": 10, "b": -3, "c": 5, "d": 0}'::jsonb, 'gaussian(sigma=2)');
SELECT dp_james_stein(ARRAY[10, -3, 5, 0]::float8[], 'gaussian(sigma=2)');
-- shrinks all the way to 0 when the signal is below the noise
SELECT dp_james_stein(ARRAY[1, -1, 1, 0]::float8[], 'gaussian(sigma=2)');
-- fewer than 3 values: unchanged (James-Stein helps from d = 3)
SELECT dp_james_stein(ARRAY[1, 2]::float8[], 'gaussian(sigma=2)'), dp_james_stein('{"a": 1}'::jsonb, 'gaussian(sigma=2)');
-- a privacy form uses the noise dp_pg samples for it (dp_pg.calibrate):
-- gaussian(rho=0.5) at sensitivity 1 is a discrete Gaussian with sigma^2 = 1
SELECT round(v::numeric, 6) AS js
FROM unnest(dp_james_stein(ARRAY[3, 4, 0]::float8[], 'gaussian(rho=0.5)')) v;
SELECT round(((1 - (3 - 2) * (dp_pg.calibrate('gaussian(rho=0.5)', 1)).variance / 25) * 3)::numeric, 6) AS expected_first;
-- sensitivity scales the noise: laplace(epsilon=1) at sensitivity 2 is b = 2, variance ~8
SELECT round(v::numeric, 4) AS js
FROM unnest(dp_james_stein(ARRAY[10, 10, 10, 10]::float8[], 'laplace(epsilon=1)', 2)) v;
-- all zeros stay zero; the array's lower bound is kept
SELECT dp_james_stein(ARRAY[0, 0, 0]::float8[], 'gaussian(sigma=1)') AS zeros,
       dp_james_stein('[0:3]={4,4,4,4}'::float8[], 'gaussian(sigma=1)') AS lbound,
       dp_james_stein(ARRAY[]::float8[], 'gaussian(sigma=1)') AS empty;

-- soft thresholding at the universal threshold: Gaussian / OSGT
-- lambda = sigma sqrt(2 ln d) (sigma = 2, d = 4: 3.3302), Laplace b ln d (b = 2: 2.7726)
SELECT dp_soft_threshold('{"a": 10, "b": -3, "c": 5, "d": -4}'::jsonb, 'gaussian(sigma=2)');
SELECT dp_soft_threshold('{"a": 10, "b": -3, "c": 5, "d": -4}'::jsonb, 'laplace(scale=2)');
SELECT dp_soft_threshold(ARRAY[10, -3, 5, -4]::float8[], 'osgt(sigma=2, m=1)');
SELECT round(v::numeric, 4) AS soft
FROM unnest(dp_soft_threshold(ARRAY[10, -3, 5, -4]::float8[], 'laplace(epsilon=0.5)')) v;
-- one value: no threshold (sqrt(2 ln 1) = 0)
SELECT dp_soft_threshold(ARRAY[-0.5]::float8[], 'gaussian(sigma=2)');

-- errors (22023 unless stated)
SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT dp_nonnegative(''[1, 2]''::jsonb)',
	'SELECT dp_round(''{"a": "x"}''::jsonb)',
	'SELECT dp_round(''7''::jsonb)',
	'SELECT dp_james_stein(''{"a": {"b": 1}}''::jsonb, ''gaussian(sigma=1)'')',
	'SELECT dp_soft_threshold(''{"a": null}''::jsonb, ''gaussian(sigma=1)'')',
	'SELECT dp_james_stein(ARRAY[1, NULL]::float8[], ''gaussian(sigma=1)'')',
	'SELECT dp_james_stein(ARRAY[[1, 2], [3, 4]]::float8[], ''gaussian(sigma=1)'')',
	'SELECT dp_soft_threshold(ARRAY[1, ''NaN'']::float8[], ''gaussian(sigma=1)'')',
	'SELECT dp_soft_threshold(ARRAY[1, ''Infinity'']::float8[], ''gaussian(sigma=1)'')',
	'SELECT dp_james_stein(ARRAY[1, 2, 3]::float8[], ''gaussian(sigma=1)'', 0)',
	'SELECT dp_james_stein(ARRAY[1, 2, 3]::float8[], ''gaussian(sigma=1)'', ''NaN'')',
	'SELECT dp_soft_threshold(''{"a": 1}''::jsonb, ''laplace(epsilon=1)'', -1)',
	'SELECT dp_soft_threshold(''{"a": 1}''::jsonb, ''laplace(epsilon=0)'')',
	'SELECT dp_soft_threshold(''{"a": 1}''::jsonb, ''cauchy(epsilon=1)'')'
]) AS q;
-- NULL in, NULL out (strict)
SELECT dp_james_stein(NULL::jsonb, 'gaussian(sigma=1)') IS NULL AS null_h,
       dp_soft_threshold('{"a": 1}'::jsonb, NULL) IS NULL AS null_mech;

-- On real releases the denoisers pay off.  The margins below are more than
-- 13 standard deviations of the compared sums of squares, so by a normal
-- approximation each check fails by chance with probability < 1e-9.
-- dp_test.release runs a histogram query with its bins bound as $1.
CREATE FUNCTION dp_test.release(q text, bins int4[]) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	h jsonb;
BEGIN
	EXECUTE q INTO h USING bins;
	RETURN h;
END $$;
-- a sparse histogram (3 of 1000 public bins at 1000, the rest 0) is closer
-- to the truth after soft thresholding (squared error ~45 sigma^2 against
-- ~1000 sigma^2) ...
CREATE TABLE sparse AS SELECT (g % 3) * 100 AS key FROM generate_series(1, 3000) g;
SELECT sum(((raw->>b::text)::numeric - t)^2) > 2 * sum(((st->>b::text)::numeric - t)^2) AS soft_threshold_helps
FROM (SELECT h AS raw, dp_soft_threshold(h, 'gaussian(epsilon=1, delta=1e-6)') AS st
      FROM dp_test.release('SELECT dp_histogram(key, $1, ''gaussian(epsilon=1, delta=1e-6)'') FROM sparse',
                           ARRAY(SELECT generate_series(0, 999))) h) r,
     LATERAL (SELECT b, CASE WHEN b IN (0, 100, 200) THEN 1000 ELSE 0 END AS t FROM generate_series(0, 999) b) tr;
-- ... and a dense, weak one (2000 bins of 5 rows each, noise sigma ~4.4) after
-- James-Stein shrinkage (expected squared error per bin ~11 against ~19)
CREATE TABLE dense AS SELECT g % 2000 AS key FROM generate_series(1, 10000) g;
SELECT sum(((raw->>b::text)::numeric - 5)^2) > sum(((js->>b::text)::numeric - 5)^2) AS james_stein_helps
FROM (SELECT h AS raw, dp_james_stein(h, 'gaussian(epsilon=1, delta=1e-6)') AS js
      FROM dp_test.release('SELECT dp_histogram(key, $1, ''gaussian(epsilon=1, delta=1e-6)'') FROM dense',
                           ARRAY(SELECT generate_series(0, 1999))) h) r,
     generate_series(0, 1999) b;
