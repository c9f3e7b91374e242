/**
 * The store port's conformance suite: every engine in STORES must pass all of
 * it. Tests talk to the port directly (jobs built by hand, setup through the
 * admin operations), so a failure points at the engine, not at HTTP.
 * Each engine gets one fresh database; each test makes its own project in it.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { hashKey, keyWorks } from '../../src/domain/keys.js';
import type { Collector } from '../../src/domain/collector.js';
import { type IngestJob, type ItemOutcome, KeyNoLongerWorksError } from '../../src/domain/ingest/job.js';
import { type Store, StoreUnavailableError } from '../../src/stores/port.js';
import { TestClock } from '../helpers/fixture.js';
import { passQuery, passWrites } from '../helpers/pass-bundles.js';
import { describeWith } from '../helpers/needs-services.js';
import { type ItemSpec, ingestJob } from '../helpers/items.js';
import { STORES, type StoreUnderTest } from './stores.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

type Admin = ReturnType<typeof createAdmin>;

interface World {
  clock: TestClock;
  admin: Admin;
  projectId: string;
  sourceId: string;
  keyId: string;
  key: string;
}

/** A track item; `o` overrides any field. */
const track = (o: ItemSpec = {}): ItemSpec => ({ type: 'track', event: 'Order placed', ...o });
/** An identify item setting `traits` on `distinctId`. */
const identify = (distinctId: string, traits: Record<string, unknown>, o: ItemSpec = {}): ItemSpec => ({
  type: 'identify',
  event: null,
  distinctId,
  properties: traits,
  ...o,
});

const accepted = (o: ItemOutcome) => o.status === 'accepted';
/** What a bundle written by a test directly is of. */
const scope = (w: World) => ({ projectId: w.projectId, sourceId: w.sourceId, now: w.clock.now() });

