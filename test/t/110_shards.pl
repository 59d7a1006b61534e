# Shards on other servers: a protected partitioned table whose partitions are
# local tables and postgres_fdw foreign tables on two more clusters
# (src/guard/partitions.c; docs/dba.md, "Shards on other servers").
#
#  - Answered and charged once, here: each person bounded across local and
#    remote partitions (exact under dp_pg.debug_noiseless); the remote
#    servers (log_statement = all) receive plain reads of columns: the only
#    conditions shipped are comparisons of columns with constants, never a
#    predicate that could fail there (LIKE, arithmetic, casts, date_trunc,
#    regular expressions stay here), never an aggregate nor a GROUP BY,
#    also with partitionwise aggregation on a table sharded by its privacy
#    unit.  Positive controls: a superuser's same queries ship those.
#  - Refused before anything is charged: a foreign partition read on its
#    own; servers with use_remote_estimate (no EXPLAIN reaches them) or
#    with dp_pg among their shippable extensions; attaching a foreign
#    table of another wrapper or on an analyst's server.  A shard that is
#    down fails the query before its charge; pruned away, it is not needed.
#  - A foreign partition detached stays protected.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't';
use DpLifecycle;

my @shards;
for my $i (1, 2)
{
	my $s = PostgreSQL::Test::Cluster->new("shard$i");
	$s->init;
	$s->append_conf('postgresql.conf', "log_statement = 'all'\n");
	$s->start;
	my $year = 2024 + $i;
	$s->safe_psql('postgres', qq{
		CREATE TABLE orders_remote (id int NOT NULL, person int NOT NULL, day date NOT NULL,
			amount int NOT NULL, note text NOT NULL);
		-- persons 1..150, some with rows here and in the coordinator's months
		INSERT INTO orders_remote SELECT 100000 * $i + g, g % 150 + 1, DATE '$year-01-01' + g % 300, g % 101, 'remote' || g
			FROM generate_series(1, 900) g;
		CREATE TABLE by_person_remote (id int NOT NULL, person int NOT NULL, amount int NOT NULL);
		INSERT INTO by_person_remote SELECT g, g, 7 FROM generate_series(1, 1000) g WHERE g % 2 = $i - 1;
	});
	push @shards, $s;
}
my $node = dp_node('coordinator');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION dp_pg');
dp_ready($node);
my ($ret, $out, $err);
my $me = $node->safe_psql('postgres', 'SELECT current_user');
$node->safe_psql('postgres', qq{
	CREATE ROLE ana LOGIN;
	SELECT dp_pg.set_budget('ana', 1000, 1e-3);
	CREATE EXTENSION postgres_fdw;
	CREATE SERVER shard1 FOREIGN DATA WRAPPER postgres_fdw
		OPTIONS (host '@{[ $shards[0]->host ]}', port '@{[ $shards[0]->port ]}', dbname 'postgres');
	CREATE SERVER shard2 FOREIGN DATA WRAPPER postgres_fdw
		OPTIONS (host '@{[ $shards[1]->host ]}', port '@{[ $shards[1]->port ]}', dbname 'postgres');
	CREATE USER MAPPING FOR "$me" SERVER shard1 OPTIONS (user '$me');
	CREATE USER MAPPING FOR "$me" SERVER shard2 OPTIONS (user '$me');
	CREATE TABLE orders (id int NOT NULL, person int NOT NULL, day date NOT NULL,
		amount int NOT NULL CHECK (amount BETWEEN 0 AND 100), note text NOT NULL) PARTITION BY RANGE (day);
	CREATE TABLE orders_2024 PARTITION OF orders FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
	INSERT INTO orders SELECT g, g % 150 + 1, DATE '2024-01-01' + g % 300, g % 101, 'local' || g FROM generate_series(1, 600) g;
	CREATE FOREIGN TABLE orders_2025 PARTITION OF orders FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')
		SERVER shard1 OPTIONS (table_name 'orders_remote');
	CREATE FOREIGN TABLE orders_2026 PARTITION OF orders FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')
		SERVER shard2 OPTIONS (table_name 'orders_remote');
	SELECT dp_pg.protect('orders', 'person', 3, 2);
	SELECT dp_pg.set_domain('orders', 'amount', 0, 100);
	-- sharded by its privacy unit: a GROUP BY person is partitionwise
	CREATE TABLE by_person (id int NOT NULL, person int NOT NULL, amount int NOT NULL CHECK (amount BETWEEN 0 AND 10))
		PARTITION BY HASH (person);
	CREATE FOREIGN TABLE by_person_0 PARTITION OF by_person FOR VALUES WITH (MODULUS 2, REMAINDER 0)
		SERVER shard1 OPTIONS (table_name 'by_person_remote');
	CREATE FOREIGN TABLE by_person_1 PARTITION OF by_person FOR VALUES WITH (MODULUS 2, REMAINDER 1)
		SERVER shard2 OPTIONS (table_name 'by_person_remote');
	SELECT dp_pg.protect('by_person', 'person', 1, 1);
});

