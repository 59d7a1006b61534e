#!/usr/bin/python3
"""test/bi/runner.py — the Tableau and Superset parts of the BI driver leg
(test/bi/run.sh): runs the statements of a corpus file (format in
test/bi/README.md) as the analyst through a real client driver and checks
each against its expected outcome; the ledger is read over a second
connection as the superuser (psycopg2), the exact answers through the same
driver as the superuser.

  runner.py tableau  CORPUS SOCKETDIR PORT DB ANALYST SUPERUSER   (psqlODBC via unixODBC, pyodbc, ? parameters)
  runner.py superset CORPUS SOCKETDIR PORT DB ANALYST SUPERUSER   (psycopg2, %s parameters)

Debian's python3 with python3-pyodbc / python3-psycopg2 (no pip).  Prints
"ok TOOL NAME ..." or "not ok TOOL NAME: REASON" per entry and ends with
"# TOOL: N passed, M failed, C charges".
"""
import datetime
import decimal
import os
import re
import sys

import psycopg2

# psqlODBC's Unicode driver (odbc-postgresql); run.sh finds it with dpkg -L
ODBC_DRIVER = os.environ.get("BI_ODBC_DRIVER", "/usr/lib/x86_64-linux-gnu/odbc/psqlodbcw.so")
OUTCOMES = ("answered", "answered-free", "probe", "refused")
PARAM_TYPES = ("int", "long", "double", "numeric", "string", "date", "timestamp", "bool")
DEFAULT_RUNS = 6


class Failure(Exception):
    pass


class Entry:
    def __init__(self, name, line):
        self.name, self.line = name, line
        self.expect = self.sql = self.gap = None
        self.conn = "default"
        self.runs = DEFAULT_RUNS
        self.sites = self.rows = self.columns = None
        self.params = []
        self.tol = None  # {column: tolerance}, "*" for every numeric column


def parse(path):
    entries, names, e, sql = [], set(), None, None
    lines = open(path, encoding="utf-8").read().split("\n")

    def close():
        if e is None:
            return
        if sql is None:
            raise SystemExit("%s:%d: entry %s has no --- line" % (path, e.line, e.name))
        s = "\n".join(sql).strip()
        if s.endswith(";"):
            s = s[:-1].strip()
        if not s or e.expect is None:
            raise SystemExit("%s:%d: entry %s has no SQL or no expect:" % (path, e.line, e.name))
        e.sql = s
        entries.append(e)

    for i, l in enumerate(lines, 1):
        if l.startswith("=== "):
            close()
            e, sql = Entry(l[4:].strip(), i), None
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", e.name) or e.name in names:
                raise SystemExit("%s:%d: bad or duplicate entry name %s" % (path, i, e.name))
            names.add(e.name)
            continue
        if e is None:
            if l.strip() and not l.startswith("#"):
                raise SystemExit("%s:%d: text before the first entry" % (path, i))
            continue
        if l.startswith("#"):
            continue  # a comment, also between SQL lines
        if sql is not None:
            sql.append(l)
            continue
        if l == "---":
            sql = []
            continue
        if not l.strip() or l.startswith("#"):
            continue
        if ":" not in l:
            raise SystemExit("%s:%d: expected 'key: value'" % (path, i))
        k, v = (x.strip() for x in l.split(":", 1))
        if k == "expect":
            if v not in OUTCOMES:
                raise SystemExit("%s:%d: unknown outcome %s" % (path, i, v))
            e.expect = v
        elif k == "param":
            t, _, val = v.partition(" ")
            if t not in PARAM_TYPES:
                raise SystemExit("%s:%d: unknown parameter type %s" % (path, i, t))
            e.params.append((t, val))
        elif k == "runs":
            e.runs = int(v)
        elif k == "conn":
            e.conn = v
        elif k == "sites":
            e.sites = int(v)
        elif k == "rows":
            e.rows = int(v)
        elif k == "columns":
            e.columns = [c.strip() for c in v.split(",")]
        elif k == "gap":
            e.gap = v
        elif k == "note":
            pass
        elif k == "tol":
            if "=" in v:
                e.tol = {}
                for kv in v.split(","):
                    c, _, t = kv.rpartition("=")
                    e.tol[c.strip()] = float(t)
            else:
                e.tol = {"*": float(v)}
        else:
            raise SystemExit("%s:%d: unknown key %s" % (path, i, k))
    close()
    return entries


