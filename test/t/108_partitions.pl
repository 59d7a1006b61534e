# Protected partitioned tables and inheritance parents (src/guard/partitions.c,
# src/common/protected.c; docs/dba.md, "Partitioned tables").
#
#  1. protect() on a partitioned table with a sub-partitioned month and a
#     default partition: the partitions lose PUBLIC's and the analysts'
#     privileges; an analyst reads the table through dp queries only,
#     charged once; each partition (by SELECT, a dp query, COPY, a view, an
#     INSERT) is refused, whatever privileges it holds.
#  2. Exact bounded values (dp_pg.debug_noiseless): each person's rows are
#     bounded across all partitions (not per partition); domains and public
#     keys of the table hold in every partition.
#  3. The planner's tools, seen in the analyst's plans (auto_explain, in the
#     server log only): plan-time pruning, run-time pruning with bound
#     parameters (generic plans) and with run-time constants (current_date),
#     parallel append, partitionwise aggregation.
#  4. Partitions later: CREATE TABLE ... PARTITION OF, ATTACH of a clean
#     table (its rows are answered), ATTACH or PARTITION OF of a table an
#     analyst could shape (its owner, PUBLIC's or an analyst's privileges,
#     an analyst's schema) refused; DETACH, DETACH CONCURRENTLY and a
#     sub-partition's DETACH leave the table protected with the root's unit,
#     domains and keys (a rolled-back DETACH leaves nothing), until a
#     superuser unprotects it.
#  5. An inheritance parent: protected with its children, a child made
#     later is one; ONLY reads the parent's rows; an unprotected parent of a
#     protected table is refused unless read with ONLY; NO INHERIT keeps the
#     child protected.
#  6. pg_dump / pg_restore into another database, and pg_upgrade (to the
#     same version here; t/103 to the newest): every protection by name, the
#     partitions under their table, answered and refused as before.
#  7. protect() right after a bulk load does not deadlock with VACUUM
#     ANALYZE: deterministically (a session holding the table as
#     autovacuum does and analyzing it while protect() waits), with the old
#     order of the same statements as the positive control (it deadlocks),
#     and live, against autovacuum slowed down on tables just loaded.
use strict;
use warnings;
use File::Basename;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use lib 't';
use DpLifecycle;

my $node = dp_node('partitions');
$node->append_conf('postgresql.conf', q{
max_parallel_workers_per_gather = 2
autovacuum_naptime = 1
deadlock_timeout = '500ms'
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION dp_pg');
dp_ready($node);
my ($ret, $out, $err);

$node->safe_psql('postgres', q{
	CREATE ROLE ana LOGIN;
	CREATE ROLE other LOGIN;
	CREATE ROLE dba LOGIN;
	SELECT dp_pg.set_budget('ana', 1000, 1e-3);
	-- the analyst's plans go to the server log (never to its client)
	ALTER ROLE ana SET session_preload_libraries = 'auto_explain';
	ALTER ROLE ana SET auto_explain.log_min_duration = 0;
	CREATE TABLE orders (id int NOT NULL, person int NOT NULL, day date NOT NULL,
		amount int NOT NULL CHECK (amount BETWEEN 0 AND 1000), region text NOT NULL) PARTITION BY RANGE (day);
	CREATE TABLE orders_2024_01 PARTITION OF orders FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
	CREATE TABLE orders_2024_02 PARTITION OF orders FOR VALUES FROM ('2024-02-01') TO ('2024-03-01');
	CREATE TABLE orders_2024_03 PARTITION OF orders FOR VALUES FROM ('2024-03-01') TO ('2024-04-01')
		PARTITION BY HASH (person);
	CREATE TABLE orders_2024_03_h0 PARTITION OF orders_2024_03 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
	CREATE TABLE orders_2024_03_h1 PARTITION OF orders_2024_03 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
	CREATE TABLE orders_default PARTITION OF orders DEFAULT;
	-- 200 persons; person p has p % 7 + 1 rows, spread over the months
	INSERT INTO orders
		SELECT row_number() OVER (), p, DATE '2024-01-01' + (p * 7 + k * 31) % 91, (p * 13 + k) % 1001, chr(97 + (p + k) % 3)
		FROM generate_series(1, 200) p, generate_series(1, 7) k WHERE k <= p % 7 + 1;
	INSERT INTO orders VALUES (100000, 1, '2025-06-01', 5, 'a');	-- in the default partition
	GRANT SELECT, INSERT ON orders_2024_01 TO ana;
	GRANT SELECT ON orders_2024_02 TO PUBLIC;
});
($ret, $out, $err) = $node->psql('postgres', q{SELECT dp_pg.protect('orders', 'person', 3, 2)});
is($ret, 0, 'protect() takes a partitioned table');
like($err, qr/revoked the privileges of analyst ana on protected table public\.orders_2024_01/,
	'... and revokes an analyst\'s privileges on a partition, with a warning');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a
	WHERE c.relname LIKE 'orders_%' AND (a.grantee = 0 OR a.grantee = 'ana'::regrole)}), '0',
	'no partition keeps a privilege of PUBLIC or of the analyst');
