import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Collector } from '../../src/domain/collector.js';
import type { Store } from '../../src/stores/port.js';
import { PostgresStore } from '../../src/stores/postgres/postgres-store.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { openSqlite } from '../../src/stores/sqlite/open.js';
import { tempDir } from '../helpers/fixture.js';
import { type Service, TEST_DATABASE_URL } from '../helpers/services.js';

/** A fresh, empty database of one engine, for one suite. */
export interface StoreUnderTest {
  /** The domain's write path over the engine, as a server runs it. */
  collector: Collector;
  /** Another server on the same database; closed by cleanup. */
  another(): Promise<Collector>;
  /**
   * The rows of `table` whose `column` holds `value`, counted on another
   * connection to the database (what no port read shows, as the keys an
   * erasure must leave none of): the store's own is not reached into.
   */
  countRows(table: string, column: string, value: string): Promise<number>;
  /** Closes every server opened here and removes the database. */
  cleanup(): Promise<void>;
}

/** One engine: how to open a store on a fresh database, and another on the same one. */
interface EngineDef {
  name: string;
  /** Services the engine needs running; outside CI its suites are skipped without them. */
  needs?: Service[];
  /** Makes the database; `open` opens a store on it (each call another server); `drop` removes it. */
  database(): Promise<{ open: () => Promise<Store>; drop: () => Promise<void>; count: StoreUnderTest['countRows'] }>;
}

/** One engine of the conformance suite. */
export interface Engine {
  name: string;
  needs?: Service[];
  make(): Promise<StoreUnderTest>;
}

/** Wraps an engine's stores in the domain's write path, each as one server. */
function engine(def: EngineDef): Engine {
  return {
    name: def.name,
    needs: def.needs,
    async make() {
      const db = await def.database();
      const opened: Collector[] = [];
      const open = async () => {
        const c = new Collector(await db.open());
        opened.push(c);
        return c;
      };
      try {
        await open();
      } catch (e) {
        await db.drop();
        throw e;
      }
      return {
        collector: opened[0]!,
        another: open,
        countRows: db.count,
        cleanup: async () => {
          for (const c of opened) await c.close();
          await db.drop();
        },
      };
    },
  };
}

export { TEST_DATABASE_URL };

/** Every engine; a new one is one line here. */
const ALL: Engine[] = [
  engine({ name: 'sqlite', database: async () => sqliteDatabase() }),
  engine({ name: 'postgres', needs: ['postgres'], database: postgresDatabase }),
];

/** Names of tables and columns go into the SQL text: only plain ones are taken. */
function plain(...names: string[]): void {
  for (const n of names) if (!/^[a-z_]+$/.test(n)) throw new Error(`Not a plain name: ${n}`);
}

function sqliteDatabase() {
  const tmp = tempDir('inlet-conformance-');
  const count = async (table: string, column: string, value: string) => {
    plain(table, column);
    const db = openSqlite(tmp.dir);
    try {
      return db.prepare(`SELECT count(*) FROM ${table} WHERE ${column} = ?`).pluck().get(value) as number;
    } finally {
      db.close();
    }
  };
  return { open: async () => SqliteStore.open(tmp.dir), drop: async () => tmp.remove(), count };
}

async function postgresDatabase() {
  const db = await createTestDatabase();
  const count = async (table: string, column: string, value: string) => {
    plain(table, column);
    const c = new pg.Client({ connectionString: db.url, connectionTimeoutMillis: 5000 });
    await c.connect();
    try {
      return Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE ${column} = $1`, [value])).rows[0]!.n);
    } finally {
      await c.end();
    }
  };
  return { open: () => PostgresStore.connect(db.url), drop: db.drop, count };
}

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
