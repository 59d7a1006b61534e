# pg_upgrade from the PostgreSQL under test to the newest one, with dp_pg
# preloaded in both clusters.  In binary-upgrade mode dp_pg starts no ledger
# worker (it would hold the ledger database open while pg_upgrade drops and
# restores it, and write the ledger) and its checks stand aside (pg_upgrade
# restores the analysts' grants before the protection rows' data is
# copied).  After the upgrade every budget, spent amount, charge, refusal,
# protection, public key list and domain is on the role or table of the same
# name (a partitioned table's partitions under it, and a month detached from
# it protected on its own), and the analysts are charged again.
#
# The newest PostgreSQL comes from test/newpg.sh; test/all.sh runs this file
# in its newest leg, on a private copy of it with dp_pg's test build, and
# passes the PostgreSQL 15 leg's private copy as DP_OLD_PGBIN.  Without a
# second version this file is skipped.
use strict;
use warnings;
use File::Basename;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't';
use DpLifecycle;

# The two versions: in test/all.sh's newest leg the server under test is the
# newer one and DP_OLD_PGBIN the older one (PostgreSQL 15 with dp_pg's test
# build, from the run's other leg); else DP_UPGRADE_NEWBIN names the newer one.
my ($under_test) = `pg_config --bindir` =~ /(\S+)/;
my ($oldbin, $newbin) = ($ENV{DP_OLD_PGBIN} // '') ne ''
  ? ($ENV{DP_OLD_PGBIN}, $under_test)
  : ($under_test, $ENV{DP_UPGRADE_NEWBIN} // '');
plan skip_all => 'no second PostgreSQL with dp_pg installed (DP_OLD_PGBIN or DP_UPGRADE_NEWBIN; test/all.sh passes one in its newest leg)'
  unless $newbin ne '' && -x "$newbin/pg_upgrade" && -x "$oldbin/pg_config";
my ($oldver) = `$oldbin/pg_config --version` =~ /PostgreSQL (\d+)/;
my ($newver) = `$newbin/pg_config --version` =~ /PostgreSQL (\d+)/;
plan skip_all => "PostgreSQL $newver is not newer than $oldver"
  unless $newver > $oldver;

# (a node of its own version's initdb, not a copy of the newer one's template)
my $old = dp_node('old', install_path => dirname($oldbin), init => { force_initdb => 1 });
$old->start;
life_fixture($old);
my $before = life_state($old);
# Not dp_pg's: this PostgreSQL 15 build stamps every column with an
# attribute option (pg_attver) that no other build knows and that RESET does
# not remove; pg_upgrade would carry it into the new cluster and fail there
# ("unrecognized parameter").  It is cleared from the old catalog first.
for my $db (split /\n/, $old->safe_psql('postgres', q{SELECT datname FROM pg_database WHERE datallowconn}))
{
	$old->safe_psql($db, q{
		UPDATE pg_attribute a SET attoptions = nullif(ARRAY(SELECT o FROM unnest(a.attoptions) o WHERE o NOT LIKE 'pg_attver=%'), '{}')
		FROM pg_class c
		WHERE c.oid = a.attrelid AND a.attoptions::text LIKE '%pg_attver=%'
		  AND c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)});
}
$old->stop;

# PostgreSQL 18 initializes clusters with data checksums; the old one has none
my $new = dp_node('new', install_path => dirname($newbin),
	init => { extra => $newver >= 18 ? [ '--no-data-checksums' ] : [] });
my $dir = PostgreSQL::Test::Utils::tempdir();
my @upgrade = ("$newbin/pg_upgrade", '--no-sync', '--retain', '-d', $old->data_dir, '-D', $new->data_dir,
	'-b', $oldbin, '-B', $newbin, '-p', $old->port, '-P', $new->port, '-s', $new->host);
{
	# pg_upgrade writes its files where it is started
	chdir $dir or die;
	command_ok([ @upgrade, '--check' ], "pg_upgrade --check, $oldver to $newver");
	command_ok(\@upgrade, "pg_upgrade, $oldver to $newver, dp_pg preloaded in both clusters");
}
my $logs = join('', map { slurp_file($_) } glob($new->data_dir . '/pg_upgrade_output.d/*/log/*.log'));
unlike($logs, qr/dp_pg ledger ready/, 'no ledger worker ran in binary-upgrade mode');

$new->start;
dp_ready($new);
is($new->safe_psql('postgres', 'SHOW server_version_num') >= $newver * 10000, 1, "the new cluster runs PostgreSQL $newver");
same_lines(life_state($new), $before, 'budgets, spending, charges, refusals, protections, keys and domains as they were');
is(dp_as($new, 'app', 'ana', q{SELECT abs(dp_count(1, 'laplace(epsilon=0.5)') - 1000) < 60 FROM people}), 't',
	'an analyst is answered');
is($new->safe_psql('postgres', q{SELECT charges FROM dp_pg.budgets WHERE role = 'ana'}), '4', '... and charged');
my ($ret, $out, $err) = dp_try($new, 'app', 'ana', 'SELECT * FROM visits');
isnt($ret, 0, 'raw rows stay refused');
# the partitioned table: answered through its root, its partitions (and the detached month) refused
is(dp_as($new, 'app', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.25)') IS NOT NULL FROM orders WHERE day >= '2024-02-01'}),
	't', 'the protected partitioned table is answered');
for my $part ('orders_2024_01', 'orders_2024_02_h1', 'orders_2023_12')
{
	# (its rows: count(*) would be a dp count, translated, of the detached month's own protection)
	($ret, $out, $err) = dp_try($new, 'app', 'ana', "SELECT id, day FROM $part LIMIT 5");
	isnt($ret, 0, "$part is not read raw") or diag $out;
}

done_testing();
