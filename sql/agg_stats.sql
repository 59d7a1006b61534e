--
-- Statistical tests of every aggregate and mechanism family: over many
-- independent releases (one query GROUP BY many groups with identical true
-- values: one independent draw per group, and per bin), the released values
-- are unbiased and their empirical variance is the variance dp_pg.calibrate
-- reports for the noise.  A positive control shows the same test rejects
-- noise with half that variance.
--
-- dp_test.noise_check(deviations, V), for n deviations d = released - true,
-- mean mu, sample variance s2 and central fourth moment m4:
--   mean_ok      |mu| <= 7 sqrt(V / n)
--   variance_ok  |s2 - V| <= 7 sqrt((m4 - s2^2) / n)
--   half_variance_rejected: the variance test applied to d / sqrt(2)
--                (variance V/2) fails.
-- By the central limit theorem (normal approximation, n >= 10000), a correct
-- implementation fails each check with probability P(|N(0,1)| > 7) < 3e-12;
-- this file makes fewer than 80 checks, so it fails by chance with
-- probability < 3e-10.  The positive control exceeds its threshold by a
-- factor sqrt(n / (kurtosis - 1)) / 7 > 5 (Laplace kurtosis 6), so it fails to
-- reject with probability far below 1e-9.
--
CREATE FUNCTION dp_test.noise_check(devs float8[], variance float8,
	OUT draws int, OUT mean_ok boolean, OUT variance_ok boolean, OUT half_variance_rejected boolean)
LANGUAGE sql AS $$
	WITH m AS (SELECT count(*) AS n, avg(d) AS mu FROM unnest(devs) d),
	     c AS (SELECT n, mu, sum((d - mu) ^ 2) / (n - 1) AS s2, sum((d - mu) ^ 4) / n AS m4
	           FROM unnest(devs) d, m GROUP BY n, mu)
	SELECT n::int,
	       abs(mu) <= 7 * sqrt(variance / n),
	       abs(s2 - variance) <= 7 * sqrt((m4 - s2 * s2) / n),
	       abs(s2 / 2 - variance) > 7 * sqrt((m4 / 4 - s2 * s2 / 4) / n)
	FROM c
$$;
-- Run a query with the mechanism bound as $1 and return its float8[] of deviations.
CREATE FUNCTION dp_test.draws(q text, mech dp_mechanism) RETURNS float8[] LANGUAGE plpgsql AS $$
DECLARE
	r float8[];
BEGIN
	EXECUTE q INTO r USING mech;
	RETURN r;
END $$;
-- The same with dp_pg.default_mechanism set to mech (for dp_count(*)).
CREATE FUNCTION dp_test.draws_default(q text, mech dp_mechanism) RETURNS float8[] LANGUAGE plpgsql AS $$
DECLARE
	r float8[];
BEGIN
	PERFORM set_config('dp_pg.default_mechanism', mech::text, true);
	EXECUTE q INTO r;
	RETURN r;
END $$;
CREATE TABLE families (mech dp_mechanism);
INSERT INTO families VALUES ('laplace(epsilon=1)'), ('gaussian(epsilon=1, delta=1e-6)'), ('osgt(epsilon=1, delta=1e-6)');

-- dp_count: 20000 groups of one row
SELECT 'dp_count(*)' AS aggregate, mech, (dp_test.noise_check(dp_test.draws_default(
	'SELECT array_agg(c - 1) FROM (SELECT g, dp_count(*) AS c FROM generate_series(1, 20000) g GROUP BY g) q', mech),
	(dp_pg.calibrate(mech, 1)).variance)).*
FROM families;
SELECT 'dp_count(x, mech)' AS aggregate, mech, (dp_test.noise_check(dp_test.draws(
	'SELECT array_agg(c - 1) FROM (SELECT g, dp_count(g, $1) AS c FROM generate_series(1, 20000) g GROUP BY g) q', mech),
	(dp_pg.calibrate(mech, 1)).variance)).*
FROM families;

