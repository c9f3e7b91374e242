import { PassThrough } from 'node:stream';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/stores/postgres/postgres-store.js';
import { STORES, createTestDatabase } from '../conformance/stores.js';
import { makeFixture, send } from '../helpers/fixture.js';

/** A fixture whose log lines are kept, and a way to read them. */
async function loggedFixture() {
  const stream = new PassThrough();
  let logs = '';
  stream.on('data', (d) => (logs += d));
  const f = await makeFixture({ logStream: stream });
  return { f, logs: () => logs };
}

it('logs one line per request with its status and refusal code, and never a key, a header or a property', async () => {
  const { f, logs: read } = await loggedFixture();
  try {
    const secret = 'property-value-that-must-not-be-logged';
    await send(f, { items: [{ event: 'e', distinct_id: 'user-that-must-not-be-logged', properties: { note: secret } }] });
    await send({ ...f, key: `srv_live_${'Z'.repeat(32)}` }, { items: [] });
    await send(f, { items: [{ event: '$bad', distinct_id: 'u', properties: { note: secret } }] });
    const logs = read();
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

it('one line per request with its ids, route, counts and duration; no key, property or trait in any line', async () => {
  const { f, logs: read } = await loggedFixture();
  try {
    const marks = { prop: 'PROP-MARKER-7f3a', trait: 'TRAIT-MARKER-91bc', key: 'KEYNAME-MARKER-22d0', user: 'USER-MARKER-5e61', event: 'EVENT-MARKER-0c4d' };
    const items = [
      { event: marks.event, distinct_id: marks.user, insert_id: 'log-1', properties: { [marks.key]: marks.prop } },
      { type: 'identify', distinct_id: marks.user, traits: { plan: marks.trait } },
      { event: 'bot', distinct_id: 'u', properties: { $user_agent: 'Googlebot/2.1 (+http://www.google.com/bot.html)' } },
      { event: '$bad', distinct_id: 'u', properties: { note: marks.prop } },
    ];
    await send(f, { items });
    await send(f, { items: items.slice(0, 1) });
    await send({ ...f, key: `srv_live_${'Z'.repeat(32)}` }, { items });
    await f.app.inject({ method: 'GET', url: '/readyz' });

    const logs = read();
    const lines = logs.trim().split('\n').map((l) => JSON.parse(l));
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests).toHaveLength(4);
    const [first, second, badKey, ready] = requests;
    expect(first).toMatchObject({
      method: 'POST', route: '/api/*', project: f.projectId, source: f.sourceId, status: 202,
      items: { accepted: 2, duplicate: 0, dropped: 1, refused: 1 },
    });
    expect(first.reqId).toMatch(/^req_/);
    expect(typeof first.duration_ms).toBe('number');
    expect(first.code).toBeUndefined();
    expect(second).toMatchObject({ status: 202, items: { accepted: 0, duplicate: 1, dropped: 0, refused: 0 } });
    expect(badKey).toMatchObject({ status: 401, code: 'invalid_key', route: '/api/*' });
    expect(badKey.project).toBeUndefined();
    expect(ready).toMatchObject({ route: '/readyz', status: 200 });
    for (const leak of [f.key, f.key.slice(-12), 'Z'.repeat(32), ...Object.values(marks), 'authorization', 'Googlebot']) {
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
