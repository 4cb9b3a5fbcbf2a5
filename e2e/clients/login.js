// Logs in with node-postgres once per case and reports what happened.
// stdin: a JSON array of {host, port, user, password, database, ssl: null |
// "require" | {ca: path}}; stdout: a JSON array of {user} (current_user
// after a login) or {error, code}.
'use strict';
const fs = require('fs');
const { Client } = require('pg');

async function attempt(c) {
  let ssl = false;
  if (c.ssl === 'require') {
    ssl = { rejectUnauthorized: false };
  } else if (c.ssl && c.ssl.ca) {
    ssl = { ca: fs.readFileSync(c.ssl.ca, 'utf8'), rejectUnauthorized: true };
  }
  const client = new Client({
    host: c.host, port: c.port, user: c.user, password: c.password,
    database: c.database, ssl, connectionTimeoutMillis: 10000,
  });
  try {
    await client.connect();
    const res = await client.query('SELECT current_user AS u');
    const tls = client.connection && client.connection.stream && client.connection.stream.encrypted === true;
    return { user: res.rows[0].u, tls };
  } catch (e) {
    return { error: String(e.message), code: e.code || '' };
  } finally {
    await client.end().catch(() => {});
  }
}

async function main() {
  const cases = JSON.parse(fs.readFileSync(0, 'utf8'));
  const out = [];
  for (const c of cases) {
    out.push(await attempt(c));
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
