import type { ItemErrorCode } from '../../errors/codes.js';
import type { ItemEffect, ItemOutcome } from '../ingest/job.js';
import type { JobAt, Writes } from '../ingest/pass-context.js';
import type { ItemCheck } from './enriched-item.js';
import type { FieldError } from './fields/field-error.js';
import type { JsonObject, NormalisedProperties } from './fields/properties.js';
import type { ImportWindow } from './fields/timestamp.js';

/** Fields every item has, whatever its type. */
export interface CommonFields {
  /** Position in the request. */
  index: number;
  distinctId: string | null;
  anonymousId: string | null;
  sessionId: string | null;
  insertId: string | null;
  /** Epoch ms. */
  timestamp: number;
  /** A track's properties, or the traits an identify sets on a person or a group item on a group (none for an alias). */
  properties: Record<string, unknown>;
  /** `properties` as JSON text: the checks write it as they measure it. */
  propertiesJson: string;
  /** Server-set properties stored with a track event ($source_id, $browser, ...); none for an identify. */
  enrichment: Record<string, unknown>;
}

/**
 * The fields of every item, at run time, in the order they cross between
 * threads (pipeline/item-transfer.ts); `type` and `event` are declared by
 * each type, and every type has them.
 */
export const COMMON_FIELDS = Object.keys({
  index: true, type: true, event: true, distinctId: true, anonymousId: true, sessionId: true, insertId: true, timestamp: true,
  properties: true, propertiesJson: true, enrichment: true,
} satisfies Record<keyof CommonFields | 'type' | 'event', true>) as (keyof CommonFields | 'type' | 'event')[];

/** An item whose own fields are F (and the common fields F does not redeclare). */
export type ItemOf<F extends { type: string; event: string | null }> = Omit<CommonFields, keyof F> & F;

/** An item as answers show it: all of it but what only the store reads. */
export type Shown<I> = Omit<I, 'storedJson'>;

/** The names of an item's fields beyond the common ones, each once (Object.keys of it gives them at run time). */
export type OwnFields<I> = Record<Exclude<keyof I, keyof CommonFields | 'type' | 'event'>, true>;

/** The fields of the batch API most types read, which a type may ignore (`ignores`). */
export type CommonWireField = 'event' | 'anonymous_id' | 'session_id' | 'properties';

/** What the ingest pass reads for an item besides its ids (its part of PassQuery). */
export interface PassReads {
  groups: Map<string, { groupType: string; groupKey: string }>;
}

/** The parts of a dry run's answer (edge/answers.ts) that only some types fill; null where a type leaves one out. */
export interface DryRunParts {
  session?: { id: string | null; server_session: boolean };
  group?: { group_type: string; group_key: string; new: boolean };
  alias?: { previous_id: string; effect: 'linked' | 'merged' | 'none' };
  set_once?: Record<string, unknown> | null;
  unset?: string[] | null;
}

/** A JSON Schema object; kept loose because it is only ever serialised. */
export type Schema = Record<string, unknown>;

/**
 * What the OpenAPI document lends a type to write its schema with
 * (docs/schemas.ts): the domain does not import the docs.
 */
export interface SchemaKit {
  ref(name: string): Schema;
  /** A JSON null in an optional field is read as the field left out, so each optional field allows it. */
  orNull(schema: Schema): Schema;
  /** A name or id under the name rules, with its description. */
  name(description: string): Schema;
  /** The fields most types share (anonymous_id, session_id, insert_id, timestamp, properties, context), each as the server reads it. */
  common(): Record<string, Schema>;
  /** A field the type does not read: ignored, unchecked, and listed in a dry run's dropped_keys. */
  ignored(what: string): Schema;
  /** What every item's description ends with. */
  itemDescription: string;
  /** What distinct_id is, for its description. */
  distinctId: string;
}

/** What the checks of a body's items are told of it (pipeline/check-item.ts). */
export interface ItemContext {
  /** Server clock at arrival, epoch ms. */
  now: number;
  /** Whether the source keeps $ip. */
  recordIp: boolean;
  /** The source the items came to: its id is stored with each event, and it may filter bots. */
  source: { id: string; filterBots: boolean };
  /** Indices of items whose event name an intake set itself (such as $pageview), exempt from the "$" rule. */
  ownEvents?: ReadonlySet<number>;
  /** Set on the historical import endpoint: a timestamp is required, and may go back to the retention. */
  importing?: ImportWindow;
}

