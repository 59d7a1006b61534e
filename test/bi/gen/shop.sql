-- test/bi/gen/shop.sql — the shop dataset of the generator legs (test/bi/README.md,
-- "Generator legs"), run as the superuser (the DBA) in the leg's ledger database
-- after test/bi/setup.sql.  Deterministic: the same rows on every run.
--
--   shop.customers  3000 customers (customer_id 1..3000), protected, privacy unit
--                   customer_id (one row each); public keys region, segment;
--                   birth_year CHECK [1920, 2010], loyalty float8 with a declared
--                   domain [0, 100]
--   shop.orders     30000 orders, 10 per customer, protected, privacy unit
--                   customer_id (a customer in at most 3 groups, 5 rows a group);
--                   public keys region, status and every day of 2022-2025 of
--                   order_date; CHECK domains amount [0, 2000], quantity [1, 20],
--                   discount [0, 50]; shipping float8 with a declared domain
--                   [0, 50]; channel without public keys (partition selection)
--   shop.products   40 products, shop.regions 5 regions, shop.dates the calendar
--                   of 2022-2025: public dimension tables the analysts may read
--
-- The analysts are one role per leg, gen_<leg>, each with its own budget (so
-- that one leg's released answers are never another leg's cache hits), the
-- default mechanism laplace(epsilon=1), the released-answer cache on (as a
-- DBA's cluster has it) and every statement logged: test/bi/gen/judge.py reads
-- the server log to see what each library sent.
SET client_min_messages = warning;
CREATE SCHEMA shop AUTHORIZATION bi_owner;
SET ROLE bi_owner;

CREATE TABLE shop.regions (region text PRIMARY KEY, name text NOT NULL, country text NOT NULL);
INSERT INTO shop.regions VALUES
	('north', 'North', 'Norland'), ('south', 'South', 'Sudland'), ('east', 'East', 'Estland'),
	('west', 'West', 'Westland'), ('central', 'Central', 'Norland');

CREATE TABLE shop.products (
	product_id int PRIMARY KEY,
	name text NOT NULL,
	category text NOT NULL,
	list_price numeric(10, 2) NOT NULL
);
INSERT INTO shop.products
SELECT p, 'product ' || p, (ARRAY['Computers', 'Phones', 'Books', 'Garden', 'Toys'])[p % 5 + 1],
       round(10 + (p * 37) % 990 + 0.99, 2)
FROM generate_series(1, 40) p;

CREATE TABLE shop.dates (
	date_day date PRIMARY KEY,
	year int NOT NULL,
	quarter int NOT NULL,
	month int NOT NULL,
	month_name text NOT NULL,
	dow int NOT NULL,
	is_weekend boolean NOT NULL
);
INSERT INTO shop.dates
SELECT d, extract(year FROM d), extract(quarter FROM d), extract(month FROM d), to_char(d, 'FMMonth'),
       extract(dow FROM d), extract(isodow FROM d) >= 6
FROM generate_series(date '2022-01-01', date '2025-12-31', interval '1 day') AS g(d0), CAST(d0 AS date) AS d;

CREATE TABLE shop.customers (
	customer_id int PRIMARY KEY,
	name text NOT NULL,
	email text NOT NULL,
	region text NOT NULL REFERENCES shop.regions,
	segment text NOT NULL,
	birth_year int NOT NULL CHECK (birth_year BETWEEN 1920 AND 2010),
	signup_date date NOT NULL,
	loyalty float8
);
INSERT INTO shop.customers
SELECT c, 'customer ' || c, 'c' || c || '@example.com',
       (ARRAY['north', 'south', 'east', 'west', 'central'])[(c * 7) % 5 + 1],
       CASE WHEN (c * 13) % 10 < 6 THEN 'consumer' WHEN (c * 13) % 10 < 9 THEN 'corporate' ELSE 'home office' END,
       1940 + (c * 37) % 66, date '2021-01-01' + (c * 17) % 1460, ((c * 29) % 1000) / 10.0
FROM generate_series(1, 3000) c;

CREATE TABLE shop.orders (
	order_id int PRIMARY KEY,
	customer_id int NOT NULL REFERENCES shop.customers,
	product_id int NOT NULL REFERENCES shop.products,
	region text NOT NULL REFERENCES shop.regions,
	order_date date NOT NULL,
	ordered_at timestamp NOT NULL,
	amount numeric(10, 2) NOT NULL CHECK (amount >= 0 AND amount <= 2000),
	quantity int NOT NULL CHECK (quantity BETWEEN 1 AND 20),
	discount numeric(4, 1) NOT NULL CHECK (discount >= 0 AND discount <= 50),
	shipping float8,
	status text NOT NULL,
	channel text NOT NULL
);
INSERT INTO shop.orders
SELECT o, c.customer_id, 1 + (o * 13) % 40, c.region, day, day + ((o * 53) % 86400) * interval '1 second',
       round(5 + (o * 7) % 1900 + (o % 100) / 100.0, 2), 1 + (o * 11) % 5 + (o % 97 = 0)::int * 10,
       (o % 6) * 5, (o * 31 % 500) / 10.0,
       CASE WHEN (o * 3) % 20 = 0 THEN 'returned' WHEN (o * 3) % 20 < 4 THEN 'placed'
            WHEN (o * 3) % 20 < 8 THEN 'shipped' ELSE 'delivered' END,
       CASE WHEN o % 50 < 25 THEN 'web' WHEN o % 50 < 40 THEN 'app' WHEN o % 50 < 49 THEN 'store' ELSE 'phone' END
FROM generate_series(1, 30000) o
JOIN shop.customers c ON c.customer_id = 1 + (o * 7919) % 3000,
     LATERAL (SELECT date '2022-01-01' + (o * 97) % 1461 AS day) d;
RESET ROLE;

-- the DBA's declarations, as docs/dba.md says
SELECT dp_pg.protect('shop.customers', 'customer_id', 1, 1);
SELECT dp_pg.protect('shop.orders', 'customer_id', max_groups_contributed => 3, max_rows_per_unit => 5);
SELECT dp_pg.set_public_keys('shop.orders', 'region', ARRAY['north', 'south', 'east', 'west', 'central']);
SELECT dp_pg.set_public_keys('shop.orders', 'status', ARRAY['placed', 'shipped', 'delivered', 'returned']);
SELECT dp_pg.set_public_keys('shop.orders', 'order_date',
	ARRAY(SELECT d::date FROM generate_series(date '2022-01-01', date '2025-12-31', interval '1 day') d));
SELECT dp_pg.set_public_keys('shop.customers', 'region', ARRAY['north', 'south', 'east', 'west', 'central']);
SELECT dp_pg.set_public_keys('shop.customers', 'segment', ARRAY['consumer', 'corporate', 'home office']);
SELECT dp_pg.set_domain('shop.orders', 'shipping', 0, 50);
SELECT dp_pg.set_domain('shop.customers', 'loyalty', 0, 100);

-- the dimension tables are public: readable by every analyst of the shop
CREATE ROLE shop_readers;
GRANT USAGE ON SCHEMA shop TO shop_readers;
GRANT SELECT ON shop.regions, shop.products, shop.dates TO shop_readers;
ANALYZE shop.regions, shop.products, shop.dates, shop.customers, shop.orders;
