/** Tracking plans at intake, on both engines: codes and paths per item, the modes, strict and dry runs, pinned versions, every intake, and a second server. */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planAdmin } from '../../src/domain/plans/plan-admin.js';
import { planViolations } from '../../src/domain/plans/violations.js';
import { sourceOutcomes } from '../../src/domain/outcomes/reports.js';
import { outcomesSection } from '../../src/console/views/outcomes.js';
import { CheckThreads } from '../../src/intakes/check-threads.js';
import { PostgresStore } from '../../src/stores/postgres/postgres-store.js';
import type { Store } from '../../src/stores/port.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { STORES, createTestDatabase } from '../conformance/stores.js';
import { type Fixture, TestClock, makeFixture, send, tempDir } from '../helpers/fixture.js';

export const CHECKOUT_PLAN = {
  rules: [
    {
      type: 'track',
      event: 'order_completed',
      json_schema: {
        type: 'object',
        required: ['amount', 'currency'],
        properties: {
          amount: { type: 'number', minimum: 0 },
          currency: { type: 'string', pattern: '^[A-Z]{3}$' },
          coupon: { type: 'string' },
          email: { type: 'string', format: 'email' },
        },
      },
    },
    { type: 'track', event: 'signed_up', json_schema: { type: 'object' } },
    { type: 'identify', json_schema: { type: 'object', properties: { plan: { enum: ['free', 'pro'] } } } },
    { type: 'group', group_type: 'company', json_schema: { type: 'object', required: ['name'] } },
  ],
};

const order = (props: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ event: 'order_completed', distinct_id: 'u_1', properties: props, ...extra });

async function withPlan(f: Fixture, store: Store, mode: 'observe' | 'enforce', opts: { unplanned?: 'allow' | 'refuse'; rules?: unknown } = {}) {
  const plans = planAdmin(store, f.clock.now);
  const plan = await plans.create(f.projectId, `checkout-${mode}-${Math.random()}`);
  await plans.push(plan.id, opts.rules ?? CHECKOUT_PLAN);
  await plans.setSourcePlan(f.sourceId, { plan: plan.id, mode, unplannedEvents: opts.unplanned });
  return plan;
}

