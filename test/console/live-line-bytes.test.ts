import { describe, expect, it } from 'vitest';
import { type LiveRequest, LiveWindow, lineBytes } from '../../src/domain/live-window.js';
import { liveLines } from '../../src/console/views/source.js';

/**
 * A live view's stream is dropped once its unsent bytes pass its buffer
 * (1 MiB), and the source page is built from the same lines: the window's
 * count of a line's bytes must be at least what the line takes as sent.
 */
describe('the live window counts what its lines take as shown', () => {
  const worst = '"<>&\'\\\u0001é€😀\ud800';
  const texts = [worst.repeat(200), 'plain_text_'.repeat(50), '😀'.repeat(300)];

  it('fault: one request’s event overflowed every live view’s buffer; a request’s event never takes more bytes than its window counted', () => {
    for (const text of texts) {
      const w = new LiveWindow();
      const r: LiveRequest = {
        requestId: 'req_01HZX3K9Q2W8E7R6T5Y4U3I2O1',
        at: Date.UTC(2026, 0, 31, 12),
        status: 400,
        size: 500,
        items: Array.from({ length: 500 }, (_, index) => ({
          index, outcome: index % 2 === 0 ? 'refused' : 'accepted', type: index % 2 === 0 ? null : 'track', event: text, distinctId: text, personId: index % 2 === 0 ? null : 'per_x',
          timestamp: index % 2 === 0 ? null : Date.UTC(2026, 0, 30), code: index % 2 === 0 ? 'reserved_property' : null, field: `properties.${text}`, message: text,
        })),
      };
      w.publish('s', r);
      const shown = w.recent('s')[0]!;
      const counted = shown.items.reduce((n, i) => n + lineBytes(shown, i), 0);
      const sent = Buffer.byteLength(`event: request\ndata: ${JSON.stringify(liveLines(shown).value)}\n\n`);
      expect(sent).toBeLessThanOrEqual(counted);
      expect(sent).toBeLessThan(1024 * 1024);
    }
  });
});
