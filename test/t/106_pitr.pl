# Point-in-time recovery does not silently forget charges.
#
# Charges are recorded after a base backup, a restore point is made, and more
# answers are released (and charged).  The DBA exports the ledger (the
# high-water mark that lives outside the cluster).  A point-in-time recovery
# to the restore point rolls the ledger back: its timeline began with a
# recovery that stopped at a target, so the ledger worker holds it (status
# 'held', a WARNING in the server log, every charge and budget change
# refused: no analyst gets an answer) until a superuser imports the exported
# entries (an export that does not continue the ledger is refused) and
# accepts it.  Then every budget -- the roles' and the tables' -- is spent
# exactly as before the restore, the analysts are charged again, and the
# acceptance survives a restart.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't';
use DpLifecycle;

my $primary = dp_node('primary', init => { has_archiving => 1, allows_streaming => 1 });
$primary->start;
life_fixture($primary);
$primary->backup('before');
my $q = q{SELECT abs(dp_count(1, 'laplace(epsilon=0.25)') - 1000) < 120 FROM people};
dp_as($primary, 'app', 'ana', $q) for 1 .. 2;
$primary->safe_psql('postgres', q{SELECT pg_create_restore_point('before_more')});
dp_as($primary, 'app', 'ana', $q) for 1 .. 3;
dp_as($primary, 'app', 'bob', $q);
my $budgets = q{SELECT string_agg(concat_ws(' ', role, round(epsilon_spent::numeric, 9), delta_spent, charges), E'\n'
	ORDER BY role::text) FROM dp_pg.budget_rows()};
my $spent = $primary->safe_psql('postgres', $budgets);
my $tables = q{SELECT string_agg(concat_ws(' ', table_name, round(epsilon_spent::numeric, 9), charges, lifetime_charges), E'\n'
	ORDER BY table_name) FROM dp_pg.table_budgets};
my $tables_spent = $primary->safe_psql('postgres', $tables);
my $dir = PostgreSQL::Test::Utils::tempdir();
# the export: everything up to now (a DBA keeps the id of the last row exported as the high-water mark),
# exact (dp_pg.ledger shows six significant digits: docs/dba.md exports dp_pg.ledger_rows())
$primary->safe_psql('postgres', qq{COPY (SELECT * FROM dp_pg.ledger_rows() WHERE id > 0 ORDER BY id) TO '$dir/export.copy'});
my $segment = $primary->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');
$primary->safe_psql('postgres', 'SELECT pg_switch_wal()');
$primary->poll_query_until('postgres', qq{SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver})
  or die 'WAL not archived';
$primary->stop;

my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init_from_backup($primary, 'before', has_restoring => 1, standby => 0);
$restored->append_conf('postgresql.conf', qq{
recovery_target_name = 'before_more'
recovery_target_action = 'promote'
});
$restored->start;
$restored->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'not promoted';
ok(poll_short($restored, 'postgres', q{SELECT dp_pg.ledger_status() = 'held'}), 'the restored ledger is held');
is($restored->safe_psql('postgres', 'SELECT timeline, recovery_target FROM dp_pg.timeline()'),
	'2|at restore point "before_more"', 'dp_pg.timeline() says how the timeline began');
isnt($restored->safe_psql('postgres', $budgets), $spent, '(the recovery rolled the spending back)');
isnt($restored->safe_psql('postgres', $tables), $tables_spent, '(... the tables\' too)');
ok($restored->log_contains(qr/WARNING:  dp_pg ledger: this server's timeline 2 began with a point-in-time recovery/),
	'the server log says so loudly');
my ($ret, $out, $err) = dp_try($restored, 'app', 'ana', $q);
isnt($ret, 0, 'an analyst\'s dp query is refused');
like($err, qr/it was restored to an earlier point \(timeline 2: at restore point "before_more"\)/, '... saying why');
is($out, '', 'nothing is released');
($ret, $out, $err) = $restored->psql('postgres', q{SELECT dp_pg.set_budget('ana', 10, 1e-6)});
like($err, qr/restored to an earlier point/, 'budget changes wait too');
($ret, $out, $err) = $restored->psql('app', q{SELECT dp_pg.set_table_budget('people', 100, 1e-5)});
like($err, qr/restored to an earlier point/, '... a table budget\'s too');

# an export that does not continue this ledger is refused
$restored->safe_psql('postgres', qq{CREATE TABLE wrong (LIKE dp_pg.ledger_entries);
	COPY wrong FROM '$dir/export.copy';
	UPDATE wrong SET charged_at = charged_at + interval '1 second';});
($ret, $out, $err) = $restored->psql('postgres', q{SELECT dp_pg.import_ledger('wrong')});
like($err, qr/do not continue this ledger/, 'an export that does not continue the ledger is refused');

# import, accept
is($restored->safe_psql('postgres', qq{CREATE TEMP TABLE lost (LIKE dp_pg.ledger_entries);
	COPY lost FROM '$dir/export.copy';
	SELECT dp_pg.import_ledger('lost');}), '8', 'the four charges the recovery cut off are imported (a row each for its role and its table)');
is($restored->safe_psql('postgres', q{SELECT dp_pg.ledger_status()}), 'held', 'still held until accepted');
$restored->safe_psql('postgres', q{SELECT dp_pg.accept_restored_ledger()});
ok(poll_short($restored, 'postgres', q{SELECT dp_pg.ledger_status() = 'ready'}), 'accepted: ready');
is($restored->safe_psql('postgres', $budgets), $spent, 'every budget is spent as before the recovery');
is($restored->safe_psql('postgres', $tables), $tables_spent, '... every table budget too');
is(dp_as($restored, 'app', 'ana', $q), 't', 'analysts are answered and charged again');
is($restored->safe_psql('postgres', q{SELECT charges FROM dp_pg.budgets WHERE role = 'ana'}), '9',
	'... on top of every charge before the recovery');
$restored->restart;
dp_ready($restored);
pass('the acceptance survives a restart');

done_testing();
