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
import type dns from 'node:dns';
import type { NewEventRow } from './port.js';

/**
 * What a destination of a kind is configured with: the values of its kind's
 * fields (DestinationKind.fields), by field name, kept as one JSON object.
 * Secret values (a URL's password, a signing key) are kept whole: only the
 * process that delivers uses them, and what is shown masks them (`shown`).
 */
export type DestinationConfig = Readonly<Record<string, string>>;

/** A destination as kept. */
export interface DestinationRecord {
  id: string;
  projectId: string;
  /** The name of its kind (DestinationKind.name). */
  kind: string;
  config: DestinationConfig;
  /** Only events of these sources; empty: every source of the project. */
  sources: string[];
  /** Only events of these names; empty: every name. */
  events: string[];
  paused: boolean;
  /** Why delivery paused itself (the receiver answered 410); null when a person paused it, or it is not paused. */
  pausedReason: string | null;
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
  /** A kind that writes files (DestinationKind.writes): the file it writes next, recorded before it is written; null before its first. */
  file: FilePlan | null;
}

/**
 * A file a destination writes, fixed before it is written: the events the
 * destination takes past `after` up to `through`, named by the positions of
 * the first and last of them and by `at` (when the first arrived). A crash
 * at any point leaves the plan in the store, and the file is written again
 * under the same name from the same range: each event in one file.
 */
export interface FilePlan {
  /** The destination's generation (a replay plans anew). */
  generation: number;
  after: number;
  through: number;
  first: number;
  last: number;
  /** received_at of the first event, epoch ms: the file's date and hour. */
  at: number;
}

/** What says where a destination's events go: what a sender is made from, and what is checked when a destination is made. */
export type DestinationTarget = Pick<DestinationRecord, 'kind' | 'config'>;

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
  /** Pauses (with why, when delivery pauses itself) or resumes (the reason cleared). */
  setPaused(id: string, paused: boolean, reason?: string | null): Promise<DestinationRecord | null>;
  /** Replaces the config (a secret rotated); false when there is no such destination. */
  setConfig(id: string, config: DestinationConfig): Promise<boolean>;
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
  /** Records the next file (FilePlan) before it is written. False when the holder lost the lease or a replay moved the cursor. */
  planFile(id: string, holder: string, plan: FilePlan): Promise<boolean>;
  /** Records a failed attempt's error. False when the holder lost the lease. */
  failed(id: string, holder: string, error: string): Promise<boolean>;
}

/** What the delivery process reads, on store connections of its own (open-delivery-reads.ts), and their end. */
export type DeliveryReads = Pick<DestinationStore, 'get' | 'read' | 'countPast' | 'oldestPast'> & { close(): Promise<void> };

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

/** What one attempt came to; `pause`: the receiver wants no more (a 410), and the destination is paused with `error` as the reason. */
export type SendOutcome = { ok: true } | { ok: false; error: string; retryAfterMs: number | null; pause?: boolean };

/**
 * Sends batches to one destination: made by its kind (DestinationKind.sender,
 * src/destinations/<kind>/). `send` never throws for the receiver's faults:
 * it answers them as a failed outcome, with an error fit to show (no
 * password, no body: `scrub`).
 */
export interface DeliverySender {
  send(batch: OutgoingBatch, signal: AbortSignal): Promise<SendOutcome>;
  close(): Promise<void>;
}

/**
 * A file being made, for a destination that writes files: its events added
 * one at a time, in position order, then its bytes. A maker holds only what
 * its format needs (NDJSON: the gzipped lines so far; Parquet: the row
 * groups written so far and the columns of the next), so a file of
 * 100,000 events never has them all in memory as objects.
 */
export interface FileMaker {
  /** Adds an event; `json` is the event as a batch carries it (OutgoingBatch.eventJson). */
  add(e: DeliveryEvent, json: string): void;
  /** The file's bytes; nothing may be added after. */
  finish(): Promise<Buffer>;
}

/** A file on its way to a destination that writes files: made from the events of its plan still stored, in position order. */
export interface OutgoingFile {
  destinationId: string;
  projectId: string;
  plan: FilePlan;
  /** The file as it is written (FileSender.newFile made it). */
  body: Buffer;
  /** How many events it holds. */
  events: number;
}

/**
 * Writes files to one destination (a kind whose `writes` is 'files'): each
 * file whole, under a name fixed by its plan, so that writing the same plan
 * again replaces it. Like `send`, `writeFile` answers the receiver's faults
 * as a failed outcome, with an error fit to show.
 */
export interface FileSender {
  /** How long events may wait before a file that is not full is written (--every). */
  readonly everyMs: number;
  /**
   * Whether a file may be made over many turns, from the events another
   * destination of its project reads (file-turn.ts, `feedFiles`): true when
   * its maker holds only the file's bytes so far and one part (NDJSON.gz),
   * never its events.
   */
  readonly fedAsRead: boolean;
  /** A maker of one file of the project's events, in the destination's format. */
  newFile(projectId: string): Promise<FileMaker>;
  writeFile(file: OutgoingFile, signal: AbortSignal): Promise<SendOutcome>;
  close(): Promise<void>;
}

