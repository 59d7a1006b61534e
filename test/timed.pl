#!/usr/bin/perl
# test/timed.pl — run one job of test/all.sh and measure it: the wall time and
# the CPU time of every process it started, the test servers included.
#
#   perl test/timed.pl RESULT_FILE command [args...]
#   perl test/timed.pl DIR/ command [args...] FILE    result in DIR/FILE.res
#
# A server started by pg_ctl is a daemon: its parent exits and the server is
# reparented.  This process makes itself a child subreaper (prctl
# PR_SET_CHILD_SUBREAPER), so such orphans are reparented to it instead of to
# init and, once they exit and are reaped here, their CPU time (and that of
# their own reaped children: the backends) is counted too.  That CPU time is
# what the job costs whatever else the machine runs, so timings taken on a
# busy machine still say what a quiet one needs.
#
# RESULT_FILE gets one line "WALL_SECONDS CPU_SECONDS EXIT_STATUS".  Processes
# still running 30 s (DP_TIMED_GRACE) after the command ended are daemons the
# job left behind: they are named on stderr, not waited for (their CPU time
# is then missing) and not killed.
use strict;
use warnings;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time sleep);

my ($result, @cmd) = @ARGV;
die "usage: timed.pl RESULT_FILE command [args...]\n" unless defined $result && @cmd;
# RESULT_FILE a directory (ending in /): the result goes to DIR/NAME.res, NAME
# the last argument's file name (prove --exec: the test file)
$result .= ($cmd[-1] =~ s{.*/}{}r) . '.res' if $result =~ m{/$};
my $grace = $ENV{DP_TIMED_GRACE} // 30;

# become a child subreaper (Linux >= 3.4); without it, servers' CPU is not counted
my $subreaper = eval {
	require 'syscall.ph';
	syscall(&SYS_prctl, 36, 1, 0, 0, 0) == 0;    # PR_SET_CHILD_SUBREAPER
};
warn "timed.pl: no child subreaper: the CPU time of daemons is not counted\n" unless $subreaper;

my $t0 = time;
my $pid = fork // die "timed.pl: fork: $!\n";
if ($pid == 0)
{
	# a process group of its own: stopping the job stops all of it
	POSIX::setpgid(0, 0);
	exec { $cmd[0] } @cmd or die "timed.pl: $cmd[0]: $!\n";
}
# a stopped run must not leave the job behind
$SIG{INT} = $SIG{TERM} = sub { kill 'TERM', -$pid; };

my ($status, $ended);
while (1)
{
	my $k = waitpid(-1, defined $ended ? WNOHANG : 0);
	if ($k == $pid)
	{
		$status = $?;
		$ended = time;
	}
	elsif ($k == -1)
	{
		next if $!{EINTR};
		last;    # no child left
	}
	elsif ($k == 0)
	{
		if (time - $ended > $grace)
		{
			for my $stat (glob '/proc/[0-9]*/stat')
			{
				open my $fh, '<', $stat or next;
				my $line = <$fh> // next;
				my ($child, $ppid) = $line =~ /^(\d+) \(.*\) \S+ (\d+)/s or next;
				next unless $ppid == $$;
				open my $cf, '<', "/proc/$child/cmdline" or next;
				my $cmdline = join ' ', split /\0/, (<$cf> // '');
				warn "timed.pl: left running by '@cmd': pid $child $cmdline\n";
			}
			last;
		}
		sleep 0.2;
	}
}
my $wall = ($ended // time) - $t0;
my (undef, undef, $cuser, $csys) = times;
my $exit = !defined $status ? 255 : ($status & 127) ? 128 + ($status & 127) : $status >> 8;
open my $out, '>', $result or die "timed.pl: $result: $!\n";
printf $out "%.1f %.1f %d\n", $wall, $cuser + $csys, $exit;
close $out;
exit $exit;
