import { describe, expect, it } from 'vitest';
import { isStorableText } from '../../storable.js';
import { parseUserAgent, readableUserAgent } from './enrich.js';

const XBOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; Xbox; Xbox One) AppleWebKit/537.36 Chrome/70 Safari/537.36 Edge/44';

describe('user agent enrichment (fault 2: a user agent can fail a whole batch on PostgreSQL)', () => {
  it('never returns a value a store cannot keep, wherever U+0000, a control character or a lone surrogate is spliced in', () => {
    for (const splice of ['\u0000', '\ud800', '\udfff', '\u0001', '\u009f', '\ud83d']) {
      for (let at = 0; at <= XBOX.length; at++) {
        const { enrichment } = parseUserAgent(XBOX.slice(0, at) + splice + XBOX.slice(at));
        for (const v of Object.values(enrichment)) expect(isStorableText(v), `${JSON.stringify(splice)} at ${at}`).toBe(true);
      }
    }
  });

  it('reads the user agent without control characters, with U+FFFD for a lone surrogate', () => {
    expect(parseUserAgent(XBOX.replace('One', 'One\u0000')).enrichment).toMatchObject({ $os: 'Xbox', $os_version: 'One' });
    expect(parseUserAgent(XBOX.replace('One', 'One\ud800')).enrichment.$os_version).toBe('One\ufffd');
    expect(readableUserAgent('a\tb\u007fc\u0085d\ud83d\ude00e')).toBe('abcd\ud83d\ude00e');
  });

  it('cuts a long user agent after 1,024 code points, never inside a character', () => {
    const ua = `${'x'.repeat(1023)}\ud83d\ude00tail`;
    expect(readableUserAgent(ua)).toBe(`${'x'.repeat(1023)}\ud83d\ude00`);
  });

  it('a bot cannot hide from the filter behind a spliced U+0000', () => {
    expect(parseUserAgent('Google\u0000bot/2.1 (+http://www.google.com/bot.html)').isBot).toBe(true);
  });
});
