/**
 * The OpenAPI parts of the Mixpanel- and Amplitude-compatible endpoints,
 * beside the batch endpoint's in openapi.ts. Their answers are in the shape
 * those SDKs read, not in Inlet's envelope (src/intakes/mixpanel/answers.ts,
 * src/intakes/amplitude/answers.ts).
 */
import { MAX_EVENTS } from '../intakes/amplitude/amplitude-map.js';
import { MAX_MESSAGES } from '../intakes/mixpanel/mixpanel-map.js';
import { DOCS_PATH } from './facts.js';
import { amplitudePathList } from './amplitude-section.js';
import { mixpanelPathList } from './mixpanel-section.js';
import { type Schema, ref } from './schemas.js';

/** Statuses a request refused whole is answered with on these endpoints, and what gives them. */
const WHOLE_REFUSALS: [status: string, what: string][] = [
  ['400', 'The body is not what the endpoint reads (invalid_body, invalid_json, batch_empty, batch_too_many_items).'],
  ['401', 'No key, or a key that does not work (missing_key, invalid_key).'],
  ['404', 'The key\'s project has the API switched off, or the host is a tracker domain (not_found).'],
  ['405', 'Another method (method_not_allowed).'],
  ['413', 'The body is over 1 MiB, as sent or decompressed (payload_too_large).'],
  ['415', 'A Content-Encoding other than gzip or identity (unsupported_encoding).'],
  ['429', 'Over a rate limit (rate_limited); resend after Retry-After seconds.'],
  ['503', 'The server cannot take the request now (collection_unavailable); resend after Retry-After seconds.'],
];

function refusals(schema: string, except: ReadonlySet<string> = new Set()): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  for (const [status, what] of WHOLE_REFUSALS) {
    if (except.has(status)) continue;
    const headers = status === '429' || status === '503' ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : undefined;
    out[status] = { description: what, ...(headers && { headers }), content: { 'application/json': { schema: ref(schema) } } };
  }
  return out;
}

/** Component schemas of the Mixpanel- and Amplitude-compatible endpoints. */
export function vendorSchemas(): Record<string, Schema> {
  return {
    MixpanelMessage: {
      type: 'object',
      description:
        'An event ({"event", "properties"}: properties.distinct_id or $user_id, $device_id, time in seconds or milliseconds, $insert_id, token), a people update ($token, $distinct_id, $set, $set_once or $unset) or a group update ($token, $group_key, $group_id, $set).',
      properties: {
        event: { type: 'string' },
        properties: { type: 'object', description: 'The properties, without the libraries\' own (token, mp_lib, $lib_version, …).' },
        $token: { type: 'string', description: 'The server key, on a people or group update.' },
        $distinct_id: { type: ['string', 'number'] },
        $set: { type: 'object' },
        $set_once: { type: 'object' },
        $unset: { type: 'array', items: { type: 'string' } },
        $group_key: { type: 'string', description: 'The group type.' },
        $group_id: { type: ['string', 'number'], description: 'The group key.' },
      },
    },
    MixpanelData: {
      type: 'object',
      required: ['data'],
      properties: { data: { type: 'string', description: `The base64 of the JSON of one message or an array of 1 to ${MAX_MESSAGES}; a "+" sent unencoded is read as one.` } },
    },
    MixpanelVerboseAnswer: {
      type: 'object',
      required: ['status', 'error'],
      properties: { status: { type: 'integer', enum: [0, 1] }, error: { type: ['string', 'null'], description: 'The codes of the refused messages, or why the request was refused.' } },
    },
    MixpanelImportAnswer: {
      type: 'object',
      required: ['code', 'status'],
      properties: {
        code: { type: 'integer' },
        status: { type: 'string' },
        num_records_imported: { type: 'integer', minimum: 0 },
        failed_records: {
          type: 'array',
          items: {
            type: 'object',
            properties: { index: { type: 'integer' }, insert_id: { type: ['string', 'null'] }, field: { type: 'string' }, message: { type: 'string' } },
          },
        },
        error: { type: 'string', description: 'Why the request was refused whole.' },
      },
    },
    AmplitudeRequest: {
      type: 'object',
      required: ['events'],
      properties: {
        api_key: { type: 'string', description: 'The server key, where the SDK puts its API key.' },
        events: {
          type: 'array',
          minItems: 1,
          maxItems: MAX_EVENTS,
          items: {
            type: 'object',
            description:
              'event_type the event ($identify an identify item, $groupidentify a group item); user_id the distinct_id; device_id the anonymous_id (a browser person key) or the distinct_id without user_id; time (ms), insert_id; event_properties the properties; groups the $groups; user_properties ($set, $setOnce, $unset) update the person.',
            properties: {
              event_type: { type: 'string' },
              user_id: { type: ['string', 'number'] },
              device_id: { type: 'string' },
              time: { type: 'integer' },
              insert_id: { type: 'string' },
              event_properties: { type: 'object' },
              user_properties: { type: 'object' },
              group_properties: { type: 'object' },
              groups: { type: 'object' },
            },
          },
        },
      },
    },
    AmplitudeAnswer: {
      type: 'object',
      required: ['code'],
      properties: {
        code: { type: 'integer', description: 'What the SDK reads, the HTTP status aside.' },
        error: { type: 'string' },
        events_ingested: { type: 'integer', minimum: 0 },
        payload_size_bytes: { type: 'integer', minimum: 0 },
        server_upload_time: { type: 'integer' },
        events_with_invalid_fields: { type: 'object', additionalProperties: { type: 'array', items: { type: 'integer' } }, description: 'The refused events\' indices by field.' },
        missing_field: { type: 'string' },
      },
    },
  };
}

