# Locally private columns (dp_pg.randomize, src/common/randomized.c): the
# true value of a write is nowhere — not in the table's files, not in the
# WAL, not in a dump — and the declarations survive a dump and restore by
# name.
#
# A. Absent.  Each path a value reaches a table by (INSERT, UPDATE, COPY, and
#    a row stored before the declaration, randomized, rewritten by VACUUM
#    FULL and checkpointed as the notice says, then updated) writes one row
#    into a table of its own whose column is
#    randomized over 1,000 keys at epsilon 1: a marker (a random string
#    unique to this run, the row's true value) and 999 others.  The report
#    keeps the truth with probability e/(e + 999) = 0.0027; when it did not,
#    the marker must appear nowhere but in the declaration of the keys: not
#    in the table's files after a checkpoint, not in the WAL written since
#    the declarations (read from pg_wal without its page headers, over the
#    range where pg_waldump shows the table's records), and once in a
#    pg_dump (the keys of dp_pg.randomized_columns).  A path whose report
#    kept the truth (probability 0.0027 each) proves nothing and is counted;
#    all four doing so has probability 5e-11.  Positive control: the same
#    row in a column that is not randomized is found in all three places.
# B. Restored by name.  pg_dump -Fc and pg_restore into another database:
#    the declarations land on the tables of the same names (other OIDs), the
#    trigger is back (ALWAYS), the stored reports are restored as they were
#    (not randomized a second time), the event trigger let the restore
#    through, and new writes are randomized.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't';
use DpLifecycle;

