--
-- Table budgets (src/ledger/tablebudget.c) and budget windows
-- (src/ledger/windows.c): a limit on the total privacy loss of a protected
-- table over every analyst, charged with the roles' budgets in one ledger
-- transaction; budgets that renew every period; the reports of privacy loss
-- per window.  Needs a regression database that is the ledger database
-- (test/all.sh): the checks read the ledger tables, and the end deletes this
-- file's rows from them.  No noisy value is printed.
--
CREATE ROLE tb_owner;
CREATE ROLE tb_a;
CREATE ROLE tb_b;
CREATE ROLE tb_plain;
CREATE SCHEMA tb AUTHORIZATION tb_owner;
GRANT USAGE ON SCHEMA tb TO tb_a, tb_b, tb_plain;
SET client_min_messages = warning;
CREATE TABLE tb.people (id int PRIMARY KEY, region text NOT NULL);
INSERT INTO tb.people SELECT g, (ARRAY['north','south'])[1 + g % 2] FROM generate_series(1, 500) g;
-- orders of the same persons (privacy unit customer_id): a join on the unit reads both
CREATE TABLE tb.orders (id int PRIMARY KEY, customer_id int NOT NULL, amount int NOT NULL CHECK (amount BETWEEN 0 AND 100));
INSERT INTO tb.orders SELECT i, 1 + i % 500, i % 100 FROM generate_series(1, 2000) i;
CREATE TABLE tb.open (id int);
RESET client_min_messages;
ALTER TABLE tb.people OWNER TO tb_owner;
ALTER TABLE tb.orders OWNER TO tb_owner;
SELECT dp_pg.protect('tb.people') IS NOT NULL AS people;
SELECT dp_pg.protect('tb.orders', 'customer_id', 1, 4) IS NOT NULL AS orders;
SELECT dp_pg.set_budget('tb_a', 100, 1e-5) IS NOT NULL AS a, dp_pg.set_budget('tb_b', 100, 1e-5) IS NOT NULL AS b;
-- every charge counted (the answer cache would serve a repeated query uncharged)
SET dp_pg.answer_cache = off;

CREATE FUNCTION tb.table_charges(t regclass) RETURNS bigint LANGUAGE sql SECURITY DEFINER AS $$
	SELECT count(*) FROM dp_pg.ledger_entries e JOIN dp_pg.protected_tables p ON p.table_budget = e.table_budget
	WHERE p.relid = t AND e.kind = 'charge'$$;
CREATE FUNCTION tb.role_charges(r regrole) RETURNS bigint LANGUAGE sql SECURITY DEFINER AS $$
	SELECT count(*) FROM dp_pg.ledger_entries WHERE role = r AND kind = 'charge'$$;
-- a statement's SQLSTATE and whether it charged the table (or the role)
CREATE FUNCTION tb.try(q text, t regclass DEFAULT 'tb.people') RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	before bigint := tb.table_charges(t);
	by_role bigint := tb.role_charges(current_user::text::regrole);
	state text := 'ok';
BEGIN
	BEGIN
		EXECUTE q;
	EXCEPTION WHEN OTHERS THEN
		state := SQLSTATE || ': ' || SQLERRM;
	END;
	RETURN state || CASE WHEN tb.table_charges(t) > before THEN ' [table charged]' ELSE '' END
	             || CASE WHEN tb.role_charges(current_user::text::regrole) > by_role THEN ' [role charged]' ELSE '' END;
END $$;
GRANT EXECUTE ON FUNCTION tb.table_charges(regclass), tb.role_charges(regrole), tb.try(text, regclass) TO PUBLIC;

