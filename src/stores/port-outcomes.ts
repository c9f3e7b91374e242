/**
 * The part of the store port that keeps what became of every item: counts
 * per source, minute, outcome and code, and samples of the items refused or
 * dropped (docs/design.md, "What became of every item"). Kept apart from
 * port.ts so each stays small; Store exposes it as `outcomes`.
 *
 * Contract, for every engine. Counts add up: `addOutcomes` adds to what is
 * stored (several servers' counts of one minute are summed, never replaced),
 * in one transaction with the samples. Samples are trimmed in the same call:
 * for each source and code it wrote to, only the newest `keepPerCode` stay;
 * then, for each project it wrote to, the oldest go until the project's
 * samples weigh at most `projectBytes` (sampleBytes: everything a sample
 * stores, its errors as much as its item). A sample that names a suppressed
 * id (its distinct_id, its anonymous_id as a person id, or an alias's
 * previous_id) is stored withheld: an erased person's later items keep
 * nothing of what they sent.
 */

/** What became of an item: stored, a repeat, kept out by a policy, or refused. */
/** `warned`: kept, with a warning of the source's tracking plan (observe); counted among the accepted too. */
export type Outcome = 'accepted' | 'duplicate' | 'dropped' | 'refused' | 'warned';

/** Items of one source in one minute with one outcome and code; `code` is '' for accepted and duplicate. */
export interface OutcomeCount {
  projectId: string;
  sourceId: string;
  /** Epoch ms, the start of the minute. */
  minute: number;
  outcome: Outcome;
  code: string;
  count: number;
}

/**
 * Items of one source in one hour that a tracking plan warned or refused,
 * with one code and one event: the event as the item named it ("(identify)",
 * "(group)" for those), or OTHER_EVENTS for the events past the source's
 * cap in that hour.
 */
export interface EventOutcomeCount {
  projectId: string;
  sourceId: string;
  /** Epoch ms, the start of the hour. */
  hour: number;
  outcome: 'refused' | 'warned';
  code: string;
  event: string;
  count: number;
}

/** Where the events of a source's hour past its cap are counted: a sender naming ever new events adds to this row, not new ones. */
export const OTHER_EVENTS = '(other)';

/** A plan's counts by event, as `addOutcomes` adds them: the rows, and how many distinct events (OTHER_EVENTS aside) a source's hour holds at most. */
export interface EventCounts {
  rows: EventOutcomeCount[];
  perHour: number;
}

/** Counts by event summed over a range of hours: one source's, or each of a project's sources'. */
export interface EventOutcomeRow {
  sourceId: string;
  outcome: 'refused' | 'warned';
  code: string;
  event: string;
  count: number;
}

/** An item refused or dropped, kept to be looked at and sent again; or one kept with a tracking plan's warning, to be looked at. */
export interface KeptSample {
  projectId: string;
  sourceId: string;
  outcome: 'refused' | 'dropped' | 'warned';
  /** The code it is kept under: its first error's, or the drop reason. */
  code: string;
  /** Every code of the item, in the order of its errors. */
  codes: string[];
  /** Its errors as the answer listed them (JSON text of an array); '[]' for a dropped item. */
  errors: string;
  /** The item as sent, JSON text, cut to the sample's limit. */
  item: string;
  /** Whether `item` was cut (it is then not JSON). */
  cut: boolean;
  receivedAt: number;
  requestId: string;
  index: number;
  /** The item's distinct_id and anonymous_id, when it sent them as text: what an erasure finds it by. */
  distinctId: string | null;
  anonymousId: string | null;
  /** An alias's previous_id, when it sent one as text: an erasure of its person finds the alias by it too. */
  previousId: string | null;
}

/** A sample as read back. */
export interface StoredSample extends KeptSample {
  id: number;
}

/** Which counts to read: one source or a project's sources, in a range of time, summed per bucket. */
export interface OutcomeQuery {
  sourceId?: string;
  projectId?: string;
  /** Epoch ms, inclusive. */
  since: number;
  /** Epoch ms, exclusive. */
  until: number;
  /** Bucket length in ms (60 000, 3 600 000 or 86 400 000): buckets start at multiples of it. */
  bucketMs: number;
}

/** Counts summed per bucket, source, outcome and code. */
export interface OutcomeRow {
  at: number;
  sourceId: string;
  outcome: Outcome;
  code: string;
  count: number;
}

/** Which samples to read, newest first. */
export interface SampleQuery {
  sourceId: string;
  code?: string;
  /** Epoch ms: only samples received at or after. */
  since?: number;
  /** Samples older than this one's position (paging); none: from the newest. */
  beforeId?: number;
  limit: number;
}

export interface SampleBounds {
  keepPerCode: number;
  projectBytes: number;
}

export interface OutcomeStore {
  /**
   * Adds counts, samples and a plan's counts by event in one transaction,
   * then trims samples as the bounds say (see the contract). An event new to
   * its source's hour once that hour holds `events.perHour` events is added
   * to OTHER_EVENTS instead.
   */
  addOutcomes(counts: OutcomeCount[], samples: KeptSample[], bounds: SampleBounds, events?: EventCounts): Promise<void>;
  outcomeCounts(q: OutcomeQuery): Promise<OutcomeRow[]>;
  /** A plan's counts by event of the hours that start in [since, until), summed per source, outcome, code and event. */
  eventOutcomeCounts(q: { sourceId?: string; projectId?: string; since: number; until: number }): Promise<EventOutcomeRow[]>;
  samples(q: SampleQuery): Promise<StoredSample[]>;
  /** Each project's items by outcome since `since` (the projects list's refusal share). */
  projectOutcomeTotals(projectIds: string[], since: number): Promise<Map<string, Map<Outcome, number>>>;
  /** Deletes samples received before each project's cutoff; returns how many went. */
  expireSamples(cutoffs: { projectId: string; before: number }[]): Promise<number>;
  /** Deletes counts of minutes (and counts by event of hours) before each project's cutoff; returns how many rows went. */
  expireCounts(cutoffs: { projectId: string; before: number }[]): Promise<number>;
}

/** Bytes a sample counts against its project's bound: every text it stores, whatever it holds. */
export function sampleBytes(s: KeptSample): number {
  return SAMPLE_ROW_BYTES + Buffer.byteLength(s.item) + Buffer.byteLength(s.errors) + Buffer.byteLength(s.code) + s.codes.reduce((n, c) => n + c.length + 3, 0) +
    Buffer.byteLength(s.requestId) + idBytes(s.distinctId) + idBytes(s.anonymousId) + idBytes(s.previousId) + s.projectId.length + s.sourceId.length;
}

/** What a row costs besides its texts (numbers, flags, the row itself), so that a flood of tiny samples counts too. */
const SAMPLE_ROW_BYTES = 64;

function idBytes(id: string | null): number {
  return id === null ? 0 : Buffer.byteLength(id);
}

/**
 * What a withheld sample holds of its item: nothing of what was sent. An item
 * of a suppressed person is counted, and kept only as the fact that it came
 * (its outcome, codes, request and index), so no erasure has to find it again.
 */
export const WITHHELD = { item: 'null', cut: false, errors: '[]', distinctId: null, anonymousId: null, previousId: null } as const;

/** The sample withheld (WITHHELD). */
export function withheld(s: KeptSample): KeptSample {
  return { ...s, ...WITHHELD };
}
