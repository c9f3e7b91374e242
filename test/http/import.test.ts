import { afterEach, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/docs/openapi.js';
import { referencePage } from '../../src/docs/reference-page.js';
import { monthOf } from '../../src/domain/month.js';
import { type Fixture, type FixtureOptions, makeFixture, send } from '../helpers/fixture.js';

const DAY = 86_400_000;
let f: Fixture;
let open = false;
afterEach(async () => {
  if (open) await f.close();
  open = false;
});

async function fixture(opts: FixtureOptions = {}): Promise<Fixture> {
  f = await makeFixture(opts);
  open = true;
  return f;
}

/** POSTs to the import endpoint with the fixture's key. */
function sendImport(body: unknown, opts: { query?: string; headers?: Record<string, string> } = {}) {
  return f.app.inject({
    method: 'POST',
    url: `/api/v1/import${opts.query ? `?${opts.query}` : ''}`,
    headers: { authorization: `Bearer ${f.key}`, 'content-type': 'application/json', ...opts.headers },
    payload: JSON.stringify(body),
  });
}

const codes = (body: { errors: { index: number; code: string; field: string }[] }) => body.errors.map((e) => `${e.index}:${e.code}@${e.field}`);

describe('POST /api/v1/import: timestamps', () => {
  it('takes events as old as the retention (400 days by default), stored with their own timestamp', async () => {
    await fixture();
    const t = f.clock.ms - 400 * DAY;
    const res = await sendImport({ items: [{ event: 'old_order', distinct_id: 'u1', timestamp: t, insert_id: 'o1' }] });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ accepted: 1, errors: [], dropped: [] });
    const [e] = await f.collector.store.listEvents(f.sourceId, 10);
    expect(e).toMatchObject({ event: 'old_order', timestamp: t, receivedAt: f.clock.ms, insertId: 'o1' });
  });

  it('refuses a timestamp beyond the retention with timestamp_before_retention, and never answers timestamp_too_old', async () => {
    await fixture();
    const res = await sendImport({
      items: [
        { event: 'e', distinct_id: 'u', timestamp: f.clock.ms - 400 * DAY - 1 },
        { event: 'e', distinct_id: 'u', timestamp: f.clock.ms - 8 * DAY },
      ],
    });
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(codes(body)).toEqual(['0:timestamp_before_retention@timestamp']);
    expect(body.errors[0].message).toMatch(/400 days/);
    expect(body.accepted).toBe(1);
  });

  it("follows the project's own retention", async () => {
    await fixture();
    await f.admin.updateProject(f.projectId, { retentionDays: 30 });
    const res = await sendImport({
      items: [
        { event: 'e', distinct_id: 'u', timestamp: f.clock.ms - 30 * DAY },
        { event: 'e', distinct_id: 'u', timestamp: f.clock.ms - 31 * DAY },
      ],
    });
    expect(codes(res.json())).toEqual(['1:timestamp_before_retention@timestamp']);
  });

  it('requires a timestamp on every item (missing_timestamp), identify included; a null counts as missing', async () => {
    await fixture();
    const res = await sendImport({
      items: [
        { event: 'e', distinct_id: 'u' },
        { type: 'identify', distinct_id: 'u', properties: { plan: 'pro' } },
        { event: 'e', distinct_id: 'u', timestamp: null },
        { event: 'e', distinct_id: 'u', timestamp: new Date(f.clock.ms - DAY).toISOString() },
      ],
    });
    expect(codes(res.json())).toEqual(['0:missing_timestamp@timestamp', '1:missing_timestamp@timestamp', '2:missing_timestamp@timestamp']);
    expect(res.json().errors[0].message).toMatch(/needs a "timestamp"/);
  });

  it('refuses timestamps more than 10 minutes ahead, and unreadable ones, as the batch endpoint does', async () => {
    await fixture();
    const res = await sendImport({
      items: [
        { event: 'e', distinct_id: 'u', timestamp: f.clock.ms + 10 * 60_000 + 1 },
        { event: 'e', distinct_id: 'u', timestamp: 'last tuesday' },
        { event: 'e', distinct_id: 'u', timestamp: f.clock.ms + 10 * 60_000 },
      ],
    });
    expect(codes(res.json())).toEqual(['0:timestamp_in_future@timestamp', '1:invalid_timestamp@timestamp']);
  });

  it('on the batch endpoint, timestamp_too_old now points to /api/v1/import', async () => {
    await fixture();
    const res = await send(f, { items: [{ event: 'e', distinct_id: 'u', timestamp: f.clock.ms - 8 * DAY }, { event: 'ok', distinct_id: 'u' }] });
    const [e] = res.json().errors;
    expect(e).toMatchObject({ code: 'timestamp_too_old', field: 'timestamp' });
    expect(e.message).toMatch(/POST \/api\/v1\/import/);
  });

  it('all items refused is 400 all_items_invalid; strict=true refuses the whole batch', async () => {
    await fixture();
    const all = await sendImport({ items: [{ event: 'e', distinct_id: 'u' }] });
    expect(all.statusCode).toBe(400);
    expect(all.json().error.code).toBe('all_items_invalid');
    const strict = await sendImport({ items: [{ event: 'e', distinct_id: 'u', timestamp: f.clock.ms }, { event: 'e', distinct_id: 'u' }] }, { query: 'strict=true' });
    expect(strict.statusCode).toBe(400);
    expect(strict.json().error).toMatchObject({ code: 'strict_item_invalid', errors: [{ index: 1, code: 'missing_timestamp' }] });
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toEqual([]);
  });

  it('validate=true is a dry run showing the timestamp as it would be stored', async () => {
    await fixture();
    const t = f.clock.ms - 100 * DAY;
    const res = await sendImport({ items: [{ event: 'e', distinct_id: 'u', timestamp: t }] }, { query: 'validate=true' });
    expect(res.statusCode).toBe(200);
    expect(res.json().items[0]).toMatchObject({ index: 0, timestamp: new Date(t).toISOString(), outcome: 'accepted' });
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toEqual([]);
  });
});

