/**
 * The real posthog-node from npm, pointed at a real server by its host only:
 * capture, identify, alias and groupIdentify land as the rules say, and a
 * batch whose answer is lost is stored once when the library resends it.
 */
import { PostHog } from 'posthog-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FaultProxy } from '../helpers/http-fault-proxy.js';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';

let live: LiveServer;
beforeAll(async () => {
  live = await startLiveServer();
});
afterAll(async () => live.stop());

it('posthog-node, through its own code: capture, identify with $set and $set_once, alias and groupIdentify, a resent batch stored once', async () => {
  const proxy = await FaultProxy.start(live.url);
  // The first request is stored but its answer lost: the library resends the same uuids.
  proxy.faults.push('lose-answer');
  const errors: unknown[] = [];
  try {
    const posthog = new PostHog(live.key, { host: proxy.url, flushAt: 20, flushInterval: 60_000, fetchRetryDelay: 1, fetchRetryCount: 3, disableGeoip: true });
    posthog.on('error', (e) => errors.push(e));
    posthog.capture({ distinctId: 'ph_user', event: 'order_completed', properties: { total: 30 }, groups: { company: 'acme' } });
    posthog.identify({ distinctId: 'ph_user', properties: { $set: { plan: 'team' }, $set_once: { first_plan: 'free' } } });
    posthog.identify({ distinctId: 'ph_user', properties: { $set_once: { first_plan: 'pro' } } });
    posthog.alias({ distinctId: 'ph_user', alias: 'ph_anon_1' });
    posthog.groupIdentify({ groupType: 'company', groupKey: 'acme', properties: { seats: 40 } });
    posthog.groupIdentify({ groupType: 'company', groupKey: 'acme', properties: { plan: 'enterprise' }, distinctId: 'ph_user' });
    await posthog.shutdown(30_000);
  } finally {
    await proxy.close();
  }
  expect(errors).toEqual([]);
  expect(proxy.log[0]).toMatchObject({ fault: 'lose-answer', upstream: 200 });
  expect(proxy.log.at(-1)).toMatchObject({ fault: 'pass', upstream: 200 });

  const events = (await live.events(1000)).filter((e) => e.distinct_id === 'ph_user');
  expect(events.map((e) => e.event)).toEqual(['order_completed']);
  expect(events[0]!.properties).toMatchObject({ total: 30, $groups: { company: 'acme' } });
  expect(events[0]!.properties).not.toHaveProperty('$lib');

  const person = await live.person('ph_user');
  expect(person.traits).toEqual({ plan: 'team', first_plan: 'free' });
  expect(person.distinct_ids.sort()).toEqual(['ph_anon_1', 'ph_user']);
  expect(person.groups).toEqual([{ group_type: 'company', group_key: 'acme' }]);
  expect((await live.person('ph_anon_1')).id).toBe(person.id);

  const group = await live.group('company', 'acme');
  expect(group).toMatchObject({ group_type: 'company', group_key: 'acme', traits: { seats: 40, plan: 'enterprise' } });
  expect(group.members).toEqual([person.id]);
});
