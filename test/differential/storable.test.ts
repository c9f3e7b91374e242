/**
 * What passes validation is storable on every engine, and reads back the
 * same from each. Batches from a hostile alphabet (arbitraries.ts) go through
 * the pipeline (checks, enrichment) and then into every store engine, through
 * the write path a server uses (the Collector over the engine's Store port)
 * and nothing engine-specific: no write may fail, every accepted item is stored, each
 * engine reads back exactly what the dry run said would be stored, and the
 * engines read back the same as each other.
 *
 * A fixed seed and INLET_FUZZ_RUNS runs (default 150: about 15 s here, well under a minute);
 * set INLET_FUZZ_RUNS=2000 (and INLET_FUZZ_SEED) for a longer search.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dryRunAnswer } from '../../src/edge/answers.js';
import { checkItems } from '../../src/pipeline/check-batch.js';
import type { Collector } from '../../src/domain/collector.js';
import type { IngestJob, ItemOutcome, KeptOutcome } from '../../src/domain/ingest/job.js';
import type { EnrichedItem } from '../../src/domain/items/enriched-item.js';
import type { GroupView, PersonView, StoredEvent } from '../../src/stores/port.js';
import { STORES, type StoreUnderTest } from '../conformance/stores.js';
import { batch } from './arbitraries.js';

const RUNS = Number(process.env.INLET_FUZZ_RUNS ?? 150);
const SEED = Number(process.env.INLET_FUZZ_SEED ?? 20261123);
const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);

/** A deep copy as JSON.parse makes it: plain objects (a "__proto__" key stays data), -0, lone surrogates and all. */
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/** A value as a client reads it back from JSON (where -0 is 0). */
const asJson = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

/** What one engine did with one batch. */
interface EngineRun {
  dry: ItemOutcome[];
  real: ItemOutcome[];
  again: ItemOutcome[];
  events: StoredEvent[];
  people: (PersonView | null)[];
  /** Every group of the project, with its members. */
  groups: (GroupView | null)[];
}

/** The org, project, source and key a job names, so the engine's key check at write time passes. */
async function seedOwners(collector: Collector, job: IngestJob, run: number): Promise<void> {
  if ((await collector.admin.getOrg('org_fuzz')) === null) await collector.admin.createOrg({ id: 'org_fuzz', name: 'Fuzz', createdAt: 0 });
  await collector.admin.createProject({ id: job.projectId, orgId: 'org_fuzz', name: 'Fuzz', apiEnabled: true, monthlyEventLimit: null, retentionDays: 400, createdAt: 0 });
  await collector.admin.createSource({ id: job.sourceId, projectId: job.projectId, name: 'Fuzz', filterBots: true, recordIp: false, createdAt: 0 });
  const hash = Buffer.alloc(32);
  hash.writeUInt32BE(run);
  const key = { id: job.keyId, sourceId: job.sourceId, hash, lastFour: 'fuzz', createdAt: 0, lastUsedAt: null, expiresAt: null, revokedAt: null };
  await collector.admin.addKey(key, { fits: () => true });
}

async function runOn(collector: Collector, job: IngestJob, lookups: ({ distinctId: string } | { personId: string })[]): Promise<EngineRun> {
  const dry = await collector.ingest({ ...job, dryRun: true });
  const real = await collector.ingest(job);
  const again = await collector.ingest({ ...job, dryRun: true });
  const events = await collector.store.listEvents(job.sourceId, 1000);
  const people = await Promise.all(lookups.map((l) => collector.store.findPerson(job.projectId, l)));
  const listed = await collector.store.listGroups(job.projectId, { limit: 1000 });
  const groups = await Promise.all(listed.map((g) => collector.store.findGroup(job.projectId, g.groupType, g.groupKey)));
  return { dry, real, again, events, people, groups };
}

const status = (o: ItemOutcome) => (o.status === 'dropped' ? `dropped:${o.reason}` : o.status === 'refused' ? `refused:${o.code}` : o.status);

