// Arrays through node-postgres: parameters (sent as array text), array
// columns read back as JS arrays, = ANY($1), array_agg and unnest.
// stdin: {host, port, user, database}; stdout: a JSON object of results.
'use strict';
const fs = require('fs');
const { Client } = require('pg');

async function main() {
  const c = JSON.parse(fs.readFileSync(0, 'utf8'));
  const client = new Client({ host: c.host, port: c.port, user: c.user, database: c.database, connectionTimeoutMillis: 10000 });
  await client.connect();
  try {
    await client.query('CREATE TABLE js_arr (id int PRIMARY KEY, nums int[], tags text[])');
    await client.query('INSERT INTO js_arr VALUES ($1, $2, $3), ($4, $5, $6)',
      [1, [1, 2, null], ['a', 'b c', '"q"'], 2, [], ['NULL', '']]);
    const rows = (await client.query('SELECT id, nums, tags FROM js_arr ORDER BY id')).rows;
    const any = (await client.query('SELECT id FROM js_arr WHERE $1 = ANY(tags) OR id = ANY($2) ORDER BY id', ['b c', [2]])).rows.map(r => r.id);
    const agg = (await client.query('SELECT array_agg(id ORDER BY id DESC) AS ids FROM js_arr')).rows[0].ids;
    const unnested = (await client.query('SELECT x FROM js_arr, unnest(js_arr.nums) AS x WHERE id = 1 ORDER BY x')).rows.map(r => r.x);
    process.stdout.write(JSON.stringify({ rows, any, agg, unnested }));
  } finally {
    await client.end();
  }
}

main().catch((e) => { process.stderr.write(String(e.stack || e)); process.exit(1); });
