/**
 * Regression: "the fix-and-resend loop has traps". `inlet refused export`
 * wrote items without their errors (`refused list --json` was needed to know
 * what to fix) and without an insert_id when none was sent, so sending a
 * fixed file twice stored items twice; and it exported dropped bot items,
 * which were dropped again.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';
import { cliJson, runCli } from '../helpers/cli.js';

let live: LiveServer;
let tmp: ReturnType<typeof tempDir>;
let requestId: string;
beforeAll(async () => {
  live = await startLiveServer();
  tmp = tempDir('inlet-refused-export-');
  const res = await fetch(`${live.url}/api/v1/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${live.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      items: [
        { event: '$signup', distinct_id: 'u1', properties: { plan: 'pro' } },
        { event: 'ok', distinct_id: 'u1', insert_id: 'fine_1' },
        { event: 'crawled', distinct_id: 'u1', properties: { $user_agent: 'Googlebot/2.1 (+http://www.google.com/bot.html)' } },
        { event: '', distinct_id: 'u2', insert_id: 'mine_1' },
      ],
    }),
  });
  expect(res.status).toBe(202);
  requestId = ((await res.json()) as { request_id: string }).request_id;
  // Samples are written within a second of the answer.
  await vi.waitFor(async () => expect(await cliJson<unknown[]>(['refused', 'list', '--source', live.sourceId], live.env)).toHaveLength(3), { timeout: 10_000, interval: 200 });
});
afterAll(async () => {
  await live.stop();
  tmp.remove();
});

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('inlet refused export', () => {
  it('writes each refused item as sent, with its errors under "_inlet_errors" and an insert_id; dropped items are left out, and counted', async () => {
    const file = join(tmp.dir, 'refused.ndjson');
    const r = await runCli(['refused', 'export', '--source', live.sourceId, '--out', file], live.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe(`inlet: exported 2 kept items to ${file}; left out: 1 dropped (--include-dropped to export them)\n`);
    const byEvent = new Map(lines(file).map((l) => [l.event, l]));
    expect([...byEvent.keys()].sort()).toEqual(['', '$signup']);
    // Sent without insert_id: one made of its request id and index, the same at every export.
    expect(byEvent.get('$signup')).toMatchObject({ distinct_id: 'u1', properties: { plan: 'pro' }, insert_id: `${requestId}-0`, _inlet_errors: [{ code: 'reserved_event_name', field: 'event' }] });
    expect(byEvent.get('')).toMatchObject({ insert_id: 'mine_1', _inlet_errors: [{ code: 'invalid_event_name', field: 'event' }] });
    expect((byEvent.get('$signup')!._inlet_errors as { message: string }[])[0]!.message).toMatch(/\$/);
  });

  it('a fixed file sent twice stores each item once: the second send counts duplicates; "_inlet_errors" is not sent', async () => {
    const file = join(tmp.dir, 'fixed.ndjson');
    expect((await runCli(['refused', 'export', '--source', live.sourceId, '--out', file], live.env)).code).toBe(0);
    writeFileSync(file, readFileSync(file, 'utf8').replace('"event":"$signup"', '"event":"signup"').replace('"event":""', '"event":"named"'));
    const env = { INLET_KEY: live.key, INLET_BASE_URL: live.url };
    const first = await runCli(['send', file, '--json'], env);
    expect(JSON.parse(first.stdout), first.stderr).toEqual({ sent: 2, accepted: 2, duplicates: 0, dropped: 0, refused: 0, failed: 0, unreadable: 0 });
    const second = await runCli(['send', file, '--json'], env);
    expect(JSON.parse(second.stdout), second.stderr).toEqual({ sent: 2, accepted: 0, duplicates: 2, dropped: 0, refused: 0, failed: 0, unreadable: 0 });
    const stored = (await live.events(100)).filter((e) => e.event === 'signup' || e.event === 'named');
    expect(stored.map((e) => e.insert_id).sort()).toEqual([`${requestId}-0`, 'mine_1'].sort());
    expect(stored.every((e) => !('_inlet_errors' in e.properties))).toBe(true);
  });

  it('--include-dropped exports dropped items too, each with its reason under "_inlet_dropped"', async () => {
    const r = await runCli(['refused', 'export', '--source', live.sourceId, '--include-dropped'], live.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const exported = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(exported).toHaveLength(3);
    expect(exported.find((l) => l.event === 'crawled')).toMatchObject({ insert_id: `${requestId}-2`, _inlet_errors: [], _inlet_dropped: 'bot_filtered' });
  });
});
