import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { RE2JS } from 're2js';
import { boundKeywords, inPlaceCycle } from './bounded.js';
import { MAX_SCHEMA_BYTES, type PlanRule, PlanRefused, ruleName } from './rules.js';

// ajv-formats is CommonJS: its default export is the function under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const DRAFT_07 = new Set(['http://json-schema.org/draft-07/schema', 'http://json-schema.org/draft-07/schema#']);
const DRAFT_2020 = new Set(['https://json-schema.org/draft/2020-12/schema', 'https://json-schema.org/draft/2020-12/schema#']);
const FORMATS = ['date-time', 'date', 'email', 'uri', 'uuid'] as const;

/**
 * `pattern` and `patternProperties` run on re2js, a linear-time engine: a
 * schema is a user's data, and a backtracking engine lets one pattern hold a
 * thread for minutes on a 30-character string.
 */
const re2 = Object.assign(
  (pattern: string) => {
    const re = RE2JS.compile(pattern);
    // An unanchored search, as JSON Schema's pattern is; find() is about 2.5 times as fast as test() (0.30 against 0.77 µs on "EUR").
    // ajv keeps one compiled pattern per toString(): each must name its own pattern, or every rule would share the first.
    return { test: (s: string) => re.matcher(s).find(), toString: () => `re2js:${pattern}` };
  },
  { code: 're2js' },
);

const OPTIONS: Options = {
  strict: false,
  allErrors: true,
  // Every reference stays inside the rule's own schema (remote ones are refused before compiling).
  loadSchema: undefined,
  code: { regExp: re2 },
  // Schemas are compiled once per plan version; ajv's own cache would only hold them longer.
  addUsedSchema: false,
  logger: false,
};

/** One rule's validator, and the rule it checks. */
export interface CompiledRule {
  rule: PlanRule;
  validate: ValidateFunction;
}

/** One event's (the identify's, one group type's) rules: the highest version, and each named version by its number. */
export interface RuleVersions {
  /** What an item that names no version (`context.plan_version`) is held to: the highest version, or the rule without one. */
  latest: CompiledRule;
  /** The rules that name a version; a rule without one is never picked by number. */
  byVersion: Map<number, CompiledRule>;
}

/** A plan version, compiled: each event's, the identify's and each group type's rules. */
export interface CompiledPlan {
  track: Map<string, RuleVersions>;
  identify: RuleVersions | null;
  group: Map<string, RuleVersions>;
}

/**
 * Compiles every rule of a version. Throws PlanRefused, naming each rule
 * refused and why (so that one push shows all there is to fix), for a schema
 * over MAX_SCHEMA_BYTES, with `$data` or a reference outside itself, a
 * pattern re2js cannot run, or one ajv cannot compile.
 */
export function compilePlan(rules: PlanRule[]): CompiledPlan {
  const b = new PlanBuilder();
  rules.forEach((rule, at) => b.add(rule, at));
  return b.done();
}

/** A thread's turn given up this often at least while compiling (compilePlanInTurns). */
const TURN_MS = 5;

/**
 * compilePlan, giving up the thread between rules every TURN_MS or so: a rule
 * takes milliseconds to compile and a 50-rule version up to most of a second
 * on a busy machine, which would otherwise hold every body on the thread.
 */
export async function compilePlanInTurns(rules: PlanRule[]): Promise<CompiledPlan> {
  const b = new PlanBuilder();
  let since = performance.now();
  for (const [at, rule] of rules.entries()) {
    b.add(rule, at);
    if (performance.now() - since >= TURN_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    }
  }
  return b.done();
}

/** A version's rules compiled one by one, and those refused. */
class PlanBuilder {
  private readonly plan: CompiledPlan = { track: new Map(), identify: null, group: new Map() };
  private readonly engines: { draft7?: Ajv; draft2020?: Ajv2020 } = {};
  private readonly refused: string[] = [];

  add(rule: PlanRule, at: number): void {
    let validate: ValidateFunction;
    try {
      validate = compileRule(rule, at, this.engines);
    } catch (e) {
      if (!(e instanceof PlanRefused)) throw e;
      this.refused.push(e.message);
      return;
    }
    const compiled = { rule, validate };
    const { plan } = this;
    if (rule.type === 'track') plan.track.set(rule.event, withVersion(plan.track.get(rule.event), compiled));
    else if (rule.type === 'group') plan.group.set(rule.group_type, withVersion(plan.group.get(rule.group_type), compiled));
    else plan.identify = withVersion(plan.identify ?? undefined, compiled);
  }

  done(): CompiledPlan {
    const { refused } = this;
    if (refused.length === 1) throw new PlanRefused(refused[0]);
    if (refused.length > 1) throw new PlanRefused(`${refused.length} rules are refused:\n- ${refused.join('\n- ')}`);
    return this.plan;
  }
}

