import { describe, expect, it, vi } from 'vitest';
import { LiveStreams } from './live-streams.js';

describe('LiveStreams', () => {
  it('caps views per session, then per server; a forgotten view frees its place', () => {
    const streams = new LiveStreams(3, 2, 10, async () => true);
    const forgetA = streams.open('a', 'ua', () => undefined);
    expect(typeof forgetA).toBe('function');
    streams.open('a', 'ua', () => undefined);
    expect(streams.open('a', 'ua', () => undefined)).toBe('session_full');
    streams.open('b', 'ub', () => undefined);
    expect(streams.open('c', 'uc', () => undefined)).toBe('server_full');
    (forgetA as () => void)();
    expect(typeof streams.open('c', 'uc', () => undefined)).toBe('function');
    expect(streams.size).toBe(3);
    streams.endAll();
  });

  it('one user can take all live views by signing in again and again: caps views per user, all their sessions together', () => {
    const streams = new LiveStreams(10, 2, 3, async () => true);
    const forget = streams.open('a', 'u', () => undefined);
    streams.open('a', 'u', () => undefined);
    streams.open('b', 'u', () => undefined);
    expect(streams.open('b', 'u', () => undefined)).toBe('user_full');
    expect(streams.open('c', 'u', () => undefined)).toBe('user_full');
    expect(typeof streams.open('d', 'v', () => undefined)).toBe('function');
    (forget as () => void)();
    expect(typeof streams.open('c', 'u', () => undefined)).toBe('function');
    expect(streams.size).toBe(4);
    streams.endAll();
  });

  it('checks each session with views once a sweep, however many views it has, and ends the views of a session gone', async () => {
    const open = new Set(['a', 'b']);
    const checked: string[] = [];
    const streams = new LiveStreams(10, 10, 10, async (token) => (checked.push(token), open.has(token)), 10);
    const ended: string[] = [];
    for (const [token, n] of [['a', 3], ['b', 1]] as const) {
      for (let i = 0; i < n; i++) {
        const forget = streams.open(token, `u${token}`, () => {
          ended.push(token);
          (forget as () => void)();
        });
      }
    }
    await vi.waitFor(() => expect(checked.length).toBeGreaterThanOrEqual(4));
    // Sweeps check sessions in pairs: one read per session, never one per view.
    expect(checked.filter((t) => t === 'a').length - checked.filter((t) => t === 'b').length).toBeLessThanOrEqual(1);
    open.delete('a');
    await vi.waitFor(() => expect(ended).toEqual(['a', 'a', 'a']));
    expect(streams.size).toBe(1);
    streams.endSession('b');
    expect(ended).toEqual(['a', 'a', 'a', 'b']);
    expect(streams.size).toBe(0);
  });
});
