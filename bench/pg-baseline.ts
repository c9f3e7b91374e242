/**
 * The storage limit of PostgreSQL: the rows of the big-batch pool written
 * with one INSERT … SELECT FROM unnest(…) per table and transaction of 500
 * rows (the bulk form Inlet's PostgreSQL store uses), by a few writers at
 * once, into a database of its own, with the server's default durability
 * (synchronous_commit on).
 */
import pg from 'pg';
import type { PoolSpec } from './payloads.js';
import { newEventId } from '../src/domain/ids.js';
import { BASELINE_PROJECT, BASELINE_SOURCE, RowCursor, args, baselineRows, printStorageFigures } from './rows.js';

const a = args(process.argv.slice(2));
const spec = JSON.parse(a.get('spec')!) as PoolSpec;
const seconds = Number(a.get('seconds'));
const perTx = Number(a.get('rows-per-tx') ?? 500);
const writers = Number(a.get('writers') ?? 4);

const INSERT_EVENTS = `INSERT INTO events (id, project_id, source_id, event, distinct_id, person_id, "timestamp", received_at, insert_id, properties)
  SELECT r.id, $1, $2, r.event, r.distinct_id, r.person_id, r.ts, $3, r.insert_id, r.properties::jsonb
  FROM unnest($4::uuid[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[], $10::text[])
    AS r(id, event, distinct_id, person_id, ts, insert_id, properties)`;
const INSERT_IDS = `INSERT INTO insert_ids (source_id, insert_id, event_id)
  SELECT $1::text, r.insert_id, r.event_id FROM unnest($2::text[], $3::uuid[]) AS r(insert_id, event_id)`;

const { rows, pool: items } = baselineRows(spec);
const cursor = new RowCursor(rows, items.roundIndex);
const pool = new pg.Pool({ connectionString: a.get('url')!, max: writers });
// The columns and indexes of Inlet's events and insert_ids tables, without
// the day partitions.
await pool.query(`
  CREATE TABLE events (
    seq bigserial NOT NULL, id uuid NOT NULL, project_id text NOT NULL, source_id text NOT NULL,
    event text NOT NULL, distinct_id text, anonymous_id text, person_id text NOT NULL, session_id text,
    "timestamp" bigint NOT NULL, received_at bigint NOT NULL, insert_id text, properties jsonb NOT NULL
  );
  CREATE INDEX events_source_time ON events (source_id, "timestamp", seq);
  CREATE INDEX events_project_time ON events (project_id, "timestamp");
  CREATE TABLE insert_ids (
    source_id text NOT NULL, insert_id text NOT NULL, event_id uuid,
    PRIMARY KEY (source_id, insert_id)
  );
`);

const cpu0 = process.cpuUsage();
const start = performance.now();
const end = start + seconds * 1000;
let written = 0;
let transactions = 0;

async function writer(): Promise<void> {
  const c = await pool.connect();
  try {
    while (performance.now() < end) {
      const now = Date.now();
      const batch = Array.from({ length: perTx }, () => cursor.next());
      const ids = batch.map(() => newEventId(now));
      await c.query('BEGIN');
      await c.query(INSERT_EVENTS, [
        BASELINE_PROJECT, BASELINE_SOURCE, now, ids,
        batch.map((r) => r.event), batch.map((r) => r.distinctId), batch.map((r) => r.personId),
        batch.map((r) => r.timestamp), batch.map((r) => r.insertId), batch.map((r) => r.properties),
      ]);
      await c.query(INSERT_IDS, [BASELINE_SOURCE, batch.map((r) => r.insertId), ids]);
      await c.query('COMMIT');
      written += perTx;
      transactions++;
    }
  } finally {
    c.release();
  }
}

await Promise.all(Array.from({ length: writers }, () => writer()));
printStorageFigures('postgres', { written, transactions, perTx, writers, start, cpu0 });
await pool.end();
