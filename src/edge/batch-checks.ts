/**
 * The checks of a request to the batch API, in order: the one list the server
 * runs (batchRoute goes through BATCH_CHECKS) and the reference page shows
 * (CHECK_ORDER, its table "Order of checks"). A request is answered with the
 * first check it fails, and later checks never run (docs/design.md, "Order of
 * checks"); test/http/check-order.test.ts holds the server to the list.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readBearer } from '../domain/keys.js';
import type { RequestErrorCode } from '../errors/codes.js';
import type { CheckedBatch } from '../pipeline/checked-batch.js';
import type { AuthRecord } from '../stores/port.js';
import { DEFAULT_LIMITS } from '../domain/limits/policies.js';
import { MAX_ITEMS } from '../pipeline/check-batch.js';
import { ADMISSION_WAIT_MS } from './admission.js';
import { MAX_BODY_BYTES } from './read-body.js';
import { type BatchRouteDeps, BATCH_DIALECT, admitItems, answering, checkKey, itemContext, itemsVerdict, readAdmitted, writeChecked } from './batch-route.js';
import { BATCH_PATH, type EndpointProfile, ENDPOINTS, IMPORT_PATH } from './endpoints.js';
import { normaliseHost } from './host.js';
import { type BatchOptions, type Refusal, checkBrowser, checkMethod, checkPath, checkQuery, isRefusal } from './request-checks.js';

/** One check as the reference lists it: its name, what fails it (inline markdown), and the codes it answers with then. */
export interface NamedCheck {
  /** Stable name, for the test that holds the server to the list. */
  name: string;
  check: string;
  codes: RequestErrorCode[];
}

/** A batch request as its checks go through it: each check sets what the later ones read. */
interface BatchRequest {
  deps: BatchRouteDeps;
  req: FastifyRequest;
  reply: FastifyReply;
  path: string;
  query: string;
  /** Set once the key's checks pass. */
  auth?: AuthRecord;
  options?: BatchOptions;
  /** Set once the body is read and has room; released when the request is done. */
  body?: { bytes: Buffer; release: () => void };
  /** Server clock when the body was admitted: the items' arrival. */
  arrival?: number;
  checked?: CheckedBatch;
}

/** A check's result: passed (null), refused, or done with the request (answered, or no one left to answer). */
type Result = Refusal | null | typeof DONE;
const DONE = Symbol('done');

/**
 * Checks that share one piece of code, in the list's order. `run` is null for
 * those made before any route: Node's HTTP parser, and the app's hook that
 * answers for a stopping server (app.ts).
 */
interface Step {
  checks: NamedCheck[];
  run: ((r: BatchRequest) => Result | Promise<Result>) | null;
}

const MIB = `1 MiB (${MAX_BODY_BYTES.toLocaleString('en-US')} bytes)`;

