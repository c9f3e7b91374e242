import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../helpers/http-fault-proxy.js';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';
import { cliJson, runNode } from '../helpers/process.js';

let live: LiveServer;
beforeAll(async () => {
  live = await startLiveServer();
});
afterAll(async () => live.stop());

/** Runs one of ./scripts/*.mjs (they import the built @inlet/node) to its exit. */
function runScript(name: string, args: string[], baseUrl: string) {
  const file = fileURLToPath(new URL(`./scripts/${name}`, import.meta.url));
  return runNode([file, ...args], { INLET_KEY: live.key, INLET_BASE_URL: baseUrl });
}

/** Events the project stored this month, by the usage count (more than `events list` pages at once). */
async function storedThisMonth(): Promise<number> {
  return (await cliJson(['usage', '--project', live.projectId], live.env)).events;
}

describe('short-lived processes', () => {
  it('a function that tracks and awaits flush() before it is cut off delivers everything', async () => {
    const r = await runScript('serverless-handler.mjs', ['730', 'lambda'], live.url);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ accepted: 730, failed: 0 });
    const stored = (await live.events(5000)).filter((e) => e.insert_id?.startsWith('lambda_'));
    expect(new Set(stored.map((e) => e.insert_id)).size).toBe(730);
  });

  it('awaiting flush() keeps the process alive through retry waits, until the item is delivered', async () => {
    const proxy = await FaultProxy.start(live.url);
    proxy.faults.push('reset', { status: 503 });
    try {
      const r = await runScript('retries-then-flushes.mjs', ['held_open_1'], proxy.url);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ accepted: 1 });
      expect(proxy.log).toHaveLength(3);
    } finally {
      await proxy.close();
    }
  });

  it('a plain loop of 10,100 track() calls past maxQueue, then flush(), stores every item instead of dying of QueueFullError', async () => {
    const before = await storedThisMonth();
    const r = await runScript('first-script.mjs', ['10100', 'first'], live.url);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ accepted: 10100, duplicates: 0, failed: 0, refused: 0 });
    expect((await storedThisMonth()) - before).toBe(10100);
  });

  it('a script that ends without flush() delivers what it queued, and the hour-long batching timer does not hold it open', async () => {
    const r = await runScript('never-flushes.mjs', ['forgot_flush_1'], live.url);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('tracked');
    expect((await live.events(5000)).filter((e) => e.insert_id === 'forgot_flush_1')).toHaveLength(1);
  });
});