/** The rules of one event (or identify, or group type) with one more: the highest is the latest, a rule without a version the lowest. */
function withVersion(versions: RuleVersions | undefined, compiled: CompiledRule): RuleVersions {
  const v = compiled.rule.version;
  if (versions === undefined) return { latest: compiled, byVersion: v === undefined ? new Map() : new Map([[v, compiled]]) };
  if (v !== undefined) versions.byVersion.set(v, compiled);
  if ((versions.latest.rule.version ?? 0) < (v ?? 0)) versions.latest = compiled;
  return versions;
}

function compileRule(rule: PlanRule, at: number, engines: { draft7?: Ajv; draft2020?: Ajv2020 }): ValidateFunction {
  const name = ruleName(rule, at);
  const schema = rule.json_schema;
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > MAX_SCHEMA_BYTES) throw new PlanRefused(`${name}: its schema is ${bytes.toLocaleString('en-US')} bytes; at most ${MAX_SCHEMA_BYTES.toLocaleString('en-US')} are allowed.`);
  const dialect = schema.$schema;
  let ajv: Ajv | Ajv2020;
  if (dialect === undefined || (typeof dialect === 'string' && DRAFT_07.has(dialect))) ajv = engines.draft7 ??= withFormats(new Ajv(OPTIONS));
  else if (typeof dialect === 'string' && DRAFT_2020.has(dialect)) ajv = engines.draft2020 ??= withFormats(new Ajv2020(OPTIONS));
  else throw new PlanRefused(`${name}: "$schema" must be draft-07 (http://json-schema.org/draft-07/schema#) or 2020-12 (https://json-schema.org/draft/2020-12/schema), or left out for draft-07.`);
  inspect(schema, name, '');
  const cycle = inPlaceCycle(schema);
  if (cycle !== null) throw new PlanRefused(`${name}: the schema at ${cycle} refers back to itself without stepping into the value, so its check would never end.`);
  try {
    return ajv.compile(schema);
  } catch (e) {
    // A stack overflow on a deeply nested schema is a schema that does not compile, too.
    throw new PlanRefused(`${name}: its schema does not compile: ${(e as Error).message}`);
  }
}

function withFormats<A extends Ajv | Ajv2020>(ajv: A): A {
  addFormats(ajv, [...FORMATS]);
  return boundKeywords(ajv);
}

/** What compiling alone would let through: `$data`, references outside the schema, patterns re2js refuses. */
function inspect(node: unknown, name: string, at: string): void {
  if (Array.isArray(node)) {
    node.forEach((n, i) => inspect(n, name, `${at}/${i}`));
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  for (const [key, value] of Object.entries(node)) {
    const here = `${at}/${key}`;
    if (key === '$data') throw new PlanRefused(`${name}: "$data" (at ${here}) is not taken: a schema's checks must not depend on the item's values.`);
    if ((key === '$ref' || key === '$dynamicRef' || key === '$recursiveRef') && typeof value === 'string' && !value.startsWith('#')) {
      throw new PlanRefused(`${name}: ${key} "${value}" (at ${here}) points outside the schema; only references within it ("#/...") are taken.`);
    }
    if (key === 'pattern' && typeof value === 'string') checkPattern(value, name, here);
    if (key === 'patternProperties' && typeof value === 'object' && value !== null) {
      for (const p of Object.keys(value)) checkPattern(p, name, `${here}/${p}`);
    }
    inspect(value, name, here);
  }
}

function checkPattern(pattern: string, name: string, at: string): void {
  try {
    RE2JS.compile(pattern);
  } catch (e) {
    throw new PlanRefused(`${name}: the pattern at ${at} cannot run in linear time (${(e as Error).message}); write it without backreferences or lookaround.`);
  }
}

/** Violations a message lists at most. */
export const MAX_LISTED = 5;

/** The item's path of one violation: "properties.amount", "properties.items.0.price". */
export function violationPath(base: string, e: ErrorObject): string {
  const parts = e.instancePath === '' ? [] : e.instancePath.slice(1).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  // The property the violation is about, when the instance path stops at its parent.
  if (e.keyword === 'required') parts.push(String(e.params.missingProperty));
  else if (e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties') {
    const extra = e.params.additionalProperty ?? e.params.unevaluatedProperty;
    if (extra !== undefined) parts.push(String(extra));
  }
  return [base, ...parts].join('.');
}

/**
 * A rule's violations as a message: up to MAX_LISTED, each its path, keyword
 * and what the schema expected (ajv's messages say what the schema asks, never
 * what the item holds).
 */
export function violationMessage(base: string, errors: ErrorObject[], what: string): string {
  const listed = errors.slice(0, MAX_LISTED).map((e) => `${violationPath(base, e)}: ${e.keyword} (${e.message ?? 'fails the rule'})`);
  const more = errors.length > MAX_LISTED ? ` ${errors.length - MAX_LISTED} more not listed.` : '';
  return `${what} does not match the tracking plan: ${listed.join('; ')}.${more}`;
}
