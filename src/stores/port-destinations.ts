/**
 * Destinations: where a project's stored track events are sent, and how far
 * each has got. The rules of delivery (the cursor, the lease, retries,
 * status) are the domain's (src/domain/delivery/); the store keeps the
 * destinations, their cursors and leases, and reads the events past a cursor.
 * Written once for both SQL engines (src/stores/sql/destinations.ts); an
 * engine gives only how far its events are safe to read (see `head`).
 *
 * The contract, for every engine:
 *
 * Positions. An event's position is its `seq`. Within a project, positions
 * become readable in increasing order: an event is never readable while one
 * of the same project with a lower position may still appear. (Events of one
 * project are written under the project lock, and take their seqs under it.)
 * A gap is normal: a dry run, a failed write, retention and erasure leave them.
 *
 * Leases. At most one holder delivers a destination: `takeLease` gives it to
 * the caller when nobody holds it, the caller holds it already, or the
 * holder let it run out; times are the store's clock (the database server's
 * on PostgreSQL, so servers whose clocks disagree agree on a lease). Every
 * write of a cursor names the holder and is refused (false) once another
 * holds the lease: a server that lost it can never move a cursor back.
 *
 * Deletion. Deleting a project or an organization deletes its projects'
 * destinations, cursors and leases with it, in its transaction: from its
 * commit on, `get` finds none of them, a lease or a cursor write is refused,
 * and every server's delivery stops at its next look (domain/delivery/).
 */
import type { NewEventRow } from './port.js';

export type DestinationKind = 'webhook' | 'postgres';

export const DESTINATION_KINDS: readonly DestinationKind[] = ['webhook', 'postgres'];

/** A destination as kept. `url` holds any password in full: only masked forms leave the process. */
export interface DestinationRecord {
  id: string;
  projectId: string;
  kind: DestinationKind;
  url: string;
  /** The table, for `postgres`; null for `webhook`. */
  table: string | null;
  /** Only events of these sources; empty: every source of the project. */
  sources: string[];
  /** Only events of these names; empty: every name. */
  events: string[];
  /** The key webhook requests are signed with; null for `postgres`. */
  secret: string | null;
  paused: boolean;
  /** Events up to this position are delivered. */
  cursor: number;
  /** Counts replays: part of each batch id, so a batch sent again after a replay is a new batch to the receiver. */
  generation: number;
  /** Events delivered, in all. */
  delivered: number;
  /** The last attempt's failure; null once a batch is delivered. */
  lastError: string | null;
  lastDeliveredAt: number | null;
  createdAt: number;
}

/** What says where a destination's events go: what a sender is made from, and what is checked when a destination is made. */
export type DestinationTarget = Pick<DestinationRecord, 'kind' | 'url' | 'secret' | 'table'>;

/** An event read for delivery: as the ingest pass wrote it (properties the stored JSON text, passed on as it is), with its position; the person is the one it belongs to now. */
export interface DeliveryEvent extends Omit<NewEventRow, 'projectId'> {
  seq: number;
}

/** What a read past a cursor found. */
export interface DeliveryRead {
  /** The project's events past the cursor, in position order, `limit` at most (filters not applied). */
  events: DeliveryEvent[];
  /**
   * How far the read looked: every event of the project up to here is in
   * `events` or gone. A cursor may move here even when `events` is empty.
   */
  through: number;
}

export interface DestinationStore {
  create(d: DestinationRecord): Promise<void>;
  /** The destination; null when there is none, or its project (or organization) is deleted. */
  get(id: string): Promise<DestinationRecord | null>;
  /** The project's destinations (none once it is deleted). */
  list(projectId: string): Promise<DestinationRecord[]>;
  /** Every destination of every live project: what a server may deliver. */
  all(): Promise<DestinationRecord[]>;
  setPaused(id: string, paused: boolean): Promise<DestinationRecord | null>;
  /** Moves the cursor to `cursor` and counts a replay; false when there is no such destination. */
  replay(id: string, cursor: number): Promise<boolean>;
  delete(id: string): Promise<boolean>;

  /** The newest position of the project that is safe to read (see Positions): events up to it are all readable. */
  head(projectId: string): Promise<number>;
  /** The position just before the project's first event that arrived at `at` or later (the head when none did). */
  positionBefore(projectId: string, at: number): Promise<number>;
  /** The project's events past `after` and up to `upTo`, in position order, `limit` at most. */
  read(projectId: string, after: number, upTo: number, limit: number): Promise<DeliveryRead>;
  /** The project's events past `after` up to `upTo` that `matches` (sources, names), counted up to `cap`. */
  countPast(d: Pick<DestinationRecord, 'projectId' | 'sources' | 'events'>, after: number, upTo: number, cap: number): Promise<number>;
  /** When the first of those arrived (received_at); null when there is none. */
  oldestPast(d: Pick<DestinationRecord, 'projectId' | 'sources' | 'events'>, after: number, upTo: number): Promise<number | null>;

