# ALTER EXTENSION dp_pg UPDATE from the released 0.1.0 to the default
# version loses nothing and ends with the catalog of a fresh install.
#
# The released install script sql/dp_pg--0.1.0.sql is installed (every C
# symbol it binds must still exist: CREATE FUNCTION checks them), and the new
# library runs on that catalog for a database's life: budgets, caps, charges,
# refusals, protections, public keys, domains, a renamed role, a dropped role
# with history.  Then each database is updated; every budget, spent amount,
# charge, refusal, protection, key and domain is where it was, by name; the
# stored references are regrole / regclass; and every member object of the
# extension with its definition (functions, aggregates, types, operators,
# casts, tables with columns in order, constraints, indexes, triggers,
# policies, views, sequences, event triggers, privileges, initial
# privileges, comments, configuration-table registrations) is exactly that
# of a fresh install of the default version.  Generic: what any release adds
# is compared too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't';
use DpLifecycle;

my $node = dp_node('update');
$node->start;
my $default = $node->safe_psql('postgres', q{SELECT default_version FROM pg_available_extensions WHERE name = 'dp_pg'});
isnt($default, '0.1.0', "the default version ($default) is not the released 0.1.0");
is($node->safe_psql('postgres', qq{SELECT count(*) FROM pg_extension_update_paths('dp_pg')
	WHERE source = '0.1.0' AND target = '$default' AND path IS NOT NULL}), '1', 'an update path leads from 0.1.0 to it');

life_fixture($node, version => '0.1.0');
is($node->safe_psql('app', q{SELECT extversion FROM pg_extension WHERE extname = 'dp_pg'}), '0.1.0',
	'the new library ran a database\'s life on the 0.1.0 catalog');
is($node->safe_psql('postgres', q{SELECT format_type(atttypid, NULL) FROM pg_attribute
	WHERE attrelid = 'dp_pg.budget_limits'::regclass AND attname = 'role'}), 'oid', '(0.1.0 stores roles as bare OIDs)');
is($node->safe_psql('app', q{SELECT count(*) FROM dp_pg.guard_refusals WHERE database = 'app'}), '1',
	'the refusal log reads on the 0.1.0 catalog');
# a role dropped on 0.1.0: its rows keep a bare OID until the update
$node->safe_psql('postgres', q{CREATE ROLE fred LOGIN; SELECT dp_pg.set_budget('fred', 1, 1e-6);});
dp_as($node, 'app', 'fred', q{SELECT dp_count(1, 'laplace(epsilon=0.5)') FROM people});
$node->safe_psql('postgres', q{SELECT dp_pg.drop_budget('fred'); DROP ROLE fred;});
# charges of every family compose on the 0.1.0 catalog too (key selection is recorded
# without a Renyi curve there, as the replay counts it); one query of a rho release and
# key selection needs the 0.2.0 catalog's rdp_delta
$node->safe_psql('postgres', q{CREATE ROLE gus LOGIN; SELECT dp_pg.set_budget('gus', 1e9, 1e-6);});
is(dp_as($node, 'app', 'gus', q{SELECT dp_count(1, 'gaussian(rho=0.01)') IS NOT NULL FROM people}), 't',
	'0.1.0 catalog: a rho charge');
is(dp_as($node, 'app', 'gus', q{SELECT dp_histogram(age, 'gaussian(epsilon=0.1, delta=1e-9)') IS NOT NULL FROM people}), 't',
	'0.1.0 catalog: key selection after it is admitted');
my ($ret, $out, $err) = dp_try($node, 'app', 'gus',
	q{SELECT dp_count(1, 'gaussian(rho=0.01)'), dp_histogram(age, 'gaussian(epsilon=0.1, delta=1e-9)') FROM people});
like($err, qr/needs dp_pg 0\.2\.0 in the ledger database/, '0.1.0 catalog: one query of both asks for the update');
my $before = life_state($node);
my $before_rows = $node->safe_psql('postgres', 'SELECT count(*) FROM dp_pg.ledger_entries');
my $dangling = $node->safe_psql('postgres',
	'SELECT count(*) FROM dp_pg.ledger_entries e WHERE NOT EXISTS (SELECT FROM pg_roles r WHERE r.oid = e.role)');
is($dangling, '6', '(dave\'s and fred\'s rows name a role that is gone by its bare OID)');

$node->safe_psql($_, 'ALTER EXTENSION dp_pg UPDATE') for ('postgres', 'app');
is($node->safe_psql('app', q{SELECT extversion FROM pg_extension WHERE extname = 'dp_pg'}), $default, 'updated');
dp_ready($node);

# nothing lost: the same lines, by name (the rows of dave and fred, dropped
# before the update, now say that they were dropped)
(my $want = $before) =~ s/^(ledger \d+ )(\d+) /$1dropped $2 /mg;
$want =~ s/^(ledger .* by )(\d+) /$1dropped $2 /mg;
same_lines(life_state($node, 'app', v1 => 1), $want, 'nothing was lost in the update');
is($node->safe_psql('postgres', 'SELECT count(*) FROM dp_pg.ledger_entries'), $before_rows, 'every ledger row is there');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger_entries WHERE role IS NULL AND detail ? 'dropped_role_oid'}),
	$dangling, 'the rows of roles dropped before the update lost the bare OID (the detail keeps it)');
