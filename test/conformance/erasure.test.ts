/**
 * Erasing a person and suppressing its distinct_ids, on every engine: links,
 * traits, merged persons and every event in every source of the project go;
 * nothing else does; suppressed ids are dropped by ingestion until lifted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminError, createAdmin } from '../../src/domain/admin.js';
import { monthOf } from '../../src/domain/month.js';
import type { Collector } from '../../src/domain/collector.js';
import type { Store } from '../../src/stores/port.js';
import { TestClock } from '../helpers/fixture.js';
import { type ItemSpec, RECEIVED_AT, ingestJob } from '../helpers/items.js';
import { STORES, type StoreUnderTest } from './stores.js';
import { erasePerson, unsuppress } from '../../src/domain/erasure.js';

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
      collector = sut.collector;
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

      const erased = await erasePerson(store, w.projectId, { distinctId: 'bob' }, { suppress: false, now: RECEIVED_AT });
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
      const erased = await erasePerson(store, w.projectId, { personId: serverPerson }, { suppress: false, now: RECEIVED_AT });
      expect(erased).toEqual({ personId: 'per_dave', distinctIds: ['dave'], eventsDeleted: 3, suppressed: false });
      expect(await erasePerson(store, w.projectId, { personId: serverPerson }, { suppress: false, now: RECEIVED_AT })).toBeNull();
      expect(await erasePerson(store, w.projectId, { distinctId: 'nobody' }, { suppress: false, now: RECEIVED_AT })).toBeNull();
    });

    it('with suppression, later items for those ids are dropped as suppressed, neither stored nor metered, until unsuppressed', async () => {
      const w = await world();
      await w.ingest(w.a, [{ event: 'e', distinctId: 'erin' }, { event: 'e', distinctId: 'frank' }]);
      expect(await erasePerson(store, w.projectId, { distinctId: 'erin' }, { suppress: true, now: RECEIVED_AT })).toMatchObject({
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

      expect(await unsuppress(store, w.projectId, { distinctId: 'erin' })).toBe(true);
      expect(await unsuppress(store, w.projectId, { distinctId: 'erin' })).toBe(false);
      expect((await w.ingest(w.b, [{ event: 'e', distinctId: 'erin', insertId: 'erin_2' }]))[0]).toMatchObject({ status: 'accepted', personIsNew: true });
    });

    /** gdpr1's person: a server person merged into the browser person `browser`, which holds gdpr1 and gdpr1b. */
    async function erasedWithSuppression(w: Awaited<ReturnType<typeof world>>, browser: string) {
      const [first] = await w.ingest(w.a, [{ event: 'e1', distinctId: 'gdpr1' }]);
      const serverPerson = (first as { personId: string }).personId;
      await w.ingest(w.a, [
        { type: 'identify', event: null, distinctId: 'gdpr1', anonymousId: browser },
        { type: 'identify', event: null, distinctId: 'gdpr1b', anonymousId: browser },
      ]);
      const erased = await erasePerson(store, w.projectId, { distinctId: 'gdpr1' }, { suppress: true, now: RECEIVED_AT });
      expect(erased).toMatchObject({ personId: browser, distinctIds: ['gdpr1', 'gdpr1b'], suppressed: true });
      return serverPerson;
    }
    const outcome = (o: { status: string; reason?: string }) => (o.status === 'dropped' ? o.reason : o.status);

    it("suppression is bypassed by anonymous_id: an erased person's id, and those merged into it, are suppressed with its distinct ids", async () => {
      const w = await world();
      const serverPerson = await erasedWithSuppression(w, 'per_gdpr1');
      const usage = await store.usage(w.projectId, MONTH);
      const later = await w.ingest(w.b, [
        { event: 'e2', anonymousId: 'per_gdpr1' },
        { event: 'e2', anonymousId: serverPerson },
        { type: 'identify', event: null, distinctId: 'newcomer', anonymousId: 'per_gdpr1', properties: { name: 'N' } },
        { event: 'e2', distinctId: 'newcomer', anonymousId: 'per_gdpr1' },
        { event: 'e2', anonymousId: 'per_someone_else' },
      ]);
      expect(later.map(outcome)).toEqual(['suppressed', 'suppressed', 'suppressed', 'suppressed', 'accepted']);
      expect((await w.ingest(w.b, [{ event: 'e2', anonymousId: 'per_gdpr1' }], true)).map(outcome)).toEqual(['suppressed']);
      // Not stored, not metered, and the erased person is not made again.
      expect(await w.eventsOf(w.b)).toEqual(['e2:per_someone_else']);
      expect(await store.usage(w.projectId, MONTH)).toBe(usage + 1);
      expect(await store.findPerson(w.projectId, { personId: 'per_gdpr1' })).toBeNull();
      expect(await store.findPerson(w.projectId, { personId: serverPerson })).toBeNull();
      expect(await store.findPerson(w.projectId, { distinctId: 'newcomer' })).toBeNull();
      // The browser pipeline's stand-in links nothing to a suppressed id either.
      await expect(admin.browserIdentify(w.projectId, 'per_gdpr1', 'newcomer')).rejects.toThrow(AdminError);
      await expect(admin.browserIdentify(w.projectId, 'per_gdpr1', 'newcomer')).rejects.toThrow(/unsuppress --project \S+ --person-id per_gdpr1/);
      await expect(admin.browserIdentify(w.projectId, 'per_fresh', 'gdpr1b')).rejects.toThrow(/--distinct-id gdpr1b/);
      expect(await store.findPerson(w.projectId, { personId: 'per_fresh' })).toBeNull();
      // A distinct_id spelled as the erased person's id is another id, and so is that id in another project.
      expect((await w.ingest(w.a, [{ event: 'e3', distinctId: 'per_gdpr1' }])).map(outcome)).toEqual(['accepted']);
      const other = await world();
      expect((await other.ingest(other.a, [{ event: 'e', anonymousId: 'per_gdpr1' }])).map(outcome)).toEqual(['accepted']);
    });

    it("unsuppressing a distinct_id lifts the person ids erased with it, not the erasure's other distinct_ids; a person id lifts its erasure's person ids only", async () => {
      const w = await world();
      const serverPerson = await erasedWithSuppression(w, 'per_gdpr2');
      // By a person id merged into the erased one: the whole erasure's person ids come back, its distinct_ids stay suppressed.
      expect(await unsuppress(store, w.projectId, { personId: serverPerson })).toBe(true);
      expect(await unsuppress(store, w.projectId, { personId: 'per_gdpr2' })).toBe(false);
      expect((await w.ingest(w.a, [{ event: 'e', anonymousId: 'per_gdpr2' }, { event: 'e', distinctId: 'gdpr1' }])).map(outcome)).toEqual(['accepted', 'suppressed']);

      const v = await world();
      await erasedWithSuppression(v, 'per_gdpr3');
      expect(await unsuppress(store, v.projectId, { distinctId: 'gdpr1' })).toBe(true);
      const after = await v.ingest(v.a, [
        { event: 'e', anonymousId: 'per_gdpr3' },
        { event: 'e', distinctId: 'gdpr1' },
        { event: 'e', distinctId: 'gdpr1b' },
      ]);
      expect(after.map(outcome)).toEqual(['accepted', 'accepted', 'suppressed']);
      expect(await unsuppress(store, v.projectId, { personId: 'per_gdpr3' })).toBe(false);
      expect(await unsuppress(store, v.projectId, { distinctId: 'gdpr1b' })).toBe(true);
    });
  });
}
