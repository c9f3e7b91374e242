/**
 * What an s3 destination is given, read and checked: where files go
 * (s3://bucket/prefix), in which format, and how long events may wait.
 */

/** A bucket name as S3 allows one (3 to 63 lowercase letters, digits, dots and hyphens). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export interface S3Place {
  bucket: string;
  /** The key prefix, without a slash at either end; empty for the bucket's root. */
  prefix: string;
}

/** s3://bucket/prefix as its bucket and prefix; or why not. */
export function parseS3Url(url: string): S3Place | string {
  const m = /^s3:\/\/([^/?#]+)(\/[^?#]*)?$/.exec(url);
  if (m === null) return `An s3 destination's URL is s3://BUCKET/PREFIX (the prefix may be left out), not "${url}".`;
  const bucket = m[1]!;
  if (!BUCKET.test(bucket)) return `"${bucket}" is not a bucket name: 3 to 63 lowercase letters, digits, dots and hyphens.`;
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((p) => p === '.' || p === '..') || prefix.includes('//')) return `The prefix "${prefix}" has an empty, "." or ".." part.`;
  return { bucket, prefix };
}

export const FORMATS = ['ndjson', 'parquet'] as const;
export type FileFormat = (typeof FORMATS)[number];

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 };
/** The shortest and longest waits --every takes: a file a second at most, one a day at least. */
export const EVERY_MIN_MS = 1000;
export const EVERY_MAX_MS = 24 * 3_600_000;
export const DEFAULT_EVERY = '5m';

/** A duration as --every takes it ("30s", "5m", "1h") in ms; or why not. */
export function parseEvery(text: string): number | string {
  const m = /^(\d{1,6})(s|m|h)$/.exec(text.trim());
  const ms = m === null ? NaN : Number(m[1]) * UNITS[m[2]!]!;
  if (!(ms >= EVERY_MIN_MS && ms <= EVERY_MAX_MS)) return `--every is a duration from 1s to 24h such as 30s, 5m or 1h, not "${text}".`;
  return ms;
}
