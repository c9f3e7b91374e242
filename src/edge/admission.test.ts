import { describe, expect, it } from 'vitest';
import { Admission } from './admission.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('admission of request bodies', () => {
  it('admits within the budget, then first come first served as room frees up', async () => {
    const a = new Admission(100, 60_000);
    const first = (await a.enter(60))!;
    const order: string[] = [];
    const big = a.enter(50).then((r) => (order.push('big'), r!));
    // Small enough to fit now, but it came after one that waits: it waits too.
    const small = a.enter(10).then((r) => (order.push('small'), r!));
    await tick();
    expect(order).toEqual([]);
    expect(a.admittedBytes).toBe(60);
    first();
    first(); // a second release counts once
    const [releaseBig, releaseSmall] = await Promise.all([big, small]);
    expect(order).toEqual(['big', 'small']);
    expect(a.admittedBytes).toBe(60);
    releaseBig();
    releaseSmall();
    expect(a.admittedBytes).toBe(0);
  });

  it('admits one body larger than the whole budget when nothing else is in', async () => {
    const a = new Admission(100, 60_000);
    const huge = await a.enter(1000);
    expect(huge).not.toBeNull();
    const next = a.enter(1);
    await tick();
    expect(a.admittedBytes).toBe(1000);
    huge!();
    expect(await next).not.toBeNull();
  });

  it('gives up on a request after the longest wait, and lets the ones behind it in', async () => {
    const a = new Admission(100, 50);
    const held = (await a.enter(90))!;
    const tooBig = a.enter(50);
    const fits = a.enter(10);
    expect(await tooBig).toBeNull();
    // Once the one ahead gave up, the small one fits beside what is held.
    expect(await fits).not.toBeNull();
    expect(a.admittedBytes).toBe(100);
    held();
  });

  it('answers at once, without queueing, a request that finds the waiting room full', async () => {
    const a = new Admission(100, 60_000, 150);
    const first = (await a.enter(100))!;
    const waiting = [a.enter(80), a.enter(60)];
    await tick();
    expect(a.waitingBodyBytes).toBe(140);
    // 140 + 20 would pass 150: told at once, and nothing else moves.
    expect(await a.enter(20)).toBeNull();
    expect(a.waitingBodyBytes).toBe(140);
    first();
    (await waiting[0])!();
    (await waiting[1])!();
    expect(a.waitingBodyBytes).toBe(0);
    // One body alone may always wait, whatever its size.
    const again = (await a.enter(100))!;
    const alone = a.enter(1000);
    await tick();
    expect(a.waitingBodyBytes).toBe(1000);
    again();
    (await alone)!();
    expect(a.admittedBytes).toBe(0);
  });

  it('counts a request given up on out of the waiting room', async () => {
    const a = new Admission(100, 30, 150);
    const first = (await a.enter(100))!;
    expect(await a.enter(120)).toBeNull();
    expect(a.waitingBodyBytes).toBe(0);
    first();
  });

  it("a project's share of the waiting room: one project that floods a slow store cannot fill it, another project still gets to wait", async () => {
    const a = new Admission(100, 60_000, 400, 100);
    const held = (await a.enter(100, 'a'))!;
    const a1 = a.enter(60, 'a');
    const a2 = a.enter(40, 'a');
    await tick();
    // Key a has its share (100) waiting: one more is told at once.
    expect(await a.enter(10, 'a')).toBeNull();
    const b1 = a.enter(90, 'b');
    await tick();
    expect(a.waitingBodyBytes).toBe(190);
    held();
    (await a1)!();
    (await a2)!();
    (await b1)!();
    expect(a.waitingBodyBytes).toBe(0);
    expect(a.admittedBytes).toBe(0);
    // Its share is free again once its bodies left the waiting room.
    const again = (await a.enter(100, 'a'))!;
    const alone = a.enter(300, 'a');
    await tick();
    expect(a.waitingBodyBytes).toBe(300);
    again();
    (await alone)!();
  });
});
