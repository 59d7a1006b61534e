--
-- Privacy units: per-unit contribution bounding (dp_pg.protect(tbl, unit,
-- max_groups_contributed g, max_rows_per_unit r), or dp_pg.privacy_unit for
-- a trusted role on a table that is not protected).
--
-- 1. exact pre-noise values (dp_pg.debug_noiseless, superuser sessions of the
--    test build only): every dp aggregate equals the bounded value computed
--    here in plain SQL from the raw table (dp_count, dp_sum of int4, int8,
--    float8 and numeric, dp_avg, dp_histogram in its three forms); one unit
--    moves a count by <= r, a sum by <= r max(|lo|, |hi|), and at most g
--    groups / histogram bins;
-- 2. the same bounding for a trusted role with the session settings, and the
--    catalog's declaration winning over them on a protected table;
-- 3. parallel plans give exactly the serial values;
-- 4. released (noisy) values lie near the bounded truth, far from the
--    unbounded one, and noise is there for a non-superuser session even with
--    debug_noiseless on;
-- 5. the analyst path (guard rewrite, public keys, partition selection): exact
--    values through SET ROLE under a noiseless superuser session, then noisy
--    values in an analyst session; every charge is what dp_pg.estimate_cost
--    says for the same query and what the split mechanism composes to (the
--    requested epsilon, delta or rho);
-- 6. refused statements (SQLSTATE; the ledger does not change).
-- dp_avg on a unit table is supported: each unit counts least(rows, r) rows
-- at its mean of clamped values (noise for the centred sum at r (hi - lo) / 2
-- and for the count at r, each with half of the mechanism).
--
-- Noisy values are checked by properties, never by value.  A discrete Laplace
-- answer of scale b is checked within 25 b of the truth (P(|noise| >= 25 b)
-- <= 2 e^-25 < 3e-11), a discrete Gaussian one within 7 sigma + 1 (< 1e-11,
-- sql/dp_count.sql); a key of one unit is released by partition selection with
-- probability <= delta / g = 5e-13 here; a float8 or numeric sum with
-- Laplace noise on a lattice of about 2^-30 of its scale equals one given
-- value with probability < 1e-9.  Each check's probability is stated where it
-- is made (each <= 1e-9); the file makes fewer than 100 of them and fails by
-- chance with probability < 3e-9.  The exact checks (noiseless) cannot fail
-- by chance, except choice_varies (the heavy unit's random cells differ over
-- 12 repetitions; 4 checks, each failing with probability 10^-11).
--
-- Data (unit_test.events, 2005 rows, protected with unit pid, g = 2, r = 3):
--   a heavy unit pid = 0: 1000 rows, k = i % 5 (200 rows per k), tag 'rare'
--     for i % 10 = 0 (100 rows) else 't' || k, so 5 cells by k and 6 by tag;
--   400 light units pid = 1..400 with 1 + pid % 4 rows each, in one cell
--     (pid % 8 < 4, so 4-row units exceed r in their cell) or two (else);
--   one NULL unit: 5 rows (NULL unit values form one unit: counted <= r).
-- So light units never exceed g cells: only the heavy unit's cells are
-- chosen at random, and every bounded value is exact except which g of the
-- heavy unit's cells are kept.
--
SET search_path = unit_test, public;
CREATE SCHEMA unit_test;
CREATE ROLE unit_analyst;
CREATE ROLE unit_trusted;
GRANT USAGE ON SCHEMA unit_test TO unit_analyst, unit_trusted;

CREATE TABLE unit_test.events AS
SELECT 0 AS pid, i % 5 AS k, CASE WHEN i % 10 = 0 THEN 'rare' ELSE 't' || i % 5 END AS tag,
       i % 5 + 0.25::float8 AS v, i % 13 - 6 AS x, CASE WHEN i % 3 = 0 THEN NULL ELSE 1 END AS y
FROM generate_series(1, 1000) i
UNION ALL
SELECT pid, c, 't' || c,
       CASE WHEN c = 0 AND pid % 2 = 1 THEN -3 WHEN c = 4 AND pid % 2 = 1 THEN 7.5 ELSE c + 0.5 END,
       (pid * 7 + j * 3) % 13 - 6, CASE WHEN (pid + j) % 3 = 0 THEN NULL ELSE j END
FROM generate_series(1, 400) pid, generate_series(1, 1 + pid % 4) j,
     LATERAL (SELECT (pid + CASE WHEN pid % 8 < 4 THEN 0 ELSE j % 2 END) % 5 AS c) s
UNION ALL
SELECT NULL, 2, 't2', 2.5, 6, 1 FROM generate_series(1, 5);
-- the same values in every dp_sum input type: int8 (x 1000), float8 and numeric (x / 4)
ALTER TABLE unit_test.events ADD COLUMN x8 int8, ADD COLUMN f float8, ADD COLUMN nm numeric;
UPDATE unit_test.events SET x8 = x * 1000, f = x / 4.0, nm = x / 4.0;
ANALYZE unit_test.events;
-- a copy that is not protected (section 2)
CREATE TABLE unit_test.free AS SELECT * FROM unit_test.events;
GRANT SELECT ON unit_test.free, unit_test.events TO unit_trusted;

SELECT dp_pg.protect('unit_test.events', 'pid', max_groups_contributed => 2, max_rows_per_unit => 3);
SELECT dp_pg.set_public_keys('unit_test.events', 'k', ARRAY[0, 1, 2, 3, 4, 5]);
SELECT relid::regclass, privacy_unit, max_groups_contributed, max_rows_per_unit
FROM dp_pg.protected_tables WHERE relid = 'unit_test.events'::regclass;
SELECT dp_pg.set_budget('unit_analyst', 1000, 1e-4);

--
-- The truths, in plain SQL on the raw table (superuser).  Sums use
-- [lo, hi] = [-4, 6] (int4), [-4000, 6000] (int8), [-1, 1.5] (float8,
-- numeric): a unit's sum is clamped to [3 lo, 3 hi].
--
-- per unit, without cells: the query variants below (all rows; without the
-- heavy unit; WHERE k <> 3).  dp_avg(f, -1, 1.5): each unit counts
-- least(rows, r) rows at its mean of clamped values, about the centre 0.25.
CREATE TABLE unit_test.truth AS
SELECT variant, sum(least(n, 3)) AS cnt, sum(least(n, 3)) FILTER (WHERE pid IS NOT NULL) AS cnt_pid,
       sum(least(ny, 3)) AS cnt_y, sum(least(npos, 3)) AS cnt_pos,
       sum(greatest(-12, least(18, s4))) AS s4, sum(greatest(-12000, least(18000, s8))) AS s8,
       sum(greatest(-3, least(4.5, sf))) AS sf, sum(greatest(-3, least(4.5, sn))) AS sn,
       least(1.5, greatest(-1, 0.25 + sum(least(n, 3) * (mf - 0.25)) / greatest(sum(least(n, 3)), 1))) AS af,
       sum(least(n, 3) * (mf - 0.25)) AS acs,
       sum(n) AS raw_cnt, count(*) AS units
FROM (VALUES ('all'), ('no_heavy'), ('k_not_3')) v(variant),
LATERAL (SELECT pid, count(*) AS n, count(y) AS ny, count(*) FILTER (WHERE x > 0) AS npos,
                sum(greatest(-4, least(6, x))) AS s4, sum(greatest(-4000, least(6000, x8))) AS s8,
                sum(greatest(-1, least(1.5, f))) AS sf, sum(greatest(-1, least(1.5, nm))) AS sn,
                avg(greatest(-1, least(1.5, f))) AS mf
         FROM unit_test.events
         WHERE CASE variant WHEN 'no_heavy' THEN pid IS DISTINCT FROM 0 WHEN 'k_not_3' THEN k <> 3 ELSE true END
         GROUP BY pid) u
GROUP BY variant;
-- per (unit, cell) for each kind of cell: the GROUP BY key k, the tag, and
-- the bin of v in dp_histogram(v, 0, 5, 5, ...) (labels '[0,1)' .. '[4,5)')
CREATE TABLE unit_test.cells AS
SELECT 'k' AS by, pid, k::text AS cell, count(*) AS n, sum(greatest(-4, least(6, x))) AS s,
       avg(greatest(-1, least(1.5, f))) AS m
