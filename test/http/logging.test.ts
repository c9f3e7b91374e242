import { PassThrough } from 'node:stream';
import { expect, it } from 'vitest';
import { makeFixture, send } from '../helpers/fixture.js';

it('logs one line per request with its status and refusal code, and never a key, a header or a property', async () => {
  const stream = new PassThrough();
  let logs = '';
  stream.on('data', (d) => (logs += d));
  const f = await makeFixture({ logStream: stream });
  try {
    const secret = 'property-value-that-must-not-be-logged';
    await send(f, { items: [{ event: 'e', distinct_id: 'user-that-must-not-be-logged', properties: { note: secret } }] });
    await send({ ...f, key: `srv_live_${'Z'.repeat(32)}` }, { items: [] });
    await send(f, { items: [{ event: '$bad', distinct_id: 'u', properties: { note: secret } }] });
    const lines = logs.trim().split('\n').map((l) => JSON.parse(l));
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.map((l) => [l.status, l.code])).toEqual([[202, undefined], [401, 'invalid_key'], [400, 'all_items_invalid']]);
    for (const leak of [f.key, 'Z'.repeat(32), secret, 'user-that-must-not-be-logged', 'authorization']) {
      expect(logs).not.toContain(leak);
    }
  } finally {
    await f.close();
  }
});