--
-- 1. Bad arguments: 22023 / 22004 / 42704, nothing changed
--
SELECT dp_test.err(q) FROM (VALUES
	('SELECT dp_pg.set_table_budget(''tb.open'', 1, 1e-6)'),
	('SELECT dp_pg.set_table_budget(NULL, 1, 1e-6)'),
	('SELECT dp_pg.set_table_budget(''tb.people'', ''NaN'', 1e-6)'),
	('SELECT dp_pg.set_table_budget(''tb.people'', 0, 1e-6)'),
	('SELECT dp_pg.set_table_budget(''tb.people'', 1, 1)'),
	('SELECT dp_pg.set_table_budget(''tb.people'', 1, 1e-6, renew => ''-1 day'')'),
	('SELECT dp_pg.set_table_budget(''tb.people'', 1, 1e-6, renew => ''0.5 seconds'')'),
	('SELECT dp_pg.set_table_budget(''tb.people'', 1, 1e-6, renew => ''200 years'')'),
	('SELECT dp_pg.set_table_budget(''tb.people'', 1, 1e-6, renew_from => now())'),
	('SELECT dp_pg.set_table_budget(''tb.people'', 1, 1e-6, renew => ''1 day'', renew_from => ''infinity'')'),
	('SELECT dp_pg.set_budget(''tb_a'', 1, 1e-6, renew => ''1 mon -1 day'')'),
	('SELECT dp_pg.drop_table_budget(''tb.people'')')
) AS c(q);
SELECT count(*) AS table_budgets FROM dp_pg.table_budgets;

--
-- 2. A table budget: every analyst together within it
--
SELECT dp_pg.set_table_budget('tb.people', 1, 1e-6) IS NOT NULL AS set;
SELECT relid, database = current_database() AS here, table_name, epsilon_limit, delta_limit, rho_limit,
       epsilon_spent, charges, epsilon_remaining, renew, window_start
FROM dp_pg.table_budgets;
SELECT table_budget IS NOT NULL AS bound FROM dp_pg.protected_tables WHERE relid = 'tb.people';
SET SESSION AUTHORIZATION tb_a;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.4)') FROM tb.people$q$) AS a_first;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.41)') FROM tb.people$q$) AS a_second;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION tb_b;
-- b has spent nothing, but the table has only 0.19 left: refused, nothing charged
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.4)') FROM tb.people$q$) AS b_over_table;
SELECT dp_count(1, 'laplace(epsilon=0.4)') FROM tb.people;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.15)') FROM tb.people$q$) AS b_fits;
-- the analyst sees the table's budget (this database's protected tables), not the other role's
SELECT relid, round(epsilon_spent::numeric, 6) AS epsilon_spent, charges FROM dp_pg.table_budgets;
SELECT count(*) AS budgets_seen FROM dp_pg.budgets;
RESET SESSION AUTHORIZATION;
SELECT role, charges, round(epsilon_spent::numeric, 6) AS epsilon_spent FROM dp_pg.budgets
WHERE role IN ('tb_a', 'tb_b') ORDER BY role::text;
SELECT round(epsilon_spent::numeric, 6) AS table_spent, charges, round(epsilon_remaining::numeric, 6) AS remaining,
       accounting, lifetime_charges, round(lifetime_epsilon::numeric, 6) AS lifetime_epsilon
FROM dp_pg.table_budgets WHERE relid = 'tb.people';
-- its rows in the ledger: one per charge, without a role, after each role's row
SELECT kind, role IS NULL AS no_role, table_budget IS NOT NULL AS table_row, epsilon, budget_window
FROM dp_pg.ledger WHERE table_budget = (SELECT table_budget FROM dp_pg.protected_tables WHERE relid = 'tb.people')
ORDER BY id;
-- (the worker writes refusals to the log within milliseconds)
DO $$ BEGIN
	FOR i IN 1 .. 200 LOOP
		EXIT WHEN EXISTS (SELECT 1 FROM dp_pg.guard_refusals WHERE role = 'tb_b' AND sqlstate = 'DP001');
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT rule FROM dp_pg.guard_refusals WHERE role = 'tb_b' AND sqlstate = 'DP001' ORDER BY id;
-- a superuser's (trusted) dp query is charged to no budget, the table's neither
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=5)') FROM tb.people$q$) AS trusted;

--
-- 3. A join of two protected tables on the unit charges both tables' budgets
--
SELECT dp_pg.set_table_budget('tb.orders', 5, 1e-6) IS NOT NULL AS set;
SELECT dp_pg.set_table_budget('tb.people', 5, 1e-6) IS NOT NULL AS raised;
SET SESSION AUTHORIZATION tb_a;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.5)') FROM tb.orders o JOIN tb.people p ON p.id = o.customer_id$q$,
              'tb.orders') AS join_orders_side,
       tb.table_charges('tb.people') AS people_charges;
