import { afterAll, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { openSqlite } from '../../src/stores/sqlite/open.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { makeUser, PASSWORD } from '../console/helpers.js';
import { tempDir } from '../helpers/fixture.js';
import { startServer, stopServer } from '../helpers/process.js';

const tmp = tempDir('inlet-page-reads-');
afterAll(() => tmp.remove());

const DAY_MS = 86_400_000;
/**
 * Sources of the project whose counts fill the chart's 30 days, a row per
 * source and minute (the project's one and made-up others): 432,000 rows, as a project with ten busy sources holds.
 * Read on the server's one connection, the chart's sum of them held the main
 * thread for a good part of a second per load.
 */
const SOURCES = 10;
const ROWS = SOURCES * 30 * 1440;
const LOADS_PER_TAB = 3;

/** A month of outcome counts of the project, written straight into the file as the commits would have. */
function fillCounts(dir: string, projectId: string, sourceId: string, from: number): void {
  const db = openSqlite(dir);
  try {
    db.prepare(
      `WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < @n - 1)
       INSERT INTO outcome_counts (source_id, minute, outcome, code, project_id, count)
       SELECT CASE WHEN i % @sources = 0 THEN @s ELSE 'src_fill_' || (i % @sources) END,
         @from + i / @sources * 60000, 'accepted', '', @p, 1 FROM c`,
    ).run({ n: ROWS, sources: SOURCES, p: projectId, s: sourceId, from });
  } finally {
    db.close();
  }
}

it("the project page's chart read the outcome counts on the SQLite connection that writes, and stalled ingestion and /healthz: its read runs on the page-read thread", async () => {
  const store = SqliteStore.open(tmp.dir);
  const admin = createAdmin(store, Date.now);
  const org = await admin.createOrg('Acme');
  const project = await admin.createProject({ name: 'Web', orgId: org.id, apiEnabled: true });
  const source = await admin.createSource({ projectId: project.id, name: 'Billing' });
  const key = await admin.createKey(source.id);
  await makeUser(store, Date.now, 'root@inlet.test', { admin: true });
  await store.close();
  // Every minute of the chart's 30 days, today's included.
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  fillCounts(tmp.dir, project.id, source.id, today - 29 * DAY_MS);

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
    /** The page loads sent and not yet answered. */
    const loading = new Set<number>();
    let loads = 0;
    const tab = async () => {
      for (let i = 0; i < LOADS_PER_TAB; i++) {
        const load = loads++;
        loading.add(load);
        const res = await fetch(`${server.url}/console/projects/${project.id}`, { headers: { cookie } }).finally(() => loading.delete(load));
        const body = await res.text();
        expect(body).toContain('<svg viewBox');
        // Drawn from the counts: the fill's, and those of the batches written meanwhile (exact, with their commits).
        const total = Number(/([\d,]+) items? in all/.exec(body)![1]!.replaceAll(',', ''));
        expect(total).toBeGreaterThanOrEqual(ROWS);
        expect(total).toBeLessThanOrEqual(ROWS + 10 * (batches.answered + 1));
        pages.push(res.status);
      }
    };
    // Each request counts as answered during a load when a load that was under way as it was
    // sent is still unanswered when its answer comes: it got through while a chart was read.
    const healthz = { answered: 0, duringLoad: 0 };
    const batches = { answered: 0, duringLoad: 0, statuses: new Set<number>() };
    const duringLoad = async (send: () => Promise<void>): Promise<boolean> => {
      const under = [...loading];
      await send();
      return under.some((l) => loading.has(l));
    };
    const whileTabs = async (ask: () => Promise<void>) => {
      while (!tabsDone) await ask();
    };
    let n = 0;
    const sendBatch = async () => {
      const during = await duringLoad(async () => {
        const res = await fetch(`${server.url}/api/v1/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ items: Array.from({ length: 10 }, (_, i) => ({ event: 'Signed up', distinct_id: `u${i}`, insert_id: `b${n}_${i}` })) }),
        });
        n++;
        await res.arrayBuffer();
        batches.statuses.add(res.status);
      });
      batches.answered++;
      if (during) batches.duringLoad++;
    };
    const askHealth = async () => {
      let ok = false;
      const during = await duringLoad(async () => {
        const res = await fetch(`${server.url}/healthz`);
        await res.arrayBuffer();
        ok = res.status === 200;
      });
      if (ok) healthz.answered++;
      if (ok && during) healthz.duringLoad++;
    };

    const tabs = Promise.all([tab(), tab()]).finally(() => (tabsDone = true));
    await Promise.all([tabs, whileTabs(sendBatch), whileTabs(askHealth)]);
    console.log(
      `page reads: ${pages.length} page loads; meanwhile ${healthz.answered} /healthz and ${batches.answered} batches answered, ` +
        `${healthz.duringLoad} and ${batches.duringLoad} of them while a load that was under way when they were sent still was`,
    );
    expect(pages).toEqual(Array(2 * LOADS_PER_TAB).fill(200));
    expect([...batches.statuses]).toEqual([202]);
    // Read on the main thread, the counts let a request through only between
    // two loads: 3 or 4 /healthz and 1 or 2 batches in all for 6 loads, none
    // of them while a load was under way. Read on the page-read thread,
    // requests are answered all along: several during each load.
    expect(healthz.duringLoad).toBeGreaterThanOrEqual(4 * pages.length);
    expect(batches.duringLoad).toBeGreaterThanOrEqual(pages.length);
  } finally {
    await stopServer(server);
  }
});
