# The ledger's views from every database, and the durable, bounded log of
# refused analyst queries.
#
# dp_pg.ledger reads the one cluster-wide ledger through the ledger worker,
# so a database other than dp_pg.ledger_database shows exactly the rows of
# the ledger table (compared row by row, also across many pages and rows
# larger than a page's share), and an analyst sees only the rows of the roles
# their queries are charged to.  dp_pg.guard_refusals records who was refused,
# when, in which database, by which rule; only superusers read it; it keeps
# the newest dp_pg.refusal_log_size rows; refusals that arrive while the
# worker is busy and its queue is full are counted in one row; the rows
# survive a restart.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('views');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'dp_pg'
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE ghost;
	CREATE DATABASE app;
});
$node->safe_psql('app', q{
	CREATE EXTENSION dp_pg;
	CREATE TABLE t AS SELECT g AS id, g % 3 AS k FROM generate_series(1, 100) g;
	SELECT dp_pg.protect('t');
	GRANT SELECT ON t TO ana, bob;
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
  or die 'ledger not ready';
$node->safe_psql('postgres', q{
	SELECT dp_pg.set_budget('ana', 100, 1e-6);
	SELECT dp_pg.set_budget('bob', 100, 1e-6);
});
for my $i (1 .. 3)
{
	$node->safe_psql('app', "SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM t", extra_params => [ '-U', 'ana' ]);
}
for my $i (1 .. 2)
{
	$node->safe_psql('app', "SELECT dp_count(id, 'laplace(epsilon=0.2)') FROM t", extra_params => [ '-U', 'bob' ]);
}

# one text per row, the same expression over the table and over the view
my $rows_sql = q{md5(string_agg(concat_ws('|', id, role::regrole, kind, charged_at, requested_by::regrole,
	query, epsilon, delta, rho, rdp, detail), E'\n' ORDER BY id)) || ' ' || count(*)};
my $table = $node->safe_psql('postgres', "SELECT $rows_sql FROM dp_pg.ledger_entries");
# (exactly: dp_pg.ledger_rows(); the view dp_pg.ledger shows its numbers to six significant digits)
my $view_app = $node->safe_psql('app', "SELECT $rows_sql FROM dp_pg.ledger_rows()");
my $view_home = $node->safe_psql('postgres', "SELECT $rows_sql FROM dp_pg.ledger_rows()");
like($table, qr/ 7$/, 'the ledger table holds 2 limit rows and 5 charges');
is($view_app, $table, 'dp_pg.ledger_rows() in another database shows exactly the ledger table');
is($view_home, $table, '... and in the ledger database too');
is($node->safe_psql('app', q{
	SELECT count(*) || ' ' || bool_and(v.epsilon IS NOT DISTINCT FROM dp_pg.display_round(r.epsilon)
		AND v.delta IS NOT DISTINCT FROM dp_pg.display_round(r.delta) AND v.rho IS NOT DISTINCT FROM dp_pg.display_round(r.rho)
		AND v.detail = r.detail AND v.charged_at = r.charged_at)
	FROM dp_pg.ledger v JOIN dp_pg.ledger_rows() r USING (id)}), '7 true',
	'dp_pg.ledger shows the same rows, epsilon, delta and rho to six significant digits');
is($node->safe_psql('app', q{SELECT count(*) FROM dp_pg.ledger_entries}), '0',
	"(that database's own copy of the table is empty)");

my $ana_rows = $node->safe_psql('app',
	q{SELECT count(*) || ' ' || bool_and(role = 'ana'::regrole)::int FROM dp_pg.ledger}, extra_params => [ '-U', 'ana' ]);
is($ana_rows, '4 1', 'an analyst sees only the rows of her own role (limit + 3 charges)');

# many rows, some larger than a page's share of the read buffer
$node->safe_psql('postgres', q{
	INSERT INTO dp_pg.ledger_entries (role, kind, requested_by, query, detail)
	SELECT 'ghost'::regrole, 'reset', 10, 'row ' || g,
	       CASE WHEN g % 10 = 0 THEN jsonb_build_object('pad', repeat(md5(g::text), 250)) ELSE '{}' END
	FROM generate_series(1, 1800) g;
});
$table = $node->safe_psql('postgres', "SELECT $rows_sql FROM dp_pg.ledger_entries");
$view_app = $node->safe_psql('app', "SELECT $rows_sql FROM dp_pg.ledger_rows()");
like($table, qr/ 1807$/, 'the ledger table now holds 1807 rows (180 of them 8 kB)');
is($view_app, $table, 'read a page at a time, the view still shows exactly the table');
is($node->safe_psql('app', q{SELECT count(*) FROM dp_pg.ledger}, extra_params => [ '-U', 'ana' ]),
	'4', "... and the analyst still only her 4 rows");
$node->safe_psql('postgres', q{DELETE FROM dp_pg.ledger_entries WHERE role = 'ghost'::regrole});

# ---- the refusal log
sub refused
{
	my ($db, $user, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, $sql, extra_params => [ '-U', $user ]);
	return $ret != 0 ? $err : "not refused: $out";
}
like(refused('app', 'ana', 'SELECT id FROM t /* r1 */'), qr/table columns may only appear/,
	'an analyst query is refused by the guard');
like(refused('app', 'ana', q{SELECT dp_count(id, 'laplace(epsilon=0.1)') OVER () FROM t /* r2 */}),
	qr/window function/, '... and another');
$node->poll_query_until('app', q{SELECT count(*) = 2 FROM dp_pg.guard_refusals})
  or die 'refusals not logged';
is( $node->safe_psql(
		'app', q{SELECT string_agg(concat_ws(' | ', role, as_role, database, sqlstate, rule,
		         query ~ 'r[12]', refused_at > now() - interval '5 minutes'), E'\n' ORDER BY id)
		FROM dp_pg.guard_refusals}),
	"ana | ana | app | 42501 | table columns may only appear inside dp aggregates or as GROUP BY keys | t | t\n"
	  . "ana | ana | app | 0A000 | a dp aggregate used as a window function | t | t",
	'the log says who, as whom, where, which SQLSTATE and rule, the query and when');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.guard_refusals}), '2',
	'the ledger database shows the same log');
