# count(DISTINCT <privacy unit>): the number of persons, each counted once,
# released with noise calibrated for sensitivity 1 per unit.
#
# A table of 300 units with 1 to 20 rows each, protected with the unit pid
# (max_groups_contributed 1, max_rows_per_unit 5).  An analyst's
#
#   SELECT count(DISTINCT pid) FROM t
#
# is planned as a bounded count of one per unit (src/guard/translate.c,
# units.c).  Its truth is 300 (not the 5-per-unit bounded row count); with
# dp_pg.default_mechanism = laplace(epsilon=0.5) its noise must be discrete
# Laplace exp(-|k| / t) with t = 1 / 0.5 = 2, p = e^(-1/t), whose tails are
#
#   P(|Z| >= k) = 2 p^k / (1 + p)  (k >= 1),   P(Z >= 1) = p / (1 + p),
#
# and variance 2p / (1 - p)^2.  From N = 4000 releases the test checks the
# empirical frequency of four events (|Z| >= 1, 3, 6 and Z >= 1) against
# these exact probabilities with a two-sided Chernoff (KL) bound: with k of n
# in the event and probability q, n kl(k/n, q) > c has probability at most
# 2 e^-c, so with c = ln(2 * 4 / 1e-9) the four checks fail by chance with
# probability at most 1e-9.  The sample variance is reported beside its
# exact value.
#
# Positive control: the same estimator on releases with laplace(epsilon=1)
# - what a count calibrated for half the needed noise would release - must
# be rejected (its |Z| >= 1 frequency is 0.54 against 0.76: n kl > 400, so
# it passes by chance with probability < e^-300).
use strict;
use warnings;
use List::Util qw(sum);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $N = 4000;
my $TRUTH = 300;

my $node = PostgreSQL::Test::Cluster->new('distinct');
$node->init;
$node->append_conf('postgresql.conf', qq{shared_preload_libraries = 'dp_pg'});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION dp_pg;
	CREATE ROLE ana LOGIN;
	CREATE TABLE t AS SELECT p AS pid, k FROM generate_series(1, 300) p, generate_series(1, 1 + p % 20) k;
	SELECT dp_pg.protect('t', 'pid', 1, 5);
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'}) or die 'ledger not ready';
$node->safe_psql('postgres', q{SELECT dp_pg.set_budget('ana', 1e9, NULL)});

# N releases of the analyst's count(DISTINCT pid) with the given mechanism
sub releases
{
	my ($mech) = @_;
	my $script = "SET dp_pg.default_mechanism = '$mech';\n" . ("SELECT count(DISTINCT pid) FROM t;\n" x $N);
	my ($ret, $out, $err) = $node->psql('postgres', $script, extra_params => [ '-U', 'ana', '-At' ]);
	die "releases failed: $err" if $ret != 0;
	my @v = grep { /^-?\d+$/ } split /\n/, $out;
	die 'expected ' . $N . ' releases, got ' . scalar(@v) if @v != $N;
	return @v;
}

sub kl
{
	my ($a, $b) = @_;
	my $t = 0;
	$t += $a * log($a / $b) if $a > 0;
	$t += (1 - $a) * log((1 - $a) / (1 - $b)) if $a < 1;
	return $t;
}

my $c = log(2 * 4 / 1e-9);

# the four events' n kl statistics for releases @v against epsilon $eps
sub stats
{
	my ($eps, @v) = @_;
	my $p = exp(-$eps);    # t = 1 / eps (sensitivity 1)
	my @z = map { $_ - $TRUTH } @v;
	my %q = (
		'|Z|>=1' => 2 * $p / (1 + $p),
		'|Z|>=3' => 2 * $p**3 / (1 + $p),
		'|Z|>=6' => 2 * $p**6 / (1 + $p),
		'Z>=1'   => $p / (1 + $p));
	my %hit = (
		'|Z|>=1' => scalar(grep { abs($_) >= 1 } @z),
		'|Z|>=3' => scalar(grep { abs($_) >= 3 } @z),
		'|Z|>=6' => scalar(grep { abs($_) >= 6 } @z),
		'Z>=1'   => scalar(grep { $_ >= 1 } @z));
	my %s;
	$s{$_} = [ $N * kl($hit{$_} / $N, $q{$_}), $hit{$_} / $N, $q{$_} ] for keys %q;
	my $var = sum(map { $_ * $_ } @z) / $N;
	return (\%s, $var, 2 * $p / (1 - $p)**2);
}

my @v = releases('laplace(epsilon=0.5)');
my ($s, $var, $exact) = stats(0.5, @v);
for my $e (sort keys %$s)
{
	my ($stat, $freq, $q) = @{ $s->{$e} };
	ok($stat <= $c, sprintf('count(DISTINCT unit), epsilon 0.5: P(%s) %.4f vs exact %.4f (n kl %.2f <= %.2f)',
			$e, $freq, $q, $stat, $c));
}
diag(sprintf('sample variance %.3f, exact variance of the calibrated noise %.3f', $var, $exact));
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger_entries WHERE kind = 'charge' AND role = 'ana'::regrole}),
	$N, 'every release charged');
is($node->safe_psql('postgres',
	q{SELECT DISTINCT (s->>'l1') || ' ' || (s->>'scale') FROM dp_pg.ledger_entries e, jsonb_array_elements(e.detail->'sites') s
	  WHERE e.kind = 'charge' AND e.role = 'ana'::regrole}),
	'1 2', 'planned for sensitivity 1 (one per unit), scale 2');

# positive control: half the noise must be caught
my @w = releases('laplace(epsilon=1)');
my ($sw) = stats(0.5, @w);
my $worst = (sort { $b <=> $a } map { $sw->{$_}[0] } keys %$sw)[0];
ok($worst > $c, sprintf('positive control (epsilon 1 judged as 0.5) rejected: max n kl %.1f > %.2f', $worst, $c));

done_testing();
