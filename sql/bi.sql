--
-- The aggregates BI tools write: an analyst's count(*), count(col), count(1),
-- sum(col), avg(col) and count(DISTINCT <privacy unit>) on a protected table
-- are planned as dp aggregates with the role's default mechanism, sums and
-- averages bounded by the column's value domain (CHECK constraints, and
-- dp_pg.set_domain); results keep the plain aggregates' types.
--
-- What each query became is read exactly from its ledger row (the call
-- sites: aggregate, mechanism, noise scale = bound / epsilon).  Noisy
-- answers are checked by properties: the analyst's default mechanism is
-- laplace(epsilon=100), so a count's noise (integer Laplace, scale 0.01) is 0
-- except with probability < 1e-40, and a sum's (scale b = max(|lower|,
-- |upper|) / 100) stays within 25 b except with probability e^-25 < 1.4e-11;
-- an average (dp_avg splits epsilon between a sum and a count) is checked
-- within 50 b / n + 1e-3 of the truth (probability < 3e-11).  Fewer than 40
-- such checks: the file fails by chance with probability < 1.2e-9.
--
-- Truths (g = 1..2000): region = north/south/east/west for g % 4 = 0..3 (500
-- each); amount numeric = (g % 50) * 10.5 (sum 514500); age int4 = 18 + g % 60
-- (sum 94620); qty int2 = g % 7 (sum 6000); big int8 = g (sum 2001000);
-- ratio float4 = (g % 10) / 4 (sum 2250); score float8 = g % 7 (no CHECK;
-- sum 6000); person_id = g % 300 (300 persons, each with 6 or 7 rows, all
-- in one region: 75 per region).
--
CREATE ROLE dp_bi_owner;
CREATE ROLE dp_bi_analyst;
CREATE SCHEMA bi AUTHORIZATION dp_bi_owner;
GRANT USAGE ON SCHEMA bi TO PUBLIC;
SET ROLE dp_bi_owner;
CREATE TABLE bi.visits (
	id int PRIMARY KEY,
	region text NOT NULL,
	person_id int NOT NULL,
	amount numeric CHECK (amount >= 0 AND amount <= 5000),
	age int CHECK (age BETWEEN 0 AND 120),
	qty smallint CHECK (qty >= 0) CHECK (qty < 100),
	big bigint CHECK (big > 0 AND big <= 10000),
	ratio real CHECK (ratio BETWEEN 0 AND 10),
	score float8,
	visit_date date NOT NULL
);
INSERT INTO bi.visits
SELECT g, (ARRAY['north', 'south', 'east', 'west'])[g % 4 + 1], g % 300, (g % 50) * 10.5, 18 + g % 60,
       g % 7, g, (g % 10) / 4.0, g % 7, date '2024-01-01' + g % 90
FROM generate_series(1, 2000) g;
CREATE TABLE bi.people AS SELECT * FROM bi.visits;
RESET ROLE;
SELECT dp_pg.protect('bi.visits');
SELECT dp_pg.protect('bi.people', 'person_id', 1, 5);
SELECT dp_pg.set_public_keys('bi.visits', 'region', ARRAY['north', 'south', 'east', 'west']);
SELECT dp_pg.set_public_keys('bi.people', 'region', ARRAY['north', 'south', 'east', 'west']);
SELECT dp_pg.set_budget('dp_bi_analyst', 1e9, 1e-3);
-- the analyst's charges, and the call sites of its last one (superuser bookkeeping)
CREATE FUNCTION dp_test.bi_charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger WHERE role = 'dp_bi_analyst'::regrole AND kind = 'charge'
$$;
CREATE FUNCTION dp_test.bi_sites() RETURNS TABLE (aggregate text, mechanism text, scale float8)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
	SELECT s->>'aggregate', s->>'mechanism', round((s->>'scale')::numeric, 6)::float8
	FROM (SELECT detail FROM dp_pg.ledger WHERE role = 'dp_bi_analyst'::regrole AND kind = 'charge'
	      ORDER BY id DESC LIMIT 1) l, jsonb_array_elements(l.detail->'sites') s
$$;
CREATE FUNCTION dp_test.bi_close(v numeric, truth numeric, tol numeric) RETURNS boolean
	LANGUAGE sql IMMUTABLE AS $$ SELECT abs(v - truth) <= tol $$;
GRANT USAGE ON SCHEMA dp_test TO dp_bi_analyst;
GRANT EXECUTE ON FUNCTION dp_test.bi_charges(), dp_test.bi_sites(), dp_test.bi_close(numeric, numeric, numeric) TO dp_bi_analyst;