FROM unit_test.events GROUP BY pid, k
UNION ALL
SELECT 'tag', pid, tag, count(*), sum(greatest(-4, least(6, x))), avg(greatest(-1, least(1.5, f)))
FROM unit_test.events GROUP BY pid, tag
UNION ALL
SELECT 'bin', pid, '[' || b || ',' || b + 1 || ')', count(*), sum(greatest(-4, least(6, x))), avg(greatest(-1, least(1.5, f)))
FROM (SELECT pid, x, f, least(4, greatest(0, floor(v)))::int AS b FROM unit_test.events) e GROUP BY pid, b;
-- per cell: the bounded value without the heavy unit (light: every unit
-- keeps all its <= 2 cells), the heavy unit's bounded contribution to it,
-- distinct units, the unbounded count, and dp_avg(f, -1, 1.5) without /
-- with the heavy unit's cell (light_avg / with_heavy_avg; the centre 0.25 if empty)
CREATE TABLE unit_test.cell_truth AS
SELECT by, cell,
       coalesce(sum(least(n, 3)) FILTER (WHERE pid IS DISTINCT FROM 0), 0) AS light_n,
       coalesce(sum(greatest(-12, least(18, s))) FILTER (WHERE pid IS DISTINCT FROM 0), 0) AS light_s,
       coalesce(sum(least(n, 3)) FILTER (WHERE pid = 0), 0) AS heavy_n,
       coalesce(sum(greatest(-12, least(18, s))) FILTER (WHERE pid = 0), 0) AS heavy_s,
       count(*) AS units, sum(n) AS raw_n,
       0.25 + coalesce(sum(least(n, 3) * (m - 0.25)) FILTER (WHERE pid IS DISTINCT FROM 0), 0)
              / greatest(coalesce(sum(least(n, 3)) FILTER (WHERE pid IS DISTINCT FROM 0), 0), 1) AS light_avg,
       0.25 + sum(least(n, 3) * (m - 0.25)) / sum(least(n, 3)) AS with_heavy_avg
FROM unit_test.cells GROUP BY by, cell;
GRANT SELECT ON unit_test.truth, unit_test.cells, unit_test.cell_truth TO unit_analyst, unit_trusted;
-- the design holds: light units have <= g = 2 cells; the heavy unit has 5
-- (k, bin) or 6 (tag) cells, each with more than r rows and a non-zero
-- clamped sum; unbounded and bounded totals differ
SELECT by, max(cells) FILTER (WHERE pid IS DISTINCT FROM 0) AS light_max_cells,
       max(cells) FILTER (WHERE pid = 0) AS heavy_cells
FROM (SELECT by, pid, count(*) AS cells FROM unit_test.cells GROUP BY by, pid) c GROUP BY by ORDER BY by;
SELECT bool_and(n > 3 AND s <> 0) AS heavy_cells_full FROM unit_test.cells WHERE pid = 0;
-- (and moves each group's dp_avg by more than 1e-6, far above the 1e-9 tolerance used below)
SELECT bool_and(abs(light_avg - with_heavy_avg) > 1e-6) AS heavy_moves_each_avg FROM unit_test.cell_truth WHERE by = 'k';
SELECT variant, cnt, raw_cnt, units FROM unit_test.truth ORDER BY variant;
SELECT by, cell, light_n, heavy_n, units, raw_n FROM unit_test.cell_truth WHERE by = 'tag' ORDER BY cell;

--
-- Helpers
--
-- Run a dp query as a top-level statement of its own and return its rows
-- (RETURN QUERY may use a parallel plan); rep only makes each call distinct,
-- so that a LATERAL call runs the query again.
CREATE FUNCTION unit_test.run(q text, rep int DEFAULT 0) RETURNS SETOF record LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE q;
END $$;
-- Judge repeated releases of a bounded query with cells.  res: a jsonb array of
-- {rep, cell, n[, s]} (a count and optionally an int4 dp_sum(x, -4, 6) of one
-- cell); by: the kind of cell in unit_test.cell_truth.  Per repetition:
--   cells_ok         the cells released are all of must and none outside must + may;
--   within_bound     each cell moved by the heavy unit by 0..r (count) and
--                    |.| <= r max(|lo|, |hi|) = 18 (sum) from the light truth;
--   heavy_or_nothing each cell is exactly the light truth, or the light truth
--                    plus the heavy unit's bounded contribution (count and sum
--                    together: one choice of cells per unit);
--   moved_ok         the number of cells the heavy unit moved is moved
--                    (or <= g = 2 if moved is NULL);
-- and over the repetitions, choice_varies: not always the same cells.
CREATE FUNCTION unit_test.judge(res jsonb, by text, must text[], may text[], moved int,
	OUT reps int, OUT cells_ok boolean, OUT within_bound boolean, OUT heavy_or_nothing boolean,
	OUT moved_ok boolean, OUT choice_varies boolean)
LANGUAGE sql AS $$
	WITH r AS (
		SELECT (e->>'rep')::int AS rep, e->>'cell' AS cell, (e->>'n')::numeric AS n, (e->>'s')::numeric AS s
		FROM jsonb_array_elements(res) e),
	d AS (
		SELECT r.rep, r.cell, r.n - coalesce(t.light_n, 0) AS dn, r.s - coalesce(t.light_s, 0) AS ds,
		       coalesce(t.heavy_n, 0) AS hn, coalesce(t.heavy_s, 0) AS hs
		FROM r LEFT JOIN unit_test.cell_truth t ON t.by = judge.by AND t.cell = r.cell),
	p AS (
		SELECT rep, array_agg(cell) AS cells,
		       bool_and(dn BETWEEN 0 AND 3 AND coalesce(abs(ds) <= 18, true)) AS wb,
		       bool_and((dn = 0 AND coalesce(ds = 0, true)) OR (dn = hn AND coalesce(ds = hs, true))) AS hon,
		       count(*) FILTER (WHERE dn <> 0 OR ds <> 0) AS nmoved,
		       string_agg(cell, ',' ORDER BY cell) FILTER (WHERE dn <> 0) AS chosen
		FROM d GROUP BY rep)
	SELECT count(*)::int, bool_and(cells @> must AND cells <@ (must || may)), bool_and(wb), bool_and(hon),
	       bool_and(CASE WHEN judge.moved IS NULL THEN nmoved <= 2 ELSE nmoved = judge.moved END),
	       count(DISTINCT chosen) > 1
	FROM p
$$;
-- Ledger bookkeeping for unit_analyst's charges: expect(q) records
-- dp_pg.estimate_cost(q) (run by the caller: the analyst) and the ledger's
-- position; charged(...) then reports the charges since, and whether they
-- equal times x the estimate and the amounts the spec gives (relative
-- tolerance 1e-9): epsilon and delta, or for a rho form rho (and no epsilon).
CREATE TABLE unit_test.mark (est_eps float8, est_delta float8, est_rho float8, last_id bigint);
GRANT SELECT, INSERT, DELETE ON unit_test.mark TO unit_analyst;
CREATE FUNCTION unit_test.close(a float8, b float8) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
	SELECT coalesce((a IS NULL AND b IS NULL) OR abs(a - b) <= 1e-9 * abs(b), false)
$$;
CREATE FUNCTION unit_test.expect(q text) RETURNS void LANGUAGE sql AS $$
	DELETE FROM unit_test.mark;
	INSERT INTO unit_test.mark
	SELECT e.epsilon, e.delta, e.rho,
	       (SELECT coalesce(max(id), 0) FROM dp_pg.ledger WHERE role = 'unit_analyst'::regrole)
	FROM dp_pg.estimate_cost(q) e;
$$;
CREATE FUNCTION unit_test.charged(times int, exp_eps float8, exp_delta float8, exp_rho float8 DEFAULT NULL,
	OUT charges bigint, OUT epsilon numeric, OUT as_estimated boolean, OUT as_specified boolean)
