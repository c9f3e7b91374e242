import { describe, expect, it } from 'vitest';
import { ReadBudget, type Reservation } from './read-budget.js';

const project = (projectId: string) => ({ projectId });
const addr = (address: string) => ({ address });

describe('bodies being read are bounded', () => {
  it("a project's share: one project cannot take the whole budget, another project still gets room", () => {
    const b = new ReadBudget(100, 40, Infinity, Infinity);
    const a1 = b.reserve(project('a'), 30) as Reservation;
    expect(b.reserve(project('a'), 20)).toBe('project');
    expect(typeof b.reserve(project('b'), 40)).toBe('object');
    expect(b.readingBytes).toBe(70);
    expect(b.reserve(project('c'), 40)).toBe('server');
    a1.release();
    a1.release(); // counts once
    expect(b.readingBytes).toBe(40);
    expect(typeof b.reserve(project('c'), 40)).toBe('object');
    expect(b.readingOwners).toBe(2);
  });

  it('a chunked body grows its reservation as it arrives and is refused once past a budget, taking nothing', () => {
    const b = new ReadBudget(100, 50, Infinity, Infinity);
    const r = b.reserve(project('a'), 0) as Reservation;
    expect(r.grow(30)).toBeNull();
    expect(r.grow(30)).toBe('project');
    expect(b.readingBytes).toBe(30);
    r.release();
    expect(b.readingBytes).toBe(0);
    expect(b.readingOwners).toBe(0);
    expect(r.grow(1)).not.toBeNull();
    expect(b.readingBytes).toBe(0);
  });

  it('Infinity turns a budget off', () => {
    const b = new ReadBudget(Infinity, Infinity, Infinity, Infinity);
    expect(typeof b.reserve(project('a'), 1e12)).toBe('object');
    expect(typeof b.reserve(addr('10.0.0.1'), 1e12)).toBe('object');
  });
});

describe('bodies with no key fill the whole reading budget', () => {
  it('keyless bodies from many addresses fill only their pool, each address its share, and bodies with a key keep the rest', () => {
    // 100 in all: 20 for keyless bodies (5 per address), 80 for bodies with a key (40 per project).
    const b = new ReadBudget(100, 40, 20, 5);
    for (let i = 0; i < 4; i++) expect(typeof b.reserve(addr(`10.0.0.${i}`), 5)).toBe('object');
    expect(b.reserve(addr('10.0.0.0'), 1)).toBe('address');
    expect(b.reserve(addr('10.0.0.9'), 1)).toBe('keyless');
    expect(b.readingKeylessBytes).toBe(20);
    // Keys find all of their part, and not a byte of the keyless pool.
    expect(typeof b.reserve(project('a'), 40)).toBe('object');
    const grown = b.reserve(project('b'), 30) as Reservation;
    expect(grown.grow(10)).toBeNull();
    expect(grown.grow(1)).toBe('project');
    expect(b.reserve(project('c'), 1)).toBe('server');
    expect(b.readingBytes).toBe(100);
  });

  it('keys cannot take the keyless pool either, and a keyless pool of Infinity is no pool: those bodies share the whole budget', () => {
    const pooled = new ReadBudget(100, 100, 20, 20);
    expect(typeof pooled.reserve(project('a'), 80)).toBe('object');
    expect(pooled.reserve(project('b'), 1)).toBe('server');
    expect(typeof pooled.reserve(addr('10.0.0.1'), 20)).toBe('object');

    const shared = new ReadBudget(100, 100, Infinity, 30);
    expect(typeof shared.reserve(addr('10.0.0.1'), 30)).toBe('object');
    expect(typeof shared.reserve(addr('10.0.0.2'), 30)).toBe('object');
    expect(typeof shared.reserve(project('a'), 40)).toBe('object');
    expect(shared.reserve(addr('10.0.0.3'), 1)).toBe('server');
    expect(shared.reserve(project('b'), 1)).toBe('server');
  });

  it('an address and a key of the same spelling are counted apart', () => {
    const b = new ReadBudget(100, 50, 20, 10);
    expect(typeof b.reserve(addr('x'), 10)).toBe('object');
    expect(typeof b.reserve(project('x'), 50)).toBe('object');
    expect(b.readingOwners).toBe(2);
  });
});
