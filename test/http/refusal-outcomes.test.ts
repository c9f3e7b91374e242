/**
 * Regressions of what became of refused items, over HTTP on every engine:
 * the errors of one item are bounded wherever they go, a suppressed person's
 * later items are kept withheld, and a batch refused whole by the store is
 * answered, counted and shown as one the checks refuse.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { erasePerson } from '../../src/domain/erasure.js';
import { LiveWindow } from '../../src/domain/live-window.js';
import { MAX_ERRORS_PER_ITEM } from '../../src/domain/items/fields/field-error.js';
import { sampleBytes } from '../../src/stores/port-outcomes.js';
import { STORES, type StoreUnderTest } from '../conformance/stores.js';
import { type Fixture, TestClock, makeFixture, send } from '../helpers/fixture.js';
import { storedCounts } from '../helpers/outcomes.js';

for (const engine of STORES) {
  describe(`refused items' outcomes (${engine.name})`, () => {
    let s: StoreUnderTest;
    let base: Fixture;
    const clock = new TestClock();
    const live = new LiveWindow(undefined, undefined, clock.now);
    beforeAll(async () => {
      s = await engine.make();
      base = await makeFixture({ store: s.collector.store, clock, live });
    });
    afterAll(async () => {
      await base.app.close();
      await base.collector.flush();
      await s.cleanup();
    });

    /** A project of its own, with the API on, a source and a key: the fixture's server answers for it. */
    async function world(): Promise<Fixture> {
      const projectId = (await base.admin.createProject({ name: 'p', orgId: base.orgId, apiEnabled: true })).id;
      const sourceId = (await base.admin.createSource({ projectId, name: 's' })).id;
      const key = (await base.admin.createKey(sourceId)).key;
      live.show(sourceId);
      return { ...base, projectId, sourceId, key };
    }

    /** A project's five group types: a group item of a sixth is refused by the store. */
    const fiveGroupTypes = (f: Fixture) => send(f, { items: ['a', 'b', 'c', 'd', 'e'].map((t) => ({ type: 'group', group_type: t, group_key: 'k' })) });

    const samples = async (f: Fixture) => {
      await f.collector.outcomes.flush();
      return f.collector.store.outcomes.samples({ sourceId: f.sourceId, limit: 100 });
    };

    it('kept refused samples are not bounded in bytes: an item with 50,000 "$" keys is answered, kept and shown with 100 errors and a count of the rest', async () => {
      const f = await world();
      const properties = Object.fromEntries(Array.from({ length: 50_000 }, (_, n) => [`$k${n.toString(36)}`, 0]));
      const res = await send(f, { items: [{ event: 'ok', distinct_id: 'u' }, { event: 'many', distinct_id: 'u', properties }] });
      expect(res.statusCode, res.body.slice(0, 300)).toBe(202);
      const errors = res.json().errors;
      expect(errors).toHaveLength(MAX_ERRORS_PER_ITEM);
      expect(errors.slice(0, -1).every((e: object) => !('more_errors' in e))).toBe(true);
      expect(errors.at(-1)).toMatchObject({ index: 1, code: 'reserved_property', field: 'properties.$k2r', more_errors: 50_000 - MAX_ERRORS_PER_ITEM });
      expect(errors.at(-1).message).toContain(`${50_000 - MAX_ERRORS_PER_ITEM} more errors of this item are not listed.`);
      expect(res.body.length).toBeLessThan(32 * 1024);

      const [kept] = await samples(f);
      expect(JSON.parse(kept!.errors)).toEqual(errors);
      expect(kept!.cut).toBe(true);
      expect(sampleBytes(kept!)).toBeLessThan(64 * 1024);

      const [shown] = live.recent(f.sourceId);
      expect(shown!.items.filter((i) => i.outcome === 'refused')).toHaveLength(MAX_ERRORS_PER_ITEM);
    });

    it('a suppressed person\'s later items are kept as samples, personal data included: none of what they sent is kept, dropped or refused', async () => {
      const f = await world();
      expect((await send(f, { items: [{ type: 'identify', distinct_id: 'gdpr', anonymous_id: 'per_gdprbrowser', properties: { email: 'a@b.example' } }] })).statusCode).toBe(202);
      await erasePerson(f.collector.store, f.projectId, { distinctId: 'gdpr' }, { suppress: true, now: clock.now() });
      const personal = { email: 'secret@mail.example', ssn: '078-05-1120' };
      const res = await send(f, { items: [
        { event: 'later', distinct_id: 'gdpr', properties: personal },
        { event: 'later', anonymous_id: 'per_gdprbrowser', properties: personal },
        { event: '$refused', distinct_id: 'gdpr', properties: personal },
        { type: 'alias', distinct_id: 'someone', previous_id: 'gdpr', insert_id: '078-05-1120' },
        { event: '$refused', distinct_id: 'someone-else', properties: { note: 'kept' } },
      ] });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toMatchObject({ accepted: 0, dropped: [{ index: 0, reason: 'suppressed' }, { index: 1, reason: 'suppressed' }, { index: 3, reason: 'suppressed' }] });

      const kept = await samples(f);
      const text = JSON.stringify(kept);
      for (const v of ['secret@mail.example', '078-05-1120', 'gdpr', 'per_gdprbrowser']) expect(text).not.toContain(v);
      const byIndex = new Map(kept.map((k) => [k.index, k]));
      for (const i of [0, 1, 3]) expect(byIndex.get(i)).toMatchObject({ outcome: 'dropped', code: 'suppressed', item: 'null', errors: '[]', distinctId: null, anonymousId: null, previousId: null });
      expect(byIndex.get(2)).toMatchObject({ outcome: 'refused', code: 'reserved_event_name', codes: ['reserved_event_name'], item: 'null', distinctId: null });
      // Another person's refused item is kept as sent.
      expect(JSON.parse(byIndex.get(4)!.item)).toMatchObject({ distinct_id: 'someone-else', properties: { note: 'kept' } });
      // Counted all the same.
      expect(await storedCounts(f, clock.ms)).toEqual(new Map([['accepted ', 1], ['dropped suppressed', 3], ['refused reserved_event_name', 2]]));
      // Nor does the live view show what they sent.
      const [shown] = live.recent(f.sourceId);
      const suppressed = shown!.items.filter((x) => x.code === 'suppressed');
      expect(suppressed.map((i) => [i.index, i.event, i.distinctId])).toEqual([[0, null, null], [1, null, null], [3, null, null]]);
    });

    it('a suppressed person\'s item refused for a numeric distinct_id kept its personal data: withheld as for the id as text', async () => {
      const f = await world();
      expect((await send(f, { items: [{ type: 'identify', distinct_id: '12345', properties: { plan: 'team' } }] })).statusCode).toBe(202);
      await erasePerson(f.collector.store, f.projectId, { distinctId: '12345' }, { suppress: true, now: clock.now() });
      const res = await send(f, { items: [{ event: 'later', distinct_id: 12345, properties: { email: 'secret@mail.example' } }] });
      expect(res.statusCode, res.body).toBe(400);
      const [kept] = await samples(f);
      expect(kept).toMatchObject({ outcome: 'refused', code: 'invalid_distinct_id', item: 'null', distinctId: null });
      expect(JSON.stringify(kept)).not.toContain('secret@mail.example');
    });

    it('a refused alias whose previous_id was erased survives the erasure: it goes with the person', async () => {
      const f = await world();
      await send(f, { items: [{ type: 'identify', distinct_id: 'anon-7' }, { type: 'identify', distinct_id: 'other-id' }, { type: 'alias', distinct_id: 'other-id', previous_id: 'anon-7' }] });
      await send(f, { items: [{ type: 'identify', distinct_id: 'user-42' }] });
      // anon-7's person is known by other-id too: this alias would merge two identified people.
      const res = await send(f, { items: [{ type: 'alias', distinct_id: 'user-42', previous_id: 'anon-7' }, { event: 'ok', distinct_id: 'user-42' }] });
      expect(res.json()).toMatchObject({ accepted: 1, errors: [{ index: 0, code: 'illegal_merge' }] });
      expect((await samples(f)).map((k) => [k.code, k.previousId])).toEqual([['illegal_merge', 'anon-7']]);
      await erasePerson(f.collector.store, f.projectId, { distinctId: 'anon-7' }, { suppress: false, now: clock.now() });
      expect(await samples(f)).toEqual([]);
    });

    it('a strict batch refused by the store records nothing: now counted, kept and shown as any refused batch', async () => {
      const f = await world();
      await fiveGroupTypes(f);
      const sixth = { type: 'group', group_type: 'f', group_key: 'k' };
      const res = await send(f, { items: [{ event: 'paid', distinct_id: 'u' }, sixth] }, { query: 'strict=true' });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'strict_item_invalid', errors: [{ index: 1, code: 'too_many_group_types' }] });
      await f.collector.outcomes.flush();
      expect(await storedCounts(f, clock.ms)).toEqual(new Map([['accepted ', 5], ['refused too_many_group_types', 1], ['refused strict_item_invalid', 1]]));
      expect((await samples(f)).map((k) => [k.code, k.index, JSON.parse(k.item).group_type])).toEqual([['too_many_group_types', 1, 'f']]);
      const [shown] = live.recent(f.sourceId);
      expect(shown).toMatchObject({ requestId: res.json().error.request_id, status: 400, items: [{ index: 1, outcome: 'refused', code: 'too_many_group_types' }] });
    });

    it('a strict batch whose alias the store refuses (an illegal merge) left by its own exit: now counted, kept and shown at the one exit', async () => {
      const f = await world();
      await send(f, { items: [{ type: 'identify', distinct_id: 'anon-9' }, { type: 'identify', distinct_id: 'known-9' }, { type: 'alias', distinct_id: 'known-9', previous_id: 'anon-9' }] });
      await send(f, { items: [{ type: 'identify', distinct_id: 'user-9' }] });
      const before = await storedCounts(f, clock.ms);
      // anon-9's person is known by known-9 too: this alias would merge two identified people.
      const res = await send(f, { items: [{ event: 'ok', distinct_id: 'user-9' }, { type: 'alias', distinct_id: 'user-9', previous_id: 'anon-9' }] }, { query: 'strict=true' });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'strict_item_invalid', errors: [{ index: 1, code: 'illegal_merge' }] });
      await f.collector.outcomes.flush();
      const after = await storedCounts(f, clock.ms);
      // Nothing stored (the event that passed is refused with the batch, under its code); both counted.
      expect(after.get('accepted ')).toBe(before.get('accepted '));
      expect(after.get('refused illegal_merge')).toBe(1);
      expect(after.get('refused strict_item_invalid')).toBe(1);
      expect((await samples(f)).map((k) => [k.code, k.index, k.previousId])).toEqual([['illegal_merge', 1, 'anon-9']]);
      const [shown] = live.recent(f.sourceId);
      expect(shown).toMatchObject({ requestId: res.json().error.request_id, status: 400, items: [{ index: 1, outcome: 'refused', code: 'illegal_merge' }] });
    });

    it('a batch whose only item the store refuses is answered 202 accepted: 0: now 400 all_items_invalid, counted and shown', async () => {
      const f = await world();
      await fiveGroupTypes(f);
      const res = await send(f, { items: [{ type: 'group', group_type: 'f', group_key: 'k' }] });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'all_items_invalid', errors: [{ index: 0, code: 'too_many_group_types', field: 'group_type' }] });
      await f.collector.outcomes.flush();
      expect(await storedCounts(f, clock.ms)).toEqual(new Map([['accepted ', 5], ['refused too_many_group_types', 1]]));
      expect((await samples(f)).map((k) => k.code)).toEqual(['too_many_group_types']);
      expect(live.recent(f.sourceId)[0]).toMatchObject({ status: 400, items: [{ index: 0, outcome: 'refused', code: 'too_many_group_types' }] });
      // A dry run still answers 200 with what it found; the Segment intake answers as its SDKs expect, 200.
      expect((await send(f, { items: [{ type: 'group', group_type: 'f', group_key: 'k' }] }, { query: 'validate=true' })).statusCode).toBe(200);
      const segment = await f.app.inject({
        method: 'POST',
        url: '/v1/batch',
        headers: { authorization: `Basic ${Buffer.from(`${f.key}:`).toString('base64')}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ batch: [{ type: 'group', groupId: 'k', userId: 'u', traits: { group_type: 'f' }, messageId: 'g-1' }] }),
      });
      expect(segment.statusCode, segment.body).toBe(200);
    });

    it('a strict dry run refused by the store answers strict_item_invalid, as the batch it tries would be', async () => {
      const f = await world();
      await fiveGroupTypes(f);
      const res = await send(f, { items: [{ event: 'paid', distinct_id: 'u' }, { type: 'group', group_type: 'f', group_key: 'k' }] }, { query: 'strict=true&validate=true' });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'strict_item_invalid', errors: [{ index: 1, code: 'too_many_group_types' }] });
      expect(await storedCounts(f, clock.ms)).toEqual(new Map([['accepted ', 5]]));
    });
  });
}
