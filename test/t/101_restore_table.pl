# A protected table restored alone comes back refused, never open.
#
# pg_restore -t brings back a table, its data and its ACL (the SELECT that
# dp_pg.protect() grants dp_pg_analyst for table pickers) but not its
# row-level security, policies, trigger or protection row; pg_dump -t t db1 |
# psql db2 does the same into a database where t was never protected.  So:
# the grant is refused while the table is not protected (the restore says
# so), and any read through such a grant by a member of dp_pg_analyst is
# refused (SELECT, COPY, CREATE TABLE AS, as an analyst or as a member
# without a budget), also when the grant is there and the protection is not.
# The DBA's steps in docs/dba.md ("Restoring one table") bring it back
# protected, with its public keys and domain, and dp queries work again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use lib 't';
use DpLifecycle;

my $node = dp_node('restore_table');
$node->start;
life_fixture($node);
my $before = life_state($node);
$node->safe_psql('postgres', 'CREATE ROLE member LOGIN; GRANT dp_pg_analyst TO member;');
my $dir = PostgreSQL::Test::Utils::tempdir();
my @conn = ('-h', $node->host, '-p', $node->port);
command_ok([ 'pg_dump', @conn, '-Fc', '-f', "$dir/app.dump", 'app' ], 'pg_dump -Fc app');

# Refused: no raw row through any path, for an analyst or a member of dp_pg_analyst
sub refused
{
	my ($db, $table, $what) = @_;
	for my $role ('ana', 'member')
	{
		for my $sql ("SELECT * FROM $table", "COPY $table TO STDOUT", "CREATE TEMP TABLE copied AS SELECT * FROM $table",
			"SELECT id FROM (SELECT * FROM $table) s ORDER BY id LIMIT 1")
		{
			my ($ret, $out, $err) = dp_try($node, $db, $role, $sql);
			ok($ret != 0 && $out eq '', "$what: $role: $sql is refused") or diag("out: $out\nerr: $err");
		}
	}
}

# 1. DROP TABLE; pg_restore -t: the grant is refused, the table too
$node->safe_psql('app', 'DROP TABLE visits');
my ($ret, $out, $err, $stdout, $stderr);
IPC::Run::run([ 'pg_restore', @conn, '-d', 'app', '-t', 'visits', "$dir/app.dump" ], '>', \$stdout, '2>', \$stderr);
like($stderr, qr/dp_pg_analyst is granted only SELECT on protected tables.*"visits" is not protected/s,
	'pg_restore -t: the grant to dp_pg_analyst is refused, and the restore says why');
is($node->safe_psql('app', 'SELECT count(*) FROM visits'), '2000', 'the table and its data are back');
refused('app', 'visits', 'restored alone');

# 2. the grant is there but the protection is not (what pg_restore -t leaves
# where the grant could not be refused, e.g. its protection row deleted, row
# level security and the policies gone): refused, never open
$node->safe_psql('app', q{
	DELETE FROM dp_pg.protected_tables WHERE relid = 'people';
	DROP POLICY dp_pg_analysts ON people;
	DROP POLICY dp_pg_others ON people;
	ALTER TABLE people DISABLE ROW LEVEL SECURITY;
	DROP TRIGGER dp_pg_data_changed ON people;
	ALTER TABLE people ADD CHECK (age BETWEEN 0 AND 120);
});
is($node->safe_psql('app', q{SELECT has_table_privilege('dp_pg_analyst', 'people', 'SELECT')}), 't',
	'(people keeps the grant without any protection)');
refused('app', 'people', 'granted, not protected');
($ret, $out, $err) = dp_try($node, 'app', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.5)') FROM people});
isnt($ret, 0, 'no dp query reads it either until it is protected');
like($err, qr/grants SELECT to dp_pg_analyst but is not protected in this database/, 'the refusal says why');
($ret, $out, $err) = dp_try($node, 'app', 'ana', q{SELECT dp_pg.synthesize('people', 'people_twin', 'laplace(epsilon=1)')});
like($err, qr/grants SELECT to dp_pg_analyst but is not protected in this database/, 'nor does a synthetic twin');

# 3. the DBA's steps (docs/dba.md): the settings from the dump, protect, keys, domain,
# and the table budget: found again by name (visits), or bound by the uuid of the dump's
# protection row (people, renamed since its budget was set)
IPC::Run::run([ 'pg_restore', '-f', '-', '-a', '-t', 'protected_tables', '-t', 'public_keys', '-t', 'column_domains',
	"$dir/app.dump" ], '>', \$stdout, '2>', \$stderr);
