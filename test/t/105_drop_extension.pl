# The ledger is never dropped by accident.  In the ledger database, while
# the ledger holds a budget or a row, DROP EXTENSION dp_pg (with or without
# CASCADE), DROP SCHEMA ... CASCADE of the schema it is installed in (or of
# dp_pg), and DROP DATABASE of the ledger database are refused, with a
# message that says how to keep the ledger first; nothing is lost.  A
# superuser who kept it sets dp_pg.allow_ledger_drop (no one else can) and
# drops it.  An empty ledger drops as any extension.  In another database
# DROP EXTENSION dp_pg CASCADE removes the protections, and the tables that
# keep the analysts' grant are refused to them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use lib 't';
use DpLifecycle;

my $node = dp_node('drop');
$node->start;
life_fixture($node);
my $before = life_state($node);
my ($ret, $out, $err);

for my $sql ('DROP EXTENSION dp_pg', 'DROP EXTENSION dp_pg CASCADE', 'DROP EXTENSION IF EXISTS plpgsql, dp_pg CASCADE',
	'DROP SCHEMA public CASCADE', 'DROP SCHEMA dp_pg CASCADE')
{
	($ret, $out, $err) = $node->psql('postgres', $sql);
	isnt($ret, 0, "refused: $sql");
	like($err, qr/would delete the dp_pg privacy ledger/, '... saying why');
}
like($err, qr/DETAIL:  Database "postgres" holds the ledger of this cluster \(4 budgets, \d+ ledger rows\)/,
	'the message counts what would be lost');
