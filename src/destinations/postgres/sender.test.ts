import fs from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createTestDatabase } from '../../../test/conformance/stores.js';
import { describeWith } from '../../../test/helpers/needs-services.js';
import { TEST_DATABASE_URL } from '../../../test/helpers/services.js';
import type { OutgoingBatch } from '../../stores/port-destinations.js';
import { postgres } from './kind.js';
import { OWN_DATABASE_MESSAGE } from './own-database.js';
import { PostgresSender } from './sender.js';
import type { DestinationReach } from '../reach.js';

/** As a server with INLET_DESTINATIONS_ALLOW_PRIVATE=true: the test database is on loopback. */
const OPEN: DestinationReach = { allowPrivate: true, ownDatabaseUrl: null, selfPort: null };
const CLOSED: DestinationReach = { ...OPEN, allowPrivate: false };

const batch: OutgoingBatch = { destinationId: 'dst_1', projectId: 'prj_1', batchId: 'b-1', events: [], eventJson: [] };
const never = new AbortController().signal;

it('a postgres destination URL makes the server read any local file: one kept with sslrootcert, sslcert or sslkey reads none, and is refused', async () => {
  const read = vi.spyOn(fs, 'readFileSync').mockImplementation(() => {
    throw new Error('a destination read a file');
  });
  try {
    const sender = new PostgresSender('postgres://postgres@127.0.0.1:1/postgres?sslrootcert=/dev/zero&sslkey=/etc/shadow', 'inlet_events', OPEN);
    const outcome = await sender.send(batch, never);
    await sender.close();
    expect(read).not.toHaveBeenCalled();
    expect(outcome).toEqual({ ok: false, error: expect.stringMatching(/^Refused: The URL's parameter "sslrootcert" is not accepted: files are never read from the server/), retryAfterMs: null });
  } finally {
    read.mockRestore();
  }
});

describeWith(['postgres'], 'postgres destinations, connected', () => {
  let target: { url: string; drop: () => Promise<void> };
  beforeAll(async () => {
    target = await createTestDatabase();
  });
  afterAll(async () => target?.drop());

  const tables = async (url: string): Promise<string[]> => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query<{ t: string }>("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")).rows.map((r) => r.t);
    } finally {
      await c.end();
    }
  };

  it('a postgres destination is checked when it is made: its table is made, and a database that does not exist is said at once', async () => {
    expect(await postgres.check({ url: target.url, table: 'made_at_once' }, OPEN)).toBeNull();
    expect(await tables(target.url)).toContain('made_at_once');
    const missing = new URL(target.url);
    missing.pathname = '/no_such_database_here';
    const error = await postgres.check({ url: missing.toString(), table: 't' }, OPEN);
    expect(error).toMatch(/^PostgreSQL: database "\*\*\*" does not exist \(SQLSTATE 3D000\)\.$/);
  });

  it('destinations reach inside the network: a name that resolves to loopback is refused before connecting, unless private addresses are allowed', async () => {
    const u = new URL(target.url);
    u.hostname = 'warehouse.test';
    const resolve = async () => [{ address: '127.0.0.1', family: 4 }];
    expect(await postgres.check({ url: u.toString(), table: 'guarded' }, { ...CLOSED, resolve })).toMatch(
      /^Refused: warehouse\.test is, or resolves to, an address destinations may not reach/,
    );
    expect(await tables(target.url)).not.toContain('guarded');
    expect(await postgres.check({ url: u.toString(), table: 'guarded' }, { ...OPEN, resolve })).toBeNull();
    expect(await tables(target.url)).toContain('guarded');
  });

  it("a postgres destination may point at Inlet's own database: it is refused, however the host is spelled, and makes no table there", async () => {
    const own = new URL(target.url);
    own.hostname = 'localhost';
    const reach = { ...OPEN, ownDatabaseUrl: own.toString() };
    expect(await postgres.check({ url: target.url, table: 'squatter' }, reach)).toBe(OWN_DATABASE_MESSAGE);
    const sender = new PostgresSender(target.url, 'squatter', reach);
    expect(await sender.send(batch, never)).toEqual({ ok: false, error: OWN_DATABASE_MESSAGE, retryAfterMs: null });
    await sender.close();
    expect(await tables(target.url)).not.toContain('squatter');
    // Another database of the same server is not the store's.
    expect(await postgres.check({ url: target.url, table: 'neighbour' }, { ...OPEN, ownDatabaseUrl: TEST_DATABASE_URL })).toBeNull();
  });
});
