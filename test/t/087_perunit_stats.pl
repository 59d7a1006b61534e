# Questions about persons (src/guard/perunit.c, issue 37), measured:
# unbiasedness, error bars' coverage and privacy of aggregates over per-unit
# values and of distinct counts, through an analyst's queries (the path that
# rewrites them), on neighbouring datasets.
#
# D  = 300 light units (pid 1..300: 1 + pid % 3 rows each, items {pid % 60,
#      (pid + 7) % 60} in order, so at most 2 distinct items) + one heavy unit
#      (pid 0) with 1,000 rows and 1,000 distinct items of its own;
# D' = D without the heavy unit.
# Both protected with the unit pid, g = 2, r = 2: a unit's per-unit count is
# clamped to R = g r = 4 rows, and a distinct count keeps at most r = 2 of a
# unit's values (here every light unit keeps all of its own).  The shapes:
#
#   S: SELECT sum(n), avg(n) FROM (SELECT pid, count(*) AS n FROM t GROUP BY pid) s
#      sum: bounded_sum over [1, 4] (sensitivity 4, laplace(epsilon=1):
#      scale 4); the heavy unit adds exactly 4 (its 1,000 rows clamped);
#      avg: its own interval per release (dp_pg.last_releases);
#   H: SELECT n, count(*) FROM (...) s GROUP BY n   (bins 1..4 listed; each
#      unit in one bin: scale 1; the heavy unit adds 1 to bin 4);
#   U: SELECT count(DISTINCT item) FROM t          (the heavy unit adds
#      exactly 2 items no one else holds: scale 2).
#
# Checks, each with its false-failure probability:
#  1. exact (debug_noiseless): the releases before noise are the bounded
#     truth computed in plain SQL (cannot fail by chance);
#  2. unbiasedness: the noise is symmetric, so an unbiased release is above
#     the bounded truth as often as below: a sign test on D''s releases of S
#     (sum) and U, failing when a Chernoff (KL) bound says the split is
#     unbalanced, each at e^-c2 (c2 below: 2e-10 over the two tests and the
#     tie-free bins of H); control: the same test against the truth moved by
#     half a noise scale must fail (a bias that size is caught);
#  3. coverage: [answer - h, answer + h] (h = ci95_halfwidth, closed) holds
#     the bounded truth in at least 95% of the releases of S's sum, H's bins
#     and U, and the average's own [ci95_lower, ci95_upper] holds it too:
#     failing when the misses exceed what Binomial(N, 0.05) reaches with
#     probability e^-c2 (Chernoff); control: intervals of a third of the
#     width must be caught (misses about 37%);
#  4. privacy: from the releases on D and D', the one-sided Chernoff bounds
#     of test/t/050_unit_privacy.pl give a lower confidence bound (LCB) on
#     the privacy loss of every threshold event on a fixed grid; the
#     assertions "max LCB <= epsilon = 1" fail by chance with probability at
#     most 5e-10 (union bound over the 4 proportion bounds of every event:
#     c = ln(2M / 1e-9)).  Controls, each must exceed 1: C1, S's sum with
#     laplace(epsilon=2) (noise for half the sensitivity: true loss 2);
#     C2, U on copies protected WITHOUT a unit (a row is a person: the heavy
#     unit adds 1,000 items, noise for 1).  The controls fail by chance with
#     probability < 1e-16 (their comments).
# The whole test fails by chance with probability at most 1e-9.
use strict;
use warnings;
use IPC::Run;
use List::Util qw(max min sum);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $N = 5000;    # releases per dataset and shape

# ------------------------------------------------------------------------
# Statistics (as test/t/050_unit_privacy.pl)

# Bernoulli KL divergence kl(a || p).
sub kl
{
	my ($a, $p) = @_;
	return 9**9**9 if ($a > 0 && $p <= 0) || ($a < 1 && $p >= 1);
	my $v = 0;
	$v += $a * log($a / $p) if $a > 0;
	$v += (1 - $a) * log((1 - $a) / (1 - $p)) if $a < 1;
	return $v;
}

