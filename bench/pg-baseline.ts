/**
 * The storage limit of PostgreSQL on this machine, independent of Inlet's
 * code: the rows of the big-batch pool written into a database of its own,
 * 500 rows per transaction, each transaction one INSERT … SELECT FROM
 * unnest(…) (the bulk form), from BENCH_PG_WRITERS connections at once. The
 * server's default durability (synchronous_commit on); the schema is the
 * least a store that keeps each insert_id once needs: one events table with
 * one unique key on (source_id, insert_id).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { PoolSpec } from './payloads.js';
import { postgresCpuSeconds } from './proc-stats.js';
import { BASELINE_PROJECT, BASELINE_SOURCE, RowCursor, args, baselineRows, printStorageFigures } from './rows.js';

const a = args(process.argv.slice(2));
const spec = JSON.parse(a.get('spec')!) as PoolSpec;
const seconds = Number(a.get('seconds'));
const perTx = Number(a.get('rows-per-tx') ?? 500);
const writers = Number(a.get('writers') ?? 4);

// Named, so each connection parses and plans it once. A repeat stores nothing (the pool's rows hold none).
const INSERT = {
  name: 'baseline_insert',
  text: `INSERT INTO events (id, project_id, source_id, event, distinct_id, person_id, "timestamp", received_at, insert_id, properties)
    SELECT r.id, $1, $2, r.event, r.distinct_id, r.person_id, r.ts, $3, r.insert_id, r.properties::jsonb
    FROM unnest($4::uuid[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[], $10::text[])
      AS r(id, event, distinct_id, person_id, ts, insert_id, properties)
    ON CONFLICT (source_id, insert_id) DO NOTHING`,
};

const { rows, pool: items } = baselineRows(spec);
const cursor = new RowCursor(rows, items.roundIndex);
const pool = new pg.Pool({ connectionString: a.get('url')!, max: writers });
await pool.query(`
  CREATE TABLE events (
    id uuid NOT NULL, project_id text NOT NULL, source_id text NOT NULL, event text NOT NULL,
    distinct_id text, person_id text NOT NULL, "timestamp" bigint NOT NULL, received_at bigint NOT NULL,
    insert_id text NOT NULL, properties jsonb NOT NULL,
    UNIQUE (source_id, insert_id)
  )`);
const clients = await Promise.all(Array.from({ length: writers }, () => pool.connect()));
// The durability it ran with, as the server has it set (Inlet's servers use the same).
const durability: Record<string, string> = {};
for (const name of ['synchronous_commit', 'fsync', 'full_page_writes']) {
  durability[name] = ((await clients[0]!.query(`SHOW ${name}`)).rows[0] as Record<string, string>)[name]!;
}

const cpu0 = process.cpuUsage();
const db0 = postgresCpuSeconds();
const start = performance.now();
const end = start + seconds * 1000;
let written = 0;
let transactions = 0;

async function writer(c: pg.PoolClient): Promise<void> {
  while (performance.now() < end) {
    const now = Date.now();
    const batch = Array.from({ length: perTx }, () => cursor.next());
    // One statement outside BEGIN is one transaction: its 500 rows commit together.
    await c.query({
      ...INSERT,
      values: [
        BASELINE_PROJECT, BASELINE_SOURCE, now, batch.map(() => randomUUID()),
        batch.map((r) => r.event), batch.map((r) => r.distinctId), batch.map((r) => r.personId),
        batch.map((r) => r.timestamp), batch.map((r) => r.insertId), batch.map((r) => r.properties),
      ],
    });
    written += perTx;
    transactions++;
  }
}

await Promise.all(clients.map((c) => writer(c)));
const dbCpuSec = postgresCpuSeconds() - db0;
printStorageFigures('postgres', { written, transactions, perTx, writers, start, cpu0, dbCpuSec: db0 > 0 ? dbCpuSec : null, durability });
for (const c of clients) c.release();
await pool.end();
