# Protected tables fail closed: with dp_pg preloaded an analyst gets dp
# answers and nothing else; with the library gone, the analyst's SELECT (the
# grant to dp_pg_analyst that lets table pickers list the table) reads no
# row, and no statistic; a rare key never shows through GROUP BY.  Other
# roles' access is what the DBA granted, with or without the library; a
# DBA's own row-level security policy scopes the analyst's dp queries.
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
	CREATE ROLE app LOGIN;
	GRANT SELECT ON patients TO app;
	-- a DBA's tenant policy before protecting: the analyst sees tenant a only
	CREATE TABLE tenants AS SELECT g AS id, CASE WHEN g <= 300 THEN 'a' ELSE 'b' END AS tenant FROM generate_series(1, 1000) g;
	ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
	CREATE POLICY tenant_a ON tenants TO PUBLIC USING (tenant = 'a');
	SELECT dp_pg.protect('tenants');
	ANALYZE patients, tenants;
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

# Table pickers list the table and its columns (Metabase asks for a column
# privilege, Superset reads information_schema); the plain count is a dp one
is($node->safe_psql('postgres', q{SELECT has_any_column_privilege('patients', 'select'),
	(SELECT count(*) FROM information_schema.columns WHERE table_name = 'patients'),
	(SELECT count(*) FROM information_schema.tables WHERE table_name = 'patients')}, extra_params => ['-U', 'ana']),
	"t|3|1", 'the analyst\'s table picker lists the protected table and its columns');
is($node->safe_psql('postgres', q{SELECT abs(count(*) - 1000) <= 25 FROM patients}, extra_params => ['-U', 'ana']),
	't', 'a plain count is answered with noise');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stats WHERE tablename = 'patients'}, extra_params => ['-U', 'ana']),
	'0', 'no statistics row reaches the analyst');
is($node->safe_psql('postgres', q{SELECT abs(dp_count(*) - 300) <= 25 FROM tenants}, extra_params => ['-U', 'ana']),
	't', 'the DBA\'s tenant policy scopes the analyst\'s dp query');
is($node->safe_psql('postgres', q{SELECT count(*) FROM patients}, extra_params => ['-U', 'app']),
	'1000', 'a role the DBA granted SELECT reads every row, as before');
is($node->safe_psql('postgres', q{SELECT pg_has_role('ana', 'dp_pg_analyst', 'MEMBER')}), 't',
	'a role with a budget is in dp_pg_analyst');

# Without the library the analyst's grant reads nothing.
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->restart;
foreach my $q ('SELECT * FROM patients', 'SELECT count(*) FROM patients WHERE diagnosis <> \'\'',
	'SELECT diagnosis, count(*) FROM patients GROUP BY 1', 'TABLE tenants',
	'SELECT * FROM pg_stats WHERE tablename IN (\'patients\', \'tenants\')',
	'COPY patients TO STDOUT', 'SELECT dp_count(id, dp_laplace(1)) FROM patients WHERE age > 50')
{
	($ret, $out, $err) = $node->psql('postgres', $q, extra_params => ['-U', 'ana']);
	ok($ret != 0 || $out eq '' || $out eq '0', "without the library: $q reads nothing ($out)");
	unlike($out, qr/common|rare|\b[ab]\b/, '... no value of a row');
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM patients}, extra_params => ['-U', 'app']),
	'1000', 'without the library the granted role still reads every row');

# drop_budget leaves dp_pg_analyst; unprotect takes back what protect added
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dp_pg'");
$node->restart;
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die;
$node->safe_psql('postgres', q{SELECT dp_pg.drop_budget('ana')});
is($node->safe_psql('postgres', q{SELECT pg_has_role('ana', 'dp_pg_analyst', 'MEMBER')}), 'f',
	'drop_budget revokes dp_pg_analyst');
$node->safe_psql('postgres', q{SELECT dp_pg.unprotect('patients'); SELECT dp_pg.unprotect('tenants')});
is($node->safe_psql('postgres', q{SELECT c.relname, c.relrowsecurity, count(p.polname), has_table_privilege('dp_pg_analyst', c.oid, 'select')
	FROM pg_class c LEFT JOIN pg_policy p ON p.polrelid = c.oid WHERE c.relname IN ('patients', 'tenants')
	GROUP BY c.relname, c.relrowsecurity, c.oid ORDER BY 1}),
	"patients|f|0|f\ntenants|t|1|f", 'unprotect drops its policies and grant, and row-level security only where it enabled it');

done_testing();
