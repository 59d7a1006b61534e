# Accuracy claims, tested on released values (noise on, the test build's
# defaults), each with a positive control that must be rejected.
#
# A. Unit-bounded sums are unbiased (src/guard/units.c: each unit's sum is
#    clamped to [k lo, k hi], k = least(its values, r)).  The issue's
#    example: quantity in [1, 20], 20,000 customers with one order of 1 and
#    5,000 with 7 orders of 3, max_rows_per_unit r = 10; the bounded truth is
#    125,000 (the rule [r lo, r hi] gave 305,000).  And a subtle one: 300
#    customers with 9 orders of 1 beside 100 with 12 orders of 20 (truth
#    2,700 + 20,000; the old rule added 300).  N = 400 releases each of
#    dp_sum(quantity, 1, 20, 'laplace(epsilon=1)'): integer noise, discrete
#    Laplace with t = r hi / epsilon = 200, p = e^(-1/t), moment generating
#    function M(l) = (1 - p)^2 / ((1 - p e^l)(1 - p e^-l)).  Chernoff: the
#    mean of N draws exceeds a with probability at most
#    min_l exp(-N l a) M(l)^N; a is set so that each side has at most
#    2.5e-11 (both tables, both sides: 1e-10).  Control: the same releases
#    moved by what the old rule adds (it used the same noise) are rejected.
# B. An average's own 95% interval (dp_pg.last_releases' ci95_lower /
#    ci95_upper, from the noisy sum and count) covers the true average in at
#    least 95% of releases: values around 75 in [0, 100] (so the count's
#    noise matters, and the clamp at 100 is far), small groups,
#    laplace(epsilon=1), on a table without a unit (4 groups of 30 rows) and
#    on a unit table (4 groups of 40 units with 1..6 rows, r = 3: the bounded
#    average).  Of M = 4 x 1000 intervals per table the misses must stay
#    below the least t with P(Binomial(M, 0.05) >= t) <= 1e-10 (Chernoff/KL).
#    The interval is answer +- q / noisy count, q the exact 95% quantile of
#    |Z_s - m Z_n| at the released centred mean m (src/core/interval.c), so
#    its coverage is about 95% (95.0-95.7% measured), no longer the 99.9% of
#    the union of two 97.5% intervals.  Control: the same intervals at a
#    third of their width around the answer must be rejected (they miss about
#    40%: the error is (Z_s - m Z_n) / n with Laplace scales 100 and 50
#    against a third of q, about 330 / 3).
# C. A quantile's rank interval (ci95_rank_halfwidth, t = 19 at epsilon 1,
#    the tightest valid for every dataset, src/core/quantile.h): on data where
#    every boundary but one is t + 1 ranks off (20 values in cell 0 and 20 in
#    cell 1 of [0, 100], the median: the worst case, exact miss probability
#    0.0444), the draws whose rank error exceeds t stay below the
#    Binomial(2000, 0.05) threshold at 1e-10 and above the Binomial(2000,
#    0.04) one (coverage within a point of 95%).  Control: a rank interval
#    without the union over the 1,025 boundaries (ln(20) / gamma = 6) on 7 +
#    7 values must be rejected (it misses in 97% of draws).
# D. Small groups: 10 values 41..50 in [0, 100], k = 22 at epsilon 1, so the
#    minimum and maximum ask for the quartiles (src/core/quantile.c); the
#    exact probability that the minimum comes out above the maximum is 0.0484
#    (test/stat/test_quantile.c, where the plain rule min(n, k) / max(n - k,
#    0) is the control: 0.993).  Of 1,000 pairs (dp_quantile q = 0 and 1)
#    and of 300 pairs of an analyst's translated min() / max(), the crossings
#    stay below the Binomial(n, 0.05) threshold at 1e-10 each.
# In all, the asserted checks fail by chance with probability below 1e-9.
use strict;
use warnings;
use List::Util qw(sum min max);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# ------------------------------------------------------------------------
# Statistics

sub kl
{
	my ($a, $p) = @_;
	my $v = 0;
	$v += $a * log($a / $p) if $a > 0;
	$v += (1 - $a) * log((1 - $a) / (1 - $p)) if $a < 1;
	return $v;
}

