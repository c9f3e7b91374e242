import { expect, it, vi } from 'vitest';
import { PageReadGate, PageReadsBusyError } from './page-read-gate.js';

/** A read that ends when the test says so. */
function held<T>(value: T) {
  let release: () => void = () => undefined;
  let started = false;
  const read = () => {
    started = true;
    return new Promise<T>((resolve) => (release = () => resolve(value)));
  };
  return { read, release: () => release(), started: () => started };
}

it('runs at most `running` page reads at once, lines up `waiting` more, refuses the rest, and shares a waiting read', async () => {
  const gate = new PageReadGate(1, 2);
  const a = held('a');
  const b = held('b');
  const c = held('c');
  const ra = gate.run('a', a.read);
  const rb = gate.run('b', b.read);
  const rb2 = gate.run('b', async () => 'never run');
  const rc = gate.run('c', c.read);
  await expect(gate.run('d', async () => 'd')).rejects.toBeInstanceOf(PageReadsBusyError);
  expect(gate.size).toEqual({ running: 1, waiting: 2 });
  expect([a.started(), b.started(), c.started()]).toEqual([true, false, false]);
  a.release();
  expect(await ra).toBe('a');
  await vi.waitFor(() => expect(b.started()).toBe(true));
  expect(gate.size).toEqual({ running: 1, waiting: 1 });
  b.release();
  expect([await rb, await rb2]).toEqual(['b', 'b']);
  await vi.waitFor(() => expect(c.started()).toBe(true));
  c.release();
  expect(await rc).toBe('c');
  expect(gate.size).toEqual({ running: 0, waiting: 0 });
});

it('a failed page read frees its place for the next', async () => {
  const gate = new PageReadGate(1, 1);
  const first = gate.run('x', async () => {
    throw new Error('no');
  });
  const next = gate.run('y', async () => 'y');
  await expect(first).rejects.toThrow('no');
  expect(await next).toBe('y');
  expect(gate.size).toEqual({ running: 0, waiting: 0 });
});
