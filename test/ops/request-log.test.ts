import { PassThrough } from 'node:stream';
import { expect, it } from 'vitest';
import { makeFixture, send } from '../helpers/fixture.js';

it('one line per request with its ids, route, counts and duration; no key, property or trait in any line', async () => {
  const stream = new PassThrough();
  let logs = '';
  stream.on('data', (d) => (logs += d));
  const f = await makeFixture({ logStream: stream });
  try {
    const marks = { prop: 'PROP-MARKER-7f3a', trait: 'TRAIT-MARKER-91bc', key: 'KEYNAME-MARKER-22d0', user: 'USER-MARKER-5e61', event: 'EVENT-MARKER-0c4d' };
    const items = [
      { event: marks.event, distinct_id: marks.user, insert_id: 'log-1', properties: { [marks.key]: marks.prop } },
      { type: 'identify', distinct_id: marks.user, traits: { plan: marks.trait } },
      { event: 'bot', distinct_id: 'u', properties: { $user_agent: 'Googlebot/2.1 (+http://www.google.com/bot.html)' } },
      { event: '$bad', distinct_id: 'u', properties: { note: marks.prop } },
    ];
    await send(f, { items });
    await send(f, { items: items.slice(0, 1) });
    await send({ ...f, key: `srv_live_${'Z'.repeat(32)}` }, { items });
    await f.app.inject({ method: 'GET', url: '/readyz' });

    const lines = logs.trim().split('\n').map((l) => JSON.parse(l));
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests).toHaveLength(4);
    const [first, second, badKey, ready] = requests;
    expect(first).toMatchObject({
      method: 'POST', route: '/api/*', project: f.projectId, source: f.sourceId, status: 202,
      items: { accepted: 2, duplicate: 0, dropped: 1, refused: 1 },
    });
    expect(first.reqId).toMatch(/^req_/);
    expect(typeof first.duration_ms).toBe('number');
    expect(first.code).toBeUndefined();
    expect(second).toMatchObject({ status: 202, items: { accepted: 0, duplicate: 1, dropped: 0, refused: 0 } });
    expect(badKey).toMatchObject({ status: 401, code: 'invalid_key', route: '/api/*' });
    expect(badKey.project).toBeUndefined();
    expect(ready).toMatchObject({ route: '/readyz', status: 200 });
    for (const leak of [f.key, f.key.slice(-12), 'Z'.repeat(32), ...Object.values(marks), 'authorization', 'Googlebot']) {
      expect(logs).not.toContain(leak);
    }
  } finally {
    await f.close();
  }
});
