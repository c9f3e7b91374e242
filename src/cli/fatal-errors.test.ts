import { fork } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DELIVERY_PROCESS_URL } from './delivery-process.js';
import { exitOnFatalErrors } from './fatal-errors.js';

/** A process as the handler sees it, which records its exit instead of ending, and the lines written. */
function host() {
  const emitter = new EventEmitter();
  const lines: Record<string, unknown>[] = [];
  const exits: number[] = [];
  const fake = Object.assign(emitter, {
    exit: ((code: number) => {
      exits.push(code);
    }) as (code: number) => never,
  });
  const destination = { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) };
  return { fake, lines, exits, destination };
}

describe('an error nothing caught', () => {
  it('is one fatal line in the log format, without the message that quotes data, then an exit with code 1', () => {
    const h = host();
    exitOnFatalErrors('server', h.fake, h.destination);
    let thrown: unknown;
    try {
      JSON.parse('{"email": "ada@example.com", "token": sk_live_');
    } catch (e) {
      thrown = e;
    }
    h.fake.emit('uncaughtException', thrown, 'uncaughtException');
    expect(h.exits).toEqual([1]);
    expect(h.lines).toHaveLength(1);
    const line = h.lines[0]!;
    expect(line).toMatchObject({ level: 60, process: 'server', origin: 'uncaughtException', err: { type: 'SyntaxError' } });
    expect(typeof line.time).toBe('number');
    expect(line.pid).toBe(process.pid);
    expect(line.msg).toMatch(/nothing caught it/);
    expect(JSON.stringify(line)).not.toMatch(/ada@example|sk_live/);
    // The stack keeps this package's frames, which name code, not data.
    expect((line.err as { stack?: string }).stack).toMatch(/fatal-errors\.test/);
  });

  it("says so when a promise failed unhandled, from the reason itself: a string rejected is not written out (Node's wrapper would quote it)", () => {
    const h = host();
    exitOnFatalErrors('delivery', h.fake, h.destination);
    h.fake.emit('unhandledRejection', '{"email":"ada@example.com"}');
    expect(h.exits).toEqual([1]);
    expect(h.lines[0]).toMatchObject({ level: 60, process: 'delivery', origin: 'unhandledRejection', err: { type: 'string' } });
    expect(h.lines[0]!.msg).toMatch(/promise failed/);
    expect(JSON.stringify(h.lines)).not.toMatch(/ada@/);
    // An Inlet error names no data: its message stays.
    h.fake.emit('unhandledRejection', new Error('The delivery process lost its store.'));
    expect(h.lines[1]).toMatchObject({ err: { type: 'Error', message: 'The delivery process lost its store.' } });
  });

  it('still writes a line, and ends, when the error cannot even be read (its fields throw)', () => {
    const h = host();
    exitOnFatalErrors('server', h.fake, h.destination);
    const hostile = new Proxy(new Error('x'), {
      get: () => {
        throw new Error('no');
      },
      getPrototypeOf: () => {
        throw new Error('no');
      },
    });
    h.fake.emit('uncaughtException', hostile, 'uncaughtException');
    expect(h.exits).toEqual([1]);
    expect(h.lines).toEqual([expect.objectContaining({ level: 60, err: { type: 'unknown' } })]);
  });

  it('ends with code 1 even when the line cannot be written', () => {
    const h = host();
    exitOnFatalErrors('server', h.fake, {
      write: () => {
        throw new Error('EPIPE');
      },
    });
    expect(() => h.fake.emit('uncaughtException', new Error('x'), 'uncaughtException')).toThrow('EPIPE');
    expect(h.exits).toEqual([1]);
  });
});

it('in the delivery process, a start it cannot use ends it with code 1 and one fatal JSON line on stderr, not a bare stack', async () => {
  const child = fork(fileURLToPath(DELIVERY_PROCESS_URL), [], { serialization: 'advanced', stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  // Settings that are not an object: reading them throws once the modules are loaded, in a promise nothing awaits.
  child.send({ start: null });
  // 'close': stderr read to its end, as well as the exit.
  const [code] = (await once(child, 'close')) as [number | null];
  expect(code).toBe(1);
  const lines = stderr.trim().split('\n');
  expect(lines, stderr).toHaveLength(1);
  expect(JSON.parse(lines[0]!)).toMatchObject({ level: 60, process: 'delivery', origin: 'unhandledRejection', err: { type: 'TypeError' } });
});
