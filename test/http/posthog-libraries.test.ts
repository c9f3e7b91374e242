/**
 * Bodies as each of PostHog's server libraries sends them (posthog-python's
 * recorded from version 7.53.0; the Go, Ruby, Java, PHP and Node libraries'
 * in the shape their sources write): every message is taken, their own
 * `$lib`-family properties never reach the event, and their person updates
 * reach the person wherever they put them.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type Fixture, makeFixture } from '../helpers/fixture.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});
afterEach(async () => f.close());

const at = (n: number) => new Date(Date.UTC(2026, 10, 22, 11, 59, n)).toISOString();
const uuid = (n: number) => `0190d2a1-7c4e-7000-8000-${String(n).padStart(12, '0')}`;

/** Each library's capture, its person update and the properties it sets itself. */
const LIBRARIES: Record<string, { own: Record<string, unknown>; messages: (own: Record<string, unknown>) => Record<string, unknown>[] }> = {
  python: {
    own: { $python_runtime: 'CPython', $python_version: '3.11.7', $os: 'Linux', $os_version: '12', $os_distro: 'Debian GNU/Linux', $lib: 'posthog-python', $lib_version: '7.53.0', $geoip_disable: true, $is_server: true },
    messages: (own) => [
      { properties: { total: 30, $groups: { company: 'acme' }, ...own }, timestamp: at(1), distinct_id: 'lib_user', event: 'order_completed', uuid: uuid(1) },
      { timestamp: at(2), distinct_id: 'lib_user', $set: { plan: 'team' }, event: '$set', properties: { $lib: 'posthog-python', $lib_version: '7.53.0', $geoip_disable: true, $is_server: true }, uuid: uuid(2) },
      { timestamp: at(3), distinct_id: 'lib_user', $set_once: { first_plan: 'free' }, event: '$set_once', properties: { $lib: 'posthog-python', $lib_version: '7.53.0' }, uuid: uuid(3) },
    ],
  },
  go: {
    own: { $lib: 'posthog-go', $lib_version: '1.6.0', $os: 'linux', $os_version: '6.1', $os_distro: 'debian', $go_version: 'go1.22.1', $is_server: true },
    messages: (own) => [
      { type: 'capture', uuid: uuid(1), library: 'posthog-go', library_version: '1.6.0', timestamp: at(1), distinct_id: 'lib_user', event: 'order_completed', properties: { total: 30, ...own } },
      { type: 'identify', uuid: uuid(2), library: 'posthog-go', library_version: '1.6.0', timestamp: at(2), event: '$identify', distinct_id: 'lib_user', properties: { $lib: 'posthog-go', $lib_version: '1.6.0', $go_version: 'go1.22.1' }, $set: { plan: 'team', first_plan: 'free' } },
    ],
  },
  ruby: {
    own: { $lib: 'posthog-ruby', $lib_version: '3.3.0', $is_server: true, $active_feature_flags: ['beta'], '$feature/beta': true },
    messages: (own) => [
      { type: 'capture', event: 'order_completed', distinct_id: 'lib_user', timestamp: at(1), messageId: uuid(1), uuid: uuid(1), properties: { total: 30, ...own } },
      { type: 'identify', event: '$identify', distinct_id: 'lib_user', timestamp: at(2), uuid: uuid(2), properties: { $set: { plan: 'team' }, $set_once: { first_plan: 'free' }, $lib: 'posthog-ruby', $lib_version: '3.3.0' } },
    ],
  },
  java: {
    own: {},
    messages: () => [
      { uuid: uuid(1), timestamp: at(1), distinct_id: 'lib_user', event: 'order_completed', $lib: 'posthog-java', properties: { total: 30 } },
      { uuid: uuid(2), timestamp: at(2), distinct_id: 'lib_user', event: '$set', $lib: 'posthog-java', properties: { $set: { plan: 'team' } } },
      { uuid: uuid(3), timestamp: at(3), distinct_id: 'lib_user', event: '$set_once', $lib: 'posthog-java', properties: { $set_once: { first_plan: 'free' } } },
    ],
  },
  php: {
    own: { $lib: 'posthog-php', $lib_version: '3.7.0', $lib_consumer: 'laravel', $is_server: true, $geoip_disable: true },
    messages: (own) => [
      { event: 'order_completed', distinct_id: 'lib_user', timestamp: at(1), uuid: uuid(1), library: 'posthog-php', library_version: '3.7.0', properties: { total: 30, ...own } },
      { event: '$identify', distinct_id: 'lib_user', timestamp: at(2), uuid: uuid(2), properties: { $set: { plan: 'team' }, $set_once: { first_plan: 'free' }, $lib: 'posthog-php', $lib_version: '3.7.0' } },
    ],
  },
  node: {
    own: { $lib: 'posthog-node', $lib_version: '5.9.1', $geoip_disable: true, $process_person_profile: true, $session_id: 'abc' },
    messages: (own) => [
      { distinct_id: 'lib_user', event: 'order_completed', uuid: uuid(1), timestamp: at(1), type: 'capture', library: 'posthog-node', library_version: '5.9.1', properties: { total: 30, ...own } },
      { distinct_id: 'lib_user', event: '$identify', uuid: uuid(2), timestamp: at(2), type: 'identify', properties: { $set: { plan: 'team' }, $set_once: { first_plan: 'free' }, ...own } },
    ],
  },
};

it.each(Object.keys(LIBRARIES))('the %s library: every message taken, its own properties stripped, its person updates kept', async (name) => {
  const lib = LIBRARIES[name]!;
  const res = await f.app.inject({
    method: 'POST', url: '/batch/', headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ api_key: f.key, batch: lib.messages(lib.own), sent_at: at(4) }),
  });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toMatchObject({ errors: [] });
  const [event, ...rest] = await f.collector.store.listEvents(f.sourceId, 100);
  expect(rest).toEqual([]);
  expect(event).toMatchObject({ event: 'order_completed', distinctId: 'lib_user', insertId: uuid(1) });
  for (const k of [...Object.keys(lib.own), '$lib']) expect(event!.properties, k).not.toHaveProperty(k);
  expect(event!.properties).toMatchObject({ total: 30 });
  expect((await f.collector.store.findPerson(f.projectId, { distinctId: 'lib_user' }))?.traits).toEqual({ plan: 'team', first_plan: 'free' });
});