def value(t, v):
    if t in ("int", "long"):
        return int(v)
    if t == "double":
        return float(v)
    if t == "numeric":
        return decimal.Decimal(v)
    if t == "date":
        return datetime.date.fromisoformat(v)
    if t == "timestamp":
        return datetime.datetime.fromisoformat(v)
    if t == "bool":
        return v.lower() == "true"
    return v


class Result:
    def __init__(self, names, rows):
        self.names, self.rows = names, rows


class Driver:
    """One tool's client driver: connections by variant, one execution of a statement."""

    def __init__(self, args):
        self.sock, self.port, self.db, self.analyst, self.superuser = args
        self.conns = {}

    def close_all(self):
        for c in self.conns.values():
            try:
                c.close()
            except Exception:
                pass


class Odbc(Driver):
    """Tableau: psqlODBC through unixODBC, DSN-less, ? parameters."""
    tool = "tableau"

    def __init__(self, args):
        super().__init__(args)
        import pyodbc
        self.pyodbc = pyodbc
        pyodbc.pooling = False

    def connect(self, variant, user):
        extra, autocommit = "", True
        if variant == "default":
            pass  # the driver's defaults: server-side prepared statements
        elif variant == "declarefetch":
            extra = "UseDeclareFetch=1;Fetch=2;"  # a cursor WITH HOLD, rows fetched 2 at a time
        elif variant == "noprepare":
            extra = "UseServerSidePrepare=0;"  # parameters put into the SQL by the driver
        elif variant == "txn":
            autocommit = False  # the driver's BEGIN before each statement
        elif variant == "generic":
            extra = "ConnSettings=SET plan_cache_mode TO force_generic_plan;"  # every plan generic
        else:
            raise Failure("unknown conn variant %s" % variant)
        cs = ("Driver=%s;Servername=%s;Port=%s;Database=%s;Uid=%s;Pwd=;%s"
              % (ODBC_DRIVER, self.sock, self.port, self.db, user, extra))
        c = self.pyodbc.connect(cs, autocommit=autocommit)
        if variant == "generic":
            mode = c.cursor().execute("SHOW plan_cache_mode").fetchone()[0]
            if mode != "force_generic_plan":
                raise Failure("ConnSettings did not set plan_cache_mode (%s)" % mode)
            if not autocommit:
                c.rollback()
        return c

    def sqlstate(self, x):
        if isinstance(x, self.pyodbc.Error) and x.args:
            return str(x.args[0])
        return None

    def errors(self):
        return (self.pyodbc.Error,)

    def cursor(self, c, variant):
        return c.cursor()

    def meta(self, cur, call):
        w = call.split()
        schema = w[1] if len(w) > 1 else None
        table = w[2] if len(w) > 2 else None
        if w[0] == "tables":
            return cur.tables(schema=schema, tableType="TABLE,VIEW")
        if w[0] == "columns":
            return cur.columns(table=table, schema=schema)
        if w[0] == "primaryKeys":
            return cur.primaryKeys(table, schema=schema)
        if w[0] == "foreignKeys":
            return cur.foreignKeys(table=table, schema=schema)
        if w[0] == "statistics":
            return cur.statistics(table, schema=schema, unique=False, quick=True)
        if w[0] == "getTypeInfo":
            return cur.getTypeInfo()
        raise Failure("unknown ODBC catalog call %s" % w[0])

    def params(self, e):
        return [value(t, v) for t, v in e.params]


