# The released-answer cache across sessions, restarts and crashes
# (src/release/cache.c): a kept answer survives a restart and is served uncharged to
# a new session of the same role; a crash between the charge and the write
# of the entry never serves an answer (the next run is charged again); a
# write committed after an answer was computed makes the next run miss even
# when the writer was in flight while it ran; ALTER ROLE ... SET
# dp_pg.answer_cache = off is a per-role switch; each budget set's entries
# stay within dp_pg.answer_cache_size; with a table budget, the members of a
# team share the team's answers (the table is charged once), another budget
# set's run of the same query is a new release charged to the table, and a
# kept answer is served even when the table's budget is spent.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('cache');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'dp_pg'
dp_pg.answer_cache = on
dp_pg.debug_pause_ms = 3000
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE ROLE anb LOGIN;
	CREATE ROLE anoff LOGIN;
	CREATE TABLE t (id int, k int, v float8);
	INSERT INTO t SELECT g, g % 1000, g % 10 FROM generate_series(1, 20000) g;
	SELECT dp_pg.protect('t');
	SELECT dp_pg.set_public_keys('t', 'k', (SELECT array_agg(g) FROM generate_series(0, 999) g));
	ALTER ROLE anoff SET dp_pg.answer_cache = off;
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
  or die 'ledger not ready';
$node->safe_psql('postgres', q{
	SELECT dp_pg.set_budget('ana', 1e6, 1e-3);
	SELECT dp_pg.set_budget('anb', 1e6, 1e-3);
	SELECT dp_pg.set_budget('anoff', 1e6, 1e-3);
});

sub wait_ready
{
	$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
	  or die 'ledger did not come back';
}

sub charges
{
	my ($role) = @_;
	return $node->safe_psql('postgres',
		qq{SELECT count(*) FROM dp_pg.ledger_entries WHERE role = '$role'::regrole AND kind = 'charge'});
}

# Run a query as role in a new session; returns (answer, served from the cache).
sub run_as
{
	my ($role, $sql) = @_;
	my $out = $node->safe_psql('postgres', "$sql; SELECT coalesce(bool_and(from_cache), false) FROM dp_pg.last_releases",
		connstr => $node->connstr('postgres') . " user=$role");
	my @lines = split /\n/, $out;
	my $served = pop @lines;
	return (join("\n", @lines), $served eq 't');
}

my $q = q{SELECT dp_count(id, 'laplace(epsilon=1)') FROM t WHERE v < 5};

# 1. served to a new session, and after a restart
my $c0 = charges('ana');
my ($a1, $s1) = run_as('ana', $q);
my ($a2, $s2) = run_as('ana', $q);
ok(!$s1 && $s2, 'a second session of the role is served the kept answer');
is($a2, $a1, 'the served answer is the released one');
is(charges('ana') - $c0, 1, 'one charge for two runs');
$node->restart;
wait_ready();
my ($a3, $s3) = run_as('ana', $q);
ok($s3, 'served after a restart');
is($a3, $a1, 'the same answer after a restart');
is(charges('ana') - $c0, 1, 'still one charge after a restart');

# another role, its own budget: a miss
my ($b1, $sb) = run_as('anb', $q);
ok(!$sb, 'another role with its own budget is not served the answer');
is(charges('anb'), 1, 'and is charged');

# 2. the per-role switch
my ($o1, $so1) = run_as('anoff', $q);
my ($o2, $so2) = run_as('anoff', $q);
ok(!$so1 && !$so2, 'ALTER ROLE ... SET dp_pg.answer_cache = off: never served');
is(charges('anoff'), 2, 'each run charged');

# 3. kill -9 of the backend between the charge and the entry's write
my $q2 = q{SELECT dp_count(id, 'laplace(epsilon=1)') FROM t WHERE v < 7};
$node->safe_psql('postgres', q{ALTER SYSTEM SET dp_pg.debug_pause = 'before_cache_write'; SELECT pg_reload_conf()});
sleep 1;
my $c1 = charges('ana');
my $offset = -s $node->logfile;
my ($out, $err) = ('', '');
my $h = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres') . ' user=ana', '-c', $q2 ],
	'>', \$out, '2>', \$err);
$node->wait_for_log(qr/dp_pg debug pause at before_cache_write/, $offset);
my $pid = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE usename = 'ana'});
ok($pid, 'the analyst is paused after the charge, before the entry is written');
kill 'KILL', $pid;
$h->finish;
# the postmaster's crash cycle first (until then the old processes still answer)
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
wait_ready();
$node->safe_psql('postgres', q{ALTER SYSTEM RESET dp_pg.debug_pause; SELECT pg_reload_conf()});
sleep 1;
is(charges('ana') - $c1, 1, 'the charge made before the crash is in the ledger');
my ($k1, $sk1) = run_as('ana', $q2);
ok(!$sk1, 'after the crash the query is not served: no entry was written');
is(charges('ana') - $c1, 2, 'it is charged again');
my ($k2, $sk2) = run_as('ana', $q2);
ok($sk2, 'the answer released after the crash is kept');
is($k2, $k1, 'and served as released');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.answer_cache WHERE query LIKE '%v < 7%'}), 1,
	'one entry for the query');

