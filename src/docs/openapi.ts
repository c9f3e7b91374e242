/**
 * The OpenAPI 3.1 document of POST /api/v1/batch and POST /api/v1/import, the
 * Segment-spec and PostHog-compatible endpoints and /healthz and /readyz, built from the error table:
 * one response per status the table uses, listing exactly that status's codes.
 */
import { STATUS_CODES } from 'node:http';
import { REQUEST_ERRORS, type RequestErrorCode } from '../errors/codes.js';
import { envelope } from '../edge/envelope.js';
import type { Refusal } from '../domain/intake/refusal.js';
import type { ItemError } from '../domain/items/fields/field-error.js';
import { typesListed } from '../domain/ingest/item.js';
import {
  BATCH_PATH,
  DEFAULT_POLICY_HEADER,
  DEFAULT_RETENTION_DAYS,
  DOCS_PATH,
  EXAMPLE_RATELIMIT_HEADER,
  IMPORT_PATH,
  IMPORT_POLICY_HEADER,
  KEY_POLICY_HEADER,
  KEY_PREFIX,
  KEY_RATELIMIT_HEADER,
  MAX_BODY_BYTES,
  RETRY_AFTER_STATUSES,
} from './facts.js';
import { NOT_ON_SEGMENT, opsPaths, segmentPaths, segmentSchemas } from './openapi-segment.js';
import { postHogPaths, postHogSchemas } from './openapi-posthog.js';
import { amplitudePaths, mixpanelPaths, vendorSchemas } from './openapi-vendors.js';
import { type Schema, componentSchemas, errorEnvelope, ref } from './schemas.js';

/** The parts of an OpenAPI document that tests and clients read. */
export interface OpenApiDocument {
  openapi: '3.1.0';
  info: Schema;
  servers: { url: string }[];
  paths: Record<string, Record<string, Schema>>;
  components: Schema;
  [extra: string]: unknown;
}

/** The codes of REQUEST_ERRORS grouped by status, statuses in ascending order, codes in table order. */
export function codesByStatus(): Map<number, RequestErrorCode[]> {
  const groups = new Map<number, RequestErrorCode[]>();
  const codes = Object.keys(REQUEST_ERRORS) as RequestErrorCode[];
  for (const c of codes) {
    const status = REQUEST_ERRORS[c].status;
    groups.set(status, [...(groups.get(status) ?? []), c]);
  }
  return new Map([...groups].sort(([a], [b]) => a - b));
}

const header = (name: string): Schema => ({ $ref: `#/components/headers/${name}` });

function headers(): Record<string, Schema> {
  return {
    'Request-Id': { required: true, description: 'Identifies the request for support; the same value as request_id in the body.', schema: { type: 'string' } },
    'Retry-After': { required: true, description: 'Seconds to wait before resending.', schema: { type: 'integer', minimum: 0 } },
    RateLimit: {
      description:
        'What remains of each project window, per the IETF RateLimit header fields: r is the items left, t the seconds until the oldest count leaves the window. ' +
        `Sent on answers given after the project windows were checked (absent when the project limits are off), and on a 429 from the per-key limit, which it names: ${KEY_RATELIMIT_HEADER}.`,
      schema: { type: 'string', examples: [EXAMPLE_RATELIMIT_HEADER] },
    },
    'RateLimit-Policy': {
      description: `The project windows in force: q items per w seconds (absent when the project limits are off); on ${IMPORT_PATH} the one window is the import window (${IMPORT_POLICY_HEADER}); on a 429 from the per-key limit, that limit: ${KEY_POLICY_HEADER}.`,
      schema: { type: 'string', examples: [DEFAULT_POLICY_HEADER] },
    },
    Allow: { required: true, description: 'The one method the endpoint takes.', schema: { type: 'string', const: 'POST' } },
  };
}

const RATE_LIMIT_HEADERS = { RateLimit: header('RateLimit'), 'RateLimit-Policy': header('RateLimit-Policy') };

