// test/bi/Runner.java — the Metabase part of the BI driver leg (test/bi/run.sh):
// runs the statements of a corpus file (test/bi/corpus/metabase.txt, format in
// test/bi/README.md) as the analyst through the PostgreSQL JDBC driver, the
// way Metabase does (a PreparedStatement per run, bound parameters, max rows
// 2000), and checks each against its expected outcome; the ledger and the
// exact answers are read over a second connection, as the superuser.
//
//   java -cp /usr/share/java/postgresql.jar Runner.java CORPUS HOST PORT DB ANALYST SUPERUSER
//
// Prints "ok metabase NAME ..." or "not ok metabase NAME: REASON" per entry and
// ends with "# metabase: N passed, M failed, C charges".
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.*;
import java.time.LocalDate;
import java.util.*;

public class Runner {
	static final String TOOL = "metabase";
	static final int DEFAULT_RUNS = 10;

	static class Entry {
		String name, expect, sql, conn = "default", gap;
		int runs = DEFAULT_RUNS, line;
		Integer sites, rows;
		List<String[]> params = new ArrayList<>();
		Map<String, Double> tol;
		Double tolAll;
		List<String> columns;
	}

	static class Failure extends Exception {
		Failure(String m) { super(m); }
	}

	static String host, port, db, analyst, superuser;
	static Connection su;
	static final Map<String, Connection> conns = new HashMap<>();
	static long charges = 0;

	public static void main(String[] a) throws Exception {
		if (a.length != 6) {
			System.err.println("usage: Runner CORPUS HOST PORT DB ANALYST SUPERUSER");
			System.exit(2);
		}
		host = a[1]; port = a[2]; db = a[3]; analyst = a[4]; superuser = a[5];
		List<Entry> entries = parse(Path.of(a[0]));
		Properties sp = new Properties();
		sp.setProperty("user", superuser);
		sp.setProperty("ApplicationName", "dp_pg bi leg (superuser)");
		su = DriverManager.getConnection(url(), sp);
		int passed = 0, failed = 0;
		for (Entry e : entries) {
			try {
				String info = run(e);
				System.out.println("ok " + TOOL + " " + e.name + (info.isEmpty() ? "" : " (" + info + ")"));
				passed++;
			} catch (Failure f) {
				System.out.println("not ok " + TOOL + " " + e.name + ": " + f.getMessage().replace('\n', ' '));
				failed++;
			} catch (Exception x) {
				System.out.println("not ok " + TOOL + " " + e.name + ": harness: " + x.toString().replace('\n', ' '));
				failed++;
			}
			System.out.flush();
		}
		System.out.println("# " + TOOL + ": " + passed + " passed, " + failed + " failed, " + charges + " charges");
	}

	static String url() {
		return "jdbc:postgresql://" + host + ":" + port + "/" + db;
	}

	// ---- the corpus
	static List<Entry> parse(Path p) throws Exception {
		List<String> lines = Files.readAllLines(p);
		List<Entry> out = new ArrayList<>();
		Set<String> names = new HashSet<>();
		Entry e = null;
		StringBuilder sql = null;
		for (int i = 0; i <= lines.size(); i++) {
			String l = i < lines.size() ? lines.get(i) : null;
			if (l == null || l.startsWith("=== ")) {
				if (e != null) {
					if (sql == null)
						throw new Exception(p + ":" + e.line + ": entry " + e.name + " has no --- line");
					String s = sql.toString().strip();
					if (s.endsWith(";")) s = s.substring(0, s.length() - 1).strip();
					if (s.isEmpty()) throw new Exception(p + ":" + e.line + ": entry " + e.name + " has no SQL");
					e.sql = s;
					if (e.expect == null) throw new Exception(p + ":" + e.line + ": entry " + e.name + " has no expect:");
					out.add(e);
				}
				if (l == null) break;
				e = new Entry();
				e.name = l.substring(4).strip();
				e.line = i + 1;
				if (!e.name.matches("[A-Za-z0-9_.-]+") || !names.add(e.name))
					throw new Exception(p + ":" + (i + 1) + ": bad or duplicate entry name " + e.name);
				sql = null;
				continue;
			}
			if (e == null) {
				if (l.isBlank() || l.startsWith("#")) continue;
				throw new Exception(p + ":" + (i + 1) + ": text before the first entry");
			}
			if (l.startsWith("#")) continue;	// a comment, also between SQL lines
			if (sql != null) {
				sql.append(l).append('\n');
				continue;
			}
			if (l.equals("---")) {
				sql = new StringBuilder();
				continue;
			}
			if (l.isBlank()) continue;
			int c = l.indexOf(':');
			if (c < 0) throw new Exception(p + ":" + (i + 1) + ": expected 'key: value'");
			String k = l.substring(0, c).strip(), v = l.substring(c + 1).strip();
			switch (k) {
			case "expect":
				if (!List.of("answered", "answered-free", "probe", "refused").contains(v))
					throw new Exception(p + ":" + (i + 1) + ": unknown outcome " + v);
				e.expect = v; break;
			case "param": {
				int s = v.indexOf(' ');
				String t = s < 0 ? v : v.substring(0, s), val = s < 0 ? "" : v.substring(s + 1);
				if (!List.of("int", "long", "double", "numeric", "string", "date", "timestamp", "bool").contains(t))
					throw new Exception(p + ":" + (i + 1) + ": unknown parameter type " + t);
				e.params.add(new String[] {t, val});
				break;
			}
			case "runs": e.runs = Integer.parseInt(v); break;
			case "conn": e.conn = v; break;
			case "sites": e.sites = Integer.parseInt(v); break;
			case "rows": e.rows = Integer.parseInt(v); break;
			case "columns": e.columns = Arrays.asList(v.split("\\s*,\\s*")); break;
			case "gap": e.gap = v; break;
			case "note": break;
			case "tol":
				if (v.contains("=")) {
					e.tol = new HashMap<>();
					for (String kv : v.split("\\s*,\\s*")) {
						int q = kv.lastIndexOf('=');
						e.tol.put(kv.substring(0, q).strip(), Double.parseDouble(kv.substring(q + 1).strip()));
					}
				} else e.tolAll = Double.parseDouble(v);
				break;
			default: throw new Exception(p + ":" + (i + 1) + ": unknown key " + k);
			}
		}
		return out;
	}

