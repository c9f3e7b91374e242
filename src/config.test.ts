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

it('bodies being read: 64 MiB in all and 16 MiB per project unless set, 0 turns one off, and a budget under one largest body is refused by name', () => {
  const MIB = 1_048_576;
  expect(loadConfig({}).reading).toEqual({ budgetBytes: 64 * MIB, keyBudgetBytes: 16 * MIB, keylessBudgetBytes: 8 * MIB, addressBudgetBytes: MIB });
  expect(loadConfig({ INLET_READING_BUDGET_BYTES: '0', INLET_READING_KEY_BUDGET_BYTES: '0' }).reading).toMatchObject({ budgetBytes: Infinity, keyBudgetBytes: Infinity });
  expect(loadConfig({ INLET_READING_BUDGET_BYTES: '8388608', INLET_READING_KEY_BUDGET_BYTES: '2097152' }).reading).toMatchObject({ budgetBytes: 8_388_608, keyBudgetBytes: 2_097_152 });
  expect(() => loadConfig({ INLET_READING_KEY_BUDGET_BYTES: '1000' })).toThrow(/INLET_READING_KEY_BUDGET_BYTES must be 0 \(no limit\) or at least 1048576/);
  expect(() => loadConfig({ INLET_READING_BUDGET_BYTES: '2097152' })).toThrow(/must not be over INLET_READING_BUDGET_BYTES/);
  expect(() => loadConfig({ INLET_READING_BUDGET_BYTES: 'lots' })).toThrow(/INLET_READING_BUDGET_BYTES must be 0 \(no limit\) or at least 1048576/);
});

it('the keyless pool: an eighth of the reading budget unless set (none when the budget is off), 1 MiB per address, and neither may crowd out what it is part of', () => {
  const MIB = 1_048_576;
  expect(loadConfig({ INLET_READING_BUDGET_BYTES: String(256 * MIB) }).reading).toMatchObject({ keylessBudgetBytes: 32 * MIB, addressBudgetBytes: MIB });
  expect(loadConfig({ INLET_READING_BUDGET_BYTES: String(4 * MIB), INLET_READING_KEY_BUDGET_BYTES: String(MIB) }).reading.keylessBudgetBytes).toBe(MIB);
  expect(loadConfig({ INLET_READING_BUDGET_BYTES: '0', INLET_READING_KEY_BUDGET_BYTES: '0' }).reading.keylessBudgetBytes).toBe(Infinity);
  expect(loadConfig({ INLET_READING_KEYLESS_BUDGET_BYTES: '0', INLET_READING_ADDRESS_BUDGET_BYTES: '0' }).reading).toMatchObject({ keylessBudgetBytes: Infinity, addressBudgetBytes: Infinity });
  expect(loadConfig({ INLET_READING_KEYLESS_BUDGET_BYTES: String(4 * MIB), INLET_READING_ADDRESS_BUDGET_BYTES: String(2 * MIB) }).reading).toMatchObject({ keylessBudgetBytes: 4 * MIB, addressBudgetBytes: 2 * MIB });
  expect(() => loadConfig({ INLET_READING_KEYLESS_BUDGET_BYTES: String(64 * MIB) })).toThrow(/INLET_READING_KEYLESS_BUDGET_BYTES \(67108864\) must leave at least 1048576 bytes of INLET_READING_BUDGET_BYTES/);
  expect(() => loadConfig({ INLET_READING_ADDRESS_BUDGET_BYTES: String(16 * MIB) })).toThrow(/INLET_READING_ADDRESS_BUDGET_BYTES \(16777216\) must not be over INLET_READING_KEYLESS_BUDGET_BYTES \(8388608\)/);
  expect(() => loadConfig({ INLET_READING_KEYLESS_BUDGET_BYTES: '1000' })).toThrow(/INLET_READING_KEYLESS_BUDGET_BYTES must be 0 \(no pool: such bodies share the whole budget\) or at least 1048576/);
});

it('connections: 4,096 at most unless INLET_MAX_CONNECTIONS says otherwise (0: no cap); a bad value is refused by name', () => {
  expect(loadConfig({}).maxConnections).toBe(4096);
  expect(loadConfig({ INLET_MAX_CONNECTIONS: '20000' }).maxConnections).toBe(20_000);
  expect(loadConfig({ INLET_MAX_CONNECTIONS: '0' }).maxConnections).toBe(0);
  expect(() => loadConfig({ INLET_MAX_CONNECTIONS: '1e4' })).toThrow(/INLET_MAX_CONNECTIONS must be a whole number from 0 to 1000000/);
  expect(() => loadConfig({ INLET_MAX_CONNECTIONS: '2000000' })).toThrow(/INLET_MAX_CONNECTIONS must be a whole number from 0 to 1000000/);
});

it('tracker hosts can be spelled around: INLET_TRACKER_HOSTS entries are normalised as request hosts are', () => {
  expect([...loadConfig({ INLET_TRACKER_HOSTS: 'T.Example.com., [t2.example.com]:443 ,t3.example.com' }).trackerHosts]).toEqual(['t.example.com', 't2.example.com', 't3.example.com']);
});

it('the import window: 300,000 items unless INLET_LIMIT_IMPORT sets another, 0 turns it off', () => {
  expect(loadConfig({}).limits.import).toBe(300_000);
  expect(loadConfig({ INLET_LIMIT_IMPORT: '0' }).limits.import).toBe(0);
  expect(() => loadConfig({ INLET_LIMIT_IMPORT: 'lots' })).toThrow(/INLET_LIMIT_IMPORT must be a whole number/);
});
