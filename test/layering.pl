#!/usr/bin/perl
# test/layering.pl — the layering of src/ (docs/development.md, "Source layout").
#
# Derives the dependencies between dp_pg's source files from the sources
# themselves: file A depends on file B when A uses (calls, or takes the
# address of, or reads) a function or global variable that B defines —
# a function defined at the start of a line and not static, a static inline
# function of a header, a variable a header declares extern.  Comments and
# string literals are blanked first.  Then it checks two rules:
#
#  1. layers: every folder of src/ is a layer, in the order of @LAYERS below
#     (lowest first; the files directly in src/ are the top).  A file may use
#     what its own layer and the layers below define, never a layer above.
#  2. circles: within a folder, no two files use each other, directly or
#     through others (no cycle in the file graph).
#  2b. floors: a folder of %FLOORS (guard/) is itself in layers, its floors,
#     lowest first: a file of it uses and includes only what its own floor
#     and the floors below define (a floor's header, floor_<name>.h, belongs
#     to that floor; the folder's face to none), every file is on a floor,
#     and its head comment names its floor ("floor rows").
#  3. faces: a folder of %FACE is seen from outside through one header, its
#     face; a file of another folder includes no other header of it.  The
#     same for the modules of %MODULE inside a folder of small modules: a
#     file outside the module includes only its face.
#  4. heads: every .c file begins with a comment that names the file
#     ("name.c — what it owns") and its layer ("Layer ledger/", or "top
#     layer" for src's own files).
#
# Prints one line per violation and a summary; exits 1 if any.
#
#   perl test/layering.pl [SRC]        check SRC (default: the repository's src)
#   perl test/layering.pl --graph      print the dependencies between layers
#   perl test/layering.pl --control    the positive controls: in a copy of src,
#       an added upward call, an added call that closes a circle, the same
#       inside guard/ (a circle within one floor, a call and an #include up
#       to a higher floor), an added upward #include, an added #include of a
#       folder's or a module's inner header from outside it and a file whose
#       head comment lost its layer (or its floor) must each be caught (exits
#       1 if one is missed)
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Temp qw(tempdir);
use File::Copy qw(copy);
use File::Path qw(make_path);

# lowest first
our @LAYERS = qw(core common ledger release aggregates guard synth src);
# the floors of a folder, lowest first, each with its files (without
# extension): docs/development.md, "The guard's floors"
our %FLOORS = (
	guard => [
		base => [qw(refuse nodes session trust unitbound)],
		fences => [qw(ddl grants)],
		reads => [qw(stats reads views partitions)],
		rows => [qw(total domainread regex runconst domains keys bounds canonical rowexpr)],
		releases => [qw(joins multi unitjoin release order derived narrow groups shape translate unitkeys units
						dpquery perunit)],
		top => [qw(guard)],
	],
);
# the one header of a folder that files outside it may include (common/ and
# core/ are collections of small modules, each header its own face)
our %FACE = (
	ledger => 'ledger/ledger.h',
	release => 'release/release.h',
	aggregates => 'aggregates/aggregates.h',
	guard => 'guard/guard.h',
	synth => 'synth/synth.h',
);
# modules of several files inside a folder of small modules: their face,
# and their files (without extension; each one's header, if any, is inner)
our %MODULE = (
	calibration => {
		face => 'core/calibrate.h',
		files => [qw(core/special core/continuous core/renyi core/gausssum core/discrete)],
	},
);

my $mode = 'check';
if (@ARGV && $ARGV[0] =~ /^--(graph|control)$/) { $mode = $1; shift @ARGV; }
my $src = shift(@ARGV) // dirname(__FILE__) . '/../src';

if ($mode eq 'control') { exit control($src); }
my $g = analyse($src);
if ($mode eq 'graph') { print_graph($g); exit 0; }
my @bad = violations($g);
print "not ok: $_\n" for @bad;
printf "layering: %d files in %d layers, %d dependencies between files, %d violations\n",
	scalar(keys %{$g->{layer}}), scalar(@LAYERS), $g->{nedges}, scalar(@bad);
