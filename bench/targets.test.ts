import { describe, expect, it } from 'vitest';
import { TARGETS, evaluate, targetLines } from './targets.js';

describe('evaluate', () => {
  it('passes and fails against the threshold, either way round, the threshold itself passing', () => {
    expect(evaluate(TARGETS.cpuBig, { value: 10 }).verdict).toBe('PASS');
    expect(evaluate(TARGETS.cpuBig, { value: 10.1 }).verdict).toBe('FAIL');
    expect(evaluate(TARGETS.smallHttp, { value: 0.5 }).verdict).toBe('PASS');
    expect(evaluate(TARGETS.smallHttp, { value: 0.499 }).verdict).toBe('FAIL');
  });

  it('is "not measured", never PASS, without a figure, and says why', () => {
    const r = evaluate(TARGETS.pgTenants, { value: null, missing: 'no INLET_DATABASE_URL' });
    expect(r.verdict).toBe('not measured');
    expect(r.note).toBe('no INLET_DATABASE_URL');
    expect(evaluate(TARGETS.cpuBig, { value: Number.NaN }).verdict).toBe('not measured');
  });

  it('is "not measured" for a figure taken under part of the condition, even a good one', () => {
    const r = evaluate(TARGETS.p99Full, { value: 40, partial: '200k stored, not 5M' });
    expect(r.verdict).toBe('not measured');
    expect(r.value).toBe(40);
    expect(evaluate(TARGETS.p99Full, { value: 400, partial: '200k stored, not 5M' }).verdict).toBe('not measured');
  });

  it('fails a partial figure that can only grow with the rest of the condition', () => {
    expect(evaluate(TARGETS.peakRss, { value: 320, partial: 'no 5M store', failureStands: true }).verdict).toBe('FAIL');
    expect(evaluate(TARGETS.peakRss, { value: 250, partial: 'no 5M store', failureStands: true }).verdict).toBe('not measured');
  });
});

describe('targetLines', () => {
  it('prints one line per target with its figure, its threshold and why it was not measured', () => {
    const text = targetLines([
      evaluate(TARGETS.bigHttp, { value: 0.0512 }),
      evaluate(TARGETS.pgTenants, { value: null, missing: 'no INLET_DATABASE_URL' }),
      evaluate(TARGETS.peakRss, { value: 251.4 }),
    ]);
    expect(text.split('\n')).toEqual([
      'FAIL          big batches, SQLite, x HTTP baseline: 0.051x (≥ 0.18x)',
      'not measured  PostgreSQL, multi-tenant, two servers, x PG storage baseline: - (≥ 0.45x) (no INLET_DATABASE_URL)',
      'PASS          peak RSS of a server (including with 5M stored): 251 MiB (≤ 300 MiB)',
    ]);
  });
});