like($err, qr/HINT:  Keep it first \(pg_dump --data-only --table='dp_pg\.\*'.*SET dp_pg\.allow_ledger_drop = on/,
	'and says how to keep it, and how to drop it anyway');
($ret, $out, $err) = $node->psql('app', 'DROP DATABASE postgres');
isnt($ret, 0, 'DROP DATABASE of the ledger database is refused');
like($err, qr/DROP DATABASE postgres would delete the dp_pg privacy ledger/, '... saying why');
($ret, $out, $err) = $node->psql('app', 'DROP DATABASE postgres WITH (FORCE)');
like($err, qr/would delete the dp_pg privacy ledger/, '... also WITH (FORCE)');
same_lines(life_state($node), $before, 'nothing was lost');

# an analyst's drops meet the guard's DDL fence (guard/ddl.c: the extension
# is something a protected table depends on), this file's refusal in the
# ledger database, or PostgreSQL's ownership check; whichever comes first,
# nothing of the ledger or a protection goes (the fence logs its refusal)
for my $case ([ 'postgres', 'DROP EXTENSION dp_pg' ], [ 'postgres', 'DROP EXTENSION dp_pg CASCADE' ],
	[ 'postgres', 'DROP SCHEMA dp_pg CASCADE' ], [ 'app', 'DROP EXTENSION dp_pg CASCADE' ],
	[ 'app', 'DROP DATABASE postgres' ])
{
	my ($db, $sql) = @$case;
	($ret, $out, $err) = dp_try($node, $db, 'ana', $sql);
	isnt($ret, 0, "an analyst's $sql (in $db) is refused");
	like($err, qr/ERROR:  .*(may not act on extension dp_pg|must be owner|would delete the dp_pg privacy ledger)/,
		'... by the fence, the ledger\'s keeper or ownership');
}
my $without_refusals = sub { join("\n", grep { !/^refusal / } split /\n/, shift) };
same_lines($without_refusals->(life_state($node)), $without_refusals->($before), 'nothing was lost to an analyst');
ok(poll_short($node, 'postgres', q{SELECT count(*) = 1 FROM dp_pg.guard_refusals
	WHERE role = 'ana' AND database = 'app' AND sqlstate = '42501' AND rule LIKE 'DROP EXTENSION may not act on extension dp_pg%'}),
	"the fence's refusal is logged");

# dp_pg reads and writes the ledger tables in a user's session (this
# refusal's count, a dropped role's name kept in its rows) with a
# superuser's rights and search_path pg_catalog: a function or operator of
# the caller's search_path never runs there.  The traps are proven live
# first (as the superuser, rolled back).
$node->safe_psql('postgres', q{
	CREATE ROLE mallory CREATEROLE LOGIN;
	CREATE SCHEMA evil AUTHORIZATION mallory;
});
dp_as($node, 'postgres', 'mallory', q{
	CREATE FUNCTION evil.grab(int8) RETURNS int8 LANGUAGE plpgsql AS $$
		BEGIN EXECUTE 'ALTER ROLE mallory SUPERUSER'; RETURN $1 + 1; END $$;
	CREATE AGGREGATE evil.count(*) (SFUNC = evil.grab, STYPE = int8, INITCOND = '0');
	CREATE FUNCTION evil.grab_eq(regrole, oid) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN EXECUTE 'ALTER ROLE mallory SUPERUSER'; RETURN $1::oid OPERATOR(pg_catalog.=) $2; END $$;
	CREATE OPERATOR evil.= (LEFTARG = regrole, RIGHTARG = oid, FUNCTION = evil.grab_eq);
	CREATE ROLE victim;
});
my $is_super = q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'};
is($node->safe_psql('postgres', qq{BEGIN; SET LOCAL search_path = evil, pg_catalog;
	SELECT count(*) FROM (VALUES (1)) v; $is_super; ROLLBACK;}), "1\nt",
	'(control: the aggregate trap fires in a superuser\'s statement)');
is($node->safe_psql('postgres', qq{BEGIN; SET LOCAL search_path = evil;
	SELECT 'victim'::regrole = 'victim'::regrole::oid; $is_super; ROLLBACK;}), "t\nt",
	'(control: the operator trap fires in a superuser\'s statement)');
($ret, $out, $err) = $node->psql('postgres', 'SET search_path = evil, pg_catalog; DROP EXTENSION dp_pg',
	extra_params => [ '-U', 'mallory' ]);
like($err, qr/would delete the dp_pg privacy ledger/, "another role's DROP EXTENSION dp_pg meets the refusal");
like($err, qr/HINT:  Only a superuser can drop the ledger/, '... whose hint is for a role that cannot set dp_pg.allow_ledger_drop');
is($node->safe_psql('postgres', $is_super), 'f', '... and its search_path ran nothing as a superuser');
$node->safe_psql('postgres', q{SELECT dp_pg.set_budget('victim', 1, 0); SELECT dp_pg.drop_budget('victim');});
($ret, $out, $err) = $node->psql('postgres', 'SET search_path = evil; DROP ROLE victim',
	extra_params => [ '-U', 'mallory' ]);
is($ret, 0, 'a role with ledger rows is dropped by a CREATEROLE role with its own search_path');
is($node->safe_psql('postgres', $is_super), 'f', '... which ran nothing as a superuser');
ok(poll_short($node, 'postgres', q{SELECT count(*) = 2 FROM dp_pg.ledger_entries
	WHERE role IS NULL AND detail->>'dropped_role' = 'victim'}), '... and the rows keep the name');
$node->safe_psql('postgres', 'DROP SCHEMA evil CASCADE; DROP ROLE mallory');

# only a superuser may allow it
$node->safe_psql('postgres', 'CREATE ROLE dba CREATEROLE LOGIN');
($ret, $out, $err) = $node->psql('postgres', 'SET dp_pg.allow_ledger_drop = on', extra_params => [ '-U', 'dba' ]);
like($err, qr/permission denied to set parameter "dp_pg.allow_ledger_drop"/, 'dp_pg.allow_ledger_drop is superuser-only');

# another database: its protections go, its tables stay refused to analysts
$node->safe_psql('app', 'DROP EXTENSION dp_pg CASCADE');
pass('DROP EXTENSION dp_pg CASCADE in a database that is not the ledger database');
($ret, $out, $err) = dp_try($node, 'app', 'ana', 'SELECT * FROM visits');
like($err, qr/grants SELECT to dp_pg_analyst but is not protected/, 'its tables keep the grant and are refused to analysts');

# kept first, then dropped on purpose
my $dir = PostgreSQL::Test::Utils::tempdir();
command_ok([ 'pg_dump', '-h', $node->host, '-p', $node->port, '--data-only', "--table=dp_pg.*", '-f', "$dir/ledger.sql",
	'postgres' ], 'the ledger is kept as the message says');
my $kept = slurp_file("$dir/ledger.sql");
like($kept, qr/^COPY dp_pg\.ledger_entries .*\n(.*\n)*?\d+\tana\tcharge\t/m, '(the export holds the ledger by name)');
like($kept, qr/^COPY dp_pg\.budget_limits .*\nana\t5\t/m, '(and the budgets)');
$node->safe_psql('postgres', 'SET dp_pg.allow_ledger_drop = on; DROP EXTENSION dp_pg CASCADE;');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_extension WHERE extname = 'dp_pg'}), '0',
	'a superuser who set dp_pg.allow_ledger_drop drops it');

# an empty ledger drops as any extension
$node->safe_psql('postgres', 'CREATE EXTENSION dp_pg');
dp_ready($node);
$node->safe_psql('postgres', 'DROP EXTENSION dp_pg');
pass('an empty ledger is dropped without ceremony');

done_testing();
