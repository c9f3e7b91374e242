import type { IngestJob } from '../../src/domain/ingest/job.js';
import { Collector } from '../../src/domain/collector.js';
import type { KeyRecord, Store } from '../../src/stores/port.js';
import type { EnrichedItem } from '../../src/domain/items/enriched-item.js';
import { type ItemType, unhandledType } from '../../src/domain/ingest/item.js';
import { storedProperties } from '../../src/domain/ingest/stored-properties.js';

/** Any field of an item but its index, which is its position; what the checks derive is derived from the rest unless given. */
export type ItemSpec = { type?: ItemType; event?: string | null } & Partial<
  Pick<EnrichedItem<'track'>, 'distinctId' | 'anonymousId' | 'sessionId' | 'insertId' | 'timestamp' | 'properties' | 'propertiesJson' | 'enrichment' | 'storedJson' | 'userAgent' | 'droppedKeys'>
> &
  Partial<Pick<EnrichedItem<'identify'>, 'setOnce' | 'unset'>> &
  Partial<Pick<EnrichedItem<'group'>, 'groupType' | 'groupKey'>> &
  Partial<Pick<EnrichedItem<'alias'>, 'previousId'>>;

/** The time jobs are received at unless a test says otherwise (November 2026). */
export const RECEIVED_AT = 1_795_000_000_000;

/**
 * A job as the pipeline hands it to a store: one project and source, every
 * item field set (a track of event "e" at RECEIVED_AT unless `specs` say
 * otherwise).
 */
export function ingestJob(specs: ItemSpec[], o: Partial<Omit<IngestJob, 'items'>> = {}): IngestJob {
  const items = specs.map((s, index) => item(s, index, o.receivedAt ?? RECEIVED_AT));
  return { projectId: 'prj_1', sourceId: 'src_1', keyId: 'key_1', receivedAt: RECEIVED_AT, dryRun: false, ...o, items };
}

/** The item of `spec`, as the checks would build it. */
export function item(s: ItemSpec, index: number, timestamp = RECEIVED_AT): EnrichedItem {
  const properties = s.properties ?? {};
  const propertiesJson = s.propertiesJson ?? JSON.stringify(properties);
  const enrichment = s.enrichment ?? {};
  const common = {
    index, anonymousId: s.anonymousId ?? null, sessionId: s.sessionId ?? null, insertId: s.insertId ?? null, timestamp: s.timestamp ?? timestamp,
    properties, propertiesJson, enrichment, userAgent: s.userAgent ?? null, droppedKeys: s.droppedKeys ?? [],
  };
  const type = s.type ?? 'track';
  switch (type) {
    case 'track':
      // An explicit null makes a track the checks would refuse: tests of a write that fails send one.
      return { ...common, type, event: s.event === undefined ? 'e' : (s.event as string), distinctId: s.distinctId ?? null, storedJson: s.storedJson ?? storedProperties({ properties, propertiesJson, enrichment }) };
    case 'identify':
      if (s.distinctId === undefined || s.distinctId === null) throw new Error('An identify item needs a distinctId.');
      return { ...common, type, event: null, distinctId: s.distinctId, setOnce: s.setOnce ?? null, unset: s.unset ?? null };
    case 'group':
      return { ...common, type, event: null, distinctId: s.distinctId ?? null, groupType: s.groupType ?? 'company', groupKey: s.groupKey ?? 'acme' };
    case 'alias':
      if (s.distinctId === undefined || s.distinctId === null || s.previousId === undefined) throw new Error('An alias item needs a distinctId and a previousId.');
      return { ...common, type, event: null, distinctId: s.distinctId, previousId: s.previousId };
    default:
      return unhandledType(type);
  }
}

/**
 * Makes the org, project (prj_1), source (src_1) and key (key_1) that
 * ingestJob's defaults name, so the engine's key check at write time passes.
 */
export async function seedJobOwners(store: Pick<Store, 'admin'>, o: { monthlyEventLimit?: number | null } = {}): Promise<void> {
  await store.admin.createOrg({ id: 'org_1', name: 'Acme', createdAt: 0 });
  await store.admin.createProject({ id: 'prj_1', orgId: 'org_1', name: 'Web', apiEnabled: true, monthlyEventLimit: o.monthlyEventLimit ?? null, retentionDays: 400, createdAt: 0 });
  await store.admin.createSource({ id: 'src_1', projectId: 'prj_1', name: 'Billing', filterBots: true, recordIp: false, createdAt: 0 });
  const key: KeyRecord = {
    id: 'key_1', sourceId: 'src_1', hash: Buffer.alloc(32, 1), lastFour: 'xxxx', createdAt: 0, lastUsedAt: null, expiresAt: null, revokedAt: null,
  };
  await store.admin.addKey(key, { fits: () => true });
}

/** The domain's write path over `store`, with ingestJob's project, source and key made. */
export async function collectorOn(store: Store, o: { monthlyEventLimit?: number | null } = {}): Promise<Collector> {
  await seedJobOwners(store, o);
  return new Collector(store);
}
