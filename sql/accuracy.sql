--
-- Accuracy: what a released value estimates and what its error bar covers.
--
-- 1. Unbiased unit-bounded sums (exact pre-noise values, dp_pg.debug_noiseless,
--    superuser sessions of the test build): each unit's sum in a cell is
--    clamped to [k lo, k hi], k = least(its values, r), so a unit with few
--    values is never raised to r lo.  The issue's example (quantity 1..20,
--    most customers one order of quantity 1, r = 10): 125000, where the
--    rule [r lo, r hi] gave 305000.  Every path that bounds per unit: no
--    cells, dp_pg.unit_cells, the window form, a parallel plan, a numeric
--    sum, an int8 sum, a float8 sum, dp_avg, the analyst's translated SUM
--    and AVG, a trusted role's dp_pg.privacy_unit, a domain below 0; NULL
--    values add nothing (they added lo on the integer path).  One unit still
--    moves a sum by at most r max(|lo|, |hi|).
-- 2. dp_sum(x, lower, upper) and dp_avg(x, lower, upper) with the default
--    mechanism; the hint of dp_count(*, mechanism).
-- 3. Error bars (dp_pg.last_releases, dp_pg.error_bars): the note of each
--    release, an average's own interval per released value, a quantile's
--    rank interval, no NaN; kept with a cached answer.
-- 4. The bounds helpers (dp_pg.unit_profile, dp_pg.bound_choices) on a
--    skewed table (the DBA's guide's worked example); analysts are refused,
--    uncharged.
-- 5. Words: protect() warns only of privileges it revoked; DP001 says what
--    to do, and names the delta/2 rule when a charge is accounted above its
--    epsilon.
-- Nothing here prints a noisy value.  The noisy checks (section 3, with noise)
-- are stated with their failure probability; the file fails by chance with
-- probability below 1e-9.  The statistical tests of these claims are in
-- test/t/085_accuracy.pl and test/stat/test_quantile.c.
--
SET search_path = acc, public;
CREATE SCHEMA acc;
CREATE ROLE acc_analyst;
CREATE ROLE acc_trusted;
GRANT USAGE ON SCHEMA acc TO acc_analyst, acc_trusted;
SELECT dp_pg.set_budget('acc_analyst', 10000, 1e-3) IS NOT NULL AS budget;

-- Every ledger row (any role, any kind): refusals must not add any.
CREATE FUNCTION acc.ledger_rows() RETURNS bigint LANGUAGE sql SECURITY DEFINER
	SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger_entries
$$;
GRANT EXECUTE ON FUNCTION acc.ledger_rows() TO acc_analyst;
-- Run a statement; "SQLSTATE: message" (or "no error"), and " [LEDGER GREW]"
-- if a ledger row was added meanwhile.
CREATE FUNCTION acc.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	before bigint := acc.ledger_rows();
	r text;
BEGIN
	BEGIN
		EXECUTE q;
		r := 'no error';
	EXCEPTION WHEN OTHERS THEN
		r := SQLSTATE || ': ' || SQLERRM;
	END;
	IF acc.ledger_rows() <> before THEN
		r := r || ' [LEDGER GREW]';
	END IF;
	RETURN r;
END $$;
-- Run a dp query as a statement of its own and return its rows.
CREATE FUNCTION acc.run(q text) RETURNS SETOF record LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE q;
END $$;
GRANT EXECUTE ON FUNCTION acc.err(text), acc.run(text) TO acc_analyst, acc_trusted;

--
-- 1. Unbiased unit-bounded sums
--
SET dp_pg.debug_noiseless = on;

-- the issue's example: 20000 customers with one order of quantity 1, 5000
-- with 7 orders of quantity 3; quantity in 1..20, r = 10
CREATE TABLE acc.orders AS
SELECT c AS customer, 1 AS quantity FROM generate_series(1, 20000) c
UNION ALL
SELECT c, 3 FROM generate_series(20001, 25000) c, generate_series(1, 7);
SELECT dp_pg.protect('acc.orders', 'customer', max_groups_contributed => 1, max_rows_per_unit => 10);
CREATE TABLE acc.small_sens (id int);
-- the bounded truth, and what the rule [r lo, r hi] gave (a unit at least r lo = 10)
SELECT sum(least(greatest(s, least(n, 10) * 1), least(n, 10) * 20)) AS bounded_truth,
       sum(least(greatest(s, 10 * 1), 10 * 20)) AS old_rule
