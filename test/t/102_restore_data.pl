# A --data-only restore into another database: pg_restore --schema-only
# then --data-only.  Every protection row, public key list and domain names
# its table (in the new database the tables have other OIDs); until the data
# is there the analysts' grants are refused, and the one line of docs/dba.md
# puts them back; dp queries work and raw rows stay refused.
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
my $tables = qr/^(protected|keys|domain|table|bound) /;
sub lines { my ($text, $re) = @_; return join("\n", grep { /$re/ } split /\n/, $text); }

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
is(lines(life_state($node, 'app2'), qr/^bound /), lines($before, qr/^bound /),
	'every table is bound to the same table budget (the people of the copy are the same people)');
my $charges = q{SELECT charges FROM dp_pg.table_budgets WHERE table_name = 'public.patients'};
my $c0 = $node->safe_psql('postgres', $charges);
is(dp_as($node, 'app2', 'ana', q{SELECT abs(dp_count(1, 'laplace(epsilon=0.5)') - 1000) < 60 FROM people}), 't',
	'dp queries work in app2');
is($node->safe_psql('postgres', $charges), $c0 + 1, '... charged to the table budget people shares with app');
($ret, $out, $err) = dp_try($node, 'app2', 'ana', 'SELECT * FROM people');
isnt($ret, 0, 'raw rows refused in app2');

done_testing();
