/**
 * The Parquet files of the s3 kind read by the readers warehouses and
 * notebooks use, pyarrow and DuckDB (hyparquet reads them in the
 * conformance tests): each column with its type, every row as written.
 * Skipped, saying why, where python3 has neither (pip install pyarrow duckdb).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { DeliveryEvent } from '../../stores/port-destinations.js';
import { fileMaker } from './files.js';

const READ = `
import json, sys
import pyarrow.parquet as pq
import duckdb
path = sys.argv[1]
table = pq.read_table(path)
types = {f.name: str(f.type) for f in table.schema}
rows = table.to_pylist()
con = duckdb.connect()
duck = con.execute("SELECT id, event, epoch_ms(timestamp), properties, server_session FROM read_parquet(?) ORDER BY id", [path]).fetchall()
duck_types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))", [path]).fetchall())
print(json.dumps({"types": types, "ids": [r["id"] for r in rows], "sessions": [r["session_id"] for r in rows], "duck": [[r[0], r[1], r[2], r[3], r[4]] for r in duck], "duck_types": duck_types}))
`;

const probe = spawnSync('python3', ['-c', 'import pyarrow, duckdb; print(pyarrow.__version__, duckdb.__version__)'], { encoding: 'utf8' });
const versions = probe.status === 0 ? probe.stdout.trim() : null;
const why = versions === null ? `python3 with pyarrow and duckdb is not installed here (pip install pyarrow duckdb): ${(probe.stderr || String(probe.error)).trim().split('\n').at(-1)}` : '';

const dir = mkdtempSync(join(tmpdir(), 'inlet-parquet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const at = Date.UTC(2026, 11, 7, 4, 5, 6, 789);
const event = (n: number, over: Partial<DeliveryEvent> = {}): DeliveryEvent => ({
  seq: n, id: `evt_${n}`, sourceId: 'src_1', event: 'order completed', distinctId: `user_${n}`, anonymousId: null, personId: `per_${n}`,
  sessionId: `ses_${n}`, timestamp: at + n, receivedAt: at + 1000 + n, insertId: `ins-${n}`, properties: JSON.stringify({ total: n / 2, note: 'é "quoted"', list: [n] }),
  ...over,
});

it.skipIf(versions === null)(`pyarrow and DuckDB (${versions ?? `skipped: ${why}`}) read every row and typed column of an s3 Parquet file`, async () => {
  const events = [event(1), event(2, { sessionId: null, anonymousId: 'anon', insertId: null }), event(3, { event: 'ünïcode ✓' })];
  const path = join(dir, 'events.parquet');
  const file = await fileMaker('parquet', 'prj_1');
  for (const e of events) file.add(e, '');
  writeFileSync(path, await file.finish());
  const run = spawnSync('python3', ['-c', READ, path], { encoding: 'utf8', timeout: 60_000 });
  expect(run.status, run.stderr).toBe(0);
  const out = JSON.parse(run.stdout) as { types: Record<string, string>; ids: string[]; sessions: (string | null)[]; duck: unknown[][]; duck_types: Record<string, string> };
  expect(out.types).toMatchObject({ id: 'string', event: 'string', server_session: 'bool', insert_id: 'string' });
  expect(out.types.timestamp).toMatch(/^timestamp\[ms/);
  expect(out.ids).toEqual(['evt_1', 'evt_2', 'evt_3']);
  expect(out.sessions).toEqual(['ses_1', null, 'ses_3']);
  expect(out.duck_types.timestamp).toMatch(/^TIMESTAMP/);
  expect(out.duck).toEqual(events.map((e) => [e.id, e.event, e.timestamp, e.properties, e.sessionId === null]));
});