for (const engine of STORES) {
  describeWith(engine.needs ?? [], engine.name, () => {
    let sut: StoreUnderTest;
    let collector: Collector;
    let store: Store;
    let second: Collector;

    beforeAll(async () => {
      sut = await engine.make();
      collector = sut.collector;
      store = collector.store;
      second = await sut.another();
    });
    afterAll(async () => {
      await sut?.cleanup();
    });

    async function world(opts: { clock?: TestClock; limit?: number } = {}): Promise<World> {
      const clock = opts.clock ?? new TestClock();
      const admin = createAdmin(store, clock.now);
      const org = await admin.createOrg('Acme');
      const project = await admin.createProject({ name: 'Web', orgId: org.id, apiEnabled: true });
      if (opts.limit !== undefined) await admin.updateProject(project.id, { monthlyEventLimit: opts.limit });
      const source = await admin.createSource({ projectId: project.id, name: 'Billing' });
      const key = await admin.createKey(source.id);
      return { clock, admin, projectId: project.id, sourceId: source.id, keyId: key.id, key: key.key };
    }

    function job(w: World, specs: ItemSpec[], opts: { dryRun?: boolean; receivedAt?: number; sourceId?: string } = {}): IngestJob {
      const receivedAt = opts.receivedAt ?? w.clock.now();
      const sourceId = opts.sourceId ?? w.sourceId;
      // What the pipeline would hand over: a second before arrival, tagged with its source.
      const items = specs.map((s) => ({ event: null, timestamp: receivedAt - 1000, enrichment: { $source_id: sourceId }, ...s }));
      return ingestJob(items, { projectId: w.projectId, sourceId, keyId: w.keyId, receivedAt, dryRun: opts.dryRun ?? false });
    }

    const month = (w: World) => new Date(w.clock.now()).toISOString().slice(0, 7);

    it('ping answers while the store is up', async () => {
      await expect(collector.ping()).resolves.toBeUndefined();
    });

    describe('keys', () => {
      it('authenticate finds a working key with its source and project', async () => {
        const w = await world();
        const auth = await collector.authenticate(hashKey(w.key));
        expect(auth).not.toBeNull();
        expect(auth!.keyId).toBe(w.keyId);
        expect(auth!.hash.equals(hashKey(w.key))).toBe(true);
        expect(auth!.source).toMatchObject({ id: w.sourceId, projectId: w.projectId, filterBots: true, recordIp: false });
        expect(auth!.project).toMatchObject({ id: w.projectId, apiEnabled: true, monthlyEventLimit: null });
        expect(keyWorks(auth!, w.clock.now())).toBe(true);
        expect(await collector.authenticate(hashKey('srv_live_' + 'x'.repeat(32)))).toBeNull();
      });

      it('lookups made at once each get their own key, or none', async () => {
        const a = await world();
        const b = await world();
        const unknown = 'srv_live_' + 'u'.repeat(32);
        const found = await Promise.all([a.key, b.key, unknown, a.key, b.key].map((k) => collector.authenticate(hashKey(k))));
        expect(found.map((f) => f?.keyId ?? null)).toEqual([a.keyId, b.keyId, null, a.keyId, b.keyId]);
        expect(found[1]!.source.id).toBe(b.sourceId);
        // A change made while lookups are out is seen by every lookup asked after it.
        const before = collector.authenticate(hashKey(a.key));
        await second.admin.revokeKey(a.keyId, a.clock.now());
        const after = await Promise.all([collector.authenticate(hashKey(a.key)), collector.authenticate(hashKey(b.key))]);
        // Asked before the change: either answer is right, but it must come.
        expect((await before)?.keyId).toBe(a.keyId);
        expect(keyWorks(after[0]!, a.clock.now())).toBe(false);
        expect(keyWorks(after[1]!, b.clock.now())).toBe(true);
      });

      it('a revoked key is found but no longer works, on every server', async () => {
        const w = await world();
        await w.admin.revokeKey(w.keyId);
        const auth = await second.authenticate(hashKey(w.key));
        expect(auth?.revokedAt).toBe(w.clock.now());
        expect(keyWorks(auth!, w.clock.now())).toBe(false);
      });

      it('a key looked up before a change made elsewhere is not answered from a stale cache', async () => {
        const w = await world();
        expect(keyWorks((await second.authenticate(hashKey(w.key)))!, w.clock.now())).toBe(true);
        await w.admin.revokeKey(w.keyId);
        expect(keyWorks((await second.authenticate(hashKey(w.key)))!, w.clock.now())).toBe(false);
        await w.admin.updateProject(w.projectId, { apiEnabled: false });
        expect((await second.authenticate(hashKey(w.key)))!.project.apiEnabled).toBe(false);
        expect(await collector.authenticate(hashKey(w.key))).not.toBeNull();
        const k2 = await w.admin.createKey(w.sourceId);
        expect(await collector.authenticate(hashKey(k2.key))).not.toBeNull();
        await second.admin.deleteSource(w.sourceId, w.clock.now());
        expect(await collector.authenticate(hashKey(k2.key))).toBeNull();
      });

      it('keys of a deleted source, project or organization are not found', async () => {
        const a = await world();
        await a.admin.deleteSource(a.sourceId);
        expect(await collector.authenticate(hashKey(a.key))).toBeNull();
        const b = await world();
        await b.admin.deleteProject(b.projectId);
        expect(await collector.authenticate(hashKey(b.key))).toBeNull();
        const c = await world();
        await c.admin.deleteOrg((await c.admin.getProject(c.projectId)).orgId);
        expect(await second.authenticate(hashKey(c.key))).toBeNull();
      });

      it('a source holds at most two working keys', async () => {
        const w = await world();
        w.clock.advance(1000);
        const k2 = await w.admin.createKey(w.sourceId);
        await expect(w.admin.createKey(w.sourceId)).rejects.toThrow(/already has 2 working keys/);
        await w.admin.revokeKey(k2.id);
        w.clock.advance(1000);
        await w.admin.createKey(w.sourceId);
        expect((await w.admin.listKeys(w.sourceId)).map((k) => k.status)).toEqual(['active', 'revoked', 'active']);
      });

      it('rolling with grace 24h or 7d keeps the old key working until then; now ends it at once', async () => {
        const w = await world();
        const rolled24 = await w.admin.rollKey(w.keyId, '24h');
        const old = await collector.authenticate(hashKey(w.key));
        expect(old!.expiresAt).toBe(w.clock.now() + DAY);
        expect(keyWorks(old!, w.clock.now() + DAY - 1)).toBe(true);
        expect(keyWorks(old!, w.clock.now() + DAY)).toBe(false);
        // Two keys work now: a second roll with grace would make three.
        await expect(w.admin.rollKey(rolled24.id, '7d')).rejects.toThrow(/working keys/);
        await w.admin.revokeKey(w.keyId);
        const rolled7d = await w.admin.rollKey(rolled24.id, '7d');
        expect((await collector.authenticate(hashKey(rolled24.key)))!.expiresAt).toBe(w.clock.now() + 7 * DAY);
        const now = await w.admin.rollKey(rolled7d.id, 'now');
        expect(keyWorks((await collector.authenticate(hashKey(rolled7d.key)))!, w.clock.now())).toBe(false);
        expect(keyWorks((await collector.authenticate(hashKey(now.key)))!, w.clock.now())).toBe(true);
      });

      it('keys created at once on two servers never make more than two working keys', async () => {
        const w = await world();
        const other = createAdmin(second.store, w.clock.now);
        const results = await Promise.allSettled([
          w.admin.createKey(w.sourceId),
          other.createKey(w.sourceId),
          w.admin.createKey(w.sourceId),
          other.createKey(w.sourceId),
        ]);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const working = (await w.admin.listKeys(w.sourceId)).filter((k) => k.status === 'active');
        expect(working).toHaveLength(2);
      });

      it('revocation race: a key revoked after its request was authenticated writes nothing (checked at write time)', async () => {
        const w = await world();
        const auth = await collector.authenticate(hashKey(w.key));
        expect(keyWorks(auth!, w.clock.now())).toBe(true);
        // The body is being read meanwhile; another server revokes the key.
        await second.admin.revokeKey(w.keyId, w.clock.now());
        await expect(collector.ingest(job(w, [track({ distinctId: 'late', insertId: 'r1' })]))).rejects.toBeInstanceOf(KeyNoLongerWorksError);
        expect(await store.listEvents(w.sourceId, 10)).toEqual([]);
        expect(await store.findPerson(w.projectId, { distinctId: 'late' })).toBeNull();
        expect(await store.usage(w.projectId, month(w))).toBe(0);
      });

      it('revocation race: a job of a source, project or org deleted after authentication writes nothing', async () => {
        for (const remove of ['source', 'project', 'org'] as const) {
          const w = await world();
          expect(await collector.authenticate(hashKey(w.key))).not.toBeNull();
          const other = createAdmin(second.store, w.clock.now);
          if (remove === 'source') await other.deleteSource(w.sourceId);
          if (remove === 'project') await other.deleteProject(w.projectId);
          if (remove === 'org') await other.deleteOrg((await w.admin.getProject(w.projectId)).orgId);
          await expect(collector.ingest(job(w, [track({ distinctId: 'gone' })]))).rejects.toBeInstanceOf(KeyNoLongerWorksError);
          expect(await store.listEvents(w.sourceId, 10)).toEqual([]);
          expect(await store.usage(w.projectId, month(w))).toBe(0);
        }
      });

      it('revocation race: of jobs written together, only those of the revoked key are refused', async () => {
        const w = await world();
        const k2 = await w.admin.createKey(w.sourceId);
        await second.admin.revokeKey(w.keyId, w.clock.now());
        const [refused, kept] = await Promise.allSettled([
          collector.ingest(job(w, [track({ distinctId: 'old-key', insertId: 'same' })])),
          collector.ingest({ ...job(w, [track({ distinctId: 'new-key', insertId: 'same' })]), keyId: k2.id }),
        ]);
        expect(refused.status === 'rejected' && refused.reason instanceof KeyNoLongerWorksError).toBe(true);
        expect(kept.status === 'fulfilled' && kept.value[0]!.status).toBe('accepted');
        expect((await store.listEvents(w.sourceId, 10)).map((e) => e.distinctId)).toEqual(['new-key']);
        expect(await store.usage(w.projectId, month(w))).toBe(1);
      });

      it('a key use is written lazily and seen from another server', async () => {
        const w = await world();
        second.recordKeyUse(w.keyId, w.clock.now());
        second.recordKeyUse(w.keyId, w.clock.now() - 5000);
        await vi.waitFor(async () => expect((await collector.admin.getKey(w.keyId))!.lastUsedAt).toBe(w.clock.now()), {
          timeout: 5000,
          interval: 100,
        });
      });
    });

    describe('reads', () => {
      it('events are read back as stored, newest first', async () => {
        const w = await world();
        const t = w.clock.now();
        const props = { plan: 'pro', n: 12.5, big: 9007199254740991, ok: true, none: null, nested: { list: [1, 'två', { x: '🙂' }] } };
        const [first] = await collector.ingest(
          job(w, [
            track({ event: 'Signed up', distinctId: 'u-read', sessionId: 'ses_1', insertId: 'ins-1', timestamp: t - 2000, properties: props }),
          ]),
        );
        await collector.ingest(job(w, [track({ anonymousId: 'per_reader', distinctId: 'kept', timestamp: t - 1000 })]));
        const events = await store.listEvents(w.sourceId, 10);
        expect(events.map((e) => e.event)).toEqual(['Order placed', 'Signed up']);
        expect(events[0]).toMatchObject({ anonymousId: 'per_reader', distinctId: 'kept', personId: 'per_reader', sessionId: null, insertId: null });
        expect(events[1]).toEqual({
          id: (first as { eventId: string }).eventId,
          event: 'Signed up',
          distinctId: 'u-read',
          anonymousId: null,
          personId: (first as { personId: string }).personId,
          sessionId: 'ses_1',
          timestamp: t - 2000,
          receivedAt: t,
          insertId: 'ins-1',
          properties: { ...props, $source_id: w.sourceId },
        });
        expect(await store.listEvents(w.sourceId, 1)).toHaveLength(1);
      });

      it('newest first means by timestamp, not arrival, across minutes and days; ties go to the later arrival', async () => {
        const w = await world();
        const t = w.clock.now();
        // Sent out of order, in several jobs: late events, two in one millisecond, one minute apart, a day back.
        const stamps = [t - 61_000, t - 5, t - DAY, t - 60_000, t - 5, t - 59_999, t - 2 * HOUR, t - 1];
        for (let i = 0; i < stamps.length; i += 3) {
          await collector.ingest(job(w, stamps.slice(i, i + 3).map((ts, k) => track({ event: `e${i + k}`, distinctId: 'u', timestamp: ts }))));
        }
        const expected = ['e7', 'e4', 'e1', 'e5', 'e3', 'e0', 'e6', 'e2'];
        expect((await store.listEvents(w.sourceId, 100)).map((e) => e.event)).toEqual(expected);
        for (const limit of [1, 2, 3, 5, 7]) {
          expect((await store.listEvents(w.sourceId, limit)).map((e) => e.event)).toEqual(expected.slice(0, limit));
        }
      });
    });

    describe('idempotency', () => {
      it('a repeat of a stored insert_id is a duplicate naming the first event', async () => {
        const w = await world();
        const [a] = await collector.ingest(job(w, [track({ distinctId: 'u1', insertId: 'a' })]));
        expect(a!.status).toBe('accepted');
        const out = await second.ingest(job(w, [track({ distinctId: 'u1', insertId: 'a' }), track({ distinctId: 'u1', insertId: 'b' })]));
        expect(out[0]).toEqual({ index: 0, status: 'duplicate', eventId: (a as { eventId: string }).eventId });
        expect(out[1]!.status).toBe('accepted');
        expect(await store.listEvents(w.sourceId, 10)).toHaveLength(2);
        expect(await store.usage(w.projectId, month(w))).toBe(2);
      });

      it('an insert_id twice in one job is stored once', async () => {
        const w = await world();
        const out = await collector.ingest(job(w, [track({ distinctId: 'u1', insertId: 'x' }), track({ distinctId: 'u1', insertId: 'x' })]));
        expect(out[0]!.status).toBe('accepted');
        expect(out[1]).toEqual({ index: 1, status: 'duplicate', eventId: (out[0] as { eventId: string }).eventId });
        expect(await store.listEvents(w.sourceId, 10)).toHaveLength(1);
      });

      it("an identify's insert_id is remembered, with no event", async () => {
        const w = await world();
        await collector.ingest(job(w, [identify('u1', { plan: 'pro' }, { insertId: 'id-1' })]));
        const [again] = await collector.ingest(job(w, [identify('u1', { plan: 'free' }, { insertId: 'id-1', timestamp: w.clock.now() })]));
        expect(again).toEqual({ index: 0, status: 'duplicate', eventId: null });
        expect((await store.findPerson(w.projectId, { distinctId: 'u1' }))!.traits).toEqual({ plan: 'pro' });
      });

      it('insert_ids are kept per source', async () => {
        const w = await world();
        const other = await w.admin.createSource({ projectId: w.projectId, name: 'Other' });
        const [a] = await collector.ingest(job(w, [track({ distinctId: 'u1', insertId: 'same' })]));
        const [b] = await collector.ingest(job(w, [track({ distinctId: 'u1', insertId: 'same' })], { sourceId: other.id }));
        expect([a!.status, b!.status]).toEqual(['accepted', 'accepted']);
      });

      it('20 concurrent ingests of one batch on two servers store each insert_id once and meter it once', async () => {
        const w = await world();
        const batch = ['i1', 'i2', 'i3', 'i4', 'i5'].map((id, n) => track({ distinctId: `u${n}`, insertId: id }));
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, n) => (n % 2 === 0 ? collector : second).ingest(job(w, batch))),
        );
        const outcomes = results.flat();
        expect(outcomes.filter(accepted)).toHaveLength(5);
        expect(outcomes.filter((o) => o.status === 'duplicate')).toHaveLength(95);
        const events = await store.listEvents(w.sourceId, 100);
        expect(events.map((e) => e.insertId).sort()).toEqual(['i1', 'i2', 'i3', 'i4', 'i5']);
        const acceptedIds = new Set(outcomes.filter(accepted).map((o) => (o as { eventId: string }).eventId));
        for (const o of outcomes) if (o.status === 'duplicate') expect(acceptedIds.has(o.eventId!)).toBe(true);
        expect(await store.usage(w.projectId, month(w))).toBe(5);
      });
    });

    describe('dry run', () => {
      it('runs the same logic and keeps nothing: no events, persons, links, traits, insert_ids or usage', async () => {
        const w = await world();
        const items = [
          track({ distinctId: 'dry-user', insertId: 'd1' }),
          track({ anonymousId: 'per_drybrowser' }),
          identify('dry-user', { plan: 'pro' }, { anonymousId: 'per_drybrowser' }),
        ];
        const out = await collector.ingest(job(w, items, { dryRun: true }));
        expect(out.map((o) => o.status)).toEqual(['accepted', 'accepted', 'accepted']);
        expect(out[0]).toMatchObject({ personIsNew: true });
        expect(await store.listEvents(w.sourceId, 10)).toEqual([]);
        expect(await store.findPerson(w.projectId, { distinctId: 'dry-user' })).toBeNull();
        expect(await store.findPerson(w.projectId, { personId: 'per_drybrowser' })).toBeNull();
        expect(await store.usage(w.projectId, month(w))).toBe(0);
        const real = await collector.ingest(job(w, items));
        expect(real.map((o) => o.status)).toEqual(['accepted', 'accepted', 'accepted']);
        const dryAgain = await collector.ingest(job(w, items.slice(0, 1), { dryRun: true }));
        expect(dryAgain[0]!.status).toBe('duplicate');
        expect(await store.usage(w.projectId, month(w))).toBe(2);
      });
    });

    describe('people', () => {
      it('a distinct_id alone makes one server person, which later items reuse', async () => {
        const w = await world();
        const [a] = await collector.ingest(job(w, [track({ distinctId: 'alice' })]));
        expect(a).toMatchObject({ status: 'accepted', personIsNew: true });
        const personId = (a as { personId: string }).personId;
        expect(personId).toMatch(/^per_/);
        const [b, c] = await second.ingest(job(w, [track({ distinctId: 'alice' }), identify('alice', {})]));
        expect(b).toMatchObject({ personId, personIsNew: false });
        expect(c).toMatchObject({ personId, personIsNew: false });
        expect(await store.findPerson(w.projectId, { distinctId: 'alice' })).toEqual({
          id: personId,
          distinctIds: ['alice'],
          traits: {},
          createdAt: w.clock.now(),
          groups: [],
        });
      });

      it('an anonymous_id makes or uses that browser person; a distinct_id beside it links nothing', async () => {
        const w = await world();
        const [a, b] = await collector.ingest(job(w, [track({ anonymousId: 'per_b1', distinctId: 'bob' }), track({ anonymousId: 'per_b1' })]));
        expect(a).toMatchObject({ personId: 'per_b1', personIsNew: true });
        expect(b).toMatchObject({ personId: 'per_b1', personIsNew: true });
        const [c] = await collector.ingest(job(w, [track({ anonymousId: 'per_b1' })]));
        expect(c).toMatchObject({ personId: 'per_b1', personIsNew: false });
        expect(await store.findPerson(w.projectId, { distinctId: 'bob' })).toBeNull();
        expect(await store.findPerson(w.projectId, { personId: 'per_b1' })).toMatchObject({ id: 'per_b1', distinctIds: [] });
        const events = await store.listEvents(w.sourceId, 10);
        expect(events.map((e) => e.distinctId).sort()).toEqual(['bob', null, null].sort());
      });

      it("identify with anonymous_id merges the server person: its ids, traits and past events read as the browser person's", async () => {
        const w = await world();
        const t = w.clock.now();
        const [first] = await collector.ingest(
          job(w, [track({ distinctId: 'carol' }), identify('carol', { plan: 'free' }), identify('carol2', {})]),
        );
        const server = (first as { personId: string }).personId;
        const out = await second.ingest(
          job(w, [identify('carol', { email: 'c@example.com' }, { anonymousId: 'per_carol', timestamp: t }), track({ distinctId: 'carol' })]),
        );
        expect(out[0]).toMatchObject({ status: 'accepted', personId: 'per_carol' });
        // The browser person was first recorded by this very job.
        expect(out[1]).toMatchObject({ status: 'accepted', personId: 'per_carol', personIsNew: true });
        const events = await store.listEvents(w.sourceId, 10);
        expect(events.map((e) => e.personId)).toEqual(['per_carol', 'per_carol']);
        const view = { id: 'per_carol', distinctIds: ['carol'], traits: { plan: 'free', email: 'c@example.com' } };
        expect(await store.findPerson(w.projectId, { distinctId: 'carol' })).toMatchObject(view);
        expect(await store.findPerson(w.projectId, { personId: server })).toMatchObject(view);
        // carol2 is another server person: the admin's browser identify merges it too.
        await w.admin.browserIdentify(w.projectId, 'per_carol', 'carol2');
        expect((await store.findPerson(w.projectId, { personId: 'per_carol' }))!.distinctIds).toEqual(['carol', 'carol2']);
      });

      it('merging again, or a person into itself, changes nothing', async () => {
        const w = await world();
        await collector.ingest(job(w, [track({ distinctId: 'dan' }), identify('dan', { plan: 'pro' })]));
        await collector.ingest(job(w, [identify('dan', {}, { anonymousId: 'per_dan' })]));
        const before = await store.findPerson(w.projectId, { distinctId: 'dan' });
        const again = await collector.ingest(job(w, [identify('dan', {}, { anonymousId: 'per_dan' })]));
        expect(again[0]).toMatchObject({ personId: 'per_dan', personIsNew: false });
        expect((await w.admin.browserIdentify(w.projectId, 'per_dan', 'dan')).id).toBe('per_dan');
        await collector.transaction(async (tx) => {
          await tx.read(passQuery(w.projectId, w.sourceId));
          await tx.write(scope(w), passWrites({ merges: [{ from: 'per_dan', into: 'per_dan' }] }));
        });
        expect(await store.findPerson(w.projectId, { distinctId: 'dan' })).toEqual(before);
        expect((await store.listEvents(w.sourceId, 10))[0]!.personId).toBe('per_dan');
      });

      it('an id already held by another browser person stays with it', async () => {
        const w = await world();
        await collector.ingest(job(w, [identify('erin', {}, { anonymousId: 'per_e1' })]));
        const [out] = await collector.ingest(job(w, [identify('erin', { plan: 'x' }, { anonymousId: 'per_e2' })]));
        expect(out).toMatchObject({ personId: 'per_e1' });
        expect(await store.findPerson(w.projectId, { distinctId: 'erin' })).toMatchObject({ id: 'per_e1', traits: { plan: 'x' } });
        expect(await store.findPerson(w.projectId, { personId: 'per_e2' })).toMatchObject({ id: 'per_e2', distinctIds: [] });
      });

      it('20 concurrent jobs with one new distinct_id on two servers make one person', async () => {
        const w = await world();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, n) => (n % 2 === 0 ? collector : second).ingest(job(w, [track({ distinctId: 'frank' })]))),
        );
        const outcomes = results.flat() as Extract<ItemOutcome, { status: 'accepted' }>[];
        expect(new Set(outcomes.map((o) => o.personId)).size).toBe(1);
        expect(outcomes.filter((o) => o.personIsNew)).toHaveLength(1);
        expect(await store.listEvents(w.sourceId, 100)).toHaveLength(20);
      });
    });

    describe('writes a store holds back until the transaction ends', () => {
      it('a server person made earlier in the same job is merged by an identify with anonymous_id', async () => {
        const w = await world();
        const out = await collector.ingest(job(w, [track({ distinctId: 'xena' }), identify('xena', { plan: 'p' }, { anonymousId: 'per_xena' })]));
        expect(out[1]).toMatchObject({ status: 'accepted', personId: 'per_xena' });
        expect(await store.findPerson(w.projectId, { distinctId: 'xena' })).toMatchObject({ id: 'per_xena', distinctIds: ['xena'], traits: { plan: 'p' } });
        expect((await store.listEvents(w.sourceId, 10)).map((e) => e.personId)).toEqual(['per_xena']);
      });

      it('a merge in store.transaction sees the links and traits written before it, in an earlier bundle', async () => {
        const w = await world();
        const t = w.clock.now();
        await collector.transaction(async (tx) => {
          await tx.read(passQuery(w.projectId, w.sourceId));
          await tx.write(
            { ...scope(w), now: t },
            passWrites({
              persons: [{ id: 'per_s', kind: 'server' }, { id: 'per_b', kind: 'browser' }],
              links: [{ distinctId: 'yan', personId: 'per_s' }],
              traits: [{ personId: 'per_s', key: 'plan', value: '"x"', setAt: t }],
            }),
          );
          await tx.write(scope(w), passWrites({ merges: [{ from: 'per_s', into: 'per_b' }] }));
        });
        expect(await store.findPerson(w.projectId, { distinctId: 'yan' })).toMatchObject({ id: 'per_b', distinctIds: ['yan'], traits: { plan: 'x' } });
      });

      it("the admin's browser identify of a new distinct_id keeps its link", async () => {
        const w = await world();
        expect((await w.admin.browserIdentify(w.projectId, 'per_zed', 'zed')).id).toBe('per_zed');
        expect(await store.findPerson(w.projectId, { distinctId: 'zed' })).toMatchObject({ id: 'per_zed', distinctIds: ['zed'] });
      });

    });

    it('usage added by bundles written at the same time on one transaction all counts', async () => {
      const w = await world();
      await collector.transaction(async (tx) => {
        await tx.read(passQuery(w.projectId, w.sourceId));
        await Promise.all([
          tx.write(scope(w), passWrites({ usage: new Map([['2026-01', 2]]) })),
          tx.write(scope(w), passWrites({ usage: new Map([['2026-01', 1], ['2026-02', 1]]) })),
          tx.write(scope(w), passWrites({ usage: new Map([['2026-02', 2]]) })),
        ]);
      });
      expect([await store.usage(w.projectId, '2026-01'), await store.usage(w.projectId, '2026-02')]).toEqual([3, 3]);
    });

    describe('traits order', () => {
      it('a late identify with an older timestamp does not overwrite a newer value', async () => {
        const w = await world();
        const t = w.clock.now();
        await collector.ingest(job(w, [identify('gina', { plan: 'pro', seats: 5 }, { timestamp: t - 1000 })]));
        await collector.ingest(job(w, [identify('gina', { plan: 'free', city: 'Oslo' }, { timestamp: t - 5000 })]));
        expect((await store.findPerson(w.projectId, { distinctId: 'gina' }))!.traits).toEqual({ plan: 'pro', seats: 5, city: 'Oslo' });
      });

      it('on a tie the later arrival wins, within a job and across jobs', async () => {
        const w = await world();
        const t = w.clock.now() - 1000;
        await collector.ingest(job(w, [identify('hal', { plan: 'a' }, { timestamp: t }), identify('hal', { plan: 'b' }, { timestamp: t })]));
        expect((await store.findPerson(w.projectId, { distinctId: 'hal' }))!.traits).toEqual({ plan: 'b' });
        await second.ingest(job(w, [identify('hal', { plan: 'c' }, { timestamp: t })]));
        expect((await store.findPerson(w.projectId, { distinctId: 'hal' }))!.traits).toEqual({ plan: 'c' });
      });

      it('a merge keeps the newest value of each trait', async () => {
        const w = await world();
        const t = w.clock.now();
        // The browser person's traits (set through another id it holds).
        await collector.ingest(job(w, [identify('ivy-browser', { plan: 'browser', color: 'blue' }, { anonymousId: 'per_ivy', timestamp: t - 4000 })]));
        await collector.ingest(job(w, [identify('ivy-browser', { color: 'blue' }, { anonymousId: 'per_ivy', timestamp: t - 2000 })]));
        // The server person's: plan is newer than the browser's, color older.
        await collector.ingest(job(w, [identify('ivy', { plan: 'server', color: 'red', size: 'L' }, { timestamp: t - 3000 })]));
        await collector.ingest(job(w, [identify('ivy', { plan: 'server' }, { timestamp: t - 1000 })]));
        await collector.ingest(job(w, [identify('ivy', {}, { anonymousId: 'per_ivy', timestamp: t })]));
        expect(await store.findPerson(w.projectId, { distinctId: 'ivy' })).toMatchObject({
          id: 'per_ivy',
          distinctIds: ['ivy', 'ivy-browser'],
          traits: { plan: 'server', color: 'blue', size: 'L' },
        });
      });

      it('traits sent in the identify that merges are applied after the merge', async () => {
        const w = await world();
        const t = w.clock.now();
        await collector.ingest(job(w, [identify('jay', { plan: 'old' }, { timestamp: t - 5000 })]));
        await collector.ingest(job(w, [identify('jay', { plan: 'new' }, { anonymousId: 'per_jay', timestamp: t - 1000 })]));
        expect((await store.findPerson(w.projectId, { personId: 'per_jay' }))!.traits).toEqual({ plan: 'new' });
      });
    });

    describe('metering', () => {
      it('counts stored track events only: not identifies, duplicates or dry runs', async () => {
        const w = await world();
        const items = [track({ distinctId: 'u', insertId: 'm1' }), track({ distinctId: 'u', insertId: 'm2' }), track({ distinctId: 'u' }), identify('u', { a: 1 })];
        await collector.ingest(job(w, items));
        expect(await store.usage(w.projectId, month(w))).toBe(3);
        await second.ingest(job(w, items.slice(0, 2)));
        await collector.ingest(job(w, [identify('u', { a: 2 })]));
        await collector.ingest(job(w, [track({ distinctId: 'u' })], { dryRun: true }));
        expect(await store.usage(w.projectId, month(w))).toBe(3);
      });

      it('the month is the UTC calendar month of arrival', async () => {
        const w = await world();
        const lastMs = Date.UTC(2026, 0, 31, 23, 59, 59, 999);
        await collector.ingest(job(w, [track({ distinctId: 'u' }), track({ distinctId: 'u' })], { receivedAt: lastMs }));
        await collector.ingest(job(w, [track({ distinctId: 'u' })], { receivedAt: lastMs + 1 }));
        expect(await store.usage(w.projectId, '2026-01')).toBe(2);
        expect(await store.usage(w.projectId, '2026-02')).toBe(1);
        expect(await store.usage(w.projectId, '2025-12')).toBe(0);
      });
    });

    describe('plan limit', () => {
      it('takes track items in order up to the limit, drops the rest as collection_paused, and still applies identifies', async () => {
        const w = await world({ limit: 3 });
        await collector.ingest(job(w, [track({ distinctId: 'u' })]));
        const out = await collector.ingest(
          job(w, [track({ distinctId: 'u' }), track({ distinctId: 'u' }), track({ distinctId: 'u', insertId: 'late' }), identify('u', { plan: 'pro' })]),
        );
        expect(out.map((o) => o.status)).toEqual(['accepted', 'accepted', 'dropped', 'accepted']);
        expect(out[2]).toEqual({ index: 2, status: 'dropped', reason: 'collection_paused' });
        expect(await store.usage(w.projectId, month(w))).toBe(3);
        expect((await store.findPerson(w.projectId, { distinctId: 'u' }))!.traits).toEqual({ plan: 'pro' });
        // A dropped item's insert_id was not taken: once there is room it is accepted.
        await w.admin.updateProject(w.projectId, { monthlyEventLimit: null });
        const [late] = await collector.ingest(job(w, [track({ distinctId: 'u', insertId: 'late' })]));
        expect(late!.status).toBe('accepted');
      });

      it('duplicates do not use up room under the limit', async () => {
        const w = await world({ limit: 2 });
        await collector.ingest(job(w, [track({ distinctId: 'u', insertId: 'a' })]));
        const out = await collector.ingest(job(w, [track({ distinctId: 'u', insertId: 'a' }), track({ distinctId: 'u' }), track({ distinctId: 'u' })]));
        expect(out.map((o) => o.status)).toEqual(['duplicate', 'accepted', 'dropped']);
      });

      it('10 concurrent jobs on two servers never push usage above the limit', async () => {
        const w = await world({ limit: 10 });
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, n) =>
            (n % 2 === 0 ? collector : second).ingest(job(w, [track({ distinctId: 'u' }), track({ distinctId: 'u' }), track({ distinctId: 'u' })])),
          ),
        );
        const outcomes = results.flat();
        expect(outcomes.filter(accepted)).toHaveLength(10);
        expect(outcomes.filter((o) => o.status === 'dropped')).toHaveLength(20);
        expect(await store.usage(w.projectId, month(w))).toBe(10);
        expect(await store.listEvents(w.sourceId, 100)).toHaveLength(10);
        // Within each job, items are taken in order: nothing accepted after a drop.
        for (const r of results) {
          const statuses = r.map((o) => o.status);
          expect(statuses.slice(statuses.indexOf('dropped') + 1 || statuses.length).every((st) => st === 'dropped')).toBe(true);
        }
      });
    });

    describe('failures', () => {
      // A track without an event name breaks a NOT NULL column on every
      // engine, after persons and links were already written in the job.
      const kimJob = (w: World, lastEvent: string | null) =>
        job(w, [identify('kim', { plan: 'pro' }), track({ distinctId: 'kim', insertId: 'k1' }), track({ distinctId: 'kim', event: lastEvent, insertId: 'k2' })]);

      it('a job the store cannot write rejects with StoreUnavailableError and leaves nothing behind', async () => {
        const w = await world();
        await expect(collector.ingest(kimJob(w, null))).rejects.toBeInstanceOf(StoreUnavailableError);
        expect(await store.findPerson(w.projectId, { distinctId: 'kim' })).toBeNull();
        expect(await store.listEvents(w.sourceId, 10)).toEqual([]);
        expect(await store.usage(w.projectId, month(w))).toBe(0);
        expect((await collector.ingest(kimJob(w, 'Fixed'))).map((o) => o.status)).toEqual(['accepted', 'accepted', 'accepted']);
        expect(await store.usage(w.projectId, month(w))).toBe(2);
      });

      it('a failing job does not take jobs written beside it down', async () => {
        const w = await world();
        const [good, failed] = await Promise.allSettled([collector.ingest(job(w, [track({ distinctId: 'lee' })])), collector.ingest(kimJob(w, null))]);
        expect(good.status).toBe('fulfilled');
        expect(failed.status).toBe('rejected');
        expect((await store.listEvents(w.sourceId, 10)).map((e) => e.distinctId)).toEqual(['lee']);
      });

      it('a savepoint that throws undoes only its own writes, and the transaction goes on', async () => {
        const w = await world();
        const t = w.clock.now();
        const boom = new Error('boom');
        await store.transaction(async (tx) => {
          await tx.read(passQuery(w.projectId, w.sourceId));
          await tx.write({ ...scope(w), now: t }, passWrites({ persons: [{ id: 'per_kept', kind: 'browser' }] }));
          await expect(
            tx.savepoint(async () => {
              await tx.write({ ...scope(w), now: t }, passWrites({ persons: [{ id: 'per_undone', kind: 'browser' }] }));
              await tx.write(scope(w), passWrites({ links: [{ distinctId: 'undone', personId: 'per_undone' }] }));
              throw boom;
            }),
          ).rejects.toBe(boom);
          await tx.savepoint(async () => tx.write(scope(w), passWrites({ links: [{ distinctId: 'kept', personId: 'per_kept' }] })));
        });
        expect(await store.findPerson(w.projectId, { distinctId: 'kept' })).toMatchObject({ id: 'per_kept', distinctIds: ['kept'] });
        expect(await store.findPerson(w.projectId, { personId: 'per_undone' })).toBeNull();
        expect(await store.findPerson(w.projectId, { distinctId: 'undone' })).toBeNull();
      });

      it('a transaction with keep: false is rolled back, and says what it read meanwhile', async () => {
        const w = await world();
        const seen = await store.transaction(
          async (tx) => {
            await tx.read(passQuery(w.projectId, w.sourceId));
            await tx.write(scope(w), passWrites({ usage: new Map([['2026-03', 4]]) }));
            return (await tx.read(passQuery(w.projectId, w.sourceId, { months: ['2026-03'] }))).usage.get('2026-03');
          },
          { keep: false },
        );
        expect(seen).toBe(4);
        expect(await store.usage(w.projectId, '2026-03')).toBe(0);
      });

      it('a transaction whose function throws is rolled back whole', async () => {
        const w = await world();
        const boom = new Error('boom');
        await expect(
          collector.transaction(async (tx) => {
            await tx.read(passQuery(w.projectId, w.sourceId));
            await tx.write(scope(w), passWrites({ persons: [{ id: 'per_tx', kind: 'browser' }], links: [{ distinctId: 'tx-user', personId: 'per_tx' }] }));
            throw boom;
          }),
        ).rejects.toBe(boom);
        expect(await store.findPerson(w.projectId, { personId: 'per_tx' })).toBeNull();
        expect(await store.findPerson(w.projectId, { distinctId: 'tx-user' })).toBeNull();
      });

      it('a conflicting insert_id claim throws inside a transaction', async () => {
        const w = await world();
        await collector.ingest(job(w, [track({ distinctId: 'u', insertId: 'dup' })]));
        await expect(
          collector.transaction(async (tx) => {
            await tx.read(passQuery(w.projectId, w.sourceId));
            await tx.write(scope(w), passWrites({ insertIds: [{ insertId: 'dup', eventId: null }] }));
          }),
        ).rejects.toThrow();
      });

      it('linking a distinct_id that is already linked fails the transaction, and keeps its link', async () => {
        const w = await world();
        const [first] = await collector.ingest(job(w, [track({ distinctId: 'held' })]));
        const held = first!.status === 'accepted' ? first!.personId : null;
        await expect(
          collector.transaction(async (tx) => {
            await tx.read(passQuery(w.projectId, w.sourceId));
            await tx.write(scope(w), passWrites({ persons: [{ id: 'per_other', kind: 'browser' }], links: [{ distinctId: 'held', personId: 'per_other' }] }));
            // A store that holds writes back sends them at the latest before COMMIT.
            await tx.read(passQuery(w.projectId, w.sourceId, { linkedIds: ['held'] }));
          }),
        ).rejects.toThrow(StoreUnavailableError);
        expect(await store.findPerson(w.projectId, { distinctId: 'held' })).toMatchObject({ id: held, distinctIds: ['held'] });
        expect(await store.findPerson(w.projectId, { personId: 'per_other' })).toBeNull();
      });
    });
  });
}
