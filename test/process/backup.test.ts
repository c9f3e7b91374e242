import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { cliJson } from '../helpers/cli.js';
import { provision, startServer, stopServer } from '../helpers/process.js';

const tmp = tempDir('inlet-backup-');
afterAll(() => tmp.remove());

it('a backup taken under write load opens, passes integrity_check, and holds every event acknowledged before it began', async () => {
  const dataDir = join(tmp.dir, 'data');
  const env = { INLET_DATA_DIR: dataDir };
  const { key, source } = await provision(env);
  const server = await startServer([], env);
  const acknowledged = new Set<string>();
  let sending = true;
  let batches = 0;
  let started!: () => void;
  const loaded = new Promise<void>((r) => (started = r));
  const send = async (writer: number) => {
    for (let n = 0; sending; n++) {
      const ids = Array.from({ length: 50 }, (_, i) => `w${writer}_${n}_${i}`);
      const res = await fetch(`${server.url}/api/v1/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ items: ids.map((id, i) => ({ event: 'load', distinct_id: `u${i}`, insert_id: id, properties: { pad: 'x'.repeat(200) } })) }),
      });
      if (res.status === 202) for (const id of ids) acknowledged.add(id);
      await res.arrayBuffer();
      if (++batches === 20) started();
    }
  };
  const writers = [send(0), send(1), send(2)];
  try {
    // Under load: some batches are in before the backup starts, and more keep coming during it.
    await loaded;
    const before = new Set(acknowledged);
    const during = batches;
    const to = join(tmp.dir, 'inlet-backup.db');
    const r = await cliJson(['backup', '--to', to], env);
    expect(r).toEqual({ path: to, bytes: expect.any(Number) });
    expect(batches).toBeGreaterThan(during);

    const copy = new Database(to);
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      const stored = new Set((copy.prepare('SELECT insert_id FROM events').pluck().all() as string[]));
      const missing = [...before].filter((id) => !stored.has(id));
      expect(before.size).toBeGreaterThan(0);
      expect(missing).toEqual([]);
      expect(r.bytes).toBeGreaterThan(0);
    } finally {
      copy.close();
    }
    // Restored as the README says (the file becomes a data directory's inlet.db), Inlet reads it.
    const restored = join(tmp.dir, 'restored');
    mkdirSync(restored);
    copyFileSync(to, join(restored, 'inlet.db'));
    const listed = await cliJson(['events', 'list', '--source', source.id, '--limit', '10000'], { INLET_DATA_DIR: restored });
    expect(listed.length).toBeGreaterThanOrEqual(Math.min(before.size, 10_000));
  } finally {
    sending = false;
    await Promise.all(writers);
    await stopServer(server);
  }
}, 120_000);
