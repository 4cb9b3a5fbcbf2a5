// Issue 17's client features through node-postgres and pg-copy-streams:
// transaction blocks (COMMIT, ROLLBACK, savepoints, a failed block),
// a serialization failure retried, COPY FROM STDIN / TO STDOUT in CSV and
// text, uuid and serial columns, typed parameters and a named prepared
// statement, INSERT ... ON CONFLICT DO UPDATE, and errors' SQLSTATEs.
// stdin: {host, port, user, database}; stdout: a JSON object of results
// (e2e/clients_features_test.go holds what each must be).
'use strict';
const fs = require('fs');
const { Readable } = require('stream');
const { pipeline } = require('stream/promises');
const { Client } = require('pg');
const copy = require('pg-copy-streams');

// codeOf runs a query that must fail and returns its SQLSTATE.
async function codeOf(client, text, values) {
  try {
    await client.query(text, values);
  } catch (e) {
    return e.code;
  }
  return 'no error';
}

async function ids(client, table) {
  return (await client.query(`SELECT id FROM ${table} ORDER BY id`)).rows.map((r) => r.id);
}

async function main() {
  const c = JSON.parse(fs.readFileSync(0, 'utf8'));
  const connect = async () => {
    const client = new Client({ host: c.host, port: c.port, user: c.user, database: c.database, connectionTimeoutMillis: 10000 });
    await client.connect();
    return client;
  };
  const client = await connect();
  const other = await connect();
  const out = {};
  try {
    // Transaction blocks.
    await client.query('CREATE TABLE js_t (id int PRIMARY KEY, v text)');
    await client.query('BEGIN');
    await client.query("INSERT INTO js_t VALUES (1, 'a')");
    await client.query("INSERT INTO js_t VALUES (2, 'b')");
    const unseen = (await other.query('SELECT count(*)::int AS n FROM js_t')).rows[0].n;
    await client.query('COMMIT');
    out.commit = { seen_by_other_before: unseen, after: await ids(other, 'js_t') };

    await client.query('BEGIN');
    await client.query("INSERT INTO js_t VALUES (3, 'c')");
    const inside = (await client.query('SELECT count(*)::int AS n FROM js_t')).rows[0].n;
    await client.query('ROLLBACK');
    out.rollback = { inside, after: await ids(client, 'js_t') };

    await client.query('BEGIN');
    await client.query("INSERT INTO js_t VALUES (10, 'kept')");
    await client.query('SAVEPOINT a');
    await client.query("INSERT INTO js_t VALUES (11, 'dropped')");
    await client.query('ROLLBACK TO SAVEPOINT a');
    await client.query("INSERT INTO js_t VALUES (12, 'kept')");
    await client.query('RELEASE SAVEPOINT a');
    await client.query('COMMIT');
    out.savepoint = await ids(client, 'js_t');

    await client.query('BEGIN');
    await client.query("INSERT INTO js_t VALUES (20, 'lost')");
    const codes = [await codeOf(client, 'SELECT 1 / 0'), await codeOf(client, 'SELECT 1')];
    await client.query('ROLLBACK');
    const usable = (await client.query('SELECT 1 AS one')).rows[0].one;
    out.aborted = { codes, usable, after: await ids(client, 'js_t') };

    // A lost update refused with 40001 and retried: the block reads a
    // balance and writes it back plus 10; on the first attempt another
    // session adds 100 in between, so the first committer wins and this
    // block must run again on a fresh snapshot.
    await client.query('CREATE TABLE js_acct (id int PRIMARY KEY, bal int)');
    await client.query('INSERT INTO js_acct VALUES (1, 0)');
    const errors = [];
    let attempts = 0;
    for (;;) {
      attempts++;
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        const bal = (await client.query('SELECT bal FROM js_acct WHERE id = 1')).rows[0].bal;
        if (attempts === 1) {
          await other.query('UPDATE js_acct SET bal = bal + 100 WHERE id = 1');
        }
        await client.query('UPDATE js_acct SET bal = $1 WHERE id = 1', [bal + 10]);
        await client.query('COMMIT');
        break;
      } catch (e) {
        await client.query('ROLLBACK');
        if (e.code !== '40001' || attempts >= 5) throw e;
        errors.push(e.code);
      }
    }
    const balance = (await client.query('SELECT bal FROM js_acct WHERE id = 1')).rows[0].bal;
    out.serialization = { errors, attempts, balance };

    // COPY through pg-copy-streams.
    await client.query('CREATE TABLE js_cp (id int PRIMARY KEY, name text, note text)');
    const copyIn = async (sql, chunks) => {
      const s = client.query(copy.from(sql));
      await pipeline(Readable.from(chunks), s);
      return s.rowCount;
    };
    const copyOut = async (sql) => {
      const chunks = [];
      for await (const chunk of client.query(copy.to(sql))) chunks.push(chunk);
      return Buffer.concat(chunks).toString('utf8');
    };
    const inCSV = await copyIn('COPY js_cp FROM STDIN WITH (FORMAT csv, HEADER true)', [
      'id,name,note\n1,"a, b",\n2,"say ""hi""",""\n',
      '3,"two\nlines",plain\n',
    ]);
    const inText = await copyIn('COPY js_cp (id, name, note) FROM STDIN', ['4\ttab\\there\t\\N\n5\tback\\\\slash\t\n']);
    out.copy = {
      in_csv: inCSV,
      in_text: inText,
      rows: (await client.query('SELECT id, name, note FROM js_cp ORDER BY id')).rows,
      out_csv: await copyOut('COPY (SELECT * FROM js_cp ORDER BY id) TO STDOUT WITH (FORMAT csv)'),
      out_text: await copyOut('COPY (SELECT * FROM js_cp ORDER BY id) TO STDOUT'),
      usable: (await client.query('SELECT count(*)::int AS n FROM js_cp')).rows[0].n,
    };

    // uuid and serial columns.
    const shape = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    await client.query('CREATE TABLE js_u (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int)');
    const gen = (await client.query('INSERT INTO js_u (n) VALUES (1), (2) RETURNING id')).rows.map((r) => r.id);
    await client.query('INSERT INTO js_u VALUES ($1, $2)', ['A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 3]);
    out.uuid = {
      generated_shape: gen.every((u) => typeof u === 'string' && shape.test(u)),
      generated_distinct: gen.length === 2 && gen[0] !== gen[1],
      by_generated: (await client.query('SELECT n FROM js_u WHERE id = $1', [gen[1]])).rows[0].n,
      explicit: (await client.query('SELECT id FROM js_u WHERE n = 3')).rows[0].id,
      by_param: (await client.query('SELECT n FROM js_u WHERE id = $1::uuid', ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'])).rows[0].n,
      function_shape: shape.test((await client.query('SELECT gen_random_uuid() AS u')).rows[0].u),
    };
    await client.query('CREATE TABLE js_s (id serial PRIMARY KEY, big bigserial, v text)');
    const serial = (await client.query("INSERT INTO js_s (v) VALUES ('a'), ('b') RETURNING id, big, v")).rows;
    serial.push(...(await client.query('INSERT INTO js_s (v) VALUES ($1) RETURNING id, big, v', ['c'])).rows);
    // node-postgres reads int8 as a string (it may exceed 2^53).
    out.serial = serial.map((r) => ({ id: r.id, big: r.big, v: r.v }));

    // Typed parameters, a named prepared statement, ON CONFLICT DO UPDATE.
    await client.query('CREATE TABLE js_k (id int PRIMARY KEY, amount numeric, at timestamptz, ok bool, note text)');
    const at = new Date(Date.UTC(2024, 2, 1, 12, 34, 56, 789));
    await client.query('INSERT INTO js_k VALUES ($1, $2, $3, $4, $5), ($6, $7, $8, $9, $10)',
      [1, '12.50', at, true, null, 2, '-0.001', new Date(at.getTime() + 86400000), false, 'two']);
    const prepared = { name: 'js_k_find', text: 'SELECT id FROM js_k WHERE amount > $1 AND at < $2 AND ok = $3 AND ($4::text IS NULL OR note = $4) ORDER BY id' };
    const found = [];
    for (const values of [['0', new Date(at.getTime() + 1), true, null], ['-1', new Date(at.getTime() + 2 * 86400000), false, 'two']]) {
      found.push((await client.query({ ...prepared, values })).rows.map((r) => r.id));
    }
    const row = (await client.query('SELECT id, amount, at, ok, note FROM js_k WHERE id = $1', [1])).rows[0];
    const upsert = 'INSERT INTO js_k (id, amount, note) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET amount = js_k.amount + EXCLUDED.amount, note = EXCLUDED.note RETURNING id, amount, note';
    out.params = {
      row: { id: row.id, amount: row.amount, at_ms: row.at.getTime(), ok: row.ok, note: row.note },
      found,
      upsert: [
        (await client.query(upsert, [1, '0.5', 'updated'])).rows[0],
        (await client.query(upsert, [3, '7', 'inserted'])).rows[0],
      ],
      after: (await client.query('SELECT id, amount::text AS amount, note FROM js_k ORDER BY id')).rows,
    };

    // Errors carry their SQLSTATE and leave the session usable.
    let missing = {};
    try {
      await client.query('SELECT * FROM js_nope');
    } catch (e) {
      missing = { code: e.code, message: e.message };
    }
    out.errors = {
      unique: await codeOf(client, "INSERT INTO js_k (id, note) VALUES ($1, 'dup')", [2]),
      division: await codeOf(client, 'SELECT $1::int / $2::int', [1, 0]),
      missing,
      usable: (await client.query('SELECT count(*)::int AS n FROM js_k')).rows[0].n,
    };
    process.stdout.write(JSON.stringify(out));
  } finally {
    await other.end();
    await client.end();
  }
}

main().catch((e) => { process.stderr.write(String(e.stack || e)); process.exit(1); });
