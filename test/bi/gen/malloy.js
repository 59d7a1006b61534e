// test/bi/gen/malloy.js — the malloy leg: a Malloy model of the shop and of
// carData's SLID, its queries compiled by Malloy's compiler
// (@malloydata/malloy) and run by its Postgres connection
// (@malloydata/db-postgres: a node-postgres client per query, SET TIME ZONE
// 'UTC' first, the answer wrapped in row_to_json), as the analyst.  Each
// question is one step judged by test/bi/gen/judge.py against
// test/bi/gen/expect/malloy.txt.
//
//   node malloy.js OUT SOCKETDIR PORT DB SUPERUSER ROLE
'use strict';
const path = require('path');
const { Leg } = require(path.join(__dirname, 'leg.js'));
const malloy = require('@malloydata/malloy');
const { PostgresConnection } = require('@malloydata/db-postgres');

const MODEL = `
source: orders is postgres.table('shop.orders') extend {
  primary_key: order_id
  join_one: products is postgres.table('shop.products') on product_id = products.product_id
  join_one: regions is postgres.table('shop.regions') on region = regions.region
  join_one: customers is postgres.table('shop.customers') on customer_id = customers.customer_id
  dimension:
    order_month is order_date.month
    order_year is order_date.year
    size is amount ? pick 'small' when < 50 pick 'medium' when < 500 else 'large'
  measure:
    order_count is count()
    revenue is amount.sum()
    avg_amount is amount.avg()
    buyers is count(customer_id)
    max_amount is amount.max()
    first_order is order_date.min()
    last_order is order_date.max()
    returned_count is order_count { where: status = 'returned' }
}
source: slid is postgres.table('cardata.slid') extend {
  measure:
    people is count()
    avg_wages is wages.avg()
    avg_education is education.avg()
}
`;

// [step, Malloy query]
const QUERIES = [
  ['order_count', 'run: orders -> { aggregate: order_count }'],
  ['by_region', 'run: orders -> { group_by: region; aggregate: order_count, revenue }'],
  ['avg_by_status', 'run: orders -> { group_by: status; aggregate: avg_amount; order_by: avg_amount desc }'],
  ['revenue_by_month_2025', 'run: orders -> { where: order_date >= @2025-01-01; group_by: order_month; aggregate: revenue }'],
  ['orders_by_year', 'run: orders -> { group_by: order_year; aggregate: order_count }'],
  ['top2_channels', 'run: orders -> { group_by: channel; aggregate: order_count; limit: 2 }'],
  ['buyers', 'run: orders -> { aggregate: buyers }'],
  ['max_amount', 'run: orders -> { aggregate: max_amount }'],
  ['date_range', 'run: orders -> { aggregate: first_order, last_order }'],
  ['filtered_measure', 'run: orders -> { group_by: region; aggregate: returned_count }'],
  ['where_returned', "run: orders -> { where: status = 'returned'; aggregate: order_count, revenue }"],
  ['revenue_by_category_join', 'run: orders -> { group_by: products.category; aggregate: revenue }'],
  ['orders_by_country_join', 'run: orders -> { group_by: regions.country; aggregate: order_count }'],
  ['year_over_year', 'run: orders -> { group_by: order_year; aggregate: revenue; calculate: growth is revenue - lag(revenue); order_by: order_year }'],
  ['percent_of_total', 'run: orders -> { group_by: region; aggregate: revenue, share is revenue / all(revenue) }'],
  ['nested_view', 'run: orders -> { group_by: region; aggregate: order_count; nest: by_status is { group_by: status; aggregate: order_count } }'],
  ['pick_size', 'run: orders -> { group_by: size; aggregate: order_count }'],
  ['revenue_by_segment_join', 'run: orders -> { group_by: customers.segment; aggregate: revenue }'],
  ['select_rows', 'run: orders -> { select: order_id, amount, order_date; limit: 10 }'],
  ['index_search', 'run: orders -> { index: region, status, channel }'],
  ['slid_by_sex', 'run: slid -> { group_by: sex; aggregate: people, avg_wages, avg_education }'],
  ['slid_by_language', 'run: slid -> { group_by: language; aggregate: people }'],
  ['slid_age_bins', 'run: slid -> { group_by: age_band is floor(age / 10) * 10; aggregate: people }'],
  ['slid_young_wages', 'run: slid -> { where: age < 30; aggregate: avg_wages }'],
  // questions about customers, not rows: a pipeline over a per-customer stage
  ['orders_per_customer', 'run: orders -> { group_by: customer_id; aggregate: n is count() } -> { aggregate: avg_orders is n.avg() }'],
  ['customers_by_order_count', 'run: orders -> { group_by: customer_id; aggregate: n is count() } -> { group_by: n; aggregate: customers is count() }'],
  ['revenue_per_customer', 'run: orders -> { group_by: customer_id; aggregate: revenue } -> { aggregate: avg_revenue is revenue.avg(), top is revenue.max() }'],
  ['distinct_products', 'run: orders -> { aggregate: products is count(product_id) }'],
  ['order_count_again', 'run: orders -> { aggregate: order_count }'],
];

async function main() {
  const leg = await Leg.open('malloy');
  const connection = new PostgresConnection('postgres', () => ({}), async () => ({
    host: leg.sock, port: leg.port, databaseName: leg.db, username: leg.role,
  }));
  const runtime = new malloy.SingleConnectionRuntime({ connection });
  let model = null;

  await leg.step('connect', async () => { await connection.test(); return [1]; });
  // compiling the model reads each table's schema from the catalog
  await leg.step('load_model', async () => {
    model = runtime.loadModel(MODEL);
    await model.getModel();
    return [1];
  });
  for (const [name, text] of QUERIES) {
    await leg.step(name, async (rec) => {
      const q = model.loadQuery(text);
      rec.sql.push(await q.getSQL());
      const result = await q.run();
      const rows = result.data.toObject();
      if (rows.length) rec.columns = Object.keys(rows[0]);
      return rows;
    });
  }
  await leg.done();
}

main().then(() => process.exit(0), (x) => { console.error(x); process.exit(1); });
