--
-- The SQL that analysts' tools write beyond plain columns: arithmetic with
-- bounds derived from value domains (src/guard/bounds.c), comparisons, CASE
-- and arithmetic as GROUP BY keys, constant regular expressions (regex.c),
-- min / max of dates, STDDEV / VARIANCE from noisy moments and
-- count(DISTINCT <public-key column>) (derived.c), filters that narrow the
-- listed keys of generalised keys (narrow.c), and a DBA's views (views.c).
--
-- What each query became is read exactly from its ledger row (the call
-- sites: aggregate, mechanism, noise scale); noisy answers are checked by
-- properties.  The analyst's default mechanism is laplace(epsilon=100): a
-- count's noise is 0 except with probability < 1e-40; a sum's (scale b =
-- bound / 100) stays within 25 b except with probability < 1.4e-11; a
-- quantile's rank error (epsilon 100, 2,000 values) stays within a cell and
-- 2 ranks except with probability < 1e-12 (the exponential mechanism's
-- bound); the variances' tolerances are derived below.  Fewer than 50 such
-- checks: the file fails by chance with probability < 1e-9.
--
-- Truths (g = 1..2000) of ex.sales: region north/south/east/west (g % 4,
-- public keys); category Computers/Books/Games/Comics (g % 4, no keys);
-- amount numeric (g % 50) * 10.5 in CHECK [0, 5000] (sum 514500); quantity
-- int2 g % 7 in CHECK [0, 99]; discount numeric g % 40 with the declared
-- domain [0, 100]; birth_year int 1950 + g % 50 in CHECK [1900, 2010]; age
-- int 18 + g % 60 in CHECK [0, 120]; price float8 (g % 20) * 2.5 with the
-- declared domain [0, 1000]; order_date date 2024-01-01 + g % 90 (every day
-- of 2023-2024 declared public); shipped date order_date + g % 5 in CHECK
-- [2023-01-01, 2025-12-31]; is_member g % 5 = 0; person g % 300; big g
-- (unique, in CHECK [1, 10000]).
--
CREATE ROLE dp_ex_owner;
CREATE ROLE dp_ex_analyst;
CREATE ROLE dp_ex_other;
CREATE SCHEMA ex AUTHORIZATION dp_ex_owner;
CREATE SCHEMA ex_ana AUTHORIZATION dp_ex_analyst;
GRANT USAGE ON SCHEMA ex TO PUBLIC;
SET ROLE dp_ex_owner;
CREATE TABLE ex.sales (
	id int PRIMARY KEY,
	region text NOT NULL,
	category text NOT NULL,
	amount numeric CHECK (amount >= 0 AND amount <= 5000),
	quantity smallint CHECK (quantity BETWEEN 0 AND 99),
	discount numeric,
	birth_year int CHECK (birth_year BETWEEN 1900 AND 2010),
	age int CHECK (age BETWEEN 0 AND 120),
	price float8,
	ratio real CHECK (ratio BETWEEN 0 AND 10),
	big bigint NOT NULL UNIQUE CHECK (big > 0 AND big <= 10000),
	order_date date NOT NULL,
	shipped date CHECK (shipped BETWEEN '2023-01-01' AND '2025-12-31'),
	is_member boolean NOT NULL,
	person int NOT NULL
);
INSERT INTO ex.sales
SELECT g, (ARRAY['north', 'south', 'east', 'west'])[g % 4 + 1], (ARRAY['Computers', 'Books', 'Games', 'Comics'])[g % 4 + 1],
       (g % 50) * 10.5, g % 7, g % 40, 1950 + g % 50, 18 + g % 60, (g % 20) * 2.5, (g % 10) / 4.0, g,
       date '2024-01-01' + g % 90, date '2024-01-01' + g % 90 + g % 5, g % 5 = 0, g % 300
FROM generate_series(1, 2000) g;
-- the same rows, one person (person) holding several: at most 2 groups and 5 rows each
CREATE TABLE ex.sales_u (LIKE ex.sales INCLUDING CONSTRAINTS);
INSERT INTO ex.sales_u SELECT * FROM ex.sales;
-- hostile rows: values outside the declared domains (NaN, infinities, 1e400,
-- subnormals, huge scales), where only a declaration holds them
CREATE TABLE ex.hostile (id int PRIMARY KEY, amount numeric CHECK (amount BETWEEN 0 AND 5000),
	discount numeric, price float8, qty int CHECK (qty BETWEEN 1 AND 10), day date NOT NULL, seen date);
