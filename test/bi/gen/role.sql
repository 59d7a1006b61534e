-- test/bi/gen/role.sql — the analyst of one generator leg (psql -v role=gen_<leg>),
-- run as the superuser after test/bi/gen/shop.sql: a login role with a budget of
-- its own, as docs/dba.md sets one up, reading the shop's public dimension tables.
SET client_min_messages = warning;
CREATE ROLE :"role" LOGIN IN ROLE shop_readers;
SELECT dp_pg.set_budget(:'role', 1e6, 1e-2);
-- the mechanism of the analyst's plain aggregates (count, sum, avg ...)
ALTER ROLE :"role" SET dp_pg.default_mechanism = 'laplace(epsilon=1)';
-- a DBA's cluster keeps released answers (the test clusters switch it off)
ALTER ROLE :"role" SET dp_pg.answer_cache = on;
-- every statement the leg's library sends, for test/bi/gen/judge.py
ALTER ROLE :"role" SET log_statement = 'all';