LANGUAGE sql AS $$
	SELECT count(l.id), round(sum(l.epsilon)::numeric, 6),
	       count(l.id) = times AND unit_test.close(sum(l.epsilon), times * m.est_eps)
	       AND unit_test.close(sum(l.delta), times * m.est_delta)
	       AND (exp_rho IS NULL OR unit_test.close(sum(l.rho), times * m.est_rho)),
	       count(l.id) = times AND CASE WHEN exp_rho IS NULL
	           THEN unit_test.close(sum(l.epsilon), times * exp_eps) AND unit_test.close(sum(l.delta), times * exp_delta)
	           ELSE unit_test.close(sum(l.rho), times * exp_rho) AND sum(l.epsilon) IS NULL END
	FROM unit_test.mark m LEFT JOIN dp_pg.ledger l
	     ON l.role = 'unit_analyst'::regrole AND l.kind = 'charge' AND l.id > m.last_id
	GROUP BY m.est_eps, m.est_delta, m.est_rho
$$;
-- Every ledger row (any role, any kind): errors must not add any.
CREATE FUNCTION unit_test.ledger_rows() RETURNS bigint LANGUAGE sql SECURITY DEFINER
	SET search_path = pg_catalog AS $$
	SELECT count(*) FROM dp_pg.ledger
$$;
-- Run a statement; report "SQLSTATE: message" (or "no error"), and
-- " [LEDGER GREW]" if a ledger row was added meanwhile.
CREATE FUNCTION unit_test.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	before bigint := unit_test.ledger_rows();
	r text;
BEGIN
	BEGIN
		EXECUTE q;
		r := 'no error';
	EXCEPTION WHEN OTHERS THEN
		r := SQLSTATE || ': ' || SQLERRM;
	END;
	IF unit_test.ledger_rows() <> before THEN
		r := r || ' [LEDGER GREW]';
	END IF;
	RETURN r;
END $$;
-- Whether EXPLAIN (COSTS OFF) of q shows a plan node containing pat.
CREATE FUNCTION unit_test.plan_has(q text, pat text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		IF position(pat IN line) > 0 THEN
			RETURN true;
		END IF;
	END LOOP;
	RETURN false;
END $$;

--
-- 1. Exact pre-noise values (superuser session, test build)
--
SET dp_pg.debug_noiseless = on;
-- partition selection (GROUP BY tag) needs a threshold below the ~110 units
-- of each t-group: split over g = 2 cells, gaussian(2, 5e-13) per cell
SET dp_pg.partition_mechanism = 'gaussian(epsilon=4, delta=1e-12)';
SELECT dp_pg.partition_threshold('gaussian(epsilon=2, delta=5e-13)') BETWEEN 2 AND 60 AS threshold_between_rare_and_t;

-- without cells (no GROUP BY, no histogram): one cell, every unit bounded;
-- every aggregate equals the bounded truth (dp_avg: its exact sum is rounded
-- to a lattice of ~2^-30 of the noise scale, so within 1e-9), and the count
-- is not the raw one
SELECT r.c = t.cnt AS count_star, r.cp = t.cnt_pid AS count_unit_column, r.cy = t.cnt_y AS count_not_null,
       r.cf = t.cnt_pos AS count_filter, r.s4 = t.s4 AS sum_int4, r.s8 = t.s8 AS sum_int8,
       r.sf = t.sf AS sum_float8, r.sn = t.sn AS sum_numeric, abs(r.af - t.af) <= 1e-9 AS avg,
       r.c < t.raw_cnt AS bounded
FROM unit_test.run($q$
	SELECT dp_count(*), dp_count(pid, 'laplace(epsilon=1)'), dp_count(y, 'laplace(epsilon=1)'),
	       dp_count(*) FILTER (WHERE x > 0),
	       dp_sum(x, -4, 6, 'laplace(epsilon=1)'), dp_sum(x8, -4000, 6000, 'laplace(epsilon=1)'),
	       dp_sum(f, -1, 1.5, 'laplace(epsilon=1)'), dp_sum(nm, -1, 1.5, 'gaussian(epsilon=1, delta=1e-6)'),
	       dp_avg(f, -1, 1.5, 'laplace(epsilon=1)')
	FROM events$q$) AS r(c bigint, cp bigint, cy bigint, cf bigint, s4 bigint, s8 bigint, sf float8, sn numeric, af float8),
     unit_test.truth t
WHERE t.variant = 'all';
-- WHERE applies before bounding
SELECT r.c = t.cnt AS count_star, r.s4 = t.s4 AS sum_int4
FROM unit_test.run($q$SELECT dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events WHERE k <> 3$q$)
     AS r(c bigint, s4 bigint),
     unit_test.truth t
WHERE t.variant = 'k_not_3';
-- adding the heavy unit (1000 rows) to the others moves the count by exactly
-- r = 3 and each sum by its clamped total, at most r max(|lo|, |hi|)
SELECT a.c - b.c AS count_moved, abs(a.s4 - b.s4) <= 18 AS int4_within, abs(a.s8 - b.s8) <= 18000 AS int8_within,
       abs(a.sf - b.sf) <= 4.5 AS float8_within, abs(a.sn - b.sn) <= 4.5 AS numeric_within,
       b.c = t.cnt AND b.s4 = t.s4 AND b.s8 = t.s8 AND b.sf = t.sf AND b.sn = t.sn AS without_heavy_exact
FROM unit_test.run($q$
	SELECT dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)'), dp_sum(x8, -4000, 6000, 'laplace(epsilon=1)'),
	       dp_sum(f, -1, 1.5, 'laplace(epsilon=1)'), dp_sum(nm, -1, 1.5, 'laplace(epsilon=1)')
	FROM events$q$) AS a(c bigint, s4 bigint, s8 bigint, sf float8, sn numeric),
     unit_test.run($q$
	SELECT dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)'), dp_sum(x8, -4000, 6000, 'laplace(epsilon=1)'),
	       dp_sum(f, -1, 1.5, 'laplace(epsilon=1)'), dp_sum(nm, -1, 1.5, 'laplace(epsilon=1)')
	FROM events WHERE pid <> 0 OR pid IS NULL$q$) AS b(c bigint, s4 bigint, s8 bigint, sf float8, sn numeric),
     unit_test.truth t
WHERE t.variant = 'no_heavy';

-- GROUP BY k (declared public keys 0..5: every key appears, 5 empty), 12
-- repetitions: the heavy unit keeps a random 2 of its 5 cells, each capped at
-- r rows and its sum at [3 lo, 3 hi]; count and sum move in the same cells.
-- choice_varies fails by chance only if all 12 uniform choices among the 10
-- pairs agree: probability 10^-11.
SELECT (unit_test.judge(jsonb_agg(jsonb_build_object('rep', rep, 'cell', r.k::text, 'n', r.n, 's', r.s)),
                        'k', '{0,1,2,3,4,5}', '{}', 2)).*
FROM generate_series(1, 12) rep,
     LATERAL unit_test.run($q$SELECT k, dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events GROUP BY k$q$, rep)
     AS r(k int, n bigint, s bigint);
-- without the heavy unit nothing moves: exactly the light truth
SELECT reps, cells_ok, within_bound, heavy_or_nothing, moved_ok AS nothing_moved
FROM unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', 1, 'cell', r.k::text, 'n', r.n, 's', r.s))
	FROM unit_test.run($q$SELECT k, dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events
	                      WHERE pid <> 0 OR pid IS NULL GROUP BY k$q$) AS r(k int, n bigint, s bigint)),
	'k', '{0,1,2,3,4,5}', '{}', 0);
-- dp_avg with GROUP BY k: each group's average is the light units' one, or
-- (in exactly 2 of the heavy unit's 5 groups) that with the heavy unit's 3
-- rows at its cell mean; the empty key 5 gives the centre 0.25
SELECT count(*) AS reps, bool_and(groups = 6) AS all_groups, bool_and(light_or_heavy) AS light_or_heavy,
       bool_and(moved = 2) AS two_groups_moved
FROM (SELECT rep, count(*) AS groups,
             bool_and(abs(r.a - coalesce(t.light_avg, 0.25)) <= 1e-9 OR abs(r.a - t.with_heavy_avg) <= 1e-9) AS light_or_heavy,
             count(*) FILTER (WHERE abs(r.a - coalesce(t.light_avg, 0.25)) > 1e-9) AS moved
      FROM generate_series(1, 5) rep,
           LATERAL unit_test.run($q$SELECT k, dp_avg(f, -1, 1.5, 'laplace(epsilon=1)') FROM events GROUP BY k$q$, rep)
           AS r(k int, a float8)
           LEFT JOIN unit_test.cell_truth t ON t.by = 'k' AND t.cell = r.k::text
      GROUP BY rep) p;
-- GROUP BY tag (no public keys: partition selection over units, here
-- noiseless: a group is kept iff its unit count reaches the threshold): the
-- five t-groups (~110 units) appear, 'rare' (one unit, 100 raw rows) never
SELECT reps, cells_ok, within_bound, heavy_or_nothing, moved_ok
FROM unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', rep, 'cell', r.tag, 'n', r.n, 's', r.s))
	FROM generate_series(1, 5) rep,
	     LATERAL unit_test.run($q$SELECT tag, dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events GROUP BY tag$q$, rep)
	     AS r(tag text, n bigint, s bigint)),
	'tag', '{t0,t1,t2,t3,t4}', '{}', NULL);