INSERT INTO ex.hostile VALUES
	(1, 10, 'NaN', 'NaN', 1, 'infinity'), (2, 20, 1e400, 'Infinity', 2, '-infinity'),
	(3, 30, -1e400, '-Infinity', 3, '2024-01-01'), (4, 40, 1e-400, 1e308, 4, '4713-01-01 BC'),
	(5, 50, 1.0000000000000000000000000000000000000000000000000000000000000000000000001, -4.9e-324, 5, '2024-06-30'),
	(6, 4999.99999999999999999999, -0.0, -0.0, 10, '294276-12-31'),
	(7, 0, 99.9999999999999999999999, 1e-320, 7, '2024-02-29');
CREATE TABLE ex.regions (region text PRIMARY KEY, label text NOT NULL, weight int CHECK (weight BETWEEN 1 AND 10));
INSERT INTO ex.regions VALUES ('north', 'North', 2), ('south', 'South', 3), ('east', 'East', 1);
-- a DBA's views (a semantic layer)
CREATE VIEW ex.recent AS SELECT id, region, amount, quantity, age, order_date FROM ex.sales WHERE age >= 20;
CREATE VIEW ex.barrier WITH (security_barrier) AS SELECT * FROM ex.sales WHERE region <> 'west';
CREATE VIEW ex.invoker WITH (security_invoker) AS SELECT * FROM ex.sales;
CREATE VIEW ex.revenue AS SELECT region, sum(amount) AS revenue, count(*) AS orders FROM ex.sales GROUP BY region;
CREATE VIEW ex.labelled AS SELECT s.*, r.label FROM ex.sales s LEFT JOIN ex.regions r ON r.region = s.region;
CREATE VIEW ex.recent_big AS SELECT * FROM ex.recent WHERE amount > 100;
CREATE VIEW ex.checked AS SELECT * FROM ex.sales WHERE amount < 1000 WITH CHECK OPTION;
CREATE VIEW ex.units_v AS SELECT * FROM ex.sales_u;
CREATE VIEW ex.raw AS SELECT * FROM ex.sales;
CREATE VIEW ex.granted_none AS SELECT * FROM ex.sales;
GRANT SELECT ON ex.regions TO dp_ex_analyst;
GRANT SELECT ON ex.recent, ex.barrier, ex.invoker, ex.revenue, ex.labelled, ex.recent_big, ex.checked, ex.units_v,
	ex.raw TO dp_ex_analyst;
RESET ROLE;
SELECT dp_pg.protect('ex.sales');
SELECT dp_pg.protect('ex.sales_u', 'person', 2, 5);
SELECT dp_pg.protect('ex.hostile');
SELECT dp_pg.set_public_keys('ex.sales', 'region', ARRAY['north', 'south', 'east', 'west']);
SELECT dp_pg.set_public_keys('ex.sales_u', 'region', ARRAY['north', 'south', 'east', 'west']);
SELECT dp_pg.set_public_keys('ex.sales', 'order_date',
	ARRAY(SELECT d::date FROM generate_series(date '2023-01-01', date '2024-12-31', interval '1 day') d));
SELECT dp_pg.set_public_keys('ex.sales_u', 'order_date',
	ARRAY(SELECT d::date FROM generate_series(date '2023-01-01', date '2024-12-31', interval '1 day') d));
