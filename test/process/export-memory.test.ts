import { spawn } from 'node:child_process';
import { createReadStream, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { newEventId } from '../../src/domain/ids.js';
import type { NewEventRow } from '../../src/stores/port.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/fixture.js';
import { passWrites } from '../helpers/pass-bundles.js';
import { BIN } from '../helpers/process.js';

const EVENTS = 1_000_000;
const CHUNK = 100_000;
/** Events of the small source whose export gives the baseline. */
const SMALL = 10_000;
/**
 * What the big export may take beyond the small one's peak: a page cache
 * filling up and a heap settling, never the events (their output alone is
 * over 200 MB, and the heap is capped at 64 MB).
 */
const ALLOWED_GROWTH_MB = 48;

const tmp = tempDir('inlet-export-');
afterAll(() => tmp.remove());

/** Writes `EVENTS` events straight through the store's transaction, a chunk per commit: no HTTP, no checks. */
async function fill(dir: string): Promise<{ big: string; small: string }> {
  const store = SqliteStore.open(dir);
  try {
    const admin = createAdmin(store, Date.now);
    const org = await admin.createOrg('Acme');
    const project = await admin.createProject({ name: 'big', orgId: org.id });
    const big = await admin.createSource({ projectId: project.id, name: 'firehose' });
    const small = await admin.createSource({ projectId: project.id, name: 'trickle' });
    const start = Date.UTC(2026, 0, 1);
    for (const [source, count] of [[big, EVENTS], [small, SMALL]] as const) {
      for (let from = 0; from < count; from += CHUNK) await writeChunk(store, project.id, source.id, start, from, Math.min(count, from + CHUNK));
    }
    return { big: big.id, small: small.id };
  } finally {
    await store.close();
  }
}

/** Events `from` to `to` (exclusive) of a source, in one commit; timestamps spread over a year, out of order. */
async function writeChunk(store: SqliteStore, projectId: string, sourceId: string, start: number, from: number, to: number): Promise<void> {
  const rows: NewEventRow[] = [];
  for (let i = from; i < to; i++) {
    const timestamp = start + ((i * 7919) % EVENTS) * 30_000;
    rows.push({
      id: newEventId(timestamp), projectId, sourceId, event: 'tick', distinctId: `u${i % 5000}`,
      anonymousId: null, personId: `per_${i % 5000}`, sessionId: null, timestamp, receivedAt: timestamp, insertId: null,
      properties: `{"n":${i},"note":"${'x'.repeat(40)}"}`,
    });
  }
  await store.transaction(async (tx) => tx.write({ projectId, sourceId, now: start }, passWrites({ events: rows })));
}

/** Runs the export in a child process with a small heap, and reports its peak RSS. */
function exportTo(dir: string, sourceId: string, out: string): Promise<{ code: number | null; stderr: string; maxRssKb: number }> {
  const reporter = fileURLToPath(new URL('../helpers/report-max-rss.cjs', import.meta.url));
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--max-old-space-size=64', '--require', reporter, BIN, 'events', 'export', '--source', sourceId, '--out', out], {
      env: { ...process.env, INLET_DATA_DIR: dir },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stderr, maxRssKb: Number(/max_rss_kb=(\d+)/.exec(stderr)?.[1] ?? NaN) }));
  });
}

it('exports 1,000,000 events oldest first in bounded memory, one line per stored event', async () => {
  const dir = join(tmp.dir, 'data');
  const { big: sourceId, small } = await fill(dir);
  const baseline = await exportTo(dir, small, join(tmp.dir, 'small.ndjson'));
  expect(baseline.stderr).toMatch(/exported 10,000 events/);
  const out = join(tmp.dir, 'events.ndjson');
  const r = await exportTo(dir, sourceId, out);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toMatch(/exported 1,000,000 events/);
  const growthMb = (r.maxRssKb - baseline.maxRssKb) / 1024;
  expect(growthMb, `peak RSS ${Math.round(r.maxRssKb / 1024)} MB against ${Math.round(baseline.maxRssKb / 1024)} MB for ${SMALL} events`).toBeLessThan(ALLOWED_GROWTH_MB);

  const db = new Database(join(dir, 'inlet.db'), { readonly: true });
  const stored = (db.prepare('SELECT count(*) AS n FROM events WHERE source_id = ?').get(sourceId) as { n: number }).n;
  db.close();
  let lines = 0;
  let last = -Infinity;
  let ordered = true;
  for await (const line of createInterface({ input: createReadStream(out) })) {
    const t = Date.parse((JSON.parse(line) as { timestamp: string }).timestamp);
    if (t < last) ordered = false;
    last = t;
    lines++;
  }
  expect(stored).toBe(EVENTS);
  expect(lines).toBe(stored);
  expect(ordered).toBe(true);
  expect(statSync(out).size).toBeGreaterThan(EVENTS * 100);
}, 300_000);
