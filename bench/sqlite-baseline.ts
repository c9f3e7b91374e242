/**
 * The storage limit of the embedded engine: the rows of the big-batch pool
 * inserted into a fresh SQLite file with Inlet's durability settings (WAL,
 * synchronous=FULL), 500 rows per transaction, for a fixed time.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { PoolSpec } from './payloads.js';
import { BASELINE_PROJECT, BASELINE_SOURCE, RowCursor, type StorageFigures, args, baselineRows, eventId } from './rows.js';

const a = args(process.argv.slice(2));
const spec = JSON.parse(a.get('spec')!) as PoolSpec;
const seconds = Number(a.get('seconds'));
const perTx = Number(a.get('rows-per-tx') ?? 500);

const { rows, pool } = baselineRows(spec);
const db = new Database(join(a.get('dir')!, 'baseline.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
// The tables and index Inlet's migration makes for events and their insert_ids.
db.exec(`
  CREATE TABLE events (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL, project_id TEXT NOT NULL, source_id TEXT NOT NULL,
    event TEXT NOT NULL, distinct_id TEXT, anonymous_id TEXT, person_id TEXT NOT NULL, session_id TEXT,
    timestamp INTEGER NOT NULL, received_at INTEGER NOT NULL, insert_id TEXT, properties TEXT NOT NULL
  );
  CREATE INDEX events_source_time ON events (source_id, timestamp, seq);
  CREATE TABLE insert_ids (
    source_id TEXT NOT NULL, insert_id TEXT NOT NULL, event_id TEXT,
    PRIMARY KEY (source_id, insert_id)
  ) WITHOUT ROWID;
`);
const insertEvent = db.prepare(
  `INSERT INTO events (id, project_id, source_id, event, distinct_id, anonymous_id, person_id, session_id,
     timestamp, received_at, insert_id, properties) VALUES (?, ?, ?, ?, ?, NULL, ?, NULL, ?, ?, ?, ?)`,
);
const insertId = db.prepare('INSERT INTO insert_ids (source_id, insert_id, event_id) VALUES (?, ?, ?)');

const cursor = new RowCursor(rows, pool.roundIndex);
const cpu0 = process.cpuUsage();
const start = performance.now();
const end = start + seconds * 1000;
let written = 0;
let transactions = 0;
while (performance.now() < end) {
  const now = Date.now();
  db.exec('BEGIN IMMEDIATE');
  for (let i = 0; i < perTx; i++) {
    const r = cursor.next();
    const id = eventId(now);
    insertEvent.run(id, BASELINE_PROJECT, BASELINE_SOURCE, r.event, r.distinctId, r.personId, r.timestamp, now, r.insertId, r.properties);
    insertId.run(BASELINE_SOURCE, r.insertId, id);
  }
  db.exec('COMMIT');
  written += perTx;
  transactions++;
}
const elapsed = (performance.now() - start) / 1000;
const cpu = process.cpuUsage(cpu0);
db.close();
const figures: StorageFigures = {
  engine: 'sqlite',
  rows: written,
  seconds: elapsed,
  rowsPerSec: written / elapsed,
  transactions,
  rowsPerTransaction: perTx,
  cpuSec: (cpu.user + cpu.system) / 1e6,
  peakRssMiB: process.resourceUsage().maxRSS / 1024,
  writers: 1,
};
process.stdout.write(`${JSON.stringify(figures)}\n`);
