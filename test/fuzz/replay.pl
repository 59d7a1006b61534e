#!/usr/bin/perl
# test/fuzz/replay.pl — replay sqlsmith's queries as the analyst, one statement
# at a time, and check two oracles on every statement (test/fuzz/sqlsmith.sh):
#
#   leak:   no canary secret appears in any result row, error message (with
#           its DETAIL / HINT) or notice;
#   charge: a statement that names a protected table or a view over one
#           (--touch), or calls a function over one (--functions: named and
#           called, as pg_stat_get_xact_function_calls counts them; needs
#           track_functions = all), and succeeds has made the analyst's ledger
#           charges grow, unless it read nothing protected (a column probe:
#           EXPLAIN of it succeeds as the analyst, which the guard refuses for
#           any plan that reads a protected table).
#
#   perl replay.pl --host DIR --port N --db DB --analyst ROLE --superuser ROLE
#                  --secrets FILE --touch REGEX --functions NAME,... --out DIR
#                  QUERYFILE...
#
# QUERYFILE: sqlsmith --dump-all-queries output (each statement ends with ";"
# at the end of a line).  The secrets file has one secret a line: "P text"
# (case-insensitive substring: the canary prefix and its encodings), "S text"
# (exact substring) or "N number" (a number token of the output).
#
# Each statement runs in its own transaction, rolled back afterwards (the
# ledger's charges are outside it), so set_config() and friends do not leak
# into the next statement.  SELECT / VALUES / WITH statements are read through
# a cursor, 1000 rows a fetch, at most --max-rows rows or --max-seconds
# seconds: memory stays bounded and every row read is checked.  If the
# connection is lost (a crash, pg_terminate_backend) it reconnects.
#
# Writes OUT/statements.tsv (one line per statement), OUT/violations.txt (each
# violation with its statement) and OUT/summary.txt (key=value counts), and
# prints a human summary.
use strict;
use warnings;
use DBI;
use Getopt::Long;
use Time::HiRes qw(time sleep);

my %o = (host => undef, port => undef, db => undef, analyst => undef, superuser => 'postgres',
	secrets => undef, touch => undef, functions => '', out => '.', 'max-rows' => 200000, 'max-seconds' => 5,
	'client-min-messages' => 'debug1');
GetOptions(\%o, 'host=s', 'port=i', 'db=s', 'analyst=s', 'superuser=s', 'secrets=s', 'touch=s', 'functions=s',
	'out=s', 'max-rows=i', 'max-seconds=f', 'client-min-messages=s') or die "bad options\n";
for (qw(host port db analyst secrets touch)) { die "--$_ is required\n" unless defined $o{$_} }
my @files = @ARGV or die "no query files\n";

