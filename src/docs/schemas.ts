/**
 * JSON Schema (2020-12, as OpenAPI 3.1 uses it) of the request and of every
 * answer body. The enums of codes come straight from the error table.
 */
import { DROP_REASONS, ITEM_ERRORS, REQUEST_ERRORS } from '../errors/codes.js';
import { INSERT_ID, PERSON_ID, SESSION_ID } from '../domain/items/fields/ids.js';
import { ITEM_TYPES, KINDS, typesListed } from '../domain/ingest/item.js';
import type { Schema, SchemaKit } from '../domain/items/kind.js';
import { MAX_ERRORS_PER_ITEM } from '../domain/items/fields/field-error.js';
import { acceptedDollarKeys, enrichmentKeys } from './dollar-keys.js';
import {
  FUTURE_MINUTES,
  MAX_INSERT_ID_LENGTH,
  MAX_ITEMS,
  MAX_KEY_LENGTH,
  MAX_NAME_LENGTH,
  MAX_PROPERTY_BYTES,
  MAX_PROPERTY_DEPTH,
  MAX_PROPERTY_KEYS,
  PAST_DAYS,
} from './facts.js';

/** A JSON Schema object (declared with the item types, which write theirs). */
export type { Schema };

/** A reference to a component schema. */
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

const REQUEST_ID: Schema = { type: 'string', description: 'Identifies the request for support; equal to the Request-Id header.', examples: ['req_3fZ9aQ1xLm0bT7Kc'] };

function batchRequest(): Schema {
  return {
    type: 'object',
    required: ['items'],
    properties: {
      items: { type: 'array', minItems: 1, maxItems: MAX_ITEMS, items: ref('Item') },
    },
    description: 'Fields other than items are ignored, and listed in dropped_keys of a validate=true answer.',
    examples: [{ items: [{ event: 'invoice_paid', distinct_id: 'usr_1042', insert_id: 'inv_88213_paid', properties: { $revenue: 49, $currency: 'EUR' } }] }],
  };
}

// A JSON null in an optional field is read as the field left out (check-item.ts), so each optional field allows it.
const orNull = (schema: Schema): Schema => ({ anyOf: [schema, { type: 'null' }] });

const ITEM_DESCRIPTION =
  'A JSON null in an optional field is read as the field left out; unknown fields are ignored. Lengths count Unicode code points.';

/** The fields both kinds of item share, each as the server reads it. */
function commonFields(): Record<string, Schema> {
  return {
    anonymous_id: orNull({ type: 'string', pattern: PERSON_ID.source, description: 'A browser person key; the event belongs to that person.' }),
    session_id: orNull({ type: 'string', pattern: SESSION_ID.source, description: 'A browser session to join. Without it the event is part of the person\'s server session, which session counts leave out.' }),
    insert_id: orNull({
      type: 'string',
      pattern: INSERT_ID.source,
      maxLength: MAX_INSERT_ID_LENGTH,
      description: 'Idempotency key, unique per source: an item whose insert_id is already stored is answered as a duplicate and not stored again.',
    }),
    timestamp: {
      description: `When it happened, ${PAST_DAYS} days back to ${FUTURE_MINUTES} minutes ahead of the server clock. Defaults to arrival.`,
      oneOf: [
        { type: 'string', format: 'date-time', description: 'ISO 8601 with a date, a time and an offset (Z or ±hh:mm).' },
        { type: 'integer', minimum: 0, description: 'Milliseconds since the Unix epoch.' },
        { type: 'null' },
      ],
    },
    properties: orNull(ref('Properties')),
    context: orNull({
      type: 'object',
      description: 'Read only for plan_version, on a source that checks a tracking plan (docs/plans.md); not stored.',
      properties: {
        plan_version: {
          type: 'integer',
          minimum: 1,
          description: "The version of the event's rule in the source's tracking plan the item was written to (default: the highest). One the event's rules do not have is a plan_violation at context.plan_version.",
        },
      },
    }),
  };
}

const nameSchema = (description: string): Schema => ({ type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH, description });
const DISTINCT_ID = 'Your own user id. No control characters and no placeholders such as "undefined", "null" or "0".';