RESET SESSION AUTHORIZATION;
SELECT t.relid, charges, round(epsilon_spent::numeric, 6) AS epsilon_spent FROM dp_pg.table_budgets t ORDER BY relid::text;
-- the larger limit applies at once; what was spent stays
SELECT round(epsilon_remaining::numeric, 6) AS people_remaining FROM dp_pg.table_budgets WHERE relid = 'tb.people';

--
-- 4. Found again by name: a table whose binding was lost (a restore of the
--    protection row without it, unprotect() and protect() again) gets the
--    same budget back, spending included; a binding whose budget the ledger
--    does not hold fails closed
--
SELECT table_budget AS people_budget FROM dp_pg.protected_tables WHERE relid = 'tb.people' \gset
UPDATE dp_pg.protected_tables SET table_budget = NULL WHERE relid = 'tb.people';
SET SESSION AUTHORIZATION tb_a;
-- (meanwhile the table is not bound: its queries are charged to the roles only)
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.01)') FROM tb.people$q$) AS unbound;
RESET SESSION AUTHORIZATION;
SELECT dp_pg.set_table_budget('tb.people', 5, 1e-6) IS NOT NULL AS set_again;
SELECT table_budget = :'people_budget' AS same_budget FROM dp_pg.protected_tables WHERE relid = 'tb.people';
SELECT charges, lifetime_charges FROM dp_pg.table_budgets WHERE relid = 'tb.people';
UPDATE dp_pg.protected_tables SET table_budget = '00000000-0000-4000-8000-000000000001' WHERE relid = 'tb.people';
SET SESSION AUTHORIZATION tb_a;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.01)') FROM tb.people$q$) AS dangling;
RESET SESSION AUTHORIZATION;
UPDATE dp_pg.protected_tables SET table_budget = :'people_budget' WHERE relid = 'tb.people';

--
-- 5. drop_table_budget: the table is no longer limited as a whole; its rows stay
--
SELECT dp_pg.drop_table_budget('tb.orders') IS NOT NULL AS dropped;
SELECT table_budget IS NULL AS unbound FROM dp_pg.protected_tables WHERE relid = 'tb.orders';
SELECT count(*) AS orders_budgets FROM dp_pg.table_budgets WHERE relid = 'tb.orders';
SELECT kind FROM dp_pg.ledger WHERE table_budget IS NOT NULL AND kind <> 'charge'
  AND table_budget <> :'people_budget' ORDER BY id;
SET SESSION AUTHORIZATION tb_a;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.2)') FROM tb.orders$q$, 'tb.orders') AS orders_unlimited;
RESET SESSION AUTHORIZATION;

--
-- 6. Windows: a budget renews every period (here seconds); what a window
--    spent does not carry over, the lifetime totals keep everything
--
SELECT dp_pg.set_budget('tb_b', 1, 1e-6, renew => '3 seconds', renew_from => now()) IS NOT NULL AS windowed;
SELECT renew, window_start <= now() AND window_end = window_start + interval '3 seconds' AS in_window,
       charges, lifetime_charges > 0 AS history_kept
FROM dp_pg.budgets WHERE role = 'tb_b';
SET SESSION AUTHORIZATION tb_b;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.7)') FROM tb.people$q$) AS window_one;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.71)') FROM tb.people$q$) AS over_in_window_one;
RESET SESSION AUTHORIZATION;
SELECT pg_sleep(3.2);
SET SESSION AUTHORIZATION tb_b;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.72)') FROM tb.people$q$) AS window_two;
RESET SESSION AUTHORIZATION;
SELECT charges, round(epsilon_spent::numeric, 6) AS window_spent, lifetime_charges,
       round(lifetime_epsilon::numeric, 6) AS lifetime_epsilon