$node->safe_psql('postgres', q{
	SELECT dp_pg.set_domain('orders', 'amount', 0, 500);
	SELECT dp_pg.set_public_keys('orders', 'region', ARRAY['a', 'b', 'c']);
	GRANT SELECT, INSERT ON orders_2024_02, orders_2024_03_h1 TO ana;	-- a DBA's later grants
});

sub charges
{
	return $node->safe_psql('postgres', q{SELECT charges FROM dp_pg.budget_rows() WHERE role = 'ana'::regrole});
}

# 1. the table through dp queries only, charged once; its partitions never
my $c0 = charges();
is(dp_as($node, 'postgres', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders}), 't',
	'an analyst\'s dp query on the partitioned table is answered');
is(charges(), $c0 + 1, '... and charged once');
for my $part ('orders_2024_01', 'orders_2024_02', 'orders_2024_03', 'orders_2024_03_h1', 'orders_default')
{
	for my $sql ("SELECT count(*) FROM $part", "SELECT dp_count(1, 'laplace(epsilon=0.1)') FROM $part",
		"SELECT * FROM ONLY $part LIMIT 1", "COPY $part TO STDOUT", "INSERT INTO $part SELECT * FROM $part",
		"CREATE TEMP VIEW v AS SELECT * FROM $part; SELECT count(*) FROM v",
		"SELECT dp_count(1, 'laplace(epsilon=0.1)') FROM (SELECT * FROM orders UNION ALL SELECT * FROM $part) u")
	{
		my $c = charges();
		($ret, $out, $err) = dp_try($node, 'postgres', 'ana', $sql);
		ok($ret != 0 && $out eq '' && charges() == $c, "refused, uncharged: $sql") or diag("out: $out\nerr: $err");
	}
}
like($err, qr/analysts read it only through orders|a dp query reads exactly one protected table/,
	'the refusal names the table to read');
($ret, $out, $err) = dp_try($node, 'postgres', 'ana', 'SELECT count(*) FROM orders_2024_03_h0');
like($err, qr/orders_2024_03_h0 is a partition of protected table orders: analysts read it only through orders/,
	'a sub-partition names the table at the top');
is(dp_as($node, 'postgres', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM ONLY orders}), 't',
	'ONLY the partitioned table is a dp query too (it has no rows of its own)');
for my $sql (q{SELECT pg_relation_size('orders_2024_02') IS NULL AND pg_total_relation_size('orders_2024_03_h1') IS NULL},
	q{SELECT bool_and(reltuples IS NULL AND relpages IS NULL) FROM pg_class WHERE relname LIKE 'orders%'},
	q{SELECT count(*) = 0 FROM pg_stats WHERE tablename LIKE 'orders%'})
{
	$node->safe_psql('postgres', 'ANALYZE orders');
	is(dp_as($node, 'postgres', 'ana', $sql), 't', "sizes and statistics of every partition are hidden: $sql");
}
($ret, $out, $err) = dp_try($node, 'postgres', 'ana', q{SELECT dp_pg.synthesize('orders', 'twin', 'laplace(epsilon=1)')});
isnt($ret, 0, 'no synthetic twin of a partitioned table');
($ret, $out, $err) = dp_try($node, 'postgres', 'ana', q{SELECT dp_pg.synthesize('orders_2024_01', 'twin', 'laplace(epsilon=1)')});
isnt($ret, 0, '... nor of one of its partitions');

# 2. exact bounded values: a person is bounded across every partition
sub noiseless
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', "SET dp_pg.debug_noiseless = on; SET ROLE ana; $sql");
}
my $want = $node->safe_psql('postgres',
	q{SELECT sum(least(n, 2)) FROM (SELECT count(*) AS n FROM orders GROUP BY person) s});
