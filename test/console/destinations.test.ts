import type dns from 'node:dns';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../conformance/stores.js';
import { type Fixture, knowsNoName, makeFixture } from '../helpers/fixture.js';
import { describeWith } from '../helpers/needs-services.js';
import { FORM, form, makeUser, signIn } from './helpers.js';

let f: Fixture;
let alice: { cookie: string; csrf: string };
let otherProject: string;

/** Names the tests use, answered here: nothing is looked up beyond this machine. */
const NAMES: Record<string, string> = { 'hooks.example.com': '93.184.215.14', 'inside.example.com': '127.0.0.1' };
const resolve = async (host: string): Promise<dns.LookupAddress[]> => (host in NAMES ? [{ address: NAMES[host]!, family: 4 }] : knowsNoName(host));

beforeAll(async () => {
  f = await makeFixture({ destinationReach: { allowPrivate: false, ownDatabaseUrl: null, resolve } });
  const org = await f.admin.createOrg('Umbrella');
  otherProject = (await f.admin.createProject({ name: 'Theirs', orgId: org.id, apiEnabled: true })).id;
  await makeUser(f.collector, f.clock.now, 'alice@acme.test', { orgIds: [f.orgId] });
  alice = await signIn(f.app, 'alice@acme.test');
});
afterAll(async () => f?.close());

const get = (url: string) => f.app.inject({ method: 'GET', url, headers: { cookie: alice.cookie } });
const post = (url: string, fields: Record<string, string>) =>
  f.app.inject({ method: 'POST', url, headers: { ...FORM, cookie: alice.cookie }, payload: form({ _csrf: alice.csrf, ...fields }) });

it('the project page lists Destinations with kind, status, lag and last error, and makes one with Kind, URL and Table', async () => {
  const empty = await get(`/console/projects/${f.projectId}`);
  expect(empty.body).toContain('<h2 id="destinations-h">Destinations</h2>');
  for (const label of ['Kind', 'URL', 'Table']) expect(empty.body).toMatch(new RegExp(`<label for="destination-[a-z]+">${label}</label>`));

  const made = await post(`/console/projects/${f.projectId}/destinations`, { kind: 'webhook', url: 'https://hooks.example.com/in' });
  expect(made.statusCode).toBe(200);
  const secret = /signing secret, shown only now: (whsec_[A-Za-z0-9+/=]+)/.exec(made.body)?.[1];
  expect(secret).toBeDefined();
  const again = await get(`/console/projects/${f.projectId}`);
  expect(again.body).not.toContain(secret);
  expect(again.body).toContain('<strong>webhook</strong> <code>https://hooks.example.com/***</code>');
  expect(again.body).toContain('active · up to date · 0 events delivered');
  expect(again.body).toContain('>Pause</button>');

  // Kept as it was made before the checks at creation: shown masked all the same.
  const [made1] = await f.collector.store.destinations.list(f.projectId);
  await f.collector.store.destinations.create({ ...made1!, id: 'dst_pg', kind: 'postgres', config: { url: 'postgres://u:hunter22@db.example.com/w', table: 'inlet_events' } });
  const listed = await get(`/console/projects/${f.projectId}`);
  expect(listed.body).not.toContain('hunter22');
  expect(listed.body).toContain('postgres://u:***@db.example.com/***');
  await f.collector.store.destinations.delete('dst_pg');
});

it('Pause and Resume change the status; a destination of a project the viewer cannot see is not found', async () => {
  const d = (await f.collector.store.destinations.list(f.projectId))[0]!;
  const paused = await post(`/console/destinations/${d.id}/pause`, {});
  expect(paused.statusCode).toBe(303);
  expect((await get(`/console/projects/${f.projectId}`)).body).toMatch(/paused · up to date[\s\S]*>Resume<\/button>/);
  expect((await post(`/console/destinations/${d.id}/resume`, {})).statusCode).toBe(303);
  expect((await f.collector.store.destinations.get(d.id))!.paused).toBe(false);
  await f.collector.store.destinations.takeLease(d.id, 'srv_test', 60_000);
  await f.collector.store.destinations.failed(d.id, 'srv_test', 'The receiver answered 503.');
  expect((await get(`/console/projects/${f.projectId}`)).body).toMatch(/failing · up to date · 0 events delivered<\/span>\s*<p class="meta">Takes the track events of every source; every event.<\/p>\s*<p class="field-error">Last error: The receiver answered 503.<\/p>/);

  await f.collector.store.destinations.create({ ...d, id: 'dst_theirs', projectId: otherProject });
  expect((await post('/console/destinations/dst_theirs/pause', {})).statusCode).toBe(404);
  expect((await f.collector.store.destinations.get('dst_theirs'))!.paused).toBe(false);
});

