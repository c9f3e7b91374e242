import { createHash } from 'node:crypto';
import type { DeliveryEvent, DestinationRecord } from '../../stores/port-destinations.js';

/** A batch holds at most this many events… */
export const BATCH_EVENTS = 500;
/** …and its request body at most this many bytes (a single larger event still goes, alone). */
export const BATCH_BYTES = 1024 * 1024;
/** Room in the body for the envelope around the events: ids, keys, brackets. */
const ENVELOPE_BYTES = 256;

/** Text JSON writes as it is between quotes: no quote, backslash, control character or surrogate (a lone one is escaped). */
const PLAIN = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;
/** A JSON string: most values (ids, names) need no escape, and quoting them as they are cost a sixth of JSON.stringify's share of a batch. */
const str = (v: string | null): string => (v === null ? 'null' : PLAIN.test(v) ? `"${v}"` : JSON.stringify(v));
/** The years toISOString writes with four digits; past them (or before 1970) the fast path below is not used. */
const FOUR_DIGIT_YEARS_END = 253_402_300_800_000;

/**
 * Writes epoch ms as a quoted ISO 8601 time, as toISOString does, keeping
 * the text up to the minute of the last time it wrote: the times of a batch
 * fall in a few minutes, and toISOString was a tenth of delivery's cost.
 */
class IsoTimes {
  private minute = NaN;
  private prefix = '';

  format(ms: number): string {
    if (!(ms >= 0 && ms < FOUR_DIGIT_YEARS_END) || !Number.isInteger(ms)) return JSON.stringify(new Date(ms).toISOString());
    const minute = Math.floor(ms / 60_000);
    if (minute !== this.minute) {
      this.minute = minute;
      this.prefix = new Date(minute * 60_000).toISOString().slice(0, 17);
    }
    const rest = ms - minute * 60_000;
    const s = Math.floor(rest / 1000);
    const f = rest - s * 1000;
    return `"${this.prefix}${s < 10 ? '0' : ''}${s}.${f < 10 ? '00' : f < 100 ? '0' : ''}${f}Z"`;
  }
}

/** One for each time of an event: an event's two times are often minutes apart. */
const timestamps = new IsoTimes();
const receivedTimes = new IsoTimes();

/**
 * An event in the `events list --json` shape, with project_id and source_id,
 * as JSON text. The properties are the stored JSON text as it is: parsing
 * and writing them again would cost more than the rest of delivery.
 */
export function eventJson(e: DeliveryEvent, projectId: string): string {
  return (
    `{"id":${str(e.id)},"project_id":${str(projectId)},"source_id":${str(e.sourceId)},"event":${str(e.event)},` +
    `"distinct_id":${str(e.distinctId)},"anonymous_id":${str(e.anonymousId)},"person_id":${str(e.personId)},` +
    `"session_id":${str(e.sessionId)},"server_session":${e.sessionId === null},"timestamp":${timestamps.format(e.timestamp)},` +
    `"received_at":${receivedTimes.format(e.receivedAt)},"insert_id":${str(e.insertId)},"properties":${e.properties}}`
  );
}

/** Whether the destination takes this event: its sources and names, when it names any. */
export function takes(d: Pick<DestinationRecord, 'sources' | 'events'>, e: DeliveryEvent): boolean {
  return (d.sources.length === 0 || d.sources.includes(e.sourceId)) && (d.events.length === 0 || d.events.includes(e.event));
}

/** The events of one batch, from those read past the cursor, and how far it reaches. */
export interface BatchPlan {
  events: DeliveryEvent[];
  eventJson: string[];
  /** Where the cursor goes once the batch is delivered. */
  through: number;
}

/**
 * The next batch from a read past the cursor: the events the destination
 * takes, in order, until 500 events or 1 MiB. `through` is the read's reach
 * when every event it found fits, else the last event taken, so the next
 * batch starts at the first one left out.
 */
export function planBatch(d: Pick<DestinationRecord, 'projectId' | 'sources' | 'events'>, read: { events: DeliveryEvent[]; through: number }): BatchPlan {
  const events: DeliveryEvent[] = [];
  const json: string[] = [];
  let bytes = ENVELOPE_BYTES;
  for (const e of read.events) {
    if (!takes(d, e)) continue;
    const text = eventJson(e, d.projectId);
    const size = Buffer.byteLength(text) + 1;
    if (events.length === BATCH_EVENTS || (events.length > 0 && bytes + size > BATCH_BYTES)) {
      return { events, eventJson: json, through: events.at(-1)!.seq };
    }
    events.push(e);
    json.push(text);
    bytes += size;
  }
  return { events, eventJson: json, through: read.through };
}

/**
 * A batch's id: the same for the same range of the same destination sent
 * again (a retry, another server after a takeover), so a receiver may use it
 * as an idempotency key; a replay makes new ones (`generation`).
 */
export function batchId(destinationId: string, generation: number, after: number, through: number): string {
  const h = createHash('sha256').update(`${destinationId}:${generation}:${after}:${through}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
