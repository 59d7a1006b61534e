# A protected table under pg_partman's monthly maintenance (docs/dba.md,
# "pg_partman").  A role that owns the table (not a superuser) runs
# pg_partman; each step of maintenance makes the next month's partition, as
# the months pass (premake grows by one each step: pg_partman counts from
# now()), the month's rows arrive, and an analyst tries the new partition
# directly (refused), its statistics (hidden) and the table through dp
# queries (its rows are counted, exactly under dp_pg.debug_noiseless).
# Retention that keeps the old tables detaches them: each stays protected,
# with the table's declaration, for the analyst too; retention that drops
# them drops their protection.  pg_partman's inherit_privileges would copy
# the analysts' grant onto a partition: refused, the maintenance fails and
# no partition is made (fail closed).  Skipped where pg_partman is not
# installed (the newest leg: no Debian package of it).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't';
use DpLifecycle;

my $node = dp_node('partman');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION dp_pg');
dp_ready($node);
plan skip_all => 'pg_partman is not installed for this PostgreSQL (test/all.sh installs postgresql-15-partman)'
  unless $node->safe_psql('postgres', q{SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_partman'}) eq '1';

my ($ret, $out, $err);
$node->safe_psql('postgres', q{
	CREATE ROLE ana LOGIN;
	CREATE ROLE etl LOGIN;
	SELECT dp_pg.set_budget('ana', 1000, 1e-3);
	CREATE SCHEMA partman;
	CREATE EXTENSION pg_partman SCHEMA partman;
	GRANT ALL ON SCHEMA partman, public TO etl;
	GRANT ALL ON ALL TABLES IN SCHEMA partman TO etl;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA partman TO etl;
	GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA partman TO etl;
	GRANT TEMPORARY ON DATABASE postgres TO etl;
});
# the table starts three months ago, with two months made ahead
dp_as($node, 'postgres', 'etl', q{
	CREATE TABLE sales (id bigint NOT NULL, person int NOT NULL, sold_at timestamptz NOT NULL,
		amount int NOT NULL CHECK (amount BETWEEN 0 AND 100)) PARTITION BY RANGE (sold_at);
	SELECT partman.create_parent('public.sales', 'sold_at', 'native', 'monthly', p_premake := 2,
		p_start_partition := to_char(date_trunc('month', now()) - interval '3 months', 'YYYY-MM-DD'));
	UPDATE partman.part_config SET infinite_time_partitions = true WHERE parent_table = 'public.sales';
	INSERT INTO sales SELECT g, g, date_trunc('month', now()) - interval '3 months' + (g % 80) * interval '1 day', g % 101
		FROM generate_series(1, 400) g;
});
$node->safe_psql('postgres', q{
	SELECT dp_pg.protect('sales', 'person', 1, 1);
	SELECT dp_pg.set_domain('sales', 'amount', 0, 100);
});

sub noiseless
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', "SET dp_pg.debug_noiseless = on; SET ROLE ana; $sql");
}
sub partitions
{
	return $node->safe_psql('postgres',
		q{SELECT string_agg(inhrelid::regclass::text, ' ' ORDER BY inhrelid::regclass::text) FROM pg_inherits WHERE inhparent = 'sales'::regclass});
}
sub newest
{
	return $node->safe_psql('postgres', q{
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'sales'::regclass AND c.relname <> 'sales_default' ORDER BY c.relname DESC LIMIT 1});
}
# the analyst at one step: the premade and new partitions, the table
sub analyst_step
{
	my ($what, $month_start, $rows, $total) = @_;
	for my $part (split / /, partitions())
	{
		($ret, $out, $err) = dp_try($node, 'postgres', 'ana', "SELECT count(*) FROM $part");
		ok($ret != 0 && $out eq '' && $err =~ /is a partition of protected table sales/, "$what: $part is refused on its own")
		  or diag "$out $err";
	}
	is(dp_as($node, 'postgres', 'ana',
		q{SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a WHERE c.relname LIKE 'sales_p%' AND (a.grantee = 0 OR a.grantee = 'ana'::regrole)}),
		'0', "$what: no partition grants PUBLIC or the analyst anything");
	is(dp_as($node, 'postgres', 'ana', q{SELECT bool_and(reltuples IS NULL) FROM pg_class WHERE relname LIKE 'sales%'}), 't',
		"$what: the partitions' sizes are hidden");
	is(noiseless(qq{SELECT dp_count(1, 'laplace(epsilon=1)') FROM sales
		WHERE sold_at >= '$month_start'::timestamptz AND sold_at < '$month_start'::timestamptz + interval '1 month'}), $rows,
		"$what: the month's $rows rows are counted through the table");
	is(noiseless(q{SELECT count(*) FROM sales}), $total, "$what: and the table's $total");
}

my $total = 400;
analyst_step('premade', $node->safe_psql('postgres', q{SELECT date_trunc('month', now()) - interval '3 months'}),
	$node->safe_psql('postgres', q{SELECT count(*) FROM sales WHERE sold_at < date_trunc('month', now()) - interval '2 months'}), $total);
for my $step (1 .. 4)
{
	my $before = partitions();
	dp_as($node, 'postgres', 'etl', q{
		UPDATE partman.part_config SET premake = premake + 1 WHERE parent_table = 'public.sales';
		SELECT partman.run_maintenance('public.sales');
	});
	my $new = newest();
	unlike(" $before ", qr/ $new /, "month $step: maintenance made $new");
	my $start = $node->safe_psql('postgres', qq{SELECT date_trunc('month', now()) + interval '@{[ 2 + $step ]} months'});
	my $rows = 10 * $step;
	dp_as($node, 'postgres', 'etl', qq{INSERT INTO sales SELECT 10000 * $step + g, 10000 * $step + g,
		'$start'::timestamptz + interval '3 days', 5 FROM generate_series(1, $rows) g});
	$total += $rows;
	is($node->safe_psql('postgres', qq{SELECT count(*) FROM $new}), $rows, "month $step: its rows are in the new partition");
	analyst_step("month $step", $start, $rows, $total);
}

# retention that keeps the tables: each old month leaves, protected
my $kept = $node->safe_psql('postgres', q{SELECT count(*) FROM sales WHERE sold_at >= date_trunc('month', now()) - interval '1 month'});
dp_as($node, 'postgres', 'etl', q{
	UPDATE partman.part_config SET retention = '1 month', retention_keep_table = true WHERE parent_table = 'public.sales';
	SELECT partman.run_maintenance('public.sales');
});
my $detached = $node->safe_psql('postgres', q{
	SELECT string_agg(relid::text, ' ' ORDER BY relid::text) FROM dp_pg.protected_tables WHERE relid::text LIKE 'sales_p%'});
like($detached, qr/^sales_p\S+ sales_p\S+$/, "retention detached the two old months, protected ($detached)");
is($node->safe_psql('postgres', q{SELECT count(DISTINCT (privacy_unit, max_groups_contributed, max_rows_per_unit))
	FROM dp_pg.protected_tables WHERE relid::text LIKE 'sales%'}), '1', '... with the table\'s privacy unit and bounds');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.column_domains WHERE relid::text LIKE 'sales_p%'}), '2',
	'... and its domain');