# 4. a writer in flight while the answer is computed: its commit makes the next run miss
my $q3 = q{SELECT dp_count(id, 'laplace(epsilon=1)') FROM t WHERE v < 9};
run_as('ana', $q3);
my ($wout, $werr, $win) = ('', '', '');
my $w = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres') ],
	'<', \$win, '>', \$wout, '2>', \$werr);
$win .= "BEGIN;\nINSERT INTO t VALUES (100001, 1, 1);\nSELECT 'inserted';\n";
pump $w until $wout =~ /inserted/;
my ($w1, $sw1) = run_as('ana', $q3);
ok($sw1, 'an uncommitted write does not change the answer: served');
$win .= "COMMIT;\nSELECT 'committed';\n";
pump $w until $wout =~ /committed/;
my ($w2, $sw2) = run_as('ana', $q3);
ok(!$sw2, 'the write committed: the next run misses');
my ($w3, $sw3) = run_as('ana', $q3);
ok($sw3, 'and its answer is kept');
$win .= "\\q\n";
$w->finish;

# 5. the quota of a budget set: entries of ~20 kB each under a 64 kB quota
$node->safe_psql('postgres', q{ALTER SYSTEM SET dp_pg.answer_cache_size = '64kB'; SELECT pg_reload_conf()});
sleep 1;
for my $i (1 .. 6)
{
	run_as('anb', qq{SELECT k, dp_count(id, 'laplace(epsilon=1)') FROM t WHERE id > $i GROUP BY k});
}
my $bytes = $node->safe_psql('postgres',
	q{SELECT sum(bytes) FROM dp_pg.answer_cache WHERE roles = ARRAY['anb'::regrole]});
cmp_ok($bytes, '<=', 64 * 1024, "the set's entries stay within the quota ($bytes bytes)");
my ($e6, $se6) = run_as('anb', q{SELECT k, dp_count(id, 'laplace(epsilon=1)') FROM t WHERE id > 6 GROUP BY k});
ok($se6, 'the most recent entry is kept');
my ($e1, $se1) = run_as('anb', q{SELECT k, dp_count(id, 'laplace(epsilon=1)') FROM t WHERE id > 1 GROUP BY k});
ok(!$se1, 'the least recently used entry was removed (a miss, charged)');
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.answer_cache WHERE roles = ARRAY['ana'::regrole]}),
	'>=', 2, "another set's entries are not touched");

# 6. table budgets and teams: the table is charged for each release, not for an answer served again
$node->safe_psql('postgres', q{
	CREATE TABLE t2 AS SELECT g AS id, g % 10 AS v FROM generate_series(1, 5000) g;
	SELECT dp_pg.protect('t2');
	SELECT dp_pg.set_table_budget('t2', 1, 1e-6);
	CREATE ROLE bi;
	CREATE ROLE m1 LOGIN IN ROLE bi;
	CREATE ROLE m2 LOGIN IN ROLE bi;
	SELECT dp_pg.set_budget('bi', 100, 1e-6);
});
sub table_charges
{
	return $node->safe_psql('postgres', q{SELECT charges FROM dp_pg.table_budgets WHERE relid = 't2'::regclass});
}
my $qt = q{SELECT dp_count(id, 'laplace(epsilon=0.5)') FROM t2 WHERE v < 5};
my ($m1a, $m1s) = run_as('m1', $qt);
my ($m2a, $m2s) = run_as('m2', $qt);
ok(!$m1s && $m2s, 'team members share the team\'s answer');
is($m2a, $m1a, '... the same answer');
is(table_charges(), 1, 'the table is charged once for the team\'s release');
my ($aa, $as) = run_as('ana', $qt);
ok(!$as, 'an analyst with a budget of her own: a new release');
is(table_charges(), 2, '... charged to the table too: its budget (1) is now spent');
my ($m1b, $m1bs) = run_as('m1', $qt);
ok($m1bs && $m1b eq $m1a, 'a kept answer is served to the team although the table\'s budget is spent');
is(table_charges(), 2, '... uncharged');
my ($ret, $tout, $terr) = $node->psql('postgres', q{SELECT dp_count(id, 'laplace(epsilon=0.5)') FROM t2 WHERE v < 3},
	connstr => $node->connstr('postgres') . ' user=m2');
like($terr, qr/privacy budget of table "t2" exceeded/, 'a new query on the table is refused by the table\'s budget');

$node->stop;
done_testing();
