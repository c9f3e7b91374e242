import { expect, it } from 'vitest';
import { loadBenchConfig } from './config.js';

it('an A/B run takes its peaks in slices of 1 s unless told otherwise; a plain run and BENCH_SLICE_SECONDS=0 do not slice', () => {
  expect(loadBenchConfig({ BENCH_COMPARE: '/tmp/b' }, 'out').sliceSeconds).toBe(1);
  expect(loadBenchConfig({ BENCH_COMPARE: '/tmp/b', BENCH_SLICE_SECONDS: '0' }, 'out').sliceSeconds).toBe(0);
  expect(loadBenchConfig({ BENCH_COMPARE: '/tmp/b', BENCH_SLICE_SECONDS: '2' }, 'out').sliceSeconds).toBe(2);
  expect(loadBenchConfig({}, 'out').sliceSeconds).toBe(0);
  expect(loadBenchConfig({ BENCH_COMPARE: '  ' }, 'out').sliceSeconds).toBe(0);
  expect(() => loadBenchConfig({ BENCH_SLICE_SECONDS: '-1' }, 'out')).toThrow(/BENCH_SLICE_SECONDS/);
});
