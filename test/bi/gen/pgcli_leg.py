#!/usr/bin/python3
"""test/bi/gen/pgcli_leg.py — the pgcli leg: Debian's pgcli (3.5, on psycopg 3) as
an analyst uses it, driven through its own PGCli object instead of a terminal:
its connect, the completion refresher's catalog queries (a second connection,
waited for), the SQL of the backslash commands that pgspecial writes, and
queries the analyst types (pgcli splits a line into statements).  Each
question is one step judged by test/bi/gen/judge.py against
test/bi/gen/expect/pgcli.txt.

  pgcli_leg.py OUT SOCKETDIR PORT DB SUPERUSER ROLE
"""
import os
import shutil
import sys
import tempfile
import time

# pgcli's configuration, history and log in a directory of our own
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="dp_bi_pgcli.")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from legs import Leg  # noqa: E402
from pgcli.main import PGCli  # noqa: E402

COMMANDS = [
    ("list_databases", "\\l"),
    ("list_schemas", "\\dn"),
    ("list_tables", "\\dt shop.*"),
    ("describe_orders", "\\d shop.orders"),
    ("describe_orders_plus", "\\d+ shop.orders"),
    ("list_indexes", "\\di shop.*"),
    ("list_functions", "\\df dp_count"),
    ("my_budget", "select * from dp_pg.my_budget"),
    ("estimate_cost", "select * from dp_pg.estimate_cost('select count(*) from shop.orders')"),
    ("count_orders", "select count(*) from shop.orders"),
    ("revenue_by_region", "select region, sum(amount), avg(discount) from shop.orders group by region order by region"),
    ("two_statements", "select count(*) from shop.orders where status = 'placed'; select count(*) from cardata.slid"),
    ("wages_by_sex", "select sex, avg(wages) from cardata.slid group by sex"),
    ("star_limit", "select * from shop.orders limit 5"),
    ("explain_count", "explain select count(*) from shop.orders"),
    ("max_order_date", "select max(order_date) from shop.orders"),
    ("count_orders_again", "select count(*) from shop.orders"),
]


def main():
    leg = Leg("pgcli", sys.argv[1:])
    cli = PGCli(never_passwd_prompt=True, less_chatty=True)

    def connect(rec):
        cli.connect(database=leg.db, host=leg.sock, user=leg.role, port=leg.port)
        # the completion refresher's catalog queries, on a connection of its own
        cli.refresh_completions(persist_priorities="none")
        deadline = time.time() + 60
        while cli.completion_refresher.is_refreshing() and time.time() < deadline:
            time.sleep(0.05)
        if cli.completion_refresher.is_refreshing():
            raise RuntimeError("the completion refresher did not finish")
        return list(cli.completer.dbmetadata["tables"].get("shop", {}))
    leg.step("connect", connect)

    for name, text in COMMANDS:
        def run(rec, text=text):
            rec["sql"].append(text)
            output, query = cli._evaluate_command(text)
            lines = [l for chunk in output for l in str(chunk).split("\n") if l.strip()]
            if not query.successful:
                raise RuntimeError(" ".join(lines)[:1000])
            return lines
        leg.step(name, run)
    cli.pgexecute.conn.close()
    leg.done()
    shutil.rmtree(os.environ["XDG_CONFIG_HOME"], ignore_errors=True)


if __name__ == "__main__":
    main()