class Psycopg(Driver):
    """Superset: psycopg2 (what SQLAlchemy's postgresql+psycopg2 dialect uses), %s parameters."""
    tool = "superset"

    def connect(self, variant, user):
        c = psycopg2.connect(host=self.sock, port=self.port, dbname=self.db, user=user,
                             application_name="Superset (dp_pg bi leg)")
        if variant in ("default", "named"):
            pass  # a transaction per statement, ended by a rollback (SQLAlchemy's pool reset)
        elif variant == "autocommit":
            c.autocommit = True
        else:
            raise Failure("unknown conn variant %s" % variant)
        return c

    def sqlstate(self, x):
        return getattr(x, "pgcode", None)

    def errors(self):
        return (psycopg2.Error,)

    named_cursors = 0

    def cursor(self, c, variant):
        if variant == "named":  # a server-side cursor (SQLAlchemy's stream_results)
            Psycopg.named_cursors += 1
            cur = c.cursor(name="bi_cursor_%d" % Psycopg.named_cursors)
            cur.itersize = 2
            return cur
        return c.cursor()

    def meta(self, cur, call):
        raise Failure("no catalog calls for psycopg2: write the SQL")

    def params(self, e):
        return tuple(value(t, v) for t, v in e.params)


class Runner:
    def __init__(self, drv):
        self.d = drv
        self.su = psycopg2.connect(host=drv.sock, port=drv.port, dbname=drv.db, user=drv.superuser,
                                   application_name="dp_pg bi leg (ledger)")
        self.su.autocommit = True
        self.truth_conn = None
        self.charges = 0

    def conn(self, variant):
        if variant not in self.d.conns:
            self.d.conns[variant] = self.d.connect(variant, self.d.analyst)
        return self.d.conns[variant]

    def last_id(self):
        with self.su.cursor() as c:
            c.execute("SELECT coalesce(max(id), 0) FROM dp_pg.ledger_entries")
            return c.fetchone()[0]

    def new_charges(self, since):
        with self.su.cursor() as c:
            c.execute("SELECT count(*), coalesce(min(jsonb_array_length(coalesce(detail->'sites', '[]'))), 0), "
                      "coalesce(max(jsonb_array_length(coalesce(detail->'sites', '[]'))), 0), coalesce(max(id), %s) "
                      "FROM dp_pg.ledger_entries WHERE role = %s::regrole AND kind = 'charge' AND id > %s",
                      (since, self.d.analyst, since))
            return c.fetchone()

    def execute(self, conn, e, variant):
        """one execution: a Result, or the driver's exception."""
        cur = self.d.cursor(conn, variant)
        try:
            if e.sql.startswith("@"):
                self.d.meta(cur, e.sql[1:].strip())
            elif e.params:
                cur.execute(e.sql, self.d.params(e))
            else:
                cur.execute(e.sql)
            rows = [tuple(r) for r in cur.fetchall()]
            names = [d[0] for d in cur.description] if cur.description else []
            cur.close()
            if not conn.autocommit:
                conn.rollback() if isinstance(self.d, Psycopg) else conn.commit()
            return Result(names, rows)
        except self.d.errors():
            try:
                cur.close()
            except Exception:
                pass
            if not conn.autocommit:
                conn.rollback()
            raise

    def truth(self, e):
        if self.truth_conn is None:
            self.truth_conn = self.d.connect("autocommit" if isinstance(self.d, Psycopg) else "default",
                                             self.d.superuser)
        return self.execute(self.truth_conn, e, "default")

    def run(self, e):
        conn = self.conn(e.conn)
        charged = e.expect == "answered"
        since = self.last_id()
        first = want = None
        for run in range(1, e.runs + 1):
            at = "run %d: " % run if e.runs > 1 else ""
            res, err = None, None
            try:
                res = self.execute(conn, e, e.conn)
            except self.d.errors() as x:
                err = x
            n, smin, smax, since = self.new_charges(since)
            self.charges += n
            if e.expect == "refused":
                if err is None:
                    raise Failure("%sanswered (%d rows), expected SQLSTATE 42501" % (at, len(res.rows)))
                if self.d.sqlstate(err) != "42501":
                    raise Failure("%sSQLSTATE %s (%s), expected 42501" % (at, self.d.sqlstate(err), err))
            elif err is not None:
                raise Failure("%serror %s: %s" % (at, self.d.sqlstate(err), err))
            if charged:
                if n != 1:
                    raise Failure("%s%d charges, expected exactly 1" % (at, n))
                if smin < 1:
                    raise Failure("%sthe charge lists no call sites" % at)
                if e.sites is not None and (smin != e.sites or smax != e.sites):
                    raise Failure("%sthe charge has %d call sites, expected %d" % (at, smin, e.sites))
            elif n != 0:
                raise Failure("%s%d charges, expected none" % (at, n))
            if err is not None:
                continue
            if e.expect == "answered" and not res.rows:
                raise Failure("%sno rows" % at)
            if e.expect == "probe":
                if res.rows:
                    raise Failure("%s%d rows from a probe" % (at, len(res.rows)))
                if not res.names or not all(res.names):
                    raise Failure("%sno column names from a probe" % at)
            if e.rows is not None and len(res.rows) != e.rows:
                raise Failure("%s%d rows, expected %d" % (at, len(res.rows), e.rows))
            if e.columns is not None and res.names != e.columns:
                raise Failure("%scolumns [%s], expected [%s]" % (at, ", ".join(res.names), ", ".join(e.columns)))
            if first is None:
                first = res
            if e.tol is not None:
                if want is None:
                    want = self.truth(e)
                self.compare(e, res, want, at)
        info = ["%d run%s" % (e.runs, "" if e.runs == 1 else "s")]
        if e.sql.startswith("@"):
            info.append("%d rows" % len(first.rows))
        if e.tol is not None:
            info.append("near the truth")
        if e.gap:
            info.append("known gap: " + e.gap)
        return ", ".join(info)

    @staticmethod
    def key(row):
        return "\x01".join(str(x) for x in row if not isinstance(x, (int, float, decimal.Decimal)) or isinstance(x, bool))

    def compare(self, e, got, want, at):
        if len(got.rows) != len(want.rows):
            raise Failure("%s%d rows, the exact answer has %d" % (at, len(got.rows), len(want.rows)))
        g, w = sorted(got.rows, key=self.key), sorted(want.rows, key=self.key)
        for gr, wr in zip(g, w):
            for col, x, y in zip(got.names, gr, wr):
                num = lambda v: isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)
                if num(x) and num(y):
                    t = e.tol.get(col, e.tol.get("*", 0.0))
                    if not abs(float(x) - float(y)) <= t:
                        raise Failure("%scolumn %s = %s in row %s, exact %s (tolerance %s)"
                                      % (at, col, x, self.key(gr), y, t))
                elif x != y:
                    raise Failure("%scolumn %s = %r, exact answer %r" % (at, col, x, y))


def main():
    if len(sys.argv) != 8 or sys.argv[1] not in ("tableau", "superset"):
        raise SystemExit(__doc__)
    drv = (Odbc if sys.argv[1] == "tableau" else Psycopg)(sys.argv[3:8])
    entries = parse(sys.argv[2])
    r = Runner(drv)
    passed = failed = 0
    for e in entries:
        try:
            info = r.run(e)
            print("ok %s %s (%s)" % (drv.tool, e.name, info))
            passed += 1
        except Failure as f:
            print("not ok %s %s: %s" % (drv.tool, e.name, str(f).replace("\n", " ")))
            failed += 1
        except Exception as x:
            print("not ok %s %s: harness: %s" % (drv.tool, e.name, repr(x).replace("\n", " ")))
            failed += 1
        sys.stdout.flush()
    drv.close_all()
    print("# %s: %d passed, %d failed, %d charges" % (drv.tool, passed, failed, r.charges))


if __name__ == "__main__":
    main()