# ---- secrets
my (@prefix, @exact, %number);
open my $sf, '<', $o{secrets} or die "$o{secrets}: $!\n";
while (<$sf>) {
	chomp;
	next if /^\s*(#|$)/;
	my ($kind, $val) = /^(\S)\s(.+)$/ or die "bad secret line: $_\n";
	if ($kind eq 'P') { push @prefix, $val }
	elsif ($kind eq 'S') { push @exact, $val }
	elsif ($kind eq 'N') { $number{$val} = 1 }
	else { die "bad secret kind: $_\n" }
}
close $sf;
die "no secrets\n" unless @prefix || @exact || %number;
my $touch_re = qr/$o{touch}/i;
my @functions = grep { length } split /,/, $o{functions};
my $func_re = @functions ? qr/\b(?:@{[join '|', map { quotemeta } @functions]})\s*\(/i : undef;

my $prefix_re = @prefix ? qr/(@{[join '|', map { quotemeta } @prefix]})/i : undef;
my $exact_re = @exact ? qr/(?<![\d.])(@{[join '|', map { quotemeta } @exact]})/ : undef;

# the secret a text reveals, or undef
sub find_secret {
	my ($text) = @_;
	return undef unless defined $text && length $text;
	return "canary text '$1'" if defined $prefix_re && $text =~ $prefix_re;
	return "secret '$1'" if defined $exact_re && $text =~ $exact_re;
	while ($text =~ /(?<![\d.])(\d+(?:\.\d+)?)/g) {
		return "secret number $1" if $number{$1};
	}
	return undef;
}

# ---- statements: sqlsmith ends each with ";" at the end of a line, and the
# next one starts with a keyword at the start of a line
my @stmts;
for my $f (@files) {
	open my $qf, '<', $f or die "$f: $!\n";
	local $/;
	my $all = <$qf> // '';
	close $qf;
	for my $s (split /;[ \t]*\n(?=\s*(?:select|insert|update|delete|merge|with|values|\(|\z))/i, $all) {
		$s =~ s/^\s+//;
		$s =~ s/;?\s*\z//;
		push @stmts, [$f, $s] if length $s;
	}
}

# ---- connections
my @notices;
$SIG{__WARN__} = sub { push @notices, join('', @_) };

sub dbconnect {
	my ($user) = @_;
	my $dsn = "dbi:Pg:host=$o{host};port=$o{port};dbname=$o{db}";
	for my $try (1 .. 60) {
		my $dbh = DBI->connect($dsn, $user, '', {AutoCommit => 1, RaiseError => 0, PrintError => 0,
			PrintWarn => 1, pg_server_prepare => 0, pg_placeholder_dollaronly => 1,
			pg_placeholder_nocolons => 1});
		return $dbh if $dbh;
		sleep 0.5;
	}
	die "cannot connect as $user: $DBI::errstr\n";
}

my $su = dbconnect($o{superuser});
my ($analyst_oid) = $su->selectrow_array('SELECT oid FROM pg_roles WHERE rolname = $1', undef, $o{analyst})
	or die "no role $o{analyst}\n";
my $charges_sql = "SELECT count(*) FROM dp_pg.ledger_entries WHERE role = $analyst_oid AND kind = 'charge'";
my $calls_sql;
if (@functions) {
	my $oids = $su->selectcol_arrayref('SELECT oid FROM pg_proc WHERE proname = ANY ($1)', undef, \@functions);
	die "functions not found: @functions\n" unless $oids && @$oids;
	my ($track) = $su->selectrow_array('SHOW track_functions');
	die "track_functions must be all (it is $track)\n" unless $track eq 'all';
	$calls_sql = 'SELECT coalesce(sum(pg_stat_get_xact_function_calls(f)), 0) FROM unnest(ARRAY[' .
		join(',', @$oids) . ']::oid[]) f';
}

sub su_charges {
	for my $try (1 .. 3) {
		my ($n) = $su->selectrow_array($charges_sql);
		return $n if defined $n;
		$su = dbconnect($o{superuser});    # the server restarted (a crash)
		wait_ledger();
	}
	die "cannot read the ledger: " . ($su->errstr // '') . "\n";
}

sub wait_ledger {
	for (1 .. 100) {
		my ($s) = $su->selectrow_array('SELECT dp_pg.ledger_status()');
		return if defined $s && $s eq 'ready';
		sleep 0.2;
	}
}

my $an;
sub analyst_connect {
	$an = dbconnect($o{analyst});
	$an->do("SET client_min_messages = $o{'client-min-messages'}");
	@notices = ();
}
analyst_connect();

# ---- replay
mkdir $o{out} unless -d $o{out};
open my $log, '>', "$o{out}/statements.tsv" or die $!;
print $log join("\t", qw(n file ms status sqlstate touched charged rows message)), "\n";
open my $viol, '>', "$o{out}/violations.txt" or die $!;

my %c = (executed => 0, ok => 0, error => 0, truncated => 0, touched => 0, touched_ok => 0, function_not_called => 0,
	touched_refused => 0, charged => 0, charged_ok => 0, leak => 0, charge => 0, reconnects => 0);
my (%by_state, %touched_by_state, %per_file);
my $t_start = time;

sub oneline { my $s = shift // ''; $s =~ s/\s+/ /g; substr($s, 0, 160) }

my $n = 0;
for my $st (@stmts) {
	my ($file, $sql) = @$st;
	$n++;
	my $touched = $sql =~ $touch_re ? 1 : 0;
	my $names_function = defined $func_re && $sql =~ $func_re;
	my $before = su_charges();
	@notices = ();
	my ($status, $state, $msg, $rows, @leaks) = ('ok', '', '', 0);
	my $t0 = time;
	my $fail = sub {
		my ($h) = @_;
		$status = 'error';
		$state = $h->state // '';
		$state = '' if $state eq 'S8006' || $state eq 'S1000';
		$msg = $h->errstr // $DBI::errstr // 'unknown error';
	};
	my $scan = sub {
		my ($where, $text) = @_;
		my $s = find_secret($text);
		push @leaks, "$s in $where" if defined $s;
	};
	$an->begin_work;
	my $plain = $sql !~ /^\s*\(*\s*(?:select|values|with)\b/i;
	if (!$plain) {
		my $ok = $an->do("DECLARE dp_fuzz_cursor NO SCROLL CURSOR FOR $sql");
		if (!$ok && ($an->state // '') eq '0A000' && ($an->errstr // '') =~ /DECLARE CURSOR/) {
			# data-modifying WITH: cannot be a cursor, run it plainly
			$an->rollback;
			$an->begin_work;
			$plain = 1;
		} elsif (!$ok) {
			$fail->($an);
		} else {
			my $fetch = $an->prepare('FETCH FORWARD 1000 FROM dp_fuzz_cursor');
			while (1) {
				if (!$fetch->execute) { $fail->($an); last }
				my $batch = $fetch->fetchall_arrayref;
				last unless $batch && @$batch;
				for my $r (@$batch) {
					$scan->('result', join(' | ', map { defined $_ ? $_ : '' } @$r));
				}
				$rows += @$batch;
				if ($rows >= $o{'max-rows'} || time - $t0 >= $o{'max-seconds'}) {
					$status = 'truncated';
					last;
				}
			}
		}
	}
	if ($plain) {
		my $sth = $an->prepare($sql);
		if (!$sth || !$sth->execute) { $fail->($sth // $an) }
		elsif ($sth->{NUM_OF_FIELDS}) {
			while (my $r = $sth->fetchrow_arrayref) {
				$scan->('result', join(' | ', map { defined $_ ? $_ : '' } @$r));
				$rows++;
			}
			$fail->($sth) if $sth->err;
		}
	}
	my $ms = int((time - $t0) * 1000);
	# a function over protected data touches it only if it was called
	my $called = 0;
	if ($names_function && $status ne 'error') {
		($called) = $an->selectrow_array($calls_sql);
		$called //= 0;
		if ($called > 0) { $touched = 1 }
		elsif (!$touched) { $c{function_not_called}++ }
	}
	$an->rollback if $an->ping > 0;
	$scan->('error', $msg) if $status eq 'error';
	$scan->('notice', $_) for @notices;
	if ($an->ping <= 0) {
		$c{reconnects}++;
		$state ||= '08006';
		$status = 'error';
		$an = undef;
		wait_ledger_after_restart();
		analyst_connect();
	}
	my $charged = su_charges() - $before;

	$c{executed}++;
	$c{$status eq 'error' ? 'error' : 'ok'}++;
	$c{truncated}++ if $status eq 'truncated';
	$c{charged}++ if $charged > 0;
	$by_state{$state}++ if $status eq 'error';
	$touched = 1 if $names_function && $status eq 'error';    # refused: counted as touching
	if ($touched) {
		$c{touched}++;
		if ($status eq 'error') { $c{touched_refused}++; $touched_by_state{$state}++ }
		else { $c{touched_ok}++ }
	}
	$c{charged_ok}++ if $charged > 0 && $status ne 'error';
	my $pf = $per_file{$file =~ s{.*/}{}r} //= {n => 0, ok => 0, charged => 0, order => scalar keys %per_file};
	$pf->{n}++;
	$pf->{ok}++ if $status ne 'error';
	$pf->{charged}++ if $charged > 0;
	my @why;
	if (@leaks) {
		$c{leak}++;
		my %seen;
		push @why, "leak: " . join('; ', grep { !$seen{$_}++ } @leaks) .
			($charged > 0 ? " (statement was charged)" : " (no charge)");
	}
	# A statement that reads nothing protected is not charged: a column probe
	# (LIMIT 0, constant-false WHERE), which the guard replaces by a query
	# that reads nothing.  Shown by its plan: EXPLAIN as the analyst succeeds
	# and scans none of the touched relations (the guard refuses EXPLAIN of a
	# plan that reads a protected table; a table that is not protected any
	# more, as in the positive control, shows its scan).  Not for a function
	# over protected data (it reads at run time).
	if ($touched && $status ne 'error' && $charged <= 0 && !$called && !$plain && $an && $an->ping > 0) {
		my $plan = eval {
			local $an->{RaiseError} = 0;
			my $e = $an->prepare("EXPLAIN (COSTS OFF) $sql");
			my $text = ($e && $e->execute) ? join("\n", map { $_->[0] } @{ $e->fetchall_arrayref }) : undef;
			$an->rollback;
			$text;
		};
		if (defined $plan && $plan !~ $touch_re && su_charges() - $before <= 0) {
			$c{read_nothing}++;
			$touched = 0;
		}
	}
	if ($touched && $status ne 'error' && $charged <= 0) {
		$c{charge}++;
		push @why, "charge: succeeded on protected data ($rows rows) with no ledger charge";
	}
	if (@why) {
		print $viol "=== violation at statement $n ($file)\n";
		print $viol "$_\n" for @why;
		print $viol "status: $status" . ($state ? " $state" : '') . ($msg ? ": " . oneline($msg) : '') . "\n";
		print $viol "$sql;\n\n";
	}
	print $log join("\t", $n, $file =~ s{.*/}{}r, $ms, $status, $state, $touched, $charged, $rows,
		oneline($msg)), "\n";
}
close $log;
close $viol;

sub wait_ledger_after_restart {
	# the postmaster may be reinitializing after a crash: wait for it
	for (1 .. 60) {
		last if eval { $su->ping > 0 } && defined su_charges_quiet();
		$su = eval { dbconnect($o{superuser}) } // $su;
		sleep 0.5;
	}
	wait_ledger();
}
sub su_charges_quiet { my ($x) = $su->selectrow_array($charges_sql); $x }

# ---- summary
my $secs = time - $t_start;
open my $sum, '>', "$o{out}/summary.txt" or die $!;
print $sum "$_=$c{$_}\n" for sort keys %c;
print $sum "statements=" . scalar(@stmts) . "\n";
close $sum;

my %label = ('' => 'no SQLSTATE', '42501' => 'insufficient privilege / guard', '42883' => 'undefined function/operator',
	'42804' => 'datatype mismatch', '22023' => 'invalid parameter value', '22004' => 'null value not allowed',
	'0A000' => 'feature not supported', '57014' => 'query canceled (timeout)', '42725' => 'ambiguous function',
	'22P02' => 'invalid text representation', '42846' => 'cannot coerce', '08006' => 'connection lost',
	'DP001' => 'budget exceeded', '42P18' => 'indeterminate datatype', '22012' => 'division by zero',
	'42601' => 'syntax error', '42703' => 'undefined column', '55000' => 'object not in prerequisite state',
	'22003' => 'numeric value out of range', '2202E' => 'array subscript error', '42P10' => 'invalid column reference',
	'42803' => 'grouping error', '55P03' => 'lock not available', '54000' => 'program limit exceeded',
	'42P01' => 'undefined table', '22008' => 'datetime field overflow', '22007' => 'invalid datetime format');
printf "replayed %d of %d statements in %.0f s as %s: %d succeeded (%d truncated reads), %d failed, %d charged, %d reconnects\n",
	$c{executed}, scalar(@stmts), $secs, $o{analyst}, $c{ok}, $c{truncated}, $c{error}, $c{charged}, $c{reconnects};
for my $f (sort { $per_file{$a}{order} <=> $per_file{$b}{order} } keys %per_file) {
	printf "  %-24s %6d statements, %6d succeeded, %6d charged\n", $f, @{$per_file{$f}}{qw(n ok charged)};
}
print "errors by SQLSTATE:\n";
for my $s (sort { $by_state{$b} <=> $by_state{$a} || $a cmp $b } keys %by_state) {
	printf "  %-6s %6d  %s\n", $s || '-', $by_state{$s}, $label{$s} // '';
}
printf "statements touching protected data (naming a protected table or view, or calling a function over one): %d\n" .
	"  answered %d, refused %d; statements answered and charged: %d\n",
	$c{touched}, $c{touched_ok}, $c{touched_refused}, $c{charged_ok};
printf "  (and %d succeeded naming a function over protected data that was never called)\n", $c{function_not_called}
	if $c{function_not_called};
if (%touched_by_state) {
	print "  refused by SQLSTATE: ", join(', ', map { ($_ || '-') . " $touched_by_state{$_}" }
		sort { $touched_by_state{$b} <=> $touched_by_state{$a} || $a cmp $b } keys %touched_by_state), "\n";
}
printf "violations: leak %d, charge %d (details: %s)\n", $c{leak}, $c{charge}, "$o{out}/violations.txt";
exit 0;
