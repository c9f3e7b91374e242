import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { INTAKES, wireOf } from './registry.js';

it('an intake is one folder and one line: every folder here has its line in the registry, under its folder\'s name', () => {
  const folders = readdirSync(dirname(fileURLToPath(import.meta.url)), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  expect(INTAKES.map((i) => i.name).sort()).toEqual(folders.sort());
});

it('no two intakes claim one request: each path an intake registers is its own alone', () => {
  for (const intake of INTAKES) {
    for (const path of intake.route.paths) {
      const sample = path.replace('*', 'x');
      expect(INTAKES.filter((i) => i.route.owns(sample)).map((i) => i.name), sample).toEqual([intake.name]);
    }
  }
});

it('a check thread finds the map of every intake that reads bodies of another shape by its name', () => {
  for (const intake of INTAKES) {
    if (intake.wire === null) continue;
    const { otherIntake, ...own } = wireOf(intake.name);
    expect(own).toEqual(intake.wire.map);
    // Only an intake whose route owns a path another intake claims tells that intake's bodies apart.
    expect(otherIntake === undefined, intake.name).toBe(!INTAKES.some((i) => i.claims !== undefined && intake.route.owns(i.claims.path)));
  }
  expect(() => wireOf('batch')).toThrow();
});

it('a body another intake claims at a path is that intake\'s, found by the map of the intake whose route owns the path', () => {
  const posthog = wireOf('posthog');
  expect(posthog.otherIntake!({ api_key: 'k', events: [{ event_type: 'x' }] })).toBe('amplitude');
  expect(posthog.otherIntake!({ api_key: 'k', batch: [{ event: 'x' }] })).toBeUndefined();
  expect(posthog.otherIntake!({ api_key: 'k', events: [], batch: [] })).toBeUndefined();
  expect(posthog.otherIntake!([{ event: 'x' }])).toBeUndefined();
});
