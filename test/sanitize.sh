#!/usr/bin/env bash
# test/sanitize.sh — dp_pg's suites with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc's -fsanitize=address,undefined, every
# report fatal): the newest leg of test/all.sh alone.  Its server is the
# newest PostgreSQL of Debian unstable built with them (test/newpg.sh with
# DP_NEWPG_SANITIZE=1, cached in /var/tmp/dp_pg-newpg/pg-X.Y-san); dp_pg's test
# build and the plain-C suites are compiled with them too.  (Preloading the
# runtimes into Debian's own server instead deadlocks at its start.)  Leak
# detection is off: PostgreSQL frees by memory context, not by free().
# Passes when every suite passes, no sanitizer wrote a report and the
# sanitizers' positive controls (a deliberate heap overflow, signed overflow
# and SIGSEGV) each left one.
#
#   bash test/sanitize.sh        (DP_TEST_ONLY="regress tap" etc. as for test/all.sh)
set -uo pipefail
DP_TEST_LEGS=newest DP_TEST_SANITIZE=1 exec bash "$(dirname "${BASH_SOURCE[0]}")/all.sh" "$@"