describe.each(STORES)('tracking plans at intake on $name', (engine) => {
  let db: { url: string; drop: () => Promise<void> } | null = null;
  let tmp: ReturnType<typeof tempDir> | null = null;
  const open = async (): Promise<Store> => (engine.name === 'postgres' ? PostgresStore.connect(db!.url) : SqliteStore.open(tmp!.dir));
  const fixtures: Fixture[] = [];
  const fixture = async (opts: Parameters<typeof makeFixture>[0] = {}) => {
    const f = await makeFixture({ store: await open(), ...opts });
    fixtures.push(f);
    return f;
  };

  beforeAll(async () => {
    if (engine.name === 'postgres') db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const f of fixtures) await f.close();
    await db?.drop();
  });

  const fresh = async (opts: Parameters<typeof makeFixture>[0] = {}) => {
    tmp = tempDir();
    return fixture(opts);
  };

  it('enforce: refuses each faulted item with its code and the path of its first violation, keeps the rest, never echoes a value', async () => {
    const f = await fresh();
    await withPlan(f, f.collector.store, 'enforce');
    const res = await send(f, {
      items: [
        order({ amount: 12.5, currency: 'EUR' }),
        order({ amount: 'twelve-secret', currency: 'euro-secret' }),
        { event: 'page_viewed', distinct_id: 'u_1' },
        order({ currency: 'EUR' }),
        { type: 'identify', distinct_id: 'u_1', properties: { plan: 'enterprise-secret' } },
        { type: 'group', distinct_id: 'u_1', group_type: 'company', group_key: 'acme', properties: {} },
        { type: 'group', distinct_id: 'u_1', group_type: 'team', group_key: 't1', properties: {} },
        { type: 'identify', distinct_id: 'u_2', properties: { plan: 'pro' } },
      ],
    });
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body.accepted).toBe(3);
    expect(body.warnings).toBeUndefined();
    expect(body.errors.map((e: { index: number; code: string; field: string }) => [e.index, e.code, e.field])).toEqual([
      [1, 'plan_violation', 'properties.amount'],
      [2, 'unplanned_event', 'event'],
      [3, 'plan_violation', 'properties.amount'],
      [4, 'plan_violation', 'properties.plan'],
      [5, 'plan_violation', 'properties.name'],
    ]);
    const second = body.errors[0].message as string;
    expect(second).toContain('properties.amount: type');
    expect(second).toContain('properties.currency: pattern');
    expect(res.body).not.toContain('secret');
  });

  it('context.plan_version picks a rule version (default: the highest); a version the plan does not have is a plan_violation at context.plan_version, on the main thread and a check thread', async () => {
    const money = (type: string) => ({ type: 'object', required: ['amount'], properties: { amount: { type } } });
    const rules = {
      rules: [
        { type: 'track', event: 'order_completed', version: 1, json_schema: money('string') },
        { type: 'track', event: 'order_completed', version: 2, json_schema: money('number') },
        { type: 'track', event: 'signed_up', json_schema: { type: 'object', required: ['via'] } },
        { type: 'identify', version: 1, json_schema: { type: 'object', properties: { plan: { type: 'string' } } } },
        { type: 'identify', version: 3, json_schema: { type: 'object', properties: { plan: { enum: ['free', 'pro'] } } } },
      ],
    };
    const items = [
      order({ amount: 12 }),
      order({ amount: '12' }),
      order({ amount: '12' }, { context: { plan_version: 1 } }),
      order({ amount: 12 }, { context: { plan_version: 1 } }),
      order({ amount: 12 }, { context: { plan_version: 2 } }),
      order({ amount: 12 }, { context: { plan_version: 7 } }),
      order({ amount: 12 }, { context: { plan_version: '2' } }),
      // An event whose rule names no version has that one rule, whatever the item asks.
      { event: 'signed_up', distinct_id: 'u_1', properties: { via: 'mail' }, context: { plan_version: 9 } },
      { type: 'identify', distinct_id: 'u_1', properties: { plan: 'enterprise' } },
      { type: 'identify', distinct_id: 'u_1', properties: { plan: 'enterprise' }, context: { plan_version: 1 } },
      { type: 'identify', distinct_id: 'u_1', properties: { plan: 'pro' }, context: { plan_version: 2 } },
    ];
    const expected = [
      [1, 'plan_violation', 'properties.amount'],
      [3, 'plan_violation', 'properties.amount'],
      [5, 'plan_violation', 'context.plan_version'],
      [6, 'plan_violation', 'context.plan_version'],
      [8, 'plan_violation', 'properties.plan'],
      [10, 'plan_violation', 'context.plan_version'],
    ];
    const threads = new CheckThreads(1, { minBytes: 0 });
    try {
      for (const f of [await fresh(), await fresh({ checks: threads })]) {
        await withPlan(f, f.collector.store, 'enforce', { rules });
        const body = (await send(f, { items })).json();
        expect(body.errors.map((e: { index: number; code: string; field: string }) => [e.index, e.code, e.field])).toEqual(expected);
        expect(body.accepted).toBe(items.length - expected.length);
        expect(body.errors[2].message).toContain('it has versions 1, 2');
        expect(body.errors[5].message).toContain('it has versions 1, 3');
        // Read, so not among what a dry run says was not kept (nor is it stored).
        const dry = (await send(f, { items: [items[2]] }, { query: 'validate=true' })).json();
        expect(dry.items[0].dropped_keys).toEqual([]);
        // A Segment message names its rule version in its context the same way.
        const segment = await f.app.inject({
          method: 'POST', url: '/v1/batch', headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({
            writeKey: f.key,
            batch: [
              { type: 'track', event: 'order_completed', userId: 'u_1', messageId: 'm-1', properties: { amount: '12' }, context: { plan_version: 1, ip: '10.0.0.1' } },
              { type: 'track', event: 'order_completed', userId: 'u_1', messageId: 'm-2', properties: { amount: '12' } },
              { type: 'track', event: 'order_completed', userId: 'u_1', messageId: 'm-3', properties: { amount: 12 }, context: { plan_version: 7 } },
            ],
          }),
        });
        expect(segment.json().errors.map((e: { index: number; code: string; field: string }) => [e.index, e.code, e.field])).toEqual([[1, 'plan_violation', 'properties.amount'], [2, 'plan_violation', 'context.plan_version']]);
      }
      // The batch, the dry run and the Segment body (its key inside it) on the thread.
      expect(threads.stats.offThread).toBe(3);
    } finally {
      await threads.close();
    }
  });

  it('enforce: an item that fails its own checks keeps its own code; strict=true refuses the batch; a dry run shows the refusals', async () => {
    const f = await fresh();
    await withPlan(f, f.collector.store, 'enforce');
    const items = [order({ amount: 1, currency: 'EUR' }), order({ amount: -1, currency: 'EUR' }), { event: '', distinct_id: 'u_1' }];
    const plain = (await send(f, { items })).json();
    expect(plain.errors.map((e: { code: string }) => e.code)).toEqual(['plan_violation', 'invalid_event_name']);
    const strict = await send(f, { items }, { query: 'strict=true' });
    expect(strict.statusCode).toBe(400);
    expect(strict.json().error.code).toBe('strict_item_invalid');
    const dry = await send(f, { items }, { query: 'validate=true' });
    expect(dry.statusCode).toBe(200);
    expect(dry.json().errors.map((e: { index: number; code: string }) => [e.index, e.code])).toEqual([[1, 'plan_violation'], [2, 'invalid_event_name']]);
    expect(dry.json().items.map((i: { index: number }) => i.index)).toEqual([0]);
  });

  it('enforce with unplanned events allowed; observe keeps every item with warnings, counts them per code and keeps samples; the log line names the codes', async () => {
    const stream = new PassThrough();
    let logs = '';
    stream.on('data', (d) => (logs += d));
    const f = await fresh({ logStream: stream });
    await withPlan(f, f.collector.store, 'enforce', { unplanned: 'allow' });
    const allowed = (await send(f, { items: [{ event: 'page_viewed', distinct_id: 'u_1' }] })).json();
    expect(allowed.accepted).toBe(1);
    expect(allowed.errors).toEqual([]);

    await withPlan(f, f.collector.store, 'observe');
    const res = await send(f, { items: [order({ amount: 2, currency: 'EUR' }), order({ amount: 'x', currency: 'EUR' }), { event: 'page_viewed', distinct_id: 'u_1' }] });
    const body = res.json();
    expect(body.accepted).toBe(3);
    expect(body.errors).toEqual([]);
    // observe allows unplanned events unless told otherwise: only the violation warns.
    expect(body.warnings.map((w: { index: number; code: string; field: string }) => [w.index, w.code, w.field])).toEqual([[1, 'plan_violation', 'properties.amount']]);
    const clean = (await send(f, { items: [order({ amount: 3, currency: 'EUR' })] })).json();
    expect(clean.warnings).toEqual([]);

    await f.collector.outcomes.flush();
    const rows = await f.collector.store.outcomes.outcomeCounts({ sourceId: f.sourceId, since: f.clock.ms - 86_400_000, until: f.clock.ms + 86_400_000, bucketMs: 86_400_000 });
    expect(rows.filter((r) => r.outcome === 'warned')).toEqual([expect.objectContaining({ code: 'plan_violation', count: 1 })]);
    const samples = await f.collector.store.outcomes.samples({ sourceId: f.sourceId, code: 'plan_violation', limit: 10 });
    expect(samples).toHaveLength(1);
    expect(samples[0]!.outcome).toBe('warned');
    expect(JSON.parse(samples[0]!.item).event).toBe('order_completed');
    const line = logs.split('\n').filter((l) => l.includes('"warned"')).map((l) => JSON.parse(l))[0];
    expect(line.items.warnings).toEqual({ plan_violation: 1 });
  });

  it('outcomes count the refused (enforce) and warned (observe) items per event and code, from every request, strict ones too; the source page reads them by event', async () => {
    const f = await fresh();
    await withPlan(f, f.collector.store, 'enforce');
    const bad = order({ amount: 'x', currency: 'EUR' });
    await send(f, { items: [bad, bad, { event: 'page_viewed', distinct_id: 'u_1' }, { type: 'identify', distinct_id: 'u_1', properties: { plan: 'gold' } }, order({ amount: 1, currency: 'EUR' })] });
    // Refused whole (strict): its plan-refused items count by event all the same; a dry run counts nothing.
    expect((await send(f, { items: [bad, { event: 'page_viewed', distinct_id: 'u_1' }] }, { query: 'strict=true' })).statusCode).toBe(400);
    await send(f, { items: [bad] }, { query: 'validate=true' });
    await withPlan(f, f.collector.store, 'observe');
    await send(f, { items: [bad, { event: 'page_viewed', distinct_id: 'u_1' }] });
    await f.collector.outcomes.flush();
    const day = { since: f.clock.ms - 86_400_000, until: f.clock.ms + 86_400_000 };
    const rows = await f.collector.store.outcomes.eventOutcomeCounts({ sourceId: f.sourceId, ...day });
    expect(rows.map((r) => [r.outcome, r.code, r.event, r.count])).toEqual([
      ['refused', 'plan_violation', '(identify)', 1],
      ['refused', 'plan_violation', 'order_completed', 3],
      ['refused', 'unplanned_event', 'page_viewed', 2],
      ['warned', 'plan_violation', 'order_completed', 1],
    ]);
    // The by-code counts agree with the by-event ones.
    const byCode = await f.collector.store.outcomes.outcomeCounts({ sourceId: f.sourceId, ...day, bucketMs: 86_400_000 });
    expect(byCode.filter((r) => r.code === 'plan_violation' || r.code === 'unplanned_event').map((r) => [r.outcome, r.code, r.count]))
      .toEqual([['refused', 'plan_violation', 4], ['refused', 'unplanned_event', 2], ['warned', 'plan_violation', 1]]);
    const v = await planViolations(f.collector.store.outcomes, f.sourceId, f.clock.ms);
    expect(v.violations.map((r) => [r.event, r.code, r.outcome, r.count, r.latest === null ? null : JSON.parse(r.latest.item).event ?? JSON.parse(r.latest.item).type])).toEqual([
      ['order_completed', 'plan_violation', 'refused', 3, 'order_completed'],
      ['page_viewed', 'unplanned_event', 'refused', 2, 'page_viewed'],
      ['(identify)', 'plan_violation', 'refused', 1, 'identify'],
      ['order_completed', 'plan_violation', 'warned', 1, 'order_completed'],
    ]);
    // The source page's Item outcomes names the events under each of the plan's codes.
    const o = await sourceOutcomes(f.collector.store.outcomes, f.sourceId, f.clock.ms);
    expect(o.codes.filter((c) => c.events !== undefined).map((c) => [c.outcome, c.code, c.events])).toEqual([
      ['refused', 'plan_violation', [{ event: 'order_completed', count: 3 }, { event: '(identify)', count: 1 }]],
      ['refused', 'unplanned_event', [{ event: 'page_viewed', count: 2 }]],
      ['warned', 'plan_violation', [{ event: 'order_completed', count: 1 }]],
    ]);
    expect(outcomesSection(o, f.sourceId).value).toMatch(/<div><code>plan_violation<\/code><ul class="meta code-events"><li><code>order_completed<\/code> 3<\/li>/);
  });

  it('off: no check and no warnings; a pinned version holds while newer ones are pushed', async () => {
    const f = await fresh();
    const plans = planAdmin(f.collector.store, f.clock.now);
    const plan = await withPlan(f, f.collector.store, 'enforce');
    await plans.setSourcePlan(f.sourceId, { mode: 'off' });
    const off = (await send(f, { items: [{ event: 'anything', distinct_id: 'u_1' }] })).json();
    expect(off.accepted).toBe(1);
    expect(off.warnings).toBeUndefined();

    await plans.setSourcePlan(f.sourceId, { plan: `${plan.id}@1`, mode: 'enforce' });
    await plans.push(plan.id, { rules: [...CHECKOUT_PLAN.rules, { type: 'track', event: 'anything', json_schema: { type: 'object' } }] });
    // Every item refused: the request is refused whole, each item with its code.
    const pinned = await send(f, { items: [{ event: 'anything', distinct_id: 'u_1' }] });
    expect(pinned.statusCode).toBe(400);
    expect(pinned.json().error.code).toBe('all_items_invalid');
    expect(pinned.json().error.errors[0].code).toBe('unplanned_event');
    await plans.setSourcePlan(f.sourceId, { plan: plan.id });
    expect((await send(f, { items: [{ event: 'anything', distinct_id: 'u_1' }] })).json().accepted).toBe(1);
  });

  it('every intake applies the plan: the import, Segment, PostHog, Mixpanel and Amplitude, each refusing in its own answer', async () => {
    const f = await fresh();
    await withPlan(f, f.collector.store, 'enforce');
    const imported = await send(f, { items: [order({ amount: 'x', currency: 'EUR' }, { timestamp: new Date(f.clock.ms - 86_400_000 * 30).toISOString() })] }, { path: '/api/v1/import' });
    expect(imported.json().error).toMatchObject({ code: 'all_items_invalid', errors: [expect.objectContaining({ code: 'plan_violation', field: 'properties.amount' })] });
    const segment = await f.app.inject({
      method: 'POST', url: '/v1/batch', headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ writeKey: f.key, batch: [{ type: 'track', event: 'order_completed', userId: 'u_1', messageId: 'm-1', properties: { amount: 'x', currency: 'EUR' } }, { type: 'track', event: 'signed_up', userId: 'u_1', messageId: 'm-2' }] }),
    });
    expect(segment.json().errors.map((e: { index: number; code: string }) => [e.index, e.code])).toEqual([[0, 'plan_violation']]);
    const posthog = await f.app.inject({
      method: 'POST', url: '/batch/', headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ api_key: f.key, batch: [{ event: 'nobody_planned_this', distinct_id: 'u_1', uuid: '0190a6f0-0000-7000-8000-000000000001', properties: {} }, { event: 'signed_up', distinct_id: 'u_1', uuid: '0190a6f0-0000-7000-8000-000000000002', properties: {} }] }),
    });
    expect(posthog.json().errors.map((e: { index: number; code: string }) => [e.index, e.code])).toEqual([[0, 'unplanned_event']]);
    const mixpanel = await f.app.inject({
      method: 'POST', url: '/import?strict=1', headers: { authorization: `Basic ${Buffer.from(`${f.key}:`).toString('base64')}`, 'content-type': 'application/json' },
      payload: JSON.stringify([
        { event: 'order_completed', properties: { distinct_id: 'u_1', time: f.clock.ms, $insert_id: 'mp-plan-1', amount: 'x', currency: 'EUR' } },
        { event: 'signed_up', properties: { distinct_id: 'u_1', time: f.clock.ms, $insert_id: 'mp-plan-2' } },
      ]),
    });
    expect(mixpanel.body).toContain('plan_violation');
    expect(mixpanel.body).toContain('mp-plan-1');
    const amplitude = await f.app.inject({
      method: 'POST', url: '/2/httpapi', headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ api_key: f.key, events: [
        { event_type: 'order_completed', user_id: 'u_1', time: f.clock.ms, insert_id: 'amp-plan-1', event_properties: { amount: -5, currency: 'EUR' } },
        { event_type: 'signed_up', user_id: 'u_1', time: f.clock.ms, insert_id: 'amp-plan-2' },
      ] }),
    });
    expect(amplitude.body).toContain('properties.amount');
    const stored = (await f.collector.store.listEvents(f.sourceId, 100)).map((e) => e.insertId);
    expect(stored).toEqual(expect.arrayContaining(['mp-plan-2', 'amp-plan-2']));
    expect(stored).not.toContain('mp-plan-1');
    expect(stored).not.toContain('amp-plan-1');
  });

  it('a body checked on a check thread gets the same answer as on the main thread', async () => {
    const threads = new CheckThreads(1, { minBytes: 0 });
    try {
      const f = await fresh({ checks: threads });
      await withPlan(f, f.collector.store, 'enforce');
      const res = (await send(f, { items: [order({ amount: 1, currency: 'EUR' }), order({ amount: 'x', currency: 'eu' })] })).json();
      expect(threads.stats.offThread).toBe(1);
      expect(res.accepted).toBe(1);
      expect(res.errors.map((e: { index: number; code: string; field: string }) => [e.index, e.code, e.field])).toEqual([[1, 'plan_violation', 'properties.amount']]);
      // A pattern that would hold a backtracking engine for ever, on the thread: answered, and the thread takes the next body.
      await withPlan(f, f.collector.store, 'enforce', { rules: { rules: [{ type: 'track', event: 'e', json_schema: { properties: { s: { pattern: '^(a+)+$' } } } }] } });
      const hostile = (await send(f, { items: [{ event: 'e', distinct_id: 'u_1', properties: { s: `${'a'.repeat(4000)}!` } }, { event: 'e', distinct_id: 'u_1', properties: { s: 'aaa' } }] })).json();
      expect(hostile.errors.map((e: { index: number; field: string }) => [e.index, e.field])).toEqual([[0, 'properties.s']]);
      expect(threads.stats).toEqual({ offThread: 2, retried: 0 });
    } finally {
      await threads.close();
    }
  });

  it("a source's new version is compiled ahead on the main thread and every check thread once the server refreshes, before any request meets it", async () => {
    const threads = new CheckThreads(2, { minBytes: 0 });
    try {
      const f = await fresh({ checks: threads });
      const plan = await withPlan(f, f.collector.store, 'enforce');
      const v1 = `${plan.id}@1`;
      expect((await threads.held()).here).not.toContain(v1);
      await f.collector.plans.refresh();
      const held = await threads.held();
      expect(held.here).toContain(v1);
      expect(held.threads).toHaveLength(2);
      for (const t of held.threads) expect(t).toContain(v1);
      // A version pushed later (the source takes the latest) is compiled at the next refresh, as is a pinned one.
      await planAdmin(f.collector.store, f.clock.now).push(plan.id, { rules: [...CHECKOUT_PLAN.rules, { type: 'track', event: 'refunded', json_schema: { type: 'object' } }] });
      await f.collector.plans.refresh();
      for (const t of (await threads.held()).threads) expect(t).toContain(`${plan.id}@2`);
      const res = (await send(f, { items: [{ event: 'refunded', distinct_id: 'u_1' }, order({ amount: 'x', currency: 'EUR' })] })).json();
      expect(res.errors.map((e: { index: number; code: string }) => [e.index, e.code])).toEqual([[1, 'plan_violation']]);
      expect(threads.stats).toEqual({ offThread: 1, retried: 0 });
    } finally {
      await threads.close();
    }
  });

  it.runIf(engine.name === 'postgres')('a change made through one server is seen by another on its next request', async () => {
    const clock = new TestClock();
    const a = await fixture({ clock });
    const b = await fixture({ clock, sameAs: a });
    const item = { items: [{ event: 'signed_up', distinct_id: 'u_1' }, { event: 'not_in_plan', distinct_id: 'u_1' }] };
    expect((await send(b, item)).json().accepted).toBe(2);
    const plan = await withPlan(a, a.collector.store, 'enforce');
    expect((await send(b, item)).json().errors[0]).toMatchObject({ index: 1, code: 'unplanned_event' });
    // A new latest version is seen as well.
    await planAdmin(a.collector.store, clock.now).push(plan.id, { rules: [...CHECKOUT_PLAN.rules, { type: 'track', event: 'not_in_plan', json_schema: { type: 'object' } }] });
    expect((await send(b, item)).json().accepted).toBe(2);
    await planAdmin(a.collector.store, clock.now).setSourcePlan(a.sourceId, { mode: 'observe' });
    expect((await send(b, { items: [order({ amount: 'x', currency: 'EUR' })] })).json().warnings[0].code).toBe('plan_violation');
  });
});