/** Checks one engine's run against what the pipeline and the dry run promised. */
function checkRun(name: string, items: EnrichedItem[], dropped: Parameters<typeof dryRunAnswer>[2], r: EngineRun): void {
  // Before and after the same state, a dry run and a real write decide alike.
  expect(r.dry.map(status), name).toEqual(r.real.map(status));
  const shown = new Map(dryRunAnswer(items, r.dry.filter((o): o is KeptOutcome => o.status !== 'refused'), dropped, [], [], 'req').items.map((i) => [i.index, i]));
  const stored = new Map(r.events.map((e) => [e.id, e]));
  const byIndex = new Map(items.map((i) => [i.index, i]));
  for (const [k, o] of r.real.entries()) {
    const item = byIndex.get(o.index)!;
    if (o.status !== 'accepted') continue;
    // A repeat in a later dry run names the stored event (fault 15).
    if (item.insertId !== null) expect(r.again[k], name).toEqual({ index: o.index, status: 'duplicate', eventId: o.eventId });
    if (item.type !== 'track') continue;
    const e = stored.get(o.eventId!);
    expect(e, `${name}: event of item ${o.index} not read back`).toBeDefined();
    const view = shown.get(o.index)!;
    expect(asJson({ ...view.properties, ...view.enrichment }), name).toEqual(asJson(e!.properties));
    expect({ event: e!.event, distinctId: e!.distinctId, anonymousId: e!.anonymousId, sessionId: e!.sessionId, insertId: e!.insertId, timestamp: e!.timestamp }).toEqual({
      event: item.event,
      distinctId: item.distinctId,
      anonymousId: item.anonymousId,
      sessionId: item.sessionId,
      insertId: item.insertId,
      timestamp: item.timestamp,
    });
  }
  expect(r.events.length, name).toBe(r.real.filter((o) => o.status === 'accepted' && byIndex.get(o.index)!.type === 'track').length);
}

/** An engine's reads with its own random ids replaced by the order they first appear in. */
function comparable(r: EngineRun): unknown {
  const labels = new Map<string, string>();
  const label = (id: string) => (id.startsWith('per_') && !labels.has(id) ? labels.set(id, `person ${labels.size}`) : labels).get(id) ?? id;
  const events = r.events.map((e) => ({ ...e, id: undefined, personId: label(e.personId), properties: asJson(e.properties) }));
  const people = r.people.map((p) => p && { distinctIds: [...p.distinctIds].sort(), traits: asJson(p.traits), groups: p.groups });
  // A member is named by its person's distinct_ids: person ids are each engine's own, and members come in their order.
  const idsOf = new Map(r.people.flatMap((p) => (p === null ? [] : [[p.id, [...p.distinctIds].sort().join(' ')] as const])));
  const groups = r.groups.map((g) => g && { groupType: g.groupType, groupKey: g.groupKey, traits: asJson(g.traits), members: g.members.map((m) => idsOf.get(m) ?? m).sort() });
  return { events, people, groups, real: r.real.map(status) };
}

const engines = STORES;

describe.runIf(engines.length > 0)(`differential: what the pipeline accepts, ${engines.map((e) => e.name).join(' and ')} store and read back alike`, () => {
  const opened: StoreUnderTest[] = [];
  beforeAll(async () => {
    for (const e of engines) opened.push(await e.make());
  });
  afterAll(async () => {
    for (const s of opened) await s.cleanup();
  });

  it(`no item the pipeline accepts fails a write; each is stored and reads back as the dry run showed (${RUNS} runs, seed ${SEED})`, async () => {
    let run = 0;
    let storedItems = 0;
    let groupsRead = 0;
    let aliases = 0;
    await fc.assert(
      fc.asyncProperty(batch(NOW), fc.boolean(), fc.boolean(), async (raw, recordIp, filterBots) => {
        run++;
        // Every run (shrinking included) writes a project and source of its own.
        const job = { projectId: `prj_fuzz${run}`, sourceId: `src_fuzz${run}`, keyId: `key_fuzz${run}`, receivedAt: NOW, dryRun: false };
        const enriched = checkItems(raw.map(plain), { now: NOW, recordIp, source: { id: job.sourceId, filterBots } });
        if (enriched.items.length === 0) return;
        const items = enriched.items;
        const lookups = [
          ...new Set(items.flatMap((i) => [...(i.distinctId === null ? [] : [i.distinctId]), ...(i.type === 'alias' ? [i.previousId] : [])])),
        ].map((distinctId) => ({ distinctId }) as { distinctId: string } | { personId: string });
        for (const a of new Set(items.flatMap((i) => (i.anonymousId === null ? [] : [i.anonymousId])))) lookups.push({ personId: a });

        const results: EngineRun[] = [];
        for (const [k, s] of opened.entries()) {
          await seedOwners(s.collector, { ...job, items }, run);
          const r = await runOn(s.collector, { ...job, items }, lookups);
          checkRun(engines[k]!.name, items, enriched.dropped, r);
          results.push(r);
        }
        for (const r of results.slice(1)) expect(comparable(r)).toEqual(comparable(results[0]!));
        storedItems += items.length;
        groupsRead += results[0]!.groups.length;
        aliases += results[0]!.real.filter((o) => o.status === 'accepted' && o.effect?.kind === 'alias').length;
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // The alphabet is hostile, not hopeless: most batches reach the stores.
    expect(storedItems).toBeGreaterThan(RUNS);
    // Groups and aliases reach the stores too.
    expect(groupsRead).toBeGreaterThan(RUNS / 10);
    expect(aliases).toBeGreaterThan(RUNS / 10);
  }, Math.max(60_000, RUNS * 1000));
});