SET ROLE dp_bi_analyst;
SET dp_pg.default_mechanism = 'laplace(epsilon=100)';
SELECT dp_test.bi_charges() AS charges_before \gset

-- Metabase's question builder: count by a column, ordered, limited
SELECT "region", COUNT(*) AS "count" FROM "bi"."visits" GROUP BY "region" ORDER BY "region" ASC LIMIT 2000;
SELECT * FROM dp_test.bi_sites();
-- the counts, each charged with the default mechanism
SELECT count(*), count(amount), count(1), count(*) FILTER (WHERE age > 30) AS over_30 FROM bi.visits;
SELECT * FROM dp_test.bi_sites();
-- sums bounded by the CHECK constraints (amount [0, 5000], age [0, 120],
-- qty [0, 99], big [0, 10000], ratio [0, 10]: the scales say so)
SELECT dp_test.bi_close(sum(amount), 514500, 25 * 50) AS amount, dp_test.bi_close(sum(age), 94620, 25 * 1.2) AS age,
       dp_test.bi_close(sum(qty), 6000, 25 * 0.99) AS qty, dp_test.bi_close(sum(big), 2001000, 25 * 100) AS big,
       dp_test.bi_close(sum(ratio)::numeric, 2250, 25 * 0.1) AS ratio
FROM bi.visits;
SELECT * FROM dp_test.bi_sites();
SELECT dp_test.bi_close(avg(amount), 257.25, 50 * 50 / 2000.0 + 1e-3) AS amount,
       dp_test.bi_close(avg(age), 47.31, 50 * 1.2 / 2000.0 + 1e-3) AS age,
       dp_test.bi_close(avg(qty), 3, 50 * 0.99 / 2000.0 + 1e-3) AS qty,
       dp_test.bi_close(avg(big), 1000.5, 50 * 100 / 2000.0 + 1e-3) AS big,
       dp_test.bi_close(avg(ratio)::numeric, 1.125, 50 * 0.1 / 2000.0 + 1e-3) AS ratio
FROM bi.visits;
SELECT * FROM dp_test.bi_sites();
SELECT pg_typeof(count(*)) AS count, pg_typeof(sum(amount)) AS sum_numeric, pg_typeof(sum(age)) AS sum_int4,
       pg_typeof(sum(qty)) AS sum_int2, pg_typeof(sum(big)) AS sum_int8, pg_typeof(sum(ratio)) AS sum_float4,
       pg_typeof(avg(age)) AS avg_int4, pg_typeof(avg(ratio)) AS avg_float4, pg_typeof(avg(amount)) AS avg_numeric
FROM bi.visits;
-- Superset's shape: grouped, HAVING and ORDER BY on released values, a row limit
SELECT region, count(*) AS n FROM bi.visits WHERE visit_date >= date '2024-02-01'
GROUP BY region HAVING count(*) > 10 AND sum(amount) > 0 ORDER BY n DESC, region LIMIT 10000;
SELECT * FROM dp_test.bi_sites();
-- a prepared statement with a bound parameter (JDBC / psycopg2)
PREPARE bi_p(int) AS SELECT count(*), dp_test.bi_close(avg(age), ($1 + 78) / 2.0, 0.2) AS avg_age
	FROM bi.visits WHERE age > $1;
EXECUTE bi_p(48);
EXECUTE bi_p(68);
-- one charge per answered query: 8 so far (the prepared one twice)
SELECT dp_test.bi_charges() - :charges_before AS charges;
-- a prepared plan follows a change of the default mechanism
SET dp_pg.default_mechanism = 'laplace(epsilon=50)';
EXECUTE bi_p(48);
SELECT * FROM dp_test.bi_sites();
SET dp_pg.default_mechanism = 'laplace(epsilon=100)';

-- a numeric column with bounds bound as doubles (what drivers send for 0.0 and
-- 5000.0): converted by the total clamp, not refused
PREPARE bi_fb(float8, float8) AS SELECT dp_test.bi_close(dp_sum(amount, $1, $2, 'laplace(epsilon=100)')::numeric, 514500, 25 * 50) AS close
	FROM bi.visits;
EXECUTE bi_fb(0.0, 5000.0);
DEALLOCATE bi_fb;

