--
-- Row expressions that cannot fail (src/guard/total.c, bounds.c): an error
-- that only a row can cause is an output, a yes/no question about that row.
-- The shapes that did so, each run as an analyst on two tables that differ
-- in one row (tt.a holds the row, tt.b does not): the outcome is the same on
-- both.  Then dp_pg's total operators themselves, the guard's own row
-- functions refused to analysts, dp_pg.min_release_epsilon,
-- dp_pg.synthesize once per statement, materialized views over a protected
-- table, and GROUP BY keys whose listed values are all NULL.  Nothing here
-- prints a noisy value.
--
CREATE ROLE dp_tt_analyst;
CREATE SCHEMA tt;
GRANT USAGE ON SCHEMA tt TO PUBLIC;
GRANT CREATE ON SCHEMA tt TO dp_tt_analyst;
CREATE TABLE tt.a (id int PRIMARY KEY,
	d date CHECK (d BETWEEN '2020-01-01' AND '2025-12-31'),
	n int CHECK (n BETWEEN 0 AND 100),
	amt numeric CHECK (amt BETWEEN 0.01 AND 1e19),
	w float8 CHECK (w BETWEEN 1e-300 AND 1e300),
	ts timestamp CHECK (ts BETWEEN '2020-01-01' AND '2025-12-31'),
	r float8 CHECK (r BETWEEN 0 AND 1));
CREATE TABLE tt.b (LIKE tt.a INCLUDING CONSTRAINTS);
INSERT INTO tt.a SELECT g, date '2021-01-01' + g, g % 100, 1000 + g, 1.5, timestamp '2021-01-01' + g * interval '1 hour', 0.5
FROM generate_series(1, 200) g;
INSERT INTO tt.b SELECT * FROM tt.a;
-- the sensitive row, in tt.a only: an amount that rounds to 0 at the read's scale, a
-- weight at its domain's lower end, a time with a fraction of a second
INSERT INTO tt.a VALUES (1000, '2022-02-02', 7, 0.02, 1e-300, '2022-02-02 10:11:12.5', 0.25);
SELECT dp_pg.protect('tt.a'), dp_pg.protect('tt.b');
SELECT dp_pg.set_budget('dp_tt_analyst', epsilon => 1e6, delta => 0.5);
-- a statement's outcome: its SQLSTATE and message, or 'ok'
CREATE FUNCTION tt.try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- the same statement on both tables: one line if the outcomes agree
CREATE FUNCTION tt.both(q text) RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN x = y THEN x ELSE 'DIFFERENT: ' || x || ' | ' || y END
	FROM tt.try(replace(q, '%T', 'tt.a')) x, tt.try(replace(q, '%T', 'tt.b')) y
$$;
CREATE FUNCTION tt.charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger WHERE role = 'dp_tt_analyst'::regrole AND kind = 'charge'
$$;
GRANT EXECUTE ON FUNCTION tt.try(text), tt.both(text), tt.charges() TO dp_tt_analyst;

SET ROLE dp_tt_analyst;
SET dp_pg.default_mechanism = 'laplace(epsilon=1)';
-- the three shapes of the one-bit oracle, and their neighbours
SELECT tt.both(q) AS outcome, q AS statement FROM unnest(ARRAY[
	-- a field the type does not have: refused while planning, for every table alike
	$q$SELECT dp_count(1, 'laplace(epsilon=1)') FROM %T WHERE CASE WHEN id = 1000 THEN extract(hour FROM d + n) ELSE 0 END = 0$q$,
	$q$SELECT count(*) FROM %T WHERE extract(minute FROM d + (d - d)) = 0$q$,
	$q$SELECT sum(extract(microseconds FROM d + 1)) FROM %T$q$,
	-- ... the fields a date has are fine
	$q$SELECT count(*) FROM %T WHERE extract(dow FROM d + n) = 3$q$,
	$q$SELECT sum(extract(doy FROM d - n)) FROM %T$q$,
	-- reads that left the interval: a numeric rounded to 0 near its domain's lower end, a
	-- float domain that excludes zero, numeric constants nearer to zero than a double
	$q$SELECT avg(100 / amt) FROM %T$q$,
	$q$SELECT count(*) FROM %T WHERE 100 / amt > 1000 AND id = 1000$q$,
	$q$SELECT count(*) FROM %T WHERE w * 1e-200 > 0 AND id = 1000$q$,
	$q$SELECT sum(w * 1e-300 * 1e-10) FROM %T$q$,
	$q$SELECT count(*) FROM %T WHERE (amt * 1e-330)::float8 > 0 AND id = 1000$q$,
	-- fractional seconds taken as whole
	$q$SELECT sum(date_part('second', ts) * 1e-300 * 1e-10) FROM %T$q$,
	$q$SELECT count(*) FROM %T WHERE date_part('second', ts) / 1e289 > 0 AND id = 1000$q$,
	$q$SELECT count(*) FROM %T WHERE extract(milliseconds FROM ts) * 1e-300 * 1e-20 > 0$q$,
	-- overflow, division and casts on the rows' edges: saturated, NULL, never an error
	$q$SELECT count(*) FROM %T WHERE CASE WHEN id = 1000 THEN CAST(amt * 1e17 AS int) ELSE 0 END = 0$q$,
	$q$SELECT sum(CASE WHEN id = 1000 THEN (amt - 0.02)::numeric(3, 1) ELSE 0 END) FROM %T$q$
]) q;
-- the guard's own row functions are not an analyst's: their bounds are the guard's
SELECT tt.charges() AS charges_before \gset
SELECT tt.both(q) AS outcome FROM unnest(ARRAY[
	$q$SELECT count(*) FROM %T WHERE dp_pg.domain_read(r, 1e-30::float8, 2e-30::float8) * dp_pg.domain_read(r, 1e-30::float8, 2e-30::float8) > 0$q$,
	$q$SELECT sum(dp_pg.total_mul(n, n)) FROM %T$q$,
	$q$SELECT count(*) FROM (SELECT * FROM %T WHERE dp_pg.domain_key_read(amt, 0, 1) > 0) s$q$
]) q;
SELECT tt.charges() - :charges_before AS charges;

