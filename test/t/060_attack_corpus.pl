# The attack corpus: a hostile analyst against protected tables, judged by
# automatic oracles (test/attack/README.md describes the format and oracles).
#
# A cluster with dp_pg (and pg_stat_statements, when installed) preloaded;
# test/attack/setup.sql runs as superuser with canaries generated here (random
# per run); then every attack of test/attack/*.atk runs as the analyst in its
# own psql session, and one ok() per attack says whether all its oracles held:
#
#   canary   no canary string (or its hex/upper/lower form) and no numeric
#            canary (exact row counts, sizes, sums) appears in anything the
#            analyst receives: rows, errors with detail/hint/context, notices;
#   speech   the analyst receives at most `speech` (default 3) notices,
#            warnings, infos, logs or debug messages;
#   charge   the analyst's ledger charges (dp_pg.ledger_entries, read as
#            superuser) around the attack: a failed probe statement charges
#            at most `release` (default 0); with reads=1 a probe that
#            succeeded must have been charged;
#   counters every "@ctr NAME=VALUE" row the attack prints keeps one value
#            per NAME or is NULL;
#   near     near=NAME:TOL: no number in the output within TOL (absolute, or
#            a percentage) of numeric canary NAME;
#   forbid   forbid=REGEX: no row the analyst receives matches REGEX (for
#            attacks that compute a tell-tale boolean from released values);
#   twin     twin=A|B: the attack runs with {{T}} = A and then = B; what the
#            analyst observes (SQLSTATEs, number of messages, and with
#            twinsig=out the rows) must be the same;
#   (role=atk_greedy runs an attack as the analyst whose budget has no delta
#   limit; charges are counted for the role that ran the attack)
#   other    concurrent=K: an honest analyst runs K dp queries in another
#            session meanwhile; every one must succeed.
#   todo=TAG marks an attack that leaks on this branch, known and described
#   (TAG names the finding): its leak is a TODO test (reported, not failed),
#   and prove reports it as passing unexpectedly once it no longer leaks.
#
# ATTACK_REPORT_ONLY=1 prints leaks as diagnostics and passes (for a branch
# whose guard is known to leak); by default every leak fails its ok().
# ATTACK_ONLY=regex runs only the attacks whose id matches; ATTACK_VERBOSE=1
# notes what the analyst received in each attack (its last run).
# The positive controls at the end must make every oracle fire, always.
use strict;
use warnings;
use File::Basename qw(dirname);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

our $TODO;    # known leaks (todo=): TODO tests

my $t_start = time;
my $report_only = $ENV{ATTACK_REPORT_ONLY} ? 1 : 0;
my $only = $ENV{ATTACK_ONLY} || undef;
my $root = $ENV{DP_ROOT} // dirname(__FILE__) . '/../..';
my $adir = "$root/test/attack";
-d $adir or BAIL_OUT("no attack directory $adir (set DP_ROOT)");

# ------------------------------------------------------------------------
# The corpus

