import { describe, expect, it } from 'vitest';
import * as compiler from './compile.js';
import { type CompiledPlan, compilePlan } from './compile.js';
import { ReadyPlan } from './check.js';
import { PlanRefused, type UnplannedEvents, diffRules, readRules } from './rules.js';
import type { ShownItem } from '../items/enriched-item.js';

const checkPlanItem = (i: ShownItem, plan: CompiledPlan, unplanned: UnplannedEvents) => new ReadyPlan(compiler, plan, unplanned).check(i, undefined);

const track = (event: string, json_schema: Record<string, unknown>) => ({ type: 'track', event, json_schema });
const refusal = (rules: unknown[]): string => {
  try {
    compilePlan(readRules({ rules }));
  } catch (e) {
    if (e instanceof PlanRefused) return e.message;
    throw e;
  }
  throw new Error('compiled');
};
const item = (event: string, properties: Record<string, unknown>) => ({ index: 0, type: 'track', event, properties }) as unknown as ShownItem;

describe('a push is refused, naming the rule and why', () => {
  it('for a file that is not rules, a repeated rule, a rule without its event', () => {
    expect(() => readRules({ rule: [] })).toThrow(/"rules" array/);
    expect(() => readRules({ rules: [track('a', {}), track('a', {})] })).toThrow(/rule 2 \(track "a"\) repeats/);
    expect(() => readRules({ rules: [{ type: 'track', json_schema: {} }] })).toThrow(/rule 1 .*names its "event"/);
    expect(() => readRules({ rules: [{ type: 'page', json_schema: {} }] })).toThrow(/"type" must be/);
  });

  it('for a schema that does not compile, $data, a remote $ref, an unknown $schema, over 64 KiB', () => {
    expect(refusal([track('ok', {}), track('bad', { type: 'nope' })])).toMatch(/^rule 2 \(track "bad"\): its schema does not compile/);
    expect(refusal([track('a', { properties: { max: { type: 'number' }, n: { maximum: { $data: '1/max' } } } })])).toMatch(/rule 1 \(track "a"\): "\$data"/);
    expect(refusal([track('a', { $ref: 'https://example.com/schema.json' })])).toMatch(/points outside the schema/);
    expect(refusal([track('a', { properties: { x: { $ref: 'other.json#/x' } } })])).toMatch(/points outside the schema/);
    expect(refusal([track('a', { $schema: 'http://json-schema.org/draft-04/schema#' })])).toMatch(/"\$schema" must be draft-07/);
    expect(refusal([track('a', { enum: Array.from({ length: 9000 }, (_, i) => `value-${i}`) })])).toMatch(/at most 65,536 are allowed/);
  });

  it('for a pattern a linear-time engine cannot run: a backreference, lookaround', () => {
    expect(refusal([track('a', { properties: { s: { type: 'string', pattern: '^(a)\\1$' } } })])).toMatch(/pattern at \/properties\/s\/pattern cannot run in linear time/);
    expect(refusal([track('a', { patternProperties: { '^(?=x)': {} } })])).toMatch(/cannot run in linear time/);
  });

  it('naming every rule refused, so that one push shows all there is to fix', () => {
    const text = refusal([track('a', { properties: { s: { pattern: '^(a)\\1$' } } }), track('ok', {}), track('b', { $ref: 'https://example.com/x.json' })]);
    expect(text).toMatch(/^2 rules are refused:\n- rule 1 \(track "a"\): the pattern .* cannot run in linear time.*\n- rule 3 \(track "b"\): .*points outside the schema/s);
  });
});