-- dp_pg.min_release_epsilon: the least one release may cost (0.01 by default), refused uncharged
SELECT tt.try($q$SELECT dp_count(1, 'laplace(epsilon=0.001)') FROM tt.a$q$) AS cheap_count,
       tt.try($q$SELECT dp_count(1, 'gaussian(rho=0.00001)') FROM tt.a$q$) AS cheap_rho,
       tt.try($q$SELECT dp_count(1, 'gaussian(rho=0.00005)') FROM tt.a$q$) AS enough_rho,
       tt.try($q$SELECT dp_count(1, 'laplace(epsilon=0.01)') FROM tt.a$q$) AS enough_epsilon;
SELECT tt.charges() - :charges_before AS charges;
-- an analyst cannot lower it
SELECT tt.try('SET dp_pg.min_release_epsilon = 0') AS analyst_sets_floor;
RESET ROLE;
-- a superuser raises it (for a session here; ALTER ROLE ... SET for a role)
SET dp_pg.min_release_epsilon = 0.5;
SET ROLE dp_tt_analyst;
SELECT tt.try($q$SELECT dp_count(1, 'laplace(epsilon=0.1)') FROM tt.a$q$) AS below_raised_floor;
RESET ROLE;
RESET dp_pg.min_release_epsilon;
SELECT tt.charges() - :charges_before AS charges;

-- dp_pg's total operators, each what its operator returns, or instead of an error:
-- an overflow saturates, a zero divisor is NULL, an underflow 0, a date stays in the window
SELECT dp_pg.total_add(2147483647, 1) AS int_overflow, dp_pg.total_mul((-2147483648)::int, 2) AS int_neg_overflow,
       dp_pg.total_div((-2147483648)::int, -1) AS min_by_minus_one, dp_pg.total_div(7, 0) IS NULL AS div_zero_null,
       dp_pg.total_mod(7, 0) IS NULL AS mod_zero_null, dp_pg.total_mod((-2147483648)::int, -1) AS mod_minus_one,
       dp_pg.total_div(7, 2) AS int_div, dp_pg.total_neg((-32768)::int2) AS neg_int2,
       dp_pg.total_abs((-9223372036854775808)::int8) AS abs_int8, dp_pg.total_sub((-32768)::int2, 1::int2) AS int2_low;
SELECT dp_pg.total_mul(1e200::float8, 1e200::float8) AS float_overflow, dp_pg.total_mul(1e-200::float8, 1e-200::float8) AS float_underflow,
       dp_pg.total_div(1e-300::float8, 1e300::float8) AS quotient_underflow, dp_pg.total_div(1::float8, 0::float8) IS NULL AS float_div_zero,
       dp_pg.total_add('Infinity'::float8, 1::float8) AS inf_stays, dp_pg.total_mul(3e38::real, 10::real) AS real_overflow;
SELECT dp_pg.total_mul(1e200, 1e200) = 1e300 AS numeric_kept, dp_pg.total_div(1, 0::numeric) IS NULL AS numeric_div_zero,
       dp_pg.total_mul(1e-10000, 1e-10000) = 0 AS numeric_underflow, dp_pg.total_sub(-1e300, 1e300) = -1e300 AS numeric_neg_kept,
       dp_pg.total_mul(1.5, 2) AS numeric_exact,
       dp_pg.total_div_trunc(7, 2) AS div_trunc, dp_pg.total_div_trunc(7, 0) IS NULL AS div_trunc_zero,
       dp_pg.total_add('NaN'::numeric, 1) AS nan_stays;
