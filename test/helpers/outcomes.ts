import { type Fixture, send } from './fixture.js';

/** Counts by "outcome code" from a run of answers, as the API stated them. */
export class Expected {
  readonly counts = new Map<string, number>();

  add(key: string, n = 1): void {
    if (n > 0) this.counts.set(key, (this.counts.get(key) ?? 0) + n);
  }

  /** What an answer says became of its `sent` items. */
  answer(res: { statusCode: number; json(): any }, sent: number): void {
    const b = res.json();
    if (res.statusCode === 200 || res.statusCode === 202) {
      this.add('accepted ', b.accepted - b.duplicates.length);
      this.add('duplicate ', b.duplicates.length);
      for (const d of b.dropped) this.add(`dropped ${d.reason}`);
      this.refusedItems(b.errors);
      return;
    }
    const code = b.error.code as string;
    if (code === 'all_items_invalid' || code === 'strict_item_invalid') {
      const invalid = this.refusedItems(b.error.errors);
      this.add('refused strict_item_invalid', sent - invalid);
      return;
    }
    this.add(`refused ${code}`, code === 'rate_limited' ? sent : 1);
  }

  /** Each refused item under its first code; how many items that was. */
  private refusedItems(errors: { index: number; code: string }[]): number {
    const seen = new Set<number>();
    for (const e of errors) {
      if (seen.has(e.index)) continue;
      seen.add(e.index);
      this.add(`refused ${e.code}`);
    }
    return seen.size;
  }
}

/** The counts the store holds for the source, as "outcome code" → count. */
export async function storedCounts(f: Pick<Fixture, 'collector' | 'sourceId'>, at: number): Promise<Map<string, number>> {
  const rows = await f.collector.store.outcomes.outcomeCounts({ sourceId: f.sourceId, since: at - 86_400_000, until: at + 86_400_000, bucketMs: 86_400_000 });
  return new Map(rows.map((r) => [`${r.outcome} ${r.code}`, r.count]));
}

/** A mixed workload over the batch, import and Segment intakes; each answer goes to `expected`. */
export async function mixedWorkload(f: Pick<Fixture, 'app' | 'key' | 'clock'>, expected: Expected, tag: string): Promise<void> {
  const batch = async (items: unknown[], opts: Parameters<typeof send>[2] = {}) => expected.answer(await send(f, { items }, opts), items.length);
  const bot = { $user_agent: 'Googlebot/2.1 (+http://www.google.com/bot.html)' };
  await batch([
    { event: 'ok', distinct_id: 'u1', insert_id: `${tag}-a` },
    { event: '$bad', distinct_id: 'u1' },
    { event: 'bot', distinct_id: 'u1', properties: bot },
    { type: 'identify', distinct_id: 'u1', properties: { plan: 'team' } },
    { event: '', distinct_id: 'u2' },
  ]);
  await batch([{ event: 'ok', distinct_id: 'u1', insert_id: `${tag}-a` }, { event: 'again', distinct_id: 'u1', insert_id: `${tag}-b` }]);
  await batch([{ event: 'ok', distinct_id: 'u3' }, { event: '$bad', distinct_id: 'u3' }], { query: 'strict=true' });
  await batch([{ event: '$bad', distinct_id: 'u3' }, { distinct_id: 'u3' }]);
  expected.answer(await send(f, null, { raw: '{"items": [' }), 1);
  expected.answer(await send(f, null, { raw: '{"items": [1]}', headers: { 'content-type': 'text/plain' } }), 1);
  const old = new Date(f.clock.ms - 30 * 86_400_000).toISOString();
  await batch([{ event: 'imported', distinct_id: 'u4', timestamp: old }, { event: 'imported', distinct_id: 'u4' }], { path: '/api/v1/import' });
  const segment = await f.app.inject({
    method: 'POST',
    url: '/v1/batch',
    headers: { authorization: `Basic ${Buffer.from(`${f.key}:`).toString('base64')}`, 'content-type': 'application/json' },
    payload: JSON.stringify({
      batch: [
        { type: 'track', event: 'seg', userId: 'u5', messageId: `${tag}-m1` },
        { type: 'track', event: '$seg', userId: 'u5', messageId: `${tag}-m2` },
        { type: 'track', event: 'seg', userId: 'u5', messageId: `${tag}-m3`, context: { userAgent: bot.$user_agent } },
      ],
    }),
  });
  expected.answer(segment, 3);
}

