import { mkdtempSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { PrefixHash, StateFile } from './state.js';

it('the state file was written aside under a predictable name, following a link planted there: a new random name, made new, readable by its owner only', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'inlet-send-state-'));
  const file = join(dir, 'items.ndjson');
  writeFileSync(file, '{"event":"a","distinct_id":"u"}\n');
  const victim = join(dir, 'victim');
  writeFileSync(victim, 'untouched');
  const statePath = join(dir, 'items.ndjson.inlet-send.json');
  // The name the old code wrote through: a link to another file.
  symlinkSync(victim, `${statePath}.${process.pid}.tmp`);

  const state = new StateFile(statePath, 'items.ndjson', file, 'run_1', new PrefixHash(file));
  await state.save(1, 33);
  expect(readFileSync(victim, 'utf8')).toBe('untouched');
  expect(JSON.parse(readFileSync(statePath, 'utf8'))).toMatchObject({ run: 'run_1', line: 1, offset: 33 });
  expect(statSync(statePath).mode & 0o777).toBe(0o600);
  expect(readdirSync(dir).filter((n) => n.endsWith('.tmp') && !n.includes(String(process.pid)))).toEqual([]);
});