# The least t above n p with n kl(t/n, p) >= ln(1/alpha): P(Bin(n, p) >= t) <= alpha.
sub binomial_upper
{
	my ($n, $p, $alpha) = @_;
	my $t = int($n * $p) + 1;
	$t++ while $t < $n && $n * kl($t / $n, $p) < log(1 / $alpha);
	return $t;
}

# The greatest t with n kl(t/n, p) >= ln(1/alpha) below n p: P(Binomial(n, p) <= t) <= alpha.
sub binomial_lower
{
	my ($n, $p, $alpha) = @_;
	my $t = int($n * $p);
	$t-- while $t > 0 && $n * kl($t / $n, $p) < log(1 / $alpha);
	return $t;
}

# The Chernoff bound on P(mean of n discrete Laplace(t) draws >= a).
sub laplace_mean_tail
{
	my ($n, $t, $a) = @_;
	my $p = exp(-1 / $t);
	my $best = 0;    # log of the bound
	for my $i (1 .. 400)
	{
		my $l = (1 / $t) * $i / 401;    # 0 < l < -ln p
		my $m = 2 * log(1 - $p) - log(1 - $p * exp($l)) - log(1 - $p * exp(-$l));
		my $v = $n * ($m - $l * $a);
		$best = $v if $v < $best;
	}
	return exp($best);
}

# The least a (to 0.5) with the mean's tail at most alpha.
sub laplace_mean_bound
{
	my ($n, $t, $alpha) = @_;
	my ($lo, $hi) = (0, 50 * $t);
	while ($hi - $lo > 0.5)
	{
		my $mid = ($lo + $hi) / 2;
		if (laplace_mean_tail($n, $t, $mid) <= $alpha) { $hi = $mid } else { $lo = $mid }
	}
	return $hi;
}

# ------------------------------------------------------------------------
# Cluster and data

my $node = PostgreSQL::Test::Cluster->new('accuracy');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dp_pg'");
# a count at epsilon 1/200 is compared with a sum (below the default least cost of a release)
$node->append_conf('postgresql.conf', "dp_pg.min_release_epsilon = 0");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE TABLE orders AS
		SELECT c AS customer, 1 AS quantity FROM generate_series(1, 20000) c
		UNION ALL SELECT c, 3 FROM generate_series(20001, 25000) c, generate_series(1, 7);
	SELECT dp_pg.protect('orders', 'customer', 1, 10);
	CREATE TABLE orders9 AS
		SELECT c AS customer, 1 AS quantity FROM generate_series(1, 300) c, generate_series(1, 9)
		UNION ALL SELECT c, 20 FROM generate_series(301, 400) c, generate_series(1, 12);
	SELECT dp_pg.protect('orders9', 'customer', 1, 10);
	-- B: averages near the top of [0, 100]
	CREATE TABLE av AS
		SELECT g, (ARRAY['a','b','c','d'])[1 + g % 4] AS grp, 70 + (g * 7) % 11 AS v FROM generate_series(1, 120) g;
	SELECT dp_pg.protect('av');
	SELECT dp_pg.set_public_keys('av', 'grp', ARRAY['a','b','c','d']);
	CREATE TABLE avu AS
		SELECT u AS pid, (ARRAY['a','b','c','d'])[1 + u % 4] AS grp, 67 + (u * 13 + j * 5) % 16 AS v
		FROM generate_series(1, 160) u, generate_series(1, 1 + u % 6) j;
	SELECT dp_pg.protect('avu', 'pid', 1, 3);
	SELECT dp_pg.set_public_keys('avu', 'grp', ARRAY['a','b','c','d']);
	-- C: the median of 21 + 21 values in cells 0 and 1 of [0, 100]; 7 + 7 for the control
	CREATE TABLE q20 AS SELECT 0.01::float8 AS v FROM generate_series(1, 20) UNION ALL SELECT 0.1 FROM generate_series(1, 20);
	CREATE TABLE q7 AS SELECT 0.01::float8 AS v FROM generate_series(1, 7) UNION ALL SELECT 0.1 FROM generate_series(1, 7);
	-- D: a group smaller than k
	CREATE TABLE small AS SELECT g AS id, 40 + g AS v FROM generate_series(1, 10) g;
	ALTER TABLE small ADD CHECK (v BETWEEN 0 AND 100);
	SELECT dp_pg.protect('small');
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready';
$node->safe_psql('postgres', q{SELECT dp_pg.set_budget('ana', 1e9, NULL)});

