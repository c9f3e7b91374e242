import { isPlainObject } from '../items/fields/text.js';

/** One rule of a plan version: the schema of one event's properties, of identify traits, or of one group type's traits. */
export type PlanRule =
  | { type: 'track'; event: string; json_schema: Record<string, unknown>; version?: number }
  | { type: 'identify'; json_schema: Record<string, unknown>; version?: number }
  | { type: 'group'; group_type: string; json_schema: Record<string, unknown>; version?: number };

/** How a source applies its plan. */
export type PlanMode = 'off' | 'observe' | 'enforce';
export const PLAN_MODES: readonly PlanMode[] = ['off', 'observe', 'enforce'];
export type UnplannedEvents = 'allow' | 'refuse';

/** Rules a version holds at most: a plan of every event a product sends, and room to spare. */
export const MAX_RULES = 2000;
/** A rule's schema as JSON, at most. */
export const MAX_SCHEMA_BYTES = 64 * 1024;

/** A fault of a pushed file, naming the rule (its place in `rules`, and its event or type) and why. */
export class PlanRefused extends Error {}

/** What names a rule in a refusal: "rule 3 (track "order_completed")". */
export function ruleName(rule: { type?: unknown; event?: unknown; group_type?: unknown }, at: number): string {
  const what = rule.type === 'track' ? ` "${String(rule.event)}"` : rule.type === 'group' ? ` "${String(rule.group_type)}"` : '';
  return `rule ${at + 1} (${String(rule.type)}${what})`;
}

/** The key a rule is found by in a version: one per event, one identify, one per group type (and per rule version). */
export function ruleKey(rule: PlanRule): string {
  const v = rule.version === undefined ? '' : `@${rule.version}`;
  if (rule.type === 'track') return `track:${rule.event}${v}`;
  if (rule.type === 'group') return `group:${rule.group_type}${v}`;
  return `identify${v}`;
}

/**
 * A file of rules as `inlet plan push` reads it, `{"rules": [...]}`, its shape
 * checked (not yet its schemas: compile.ts does that). Refuses what it cannot
 * take, naming the rule and why.
 */
export function readRules(file: unknown): PlanRule[] {
  if (!isPlainObject(file) || !Array.isArray(file.rules)) throw new PlanRefused('The file must be a JSON object with a "rules" array, such as {"rules": [{"type": "track", "event": "signed_up", "json_schema": {"type": "object"}}]}.');
  if (file.rules.length > MAX_RULES) throw new PlanRefused(`The plan has ${file.rules.length} rules; at most ${MAX_RULES} are allowed.`);
  const seen = new Set<string>();
  return file.rules.map((raw: unknown, at: number) => {
    if (!isPlainObject(raw)) throw new PlanRefused(`rule ${at + 1} is not an object.`);
    const name = ruleName(raw, at);
    const rule = ruleOf(raw, name);
    const key = ruleKey(rule);
    if (seen.has(key)) throw new PlanRefused(`${name} repeats an earlier rule for the same ${rule.type === 'track' ? 'event' : rule.type === 'group' ? 'group type' : 'identify'}${rule.version === undefined ? '' : ' and version'}.`);
    seen.add(key);
    return rule;
  });
}

function ruleOf(raw: Record<string, unknown>, name: string): PlanRule {
  const schema = raw.json_schema;
  if (!isPlainObject(schema)) throw new PlanRefused(`${name}: "json_schema" must be a JSON Schema object.`);
  const version = raw.version;
  if (version !== undefined && !(Number.isSafeInteger(version) && (version as number) >= 1)) throw new PlanRefused(`${name}: "version" must be a whole number from 1.`);
  const v = version === undefined ? {} : { version: version as number };
  switch (raw.type) {
    case 'track':
      if (typeof raw.event !== 'string' || raw.event === '') throw new PlanRefused(`${name}: a track rule names its "event".`);
      return { type: 'track', event: raw.event, json_schema: schema, ...v };
    case 'identify':
      return { type: 'identify', json_schema: schema, ...v };
    case 'group':
      if (typeof raw.group_type !== 'string' || raw.group_type === '') throw new PlanRefused(`${name}: a group rule names its "group_type".`);
      return { type: 'group', group_type: raw.group_type, json_schema: schema, ...v };
    default:
      throw new PlanRefused(`${name}: "type" must be "track", "identify" or "group".`);
  }
}

/** What changed from one version's rules to the next, by rule key. */
export interface RuleChanges {
  added: string[];
  changed: string[];
  removed: string[];
}

/** The rules added, changed (another schema) and removed between two versions, each named by its key. */
export function diffRules(from: PlanRule[], to: PlanRule[]): RuleChanges {
  const before = new Map(from.map((r) => [ruleKey(r), JSON.stringify(r.json_schema)]));
  const after = new Map(to.map((r) => [ruleKey(r), JSON.stringify(r.json_schema)]));
  const changes: RuleChanges = { added: [], changed: [], removed: [] };
  for (const [key, schema] of after) {
    if (!before.has(key)) changes.added.push(key);
    else if (before.get(key) !== schema) changes.changed.push(key);
  }
  for (const key of before.keys()) if (!after.has(key)) changes.removed.push(key);
  return changes;
}