FROM dp_pg.budgets WHERE role = 'tb_b';
-- the same budget again (a new limit, the same period): its window is kept
SELECT window_start AS w_before FROM dp_pg.budgets WHERE role = 'tb_b' \gset
SELECT dp_pg.set_budget('tb_b', 2, 1e-6, renew => '3 seconds') IS NOT NULL AS raised;
SELECT window_start = :'w_before' AS same_window, charges, round(epsilon_spent::numeric, 6) AS window_spent
FROM dp_pg.budgets WHERE role = 'tb_b';
-- a table budget renews as well
SELECT dp_pg.set_table_budget('tb.people', 1, 1e-6, renew => '3 seconds', renew_from => now()) IS NOT NULL AS windowed;
SELECT charges, renew FROM dp_pg.table_budgets WHERE relid = 'tb.people';
SET SESSION AUTHORIZATION tb_a;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.8)') FROM tb.people$q$) AS table_window_one;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.3)') FROM tb.people$q$) AS table_over;
RESET SESSION AUTHORIZATION;
SELECT pg_sleep(3.2);
SET SESSION AUTHORIZATION tb_a;
SELECT tb.try($q$SELECT dp_count(1, 'laplace(epsilon=0.31)') FROM tb.people$q$) AS table_window_two;
RESET SESSION AUTHORIZATION;
SELECT charges, round(epsilon_spent::numeric, 6) AS window_spent, lifetime_charges FROM dp_pg.table_budgets
WHERE relid = 'tb.people';

--
-- 7. Reports: privacy loss per role and per table, per window
--
SELECT role, count(*) AS windows, sum(charges) AS charges, bool_and(epsilon_spent > 0) AS spent,
       count(window_start) AS renewing
FROM dp_pg.budget_windows WHERE role IN ('tb_a', 'tb_b') GROUP BY role ORDER BY role::text;
SELECT relid, count(*) AS windows, sum(charges) AS charges, max(roles) AS roles,
       bool_and(epsilon_spent > 0 OR epsilon_spent IS NULL) AS spent
FROM dp_pg.table_budget_windows WHERE relid IS NOT NULL GROUP BY relid ORDER BY relid::text;
-- a window's epsilon is what the budget filter certifies for its charges
SELECT round(dp_pg.composed_epsilon(e, 0, e * e / 2, NULL, NULL, 1e-6 ORDER BY e)::numeric, 6) AS basic
FROM (VALUES (0.25::float8), (0.5)) v(e);
SELECT dp_test.err('SELECT dp_pg.composed_epsilon(''NaN'', 0, NULL, NULL, NULL, 1e-6)') AS nan_row;
-- a plain role sees this database's table budgets; the reports show it its own rows (none)
SET SESSION AUTHORIZATION tb_plain;
SELECT count(*) AS table_budgets, (SELECT count(*) FROM dp_pg.table_budget_windows) AS table_windows
FROM dp_pg.table_budgets;
SELECT dp_test.err('SELECT dp_pg.set_table_budget(''tb.people'', 100, 0.1)') AS may_not_set;
RESET SESSION AUTHORIZATION;

--
-- clean up: the tables, the roles with their budgets, and this file's ledger rows
--
SELECT array_agg(table_budget) AS tb_budgets FROM dp_pg.ledger_entries
WHERE table_budget IS NOT NULL AND detail->>'table' LIKE 'tb.%' \gset
RESET dp_pg.answer_cache;
SET client_min_messages = warning;
DROP SCHEMA tb CASCADE;
RESET client_min_messages;
SELECT dp_pg.drop_budget('tb_a') IS NOT NULL, dp_pg.drop_budget('tb_b') IS NOT NULL;
DELETE FROM dp_pg.table_budget_limits WHERE budget = ANY (:'tb_budgets');
DELETE FROM dp_pg.ledger_entries WHERE table_budget = ANY (:'tb_budgets')
	OR role IN ('tb_a'::regrole, 'tb_b'::regrole) OR requested_by IN ('tb_a'::regrole, 'tb_b'::regrole);
DELETE FROM dp_pg.guard_refusal_log WHERE role IN ('tb_a'::regrole, 'tb_b'::regrole, 'tb_plain'::regrole);
DROP ROLE tb_a, tb_b, tb_plain, tb_owner;
SELECT count(*) AS table_budgets_left FROM dp_pg.table_budgets;
