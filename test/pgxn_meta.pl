#!/usr/bin/perl
# test/pgxn_meta.pl — check META.json against the PGXN Meta Spec 1.0.0 and
# against the rest of the tree.
#
#   perl test/pgxn_meta.pl [META.json]
#
# The spec's rules: the required keys (name, version, abstract, maintainer,
# license, provides, meta-spec) and no key the spec does not define except
# x_ / X_ custom keys, at every level; names and tags as the spec's Terms
# and Tags; versions as Semantic Versions 2.0.0; prerequisites by phase
# (configure, build, test, runtime, develop) and relationship (requires,
# recommends, suggests, conflicts) with version ranges; the license as one
# of the spec's license strings, a list of them, or names mapped to URIs;
# release_status, resources, no_index as the spec defines them.  Then what
# the spec leaves to the distribution: the files named exist, and the
# versions of META.json, the provided extension, dp_pg.control's
# default_version, its install script and debian/changelog agree.
#
# Prints one "ok" / "not ok" line per check and, before them, its positive
# controls: META.json broken in one way at a time must be rejected.  Exits
# non-zero when a check fails or a broken variant passes.
use strict;
use warnings;
use File::Basename qw(dirname);
use JSON::PP;

my $file = shift // 'META.json';
my $root = dirname($file);
my $json = JSON::PP->new->canonical;

