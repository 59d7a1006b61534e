# User-level privacy of privacy units, measured on neighbouring datasets.
#
# D  = 300 light units (1-3 rows each, in at most 2 groups) + one heavy unit
#      (pid 0) with 1,000 rows spread over groups a, b, c, d (250 each);
# D' = D without the heavy unit.
# Both are protected with the unit pid, max_groups_contributed g = 2 and
# max_rows_per_unit r = 2, and queried by the superuser (bounded like anyone,
# charged to no budget).  The same dp query runs N times on each; from the
# released values we bound the privacy loss of threshold events
# S = {stat >= t} and {stat <= t} over a fixed grid of t:
#
#   LCB(S) = ln( L_D(S) / U_D'(S) )   (and the same with D and D' swapped)
#
# where L / U are one-sided Chernoff (KL) confidence bounds on a binomial
# proportion: with k of n samples in S, U = max{p >= k/n : n kl(k/n, p) <= c}
# and L = min{p <= k/n : n kl(k/n, p) <= c}; by Chernoff's inequality
# P(p > U) <= e^-c and P(p < L) <= e^-c.  Every LCB is a valid lower bound on
# that event's loss unless one of its two proportion bounds fails, so the
# assertion "max LCB <= epsilon" fails when the mechanism is epsilon-DP only
# if some proportion bound fails.  Union bound: the grids below are fixed in
# advance; each event needs 4 proportion bounds (L and U on each side, for
# both directions), so with M = 4 * (number of events of the two asserted
# shapes) we take c = ln(2M / 1e-9): those assertions fail by chance with
# probability at most 5e-10.  The positive controls fail by chance with
# probability < 1e-16 in all (Chernoff bounds at the sample sizes used, in
# their comments), the checks of exact values cannot (one < 1e-22): the whole
# test fails by chance with probability at most 1e-9.
#
# Shapes:
#  * dp_count(*) with laplace(epsilon=1), no GROUP BY: the heavy unit adds
#    exactly r = 2 and the noise is calibrated for sensitivity 2, so the loss
#    of a tail event is exactly 1 (point estimate near 1);
#  * GROUP BY grp (public keys a..e), laplace(epsilon=1) split over g = 2
#    cells: the heavy unit adds r = 2 to 2 of its 4 groups chosen at random;
#    events on each group, on the sum over a..d and on min / max over a..d
#    (min over a..d in the upper tail and max in the lower: loss exactly 1).
#  * a join of two protected tables on their unit (src/guard/unitjoin.c):
#    the rows above (g = 2, r = 2) joined to a table of one row per unit but
#    two for the heavy unit (g = 1, r = 1): its 1,000 rows meet 2 rows each,
#    2,000 joined rows, bounded to r1 r2 = 2, noise for 2: loss exactly 1.
# Positive controls (same estimator, same c; each must exceed epsilon = 1):
#  * C1: copies protected WITHOUT a unit (a row is a person): the heavy unit
#    moves the count by 1,000 while the noise is calibrated for 1;
#  * C2: what a core that bounds rows to r but calibrates for sensitivity 1
#    would release at epsilon 1 (true loss 2) - the unit tables queried with
#    laplace(epsilon=2);
#  * C3: what a core that ignores max_groups_contributed would release (all 4
#    of the heavy unit's groups kept, noise for 2; true loss 2) - tables with
#    g = 4 queried with laplace(epsilon=2), i.e. the same per-cell noise;
#  * C4: the join with noise for half its sensitivity (what a core that bounds
#    each table but not the joined rows' product would release when both
#    declarations are 2; true loss 2) - the join queried with laplace(epsilon=2).
use strict;
use warnings;
use IPC::Run;
use List::Util qw(max min sum);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $N = 20000;       # samples per dataset and query shape
my $N_c3 = 30000;    # control C3 needs more (see there)
my @keys = qw(a b c d e);
my @heavy_keys = qw(a b c d);

# ------------------------------------------------------------------------
# Statistics

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
	return $hi;    # >= the root: conservative
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
	return $lo;    # <= the root: conservative
}