	// ---- connections: Metabase's settings, and variants of the driver's
	static Connection conn(String variant) throws Exception {
		Connection c = conns.get(variant);
		if (c != null) return c;
		Properties p = new Properties();
		p.setProperty("user", analyst);
		p.setProperty("ApplicationName", "Metabase v0.50.0 [dp_pg bi leg]");
		boolean cursor = false;
		switch (variant) {
		case "default": break;						// prepareThreshold=5: server-prepared from the 5th run
		case "pt1": p.setProperty("prepareThreshold", "1"); break;	// server-prepared from the first run
		case "generic":							// and every plan generic
			p.setProperty("prepareThreshold", "1");
			p.setProperty("options", "-c plan_cache_mode=force_generic_plan");
			break;
		case "cursor": cursor = true; break;		// read-only transaction, rows fetched 2 at a time
		case "text": p.setProperty("binaryTransfer", "false"); break;
		default: throw new Failure("unknown conn variant " + variant);
		}
		c = DriverManager.getConnection(url(), p);
		if (cursor) {
			c.setAutoCommit(false);
			c.setReadOnly(true);
		}
		conns.put(variant, c);
		return c;
	}

	// ---- the ledger, read as the superuser
	static long lastId() throws SQLException {
		try (Statement s = su.createStatement();
		     ResultSet r = s.executeQuery("SELECT coalesce(max(id), 0) FROM dp_pg.ledger_entries")) {
			r.next();
			return r.getLong(1);
		}
	}

	// new charges of the analyst since id `since`: {count, min sites, max sites, max id}
	static long[] newCharges(long since) throws SQLException {
		try (PreparedStatement s = su.prepareStatement(
			"SELECT count(*), coalesce(min(jsonb_array_length(coalesce(detail->'sites', '[]'))), 0), "
			+ "coalesce(max(jsonb_array_length(coalesce(detail->'sites', '[]'))), 0), coalesce(max(id), ?) "
			+ "FROM dp_pg.ledger_entries WHERE role = ?::regrole AND kind = 'charge' AND id > ?")) {
			s.setLong(1, since);
			s.setString(2, analyst);
			s.setLong(3, since);
			try (ResultSet r = s.executeQuery()) {
				r.next();
				return new long[] {r.getLong(1), r.getLong(2), r.getLong(3), r.getLong(4)};
			}
		}
	}

	// server-side prepared statements of the analyst's session, but for this
	// query and the driver's own BEGIN / COMMIT: {custom plans, generic plans}
	static long[] plans(Connection c) throws SQLException {
		try (Statement s = c.createStatement();
		     ResultSet r = s.executeQuery("SELECT coalesce(sum(custom_plans), 0), coalesce(sum(generic_plans), 0) FROM pg_prepared_statements "
			+ "WHERE statement NOT LIKE '%pg_prepared_statements%' AND statement !~* '^\\s*(begin|commit|rollback|start|set|show)\\y'")) {
			r.next();
			long[] v = {r.getLong(1), r.getLong(2)};
			if (!c.getAutoCommit()) c.commit();
			return v;
		}
	}