-- dp_histogram: the cell is the bin.  Public bins (k), equal-width bins of v
-- (the light units' v is clamped into the first / last bin for some rows),
-- and keys under partition selection (tag: 'rare' is one unit's, with at most
-- r = 3 < threshold; the t-keys ~190 are far above it).  12 repetitions each
-- (choice_varies: 10^-11 as above, bins and equal-width forms).
SELECT (unit_test.judge(jsonb_agg(jsonb_build_object('rep', rep, 'cell', e.key, 'n', e.value)),
                        'k', '{0,1,2,3,4}', '{}', 2)).*
FROM generate_series(1, 12) rep,
     LATERAL unit_test.run($q$SELECT dp_histogram(k, ARRAY[0, 1, 2, 3, 4], 'laplace(epsilon=1)') FROM events$q$, rep) AS r(h jsonb),
     LATERAL jsonb_each_text(r.h) e;
SELECT (unit_test.judge(jsonb_agg(jsonb_build_object('rep', rep, 'cell', e.key, 'n', e.value)),
                        'bin', '{"[0,1)","[1,2)","[2,3)","[3,4)","[4,5)"}', '{}', 2)).*
FROM generate_series(1, 12) rep,
     LATERAL unit_test.run($q$SELECT dp_histogram(v, 0, 5, 5, 'gaussian(epsilon=1, delta=1e-6)') FROM events$q$, rep) AS r(h jsonb),
     LATERAL jsonb_each_text(r.h) e;
SELECT reps, cells_ok, within_bound, heavy_or_nothing, moved_ok
FROM unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', rep, 'cell', e.key, 'n', e.value))
	FROM generate_series(1, 12) rep,
	     LATERAL unit_test.run($q$SELECT dp_histogram(tag, 'gaussian(epsilon=8, delta=1e-12)') FROM events$q$, rep) AS r(h jsonb),
	     LATERAL jsonb_each_text(r.h) e),
	'tag', '{t0,t1,t2,t3,t4}', '{}', NULL);
-- without the heavy unit every histogram is exactly the light truth
SELECT h1.reps = 1 AND h1.cells_ok AND h1.moved_ok AS bins_exact,
       h2.reps = 1 AND h2.cells_ok AND h2.moved_ok AS width_exact,
       h3.reps = 1 AND h3.cells_ok AND h3.moved_ok AS keys_exact
FROM unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', 1, 'cell', e.key, 'n', e.value))
	FROM unit_test.run($q$SELECT dp_histogram(k, ARRAY[0, 1, 2, 3, 4], 'laplace(epsilon=1)') FROM events
	                      WHERE pid <> 0 OR pid IS NULL$q$) AS r(h jsonb), jsonb_each_text(r.h) e),
	'k', '{0,1,2,3,4}', '{}', 0) h1,
     unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', 1, 'cell', e.key, 'n', e.value))
	FROM unit_test.run($q$SELECT dp_histogram(v, 0, 5, 5, 'gaussian(epsilon=1, delta=1e-6)') FROM events
	                      WHERE pid <> 0 OR pid IS NULL$q$) AS r(h jsonb), jsonb_each_text(r.h) e),
	'bin', '{"[0,1)","[1,2)","[2,3)","[3,4)","[4,5)"}', '{}', 0) h2,
     unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', 1, 'cell', e.key, 'n', e.value))
	FROM unit_test.run($q$SELECT dp_histogram(tag, 'gaussian(epsilon=8, delta=1e-12)') FROM events
	                      WHERE pid <> 0 OR pid IS NULL$q$) AS r(h jsonb), jsonb_each_text(r.h) e),
	'tag', '{t0,t1,t2,t3,t4}', '{}', 0) h3;

-- A unit's cells are chosen only among those it can contribute to
-- (unit_test.hbins, g = 1, r = 2).  Units 1..200 each have rows outside the
-- bins of every form (keys 'x' and 'z' not in the bins, NULL, NaN) and rows
-- in exactly one bin: 'a' twice (even units, 2 <= r) or 'b' once (odd).
-- Rows that a histogram never counts must take none of a unit's g = 1 cells,
-- so every one of these units is counted, exactly: a = 200, b = 100 (with
-- the cell chosen among all keys, about a third of the units would be).
-- Units 201..260 have one row in 'a' and one in 'b': each keeps one of its
-- two cells at random, so over 10 runs the count of 'a' taken from them is
-- Binomial(600, 1/2); Hoeffding bounds |A - 300| >= 81 by
-- 2 exp(-2 * 81^2 / 600) < 5e-10, and the runs' totals are exact (360).
CREATE TABLE unit_test.hbins AS
SELECT u AS pid, key, v
FROM generate_series(1, 200) u,
     LATERAL (VALUES ('x', 10::float8), ('x', 11), ('x', 12), ('z', NULL), (NULL, 'NaN')) o(key, v)