FROM (SELECT customer, count(quantity) AS n, sum(quantity) AS s FROM acc.orders GROUP BY customer) u;
SELECT dp_sum(quantity, 1, 20, 'laplace(epsilon=1)') = 125000 AS released_is_the_bounded_truth FROM acc.orders;

-- every type and path: 3000 units with 1 to 15 rows in 1 to 2 of 4 regions
-- (g = 2: every cell is kept, so the values are exact), every fifth value
-- NULL; q in 1..20 (int4), q8 = 1000 q, qf = qn = q / 4; neg = -q in -20..-1
CREATE TABLE acc.sales AS
SELECT c AS customer, (ARRAY['n', 's', 'e', 'w'])[1 + (c + j % 2) % 4] AS region,
       CASE WHEN j % 5 = 4 THEN NULL ELSE 1 + (c * 7 + j) % 20 END AS q
FROM generate_series(1, 3000) c, generate_series(1, 1 + c % 15) j;
ALTER TABLE acc.sales ADD COLUMN q8 int8, ADD COLUMN qf float8, ADD COLUMN qn numeric, ADD COLUMN neg int;
UPDATE acc.sales SET q8 = q * 1000, qf = q / 4.0, qn = q / 4.0, neg = -q;
-- a unit with only NULL values in its cells: it adds 0, not lo
INSERT INTO acc.sales VALUES (3001, 'n', NULL, NULL, NULL, NULL, NULL), (3001, 'n', NULL, NULL, NULL, NULL, NULL);
ALTER TABLE acc.sales ADD CHECK (q BETWEEN 1 AND 20);
CREATE TABLE acc.sales_free AS SELECT * FROM acc.sales;
GRANT SELECT ON acc.sales_free TO acc_trusted;
SELECT dp_pg.protect('acc.sales', 'customer', max_groups_contributed => 2, max_rows_per_unit => 10);
SELECT dp_pg.set_public_keys('acc.sales', 'region', ARRAY['n', 's', 'e', 'w']);
ANALYZE acc.sales;
SELECT max(c) AS most_regions_per_unit FROM (SELECT count(DISTINCT region) AS c FROM acc.sales GROUP BY customer) x;
-- the truths: per region over the (unit, region) cells, and in all (region
-- NULL: no GROUP BY, one cell per unit with all its rows)
CREATE FUNCTION acc.truth_of(by_region boolean) RETURNS TABLE (region text, s numeric, s8 numeric, sf float8,
	sn numeric, sneg numeric, s_old numeric, af float8) LANGUAGE sql AS $$
	SELECT region,
	       sum(coalesce(least(greatest(s, least(k, 10) * 1), least(k, 10) * 20), 0)),
	       sum(coalesce(least(greatest(s8, least(k, 10) * 1000), least(k, 10) * 20000), 0)),
	       sum(coalesce(least(greatest(sf, least(k, 10) * 0.25), least(k, 10) * 5), 0)),
	       sum(coalesce(least(greatest(sn, least(k, 10) * 0.25), least(k, 10) * 5), 0)),
	       sum(coalesce(least(greatest(sneg, least(k, 10) * -20), least(k, 10) * -1), 0)),
	       sum(least(greatest(coalesce(s, 0), 10 * 1), 10 * 20)),
	       2.625 + sum(least(k, 10) * (sf / k - 2.625)) FILTER (WHERE k > 0) / sum(least(k, 10)) FILTER (WHERE k > 0)
	FROM (SELECT customer, CASE WHEN by_region THEN region END AS region, count(q) AS k, sum(q) AS s, sum(q8) AS s8,
	             sum(qf) AS sf, sum(qn) AS sn, sum(neg) AS sneg
	      FROM acc.sales GROUP BY 1, 2) c
	GROUP BY region
