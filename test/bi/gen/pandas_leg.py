#!/usr/bin/python3
"""test/bi/gen/pandas_leg.py — the pandas leg: a notebook analyst's pandas.read_sql
(Debian's python3-pandas 1.5 on a SQLAlchemy 1.4 engine over psycopg2, and on a
bare psycopg2 connection), as the analyst.  pandas writes the SQL of
read_sql_table (after reflecting the table) and of its has_table check; the
analyst writes the rest, as text or as a SQLAlchemy Core selectable, with
pandas' parameters, chunks and date parsing.  Each question is one step judged
by test/bi/gen/judge.py against test/bi/gen/expect/pandas.txt.

  pandas_leg.py OUT SOCKETDIR PORT DB SUPERUSER ROLE
"""
import os
import sys
import warnings

import pandas as pd
import psycopg2
import sqlalchemy as sa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from legs import Leg  # noqa: E402


def main():
    leg = Leg("pandas", sys.argv[1:])
    engine = sa.create_engine("postgresql+psycopg2://%s@/%s?host=%s&port=%s" % (leg.role, leg.db, leg.sock, leg.port))

    def q(name, sql, **kw):
        def ask(rec):
            rec["sql"].append(str(sql))
            df = pd.read_sql_query(sql, engine, **kw)
            if "chunksize" in kw:
                df = pd.concat(list(df))
            rec["columns"] = list(df.columns)
            return df.to_dict("records")
        leg.step(name, ask)

    leg.step("connect", lambda rec: pd.read_sql_query("SELECT 1 AS one", engine).to_dict("records"))
    leg.step("has_table", lambda rec: [sa.inspect(engine).has_table("orders", schema="shop")])
    # pandas' own SELECT of every column, after reflecting the table
    leg.step("read_sql_table", lambda rec: pd.read_sql_table("orders", engine, schema="shop").to_dict("records"))
    leg.step("read_sql_table_columns", lambda rec: pd.read_sql_table(
        "orders", engine, schema="shop", columns=["region", "amount"]).to_dict("records"))
    q("count_by_region", "SELECT region, count(*) AS orders FROM shop.orders GROUP BY region ORDER BY region")
    q("monthly_revenue_parse_dates",
      "SELECT date_trunc('month', order_date) AS month, sum(amount) AS revenue FROM shop.orders "
      "GROUP BY 1 ORDER BY 1", parse_dates=["month"], index_col="month")
    q("params_since", "SELECT status, avg(amount) AS avg_amount FROM shop.orders "
      "WHERE order_date >= %(since)s GROUP BY status", params={"since": "2025-01-01"})
    q("chunks", "SELECT channel, count(*) AS orders FROM shop.orders GROUP BY channel", chunksize=1)
    orders = sa.table("orders", sa.column("region"), sa.column("amount"), sa.column("discount"), schema="shop")
    q("core_selectable", sa.select(orders.c.region, sa.func.sum(orders.c.amount).label("revenue"),
                                   sa.func.avg(orders.c.discount).label("avg_discount")).group_by(orders.c.region))
    q("revenue_per_unit_expression", "SELECT region, sum(amount * quantity) AS revenue FROM shop.orders GROUP BY region")
    q("slid_by_language", "SELECT language, count(*) AS n, avg(wages) AS wages, avg(education) AS education "
      "FROM cardata.slid GROUP BY language")
    q("slid_describe", "SELECT count(wages) AS n, avg(wages) AS mean, stddev(wages) AS std, min(wages) AS min, "
      "max(wages) AS max FROM cardata.slid")
    q("slid_quartiles", "SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY wages) AS q1, "
      "percentile_cont(0.75) WITHIN GROUP (ORDER BY wages) AS q3 FROM cardata.slid")
    q("slid_raw_for_histogram", "SELECT wages FROM cardata.slid WHERE wages IS NOT NULL")

    def dbapi(rec):  # pandas on a bare DBAPI connection (it warns, and works)
        c = psycopg2.connect(host=leg.sock, port=leg.port, dbname=leg.db, user=leg.role)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                df = pd.read_sql("SELECT sex, avg(age) AS age FROM cardata.slid GROUP BY sex", c)
            return df.to_dict("records")
        finally:
            c.close()
    leg.step("dbapi_connection", dbapi)
    q("count_by_region_again", "SELECT region, count(*) AS orders FROM shop.orders GROUP BY region ORDER BY region")
    engine.dispose()
    leg.done()


if __name__ == "__main__":
    main()
