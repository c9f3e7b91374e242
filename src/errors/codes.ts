/**
 * The one table of every code Inlet can answer with. The error envelope, the
 * HTML reference page and the OpenAPI document are all generated from it, and
 * a test fails when any of them drifts from it.
 */

/** A request-level failure: the whole request is answered with this status. */
export interface RequestErrorSpec {
  status: number;
  /** Default message: a plain sentence that says what to change. */
  message: string;
  /** When the code is answered, for the reference page. */
  when: string;
  retryable: boolean;
  /** What a client should do, for the reference page. */
  retry: string;
}

export const REQUEST_ERRORS = {
  bad_request: {
    status: 400,
    message: 'The request is not valid HTTP/1.1. Send one Host header, one Content-Length (or chunked Transfer-Encoding, not both) and a method HTTP defines.',
    when: 'The request is not valid HTTP/1.1, before any other check: no Host header or more than one, Content-Length given twice or together with Transfer-Encoding, a method HTTP does not define, or a request line or header that cannot be parsed. The connection is closed.',
    retryable: false,
    retry: 'No. Fix the client or whatever sits between it and the server.',
  },
  invalid_json: {
    status: 400,
    message: 'The request body is not valid UTF-8 JSON. Send a JSON object such as {"items": [...]}.',
    when: 'The body (after gzip decompression, if any) is not valid UTF-8 JSON, or the gzip stream is corrupt.',
    retryable: false,
    retry: 'No. Fix the body first.',
  },
  invalid_body: {
    status: 400,
    message: 'The body must be a JSON object with an "items" array.',
    when: 'The body is JSON but not an object, or "items" is missing or not an array.',
    retryable: false,
    retry: 'No. Fix the body first.',
  },
  batch_empty: {
    status: 400,
    message: 'The "items" array is empty. Send at least one item.',
    when: '"items" holds no entries.',
    retryable: false,
    retry: 'No.',
  },
  batch_too_many_items: {
    status: 400,
    message: 'A batch holds at most 500 items. Split it into smaller batches.',
    when: '"items" holds more than 500 entries.',
    retryable: false,
    retry: 'No. Split the batch and send each part.',
  },
  all_items_invalid: {
    status: 400,
    message: 'Every item in the batch was refused; see error.errors for what is wrong with each.',
    when: 'No item was accepted or dropped by policy. The item errors are listed in error.errors.',
    retryable: false,
    retry: 'No. Fix the items first.',
  },
  strict_item_invalid: {
    status: 400,
    message: 'strict=true was set and at least one item is invalid, so nothing was stored; see error.errors.',
    when: 'strict=true and at least one item is invalid. Nothing is stored; the item errors are listed in error.errors.',
    retryable: false,
    retry: 'No. Fix the listed items and send the whole batch again.',
  },
  invalid_query: {
    status: 400,
    message: 'Only the query parameters validate and strict are allowed, each at most once, with the value true or false.',
    when: 'A query parameter other than validate or strict, a repeated one, or a value other than true or false.',
    retryable: false,
    retry: 'No.',
  },
  missing_key: {
    status: 401,
    message: 'Send your server key as "Authorization: Bearer <key>".',
    when: 'No Authorization header, or a scheme other than Bearer.',
    retryable: false,
    retry: 'No.',
  },
  invalid_key: {
    status: 401,
    message: 'The server key is unknown, revoked or expired. Send a working key; "inlet key create --source <source id>" makes a new one.',
    when: 'The key is unknown, revoked or expired, or belongs to a deleted source, project or organization. It is checked again when the items are written: a key revoked while the body was being sent gets this too, and nothing is stored.',
    retryable: false,
    retry: 'No. Use a working key.',
  },
  browser_not_allowed: {
    status: 403,
    message: 'Server keys must not be used from a browser. Send the batch from your server, without Origin or Sec-Fetch-* headers.',
    when: 'The request carries an Origin header or a Sec-Fetch-* header (a lone "Sec-Fetch-Mode: cors", as sent by the fetch built into Node.js, is let through).',
    retryable: false,
    retry: 'No.',
  },
  not_found: {
    status: 404,
    message: 'There is no such endpoint. Send batches to POST /api/v1/batch on the app host.',
    when: 'An unknown path, a tracker host, or a project whose API access is not enabled yet. The API is switched on in the console (the project\'s settings: API enabled, then Save) or with "inlet project update <project id> --api-enabled true"; the message names both for that project.',
    retryable: false,
    retry: 'No.',
  },
  method_not_allowed: {
    status: 405,
    message: 'Use POST for this endpoint.',
    when: 'Any method other than POST. The answer carries "Allow: POST".',
    retryable: false,
    retry: 'No.',
  },
  request_timeout: {
    status: 408,
    message: 'The request did not arrive in full within 30 seconds, so the server stopped waiting; nothing of it was stored. Resend it whole.',
    when: 'The request line, headers and body did not all arrive within 30 s of the request starting (a client that stalls or trickles its body). The connection is closed; nothing of the request was stored.',
    retryable: true,
    retry: 'Yes, with exponential backoff and the same insert_ids.',
  },
  api_version_retired: {
    status: 410,
    message: 'This API version is retired. Send requests to /api/v1/batch.',
    when: 'The path names an API version that has been retired.',
    retryable: false,
    retry: 'No. Move to the current version.',
  },
  payload_too_large: {
    status: 413,
    message: 'The body is larger than 1 MiB (1,048,576 bytes) as sent or once decompressed. Split the batch.',
    when: 'The body is over 1 MiB as sent, or over 1 MiB once decompressed.',
    retryable: false,
    retry: 'Split the batch and send each part.',
  },
  unsupported_media_type: {
    status: 415,
    message: 'Send the body as JSON with "Content-Type: application/json".',
    when: 'Content-Type is missing or not application/json (a charset=utf-8 parameter is fine).',
    retryable: false,
    retry: 'No.',
  },
  unsupported_encoding: {
    status: 415,
    message: 'Content-Encoding must be gzip or identity, or be left out.',
    when: 'Content-Encoding is something other than gzip or identity.',
    retryable: false,
    retry: 'No.',
  },
  headers_too_large: {
    status: 431,
    message: 'The request line and headers are over 16 KiB together. Send fewer or shorter headers.',
    when: 'The request line and headers are over 16 KiB (16,384 bytes) together, before any other check. The connection is closed.',
    retryable: false,
    retry: 'No. Send fewer or shorter headers.',
  },
  rate_limited: {
    status: 429,
    message: 'A rate limit was reached and nothing in this request was stored. Resend it after the Retry-After seconds.',
    when: 'A rate limit tripped. Retry-After is 10 (burst or per-key limit) or 60 (sustained limit, or the import limit on /api/v1/import). Nothing in the request was stored or metered.',
    retryable: true,
    retry: 'Yes, after Retry-After seconds, with the same insert_ids.',
  },
  internal_error: {
    status: 500,
    message: 'Something went wrong inside the server. Retry with backoff; if it keeps happening, give the request_id to whoever runs Inlet, so they can find it in the logs.',
    when: 'An unexpected failure.',
    retryable: true,
    retry: 'Yes, with exponential backoff and the same insert_ids.',
  },
  collection_unavailable: {
    status: 503,
    message: 'The events could not be stored durably, so nothing of this request was kept. Resend the whole request after Retry-After seconds.',
    when: 'The durable write failed, the server is shutting down, or it already holds more batches than it can store: this one waited for room (read, not yet parsed; 10 s by default) or found too many waiting already, or, before its body was read, the server (64 MiB by default) or its key (16 MiB) already had as many bodies being read as it may, or, for a body with its key inside (the writeKey of Segment 2.x), the pool all such bodies share (8 MiB, apart from the rest) or its client address (1 MiB) did, in which case the connection is closed; or, for a body with its key inside, the check threads already have as many such bodies to find the key of as they take, and as many waiting. Retry-After is 5. Nothing of the request was stored or metered.',
    retryable: true,
    retry: 'Yes, resend the whole request with the same insert_ids after Retry-After seconds.',
  },
} as const satisfies Record<string, RequestErrorSpec>;