$$;
CREATE TABLE acc.truth AS SELECT * FROM acc.truth_of(true) UNION ALL SELECT * FROM acc.truth_of(false);
-- avg(q) translated for an analyst, over [1, 20]: each unit's k values at its mean
CREATE TABLE acc.avg_truth AS
SELECT region, 10.5 + sum(least(k, 10) * (s::numeric / k - 10.5)) / sum(least(k, 10)) AS a
FROM (SELECT customer, region, count(q) AS k, sum(q) AS s FROM acc.sales GROUP BY 1, 2) c
WHERE k > 0 GROUP BY region;
GRANT SELECT ON acc.truth, acc.avg_truth TO acc_analyst, acc_trusted;
SELECT region, s, s_old, s <> s_old AS old_rule_differs FROM acc.truth ORDER BY region NULLS LAST;
-- compare one run of q with the truth: one row per group (region NULL: no GROUP BY)
CREATE FUNCTION acc.sums_exact(q text) RETURNS TABLE (groups bigint, exact boolean) LANGUAGE sql AS $$
	SELECT count(*), bool_and(r.s = t.s AND r.s8 = t.s8 AND r.sf = t.sf AND r.sn = t.sn AND r.sneg = t.sneg
	                         AND abs(r.af - t.af) <= 1e-9)
	FROM acc.run(q) AS r(region text, s bigint, s8 bigint, sf float8, sn numeric, sneg bigint, af float8)
	     JOIN acc.truth t ON t.region IS NOT DISTINCT FROM r.region
$$;
\set sums 'dp_sum(q, 1, 20, ''laplace(epsilon=1)''), dp_sum(q8, 1000, 20000, ''laplace(epsilon=1)''), dp_sum(qf, 0.25, 5, ''laplace(epsilon=1)''), dp_sum(qn, 0.25, 5, ''laplace(epsilon=1)''), dp_sum(neg, -20, -1, ''laplace(epsilon=1)''), dp_avg(qf, 0.25, 5, ''laplace(epsilon=1)'')'
-- without cells, with dp_pg.unit_cells (GROUP BY), the window form
SELECT * FROM acc.sums_exact('SELECT NULL::text, ' || :'sums' || ' FROM acc.sales');
SELECT * FROM acc.sums_exact('SELECT region, ' || :'sums' || ' FROM acc.sales GROUP BY region');
SET dp_pg.debug_unit_cells = 'window';
SELECT * FROM acc.sums_exact('SELECT region, ' || :'sums' || ' FROM acc.sales GROUP BY region');
RESET dp_pg.debug_unit_cells;
-- a parallel plan
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT position('Gather' IN string_agg(p, ' ')) > 0 AS parallel_plan
FROM acc.run('EXPLAIN (COSTS OFF) SELECT region, ' || :'sums' || ' FROM acc.sales GROUP BY region') AS e(p text);
SELECT * FROM acc.sums_exact('SELECT region, ' || :'sums' || ' FROM acc.sales GROUP BY region');
SELECT * FROM acc.sums_exact('SELECT NULL::text, ' || :'sums' || ' FROM acc.sales');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- a trusted role's request (dp_pg.privacy_unit) on the unprotected copy
SET ROLE acc_trusted;
SET dp_pg.privacy_unit = 'customer';
SET dp_pg.max_groups_contributed = 2;
SET dp_pg.max_rows_per_unit = 10;
SELECT * FROM acc.sums_exact('SELECT region, ' || :'sums' || ' FROM acc.sales_free GROUP BY region');
RESET dp_pg.privacy_unit;
RESET dp_pg.max_groups_contributed;
RESET dp_pg.max_rows_per_unit;
RESET ROLE;
-- the analyst's plain SUM and AVG (translated, bounded by the CHECK 1..20)
SET ROLE acc_analyst;
SELECT count(*) AS groups, bool_and(r.s = t.s) AS sum_exact
FROM acc.run('SELECT region, sum(q) FROM acc.sales GROUP BY region') AS r(region text, s bigint)
     JOIN acc.truth t USING (region);
