import type { DestinationConfig, DestinationKind, DestinationReach } from '../../stores/port-destinations.js';
import { maskUrl, parsedUrl } from '../urls.js';
import { parsePostgresUrl } from './postgres-url.js';
import { PostgresSender } from './sender.js';

/** A table name: letters, digits and underscores, optionally after a schema name and a dot. */
const TABLE = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;

const senderOf = (config: DestinationConfig, reach: DestinationReach): PostgresSender =>
  new PostgresSender(config.url ?? '', config.table ?? 'inlet_events', reach);

/** Rows of a table of any PostgreSQL database, made if missing (docs/destinations.md, "PostgreSQL tables"). */
export const postgres: DestinationKind = {
  name: 'postgres',
  about: 'into a table of a PostgreSQL database',
  fields: [
    { name: 'url', label: 'URL', help: 'postgres://user:password@host/db', flag: '--url <url>', required: true, secret: true, mask: maskUrl },
    { name: 'table', label: 'Table', help: 'the table, made if missing', flag: '--table <name>', required: true, secret: false },
  ],
  made: [],
  docs: 'PostgreSQL tables',
  example: '--url postgres://inlet:secret@db.internal/analytics --table inlet_events',

  configure(given) {
    const url = given.url ?? '';
    const u = parsedUrl(url, 'postgres://user:password@host:5432/db');
    if (typeof u === 'string') return { ok: false, error: u };
    if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
      return { ok: false, error: `A postgres destination's URL starts with postgres:// or postgresql://, not "${u.protocol}".` };
    }
    const table = given.table;
    if (table === undefined || !TABLE.test(table)) {
      return { ok: false, error: 'A postgres destination needs --table: letters, digits and underscores (a schema name and a dot may come first).' };
    }
    return { ok: true, config: { url, table } };
  },

  /** Connects and makes its table: a database that does not exist, or a wrong password, is said at once. */
  async check(config, reach) {
    const parsed = parsePostgresUrl(config.url ?? '');
    if (!parsed.ok) return parsed.error;
    const sender = senderOf(config, reach);
    try {
      return await sender.prepare();
    } finally {
      await sender.close();
    }
  },

  sender: (config, reach) => senderOf(config, reach),
};
