/**
 * What became of every item, on every engine: counts add up across servers,
 * samples stay within their bounds, follow retention and person erasure.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import type { Collector } from '../../src/domain/collector.js';
import { erasePerson } from '../../src/domain/erasure.js';
import { expireSamples } from '../../src/domain/retention.js';
import { type EventOutcomeCount, type KeptSample, sampleBytes } from '../../src/stores/port-outcomes.js';
import { TestClock } from '../helpers/fixture.js';
import { RECEIVED_AT, ingestJob } from '../helpers/items.js';
import { STORES, type StoreUnderTest } from './stores.js';

const MINUTE = RECEIVED_AT - (RECEIVED_AT % 60_000);
const BOUNDS = { keepPerCode: 100, projectBytes: 1024 * 1024 };

function sample(projectId: string, sourceId: string, code: string, n: number, over: Partial<KeptSample> = {}): KeptSample {
  return {
    projectId, sourceId, outcome: 'refused', code, codes: [code], errors: '[]', item: JSON.stringify({ event: `e${n}` }), cut: false,
    receivedAt: RECEIVED_AT + n, requestId: `req_${n}`, index: 0, distinctId: null, anonymousId: null, previousId: null, ...over,
  };
}

for (const engine of STORES) {
  describe(`${engine.name}: item outcomes`, () => {
    let sut: StoreUnderTest;
    let collector: Collector;
    let admin: ReturnType<typeof createAdmin>;
    let orgId: string;

    beforeAll(async () => {
      sut = await engine.make();
      collector = sut.collector;
      admin = createAdmin(collector.store, new TestClock(RECEIVED_AT).now);
      orgId = (await admin.createOrg('Acme')).id;
    });
    afterAll(async () => sut?.cleanup());

    async function world() {
      const projectId = (await admin.createProject({ name: 'p', orgId, apiEnabled: true })).id;
      const sourceId = (await admin.createSource({ projectId, name: 's' })).id;
      return { projectId, sourceId };
    }

    it("two servers' counts of the same minute add up, by outcome and code", async () => {
      const { projectId, sourceId } = await world();
      const other = await sut.another();
      const count = { projectId, sourceId, minute: MINUTE, outcome: 'refused' as const, code: 'invalid_event_name', count: 3 };
      await Promise.all([
        collector.store.outcomes.addOutcomes([count, { ...count, outcome: 'accepted', code: '', count: 10 }], [], BOUNDS),
        other.store.outcomes.addOutcomes([{ ...count, count: 4 }, { ...count, outcome: 'accepted', code: '', count: 5 }], [], BOUNDS),
      ]);
      const rows = await collector.store.outcomes.outcomeCounts({ sourceId, since: MINUTE - 3_600_000, until: MINUTE + 60_000, bucketMs: 3_600_000 });
      expect(rows.map((r) => [r.outcome, r.code, r.count])).toEqual([['accepted', '', 15], ['refused', 'invalid_event_name', 7]]);
      expect(rows[0]!.at).toBe(MINUTE - (MINUTE % 3_600_000));
      const totals = await collector.store.outcomes.projectOutcomeTotals([projectId], MINUTE - 1);
      expect(Object.fromEntries(totals.get(projectId)!)).toEqual({ accepted: 15, refused: 7 });
    });

    it("a tracking plan's counts by event add up across servers, hold a source's hour to its cap of events (the rest under (other)), and follow retention", async () => {
      const { projectId, sourceId } = await world();
      const other = await sut.another();
      const HOUR = RECEIVED_AT - (RECEIVED_AT % 3_600_000);
      const row = (event: string, count: number, over: Partial<EventOutcomeCount> = {}): EventOutcomeCount => ({ projectId, sourceId, hour: HOUR, outcome: 'refused', code: 'plan_violation', event, count, ...over });
      const read = async (since = HOUR, until = HOUR + 3_600_000) =>
        (await collector.store.outcomes.eventOutcomeCounts({ sourceId, since, until })).map((r) => [r.outcome, r.code, r.event, r.count]);
      await collector.store.outcomes.addOutcomes([], [], BOUNDS, { rows: [row('a', 2), row('b', 1), row('a', 1, { outcome: 'warned' })], perHour: 3 });
      await other.store.outcomes.addOutcomes([], [], BOUNDS, { rows: [row('a', 5), row('c', 1, { code: 'unplanned_event' })], perHour: 3 });
      expect(await read()).toEqual([['refused', 'plan_violation', 'a', 7], ['refused', 'plan_violation', 'b', 1], ['refused', 'unplanned_event', 'c', 1], ['warned', 'plan_violation', 'a', 1]]);
      // The hour holds 3 events: a new one goes under (other), an event it holds still counts under its own name.
      await collector.store.outcomes.addOutcomes([], [], BOUNDS, { rows: [row('d', 4), row('e', 1), row('b', 1)], perHour: 3 });
      expect(await read()).toEqual([
        ['refused', 'plan_violation', '(other)', 5], ['refused', 'plan_violation', 'a', 7], ['refused', 'plan_violation', 'b', 2],
        ['refused', 'unplanned_event', 'c', 1], ['warned', 'plan_violation', 'a', 1],
      ]);
      // The next hour has room of its own; a project's sources are read together.
      await collector.store.outcomes.addOutcomes([], [], BOUNDS, { rows: [row('d', 1, { hour: HOUR + 3_600_000 })], perHour: 3 });
      expect((await collector.store.outcomes.eventOutcomeCounts({ projectId, since: HOUR, until: HOUR + 2 * 3_600_000 })).find((r) => r.event === 'd')).toEqual({ sourceId, outcome: 'refused', code: 'plan_violation', event: 'd', count: 1 });
      await admin.updateProject(projectId, { retentionDays: 1 });
      await collector.store.outcomes.expireCounts([{ projectId, before: HOUR + 3_600_000 }]);
      expect(await read(0, HOUR + 2 * 3_600_000)).toEqual([['refused', 'plan_violation', 'd', 1]]);
    });

    it('keeps the newest samples of each source and code, and no more bytes per project than its bound', async () => {
      const { projectId, sourceId } = await world();
      const many = Array.from({ length: 130 }, (_, n) => sample(projectId, sourceId, 'invalid_event_name', n));
      await collector.store.outcomes.addOutcomes([], many.slice(0, 70), BOUNDS);
      await collector.store.outcomes.addOutcomes([], [...many.slice(70), sample(projectId, sourceId, 'reserved_property', 999)], BOUNDS);
      const kept = await collector.store.outcomes.samples({ sourceId, code: 'invalid_event_name', limit: 1000 });
      expect(kept.map((s) => s.requestId)).toEqual(many.slice(30).reverse().map((s) => s.requestId));
      expect(await collector.store.outcomes.samples({ sourceId, code: 'reserved_property', limit: 10 })).toHaveLength(1);

      const big = (n: number) => sample(projectId, sourceId, 'properties_too_large', 2000 + n, { item: 'x'.repeat(16 * 1024), cut: true });
      const bound = 4 * sampleBytes(big(0));
      await collector.store.outcomes.addOutcomes([], Array.from({ length: 10 }, (_, n) => big(n)), { keepPerCode: 100, projectBytes: bound });
      const left = await collector.store.outcomes.samples({ sourceId, limit: 1000 });
      expect(left.reduce((n, s) => n + sampleBytes(s), 0)).toBeLessThanOrEqual(bound);
      // The newest stay: the four newest cut items fill the bound.
      expect(left.map((s) => s.requestId)).toEqual(['req_2009', 'req_2008', 'req_2007', 'req_2006']);
      expect(left[0]).toMatchObject({ cut: true, outcome: 'refused', codes: ['properties_too_large'] });
    });

    it("samples go with their project's retention, 30 days at most; counts with the project's retention", async () => {
      const { projectId, sourceId } = await world();
      await collector.store.outcomes.addOutcomes([], [sample(projectId, sourceId, 'invalid_event_name', 1), sample(projectId, sourceId, 'invalid_event_name', 2, { receivedAt: RECEIVED_AT + 20 * 86_400_000 })], BOUNDS);
      await expireSamples(collector.store, collector.store.outcomes, RECEIVED_AT + 31 * 86_400_000);
      expect((await collector.store.outcomes.samples({ sourceId, limit: 10 })).map((s) => s.requestId)).toEqual(['req_2']);
      await admin.updateProject(projectId, { retentionDays: 5 });
      const count = { projectId, sourceId, minute: MINUTE, outcome: 'accepted' as const, code: '', count: 1 };
      await collector.store.outcomes.addOutcomes([count, { ...count, minute: MINUTE + 10 * 86_400_000 }], [], BOUNDS);
      await expireSamples(collector.store, collector.store.outcomes, RECEIVED_AT + 14 * 86_400_000);
      expect((await collector.store.outcomes.samples({ sourceId, limit: 10 })).map((s) => s.requestId)).toEqual(['req_2']);
      // Counts follow the project's own retention.
      const counts = await collector.store.outcomes.outcomeCounts({ sourceId, since: 0, until: RECEIVED_AT + 30 * 86_400_000, bucketMs: 60_000 });
      expect(counts.map((r) => r.at)).toEqual([MINUTE + 10 * 86_400_000]);
      await expireSamples(collector.store, collector.store.outcomes, RECEIVED_AT + 26 * 86_400_000);
      expect(await collector.store.outcomes.samples({ sourceId, limit: 10 })).toEqual([]);
    });

    it("erasing a person removes the samples that named it, and no one else's", async () => {
      const { projectId, sourceId } = await world();
      const keyId = (await admin.createKey(sourceId)).id;
      await collector.ingest(ingestJob([{ type: 'identify', distinctId: 'gone' }], { projectId, sourceId, keyId }));
      const person = (await collector.store.findPerson(projectId, { distinctId: 'gone' }))!;
      await collector.store.outcomes.addOutcomes([], [
        sample(projectId, sourceId, 'invalid_event_name', 1, { distinctId: 'gone' }),
        sample(projectId, sourceId, 'invalid_event_name', 2, { anonymousId: person.id }),
        sample(projectId, sourceId, 'invalid_event_name', 3, { distinctId: 'stays' }),
      ], BOUNDS);
      expect(await erasePerson(collector.store, projectId, { distinctId: 'gone' }, { suppress: false, now: RECEIVED_AT })).toMatchObject({ distinctIds: ['gone'] });
      expect((await collector.store.outcomes.samples({ sourceId, limit: 10 })).map((s) => s.requestId)).toEqual(['req_3']);
    });

    it('kept refused samples are not bounded in bytes (regression): their errors count against the project\'s bound, not only their item', async () => {
      const { projectId, sourceId } = await world();
      // A small item with 100 KB of errors: once counted as its 20 bytes of item.
      const heavy = (n: number) => sample(projectId, sourceId, 'reserved_property', n, { errors: JSON.stringify([{ index: 0, message: 'm'.repeat(100_000) }]) });
      const bound = 3 * sampleBytes(heavy(0));
      await collector.store.outcomes.addOutcomes([], Array.from({ length: 10 }, (_, n) => heavy(n)), { keepPerCode: 100, projectBytes: bound });
      const left = await collector.store.outcomes.samples({ sourceId, limit: 100 });
      expect(left.map((s) => s.requestId)).toEqual(['req_9', 'req_8', 'req_7']);
      expect(left.reduce((n, s) => n + sampleBytes(s), 0)).toBeLessThanOrEqual(bound);
    });

    it("a suppressed person's later items are kept as samples (regression): a sample naming a suppressed id is stored withheld", async () => {
      const { projectId, sourceId } = await world();
      const keyId = (await admin.createKey(sourceId)).id;
      await collector.ingest(ingestJob([{ type: 'identify', distinctId: 'gone' }], { projectId, sourceId, keyId }));
      const person = (await collector.store.findPerson(projectId, { distinctId: 'gone' }))!;
      await erasePerson(collector.store, projectId, { distinctId: 'gone' }, { suppress: true, now: RECEIVED_AT });
      const personal = JSON.stringify({ event: '$x', distinct_id: 'gone', properties: { ssn: '078-05-1120' } });
      const errors = JSON.stringify([{ index: 0, code: 'reserved_event_name', message: 'about gone' }]);
      await collector.store.outcomes.addOutcomes([], [
        sample(projectId, sourceId, 'reserved_event_name', 1, { distinctId: 'gone', item: personal, errors }),
        sample(projectId, sourceId, 'reserved_event_name', 2, { anonymousId: person.id, item: personal, errors }),
        sample(projectId, sourceId, 'illegal_merge', 3, { distinctId: 'stays', previousId: 'gone', item: personal, errors }),
        sample(projectId, sourceId, 'reserved_event_name', 4, { distinctId: 'stays', item: personal, errors }),
      ], BOUNDS);
      const kept = new Map((await collector.store.outcomes.samples({ sourceId, limit: 10 })).map((s) => [s.requestId, s]));
      for (const id of ['req_1', 'req_2', 'req_3']) {
        expect(kept.get(id)).toMatchObject({ item: 'null', errors: '[]', cut: false, distinctId: null, anonymousId: null, previousId: null });
      }
      expect(kept.get('req_3')).toMatchObject({ outcome: 'refused', code: 'illegal_merge', codes: ['illegal_merge'] });
      expect(kept.get('req_4')).toMatchObject({ item: personal, errors, distinctId: 'stays' });
    });

    it('a refused alias whose previous_id was erased survives the erasure (regression): erasing a person removes samples by previous_id too', async () => {
      const { projectId, sourceId } = await world();
      const keyId = (await admin.createKey(sourceId)).id;
      await collector.ingest(ingestJob([{ type: 'identify', distinctId: 'anon_7f3' }], { projectId, sourceId, keyId }));
      await collector.store.outcomes.addOutcomes([], [
        sample(projectId, sourceId, 'illegal_merge', 1, { distinctId: 'user_42', previousId: 'anon_7f3' }),
        sample(projectId, sourceId, 'illegal_merge', 2, { distinctId: 'user_42', previousId: 'someone' }),
      ], BOUNDS);
      await erasePerson(collector.store, projectId, { distinctId: 'anon_7f3' }, { suppress: false, now: RECEIVED_AT });
      expect((await collector.store.outcomes.samples({ sourceId, limit: 10 })).map((s) => s.requestId)).toEqual(['req_2']);
    });
  });
}
