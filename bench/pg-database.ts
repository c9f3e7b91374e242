import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

/** A database made for one run beside the one the URL names, and its removal. */
export interface ScratchDatabase {
  name: string;
  url: string;
  drop: () => Promise<void>;
}

/**
 * Each run writes into databases of its own (empty, or copies of a template), so figures never depend on
 * what earlier runs left behind, and nothing of the operator's is touched.
 */
export async function createScratchDatabase(baseUrl: string, label: string, template?: string): Promise<ScratchDatabase> {
  const name = `inlet_bench_${label}_${randomBytes(4).toString('hex')}`;
  const from = template === undefined ? '' : ` TEMPLATE ${pg.escapeIdentifier(template)}`;
  // A server just stopped may leave its backend on the template for a moment (55006: object in use).
  for (let attempt = 1; ; attempt++) {
    try {
      await withClient(baseUrl, (c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${from}`));
      break;
    } catch (e) {
      if ((e as { code?: string }).code !== '55006' || attempt === 20) throw e;
      await sleep(250);
    }
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => withClient(baseUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)).then(() => {}),
  };
}

async function withClient<T>(url: string, f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}