it('refuses a postgres destination without a table, saying so in the form, without typing the URL back', async () => {
  const res = await post(`/console/projects/${f.projectId}/destinations`, { kind: 'postgres', url: 'postgres://u:hunter22@db.example.com/w' });
  expect(res.statusCode).toBe(400);
  expect(res.body).toContain('A postgres destination needs Table');
  expect(res.body).not.toContain('hunter22');
});

it('fault: destinations could not be filtered from the form; New destination takes sources (ticked) and event names (comma-separated)', async () => {
  const second = await f.admin.createSource({ projectId: f.projectId, name: 'Checkout <b>' });
  const page = await get(`/console/projects/${f.projectId}`);
  expect(page.body).toContain('<legend>Sources</legend>');
  expect(page.body).toContain(`<label for="destination-source-${second.id}">Checkout &lt;b&gt;</label>`);
  expect(page.body).toMatch(/<label for="destination-events">Events<\/label>/);
  const body = new URLSearchParams({ _csrf: alice.csrf, kind: 'webhook', url: 'https://hooks.example.com/filtered', events: ' Order placed, Signed up,, ' });
  body.append('sources', f.sourceId);
  body.append('sources', second.id);
  const made = await f.app.inject({ method: 'POST', url: `/console/projects/${f.projectId}/destinations`, headers: { ...FORM, cookie: alice.cookie }, payload: body.toString() });
  expect(made.statusCode).toBe(200);
  const id = /Destination (dst_\w+) created/.exec(made.body)![1]!;
  const d = (await f.collector.store.destinations.get(id))!;
  expect(d.sources.sort()).toEqual([f.sourceId, second.id].sort());
  expect(d.events).toEqual(['Order placed', 'Signed up']);
  expect((await get(`/console/projects/${f.projectId}`)).body).toContain('Takes the track events of sources Billing, Checkout &lt;b&gt;; events Order placed, Signed up.');

  // A source of another project is refused, the form kept with what was ticked.
  const wrong = new URLSearchParams({ _csrf: alice.csrf, kind: 'webhook', url: 'https://hooks.example.com/x', events: 'a' });
  wrong.append('sources', 'src_elsewhere');
  const refused = await f.app.inject({ method: 'POST', url: `/console/projects/${f.projectId}/destinations`, headers: { ...FORM, cookie: alice.cookie }, payload: wrong.toString() });
  expect(refused.statusCode).toBe(400);
  expect(refused.body).toContain('No source src_elsewhere in project');
  expect(refused.body).toContain('id="destination-events" name="events" value="a"');
});

it('fault: a destination could not be replayed from the console; Replay from a time moves its cursor back, and a bad time is said beside the field', async () => {
  const d = (await f.collector.store.destinations.list(f.projectId))[0]!;
  const before = d.cursor;
  const bad = await post(`/console/destinations/${d.id}/replay`, { since: 'yesterday' });
  expect(bad.statusCode).toBe(400);
  expect(bad.body).toMatch(new RegExp(`id="replay-${d.id}" name="since"[^>]*value="yesterday"[^>]*aria-invalid="true"`));
  expect(bad.body).toContain(`<p id="replay-${d.id}-error" class="field-error" role="alert">Replay from takes a time in UTC such as 2026-01-31 12:00`);
  const future = await post(`/console/destinations/${d.id}/replay`, { since: new Date(f.clock.now() + 3_600_000).toISOString() });
  expect(future.statusCode).toBe(400);
  expect(future.body).toContain('Replay from must not be in the future');

  // Events stored, delivered (the cursor moved past them), then replayed from before them.
  const key = (await f.admin.createKey(f.sourceId)).key;
  const sent = await f.app.inject({ method: 'POST', url: '/api/v1/batch', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify({ items: [{ event: 'Order placed', distinct_id: 'u1' }] }) });
  expect(sent.statusCode).toBe(202);
  const head = await f.collector.store.destinations.head(f.projectId);
  await f.collector.store.destinations.replay(d.id, head);
  const from = new Date(f.clock.now() - 60_000).toISOString().slice(0, 16).replace('T', ' ');
  const ok = await post(`/console/destinations/${d.id}/replay`, { since: from });
  expect(ok.statusCode).toBe(200);
  expect(ok.body).toContain(`Destination ${d.id} delivers again the events that arrived from ${from}:00 UTC on.`);
  const after = (await f.collector.store.destinations.get(d.id))!;
  expect(after.cursor).toBeLessThan(head);
  expect(after.cursor).toBeLessThanOrEqual(before);
  expect((await post('/console/destinations/dst_theirs/replay', { since: from })).statusCode).toBe(404);
});

