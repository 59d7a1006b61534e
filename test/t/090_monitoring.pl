# Monitoring without a superuser.
#
# A monitoring role — a member of pg_monitor (through it of
# pg_read_all_stats), with no budget — reads every role's rows of
# dp_pg.budgets and dp_pg.ledger, every table budget and the reports of
# privacy loss per window, the log of refused queries and the answer
# cache's metadata, from the ledger database and from any other; an analyst
# still sees only its own rows, also when it is a member of pg_monitor; a
# role that is neither sees nothing and may read neither the refusals nor
# the cache.  Then Prometheus' postgres_exporter (Debian's
# prometheus-postgres-exporter) runs with docs/postgres_exporter.yaml as
# that role against this cluster on 127.0.0.1, and its /metrics page,
# scraped on 127.0.0.1, carries every dp_pg metric with the values the views
# hold.
use strict;
use warnings;
use HTTP::Tiny;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('monitoring');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'dp_pg'
dp_pg.answer_cache = on
listen_addresses = '127.0.0.1'
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE mon LOGIN IN ROLE pg_monitor;
	CREATE ROLE anamon LOGIN IN ROLE pg_monitor;
	CREATE ROLE plain LOGIN;
	CREATE DATABASE app;
});
$node->safe_psql('app', q{
	CREATE EXTENSION dp_pg;
	CREATE TABLE t AS SELECT g AS id, g % 3 AS k FROM generate_series(1, 100) g;
	SELECT dp_pg.protect('t');
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
  or die 'ledger not ready';
$node->safe_psql('postgres', q{
	SELECT dp_pg.set_budget('ana', 100, 1e-6);
	SELECT dp_pg.set_budget('bob', 100, 1e-6);
	SELECT dp_pg.set_budget('anamon', 100, 1e-6);
});

# charges (each kept in the answer cache), refused queries
for my $role ('ana', 'bob', 'anamon')
{
	$node->safe_psql('app', "SELECT dp_count(id, 'laplace(epsilon=0.1)') FROM t", extra_params => [ '-U', $role ]);
	$node->safe_psql('app', "SELECT dp_count(id, 'laplace(epsilon=0.2)') FROM t WHERE k = 1", extra_params => [ '-U', $role ]);
}
for my $i (1 .. 3)
{
	my ($ret) = $node->psql('app', 'SELECT * FROM t', extra_params => [ '-U', 'ana' ]);
	die 'a raw read was not refused' if $ret == 0;
}
my ($ret) = $node->psql('app', 'SELECT id FROM t', extra_params => [ '-U', 'bob' ]);
die 'a raw read was not refused' if $ret == 0;

# What the superuser sees (refusals reach the log within milliseconds).
$node->poll_query_until('app', q{SELECT count(*) = 4 FROM dp_pg.guard_refusals})
  or die 'refusals not logged';
my %all;
for my $db ('postgres', 'app')
{
	$all{$db} = $node->safe_psql($db, q{
		SELECT (SELECT count(*) FROM dp_pg.budgets) || ' ' ||
		       (SELECT count(*) FROM dp_pg.ledger) || ' ' ||
		       (SELECT count(*) FROM dp_pg.guard_refusals) || ' ' ||
		       (SELECT count(*) FROM dp_pg.answer_cache)});
}
is($all{app}, '3 9 4 6', 'the superuser sees 3 budgets, 9 ledger rows, 4 refusals, 6 kept answers');

# A role of the views' rows: "budgets ledger" counts, and the owners seen.
sub counts_as
{
	my ($db, $role, $sql) = @_;
	my ($rc, $out, $err) = $node->psql($db, $sql, extra_params => [ '-U', $role ]);
	return $rc == 0 ? $out : "ERROR $err";
}

for my $db ('postgres', 'app')
{
	# the monitoring role: everything the superuser sees
	is( counts_as(
			$db, 'mon', q{
		SELECT (SELECT count(*) FROM dp_pg.budgets) || ' ' ||
		       (SELECT count(*) FROM dp_pg.ledger) || ' ' ||
		       (SELECT count(*) FROM dp_pg.guard_refusals) || ' ' ||
		       (SELECT count(*) FROM dp_pg.answer_cache)}),
		$all{$db},
		"$db: a pg_monitor member reads every budget, ledger row, refusal and kept answer");
	is( counts_as(
			$db, 'mon', q{
		SELECT string_agg(DISTINCT role::text, ',' ORDER BY role::text) FROM dp_pg.ledger}),
		'ana,anamon,bob', "$db: ... of every role");
	is( counts_as(
			$db, 'mon', q{
		SELECT string_agg(role::text || ':' || charges || ':' || round(epsilon_spent::numeric, 3), ',' ORDER BY role::text)
		FROM dp_pg.budgets}),
		'ana:2:0.300,anamon:2:0.300,bob:2:0.300', "$db: ... with what each spent");
	is( counts_as(
			$db, 'mon', q{
		SELECT string_agg(role::text || ':' || sqlstate || ':' || n, ',' ORDER BY role::text)
		FROM (SELECT role, sqlstate, count(*) AS n FROM dp_pg.guard_refusals GROUP BY 1, 2) r}),
		'ana:42501:3,bob:42501:1', "$db: ... and who was refused how often");

	# an analyst: its own rows only, neither the refusals nor the cache
	is( counts_as(
			$db, 'ana', q{
		SELECT (SELECT count(*) FROM dp_pg.budgets) || ' ' || (SELECT count(*) FROM dp_pg.ledger) || ' ' ||
		       (SELECT bool_and(role = 'ana'::regrole) FROM dp_pg.ledger)}),
		'1 3 true', "$db: an analyst sees only its own budget and ledger rows");
	like(counts_as($db, 'ana', 'SELECT count(*) FROM dp_pg.guard_refusals'),
		qr/ERROR .*permission denied/, "$db: ... and may not read the refusals");
	like(counts_as($db, 'ana', 'SELECT count(*) FROM dp_pg.answer_cache'),
		qr/ERROR .*permission denied/, "$db: ... nor the answer cache");

	# an analyst in pg_monitor: still its own rows only
	is( counts_as(
			$db, 'anamon', q{
		SELECT (SELECT count(*) FROM dp_pg.budgets) || ' ' || (SELECT count(*) FROM dp_pg.ledger) || ' ' ||
		       (SELECT count(*) FROM dp_pg.answer_cache) || ' ' ||
		       (SELECT bool_and(role = 'anamon'::regrole) FROM dp_pg.ledger) || ' ' ||
		       (SELECT bool_and(roles = '{anamon}'::regrole[]) FROM dp_pg.answer_cache)}),
		'1 3 2 true true', "$db: an analyst in pg_monitor sees only its own budget, ledger rows and kept answers");
	like(counts_as($db, 'anamon', 'SELECT count(*) FROM dp_pg.guard_refusals'),
		qr/ERROR .*permission denied to read the log of refused queries/,
		"$db: ... and may not read the refusals");

	# neither analyst nor monitor: nothing
	is(counts_as($db, 'plain', q{SELECT (SELECT count(*) FROM dp_pg.budgets) || ' ' || (SELECT count(*) FROM dp_pg.ledger)}),
		'0 0', "$db: a role without budget or pg_monitor sees no budget and no ledger row");
	like(counts_as($db, 'plain', 'SELECT count(*) FROM dp_pg.guard_refusals'),
		qr/ERROR .*permission denied/, "$db: ... may not read the refusals");
	like(counts_as($db, 'plain', 'SELECT count(*) FROM dp_pg.answer_cache'),
		qr/ERROR .*permission denied/, "$db: ... nor the answer cache");
}

# monitoring reads; it changes nothing
like(counts_as('postgres', 'mon', q{SELECT dp_pg.set_budget('mon', 1000, 0.1)}),
	qr/ERROR .*permission denied/, 'the monitoring role cannot give itself a budget');
like(counts_as('postgres', 'mon', q{SELECT dp_pg.clear_answer_cache()}),
	qr/ERROR .*permission denied/, '... nor clear the answer cache');
like(counts_as('postgres', 'mon', q{SELECT count(*) FROM dp_pg.ledger_entries}),
	qr/ERROR .*permission denied/, '... nor read the ledger table itself');
# SET ROLE from an analyst's session to a monitoring role does not widen its view
$node->safe_psql('postgres', 'GRANT mon TO ana');
is( counts_as(
		'app', 'ana', q{SET ROLE mon; SELECT (SELECT count(*) FROM dp_pg.budgets) || ' ' || (SELECT count(*) FROM dp_pg.ledger)}),
	'1 3', 'an analyst that SETs ROLE to the monitoring role still sees only its own rows');
$node->safe_psql('postgres', 'REVOKE mon FROM ana');
# ... nor does a superuser's SECURITY DEFINER function (a DBA's reporting helper):
# the session is still the analyst's; a non-analyst calling it sees everything
$node->safe_psql('app', q{
	CREATE FUNCTION su_counts() RETURNS text LANGUAGE sql SECURITY DEFINER AS $$
		SELECT (SELECT count(*) FROM dp_pg.budgets) || ' ' || (SELECT count(*) FROM dp_pg.ledger) || ' ' ||
		       (SELECT count(*) FROM dp_pg.answer_cache) $$;
	CREATE FUNCTION su_refusals() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS $$
		SELECT count(*) FROM dp_pg.guard_refusals $$;
	GRANT EXECUTE ON FUNCTION su_counts(), su_refusals() TO PUBLIC;
});
is(counts_as('app', 'ana', 'SELECT su_counts()'), '1 3 2',
	"an analyst inside a superuser's SECURITY DEFINER function still sees only its own rows");
like(counts_as('app', 'ana', 'SELECT su_refusals()'),
	qr/ERROR .*permission denied to read the log of refused queries/, '... and may not read the refusals');
is(counts_as('app', 'plain', 'SELECT su_counts()'), '3 9 6',
	'a role without a budget calling the same function sees every row (it runs as the superuser)');
$node->safe_psql('app', 'DROP FUNCTION su_counts(), su_refusals()');

# Table budgets and the reports per window: every database's for the
# monitoring role; an analyst its own roles' windows (no table's), and the
# table budgets of the database's protected tables, as a role that is neither
$node->safe_psql('app', q{
	CREATE TABLE t2 AS SELECT g AS id FROM generate_series(1, 100) g;
	SELECT dp_pg.protect('t2');
	SELECT dp_pg.set_table_budget('t2', 10, 1e-6, renew => '1 day');
});
$node->safe_psql('postgres', q{
	CREATE ROLE cat LOGIN;
	ALTER ROLE cat SET dp_pg.answer_cache = off;
	SELECT dp_pg.set_budget('cat', 100, 1e-6, renew => '1 day');
});
$node->safe_psql('app', "SELECT dp_count(id, 'laplace(epsilon=0.5)') FROM t2", extra_params => [ '-U', 'cat' ]) for 1 .. 3;
for my $db ('postgres', 'app')
{
	is( counts_as(
			$db, 'mon', q{
		SELECT (SELECT string_agg(table_name || ':' || charges || ':' || round(epsilon_spent::numeric, 3) || ':'
		                          || (window_start IS NOT NULL), ',') FROM dp_pg.table_budgets) || ' ' ||
		       (SELECT string_agg(role::text || ':' || charges || ':' || round(epsilon_spent::numeric, 3), ',' ORDER BY role::text)
		        FROM dp_pg.budget_windows) || ' ' ||
		       (SELECT string_agg(table_name || ':' || charges || ':' || roles || ':' || round(epsilon_spent::numeric, 3), ',')
		        FROM dp_pg.table_budget_windows)}),
		'public.t2:3:1.500:true ana:2:0.300,anamon:2:0.300,bob:2:0.300,cat:3:1.500 public.t2:3:1:1.500',
		"$db: a pg_monitor member reads every table budget and the reports per window");
	is( counts_as(
			$db, 'ana', q{
		SELECT (SELECT count(*) FROM dp_pg.table_budgets) || ' ' ||
		       (SELECT string_agg(role::text, ',') FROM dp_pg.budget_windows) || ' ' ||
		       (SELECT count(*) FROM dp_pg.table_budget_windows)}),
		($db eq 'app' ? '1' : '0') . ' ana 0',
		"$db: an analyst reads its own windows, no table's, and this database's table budgets");
	is(counts_as($db, 'plain', q{SELECT (SELECT count(*) FROM dp_pg.table_budgets) || ' ' || (SELECT count(*) FROM dp_pg.budget_windows)}),
		($db eq 'app' ? '1' : '0') . ' 0', "$db: a role that is neither: this database's table budgets only");
}
like(counts_as('app', 'mon', q{SELECT dp_pg.set_table_budget('t2', 1000, 0.1)}),
	qr/ERROR .*permission denied/, 'the monitoring role cannot change a table budget');

#
# Prometheus' postgres_exporter with docs/postgres_exporter.yaml, as "mon",
# on 127.0.0.1 only.
#
my $exporter = '/usr/bin/prometheus-postgres-exporter';
ok(-x $exporter, 'prometheus-postgres-exporter is installed (test/all.sh installs it)')
  or done_testing(), exit;
my $queries = "$ENV{DP_ROOT}/docs/postgres_exporter.yaml";
my $eport = PostgreSQL::Test::Cluster::get_free_port();
my $port = $node->port;
my ($eout, $eerr) = ('', '');
my $h = IPC::Run::start(
	[
		$exporter, "--extend.query-path=$queries",
		"--web.listen-address=127.0.0.1:$eport", '--log.level=warn'
	],
	'>', \$eout, '2>', \$eerr,
	init => sub {
		$ENV{DATA_SOURCE_NAME} = "postgresql://mon\@127.0.0.1:$port/postgres?sslmode=disable";
	});
# no proxy for 127.0.0.1, whatever the environment says
my $http = HTTP::Tiny->new(timeout => 10, proxy => undef, http_proxy => undef, no_proxy => [ '127.0.0.1' ]);
my ($metrics, $last) = ('', '');
for my $try (1 .. 300)
{
	my $r = $http->get("http://127.0.0.1:$eport/metrics");
	$last = "$r->{status} $r->{reason}: " . substr($r->{content} // '', 0, 2000);
	if ($r->{success} && $r->{content} =~ /^dp_pg_ledger_ready/m)
	{
		$metrics = $r->{content};
		last;
	}
	sleep 0.2;
}
$h->kill_kill;
$h->finish;
ok($metrics ne '', "the exporter's /metrics page on 127.0.0.1 answers with dp_pg metrics")
  or diag("exporter stderr:\n$eerr\nlast answer: $last");
# without the page the metrics below cannot be read: one failure says so, not 27
$metrics ne '' or done_testing(), exit;

# The value of a metric whose labels include all of %want.
sub metric
{
	my ($name, %want) = @_;
	for my $line (split /\n/, $metrics)
	{
		next unless $line =~ /^\Q$name\E(?:\{(.*)\})? (\S+)$/;
		my ($labels, $value) = ($1 // '', $2);
		my %l = $labels =~ /(\w+)="([^"]*)"/g;
		next if grep { ($l{$_} // '') ne $want{$_} } keys %want;
		return $value;
	}
	return undef;
}

is(metric('dp_pg_ledger_ready'), '1', 'dp_pg_ledger_ready is 1');
for my $role ('ana', 'bob', 'anamon')
{
	is(metric('dp_pg_budget_charges', role => $role), '2', "dp_pg_budget_charges of $role: 2");
	ok(abs(metric('dp_pg_budget_epsilon_spent', role => $role) - 0.3) < 1e-9,
		"dp_pg_budget_epsilon_spent of $role: 0.3");
	is(metric('dp_pg_budget_epsilon_limit', role => $role), '100', "dp_pg_budget_epsilon_limit of $role: 100");
	ok(abs(metric('dp_pg_budget_used_ratio', role => $role) - 0.003) < 1e-9,
		"dp_pg_budget_used_ratio of $role: 0.003");
	ok(abs(metric('dp_pg_budget_epsilon_remaining', role => $role) - 99.7) < 1e-9,
		"dp_pg_budget_epsilon_remaining of $role: 99.7");
}
is(metric('dp_pg_budget_rho_limit', role => 'ana'), 'NaN', 'a limit that is not set is NaN');
is(metric('dp_pg_refusals_logged', role => 'ana', sqlstate => '42501'), '3', 'dp_pg_refusals_logged of ana: 3');
is(metric('dp_pg_refusals_logged', role => 'bob', sqlstate => '42501'), '1', 'dp_pg_refusals_logged of bob: 1');
is(metric('dp_pg_refusals_last_5m', role => 'ana', sqlstate => '42501'), '3', 'dp_pg_refusals_last_5m of ana: 3');
is(metric('dp_pg_refusal_log_last_id'), '4', 'dp_pg_refusal_log_last_id: 4');
is(metric('dp_pg_answer_cache_entries'), '6', 'dp_pg_answer_cache_entries: 6');
ok(metric('dp_pg_answer_cache_bytes') > 0, 'dp_pg_answer_cache_bytes > 0');
ok(abs(metric('dp_pg_answer_cache_epsilon_kept') - 0.9) < 1e-9, 'dp_pg_answer_cache_epsilon_kept: 0.9');
is(metric('dp_pg_table_budget_charges', table => 'public.t2', database => 'app'), '3', 'dp_pg_table_budget_charges of t2: 3');
ok(abs(metric('dp_pg_table_budget_epsilon_spent', table => 'public.t2') - 1.5) < 1e-9, 'dp_pg_table_budget_epsilon_spent of t2: 1.5');
ok(abs(metric('dp_pg_table_budget_epsilon_remaining', table => 'public.t2') - 8.5) < 1e-9, 'dp_pg_table_budget_epsilon_remaining of t2: 8.5');
ok(metric('dp_pg_table_budget_window_end', table => 'public.t2') > time, 'dp_pg_table_budget_window_end: the current window ends later');
is(metric('dp_pg_table_budget_lifetime_charges', table => 'public.t2'), '3', 'dp_pg_table_budget_lifetime_charges of t2: 3');
is(metric('dp_pg_budget_lifetime_charges', role => 'cat'), '3', 'dp_pg_budget_lifetime_charges of cat: 3');
is(metric('dp_pg_budget_window_charges', role => 'cat'), '3', 'dp_pg_budget_window_charges of cat: 3 in its window');
is(metric('dp_pg_budget_window_charges', role => 'ana', window => 'none'), '2', '... of ana (no renewal): 2');
ok(abs(metric('dp_pg_table_budget_window_epsilon_spent', table => 'public.t2') - 1.5) < 1e-9,
	'dp_pg_table_budget_window_epsilon_spent of t2: 1.5');
is(metric('dp_pg_table_budget_window_roles', table => 'public.t2'), '1', 'dp_pg_table_budget_window_roles of t2: 1');
is(metric('pg_exporter_user_queries_load_error'), '0', 'the exporter loaded the query file without error');
is(metric('pg_exporter_last_scrape_error'), '0', 'the last scrape had no error');
unlike($eerr, qr/dp_pg/, "the exporter logged no error about a dp_pg query");

done_testing();
