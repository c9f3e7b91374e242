import type { DropReason, ItemErrorCode } from '../../errors/codes.js';
import type { IngestItem } from './item.js';

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
  /**
   * False for items that are part of items of another job, and counted with
   * them (the person update of a PostHog event that carries $set): written,
   * not counted among the source's outcomes.
   */
  counted?: boolean;
}

/** What a group or an alias item did, for the dry run's answer. */
export type ItemEffect =
  | { kind: 'group'; groupIsNew: boolean }
  | { kind: 'alias'; effect: 'linked' | 'merged' | 'none' };

/** What became of one item of a job. */
export type ItemOutcome =
  | {
      index: number;
      status: 'accepted';
      eventId: string | null;
      /** The item's person: null only for a group item that names no member. */
      personId: string | null;
      personIsNew: boolean;
      effect?: ItemEffect;
    }
  | { index: number; status: 'duplicate'; eventId: string | null }
  | { index: number; status: 'dropped'; reason: DropReason }
  /** Valid alone, refused by what the project holds (a sixth group type, an alias that would merge two identified people): nothing of it is kept. */
  | { index: number; status: 'refused'; code: ItemErrorCode; field: string; message: string };

/** The outcomes of items the store kept, repeated or dropped: all but those it refused. */
export type KeptOutcome = Exclude<ItemOutcome, { status: 'refused' }>;

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
