import { isbot } from 'isbot';
import UAParser from 'ua-parser-js';

/** What the server derives from a $user_agent and stores in its place. */
export interface UserAgentEnrichment {
  $browser?: string;
  $browser_version?: string;
  $os?: string;
  $os_version?: string;
  $device_type: string;
}

export interface ParsedUserAgent {
  enrichment: UserAgentEnrichment;
  isBot: boolean;
}

// Servers send the same few user agents over and over; parsing is the costly
// part of enrichment, so results are kept, in a map cleared when it fills up.
const CACHE_LIMIT = 2000;
const cache = new Map<string, ParsedUserAgent>();

/**
 * No real user agent is longer; the rest of a longer one is not read, so a
 * huge $user_agent cannot fill the cache or slow the parser.
 */
const MAX_USER_AGENT_LENGTH = 1024;

/** Parses a user agent into browser, OS and device, and tells whether it is a bot. */
export function parseUserAgent(raw: string): ParsedUserAgent {
  const ua = raw.length > MAX_USER_AGENT_LENGTH ? raw.slice(0, MAX_USER_AGENT_LENGTH) : raw;
  const hit = cache.get(ua);
  if (hit !== undefined) return hit;
  const r = new UAParser(ua).getResult();
  const enrichment: UserAgentEnrichment = { $device_type: r.device.type ?? 'desktop' };
  if (r.browser.name) enrichment.$browser = r.browser.name;
  if (r.browser.version) enrichment.$browser_version = r.browser.version;
  if (r.os.name) enrichment.$os = r.os.name;
  if (r.os.version) enrichment.$os_version = r.os.version;
  const parsed = { enrichment, isBot: isbot(ua) };
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(ua, parsed);
  return parsed;
}
