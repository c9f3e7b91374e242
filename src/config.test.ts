import { expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';
import { ADMISSION_WAIT_MS, BODY_BUDGET_BYTES } from './edge/admission.js';

it('back-pressure on bodies: 2 MiB and 10 s unless set, 0 bytes turns it off, and a bad value is refused by name', () => {
  expect(loadConfig({}).admission).toEqual({ budgetBytes: BODY_BUDGET_BYTES, waitMs: ADMISSION_WAIT_MS });
  expect(BODY_BUDGET_BYTES).toBe(2 * 1_048_576);
  expect(ADMISSION_WAIT_MS).toBe(10_000);
  expect(loadConfig({ INLET_BODY_BUDGET_BYTES: '8388608', INLET_BODY_WAIT_MS: '2500' }).admission).toEqual({ budgetBytes: 8_388_608, waitMs: 2500 });
  expect(loadConfig({ INLET_BODY_BUDGET_BYTES: '0' }).admission.budgetBytes).toBe(Infinity);
  expect(() => loadConfig({ INLET_BODY_BUDGET_BYTES: '2MB' })).toThrow(new ConfigError('INLET_BODY_BUDGET_BYTES must be a whole number from 0 to 9007199254740991 (0 turns back-pressure off), not "2MB".'));
  expect(() => loadConfig({ INLET_BODY_WAIT_MS: '30000' })).toThrow(/INLET_BODY_WAIT_MS must be a whole number from 0 to 20000/);
  expect(() => loadConfig({ INLET_BODY_WAIT_MS: '-1' })).toThrow(/INLET_BODY_WAIT_MS must be a whole number from 0 to 20000/);
});

it('the import window: 300,000 items unless INLET_LIMIT_IMPORT sets another, 0 turns it off', () => {
  expect(loadConfig({}).limits.import).toBe(300_000);
  expect(loadConfig({ INLET_LIMIT_IMPORT: '0' }).limits.import).toBe(0);
  expect(() => loadConfig({ INLET_LIMIT_IMPORT: 'lots' })).toThrow(/INLET_LIMIT_IMPORT must be a whole number/);
});