/**
 * A type's field checks: what pipeline/check-item.ts asks of an item's own
 * fields, beside the fields most types share, and how it builds the item once
 * no check found a fault. Built of the field rules in fields/.
 */
export interface TypeCheck {
  /**
   * Checks the type's own fields and what it asks of the identity, pushing
   * each fault; a key it reads only to list among those not kept goes to
   * `droppedKeys`.
   */
  own(raw: Record<string, unknown>, errors: FieldError[], droppedKeys: string[], ctx: ItemContext, index: number): void;
  /** What it checks once the properties are (an identify's set_once and unset). */
  more?(raw: Record<string, unknown>, properties: JsonObject, recordIp: boolean, errors: FieldError[]): MoreFields;
  /**
   * The item, in its type's shape, enrichment included: built once, with
   * every field its own checks passed (each checked value is the one sent).
   */
  build(
    raw: Record<string, unknown>,
    index: number,
    distinctId: string | null,
    anonymousId: string | null,
    sessionId: string | null,
    insertId: string | null,
    timestamp: number,
    props: NormalisedProperties,
    droppedKeys: string[],
    more: MoreFields,
    ctx: ItemContext,
  ): ItemCheck;
}

/** What `more` finds: an identify's person operations, the keys it does not keep, and the faults it counted but did not make. */
export interface MoreFields {
  setOnce: JsonObject | null;
  unset: string[] | null;
  droppedKeys: string[];
  unlisted: number;
}

/** What a type without `more` finds: nothing. */
export const NO_MORE: MoreFields = { setOnce: null, unset: null, droppedKeys: [], unlisted: 0 };

/**
 * What an item type declares (docs/design.md, "Adding an item type"). I is
 * the type's item (its internal shape). Members are methods so that a type's
 * kind is one of any type (src/domain/items/registry.ts, `kindOf`).
 */
export interface ItemKind<I extends { type: string }> {
  readonly type: I['type'];
  /**
   * The internal shape's own fields, by name (the compiler holds the names to
   * I); what crosses between threads besides the common fields.
   */
  readonly own: OwnFields<I>;
  /** The batch API's fields it reads, in the order they are checked; any other is listed among the keys not kept. */
  readonly wireFields: readonly string[];
  /** Those of wireFields an item of this type must send (its OpenAPI schema's `required`). */
  readonly requiredFields: readonly string[];
  /** Fields of the common ones it does not read: not checked, and listed among the keys not kept. */
  readonly ignores: readonly CommonWireField[];
  /** Its field checks, and how its item is built once they pass. */
  readonly check: TypeCheck;
  /** Whether it counts against the plan's monthly event limit. */
  readonly metered: boolean;
  /** The codes the store may refuse it with, on what the project holds (none: the store keeps any valid item). */
  readonly storeRefuses: readonly ItemErrorCode[];
  /** Its OpenAPI component's name. */
  readonly schemaName: string;
  /** Its OpenAPI schema. */
  schema(kit: SchemaKit): Schema;
  /** Whether its distinct_id is linked to its person. */
  linksDistinctId(item: I): boolean;
  /** A second user id it names: looked up and suppressed as a distinct_id is, and kept with its samples (an alias's previous_id). */
  otherId(item: Shown<I>): string | null;
  /** What the pass reads for it besides its ids (none when left out). */
  read?(item: I, reads: PassReads): void;
  /** What it writes in the ingest pass, once it is neither suppressed nor a repeat. */
  write(w: Writes, item: I, at: JobAt): ItemOutcome;
  /** Its parts of a dry run's answer. */
  dryRun(item: Shown<I>, effect: ItemEffect | undefined): DryRunParts;
  /** It as the batch API takes it, given the fields most types share (a kept sample is sendable again). */
  sendable(item: Shown<I>, common: Record<string, unknown>): Record<string, unknown>;
}
