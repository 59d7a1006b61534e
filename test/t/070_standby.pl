# dp_pg on hot standbys: a primary and two standbys (one synchronous), made
# the plain way (a base backup and primary_conninfo, no dp_pg setting).
#
# A dp query on a standby is charged on the primary's ledger before any row
# is read: the standby's ledger worker forwards the charge through the
# standby's primary_conninfo.  Checked here:
#  - answers on every server, each with exactly one charge row on the
#    primary; refusals (DP001) the same as on the primary, logged there;
#  - analysts on all three servers racing for the last of one budget: never
#    more answers than the budget holds, every answer charged;
#  - the primary unreachable: the standby fails closed at once (08001/08006);
#  - kill -9 of the standby's backend and of the primary at each step of a
#    forwarded charge, and the standby's ledger worker stopped while it
#    forwards: no answer without its charge, nothing charged twice;
#  - table budgets: a standby's charge carries the table's budget to the
#    primary; analysts of two roles on all three servers racing for the last
#    of one table's budget never get more answers than it holds, and every
#    answer is charged to the table and to its role once;
#  - the forwarding functions: analysts get 42501; a REPLICATION role may
#    forward (dp_pg.primary_conninfo, the superuser-only override);
#  - promotion of the synchronous standby with a charge in flight: the
#    promoted server's ledger holds every charge the primary committed, the
#    other standby forwards to it, nothing is answered uncharged or charged twice.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $conf = qq{
shared_preload_libraries = 'dp_pg'
dp_pg.charge_timeout = 4000
dp_pg.debug_pause_ms = 2500
restart_after_crash = on
};
my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', $conf);
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE ROLE racer LOGIN;
	CREATE ROLE fwd LOGIN REPLICATION;
	CREATE TABLE t AS SELECT g AS id, g % 4 AS k FROM generate_series(1, 1000) g;
	CREATE TABLE pub AS SELECT g AS id FROM generate_series(1, 10) g;
	GRANT SELECT ON pub TO ana;
	SELECT dp_pg.protect('t');
});
$primary->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready';
$primary->safe_psql('postgres', q{SELECT dp_pg.set_budget('ana', 1000, 1e-6)});

$primary->backup('b');
my @standbys;
for my $name ('standby1', 'standby2')
{
	my $s = PostgreSQL::Test::Cluster->new($name);
	$s->init_from_backup($primary, 'b', has_streaming => 1);
	$s->append_conf('postgresql.conf', qq{cluster_name = '$name'});
	$s->start;
	push @standbys, $s;
}
my ($s1, $s2) = @standbys;
$primary->wait_for_catchup($_) for @standbys;
# a commit on the primary (a charge) waits for standby1
$primary->append_conf('postgresql.conf', qq{synchronous_standby_names = 'standby1'});
$primary->reload;
$primary->poll_query_until('postgres',
	q{SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby1'})
  or die 'standby1 not synchronous';
$_->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'standby ledger not ready'
  for @standbys;

# charge rows on the primary's ledger (of one role, or all)
sub charges
{
	my ($node, $role) = @_;
	my $where = $role ? " AND role = '$role'::regrole" : '';
	return $node->safe_psql('postgres', "SELECT count(*) FROM dp_pg.ledger_entries WHERE kind = 'charge'$where");
}

# run a query as a user; returns (exit code, stdout, stderr)
sub q_as
{
	my ($node, $user, $sql) = @_;
	return $node->psql('postgres', "\\set VERBOSITY verbose\n$sql", extra_params => [ '-U', $user ]);
}

# --- answers on every server, each charged once on the primary
my $q = q{SELECT dp_count(id, 'laplace(epsilon=0.5)') IS NOT NULL FROM t};
for my $node ($primary, $s1, $s2)
{
	my $name = $node->name;
	my $before = charges($primary, 'ana');
	my ($ret, $out, $err) = q_as($node, 'ana', $q);
	is($ret, 0, "$name: a dp query is answered") or diag $err;
	is($out, 't', "$name: with a value");
	is(charges($primary, 'ana'), $before + 1, "$name: charged once on the primary's ledger");
}
is($primary->safe_psql('postgres',
	q{SELECT count(DISTINCT requested_by) FROM dp_pg.ledger_entries WHERE kind = 'charge' AND requested_by = 'ana'::regrole}),
	1, 'the forwarded charges name the analyst');
# group by on a standby: still one charge
{
	my $before = charges($primary, 'ana');
	my ($ret, $out, $err) = q_as($s2, 'ana',
		q{SELECT k, dp_count(id, 'laplace(epsilon=0.5)') IS NOT NULL FROM t GROUP BY k ORDER BY k});
	is($ret, 0, 'standby2: a GROUP BY is answered') or diag $err;
	is(charges($primary, 'ana'), $before + 1, 'standby2: one charge for the GROUP BY');
}
# the standby's views follow the replicated ledger
$primary->wait_for_catchup($s2);
$s2->poll_query_until('postgres',
	q{SELECT charges = } . charges($primary, 'ana') . q{ FROM dp_pg.budgets WHERE role = 'ana'::regrole})
  or die 'standby2 budgets do not follow';
pass('a standby\'s dp_pg.budgets shows the primary\'s totals');
is($s1->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger WHERE kind = 'charge'}),
	charges($primary), 'dp_pg.ledger reads on a standby');
