/**
 * The real posthog library from PyPI (7.x), run by python3 against a real
 * server: its capture() is no longer refused for its own $python_* and $os_*
 * properties, set() and set_once() (which it sends as $set and $set_once
 * events with the traits at the top level) reach the person, and its
 * group_identify() without a distinct_id joins no one to the group. Skipped,
 * saying why, where the machine has no python3 with posthog installed
 * (pip install posthog).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';

const SCRIPT = fileURLToPath(new URL('./scripts/posthog_python.py', import.meta.url));
const probe = spawnSync('python3', ['-c', 'import posthog; print(posthog.VERSION)'], { encoding: 'utf8' });
const version = probe.status === 0 ? probe.stdout.trim() : null;
const why = version === null ? `python3 with the posthog library is not installed here (pip install posthog): ${(probe.stderr || String(probe.error)).trim().split('\n').at(-1)}` : '';

let live: LiveServer;
beforeAll(async () => {
  if (version !== null) live = await startLiveServer();
});
afterAll(async () => live?.stop());

it.skipIf(version === null)(`posthog (Python${version === null ? `; skipped: ${why}` : ` ${version}`}): capture, set, set_once, alias and group_identify land as the rules say`, async () => {
  const out = execFileSync('python3', [SCRIPT, live.key, live.url], { encoding: 'utf8', timeout: 60_000 });
  expect(JSON.parse(out.trim().split('\n').at(-1)!)).toEqual([]);

  const events = (await live.events(1000)).filter((e) => e.distinct_id === 'py_user');
  expect(events.map((e) => e.event)).toEqual(['order_completed']);
  expect(events[0]!.properties).toMatchObject({ total: 30, $groups: { company: 'acme' } });
  for (const k of ['$lib', '$lib_version', '$python_runtime', '$python_version', '$os', '$os_version', '$os_distro', '$geoip_disable', '$is_server']) {
    expect(events[0]!.properties).not.toHaveProperty(k);
  }
  const person = await live.person('py_user');
  expect(person.traits).toEqual({ plan: 'team', first_plan: 'free' });
  expect(person.distinct_ids.sort()).toEqual(['py_anon', 'py_user']);
  // The library's group_identify() without a distinct_id sends a random one: no one joins.
  expect(await live.group('company', 'acme')).toMatchObject({ traits: { seats: 40 }, members: [] });
});
