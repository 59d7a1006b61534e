// test/bi/gen/leg.js — the steps of a Node.js generator leg (knex, malloy, cube):
// each question is one step between two marker statements that the superuser
// sends (and the server logs), recorded as one JSON line for
// test/bi/gen/judge.py (format there).  Modules come from NODE_PATH
// (test/bi/run.sh installs test/bi/gen/node's package-lock.json).
//
//   const leg = await Leg.open('knex');     // argv: OUT SOCKETDIR PORT DB SUPERUSER ROLE
//   await leg.step('orders_count', async (rec) => rows);
//   await leg.done();
'use strict';
const fs = require('fs');
const { Client } = require('pg');

class Leg {
  static async open(name) {
    const a = process.argv.slice(2);
    if (a.length < 6) {
      console.error(`usage: ${name}.js OUT SOCKETDIR PORT DB SUPERUSER ROLE`);
      process.exit(2);
    }
    const leg = new Leg();
    [leg.outPath, leg.sock, leg.port, leg.db, leg.su, leg.role] = a;
    leg.port = Number(leg.port);
    leg.name = name;
    leg.out = fs.openSync(leg.outPath, 'w');
    leg.suClient = new Client({ host: leg.sock, port: leg.port, database: leg.db, user: leg.su,
      application_name: 'dp_pg bi leg (ledger)' });
    await leg.suClient.connect();
    await leg.suClient.query("SET log_statement = 'all'");
    leg.names = new Set();
    return leg;
  }

  // the analyst's connection settings for node-postgres
  analyst(extra = {}) {
    return { host: this.sock, port: this.port, database: this.db, user: this.role, ...extra };
  }

  async mark(step, which) {
    const r = await this.suClient.query(
      `SELECT /* dp_bi ${this.name} ${step} ${which} */ coalesce(max(id), 0)::int AS id FROM dp_pg.ledger_entries`);
    return r.rows[0].id;
  }

  // run fn(rec) as one step; fn returns the rows (an array) or null; throwing is an error
  async step(name, fn) {
    if (this.names.has(name)) throw new Error(`step ${name} twice`);
    this.names.add(name);
    const rec = { step: name, sql: [], error: null, rows: null, columns: null };
    rec.begin = await this.mark(name, 'begin');
    try {
      const rows = await fn(rec);
      if (rows != null && rec.rows == null) rec.rows = rows.length;
    } catch (x) {
      rec.error = `${x.code ? x.code + ': ' : ''}${x.message || x}`.slice(0, 2000);
      if (!x.code) rec.trace = String(x.stack || '').slice(0, 2000);
    }
    rec.end = await this.mark(name, 'end');
    fs.writeSync(this.out, JSON.stringify(rec) + '\n');
    return rec;
  }

  async done() {
    fs.closeSync(this.out);
    await this.suClient.end();
  }
}

module.exports = { Leg };