# the guard refuses raw reads on a standby as on the primary
{
	my ($ret, $out, $err) = q_as($s1, 'ana', q{SELECT * FROM t LIMIT 1});
	isnt($ret, 0, 'standby1: a raw read is refused');
	unlike($out, qr/\d/, 'standby1: no row');
}
# dp_pg.synthesize on a standby: refused (25006) before anything is charged or created, for
# an analyst and for a superuser
{
	$primary->safe_psql('postgres', q{SELECT dp_pg.set_public_keys('t', 'k', ARRAY['0', '1', '2', '3'])});
	$primary->wait_for_catchup($s1);
	my $before = charges($primary);
	for my $user ('ana', $s1->safe_psql('postgres', 'SELECT current_user'))
	{
		my ($ret, $out, $err) = q_as($s1, $user,
			q{SELECT dp_pg.synthesize('t', 'twin', 'laplace(epsilon=0.5)', columns => ARRAY['k'])});
		isnt($ret, 0, "standby1: dp_pg.synthesize as $user is refused");
		like($err, qr/25006: dp_pg.synthesize cannot run on a hot standby/, "standby1: $user gets 25006 with its cause");
		is($out, '', "standby1: $user gets no row count");
	}
	is(charges($primary), $before, 'standby1: the refused twins charged nothing on the primary');
	is($primary->safe_psql('postgres', q{SELECT to_regclass('twin') IS NULL}), 't', 'standby1: no twin on the primary');
	is($s1->safe_psql('postgres', q{SELECT to_regclass('twin') IS NULL}), 't', 'standby1: no twin on the standby');
}
is($s1->safe_psql('postgres', q{SELECT count(*) FROM pub}, extra_params => [ '-U', 'ana' ]), 10,
	'plain queries on public tables run on a standby');