is(noiseless(q{SELECT dp_count(1, 'laplace(epsilon=1)') FROM orders}), $want,
	"each person counts at most max_rows_per_unit = 2 rows across all partitions ($want)");
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM orders');
cmp_ok($want, '<', $rows, "(fewer than the $rows rows: persons have rows in several months)");
# (units.c: a person's sum of values clamped to the domain, clamped to [0, least(its rows, 2) * 500])
my $want_sum = $node->safe_psql('postgres', q{
	SELECT sum(least(s, least(n, 2) * 500)) FROM (SELECT count(*) AS n, sum(least(amount, 500)) AS s FROM orders GROUP BY person) x});
is(noiseless(q{SELECT sum(amount) FROM orders}), $want_sum,
	"a plain sum is clamped to the domain and bounded per person across all partitions ($want_sum)");
is(noiseless(q{SELECT string_agg(region, ',' ORDER BY region) FROM (SELECT region, dp_count(1, 'laplace(epsilon=1)') FROM orders WHERE day < '2024-01-02' GROUP BY region) s}),
	'a,b,c', 'the public keys of the table list every key over the partitions read');

# 3. the planner's tools, in the analyst's own plans
sub plan_of
{
	my ($sql, $setup) = @_;
	my $offset = -s $node->logfile;
	dp_as($node, 'postgres', 'ana', ($setup // '') . $sql);
	my $log = slurp_file($node->logfile, $offset);
	return $log;
}
my $plan = plan_of(q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders WHERE day >= '2024-03-01' AND day < '2024-04-01';});
like($plan, qr/orders_2024_03_h0/, 'plan-time pruning: the selected month is read');
unlike($plan, qr/orders_2024_0[12]\b|orders_default/, '... and no other partition');
$plan = plan_of(q{EXECUTE q('2024-02-01', '2024-03-01');},
	q{SET plan_cache_mode = force_generic_plan; PREPARE q(date, date) AS
	  SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders WHERE day >= $1 AND day < $2;});
like($plan, qr/Subplans Removed: [1-9]/, 'run-time pruning with bound parameters (a generic plan)');
$plan = plan_of(q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders WHERE day >= current_date - 30;});
like($plan, qr/Subplans Removed: [1-9]/, 'run-time pruning with a run-time constant (current_date - 30)');
is(dp_as($node, 'postgres', 'ana',
	q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders WHERE day >= current_date - interval '5000 days'}),
	't', '... whose value is bound before the query runs');
$plan = plan_of(q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders;},
	q{SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;});
like($plan, qr/Parallel Append/, 'parallel append over the partitions');
$node->safe_psql('postgres', q{
	CREATE TABLE visits (id int NOT NULL, ward text NOT NULL, cost int NOT NULL CHECK (cost BETWEEN 0 AND 100))
		PARTITION BY LIST (ward);
	CREATE TABLE visits_a PARTITION OF visits FOR VALUES IN ('a');
	CREATE TABLE visits_b PARTITION OF visits FOR VALUES IN ('b');
	CREATE TABLE visits_c PARTITION OF visits FOR VALUES IN ('c');
	INSERT INTO visits SELECT g, chr(97 + g % 3), g % 101 FROM generate_series(1, 30000) g;
	SELECT dp_pg.protect('visits');
});
$plan = plan_of(q{SELECT dp_sum(cost, 0, 100, 'laplace(epsilon=0.1)') IS NOT NULL FROM visits WHERE ward <> 'c';},
	q{SET enable_partitionwise_aggregate = on;});
like($plan, qr/Append.*Partial Aggregate.*visits_a.*Partial Aggregate.*visits_b/s,
	'partitionwise aggregation: a partial aggregate per partition');
unlike($plan, qr/ERROR/, '(no error)');
is(noiseless(q{SET enable_partitionwise_aggregate = on; SELECT dp_sum(cost, 0, 100, 'laplace(epsilon=1)') FROM visits WHERE ward <> 'c'}),
	$node->safe_psql('postgres', q{SELECT sum(cost) FROM visits WHERE ward <> 'c'}), '... summing every partition once');

