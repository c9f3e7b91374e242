import type { DropReason } from '../../errors/codes.js';

/** One valid item as the ingest engine needs it (the pipeline's enriched item is one). */
export interface IngestItem {
  /** Position in the request. */
  index: number;
  type: 'track' | 'identify';
  /** The event name of a track; null for an identify. */
  event: string | null;
  distinctId: string | null;
  anonymousId: string | null;
  sessionId: string | null;
  insertId: string | null;
  /** Epoch ms. */
  timestamp: number;
  /** A track's properties, or an identify's traits. */
  properties: Record<string, unknown>;
  /** `properties` as JSON text, when the checks wrote it already. */
  propertiesJson?: string;
  /** Server-set properties stored with a track event ($source_id, $browser, ...). */
  enrichment: Record<string, unknown>;
  /** A track's stored properties text (storedProperties), when enrichment rendered it already. */
  storedJson?: string;
}

/** One request's worth of valid, not-dropped items, to be written together. */
export interface IngestJob {
  projectId: string;
  sourceId: string;
  /** The key the request came with: checked again when the job is written. */
  keyId: string;
  /** Epoch ms at arrival: the metering month comes from it. */
  receivedAt: number;
  /** Items in request order; each has its enrichment already worked out. */
  items: IngestItem[];
  /** Run everything, keep nothing. */
  dryRun: boolean;
}

/** What became of one item of a job. */
export type ItemOutcome =
  | { index: number; status: 'accepted'; eventId: string | null; personId: string; personIsNew: boolean }
  | { index: number; status: 'duplicate'; eventId: string | null }
  | { index: number; status: 'dropped'; reason: DropReason };

/**
 * The job's key stopped working (revoked, expired, or its source, project or
 * organization deleted) before the job was written: nothing of it is stored
 * or metered. Answered as 401 invalid_key.
 */
export class KeyNoLongerWorksError extends Error {
  constructor() {
    super('The key stopped working before the batch was written.');
    this.name = 'KeyNoLongerWorksError';
  }
}