is($node->safe_psql('postgres', q{SELECT string_agg(attrelid::regclass || '.' || attname || ' ' || format_type(atttypid, NULL), ', '
	ORDER BY attrelid::regclass::text, attname) FROM pg_attribute WHERE attrelid IN ('dp_pg.budget_limits'::regclass, 'dp_pg.ledger_entries'::regclass)
	AND attname IN ('role', 'requested_by')}),
	'dp_pg.budget_limits.role regrole, dp_pg.ledger_entries.requested_by regrole, dp_pg.ledger_entries.role regrole',
	'roles are stored as regrole');
is($node->safe_psql('app', q{SELECT string_agg(attrelid::regclass || ' ' || format_type(atttypid, NULL), ', ' ORDER BY attrelid::regclass::text)
	FROM pg_attribute WHERE attname = 'relid' AND attrelid IN ('dp_pg.protected_tables'::regclass,
	'dp_pg.public_keys'::regclass, 'dp_pg.column_domains'::regclass)}),
	'dp_pg.column_domains regclass, dp_pg.protected_tables regclass, dp_pg.public_keys regclass', 'tables as regclass');
is($node->safe_psql('app', q{SELECT count(*) FROM dp_pg.ledger WHERE role = 'ana'}), '4',
	'the views take names: role = \'ana\'');
is($node->safe_psql('app', q{SELECT max_rows_per_unit FROM dp_pg.protected_tables WHERE relid = 'visits'}), '3',
	'... relid = \'visits\'');

# the library goes on: charges, refusals, the names of dropped roles
is(dp_as($node, 'app', 'ana', q{SELECT abs(dp_count(1, 'laplace(epsilon=0.5)') - 1000) < 60 FROM people}), 't',
	'charges after the update');
# ... and the 0.2.0 catalog's table budgets, windows and mixed queries (the worker loaded its layout again)
$node->safe_psql('app', q{SELECT dp_pg.set_table_budget('people', 30, 1e-5)});
$node->safe_psql('postgres', q{SELECT dp_pg.set_budget('gus', 1e9, 1e-6, renew => '1 day')});
is(dp_as($node, 'app', 'gus',
	q{SELECT dp_count(1, 'gaussian(rho=0.01)') IS NOT NULL, dp_histogram(age, 'gaussian(epsilon=0.1, delta=1e-9)') IS NOT NULL FROM people}),
	't|t', 'after the update: one query of a rho release and key selection');
is($node->safe_psql('app', q{SELECT charges FROM dp_pg.table_budgets WHERE relid = 'people'}), '1',
	'... charged to the table budget set after the update');
is($node->safe_psql('postgres', q{SELECT rdp_delta, budget_window IS NOT NULL FROM dp_pg.ledger WHERE role = 'gus' ORDER BY id DESC LIMIT 1}),
	'1e-09|t', '... with its rdp_delta, in the role\'s window');
($ret) = dp_try($node, 'app', 'ana', 'SELECT * FROM people');
isnt($ret, 0, 'raw rows refused');
ok(poll_short($node, 'app', q{SELECT count(*) = 2 FROM dp_pg.guard_refusals WHERE database = 'app' AND role = 'ana'}),
	'the refusal log records by name after the update');
$node->safe_psql('postgres', q{SELECT dp_pg.drop_budget('erin2'); DROP ROLE erin2;});
ok(poll_short($node, 'postgres', q{SELECT count(*) = 3 FROM dp_pg.ledger_entries WHERE role IS NULL AND detail->>'dropped_role' = 'erin2'}),
	'a role dropped after the update: its rows keep its name');

# the catalog equals a fresh install
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION dp_pg');
my $fresh = catalog_text($node, 'fresh');
like($fresh, qr/^member table dp_pg\.ledger_entries$/m, '(the comparison lists the member objects)');
like($fresh, qr/^function CREATE OR REPLACE FUNCTION dp_pg\.protect/m, '(... with their definitions)');
same_lines(catalog_text($node, 'postgres'), $fresh, 'the updated ledger database\'s catalog equals a fresh install');
same_lines(catalog_text($node, 'app'), $fresh, 'the updated application database\'s catalog equals a fresh install');

# ... and would see what an update script gets wrong (positive controls:
# each change, rolled back, makes the fresh catalog differ)
for my $change (
	q{ALTER FUNCTION dp_pg.import_ledger(regclass) SET work_mem = '64MB'},
	q{CREATE OR REPLACE FUNCTION dp_pg.ledger_changed() RETURNS trigger AS '$libdir/dp_pg', 'dp_analyst_rows' LANGUAGE C},
	q{GRANT EXECUTE ON FUNCTION dp_pg.timeline() TO PUBLIC},
	q{ALTER TABLE dp_pg.budget_limits ALTER COLUMN updated_at DROP DEFAULT},
	q{ALTER TABLE dp_pg.guard_refusal_log ALTER COLUMN database TYPE name},
	q{ALTER TABLE dp_pg.ledger_entries ENABLE TRIGGER dp_pg_ledger_changed},
	q{DROP INDEX dp_pg.ledger_entries_requested_by_idx},
	q{ALTER TABLE dp_pg.column_domains DROP CONSTRAINT column_domains_check},
	q{COMMENT ON VIEW dp_pg.ledger IS 'changed'},
	q{CREATE OR REPLACE VIEW dp_pg.guard_refusals AS SELECT r.id, r.refused_at, r.role, r.as_role, r.database, r.sqlstate, r.rule, r.query FROM dp_pg.refusal_rows() r WHERE r.id > 0},
	q{ALTER EXTENSION dp_pg DROP FUNCTION dp_pg.timeline()},
	q{ALTER OPERATOR =(regrole, unknown) SET (RESTRICT = eqsel)})
{
	isnt(catalog_text($node, 'fresh', $change), $fresh, "the comparison sees: $change");
}

done_testing();
