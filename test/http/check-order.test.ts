/**
 * Fault 17: the reference page's order of checks left out the two 503s
 * (server stopping; bodies waiting for room) and said a per-key 429 carries no
 * RateLimit fields. Here the server is held to the page: the order is the
 * list the server runs and the page is built from (src/edge/intake-checks.ts), and for each step a
 * request that fails it and every later step it can also fail must get this
 * step's answer. The per-key 429 must carry exactly the fields the page shows.
 */
import { existsSync } from 'node:fs';
import inject, { type InjectOptions } from 'light-my-request';
import { afterEach, describe, expect, it } from 'vitest';
import { CHECK_ORDER } from '../../src/edge/intake-checks.js';
import { KEY_POLICY_HEADER, KEY_RATELIMIT_HEADER, KEY_RPS, MAX_BODY_BYTES } from '../../src/docs/facts.js';
import { referencePage } from '../../src/docs/reference-page.js';
import { Admission } from '../../src/edge/admission.js';
import { ReadBudget } from '../../src/edge/read-budget.js';
import type { LimitSettings } from '../../src/domain/limits/policies.js';
import { type Store, StoreUnavailableError } from '../../src/stores/port.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { type Fixture, type FixtureOptions, makeFixture, send, tempDir } from '../helpers/fixture.js';

interface Request {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  payload: string;
}

/** What the test needs set up before the request, and done to it, for a request to fail one step. */
interface Fault {
  /** What the fault changes; two faults that change the same thing cannot be combined. */
  touches: string;
  options?: (o: FixtureOptions & { limits: Partial<LimitSettings> }) => void;
  request?: (r: Request) => void;
  /** Run on the fixture before the request is sent. */
  before?: (f: Fixture, env: Env) => Promise<void>;
}

interface Env {
  admission: Admission;
  held: (() => void)[];
  closing: boolean;
}

const twoItems = JSON.stringify({ items: [{ event: 'e', distinct_id: 'u1' }, { event: 'e', distinct_id: 'u2' }] });

/** A store whose durable write always fails, as a full disk or a lost database would. */
function failingWrites(store: Store): Store {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'transaction') return async () => Promise.reject(new StoreUnavailableError('the write fails (test)'));
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/**
 * Steps that inject() cannot reach, since Node's HTTP parser answers them
 * before any route: each is held to its place over a real socket in the file named.
 */
const OVER_A_SOCKET = new Map([['http', 'test/http/hostile-http.test.ts']]);

/** How to fail each step of the page's list; a step missing here (and above) fails the test. */
const FAULTS = new Map<string, Fault>([
  ['stopping', { touches: 'closing', before: async (f, env) => void ((env.closing = true), await f.app.close()) }],
  ['path', { touches: 'path', request: (r) => void (r.path = '/api/v1/nothing') }],
  ['retired', { touches: 'path', options: (o) => void (o.retiredVersions = ['0']), request: (r) => void (r.path = '/api/v0/batch') }],
  ['method', { touches: 'method', request: (r) => void (r.method = 'PUT') }],
  ['browser', { touches: 'origin', request: (r) => void (r.headers.origin = 'https://shop.example') }],
  ['missing-key', { touches: 'key', request: (r) => void delete r.headers.authorization }],
  ['invalid-key', { touches: 'key', request: (r) => void (r.headers.authorization = `Bearer srv_live_${'x'.repeat(32)}`) }],
  ['api-off', { touches: 'project', options: (o) => void (o.apiEnabled = false) }],
  [
    'key-rate',
    {
      touches: 'key-rate',
      options: (o) => void (o.limits.keyRps = 1),
      // The one request the key may send this second, whatever later steps make of it.
      before: async (f) => void (await send(f, JSON.parse(twoItems))),
    },
  ],
  ['query', { touches: 'query', request: (r) => void (r.query = 'colour=red') }],
  ['content-type', { touches: 'content-type', request: (r) => void (r.headers['content-type'] = 'text/plain') }],
  ['encoding', { touches: 'encoding', request: (r) => void (r.headers['content-encoding'] = 'br') }],
  ['size', { touches: 'payload', request: (r) => void (r.payload = 'x'.repeat(MAX_BODY_BYTES + 1)) }],
  // A budget for bodies being read of one byte: any body is over it before a byte is read.
  ['reading', { touches: 'reading', options: (o) => void (o.reading = new ReadBudget(1, 1)) }],
  [
    'room',
    {
      touches: 'admission',
      // Room for one byte, held by another body, and no waiting.
      options: (o) => void (o.admission = new Admission(1, 0)),
      before: async (_f, env) => void env.held.push((await env.admission.enter(1))!),
    },
  ],
  ['json', { touches: 'payload', request: (r) => void (r.payload = '{"items": [') }],
  ['body', { touches: 'payload', request: (r) => void (r.payload = '[]') }],
  ['count', { touches: 'payload', request: (r) => void (r.payload = '{"items": []}') }],
  ['project-rate', { touches: 'project-rate', options: (o) => void (o.limits.burst = 1) }],
  ['items', { touches: 'payload', request: (r) => void (r.payload = JSON.stringify({ items: [{ event: '' }, { event: '' }] })) }],
  ['write', { touches: 'store', options: (o) => void (o.store = failingWrites(o.store!)) }],
]);

