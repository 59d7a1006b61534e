#!/usr/bin/python3
"""test/bi/gen/judge.py — judges one generator leg of the BI leg (test/bi/README.md,
"Generator legs") against its expectation file.

  judge.py LEG EXPECT STEPS SERVERLOG SOCKETDIR PORT DB SUPERUSER ROLE [--flip]

A leg program (test/bi/gen/<leg>.*) asks its questions through a real SQL
generator and its real driver, as the analyst ROLE, one *step* per question,
and writes one JSON line per step into STEPS:

  {"step": NAME, "begin": ID, "end": ID, "error": MESSAGE|null, "rows": N,
   "columns": [...], "sql": [the SQL the library generated, for the record]}

BEGIN and END are the largest ledger id before and after the step, read by the
leg as SUPERUSER with the statements  SELECT /* dp_bi LEG STEP begin */ ... ;
the server logs those markers, and every statement of ROLE (log_statement =
all, log_line_prefix '%m [%p] %u %e '), so the statements the library sent in
a step — its probes, catalog queries, SETs, savepoints — are the ROLE's log
entries between the step's two markers, with the SQLSTATE of each error.

An expectation line is  NAME OUTCOME [ARGS]  (# starts a comment):

  answered C [C ...] [rows=N]
                       one C per charge, in ledger order: "2" is a charge of 2 call
                       sites of the role's default mechanism, "2+p" adds the partition
                       selection (dp_pg.partition_mechanism), "1+3/3" three sites of a
                       third of the default mechanism each (a STDDEV's three moments);
                       every site's mechanism family and cost, and the charge's epsilon
                       and delta, must be exactly these; rows=N: the answer has N rows
  free                 no charge (probes, catalog queries, cached answers)
  refused SQLSTATE WHY the step failed with SQLSTATE, nothing charged: a refusal a
                       privacy system must make (raw rows, ...)
  todo SQLSTATE FEATURE: WHY
                       refused today, uncharged, but a better system answers it
                       once FEATURE lands (sqlexpr, releases, or other: a bug)

In every step no statement of ROLE may fail but the refused one, and no
statement may be charged outside a step.  Prints "ok LEG NAME (...)" or
"not ok LEG NAME: REASON" per step, the leg's counts, and
"# LEG: P passed, F failed, C charges".  With --flip, rewrites the todo lines
whose steps are answered (or free) now into what was observed.
"""
import json
import re
import sys

import psycopg2

LOG_ENTRY = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ \[(\d+)\] (\S*) ([0-9A-Z]{5}) "
                       r"(LOG|ERROR|WARNING|NOTICE|INFO|DETAIL|HINT|CONTEXT|STATEMENT|FATAL|PANIC|DEBUG\d?):  (.*)$")
FEATURES = ("sqlexpr", "releases", "other")


class Expect:
    def __init__(self, name, kind, args, line, text):
        self.name, self.kind, self.args, self.line, self.text = name, kind, args, line, text
        self.sqlstate = self.feature = self.why = None
        self.charges = []
        self.rows = None
        if kind == "answered":
            if args and args[-1].startswith("rows="):
                self.rows = int(args[-1][5:])
                args = args[:-1]
            if not args:
                raise ValueError("answered needs the call sites of each charge")
            for a in args:
                m = re.fullmatch(r"(\d+)(\+\d+/\d+)?(\+p)?", a)
                if not m:
                    raise ValueError("bad charge %r (N, N+M/K, N+p or N+M/K+p)" % a)
                self.charges.append(a)
        elif kind == "free":
            if args:
                raise ValueError("free takes no arguments")
        elif kind in ("refused", "todo"):
            if not args or not re.fullmatch(r"[0-9A-Z]{5}", args[0]):
                raise ValueError("%s needs a SQLSTATE" % kind)
            self.sqlstate = args[0]
            self.why = " ".join(args[1:])
            if kind == "todo":
                f = args[1].rstrip(":") if len(args) > 1 else ""
                if f not in FEATURES or not args[1].endswith(":"):
                    raise ValueError("todo needs 'FEATURE:' with FEATURE one of %s" % ", ".join(FEATURES))
                self.feature = f
                self.why = " ".join(args[2:])
            if not self.why:
                raise ValueError("%s needs a reason" % kind)
        else:
            raise ValueError("unknown outcome %s" % kind)


