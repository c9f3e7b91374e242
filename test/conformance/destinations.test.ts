/**
 * Destinations on every engine (the contract in src/stores/port-destinations.ts):
 * positions of a project become readable in order, even with two servers
 * writing at once; reads past a cursor; leases; cursors fenced by the lease
 * and by replays; lag counts with filters; erased events are not read; a
 * deleted project's destinations stop on every server and leave storage.
 */
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import type { Collector } from '../../src/domain/collector.js';
import { LocalCourier } from '../../src/domain/delivery/courier.js';
import { DeliveryService } from '../../src/domain/delivery/delivery-service.js';
import { destinationAdmin } from '../../src/domain/delivery/destination-admin.js';
import { erasePerson } from '../../src/domain/erasure.js';
import { DESTINATION_KINDS } from '../../src/destinations/registry.js';
import type { Store } from '../../src/stores/port.js';
import type { DeliveryEvent, DeliverySender, DestinationRecord, OutgoingBatch, SendOutcome } from '../../src/stores/port-destinations.js';
import { TestClock } from '../helpers/fixture.js';
import { type ItemSpec, RECEIVED_AT, ingestJob } from '../helpers/items.js';
import { describeWith } from '../helpers/needs-services.js';
import { STORES, type StoreUnderTest } from './stores.js';

const record = (id: string, projectId: string, o: Partial<DestinationRecord> = {}): DestinationRecord => ({
  id, projectId, kind: 'webhook', config: { url: 'https://user:pw@example.com/hook', secret: 'whsec_x' }, sources: [], events: [],
  paused: false, cursor: 0, generation: 0, delivered: 0, lastError: null, lastDeliveredAt: null, createdAt: RECEIVED_AT, pausedReason: null, file: null, ...o,
});

/** A receiver that holds the first batch until told to answer it, and takes every later one at once. */
class FirstHeld implements DeliverySender {
  sent: OutgoingBatch[] = [];
  /** Resolve once the first batch, and a second, are on their way. */
  readonly firstSent: Promise<void>;
  readonly secondSent: Promise<void>;
  private release: (() => void) | null = null;
  private readonly arrived: (() => void)[] = [];
  constructor() {
    this.firstSent = new Promise((resolve) => this.arrived.push(resolve));
    this.secondSent = new Promise((resolve) => this.arrived.push(resolve));
  }
  async send(b: OutgoingBatch): Promise<SendOutcome> {
    this.sent.push(b);
    this.arrived[this.sent.length - 1]?.();
    if (this.sent.length === 1) await new Promise<void>((resolve) => (this.release = resolve));
    return { ok: true };
  }
  answerFirst(): void {
    this.release!();
  }
  async close() {}
}