my $semver = qr/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)
	(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?
	(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/x;
my %licenses = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1 artistic_2 bsd freebsd
  gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1 lgpl_3_0 mit mozilla_1_0 mozilla_1_1 openssl
  perl_5 postgresql qpl_1_0 ssleay sun zlib open_source restricted unrestricted unknown);
my $uri = qr/^[A-Za-z][A-Za-z0-9+.-]*:\S+$/;
my $email = qr/^[^@\s]+@[^@\s]+\.[^@\s]+$/;

# The spec's violations in $m (a decoded META.json), as messages.
sub violations
{
	my ($m) = @_;
	my @e;
	my $str = sub { my ($v) = @_; defined $v && !ref $v && length $v > 0 };
	my $term = sub { my ($v) = @_; $str->($v) && $v =~ /^[^\/\\\s[:cntrl:]]{2,}$/ };
	my $path = sub { my ($v) = @_; $str->($v) && length $v >= 2 && $v !~ m{^/} && $v !~ /\\/ };
	my $custom = sub { $_[0] =~ /^[xX]_./ };
	my $keys = sub {
		my ($where, $h, @allowed) = @_;
		my %ok = map { $_ => 1 } @allowed;
		push @e, "$where: unknown key \"$_\"" for grep { !$ok{$_} && !$custom->($_) } sort keys %$h;
	};
	my $range = sub {
		my ($v) = @_;
		return 1 if defined $v && !ref $v && $v eq '0';
		return 0 unless $str->($v);
		for my $part (split /\s*,\s*/, $v)
		{
			my $ver = $part =~ s/^(?:[=!]=|[<>]=?)\s*//r;
			return 0 unless $ver eq '0' || $ver =~ $semver;
		}
		return 1;
	};

	return ('META.json is not an object') unless ref $m eq 'HASH';
	for my $k (qw(name version abstract maintainer license provides meta-spec))
	{
		push @e, "missing mandatory key \"$k\"" unless exists $m->{$k};
	}
	$keys->('META.json', $m, qw(name version abstract maintainer license provides meta-spec description
		  generated_by tags no_index prereqs release_status resources));
	push @e, 'name: not a Term' if exists $m->{name} && !$term->($m->{name});
	push @e, 'version: not a Semantic Version' if exists $m->{version} && !($str->($m->{version}) && $m->{version} =~ $semver);
	for my $k (qw(abstract description generated_by))
	{
		push @e, "$k: not a non-empty string" if exists $m->{$k} && !$str->($m->{$k});
	}
	if (exists $m->{maintainer})
	{
		my $v = $m->{maintainer};
		push @e, 'maintainer: not a string or a list of strings'
		  unless $str->($v) || (ref $v eq 'ARRAY' && @$v && !grep { !$str->($_) } @$v);
	}
	if (exists $m->{license})
	{
		my $v = $m->{license};
		my $ok = (!ref $v && defined $v && $licenses{$v})
		  || (ref $v eq 'ARRAY' && @$v && !grep { ref $_ || !defined $_ || !$licenses{$_} } @$v)
		  || (ref $v eq 'HASH' && %$v && !grep { !$str->($_) || $_ !~ $uri } values %$v);
		push @e, 'license: not a license of the spec, a list of them, or names mapped to URIs' unless $ok;
	}
	if (exists $m->{provides})
	{
		my $p = $m->{provides};
		if (ref $p ne 'HASH' || !%$p) { push @e, 'provides: not a non-empty object'; }
		else
		{
			for my $ext (sort keys %$p)
			{
				my $x = $p->{$ext};
				push @e, "provides: \"$ext\" is not a Term" unless $term->($ext);
				if (ref $x ne 'HASH') { push @e, "provides.$ext: not an object"; next; }
				push @e, "provides.$ext: missing \"file\"" unless exists $x->{file};
				push @e, "provides.$ext: missing \"version\"" unless exists $x->{version};
				$keys->("provides.$ext", $x, qw(file version abstract docfile));
				push @e, "provides.$ext.file: not a relative Unix path" if exists $x->{file} && !$path->($x->{file});
				push @e, "provides.$ext.docfile: not a relative Unix path" if exists $x->{docfile} && !$path->($x->{docfile});
				push @e, "provides.$ext.version: not a Semantic Version"
				  if exists $x->{version} && !($str->($x->{version}) && $x->{version} =~ $semver);
				push @e, "provides.$ext.abstract: not a non-empty string" if exists $x->{abstract} && !$str->($x->{abstract});
			}
		}
	}
	if (exists $m->{'meta-spec'})
	{
		my $s = $m->{'meta-spec'};
		if (ref $s ne 'HASH') { push @e, 'meta-spec: not an object'; }
		else
		{
			$keys->('meta-spec', $s, qw(version url));
			push @e, 'meta-spec.version: not 1.0.x' unless $str->($s->{version}) && $s->{version} =~ /^1\.0\.\d+$/;
			push @e, 'meta-spec.url: not the spec\'s URL'
			  if exists $s->{url} && !grep { ($s->{url} // '') eq $_ } ('https://pgxn.org/meta/spec.txt', 'http://pgxn.org/meta/spec.txt');
		}
	}
	if (exists $m->{tags})
	{
		my $t = $m->{tags};
		push @e, 'tags: not a non-empty list of Tags'
		  unless ref $t eq 'ARRAY' && @$t
		  && !grep { !$str->($_) || length $_ < 2 || length $_ > 255 || /[\/\\[:cntrl:]]/ } @$t;
	}
	if (exists $m->{no_index})
	{
		my $n = $m->{no_index};
		if (ref $n ne 'HASH' || !(exists $n->{file} || exists $n->{directory})) { push @e, 'no_index: needs "file" or "directory"'; }
		else
		{
			$keys->('no_index', $n, qw(file directory));
			for my $k (grep { exists $n->{$_} } qw(file directory))
			{
				my $v = $n->{$k};
				my %seen;
				push @e, "no_index.$k: not a path or a list of unique paths"
				  unless $path->($v) || (ref $v eq 'ARRAY' && @$v && !grep { !$path->($_) || $seen{$_}++ } @$v);
			}
		}
	}
	if (exists $m->{prereqs})
	{
		my $p = $m->{prereqs};
		if (ref $p ne 'HASH' || !%$p) { push @e, 'prereqs: not a non-empty object'; }
		else
		{
			$keys->('prereqs', $p, qw(configure build test runtime develop));
			for my $phase (grep { !$custom->($_) } sort keys %$p)
			{
				my $ph = $p->{$phase};
				if (ref $ph ne 'HASH' || !%$ph) { push @e, "prereqs.$phase: not a non-empty object"; next; }
				$keys->("prereqs.$phase", $ph, qw(requires recommends suggests conflicts));
				for my $rel (grep { !$custom->($_) } sort keys %$ph)
				{
					my $r = $ph->{$rel};
					if (ref $r ne 'HASH') { push @e, "prereqs.$phase.$rel: not an object"; next; }
					for my $dep (sort keys %$r)
					{
						push @e, "prereqs.$phase.$rel: \"$dep\" is not a Term" unless $term->($dep);
						push @e, "prereqs.$phase.$rel.$dep: not a version range" unless $range->($r->{$dep});
					}
				}
			}
		}
	}
	push @e, 'release_status: not stable, testing or unstable'
	  if exists $m->{release_status} && !grep { ($m->{release_status} // '') eq $_ } qw(stable testing unstable);
	if (exists $m->{resources})
	{
		my $r = $m->{resources};
		if (ref $r ne 'HASH' || !%$r) { push @e, 'resources: not a non-empty object'; }
		else
		{
			$keys->('resources', $r, qw(homepage bugtracker repository));
			push @e, 'resources.homepage: not a URI' if exists $r->{homepage} && !($str->($r->{homepage}) && $r->{homepage} =~ $uri);
			if (exists $r->{bugtracker})
			{
				my $b = $r->{bugtracker};
				if (ref $b ne 'HASH' || !(exists $b->{web} || exists $b->{mailto})) { push @e, 'resources.bugtracker: needs "web" or "mailto"'; }
				else
				{
					$keys->('resources.bugtracker', $b, qw(web mailto));
					push @e, 'resources.bugtracker.web: not a URI' if exists $b->{web} && !($str->($b->{web}) && $b->{web} =~ $uri);
					push @e, 'resources.bugtracker.mailto: not an email address'
					  if exists $b->{mailto} && !($str->($b->{mailto}) && $b->{mailto} =~ $email);
				}
			}
			if (exists $r->{repository})
			{
				my $g = $r->{repository};
				if (ref $g ne 'HASH' || !((exists $g->{url} && exists $g->{type}) || exists $g->{web}))
				{
					push @e, 'resources.repository: needs "url" and "type", or "web"';
				}
				else
				{
					$keys->('resources.repository', $g, qw(url web type));
					for my $k (grep { exists $g->{$_} } qw(url web))
					{
						push @e, "resources.repository.$k: not a URI" unless $str->($g->{$k}) && $g->{$k} =~ $uri;
					}
					push @e, 'resources.repository.type: not a lower-case string'
					  if exists $g->{type} && !($str->($g->{type}) && $g->{type} =~ /^[a-z]+$/);
				}
			}
		}
	}
	return @e;
}

# What the spec leaves to the distribution: files, and versions that agree.
sub tree_violations
{
	my ($m) = @_;
	my @e;
	my $slurp = sub {
		open my $fh, '<', "$root/$_[0]" or return undef;
		local $/;
		return <$fh>;
	};
	my $control = $slurp->('dp_pg.control') // '';
	my ($default) = $control =~ /^default_version\s*=\s*'([^']*)'/m;
	my $x = ref $m->{provides} eq 'HASH' ? $m->{provides}{dp_pg} : undef;
	push @e, 'provides no extension dp_pg' unless ref $x eq 'HASH';
	$x = {} unless ref $x eq 'HASH';
	for my $k (qw(file docfile))
	{
		push @e, "provides.dp_pg.$k: $x->{$k} is not in the tree" if defined $x->{$k} && !-f "$root/$x->{$k}";
	}
	push @e, "version $m->{version} is not dp_pg.control's default_version " . ($default // '(none)')
	  unless defined $default && ($m->{version} // '') eq $default;
	push @e, 'provides.dp_pg.version is not the version' unless ($x->{version} // '') eq ($m->{version} // '');
	push @e, "provides.dp_pg.file is not the install script of $default"
	  unless defined $default && ($x->{file} // '') eq "sql/dp_pg--$default.sql";
	my $changelog = $slurp->('debian/changelog') // '';
	my ($deb) = $changelog =~ /^\S+ \(([^)-]+)(?:-[^)]*)?\)/;
	push @e, 'debian/changelog\'s upstream version ' . ($deb // '(none)') . " is not $m->{version}"
	  unless defined $deb && $deb eq ($m->{version} // '');
	push @e, 'the license is not the one in LICENSE'
	  unless ($m->{license} // '') eq 'postgresql' && ($slurp->('LICENSE') // '') =~ /^PostgreSQL License/;
	return @e;
}

open my $fh, '<', $file or die "cannot read $file: $!";
my $text = do { local $/; <$fh> };
my $meta = eval { $json->decode($text) };
my ($passed, $failed) = (0, 0);
my $report = sub {
	my ($ok, $what) = @_;
	print(($ok ? 'ok' : 'not ok') . " - $what\n");
	$ok ? $passed++ : $failed++;
};
unless (defined $meta)
{
	$report->(0, "$file is JSON");
	exit 1;
}

# positive controls: each broken copy must be rejected by the checks above
my @broken = (
	[ 'without a license', sub { delete $_[0]{license} } ],
	[ 'with an unknown license string', sub { $_[0]{license} = 'postgres' } ],
	[ 'with a version that is not SemVer', sub { $_[0]{version} = '0.2' } ],
	[ 'with a misspelt key', sub { $_[0]{licence} = 'postgresql' } ],
	[ 'with meta-spec 2.0.0', sub { $_[0]{'meta-spec'}{version} = '2.0.0' } ],
	[ 'with a provided extension without a file', sub { delete $_[0]{provides}{dp_pg}{file} } ],
	[ 'with a tag containing a slash', sub { push @{ $_[0]{tags} }, 'a/b' } ],
	[ 'with a bad version range', sub { $_[0]{prereqs}{runtime}{requires}{PostgreSQL} = '>= 15' } ],
	[ 'with an unknown prerequisite phase', sub { $_[0]{prereqs}{install} = { requires => { plpgsql => 0 } } } ],
	[ 'with an unknown release status', sub { $_[0]{release_status} = 'beta' } ],
	[ 'naming a file that is not in the tree', sub { $_[0]{provides}{dp_pg}{docfile} = 'docs/none.md' } ],
	[ 'with another version than dp_pg.control', sub { $_[0]{version} = $_[0]{provides}{dp_pg}{version} = '9.9.9' } ],
);
for my $b (@broken)
{
	my $copy = $json->decode($json->encode($meta));
	$b->[1]->($copy);
	my @e = (violations($copy), tree_violations($copy));
	$report->(scalar(@e) > 0, "positive control: META.json $b->[0] is rejected" . (@e ? " ($e[0])" : ''));
}

my @spec = violations($meta);
$report->(!@spec, "$file meets the PGXN Meta Spec 1.0.0");
print "#   $_\n" for @spec;
my @tree = tree_violations($meta);
$report->(!@tree, "$file agrees with dp_pg.control, the install script, debian/changelog and LICENSE");
print "#   $_\n" for @tree;
print "pgxn_meta: $passed passed, $failed failed\n";
exit($failed ? 1 : 0);
