import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Fixture, send } from '../helpers/fixture.js';
import { signedInFixture } from './helpers.js';

let f: Fixture;
let alice: { cookie: string; csrf: string };
let get: Awaited<ReturnType<typeof signedInFixture>>['get'];

beforeAll(async () => {
  ({ f, session: alice, get } = await signedInFixture());
  const r = await send(f, { items: [
    { type: 'group', group_type: 'company', group_key: 'acme <inc>', distinct_id: 'ada', properties: { plan: '<b>team</b>', seats: 12 } },
    { type: 'group', group_type: 'company', group_key: 'acme <inc>', distinct_id: 'bob' },
    { type: 'group', group_type: 'company', group_key: 'acorn', properties: {} },
    { type: 'group', group_type: 'company', group_key: 'zeta', distinct_id: 'ada' },
    { type: 'group', group_type: 'team', group_key: 'ac-blue', distinct_id: 'ada' },
  ] });
  expect(r.json()).toMatchObject({ accepted: 5, errors: [] });
});
afterAll(async () => f?.close());


it('fault: /console/projects/P/groups was a 404; it lists the group types, and each group with its key, traits and member count, escaped', async () => {
  const page = await get(`/console/projects/${f.projectId}/groups`);
  expect(page.statusCode).toBe(200);
  expect(page.body).toContain('<h1>Groups</h1>');
  expect(page.body).toMatch(/<h2 id="types-h">Group types<\/h2>\s*<ul class="list"><li><a href="[^"]+\?type=company"><code>company<\/code><\/a><\/li><li><a href="[^"]+\?type=team"><code>team<\/code><\/a><\/li><\/ul>/);
  const rows = [...page.body.matchAll(/<td data-label="Key">([^<]*)<\/td>\s*<td data-label="Traits">([\s\S]*?)<\/td>\s*<td data-label="Members">([^<]*)<\/td>/g)].map((m) => [m[1], m[2], m[3]]);
  expect(rows).toEqual([
    ['acme &lt;inc&gt;', '<code>{&quot;plan&quot;:&quot;&lt;b&gt;team&lt;/b&gt;&quot;,&quot;seats&quot;:12}</code>', '2 members'],
    ['acorn', '<span class="meta">none</span>', '0 members'],
    ['zeta', '<span class="meta">none</span>', '1 member'],
    ['ac-blue', '<span class="meta">none</span>', '1 member'],
  ]);
  expect(page.body).not.toContain('<b>team</b>');
  // The project page links to it.
  expect((await get(`/console/projects/${f.projectId}`)).body).toContain(`<a href="/console/projects/${f.projectId}/groups">Groups</a>`);
});

it('finds groups by key prefix, of every type or of the one chosen', async () => {
  const keys = async (query: string) => [...(await get(`/console/projects/${f.projectId}/groups?${query}`)).body.matchAll(/<td data-label="Key">([^<]*)<\/td>/g)].map((m) => m[1]);
  expect(await keys('q=ac')).toEqual(['acme &lt;inc&gt;', 'acorn', 'ac-blue']);
  expect(await keys('q=ac&type=team')).toEqual(['ac-blue']);
  expect(await keys('q=AC')).toEqual([]);
  // A type the project does not have reads as every type.
  expect(await keys('q=z&type=nope')).toEqual(['zeta']);
  const none = await get(`/console/projects/${f.projectId}/groups?q=${encodeURIComponent('<x>')}`);
  expect(none.body).toContain('No group has a key starting with &quot;&lt;x&gt;&quot;.');
  expect((await get(`/console/projects/${f.projectId}/groups?q=%00`)).statusCode).toBe(400);
});
