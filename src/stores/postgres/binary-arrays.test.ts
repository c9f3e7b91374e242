/**
 * The binary arrays are read back by PostgreSQL itself: what the server
 * makes of each one must equal what the text form of the same values gives.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../../../test/conformance/stores.js';
import { describeWith } from '../../../test/helpers/needs-services.js';
import { int8Array, jsonbArray, textArray, uuidArray } from './binary-arrays.js';

const AWKWARD = ['', 'plain', 'quote " and \\ backslash', '{braces},commas', 'NULL', 'ünïcödé', '😀 astral', ' spaced ', 'x'.repeat(70_000)];

describe('binary arrays (no server)', () => {
  it('refuses what is not a UUID in its usual text form', () => {
    const good = '0192f0c4-8a1b-7c3d-9e4f-0a1b2c3d4e5f';
    expect(uuidArray([good, good.toUpperCase()])).toHaveLength(20 + 2 * 20);
    for (const bad of ['', good.slice(1), `${good}0`, good.replace('-', '0'), good.replace('a', 'g'), `{${good.slice(2)}}`, good.replace(/-/g, '').padEnd(36, '0')]) {
      expect(() => uuidArray([bad])).toThrow(RangeError);
    }
  });

  it('refuses a number a bigint cannot hold exactly', () => {
    for (const bad of [0.5, Number.NaN, Infinity, 2 ** 53]) expect(() => int8Array([bad])).toThrow(RangeError);
  });
});

describeWith(['postgres'], 'binary arrays, as PostgreSQL reads them', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
  });

  /** The server's text output of the binary parameter, and of the same values sent as pg's text literal. */
  async function both(type: string, binary: Buffer, values: unknown[]): Promise<[string, string]> {
    const { rows } = await client.query<{ a: string; b: string }>(`SELECT $1::${type}[]::text AS a, $2::${type}[]::text AS b`, [binary, values]);
    return [rows[0]!.a, rows[0]!.b];
  }

  it('text, with nulls, quotes, backslashes, any Unicode and long values', async () => {
    const values = [...AWKWARD, null];
    const [a, b] = await both('text', textArray(values), values);
    expect(a).toBe(b);
    const { rows } = await client.query<{ v: (string | null)[] }>('SELECT $1::text[] AS v', [textArray(values)]);
    expect(rows[0]!.v).toEqual(values);
  });

  it('an empty array of each type', async () => {
    for (const [type, buf] of [['text', textArray([])], ['jsonb', jsonbArray([])], ['bigint', int8Array([])], ['uuid', uuidArray([])]] as const) {
      const { rows } = await client.query<{ n: number | null; v: string }>(`SELECT cardinality($1::${type}[]) AS n, $1::${type}[]::text AS v`, [buf]);
      expect(rows[0]).toEqual({ n: 0, v: '{}' });
    }
  });

  it('jsonb, parsed as the text form is', async () => {
    const values = ['{}', '{"a":"q\\"uote","b":[1,2.5,null],"ü":"😀"}', '"just a string"', '12', 'null', JSON.stringify({ long: 'y'.repeat(50_000) })];
    const [a, b] = await both('jsonb', jsonbArray(values), values);
    expect(a).toBe(b);
  });

  it('jsonb refuses text that is not JSON, as the text form does', async () => {
    await expect(client.query('SELECT $1::jsonb[]', [jsonbArray(['{"a":'])])).rejects.toThrow(/json/i);
  });

  it('bigint, negative and past 32 bits', async () => {
    const values = [0, 1, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 32, 1_764_000_000_000, -1_764_000_000_123, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
    const [a, b] = await both('bigint', int8Array(values), values);
    expect(a).toBe(b);
  });

  it('uuid, with nulls, either case', async () => {
    const values = ['0192f0c4-8a1b-7c3d-9e4f-0a1b2c3d4e5f', null, 'FFFFFFFF-0000-4000-8000-ABCDEFABCDEF'];
    const [a, b] = await both('uuid', uuidArray(values), values);
    expect(a).toBe(b);
  });
});
