import { type Compilable, type Kysely, sql } from 'kysely';
import {
  type EventCounts, type EventOutcomeRow, OTHER_EVENTS, type KeptSample, type Outcome, type OutcomeCount, type OutcomeQuery, type OutcomeRow, type OutcomeStore, type SampleBounds, type SampleQuery,
  type StoredSample, sampleBytes, withheld,
} from '../port-outcomes.js';
import type { SqlEngine } from '../port.js';
import { SqlStorePart, type WriteTurn } from './engine.js';
import type { TunedReads } from './defaults.js';
import { isSet } from './rows.js';
import type { Database } from './schema.js';

/** Rows a statement inserts at most: well under either engine's limit on bound values. */
const ROWS_PER_INSERT = 200;

/** Counts and samples of what became of every item (port-outcomes.ts), on either SQL engine. */
export class SqlOutcomes extends SqlStorePart implements OutcomeStore {
  constructor(
    engine: SqlEngine,
    write: WriteTurn,
    /** Where the reads of counts run: a month of a project's minutes is many rows (on SQLite, off the connection that writes). */
    private readonly pageReads: Pick<TunedReads, 'pageRows'>,
  ) {
    super(engine, write);
  }

  addOutcomes(counts: OutcomeCount[], samples: KeptSample[], bounds: SampleBounds, events?: EventCounts): Promise<void> {
    return this.write(() => this.db.transaction().execute(async (trx) => {
      await addCounts(trx, counts);
      if (events !== undefined && events.rows.length > 0) await addEventCounts(trx, events);
      await addSamples(trx, samples, bounds);
    }));
  }

  async eventOutcomeCounts(q: { sourceId?: string; projectId?: string; since: number; until: number }): Promise<EventOutcomeRow[]> {
    const rows = await this.scan(this.db.selectFrom('outcome_events')
      .select(['source_id', 'outcome', 'code', 'event', (eb) => eb.fn.sum<number>('count').as('count')])
      .$if(q.sourceId !== undefined, (b) => b.where('source_id', '=', q.sourceId!))
      .$if(q.projectId !== undefined, (b) => b.where('project_id', '=', q.projectId!))
      .where('hour', '>=', q.since).where('hour', '<', q.until)
      .groupBy(['source_id', 'outcome', 'code', 'event'])
      .orderBy(this.engine.dialect.bytewise('source_id')).orderBy('outcome').orderBy(this.engine.dialect.bytewise('code')).orderBy(this.engine.dialect.bytewise('event')));
    return rows.map((r) => ({ sourceId: r.source_id, outcome: r.outcome as 'refused' | 'warned', code: r.code, event: r.event, count: Number(r.count) }));
  }

  async outcomeCounts(q: OutcomeQuery): Promise<OutcomeRow[]> {
    // The bucket is worked out in a subquery: PostgreSQL would not group by an expression whose parameter is bound twice.
    const minutes = this.db.selectFrom('outcome_counts')
      .select([sql<number>`minute - (minute % ${q.bucketMs})`.as('at'), 'source_id', 'outcome', 'code', 'count'])
      .$if(q.sourceId !== undefined, (b) => b.where('source_id', '=', q.sourceId!))
      .$if(q.projectId !== undefined, (b) => b.where('project_id', '=', q.projectId!))
      .where('minute', '>=', q.since).where('minute', '<', q.until);
    const rows = await this.scan(this.db.selectFrom(minutes.as('m'))
      .select(['at', 'source_id', 'outcome', 'code', (eb) => eb.fn.sum<number>('count').as('count')])
      .groupBy(['at', 'source_id', 'outcome', 'code'])
      .orderBy('at').orderBy(this.engine.dialect.bytewise('source_id')).orderBy('outcome').orderBy(this.engine.dialect.bytewise('code')));
    return rows.map((r) => ({ at: Number(r.at), sourceId: r.source_id, outcome: r.outcome as Outcome, code: r.code, count: Number(r.count) }));
  }

  async samples(q: SampleQuery): Promise<StoredSample[]> {
    const rows = await this.db.selectFrom('item_samples').selectAll()
      .where('source_id', '=', q.sourceId)
      .$if(q.code !== undefined, (b) => b.where('code', '=', q.code!))
      .$if(q.since !== undefined, (b) => b.where('received_at', '>=', q.since!))
      .$if(q.beforeId !== undefined, (b) => b.where('id', '<', q.beforeId!))
      .orderBy('id', 'desc').limit(q.limit).execute();
    return rows.map((r) => ({
      id: r.id, projectId: r.project_id, sourceId: r.source_id, outcome: r.outcome as 'refused' | 'dropped', code: r.code,
      codes: JSON.parse(r.codes) as string[], errors: r.errors, item: r.item, cut: isSet(r.cut), receivedAt: r.received_at,
      requestId: r.request_id, index: r.item_index, distinctId: r.distinct_id, anonymousId: r.anonymous_id, previousId: r.previous_id,
    }));
  }

