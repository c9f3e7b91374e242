import type { Store } from './port.js';
import { PostgresStore } from './postgres/postgres-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';

/**
 * Opens the store the settings name: PostgreSQL when a database URL is set,
 * else the embedded SQLite file in the data directory. The one place outside
 * the engines' folders that knows which engines exist.
 */
export async function openStore(cfg: { dataDir: string; databaseUrl: string | null }): Promise<Store> {
  return cfg.databaseUrl === null ? SqliteStore.open(cfg.dataDir) : PostgresStore.connect(cfg.databaseUrl);
}
