# dp_pg on a hot standby and after its promotion.
#
# The ledger is written on the primary and dp_pg does not forward charges
# from a standby yet, so a dp query on a hot standby fails closed, at once
# and with an error that says why (55000, "cannot run on a hot standby"),
# for an analyst and a superuser alike, while plain queries on public tables
# run; nothing is charged anywhere.  A promoted synchronous standby starts
# its own ledger worker: dp queries run there, charged on its ledger, whose
# totals include every charge the primary committed before (replicated
# synchronously: nothing lost, nothing charged twice).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'dp_pg'
});
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE TABLE t AS SELECT g AS id, g % 4 AS k FROM generate_series(1, 1000) g;
	CREATE TABLE pub AS SELECT g AS id FROM generate_series(1, 10) g;
	GRANT SELECT ON pub TO ana;
	SELECT dp_pg.protect('t');
});
$primary->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready';
$primary->safe_psql('postgres', q{SELECT dp_pg.set_budget('ana', 10, 1e-6)});

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->append_conf('postgresql.conf', qq{cluster_name = 'standby'});
$standby->start;
$primary->wait_for_catchup($standby);
# from now on a commit on the primary waits for the standby
$primary->append_conf('postgresql.conf', qq{synchronous_standby_names = 'standby'});
$primary->reload;
$primary->poll_query_until('postgres', q{SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'})
  or die 'standby not synchronous';

# two charges on the primary, replicated synchronously
for (1 .. 2)
{
	is($primary->psql('postgres', q{SELECT dp_count(*) IS NOT NULL FROM t}, extra_params => [ '-U', 'ana' ]),
		0, 'a dp query on the primary is answered');
}
$primary->wait_for_catchup($standby);
my $charges_before = $primary->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger_entries WHERE kind = 'charge'});
is($charges_before, 2, 'the primary charged both');

# on the standby: refused at once, with the reason; plain queries run
for my $user ('ana', 'postgres')
{
	my $t0 = time;
	my ($ret, $out, $err) = $standby->psql('postgres', q{\set VERBOSITY verbose
SELECT dp_count(*) FROM t}, extra_params => [ '-U', $user ]);
	my $secs = time - $t0;
	isnt($ret, 0, "$user: a dp query on the standby fails");
	like($err, qr/55000/, "$user: SQLSTATE 55000");
	like($err, qr/cannot run on a hot standby/, "$user: the error says why");
	unlike($out, qr/\d/, "$user: no answer");
	ok($secs < 5, "$user: at once, not after dp_pg.charge_timeout (${secs}s)");
}
is($standby->safe_psql('postgres', q{SELECT count(*) FROM pub}, extra_params => [ '-U', 'ana' ]), 10,
	'plain queries on public tables run on the standby');
is($primary->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger_entries WHERE kind = 'charge'}),
	$charges_before, 'nothing was charged for the refused queries');

# promotion: the standby's own ledger worker starts with the replicated totals
$primary->stop('fast');
$standby->promote;
$standby->poll_query_until('postgres', q{SELECT NOT pg_is_in_recovery()}) or die 'not promoted';
$standby->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready after promotion';
is($standby->safe_psql('postgres', q{SELECT charges FROM dp_pg.budgets WHERE role = 'ana'::regrole}), 2,
	'after promotion the budget holds the primary\'s charges (none lost, none twice)');
is($standby->psql('postgres', q{SELECT dp_count(*) IS NOT NULL FROM t}, extra_params => [ '-U', 'ana' ]),
	0, 'after promotion dp queries run');
is($standby->safe_psql('postgres', q{SELECT charges FROM dp_pg.budgets WHERE role = 'ana'::regrole}), 3,
	'and are charged on the promoted server\'s ledger');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger_entries WHERE kind = 'charge'}), 3,
	'one ledger row per answer');

done_testing();
