import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, limitHeapGrowth } from './heap-growth.js';

describe('heap growth', () => {
  const setWith = (execArgv: string[]): string[] => {
    const set: string[] = [];
    limitHeapGrowth(execArgv, (f) => set.push(f));
    return set;
  };

  it("sets V8's growing factor of the old generation", () => {
    expect(setWith([])).toEqual([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`]);
    expect(setWith(['--enable-source-maps'])).toEqual([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`]);
  });

  it('leaves a value given to node on its command line alone', () => {
    expect(setWith(['--heap-growing-percent=300'])).toEqual([]);
    expect(setWith(['--heap_growing_percent=20'])).toEqual([]);
  });
});
