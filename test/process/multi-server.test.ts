/**
 * Across servers: real `inlet serve` processes on one PostgreSQL database and
 * one Redis, driven over HTTP and looked at through the `inlet` command and the
 * database itself. PostgreSQL and Redis must be reachable: under CI this file
 * fails without them; elsewhere it is skipped and named (test/helpers/services.ts).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../conformance/stores.js';
import { orgJson, projectJson, sourceJson } from '../../src/cli/views.js';
import { cliJson } from '../helpers/cli.js';
import { type Server, startServer, stopServer, withAdmin } from '../helpers/process.js';
import { describeWith } from '../helpers/needs-services.js';
import { TEST_REDIS_URL, requireRedis } from '../helpers/services.js';

interface Answer {
  status: number;
  body: any;
  headers: Headers;
  server: number;
}

function post(server: Server, index: number, key: string, items: unknown[]): Promise<Answer> {
  return fetch(`${server.url}/api/v1/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ items }),
    // No request may hang: a stuck one fails the test instead of the run.
    signal: AbortSignal.timeout(20_000),
  }).then(async (res) => ({ status: res.status, body: await res.json(), headers: res.headers, server: index }));
}



const tag = () => randomBytes(4).toString('hex');

describeWith(['postgres', 'redis'], 'two servers on one PostgreSQL and one Redis', () => {
  let db: { url: string; drop: () => Promise<void> };
  let direct: pg.Client;
  let env: Record<string, string>;
  /** Limits off: what is checked there is storage, not counting. */
  let plain: Server[] = [];
  /** Small limits, counted in the shared Redis. */
  let limited: Server[] = [];

  /** A fresh organization, project (API on), source and key, made by the code the commands run (their start-ups are seconds each on a busy machine). */
  function newProject() {
    return withAdmin(env, undefined, async (admin) => {
      const org = orgJson(await admin.createOrg(`Org ${tag()}`));
      const project = projectJson(await admin.createProject({ name: 'Web', orgId: org.id, apiEnabled: true }));
      const source = sourceJson(await admin.createSource({ projectId: project.id, name: 'Backend' }));
      const key = await admin.createKey(source.id);
      return { org, project, source, key };
    });
  }

  /** How many times each insert_id of a source is stored, from the database itself. */
  async function storedCounts(sourceId: string): Promise<Map<string, number>> {
    const { rows } = await direct.query<{ insert_id: string; n: number }>(
      'SELECT insert_id, count(*)::int AS n FROM events WHERE source_id = $1 GROUP BY insert_id',
      [sourceId],
    );
    return new Map(rows.map((r) => [r.insert_id, r.n]));
  }

  beforeAll(async () => {
    await requireRedis(TEST_REDIS_URL);
    db = await createTestDatabase();
    direct = new pg.Client({ connectionString: db.url });
    direct.on('error', () => {});
    await direct.connect();
    env = { INLET_DATABASE_URL: db.url, INLET_REDIS_URL: TEST_REDIS_URL };
    // Opening the store migrates the new database, so the servers start on a finished schema.
    await withAdmin(env, undefined, (admin) => admin.createOrg('Warm-up'));
    const off = { INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0' };
    // Waits on Redis as long as a loaded suite may need: what is checked is counting together, and
    // a server whose count is late counts alone (each admitting its own 100).
    const small = { INLET_LIMIT_BURST: '100', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '20', INLET_REDIS_TIMEOUT_MS: '5000' };
    const started = await Promise.allSettled([
      startServer([], { ...env, ...off }),
      startServer([], { ...env, ...off }),
      startServer([], { ...env, ...small }),
      startServer([], { ...env, ...small }),
    ]);
    const ok = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    if (ok.length < started.length) {
      await Promise.all(ok.map(stopServer));
      throw (started.find((s) => s.status === 'rejected') as PromiseRejectedResult).reason;
    }
    plain = ok.slice(0, 2);
    limited = ok.slice(2, 4);
  });

  afterAll(async () => {
    const servers = [...plain, ...limited];
    await Promise.all(servers.map(stopServer));
    // Every server stopped cleanly (SIGTERM: exit 0); anything else is worth seeing.
    for (const s of servers) expect(s.proc.exitCode, s.stderr()).toBe(0);
    await direct?.end().catch(() => {});
    await db?.drop();
  });

  it('a key revoked or rolled through the command is refused on the very next request at each server', async () => {
    const p = await newProject();
    const item = (id: string) => [{ event: 'checked', distinct_id: 'u1', insert_id: id }];
    for (const [i, s] of plain.entries()) expect((await post(s, i, p.key.key, item(`before_${i}`))).status).toBe(202);

    expect(await cliJson(['key', 'revoke', p.key.id], env)).toEqual({ id: p.key.id, status: 'revoked' });
    for (const [i, s] of plain.entries()) {
      const a = await post(s, i, p.key.key, item(`after_${i}`));
      expect(a.status).toBe(401);
      expect(a.body.error.code).toBe('invalid_key');
    }

    // Rolling with no grace: the old key stops at both at once, the new one works at both.
    const second = await cliJson(['key', 'create', '--source', p.source.id], env);
    const rolled = await cliJson(['key', 'roll', second.id, '--grace', 'now'], env);
    expect(rolled.replaces).toBe(second.id);
    for (const [i, s] of plain.entries()) {
      const old = await post(s, i, second.key, item(`old_${i}`));
      expect(old.status).toBe(401);
      expect(old.body.error.code).toBe('invalid_key');
      expect((await post(s, i, rolled.key, item(`new_${i}`))).status).toBe(202);
    }

    // Deleting the project ends its keys at both servers on the next request too.
    await cliJson(['project', 'delete', p.project.id], env);
    for (const [i, s] of plain.entries()) {
      const a = await post(s, i, rolled.key, item(`deleted_${i}`));
      expect(a.status).toBe(401);
      expect(a.body.error.code).toBe('invalid_key');
    }
    const stored = await storedCounts(p.source.id);
    expect([...stored.keys()].sort()).toEqual(['before_0', 'before_1', 'new_0', 'new_1']);
  });

  it('the same insert_ids sent to both servers at the same moment are stored once; the repeats are answered as duplicates', async () => {
    const p = await newProject();
    const perServer = 10;
    const allIds = new Set<string>();

    // Identical batches: one request stores every item, every other one lists them all as duplicates.
    for (let round = 0; round < 3; round++) {
      const ids = Array.from({ length: 10 }, (_, i) => `same_${round}_${i}`);
      ids.forEach((id) => allIds.add(id));
      const items = ids.map((id) => ({ event: 'paid', distinct_id: `buyer_${round}`, insert_id: id }));
      const answers = await Promise.all(
        Array.from({ length: perServer * 2 }, (_, r) => post(plain[r % 2]!, r % 2, p.key.key, items)),
      );
      for (const a of answers) {
        expect(a.status).toBe(202);
        expect(a.body.accepted).toBe(10);
      }
      const fresh = answers.filter((a) => a.body.duplicates.length === 0);
      expect(fresh).toHaveLength(1);
      for (const a of answers) if (a !== fresh[0]) expect(a.body.duplicates).toEqual([...ids.keys()]);
    }

    // Overlapping batches in different orders: across all answers, each insert_id is new exactly once.
    for (let round = 0; round < 3; round++) {
      const ids = Array.from({ length: 20 }, (_, i) => `mix_${round}_${i}`);
      ids.forEach((id) => allIds.add(id));
      const batches = [ids.slice(0, 10), ids.slice(5, 15), [...ids.slice(10, 20), ...ids.slice(0, 5)].reverse()];
      const answers = await Promise.all(
        Array.from({ length: perServer * 2 }, (_, r) => {
          const batch = batches[r % 3]!;
          return post(plain[r % 2]!, r % 2, p.key.key, batch.map((id) => ({ event: 'paid', distinct_id: 'buyer', insert_id: id })));
        }),
      );
      let fresh = 0;
      for (const a of answers) {
        expect(a.status).toBe(202);
        fresh += a.body.accepted - a.body.duplicates.length;
      }
      expect(fresh).toBe(ids.length);
    }

    const stored = await storedCounts(p.source.id);
    expect(stored.size).toBe(allIds.size);
    for (const id of allIds) expect(stored.get(id), id).toBe(1);
    const { rows } = await direct.query<{ n: number }>('SELECT count(*)::int AS n FROM insert_ids WHERE source_id = $1', [p.source.id]);
    expect(rows[0]!.n).toBe(allIds.size);
    // What the command shows agrees with the database.
    const listed = await cliJson<{ insert_id: string }[]>(['events', 'list', '--source', p.source.id, '--limit', '1000'], env);
    expect(listed.map((e) => e.insert_id).sort()).toEqual([...allIds].sort());
    expect((await cliJson(['usage', '--project', p.project.id], env)).events).toBe(allIds.size);
  });

  it('new distinct_ids sent to both servers at once make one person each, and every event is on it', async () => {
    const p = await newProject();
    const users = Array.from({ length: 5 }, (_, i) => `new_user_${tag()}_${i}`);
    const requests = 20;
    const answers = await Promise.all(
      Array.from({ length: requests }, (_, r) => {
        // Each request names the users in another order, so the servers meet them in different orders.
        const order = users.map((_, i) => users[(i + r) % users.length]!);
        const items = order.flatMap((u) => [
          { event: 'signed_in', distinct_id: u, insert_id: `r${r}_${u}` },
          { type: 'identify', distinct_id: u, properties: { last_request: r } },
        ]);
        return post(plain[r % 2]!, r % 2, p.key.key, items);
      }),
    );
    for (const a of answers) {
      expect(a.status).toBe(202);
      expect(a.body.accepted).toBe(users.length * 2);
    }

    const { rows: persons } = await direct.query<{ n: number }>('SELECT count(*)::int AS n FROM persons WHERE project_id = $1', [p.project.id]);
    expect(persons[0]!.n).toBe(users.length);
    const listed = await cliJson<{ distinct_id: string; person_id: string }[]>(['events', 'list', '--source', p.source.id, '--limit', '1000'], env);
    expect(listed).toHaveLength(requests * users.length);
    const ids = new Set<string>();
    // One command each, side by side.
    const shown = await Promise.all(users.map((u) => cliJson(['person', 'show', '--project', p.project.id, '--distinct-id', u], env)));
    for (const [i, u] of users.entries()) {
      const person = shown[i];
      expect(person.id).toMatch(/^per_/);
      expect(person.distinct_ids).toEqual([u]);
      expect(Object.keys(person.traits)).toEqual(['last_request']);
      const events = listed.filter((e) => e.distinct_id === u);
      expect(events).toHaveLength(requests);
      for (const e of events) expect(e.person_id).toBe(person.id);
      ids.add(person.id);
    }
    expect(ids.size).toBe(users.length);
  });

  it('the burst limit is shared: requests split over both servers admit exactly the limit in total', async () => {
    const p = await newProject();
    // 16 requests of 10 items against a burst of 100 items per 10 s: exactly 10
    // fit, wherever they land. Counted per server, each would admit all 8 of its own.
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, r) =>
        post(limited[r % 2]!, r % 2, p.key.key, Array.from({ length: 10 }, (_, i) => ({ event: 'e', distinct_id: 'u', insert_id: `b${r}_${i}` }))),
      ),
    );
    const admitted = answers.filter((a) => a.status === 202);
    const refused = answers.filter((a) => a.status === 429);
    expect(admitted.length + refused.length).toBe(answers.length);
    // A server that counted alone says so on stderr.
    expect(admitted.reduce((n, a) => n + a.body.accepted, 0), limited.map((s) => s.stderr()).join('\n')).toBe(100);
    expect(refused).toHaveLength(6);
    for (const a of refused) {
      expect(a.body.error.code).toBe('rate_limited');
      expect(a.headers.get('retry-after')).toBe('10');
    }
    // The window is full at both servers now.
    for (const [i, s] of limited.entries()) expect((await post(s, i, p.key.key, [{ event: 'e', distinct_id: 'u' }])).status).toBe(429);
    console.log(
      `multi-server burst: ${admitted.length} requests admitted (${admitted.filter((a) => a.server === 0).length} at server 0, ` +
        `${admitted.filter((a) => a.server === 1).length} at server 1), ${refused.length} refused with 429`,
    );
    expect((await storedCounts(p.source.id)).size).toBe(100);
    expect((await cliJson(['usage', '--project', p.project.id], env)).events).toBe(100);
  });

  it('the per-key request limit is shared: at most 20 requests a second get through over both servers together', async () => {
    const p = await newProject();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, r) => post(limited[r % 2]!, r % 2, p.key.key, [{ event: 'e', distinct_id: 'u', insert_id: `k${r}` }])),
    );
    const statuses = answers.map((a) => a.status);
    const admitted = statuses.filter((s) => s === 202).length;
    const refused = statuses.filter((s) => s === 429).length;
    expect(admitted + refused).toBe(40);
    // Each server gets 20 of the 40: counting apart, neither would ever go past
    // 20 in a second, and none would be refused. Counted together, the 40 sent
    // at once go past 20 (a run slow enough to spread them over more than two
    // seconds would admit them all: that is a failure here).
    expect(admitted).toBeGreaterThanOrEqual(20);
    expect(refused).toBeGreaterThan(0);
    for (const a of answers) if (a.status === 429) expect(a.headers.get('retry-after')).toBe('10');
  });

  it('the meter equals the number of distinct stored track events, exactly, under mixed concurrent load on both servers', async () => {
    const p = await newProject();
    const sentTrackIds = new Set<string>();
    let trackWithoutId = 0;
    let statuses: number[] = [];
    const client = async (c: number) => {
      for (let b = 0; b < 12; b++) {
        const items: unknown[] = [];
        for (let i = 0; i < 8; i++) {
          // Drawn from a small shared pool, so that the same insert_id often arrives at both servers at once.
          const id = `m_${(c * 7 + b * 13 + i * 29) % 150}`;
          sentTrackIds.add(id);
          items.push({ event: 'viewed', distinct_id: `u${i}`, insert_id: id });
        }
        items.push({ event: 'no_id', distinct_id: 'u0' });
        trackWithoutId++;
        items.push({ type: 'identify', distinct_id: `u${b}`, insert_id: `ident_${c}_${b}`, properties: { b } });
        items.push({ event: 'viewed', distinct_id: 'undefined', insert_id: `bad_${c}_${b}` }); // invalid: refused, never metered
        items.push({ event: 'crawled', distinct_id: 'u1', properties: { $user_agent: 'Googlebot/2.1 (+http://www.google.com/bot.html)' } });
        const a = await post(plain[c % 2]!, c % 2, p.key.key, items);
        statuses.push(a.status);
        if (a.status === 202) {
          expect(a.body.errors).toHaveLength(1);
          expect(a.body.dropped).toEqual([{ index: 11, reason: 'bot_filtered' }]);
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, (_, c) => client(c)));
    expect(statuses.every((s) => s === 202)).toBe(true);
    statuses = [];

    const { rows } = await direct.query<{ n: number; ids: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT insert_id)::int AS ids FROM events WHERE project_id = $1',
      [p.project.id],
    );
    const expected = sentTrackIds.size + trackWithoutId;
    const usage = await cliJson(['usage', '--project', p.project.id], env);
    console.log(`multi-server meter: ${usage.events} metered, ${rows[0]!.n} track events stored, ${expected} expected`);
    expect(rows[0]!.n).toBe(expected);
    expect(rows[0]!.ids).toBe(sentTrackIds.size);
    expect(usage.events).toBe(expected);
  });
});
