import { describe, expect, it } from 'vitest';
import { RESULT_PREFIX, lagInput, parseDestinationResult } from './destination-result.js';
import { TARGETS, evaluate } from './targets.js';

describe('the s3 workload\'s result', () => {
  it('is read from the line that carries it, among the others, and is absent without one', () => {
    const out = `round 1 ...\n${RESULT_PREFIX}{"ratios":[0.9],"lagMaxMs":[3000],"heldShares":[0.99]}\n`;
    expect(parseDestinationResult(out)).toEqual({ ratios: [0.9], lagMaxMs: [3000], heldShares: [0.99] });
    expect(parseDestinationResult('round 1 ...\n')).toBeNull();
  });

  it('judges the lag only where the paced load held its rate; a lag too large fails either way', () => {
    const held = { ratios: [1], lagMaxMs: [3000, 4000], heldShares: [0.99, 0.97] };
    expect(evaluate(TARGETS.s3Lag, lagInput(held))).toMatchObject({ verdict: 'PASS', value: 4000 });
    expect(evaluate(TARGETS.s3Lag, lagInput({ ...held, lagMaxMs: [3000, 5001] })).verdict).toBe('FAIL');
    const short = { ...held, heldShares: [0.99, 0.8] };
    expect(evaluate(TARGETS.s3Lag, lagInput(short))).toMatchObject({ verdict: 'not measured', note: 'the paced load reached 80% of its rate' });
    expect(evaluate(TARGETS.s3Lag, lagInput({ ...short, lagMaxMs: [9000] })).verdict).toBe('FAIL');
    expect(evaluate(TARGETS.s3Lag, lagInput(null))).toMatchObject({ verdict: 'not measured', note: 's3 not run' });
  });
});
