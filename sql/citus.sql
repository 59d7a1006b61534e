--
-- Beside Citus dp_pg releases no dp answer (fails closed): Citus can run a
-- whole query, noise included, on its worker nodes, where this server's
-- ledger never charges it.  The suites install a stand-in extension named
-- citus (test/fixtures, test build's private server copy only); dp_pg finds
-- Citus by its extension in the database or its library preloaded.
--
CREATE ROLE citus_ana;
SELECT dp_pg.set_budget('citus_ana', 10, NULL) IS NOT NULL AS budget;
CREATE TABLE citus_t AS SELECT g AS id FROM generate_series(1, 100) g;
GRANT SELECT ON citus_t TO citus_ana;
SET ROLE citus_ana;
SELECT dp_count(id, 'laplace(epsilon=1)') IS NOT NULL AS released_before FROM citus_t;
PREPARE citus_q AS SELECT dp_sum(id, 0, 100, 'laplace(epsilon=1)') FROM citus_t;
RESET ROLE;
CREATE EXTENSION citus;
\set VERBOSITY sqlstate
-- refused for everyone, before anything is charged: 0A000
SET ROLE citus_ana;
SELECT dp_count(id, 'laplace(epsilon=1)') FROM citus_t;
SELECT id, dp_count(*) FROM citus_t GROUP BY id;
-- a statement prepared before Citus came
EXECUTE citus_q;
RESET ROLE;
SELECT dp_count(id, 'laplace(epsilon=1)') FROM citus_t;
\set VERBOSITY default
SELECT dp_count(id, 'laplace(epsilon=1)') FROM citus_t;
\set VERBOSITY sqlstate
-- plain SQL is not dp_pg's business
SELECT count(*) FROM citus_t;
-- one charge: the query before Citus
SELECT charges, epsilon_spent FROM dp_pg.budgets WHERE role = 'citus_ana'::regrole;
\set VERBOSITY default
DROP EXTENSION citus;
SET ROLE citus_ana;
SELECT dp_count(id, 'laplace(epsilon=1)') IS NOT NULL AS released_after FROM citus_t;
RESET ROLE;
SELECT charges, epsilon_spent FROM dp_pg.budgets WHERE role = 'citus_ana'::regrole;
SELECT dp_pg.drop_budget('citus_ana') IS NOT NULL AS dropped;
DROP TABLE citus_t;
DROP ROLE citus_ana;
