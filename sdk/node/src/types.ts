/** What the SDK sends, and what it tells you about every item. */

/** A JSON value as the API takes it. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** An event, as `track()` takes it. */
export interface TrackMessage {
  event: string;
  distinctId?: string;
  anonymousId?: string;
  sessionId?: string;
  properties?: Record<string, unknown>;
  /** When it happened; the time of the call when absent. */
  timestamp?: Date | string | number;
  /** Idempotency key; generated when absent, and the same on every attempt. */
  insertId?: string;
}

/** Traits for a person, as `identify()` takes them. */
export interface IdentifyMessage {
  distinctId: string;
  anonymousId?: string;
  traits?: Record<string, unknown>;
  /** Traits set only where the person has no value for the key yet, whenever they arrive. */
  setOnce?: Record<string, unknown>;
  /** Trait names to remove, as of `timestamp`: a value set later survives. */
  unset?: string[];
  timestamp?: Date | string | number;
  insertId?: string;
}

/** A group's traits, and a member, as `group()` takes them. */
export interface GroupMessage {
  /** The kind of group, such as `company`: 1 to 64 of a-z, 0-9 and `_`; at most 5 per project. */
  groupType: string;
  /** The group's id within its type. */
  groupKey: string;
  /** The group's traits: the newest value per key wins, by timestamp. */
  traits?: Record<string, unknown>;
  /** A user who becomes a member of the group. */
  distinctId?: string;
  timestamp?: Date | string | number;
  insertId?: string;
}

/** Two ids of one person, as `alias()` takes them. */
export interface AliasMessage {
  /** The user id `previousId` joins. */
  distinctId: string;
  /** The id that from now on means the same person as `distinctId`. */
  previousId: string;
  timestamp?: Date | string | number;
  insertId?: string;
}

/** An item in the API's own shape (snake_case), as `POST /api/v1/batch` takes it. */
export type WireItem = Record<string, unknown>;

/** One item error, as the API lists it. */
export interface ItemError {
  index: number;
  code: string;
  field: string;
  message: string;
}

/** The final outcome of one item. */
export type ItemResult =
  | { outcome: 'accepted'; insertId: string; attempts: number }
  | { outcome: 'duplicate'; insertId: string; attempts: number }
  | { outcome: 'dropped'; insertId: string; attempts: number; reason: string }
  | { outcome: 'refused'; insertId: string; attempts: number; errors: Omit<ItemError, 'index'>[] }
  | {
      outcome: 'failed';
      insertId: string;
      attempts: number;
      /** HTTP status of the last answer, when there was one. */
      status?: number;
      /** Error code of the last answer's envelope, when it had one. */
      code?: string;
      /** Network error or why it was given up (`closed`), when there was no answer to quote. */
      error?: string;
    };

export type Outcome = ItemResult['outcome'];

/** What `flush()` and `close()` resolve to: counts, and every item that was not accepted. */
export interface Report {
  accepted: number;
  duplicates: number;
  dropped: number;
  refused: number;
  failed: number;
  /** Stored already by an earlier request with the same insert_id: delivered, once. */
  duplicateItems: Extract<ItemResult, { outcome: 'duplicate' }>[];
  droppedItems: Extract<ItemResult, { outcome: 'dropped' }>[];
  refusedItems: Extract<ItemResult, { outcome: 'refused' }>[];
  failedItems: Extract<ItemResult, { outcome: 'failed' }>[];
}

export function emptyReport(): Report {
  return { accepted: 0, duplicates: 0, dropped: 0, refused: 0, failed: 0, duplicateItems: [], droppedItems: [], refusedItems: [], failedItems: [] };
}

/** Adds one result to a report. */
export function addToReport(r: Report, result: ItemResult): void {
  switch (result.outcome) {
    case 'accepted':
      r.accepted++;
      break;
    case 'duplicate':
      r.duplicates++;
      r.duplicateItems.push(result);
      break;
    case 'dropped':
      r.dropped++;
      r.droppedItems.push(result);
      break;
    case 'refused':
      r.refused++;
      r.refusedItems.push(result);
      break;
    case 'failed':
      r.failed++;
      r.failedItems.push(result);
      break;
  }
}

/**
 * Thrown by `track()`/`identify()` when the item would take the items held,
 * not delivered yet, past `maxQueueBytes` of JSON. A sender that awaits
 * `drain()` whenever `track()` returns false never meets it.
 */
export class QueueFullError extends Error {
  constructor(readonly maxQueueBytes: number) {
    super(
      `The Inlet queue holds ${maxQueueBytes} bytes of items (maxQueueBytes) that are not delivered yet; await drain() whenever track() returns false, or raise maxQueueBytes.`,
    );
    this.name = 'QueueFullError';
  }
}

/** Thrown by `track()`, `identify()`, `group()` and `alias()` after `close()`. */
export class ClosedError extends Error {
  constructor() {
    super('This Inlet client is closed; create a new one to send more.');
    this.name = 'ClosedError';
  }
}
