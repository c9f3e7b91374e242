/**
 * Erasing a person and suppressing its distinct_ids, on every engine: links,
 * traits, merged persons and every event in every source of the project go;
 * nothing else does; suppressed ids are dropped by ingestion until lifted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { monthOf } from '../../src/domain/month.js';
import type { Collector } from '../../src/domain/collector.js';
import type { Store } from '../../src/stores/port.js';
import { TestClock } from '../helpers/fixture.js';
import { type ItemSpec, RECEIVED_AT, ingestJob } from '../helpers/items.js';
import { STORES, type StoreUnderTest } from './stores.js';

const MONTH = monthOf(RECEIVED_AT);

for (const engine of STORES) {
  describe(`${engine.name}: erasure and suppression`, () => {
    let sut: StoreUnderTest;
    let collector: Collector;
    let store: Store;
    let admin: ReturnType<typeof createAdmin>;
    let orgId: string;

    beforeAll(async () => {
      sut = await engine.make();
      collector = sut.store;
      store = collector.store;
      admin = createAdmin(store, new TestClock(RECEIVED_AT).now);
      orgId = (await admin.createOrg('Acme')).id;
    });
    afterAll(async () => sut?.cleanup());

    /** A project with two sources. */
    async function world() {
      const projectId = (await admin.createProject({ name: 'p', orgId, apiEnabled: true })).id;
      const a = (await admin.createSource({ projectId, name: 'a' })).id;
      const b = (await admin.createSource({ projectId, name: 'b' })).id;
      const keys = new Map([[a, (await admin.createKey(a)).id], [b, (await admin.createKey(b)).id]]);
      const ingest = (sourceId: string, specs: ItemSpec[], dryRun = false) =>
        collector.ingest(ingestJob(specs, { projectId, sourceId, keyId: keys.get(sourceId)!, dryRun }));
      const eventsOf = async (sourceId: string) => (await store.listEvents(sourceId, 1000)).map((e) => `${e.event}:${e.distinctId ?? e.anonymousId}`).sort();
      return { projectId, a, b, ingest, eventsOf };
    }

    it('erases a person with its merged persons, links, traits and events in every source, and nothing else', async () => {
      const w = await world();
      // bob starts as a server person, with events and traits in both sources...
      await w.ingest(w.a, [
        { event: 'paid', distinctId: 'bob', insertId: 'bob_1' },
        { type: 'identify', event: null, distinctId: 'bob', properties: { email: 'bob@example.com' } },
        { event: 'paid', distinctId: 'carol', insertId: 'carol_1' },
      ]);
      await w.ingest(w.b, [{ event: 'renewed', distinctId: 'bob' }]);
      // ...then the browser person per_web takes his id, and bob's server person is merged into it.
      await w.ingest(w.b, [
        { event: 'viewed', anonymousId: 'per_web' },
        { type: 'identify', event: null, distinctId: 'bob', anonymousId: 'per_web', properties: { plan: 'pro' } },
        { event: 'viewed', anonymousId: 'per_web', distinctId: 'bob' },
      ]);
      expect((await store.findPerson(w.projectId, { distinctId: 'bob' }))!.id).toBe('per_web');

      const erased = await store.erasePerson(w.projectId, { distinctId: 'bob' }, { suppress: false, now: RECEIVED_AT });
      expect(erased).toEqual({ personId: 'per_web', distinctIds: ['bob'], eventsDeleted: 4, suppressed: false });
      // An erasure that ran to its end leaves nothing pending, however stale.
      expect(await store.staleErasures(0)).toEqual([]);
      expect(await store.findPerson(w.projectId, { distinctId: 'bob' })).toBeNull();
      expect(await store.findPerson(w.projectId, { personId: 'per_web' })).toBeNull();
      expect(await w.eventsOf(w.a)).toEqual(['paid:carol']);
      expect(await w.eventsOf(w.b)).toEqual([]);
      expect(await store.findPerson(w.projectId, { distinctId: 'carol' })).not.toBeNull();
      // Metered totals are kept: they are billing, not personal data.
      expect(await store.usage(w.projectId, MONTH)).toBe(5);

      // Without suppression, a later item makes a new person; an erased event's insert_id is free again.
      const [again] = await w.ingest(w.a, [{ event: 'paid', distinctId: 'bob', insertId: 'bob_1' }]);
      expect(again).toMatchObject({ status: 'accepted', personIsNew: true });
      expect((await store.findPerson(w.projectId, { distinctId: 'bob' }))!).toMatchObject({ distinctIds: ['bob'], traits: {} });
    });

    it('finds the person by a merged person id too, and counts exactly what it deleted', async () => {
      const w = await world();
      const [first] = await w.ingest(w.a, [{ event: 'e', distinctId: 'dave' }, { event: 'e', distinctId: 'dave' }]);
      const serverPerson = (first as { personId: string }).personId;
      await w.ingest(w.a, [{ type: 'identify', event: null, distinctId: 'dave', anonymousId: 'per_dave' }, { event: 'e', anonymousId: 'per_dave' }]);
      const erased = await store.erasePerson(w.projectId, { personId: serverPerson }, { suppress: false, now: RECEIVED_AT });
      expect(erased).toEqual({ personId: 'per_dave', distinctIds: ['dave'], eventsDeleted: 3, suppressed: false });
      expect(await store.erasePerson(w.projectId, { personId: serverPerson }, { suppress: false, now: RECEIVED_AT })).toBeNull();
      expect(await store.erasePerson(w.projectId, { distinctId: 'nobody' }, { suppress: false, now: RECEIVED_AT })).toBeNull();
    });

    it('with suppression, later items for those ids are dropped as suppressed, neither stored nor metered, until unsuppressed', async () => {
      const w = await world();
      await w.ingest(w.a, [{ event: 'e', distinctId: 'erin' }, { event: 'e', distinctId: 'frank' }]);
      expect(await store.erasePerson(w.projectId, { distinctId: 'erin' }, { suppress: true, now: RECEIVED_AT })).toMatchObject({
        distinctIds: ['erin'], eventsDeleted: 1, suppressed: true,
      });
      const later = await w.ingest(w.b, [
        { event: 'e', distinctId: 'erin', insertId: 'erin_2' },
        { type: 'identify', event: null, distinctId: 'erin', properties: { name: 'Erin' } },
        { event: 'e', distinctId: 'erin', anonymousId: 'per_erin' },
        { event: 'e', distinctId: 'frank' },
      ]);
      expect(later.map((o: { status: string; reason?: string }) => (o.status === 'dropped' ? o.reason : o.status))).toEqual(['suppressed', 'suppressed', 'suppressed', 'accepted']);
      const dry = await w.ingest(w.b, [{ event: 'e', distinctId: 'erin' }], true);
      expect(dry).toEqual([{ index: 0, status: 'dropped', reason: 'suppressed' }]);
      expect(await w.eventsOf(w.b)).toEqual(['e:frank']);
      expect(await store.findPerson(w.projectId, { distinctId: 'erin' })).toBeNull();
      expect(await store.usage(w.projectId, MONTH)).toBe(3);
      // Suppression is per project.
      const other = await world();
      expect((await other.ingest(other.a, [{ event: 'e', distinctId: 'erin' }]))[0]!.status).toBe('accepted');

      expect(await store.unsuppress(w.projectId, 'erin')).toBe(true);
      expect(await store.unsuppress(w.projectId, 'erin')).toBe(false);
      expect((await w.ingest(w.b, [{ event: 'e', distinctId: 'erin', insertId: 'erin_2' }]))[0]).toMatchObject({ status: 'accepted', personIsNew: true });
    });
  });
}