# 4. partitions later
$node->safe_psql('postgres', q{
	CREATE TABLE orders_2024_04 PARTITION OF orders FOR VALUES FROM ('2024-04-01') TO ('2024-05-01');
	INSERT INTO orders_2024_04 SELECT 200000 + g, 1000 + g, '2024-04-15', 10, 'a' FROM generate_series(1, 50) g;
	GRANT SELECT ON orders_2024_04 TO ana;
	CREATE TABLE clean (LIKE orders INCLUDING ALL);
	INSERT INTO clean SELECT 300000 + g, 2000 + g, '2024-05-15', 10, 'b' FROM generate_series(1, 70) g;
	ALTER TABLE orders ATTACH PARTITION clean FOR VALUES FROM ('2024-05-01') TO ('2024-06-01');
});
($ret, $out, $err) = dp_try($node, 'postgres', 'ana', 'SELECT count(*) FROM orders_2024_04');
like($err, qr/is a partition of protected table orders/, 'a partition made later is refused on its own');
is(noiseless(q{SELECT dp_count(1, 'laplace(epsilon=1)') FROM orders WHERE day >= '2024-04-01' AND day < '2024-06-01'}), '120',
	'its rows and an attached table\'s are read through the table (50 + 70 persons)');
$node->safe_psql('postgres', q{
	CREATE SCHEMA anas AUTHORIZATION ana;
	CREATE TABLE owned_by_ana (LIKE orders INCLUDING ALL); ALTER TABLE owned_by_ana OWNER TO ana;
	CREATE TABLE public_grant (LIKE orders INCLUDING ALL); GRANT SELECT ON public_grant TO PUBLIC;
	CREATE TABLE ana_writes (LIKE orders INCLUDING ALL); GRANT INSERT ON ana_writes TO ana;
	CREATE ROLE writers; GRANT writers TO ana; CREATE TABLE group_writes (LIKE orders INCLUDING ALL); GRANT UPDATE (amount) ON group_writes TO writers;
	CREATE TABLE anas.in_ana_schema (LIKE orders INCLUDING ALL);
});
my $month = 6;
for my $case ([ 'owned_by_ana', qr/belongs to analyst ana/ ], [ 'public_grant', qr/PUBLIC holds privileges/ ],
	[ 'ana_writes', qr/analyst ana holds privileges/ ], [ 'group_writes', qr/analyst ana \(through role writers\)/ ],
	[ 'anas.in_ana_schema', qr/depends on schema anas, which belongs to analyst ana/ ])
{
	my ($table, $why) = @$case;
	my $m = sprintf('2024-%02d-01', $month);
	my $n = sprintf('2024-%02d-01', $month + 1);
	$month++;
	($ret, $out, $err) = $node->psql('postgres', "ALTER TABLE orders ATTACH PARTITION $table FOR VALUES FROM ('$m') TO ('$n')");
	isnt($ret, 0, "ATTACH PARTITION $table is refused, also for a superuser");
	like($err, qr/cannot be part of protected table orders: .*$why/, '... saying why') or diag $err;
}
($ret, $out, $err) = $node->psql('postgres',
	q{CREATE TABLE anas.new_part PARTITION OF orders FOR VALUES FROM ('2025-01-01') TO ('2025-02-01')});
like($err, qr/depends on schema anas, which belongs to analyst ana/, 'CREATE TABLE ... PARTITION OF in an analyst\'s schema is refused');
($ret, $out, $err) = $node->psql('postgres', q{
	CREATE TABLE sub_parted (LIKE orders INCLUDING ALL) PARTITION BY LIST (region);
	CREATE TABLE sub_a PARTITION OF sub_parted FOR VALUES IN ('a'); ALTER TABLE sub_a OWNER TO ana;
	ALTER TABLE orders ATTACH PARTITION sub_parted FOR VALUES FROM ('2025-02-01') TO ('2025-03-01')});
like($err, qr/sub_a cannot be part of protected table orders: it belongs to analyst ana/,
	'a partitioned table is attached only if none of its partitions could be shaped');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'orders'::regclass}), '6',
	'nothing refused was attached');
# an analyst's own DDL on the family meets the fence
for my $sql (q{ALTER TABLE orders DETACH PARTITION orders_2024_04},
	q{CREATE TABLE anas.x PARTITION OF orders FOR VALUES FROM ('2026-01-01') TO ('2026-02-01')},
	q{ALTER TABLE orders_2024_04 ADD COLUMN x int}, q{DROP TABLE orders_2024_04}, q{TRUNCATE orders_2024_04},
	q{ANALYZE orders_2024_03_h1}, q{VACUUM orders_2024_01})
{
	($ret, $out, $err) = dp_try($node, 'postgres', 'ana', $sql);
	isnt($ret, 0, "an analyst's $sql is refused");
}

