# dp queries through pgbouncer's transaction pooling (Debian's pgbouncer, on
# a Unix socket only), as docs/dba.md ("Connection poolers") describes them.
#
#  - Charges are counted right: many clients sharing a few server
#    connections, each dp query charged once; a budget raced by more clients
#    than it can pay for admits exactly what it can pay and refuses the rest
#    (DP001, uncharged), a table's budget raced by clients of two roles the
#    same; refused raw reads are uncharged and logged.
#  - dp_pg.default_mechanism set with ALTER ROLE ... SET reaches every
#    client once pgbouncer reconnects (RECONNECT); a plain SET stays on the
#    server connection for the next client (the caveat the docs give), SET
#    LOCAL does not.
#  - dp_pg.last_releases: never shown to another role on a connection shared
#    by roles that switch with SET LOCAL ROLE (a pool with one server user,
#    PostgREST's way; on main it was); clients of one role share a server
#    connection's last release (documented), and reading it in the query's
#    own transaction always gives that query's (the safe way, checked while
#    other clients hammer the same connection); DISCARD ALL forgets it.
use strict;
use warnings;
use File::Temp qw(tempdir);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pgbouncer = '/usr/sbin/pgbouncer';
ok(-x $pgbouncer, 'pgbouncer is installed (test/all.sh installs it)')
  or done_testing(), exit;

