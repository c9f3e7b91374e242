/**
 * The OpenAPI parts of the Segment-spec endpoints (/v1/batch, /v1/track, …)
 * and of the operations endpoints (/healthz, /readyz), beside the batch
 * endpoint's in openapi.ts.
 */
import { SEGMENT_PATHS } from '../intakes/segment/segment-map.js';
import { OPS_PATHS } from '../edge/ops-routes.js';
import { BATCH_PATH, DOCS_PATH } from './facts.js';
import { type Schema, ref } from './schemas.js';

/** Request codes the Segment-spec endpoints never answer: they take no query, and a batch whose items are all refused is still a 200 that lists them. */
export const NOT_ON_SEGMENT: ReadonlySet<string> = new Set(['invalid_query', 'all_items_invalid', 'strict_item_invalid']);

/** Segment's message, as far as Inlet reads it: anything else in it is ignored. */
function segmentMessage(): Schema {
  const text = { type: ['string', 'null'] };
  return {
    type: 'object',
    description:
      "A message of Segment's tracking API. userId is the distinct_id; an anonymousId of the form per_… is a browser person, another is the distinct_id of a message without userId. " +
      'messageId becomes the insert_id (a hash of it when it breaks the insert_id rule), so retries are stored once. page and screen are stored as the events $pageview and $screen; group and alias are refused with their code.',
    properties: {
      type: { type: 'string', description: 'On /v1/batch: track (also when absent), identify, page, screen, group or alias. Elsewhere set by the path.' },
      event: { type: 'string', description: 'track: the event name.' },
      name: { type: 'string', description: 'page and screen: kept as the property name.' },
      userId: { type: ['string', 'number', 'null'] },
      anonymousId: text,
      messageId: { description: 'Any JSON value; becomes the insert_id.' },
      timestamp: { ...text, description: 'ISO 8601 with an offset, moved by the sender\'s clock skew (receivedAt − sentAt).' },
      originalTimestamp: { ...text, description: 'Used when timestamp is absent (what RudderStack sends).' },
      sentAt: text,
      properties: { type: ['object', 'null'], description: 'track, page, screen: the properties, checked as an item\'s.' },
      traits: { type: ['object', 'null'], description: 'identify: the traits.' },
      context: {
        type: 'object',
        description: 'Read for ip, userAgent and page.url when properties lack $ip, $user_agent, $current_url.',
        properties: { ip: { type: 'string' }, userAgent: { type: 'string' }, page: { type: 'object', properties: { url: { type: 'string' } } } },
      },
      writeKey: { type: 'string', description: 'The server key, as older SDKs send it in the body.' },
    },
  };
}

function segmentBatch(): Schema {
  return {
    type: 'object',
    required: ['batch'],
    properties: {
      batch: { type: 'array', minItems: 1, maxItems: 500, items: ref('SegmentMessage') },
      sentAt: { type: ['string', 'null'], description: 'For messages without their own sentAt.' },
      writeKey: { type: 'string', description: 'The server key, as older SDKs send it in the body.' },
    },
  };
}

/** Component schemas of the Segment-spec endpoints. */
export function segmentSchemas(): Record<string, Schema> {
  return { SegmentMessage: segmentMessage(), SegmentBatch: segmentBatch() };
}

/** The Segment-spec paths: each a POST taking Segment's shapes, answered as the batch endpoint answers (200 instead of 202). */
export function segmentPaths(baseUrl: string, errorResponses: Record<string, Schema>): Record<string, Record<string, Schema>> {
  const answers: Record<string, Schema> = {
    '200': {
      description: `What ${BATCH_PATH} answers with 202: SDKs written for Segment take any 2xx as delivered. Items refused are listed in errors, with their index in the batch.`,
      headers: { 'Request-Id': { $ref: '#/components/headers/Request-Id' } },
      content: { 'application/json': { schema: ref('BatchAnswer') } },
    },
    ...errorResponses,
  };
  const paths: Record<string, Record<string, Schema>> = {};
  for (const [path, type] of SEGMENT_PATHS) {
    const name = type === null ? 'Batch' : type[0]!.toUpperCase() + type.slice(1);
    paths[path] = {
      post: {
        operationId: `segment${name}`,
        tags: ['Segment-spec'],
        summary: type === null ? 'Send a batch of Segment messages' : `Send one Segment ${type} message`,
        description:
          `For code written for Segment or RudderStack: change its host to this server. The same checks, limits, idempotency and metering as ${BATCH_PATH}. ` +
          'The key may be sent as the HTTP Basic user name with an empty password (what those SDKs do with their write key), as a Bearer token, or as writeKey in the body; a gzip body needs no Content-Type.',
        externalDocs: { url: `${baseUrl}${DOCS_PATH}#segment` },
        security: [{ writeKey: [] }, { serverKey: [] }, {}],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: type === null ? ref('SegmentBatch') : ref('SegmentMessage') } },
        },
        responses: answers,
      },
    };
  }
  return paths;
}

/** GET /healthz and GET /readyz, for load balancers: no key, answered even while the server stops. */
export function opsPaths(readyzUnavailable: Schema): Record<string, Record<string, Schema>> {
  const [healthz, readyz] = [...OPS_PATHS];
  const status = (value: string): Schema => ({ type: 'object', required: ['status'], properties: { status: { type: 'string', const: value } } });
  return {
    [healthz!]: {
      get: {
        operationId: 'healthz',
        tags: ['Operations'],
        summary: 'The process serves',
        description: 'Answers 200 while the process runs and takes requests; it checks nothing else.',
        security: [],
        responses: {
          '200': { description: 'Serving.', content: { 'application/json': { schema: status('ok') } } },
          '400': { $ref: '#/components/responses/BadRequest' },
        },
      },
    },
    [readyz!]: {
      get: {
        operationId: 'readyz',
        tags: ['Operations'],
        summary: 'Send this server traffic',
        description: 'Answers 200 when the store answers a trivial query within 1 s and the server is not stopping; else 503 collection_unavailable, whose message says which.',
        security: [],
        responses: {
          '200': { description: 'Ready.', content: { 'application/json': { schema: status('ready') } } },
          '400': { $ref: '#/components/responses/BadRequest' },
          '503': readyzUnavailable,
        },
      },
    },
  };
}
