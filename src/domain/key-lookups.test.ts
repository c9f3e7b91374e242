import { afterEach, describe, expect, it, vi } from 'vitest';
import { KeyLookupTimeout, KeyLookups } from './key-lookups.js';

/** A lookup whose statements the test finishes by hand; each answers with its own number. */
function manual(known: Set<string> = new Set(['a', 'b', 'c']), maxWaitMs?: number) {
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
    maxWaitMs,
  );
  return { lookups, calls };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('KeyLookups', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

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

  it('refuses a lookup that has no answer in time, and drops one not sent yet from the queue', async () => {
    vi.useFakeTimers();
    const { lookups, calls } = manual(undefined, 1000);
    const inFlight = lookups.get('a');
    const queued = lookups.get('b');
    const early = expect(inFlight).rejects.toBeInstanceOf(KeyLookupTimeout);
    const late = expect(queued).rejects.toThrow('no answer within 1000 ms');
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await early;
    await late;
    // The hung statement answers at last: nobody waits for it, and b is not sent.
    calls[0]!.finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    const next = lookups.get('c');
    expect(calls.map((c) => c.keys)).toEqual([['a'], ['c']]);
    calls[1]!.finish();
    expect(await next).toBe('c@2');
  });

  it('fails the lookups of a statement that throws before it is sent', async () => {
    let n = 0;
    const lookups = new KeyLookups<string>((keys) => {
      if (n++ === 0) throw new Error('no connection');
      return Promise.resolve(new Map(keys.map((k) => [k, k])));
    });
    await expect(lookups.get('a')).rejects.toThrow('no connection');
    expect(await lookups.get('b')).toBe('b');
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