my $node = PostgreSQL::Test::Cluster->new('pooled');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'dp_pg'
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE cyd LOGIN;
	CREATE ROLE authn LOGIN NOINHERIT;
	GRANT ana, bob TO authn;
	CREATE DATABASE app;
});
$node->safe_psql('app', q{
	CREATE EXTENSION dp_pg;
	CREATE TABLE t AS SELECT g AS id, g % 3 AS k FROM generate_series(1, 100) g;
	SELECT dp_pg.protect('t');
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
  or die 'ledger not ready';
$node->safe_psql('postgres', q{
	SELECT dp_pg.set_budget('ana', 1000, 1e-6);
	SELECT dp_pg.set_budget('bob', 1000, 1e-6);
	SELECT dp_pg.set_budget('cyd', 1, 0);
});

# pgbouncer in transaction pooling, listening on a Unix socket only:
#   app     per-role pools of 3 server connections
#   app1    per-role pools of 1 (which client meets which state is certain)
#   shared  one server user, authn, for every client (roles switch with SET LOCAL ROLE)
my $dir = tempdir(CLEANUP => 1);
my $bport = PostgreSQL::Test::Cluster::get_free_port();
my ($host, $port) = ($node->host, $node->port);
my $os_user = $node->safe_psql('postgres', 'SELECT current_user');
open my $auth, '>', "$dir/users.txt" or die;
print $auth qq{"$_" ""\n} for ($os_user, qw(ana bob cyd authn web));
close $auth;
open my $ini, '>', "$dir/pgbouncer.ini" or die;
print $ini qq{
[databases]
app = host=$host port=$port dbname=app pool_size=3
app1 = host=$host port=$port dbname=app pool_size=1
shared = host=$host port=$port dbname=app user=authn pool_size=1

[pgbouncer]
pool_mode = transaction
listen_port = $bport
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/users.txt
admin_users = $os_user
max_client_conn = 100
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
};
close $ini;
my $bouncer = IPC::Run::start([ $pgbouncer, "$dir/pgbouncer.ini" ], '>', \my $bout, '2>', \my $berr);

# psql through pgbouncer: (exit code, stdout, stderr)
sub bq
{
	my ($user, $db, $sql) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[
			'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-v', 'VERBOSITY=verbose',
			'-h', $dir, '-p', $bport, '-U', $user, '-d', $db
		],
		'<', \$sql, '>', \$out, '2>', \$err);
	chomp $out;
	return ($? >> 8, $out, $err);
}

# several clients at once, each running its script; their outputs
sub clients
{
	my @runs;
	for my $c (@_)
	{
		my ($user, $db, $sql) = @$c;
		my $r = { out => '', err => '' };
		$r->{h} = IPC::Run::start(
			[ 'psql', '-X', '-q', '-A', '-t', '-h', $dir, '-p', $bport, '-U', $user, '-d', $db ],
			'<', \$sql, '>', \$r->{out}, '2>', \$r->{err});
		push @runs, $r;
	}
	$_->{h}->finish for @runs;
	return @runs;
}

my $ready = 0;
for my $try (1 .. 100)
{
	my ($rc) = bq('ana', 'app', 'SELECT 1');
	if ($rc == 0) { $ready = 1; last; }
	sleep 0.1;
}
ok($ready, 'dp queries reach the server through pgbouncer') or diag($berr);

# the ledger as the superuser sees it (not through the pooler)
sub ledger
{
	my ($sql) = @_;
	return $node->safe_psql('app', $sql);
}
sub charges_of
{
	my ($role) = @_;
	return ledger(qq{SELECT count(*) || ' ' || round(coalesce(sum(epsilon), 0)::numeric, 6)
		FROM dp_pg.ledger WHERE role = '$role'::regrole AND kind = 'charge'});
}

#
# 1. Charges counted right: 6 clients x 20 dp queries of ana over 3 server connections
#
my $script = join '', map { "SELECT dp_count(id, 'laplace(epsilon=0.01)') IS NOT NULL FROM t;\n" } 1 .. 20;
my @runs = clients(map { [ 'ana', 'app', $script ] } 1 .. 6);
my $answered = 0;
$answered += () = $_->{out} =~ /^t$/mg for @runs;
is($answered, 120, '120 dp queries from 6 pooled clients answered');
is(charges_of('ana'), '120 1.200000', '... each charged exactly once (120 charges, epsilon 1.2)');
is(ledger(q{SELECT charges FROM dp_pg.budgets WHERE role = 'ana'::regrole}), '120', '... and the budget counts 120');

#
# 2. A budget raced through the pooler: cyd may spend epsilon 1 (pure DP); 8
#    clients try 3 queries of 0.25 each: exactly 4 are answered, 20 refused
#
$script = join '', map { "SELECT dp_count(id, 'laplace(epsilon=0.25)') IS NOT NULL FROM t;\n" } 1 .. 3;
@runs = clients(map { [ 'cyd', 'app', $script ] } 1 .. 8);
my ($ok, $refused) = (0, 0);
for (@runs)
{
	$ok += () = $_->{out} =~ /^t$/mg;
	$refused += () = $_->{err} =~ /privacy budget of role "cyd" exceeded/g;
}
is($ok, 4, 'a budget of epsilon 1 raced by 8 pooled clients answers exactly 4 queries of 0.25');
is($refused, 20, '... and refuses the other 20 (DP001)');
is(charges_of('cyd'), '4 1.000000', '... charging exactly the 4 answered (epsilon 1, never more)');

#
# 2b. A table's budget raced through the pooler: ana and bob (large budgets of
#     their own) on 4 clients each try 3 queries of 0.25 on a table whose
#     budget is 1: exactly 4 answered, each charged once to the table and to
#     its role; the rest refused (DP001 naming the table), uncharged
#
$node->safe_psql('app', q{
	CREATE TABLE tt AS SELECT g AS id FROM generate_series(1, 100) g;
	SELECT dp_pg.protect('tt');
	SELECT dp_pg.set_table_budget('tt', 1, NULL);
});
my $roles_before = ledger(q{SELECT count(*) FROM dp_pg.ledger WHERE kind = 'charge' AND role IN ('ana'::regrole, 'bob'::regrole)});
$script = join '', map { "SELECT dp_count(id, 'laplace(epsilon=0.25)') IS NOT NULL FROM tt;
" } 1 .. 3;
@runs = clients(map { [ $_, 'app', $script ] } (('ana') x 4, ('bob') x 4));
($ok, $refused) = (0, 0);
for (@runs)
{
	$ok += () = $_->{out} =~ /^t$/mg;
	$refused += () = $_->{err} =~ /privacy budget of table "tt" exceeded/g;
}
is($ok, 4, 'a table budget of epsilon 1 raced by 8 pooled clients of two roles answers exactly 4 queries of 0.25');
is($refused, 20, '... and refuses the other 20 (DP001 naming the table)');
is(ledger(q{SELECT charges || ' ' || round(epsilon_spent::numeric, 6) FROM dp_pg.table_budgets WHERE relid = 'tt'::regclass}),
	'4 1.000000', '... charging the table exactly the 4 answered');
is(ledger(q{SELECT count(*) FROM dp_pg.ledger WHERE kind = 'charge' AND role IN ('ana'::regrole, 'bob'::regrole)}) - $roles_before,
	4, '... and their roles once each');

#
# 3. Refused raw reads: uncharged, logged
#
my $before = charges_of('ana');
my ($rc, $out, $err) = bq('ana', 'app', 'SELECT * FROM t');
like($err, qr/ERROR:  42501/, 'a raw read through the pooler is refused (42501)');
($rc, $out, $err) = bq('ana', 'app', 'SELECT id, k FROM t WHERE k = 1');
like($err, qr/ERROR:  42501/, '... so is another');
is(charges_of('ana'), $before, '... and nothing is charged');
$node->poll_query_until('app',
	q{SELECT count(*) = 2 FROM dp_pg.guard_refusals WHERE role = 'ana'::regrole AND sqlstate = '42501'})
  or diag('refusals not logged');
pass('... both are in dp_pg.guard_refusals');

#
# 4. dp_pg.default_mechanism behind transaction pooling
#
# ALTER ROLE ... SET reaches server connections opened after it: pgbouncer's
# RECONNECT closes the pooled ones (each after its current transaction)
$node->safe_psql('postgres', q{ALTER ROLE ana SET dp_pg.default_mechanism = 'laplace(epsilon=0.125)'});
($rc, $out, $err) = bq($os_user, 'pgbouncer', 'RECONNECT');
is($rc, 0, "pgbouncer's RECONNECT") or diag($err);
$before = ledger(q{SELECT max(id) FROM dp_pg.ledger});
@runs = clients(map { [ 'ana', 'app', "SELECT dp_count(*) IS NOT NULL FROM t;\n" x 3 ] } 1 .. 4);
is( ledger(qq{SELECT count(*) || ' ' || bool_and(epsilon = 0.125)
		FROM dp_pg.ledger WHERE role = 'ana'::regrole AND kind = 'charge' AND id > $before}),
	'12 true', 'after ALTER ROLE ana SET dp_pg.default_mechanism and RECONNECT, every client is charged 0.125');

# a plain SET stays on the server connection: the next client meets it (pool of 1)
bq('ana', 'app1', 'SELECT 1');
($rc) = bq('ana', 'app1', q{SET dp_pg.default_mechanism = 'laplace(epsilon=0.5)'});
$before = ledger(q{SELECT max(id) FROM dp_pg.ledger});
bq('ana', 'app1', 'SELECT dp_count(*) FROM t');
is(ledger(qq{SELECT epsilon FROM dp_pg.ledger WHERE role = 'ana'::regrole AND kind = 'charge' AND id > $before}),
	'0.5', "a plain SET by one client sets the next client's default on that server connection (the documented caveat)");
bq('ana', 'app1', 'RESET dp_pg.default_mechanism');
# SET LOCAL ends with its transaction
$before = ledger(q{SELECT max(id) FROM dp_pg.ledger});
bq('ana', 'app1', qq{BEGIN;\nSET LOCAL dp_pg.default_mechanism = 'laplace(epsilon=0.5)';\nSELECT dp_count(*) FROM t;\nCOMMIT;});
bq('ana', 'app1', 'SELECT dp_count(*) FROM t');
is( ledger(qq{SELECT string_agg(epsilon::text, ' ' ORDER BY id)
		FROM dp_pg.ledger WHERE role = 'ana'::regrole AND kind = 'charge' AND id > $before}),
	'0.5 0.125', "SET LOCAL in the client's transaction does not reach the next client");

#
# 5. dp_pg.last_releases
#
# roles switching on one server connection (pool "shared": server user authn)
($rc, $out, $err) = bq('web', 'shared',
	qq{BEGIN;\nSET LOCAL ROLE ana;\nSELECT dp_count(id, 'laplace(epsilon=0.3)') IS NOT NULL FROM t;\nCOMMIT;});
is($out, 't', 'a client of the shared pool asks a dp query as ana') or diag($err);
($rc, $out, $err) = bq('web', 'shared',
	qq{BEGIN;\nSET LOCAL ROLE bob;\nSELECT count(*) FROM dp_pg.last_releases;\nCOMMIT;});
is($out, '0', "the next client, as bob on the same server connection, sees none of ana's releases");
($rc, $out, $err) = bq('web', 'shared', 'SELECT count(*) FROM dp_pg.last_releases');
is($out, '0', '... nor does one that stays the server user');
($rc, $out, $err) = bq('web', 'shared',
	qq{BEGIN;\nSET LOCAL ROLE ana;\nSELECT epsilon FROM dp_pg.last_releases;\nCOMMIT;});
is($out, '0.3', '... while a client as ana sees them');

# clients of one role share the server connection's last release (documented)
bq('bob', 'app1', q{SELECT dp_count(id, 'laplace(epsilon=0.7)') FROM t});
($rc, $out) = bq('bob', 'app1', 'SELECT epsilon FROM dp_pg.last_releases');
is($out, '0.7', "another client of the same role reads the last release of the server connection (documented)");

# the safe way: the query and dp_pg.last_releases in one transaction, while
# 3 other clients of the role run other dp queries on the same connection
my $check = join '', map {
	"BEGIN;\nSELECT dp_count(id, 'laplace(epsilon=0.4)') IS NOT NULL FROM t;\n"
	  . "SELECT 'bars ' || string_agg(epsilon::text, ',') FROM dp_pg.last_releases;\nCOMMIT;\n"
} 1 .. 10;
my $hammer = "SELECT dp_count(id, 'laplace(epsilon=0.05)') IS NOT NULL FROM t;\n" x 15;
@runs = clients([ 'bob', 'app1', $check ], map { [ 'bob', 'app1', $hammer ] } 1 .. 3);
my @bars = $runs[0]{out} =~ /^bars (.*)$/mg;
is(scalar(@bars), 10, 'ten transactions read dp_pg.last_releases after their own dp query');
is(scalar(grep { $_ eq '0.4' } @bars), 10, '... and each saw its own release, never a concurrent client\'s');
my $hammered = 0;
$hammered += () = $_->{out} =~ /^t$/mg for @runs[ 1 .. 3 ];
is($hammered, 45, '... while 45 other dp queries ran on the same server connection');

# DISCARD ALL (the reset a pooler runs between clients in session pooling) forgets it
($rc, $out, $err) = bq('bob', 'app1',
	qq{SELECT dp_count(id, 'laplace(epsilon=0.7)') IS NOT NULL FROM t;\nDISCARD ALL;\nSELECT count(*) FROM dp_pg.last_releases;});
is($out, "t\n0", 'DISCARD ALL forgets the last release');

$bouncer->kill_kill;
$bouncer->finish;
done_testing();