it('fault: a destination could not be deleted from the console; Delete asks first, then deletes; another organization\'s is not found', async () => {
  const d = (await f.collector.store.destinations.list(f.projectId))[0]!;
  const page = await get(`/console/projects/${f.projectId}`);
  expect(page.body).toContain(`<form method="get" action="/console/destinations/${d.id}/delete" class="inline"><button type="submit" class="danger">Delete</button></form>`);
  const confirm = await get(`/console/destinations/${d.id}/delete`);
  expect(confirm.statusCode).toBe(200);
  expect(confirm.body).toContain(`Delete destination <code>${d.id}</code>?`);
  expect(await f.collector.store.destinations.get(d.id)).not.toBeNull();
  // A delete without the session's CSRF token changes nothing.
  const forged = await f.app.inject({ method: 'POST', url: `/console/destinations/${d.id}/delete`, headers: { ...FORM, cookie: alice.cookie }, payload: '' });
  expect(forged.statusCode).toBe(403);
  expect(await f.collector.store.destinations.get(d.id)).not.toBeNull();
  const deleted = await post(`/console/destinations/${d.id}/delete`, {});
  expect(deleted.statusCode).toBe(303);
  expect(deleted.headers.location).toBe(`/console/projects/${f.projectId}?deleted=1#destinations-h`);
  expect(await f.collector.store.destinations.get(d.id)).toBeNull();
  expect((await get(deleted.headers.location!)).body).toContain('Destination deleted.');
  expect((await get('/console/destinations/dst_theirs/delete')).statusCode).toBe(404);
  expect((await post('/console/destinations/dst_theirs/delete', {})).statusCode).toBe(404);
  expect(await f.collector.store.destinations.get('dst_theirs')).not.toBeNull();
});

it('a postgres destination URL makes the server read any local file: the form refuses sslrootcert and sslkey by name, and keeps nothing', async () => {
  const before = (await f.collector.store.destinations.list(f.projectId)).length;
  const res = await post(`/console/projects/${f.projectId}/destinations`, {
    kind: 'postgres', url: 'postgres://postgres@127.0.0.1:5432/postgres?sslrootcert=/dev/zero&sslkey=/etc/shadow', table: 't',
  });
  expect(res.statusCode).toBe(400);
  expect(res.body).toMatch(/parameter &quot;sslrootcert&quot; is not accepted: files are never read from the server/);
  expect(await f.collector.store.destinations.list(f.projectId)).toHaveLength(before);
});

it('destinations reach inside the network: metadata, private and documentation addresses, and a name resolving to loopback, are refused in the form', async () => {
  const before = (await f.collector.store.destinations.list(f.projectId)).length;
  for (const url of ['http://169.254.169.254/latest/meta-data', 'http://10.0.0.1:8080/', 'https://192.0.2.2/', 'http://[::ffff:127.0.0.1]:9000/', 'https://inside.example.com/hook']) {
    const res = await post(`/console/projects/${f.projectId}/destinations`, { kind: 'webhook', url });
    expect(res.statusCode, url).toBe(400);
    expect(res.body, url).toContain('is, or resolves to, an address destinations may not reach');
    expect(res.body, url).toContain('INLET_DESTINATIONS_ALLOW_PRIVATE=true');
  }
  expect(await f.collector.store.destinations.list(f.projectId)).toHaveLength(before);
});

describeWith(['postgres'], 'postgres destinations made in the console', () => {
  let g: Fixture;
  let bob: { cookie: string; csrf: string };
  let target: { url: string; drop: () => Promise<void> };
  beforeAll(async () => {
    target = await createTestDatabase();
    // As a server with INLET_DESTINATIONS_ALLOW_PRIVATE=true: the database is on loopback.
    g = await makeFixture({ destinationReach: { allowPrivate: true, ownDatabaseUrl: null, resolve } });
    await makeUser(g.collector, g.clock.now, 'bob@acme.test', { orgIds: [g.orgId] });
    bob = await signIn(g.app, 'bob@acme.test');
  });
  afterAll(async () => {
    await g?.close();
    await target?.drop();
  });
  const make = (fields: Record<string, string>) =>
    g.app.inject({ method: 'POST', url: `/console/projects/${g.projectId}/destinations`, headers: { ...FORM, cookie: bob.cookie }, payload: form({ _csrf: bob.csrf, kind: 'postgres', ...fields }) });

  it('a postgres destination to a database that does not exist shows active until its first event: the form says the error at once, and makes one that connects', async () => {
    const missing = new URL(target.url);
    missing.password = 'hunter22';
    missing.pathname = '/no_such_database_here';
    const refused = await make({ url: missing.toString(), table: 'inlet_events' });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toMatch(/PostgreSQL: database &quot;\*\*\*&quot; does not exist \(SQLSTATE 3D000\)/);
    expect(refused.body).not.toContain('hunter22');
    expect(await g.collector.store.destinations.list(g.projectId)).toHaveLength(0);

    const made = await make({ url: target.url, table: 'inlet_events' });
    expect(made.statusCode).toBe(200);
    expect(await g.collector.store.destinations.list(g.projectId)).toHaveLength(1);
  });
});
