--
-- partitions: protected partitioned tables and inheritance parents
-- (guard/partitions.c, common/protected.c).  protect() takes a partitioned
-- table with a sub-partitioned month and a default partition; an analyst
-- reads it through dp queries only, each partition (also one it holds
-- privileges on) refused uncharged; tables joining it are checked (one an
-- analyst owns is refused, also for the DBA), tables leaving it stay
-- protected with its declaration; an inheritance parent takes a child made
-- later.  Noisy values only as booleans.
--
\set VERBOSITY terse
CREATE SCHEMA pt;
CREATE ROLE pt_ana;
GRANT USAGE ON SCHEMA pt TO pt_ana;
CREATE TABLE pt.orders (id int NOT NULL, person int NOT NULL, day date NOT NULL,
	amount int NOT NULL CHECK (amount BETWEEN 0 AND 100)) PARTITION BY RANGE (day);
CREATE TABLE pt.orders_01 PARTITION OF pt.orders FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
CREATE TABLE pt.orders_02 PARTITION OF pt.orders FOR VALUES FROM ('2024-02-01') TO ('2024-03-01')
	PARTITION BY HASH (person);
CREATE TABLE pt.orders_02_h0 PARTITION OF pt.orders_02 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pt.orders_02_h1 PARTITION OF pt.orders_02 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE pt.orders_def PARTITION OF pt.orders DEFAULT;
INSERT INTO pt.orders SELECT g, g, date '2024-01-01' + g % 59, g % 101 FROM generate_series(1, 3000) g;
INSERT INTO pt.orders VALUES (5000, 17, '2031-05-05', 50);
SELECT dp_pg.set_budget('pt_ana', 1000, 1e-3);
-- a DBA's grant on a partition, before the protection
GRANT SELECT ON pt.orders_01 TO pt_ana;
GRANT SELECT ON pt.orders_02_h1 TO PUBLIC;
SELECT dp_pg.protect('pt.orders', 'person', 1, 1);
SELECT c.relname, c.relkind, c.relrowsecurity,
       EXISTS (SELECT 1 FROM aclexplode(c.relacl) a WHERE a.grantee IN (0, 'pt_ana'::regrole)) AS public_or_analyst
FROM pg_class c WHERE c.relnamespace = 'pt'::regnamespace AND c.relkind IN ('r', 'p') ORDER BY 1;
-- a later grant: the guard refuses the partition whatever its privileges
GRANT SELECT, INSERT ON pt.orders_02_h0 TO pt_ana;

SET SESSION AUTHORIZATION pt_ana;
-- the table: 3001 rows, one per person (epsilon 1: off by 100 with probability below 1e-40)
SELECT abs(dp_count(1, 'laplace(epsilon=1)') - 3001) < 100 AS whole,
       sum(amount) IS NOT NULL AS summed FROM pt.orders;
SELECT abs(dp_count(1, 'laplace(epsilon=1)') - 50) < 100 AS february_17th FROM pt.orders WHERE day = '2024-02-17';
SELECT dp_count(1, 'laplace(epsilon=1)') IS NOT NULL AS only_the_root FROM ONLY pt.orders;
-- each partition, refused and uncharged
SELECT dp_test.outcome(q) FROM (VALUES
	($$SELECT count(*) FROM pt.orders_01$$),
	($$SELECT dp_count(1, 'laplace(epsilon=1)') FROM pt.orders_02_h0$$),
	($$SELECT * FROM ONLY pt.orders_02$$),
	($$SELECT * FROM pt.orders_def$$),
	($$INSERT INTO pt.orders_02_h0 VALUES (1, 1, '2024-02-02', 1)$$),
	($$SELECT dp_count(1, 'laplace(epsilon=1)') FROM (SELECT person FROM pt.orders UNION ALL SELECT person FROM pt.orders_01) u$$),
	($$COPY pt.orders_01 TO '/dev/null'$$),
	($$ALTER TABLE pt.orders DETACH PARTITION pt.orders_def$$),
	($$CREATE TABLE pt.orders_03 PARTITION OF pt.orders FOR VALUES FROM ('2024-03-01') TO ('2024-04-01')$$),
	($$ANALYZE pt.orders_02_h1$$),
	($$SELECT dp_pg.synthesize('pt.orders_01', 'pg_temp.twin', 'laplace(epsilon=1)')$$)) t(q);
