// test/bi/gen/cube.js — the cube leg: Cube's query builder.  A Cube data model of
// the shop and of carData's SLID is compiled by @cubejs-backend/schema-compiler
// 0.33 (prepareCompiler), each question — Cube's JSON query of measures,
// dimensions, time dimensions, filters, order and limit — is turned into SQL
// and parameters by its PostgresQuery, and the SQL runs with its parameters
// ($1 ...) through node-postgres, as the analyst.  Each question is one step
// judged by test/bi/gen/judge.py against test/bi/gen/expect/cube.txt.
//
//   node cube.js OUT SOCKETDIR PORT DB SUPERUSER ROLE
'use strict';
const path = require('path');
const { Client } = require('pg');
const { prepareCompiler, PostgresQuery } = require('@cubejs-backend/schema-compiler');
const { Leg } = require(path.join(__dirname, 'leg.js'));

const MODEL = `
cube('orders', {
  sql_table: 'shop.orders',
  joins: {
    products: { relationship: 'many_to_one', sql: \`\${CUBE}.product_id = \${products}.product_id\` },
    customers: { relationship: 'many_to_one', sql: \`\${CUBE}.customer_id = \${customers}.customer_id\` },
  },
  measures: {
    count: { type: 'count' },
    revenue: { sql: 'amount', type: 'sum' },
    avg_amount: { sql: 'amount', type: 'avg' },
    max_amount: { sql: 'amount', type: 'max' },
    buyers: { sql: 'customer_id', type: 'count_distinct' },
    first_order: { sql: 'order_date', type: 'min' },
    avg_order_value: { sql: \`\${revenue} / NULLIF(\${count}, 0)\`, type: 'number' },
    net_revenue: { sql: 'amount * (1 - discount / 100.0)', type: 'sum' },
    returned: { type: 'count', filters: [{ sql: \`\${CUBE}.status = 'returned'\` }] },
    revenue_30d: { sql: 'amount', type: 'sum', rolling_window: { trailing: '30 day' } },
  },
  dimensions: {
    order_id: { sql: 'order_id', type: 'number', primary_key: true },
    region: { sql: 'region', type: 'string' },
    status: { sql: 'status', type: 'string' },
    channel: { sql: 'channel', type: 'string' },
    order_date: { sql: 'order_date', type: 'time' },
    size: { type: 'string', case: { when: [{ sql: \`\${CUBE}.amount < 50\`, label: 'small' },
                                          { sql: \`\${CUBE}.amount < 500\`, label: 'medium' }],
                                   else: { label: 'large' } } },
  },
});
cube('products', {
  sql_table: 'shop.products',
  dimensions: {
    product_id: { sql: 'product_id', type: 'number', primary_key: true },
    category: { sql: 'category', type: 'string' },
  },
});
cube('customers', {
  sql_table: 'shop.customers',
  measures: { count: { type: 'count' } },
  dimensions: {
    customer_id: { sql: 'customer_id', type: 'number', primary_key: true },
    segment: { sql: 'segment', type: 'string' },
  },
});
cube('slid', {
  sql_table: 'cardata.slid',
  measures: {
    people: { type: 'count' },
    avg_wages: { sql: 'wages', type: 'avg' },
  },
  dimensions: {
    sex: { sql: 'sex', type: 'string' },
    language: { sql: 'language', type: 'string' },
    age: { sql: 'age', type: 'number' },
  },
});
`;

const month2025 = { dimension: 'orders.order_date', granularity: 'month', dateRange: ['2025-01-01', '2025-12-31'] };
// [step, Cube query]
const QUERIES = [
  ['total_count', { measures: ['orders.count'] }],
  ['by_region', { measures: ['orders.count', 'orders.revenue'], dimensions: ['orders.region'] }],
  ['avg_by_status', { measures: ['orders.avg_amount'], dimensions: ['orders.status'] }],
  ['buyers', { measures: ['orders.buyers'] }],
  ['max_amount', { measures: ['orders.max_amount'] }],
  ['month_2025', { measures: ['orders.count'], timeDimensions: [month2025] }],
  ['week_december', { measures: ['orders.revenue'], timeDimensions: [{ dimension: 'orders.order_date',
    granularity: 'week', dateRange: ['2025-12-01', '2025-12-31'] }] }],
  ['year_no_range', { measures: ['orders.count'], timeDimensions: [{ dimension: 'orders.order_date',
    granularity: 'year' }] }],
  ['filter_equals', { measures: ['orders.count'], filters: [{ member: 'orders.status', operator: 'equals',
    values: ['returned'] }] }],
  ['filter_contains', { measures: ['orders.count'], filters: [{ member: 'orders.channel', operator: 'contains',
    values: ['eb'] }] }],
  ['filtered_measure', { measures: ['orders.returned'], dimensions: ['orders.region'] }],
  ['top3_regions', { measures: ['orders.revenue'], dimensions: ['orders.region'], order: [{ id: 'orders.revenue', desc: true }],
    limit: 3 }],
  ['by_channel', { measures: ['orders.count'], dimensions: ['orders.channel'] }],
  ['avg_order_value', { measures: ['orders.avg_order_value'], dimensions: ['orders.region'] }],
  ['by_category_join', { measures: ['orders.revenue'], dimensions: ['products.category'] }],
  ['net_revenue', { measures: ['orders.net_revenue'] }],
  ['size_case', { measures: ['orders.count'], dimensions: ['orders.size'] }],
  ['first_order', { measures: ['orders.first_order'] }],
  ['rolling_30d', { measures: ['orders.revenue_30d'], timeDimensions: [{ dimension: 'orders.order_date',
    granularity: 'day', dateRange: ['2025-12-01', '2025-12-31'] }] }],
  ['by_segment_join', { measures: ['orders.revenue'], dimensions: ['customers.segment'] }],
  ['ungrouped', { dimensions: ['orders.order_id', 'orders.region'], ungrouped: true, limit: 10 }],
  ['customers_by_segment', { measures: ['customers.count'], dimensions: ['customers.segment'] }],
  ['slid_by_sex', { measures: ['slid.people', 'slid.avg_wages'], dimensions: ['slid.sex'] }],
  ['slid_over_50', { measures: ['slid.avg_wages'], filters: [{ member: 'slid.age', operator: 'gte',
    values: ['50'] }] }],
  ['by_region_again', { measures: ['orders.count', 'orders.revenue'], dimensions: ['orders.region'] }],
];

async function main() {
  const leg = await Leg.open('cube');
  const repo = { localPath: () => __dirname, dataSchemaFiles: async () => [{ fileName: 'shop.js', content: MODEL }] };
  const { compiler, joinGraph, cubeEvaluator } = prepareCompiler(repo, { adapter: 'postgres' });
  await compiler.compile();
  const client = new Client(leg.analyst({ application_name: 'cube' }));

  await leg.step('connect', async () => {
    await client.connect();
    return (await client.query('SELECT 1')).rows;  // the driver's test query
  });
  for (const [name, q] of QUERIES) {
    await leg.step(name, async (rec) => {
      const query = new PostgresQuery({ joinGraph, cubeEvaluator, compiler }, { timezone: 'UTC', ...q });
      const [sql, params] = query.buildSqlAndParams();
      rec.sql.push(sql + (params.length ? '  -- ' + JSON.stringify(params) : ''));
      const res = await client.query(sql, params);
      rec.columns = res.fields.map((f) => f.name);
      return res.rows;
    });
  }
  await client.end();
  await leg.done();
}

main().then(() => process.exit(0), (x) => { console.error(x); process.exit(1); });
