/**
 * The storage limit of SQLite on this machine, independent of Inlet's code:
 * the rows of the big-batch pool inserted into a fresh file for a fixed
 * time, 500 rows per transaction, by one connection with one prepared
 * INSERT per row. The durability is Inlet's (WAL, synchronous=FULL); the
 * schema is the least a store that keeps each insert_id once needs: one
 * events table with one unique key on (source_id, insert_id). Checkpoints
 * are SQLite's own, inside COMMIT.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { PoolSpec } from './payloads.js';
import { BASELINE_PROJECT, BASELINE_SOURCE, RowCursor, args, baselineRows, printStorageFigures } from './rows.js';

const a = args(process.argv.slice(2));
const spec = JSON.parse(a.get('spec')!) as PoolSpec;
const seconds = Number(a.get('seconds'));
const perTx = Number(a.get('rows-per-tx') ?? 500);

const { rows, pool } = baselineRows(spec);
const db = new Database(join(a.get('dir')!, 'baseline.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.exec(`CREATE TABLE events (
  id TEXT NOT NULL, project_id TEXT NOT NULL, source_id TEXT NOT NULL, event TEXT NOT NULL,
  distinct_id TEXT, person_id TEXT NOT NULL, timestamp INTEGER NOT NULL, received_at INTEGER NOT NULL,
  insert_id TEXT NOT NULL, properties TEXT NOT NULL,
  UNIQUE (source_id, insert_id)
)`);
// A repeat of a stored insert_id stores nothing, as in Inlet (the pool's rows hold no repeats).
const insert = db.prepare(
  `INSERT INTO events (id, project_id, source_id, event, distinct_id, person_id, timestamp, received_at, insert_id, properties)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_id, insert_id) DO NOTHING`,
);
const begin = db.prepare('BEGIN');
const commit = db.prepare('COMMIT');

const cursor = new RowCursor(rows, pool.roundIndex);
const cpu0 = process.cpuUsage();
const start = performance.now();
const end = start + seconds * 1000;
let written = 0;
let transactions = 0;
while (performance.now() < end) {
  const now = Date.now();
  begin.run();
  for (let i = 0; i < perTx; i++) {
    const r = cursor.next();
    insert.run(randomUUID(), BASELINE_PROJECT, BASELINE_SOURCE, r.event, r.distinctId, r.personId, r.timestamp, now, r.insertId, r.properties);
  }
  commit.run();
  written += perTx;
  transactions++;
}
const synchronous = ['OFF', 'NORMAL', 'FULL', 'EXTRA'][Number(db.pragma('synchronous', { simple: true }))] ?? '?';
const durability = { journal_mode: String(db.pragma('journal_mode', { simple: true })), synchronous };
printStorageFigures('sqlite', { written, transactions, perTx, writers: 1, start, cpu0, dbCpuSec: null, durability });
db.close();
