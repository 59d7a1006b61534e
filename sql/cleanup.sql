--
-- Last test of `make installcheck`: the suite left nothing behind on the
-- server (each test that made roles ends with sql/forget_roles.inc) — no
-- role, budget, ledger row, refused query or kept answer that was not there
-- before it (setup.sql wrote that down) — and the regression database goes
-- too, unless it is the ledger database (test/all.sh's throw-away cluster).
--
-- (two reads: every queued refusal is written; see forget_roles.inc)
SELECT count(*) >= 0 AS flushed FROM dp_pg.guard_refusals WHERE id < 0 \gset
SELECT count(*) >= 0 AS flushed FROM dp_pg.guard_refusals WHERE id < 0 \gset
SELECT (SELECT count(*) FROM pg_roles WHERE oid <> ALL (b.roles)) AS new_roles,
       (SELECT count(*) FROM dp_pg.budgets WHERE role::oid <> ALL (b.roles)) AS new_budgets,
       (SELECT count(*) FROM dp_pg.ledger WHERE id > b.ledger_id AND role::oid <> ALL (b.roles)) AS new_ledger_rows,
       (SELECT count(*) FROM dp_pg.guard_refusals
         WHERE id > b.refusal_id AND (role::oid <> ALL (b.roles) OR as_role::oid <> ALL (b.roles))) AS new_refusals,
       (SELECT count(*) FROM dp_pg.answer_cache
         WHERE roles::oid[]::text || ' ' || released_at <> ALL (b.answers)) AS new_answers
FROM public.dp_regress_before b;
DROP TABLE public.dp_regress_before;
SELECT current_database() <> current_setting('dp_pg.ledger_database') AS drop_db,
       current_database() AS regress_db, current_setting('dp_pg.ledger_database') AS ledger_db \gset
\if :drop_db
\c :"ledger_db"
DROP DATABASE :"regress_db";
\endif
