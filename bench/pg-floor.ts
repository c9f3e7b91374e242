/**
 * What PostgreSQL itself allows the tenants workload on this machine, with no
 * Inlet code: plain SQL writing the rows of the big-batch pool for 64
 * projects (one source each, 500 rows per transaction, BENCH_PG_WRITERS
 * connections), over a ladder of schemas, each in a database of its own.
 * Schemas run in turn, round after round, so each is compared with the
 * baseline of its own round (the machine's speed drifts within minutes).
 *
 *   baseline    events with one unique key on (source_id, insert_id), as pg-baseline.ts
 *   floor       + events findable by source and time (one index), and one person per
 *               distinct_id: each transaction first looks its distinct_ids up (a probe
 *               each), then adds the persons not seen before in the same statement as
 *               the events. The least a store that keeps Inlet's promises writes.
 *   +project    + an index on (project_id, timestamp), as Inlet's events have
 *   +insert_ids idempotency in a table of its own (events are partitioned by day in
 *               Inlet, and a unique key there would have to hold the timestamp)
 *   +links      persons by id, and a link table from distinct_id to person, with an
 *               index by person for merges, as Inlet's schema has
 *   inlet       all three: Inlet's structures, written without Inlet's code
 *
 * Run after `npm run bench` has built it:
 *   node dist/bench/bench/pg-floor.js --url postgres://postgres@127.0.0.1:5432/postgres [--seconds 10] [--rounds 2]
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type ScratchDatabase, createScratchDatabase } from './pg-database.js';
import { postgresCpuSeconds } from './proc-stats.js';
import { type BaselineRow, args, baselineRows } from './rows.js';

interface Schema {
  name: string;
  /** An index on (project_id, timestamp) besides the one on (source_id, timestamp). */
  projectIndex: boolean;
  /** Idempotency in insert_ids instead of a unique key on events. */
  insertIds: boolean;
  /** Persons by id plus person_links, instead of persons keyed by distinct_id. */
  links: boolean;
}

const BASELINE = 'baseline';
const SCHEMAS: Schema[] = [
  { name: BASELINE, projectIndex: false, insertIds: false, links: false },
  { name: 'floor', projectIndex: false, insertIds: false, links: false },
  { name: '+project', projectIndex: true, insertIds: false, links: false },
  { name: '+insert_ids', projectIndex: false, insertIds: true, links: false },
  { name: '+links', projectIndex: false, insertIds: false, links: true },
  { name: 'inlet', projectIndex: true, insertIds: true, links: true },
];

const a = args(process.argv.slice(2));
const baseUrl = a.get('url') ?? process.env.INLET_DATABASE_URL;
if (baseUrl === undefined) throw new Error('pg-floor: give --url or INLET_DATABASE_URL (a PostgreSQL the bench may create databases on).');
const seconds = Number(a.get('seconds') ?? 10);
const rounds = Number(a.get('rounds') ?? 2);
const writers = Number(a.get('writers') ?? process.env.BENCH_PG_WRITERS ?? 4);
const TENANTS = 64;
const PER_TX = 500;

const { rows } = baselineRows({ name: 'big', prefix: 'b', seed: 1, bodies: 400, itemsPerBody: 500, gzip: false, now: Date.now() });