like(refused('app', 'ana', 'SELECT * FROM dp_pg.guard_refusals'), qr/permission denied/,
	'an analyst cannot read the log');
like(refused('app', 'ana', 'SELECT * FROM dp_pg.refusal_rows()'), qr/permission denied/,
	'... nor call what it reads');
like(refused('app', 'ana', 'DELETE FROM dp_pg.guard_refusal_log'), qr/permission denied/,
	'... nor change it in her database');
like(refused('postgres', 'ana', 'DELETE FROM dp_pg.guard_refusal_log'), qr/permission denied/,
	'... nor in the ledger database');
my ($r) = $node->psql('app', 'SELECT id FROM t /* superuser */');
is($r, 0, 'a superuser is not refused');

# budget refusals and per-query caps are logged too
$node->safe_psql('postgres', q{SELECT dp_pg.set_query_cap('bob', 0.5)});
like(refused('app', 'bob', q{SELECT dp_count(id, 'laplace(epsilon=0.6)') FROM t}), qr/per-query epsilon cap/,
	'a query over the per-query cap is refused');
$node->poll_query_until('app', q{SELECT count(*) = 3 FROM dp_pg.guard_refusals})
  or die 'refusal not logged';
is($node->safe_psql('app', q{SELECT role || ' ' || sqlstate || ' ' || rule FROM dp_pg.guard_refusals ORDER BY id DESC LIMIT 1}),
	'bob DP001 per-query cap on epsilon of role "bob"', '... and logged as DP001 with the cap it broke');

# bounded: the newest dp_pg.refusal_log_size rows stay
$node->safe_psql('postgres', q{ALTER SYSTEM SET dp_pg.refusal_log_size = 5; SELECT pg_reload_conf()});
sleep 1;
refused('app', 'ana', "SELECT id FROM t /* n$_ */") for 1 .. 12;
$node->poll_query_until('app', q{SELECT count(*) > 0 FROM dp_pg.guard_refusals WHERE query LIKE '%/* n12 */%'})
  or die 'refusals not logged';
is( $node->safe_psql('app', q{SELECT string_agg(substring(query from 'n[0-9]+'), ' ' ORDER BY id) FROM dp_pg.guard_refusals}),
	'n8 n9 n10 n11 n12', 'with dp_pg.refusal_log_size = 5 the log keeps the newest 5');

# refusals while the worker is busy: the queue holds 64, the rest are counted
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET dp_pg.refusal_log_size = 1000;
	ALTER SYSTEM SET dp_pg.debug_pause = 'worker_before_batch';
	ALTER SYSTEM SET dp_pg.debug_pause_ms = 4000;
	SELECT pg_reload_conf();
});
sleep 1;
my ($out, $err) = ('', '');
my $busy = IPC::Run::start(
	[ 'psql', '-XAtq', '-U', 'bob', '-d', $node->connstr('app'), '-c',
		q{SELECT dp_count(id, 'laplace(epsilon=0.1)') IS NOT NULL FROM t} ],
	'>', \$out, '2>', \$err);
sleep 1;    # the worker is now pausing before the batch of that charge
my $script = "${PostgreSQL::Test::Utils::tmp_check}/refusals.sql";
open my $fh, '>', $script or die;
print $fh "\\set ON_ERROR_STOP 0\n";
print $fh "SELECT id FROM t /* q$_ */;\n" for 1 .. 80;
close $fh;
$node->psql('app', undef, extra_params => [ '-U', 'ana', '-f', $script ]);
$busy->finish;
is($out, "t\n", 'the charge that kept the worker busy was answered');
$node->poll_query_until('app', q{SELECT count(*) > 0 FROM dp_pg.guard_refusals WHERE rule LIKE '%were not logged%'})
  or die 'no count of missed refusals';
my $logged = $node->safe_psql('app', q{SELECT count(*) FROM dp_pg.guard_refusals WHERE query ~ 'q[0-9]+'});
my $missed = $node->safe_psql('app',
	q{SELECT sum(substring(rule from '^([0-9]+) more')::int) FROM dp_pg.guard_refusals WHERE rule LIKE '%were not logged%'});
is($logged + $missed, 80, "every refusal is logged or counted ($logged logged, $missed counted)");
ok($missed > 0 && $logged >= 64, 'the queue held 64 and counted the rest');
is($node->safe_psql('app', q{SELECT role IS NULL AND as_role IS NULL FROM dp_pg.guard_refusals WHERE rule LIKE '%were not logged%'}),
	't', 'the counting row names no role');

# durable: the log survives a restart (and an immediate shutdown)
my $before = $node->safe_psql('app', q{SELECT count(*) || ' ' || max(id) FROM dp_pg.guard_refusals});
$node->stop('immediate');
$node->start;
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
  or die 'ledger not ready';
is($node->safe_psql('app', q{SELECT count(*) || ' ' || max(id) FROM dp_pg.guard_refusals}), $before,
	'the log survives a crash restart');

$node->stop;
done_testing();
