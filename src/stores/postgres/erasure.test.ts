import pg from 'pg';
import { expect, it } from 'vitest';
import { StoreUnavailableError } from '../port.js';
import { deleteInRanges, deleteInSeqRanges } from './erasure.js';

const DAY = 86_400_000;
const TIMEOUT = 5000;

function cancelled(): StoreUnavailableError {
  const e = new pg.DatabaseError('canceling statement', 0, 'error');
  e.code = '57014';
  return new StoreUnavailableError('PostgreSQL refused the statement.', { cause: e });
}

/**
 * A database of `density(from, to)` ms of work per range on a fake clock: a
 * range that would take longer than the timeout is cancelled at the timeout.
 */
function database(density: (from: number, to: number) => number) {
  let clock = 0;
  const ranges: [number, number][] = [];
  const cancels: [number, number][] = [];
  const remove = async (from: number, to: number): Promise<void> => {
    const ms = density(from, to);
    if (ms >= TIMEOUT) {
      clock += TIMEOUT;
      cancels.push([from, to]);
      throw cancelled();
    }
    clock += ms;
    ranges.push([from, to]);
  };
  return { ranges, cancels, remove, pacing: { timeoutMs: TIMEOUT, now: () => clock }, elapsed: () => clock };
}

/** Contiguous, each inside one UTC day, from `start` to past `last`. */
function expectCovered(ranges: [number, number][], start: number, last: number): void {
  expect(ranges[0]![0]).toBe(start);
  for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBe(ranges[i - 1]![1]);
  expect(ranges.at(-1)![1]).toBeGreaterThan(last);
  for (const [from, to] of ranges) expect(Math.floor(from / DAY)).toBe(Math.floor((to - 1) / DAY));
}

it('a quiet span goes a whole day per statement', async () => {
  const db = database(() => 3);
  expect(await deleteInRanges(10 * DAY, 13 * DAY + 5, db.pacing, db.remove)).toBe(true);
  expect(db.ranges.map(([f, t]) => t - f)).toEqual([DAY, DAY, DAY, DAY]);
});

it('a busy day is split into statements of about a fifth of the timeout, and the quiet days after go whole again soon', async () => {
  // The second day holds 20 ms of work per minute: 28.8 s for the day, far over the timeout.
  const perMs = (from: number, to: number) => (from >= 11 * DAY && from < 12 * DAY ? ((to - from) * 20) / 60_000 : 0) + 2;
  const db = database(perMs);
  expect(await deleteInRanges(10 * DAY, 20 * DAY, db.pacing, db.remove)).toBe(true);
  expectCovered(db.ranges, 10 * DAY, 20 * DAY);
  const busy = db.ranges.filter(([f]) => f >= 11 * DAY && f < 12 * DAY);
  // Once sized, no statement of the busy day is cancelled again, and none takes more than the timeout's fifth by much.
  expect(db.cancels.length).toBeLessThanOrEqual(3);
  expect(Math.max(...busy.slice(1).map(([f, t]) => perMs(f, t)))).toBeLessThan(TIMEOUT / 2);
  expect(busy.length).toBeLessThan(40);
  // Back to whole days within a day and a dozen statements.
  expect(db.ranges.filter(([f]) => f >= 13 * DAY).every(([f, t]) => t - f === DAY)).toBe(true);
  expect(db.ranges.filter(([f]) => f >= 12 * DAY && f < 13 * DAY).length).toBeLessThan(14);
});

