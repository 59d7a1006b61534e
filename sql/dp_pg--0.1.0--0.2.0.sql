/* dp_pg 0.1.0 -> 0.2.0 upgrade script */

\echo Use "ALTER EXTENSION dp_pg UPDATE TO '0.2.0'" to load this file. \quit

-- Every catalog change of 0.2.0 is made here as well as in dp_pg--0.2.0.sql:
-- a database updated from 0.1.0 must end with the catalog of a fresh 0.2.0
-- install (the upgrade test compares every member object and its definition).
