import { isbot } from 'isbot';
import UAParser from 'ua-parser-js';
import { isStorableText } from '../../storable.js';

/** What the server derives from a $user_agent and stores in its place. */
export interface UserAgentEnrichment {
  $browser?: string;
  $browser_version?: string;
  $os?: string;
  $os_version?: string;
  $device_type: string;
}

/** Every key enrichment adds to a stored event's properties: what the sender did not send. */
export const ENRICHMENT_KEYS: readonly string[] = [
  ...Object.keys({ $browser: true, $browser_version: true, $os: true, $os_version: true, $device_type: true } satisfies Record<keyof UserAgentEnrichment, true>),
  '$source_id',
];

export interface ParsedUserAgent {
  enrichment: UserAgentEnrichment;
  isBot: boolean;
}

// Servers send the same few user agents over and over; parsing is the costly
// part of enrichment, so results are kept, in a map cleared when it fills up.
const CACHE_LIMIT = 2000;
const cache = new Map<string, ParsedUserAgent>();

/**
 * No real user agent is longer, in code points; the rest of a longer one is
 * not read, so a huge $user_agent cannot fill the cache or slow the parser.
 */
const MAX_USER_AGENT_LENGTH = 1024;

/**
 * Parses a user agent into browser, OS and device, and tells whether it is a
 * bot. Every value it returns is storable: the parser copies pieces of its
 * input, so what it reads is cleaned first, and a value that still breaks the
 * storability rule (the parser cut a character in two) is left out.
 */
export function parseUserAgent(raw: string): ParsedUserAgent {
  const ua = readableUserAgent(raw);
  const hit = cache.get(ua);
  if (hit !== undefined) return hit;
  const r = new UAParser(ua).getResult();
  const enrichment: UserAgentEnrichment = { $device_type: storable(r.device.type) ?? 'desktop' };
  const set = (key: Exclude<keyof UserAgentEnrichment, '$device_type'>, v: string | undefined): void => {
    const s = storable(v);
    if (s !== undefined) enrichment[key] = s;
  };
  set('$browser', r.browser.name);
  set('$browser_version', r.browser.version);
  set('$os', r.os.name);
  set('$os_version', r.os.version);
  const parsed = { enrichment, isBot: isbot(ua) };
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(ua, parsed);
  return parsed;
}

const NEEDS_CLEANING = /[\u0000-\u001f\u007f-\u009f\ud800-\udfff]/;

/**
 * The user agent as the parser reads it: its first 1,024 code points (never
 * half a character), without control characters (no HTTP header can carry
 * one, so they are noise a client spliced in), and with U+FFFD for a lone
 * surrogate. A bot cannot hide from the filter behind a spliced U+0000.
 */
export function readableUserAgent(raw: string): string {
  if (raw.length <= MAX_USER_AGENT_LENGTH && !NEEDS_CLEANING.test(raw)) return raw;
  let out = '';
  let n = 0;
  for (const ch of raw) {
    if (n++ === MAX_USER_AGENT_LENGTH) break;
    const c = ch.codePointAt(0)!;
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) continue;
    out += c >= 0xd800 && c <= 0xdfff ? '\ufffd' : ch;
  }
  return out;
}

/** A non-empty parser value that every store can keep, or undefined. */
function storable(v: string | undefined): string | undefined {
  return v !== undefined && v !== '' && isStorableText(v) ? v : undefined;
}

/**
 * What the server stores with a track event besides its properties, and
 * whether the source's bot filter drops it. A dropped item is not stored, so
 * its enrichment names no source.
 */
export function enrichTrack(userAgent: string | null, source: { id: string; filterBots: boolean }): { enrichment: Record<string, unknown>; dropped: 'bot_filtered' | null } {
  const enrichment: Record<string, unknown> = {};
  if (userAgent !== null) {
    const ua = parseUserAgent(userAgent);
    Object.assign(enrichment, ua.enrichment);
    if (ua.isBot && source.filterBots) return { enrichment, dropped: 'bot_filtered' };
  }
  enrichment.$source_id = source.id;
  return { enrichment, dropped: null };
}
