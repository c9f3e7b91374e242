import { fileURLToPath } from 'node:url';
import type { FastifyServerOptions } from 'fastify';

/** An error as a log line holds it: names, codes and our own stack frames, never data. */
export interface LoggedError {
  type: string;
  message?: string;
  stack?: string;
  cause?: LoggedError;
  errors?: LoggedError[];
  [field: string]: unknown;
}

/**
 * Fields that name things (a SQLSTATE, a syscall, a constraint or column of
 * our schema, the server routine that refused) and never carry a value. A
 * database server's message, `detail`, `where`, `hint` and `internalQuery`
 * quote the data it refused, so they are left out.
 */
const SAFE_FIELDS = ['code', 'errno', 'syscall', 'severity', 'routine', 'schema', 'table', 'column', 'dataType', 'constraint'] as const;
const NAME = /^[A-Za-z0-9_.$:-]{1,128}$/;

/**
 * JavaScript's own errors quote the values they choke on (a JSON.parse
 * SyntaxError shows the text it read), so their messages are never logged.
 */
const QUOTING_ERRORS = [SyntaxError, TypeError, RangeError, ReferenceError, URIError, EvalError];

/** Where this package's files are (src/ or dist/ above this folder): frames from elsewhere are not ours. */
const OWN_ROOT = fileURLToPath(new URL('../../', import.meta.url));

const MAX_DEPTH = 4;

/**
 * Turns anything thrown into what a log line may hold. Logs never hold bodies,
 * properties or traits, and an error is how they would get in: a PostgreSQL
 * error quotes the row it refused. Every error logged goes through here (it
 * is the logger's `err` serializer, see withSafeErrors).
 */
export function errorForLog(e: unknown, depth = 0): LoggedError {
  if (typeof e !== 'object' || e === null) return { type: typeof e };
  const err = e as Record<string, unknown>;
  const ctor = (e as { constructor?: { name?: unknown } }).constructor?.name;
  const out: LoggedError = { type: typeof ctor === 'string' && NAME.test(ctor) ? ctor : 'Error' };
  for (const f of SAFE_FIELDS) {
    const v = err[f];
    if ((typeof v === 'string' && NAME.test(v)) || typeof v === 'number') out[f] = v;
  }
  if (e instanceof Error) {
    if (messageHoldsNoData(e)) out.message = e.message;
    const stack = ownFrames(e.stack);
    if (stack !== '') out.stack = stack;
  }
  if (depth < MAX_DEPTH) {
    if (err.cause !== undefined) out.cause = errorForLog(err.cause, depth + 1);
    if (e instanceof AggregateError) out.errors = e.errors.slice(0, 5).map((x) => errorForLog(x, depth + 1));
  }
  return out;
}

/**
 * Node's own errors (codes ERR_…) quote what they were given: a promise
 * rejected with a string (ERR_UNHANDLED_REJECTION), an 'error' event's value
 * (ERR_UNHANDLED_ERROR), an argument of the wrong type, an assertion's
 * values. Their code says what happened.
 */
const NODE_CODE = /^ERR_[A-Z0-9_]+$/;

/**
 * A message is kept where it cannot hold data: a system call's (it names the
 * call, an address or a path), or one Inlet or a client library wrote (they
 * name ids and connections, never a property). Not a database server's, not
 * JavaScript's own, and not Node's.
 */
function messageHoldsNoData(e: Error): boolean {
  const fields = e as unknown as Record<string, unknown>;
  if (typeof fields.syscall === 'string') return true;
  if (fields.severity !== undefined || fields.detail !== undefined || fields.where !== undefined) return false;
  if (typeof fields.code === 'string' && NODE_CODE.test(fields.code)) return false;
  return !QUOTING_ERRORS.some((C) => e instanceof C);
}

/** The stack's frames in this package's own files; its first line (the message) is never kept. */
function ownFrames(stack: unknown): string {
  if (typeof stack !== 'string') return '';
  return stack
    .split('\n')
    .filter((l) => /^\s+at /.test(l) && l.includes(OWN_ROOT) && !l.includes('/node_modules/'))
    .map((l) => l.trim())
    .join('\n');
}

/** Logger options with errorForLog as the `err` serializer (`true` reads as Fastify's default options); off stays off. */
export function withSafeErrors(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (logger === true) logger = {};
  if (typeof logger !== 'object' || logger === null) return logger;
  const config = logger as { serializers?: Record<string, (v: unknown) => unknown> };
  return { ...logger, serializers: { ...config.serializers, err: (e: unknown) => errorForLog(e) } } as FastifyServerOptions['logger'];
}
