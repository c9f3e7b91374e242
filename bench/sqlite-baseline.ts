/**
 * The storage limit of the embedded engine: the rows of the big-batch pool
 * inserted into a fresh database for a fixed time, 500 rows per transaction.
 * The database is opened by Inlet's own code (its migrations, WAL,
 * synchronous=FULL), and each row is written as Inlet writes it: the event,
 * then its insert_id (InsertIdIndex: looked up first, then added). Each
 * transaction opens and commits through SqliteIngestTx, so the indexes do at
 * both ends what they do in the server (the insert_id merge, the minute
 * index), and a change of schema moves the baseline too.
 * Checkpoints are SQLite's own, inside COMMIT.
 */
import { newEventId } from '../src/domain/ids.js';
import { SqliteIngestTx } from '../src/stores/sqlite/ingest-tx.js';
import { InsertIdIndex } from '../src/stores/sqlite/insert-id-index.js';
import { openSqlite } from '../src/stores/sqlite/open.js';
import type { PoolSpec } from './payloads.js';
import { BASELINE_PROJECT, BASELINE_SOURCE, RowCursor, args, baselineRows, printStorageFigures } from './rows.js';

const a = args(process.argv.slice(2));
const spec = JSON.parse(a.get('spec')!) as PoolSpec;
const seconds = Number(a.get('seconds'));
const perTx = Number(a.get('rows-per-tx') ?? 500);

const { rows, pool } = baselineRows(spec);
const db = openSqlite(a.get('dir')!);
const insertEvent = db.prepare(
  `INSERT INTO events (id, project_id, source_id, event, distinct_id, anonymous_id, person_id, session_id,
     timestamp, received_at, insert_id, properties) VALUES (?, ?, ?, ?, ?, NULL, ?, NULL, ?, ?, ?, ?)`,
);
const insertIds = new InsertIdIndex(db);
const tx = new SqliteIngestTx(db, insertIds);

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
  insertIds.find(BASELINE_SOURCE, batch.map((r) => r.insertId));
  const pairs = batch.map((r) => {
    const id = newEventId(now);
    const { lastInsertRowid } = insertEvent.run(
      id, BASELINE_PROJECT, BASELINE_SOURCE, r.event, r.distinctId, r.personId, r.timestamp, now, r.insertId, r.properties,
    );
    return { insertId: r.insertId, eventSeq: Number(lastInsertRowid) };
  });
  insertIds.add(BASELINE_SOURCE, pairs);
  tx.commit();
  written += perTx;
  transactions++;
}
printStorageFigures('sqlite', { written, transactions, perTx, writers: 1, start, cpu0 });
db.close();
