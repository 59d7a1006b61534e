# test/t/DpLifecycle.pm — what the lifecycle suites (t/10*.pl) share: a
# cluster with a ledger's worth of state (roles created out of name order,
# budgets, a team budget, caps, charges, a renamed role, a dropped role with
# history, protected tables with a privacy unit, public keys and domains, a
# renamed protected table, a protected partitioned table with a
# sub-partitioned month and a detached month that stayed protected, a
# refusal; on the 0.2.0 catalog also table budgets -- one of them renewing,
# one set before its table was renamed -- and a role budget that renews),
# and that state written out by names only, so that two clusters (or two
# moments) compare line by line.
package DpLifecycle;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(dp_node dp_ready life_fixture life_state dp_as dp_try poll_short same_lines catalog_text);

# A node with dp_pg preloaded (ledger database postgres); %opts go to new().
sub dp_node
{
	my ($name, %opts) = @_;
	my $init = delete $opts{init} // {};
	my $node = PostgreSQL::Test::Cluster->new($name, %opts);
	$node->init(%$init);
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dp_pg'\n");
	return $node;
}

# Poll a query until it returns 't' (at most 20 s: these suites must fail fast on a broken build).
sub poll_short
{
	my ($node, $db, $sql) = @_;
	for (1 .. 100)
	{
		my ($ret, $out) = $node->psql($db, $sql);
		return 1 if $ret == 0 && $out eq 't';
		select(undef, undef, undef, 0.2);
	}
	return 0;
}

