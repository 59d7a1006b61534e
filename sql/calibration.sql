--
-- Inspection functions against the ground truth in test/reference (computed
-- elsewhere at 50 digits, copied into the repository with its provenance:
-- test/reference/README.md), with the tolerances of its README section 10.
-- Each query prints the number of rows checked and the failing case ids.
--
-- psql reads the files (\copy, from the source tree pg_regress runs on), so
-- the server needs no access to the clone.
\getenv abs_srcdir PG_ABS_SRCDIR
\cd :abs_srcdir

-- the seed example (OSGT slides): sigma^2 = 40, m = 3, Delta = 1
SELECT abs(variance / 27.704678326334606 - 1) < 1e-10 AS v_ok
FROM dp_pg.calibrate(format('osgt(sigma=%s, m=3)', sqrt(40::float8))::dp_mechanism, 1);
SELECT abs(dp_pg.privacy_delta(format('osgt(sigma=%s, m=3)', sqrt(40::float8))::dp_mechanism, 1, 0.5)
           / 6.7865950506404297e-5 - 1) < 1e-8 AS osgt_delta_ok,
       abs(dp_pg.privacy_delta(format('gaussian(sigma=%s)', sqrt(27.704678326334606::float8))::dp_mechanism, 1, 0.5)
           / 3.2139777657906129e-4 - 1) < 1e-8 AS gauss_delta_ok,
       abs(dp_pg.privacy_epsilon(format('osgt(sigma=%s, m=3)', sqrt(40::float8))::dp_mechanism, 1, 1e-10)
           / 0.93662575649858412 - 1) < 1e-9 AS osgt_eps_ok,
       abs(dp_pg.privacy_epsilon(format('gaussian(sigma=%s)', sqrt(27.704678326334606::float8))::dp_mechanism, 1, 1e-10)
           / 1.1199453387536713 - 1) < 1e-9 AS gauss_eps_ok;

-- privacy profiles: delta(eps) and eps(delta) of the continuous families
-- (the files hold deltas far below the double range; those compare as 0)
CREATE FUNCTION pg_temp.ref_float(t text) RETURNS float8 LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN t ~* 'e-([0-9]{4,}|3[2-9][0-9])' THEN 0 ELSE t::float8 END $$;
CREATE TEMP TABLE ref_profile (case_id text, query text, family text, sens float8,
	b float8, m float8, sigma float8, eps float8, delta float8);
CREATE TEMP TABLE ref_lap (case_id text, query text, sens float8, b float8, eps float8, delta text, delta_quad text);
\copy ref_lap FROM 'test/reference/laplace_profile.csv' WITH (FORMAT csv, HEADER true)
INSERT INTO ref_profile SELECT case_id, query, 'laplace', sens, b, NULL, NULL, eps, pg_temp.ref_float(delta) FROM ref_lap;
CREATE TEMP TABLE ref_gau (case_id text, query text, sens float8, sigma float8, variance float8,
	eps float8, delta text, delta_quad text, note text);
\copy ref_gau FROM 'test/reference/gaussian_profile.csv' WITH (FORMAT csv, HEADER true)
INSERT INTO ref_profile SELECT case_id, query, 'gaussian', sens, NULL, NULL, sigma, eps, pg_temp.ref_float(delta) FROM ref_gau;
CREATE TEMP TABLE ref_osg (case_id text, query text, sens float8, m float8, sigma float8, sigma2 float8,
	variance float8, eps0 float8, eps float8, formula_case int, delta text, delta_quad text, note text);
\copy ref_osg FROM 'test/reference/osgt_profile.csv' WITH (FORMAT csv, HEADER true)
INSERT INTO ref_profile SELECT case_id, query, 'osgt', sens, NULL, m, sigma, eps, pg_temp.ref_float(delta) FROM ref_osg;

CREATE TEMP VIEW ref_profile_mech AS
SELECT *, (CASE family
	WHEN 'laplace' THEN format('laplace(scale=%s)', b)
	WHEN 'gaussian' THEN format('gaussian(sigma=%s)', sigma)
	ELSE format('osgt(sigma=%s, m=%s)', sigma, m) END)::dp_mechanism AS mech
FROM ref_profile;

-- delta: |d - ref| <= 1e-12 or <= 1e-8 ref, and never below ref (1 - 1e-8) - 1e-15
SELECT family, count(*) AS checked,
       array_agg(case_id) FILTER (WHERE NOT ok) AS failed
