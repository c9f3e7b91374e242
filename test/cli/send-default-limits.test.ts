/**
 * Regression: "inlet send loses the tail of a big file and blames the
 * network". A file larger than the sustained window, to a project that had
 * just taken a 100-item batch: the client waited on its own reading of the
 * window until its deadline ran out, and failed the last 500 items as
 * "could not reach" a server that was answering every request.
 *
 * How this is tested within seconds, honestly: at the default limits (50,000
 * items per 10 s, 60,000 per 60 s, 100 requests per second a key) 100,000
 * items take the server more than a minute and a half. The server is built
 * in this process with the default limits and its own limiter, and shares
 * one clock with the client: real time, plus every idle wait the client
 * takes (pacing, backoff) skipped at once (SkippingClock). Only the client's
 * waiting is compressed; the windows keep their lengths and quotas, a client
 * that overruns one is answered 429 as in production, and a client deadline
 * runs on the same clock, so a wait that would outlast it in production
 * outlasts it here.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendFile } from '../../src/cli/send/run.js';
import { type Fixture, makeFixture, send, tempDir } from '../helpers/fixture.js';
import { storedCounts } from '../helpers/outcomes.js';
import { SkippingClock } from '../helpers/skipping-clock.js';

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir('inlet-send-limits-');
});
afterAll(() => tmp.remove());

/** A server in this process with the default limits, on a clock shared with the client, listening on loopback. */
async function server(): Promise<{ f: Fixture; baseUrl: string; clock: SkippingClock }> {
  const clock = new SkippingClock();
  const f = await makeFixture({ clock });
  const baseUrl = await f.app.listen({ port: 0, host: '127.0.0.1' });
  return { f, baseUrl, clock };
}

/** `n` lines, each an item with its own insert_id. */
function writeItems(name: string, n: number): string {
  const file = join(tmp.dir, name);
  writeFileSync(file, Array.from({ length: n }, (_, i) => `${JSON.stringify({ event: 'row_imported', distinct_id: `c_${i % 977}`, insert_id: `${name.replace(/\W/g, '_')}_${i}` })}\n`).join(''));
  return file;
}

/** The project "had just taken a 100-item batch": the oldest count in its windows is small. */
async function earlierBatch(f: Fixture): Promise<void> {
  const res = await send(f, { items: Array.from({ length: 100 }, (_, i) => ({ event: 'earlier', distinct_id: 'u0', insert_id: `earlier_${i}` })) });
  expect(res.statusCode).toBe(202);
}

/** What the send wrote on stderr. */
class Captured {
  text = '';
  write(s: string): boolean {
    this.text += s;
    return true;
  }
}

describe('inlet send through the default limits', () => {
  for (const lines of [60_000, 100_000]) {
    it(`${lines.toLocaleString('en')} lines, right after the project took a 100-item batch: nothing failed, no 429, the totals are the outcomes`, async () => {
      const { f, baseUrl, clock } = await server();
      try {
        const startedAt = clock.now();
        await earlierBatch(f);
        const file = writeItems(`lines_${lines}.ndjson`, lines);
        const stderr = new Captured();

        const summary = await sendFile(file, { key: f.key, baseUrl }, { stderr, clock });

        expect(summary, stderr.text).toMatchObject({ sent: lines, accepted: lines, duplicates: 0, dropped: 0, refused: 0, failed: 0 });
        await f.collector.outcomes.flush();
        // No request was answered 429: that would be counted as refused items.
        expect(Object.fromEntries(await storedCounts(f, clock.now()))).toEqual({ 'accepted ': lines + 100 });
        // The limits did hold the client back, so the test is not vacuous: it waited, and past the
        // sustained window's 60,000 items the last ones could only go once the first had left it.
        expect(clock.skipped).toBeGreaterThan(0);
        expect(clock.now() - startedAt).toBeGreaterThanOrEqual(60_000);
      } finally {
        await f.close();
      }
    }, 300_000);
  }
});
