import { createRequire } from 'node:module';
import { Analytics as Segment2 } from 'segment-node-2';
import { Analytics as Segment3 } from 'segment-node-3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../helpers/http-fault-proxy.js';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';

// RudderStack's SDK ships as CommonJS with a default export in module.exports.
const Rudder = createRequire(import.meta.url)('@rudderstack/rudder-sdk-node') as new (
  key: string,
  opts: Record<string, unknown>,
) => {
  track(m: object): void;
  identify(m: object): void;
  page(m: object): void;
  flush(): Promise<unknown>;
};

let live: LiveServer;
beforeAll(async () => {
  live = await startLiveServer();
});
afterAll(async () => live.stop());

/** What every SDK below sends through its own code. */
interface Sdk {
  track(m: { userId: string; event: string; properties: object }): void;
  identify(m: { userId: string; traits: object }): void;
  page(m: { userId: string; name: string; properties: object }): void;
  done(): Promise<void>;
}

const sdks: Record<string, (key: string, host: string, failures: unknown[]) => Sdk> = {
  // 3.x sends the write key as HTTP Basic (and in the body).
  '@segment/analytics-node 3.x': (key, host, failures) => {
    const a = new Segment3({ writeKey: key, host, flushAt: 3, flushInterval: 50, maxRetries: 3 });
    a.on('error', (e) => failures.push(e));
    return { track: (m) => a.track(m), identify: (m) => a.identify(m), page: (m) => a.page(m), done: () => a.closeAndFlush({ timeout: 30_000 }) };
  },
  // 2.x sends no Authorization header: the key is only "writeKey" in the body.
  '@segment/analytics-node 2.x': (key, host, failures) => {
    const a = new Segment2({ writeKey: key, host, flushAt: 3, flushInterval: 50, maxRetries: 3 });
    a.on('error', (e) => failures.push(e));
    return { track: (m) => a.track(m), identify: (m) => a.identify(m), page: (m) => a.page(m), done: () => a.closeAndFlush({ timeout: 30_000 }) };
  },
  // RudderStack: Basic auth with the write key, gzip bodies. Its errors reach
  // `failures` through errorHandler; its own logger would print the faults the
  // lossy proxy causes on purpose (ECONNRESET, 503) into a passing run.
  '@rudderstack/rudder-sdk-node': (key, host, failures) => {
    const a = new Rudder(key, { dataPlaneUrl: host, flushAt: 3, flushInterval: 50, retryCount: 3, logLevel: 'none', errorHandler: (e: unknown) => failures.push(e) });
    return { track: (m) => a.track(m), identify: (m) => a.identify(m), page: (m) => a.page(m), done: async () => void (await a.flush()) };
  },
};

describe.each(Object.keys(sdks))('%s, through its own code', (name) => {
  it('sends track, identify and page, read back as events and traits, with a retried batch stored once', async () => {
    const proxy = await FaultProxy.start(live.url);
    // The first request is stored but its answer lost, the retry meets a 503: the SDK retries the same messageIds.
    proxy.faults.push('lose-answer', { status: 503 });
    const failures: unknown[] = [];
    const user = `seg_${name.replace(/\W+/g, '_')}`;
    try {
      const sdk = sdks[name]!(live.key, proxy.url, failures);
      sdk.track({ userId: user, event: 'Order Completed', properties: { total: 42, currency: 'EUR' } });
      sdk.identify({ userId: user, traits: { plan: 'team', email: 'ops@example.com' } });
      sdk.page({ userId: user, name: 'Pricing', properties: { path: '/pricing' } });
      await sdk.done();
    } finally {
      await proxy.close();
    }
    expect(failures).toEqual([]);
    // The lost answer was to a request the server stored: the SDK's retry was a repeat.
    expect(proxy.log[0]).toMatchObject({ fault: 'lose-answer', upstream: 200 });
    expect(proxy.log.at(-1)).toMatchObject({ fault: 'pass', upstream: 200 });

    const events = (await live.events(5000)).filter((e) => e.distinct_id === user);
    expect(events.map((e) => e.event).sort()).toEqual(['$pageview', 'Order Completed']);
    const order = events.find((e) => e.event === 'Order Completed')!;
    expect(order.properties).toMatchObject({ total: 42, currency: 'EUR' });
    expect(order.insert_id).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
    expect(events.find((e) => e.event === '$pageview')!.properties).toMatchObject({ path: '/pricing', name: 'Pricing' });
    // The event time is the SDK's own, corrected for skew: within the test's run.
    expect(Math.abs(Date.parse(order.timestamp) - Date.now())).toBeLessThan(10 * 60_000);
    expect((await live.person(user)).traits).toEqual({ plan: 'team', email: 'ops@example.com' });
  });
});
