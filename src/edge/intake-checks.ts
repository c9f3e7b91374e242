/**
 * The steps of a request to any intake, in order: the one list the server
 * runs (every intake's route goes through INTAKE_CHECKS, intakeRoute) and the
 * reference page shows for the batch API (CHECK_ORDER, its table "Order of
 * checks"). A request is answered with the first check it fails, and later
 * checks never run (docs/design.md, "Order of checks");
 * test/http/check-order.test.ts holds the server to the list. What differs
 * between intakes is what each declares (src/intakes/intake.ts): its path
 * check, where its key is, its query, its body's shape and its answers.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RequestErrorCode } from '../errors/codes.js';
import { type Intake, NO_OPTIONS } from '../intakes/intake.js';
import { BATCH_PATH, IMPORT_PATH } from '../intakes/batch/endpoints.js';
import { DEFAULT_LIMITS } from '../domain/limits/policies.js';
import { MAX_ITEMS } from '../pipeline/check-batch.js';
import { ADMISSION_WAIT_MS } from './admission.js';
import { MAX_BODY_BYTES } from './read-body.js';
import { normaliseHost } from './host.js';
import {
  type IntakeDeps, type IntakeRequest, type Result, checkIntakeItems, finish, keyStep, queryStep, readIntakeBody, runRequest,
} from './intake-pipeline.js';
import { itemsVerdict, writeChecked } from '../domain/intake/run.js';
import { emptyFacts } from '../domain/intake/facts.js';
import { checkBrowser, checkMethod } from './request-checks.js';
import { applyPlan, findPlan } from '../domain/intake/plan.js';

/** One check as the reference lists it: its name, what fails it (inline markdown), and the codes it answers with then. */
export interface NamedCheck {
  /** Stable name, for the test that holds the server to the list. */
  name: string;
  check: string;
  codes: RequestErrorCode[];
}

/**
 * Checks that share one piece of code, in the list's order. `run` is null for
 * those made before any route: Node's HTTP parser, and the app's hook that
 * answers for a stopping server (app.ts).
 */
interface Step {
  checks: NamedCheck[];
  run: ((r: IntakeRequest) => Result | Promise<Result>) | null;
}

const MIB = `1 MiB (${MAX_BODY_BYTES.toLocaleString('en-US')} bytes)`;

/** Every check in order; a request that passes them all is answered as its intake answers (the batch API: 202, or 200 with validate=true). */
export const INTAKE_CHECKS: readonly Step[] = [
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
    run: (r) => r.intake.checkPath(r.path, normaliseHost(r.req.headers.host), r.deps.trackerHosts, r.deps.retiredVersions),
  },
  { checks: [{ name: 'method', check: 'The method is not POST (OPTIONS included; GET is also taken on the Mixpanel-compatible endpoints)', codes: ['method_not_allowed'] }], run: (r) => checkMethod(r.req.method, r.intake.route.methods) },
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
    // An intake whose key may be in the body has it checked with the body's step, when the header has none.
    run: keyStep,
  },
  {
    checks: [{ name: 'query', check: 'A query parameter is unknown, repeated, or not true/false', codes: ['invalid_query'] }],
    run: queryStep,
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
    run: readIntakeBody,
  },
  // The version of the tracking plan the source checks, if any, for the item checks (domain/intake/plan.ts).
  { checks: [], run: findPlan },
  {
    // On a check thread for a large body (CheckThreads): its items are checked there before the
    // project's windows count them here, with the same answer (docs/design.md, "Checks on a thread").
    checks: [
      { name: 'json', check: 'The body is not UTF-8 JSON, or the gzip stream is broken', codes: ['invalid_json'] },
      { name: 'body', check: 'The body is not an object with an `items` array', codes: ['invalid_body'] },
      { name: 'count', check: `\`items\` is empty, or holds more than ${MAX_ITEMS}`, codes: ['batch_empty', 'batch_too_many_items'] },
      { name: 'project-rate', check: "The items would overflow one of the project's windows", codes: ['rate_limited'] },
    ],
    run: checkIntakeItems,
  },
  // A source's own checks: its tracking plan (domain/intake/plan.ts) moves each item it refuses out of
  // r.checked.items into its errors and refused (as keptOrRefused does with the store's refusals);
  // the verdict below then sees them, and finish records them as any refused item.
  { checks: [], run: applyPlan },
  {
    checks: [
      {
        name: 'items',
        check: "Items are checked (and held to the source's tracking plan, when it enforces one); with strict=true any invalid item, else all of them invalid",
        codes: ['strict_item_invalid', 'all_items_invalid'],
      },
    ],
    run: itemsVerdict,
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
    run: writeChecked,
  },
];

/** The list as the reference page shows it. */
export const CHECK_ORDER: readonly NamedCheck[] = INTAKE_CHECKS.flatMap((s) => s.checks);

/** The checks an intake's route runs itself, in order. */
const ROUTE_CHECKS = INTAKE_CHECKS.flatMap((s) => (s.run === null ? [] : [s.run]));

/** An intake's route: every request through INTAKE_CHECKS, the body not read before the key, the limits and the headers have passed, and out by finish. */
export function intakeRoute(deps: IntakeDeps, intake: Intake) {
  return async function handle(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const url = req.raw.url ?? '/';
    const q = url.indexOf('?');
    const r: IntakeRequest = {
      deps, intake, req, reply, path: q === -1 ? url : url.slice(0, q), query: q === -1 ? '' : url.slice(q + 1),
      request: runRequest(req, reply), facts: (req.facts ??= emptyFacts()),
      auth: undefined, options: NO_OPTIONS, body: undefined, keyInBody: false, arrival: 0, checked: undefined, outcomes: undefined, kept: undefined,
    };
    try {
      finish(r, await run(r));
    } finally {
      r.body?.release();
    }
  };
}

async function run(r: IntakeRequest): Promise<Result> {
  for (const check of ROUTE_CHECKS) {
    let result = check(r);
    // Most checks answer at once: a request waits only on those that wait on something.
    if (result instanceof Promise) result = await result;
    if (result !== null) return result;
  }
  return null;
}
