# dp_pg fails closed without shared_preload_libraries, and works once preloaded.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('preload');
$node->init;
$node->start;

# Without the preload the extension installs, warning at once, values parse,
# but no aggregate releases anything.
my ($ret, $stdout, $stderr) = $node->psql('postgres', 'CREATE EXTENSION dp_pg');
is($ret, 0, 'CREATE EXTENSION succeeds without the preload');
like($stderr, qr/WARNING:  dp_pg is not in shared_preload_libraries: its dp aggregates, query guard and ledger stay off until it is/,
	'... and warns at once that nothing will be answered');
like($stderr, qr/HINT:  Add dp_pg to shared_preload_libraries in postgresql.conf and restart the server/,
	'... saying how to fix it');
is($node->safe_psql('postgres', 'SELECT dp_pg.preloaded()'), 'f', 'dp_pg.preloaded() says so');
is($node->safe_psql('postgres', q{SELECT 'laplace(epsilon=1)'::dp_mechanism}),
	'laplace(epsilon=1)', 'mechanism values work without the preload');

($ret, $stdout, $stderr) = $node->psql('postgres',
	'SELECT dp_count(*) FROM generate_series(1, 10)', extra_params => ['-v', 'VERBOSITY=verbose']);
isnt($ret, 0, 'dp_count(*) fails without the preload');
like($stderr, qr/55000: dp_pg must be loaded via shared_preload_libraries/, 'error names the cause with SQLSTATE 55000');
like($stderr, qr/HINT:  Add dp_pg to shared_preload_libraries/, 'hint says how to fix it');
is($stdout, '', 'no value released');

($ret, $stdout, $stderr) = $node->psql('postgres',
	q{SELECT dp_count(g, 'laplace(epsilon=1)') FROM generate_series(1, 10) g});
isnt($ret, 0, 'dp_count(expr, mech) fails without the preload');
is($stdout, '', 'no value released');

# LOAD in a session does not count as preloading either.
($ret, $stdout, $stderr) = $node->psql('postgres',
	q{LOAD 'dp_pg'; SELECT dp_count(*) FROM generate_series(1, 10)});
isnt($ret, 0, 'LOAD does not enable the aggregates');
like($stderr, qr/must be loaded via shared_preload_libraries/, 'LOAD: same error');

# dp_pg.synthesize refuses too, before it creates its table.
$node->safe_psql('postgres', 'CREATE TABLE people AS SELECT g % 2 = 0 AS flag FROM generate_series(1, 100) g');
($ret, $stdout, $stderr) = $node->psql('postgres',
	q{SELECT dp_pg.synthesize('people', 'twin', 'laplace(epsilon=1)')}, extra_params => ['-v', 'VERBOSITY=verbose']);
isnt($ret, 0, 'dp_pg.synthesize fails without the preload');
like($stderr, qr/55000: dp_pg must be loaded via shared_preload_libraries/,
	'dp_pg.synthesize: the preload error with SQLSTATE 55000');
is($stdout, '', 'dp_pg.synthesize: no row count');
is($node->safe_psql('postgres', q{SELECT to_regclass('twin') IS NULL}), 't', 'dp_pg.synthesize: no table left');

# With the preload the aggregates work (bound 25 at t = 1: fails by chance < 3e-11).
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dp_pg'");
$node->restart;
is($node->safe_psql('postgres', 'SELECT abs(dp_count(*) - 10) <= 25 FROM generate_series(1, 10)'),
	't', 'dp_count(*) works once preloaded');
is($node->safe_psql('postgres', 'SHOW dp_pg.default_mechanism'), 'laplace(epsilon=1)',
	'default mechanism is defined');
# preloaded, CREATE EXTENSION says nothing
$node->safe_psql('postgres', 'CREATE DATABASE other');
($ret, $stdout, $stderr) = $node->psql('other', 'CREATE EXTENSION dp_pg; SELECT dp_pg.preloaded()');
is($ret . ' ' . $stdout, '0 t', 'preloaded: CREATE EXTENSION succeeds and dp_pg.preloaded() says so');
unlike($stderr, qr/WARNING/, '... without a warning');
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready';
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger_entries WHERE kind = 'charge'}), '0',
	'the refused dp_pg.synthesize left no charge in the ledger');

# The setting survives a restart when written to the configuration.
$node->append_conf('postgresql.conf', "dp_pg.default_mechanism = 'laplace(epsilon=0.5)'");
$node->restart;
is($node->safe_psql('postgres', 'SHOW dp_pg.default_mechanism'), 'laplace(epsilon=0.5)',
	'configured default mechanism is used after restart');

# A malformed value in the configuration file is refused with a warning and
# never used: the previous valid value stays in force.
$node->append_conf('postgresql.conf', "dp_pg.default_mechanism = 'laplace(epsilon=nan)'");
my $log_before = -s $node->logfile;
$node->restart;
my $log = slurp_file($node->logfile, $log_before);
like($log, qr/invalid value for parameter "dp_pg.default_mechanism": "laplace\(epsilon=nan\)"/,
	'log names the parameter and the malformed value');
unlike($node->safe_psql('postgres', 'SHOW dp_pg.default_mechanism'), qr/nan/,
	'the malformed value is not in force');
is($node->safe_psql('postgres', 'SELECT abs(dp_count(*) - 10) <= 50 FROM generate_series(1, 10)'),
	't', 'aggregates still work with a valid mechanism');

done_testing();
