/** `inlet plan …` and `inlet source update --plan …`: the documented --json shapes, refusals that name the rule, plan test and the Segment import. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Collector } from '../../src/domain/collector.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/fixture.js';
import { ingestJob } from '../helpers/items.js';
import { cliJson, provision, runCli } from '../helpers/cli.js';

const tmp = tempDir('inlet-cli-plans-');
const env = { INLET_DATA_DIR: tmp.dir };
const file = (name: string, value: unknown): string => {
  const path = join(tmp.dir, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
};
let ids: Awaited<ReturnType<typeof provision>>;

const V1 = {
  rules: [
    { type: 'track', event: 'order_completed', json_schema: { type: 'object', required: ['amount'], properties: { amount: { type: 'number' } } } },
    { type: 'track', event: 'signed_up', json_schema: { type: 'object' } },
  ],
};
const V2 = {
  rules: [
    { type: 'track', event: 'order_completed', json_schema: { type: 'object', required: ['amount', 'currency'], properties: { amount: { type: 'number' } } } },
    { type: 'identify', json_schema: { type: 'object' } },
  ],
};

beforeAll(async () => {
  ids = await provision(env);
});
afterAll(() => tmp.remove());

it('create, push, pull, show, list, diff and delete print the documented shapes', async () => {
  const plan = await cliJson(['plan', 'create', '--project', ids.project.id, '--name', 'checkout'], env);
  expect(plan).toEqual({ id: expect.stringMatching(/^pln_/), project_id: ids.project.id, name: 'checkout', latest_version: null });
  expect(await cliJson(['plan', 'push', plan.id, file('v1.json', V1)], env)).toEqual({
    id: plan.id, version: 1, rules: 2, changes: { added: ['track:order_completed', 'track:signed_up'], changed: [], removed: [] },
  });
  expect(await cliJson(['plan', 'push', plan.id, file('v2.json', V2)], env)).toEqual({
    id: plan.id, version: 2, rules: 2, changes: { added: ['identify'], changed: ['track:order_completed'], removed: ['track:signed_up'] },
  });
  expect(await cliJson(['plan', 'pull', plan.id, '--version', '1'], env)).toEqual(V1);
  const out = join(tmp.dir, 'pulled.json');
  await cliJson(['plan', 'pull', plan.id, '--out', out], env);
  expect(await cliJson(['plan', 'push', plan.id, out], env)).toMatchObject({ version: 3, changes: { added: [], changed: [], removed: [] } });
  expect(await cliJson(['plan', 'show', plan.id, '--version', '2'], env)).toEqual({
    id: plan.id, project_id: ids.project.id, name: 'checkout', latest_version: 3, version: 2, created_at: expect.any(String), versions: [1, 2, 3], rules: V2.rules,
  });
  expect(await cliJson(['plan', 'diff', plan.id, '1', '2'], env)).toEqual({ id: plan.id, from: 1, to: 2, added: ['identify'], changed: ['track:order_completed'], removed: ['track:signed_up'] });

  const source = await cliJson(['source', 'update', ids.source.id, '--plan', `${plan.id}@2`, '--plan-mode', 'enforce'], env);
  expect(source).toEqual({
    id: ids.source.id, project_id: ids.project.id, name: 'Billing', filter_bots: true, record_ip: false,
    plan: { id: plan.id, version: 2, mode: 'enforce', unplanned_events: 'refuse' },
  });
  expect((await cliJson(['source', 'update', ids.source.id, '--plan-mode', 'observe', '--unplanned-events', 'refuse'], env)).plan).toEqual({ id: plan.id, version: 2, mode: 'observe', unplanned_events: 'refuse' });
  expect(await cliJson(['plan', 'list', '--project', ids.project.id], env)).toEqual([{ id: plan.id, project_id: ids.project.id, name: 'checkout', latest_version: 3, sources: [ids.source.id] }]);

  const refused = await runCli(['plan', 'delete', plan.id, '--json'], env);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(ids.source.id);
  expect((await cliJson(['source', 'update', ids.source.id, '--no-plan'], env)).plan).toEqual({ id: null, version: null, mode: 'off', unplanned_events: 'allow' });
  expect(await cliJson(['plan', 'delete', plan.id], env)).toEqual({ id: plan.id, deleted: true });
});

it('refuses a push naming the rule and why, a version that does not exist, and a mode with no plan', async () => {
  const plan = await cliJson(['plan', 'create', '--project', ids.project.id, '--name', 'strict'], env);
  const bad = await runCli(['plan', 'push', plan.id, file('bad.json', { rules: [V1.rules[0], { type: 'track', event: 'x', json_schema: { properties: { s: { pattern: '(a)\\1' } } } }] }), '--json'], env);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/rule 2 \(track "x"\).*linear time/);
  expect((await runCli(['source', 'update', ids.source.id, '--plan', `${plan.id}@4`, '--json'], env)).stderr).toContain('has no version 4');
  expect((await runCli(['source', 'update', ids.source.id, '--plan-mode', 'enforce', '--json'], env)).stderr).toContain('give --plan P as well');
});

it('plan test checks NDJSON items offline, line by line, and exits 1 when enforce would refuse any', async () => {
  const plan = await cliJson(['plan', 'create', '--project', ids.project.id, '--name', 'offline'], env);
  await cliJson(['plan', 'push', plan.id, file('offline.json', V1)], env);
  const lines = [
    JSON.stringify({ event: 'order_completed', distinct_id: 'u_1', properties: { amount: 3 } }),
    JSON.stringify({ event: 'order_completed', distinct_id: 'u_1', properties: { amount: 'three' } }),
    '',
    JSON.stringify({ event: 'unplanned', distinct_id: 'u_1' }),
    JSON.stringify({ event: 'signed_up' }),
    '{oops',
  ].join('\n');
  const r = await runCli(['plan', 'test', plan.id, file('items.ndjson', lines), '--json'], env);
  expect(r.code).toBe(1);
  const verdicts = JSON.parse(r.stdout) as { line: number; outcome: string; errors: { code: string; field: string }[] }[];
  expect(verdicts.map((v) => [v.line, v.outcome, v.errors.map((e) => `${e.code} ${e.field}`)])).toEqual([
    [1, 'accepted', []],
    [2, 'refused', ['plan_violation properties.amount']],
    [4, 'refused', ['unplanned_event event']],
    [5, 'refused', ['missing_identity distinct_id']],
    [6, 'refused', ['invalid_item item']],
  ]);
  const ok = await runCli(['plan', 'test', plan.id, file('ok.ndjson', lines.split('\n')[0]!), '--json'], env);
  expect(ok.code).toBe(0);
  // Without --json: each line, then what they came to.
  const plain = await runCli(['plan', 'test', plan.id, file('items-plain.ndjson', lines)], env);
  expect(plain.stdout.trim().split('\n').at(-1)).toBe('5 items: 1 accepted, 4 refused');
});

it('plan check holds the stored events of a period to a plan: what enforce would have refused, by code and event', async () => {
  const dir = tempDir('inlet-cli-plan-check-');
  const denv = { INLET_DATA_DIR: dir.dir };
  try {
    const p = await provision(denv);
    const now = Date.now();
    const collector = new Collector(SqliteStore.open(dir.dir));
    await collector.ingest(ingestJob(
      [
        { type: 'track' as const, event: 'order_completed', distinctId: 'u', properties: { amount: 3 }, enrichment: { $source_id: p.source.id } },
        { type: 'track' as const, event: 'order_completed', distinctId: 'u', properties: { amount: 'three' } },
        { type: 'track' as const, event: 'unplanned', distinctId: 'u' },
        { type: 'track' as const, event: 'signed_up', distinctId: 'u' },
      ].map((x) => ({ ...x, timestamp: now - 60_000 })),
      { projectId: p.project.id, sourceId: p.source.id, keyId: p.key.id, receivedAt: now },
    ));
    await collector.close();
    const plan = await cliJson(['plan', 'create', '--project', p.project.id, '--name', 'later'], denv);
    await cliJson(['plan', 'push', plan.id, file('later.json', V1)], denv);
    const r = await cliJson(['plan', 'check', '--source', p.source.id, '--since', new Date(now - 3_600_000).toISOString(), '--plan', `${plan.id}@1`], denv);
    expect(r).toMatchObject({ checked: 4, would_refuse: 2, by_code: { plan_violation: 1, unplanned_event: 1 }, by_event: { order_completed: 1, unplanned: 1 } });
    expect(r.samples.map((s: { from: string; code: string; field: string }) => [s.from, s.code, s.field])).toEqual([['event', 'plan_violation', 'properties.amount'], ['event', 'unplanned_event', 'event']]);
    const plain = await runCli(['plan', 'check', '--source', p.source.id, '--since', new Date(now - 3_600_000).toISOString(), '--plan', `${plan.id}@1`], denv);
    expect(plain.stdout.trim().split('\n')).toEqual(['checked 4 items: enforce would have refused 2', 'by code:', '  plan_violation: 1', '  unplanned_event: 1', 'by event:', '  order_completed: 1', '  unplanned: 1']);
    const none = await runCli(['plan', 'check', '--source', p.source.id, '--since', '0', '--json'], denv);
    expect(none.stderr).toContain('has no plan');
    // A draft file instead of a stored plan, as pull writes one: here one that also plans "unplanned" and takes amount as text.
    const draft = file('draft.json', { rules: [...V1.rules.slice(1), { type: 'track', event: 'order_completed', json_schema: { type: 'object' } }, { type: 'track', event: 'unplanned', json_schema: { type: 'object' } }] });
    expect(await cliJson(['plan', 'check', '--source', p.source.id, '--since', new Date(now - 3_600_000).toISOString(), '--file', draft], denv)).toMatchObject({ checked: 4, would_refuse: 0 });
    const strict = file('strict.json', V2);
    expect(await cliJson(['plan', 'check', '--source', p.source.id, '--since', new Date(now - 3_600_000).toISOString(), '--file', strict], denv))
      .toMatchObject({ checked: 4, would_refuse: 4, by_code: { plan_violation: 2, unplanned_event: 2 } });
    const both = await runCli(['plan', 'check', '--source', p.source.id, '--since', '0', '--file', strict, '--plan', plan.id], denv);
    expect(both.stderr).toContain('not both');
    const broken = await runCli(['plan', 'check', '--source', p.source.id, '--since', '0', '--file', file('broken.json', { rules: [{ type: 'track', json_schema: {} }] })], denv);
    expect(broken.stderr).toMatch(/rule 1 .*names its "event"/);
    const uncompiled = await runCli(['plan', 'check', '--source', p.source.id, '--since', '0', '--file', file('nope.json', { rules: [{ type: 'track', event: 'e', json_schema: { type: 'nope' } }] })], denv);
    expect(uncompiled.stderr).toMatch(/does not compile/);
  } finally {
    dir.remove();
  }
});

it('plan import --from segment reads a Protocols plan as its Public API returns it, as version 1', async () => {
  // The shape of GET /tracking-plans/{id}/rules: the whole message's schema, properties and traits inside.
  const segment = {
    data: {
      rules: [
        {
          type: 'TRACK', key: 'Order Completed', version: 1,
          jsonSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#', type: 'object',
            properties: {
              context: {}, traits: { type: 'object' },
              properties: { type: 'object', required: ['revenue'], properties: { revenue: { $ref: '#/definitions/money' }, currency: { type: 'string' } } },
            },
            definitions: { money: { type: 'number', minimum: 0 } },
          },
        },
        { type: 'IDENTIFY', key: null, version: 1, jsonSchema: { properties: { traits: { type: 'object', properties: { email: { type: 'string', format: 'email' } } } } } },
        { type: 'GROUP', key: 'company', version: 1, jsonSchema: { properties: { traits: { type: 'object', required: ['name'] } } } },
        { type: 'PAGE', key: null, version: 1, jsonSchema: { properties: {} } },
      ],
      pagination: { current: 'MA==', totalEntries: 4 },
    },
  };
  const r = await runCli(['plan', 'import', '--from', 'segment', file('segment.json', segment), '--project', ids.project.id, '--name', 'from-segment', '--json'], env);
  expect(r.code, r.stderr).toBe(0);
  const made = JSON.parse(r.stdout);
  expect(made).toEqual({ id: expect.stringMatching(/^pln_/), project_id: ids.project.id, name: 'from-segment', latest_version: 1 });
  expect(r.stderr).toContain('rule 4 (PAGE)');
  const pulled = await cliJson(['plan', 'pull', made.id], env);
  expect(pulled.rules.map((x: { type: string; event?: string; group_type?: string }) => [x.type, x.event ?? x.group_type ?? null])).toEqual([
    ['track', 'Order Completed'], ['identify', null], ['group', 'company'],
  ]);
  expect(pulled.rules[0].json_schema).toMatchObject({ required: ['revenue'], definitions: { money: { type: 'number', minimum: 0 } } });
  const test = await runCli(['plan', 'test', made.id, file('seg.ndjson', JSON.stringify({ event: 'Order Completed', distinct_id: 'u', properties: { revenue: -1 } })), '--json'], env);
  expect(JSON.parse(test.stdout)[0].errors[0]).toMatchObject({ code: 'plan_violation', field: 'properties.revenue' });
});

it("outcomes --by-event lists a tracking plan's warned and refused items by event and code over the period", async () => {
  const store = SqliteStore.open(tmp.dir);
  const hour = Date.now() - (Date.now() % 3_600_000);
  const row = { projectId: ids.project.id, sourceId: ids.source.id, hour, outcome: 'refused' as const, code: 'plan_violation', count: 2 };
  await store.outcomes.addOutcomes([], [], { keepPerCode: 100, projectBytes: 1 << 20 }, {
    rows: [{ ...row, event: 'order_completed' }, { ...row, hour: hour - 3_600_000, event: 'order_completed', count: 1_500 }, { ...row, outcome: 'warned', code: 'unplanned_event', event: 'page_viewed' }],
    perHour: 100,
  });
  await store.close();
  expect(await cliJson(['outcomes', '--source', ids.source.id, '--by-event'], env)).toEqual([
    { source_id: ids.source.id, outcome: 'refused', code: 'plan_violation', event: 'order_completed', count: 1_502 },
    { source_id: ids.source.id, outcome: 'warned', code: 'unplanned_event', event: 'page_viewed', count: 2 },
  ]);
  const plain = await runCli(['outcomes', '--project', ids.project.id, '--by-event', '--since', new Date(hour).toISOString()], env);
  expect(plain.stdout).toMatch(/SOURCE +OUTCOME +CODE +EVENT +COUNT/);
  expect(plain.stdout).toMatch(/refused +plan_violation +order_completed +2\n/);
});
