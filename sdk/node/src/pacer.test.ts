import { describe, expect, it } from 'vitest';
import { DEFAULT_KEY_RPS, type Grant, Pacer, parseFields } from './pacer.js';

/** The request a grant books; fails the test when it is a wait. */
function take(g: Grant): { items: number; ticket: number } {
  if (!('items' in g)) throw new Error(`expected a request, got a wait of ${g.waitMs} ms`);
  return g;
}

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

  it('sends no more than the room the newest answer states, less what was sent since; the rest waits for the oldest count to leave', () => {
    const p = new Pacer();
    const first = take(p.reserve(500, 0));
    p.answered(first.ticket, 500, { policy: '"burst";q=1500;w=10', state: '"burst";r=1000;t=10' }, 100);
    expect(take(p.reserve(500, 100)).items).toBe(500);
    expect(take(p.reserve(500, 100)).items).toBe(500);
    // 1,000 left less the two batches booked since: the third waits for the oldest count to leave, by the answer's t.
    expect(p.reserve(500, 100)).toEqual({ waitMs: 10_000 });
  });

  it('a batch larger than the room goes in part, at once, rather than waiting', () => {
    const p = new Pacer();
    p.answered(0, 0, { policy: '"sustained";q=60000;w=60', state: '"sustained";r=400;t=55' }, 0);
    expect(take(p.reserve(500, 0)).items).toBe(400);
  });

  it('starts no more requests a second than its share of the key limit, and learns the limit a 429 names', () => {
    const p = new Pacer();
    const share = Math.floor(DEFAULT_KEY_RPS * 0.8);
    for (let i = 0; i < share; i++) expect(take(p.reserve(1, 0)).items).toBe(1);
    expect(p.reserve(1, 0)).toEqual({ waitMs: 1000 });
    const q = new Pacer();
    q.answered(0, 0, { policy: '"per_key";q=10;w=1', state: '"per_key";r=0;t=1' }, 0);
    for (let i = 0; i < 8; i++) expect(take(q.reserve(1, 0)).items).toBe(1);
    expect(q.reserve(1, 0)).toEqual({ waitMs: 1000 });
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
 * 500-item batches from the queue, each asks the pacer before each request
 * (a part of the batch when the room is smaller), the server answers
 * `latency` ms later, and a refused request is sent again after
 * Retry-After. Bursts are [start ms, items]; says how many requests were
 * refused, how many items were accepted, and when the last was.
 */
function simulate(server: SlidingServer, bursts: [number, number][], concurrency = 2, latency = 20): { refused: number; accepted: number; doneAt: number } {
  const p = new Pacer();
  let refused = 0;
  let accepted = 0;
  let doneAt = 0;
  const events: { at: number; seq: number; run: () => void }[] = [];
  let seq = 0;
  const at = (t: number, run: () => void): void => {
    events.push({ at: t, seq: seq++, run });
    events.sort((a, b) => a.at - b.at || a.seq - b.seq);
  };
  /** Senders waiting for an answer before they ask again. */
  let waiting: (() => void)[] = [];
  const queue: number[] = [];
  let idle = concurrency;
  const send = (items: number, now: number): void => {
    const g = p.reserve(items, now);
    if (!('items' in g)) {
      if (g.waitMs === Infinity) waiting.push(() => send(items, now));
      else at(now + g.waitMs, () => send(items, now + g.waitMs));
      return;
    }
    at(now + latency / 2, () => {
      const answer = server.take(g.items, now + latency / 2);
      at(now + latency, () => {
        const t = now + latency;
        p.answered(g.ticket, g.items, { policy: answer.policy, state: answer.state }, t);
        const woken = waiting;
        waiting = [];
        for (const w of woken) at(t, w);
        if (!answer.allowed) {
          refused++;
          return at(t + 60_000, () => send(items, t + 60_000));
        }
        accepted += g.items;
        doneAt = t;
        if (g.items < items) return send(items - g.items, t);
        idle++;
        pump(t);
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
  return { refused, accepted, doneAt };
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
    expect(out).toMatchObject({ refused: 0, accepted: 70_102 });
  });

  it('the case of the report: a 60,000-item job right after a 100-item batch is never refused, and waits no whole window', () => {
    const server = new SlidingServer(defaults);
    const out = simulate(server, [
      [0, 100],
      [1000, 60_000],
    ]);
    expect(out).toMatchObject({ refused: 0, accepted: 60_100 });
    // The last 100 items fit once the first 100 leave the sustained window, 60 s after they entered; within the second t is rounded to.
    expect(out.doneAt).toBeLessThan(61_100);
  });

  it('100,000 items sent at once through the default limits: never refused', () => {
    const server = new SlidingServer(defaults);
    expect(simulate(server, [[0, 100_000]])).toMatchObject({ refused: 0, accepted: 100_000 });
  });

  it('with no room and the oldest count gone, one item asks; with requests in flight, their answers are awaited', () => {
    const p = new Pacer();
    const a = take(p.reserve(500, 0));
    const b = take(p.reserve(500, 0));
    p.answered(a.ticket, 500, { policy: '"sustained";q=1000;w=60', state: '"sustained";r=0;t=3' }, 10);
    expect(p.reserve(500, 20)).toEqual({ waitMs: 3000 - 10 });
    expect(p.reserve(500, 3010)).toEqual({ waitMs: Infinity });
    p.answered(b.ticket, 500, null, 3020);
    expect(take(p.reserve(500, 3020)).items).toBe(1);
  });

  it('an answer to a request booked earlier, arriving later, does not overwrite what a newer one stated', () => {
    const p = new Pacer();
    const a = take(p.reserve(500, 0));
    const b = take(p.reserve(500, 0));
    p.answered(b.ticket, 500, { policy: '"burst";q=1000;w=10', state: '"burst";r=0;t=10' }, 10);
    p.answered(a.ticket, 500, { policy: '"burst";q=1000;w=10', state: '"burst";r=500;t=10' }, 12);
    expect(p.reserve(500, 12)).toEqual({ waitMs: 10_000 - 2 });
  });

  it('a batch larger than the whole quota goes in parts the quota can take', () => {
    const p = new Pacer();
    p.answered(0, 0, { policy: '"burst";q=100;w=10', state: '"burst";r=100;t=0' }, 0);
    expect(take(p.reserve(500, 0)).items).toBe(100);
  });
});
