/**
 * Answers as Mixpanel's SDKs read them. /track, /engage and /groups (and
 * /import sent `data=`, as the SDKs send it): `1` when every message was kept,
 * `0` when any was refused (the SDK then reports an error), or with verbose=1
 * `{"status": 1|0, "error": …}`. /import sent a JSON array: its JSON with
 * num_records_imported, and failed_records when any was refused (the others
 * kept). A request refused whole keeps its status (401, 413, 429 with
 * Retry-After, …) and says why in `error`, which the SDK passes to its caller.
 */
import { STATUS_CODES } from 'node:http';
import type { ItemError } from '../../domain/items/fields/field-error.js';
import type { AnswerShape, AnswerTarget, ShapedAnswer, TakenAnswer } from '../intake.js';
import { MIXPANEL_PATHS } from './mixpanel-map.js';

/** Whether the request asked for the JSON answer (verbose=1). */
function verbose(target: AnswerTarget): boolean {
  const v = new URLSearchParams(target.query).getAll('verbose').at(-1);
  return v === '1' || v === 'true';
}

/**
 * Whether the answer is /import's JSON: to a JSON body. Its SDKs send /import
 * `data=` as they send /track, and read the answer as /track's.
 */
function jsonImport(target: AnswerTarget): boolean {
  if (MIXPANEL_PATHS.get(target.path) !== 'import' || target.method === 'GET') return false;
  return !(target.contentType ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
}

/** Each refused item's first error. */
function firstErrors(errors: ItemError[]): ItemError[] {
  return errors.filter((e, i) => i === 0 || errors[i - 1]!.index !== e.index);
}

/** The refused items' codes, each once, in the order met: what `error` says of them. */
function codesOf(errors: ItemError[]): string {
  return [...new Set(errors.map((e) => e.code))].join(', ');
}

function taken(a: TakenAnswer, target: AnswerTarget): ShapedAnswer {
  if (jsonImport(target)) {
    if (a.errors.length === 0) return { status: 200, body: { code: 200, status: 'OK', num_records_imported: a.kept } };
    const failed = firstErrors(a.errors).map((e) => ({ index: e.index, insert_id: a.insertIds.get(e.index) ?? null, field: e.field, message: `${e.code}: ${e.message}` }));
    return { status: 400, body: { code: 400, status: 'Bad Request', num_records_imported: a.kept, failed_records: failed } };
  }
  const ok = a.errors.length === 0;
  if (!verbose(target)) return { status: 200, body: ok ? '1' : '0' };
  if (ok) return { status: 200, body: { status: 1, error: null } };
  const first = a.errors[0]!;
  return { status: 200, body: { status: 0, error: `${codesOf(a.errors)} (message ${first.index}, ${first.field}: ${first.message})` } };
}

export const MIXPANEL_ANSWERS: AnswerShape = {
  taken,
  refused(whole, target) {
    const error = `${whole.code}: ${whole.message}`;
    if (jsonImport(target)) return { status: whole.status, body: { code: whole.status, status: STATUS_CODES[whole.status] ?? 'Error', error } };
    return { status: whole.status, body: { status: 0, error } };
  },
};
