# Crash safety of the charge: kill -9 of the analyst's backend, kill -9 of the
# ledger worker, and an immediate shutdown, at each step around the charge
# (paused there by the superuser-only fault-injection settings) and right
# after the client received its answer.
# After the restart every answer a client received has its charge in the
# ledger, the worker's totals equal the ledger, and spending is within the
# limit.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'dp_pg'
dp_pg.debug_pause_ms = 2500
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 10) g;
	GRANT SELECT ON t TO ana;
});
$node->poll_query_until('postgres', 'SELECT dp_pg.ledger_status() = \'ready\'')
  or die 'ledger not ready';
$node->safe_psql('postgres', q{SELECT dp_pg.set_budget('ana', 1000, NULL)});

# Wait for the server and its ledger after a crash or restart.
sub wait_ready
{
	$node->poll_query_until('postgres', 'SELECT dp_pg.ledger_status() = \'ready\'')
	  or die 'ledger did not come back';
}

# Charges of ana in the ledger table.
sub ledger_charges
{
	return $node->safe_psql('postgres',
		q{SELECT count(*) FROM dp_pg.ledger_entries WHERE role = 'ana'::regrole AND kind = 'charge'});
}

my $answers = 0;
foreach my $step (qw(before_charge worker_before_commit worker_after_commit before_release after_answer))
{
	foreach my $victim (qw(backend worker immediate))
	{
		my $label = "$step / $victim";
		if ($step ne 'after_answer')
		{
			$node->safe_psql('postgres', "ALTER SYSTEM SET dp_pg.debug_pause = '$step'; SELECT pg_reload_conf();");
			# the worker and new sessions see the setting after the reload
			sleep 1;
		}
		my $before = ledger_charges();
		my $offset = -s $node->logfile;
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start(
			[ 'psql', '-XAtq', '-d', $node->connstr('postgres') . ' user=ana',
			  '-c', q{SELECT dp_count(id, 'laplace(epsilon=0.5)') FROM t} ],
			'>', \$out, '2>', \$err);
		if ($step eq 'after_answer')
		{
			# the client has its answer; the crash comes right after
			$h->finish;
		}
		else
		{
			$node->wait_for_log(qr/dp_pg debug pause at $step/, $offset);
		}

		if ($victim eq 'backend')
		{
			my $pid = $node->safe_psql('postgres',
				q{SELECT pid FROM pg_stat_activity WHERE usename = 'ana'});
			kill 'KILL', $pid if $pid;
			# the postmaster's crash cycle first (until then the old processes still answer)
			$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset) if $pid;
		}
		elsif ($victim eq 'worker')
		{
			my $pid = $node->safe_psql('postgres',
				q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dp_pg ledger'});
			kill 'KILL', $pid if $pid;
			$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset) if $pid;
		}
		else
		{
			$node->stop('immediate');
			$node->start;
		}
		$h->finish;
		wait_ready();
		$node->safe_psql('postgres', "ALTER SYSTEM RESET dp_pg.debug_pause; SELECT pg_reload_conf();");

		my $after = ledger_charges();
		my $answered = ($out =~ /^-?\d+$/m) ? 1 : 0;
		$answers += $answered;
		ok($after - $before <= 1, "$label: at most one charge recorded");
		ok(!$answered || $after - $before == 1, "$label: the answer the client got has its charge")
		  or diag("out=$out err=$err before=$before after=$after");
		my $agree = $node->safe_psql('postgres', q{
			SELECT b.charges = (SELECT count(*) FROM dp_pg.ledger_entries WHERE role = 'ana'::regrole AND kind = 'charge')
			   AND abs(b.epsilon_spent - (SELECT coalesce(sum(epsilon), 0) FROM dp_pg.ledger_entries WHERE role = 'ana'::regrole AND kind = 'charge')) < 1e-9
			   AND b.epsilon_spent <= b.epsilon_limit
			FROM dp_pg.budgets b WHERE b.role = 'ana'::regrole});
		is($agree, 't', "$label: totals equal the ledger and stay within the limit");
	}
}
# a crash of any process restarts every backend, so answers come through only
# in the after_answer round, where all three must have survived the crash
is($answers, 3, 'the three answers released before a crash are all charged after it');

done_testing();
