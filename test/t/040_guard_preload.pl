# Protected tables fail closed: with dp_pg preloaded an analyst gets dp
# answers and nothing else; with the library gone, the analyst gets
# "permission denied", never rows; a rare key never shows through GROUP BY.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('guard');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dp_pg'");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE TABLE patients AS
		SELECT g AS id, CASE WHEN g = 7 THEN 'rare-disease' ELSE 'common' END AS diagnosis, g % 90 AS age
		FROM generate_series(1, 1000) g;
	SELECT dp_pg.protect('patients');
	CREATE ROLE ana LOGIN;
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die;
$node->safe_psql('postgres', q{SELECT dp_pg.set_budget('ana', 100, 1e-6)});

# |noise| <= 25 at laplace(epsilon=1): fails by chance with probability < 3e-11
is($node->safe_psql('postgres', q{SELECT abs(dp_count(*) - 1000) <= 25 FROM patients}, extra_params => ['-U', 'ana']),
	't', 'the analyst gets a dp answer');
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT * FROM patients', extra_params => ['-U', 'ana']);
isnt($ret, 0, 'raw rows are refused');
is($out, '', 'no rows');
# GROUP BY a private key goes through partition selection: the key held by
# one row comes out with probability <= 1e-12, the frequent key surely
($ret, $out, $err) = $node->psql('postgres',
	q{SET dp_pg.partition_mechanism = 'gaussian(epsilon=0.5, delta=1e-12)';
	  SELECT diagnosis, dp_count(*) FROM patients GROUP BY diagnosis}, extra_params => ['-U', 'ana']);
is($ret, 0, 'GROUP BY on a private key runs');
unlike($out . $err, qr/rare-disease/, 'the rare key does not show');
like($out, qr/common/, 'the frequent key does');
($ret, $out, $err) = $node->psql('postgres',
	q{SELECT dp_histogram(diagnosis, 'gaussian(epsilon=1, delta=1e-7)') FROM patients}, extra_params => ['-U', 'ana']);
is($ret, 0, 'partition selection runs');
unlike($out, qr/rare-disease/, 'partition selection does not release a key held by one row');
like($out, qr/common/, 'it releases the frequent key');

# Without the library the analyst meets the table's privileges.
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->restart;
foreach my $q ('SELECT * FROM patients', 'SELECT dp_count(*) FROM patients',
	'SELECT count(*) FROM patients', 'SELECT dp_count(id, dp_laplace(1)) FROM patients WHERE age > 50')
{
	($ret, $out, $err) = $node->psql('postgres', $q, extra_params => ['-U', 'ana']);
	isnt($ret, 0, "without the library: $q fails");
	like($err, qr/permission denied for table patients|must be loaded via shared_preload_libraries/, "... with permission denied");
	is($out, '', '... and no rows');
}

done_testing();
