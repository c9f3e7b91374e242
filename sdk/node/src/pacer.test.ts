import { describe, expect, it } from 'vitest';
import { DEFAULT_KEY_RPS, Pacer, parseFields } from './pacer.js';

describe('Pacer', () => {
  it('reads the RateLimit and RateLimit-Policy fields the server sends', () => {
    expect(parseFields('"burst";q=50000;w=10, "sustained";q=60000;w=60')).toEqual(
      new Map([
        ['burst', { q: 50000, w: 10 }],
        ['sustained', { q: 60000, w: 60 }],
      ]),
    );
    expect(parseFields('"burst";r=49997;t=10')).toEqual(new Map([['burst', { r: 49997, t: 10 }]]));
    expect(parseFields(null).size).toBe(0);
  });

  it('holds a batch the project window has no room for until the window says it has', () => {
    const p = new Pacer();
    p.reserve(500, 0);
    p.answered(500, { policy: '"burst";q=1500;w=10', state: '"burst";r=1000;t=10' }, 100);
    expect(p.reserve(500, 100)).toBe(0);
    expect(p.reserve(500, 100)).toBe(0);
    // 1,000 left less the two batches booked since: the third waits for the window's reset.
    expect(p.reserve(500, 100)).toBe(10_000);
  });

  it('starts no more requests a second than its share of the key limit, and learns the limit a 429 names', () => {
    const p = new Pacer();
    const share = Math.floor(DEFAULT_KEY_RPS * 0.8);
    for (let i = 0; i < share; i++) expect(p.reserve(1, 0)).toBe(0);
    expect(p.reserve(1, 0)).toBe(1000);
    const q = new Pacer();
    q.answered(0, { policy: '"per_key";q=10;w=1', state: '"per_key";r=0;t=1' }, 0);
    for (let i = 0; i < 8; i++) expect(q.reserve(1, 0)).toBe(0);
    expect(q.reserve(1, 0)).toBe(1000);
  });
});

/** The server's windows as it keeps them: an exact sliding log each, all checked and added at once. */
class SlidingServer {
  private readonly logs: { at: number; cost: number }[][];
  constructor(private readonly windows: { name: string; q: number; w: number }[]) {
    this.logs = windows.map(() => []);
  }

  take(cost: number, now: number): { allowed: boolean; policy: string; state: string } {
    const used = this.windows.map((w, i) => {
      const log = this.logs[i]!;
      while (log.length > 0 && log[0]!.at <= now - w.w * 1000) log.shift();
      return log.reduce((sum, e) => sum + e.cost, 0);
    });
    const allowed = this.windows.every((w, i) => used[i]! + cost <= w.q);
    if (allowed) this.logs.forEach((log, i) => (log.push({ at: now, cost }), (used[i]! += cost)));
    const state = this.windows.map((w, i) => {
      const oldest = this.logs[i]![0];
      const t = oldest === undefined ? 0 : Math.max(0, Math.ceil((oldest.at + w.w * 1000 - now) / 1000));
      return `"${w.name}";r=${Math.max(0, w.q - used[i]!)};t=${t}`;
    });
    return { allowed, policy: this.windows.map((w) => `"${w.name}";q=${w.q};w=${w.w}`).join(', '), state: state.join(', ') };
  }
}

/**
 * A client as the SDK runs one, on a fake clock: `concurrency` senders take
 * 500-item batches from the queue, each asks the pacer before it sends, the
 * server answers `latency` ms later, and a refused batch is sent again after
 * Retry-After. Bursts are [start ms, items]; says how many requests were refused.
 */
function simulate(server: SlidingServer, bursts: [number, number][], concurrency = 2, latency = 20): { refused: number; accepted: number } {
  const p = new Pacer();
  let refused = 0;
  let accepted = 0;
  const events: { at: number; run: () => void }[] = [];
  const at = (t: number, run: () => void): void => {
    events.push({ at: t, run });
    events.sort((a, b) => a.at - b.at);
  };
  const queue: number[] = [];
  let idle = concurrency;
  const send = (items: number, now: number): void => {
    const wait = p.reserve(items, now);
    if (wait > 0) return at(now + wait, () => send(items, now + wait));
    at(now + latency / 2, () => {
      const answer = server.take(items, now + latency / 2);
      at(now + latency, () => {
        p.answered(items, { policy: answer.policy, state: answer.state }, now + latency);
        if (!answer.allowed) {
          refused++;
          return at(now + latency + 60_000, () => send(items, now + latency + 60_000));
        }
        accepted += items;
        idle++;
        pump(now + latency);
      });
    });
  };
  const pump = (now: number): void => {
    while (idle > 0 && queue.length > 0) {
      idle--;
      send(queue.shift()!, now);
    }
  };
  for (const [start, items] of bursts) {
    at(start, () => {
      for (let left = items; left > 0; left -= 500) queue.push(Math.min(500, left));
      pump(start);
    });
  }
  while (events.length > 0) {
    const e = events.shift()!;
    e.run();
  }
  return { refused, accepted };
}

describe('Pacer against sliding windows', () => {
  const defaults = [
    { name: 'burst', q: 50_000, w: 10 },
    { name: 'sustained', q: 60_000, w: 60 },
  ];

  it('a trickle, then a job, then a bigger job from one client is never refused when the oldest count in the window is small', () => {
    const server = new SlidingServer(defaults);
    const out = simulate(server, [
      [0, 2],
      [20_000, 10_100],
      [45_000, 60_000],
    ]);
    expect(out).toEqual({ refused: 0, accepted: 70_102 });
  });

  it('waits a whole window, not until the oldest count leaves, when the room left cannot take a batch', () => {
    const p = new Pacer();
    expect(p.reserve(2, 0)).toBe(0);
    p.answered(2, { policy: '"sustained";q=1000;w=60', state: '"sustained";r=998;t=60' }, 10);
    expect(p.reserve(500, 20)).toBe(0);
    p.answered(500, { policy: '"sustained";q=1000;w=60', state: '"sustained";r=498;t=60' }, 30);
    // At t the two items leave, two items of room: the batch waits until every count the answer held has left.
    expect(p.reserve(500, 40)).toBe(60_030 - 40);
    expect(p.reserve(500, 60_030)).toBe(0);
    // The next batch sees the one just sent.
    expect(p.reserve(500, 60_030)).toBe(0);
    expect(p.reserve(1, 60_030)).toBeGreaterThan(0);
  });

  it('requests that get no answer (the server away) hold the room only until a window after the last of them, not for ever', () => {
    const p = new Pacer();
    p.answered(0, { policy: '"burst";q=1000;w=10', state: '"burst";r=1000;t=0' }, 0);
    // Retries that meet network errors: each may have been counted, none says so.
    for (const at of [0, 1000]) {
      expect(p.reserve(500, at)).toBe(0);
      p.answered(500, null, at + 100);
    }
    expect(p.reserve(500, 2000)).toBe(8000);
    expect(p.reserve(500, 10_000)).toBe(1100);
    expect(p.reserve(500, 11_100)).toBe(0);
  });

  it('a batch larger than the whole quota is not held back for ever: the server answers it', () => {
    const p = new Pacer();
    p.answered(0, { policy: '"burst";q=100;w=10', state: '"burst";r=100;t=0' }, 0);
    expect(p.reserve(500, 0)).toBe(0);
  });
});
