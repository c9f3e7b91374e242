import { crc32, gunzipSync, gzipSync, inflateRawSync } from 'node:zlib';
import { expect, it } from 'vitest';
import type { DeliveryEvent } from '../../stores/port-destinations.js';
import { NdjsonGzipFile } from './ndjson-file.js';

const ev = { seq: 1 } as DeliveryEvent;
const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: `evt_${i}`, note: i % 7 === 0 ? 'ünïcode ✓ 😀' : 'plain', n: i }));

async function made(partBytes: number): Promise<Buffer> {
  const file = new NdjsonGzipFile(partBytes);
  for (const l of lines) file.add(ev, l);
  return file.finish();
}

it('zipped a part at a time, the file is one gzip member holding every line: one deflate stream, with the CRC and length of all of it', async () => {
  const text = Buffer.from(`${lines.join('\n')}\n`);
  // Parts of about 4 KiB: dozens of them, each ending mid-way through nothing in particular.
  const body = await made(4096);
  expect(gunzipSync(body).equals(text)).toBe(true);
  // One member: the deflate data between the header and the trailer inflates to all of it, and the trailer is all of it's.
  expect(inflateRawSync(body.subarray(10, -8)).equals(text)).toBe(true);
  expect(body.readUInt32LE(body.length - 8)).toBe(crc32(text));
  expect(body.readUInt32LE(body.length - 4)).toBe(text.length);
  // About as small as the whole text zipped at once.
  expect(body.length).toBeLessThan(gzipSync(text).length * 1.2);
});

it('made twice from the same events, the file is the same bytes (written again after a crash, it is the same object); any part size holds the same lines', async () => {
  expect((await made(4096)).equals(await made(4096))).toBe(true);
  expect(gunzipSync(await made(1 << 20)).toString()).toBe(gunzipSync(await made(100)).toString());
});
