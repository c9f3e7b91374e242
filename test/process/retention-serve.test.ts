import { afterAll, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { Collector } from '../../src/domain/collector.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/fixture.js';
import { ingestJob } from '../helpers/items.js';
import { provision, startServer, stopServer } from '../helpers/process.js';

const DAY = 86_400_000;
const tmp = tempDir('inlet-retention-');
afterAll(() => tmp.remove());

it('inlet serve deletes expired events by itself, with a pass as it starts', async () => {
  const env = { INLET_DATA_DIR: tmp.dir };
  const { project, source, key } = await provision(env);
  const now = Date.now();
  let collector = new Collector(SqliteStore.open(tmp.dir));
  await createAdmin(collector.store, Date.now).updateProject(project.id, { retentionDays: 5 });
  await collector.ingest(
    ingestJob(
      [6, 6, 30, 1, 0].map((days, i) => ({ event: days > 5 ? 'old' : 'recent', distinctId: 'u', timestamp: now - days * DAY, insertId: `e${i}` })),
      { projectId: project.id, sourceId: source.id, keyId: key.id, receivedAt: now },
    ),
  );
  await collector.close();

  const server = await startServer([], { ...env, INLET_LOG_LEVEL: 'info' });
  try {
    const logged = await new Promise<string>((resolve) => {
      let seen = server.stderr();
      const look = (): void => {
        const line = seen.split('\n').find((l) => l.includes('retention: expired events deleted'));
        if (line !== undefined) resolve(line);
      };
      server.proc.stderr!.on('data', (d) => {
        seen += d;
        look();
      });
      look();
    });
    expect(JSON.parse(logged)).toMatchObject({ deleted: 3, dropped: 0 });
  } finally {
    await stopServer(server);
  }
  collector = new Collector(SqliteStore.open(tmp.dir));
  try {
    expect((await collector.store.listEvents(source.id, 100)).map((e) => e.event)).toEqual(['recent', 'recent']);
  } finally {
    await collector.close();
  }
});
