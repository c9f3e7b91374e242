/**
 * Batches built from a hostile alphabet, for the differential test: text with
 * U+0000, lone surrogates, line and paragraph separators, bidi marks, astral
 * characters and control characters; keys and strings at and just past every
 * limit; real user agents with characters spliced in; numbers at the edges of
 * what a double and a store can hold. Mostly valid, so that most items reach
 * the stores, and every fault still comes up often.
 */
import fc from 'fast-check';
import { MAX_KEY_LENGTH } from '../../src/domain/storable.js';
import { MAX_NAME_LENGTH } from '../../src/domain/items/fields/identity-fields.js';
import { MAX_PROPERTY_BYTES } from '../../src/domain/items/fields/properties.js';

/** What no engine can store: U+0000 and lone surrogates. */
const UNSTORABLE = ['\u0000', '\ud800', '\udbff', '\udc00', '\udfff'];
const HOSTILE = [
  ...UNSTORABLE, '\u2028', '\u2029', '\u200e', '\u200f', '\u202a', '\u202e', '\u2066', '\u2069',
  '\ufeff', '\ufffe', '\uffff', '\u0001', '\u0007', '\t', '\n', '\u001b', '\u007f', '\u0085', '\u009f', '"', '\\', '/', '$', ' ',
  'é', '中', '\u{1F600}', '\u{1F469}\u200d\u{1F469}\u200d\u{1F467}', '\u{10FFFF}', '\u{E0001}', '%00', '\\u0000',
];
const PLAIN = ['a', 'b', 'z', 'Q', '0', '7', '_', '-', '.'];

/** One character (or short sequence), mostly plain. */
const char = fc.oneof({ arbitrary: fc.constantFrom(...PLAIN), weight: 40 }, { arbitrary: fc.constantFrom(...HOSTILE), weight: 1 });

/** Mostly `good`, sometimes `bad`, sometimes left out (undefined, dropped from the item). */
const field = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>, absent = 0): fc.Arbitrary<T | U | undefined> =>
  fc.oneof({ arbitrary: good, weight: 16 }, { arbitrary: bad, weight: 1 }, { arbitrary: fc.constant(undefined), weight: absent * 2 });

/** `n` code points of the supplementary planes: 4 bytes of UTF-8 each, which nothing compresses. */
const astral = (n: number) => fc.array(fc.integer({ min: 0x10000, max: 0x10ffff }), { minLength: n, maxLength: n }).map((cps) => String.fromCodePoint(...cps));

/** A string at, just under or just past a limit of `limit` code points. */
const atLimit = (limit: number) => fc.constantFrom(limit - 1, limit, limit + 1).chain((n) => fc.oneof(astral(n), fc.constant('k'.repeat(n))));

const text = (maxLength: number) => fc.string({ unit: char, minLength: 0, maxLength });

const name = fc.oneof({ arbitrary: fc.string({ unit: char, minLength: 1, maxLength: 12 }), weight: 8 }, { arbitrary: atLimit(MAX_NAME_LENGTH), weight: 1 });

const key = fc.oneof(
  { arbitrary: text(8), weight: 40 },
  { arbitrary: fc.constantFrom('$set', '$unknown'), weight: 1 },
  { arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '', ' '), weight: 3 },
  { arbitrary: atLimit(MAX_KEY_LENGTH), weight: 3 },
  { arbitrary: astral(700), weight: 1 },
);