describe('rules that compile', () => {
  it('take draft-07 and 2020-12 with the named formats, and internal references', () => {
    const plan = compilePlan(readRules({
      rules: [
        track('a', { definitions: { money: { type: 'number' } }, properties: { amount: { $ref: '#/definitions/money' }, at: { format: 'date-time' }, id: { format: 'uuid' } } }),
        track('b', { $schema: 'https://json-schema.org/draft/2020-12/schema', $defs: { e: { format: 'email' } }, properties: { mail: { $ref: '#/$defs/e' }, site: { format: 'uri' }, day: { format: 'date' } } }),
      ],
    }));
    expect(checkPlanItem(item('a', { amount: 1, at: '2026-01-02T03:04:05Z', id: '0190a6f0-0000-7000-8000-000000000001' }), plan, 'refuse')).toBeNull();
    expect(checkPlanItem(item('a', { amount: '1' }), plan, 'refuse')).toMatchObject({ code: 'plan_violation', field: 'properties.amount' });
    expect(checkPlanItem(item('a', { at: 'yesterday' }), plan, 'refuse')).toMatchObject({ field: 'properties.at' });
    expect(checkPlanItem(item('b', { mail: 'a@b.example', site: 'https://x.example/', day: '2026-01-02' }), plan, 'refuse')).toBeNull();
    expect(checkPlanItem(item('b', { mail: 'not-an-address' }), plan, 'refuse')).toMatchObject({ field: 'properties.mail' });
  });

  it('hold each rule to its own pattern, however many patterns a version has', () => {
    const plan = compilePlan(readRules({
      rules: [
        track('a', { properties: { i: { type: 'string', pattern: '^inv_[a-z]+$' } } }),
        track('b', { properties: { c: { type: 'string', pattern: '^[A-Z]{3}$' } }, patternProperties: { '^x_': { type: 'number' } } }),
      ],
    }));
    expect(checkPlanItem(item('a', { i: 'inv_abc' }), plan, 'refuse')).toBeNull();
    expect(checkPlanItem(item('b', { c: 'EUR', x_1: 2 }), plan, 'refuse')).toBeNull();
    expect(checkPlanItem(item('a', { i: 'EUR' }), plan, 'refuse')).toMatchObject({ field: 'properties.i' });
    expect(checkPlanItem(item('b', { c: 'inv_abc' }), plan, 'refuse')).toMatchObject({ field: 'properties.c' });
    expect(checkPlanItem(item('b', { x_1: 'two' }), plan, 'refuse')).toMatchObject({ field: 'properties.x_1' });
  });

  it('list five violations at most, with path, keyword and what is expected, never the value sent', () => {
    const plan = compilePlan(readRules({ rules: [track('a', { required: ['r1', 'r2'], additionalProperties: false, properties: Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`p${i}`, { type: 'number' }])) })] }));
    const props = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`p${i}`, `secret-${i}`]));
    const fault = checkPlanItem(item('a', { ...props, extra: 'secret-x' }), plan, 'refuse')!;
    expect(fault.field).toBe('properties.r1');
    expect(fault.message).toContain('properties.r1: required');
    expect(fault.message.match(/: (required|type|additionalProperties) \(/g)).toHaveLength(5);
    expect(fault.message).toMatch(/more not listed/);
    expect(fault.message).not.toContain('secret');
  });

  it('the highest version of a rule is checked; an unplanned event passes or is refused as asked', () => {
    const plan = compilePlan(readRules({ rules: [{ ...track('a', { required: ['x'] }), version: 1 }, { ...track('a', { required: ['y'] }), version: 2 }] }));
    expect(checkPlanItem(item('a', { y: 1 }), plan, 'refuse')).toBeNull();
    expect(checkPlanItem(item('zzz', {}), plan, 'allow')).toBeNull();
    expect(checkPlanItem(item('zzz', {}), plan, 'refuse')).toMatchObject({ code: 'unplanned_event', field: 'event' });
  });

  it('diffs name the rules added, changed and removed', () => {
    expect(diffRules(readRules({ rules: [track('a', {}), track('b', {})] }), readRules({ rules: [track('a', { type: 'object' }), track('c', {}), { type: 'identify', json_schema: {} }] }))).toEqual({
      added: ['track:c', 'identify'], changed: ['track:a'], removed: ['track:b'],
    });
  });
});