def parse_expect(path):
    out, lines = {}, open(path, encoding="utf-8").read().split("\n")
    for i, l in enumerate(lines, 1):
        body = l.split("#", 1)[0].strip()
        if not body:
            continue
        w = body.split()
        if len(w) < 2:
            raise SystemExit("%s:%d: expected 'STEP OUTCOME ...'" % (path, i))
        if w[0] in out:
            raise SystemExit("%s:%d: step %s twice" % (path, i, w[0]))
        try:
            out[w[0]] = Expect(w[0], w[1], w[2:], i, l)
        except ValueError as x:
            raise SystemExit("%s:%d: %s" % (path, i, x))
    return out, lines


def parse_log(path, leg, role):
    """the role's log entries per step: {step: [(kind, sqlstate, text)]}, and those outside steps."""
    steps, current, outside = {}, None, []
    marker = re.compile(r"/\* dp_bi %s (\S+) (begin|end) \*/" % re.escape(leg))
    entry = None
    for l in open(path, encoding="utf-8", errors="replace"):
        l = l.rstrip("\n")
        m = LOG_ENTRY.match(l)
        if not m:
            if entry is not None:
                entry[2].append(l)  # a continuation line of a multi-line statement
            continue
        pid, user, sqlstate, level, text = m.groups()
        entry = None
        mk = marker.search(text) if level == "LOG" else None
        if mk:
            current = mk.group(1) if mk.group(2) == "begin" else None
            if current is not None:
                steps.setdefault(current, [])
            continue
        if user != role:
            continue
        entry = [level, sqlstate, [text]]
        (steps[current] if current is not None else outside).append(entry)
    return ({k: [(e[0], e[1], "\n".join(e[2])) for e in v] for k, v in steps.items()},
            [(e[0], e[1], "\n".join(e[2])) for e in outside])


def statements(entries):
    """the SQL of the statements logged (log_statement = all)."""
    out = []
    for level, _, text in entries:
        if level != "LOG":
            continue
        m = re.match(r"(?:statement|execute [^:]*): (.*)", text, re.S)
        if m:
            out.append(m.group(1).strip())
    return out