SELECT dp_pg.set_domain('ex.sales', 'discount', 0, 100);
SELECT dp_pg.set_domain('ex.sales', 'price', 0, 100);
SELECT dp_pg.set_domain('ex.sales_u', 'discount', 0, 100);
SELECT dp_pg.set_domain('ex.hostile', 'discount', 0, 100);
SELECT dp_pg.set_domain('ex.hostile', 'price', 0, 1000);
SELECT dp_pg.set_public_keys('ex.hostile', 'day', ARRAY['2024-01-01', '2024-02-29', '2024-06-30']::date[]);
SELECT dp_pg.set_budget('dp_ex_analyst', 1e9, 1e-3);
-- an analyst's view (refused) and a view of another role the analyst can act as
GRANT dp_ex_other TO dp_ex_analyst;
GRANT USAGE, CREATE ON SCHEMA ex_ana TO dp_ex_other;
SET ROLE dp_ex_other;
CREATE VIEW ex_ana.others AS SELECT * FROM ex.sales;
RESET ROLE;
SET ROLE dp_ex_analyst;
CREATE VIEW ex_ana.mine AS SELECT * FROM ex.sales;
RESET ROLE;
-- the analyst's charges, and the call sites of its last one (superuser bookkeeping)
CREATE FUNCTION dp_test.ex_charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger WHERE role = 'dp_ex_analyst'::regrole AND kind = 'charge'
$$;
CREATE FUNCTION dp_test.ex_sites() RETURNS TABLE (aggregate text, mechanism text, scale float8)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
	SELECT s->>'aggregate', s->>'mechanism', round((s->>'scale')::numeric, 6)::float8
	FROM (SELECT detail FROM dp_pg.ledger WHERE role = 'dp_ex_analyst'::regrole AND kind = 'charge'
	      ORDER BY id DESC LIMIT 1) l, jsonb_array_elements(l.detail->'sites') s
$$;
CREATE FUNCTION dp_test.ex_close(v numeric, truth numeric, tol numeric) RETURNS boolean
	LANGUAGE sql IMMUTABLE AS $$ SELECT abs(v - truth) <= tol $$;
-- a statement's outcome: its SQLSTATE and message, or 'ok'
CREATE FUNCTION dp_test.ex_try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- the truths, as the DBA computes them
CREATE TABLE dp_test.ex_truth AS
SELECT sum(amount * quantity) AS amount_qty, sum(amount * (1.0 - discount / 100.0)) AS net,
       avg(2026 - birth_year) AS years, var_pop(age) AS var_age, stddev_samp(amount) AS sd_amount,
       var_samp(quantity) AS var_qty, stddev_pop(price) AS sd_price, min(order_date) AS first_day,
       max(order_date) AS last_day, min(shipped) AS first_ship, max(shipped) AS last_ship,
       count(*) FILTER (WHERE category ~ '^Comp') AS comp, count(*) FILTER (WHERE category ~* 'co') AS co,
       sum(abs(age - 50)) AS abs_age, sum(CASE WHEN is_member THEN amount * 2 ELSE amount END) AS case_sum,
       count(*) FILTER (WHERE amount > 100) AS big_ones, sum(CAST(amount AS int)) AS cast_int,
       sum(amount) FILTER (WHERE region <> 'west') AS barrier_sum
FROM ex.sales;
CREATE TABLE dp_test.ex_region_truth AS SELECT region, sum(amount) AS revenue FROM ex.sales GROUP BY region;
GRANT USAGE ON SCHEMA dp_test TO dp_ex_analyst;
GRANT SELECT ON dp_test.ex_truth, dp_test.ex_region_truth TO dp_ex_analyst;
GRANT EXECUTE ON FUNCTION dp_test.ex_charges(), dp_test.ex_sites(), dp_test.ex_close(numeric, numeric, numeric),
	dp_test.ex_try(text) TO dp_ex_analyst;

SET ROLE dp_ex_analyst;
SET dp_pg.default_mechanism = 'laplace(epsilon=100)';
SET dp_pg.partition_mechanism = 'gaussian(epsilon=100, delta=1e-12)';
SELECT dp_test.ex_charges() AS charges_before \gset

