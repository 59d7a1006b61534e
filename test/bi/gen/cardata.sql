-- test/bi/gen/cardata.sql — the DBA's declarations for cardata.slid (loaded by
-- test/bi/gen/cardata.R): one row per person (row-level privacy), value domains
-- and public keys as docs/dba.md says.
SET client_min_messages = warning;
ALTER TABLE cardata.slid OWNER TO bi_owner;
ALTER TABLE cardata.slid ADD CONSTRAINT slid_age CHECK (age BETWEEN 16 AND 100);
SELECT dp_pg.protect('cardata.slid');
SELECT dp_pg.set_domain('cardata.slid', 'wages', 0, 50);
SELECT dp_pg.set_domain('cardata.slid', 'education', 0, 20);
SELECT dp_pg.set_public_keys('cardata.slid', 'sex', ARRAY['Female', 'Male']);
SELECT dp_pg.set_public_keys('cardata.slid', 'language', ARRAY['English', 'French', 'Other']);
ANALYZE cardata.slid;