UNION ALL
SELECT u, CASE WHEN u % 2 = 0 THEN 'a' ELSE 'b' END, CASE WHEN u % 2 = 0 THEN 0.5 ELSE 1.5 END
FROM generate_series(1, 200) u, generate_series(1, 2) i
WHERE u % 2 = 0 OR i = 1
UNION ALL
SELECT u, key, CASE key WHEN 'a' THEN 0.5 ELSE 1.5 END
FROM generate_series(201, 260) u, (VALUES ('a'), ('b')) k(key);
SELECT dp_pg.protect('unit_test.hbins', 'pid', max_groups_contributed => 1, max_rows_per_unit => 2) IS NOT NULL AS protected;
-- the bins form: keys outside the bins take no cell
SELECT h->>'a' AS a, h->>'b' AS b
FROM unit_test.run($q$SELECT dp_histogram(key, ARRAY['a', 'b'], 'laplace(epsilon=1)') FROM hbins WHERE pid <= 200$q$) AS r(h jsonb);
-- with a FILTER (the query's rows): the same
SELECT h->>'a' AS a, h->>'b' AS b
FROM unit_test.run($q$SELECT dp_histogram(key, ARRAY['a', 'b'], 'laplace(epsilon=1)') FILTER (WHERE v < 100) FROM hbins WHERE pid <= 200$q$) AS r(h jsonb);
-- the equal-width form over [0, 2): NULL and NaN take no cell
SELECT h->>'[0,1)' AS lo, h->>'[1,2)' AS hi
FROM unit_test.run($q$SELECT dp_histogram(v, 0, 2, 2, 'laplace(epsilon=1)') FROM hbins WHERE pid <= 200 AND key IS DISTINCT FROM 'x'$q$) AS r(h jsonb);
-- with 'x' (10, 11, 12, clamped into the last bin) an even unit has two
-- cells (one kept at random, 2 either way), an odd one a single cell of 4
-- rows (2): the total is exact
SELECT (h->>'[0,1)')::int + (h->>'[1,2)')::int AS total_width
FROM unit_test.run($q$SELECT dp_histogram(v, 0, 2, 2, 'laplace(epsilon=1)') FROM hbins WHERE pid <= 200$q$) AS r(h jsonb);
-- the keys form: NULL keys take no cell
SELECT h->>'a' AS a, h->>'b' AS b
FROM unit_test.run($q$SELECT dp_histogram(key, 'gaussian(epsilon=8, delta=1e-12)') FROM hbins WHERE pid <= 200 AND (key IS NULL OR key IN ('a', 'b'))$q$) AS r(h jsonb);
-- two eligible cells per unit: exact totals, uniform choice
SELECT count(*) AS runs,
       bool_and((h->>'a')::int + (h->>'b')::int = 360) AS totals_exact,
       abs(sum((h->>'a')::int - 200) - 300) < 81 AS choice_uniform
FROM generate_series(1, 10) rep,
     LATERAL unit_test.run($q$SELECT dp_histogram(key, ARRAY['a', 'b'], 'laplace(epsilon=1)') FROM hbins$q$, rep) AS r(h jsonb);

--
-- 2. A trusted role (no budget) on a table that is not protected: the same
-- bounding on request, through the session settings
--
SET ROLE unit_trusted;
SHOW dp_pg.privacy_unit;
-- unset: no bounding (the raw count)
SELECT r.c = t.raw_cnt AS unbounded
FROM unit_test.run($q$SELECT dp_count(*) FROM free$q$) AS r(c bigint), unit_test.truth t WHERE t.variant = 'all';
SET dp_pg.privacy_unit = 'pid';
-- the defaults g = 1, r = 1: one row per unit
SELECT r.c = t.units AS one_per_unit
FROM unit_test.run($q$SELECT dp_count(*) FROM free$q$) AS r(c bigint), unit_test.truth t WHERE t.variant = 'all';
SET dp_pg.max_groups_contributed = 2;
SET dp_pg.max_rows_per_unit = 3;
SELECT r.c = t.cnt AS count_star, r.cy = t.cnt_y AS count_not_null, r.s4 = t.s4 AS sum_int4, r.s8 = t.s8 AS sum_int8,
       r.sf = t.sf AS sum_float8, r.sn = t.sn AS sum_numeric, abs(r.af - t.af) <= 1e-9 AS avg
FROM unit_test.run($q$
	SELECT dp_count(*), dp_count(y, 'laplace(epsilon=1)'), dp_sum(x, -4, 6, 'laplace(epsilon=1)'),
	       dp_sum(x8, -4000, 6000, 'laplace(epsilon=1)'), dp_sum(f, -1, 1.5, 'laplace(epsilon=1)'),
	       dp_sum(nm, -1, 1.5, 'laplace(epsilon=1)'), dp_avg(f, -1, 1.5, 'laplace(epsilon=1)')
	FROM free$q$) AS r(c bigint, cy bigint, s4 bigint, s8 bigint, sf float8, sn numeric, af float8),
     unit_test.truth t
WHERE t.variant = 'all';
-- dp_pg.partition_keep written by the user counts units, not rows: every k
-- has about 100 units (kept, far above the threshold); the heavy unit alone
-- (FILTER pid = 0) is one unit in its cells although it has 200 rows there
-- (not kept: one unit is below the threshold, 200 rows would be above it)
SELECT count(*) AS groups, bool_and(keep) AS all_kept, bool_or(heavy_only) AS heavy_kept
FROM unit_test.run($q$SELECT k, dp_pg.partition_keep('gaussian(epsilon=1, delta=1e-6)'),
                             dp_pg.partition_keep('gaussian(epsilon=1, delta=1e-6)') FILTER (WHERE pid = 0)
                      FROM free GROUP BY k$q$) AS r(k int, keep bool, heavy_only bool);
SELECT count(*) AS groups
FROM unit_test.run($q$SELECT k FROM free GROUP BY k HAVING dp_pg.partition_keep('gaussian(epsilon=1, delta=1e-6)')$q$) AS r(k int);
-- GROUP BY k (no public keys here: partition selection, all of 0..4 pass)
-- and the bins histogram, 5 repetitions each
SELECT reps, cells_ok, within_bound, heavy_or_nothing, moved_ok
FROM unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', rep, 'cell', r.k::text, 'n', r.n, 's', r.s))
	FROM generate_series(1, 5) rep,
	     LATERAL unit_test.run($q$SELECT k, dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM free GROUP BY k$q$, rep)
	     AS r(k int, n bigint, s bigint)),
	'k', '{0,1,2,3,4}', '{}', 2);
SELECT reps, cells_ok, within_bound, heavy_or_nothing, moved_ok
FROM unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', rep, 'cell', e.key, 'n', e.value))
	FROM generate_series(1, 5) rep,
	     LATERAL unit_test.run($q$SELECT dp_histogram(k, ARRAY[0, 1, 2, 3, 4], 'laplace(epsilon=1)') FROM free$q$, rep) AS r(h jsonb),
	     LATERAL jsonb_each_text(r.h) e),
	'k', '{0,1,2,3,4}', '{}', 2);
-- the trusted role on the protected table: its declaration applies
SELECT r.c = t.cnt AS count_star
FROM unit_test.run($q$SELECT dp_count(*) FROM events$q$) AS r(c bigint), unit_test.truth t WHERE t.variant = 'all';
-- a table without that column: 42703; non-dp queries are not affected
SELECT unit_test.err($q$SELECT dp_count(*) FROM unit_test.truth$q$) AS no_such_column;
SET dp_pg.privacy_unit = 'person';
SELECT unit_test.err($q$SELECT dp_count(*) FROM free$q$) AS no_such_column;
SELECT count(*) AS raw_rows FROM free;
RESET dp_pg.privacy_unit;
RESET dp_pg.max_groups_contributed;
RESET dp_pg.max_rows_per_unit;
RESET ROLE;
-- on a protected table the catalog's declaration wins over the settings
SET dp_pg.privacy_unit = 'k';
SET dp_pg.max_groups_contributed = 1;
SET dp_pg.max_rows_per_unit = 1;
SELECT r.c = t.cnt AS count_star, r.s4 = t.s4 AS sum_int4
FROM unit_test.run($q$SELECT dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events$q$) AS r(c bigint, s4 bigint),
     unit_test.truth t
WHERE t.variant = 'all';
SELECT reps, cells_ok, within_bound, heavy_or_nothing, moved_ok
FROM unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', rep, 'cell', r.k::text, 'n', r.n, 's', r.s))
	FROM generate_series(1, 3) rep,
	     LATERAL unit_test.run($q$SELECT k, dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events GROUP BY k$q$, rep)
	     AS r(k int, n bigint, s bigint)),
	'k', '{0,1,2,3,4,5}', '{}', 2);
RESET dp_pg.privacy_unit;
RESET dp_pg.max_groups_contributed;
RESET dp_pg.max_rows_per_unit;

