import { afterEach, beforeEach, expect, it } from 'vitest';
import { SqliteStore } from '../../stores/sqlite/sqlite-store.js';
import type { OutcomeStore } from '../../stores/port-outcomes.js';
import { tempDir } from '../../../test/helpers/fixture.js';
import { OutcomeLedger, type SampleInput } from './ledger.js';

const T = Date.UTC(2026, 10, 22, 12, 0, 30);
let tmp: ReturnType<typeof tempDir>;
let store: SqliteStore;
beforeEach(() => {
  tmp = tempDir('inlet-ledger-');
  store = SqliteStore.open(tmp.dir);
});
afterEach(async () => {
  await store.close();
  tmp.remove();
});

const counts = (refused: Record<string, number> = {}, accepted = 0) => ({ accepted, duplicate: 0, dropped: new Map(), refused: new Map(Object.entries(refused)) });
const sample = (n: number, bytes = 10): SampleInput => ({
  outcome: 'refused', code: 'invalid_event_name', codes: ['invalid_event_name'], errors: '[]', item: JSON.stringify({ e: 'x'.repeat(bytes), n }),
  cut: false, index: n, distinctId: null, anonymousId: null, previousId: null,
});
const answer = (over: Partial<Parameters<OutcomeLedger['record']>[0]> = {}) => ({ projectId: 'prj_1', sourceId: 'src_1', requestId: 'req_1', receivedAt: T, counts: counts(), samples: [], ...over });

async function stored(): Promise<Record<string, number>> {
  const rows = await store.outcomes.outcomeCounts({ sourceId: 'src_1', since: T - 3_600_000, until: T + 3_600_000, bucketMs: 60_000 });
  return Object.fromEntries(rows.map((r) => [`${new Date(r.at).toISOString().slice(11, 16)} ${r.outcome} ${r.code}`, r.count]));
}

it('sums requests per minute, outcome and code, and writes them when asked and when stopped', async () => {
  const ledger = new OutcomeLedger(store.outcomes, { flushMs: 60_000 });
  ledger.record(answer({ counts: counts({ invalid_event_name: 2 }, 3) }));
  ledger.record(answer({ counts: counts({ invalid_event_name: 1 }, 1) }));
  ledger.record(answer({ receivedAt: T + 60_000, counts: counts({}, 5) }));
  await ledger.flush();
  expect(await stored()).toEqual({ '12:00 accepted ': 4, '12:00 refused invalid_event_name': 3, '12:01 accepted ': 5 });
  ledger.record(answer({ counts: counts({}, 1) }));
  await ledger.stop();
  expect((await stored())['12:00 accepted ']).toBe(5);
});

it('a write that failed goes with the next one, nothing lost or counted twice', async () => {
  let fail = true;
  const failing: OutcomeStore = Object.assign(Object.create(store.outcomes) as OutcomeStore, {
    addOutcomes: (...args: Parameters<OutcomeStore['addOutcomes']>) => (fail ? Promise.reject(new Error('down')) : store.outcomes.addOutcomes(...args)),
  });
  const errors: unknown[] = [];
  const ledger = new OutcomeLedger(failing, { flushMs: 60_000, onError: (e) => errors.push(e) });
  ledger.record(answer({ counts: counts({}, 2), samples: [sample(1)] }));
  await ledger.flush();
  expect(errors).toHaveLength(1);
  fail = false;
  ledger.record(answer({ counts: counts({}, 1) }));
  await ledger.stop();
  expect(await stored()).toEqual({ '12:00 accepted ': 3 });
  expect(await store.outcomes.samples({ sourceId: 'src_1', limit: 10 })).toHaveLength(1);
});

it('samples waiting are bounded: the newest of each code, and no more bytes than allowed in all', async () => {
  // Room for two of the large samples, everything they store counted (sampleBytes), not three.
  const ledger = new OutcomeLedger(store.outcomes, { flushMs: 60_000, bounds: { keepPerCode: 5 }, pendingBytes: 2200 });
  ledger.record(answer({ samples: Array.from({ length: 8 }, (_, n) => sample(n)) }));
  ledger.record(answer({ samples: [sample(100, 900), sample(101, 900), sample(102, 900)] }));
  expect(ledger.pendingSampleBytes).toBeLessThanOrEqual(2200);
  await ledger.stop();
  const kept = await store.outcomes.samples({ sourceId: 'src_1', limit: 100 });
  expect(kept.map((s) => s.index)).toEqual([102, 101]);
});

it('a SIGKILL right after a burst loses the ledger\'s last refusal counts (regression): a request that refused items is written without waiting for the timer, one write for a burst', async () => {
  const writes: { counts: number; samples: number }[] = [];
  let wrote: () => void = () => {};
  const watched: OutcomeStore = Object.assign(Object.create(store.outcomes) as OutcomeStore, {
    addOutcomes: async (...args: Parameters<OutcomeStore['addOutcomes']>) => {
      await store.outcomes.addOutcomes(...args);
      writes.push({ counts: args[0].reduce((n, c) => n + c.count, 0), samples: args[1].length });
      wrote();
    },
  });
  const written = () => new Promise<void>((resolve) => (wrote = resolve));
  // The timer alone would write in an hour.
  const ledger = new OutcomeLedger(watched, { flushMs: 3_600_000 });
  const first = written();
  for (let i = 0; i < 200; i++) ledger.count('prj_1', 'src_1', T, 'refused', 'rate_limited', 1);
  await first;
  expect(writes).toEqual([{ counts: 200, samples: 0 }]);
  expect(await stored()).toEqual({ '12:00 refused rate_limited': 200 });

  const second = written();
  ledger.record(answer({ counts: counts({ invalid_event_name: 1 }), samples: [sample(1)] }));
  await second;
  expect(writes.at(-1)).toEqual({ counts: 1, samples: 1 });
  expect(await stored()).toEqual({ '12:00 refused rate_limited': 200, '12:00 refused invalid_event_name': 1 });
  await ledger.stop();
});

it("counts a plan's items by event, holding a source's hour to its cap of events before they reach the store: a sender naming new events adds to (other)", async () => {
  const ledger = new OutcomeLedger(store.outcomes, { flushMs: 60_000, eventsPerHour: 2 });
  for (const event of ['a', 'b', 'c', 'd', 'a']) ledger.countEvent('prj_1', 'src_1', T, 'refused', 'unplanned_event', event, 1);
  ledger.countEvent('prj_1', 'src_1', T, 'warned', 'plan_violation', 'e', 2);
  // Another hour has room of its own.
  ledger.countEvent('prj_1', 'src_1', T + 3_600_000, 'refused', 'unplanned_event', 'c', 1);
  await ledger.stop();
  const hour = T - (T % 3_600_000);
  const rows = await store.outcomes.eventOutcomeCounts({ sourceId: 'src_1', since: hour, until: hour + 3_600_000 });
  expect(rows.map((r) => [r.outcome, r.code, r.event, r.count])).toEqual([
    ['refused', 'unplanned_event', '(other)', 2],
    ['refused', 'unplanned_event', 'a', 2],
    ['refused', 'unplanned_event', 'b', 1],
    ['warned', 'plan_violation', '(other)', 2],
  ]);
  const next = await store.outcomes.eventOutcomeCounts({ sourceId: 'src_1', since: hour + 3_600_000, until: hour + 2 * 3_600_000 });
  expect(next.map((r) => r.event)).toEqual(['c']);
});
