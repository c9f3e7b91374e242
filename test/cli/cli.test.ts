import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { cliJson, runCli } from '../helpers/cli.js';
import { runCli as runBin, startServer } from '../helpers/process.js';

const tmp = tempDir('inlet-cli-');
afterAll(() => tmp.remove());
const env = { INLET_DATA_DIR: tmp.dir };

describe('the inlet command (docs/cli.md)', () => {
  it('administers org, project, source and key with the documented JSON shapes', async () => {
    const org = await cliJson(['org', 'create', '--name', 'Acme'], env);
    expect(org).toEqual({ id: expect.stringMatching(/^org_/), name: 'Acme' });

    const project = await cliJson(['project', 'create', '--name', 'Web', '--org', org.id], env);
    expect(project).toEqual({ id: expect.stringMatching(/^prj_/), org_id: org.id, name: 'Web', api_enabled: false, monthly_event_limit: null });
    const dflt = await cliJson(['project', 'create', '--name', 'Other', '--api-enabled'], env);
    expect(dflt.org_id).toMatch(/^org_/);
    expect(dflt.org_id).not.toBe(org.id);
    expect((await cliJson(['project', 'create', '--name', 'Third'], env)).org_id).toBe(dflt.org_id);

    const updated = await cliJson(['project', 'update', project.id, '--api-enabled', 'true', '--monthly-event-limit', '1000'], env);
    expect(updated).toEqual({ ...project, api_enabled: true, monthly_event_limit: 1000, retention_days: 400 });
    expect((await cliJson(['project', 'update', project.id, '--monthly-event-limit', 'none'], env)).monthly_event_limit).toBeNull();

    const source = await cliJson(['source', 'create', '--project', project.id, '--name', 'Billing'], env);
    expect(source).toEqual({ id: expect.stringMatching(/^src_/), project_id: project.id, name: 'Billing', filter_bots: true, record_ip: false });
    expect(await cliJson(['source', 'update', source.id, '--record-ip', 'true', '--filter-bots', 'false'], env)).toEqual({ ...source, filter_bots: false, record_ip: true });

    const key = await cliJson(['key', 'create', '--source', source.id], env);
    expect(key).toEqual({ id: expect.stringMatching(/^key_/), key: expect.stringMatching(/^srv_live_[0-9A-Za-z]{32}$/), prefix: 'srv_live_', last_four: key.key.slice(-4), created_at: expect.any(String) });
    const second = await cliJson(['key', 'create', '--source', source.id], env);
    const third = await runCli(['key', 'create', '--source', source.id, '--json'], env);
    expect(third.code).not.toBe(0);
    expect(third.stdout).toBe('');
    expect(third.stderr).toMatch(/already has 2 working keys/);
    const tooMany = await runCli(['key', 'roll', key.id, '--grace', '24h'], env);
    expect(tooMany.code).not.toBe(0);

    const rolled = await cliJson(['key', 'roll', key.id, '--grace', 'now'], env);
    expect(rolled).toMatchObject({ id: expect.stringMatching(/^key_/), key: expect.stringMatching(/^srv_live_/), replaces: key.id });
    const list = await cliJson(['key', 'list', '--source', source.id], env);
    expect(list).toHaveLength(3);
    for (const k of list) expect(Object.keys(k).sort()).toEqual(['created_at', 'expires_at', 'id', 'last_four', 'last_used_at', 'prefix', 'status']);
    expect(list.find((k: { id: string }) => k.id === key.id).status).toBe('expired');
    expect(JSON.stringify(list)).not.toContain(key.key);
    expect(await cliJson(['key', 'revoke', second.id], env)).toEqual({ id: second.id, status: 'revoked' });
    expect((await cliJson(['key', 'list', '--source', source.id], env)).find((k: { id: string }) => k.id === second.id).status).toBe('revoked');

    expect(await cliJson(['source', 'delete', source.id], env)).toEqual({ id: source.id, deleted: true });
    expect(await cliJson(['project', 'delete', dflt.id], env)).toEqual({ id: dflt.id, deleted: true });
    expect(await cliJson(['org', 'delete', org.id], env)).toEqual({ id: org.id, deleted: true });
  });

  it('answers a bad flag or unknown id with a sentence on stderr and a non-zero status', async () => {
    for (const args of [
      ['project', 'update', 'prj_nope', '--api-enabled', 'true'],
      ['project', 'update', 'prj_nope', '--api-enabled', 'maybe'],
      ['source', 'create', '--project', 'prj_nope', '--name', 'x'],
      ['key', 'roll', 'key_nope', '--grace', '1h'],
      ['usage', '--project', 'prj_nope', '--month', '2026-13'],
      ['person', 'show', '--project', 'prj_nope'],
    ]) {
      const r = await runCli([...args, '--json'], env);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^inlet: .+/);
    }
  });

  it('says which PostgreSQL it cannot reach, without its password, and exits 1, for serve and admin commands alike', async () => {
    // A port nothing listens on.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as { port: number }).port;
        probe.close(() => resolve(p));
      });
    });
    const away = { INLET_DATABASE_URL: `postgres://inlet:s3cret@127.0.0.1:${port}/inlet` };
    for (const args of [['serve', '--port', '0'], ['org', 'create', '--name', 'x', '--json']]) {
      const r = await (args[0] === 'serve' ? runBin : runCli)(args, away);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toContain(`inlet: Could not reach PostgreSQL at 127.0.0.1:${port}/inlet (`);
      expect(r.stderr).not.toContain('s3cret');
    }
  });

  it('prints help for every subcommand', async () => {
    for (const cmd of [
      ['serve'], ['org', 'create'], ['org', 'delete'], ['project', 'create'], ['project', 'update'], ['project', 'delete'],
      ['source', 'create'], ['source', 'update'], ['source', 'delete'], ['key', 'create'], ['key', 'list'], ['key', 'roll'],
      ['key', 'revoke'], ['events', 'list'], ['person', 'show'], ['usage'], ['browser', 'identify'],
    ]) {
      const r = await runCli([...cmd, '--help']);
      expect(r.code, cmd.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/Usage: inlet/);
    }
  });

  it('end to end: a running server sees admin changes on its next request; events, people and usage read back', async () => {
    const project = await cliJson(['project', 'create', '--name', 'E2E', '--api-enabled'], env);
    const source = await cliJson(['source', 'create', '--project', project.id, '--name', 'Jobs'], env);
    const key = await cliJson(['key', 'create', '--source', source.id], env);
    const server = await startServer([], env);
    const post = (body: unknown, k = key.key) =>
      fetch(`${server.url}/api/v1/batch`, { method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    try {
      const res = await post({ items: [
        { event: 'invoice_paid', distinct_id: 'cust_1', insert_id: 'inv_1', properties: { amount: 42 } },
        { type: 'identify', distinct_id: 'cust_1', properties: { plan: 'pro' } },
      ] });
      expect(res.status).toBe(202);
      expect(res.headers.get('request-id')).toMatch(/^req_/);

      const events = await cliJson(['events', 'list', '--source', source.id], env);
      expect(events).toEqual([{
        id: expect.any(String), event: 'invoice_paid', distinct_id: 'cust_1', anonymous_id: null, person_id: expect.stringMatching(/^per_/),
        session_id: null, server_session: true, timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        received_at: expect.stringMatching(/\.\d{3}Z$/), insert_id: 'inv_1', properties: { amount: 42, $source_id: source.id },
      }]);
      const person = await cliJson(['person', 'show', '--project', project.id, '--distinct-id', 'cust_1'], env);
      expect(person).toEqual({ id: events[0].person_id, distinct_ids: ['cust_1'], traits: { plan: 'pro' }, created_at: expect.any(String), groups: [] });
      expect(await cliJson(['person', 'show', '--project', project.id, '--person-id', person.id], env)).toEqual(person);

      const merged = await cliJson(['browser', 'identify', '--project', project.id, '--anonymous-id', 'per_browser', '--distinct-id', 'cust_1'], env);
      expect(merged).toMatchObject({ id: 'per_browser', distinct_ids: ['cust_1'], traits: { plan: 'pro' } });
      expect((await cliJson(['events', 'list', '--source', source.id], env))[0].person_id).toBe('per_browser');
      // Held by one browser person, the id stays with it; the line says so rather than seem to link it.
      const other = await runCli(['browser', 'identify', '--project', project.id, '--anonymous-id', 'per_other', '--distinct-id', 'cust_1'], env);
      expect(other.stdout).toBe('cust_1 stays with browser person per_browser, which held it first; per_other is unchanged\n');
      const linked = await runCli(['browser', 'identify', '--project', project.id, '--anonymous-id', 'per_other', '--distinct-id', 'cust_2'], env);
      expect(linked.stdout).toBe('person per_other now holds cust_2\n');

      const usage = await cliJson(['usage', '--project', project.id], env);
      expect(usage).toEqual({ project_id: project.id, month: new Date().toISOString().slice(0, 7), events: 1, monthly_event_limit: null });

      await cliJson(['project', 'update', project.id, '--api-enabled', 'false'], env);
      expect((await post({ items: [{ event: 'x', distinct_id: 'u' }] })).status).toBe(404);
      await cliJson(['project', 'update', project.id, '--api-enabled', 'true'], env);
      // Key uses reach the store with the server's once-a-second drain: waited for, not assumed to be there yet.
      await expect.poll(async () => (await cliJson(['key', 'list', '--source', source.id], env))[0].last_used_at, { timeout: 10_000 }).not.toBeNull();
      await cliJson(['key', 'revoke', key.id], env);
      const revoked = await post({ items: [{ event: 'x', distinct_id: 'u' }] });
      expect(revoked.status).toBe(401);
      // Started with --port 0: links name the port it got, not 0.
      const port = new URL(server.url).port;
      expect((await revoked.json()).error.docs_url).toBe(`http://localhost:${port}/docs/api#invalid_key`);
      const docs = await fetch(`${server.url}/docs/api/openapi.json`).then((r) => r.json());
      expect(docs.servers).toEqual([{ url: `http://localhost:${port}` }]);

      const human = await runCli(['events', 'list', '--source', source.id], env);
      expect(human.stdout).toMatch(/invoice_paid/);
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });
});