const number = fc.oneof(
  { arbitrary: fc.integer({ min: -1_000_000, max: 1_000_000 }), weight: 12 },
  fc.constantFrom(0, -0, 1, -1, 0.1, 1 / 3, 5e-324, -5e-324, 2.2250738585072014e-308, 1.5e300, 1.7976931348623157e308, -1.7976931348623157e308),
  fc.constantFrom(2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 1e21, 1e16, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
  fc.double({ noNaN: true }),
  fc.integer(),
);

/** A string value: short text, or long enough to bring properties to their byte limit. */
const stringValue = fc.oneof(
  { arbitrary: text(24), weight: 10 },
  { arbitrary: fc.integer({ min: MAX_PROPERTY_BYTES - 40, max: MAX_PROPERTY_BYTES + 8 }).map((n) => 'v'.repeat(n)), weight: 1 },
);

const { json } = fc.letrec<{ json: unknown; object: Record<string, unknown> }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    stringValue,
    number,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('json'), { maxLength: 3 }),
    tie('object'),
  ),
  object: fc.array(fc.tuple(key, tie('json')), { maxLength: 4 }).map((e) => Object.fromEntries(e)),
}));

const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:121.0) Gecko/20100101 Firefox/121.0',
  'Mozilla/5.0 (Linux; Android 13; SM-S901B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/112.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) 85.0.4183.93/6.0 TV Safari/537.36',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
  'curl/8.4.0',
  'python-requests/2.31.0',
  '',
];

/** Consoles: the parser copies their model text as it stands into $os_version. */
const CONSOLE_USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; Xbox; Xbox One) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.102 Safari/537.36 Edge/44.18363.8131',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; Xbox; Xbox Series X) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/48.0.2564.82 Safari/537.36 Edge/20.02',
  'Mozilla/5.0 (PlayStation; PlayStation 5/2.26) AppleWebKit/605.1.15 (KHTML, like Gecko)',
  'Mozilla/5.0 (Nintendo Switch; WifiWebAuthApplet) AppleWebKit/606.4 (KHTML, like Gecko) NF/6.0.1.15.4 NintendoBrowser/5.1.0.20393',
];

/** Where to splice: anywhere, or just before a ")" or ";", where parsers end the text they copy. */
const splicePoint = (ua: string) => {
  const delimiters = [...ua].flatMap((c, i) => (c === ')' || c === ';' ? [i] : []));
  const anywhere = fc.integer({ min: 0, max: ua.length });
  return delimiters.length === 0 ? anywhere : fc.oneof(anywhere, fc.constantFrom(...delimiters));
};

/** A real browser, bot, tool or console user agent with a few hostile characters spliced in. */
const userAgent = fc
  .oneof({ arbitrary: fc.constantFrom(...USER_AGENTS), weight: 3 }, { arbitrary: fc.constantFrom(...CONSOLE_USER_AGENTS), weight: 2 })
  .chain((ua) => fc.tuple(fc.constant(ua), splicePoint(ua), fc.array(fc.oneof(fc.constantFrom(...UNSTORABLE), fc.constantFrom(...HOSTILE)), { minLength: 1, maxLength: 2 })))
  .map(([ua, at, splice]) => ua.slice(0, at) + splice.join('') + ua.slice(at));

/** The `$` keys a server may send, each mostly with a good value. */
const DOLLAR: [string, fc.Arbitrary<unknown>][] = [
  ['$ip', field(fc.constantFrom('203.0.113.9', '2001:db8::1'), fc.constantFrom('999.1.1.1', 'x'))],
  ['$country', field(fc.constantFrom('DE', 'US'), fc.constantFrom('de', 'XX'))],
  ['$currency', field(fc.constantFrom('EUR', 'USD'), fc.constantFrom('eur', 'E\u0000R'))],
  ['$revenue', number],
  ['$groups', field(fc.dictionary(fc.string({ unit: char, minLength: 1, maxLength: 6 }), fc.string({ unit: char, minLength: 1, maxLength: 6 }), { maxKeys: 2 }), fc.constant({ company: '' }))],
  ['$current_url', field(fc.constantFrom('https://example.com/a?b=c', 'https://example.com/\u2028\u{1F600}'), fc.constant('ftp://x'))],
  ['$lib', text(4)],
  ['$os_version', text(4)],
];
const dollarProperties = fc
  .tuple(
    fc.subarray(DOLLAR, { maxLength: 3 }).chain((picked) => fc.tuple(...picked.map(([k, v]) => v.map((x) => [k, x] as const)))),
    // Most items carry a user agent, as browser-forwarding servers send them.
    field(fc.oneof({ arbitrary: userAgent, weight: 8 }, { arbitrary: fc.tuple(fc.nat(3), atLimit(1024)).map(([pad, s]) => `Mozilla/5.0 (Xbox; Xbox ${'x'.repeat(pad)}${s}`), weight: 1 }), fc.constant(5), 6),
  )
  .map(([entries, ua]) => Object.fromEntries(ua === undefined ? entries : [...entries, ['$user_agent', ua]]));

