--
-- Per-role budgets: every cell of the rollback matrix grows the ledger by
-- exactly the query's cost; refused and failed queries charge nothing.
--
CREATE ROLE dp_ana;
CREATE ROLE dp_team;
CREATE ROLE dp_member IN ROLE dp_team;
CREATE ROLE dp_other;
GRANT dp_other TO dp_ana;
CREATE TABLE dp_people AS SELECT g AS id, g % 10 AS region FROM generate_series(1, 1000) g;
GRANT SELECT ON dp_people TO dp_ana, dp_member, dp_other;
GRANT USAGE ON SCHEMA dp_test TO PUBLIC;

SELECT dp_pg.ledger_status();
SELECT dp_pg.set_budget('dp_ana', 5, 1e-6);
SELECT dp_pg.set_budget('dp_team', 10, NULL);
SELECT role, epsilon_limit, delta_limit, rho_limit, epsilon_spent, delta_spent, charges, accounting
FROM dp_pg.budgets WHERE role::text LIKE 'dp\_%' ORDER BY role::text;

-- ledger bookkeeping for the checks (superuser only)
CREATE TABLE dp_test.mark (role regrole PRIMARY KEY, n bigint, eps float8);
CREATE FUNCTION dp_test.set_mark() RETURNS void LANGUAGE sql AS $$
	DELETE FROM dp_test.mark;
	INSERT INTO dp_test.mark
	SELECT r::regrole, (SELECT count(*) FROM dp_pg.ledger e WHERE e.role = r::regrole AND kind = 'charge'),
	       (SELECT coalesce(sum(epsilon), 0) FROM dp_pg.ledger e WHERE e.role = r::regrole AND kind = 'charge')
	FROM unnest(ARRAY['dp_ana', 'dp_team']) r;
