/** Reads an answer of the batch endpoint into what happens to each item of the batch. */
import type { ItemError, ItemResult } from './types.js';

/** A result without the fields the client fills in (insertId, attempts). */
export type Verdict =
  | { outcome: 'accepted' }
  | { outcome: 'duplicate' }
  | { outcome: 'dropped'; reason: string }
  | { outcome: 'refused'; errors: Omit<ItemError, 'index'>[] }
  | { outcome: 'failed'; status?: number; code?: string; error?: string };

/** What to do with a batch after one attempt. */
export type Step =
  /** Every item has a final verdict, by its index in the batch. */
  | { kind: 'done'; verdicts: Verdict[] }
  /** Send the same batch again (same insert_ids), after at least `retryAfterMs` when given. */
  | { kind: 'retry'; status?: number; code?: string; error?: string; retryAfterMs: number | null }
  /** Too big for one request: send each half on its own. */
  | { kind: 'split'; status: number; code?: string };

/** Statuses the API reference says to retry, besides network errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(header: string | null, now: number): number | null {
  if (header === null) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** The step for an answer with `status`, body `body` (parsed JSON or undefined), to a batch of `size` items. */
export function stepFor(status: number, body: unknown, size: number, retryAfterMs: number | null): Step {
  const code = errorCode(body);
  if (status >= 200 && status < 300) {
    // A 2xx we cannot read tells nothing per item; resending is safe because
    // the insert_ids make stored items come back as duplicates. A JSON object
    // without the batch answer's `accepted` count is not Inlet's answer (a
    // proxy's page, a wrong baseUrl): taking it as delivery would lose the items.
    if (!isObject(body) || typeof body.accepted !== 'number') return { kind: 'retry', status, error: 'unreadable answer', retryAfterMs };
    return { kind: 'done', verdicts: fromAccepted(body, size) };
  }
  if (status === 413 || code === 'batch_too_many_items') return { kind: 'split', status, code };
  if (isRetryableStatus(status)) return { kind: 'retry', status, code, retryAfterMs };
  if (status === 400 && (code === 'all_items_invalid' || code === 'strict_item_invalid')) {
    const errors = isObject(body) && isObject(body.error) && Array.isArray(body.error.errors) ? body.error.errors : [];
    const byIndex = groupErrors(errors);
    return {
      kind: 'done',
      verdicts: Array.from({ length: size }, (_, i): Verdict => {
        const errs = byIndex.get(i);
        return errs ? { outcome: 'refused', errors: errs } : { outcome: 'failed', status, code };
      }),
    };
  }
  // Any other 4xx is about the request (key, path, headers), not an item: no
  // item is at fault, so each is failed with the answer's status and code.
  return { kind: 'done', verdicts: Array.from({ length: size }, (): Verdict => ({ outcome: 'failed', status, code })) };
}

function fromAccepted(body: Record<string, unknown>, size: number): Verdict[] {
  const verdicts: Verdict[] = Array.from({ length: size }, (): Verdict => ({ outcome: 'accepted' }));
  for (const i of asArray(body.duplicates)) if (isIndex(i, size)) verdicts[i] = { outcome: 'duplicate' };
  for (const d of asArray(body.dropped)) {
    if (isObject(d) && isIndex(d.index, size)) verdicts[d.index] = { outcome: 'dropped', reason: String(d.reason) };
  }
  for (const [i, errors] of groupErrors(asArray(body.errors))) if (isIndex(i, size)) verdicts[i] = { outcome: 'refused', errors };
  return verdicts;
}

function groupErrors(list: unknown[]): Map<number, Omit<ItemError, 'index'>[]> {
  const byIndex = new Map<number, Omit<ItemError, 'index'>[]>();
  for (const e of list) {
    if (!isObject(e) || typeof e.index !== 'number') continue;
    const entry = { code: String(e.code), field: String(e.field), message: String(e.message) };
    const at = byIndex.get(e.index);
    if (at) at.push(entry);
    else byIndex.set(e.index, [entry]);
  }
  return byIndex;
}

function errorCode(body: unknown): string | undefined {
  return isObject(body) && isObject(body.error) && typeof body.error.code === 'string' ? body.error.code : undefined;
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function isIndex(v: unknown, size: number): v is number {
  return Number.isInteger(v) && (v as number) >= 0 && (v as number) < size;
}

/** Fills in a verdict for one item. */
export function toResult(v: Verdict, insertId: string, attempts: number): ItemResult {
  return { ...v, insertId, attempts } as ItemResult;
}
