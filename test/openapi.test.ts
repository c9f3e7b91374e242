/**
 * Fault 16: the OpenAPI document was stricter than the server (no null in
 * optional item fields) and @redocly/cli lint gave 65 warnings. Here the
 * document is linted as served, and its Item schema is held against the
 * server's own verdict on the same items.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../src/docs/openapi.js';
import { type Fixture, makeFixture, send, tempDir } from './helpers/fixture.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REDOCLY = join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
const run = promisify(execFile);

interface LintReport {
  totals: { errors: number; warnings: number };
  problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
}

const tmp = tempDir('inlet-openapi-');
afterAll(() => tmp.remove());

/** Lints a document with the repository's redocly.yaml, offline, and returns the report. */
async function lint(doc: unknown, name: string): Promise<LintReport> {
  const file = join(tmp.dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(doc, null, 2));
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
  // Exit status 1 means errors; the JSON report is on stdout either way.
  const out = await run(process.execPath, [REDOCLY, 'lint', '--config', join(ROOT, 'redocly.yaml'), '--format', 'json', file], { cwd: ROOT, env }).catch(
    (e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }),
  );
  return JSON.parse(out.stdout) as LintReport;
}

const summary = (r: LintReport) => r.problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);

describe('fault 16: the OpenAPI document lints clean with @redocly/cli', () => {
  it('has no error and no warning', async () => {
    const report = await lint(openApiDocument('http://inlet.test'), 'served');
    expect(summary(report)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it('the same lint fails a document that regresses (the envelope as an allOf of the component and a narrowing)', async () => {
    const doc = openApiDocument('http://inlet.test') as any;
    const r400 = doc.paths['/api/v1/batch'].post.responses['400'].content['application/json'];
    doc.components.schemas.ErrorEnvelope = r400.schema;
    r400.schema = { allOf: [{ $ref: '#/components/schemas/ErrorEnvelope' }, { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: ['invalid_json'] } } } } }] };
    const report = await lint(doc, 'regressed');
    expect(report.totals.warnings + report.totals.errors).toBeGreaterThan(0);
  });
});

describe('fault 16: the Item schema accepts exactly what the server accepts', () => {
  let f: Fixture;
  let validItem: (item: unknown) => boolean;
  beforeAll(async () => {
    f = await makeFixture();
    const doc = openApiDocument('http://inlet.test');
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema({ $id: 'inlet-openapi', components: doc.components });
    validItem = ajv.compile({ $ref: 'inlet-openapi#/components/schemas/Item' });
  });
  afterAll(async () => f?.close());

  const track = { event: 'invoice_paid', distinct_id: 'usr_1' };
  const identify = { type: 'identify', distinct_id: 'usr_1' };
  const CASES: [string, Record<string, unknown>][] = [
    ['a plain track', track],
    ['a plain identify', identify],
    ['type null (a track)', { ...track, type: null }],
    ['distinct_id null with an anonymous_id', { event: 'e', distinct_id: null, anonymous_id: 'per_abc' }],
    ['anonymous_id null', { ...track, anonymous_id: null }],
    ['session_id null', { ...track, session_id: null }],
    ['insert_id null', { ...track, insert_id: null }],
    ['timestamp null', { ...track, timestamp: null }],
    ['properties null', { ...track, properties: null }],
    ['every optional field null on identify', { ...identify, anonymous_id: null, session_id: null, insert_id: null, timestamp: null, properties: null }],
    ['an identify whose event is anything', { ...identify, event: 5 }],
    ['an unknown field', { ...track, colour: 'red' }],
    ['event null on a track', { event: null, distinct_id: 'usr_1' }],
    ['no event on a track', { distinct_id: 'usr_1' }],
    ['no identity on a track', { event: 'e' }],
    ['both identities null on a track', { event: 'e', distinct_id: null, anonymous_id: null }],
    ['distinct_id null on identify', { type: 'identify', distinct_id: null }],
    ['no distinct_id on identify', { type: 'identify', anonymous_id: 'per_abc' }],
    ['type group', { ...track, type: 'group' }],
    ['a number as distinct_id', { event: 'e', distinct_id: 42 }],
    ['an empty event', { event: '', distinct_id: 'usr_1' }],
    ['an insert_id of the wrong form', { ...track, insert_id: 'a b' }],
    ['a $ property set to null', { ...track, properties: { $currency: null } }],
    ['properties that are an array', { ...track, properties: [] }],
  ];

  it.each(CASES)('%s: the schema and the server agree', async (_, item) => {
    const res = await send(f, { items: [item] }, { query: 'validate=true' });
    expect(res.statusCode, res.body).toBe(200);
    const serverAccepts = (res.json().items as unknown[]).length === 1;
    expect(validItem(item), JSON.stringify(item)).toBe(serverAccepts);
  });

  it('covers both verdicts', async () => {
    const verdicts = new Set(CASES.map(([, item]) => validItem(item)));
    expect(verdicts).toEqual(new Set([true, false]));
  });
});