# the answer cache on a standby (src/release/cache.c): served again uncharged from the standby's own
# entries; a write on the primary, once replayed, makes the next run a new, charged release
{
	$primary->safe_psql('postgres', q{
		CREATE ROLE cacher LOGIN;
		ALTER ROLE cacher SET dp_pg.answer_cache = on;
		SELECT dp_pg.set_budget('cacher', 1000, 1e-6);
	});
	$primary->wait_for_catchup($s2);
	$s2->poll_query_until('postgres', q{SELECT count(*) = 1 FROM dp_pg.budgets WHERE role = 'cacher'::regrole})
	  or die 'standby2 does not know the budget';
	my $cq = q{SELECT dp_count(id, 'laplace(epsilon=0.5)') FROM t WHERE k = 1; SELECT bool_and(from_cache) FROM dp_pg.last_releases};
	my @runs;
	for my $i (1 .. 3)
	{
		if ($i == 3)
		{
			$primary->safe_psql('postgres', q{INSERT INTO t VALUES (5001, 1)});
			$primary->wait_for_catchup($s2);
		}
		my $before = charges($primary, 'cacher');
		my ($ret, $out, $err) = q_as($s2, 'cacher', $cq);
		my @l = split /\n/, $out;
		push @runs, { ok => $ret == 0, answer => $l[0], served => ($l[-1] // '') eq 't',
			charged => charges($primary, 'cacher') - $before };
	}
	ok($runs[0]{ok} && !$runs[0]{served} && $runs[0]{charged} == 1, 'standby2: the first run is a charged release');
	ok($runs[1]{ok} && $runs[1]{served} && $runs[1]{charged} == 0 && $runs[1]{answer} eq $runs[0]{answer},
		'standby2: the identical query is served again, uncharged, with the same answer');
	ok($runs[2]{ok} && !$runs[2]{served} && $runs[2]{charged} == 1,
		'standby2: after a write replayed from the primary, a new charged release');
}
# budget administration happens on the primary
{
	my ($ret, $out, $err) = $s1->psql('postgres', q{SELECT dp_pg.set_budget('ana', 5, 1e-6)});
	isnt($ret, 0, 'set_budget on a standby fails');
	like($err, qr/primary/, 'and says where budgets are changed');
}

# --- a refusal: DP001 as on the primary, nothing charged, logged on the primary
$primary->safe_psql('postgres', q{SELECT dp_pg.set_budget('racer', 1, NULL)});
$primary->wait_for_catchup($_) for @standbys;
$s1->poll_query_until('postgres', q{SELECT count(*) = 1 FROM dp_pg.budgets WHERE role = 'racer'::regrole})
  or die 'budget not replicated';
{
	my $before = charges($primary, 'racer');
	my ($ret, $out, $err) = q_as($s1, 'racer', q{SELECT dp_count(id, 'laplace(epsilon=2)') FROM t});
	isnt($ret, 0, 'a query over the budget fails on a standby');
	like($err, qr/DP001/, 'with DP001');
	like($err, qr/privacy budget of role "racer" exceeded/, 'and the primary\'s reason');
	is(charges($primary, 'racer'), $before, 'nothing charged');
	$primary->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM dp_pg.guard_refusals WHERE role = 'racer'::regrole AND sqlstate = 'DP001'})
	  or die 'refusal not logged';
	pass('the standby\'s refusal is in the primary\'s log');
}

# --- the forwarding functions are not for analysts
{
	my $before = charges($primary);
	my ($ret, $out, $err) = q_as($primary, 'ana',
		q{SELECT * FROM dp_pg.forward_charges('{10}', '{1}', '{10}', '{1}', '{0}', '{1}',
		  array_fill(1::float8, ARRAY[32]), '{x}', '{"{}"}', '{0}', '{0}', '{}')});
	isnt($ret, 0, 'an analyst cannot call dp_pg.forward_charges');
	like($err, qr/42501/, 'insufficient privilege');
	is(charges($primary), $before, 'nothing charged');
	($ret, $out, $err) = q_as($primary, 'ana',
		q{SELECT dp_pg.forward_refusals('{}', '{}', '{}', '{}', '{}', '{}', '{}', 5)});
	like($err, qr/42501/, 'nor dp_pg.forward_refusals');
	($ret, $out, $err) = q_as($s1, 'ana', q{SHOW dp_pg.primary_conninfo});
	isnt($ret, 0, 'an analyst cannot read dp_pg.primary_conninfo');
}

