#!/usr/bin/perl
# test/fuzz/exprfuzz.pl — the expression fuzzer: random row expressions of
# every kind the guard accepts, run as an analyst on rows made to break them.
#
#   perl test/fuzz/exprfuzz.pl DSN_SUPERUSER DSN_ANALYST [N [SEED]]
#
# (run by test/fuzz/exprfuzz.sh, which starts the cluster).  It creates
# protected tables fz.t<k> whose columns (int2, int4, int8, real, float8,
# numeric, date, timestamp, timestamptz, boolean) have value domains of
# several kinds (wide, narrow and positive, around zero, tiny magnitudes, and
# two drawn at random from the types' edges for each seed)
# declared by CHECK constraints added NOT VALID after the rows, so that the
# rows break them: the types' edges and just inside the domains' edges, +-0,
# subnormals, NaN, +-Infinity, numerics beyond a double (1e400, 1e-400) and
# with long fractions (0.0499999...), infinite and extreme dates, fractional
# seconds.  Each table has an empty twin fz.e<k> with the same columns and
# domains.
#
# Then N random expressions from the guard's grammar — + - * / %, unary
# minus, abs, sign, floor, ceil, round, trunc (and with a scale), casts to
# every number type and to numeric(p, s), CASE WHEN, COALESCE, NULLIF,
# GREATEST, LEAST, date - date, date +- integer, extract / date_part of every
# field of dates and times and of date arithmetic, comparisons, BETWEEN, IN,
# IS NULL, AND / OR / NOT, constants from 1e-330 to 1e300 — nested, each put
# into a query of one of the shapes analysts write (a dp_count WHERE, sum,
# avg, min / max, a percentile, stddev, count(*) FILTER, dp_sum, a GROUP BY
# key of an expression or a condition), are run as the analyst first on the
# empty twin, then on the table.  The oracle: an expression the guard
# accepts (the query succeeds on the empty twin) must succeed on every table
# of rows too — an ERROR there depends on the rows, an exact one-bit oracle —
# and print no notice or warning the twin did not.  A refusal on the twin is
# counted by its reason (it is the same for every table).
#
# Prints the counts and every violation, then "exprfuzz: P passed, F failed"
# (F: the violations, and 1 if too few expressions were accepted to mean
# anything).  With EXPRFUZZ_CONTROL=1 (the positive control) the analyst's
# session sets dp_pg.debug_raw_operators (test builds only), which keeps
# PostgreSQL's operators in the rewritten expressions: the fuzzer must then
# find at least one violation, and passes only if it does.
use strict;
use warnings;
use DBI;

my ($dsn_su, $dsn_an, $N, $SEED) = @ARGV;
die "usage: exprfuzz.pl DSN_SUPERUSER DSN_ANALYST [N [SEED]]\n" unless $dsn_an;
$N //= 1500;
$SEED //= 1;
my $CONTROL = $ENV{EXPRFUZZ_CONTROL} ? 1 : 0;
srand($SEED);

sub connect_as
{
	my ($dsn) = @_;
	my $dbh = DBI->connect($dsn, undef, undef,
		{ AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 1, pg_server_prepare => 0 })
	  or die "exprfuzz: cannot connect ($dsn): $DBI::errstr\n";
	return $dbh;
}

my $su = connect_as($dsn_su);
my $an = connect_as($dsn_an);

# ---------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------

my @COLS = (
	[ i2 => 'int2' ], [ i4 => 'int4' ], [ i8 => 'int8' ], [ f4 => 'real' ], [ f8 => 'float8' ],
	[ n => 'numeric' ], [ d => 'date' ], [ ts => 'timestamp' ], [ tz => 'timestamptz' ], [ b => 'boolean' ],
	[ s => 'text' ],
);