describe('POST /api/v1/import: the same request checks as the batch endpoint', () => {
  it('refuses browsers, missing and wrong keys, other methods, bad queries and bodies, in the same order', async () => {
    await fixture();
    const post = (headers: Record<string, string>, payload = '{"items":[]}', url = '/api/v1/import') =>
      f.app.inject({ method: 'POST', url, headers, payload });
    const json = { 'content-type': 'application/json' };
    const auth = { authorization: `Bearer ${f.key}` };
    expect((await post({ ...json, origin: 'https://example.com', ...auth })).json().error.code).toBe('browser_not_allowed');
    expect((await post(json)).json().error.code).toBe('missing_key');
    expect((await post({ ...json, authorization: 'Bearer srv_live_nope' })).json().error.code).toBe('invalid_key');
    expect((await f.app.inject({ method: 'GET', url: '/api/v1/import', headers: auth })).statusCode).toBe(405);
    expect((await post({ ...json, ...auth }, '{}', '/api/v1/import?since=1')).json().error.code).toBe('invalid_query');
    expect((await post({ ...auth, 'content-type': 'text/plain' })).json().error.code).toBe('unsupported_media_type');
    expect((await post({ ...json, ...auth }, '{"items":')).json().error.code).toBe('invalid_json');
    expect((await post({ ...json, ...auth })).json().error.code).toBe('batch_empty');
    expect((await post({ ...json, ...auth }, '{}', '/api/v1/imports')).json().error.code).toBe('not_found');
  });

  it('answers 404 when the project does not have the API enabled', async () => {
    await fixture({ apiEnabled: false });
    expect((await sendImport({ items: [{ event: 'e', distinct_id: 'u', timestamp: f.clock.ms }] })).statusCode).toBe(404);
  });
});

describe('one insert_id space per source, shared with /api/v1/batch', () => {
  it('an insert_id stored by the batch endpoint is a duplicate on import', async () => {
    await fixture();
    expect((await send(f, { items: [{ event: 'e', distinct_id: 'u', insert_id: 'shared_1' }] })).json()).toMatchObject({ accepted: 1, duplicates: [] });
    const again = await sendImport({ items: [{ event: 'e', distinct_id: 'u', insert_id: 'shared_1', timestamp: f.clock.ms - 30 * DAY }] });
    expect(again.json()).toMatchObject({ accepted: 1, duplicates: [0] });
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toHaveLength(1);
    expect(await f.collector.store.usage(f.projectId, monthOf(f.clock.ms))).toBe(1);
  });

  it('an insert_id stored by import is a duplicate on the batch endpoint', async () => {
    await fixture();
    const t = f.clock.ms - 30 * DAY;
    expect((await sendImport({ items: [{ event: 'e', distinct_id: 'u', insert_id: 'shared_2', timestamp: t }] })).json()).toMatchObject({ accepted: 1 });
    const again = await send(f, { items: [{ event: 'e', distinct_id: 'u', properties: { $insert_id: 'shared_2' } }] });
    expect(again.json()).toMatchObject({ accepted: 1, duplicates: [0] });
    const events = await f.collector.store.listEvents(f.sourceId, 10);
    expect(events).toHaveLength(1);
    expect(events[0]!.timestamp).toBe(t);
  });
});