# --- the race: analysts on all three servers for the last of one budget
{
	$primary->safe_psql('postgres', q{SELECT dp_pg.reset_budget('racer'); SELECT dp_pg.set_budget('racer', 10, NULL)});
	$primary->wait_for_catchup($_) for @standbys;
	$_->poll_query_until('postgres',
		q{SELECT epsilon_limit = 10 AND charges = 0 FROM dp_pg.budgets WHERE role = 'racer'::regrole})
	  or die 'budget not replicated'
	  for @standbys;
	my $before = charges($primary, 'racer');
	my (@h, @out);
	my $i = 0;
	for my $node ($primary, $s1, $s2)
	{
		for my $c (1 .. 3)
		{
			my $idx = $i++;
			$out[$idx] = '';
			my @cmds = map { ('-c', q{SELECT 'answer', dp_count(id, 'laplace(epsilon=1)') FROM t}) } 1 .. 5;
			push @h, IPC::Run::start(
				[ 'psql', '-XAt', '-d', $node->connstr('postgres') . ' user=racer', @cmds ],
				'>', \$out[$idx], '2>', \my $err);
		}
	}
	$_->finish for @h;
	my $answers = 0;
	$answers += () = $_ =~ /^answer\|/mg for @out;
	my $charged = charges($primary, 'racer') - $before;
	ok($answers <= 10, "race: $answers answers for a budget of 10 (45 attempts on 3 servers)");
	is($charged, $answers, 'race: every answer charged once, nothing else');
	ok($answers == 10, 'race: the budget was used up');
	my $spent = $primary->safe_psql('postgres', q{SELECT epsilon_spent FROM dp_pg.budgets WHERE role = 'racer'::regrole});
	ok($spent <= 10 + 1e-9, "race: spent $spent within the limit");
}

# --- table budgets: charged on the primary with the roles' budgets, from every server
sub table_charges
{
	my ($node, $table) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM dp_pg.ledger_entries e JOIN dp_pg.protected_tables p ON p.table_budget = e.table_budget
		WHERE p.relid = '$table'::regclass AND e.kind = 'charge'});
}
{
	$primary->safe_psql('postgres', q{
		CREATE TABLE tt AS SELECT g AS id FROM generate_series(1, 500) g;
		SELECT dp_pg.protect('tt');
		SELECT dp_pg.set_table_budget('tt', 2, 1e-6);
		CREATE ROLE tracer1 LOGIN;
		CREATE ROLE tracer2 LOGIN;
		SELECT dp_pg.set_budget('tracer1', 1000, 1e-6);
		SELECT dp_pg.set_budget('tracer2', 1000, 1e-6);
	});
	$primary->wait_for_catchup($_) for @standbys;
	$_->poll_query_until('postgres', q{SELECT count(*) = 1 FROM dp_pg.table_budgets WHERE relid = 'tt'::regclass})
	  or die 'table budget not replicated'
	  for @standbys;
	my $before = table_charges($primary, 'tt');
	my ($ret, $out, $err) = q_as($s1, 'tracer1', q{SELECT dp_count(id, 'laplace(epsilon=0.5)') IS NOT NULL FROM tt});
	is($ret, 0, 'standby1: a query on a table with a budget is answered') or diag $err;
	is(table_charges($primary, 'tt'), $before + 1, 'standby1: the table\'s budget is charged on the primary');
	($ret, $out, $err) = q_as($s2, 'tracer2', q{SELECT dp_count(id, 'laplace(epsilon=1.6)') FROM tt});
	isnt($ret, 0, 'standby2: a query over the table\'s budget (not the role\'s) fails');
	like($err, qr/DP001.*privacy budget of table "tt" exceeded/s, 'with DP001 naming the table');
	is(table_charges($primary, 'tt'), $before + 1, 'nothing charged to the table');
	is(charges($primary, 'tracer2'), 0, 'nor to the role');
	$primary->wait_for_catchup($s2);
	$s2->poll_query_until('postgres',
		q{SELECT charges = 1 AND round(epsilon_spent::numeric, 6) = 0.5 FROM dp_pg.table_budgets WHERE relid = 'tt'::regclass})
	  or die 'standby2 table budgets do not follow';
	pass('a standby\'s dp_pg.table_budgets shows the primary\'s totals');

	# the race: two roles on three servers for the last of the table's budget
	$primary->safe_psql('postgres', q{SELECT dp_pg.set_table_budget('tt', 6.5, 1e-6)});
	$primary->wait_for_catchup($_) for @standbys;
	$before = table_charges($primary, 'tt');
	my $roles_before = charges($primary, 'tracer1') + charges($primary, 'tracer2');
	my (@h, @out);
	my $i = 0;
	for my $node ($primary, $s1, $s2)
	{
		for my $user ('tracer1', 'tracer2')
		{
			my $idx = $i++;
			$out[$idx] = '';
			my @cmds = map { ('-c', q{SELECT 'answer', dp_count(id, 'laplace(epsilon=1)') FROM tt}) } 1 .. 4;
			push @h, IPC::Run::start(
				[ 'psql', '-XAt', '-d', $node->connstr('postgres') . " user=$user", @cmds ],
				'>', \$out[$idx], '2>', \my $err);
		}
	}
	$_->finish for @h;
	my $answers = 0;
	$answers += () = $_ =~ /^answer\|/mg for @out;
	my $charged = table_charges($primary, 'tt') - $before;
	my $by_roles = charges($primary, 'tracer1') + charges($primary, 'tracer2') - $roles_before;
	is($answers, 6, "table race: $answers answers for the 6 left of the table's budget (24 attempts, 2 roles, 3 servers)");
	is($charged, $answers, 'table race: every answer charged to the table once, nothing else');
	is($by_roles, $answers, 'table race: and to its role once');
	my $spent = $primary->safe_psql('postgres', q{SELECT epsilon_spent FROM dp_pg.table_budgets WHERE relid = 'tt'::regclass});
	ok($spent <= 6.5 + 1e-9, "table race: spent $spent within the limit");
}

