#!/usr/bin/python3
"""test/bi/gen/pgbouncer_leg.py — the pgbouncer leg: Superset's engine (the
sqlalchemy leg's questions, SQLAlchemy Core and psycopg2) connected through
pgbouncer in transaction pooling (Debian's pgbouncer 1.18, started by
test/bi/run.sh with two server connections, server_check_query = select 1),
as a deployment puts it between the tool and the server: every transaction may
run on another server session.  Also two clients whose transactions
interleave on the pool, and the error bars read in the answer's transaction.
Each question is one step judged by test/bi/gen/judge.py against
test/bi/gen/expect/pgbouncer.txt.

  pgbouncer_leg.py OUT SOCKETDIR PORT DB SUPERUSER ROLE PGBOUNCERPORT
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from legs import Leg  # noqa: E402
from sqlalchemy_leg import compiled, engine_for, questions, run_questions  # noqa: E402

# the charts asked through the pool (the sqlalchemy leg asks them all directly)
ASKED = ("big_number", "pie_by_region", "table_region_status", "bar_by_channel", "line_month_2024",
         "count_distinct_customers", "virtual_dataset_by_category", "samples", "series_limit_top3_regions",
         "custom_metric_revenue", "revenue_by_segment_join", "slid_avg_wages_by_sex")


def main():
    leg = Leg("pgbouncer", sys.argv[1:])
    if not leg.extra:
        raise SystemExit("pgbouncer_leg.py needs PGBOUNCERPORT")
    engine = engine_for(leg)
    def connect(rec):
        with engine.connect() as c:
            return c.exec_driver_sql("SELECT 1").fetchall()
    leg.step("connect", connect)
    qs = [(n, s) for n, s in questions() if n in ASKED]
    run_questions(leg, engine, qs, repeat=qs[0])
    by_name = dict(questions())

    def interleaved(rec):
        """two clients: A's transaction is open while B's runs; each its own dp query."""
        a, b = engine.connect(), engine.connect()
        try:
            ta = a.begin()
            ra = a.exec_driver_sql(compiled(engine, by_name["filter_in_status"])).fetchall()
            with b.begin():
                rb = b.exec_driver_sql(compiled(engine, by_name["customers_by_segment"])).fetchall()
            ta.commit()
            return ra + rb
        finally:
            a.close()
            b.close()
    leg.step("two_clients_interleaved", interleaved)

    def error_bars(rec):
        """the error bars of an answer, read in its own transaction (the same server session)."""
        with engine.connect() as c, c.begin():
            c.exec_driver_sql(compiled(engine, by_name["bar_sum_by_status"])).fetchall()
            return c.exec_driver_sql("SELECT aggregate, noise_sd, ci95_halfwidth FROM dp_pg.last_releases").fetchall()
    leg.step("error_bars_same_transaction", error_bars)
    engine.dispose()
    leg.done()


if __name__ == "__main__":
    main()
