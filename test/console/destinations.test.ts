import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Fixture, makeFixture } from '../helpers/fixture.js';
import { FORM, form, makeUser, signIn } from './helpers.js';

let f: Fixture;
let alice: { cookie: string; csrf: string };
let otherProject: string;

beforeAll(async () => {
  f = await makeFixture();
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
  const secret = /signing secret, shown only now: (whsec_\w+)/.exec(made.body)?.[1];
  expect(secret).toBeDefined();
  const again = await get(`/console/projects/${f.projectId}`);
  expect(again.body).not.toContain(secret);
  expect(again.body).toContain('<strong>webhook</strong> <code>https://hooks.example.com/in</code>');
  expect(again.body).toContain('active · up to date · 0 delivered');
  expect(again.body).toContain('>Pause</button>');

  const pg = await post(`/console/projects/${f.projectId}/destinations`, { kind: 'postgres', url: 'postgres://u:hunter22@db.example.com/w', table: 'inlet_events' });
  expect(pg.statusCode).toBe(200);
  expect(pg.body).not.toContain('hunter22');
  expect(pg.body).toContain('postgres://u:***@db.example.com/w');
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
  expect((await get(`/console/projects/${f.projectId}`)).body).toMatch(/failing · up to date · 0 delivered<\/span>\s*<p class="field-error">Last error: The receiver answered 503.<\/p>/);

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
