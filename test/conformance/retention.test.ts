/**
 * Retention on every engine, with an injected clock: events older than their
 * project's retention go, in short steps; everything else stays, and an
 * expired event's insert_id is free again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { expireAll } from '../../src/domain/retention.js';
import type { Collector } from '../../src/domain/collector.js';
import type { Store, StoredEvent } from '../../src/stores/port.js';
import { TestClock } from '../helpers/fixture.js';
import { type ItemSpec, ingestJob } from '../helpers/items.js';
import { STORES, type StoreUnderTest } from './stores.js';

const DAY = 86_400_000;
/** Today on the real clock: the PostgreSQL store made its day tables around it. */
const TODAY = Date.now();
/** The retention pass runs 500 days later, so today's day tables have expired for every project. */
const NOW = TODAY + 500 * DAY;

for (const engine of STORES) {
  describe(`${engine.name}: retention`, () => {
    let sut: StoreUnderTest;
    let collector: Collector;
    let store: Store;
    let a: { projectId: string; sourceId: string; keyId: string };
    let b: { projectId: string; sourceId: string; keyId: string };
    let result: { deleted: number; dropped: number };

    const ingest = (w: { projectId: string; sourceId: string; keyId: string }, specs: ItemSpec[]) => collector.ingest(ingestJob(specs, w));
    const events = async (sourceId: string): Promise<StoredEvent[]> => store.listEvents(sourceId, 10_000);
    const ids = async (sourceId: string) => (await events(sourceId)).map((e) => e.insertId).sort();

    beforeAll(async () => {
      sut = await engine.make();
      collector = sut.collector;
      store = collector.store;
      const admin = createAdmin(store, new TestClock(TODAY).now);
      const org = await admin.createOrg('Acme');
      const world = async (name: string) => {
        const projectId = (await admin.createProject({ name, orgId: org.id, apiEnabled: true })).id;
        const sourceId = (await admin.createSource({ projectId, name })).id;
        return { projectId, sourceId, keyId: (await admin.createKey(sourceId)).id };
      };
      a = await world('default retention');
      b = await world('30 days');
      await admin.updateProject(b.projectId, { retentionDays: 30 });
      await ingest(a, [
        { event: 'today', distinctId: 'u', timestamp: TODAY, insertId: 'a_today' },
        { event: 'kept', distinctId: 'u', timestamp: NOW - 399 * DAY, insertId: 'a_399' },
        { event: 'edge', distinctId: 'u', timestamp: NOW - 400 * DAY, insertId: 'a_400' },
        { event: 'gone', distinctId: 'u', timestamp: NOW - 400 * DAY - 1, insertId: 'a_400_1' },
      ]);
      // Enough expired events for the embedded store to index most of them by minute.
      for (let j = 0; j < 5; j++) {
        await ingest(b, Array.from({ length: 500 }, (_, i) => ({ event: 'old', distinctId: `u${i % 7}`, timestamp: NOW - 60 * DAY + (j * 500 + i) * 600_000, insertId: `b_old_${j}_${i}` })));
      }
      await ingest(b, Array.from({ length: 10 }, (_, i) => ({ event: 'recent', distinctId: 'u', timestamp: NOW - 29 * DAY + i * DAY, insertId: `b_new_${i}` })));
      // The newest row of all is an expired one.
      await ingest(b, [{ event: 'old', distinctId: 'u', timestamp: NOW - 31 * DAY, insertId: 'b_last' }]);
      expect(await events(b.sourceId)).toHaveLength(2511);
      result = await expireAll(store, NOW, { batch: 300 });
    }, 120_000);
    afterAll(async () => sut?.cleanup());

    it('deletes exactly the events older than their own project’s retention, and keeps the rest', async () => {
      expect(await ids(a.sourceId)).toEqual(['a_399', 'a_400']);
      expect(await ids(b.sourceId)).toEqual(Array.from({ length: 10 }, (_, i) => `b_new_${i}`).sort());
    });

    it('drops whole day tables where the engine keeps them, and deletes the rest row by row', async () => {
      if (engine.name === 'postgres') expect(result.dropped).toBeGreaterThan(0);
      else expect(result.dropped).toBe(0);
      expect(result.deleted).toBeGreaterThanOrEqual(2502);
    });

    it('a second pass finds nothing left', async () => {
      expect(await expireAll(store, NOW)).toEqual({ deleted: 0, dropped: 0 });
    });

    it("an expired event's insert_id is free again; a kept one's is still stored", async () => {
      const again = await ingest(b, [
        { event: 'again', distinctId: 'u', timestamp: NOW, insertId: 'b_last' },
        { event: 'again', distinctId: 'u', timestamp: NOW, insertId: 'b_old_2_17' },
        { event: 'again', distinctId: 'u', timestamp: NOW, insertId: 'b_new_3' },
      ]);
      expect(again.map((o: { status: string; reason?: string }) => o.status)).toEqual(['accepted', 'accepted', 'duplicate']);
      expect((await ingest(a, [{ event: 'again', distinctId: 'u', timestamp: NOW, insertId: 'a_today' }]))[0]!.status).toBe('accepted');
    });

    it('writes after the newest row expired get their own rows, found by insert_id and listed', async () => {
      const [fresh] = await ingest(b, [{ event: 'fresh', distinctId: 'u', timestamp: NOW + 1, insertId: 'b_fresh' }]);
      expect(fresh!.status).toBe('accepted');
      expect((await ingest(b, [{ event: 'fresh', distinctId: 'u', timestamp: NOW + 1, insertId: 'b_fresh' }]))[0]!.status).toBe('duplicate');
      const listed = await events(b.sourceId);
      expect(listed[0]).toMatchObject({ event: 'fresh', insertId: 'b_fresh' });
      expect(listed.every((e) => e.event !== '')).toBe(true);
      expect(await expireAll(store, NOW)).toEqual({ deleted: 0, dropped: 0 });
    });
  });
}