// Each of these would hold a backtracking engine (or a naive compiler) for minutes; the test's own
// time limit is the bound: a plan check that stalled would fail it rather than pass slowly.
describe('a hostile schema cannot stall a check', () => {
  it('a catastrophic pattern runs in linear time on a long string', () => {
    const plan = compilePlan(readRules({ rules: [track('a', { properties: { s: { type: 'string', pattern: '^(a+)+$' }, t: { pattern: '(x+x+)+y' } } })] }));
    const s = `${'a'.repeat(50_000)}!`;
    expect(checkPlanItem(item('a', { s, t: 'x'.repeat(50_000) }), plan, 'refuse')).toMatchObject({ code: 'plan_violation', field: 'properties.s' });
  });

  it('uniqueItems and enum run in linear time, with JSON equality (object keys in any order)', () => {
    const plan = compilePlan(readRules({
      rules: [
        track('a', { properties: { xs: { type: 'array', uniqueItems: true }, ys: { type: 'array', items: { enum: Array.from({ length: 9000 }, (_, i) => i) } }, o: { enum: [{ a: 1, b: [2] }] } } }),
      ],
    }));
    const check = (properties: Record<string, unknown>) => checkPlanItem(item('a', properties), plan, 'refuse');
    // Pairwise, 2,000 distinct values were 2 million comparisons; a 500-item batch of them held a thread for seconds.
    expect(check({ xs: Array.from({ length: 2000 }, (_, i) => i), ys: Array.from({ length: 2000 }, (_, i) => i) })).toBeNull();
    expect(check({ xs: [{ a: 1, b: 2 }, { b: 2, a: 1 }] })).toMatchObject({ field: 'properties.xs' });
    expect(check({ xs: [1, '1', [1], { 1: 1 }] })).toBeNull();
    expect(check({ ys: [1, 2, 9000] })).toMatchObject({ field: 'properties.ys.2' });
    expect(check({ o: { b: [2], a: 1 } })).toBeNull();
    expect(check({ o: { a: 1, b: [3] } })).toMatchObject({ field: 'properties.o' });
    // Plain values are compared as themselves, objects by their JSON: neither passes for the other.
    expect(check({ o: '{"a":1,"b":[2]}' })).toMatchObject({ field: 'properties.o' });
    expect(check({ xs: ['{"a":1}', { a: 1 }, '1', 1, null, 'null', true, 'true'] })).toBeNull();
    expect(check({ xs: [null, 0, null] })).toMatchObject({ field: 'properties.xs' });
    expect(check({ ys: ['1'] })).toMatchObject({ field: 'properties.ys.0' });
    expect(check({ xs: [1, 1], o: 'secret' })!.message).toBe(
      'Event "a" does not match the tracking plan: properties.xs: uniqueItems (must NOT have duplicate items); properties.o: enum (must be equal to one of the 1 allowed values).',
    );
  });

  it('a reference cycle that never steps into the value is refused at push; one that does is bounded by the item', () => {
    expect(refusal([track('a', { $ref: '#' })])).toMatch(/rule 1 \(track "a"\): the schema at # refers back to itself/);
    expect(refusal([track('a', { definitions: { d: { allOf: [{ type: 'object' }, { $ref: '#/definitions/d' }] } }, properties: { x: { $ref: '#/definitions/d' } } })])).toMatch(/#\/definitions\/d refers back/);
    const tree = compilePlan(readRules({ rules: [track('a', { definitions: { node: { type: 'object', properties: { child: { $ref: '#/definitions/node' } } } }, properties: { root: { $ref: '#/definitions/node' } } })] }));
    expect(checkPlanItem(item('a', { root: { child: { child: { child: {} } } } }), tree, 'refuse')).toBeNull();
    expect(checkPlanItem(item('a', { root: { child: { child: 1 } } }), tree, 'refuse')).toMatchObject({ field: 'properties.root.child.child' });
  });

  it('a huge enum and deep nesting within 64 KiB compile, or are refused as not compiling, and check at once', () => {
    const enumPlan = compilePlan(readRules({ rules: [track('a', { properties: { v: { enum: Array.from({ length: 6000 }, (_, i) => `v${i}`) } } })] }));
    expect(checkPlanItem(item('a', { v: 'v5999' }), enumPlan, 'refuse')).toBeNull();
    expect(checkPlanItem(item('a', { v: 'nope' }), enumPlan, 'refuse')).toMatchObject({ field: 'properties.v' });
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 1000; i++) deep = { type: 'object', properties: { a: deep } };
    let nested: Record<string, unknown> | string = 'x';
    for (let i = 0; i < 5; i++) nested = { a: nested };
    try {
      const deepPlan = compilePlan(readRules({ rules: [track('a', deep)] }));
      expect(checkPlanItem(item('a', nested as Record<string, unknown>), deepPlan, 'refuse')).toBeNull();
    } catch (e) {
      expect(e).toBeInstanceOf(PlanRefused);
    }
  });
});
