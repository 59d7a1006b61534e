# One request never fails another's.  Six honest analyst sessions charge
# concurrently while other sessions keep sending requests that must fail:
# charges whose ledger writes fail inside the worker and set_budget calls
# whose writes fail (dp_pg.debug_poison_charge, test builds only), and
# queries whose composed delta is 1.1 (refused before they are queued).  The
# worker pauses briefly before each batch, so the failing requests share
# batches with honest ones.  Every honest query is answered, the ledger holds
# exactly one row per honest answer and none for the failed requests, the
# worker's totals equal the ledger (also after a restart), and the limits the
# failed set_budget calls tried to set never took effect.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $honest_sessions = 6;
my $queries = 150;
my $eps = 0.001;

my $node = PostgreSQL::Test::Cluster->new('poison');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'dp_pg'
max_connections = 40
dp_pg.debug_pause = 'worker_before_batch'
dp_pg.debug_pause_ms = 20
# many small charges: below the default least cost of a release
dp_pg.min_release_epsilon = 0
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana1 LOGIN;
	CREATE ROLE ana2 LOGIN;
	CREATE ROLE poi;
	CREATE ROLE bad LOGIN;
	CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 10) g;
	GRANT SELECT ON t TO ana1, ana2, poi, bad;
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
  or die 'ledger not ready';
$node->safe_psql('postgres', q{
	SELECT dp_pg.set_budget('ana1', 1000, NULL);
	SELECT dp_pg.set_budget('ana2', 1000, 1e-3);
	SELECT dp_pg.set_budget('poi', 1000, NULL);
	SELECT dp_pg.set_budget('bad', 1000, NULL);
});

# Write a psql script: the setup lines, then $n copies of the statement.
sub script
{
	my ($name, $setup, $statement, $n) = @_;
	my $file = "${PostgreSQL::Test::Utils::tmp_check}/$name.sql";
	open my $fh, '>', $file or die;
	print $fh "$setup\n";
	print $fh "$statement\n" for 1 .. $n;
	close $fh;
	return $file;
}

my $honest = script('honest', '', "SELECT dp_count(id, 'laplace(epsilon=$eps)') FROM t;", $queries);
my $poisoned = script('poisoned', 'SET dp_pg.debug_poison_charge = on; SET ROLE poi;',
	"SELECT dp_count(id, 'laplace(epsilon=$eps)') FROM t;", $queries);
my $poisoned_admin = script('poisoned_admin', 'SET dp_pg.debug_poison_charge = on;',
	"SELECT dp_pg.set_budget('ana1', 0.0001, NULL); SELECT dp_pg.set_budget('ana2', 0.0001, 1e-9);",
	$queries / 2);
my $eleven = join(', ', map { "dp_count(id + $_, 'gaussian(epsilon=0.01, delta=0.1)')" } 0 .. 10);
my $delta_bad = script('delta_bad', '', "SELECT $eleven FROM t;", $queries);

# Start psql on a script as a user (undef: the superuser); returns [handle, \stdout, \stderr].
sub start_psql
{
	my ($user, $file) = @_;
	my ($out, $err) = ('', '');
	my $connstr = $node->connstr('postgres') . (defined $user ? " user=$user" : '');
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'VERBOSITY=verbose', '-d', $connstr, '-f', $file ],
		'>', \$out, '2>', \$err);
	return [ $h, \$out, \$err ];
}

my @honest_runs = map { start_psql($_ % 2 ? 'ana2' : 'ana1', $honest) } 0 .. $honest_sessions - 1;
my @poisoned_runs = map { start_psql(undef, $poisoned) } 0 .. 1;
my @admin_runs = (start_psql(undef, $poisoned_admin));
my @bad_runs = (start_psql('bad', $delta_bad));
$_->[0]->finish for (@honest_runs, @poisoned_runs, @admin_runs, @bad_runs);

# Of some runs: the answers (result lines with numbers), the errors that
# match $error_re, and the other errors (shown).
sub tally
{
	my ($runs, $error_re) = @_;
	my ($answers, $expected, $other) = (0, 0, 0);
	for my $r (@$runs)
	{
		$answers += () = ${ $r->[1] } =~ /^-?\d+(\|-?\d+)*$/mg;
		for my $error (${ $r->[2] } =~ /^.*ERROR:  .*$/mg)
		{
			if ($error =~ $error_re)
			{
				$expected++;
			}
			else
			{
				$other++;
				diag($error) if $other <= 5;
			}
		}
	}
	return ($answers, $expected, $other);
}