# Number of values >= t in a sorted array.
sub count_ge
{
	my ($s, $t) = @_;
	my ($lo, $hi) = (0, scalar @$s);    # first index with value >= t
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

# Scan the events of statistics [name, lo, hi] computed on both samples
# (hashes name => array); returns the largest LCB of the privacy loss and the
# largest point estimate among events with >= $min_k samples on both sides.
sub loss_scan
{
	my ($stats, $sd, $sn, $c, $min_k) = @_;
	my %r = (lcb => -9**9**9, est => -9**9**9, lcb_at => '', est_at => '', events => 0);
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
				$r{events}++;
				my ($ka, $kb) = @{ $k{$ev} };
				for my $dir ([ $ka, $na, $kb, $nb, "D/D'" ], [ $kb, $nb, $ka, $na, "D'/D" ])
				{
					my ($k1, $n1, $k2, $n2, $label) = @$dir;
					my $l = lcb($k1, $n1, $c);
					if ($l > 0)
					{
						my $v = log($l / ucb($k2, $n2, $c));
						($r{lcb}, $r{lcb_at}) = ($v, "$name $ev, $label ($k1 vs $k2)") if $v > $r{lcb};
					}
					if ($k1 >= $min_k && $k2 >= $min_k)
					{
						my $v = log(($k1 / $n1) / ($k2 / $n2));
						($r{est}, $r{est_at}) = ($v, "$name $ev, $label ($k1 vs $k2)") if $v > $r{est};
					}
				}
			}
		}
	}
	return \%r;
}

# ------------------------------------------------------------------------
# Events (fixed before any sampling; statistics are centred on D''s exact
# bounded values, so the grids cover the noise far into its tails:
# Laplace scale 2 for the count, 4 per group).

my @count_stats = ([ 'count', -40, 42 ]);
my @group_stats = (
	(map { [ "group $_", -80, 82 ] } @keys),
	[ 'sum a..d', -220, 228 ],
	[ 'min a..d', -80, 82 ],
	[ 'max a..d', -80, 82 ]);
my $M = 4 * (2 * n_events(@count_stats) + n_events(@group_stats));
my $c = log(2 * $M / 1e-9);

# ------------------------------------------------------------------------
# Cluster and data

my $node = PostgreSQL::Test::Cluster->new('units');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dp_pg'");
$node->start;
my $keylist = join(',', map { "'$_'" } @keys);
$node->safe_psql('postgres', qq{
	CREATE EXTENSION dp_pg;
	-- light unit u: 1 + u % 3 rows; odd units alternate between two groups
	CREATE TABLE base AS
		SELECT u AS pid, (ARRAY[$keylist])[1 + (u + (j % 2) * (u % 2)) % 5] AS grp
		FROM generate_series(1, 300) u, generate_series(1, 1 + u % 3) j;
	-- the heavy unit: 1,000 rows, 250 in each of a, b, c, d
	INSERT INTO base SELECT 0, (ARRAY['a','b','c','d'])[1 + j % 4] FROM generate_series(1, 1000) j;
	CREATE FUNCTION make_pair(name text, unit name, g int, r int) RETURNS void LANGUAGE plpgsql AS \$\$
	BEGIN
		EXECUTE format('CREATE TABLE %I AS SELECT * FROM base', 'd_' || name);
		EXECUTE format('CREATE TABLE %I AS SELECT * FROM base WHERE pid <> 0', 'dn_' || name);
		PERFORM dp_pg.protect(('d_' || name)::regclass, unit, g, r);
		PERFORM dp_pg.protect(('dn_' || name)::regclass, unit, g, r);
		PERFORM dp_pg.set_public_keys(('d_' || name)::regclass, 'grp', ARRAY[$keylist]);
		PERFORM dp_pg.set_public_keys(('dn_' || name)::regclass, 'grp', ARRAY[$keylist]);
	END \$\$;
	SELECT make_pair('unit', 'pid', 2, 2);    -- the setting under test
	SELECT make_pair('row', NULL, 1, 1);      -- C1: no unit, a row is a person
	SELECT make_pair('g4', 'pid', 4, 2);      -- C3: all 4 groups of the heavy unit kept
	-- one row per unit, two for the heavy unit, joined to d_unit / dn_unit on the unit
	CREATE TABLE d_per AS SELECT u AS pid FROM generate_series(0, 300) u UNION ALL SELECT 0;
	CREATE TABLE dn_per AS SELECT u AS pid FROM generate_series(1, 300) u;
	SELECT dp_pg.protect('d_per', 'pid', 1, 1);
	SELECT dp_pg.protect('dn_per', 'pid', 1, 1);
	-- N releases of one dp query, one line per release: "key:value key:value ..."
	CREATE FUNCTION dp_samples(q text, n int) RETURNS SETOF text LANGUAGE plpgsql AS \$\$
	DECLARE
		rec record;
		line text;
	BEGIN
		FOR i IN 1 .. n LOOP
			line := '';
			FOR rec IN EXECUTE q LOOP
				line := line || rec.k || ':' || rec.v || ' ';
			END LOOP;
			RETURN NEXT line;
		END LOOP;
	END \$\$;
});
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
  or die 'ledger not ready';

