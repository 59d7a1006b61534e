#!/usr/bin/env bash
# test/demo_check.sh — the demo (test/demo.sh) says what is true.
#
# Runs the demo on the test leg's server (DP_DEMO_NO_BUILD=1: the dp_pg
# installed in DP_PGBIN, on port DP_SUITE_PORT) and checks its output:
#   - it ran to its end, every section in order;
#   - each answer lies within 8 half-widths of its printed 95% interval from
#     the true value it is printed beside (for a count on a privacy unit
#     table, the true bounded count): the noise of one answer is that far
#     with probability at most 20^-8 < 4e-11 (Laplace: P(|X| > 8h) =
#     exp(-8 ln 20); the Gaussian's is far smaller), so the 17 answers fail
#     this by chance with probability below 1e-9.  A true value computed with
#     another bounding than the answer's (the demo's old random choice of
#     wards, hundreds of visits apart) fails it;
#   - its sample data are balanced (its seed is fixed: the counts are the same
#     every run on a server version): the largest and smallest region, age
#     over 85 and ward differ by less than 2% (an element of ARRAY[...] picked
#     by 1 + (random() * 4)::int has half the weight of its neighbours);
#   - every charge is the one its explanation names, and the budget's spent
#     epsilon their sum;
#   - each refused query is shown with its SQL, then its error;
#   - the budget and ledger show readable numbers (six significant digits at
#     most), and the numbers a reader could wonder about are explained
#     (1,000,001 people, person 42's 6 visits, no person in more than 2 wards);
#   - it ends by saying where to get a cluster of one's own.
# Ends with "demo: N passed, M failed".
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=$(mktemp /tmp/dp_pg-demo-check.XXXXXX)
trap 'rm -f "$OUT"' EXIT
DP_DEMO_NO_BUILD=1 DP_PORT="${DP_SUITE_PORT:-55433}" bash "$DP_ROOT/test/demo.sh" >"$OUT" 2>&1
rc=$?
cat "$OUT"
echo
echo "--- checking what the demo said"
perl - "$OUT" "$rc" <<'PERL'
use strict;
use warnings;

my ($file, $rc) = @ARGV;
open(my $fh, '<', $file) or die "$file: $!";
my @lines = <$fh>;
chomp @lines;
my ($pass, $fail) = (0, 0);
sub check
{
	my ($ok, $what) = @_;
	if ($ok) { print "ok: $what\n"; $pass++; }
	else { print "not ok: $what\n"; $fail++; }
}

# The lines of section $name: from its header to the next "=== " line.
sub section
{
	my ($re) = @_;
	my ($in, @s) = (0);
	for my $l (@lines)
	{
		if ($l =~ /^=== /) { last if $in; $in = 1 if $l =~ $re; next; }
		push @s, $l if $in;
	}
	return @s;
}