	static void bind(PreparedStatement ps, List<String[]> params) throws SQLException {
		int i = 1;
		for (String[] p : params) {
			String v = p[1];
			switch (p[0]) {
			case "int": ps.setInt(i, Integer.parseInt(v)); break;
			case "long": ps.setLong(i, Long.parseLong(v)); break;
			case "double": ps.setDouble(i, Double.parseDouble(v)); break;
			case "numeric": ps.setBigDecimal(i, new BigDecimal(v)); break;
			case "string": ps.setString(i, v); break;
			case "date": ps.setObject(i, LocalDate.parse(v)); break;
			case "timestamp": ps.setTimestamp(i, Timestamp.valueOf(v)); break;
			case "bool": ps.setBoolean(i, Boolean.parseBoolean(v)); break;
			}
			i++;
		}
	}

	static class Result {
		List<String> names = new ArrayList<>(), types = new ArrayList<>();
		List<Object[]> rows = new ArrayList<>();
	}

	static Result read(ResultSet r) throws SQLException {
		Result res = new Result();
		ResultSetMetaData md = r.getMetaData();
		int n = md.getColumnCount();
		for (int i = 1; i <= n; i++) {
			res.names.add(md.getColumnLabel(i));
			res.types.add(md.getColumnTypeName(i));
		}
		while (r.next()) {
			Object[] row = new Object[n];
			for (int i = 1; i <= n; i++) row[i - 1] = r.getObject(i);
			res.rows.add(row);
		}
		return res;
	}

	// one execution of the entry's statement: its rows, or its SQLException
	static Result execute(Connection c, Entry e) throws Exception {
		if (e.sql.startsWith("@")) return meta(c, e.sql.substring(1).strip());
		try (PreparedStatement ps = c.prepareStatement(e.sql)) {
			ps.setMaxRows(2000);
			if (!c.getAutoCommit()) ps.setFetchSize(2);
			bind(ps, e.params);
			Result res;
			try (ResultSet r = ps.executeQuery()) {
				res = read(r);
			}
			if (!c.getAutoCommit()) c.commit();
			return res;
		} catch (SQLException x) {
			if (!c.getAutoCommit()) c.rollback();
			throw x;
		}
	}

	// the table picker's calls of the driver's DatabaseMetaData: "@getColumns public visits"
	static Result meta(Connection c, String call) throws Exception {
		String[] w = call.split("\\s+");
		DatabaseMetaData md = c.getMetaData();
		String a1 = w.length > 1 ? w[1] : null, a2 = w.length > 2 ? w[2] : null;
		ResultSet r;
		switch (w[0]) {
		case "getSchemas": r = md.getSchemas(); break;
		case "getTables": r = md.getTables(null, a1, a2 == null ? "%" : a2, new String[] {"TABLE", "PARTITIONED TABLE", "VIEW", "FOREIGN TABLE", "MATERIALIZED VIEW"}); break;
		case "getColumns": r = md.getColumns(null, a1, a2, "%"); break;
		case "getPrimaryKeys": r = md.getPrimaryKeys(null, a1, a2); break;
		case "getImportedKeys": r = md.getImportedKeys(null, a1, a2); break;
		case "getIndexInfo": r = md.getIndexInfo(null, a1, a2, false, true); break;
		case "getTablePrivileges": r = md.getTablePrivileges(null, a1, a2); break;
		case "getTypeInfo": r = md.getTypeInfo(); break;
		default: throw new Failure("unknown DatabaseMetaData call " + w[0]);
		}
		try {
			Result res = read(r);
			if (!c.getAutoCommit()) c.commit();
			return res;
		} finally {
			r.close();
		}
	}