FROM (SELECT family, case_id, d,
             (abs(d - delta) <= 1e-12 OR abs(d - delta) <= 1e-8 * delta)
             AND d >= delta * (1 - 1e-8) - 1e-15 AS ok
      FROM (SELECT *, dp_pg.privacy_delta(mech, sens, eps) AS d
            FROM ref_profile_mech WHERE query = 'delta_of_eps') s) t
GROUP BY family ORDER BY family;

-- eps: relative 1e-9 (absolute 1e-12 below 1e-3), never below ref (1 - 1e-9)
SELECT family, count(*) AS checked,
       array_agg(case_id) FILTER (WHERE NOT ok) AS failed
FROM (SELECT family, case_id,
             (abs(e - eps) <= 1e-9 * eps OR (eps < 1e-3 AND abs(e - eps) <= 1e-12))
             AND e >= eps * (1 - 1e-9) AS ok
      FROM (SELECT *, dp_pg.privacy_epsilon(mech, sens, delta) AS e
            FROM ref_profile_mech WHERE query = 'eps_of_delta') s) t
GROUP BY family ORDER BY family;

-- OSGT variance V(m, sigma^2): relative 1e-10
SELECT count(*) AS checked, array_agg(case_id) FILTER (WHERE abs(v / variance - 1) > 1e-10) AS failed
FROM (SELECT case_id, variance, (dp_pg.calibrate(format('osgt(sigma=%s, m=%s)', sigma, m)::dp_mechanism, sens)).variance AS v
      FROM ref_osg) s;

-- Rényi divergences: relative 1e-9 (absolute 1e-12 below 1e-3)
CREATE TEMP TABLE ref_rdp (case_id text, mechanism text, sens float8, b float8, m float8, sigma float8,
	variance float8, alpha float8, rdp float8, rdp_quad float8, rdp_zeta_bound float8,
	rdp_gauss_same_variance float8, Bbar float8);
\copy ref_rdp FROM 'test/reference/rdp.csv' WITH (FORMAT csv, HEADER true)
SELECT mechanism, count(*) AS checked,
       array_agg(case_id) FILTER (WHERE NOT (abs(r - rdp) <= 1e-9 * rdp OR (rdp < 1e-3 AND abs(r - rdp) <= 1e-12))) AS failed
FROM (SELECT *, dp_pg.renyi((CASE mechanism
		WHEN 'laplace' THEN format('laplace(scale=%s)', b)
		WHEN 'gaussian' THEN format('gaussian(sigma=%s)', sigma)
		ELSE format('osgt(sigma=%s, m=%s)', sigma, m) END)::dp_mechanism, sens, alpha) AS r
      FROM ref_rdp) s
GROUP BY mechanism ORDER BY mechanism;

-- zCDP -> (eps, delta), Canonne-Kamath-Steinke: relative 1e-9
CREATE TEMP TABLE ref_zcdp (case_id text, query text, rho float8, sens float8, sigma float8, delta float8,
	eps float8, eps_bun_steinke float8, eps_cks float8, alpha_cks float8, eps_gauss_exact float8,
	delta_cks float8, delta_gauss_exact float8);
\copy ref_zcdp FROM 'test/reference/zcdp_conversion.csv' WITH (FORMAT csv, HEADER true)
SELECT count(*) AS checked,
       array_agg(case_id) FILTER (WHERE abs(dp_pg.zcdp_epsilon(rho, delta) / eps_cks - 1) > 1e-9) AS failed
FROM ref_zcdp WHERE query = 'eps_of_delta';

-- Calibration of privacy forms reports the discrete noise actually sampled: never
-- below the continuous calibration of the reference, and at most 5% above it.
CREATE TEMP TABLE ref_cal (case_id text, sens float8, eps float8, delta float8, method text, param text,
	value float8, m float8, sigma float8, variance float8, var_ratio_vs_analytic_gauss float8,
	achieved_delta float8, note text);
\copy ref_cal FROM 'test/reference/calibration.csv' WITH (FORMAT csv, HEADER true)
SELECT method, count(*) AS checked,
       array_agg(case_id) FILTER (WHERE NOT (got >= value * (1 - 1e-12) AND got <= value * 1.05)) AS failed
FROM (SELECT r.*, CASE method
		WHEN 'laplace_pure' THEN (dp_pg.calibrate(dp_laplace(eps), sens)).scale
		WHEN 'gauss_analytic' THEN (dp_pg.calibrate(dp_gaussian(eps, delta), sens)).sigma END AS got
      FROM ref_cal r WHERE method IN ('laplace_pure', 'gauss_analytic')) s