/** What each item type (src/domain/items) writes its schema with. */
const KIT: SchemaKit = {
  ref,
  orNull,
  name: nameSchema,
  common: commonFields,
  // What a type does not read: ignored, unchecked, and listed in a dry run's dropped_keys.
  ignored: (what) => ({ description: `Ignored on ${what}, whatever it holds.` }),
  itemDescription: ITEM_DESCRIPTION,
  distinctId: DISTINCT_ID,
};

function item(): Schema {
  return {
    description: `One ${typesListed((t) => t, 'or')}, told apart by "type". ${ITEM_DESCRIPTION}`,
    oneOf: ITEM_TYPES.map((t) => ref(KINDS[t].schemaName)),
  };
}

/** Each item type's schema, under its component name, in the registry's order. */
function itemSchemas(): Record<string, Schema> {
  return Object.fromEntries(ITEM_TYPES.map((t) => [KINDS[t].schemaName, KINDS[t].schema(KIT)]));
}

function properties(): Schema {
  return {
    type: 'object',
    maxProperties: MAX_PROPERTY_KEYS,
    propertyNames: { maxLength: MAX_KEY_LENGTH },
    description:
      `Event properties, or the person's traits on identify. After normalisation: at most ${MAX_PROPERTY_KEYS} top-level keys, keys of at most ${MAX_KEY_LENGTH} characters at every depth, ` +
      `nesting depth at most ${MAX_PROPERTY_DEPTH} (this object is level 1), at most ${MAX_PROPERTY_BYTES} bytes as UTF-8 JSON, ` +
      'integers within ±(2^53−1). Only the "$" keys listed here are accepted; these are removed silently: ' +
      `${enrichmentKeys().join(', ')}. Any other "$" key is refused with reserved_property.`,
    properties: Object.fromEntries(acceptedDollarKeys().map((k) => [k.key, { ...k.schema, description: k.note }])),
  };
}

function itemError(): Schema {
  return {
    type: 'object',
    required: ['index', 'code', 'field', 'message'],
    properties: {
      index: { type: 'integer', minimum: 0, description: 'Position of the item in items.' },
      code: { type: 'string', enum: Object.keys(ITEM_ERRORS), description: 'Stable; see the reference page for each.' },
      field: { type: 'string', description: 'Path inside the item, such as "event" or "properties.$currency"; "item" when the item is not an object.', examples: ['properties.$currency'] },
      message: { type: 'string', description: 'What to change. Wording may change; match on code.' },
      more_errors: {
        type: 'integer',
        minimum: 1,
        description: `Only on the last error listed for an item with more than ${MAX_ERRORS_PER_ITEM}: how many more it has, not listed (the first ${MAX_ERRORS_PER_ITEM} in field order are).`,
      },
    },
  };
}

const dropReasons = (): string[] => Object.keys(DROP_REASONS);

function droppedItem(): Schema {
  return {
    type: 'object',
    required: ['index', 'reason'],
    properties: {
      index: { type: 'integer', minimum: 0 },
      reason: { type: 'string', enum: dropReasons() },
    },
  };
}

/** The answer's warnings: present only when the source observes a tracking plan (docs/plans.md). */
const WARNINGS: Schema = {
  type: 'array',
  items: ref('ItemError'),
  description:
    'Present only when the source observes a tracking plan: the items kept that the plan faults (unplanned_event, plan_violation), each as an error would name it; empty when none is. See docs/plans.md.',
};

function batchAnswer(): Schema {
  return {
    type: 'object',
    required: ['accepted', 'dropped', 'errors', 'duplicates', 'request_id'],
    properties: {
      accepted: { type: 'integer', minimum: 0, description: 'Items kept, repeats of a stored insert_id included.' },
      dropped: { type: 'array', items: ref('DroppedItem'), description: 'Valid items not stored because of a policy.' },
      errors: { type: 'array', items: ref('ItemError'), description: 'Refused items, one entry per field at fault.' },
      duplicates: { type: 'array', items: { type: 'integer', minimum: 0 }, description: 'Indices of items whose insert_id was already stored.' },
      warnings: WARNINGS,
      request_id: REQUEST_ID,
    },
  };
}

