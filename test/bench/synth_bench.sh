#!/usr/bin/env bash
# test/bench/synth_bench.sh — dp_pg.synthesize on 1M rows against one
# GROUP BY over the same columns (the single pass that builds the measured
# marginals), median of ROUNDS runs each; also the twin of a unit table.
#   DP_PORT=<port> bash test/bench/synth_bench.sh   [ROWS=1000000 ROUNDS=5]
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-5}
PORT=${DP_PORT:-55432}
dp_test_install >/dev/null
SCRATCH=$(dp_scratch synth_bench)
trap 'dp_cluster_stop "$SCRATCH"; rm -rf "$SCRATCH"' EXIT
dp_cluster_start "$SCRATCH" "$PORT" "work_mem = '64MB'"
dp_ledger_db "$SCRATCH" "$PORT" postgres
q() { dp_psql "$SCRATCH" "$PORT" postgres "$@"; }
q <<SQL >/dev/null
CREATE TABLE people (person int NOT NULL, released text NOT NULL, colour text NOT NULL,
  year int NOT NULL CHECK (year BETWEEN 1997 AND 2002), age int NOT NULL CHECK (age BETWEEN 12 AND 66),
  sex text NOT NULL, employed text NOT NULL, citizen text NOT NULL, checks int NOT NULL CHECK (checks BETWEEN 0 AND 6));
INSERT INTO people SELECT i / 3, CASE WHEN random() < 0.8 THEN 'Yes' ELSE 'No' END,
  CASE WHEN random() < 0.75 THEN 'White' ELSE 'Black' END, 1997 + (random() * 5)::int, 12 + (random() * random() * 54)::int,
  CASE WHEN random() < 0.9 THEN 'Male' ELSE 'Female' END, CASE WHEN random() < 0.8 THEN 'Yes' ELSE 'No' END,
  CASE WHEN random() < 0.85 THEN 'Yes' ELSE 'No' END, (random() * 6)::int FROM generate_series(1, $ROWS) i;
CREATE TABLE visits AS SELECT * FROM people;
ANALYZE people, visits;
SELECT dp_pg.protect('people');
SELECT dp_pg.protect('visits', 'person', 1, 2);
SELECT dp_pg.set_public_keys(t, c, k) FROM (VALUES ('people'::regclass), ('visits')) r(t),
  (VALUES ('released'::name, ARRAY['No','Yes']), ('colour', ARRAY['Black','White']), ('sex', ARRAY['Female','Male']),
          ('employed', ARRAY['No','Yes']), ('citizen', ARRAY['No','Yes'])) s(c, k);
CREATE ROLE ana LOGIN;
SELECT dp_pg.set_budget('ana', 1e6, 1e-3);
GRANT CREATE ON SCHEMA public TO ana;
SQL
cols="released, colour, year, age, sex, employed, citizen, checks"
# milliseconds of one statement (psql's \timing), as role $1
ms() {
	q -c "SET ROLE $1" -c '\timing on' -c "$2" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
g=(); s=(); a=(); u=()
for r in $(seq 1 "$ROUNDS"); do
	g+=("$(ms postgres "SELECT count(*) FROM (SELECT $cols, count(*) FROM people GROUP BY $cols) x")")
	s+=("$(ms postgres "SELECT dp_pg.synthesize('people', 'twin_s$r', 'laplace(epsilon=1)')")")
	a+=("$(ms ana "SELECT dp_pg.synthesize('people', 'twin_a$r', 'gaussian(epsilon=1, delta=1e-6)')")")
	u+=("$(ms ana "SELECT dp_pg.synthesize('visits', 'twin_u$r', 'laplace(epsilon=1)')")")
done
G=$(printf '%s\n' "${g[@]}" | median)
S=$(printf '%s\n' "${s[@]}" | median)
A=$(printf '%s\n' "${a[@]}" | median)
U=$(printf '%s\n' "${u[@]}" | median)
echo "rows=$ROWS rounds=$ROUNDS (median ms)"
echo "GROUP BY 8 columns:                          $G"
echo "synthesize, superuser (no charge):           $S  ratio $(awk "BEGIN {printf \"%.2f\", $S / $G}")"
echo "synthesize, analyst (charged):               $A  ratio $(awk "BEGIN {printf \"%.2f\", $A / $G}")"
echo "synthesize, unit table (2 rows per person):  $U  ratio $(awk "BEGIN {printf \"%.2f\", $U / $G}")"
