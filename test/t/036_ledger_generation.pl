# The guard's lock-free views of the ledger (test builds expose them as C
# functions, declared here): DpLedgerBudgetGeneration changes exactly when
# the budgeted roles or their limits are published and when the worker
# becomes ready or stops being ready; DpLedgerChargedRolesNoWait answers like
# dp_pg.charged_roles() when the ledger is ready, and at once with "unknown"
# when it is not.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('generation');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'dp_pg'
dp_pg.charge_timeout = '60s'
});
$node->start;

# the test-build functions live in a schema of their own, so DROP EXTENSION keeps them
$node->safe_psql('postgres', q{
	CREATE SCHEMA dp_test;
	GRANT USAGE ON SCHEMA dp_test TO PUBLIC;
	CREATE FUNCTION dp_test.generation() RETURNS int8
		AS 'dp_pg', 'dp_debug_budget_generation' LANGUAGE C VOLATILE;
	CREATE FUNCTION dp_test.charged_roles_nowait() RETURNS oid[]
		AS 'dp_pg', 'dp_debug_charged_roles_nowait' LANGUAGE C VOLATILE;
	CREATE ROLE ana LOGIN;
	CREATE ROLE team;
	GRANT team TO ana;
	CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 10) g;
	GRANT SELECT ON t TO ana;
});

# The generation now.
sub generation
{
	return $node->safe_psql('postgres', 'SELECT dp_test.generation()');
}

# Run SQL and say whether the generation changed.
sub changes
{
	my ($sql, $user) = @_;
	my $before = generation();
	$node->safe_psql('postgres', $sql, $user ? (connstr => $node->connstr('postgres') . " user=$user") : ());
	return generation() != $before ? 'changed' : 'same';
}

# Not ready (no CREATE EXTENSION yet): no waiting, "unknown".
is($node->safe_psql('postgres', q{
	SELECT dp_test.charged_roles_nowait() IS NULL, clock_timestamp() - statement_timestamp() < '5s'}),
	't|t', 'not ready: the no-wait membership is unknown, answered at once (charge_timeout is 60 s)');
my $g0 = generation();

$node->safe_psql('postgres', 'CREATE EXTENSION dp_pg');
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready';
my $g1 = generation();
ok($g1 > $g0, "the worker becoming ready changes the generation ($g0 -> $g1)");
is($node->safe_psql('postgres', 'SELECT dp_test.charged_roles_nowait() = ARRAY[]::oid[]'), 't',
	'ready, no budgets: known and empty');

is(changes(q{SELECT dp_pg.set_budget('ana', 10, NULL)}), 'changed', 'set_budget changes it');
is(changes(q{SELECT dp_pg.set_budget('team', 20, NULL)}), 'changed', 'a team budget changes it');

# as the analyst: the same roles as dp_pg.charged_roles(), known
my $nowait = q{
	SELECT (SELECT array_agg(r ORDER BY r) FROM unnest(dp_test.charged_roles_nowait()) r)
	     = (SELECT array_agg(r::oid ORDER BY r::oid) FROM dp_pg.charged_roles() r)
	   AND cardinality(dp_test.charged_roles_nowait()) = 2};
is($node->safe_psql('postgres', $nowait, connstr => $node->connstr('postgres') . ' user=ana'), 't',
	'the no-wait membership equals dp_pg.charged_roles() (own and team budget)');
is($node->safe_psql('postgres', q{SET ROLE ana; SELECT cardinality(dp_test.charged_roles_nowait())}), '2',
	'... also after SET ROLE');

is(changes(q{SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM t}, 'ana'), 'same', 'a charge does not change it');
is(changes(q{SELECT dp_pg.reset_budget('ana')}), 'same', 'reset_budget does not change it');
is(changes(q{SELECT dp_pg.set_budget('ana', 10, NULL)}), 'changed', 'setting the same limits again changes it');
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET dp_pg.debug_poison_charge = on; SELECT dp_pg.set_budget('ana', 1, NULL)});
isnt($ret, 0, 'a set_budget whose write fails is an error');
is($node->safe_psql('postgres', q{SELECT epsilon_limit FROM dp_pg.budgets WHERE role = 'ana'::regrole}), '10',
	'... the limit is unchanged');
my $g2 = generation();
is(changes(q{SELECT dp_pg.drop_budget('team')}), 'changed', 'drop_budget changes it');
cmp_ok($g2, '==', generation() - 1, '... and the failed set_budget had not');

# the worker stops being ready: terminated, it comes back but waits for the
# extension (dropped on purpose: the ledger is not empty)
$node->safe_psql('postgres', 'SET dp_pg.allow_ledger_drop = on; DROP EXTENSION dp_pg;');
my $g3 = generation();
$node->safe_psql('postgres', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'dp_pg ledger'});
$node->poll_query_until('postgres', 'SELECT dp_test.generation() > ' . $g3) or die 'generation did not move';
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'dp_pg ledger'})
  or die 'worker not restarted';
is($node->safe_psql('postgres', q{
	SELECT dp_test.charged_roles_nowait() IS NULL, clock_timestamp() - statement_timestamp() < '5s'},
	connstr => $node->connstr('postgres') . ' user=ana'),
	't|t', 'not ready again: unknown, at once');
is(generation(), $g3 + 1, 'stopping being ready changed it once');

$node->safe_psql('postgres', 'CREATE EXTENSION dp_pg');
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready';
is(generation(), $g3 + 2, 'becoming ready again changed it once more');

done_testing();
