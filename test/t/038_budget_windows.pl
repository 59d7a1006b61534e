# Budget windows across restarts and crashes (src/ledger/windows.c): a
# role's budget and a table's renew every 10 seconds.  What a window spent
# holds until it ends, also across a restart (the worker replays every charge
# into the window it counted it in); when it ends the next one starts from
# zero (nothing carries over: a query refused in the first window fits the
# second), the lifetime totals keep both, and a restart and a crash of the
# server in the second window reproduce exactly the second window's
# spending.  The reports show one row per window.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $node = PostgreSQL::Test::Cluster->new('windows');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'dp_pg'
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 100) g;
	SELECT dp_pg.protect('t');
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready';

sub ready
{
	$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready';
}

sub q_as
{
	my ($user, $eps) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "SELECT dp_count(id, 'laplace(epsilon=$eps)') IS NOT NULL FROM t",
		extra_params => [ '-U', $user ]);
	return $ret == 0 ? 'answered' : $err =~ /privacy budget of (role|table) "(\w+)" exceeded/ ? "refused by $2" : "error: $err";
}

my $state = q{
	SELECT (SELECT charges || ' ' || round(epsilon_spent::numeric, 6) || ' ' || lifetime_charges || ' '
	               || round(lifetime_epsilon::numeric, 6) FROM dp_pg.budgets WHERE role = 'ana') || ' | ' ||
	       (SELECT charges || ' ' || round(epsilon_spent::numeric, 6) || ' ' || lifetime_charges || ' '
	               || round(lifetime_epsilon::numeric, 6) FROM dp_pg.table_budgets WHERE relid = 't'::regclass)};

# windows of 10 seconds from now (the worker's), for ana's budget and the table's
my $t0 = time;
$node->safe_psql('postgres', q{
	SELECT dp_pg.set_budget('ana', 1, 1e-6, renew => '10 seconds', renew_from => now());
	SELECT dp_pg.set_budget('bob', 100, 1e-6);
	SELECT dp_pg.set_table_budget('t', 1.5, 1e-6, renew => '10 seconds', renew_from => now());
});
my ($w1) = $node->safe_psql('postgres', q{SELECT window_end FROM dp_pg.budgets WHERE role = 'ana'});
# (the table's own: psql sent the calls above one at a time, each with its now())
my ($tw1) = $node->safe_psql('postgres', q{SELECT window_end FROM dp_pg.table_budgets WHERE relid = 't'::regclass});

# the first window
is(q_as('ana', 0.7), 'answered', 'window 1: ana spends 0.7 of 1');
is(q_as('ana', 0.4), 'refused by ana', 'window 1: 0.4 more does not fit her budget');
is(q_as('bob', 0.6), 'answered', 'window 1: bob spends 0.6 on the table (1.3 of 1.5)');
is(q_as('bob', 0.3), 'refused by t', 'window 1: 0.3 more does not fit the table\'s budget');
is($node->safe_psql('postgres', $state), '1 0.700000 1 0.700000 | 2 1.300000 2 1.300000', 'window 1: the spending');
$node->restart;
ready();
is($node->safe_psql('postgres', $state), '1 0.700000 1 0.700000 | 2 1.300000 2 1.300000',
	'window 1, after a restart: the same spending (the worker replayed it into its window)');
ok(time - $t0 < 9, 'still in window 1 (' . sprintf('%.1f', time - $t0) . ' s)') or diag 'the machine is slow: the checks above may be off';

# the second window: nothing carries over, the lifetime keeps everything
sleep(10.5 - (time - $t0)) if time - $t0 < 10.5;
$node->poll_query_until('postgres', qq{SELECT window_start = '$w1' FROM dp_pg.budgets WHERE role = 'ana'})
  or die 'the next window did not open';
# (the table's window too: on a loaded machine the worker's roll may be seen between the two reads)
$node->poll_query_until('postgres', qq{SELECT window_start = '$tw1' FROM dp_pg.table_budgets WHERE relid = 't'::regclass})
  or die 'the table\'s next window did not open';
is($node->safe_psql('postgres', $state), '0 0.000000 1 0.700000 | 0 0.000000 2 1.300000',
	'window 2 opened: the windows\' spending starts from zero, the lifetime totals stay');
is(q_as('ana', 0.4), 'answered', 'window 2: what was refused in window 1 fits');
is(q_as('bob', 0.3), 'answered', 'window 2: on the table too');
my $w2 = $node->safe_psql('postgres', $state);
is($w2, '1 0.400000 2 1.100000 | 2 0.700000 4 2.000000', 'window 2: the spending');
$node->restart;
ready();
is($node->safe_psql('postgres', $state), $w2, 'window 2, after a restart: the same');
# a crash of a backend restarts every process and the worker
my $pid = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dp_pg ledger'});
kill 'KILL', $pid;
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'dp_pg ledger' AND pid <> }
	  . $pid) or die 'the worker did not come back';
ready();
is($node->safe_psql('postgres', $state), $w2, 'window 2, after the worker was killed: the same');
ok(time - $t0 < 19, 'still in window 2 (' . sprintf('%.1f', time - $t0) . ' s)') or diag 'the machine is slow: the checks above may be off';

# the reports: one row per window
is($node->safe_psql('postgres', q{SELECT string_agg(charges || ':' || round(epsilon_spent::numeric, 6), ' ' ORDER BY window_start)
	FROM dp_pg.budget_windows WHERE role = 'ana'}), '1:0.700000 1:0.400000', 'dp_pg.budget_windows: ana\'s two windows');
is($node->safe_psql('postgres', q{SELECT string_agg(charges || ':' || roles || ':' || round(epsilon_spent::numeric, 6), ' ' ORDER BY window_start)
	FROM dp_pg.table_budget_windows WHERE relid = 't'::regclass}), '2:2:1.300000 2:2:0.700000',
	'dp_pg.table_budget_windows: the table\'s two windows, by two roles each');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger WHERE kind = 'charge' AND budget_window IS NOT NULL
	AND role = 'ana' AND upper(budget_window) - lower(budget_window) = interval '10 seconds'}), '2',
	'each charge row names the window it was counted in');

done_testing();
