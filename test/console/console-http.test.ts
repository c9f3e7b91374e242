import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type LiveRequest, LiveWindow } from '../../src/domain/live-window.js';
import { type Fixture, makeFixture, send } from '../helpers/fixture.js';
import { FORM, PASSWORD, form, makeUser, signIn } from './helpers.js';

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
    await makeUser(f.store, f.clock.now, 'alice@acme.test', { orgIds: [f.orgId] });
    await makeUser(f.store, f.clock.now, 'root@inlet.test', { admin: true });
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
    const session = await f.store.accounts.getSession(sha256(token));
    expect(session).not.toBeNull();
    expect(session!.tokenHash.equals(Buffer.from(token))).toBe(false);
  });

  it('sends a strict Content-Security-Policy and no Access-Control-* header on every console answer', async () => {
    const urls = ['/console/login', '/console/projects', `/console/projects/${f.projectId}`, `/console/projects/${f.projectId}/people`, `/console/sources/${f.sourceId}`, '/console/static/console.js', '/console/static/console.css', `/console/projects/${other.projectId}`];
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
    expect(bad.body).toContain('Retention days must be a whole number of days from 1 to 3650');
  });

  it('shows usage this month against the limit, a chart of 30 days, and people', async () => {
    const r = await send(f, { items: [{ event: 'Signed up', distinct_id: 'user_42', properties: { plan: 'team' } }, { type: 'identify', distinct_id: 'user_42', properties: { name: 'Ada' } }] });
    expect(r.statusCode).toBe(202);
    const page = await get(`/console/projects/${f.projectId}`);
    expect(page.body).toMatch(/<strong>\d+<\/strong> events? this month \(2026-11, UTC\) of a plan limit of <strong>5000<\/strong>/);
    expect(page.body).toContain('<svg viewBox="0 0 600 160" role="img"');
    expect((page.body.match(/<rect class="bar"/g) ?? []).length).toBe(30);
    expect(page.body).toContain('2026-11-22: 1 event<');
    const people = await get(`/console/projects/${f.projectId}/people?q=user_4`);
    expect(people.body).toContain('user_42');
    const person = await get(`/console/projects/${f.projectId}/people?q=user_42`);
    expect(person.body).toMatch(/Person <code>per_/);
    expect(person.body).toContain('&quot;Ada&quot;');
    expect(person.body).toContain('Signed up');
  });

  it("shows a source's answered requests, refused items with code and field, on the page and as a live stream", async () => {
    const live = new LiveWindow();
    const g = await makeFixture({ live });
    try {
      await makeUser(g.store, g.clock.now, 'dev@acme.test', { orgIds: [g.orgId] });
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
      expect(line.indexOf('item 1')).toBeLessThan(line.indexOf('item 0'));
      const page = await g.app.inject({ method: 'GET', url: `/console/sources/${g.sourceId}`, headers: { cookie: dev.cookie } });
      expect(page.body).toContain('reserved_event_name');
      const outsider = await g.app.inject({ method: 'GET', url: `/console/sources/${g.sourceId}/live` });
      expect(outsider.statusCode).toBe(303);
    } finally {
      await g.close();
    }
  });

  it('builds no live record for a source nobody watches; a stream or a page shown starts the records', async () => {
    const live = new LiveWindow();
    const published = vi.spyOn(live, 'publish');
    const g = await makeFixture({ live });
    try {
      await makeUser(g.store, g.clock.now, 'dev@acme.test', { orgIds: [g.orgId] });
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
      await makeUser(g.store, g.clock.now, 'dev@acme.test', { orgIds: [g.orgId] });
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
      await makeUser(g.store, g.clock.now, 'dev@acme.test', { orgIds: [g.orgId] });
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
    await makeUser(f.store, f.clock.now, 'target@acme.test', { orgIds: [f.orgId] });
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
    for (let i = 0; i < 31; i++) expect((await from(`guess${i}@acme.test`)).statusCode).toBe(401);
    expect((await from('alice@acme.test')).statusCode).toBe(429);
    // Another address is not affected.
    expect((await f.app.inject({ method: 'POST', url: '/console/login', remoteAddress: '10.1.1.1', headers: FORM, payload: form({ email: 'alice@acme.test', password: PASSWORD }) })).statusCode).toBe(303);
  });

  it('behind a trusted proxy, counts failed sign-ins per client it names; an untrusted sender cannot pick its address', async () => {
    const g = await makeFixture({ trustedProxies: ['10.0.0.0/8'] });
    try {
      await makeUser(g.store, g.clock.now, 'bob@acme.test', { orgIds: [g.orgId] });
      const via = (remoteAddress: string, client: string, email: string, password = 'wrong password!') =>
        g.app.inject({ method: 'POST', url: '/console/login', remoteAddress, headers: { ...FORM, 'x-forwarded-for': client }, payload: form({ email, password }) });
      for (let i = 0; i < 31; i++) expect((await via('10.0.0.5', '203.0.113.7', `guess${i}@acme.test`)).statusCode).toBe(401);
      expect((await via('10.0.0.5', '203.0.113.7', 'bob@acme.test', PASSWORD)).statusCode).toBe(429);
      // Another client behind the same proxy signs in.
      expect((await via('10.0.0.5', '198.51.100.9', 'bob@acme.test', PASSWORD)).statusCode).toBe(303);
      // A client that reaches the server directly and names another address is still counted as itself.
      for (let i = 0; i < 31; i++) expect((await via('192.0.2.1', `198.51.100.${i}`, `direct${i}@acme.test`)).statusCode).toBe(401);
      expect((await via('192.0.2.1', '198.51.100.200', 'bob@acme.test', PASSWORD)).statusCode).toBe(429);
    } finally {
      await g.close();
    }
  });
});
