import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Store } from '../../src/stores/port.js';
import { PostgresStore } from '../../src/stores/postgres/postgres-store.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/fixture.js';
import { type Service, TEST_DATABASE_URL } from '../helpers/services.js';

/** A fresh, empty database of one engine, for one suite. */
export interface StoreUnderTest {
  store: Store;
  /** Another store on the same database, as a second server would open it; closed by cleanup. */
  another(): Promise<Store>;
  /** Closes every store opened here and removes the database. */
  cleanup(): Promise<void>;
}

/** One engine of the conformance suite. */
export interface Engine {
  name: string;
  /** Services the engine needs running; outside CI its suites are skipped without them. */
  needs?: Service[];
  make(): Promise<StoreUnderTest>;
}

export { TEST_DATABASE_URL };

const ALL: Engine[] = [
  {
    name: 'sqlite',
    async make() {
      const tmp = tempDir('inlet-conformance-');
      const opened: Store[] = [SqliteStore.open(tmp.dir)];
      return {
        store: opened[0]!,
        another: async () => {
          const s = SqliteStore.open(tmp.dir);
          opened.push(s);
          return s;
        },
        cleanup: async () => {
          for (const s of opened) await s.close();
          tmp.remove();
        },
      };
    },
  },
  {
    name: 'postgres',
    needs: ['postgres'],
    async make() {
      const db = await createTestDatabase();
      const opened: Store[] = [];
      const open = async () => {
        const s = await PostgresStore.connect(db.url);
        opened.push(s);
        return s;
      };
      try {
        await open();
      } catch (e) {
        await db.drop();
        throw e;
      }
      return {
        store: opened[0]!,
        another: open,
        cleanup: async () => {
          for (const s of opened) await s.close();
          await db.drop();
        },
      };
    },
  },
];

/**
 * The engines every conformance test runs against: all of them, or those
 * named in INLET_TEST_STORES (comma-separated, e.g. "sqlite").
 */
export const STORES: Engine[] = selectEngines(process.env.INLET_TEST_STORES);

function selectEngines(filter: string | undefined): Engine[] {
  if (filter === undefined || filter.trim() === '') return ALL;
  const names = filter.split(',').map((n) => n.trim()).filter((n) => n !== '');
  const unknown = names.filter((n) => !ALL.some((e) => e.name === n));
  if (unknown.length > 0) {
    throw new Error(`INLET_TEST_STORES names unknown engine(s) ${unknown.join(', ')}; known: ${ALL.map((e) => e.name).join(', ')}.`);
  }
  return ALL.filter((e) => names.includes(e.name));
}

/**
 * Creates an empty database beside the one TEST_DATABASE_URL names, so runs
 * (and test files running in parallel) never see each other's rows.
 * An unreachable server fails the run: a skipped engine would pass unseen.
 */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `inlet_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
  } catch (e) {
    throw new Error(
      `PostgreSQL is not reachable at ${TEST_DATABASE_URL} (${(e as Error).message}). ` +
        'Start it, point INLET_TEST_DATABASE_URL at one, or run only the embedded engine with INLET_TEST_STORES=sqlite.',
      { cause: e },
    );
  }
  try {
    // Identifiers cannot be parameters; the name is ours, escaped all the same.
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5000 });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
