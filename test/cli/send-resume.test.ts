/**
 * `inlet send` against a server that goes away mid-file: it gives up only
 * once the server has been out of reach for --unreachable-timeout (a live
 * server is waited for), says so, names its state file, and `--resume` sends
 * only what remains, with items sent without insert_id stored once.
 *
 * The server runs in this process behind a proxy that can cut it off; the
 * client shares the server's clock, whose idle waits (the client's backoff)
 * are skipped, so a 60 s outage takes no real minute.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SendOptions, sendFile } from '../../src/cli/send/run.js';
import { type Fixture, makeFixture, tempDir } from '../helpers/fixture.js';
import { FaultProxy } from '../helpers/http-fault-proxy.js';
import { storedCounts } from '../helpers/outcomes.js';
import { SkippingClock } from '../helpers/skipping-clock.js';

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir('inlet-send-resume-');
});
afterAll(() => tmp.remove());

/** What the send wrote on stderr. */
class Captured {
  text = '';
  write(s: string): boolean {
    this.text += s;
    return true;
  }
}

interface Rig {
  f: Fixture;
  proxy: FaultProxy;
  clock: SkippingClock;
  send(file: string, o?: SendOptions): Promise<{ summary: Awaited<ReturnType<typeof sendFile>>; stderr: string }>;
  close(): Promise<void>;
}

/** Runs `test` against a server of its own behind a proxy, and stops both after. */
async function withRig(test: (r: Rig) => Promise<void>): Promise<void> {
  const r = await rig();
  try {
    await test(r);
  } finally {
    await r.close();
  }
}

async function rig(): Promise<Rig> {
  const clock = new SkippingClock();
  const f = await makeFixture({ clock });
  const proxy = await FaultProxy.start(await f.app.listen({ port: 0, host: '127.0.0.1' }));
  return {
    f,
    proxy,
    clock,
    send: async (file, o = {}) => {
      const stderr = new Captured();
      const summary = await sendFile(file, { key: f.key, baseUrl: proxy.url, ...o }, { stderr, clock });
      return { summary, stderr: stderr.text };
    },
    close: async () => {
      await proxy.close();
      await f.close();
    },
  };
}

/** 5,000 lines; every third item has no insert_id of its own. */
function writeItems(name: string): string {
  const file = join(tmp.dir, name);
  const line = (i: number) => JSON.stringify({ event: 'row', distinct_id: `c_${i % 13}`, ...(i % 3 === 0 ? {} : { insert_id: `${name.replace(/\W/g, '_')}_${i}` }) });
  writeFileSync(file, Array.from({ length: 5000 }, (_, i) => `${line(i)}\n`).join(''));
  return file;
}

describe('inlet send --resume', () => {
  it('a server gone mid-file: the send stops once it has been out of reach for the timeout, names its state, and --resume sends only the rest, each item stored once', () =>
    withRig(async (r) => {
      const file = writeItems('gone.ndjson');
      // Two batches answered, one stored whose answer is lost, then the server is gone.
      r.proxy.faults.push('pass', 'pass', 'lose-answer', ...Array<'reset'>(10_000).fill('reset'));
      const first = await r.send(file);
      expect(first.summary.failed).toBeGreaterThan(0);
      expect(first.summary.accepted).toBe(1000);
      expect(first.stderr).toMatch(/failed: could not reach http:\/\/127\.0\.0\.1:\d+\/api\/v1\/batch \(unavailable for 60 s, last error \w+\)/);
      const statePath = `${file}.inlet-send.json`;
      expect(first.stderr).toContain(`lines 1 to 1000 have their outcome. Once that is fixed, send the rest with: inlet send ${file} --resume (the state is in ${statePath})`);
      expect(JSON.parse(readFileSync(statePath, 'utf8'))).toMatchObject({ line: 1000 });

      r.proxy.faults.length = 0;
      const rest = await r.send(file, { resume: true });

      expect(rest.stderr).toContain(`resuming ${file} after line 1000`);
      expect(rest.summary).toMatchObject({ sent: 4000, refused: 0, failed: 0 });
      // The batch whose answer was lost was stored: it comes back as duplicates, those without an insert_id too.
      expect(rest.summary.duplicates).toBe(500);
      expect(existsSync(statePath)).toBe(false);
      await r.f.collector.outcomes.flush();
      expect((await storedCounts(r.f, r.clock.now())).get('accepted ')).toBe(5000);
    }));

  it('a live server is never given up on: answered 429 for a quarter of an hour, past any count of retries, the send waits', () =>
    withRig(async (r) => {
      const file = writeItems('busy.ndjson');
      r.proxy.faults.push(...Array<{ status: number; retryAfter: string }>(15).fill({ status: 429, retryAfter: '60' }));
      const { summary, stderr } = await r.send(file);
      expect(summary, stderr).toMatchObject({ sent: 5000, accepted: 5000, failed: 0 });
      expect(stderr).toMatch(/answered 429 injected; still retrying\.\n/);
    }));

  it('--resume refuses a file whose lines already sent have changed, and takes one that only grew', () =>
    withRig(async (r) => {
      const file = writeItems('changed.ndjson');
      r.proxy.faults.push('pass', 'pass', ...Array<'reset'>(10_000).fill('reset'));
      expect((await r.send(file)).summary.failed).toBeGreaterThan(0);
      const original = readFileSync(file, 'utf8');

      writeFileSync(file, original.replace('"c_0"', '"c_X"'));
      await expect(r.send(file, { resume: true })).rejects.toThrow(/has changed since .* was written: its first 1000 lines, already sent, are not the same/);

      writeFileSync(file, original);
      appendFileSync(file, `${JSON.stringify({ event: 'row', distinct_id: 'late', insert_id: 'late_1' })}\n`);
      r.proxy.faults.length = 0;
      const rest = await r.send(file, { resume: true });
      expect(rest.summary).toMatchObject({ sent: 4001, accepted: 4001, failed: 0 });
    }));

  it('--resume without a state says there is nothing to resume', () =>
    withRig(async (r) => {
      const file = writeItems('never.ndjson');
      await expect(r.send(file, { resume: true })).rejects.toThrow(/No send to resume: .*never\.ndjson\.inlet-send\.json does not exist/);
    }));
});