-- dp_sum of each type: 20000 groups, true sum 7 (bounds [0, 10]) or 1.25
-- (bounds [-2.5, 2.5]); the noise is calibrate(mech, max(|lower|, |upper|))
SELECT 'dp_sum(int2)' AS aggregate, mech, (dp_test.noise_check(dp_test.draws(
	'SELECT array_agg(s - 7) FROM (SELECT g, dp_sum(7::int2, 0::int2, 10::int2, $1) AS s FROM generate_series(1, 20000) g GROUP BY g) q', mech),
	(dp_pg.calibrate(mech, 10)).variance)).*
FROM families;
SELECT 'dp_sum(int4)' AS aggregate, mech, (dp_test.noise_check(dp_test.draws(
	'SELECT array_agg(s - 7) FROM (SELECT g, dp_sum(7, 0, 10, $1) AS s FROM generate_series(1, 20000) g GROUP BY g) q', mech),
	(dp_pg.calibrate(mech, 10)).variance)).*
FROM families;
SELECT 'dp_sum(int8)' AS aggregate, mech, (dp_test.noise_check(dp_test.draws(
	'SELECT array_agg(s - 7) FROM (SELECT g, dp_sum(7::int8, 0, 10, $1) AS s FROM generate_series(1, 20000) g GROUP BY g) q', mech),
	(dp_pg.calibrate(mech, 10)).variance)).*
FROM families;
SELECT 'dp_sum(float8)' AS aggregate, mech, (dp_test.noise_check(dp_test.draws(
	'SELECT array_agg(s - 1.25) FROM (SELECT g, dp_sum(1.25::float8, -2.5, 2.5, $1) AS s FROM generate_series(1, 20000) g GROUP BY g) q', mech),
	(dp_pg.calibrate(mech, 2.5)).variance)).*
FROM families;
SELECT 'dp_sum(numeric)' AS aggregate, mech, (dp_test.noise_check(dp_test.draws(
	'SELECT array_agg((s - 1.25)::float8) FROM (SELECT g, dp_sum(1.25::numeric, -2.5, 2.5, $1) AS s FROM generate_series(1, 20000) g GROUP BY g) q', mech),
	(dp_pg.calibrate(mech, 2.5)).variance)).*
FROM families;

-- dp_avg: 10000 groups of N = 50 rows at the center 0 of [-1.5, 1.5] (so the
-- estimate is exactly unbiased by symmetry).  Half the budget goes to each
-- release: avg = S / (N + Zc) with S ~ the sum's noise at sensitivity 1.5,
-- Zc ~ the count's at 1, so Var = V_s E[1/(N + Zc)^2] = V_s / N^2 (1 + 3 V_c / N^2 + ...)
-- (the omitted terms are below 1e-5 here).  epsilon 8 keeps N + Zc far from 0.
CREATE TABLE avg_families (mech dp_mechanism, half dp_mechanism);
INSERT INTO avg_families VALUES
	('laplace(epsilon=8)', 'laplace(epsilon=4)'),
	('gaussian(epsilon=8, delta=1e-6)', 'gaussian(epsilon=4, delta=5e-7)'),
	('osgt(epsilon=8, delta=1e-6)', 'osgt(epsilon=4, delta=5e-7)');
SELECT 'dp_avg' AS aggregate, mech, (dp_test.noise_check(dp_test.draws(
	'SELECT array_agg(a) FROM (SELECT g, dp_avg(0, -1.5, 1.5, $1) AS a FROM generate_series(1, 10000) g, generate_series(1, 50) r GROUP BY g) q', mech),
	(dp_pg.calibrate(half, 1.5)).variance / 2500 * (1 + 3 * (dp_pg.calibrate(half, 1)).variance / 2500))).*
FROM avg_families;