# Chernoff upper confidence bound on p from k of n (P(p > U) <= e^-c).
sub ucb
{
	my ($k, $n, $c) = @_;
	return 1 if $k >= $n;
	my ($lo, $hi, $ph) = ($k / $n, 1, $k / $n);
	for (1 .. 100)
	{
		my $mid = ($lo + $hi) / 2;
		if ($n * kl($ph, $mid) <= $c) { $lo = $mid } else { $hi = $mid }
	}
	return $hi;
}

# Chernoff lower confidence bound on p from k of n (P(p < L) <= e^-c).
sub lcb
{
	my ($k, $n, $c) = @_;
	return 0 if $k <= 0;
	my ($lo, $hi, $ph) = (0, $k / $n, $k / $n);
	for (1 .. 100)
	{
		my $mid = ($lo + $hi) / 2;
		if ($n * kl($ph, $mid) <= $c) { $hi = $mid } else { $lo = $mid }
	}
	return $lo;
}

# Number of values >= t in a sorted array.
sub count_ge
{
	my ($s, $t) = @_;
	my ($lo, $hi) = (0, scalar @$s);
	while ($lo < $hi)
	{
		my $mid = int(($lo + $hi) / 2);
		if ($s->[$mid] >= $t) { $hi = $mid } else { $lo = $mid + 1 }
	}
	return @$s - $lo;
}

# Number of events of a list of statistics [name, lo, hi] (>= t and <= t).
sub n_events
{
	return sum(map { 2 * ($_->[2] - $_->[1] + 1) } @_);
}

# The largest LCB of the privacy loss over the events of statistics
# [name, lo, hi] computed on both samples (hashes name => array).
sub loss_scan
{
	my ($stats, $sd, $sn, $c) = @_;
	my %r = (lcb => -9**9**9, lcb_at => '');
	for my $st (@$stats)
	{
		my ($name, $lo, $hi) = @$st;
		my @a = sort { $a <=> $b } @{ $sd->{$name} };
		my @b = sort { $a <=> $b } @{ $sn->{$name} };
		my ($na, $nb) = (scalar @a, scalar @b);
		for my $t ($lo .. $hi)
		{
			my %k = (
				">= $t" => [ count_ge(\@a, $t), count_ge(\@b, $t) ],
				"<= $t" => [ $na - count_ge(\@a, $t + 1), $nb - count_ge(\@b, $t + 1) ]);
			for my $ev (sort keys %k)
			{
				my ($ka, $kb) = @{ $k{$ev} };
				for my $dir ([ $ka, $na, $kb, $nb, "D/D'" ], [ $kb, $nb, $ka, $na, "D'/D" ])
				{
					my ($k1, $n1, $k2, $n2, $label) = @$dir;
					my $l = lcb($k1, $n1, $c);
					next unless $l > 0;
					my $v = log($l / ucb($k2, $n2, $c));
					($r{lcb}, $r{lcb_at}) = ($v, "$name $ev, $label ($k1 vs $k2)") if $v > $r{lcb};
				}
			}
		}
	}
	return \%r;
}

# Sign test: releases above and below truth t (ties left out) are balanced
# unless a Chernoff bound at e^-c says otherwise.  Returns (ok, above, below).
sub balanced
{
	my ($vals, $t, $c) = @_;
	my $above = grep { $_ > $t } @$vals;
	my $below = grep { $_ < $t } @$vals;
	my $n = $above + $below;
	return (1, $above, $below) if $n == 0;
	my $p = $above / $n;
	return ($n * kl($p, 0.5) <= $c, $above, $below);
}

# Coverage: misses among n intervals are consistent with P(miss) <= 0.05
# unless a Chernoff bound at e^-c says the miss rate is above 0.05.
sub covers
{
	my ($misses, $n, $c) = @_;
	my $p = $misses / $n;
	return ($p <= 0.05 || $n * kl($p, 0.05) <= $c);
}

# ------------------------------------------------------------------------
# Events and constants (fixed before any sampling; statistics are centred on
# D''s bounded truth: Laplace scale 4 for the sum, 1 per bin, 2 for U)

