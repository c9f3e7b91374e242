import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';
import { cliJson, runCli } from '../helpers/cli.js';
import { BIN, freePort, runNode } from '../helpers/process.js';

const MAX_RSS_PRELOAD = fileURLToPath(new URL('../helpers/report-max-rss.mjs', import.meta.url));

let live: LiveServer;
let tmp: ReturnType<typeof tempDir>;
beforeAll(async () => {
  live = await startLiveServer({ INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0' });
  tmp = tempDir('inlet-send-');
});
afterAll(async () => {
  await live.stop();
  tmp.remove();
});

const env = () => ({ INLET_KEY: live.key, INLET_BASE_URL: live.url });

/** Runs `inlet send ARGS` with `input` on stdin. */
const sendStdin = (args: string[], input: string) => runCli(['send', ...args], env(), input);

async function writeLines(file: string, n: number, line: (i: number) => string): Promise<void> {
  const out = createWriteStream(file);
  for (let i = 0; i < n; i++) {
    if (!out.write(`${line(i)}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve) => out.end(resolve));
}

describe('inlet send', () => {
  it('sends a 100,000-line file with memory bounded by the queue, not by the file', async () => {
    const file = join(tmp.dir, 'big.ndjson');
    const pad = 'x'.repeat(400);
    // About 50 MB, several times that once parsed.
    await writeLines(file, 100_000, (i) => JSON.stringify({ event: 'row_imported', distinct_id: `c_${i % 977}`, insert_id: `big_${i}`, properties: { i, pad } }));
    const rssFile = join(tmp.dir, 'max-rss');
    // A heap capped below the file's own size: holding the file, or its parsed
    // items, would end the process out of memory.
    const r = await runNode(['--max-old-space-size=48', '--import', MAX_RSS_PRELOAD, BIN, 'send', file, '--json'], { ...env(), INLET_TEST_MAX_RSS_FILE: rssFile });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ sent: 100_000, accepted: 100_000, duplicates: 0, dropped: 0, refused: 0, failed: 0, unreadable: 0 });
    const maxRss = Number(readFileSync(rssFile, 'utf8'));
    expect(maxRss).toBeLessThan(160 * 1024 * 1024);
    const usage = await cliJson(['usage', '--project', live.projectId], live.env);
    expect(usage.events).toBeGreaterThanOrEqual(100_000);
  }, 240_000);

  it('a file saved with a UTF-8 byte order mark: the first line is sent, not refused as not JSON', async () => {
    const file = join(tmp.dir, 'bom.ndjson');
    writeFileSync(file, '\uFEFF{"event":"bom_1","distinct_id":"u1","insert_id":"bom_1"}\r\n{"event":"bom_2","distinct_id":"u1","insert_id":"bom_2"}\r\n');
    const r = await runCli(['send', file, '--json'], env());
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ sent: 2, refused: 0, failed: 0 });
    expect(JSON.parse(r.stdout).accepted + JSON.parse(r.stdout).duplicates).toBe(2);
  });

  it('a line that is not a JSON object is unreadable, apart from refusals: named by number, sent to no one, and the totals are the outcomes', async () => {
    // Regression: such a line was counted as both sent and refused, so "refused" said 4 where outcomes said 1.
    const { id: sourceId } = await cliJson<{ id: string }>(['source', 'create', '--project', live.projectId, '--name', 'mixed'], live.env);
    const { key } = await cliJson<{ key: string }>(['key', 'create', '--source', sourceId], live.env);
    const file = join(tmp.dir, 'mixed.ndjson');
    writeFileSync(
      file,
      [
        '{"event":"ok_1","distinct_id":"u1","insert_id":"mixed_1"}',
        'this is not json',
        '',
        '["an", "array"]',
        '{"event":"$reserved","distinct_id":"u1","insert_id":"mixed_2"}',
        '{"type":"identify","distinct_id":"u1","properties":{"plan":"pro"}}',
        '42',
        '{"event":"ok_2","distinct_id":"u1","insert_id":"mixed_3"}',
      ].join('\n'),
    );
    const r = await runCli(['send', file, '--json', '--key', key], env());
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ sent: 4, accepted: 3, duplicates: 0, dropped: 0, refused: 1, failed: 0, unreadable: 3 });
    expect(r.stderr).toMatch(/line 2: unreadable: not JSON/);
    expect(r.stderr).toMatch(/line 4: unreadable: not a JSON object/);
    expect(r.stderr).toMatch(/line 5: refused: reserved_event_name \(event\)/);
    expect(r.stderr).toMatch(/line 7: unreadable: not a JSON object/);
    const human = await runCli(['send', file, '--key', key], env());
    // The identify item, sent without insert_id, is a new item in a new run.
    expect(human.stdout).toBe('sent 4 items: 1 accepted, 2 duplicates, 0 dropped, 1 refused, 0 failed; 3 unreadable lines\n');
    const events = await cliJson<{ insert_id: string | null }[]>(['events', 'list', '--source', sourceId, '--limit', '100'], live.env);
    const stored = new Set(events.map((e) => e.insert_id));
    expect(['mixed_1', 'mixed_3'].every((id) => stored.has(id))).toBe(true);
    expect(stored.has('mixed_2')).toBe(false);
    // Outcomes of the two runs: what the summaries said, the unreadable lines in none.
    await vi.waitFor(async () => {
      const rows = await cliJson<{ outcome: string; count: number }[]>(['outcomes', '--source', sourceId, '--by', 'day'], live.env);
      const sum = (outcome: string) => rows.filter((x) => x.outcome === outcome).reduce((n, x) => n + x.count, 0);
      expect({ accepted: sum('accepted'), duplicate: sum('duplicate'), refused: sum('refused'), dropped: sum('dropped') }).toEqual({ accepted: 4, duplicate: 2, refused: 2, dropped: 0 });
    }, { timeout: 10_000, interval: 200 });
  });

  it('reads stdin with "-", prints a summary line, and a second run reports duplicates', async () => {
    const input = '{"event":"piped","distinct_id":"u2","insert_id":"piped_1"}\n';
    const first = await sendStdin(['-'], input);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe('sent 1 item: 1 accepted, 0 duplicates, 0 dropped, 0 refused, 0 failed\n');
    const again = await sendStdin(['-', '--json'], input);
    expect(JSON.parse(again.stdout)).toMatchObject({ sent: 1, accepted: 0, duplicates: 1 });
  });

  it('the summary says "1 item" and "1 duplicate", not "1 items" and "1 duplicates"', async () => {
    const input = '{"event":"piped","distinct_id":"u2","insert_id":"singular_1"}\n';
    expect((await sendStdin(['-'], input)).stdout).toBe('sent 1 item: 1 accepted, 0 duplicates, 0 dropped, 0 refused, 0 failed\n');
    expect((await sendStdin(['-'], input)).stdout).toBe('sent 1 item: 0 accepted, 1 duplicate, 0 dropped, 0 refused, 0 failed\n');
  });

  it('--import sends to /api/v1/import and lets the server answer speak', async () => {
    const r = await sendStdin(['-', '--import', '--json'], '{"event":"old","distinct_id":"u3","timestamp":"2026-01-01T00:00:00Z"}\n');
    const summary = JSON.parse(r.stdout);
    expect(summary.sent).toBe(1);
    // Whatever this server answers there, the item has exactly one outcome.
    expect(summary.accepted + summary.duplicates + summary.dropped + summary.refused + summary.failed).toBe(1);
    expect(r.code).toBe(summary.refused + summary.failed > 0 ? 1 : 0);
  });

  it('stops reading at a refusal no retry can fix (a wrong key), and says so once', async () => {
    const file = join(tmp.dir, 'wrong-key.ndjson');
    await writeLines(file, 20_000, (i) => JSON.stringify({ event: 'e', distinct_id: 'u', insert_id: `wk_${i}` }));
    const r = await runCli(['send', file, '--json', '--key', 'srv_live_00000000000000000000000000000000'], env());
    expect(r.code).toBe(1);
    const summary = JSON.parse(r.stdout);
    expect(summary.failed).toBe(summary.sent);
    expect(summary.sent).toBeLessThan(20_000);
    expect(r.stderr.match(/failed: http:\/\/127\.0\.0\.1:\d+\/api\/v1\/batch answered 401 invalid_key/g)).toHaveLength(1);
    expect(r.stderr).toMatch(/stopped/);
  });

  it('with nothing listening at the URL it says so at once, with the URL, while it retries; it gives up after --unreachable-timeout, in one line naming the URL, and names the state to resume from', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/api/v1/batch`;
    const file = join(tmp.dir, 'down.ndjson');
    await writeLines(file, 3, (i) => JSON.stringify({ event: 'e', distinct_id: 'u', insert_id: `down_${i}` }));
    const p = spawn(process.execPath, [BIN, 'send', file, '--json', '--unreachable-timeout', '3'], { env: { ...process.env, ...env(), INLET_BASE_URL: `http://127.0.0.1:${port}` } });
    let stderr = '';
    let stdout = '';
    p.stderr.on('data', (d) => (stderr += d));
    p.stdout.on('data', (d) => (stdout += d));
    const exited = new Promise<number | null>((resolve) => p.on('close', resolve));
    let exitedYet = false;
    void exited.then(() => (exitedYet = true));
    // Said while it still retries, not when it gives up.
    await vi.waitFor(() => expect(stderr).toContain(`cannot reach ${url}`), { timeout: 20_000, interval: 50 });
    expect(exitedYet).toBe(false);
    expect(stderr).toContain('still retrying, for up to 3 s out of reach.');
    expect(await exited).toBe(1);
    expect(JSON.parse(stdout)).toMatchObject({ sent: 3, failed: 3 });
    const failures = stderr.split('\n').filter((l) => l.includes('failed'));
    expect(failures).toHaveLength(1);
    // The reason as docs/cli.md shows it: one pair of parentheses, the network error named.
    expect(failures[0]).toMatch(/^inlet: 3 items \(the first at line \d\) failed: could not reach \S+ \(unavailable for 3 s, last error ECONNREFUSED\)$/);
    expect(failures[0]).toContain(`could not reach ${url} (`);
    expect(stderr).toContain(`no line has its outcome yet. Once that is fixed, send the rest with: inlet send ${file} --resume (the state is in ${file}.inlet-send.json)`);
  }, 120_000);

  it('without a key it says how to give one', async () => {
    const r = await runCli(['send', '-'], { INLET_KEY: '' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--key or INLET_KEY/);
  });
});