# --- the primary unreachable: fail closed at once
{
	$primary->stop('fast');
	my $t0 = time;
	my ($ret, $out, $err) = q_as($s2, 'ana', $q);
	my $secs = time - $t0;
	isnt($ret, 0, 'primary down: a dp query on a standby fails');
	like($err, qr/08001|08006/, 'with a connection SQLSTATE');
	like($err, qr/cannot reach the primary|lost the connection/, 'saying the primary cannot be reached');
	unlike($out, qr/t/, 'no answer');
	ok($secs < 6, "within the charge timeout (${secs}s)");
	$primary->start;
	$primary->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die;
	my $before = charges($primary, 'ana');
	($ret, $out, $err) = q_as($s2, 'ana', $q);
	is($ret, 0, 'primary back: the standby reconnects and is answered') or diag $err;
	is(charges($primary, 'ana'), $before + 1, 'and charged');
}

# --- kill -9 at each step of a forwarded charge
sub wait_all_ready
{
	for my $node ($primary, $s1, $s2)
	{
		$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
		  or die $node->name . ' not ready';
	}
	# a commit on the primary waits for standby1: wait until it streams again
	$primary->poll_query_until('postgres',
		q{SELECT count(*) = 2 FROM pg_stat_replication WHERE state = 'streaming'})
	  or die 'standbys not streaming';
}

sub set_pause
{
	my ($node, $step) = @_;
	$node->append_conf('postgresql.conf', "dp_pg.debug_pause = '$step'");
	$node->reload;
}

