import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type LiveRequest, LiveWindow } from '../../src/domain/live-window.js';
import { type Fixture, makeFixture, send } from '../helpers/fixture.js';
import { FORM, PASSWORD, form, makeUser, makeUsers, signIn } from './helpers.js';

describe('the console over HTTP', () => {
  let f: Fixture;
  let other: { orgId: string; projectId: string; sourceId: string; keyId: string };
  let alice: { cookie: string; csrf: string };

  beforeAll(async () => {
    f = await makeFixture();
    const org = await f.admin.createOrg('Umbrella Secret Org');
    const project = await f.admin.createProject({ name: 'Umbrella Secret Project', orgId: org.id, apiEnabled: true });
    const source = await f.admin.createSource({ projectId: project.id, name: 'Umbrella Secret Source' });
    const key = await f.admin.createKey(source.id);
    other = { orgId: org.id, projectId: project.id, sourceId: source.id, keyId: key.id };
    await makeUser(f.collector, f.clock.now, 'alice@acme.test', { orgIds: [f.orgId] });
    await makeUser(f.collector, f.clock.now, 'root@inlet.test', { admin: true });
    alice = await signIn(f.app, 'alice@acme.test');
  });
  afterAll(async () => {
    await f?.close();
  });

  const get = (url: string, cookie = alice.cookie) => f.app.inject({ method: 'GET', url, headers: { cookie } });
  const post = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}, cookie = alice.cookie) =>
    f.app.inject({ method: 'POST', url, headers: { ...FORM, cookie, ...headers }, payload: form(fields) });

  it('sends a signed-out browser to the sign-in page, and refuses its posts', async () => {
    for (const url of ['/console', '/console/projects', `/console/projects/${f.projectId}`, `/console/sources/${f.sourceId}`]) {
      const res = await f.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(303);
      expect(res.headers.location).toBe('/console/login');
    }
    const res = await f.app.inject({ method: 'POST', url: '/console/projects', headers: FORM, payload: form({ name: 'x' }) });
    expect(res.statusCode).toBe(403);
    const login = await f.app.inject({ method: 'GET', url: '/console/login' });
    expect(login.body).toMatch(/<label for="email">Email<\/label>/);
    expect(login.body).toMatch(/<label for="password">Password<\/label>/);
    expect(login.body).toMatch(/<button type="submit">Sign in<\/button>/);
  });

  it('/console/ with a trailing slash is not "Not found": it redirects as /console does', async () => {
    const out = await f.app.inject({ method: 'GET', url: '/console/' });
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/console/login');
    const signedIn = await get('/console/');
    expect(signedIn.statusCode).toBe(303);
    expect(signedIn.headers.location).toBe('/console/projects');
  });

  it('says only "wrong email or password", whichever was wrong', async () => {
    const wrongPassword = await f.app.inject({ method: 'POST', url: '/console/login', headers: FORM, payload: form({ email: 'root@inlet.test', password: 'not the password' }) });
    const unknownEmail = await f.app.inject({ method: 'POST', url: '/console/login', headers: FORM, payload: form({ email: 'nobody@inlet.test', password: PASSWORD }) });
    for (const r of [wrongPassword, unknownEmail]) {
      expect(r.statusCode).toBe(401);
      expect(r.body).toContain('Wrong email or password.');
      expect(r.headers['set-cookie']).toBeUndefined();
    }
  });

  it('sets an HttpOnly, SameSite=Strict session cookie, Secure when the public URL is https', async () => {
    const res = await f.app.inject({ method: 'POST', url: '/console/login', headers: FORM, payload: form({ email: 'alice@acme.test', password: PASSWORD }) });
    expect(res.statusCode).toBe(303);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^inlet_session=[A-Za-z0-9_-]{40,}; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    const before = f.app.inletBaseUrl;
    f.app.inletBaseUrl = 'https://inlet.example.com';
    try {
      const secure = await f.app.inject({ method: 'POST', url: '/console/login', headers: FORM, payload: form({ email: 'alice@acme.test', password: PASSWORD }) });
      expect(String(secure.headers['set-cookie'])).toMatch(/; Secure$/);
    } finally {
      f.app.inletBaseUrl = before;
    }
  });

  it('stores only a hash of the session token', async () => {
    const token = alice.cookie.split('=')[1]!;
    const { sha256 } = await import('../../src/domain/sha256.js');
    const session = await f.collector.accounts.getSession(sha256(token));
    expect(session).not.toBeNull();
    expect(session!.tokenHash.equals(Buffer.from(token))).toBe(false);
  });

  it('sends a strict Content-Security-Policy and no Access-Control-* header on every console answer', async () => {
    const urls = ['/console/login', '/console/projects', `/console/projects/${f.projectId}`, `/console/projects/${f.projectId}/people`, `/console/projects/${f.projectId}/groups`, `/console/sources/${f.sourceId}`, '/console/static/console.js', '/console/static/console.css', `/console/projects/${other.projectId}`];
    for (const url of urls) {
      const res = await f.app.inject({ method: 'GET', url, headers: { cookie: alice.cookie, origin: 'https://evil.example' } });
      expect(res.statusCode, url).toBeLessThan(500);
      expect(res.headers['content-security-policy'], url).toMatch(/default-src 'self'/);
      expect(res.headers['content-security-policy'], url).not.toMatch(/unsafe-inline|unsafe-eval/);
      expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-')), url).toEqual([]);
      // No inline script or style anywhere: the policy would block it anyway.
      expect(res.body, url).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|\sstyle=|\son[a-z]+=/);
    }
  });

  it('refuses a state change without the CSRF token, with a wrong one, or from another site', async () => {
    const cases: [Record<string, string>, Record<string, string>][] = [
      [{ name: 'No token', org: f.orgId }, {}],
      [{ name: 'Wrong token', org: f.orgId, _csrf: 'x'.repeat(alice.csrf.length) }, {}],
      [{ name: 'Other origin', org: f.orgId, _csrf: alice.csrf }, { origin: 'https://evil.example' }],
      [{ name: 'Cross site', org: f.orgId, _csrf: alice.csrf }, { 'sec-fetch-site': 'cross-site' }],
    ];
    for (const [fields, headers] of cases) {
      const res = await post('/console/projects', fields, headers);
      expect(res.statusCode, fields.name).toBe(403);
    }
    for (const url of [`/console/projects/${f.projectId}/settings`, `/console/sources/${f.sourceId}/keys`, '/console/logout']) {
      expect((await post(url, {})).statusCode, url).toBe(403);
    }
    expect((await f.admin.listProjects(f.orgId)).map((p) => p.name)).toEqual(['Web']);
    const ok = await post('/console/projects', { name: 'Made here', org: f.orgId, _csrf: alice.csrf }, { origin: 'http://localhost:80', host: 'localhost:80', 'sec-fetch-site': 'same-origin' });
    expect(ok.statusCode).toBe(303);
    expect(ok.headers.location).toMatch(/^\/console\/projects\/prj_/);
  });

  it("answers every console route with 404 for another organization's ids, never its data", async () => {
    const c = { _csrf: alice.csrf };
    const probes = [
      get(`/console/projects/${other.projectId}`),
      get(`/console/projects/${other.projectId}/people?q=someone`),
      get(`/console/projects/${other.projectId}/people`),
      get(`/console/projects/${other.projectId}/groups`),
      get(`/console/projects/${other.projectId}/groups?q=a&type=company`),
      get(`/console/sources/${other.sourceId}/outcomes`),
      post(`/console/projects/${other.projectId}/settings`, { ...c, api_enabled: 'false', retention_days: '5' }),
      post(`/console/projects/${other.projectId}/sources`, { ...c, name: 'Intruder' }),
      get(`/console/sources/${other.sourceId}`),
      get(`/console/sources/${other.sourceId}/live`),
      post(`/console/sources/${other.sourceId}/keys`, c),
      post(`/console/keys/${other.keyId}/roll`, { ...c, grace: 'now' }),
      get(`/console/keys/${other.keyId}/revoke`),
      post(`/console/keys/${other.keyId}/revoke`, c),
      post('/console/projects', { ...c, name: 'Into other', org: other.orgId }),
    ];
    for (const res of await Promise.all(probes)) {
      expect([400, 403, 404], res.body).toContain(res.statusCode);
      expect(res.body).not.toContain('Umbrella');
      expect(res.body).not.toMatch(/srv_live_/);
    }
    // Nothing of the other organization changed.
    expect(await f.admin.getProject(other.projectId)).toMatchObject({ apiEnabled: true, retentionDays: 400 });
    expect(await f.admin.listSources(other.projectId)).toHaveLength(1);
    expect((await f.admin.listKeys(other.sourceId)).map((k) => k.status)).toEqual(['active']);
    expect((await f.admin.listProjects(other.orgId)).map((p) => p.name)).toEqual(['Umbrella Secret Project']);
    // Nor does the list show it.
    expect((await get('/console/projects')).body).not.toContain('Umbrella');
  });

  it('shows an admin every organization', async () => {
    const root = await signIn(f.app, 'root@inlet.test');
    const list = await get('/console/projects', root.cookie);
    expect(list.body).toContain('Umbrella Secret Project');
    expect((await get(`/console/sources/${other.sourceId}`, root.cookie)).statusCode).toBe(200);
  });

  it('creates a source and a key through the domain, shows the key once, and saves settings', async () => {
    const made = await post(`/console/projects/${f.projectId}/sources`, { _csrf: alice.csrf, name: 'Webhooks', filter_bots: 'true' });
    expect(made.statusCode).toBe(303);
    const sourceId = made.headers.location!.split('/').pop()!;
    expect(await f.admin.getSource(sourceId)).toMatchObject({ name: 'Webhooks', filterBots: true, recordIp: false });

    const key = await post(`/console/sources/${sourceId}/keys`, { _csrf: alice.csrf }, { accept: 'application/json' });
    expect(key.statusCode).toBe(201);
    const secret = key.json().key as string;
    expect(secret).toMatch(/^srv_live_/);
    const page = await get(`/console/sources/${sourceId}`);
    expect(page.body).toContain(`srv_live_…${secret.slice(-4)}`);
    expect(page.body).not.toContain(secret);

    const rolled = await post(`/console/keys/${key.json().id}/roll`, { _csrf: alice.csrf, grace: '24h' }, { accept: 'application/json' });
    expect(rolled.statusCode).toBe(201);
    expect((await f.admin.listKeys(sourceId)).map((k) => k.status).sort()).toEqual(['active', 'expiring']);
    const badGrace = await post(`/console/keys/${rolled.json().id}/roll`, { _csrf: alice.csrf, grace: 'constructor' }, { accept: 'application/json' });
    expect(badGrace.statusCode).toBe(409);

    const confirm = await get(`/console/keys/${rolled.json().id}/revoke`);
    expect(confirm.body).toMatch(/<button type="submit" class="danger">Revoke<\/button>/);
    expect((await post(`/console/keys/${rolled.json().id}/revoke`, { _csrf: alice.csrf })).statusCode).toBe(303);
    expect((await f.admin.listKeys(sourceId)).find((k) => k.id === rolled.json().id)!.status).toBe('revoked');

    const saved = await post(`/console/projects/${f.projectId}/settings`, { _csrf: alice.csrf, api_enabled: 'true', monthly_event_limit: '5000', retention_days: '90' });
    expect(saved.statusCode).toBe(303);
    expect(await f.admin.getProject(f.projectId)).toMatchObject({ apiEnabled: true, monthlyEventLimit: 5000, retentionDays: 90 });
    const bad = await post(`/console/projects/${f.projectId}/settings`, { _csrf: alice.csrf, api_enabled: 'true', retention_days: '99999' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('Retention days must be a whole number of days from 1 to 3,650');
  });

  it('shows usage this month against the limit, a chart of 30 days, and people', async () => {
    const r = await send(f, { items: [{ event: 'Signed up', distinct_id: 'user_42', properties: { plan: 'team' } }, { type: 'identify', distinct_id: 'user_42', properties: { name: 'Ada' } }] });
    expect(r.statusCode).toBe(202);
    // The chart reads the outcome counts, which a server writes within a second: written here rather than waited for.
    await f.collector.outcomes.flush();
    const page = await get(`/console/projects/${f.projectId}`);
    expect(page.body).toMatch(/<strong>\d+<\/strong> events? this month \(2026-11, UTC\) of a plan limit of <strong>5,000<\/strong>/);
    expect(page.body).toContain('<svg viewBox="0 0 600 160" role="img"');
    expect((page.body.match(/<rect class="bar"/g) ?? []).length).toBe(30);
    expect(page.body).toContain('2026-11-22: 2 items<');
    const people = await get(`/console/projects/${f.projectId}/people?q=user_4`);
    expect(people.body).toContain('user_42');
    const person = await get(`/console/projects/${f.projectId}/people?q=user_42`);
    expect(person.body).toMatch(/Person <code>per_/);
    expect(person.body).toContain('&quot;Ada&quot;');
    expect(person.body).toContain('Signed up');
    expect(person.body).toContain('In no group');
  });

  it('the people page shows the groups a person is a member of', async () => {
    const r = await send(f, { items: [
      { type: 'group', group_type: 'company', group_key: 'acme <inc>', distinct_id: 'grouped' },
      { type: 'group', group_type: 'team', group_key: 'blue', distinct_id: 'grouped' },
    ] });
    expect(r.json()).toMatchObject({ accepted: 2, errors: [] });
    const person = await get(`/console/projects/${f.projectId}/people?q=grouped`);
    expect(person.body).toContain('<h3>Groups</h3>');
    expect(person.body).toContain('<td><code>company</code></td><td>acme &lt;inc&gt;</td>');
    expect(person.body).toContain('<td><code>team</code></td><td>blue</td>');
  });

  it('fault: an unknown console path answered the API\'s JSON; it gets the console\'s own 404 page, signed in or not, telling nothing of what exists', async () => {
    const paths = ['/console/nope', `/console/projects/${f.projectId}/nope`, '/console/projects/prj_doesnotexist/nope', `/console/projects/${other.projectId}/nope`, '/console/static/nope.js'];
    for (const cookie of [alice.cookie, '']) {
      const bodies = new Set<string>();
      for (const url of paths) {
        for (const method of ['GET', 'POST', 'DELETE'] as const) {
          const res = await f.app.inject({ method, url, headers: { cookie, ...FORM }, payload: method === 'GET' ? undefined : form({ _csrf: alice.csrf }) });
          expect(res.statusCode, `${method} ${url}`).toBe(404);
          expect(res.headers['content-type'], url).toMatch(/^text\/html/);
          expect(res.headers['content-security-policy'], url).toMatch(/script-src 'self'/);
          expect(res.body, url).toContain('<h1>Not found</h1>');
          expect(res.body, url).not.toMatch(/"error"|not_found|Umbrella/);
          bodies.add(res.body);
        }
      }
      // One page for every path: whether a project exists (or is another organization's) does not show.
      expect(bodies.size).toBe(1);
    }
    const signedIn = await get('/console/nope');
    expect(signedIn.body).toContain('Sign out');
    // Outside /console the server's own 404 stands.
    expect((await get('/consolex')).headers['content-type']).toMatch(/^application\/json/);
  });

  it('fault: a refused form went to a separate "Not done" page that dropped what was typed; it comes back with the message beside its field', async () => {
    const c = { _csrf: alice.csrf };
    const long = 'n'.repeat(201);
    const cases: { url: string; fields: Record<string, string>; input: RegExp; message: string; kept: string[] }[] = [
      { url: '/console/projects', fields: { ...c, name: long, org: f.orgId, api_enabled: 'true' }, input: /<input id="project-name"[^>]*value="n{201}"[^>]*aria-invalid="true" aria-describedby="project-name-error"/, message: 'Name must be 1 to 200 characters', kept: ['id="api-enabled" name="api_enabled" type="checkbox" value="true" checked'] },
      { url: `/console/projects/${f.projectId}/sources`, fields: { ...c, name: '   ', record_ip: 'true' }, input: /<input id="source-name"[^>]*value="   "[^>]*aria-invalid="true"/, message: 'Name must be 1 to 200 characters', kept: ['id="record-ip" name="record_ip" type="checkbox" value="true" checked', 'id="filter-bots" name="filter_bots" type="checkbox" value="true">'] },
      { url: `/console/projects/${f.projectId}/settings`, fields: { ...c, monthly_event_limit: '12 thousand', retention_days: '30' }, input: /<input id="settings-limit"[^>]*value="12 thousand"[^>]*aria-invalid="true" aria-describedby="settings-limit-error limit-hint"/, message: 'Monthly event limit takes a whole number, not &quot;12 thousand&quot;.', kept: ['id="settings-retention" name="retention_days" inputmode="numeric" required value="30"', 'id="settings-api" name="api_enabled" type="checkbox" value="true">'] },
      { url: `/console/projects/${f.projectId}/settings`, fields: { ...c, api_enabled: 'true', monthly_event_limit: '1,000,000', retention_days: '99999' }, input: /<input id="settings-retention"[^>]*value="99999"[^>]*aria-invalid="true"/, message: 'Retention days must be a whole number of days from 1 to 3,650, not 99999.', kept: ['value="1,000,000"'] },
    ];
    const before = await f.admin.getProject(f.projectId);
    for (const k of cases) {
      const res = await post(k.url, k.fields);
      expect(res.statusCode, k.url).toBe(400);
      expect(res.body, k.url).not.toContain('Not done');
      expect(res.body, k.url).toMatch(k.input);
      // The message stands right under its field.
      expect(res.body, k.url).toMatch(new RegExp(`aria-invalid="true"[^>]*>\\s*<p id="[a-z-]+-error" class="field-error" role="alert">${k.message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      for (const kept of k.kept) expect(res.body, k.url).toContain(kept);
    }
    expect(await f.admin.getProject(f.projectId)).toEqual(before);
    // A collapsed form that comes back with an error is shown open.
    expect((await post(`/console/projects/${f.projectId}/sources`, { ...c, name: '' })).body).toMatch(/aria-controls="new-source" aria-expanded="true" data-open/);
    // A monthly event limit written as the console writes numbers is taken.
    expect((await post(`/console/projects/${f.projectId}/settings`, { ...c, api_enabled: 'true', monthly_event_limit: '1,000,000', retention_days: '90' })).statusCode).toBe(303);
    expect((await f.admin.getProject(f.projectId))!.monthlyEventLimit).toBe(1_000_000);
    expect((await get(`/console/projects/${f.projectId}`)).body).toContain('a plan limit of <strong>1,000,000</strong>');

    // The confirmation of a roll: a grace period that is not one comes back beside its select.
    const key = await f.admin.createKey(f.sourceId);
    const roll = await post(`/console/keys/${key.id}/roll`, { ...c, grace: 'constructor' });
    expect(roll.statusCode).toBe(400);
    expect(roll.body).toMatch(/<select id="grace" name="grace" aria-invalid="true" aria-describedby="grace-error" autofocus>/);
    expect(roll.body).toContain('<p id="grace-error" class="field-error" role="alert">Choose a grace period: now, 24h or 7d.</p>');
    expect((await f.admin.listKeys(f.sourceId)).find((k) => k.id === key.id)!.status).toBe('active');
    await f.admin.revokeKey(key.id);
  });

  it('fault: Roll changed the key at once; it asks for confirmation first, as Revoke does', async () => {
    const source = await f.admin.createSource({ projectId: f.projectId, name: 'Rolling' });
    const key = await f.admin.createKey(source.id);
    const page = await get(`/console/sources/${source.id}`);
    // The source page's Roll only opens the confirmation: a GET, no token, no change.
    expect(page.body).toContain(`<form method="get" action="/console/keys/${key.id}/roll" class="inline roll">`);
    const confirm = await get(`/console/keys/${key.id}/roll?grace=24h`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toMatch(/<h1>Roll key <code>srv_live_…\w{4}<\/code>\?<\/h1>/);
    expect(confirm.body).toContain('<option value="24h" selected>24h</option>');
    expect(confirm.body).toContain(`<form method="post" action="/console/keys/${key.id}/roll" class="card">`);
    expect(confirm.body).toMatch(/<button type="submit" class="danger">Roll<\/button>\s*<a href="\/console\/sources\/src_\w+">Cancel<\/a>/);
    expect((await f.admin.listKeys(source.id)).find((k) => k.id === key.id)!.status).toBe('active');
    expect((await get(`/console/keys/${other.keyId}/roll`)).statusCode).toBe(404);

    const rolled = await post(`/console/keys/${key.id}/roll`, { _csrf: alice.csrf, grace: '24h' });
    expect(rolled.statusCode).toBe(201);
    const shown = /id="new-key" type="text" readonly value="(srv_live_\w+)"/.exec(rolled.body)?.[1];
    expect(shown).toMatch(/^srv_live_\w{32}$/);
    const keys = await f.admin.listKeys(source.id);
    expect(keys.find((k) => k.id === key.id)!.status).toBe('expiring');
    expect(keys.some((k) => k.last_four === shown!.slice(-4) && k.status === 'active')).toBe(true);
  });

  it('fault: a source of a project with the batch API off gave no warning; its page says so, with the project settings and the command', async () => {
    const off = await f.admin.createProject({ name: 'Dormant', orgId: f.orgId, apiEnabled: false });
    const source = await f.admin.createSource({ projectId: off.id, name: 'Quiet' });
    const page = await get(`/console/sources/${source.id}`);
    expect(page.body).toContain('The batch API is off for project Dormant.');
    expect(page.body).toContain(`<a href="/console/projects/${off.id}#settings">project’s settings</a>`);
    expect(page.body).toContain(`<code>inlet project update ${off.id} --api-enabled true</code>`);
    expect((await get(`/console/projects/${off.id}`)).body).toContain('<form id="settings"');
    expect((await get(`/console/sources/${f.sourceId}`)).body).not.toContain('The batch API is off');
  });

  it('fault: People showed no one until searched, and never more than 20; it lists the project\'s people newest first, a page at a time', async () => {
    const project = await f.admin.createProject({ name: 'Crowd', orgId: f.orgId, apiEnabled: true });
    const source = await f.admin.createSource({ projectId: project.id, name: 'Crowd source' });
    const key = (await f.admin.createKey(source.id)).key;
    const base = `/console/projects/${project.id}/people`;
    expect((await get(base)).body).toContain('No people yet');
    // 45 people made over 45 seconds: three pages of 20, 20 and 5.
    for (let i = 0; i < 45; i++) {
      expect((await send({ app: f.app, key }, { items: [{ event: 'Joined', distinct_id: `crowd_${String(i).padStart(2, '0')}` }] })).statusCode).toBe(202);
      f.clock.advance(1000);
    }
    const listed: string[] = [];
    let url: string | null = base;
    for (let pages = 0; url !== null && pages < 5; pages++) {
      const res = await get(url);
      expect(res.statusCode).toBe(200);
      listed.push(...[...res.body.matchAll(/<td>(crowd_\d\d)<\/td>/g)].map((m) => m[1]!));
      const next = /<a href="([^"]+)" rel="next">Next<\/a>/.exec(res.body)?.[1];
      // The cursor is a position, not an offset.
      if (next !== undefined) expect(next).toMatch(/\?after=\d+\.per_\w+$/);
      url = next === undefined ? null : next.replaceAll('&amp;', '&');
    }
    expect(listed).toEqual(Array.from({ length: 45 }, (_, i) => `crowd_${String(44 - i).padStart(2, '0')}`));
    // A listed person opens by its id; the search by distinct id still works beside the list.
    const first = await get(base);
    const personLink = /<a href="([^"]+\?person=per_\w+)"><code>/.exec(first.body)![1]!;
    expect((await get(personLink)).body).toMatch(/<h2 id="person-h">Person <code>per_\w+<\/code><\/h2>[\s\S]*crowd_44/);
    expect((await get(`${base}?q=crowd_0`)).body).toContain('Distinct ids starting with');
    // A cursor that is not one starts from the newest rather than failing.
    expect((await get(`${base}?after=junk`)).body).toContain('<td>crowd_44</td>');
  });

  it('fault: console pages had no link to the API reference; every page has one', async () => {
    for (const url of ['/console/login', '/console/projects', `/console/sources/${f.sourceId}`, '/console/nope']) {
      expect((await get(url)).body, url).toContain('<a href="/docs/api">API reference</a>');
    }
  });

  it("shows a source's answered requests, refused items with code and field, on the page and as a live stream", async () => {
    const live = new LiveWindow();
    const g = await makeFixture({ live });
    try {
      await makeUser(g.collector, g.clock.now, 'dev@acme.test', { orgIds: [g.orgId] });
      const dev = await signIn(g.app, 'dev@acme.test');
      await g.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (g.app.server.address() as { port: number }).port;
      const first = new Promise<string>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: `/console/sources/${g.sourceId}/live`, headers: { cookie: dev.cookie } }, (res) => {
          expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buf += chunk;
            if (buf.includes('retry:') && !buf.includes('event: request')) void send(g, { items: [{ event: 'Paid', distinct_id: 'c1' }, { event: '$pageview', distinct_id: 'c1' }] });
            const m = /event: request\ndata: (.*)\n\n/.exec(buf);
            if (m) {
              resolve(JSON.parse(m[1]!) as string);
              req.destroy();
            }
          });
        });
        req.on('error', reject);
        req.end();
      });
      const line = await first;
      expect(line).toMatch(/refused.*reserved_event_name.*<code>event<\/code>/s);
      expect(line).toMatch(/accepted.*Paid/s);
      // Newest first: the request's last item comes first.
      expect(line.indexOf('#1 of 2 in')).toBeLessThan(line.indexOf('#0 of 2 in'));
      const page = await g.app.inject({ method: 'GET', url: `/console/sources/${g.sourceId}`, headers: { cookie: dev.cookie } });
      expect(page.body).toContain('reserved_event_name');
      const outsider = await g.app.inject({ method: 'GET', url: `/console/sources/${g.sourceId}/live` });
      expect(outsider.statusCode).toBe(303);
    } finally {
      await g.close();
    }
  });

  it('fault: a strict=true refusal was shown as "#2 of 1"; its lines count all the request’s items, "#2 of 4"', async () => {
    const live = new LiveWindow();
    const g = await makeFixture({ live });
    try {
      await makeUser(g.collector, g.clock.now, 'dev@acme.test', { orgIds: [g.orgId] });
      const dev = await signIn(g.app, 'dev@acme.test');
      expect((await g.app.inject({ method: 'GET', url: `/console/sources/${g.sourceId}`, headers: { cookie: dev.cookie } })).statusCode).toBe(200);
      const items = [{ event: 'a', distinct_id: 'c1' }, { event: 'b', distinct_id: 'c1' }, { event: '$nope', distinct_id: 'c1' }, { event: 'd', distinct_id: 'c1' }];
      expect((await send(g, { items }, { query: 'strict=true' })).statusCode).toBe(400);
      // And a request whose every item is refused.
      expect((await send(g, { items: [{ event: '$x', distinct_id: 'c1' }, { event: '$y', distinct_id: 'c1' }, { event: '$z', distinct_id: 'c1' }] })).statusCode).toBe(400);
      const page = (await g.app.inject({ method: 'GET', url: `/console/sources/${g.sourceId}`, headers: { cookie: dev.cookie } })).body;
      expect(page).toContain('#2 of 4 in');
      expect(page).toContain('#2 of 3 in');
      expect(page).not.toMatch(/#\d+ of 1 in/);
    } finally {
      await g.close();
    }
  });

  it('builds no live record for a source nobody watches; a stream or a page shown starts the records', async () => {
    const live = new LiveWindow();
    const published = vi.spyOn(live, 'publish');
    const g = await makeFixture({ live });
    try {
      await makeUser(g.collector, g.clock.now, 'dev@acme.test', { orgIds: [g.orgId] });
      const dev = await signIn(g.app, 'dev@acme.test');
      expect((await send(g, { items: [{ event: 'Unseen', distinct_id: 'c1' }, { event: '$pageview', distinct_id: 'c1' }] })).statusCode).toBe(202);
      expect((await send(g, { items: [{ event: '$pageview', distinct_id: 'c1' }] })).statusCode).toBe(400);
      expect(published).not.toHaveBeenCalled();

      const seen: LiveRequest[] = [];
      const stop = live.subscribe(g.sourceId, (r) => seen.push(r));
      await send(g, { items: [{ event: 'Seen', distinct_id: 'c1' }] });
      stop();
      expect(seen.map((r) => r.items.map((i) => [i.outcome, i.event]))).toEqual([[['accepted', 'Seen']]]);

      // The page shown again lists it, and what comes until its script subscribes is kept too.
      const page = await g.app.inject({ method: 'GET', url: `/console/sources/${g.sourceId}`, headers: { cookie: dev.cookie } });
      expect(page.body).toContain('Seen');
      expect(page.body).not.toContain('Unseen');
      await send(g, { items: [{ event: 'Between', distinct_id: 'c1' }] });
      expect(live.recent(g.sourceId).map((r) => r.items[0]!.event)).toEqual(['Between', 'Seen']);
      expect(published).toHaveBeenCalledTimes(2);
    } finally {
      await g.close();
    }
  });

  it('logs neither passwords, session tokens, CSRF tokens, keys nor event data of console requests', async () => {
    const lines: string[] = [];
    const { Writable } = await import('node:stream');
    const logStream = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
    const g = await makeFixture({ logStream });
    try {
      await makeUser(g.collector, g.clock.now, 'dev@acme.test', { orgIds: [g.orgId] });
      await g.app.inject({ method: 'POST', url: '/console/login', headers: FORM, payload: form({ email: 'dev@acme.test', password: 'a wrong password' }) });
      const dev = await signIn(g.app, 'dev@acme.test');
      const key = await g.app.inject({ method: 'POST', url: `/console/sources/${g.sourceId}/keys`, headers: { ...FORM, cookie: dev.cookie, accept: 'application/json' }, payload: form({ _csrf: dev.csrf }) });
      await send(g, { items: [{ event: 'Secret event', distinct_id: 'secret_person', properties: { secret: 'hush' } }] });
      await g.app.inject({ method: 'GET', url: `/console/sources/${g.sourceId}`, headers: { cookie: dev.cookie } });
      const log = lines.join('');
      expect(lines.length).toBeGreaterThan(4);
      for (const secret of [PASSWORD, 'a wrong password', dev.cookie.split('=')[1]!, dev.csrf, key.json().key, 'Secret event', 'secret_person', 'hush']) {
        expect(log).not.toContain(secret);
      }
    } finally {
      await g.close();
    }
  });

  it('ends its live streams when the server closes, so a stop never waits on them', async () => {
    const g = await makeFixture();
    let closed = false;
    try {
      await makeUser(g.collector, g.clock.now, 'dev@acme.test', { orgIds: [g.orgId] });
      const dev = await signIn(g.app, 'dev@acme.test');
      await g.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (g.app.server.address() as { port: number }).port;
      const ended = await new Promise<{ end: Promise<void> }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: `/console/sources/${g.sourceId}/live`, headers: { cookie: dev.cookie } }, (res) => {
          const end = new Promise<void>((done) => res.on('end', done));
          // Wrapped: resolving with a promise itself would wait for it.
          res.once('data', () => resolve({ end }));
          res.resume();
        });
        req.on('error', reject);
        req.end();
      });
      await g.close();
      closed = true;
      await ended.end;
    } finally {
      if (!closed) await g.close();
    }
  });

  it('ends a session on Sign out, after 8 idle hours, and 7 days after sign-in', async () => {
    const s = await signIn(f.app, 'alice@acme.test');
    expect((await post('/console/logout', { _csrf: s.csrf }, {}, s.cookie)).statusCode).toBe(303);
    expect((await get('/console/projects', s.cookie)).statusCode).toBe(303);

    const idle = await signIn(f.app, 'alice@acme.test');
    f.clock.advance(8 * 3600_000 + 1);
    expect((await get('/console/projects', idle.cookie)).statusCode).toBe(303);

    const busy = await signIn(f.app, 'alice@acme.test');
    for (let h = 0; h < 7 * 24; h += 4) {
      f.clock.advance(4 * 3600_000);
      const res = await get('/console/projects', busy.cookie);
      if (h + 4 < 7 * 24) expect(res.statusCode, `hour ${h + 4}`).toBe(200);
      else expect(res.statusCode).toBe(303);
    }
  });

  it('slows down repeated failed sign-ins per account, and lets the right password in once the block is over', async () => {
    await makeUser(f.collector, f.clock.now, 'target@acme.test', { orgIds: [f.orgId] });
    const attempt = (password: string, remoteAddress = '10.0.0.1') =>
      f.app.inject({ method: 'POST', url: '/console/login', remoteAddress, headers: FORM, payload: form({ email: 'target@acme.test', password }) });
    for (let i = 0; i < 6; i++) expect((await attempt('wrong password!')).statusCode).toBe(401);
    const blocked = await attempt(PASSWORD, '10.0.0.2');
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(blocked.body).toContain('Too many failed sign-ins');
    f.clock.advance(Number(blocked.headers['retry-after']) * 1000);
    expect((await attempt(PASSWORD, '10.0.0.2')).statusCode).toBe(303);
  });

  it('slows down a client address that tries many accounts', async () => {
    const from = (email: string) =>
      f.app.inject({ method: 'POST', url: '/console/login', remoteAddress: '10.9.9.9', headers: FORM, payload: form({ email, password: 'wrong password!' }) });
    // Attempts at real accounts count against the address; one at an email no account has is not counted.
    for (const email of await makeUsers(f.collector, f.clock.now, 'sprayed', 31, { light: true })) expect((await from(email)).statusCode).toBe(401);
    expect((await from('alice@acme.test')).statusCode).toBe(429);
    // Once the address is blocked, an unknown email is refused as a real one is.
    expect((await from('nobody@acme.test')).statusCode).toBe(429);
    // Another address is not affected.
    expect((await f.app.inject({ method: 'POST', url: '/console/login', remoteAddress: '10.1.1.1', headers: FORM, payload: form({ email: 'alice@acme.test', password: PASSWORD }) })).statusCode).toBe(303);
  });

  it('behind a trusted proxy, counts failed sign-ins per client it names; an untrusted sender cannot pick its address', async () => {
    const g = await makeFixture({ trustedProxies: ['10.0.0.0/8'] });
    try {
      await makeUser(g.collector, g.clock.now, 'bob@acme.test', { orgIds: [g.orgId] });
      const via = (remoteAddress: string, client: string, email: string, password = 'wrong password!') =>
        g.app.inject({ method: 'POST', url: '/console/login', remoteAddress, headers: { ...FORM, 'x-forwarded-for': client }, payload: form({ email, password }) });
      const sprayed = await makeUsers(g.collector, g.clock.now, 'sprayed', 31, { light: true });
      for (const email of sprayed) expect((await via('10.0.0.5', '203.0.113.7', email)).statusCode).toBe(401);
      expect((await via('10.0.0.5', '203.0.113.7', 'bob@acme.test', PASSWORD)).statusCode).toBe(429);
      // Another client behind the same proxy signs in.
      expect((await via('10.0.0.5', '198.51.100.9', 'bob@acme.test', PASSWORD)).statusCode).toBe(303);
      // A client that reaches the server directly and names another address is still counted as itself.
      for (const [i, email] of sprayed.entries()) expect((await via('192.0.2.1', `198.51.100.${i}`, email)).statusCode).toBe(401);
      expect((await via('192.0.2.1', '198.51.100.200', 'bob@acme.test', PASSWORD)).statusCode).toBe(429);
    } finally {
      await g.close();
    }
  });
});