/** Step i and, greedily, every later step whose fault can be combined with those already taken. */
function combination(i: number): string[] {
  const taken = [CHECK_ORDER[i]!.name];
  const touched = new Set([FAULTS.get(taken[0]!)!.touches]);
  for (const step of CHECK_ORDER.slice(i + 1)) {
    const fault = FAULTS.get(step.name);
    if (fault === undefined || touched.has(fault.touches)) continue;
    taken.push(step.name);
    touched.add(fault.touches);
  }
  return taken;
}

let fixture: Fixture | undefined;
let held: (() => void)[] = [];
const tmp: { remove: () => void }[] = [];
afterEach(async () => {
  for (const release of held) release();
  held = [];
  await fixture?.close().catch(() => {});
  fixture = undefined;
  for (const t of tmp.splice(0)) t.remove();
});

/** Sets up every fault of `ids`, sends the one request that has them all, and returns the answer's code. */
async function answerTo(ids: string[]): Promise<{ status: number; code: string | null }> {
  const dir = tempDir('inlet-check-order-');
  tmp.push(dir);
  const options: FixtureOptions & { limits: Partial<LimitSettings> } = { limits: {}, store: SqliteStore.open(dir.dir), admission: new Admission() };
  const faults = ids.map((id) => FAULTS.get(id)!);
  for (const fault of faults) fault.options?.(options);
  fixture = await makeFixture(options);
  const env: Env = { admission: options.admission!, held, closing: false };
  const request: Request = {
    method: 'POST',
    path: '/api/v1/batch',
    query: '',
    headers: { authorization: `Bearer ${fixture.key}`, 'content-type': 'application/json' },
    payload: twoItems,
  };
  for (const fault of faults) fault.request?.(request);
  // Later steps first, so that the step under test sets up last (closing the server ends setting up).
  for (const fault of [...faults].reverse()) await fault.before?.(fixture, env);
  const opts: InjectOptions = {
    method: request.method as InjectOptions['method'],
    url: `${request.path}${request.query ? `?${request.query}` : ''}`,
    headers: request.headers,
    payload: request.payload,
  };
  // A closed server refuses inject(); its request handler still answers what arrives late.
  const res = env.closing ? await inject(fixture.app.server.listeners('request')[0] as never, opts) : await fixture.app.inject(opts);
  const body = res.json() as { error?: { code: string } };
  return { status: res.statusCode, code: body.error?.code ?? null };
}

describe('fault 17: the server checks a request in the order the reference page lists', () => {
  it('has a way to fail every step of the list', () => {
    expect(CHECK_ORDER.map((s) => s.name).filter((id) => !FAULTS.has(id) && !OVER_A_SOCKET.has(id))).toEqual([]);
    for (const file of OVER_A_SOCKET.values()) expect(existsSync(new URL(`../../${file}`, import.meta.url)), file).toBe(true);
  });

  it('lists the two 503s: a stopping server first of all, waiting for room after the size and before JSON', () => {
    const ids = CHECK_ORDER.map((s) => s.name);
    expect(ids.indexOf('stopping')).toBe(ids.indexOf('http') + 1);
    expect(ids.indexOf('path')).toBe(ids.indexOf('stopping') + 1);
    expect(ids.indexOf('room')).toBe(ids.indexOf('reading') + 1);
    expect(ids.indexOf('reading')).toBe(ids.indexOf('size') + 1);
    expect(ids.indexOf('json')).toBe(ids.indexOf('room') + 1);
    const page = referencePage('http://inlet.test');
    for (const step of CHECK_ORDER) expect(page).toContain(step.check.replace(/`([^`]*)`/g, '<code>$1</code>').replace(/"/g, '&quot;').replace(/'/g, '&#39;'));
  });

  it.each(CHECK_ORDER.map((s, i) => [s.name, i] as const).filter(([id]) => FAULTS.has(id)))('step %s is answered before every later step it can be combined with', async (_, i) => {
    const ids = combination(i);
    if (i < CHECK_ORDER.length - 1) expect(ids.length).toBeGreaterThan(1);
    const answer = await answerTo(ids);
    expect(CHECK_ORDER[i]!.codes, `${ids.join(' + ')} answered ${answer.status} ${answer.code}`).toContain(answer.code);
  });
});

describe('fault 17: a per-key 429 carries the RateLimit fields the page shows', () => {
  it(`names the per-key limit, with the default of ${KEY_RPS} requests per second`, async () => {
    const dir = tempDir('inlet-check-order-');
    tmp.push(dir);
    fixture = await makeFixture({ store: SqliteStore.open(dir.dir) });
    const batch = { items: [{ event: 'e', distinct_id: 'u' }] };
    for (let n = 0; n < KEY_RPS; n++) expect((await send(fixture, batch, { query: 'validate=true' })).statusCode).toBe(200);
    const res = await send(fixture, batch);
    expect(res.statusCode).toBe(429);
    expect(res.json().error.code).toBe('rate_limited');
    expect(res.headers['ratelimit-policy']).toBe(KEY_POLICY_HEADER);
    expect(res.headers.ratelimit).toBe(KEY_RATELIMIT_HEADER);
    const page = referencePage('http://inlet.test');
    const quoted = (s: string) => s.replace(/"/g, '&quot;');
    expect(page).toContain(`RateLimit-Policy: ${quoted(KEY_POLICY_HEADER)}\nRateLimit: ${quoted(KEY_RATELIMIT_HEADER)}`);
    expect(page).not.toMatch(/per-key limit does not carry/);
  });
});
