/**
 * The OpenAPI parts of the PostHog-compatible endpoints (/batch/, /capture/,
 * /e/, /i/v0/e/), beside the batch endpoint's in openapi.ts.
 */
import { BATCH_PATH, DOCS_PATH } from './facts.js';
import { postHogPathList } from './posthog-section.js';
import { type Schema, ref } from './schemas.js';

/** PostHog's event, as far as Inlet reads it: anything else in it is ignored. */
function postHogEvent(): Schema {
  return {
    type: 'object',
    required: ['event'],
    description:
      'An event of PostHog\'s capture API. $identify, $set and $set_once are identify items ($set the traits, $set_once set_once, $unset unset; read in properties and at the top level); $create_alias an alias item (properties.alias the previous_id); ' +
      '$groupidentify a group item ($group_type, $group_key, $group_set); $pageview stays $pageview; other $ names are refused with reserved_event_name. ' +
      '$set, $set_once and $unset on any other event also update the person, as an identify with the same id and timestamp, listed after the batch\'s events.',
    properties: {
      event: { type: 'string' },
      distinct_id: { type: ['string', 'number'], description: 'The distinct_id.' },
      uuid: { description: 'Becomes the insert_id (a hash of it when it breaks the insert_id rule), so retries are stored once.' },
      timestamp: { type: ['string', 'null'], description: 'ISO 8601 with an offset, moved by the sender\'s clock skew (arrival − sent_at).' },
      properties: {
        type: ['object', 'null'],
        description: 'The properties, without what PostHog\'s libraries set themselves ($lib, $lib_version, $geoip_disable, $is_server, $os, $os_distro, $python_runtime, $python_version, $go_version, $lib_consumer, $feature/…); $groups is kept.',
      },
      api_key: { type: 'string', description: 'The server key, for a single event sent alone.' },
    },
  };
}

function postHogBatch(): Schema {
  return {
    type: 'object',
    required: ['batch'],
    properties: {
      api_key: { type: 'string', description: 'The server key, where posthog-node puts its project key.' },
      token: { type: 'string', description: 'The server key, under PostHog\'s other name for it.' },
      batch: { type: 'array', minItems: 1, maxItems: 500, items: ref('PostHogEvent') },
      sent_at: { type: ['string', 'null'], description: 'When the batch was sent, for the clock skew.' },
    },
  };
}

/** Component schemas of the PostHog-compatible endpoints. */
export function postHogSchemas(): Record<string, Schema> {
  return { PostHogEvent: postHogEvent(), PostHogBatch: postHogBatch() };
}

/** The PostHog-compatible paths: each a POST taking PostHog's shapes, answered as the batch endpoint answers (200 instead of 202). */
export function postHogPaths(baseUrl: string, errorResponses: Record<string, Schema>): Record<string, Record<string, Schema>> {
  const answers: Record<string, Schema> = {
    '200': {
      description: `What ${BATCH_PATH} answers with 202. Items refused are listed in errors, with their index in the batch.`,
      headers: { 'Request-Id': { $ref: '#/components/headers/Request-Id' } },
      content: { 'application/json': { schema: ref('BatchAnswer') } },
    },
    ...errorResponses,
  };
  const paths: Record<string, Record<string, Schema>> = {};
  // Listed without the trailing slash PostHog's libraries add (a linter's rule); both spellings are answered.
  for (const path of postHogPathList().map((p) => p.slice(0, -1))) {
    const name = path.split('/').filter((p) => p !== '').map((p) => p[0]!.toUpperCase() + p.slice(1)).join('');
    paths[path] = {
      post: {
        operationId: `posthog${name}`,
        tags: ['PostHog-compatible'],
        summary: `Send PostHog events to ${path}/`,
        description:
          `For code written for posthog-node or PostHog's capture API: change its host to this server. The path is answered with and without its trailing slash. The same checks, limits, idempotency and metering as ${BATCH_PATH}. ` +
          'The key may be sent as api_key (or token) in the body, or as a Bearer token; gzip is read from Content-Encoding or from ?compression=gzip-js, and a gzip body needs no Content-Type.' +
          (path === '/batch' ? ' At /batch (without the slash), a body with an events array and no batch, its key in api_key, is Amplitude\'s batch API body, and is read and answered as at /2/batch.' : ''),
        externalDocs: { url: `${baseUrl}${DOCS_PATH}#posthog` },
        security: [{ serverKey: [] }, {}],
        parameters: [
          {
            name: 'compression',
            in: 'query',
            required: false,
            description: 'gzip-js: the body is gzip, as PostHog\'s browser library says it. Other query parameters are ignored.',
            schema: { type: 'string', enum: ['gzip-js', 'gzip'] },
          },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { oneOf: [ref('PostHogBatch'), ref('PostHogEvent'), { type: 'array', minItems: 1, maxItems: 500, items: ref('PostHogEvent') }] } } },
        },
        responses: answers,
      },
    };
  }
  return paths;
}