  /** Takes or renews the lease for `ms` (see Leases); false when another holds it. */
  takeLease(id: string, holder: string, ms: number): Promise<boolean>;
  /** Lets the lease go, if the holder has it (a stopping server). */
  releaseLease(id: string, holder: string): Promise<void>;
  /**
   * Records a delivery: the cursor moves to `cursor`, `count` more delivered,
   * the error cleared. False when the holder lost the lease or a replay
   * (another `generation`) moved the cursor meanwhile.
   */
  advance(id: string, holder: string, generation: number, cursor: number, count: number, at: number): Promise<boolean>;
  /** Records a failed attempt's error. False when the holder lost the lease. */
  failed(id: string, holder: string, error: string): Promise<boolean>;
  /** Ends what delivery's reads opened; the store's close calls it. */
  close(): Promise<void>;
}

/** What the delivery thread reads, on store connections of its own (open-delivery-reads.ts). */
export type DeliveryReads = Pick<DestinationStore, 'get' | 'read' | 'countPast' | 'oldestPast' | 'close'>;

// ---- sending -------------------------------------------------------------------

/** A batch on its way to a destination: at most 500 events, in position order. */
export interface OutgoingBatch {
  destinationId: string;
  projectId: string;
  /** The same for the same events sent again (an Idempotency-Key); new after a replay. */
  batchId: string;
  events: DeliveryEvent[];
  /** Each event in the events list --json shape, with project_id and source_id, as JSON text (domain/delivery/batch.ts). */
  eventJson: string[];
}

/** What one attempt came to. */
export type SendOutcome = { ok: true } | { ok: false; error: string; retryAfterMs: number | null };

/**
 * Sends batches to one destination: an adapter per kind (stores/destinations/,
 * chosen by open-sender.ts). `send` never throws for the receiver's faults:
 * it answers them as a failed outcome, with an error fit to show (no
 * password, no body: `scrub`).
 */
export interface DeliverySender {
  send(batch: OutgoingBatch, signal: AbortSignal): Promise<SendOutcome>;
  close(): Promise<void>;
}

// ---- URLs as they may be shown -------------------------------------------------------

/**
 * A destination's URL can hold secrets: a password (a PostgreSQL URL usually
 * has one, a webhook's may), a token in the path (Slack-style
 * https://hooks.slack.com/services/T…/B…/secret) or in the query. Only the
 * process that connects ever sees it whole. The CLI, the console, logs and
 * errors show `maskUrl`'s form, which keeps the scheme, host and port, a
 * PostgreSQL URL's user and the names of query parameters, and nothing else; any text that may
 * quote the URL (a driver's error) goes through `scrub`.
 */
export const MASK = '***';

/** The URL with its password (and a web URL's user), its path after the host, each query value and any #part replaced by ***. */
export function maskUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return MASK;
  }
  const names = [...u.searchParams.keys()];
  const user = userShown(u);
  const masked = `${u.protocol}//${u.username !== '' ? `${user}${u.password !== '' ? `:${MASK}` : ''}@` : ''}${u.host}`;
  const path = u.pathname === '' || u.pathname === '/' ? u.pathname : `/${MASK}`;
  const query = names.length === 0 ? '' : `?${names.map((n) => `${encodeURIComponent(n)}=${MASK}`).join('&')}`;
  return `${masked}${path}${query}${u.hash !== '' ? `#${MASK}` : ''}`;
}

/**
 * A PostgreSQL URL's user is a role name, worth seeing; a web URL's user is
 * most often a receiver's token (https://sk_live_…@hooks.example.com/), so it
 * is hidden too.
 */
function userShown(u: URL): string {
  return u.protocol === 'http:' || u.protocol === 'https:' ? MASK : u.username;
}

/** The parts `maskUrl` hides, as they may appear in a text: encoded as in the URL, and decoded. */
function secretsOf(u: URL): string[] {
  const raw = [u.password, ...(userShown(u) === MASK ? [u.username] : []), ...u.pathname.split('/'), ...u.search.replace(/^\?/, '').split('&').map((p) => p.slice(p.indexOf('=') + 1)), u.hash.slice(1)];
  const out = new Set<string>();
  for (const r of raw) {
    out.add(r);
    try {
      out.add(decodeURIComponent(r));
    } catch {
      // Not well encoded: only its text as written can appear.
    }
  }
  for (const [, value] of u.searchParams) out.add(value);
  return [...out];
}

/** `text` with every secret part of `url` (its password, path, query values, the URL whole) replaced by ***. */
export function scrub(text: string, url: string): string {
  let out = text.replaceAll(url, maskUrl(url));
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return out;
  }
  // Longest first, so that a secret holding a shorter one is replaced whole.
  for (const s of secretsOf(u).sort((a, b) => b.length - a.length)) if (s.length >= 3) out = out.replaceAll(s, MASK);
  return out;
}