const EXAMPLE_REQUEST_ID = 'req_3fZ9aQ1xLm0bT7Kc';

// These two answers carry the item errors, so their examples show one.
const EXAMPLE_ITEM_ERRORS: Partial<Record<RequestErrorCode, ItemError[]>> = {
  all_items_invalid: [{ index: 0, code: 'missing_event_name', field: 'event', message: 'A track item needs an "event" name.' }],
  strict_item_invalid: [{ index: 3, code: 'invalid_timestamp', field: 'timestamp', message: '"timestamp" 1767225600 looks like epoch seconds; send epoch milliseconds (1767225600000) or an ISO 8601 string.' }],
};

function exampleRefusal(code: RequestErrorCode): Refusal {
  const errors = EXAMPLE_ITEM_ERRORS[code];
  return errors === undefined ? { code } : { code, errors };
}

function errorResponse(baseUrl: string, status: number, codes: RequestErrorCode[]): Schema {
  const h: Record<string, Schema> = { 'Request-Id': header('Request-Id') };
  if (RETRY_AFTER_STATUSES.has(status)) h['Retry-After'] = header('Retry-After');
  // The project windows are checked before items (400) and the write (503), so those answers may carry them too.
  if (status === 429 || status === 400 || status === 503) Object.assign(h, RATE_LIMIT_HEADERS);
  if (status === 405) h.Allow = header('Allow');
  const lines = codes.map((c) => `- \`${c}\`: ${REQUEST_ERRORS[c].when} Retry: ${REQUEST_ERRORS[c].retry}`);
  return {
    description: `${STATUS_CODES[status] ?? 'Error'}. Codes:\n\n${lines.join('\n')}`,
    'x-error-codes': codes,
    headers: h,
    content: {
      'application/json': {
        // The whole envelope, narrowed to this status's codes: an allOf of the
        // component and a narrowing leaves each part's example check half-blind.
        schema: errorEnvelope(codes),
        examples: Object.fromEntries(
          codes.map((c) => [c, { summary: REQUEST_ERRORS[c].when, value: envelope(baseUrl, EXAMPLE_REQUEST_ID, exampleRefusal(c)) }]),
        ),
      },
    },
  };
}

function queryFlag(name: string, description: string): Schema {
  // Serialised as the words true and false, the only values the endpoint takes.
  return { name, in: 'query', required: false, description, schema: { type: 'boolean', default: false } };
}

