import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type LocalS3, S3_KEYS, startS3 } from '../../../test/helpers/s3.js';
import type { DestinationReach, OutgoingFile } from '../../stores/port-destinations.js';
import { AddressRefused } from '../reach.js';
import { objectKey } from './files.js';
import { S3Sender, type S3Target } from './sender.js';

let s3: LocalS3;
beforeAll(async () => {
  s3 = await startS3('guarded');
});
afterAll(async () => s3?.close());

const never = new AbortController().signal;
const file = (first: number): OutgoingFile => ({
  destinationId: 'dst_1', projectId: 'prj_1', plan: { generation: 0, after: first - 1, through: first, first, last: first, at: Date.UTC(2026, 10, 30, 23, 59) },
  body: gzipSync(`{"id":"id-${first}"}\n`), events: 1,
});
const target = (endpoint: string): S3Target => ({ bucket: 'guarded', prefix: 'p/q', endpoint, region: 'us-east-1', ...S3_KEYS, format: 'ndjson', everyMs: 1000 });

it('names a file by its plan: prefix, project, the UTC date and hour of its first event, first-last and the format', () => {
  const plan = { first: 17, last: 9042, at: Date.UTC(2026, 10, 30, 23, 59, 59) };
  expect(objectKey('p/q', 'prj_1', plan, 'ndjson')).toBe('p/q/project=prj_1/date=2026-11-30/hour=23/17-9042.ndjson.gz');
  expect(objectKey('', 'prj_1', plan, 'parquet')).toBe('project=prj_1/date=2026-11-30/hour=23/17-9042.parquet');
});

it('the endpoint goes through the address guard at each connection: a literal loopback, and a name that resolves to one, are refused, nothing stored', async () => {
  const closed: DestinationReach = { allowPrivate: false, ownDatabaseUrl: null, selfPort: null, resolve: async () => [{ address: '127.0.0.1', family: 4 }] };
  const literal = new S3Sender(target(s3.endpoint), closed);
  expect(await literal.writeFile(file(1), never)).toEqual({ ok: false, error: new AddressRefused('127.0.0.1').message, retryAfterMs: null });
  await literal.close();
  const named = new S3Sender(target(`http://store.test:${s3.port}`), closed);
  expect(await named.writeFile(file(2), never)).toEqual({ ok: false, error: new AddressRefused('store.test').message, retryAfterMs: null });
  await named.close();
  expect(await s3.keys()).toEqual([]);

  // Allowed, the same name reaches the store through that lookup (no DNS knows store.test): the one connected with.
  const allowed = new S3Sender(target(`http://store.test:${s3.port}`), { ...closed, allowPrivate: true });
  expect(await allowed.writeFile(file(3), never)).toEqual({ ok: true });
  await allowed.close();
  expect(await s3.keys()).toEqual(['p/q/project=prj_1/date=2026-11-30/hour=23/3-3.ndjson.gz']);
  expect(await s3.events('p/q/project=prj_1/date=2026-11-30/hour=23/3-3.ndjson.gz')).toEqual([{ id: 'id-3' }]);
});

it('a closed port fails without saying how; a stopped write says so', async () => {
  const open: DestinationReach = { allowPrivate: true, ownDatabaseUrl: null, selfPort: null };
  const sender = new S3Sender(target('http://127.0.0.1:9'), open);
  expect(await sender.writeFile(file(4), never)).toEqual({ ok: false, error: 'The connection to the object store failed.', retryAfterMs: null });
  const stop = new AbortController();
  stop.abort();
  expect(await sender.writeFile(file(4), stop.signal)).toEqual({ ok: false, error: 'Stopped.', retryAfterMs: null });
  await sender.close();
});