/** What a kind's sender is: batches to send, or files to write. */
export type DestinationSender = DeliverySender | FileSender;

export const writesFiles = (s: DestinationSender): s is FileSender => 'writeFile' in s;

// ---- kinds ------------------------------------------------------------------------

/**
 * A kind of destination: a folder of src/destinations/ that declares it, and
 * one line of its registry. The domain, the console's form and the CLI's
 * flags know a kind only through this: its fields, how its config is checked
 * and shown, and its sender.
 * docs/design.md, "Adding a destination kind", says what each member is for.
 */
export interface DestinationKind {
  /** What `--kind` and the console's Kind name it; kept in each destination's row, so never renamed. */
  readonly name: string;
  /** Where it delivers, said after "send a project's stored track events " ("to a queue"). */
  readonly about: string;
  /**
   * What a destination of the kind is configured with, in the order the form
   * and the flags show them. The first that may be shown (a URL, masked)
   * says where it delivers, in listings and the log.
   */
  readonly fields: readonly DestinationField[];
  /** What Inlet makes for a destination when it is made (a signing key): kept in its config, shown once. */
  readonly made: readonly MadeField[];
  /** The heading of its section in docs/destinations.md (a test checks it is there). */
  readonly docs: string;
  /** The flags of its fields in an example of `inlet destination create` ("--url https://hooks.example.com/inlet"). */
  readonly example: string;
  /**
   * The config from the values given, by field name (absent: not given),
   * checked and normalised; or why it may not be made, as the person who
   * typed it should read it. Sees only its own fields: a value given for
   * another kind's field is refused after these are checked.
   */
  configure(given: Readonly<Record<string, string | undefined>>): { ok: true; config: DestinationConfig } | { ok: false; error: string };
  /** Whether its events would come to this server itself (back as requests, or failing for ever); absent: never. */
  pointsAtSelf?(config: DestinationConfig, self: SelfAddress): boolean;
  /** Checked before it is kept, sending no event (an address judged, a connection made): null when it may be made, else why not. */
  check(config: DestinationConfig, reach: DestinationReach): Promise<string | null>;
  /**
   * 'files' for a kind that writes files of many events (object storage):
   * its sender is a FileSender, and each file is planned (FilePlan) before
   * it is written. Absent: batches, sent by a DeliverySender.
   */
  readonly writes?: 'files';
  /** A sender to it; what it opens is closed by the sender's close. */
  sender(config: DestinationConfig, reach: DestinationReach): DestinationSender;
}

/** A field of a kind's config, declared once: the console's form and the CLI's flags are made from it. */
export interface DestinationField {
  /** Its key in the config, and the name of its input in the console's form. */
  name: string;
  /** The label of its input. */
  label: string;
  /** What to give, for this kind: the CLI's help and the form's hint. */
  help: string;
  /** The CLI's option, as commander spells it ("--table <name>"); kinds that share a field share its flag. */
  flag: string;
  required: boolean;
  /**
   * A secret value (a URL that may hold a password) is never typed back into
   * a form, and shown only as `mask` writes it: not at all without one.
   */
  secret: boolean;
  mask?: (value: string) => string;
  /** The only values it takes (a format): the form offers them to pick from, the CLI refuses others. */
  choices?: readonly string[];
}

/** A value Inlet makes when a destination is made: a random key, kept in the config and shown in the answer to its creation only. */
export interface MadeField {
  name: string;
  /** What the value starts with (whsec_...): it says what a value is wherever it is pasted. */
  prefix: string;
  /** What it is called when shown ("signing secret"). */
  label: string;
  /** What to do with it, said when it is shown. */
  use: string;
  /** Makes a new value (it starts with `prefix`); absent: the prefix and 32 random letters and digits. */
  make?: () => string;
}

/**
 * Where a rotated made value keeps the value it replaced, and until when
 * (epoch ms, as text) that one still counts: both in the config, beside it.
 */
export const previousName = (made: string): string => `previous_${made}`;
export const previousUntilName = (made: string): string => `previous_${made}_until`;

/** The kinds a server knows, in the order they are offered: handed in by the composition root (src/destinations/registry.ts). */
export type DestinationKinds = readonly DestinationKind[];

/** The kind named `name`, if there is one. */
export const kindNamed = (kinds: DestinationKinds, name: string): DestinationKind | undefined => kinds.find((k) => k.name === name);

/** Where this server answers: its base URL, and the port it listens on (reached as localhost or any local address). */
export interface SelfAddress {
  baseUrl: string | null;
  port: number | null;
}

/** What destinations may reach, as the operator set it (src/destinations/reach.ts guards it). */
export interface DestinationReach {
  /** INLET_DESTINATIONS_ALLOW_PRIVATE: every address may be reached but this server's own port. */
  allowPrivate: boolean;
  /** The store's PostgreSQL database (INLET_DATABASE_URL): never a destination, whatever allowPrivate says. Null on the embedded store. */
  ownDatabaseUrl: string | null;
  /** The port this server answers on, when known: a local address on it is this server itself. */
  selfPort: number | null;
  /** Host names to addresses; dns.lookup when absent. */
  resolve?: (host: string) => Promise<dns.LookupAddress[]>;
}