my @sum_stats = ([ 'sum', -70, 74 ]);
my @hist_stats = map { [ "bin $_", -20, 21 ] } 1 .. 4;
my @uniq_stats = ([ 'uniq', -40, 42 ]);
my $M = 4 * (n_events(@sum_stats) + n_events(@hist_stats) + n_events(@uniq_stats));
my $c = log(2 * $M / 1e-9);
# the other asserted tests: 2 sign tests, 7 coverage tests (sum, avg, 4 bins, U): 2e-10 each at most
my $c2 = log(9 / 2e-10);

# ------------------------------------------------------------------------
# Cluster and data

my $node = PostgreSQL::Test::Cluster->new('perunit');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dp_pg'");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE TABLE base AS
		SELECT u AS pid, CASE WHEN j = 1 THEN u % 60 ELSE (u + 7) % 60 END AS item
		FROM generate_series(1, 300) u, generate_series(1, 1 + u % 3) j;
	INSERT INTO base SELECT 0, 1000 + j FROM generate_series(1, 1000) j;
	CREATE TABLE d_unit AS SELECT * FROM base;
	CREATE TABLE dn_unit AS SELECT * FROM base WHERE pid <> 0;
	CREATE TABLE d_row AS SELECT * FROM base;
	CREATE TABLE dn_row AS SELECT * FROM base WHERE pid <> 0;
	SELECT dp_pg.protect('d_unit', 'pid', 2, 2), dp_pg.protect('dn_unit', 'pid', 2, 2);
	SELECT dp_pg.protect('d_row'), dp_pg.protect('dn_row');
	CREATE ROLE ana LOGIN;
	GRANT dp_pg_analyst TO ana;
	SELECT dp_pg.set_budget('ana', 1e12, 0.5);
	-- N releases of one dp query, one line per release: "key:value ..." (a
	-- row of columns k and v gives k:v, any other row column:value for each)
	CREATE FUNCTION dp_samples(q text, n int) RETURNS SETOF text LANGUAGE plpgsql AS $$
	DECLARE
		rec record;
		line text;
		j jsonb;
	BEGIN
		FOR i IN 1 .. n LOOP
			line := '';
			FOR rec IN EXECUTE q LOOP
				j := to_jsonb(rec);
				IF j ? 'k' THEN
					line := line || (j->>'k') || ':' || (j->>'v') || ' ';
				ELSE
					line := line || (SELECT string_agg(key || ':' || value, ' ') FROM jsonb_each_text(j)) || ' ';
				END IF;
			END LOOP;
			-- an average's own interval (dp_pg.last_releases)
			FOR rec IN SELECT value, ci95_lower, ci95_upper FROM dp_pg.last_release_rows() WHERE aggregate = 'dp_avg' LOOP
				line := line || 'avglo:' || rec.ci95_lower || ' avghi:' || rec.ci95_upper || ' ';
			END LOOP;
			RETURN NEXT line;
		END LOOP;
	END $$;
	GRANT EXECUTE ON FUNCTION dp_samples(text, int) TO ana;
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
  or die 'ledger not ready';

my $sum_q = q{SELECT sum(n) AS sum, avg(n) AS avg FROM (SELECT pid, count(*) AS n FROM %s GROUP BY pid) x};
my $hist_q = q{SELECT 'bin ' || n AS k, c AS v FROM (SELECT n, count(*) AS c FROM (SELECT pid, count(*) AS n FROM %s GROUP BY pid) x GROUP BY n) y};
my $uniq_q = q{SELECT 'uniq'::text AS k, u AS v FROM (SELECT count(DISTINCT item) AS u FROM %s) y};