# The design: every light unit has at most g = 2 cells (so D''s bounded values
# are deterministic) and the heavy unit has 250 rows in each of a..d.
is($node->safe_psql('postgres', q{
	SELECT max(n) FROM (SELECT pid, count(DISTINCT grp) n FROM base WHERE pid <> 0 GROUP BY pid) s}),
	'2', 'light units have at most 2 groups');

# Exact bounded values of D' (no GROUP BY: one cell per unit, min(rows, r)).
my $count_n = $node->safe_psql('postgres', q{
	SELECT sum(least(n, 2)) FROM (SELECT pid, count(*) n FROM base WHERE pid <> 0 GROUP BY pid) s});
my $count_rows_n = $node->safe_psql('postgres', q{SELECT count(*) FROM base WHERE pid <> 0});
my %group_n = map { split /\|/ } split /\n/, $node->safe_psql('postgres', q{
	SELECT grp, sum(least(n, 2)) FROM (SELECT pid, grp, count(*) n FROM base WHERE pid <> 0 GROUP BY 1, 2) s
	GROUP BY grp ORDER BY grp});
is(join(',', sort keys %group_n), join(',', @keys), 'D\' has rows in every group');

my $count_q = q{SELECT 'all'::text AS k, dp_count(*) AS v FROM %s};
# (%s: d or dn) the rows joined to the per-unit table on the unit
my $join_q = q{SELECT 'all'::text AS k, dp_count(*) AS v FROM %1$s_unit o JOIN %1$s_per p USING (pid)};
my $group_q = q{SELECT grp AS k, dp_count(*) AS v FROM %s GROUP BY grp ORDER BY grp};

# Parse "key:value ..." lines into arrays of hashes.
sub parse_lines
{
	my ($out) = @_;
	my @rows;
	for my $line (split /\n/, $out)
	{
		my %h = map { split /:/ } split ' ', $line;
		push @rows, \%h;
	}
	return \@rows;
}

# Run dp_samples on several tables concurrently (2 cores: the two datasets
# of a pair at once); returns one array of releases per job.
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
			[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
			  '-c', "SET dp_pg.default_mechanism = '$mech'",
			  '-c', "SELECT * FROM dp_samples('$q', $n)" ],
			'>', \$out[$i], '2>', \$err[$i]);
	}
	my @res;
	for my $i (0 .. $#jobs)
	{
		$h[$i]->finish;
		die "sampling $jobs[$i][1] failed: $err[$i]" if $h[$i]->result != 0 || $err[$i] ne '';
		push @res, parse_lines($out[$i]);
		die "sampling $jobs[$i][1]: " . scalar(@{ $res[-1] }) . " releases, expected $n"
		  unless @{ $res[-1] } == $n;
	}
	return @res;
}

# Statistics of count releases, centred on D''s exact value.
sub count_stat
{
	my ($rows, $centre) = @_;
	return { count => [ map { $_->{all} - $centre } @$rows ] };
}

# Statistics of GROUP BY releases, centred on D''s exact values.
sub group_stat
{
	my ($rows) = @_;
	my %s;
	for my $r (@$rows)
	{
		die 'a release without exactly the 5 public keys: ' . join(' ', %$r)
		  unless join(',', sort keys %$r) eq join(',', @keys);
		my %z = map { $_ => $r->{$_} - $group_n{$_} } @keys;
		push @{ $s{"group $_"} }, $z{$_} for @keys;
		push @{ $s{'sum a..d'} }, sum(@z{@heavy_keys});
		push @{ $s{'min a..d'} }, min(@z{@heavy_keys});
		push @{ $s{'max a..d'} }, max(@z{@heavy_keys});
	}
	return \%s;
}

# ------------------------------------------------------------------------
# Exact bounded values (dp_pg.debug_noiseless, test builds): the premise of
# the statistics.  The heavy unit adds exactly r = 2 to the count, and 2 to
# exactly 2 of a..d (random ones) under GROUP BY; without a unit, 1,000.