	static String run(Entry e) throws Exception {
		Connection c = conn(e.conn);
		boolean charged = e.expect.equals("answered");
		long[] plans0 = plans(c);
		Result first = null, want = null;
		long since = lastId();
		for (int run = 1; run <= e.runs; run++) {
			String at = e.runs > 1 ? "run " + run + ": " : "";
			Result res = null;
			SQLException err = null;
			try {
				res = execute(c, e);
			} catch (SQLException x) {
				err = x;
			}
			long[] ch = newCharges(since);
			since = ch[3];
			charges += ch[0];
			if (e.expect.equals("refused")) {
				if (err == null) throw new Failure(at + "answered (" + (res == null ? 0 : res.rows.size()) + " rows), expected SQLSTATE 42501");
				if (!"42501".equals(err.getSQLState()))
					throw new Failure(at + "SQLSTATE " + err.getSQLState() + " (" + err.getMessage() + "), expected 42501");
			} else if (err != null) {
				throw new Failure(at + "error " + err.getSQLState() + ": " + err.getMessage());
			}
			if (charged) {
				if (ch[0] != 1) throw new Failure(at + ch[0] + " charges, expected exactly 1");
				if (ch[1] < 1) throw new Failure(at + "the charge lists no call sites");
				if (e.sites != null && (ch[1] != e.sites || ch[2] != e.sites))
					throw new Failure(at + "the charge has " + ch[1] + " call sites, expected " + e.sites);
			} else if (ch[0] != 0) {
				throw new Failure(at + ch[0] + " charges, expected none");
			}
			if (err != null) continue;
			if (e.expect.equals("answered") && res.rows.isEmpty()) throw new Failure(at + "no rows");
			if (e.expect.equals("probe")) {
				if (!res.rows.isEmpty()) throw new Failure(at + res.rows.size() + " rows from a probe");
				if (res.names.isEmpty()) throw new Failure(at + "no columns from a probe");
				for (int i = 0; i < res.names.size(); i++)
					if (res.names.get(i) == null || res.names.get(i).isEmpty() || res.types.get(i) == null || res.types.get(i).isEmpty())
						throw new Failure(at + "column " + (i + 1) + " has no name or type");
			}
			if (e.rows != null && res.rows.size() != e.rows)
				throw new Failure(at + res.rows.size() + " rows, expected " + e.rows);
			if (e.columns != null && !res.names.equals(e.columns))
				throw new Failure(at + "columns " + res.names + ", expected " + e.columns);
			if (first == null) first = res;
			if (e.tol != null || e.tolAll != null) {
				if (want == null) want = truth(e);
				compare(e, res, want, at);
			}
		}
		StringBuilder info = new StringBuilder();
		info.append(e.runs).append(e.runs == 1 ? " run" : " runs");
		if (e.sql.startsWith("@")) info.append(", ").append(first.rows.size()).append(" rows");
		if (!e.sql.startsWith("@") && !e.expect.equals("refused")) {
			long[] plans1 = plans(c);
			long custom = plans1[0] - plans0[0], generic = plans1[1] - plans0[1];
			info.append(", server-prepared ").append(custom + generic).append(" (generic ").append(generic).append(")");
			// the driver must have switched to a server-side prepared statement
			// (prepareThreshold), and the server to a generic plan after five
			// custom ones (at once without parameters, or with force_generic_plan)
			if (e.runs >= 6 && custom + generic == 0)
				throw new Failure("never executed as a server-side prepared statement in " + e.runs + " runs");
			if (e.expect.equals("answered") && e.runs >= 10 && generic == 0)
				throw new Failure("no generic plan in " + e.runs + " runs");
			if (e.conn.equals("generic") && e.runs >= 2 && generic == 0)
				throw new Failure("no generic plan under plan_cache_mode = force_generic_plan");
		}
		if (e.tol != null || e.tolAll != null) info.append(", near the truth");
		if (e.gap != null) info.append(", known gap: ").append(e.gap);
		return info.toString();
	}

	// ---- the exact answer: the same statement as the superuser (plain aggregates stay plain)
	static Result truth(Entry e) throws Exception {
		return execute(su, e);
	}

	static boolean numeric(Object o) {
		return o instanceof Number;
	}

	static String key(Object[] row) {
		StringBuilder b = new StringBuilder();
		for (Object o : row) if (!numeric(o)) b.append(o).append('\u0001');
		return b.toString();
	}

	static void compare(Entry e, Result got, Result want, String at) throws Failure {
		if (got.rows.size() != want.rows.size())
			throw new Failure(at + got.rows.size() + " rows, the exact answer has " + want.rows.size());
		List<Object[]> g = new ArrayList<>(got.rows), w = new ArrayList<>(want.rows);
		Comparator<Object[]> byKey = Comparator.comparing(Runner::key);
		g.sort(byKey);
		w.sort(byKey);
		for (int i = 0; i < g.size(); i++) {
			for (int j = 0; j < got.names.size(); j++) {
				Object x = g.get(i)[j], y = w.get(i)[j];
				String col = got.names.get(j);
				if (numeric(x) && numeric(y)) {
					Double t = e.tol != null && e.tol.containsKey(col) ? e.tol.get(col) : e.tolAll;
					if (t == null) t = 0.0;
					double dx = ((Number) x).doubleValue(), dy = ((Number) y).doubleValue();
					if (!(Math.abs(dx - dy) <= t))
						throw new Failure(at + "column " + col + " = " + x + " in row " + key(g.get(i)) + ", exact " + y + " (tolerance " + t + ")");
				} else if (!Objects.equals(x == null ? null : x.toString(), y == null ? null : y.toString())) {
					throw new Failure(at + "column " + col + " = " + x + ", exact answer " + y);
				}
			}
		}
	}
}
