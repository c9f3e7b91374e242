/**
 * What passes validation is storable on every engine: content never fails a
 * write. Each engine is sent what one of them used to refuse.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_KEY_LENGTH } from '../../src/domain/storable.js';
import { STORES, type StoreUnderTest } from '../conformance/stores.js';
import { type Fixture, makeFixture, send } from '../helpers/fixture.js';

/** `n` code points drawn from the supplementary planes (4 bytes of UTF-8 each), which nothing compresses. */
function incompressible(n: number, seed: number): string {
  let x = seed >>> 0 || 1;
  let s = '';
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    s += String.fromCodePoint(0x10000 + ((x >>> 0) % 0xfffff));
  }
  return s;
}

const XBOX = (spliced: string) =>
  `Mozilla/5.0 (Windows NT 10.0; Win64; x64; Xbox; Xbox One${spliced}) AppleWebKit/537.36 Chrome/70 Safari/537.36 Edge/44`;

for (const engine of STORES) {
  describe(`content never fails a write (${engine.name})`, () => {
    let s: StoreUnderTest;
    let f: Fixture;
    beforeAll(async () => {
      s = await engine.make();
      // The fixture's own write path over the engine's store; cleanup closes that store.
      f = await makeFixture({ store: s.collector.store });
    });
    afterAll(async () => {
      await f.app.close();
      await f.collector.flush();
      await s.cleanup();
    });

    it('fault 2: a user agent with U+0000 or a lone surrogate spliced in is enriched with storable values and stored', async () => {
      const items = [
        { event: 'nul', distinct_id: 'ua_1', insert_id: 'ua_nul', properties: { $user_agent: XBOX('\u0000') } },
        { event: 'surrogate', distinct_id: 'ua_1', insert_id: 'ua_sur', properties: { $user_agent: XBOX('\ud800') } },
        { event: 'neighbour', distinct_id: 'ua_1', insert_id: 'ua_ok' },
      ];
      const dry = await send(f, { items }, { query: 'validate=true' });
      expect(dry.statusCode).toBe(200);
      const res = await send(f, { items });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toMatchObject({ accepted: 3, errors: [] });
      const stored = new Map((await f.collector.store.listEvents(f.sourceId, 100)).map((e) => [e.insertId, e.properties]));
      expect(stored.get('ua_nul')).toMatchObject({ $os: 'Xbox', $os_version: 'One', $browser: 'Edge', $device_type: 'console' });
      expect(stored.get('ua_sur')).toMatchObject({ $os: 'Xbox', $os_version: 'One\ufffd' });
      // The dry run showed exactly what was then stored.
      for (const shown of dry.json().items) {
        expect(stored.get(shown.insert_id)).toEqual({ ...shown.properties, ...shown.enrichment });
      }
    });

    it('fault 3: a property or trait key longer than the limit is an item error, at any depth; one at the limit is stored', async () => {
      const long = incompressible(700, 3); // 2,800 bytes: past PostgreSQL's index row
      const atLimit = incompressible(MAX_KEY_LENGTH, 4);
      const res = await send(f, {
        items: [
          { type: 'identify', distinct_id: 'keys_1', properties: { [long]: 1 } },
          { event: 'nested', distinct_id: 'keys_1', properties: { outer: { [`k${'x'.repeat(MAX_KEY_LENGTH)}`]: 1 } } },
          { type: 'identify', distinct_id: 'keys_1', properties: { [atLimit]: 'kept' } },
        ],
      });
      expect(res.statusCode, res.body).toBe(202);
      const body = res.json();
      expect(body.accepted).toBe(1);
      expect(body.errors.map((e: { index: number; code: string; field: string }) => [e.index, e.code, e.field])).toEqual([
        [0, 'invalid_properties', 'properties'],
        [1, 'invalid_properties', 'properties'],
      ]);
      expect(body.errors[0].message).toContain(`at most ${MAX_KEY_LENGTH}`);
      expect(body.errors[0].message).toContain('has 700 characters');
      const person = await f.collector.store.findPerson(f.projectId, { distinctId: 'keys_1' });
      expect(person?.traits).toEqual({ [atLimit]: 'kept' });
    });

    it('fault 3: every indexed field at its longest, in incompressible characters, is stored', async () => {
      const distinctId = incompressible(128, 5);
      const item = {
        event: incompressible(128, 6),
        distinct_id: distinctId,
        anonymous_id: `per_${'A'.repeat(124)}`,
        session_id: `ses_${'B'.repeat(124)}`,
        insert_id: 'C'.repeat(80),
        properties: { [incompressible(MAX_KEY_LENGTH, 7)]: incompressible(300, 8) },
      };
      // The longest trait key, on the person with the longest id (a browser person's), in one index row.
      const identify = {
        type: 'identify',
        distinct_id: distinctId,
        anonymous_id: item.anonymous_id,
        insert_id: 'D'.repeat(80),
        properties: { [incompressible(MAX_KEY_LENGTH, 9)]: 1 },
      };
      const res = await send(f, { items: [item, identify] });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toMatchObject({ accepted: 2, errors: [] });
      const [stored] = (await f.collector.store.listEvents(f.sourceId, 100)).filter((e) => e.insertId === item.insert_id);
      expect(stored).toMatchObject({ event: item.event, distinctId, anonymousId: item.anonymous_id, sessionId: item.session_id });
      expect(await f.collector.store.findPerson(f.projectId, { distinctId })).toMatchObject({ id: item.anonymous_id, traits: identify.properties });
    });

    it('fault 15: a dry run of a repeat shows the stored event id, not a fresh one', async () => {
      const items = [
        { event: 'paid', distinct_id: 'dup_1', insert_id: 'dup_track' },
        { event: 'paid', distinct_id: 'dup_1', properties: { $insert_id: 'dup_prop' } },
        { type: 'identify', distinct_id: 'dup_1', insert_id: 'dup_identify', properties: { plan: 'pro' } },
      ];
      const first = await send(f, { items }, { query: 'validate=true' });
      expect(first.json().items.map((i: { outcome: string }) => i.outcome)).toEqual(['accepted', 'accepted', 'accepted']);
      expect((await send(f, { items })).json()).toMatchObject({ accepted: 3, duplicates: [] });
      const ids = new Map((await f.collector.store.listEvents(f.sourceId, 100)).map((e) => [e.insertId, e.id]));
      const again = (await send(f, { items }, { query: 'validate=true' })).json().items;
      expect(again.map((i: { outcome: string; event_id: string | null }) => [i.outcome, i.event_id])).toEqual([
        ['duplicate', ids.get('dup_track')],
        ['duplicate', ids.get('dup_prop')],
        ['duplicate', null],
      ]);
      expect(ids.get('dup_track')).not.toEqual(first.json().items[0].event_id);
    });
  });
}
