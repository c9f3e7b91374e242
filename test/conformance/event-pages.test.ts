/**
 * Keyset pages over events (export, events list paging and filters): every
 * engine must pass. Enough events are written for the embedded store's minute
 * index to hold most of them, with the rest past its mark.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { exportEvents } from '../../src/domain/event-export.js';
import type { Collector } from '../../src/domain/collector.js';
import type { EventPageQuery, Store, StoredEvent } from '../../src/stores/port.js';
import { TestClock } from '../helpers/fixture.js';
import { RECEIVED_AT, ingestJob } from '../helpers/items.js';
import { STORES, type StoreUnderTest } from './stores.js';

const HOUR = 3600_000;
const N = 3000;

/** A deterministic spread of timestamps over 6 hours, with ties. */
const timestampOf = (i: number): number => RECEIVED_AT - 6 * HOUR + ((i * 7919) % (6 * 3600)) * 1000;

const byTimeThenStored = (a: StoredEvent, b: StoredEvent) => a.timestamp - b.timestamp;

for (const engine of STORES) {
  describe(`${engine.name}: event pages`, () => {
    let sut: StoreUnderTest;
    let collector: Collector;
    let store: Store;
    let projectId: string;
    let sources: string[];
    /** Every event written, per source, in the order written. */
    const written = new Map<string, StoredEvent[]>();

    beforeAll(async () => {
      sut = await engine.make();
      collector = sut.collector;
      store = collector.store;
      const admin = createAdmin(store, new TestClock(RECEIVED_AT).now);
      const org = await admin.createOrg('Acme');
      projectId = (await admin.createProject({ name: 'p', orgId: org.id, apiEnabled: true })).id;
      sources = [(await admin.createSource({ projectId, name: 'a' })).id, (await admin.createSource({ projectId, name: 'b' })).id];
      const keys = new Map<string, string>();
      for (const s of sources) keys.set(s, (await admin.createKey(s)).id);
      for (let start = 0; start < N; start += 500) {
        for (const [s, sourceId] of sources.entries()) {
          const specs = Array.from({ length: 500 }, (_, j) => {
            const i = start + j;
            return { event: i % 3 === 0 ? 'signup' : 'order', distinctId: `u${i % 11}`, timestamp: timestampOf(i) + s, insertId: `i${i}` };
          });
          await collector.ingest(ingestJob(specs, { projectId, sourceId, keyId: keys.get(sourceId)! }));
        }
      }
      for (const s of sources) written.set(s, (await all(s, 'asc', 333)).events);
    }, 120_000);
    afterAll(async () => sut?.cleanup());

    /** Every page of a query, followed to its end. */
    async function all(sourceId: string, order: 'asc' | 'desc', limit: number, q: Partial<EventPageQuery> = {}) {
      const events: StoredEvent[] = [];
      let pages = 0;
      let after: EventPageQuery['after'] = null;
      for (;;) {
        const page = await store.eventPages.eventPage({ sourceId, order, after, limit, ...q });
        events.push(...page.events);
        pages++;
        if (page.next === null) return { events, pages };
        after = page.next;
      }
    }

    it('pages oldest first hold every event once, in timestamp order', async () => {
      const events = written.get(sources[0]!)!;
      expect(events).toHaveLength(3000);
      expect(new Set(events.map((e) => e.id)).size).toBe(3000);
      expect([...events].sort(byTimeThenStored).map((e) => e.timestamp)).toEqual(events.map((e) => e.timestamp));
    });

    it('newest first is the exact reverse, whatever the page size, and agrees with listEvents', async () => {
      const asc = written.get(sources[0]!)!;
      for (const limit of [1000, 7]) {
        const desc = (await all(sources[0]!, 'desc', limit)).events;
        expect(desc.map((e) => e.id)).toEqual([...asc].reverse().map((e) => e.id));
      }
      expect((await store.listEvents(sources[0]!, 50)).map((e) => e.id)).toEqual([...asc].reverse().slice(0, 50).map((e) => e.id));
    });

    it('since (inclusive) and until (exclusive) bound the timestamps', async () => {
      const asc = written.get(sources[1]!)!;
      const since = asc[400]!.timestamp;
      const until = asc[2000]!.timestamp;
      const expected = asc.filter((e) => e.timestamp >= since && e.timestamp < until).map((e) => e.id);
      expect((await all(sources[1]!, 'asc', 250, { since, until })).events.map((e) => e.id)).toEqual(expected);
      expect((await all(sources[1]!, 'desc', 250, { since, until })).events.map((e) => e.id)).toEqual([...expected].reverse());
    });

    it('filters by event name and distinct_id, and pages backwards from an event id', async () => {
      const desc = [...written.get(sources[0]!)!].reverse();
      const wanted = desc.filter((e) => e.event === 'signup' && e.distinctId === 'u3');
      expect(wanted.length).toBeGreaterThan(20);
      const first = await store.eventPages.eventPage({ sourceId: sources[0]!, order: 'desc', after: null, event: 'signup', distinctId: 'u3', limit: 10 });
      expect(first.events.map((e) => e.id)).toEqual(wanted.slice(0, 10).map((e) => e.id));
      const cursor = await store.eventPages.eventCursor(sources[0]!, first.events[9]!.id);
      expect(cursor).not.toBeNull();
      expect(await store.eventPages.eventCursor(sources[0]!, first.events[9]!.id.toUpperCase())).toEqual(cursor);
      const second = await store.eventPages.eventPage({ sourceId: sources[0]!, order: 'desc', after: cursor, event: 'signup', distinctId: 'u3', limit: 10 });
      expect(second.events.map((e) => e.id)).toEqual(wanted.slice(10, 20).map((e) => e.id));
      expect(await store.eventPages.eventCursor(sources[1]!, first.events[0]!.id)).toBeNull();
      expect(await store.eventPages.eventCursor(sources[0]!, 'not-an-id')).toBeNull();
    });

    it('an export of the project merges its sources oldest first, every event once', async () => {
      expect(await store.eventPages.sourceIdsOf(projectId)).toEqual([...sources].sort());
      const seen: StoredEvent[] = [];
      for await (const e of exportEvents(store.eventPages, await store.eventPages.sourceIdsOf(projectId), {}, 100)) seen.push(e);
      expect(seen).toHaveLength(6000);
      expect(new Set(seen.map((e) => e.id)).size).toBe(6000);
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.timestamp).toBeGreaterThanOrEqual(seen[i - 1]!.timestamp);
    });

    it('a page of a source without events is empty and final', async () => {
      expect(await store.eventPages.eventPage({ sourceId: 'src_none', order: 'asc', after: null, limit: 10 })).toEqual({ events: [], next: null });
    });
  });
}