function dryRunItem(): Schema {
  return {
    type: 'object',
    required: [
      'index', 'type', 'outcome', 'reason', 'event_id', 'event', 'distinct_id', 'anonymous_id', 'person', 'session', 'insert_id', 'timestamp', 'properties', 'enrichment', 'dropped_keys',
      'group', 'alias', 'set_once', 'unset',
    ],
    properties: {
      index: { type: 'integer', minimum: 0 },
      type: { type: 'string', enum: [...ITEM_TYPES] },
      outcome: { type: 'string', enum: ['accepted', 'duplicate', 'dropped'] },
      reason: orNull({ type: 'string', enum: dropReasons() }),
      event_id: orNull({ type: 'string', description: 'The id the event would be stored under.' }),
      event: orNull({ type: 'string' }),
      distinct_id: orNull({ type: 'string' }),
      anonymous_id: orNull({ type: 'string' }),
      person: orNull({
        type: 'object',
        required: ['id', 'new'],
        properties: { id: { type: 'string' }, new: { type: 'boolean', description: 'Whether the person would be created.' } },
      }),
      session: orNull({
        type: 'object',
        required: ['id', 'server_session'],
        properties: { id: orNull({ type: 'string' }), server_session: { type: 'boolean' } },
      }),
      insert_id: orNull({ type: 'string' }),
      timestamp: { type: 'string', format: 'date-time', description: 'As it would be stored, in UTC.' },
      properties: { type: 'object', description: 'Properties or traits after normalisation.' },
      enrichment: { type: 'object', description: 'What the server would add, such as $source_id and what $user_agent yields.' },
      dropped_keys: { type: 'array', items: { type: 'string' }, description: 'Paths of what was sent but would not be stored.' },
      group: orNull({
        type: 'object',
        required: ['group_type', 'group_key', 'new'],
        description: 'On a group item: the group, and whether it would be made.',
        properties: { group_type: { type: 'string' }, group_key: { type: 'string' }, new: { type: 'boolean' } },
      }),
      alias: orNull({
        type: 'object',
        required: ['previous_id', 'effect'],
        description: 'On an alias item: linked (an id gets a person), merged (two persons become one) or none (already one person).',
        properties: { previous_id: { type: 'string' }, effect: { type: 'string', enum: ['linked', 'merged', 'none'] } },
      }),
      set_once: orNull({ type: 'object', description: 'On an identify: its set_once, as it would be applied.' }),
      unset: orNull({ type: 'array', items: { type: 'string' }, description: 'On an identify: its unset, as it would be applied.' }),
    },
  };
}

function dryRunAnswer(): Schema {
  return {
    type: 'object',
    required: ['items', 'errors', 'dropped_keys', 'request_id'],
    properties: {
      items: { type: 'array', items: ref('DryRunItem'), description: 'One entry per valid item.' },
      errors: { type: 'array', items: ref('ItemError') },
      dropped_keys: { type: 'array', items: { type: 'string' }, description: 'Top-level body fields other than items, which are ignored.' },
      warnings: WARNINGS,
      request_id: REQUEST_ID,
    },
  };
}

/** The error envelope whose code is one of `codes`: all request codes for the component, one status's codes for its response. */
export function errorEnvelope(codes: readonly string[] = Object.keys(REQUEST_ERRORS)): Schema {
  return {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'docs_url', 'request_id'],
        properties: {
          code: { type: 'string', enum: [...codes] },
          message: { type: 'string', description: 'What to change. Wording may change; match on code.' },
          docs_url: { type: 'string', format: 'uri', description: 'The section of the reference page for this code.' },
          request_id: REQUEST_ID,
          errors: { type: 'array', items: ref('ItemError'), description: 'Only with all_items_invalid and strict_item_invalid: the refused items.' },
        },
      },
    },
  };
}

/** Every component schema of the OpenAPI document, by name. */
export function componentSchemas(): Record<string, Schema> {
  return {
    BatchRequest: batchRequest(),
    Item: item(),
    ...itemSchemas(),
    Properties: properties(),
    BatchAnswer: batchAnswer(),
    DryRunAnswer: dryRunAnswer(),
    DryRunItem: dryRunItem(),
    ItemError: itemError(),
    DroppedItem: droppedItem(),
  };
}
