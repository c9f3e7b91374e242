import { retentionCutoff } from '../../retention.js';
import type { ItemErrorCode } from '../../../errors/codes.js';

/** How far back and ahead of the server clock a timestamp may be. */
export const MAX_PAST_MS = 7 * 24 * 60 * 60 * 1000;
export const MAX_FUTURE_MS = 10 * 60 * 1000;

/** The window of the historical import endpoint: back to the project's retention instead of 7 days. */
export interface ImportWindow {
  retentionDays: number;
}

export type TimestampResult = { ok: true; ms: number } | { ok: false; code: ItemErrorCode; message: string };

// Date and time are required, and so is an offset: a time without one would be
// read in whatever zone the sender's server happens to run in.
const ISO = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Epoch milliseconds below this are almost surely epoch seconds (before 1973 as ms). */
const LOOKS_LIKE_SECONDS = 1e11;

/** Reads an item's timestamp and checks it against the window around `now` (the import window when given). */
export function parseTimestamp(value: unknown, now: number, importing?: ImportWindow): TimestampResult {
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) {
      return bad('"timestamp" must be an integer number of milliseconds since the Unix epoch, or an ISO 8601 string with an offset.');
    }
    if (value < LOOKS_LIKE_SECONDS) {
      return bad(`"timestamp" ${value} looks like epoch seconds; send epoch milliseconds (${value * 1000}) or an ISO 8601 string.`);
    }
    ms = value;
  } else if (typeof value === 'string') {
    const parsed = parseIso(value);
    if (parsed === null) {
      return bad('"timestamp" must be ISO 8601 with a date, a time and an offset (such as "2026-01-31T12:00:00Z"), or epoch milliseconds.');
    }
    ms = parsed;
  } else {
    return bad('"timestamp" must be an ISO 8601 string with an offset or an integer of epoch milliseconds.');
  }
  if (importing !== undefined && ms < retentionCutoff(now, importing.retentionDays)) {
    return {
      ok: false,
      code: 'timestamp_before_retention',
      message: `"timestamp" is more than ${importing.retentionDays} days in the past, beyond the project's event retention; such an event would be deleted at once. Leave it out, or ask for a longer retention first.`,
    };
  }
  if (importing === undefined && ms < now - MAX_PAST_MS) {
    return {
      ok: false,
      code: 'timestamp_too_old',
      message: '"timestamp" is more than 7 days in the past. Send older events to the historical import endpoint, POST /api/v1/import, with the same key.',
    };
  }
  if (ms > now + MAX_FUTURE_MS) {
    return {
      ok: false,
      code: 'timestamp_in_future',
      message: '"timestamp" is more than 10 minutes ahead of the server clock. Check the sending server\'s clock and time zone.',
    };
  }
  return { ok: true, ms };
}

function bad(message: string): TimestampResult {
  return { ok: false, code: 'invalid_timestamp', message };
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Epoch ms of a strict ISO 8601 date-time with offset, or null. */
export function parseIso(s: string): number | null {
  const m = ISO.exec(s);
  if (m === null) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]!) return null;
  if (month === 2 && day === 29 && !isLeapYear(year)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  const zone = m[8]!;
  if (zone !== 'Z' && zone !== 'z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(4, 6));
    if (oh > 23 || om > 59) return null;
    offsetMinutes = sign * (oh * 60 + om);
  }
  return Date.UTC(year, month - 1, day, hour, minute, second, millis) - offsetMinutes * 60_000;
}

function isLeapYear(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}
