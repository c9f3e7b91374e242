/**
 * Fault 11: a user-given name that is also the name of something every plain
 * object inherits (toString, constructor, __proto__, hasOwnProperty, valueOf)
 * must be refused like any other unknown name. `inlet key roll --grace toString`
 * used to be accepted: the old key never expired and `key list` crashed.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type Grace, GRACE_PERIODS, isGrace } from '../src/domain/keys.js';
import { normaliseProperties } from '../src/domain/items/fields/properties.js';
import type { FieldError } from '../src/domain/items/fields/field-error.js';
import { type Fixture, makeFixture, send, tempDir } from './helpers/fixture.js';
import { cliJson, runCli } from './helpers/cli.js';

const INHERITED = ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'];

describe('fault 11: user-given names are looked up as own keys only', () => {
  const tmp = tempDir('inlet-own-keys-');
  const env = { INLET_DATA_DIR: tmp.dir };
  afterAll(() => tmp.remove());

  it('inlet key roll --grace toString (or any inherited name) is refused, and the key and key list stay intact', async () => {
    const project = await cliJson(['project', 'create', '--name', 'Web', '--api-enabled'], env);
    const source = await cliJson(['source', 'create', '--project', project.id, '--name', 'Billing'], env);
    const key = await cliJson(['key', 'create', '--source', source.id], env);
    for (const grace of INHERITED) {
      const r = await runCli(['key', 'roll', key.id, '--grace', grace, '--json'], env);
      expect(r.code, grace).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`inlet: --grace takes now, 24h or 7d, not "${grace}".\n`);
    }
    const list = await runCli(['key', 'list', '--source', source.id], env);
    expect(list.code, list.stderr).toBe(0);
    const keys = await cliJson(['key', 'list', '--source', source.id], env);
    expect(keys).toEqual([expect.objectContaining({ id: key.id, status: 'active', expires_at: null })]);
  });

  it('the domain refuses an inherited grace name too, whoever calls it', async () => {
    const f = await makeFixture();
    try {
      const [k] = await f.admin.listKeys(f.sourceId);
      for (const grace of INHERITED) {
        expect(isGrace(grace)).toBe(false);
        expect(GRACE_PERIODS.get(grace)).toBeUndefined();
        await expect(f.admin.rollKey(k!.id, grace as Grace)).rejects.toThrow(`not "${grace}"`);
      }
      expect((await f.admin.listKeys(f.sourceId)).map((x) => x.status)).toEqual(['active']);
    } finally {
      await f.close();
    }
  });

  it('an inherited name as a "$" property key is a reserved property, never a check found on the prototype', () => {
    for (const name of INHERITED) {
      const errors: FieldError[] = [];
      const raw = JSON.parse(`{"$${name}": 1, "${name}": 2}`) as unknown;
      const out = normaliseProperties(raw, false, errors);
      expect(errors, name).toEqual([expect.objectContaining({ code: 'reserved_property', field: `properties.$${name}` })]);
      expect(Object.hasOwn(out.properties, name)).toBe(true);
    }
  });
});

describe('fault 11 over HTTP: inherited names in the query and in properties', () => {
  let f: Fixture;
  afterEach(async () => f?.close());

  it('?toString=true, ?constructor=true and ?__proto__=true are unknown query parameters', async () => {
    f = await makeFixture();
    for (const name of INHERITED) {
      const res = await send(f, { items: [{ event: 'e', distinct_id: 'u' }] }, { query: `${name}=true` });
      expect(res.statusCode, name).toBe(400);
      expect(res.json().error.code).toBe('invalid_query');
      expect(res.json().error.message).toContain(`"${name}"`);
    }
  });

  it('inherited names as property keys are stored as plain data', async () => {
    f = await makeFixture();
    const properties = JSON.parse('{"toString": "a", "constructor": "b", "__proto__": {"polluted": true}, "valueOf": 3}') as object;
    const res = await send(f, { items: [{ event: 'e', distinct_id: 'u', properties }] }, { query: 'validate=true' });
    expect(res.statusCode, res.body).toBe(200);
    const stored = JSON.parse(res.body).items[0].properties;
    expect(stored).toMatchObject({ toString: 'a', constructor: 'b', valueOf: 3 });
    expect(Object.hasOwn(stored, '__proto__')).toBe(true);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('Segment messages whose type is an inherited name are refused, never mapped to an event', async () => {
    f = await makeFixture();
    const basic = `Basic ${Buffer.from(`${f.key}:`).toString('base64')}`;
    const batch = INHERITED.map((type, i) => ({ type, userId: 'u', event: 'e', messageId: `m${i}` }));
    const res = await f.app.inject({ method: 'POST', url: '/v1/batch', headers: { authorization: basic, 'content-type': 'application/json' }, payload: { batch } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().accepted).toBe(0);
    expect(res.json().errors.map((e: { code: string }) => e.code)).toEqual(INHERITED.map(() => 'invalid_item_type'));
  });
});
