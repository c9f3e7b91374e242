/**
 * Console accounts had no life cycle: a stolen cookie worked for up to 7
 * days. Here `inlet user update` and `inlet user delete` run outside the
 * process of a live `inlet serve` (in this one, through the entry bin/inlet
 * runs), on the store it uses (SQLite, and PostgreSQL), and the server's very
 * next console request with the old cookie is sent to the sign-in page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../conformance/stores.js';
import { tempDir } from '../helpers/fixture.js';
import { describeWith } from '../helpers/needs-services.js';
import { cliJson, runCli } from '../helpers/cli.js';
import { type Server, startServer, stopServer, withAdmin } from '../helpers/process.js';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'another horse, another staple';

/** The store a server and the commands share: env for both, and how to throw it away. */
interface SharedStore {
  env: Record<string, string>;
  remove(): Promise<void>;
}

function lifeCycleOverProcesses(open: () => Promise<SharedStore>): void {
  let shared: SharedStore;
  let server: Server;
  let orgA: string;
  let orgB: string;
  let n = 0;

  beforeAll(async () => {
    shared = await open();
    // Made by the code `org create` runs: the commands this file is about are the user ones.
    [orgA, orgB] = await withAdmin(shared.env, undefined, async (admin) => [(await admin.createOrg('A')).id, (await admin.createOrg('B')).id]);
    server = await startServer([], shared.env);
  });
  afterAll(async () => {
    if (server) await stopServer(server);
    await shared?.remove();
  });

  const inlet = (args: string[], input?: string) => runCli(args, shared.env, input);

  /** A console account made with `inlet user create`, member of org A. */
  async function newUser(): Promise<{ id: string; email: string }> {
    const email = `user${++n}@life.test`;
    const r = await inlet(['user', 'create', '--email', email, '--org', orgA, '--password-stdin', '--json'], PASSWORD);
    expect(r.code, r.stderr).toBe(0);
    return { id: JSON.parse(r.stdout).id, email };
  }

  /** Signs in to the server over HTTP; the session cookie, or the status when refused. */
  async function signIn(email: string, password = PASSWORD): Promise<string | number> {
    const res = await fetch(`${server.url}/console/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email, password }).toString(),
      redirect: 'manual',
    });
    await res.arrayBuffer();
    if (res.status !== 303) return res.status;
    return res.headers.get('set-cookie')!.split(';')[0]!;
  }

  /** A console page with the cookie: 200, or 303 to the sign-in page. */
  async function projectsPage(cookie: string | number): Promise<{ status: number; location: string | null }> {
    const res = await fetch(`${server.url}/console/projects`, { headers: { cookie: String(cookie) }, redirect: 'manual' });
    await res.arrayBuffer();
    return { status: res.status, location: res.headers.get('location') };
  }
  const SIGNED_OUT = { status: 303, location: '/console/login' };
  const SIGNED_IN = { status: 200, location: null };

  it('a disabled user’s session is refused on its next request, after inlet user update --disable in another process', async () => {
    const u = await newUser();
    const cookies = [await signIn(u.email), await signIn(u.email)];
    for (const c of cookies) expect(await projectsPage(c)).toEqual(SIGNED_IN);
    const r = await inlet(['user', 'update', u.id, '--disable', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ id: u.id, disabled: true });
    for (const c of cookies) expect(await projectsPage(c)).toEqual(SIGNED_OUT);
    // The right password does not sign in, and the answer is a wrong password's.
    expect(await signIn(u.email)).toBe(401);
    expect((await inlet(['user', 'update', u.email, '--enable'])).code).toBe(0);
    expect(await projectsPage(await signIn(u.email))).toEqual(SIGNED_IN);
  });

  it('a new password ends the user’s other sessions', async () => {
    const u = await newUser();
    const other = await newUser();
    const cookie = await signIn(u.email);
    const bystander = await signIn(other.email);
    const r = await inlet(['user', 'update', u.email, '--password-stdin', '--json'], NEW_PASSWORD);
    expect(r.code, r.stderr).toBe(0);
    expect(await projectsPage(cookie)).toEqual(SIGNED_OUT);
    expect(await projectsPage(bystander)).toEqual(SIGNED_IN);
    expect(await signIn(u.email)).toBe(401);
    expect(await projectsPage(await signIn(u.email, NEW_PASSWORD))).toEqual(SIGNED_IN);
  });

  it('a change of orgs ends sessions, and so does a change of admin', async () => {
    const u = await newUser();
    let cookie = await signIn(u.email);
    expect((await inlet(['user', 'update', u.id, '--add-org', orgB, '--remove-org', orgA])).code).toBe(0);
    expect(await projectsPage(cookie)).toEqual(SIGNED_OUT);
    cookie = await signIn(u.email);
    expect((await inlet(['user', 'update', u.id, '--admin', 'true'])).code).toBe(0);
    expect(await projectsPage(cookie)).toEqual(SIGNED_OUT);
  });

  it('deleting a user ends its sessions', async () => {
    const u = await newUser();
    const cookie = await signIn(u.email);
    expect(await cliJson(['user', 'delete', u.id], shared.env)).toEqual({ id: u.id, deleted: true });
    expect(await projectsPage(cookie)).toEqual(SIGNED_OUT);
    expect(await signIn(u.email)).toBe(401);
  });
}

describe('inlet user update and delete against a live server on SQLite', () => {
  lifeCycleOverProcesses(async () => {
    const tmp = tempDir('inlet-user-sessions-');
    return { env: { INLET_DATA_DIR: tmp.dir, INLET_DATABASE_URL: '', INLET_REDIS_URL: '' }, remove: async () => tmp.remove() };
  });
});

describeWith(['postgres'], 'inlet user update and delete against a live server on PostgreSQL', () => {
  lifeCycleOverProcesses(async () => {
    const db = await createTestDatabase();
    const tmp = tempDir('inlet-user-sessions-pg-');
    return { env: { INLET_DATA_DIR: tmp.dir, INLET_DATABASE_URL: db.url, INLET_REDIS_URL: '' }, remove: async () => (tmp.remove(), db.drop()) };
  });
});
