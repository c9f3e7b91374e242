import pg from 'pg';
import { expect, it } from 'vitest';
import { StoreUnavailableError } from '../port.js';
import { deleteInRanges } from './erasure.js';

const DAY = 86_400_000;

function cancelled(): StoreUnavailableError {
  const e = new pg.DatabaseError('canceling statement due to statement timeout', 0, 'error');
  e.code = '57014';
  return new StoreUnavailableError('PostgreSQL refused the statement.', { cause: e });
}

it('covers the span without gap or overlap, halving a range the server cancels and growing back a day at a time', async () => {
  const start = 10 * DAY;
  const last = 13 * DAY + 5;
  const done: [number, number][] = [];
  const cancelledWidths: number[] = [];
  // The second day is busy: any range of it longer than an hour is cancelled.
  const busy = (from: number, to: number) => from >= 11 * DAY && to <= 12 * DAY && to - from > 3_600_000;
  expect(
    await deleteInRanges(start, last, undefined, async (from, to) => {
      if (busy(from, to)) {
        cancelledWidths.push(to - from);
        throw cancelled();
      }
      done.push([from, to]);
    }),
  ).toBe(true);
  // Contiguous, each inside one UTC day, from the start to past the last millisecond.
  expect(done[0]![0]).toBe(start);
  for (let i = 1; i < done.length; i++) expect(done[i]![0]).toBe(done[i - 1]![1]);
  expect(done.at(-1)![1]).toBeGreaterThan(last);
  for (const [from, to] of done) expect(Math.floor(from / DAY)).toBe(Math.floor((to - 1) / DAY));
  // Whole days before the busy one; in it, halved until a range went, then that width to its end (no
  // range cancelled twice over); after it, twice that width each new day.
  const widths = (d: number) => done.filter(([from]) => Math.floor(from / DAY) === d).map(([f, t]) => t - f);
  expect(widths(10)).toEqual([DAY]);
  expect(new Set(widths(11))).toEqual(new Set([DAY / 32]));
  expect(cancelledWidths).toEqual([DAY, DAY / 2, DAY / 4, DAY / 8, DAY / 16]);
  expect(new Set(widths(12))).toEqual(new Set([DAY / 16]));
  expect(new Set(widths(13))).toEqual(new Set([DAY / 8]));
});

it('rethrows any other failure at once, and a cancelled single millisecond', async () => {
  const calls: number[] = [];
  await expect(deleteInRanges(0, DAY, undefined, async (from, to) => {
    calls.push(to - from);
    throw new StoreUnavailableError('PostgreSQL could not be reached.');
  })).rejects.toThrow('could not be reached');
  expect(calls).toEqual([DAY]);
  calls.length = 0;
  await expect(deleteInRanges(0, 0, undefined, async (from, to) => {
    calls.push(to - from);
    throw cancelled();
  })).rejects.toBeInstanceOf(StoreUnavailableError);
  // Halved all the way down: the last range tried is one millisecond.
  expect(calls.at(-1)).toBe(1);
  expect(calls.length).toBeLessThan(30);
});

it('starts no range once stopping', async () => {
  const done: number[] = [];
  let stop = false;
  expect(await deleteInRanges(0, 5 * DAY, () => stop, async (from) => {
    done.push(from);
    stop = done.length === 2;
  })).toBe(false);
  expect(done).toEqual([0, DAY]);
});
