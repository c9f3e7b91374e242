import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORES, createTestDatabase } from '../../test/conformance/stores.js';
import { StoreUnavailableError } from '../stores/port.js';
import { errorForLog, withSafeErrors } from './log-error.js';

const SECRET = 'secret-property-value-9f3a';

/** What PostgreSQL throws for a statement, caught. */
async function refusal(client: pg.Client, sql: string, values: unknown[]): Promise<Error> {
  try {
    await client.query(sql, values);
  } catch (e) {
    return e as Error;
  }
  throw new Error(`PostgreSQL accepted ${sql}`);
}

describe.skipIf(!STORES.some((e) => e.name === 'postgres'))('fault 8: logs quote stored properties (PostgreSQL errors)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let client: pg.Client;
  beforeAll(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it('keeps the SQLSTATE, severity and routine of a refused row, never its where, detail or message', async () => {
    // jsonb refuses U+0000 and quotes the JSON it read in `where`.
    const e = await refusal(client, 'SELECT $1::jsonb', [JSON.stringify({ note: `${SECRET}\u0000` })]);
    expect(e).toMatchObject({ where: expect.stringContaining(SECRET) });
    const logged = errorForLog(new StoreUnavailableError('PostgreSQL could not be reached, or it refused the statement.', { cause: e }));
    expect(JSON.stringify(logged)).not.toContain(SECRET);
    expect(logged).toMatchObject({
      type: 'StoreUnavailableError',
      message: 'PostgreSQL could not be reached, or it refused the statement.',
      cause: { type: 'DatabaseError', code: '22P05', severity: 'ERROR', routine: expect.any(String) },
    });
    expect(logged.cause).not.toHaveProperty('message');
    expect(logged.cause).not.toHaveProperty('where');
    expect(logged.cause).not.toHaveProperty('detail');
  });

  it('leaves out a message that quotes the value, and the stack line that repeats it', async () => {
    const e = await refusal(client, 'SELECT $1::int', [SECRET]);
    expect(e.message).toContain(SECRET);
    expect(e.stack).toContain(SECRET);
    const logged = errorForLog(e);
    expect(JSON.stringify(logged)).not.toContain(SECRET);
    expect(logged).toMatchObject({ code: '22P02', routine: expect.any(String) });
  });
});

describe('errorForLog', () => {
  it("leaves out JavaScript's own messages, which quote what they read", () => {
    let e: unknown;
    try {
      JSON.parse(`${SECRET} is not JSON`);
    } catch (x) {
      e = x;
    }
    expect((e as Error).message).toContain(SECRET.slice(0, 10));
    const logged = errorForLog(e);
    expect(JSON.stringify(logged)).not.toContain(SECRET.slice(0, 10));
    expect(logged.type).toBe('SyntaxError');
  });

  it('keeps our own frames of the stack and a system call message', () => {
    const sys = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect', errno: -111 });
    const logged = errorForLog(sys);
    expect(logged).toMatchObject({ type: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:5432', code: 'ECONNREFUSED', syscall: 'connect', errno: -111 });
    expect(logged.stack).toContain('log-error.test.ts');
    expect(logged.stack).not.toContain('node_modules');
  });

  it("leaves out the message of Node's own errors, which quote the value they were given, and keeps their code", async () => {
    const { EventEmitter } = await import('node:events');
    let unhandled: unknown;
    try {
      new EventEmitter().emit('error', { email: SECRET });
    } catch (x) {
      unhandled = x;
    }
    let wrongType: unknown;
    try {
      Buffer.from(SECRET.length as unknown as string, 'nope' as BufferEncoding);
    } catch (x) {
      wrongType = x;
    }
    for (const [e, code] of [[unhandled, 'ERR_UNHANDLED_ERROR'], [wrongType, 'ERR_INVALID_ARG_TYPE']] as const) {
      expect((e as Error).message.length).toBeGreaterThan(0);
      const logged = errorForLog(e);
      expect(logged.code).toBe(code);
      expect(logged.message).toBeUndefined();
      expect(JSON.stringify(logged)).not.toContain(SECRET.slice(0, 10));
    }
    expect((unhandled as Error).message).toContain(SECRET.slice(0, 10));
  });

  it('never logs a thrown value that is not an error, nor a field that is not a name', () => {
    expect(errorForLog(SECRET)).toEqual({ type: 'string' });
    const odd = Object.assign(new Error('x'), { code: `${SECRET} with spaces`, table: 'events', detail: SECRET, where: SECRET });
    const logged = errorForLog(odd);
    expect(JSON.stringify(logged)).not.toContain(SECRET);
    expect(logged.table).toBe('events');
  });
});

describe('withSafeErrors', () => {
  it('puts errorForLog in every logger configuration, the default one included', () => {
    const leaky = { level: 'warn', serializers: { err: (e: Error) => ({ type: e.name, message: e.message, stack: String(e.stack) }) } };
    for (const given of [true, {}, leaky]) {
      const cfg = withSafeErrors(given) as { serializers: { err: (e: unknown) => unknown } };
      expect(cfg.serializers.err(new SyntaxError(SECRET))).toEqual({ type: 'SyntaxError', stack: expect.any(String) });
    }
    expect(withSafeErrors(false)).toBe(false);
  });
});
