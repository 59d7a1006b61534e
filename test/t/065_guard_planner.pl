# The planner sees no statistics of a protected table when it plans for an
# analyst: its estimates come from the table's size on disk and its column
# types, never from what ANALYZE stored (reltuples, most-common values).
# Observed through debug_print_plan in the server log (the analyst's client
# never receives it): a trusted role's plan (positive control) estimates the
# skewed key's 900 rows from the statistics; the analyst's plan does not.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('planner');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dp_pg'");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE TABLE t AS
		SELECT g AS id, CASE WHEN g <= 900 THEN 'north' ELSE 'south' || g END AS region
		FROM generate_series(1, 1000) g;
	ANALYZE t;
	SELECT dp_pg.protect('t');
	CREATE ROLE ana LOGIN;
	CREATE ROLE trusted LOGIN;
	GRANT SELECT ON t TO trusted;
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die;
$node->safe_psql('postgres', q{SELECT dp_pg.set_budget('ana', 100, 1e-6)});

# the plan estimates (:plan_rows) of one query run by one role, from the server log
sub plan_rows
{
	my ($role, $where) = @_;
	my $marker = "dp_planner_probe_" . int(rand(1e9));
	my $offset = -s $node->logfile;
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET debug_print_plan = on; SET client_min_messages = log; SELECT dp_count(*) IS NOT NULL AS $marker FROM t $where;",
		extra_params => [ '-U', $role ]);
	is($ret, 0, "$role: the dp query runs") or diag $err;
	if ($role eq 'ana')
	{
		unlike($out . $err, qr/plan_rows/, "$role: no plan reaches the analyst's client");
	}
	else
	{
		like($out . $err, qr/plan_rows/, "control: the plan reaches the ${role} role's client");
	}
	my $log = slurp_file($node->logfile, $offset);
	my ($dump) = $log =~ /(\{PLANNEDSTMT.*?$marker.*?)(?:\n\S|\z)/s;
	ok(defined $dump, "$role: its plan is in the server log");
	$dump //= '';
	# 18 writes the field with its path (:plan.plan_rows, :scan.plan.plan_rows)
	my @rows = $dump =~ /:(?:\w+\.)*plan_rows (\d+)/g;
	return \@rows;
}

my $trusted_eq = plan_rows('trusted', q{WHERE region = 'north'});
ok((grep { $_ == 900 } @$trusted_eq), 'control: the trusted role\'s plan estimates 900 rows from the statistics')
	or diag "plan_rows: @$trusted_eq";
my $trusted_all = plan_rows('trusted', '');
ok((grep { $_ == 1000 } @$trusted_all), 'control: the trusted role\'s plan knows reltuples = 1000')
	or diag "plan_rows: @$trusted_all";

my $analyst_eq = plan_rows('ana', q{WHERE region = 'north'});
ok(@$analyst_eq > 0, 'the analyst\'s plan was logged');
ok(!(grep { $_ >= 850 && $_ <= 950 } @$analyst_eq),
	'the analyst\'s plan does not estimate the most common value from the statistics')
	or diag "plan_rows: @$analyst_eq";
my $analyst_all = plan_rows('ana', '');
ok(!(grep { $_ == 1000 } @$analyst_all), 'the analyst\'s plan does not know reltuples')
	or diag "plan_rows: @$analyst_all";

done_testing();