sub charges
{
	return $node->safe_psql('postgres', q{SELECT charges FROM dp_pg.budget_rows() WHERE role = 'ana'::regrole});
}
sub noiseless
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', "SET dp_pg.debug_noiseless = on; SET ROLE ana; $sql");
}
# what the shards received while $code ran: the remote queries' text
sub remote_sql
{
	my ($code) = @_;
	my @offsets = map { -s $_->logfile } @shards;
	$code->();
	my $text = '';
	for my $i (0, 1)
	{
		my $log = slurp_file($shards[$i]->logfile, $offsets[$i]);
		$text .= join("\n", $log =~ /DECLARE c\d+ CURSOR FOR\s+(SELECT[^\n]*)/g) . "\n";
		$text .= "EXPLAIN\n" if $log =~ /\bEXPLAIN\b/;
	}
	return $text;
}

# answered and charged once; persons bounded across local and remote partitions
my $c0 = charges();
my $remote = remote_sql(sub {
	is(dp_as($node, 'postgres', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders}), 't',
		'a dp query over local and foreign partitions is answered');
});
is(charges(), $c0 + 1, '... charged once, here');
like($remote, qr/SELECT person FROM public\.orders_remote/, '... reading the remote rows\' unit column (both shards)');
is(() = $remote =~ /orders_remote/g, 2, '(one remote read per shard)');
my $want = $node->safe_psql('postgres', q{SELECT sum(least(n, 2)) FROM (SELECT count(*) AS n FROM orders GROUP BY person) s});
is(noiseless(q{SELECT dp_count(1, 'laplace(epsilon=1)') FROM orders}), $want,
	"each person counts at most 2 rows across the local and the remote partitions ($want)");

# what is shipped: comparisons of columns with constants only
for my $case (
	[ q{note LIKE 'remote1%'}, qr/LIKE|~~/ ],
	[ q{amount * 2 > 100}, qr/\*/ ],
	[ q{amount::numeric / 3 > 10}, qr/\//, ],
	[ q{note ~ '^remote[0-9]+7$'}, qr/~/ ],
	[ q{date_trunc('month', day) = '2025-03-01'}, qr/date_trunc/ ],
	[ q{day + 10 > '2025-06-01'}, qr/\+/ ],
	[ q{lower(note) = 'remote17'}, qr/lower/ ])
{
	my ($pred, $shipped) = @$case;
	my $sql = qq{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders WHERE day >= '2025-02-01' AND $pred};
	$remote = remote_sql(sub { dp_as($node, 'postgres', 'ana', $sql) });
	like($remote, qr/WHERE \(\(day >= '2025-02-01'(::date)?\)\)$/m, "$pred: the comparison with a constant is shipped");
	unlike($remote, $shipped, "$pred: the predicate stays here");
	$remote = remote_sql(sub { $node->safe_psql('postgres', "SELECT count(*) FROM orders WHERE day >= '2025-02-01' AND $pred") });
	like($remote, $shipped, "positive control: a superuser's plain query ships $pred") if $pred =~ /LIKE|\*|~|lower/;
}
$remote = remote_sql(sub { dp_as($node, 'postgres', 'ana',
	q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders WHERE person IN (1, 2, 3) AND amount BETWEEN 5 AND 50}) });
like($remote, qr/person = ANY|amount >= 5/, 'IN lists and ranges of constants are shipped');

