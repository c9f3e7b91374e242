import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { parquetReadObjects } from 'hyparquet';
import S3rver from 's3rver';
import { tempDir } from './fixture.js';

/** The keys the local store takes (s3rver's own pair). */
export const S3_KEYS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

/** A local S3-compatible store (s3rver) on 127.0.0.1, port 0, in a temporary directory, with one bucket. */
export async function startS3(bucket = 'lake') {
  const dir = tempDir('inlet-s3-');
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, vhostBuckets: false, directory: dir.dir, configureBuckets: [{ name: bucket, configs: [] }] });
  const { port } = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  // The SDK's once-a-process warning that its releases after January 2027 need Node 22, off as the server turns it off (s3/sender.ts).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: S3_KEYS, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });

  async function keys(prefix = ''): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      out.push(...(r.Contents ?? []).map((c) => c.Key!));
      token = r.NextContinuationToken;
    } while (token !== undefined);
    return out.sort();
  }

  async function bytes(key: string): Promise<Buffer> {
    const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return Buffer.from(await r.Body!.transformToByteArray());
  }

  /** The events of a file, as its format holds them: NDJSON lines parsed, or Parquet rows. */
  async function events(key: string): Promise<Record<string, unknown>[]> {
    const b = await bytes(key);
    if (key.endsWith('.ndjson.gz')) return gunzipSync(b).toString('utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
    return (await parquetReadObjects({ file: ab })) as Record<string, unknown>[];
  }

  return {
    endpoint, port, bucket, keys, bytes, events,
    async close() {
      client.destroy();
      await server.close();
      dir.remove();
    },
  };
}

export type LocalS3 = Awaited<ReturnType<typeof startS3>>;