$$;
-- charges and epsilon added since the mark, in the ledger table; and whether the budget
-- view counts the same charges (those since the role's last reset)
CREATE FUNCTION dp_test.since_mark(r regrole, OUT charges bigint, OUT epsilon numeric, OUT view_agrees boolean)
LANGUAGE sql AS $$
	SELECT count(*) - m.n, round((coalesce(sum(e.epsilon), 0) - m.eps)::numeric, 9),
	       (SELECT b.charges FROM dp_pg.budgets b WHERE b.role = r) =
	       count(*) FILTER (WHERE e.id > coalesce((SELECT max(id) FROM dp_pg.ledger x
	                                                WHERE x.role = r AND x.kind = 'reset'), 0))
	FROM dp_test.mark m LEFT JOIN dp_pg.ledger e ON e.role = m.role AND e.kind = 'charge'
	WHERE m.role = r GROUP BY m.n, m.eps;
$$;

-- the rollback matrix (sql/rollback_matrix.inc) for each aggregate
\getenv abs_srcdir PG_ABS_SRCDIR
\cd :abs_srcdir
\set matrix 'sql/rollback_matrix.inc'
\set q 'SELECT dp_count(id, ''laplace(epsilon=0.01)'') FROM dp_people'
\i :matrix
\set q 'SELECT dp_sum(id, 0, 1000, ''laplace(epsilon=0.01)'') FROM dp_people'
\i :matrix
\set q 'SELECT dp_histogram(region, ARRAY[0, 1, 2, 3], ''laplace(epsilon=0.01)'') FROM dp_people'
\i :matrix

-- estimate_cost charges nothing
SELECT dp_test.set_mark();
SET ROLE dp_ana;
SELECT * FROM dp_pg.estimate_cost('SELECT dp_count(id, ''laplace(epsilon=0.25)''), dp_count(*) FROM dp_people');
SELECT * FROM dp_pg.estimate_cost('laplace(epsilon=0.25)'::dp_mechanism);
SELECT round(epsilon::numeric, 12) AS epsilon, delta, call_sites
FROM dp_pg.estimate_cost('SELECT region, dp_count(id, ''gaussian(epsilon=0.5, delta=1e-8)'') FROM dp_people GROUP BY region');
RESET ROLE;
SELECT * FROM dp_test.since_mark('dp_ana');

-- a query's cost is the sum over its call sites; groups compose in parallel;
-- an identical call used twice is one release
SELECT dp_test.set_mark();
SET ROLE dp_ana;
SELECT dp_count(id, 'laplace(epsilon=0.01)') IS NOT NULL AS a, dp_count(*) FILTER (WHERE id > 0) IS NOT NULL AS b FROM dp_people;
RESET ROLE;
SELECT * FROM dp_test.since_mark('dp_ana');
SELECT dp_test.set_mark();
SET ROLE dp_ana;
SELECT count(*) AS groups FROM (SELECT region, dp_count(id, 'laplace(epsilon=0.01)') FROM dp_people GROUP BY region) s;
SELECT n1 = n2 AS same_release FROM (SELECT dp_count(id, 'laplace(epsilon=0.01)') AS n1, dp_count(id, 'laplace(epsilon=0.01)') AS n2 FROM dp_people) s;
RESET ROLE;
SELECT * FROM dp_test.since_mark('dp_ana');

-- failing queries charge nothing
SELECT dp_test.set_mark();
SET ROLE dp_ana;
SELECT dp_test.err(q) AS error FROM unnest(ARRAY[
	'SELECT dp_count(id, ''laplace(epsilon=0)'') FROM dp_people',
	'SELECT dp_count(id, dp_laplace(id)) FROM dp_people',
	'SELECT dp_count(id, NULL::dp_mechanism) FROM dp_people',
	'SELECT dp_count(*) OVER () FROM dp_people'
]) q;
RESET ROLE;
SELECT * FROM dp_test.since_mark('dp_ana');

-- over budget: DP001, nothing charged, nothing released
SELECT dp_test.set_mark();
SET ROLE dp_ana;
SELECT dp_count(id, 'laplace(epsilon=5)') FROM dp_people;
SELECT dp_test.err('SELECT dp_count(id, ''laplace(epsilon=5)'') FROM dp_people') AS error;
-- what fits still runs
SELECT dp_count(id, 'laplace(epsilon=1)') IS NOT NULL AS answered FROM dp_people;
RESET ROLE;
SELECT * FROM dp_test.since_mark('dp_ana');

-- the analyst sees its own budget and ledger rows, nothing else, and writes nothing
SET ROLE dp_ana;
-- (exactly: dp_pg.budget_rows(); dp_pg.my_budget shows them to six significant digits)
SELECT role, epsilon_limit, round(epsilon_spent::numeric, 9) AS epsilon_spent,
       round(epsilon_remaining::numeric, 9) AS epsilon_remaining, charges, accounting
FROM dp_pg.budget_rows() WHERE role IN (SELECT dp_pg.charged_roles());
SELECT m.epsilon_spent = dp_pg.display_round(b.epsilon_spent) AS spent_shown_rounded,
       m.epsilon_remaining = dp_pg.display_round(b.epsilon_remaining) AS remaining_shown_rounded,
       m.epsilon_spent::text AS shown_spent
FROM dp_pg.my_budget m JOIN dp_pg.budget_rows() b USING (role);
SELECT count(*) AS rows_visible, bool_and(role = 'dp_ana'::regrole) AS own_only FROM dp_pg.ledger;
SELECT count(*) AS budgets_visible FROM dp_pg.budgets;
SELECT kind, epsilon, delta, detail -> 'sites' -> 0 ->> 'mechanism' AS mechanism,
       jsonb_array_length(detail -> 'sites' -> 0 -> 'rdp') AS rdp_orders
FROM dp_pg.ledger WHERE kind = 'charge' ORDER BY id LIMIT 1;
SELECT dp_test.err(q) AS error FROM unnest(ARRAY[
	'SELECT * FROM dp_pg.ledger_entries',
	'INSERT INTO dp_pg.ledger_entries (role, kind, requested_by) VALUES (1, ''reset'', 1)',
	'UPDATE dp_pg.ledger_entries SET epsilon = 0',
	'DELETE FROM dp_pg.ledger_entries',
	'TRUNCATE dp_pg.ledger_entries',
	'UPDATE dp_pg.budget_limits SET epsilon_limit = 1000',
	'SELECT dp_pg.set_budget(''dp_ana'', 1000, 1e-6)',
	'SELECT dp_pg.reset_budget(''dp_ana'')',
	'SELECT dp_pg.drop_budget(''dp_ana'')'
]) q;
RESET ROLE;

-- team budgets: a member's queries are charged to the team
SELECT dp_test.set_mark();
SET ROLE dp_member;
SELECT dp_count(id, 'laplace(epsilon=0.5)') IS NOT NULL AS answered FROM dp_people;
SELECT role FROM dp_pg.my_budget;
RESET ROLE;
SELECT * FROM dp_test.since_mark('dp_team');

-- SET ROLE and SECURITY DEFINER do not escape: the session user is charged
CREATE FUNCTION dp_test.definer_count() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS
	$$ SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM public.dp_people $$;
GRANT EXECUTE ON FUNCTION dp_test.definer_count() TO PUBLIC;
SELECT dp_test.set_mark();
SET SESSION AUTHORIZATION dp_ana;
SET ROLE dp_other;
SELECT current_user, session_user;
SELECT dp_count(id, 'laplace(epsilon=0.01)') IS NOT NULL AS answered FROM dp_people;
SELECT dp_test.definer_count() IS NOT NULL AS answered;
RESET ROLE;
RESET SESSION AUTHORIZATION;
SELECT * FROM dp_test.since_mark('dp_ana');

-- set_budget arguments: 22023 / 22004, nothing changed
SELECT dp_test.err(q) AS error FROM unnest(ARRAY[
	'SELECT dp_pg.set_budget(''dp_ana'', ''NaN'', 1e-6)',
	'SELECT dp_pg.set_budget(''dp_ana'', ''Infinity'', 1e-6)',
	'SELECT dp_pg.set_budget(''dp_ana'', 0, 1e-6)',
	'SELECT dp_pg.set_budget(''dp_ana'', -1, 1e-6)',
	'SELECT dp_pg.set_budget(''dp_ana'', 1, 1)',
	'SELECT dp_pg.set_budget(''dp_ana'', 1, -1e-9)',
	'SELECT dp_pg.set_budget(''dp_ana'', 1, ''NaN'')',
	'SELECT dp_pg.set_budget(''dp_ana'', 1, 1e-6, 0)',
	'SELECT dp_pg.set_budget(NULL, 1, 1e-6)',
	'SELECT dp_pg.set_budget(''no_such_role'', 1, 1e-6)'
]) q;
SELECT epsilon_limit, delta_limit FROM dp_pg.budgets WHERE role = 'dp_ana'::regrole;

-- a rho limit is a zCDP filter
SELECT dp_pg.set_budget('dp_other', NULL, NULL, 0.02);
SET ROLE dp_other;
SELECT dp_count(id, 'gaussian(rho=0.015)') IS NOT NULL AS answered FROM dp_people;
SELECT dp_test.err('SELECT dp_count(id, ''gaussian(rho=0.015)'') FROM dp_people') AS error;
RESET ROLE;
SELECT rho_limit, round(rho_spent::numeric, 9) AS rho_spent, epsilon_spent, charges FROM dp_pg.budgets WHERE role = 'dp_other'::regrole;

-- reset (logged) and drop
SELECT dp_pg.reset_budget('dp_ana');
SELECT charges, epsilon_spent FROM dp_pg.budgets WHERE role = 'dp_ana'::regrole;
SELECT kind FROM dp_pg.ledger WHERE role = 'dp_ana'::regrole ORDER BY id DESC LIMIT 1;
SELECT dp_pg.drop_budget('dp_other');
SELECT count(*) FROM dp_pg.budgets WHERE role = 'dp_other'::regrole;

-- (dp_ana is a member of dp_other, whose rho limit would refuse it: dropped above)
-- partition selection has an (epsilon, delta) guarantee but no Rényi curve:
-- it is charged with rho NULL, and its Renyi curve is its epsilon at every
-- order outside an event of probability its delta (rdp_delta): docs/privacy.md
SELECT dp_test.set_mark();
SET ROLE dp_ana;
SELECT jsonb_typeof(dp_histogram(region, 'gaussian(epsilon=0.1, delta=1e-8)')) AS released FROM dp_people;
RESET ROLE;
SELECT * FROM dp_test.since_mark('dp_ana');
SELECT epsilon, delta, rho IS NULL AS no_rho, rdp_delta, 0.1 = ALL (rdp) AS rdp_is_epsilon
FROM dp_pg.ledger WHERE role = 'dp_ana'::regrole AND kind = 'charge' ORDER BY id DESC LIMIT 1;


-- a delta limit of 0 is pure DP: charges without delta fit; a Gaussian, a
-- zCDP charge or partition selection is DP001 (delta), nothing charged
CREATE ROLE dp_pure;
GRANT SELECT ON dp_people TO dp_pure;
SELECT dp_pg.set_budget('dp_pure', 2, 0);
SELECT epsilon_limit, delta_limit FROM dp_pg.budgets WHERE role = 'dp_pure'::regrole;
SET ROLE dp_pure;
SELECT dp_count(id, 'laplace(epsilon=0.5)') IS NOT NULL AS answered FROM dp_people;
SELECT dp_count(id, 'gaussian(epsilon=0.5, delta=1e-12)') FROM dp_people;
SELECT dp_test.err(q) AS refused FROM unnest(ARRAY[
	'SELECT dp_count(id, ''gaussian(rho=0.01)'') FROM dp_people',
	'SELECT dp_histogram(region, ''gaussian(epsilon=0.1, delta=1e-12)'') FROM dp_people'
]) q;
SELECT dp_sum(region, 0, 10, 'laplace(epsilon=1.5)') IS NOT NULL AS answered FROM dp_people;
SELECT dp_test.err('SELECT dp_count(id, ''laplace(epsilon=0.01)'') FROM dp_people') AS refused_epsilon;
RESET ROLE;
SELECT charges, epsilon_spent, delta_spent FROM dp_pg.budgets WHERE role = 'dp_pure'::regrole;
-- a delta limit nearly spent by partition selection (which
-- composes by (epsilon, delta) only: no Renyi curve): another such query gets
-- no finite epsilon at the delta left, and the refusal says so (not
-- "Infinity"); a pure-epsilon query still fits
CREATE ROLE dp_dspent;
GRANT SELECT ON dp_people TO dp_dspent;
SELECT dp_pg.set_budget('dp_dspent', 5, 1e-6) IS NOT NULL AS budget;
SET ROLE dp_dspent;
SELECT dp_histogram(region, 'gaussian(epsilon=0.5, delta=5e-7)') IS NOT NULL AS answered FROM dp_people;
SELECT dp_histogram(region, 'gaussian(epsilon=0.5, delta=5e-7)') FROM dp_people;
SELECT dp_count(id, 'laplace(epsilon=0.5)') IS NOT NULL AS pure_still_fits FROM dp_people;
RESET ROLE;
SELECT charges, delta_spent FROM dp_pg.budgets WHERE role = 'dp_dspent'::regrole;
SELECT dp_pg.drop_budget('dp_dspent') IS NOT NULL AS dropped;
REVOKE ALL ON dp_people FROM dp_dspent;
-- (the OIDs of roles dropped here: their ledger rows go at the end, forget_roles.inc)
SELECT 'dp_dspent'::regrole::oid AS dspent_oid, 'dp_pure'::regrole::oid AS pure_oid \gset
DROP ROLE dp_dspent;
-- a role with a budget cannot be dropped before its budget; its ledger history stays
REVOKE ALL ON dp_people FROM dp_pure;
DROP ROLE dp_pure;
DROP ROLE IF EXISTS dp_no_such_role, dp_pure;
SELECT dp_pg.drop_budget('dp_pure');
DROP ROLE dp_pure;
-- (by name: the rows of a dropped role keep it in detail, and no role's OID;
-- from a database other than the ledger's the ledger worker converts them as
-- the drop commits, so wait for it)
SELECT set_config('dp_test.gone', :'pure_oid' || ',' || :'dspent_oid', false) IS NOT NULL AS noted;
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN NOT EXISTS (SELECT 1 FROM dp_pg.ledger e
		                      WHERE e.role::oid = ANY (string_to_array(current_setting('dp_test.gone'), ',')::oid[]));
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT count(*) AS history_rows, bool_and(e.role IS NULL AND e.detail->>'dropped_role' IN ('dp_dspent', 'dp_pure')) AS kept_by_name
FROM dp_pg.ledger e WHERE (e.detail->>'dropped_role_oid')::oid IN (:pure_oid, :dspent_oid) AND e.kind = 'charge';

-- per-query caps: the most one query of a role may spend, whatever is left
CREATE ROLE dp_capped;
GRANT SELECT ON dp_people TO dp_capped;
SELECT dp_test.err(q) AS error FROM unnest(ARRAY[
	'SELECT dp_pg.set_query_cap(NULL, 1)',
	'SELECT dp_pg.set_query_cap(''dp_capped'', 0)',
	'SELECT dp_pg.set_query_cap(''dp_capped'', -1)',
	'SELECT dp_pg.set_query_cap(''dp_capped'', ''NaN'')',
	'SELECT dp_pg.set_query_cap(''dp_capped'', ''Infinity'')',
	'SELECT dp_pg.set_query_cap(''dp_capped'', 1, 1)',
	'SELECT dp_pg.set_query_cap(''dp_capped'', 1, NULL, 0)'
]) q;
SELECT count(*) AS nothing_set FROM dp_pg.budgets WHERE role = 'dp_capped'::regrole;
-- a cap on a role without a budget gives it a budget without limits
SELECT dp_pg.set_query_cap('dp_capped', 0.5);
SELECT epsilon_limit, delta_limit, rho_limit, max_epsilon_per_query, max_delta_per_query, max_rho_per_query
FROM dp_pg.budgets WHERE role = 'dp_capped'::regrole;
-- set_budget keeps the caps, set_query_cap keeps the limits
SELECT dp_pg.set_budget('dp_capped', 10, 1e-6);
SELECT dp_pg.set_query_cap('dp_capped', 0.5, 1e-8);
SELECT epsilon_limit, delta_limit, max_epsilon_per_query, max_delta_per_query
FROM dp_pg.budgets WHERE role = 'dp_capped'::regrole;
SELECT kind, detail FROM dp_pg.ledger WHERE role = 'dp_capped'::regrole ORDER BY id;
SET ROLE dp_capped;
SELECT dp_count(id, 'laplace(epsilon=0.5)') IS NOT NULL AS answered_at_the_cap FROM dp_people;
SELECT dp_count(id, 'laplace(epsilon=0.6)') FROM dp_people;
SELECT dp_count(id, 'gaussian(epsilon=0.1, delta=1e-7)') FROM dp_people;
-- two calls of 0.3 are one query of 0.6
SELECT dp_count(id, 'laplace(epsilon=0.3)'), dp_count(region, 'laplace(epsilon=0.3)') FROM dp_people;
-- and the caps hold for estimate-free paths too: prepared statements
PREPARE capped AS SELECT dp_count(id, 'laplace(epsilon=0.7)') FROM dp_people;
EXECUTE capped;
DEALLOCATE capped;
SELECT dp_test.err('SELECT dp_pg.set_query_cap(''dp_capped'', 100)') AS analysts_cannot_lift_caps;
RESET ROLE;
SELECT charges, epsilon_spent FROM dp_pg.budgets WHERE role = 'dp_capped'::regrole;
-- all NULL removes the caps
SELECT dp_pg.set_query_cap('dp_capped', NULL);
SELECT max_epsilon_per_query IS NULL AND max_delta_per_query IS NULL AS no_caps, epsilon_limit
FROM dp_pg.budgets WHERE role = 'dp_capped'::regrole;

-- a WARNING when a charge makes a role pass 90% of a limit (once, on that charge)
SELECT dp_pg.reset_budget('dp_capped');
SELECT dp_pg.set_budget('dp_capped', 1, 1e-6, 0.5);
SET ROLE dp_capped;
SELECT dp_count(id, 'laplace(epsilon=0.5)') IS NOT NULL AS answered FROM dp_people;
SELECT dp_count(id, 'laplace(epsilon=0.4)') IS NOT NULL AS answered_past_90_percent FROM dp_people;
SELECT dp_count(id, 'laplace(epsilon=0.05)') IS NOT NULL AS answered_no_new_warning FROM dp_people;
RESET ROLE;
SELECT dp_pg.reset_budget('dp_capped');
SELECT dp_pg.set_budget('dp_capped', NULL, NULL, 0.5);
SET ROLE dp_capped;
SELECT dp_count(id, 'gaussian(rho=0.46)') IS NOT NULL AS answered_past_90_percent_of_rho FROM dp_people;
RESET ROLE;
-- the views take names: a stored regrole / regclass against an untyped literal
-- (in either order, = and <>); an unknown name is an error, as in a cast
SELECT count(*) AS by_name FROM dp_pg.budgets WHERE role = 'dp_capped';
SELECT count(*) AS by_name_reversed FROM dp_pg.budgets WHERE 'dp_capped' = role;
SELECT count(*) AS others FROM dp_pg.budgets WHERE role <> 'dp_capped' AND 'dp_capped' <> role AND role = 'dp_capped';
SELECT count(*) > 0 AS history FROM dp_pg.ledger WHERE role = 'dp_capped' AND requested_by = current_user::text::regrole;
SELECT 'pg_class'::regclass = 'pg_catalog.pg_class' AS table_by_name, 'pg_class'::regclass <> 'pg_proc' AS other_table,
       'pg_class'::regclass = '1259' AS by_number;
SELECT count(*) FROM dp_pg.budgets WHERE role = 'dp_no_such_role';
SELECT 'pg_class'::regclass = 'dp_no_such_table';
SELECT dp_pg.drop_budget('dp_capped');
REVOKE ALL ON dp_people FROM dp_capped;

-- Charges of every family compose in one budget, in any order: a
-- gaussian(rho) charge (no epsilon), an (epsilon, delta) charge, a pure
-- charge and key selection (no Renyi curve).  Each of the 24 orders runs from
-- a fresh budget of (1e9, 1e-6); before this was fixed, key selection after
-- a rho charge (and a rho charge after key selection) was refused whatever
-- the epsilon limit, as if the delta limit were spent.  (docs/privacy.md,
-- "The budget filter")
CREATE ROLE dp_mix;
GRANT SELECT ON dp_people TO dp_mix;
SELECT dp_pg.set_budget('dp_mix', 1e9, 1e-6) IS NOT NULL AS budget;
SET dp_pg.answer_cache = off;
CREATE TEMP TABLE mix_orders (perm int[], admitted int, charges bigint, spent float8, accounting text, refusal text);
DO $$
DECLARE
	q text[] := ARRAY[
		'SELECT dp_count(id, ''gaussian(rho=0.01)'') FROM dp_people',
		'SELECT dp_count(id, ''gaussian(epsilon=0.1, delta=1e-9)'') FROM dp_people',
		'SELECT dp_count(id, ''laplace(epsilon=0.1)'') FROM dp_people',
		'SELECT dp_histogram(region, ''gaussian(epsilon=0.1, delta=1e-9)'') FROM dp_people'];
	p int[];
	k int;
	n int;
	why text;
BEGIN
	FOR p IN SELECT ARRAY[a, b, c, d] FROM generate_series(1, 4) a, generate_series(1, 4) b, generate_series(1, 4) c,
	         generate_series(1, 4) d WHERE a <> b AND a <> c AND a <> d AND b <> c AND b <> d AND c <> d ORDER BY 1 LOOP
		PERFORM dp_pg.reset_budget('dp_mix');
		n := 0;
		why := NULL;
		FOREACH k IN ARRAY p LOOP
			SET ROLE dp_mix;
			BEGIN
				EXECUTE q[k];
				n := n + 1;
			EXCEPTION WHEN others THEN
				why := coalesce(why, SQLERRM);
			END;
			RESET ROLE;
		END LOOP;
		INSERT INTO mix_orders SELECT p, n, b.charges, b.epsilon_spent, b.accounting, why
		FROM dp_pg.budgets b WHERE b.role = 'dp_mix';
	END LOOP;
END $$;
SELECT count(*) AS orders, count(*) FILTER (WHERE admitted = 4 AND charges = 4) AS all_four_charged,
       bool_and(spent > 0.3 AND spent < 10) AS finite_epsilon, string_agg(DISTINCT accounting, ',') AS accounting,
       string_agg(DISTINCT refusal, '; ') AS refusals
FROM mix_orders;
-- one query holding a rho release and key selection is one valid charge: its
-- Renyi curve holds outside the key set's delta (rdp_delta), it states no epsilon
SELECT dp_pg.reset_budget('dp_mix') IS NOT NULL AS reset;
SET ROLE dp_mix;
SELECT dp_count(id, 'gaussian(rho=0.01)') IS NOT NULL AS counted,
       jsonb_typeof(dp_histogram(region, 'gaussian(epsilon=0.1, delta=1e-9)')) AS keys
FROM dp_people;
RESET ROLE;
SELECT epsilon IS NULL AS no_epsilon, delta, rdp_delta, rho IS NULL AS no_rho, rdp IS NOT NULL AS curve
FROM dp_pg.ledger WHERE role = 'dp_mix' AND kind = 'charge' ORDER BY id DESC LIMIT 1;
SELECT charges, epsilon_spent < 2 AS spent_small, accounting FROM dp_pg.budgets WHERE role = 'dp_mix';
-- a key set needs its delta, with every earlier charge's, within half the delta limit
SELECT dp_pg.set_budget('dp_mix', 1e9, 2e-9) IS NOT NULL AS budget;
SELECT dp_pg.reset_budget('dp_mix') IS NOT NULL AS reset;
SET ROLE dp_mix;
SELECT dp_count(id, 'gaussian(epsilon=0.1, delta=1e-9)') IS NOT NULL AS answered FROM dp_people;
SELECT dp_test.err('SELECT dp_histogram(region, ''gaussian(epsilon=0.1, delta=1e-9)'') FROM dp_people') AS key_set_after;
RESET ROLE;
RESET dp_pg.answer_cache;
REVOKE ALL ON dp_people FROM dp_mix;

-- the roles of this file, their budgets and ledger rows (dp_pure's and dp_dspent's too)
\set forget 'dp_ana dp_team dp_member dp_other dp_capped dp_mix'
\set forget_gone :pure_oid,:dspent_oid
-- (dp_pure's and dp_dspent's rows no longer name them: since their drop they
-- keep their old OIDs in detail, where forget_roles.inc does not look)
SELECT current_setting('dp_pg.ledger_database') AS budget_ledger_db, current_database() AS budget_home_db \gset
\c :"budget_ledger_db"
DELETE FROM dp_pg.ledger_entries WHERE (detail->>'dropped_role_oid')::oid IN (:forget_gone)
	OR (detail->>'dropped_requested_by_oid')::oid IN (:forget_gone);
\c :"budget_home_db"
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
