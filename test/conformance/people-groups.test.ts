/**
 * Groups, alias, set-once and unset on every engine: the rules of the
 * reference's "People and groups", through the domain's write path, with
 * the store's reads (person, group, list) and erasure.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { erasePerson } from '../../src/domain/erasure.js';
import type { Collector } from '../../src/domain/collector.js';
import type { IngestJob, ItemOutcome } from '../../src/domain/ingest/job.js';
import type { Store } from '../../src/stores/port.js';
import { TestClock } from '../helpers/fixture.js';
import { describeWith } from '../helpers/needs-services.js';
import { type ItemSpec, ingestJob } from '../helpers/items.js';
import { STORES, type StoreUnderTest } from './stores.js';

const MIN = 60_000;

interface World {
  clock: TestClock;
  projectId: string;
  sourceId: string;
  keyId: string;
}

const identify = (distinctId: string, o: ItemSpec = {}): ItemSpec => ({ type: 'identify', distinctId, ...o });
const group = (groupType: string, groupKey: string, o: ItemSpec = {}): ItemSpec => ({ type: 'group', groupType, groupKey, ...o });
const alias = (distinctId: string, previousId: string, o: ItemSpec = {}): ItemSpec => ({ type: 'alias', distinctId, previousId, ...o });
const status = (o: ItemOutcome) => (o.status === 'refused' ? `refused:${o.code}` : o.status);

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

    async function world(): Promise<World> {
      const clock = new TestClock();
      const admin = createAdmin(store, clock.now);
      const org = await admin.createOrg('Acme');
      const project = await admin.createProject({ name: 'Web', orgId: org.id, apiEnabled: true });
      const source = await admin.createSource({ projectId: project.id, name: 'Billing' });
      const key = await admin.createKey(source.id);
      return { clock, projectId: project.id, sourceId: source.id, keyId: key.id };
    }

    /** A job of `specs`, each item at `at` (a minute before arrival) unless it says otherwise. */
    function job(w: World, specs: ItemSpec[], opts: { dryRun?: boolean } = {}): IngestJob {
      const receivedAt = w.clock.now();
      const items = specs.map((s) => ({ event: null, timestamp: receivedAt - MIN, ...s }));
      return ingestJob(items, { projectId: w.projectId, sourceId: w.sourceId, keyId: w.keyId, receivedAt, dryRun: opts.dryRun ?? false });
    }

    const send = (w: World, specs: ItemSpec[], opts: { dryRun?: boolean; via?: Collector } = {}) => (opts.via ?? collector).ingest(job(w, specs, opts));
    const person = (w: World, distinctId: string) => store.findPerson(w.projectId, { distinctId });

    describe('groups', () => {
      it('a group item sets the group\'s traits, newest per key by timestamp, and makes its sender a member', async () => {
        const w = await world();
        const t = w.clock.now();
        expect((await send(w, [group('company', 'acme', { distinctId: 'ann', properties: { seats: 10, plan: 'team' }, timestamp: t - 2 * MIN })])).map(status)).toEqual(['accepted']);
        // An older value arrives late: it does not win.
        await send(w, [group('company', 'acme', { properties: { seats: 5, region: 'eu' }, timestamp: t - 3 * MIN }), group('company', 'acme', { properties: { plan: 'enterprise' }, timestamp: t - MIN })]);
        const g = await store.findGroup(w.projectId, 'company', 'acme');
        expect(g).toMatchObject({ groupType: 'company', groupKey: 'acme', traits: { seats: 10, plan: 'enterprise', region: 'eu' } });
        const ann = await person(w, 'ann');
        expect(g!.members).toEqual([ann!.id]);
        expect(ann!.groups).toEqual([{ groupType: 'company', groupKey: 'acme' }]);
        // Groups are free: nothing metered.
        expect(await store.usage(w.projectId, new Date(w.clock.now()).toISOString().slice(0, 7))).toBe(0);
      });

      it('a project has at most 5 group types: the sixth is refused, an existing one still works, and nothing of the refused item is kept', async () => {
        const w = await world();
        const five = ['company', 'team', 'workspace', 'account', 'region'].map((t) => group(t, 'k1'));
        expect((await send(w, five)).map(status)).toEqual(Array(5).fill('accepted'));
        const out = await send(w, [group('sixth', 'k1', { insertId: 'g6', distinctId: 'bo' }), group('team', 'k2', { insertId: 'g7' })]);
        expect(out.map(status)).toEqual(['refused:too_many_group_types', 'accepted']);
        expect(out[0]).toMatchObject({ field: 'group_type' });
        expect(await store.findGroup(w.projectId, 'sixth', 'k1')).toBeNull();
        // Its insert_id was not claimed: once fixed, the same item is taken.
        expect((await send(w, [group('team', 'k3', { insertId: 'g6' })])).map(status)).toEqual(['accepted']);
        expect((await store.listGroups(w.projectId, { limit: 100 })).map((g) => g.groupType).sort()).toEqual(['account', 'company', 'region', 'team', 'team', 'team', 'workspace']);
      });

      it('two servers adding group types at once never pass 5 between them', async () => {
        const w = await world();
        await send(w, [group('a', '1'), group('b', '1'), group('c', '1'), group('d', '1')]);
        const [one, two] = await Promise.all([send(w, [group('e', '1')]), send(w, [group('f', '1')], { via: second })]);
        expect([...one!, ...two!].map(status).sort()).toEqual(['accepted', 'refused:too_many_group_types']);
        expect(new Set((await store.listGroups(w.projectId, { limit: 100 })).map((g) => g.groupType)).size).toBe(5);
      });

      it('lists a project\'s groups by type, and a dry run shows a new group without keeping it', async () => {
        const w = await world();
        await send(w, [group('company', 'b'), group('company', 'a'), group('team', 'x')]);
        expect((await store.listGroups(w.projectId, { groupType: 'company', limit: 10 })).map((g) => g.groupKey)).toEqual(['a', 'b']);
        expect(await store.listGroups(w.projectId, { limit: 1 })).toHaveLength(1);
        const dry = await send(w, [group('company', 'new-one'), group('company', 'a')], { dryRun: true });
        expect(dry.map((o) => o.status === 'accepted' && o.effect)).toEqual([{ kind: 'group', groupIsNew: true }, { kind: 'group', groupIsNew: false }]);
        expect(await store.findGroup(w.projectId, 'company', 'new-one')).toBeNull();
      });

      it('erasing a person removes its memberships and leaves the group', async () => {
        const w = await world();
        await send(w, [group('company', 'acme', { distinctId: 'cy', properties: { seats: 3 } }), group('company', 'acme', { distinctId: 'di' })]);
        const di = await person(w, 'di');
        await erasePerson(store, w.projectId, { distinctId: 'cy' }, { suppress: false, now: w.clock.now() });
        expect(await store.findGroup(w.projectId, 'company', 'acme')).toMatchObject({ traits: { seats: 3 }, members: [di!.id] });
      });
    });

    describe('alias', () => {
      it('links a previous id without a person to the person of distinct_id, and the other way round', async () => {
        const w = await world();
        await send(w, [identify('u1', { properties: { plan: 'pro' } })]);
        expect((await send(w, [alias('u1', 'anon-1')])).map((o) => o.status === 'accepted' && o.effect)).toEqual([{ kind: 'alias', effect: 'linked' }]);
        const u1 = await person(w, 'u1');
        expect(u1!.distinctIds.sort()).toEqual(['anon-1', 'u1']);
        await send(w, [identify('anon-2', { properties: { seen: true } }), alias('u2', 'anon-2')]);
        expect((await person(w, 'u2'))!.id).toBe((await person(w, 'anon-2'))!.id);
        // Neither has a person: both get one.
        await send(w, [alias('u3', 'anon-3')]);
        expect((await person(w, 'anon-3'))!.id).toBe((await person(w, 'u3'))!.id);
      });

      it('merges the person of previous_id into the person of distinct_id: ids, traits (newest per key), events and memberships', async () => {
        const w = await world();
        const t = w.clock.now();
        await send(w, [
          identify('anon-9', { properties: { color: 'red', size: 1 }, timestamp: t - 2 * MIN }),
          { type: 'track', event: 'viewed', distinctId: 'anon-9' },
          group('company', 'acme', { distinctId: 'anon-9' }),
          identify('u9', { properties: { size: 2 }, timestamp: t - 3 * MIN }),
        ]);
        const before = (await person(w, 'anon-9'))!.id;
        expect((await send(w, [alias('u9', 'anon-9')])).map((o) => o.status === 'accepted' && o.effect)).toEqual([{ kind: 'alias', effect: 'merged' }]);
        const u9 = (await person(w, 'u9'))!;
        expect(u9.id).not.toBe(before);
        expect(u9.distinctIds.sort()).toEqual(['anon-9', 'u9']);
        expect(u9.traits).toEqual({ color: 'red', size: 1 });
        expect(u9.groups).toEqual([{ groupType: 'company', groupKey: 'acme' }]);
        expect((await store.findGroup(w.projectId, 'company', 'acme'))!.members).toEqual([u9.id]);
        expect((await store.listEvents(w.sourceId, 10)).map((e) => e.personId)).toEqual([u9.id]);
        // Already one person: nothing to do.
        expect((await send(w, [alias('u9', 'anon-9')])).map((o) => o.status === 'accepted' && o.effect)).toEqual([{ kind: 'alias', effect: 'none' }]);
      });

      it('never merges two identified people: illegal_merge, nothing changed, and the message names no other id', async () => {
        const w = await world();
        await send(w, [identify('kim'), alias('kim', 'kim-old'), identify('lee', { properties: { a: 1 } })]);
        const [out] = await send(w, [alias('lee', 'kim-old', { insertId: 'al-1' })]);
        expect(out).toMatchObject({ status: 'refused', code: 'illegal_merge', field: 'previous_id' });
        expect(out!.status === 'refused' && out!.message).not.toMatch(/kim/);
        expect((await person(w, 'kim-old'))!.id).toBe((await person(w, 'kim'))!.id);
        expect((await person(w, 'lee'))!.distinctIds).toEqual(['lee']);
        // Known by another id within the same pass: refused the same way.
        const inPass = await send(w, [identify('may'), alias('may', 'may-2'), identify('ned'), alias('ned', 'may-2')]);
        expect(inPass.map(status)).toEqual(['accepted', 'accepted', 'accepted', 'refused:illegal_merge']);
      });

      it('is idempotent by insert_id, and a dry run shows the merge without keeping it', async () => {
        const w = await world();
        await send(w, [identify('p1'), identify('p2')]);
        const dry = await send(w, [alias('p1', 'p2', { insertId: 'a-1' })], { dryRun: true });
        expect(dry[0]).toMatchObject({ status: 'accepted', effect: { kind: 'alias', effect: 'merged' } });
        expect((await person(w, 'p2'))!.id).not.toBe((await person(w, 'p1'))!.id);
        expect((await send(w, [alias('p1', 'p2', { insertId: 'a-1' })])).map(status)).toEqual(['accepted']);
        expect((await send(w, [alias('p1', 'p2', { insertId: 'a-1' })])).map(status)).toEqual(['duplicate']);
        expect((await person(w, 'p2'))!.id).toBe((await person(w, 'p1'))!.id);
      });

      it('two servers aliasing and identifying the same ids at once end in one person graph with no trait lost', async () => {
        const w = await world();
        const t = w.clock.now();
        const rounds = 8;
        const sends: Promise<ItemOutcome[]>[] = [];
        for (let i = 0; i < rounds; i++) {
          const by = i % 2 === 0 ? collector : second;
          sends.push(send(w, [identify(`anon-${i}`, { properties: { [`k${i}`]: i }, timestamp: t - 5 * MIN + i }), alias('shared', `anon-${i}`)], { via: by }));
          sends.push(send(w, [identify('shared', { properties: { [`s${i}`]: i }, timestamp: t - 5 * MIN + i })], { via: i % 2 === 0 ? second : collector }));
        }
        const outcomes = (await Promise.all(sends)).flat();
        expect(outcomes.map(status).every((s) => s === 'accepted')).toBe(true);
        const shared = (await person(w, 'shared'))!;
        expect(shared.distinctIds.sort()).toEqual(['shared', ...Array.from({ length: rounds }, (_, i) => `anon-${i}`)].sort());
        for (let i = 0; i < rounds; i++) expect((await person(w, `anon-${i}`))!.id).toBe(shared.id);
        expect(shared.traits).toEqual(Object.fromEntries(Array.from({ length: rounds }, (_, i) => [[`k${i}`, i], [`s${i}`, i]]).flat()));
      });
    });

    describe('set_once and unset', () => {
      it('set_once never overwrites a value, whatever the timestamps; properties do', async () => {
        const w = await world();
        const t = w.clock.now();
        await send(w, [identify('so', { setOnce: { first: 'a' }, timestamp: t - MIN })]);
        await send(w, [identify('so', { setOnce: { first: 'b', other: 1 }, timestamp: t - 4 * MIN })]);
        expect((await person(w, 'so'))!.traits).toEqual({ first: 'a', other: 1 });
        // In one pass, the first set-once wins, and a value set in the pass wins over it.
        await send(w, [identify('so2', { setOnce: { x: 1 } }), identify('so2', { setOnce: { x: 2 } }), identify('so2', { setOnce: { y: 1 } }), identify('so2', { properties: { y: 2 } })]);
        expect((await person(w, 'so2'))!.traits).toEqual({ x: 1, y: 2 });
        await send(w, [identify('so', { properties: { first: 'c' } })]);
        expect((await person(w, 'so'))!.traits).toMatchObject({ first: 'c' });
      });

      it('unset removes a value set at or before its timestamp; a value set after it survives, and a later set brings it back', async () => {
        const w = await world();
        const t = w.clock.now();
        await send(w, [identify('un', { properties: { a: 1, b: 1 }, timestamp: t - 5 * MIN })]);
        await send(w, [identify('un', { properties: { b: 2 }, timestamp: t - 2 * MIN })]);
        await send(w, [identify('un', { unset: ['a', 'b'], timestamp: t - 3 * MIN })]);
        expect((await person(w, 'un'))!.traits).toEqual({ b: 2 });
        // A value older than the unset arrives late: still gone.
        await send(w, [identify('un', { properties: { a: 0 }, timestamp: t - 4 * MIN })]);
        expect((await person(w, 'un'))!.traits).toEqual({ b: 2 });
        await send(w, [identify('un', { properties: { a: 3 }, timestamp: t - MIN })]);
        expect((await person(w, 'un'))!.traits).toEqual({ a: 3, b: 2 });
        // After an unset, the person has no value: set_once sets it.
        await send(w, [identify('un', { unset: ['b'], timestamp: t })]);
        await send(w, [identify('un', { setOnce: { b: 'again' }, timestamp: t - 10 * MIN })]);
        expect((await person(w, 'un'))!.traits).toEqual({ a: 3, b: 'again' });
      });

      it('an unset travels with a merge: the newer of a value and an unset wins', async () => {
        const w = await world();
        const t = w.clock.now();
        await send(w, [identify('m-old', { properties: { plan: 'pro' }, timestamp: t - 5 * MIN }), identify('m-new', { unset: ['plan'], timestamp: t - 2 * MIN })]);
        await send(w, [alias('m-new', 'm-old')]);
        expect((await person(w, 'm-new'))!.traits).toEqual({});
      });
    });
  });
}
