#!/usr/bin/env bash
# test/bench/ledger_bench.sh — fixed cost of a charged dp query and charged
# queries per second under load, on a throw-away cluster with fsync ON
# (the ledger's durability is what is being measured).
#
#   bash test/bench/ledger_bench.sh            (as root or the postgres user)
#
# Prints: p50/p99 latency of one analyst session running a dp_count on a
# 1-row table (charged), the same query by a role without a budget (planned,
# not charged) and a plain count(*); then charged queries/s over 16 sessions.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
DP_PORT=${DP_PORT:-55460}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}

dp_install_deps
SCRATCH=$(dp_scratch)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT
dp_cluster_start "$SCRATCH" "$DP_PORT" "max_connections = 40"
dp_ledger_db "$SCRATCH" "$DP_PORT" postgres
dp_psql "$SCRATCH" "$DP_PORT" postgres <<'SQL'
CREATE TABLE one AS SELECT 1 AS id;
CREATE TABLE prot AS SELECT 1 AS id;
CREATE ROLE ana LOGIN;
CREATE ROLE trusted LOGIN;
GRANT SELECT ON one TO ana, trusted;
SELECT dp_pg.protect('prot');
GRANT SELECT ON prot TO trusted;
SELECT dp_pg.set_budget('ana', 1e9, NULL);
SQL
SHOW_FSYNC=$(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc "SHOW fsync")
echo "fsync = $SHOW_FSYNC, synchronous_commit of the ledger = on"

printf "SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM one;\n" > "$SCRATCH/dp.sql"
printf "SELECT count(*) FROM one;\n" > "$SCRATCH/plain.sql"
printf "SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM prot;\n" > "$SCRATCH/prot.sql"
chmod 644 "$SCRATCH"/*.sql

# latency percentiles from pgbench's per-transaction log (column 3: microseconds)
latency() {
	local user=$1 script=$2 tag=$3
	rm -f "$SCRATCH"/pgbench_log.*
	(cd "$SCRATCH" && dp_as_pg "$DP_PGBIN/pgbench" -n -h "$SCRATCH" -p "$DP_PORT" -U "$user" -c 1 -T "$SECONDS_PER_RUN" \
		-f "$script" -l postgres >/dev/null 2>&1)
	cat "$SCRATCH"/pgbench_log.* | awk '{print $3}' | sort -n |
		awk -v tag="$tag" '{a[NR]=$1} END {printf "%-40s n=%-7d p50=%.3f ms  p99=%.3f ms\n", tag, NR, a[int(NR*0.5)]/1000, a[int(NR*0.99)]/1000}'
}
latency ana "$SCRATCH/dp.sql" "dp_count, analyst (charged)"
latency trusted "$SCRATCH/dp.sql" "dp_count, role without budget"
latency trusted "$SCRATCH/plain.sql" "count(*), plain"
latency ana "$SCRATCH/prot.sql" "dp_count, analyst, protected table (guard)"
latency trusted "$SCRATCH/prot.sql" "dp_count, trusted role, same table"

tps() {
	dp_as_pg "$DP_PGBIN/pgbench" -n -h "$SCRATCH" -p "$DP_PORT" -U ana -c 16 -j 2 -T "$SECONDS_PER_RUN" -f "$SCRATCH/dp.sql" postgres 2>&1 |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
echo "charged queries/s, 16 sessions: $(tps)"
dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc \
	"SELECT 'ledger rows ' || count(*) || ', budget charges ' || (SELECT charges FROM dp_pg.budgets WHERE role = 'ana'::regrole) FROM dp_pg.ledger_entries WHERE kind = 'charge'"
