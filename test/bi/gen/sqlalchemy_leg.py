#!/usr/bin/python3
"""test/bi/gen/sqlalchemy_leg.py — the sqlalchemy leg: Superset's query builder.

Superset builds every chart's query with SQLAlchemy Core (select(), func,
literal_column() for its engine spec's time grains and saved metrics, text()
for its time-range filters), compiles it with literal binds and runs the text
through the engine's psycopg2 connection; its dataset editor and SQL Lab read
the catalog through SQLAlchemy's inspector.  This leg does the same with
Debian's python3-sqlalchemy (1.4) and python3-psycopg2, as the analyst, on the
shop and on carData's SLID; each question is one step judged by
test/bi/gen/judge.py against test/bi/gen/expect/sqlalchemy.txt.

  sqlalchemy_leg.py OUT SOCKETDIR PORT DB SUPERUSER ROLE [PGBOUNCERPORT]

With PGBOUNCERPORT the engine connects through pgbouncer on 127.0.0.1 (the
pgbouncer leg imports the questions from here).
"""
import os
import sys

import sqlalchemy as sa
from sqlalchemy import and_, column, desc, func, literal_column, select, table, text

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from legs import Leg  # noqa: E402

# Superset's PostgresEngineSpec time grains ({col} replaced by the column)
TIME_GRAINS = {
    "P1D": "DATE_TRUNC('day', {col})",
    "P1W": "DATE_TRUNC('week', {col})",
    "P1M": "DATE_TRUNC('month', {col})",
    "P3M": "DATE_TRUNC('quarter', {col})",
    "P1Y": "DATE_TRUNC('year', {col})",
}

orders = table("orders", column("order_id"), column("customer_id"), column("product_id"), column("region"),
               column("order_date"), column("ordered_at"), column("amount"), column("quantity"),
               column("discount"), column("shipping"), column("status"), column("channel"), schema="shop")
customers = table("customers", column("customer_id"), column("region"), column("segment"),
                  column("birth_year"), column("loyalty"), column("signup_date"), schema="shop")
slid = table("slid", column("wages"), column("education"), column("age"), column("sex"), column("language"),
             schema="cardata")


def dttm(value):
    """Superset's PostgresEngineSpec.convert_dttm for a TIMESTAMP column."""
    return "TO_TIMESTAMP('%s 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')" % value


def time_range(col, since, until):
    return and_(literal_column(col) >= text(dttm(since)), literal_column(col) < text(dttm(until)))


def grain(g, col):
    return literal_column(TIME_GRAINS[g].format(col=col))


def metric_count():
    return literal_column("COUNT(*)").label("count")


def metric(agg, col):
    """an adhoc SIMPLE metric: AGG(col) labelled as Superset labels it."""
    return getattr(func, agg)(column(col)).label("%s(%s)" % (agg.upper(), col))