# values that break expressions: each column's list is cycled through the rows
my %ROWS = (
	i2 => [ '-32768', '32767', '0', '-1', '1', '100', '101', '-10', '11', '7', 'NULL' ],
	i4 => [ '-2147483648', '2147483647', '0', '-1', '1', '1000', '1001', '-1000', '46341', '65536', 'NULL' ],
	i8 => [ '-9223372036854775808', '9223372036854775807', '0', '-1', '1', '1000000', '1000001', '3037000500', '4294967296', 'NULL' ],
	f4 => [ "'NaN'", "'Infinity'", "'-Infinity'", '3.4e38', '-3.4e38', '1e-45', "'-0'", '0.5', '0.49999', '1e-38', '1e-30', 'NULL' ],
	f8 => [ "'NaN'", "'Infinity'", "'-Infinity'", '1.7e308', '4.9e-324', "'-0'", '1e-300', '1e-310', '1e300', '0.999', '-1e-320', '1', 'NULL' ],
	n => [ "'NaN'", "'Infinity'", "'-Infinity'", '1e400', '-1e1000', '1e-400', '0.0499999999999999999999', '0.004', '0.01',
		'10000000000000000000.5', '99.99999999999999999999', '1e-30', '1.5e-30', '-0.000', '1e-16000', 'NULL' ],
	d => [ "'infinity'", "'-infinity'", "'4713-01-01 BC'", "'5874897-12-31'", "'2020-01-01'", "'2025-12-31'", "'1999-12-31'", 'NULL' ],
	ts => [ "'infinity'", "'-infinity'", "'4713-01-01 00:00:00 BC'", "'294276-12-31 23:59:59.999999'",
		"'2021-06-01 12:34:56.789012'", "'2020-01-01'", "'2025-12-31 23:59:59.5'", 'NULL' ],
	tz => [ "'infinity'", "'-infinity'", "'4713-01-02 00:00:00+00 BC'", "'294276-12-30 23:59:59.999999+00'",
		"'2021-06-01 12:34:56.789012+02'", "'2020-01-01 00:00:00+00'", 'NULL' ],
	b => [ 'true', 'false', 'NULL' ],
	s => [ "''", "'a'", "'ABC'", "'ß ẞ ǅ'", "'日本語テキスト'", "repeat('x', 3000)", "'%_\\'", "'a\nb'", "' trailing '", 'NULL' ],
);

# value domains: [lower, upper] per column, per kind of table (CHECK ... NOT VALID); two more
# tables get domains drawn at random (below)
my @DOMAINS = (
	{    # wide: the types' ranges
		i2 => [ -32768, 32767 ], i4 => [ -2147483648, 2147483647 ], i8 => [ '-9223372036854775808', '9223372036854775807' ],
		f4 => [ -3e38, 3e38 ], f8 => [ -1e300, 1e300 ], n => [ -1e300, 1e300 ],
		d => [ "'4713-01-01 BC'", "'5874897-12-31'" ], ts => [ "'4713-01-01 BC'", "'294276-12-31'" ],
		tz => [ "'4713-01-02 BC'", "'294276-12-30'" ],
	},
	{    # narrow and positive: a divisor's interval excludes zero
		i2 => [ 1, 100 ], i4 => [ 1, 1000 ], i8 => [ 1, 1000000 ], f4 => [ 0.5, 1000 ], f8 => [ '1e-300', '1e300' ],
		n => [ 0.01, '1e19' ], d => [ "'2020-01-01'", "'2025-12-31'" ], ts => [ "'2020-01-01'", "'2025-12-31'" ],
		tz => [ "'2020-01-01'", "'2025-12-31'" ],
	},
	{    # around zero
		i2 => [ -10, 10 ], i4 => [ -1000, 1000 ], i8 => [ -1000000, 1000000 ], f4 => [ -1, 1 ], f8 => [ -1, 1 ],
		n => [ '-1e-20', '1e-20' ], d => [ "'1999-12-31'", "'2000-01-02'" ], ts => [ "'1999-12-31'", "'2000-01-02'" ],
		tz => [ "'1999-12-31'", "'2000-01-02'" ],
	},
	{    # tiny magnitudes, far dates
		i2 => [ 0, 1 ], i4 => [ 46340, 46341 ], i8 => [ 3037000499, 3037000500 ], f4 => [ '1e-38', '1e-30' ],
		f8 => [ '1e-300', '1e-290' ], n => [ '1e-30', '2e-30' ], d => [ "'0500-01-01 BC'", "'0400-01-01 BC'" ],
		ts => [ "'199999-01-01'", "'200000-01-01'" ], tz => [ "'199999-01-01'", "'200000-01-01'" ],
	},
);