SELECT r.s = t.s AS sum_exact FROM acc.run('SELECT sum(q) FROM acc.sales') AS r(s bigint), acc.truth t
WHERE t.region IS NULL;
-- avg(q) over [1, 20]: each unit's k values at its mean (no bias either)
SELECT count(*) AS groups, bool_and(abs(r.a - t.a) <= 1e-9) AS avg_exact
FROM acc.run('SELECT region, avg(q) FROM acc.sales GROUP BY region') AS r(region text, a numeric)
     JOIN acc.avg_truth t USING (region);
RESET ROLE;
-- one unit still moves a sum by at most r max(|lo|, |hi|) = 200 (lo > 0) or 200 (hi < 0)
INSERT INTO acc.sales SELECT 0, 'n', 20, 20000, 5, 5, -20 FROM generate_series(1, 500);
SELECT a.s - b.s AS heavy_unit_moves_int4, a.s8 - b.s8 AS heavy_unit_moves_int8, a.sf - b.sf AS heavy_unit_moves_float8,
       a.sneg - b.sneg AS heavy_unit_moves_negative
FROM acc.run('SELECT dp_sum(q, 1, 20, ''laplace(epsilon=1)''), dp_sum(q8, 1000, 20000, ''laplace(epsilon=1)''), dp_sum(qf, 0.25, 5, ''laplace(epsilon=1)''), dp_sum(neg, -20, -1, ''laplace(epsilon=1)'') FROM acc.sales')
     AS a(s bigint, s8 bigint, sf float8, sneg bigint),
     acc.run('SELECT dp_sum(q, 1, 20, ''laplace(epsilon=1)''), dp_sum(q8, 1000, 20000, ''laplace(epsilon=1)''), dp_sum(qf, 0.25, 5, ''laplace(epsilon=1)''), dp_sum(neg, -20, -1, ''laplace(epsilon=1)'') FROM acc.sales WHERE customer <> 0')
     AS b(s bigint, s8 bigint, sf float8, sneg bigint);
DELETE FROM acc.sales WHERE customer = 0;
-- the noise is planned for that bound, as for [r lo, r hi]: laplace(epsilon=1)
-- at sensitivity 200 is the noise of a count (sensitivity 1) at epsilon 1/200
-- (below dp_pg.min_release_epsilon: the floor is off for this comparison)
SET dp_pg.min_release_epsilon = 0;
SELECT noise_sd = (SELECT noise_sd FROM dp_pg.error_bars('SELECT dp_count(1, ''laplace(epsilon=0.005)'') FROM acc.small_sens'))
       AS sum_noise_of_sensitivity_200
FROM dp_pg.error_bars('SELECT dp_sum(q, 1, 20, ''laplace(epsilon=1)'') FROM acc.sales');
RESET dp_pg.min_release_epsilon;

--
-- 2. dp_sum(x, lower, upper), dp_avg(x, lower, upper): the default mechanism
--
SELECT dp_sum(q, 1, 20) = (SELECT s FROM acc.truth WHERE region IS NULL) AS sum_int4,
       dp_sum(q8, 1000, 20000) = (SELECT s8 FROM acc.truth WHERE region IS NULL) AS sum_int8,
       dp_sum(qf, 0.25, 5) = (SELECT sf FROM acc.truth WHERE region IS NULL) AS sum_float8,
       dp_sum(qn, 0.25, 5) = (SELECT sn FROM acc.truth WHERE region IS NULL) AS sum_numeric,
       abs(dp_avg(qf, 0.25, 5) - (SELECT af FROM acc.truth WHERE region IS NULL)) <= 1e-9 AS avg
