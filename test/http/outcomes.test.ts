/**
 * What became of every item: the counts a server keeps equal what its
 * answers said, item by item, over every intake; samples of each code are
 * kept; the log line names the codes; dry runs count nothing.
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Fixture, makeFixture, send } from '../helpers/fixture.js';
import { Expected, mixedWorkload, storedCounts } from '../helpers/outcomes.js';

describe('item outcomes over the intakes', () => {
  let f: Fixture;
  let logs = '';
  beforeEach(async () => {
    const stream = new PassThrough();
    logs = '';
    stream.on('data', (d) => (logs += d));
    f = await makeFixture({ logStream: stream });
  });
  afterEach(async () => f.close());

  it("counts equal the answers' outcomes for a mixed workload over every intake, each refused and dropped code with a sample", async () => {
    const expected = new Expected();
    await mixedWorkload(f, expected, 'one');
    await f.collector.outcomes.flush();
    expect(await storedCounts(f, f.clock.ms)).toEqual(expected.counts);
    // Each code the workload refused or dropped items with has a sample kept.
    for (const key of expected.counts.keys()) {
      const [outcome, code] = key.split(' ');
      if (outcome === 'accepted' || outcome === 'duplicate' || !/^[a-z_]+$/.test(code!) || ['invalid_json', 'unsupported_media_type', 'strict_item_invalid'].includes(code!)) continue;
      const kept = await f.collector.store.outcomes.samples({ sourceId: f.sourceId, code, limit: 1 });
      expect(kept, code).toHaveLength(1);
      expect(kept[0]!.outcome).toBe(outcome);
    }
  });

  it('the counts of written items are stored once the answer is sent: committed with the items, no write of the ledger waited for', async () => {
    await f.admin.updateProject(f.projectId, { monthlyEventLimit: 3 });
    const items = [{ event: 'a', distinct_id: 'u', insert_id: 'w-1' }, { event: 'b', distinct_id: 'u', insert_id: 'w-2' }];
    expect((await send(f, { items })).json()).toMatchObject({ accepted: 2 });
    expect((await send(f, { items: [...items, { event: 'c', distinct_id: 'u' }, { event: 'd', distinct_id: 'u' }] })).json()).toMatchObject({ duplicates: [0, 1] });
    expect(await storedCounts(f, f.clock.ms)).toEqual(new Map([['accepted ', 3], ['duplicate ', 2], ['dropped collection_paused', 1]]));
  });

  it('a refused item is kept as sent, with its request id, index and every error', async () => {
    const item = { event: '$bad', distinct_id: 'u1', properties: { $currency: 'dollars' } };
    const res = await send(f, { items: [{ event: 'ok', distinct_id: 'u1' }, item] });
    await f.collector.outcomes.flush();
    const [kept] = await f.collector.store.outcomes.samples({ sourceId: f.sourceId, limit: 10 });
    expect(kept).toMatchObject({ outcome: 'refused', requestId: res.json().request_id, index: 1, cut: false, distinctId: 'u1' });
    expect(JSON.parse(kept!.item)).toEqual(item);
    expect(JSON.parse(kept!.errors)).toEqual(res.json().errors);
    expect(kept!.codes).toEqual([...new Set(res.json().errors.map((e: { code: string }) => e.code))]);
  });

  it('a dry run counts and keeps nothing', async () => {
    await send(f, { items: [{ event: 'ok', distinct_id: 'u' }, { event: '$bad', distinct_id: 'u' }] }, { query: 'validate=true' });
    await send(f, null, { raw: '{', query: 'validate=true' });
    await f.collector.outcomes.flush();
    expect(await storedCounts(f, f.clock.ms)).toEqual(new Map());
    expect(await f.collector.store.outcomes.samples({ sourceId: f.sourceId, limit: 10 })).toEqual([]);
  });

  it('the request log line names the codes it refused and dropped, with their counts, and never the item', async () => {
    await send(f, { items: [{ event: '$bad', distinct_id: 'LOGGED-USER' }, { event: '$worse', distinct_id: 'u' }, { event: 'ok', distinct_id: 'u', properties: { $user_agent: 'Googlebot/2.1' } }, { event: 'ok', distinct_id: 'u' }] });
    const line = logs.trim().split('\n').map((l) => JSON.parse(l)).find((l) => l.msg === 'request');
    expect(line.items).toEqual({ accepted: 1, duplicate: 0, dropped: 1, refused: 2, codes: { reserved_event_name: 2, bot_filtered: 1 } });
    expect(logs).not.toContain('LOGGED-USER');
    expect(logs).not.toContain('$worse');
  });
});

describe('item outcomes under a flood', () => {
  it('a flood of 1 MiB invalid items keeps samples of 16 KiB at most, within the bounds per code and project', async () => {
    const f = await makeFixture({ limits: { burst: 0, sustained: 0, keyRps: 0 } });
    try {
      const huge = 'x'.repeat(1024 * 1024 - 200);
      for (let i = 0; i < 120; i++) {
        const res = await send(f, { items: [{ event: '$flood', distinct_id: 'u', properties: { pad: huge } }] });
        expect(res.statusCode).toBe(400);
      }
      // Only the newest 100 of a code wait to be written, each cut to 16 KiB.
      expect(f.collector.outcomes.pendingSampleBytes).toBeLessThanOrEqual(100 * 16 * 1024);
      await f.collector.outcomes.flush();
      const kept = await f.collector.store.outcomes.samples({ sourceId: f.sourceId, limit: 1000 });
      expect(kept).toHaveLength(100);
      for (const s of kept) {
        expect(Buffer.byteLength(s.item)).toBeLessThanOrEqual(16 * 1024);
        expect(s.cut).toBe(true);
      }
      expect(await storedCounts(f, f.clock.ms)).toEqual(new Map([['refused reserved_event_name', 120]]));
    } finally {
      await f.close();
    }
  });
});