# DETACH: the table stays protected with the root's declaration
sub state_of
{
	my ($t) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT concat_ws(' ', p.privacy_unit, p.max_groups_contributed, p.max_rows_per_unit,
			(SELECT string_agg(attname || ':' || lower || '..' || upper, ',') FROM dp_pg.column_domains d WHERE d.relid = p.relid),
			(SELECT string_agg(attname || ':' || keys::text, ',') FROM dp_pg.public_keys k WHERE k.relid = p.relid),
			c.relrowsecurity, EXISTS (SELECT 1 FROM aclexplode(c.relacl) a WHERE a.grantee IN (0, 'ana'::regrole)))
		FROM dp_pg.protected_tables p JOIN pg_class c ON c.oid = p.relid WHERE p.relid = '$t'::regclass});
}
$node->safe_psql('postgres', q{BEGIN; ALTER TABLE orders DETACH PARTITION orders_2024_01; ROLLBACK;});
is(state_of('orders_2024_01'), '', 'a DETACH rolled back leaves no protection of its own');
($ret, $out, $err) = $node->psql('postgres', q{ALTER TABLE orders DETACH PARTITION orders_2024_01});
like($err, qr/orders_2024_01 stays protected as it leaves public\.orders/, 'DETACH PARTITION says the table stays protected');
is(state_of('orders_2024_01'), 'person 3 2 amount:0..500 region:{a,b,c} t f',
	'... with the unit, domains and public keys of the table it left');
# (no concurrent detach beside a default partition: it leaves first, protected too)
$node->safe_psql('postgres', q{ALTER TABLE orders DETACH PARTITION orders_default});
is(state_of('orders_default'), 'person 3 2 amount:0..500 region:{a,b,c} t f', 'the default partition detached stays protected');
$node->safe_psql('postgres', q{ALTER TABLE orders DETACH PARTITION orders_2024_02 CONCURRENTLY});
is(state_of('orders_2024_02'), 'person 3 2 amount:0..500 region:{a,b,c} t f',
	'DETACH PARTITION CONCURRENTLY too (its earlier grant to the analyst revoked)');
$node->safe_psql('postgres', q{ALTER TABLE orders_2024_03 DETACH PARTITION orders_2024_03_h1});
is(state_of('orders_2024_03_h1'), 'person 3 2 amount:0..500 region:{a,b,c} t f', 'a sub-partition detached from its month too');
for my $t ('orders_2024_01', 'orders_2024_02', 'orders_2024_03_h1', 'orders_default')
{
	($ret, $out, $err) = dp_try($node, 'postgres', 'ana', "SELECT * FROM $t");
	isnt($ret, 0, "$t: no raw row once detached");
	is(dp_as($node, 'postgres', 'ana', "SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM $t"), 't',
		"$t: a dp query of its own, bounded per person");
}
$want = $node->safe_psql('postgres',
	q{SELECT sum(least(n, 2)) FROM (SELECT count(*) AS n FROM orders_2024_01 GROUP BY person) s});
is(noiseless(q{SELECT dp_count(1, 'laplace(epsilon=1)') FROM orders_2024_01}), $want, '... with the unit bound of the table it left');
$node->safe_psql('postgres', q{SELECT dp_pg.unprotect('orders_2024_01')});
($ret, $out, $err) = dp_try($node, 'postgres', 'ana', 'SELECT count(*) FROM orders_2024_01');
like($err, qr/permission denied/, 'a superuser\'s unprotect() ends it: the analyst holds no privilege');
# attached again: a member again, its own declaration kept for the next detach
$node->safe_psql('postgres', q{ALTER TABLE orders ATTACH PARTITION orders_2024_02 FOR VALUES FROM ('2024-02-01') TO ('2024-03-01')});
($ret, $out, $err) = dp_try($node, 'postgres', 'ana', "SELECT dp_count(1, 'laplace(epsilon=0.1)') FROM orders_2024_02");
like($err, qr/is a partition of protected table orders/, 'a protected table attached again is read only through the table');