it('one dense millisecond among quiet hours costs a few statements, not a day of milliseconds', async () => {
  const dense = 5 * DAY + 1000;
  const db = database((from, to) => (from <= dense && dense < to ? 100_000 : 1));
  await expect(deleteInRanges(5 * DAY, 5 * DAY + 3_600_000, db.pacing, db.remove)).rejects.toBeInstanceOf(StoreUnavailableError);
  // Halved down to the millisecond, which cannot go: about 27 cancels, and every range before it went.
  expect(db.cancels.at(-1)).toEqual([dense, dense + 1]);
  expect(db.cancels.length).toBeLessThan(30);
  expect(db.ranges.length).toBeLessThan(60);
  expect(db.ranges.at(-1)![1]).toBe(dense);

  // Given a way to delete it apart (by seq, source by source), it goes that way once, and the rest of the hour follows.
  const apart = database((from, to) => (from <= dense && dense < to ? 100_000 : 1));
  const busy: number[] = [];
  expect(await deleteInRanges(5 * DAY, 5 * DAY + 3_600_000, apart.pacing, apart.remove, async (ms) => (busy.push(ms), true))).toBe(true);
  expect(busy).toEqual([dense]);
  expectCovered([...apart.ranges, [dense, dense + 1] as [number, number]].sort((a, b) => a[0] - b[0]), 5 * DAY, 5 * DAY + 3_600_000);
  expect(apart.cancels.length).toBeLessThan(30);
  expect(apart.ranges.length).toBeLessThan(60);
  // A busy millisecond deleted apart that is told to stop stops the erasure there.
  const stopped = database((from, to) => (from <= dense && dense < to ? 100_000 : 1));
  expect(await deleteInRanges(5 * DAY, 5 * DAY + 3_600_000, stopped.pacing, stopped.remove, async () => false)).toBe(false);
  expect(stopped.ranges.at(-1)![1]).toBe(dense);

  // The same millisecond, but bearable: it goes, and the rest of the hour then takes a handful of statements.
  const ok = database((from, to) => (from <= dense && dense < to ? 4000 : 1));
  expect(await deleteInRanges(5 * DAY, 5 * DAY + 3_600_000, ok.pacing, ok.remove)).toBe(true);
  expectCovered(ok.ranges, 5 * DAY, 5 * DAY + 3_600_000);
  expect(ok.ranges.length).toBeLessThan(40);
});

it('a cancel that came before the timeout (someone cancelled it) ends the erasure at once, as does any other failure', async () => {
  const calls: number[] = [];
  await expect(deleteInRanges(0, DAY, { timeoutMs: TIMEOUT, now: () => 0 }, async (from, to) => {
    calls.push(to - from);
    throw cancelled();
  })).rejects.toBeInstanceOf(StoreUnavailableError);
  expect(calls).toEqual([DAY]);
  calls.length = 0;
  await expect(deleteInRanges(0, DAY, { timeoutMs: TIMEOUT, now: () => 0 }, async (from, to) => {
    calls.push(to - from);
    throw new StoreUnavailableError('PostgreSQL could not be reached.');
  })).rejects.toThrow('could not be reached');
  expect(calls).toEqual([DAY]);
});

it('starts no range once stopping', async () => {
  const done: number[] = [];
  let stop = false;
  const pacing = { timeoutMs: TIMEOUT, now: () => 0, stopping: () => stop };
  expect(await deleteInRanges(0, 5 * DAY, pacing, async (from) => {
    done.push(from);
    stop = done.length === 2;
  })).toBe(false);
  expect(done).toEqual([0, DAY]);
});

it('seqs of a busy millisecond go in ranges halved until they fit, and a single seq that cannot go ends the erasure', async () => {
  // Seqs 1,000 to 1,999 hold 50 ms of work each: the whole of them is far over the timeout.
  const perSeq = (from: number, to: number) => (Math.min(to, 2000) - Math.max(from, 1000)) * 50;
  const db = database((from, to) => Math.max(perSeq(from, to), 0) + 1);
  expect(await deleteInSeqRanges(0, 3000, db.pacing, db.remove)).toBe(true);
  expect(db.ranges[0]![0]).toBe(0);
  for (let i = 1; i < db.ranges.length; i++) expect(db.ranges[i]![0]).toBe(db.ranges[i - 1]![1]);
  expect(db.ranges.at(-1)![1]).toBe(3000);
  expect(db.cancels.length).toBeLessThan(8);
  expect(Math.max(...db.ranges.map(([f, t]) => perSeq(f, t)))).toBeLessThan(TIMEOUT);

  const stuck = database((from, to) => (from <= 7 && 7 < to ? 100_000 : 1));
  await expect(deleteInSeqRanges(0, 100, stuck.pacing, stuck.remove)).rejects.toBeInstanceOf(StoreUnavailableError);
  expect(stuck.cancels.at(-1)).toEqual([7, 8]);
});
