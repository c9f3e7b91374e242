import { expect } from 'vitest';
import type { Store } from '../../src/stores/port.js';
import { Collector } from '../../src/domain/collector.js';
import { erasePerson, finishErasure } from '../../src/domain/erasure.js';
import { finishErasures } from '../../src/domain/retention.js';
import { collectorOn, ingestJob } from './items.js';

/**
 * An erasure whose process stops after its first step: `cutShort` makes the
 * store's database refuse to delete events (as a crash or a lost database
 * would stop step two) and returns the repair; `reopen` then opens the store
 * again, as a new process would.
 * The person is gone at once; its events stay until finishErasures runs on
 * the record once it is stale, and only then; nobody else's events go.
 */
export async function erasureCutShort(first: Store, cutShort: () => Promise<() => Promise<void>>, reopen: () => Promise<Store>): Promise<void> {
  const collector = await collectorOn(first);
  await collector.ingest(ingestJob([
    { distinctId: 'bob', insertId: 'bob_1' },
    { distinctId: 'bob', insertId: 'bob_2' },
    { distinctId: 'carol', insertId: 'carol_1' },
    { distinctId: 'bob', insertId: 'bob_3' },
  ]));
  const repair = await cutShort();
  await expect(erasePerson(first, 'prj_1', { distinctId: 'bob' }, { suppress: false, now: Date.now() })).rejects.toThrow();
  await repair();
  await collector.close();

  const store = await reopen();
  const next = new Collector(store);
  try {
    const people = async () => (await store.listEvents('src_1', 10)).map((e) => e.distinctId).sort();
    expect(await store.findPerson('prj_1', { distinctId: 'bob' })).toBeNull();
    expect(await people()).toEqual(['bob', 'bob', 'bob', 'carol']);
    // Touched just now: as far as anyone can tell, its process is still at work.
    expect(await finishErasures(store, 60_000)).toEqual({ erasures: 0, eventsDeleted: 0 });
    expect(await people()).toEqual(['bob', 'bob', 'bob', 'carol']);
    // A server that is stopping starts no step, and the record stays for the next one.
    const [pending] = await store.staleErasures(0);
    expect(await finishErasure(store, pending!, { stopping: () => true })).toEqual({ eventsDeleted: 0, done: false });
    expect(await people()).toEqual(['bob', 'bob', 'bob', 'carol']);
    // Idle for no time at all counts every record untouched until now: as if the ten minutes had passed.
    expect(await finishErasures(store, 0)).toEqual({ erasures: 1, eventsDeleted: 3 });
    expect(await people()).toEqual(['carol']);
    // The record is gone, and the insert_ids are free again, as after any erasure.
    expect(await finishErasures(store, 0)).toEqual({ erasures: 0, eventsDeleted: 0 });
    expect((await next.ingest(ingestJob([{ distinctId: 'bob', insertId: 'bob_1' }])))[0]).toMatchObject({ status: 'accepted' });
  } finally {
    await next.close();
  }
}