-- arithmetic in sums and averages: bounds by interval arithmetic on the
-- domains (amount * quantity in [0, 495000]: scale 4950; amount * (1.0 -
-- discount / 100.0) in [0, 5000]: 50; 2026 - birth_year in [16, 126]: the
-- average's centred sum has half-width 55, scale 1.1)
SELECT dp_test.ex_close(sum(amount * quantity), (SELECT amount_qty FROM dp_test.ex_truth), 25 * 4950) AS amount_qty
FROM ex.sales;
SELECT * FROM dp_test.ex_sites();
SELECT dp_test.ex_close(SUM(amount * (1.0 - discount / 100.0)), (SELECT net FROM dp_test.ex_truth), 25 * 50) AS net
FROM ex.sales;
SELECT * FROM dp_test.ex_sites();
SELECT dp_test.ex_close(AVG(2026 - birth_year), (SELECT years FROM dp_test.ex_truth), 50 * 1.1 / 2000 + 1e-3) AS years
FROM ex.sales;
SELECT * FROM dp_test.ex_sites();
-- the result types are the plain aggregates'
SELECT pg_typeof(sum(amount * quantity)) AS numeric_sum, pg_typeof(sum(age * 2)) AS int_sum,
       pg_typeof(sum(price / 2)) AS float_sum, pg_typeof(avg(age - 18)) AS int_avg
FROM ex.sales;
-- casts, abs, CASE and COALESCE in arithmetic; a comparison as a number
SELECT dp_test.ex_close(sum(CAST(amount AS int)), (SELECT cast_int FROM dp_test.ex_truth), 25 * 50) AS cast_int,
       dp_test.ex_close(sum(abs(age - 50)), (SELECT abs_age FROM dp_test.ex_truth), 25 * 0.7) AS abs_age,
       dp_test.ex_close(sum(CASE WHEN is_member THEN amount * 2 ELSE amount END), (SELECT case_sum FROM dp_test.ex_truth), 25 * 100) AS case_sum,
       dp_test.ex_close(sum((amount > 100)::int), (SELECT big_ones FROM dp_test.ex_truth), 25 * 0.01) AS big_ones
FROM ex.sales;
SELECT * FROM dp_test.ex_sites();
-- arithmetic in WHERE and FILTER, and with a public table's column (its CHECK is a domain)
SELECT count(*) AS over_300 FROM ex.sales WHERE amount * quantity > 300 AND age % 7 = 0;
SELECT count(*) FILTER (WHERE price * 2 >= 40) AS dear, count(*) FILTER (WHERE age / 10 = 3) AS thirties FROM ex.sales;
SELECT count(*) AS weighted FROM ex.sales s JOIN ex.regions r ON r.region = s.region WHERE s.quantity * r.weight > 10;
-- one charge per answered query
SELECT dp_test.ex_charges() - :charges_before AS charges;

-- GROUP BY expressions.  Metabase's auto-binning and dbplyr's day of week:
-- the bins of age through partition selection (every bin holds 60+ rows);
-- the days of the week listed (1 .. 7, extract's fixed field); keys in
-- canonical form (10, not 10.0)
SELECT FLOOR((age - 0.0) / 10.0) * 10.0 AS age_bin, count(*) FROM ex.sales GROUP BY 1 ORDER BY 1;
SELECT * FROM dp_test.ex_sites();
SELECT EXTRACT('dow' FROM DATE(order_date) + 0) + 1.0 AS dow, count(*) FROM ex.sales GROUP BY 1 ORDER BY 1;
SELECT * FROM dp_test.ex_sites();
-- a comparison as a key (dbplyr's amount > 100.0 AS big): false and true listed
SELECT amount > 100.0 AS big, count(*) AS n FROM ex.sales GROUP BY 1 ORDER BY 1;
SELECT * FROM dp_test.ex_sites();
-- Malloy's pick: a CASE of constants, its results listed (and only them)
SELECT CASE WHEN amount < 50 THEN 'small' WHEN amount < 300 THEN 'medium' ELSE 'large' END AS size, count(*)
FROM ex.sales GROUP BY 1 ORDER BY 1;
SELECT * FROM dp_test.ex_sites();
SELECT CASE WHEN is_member THEN -0.0::float8 ELSE 0.0::float8 END AS zero, count(*) FROM ex.sales GROUP BY 1;
-- an expression of a column with public keys: computed on the keys
SELECT order_date - date '2024-01-01' AS day_number, count(*) FROM ex.sales
WHERE order_date BETWEEN date '2024-01-01' AND date '2024-01-03' GROUP BY 1 ORDER BY 1;
-- with a privacy unit: bounded per person, keys the same
SELECT amount > 100.0 AS big, count(*) >= 0 AS ok FROM ex.sales_u GROUP BY 1 ORDER BY 1;
SELECT dp_test.ex_charges() - :charges_before AS charges;

-- constant regular expressions where LIKE is accepted (compiled now)
SELECT dp_test.ex_close(count(*) FILTER (WHERE category ~ '^Comp'), (SELECT comp FROM dp_test.ex_truth), 0) AS comp,
       dp_test.ex_close(count(*) FILTER (WHERE category ~* 'co'), (SELECT co FROM dp_test.ex_truth), 0) AS co,
       dp_test.ex_close(count(*) FILTER (WHERE category !~ '^B'), 1500, 0) AS not_b,
       dp_test.ex_close(count(*) FILTER (WHERE category SIMILAR TO 'G%'), 500, 0) AS similar
FROM ex.sales;

-- min / max of dates: dp_quantile over the days of the public keys
-- (2023-2024, cells of 0.7 days) or of the CHECK domain (2023-2025, cells of
-- 1.1 days); the k-th smallest and largest (k = 100 of 2,000 rows, 22 or 23
-- per day: within 5 days of the extremes)
SELECT min(order_date) BETWEEN (SELECT first_day FROM dp_test.ex_truth) AND (SELECT first_day + 6 FROM dp_test.ex_truth) AS first_day,
       max(order_date) BETWEEN (SELECT last_day - 6 FROM dp_test.ex_truth) AND (SELECT last_day FROM dp_test.ex_truth) AS last_day,
       min(shipped) BETWEEN (SELECT first_ship FROM dp_test.ex_truth) AND (SELECT first_ship + 7 FROM dp_test.ex_truth) AS first_ship,
       pg_typeof(max(shipped)) AS type
FROM ex.sales;
SELECT * FROM dp_test.ex_sites();

-- STDDEV / VARIANCE: three moments (count, sum of x - c, sum of (x - c)^2),
-- a third of the mechanism each (scale 3 / 100, 3 h / 100, 3 h^2 / 100);
-- identical moments are one release.  Tolerances: with each moment within
-- 25 noise scales (probability < 4.2e-11), the variance moves by at most
-- 25 (b2 + S2 / N bn + 2 |mean - c| b1) / N to first order: 2.1 (age: h =
-- 60), 8443 (amount: h = 2500, so its standard deviation 151.6 by 31), 3.5
-- (quantity: h = 49.5), 2.3 (price: h = 50, its standard deviation 14.4 by
-- 0.08); the checks allow twice that
SELECT dp_test.ex_close(var_pop(age), (SELECT var_age FROM dp_test.ex_truth), 4.2) AS var_age,
       dp_test.ex_close(stddev_samp(amount), (SELECT sd_amount FROM dp_test.ex_truth), 62) AS sd_amount,
       dp_test.ex_close(var_samp(quantity), (SELECT var_qty FROM dp_test.ex_truth), 7) AS var_qty,
       dp_test.ex_close(stddev_pop(price)::numeric, (SELECT sd_price FROM dp_test.ex_truth)::numeric, 0.16) AS sd_price
FROM ex.sales;
SELECT * FROM dp_test.ex_sites() ORDER BY 1, 3;
SELECT stddev(age) > 0 AS sample, stddev_pop(age) > 0 AS pop, variance(age) > 0 AS var FROM ex.sales;
SELECT count(*) AS sites FROM dp_test.ex_sites();
SELECT pg_typeof(stddev(age)) AS int_arg, pg_typeof(stddev(price)) AS float_arg FROM ex.sales;
SELECT region, stddev(age) BETWEEN 15 AND 20 AS plausible FROM ex.sales GROUP BY region ORDER BY 1;
SELECT stddev(age) FILTER (WHERE is_member) BETWEEN 15 AND 20 AS filtered, var_pop(amount * quantity) >= 0 AS expr
FROM ex.sales;
SELECT var_pop(age) >= 0 AS units FROM ex.sales_u;

-- count(DISTINCT <column with public keys>): the keys present in a histogram over them
SELECT count(DISTINCT region) AS regions FROM ex.sales;
SELECT * FROM dp_test.ex_sites();
SELECT count(DISTINCT region) AS one FROM ex.sales WHERE region = 'north';
SELECT count(DISTINCT region) AS regions FROM ex.sales_u;
SELECT dp_test.ex_charges() - :charges_before AS charges;

-- filters narrow the listed keys of generalised keys: every day of 2023-2024
-- is public, so a day, week or month bucket lists the buckets the WHERE
-- leaves, not all 731 days (or 105 weeks, 24 months)
SELECT count(*) AS days FROM (SELECT CAST(order_date AS date), count(*) FROM ex.sales GROUP BY 1) s;
SELECT count(*) AS days FROM (SELECT CAST(order_date AS date), count(*) FROM ex.sales
                              WHERE order_date >= date '2024-03-01' GROUP BY 1) s;
SELECT count(*) AS weeks FROM (SELECT date_trunc('week', order_date), count(*) FROM ex.sales
                               WHERE order_date >= date '2024-03-01' AND order_date < date '2024-04-01' GROUP BY 1) s;
SELECT date_trunc('month', order_date)::date AS month, count(*) FROM ex.sales
WHERE order_date BETWEEN date '2024-01-15' AND date '2024-04-10' GROUP BY 1 ORDER BY 1;
SELECT count(*) AS months FROM (SELECT date_trunc('month', order_date), count(*) FROM ex.sales
                                WHERE order_date IN (date '2023-05-01', date '2024-02-01') GROUP BY 1) s;
-- with another key, a privacy unit, a relative date (the public days end in 2024)
SELECT count(*) AS cells FROM (SELECT region, date_trunc('month', order_date), count(*) FROM ex.sales
                               WHERE order_date >= date '2024-02-01' AND region IN ('north', 'south') GROUP BY 1, 2) s;
SELECT count(*) AS unit_months FROM (SELECT date_trunc('month', order_date), count(*) FROM ex.sales_u
                                     WHERE order_date >= date '2024-11-01' GROUP BY 1) s;
SELECT count(*) AS none FROM (SELECT date_trunc('day', order_date), count(*) FROM ex.sales
                              WHERE order_date >= CURRENT_DATE + 3650 GROUP BY 1) s;
-- a bound parameter, in a generic plan too
PREPARE ex_weeks(date) AS SELECT count(*) AS weeks FROM (SELECT date_trunc('week', order_date), count(*)
	FROM ex.sales WHERE order_date >= $1 GROUP BY 1) s;
SET plan_cache_mode = force_generic_plan;
EXECUTE ex_weeks('2024-12-01');
EXECUTE ex_weeks('2024-06-01');
RESET plan_cache_mode;
SELECT dp_test.ex_charges() - :charges_before AS charges;

-- a DBA's views: judged as the query they expand to
SELECT region, count(*) FROM ex.recent GROUP BY region ORDER BY 1;
SELECT count(*) AS n, dp_test.ex_close(sum(amount), (SELECT barrier_sum FROM dp_test.ex_truth), 25 * 50) AS s FROM ex.barrier;
SELECT count(*) AS n FROM ex.invoker;
SELECT v.region, dp_test.ex_close(v.revenue, t.revenue, 25 * 50) AS revenue, orders
FROM ex.revenue v JOIN dp_test.ex_region_truth t ON t.region = v.region ORDER BY 1;
SELECT label, count(*) FROM ex.labelled GROUP BY label ORDER BY 1;
SELECT count(*) FILTER (WHERE amount > 100) = count(*) AS all_big FROM ex.recent_big;
SELECT count(*) AS n FROM ex.checked;
SELECT count(*) BETWEEN 1400 AND 1600 AS bounded FROM ex.units_v;
PREPARE ex_view AS SELECT count(*) AS n FROM ex.recent;
EXECUTE ex_view;
SELECT dp_test.ex_charges() - :charges_before AS charges;
-- refused, charging nothing: raw rows of a view, an analyst's view (or one
-- of a role the analyst can act as), a view without the privilege
SELECT dp_test.ex_try('SELECT * FROM ex.raw LIMIT 1') AS raw;
SELECT dp_test.ex_try('SELECT region FROM ex.recent') AS raw_column;
SELECT dp_test.ex_try('SELECT count(*) FROM ex_ana.mine') AS mine;
SELECT dp_test.ex_try('SELECT count(*) FROM ex_ana.others') AS others;
SELECT dp_test.ex_try('SELECT count(*) FROM ex.granted_none') AS no_privilege;
SELECT dp_test.ex_charges() - :charges_before AS charges;
RESET ROLE;
-- a revoked privilege reaches the prepared statement (the plan depends on the view)
REVOKE SELECT ON ex.recent FROM dp_ex_analyst;
SET ROLE dp_ex_analyst;
EXECUTE ex_view;
SELECT dp_test.ex_charges() - :charges_before AS charges;

-- totalness: rows outside the declared domains (NaN, infinities, 1e400,
-- subnormals, huge scales, far dates) are read through the domain; nothing
-- fails, each query is charged once
SELECT dp_test.ex_charges() AS charges_before \gset
SELECT sum(discount * qty) IS NOT NULL AS a, sum(price * price) IS NOT NULL AS b, sum(discount / qty) IS NOT NULL AS c,
       avg(price / 3.0) IS NOT NULL AS d, sum(amount * discount * 1.5) IS NOT NULL AS e,
       count(*) FILTER (WHERE price * 2 > 1999) IS NOT NULL AS f, sum(CAST(discount AS int)) IS NOT NULL AS g,
       sum(discount::numeric(6, 2)) IS NOT NULL AS h, stddev(price) >= 0 AS i,
       min(day) BETWEEN date '2024-01-01' AND date '2024-06-30' AS j, sum(day - date '2024-01-01') IS NOT NULL AS k
FROM ex.hostile;
SELECT price * -1.0 AS key, count(*) >= 0 AS ok FROM ex.hostile GROUP BY 1 HAVING false;
SELECT discount + 0.000 AS key, count(*) >= 0 AS ok FROM ex.hostile GROUP BY 1 HAVING false;
-- a float product or quotient nearer to zero than a double holds is 0 (dp_pg's total operators)
SELECT sum(price * 1e-300) IS NOT NULL AS a, sum(price / 1e300) IS NOT NULL AS b,
       sum(price * price * price * 1e-300 * 1e-300) IS NOT NULL AS c
FROM ex.hostile;
SELECT dp_test.ex_charges() - :charges_before AS charges;

-- refused (42501) while planning, charging nothing
SELECT dp_test.ex_charges() AS charges_before \gset
SELECT dp_test.ex_try(q) AS result, q AS statement FROM unnest(ARRAY[
	-- no domain, unbounded or non-numeric operands
	$q$SELECT sum(person * 2) FROM ex.sales$q$,
	$q$SELECT count(*) FROM ex.sales WHERE length(category) * 3 > 10$q$,
	$q$SELECT count(*) FROM ex.sales WHERE category || 'x' = 'Booksx'$q$,
	-- overflow, division by a range holding zero, a cast that does not fit
	$q$SELECT sum(age * 2147483647) FROM ex.sales$q$,
	$q$SELECT sum(big * big * big * big * big) FROM ex.sales$q$,
	$q$SELECT sum(amount / quantity) FROM ex.sales$q$,
	$q$SELECT count(*) FROM ex.sales WHERE age % (age - 18) = 0$q$,
	$q$SELECT sum(CAST(amount * 10 AS smallint)) FROM ex.sales$q$,
	$q$SELECT sum(amount::numeric(4, 1)) FROM ex.sales$q$,
	$q$SELECT count(*) FROM ex.sales WHERE shipped - date 'infinity' > 2$q$,
	$q$SELECT sum(age * 1e300 * 1e300) FROM ex.sales$q$,
	-- constants only as literals: parameters and stable functions are not known while planning
	$q$SELECT count(*) FROM ex.sales WHERE shipped - CURRENT_DATE > 0$q$,
	$q$SELECT count(*) FROM ex.sales WHERE age * extract(day FROM now()) > 30$q$,
	$q$SELECT count(*) FROM ex.sales WHERE age + NULLIF(1, 1) > 30 AND age::float8 * 'NaN' > 1$q$,
	-- other functions in arithmetic, CASE with a test expression
	$q$SELECT sum(sqrt(age)) FROM ex.sales$q$,
	$q$SELECT sum(power(age, 2)) FROM ex.sales$q$,
	$q$SELECT sum(CASE age WHEN 30 THEN 1 ELSE 0 END * 2) FROM ex.sales$q$,
	$q$SELECT sum(extract(timezone_hour FROM order_date) * 2) FROM ex.sales$q$,
	-- regular expressions: not constant, back-references, too long, invalid
	$q$SELECT count(*) FROM ex.sales WHERE category ~ region$q$,
	$q$SELECT count(*) FROM ex.sales WHERE category ~ '(o)\1'$q$,
	$q$SELECT count(*) FROM ex.sales WHERE category ~ repeat('a', 1001)$q$,
	$q$SELECT count(*) FROM ex.sales WHERE category ~ '(unclosed'$q$,
	-- aggregates without a domain, DISTINCT of columns without public keys
	$q$SELECT stddev(person) FROM ex.sales$q$,
	$q$SELECT count(DISTINCT category) FROM ex.sales$q$,
	$q$SELECT min(seen) FROM ex.hostile$q$,
	-- a one-to-one image of a unique column: every group a single row (unitkeys.c)
	$q$SELECT big + 1 AS k, count(*) FROM ex.sales GROUP BY 1$q$,
	$q$SELECT 10000 - big AS k, count(*) FROM ex.sales GROUP BY 1$q$
]) AS q;
PREPARE ex_param(int) AS SELECT count(*) FROM ex.sales WHERE age * $1 > 30;
EXECUTE ex_param(3);
SELECT dp_test.ex_charges() - :charges_before AS charges;
RESET ROLE;

-- dp_pg.domain_read: total, clamped, canonical
SELECT dp_pg.domain_read('NaN'::float8, 0, 10) IS NULL AS nan, dp_pg.domain_read('Infinity'::float8, 0, 10) AS inf,
       dp_pg.domain_read(1e-300::float8, 0, 10) AS tiny, dp_pg.domain_read(-0.0::float8, -1, 1)::text AS neg_zero,
       dp_pg.domain_read(1e400, 0, 100) AS big, dp_pg.domain_read(12.50000, 0, 100) AS scale,
       dp_pg.domain_key_read(12.50000, 0, 100) AS canonical, dp_pg.domain_read(1.23456789012345678901, 0, 100) AS rounded,
       dp_pg.domain_read(1e-20, 0, 100) AS small, dp_pg.domain_read('NaN'::numeric, 0, 100) IS NULL AS num_nan,
       dp_pg.domain_read(date 'infinity', date '2024-01-01', date '2024-12-31') AS date_inf,
       dp_pg.domain_read(500, 0, 120) AS int_clamped, dp_pg.domain_read(NULL::int, 0, 120) IS NULL AS null;
-- the post-processing functions
SELECT dp_pg.variance_from_moments(10, 0, 40, 5, false, false) AS pop,
       dp_pg.variance_from_moments(10, 0, 40, 5, true, true)::numeric(10, 6) AS sd_sample,
       dp_pg.variance_from_moments(-3, 1e6, -5, 5, false, false) AS clamped,
       dp_pg.present_keys('{"a": 100, "b": 0, "c": 2}', 'laplace(epsilon=1)', 1, 1) AS present;
SELECT dp_test.ex_try($q$SELECT dp_pg.present_keys('[1, 2]', 'laplace(epsilon=1)', 1, 1)$q$) AS not_histogram,
       dp_test.ex_try($q$SELECT dp_pg.variance_from_moments(1, 0, 0, -1, false, false)$q$) AS bad_width;

-- clean up
DEALLOCATE ALL;
SELECT dp_pg.drop_budget('dp_ex_analyst');
SELECT dp_pg.unprotect('ex.sales');
SELECT dp_pg.unprotect('ex.sales_u');
SELECT dp_pg.unprotect('ex.hostile');
DROP SCHEMA ex_ana CASCADE;
DROP SCHEMA ex CASCADE;
DROP TABLE dp_test.ex_truth, dp_test.ex_region_truth;
DROP FUNCTION dp_test.ex_charges(), dp_test.ex_sites(), dp_test.ex_close(numeric, numeric, numeric), dp_test.ex_try(text);
-- the roles of this file, their budgets and ledger rows
\set forget 'dp_ex_analyst dp_ex_owner dp_ex_other'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