function mixpanelOperation(baseUrl: string, path: string, method: 'get' | 'post'): Schema {
  const name = `${path.slice(1, 2).toUpperCase()}${path.slice(2)}`;
  const isImport = path === '/import';
  const ok: Schema = isImport
    ? { description: 'Every record kept.', content: { 'application/json': { schema: ref('MixpanelImportAnswer') } } }
    : {
        description: '1 when every message was kept, 0 when any was refused (the others kept); with verbose=1 the JSON.',
        content: { 'text/plain': { schema: { type: 'string', enum: ['1', '0'] } }, 'application/json': { schema: ref('MixpanelVerboseAnswer') } },
      };
  const responses: Record<string, Schema> = { '200': ok, ...refusals(isImport ? 'MixpanelImportAnswer' : 'MixpanelVerboseAnswer', new Set(method === 'get' ? ['413', '415'] : [])) };
  if (isImport) responses['400'] = { description: 'A record was refused (failed_records; the others kept), or the body is not what /import reads.', content: { 'application/json': { schema: ref('MixpanelImportAnswer') } } };
  const verbose = { name: 'verbose', in: 'query', required: false, description: '1: answer in JSON.', schema: { type: 'string', enum: ['0', '1'] } };
  const op: Schema = {
    operationId: `mixpanel${name}${method === 'get' ? 'Get' : ''}`,
    tags: ['Mixpanel-compatible'],
    summary: `Send Mixpanel messages to ${path}${method === 'get' ? ' in the query' : ''}`,
    description: `For code written for the mixpanel SDKs: change its host to this server. The same checks, limits, idempotency and metering as the batch endpoint; the key is the project token in the messages, or the HTTP Basic user.`,
    externalDocs: { url: `${baseUrl}${DOCS_PATH}#mixpanel` },
    security: [{ writeKey: [] }, {}],
    responses,
  };
  if (method === 'get') {
    op.parameters = [{ name: 'data', in: 'query', required: true, description: 'The base64 of the JSON of the messages.', schema: { type: 'string' } }, verbose];
  } else {
    op.parameters = [verbose];
    const content: Record<string, Schema> = { 'application/x-www-form-urlencoded': { schema: ref('MixpanelData') } };
    if (isImport) content['application/json'] = { schema: { type: 'array', minItems: 1, maxItems: MAX_MESSAGES, items: ref('MixpanelMessage') } };
    op.requestBody = { required: true, content };
  }
  return op;
}

/** The Mixpanel-compatible paths: GET and POST, /import POST only. */
export function mixpanelPaths(baseUrl: string): Record<string, Record<string, Schema>> {
  const paths: Record<string, Record<string, Schema>> = {};
  for (const path of mixpanelPathList()) {
    paths[path] = path === '/import' ? { post: mixpanelOperation(baseUrl, path, 'post') } : { get: mixpanelOperation(baseUrl, path, 'get'), post: mixpanelOperation(baseUrl, path, 'post') };
  }
  return paths;
}

/** The Amplitude-compatible paths. */
export function amplitudePaths(baseUrl: string): Record<string, Record<string, Schema>> {
  const paths: Record<string, Record<string, Schema>> = {};
  for (const path of amplitudePathList()) {
    paths[path] = {
      post: {
        operationId: path === '/2/httpapi' ? 'amplitudeHttpApi' : 'amplitudeBatch',
        tags: ['Amplitude-compatible'],
        summary: `Send Amplitude events to ${path}`,
        description:
          'For code written for @amplitude/analytics-node: set its serverUrl to this path on this server. The same checks, limits, idempotency and metering as the batch endpoint; the key is api_key in the body, or a Bearer token.',
        externalDocs: { url: `${baseUrl}${DOCS_PATH}#amplitude` },
        security: [{ serverKey: [] }, {}],
        requestBody: { required: true, content: { 'application/json': { schema: ref('AmplitudeRequest') } } },
        responses: {
          '200': { description: 'Every event kept (events_ingested).', content: { 'application/json': { schema: ref('AmplitudeAnswer') } } },
          ...refusals('AmplitudeAnswer', new Set(['401'])),
          '400': {
            description: 'An event was refused (events_with_invalid_fields; the others kept), a missing or wrong key (missing_field, "Invalid API key"), or a body the endpoint does not read.',
            content: { 'application/json': { schema: ref('AmplitudeAnswer') } },
          },
        },
      },
    };
  }
  return paths;
}