/** Builds the OpenAPI 3.1 document of the batch endpoint for a deployment at `baseUrl`. */
export function openApiDocument(baseUrl: string): OpenApiDocument {
  const responses: Record<string, Schema> = {
    '200': {
      description: 'validate=true: what would be stored for each valid item, and every item error. Nothing is stored or metered; the call still counts toward the rate limits.',
      headers: { 'Request-Id': header('Request-Id'), ...RATE_LIMIT_HEADERS },
      content: { 'application/json': { schema: ref('DryRunAnswer') } },
    },
    '202': {
      description: 'At least one item was accepted or dropped by policy. Every accepted item is durably stored.',
      headers: { 'Request-Id': header('Request-Id'), ...RATE_LIMIT_HEADERS },
      content: { 'application/json': { schema: ref('BatchAnswer') } },
    },
  };
  const segmentErrors: Record<string, Schema> = {};
  for (const [status, codes] of codesByStatus()) {
    responses[String(status)] = errorResponse(baseUrl, status, codes);
    const onSegment = codes.filter((c) => !NOT_ON_SEGMENT.has(c));
    if (onSegment.length > 0) segmentErrors[String(status)] = errorResponse(baseUrl, status, onSegment);
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Inlet batch API',
      version: '1',
      description: `Send analytics events and identify calls from your servers in batches. Reference: ${baseUrl}${DOCS_PATH}`,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
    },
    servers: [{ url: baseUrl }],
    security: [{ serverKey: [] }],
    tags: [
      { name: 'Batch API', description: 'The endpoints of Inlet\'s own shape.' },
      { name: 'Segment-spec', description: 'Segment\'s tracking API, for code written for Segment or RudderStack.' },
      { name: 'PostHog-compatible', description: 'PostHog\'s capture API, for code written for posthog-node.' },
      { name: 'Mixpanel-compatible', description: 'Mixpanel\'s ingestion API, for code written for the mixpanel SDKs.' },
      { name: 'Amplitude-compatible', description: 'Amplitude\'s HTTP V2 and batch APIs, for code written for @amplitude/analytics-node.' },
      { name: 'Operations', description: 'For load balancers and orchestrators: no key.' },
    ],
    paths: {
      [BATCH_PATH]: {
        post: operation(baseUrl, responses, {
          operationId: 'sendBatch',
          summary: `Send a batch of ${typesListed((t) => t, 'and')} items`,
          description:
            'Each item is checked on its own: valid items are kept, refused ones are listed with their index. ' +
            `The body may be at most ${MAX_BODY_BYTES} bytes as sent and once decompressed.`,
        }),
      },
      [IMPORT_PATH]: {
        post: operation(baseUrl, responses, {
          operationId: 'importBatch',
          summary: `Import a batch of historical ${typesListed((t) => t, 'and')} items`,
          description:
            `The same checks, answers, idempotency (insert_ids shared with ${BATCH_PATH}) and metering as ${BATCH_PATH}, except: ` +
            'every item needs a timestamp (missing_timestamp), which may be as old as the project\'s event retention ' +
            `(${DEFAULT_RETENTION_DAYS} days unless set; timestamp_before_retention beyond it), and the items count in the project's import window, not in burst or sustained.`,
        }),
      },
      ...segmentPaths(baseUrl, segmentErrors),
      // The PostHog intake answers what the Segment one does: no query flags, and a 200 even when every item is refused.
      ...postHogPaths(baseUrl, segmentErrors),
      ...mixpanelPaths(baseUrl),
      ...amplitudePaths(baseUrl),
      ...opsPaths(errorResponse(baseUrl, 503, ['collection_unavailable'])),
    },
    components: {
      securitySchemes: {
        serverKey: {
          type: 'http',
          scheme: 'bearer',
          description: `A server key (${KEY_PREFIX}…). Requests from browsers are refused.`,
        },
        writeKey: {
          type: 'http',
          scheme: 'basic',
          description: `On the Segment-spec endpoints: the server key (${KEY_PREFIX}…) as the user name, the password empty, as Segment's and RudderStack's SDKs send their write key.`,
        },
      },
      headers: headers(),
      responses: { BadRequest: errorResponse(baseUrl, 400, ['bad_request']) },
      schemas: { ...componentSchemas(), ...segmentSchemas(), ...postHogSchemas(), ...vendorSchemas() },
    },
  };
}

/** One endpoint's POST operation: both endpoints take the same request and give the same answers. */
function operation(baseUrl: string, responses: Record<string, Schema>, about: { operationId: string; summary: string; description: string }): Schema {
  return {
    ...about,
    tags: ['Batch API'],
    externalDocs: { url: `${baseUrl}${DOCS_PATH}` },
    parameters: [
      queryFlag('validate', 'Dry run: answer 200 with what would be stored; store and meter nothing.'),
      queryFlag('strict', 'Refuse the whole batch with 400 strict_item_invalid if any item is invalid.'),
      {
        name: 'Content-Encoding',
        in: 'header',
        required: false,
        description: 'gzip, identity, or left out.',
        schema: { type: 'string', enum: ['gzip', 'identity'] },
      },
    ],
    requestBody: {
      required: true,
      description: 'Content-Type must be application/json (charset=utf-8 allowed).',
      content: { 'application/json': { schema: ref('BatchRequest') } },
    },
    responses,
  };
}