for (const engine of STORES) {
  describeWith(engine.needs ?? [], `${engine.name}: destinations`, () => {
    let sut: StoreUnderTest;
    let collector: Collector;
    let store: Store;
    let admin: ReturnType<typeof createAdmin>;
    let orgId: string;

    beforeAll(async () => {
      sut = await engine.make();
      collector = sut.collector;
      store = collector.store;
      admin = createAdmin(store, new TestClock(RECEIVED_AT).now);
      orgId = (await admin.createOrg('Acme')).id;
    });
    afterAll(async () => sut?.cleanup());

    async function world() {
      const projectId = (await admin.createProject({ name: 'p', orgId, apiEnabled: true })).id;
      const a = (await admin.createSource({ projectId, name: 'a' })).id;
      const b = (await admin.createSource({ projectId, name: 'b' })).id;
      const keys = new Map([[a, (await admin.createKey(a)).id], [b, (await admin.createKey(b)).id]]);
      const ingest = (sourceId: string, specs: ItemSpec[], on: Collector = collector, receivedAt = RECEIVED_AT) =>
        on.ingest(ingestJob(specs, { projectId, sourceId, keyId: keys.get(sourceId)!, receivedAt }));
      return { projectId, a, b, ingest };
    }

    /** Every event of the project past `after`, read as delivery reads them, a page at a time. */
    async function readAll(projectId: string, after = 0): Promise<DeliveryEvent[]> {
      const out: DeliveryEvent[] = [];
      const head = await store.destinations.head(projectId);
      for (let at = after; at < head; ) {
        const r = await store.destinations.read(projectId, at, head, 7);
        out.push(...r.events);
        expect(r.through).toBeGreaterThan(at);
        at = r.through;
      }
      return out;
    }

    it('reads the project\'s events past a cursor in position order, and only its own', async () => {
      const w = await world();
      const other = await world();
      const start = await store.destinations.head(w.projectId);
      await w.ingest(w.a, [{ event: 'one', distinctId: 'u1' }, { event: 'two', distinctId: 'u1' }]);
      await other.ingest(other.a, [{ event: 'elsewhere', distinctId: 'u9' }]);
      await w.ingest(w.b, [{ event: 'three', distinctId: 'u2', properties: { plan: 'pro' } }]);
      const events = await readAll(w.projectId, start);
      expect(events.map((e) => [e.event, e.sourceId])).toEqual([['one', w.a], ['two', w.a], ['three', w.b]]);
      expect(JSON.parse(events[2]!.properties)).toMatchObject({ plan: 'pro' });
      expect(events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq)].sort((x, y) => x - y));
      // A read that finds fewer than its limit reaches as far as it was asked.
      const tail = await store.destinations.read(w.projectId, events[2]!.seq, events[2]!.seq + 1000, 10);
      expect(tail).toEqual({ events: [], through: events[2]!.seq + 1000 });
    });

    it('reads every field as the events list shows it, the person being the one an event belongs to now (after a merge)', async () => {
      const w = await world();
      const start = await store.destinations.head(w.projectId);
      // Two people, one per id, then an identify that merges the anonymous one into the known one.
      await w.ingest(w.a, [
        { event: 'known', distinctId: 'u5', insertId: 'ins-1', sessionId: 'ses_1', properties: { q: 'say "hi" \\ ü' } },
        { event: 'anon', distinctId: 'a9', anonymousId: 'a9', timestamp: RECEIVED_AT - 61_001 },
      ]);
      await w.ingest(w.a, [{ type: 'identify', event: null, distinctId: 'u5', anonymousId: 'a9' }]);
      const read = await readAll(w.projectId, start);
      // The list orders by time; delivery by arrival.
      const listed = (await store.eventPages.eventPage({ sourceId: w.a, order: 'asc', after: null, limit: 10 })).events.reverse();
      expect(read).toHaveLength(2);
      expect(new Set(read.map((e) => e.personId)).size).toBe(1);
      expect(read.map(({ seq: _seq, sourceId, properties, ...e }) => ({ ...e, sourceId, properties: JSON.parse(properties) as unknown }))).toEqual(
        listed.map((e) => ({ ...e, sourceId: w.a })),
      );
    });

    it('with two servers writing one project at once, every position is readable in order: a reader following the head misses none', async () => {
      const w = await world();
      const second = await sut.another();
      const start = await store.destinations.head(w.projectId);
      const seen: DeliveryEvent[] = [];
      let cursor = start;
      let writing = true;
      const follow = (async () => {
        for (;;) {
          const last = !writing;
          const head = await store.destinations.head(w.projectId);
          while (cursor < head) {
            const r = await store.destinations.read(w.projectId, cursor, head, 50);
            seen.push(...r.events);
            cursor = r.through;
          }
          if (last) return;
          // The embedded store answers at once: let the writers have the event loop between rounds.
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < 40; i++) {
        const on = i % 2 === 0 ? collector : second;
        writes.push(w.ingest(i % 3 === 0 ? w.a : w.b, Array.from({ length: 5 }, (_, k) => ({ event: `e${i}_${k}`, distinctId: `u${i}` })), on));
      }
      await Promise.all(writes);
      writing = false;
      await follow;
      const all = await readAll(w.projectId, start);
      expect(all).toHaveLength(200);
      expect(seen.map((e) => e.id)).toEqual(all.map((e) => e.id));
    });

    it('counts and dates what is past a cursor, with the destination\'s sources and names', async () => {
      const w = await world();
      const start = await store.destinations.head(w.projectId);
      await w.ingest(w.a, [{ event: 'paid', distinctId: 'u' }, { event: 'viewed', distinctId: 'u' }], collector, RECEIVED_AT + 1000);
      await w.ingest(w.b, [{ event: 'paid', distinctId: 'u' }], collector, RECEIVED_AT + 2000);
      const head = await store.destinations.head(w.projectId);
      const d = { projectId: w.projectId, sources: [] as string[], events: [] as string[] };
      expect(await store.destinations.countPast(d, start, head, 100)).toBe(3);
      expect(await store.destinations.countPast(d, start, head, 2)).toBe(2);
      expect(await store.destinations.countPast({ ...d, events: ['paid'] }, start, head, 100)).toBe(2);
      expect(await store.destinations.countPast({ ...d, sources: [w.b] }, start, head, 100)).toBe(1);
      expect(await store.destinations.oldestPast({ ...d, sources: [w.b] }, start, head)).toBe(RECEIVED_AT + 2000);
      expect(await store.destinations.oldestPast(d, head, head)).toBeNull();
      // The position before the first event that arrived at a time: the later batch alone lies past it.
      const before = await store.destinations.positionBefore(w.projectId, RECEIVED_AT + 1500);
      expect((await readAll(w.projectId, before)).map((e) => e.sourceId)).toEqual([w.b]);
    });

    it('does not read an erased event', async () => {
      const w = await world();
      const start = await store.destinations.head(w.projectId);
      await w.ingest(w.a, [{ event: 'kept', distinctId: 'carol' }, { event: 'gone', distinctId: 'bob' }, { event: 'kept', distinctId: 'carol' }]);
      await erasePerson(store, w.projectId, { distinctId: 'bob' }, { suppress: false, now: RECEIVED_AT });
      expect((await readAll(w.projectId, start)).map((e) => e.distinctId)).toEqual(['carol', 'carol']);
    });

    it('keeps destinations; one holder at a time; a cursor moves only for its holder and generation', async () => {
      const w = await world();
      const ds = store.destinations;
      await ds.create(record('dst_lease', w.projectId, { sources: [w.a], events: ['paid'], cursor: 5 }));
      expect(await ds.get('dst_lease')).toEqual(record('dst_lease', w.projectId, { sources: [w.a], events: ['paid'], cursor: 5 }));
      expect((await ds.list(w.projectId)).map((d) => d.id)).toEqual(['dst_lease']);
      expect((await ds.all()).map((d) => d.id)).toContain('dst_lease');

      expect(await ds.takeLease('dst_lease', 'A', 60_000)).toBe(true);
      expect(await ds.takeLease('dst_lease', 'B', 60_000)).toBe(false);
      expect(await ds.takeLease('dst_lease', 'A', 60_000)).toBe(true);
      expect(await ds.advance('dst_lease', 'B', 0, 9, 1, RECEIVED_AT)).toBe(false);
      expect(await ds.failed('dst_lease', 'A', 'The receiver answered 500.')).toBe(true);
      expect((await ds.get('dst_lease'))!.lastError).toBe('The receiver answered 500.');
      expect(await ds.advance('dst_lease', 'A', 0, 9, 3, RECEIVED_AT)).toBe(true);
      expect(await ds.get('dst_lease')).toMatchObject({ cursor: 9, delivered: 3, lastError: null, lastDeliveredAt: RECEIVED_AT });

      // A replay moves the cursor back, and the holder's next write of the old generation is refused.
      expect(await ds.replay('dst_lease', 2)).toBe(true);
      expect(await ds.advance('dst_lease', 'A', 0, 12, 3, RECEIVED_AT)).toBe(false);
      expect(await ds.get('dst_lease')).toMatchObject({ cursor: 2, generation: 1 });
      expect(await ds.advance('dst_lease', 'A', 1, 4, 1, RECEIVED_AT)).toBe(true);

      // A lease that ran out (here: renewed for a negative time) is anyone's; its old holder can no longer write.
      expect(await ds.takeLease('dst_lease', 'A', -1000)).toBe(true);
      expect(await ds.takeLease('dst_lease', 'B', 60_000)).toBe(true);
      expect(await ds.advance('dst_lease', 'A', 1, 20, 1, RECEIVED_AT)).toBe(false);
      await ds.releaseLease('dst_lease', 'A');
      expect(await ds.takeLease('dst_lease', 'A', 60_000)).toBe(false);
      await ds.releaseLease('dst_lease', 'B');
      expect(await ds.takeLease('dst_lease', 'A', 60_000)).toBe(true);

      expect((await ds.setPaused('dst_lease', true))!.paused).toBe(true);
      expect(await ds.delete('dst_lease')).toBe(true);
      expect(await ds.get('dst_lease')).toBeNull();
      expect(await ds.delete('dst_lease')).toBe(false);
    });

    it('a deleted project\'s destination stops at once on every server (a batch in flight is the last), and goes from storage with its cursor and lease', async () => {
      const w = await world();
      const ds = store.destinations;
      const start = await ds.head(w.projectId);
      for (let i = 0; i < 4; i++) await w.ingest(w.a, Array.from({ length: 250 }, (_, k) => ({ event: `backlog_${i}_${k}`, distinctId: 'u' })));
      await ds.create(record('dst_gone', w.projectId, { cursor: start }));
      // Two servers on one database, each delivering as `inlet serve` does (its courier here on its own thread).
      const servers = [store, (await sut.another()).store].map((s) => {
        const sender = new FirstHeld();
        let stopped: () => void = () => undefined;
        const stoppedOnce = new Promise<void>((resolve) => (stopped = resolve));
        const service = new DeliveryService({
          store: s.destinations, courier: new LocalCourier(s.destinations, () => sender), self: { baseUrl: null, port: null }, kinds: DESTINATION_KINDS,
          observer: { batchesDelivered: () => undefined, batchFailed: () => undefined, lagCounted: () => undefined, stoppedDelivering: () => stopped() },
        });
        return { service, sender, stoppedOnce };
      });
      const [first, second] = servers as [(typeof servers)[0], (typeof servers)[0]];
      try {
        await first.service.scan();
        await first.sender.firstSent;
        await second.service.scan();
        expect([first.service.delivering, second.service.delivering]).toEqual([['dst_gone'], []]);

        await admin.deleteProject(w.projectId);
        first.sender.answerFirst();
        await Promise.race([first.stoppedOnce, first.sender.secondSent]);
        // The batch on its way when the project went is the last: no other is read or sent, by either server.
        expect(first.sender.sent).toHaveLength(1);
        await vi.waitFor(() => expect(first.service.delivering).toEqual([]));
        await second.service.scan();
        expect(second.service.delivering).toEqual([]);
        expect(second.sender.sent).toHaveLength(0);

        // Gone from storage, its cursor and lease with it: no lease to take, no cursor to write, nothing to delete.
        expect(await ds.get('dst_gone')).toBeNull();
        expect((await ds.all()).map((d) => d.id)).not.toContain('dst_gone');
        expect(await ds.takeLease('dst_gone', second.service.holder, 60_000)).toBe(false);
        expect(await ds.advance('dst_gone', first.service.holder, 0, start + 500, 500, RECEIVED_AT)).toBe(false);
        expect(await ds.delete('dst_gone')).toBe(false);
        // Nor can it be paused or replayed by id.
        const destinations = destinationAdmin(store, () => RECEIVED_AT, { self: { baseUrl: null, port: null }, check: async () => null, kinds: DESTINATION_KINDS });
        await expect(destinations.pause('dst_gone')).rejects.toThrow('No destination dst_gone');
        await expect(destinations.replay('dst_gone', RECEIVED_AT)).rejects.toThrow('No destination dst_gone');
      } finally {
        await Promise.all(servers.map((x) => x.service.stop()));
      }
    });

    it('deleting an organization deletes its projects\' destinations; another project\'s stay', async () => {
      const ds = store.destinations;
      const doomed = (await admin.createOrg('Doomed')).id;
      const project = (await admin.createProject({ name: 'p', orgId: doomed })).id;
      const kept = (await world()).projectId;
      await ds.create(record('dst_of_doomed', project));
      await ds.create(record('dst_kept', kept));
      await admin.deleteOrg(doomed);
      expect(await ds.get('dst_of_doomed')).toBeNull();
      expect(await ds.delete('dst_of_doomed')).toBe(false);
      expect((await ds.list(kept)).map((d) => d.id)).toEqual(['dst_kept']);
      // One made in a race with the deletion (its project checked just before) is never seen, nor delivered.
      await ds.create(record('dst_raced', project));
      expect(await ds.get('dst_raced')).toBeNull();
      expect(await ds.list(project)).toEqual([]);
      expect((await ds.all()).map((d) => d.id)).not.toContain('dst_raced');
    });
  });
}

