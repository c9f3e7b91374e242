import { afterAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/domain/accounts/passwords.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/fixture.js';
import { cliJson, runCli } from '../helpers/cli.js';

const tmp = tempDir('inlet-console-cli-');
afterAll(() => tmp.remove());
const env = { INLET_DATA_DIR: tmp.dir };

/** Runs `bin/inlet` with `input` on its stdin. */
const withStdin = (args: string[], input: string) => runCli(args, env, input);

describe('inlet user create, org list, project list, source list, --retention-days', () => {
  it('lists organizations, projects with their retention, and sources, in the documented shapes', async () => {
    const b = await cliJson(['org', 'create', '--name', 'Beta'], env);
    const a = await cliJson(['org', 'create', '--name', 'Alpha'], env);
    expect(await cliJson(['org', 'list'], env)).toEqual([a, b]);
    const p = await cliJson(['project', 'create', '--name', 'Web', '--org', a.id, '--api-enabled'], env);
    const q = await cliJson(['project', 'create', '--name', 'Jobs', '--org', b.id], env);
    expect(await cliJson(['project', 'list', '--org', a.id], env)).toEqual([{ ...p, retention_days: 400 }]);
    expect(await cliJson(['project', 'list'], env)).toEqual([{ ...q, retention_days: 400 }, { ...p, retention_days: 400 }]);
    const updated = await cliJson(['project', 'update', p.id, '--retention-days', '30'], env);
    expect(updated).toEqual({ ...p, retention_days: 30 });
    expect((await cliJson(['project', 'list', '--org', a.id], env))[0].retention_days).toBe(30);
    const s = await cliJson(['source', 'create', '--project', p.id, '--name', 'Billing'], env);
    expect(await cliJson(['source', 'list', '--project', p.id], env)).toEqual([s]);
    expect(await cliJson(['source', 'list', '--project', q.id], env)).toEqual([]);

    const human = await runCli(['project', 'list'], env);
    expect(human.stdout).toMatch(/^ID\s+ORG\s+NAME\s+API\s+LIMIT\s+RETENTION\n/);
    expect(human.stdout).toContain('30d');
    for (const [args, message] of [
      [['project', 'update', p.id, '--retention-days', '0'], /1 to 3,650/],
      [['project', 'update', p.id, '--retention-days', 'year'], /whole number/],
      [['project', 'list', '--org', 'org_nope'], /No organization org_nope/],
      [['source', 'list', '--project', 'prj_nope'], /No project prj_nope/],
    ] as const) {
      const r = await runCli([...args, '--json'], env);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
    }
  });

  it('creates console accounts with a scrypt hash of the password read from stdin', async () => {
    const org = await cliJson(['org', 'create', '--name', 'Accounts'], env);
    const other = await cliJson(['org', 'create', '--name', 'Accounts 2'], env);
    const r = await withStdin(['user', 'create', '--email', 'Dev@Example.com', '--org', org.id, '--org', other.id, '--password-stdin', '--json'], 'a long enough password\n');
    expect(r.code, r.stderr).toBe(0);
    const made = JSON.parse(r.stdout);
    expect(made).toEqual({ id: expect.stringMatching(/^usr_/), email: 'dev@example.com', admin: false, orgs: [org.id, other.id] });
    const admin = JSON.parse((await withStdin(['user', 'create', '--email', 'root@example.com', '--admin', '--password-stdin', '--json'], 'another long password')).stdout);
    expect(admin).toMatchObject({ admin: true, orgs: [] });

    const store = SqliteStore.open(tmp.dir);
    try {
      const stored = (await store.accounts.userByEmail('dev@example.com'))!;
      expect(stored.passwordHash).toMatch(/^scrypt\$32768\$8\$1\$/);
      expect(stored.passwordHash).not.toContain('a long enough password');
      expect(await verifyPassword('a long enough password', stored.passwordHash)).toBe(true);
      expect(await verifyPassword('a long enough passworD', stored.passwordHash)).toBe(false);
    } finally {
      await store.close();
    }

    for (const [args, input, message] of [
      [['--email', 'x@example.com', '--password-stdin'], 'too short', /at least 12 characters/],
      [['--email', 'dev@example.com', '--password-stdin'], 'a long enough password', /already exists/],
      [['--email', 'not an email', '--password-stdin'], 'a long enough password', /not an email address/],
      [['--email', 'y@example.com', '--org', 'org_nope', '--password-stdin'], 'a long enough password', /No organization org_nope/],
      [['--email', 'z@example.com'], 'a long enough password', /--password-stdin/],
    ] as const) {
      const res = await withStdin(['user', 'create', ...args, '--json'], input);
      expect(res.code, args.join(' ')).toBe(1);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(message);
    }
  });
});

describe('inlet user list, update, delete (accounts had no life cycle)', () => {
  it('lists, changes, disables and deletes accounts in the documented shapes, by id or email', async () => {
    const org = await cliJson(['org', 'create', '--name', 'Life'], env);
    const other = await cliJson(['org', 'create', '--name', 'Life 2'], env);
    const made = JSON.parse((await withStdin(['user', 'create', '--email', 'life@example.com', '--org', org.id, '--password-stdin', '--json'], 'a long enough password')).stdout);
    const listed = (await cliJson(['user', 'list'], env)).find((u: { id: string }) => u.id === made.id);
    expect(listed).toEqual({ id: made.id, email: 'life@example.com', admin: false, orgs: [org.id], disabled: false, created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) });

    const disabled = await cliJson(['user', 'update', made.id, '--disable', '--admin', 'true', '--add-org', other.id, '--remove-org', org.id], env);
    expect(disabled).toEqual({ ...listed, admin: true, disabled: true, orgs: [other.id] });
    expect((await cliJson(['user', 'list'], env)).find((u: { id: string }) => u.id === made.id)).toEqual(disabled);
    const r = await withStdin(['user', 'update', 'LIFE@example.com', '--enable', '--password-stdin', '--json'], 'a new long password\n');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ ...disabled, disabled: false });
    const store = SqliteStore.open(tmp.dir);
    try {
      expect(await verifyPassword('a new long password', (await store.accounts.getUser(made.id))!.passwordHash)).toBe(true);
    } finally {
      await store.close();
    }

    const human = await runCli(['user', 'list'], env);
    expect(human.stdout).toMatch(/^ID\s+EMAIL\s+ADMIN\s+STATUS\s+ORGS\s+CREATED\n/);
    expect(human.stdout).toMatch(new RegExp(`${made.id}\\s+life@example.com\\s+admin\\s+enabled\\s+${other.id}`));
    expect((await runCli(['user', 'update', made.id, '--disable'], env)).stdout).toBe(`updated disabled admin account ${made.id} (life@example.com) in ${other.id}; its sessions were ended\n`);

    for (const [args, input, message] of [
      [['update', 'usr_nope', '--disable'], undefined, /No user usr_nope; list them with inlet user list/],
      [['update', 'nobody@example.com', '--disable'], undefined, /No user nobody@example.com/],
      [['update', made.id, '--add-org', 'org_nope'], undefined, /No organization org_nope; list them with inlet org list/],
      [['update', made.id, '--disable', '--enable'], undefined, /Give --disable or --enable, not both/],
      [['update', made.id, '--admin', 'yes'], undefined, /--admin takes true or false/],
      [['update', made.id, '--password-stdin'], 'too short', /at least 12 characters/],
      [['update', made.id], undefined, /Nothing to change: give --password-stdin, --disable, --enable, --admin, --add-org or --remove-org/],
      [['update', made.id, '--add-org', org.id, '--remove-org', org.id], undefined, /given to both --add-org and --remove-org/],
      [['delete', 'usr_nope'], undefined, /No user usr_nope/],
    ] as const) {
      const res = await runCli(['user', ...args, '--json'], env, input);
      expect(res.code, args.join(' ')).toBe(1);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(message);
    }

    const gone = await runCli(['user', 'delete', 'life@example.com', '--json'], env);
    expect(gone.code, gone.stderr).toBe(0);
    expect(JSON.parse(gone.stdout)).toEqual({ id: made.id, deleted: true });
    expect((await cliJson(['user', 'list'], env)).map((u: { id: string }) => u.id)).not.toContain(made.id);
  });

  it('deleting or demoting the last enabled admin is allowed, and says so on stderr', async () => {
    for (const u of await cliJson(['user', 'list'], env)) if (u.admin) await cliJson(['user', 'delete', u.id], env);
    const make = async (email: string) =>
      JSON.parse((await withStdin(['user', 'create', '--email', email, '--admin', '--password-stdin', '--json'], 'a long enough password')).stdout).id as string;
    const a = await make('admin-a@example.com');
    const b = await make('admin-b@example.com');
    const first = await runCli(['user', 'update', a, '--admin', 'false', '--json'], env);
    expect(first.code).toBe(0);
    expect(first.stderr).toBe('');
    const last = await runCli(['user', 'delete', b, '--json'], env);
    expect(last.code).toBe(0);
    expect(JSON.parse(last.stdout)).toEqual({ id: b, deleted: true });
    expect(last.stderr).toMatch(/no enabled admin account is left; make one with inlet user create --admin/);
  });
});
