#!/usr/bin/env bash
# test/rootclone.sh — the test command from a clone that only root can enter.
#
# A root user's first clone is often /root/dp_pg, and /root is 0700: the
# postgres user, which the test servers and the TAP files run as, cannot
# enter it.  This clones the repository into a directory only root can enter
# (git clone, then the work tree under test copied over it, uncommitted
# changes included) and runs the test command there, as README says, for two
# TAP files: t/001_preload.pl, which must pass, and a file added to the clone
# that dies before its plan (what every TAP file did from such a clone before
# test/all.sh ran from a readable copy).  Checked:
#   - the postgres user cannot enter the clone's directory (the premise);
#   - the run says it ran from a copy the postgres user can read, and did not
#     rebuild dp_pg (the leg's test build is reused: the sources are the same);
#   - every test of t/001_preload.pl passed;
#   - the file that died before its plan counts as a failure, is named, and
#     the run's last line says that a test file stopped before its plan.
# Uses the leg's private server copy (DP_TEST_PGROOT) and the suite's ports
# (DP_SUITE_PORT); as a user other than root there is nothing to check.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

P=0 F=0
check() {
	if eval "$2"; then
		echo "ok: $1"; P=$((P + 1))
	else
		echo "not ok: $1"; F=$((F + 1))
	fi
}

if [ "$(id -u)" != 0 ]; then
	echo "rootclone: not root, nothing to check"
	echo "rootclone: 0 passed, 0 failed"
	exit 0
fi

DIR=$(mktemp -d /tmp/dp_pg-rootclone.XXXXXX)	# mode 0700, owned by root
trap 'rm -rf "$DIR"' EXIT
CLONE=$DIR/dp_pg
if git -C "$DP_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git clone -q --no-hardlinks "$DP_ROOT" "$CLONE" || { echo "rootclone: git clone failed"; echo "rootclone: 0 passed, 1 failed"; exit 1; }
	echo "cloned $DP_ROOT into $CLONE, then copied its work tree over the clone"
else
	echo "copied $DP_ROOT (no .git: itself a copy) into $CLONE"
fi
dp_sync_tree "$CLONE"
cat >"$CLONE/test/t/000_dies_before_plan.pl" <<'PERL'
# (test/rootclone.sh) dies before its plan, as a TAP file that cannot be read does
die "this file dies before its plan\n";
PERL

check "the postgres user cannot enter $DIR (mode $(stat -c %a "$DIR"))" \
	'! runuser -u postgres -- test -x "$DIR" 2>/dev/null'

# the test command, as a newcomer runs it, from the clone, with this leg's
# server copy and test build; its own ports, and its timing history apart
# from this machine's (it would reorder the next run's jobs)
(cd "$CLONE" && env -u DP_PGBIN -u DP_PG_CONFIG -u DP_SRC_COPY -u RUN DP_TEST_LEGS=pg15 DP_TEST_ONLY=tap \
	DP_TAP_ONLY='^t/00[01]_' DP_PORT="$DP_SUITE_PORT" DP_HISTORY="$DIR/history" DP_JOBS=1 \
	DP_TEST_PGROOT="${DP_TEST_PGROOT:-/var/tmp/dp_pg-test-pg$DP_PGVER}" \
	bash test/all.sh) >"$DIR/run.out" 2>&1
rc=$?
# what it said: its first lines, its verdict on each TAP file, its summary
{ head -3 "$DIR/run.out"; echo ...; grep -E '(^| )t/00[01]_[a-z_]*\.pl \.' "$DIR/run.out"; echo ...
  sed -n '/^=== dp_pg test summary/,$p' "$DIR/run.out"; } | sed 's/^/    | /'

last=$(tail -1 "$DIR/run.out")
check "the run says the postgres user cannot read the clone and runs from a copy it can read" \
	'grep -q "^=== the postgres user cannot read $CLONE (it cannot enter $DIR" "$DIR/run.out" &&
	 grep -q "running from a copy the test servers can read" "$DIR/run.out"'
check "dp_pg was not rebuilt (the leg's test build was reused)" \
	'grep -q "not rebuilt" "$DIR/run.out"'
check "t/001_preload.pl passed" \
	'grep -qE "(^| )t/001_preload\.pl \.+ ok" "$DIR/run.out"'
check "the TAP job counts every test of t/001_preload.pl as passed and one failure: the file that died before its plan" \
	'grep -qE "^ +tap +[1-9][0-9]* passed, 1 failed \(1 of them test files that stopped before their plan\)$" "$DIR/run.out"'
check "the file that died before its plan is named" \
	'grep -q "^  tap: 000_dies_before_plan.pl$" "$DIR/run.out"'
check "the last line says a test file stopped before its plan: $last" \
	'echo "$last" | grep -qE "^total: [1-9][0-9]* passed, 1 failed, 1 of them test files that stopped before their plan: their tests did not run$"'
check "the run failed (exit status $rc)" '[ "$rc" != 0 ]'
echo "rootclone: $P passed, $F failed"
[ "$F" = 0 ]
