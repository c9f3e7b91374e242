import type { DestinationConfig, DestinationKind, DestinationReach } from '../../stores/port-destinations.js';
import { hostRefusal, refusedMessage } from '../reach.js';
import { parsedUrl, pointsAtSelf, portOf } from '../urls.js';
import { S3Sender, type S3Target, endpointOf } from './sender.js';
import { DEFAULT_EVERY, FORMATS, type FileFormat, parseEvery, parseS3Url } from './settings.js';

const DEFAULT_REGION = 'us-east-1';
/** A region name as AWS and the compatibles spell one (us-east-1, auto, eu-central). */
const REGION = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** The config as the sender takes it; the config was checked when the destination was made. */
function targetOf(config: DestinationConfig): S3Target {
  const place = parseS3Url(config.url ?? '');
  const every = parseEvery(config.every ?? DEFAULT_EVERY);
  return {
    ...(typeof place === 'string' ? { bucket: '', prefix: '' } : place),
    endpoint: config.endpoint ?? null, region: config.region ?? DEFAULT_REGION,
    accessKeyId: config.access_key_id ?? '', secretAccessKey: config.secret_access_key ?? '',
    format: (config.format ?? 'ndjson') as FileFormat, everyMs: typeof every === 'string' ? 300_000 : every,
  };
}

/** Files in an S3-compatible object store, NDJSON (gzip) or Parquet (docs/destinations.md, "Object storage"). */
export const s3: DestinationKind = {
  name: 's3',
  about: 'as files to S3 or an S3-compatible object store',
  fields: [
    { name: 'url', label: 'URL', help: 's3://bucket/prefix', flag: '--url <url>', required: true, secret: false },
    { name: 'endpoint', label: 'Endpoint', help: "the store's URL (MinIO, R2, …); AWS S3 when left out", flag: '--endpoint <url>', required: false, secret: false },
    { name: 'region', label: 'Region', help: `the bucket's region (default ${DEFAULT_REGION})`, flag: '--region <region>', required: false, secret: false },
    { name: 'access_key_id', label: 'Access key ID', help: 'the access key ID', flag: '--access-key-id <id>', required: true, secret: false },
    { name: 'secret_access_key', label: 'Secret access key', help: 'the secret access key, kept and never shown again', flag: '--secret-access-key <key>', required: true, secret: true },
    { name: 'format', label: 'Format', help: 'ndjson (gzip) or parquet (default ndjson)', flag: '--format <format>', required: false, secret: false, choices: FORMATS },
    { name: 'every', label: 'Every', help: `the longest events wait before they are written, 1s to 24h (default ${DEFAULT_EVERY})`, flag: '--every <duration>', required: false, secret: false },
  ],
  made: [],
  docs: 'Object storage',
  example: '--url s3://analytics/inlet --region eu-west-1 --access-key-id AKIA… --secret-access-key … --format parquet',
  writes: 'files',

  configure(given) {
    const url = given.url ?? '';
    const place = parseS3Url(url);
    if (typeof place === 'string') return { ok: false, error: place };
    const config: Record<string, string> = { url: `s3://${place.bucket}${place.prefix === '' ? '' : `/${place.prefix}`}` };
    if (given.endpoint !== undefined) {
      const u = parsedUrl(given.endpoint, 'https://minio.internal:9000');
      if (typeof u === 'string') return { ok: false, error: u };
      if (u.protocol !== 'https:' && u.protocol !== 'http:') return { ok: false, error: `An s3 endpoint starts with https:// or http://, not "${u.protocol}".` };
      if (u.username !== '' || u.password !== '' || (u.pathname !== '/' && u.pathname !== '') || u.search !== '') {
        return { ok: false, error: 'An s3 endpoint is a scheme, a host and a port only; the keys go in --access-key-id and --secret-access-key, the bucket in --url.' };
      }
      config.endpoint = u.origin;
    }
    const region = given.region ?? DEFAULT_REGION;
    if (!REGION.test(region)) return { ok: false, error: `"${region}" is not a region name such as us-east-1.` };
    config.region = region;
    const keyId = given.access_key_id ?? '';
    const secret = given.secret_access_key ?? '';
    if (keyId === '' || secret === '') return { ok: false, error: 'An s3 destination needs --access-key-id and --secret-access-key.' };
    config.access_key_id = keyId;
    config.secret_access_key = secret;
    const format = given.format ?? 'ndjson';
    if (!(FORMATS as readonly string[]).includes(format)) return { ok: false, error: `--format is ndjson or parquet, not "${format}".` };
    config.format = format;
    const every = given.every ?? DEFAULT_EVERY;
    const ms = parseEvery(every);
    if (typeof ms === 'string') return { ok: false, error: ms };
    config.every = every.trim();
    return { ok: true, config };
  },

  pointsAtSelf: (config, self) => config.endpoint !== undefined && pointsAtSelf(config.endpoint, self),

  /** The endpoint's host resolved and its addresses judged, as a webhook's are; a name that does not resolve yet is let through. */
  async check(config, reach: DestinationReach) {
    const u = endpointOf(targetOf(config));
    return (await hostRefusal(u.hostname, portOf(u), reach)) === 'refused' ? refusedMessage(u.hostname) : null;
  },

  sender: (config, reach) => new S3Sender(targetOf(config), reach),
};
