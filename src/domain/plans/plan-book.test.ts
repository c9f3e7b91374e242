import { expect, it } from 'vitest';
import type { PlanStore, PlanVersionRecord } from '../../stores/port-plans.js';
import { PlanBook } from './plan-book.js';

/** A store of versions that counts its reads, and can fail. */
function versions(held: Record<string, string>) {
  let reads = 0;
  let failing = false;
  const store = {
    async getVersion(planId: string, version: number): Promise<PlanVersionRecord | null> {
      reads++;
      if (failing) throw new Error('store away');
      const rules = held[`${planId}@${version}`];
      return rules === undefined ? null : { planId, version, rules, createdAt: 0 };
    },
  } as unknown as PlanStore;
  return { store, reads: () => reads, fail: (f: boolean) => (failing = f), held };
}

const plan = (version: number | null) => ({ planId: 'pln_1', version, mode: 'enforce' as const, unplannedEvents: 'refuse' as const });

it('reads a version once, then gives it at once; a version not there yet, or a failed read, is read again', async () => {
  const s = versions({ 'pln_1@1': '[]' });
  const book = new PlanBook(s.store);
  expect(book.contextNow(plan(1))).toBeUndefined();
  expect(await book.contextFor(plan(1))).toEqual({ key: 'pln_1@1', rules: '[]', unplanned: 'refuse' });
  expect(book.contextNow(plan(1))).toEqual({ key: 'pln_1@1', rules: '[]', unplanned: 'refuse' });
  await book.contextFor(plan(1));
  expect(s.reads()).toBe(1);

  expect(await book.contextFor(plan(2))).toBeNull();
  s.held['pln_1@2'] = '[{"type":"identify","json_schema":{}}]';
  expect((await book.contextFor(plan(2)))?.key).toBe('pln_1@2');
  expect(s.reads()).toBe(3);

  s.fail(true);
  await expect(book.contextFor(plan(3))).rejects.toThrow('store away');
  s.fail(false);
  s.held['pln_1@3'] = '[]';
  expect((await book.contextFor(plan(3)))?.key).toBe('pln_1@3');
  // A plan with no version yet checks nothing.
  expect(book.contextNow(plan(null))).toBeNull();
});

it('compiles ahead each version it reads, once, whether a request or the refresh read it; the refresh reads the versions in use', async () => {
  const s = versions({ 'pln_1@1': '[]', 'pln_1@2': '[]', 'pln_2@1': '[]' });
  (s.store as { versionsInUse?: () => Promise<{ planId: string; version: number }[]> }).versionsInUse = async () => [{ planId: 'pln_1', version: 2 }, { planId: 'pln_2', version: 1 }];
  const book = new PlanBook(s.store);
  const prepared: string[] = [];
  let done = 0;
  book.prepareWith(async (p) => {
    prepared.push(p.key);
    await Promise.resolve();
    done++;
  });
  await book.contextFor(plan(1));
  await book.contextFor(plan(1));
  expect(prepared).toEqual(['pln_1@1']);
  await book.refresh();
  // The refresh waits for the versions' compiles.
  expect(prepared).toEqual(['pln_1@1', 'pln_1@2', 'pln_2@1']);
  expect(done).toBe(3);
  await book.refresh();
  expect(prepared).toHaveLength(3);
});

it('refreshes again and again until stopped, reporting a store that is away once, not every pass', async () => {
  const s = versions({});
  let calls = 0;
  let fourth!: () => void;
  const reached = new Promise<void>((resolve) => (fourth = resolve));
  (s.store as { versionsInUse?: () => Promise<{ planId: string; version: number }[]> }).versionsInUse = async () => {
    calls++;
    if (calls === 4) fourth();
    if (calls <= 3) throw new Error('store away');
    return [];
  };
  const reported: unknown[] = [];
  const stop = new PlanBook(s.store).startRefresh(0, (e) => reported.push(e));
  await reached;
  await stop();
  expect(reported).toHaveLength(1);
  const after = calls;
  await new Promise((resolve) => setImmediate(resolve));
  expect(calls).toBe(after);
});
