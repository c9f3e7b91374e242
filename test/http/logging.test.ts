import { PassThrough } from 'node:stream';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/stores/postgres/postgres-store.js';
import { STORES, createTestDatabase } from '../conformance/stores.js';
import { makeFixture, send } from '../helpers/fixture.js';

it('logs one line per request with its status and refusal code, and never a key, a header or a property', async () => {
  const stream = new PassThrough();
  let logs = '';
  stream.on('data', (d) => (logs += d));
  const f = await makeFixture({ logStream: stream });
  try {
    const secret = 'property-value-that-must-not-be-logged';
    await send(f, { items: [{ event: 'e', distinct_id: 'user-that-must-not-be-logged', properties: { note: secret } }] });
    await send({ ...f, key: `srv_live_${'Z'.repeat(32)}` }, { items: [] });
    await send(f, { items: [{ event: '$bad', distinct_id: 'u', properties: { note: secret } }] });
    const lines = logs.trim().split('\n').map((l) => JSON.parse(l));
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.map((l) => [l.status, l.code])).toEqual([[202, undefined], [401, 'invalid_key'], [400, 'all_items_invalid']]);
    for (const leak of [f.key, 'Z'.repeat(32), secret, 'user-that-must-not-be-logged', 'authorization']) {
      expect(logs).not.toContain(leak);
    }
  } finally {
    await f.close();
  }
});

describe.runIf(STORES.some((e) => e.name === 'postgres'))('fault 8: logs quote stored properties', () => {
  it('a write PostgreSQL refuses, quoting the row, logs its SQLSTATE and none of the row', async () => {
    const db = await createTestDatabase();
    const stream = new PassThrough();
    let logs = '';
    stream.on('data', (d) => (logs += d));
    const f = await makeFixture({ store: await PostgresStore.connect(db.url), logStream: stream });
    const client = new pg.Client({ connectionString: db.url });
    try {
      await client.connect();
      // The database quotes the row it refuses in its message, detail, hint and context.
      await client.query(`
        CREATE FUNCTION refuse_row() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          RAISE EXCEPTION 'refused %', row_to_json(NEW) USING DETAIL = row_to_json(NEW)::text, HINT = row_to_json(NEW)::text;
        END $$;
        CREATE TRIGGER refuse_event BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_row();
        CREATE TRIGGER refuse_trait BEFORE INSERT ON person_traits FOR EACH ROW EXECUTE FUNCTION refuse_row();`);
      const secret = 'property-value-that-must-not-be-logged';
      const user = 'user-that-must-not-be-logged';
      const track = await send(f, { items: [{ event: 'e', distinct_id: user, properties: { note: secret } }] });
      const identify = await send(f, { items: [{ type: 'identify', distinct_id: user, properties: { [secret]: secret } }] });
      expect([track.statusCode, identify.statusCode]).toEqual([503, 503]);
      const lines = logs.trim().split('\n').map((l) => JSON.parse(l));
      const failures = lines.filter((l) => l.msg === 'store unavailable');
      expect(failures).toHaveLength(2);
      for (const l of failures) expect(l.err).toMatchObject({ code: 'P0001', severity: 'ERROR' });
      for (const leak of [secret, user]) expect(logs).not.toContain(leak);
    } finally {
      await client.end();
      await f.close();
      await db.drop();
    }
  });
});