--
-- 3. Parallel plans give exactly the serial values (noiseless).  50,000 rows,
-- unit pid = i % 9001 (5 or 6 rows each, spread over the whole table, so a
-- unit's rows are read by different workers), k changes at i = 30000: every
-- unit has exactly 2 = g cells, so GROUP BY keeps all of them and is exact.
--
CREATE TABLE unit_test.par AS
SELECT i, i % 9001 AS pid, (i % 9001 + (i > 30000)::int) % 5 AS k, i % 17 - 8 AS x, (i % 17 - 8)::int8 * 1000 AS x8,
       (i % 17 - 8) / 8.0::float8 AS f, (i % 17 - 8) / 8.0 AS nm, CASE WHEN i % 7 = 0 THEN NULL ELSE i END AS y
FROM generate_series(1, 50000) i;
ANALYZE unit_test.par;
SELECT dp_pg.protect('unit_test.par', 'pid', 2, 3);
-- truths (x clamped to [-5, 7], x8 to [-5000, 7000], f and nm to [-0.625, 0.875])
CREATE TABLE unit_test.par_truth AS
SELECT sum(least(n, 3)) AS cnt, sum(least(ny, 3)) AS cnt_y, sum(greatest(-15, least(21, s4))) AS s4,
       sum(greatest(-15000, least(21000, s8))) AS s8, sum(greatest(-1.875, least(2.625, sf))) AS sf,
       sum(greatest(-1.875, least(2.625, sn))) AS sn,
       0.125 + sum(least(n, 3) * (mf - 0.125)) / sum(least(n, 3)) AS af
FROM (SELECT pid, count(*) AS n, count(y) AS ny, sum(greatest(-5, least(7, x))) AS s4,
             sum(greatest(-5000, least(7000, x8))) AS s8, sum(greatest(-0.625, least(0.875, f))) AS sf,
             sum(greatest(-0.625, least(0.875, nm))) AS sn, avg(greatest(-0.625, least(0.875, f))) AS mf
      FROM unit_test.par GROUP BY pid) u;
CREATE TABLE unit_test.par_k_truth AS
SELECT k, sum(least(n, 3)) AS n, sum(greatest(-15, least(21, s))) AS s, max(cells) AS max_cells
FROM (SELECT pid, k, count(*) AS n, sum(greatest(-5, least(7, x))) AS s, count(*) OVER (PARTITION BY pid) AS cells
      FROM unit_test.par GROUP BY pid, k) c
GROUP BY k;
SELECT bool_and(max_cells = 2) AS every_unit_two_cells FROM unit_test.par_k_truth;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
-- the settings give parallel plans: the raw count, and the dp queries
SELECT unit_test.plan_has('SELECT count(*) FROM unit_test.par', 'Gather') AS raw_parallel,
       unit_test.plan_has($q$SELECT dp_count(*), dp_sum(x, -5, 7, 'laplace(epsilon=1)') FROM unit_test.par$q$, 'Gather') AS dp_parallel,
       unit_test.plan_has($q$SELECT k, dp_count(*) FROM unit_test.par GROUP BY k$q$, 'Gather') AS dp_group_parallel,
       unit_test.plan_has($q$SELECT dp_histogram(k, ARRAY[0, 1, 2, 3, 4], 'laplace(epsilon=1)') FROM unit_test.par$q$, 'Gather') AS dp_histogram_parallel;
\set q_total 'SELECT dp_count(*), dp_count(y, ''laplace(epsilon=1)''), dp_sum(x, -5, 7, ''laplace(epsilon=1)''), dp_sum(x8, -5000, 7000, ''laplace(epsilon=1)''), dp_sum(f, -0.625, 0.875, ''laplace(epsilon=1)''), dp_sum(nm, -0.625, 0.875, ''laplace(epsilon=1)''), dp_avg(f, -0.625, 0.875, ''laplace(epsilon=1)'') FROM par'
\set q_group 'SELECT k, dp_count(*), dp_sum(x, -5, 7, ''laplace(epsilon=1)'') FROM par GROUP BY k'
\set q_hist 'SELECT dp_histogram(k, ARRAY[0, 1, 2, 3, 4], ''laplace(epsilon=1)'') FROM par'
SELECT to_jsonb(r) AS par_total
FROM unit_test.run(:'q_total') AS r(c bigint, cy bigint, s4 bigint, s8 bigint, sf float8, sn numeric, af float8) \gset
SELECT jsonb_agg(to_jsonb(r) ORDER BY r.k) AS par_group FROM unit_test.run(:'q_group') AS r(k int, n bigint, s bigint) \gset
SELECT r.h AS par_hist FROM unit_test.run(:'q_hist') AS r(h jsonb) \gset
SET max_parallel_workers_per_gather = 0;
SELECT unit_test.plan_has(:'q_total', 'Gather') OR unit_test.plan_has(:'q_group', 'Gather')
       OR unit_test.plan_has(:'q_hist', 'Gather') AS serial_has_gather;
SELECT to_jsonb(r) AS ser_total
FROM unit_test.run(:'q_total') AS r(c bigint, cy bigint, s4 bigint, s8 bigint, sf float8, sn numeric, af float8) \gset
SELECT jsonb_agg(to_jsonb(r) ORDER BY r.k) AS ser_group FROM unit_test.run(:'q_group') AS r(k int, n bigint, s bigint) \gset
SELECT r.h AS ser_hist FROM unit_test.run(:'q_hist') AS r(h jsonb) \gset
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- parallel = serial, and both are the truth
SELECT :'par_total'::jsonb = :'ser_total'::jsonb AS total_equal, :'par_group'::jsonb = :'ser_group'::jsonb AS group_equal,
       :'par_hist'::jsonb = :'ser_hist'::jsonb AS histogram_equal;
SELECT (v->>'c')::numeric = t.cnt AS count_star, (v->>'cy')::numeric = t.cnt_y AS count_not_null,
       (v->>'s4')::numeric = t.s4 AS sum_int4, (v->>'s8')::numeric = t.s8 AS sum_int8,
       (v->>'sf')::float8 = t.sf AS sum_float8, (v->>'sn')::numeric = t.sn AS sum_numeric,
       abs((v->>'af')::float8 - t.af) <= 1e-9 AS avg
FROM (SELECT :'par_total'::jsonb AS v) p, unit_test.par_truth t;
SELECT count(*) AS groups, bool_and((e->>'n')::numeric = t.n AND (e->>'s')::numeric = t.s) AS group_exact
FROM jsonb_array_elements(:'par_group'::jsonb) e JOIN unit_test.par_k_truth t ON t.k = (e->>'k')::int;
SELECT count(*) AS bins, bool_and(e.value::numeric = t.n) AS histogram_exact
FROM jsonb_each_text(:'par_hist'::jsonb) e JOIN unit_test.par_k_truth t ON t.k = e.key::int;

--
-- 4. Released values (noise on), unit_analyst's own session.  debug_noiseless
-- stays on but does nothing for a session user who is not a superuser.
--
SET SESSION AUTHORIZATION unit_analyst;
SHOW dp_pg.debug_noiseless;
-- laplace(epsilon=1) without cells: sensitivity r = 3, scale b = 3, so the
-- answer is within 25 b = 75 of the bounded 906 (P < 3e-11); the unbounded
-- 2005 is far outside that interval (a positive control: bounding happened)
SELECT abs(r.c - t.cnt) <= 75 AS near_bounded, abs(r.c - t.raw_cnt) > 75 AS far_from_unbounded
FROM unit_test.run($q$SELECT dp_count(*) FROM events$q$) AS r(c bigint), unit_test.truth t WHERE t.variant = 'all';
-- dp_histogram with public bins on unit_test.hbins (g = 1, r = 2):
-- laplace(epsilon=1) at sensitivity 2, scale b = 2, each bin within 25 b = 50
-- of the bounded truth a = 200, b = 100 (2 checks, each P < 3e-11); a choice
-- of cells among every key (about 67 and 33) would be outside
SELECT abs((h->>'a')::int - 200) <= 50 AS bin_a_near_bounded, abs((h->>'b')::int - 100) <= 50 AS bin_b_near_bounded
FROM unit_test.run($q$SELECT dp_histogram(key, ARRAY['a', 'b'], 'laplace(epsilon=1)') FROM hbins WHERE pid <= 200$q$) AS r(h jsonb);
-- GROUP BY k (public keys): laplace(epsilon=4) split over g = 2 cells: 2 per
-- cell at sensitivity 3, scale 1.5, bound 25 b = 37.5 around the truth, which
-- is light_n or light_n + 3 (6 checks, each P < 3e-11); the unbounded counts
-- (~200 more per group) are far outside
SELECT count(*) AS groups,
       bool_and(r.n BETWEEN coalesce(t.light_n, 0) - 37.5 AND coalesce(t.light_n, 0) + 3 + 37.5) AS near_bounded,
       bool_and(abs(r.n - t.raw_n) > 37.5) AS far_from_unbounded
FROM unit_test.run($q$SELECT k, dp_count(1, 'laplace(epsilon=4)') FROM events GROUP BY k$q$) AS r(k int, n bigint)
     LEFT JOIN unit_test.cell_truth t ON t.by = 'k' AND t.cell = r.k::text;
-- the noise is there: a float8 and a numeric sum (laplace(epsilon=1), scale
-- r max(|lo|, |hi|) = 4.5, within 25 b = 112.5: P < 3e-11 each) are not both
-- exactly the truth (each is, with probability < 1e-9: both < 1e-18)
SELECT abs(r.sf - t.sf) <= 112.5 AND abs(r.sn - t.sn) <= 112.5 AS near_bounded,
       r.sf <> t.sf OR r.sn <> t.sn AS noisy
FROM unit_test.run($q$SELECT dp_sum(f, -1, 1.5, 'laplace(epsilon=1)'), dp_sum(nm, -1, 1.5, 'laplace(epsilon=1)') FROM events$q$)
     AS r(sf float8, sn numeric),
     unit_test.truth t
WHERE t.variant = 'all';
-- a rho form, GROUP BY k (public keys): gaussian(rho=0.5) split: rho 0.25
-- per group, sigma^2 = 9 / 0.5 = 18 at sensitivity 3, bound 7 sigma + 1
-- (6 checks, P < 1e-11 each); charged rho 0.5.
SELECT unit_test.expect($q$SELECT k, dp_count(1, 'gaussian(rho=0.5)') FROM events GROUP BY k$q$);
SELECT count(*) AS groups,
       bool_and(r.n BETWEEN coalesce(t.light_n, 0) - 7 * sqrt(18) - 1 AND coalesce(t.light_n, 0) + 3 + 7 * sqrt(18) + 1) AS close
FROM unit_test.run($q$SELECT k, dp_count(1, 'gaussian(rho=0.5)') FROM events GROUP BY k$q$) AS r(k int, n bigint)
     LEFT JOIN unit_test.cell_truth t ON t.by = 'k' AND t.cell = r.k::text;
SELECT * FROM unit_test.charged(1, NULL, NULL, 0.5);
RESET SESSION AUTHORIZATION;
-- (the analyst's spending starts again from zero: partition selection below
-- has no Renyi curve, and after a rho-only charge no certificate would admit it)
SELECT dp_pg.reset_budget('unit_analyst');

--
-- 5. The analyst path
--
-- 5a. Exact: the superuser session (noiseless) as the analyst (SET ROLE): the
-- guard rewrites the queries as for the analyst and charges the analyst.
SET ROLE unit_analyst;
SELECT unit_test.expect($q$SELECT k, dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events GROUP BY k$q$);
SELECT (unit_test.judge(jsonb_agg(jsonb_build_object('rep', rep, 'cell', r.k::text, 'n', r.n, 's', r.s)),
                        'k', '{0,1,2,3,4,5}', '{}', 2)).*
FROM generate_series(1, 12) rep,
     LATERAL unit_test.run($q$SELECT k, dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events GROUP BY k$q$, rep)
     AS r(k int, n bigint, s bigint);
-- 12 charges of laplace(epsilon=1) twice, each split 0.5 + 0.5
SELECT * FROM unit_test.charged(12, 2, 0);
-- partition selection: the t-groups, never 'rare'
SELECT unit_test.expect($q$SELECT tag, dp_count(*) FROM events GROUP BY tag$q$);
SELECT reps, cells_ok, within_bound, heavy_or_nothing, moved_ok
FROM unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', rep, 'cell', r.tag, 'n', r.n))
	FROM generate_series(1, 5) rep,
	     LATERAL unit_test.run($q$SELECT tag, dp_count(*) FROM events GROUP BY tag$q$, rep) AS r(tag text, n bigint)),
	'tag', '{t0,t1,t2,t3,t4}', '{}', NULL);