my $node = dp_node('randomized');
$node->append_conf('postgresql.conf', "wal_level = replica\nfull_page_writes = on\nwal_compression = off\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION dp_pg');
dp_ready($node);

my $tag = sprintf('%08x%08x', int(rand(2**32)), int(rand(2**32)));
my %marker = map { $_ => "TRUTH${_}x$tag" } qw(insert update copy existing plain);
my $dummies = join(', ', map { sprintf("'d%03d'", $_) } 1 .. 999);

# one table per path; each column's keys: its marker and 999 others
for my $path (qw(insert update copy existing plain))
{
	$node->safe_psql('postgres', "CREATE TABLE t_$path (id int, secret text, other text)");
}
$node->safe_psql('postgres', qq{INSERT INTO t_existing VALUES (1, '$marker{existing}', 'x')});
for my $path (qw(insert update copy existing))
{
	$node->safe_psql('postgres',
		qq{SELECT dp_pg.randomize('t_$path', 'secret', 'rr(epsilon=1)', ARRAY['$marker{$path}', $dummies])});
}
# the control's column keeps its marker as written; its "keys" in a table of their own, like a declaration's
$node->safe_psql('postgres', qq{CREATE TABLE plain_keys AS SELECT ARRAY['$marker{plain}', $dummies] AS keys});
# the existing value, as the notice of randomize() says: the table rewritten, then a checkpoint
# (the dead row's page, read after a checkpoint, may be written whole to the WAL again: with
# data checksums a hint bit set is enough)
$node->safe_psql('postgres', 'VACUUM FULL t_existing');
$node->safe_psql('postgres', 'CHECKPOINT');
my $lsn0 = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');

# the writes
$node->safe_psql('postgres', qq{INSERT INTO t_insert VALUES (1, '$marker{insert}', 'x')});
$node->safe_psql('postgres', q{INSERT INTO t_update VALUES (1, 'd001', 'x')});
$node->safe_psql('postgres', qq{UPDATE t_update SET secret = '$marker{update}'});
$node->safe_psql('postgres', qq{COPY t_copy FROM STDIN;\n1\t$marker{copy}\tx\n\\.\n});
$node->safe_psql('postgres', q{UPDATE t_existing SET other = 'y'});
$node->safe_psql('postgres', qq{INSERT INTO t_plain VALUES (1, '$marker{plain}', 'x')});
$node->safe_psql('postgres', 'CHECKPOINT');
my $lsn1 = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');

# The WAL between two LSNs, without the page headers that may split a record (24 bytes per
# 8 KiB page, 40 on a segment's first page).
sub wal_bytes
{
	my ($from, $to) = @_;
	my $datadir = $node->data_dir;
	my ($f0, $o0) = split /\|/, $node->safe_psql('postgres', "SELECT file_name || '|' || file_offset FROM pg_walfile_name_offset('$from')");
	my ($f1, $o1) = split /\|/, $node->safe_psql('postgres', "SELECT file_name || '|' || file_offset FROM pg_walfile_name_offset('$to')");
	my @files = sort grep { /^[0-9A-F]{24}$/ && $_ ge $f0 && $_ le $f1 } map { s{.*/}{}r } glob("$datadir/pg_wal/*");
	my $out = '';
	for my $f (@files)
	{
		open(my $fh, '<:raw', "$datadir/pg_wal/$f") or die "$f: $!";
		local $/;
		my $seg = <$fh>;
		close $fh;
		# from lsn0 itself: the bytes before it on its page are older records (the rows written
		# before a declaration, which the documentation says stay in the WAL written then)
		my $start = $f eq $f0 ? $o0 : 0;
		my $end = $f eq $f1 ? $o1 : length($seg);
		for (my $p = int($start / 8192) * 8192; $p < $end; $p += 8192)
		{
			my $hdr = $p == 0 ? 40 : 24;
			my $from = $p + $hdr > $start ? $p + $hdr : $start;
			my $to = $p + 8192 < $end ? $p + 8192 : $end;
			$out .= substr($seg, $from, $to - $from) if $to > $from;
		}
	}
	return $out;
}
my $wal = wal_bytes($lsn0, $lsn1);
ok(length($wal) > 0, 'the WAL written since the declarations is read (' . length($wal) . ' bytes)');

my $dumpfile = PostgreSQL::Test::Utils::tempdir() . '/db.sql';
command_ok([ 'pg_dump', '-h', $node->host, '-p', $node->port, '-f', $dumpfile, 'postgres' ], 'pg_dump');
my $dump = slurp_file($dumpfile);

# the bytes of a table's files
sub table_bytes
{
	my ($table) = @_;
	my $path = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$table')");
	my $out = '';
	for my $f (glob("$path $path.*"))
	{
		$out .= slurp_file($f);
	}
	return $out;
}

sub count_of
{
	my ($hay, $needle) = @_;
	my $n = () = $hay =~ /\Q$needle\E/g;
	return $n;
}

my $checked = 0;
for my $path (qw(insert update copy existing))
{
	my $stored = $node->safe_psql('postgres', "SELECT secret FROM t_$path");
	my $relfile = $node->safe_psql('postgres', "SELECT relfilenode FROM pg_class WHERE oid = 't_$path'::regclass");
	ok($stored eq $marker{$path} || $stored =~ /^d\d{3}$/, "$path: the stored value is a key");
	my $records = `pg_waldump -s $lsn0 -e $lsn1 -p @{[ $node->data_dir ]}/pg_wal 2>/dev/null`;
	ok($records =~ m{rel \d+/\d+/$relfile\b}, "$path: pg_waldump shows the table's records in the range read");
	if ($stored eq $marker{$path})
	{
		diag("$path: the report kept the truth (probability 0.0027): nothing to check");
		next;
	}
	$checked++;
	is(count_of(table_bytes("t_$path"), $marker{$path}), 0, "$path: the true value is not in the table's files");
	is(count_of($wal, $marker{$path}), 0, "$path: nor in the WAL");
	is(count_of($dump, $marker{$path}), 1, "$path: the dump holds it once, among the declared keys");
}
ok($checked >= 1, "$checked of 4 paths checked (all four kept the truth with probability 5e-11)");

# positive control: the same greps find a value that is not randomized
is(count_of(table_bytes('t_plain'), $marker{plain}), 1, 'control: a column not randomized holds the value in its file');
ok(count_of($wal, $marker{plain}) >= 1, 'control: ... and in the WAL');
is(count_of($dump, $marker{plain}), 2, 'control: ... and in the dump (its table and the keys\' copy)');

#
# B. Restored by name
#
$node->safe_psql('postgres', q{
	CREATE TABLE flags (id int PRIMARY KEY, b boolean);
	INSERT INTO flags SELECT g, true FROM generate_series(1, 2000) g;
	SELECT dp_pg.randomize('flags', 'b', 'rr(epsilon=1)');
	CREATE DATABASE restored;
});
my $dir = PostgreSQL::Test::Utils::tempdir();
command_ok([ 'pg_dump', '-h', $node->host, '-p', $node->port, '-Fc', '-f', "$dir/db.dump", 'postgres' ], 'pg_dump -Fc');
my ($out, $err) = run_command([ 'pg_restore', '-h', $node->host, '-p', $node->port, '-d', 'restored', "$dir/db.dump" ]);
is(join("\n", grep { /ERROR/ && !/already exists/ } split /\n/, $err), '', 'pg_restore: no error (the event trigger lets it through)');
is($node->safe_psql('restored', q{SELECT string_agg(relid::text || '.' || attname || ' ' || epsilon || ' ' || cardinality(keys), ', '
	ORDER BY relid::text) FROM dp_pg.randomized_columns}),
	'flags.b 1 2, t_copy.secret 1 1000, t_existing.secret 1 1000, t_insert.secret 1 1000, t_update.secret 1 1000',
	'the declarations land on the tables of the same names');
isnt($node->safe_psql('restored', q{SELECT 'flags'::regclass::oid}), $node->safe_psql('postgres', q{SELECT 'flags'::regclass::oid}),
	'(whose OIDs differ)');
is($node->safe_psql('restored', q{SELECT string_agg(tgrelid::regclass::text || ' ' || tgenabled::text, ', ' ORDER BY tgrelid::regclass::text)
	FROM pg_trigger WHERE tgname = '!dp_pg_randomize'}),
	'flags A, t_copy A, t_existing A, t_insert A, t_update A', 'every trigger is back, ALWAYS');
is($node->safe_psql('restored', q{SELECT md5(string_agg(id || ':' || b, ',' ORDER BY id)) FROM flags}),
	$node->safe_psql('postgres', q{SELECT md5(string_agg(id || ':' || b, ',' ORDER BY id)) FROM flags}),
	'the stored reports are restored as they were, not randomized again');
# 1,000 writes of true: some reports say false (all true has probability 0.73^1000 < 1e-136)
$node->safe_psql('restored', q{INSERT INTO flags SELECT g, true FROM generate_series(3001, 4000) g});
is($node->safe_psql('restored', q{SELECT count(*) FILTER (WHERE NOT b) > 0 FROM flags WHERE id > 3000}), 't',
	'writes after the restore are randomized');
my ($ret) = $node->psql('restored', q{DROP TRIGGER "!dp_pg_randomize" ON flags});
isnt($ret, 0, 'and the restored trigger cannot be dropped while the column is declared');

done_testing();
