/**
 * What writing a file of an s3 destination costs per event, in each format:
 * NDJSON gzipped, and Parquet (docs/destinations.md, "Object storage"). The
 * events are `big`-like: a dozen properties, ids and names of the usual
 * length. Writes FILE_EVENTS (default 100,000) events ROUNDS (default 3)
 * times per format and prints the best round: µs per event and bytes per event.
 *
 *   npm run build && npx tsc -p bench/tsconfig.json && node dist/bench/bench/file-formats.js
 */
import { performance } from 'node:perf_hooks';
import { fileMaker } from '../src/destinations/s3/files.js';
import type { FileFormat } from '../src/destinations/s3/settings.js';
import { eventJson } from '../src/domain/delivery/batch.js';
import type { DeliveryEvent } from '../src/stores/port-destinations.js';

const EVENTS = Number(process.env.FILE_EVENTS ?? 100_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const T0 = 1_796_000_000_000;

function events(n: number): DeliveryEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    seq: i + 1, id: `0193a${String(i).padStart(27, '0')}`, sourceId: 'src_9fQ2kLm0aZ', event: ['page_viewed', 'signed_up', 'paid', 'added_to_cart'][i % 4]!,
    distinctId: `user_${i % 5000}`, anonymousId: i % 3 === 0 ? `anon_${i % 7000}` : null, personId: `per_${String(i % 5000).padStart(22, 'x')}`,
    sessionId: i % 2 === 0 ? `ses_${i % 900}` : null, timestamp: T0 + i * 3, receivedAt: T0 + i * 3 + 120, insertId: i % 4 === 0 ? `ins_${i}` : null,
    properties: JSON.stringify({
      path: `/products/${i % 300}`, referrer: 'https://www.example.com/search?q=shoes', plan: i % 2 ? 'pro' : 'free', amount: (i % 1000) / 10,
      currency: 'EUR', items: i % 7, browser: 'Firefox', os: 'Linux', country: 'DE', utm_source: 'newsletter', experiment: `exp_${i % 11}`, logged_in: i % 2 === 0,
    }),
  }));
}

const list = events(EVENTS);
const json = list.map((e) => eventJson(e, 'prj_bench'));
/** The file made as the delivery process makes it: each event added as it is read (the JSON of each is made there too, to weigh it). */
async function write(format: FileFormat): Promise<Buffer> {
  const file = await fileMaker(format, 'prj_bench');
  for (let i = 0; i < list.length; i++) file.add(list[i]!, json[i]!);
  return file.finish();
}

for (const [name, format] of [
  ['ndjson.gz', 'ndjson'],
  ['parquet', 'parquet'],
] as const) {
  let best = Infinity;
  let bytes = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const t = performance.now();
    bytes = (await write(format)).length;
    best = Math.min(best, performance.now() - t);
  }
  console.log(`${name}: ${((best * 1000) / EVENTS).toFixed(2)} µs/event, ${(bytes / EVENTS).toFixed(1)} bytes/event (${EVENTS} events, best of ${ROUNDS})`);
}