def questions():
    """(step, SQLAlchemy Core statement) — the charts, filters and previews."""
    q = []
    q.append(("big_number", select(metric_count()).select_from(orders).limit(50000)))
    q.append(("big_number_time_range", select(metric_count()).select_from(orders)
              .where(time_range("order_date", "2024-01-01", "2025-01-01")).limit(50000)))
    q.append(("pie_by_region", select(column("region").label("region"), metric_count()).select_from(orders)
              .group_by(column("region")).order_by(desc("count")).limit(100)))
    q.append(("bar_sum_by_status", select(column("status").label("status"), metric("sum", "amount"))
              .select_from(orders).group_by(column("status")).order_by(desc(literal_column('"SUM(amount)"')))
              .limit(10000)))
    q.append(("table_region_status", select(column("region").label("region"), column("status").label("status"),
                                            metric_count(), metric("sum", "amount"), metric("avg", "quantity"))
              .select_from(orders).group_by(column("region"), column("status")).order_by(desc("count"))
              .limit(10000)))
    q.append(("bar_by_channel", select(column("channel").label("channel"), metric_count()).select_from(orders)
              .group_by(column("channel")).order_by(desc("count")).limit(100)))
    for g, name in (("P1M", "line_month_2024"), ("P1W", "line_week_2024"), ("P1D", "line_day_last_30")):
        since, until = ("2024-01-01", "2025-01-01") if g != "P1D" else ("2025-12-01", "2025-12-31")
        q.append((name, select(grain(g, "order_date").label("order_date"), metric_count(), metric("sum", "amount"))
                  .select_from(orders).where(time_range("order_date", since, until))
                  .group_by(grain(g, "order_date")).order_by(desc(literal_column('"SUM(amount)"')))
                  .limit(10000)))
    q.append(("line_year_by_region", select(grain("P1Y", "order_date").label("order_date"),
                                            column("region").label("region"), metric("sum", "amount"))
              .select_from(orders).group_by(grain("P1Y", "order_date"), column("region")).limit(10000)))
    q.append(("count_distinct_customers", select(func.count(column("customer_id").distinct())
                                                 .label("COUNT_DISTINCT(customer_id)")).select_from(orders)))
    q.append(("filter_in_status", select(column("region").label("region"), metric("sum", "amount"))
              .select_from(orders).where(column("status").in_(["shipped", "delivered"]))
              .group_by(column("region")).limit(10000)))
    q.append(("filter_like_channel", select(metric_count()).select_from(orders)
              .where(column("channel").like("%eb%")).limit(50000)))
    q.append(("max_amount", select(metric("max", "amount")).select_from(orders)))
    q.append(("sum_shipping_declared_domain", select(metric("sum", "shipping")).select_from(orders)))
    # a virtual dataset: the orders with their product's category (a public dimension table)
    virtual = text("SELECT o.*, p.category FROM shop.orders o JOIN shop.products p ON p.product_id = o.product_id") \
        .columns(column("category"), column("amount"), column("discount")).subquery("virtual_table")
    q.append(("virtual_dataset_by_category", select(virtual.c.category.label("category"),
                                                    func.avg(virtual.c.discount).label("AVG(discount)"))
              .group_by(virtual.c.category).order_by(desc(literal_column('"AVG(discount)"'))).limit(10000)))
    # the series limit: the top 3 regions by revenue, joined back into the time series
    inner = select(column("region").label("region__"), func.sum(column("amount")).label("mme_inner__")) \
        .select_from(orders).group_by(column("region")).order_by(desc("mme_inner__")).limit(3).subquery("anon_1")
    q.append(("series_limit_top3_regions", select(grain("P1M", "order_date").label("order_date"),
                                                  orders.c.region.label("region"),
                                                  func.sum(orders.c.amount).label("SUM(amount)"))
              .select_from(orders.join(inner, orders.c.region == inner.c.region__))
              .group_by(grain("P1M", "order_date"), orders.c.region).limit(10000)))
    q.append(("min_order_date", select(metric("min", "order_date")).select_from(orders)))
    q.append(("stddev_amount", select(literal_column("STDDEV_SAMP(amount)").label("stddev")).select_from(orders)))
    q.append(("custom_metric_revenue", select(literal_column("SUM(amount * quantity)").label("revenue"))
              .select_from(orders)))
    q.append(("custom_metric_net", select(column("region").label("region"),
                                          literal_column("SUM(amount * (1.0 - discount / 100.0))").label("net"))
              .select_from(orders).group_by(column("region")).limit(10000)))
    q.append(("custom_dimension_big_order", select(literal_column("amount > 100.0").label("big"), metric_count())
              .select_from(orders).group_by(literal_column("amount > 100.0")).limit(10000)))
    q.append(("filter_values_region", select(column("region").label("region")).select_from(orders)
              .group_by(column("region")).order_by(column("region")).limit(1000)))
    q.append(("filter_values_channel", select(column("channel").label("channel")).select_from(orders)
              .group_by(column("channel")).order_by(column("channel")).limit(1000)))
    q.append(("samples", select(literal_column("*")).select_from(orders).limit(100)))
    q.append(("customers_by_segment", select(column("segment").label("segment"), metric_count())
              .select_from(customers).group_by(column("segment")).limit(10000)))
    q.append(("avg_age_expression", select(literal_column("AVG(2026 - birth_year)").label("avg_age"))
              .select_from(customers)))
    q.append(("revenue_by_segment_join", select(customers.c.segment.label("segment"),
                                                func.sum(orders.c.amount).label("SUM(amount)"))
              .select_from(orders.join(customers, orders.c.customer_id == customers.c.customer_id))
              .group_by(customers.c.segment).limit(10000)))
    q.append(("slid_avg_wages_by_sex", select(column("sex").label("sex"), metric("avg", "wages"),
                                              metric("avg", "education")).select_from(slid)
              .group_by(column("sex")).order_by(column("sex")).limit(10000)))
    q.append(("slid_count_by_language", select(column("language").label("language"), metric_count())
              .select_from(slid).group_by(column("language")).order_by(desc("count")).limit(100)))
    q.append(("slid_median_wages", select(literal_column("percentile_cont(0.5) WITHIN GROUP (ORDER BY wages)")
                                          .label("median")).select_from(slid)))
    q.append(("slid_samples", select(literal_column("*")).select_from(slid).limit(100)))
    # questions about customers, not rows, in SQLAlchemy Core: aggregates over a
    # per-customer subquery (the privacy unit customer_id)
    per_customer = select(column("customer_id"), func.count().label("n"), func.sum(column("amount")).label("revenue")) \
        .select_from(orders).group_by(column("customer_id")).subquery("per_customer")
    q.append(("orders_per_customer", select(func.avg(per_customer.c.n).label("avg_orders"))))
    q.append(("customers_by_order_count", select(per_customer.c.n, func.count().label("customers"))
              .group_by(per_customer.c.n).order_by(per_customer.c.n)))
    q.append(("median_revenue_per_customer", select(func.percentile_cont(0.5).within_group(per_customer.c.revenue)
                                                    .label("median_revenue"))))
    q.append(("distinct_products", select(func.count(column("product_id").distinct()).label("products"))
              .select_from(orders)))
    return q


