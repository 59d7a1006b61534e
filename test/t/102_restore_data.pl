# Restores of data: every protection of a --data-only restore lands on the
# table of the same name in another database, and a ledger restored into a
# running server is live at once.
#
# 1. pg_restore --schema-only then --data-only into another database: the
#    protection rows, public keys and domains name their tables (in the new
#    database they have other OIDs); until the data is there the analysts'
#    grants are refused, and the one line of docs/dba.md puts them back.
# 2. The ledger database is lost and the server restarted with an empty
#    ledger (the worker has loaded it: no budget); pg_restore --data-only of
#    last night's dump into the running server: dp_pg.budgets shows every
#    budget and spent amount at once, and the analysts are charged against
#    them, without a restart.  The same with --disable-triggers, which
#    switches the tables' triggers off while it copies.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use lib 't';
use DpLifecycle;

my $node = dp_node('restore_data');
$node->start;
life_fixture($node);
my $before = life_state($node);
my $dir = PostgreSQL::Test::Utils::tempdir();
my @conn = ('-h', $node->host, '-p', $node->port);
my ($ret, $out, $err, $stdout, $stderr);
my $tables = qr/^(protected|keys|domain|table) /;
sub lines { my ($text, $re) = @_; return join("\n", grep { /$re/ } split /\n/, $text); }

# 1. schema, then data, into another database
command_ok([ 'pg_dump', @conn, '-Fc', '-f', "$dir/app.dump", 'app' ], 'pg_dump -Fc app');
$node->safe_psql('postgres', 'CREATE DATABASE app2');
# tables that take OIDs first, so that none of app's OIDs means the same table in app2
$node->safe_psql('app2', 'CREATE TABLE filler1 (x int); CREATE TABLE filler2 (x int); CREATE TABLE filler3 (x int);');
IPC::Run::run([ 'pg_restore', @conn, '--schema-only', '-d', 'app2', "$dir/app.dump" ], '>', \$stdout, '2>', \$stderr);
like($stderr, qr/dp_pg_analyst is granted only SELECT on protected tables/,
	'schema only: the analysts\' grants wait for the protections');
command_ok([ 'pg_restore', @conn, '--data-only', '-d', 'app2', "$dir/app.dump" ], 'pg_restore --data-only');
isnt($node->safe_psql('app2', q{SELECT 'visits'::regclass::oid}), $node->safe_psql('app', q{SELECT 'visits'::regclass::oid}),
	'(visits has another OID in app2)');
is(lines(life_state($node, 'app2'), qr/^(protected|keys|domain) /), lines($before, qr/^(protected|keys|domain) /),
	'every protection, public key list and domain names the same table');
$node->safe_psql('app2',
	'SELECT dp_pg.protect(relid, privacy_unit, max_groups_contributed, max_rows_per_unit) FROM dp_pg.protected_tables');
same_lines(lines(life_state($node, 'app2'), $tables), lines($before, $tables),
	'after protect() of each protected table: grants, policies and row-level security as in app');
is(dp_as($node, 'app2', 'ana', q{SELECT abs(dp_count(1, 'laplace(epsilon=0.5)') - 1000) < 60 FROM people}), 't',
	'dp queries work in app2');
($ret, $out, $err) = dp_try($node, 'app2', 'ana', 'SELECT * FROM people');
isnt($ret, 0, 'raw rows refused in app2');

# 2. the ledger restored into a running server
my $budgets = q{SELECT string_agg(concat_ws(' ', role, epsilon_limit, delta_limit, max_epsilon_per_query,
	round(epsilon_spent::numeric, 9), delta_spent, charges), E'\n' ORDER BY role::text) FROM dp_pg.budgets};
my $budgets_dumped = $node->safe_psql('postgres', $budgets);
command_ok([ 'pg_dump', @conn, '-Fc', '--data-only', '-f', "$dir/ledger.dump", 'postgres' ], 'pg_dump --data-only of the ledger database');
$node->safe_psql('postgres', q{SET dp_pg.allow_ledger_drop = on; DROP EXTENSION dp_pg CASCADE;});
$node->restart;
$node->safe_psql('postgres', 'CREATE EXTENSION dp_pg');
dp_ready($node);
is($node->safe_psql('postgres', 'SELECT count(*) FROM dp_pg.budgets'), '0', 'a new, empty ledger is loaded');
($ret, $out, $err) = dp_try($node, 'app', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.5)') FROM people});
isnt($ret, 0, 'meanwhile a member of dp_pg_analyst without a budget reads nothing');
# (that refusal is in the new log; the dump's log rows would collide with it)
ok(poll_short($node, 'postgres', 'SELECT count(*) = 1 FROM dp_pg.guard_refusal_log'), 'the refusal is logged');
$node->safe_psql('postgres', 'TRUNCATE dp_pg.guard_refusal_log');
IPC::Run::run([ 'pg_restore', @conn, '--data-only', '-d', 'postgres', "$dir/ledger.dump" ], '>', \$stdout, '2>', \$stderr);
is($stderr, '', 'pg_restore --data-only into the running ledger database');
is($node->safe_psql('postgres', $budgets), $budgets_dumped, 'dp_pg.budgets shows the restored budgets at once, no restart');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.my_budget}, extra_params => [ '-U', 'ana' ]), '1',
	'the analyst sees her budget');
($ret, $out, $err) = dp_try($node, 'app', 'bob', q{SELECT dp_count(1, 'laplace(epsilon=1.5)') FROM people});
like($err, qr/per-query epsilon cap of role "bob"/, 'the restored per-query cap holds');
is(dp_as($node, 'app', 'ana', q{SELECT abs(dp_count(1, 'laplace(epsilon=0.5)') - 1000) < 60 FROM people}), 't',
	'an analyst is charged again');
is($node->safe_psql('postgres', q{SELECT charges FROM dp_pg.budgets WHERE role = 'ana'}),
	$node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger_entries WHERE role = 'ana' AND kind = 'charge'}),
	'... against her restored spending');

# the same with --disable-triggers (it switches the tables' triggers off while it copies)
$node->safe_psql('postgres', 'TRUNCATE dp_pg.budget_limits, dp_pg.ledger_entries, dp_pg.guard_refusal_log');
is($node->safe_psql('postgres', 'SELECT count(*) FROM dp_pg.budgets'), '0', 'a TRUNCATE of the ledger tables is seen at once');
IPC::Run::run([ 'pg_restore', @conn, '--data-only', '--disable-triggers', '-d', 'postgres', "$dir/ledger.dump" ],
	'>', \$stdout, '2>', \$stderr);
is($stderr, '', 'pg_restore --data-only --disable-triggers');
is($node->safe_psql('postgres', $budgets), $budgets_dumped, '... its budgets are live at once too');

done_testing();