# Wait until the ledger worker is ready.
sub dp_ready
{
	my ($node) = @_;
	poll_short($node, 'postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready';
}

# safe_psql as a role.
sub dp_as
{
	my ($node, $db, $role, $sql) = @_;
	return $node->safe_psql($db, $sql, extra_params => [ '-U', $role ]);
}

# psql as a role: (exit code, stdout, stderr).
sub dp_try
{
	my ($node, $db, $role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, $sql, extra_params => [ '-U', $role ]);
	return ($ret, $out, $err);
}

# The state: roles, budgets and the ledger in postgres (the ledger
# database), protections in database app.  Roles are created out of name
# order (a restore creates them in name order, so they get other OIDs).
sub life_fixture
{
	my ($node, %opts) = @_;
	my $version = $opts{version} ? "VERSION '$opts{version}'" : '';
	$node->safe_psql('postgres', qq{
		CREATE ROLE zed;
		CREATE ROLE erin LOGIN;
		CREATE ROLE dave LOGIN;
		CREATE ROLE carl LOGIN;
		CREATE ROLE bob LOGIN;
		CREATE ROLE ana LOGIN;
		CREATE ROLE team;
		GRANT team TO carl;
		CREATE EXTENSION dp_pg $version;
		CREATE DATABASE app;
	});
	dp_ready($node);
	$node->safe_psql('app', qq{
		CREATE EXTENSION dp_pg $version;
		CREATE TABLE visits (id int PRIMARY KEY, patient_id int NOT NULL, ward text NOT NULL,
			cost int NOT NULL CHECK (cost BETWEEN 0 AND 500));
		INSERT INTO visits SELECT g, g % 400, chr(97 + g % 3), g % 500 FROM generate_series(1, 2000) g;
		SELECT dp_pg.protect('visits', 'patient_id', 2, 3);
		SELECT dp_pg.set_public_keys('visits', 'ward', ARRAY['a', 'b', 'c']);
		SELECT dp_pg.set_domain('visits', 'cost', 0, 400);
		CREATE TABLE patients (id int PRIMARY KEY, age int NOT NULL);
		INSERT INTO patients SELECT g, g % 90 FROM generate_series(1, 1000) g;
		SELECT dp_pg.protect('patients');
		SELECT dp_pg.set_domain('patients', 'age', 0, 120);
	});
	# table budgets (0.2.0): bound by name, one set before its table is renamed
	$node->safe_psql('app', q{
		SELECT dp_pg.set_table_budget('visits', 50, 1e-5);
		SELECT dp_pg.set_table_budget('patients', 20, 1e-5, renew => '1 year', renew_from => '2000-01-01 00:00+00');
	}) unless $opts{version};
	$node->safe_psql('app', qq{
		ALTER TABLE patients RENAME TO people;
		CREATE TABLE wards (ward text PRIMARY KEY, name text);
		INSERT INTO wards VALUES ('a', 'Acute'), ('b', 'Burns'), ('c', 'Cardiology');
		GRANT SELECT ON wards TO ana, bob, carl;
	});
	# a partitioned table (a sub-partitioned month), protected, and a month
	# detached from it that stays protected (0.1.0 protects plain tables only)
	$node->safe_psql('app', q{
		CREATE TABLE orders (id int NOT NULL, patient_id int NOT NULL, day date NOT NULL,
			amount int NOT NULL CHECK (amount BETWEEN 0 AND 100)) PARTITION BY RANGE (day);
		CREATE TABLE orders_2023_12 PARTITION OF orders FOR VALUES FROM ('2023-12-01') TO ('2024-01-01');
		CREATE TABLE orders_2024_01 PARTITION OF orders FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
		CREATE TABLE orders_2024_02 PARTITION OF orders FOR VALUES FROM ('2024-02-01') TO ('2024-03-01')
			PARTITION BY HASH (patient_id);
		CREATE TABLE orders_2024_02_h0 PARTITION OF orders_2024_02 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
		CREATE TABLE orders_2024_02_h1 PARTITION OF orders_2024_02 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
		INSERT INTO orders SELECT g, g % 300, DATE '2023-12-01' + g % 90, g % 101 FROM generate_series(1, 3000) g;
		SELECT dp_pg.protect('orders', 'patient_id', 3, 2);
		SELECT dp_pg.set_domain('orders', 'amount', 0, 100);
		ALTER TABLE orders DETACH PARTITION orders_2023_12;
	}) unless $opts{version};
	$node->safe_psql('postgres', q{
		SELECT dp_pg.set_budget('ana', 5, 1e-6);
		SELECT dp_pg.set_budget('bob', 3, 1e-6);
		SELECT dp_pg.set_query_cap('bob', 1);
		SELECT dp_pg.set_budget('team', 2, 0);
		SELECT dp_pg.set_budget('dave', 1, 1e-6);
		SELECT dp_pg.set_budget('erin', 4, 1e-6);
	});
	$node->safe_psql('postgres', q{SELECT dp_pg.set_budget('erin', 4, 1e-6, renew => '1 year', renew_from => '2000-01-01 00:00+00')})
	  unless $opts{version};
	dp_as($node, 'app', 'ana', q{SELECT ward, dp_count(1, 'laplace(epsilon=0.25)') FROM visits GROUP BY ward}) for 1 .. 2;
	dp_as($node, 'app', 'ana', q{SELECT dp_sum(age, 0, 120, 'gaussian(epsilon=0.5, delta=1e-8)') FROM people});
	dp_as($node, 'app', 'bob', q{SELECT dp_count(1, 'laplace(epsilon=0.5)') FROM people}) for 1 .. 2;
	dp_as($node, 'app', 'carl', q{SELECT dp_count(1, 'laplace(epsilon=0.125)') FROM people});
	dp_as($node, 'app', 'dave', q{SELECT dp_count(1, 'laplace(epsilon=0.5)') FROM people});
	dp_as($node, 'app', 'erin', q{SELECT dp_count(1, 'laplace(epsilon=0.75)') FROM people});
	my ($ret) = dp_try($node, 'app', 'ana', 'SELECT * FROM visits');
	die 'an analyst read raw rows' if $ret == 0;
	$node->safe_psql('postgres', q{
		SELECT dp_pg.drop_budget('dave');
		DROP ROLE dave;
		ALTER ROLE erin RENAME TO erin2;
	});
	# the refusal is written by the worker, the dropped role's rows converted by it
	poll_short($node, 'postgres', q{SELECT count(*) > 0 FROM dp_pg.guard_refusal_log});
	poll_short($node, 'postgres',
		q{SELECT count(*) = 0 FROM dp_pg.ledger_entries e
		  WHERE e.role IS NOT NULL AND NOT EXISTS (SELECT FROM pg_roles r WHERE r.oid = e.role)})
	  unless $opts{version};
	return;
}

# The state, by names only: one line per budget, ledger row, refusal,
# protection, public key list, domain, membership and analysts' grant, and on
# the 0.2.0 catalog per table budget and table bound to one (v1 => 1: only
# what the 0.1.0 catalog can show).
sub life_state
{
	my ($node, $appdb, %opts) = @_;
	$appdb //= 'app';
	# the 0.2.0 catalog: table budgets, windows (v1 => 1: what 0.1.0's catalog shows)
	my $v2 = !$opts{v1} &&
	  $node->safe_psql('postgres', q{SELECT to_regclass('dp_pg.table_budget_limits') IS NOT NULL}) eq 't';
	my $renew = $v2 ? q{, 'renew', renew, window_start, 'lifetime', round(lifetime_epsilon::numeric, 9), lifetime_charges} : '';
	my $table_rows = $v2 ? q{,
				'table ' || (SELECT l.table_name FROM dp_pg.table_budget_limits l WHERE l.budget = table_budget)} : '';
	my $table_budgets = $v2 ? q{
			UNION ALL
			SELECT concat_ws(' ', 'table_budget', database, table_name, 'limits', epsilon_limit, delta_limit, rho_limit,
				'renew', renew, window_start, 'spent', round(epsilon_spent::numeric, 9), delta_spent, 'charges', charges,
				'lifetime', round(lifetime_epsilon::numeric, 9), lifetime_charges)
			FROM dp_pg.table_budget_rows()} : '';
	my $ledger = $node->safe_psql('postgres', qq{
		SELECT string_agg(line, E'\n' ORDER BY line) FROM (
			SELECT concat_ws(' ', 'budget', role::regrole, 'limits', epsilon_limit, delta_limit, rho_limit,
				'caps', max_epsilon_per_query, max_delta_per_query, 'spent', round(epsilon_spent::numeric, 9),
				delta_spent, rho_spent, 'charges', charges$renew) AS line
			FROM dp_pg.budget_rows()$table_budgets	-- (exact; dp_pg.budgets shows six significant digits)
			UNION ALL
			SELECT concat_ws(' ', 'ledger', id,
				coalesce(role::regrole::text, 'dropped ' || coalesce(detail->>'dropped_role', detail->>'dropped_role_oid')$table_rows),
				kind, charged_at, 'by', coalesce(requested_by::regrole::text,
					'dropped ' || coalesce(detail->>'dropped_requested_by', detail->>'dropped_requested_by_oid')),
				epsilon, delta, rho, md5(coalesce(query, '')))
			FROM dp_pg.ledger_entries
			UNION ALL
			SELECT concat_ws(' ', 'refusal', role::regrole, as_role::regrole,
				coalesce((SELECT datname FROM pg_database d WHERE d.oid::text = r.database::text), r.database::text),
				sqlstate, rule)
			FROM dp_pg.guard_refusal_log r
			UNION ALL
			SELECT concat_ws(' ', 'member', rolname, pg_has_role(rolname, 'dp_pg_analyst', 'MEMBER'))
			FROM pg_roles WHERE rolname IN ('ana', 'bob', 'carl', 'erin2', 'team', 'zed')) s});
	# which table budget each protected table of the database is bound to, by names
	my $bound = !$opts{v1} && $node->safe_psql($appdb, q{SELECT count(*) FROM pg_attribute
		WHERE attrelid = 'dp_pg.protected_tables'::regclass AND attname = 'table_budget'}) eq '1' ? q{
			UNION ALL
			SELECT concat_ws(' ', 'bound', p.relid::regclass, t.database, t.table_name, t.epsilon_limit, 'charges',
				t.charges, t.lifetime_charges)
			FROM dp_pg.protected_tables p JOIN dp_pg.table_budgets t ON t.budget = p.table_budget} : '';
	my $app = $node->safe_psql($appdb, qq{
		SELECT string_agg(line, E'\n' ORDER BY line) FROM (
			SELECT concat_ws(' ', 'protected', relid::regclass, privacy_unit, max_groups_contributed, max_rows_per_unit) AS line
			FROM dp_pg.protected_tables
			UNION ALL
			SELECT concat_ws(' ', 'keys', relid::regclass, attname, keys) FROM dp_pg.public_keys
			UNION ALL
			SELECT concat_ws(' ', 'domain', relid::regclass, attname, lower, upper) FROM dp_pg.column_domains
			UNION ALL
			SELECT concat_ws(' ', 'table', relname, relrowsecurity, has_table_privilege('dp_pg_analyst', c.oid, 'SELECT'),
				(SELECT string_agg(polname, ',' ORDER BY polname) FROM pg_policy WHERE polrelid = c.oid))
			FROM pg_class c WHERE relname IN ('visits', 'people', 'wards', 'orders', 'orders_2023_12')
			  AND relkind IN ('r', 'p') AND relnamespace = 'public'::regnamespace
			UNION ALL
			SELECT concat_ws(' ', 'partition', i.inhparent::regclass, i.inhrelid::regclass, pg_get_expr(c.relpartbound, c.oid))
			FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent IN (SELECT oid FROM pg_class WHERE relname IN ('orders', 'orders_2024_02')
			                      AND relnamespace = 'public'::regnamespace)$bound) s});
	return "$ledger\n$app";
}

# Compare two texts line by line; on a difference, show the lines that differ.
sub same_lines
{
	my ($got, $want, $name) = @_;
	my %g = map { $_ => 1 } split /\n/, $got;
	my %w = map { $_ => 1 } split /\n/, $want;
	my @missing = grep { !$g{$_} } split /\n/, $want;
	my @extra = grep { !$w{$_} } split /\n/, $got;
	my $ok = ok($got eq $want, $name);
	diag(join("\n", (map { "missing: $_" } @missing), (map { "extra:   $_" } @extra))) unless $ok;
	return $ok;
}

# Every member object of extension dp_pg in database db with its definition,
# one normalized line (or block) per fact, no OID in sight: what a fresh
# install and an updated one must agree on.  With $change, the text after
# that change, made in a transaction that is rolled back.
sub catalog_text
{
	my ($node, $db, $change) = @_;
	my $sql = q{
WITH ext AS (SELECT * FROM pg_extension WHERE extname = 'dp_pg'),
m AS (SELECT d.classid, d.objid FROM pg_depend d, ext
      WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
id AS (SELECT m.classid, m.objid, (pg_identify_object(m.classid, m.objid, 0)).* FROM m),
rel AS (SELECT c.* FROM pg_class c JOIN m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid),
lines AS (
	SELECT 'member ' || type || ' ' || identity AS line FROM id
	UNION ALL
	SELECT 'extension ' || concat_ws(' ', extname, extversion, extrelocatable, extnamespace::regnamespace) FROM ext
	UNION ALL
	SELECT 'config ' || c::regclass || ' ' || coalesce(ext.extcondition[i], '')
	FROM ext, unnest(ext.extconfig) WITH ORDINALITY AS u(c, i)
	UNION ALL
	-- functions and procedures: their whole definition
	SELECT 'function ' || pg_get_functiondef(p.oid)
	FROM id JOIN pg_proc p ON id.classid = 'pg_proc'::regclass AND p.oid = id.objid WHERE p.prokind IN ('f', 'p')
	UNION ALL
	SELECT 'aggregate ' || concat_ws(' ', p.oid::regprocedure, a.aggkind, a.aggnumdirectargs,
		a.aggtransfn::regprocedure, nullif(a.aggfinalfn, 0)::regprocedure, nullif(a.aggcombinefn, 0)::regprocedure,
		nullif(a.aggserialfn, 0)::regprocedure, nullif(a.aggdeserialfn, 0)::regprocedure,
		nullif(a.aggmtransfn, 0)::regprocedure, nullif(a.aggminvtransfn, 0)::regprocedure,
		nullif(a.aggmfinalfn, 0)::regprocedure, a.aggfinalextra, a.aggmfinalextra, a.aggfinalmodify,
		a.aggmfinalmodify, nullif(a.aggsortop, 0)::regoperator, a.aggtranstype::regtype, a.aggtransspace,
		nullif(a.aggmtranstype, 0)::regtype, a.aggmtransspace, a.agginitval, a.aggminitval,
		p.proparallel, p.provolatile, p.prorettype::regtype, pg_get_function_arguments(p.oid))
	FROM id JOIN pg_proc p ON id.classid = 'pg_proc'::regclass AND p.oid = id.objid
	JOIN pg_aggregate a ON a.aggfnoid = p.oid
	UNION ALL
	SELECT 'type ' || concat_ws(' ', t.oid::regtype, t.typtype, t.typlen, t.typbyval, t.typalign, t.typstorage,
		t.typinput::regproc, t.typoutput::regproc, t.typreceive::regproc, t.typsend::regproc,
		t.typmodin::regproc, t.typmodout::regproc, t.typanalyze::regproc, t.typcategory, t.typispreferred,
		t.typdelim, nullif(t.typelem, 0)::regtype, nullif(t.typarray, 0)::regtype, t.typnotnull,
		nullif(t.typbasetype, 0)::regtype, t.typdefault, t.typcollation <> 0)
	FROM id JOIN pg_type t ON id.classid = 'pg_type'::regclass AND t.oid = id.objid
	UNION ALL
	SELECT 'operator ' || concat_ws(' ', o.oid::regoperator, o.oprkind, o.oprcode::regprocedure,
		nullif(o.oprcom, 0)::regoperator, nullif(o.oprnegate, 0)::regoperator, o.oprrest, o.oprjoin,
		o.oprcanmerge, o.oprcanhash, o.oprresult::regtype)
	FROM id JOIN pg_operator o ON id.classid = 'pg_operator'::regclass AND o.oid = id.objid
	UNION ALL
	SELECT 'cast ' || concat_ws(' ', c.castsource::regtype, c.casttarget::regtype,
		nullif(c.castfunc, 0)::regprocedure, c.castcontext, c.castmethod)
	FROM id JOIN pg_cast c ON id.classid = 'pg_cast'::regclass AND c.oid = id.objid
	UNION ALL
	SELECT 'event trigger ' || concat_ws(' ', e.evtname, e.evtevent, e.evtfoid::regprocedure, e.evtenabled, e.evttags)
	FROM id JOIN pg_event_trigger e ON id.classid = 'pg_event_trigger'::regclass AND e.oid = id.objid
	UNION ALL
	SELECT concat_ws(' ', 'schema', n.nspname, coalesce(n.nspacl::text, '-'))
	FROM id JOIN pg_namespace n ON id.classid = 'pg_namespace'::regclass AND n.oid = id.objid
	UNION ALL
	-- relations: kind and options, columns in order, constraints, indexes, triggers, policies, views
	SELECT 'relation ' || concat_ws(' ', c.oid::regclass, c.relkind, c.relpersistence, c.reloptions,
		c.relrowsecurity, c.relforcerowsecurity, c.relreplident, c.relhasindex, c.relhastriggers, c.relispartition)
	FROM rel c
	UNION ALL
	SELECT 'column ' || concat_ws(' ', a.attrelid::regclass,
		row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum), a.attname, format_type(a.atttypid, a.atttypmod),
		a.attnotnull, a.attidentity, a.attgenerated, pg_get_expr(d.adbin, d.adrelid),
		nullif(a.attcollation, 0)::regcollation, a.attstorage, a.attacl)
	FROM rel c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	UNION ALL
	SELECT 'constraint ' || concat_ws(' ', co.conrelid::regclass, co.conname, co.contype, co.condeferrable,
		co.convalidated, pg_get_constraintdef(co.oid))
	FROM rel c JOIN pg_constraint co ON co.conrelid = c.oid
	UNION ALL
	SELECT concat_ws(' ', 'index', pg_get_indexdef(i.indexrelid), i.indisprimary, i.indisunique)
	FROM rel c JOIN pg_index i ON i.indrelid = c.oid
	UNION ALL
	SELECT concat_ws(' ', 'trigger', pg_get_triggerdef(t.oid), t.tgenabled)
	FROM rel c JOIN pg_trigger t ON t.tgrelid = c.oid AND NOT t.tgisinternal
	UNION ALL
	SELECT 'policy ' || concat_ws(' ', p.polrelid::regclass, p.polname, p.polcmd, p.polpermissive,
		pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
	FROM rel c JOIN pg_policy p ON p.polrelid = c.oid
	UNION ALL
	SELECT 'view ' || c.oid::regclass || ' ' || pg_get_viewdef(c.oid)
	FROM rel c WHERE c.relkind IN ('v', 'm')
	UNION ALL
	SELECT 'sequence ' || concat_ws(' ', s.seqrelid::regclass, s.seqtypid::regtype, s.seqstart, s.seqincrement,
		s.seqmax, s.seqmin, s.seqcache, s.seqcycle)
	FROM rel c JOIN pg_sequence s ON s.seqrelid = c.oid
	UNION ALL
	-- privileges, as granted and as pg_dump will restore them
	SELECT concat_ws(' ', 'acl', type, identity, coalesce(acl::text, 'default'))
	FROM (SELECT id.type, id.identity, p.proacl AS acl FROM id JOIN pg_proc p ON id.classid = 'pg_proc'::regclass AND p.oid = id.objid
		  UNION ALL SELECT id.type, id.identity, c.relacl FROM id JOIN pg_class c ON id.classid = 'pg_class'::regclass AND c.oid = id.objid
		  UNION ALL SELECT id.type, id.identity, t.typacl FROM id JOIN pg_type t ON id.classid = 'pg_type'::regclass AND t.oid = id.objid) a
	UNION ALL
	SELECT concat_ws(' ', 'initial privileges', id.type, id.identity, i.objsubid, i.privtype, i.initprivs)
	FROM id JOIN pg_init_privs i ON i.classoid = id.classid AND i.objoid = id.objid
	UNION ALL
	SELECT concat_ws(' ', 'comment', id.type, id.identity, d.objsubid, d.description)
	FROM id JOIN pg_description d ON d.classoid = id.classid AND d.objoid = id.objid)
SELECT string_agg(line, E'\n' ORDER BY line) FROM lines};
	return $node->safe_psql($db, $sql) unless defined $change;
	return $node->safe_psql($db, "BEGIN; $change; $sql; ROLLBACK;");
}

1;
