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

describe('the document covers every route of the server and names its licence', () => {
  it('fault: info.license was left out and its lint rule switched off; the licence is named and the rule is on', async () => {
    const doc = openApiDocument('http://inlet.test');
    expect(doc.info.license).toEqual({ name: 'Apache-2.0', identifier: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' });
    const { license: _license, ...info } = doc.info;
    const without = { ...doc, info };
    const report = await lint(without, 'unlicensed');
    expect(report.problems.map((p) => p.ruleId)).toContain('info-license');
  });

  it('fault: the Segment routes and /healthz, /readyz were missing; each is documented, and a real answer of each fits its schema', async () => {
    const { SEGMENT_PATHS } = await import('../src/intakes/segment/segment-map.js');
    const doc = openApiDocument('http://inlet.test') as any;
    for (const path of SEGMENT_PATHS.keys()) {
      expect(doc.paths[path]?.post?.responses['200'].content['application/json'].schema, path).toEqual({ $ref: '#/components/schemas/BatchAnswer' });
      // Codes these routes never answer are not listed for them.
      const listed = Object.values(doc.paths[path].post.responses as Record<string, { 'x-error-codes'?: string[] }>).flatMap((r) => r['x-error-codes'] ?? []);
      expect(listed, path).toContain('invalid_key');
      for (const never of ['invalid_query', 'all_items_invalid', 'strict_item_invalid']) expect(listed, path).not.toContain(never);
    }
    expect(Object.keys(doc.paths['/healthz'])).toEqual(['get']);
    expect(Object.keys(doc.paths['/readyz'])).toEqual(['get']);

    const f = await makeFixture();
    try {
      const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
      ajv.addSchema({ $id: 'inlet-openapi', components: doc.components, paths: doc.paths });
      const fits = (pointer: string, body: unknown): boolean => {
        const check = ajv.compile({ $ref: `inlet-openapi#${pointer}` });
        const ok = check(body);
        if (!ok) console.error(pointer, check.errors);
        return ok;
      };
      const basic = `Basic ${Buffer.from(`${f.key}:`).toString('base64')}`;
      const post = (url: string, body: unknown) => f.app.inject({ method: 'POST', url, headers: { authorization: basic, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
      const batch = await post('/v1/batch', { batch: [{ type: 'track', event: 'Signed up', userId: 'u1', messageId: 'm1' }, { type: 'alias', userId: 'u1', previousId: 'a' }] });
      expect(batch.statusCode).toBe(200);
      expect(fits('/components/schemas/BatchAnswer', batch.json())).toBe(true);
      expect(fits('/components/schemas/SegmentBatch', { batch: [{ type: 'track', event: 'Signed up', userId: 'u1', messageId: 'm1' }] })).toBe(true);
      const track = await post('/v1/track', { event: 'Paid', userId: 'u1', properties: { $revenue: 5 } });
      expect(track.statusCode).toBe(200);
      expect(fits('/components/schemas/BatchAnswer', track.json())).toBe(true);
      const empty = await post('/v1/batch', { batch: [] });
      expect(empty.statusCode).toBe(400);
      expect(fits('/paths/~1v1~1batch/post/responses/400/content/application~1json/schema', empty.json())).toBe(true);
      const health = await f.app.inject({ method: 'GET', url: '/healthz' });
      expect(fits('/paths/~1healthz/get/responses/200/content/application~1json/schema', health.json())).toBe(true);
      const ready = await f.app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(200);
      expect(fits('/paths/~1readyz/get/responses/200/content/application~1json/schema', ready.json())).toBe(true);
    } finally {
      await f.close();
    }
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
