/**
 * The ingest engine tells its IngestObserver of every group commit on both
 * engines (the commit metrics rest on it), and ping() answers while the store does.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { Collector } from '../../src/domain/collector.js';
import type { IngestObserver } from '../../src/domain/ingest/engine.js';
import { PostgresStore } from '../../src/stores/postgres/postgres-store.js';
import type { Store } from '../../src/stores/port.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { createTestDatabase } from '../conformance/stores.js';
import { TestClock, tempDir } from '../helpers/fixture.js';
import { ingestJob } from '../helpers/items.js';
import { describeWith } from '../helpers/needs-services.js';
import type { Service } from '../helpers/services.js';

class Recorder implements IngestObserver {
  commits: { seconds: number; jobs: number; items: number }[] = [];
  failures = 0;
  committed(seconds: number, jobs: number, items: number): void {
    this.commits.push({ seconds, jobs, items });
  }
  failed(): void {
    this.failures++;
  }
}

/** The commit timer's milliseconds; every transaction takes TRANSACTION_MS of them. */
const timer = { ms: 0 };
const TRANSACTION_MS = 25;

/** `store` as is, except that each transaction takes TRANSACTION_MS on `timer`. */
function timed(store: Store): Store {
  return new Proxy(store, {
    get: (t, p) => {
      if (p === 'transaction') return (...a: Parameters<Store['transaction']>) => ((timer.ms += TRANSACTION_MS), t.transaction(...a));
      const v = Reflect.get(t, p, t) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}

const options = (observer: IngestObserver) => ({ observer, timer: () => timer.ms });

const engines: { name: string; needs?: Service[]; open: (o: IngestObserver) => Promise<{ collector: Collector; done: () => Promise<void> }> }[] = [
  {
    name: 'sqlite',
    open: async (o) => {
      const tmp = tempDir('inlet-observer-');
      const collector = new Collector(timed(SqliteStore.open(tmp.dir)), options(o));
      return { collector, done: async () => tmp.remove() };
    },
  },
  {
    name: 'postgres',
    needs: ['postgres'],
    open: async (o) => {
      const db = await createTestDatabase();
      return { collector: new Collector(timed(await PostgresStore.connect(db.url)), options(o)), done: db.drop };
    },
  },
];

for (const engine of engines) {
  describeWith(engine.needs ?? [], engine.name, () => {
    const recorder = new Recorder();
    let opened: { collector: Collector; done: () => Promise<void> } | undefined;
    afterAll(async () => {
      await opened?.collector.close();
      await opened?.done();
    });

    it('tells the observer of each commit: its duration, requests and items; ping answers', async () => {
      opened = await engine.open(recorder);
      const { collector } = opened;
      await collector.ping();
      const clock = new TestClock();
      const admin = createAdmin(collector.store, clock.now);
      const org = await admin.createOrg('Acme');
      const project = await admin.createProject({ name: 'Web', orgId: org.id, apiEnabled: true });
      const source = await admin.createSource({ projectId: project.id, name: 'Billing' });
      const key = await admin.createKey(source.id);
      const job = (n: number, tag: string) =>
        ingestJob(
          Array.from({ length: n }, (_, i) => ({ event: 'e', distinctId: `u${i}`, insertId: `${tag}-${i}`, timestamp: clock.now() - 1000, enrichment: { $source_id: source.id } })),
          { projectId: project.id, sourceId: source.id, keyId: key.id, receivedAt: clock.now() },
        );
      // Sent together: they may share a commit or not, but every job and item is counted once.
      await Promise.all([collector.ingest(job(3, 'a')), collector.ingest(job(2, 'b')), collector.ingest(job(1, 'c'))]);
      const jobs = recorder.commits.reduce((n, c) => n + c.jobs, 0);
      const items = recorder.commits.reduce((n, c) => n + c.items, 0);
      expect({ jobs, items, failures: recorder.failures }).toEqual({ jobs: 3, items: 6, failures: 0 });
      // A commit lasts from just before its transaction to just after it.
      expect(recorder.commits.map((c) => c.seconds)).toEqual(recorder.commits.map(() => TRANSACTION_MS / 1000));
    });
  });
}