-- relative dates and bound parameters in expressions: computed once before
-- the query runs (the dates below are all after the table's last visit, or
-- all before its first: the counts are 0 and 2000 whatever day this runs)
SELECT count(*) AS recent FROM bi.visits WHERE visit_date >= CURRENT_DATE - INTERVAL '30 days' AND visit_date > date '2025-01-01';
SELECT count(*) AS all_rows FROM bi.visits WHERE visit_date >= CAST((CAST(now() AS timestamp) + (INTERVAL '-100000 day')) AS date);
SELECT count(*) AS since FROM bi.visits WHERE visit_date < to_timestamp(1700000000)::date + 1000;
SET plan_cache_mode = force_generic_plan;
PREPARE bi_rel(int) AS SELECT count(*) AS n FROM bi.visits WHERE age > $1 + 10 AND visit_date >= now()::date - $1 * 10000;
EXECUTE bi_rel(38);
EXECUTE bi_rel(68);
PREPARE bi_date(text) AS SELECT count(*) FILTER (WHERE visit_date >= $1::date) AS n FROM bi.visits;
EXECUTE bi_date('2024-03-01');
RESET plan_cache_mode;
SELECT dp_test.bi_charges() AS charges_before \gset
-- a run-time constant that fails fails before the query runs, for every row alike: no charge
EXECUTE bi_date('not a date');
SELECT count(*) FROM bi.visits WHERE age > (CASE WHEN now() IS NOT NULL THEN 'x' END)::int;
SELECT dp_test.bi_charges() - :charges_before AS charges;
-- lower() / upper() of a column, a bound LIKE pattern (checked before the query runs)
SELECT count(*) AS lower_like FROM bi.visits WHERE lower(region) LIKE 'nor%';
SET plan_cache_mode = force_generic_plan;
PREPARE bi_like(text) AS SELECT count(*) AS n FROM bi.visits WHERE lower(region) LIKE lower($1);
EXECUTE bi_like('SO%');
SELECT dp_test.bi_charges() AS charges_before \gset
EXECUTE bi_like('so\');
SELECT dp_test.bi_charges() - :charges_before AS charges;
RESET plan_cache_mode;
DEALLOCATE bi_like;
DEALLOCATE bi_rel;
DEALLOCATE bi_date;

-- wrappers: an outer query over a dp query is post-processing of its released
-- rows (Metabase's "source", Superset's virtual_table, Tableau's custom SQL)
SELECT * FROM (SELECT "region", COUNT(*) AS "count" FROM "bi"."visits" GROUP BY "region") AS "source" ORDER BY 1 LIMIT 2000;
SELECT sum(n) AS total, count(*) AS groups FROM (SELECT region, count(*) AS n FROM bi.visits GROUP BY region) AS virtual_table LIMIT 10000;
SELECT region, n, sum(n) OVER (ORDER BY region) AS running
FROM (SELECT region, count(*) AS n FROM bi.visits GROUP BY region) s ORDER BY region;
SELECT "Custom SQL Query"."region", "Custom SQL Query".n > 0 AS positive
FROM (SELECT region, count(*) AS n FROM bi.visits GROUP BY region) "Custom SQL Query"
WHERE "Custom SQL Query".n > -1000 ORDER BY 1;
SELECT * FROM (SELECT * FROM (SELECT region, count(*) AS n FROM bi.visits GROUP BY region) a) b ORDER BY 1;
SELECT 'total' AS what, count(*) AS n FROM bi.visits UNION ALL SELECT 'none', 0 ORDER BY 1;
SELECT * FROM dp_test.bi_sites();
-- a subquery that only filters and projects the table (a dataset's SQL) is
-- flattened into the dp query around it
SELECT region, COUNT(*) AS count FROM (SELECT * FROM bi.visits WHERE age > 30) AS virtual_table
GROUP BY region ORDER BY region LIMIT 10000;
SELECT dp_test.bi_close(sum("Custom SQL Query"."amount"), 514500, 25 * 50) AS sum_close
FROM (SELECT region, amount FROM bi.visits ORDER BY id) "Custom SQL Query";
SELECT count(*) FROM (SELECT * FROM (SELECT id, age FROM bi.visits) a WHERE age > 30) b;
SELECT * FROM dp_test.bi_sites();
-- column probes: the columns and no row, nothing charged
SELECT dp_test.bi_charges() AS charges_before \gset
SELECT * FROM (SELECT region, count(*) AS n FROM bi.visits GROUP BY region) AS "source" LIMIT 0;
SELECT * FROM (SELECT region, count(*) AS n FROM bi.visits GROUP BY region) AS "Custom SQL Query" WHERE 1 <> 1;
SELECT * FROM bi.visits LIMIT 0;
SELECT * FROM bi.visits WHERE (1 = 0);
SELECT dp_test.bi_charges() - :charges_before AS charges;
-- (an aggregate without GROUP BY has its one row even over no rows: released, charged)
SELECT count(*) AS n FROM bi.visits WHERE 1 <> 1;
SELECT dp_test.bi_charges() - :charges_before AS charges;
-- still refused: raw rows through a wrapper, a LIMIT inside, a second read
SELECT * FROM (SELECT * FROM bi.visits) s;
SELECT count(*) FROM (SELECT * FROM bi.visits LIMIT 10) s;
SELECT count(*) FROM (SELECT person_id * 2 AS a FROM bi.visits) s WHERE a > 1;
SELECT s.n + t.n FROM (SELECT count(*) AS n FROM bi.visits) s, (SELECT count(*) AS n FROM bi.visits) t;
SELECT * FROM (SELECT region, count(*) AS n FROM bi.visits GROUP BY region) s,
	LATERAL (SELECT count(*) FROM bi.visits v WHERE v.region = s.region) x;
SELECT dp_test.bi_charges() - :charges_before AS charges;

-- WITH: a CTE that reads the protected table is inlined where it is used,
-- then judged like a FROM-subquery (a filter flattened, a dp query wrapped)
SELECT dp_test.bi_charges() AS charges_before \gset
WITH v AS (SELECT * FROM bi.visits WHERE amount > 100) SELECT region, count(*) FROM v GROUP BY region ORDER BY region;
WITH r AS (SELECT region, count(*) AS n FROM bi.visits GROUP BY region) SELECT * FROM r ORDER BY n DESC, region;
WITH a AS (SELECT * FROM bi.visits), b AS (SELECT region, age FROM a WHERE age < 30)
SELECT count(*) AS "count" FROM (SELECT * FROM b) AS virtual_table;
SELECT * FROM (WITH v AS MATERIALIZED (SELECT * FROM bi.visits) SELECT count(*) AS n FROM v) s;
WITH v AS (SELECT * FROM bi.visits) SELECT * FROM v WHERE 1 <> 1;
SELECT dp_test.bi_charges() - :charges_before AS charges;
-- refused, uncharged: a CTE read twice, raw rows, a LIMIT inside, a recursive WITH beside the table
WITH v AS (SELECT * FROM bi.visits) SELECT (SELECT count(*) FROM v) + (SELECT count(*) FROM v);
WITH v AS (SELECT * FROM bi.visits) SELECT a.n + b.n FROM (SELECT count(*) AS n FROM v) a, (SELECT count(*) AS n FROM v) b;
WITH v AS (SELECT region FROM bi.visits) SELECT * FROM v LIMIT 5;
WITH v AS (SELECT * FROM bi.visits LIMIT 10) SELECT count(*) FROM v;
WITH RECURSIVE n AS (SELECT 1 AS x UNION ALL SELECT x + 1 FROM n WHERE x < 3) SELECT count(*) FROM bi.visits, n;
SELECT dp_test.bi_charges() - :charges_before AS charges;

-- the LEFT JOIN to a dimension table on its unique key that BI tools write:
-- every visit once, with its label or NULL
RESET ROLE;
CREATE TABLE bi.dim (region text PRIMARY KEY, label text);
INSERT INTO bi.dim VALUES ('north', 'N'), ('south', 'S');
GRANT SELECT ON bi.dim TO dp_bi_analyst;
SET ROLE dp_bi_analyst;
SELECT "dim"."label" AS "label", COUNT(*) AS "count" FROM "bi"."visits"
LEFT JOIN "bi"."dim" "dim" ON "bi"."visits"."region" = "dim"."region"
GROUP BY "dim"."label" ORDER BY "dim"."label" ASC NULLS LAST;
SELECT count(*) FROM bi.dim d RIGHT JOIN bi.visits v ON d.region = v.region;
-- a dataset that joins the dimension table (Superset's virtual dataset with a
-- join), aggregated outside: flattened, then checked like the join written directly
SELECT label AS label, COUNT(*) AS count
FROM (SELECT v.*, d.label FROM bi.visits v LEFT JOIN bi.dim d ON d.region = v.region) AS virtual_table
GROUP BY label ORDER BY count DESC, label NULLS LAST LIMIT 10000;
SELECT count(*) FROM (SELECT v.age FROM bi.visits v JOIN bi.dim d ON d.label = v.region) AS virtual_table;
SELECT count(*) FROM (SELECT v.age, d.label FROM bi.visits v JOIN bi.dim d ON d.region = v.region LIMIT 5) AS virtual_table;
-- refused: the public table preserved, a full join, a LEFT JOIN not on its key
SELECT count(*) FROM bi.dim d LEFT JOIN bi.visits v ON d.region = v.region;
SELECT count(*) FROM bi.visits v FULL JOIN bi.dim d ON d.region = v.region;
SELECT count(*) FROM bi.visits v LEFT JOIN bi.dim d ON d.label = v.region;

-- count(DISTINCT <privacy unit>): persons, each once per group
SELECT count(DISTINCT person_id) AS persons FROM bi.people;
SELECT * FROM dp_test.bi_sites();
SELECT region, count(DISTINCT person_id) AS persons FROM bi.people GROUP BY region ORDER BY region;
-- each person once, however many rows (5 rows per person at most for count(*))
SELECT count(DISTINCT person_id) FILTER (WHERE region = 'north') AS north_persons, count(*) AS rows_bounded FROM bi.people;
SELECT * FROM dp_test.bi_sites();

-- generalising GROUP BY keys and predicates (date_trunc, extract, width_bucket,
-- floor, casts to date): released through partition selection, or listed
-- completely when their values are public (width_bucket's buckets, the
-- fixed fields of extract, an expression of a column with public keys).
-- Visit dates: 2024-01-01 + g % 90 (Jan 1 to Mar 30); every group here
-- holds at least 130 rows, and the partition selection's noise (Gaussian,
-- sigma < 0.1) cannot drop it (its threshold is below 2).
SET dp_pg.partition_mechanism = 'gaussian(epsilon=100, delta=1e-12)';
SELECT dp_test.bi_charges() AS charges_before \gset
-- Metabase: count by month of a date column
SELECT date_trunc('month', "bi"."visits"."visit_date") AS "visit_date", count(*) AS "count"
FROM "bi"."visits" GROUP BY date_trunc('month', "bi"."visits"."visit_date")
ORDER BY date_trunc('month', "bi"."visits"."visit_date") ASC;
-- Metabase: weeks starting on Sunday (a shift by a day each way)
SELECT count(*) AS weeks FROM (
	SELECT (date_trunc('week', ("bi"."visits"."visit_date" + INTERVAL '1 day')) + INTERVAL '-1 day') AS "visit_date", count(*) AS "count"
	FROM "bi"."visits" GROUP BY 1) s;
-- Tableau: a cast to timestamp first; Superset: __timestamp
SELECT DATE_TRUNC( 'MONTH', CAST("visits"."visit_date" AS TIMESTAMP) ) AS "tmn:visit_date:ok", SUM("visits"."age") IS NOT NULL AS "sum:age:ok"
FROM "bi"."visits" "visits" GROUP BY 1 ORDER BY 1;
SELECT DATE_TRUNC('month', visit_date) AS __timestamp, COUNT(*) AS count FROM bi.visits
GROUP BY DATE_TRUNC('month', visit_date) ORDER BY count DESC LIMIT 10000;
-- Metabase with a report time zone: AT TIME ZONE a constant zone
SELECT date_trunc('month', (CAST(visit_date AS timestamp) AT TIME ZONE 'UTC')) AS m, count(*) > 0 AS seen
FROM bi.visits GROUP BY 1 ORDER BY 1;
-- extract of a fixed field: every value listed (no partition selection)
SELECT extract(month FROM visit_date) AS month, count(*) FROM bi.visits GROUP BY 1 ORDER BY 1;
SELECT CAST(EXTRACT(DOW FROM "visits"."visit_date") AS BIGINT) AS "dow", COUNT(*) AS "cnt" FROM "bi"."visits" "visits" GROUP BY 1 ORDER BY 1;
SELECT CAST(EXTRACT(YEAR FROM visit_date) AS int) AS year, count(*) FROM bi.visits GROUP BY 1;
-- width_bucket: buckets 0 .. 5 listed; floor / round through partition selection
SELECT width_bucket(amount, 0, 500, 4) AS bucket, count(*) FROM bi.visits GROUP BY 1 ORDER BY 1;
SELECT floor(ratio) AS r, count(*) FROM bi.visits GROUP BY 1 ORDER BY 1;
SELECT round(amount, -2) AS hundreds, count(*) FROM bi.visits GROUP BY 1 ORDER BY 1;
-- in a WHERE clause and a FILTER, like a column
SELECT count(*) FROM bi.visits WHERE extract(month FROM visit_date) = 2;
SELECT count(*) FILTER (WHERE CAST(visit_date AS timestamp) < date_trunc('month', timestamp '2024-01-20')) AS none,
       count(*) FILTER (WHERE visit_date + 1 = date '2024-01-02') AS first_day FROM bi.visits;
-- what BI tools write around the aggregates: SUM of CASE over constants and a
-- column (Metabase's CountIf, SumIf, Share: bounded by the hull of the
-- branches), SUM(1), AVG of a widening cast (Tableau), SELECT DISTINCT
-- (Superset's filter values: a GROUP BY), text filters (Tableau's CONTAINS,
-- STARTSWITH, ENDSWITH)
SELECT SUM(CASE WHEN region = 'north' THEN 1 ELSE 0 END) AS count_where,
       dp_test.bi_close(SUM(CASE WHEN region = 'north' THEN amount ELSE 0.0 END), 126000, 25 * 50) AS sum_where,
       dp_test.bi_close(SUM(CASE WHEN region = 'north' THEN 1 ELSE 0.0 END) / COUNT(*), 0.25, 0.001) AS share,
       SUM(1) AS number_of_records FROM bi.visits;
SELECT * FROM dp_test.bi_sites();
SELECT region, dp_test.bi_close(AVG(CAST(age AS DOUBLE PRECISION))::numeric, 46.8, 50 * 1.2 / 500) AS avg_age
FROM bi.visits WHERE region = 'south' GROUP BY 1;
SELECT * FROM dp_test.bi_sites();
SELECT DISTINCT region AS column_values FROM bi.visits LIMIT 10000 OFFSET 0;
SELECT COUNT(1) AS contains FROM bi.visits WHERE STRPOS(CAST(LOWER(CAST(region AS TEXT)) AS TEXT), CAST('or' AS TEXT)) > 0;
SELECT COUNT(1) AS starts FROM bi.visits WHERE LEFT(CAST(region AS TEXT), LENGTH('nor')) = 'nor';
SELECT COUNT(1) AS ends FROM bi.visits WHERE RIGHT(region, LENGTH('th')) = 'th' AND starts_with(region, 's');
SELECT left(region, 1) AS initial, count(*) FROM bi.visits GROUP BY 1 ORDER BY 1;
-- bound parameters beside a generalised key, in a generic plan
PREPARE bi_months(date) AS SELECT date_trunc('month', visit_date) AS m, count(*) FROM bi.visits
	WHERE visit_date >= $1 GROUP BY 1 ORDER BY 1;
SET plan_cache_mode = force_generic_plan;
EXECUTE bi_months('2024-02-01');
EXECUTE bi_months('2024-03-01');
RESET plan_cache_mode;
-- bound parameters as units, fields, lengths and patterns: checked on the key
-- window's edges before the query runs (an invalid one fails then, uncharged)
PREPARE bi_grain(text) AS SELECT date_trunc($1, visit_date)::date AS d, count(*) FROM bi.visits GROUP BY 1 ORDER BY 1;
EXECUTE bi_grain('quarter');
PREPARE bi_text(text, int) AS SELECT count(*) AS n FROM bi.visits WHERE strpos(region, $1) > 0 AND left(region, $2) = 'no';
EXECUTE bi_text('or', 2);
-- persons per month on the unit table: each person in one month (max_groups 1)
SELECT count(*) AS months, sum(persons) AS persons FROM (
	SELECT extract(month FROM visit_date) AS m, count(DISTINCT person_id) AS persons FROM bi.people GROUP BY 1) s;
SELECT width_bucket(age, 0, 120, 2) AS b, count(*) AS rows_bounded FROM bi.people GROUP BY 1 ORDER BY 1;
SELECT dp_test.bi_charges() - :charges_before AS charges;
RESET dp_pg.partition_mechanism;
-- refused or failing while planning, charging nothing: an unknown unit, a
-- shift beyond 100 years, a narrowing cast of epoch, arithmetic, two
-- columns, a column as unit, a bucket range of width zero or to infinity
SELECT dp_test.bi_charges() AS charges_before \gset
SELECT date_trunc('fortnight', visit_date) AS f, count(*) FROM bi.visits GROUP BY 1;
SELECT visit_date + 40000 AS d, count(*) FROM bi.visits GROUP BY 1;
SELECT date_trunc('year', visit_date - interval '1000 years') AS y, count(*) FROM bi.visits GROUP BY 1;
SELECT CAST(extract(epoch FROM visit_date) AS int) AS e, count(*) FROM bi.visits GROUP BY 1;
SELECT floor(person_id * 2) AS a, count(*) FROM bi.visits GROUP BY 1;
SELECT floor(person_id / 2.0)::int AS a, count(*) FROM bi.visits GROUP BY 1;
SELECT extract(month FROM visit_date) + person_id AS x, count(*) FROM bi.visits GROUP BY 1;
SELECT date_trunc(region, visit_date) AS x, count(*) FROM bi.visits GROUP BY 1;
SELECT count(*) FROM bi.visits WHERE visit_date + age > date '2024-02-01';
SELECT width_bucket(age, 10, 10, 3) AS b, count(*) FROM bi.visits GROUP BY 1;
SELECT width_bucket(score, 0, 'Infinity', 3) AS b, count(*) FROM bi.visits GROUP BY 1;
SELECT width_bucket(score, 0, 1, 0) AS b, count(*) FROM bi.visits GROUP BY 1;
SELECT date_trunc('month', visit_date, 'No/Such_Zone') AS m, count(*) FROM bi.visits GROUP BY 1;
-- a zone abbreviation depends on timezone_abbreviations, which may change before a plan runs
SET timezone_abbreviations = 'Australia';
SELECT count(*) FROM bi.visits WHERE (CAST(visit_date AS timestamp) AT TIME ZONE 'SAT') > '1000-01-01';
RESET timezone_abbreviations;
SELECT to_char(visit_date, 'YYYY-MM') AS m, count(*) FROM bi.visits GROUP BY 1;
EXECUTE bi_grain('fortnight');
PREPARE bi_sub(int) AS SELECT count(*) FROM bi.visits WHERE substr(region, 1, $1) = 'n';
EXECUTE bi_sub(-1);
PREPARE bi_zone(text) AS SELECT count(*) FROM bi.visits WHERE (CAST(visit_date AS timestamp) AT TIME ZONE $1) > '2000-01-01';
EXECUTE bi_zone('UTC');
SELECT count(*) FROM bi.visits WHERE substr(region, 1, -1) = '';
SELECT SUM(CASE WHEN region = 'north' THEN score ELSE 0 END) FROM bi.visits;
SELECT SUM(CASE WHEN region = 'north' THEN person_id * 2 ELSE 0 END) FROM bi.visits;
SELECT SUM(CASE WHEN region = 'north' THEN 'Infinity'::float8 ELSE 0 END) FROM bi.visits;
SELECT DISTINCT ON (region) region, age FROM bi.visits ORDER BY region, age;
SELECT dp_test.bi_charges() - :charges_before AS charges;
RESET ROLE;
-- the key window: far dates and times become NULL, NaN NULL, huge numerics
-- infinite, tiny ones 0; infinities and everything in between unchanged
SELECT dp_pg.key_window(date '4713-11-24 BC') AS d_min, dp_pg.key_window(date '5874897-12-31') AS d_max,
       dp_pg.key_window(date '0500-01-01 BC') AS d_lo, dp_pg.key_window(date '200000-01-01') AS d_hi,
       dp_pg.key_window(date 'infinity') AS d_inf, dp_pg.key_window(timestamp '294276-12-31') AS t_max,
       dp_pg.key_window(timestamptz '-infinity') AS tz_inf, dp_pg.key_window('NaN'::float8) AS f_nan,
       dp_pg.key_window('NaN'::real) AS r_nan, dp_pg.key_window(1e400) AS n_big, dp_pg.key_window(-1e-400) AS n_tiny,
       dp_pg.key_window('NaN'::numeric) AS n_nan, dp_pg.key_window(12.5) AS n,
       dp_pg.key_finite('Infinity'::numeric) AS n_fin, dp_pg.key_finite('-Infinity'::float8) AS f_fin;
SET ROLE dp_bi_analyst;

-- refused, charging nothing
SELECT dp_test.bi_charges() AS charges_before \gset
SELECT sum(score) FROM bi.visits;
SELECT avg(score) FROM bi.visits;
SELECT sum(person_id * 2) FROM bi.visits;
SELECT count(DISTINCT age) FROM bi.visits;
SELECT count(DISTINCT person_id) FROM bi.visits;
SELECT count(DISTINCT age) FROM bi.people;
SELECT sum(DISTINCT age) FROM bi.visits;
SELECT min(region), max(region) FROM bi.visits;
SELECT string_agg(region, ',') FROM bi.visits;
SELECT count(*) FROM bi.visits WHERE amount / 0 > 1;
SELECT dp_pg.set_domain('bi.visits', 'score', 0, 10);
-- the clamp a translated avg of a numeric column uses never fails
SELECT dp_pg.clamp_float8(1e400, 0, 1) AS big, dp_pg.clamp_float8(1e-400, 0, 1) AS tiny,
       dp_pg.clamp_float8('NaN', 0, 1) AS nan, dp_pg.clamp_float8(-5, 0, 1) AS neg, dp_pg.clamp_float8(0.5, 1, 0) AS unordered;
SELECT dp_test.bi_charges() - :charges_before AS charges;
RESET ROLE;

-- a DBA declares the domain of score, and narrows amount's: the bounds are
-- the intersection with the CHECK constraints; cached plans see the change
SET ROLE dp_bi_analyst;
SET dp_pg.default_mechanism = 'laplace(epsilon=100)';
PREPARE bi_amount AS SELECT sum(amount) IS NOT NULL AS answered FROM bi.visits;
EXECUTE bi_amount;
SELECT * FROM dp_test.bi_sites();
RESET ROLE;
SELECT dp_pg.set_domain('bi.visits', 'score', 0, 10);
SELECT dp_pg.set_domain('bi.visits', 'amount', 0, 100);
SELECT dp_pg.set_domain('bi.visits', 'age', -1e9, 1e9);
SELECT relid::regclass, attname, lower, upper FROM dp_pg.column_domains ORDER BY attname;
SET ROLE dp_bi_analyst;
-- amount now in [0, 100]: scale 1
EXECUTE bi_amount;
SELECT * FROM dp_test.bi_sites();
SELECT dp_test.bi_close(sum(score)::numeric, 6000, 25 * 0.1) AS sum_score, round(sum(age)) IS NOT NULL AS sum_age FROM bi.visits;
SELECT * FROM dp_test.bi_sites();
RESET ROLE;
-- bad declarations: errors, nothing changed
SELECT dp_pg.set_domain('bi.visits', 'score', 10, 0);
SELECT dp_pg.set_domain('bi.visits', 'score', 0, 'Infinity');
SELECT dp_pg.set_domain('bi.visits', 'score', 'NaN', 1);
SELECT dp_pg.set_domain('bi.visits', 'score', NULL, 1);
SELECT dp_pg.set_domain('bi.visits', 'nosuch', 0, 1);
SELECT dp_pg.set_domain('bi.visits', 'region', 0, 1);
SELECT dp_pg.set_domain('dp_test.bi_charges', 'x', 0, 1);
SELECT count(*) FROM dp_pg.column_domains;
-- NULL, NULL removes a declaration
SELECT dp_pg.set_domain('bi.visits', 'score', NULL, NULL);
SELECT attname FROM dp_pg.column_domains ORDER BY attname;

-- a public domain for generalised keys: the DBA declares every day of
-- 2023-11-01 .. 2024-06-30 public for visit_date; months, years and weeks
-- of it are then listed completely (empty ones too), computed on the
-- declared days, with no partition selection
SELECT dp_pg.set_public_keys('bi.visits', 'visit_date',
	ARRAY(SELECT d::date FROM generate_series(date '2023-11-01', date '2024-06-30', interval '1 day') d));
SET ROLE dp_bi_analyst;
SET dp_pg.default_mechanism = 'laplace(epsilon=100)';
SELECT dp_test.bi_charges() AS charges_before \gset
SELECT date_trunc('month', visit_date)::date AS month, count(*) FROM bi.visits GROUP BY 1 ORDER BY 1;
SELECT * FROM dp_test.bi_sites();
SELECT CAST(EXTRACT(YEAR FROM visit_date) AS int) AS year, count(*) FROM bi.visits GROUP BY 1 ORDER BY 1;
SELECT count(*) AS weeks FROM (SELECT date_trunc('week', visit_date) AS w, count(*) FROM bi.visits GROUP BY 1) s;
SELECT dp_test.bi_charges() - :charges_before AS charges;
RESET ROLE;

-- superusers' plain aggregates stay plain (exact)
SELECT count(*), sum(amount), avg(age)::numeric(10, 4), count(DISTINCT region) FROM bi.visits;

-- clean up
DEALLOCATE ALL;
SELECT dp_pg.drop_budget('dp_bi_analyst');
SELECT dp_pg.unprotect('bi.visits');
SELECT dp_pg.unprotect('bi.people');
DROP SCHEMA bi CASCADE;
DROP FUNCTION dp_test.bi_charges(), dp_test.bi_sites(), dp_test.bi_close(numeric, numeric, numeric);
-- the roles of this file, their budgets and ledger rows
\set forget 'dp_bi_analyst dp_bi_owner'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
