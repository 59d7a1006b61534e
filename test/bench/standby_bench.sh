#!/usr/bin/env bash
# test/bench/standby_bench.sh — charged dp queries on a primary alone and
# spread over the primary and two hot standbys, whose charges are forwarded
# to the primary's ledger (src/ledger/standby.c), on this one machine, fsync ON.
#
#   bash test/bench/standby_bench.sh           (as root or the postgres user)
#
# Starts a primary (test/lib.sh, private port) and two standbys made with
# `pg_basebackup -R` (nothing set for dp_pg: they forward through the
# primary_conninfo that -R writes; asynchronous replication).  An analyst with
# a budget runs a charged dp_count on a 1-row table (the fixed cost of a
# query) and, with DP_BENCH_ROWS rows (default 1M), on a bigger table (where
# reading rows is the work a standby takes off the primary).  Prints for each:
#   - p50/p99 latency of one session on the primary, and on a standby;
#   - charged queries/s with DP_BENCH_CLIENTS sessions (default 12) on the
#     primary alone, and the same number spread evenly over the three servers
#     (sum of the three pgbench runs, run at the same time), with p50/p99.
# SECONDS_PER_RUN (default 10) per measurement.  The ledger rows are counted
# at the end: one per answered query on any server.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
DP_PORT=${DP_PORT:-55470}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CLIENTS=${DP_BENCH_CLIENTS:-12}
ROWS=${DP_BENCH_ROWS:-1000000}

dp_install_deps
SCRATCH=$(dp_scratch)
P1=$((DP_PORT + 1))
P2=$((DP_PORT + 2))
stop_all() {
	for d in "$SCRATCH/s1" "$SCRATCH/s2" "$SCRATCH"; do
		dp_as_pg "$DP_PGBIN/pg_ctl" -D "$d/data" -m immediate -w stop >/dev/null 2>&1 || true
	done
	rm -rf "$SCRATCH"
}
trap stop_all EXIT
dp_cluster_start "$SCRATCH" "$DP_PORT" "max_connections = 60
wal_level = replica
max_wal_senders = 6
hot_standby = on
shared_buffers = 256MB"
dp_ledger_db "$SCRATCH" "$DP_PORT" postgres
dp_psql "$SCRATCH" "$DP_PORT" postgres <<SQL
CREATE TABLE one AS SELECT 1 AS id;
CREATE TABLE big AS SELECT g AS id FROM generate_series(1, $ROWS) g;
VACUUM ANALYZE big;
CREATE ROLE ana LOGIN;
SELECT dp_pg.protect('one');
SELECT dp_pg.protect('big');
SELECT dp_pg.set_budget('ana', 1e9, NULL);
SQL

# two standbys, the plain way
for s in 1 2; do
	port=$((DP_PORT + s))
	mkdir -p "$SCRATCH/s$s"
	chown postgres:postgres "$SCRATCH/s$s" 2>/dev/null || true
	dp_as_pg "$DP_PGBIN/pg_basebackup" -h "$SCRATCH" -p "$DP_PORT" -U postgres -D "$SCRATCH/s$s/data" -R -X stream -c fast
	dp_as_pg tee -a "$SCRATCH/s$s/data/postgresql.conf" >/dev/null <<CONF
port = $port
unix_socket_directories = '$SCRATCH/s$s'
cluster_name = 'standby$s'
CONF
	dp_as_pg "$DP_PGBIN/pg_ctl" -D "$SCRATCH/s$s/data" -l "$SCRATCH/s$s/server.log" -w start >/dev/null
	for i in $(seq 1 100); do
		[ "$(psql -X -h "$SCRATCH/s$s" -p "$port" -U postgres -Atc 'SELECT dp_pg.ledger_status()' postgres 2>/dev/null)" = ready ] && break
		sleep 0.2
	done
done
echo "fsync = $(dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc 'SHOW fsync'), ledger commits synchronous; standbys asynchronous; $(nproc) cores"

printf "SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM one;\n" >"$SCRATCH/one.sql"
printf "SELECT dp_count(id, 'laplace(epsilon=0.01)') FROM big;\n" >"$SCRATCH/big.sql"
chmod 644 "$SCRATCH"/*.sql

host_of() { case $1 in "$DP_PORT") echo "$SCRATCH" ;; "$P1") echo "$SCRATCH/s1" ;; *) echo "$SCRATCH/s2" ;; esac; }

# pgbench: run $1 clients on port $2 with script $3, per-transaction log prefix $4
run_pgbench() {
	local clients=$1 port=$2 script=$3 prefix=$4
	(cd "$SCRATCH" && dp_as_pg "$DP_PGBIN/pgbench" -n -h "$(host_of "$port")" -p "$port" -U ana -c "$clients" -j "$clients" \
		-T "$SECONDS_PER_RUN" -f "$script" -l --log-prefix="$prefix" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p')
}

# p50/p99 of the per-transaction logs named $1* (column 3: microseconds)
pct() {
	cat "$SCRATCH"/"$1"* | awk '{print $3}' | sort -n |
		awk '{a[NR]=$1} END {printf "n=%-7d p50=%7.3f ms  p99=%7.3f ms", NR, a[int(NR*0.5)]/1000, a[int(NR*0.99)]/1000}'
}

for shape in one big; do
	script="$SCRATCH/$shape.sql"
	echo "== dp_count on table '$shape' ($([ $shape = one ] && echo 1 row || echo "$ROWS rows"))"
	rm -f "$SCRATCH"/lat_*
	run_pgbench 1 "$DP_PORT" "$script" lat_p >/dev/null
	printf "  1 session on the primary        %s\n" "$(pct lat_p)"
	run_pgbench 1 "$P1" "$script" lat_s >/dev/null
	printf "  1 session on a standby          %s\n" "$(pct lat_s)"

	rm -f "$SCRATCH"/tp_*
	t=$(run_pgbench "$CLIENTS" "$DP_PORT" "$script" tp_alone)
	printf "  %2d sessions, primary alone      %8.1f charged queries/s  %s\n" "$CLIENTS" "$t" "$(pct tp_alone)"

	per=$((CLIENTS / 3))
	rest=$((CLIENTS - 2 * per))
	run_pgbench "$rest" "$DP_PORT" "$script" tp_sp >"$SCRATCH/t0" &
	run_pgbench "$per" "$P1" "$script" tp_ss1 >"$SCRATCH/t1" &
	run_pgbench "$per" "$P2" "$script" tp_ss2 >"$SCRATCH/t2" &
	wait
	total=$(cat "$SCRATCH/t0" "$SCRATCH/t1" "$SCRATCH/t2" | awk '{s+=$1} END {printf "%.1f", s}')
	printf "  %2d sessions, primary + 2 standbys %6.1f charged queries/s  (%s + %s + %s)\n" "$CLIENTS" "$total" \
		"$(cat "$SCRATCH/t0")" "$(cat "$SCRATCH/t1")" "$(cat "$SCRATCH/t2")"
	printf "     on the primary  %s\n     on the standbys %s\n" "$(pct tp_sp)" "$(pct tp_ss)"
done

dp_psql "$SCRATCH" "$DP_PORT" postgres -Atc \
	"SELECT 'ledger rows ' || count(*) || ', budget charges ' || (SELECT charges FROM dp_pg.budgets WHERE role = 'ana'::regrole) FROM dp_pg.ledger_entries WHERE kind = 'charge'"