export type RequestErrorCode = keyof typeof REQUEST_ERRORS;

/** A per-item refusal, listed in errors[]. None is retryable. */
export interface ItemErrorSpec {
  when: string;
}

export const ITEM_ERRORS = {
  invalid_item: { when: 'The item is not a JSON object.' },
  invalid_item_type: { when: '"type" is not "track", "identify", "group" or "alias".' },
  item_type_not_yet_supported: { when: 'Kept for item types still to come: no type is answered with it today ("group" and "alias" once were).' },
  missing_event_name: { when: 'A track item has no "event".' },
  invalid_event_name: { when: '"event" is not a string of 1 to 128 characters without control characters.' },
  reserved_event_name: {
    when: '"event" starts with "$" (other than $agent_step and $agent_run), or is identify, alias, group or merge in any case.',
  },
  missing_identity: {
    when: 'A track item has neither "distinct_id" nor "anonymous_id", or an identify or alias item has no "distinct_id".',
  },
  invalid_distinct_id: {
    when: '"distinct_id" is not a string of 1 to 128 characters, has control characters, or is a placeholder such as "undefined", "null" or "0".',
  },
  invalid_group_type: { when: 'A group item has no "group_type", or it is not 1 to 64 characters of a-z, 0-9 and "_".' },
  invalid_group_key: {
    when: 'A group item has no "group_key", or it breaks the distinct_id rules: not a string of 1 to 128 characters, control characters, or a placeholder such as "undefined".',
  },
  too_many_group_types: {
    when: 'A group item names a sixth group type in its project: a project has at most 5. Decided when the item is written, so a dry run shows it too.',
  },
  invalid_previous_id: {
    when: 'An alias item has no "previous_id", it breaks the distinct_id rules, or it equals "distinct_id".',
  },
  illegal_merge: {
    when: 'An alias item would merge two identified people: the person of "previous_id" is also known by another distinct_id. Nothing is changed; the message names neither person\'s other ids.',
  },
  invalid_anonymous_id: { when: '"anonymous_id" is not a browser person key ("per_" followed by letters, digits, "_" or "-").' },
  invalid_session_id: { when: '"session_id" is not a session id ("ses_" followed by letters, digits, "_" or "-").' },
  invalid_insert_id: { when: '"insert_id" is not 1 to 80 characters of A-Z, a-z, 0-9, "_" and "-".' },
  duplicate_insert_id: { when: 'The same insert_id appears twice in one request; the later item is refused.' },
  invalid_timestamp: { when: '"timestamp" is neither ISO 8601 with a date, time and offset nor an integer of epoch milliseconds.' },
  missing_timestamp: { when: 'An item sent to /api/v1/import has no "timestamp"; a historical event needs the time it happened.' },
  timestamp_too_old: { when: '"timestamp" is more than 7 days before the server clock (on /api/v1/batch). Send older events to /api/v1/import.' },
  timestamp_before_retention: {
    when: "\"timestamp\" is older than the project's event retention (400 days unless the project sets another), on /api/v1/import: such an event would be deleted at once.",
  },
  timestamp_in_future: { when: '"timestamp" is more than 10 minutes after the server clock.' },
  invalid_properties: {
    when: '"properties" is not a JSON object, is nested deeper than 5 levels, has a key longer than 255 characters, or holds a number that cannot be kept exactly or a key or string with U+0000 or a lone surrogate.',
  },
  properties_too_large: { when: '"properties" is over 8,192 bytes of JSON after normalisation.' },
  too_many_properties: { when: '"properties" has more than 255 top-level keys after normalisation.' },
  invalid_set_once: {
    when: '"set_once" on an identify item is not a JSON object, or breaks a rule "properties" has (keys, depth, size, "$" keys).',
  },
  invalid_unset: {
    when: '"unset" on an identify item is not an array of trait names (strings of at most 255 characters, at most 255 of them), or names a key "properties" sets too.',
  },
  reserved_property: { when: 'A "$" property that Inlet does not accept.' },
  unsupported_operation: {
    when: "A person or group update with an operation Inlet does not keep: Mixpanel's $add, $append, $union, $remove or $delete on /engage, Amplitude's $add, $append, $prepend, $remove, $preInsert, $postInsert or $clearAll in user_properties, and on a group anything but $set. A person's traits are set, set once or unset, a group's set; the update is refused rather than dropped unseen.",
  },
  token_mismatch: {
    when: "A Mixpanel-compatible message names another project token (`properties.token`, `$token`) than the request's first message, whose token is the request's key: it would be stored in the wrong project.",
  },
  invalid_reserved_property: { when: 'An accepted "$" property has a value of the wrong form (for example a $currency that is not ISO 4217).' },
  unplanned_event: {
    when: 'The source enforces a tracking plan that names no rule for this track event, and refuses unplanned events (the default in enforce). With the plan observed it is a warning instead. See docs/plans.md.',
  },
  plan_violation: {
    when: 'The item\'s properties (an identify\'s traits, a group\'s traits) fail its rule in the tracking plan the source enforces; `field` is the path of the first violation and the message lists up to five (path, keyword, what the rule expects), never the value sent. `field` is `context.plan_version` when the item asks for a rule version the plan does not have for its event. With the plan observed it is a warning instead. See docs/plans.md.',
  },
} as const satisfies Record<string, ItemErrorSpec>;

export type ItemErrorCode = keyof typeof ITEM_ERRORS;

/** Why a valid item was not stored, listed in dropped[]. */
export const DROP_REASONS = {
  bot_filtered: { when: 'The $user_agent is a known bot and the source filters bots (the default).' },
  collection_paused: { when: "The project's monthly event limit is reached; track items are not stored until the next month (UTC) or until the limit is raised with inlet project update <project id> --monthly-event-limit." },
  suppressed: {
    when: 'The distinct_id, or the anonymous_id, belongs to a person who was erased with suppression (inlet person delete --suppress): the erased person\'s id is suppressed with its distinct_ids, so nothing sent for either is stored or metered, and the person is not made again, until it is unsuppressed.',
  },
} as const satisfies Record<string, ItemErrorSpec>;

export type DropReason = keyof typeof DROP_REASONS;

/** Seconds a client should wait, for the codes that carry Retry-After by default. */
export const DEFAULT_RETRY_AFTER: Partial<Record<RequestErrorCode, number>> = {
  collection_unavailable: 5,
};
