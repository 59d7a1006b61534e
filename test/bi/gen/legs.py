"""test/bi/gen/legs.py — the steps of a Python generator leg (sqlalchemy, pandas,
pgcli, pgbouncer): each question is one step between two marker statements
that the superuser sends (and the server logs), recorded as one JSON line for
test/bi/gen/judge.py (format there).

  leg = Leg("sqlalchemy", sys.argv[1:])      # OUT SOCKETDIR PORT DB SUPERUSER ROLE [PGBOUNCERPORT]
  leg.step("orders_count", lambda rec: ...)  # rec["sql"]: what the library generated
  leg.done()
"""
import json
import sys
import traceback

import psycopg2


class Leg:
    def __init__(self, name, argv):
        if len(argv) < 6:
            raise SystemExit("usage: %s OUT SOCKETDIR PORT DB SUPERUSER ROLE [PGBOUNCERPORT]" % name)
        self.name = name
        self.out_path, self.sock, self.port, self.db, self.su, self.role = argv[:6]
        self.extra = argv[6:]
        self.out = open(self.out_path, "w", encoding="utf-8")
        self.su_conn = psycopg2.connect(host=self.sock, port=self.port, dbname=self.db, user=self.su,
                                        application_name="dp_pg bi leg (ledger)")
        self.su_conn.autocommit = True
        with self.su_conn.cursor() as c:
            c.execute("SET log_statement = 'all'")  # the step markers
        self.names = set()

    def mark(self, step, which):
        with self.su_conn.cursor() as c:
            c.execute("SELECT /* dp_bi %s %s %s */ coalesce(max(id), 0) FROM dp_pg.ledger_entries"
                      % (self.name, step, which))
            return c.fetchone()[0]

    def step(self, name, fn):
        """run fn(rec) as one step; fn returns the rows (a list) or None; raising is an error."""
        if name in self.names:
            raise SystemExit("step %s twice" % name)
        self.names.add(name)
        rec = {"step": name, "sql": [], "error": None, "rows": None, "columns": None}
        rec["begin"] = self.mark(name, "begin")
        try:
            rows = fn(rec)
            if rows is not None and rec["rows"] is None:
                rec["rows"] = len(rows)
        except Exception as x:  # the library's error, as the analyst sees it
            rec["error"] = ("%s: %s" % (type(x).__name__, x)).strip()[:2000]
            if not getattr(x, "pgcode", None) and not getattr(getattr(x, "orig", None), "pgcode", None):
                rec["trace"] = traceback.format_exc()[-2000:]
        rec["end"] = self.mark(name, "end")
        self.out.write(json.dumps(rec, default=str) + "\n")
        self.out.flush()
        return rec

    def done(self):
        self.out.close()
        self.su_conn.close()
