import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { Collector } from '../../src/domain/collector.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/fixture.js';
import { RECEIVED_AT, ingestJob } from '../helpers/items.js';
import { cliJson, runCli } from '../helpers/cli.js';
import { BIN } from '../helpers/process.js';

const tmp = tempDir('inlet-cli-events-');
const env = { INLET_DATA_DIR: tmp.dir };
let projectId: string;
let a: string;
let b: string;
const T0 = RECEIVED_AT - 3600_000;
const run = promisify(execFile);

beforeAll(async () => {
  const collector = new Collector(SqliteStore.open(tmp.dir));
  const admin = createAdmin(collector.store, () => RECEIVED_AT);
  const org = await admin.createOrg('Acme');
  projectId = (await admin.createProject({ name: 'p', orgId: org.id, apiEnabled: true })).id;
  a = (await admin.createSource({ projectId, name: 'a' })).id;
  b = (await admin.createSource({ projectId, name: 'b' })).id;
  const specs = (offset: number) =>
    Array.from({ length: 30 }, (_, i) => ({ event: i % 2 === 0 ? 'even' : 'odd', distinctId: `u${i % 3}`, timestamp: T0 + i * 60_000 + offset, insertId: `i${i}` }));
  await collector.ingest(ingestJob(specs(0), { projectId, sourceId: a, keyId: (await admin.createKey(a)).id }));
  await collector.ingest(ingestJob(specs(1), { projectId, sourceId: b, keyId: (await admin.createKey(b)).id }));
  await collector.close();
});
afterAll(() => tmp.remove());

const lines = (text: string) => text.trim().split('\n').map((l) => JSON.parse(l));

describe('inlet events export', () => {
  it('prints NDJSON oldest first in the events list shape, for a source or a whole project', async () => {
    const r = await runCli(['events', 'export', '--source', a], env);
    expect(r.code, r.stderr).toBe(0);
    // stderr is not a terminal here: no progress drawn on it.
    expect(r.stderr).toBe('');
    const events = lines(r.stdout);
    expect(events).toHaveLength(30);
    expect(Object.keys(events[0])).toEqual(['id', 'event', 'distinct_id', 'anonymous_id', 'person_id', 'session_id', 'server_session', 'timestamp', 'received_at', 'insert_id', 'properties']);
    expect(events.map((e) => e.insert_id)).toEqual(Array.from({ length: 30 }, (_, i) => `i${i}`));
    const listed = await cliJson(['events', 'list', '--source', a, '--limit', '1'], env);
    expect(listed[0]).toEqual(events[29]);

    const project = lines((await runCli(['events', 'export', '--project', projectId], env)).stdout);
    expect(project).toHaveLength(60);
    expect(project.slice(0, 2).map((e) => e.timestamp)).toEqual([new Date(T0).toISOString(), new Date(T0 + 1).toISOString()]);
  });

  it('--since and --until bound the timestamps (ISO 8601 or epoch ms); --out writes a file', async () => {
    const out = join(tmp.dir, 'part.ndjson');
    const r = await runCli(['events', 'export', '--source', a, '--since', new Date(T0 + 10 * 60_000).toISOString(), '--until', String(T0 + 20 * 60_000), '--out', out], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/exported 10 events/);
    expect(lines(readFileSync(out, 'utf8')).map((e) => e.insert_id)).toEqual(Array.from({ length: 10 }, (_, i) => `i${i + 10}`));
  });

  it('refuses a missing or doubled selector and an unreadable time, with a sentence and exit 1', async () => {
    for (const args of [[], ['--source', a, '--project', projectId]]) {
      const r = await runCli(['events', 'export', ...args], env);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/exactly one of --source and --project/);
    }
    const r = await runCli(['events', 'export', '--source', a, '--since', 'yesterday'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--since takes ISO 8601/);
    expect((await runCli(['events', 'export', '--source', 'src_nope'], env)).code).toBe(1);
  });
});

describe('inlet events export into a pipe that closes', () => {
  const big = tempDir('inlet-cli-export-pipe-');
  const bigEnv = { INLET_DATA_DIR: big.dir };
  let source: string;
  beforeAll(async () => {
    const collector = new Collector(SqliteStore.open(big.dir));
    const admin = createAdmin(collector.store, () => RECEIVED_AT);
    const org = await admin.createOrg('Acme');
    const project = (await admin.createProject({ name: 'p', orgId: org.id, apiEnabled: true })).id;
    source = (await admin.createSource({ projectId: project, name: 's' })).id;
    const keyId = (await admin.createKey(source)).id;
    // Far more than a pipe holds, so the export is still writing when the reader goes.
    for (let job = 0; job < 8; job++) {
      const specs = Array.from({ length: 500 }, (_, i) => ({ event: 'e', distinctId: `u${i}`, timestamp: T0 + job * 500 + i, insertId: `p${job}_${i}`, properties: { note: 'x'.repeat(200) } }));
      await collector.ingest(ingestJob(specs, { projectId: project, sourceId: source, keyId }));
    }
    await collector.close();
  });
  afterAll(() => big.remove());

  it('events export | head -2 ends quietly with exit 0, not "unexpected failure: write EPIPE" and exit 2', async () => {
    // A real shell pipe, as a person types it; the shell reports inlet's own exit status.
    const line = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} events export --source ${source} | head -2; echo "inlet exit \${PIPESTATUS[0]}" >&2`;
    const r = await run('bash', ['-c', line], { env: { ...process.env, ...bigEnv } });
    expect(lines(r.stdout)).toHaveLength(2);
    expect(r.stderr).toBe('inlet exit 0\n');
  });
});

describe('inlet events list: paging and filters', () => {
  it('--event and --distinct-id filter, --before pages backwards from an event id', async () => {
    const first = await cliJson(['events', 'list', '--source', a, '--event', 'even', '--distinct-id', 'u0', '--limit', '2'], env);
    expect(first.map((e: { insert_id: string }) => e.insert_id)).toEqual(['i24', 'i18']);
    const next = await cliJson(['events', 'list', '--source', a, '--event', 'even', '--distinct-id', 'u0', '--limit', '2', '--before', first[1].id], env);
    expect(next.map((e: { insert_id: string }) => e.insert_id)).toEqual(['i12', 'i6']);
    const all = await cliJson(['events', 'list', '--source', a, '--before', first[1].id], env);
    expect(all.map((e: { insert_id: string }) => e.insert_id)).toEqual(Array.from({ length: 18 }, (_, i) => `i${17 - i}`));
  });

  it('the table shows each event id first, and --before takes it in either case', async () => {
    const r = await runCli(['events', 'list', '--source', a, '--limit', '2'], env);
    expect(r.code).toBe(0);
    const [head, ...rows] = r.stdout.trim().split('\n');
    expect(head).toMatch(/^ID +TIMESTAMP +EVENT +DISTINCT ID/);
    const newest = await cliJson(['events', 'list', '--source', a, '--limit', '3'], env);
    expect(rows.map((row) => row.split(/ +/)[0])).toEqual([newest[0].id, newest[1].id]);
    const next = await cliJson(['events', 'list', '--source', a, '--limit', '1', '--before', newest[1].id.toUpperCase()], env);
    expect(next.map((e: { id: string }) => e.id)).toEqual([newest[2].id]);
  });

  it('--before an id the source does not hold is refused', async () => {
    const r = await runCli(['events', 'list', '--source', b, '--before', '0193a1f0-0000-7000-8000-000000000000'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/No event .* in source/);
  });
});
