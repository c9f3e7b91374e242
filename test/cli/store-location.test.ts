import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase } from '../conformance/stores.js';
import { tempDir } from '../helpers/fixture.js';
import { describeWith } from '../helpers/needs-services.js';
import { runCliAsIs } from '../helpers/cli.js';
import { BIN, startServer, stopServer } from '../helpers/process.js';

const tmp = tempDir('inlet-where-');
afterAll(() => tmp.remove());

/** The store settings of the test's own environment left out: only what a test names counts. */
const NO_STORE_SETTINGS = { INLET_DATABASE_URL: '', INLET_DATA_DIR: '' };

describe('commands other than serve work on an existing store only', () => {
  it('a command run where there is no store exits non-zero, names the directory it looked in, and creates nothing', async () => {
    const dir = join(tmp.dir, 'elsewhere', 'data');
    for (const args of [['org', 'list'], ['key', 'create', '--source', 'src_x'], ['project', 'create', '--name', 'Web', '--api-enabled']]) {
      const r = await runCliAsIs([...args, '--data-dir', dir], NO_STORE_SETTINGS);
      expect(r.code, r.stdout).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`no Inlet store in ${dir} `);
      expect(r.stderr).toContain('--data-dir');
    }
    expect(existsSync(join(tmp.dir, 'elsewhere'))).toBe(false);
  });

  it('run from another directory, the default ./data is named as the absolute directory it is there, and not made', async () => {
    const cwd = join(tmp.dir, 'other-cwd');
    mkdirSync(cwd);
    const r = spawnSync(process.execPath, [BIN, 'key', 'create', '--source', 'src_x'], { cwd, env: { ...process.env, ...NO_STORE_SETTINGS }, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`no Inlet store in ${join(cwd, 'data')} `);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('serve prints, after its listening line, where its data is and the console and reference URLs; then the commands find the store', async () => {
    const dir = join(tmp.dir, 'served');
    const server = await startServer([], { ...NO_STORE_SETTINGS, INLET_DATA_DIR: dir });
    try {
      await vi.waitFor(() => expect(server.stdout()).toContain('reference: '), { timeout: 10_000 });
      const base = server.url.replace('127.0.0.1', 'localhost');
      expect(server.stdout().split('\n').slice(0, 4)).toEqual([
        `inlet listening on ${server.url}`,
        `data: SQLite, ${join(dir, 'inlet.db')} (new: created now)`,
        `console: ${base}/console`,
        `reference: ${base}/docs/api`,
      ]);
      const r = await runCliAsIs(['org', 'list', '--json', '--data-dir', dir], NO_STORE_SETTINGS);
      expect(r.code, r.stderr).toBe(0);
    } finally {
      await stopServer(server);
    }
    expect(readdirSync(dir)).toContain('inlet.db');
  });

  it('serve in the wrong directory does not quietly create a new, empty store: its data line says the store is new, and only then', async () => {
    const dir = join(tmp.dir, 'served-twice');
    const lineOf = async () => {
      const server = await startServer([], { ...NO_STORE_SETTINGS, INLET_DATA_DIR: dir });
      try {
        await vi.waitFor(() => expect(server.stdout()).toContain('reference: '), { timeout: 10_000 });
        return server.stdout().split('\n')[1];
      } finally {
        await stopServer(server);
      }
    };
    expect(await lineOf()).toBe(`data: SQLite, ${join(dir, 'inlet.db')} (new: created now)`);
    expect(await lineOf()).toBe(`data: SQLite, ${join(dir, 'inlet.db')}`);
  });
});

describeWith(['postgres'], 'commands on a PostgreSQL database without the store', () => {
  it('a database without Inlet’s tables is named, and the command creates none', async () => {
    const db = await createTestDatabase();
    try {
      const r = await runCliAsIs(['org', 'list'], { ...NO_STORE_SETTINGS, INLET_DATABASE_URL: db.url });
      expect(r.code).toBe(1);
      const where = new URL(db.url);
      expect(r.stderr).toContain(`${where.hostname}:${where.port || '5432'}${where.pathname} has no Inlet store`);
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      try {
        const { rows } = await c.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
        expect(rows[0].n).toBe(0);
      } finally {
        await c.end();
      }
    } finally {
      await db.drop();
    }
  });

  it('serve names the database with the password masked', async () => {
    const db = await createTestDatabase();
    const url = new URL(db.url);
    url.password = 'not-shown-anywhere';
    const server = await startServer([], { ...NO_STORE_SETTINGS, INLET_DATABASE_URL: url.toString() });
    try {
      await vi.waitFor(() => expect(server.stdout()).toContain('reference: '), { timeout: 10_000 });
      const shown = server.stdout().split('\n')[1];
      expect(shown).toBe(`data: PostgreSQL, postgres://${url.username}:***@${url.host}${url.pathname} (new: created now)`);
      expect(server.stdout() + server.stderr()).not.toContain('not-shown-anywhere');
    } finally {
      await stopServer(server);
      await db.drop();
    }
  });
});
