/**
 * Batches beside console page loads on the embedded store: batch latency
 * with two tabs reloading the project page over without, in the same run,
 * and A/B against another checkout (docs/design.md, "Page reads on a thread").
 *
 *   npm run build && npx tsc -p bench/tsconfig.json && node dist/bench/bench/page-reads.js
 *
 * PAGE_READS_EVENTS (2,900,000) events are written straight into a fresh
 * store, over the last week as an import would; BENCH_COMPARE names a built
 * checkout to alternate with this one on the same store; PAGE_READS_ROUNDS
 * (4) and PAGE_READS_PHASE_SECONDS (8). Each server: a warm-up, batches
 * alone, with the tabs, alone again. Not part of npm run bench.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccounts } from '../src/domain/accounts/accounts.js';
import { createAdmin } from '../src/domain/admin.js';
import { openSqlite } from '../src/stores/sqlite/open.js';
import { SqliteStore } from '../src/stores/sqlite/sqlite-store.js';
import { ROOT, startListening, stopProcess } from './processes.js';

const EVENTS = Number(process.env.PAGE_READS_EVENTS ?? 2_900_000);
const ROUNDS = Number(process.env.PAGE_READS_ROUNDS ?? 4);
const PHASE_MS = Number(process.env.PAGE_READS_PHASE_SECONDS ?? 8) * 1000;
const PASSWORD = 'page reads bench password';
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

interface Answer {
  status: number;
  cookie: string | undefined;
}

function ask(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const r = http.request(url, { method: opts.method ?? 'GET', headers: opts.headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, cookie: res.headers['set-cookie']?.[0]?.split(';')[0] }));
    });
    r.on('error', reject);
    r.end(opts.body);
  });
}

/** An org, project, source, key and admin account, then the events, indexed by minute as commits would have. */
async function fill(dir: string): Promise<{ projectId: string; key: string }> {
  const store = SqliteStore.open(dir);
  const admin = createAdmin(store, Date.now);
  const org = await admin.createOrg('Bench');
  const project = await admin.createProject({ name: 'Web', orgId: org.id, apiEnabled: true });
  const source = await admin.createSource({ projectId: project.id, name: 'Server' });
  const key = await admin.createKey(source.id);
  await createAccounts(store, Date.now).createUser({ email: 'bench@inlet.test', password: PASSWORD, admin: true, orgIds: [] });
  await store.close();
  const db = openSqlite(dir);
  const now = Date.now();
  const insert = db.prepare(
    `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < @n)
     INSERT INTO events (id, project_id, source_id, event, distinct_id, person_id, timestamp, received_at, properties)
     SELECT lower(hex(randomblob(16))), @p, @s, 'Page viewed', 'user_' || (i % 10000), 'per_' || (i % 10000),
       @now - abs(random()) % 604800000, @now, '{"plan":"team","$current_url":"https://example.com/pricing"}' FROM c`,
  );
  for (let done = 0; done < EVENTS; done += 100_000) {
    db.transaction(() => insert.run({ n: Math.min(100_000, EVENTS - done), p: project.id, s: source.id, now }))();
  }
  db.transaction(() => {
    db.prepare(
      `INSERT INTO event_minute_runs (source_id, minute, last_seq, seqs)
       SELECT source_id, timestamp / 60000, max(seq), json_group_array(seq) FROM events GROUP BY source_id, timestamp / 60000, seq / 2048`,
    ).run();
    db.prepare('UPDATE event_minutes_state SET through = (SELECT max(seq) FROM events)').run();
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { projectId: project.id, key: key.key };
}

const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** Batches of 100 items one after another for `ms`, with two tabs reloading the project page when `tabs`. */
async function phase(url: string, t: { key: string; projectId: string; cookie: string }, tabs: boolean, ms: number) {
  const end = performance.now() + ms;
  const batches: number[] = [];
  let loads = 0;
  let done = false;
  const send = async () => {
    while (performance.now() < end) {
      const items = Array.from({ length: 100 }, (_, i) => ({ event: 'Page viewed', distinct_id: `user_${i % 50}`, insert_id: randomUUID(), properties: { plan: 'team' } }));
      const start = performance.now();
      const r = await ask(`${url}/api/v1/batch`, { method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ items }) });
      if (r.status !== 202) throw new Error(`a batch was answered ${r.status}`);
      batches.push(performance.now() - start);
    }
    done = true;
  };
  const tab = async () => {
    while (!done) {
      const r = await ask(`${url}/console/projects/${t.projectId}`, { headers: { cookie: t.cookie } });
      if (r.status !== 200) throw new Error(`the project page was answered ${r.status}`);
      loads++;
    }
  };
  await Promise.all([send(), ...(tabs ? [tab(), tab()] : [])]);
  return { p50: p50(batches), batches: batches.length, loads };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'inlet-page-reads-'));
  try {
    process.stderr.write(`page reads: writing ${EVENTS} events\n`);
    const filled = await fill(dir);
    const sides = [ROOT, ...(process.env.BENCH_COMPARE ? [process.env.BENCH_COMPARE] : [])];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const side of sides) {
        const env = { ...process.env, INLET_DATA_DIR: dir, INLET_DATABASE_URL: '', INLET_REDIS_URL: '', INLET_LOG_LEVEL: 'warn', INLET_METRICS_PORT: '0', INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0' };
        const server = await startListening([join(side, 'bin/inlet'), 'serve', '--port', '0'], env, 120_000);
        try {
          const form = new URLSearchParams({ email: 'bench@inlet.test', password: PASSWORD }).toString();
          const login = await ask(`${server.url}/console/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
          const t = { ...filled, cookie: login.cookie ?? '' };
          await phase(server.url, t, false, 2000);
          const before = await phase(server.url, t, false, PHASE_MS);
          const tabs = await phase(server.url, t, true, PHASE_MS);
          const after = await phase(server.url, t, false, PHASE_MS);
          const alone = (before.p50 + after.p50) / 2;
          const f = (n: number) => n.toFixed(1);
          console.log(
            `round ${round} ${side}: batch p50 alone ${f(before.p50)}/${f(after.p50)} ms, with tabs ${f(tabs.p50)} ms (${tabs.batches} batches, ${tabs.loads} page loads): x${(tabs.p50 / alone).toFixed(2)}`,
          );
        } finally {
          await stopProcess(server.proc);
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
