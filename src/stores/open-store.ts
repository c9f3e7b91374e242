import { resolve } from 'node:path';
import type { Store } from './port.js';
import { hasPostgresSchema, whereIs } from './postgres/migrations.js';
import { DEFAULT_TIMEOUTS } from './postgres/pool.js';
import { hasSqliteStore, sqliteFile } from './sqlite/open.js';

interface StoreSettings {
  dataDir: string;
  databaseUrl: string | null;
}

/**
 * Opens the store the settings name: PostgreSQL when a database URL is set,
 * else the embedded SQLite file in the data directory. The one place outside
 * the engines' folders that knows which engines exist.
 */
export async function openStore(cfg: StoreSettings): Promise<Store> {
  // Each engine's code is loaded only when it is opened: a command on SQLite
  // does not load PostgreSQL's, nor the other way round.
  if (cfg.databaseUrl === null) return (await import('./sqlite/sqlite-store.js')).SqliteStore.open(cfg.dataDir);
  return (await import('./postgres/postgres-store.js')).PostgresStore.connect(cfg.databaseUrl);
}

/** Whether the settings point at a store already made (serve makes one where there is none). */
export async function hasStore(cfg: StoreSettings): Promise<boolean> {
  return cfg.databaseUrl === null ? hasSqliteStore(cfg.dataDir) : hasPostgresSchema(cfg.databaseUrl, DEFAULT_TIMEOUTS.connectMs);
}

/** There is no store where the settings point, and a command other than serve must not make one. */
export class NoStoreError extends Error {}

/**
 * Rejects with NoStoreError when the settings point where there is no store,
 * creating nothing: a command run from another directory would otherwise
 * make a new empty store under its own ./data, and its keys would be unknown
 * to the server.
 */
export async function requireStore(cfg: StoreSettings): Promise<void> {
  if (await hasStore(cfg)) return;
  if (cfg.databaseUrl === null) {
    throw new NoStoreError(
      `There is no Inlet store in ${resolve(cfg.dataDir)} (no ${sqliteFile('')} there). Give the data directory your server uses with --data-dir or INLET_DATA_DIR, or start "inlet serve" once to create a store there.`,
    );
  }
  throw new NoStoreError(
    `The PostgreSQL database at ${whereIs(cfg.databaseUrl)} has no Inlet store (none of its tables). Check that INLET_DATABASE_URL names your server's database, or start "inlet serve" once with it to create the store.`,
  );
}

/** Where the store is, for a person to read: the SQLite file, or PostgreSQL's address with the password masked. */
export function describeStore(cfg: StoreSettings): string {
  if (cfg.databaseUrl === null) return `SQLite, ${resolve(sqliteFile(cfg.dataDir))}`;
  try {
    const u = new URL(cfg.databaseUrl);
    if (u.password !== '') u.password = '***';
    // Parameters may carry secrets (password=, sslkey=): none is shown.
    const shown = `${u.protocol}//${u.username === '' ? '' : `${u.username}${u.password === '' ? '' : `:${u.password}`}@`}${u.host}${u.pathname}`;
    return `PostgreSQL, ${shown}`;
  } catch {
    return 'PostgreSQL, at the INLET_DATABASE_URL given';
  }
}
