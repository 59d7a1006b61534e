/* dp_pg 0.1.0 install script */

\echo Use "CREATE EXTENSION dp_pg" to load this file. \quit

CREATE SCHEMA dp_pg;

--
-- dp_mechanism: a noise family and its privacy (or noise) parameters
--
CREATE TYPE dp_mechanism;

CREATE FUNCTION dp_mechanism_in(cstring) RETURNS dp_mechanism
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_mechanism_out(dp_mechanism) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_mechanism_recv(internal) RETURNS dp_mechanism
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_mechanism_send(dp_mechanism) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE dp_mechanism (
	INPUT = dp_mechanism_in,
	OUTPUT = dp_mechanism_out,
	RECEIVE = dp_mechanism_recv,
	SEND = dp_mechanism_send,
	INTERNALLENGTH = 24,
	ALIGNMENT = double,
	STORAGE = plain
);
COMMENT ON TYPE dp_mechanism IS
	'noise mechanism: laplace(epsilon=E), gaussian(epsilon=E, delta=D), gaussian(rho=R), osgt(epsilon=E, delta=D)';

CREATE FUNCTION dp_mechanism_eq(dp_mechanism, dp_mechanism) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR = (
	LEFTARG = dp_mechanism, RIGHTARG = dp_mechanism,
	FUNCTION = dp_mechanism_eq, COMMUTATOR = =
);

-- BI clients bind parameters as text or varchar: let those resolve too.
CREATE CAST (text AS dp_mechanism) WITH INOUT AS IMPLICIT;
CREATE CAST (varchar AS dp_mechanism) WITH INOUT AS IMPLICIT;

CREATE FUNCTION dp_laplace(epsilon float8) RETURNS dp_mechanism
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_laplace(float8) IS 'discrete Laplace noise, (epsilon, 0)-DP';
CREATE FUNCTION dp_gaussian(epsilon float8, delta float8) RETURNS dp_mechanism
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_gaussian(float8, float8) IS 'Gaussian noise, analytic calibration, (epsilon, delta)-DP';
CREATE FUNCTION dp_gaussian_zcdp(rho float8) RETURNS dp_mechanism
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_gaussian_zcdp(float8) IS 'Gaussian noise, rho-zCDP';
CREATE FUNCTION dp_osgt(epsilon float8, delta float8) RETURNS dp_mechanism
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_osgt(float8, float8) IS 'offset-symmetric Gaussian tails noise, (epsilon, delta)-DP';

--
-- dp_count
--
CREATE FUNCTION dp_count_star_final(int8) RETURNS int8
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;

CREATE AGGREGATE dp_count(*) (
	SFUNC = pg_catalog.int8inc,
	STYPE = int8,
	COMBINEFUNC = pg_catalog.int8pl,
	FINALFUNC = dp_count_star_final,
	INITCOND = '0',
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE dp_count(*) IS 'noisy row count, mechanism from dp_pg.default_mechanism';

CREATE FUNCTION dp_count_trans(int8, "any", dp_mechanism) RETURNS int8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dp_count_final(int8) RETURNS int8
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;

CREATE AGGREGATE dp_count("any", dp_mechanism) (
	SFUNC = dp_count_trans,
	STYPE = int8,
	COMBINEFUNC = pg_catalog.int8pl,
	FINALFUNC = dp_count_final,
	INITCOND = '0',
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE dp_count("any", dp_mechanism) IS 'noisy count of non-null values';

--
-- Inspection and accuracy helpers: public parameters only, free (no charge)
--
CREATE FUNCTION dp_pg.calibrate(mech dp_mechanism, sensitivity float8,
	OUT family text, OUT scale float8, OUT sigma float8, OUT m float8, OUT variance float8)
	AS 'MODULE_PATHNAME', 'dp_inspect_calibrate' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.calibrate(dp_mechanism, float8) IS
	'the noise a mechanism uses at a sensitivity (privacy forms: the discrete noise actually sampled)';
CREATE FUNCTION dp_pg.privacy_delta(mech dp_mechanism, sensitivity float8, epsilon float8) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_inspect_privacy_delta' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.privacy_delta(dp_mechanism, float8, float8) IS 'exact delta(epsilon) of the noise';
CREATE FUNCTION dp_pg.privacy_epsilon(mech dp_mechanism, sensitivity float8, delta float8) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_inspect_privacy_epsilon' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.privacy_epsilon(dp_mechanism, float8, float8) IS 'smallest epsilon with delta(epsilon) <= delta for the noise';
CREATE FUNCTION dp_pg.renyi(mech dp_mechanism, sensitivity float8, alpha float8) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_inspect_renyi' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.renyi(dp_mechanism, float8, float8) IS 'Renyi divergence of order alpha of the noise';
CREATE FUNCTION dp_pg.zcdp_epsilon(rho float8, delta float8) RETURNS float8
	AS 'MODULE_PATHNAME', 'dp_inspect_zcdp_epsilon' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_pg.zcdp_epsilon(float8, float8) IS 'epsilon of rho-zCDP at delta (Canonne-Kamath-Steinke conversion)';
CREATE FUNCTION dp_noise_stddev(mech dp_mechanism, sensitivity float8) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_noise_stddev(dp_mechanism, float8) IS 'standard deviation of the noise';
CREATE FUNCTION dp_confidence_interval(value float8, mech dp_mechanism, sensitivity float8, level float8,
	OUT lower float8, OUT upper float8)
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dp_confidence_interval(float8, dp_mechanism, float8, float8) IS
	'interval that covers the true answer with probability at least level';
