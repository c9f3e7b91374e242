import { type FieldError, MAX_ERRORS_PER_ITEM } from './field-error.js';
import { ACCEPTED_DOLLAR_KEYS, ENRICHMENT_KEYS } from './reserved-properties.js';
import { MAX_KEY_LENGTH, isStorableNumber, isStorableText, keyFault } from '../../storable.js';
import { describeJson, isPlainObject } from './text.js';
import { cutText, echoed, quoted } from '../../echo.js';

export const MAX_PROPERTY_KEYS = 255;
export const MAX_PROPERTY_DEPTH = 5;
export const MAX_PROPERTY_BYTES = 8192;

export type JsonObject = Record<string, unknown>;

/** The properties of an item once normalised, and what normalisation took out. */
export interface NormalisedProperties {
  properties: JsonObject;
  /** The raw $user_agent, parsed by enrichment and never stored. */
  userAgent: string | null;
  /** `$insert_id`, which stands for insert_id when that field is absent. */
  insertId: string | null;
  /** Paths of keys that will not be stored ("properties.$lib"). */
  droppedKeys: string[];
  /** `properties` as JSON text, once they passed every check. */
  json: string | null;
  /** Faults of `$` keys found once the item had MAX_ERRORS_PER_ITEM errors already: counted, not made. */
  unlisted: number;
}

/**
 * Normalises then checks an item's properties (or an identify's traits).
 * Every fault is pushed to `errors`; the result is meaningful only when none was.
 */
export function normaliseProperties(raw: unknown, recordIp: boolean, errors: FieldError[]): NormalisedProperties {
  const out: NormalisedProperties = { properties: {}, userAgent: null, insertId: null, droppedKeys: [], json: null, unlisted: 0 };
  if (raw === undefined) {
    out.json = '{}';
    return out;
  }
  if (!isPlainObject(raw)) {
    errors.push({ code: 'invalid_properties', field: 'properties', message: `"properties" must be a JSON object, not ${describeJson(raw)}.` });
    return out;
  }
  let removed: Set<string> | null = null;
  for (const key of Object.keys(raw)) {
    if (key.charCodeAt(0) === 36 /* $ */ && !dollarKeyStays(key, raw[key], recordIp, out, errors)) {
      (removed ??= new Set()).add(key);
    }
  }
  // Object.fromEntries keeps a "__proto__" key as data instead of setting the prototype.
  out.properties = removed === null ? raw : Object.fromEntries(Object.entries(raw).filter(([k]) => !removed.has(k)));
  out.json = checkShape(out.properties, errors);
  return out;
}

/** Whether an accepted, well-formed `$` key is stored; side effects record why not. */
function dollarKeyStays(key: string, value: unknown, recordIp: boolean, out: NormalisedProperties, errors: FieldError[]): boolean {
  if (ENRICHMENT_KEYS.has(key)) {
    out.droppedKeys.push(`properties.${key}`);
    return false;
  }
  const check = ACCEPTED_DOLLAR_KEYS.get(key);
  const problem = check === undefined ? null : check(value);
  if (check === undefined || problem !== null) {
    // Past the cap the item is refused already: its other faults are counted, no message or path made for each.
    if (errors.length >= MAX_ERRORS_PER_ITEM) out.unlisted++;
    else errors.push(dollarKeyError(key, problem));
    return false;
  }
  if (key === '$user_agent') {
    out.userAgent = value as string;
    out.droppedKeys.push(`properties.${key}`);
    return false;
  }
  if (key === '$ip' && !recordIp) {
    out.droppedKeys.push(`properties.${key}`);
    return false;
  }
  if (key === '$insert_id') out.insertId = value as string;
  return true;
}

/** The fault of a `$` key: not accepted at all (no `problem`), or accepted with a value of the wrong form. */
function dollarKeyError(key: string, problem: string | null): FieldError {
  // Only a refused key's path can be long: ENRICHMENT_KEYS and ACCEPTED_DOLLAR_KEYS hold short names.
  const field = `properties.${echoed(key)}`;
  if (problem !== null) return { code: 'invalid_reserved_property', field, message: problem };
  return { code: 'reserved_property', field, message: `${quoted(key)} is a reserved property name. Rename it without the leading "$".` };
}

/**
 * Key count, then depth, exact numbers and storable strings, then size (docs/design.md, "Validation"): first fault wins.
 * Returns the JSON text it measured when there was no fault.
 */
function checkShape(props: JsonObject, errors: FieldError[]): string | null {
  const count = Object.keys(props).length;
  if (count > MAX_PROPERTY_KEYS) {
    errors.push({
      code: 'too_many_properties',
      field: 'properties',
      message: `"properties" has ${count} keys; at most ${MAX_PROPERTY_KEYS} are allowed. Nest related values in an object or drop some.`,
    });
    return null;
  }
  const fault = findFault(props, 1);
  if (fault !== null) {
    errors.push({ code: 'invalid_properties', field: 'properties', message: fault });
    return null;
  }
  const json = JSON.stringify(props);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_PROPERTY_BYTES) {
    errors.push({
      code: 'properties_too_large',
      field: 'properties',
      message: `"properties" is ${bytes} bytes of JSON; at most ${MAX_PROPERTY_BYTES} are allowed. Send large values elsewhere and keep a reference.`,
    });
    return null;
  }
  return json;
}

/** The first fault of a value at `depth` (the properties object is 1): depth, then what a store can keep. */
function findFault(value: unknown, depth: number): string | null {
  if (typeof value === 'string') {
    return isStorableText(value) ? null : 'A string in "properties" holds U+0000 or a lone surrogate; remove it.';
  }
  if (typeof value === 'number') {
    return isStorableNumber(value) ? null : 'A number in "properties" is too large to keep exactly (beyond ±9007199254740991); send it as a string.';
  }
  if (typeof value !== 'object' || value === null) return null;
  if (depth > MAX_PROPERTY_DEPTH) {
    return `"properties" is nested deeper than ${MAX_PROPERTY_DEPTH} levels; flatten it.`;
  }
  if (Array.isArray(value)) {
    for (const v of value) {
      const f = findFault(v, depth + 1);
      if (f !== null) return f;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value)) {
    const bad = keyFault(k);
    if (bad?.kind === 'text') return 'A key in "properties" holds U+0000 or a lone surrogate; rename it.';
    if (bad?.kind === 'length') {
      return `A key in "properties" (starting "${cutText(k, 20)}") has ${bad.length} characters; keys may have at most ${MAX_KEY_LENGTH}. Shorten it.`;
    }
    const f = findFault(v, depth + 1);
    if (f !== null) return f;
  }
  return null;
}