# 5. an inheritance parent
$node->safe_psql('postgres', q{
	CREATE TABLE events (id int, person int NOT NULL, kind text NOT NULL);
	CREATE TABLE events_2024 () INHERITS (events);
	INSERT INTO events SELECT g, g, 'parent' FROM generate_series(1, 10) g;
	INSERT INTO events_2024 SELECT g, 100 + g, 'child' FROM generate_series(1, 40) g;
	SELECT dp_pg.protect('events', 'person', 1, 1);
	CREATE TABLE events_2025 () INHERITS (events);
	INSERT INTO events_2025 SELECT g, 200 + g, 'later' FROM generate_series(1, 25) g;
	GRANT SELECT ON events_2024, events_2025 TO ana;
	CREATE TABLE pubparent (id int, person int NOT NULL, kind text NOT NULL);
	CREATE TABLE secret (id int, person int NOT NULL, kind text NOT NULL);
	INSERT INTO pubparent VALUES (1, 1, 'public');
	INSERT INTO secret VALUES (1, 1, 'secret');
	SELECT dp_pg.protect('secret');
	ALTER TABLE secret INHERIT pubparent;
	GRANT SELECT ON pubparent TO ana;
});
is(noiseless(q{SELECT dp_count(1, 'laplace(epsilon=1)') FROM events}), '75', 'an inheritance parent is read with its children, also one made later');
is(noiseless(q{SELECT dp_count(1, 'laplace(epsilon=1)') FROM ONLY events}), '10', 'ONLY reads its own rows');
for my $sql ('SELECT count(*) FROM events_2025', 'SELECT count(*) FROM events_2024', 'SELECT count(*) FROM pubparent',
	'SELECT * FROM (SELECT * FROM pubparent) s')
{
	($ret, $out, $err) = dp_try($node, 'postgres', 'ana', $sql);
	ok($ret != 0 && $out eq '', "refused: $sql") or diag $out;
}
like($err, qr/pubparent holds the rows of protected table secret/, 'an unprotected parent of a protected table is refused, saying why');
is(dp_as($node, 'postgres', 'ana', 'SELECT kind FROM ONLY pubparent'), 'public', '... unless read with ONLY');
$node->safe_psql('postgres', q{ALTER TABLE events_2025 NO INHERIT events});
is(state_of('events_2025'), 'person 1 1 t f', 'NO INHERIT keeps the child protected');

# 6. pg_dump / pg_restore, and pg_upgrade: protections by name
my @conn = ('-h', $node->host, '-p', $node->port);
my $dir = PostgreSQL::Test::Utils::tempdir();
my $protected = q{SELECT string_agg(concat_ws(' ', relid::regclass, privacy_unit, max_groups_contributed, max_rows_per_unit), E'\n'
	ORDER BY relid::regclass::text) FROM dp_pg.protected_tables};
my $tree = q{SELECT string_agg(inhparent::regclass || ' ' || inhrelid::regclass, E'\n' ORDER BY inhparent::regclass::text, inhrelid::regclass::text)
	FROM pg_inherits WHERE inhparent::regclass::text LIKE 'orders%' OR inhparent::regclass::text LIKE 'events%'};
my $before = $node->safe_psql('postgres', $protected) . "\n" . $node->safe_psql('postgres', $tree);
$node->safe_psql('postgres', q{DROP SCHEMA anas CASCADE; DROP TABLE owned_by_ana, public_grant, ana_writes, group_writes, sub_parted});
command_ok([ 'pg_dump', @conn, '-Fc', '-f', "$dir/db.dump", 'postgres' ], 'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
command_ok([ 'pg_restore', @conn, '--exit-on-error', '-d', 'restored', "$dir/db.dump" ], 'pg_restore into another database');
is($node->safe_psql('restored', $protected) . "\n" . $node->safe_psql('restored', $tree), $before,
	'every protection by name, the partitions under their tables');
sub answered_and_refused
{
	my ($n, $db, $what) = @_;
	is(dp_as($n, $db, 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders WHERE day >= '2024-03-01'}), 't',
		"$what: the partitioned table is answered");
	for my $t ('orders_2024_02', 'orders_2024_03_h0', 'orders_2024_04', 'orders_2024_03_h1', 'events_2024')
	{
		my ($r, $o, $e) = dp_try($n, $db, 'ana', "SELECT * FROM $t");
		ok($r != 0 && $o eq '', "$what: $t is not read raw") or diag $o;
	}
}
answered_and_refused($node, 'restored', 'restored');

