// test/bi/gen/knex.js — the knex leg: a Node.js service's queries, written with
// knex's query builder (npm knex 3, client 'pg', node-postgres), run as the
// analyst on the shop and on carData's SLID.  knex binds every value as a
// parameter ($1 ...) of an unnamed prepared statement; each question is one
// step judged by test/bi/gen/judge.py against test/bi/gen/expect/knex.txt.
//
//   node knex.js OUT SOCKETDIR PORT DB SUPERUSER ROLE
'use strict';
const path = require('path');
const { Leg } = require(path.join(__dirname, 'leg.js'));

async function main() {
  const leg = await Leg.open('knex');
  const knex = require('knex')({ client: 'pg', connection: leg.analyst({ application_name: 'knex' }),
    pool: { min: 0, max: 2 } });

  // run a builder: record its SQL and bindings, then await it
  const ask = (name, build) => leg.step(name, async (rec) => {
    const q = build();
    const native = q.toSQL().toNative();
    rec.sql.push(native.sql + (native.bindings.length ? '  -- ' + JSON.stringify(native.bindings) : ''));
    const rows = await q;
    if (Array.isArray(rows) && rows.length && typeof rows[0] === 'object') rec.columns = Object.keys(rows[0]);
    return Array.isArray(rows) ? rows : (rows === undefined ? [] : [rows]);
  });

  // knex's documented connectivity check, then the schema builder's catalog reads
  await leg.step('connect', async () => (await knex.raw('select 1+1 as result')).rows);
  await leg.step('has_table', async () => [await knex.schema.withSchema('shop').hasTable('orders')]);
  await leg.step('column_info', async () => Object.keys(await knex('orders').withSchema('shop').columnInfo()));

  await ask('count_orders', () => knex('shop.orders').count('* as orders'));
  await ask('count_delivered', () => knex('shop.orders').where('status', 'delivered').count('* as orders'));
  await ask('count_big_orders', () => knex('shop.orders').where('amount', '>', 100).count('* as orders'));
  await ask('revenue_by_region', () => knex('shop.orders').select('region').sum('amount as revenue')
    .avg('quantity as avg_quantity').groupBy('region').orderBy('revenue', 'desc'));
  await ask('customers_distinct', () => knex('shop.orders').countDistinct('customer_id as customers'));
  await ask('max_amount', () => knex('shop.orders').max('amount as max_amount'));
  await ask('first_last_order_date', () => knex('shop.orders').min('order_date as first').max('order_date as last'));
  await ask('q1_2025_between', () => knex('shop.orders').whereBetween('order_date', ['2025-01-01', '2025-03-31'])
    .count('* as orders').sum('amount as revenue'));
  await ask('where_in_regions', () => knex('shop.orders').select('region').count('* as orders')
    .whereIn('region', ['north', 'east']).groupBy('region'));
  await ask('top2_channels', () => knex('shop.orders').select('channel').count('* as orders').groupBy('channel')
    .orderBy('orders', 'desc').limit(2));
  await ask('revenue_by_month_2025', () => knex('shop.orders')
    .select(knex.raw("date_trunc('month', order_date) as month")).sum('amount as revenue')
    .where('order_date', '>=', '2025-01-01').groupByRaw("date_trunc('month', order_date)").orderBy('month'));
  await ask('revenue_by_category_join', () => knex('shop.orders as o')
    .join('shop.products as p', 'p.product_id', 'o.product_id').select('p.category')
    .sum('o.amount as revenue').groupBy('p.category'));
  await ask('orders_by_country_left_join', () => knex('shop.orders as o')
    .leftJoin('shop.regions as r', 'r.region', 'o.region').select('r.country').count('* as orders')
    .groupBy('r.country'));
  await ask('share_by_region_window', () => knex.select('region', 'orders',
    knex.raw('round(100.0 * orders / sum(orders) over (), 1) as pct'))
    .from(knex('shop.orders').select('region').count('* as orders').groupBy('region').as('t')).orderBy('region'));
  await ask('regions_having', () => knex('shop.orders').select('region').count('* as orders').groupBy('region')
    .having(knex.raw('count(*) > ?', [100])));
  await ask('distinct_status', () => knex('shop.orders').distinct('status'));
  await ask('first_order', () => knex('shop.orders').first());
  await ask('pluck_amounts', () => knex('shop.orders').pluck('amount'));
  await ask('page_of_orders', () => knex('shop.orders').select('order_id', 'amount').orderBy('order_id')
    .limit(20).offset(40));
  await ask('sum_amount_times_quantity', () => knex('shop.orders')
    .select(knex.raw('sum(amount * quantity) as revenue')));
  await ask('orders_per_segment_join', () => knex('shop.orders as o')
    .join('shop.customers as c', 'c.customer_id', 'o.customer_id').select('c.segment')
    .count('* as orders').groupBy('c.segment'));
  // a transaction with a savepoint (knex's nested transaction), and one that a refusal rolls back
  await leg.step('transaction_savepoint', async (rec) => knex.transaction(async (trx) => {
    const a = await trx('shop.orders').where('status', 'returned').count('* as orders');
    const b = await trx.transaction(async (sp) => sp('shop.customers').select('segment').count('* as n')
      .groupBy('segment'));
    return a.concat(b);
  }));
  await leg.step('transaction_refused', async () => knex.transaction(async (trx) =>
    trx('shop.orders').select('customer_id', 'amount').where('amount', '>', 1900)));
  await ask('insert_order', () => knex('shop.orders').insert({ order_id: 99999, customer_id: 1, product_id: 1,
    region: 'north', order_date: '2025-01-01', ordered_at: '2025-01-01 10:00', amount: 1, quantity: 1, discount: 0,
    status: 'placed', channel: 'web' }));
  await ask('customers_avg_birth_year', () => knex('shop.customers').select('segment')
    .avg('birth_year as avg_birth_year').groupBy('segment'));
  await ask('slid_wages_by_language', () => knex('cardata.slid').select('language').avg('wages as avg_wages')
    .count('* as people').groupBy('language').orderBy('language'));
  await ask('slid_wages_age_25_34', () => knex('cardata.slid').whereBetween('age', [25, 34])
    .avg('wages as avg_wages'));
  await ask('slid_language_unknown', () => knex('cardata.slid').whereNull('language').count('* as people'));
  await ask('slid_education_sum', () => knex('cardata.slid').where('sex', 'Female').sum('education as years'));
  await ask('count_orders_again', () => knex('shop.orders').count('* as orders'));

  await knex.destroy();
  await leg.done();
}

main().then(() => process.exit(0), (x) => { console.error(x); process.exit(1); });
