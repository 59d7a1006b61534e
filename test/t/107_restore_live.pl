# A ledger restored into a running server is live at once.
#
# The ledger is lost (its tables emptied) and the server restarted: the
# worker has loaded an empty ledger, no budget.  pg_restore --data-only of
# the last dump into the running ledger database: dp_pg.budgets shows every
# budget, spent amount and cap at once, without a restart, and the analysts
# are charged against them.  The same with --disable-triggers, which
# switches the tables' triggers off while it copies.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use lib 't';
use DpLifecycle;

my $node = dp_node('restore_live');
$node->start;
life_fixture($node);
my $dir = PostgreSQL::Test::Utils::tempdir();
my @conn = ('-h', $node->host, '-p', $node->port);
my ($ret, $out, $err, $stdout, $stderr);

my $budgets = q{SELECT string_agg(concat_ws(' ', role, epsilon_limit, delta_limit, max_epsilon_per_query,
	round(epsilon_spent::numeric, 9), delta_spent, charges), E'\n' ORDER BY role::text) FROM dp_pg.budget_rows()};
my $budgets_dumped = $node->safe_psql('postgres', $budgets);
like($budgets_dumped, qr/^ana 5 1e-06 \d/m, '(the budgets the dump holds)');
command_ok([ 'pg_dump', @conn, '-Fc', '--data-only', '-f', "$dir/ledger.dump", 'postgres' ],
	'pg_dump --data-only of the ledger database');
my $tables = q{SELECT string_agg(concat_ws(' ', table_name, epsilon_limit, round(epsilon_spent::numeric, 9), charges), E'\n'
	ORDER BY table_name) FROM dp_pg.table_budgets};
my $tables_dumped = $node->safe_psql('postgres', $tables);
like($tables_dumped, qr/^public\.visits 50 [\d.]+ 2$/m, '(the table budgets the dump holds)');
$node->safe_psql('postgres', 'TRUNCATE dp_pg.budget_limits, dp_pg.table_budget_limits, dp_pg.ledger_entries, dp_pg.guard_refusal_log');
$node->restart;
dp_ready($node);
is($node->safe_psql('postgres', 'SELECT count(*) FROM dp_pg.budgets'), '0', 'the worker loaded an empty ledger');
($ret, $out, $err) = dp_try($node, 'app', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.5)') FROM people});
isnt($ret, 0, 'meanwhile a member of dp_pg_analyst without a budget reads nothing');
# (that refusal is in the new log; the dump's log rows would collide with it)
ok(poll_short($node, 'postgres', 'SELECT count(*) = 1 FROM dp_pg.guard_refusal_log'), 'the refusal is logged');
$node->safe_psql('postgres', 'TRUNCATE dp_pg.guard_refusal_log');
IPC::Run::run([ 'pg_restore', @conn, '--data-only', '-d', 'postgres', "$dir/ledger.dump" ], '>', \$stdout, '2>', \$stderr);
is($stderr, '', 'pg_restore --data-only into the running ledger database');
is($node->safe_psql('postgres', $budgets), $budgets_dumped, 'dp_pg.budgets shows the restored budgets at once, no restart');
is($node->safe_psql('postgres', $tables), $tables_dumped, 'dp_pg.table_budgets shows the restored table budgets at once');
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
$node->safe_psql('postgres', 'TRUNCATE dp_pg.budget_limits, dp_pg.table_budget_limits, dp_pg.ledger_entries, dp_pg.guard_refusal_log');
is($node->safe_psql('postgres', 'SELECT count(*) FROM dp_pg.budgets'), '0', 'a TRUNCATE of the ledger tables is seen at once');
IPC::Run::run([ 'pg_restore', @conn, '--data-only', '--disable-triggers', '-d', 'postgres', "$dir/ledger.dump" ],
	'>', \$stdout, '2>', \$stderr);
is($stderr, '', 'pg_restore --data-only --disable-triggers');
is($node->safe_psql('postgres', $budgets), $budgets_dumped, '... its budgets are live at once too');

done_testing();
