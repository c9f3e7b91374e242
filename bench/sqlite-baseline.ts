/**
 * The storage limit of the embedded engine: the rows of the big-batch pool
 * inserted into a fresh database for a fixed time, 500 rows per transaction.
 * The database is opened by Inlet's own code (its migrations, WAL,
 * synchronous=FULL), and each row is written as Inlet writes it: the event,
 * then its insert_id (looked up first, then added). Each
 * transaction opens and commits through SqliteIngestTx, so the indexes do at
 * both ends what they do in the server (the insert_id merge, the minute
 * index), and a change of schema moves the baseline too.
 * Checkpoints are SQLite's own, inside COMMIT.
 */
import { newEventId } from '../src/domain/ids.js';
import { SqliteIngestTx } from '../src/stores/sqlite/ingest-tx.js';
import { openSqlite } from '../src/stores/sqlite/open.js';
import type { PoolSpec } from './payloads.js';
import { BASELINE_PROJECT, BASELINE_SOURCE, RowCursor, args, baselineRows, printStorageFigures } from './rows.js';

const a = args(process.argv.slice(2));
const spec = JSON.parse(a.get('spec')!) as PoolSpec;
const seconds = Number(a.get('seconds'));
const perTx = Number(a.get('rows-per-tx') ?? 500);

const { rows, pool } = baselineRows(spec);
const db = openSqlite(a.get('dir')!);
const tx = new SqliteIngestTx(db);

const cursor = new RowCursor(rows, pool.roundIndex);
const cpu0 = process.cpuUsage();
const start = performance.now();
const end = start + seconds * 1000;
let written = 0;
let transactions = 0;
while (performance.now() < end) {
  const now = Date.now();
  const batch = Array.from({ length: perTx }, () => cursor.next());
  tx.begin();
  // Inlet looks every insert_id up before it writes; none is found here.
  tx.findInsertIds(BASELINE_SOURCE, batch.map((r) => r.insertId));
  const events = batch.map((r) => ({
    id: newEventId(now), projectId: BASELINE_PROJECT, sourceId: BASELINE_SOURCE, event: r.event, distinctId: r.distinctId,
    anonymousId: null, personId: r.personId, sessionId: null, timestamp: r.timestamp, receivedAt: now, insertId: r.insertId, properties: r.properties,
  }));
  tx.insertEvents(events);
  tx.addInsertIds(BASELINE_SOURCE, events.map((e) => ({ insertId: e.insertId, eventId: e.id })));
  tx.commit();
  written += perTx;
  transactions++;
}
printStorageFigures('sqlite', { written, transactions, perTx, writers: 1, start, cpu0 });
db.close();
