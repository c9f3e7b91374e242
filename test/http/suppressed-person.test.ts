/**
 * Suppression is bypassed by anonymous_id (regression): after
 * `inlet person delete --distinct-id gdpr1 --suppress` erased person per_…,
 * an item with that person id as its anonymous_id (a Segment anonymousId
 * "per_…" alike) was accepted and made the erased person again. Its person
 * id is suppressed with its distinct_ids now, on every intake.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type Fixture, TestClock, makeFixture } from '../helpers/fixture.js';
import { erasePerson } from '../../src/domain/erasure.js';

let f: Fixture;
const clock = new TestClock();
beforeEach(async () => {
  f = await makeFixture({ clock });
});
afterEach(async () => f.close());

function post(url: string, body: unknown, authorization = `Bearer ${f.key}`) {
  return f.app.inject({ method: 'POST', url, headers: { authorization, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
}

it('suppression is bypassed by anonymous_id: the erased person id is dropped as suppressed on the batch, import and Segment intakes, and never made again', async () => {
  const made = await post('/api/v1/batch', {
    items: [
      { type: 'identify', distinct_id: 'gdpr1', anonymous_id: 'per_gdpr1browser' },
      { event: 'e1', distinct_id: 'gdpr1', anonymous_id: 'per_gdpr1browser' },
    ],
  });
  expect(made.json()).toMatchObject({ accepted: 2 });
  const erased = await erasePerson(f.collector.store, f.projectId, { distinctId: 'gdpr1' }, { suppress: true, now: clock.now() });
  expect(erased).toMatchObject({ personId: 'per_gdpr1browser', distinctIds: ['gdpr1'], suppressed: true });

  const dropped = [{ index: 0, reason: 'suppressed' }];
  const batch = await post('/api/v1/batch', { items: [{ event: 'e2', anonymous_id: 'per_gdpr1browser' }] });
  expect(batch.statusCode, batch.body).toBe(202);
  expect(batch.json()).toMatchObject({ accepted: 0, dropped });

  const timestamp = new Date(clock.now() - 86_400_000).toISOString();
  const imported = await post('/api/v1/import', { items: [{ event: 'e2', anonymous_id: 'per_gdpr1browser', timestamp }] });
  expect(imported.statusCode, imported.body).toBe(202);
  expect(imported.json()).toMatchObject({ accepted: 0, dropped });

  const basic = `Basic ${Buffer.from(`${f.key}:`).toString('base64')}`;
  const segment = await post(
    '/v1/batch',
    {
      batch: [
        { type: 'track', event: 'e2', anonymousId: 'per_gdpr1browser', messageId: 'm1' },
        { type: 'identify', userId: 'newcomer', anonymousId: 'per_gdpr1browser', traits: { name: 'N' }, messageId: 'm2' },
        { type: 'track', event: 'e2', anonymousId: 'per_someone_else', messageId: 'm3' },
      ],
    },
    basic,
  );
  expect(segment.statusCode, segment.body).toBe(200);
  expect(segment.json()).toMatchObject({ accepted: 1, dropped: [{ index: 0, reason: 'suppressed' }, { index: 1, reason: 'suppressed' }] });

  expect(await f.collector.store.findPerson(f.projectId, { personId: 'per_gdpr1browser' })).toBeNull();
  expect(await f.collector.store.findPerson(f.projectId, { distinctId: 'newcomer' })).toBeNull();
  expect((await f.collector.store.listEvents(f.sourceId, 10)).map((e) => e.anonymousId)).toEqual(['per_someone_else']);
});