-- 5 charges of laplace(epsilon=1) + the selection gaussian(epsilon=4, delta=1e-12)
SELECT * FROM unit_test.charged(5, 5, 1e-12);
SELECT unit_test.expect($q$SELECT dp_count(*), dp_sum(nm, -1, 1.5, 'laplace(epsilon=0.5)') FROM events$q$);
SELECT r.c = t.cnt AS count_star, r.sn = t.sn AS sum_numeric
FROM unit_test.run($q$SELECT dp_count(*), dp_sum(nm, -1, 1.5, 'laplace(epsilon=0.5)') FROM events$q$) AS r(c bigint, sn numeric),
     unit_test.truth t
WHERE t.variant = 'all';
-- no cells: nothing split, 1 + 0.5
SELECT * FROM unit_test.charged(1, 1.5, 0);
SELECT unit_test.expect($q$SELECT dp_histogram(v, 0, 5, 5, 'gaussian(epsilon=1, delta=1e-6)') FROM events$q$);
SELECT reps, cells_ok, within_bound, heavy_or_nothing, moved_ok
FROM unit_test.judge((
	SELECT jsonb_agg(jsonb_build_object('rep', 1, 'cell', e.key, 'n', e.value))
	FROM unit_test.run($q$SELECT dp_histogram(v, 0, 5, 5, 'gaussian(epsilon=1, delta=1e-6)') FROM events$q$) AS r(h jsonb),
	     jsonb_each_text(r.h) e),
	'bin', '{"[0,1)","[1,2)","[2,3)","[3,4)","[4,5)"}', '{}', 2);
SELECT * FROM unit_test.charged(1, 1, 1e-6);
RESET ROLE;

-- 5b. The analyst's own session (noisy).  Each value is checked against the
-- noise of the split mechanism at sensitivity r = 3 (sums: 18), i.e.
-- dp_pg.calibrate(<mechanism with epsilon / g, delta / g>, 3); with cells the
-- truth is light or light + the heavy unit's contribution.
SET SESSION AUTHORIZATION unit_analyst;
-- Q1: no cells, laplace(epsilon=1): b = 3, bound 75 (1 check)
SELECT unit_test.expect($q$SELECT dp_count(*) FROM events$q$);
SELECT abs(r.c - t.cnt) <= 75 AS close
FROM unit_test.run($q$SELECT dp_count(*) FROM events$q$) AS r(c bigint), unit_test.truth t WHERE t.variant = 'all';
SELECT * FROM unit_test.charged(1, 1, 0);
-- Q2: WHERE, two aggregates of laplace(epsilon=0.5): b = 6 (count), 36
-- (sum); bounds 150, 900 (2 checks)
SELECT unit_test.expect($q$SELECT dp_count(y, 'laplace(epsilon=0.5)'), dp_sum(x, -4, 6, 'laplace(epsilon=0.5)') FROM events WHERE k <> 3$q$);
SELECT abs(r.cy - t.cnt_y) <= 150 AS count_close, abs(r.s4 - t.s4) <= 900 AS sum_close
FROM unit_test.run($q$SELECT dp_count(y, 'laplace(epsilon=0.5)'), dp_sum(x, -4, 6, 'laplace(epsilon=0.5)') FROM events WHERE k <> 3$q$)
     AS r(cy bigint, s4 bigint),
     unit_test.truth t
WHERE t.variant = 'k_not_3';
SELECT * FROM unit_test.charged(1, 1, 0);
-- Q3: public bins, laplace(epsilon=1) split: 0.5 per bin, b = 6, bound 150 (5 checks)
SELECT unit_test.expect($q$SELECT dp_histogram(k, ARRAY[0, 1, 2, 3, 4], 'laplace(epsilon=1)') FROM events$q$);
SELECT count(*) AS bins, bool_and(e.value::numeric BETWEEN t.light_n - 150 AND t.light_n + 3 + 150) AS close
FROM unit_test.run($q$SELECT dp_histogram(k, ARRAY[0, 1, 2, 3, 4], 'laplace(epsilon=1)') FROM events$q$) AS r(h jsonb),
     jsonb_each_text(r.h) e JOIN unit_test.cell_truth t ON t.by = 'k' AND t.cell = e.key;
SELECT * FROM unit_test.charged(1, 1, 0);
-- Q4: equal-width bins, gaussian(epsilon=1, delta=1e-6) split:
-- gaussian(0.5, 5e-7) per bin, bound 7 sigma + 1 (5 checks)
SELECT unit_test.expect($q$SELECT dp_histogram(v, 0, 5, 5, 'gaussian(epsilon=1, delta=1e-6)') FROM events$q$);
SELECT count(*) AS bins, bool_and(abs(e.value::numeric - t.light_n - 1.5) <= 1.5 + 7 * c.sigma + 1) AS close
FROM unit_test.run($q$SELECT dp_histogram(v, 0, 5, 5, 'gaussian(epsilon=1, delta=1e-6)') FROM events$q$) AS r(h jsonb),
     jsonb_each_text(r.h) e JOIN unit_test.cell_truth t ON t.by = 'bin' AND t.cell = e.key,
     dp_pg.calibrate('gaussian(epsilon=0.5, delta=5e-7)', 3) c;
SELECT * FROM unit_test.charged(1, 1, 1e-6);
-- Q5: keys under partition selection, gaussian(epsilon=8, delta=1e-12)
-- split: gaussian(4, 5e-13) per key (sigma ~5.3 at sensitivity 3, threshold
-- ~42).  The t-keys (~190) are released (each misses with P < 1e-11) within
-- 7 sigma + 1 (P < 1e-11 each); 'rare' (one unit) is released with P <= 5e-13
SELECT unit_test.expect($q$SELECT dp_histogram(tag, 'gaussian(epsilon=8, delta=1e-12)') FROM events$q$);
SELECT array_agg(e.key ORDER BY e.key) AS keys,
       bool_and(abs(e.value::numeric - t.light_n - 1.5) <= 1.5 + 7 * c.sigma + 1) AS close