for my $t (split / /, $detached)
{
	($ret, $out, $err) = dp_try($node, 'postgres', 'ana', "SELECT * FROM $t");
	isnt($ret, 0, "$t: no raw row once detached");
	is(dp_as($node, 'postgres', 'ana', "SELECT dp_count(1, 'laplace(epsilon=0.5)') IS NOT NULL FROM $t"), 't',
		"$t: dp queries of its own");
}
is(noiseless(q{SELECT count(*) FROM sales}), $kept, 'the table counts the months it keeps');

# retention that drops the tables: their protection goes with them
dp_as($node, 'postgres', 'etl', q{
	UPDATE partman.part_config SET retention = '0 months', retention_keep_table = false WHERE parent_table = 'public.sales';
	SELECT partman.run_maintenance('public.sales');
});
my $dropped = $node->safe_psql('postgres', q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'sales'::regclass});
ok($dropped > 0, '(retention dropped old months)');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.protected_tables WHERE relid::text LIKE 'sales_p%'}), '2',
	'the months retention dropped take no protection row with them; the kept ones stay');

# inherit_privileges would grant dp_pg_analyst's SELECT on a new partition: refused, nothing made
my $before = partitions();
$node->safe_psql('postgres', q{UPDATE partman.part_config SET inherit_privileges = true, retention = NULL WHERE parent_table = 'public.sales'});
($ret, $out, $err) = dp_try($node, 'postgres', 'etl', q{
	UPDATE partman.part_config SET premake = premake + 1 WHERE parent_table = 'public.sales';
	SELECT partman.run_maintenance('public.sales');
});
isnt($ret, 0, 'inherit_privileges: the maintenance fails');
like($err, qr/dp_pg_analyst is granted only SELECT on protected tables/, '... because the analysts\' grant is refused');
is(partitions(), $before, '... and no partition was made');

done_testing();
