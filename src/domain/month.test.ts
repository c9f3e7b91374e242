import { expect, it } from 'vitest';
import { monthOf } from './month.js';

const plain = (ms: number): string => new Date(ms).toISOString().slice(0, 7);

it('the month of an instant is its UTC "YYYY-MM", on both sides of every boundary, in any order', () => {
  const edges = [Date.UTC(2026, 10, 1), Date.UTC(2026, 11, 1), Date.UTC(2027, 0, 1), Date.UTC(2024, 2, 1), 0];
  const year50 = new Date(0);
  year50.setUTCFullYear(50, 5, 1);
  edges.push(year50.getTime());
  const instants = edges.flatMap((e) => [e - 1, e, e + 1, e + 86_400_000, e - 86_400_000]);
  // Forwards, backwards and shuffled: the remembered month must never leak into another.
  for (const order of [instants, [...instants].reverse(), instants.filter((_, i) => i % 2 === 0).concat(instants.filter((_, i) => i % 2 === 1))]) {
    for (const ms of order) expect(monthOf(ms)).toBe(plain(ms));
  }
  expect(monthOf(Date.UTC(2026, 10, 30, 23, 59, 59, 999))).toBe('2026-11');
  expect(monthOf(Date.UTC(2026, 11, 1))).toBe('2026-12');
  expect(monthOf(year50.getTime() - 1)).toBe('0050-05');
});