sub noiseless
{
	my ($q) = @_;
	return $node->safe_psql('postgres', "SET dp_pg.debug_noiseless = on; $q");
}
is(noiseless(sprintf($count_q, 'dn_unit')), "all|$count_n", "D': bounded count is $count_n");
is(noiseless(sprintf($count_q, 'd_unit')), 'all|' . ($count_n + 2), 'D: the heavy unit adds exactly r = 2');
is(noiseless(sprintf(q{SELECT dp_count(*) FROM %s}, 'd_row')), $count_rows_n + 1000,
	'without a unit the heavy unit adds 1,000');
is(noiseless(sprintf($join_q, 'dn')), "all|$count_n", "D' joined on the unit: bounded count is $count_n");
is(noiseless(sprintf($join_q, 'd')), 'all|' . ($count_n + 2),
	'D joined on the unit: the heavy unit\'s 2,000 joined rows add exactly r1 r2 = 2');
is(noiseless(sprintf($group_q, 'dn_unit')),
	join("\n", map { "$_|$group_n{$_}" } @keys), "D': bounded group counts");
my (%pairs, $bad);
for (1 .. 30)
{
	my %v = map { split /\|/ } split /\n/, noiseless(sprintf($group_q, 'd_unit'));
	my @up = grep { ($v{$_} // 0) != $group_n{$_} } @keys;
	$bad .= join(' ', %v) . '; ' if @up != 2 || grep({ $v{$_} != $group_n{$_} + 2 || $_ eq 'e' } @up);
	$pairs{"@up"}++;
}
ok(!defined $bad, 'GROUP BY: the heavy unit adds exactly 2 to exactly 2 of its groups')
  or diag "bad releases: $bad";
# all 30 runs on one pair by chance: 6 * 6^-30 < 1e-22
ok(keys %pairs > 1, 'the 2 kept groups are chosen at random (' . join(', ', sort keys %pairs) . ')');

# ------------------------------------------------------------------------
# The statistics below sample src/core's noise and agg_units' choice of cells,
# the same C on every server version.  test/all.sh runs them once, on its
# PostgreSQL 15 leg, and sets DP_TAP_STATISTICS=0 on its other leg (the
# newest PostgreSQL, under the sanitizers, where they would take ~8 CPU
# minutes): there the exact checks above are what the version can change.

if (($ENV{DP_TAP_STATISTICS} // '1') eq '0')
{
	is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger WHERE kind = 'charge'}), '0',
		'superuser queries charge no budget');
	diag 'DP_TAP_STATISTICS=0: exact checks only, the statistics run on another leg';
	done_testing();
	exit 0;
}

# ------------------------------------------------------------------------
# dp_count(*): D vs D'

diag sprintf 'N = %d per dataset (%d for C3); %d asserted events, c = ln(2M / 1e-9) = %.2f',
  $N, $N_c3, $M / 4, $c;
my $t0 = time;
my ($sd, $sn) = sample('laplace(epsilon=1)', $N, [ $count_q, 'd_unit' ], [ $count_q, 'dn_unit' ]);
my $r = loss_scan(\@count_stats, count_stat($sd, $count_n), count_stat($sn, $count_n), $c, 500);
diag sprintf 'count (r = 2): loss point estimate %.3f at %s; max LCB %.3f at %s [%.0fs]',
  $r->{est}, $r->{est_at}, $r->{lcb}, $r->{lcb_at}, time - $t0;
ok($r->{lcb} <= 1, sprintf('bounded dp_count: no event shows a loss above epsilon = 1 (max LCB %.3f)', $r->{lcb}));

# C1: no unit.  Expected: D' never reaches count + 500 (P <= 2N e^-500) while
# D always does; then LCB = ln(e^(-c/N) / (1 - e^(-c/N))) ~ 6.5 >> 1 for any
# N >= 1000: this control fails by chance with probability < 1e-200.
$t0 = time;
($sd, $sn) = sample('laplace(epsilon=1)', $N, [ $count_q, 'd_row' ], [ $count_q, 'dn_row' ]);
$r = loss_scan([ [ 'count', -40, 1040 ] ], count_stat($sd, $count_rows_n), count_stat($sn, $count_rows_n), $c, 500);
diag sprintf 'C1 count without a unit: max LCB %.3f at %s [%.0fs]', $r->{lcb}, $r->{lcb_at}, time - $t0;
ok($r->{lcb} > 1, sprintf('control C1 (no unit, heavy unit counts 1,000 times): caught, LCB %.3f > 1', $r->{lcb}));

# C2: noise for sensitivity 1, shift 2 (true loss 2).  At the event
# {count <= c'}, p_D' = 1 / (1 + e^-1) = 0.731 and p_D = e^-2 p_D' (discrete
# Laplace, scale 1); by Chernoff's inequality on both counts the LCB of that
# event falls to 1 with probability < 1e-300 at N = 20,000 (expected ~ 1.8).
$t0 = time;
($sd, $sn) = sample('laplace(epsilon=2)', $N, [ $count_q, 'd_unit' ], [ $count_q, 'dn_unit' ]);
$r = loss_scan(\@count_stats, count_stat($sd, $count_n), count_stat($sn, $count_n), $c, 500);
diag sprintf 'C2 count, noise for sensitivity 1: point estimate %.3f; max LCB %.3f at %s [%.0fs]',
  $r->{est}, $r->{lcb}, $r->{lcb_at}, time - $t0;
ok($r->{lcb} > 1, sprintf('control C2 (true loss 2): caught, LCB %.3f > 1', $r->{lcb}));

# ------------------------------------------------------------------------
# dp_count(*) over the join on the unit: D vs D'

$t0 = time;
($sd, $sn) = sample('laplace(epsilon=1)', $N, [ $join_q, 'd' ], [ $join_q, 'dn' ]);
$r = loss_scan(\@count_stats, count_stat($sd, $count_n), count_stat($sn, $count_n), $c, 500);
diag sprintf 'join on the unit (r1 r2 = 2): loss point estimate %.3f at %s; max LCB %.3f at %s [%.0fs]',
  $r->{est}, $r->{est_at}, $r->{lcb}, $r->{lcb_at}, time - $t0;
ok($r->{lcb} <= 1, sprintf('bounded join on the unit: no event shows a loss above epsilon = 1 (max LCB %.3f)', $r->{lcb}));

# C4: the join with noise for sensitivity 1, shift 2 (true loss 2): as C2,
# caught with probability > 1 - 1e-300 at N = 20,000.
$t0 = time;
($sd, $sn) = sample('laplace(epsilon=2)', $N, [ $join_q, 'd' ], [ $join_q, 'dn' ]);
$r = loss_scan(\@count_stats, count_stat($sd, $count_n), count_stat($sn, $count_n), $c, 500);
diag sprintf 'C4 join, noise for half its sensitivity: point estimate %.3f; max LCB %.3f at %s [%.0fs]',
  $r->{est}, $r->{lcb}, $r->{lcb_at}, time - $t0;
ok($r->{lcb} > 1, sprintf('control C4 (true loss 2): caught, LCB %.3f > 1', $r->{lcb}));

# ------------------------------------------------------------------------
# GROUP BY grp (public keys), g = 2: D vs D'

$t0 = time;
($sd, $sn) = sample('laplace(epsilon=1)', $N, [ $group_q, 'd_unit' ], [ $group_q, 'dn_unit' ]);
$r = loss_scan(\@group_stats, group_stat($sd), group_stat($sn), $c, 500);
diag sprintf 'GROUP BY (g = 2, r = 2): loss point estimate %.3f at %s; max LCB %.3f at %s [%.0fs]',
  $r->{est}, $r->{est_at}, $r->{lcb}, $r->{lcb_at}, time - $t0;
ok($r->{lcb} <= 1, sprintf('bounded GROUP BY: no event shows a loss above epsilon = 1 (max LCB %.3f)', $r->{lcb}));

# C3: all 4 groups of the heavy unit kept, noise for 2 (true loss 2).  At
# the event {min a..d >= 2}, p_D' = (e^-0.5 / (1 + e^-0.25))^4 = 0.0135 and
# p_D = e^2 p_D' (discrete Laplace, scale 4, in each group); by Chernoff's
# inequality on both counts the LCB of that event falls to 1 with probability
# < 3e-17 at N = 30,000 (expected ~ 1.5).
$t0 = time;
($sd, $sn) = sample('laplace(epsilon=2)', $N_c3, [ $group_q, 'd_g4' ], [ $group_q, 'dn_g4' ]);
$r = loss_scan(\@group_stats, group_stat($sd), group_stat($sn), $c, 500);
diag sprintf 'C3 GROUP BY, g ignored: point estimate %.3f; max LCB %.3f at %s [%.0fs]',
  $r->{est}, $r->{lcb}, $r->{lcb_at}, time - $t0;
ok($r->{lcb} > 1, sprintf('control C3 (true loss 2): caught, LCB %.3f > 1', $r->{lcb}));

# Nothing was charged: the superuser has no budget.
is($node->safe_psql('postgres', q{SELECT count(*) FROM dp_pg.ledger WHERE kind = 'charge'}), '0',
	'superuser queries charge no budget');

done_testing();