GROUP BY method ORDER BY method;
-- OSGT: the discrete optimum keeps m/sigma at the sub-Gaussian bound, and its
-- sigma is never below the continuous optimum's and at most 5% above it
SELECT count(*) AS checked,
       array_agg(case_id) FILTER (WHERE NOT (c.sigma >= r.sigma * (1 - 1e-12) AND c.sigma <= r.sigma * 1.05
                                            AND c.m / c.sigma <= 0.67448975019608174 * (1 + 1e-12))) AS failed
FROM ref_cal r, dp_pg.calibrate(dp_osgt(r.eps, r.delta), r.sens) c
WHERE method = 'osgt_opt_subgaussian';
-- ... and the discrete noise meets its (eps, delta) on its own exact profile
SELECT count(*) AS checked,
       array_agg(case_id) FILTER (WHERE dp_pg.privacy_delta(mech, sens, eps) > delta) AS failed
FROM (SELECT case_id, sens, eps, delta,
             CASE WHEN method = 'gauss_analytic' THEN dp_gaussian(eps, delta) ELSE dp_osgt(eps, delta) END AS mech
      FROM ref_cal WHERE method IN ('gauss_analytic', 'osgt_opt_subgaussian')) s;

-- zCDP Gaussian: sigma = Delta / sqrt(2 rho) (discrete: not below)
SELECT (c).sigma >= 1 / sqrt(2 * 0.5) * (1 - 1e-12) AND (c).sigma <= 1 / sqrt(2 * 0.5) * (1 + 1e-12) AS zcdp_sigma_ok
FROM (SELECT dp_pg.calibrate(dp_gaussian_zcdp(0.5), 1) AS c) s;

-- accuracy helpers
SELECT abs(dp_noise_stddev('gaussian(sigma=3)', 1) - 3) < 1e-12 AS gauss_sd,
       abs(dp_noise_stddev('laplace(scale=2)', 1) - 2 * sqrt(2)) < 1e-12 AS laplace_sd;
SELECT abs(upper - 100 - 2 * ln(20)) < 1e-9 AND abs(lower - 100 + 2 * ln(20)) < 1e-9 AS laplace_ci
FROM dp_confidence_interval(100, 'laplace(scale=2)', 1, 0.95);
SELECT abs(upper - 10 - 1.959963984540054) < 1e-6 AS gauss_ci FROM dp_confidence_interval(10, 'gaussian(sigma=1)', 1, 0.95);
-- a discrete interval covers at least the level: integer half-width
SELECT lower = 100 - (upper - 100) AS symmetric, upper - 100 = floor(upper - 100) AS integral
FROM dp_confidence_interval(100, dp_gaussian(1, 1e-5), 1, 0.99);

-- bad arguments: 22023
SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT dp_pg.calibrate(''laplace(epsilon=1)'', 0)',
	'SELECT dp_pg.calibrate(''laplace(epsilon=1)'', ''NaN'')',
	'SELECT dp_pg.calibrate(''laplace(epsilon=1)'', ''Infinity'')',
	'SELECT dp_pg.calibrate(''laplace(epsilon=1)'', -1)',
	'SELECT dp_pg.privacy_delta(''laplace(scale=1)'', 1, -0.5)',
	'SELECT dp_pg.privacy_delta(''laplace(scale=1)'', 1, ''NaN'')',
	'SELECT dp_pg.privacy_epsilon(''laplace(scale=1)'', 1, 0)',
	'SELECT dp_pg.privacy_epsilon(''laplace(scale=1)'', 1, 1)',
	'SELECT dp_pg.renyi(''gaussian(sigma=1)'', 1, 1)',
	'SELECT dp_pg.renyi(''gaussian(sigma=1)'', 1, ''Infinity'')',
	'SELECT dp_pg.zcdp_epsilon(0, 1e-5)',
	'SELECT dp_pg.zcdp_epsilon(1, 0)',
	'SELECT dp_pg.zcdp_epsilon(''NaN'', 1e-5)',
	'SELECT dp_noise_stddev(''laplace(epsilon=1)'', 0)',
	'SELECT dp_confidence_interval(1, ''laplace(epsilon=1)'', 1, 1)',
	'SELECT dp_confidence_interval(1, ''laplace(epsilon=1)'', 1, 0)',
	'SELECT dp_confidence_interval(''NaN'', ''laplace(epsilon=1)'', 1, 0.9)',
	'SELECT dp_pg.privacy_delta(''osgt(sigma=1e-300, m=1e15)'', 1e15, 0)',
	'SELECT dp_pg.renyi(''gaussian(sigma=1e-13)'', 1, 2)',
	'SELECT dp_pg.privacy_epsilon(''laplace(scale=1e13)'', 1, 1e-5)',
	'SELECT dp_pg.calibrate(''laplace(epsilon=1e-300)'', 1)'
]) AS q;