# Run a script of statements as $user; the output lines (-At, '|' separated).
sub run_script
{
	my ($script, $user) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $script,
		extra_params => [ '-At', ($user ? ('-U', $user) : ()) ]);
	die "script failed: $err" if $ret != 0;
	return split /\n/, $out;
}

# ------------------------------------------------------------------------
# A. Unbiased unit-bounded sums

my $N = 400;
my $alpha = 2.5e-11;    # per side and table
my $t = 200;            # r hi / epsilon: the discrete Laplace's t
is($node->safe_psql('postgres', q{SELECT ci95_halfwidth = (SELECT ci95_halfwidth FROM dp_pg.error_bars(
		'SELECT dp_count(1, ''laplace(epsilon=0.005)'') FROM small'))
	FROM dp_pg.error_bars('SELECT dp_sum(quantity, 1, 20, ''laplace(epsilon=1)'') FROM orders')}),
	't', 'the sum is planned as integer Laplace noise of t = 200 (a count at epsilon 1/200)');
my $a = laplace_mean_bound($N, $t, $alpha);
for my $case ([ 'orders', 125000, 305000 ], [ 'orders9', 2700 + 20000, 3000 + 20000 ])
{
	my ($tbl, $truth, $old) = @$case;
	is($node->safe_psql('postgres', qq{SELECT sum(least(greatest(s, least(n, 10)), least(n, 10) * 20))
		|| ' ' || sum(least(greatest(s, 10), 200)) FROM (SELECT count(quantity) n, sum(quantity) s FROM $tbl GROUP BY customer) u}),
		"$truth $old", "$tbl: bounded truth $truth, old rule $old");
	my @v = run_script("SELECT dp_sum(quantity, 1, 20, 'laplace(epsilon=1)') FROM $tbl;\n" x $N);
	die "expected $N releases" if @v != $N;
	my $mean = sum(@v) / $N;
	ok(abs($mean - $truth) <= $a,
		sprintf('%s: mean of %d releases %.1f is within %.1f of the bounded truth %d', $tbl, $N, $mean, $a, $truth));
	# control: the releases the old rule gives with the same noise draws
	my $old_mean = $mean + ($old - $truth);
	ok(abs($old_mean - $truth) > $a,
		sprintf('control, %s: the old rule (mean %.1f) is rejected', $tbl, $old_mean));
}

# ------------------------------------------------------------------------
# B. An average's interval

# the true (bounded) averages and counts per group
my %truth_av = map { my @f = split /\|/; ($f[0] => [ $f[1], $f[2] ]) }
  run_script(q{SELECT grp, avg(v::float8), count(*) FROM av GROUP BY grp});
my %truth_avu = map { my @f = split /\|/; ($f[0] => [ $f[1], $f[2] ]) } run_script(q{
	SELECT grp, sum(least(n, 3) * m) / sum(least(n, 3)), sum(least(n, 3))
	FROM (SELECT pid, grp, count(*) n, avg(v::float8) m FROM avu GROUP BY pid, grp) u GROUP BY grp});

# Releases of a grouped average; the (value, lower, upper, truth, count) of each group.
sub avg_intervals
{
	my ($tbl, $truth, $reps) = @_;
	my $script = '';
	$script .= "SELECT 'R', grp, dp_avg(v, 0, 100, 'laplace(epsilon=1)') FROM $tbl GROUP BY grp;\n"
	  . "SELECT 'L', value, ci95_lower, ci95_upper FROM dp_pg.last_releases;\n" for 1 .. $reps;
	my (@res, %group_of);
	for my $line (run_script($script))
	{
		my @f = split /\|/, $line;
		if ($f[0] eq 'R') { $group_of{ $f[2] } = $f[1]; next; }
		my $g = $group_of{ $f[1] };
		die "no group for released value $f[1]" unless defined $g;
		push @res, [ $f[1], $f[2], $f[3], @{ $truth->{$g} } ];
		%group_of = () if @res % 4 == 0;
	}
	die 'expected ' . 4 * $reps . ' intervals, got ' . scalar(@res) if @res != 4 * $reps;
	return @res;
}