-- dp_histogram with public and equal-width bins: 20000 groups of one row,
-- every bin an independent draw (60000 per mechanism) at sensitivity 1
SELECT 'dp_histogram(key, bins)' AS aggregate, mech, (dp_test.noise_check(dp_test.draws(
	'SELECT array_agg(v) FROM (SELECT g, dp_histogram(1, ARRAY[1, 2, 3], $1) AS h FROM generate_series(1, 20000) g GROUP BY g) q,
	        LATERAL (VALUES ((h->>''1'')::float8 - 1), ((h->>''2'')::float8), ((h->>''3'')::float8)) d(v)', mech),
	(dp_pg.calibrate(mech, 1)).variance)).*
FROM families;
SELECT 'dp_histogram(x, lower, upper, nbins)' AS aggregate, mech, (dp_test.noise_check(dp_test.draws(
	'SELECT array_agg(v) FROM (SELECT g, dp_histogram(0.5, 0, 3, 3, $1) AS h FROM generate_series(1, 20000) g GROUP BY g) q,
	        LATERAL (VALUES ((h->>''[0,1)'')::float8 - 1), ((h->>''[1,2)'')::float8), ((h->>''[2,3)'')::float8)) d(v)', mech),
	(dp_pg.calibrate(mech, 1)).variance)).*
FROM families;

-- dp_histogram(key, mech), partition selection (mechanisms with a delta;
-- epsilon 4 gives sigma ~1.25 and threshold 8): 10000 groups with two keys
-- of 30 rows each (> 17 sigma above the threshold: always released)
CREATE TABLE key_families (mech dp_mechanism);
INSERT INTO key_families VALUES ('gaussian(epsilon=4, delta=1e-6)'), ('osgt(epsilon=4, delta=1e-6)');
SELECT 'dp_histogram(key)' AS aggregate, mech, (dp_test.noise_check(dp_test.draws(
	'SELECT array_agg(v) FROM (SELECT g, dp_histogram(k, $1) AS h FROM generate_series(1, 10000) g,
	        (VALUES (''a''), (''b'')) ks(k), generate_series(1, 30) r GROUP BY g) q,
	        LATERAL (VALUES ((h->>''a'')::float8 - 30), ((h->>''b'')::float8 - 30)) d(v)', mech),
	(dp_pg.calibrate(mech, 1)).variance)).*
FROM key_families;
SELECT dp_test.err('SELECT dp_histogram(k, ''laplace(epsilon=1)'') FROM (VALUES (1)) v(k)') AS laplace_refused;
-- The threshold itself: keys with exactly tau rows are released iff the noise
-- is >= 0.  Over 20000 such keys the release rate matches P(Z >= 0) from the
-- exact pmf of the sampled noise (pmf ~ exp(-(k^2 + 2 m |k|) / (2 sigma^2)),
-- m = 0 for the Gaussian) within 7 standard errors; the positive control is a
-- threshold one lower, P(Z >= -1), which the same test must reject.
CREATE FUNCTION dp_test.tail(mech dp_mechanism, j int) RETURNS float8 LANGUAGE sql AS $$
	SELECT sum(w) FILTER (WHERE k >= j) / sum(w)
	FROM dp_pg.calibrate(mech, 1) c, generate_series(-200, 200) k,
	     LATERAL (SELECT exp(greatest(-700, -(k * k + 2 * coalesce(c.m, 0) * abs(k)) / (2 * c.sigma ^ 2))) AS w) x
$$;
SELECT mech, abs(rate - dp_test.tail(mech, 0)) <= 7 * sqrt(dp_test.tail(mech, 0) * (1 - dp_test.tail(mech, 0)) / 20000) AS rate_ok,
       abs(rate - dp_test.tail(mech, -1)) > 7 * sqrt(dp_test.tail(mech, -1) * (1 - dp_test.tail(mech, -1)) / 20000) AS lower_threshold_rejected
FROM (SELECT mech, (SELECT x FROM unnest(dp_test.draws(format(
	'SELECT ARRAY[sum((SELECT count(*) FROM jsonb_object_keys(h)))::float8 / 20000]
	 FROM (SELECT g, dp_histogram(k, $1) AS h FROM generate_series(1, 10000) g,
	       (VALUES (''a''), (''b'')) ks(k), generate_series(1, %s) r GROUP BY g) q', dp_pg.partition_threshold(mech)), mech)) x) AS rate
      FROM key_families) r;