FROM acc.sales;
SET dp_pg.default_mechanism = 'laplace(epsilon=0.25)';
SELECT dp_sum(quantity, 1, 20) IS NOT NULL AS answered FROM acc.orders;
SELECT aggregate, mechanism FROM dp_pg.last_releases;
RESET dp_pg.default_mechanism;
-- an analyst: charged the default mechanism's epsilon, like the four-argument form
SET ROLE acc_analyst;
SELECT epsilon AS estimated FROM dp_pg.estimate_cost('SELECT dp_sum(q, 1, 20), dp_avg(qf, 0, 5) FROM acc.sales');
SELECT region IS NOT NULL AS grouped, s IS NOT NULL AS answered
FROM acc.run('SELECT region, dp_sum(q, 1, 20) FROM acc.sales WHERE region = ''n'' GROUP BY region') AS r(region text, s bigint);
SELECT kind, epsilon FROM dp_pg.ledger WHERE role = 'acc_analyst'::regrole ORDER BY id DESC LIMIT 1;
-- bad bounds: the same errors as the four-argument form, uncharged
SELECT acc.err('SELECT dp_sum(q, 20, 1) FROM acc.sales');
SELECT acc.err('SELECT dp_sum(q, NULL, 1) FROM acc.sales');
SELECT acc.err('SELECT dp_avg(qf, 0, ''NaN'') FROM acc.sales');
SELECT acc.err('SELECT dp_sum(q, 1, q) FROM acc.sales');
RESET ROLE;
-- dp_count(*, mechanism) is a syntax error: its hint says what to write
SELECT dp_count(*, 'laplace(epsilon=1)') FROM acc.sales;
SELECT dp_count( * ,'laplace(epsilon=1)') FROM acc.sales;
-- (other syntax errors get no such hint)
SELECT count(*, 1) FROM acc.sales;

--
-- 3. Error bars: what each covers
--
-- a count: [answer - h, answer + h], the noise alone, and the bounding
SELECT dp_count(*) IS NOT NULL AS answered FROM acc.sales;
SELECT site, aggregate, noise_sd > 0 AS has_sd, ci95_halfwidth > 0 AS has_h, value IS NULL AS no_value,
       ci95_rank_halfwidth IS NULL AS no_rank, note FROM dp_pg.last_releases;
-- a table without a unit: no bounding sentence
CREATE TABLE acc.small AS SELECT g AS id, 40 + g AS v FROM generate_series(1, 10) g;
SELECT dp_pg.protect('acc.small');
SELECT dp_count(*) IS NOT NULL AS answered FROM acc.small;
SELECT note FROM dp_pg.last_releases;
-- dp_avg: a row per released value, its interval around the truth (noiseless:
-- the released sum and count are the exact ones, the interval holds the truth)
SELECT region, dp_avg(qf, 0.25, 5, 'laplace(epsilon=1)') AS a FROM acc.sales GROUP BY region ORDER BY region;
SELECT count(*) AS avg_rows, bool_and(ci95_lower <= value AND value <= ci95_upper) AS value_inside,
       bool_and(ci95_lower >= 0.25 AND ci95_upper <= 5) AS within_bounds,
       bool_and(noise_sd > 0 AND ci95_halfwidth >= greatest(value - ci95_lower, ci95_upper - value)) AS sd_and_h,
       bool_and(EXISTS (SELECT 1 FROM acc.truth t WHERE t.region IS NOT NULL AND abs(t.af - value) <= 1e-9
                        AND t.af BETWEEN ci95_lower AND ci95_upper)) AS truth_inside