  async projectOutcomeTotals(projectIds: string[], since: number): Promise<Map<string, Map<Outcome, number>>> {
    const totals = new Map<string, Map<Outcome, number>>();
    if (projectIds.length === 0) return totals;
    const rows = await this.scan(this.db.selectFrom('outcome_counts')
      .select(['project_id', 'outcome', (eb) => eb.fn.sum<number>('count').as('count')])
      .where('project_id', 'in', projectIds).where('minute', '>=', since)
      .groupBy(['project_id', 'outcome']));
    for (const r of rows) {
      let m = totals.get(r.project_id);
      if (m === undefined) totals.set(r.project_id, (m = new Map()));
      m.set(r.outcome as Outcome, Number(r.count));
    }
    return totals;
  }

  /** A read of many minutes' counts, on the engine's page-read path (the chart, the source page, the projects list). */
  private scan<R>(query: Compilable<R>): Promise<R[]> {
    return this.pageReads.pageRows(query.compile());
  }

  async expireCounts(cutoffs: { projectId: string; before: number }[]): Promise<number> {
    return (await this.expire('outcome_counts', 'minute', cutoffs)) + (await this.expire('outcome_events', 'hour', cutoffs));
  }

  expireSamples(cutoffs: { projectId: string; before: number }[]): Promise<number> {
    return this.expire('item_samples', 'received_at', cutoffs);
  }

  /** Deletes each project's rows of `table` whose `time` is before its cutoff, a statement per project. */
  private async expire(table: 'outcome_counts' | 'outcome_events' | 'item_samples', time: 'minute' | 'hour' | 'received_at', cutoffs: { projectId: string; before: number }[]): Promise<number> {
    let deleted = 0;
    for (const c of cutoffs) {
      const r = await this.write(() => this.db.deleteFrom(table)
        .where('project_id', '=', c.projectId).where(sql.ref(time), '<', c.before).executeTakeFirst());
      deleted += Number(r.numDeletedRows);
    }
    return deleted;
  }
}

async function addCounts(trx: Kysely<Database>, counts: OutcomeCount[]): Promise<void> {
  // In one order on every server, so two servers adding to the same rows at once wait for each other rather than deadlock.
  const rows = counts.map((c) => ({ project_id: c.projectId, source_id: c.sourceId, minute: c.minute, outcome: c.outcome, code: c.code, count: c.count }))
    .sort((a, b) => cmp(a.source_id, b.source_id) || a.minute - b.minute || cmp(a.outcome, b.outcome) || cmp(a.code, b.code));
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    await trx.insertInto('outcome_counts').values(rows.slice(i, i + ROWS_PER_INSERT))
      .onConflict((oc) => oc.columns(['source_id', 'minute', 'outcome', 'code'])
        .doUpdateSet((eb) => ({ count: eb(eb.ref('outcome_counts.count'), '+', eb.ref('excluded.count')) })))
      .execute();
  }
}

/**
 * A plan's counts by event, each source's hour held to `perHour` distinct
 * events: an event the hour does not hold yet, once it holds that many, is
 * added to OTHER_EVENTS. The events an hour holds are read in the write's
 * transaction: on PostgreSQL, servers writing new events to the same hour at
 * the same moment each fill the room they saw, so an hour holds at most the
 * cap times the servers that wrote to it at once (SQLite has one writer).
 */
async function addEventCounts(trx: Kysely<Database>, events: EventCounts): Promise<void> {
  const held = new Map<string, Set<string>>();
  for (const r of events.rows) held.set(`${r.sourceId}\n${r.hour}`, new Set());
  for (const key of held.keys()) {
    const [sourceId, hour] = key.split('\n') as [string, string];
    const rows = await trx.selectFrom('outcome_events').select('event').distinct().where('source_id', '=', sourceId).where('hour', '=', Number(hour)).execute();
    for (const r of rows) if (r.event !== OTHER_EVENTS) held.get(key)!.add(r.event);
  }
  const summed = new Map<string, { project_id: string; source_id: string; hour: number; outcome: string; code: string; event: string; count: number }>();
  for (const r of events.rows) {
    const names = held.get(`${r.sourceId}\n${r.hour}`)!;
    let event = r.event;
    if (event !== OTHER_EVENTS && !names.has(event)) {
      if (names.size < events.perHour) names.add(event);
      else event = OTHER_EVENTS;
    }
    const key = `${r.sourceId}\n${r.hour}\n${r.outcome}\n${r.code}\n${event}`;
    const s = summed.get(key);
    if (s !== undefined) s.count += r.count;
    else summed.set(key, { project_id: r.projectId, source_id: r.sourceId, hour: r.hour, outcome: r.outcome, code: r.code, event, count: r.count });
  }
  // In one order on every server, so two servers adding to the same rows at once wait for each other rather than deadlock.
  const rows = [...summed.values()].sort((a, b) => cmp(a.source_id, b.source_id) || a.hour - b.hour || cmp(a.outcome, b.outcome) || cmp(a.code, b.code) || cmp(a.event, b.event));
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    await trx.insertInto('outcome_events').values(rows.slice(i, i + ROWS_PER_INSERT))
      .onConflict((oc) => oc.columns(['source_id', 'hour', 'outcome', 'code', 'event'])
        .doUpdateSet((eb) => ({ count: eb(eb.ref('outcome_events.count'), '+', eb.ref('excluded.count')) })))
      .execute();
  }
}

