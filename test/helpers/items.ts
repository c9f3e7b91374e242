import type { EnrichedItem, IngestJob } from '../../src/stores/port.js';

/** Any field of an item but its index, which is its position. */
export type ItemSpec = Partial<Omit<EnrichedItem, 'index'>>;

/** The time jobs are received at unless a test says otherwise (November 2026). */
export const RECEIVED_AT = 1_795_000_000_000;

/**
 * A job as the pipeline hands it to a store: one project and source, every
 * item field set (a track of event "e" at RECEIVED_AT unless `specs` say
 * otherwise).
 */
export function ingestJob(specs: ItemSpec[], o: Partial<Omit<IngestJob, 'items'>> = {}): IngestJob {
  const items: EnrichedItem[] = specs.map((s, index) => ({
    index,
    type: 'track',
    event: s.type === 'identify' ? null : 'e',
    distinctId: null,
    anonymousId: null,
    sessionId: null,
    insertId: null,
    timestamp: o.receivedAt ?? RECEIVED_AT,
    properties: {},
    userAgent: null,
    droppedKeys: [],
    enrichment: {},
    ...s,
  }));
  return { projectId: 'prj_1', sourceId: 'src_1', keyId: 'key_1', receivedAt: RECEIVED_AT, dryRun: false, ...o, items };
}