SELECT dp_pg.total_int2(40000) AS int2_sat, dp_pg.total_int4(-1e20::float8) AS int4_sat, dp_pg.total_int8('Infinity'::numeric) AS int8_inf,
       dp_pg.total_int4('NaN'::float8) IS NULL AS nan_null, dp_pg.total_int4(2.5::float8) AS round_even, dp_pg.total_int4(2.5) AS round_away,
       dp_pg.total_float4(1e300::float8) AS real_sat, dp_pg.total_float4(1e-300::float8) AS real_underflow,
       dp_pg.total_float8(1e400) AS float8_sat, dp_pg.total_float8(1e-400) AS float8_underflow,
       dp_pg.total_numeric(1e308::float8) = 1e300 AS numeric_from_float, dp_pg.total_numeric('-Infinity'::float8) AS numeric_inf;
SELECT dp_pg.total_numeric_typmod(123.456, ((5 << 16) | 2) + 4) AS fits, dp_pg.total_numeric_typmod(12345.6, ((5 << 16) | 2) + 4) AS saturated,
       dp_pg.total_numeric_typmod(-1e9, ((3 << 16) | 1) + 4) AS neg_saturated;
SELECT dp_pg.total_date_add(date '2020-01-01', 10) AS date_add, dp_pg.total_date_add(date '199999-12-01', 2147483647) AS date_window,
       dp_pg.total_date_sub(date '0400-01-01 BC', 2147483647) AS date_window_low, dp_pg.total_date_add(date 'infinity', 1) AS infinite_stays,
       dp_pg.total_date_diff(date '2020-01-10', date '2020-01-01') AS diff, dp_pg.total_date_diff(date 'infinity', date '2020-01-01') IS NULL AS diff_inf;

-- dp_pg.synthesize makes one twin per statement: a statement that could call it again
-- (for every row of a FROM clause, twice) is refused before anything is made or charged
SELECT tt.charges() AS charges_before \gset
SET ROLE dp_tt_analyst;
SELECT tt.try($q$SELECT dp_pg.synthesize('tt.a', 'tt_twin', 'laplace(epsilon=1)', ARRAY['n']::name[]) FROM generate_series(1, 3)$q$) AS per_row,
       tt.try($q$SELECT dp_pg.synthesize('tt.a', 'tt_x', 'laplace(epsilon=1)', ARRAY['n']::name[]), dp_pg.synthesize('tt.a', 'tt_y', 'laplace(epsilon=1)', ARRAY['n']::name[])$q$) AS twice;
SELECT tt.charges() - :charges_before AS charges;
RESET ROLE;

-- a materialized view over a protected table holds raw rows: never readable by an analyst
CREATE MATERIALIZED VIEW tt.snapshot AS SELECT id, amt FROM tt.a;
CREATE MATERIALIZED VIEW tt.snapshot2 AS SELECT * FROM tt.snapshot;
CREATE VIEW tt.plain AS SELECT id FROM tt.b;
CREATE MATERIALIZED VIEW tt.through_view AS SELECT * FROM tt.plain;
CREATE MATERIALIZED VIEW tt.public_only AS SELECT g FROM generate_series(1, 3) g;
GRANT SELECT ON tt.snapshot, tt.snapshot2, tt.through_view, tt.public_only TO dp_tt_analyst;
SELECT count(*) AS dba_reads_it FROM tt.snapshot;
SET ROLE dp_tt_analyst;
SELECT tt.try('SELECT * FROM tt.snapshot') AS raw_rows,
       tt.try('SELECT count(*) FROM tt.snapshot2') AS nested,
       tt.try('SELECT count(*) FROM tt.through_view') AS through_view,
       tt.try('SELECT count(*) FROM tt.a WHERE id IN (SELECT id FROM tt.snapshot)') AS in_subquery,
       tt.try('SELECT count(*) FROM tt.public_only') AS unrelated;
-- ... but one an analyst owns holds what its refreshes released (each is the guard's, charged)
SELECT tt.charges() AS charges_before \gset
CREATE MATERIALIZED VIEW tt.mine AS SELECT dp_count(1, 'laplace(epsilon=1)') IS NOT NULL AS answered FROM tt.a;
SELECT * FROM tt.mine;
SELECT tt.charges() - :charges_before AS charges;
RESET ROLE;

-- a GROUP BY key whose listed values are all NULL: no group (the server once crashed)
SET ROLE dp_tt_analyst;
SELECT CASE WHEN n > 5 THEN NULL::int END AS k, count(*) FROM tt.a GROUP BY 1;
SELECT extract(dow FROM d) * NULL::numeric AS k, count(*) FROM tt.a GROUP BY 1;
RESET ROLE;

-- clean up
SELECT dp_pg.drop_budget('dp_tt_analyst');
SELECT dp_pg.unprotect('tt.a'), dp_pg.unprotect('tt.b');
DROP SCHEMA tt CASCADE;
\set forget 'dp_tt_analyst'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