def run_sql(engine, sql, rec):
    """Superset's execution: the compiled text on a pooled connection (its cursor, fetchall)."""
    with engine.connect() as conn:
        res = conn.exec_driver_sql(sql)
        rec["columns"] = list(res.keys())
        return res.fetchall()


def engine_for(leg):
    if leg.extra:  # through pgbouncer (TCP)
        url = "postgresql+psycopg2://%s@127.0.0.1:%s/%s" % (leg.role, leg.extra[0], leg.db)
    else:
        url = "postgresql+psycopg2://%s@/%s?host=%s&port=%s" % (leg.role, leg.db, leg.sock, leg.port)
    # Superset's engine: pool_pre_ping (SELECT 1 on checkout); application_name as it sets it
    return sa.create_engine(url, pool_pre_ping=True, connect_args={"application_name": "Superset"})


def compiled(engine, stmt):
    return str(stmt.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))


def run_questions(leg, engine, qs, repeat=None):
    for name, stmt in qs:
        def ask(rec, stmt=stmt):
            sql = compiled(engine, stmt)
            rec["sql"].append(sql)
            return run_sql(engine, sql, rec)
        leg.step(name, ask)
    if repeat:  # a dashboard refresh: the same chart again
        name, stmt = repeat
        leg.step(name + "_again", lambda rec: run_sql(engine, compiled(engine, stmt), rec))


def main():
    leg = Leg("sqlalchemy", sys.argv[1:])
    engine = engine_for(leg)

    def connect(rec):
        with engine.connect() as conn:  # the dialect's first connect: version, schema, isolation probes
            return conn.exec_driver_sql("SELECT 1").fetchall()
    leg.step("connect", connect)

    insp = {}

    def inspector(rec):
        insp["i"] = sa.inspect(engine)
        return insp["i"].get_schema_names()
    leg.step("list_schemas", inspector)
    leg.step("list_tables", lambda rec: sa.inspect(engine).get_table_names(schema="shop"))
    leg.step("list_views", lambda rec: sa.inspect(engine).get_view_names(schema="shop"))

    def reflect(rec):
        t = sa.Table("orders", sa.MetaData(), schema="shop", autoload_with=engine)
        return list(t.columns)
    leg.step("reflect_orders", reflect)

    def dataset_metadata(rec):
        i = sa.inspect(engine)
        return (i.get_pk_constraint("orders", schema="shop")["constrained_columns"]
                + [fk["referred_table"] for fk in i.get_foreign_keys("orders", schema="shop")]
                + [ix["name"] for ix in i.get_indexes("orders", schema="shop")]
                + [i.get_table_comment("orders", schema="shop")["text"]])
    leg.step("dataset_metadata", dataset_metadata)

    def virtual_probe(rec):  # Superset's "sync columns" of a virtual dataset: the query with LIMIT 1... as 0 rows
        sql = "SELECT * FROM (SELECT region, amount, order_date FROM shop.orders WHERE status = 'returned') " \
              "AS virtual_table LIMIT 0"
        rec["sql"].append(sql)
        return run_sql(engine, sql, rec)
    leg.step("virtual_dataset_columns", virtual_probe)

    qs = questions()
    run_questions(leg, engine, qs, repeat=qs[0])
    engine.dispose()
    leg.done()


if __name__ == "__main__":
    main()