my %where = (
	before_charge => $s1,              # the standby's backend, before its slot
	standby_before_forward => $s1,     # the standby's worker, before sending
	worker_before_batch => $primary,   # the primary's worker
	worker_before_commit => $primary,
	worker_after_commit => $primary,
	standby_after_forward => $s1,      # the standby's worker, verdict in hand
	before_release => $s1,             # the standby's backend, charged
);
for my $step (qw(before_charge standby_before_forward worker_before_batch worker_before_commit
	worker_after_commit standby_after_forward before_release))
{
	my @victims = qw(standby_backend primary);
	# the standby's worker stopped (not a crash: its slots outlive it)
	push @victims, 'standby_worker' if $step =~ /^standby_/;
	for my $victim (@victims)
	{
		my $label = $victim eq 'standby_worker' ? "$step / standby worker stopped" : "$step / kill -9 $victim";
		my $pnode = $where{$step};
		set_pause($pnode, $step);
		sleep 1;
		my $before = charges($primary, 'ana');
		my $offset = -s $pnode->logfile;
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start(
			[ 'psql', '-XAtq', '-d', $s1->connstr('postgres') . ' user=ana', '-c', $q ],
			'>', \$out, '2>', \$err);
		$pnode->wait_for_log(qr/dp_pg debug pause at $step/, $offset);
		if ($victim eq 'standby_backend')
		{
			my $pid = $s1->safe_psql('postgres',
				q{SELECT pid FROM pg_stat_activity WHERE usename = 'ana' AND backend_type = 'client backend'});
			my $o = -s $s1->logfile;
			kill 'KILL', $pid if $pid;
			# the standby's crash cycle first (until then the old processes still answer)
			$s1->wait_for_log(qr/all server processes terminated; reinitializing/, $o) if $pid;
		}
		elsif ($victim eq 'standby_worker')
		{
			$s1->safe_psql('postgres',
				q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'dp_pg ledger'});
		}
		else
		{
			# the primary's ledger worker: the whole primary restarts
			my $pid = $primary->safe_psql('postgres',
				q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dp_pg ledger'});
			my $o = -s $primary->logfile;
			kill 'KILL', $pid if $pid;
			$primary->wait_for_log(qr/all server processes terminated; reinitializing/, $o) if $pid;
		}
		$h->finish;
		my $answered = $out =~ /^t$/m ? 1 : 0;
		set_pause($pnode, '');
		wait_all_ready();
		my $after = charges($primary, 'ana');
		ok($after - $before <= 1, "$label: charged at most once (" . ($after - $before) . ")");
		ok(!$answered || $after - $before == 1, "$label: no answer without its charge (answered: $answered)");
		# and the standby charges again afterwards
		my ($ret) = q_as($s1, 'ana', $q);
		is($ret, 0, "$label: the standby answers again");
	}
}

# --- promotion of the synchronous standby with a charge in flight
{
	$primary->wait_for_catchup($_) for @standbys;
	my ($r0) = q_as($s2, 'ana', $q);
	is($r0, 0, 'promotion: standby2 answers before');
	set_pause($primary, 'worker_after_commit');
	sleep 1;
	my $offset = -s $primary->logfile;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $s2->connstr('postgres') . ' user=ana', '-c', $q ],
		'>', \$out, '2>', \$err);
	$primary->wait_for_log(qr/dp_pg debug pause at worker_after_commit/, $offset);
	# the charge is committed (and, synchronously, on standby1); the primary dies
	my $committed = charges($primary);
	$primary->stop('immediate');
	$h->finish;
	my $answered = $out =~ /^t$/m ? 1 : 0;
	is($answered, 0, 'promotion: the query whose primary died is not answered');

	$s1->promote;
	$s1->poll_query_until('postgres', q{SELECT NOT pg_is_in_recovery()}) or die 'not promoted';
	$s1->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'no ledger after promotion';
	is(charges($s1), $committed, 'promotion: the promoted ledger holds every charge the primary committed');
	my $before = charges($s1, 'ana');
	my ($ret, $o2, $e2) = q_as($s1, 'ana', $q);
	is($ret, 0, 'promotion: the promoted server answers') or diag $e2;
	is(charges($s1, 'ana'), $before + 1, 'promotion: and charges on its own ledger');

	# standby2 still points at the dead primary: it fails closed ...
	($ret, $o2, $e2) = q_as($s2, 'ana', $q);
	isnt($ret, 0, 'promotion: standby2 cannot reach its old primary and fails closed');
	# ... until the DBA points its forwarding at the new primary, as a REPLICATION role
	$s2->append_conf('postgresql.conf',
		"dp_pg.primary_conninfo = 'port=" . $s1->port . " host=" . $s1->host . " user=fwd'");
	$s2->reload;
	$before = charges($s1, 'ana');
	sleep 1;
	($ret, $o2, $e2) = q_as($s2, 'ana', $q);
	is($ret, 0, 'promotion: standby2 forwards to the new primary (dp_pg.primary_conninfo, REPLICATION role)')
	  or diag $e2;
	is(charges($s1, 'ana'), $before + 1, 'promotion: charged once on the new primary');
	is($s1->safe_psql('postgres', q{SELECT charges FROM dp_pg.budgets WHERE role = 'ana'::regrole}),
		charges($s1, 'ana'), 'promotion: the totals equal the ledger');
}

done_testing();