exit(@bad ? 1 : 0);

# The layer of a file: its folder under src, or 'src' for src's own files.
sub layer_of
{
	my ($rel) = @_;
	return $rel =~ m{^([^/]+)/} ? $1 : 'src';
}

# The floor of a file of a folder with floors: (its index, its name), or ().
# A floor's header floor_<name>.h is on that floor; the folder's face is on none.
sub floor_of
{
	my ($f) = @_;
	my $l = layer_of($f);
	return () unless $FLOORS{$l} && !($FACE{$l} && $f eq $FACE{$l});
	my @fl = @{$FLOORS{$l}};
	(my $base = (split m{/}, $f)[-1]) =~ s/\.[ch]$//;
	for (my $i = 0; $i < @fl; $i += 2)
	{
		return ($i / 2, $fl[$i]) if $base eq "floor_$fl[$i]" || grep { $_ eq $base } @{$fl[$i + 1]};
	}
	return ();
}

# Blank comments, string and character literals (keeping the lines).
sub strip
{
	my ($t) = @_;
	$t =~ s{/\*.*?\*/}{my $c = $&; $c =~ s/[^\n]//g; $c}gse;
	$t =~ s{//[^\n]*}{}g;
	$t =~ s{"(?:\\.|[^"\\\n])*"}{""}g;
	$t =~ s{'(?:\\.|[^'\\\n])*'}{''}g;
	return $t;
}