FROM dp_pg.last_release_rows() WHERE aggregate = 'dp_avg';	-- (exact: the view shows six digits)
SELECT DISTINCT note FROM dp_pg.last_releases;
-- without running it: its width for a group of n values
SELECT aggregate, noise_sd IS NULL AS no_sd, ci95_halfwidth IS NULL AS no_h, note
FROM dp_pg.error_bars('SELECT dp_avg(v, 0, 100, ''laplace(epsilon=1)'') FROM acc.small');
-- a quantile: a rank interval of ceil((ln 1024 + ln 19) / (epsilon / 2)) - 1 ranks, no NaN
SELECT dp_quantile(v, 0.5, 0, 100, 'laplace(epsilon=1)') BETWEEN 0 AND 100 AS answered FROM acc.small;
SELECT aggregate, noise_sd, ci95_halfwidth, ci95_rank_halfwidth, note FROM dp_pg.last_releases;
SELECT aggregate, ci95_rank_halfwidth FROM dp_pg.error_bars('SELECT dp_median(v, 0, 100, ''laplace(epsilon=0.1)'') FROM acc.small');
-- on a unit table (w = r = 10 values per unit): the rank interval is w times wider
SELECT aggregate, ci95_rank_halfwidth, note FROM dp_pg.error_bars('SELECT dp_median(qf, 0, 5, ''laplace(epsilon=1)'') FROM acc.sales');
-- partition selection (an analyst's GROUP BY without public keys): its
-- count's noise, and the groups it leaves out
SET ROLE acc_analyst;
SET dp_pg.partition_mechanism = 'gaussian(epsilon=1, delta=1e-6)';
SELECT site, aggregate, note FROM dp_pg.error_bars('SELECT id, dp_count(*) FROM acc.small GROUP BY id') ORDER BY site;
RESET dp_pg.partition_mechanism;
RESET ROLE;
-- no NaN in any column of any kind
SELECT count(*) AS rows,
       bool_and(coalesce(noise_sd <> 'NaN', true) AND coalesce(ci95_halfwidth <> 'NaN', true)
                AND coalesce(ci95_rank_halfwidth <> 'NaN', true)) AS no_nan
FROM dp_pg.error_bars('SELECT dp_count(*), dp_sum(v, 0, 100, ''laplace(epsilon=1)''), dp_avg(v, 0, 100, ''laplace(epsilon=1)''), dp_median(v, 0, 100, ''laplace(epsilon=1)''), dp_histogram(v, 0, 100, 4, ''laplace(epsilon=1)'') FROM acc.small');
-- a cached answer keeps its averages' intervals (the analyst, cache on)
SET dp_pg.answer_cache = on;
SET ROLE acc_analyst;
SELECT count(*) AS groups FROM acc.run('SELECT region, dp_avg(qf, 0.25, 5, ''laplace(epsilon=1)'') FROM acc.sales GROUP BY region') AS r(region text, a float8);
CREATE TEMP TABLE acc_first AS SELECT value, ci95_lower, ci95_upper, from_cache FROM dp_pg.last_releases;
SELECT count(*) AS groups FROM acc.run('SELECT region, dp_avg(qf, 0.25, 5, ''laplace(epsilon=1)'') FROM acc.sales GROUP BY region') AS r(region text, a float8);
SELECT count(*) AS rows, bool_and(from_cache) AS served_again,
       (SELECT array_agg(ROW(value, ci95_lower, ci95_upper) ORDER BY value) FROM acc_first)
       = array_agg(ROW(value, ci95_lower, ci95_upper) ORDER BY value) AS same_intervals
FROM dp_pg.last_releases;
RESET ROLE;
RESET dp_pg.answer_cache;
-- analysts, with noise: the released average lies in its own interval (always)
SET SESSION AUTHORIZATION acc_analyst;
SELECT count(*) AS groups FROM acc.run('SELECT region, dp_avg(qf, 0.25, 5, ''laplace(epsilon=1)'') FROM acc.sales GROUP BY region') AS r(region text, a float8);
SELECT count(*) AS rows, bool_and(ci95_lower <= value AND value <= ci95_upper) AS value_inside FROM dp_pg.last_releases;
RESET SESSION AUTHORIZATION;
SET dp_pg.debug_noiseless = on;

--
-- 4. Choosing the bounds: the DBA's guide's hospital (20000 patients, median
-- 6 visits, 8 wards, a long tail of chronic patients)
--
CREATE TABLE acc.visits AS
SELECT p AS patient, (ARRAY['cardio', 'derma', 'ent', 'gastro', 'neuro', 'ortho', 'pedia', 'uro'])[1 + (p + v % (1 + p % 6)) % 8] AS ward,
       (20 + (p * 37 + v * 11) % 180)::int AS cost
FROM generate_series(1, 20000) p,
     LATERAL generate_series(1, 1 + floor(-7 * ln(1 - ((p * 2654435761::bigint) % 1000003) / 1000003.0)
                                       * CASE WHEN p % 10 = 0 THEN 2.7 ELSE 1 END)::int) v;
SELECT dp_pg.protect('acc.visits', 'patient', max_groups_contributed => 3, max_rows_per_unit => 5);
SELECT statistic, rows_per_unit, round(groups_per_unit::numeric, 2) AS groups_per_unit,
       round(rows_per_unit_and_group::numeric, 2) AS rows_per_unit_and_group
FROM dp_pg.unit_profile('acc.visits', 'ward');
SELECT max_groups_contributed AS g, max_rows_per_unit AS r, round(units_whole::numeric, 3) AS units_whole,
       round(rows_kept::numeric, 3) AS rows_kept, round(total_kept::numeric, 3) AS total_kept
FROM dp_pg.bound_choices('acc.visits', 'ward', 'cost', 20, 200, max_groups => '{2,3,5,8}', max_rows => '{5,10,20,50}');
-- without GROUP BY a unit has one group: only r matters
SELECT max_groups_contributed AS g, max_rows_per_unit AS r, round(rows_kept::numeric, 3) AS rows_kept
FROM dp_pg.bound_choices('acc.visits', max_rows => '{5,10,20}');
-- what the helper says is what the bounded count keeps: dp_count(*) by ward
-- (noiseless) against the raw count.  Each patient with more than 3 wards
-- keeps 3 at random, moving what it keeps by at most 3 rows (its wards'
-- counts differ by 1 at most): by Hoeffding the share kept is within 0.01 of
-- the helper's expectation but with probability below 2 e^-60
SELECT abs(sum(r.n)::float8 / (SELECT count(*) FROM acc.visits) - b.rows_kept) <= 0.01 AS count_kept_as_expected
FROM acc.run('SELECT ward, dp_count(*) FROM acc.visits GROUP BY ward') AS r(ward text, n bigint),
     dp_pg.bound_choices('acc.visits', 'ward', max_groups => '{3}', max_rows => '{5}') b
GROUP BY b.rows_kept;
-- a table that is not protected: name the unit
CREATE TABLE acc.visits_copy AS SELECT * FROM acc.visits LIMIT 100;
SELECT statistic, rows_per_unit FROM dp_pg.unit_profile('acc.visits_copy', privacy_unit => 'patient') WHERE statistic IN ('units', 'max');
-- errors (nothing charged)
SELECT acc.err('SELECT * FROM dp_pg.unit_profile(''acc.visits_copy'')');
SELECT acc.err('SELECT * FROM dp_pg.bound_choices(''acc.visits'', ''nosuch'')');
SELECT acc.err('SELECT * FROM dp_pg.bound_choices(''acc.visits'', value_column => ''nosuch'')');
SELECT acc.err('SELECT * FROM dp_pg.bound_choices(''acc.visits'', max_rows => ''{0,5}'')');
SELECT acc.err('SELECT * FROM dp_pg.bound_choices(''acc.visits'', value_column => ''cost'', lower => 10, upper => 1)');
SELECT acc.err('SELECT * FROM dp_pg.unit_profile(NULL)');
-- for the DBA only: not PUBLIC, and an analyst granted it is refused, uncharged
SELECT has_function_privilege('public', 'dp_pg.bound_choices(regclass, name, name, numeric, numeric, int[], int[], name)', 'EXECUTE') AS public_bound_choices,
       has_function_privilege('public', 'dp_pg.unit_profile(regclass, name, name)', 'EXECUTE') AS public_unit_profile;
SET ROLE acc_analyst;
SELECT acc.err('SELECT * FROM dp_pg.bound_choices(''acc.visits'')');
RESET ROLE;
GRANT EXECUTE ON FUNCTION dp_pg.bound_choices(regclass, name, name, numeric, numeric, int[], int[], name),
	dp_pg.unit_profile(regclass, name, name), dp_pg.bounds_source(regclass, name, name) TO acc_analyst;
SET ROLE acc_analyst;
SELECT acc.err('SELECT * FROM dp_pg.bound_choices(''acc.visits'')');
SELECT acc.err('SELECT * FROM dp_pg.unit_profile(''acc.visits'', ''ward'')');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION dp_pg.bound_choices(regclass, name, name, numeric, numeric, int[], int[], name),
	dp_pg.unit_profile(regclass, name, name), dp_pg.bounds_source(regclass, name, name) FROM acc_analyst;
-- a DBA role that is not a superuser: granted it, and SELECT on the table
CREATE ROLE acc_dba;
GRANT USAGE ON SCHEMA acc TO acc_dba;
GRANT SELECT ON acc.visits TO acc_dba;
GRANT EXECUTE ON FUNCTION dp_pg.bound_choices(regclass, name, name, numeric, numeric, int[], int[], name),
	dp_pg.bounds_source(regclass, name, name) TO acc_dba;
SET ROLE acc_dba;
SELECT round(rows_kept::numeric, 3) AS rows_kept FROM dp_pg.bound_choices('acc.visits', 'ward', max_groups => '{3}', max_rows => '{5}');
RESET ROLE;
REVOKE ALL ON FUNCTION dp_pg.bound_choices(regclass, name, name, numeric, numeric, int[], int[], name),
	dp_pg.bounds_source(regclass, name, name) FROM acc_dba;
REVOKE ALL ON acc.visits FROM acc_dba;
REVOKE ALL ON SCHEMA acc FROM acc_dba;
DROP ROLE acc_dba;

--
-- 5. Words
--
-- protect() again: no privilege of an analyst was revoked, no warning
SELECT dp_pg.protect('acc.small');
-- a privilege granted to the analyst itself is revoked, with a warning
GRANT SELECT ON acc.small TO acc_analyst;
SELECT dp_pg.protect('acc.small');
SELECT EXISTS (SELECT 1 FROM pg_class c, aclexplode(c.relacl) a
               WHERE c.oid = 'acc.small'::regclass AND a.grantee = 'acc_analyst'::regrole) AS direct_grant_kept;
-- and a column privilege
GRANT SELECT (v) ON acc.small TO acc_analyst;
SELECT dp_pg.protect('acc.small');
SELECT EXISTS (SELECT 1 FROM pg_attribute t, aclexplode(t.attacl) a
               WHERE t.attrelid = 'acc.small'::regclass AND a.grantee = 'acc_analyst'::regrole) AS column_grant_kept;
-- DP001: what to do, and the delta/2 rule when a charge is accounted above its epsilon
CREATE ROLE acc_small_budget;
GRANT USAGE ON SCHEMA acc TO acc_small_budget;
GRANT EXECUTE ON FUNCTION acc.err(text) TO acc_small_budget;
SELECT dp_pg.set_budget('acc_small_budget', 1, 1e-5) IS NOT NULL AS budget;
SET ROLE acc_small_budget;
SELECT acc.err('SELECT dp_count(1, ''laplace(epsilon=2)'') FROM acc.small');
SELECT acc.err('SELECT dp_count(1, ''gaussian(epsilon=1, delta=1e-5)'') FROM acc.small');
SELECT dp_count(1, 'laplace(epsilon=2)') FROM acc.small;
SELECT dp_count(1, 'gaussian(epsilon=1, delta=1e-5)') FROM acc.small;
-- half the delta limit fits
SELECT dp_count(1, 'gaussian(epsilon=1, delta=5e-6)') IS NOT NULL AS fits FROM acc.small;
RESET ROLE;
SELECT dp_pg.set_query_cap('acc_small_budget', 0.5) IS NOT NULL AS cap;
SELECT dp_pg.set_budget('acc_small_budget', 10, 1e-5) IS NOT NULL AS budget;
SET ROLE acc_small_budget;
SELECT dp_count(1, 'gaussian(epsilon=0.4, delta=1e-5)') FROM acc.small;
RESET ROLE;

RESET dp_pg.debug_noiseless;

-- clean up: the tables, and the roles of this file with their budgets and ledger rows
SET client_min_messages = warning;
DROP SCHEMA acc CASCADE;
RESET client_min_messages;
RESET search_path;
\set forget 'acc_analyst acc_trusted acc_small_budget'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