my ($honest_answers, undef, $honest_errors) = tally(\@honest_runs, qr/(?!)/);
is($honest_errors, 0, 'no honest query failed');
is($honest_answers, $honest_sessions * $queries, "every honest query was answered ($honest_answers)");

my ($poi_answers, $poi_failed, $poi_other) = tally(\@poisoned_runs,
	qr/ERROR:  XX000: the dp_pg ledger could not record the charge: dp_pg\.debug_poison_charge: simulated failure/);
is($poi_answers, 0, 'no poisoned query released anything');
is($poi_failed, 2 * $queries, 'every poisoned charge failed with its own error');
is($poi_other, 0, '... and with no other error');

my (undef, $admin_failed, $admin_other) = tally(\@admin_runs,
	qr/ERROR:  XX000: the dp_pg ledger could not record the change: dp_pg\.debug_poison_charge: simulated failure/);
is($admin_failed, $queries, 'every poisoned set_budget failed');
is($admin_other, 0, '... and with no other error');

my ($bad_answers, $bad_refused, $bad_other) = tally(\@bad_runs,
	qr/ERROR:  22023: the privacy cost of this query is not a valid charge/);
is($bad_answers, 0, 'no delta >= 1 query released anything');
is($bad_refused, $queries, 'every delta >= 1 query was refused with 22023');
is($bad_other, 0, '... and with no other error');

# the ledger and the worker's totals
my $rows = $node->safe_psql('postgres', q{
	SELECT string_agg(r || ':' || coalesce(n, 0), ' ' ORDER BY r) FROM
	(SELECT unnest(ARRAY['ana1', 'ana2', 'poi', 'bad']) AS r) roles
	LEFT JOIN (SELECT role::regrole::text AS r, count(*) AS n FROM dp_pg.ledger_entries
	           WHERE kind = 'charge' GROUP BY role) c USING (r)});
my $half = $honest_sessions / 2 * $queries;
is($rows, "ana1:$half ana2:$half bad:0 poi:0", 'the ledger holds one row per honest answer and none for failed requests');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM dp_pg.ledger_entries WHERE kind = 'limit' AND role IN ('ana1'::regrole, 'ana2'::regrole)}),
	'2', 'no failed set_budget left a ledger row');
my $budgets = q{
	SELECT string_agg(b.role || ':' || b.charges || ':' || b.epsilon_limit || ':' || coalesce(b.delta_limit::text, '-')
	                  || ':' || b.epsilon_spent, ' ' ORDER BY b.role::text)
	FROM dp_pg.budget_rows() b};
my $totals = $node->safe_psql('postgres', $budgets);
like($totals, qr/^ana1:$half:1000:-:\S+ ana2:$half:1000:0\.001:\S+ bad:0:1000:-:0 poi:0:1000:-:0$/,
	"charges and limits: $totals");
is($node->safe_psql('postgres', q{
	SELECT bool_and(abs(b.epsilon_spent - coalesce(s.eps, 0)) < 1e-9)
	FROM dp_pg.budget_rows() b LEFT JOIN (SELECT role, sum(epsilon) AS eps FROM dp_pg.ledger_entries
	                                WHERE kind = 'charge' GROUP BY role) s ON s.role = b.role::oid
	WHERE b.accounting <> 'Renyi composition'}),
	't', 'spent epsilon equals the ledger sum');

# the failures shared batches with honest requests (three failing sessions at most)
my $log = slurp_file($node->logfile);
my @sizes = $log =~ /a request of a batch of (\d+) failed and was rolled back/g;
my $mixed = grep { $_ > 3 } @sizes;
ok($mixed > 0, "failed requests shared a batch with honest ones ($mixed of " . scalar(@sizes) . ' failures)');

# the totals survive a restart unchanged
$node->restart;
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die;
is($node->safe_psql('postgres', $budgets), $totals, 'after a restart the totals are the same');

done_testing();
