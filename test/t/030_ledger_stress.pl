# 16 sessions x 500 queries of one analyst against one budget: the budget runs
# out part-way.  Spending never exceeds the limit, the ledger holds exactly
# one charge per answer a client received, the worker's totals equal the
# ledger, and the only errors are DP001.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $sessions = 16;
my $queries = 500;
my $eps = 0.001;
my $limit = 5;

my $node = PostgreSQL::Test::Cluster->new('stress');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'dp_pg'
max_connections = 40
# many small charges fill the budget: below the default least cost of a release
dp_pg.min_release_epsilon = 0
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 10) g;
	GRANT SELECT ON t TO ana;
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
  or die 'ledger not ready';
$node->safe_psql('postgres', "SELECT dp_pg.set_budget('ana', $limit, NULL)");

my $script = "${PostgreSQL::Test::Utils::tmp_check}/stress.sql";
open my $fh, '>', $script or die;
print $fh "SELECT dp_count(id, 'laplace(epsilon=$eps)') FROM t;\n" for 1 .. $queries;
close $fh;

my (@out, @err, @h);
for my $i (0 .. $sessions - 1)
{
	($out[$i], $err[$i]) = ('', '');
	$h[$i] = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'VERBOSITY=verbose', '-d', $node->connstr('postgres') . ' user=ana',
		  '-f', $script ],
		'>', \$out[$i], '2>', \$err[$i]);
}
$_->finish for @h;

my ($answers, $dp001, $other) = (0, 0, 0);
for my $i (0 .. $sessions - 1)
{
	$answers += () = $out[$i] =~ /^-?\d+$/mg;
	$dp001 += () = $err[$i] =~ /ERROR:  DP001: privacy budget of role "ana" exceeded/g;
	my @errors = $err[$i] =~ /ERROR:  (\w+):/g;
	$other += grep { $_ ne 'DP001' } @errors;
}
is($answers + $dp001, $sessions * $queries, "every query was answered or refused ($answers + $dp001)");
is($other, 0, 'the only errors are DP001');
ok($answers > 0 && $dp001 > 0, 'the budget ran out part-way');

my $ledger = $node->safe_psql('postgres',
	q{SELECT count(*), coalesce(sum(epsilon), 0) FROM dp_pg.ledger_entries WHERE role = 'ana'::regrole AND kind = 'charge'});
my ($charges, $sum) = split /\|/, $ledger;
is($charges, $answers, 'one ledger row per answer received');
my $row = $node->safe_psql('postgres',
	q{SELECT charges, epsilon_spent, epsilon_limit FROM dp_pg.budget_rows() WHERE role = 'ana'::regrole});
my ($bcharges, $spent, $blimit) = split /\|/, $row;
is($bcharges, $charges, 'the worker counts the same charges as the ledger');
ok(abs($spent - $sum) < 1e-9, "spent $spent equals the ledger sum $sum");
ok($spent <= $blimit, "spent $spent never exceeds the limit $blimit");
# basic composition is exact here: the budget is used up to the last whole query
ok($answers >= int($limit / $eps) - 1 && $answers <= int($limit / $eps), "$answers answers fill the budget");

# the totals survive a restart unchanged
$node->restart;
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die;
is($node->safe_psql('postgres', q{SELECT charges || '|' || epsilon_spent FROM dp_pg.budget_rows() WHERE role = 'ana'::regrole}),
	"$bcharges|$spent", 'after a restart the totals are the same to the last bit');

done_testing();
