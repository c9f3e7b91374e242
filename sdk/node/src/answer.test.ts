import { describe, expect, it } from 'vitest';
import { parseRetryAfter, stepFor } from './answer.js';
import { backoffMs } from './options.js';

describe('stepFor', () => {
  it('maps a 202 by index: accepted, duplicates, dropped with reason, refused with every error', () => {
    const body = {
      accepted: 2,
      duplicates: [1],
      dropped: [{ index: 2, reason: 'bot_filtered' }],
      errors: [
        { index: 3, code: 'invalid_event_name', field: 'event', message: 'm1' },
        { index: 3, code: 'invalid_timestamp', field: 'timestamp', message: 'm2' },
      ],
    };
    expect(stepFor(202, body, 4, null)).toEqual({
      kind: 'done',
      verdicts: [
        { outcome: 'accepted' },
        { outcome: 'duplicate' },
        { outcome: 'dropped', reason: 'bot_filtered' },
        {
          outcome: 'refused',
          errors: [
            { code: 'invalid_event_name', field: 'event', message: 'm1' },
            { code: 'invalid_timestamp', field: 'timestamp', message: 'm2' },
          ],
        },
      ],
    });
  });

  it('splits on 413 and on batch_too_many_items', () => {
    expect(stepFor(413, { error: { code: 'payload_too_large' } }, 10, null)).toMatchObject({ kind: 'split' });
    expect(stepFor(400, { error: { code: 'batch_too_many_items' } }, 10, null)).toMatchObject({ kind: 'split', code: 'batch_too_many_items' });
  });

  it('retries network-like statuses with Retry-After, and a 2xx it cannot read (insert_ids make that safe)', () => {
    for (const status of [408, 429, 500, 502, 503, 504]) expect(stepFor(status, undefined, 1, 5000)).toMatchObject({ kind: 'retry', status, retryAfterMs: 5000 });
    expect(stepFor(202, undefined, 1, null)).toMatchObject({ kind: 'retry', error: 'unreadable answer' });
  });

  it('a 2xx that is not the batch answer (no accepted count) is retried, not taken as delivery', () => {
    for (const body of [{}, { ok: true }, { status: 'ok' }, { accepted: '1' }]) {
      expect(stepFor(200, body, 1, null)).toMatchObject({ kind: 'retry', status: 200, error: 'unreadable answer' });
    }
  });

  it('other 4xx fail every item with the status and code, as final', () => {
    expect(stepFor(401, { error: { code: 'invalid_key' } }, 2, null)).toEqual({
      kind: 'done',
      verdicts: [
        { outcome: 'failed', status: 401, code: 'invalid_key' },
        { outcome: 'failed', status: 401, code: 'invalid_key' },
      ],
    });
  });

  it('strict_item_invalid refuses the listed items and fails the others with the code', () => {
    const body = { error: { code: 'strict_item_invalid', errors: [{ index: 1, code: 'invalid_insert_id', field: 'insert_id', message: 'm' }] } };
    expect(stepFor(400, body, 2, null)).toEqual({
      kind: 'done',
      verdicts: [
        { outcome: 'failed', status: 400, code: 'strict_item_invalid' },
        { outcome: 'refused', errors: [{ code: 'invalid_insert_id', field: 'insert_id', message: 'm' }] },
      ],
    });
  });
});

describe('Retry-After and backoff', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('10', 0)).toBe(10_000);
    expect(parseRetryAfter(new Date(60_000).toUTCString(), 0)).toBe(60_000);
    expect(parseRetryAfter('soon', 0)).toBeNull();
    expect(parseRetryAfter(null, 0)).toBeNull();
  });

  it('doubles from the base, jitters within the upper half, caps, and never undercuts Retry-After', () => {
    const s = { retryBaseMs: 500, retryMaxMs: 30_000 };
    expect(backoffMs(s, 1, null, () => 0)).toBe(250);
    expect(backoffMs(s, 1, null, () => 1)).toBe(500);
    expect(backoffMs(s, 3, null, () => 1)).toBe(2000);
    expect(backoffMs(s, 20, null, () => 1)).toBe(30_000);
    expect(backoffMs(s, 1, 10_000, () => 1)).toBe(10_000);
    expect(backoffMs(s, 20, 60_000, () => 1)).toBe(60_000);
  });
});