# Parse an .atk file: "=== id" starts an attack, "key: value" lines follow,
# "---" starts its SQL, which runs to the next "===" or the end.  A line that
# begins with "#" is a comment anywhere (never SQL: psql has no such line).
sub parse_atk
{
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!";
	my (@attacks, $cur, $in_sql);
	while (my $line = <$fh>)
	{
		if ($line =~ /^=== (\S+)\s*$/)
		{
			push @attacks, $cur if $cur;
			$cur = { id => $1, file => $file, sql => '', opt => {} };
			$in_sql = 0;
			next;
		}
		next unless $cur;
		next if $line =~ /^#/;
		if ($in_sql) { $cur->{sql} .= $line; next; }
		if ($line =~ /^---\s*$/) { $in_sql = 1; next; }
		next if $line =~ /^\s*(#.*)?$/;
		if ($line =~ /^(class|desc):\s*(.*?)\s*$/) { $cur->{$1} = $2; next; }
		if ($line =~ /^oracle:\s*(.*?)\s*$/)
		{
			for my $kv (split /\s+/, $1)
			{
				my ($k, $v) = split /=/, $kv, 2;
				$cur->{opt}{$k} = $v // 1;
			}
			next;
		}
		die "$file: attack $cur->{id}: cannot parse: $line";
	}
	push @attacks, $cur if $cur;
	return @attacks;
}

my @attacks = map { parse_atk($_) } sort glob("$adir/*.atk");
# the classes of the corpus (test/attack/README.md): an attack names one of them
my %classes = map { $_ => 1 } qw(1-having 2-code 3-errors 4-joins 5-side 6-units 7-ledger 8-other 9-bi
  10-cache 11-quantile 12-keys 13-ddl 14-messages 17-synth 18-expr 19-releases 20-unitjoin 21-audit
  22-shapes 23-edges 24-total 25-partitions 26-perunit 27-rr);
my %seen;
for my $a (@attacks)
{
	die "duplicate attack id $a->{id}" if $seen{ $a->{id} }++;
	die "attack $a->{id}: no class" unless $a->{class};
	die "attack $a->{id}: unknown class $a->{class} (add it to the driver's list)" unless $classes{ $a->{class} };
	die "attack $a->{id}: no SQL" unless $a->{sql} =~ /\S/;
	die "attack $a->{id}: twin without {{T}}" if $a->{opt}{twin} && $a->{sql} !~ /\{\{T\}\}/;
	# (an unterminated last statement would be sent together with the driver's \echo)
	die "attack $a->{id}: the SQL must end with ; or a psql command" unless $a->{sql} =~ /(;|^\\.*|^--\@probe)\s*\z/m;
}
@attacks = grep { $_->{id} =~ /$only/ } @attacks if defined $only;

# ------------------------------------------------------------------------
# Canaries (random per run)

my $hex = join '', map { sprintf '%04x', int(rand(65536)) } 1 .. 4;
my $canary = "cnry_$hex";
my %param = (
	CNRY => $canary,
	NROWS => 40000 + int(rand(9000)),    # clinic.patients
	NHEAVY => 23000 + int(rand(6000)),   # rows of the heavy person in clinic.visits
	NEV => 31000 + int(rand(4000)),      # clinic.secret_events
	NPART => 35000 + int(rand(4000)),    # clinic.secret_part
	NPV => 4000 + int(rand(4000)),       # clinic.pvisits (class 25)
	SALT => int(rand(1e6)),
);

# ------------------------------------------------------------------------
# Cluster

my $port = $ENV{DP_ATTACK_PORT} || (56200 + int(rand(100)));
my $node = PostgreSQL::Test::Cluster->new('attack', port => $port);
$node->init;
my $pkglib = `pg_config --pkglibdir`;
chomp $pkglib;
my $have_pgss = -f "$pkglib/pg_stat_statements.so";
$node->append_conf('postgresql.conf', join "\n",
	"shared_preload_libraries = 'dp_pg" . ($have_pgss ? ",pg_stat_statements" : '') . "'",
	"max_parallel_workers_per_gather = 2",
	"log_min_messages = warning",
	"log_statement = none",
	"track_io_timing = on",
	"");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION dp_pg');
$node->poll_query_until('postgres', q{SELECT dp_pg.ledger_status() = 'ready'})
  or BAIL_OUT('dp_pg ledger not ready');

# setup.sql with its parameters substituted
sub read_file_subst
{
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!";
	local $/;
	my $s = <$fh>;
	$s =~ s/\@([A-Z]+)\@/exists $param{$1} ? $param{$1} : die "unknown parameter $1 in $file"/ge;
	return $s;
}
my $setup = read_file_subst("$adir/setup.sql");
my ($ret, $out, $err) = $node->psql('postgres', $setup,
	extra_params => [ '-v', 'ON_ERROR_STOP=1', '-v', "have_pgss=" . ($have_pgss ? 1 : 0) ]);
if ($ret != 0)
{
	diag($err);
	BAIL_OUT('setup.sql failed');
}
my $ctl_setup = read_file_subst("$adir/control_setup.sql");
($ret, $out, $err) = $node->psql('atk_ctl', $ctl_setup, extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
if ($ret != 0)
{
	diag($err);
	BAIL_OUT('control_setup.sql failed');
}

# The superuser's numbers: numeric canaries by name.
my %numc;
for my $line (split /\n/, $node->safe_psql('postgres', 'SELECT name, value FROM atk_meta.numeric_canaries()'))
{
	my ($n, $v) = split /\|/, $line;
	$numc{$n} = $v;
}
# exact canaries: only numbers too distinctive to appear by chance
my @exact_num = sort { $a <=> $b } grep { /^\d+$/ && $_ >= 1000 && $_ != 8192 && $_ != 16384 } values %numc;
my %u;
@exact_num = grep { !$u{$_}++ } @exact_num;
note("canary $canary; numeric canaries: " . join(', ', map { "$_=$numc{$_}" } sort keys %numc));

# No attack text may hold a canary.
for my $a (@attacks)
{
	my $t = lc $a->{sql};
	die "attack $a->{id} contains the canary" if index($t, lc $hex) >= 0;
	for my $n (@exact_num)
	{
		die "attack $a->{id} contains numeric canary $n" if $a->{sql} =~ /(?<![\d.])$n(?!\d)/;
	}
}

# ------------------------------------------------------------------------
# A persistent superuser session (ledger counts between attacks)

my ($su_in, $su_out, $su_err) = ('', '', '');
# the timeout bounds each statement (restarted in su_query), not the whole
# run: the corpus takes longer than 600 s on a slow server (sanitizers)
my $su_timeout = IPC::Run::timeout(600);
my $su = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres') ],
	'<' => \$su_in, '>' => \$su_out, '2>' => \$su_err,
	$su_timeout);
my $su_n = 0;

sub su_query
{
	my ($sql, $tolerant) = @_;
	my $mark = '@@SU' . (++$su_n) . '@@';
	$su_out = '';
	$su_err = '';
	$su_in .= "$sql;\n\\echo $mark\n";
	$su_timeout->start(600);
	$su->pump until $su_out =~ /\Q$mark\E\n/;
	(my $r = $su_out) =~ s/\Q$mark\E\n//;
	die "superuser query failed: $sql: $su_err" if $su_err =~ /ERROR/ && !$tolerant;
	chomp $r;
	return $r;
}

sub charges
{
	my ($role) = @_;
	$role //= 'atk_analyst';
	die "bad role $role" unless $role =~ /^atk_\w+$/;
	return su_query(qq{SELECT count(*) FROM dp_pg.ledger_entries
		WHERE role = '$role'::regrole AND kind = 'charge'});
}

# ------------------------------------------------------------------------
# Running one attack

my $preamble = <<'EOS';
\set ON_ERROR_STOP 0
\set VERBOSITY verbose
\set SHOW_CONTEXT always
\set QUIET on
SET statement_timeout = '20s';
EOS

# Run SQL as $role in $db; returns a hash of what the analyst saw.
sub run_sql
{
	my ($sql, %o) = @_;
	my $role = $o{role} // 'atk_analyst';
	my $db = $o{db} // 'postgres';
	my $body = $sql;
	$body =~ s/^--\@probe\s*$/\\echo \@\@PROBE :SQLSTATE/mg;
	my $script = $preamble . $body . "\n\\echo \@\@END :SQLSTATE\n";
	my ($in, $o1, $e1) = ($script, '', '');
	my $h = IPC::Run::start(
		[ 'psql', '-XAt', '-d', $node->connstr($db) . " user=$role", '-f', '-' ],
		'<' => \$in, '>' => \$o1, '2>' => \$e1,
		IPC::Run::timeout($o{timeout} // 90));
	eval { $h->finish; 1 } or do { $h->kill_kill; $e1 .= "\n(psql timed out)\n" };
	return analyse($o1, $e1);
}

# What the analyst observed: messages, SQLSTATEs, probe status, counters.
sub analyse
{
	my ($o, $e) = @_;
	my %r = (out => $o, err => $e, speech => 0, states => [], msgs => []);
	for my $l (split /\n/, $e)
	{
		if ($l =~ /^(?:psql:[^:]*:\d+: )?(NOTICE|WARNING|INFO|LOG|DEBUG\d?|ERROR|FATAL|PANIC):\s+(?:([0-9A-Z]{5}): )?/)
		{
			my ($lvl, $st) = ($1, $2 // '?????');
			if ($lvl =~ /ERROR|FATAL|PANIC/) { push @{ $r{states} }, $st; }
			else { $r{speech}++; push @{ $r{msgs} }, $l; }
		}
	}
	($r{probe}) = $o =~ /^\@\@PROBE (\S+)$/m;
	($r{end}) = $o =~ /^\@\@END (\S+)$/m;
	$r{end} //= 'NOEND';
	$r{probe} //= $r{end};
	my %ctr;
	while ($o =~ /^\@ctr ([\w.]+)=(.*)$/mg)
	{
		push @{ $ctr{$1} }, $2;
	}
	$r{ctr} = \%ctr;
	(my $rows = $o) =~ s/^\@\@(PROBE|END) .*\n?//mg;
	$r{rows} = $rows;
	return \%r;
}

# Numbers in a text.
sub numbers_in
{
	my ($t) = @_;
	return ($t =~ /(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)/gi);
}

# Check the canary oracles on what the analyst saw; returns problems.
sub canary_problems
{
	my ($r, $canary_hex) = @_;
	my @p;
	my $all = $r->{out} . "\n" . $r->{err};
	my $hexhex = unpack('H*', $canary_hex);
	for my $l (split /\n/, $all)
	{
		my $ll = lc $l;
		if (index($ll, lc $canary_hex) >= 0 || index($ll, $hexhex) >= 0)
		{
			push @p, "canary string: " . substr($l, 0, 300);
			last if @p > 3;
		}
	}
	# server source locations and psql's script line numbers are not data
	(my $data = $all) =~ s/^(LOCATION:.*|psql:[^:]*:\d+: )//mg;
	for my $n (@exact_num)
	{
		next if index($data, $n) < 0;
		if ($data =~ /^(.*(?<![\d.])$n(?!\d).*)$/m)
		{
			my $name = join ',', grep { $numc{$_} eq $n } sort keys %numc;
			push @p, "numeric canary $name=$n: " . substr($1, 0, 300);
		}
	}
	return @p;
}

sub near_problems
{
	my ($r, $spec) = @_;
	my @p;
	for my $one (split /,/, $spec)
	{
		my ($name, $tol) = split /:/, $one;
		die "near: unknown numeric canary $name" unless defined $numc{$name};
		my $v = $numc{$name};
		my $abs = $tol =~ /^(.*)%$/ ? abs($v) * $1 / 100 : $tol;
		(my $err = $r->{err}) =~ s/^(LOCATION:.*|psql:[^:]*:\d+: )//mg;
		for my $x (numbers_in($r->{rows} . "\n" . $err))
		{
			next if $x == 0;
			if (abs($x - $v) <= $abs)
			{
				push @p, "near $name ($v +- $abs): $x";
				last;
			}
		}
	}
	return @p;
}

# The oracles of one run; returns (problems, notes).
sub judge_run
{
	my ($a, $r, $dcharge) = @_;
	my $opt = $a->{opt};
	my @p = canary_problems($r, $opt->{ctlcanary} // $hex);
	my $speech_max = $opt->{speech} // 3;
	push @p, "speech: $r->{speech} messages (max $speech_max): " . join(' | ', map { substr($_, 0, 160) } @{ $r->{msgs} }[ 0 .. ($r->{speech} > 3 ? 2 : $r->{speech} - 1) ])
	  if $r->{speech} > $speech_max;
	my $probe_ok = $r->{probe} eq '00000';
	my $release = $opt->{release} // 0;
	push @p, "charge: the probe failed ($r->{probe}) but $dcharge charges were made (allowed $release)"
	  if !$probe_ok && $dcharge > $release;
	push @p, "charge: the probe succeeded and read protected data but nothing was charged"
	  if $probe_ok && $opt->{reads} && $dcharge == 0;
	for my $name (sort keys %{ $r->{ctr} })
	{
		my @v = grep { $_ ne '' && $_ ne 'NULL' } @{ $r->{ctr}{$name} };
		my %d = map { $_ => 1 } @v;
		push @p, "counters: $name moved: " . join(' -> ', @{ $r->{ctr}{$name} }) if keys %d > 1;
	}
	push @p, near_problems($r, $opt->{near}) if $opt->{near};
	if (defined $opt->{forbid} && $r->{rows} =~ /^(.*(?:$opt->{forbid}).*)$/m)
	{
		push @p, "forbid: the output matches /$opt->{forbid}/: " . substr($1, 0, 300);
	}
	if (defined $opt->{expectctr} && !%{ $r->{ctr} })
	{
		push @p, "counters: the attack printed no \@ctr rows (broken attack)";
	}
	return @p;
}

sub signature
{
	my ($a, $r) = @_;
	my $s = "states=" . join(',', @{ $r->{states} }) . " probe=$r->{probe} speech=$r->{speech}";
	$s .= "\nrows:\n$r->{rows}" if ($a->{opt}{twinsig} // '') eq 'out';
	return $s;
}

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $honest_default = join '', map { "SELECT dp_count(1, 'laplace(epsilon=0.01)') IS NOT NULL FROM clinic.patients WHERE age > $_;\n" } 1 .. 15;

# Run one attack with all its oracles; returns (problems, run summary).
sub run_attack
{
	my ($a) = @_;
	my $opt = $a->{opt};
	my @p;
	my @variants = $opt->{twin} ? split(/\|/, $opt->{twin}, 2) : (undef);
	my @sigs;
	my $summary = '';
	for my $v (@variants)
	{
		my $sql = $a->{sql};
		$sql =~ s/\{\{T\}\}/$v/g if defined $v;
		$sql = $sql x $opt->{repeat} if $opt->{repeat};
		my $before = charges($opt->{role});
		my @honest;
		if ($opt->{concurrent})
		{
			# the ledger worker pauses 20 ms before each commit (fault injection
			# of test builds; without it the sessions simply race), so requests
			# sent meanwhile pile up and share the next batch
			su_query(q{ALTER SYSTEM SET dp_pg.debug_pause = 'worker_before_commit'}, 1);
			su_query(q{ALTER SYSTEM SET dp_pg.debug_pause_ms = 20}, 1);
			su_query(q{SELECT pg_reload_conf()}, 1);
			su_query(q{SELECT pg_sleep(0.1)}, 1);
			# two honest sessions run their dp queries while the attacker's
			# statements are sent in a tight loop: the ledger worker takes every
			# pending request into one batch, so they share batches
			for my $k (1 .. 2)
			{
				# (a script file: IPC::Run feeds a stdin only while its harness is pumped)
				my $file = "$tmp/honest$k.sql";
				open my $fh, '>', $file or die "$file: $!";
				print $fh $preamble . ($opt->{honest_sql} // $honest_default) . "\n\\echo \@\@END :SQLSTATE\n";
				close $fh;
				my %h = (out => '', err => '');
				$h{h} = IPC::Run::start(
					[ 'psql', '-XAt', '-d', $node->connstr('postgres') . " user=atk_honest", '-f', $file ],
					'<' => \undef, '>' => \$h{out}, '2>' => \$h{err}, IPC::Run::timeout(120));
				push @honest, \%h;
			}
			select(undef, undef, undef, 0.05);
		}
		my $r = run_sql($sql, db => $opt->{db}, timeout => $opt->{timeout}, role => $opt->{role});
		if (@honest)
		{
			for my $h (@honest)
			{
				eval { $h->{h}->finish; 1 } or do { $h->{h}->kill_kill; $h->{err} .= '(timeout)' };
				my $hr = analyse($h->{out}, $h->{err});
				push @p, "other session: honest analyst's queries failed: " . join(',', @{ $hr->{states} }) .
				  ' ' . substr(join(' | ', grep { /ERROR/ } split /\n/, $h->{err}), 0, 400)
				  if @{ $hr->{states} } || $hr->{end} ne '00000';
			}
			su_query(q{ALTER SYSTEM RESET dp_pg.debug_pause}, 1);
			su_query(q{ALTER SYSTEM RESET dp_pg.debug_pause_ms}, 1);
			su_query(q{SELECT pg_reload_conf()}, 1);

		}
		my $dcharge = charges($opt->{role}) - $before;
		my @rp = judge_run($a, $r, $dcharge);
		my $tag = defined $v ? "[T=$v] " : '';
		push @p, map { "$tag$_" } @rp;
		push @sigs, signature($a, $r);
		$summary .= sprintf("%sprobe=%s errors=%s speech=%d charges=%d\n", $tag, $r->{probe},
			join(',', @{ $r->{states} }) || '-', $r->{speech}, $dcharge);
		$a->{last_run} = $r;
		su_query(q{ALTER ROLE atk_analyst RESET ALL});
		su_query(q{ALTER ROLE atk_greedy RESET ALL});
	}
	if (@sigs == 2 && $sigs[0] ne $sigs[1])
	{
		push @p, "twin: the analyst tells {{T}}=$variants[0] from {{T}}=$variants[1]:\n  A: " .
		  join("\n     ", split /\n/, $sigs[0]) . "\n  B: " . join("\n     ", split /\n/, $sigs[1]);
	}
	return (\@p, $summary);
}

# ------------------------------------------------------------------------
# The corpus

my (%by_class, %leaks_by_class, %by_oracle, @leak_list);
for my $a (@attacks)
{
	my $t0 = time;
	my ($p, $summary) = run_attack($a);
	my $class = $a->{class};
	$by_class{$class}++;
	my $name = "$a->{id} [$class] $a->{desc}";
	if (@$p)
	{
		$leaks_by_class{$class}++;
		my %o;
		for (@$p)
		{
			my ($k) = s/^\[T=[^\]]*\] //r =~ /^(canary string|numeric canary|speech|charge|counters|near|forbid|twin|other session)/;
			$o{ $k // 'other' }++;
		}
		$by_oracle{$_}++ for keys %o;
		push @leak_list, "$a->{id} [$class] " . join('+', sort keys %o) .
		  (defined $a->{opt}{todo} ? " (known: $a->{opt}{todo})" : '') . ": " . (split /\n/, $p->[0])[0];
		my $msg = "LEAK $a->{id}: " . join("\n  ", @$p) . "\n  run: $summary";
		if ($report_only)
		{
			diag($msg);
			ok(1, "$name (leak reported: " . join('+', sort keys %o) . ")");
		}
		elsif (defined $a->{opt}{todo})
		{
		  TODO:
			{
				local $TODO = "known leak $a->{opt}{todo}";
				ok(0, $name);
			}
			diag($msg);
		}
		else
		{
			ok(0, $name) or diag($msg);
		}
	}
	elsif (defined $a->{opt}{todo})
	{
	  TODO:
		{
			local $TODO = "known leak $a->{opt}{todo} (no longer leaks: remove its todo=)";
			ok(1, $name);
		}
	}
	else
	{
		ok(1, $name);
	}
	note(sprintf("%s: %.2fs %s", $a->{id}, time - $t0, $summary));
	note("  out: " . substr($a->{last_run}{out}, 0, 1500) . "\n  err: " . substr($a->{last_run}{err}, 0, 1500))
	  if $ENV{ATTACK_VERBOSE};
}

# ------------------------------------------------------------------------
# Positive controls: each oracle fires on a leak it must catch

sub control
{
	my ($oracle, $a) = @_;
	$a->{class} = 'control';
	my ($p, $summary) = run_attack($a);
	my @hit = grep { /^(\[T=[^\]]*\] )?\Q$oracle\E/ } @$p;
	ok(scalar @hit, "positive control $a->{id}: the $oracle oracle fires")
	  or diag("control $a->{id} did not fire $oracle; problems: " . join(' | ', @$p) . "; run: $summary\nout: $a->{last_run}{out}\nerr: $a->{last_run}{err}");
}

control('canary', { id => 'ctl_canary_rows', opt => { db => 'atk_ctl' },
	sql => "SELECT name, diagnosis FROM clinic.patients WHERE id <= 3;\n" });
control('canary', { id => 'ctl_canary_error', opt => { db => 'atk_ctl' },
	sql => "SELECT name::int FROM clinic.patients WHERE id = 17;\n" });
control('numeric canary', { id => 'ctl_numeric', opt => { db => 'atk_ctl' },
	sql => "SELECT reltuples::bigint FROM pg_class WHERE oid = 'clinic.patients'::regclass;\n" });
control('speech', { id => 'ctl_speech', opt => { db => 'atk_ctl' },
	sql => "SELECT count(*) FROM clinic.patients WHERE id <= 40 AND helper.say(age);\n" });
control('charge', { id => 'ctl_charge_reads', opt => { db => 'atk_ctl', reads => 1 },
	sql => "SELECT count(*) > 0 FROM clinic.patients;\n" });
control('charge', { id => 'ctl_charge_failed', opt => {},
	sql => "SELECT dp_count(1, 'laplace(epsilon=0.01)') IS NOT NULL FROM pub.open_numbers;\nSELECT 1 / 0;\n" });
control('counters', { id => 'ctl_counters', opt => { db => 'atk_ctl' },
	sql => "SELECT '\@ctr scanned=' || coalesce(pg_stat_get_tuples_returned('clinic.patients'::regclass)::text, 'NULL');\n" .
	  "SELECT count(*) > 0 FROM clinic.patients;\nSELECT pg_sleep(1.2);\nSELECT pg_stat_clear_snapshot();\n" .
	  "SELECT '\@ctr scanned=' || coalesce(pg_stat_get_tuples_returned('clinic.patients'::regclass)::text, 'NULL');\n" });
control('near', { id => 'ctl_near', opt => { db => 'atk_ctl', near => 'rows.patients:1%' },
	sql => "SELECT count(*) + 7 FROM clinic.patients;\n" });
control('forbid', { id => 'ctl_forbid', opt => { db => 'atk_ctl', forbid => '^exact$' },
	sql => "SELECT CASE WHEN count(*) = (SELECT reltuples FROM pg_class WHERE oid = 'clinic.patients'::regclass) THEN 'exact' END FROM clinic.patients;\n" });
control('twin', { id => 'ctl_twin', opt => { db => 'atk_ctl', twin => '17|18' },
	sql => "SELECT 1 / CASE WHEN sensitive THEN 0 ELSE 1 END FROM clinic.patients WHERE id = {{T}};\n" });
control('other session', { id => 'ctl_other_session', opt => { concurrent => 1,
	honest_sql => "SELECT dp_count(*) FROM clinic.no_such_table;\n" },
	sql => "SELECT 1;\n" });

# ------------------------------------------------------------------------
# Summary

my $total = scalar @attacks;
my $leaks = scalar @leak_list;
my $known = grep { /\(known: / } @leak_list;
diag(sprintf("attack corpus: %d attacks, %d leak%s (%s%s)", $total, $leaks, $leaks == 1 ? '' : 's',
	$report_only ? 'ATTACK_REPORT_ONLY: reported, not failed' : 'each leak fails',
	$known ? ", but the $known known ones (todo=): TODO tests" : ''));
diag(sprintf("  %-10s %4d attacks, %3d leak", $_, $by_class{$_}, $leaks_by_class{$_} // 0)) for sort keys %by_class;
diag(sprintf("  oracle %-16s fired in %d attacks", $_, $by_oracle{$_})) for sort keys %by_oracle;
diag("leaks:\n" . join("\n", map { "  $_" } @leak_list)) if @leak_list;
if ($ENV{ATTACK_LEAK_FILE})
{
	open my $fh, '>', $ENV{ATTACK_LEAK_FILE} or die $!;
	print $fh "$_\n" for @leak_list;
	close $fh;
}
diag(sprintf("elapsed %.1fs", time - $t_start));

$su_in .= "\\q\n";
$su_timeout->start(600);
$su->finish;
$node->stop;
done_testing();
