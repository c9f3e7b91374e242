import { isPlainObject } from '../items/fields/text.js';
import { type PlanRule, PlanRefused } from './rules.js';

/** Segment's rule types Inlet has no item for: left out of an import, and named. */
const NOT_IMPORTED = new Set(['PAGE', 'SCREEN', 'COMMON']);

/**
 * A Segment Protocols tracking plan, as its Public API returns its rules
 * (`{"data": {"rules": [...]}}`, or `{"rules": [...]}`), as Inlet's rules: a
 * TRACK rule's `properties.properties` becomes the event's schema, an
 * IDENTIFY's `properties.traits` the identify rule's and a GROUP's the group
 * type's (its key). What Inlet has no item for (PAGE, SCREEN, COMMON) and a
 * GROUP without a key are left out, and listed in `skipped`.
 */
export function fromSegment(file: unknown): { rules: PlanRule[]; skipped: string[] } {
  const list = isPlainObject(file) && isPlainObject(file.data) ? file.data.rules : isPlainObject(file) ? file.rules : undefined;
  if (!Array.isArray(list)) throw new PlanRefused('The file must be a Segment tracking plan\'s rules as its Public API returns them: {"data": {"rules": [...]}} or {"rules": [...]}.');
  const rules: PlanRule[] = [];
  const skipped: string[] = [];
  list.forEach((raw: unknown, at: number) => {
    if (!isPlainObject(raw)) throw new PlanRefused(`Segment rule ${at + 1} is not an object.`);
    const type = typeof raw.type === 'string' ? raw.type.toUpperCase() : '';
    const key = typeof raw.key === 'string' && raw.key !== '' ? raw.key : null;
    const version = Number.isSafeInteger(raw.version) && (raw.version as number) >= 1 ? { version: raw.version as number } : {};
    const schema = isPlainObject(raw.jsonSchema) ? raw.jsonSchema : {};
    if (type === 'TRACK') {
      if (key === null) throw new PlanRefused(`Segment rule ${at + 1} (TRACK) has no "key": the event it plans.`);
      rules.push({ type: 'track', event: key, json_schema: part(schema, 'properties'), ...version });
    } else if (type === 'IDENTIFY') {
      rules.push({ type: 'identify', json_schema: part(schema, 'traits'), ...version });
    } else if (type === 'GROUP' && key !== null) {
      rules.push({ type: 'group', group_type: key, json_schema: part(schema, 'traits'), ...version });
    } else if (NOT_IMPORTED.has(type) || type === 'GROUP') {
      skipped.push(`rule ${at + 1} (${type}${key === null ? '' : ` "${key}"`})`);
    } else {
      throw new PlanRefused(`Segment rule ${at + 1} has type "${String(raw.type)}"; TRACK, IDENTIFY, GROUP, PAGE, SCREEN and COMMON are known.`);
    }
  });
  return { rules, skipped };
}

/**
 * The schema of the message's `properties` (or `traits`) inside a rule's
 * schema of the whole message, with what it may refer to at the top
 * (`$schema`, `definitions`, `$defs`) carried along.
 */
function part(schema: Record<string, unknown>, name: 'properties' | 'traits'): Record<string, unknown> {
  const props = isPlainObject(schema.properties) ? schema.properties : {};
  const inner: Record<string, unknown> = isPlainObject(props[name]) ? { ...props[name] } : { type: 'object' };
  for (const key of ['$schema', 'definitions', '$defs'] as const) {
    if (Object.hasOwn(schema, key) && !Object.hasOwn(inner, key)) inner[key] = schema[key];
  }
  return inner;
}
