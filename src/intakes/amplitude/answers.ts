/**
 * Answers as Amplitude's SDKs read them: the JSON's own `code` (the SDK reads
 * it, not the status line) and `error`. A request with a refused event is 400
 * with `events_with_invalid_fields`, the kept ones stored: the SDK drops
 * exactly those indices and sends the rest again, which are then repeats of
 * their insert_ids, stored once. A missing or wrong key is Amplitude's 400
 * (`missing_field`, "Invalid API key"), which the SDK reports without
 * retrying; 429 keeps its Retry-After, 413 makes the SDK halve its batch.
 */
import type { ItemError } from '../../domain/items/fields/field-error.js';
import type { AnswerShape, TakenAnswer } from '../intake.js';

/** Inlet's item fields by the names the SDK sent them under. */
const FIELD_NAMES: ReadonlyMap<string, string> = new Map([
  ['event', 'event_type'], ['distinct_id', 'user_id'], ['anonymous_id', 'device_id'], ['timestamp', 'time'], ['properties', 'event_properties'],
  ['set_once', 'user_properties'], ['unset', 'user_properties'], ['group_type', 'groups'], ['group_key', 'groups'], ['item', 'event'],
]);

/** An error's field as the event named it: its first part only (what the SDK reads is the index). */
function sentField(e: ItemError): string {
  const head = e.field.split('.')[0]!;
  return FIELD_NAMES.get(head) ?? head;
}

/** The refused events' indices by the field each was first refused for. */
function invalidFields(errors: ItemError[]): Record<string, number[]> {
  const out = new Map<string, number[]>();
  let last = -1;
  for (const e of errors) {
    if (e.index === last) continue;
    last = e.index;
    const field = sentField(e);
    const list = out.get(field);
    if (list === undefined) out.set(field, [e.index]);
    else list.push(e.index);
  }
  return Object.fromEntries(out);
}

function taken(a: TakenAnswer) {
  if (a.errors.length === 0) return { status: 200, body: { code: 200, events_ingested: a.kept, payload_size_bytes: a.bytes, server_upload_time: Date.now() } };
  const first = a.errors[0]!;
  return {
    status: 400,
    body: {
      code: 400,
      error: `${first.code}: ${first.message} (event ${first.index}, ${first.field})`,
      events_ingested: a.kept,
      events_with_invalid_fields: invalidFields(a.errors),
    },
  };
}

export const AMPLITUDE_ANSWERS: AnswerShape = {
  taken,
  refused(whole) {
    const error = `${whole.code}: ${whole.message}`;
    if (whole.code === 'missing_key') return { status: 400, body: { code: 400, error, missing_field: 'api_key' } };
    if (whole.code === 'invalid_key') return { status: 400, body: { code: 400, error: `Invalid API key: ${whole.message}` } };
    return { status: whole.status, body: { code: whole.status, error } };
  },
};
