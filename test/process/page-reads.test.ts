import { afterAll, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { openSqlite } from '../../src/stores/sqlite/open.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { makeUser, PASSWORD } from '../console/helpers.js';
import { tempDir } from '../helpers/fixture.js';
import { startServer, stopServer } from '../helpers/process.js';

const tmp = tempDir('inlet-page-reads-');
afterAll(() => tmp.remove());

/**
 * Enough events that the chart's count took many times a /healthz round
 * trip when it counted events: spread over a week, as an import fills a
 * store, each merge of the minute index holds about one event per minute.
 * The chart now reads the outcome counts (a row per minute here), and must
 * still leave ingestion alone.
 */
const EVENTS = 300_000;
const LOADS_PER_TAB = 3;

/** Events of the project's source written straight into the file, indexed by minute as commits would have. */
function fillEvents(dir: string, projectId: string, sourceId: string, now: number): void {
  const db = openSqlite(dir);
  try {
    db.transaction(() => {
      db.prepare(
        `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < @n)
         INSERT INTO events (id, project_id, source_id, event, distinct_id, person_id, timestamp, received_at, properties)
         SELECT lower(hex(randomblob(16))), @p, @s, 'Page viewed', 'user_' || (i % 1000), 'per_' || (i % 1000),
           @now - abs(random()) % 604800000, @now, '{}' FROM c`,
      ).run({ n: EVENTS, p: projectId, s: sourceId, now });
      db.prepare(
        `INSERT INTO event_minute_runs (source_id, minute, last_seq, seqs)
         SELECT source_id, timestamp / 60000, max(seq), json_group_array(seq) FROM events GROUP BY source_id, timestamp / 60000, seq / 2048`,
      ).run();
      db.prepare('UPDATE event_minutes_state SET through = (SELECT max(seq) FROM events)').run();
      // The outcome counts the commits would have made, as if each event arrived at its time: what the chart reads now.
      db.prepare(
        `INSERT INTO outcome_counts (source_id, minute, outcome, code, project_id, count)
         SELECT source_id, timestamp / 60000 * 60000, 'accepted', '', project_id, count(*) FROM events GROUP BY source_id, timestamp / 60000`,
      ).run();
    })();
  } finally {
    db.close();
  }
}

it("the project page's chart blocked ingestion on SQLite while it counted events; it reads the outcome counts now, and batches go on meanwhile", async () => {
  const store = SqliteStore.open(tmp.dir);
  const admin = createAdmin(store, Date.now);
  const org = await admin.createOrg('Acme');
  const project = await admin.createProject({ name: 'Web', orgId: org.id, apiEnabled: true });
  const source = await admin.createSource({ projectId: project.id, name: 'Billing' });
  const key = await admin.createKey(source.id);
  await makeUser(store, Date.now, 'root@inlet.test', { admin: true });
  await store.close();
  fillEvents(tmp.dir, project.id, source.id, Date.now());

  // Batches go one after another as fast as they are answered: on a quick machine past the per-key
  // requests per second, which is not what this test is about.
  const server = await startServer([], { INLET_DATA_DIR: tmp.dir, INLET_DATABASE_URL: '', INLET_REDIS_URL: '', INLET_LIMIT_KEY_RPS: '0', INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0' });
  try {
    const login = await fetch(`${server.url}/console/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: 'root@inlet.test', password: PASSWORD }).toString(),
      redirect: 'manual',
    });
    expect(login.status).toBe(303);
    const cookie = String(login.headers.get('set-cookie')).split(';')[0]!;

    // Two tabs reload the project page; meanwhile batches are sent and
    // /healthz is asked, one request after another each, until the tabs are done.
    let tabsDone = false;
    const pages: number[] = [];
    const tab = async () => {
      for (let i = 0; i < LOADS_PER_TAB; i++) {
        const res = await fetch(`${server.url}/console/projects/${project.id}`, { headers: { cookie } });
        const body = await res.text();
        expect(body).toContain('<svg viewBox');
        // Drawn from the counts: the fill's, and those of the batches written meanwhile (exact, with their commits).
        const total = Number(/([\d,]+) in all/.exec(body)![1]!.replaceAll(',', ''));
        expect(total).toBeGreaterThanOrEqual(EVENTS);
        expect(total).toBeLessThanOrEqual(EVENTS + 10 * (batches.answered + 1));
        pages.push(res.status);
      }
    };
    const healthz = { answered: 0 };
    const batches = { answered: 0, statuses: new Set<number>() };
    const whileTabs = async (ask: () => Promise<void>) => {
      while (!tabsDone) await ask();
    };
    let n = 0;
    const sendBatch = async () => {
      const res = await fetch(`${server.url}/api/v1/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ items: Array.from({ length: 10 }, (_, i) => ({ event: 'Signed up', distinct_id: `u${i}`, insert_id: `b${n}_${i}` })) }),
      });
      n++;
      await res.arrayBuffer();
      batches.statuses.add(res.status);
      batches.answered++;
    };
    const askHealth = async () => {
      const res = await fetch(`${server.url}/healthz`);
      await res.arrayBuffer();
      if (res.status === 200) healthz.answered++;
    };
    const tabs = Promise.all([tab(), tab()]).finally(() => (tabsDone = true));
    await Promise.all([tabs, whileTabs(sendBatch), whileTabs(askHealth)]);

    console.log(`page reads: ${pages.length} page loads; meanwhile ${healthz.answered} /healthz and ${batches.answered} batches answered`);
    expect(pages).toEqual(Array(2 * LOADS_PER_TAB).fill(200));
    expect([...batches.statuses]).toEqual([202]);
    // The count of events on the main thread let at most one /healthz through
    // between two loads (2 or 3 in all for 6 loads), each load seconds long;
    // read off it, about 30 a load. A read of the counts is a few
    // milliseconds, so the loads are over before many requests fit between
    // them: what is held here is that the chart no longer reads the events.
  } finally {
    await stopServer(server);
  }
});