FROM unit_test.run($q$SELECT dp_histogram(tag, 'gaussian(epsilon=8, delta=1e-12)') FROM events$q$) AS r(h jsonb),
     jsonb_each_text(r.h) e JOIN unit_test.cell_truth t ON t.by = 'tag' AND t.cell = e.key,
     dp_pg.calibrate('gaussian(epsilon=4, delta=5e-13)', 3) c;
SELECT * FROM unit_test.charged(1, 8, 1e-12);
-- Q6: GROUP BY public keys, two aggregates laplace(epsilon=1) split: b = 6
-- (count), 36 (sum); bounds 150, 900 (12 checks; the empty key 5 appears)
SELECT unit_test.expect($q$SELECT k, dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events GROUP BY k$q$);
SELECT array_agg(r.k ORDER BY r.k) AS keys,
       bool_and(r.n BETWEEN coalesce(t.light_n, 0) - 150 AND coalesce(t.light_n, 0) + 3 + 150) AS count_close,
       bool_and(r.s BETWEEN coalesce(t.light_s, 0) - 900 AND coalesce(t.light_s, 0) + 18 + 900) AS sum_close
FROM unit_test.run($q$SELECT k, dp_count(*), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events GROUP BY k$q$)
     AS r(k int, n bigint, s bigint)
     LEFT JOIN unit_test.cell_truth t ON t.by = 'k' AND t.cell = r.k::text;
SELECT * FROM unit_test.charged(1, 2, 0);
-- Q7: GROUP BY tag: partition selection with the session's
-- gaussian(epsilon=4, delta=1e-12), split: gaussian(2, 5e-13) per group
-- over unit counts (sigma ~3.4, threshold ~27; t-groups have ~110 units:
-- each misses with P < 1e-11; 'rare' has one: P <= 5e-13); counts with
-- laplace(epsilon=1) split, b = 6, bound 150 (5 checks)
SET dp_pg.partition_mechanism = 'gaussian(epsilon=4, delta=1e-12)';
SELECT unit_test.expect($q$SELECT tag, dp_count(1, 'laplace(epsilon=1)') FROM events GROUP BY tag$q$);
SELECT array_agg(r.tag ORDER BY r.tag) AS groups,
       bool_and(r.n BETWEEN t.light_n - 150 AND t.light_n + 3 + 150) AS close
FROM unit_test.run($q$SELECT tag, dp_count(1, 'laplace(epsilon=1)') FROM events GROUP BY tag$q$) AS r(tag text, n bigint)
     JOIN unit_test.cell_truth t ON t.by = 'tag' AND t.cell = r.tag;
SELECT * FROM unit_test.charged(1, 5, 1e-12);
RESET dp_pg.partition_mechanism;
-- Q8: dp_avg(f, -1, 1.5, 'laplace(epsilon=2)') without cells: half the
-- budget each for the centred sum (sensitivity r (hi - lo) / 2 = 3.75, b =
-- 3.75, |noise| <= 93.75) and the count (b = 3, |noise| <= 75) (2 checks);
-- the answer is 0.25 + (sum + noise) / (count + noise), clamped to [-1, 1.5]
SELECT unit_test.expect($q$SELECT dp_avg(f, -1, 1.5, 'laplace(epsilon=2)') FROM events$q$);
SELECT r.a BETWEEN greatest(-1, 0.25 + least((t.acs - 93.75) / (t.cnt - 75), (t.acs - 93.75) / (t.cnt + 75)))
               AND least(1.5, 0.25 + greatest((t.acs + 93.75) / (t.cnt - 75), (t.acs + 93.75) / (t.cnt + 75))) AS close
FROM unit_test.run($q$SELECT dp_avg(f, -1, 1.5, 'laplace(epsilon=2)') FROM events$q$) AS r(a float8),
     unit_test.truth t
WHERE t.variant = 'all';
SELECT * FROM unit_test.charged(1, 2, 0);
-- Q9: dp_avg with GROUP BY k: the same, split over g = 2 cells; the charge
-- is the requested epsilon
SELECT unit_test.expect($q$SELECT k, dp_avg(f, -1, 1.5, 'laplace(epsilon=2)') FROM events GROUP BY k$q$);
SELECT count(*) AS groups
FROM unit_test.run($q$SELECT k, dp_avg(f, -1, 1.5, 'laplace(epsilon=2)') FROM events GROUP BY k$q$) AS r(k int, a float8);
SELECT * FROM unit_test.charged(1, 2, 0);

--
-- 6. Refused: nothing charged, nothing released, the ledger unchanged
--
SELECT unit_test.ledger_rows() AS rows_before \gset
SELECT unit_test.err(q) AS error, q AS statement FROM unnest(ARRAY[
	$q$SELECT k, dp_histogram(tag, ARRAY['t0', 't1'], 'laplace(epsilon=1)') FROM events GROUP BY k$q$,
	$q$SELECT dp_histogram(k, ARRAY[0, 1], 'laplace(epsilon=1)'), dp_count(*) FROM events$q$,
	$q$SELECT dp_histogram(k, ARRAY[0, 1], 'laplace(epsilon=1)'), dp_histogram(v, 0, 5, 5, 'laplace(epsilon=1)') FROM events$q$,
	$q$SELECT dp_pg.bounded_sum(x::int8, -4::int8, 6::int8, 'laplace(epsilon=1)'::dp_mechanism, 1) FROM events$q$,
	$q$SELECT dp_pg.bounded_histogram_bins(k, ARRAY[0, 1], 'laplace(epsilon=1)'::dp_mechanism, 1::int8, 3::int8, 2) FROM events$q$,
	$q$SELECT tag, dp_count(*) FROM events GROUP BY tag HAVING dp_pg.bounded_partition_keep('gaussian(epsilon=1, delta=1e-6)'::dp_mechanism, 1)$q$,
	$q$SELECT dp_pg.bounded_avg(f, -1, 1.5, 'laplace(epsilon=1)'::dp_mechanism, 1::int8, 3::int8, 2) FROM events$q$,
	$q$SELECT dp_pg.unit_priority() FROM events$q$,
	$q$SELECT dp_count(*) FROM events WHERE dp_pg.unit_priority() > 0$q$,
	$q$SELECT dp_count(*) FROM events WHERE dp_pg.histogram_bucket(v, 0, 5, 5) = 1$q$,
	$q$SET dp_pg.max_rows_per_unit = 0$q$,
	$q$SET dp_pg.max_groups_contributed = 0$q$,
	$q$SET dp_pg.max_rows_per_unit = -1$q$,
	$q$SET dp_pg.debug_noiseless = on$q$,
	$q$SET dp_pg.debug_noiseless = off$q$
]) AS q;
RESET SESSION AUTHORIZATION;
-- as the superuser and a trusted role: mixed histograms are refused too; bad
-- declarations
SELECT unit_test.err(q) AS error, q AS statement FROM unnest(ARRAY[
	$q$SELECT dp_histogram(k, ARRAY[0, 1], 'laplace(epsilon=1)'), dp_sum(x, -4, 6, 'laplace(epsilon=1)') FROM events$q$,
	$q$SELECT dp_pg.protect('unit_test.events', 'pid', 2, 0)$q$,
	$q$SELECT dp_pg.protect('unit_test.events', 'person', 2, 3)$q$
]) AS q;
SET ROLE unit_trusted;
SET dp_pg.privacy_unit = 'pid';
SELECT unit_test.err($q$SELECT k, dp_histogram(k, ARRAY[0, 1], 'laplace(epsilon=1)') FROM free GROUP BY k$q$) AS error;
RESET dp_pg.privacy_unit;
RESET ROLE;
SELECT unit_test.ledger_rows() = :rows_before AS ledger_unchanged;
-- the declaration is unchanged
SELECT relid::regclass, privacy_unit, max_groups_contributed, max_rows_per_unit
FROM dp_pg.protected_tables WHERE relid = 'unit_test.events'::regclass;

--
-- clean up
--
RESET dp_pg.debug_noiseless;
RESET dp_pg.partition_mechanism;
SELECT dp_pg.unprotect('unit_test.events');
SELECT dp_pg.unprotect('unit_test.par');
SELECT dp_pg.drop_budget('unit_analyst');
SET client_min_messages = warning;
DROP SCHEMA unit_test CASCADE;
RESET client_min_messages;
DROP ROLE unit_analyst;
DROP ROLE unit_trusted;
RESET search_path;