describe('people, metering and the plan limit, as the batch endpoint', () => {
  it('an imported old identify never overwrites a newer trait; an older-than-stored one fills in missing keys', async () => {
    await fixture();
    await send(f, { items: [{ type: 'identify', distinct_id: 'cust', properties: { plan: 'team' } }] });
    await sendImport({ items: [{ type: 'identify', distinct_id: 'cust', timestamp: f.clock.ms - 200 * DAY, properties: { plan: 'free', signup: '2026-05' } }] });
    expect(await f.collector.store.findPerson(f.projectId, { distinctId: 'cust' })).toMatchObject({ traits: { plan: 'team', signup: '2026-05' } });
  });

  it('imported events land on the person of their distinct_id', async () => {
    await fixture();
    await send(f, { items: [{ event: 'live', distinct_id: 'cust' }] });
    await sendImport({ items: [{ event: 'old', distinct_id: 'cust', timestamp: f.clock.ms - 50 * DAY }] });
    const events = await f.collector.store.listEvents(f.sourceId, 10);
    expect(events.map((e) => e.event).sort()).toEqual(['live', 'old']);
    expect(new Set(events.map((e) => e.personId)).size).toBe(1);
  });

  it('enrichment and the bot filter apply as on the batch endpoint', async () => {
    await fixture();
    const res = await sendImport({
      items: [
        { event: 'e', distinct_id: 'u', timestamp: f.clock.ms - 20 * DAY, properties: { $user_agent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36' } },
        { event: 'e', distinct_id: 'u', timestamp: f.clock.ms - 20 * DAY, properties: { $user_agent: 'Googlebot/2.1 (+http://www.google.com/bot.html)' } },
      ],
    });
    expect(res.json()).toMatchObject({ accepted: 1, dropped: [{ index: 1, reason: 'bot_filtered' }] });
    const [e] = await f.collector.store.listEvents(f.sourceId, 10);
    expect(e!.properties).toMatchObject({ $browser: 'Chrome', $os: 'Windows', $source_id: f.sourceId });
  });

  it('track items are metered in the month they arrive, and the plan limit drops the rest with collection_paused', async () => {
    await fixture();
    await f.admin.updateProject(f.projectId, { monthlyEventLimit: 2 });
    const old = f.clock.ms - 90 * DAY;
    const res = await sendImport({ items: [0, 1, 2].map((i) => ({ event: 'e', distinct_id: 'u', timestamp: old + i })) });
    expect(res.json()).toMatchObject({ accepted: 2, dropped: [{ index: 2, reason: 'collection_paused' }] });
    expect(await f.collector.store.usage(f.projectId, monthOf(f.clock.ms))).toBe(2);
    expect(await f.collector.store.usage(f.projectId, monthOf(old))).toBe(0);
  });
});

describe('the import window', () => {
  it('imports count in their own window, named in the RateLimit headers, and leave burst and sustained alone', async () => {
    await fixture();
    const res = await sendImport({ items: Array.from({ length: 10 }, (_, i) => ({ event: 'e', distinct_id: 'u', timestamp: f.clock.ms - i })) });
    expect(res.headers['ratelimit-policy']).toBe('"import";q=300000;w=60');
    expect(res.headers.ratelimit).toBe('"import";r=299990;t=60');
    const live = await send(f, { items: [{ event: 'e', distinct_id: 'u' }] });
    expect(live.headers.ratelimit).toBe('"burst";r=49999;t=10, "sustained";r=59999;t=60');
  });

  it('a request over the import window is refused whole with 429 and Retry-After: 60, and live batches still pass', async () => {
    await fixture({ limits: { import: 10 } });
    const items = (n: number) => Array.from({ length: n }, (_, i) => ({ event: 'e', distinct_id: 'u', timestamp: f.clock.ms - i }));
    expect((await sendImport({ items: items(6) })).statusCode).toBe(202);
    const refused = await sendImport({ items: items(5) });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.headers['ratelimit-policy']).toBe('"import";q=10;w=60');
    expect(refused.headers.ratelimit).toBe('"import";r=4;t=60');
    expect(refused.json().error).toMatchObject({ code: 'rate_limited' });
    expect(refused.json().error.message).toMatch(/import limit/);
    expect(await f.collector.store.listEvents(f.sourceId, 100)).toHaveLength(6);
    expect((await send(f, { items: items(5) })).statusCode).toBe(202);
    f.clock.advance(60_000);
    expect((await sendImport({ items: items(5) })).statusCode).toBe(202);
  });

  it('INLET_LIMIT_IMPORT=0 turns the import window off', async () => {
    await fixture({ limits: { import: 0 } });
    const res = await sendImport({ items: [{ event: 'e', distinct_id: 'u', timestamp: f.clock.ms }] });
    expect(res.statusCode).toBe(202);
    expect(res.headers['ratelimit-policy']).toBeUndefined();
  });
});

describe('reference pages', () => {
  it('the OpenAPI document describes /api/v1/import with the same answers as /api/v1/batch', () => {
    const doc = openApiDocument('http://inlet.test');
    const batch = doc.paths['/api/v1/batch']!.post!;
    const imp = doc.paths['/api/v1/import']!.post!;
    expect(imp.operationId).toBe('importBatch');
    expect(imp.responses).toEqual(batch.responses);
    expect(imp.description).toMatch(/missing_timestamp/);
  });

  it('the reference page has a section on import that names its codes and window', () => {
    const page = referencePage('http://inlet.test');
    expect(page).toContain('id="import"');
    expect(page).toContain('POST http://inlet.test/api/v1/import');
    expect(page).toContain('&quot;import&quot;;q=300000;w=60');
    for (const c of ['missing_timestamp', 'timestamp_before_retention']) expect(page).toContain(`id="${c}"`);
  });
});