/** Every check in order; a request that passes them all is answered 202, or 200 with validate=true. */
export const BATCH_CHECKS: readonly Step[] = [
  {
    checks: [
      {
        name: 'http',
        check:
          'The request is not valid HTTP/1.1 (no `Host` or two, two `Content-Length`s or one with `Transfer-Encoding`, an unknown method), its headers are over 16 KiB, or it did not arrive in full within 30 s',
        codes: ['bad_request', 'headers_too_large', 'request_timeout'],
      },
    ],
    run: null,
  },
  { checks: [{ name: 'stopping', check: 'The server is stopping (it got SIGTERM): every request that arrives from then on', codes: ['collection_unavailable'] }], run: null },
  {
    checks: [
      { name: 'path', check: `The path is neither \`${BATCH_PATH}\` nor \`${IMPORT_PATH}\` (an unknown \`/api/v1/…\` path or an unknown version), or the host is a tracker domain`, codes: ['not_found'] },
      { name: 'retired', check: 'The path is under a retired API version', codes: ['api_version_retired'] },
    ],
    run: (r) => checkPath(r.path, normaliseHost(r.req.headers.host), r.deps.trackerHosts, r.deps.retiredVersions),
  },
  { checks: [{ name: 'method', check: 'The method is not POST (OPTIONS included)', codes: ['method_not_allowed'] }], run: (r) => checkMethod(r.req.method) },
  {
    checks: [{ name: 'browser', check: 'It looks like a browser: `Origin`, or `Sec-Fetch-*` other than a lone `Sec-Fetch-Mode: cors`', codes: ['browser_not_allowed'] }],
    run: (r) => checkBrowser(r.req.headers),
  },
  {
    checks: [
      { name: 'missing-key', check: 'No Bearer key', codes: ['missing_key'] },
      { name: 'invalid-key', check: 'The key does not work', codes: ['invalid_key'] },
      { name: 'api-off', check: "The key's project does not have the API switched on", codes: ['not_found'] },
      { name: 'key-rate', check: `The key sent more than ${DEFAULT_LIMITS.keyRps} requests in the last second (by default)`, codes: ['rate_limited'] },
    ],
    run: async (r) => {
      const auth = await checkKey(r.deps, r.req, readBearer(r.req.headers.authorization));
      if (isRefusal(auth)) return auth;
      r.auth = auth;
      return null;
    },
  },
  {
    checks: [{ name: 'query', check: 'A query parameter is unknown, repeated, or not true/false', codes: ['invalid_query'] }],
    run: (r) => {
      const options = checkQuery(r.query);
      if (isRefusal(options)) return options;
      r.options = options;
      // Known from here: a dry run's refusals are not counted as outcomes.
      r.req.facts!.dryRun = options.validate;
      return null;
    },
  },
  {
    checks: [
      { name: 'content-type', check: 'Content-Type is not JSON', codes: ['unsupported_media_type'] },
      { name: 'encoding', check: 'Content-Encoding is not gzip or identity', codes: ['unsupported_encoding'] },
      { name: 'size', check: `The body is over ${MIB}, as sent or decompressed`, codes: ['payload_too_large'] },
      {
        name: 'reading',
        check:
          "No room to read the body: the server's budget for bodies being read, or the share of it of the key's project (all its keys together), is spent (checked against Content-Length before a byte is read, and as a chunked body arrives); the connection is closed",
        codes: ['collection_unavailable'],
      },
      {
        name: 'room',
        check: `The body is read, but the bodies the server already holds leave no room for it within ${ADMISSION_WAIT_MS / 1000} s (by default), or too many bodies wait already`,
        codes: ['collection_unavailable'],
      },
    ],
    run: async (r) => {
      const body = await readAdmitted(r.deps, r.req, { projectId: r.auth!.project.id });
      if (body === null) return DONE;
      if (isRefusal(body)) return body;
      r.body = body;
      r.arrival = r.deps.clock();
      return null;
    },
  },
  {
    // On a check thread for a large body (CheckThreads): its items are checked there before the
    // project's windows count them here, with the same answer (docs/design.md, "Checks on a thread").
    checks: [
      { name: 'json', check: 'The body is not UTF-8 JSON, or the gzip stream is broken', codes: ['invalid_json'] },
      { name: 'body', check: 'The body is not an object with an `items` array', codes: ['invalid_body'] },
      { name: 'count', check: `\`items\` is empty, or holds more than ${MAX_ITEMS}`, codes: ['batch_empty', 'batch_too_many_items'] },
      { name: 'project-rate', check: "The items would overflow one of the project's windows", codes: ['rate_limited'] },
    ],
    run: async (r) => {
      const profile = endpointOf(r);
      // Counted when the limits see it, which may be after a wait for a check thread: a limiter's clock only moves on.
      const admit = (count: number) => admitItems(r.deps, r.req, r.reply, r.auth!, count, r.deps.clock(), profile);
      const checked = await r.deps.checks.check(r.body!.bytes, itemContext(r.auth!, r.arrival!, profile), admit);
      if (isRefusal(checked)) return checked;
      r.checked = checked;
      return null;
    },
  },
  {
    checks: [{ name: 'items', check: 'Items are checked; with strict=true any invalid item, else all of them invalid', codes: ['strict_item_invalid', 'all_items_invalid'] }],
    run: (r) => itemsVerdict(r.deps, r.req, r.auth!, r.checked!, r.options!.strict, r.options!.validate, BATCH_DIALECT),
  },
  {
    checks: [
      {
        name: 'write',
        check:
          'The durable write fails; or the store refuses items on what the project holds (a sixth group type, an illegal merge): with strict=true any of them (tried first, nothing stored), else every item of the batch',
        codes: ['collection_unavailable', 'strict_item_invalid', 'all_items_invalid'],
      },
    ],
    run: async (r) => {
      // Spelled out: spreading `options` here cost more than all of a one-item request's checks.
      const { validate, strict } = r.options!;
      return (await writeChecked(r.deps, r.req, r.reply, r.auth!, r.checked!, { validate, strict, arrival: r.arrival!, dialect: BATCH_DIALECT })) ?? DONE;
    },
  },
];

/** The list as the reference page shows it. */
export const CHECK_ORDER: readonly NamedCheck[] = BATCH_CHECKS.flatMap((s) => s.checks);

/** The checks the batch route runs itself, in order. */
const ROUTE_CHECKS = BATCH_CHECKS.flatMap((s) => (s.run === null ? [] : [s.run]));

/** Every /api/… request, through BATCH_CHECKS: the body is not read before the key, the limits and the headers have passed. */
export function batchRoute(deps: BatchRouteDeps) {
  return answering(deps, run);
}

async function run(deps: BatchRouteDeps, req: FastifyRequest, reply: FastifyReply): Promise<Refusal | null> {
  const url = req.raw.url ?? '/';
  const q = url.indexOf('?');
  const r: BatchRequest = { deps, req, reply, path: q === -1 ? url : url.slice(0, q), query: q === -1 ? '' : url.slice(q + 1) };
  try {
    for (const check of ROUTE_CHECKS) {
      let result = check(r);
      // Most checks answer at once: a request waits only on those that wait on something.
      if (result instanceof Promise) result = await result;
      if (result === DONE) return null;
      if (result !== null) return result;
    }
    return null;
  } finally {
    r.body?.release();
  }
}

/** The request's endpoint: the path check passed, so its path is one. */
function endpointOf(r: BatchRequest): EndpointProfile {
  return ENDPOINTS.get(r.path)!;
}