const properties = fc.oneof(
  { arbitrary: fc.tuple(tieObject(), dollarProperties).map(([o, d]) => ({ ...o, ...d })), weight: 12 },
  { arbitrary: fc.constant(undefined), weight: 2 },
  { arbitrary: json, weight: 1 },
);

function tieObject() {
  return fc.array(fc.tuple(key, json), { maxLength: 5 }).map((e) => Object.fromEntries(e));
}

/** Timestamps inside the window around `now` (its edges included), in both forms. */
const timestamp = (now: number) =>
  fc.oneof(
    fc.integer({ min: now - 7 * 86_400_000, max: now + 600_000 }),
    fc.integer({ min: now - 86_400_000, max: now }).map((ms) => new Date(ms).toISOString()),
    fc.constantFrom('2026-11-22T13:00:00+01:00', null),
  );

const distinctId = field(
  fc.oneof({ arbitrary: fc.constantFrom('cust_1', 'cust_2', 'Cust_1', 'ü_user'), weight: 3 }, { arbitrary: name, weight: 2 }),
  fc.constantFrom('undefined', 'NULL', '0', '[object Object]', 42, null, ''),
);

/** One item, as JSON.parse could have made it (a field left out is absent, not undefined). */
export const item = (now: number) =>
  fc.oneof(
    {
      arbitrary: fc
        .record({
          type: field(fc.constantFrom('track', 'identify', 'group', 'alias', null), fc.constantFrom('page', 1), 4),
          event: field(fc.oneof(fc.constantFrom('paid', 'signed_up', '$agent_run'), name), fc.constantFrom('$pageview', 'Identify', 5)),
          distinct_id: distinctId,
          anonymous_id: field(fc.constantFrom('per_browser_a', 'per_browser_b', `per_${'p'.repeat(124)}`), fc.constantFrom(`per_${'p'.repeat(125)}`, 'per_\u0000', 'PER_x', 'per_'), 24),
          session_id: field(fc.constantFrom('ses_1', `ses_${'s'.repeat(124)}`), fc.constantFrom(`ses_${'s'.repeat(125)}`, 'ses_\u2028'), 16),
          insert_id: field(fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{8,12}$/), fc.stringMatching(/^[A-Za-z0-9_-]{80}$/)), fc.constantFrom('ins_a', 'I'.repeat(81), 'ins\u0000'), 8),
          timestamp: field(timestamp(now), fc.constantFrom(Math.floor(now / 1000), '2026-11-22T12:00:00', now - 8 * 86_400_000, now + 3_600_000), 8),
          properties,
          group_type: field(fc.constantFrom('company', 'team', `g${'_'.repeat(63)}`), fc.constantFrom('Company', '', 'g'.repeat(65), 'a-b'), 2),
          group_key: distinctId,
          previous_id: distinctId,
          set_once: field(tieObject(), json, 6),
          unset: field(fc.array(key, { maxLength: 3 }), fc.constantFrom('plan', [1], ['\u0000']), 6),
          extra: field(json, json, 20),
        })
        .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined))),
      weight: 30,
    },
    { arbitrary: json, weight: 1 },
  );

/** A batch of 1 to 12 items. */
export const batch = (now: number) => fc.array(item(now), { minLength: 1, maxLength: 12 });
