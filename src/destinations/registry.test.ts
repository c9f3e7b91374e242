/**
 * What every registered kind declares holds together: its docs section is
 * there, a field shared by kinds is one input and one flag, and nothing a
 * kind makes or shows collides with what every destination has.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DESTINATION_KINDS } from './registry.js';

const PAGE = readFileSync(new URL('../../docs/destinations.md', import.meta.url), 'utf8');
const headings = new Set([...PAGE.matchAll(/^##+ (.+)$/gm)].map((m) => m[1]!.trim()));

/**
 * Names every destination has, whatever its kind: keys of a destination as
 * shown (destination-admin.ts, destinationView), and the form's other inputs.
 */
const COMMON = ['id', 'project_id', 'kind', 'sources', 'events', 'status', 'since', '_csrf'];
/** The flags of `inlet destination create` that are not a kind's. */
const COMMON_FLAGS = ['--project', '--kind', '--source', '--event', '--since', '--data-dir', '--json'];

describe.each(DESTINATION_KINDS.map((k) => [k.name, k] as const))('destination kind %s', (_, kind) => {
  it('has its section in docs/destinations.md', () => {
    expect(headings, kind.docs).toContain(kind.docs);
  });

  it('names its fields and what it makes once each, apart from what every destination has', () => {
    const names = [...kind.fields.map((f) => f.name), ...kind.made.map((m) => m.name)];
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(COMMON, n).not.toContain(n);
    for (const f of kind.fields) expect(COMMON_FLAGS, f.flag).not.toContain(f.flag.split(' ')[0]);
  });

  it('refuses a config with nothing given, saying why', () => {
    const r = kind.configure({});
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.length).toBeGreaterThan(0);
  });
});

it('kinds are named once, and a field they share has one flag and one label', () => {
  expect(new Set(DESTINATION_KINDS.map((k) => k.name)).size).toBe(DESTINATION_KINDS.length);
  const seen = new Map<string, { flag: string; label: string }>();
  for (const f of DESTINATION_KINDS.flatMap((k) => k.fields)) {
    const first = seen.get(f.name) ?? { flag: f.flag, label: f.label };
    seen.set(f.name, first);
    expect({ flag: f.flag, label: f.label }, f.name).toEqual(first);
  }
});