-- their sizes and numbers are hidden
SELECT pg_relation_size('pt.orders_01') IS NULL AS size_hidden, bool_and(reltuples IS NULL) AS reltuples_hidden
FROM pg_class WHERE relnamespace = 'pt'::regnamespace;
RESET SESSION AUTHORIZATION;

-- a table an analyst could shape cannot join (also for a superuser); a clean one can
CREATE TABLE pt.mine (LIKE pt.orders INCLUDING ALL);
ALTER TABLE pt.mine OWNER TO pt_ana;
ALTER TABLE pt.orders ATTACH PARTITION pt.mine FOR VALUES FROM ('2024-05-01') TO ('2024-06-01');
CREATE TABLE pt.granted (LIKE pt.orders INCLUDING ALL);
GRANT INSERT ON pt.granted TO pt_ana;
ALTER TABLE pt.orders ATTACH PARTITION pt.granted FOR VALUES FROM ('2024-05-01') TO ('2024-06-01');
REVOKE ALL ON pt.granted FROM pt_ana;
ALTER TABLE pt.orders ATTACH PARTITION pt.granted FOR VALUES FROM ('2024-05-01') TO ('2024-06-01');
CREATE TABLE pt.orders_03 PARTITION OF pt.orders FOR VALUES FROM ('2024-03-01') TO ('2024-04-01');
SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'pt.orders'::regclass ORDER BY inhrelid::regclass::text;

-- a table that leaves stays protected, with the declaration it had; a DETACH rolled back leaves nothing
SELECT dp_pg.set_domain('pt.orders', 'amount', 0, 80);
BEGIN;
ALTER TABLE pt.orders DETACH PARTITION pt.orders_01;
ROLLBACK;
ALTER TABLE pt.orders DETACH PARTITION pt.orders_01;
ALTER TABLE pt.orders_02 DETACH PARTITION pt.orders_02_h1;
SELECT p.relid, p.privacy_unit, p.max_groups_contributed, p.max_rows_per_unit, d.lower, d.upper
FROM dp_pg.protected_tables p LEFT JOIN dp_pg.column_domains d USING (relid)
WHERE p.relid::text LIKE 'pt.%' ORDER BY p.relid::text;
SET SESSION AUTHORIZATION pt_ana;
SELECT dp_test.outcome($$SELECT * FROM pt.orders_01$$) AS raw, dp_test.outcome($$SELECT * FROM pt.orders_02_h1$$) AS raw_h1;
SELECT dp_count(1, 'laplace(epsilon=1)') IS NOT NULL AS its_own_dp_query FROM pt.orders_01;
RESET SESSION AUTHORIZATION;

-- an inheritance parent: a child made later is protected with it
CREATE TABLE pt.events (id int NOT NULL, person int NOT NULL);
SELECT dp_pg.protect('pt.events', 'person', 1, 1);
CREATE TABLE pt.events_later () INHERITS (pt.events);
GRANT SELECT ON pt.events_later TO pt_ana;
SET SESSION AUTHORIZATION pt_ana;
SELECT dp_test.outcome($$SELECT * FROM pt.events_later$$) AS child;
SELECT dp_count(1, 'laplace(epsilon=1)') IS NOT NULL AS parent FROM pt.events;
RESET SESSION AUTHORIZATION;

-- clean up: the tables, and the roles of this file with their budgets and ledger rows
SET client_min_messages = warning;
DROP SCHEMA pt CASCADE;
RESET client_min_messages;
\set forget 'pt_ana'
\set forget_gone 0
\getenv abs_srcdir PG_ABS_SRCDIR
\set inc :abs_srcdir '/sql/forget_roles.inc'
\i :inc
