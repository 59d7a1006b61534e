--
-- dp_mechanism: text forms, constructors, and every input error (SQLSTATE 22023)
--
CREATE SCHEMA dp_test;
-- Run a statement and report its SQLSTATE and message instead of failing.
CREATE FUNCTION dp_test.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- canonical text forms
SELECT 'laplace(epsilon=1)'::dp_mechanism;
SELECT '  LAPLACE ( Epsilon = 0.5 )  '::dp_mechanism;
SELECT 'gaussian(epsilon=0.5, delta=1e-7)'::dp_mechanism;
SELECT 'gaussian(delta=1e-7,epsilon=0.5)'::dp_mechanism;
SELECT 'gaussian(rho=0.125)'::dp_mechanism;
SELECT 'osgt(epsilon=1, delta=1e-8)'::dp_mechanism;
SELECT 'laplace(scale=2)'::dp_mechanism, 'gaussian(sigma=3.5)'::dp_mechanism,
       'osgt(sigma=6.324555320336759, m=3)'::dp_mechanism;
SELECT 'laplace(epsilon=.25)'::dp_mechanism, 'laplace(epsilon=+2.)'::dp_mechanism,
       'laplace(epsilon=1E-3)'::dp_mechanism, 'laplace(epsilon=0.1)'::dp_mechanism;
-- output reads back as the same value
SELECT m::text::dp_mechanism = m AS round_trip
FROM (VALUES ('laplace(epsilon=0.1)'::dp_mechanism), ('gaussian(epsilon=0.3, delta=1e-9)'),
             ('gaussian(rho=0.01)'), ('osgt(epsilon=2, delta=1e-10)'), ('osgt(sigma=1e-3, m=0)')) v(m);

-- constructors
SELECT dp_laplace(1), dp_gaussian(0.5, 1e-6), dp_gaussian_zcdp(0.5), dp_osgt(1, 1e-8);
SELECT dp_laplace(epsilon => 0.5), dp_gaussian(delta => 1e-5, epsilon => 2);
SELECT dp_laplace(NULL) IS NULL AS strict_null;
SELECT dp_laplace(1) = 'laplace(epsilon=1)' AS eq, dp_laplace(1) = dp_laplace(2) AS ne;

-- text and varchar values cast implicitly (how BI clients bind parameters)
SELECT 'laplace(epsilon=2)'::text::dp_mechanism, 'osgt(epsilon=1, delta=1e-6)'::varchar::dp_mechanism;

-- binary output
SELECT dp_mechanism_send('gaussian(epsilon=1, delta=0.5)');

-- malformed text
SELECT 'cauchy(epsilon=1)'::dp_mechanism;
SELECT dp_test.err(format('SELECT %L::dp_mechanism', t)) AS error, t AS input
FROM unnest(ARRAY[
	'', '   ', 'laplace', 'laplace(', 'laplace()', 'laplace(epsilon)', 'laplace(epsilon=)',
	'laplace(epsilon=abc)', 'laplace(epsilon=1', 'laplace(epsilon=1,)', 'laplace(epsilon=1) x',
	'laplace(epsilon=1, epsilon=2)', 'laplace(delta=0.1)', 'laplace(epsilon=1, delta=0.1)',
	'laplace(epsilon=0x10)', 'laplace(epsilon=1e)', 'laplace(epsilon=--1)', 'laplace(epsilon=1;2)',
	'gaussian(epsilon=1)', 'gaussian(delta=1e-5)', 'gaussian(rho=1, epsilon=1)',
	'osgt(epsilon=1)', 'osgt(rho=1)', 'osgt(sigma=1)', '1laplace(epsilon=1)',
	'laplace(' || repeat('x', 100) || '=1)'
]) AS t;

-- non-finite and out-of-range parameters
SELECT dp_test.err(format('SELECT %L::dp_mechanism', t)) AS error, t AS input
FROM unnest(ARRAY[
	'laplace(epsilon=nan)', 'laplace(epsilon=inf)', 'laplace(epsilon=infinity)',
	'laplace(epsilon=-1)', 'laplace(epsilon=0)', 'laplace(epsilon=-0)', 'laplace(epsilon=1e999)',
	'laplace(epsilon=1e-999)', 'laplace(epsilon=100.5)',
	'gaussian(epsilon=1, delta=1)', 'gaussian(epsilon=1, delta=0)', 'gaussian(epsilon=1, delta=-1e-5)',
	'gaussian(epsilon=0, delta=1e-5)', 'gaussian(rho=0)', 'gaussian(rho=-1)', 'gaussian(rho=1e5)',
	'osgt(epsilon=1, delta=2)', 'osgt(sigma=0, m=1)', 'osgt(sigma=1, m=-1)', 'laplace(scale=0)',
	'gaussian(sigma=1e16)'
]) AS t;

SELECT dp_test.err(q) AS error, q AS statement
FROM unnest(ARRAY[
	'SELECT dp_laplace(''NaN'')', 'SELECT dp_laplace(''Infinity'')', 'SELECT dp_laplace(''-Infinity'')',
	'SELECT dp_laplace(0)', 'SELECT dp_laplace(-0.5)', 'SELECT dp_gaussian(1, 1)',
	'SELECT dp_gaussian(1, ''NaN'')', 'SELECT dp_gaussian(''NaN'', 1e-5)', 'SELECT dp_gaussian_zcdp(0)',
	'SELECT dp_gaussian_zcdp(''Infinity'')', 'SELECT dp_osgt(1, 0)', 'SELECT dp_osgt(-1, 1e-5)'
]) AS q;
