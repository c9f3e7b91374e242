/**
 * Conformance of a person's events found by person (sql/person-events.ts,
 * domain/people/person-events-fold.ts) on every engine: the keys folded in
 * off the request path, the events stored since read from the table, merged
 * persons followed, and keys whose events are gone never shown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import type { Collector } from '../../src/domain/collector.js';
import { erasePerson } from '../../src/domain/erasure.js';
import { foldPass } from '../../src/domain/people/person-events-fold.js';
import { MERGED_READ, PERSON_EVENTS_KEPT } from '../../src/stores/port-console.js';
import { MERGE_LEAST } from '../../src/stores/sql/person-event-runs.js';
import { expireAll, expirePersonEventKeys } from '../../src/domain/retention.js';
import type { Store } from '../../src/stores/port.js';
import { TestClock } from '../helpers/fixture.js';
import { type ItemSpec, RECEIVED_AT, ingestJob } from '../helpers/items.js';
import { STORES, type StoreUnderTest } from './stores.js';

const DAY = 86_400_000;

/** Folds until every project is caught up. */
async function foldAll(store: Store): Promise<number> {
  let folded = 0;
  for (;;) {
    const pass = await foldPass(store);
    folded += pass.folded;
    if (pass.caughtUp) return folded;
  }
}

for (const engine of STORES) {
  describe(`${engine.name}: a person's events by person`, () => {
    let sut: StoreUnderTest;
    let collector: Collector;
    let second: Collector;
    let admin: ReturnType<typeof createAdmin>;

    beforeAll(async () => {
      sut = await engine.make();
      collector = sut.collector;
      second = await sut.another();
      admin = createAdmin(collector.store, new TestClock(RECEIVED_AT).now);
    });
    afterAll(async () => sut?.cleanup());

    async function project(name: string) {
      const org = await admin.createOrg(name);
      const projectId = (await admin.createProject({ name, orgId: org.id })).id;
      const sourceId = (await admin.createSource({ projectId, name: 's' })).id;
      const keyId = (await admin.createKey(sourceId)).id;
      const ingest = (items: ItemSpec[]) => collector.ingest(ingestJob(items, { projectId, sourceId, keyId, receivedAt: RECEIVED_AT }));
      const shown = async (personId: string, limit = 20, by: Collector = collector) => {
        const r = await by.listings.personEvents(projectId, personId, limit);
        return { events: r.events.map((e) => e.event), complete: r.complete, personIds: [...new Set(r.events.map((e) => e.personId))] };
      };
      const personOf = async (distinctId: string) => (await collector.store.findPerson(projectId, { distinctId }))!.id;
      // Person ids are unique across projects: counting by person is this project's.
      const keysOf = (personId: string) => sut.countRows('person_events', 'person_id', personId);
      const runs = () => sut.countRows('person_event_runs', 'project_id', projectId);
      return { projectId, ingest, shown, personOf, keysOf, runs };
    }

    it('finds a person\'s events across several runs of keys, and an erasure removes its keys from every one', async () => {
      const p = await project('runs');
      const at = RECEIVED_AT - DAY;
      for (let i = 0; i < MERGE_LEAST - 1; i++) {
        await p.ingest([{ distinctId: 'rae', event: `e${i}`, timestamp: at + i }, { distinctId: 'ray', event: `r${i}`, timestamp: at + i }]);
        await foldAll(collector.store);
      }
      // A run a fold step, too few to merge.
      expect(await p.runs()).toBe(MERGE_LEAST - 1);
      const rae = await p.personOf('rae');
      const ray = await p.personOf('ray');
      const newest = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${n - 1 - i}`);
      expect(await p.keysOf(rae)).toBe(MERGE_LEAST - 1);
      expect(await p.shown(rae)).toEqual({ events: newest('e', MERGE_LEAST - 1), complete: true, personIds: [rae] });
      expect((await p.shown(rae, 2, second)).events).toEqual(newest('e', MERGE_LEAST - 1).slice(0, 2));
      await erasePerson(collector.store, p.projectId, { distinctId: 'rae' }, { suppress: false, now: RECEIVED_AT });
      expect(await p.keysOf(rae)).toBe(0);
      expect(await p.keysOf(ray)).toBe(MERGE_LEAST - 1);
      expect((await p.shown(ray)).events).toEqual(newest('r', MERGE_LEAST - 1));
    });

    it('merges runs as they pile up: after many fold steps a project keeps few, and every event is still found', async () => {
      const p = await project('piling');
      const at = RECEIVED_AT - DAY;
      let most = 0;
      for (let i = 0; i < 40; i++) {
        await p.ingest([{ distinctId: `u_${i % 7}`, event: `e${i}`, timestamp: at + i }]);
        await foldAll(collector.store);
        most = Math.max(most, await p.runs());
      }
      // 40 runs written, all small: merged whenever MERGE_LEAST of them exist.
      expect(most).toBe(MERGE_LEAST - 1);
      expect(await p.keysOf(await p.personOf('u_0'))).toBe(6);
      expect((await p.shown(await p.personOf('u_0'))).events).toEqual(['e35', 'e28', 'e21', 'e14', 'e7', 'e0']);
      expect((await p.shown(await p.personOf('u_6'), 2)).events).toEqual(['e34', 'e27']);
    });

    it('a run keeps each person\'s newest PERSON_EVENTS_KEPT keys, and so does a merge of runs', async () => {
      const p = await project('heavy');
      const at = RECEIVED_AT - DAY;
      await p.ingest(Array.from({ length: PERSON_EVENTS_KEPT + 10 }, (_, i) => ({ distinctId: 'hal', event: `a${i}`, timestamp: at + i })));
      await foldAll(collector.store);
      const hal = await p.personOf('hal');
      const newest = (prefix: string, from: number, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${from - i}`);
      expect(await p.keysOf(hal)).toBe(PERSON_EVENTS_KEPT);
      expect((await p.shown(hal)).events).toEqual(newest('a', PERSON_EVENTS_KEPT + 9, PERSON_EVENTS_KEPT));
      // MERGE_LEAST - 1 more runs of 15 keys each: MERGE_LEAST runs, merged into one.
      for (let r = 0; r < MERGE_LEAST - 1; r++) {
        await p.ingest(Array.from({ length: 15 }, (_, i) => ({ distinctId: 'hal', event: `b${r}_${i}`, timestamp: at + 100 * (r + 1) + i })));
        await foldAll(collector.store);
      }
      expect(await p.runs()).toBe(1);
      expect(await p.keysOf(hal)).toBe(PERSON_EVENTS_KEPT);
      expect((await p.shown(hal)).events).toEqual([...newest(`b${MERGE_LEAST - 2}_`, 14, 15), ...newest(`b${MERGE_LEAST - 3}_`, 14, 5)]);
    });

    it('fault: a person with 2 old events, then 25,000 newer events of others, still shows its 2, folded or not', async () => {
      const p = await project('quiet');
      const at = RECEIVED_AT - DAY;
      await p.ingest([{ distinctId: 'quiet_one', event: 'Signed up', timestamp: at }, { distinctId: 'quiet_one', event: 'Upgraded', timestamp: at + 1 }]);
      for (let b = 0; b < 25; b++) {
        await p.ingest(Array.from({ length: 1000 }, (_, i) => ({ distinctId: `busy_${i % 250}`, event: 'Viewed', timestamp: at + 10 + b * 1000 + i })));
      }
      const quiet = await p.personOf('quiet_one');
      // Nothing folded yet: all of it read past the mark, from the events table.
      expect(await p.shown(quiet)).toEqual({ events: ['Upgraded', 'Signed up'], complete: true, personIds: [quiet] });
      // Keys written: each run keeps a busy person's newest PERSON_EVENTS_KEPT only.
      expect(await foldAll(collector.store)).toBeGreaterThan(0);
      // Folded: found by the keys alone (the mark is past them), on another server too.
      expect(await p.shown(quiet, 20, second)).toEqual({ events: ['Upgraded', 'Signed up'], complete: true, personIds: [quiet] });
      expect((await p.shown(await p.personOf('busy_7'), 3)).events).toEqual(['Viewed', 'Viewed', 'Viewed']);
      // A fold with nothing new folds nothing.
      expect(await foldAll(collector.store)).toBe(0);
    });

    it('a new project\'s fold starts past the events stored before it was made, none of which are its own', async () => {
      const before = await project('before');
      await before.ingest(Array.from({ length: 50 }, (_, i) => ({ distinctId: `x_${i}` })));
      const fresh = await project('fresh');
      // A window of one seq: from 0, it would have 50 and more to read before reaching its head.
      expect(await collector.store.foldPersonEvents(fresh.projectId, 1)).toMatchObject({ folded: 0, more: false });
      await fresh.ingest([{ distinctId: 'first', event: 'hello' }]);
      expect(await collector.store.foldPersonEvents(fresh.projectId, 1)).toMatchObject({ folded: 1, more: false });
      expect((await fresh.shown(await fresh.personOf('first'))).events).toEqual(['hello']);
    });

    it('shows the events stored since the last fold beside those folded, newest first', async () => {
      const p = await project('tail');
      const at = RECEIVED_AT - DAY;
      await p.ingest([{ distinctId: 'ann', event: 'old', timestamp: at }]);
      await foldAll(collector.store);
      await p.ingest([{ distinctId: 'ann', event: 'new', timestamp: at + 5 }, { distinctId: 'bob', event: 'other', timestamp: at + 6 }]);
      const ann = await p.personOf('ann');
      expect((await p.shown(ann)).events).toEqual(['new', 'old']);
      // A step that folds part of what arrived: the rest is still read from the table, nothing twice.
      await collector.store.foldPersonEvents(p.projectId, 1);
      expect((await p.shown(ann)).events).toEqual(['new', 'old']);
      await foldAll(collector.store);
      expect((await p.shown(ann)).events).toEqual(['new', 'old']);
      expect((await p.shown(ann, 1)).events).toEqual(['new']);
    });

    it('follows merges: the events of persons merged into the person, folded and not, are its own', async () => {
      const p = await project('merged');
      const at = RECEIVED_AT - DAY;
      const browser = `per_${'m'.repeat(22)}`;
      await p.ingest([{ distinctId: 'mia', event: 'server before', timestamp: at }, { anonymousId: browser, event: 'web before', timestamp: at + 1 }]);
      await foldAll(collector.store);
      const merged = await admin.browserIdentify(p.projectId, browser, 'mia');
      await p.ingest([{ distinctId: 'mia', event: 'after', timestamp: at + 2 }]);
      expect(await p.shown(merged.id)).toEqual({ events: ['after', 'web before', 'server before'], complete: true, personIds: [merged.id] });
      await foldAll(collector.store);
      expect(await p.shown(merged.id)).toEqual({ events: ['after', 'web before', 'server before'], complete: true, personIds: [merged.id] });
    });

    it('says its events may be incomplete when more persons were merged into it than a read looks in', async () => {
      const p = await project('many');
      const browser = `per_${'n'.repeat(22)}`;
      await p.ingest([{ anonymousId: browser, event: 'web' }, ...Array.from({ length: MERGED_READ }, (_, i) => ({ distinctId: `m_${i}`, event: 'server' }))]);
      for (let i = 0; i < MERGED_READ - 1; i++) await admin.browserIdentify(p.projectId, browser, `m_${i}`);
      expect((await p.shown(browser, 50)).events).toHaveLength(MERGED_READ);
      expect((await p.shown(browser)).complete).toBe(true);
      await admin.browserIdentify(p.projectId, browser, `m_${MERGED_READ - 1}`);
      expect(await p.shown(browser, 50)).toMatchObject({ complete: false });
    });

    it('never shows an event that is gone: expired events vanish though their keys were folded, retention sweeps their keys, an erasure drops its own', async () => {
      const p = await project('gone');
      const old = RECEIVED_AT - 500 * DAY;
      await p.ingest([
        { distinctId: 'eve', event: 'expired', timestamp: old },
        { distinctId: 'eve', event: 'kept', timestamp: RECEIVED_AT - DAY },
        { distinctId: 'zed', event: 'erased', timestamp: RECEIVED_AT - DAY },
      ]);
      await foldAll(collector.store);
      const eve = await p.personOf('eve');
      const zed = await p.personOf('zed');
      expect((await p.shown(eve)).events).toEqual(['kept', 'expired']);
      await expireAll(collector.store, RECEIVED_AT);
      expect((await p.shown(eve)).events).toEqual(['kept']);

      const keysOf = p.keysOf;
      // Retention's sweep of the keys, a person or so a step: the expired event's key goes, the rest stay.
      expect(await keysOf(eve)).toBe(2);
      expect(await expirePersonEventKeys(collector.store, RECEIVED_AT, { batch: 1 })).toBeGreaterThanOrEqual(1);
      expect(await keysOf(eve)).toBe(1);
      expect(await keysOf(zed)).toBe(1);
      expect((await p.shown(eve)).events).toEqual(['kept']);
      await erasePerson(collector.store, p.projectId, { distinctId: 'zed' }, { suppress: false, now: RECEIVED_AT });
      expect(await keysOf(zed)).toBe(0);
      expect((await p.shown(zed)).events).toEqual([]);
      expect((await p.shown(eve)).events).toEqual(['kept']);
    });
  });
}