# Files, their layers, the symbols each defines and the file graph.
sub analyse
{
	my ($root) = @_;
	my (%text, %layer, %def, %ext, %inc, %local, %head);
	my @files = sort split /\n/, `cd '$root' && find . -name '*.[ch]' | sed 's|^\\./||'`;
	die "layering: no sources under $root\n" unless @files;
	for my $f (@files)
	{
		open my $h, '<', "$root/$f" or die "$root/$f: $!\n";
		local $/;
		my $raw = <$h>;
		close $h;
		$inc{$f} = [$raw =~ /^[ \t]*#[ \t]*include[ \t]*"([^"]+)"/mg];
		$head{$f} = $raw =~ m{\A/\*(.*?)\*/}s ? $1 : '';
		$text{$f} = strip($raw);
		$layer{$f} = layer_of($f);
		die "layering: $f is in no layer of \@LAYERS\n" unless grep { $_ eq $layer{$f} } @LAYERS;
	}
	for my $f (@files)
	{
		my @l = split /\n/, $text{$f};
		for my $i (0 .. $#l)
		{
			next unless $l[$i] =~ /^([A-Za-z_]\w*)\s*\(/;
			my $name = $1;
			my $rest = join("\n", @l[$i .. ($i + 40 > $#l ? $#l : $i + 40)]);
			my ($d, $k) = (0, 0);
			for ($k = 0; $k < length $rest; $k++)
			{
				my $c = substr($rest, $k, 1);
				$d++ if $c eq '(';
				if ($c eq ')') { $d--; last if $d == 0; }
			}
			my $after = substr($rest, $k + 1);
			next unless $after =~ /^\s*\{/;		# a definition, not a declaration
			my $j = $i - 1;
			$j-- while $j >= 0 && $l[$j] =~ /^\s*$/;
			my $static = $j >= 0 && $l[$j] =~ /\bstatic\b/;
			if ($static && $f =~ /\.c$/)	# file-local: shadows a global of the name
			{
				$local{$f}{$name} = 1;
				next;
			}
			push @{$def{$name}}, $f;
		}
		next unless $f =~ /\.h$/;
		while ($text{$f} =~ /^extern\s+[^;(]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*;/mg)
		{
			$ext{$1} = $f;
		}
	}
	# a variable belongs to the .c file that defines it (else to its header)
	for my $v (sort keys %ext)
	{
		next if $def{$v};
		my ($own) = grep { /\.c$/ && $text{$_} =~ /^(?!extern\b)[A-Za-z_][^;(\n]*\b\Q$v\E\b\s*(?:=|;|\[)/m } @files;
		push @{$def{$v}}, $own // $ext{$v};
	}
	my (%edge, %why);
	my $nedges = 0;
	for my $f (grep { /\.c$/ } @files)
	{
		(my $fs = $f) =~ s/\.[ch]$//;
		my %seen;
		while ($text{$f} =~ /\b([A-Za-z_]\w*)\b/g)
		{
			my $s = $1;
			next if !$def{$s} || $seen{$s}++ || $local{$f}{$s};
			for my $o (@{$def{$s}})
			{
				(my $os = $o) =~ s/\.[ch]$//;
				next if $os eq $fs;		# a file and its own header
				$nedges++ unless $edge{$f}{$o};
				$edge{$f}{$o} = 1;
				push @{$why{"$f $o"}}, $s;
			}
		}
	}
	# the header each #include "..." names, if it is one of dp_pg's
	my %byname;
	push @{$byname{(split m{/}, $_)[-1]}}, $_ for grep { /\.h$/ } @files;
	my %incl;
	for my $f (@files)
	{
		my $dir = $f =~ m{^(.*)/} ? "$1/" : '';
		for my $i (@{$inc{$f}})
		{
			my $h = exists $layer{$i} ? $i
				: exists $layer{"$dir$i"} ? "$dir$i"
				: ($i !~ m{/} && @{$byname{$i} // []} == 1) ? $byname{$i}[0]
				: undef;
			$incl{$f}{$h} = 1 if defined $h;
		}
	}
	return { files => \@files, layer => \%layer, edge => \%edge, why => \%why, nedges => $nedges, def => \%def, incl => \%incl, head => \%head };
}

sub rank
{
	my ($l) = @_;
	for my $i (0 .. $#LAYERS) { return $i if $LAYERS[$i] eq $l; }
	die;
}

# Every broken rule, one line each.
sub violations
{
	my ($g) = @_;
	my @bad;
	for my $f (sort keys %{$g->{edge}})
	{
		for my $o (sort keys %{$g->{edge}{$f}})
		{
			my ($lf, $lo) = ($g->{layer}{$f}, $g->{layer}{$o});
			push @bad, "upward: $f ($lf) uses $o ($lo): " . join(' ', @{$g->{why}{"$f $o"}})
				if rank($lo) > rank($lf);
		}
	}
	for my $f (sort keys %{$g->{incl}})
	{
		for my $h (sort keys %{$g->{incl}{$f}})
		{
			my ($lf, $lh) = ($g->{layer}{$f}, $g->{layer}{$h});
			push @bad, "upward include: $f ($lf) includes $h ($lh)" if rank($lh) > rank($lf);
			push @bad, "inner header: $f ($lf) includes $h, which only $lh/ includes (its face is $FACE{$lh})"
				if $lf ne $lh && $FACE{$lh} && $h ne $FACE{$lh};
			for my $m (sort keys %MODULE)
			{
				my %in = map { ("$_.c" => 1, "$_.h" => 1) } @{$MODULE{$m}{files}};
				push @bad, "inner header: $f ($lf) includes $h, which only the $m module includes (its face is $MODULE{$m}{face})"
					if $in{$h} && !$in{$f} && $h ne $MODULE{$m}{face};
			}
		}
	}
	# floors: every file of a folder with floors on one, each use and #include down or level
	for my $l (sort keys %FLOORS)
	{
		my @fl = @{$FLOORS{$l}};
		for (my $i = 0; $i < @fl; $i += 2)
		{
			for my $b (@{$fl[$i + 1]})
			{
				push @bad, "floor: \%FLOORS puts $l/$b on floor $fl[$i], but $l/$b.c does not exist"
					unless exists $g->{layer}{"$l/$b.c"};
			}
		}
	}
	for my $f (@{$g->{files}})
	{
		my $l = $g->{layer}{$f};
		next unless $FLOORS{$l} && !($FACE{$l} && $f eq $FACE{$l});
		push @bad, "floor: $f is on no floor of $l/ (\%FLOORS in test/layering.pl)" unless floor_of($f);
	}
	for my $f (sort keys %{$g->{edge}})
	{
		for my $o (sort keys %{$g->{edge}{$f}})
		{
			my ($fi, $fn) = floor_of($f);
			my ($oi, $on) = floor_of($o);
			push @bad, "upward floor: $f (floor $fn) uses $o (floor $on): " . join(' ', @{$g->{why}{"$f $o"}})
				if defined $fi && defined $oi && $g->{layer}{$f} eq $g->{layer}{$o} && $oi > $fi;
		}
	}
	for my $f (sort keys %{$g->{incl}})
	{
		for my $h (sort keys %{$g->{incl}{$f}})
		{
			my ($fi, $fn) = floor_of($f);
			my ($hi, $hn) = floor_of($h);
			push @bad, "upward floor include: $f (floor $fn) includes $h (floor $hn)"
				if defined $fi && defined $hi && $g->{layer}{$f} eq $g->{layer}{$h} && $hi > $fi;
		}
	}
	for my $f (grep { /\.c$/ } @{$g->{files}})
	{
		my $l = $g->{layer}{$f};
		my $base = (split m{/}, $f)[-1];
		(my $hd = $g->{head}{$f}) =~ s/\s+/ /g;
		push @bad, "head: $f does not begin with a comment \"$base — what it owns\""
			unless $hd =~ /^\s*\*?\s*(?:\Q$l\E\/)?\Q$base\E —/;
		my $says = $l eq 'src' ? qr/\btop layer\b/i : qr/\bLayer \Q$l\E\//;
		push @bad, "head: the head comment of $f does not name its layer (" . ($l eq 'src' ? 'top layer' : "Layer $l/") . ")"
			unless $hd =~ $says;
		my ($fi, $fn) = floor_of($f);
		push @bad, "head: the head comment of $f does not name its floor (floor $fn)"
			if defined $fi && $hd !~ /\bfloor \Q$fn\E\b/;
	}
	# circles within a folder: strongly connected components (Tarjan)
	my ($index, @stack, %idx, %low, %on) = (0);
	my @sccs;
	my $inner = sub {
		my ($f, $o) = @_;
		return $g->{layer}{$f} eq $g->{layer}{$o};
	};
	my $visit;
	$visit = sub {
		my ($v) = @_;
		$idx{$v} = $low{$v} = $index++;
		push @stack, $v;
		$on{$v} = 1;
		for my $w (sort keys %{$g->{edge}{$v} // {}})
		{
			next unless $inner->($v, $w);
			if (!defined $idx{$w}) { $visit->($w); $low{$v} = $low{$w} if $low{$w} < $low{$v}; }
			elsif ($on{$w}) { $low{$v} = $idx{$w} if $idx{$w} < $low{$v}; }
		}
		if ($low{$v} == $idx{$v})
		{
			my @c;
			my $w;
			do { $w = pop @stack; $on{$w} = 0; push @c, $w; } while ($w ne $v);
			push @sccs, [sort @c] if @c > 1;
		}
	};
	for my $f (@{$g->{files}}) { $visit->($f) unless defined $idx{$f}; }
	for my $c (@sccs)
	{
		my %in = map { $_ => 1 } @$c;
		my @why;
		for my $f (@$c)
		{
			for my $o (sort keys %{$g->{edge}{$f}})
			{
				push @why, "$f -> $o (" . join(' ', @{$g->{why}{"$f $o"}}) . ")" if $in{$o};
			}
		}
		push @bad, "circle: " . join('; ', @why);
	}
	return @bad;
}

# The dependencies between layers, with the files behind each.
sub print_graph
{
	my ($g) = @_;
	my %lay;
	for my $f (keys %{$g->{edge}})
	{
		for my $o (keys %{$g->{edge}{$f}})
		{
			my ($lf, $lo) = ($g->{layer}{$f}, $g->{layer}{$o});
			$lay{$lf}{$lo}++ if $lf ne $lo;
		}
	}
	for my $l (reverse @LAYERS)
	{
		my @to = sort { rank($b) <=> rank($a) } keys %{$lay{$l} // {}};
		printf "%-10s -> %s\n", $l, join(', ', map { "$_ ($lay{$l}{$_} file pairs)" } @to);
	}
	# the floors inside a folder, with the file pairs between them
	for my $l (sort keys %FLOORS)
	{
		my (%fl, %rk);
		for my $f (keys %{$g->{edge}})
		{
			for my $o (keys %{$g->{edge}{$f}})
			{
				my ($fi, $fn) = floor_of($f);
				my ($oi, $on) = floor_of($o);
				next unless defined $fi && defined $oi && $g->{layer}{$f} eq $l && $g->{layer}{$o} eq $l;
				$fl{$fn}{$on}++;
			}
		}
		print "floors of $l/:\n";
		my @names = @{$FLOORS{$l}}[grep { $_ % 2 == 0 } 0 .. $#{$FLOORS{$l}}];
		@rk{@names} = 0 .. $#names;
		for my $n (reverse @names)
		{
			my @to = sort { $rk{$b} <=> $rk{$a} } keys %{$fl{$n} // {}};
			printf "  %-10s -> %s\n", $n, join(', ', map { "$_ ($fl{$n}{$_} file pairs)" } @to);
		}
	}
}

# Copy src into a temporary directory.
sub copy_tree
{
	my ($from, $to) = @_;
	for my $f (split /\n/, `cd '$from' && find . -name '*.[ch]' | sed 's|^\\./||'`)
	{
		make_path(dirname("$to/$f"));
		copy("$from/$f", "$to/$f") or die "copy $f: $!\n";
	}
}

# Append a function to file $f of the copy $dir that calls $sym.
sub add_call
{
	my ($dir, $f, $sym) = @_;
	open my $h, '>>', "$dir/$f" or die "$dir/$f: $!\n";
	print $h "\nvoid\t\tDpLayeringControl(void);\n\nvoid\nDpLayeringControl(void)\n{\n\t(void) $sym;\n}\n";
	close $h;
}

# Append #include "$h" to file $f of the copy $dir.
sub add_include
{
	my ($dir, $f, $h) = @_;
	open my $fh, '>>', "$dir/$f" or die "$dir/$f: $!\n";
	print $fh "\n#include \"$h\"\n";
	close $fh;
}

# The positive controls (see the file comment); 0 when both are caught.
sub control
{
	my ($root) = @_;
	my $g = analyse($root);
	my @bad = violations($g);
	die "layering: the sources already break the rules; the controls need a clean tree\n" if @bad;
	my $missed = 0;

	# 1. the lowest layer above core uses a function of the top layer
	my ($low) = grep { $g->{layer}{$_} eq $LAYERS[1] && /\.c$/ } @{$g->{files}};
	my ($sym) = grep { my $s = $_; grep { $g->{layer}{$_} eq $LAYERS[-1] && /\.c$/ } @{$g->{def}{$s}} } sort keys %{$g->{def}};
	my $dir = tempdir(CLEANUP => 1);
	copy_tree($root, $dir);
	add_call($dir, $low, $sym);
	my @got = grep { /^upward: \Q$low\E .*\b\Q$sym\E\b/ } violations(analyse($dir));
	printf "%s: an added use of %s (%s) in %s (%s) is caught as upward\n",
		@got ? 'ok' : 'not ok', $sym, $LAYERS[-1], $low, $LAYERS[1];
	$missed++ unless @got;

	# 2. a file uses one of its users in the same folder (a folder checked for circles)
	my ($a, $b);
	for my $f (@{$g->{files}})
	{
		for my $o (sort keys %{$g->{edge}{$f} // {}})
		{
			next if $o !~ /\.c$/ || $g->{layer}{$f} ne $g->{layer}{$o};
			($a, $b) = ($f, $o);
			last;
		}
		last if $a;
	}
	die "layering: no dependency within a folder for the circle control\n" unless $a;
	# a symbol of $a that $b may call
	my ($back) = grep { my $s = $_; grep { $_ eq $a } @{$g->{def}{$s}} } sort keys %{$g->{def}};
	$dir = tempdir(CLEANUP => 1);
	copy_tree($root, $dir);
	add_call($dir, $b, $back);
	@got = grep { /^circle: .*\Q$b\E -> \Q$a\E \(.*\b\Q$back\E\b/ } violations(analyse($dir));
	printf "%s: an added use of %s (%s) in %s, which %s uses, is caught as a circle\n",
		@got ? 'ok' : 'not ok', $back, $a, $b, $a;
	$missed++ unless @got;

	# 2b. inside a folder with floors: a circle between two files of one floor,
	# a use of the top floor by the lowest
	for my $l (sort keys %FLOORS)
	{
		my ($fa, $fb);
		for my $f (grep { /\.c$/ && $g->{layer}{$_} eq $l } @{$g->{files}})
		{
			my ($fi) = floor_of($f);
			for my $o (sort keys %{$g->{edge}{$f} // {}})
			{
				my ($oi) = floor_of($o);
				next unless $o =~ /\.c$/ && $g->{layer}{$o} eq $l && defined $fi && defined $oi && $fi == $oi;
				($fa, $fb) = ($f, $o);
				last;
			}
			last if $fa;
		}
		die "layering: no dependency within a floor of $l/ for the circle control\n" unless $fa;
		my ($fback) = grep { my $s = $_; grep { $_ eq $fa } @{$g->{def}{$s}} } sort keys %{$g->{def}};
		$dir = tempdir(CLEANUP => 1);
		copy_tree($root, $dir);
		add_call($dir, $fb, $fback);
		@got = grep { /^circle: .*\Q$fb\E -> \Q$fa\E \(.*\b\Q$fback\E\b/ } violations(analyse($dir));
		printf "%s: an added use of %s (%s) in %s, which %s uses, is caught as a circle inside %s/ (floor %s)\n",
			@got ? 'ok' : 'not ok', $fback, $fa, $fb, $fa, $l, (floor_of($fa))[1];
		$missed++ unless @got;

		my @fl = @{$FLOORS{$l}};
		my ($flow) = grep { /\.c$/ && $g->{layer}{$_} eq $l && (floor_of($_))[1] eq $fl[0] } @{$g->{files}};
		my ($fsym) = grep { my $s = $_; grep { /\.c$/ && $g->{layer}{$_} eq $l && (floor_of($_))[1] eq $fl[-2] } @{$g->{def}{$s}} }
			sort keys %{$g->{def}};
		$dir = tempdir(CLEANUP => 1);
		copy_tree($root, $dir);
		add_call($dir, $flow, $fsym);
		@got = grep { /^upward floor: \Q$flow\E .*\b\Q$fsym\E\b/ } violations(analyse($dir));
		printf "%s: an added use of %s (floor %s) in %s (floor %s) is caught as upward inside %s/\n",
			@got ? 'ok' : 'not ok', $fsym, $fl[-2], $flow, $fl[0], $l;
		$missed++ unless @got;

		# the header of the highest floor that has one, included by the lowest floor's file
		# (sorted by hand: this sub's lexical $a and $b hide sort's)
		my ($fh) = map { $_->[1] } reverse sort { $::a->[0] <=> $::b->[0] }
			map { [ (floor_of($_))[0], $_ ] }
			grep { /\.h$/ && $g->{layer}{$_} eq $l && defined((floor_of($_))[0]) && (floor_of($_))[0] > 0 } @{$g->{files}};
		die "layering: no floor header in $l/ for the include control\n" unless $fh;
		$dir = tempdir(CLEANUP => 1);
		copy_tree($root, $dir);
		add_include($dir, $flow, $fh);
		@got = grep { /^upward floor include: \Q$flow\E .*\Q$fh\E/ } violations(analyse($dir));
		printf "%s: an added #include of %s (floor %s) in %s (floor %s) is caught as upward inside %s/\n",
			@got ? 'ok' : 'not ok', $fh, (floor_of($fh))[1], $flow, $fl[0], $l;
		$missed++ unless @got;

		$dir = tempdir(CLEANUP => 1);
		copy_tree($root, $dir);
		{
			local $/;
			open my $h, '<', "$dir/$flow" or die "$dir/$flow: $!\n";
			my $t = <$h>;
			close $h;
			$t =~ s/\bfloor (\w+)/storey $1/g;
			open $h, '>', "$dir/$flow" or die "$dir/$flow: $!\n";
			print $h $t;
			close $h;
		}
		@got = grep { /^head: the head comment of \Q$flow\E does not name its floor/ } violations(analyse($dir));
		printf "%s: %s without its floor in its head comment is caught\n", @got ? 'ok' : 'not ok', $flow;
		$missed++ unless @got;
	}

	# 3. the same low file includes the face of the top layer's first header
	my ($top) = grep { $g->{layer}{$_} eq $LAYERS[-2] && /\.h$/ } @{$g->{files}};
	$dir = tempdir(CLEANUP => 1);
	copy_tree($root, $dir);
	add_include($dir, $low, $top);
	@got = grep { /^upward include: \Q$low\E .*\Q$top\E/ } violations(analyse($dir));
	printf "%s: an added #include of %s (%s) in %s (%s) is caught as upward\n",
		@got ? 'ok' : 'not ok', $top, $LAYERS[-2], $low, $LAYERS[1];
	$missed++ unless @got;

	# 4. a file of another folder includes an inner header of a folder with a face
	my ($inner) = grep { my $h = $_; my $l = $g->{layer}{$h}; /\.h$/ && $FACE{$l} && $h ne $FACE{$l} } @{$g->{files}};
	die "layering: no inner header for the face control\n" unless $inner;
	my ($outer) = grep { /\.c$/ && $g->{layer}{$_} eq $LAYERS[-1] } @{$g->{files}};
	$dir = tempdir(CLEANUP => 1);
	copy_tree($root, $dir);
	add_include($dir, $outer, $inner);
	@got = grep { /^inner header: \Q$outer\E .*\Q$inner\E/ } violations(analyse($dir));
	printf "%s: an added #include of %s (inside %s/) in %s is caught as an inner header\n",
		@got ? 'ok' : 'not ok', $inner, $g->{layer}{$inner}, $outer;
	$missed++ unless @got;

	# 4b. a file of the same folder outside a module includes the module's inner header
	for my $m (sort keys %MODULE)
	{
		my ($mh) = grep { -f "$root/$_" } map { "$_.h" } @{$MODULE{$m}{files}};
		die "layering: the $m module has no inner header for the control\n" unless $mh;
		my %in = map { ("$_.c" => 1) } @{$MODULE{$m}{files}};
		my ($out) = grep { /\.c$/ && $g->{layer}{$_} eq $g->{layer}{$mh} && !$in{$_} } @{$g->{files}};
		$dir = tempdir(CLEANUP => 1);
		copy_tree($root, $dir);
		add_include($dir, $out, $mh);
		@got = grep { /^inner header: \Q$out\E .*\Q$mh\E/ } violations(analyse($dir));
		printf "%s: an added #include of %s (inside the %s module) in %s is caught as an inner header\n",
			@got ? 'ok' : 'not ok', $mh, $m, $out;
		$missed++ unless @got;
	}

	# 5. a file whose head comment no longer names its layer
	$dir = tempdir(CLEANUP => 1);
	copy_tree($root, $dir);
	{
		local $/;
		open my $h, '<', "$dir/$low" or die "$dir/$low: $!\n";
		my $t = <$h>;
		close $h;
		$t =~ s/\bLayer (\w+)\//Tier $1:/g;
		open $h, '>', "$dir/$low" or die "$dir/$low: $!\n";
		print $h $t;
		close $h;
	}
	@got = grep { /^head: the head comment of \Q$low\E / } violations(analyse($dir));
	printf "%s: %s without its layer in its head comment is caught\n", @got ? 'ok' : 'not ok', $low;
	$missed++ unless @got;
	return $missed ? 1 : 0;
}