function ddl(s: Schema): string {
  const out = [
    `CREATE TABLE events (
      id uuid NOT NULL, project_id text NOT NULL, source_id text NOT NULL, event text NOT NULL,
      distinct_id text, person_id text NOT NULL, "timestamp" bigint NOT NULL, received_at bigint NOT NULL,
      insert_id text NOT NULL, properties jsonb NOT NULL${s.insertIds ? '' : ', UNIQUE (source_id, insert_id)'})`,
  ];
  if (s.name === BASELINE) return out.join(';');
  out.push('CREATE INDEX events_source_time ON events (source_id, "timestamp")');
  if (s.projectIndex) out.push('CREATE INDEX events_project_time ON events (project_id, "timestamp")');
  if (s.insertIds) out.push('CREATE TABLE insert_ids (source_id text NOT NULL, insert_id text NOT NULL, event_id uuid NOT NULL, PRIMARY KEY (source_id, insert_id))');
  if (s.links) {
    out.push(`CREATE TABLE persons (project_id text NOT NULL, id text NOT NULL, created_at bigint NOT NULL, PRIMARY KEY (project_id, id))`);
    out.push(`CREATE TABLE person_links (project_id text NOT NULL, distinct_id text NOT NULL, person_id text NOT NULL, PRIMARY KEY (project_id, distinct_id))`);
    out.push('CREATE INDEX person_links_person ON person_links (project_id, person_id)');
  } else {
    out.push(`CREATE TABLE persons (project_id text NOT NULL, distinct_id text NOT NULL, person_id text NOT NULL, created_at bigint NOT NULL, PRIMARY KEY (project_id, distinct_id))`);
  }
  return out.join(';');
}

// $1 project, $2 source, $3 now, $4.. the rows; $11 the batch's distinct_ids, $12 the new persons' ids.
const ROWS = `unnest($4::uuid[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[], $10::text[])
  AS r(id, event, distinct_id, person_id, ts, insert_id, properties)`;
const COLUMNS = 'id, project_id, source_id, event, distinct_id, person_id, "timestamp", received_at, insert_id, properties';
const VALUES = 'r.id, $1, $2, r.event, r.distinct_id, r.person_id, r.ts, $3, r.insert_id, r.properties::jsonb';

function writeSql(s: Schema): string {
  const parts: string[] = [];
  if (s.name !== BASELINE) {
    parts.push(
      s.links
        ? `links AS (INSERT INTO person_links SELECT $1, d, p FROM unnest($11::text[], $12::text[]) AS x(d, p) ON CONFLICT DO NOTHING RETURNING person_id),
           made AS (INSERT INTO persons SELECT $1, person_id, $3 FROM links)`
        : `made AS (INSERT INTO persons SELECT $1, d, p, $3 FROM unnest($11::text[], $12::text[]) AS x(d, p) ON CONFLICT DO NOTHING)`,
    );
  }
  if (s.insertIds) {
    parts.push(`claimed AS (INSERT INTO insert_ids SELECT $2, r.insert_id, r.id FROM ${ROWS} ON CONFLICT DO NOTHING RETURNING insert_id)`);
    return `WITH ${parts.join(', ')} INSERT INTO events (${COLUMNS}) SELECT ${VALUES} FROM ${ROWS} JOIN claimed c ON c.insert_id = r.insert_id`;
  }
  const insert = `INSERT INTO events (${COLUMNS}) SELECT ${VALUES} FROM ${ROWS} ON CONFLICT (source_id, insert_id) DO NOTHING`;
  return parts.length === 0 ? insert : `WITH ${parts.join(', ')} ${insert}`;
}

function probeSql(s: Schema): string {
  const table = s.links ? 'person_links' : 'persons';
  return `SELECT x.d FROM unnest($2::text[]) AS x(d)
    CROSS JOIN LATERAL (SELECT person_id FROM ${table} WHERE project_id = $1 AND distinct_id = x.d LIMIT 1) p`;
}

interface Figures {
  rowsPerSec: number;
  pgUsPerRow: number;
  writerUsPerRow: number;
}