def errors(entries):
    return [(st, text) for level, st, text in entries if level in ("ERROR", "FATAL")]


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def main():
    args = [a for a in sys.argv[1:] if a != "--flip"]
    flip = "--flip" in sys.argv[1:]
    if len(args) != 9:
        raise SystemExit(__doc__)
    leg, expect_path, steps_path, log_path, sock, port, db, su, role = args
    expect, expect_lines = parse_expect(expect_path)
    observed = [json.loads(l) for l in open(steps_path, encoding="utf-8") if l.strip()]
    logged, outside = parse_log(log_path, leg, role)

    conn = psycopg2.connect(host=sock, port=port, dbname=db, user=su, application_name="dp_pg bi judge")
    conn.autocommit = True
    cur = conn.cursor()
    # the role's default mechanism (ALTER ROLE ... SET) and the partition mechanism,
    # and what one call site of each costs
    cur.execute("SELECT coalesce((SELECT substr(c, strpos(c, '=') + 1) FROM pg_db_role_setting d, unnest(d.setconfig) c "
                "                 WHERE d.setrole = %s::regrole AND c LIKE 'dp\\_pg.default\\_mechanism=%%'), "
                "                current_setting('dp_pg.default_mechanism')), current_setting('dp_pg.partition_mechanism')",
                (role,))
    default_mech, part_mech = cur.fetchone()
    cost = {}
    for kind, mech in (("default", default_mech), ("partition", part_mech)):
        cur.execute("SELECT %s::dp_mechanism::text, epsilon, delta FROM dp_pg.estimate_cost(%s::dp_mechanism, 1)",
                    (mech, mech))
        text_, eps, delta = cur.fetchone()
        cost[kind] = (text_.split("(")[0], float(eps), float(delta))
    cur.execute("SELECT id, epsilon, delta, detail->'sites' FROM dp_pg.ledger_entries "
                "WHERE role = %s::regrole AND kind = 'charge' ORDER BY id", (role,))
    ledger = cur.fetchall()
    conn.close()

    passed = failed = 0
    counts = {"answered": 0, "free": 0, "refused": 0, "todo": 0}
    todo_by = {f: 0 for f in FEATURES}
    seen_charges = set()
    n_statements = 0
    flips = {}

    def report(ok, name, text):
        nonlocal passed, failed
        if ok:
            print("ok %s %s (%s)" % (leg, name, text))
            passed += 1
        else:
            print("not ok %s %s: %s" % (leg, name, text.replace("\n", " ")))
            failed += 1

    def observed_outcome(charges, failed, err_state):
        if failed:
            return "refused %s" % err_state if err_state else "error (not from the server)"
        if not charges:
            return "free"
        return "answered " + " ".join(c for c in charges)

    # the transcript: every step's statements, as the server logged them
    transcript = open(steps_path + ".transcript", "w", encoding="utf-8")
    for o in observed:
        name = o["step"]
        e = expect.get(name)
        entries = logged.get(name, [])
        sent = statements(entries)
        n_statements += len(sent)
        errs = errors(entries)
        transcript.write("=== %s (%s rows%s)\n" % (name, o.get("rows"), ", error: " + o["error"] if o.get("error") else ""))
        for level, st, text in entries:
            transcript.write("  %s %s %s\n" % (level, st, text.replace("\n", "\n      ")))
        mine = [r for r in ledger if o["begin"] < r[0] <= o["end"]]
        seen_charges.update(r[0] for r in mine)
        # each charge as "N" or "N+p", checked against the two mechanisms
        shapes, bad = [], []
        for rid, eps, delta, sites in mine:
            n_def = n_part = 0
            split = {}          # K -> sites of 1/K of the default mechanism
            s_eps = s_delta = 0.0
            for s in sites or []:
                # a call site of the default mechanism or the partition selection: its
                # family and its cost (on a table with a privacy unit the ledger shows
                # the mechanism split over the unit's groups, and the whole cost)
                kind = "partition" if s.get("aggregate") == "partition selection" else "default"
                family, c_eps, c_delta = cost[kind]
                k = round(c_eps / float(s.get("epsilon", -1))) if float(s.get("epsilon", -1)) > 0 else 0
                if kind == "default" and k >= 2 and str(s.get("mechanism", "")).split("(")[0] == family and \
                        close(float(s.get("epsilon")) * k, c_eps) and close(float(s.get("delta", -1)) * k, c_delta):
                    split[k] = split.get(k, 0) + 1      # a share of the mechanism (derived.c's moments)
                elif str(s.get("mechanism", "")).split("(")[0] != family or \
                        not close(float(s.get("epsilon", -1)), c_eps) or not close(float(s.get("delta", -1)), c_delta):
                    bad.append("charge %d: call site %s with mechanism %s costs (%s, %s), expected a %s site of (%s, %s)"
                               % (rid, s.get("aggregate"), s.get("mechanism"), s.get("epsilon"), s.get("delta"),
                                  kind, c_eps, c_delta))
                elif kind == "partition":
                    n_part += 1
                else:
                    n_def += 1
                s_eps += float(s.get("epsilon", 0))
                s_delta += float(s.get("delta", 0))
            if n_part > 1:
                bad.append("charge %d: %d partition selections" % (rid, n_part))
            if not close(float(eps), s_eps) or not close(float(delta), s_delta):
                bad.append("charge %d: epsilon %s delta %s, its call sites add up to %s, %s" % (rid, eps, delta, s_eps, s_delta))
            shapes.append("%d%s%s" % (n_def, "".join("+%d/%d" % (split[k], k) for k in sorted(split)),
                                      "+p" if n_part else ""))
        err_state = errs[-1][0] if (o.get("error") is not None and errs) else None
        seen = observed_outcome(shapes, o.get("error") is not None, err_state)
        if e is None:
            report(False, name, "no expectation in %s (observed: %s)" % (expect_path, seen))
            continue
        why = []
        if not o.get("marked", True) or name not in logged:
            why.append("the step's markers are not in the server log")
        if e.kind in ("answered", "free"):
            if o.get("error") is not None:
                why.append("error %s: %s" % (err_state or "(not from the server)", o["error"]))
            elif errs:
                why.append("a statement failed: %s %s" % errs[0])
            if e.kind == "answered":
                if not o.get("rows"):
                    why.append("no rows")
                if shapes != e.charges:
                    why.append("charges [%s], expected [%s]" % (", ".join(shapes) or "none", " ".join(e.charges)))
                if e.rows is not None and o.get("rows") != e.rows:
                    why.append("%s rows, expected %d" % (o.get("rows"), e.rows))
            elif mine:
                why.append("%d charges, expected none" % len(mine))
            why.extend(bad)
        else:
            if o.get("error") is None:
                if e.kind == "todo" and not errs and not bad and shapes:
                    flips[name] = seen
                    why.append("answered now (%s): flip the todo (%s) to '%s'" % (e.feature, e.why, seen))
                else:
                    why.append("no error (%d rows, charges [%s]), expected SQLSTATE %s" % (o.get("rows") or 0, ", ".join(shapes), e.sqlstate))
            elif err_state != e.sqlstate:
                why.append("error %s (%s), expected SQLSTATE %s" % (err_state or "(not from the server)", o["error"], e.sqlstate))
            if mine:
                why.append("%d charges for a refused step" % len(mine))
            for st, text in errs[:-1]:
                why.append("another statement failed too: %s %s" % (st, text))
        if why:
            report(False, name, "; ".join(why))
            continue
        counts[e.kind] += 1
        if e.kind == "answered":
            info = "answered, charges [%s]" % " ".join(shapes)
        elif e.kind == "free":
            info = "free"
        elif e.kind == "refused":
            info = "refused as required, %s: %s" % (e.sqlstate, e.why)
        else:
            todo_by[e.feature] += 1
            info = "todo, refused today (%s), should be answered once %s: %s" % (e.sqlstate, e.feature, e.why)
        report(True, name, "%s; %d statement%s sent" % (info, len(sent), "" if len(sent) == 1 else "s"))
        if name == "connect":
            for s in sent:
                print("#   %s on connect: %s" % (leg, " ".join(s.split())[:160]))

    names = {o["step"] for o in observed}
    for name, e in expect.items():
        if name not in names:
            report(False, name, "expected (%s line %d) but the leg did not run it" % (expect_path, e.line))
    stray = [r[0] for r in ledger if r[0] not in seen_charges]
    stray_err = errors(outside)
    if stray or stray_err:
        report(False, "ledger", "%d charges of %s outside every step%s" % (
            len(stray), role, "; errors outside the steps: %s" % stray_err[:3] if stray_err else ""))
    else:
        report(True, "ledger", "%d charges of %s, each within its step; no statement failed outside the steps"
               % (len(ledger), role))

    if flip and flips:
        for name, seen in flips.items():
            e = expect[name]
            old = expect_lines[e.line - 1]
            expect_lines[e.line - 1] = "%s %s  # was todo (%s): %s" % (name, seen, e.feature, e.why)
            print("# %s: flipped %s: %s -> %s" % (leg, name, old.strip(), seen))
        open(expect_path, "w", encoding="utf-8").write("\n".join(expect_lines))

    print("# %s: %d questions, %d statements sent: %d answered, %d free, %d refused as required, "
          "%d todo (%s)" % (leg, len(observed), n_statements, counts["answered"], counts["free"],
                            counts["refused"], counts["todo"],
                            ", ".join("%s %d" % (f, todo_by[f]) for f in FEATURES)))
    print("# %s: %d passed, %d failed, %d charges" % (leg, passed, failed, len(ledger)))


if __name__ == "__main__":
    main()