like($stdout, qr/^public\.visits\tpatient_id\t2\t3\t/m, 'the dump holds the protection of visits by name');
like($stdout, qr/^public\.visits\tward\t\{a,b,c\}/m, '... its public keys');
like($stdout, qr/^public\.visits\tcost\t0\t400/m, '... and its domain');
my ($people_budget) = $stdout =~ /^public\.people\t\\N\t1\t1\t[^\t]*\t([0-9a-f-]{36})$/m;
ok(defined $people_budget, 'the dump holds the table budget of people by name');
$node->safe_psql('app', qq{
	SELECT dp_pg.protect('visits', 'patient_id', 2, 3);
	SELECT dp_pg.set_public_keys('visits', 'ward', ARRAY['a', 'b', 'c']);
	SELECT dp_pg.set_domain('visits', 'cost', 0, 400);
	SELECT dp_pg.set_table_budget('visits', 50, 1e-5);
	SELECT dp_pg.protect('people');
	SELECT dp_pg.set_domain('people', 'age', 0, 120);
	UPDATE dp_pg.protected_tables SET table_budget = '$people_budget' WHERE relid = 'people';
});
my $tables = qr/^(protected|keys|domain|table|bound) /;
same_lines(join("\n", grep { /$tables/ } split /\n/, life_state($node)), join("\n", grep { /$tables/ } split /\n/, $before),
	'protected again: the same protections, keys, domains, grants, policies and table budgets');
is(dp_as($node, 'app', 'ana', q{SELECT count(*) = 3 FROM (SELECT ward, dp_count(1, 'laplace(epsilon=0.25)') FROM visits GROUP BY ward) s}),
	't', 'dp queries work again');
refused('app', 'visits', 'protected again');

# 4. pg_dump -t into other databases, with and without dp_pg: never open
$node->safe_psql('postgres', 'CREATE DATABASE plain; CREATE DATABASE other;');
$node->safe_psql('other', 'CREATE EXTENSION dp_pg');
for my $db ('plain', 'other')
{
	my $sql;
	IPC::Run::run([ 'pg_dump', @conn, '-t', 'visits', 'app' ], '>', \$sql);
	($ret, $out, $err) = $node->psql($db, $sql, on_error_stop => 0);
	like($err, qr/dp_pg_analyst is granted only SELECT on protected tables/, "pg_dump -t visits | psql $db: the grant is refused");
	is($node->safe_psql($db, 'SELECT count(*) FROM visits'), '2000', "$db has the table");
	refused($db, 'visits', "copied into $db");
}

# 5. grants to dp_pg_analyst other than protect()'s are refused
for my $sql ('GRANT SELECT ON wards TO dp_pg_analyst', 'GRANT INSERT ON visits TO dp_pg_analyst',
	'GRANT SELECT (ward) ON visits TO dp_pg_analyst', 'GRANT SELECT ON ALL TABLES IN SCHEMA public TO dp_pg_analyst',
	'ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO dp_pg_analyst')
{
	($ret, $out, $err) = $node->psql('app', $sql);
	like($err, qr/dp_pg_analyst is granted only SELECT on protected tables/, "refused: $sql");
}
$node->safe_psql('app', 'GRANT SELECT ON visits TO dp_pg_analyst');
pass('GRANT SELECT on a protected table to dp_pg_analyst (what protect() and a full restore do) is allowed');

# 6. the DBA's copies carry no grant; a renamed table keeps its protection
$node->safe_psql('app', q{
	CREATE TABLE visits_copy AS SELECT * FROM visits;
	CREATE TABLE visits_like (LIKE visits INCLUDING ALL);
	ALTER TABLE visits RENAME TO visits_2024;
});
for my $t ('visits_copy', 'visits_like')
{
	($ret, $out, $err) = dp_try($node, 'app', 'ana', "SELECT * FROM $t");
	like($err, qr/permission denied/, "$t: a copy is not readable by analysts");
}
is($node->safe_psql('app', q{SELECT privacy_unit FROM dp_pg.protected_tables WHERE relid = 'visits_2024'}), 'patient_id',
	'a renamed table keeps its protection');
refused('app', 'visits_2024', 'renamed');

done_testing();