async function measure(s: Schema): Promise<Figures> {
  const db: ScratchDatabase = await createScratchDatabase(baseUrl!, 'floor');
  const pool = new pg.Pool({ connectionString: db.url, max: writers });
  // Dropping the database ends any connection still open; that is not this run's failure.
  pool.on('error', () => {});
  const clients: pg.PoolClient[] = [];
  try {
    await pool.query(ddl(s));
    for (let i = 0; i < writers; i++) clients.push(await pool.connect());
    const write = { name: 'write', text: writeSql(s) };
    const probe = { name: 'probe', text: probeSql(s) };
    let n = 0;
    let turn = 0;
    let written = 0;
    const cpu0 = process.cpuUsage();
    const db0 = postgresCpuSeconds();
    const start = performance.now();
    const end = start + seconds * 1000;
    const writer = async (c: pg.PoolClient): Promise<void> => {
      while (performance.now() < end) {
        const t = turn++ % TENANTS;
        // Each tenant's insert_ids, and each pass over the pool's, are new: a repeat stores nothing.
        const tag = `${t}.${Math.floor(n / rows.length)}.`;
        const batch: BaselineRow[] = Array.from({ length: PER_TX }, () => rows[n++ % rows.length]!);
        const project = `prj_floor${t}`;
        const values: unknown[] = [
          project, `src_floor${t}`, Date.now(), batch.map(() => randomUUID()), batch.map((r) => r.event), batch.map((r) => r.distinctId),
          batch.map((r) => r.personId), batch.map((r) => r.timestamp), batch.map((r) => tag + r.insertId), batch.map((r) => r.properties),
        ];
        if (s.name === BASELINE) {
          await c.query({ ...write, values });
        } else {
          const ids = [...new Set(batch.map((r) => r.distinctId))];
          await c.query('BEGIN');
          const known = new Set((await c.query<{ d: string }>({ ...probe, values: [project, ids] })).rows.map((r) => r.d));
          const unseen = ids.filter((d) => !known.has(d));
          await c.query({ ...write, values: [...values, unseen, unseen.map(() => `per_${randomUUID()}`)] });
          await c.query('COMMIT');
        }
        written += PER_TX;
      }
    };
    await Promise.all(clients.map(writer));
    const secs = (performance.now() - start) / 1000;
    const dbCpu = postgresCpuSeconds() - db0;
    const cpu = process.cpuUsage(cpu0);
    return { rowsPerSec: written / secs, pgUsPerRow: (dbCpu / written) * 1e6, writerUsPerRow: (cpu.user + cpu.system) / written };
  } finally {
    for (const c of clients) c.release();
    await pool.end();
    await db.drop();
  }
}

const results = new Map<string, { ratio: number[]; pg: number[]; rate: number[] }>(SCHEMAS.map((s) => [s.name, { ratio: [], pg: [], rate: [] }]));
process.stderr.write(`pg-floor: ${SCHEMAS.length} schemas, ${rounds} rounds of ${seconds} s, ${writers} writers, ${TENANTS} projects\n`);
for (let round = 1; round <= rounds; round++) {
  let base = 0;
  for (const s of SCHEMAS) {
    const f = await measure(s);
    if (s.name === BASELINE) base = f.rowsPerSec;
    const r = results.get(s.name)!;
    r.ratio.push(f.rowsPerSec / base);
    r.pg.push(f.pgUsPerRow);
    r.rate.push(f.rowsPerSec);
    process.stderr.write(`  round ${round} ${s.name}: ${Math.round(f.rowsPerSec)} rows/s, PostgreSQL ${f.pgUsPerRow.toFixed(1)} µs/row, writers ${f.writerUsPerRow.toFixed(1)} µs/row\n`);
  }
}
const span = (xs: number[], digits: number): string => {
  const lo = Math.min(...xs).toFixed(digits);
  const hi = Math.max(...xs).toFixed(digits);
  return lo === hi ? lo : `${lo}–${hi}`;
};
process.stdout.write(`${'schema'.padEnd(12)} ${'rows/s'.padStart(15)}  ${'PG µs/row'.padStart(10)}  ${'x baseline'.padStart(10)}\n`);
for (const [name, r] of results) {
  process.stdout.write(`${name.padEnd(12)} ${span(r.rate.map(Math.round), 0).padStart(15)}  ${span(r.pg, 1).padStart(10)}  ${span(r.ratio, 2).padStart(10)}\n`);
}