# never an aggregate, also partitionwise on a table sharded by its unit
$remote = remote_sql(sub {
	is(dp_as($node, 'postgres', 'ana', q{SET enable_partitionwise_aggregate = on;
		SELECT dp_sum(amount, 0, 10, 'laplace(epsilon=0.1)') IS NOT NULL FROM by_person}), 't',
		'a dp sum over a table sharded by its privacy unit is answered');
});
unlike($remote, qr/count\(|sum\(|GROUP BY/i, '... no aggregate or GROUP BY reaches a shard, with partitionwise aggregation on');
like($remote, qr/SELECT person, amount FROM public\.by_person_remote/, '... the shards send rows');
$remote = remote_sql(sub { $node->safe_psql('postgres', q{SET enable_partitionwise_aggregate = on;
	SELECT person, sum(amount) FROM by_person GROUP BY person}) });
like($remote, qr/GROUP BY/, 'positive control: a superuser\'s GROUP BY of the partition key is pushed to the shards');
is(noiseless(q{SET enable_partitionwise_aggregate = on; SELECT dp_sum(amount, 0, 10, 'laplace(epsilon=1)') FROM by_person}),
	'7000', 'the dp sum over both shards, bounded per person, computed here');

# refused before anything is charged
my $c = charges();
for my $sql ('SELECT count(*) FROM orders_2025', q{SELECT dp_count(1, 'laplace(epsilon=0.1)') FROM orders_2026},
	'SELECT * FROM by_person_0')
{
	($ret, $out, $err) = dp_try($node, 'postgres', 'ana', $sql);
	ok($ret != 0 && $out eq '', "refused: $sql") or diag $out;
}
for my $case ([ q{ALTER SERVER shard1 OPTIONS (ADD use_remote_estimate 'true')}, qr/use_remote_estimate/,
		q{ALTER SERVER shard1 OPTIONS (DROP use_remote_estimate)} ],
	[ q{ALTER FOREIGN TABLE orders_2026 OPTIONS (ADD use_remote_estimate 'true')}, qr/use_remote_estimate/,
		q{ALTER FOREIGN TABLE orders_2026 OPTIONS (DROP use_remote_estimate)} ],
	[ q{ALTER SERVER shard2 OPTIONS (ADD extensions 'dp_pg')}, qr/extensions/, q{ALTER SERVER shard2 OPTIONS (DROP extensions)} ])
{
	my ($set, $why, $reset) = @$case;
	$node->safe_psql('postgres', $set);
	$remote = remote_sql(sub {
		($ret, $out, $err) = dp_try($node, 'postgres', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.1)') FROM orders});
	});
	ok($ret != 0 && $err =~ $why, "refused with $set") or diag $err;
	unlike($remote, qr/EXPLAIN|SELECT/, '... before anything reached a shard');
	$node->safe_psql('postgres', $reset);
}
is(charges(), $c, 'nothing refused was charged');
$node->safe_psql('postgres', q{
	CREATE EXTENSION file_fdw;
	CREATE SERVER files FOREIGN DATA WRAPPER file_fdw;
	CREATE ROLE ana_fdw; GRANT ana_fdw TO ana;
	GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw TO ana;
});
($ret, $out, $err) = $node->psql('postgres', q{CREATE FOREIGN TABLE orders_f PARTITION OF orders
	FOR VALUES FROM ('2027-01-01') TO ('2028-01-01') SERVER files OPTIONS (filename '/dev/null')});
like($err, qr/cannot be part of protected table orders: it is a foreign table of another wrapper than postgres_fdw/,
	'a foreign partition of another wrapper is refused');
dp_as($node, 'postgres', 'ana', q{CREATE SERVER ana_server FOREIGN DATA WRAPPER postgres_fdw OPTIONS (dbname 'postgres')});
($ret, $out, $err) = $node->psql('postgres', q{CREATE FOREIGN TABLE orders_a PARTITION OF orders
	FOR VALUES FROM ('2027-01-01') TO ('2028-01-01') SERVER ana_server OPTIONS (table_name 'orders_remote')});
like($err, qr/cannot be part of protected table orders: .*analyst ana/, 'a foreign partition on an analyst\'s server is refused');

# a shard down: the query fails before its charge; pruned away, it is not needed
$shards[1]->stop;
$c = charges();
($ret, $out, $err) = dp_try($node, 'postgres', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.1)') FROM orders});
isnt($ret, 0, 'a shard down: the query fails');
is(charges(), $c, '... uncharged');
is(dp_as($node, 'postgres', 'ana',
	q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders WHERE day < '2026-01-01'}), 't',
	'a query whose months are elsewhere is answered');
$shards[1]->start;

# a foreign partition detached stays protected
($ret, $out, $err) = $node->psql('postgres', q{ALTER TABLE orders DETACH PARTITION orders_2025});
like($err, qr/orders_2025 stays protected as it leaves public\.orders/, 'a foreign partition detached stays protected');
($ret, $out, $err) = dp_try($node, 'postgres', 'ana', 'SELECT * FROM orders_2025');
isnt($ret, 0, '... no raw row');
is(dp_as($node, 'postgres', 'ana', q{SELECT dp_count(1, 'laplace(epsilon=0.1)') IS NOT NULL FROM orders_2025}), 't',
	'... dp queries of its own');

done_testing();
