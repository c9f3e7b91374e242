import http from 'node:http';
import https from 'node:https';
import type { S3Client } from '@aws-sdk/client-s3';
import type { FileMaker, FileSender, OutgoingFile, SendOutcome } from '../../stores/port-destinations.js';
import { AddressRefused, type DestinationReach, guardedLookup, literalRefusal } from '../reach.js';
import { portOf } from '../urls.js';
import { fileMaker, objectKey } from './files.js';
import type { FileFormat, S3Place } from './settings.js';

/** A file not stored within this long has failed the attempt (64 MiB at 2 MB/s). */
export const S3_TIMEOUT_MS = 60_000;

export interface S3Target extends S3Place {
  /** The store's URL (MinIO, R2, …); null: AWS S3 in `region`. */
  endpoint: string | null;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  format: FileFormat;
  everyMs: number;
}

/** The host and port the client connects to: the endpoint's, or AWS S3's in the region. */
export function endpointOf(t: Pick<S3Target, 'endpoint' | 'region'>): URL {
  return new URL(t.endpoint ?? `https://s3.${t.region}.amazonaws.com`);
}

/** The AWS SDK, loaded when a file is first written: it costs every process that loads it (each CLI command) a sixth of a second and 25 MB. */
type Sdk = typeof import('@aws-sdk/client-s3');
let sdk: Promise<Sdk> | null = null;
const loadSdk = (): Promise<Sdk> => (sdk ??= import('@aws-sdk/client-s3'));

/**
 * Writes each file as one object with PutObject (the official AWS SDK),
 * through the address guard (reach.ts: each new connection's addresses are
 * judged, a literal before each file), a custom endpoint by path
 * (http://host/bucket/key), as MinIO and most compatibles want. Errors
 * name the status and the store's code, never a key.
 */
export class S3Sender implements FileSender {
  private client: S3Client | null = null;
  private readonly lookup: ReturnType<typeof guardedLookup>;
  private readonly host: string;
  private readonly port: number;
  readonly everyMs: number;
  readonly fedAsRead: boolean;

  constructor(
    private readonly target: S3Target,
    private readonly reach: DestinationReach,
    private readonly timeoutMs = S3_TIMEOUT_MS,
  ) {
    const u = endpointOf(target);
    this.host = u.hostname;
    this.port = portOf(u);
    this.everyMs = target.everyMs;
    // A Parquet file holds a row group of events until it is written out: not one to keep for minutes.
    this.fedAsRead = target.format === 'ndjson';
    this.lookup = guardedLookup(reach, this.port);
  }

  /** The client, made on first use, with its connections through the guard. */
  private clientOf(aws: Sdk): S3Client {
    if (this.client !== null) return this.client;
    const t = this.target;
    // The SDK warns once per process, on stderr, that its releases after January 2027 will need Node 22; Inlet's
    // supported versions are its own to say (package.json, docs). Turned off the way the SDK's maintainers give
    // (aws/aws-sdk-js-v3#7983), read as the client is made; an operator who set it otherwise is left as they set it.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    this.client = new aws.S3Client({
      region: t.region,
      ...(t.endpoint === null ? {} : { endpoint: t.endpoint, forcePathStyle: true }),
      credentials: { accessKeyId: t.accessKeyId, secretAccessKey: t.secretAccessKey },
      // A checksum only where the API requires one (compatibles differ on the others); the Deliverer retries, not the SDK.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 1,
      // One file at a time per destination.
      requestHandler: {
        httpAgent: new http.Agent({ keepAlive: true, maxSockets: 1, lookup: this.lookup }),
        httpsAgent: new https.Agent({ keepAlive: true, maxSockets: 1, lookup: this.lookup }),
        connectionTimeout: 10_000,
        requestTimeout: this.timeoutMs,
      },
    });
    return this.client;
  }

  newFile(projectId: string): Promise<FileMaker> {
    return fileMaker(this.target.format, projectId);
  }

  async writeFile(file: OutgoingFile, signal: AbortSignal): Promise<SendOutcome> {
    if (signal.aborted) return { ok: false, error: 'Stopped.', retryAfterMs: null };
    const refused = literalRefusal(this.host, this.port, this.reach);
    if (refused !== null) return { ok: false, error: refused.message, retryAfterMs: null };
    const t = this.target;
    const ndjson = t.format === 'ndjson';
    const aws = await loadSdk();
    const body = file.body;
    const command = new aws.PutObjectCommand({
      Bucket: t.bucket, Key: objectKey(t.prefix, file.projectId, file.plan, t.format), Body: body, ContentLength: body.length,
      ContentType: ndjson ? 'application/x-ndjson' : 'application/vnd.apache.parquet',
      ...(ndjson ? { ContentEncoding: 'gzip' } : {}),
    });
    const timeout = AbortSignal.timeout(this.timeoutMs);
    try {
      await this.clientOf(aws).send(command, { abortSignal: AbortSignal.any([signal, timeout]) });
      return { ok: true };
    } catch (e) {
      return this.failure(aws, e, signal, timeout);
    }
  }

  private failure(aws: Sdk, e: unknown, signal: AbortSignal, timeout: AbortSignal): SendOutcome {
    if (signal.aborted) return { ok: false, error: 'Stopped.', retryAfterMs: null };
    if (timeout.aborted) return { ok: false, error: `The object store did not answer within ${this.timeoutMs / 1000} s.`, retryAfterMs: null };
    const refused = findRefusal(e);
    if (refused !== null) return { ok: false, error: refused, retryAfterMs: null };
    if (e instanceof aws.S3ServiceException && e.$metadata.httpStatusCode !== undefined) {
      return { ok: false, error: `The object store answered ${e.$metadata.httpStatusCode} (${safeCode(e.name)}).`, retryAfterMs: null };
    }
    return { ok: false, error: 'The connection to the object store failed.', retryAfterMs: null };
  }

  async close(): Promise<void> {
    this.client?.destroy();
  }
}

/** The guard's refusal (its message), wherever the SDK wrapped it. */
function findRefusal(e: unknown): string | null {
  for (let x = e, depth = 0; x !== null && typeof x === 'object' && depth < 5; x = (x as { cause?: unknown }).cause, depth++) {
    if (x instanceof AddressRefused || (x as { code?: unknown }).code === new AddressRefused('').code) return (x as Error).message;
  }
  return null;
}

/** An error code as the store sent it (NoSuchBucket, AccessDenied), only if it looks like one. */
const safeCode = (name: string): string => (/^[A-Za-z]{1,64}$/.test(name) ? name : 'error');