SKIP:
{
	my $bindir = `pg_config --bindir`;
	chomp $bindir;
	skip 'no pg_upgrade', 9 unless -x "$bindir/pg_upgrade";
	my $old = dp_node('upgrade_old', init => { force_initdb => 1 });
	$old->start;
	$old->safe_psql('postgres', 'CREATE ROLE ana LOGIN; CREATE ROLE other LOGIN; CREATE ROLE dba LOGIN; CREATE ROLE writers;');
	command_ok([ 'pg_restore', '-h', $old->host, '-p', $old->port, '--exit-on-error', '-d', 'postgres', "$dir/db.dump" ],
		'the same database in a cluster to upgrade');
	dp_ready($old);
	$old->stop;
	my $new = dp_node('upgrade_new', init => { force_initdb => 1 });
	my $cwd = PostgreSQL::Test::Utils::tempdir();
	chdir $cwd or die;
	command_ok([ "$bindir/pg_upgrade", '--no-sync', '-d', $old->data_dir, '-D', $new->data_dir, '-b', $bindir, '-B', $bindir,
		'-p', $old->port, '-P', $new->port, '-s', $new->host ], 'pg_upgrade');
	$new->start;
	dp_ready($new);
	is($new->safe_psql('postgres', $protected) . "\n" . $new->safe_psql('postgres', $tree), $before,
		'pg_upgrade: every protection by name, the partitions under their tables');
	answered_and_refused($new, 'postgres', 'upgraded');
	$new->stop;
}

# 7. protect() right after a bulk load, against VACUUM ANALYZE
sub race
{
	my ($table, $protect_sql) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TABLE $table (a int, b text) WITH (autovacuum_enabled = off);
		INSERT INTO $table SELECT g, repeat('x', 20) FROM generate_series(1, 50000) g;
	});
	# a session that holds the table as autovacuum's VACUUM ANALYZE does, then updates its statistics
	my ($bout, $berr) = ('', '');
	my $b = IPC::Run::start(
		[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', 'BEGIN', '-c', "LOCK $table IN SHARE UPDATE EXCLUSIVE MODE",
			'-c', 'SELECT pg_sleep(1.5)', '-c', "ANALYZE $table", '-c', 'COMMIT' ],
		'>', \$bout, '2>', \$berr);
	select(undef, undef, undef, 0.5);
	my ($r, $o, $e) = $node->psql('postgres', $protect_sql);
	$b->finish;
	return "$e\n$berr";
}
my $errs = race('bulk1', q{SELECT dp_pg.protect('bulk1')});
unlike($errs, qr/deadlock/, 'protect() of a table being analyzed waits, and does not deadlock');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.protected_tables WHERE relid = 'bulk1'::regclass}), '1', '... and protects it');
$errs = race('bulk2', q{BEGIN; REVOKE ALL ON bulk2 FROM PUBLIC; ALTER TABLE bulk2 ENABLE ROW LEVEL SECURITY; COMMIT;});
like($errs, qr/deadlock detected/, 'positive control: the old order (a catalog row changed before the table is locked) deadlocks');
# live: autovacuum, slowed down, on tables just loaded
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET autovacuum_vacuum_cost_delay = '20ms';
	ALTER SYSTEM SET autovacuum_vacuum_cost_limit = 20;
	SELECT pg_reload_conf();
});
my ($caught, $failed) = (0, 0);
for my $i (1 .. 3)
{
	$node->safe_psql('postgres', qq{
		CREATE TABLE live$i (a int, b text) WITH (autovacuum_vacuum_insert_threshold = 100, autovacuum_analyze_threshold = 100);
		INSERT INTO live$i SELECT g, repeat('y', 30) FROM generate_series(1, 100000) g;
	});
	my $seen = 0;
	for (1 .. 100)
	{
		$seen = 1, last if $node->safe_psql('postgres',
			qq{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND query LIKE '%live$i%'}) > 0;
		select(undef, undef, undef, 0.1);
	}
	$caught += $seen;
	($ret, $out, $err) = $node->psql('postgres', qq{SELECT dp_pg.protect('live$i')});
	$failed++ if $ret != 0;
	diag("live$i: $err") if $ret != 0;
}
is($failed, 0, "protect() during autovacuum of a table just loaded never failed (autovacuum seen on $caught of 3 tables)");

done_testing();
