import { expect, it } from 'vitest';
import { KeylessGate } from './keyless-gate.js';

it('lets `running` in at once, queues the rest first come first served within its bounds, and refuses past them', async () => {
  const gate = new KeylessGate(1, 3, 2);
  const first = await gate.enter('a')!;
  const order: string[] = [];
  const waits = [gate.enter('a'), gate.enter('a'), gate.enter('b')].map((p, i) => p!.then((leave) => (order.push(`w${i}`), leave)));
  // A third body of one address, then a fourth waiting at all: no place.
  expect(gate.enter('a')).toBeNull();
  expect(gate.enter('c')).toBeNull();
  expect(gate.counts).toEqual({ running: 1, waiting: 3 });
  first();
  first();
  const second = await waits[0]!;
  expect(gate.counts).toEqual({ running: 1, waiting: 2 });
  // Its place freed, the address may wait again.
  expect(gate.enter('a')).not.toBeNull();
  second();
  (await waits[1]!)();
  (await waits[2]!)();
  expect(order).toEqual(['w0', 'w1', 'w2']);
});