# and two of random domains (the seed's): each end drawn from the edges of its type
my %EDGES = (
	i2 => [ -32768, -1000, -1, 0, 1, 7, 100, 32767 ],
	i4 => [ -2147483648, -46341, -1, 0, 1, 46341, 65536, 2147483647 ],
	i8 => [ '-9223372036854775808', -4294967296, -1, 0, 1, 3037000500, '9223372036854775807' ],
	f4 => [ '-3e38', -1, '-1e-38', 0, '1e-38', '1e-30', 0.5, 1, '3e38' ],
	f8 => [ '-1e300', -1, '-1e-300', 0, '1e-300', '1e-200', 1, '1e200', '1e300' ],
	n => [ '-1e300', '-1e-20', 0, '1e-30', '1e-20', 0.01, 1, '1e19', '1e300' ],
	d => [ "'4713-01-01 BC'", "'0500-01-01 BC'", "'1999-12-31'", "'2000-01-01'", "'2025-12-31'", "'200000-01-01'", "'5874897-12-31'" ],
	ts => [ "'4713-01-01 BC'", "'0500-01-01 BC'", "'1999-12-31'", "'2025-12-31 23:59:59.5'", "'200000-01-01'", "'294276-12-31'" ],
	tz => [ "'4713-01-02 BC'", "'0500-01-01 BC'", "'1999-12-31'", "'2025-12-31'", "'200000-01-01'", "'294276-12-30'" ],
);
for my $extra (1 .. 2)
{
	my %dom;
	for my $c (keys %EDGES)
	{
		my $l = $EDGES{$c};
		my ($a, $b) = (int(rand(@$l)), int(rand(@$l)));
		($a, $b) = ($b, $a) if $b < $a;
		$dom{$c} = [ $l->[$a], $l->[$b] ];
	}
	push @DOMAINS, \%dom;
}

sub su_do
{
	my ($sql) = @_;
	$su->do($sql) or die "exprfuzz: setup failed: $sql\n" . $su->errstr . "\n";
}

