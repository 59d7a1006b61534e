# pg_dumpall into a fresh cluster: every budget, spent amount, charge,
# refusal, protection, public key list and domain lands on the role or table
# of the same name, although the new cluster creates the roles in another
# order (name order, after other roles), so every OID differs.  A role
# renamed before the dump keeps its budget; the history of a dropped role
# keeps its name and lands on no role.  The restored budgets are live at
# once: the analysts' next queries are charged to themselves, their team,
# and nobody else; raw rows stay refused.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't';
use DpLifecycle;

my $old = dp_node('old');
$old->start;
life_fixture($old);
my $before = life_state($old);
like($before, qr/^ledger \d+ dropped dave charge /m, 'the dropped role\'s charge keeps its name');
like($before, qr/^budget erin2 /m, 'the renamed role keeps its budget');
like($before, qr/^bound people app "?public"?\.patients 20 charges \d+ \d+$/m,
	'the renamed table keeps its table budget (set under its old name)');
like($before, qr/^table_budget app public\.visits limits 50 1e-05 renew spent /m, 'the table budgets are in the state');

my $dump = PostgreSQL::Test::Utils::tempdir() . '/all.sql';
command_ok([ 'pg_dumpall', '-h', $old->host, '-p', $old->port, '-f', $dump ], 'pg_dumpall');
my $oids_before = $old->safe_psql('postgres',
	q{SELECT string_agg(rolname || '=' || oid, ' ' ORDER BY rolname) FROM pg_roles WHERE rolname IN ('ana', 'bob', 'team')});
$old->stop;

my $new = dp_node('new');
$new->start;
# roles that take OIDs first, as in a cluster that had roles of its own
$new->safe_psql('postgres', 'CREATE ROLE aaa; CREATE ROLE abe; CREATE ROLE adam;');
my ($ret, $out, $err) = $new->psql('postgres', undef, extra_params => [ '-f', $dump ], on_error_stop => 0);
is($ret, 0, 'the dump restores');
is(join("\n", grep { /ERROR/ && !/role "postgres" already exists/ } split /\n/, $err), '',
	'without an error (but for the role that exists in every cluster)');
dp_ready($new);
my $oids_after = $new->safe_psql('postgres',
	q{SELECT string_agg(rolname || '=' || oid, ' ' ORDER BY rolname) FROM pg_roles WHERE rolname IN ('ana', 'bob', 'team')});
isnt($oids_after, $oids_before, 'the roles have other OIDs in the new cluster');

# at once, without a restart: every line by name
same_lines(life_state($new), $before, 'budgets, spending, charges, refusals, protections, keys and domains by name');
is($new->safe_psql('postgres', q{SELECT string_agg(kind, ',' ORDER BY id) FROM dp_pg.ledger_entries
	WHERE role IS NULL AND detail->>'dropped_role' = 'dave'}),
	'limit,charge,remove', 'the dropped role\'s rows are on no role');

# live: each analyst's query is charged to that analyst (or her team) only
my $charges = q{SELECT string_agg(role || ':' || charges, ' ' ORDER BY role::text) FROM dp_pg.budgets};
my $c0 = $new->safe_psql('postgres', $charges);
is(dp_as($new, 'app', 'ana', q{SELECT abs(dp_count(1, 'laplace(epsilon=0.5)') - 1000) < 60 FROM people}), 't',
	'an analyst queries the restored table');
dp_as($new, 'app', 'carl', q{SELECT dp_count(1, 'laplace(epsilon=0.125)') FROM people});
my $c1 = $new->safe_psql('postgres', $charges);
(my $want = $c0) =~ s/\bana:(\d+)/'ana:' . ($1 + 1)/e;
$want =~ s/\bteam:(\d+)/'team:' . ($1 + 1)/e;
is($c1, $want, 'ana\'s query is charged to ana, carl\'s to his team, nobody else\'s');
my $tb = q{SELECT string_agg(table_name || ':' || charges, ' ' ORDER BY table_name) FROM dp_pg.table_budgets};
my $t0 = $new->safe_psql('postgres', $tb);
dp_as($new, 'app', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.125)') FROM people});
(my $twant = $t0) =~ s/public\.patients:(\d+)/'public.patients:' . ($1 + 1)/e;
is($new->safe_psql('postgres', $tb), $twant, 'the restored table budget of people is charged, the other one is not');
($ret, $out, $err) = dp_try($new, 'app', 'ana', 'SELECT * FROM visits');
isnt($ret, 0, 'raw rows stay refused');
is($out, '', 'no row');
is($new->safe_psql('postgres', q{SELECT epsilon_remaining < 5 - 1.0 FROM dp_pg.budgets WHERE role = 'ana'}), 't',
	'a view column compares with a name (role = \'ana\')');

done_testing();
