--
-- dp_pg configuration parameters
--
SHOW dp_pg.default_mechanism;
SET dp_pg.default_mechanism = 'laplace(epsilon=4)';
SHOW dp_pg.default_mechanism;
SELECT abs(dp_count(*) - 100) <= 6.25 AS close FROM generate_series(1, 100);
SET dp_pg.default_mechanism = ' LAPLACE(epsilon = 0.5) ';
SHOW dp_pg.default_mechanism;
SELECT abs(dp_count(*) - 100) <= 50 AS close FROM generate_series(1, 100);
-- bad values are refused and leave the setting unchanged
SET dp_pg.default_mechanism = 'laplace(epsilon=nan)';
SET dp_pg.default_mechanism = 'laplace(epsilon=-1)';
SET dp_pg.default_mechanism = 'laplace(scale=1)';
SET dp_pg.default_mechanism = 'nonsense';
SET dp_pg.default_mechanism = '';
SHOW dp_pg.default_mechanism;
-- transaction-scoped settings roll back
BEGIN;
SET LOCAL dp_pg.default_mechanism = 'laplace(epsilon=2)';
SHOW dp_pg.default_mechanism;
ROLLBACK;
SHOW dp_pg.default_mechanism;
RESET dp_pg.default_mechanism;
SHOW dp_pg.default_mechanism;
-- per-role defaults
CREATE ROLE dp_guc_role;
ALTER ROLE dp_guc_role SET dp_pg.default_mechanism = 'laplace(epsilon=0.25)';
ALTER ROLE dp_guc_role SET dp_pg.default_mechanism = 'laplace(epsilon=0)';
SELECT setconfig FROM pg_db_role_setting WHERE setrole = 'dp_guc_role'::regrole;
SET ROLE dp_guc_role;
RESET ROLE;
DROP ROLE dp_guc_role;
-- the dp_pg prefix is reserved
SET dp_pg.no_such_setting = 1;
-- (the test build's switches, -DDP_PG_TEST_SWITCHES, are listed apart: all
-- four on a test build, none on a release build)
SELECT name, context, vartype FROM pg_settings WHERE name LIKE 'dp_pg.%'
  AND name NOT IN ('dp_pg.debug_noiseless', 'dp_pg.debug_poison_charge', 'dp_pg.debug_unit_cells',
                   'dp_pg.debug_raw_operators') ORDER BY name;
SELECT count(*) IN (0, 4) AS test_switches_all_or_none,
       bool_and(context = 'superuser') IS NOT FALSE AS test_switches_superuser_only
FROM pg_settings WHERE name IN ('dp_pg.debug_noiseless', 'dp_pg.debug_poison_charge', 'dp_pg.debug_unit_cells',
                            'dp_pg.debug_raw_operators');