sub setup
{
	su_do('DROP SCHEMA IF EXISTS fz CASCADE');
	su_do('CREATE SCHEMA fz');
	su_do('GRANT USAGE ON SCHEMA fz TO fz_analyst');
	my $nrows = 0;
	for my $c (keys %ROWS) { $nrows = @{ $ROWS{$c} } if @{ $ROWS{$c} } > $nrows }
	$nrows += 6;
	for my $k (0 .. $#DOMAINS)
	{
		for my $t ("t$k", "e$k")
		{
			su_do("CREATE TABLE fz.$t (id int PRIMARY KEY, "
				  . join(', ', map { "$_->[0] $_->[1]" } @COLS) . ')');
			if ($t =~ /^t/)
			{
				for my $r (0 .. $nrows - 1)
				{
					# the lists cycled, shifted per column, so that edges meet each other
					my $j = 0;
					my @v = map {
						my $l = $ROWS{ $_->[0] };
						$j++;
						$l->[ ($r + $j * ($r >= @$l ? 3 : 0)) % @$l ]
					} @COLS;
					su_do("INSERT INTO fz.$t VALUES ($r, " . join(', ', @v) . ')');
				}
			}
			for my $c (@COLS)
			{
				my $dom = $DOMAINS[$k]{ $c->[0] } or next;
				su_do("ALTER TABLE fz.$t ADD CONSTRAINT ${t}_$c->[0] CHECK ($c->[0] BETWEEN "
					  . "$dom->[0]::$c->[1] AND $dom->[1]::$c->[1]) NOT VALID");
			}
			su_do("SELECT dp_pg.protect('fz.$t')");
		}
	}
	su_do('ANALYZE');
}

# ---------------------------------------------------------------------------
# The grammar
# ---------------------------------------------------------------------------

sub pick { return $_[ int(rand(@_)) ] }

my @NUMCOLS = qw(i2 i4 i8 f4 f8 n);
my @CONSTS = ('0', '1', '-1', '2', '7', '0.5', '1.5', '100', '1000', '1e-300', '1e300', '1e-330', '1e-10', '2147483647',
	'-32768', '0.0001', "'1e-310'::float8", "'3e38'::real", '1e18', '9.5', '0.05', '3', '-2', "'1e-40'::real",
	'65536', '1e289', '1e-200', '46341');
my @FIELDS = qw(year month day hour minute second milliseconds microseconds dow isodow doy week quarter epoch
  isoyear decade century millennium julian timezone timezone_hour);
my @CASTS = ('smallint', 'int', 'bigint', 'real', 'double precision', 'numeric', 'numeric(6, 2)', 'numeric(3, -1)',
	'numeric(20, 10)');
my @CMP = ('<', '<=', '=', '<>', '>', '>=');

sub num
{
	my ($depth) = @_;
	if ($depth <= 0 || rand() < 0.25)
	{
		return rand() < 0.7 ? pick(@NUMCOLS) : pick(@CONSTS);
	}
	my $d = $depth - 1;
	my $r = rand();
	return '(' . num($d) . ' ' . pick('+', '-', '*', '/', '*', '%') . ' ' . num($d) . ')' if $r < 0.35;
	return pick('-', 'abs', 'sign', 'floor', 'ceil', 'round', 'trunc') . '(' . num($d) . ')' if $r < 0.45;
	return pick('round', 'trunc') . '((' . num($d) . ')::numeric, ' . pick(-3, 0, 2, 10) . ')' if $r < 0.5;
	return 'CAST(' . num($d) . ' AS ' . pick(@CASTS) . ')' if $r < 0.62;
	return 'CASE WHEN ' . pred($d) . ' THEN ' . num($d) . ' ELSE ' . num($d) . ' END' if $r < 0.68;
	return pick('COALESCE', 'GREATEST', 'LEAST') . '(' . num($d) . ', ' . num($d) . ')' if $r < 0.74;
	return 'NULLIF(' . num($d) . ', ' . pick(@CONSTS) . ')' if $r < 0.77;
	return '(' . datex($d) . ' - ' . datex($d) . ')' if $r < 0.82;
	return 'extract(' . pick(@FIELDS) . ' FROM ' . timex($d) . ')' if $r < 0.9;
	return "date_part('" . pick(@FIELDS) . "', " . timex($d) . ')' if $r < 0.95;
	return '(' . pred($d) . ')::int';
}

sub datex
{
	my ($depth) = @_;
	return 'd' if $depth <= 0 || rand() < 0.4;
	my $d = $depth - 1;
	return pick('(' . datex($d) . ' + ' . intx($d) . ')', '(' . datex($d) . ' - ' . intx($d) . ')',
		'(' . intx($d) . ' + ' . datex($d) . ')', "date '2021-03-04'");
}

sub intx
{
	my ($depth) = @_;
	return pick('i2', 'i4', '1', '-1', '365', '2147483647', '(i4 % 7)', 'CAST(' . num($depth - 1) . ' AS int)');
}

sub timex
{
	my ($depth) = @_;
	return pick('d', 'ts', 'tz', datex($depth));
}

# generalising expressions of one column (keys.c): read through the key window
sub gen
{
	return pick(
		"date_trunc('" . pick('year', 'month', 'week', 'day', 'hour', 'quarter', 'decade', 'millennium') . "', " . pick('ts', 'tz', 'd::timestamp') . ')',
		"date_trunc('day', tz, '" . pick('UTC', 'Europe/Paris', 'Pacific/Kiritimati', 'America/Adak') . "')",
		'width_bucket(' . pick('f8', 'n', 'f4') . ', ' . pick('0, 100', '-1e300, 1e300', '1e-300, 2e-300') . ', ' . pick(1, 10, 1000) . ')',
		pick('floor', 'ceil', 'round', 'trunc') . '(' . pick('f8', 'n') . ')',
		'round(n, ' . pick(-5, 0, 2, 30) . ')', 'trunc(n, ' . pick(-5, 2) . ')',
		'CAST(' . pick('ts', 'tz') . ' AS date)', 'CAST(d AS ' . pick('timestamp', 'timestamptz') . ')',
		pick('ts', 'tz', 'd') . ' + interval \'' . pick('1 day', '-7 days', '1 month', '99 years', '12 hours') . "'",
		'(d + ' . pick(7, -36000, 36000) . ')',
		'extract(' . pick(@FIELDS) . ' FROM ' . pick('ts', 'tz', 'd') . ')',
		'CAST(extract(' . pick('month', 'dow', 'hour', 'doy', 'year', 'epoch') . ' FROM ' . pick('ts', 'tz', 'd') . ') AS ' . pick('int', 'bigint') . ')',
		"date_part('" . pick(@FIELDS) . "', " . pick('ts', 'tz', 'd') . ')',
		pick('lower', 'upper', 'length', 'char_length', 'octet_length') . '(s)',
		'substr(s, ' . pick(0, 1, 2, 1000) . ', ' . pick(1, 3, 100) . ')', pick('left', 'right') . '(s, ' . pick(1, 2, 5) . ')',
		"strpos(s, '" . pick('a', 'ß', '') . "')", "starts_with(s, 'a')", "(tz AT TIME ZONE 'UTC')", 's COLLATE "C"',
	);
}

sub pred
{
	my ($depth) = @_;
	my $d = $depth - 1;
	my $r = rand();
	return num($d) . ' ' . pick(@CMP) . ' ' . ($r < 0.1 ? num($d) : pick(@CONSTS)) if $depth <= 0 || $r < 0.45;
	return num($d) . ' BETWEEN ' . pick(@CONSTS) . ' AND ' . pick(@CONSTS) if $r < 0.52;
	return num($d) . ' IN (1, 2, 3)' if $r < 0.56;
	return pick(@NUMCOLS, 'd', 'b') . ' IS ' . pick('', 'NOT ') . 'NULL' if $r < 0.6;
	return 'NOT (' . pred($d) . ')' if $r < 0.65;
	return '(' . pred($d) . ' ' . pick('AND', 'OR') . ' ' . pred($d) . ')' if $r < 0.85;
	return datex($d) . ' ' . pick(@CMP) . " date '2021-01-01'" if $r < 0.9;
	return pick("s LIKE 'a%'", "s ILIKE '%B_'", "s NOT LIKE '%\\\\%'", "s ~ '^[a-z]+\$'", "s ~* 'ß'", "s SIMILAR TO '(a|b)%'",
		"s = 'ABC'", "s IN ('a', 'ABC')", "s > 'b'", "lower(s) = 'abc'", "length(s) > 3") if $r < 0.96;
	return gen() . ' IS NOT NULL';
}

# the shapes of queries analysts write around an expression
my @SHAPES = (
	sub { "SELECT dp_count(1, 'laplace(epsilon=1)') FROM %T WHERE " . pred(3) },
	sub { 'SELECT sum(' . num(3) . ') FROM %T' },
	sub { 'SELECT avg(' . num(3) . ') FROM %T WHERE ' . pred(1) },
	sub { 'SELECT min(' . num(2) . '), max(' . num(2) . ') FROM %T' },
	sub { 'SELECT count(*) FILTER (WHERE ' . pred(3) . ') FROM %T' },
	sub { 'SELECT ' . num(2) . ' AS k, count(*) FROM %T GROUP BY 1' },
	sub { 'SELECT (' . pred(2) . ') AS k, count(*) FROM %T GROUP BY 1' },
	sub { 'SELECT dp_sum(CAST(' . num(3) . " AS float8), -100, 100, 'laplace(epsilon=1)') FROM %T" },
	sub { 'SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ' . num(2) . ') FROM %T' },
	sub { 'SELECT stddev(' . num(2) . ') FROM %T' },
	sub { 'SELECT ' . gen() . ' AS k, count(*) FROM %T GROUP BY 1' },
	sub { 'SELECT ' . gen() . ' AS k, ' . gen() . ' AS l, count(*) FROM %T GROUP BY 1, 2' },
	sub { 'SELECT count(*) FROM %T WHERE ' . gen() . ' ' . pick(@CMP) . ' ' . pick(@CONSTS, "'2021-01-01'", "'a'") },
);

# ---------------------------------------------------------------------------
# The runs
# ---------------------------------------------------------------------------

# run sql as the analyst: (ok, sqlstate, message, notices)
my @notices;
$an->{HandleSetErr} = undef;
sub run
{
	my ($sql) = @_;
	@notices = ();
	local $SIG{__WARN__} = sub { push @notices, $_[0] };
	my $sth = $an->prepare($sql);
	my $ok = $sth && $sth->execute;
	$sth->fetchall_arrayref if $ok && $sth->{NUM_OF_FIELDS};
	my $state = $ok ? '' : ($an->state // '');
	my $msg = $ok ? '' : ($an->errstr // 'unknown error');
	$msg =~ s/\n.*//s;
	return ($ok ? 1 : 0, $state, $msg, join('', @notices));
}

setup();
$an->do('SET client_min_messages = notice');
$an->{pg_server_prepare} = 0;
if ($CONTROL)
{
	# the analyst may not set it; the superuser sets it for the analyst's role
	su_do('ALTER ROLE fz_analyst SET dp_pg.debug_raw_operators = on');
	$an->disconnect;
	$an = connect_as($dsn_an);
}

my ($accepted, $refused, $violations) = (0, 0, 0);
my %reasons;
my @report;
for my $i (1 .. $N)
{
	my $k = int(rand(@DOMAINS));
	my $q = pick(@SHAPES)->();
	(my $twin = $q) =~ s/%T/fz.e$k/g;
	(my $real = $q) =~ s/%T/fz.t$k/g;
	my ($ok0, $st0, $msg0, $n0) = run($twin);
	if (!$ok0)
	{
		$refused++;
		(my $reason = "$st0: $msg0") =~ s/"[^"]*"/"…"/g;
		$reason =~ s/-?\d[\d.e+-]*/N/g;
		$reasons{$reason}++;
		next;
	}
	$accepted++;
	my ($ok1, $st1, $msg1, $n1) = run($real);
	(my $n0c = $n0) =~ s/fz\.e\d/T/g;
	(my $n1c = $n1) =~ s/fz\.t\d/T/g;
	if (!$ok1 || $n0c ne $n1c)
	{
		$violations++;
		push @report, "VIOLATION (table fz.t$k): $real\n    "
		  . (!$ok1 ? "fails on the rows only: $st1: $msg1" : "a notice on the rows only: $n1");
	}
	last if $CONTROL && $violations >= 3;
}

print "exprfuzz: $N expressions (seed $SEED): $accepted accepted and run on the rows, $refused refused while planning\n";
print "exprfuzz: refusals by reason (the most frequent):\n";
for my $r ((sort { $reasons{$b} <=> $reasons{$a} } keys %reasons)[0 .. 11])
{
	next unless defined $r;
	printf "  %5d  %s\n", $reasons{$r}, substr($r, 0, 150);
}
print "$_\n" for @report[0 .. ($#report < 19 ? $#report : 19)];
print "exprfuzz: ... and " . (@report - 20) . " more violations\n" if @report > 20;

if ($CONTROL)
{
	su_do('ALTER ROLE fz_analyst RESET dp_pg.debug_raw_operators');
	if ($violations > 0)
	{
		print "exprfuzz control: the raw operators were caught ($violations violations)\n";
		print "exprfuzz control: 1 passed, 0 failed\n";
		exit 0;
	}
	print "exprfuzz control: FAILED, PostgreSQL's own operators let through and no violation found\n";
	print "exprfuzz control: 0 passed, 1 failed\n";
	exit 1;
}
my $too_few = $accepted < $N / 4 ? 1 : 0;
print "exprfuzz: FAILED, only $accepted of $N expressions accepted: too few to mean anything\n" if $too_few;
print "exprfuzz: " . ($accepted - $violations) . " passed, " . ($violations + $too_few) . " failed\n";
exit(($violations + $too_few) ? 1 : 0);