async function addSamples(trx: Kysely<Database>, given: KeptSample[], bounds: SampleBounds): Promise<void> {
  if (given.length === 0) return;
  const samples = await withholdSuppressed(trx, given);
  const rows = samples.map((s) => ({
    project_id: s.projectId, source_id: s.sourceId, outcome: s.outcome, code: s.code, codes: JSON.stringify(s.codes), errors: s.errors,
    item: s.item, cut: s.cut, bytes: sampleBytes(s), received_at: s.receivedAt, request_id: s.requestId, item_index: s.index,
    distinct_id: s.distinctId, anonymous_id: s.anonymousId, previous_id: s.previousId,
  }));
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await trx.insertInto('item_samples').values(rows.slice(i, i + ROWS_PER_INSERT)).execute();
  const codes = new Map<string, { sourceId: string; code: string }>();
  const projects = new Set<string>();
  for (const s of samples) {
    codes.set(`${s.sourceId}\n${s.code}`, { sourceId: s.sourceId, code: s.code });
    projects.add(s.projectId);
  }
  for (const { sourceId, code } of codes.values()) {
    const newest = (q: Kysely<Database>) => q.selectFrom('item_samples').select('id').where('source_id', '=', sourceId).where('code', '=', code);
    await trx.deleteFrom('item_samples').where('source_id', '=', sourceId).where('code', '=', code)
      .where('id', '<=', () => newest(trx).orderBy('id', 'desc').limit(1).offset(bounds.keepPerCode))
      .execute();
  }
  for (const projectId of projects) await trimProject(trx, projectId, bounds.projectBytes);
}

/**
 * The samples as they may be kept: one that names a suppressed id (an item
 * refused by the checks before the store could drop it, or one the erasure
 * was not there yet to drop) keeps nothing of what was sent. Read in the
 * write's transaction, which an erasure's suppression is not half-way through.
 */
async function withholdSuppressed(trx: Kysely<Database>, samples: KeptSample[]): Promise<KeptSample[]> {
  const byProject = new Map<string, { distinctIds: Set<string>; personIds: Set<string> }>();
  for (const s of samples) {
    if (s.distinctId === null && s.anonymousId === null && s.previousId === null) continue;
    let ids = byProject.get(s.projectId);
    if (ids === undefined) byProject.set(s.projectId, (ids = { distinctIds: new Set(), personIds: new Set() }));
    if (s.distinctId !== null) ids.distinctIds.add(s.distinctId);
    if (s.previousId !== null) ids.distinctIds.add(s.previousId);
    if (s.anonymousId !== null) ids.personIds.add(s.anonymousId);
  }
  if (byProject.size === 0) return samples;
  const suppressed = new Set<string>();
  for (const [projectId, ids] of byProject) {
    for (const part of chunks([...ids.distinctIds])) {
      const found = await trx.selectFrom('suppressed_ids').select('distinct_id').where('project_id', '=', projectId).where('distinct_id', 'in', part).execute();
      for (const r of found) suppressed.add(`${projectId}\nd\n${r.distinct_id}`);
    }
    for (const part of chunks([...ids.personIds])) {
      const found = await trx.selectFrom('suppressed_persons').select('person_id').where('project_id', '=', projectId).where('person_id', 'in', part).execute();
      for (const r of found) suppressed.add(`${projectId}\np\n${r.person_id}`);
    }
  }
  if (suppressed.size === 0) return samples;
  const names = (s: KeptSample) =>
    (s.distinctId !== null && suppressed.has(`${s.projectId}\nd\n${s.distinctId}`)) ||
    (s.previousId !== null && suppressed.has(`${s.projectId}\nd\n${s.previousId}`)) ||
    (s.anonymousId !== null && suppressed.has(`${s.projectId}\np\n${s.anonymousId}`));
  return samples.map((s) => (names(s) ? withheld(s) : s));
}

/** Ids looked up per statement: well inside either engine's limit of parameters. */
const IDS_PER_LOOKUP = 500;

function chunks<T>(list: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += IDS_PER_LOOKUP) out.push(list.slice(i, i + IDS_PER_LOOKUP));
  return out;
}

/** Drops a project's oldest samples until what is left weighs at most `max` bytes (sampleBytes). */
async function trimProject(trx: Kysely<Database>, projectId: string, max: number): Promise<void> {
  const total = await trx.selectFrom('item_samples').select((eb) => eb.fn.sum<number>('bytes').as('bytes')).where('project_id', '=', projectId).executeTakeFirst();
  if (Number(total?.bytes ?? 0) <= max) return;
  const rows = await trx.selectFrom('item_samples').select(['id', 'bytes']).where('project_id', '=', projectId).orderBy('id', 'desc').execute();
  let kept = 0;
  for (const r of rows) {
    kept += r.bytes;
    if (kept > max) {
      await trx.deleteFrom('item_samples').where('project_id', '=', projectId).where('id', '<=', r.id).execute();
      return;
    }
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
