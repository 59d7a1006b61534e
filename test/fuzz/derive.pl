#!/usr/bin/perl
# test/fuzz/derive.pl — dp queries built from sqlsmith's own predicates.
#
#   perl derive.pl QUERYFILE... > derived.sql
#
# sqlsmith never writes a query the guard answers (it puts aggregates only in
# window functions and one-argument scalar subqueries, and writes constants
# only for int4 and bool), so its statements test the guard's refusals only.
# This takes every WHERE clause sqlsmith wrote directly on one protected table
# ("from public.patients as ref_0 [tablesample ...] where <expr>") and, when
# <expr> names no other range variable, puts it into a dp query of the shape
# the guard answers — one of three per table, in turn (counts, GROUP BY on
# public keys or with partition selection, sums/averages) — so the guard's
# predicate checks and the answered path meet sqlsmith's operators and
# functions.  Every such query that succeeds must be charged, and no answer,
# error or notice may hold a canary (test/fuzz/replay.pl).  The templates
# follow test/fuzz/setup.sql.
use strict;
use warnings;

my %templates = (
	patients => [
		'select dp_count(*) as c0 from public.patients as {A} where {E}',
		'select {A}.region as c0, dp_count(*) as c1 from public.patients as {A} where {E} group by {A}.region',
		"select dp_avg({A}.income, 0, 100000, 'laplace(epsilon=0.000001)') as c0 from public.patients as {A} where {E}",
	],
	visits => [
		'select dp_count(*) as c0 from public.visits as {A} where {E}',
		'select {A}.ward as c0, dp_count(*) as c1 from public.visits as {A} where {E} group by {A}.ward',
		"select dp_sum({A}.amount, 0, 100000, 'laplace(epsilon=0.000001)') as c0 from public.visits as {A} where {E}",
	],
);
my $tables = join '|', map { quotemeta } sort keys %templates;

local $/;
my $all = join '', map { open my $f, '<', $_ or die "$_: $!\n"; <$f> } @ARGV;
my $len = length $all;
my (%seen, %turn);
my $n = 0;
while ($all =~ /\bfrom\s+public\.($tables)\s+as\s+(\w+)\s*(?:tablesample\s+\w+\s*\([^()]*\)\s*)?\s+where\b/gi) {
	my ($t, $alias, $start) = (lc $1, $2, pos($all));
	# the predicate ends at the end of its (sub)query: a ")" closing it,
	# LIMIT / GROUP BY / ORDER BY at its depth, or the ";" of the statement
	my ($depth, $i, $quoted) = (0, $start, 0);
	for (; $i < $len; $i++) {
		my $c = substr($all, $i, 1);
		if ($quoted) { $quoted = 0 if $c eq "'"; next }
		if ($c eq "'") { $quoted = 1 }
		elsif ($c eq '(') { $depth++ }
		elsif ($c eq ')') { last if $depth == 0; $depth-- }
		elsif ($depth == 0 && $c eq ';') { last }
		elsif ($depth == 0 && $c =~ /[lgo]/i && substr($all, $i - 1, 1) =~ /\s/ &&
			substr($all, $i, 12) =~ /^(?:limit|group\s+by|order\s+by)\b/i) { last }
	}
	pos($all) = $start;    # nested queries may hold further candidates
	my $e = substr($all, $start, $i - $start);
	$e =~ s/\s+/ /g;
	$e =~ s/^ | $//g;
	next unless length $e;
	# another range variable (an outer query's) would not resolve
	next if grep { $_ ne $alias } $e =~ /\b((?:ref|sample|subq)_\d+)\./g;
	next if $seen{"$t $alias $e"}++;
	my $tpl = $templates{$t}[$turn{$t}++ % @{$templates{$t}}];
	(my $q = $tpl) =~ s/\{A\}/$alias/g;
	$q =~ s/\{E\}/$e/;
	print "$q;\n";
	$n++;
}
print STDERR "derived $n dp queries from sqlsmith's predicates\n";
