import { describe, expect, it } from 'vitest';
import { ReadBudget, type Reservation } from './read-budget.js';

describe('bodies being read are bounded', () => {
  it("a key's share: one key cannot take the whole budget, another key still gets room", () => {
    const b = new ReadBudget(100, 40);
    const a1 = b.reserve('a', 30) as Reservation;
    expect(b.reserve('a', 20)).toBe('key');
    expect(typeof b.reserve('b', 40)).toBe('object');
    expect(b.readingBytes).toBe(70);
    expect(b.reserve('c', 40)).toBe('server');
    a1.release();
    a1.release(); // counts once
    expect(b.readingBytes).toBe(40);
    expect(typeof b.reserve('c', 40)).toBe('object');
    expect(b.readingKeys).toBe(2);
  });

  it('a chunked body grows its reservation as it arrives and is refused once past a budget, taking nothing', () => {
    const b = new ReadBudget(100, 50);
    const r = b.reserve('a', 0) as Reservation;
    expect(r.grow(30)).toBeNull();
    expect(r.grow(30)).toBe('key');
    expect(b.readingBytes).toBe(30);
    r.release();
    expect(b.readingBytes).toBe(0);
    expect(b.readingKeys).toBe(0);
    expect(r.grow(1)).not.toBeNull();
    expect(b.readingBytes).toBe(0);
  });

  it('Infinity turns a budget off', () => {
    const b = new ReadBudget(Infinity, Infinity);
    expect(typeof b.reserve('a', 1e12)).toBe('object');
  });
});
