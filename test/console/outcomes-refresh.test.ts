import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { sha256 } from '../../src/domain/sha256.js';
import { SqlitePageReader } from '../../src/stores/sqlite/page-reader.js';
import { type Fixture, send } from '../helpers/fixture.js';
import { signedInFixture } from './helpers.js';

let f: Fixture;
let alice: { cookie: string; csrf: string };
let get: Awaited<ReturnType<typeof signedInFixture>>['get'];

beforeAll(async () => {
  ({ f, session: alice, get } = await signedInFixture());
});
afterAll(async () => f?.close());
afterEach(() => vi.restoreAllMocks());

const refresh = () => f.app.inject({ method: 'GET', url: `/console/sources/${f.sourceId}/outcomes`, headers: { cookie: alice.cookie, accept: 'application/json' } });

it('fault: outcome counts did not move while the source page was open; its script asks for them again, and they have moved', async () => {
  const page = await f.app.inject({ method: 'GET', url: `/console/sources/${f.sourceId}`, headers: { cookie: alice.cookie } });
  expect(page.body).toContain(`<section aria-labelledby="outcomes-h" id="outcomes" data-refresh="/console/sources/${f.sourceId}/outcomes">`);
  expect(page.body).toContain('<p class="hint">No items in the last 24 hours.</p>');

  const before = await refresh();
  expect(before.statusCode).toBe(200);
  expect(before.headers['content-type']).toMatch(/^application\/json/);
  expect(before.headers['cache-control']).toBe('no-store');
  expect(before.json()).toMatchObject({ codes: [], chart: '<p class="hint">No items in the last 24 hours.</p>' });

  expect((await send(f, { items: [{ event: 'Order placed', distinct_id: 'u1' }, { event: '$nope', distinct_id: 'u1' }] })).statusCode).toBe(202);
  await f.collector.outcomes.flush();
  const after = (await refresh()).json() as { totals: string; chart: string; codes: unknown[] };
  expect(after.totals).toContain('Items in the last 24 hours: <span class="accepted"><strong>1</strong> accepted</span>');
  expect(after.totals).toContain('<span class="refused"><strong>1</strong> refused</span>');
  expect(after.chart).toContain('<svg');
  expect(after.codes).toEqual([{ outcome: 'refused', code: 'reserved_event_name', count: '1' }]);
});

it('reads the counts where page reads run (the page-read thread), never the connection that writes, and no kept item', async () => {
  const rows = vi.spyOn(SqlitePageReader.prototype, 'rows');
  const samples = vi.spyOn(f.collector.store.outcomes, 'samples');
  expect((await refresh()).statusCode).toBe(200);
  expect(rows).toHaveBeenCalled();
  expect(samples).not.toHaveBeenCalled();
});

it('is not counted as activity: a page left open does not keep its session alive', async () => {
  const hash = sha256(alice.cookie.split('=')[1]!);
  const seen = (await f.collector.accounts.getSession(hash))!.lastSeenAt;
  f.clock.advance(10 * 60_000);
  expect((await refresh()).statusCode).toBe(200);
  expect((await f.collector.accounts.getSession(hash))!.lastSeenAt).toBe(seen);
});

it('asks for a session like every console route: none leads to the sign-in page, never the counts', async () => {
  const res = await f.app.inject({ method: 'GET', url: `/console/sources/${f.sourceId}/outcomes` });
  expect(res.statusCode).toBe(303);
  expect(res.headers.location).toBe('/console/login');
});
