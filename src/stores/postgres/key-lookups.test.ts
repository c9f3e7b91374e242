import { describe, expect, it } from 'vitest';
import { KeyLookups } from './key-lookups.js';

/** A lookup whose statements the test finishes by hand; each answers with its own number. */
function manual(known: Set<string> = new Set(['a', 'b', 'c'])) {
  const calls: { keys: string[]; finish: () => void; fail: (e: Error) => void }[] = [];
  const lookups = new KeyLookups<string>(
    (keys) =>
      new Promise((resolve, reject) => {
        const n = calls.length + 1;
        calls.push({
          keys,
          finish: () => resolve(new Map(keys.filter((k) => known.has(k)).map((k) => [k, `${k}@${n}`]))),
          fail: reject,
        });
      }),
  );
  return { lookups, calls };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('KeyLookups', () => {
  it('sends a lookup at once when none is in flight', async () => {
    const { lookups, calls } = manual();
    const a = lookups.get('a');
    expect(calls.map((c) => c.keys)).toEqual([['a']]);
    calls[0]!.finish();
    expect(await a).toBe('a@1');
  });

  it('answers what is asked during a lookup from the next one, never from the one in flight', async () => {
    const { lookups, calls } = manual();
    const first = lookups.get('a');
    // Asked after the first statement left: a change committed in between must be seen.
    const later = [lookups.get('a'), lookups.get('b'), lookups.get('a'), lookups.get('zz')];
    expect(calls).toHaveLength(1);
    calls[0]!.finish();
    expect(await first).toBe('a@1');
    await tick();
    expect(calls.map((c) => c.keys)).toEqual([['a'], ['a', 'b', 'zz']]);
    calls[1]!.finish();
    expect(await Promise.all(later)).toEqual(['a@2', 'b@2', 'a@2', undefined]);
  });

  it('fails only the lookups of the statement that failed', async () => {
    const { lookups, calls } = manual();
    const first = lookups.get('a');
    const second = lookups.get('b');
    calls[0]!.fail(new Error('database away'));
    await expect(first).rejects.toThrow('database away');
    await tick();
    calls[1]!.finish();
    expect(await second).toBe('b@2');
    // And the next request starts a statement of its own again.
    const third = lookups.get('c');
    expect(calls).toHaveLength(3);
    calls[2]!.finish();
    expect(await third).toBe('c@3');
  });

  it('takes at most 256 distinct keys a statement', async () => {
    const keys = Array.from({ length: 600 }, (_, i) => `k${i}`);
    const { lookups, calls } = manual(new Set(keys));
    const first = lookups.get('k0');
    const rest = keys.map((k) => lookups.get(k));
    calls[0]!.finish();
    await first;
    for (let i = 1; i <= 3; i++) {
      await tick();
      calls[i]!.finish();
    }
    const answers = await Promise.all(rest);
    expect(calls.map((c) => c.keys.length)).toEqual([1, 256, 256, 88]);
    expect(answers[599]).toBe('k599@4');
    expect(answers[0]).toBe('k0@2');
  });
});