# Run dp_samples as the analyst on several tables concurrently; returns one
# array of releases (hashes key => value) per job.
sub sample
{
	my ($mech, $n, @jobs) = @_;    # jobs: [query template, table]
	my (@out, @err, @h);
	for my $i (0 .. $#jobs)
	{
		my $q = sprintf($jobs[$i][0], $jobs[$i][1]);
		$q =~ s/'/''/g;
		($out[$i], $err[$i]) = ('', '');
		$h[$i] = IPC::Run::start(
			[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') . ' user=ana',
			  '-c', "SET dp_pg.default_mechanism = '$mech'",
			  '-c', "SELECT * FROM dp_samples('$q', $n)" ],
			'>', \$out[$i], '2>', \$err[$i]);
	}
	my @res;
	for my $i (0 .. $#jobs)
	{
		$h[$i]->finish;
		die "sampling $jobs[$i][1] failed: $err[$i]" if $h[$i]->result != 0 || $err[$i] ne '';
		my @rows;
		for my $line (split /\n/, $out[$i])
		{
			my %h = map { my ($k, $v) = split /:/, $_, 2; ($k, $v) } split / (?=[a-z])/, $line =~ s/^\s+|\s+$//gr;
			push @rows, \%h;
		}
		die "sampling $jobs[$i][1]: " . scalar(@rows) . " releases, expected $n" unless @rows == $n;
		push @res, \@rows;
	}
	return @res;
}

# ------------------------------------------------------------------------
# 1. exact: the bounded truth (D', and D's heavy unit's exact contribution)

sub noiseless
{
	my ($q) = @_;
	return $node->safe_psql('postgres',
		"SET dp_pg.debug_noiseless = on; SET ROLE ana; $q");
}
my $sumN = $node->safe_psql('postgres', q{SELECT sum(least(n, 4)) FROM (SELECT pid, count(*) n FROM dn_unit GROUP BY pid) s});
my $avgN = $node->safe_psql('postgres', q{SELECT avg(least(n, 4))::float8 FROM (SELECT pid, count(*) n FROM dn_unit GROUP BY pid) s});
my %binN = map { split /\|/ } split /\n/, $node->safe_psql('postgres', q{
	SELECT 'bin ' || v, count(s.n) FROM generate_series(1, 4) v
	LEFT JOIN (SELECT pid, least(count(*), 4) n FROM dn_unit GROUP BY pid) s ON s.n = v GROUP BY v ORDER BY v});
my $uniqN = $node->safe_psql('postgres', q{SELECT count(DISTINCT item) FROM dn_unit});
is($node->safe_psql('postgres', q{SELECT max(n) FROM (SELECT pid, count(DISTINCT item) n FROM base WHERE pid <> 0 GROUP BY pid) s}),
	'2', 'light units hold at most r = 2 distinct items (they keep all of them)');
is(noiseless(sprintf(q{SELECT sum(n) FROM (SELECT pid, count(*) AS n FROM %s GROUP BY pid) x}, 'dn_unit')), $sumN,
	"D': the per-unit sum is the bounded truth $sumN");
is(noiseless(sprintf(q{SELECT sum(n) FROM (SELECT pid, count(*) AS n FROM %s GROUP BY pid) x}, 'd_unit')), $sumN + 4,
	'D: the heavy unit adds exactly R = 4');
is(noiseless(sprintf(q{SELECT string_agg(n || ':' || c, ' ' ORDER BY n) FROM (SELECT n, count(*) AS c FROM (SELECT pid, count(*) AS n FROM %s GROUP BY pid) x GROUP BY n) y}, 'd_unit')),
	join(' ', map { "$_:" . ($binN{"bin $_"} + ($_ == 4 ? 1 : 0)) } 1 .. 4),
	'D: the histogram lists bins 1..4, the heavy unit in bin 4');
is(noiseless(sprintf(q{SELECT count(DISTINCT item) FROM %s}, 'dn_unit')), $uniqN, "D': the distinct count is $uniqN");
is(noiseless(sprintf(q{SELECT count(DISTINCT item) FROM %s}, 'd_unit')), $uniqN + 2,
	'D: the heavy unit adds exactly r = 2 of its 1,000 items');
is(noiseless(sprintf(q{SELECT count(DISTINCT item) FROM %s}, 'd_row')), $uniqN + 1000,
	'without a unit the heavy unit adds 1,000 items');

if (($ENV{DP_TAP_STATISTICS} // '1') eq '0')
{
	diag 'DP_TAP_STATISTICS=0: exact checks only, the statistics run on another leg';
	done_testing();
	exit 0;
}

# the half-widths of the sites (public: the same for every release)
my %h95 = map { split /\|/ } split /\n/, $node->safe_psql('postgres', sprintf(q{
	SET SESSION AUTHORIZATION ana; SET dp_pg.default_mechanism = 'laplace(epsilon=1)';
	SELECT 'sum', ci95_halfwidth FROM dp_pg.error_bars('SELECT sum(n) FROM (SELECT pid, count(*) AS n FROM dn_unit GROUP BY pid) x')
	UNION ALL SELECT 'bin', ci95_halfwidth FROM dp_pg.error_bars('SELECT n, count(*) FROM (SELECT pid, count(*) AS n FROM dn_unit GROUP BY pid) x GROUP BY n')
	UNION ALL SELECT 'uniq', ci95_halfwidth FROM dp_pg.error_bars('SELECT count(DISTINCT item) FROM dn_unit')}));
diag sprintf 'N = %d per dataset; %d asserted privacy events, c = %.2f; c2 = %.2f; h95: sum %s, bin %s, uniq %s',
  $N, $M / 4, $c, $c2, $h95{sum}, $h95{bin}, $h95{uniq};

# ------------------------------------------------------------------------
# Releases

my $t0 = time;
my ($S_d, $S_n) = sample('laplace(epsilon=1)', $N, [ $sum_q, 'd_unit' ], [ $sum_q, 'dn_unit' ]);
my ($H_d, $H_n) = sample('laplace(epsilon=1)', $N, [ $hist_q, 'd_unit' ], [ $hist_q, 'dn_unit' ]);
my ($U_d, $U_n) = sample('laplace(epsilon=1)', $N, [ $uniq_q, 'd_unit' ], [ $uniq_q, 'dn_unit' ]);
diag sprintf 'sampled S, H, U on D and D\' [%.0fs]', time - $t0;

# ------------------------------------------------------------------------
# 2. unbiasedness: sign tests on D''s releases (and their control)

{
	my @sums = map { $_->{sum} } @$S_n;
	my @uniq = map { $_->{uniq} } @$U_n;
	my ($ok, $a, $b) = balanced(\@sums, $sumN, $c2);
	ok($ok, "S: the per-unit sum is centred on the bounded truth ($a above, $b below)");
	($ok, $a, $b) = balanced(\@uniq, $uniqN, $c2);
	ok($ok, "U: the distinct count is centred on the bounded truth ($a above, $b below)");
	# control: the truth moved by half a noise scale (2 for the sum): for
	# discrete Laplace of scale 4 about 61% of the untied releases fall on
	# one side; at N = 5,000 the test passes that by chance with probability
	# < 1e-30 (Chernoff, KL(0.61 || 0.5) = 0.024, 0.024 N >> c2)
	($ok, $a, $b) = balanced(\@sums, $sumN + 2, $c2);
	ok(!$ok, "control: a release biased by half a noise scale is caught ($a above, $b below)");
}

# ------------------------------------------------------------------------
# 3. coverage of the error bars (and their control)

{
	my $miss = grep { abs($_->{sum} - $sumN) > $h95{sum} } @$S_n;
	ok(covers($miss, $N, $c2), sprintf('S: [answer - h, answer + h] covers the per-unit sum: %d misses of %d (%.2f%%)', $miss, $N, 100 * $miss / $N));
	$miss = grep { $avgN < $_->{avglo} - 1e-9 || $avgN > $_->{avghi} + 1e-9 } @$S_n;
	ok(covers($miss, $N, $c2), sprintf('S: the average\'s own interval covers the per-unit average %.4f: %d misses', $avgN, $miss));
	for my $b (1 .. 4)
	{
		$miss = grep { abs(($_->{"bin $b"} // 'none') - $binN{"bin $b"}) > $h95{bin} } @$H_n;
		ok(covers($miss, $N, $c2), "H: bin $b covered: $miss misses");
	}
	$miss = grep { abs($_->{uniq} - $uniqN) > $h95{uniq} } @$U_n;
	ok(covers($miss, $N, $c2), "U: the distinct count covered: $miss misses");
	# control: a third of the half-width (about 1.0 noise scales for Laplace:
	# P(miss) ~ 0.37); the test passes that by chance with probability
	# < 1e-300 at N = 5,000 (KL(0.37 || 0.05) = 0.47)
	$miss = grep { abs($_->{sum} - $sumN) > $h95{sum} / 3 } @$S_n;
	ok(!covers($miss, $N, $c2), "control: intervals of a third of the width are caught ($miss misses)");
}

# ------------------------------------------------------------------------
# 4. privacy: D vs D'

sub stats
{
	my ($rows, $names, $truth) = @_;
	my %s;
	for my $r (@$rows)
	{
		for my $k (@$names)
		{
			die "a release without $k: " . join(' ', %$r) unless defined $r->{$k};
			push @{ $s{$k} }, $r->{$k} - $truth->{$k};
		}
	}
	return \%s;
}

my $r = loss_scan(\@sum_stats, stats($S_d, ['sum'], { sum => $sumN }), stats($S_n, ['sum'], { sum => $sumN }), $c);
diag sprintf 'S (R = 4): max LCB %.3f at %s', $r->{lcb}, $r->{lcb_at};
ok($r->{lcb} <= 1, sprintf('per-unit sum: no event shows a loss above epsilon = 1 (max LCB %.3f)', $r->{lcb}));

my @bins = map { "bin $_" } 1 .. 4;
$r = loss_scan(\@hist_stats, stats($H_d, \@bins, \%binN), stats($H_n, \@bins, \%binN), $c);
diag sprintf 'H (one bin per unit): max LCB %.3f at %s', $r->{lcb}, $r->{lcb_at};
ok($r->{lcb} <= 1, sprintf('histogram of per-unit counts: no event shows a loss above epsilon = 1 (max LCB %.3f)', $r->{lcb}));

$r = loss_scan(\@uniq_stats, stats($U_d, ['uniq'], { uniq => $uniqN }), stats($U_n, ['uniq'], { uniq => $uniqN }), $c);
diag sprintf 'U (r = 2 values per unit): max LCB %.3f at %s', $r->{lcb}, $r->{lcb_at};
ok($r->{lcb} <= 1, sprintf('distinct count: no event shows a loss above epsilon = 1 (max LCB %.3f)', $r->{lcb}));

# C1: S's sum with noise for half its sensitivity (scale 2, shift 4: true
# loss 2).  At the event {sum <= sumN}, p_D' = 1 / (1 + e^-0.5) = 0.62 and
# p_D = e^-2 p_D'; by Chernoff's inequality on both counts the LCB of that
# event falls to 1 with probability < 1e-100 at N = 5,000 (expected ~ 1.6).
$t0 = time;
my ($C1_d, $C1_n) = sample('laplace(epsilon=2)', $N, [ $sum_q, 'd_unit' ], [ $sum_q, 'dn_unit' ]);
$r = loss_scan(\@sum_stats, stats($C1_d, ['sum'], { sum => $sumN }), stats($C1_n, ['sum'], { sum => $sumN }), $c);
diag sprintf 'C1 per-unit sum, noise for half its sensitivity: max LCB %.3f at %s [%.0fs]', $r->{lcb}, $r->{lcb_at}, time - $t0;
ok($r->{lcb} > 1, sprintf('control C1 (true loss 2): caught, LCB %.3f > 1', $r->{lcb}));

# C2: the distinct count without a unit: D' never reaches uniqN + 500 (noise
# of scale 1: P <= 2N e^-500) while D always does (its 1,000 items): LCB ~ 6.5
# >> 1; fails by chance with probability < 1e-200.
$t0 = time;
my ($C2_d, $C2_n) = sample('laplace(epsilon=1)', $N, [ $uniq_q, 'd_row' ], [ $uniq_q, 'dn_row' ]);
$r = loss_scan([ [ 'uniq', -40, 1040 ] ], stats($C2_d, ['uniq'], { uniq => $uniqN }), stats($C2_n, ['uniq'], { uniq => $uniqN }), $c);
diag sprintf 'C2 distinct count without a unit: max LCB %.3f at %s [%.0fs]', $r->{lcb}, $r->{lcb_at}, time - $t0;
ok($r->{lcb} > 1, sprintf('control C2 (a row is a person: the heavy unit adds 1,000): caught, LCB %.3f > 1', $r->{lcb}));

done_testing();