for my $case ([ 'av', \%truth_av ], [ 'avu', \%truth_avu ])
{
	my ($tbl, $truth) = @$case;
	my @iv = avg_intervals($tbl, $truth, 1000);
	my $m = scalar @iv;
	my $thr = binomial_upper($m, 0.05, 1e-10);
	my $miss = grep { $_->[3] < $_->[1] || $_->[3] > $_->[2] } @iv;
	ok($miss < $thr, sprintf("%s: the average's 95%% interval missed %d of %d (fewer than %d needed)", $tbl, $miss, $m, $thr));
	my $miss_third = grep {
		my ($v, $l, $u, $x) = @$_;
		$x < $v - ($v - $l) / 3 || $x > $v + ($u - $v) / 3
	} @iv;
	ok($miss_third >= $thr,
		sprintf('control, %s: the intervals at a third of their width are rejected (%d of %d missed)', $tbl, $miss_third, $m));
	diag(sprintf('%s: coverage %.4f; at a third of the width %.4f', $tbl, 1 - $miss / $m, 1 - $miss_third / $m));
}

# ------------------------------------------------------------------------
# C. A quantile's rank interval

# Ranks of released medians of $tbl (values 0.01 and 0.1, t0 of each): the rank error of each.
sub rank_errors
{
	my ($tbl, $t0, $reps) = @_;
	my @v = run_script("SELECT dp_quantile(v, 0.5, 0, 100, 'laplace(epsilon=1)') FROM $tbl;\n" x $reps);
	# #values below the answer: 0 below 0.01, t0 up to 0.1, 2 t0 above; the median asks for rank t0
	return map { my $cum = $_ <= 0.01 ? 0 : ($_ <= 0.1 ? $t0 : 2 * $t0); abs($cum - $t0) } @v;
}
my $rank_h = $node->safe_psql('postgres',
	q{SELECT ci95_rank_halfwidth FROM dp_pg.error_bars('SELECT dp_quantile(v, 0.5, 0, 100, ''laplace(epsilon=1)'') FROM q20')});
is($rank_h, 19, 'rank interval at epsilon 1: ceil((ln 1024 + ln 19) / 0.5) - 1 = 19 ranks');
{
	my @err = rank_errors('q20', 20, 2000);
	my $thr = binomial_upper(2000, 0.05, 1e-10);
	my $miss = grep { $_ > $rank_h } @err;
	ok($miss < $thr, sprintf('rank interval +-%d missed %d of 2000 (fewer than %d needed)', $rank_h, $miss, $thr));
	my $lthr = binomial_lower(2000, 0.04, 1e-10);
	ok($miss > $lthr, sprintf('rank interval +-%d within a point of 95%% on this data: missed %d of 2000 (more than %d needed)',
		$rank_h, $miss, $lthr));
	my @cerr = rank_errors('q7', 7, 300);
	my $cthr = binomial_upper(300, 0.05, 1e-10);
	my $cmiss = grep { $_ > 6 } @cerr;
	ok($cmiss >= $cthr, sprintf('control: a rank interval of +-6 (no union over the boundaries) is rejected (%d of 300 missed)', $cmiss));
}

# ------------------------------------------------------------------------
# D. Extremes of a small group

{
	my @pairs = map { [ split /\|/ ] } run_script(
		"SELECT dp_quantile(v, 0, 0, 100, 'laplace(epsilon=1)'), dp_quantile(v, 1, 0, 100, 'laplace(epsilon=1)') FROM small;\n" x 1000);
	my $cross = grep { $_->[0] > $_->[1] } @pairs;
	my $thr = binomial_upper(1000, 0.05, 1e-10);
	ok($cross < $thr, sprintf('10 values: the minimum came out above the maximum in %d of 1000 pairs (fewer than %d needed)', $cross, $thr));
	diag(sprintf('mean minimum %.1f, mean maximum %.1f (values 41..50)',
		sum(map { $_->[0] } @pairs) / 1000, sum(map { $_->[1] } @pairs) / 1000));
	my @bi = map { [ split /\|/ ] } run_script("SELECT min(v), max(v) FROM small;\n" x 300, 'ana');
	my $bcross = grep { $_->[0] > $_->[1] } @bi;
	my $bthr = binomial_upper(300, 0.05, 1e-10);
	ok($bcross < $bthr, sprintf("an analyst's min() / max(): crossed in %d of 300 (fewer than %d needed)", $bcross, $bthr));
}

done_testing();