# The rows of the first psql table in @s whose header names $col, as hashes
# (a header line, a line of dashes, rows up to a blank line or "(n rows)").
sub table
{
	my ($col, @s) = @_;
	for (my $i = 0; $i < $#s; $i++)
	{
		next unless $s[ $i + 1 ] =~ /^-+(\+-+)*$/;
		my @h = map { s/^\s+|\s+$//gr } split /\|/, $s[$i];
		next unless grep { $_ eq $col } @h;
		my @rows;
		for (my $j = $i + 2; $j <= $#s && $s[$j] ne '' && $s[$j] !~ /^\(/; $j++)
		{
			my @v = map { s/^\s+|\s+$//gr } split /\|/, $s[$j], -1;
			my %r;
			@r{@h} = @v;
			push @rows, \%r;
		}
		return @rows;
	}
	return ();
}

# Is answer $a within 8 half-widths of its interval "lo .. hi" from $truth?
my $answers = 0;
sub near
{
	my ($r, $truth_col, $what) = @_;
	my ($lo, $hi) = $r->{interval_95} =~ /^(-?[\d.]+) \.\. (-?[\d.]+)$/;
	$answers++;
	if (!defined $lo || !defined $r->{dp_answer} || !defined $r->{$truth_col})
	{
		check(0, "$what: an answer, a true value and an interval are printed");
		return;
	}
	my $h = ($hi - $lo) / 2;
	my $d = abs($r->{dp_answer} - $r->{$truth_col});
	check($d <= 8 * $h, sprintf("%s: answer %s is %.0f from %s %s (8 half-widths: %.0f)",
		$what, $r->{dp_answer}, $d, $truth_col, $r->{$truth_col}, 8 * $h));
}

# The largest and the smallest of the values differ by less than $tol.
sub balanced
{
	my ($what, $tol, @v) = @_;
	my ($min, $max) = (sort { $a <=> $b } @v)[ 0, -1 ];
	check(@v > 1 && $max / $min < 1 + $tol, sprintf("%s balanced: %s (largest / smallest %.4f)", $what, join(', ', @v),
		@v ? $max / $min : 0));
}

sub charged
{
	my ($what, $r, $eps, $delta) = @_;
	check(defined $r && $r->{charged_epsilon} eq $eps && (!defined $delta || $r->{charged_delta} eq $delta),
		"$what charged epsilon $eps" . (defined $delta ? ", delta $delta" : '') . ' as explained');
}

check($rc == 0, "the demo ran to its end (exit status $rc)");
my @headers = grep { /^=== \d\. / } @lines;
check(join(' ', map { /^=== (\d)/ } @headers) eq '1 2 3 4 5 6 7 8', 'sections 1 to 8, in order');

my @s = section(qr/^=== 1\./);
my @t = table('dp_answer', @s);
check(@t == 1, 'section 1: one answer');
near($t[0], 'true_value', 'section 1 (people over 65)') if @t;
charged('section 1', $t[0], '1', '0');

@s = section(qr/^=== 2\./);
@t = table('region', @s);
check(@t == 5, 'section 2: every declared region listed (5)');
near($_, 'true_value', "section 2, region $_->{region}") for @t;
balanced('section 2: the regions', 0.02, map { $_->{true_value} } @t);
charged('section 2', (table('charged_epsilon', @s))[0], '0.5', '0');

@s = section(qr/^=== 3\./);
@t = table('age', @s);
check(join(',', map { $_->{age} } @t) eq '86,87,88,89,90', 'section 3: ages 86 to 90 released');
near($_, 'true_value', "section 3, age $_->{age}") for @t;
balanced('section 3: the ages over 85', 0.05, map { $_->{true_value} } @t);
charged('section 3', (table('charged_epsilon', @s))[0], '0.7', '1e-08');

@s = section(qr/^=== 4\./);
@t = table('dp_answer', @s);
check(@t == 1, 'section 4: one answer');
near($t[0], 'true_value', 'section 4 (income of the sensitive)') if @t;
charged('section 4', $t[0], '0.5', '1e-08');

@s = section(qr/^=== 5\./);
@t = table('ward', @s);
check(@t == 4, 'section 5: every declared ward listed (4)');
near($_, 'true_bounded_count', "section 5, ward $_->{ward}") for @t;
balanced('section 5: the wards (raw visits)', 0.05, map { $_->{true_raw_count} } @t);
my ($c5) = table('charged_epsilon', @s);
charged('section 5', $c5, '1', '0');
check($c5 && $c5->{most_wards_of_a_person} eq '2', 'section 5: no person visits more than 2 wards (the bound keeps every ward)');
check((grep { /person 42's 10,000 visits count as 6/ } @s) && (grep { /is exactly what the answers estimate/ } @s),
	'section 5 says why the true bounded count is what the answers estimate, and what person 42 counts');

@s = section(qr/^=== 6\./);
charged('section 6 (rolled back)', (table('charged_epsilon', @s))[0], '0.5');

@s = section(qr/^=== 7\./);
@t = table('first_answer', @s);
check(@t == 1 && $t[0]{first_answer} eq $t[0]{answer_now} && $t[0]{from_cache} eq 't',
	'section 7: the refresh is served the first answer, from the cache');
my @ncs = map { /^\s+(\d+)\s*$/ ? $1 : () } @s;
check(join(',', @ncs) eq '0,1', 'section 7: no charge for the refresh, one after the write (' . join(',', @ncs) . ')');
check((grep { /A new person \(id 1000001, aged 70\) is added/ } @s), 'section 7 says which person it adds');

@s = section(qr/^=== 8\./);
@t = table('dp_answer', @s);
check(@t == 1 && $t[0]{true_value} eq '1000001' && $t[0]{new_charges} eq '1', 'section 8: 1,000,001 people, one charge');
near($t[0], 'true_value', 'section 8 (count(*))') if @t;
charged('section 8', $t[0], '1');
check((grep { /the 1,000,000 people of step 4 and the one added in section 7, 1,000,001/ } @s),
	'section 8 says where 1,000,001 comes from');
check($answers == 17, "17 answers checked against their true values ($answers)");

# refused queries: the SQL, then the error
my @refused;
for (my $i = 0; $i <= $#lines; $i++)
{
	next unless $lines[$i] =~ /^=== Refused/;
	push @refused, [ $lines[$i], $lines[ $i + 1 ] // '', $lines[ $i + 2 ] // '' ];
}
check(@refused == 4, 'four refused queries (' . scalar(@refused) . ')');
for my $r (@refused)
{
	check($r->[1] =~ /^SELECT .*;$/ && $r->[2] =~ /^ERROR:  /, "shown with its SQL, then its error: $r->[1] / $r->[2]");
}
my ($raw) = grep { $_->[0] =~ /raw rows/ } @refused;
check($raw && (grep { /^HINT:  To browse rows, make a synthetic twin/ } @lines), 'the raw read is pointed to a synthetic twin');
my ($budget_refusal) = grep { $_->[0] =~ /budget has left/ } @refused;
check($budget_refusal && $budget_refusal->[2] =~ /privacy budget of role "analyst" exceeded/, 'the overspending query is refused by the budget');

# the budget and the ledger: readable numbers, the charges add up
@s = section(qr/^=== The analyst's budget/);
my ($b) = table('epsilon_spent', @s);
my $sum = 1 + 0.5 + 0.7 + 0.5 + 1 + 0.5 + 1 + 1;
check($b && $b->{charges} eq '8', 'the budget counts 8 charges');
check($b && ($b->{accounting} eq 'basic composition' ? abs($b->{epsilon_spent} - $sum) < 1e-9 : $b->{epsilon_spent} <= $sum + 1e-9),
	"epsilon_spent $b->{epsilon_spent} is the sum of the charges ($sum) or less (Renyi composition)");
my @ledger = section(qr/^=== The ledger/);
my @long = grep { /\b\d*\.\d{7,}\b|\b\d\.\d{6,}e/ } (@s, @ledger);
check(!@long, 'the budget and the ledger show at most six significant digits' . (@long ? ": $long[0]" : ''));
my @lrows = table('kind', @ledger);
check(join(',', map { $_->{kind} } @lrows) eq 'limit,' . join(',', ('charge') x 8), 'the ledger: the limit, then 8 charges');

check($lines[-2] =~ /^=== dp_pg demo done/ && $lines[-1] =~ /Installing by hand/,
	'it ends by saying where to get a cluster of one\'s own');
print "demo: $pass passed, $fail failed\n";
exit($fail ? 1 : 0);
PERL
