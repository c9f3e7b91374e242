import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/helpers/fixture.js';
import { passWrites } from '../../../test/helpers/pass-bundles.js';
import { type ItemSpec, collectorOn, ingestJob } from '../../../test/helpers/items.js';
import type { Collector } from '../../domain/collector.js';
import type { IngestJob, ItemOutcome } from '../../domain/ingest/job.js';
import { type Db, openSqlite } from './open.js';
import { PersonLinkCache } from './person-link-cache.js';
import { SqliteStore } from './sqlite-store.js';

const tmp = tempDir('inlet-person-links-');
const opened: Db[] = [];
const collectors: Collector[] = [];
afterEach(async () => {
  for (const c of collectors.splice(0)) await c.close();
  for (const db of opened.splice(0)) db.close();
  tmp.remove();
});

function open(): Db {
  const db = openSqlite(tmp.dir);
  opened.push(db);
  return db;
}

/** A store on a connection the test can also reach behind its back, with the domain's write path over it. */
async function setUp(): Promise<{ db: Db; committer: Collector }> {
  const db = openSqlite(tmp.dir);
  const committer = await collectorOn(new SqliteStore(db));
  collectors.push(committer);
  return { db, committer };
}

const personOf = (o: ItemOutcome): string => {
  if (o.status !== 'accepted' || o.personId === null) throw new Error(`item ${o.index} was ${o.status}, with no person`);
  return o.personId;
};
const track = (distinctId: string): ItemSpec => ({ distinctId });
const identify = (distinctId: string, anonymousId: string): ItemSpec => ({ type: 'identify', distinctId, anonymousId, properties: { plan: 'pro' } });
const send = async (committer: Collector, job: IngestJob): Promise<string[]> => (await committer.ingest(job)).map(personOf);

describe('person links served from memory', () => {
  it('are served from memory once committed, until another connection commits', async () => {
    const { db, committer } = await setUp();
    const [first] = await send(committer, ingestJob([track('u1')]));
    // The link is remembered once a write has read it back.
    expect(await send(committer, ingestJob([track('u1')]))).toEqual([first]);
    // Changed behind the store's back on its own connection, which its
    // contract forbids: the link still comes from memory.
    db.prepare("INSERT INTO persons (project_id, id, kind, created_at) VALUES ('prj_1', 'per_other', 'server', 0)").run();
    db.prepare("UPDATE person_links SET person_id = 'per_other' WHERE distinct_id = 'u1'").run();
    expect(await send(committer, ingestJob([track('u1')]))).toEqual([first]);
    // Another connection (an admin command, another process) commits: memory is dropped.
    open().prepare("UPDATE person_links SET person_id = 'per_other' WHERE distinct_id = 'u1'").run();
    expect(await send(committer, ingestJob([track('u1')]))).toEqual(['per_other']);
  });

  it('a merge earlier in the same commit is followed by the jobs after it', async () => {
    const { committer } = await setUp();
    const [server] = await send(committer, ingestJob([track('u2')]));
    // Read back once: now it is in memory.
    await send(committer, ingestJob([track('u2')]));
    // Two sources, so two passes in one commit; the first merges u2's server person into a browser person.
    const merging = committer.ingest(ingestJob([identify('u2', 'per_browser1')], { sourceId: 'src_1' }));
    const later = committer.ingest(ingestJob([track('u2')], { sourceId: 'src_2' }));
    const [browser] = (await merging).map(personOf);
    expect(browser).toBe('per_browser1');
    expect((await later).map(personOf)).toEqual([browser]);
    expect(await send(committer, ingestJob([track('u2')]))).toEqual([browser]);
    expect(browser).not.toBe(server);
  });

  it('a merge drops what memory held for the merged person', async () => {
    const { committer } = await setUp();
    await send(committer, ingestJob([track('u6')]));
    await send(committer, ingestJob([track('u6')]));
    const [browser] = await send(committer, ingestJob([identify('u6', 'per_browser3')]));
    expect(await send(committer, ingestJob([track('u6')]))).toEqual([browser]);
  });

  it("a merge keeps other people's links in memory", async () => {
    const { db, committer } = await setUp();
    for (let i = 0; i < 2; i++) await send(committer, ingestJob([track('u7'), track('u8')]));
    const [u8] = await send(committer, ingestJob([track('u8')]));
    // Changed behind the store's back: only memory still says u8's old person.
    db.prepare("INSERT INTO persons (project_id, id, kind, created_at) VALUES ('prj_1', 'per_other', 'server', 0)").run();
    db.prepare("UPDATE person_links SET person_id = 'per_other' WHERE distinct_id = 'u8'").run();
    const [browser] = await send(committer, ingestJob([identify('u7', 'per_browser4')]));
    expect(await send(committer, ingestJob([track('u7'), track('u8')]))).toEqual([browser, u8]);
  });

  it('a link made earlier in the same commit is used by the jobs after it', async () => {
    const { committer } = await setUp();
    const first = committer.ingest(ingestJob([track('u3')], { sourceId: 'src_1' }));
    const second = committer.ingest(ingestJob([track('u3')], { sourceId: 'src_2' }));
    const [a] = (await first).map(personOf);
    expect((await second).map(personOf)).toEqual([a]);
    expect(await send(committer, ingestJob([track('u3')]))).toEqual([a]);
  });

  it('what a dry run links or merges is never remembered', async () => {
    const { committer } = await setUp();
    const [server] = await send(committer, ingestJob([track('u4')]));
    await send(committer, ingestJob([track('u4')]));
    const dry = await send(committer, ingestJob([identify('u4', 'per_browser2'), track('u5')], { dryRun: true }));
    expect(dry[0]).toBe('per_browser2');
    expect(await send(committer, ingestJob([track('u4')]))).toEqual([server]);
    const [u5] = await send(committer, ingestJob([track('u5')]));
    expect(u5).not.toBe(dry[1]);
  });
});

describe('the store around the cache', () => {
  it('refuses a nested transaction', async () => {
    const store = SqliteStore.open(tmp.dir);
    try {
      await expect(store.transaction(() => store.transaction(async () => 1))).rejects.toThrow('cannot be nested');
      // The store still takes writes.
      await expect(store.transaction(async () => 2)).resolves.toBe(2);
    } finally {
      await store.close();
    }
  });

  it('an admin transaction that waits on something else holds the group commit back, and the merge it makes is seen next', async () => {
    const sqlite = SqliteStore.open(tmp.dir);
    // The engine's transactions are seen as they reach the store.
    let reached: () => void = () => {};
    const collector = await collectorOn(
      new Proxy(sqlite, {
        get: (t, p) => {
          if (p === 'transaction') return (...a: Parameters<SqliteStore['transaction']>) => (reached(), t.transaction(...a));
          const v = Reflect.get(t, p, t) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
        },
      }),
    );
    try {
      const [server] = (await collector.ingest(ingestJob([track('u1')]))).map(personOf);
      await collector.ingest(ingestJob([track('u1')]));
      let during: Promise<ItemOutcome[]> = Promise.resolve([]);
      await sqlite.transaction(async (tx) => {
        // A job arrives while the transaction waits on something else (here:
        // that job reaching the store): it must wait too, not fail.
        const inStore = new Promise<void>((r) => (reached = r));
        during = collector.ingest(ingestJob([track('u9')]));
        await inStore;
        await tx.write({ projectId: 'prj_1', sourceId: 'src_1', now: 0 }, passWrites({ persons: [{ id: 'per_b', kind: 'browser' }], merges: [{ from: server!, into: 'per_b' }] }));
      });
      expect((await during).map((o) => o.status)).toEqual(['accepted']);
      expect((await collector.ingest(ingestJob([track('u1')]))).map(personOf)).toEqual(['per_b']);
      expect(server).not.toBe('per_b');
    } finally {
      await collector.close();
    }
  });
});

describe('PersonLinkCache', () => {
  const ref = (id: string) => ({ id, kind: 'server' as const });

  it('takes in reads only when the write commits, and never the distinct_ids the write linked', () => {
    const cache = new PersonLinkCache();
    cache.beginWrite(1);
    cache.read('p', 'a', ref('per_a'));
    cache.read('p', 'b', ref('per_b'));
    cache.link('p', 'b');
    expect(cache.get('p', 'a')).toBeUndefined();
    cache.committed();
    expect(cache.get('p', 'a')).toEqual(ref('per_a'));
    expect(cache.get('p', 'b')).toBeUndefined();
    // A write that never commits (rolled back) leaves nothing.
    cache.beginWrite(1);
    cache.read('p', 'c', ref('per_c'));
    cache.beginWrite(1);
    cache.committed();
    expect(cache.get('p', 'c')).toBeUndefined();
    expect(cache.get('q', 'a')).toBeUndefined();
  });

  it('serves nothing the write linked or merged away, drops those at COMMIT, and drops all on a new data_version', () => {
    const cache = new PersonLinkCache();
    cache.beginWrite(1);
    // b and c resolve to the same person; d is another project's person of the same id.
    cache.read('p', 'a', ref('per_a'));
    cache.read('p', 'b', ref('per_b'));
    cache.read('p', 'c', ref('per_b'));
    cache.read('q', 'd', ref('per_b'));
    cache.committed();
    cache.beginWrite(1);
    cache.link('p', 'a');
    expect(cache.get('p', 'a')).toBeUndefined();
    expect(cache.get('p', 'b')).toEqual(ref('per_b'));
    cache.merge('p', 'per_b');
    expect([cache.get('p', 'b'), cache.get('p', 'c')]).toEqual([undefined, undefined]);
    expect(cache.get('q', 'd')).toEqual(ref('per_b'));
    // A read that still names the merged person was made before the merge: never taken in.
    cache.read('p', 'e', ref('per_b'));
    // One made after it names the person merged into: taken in.
    cache.read('p', 'f', ref('per_c'));
    cache.committed();
    expect(['a', 'b', 'c', 'e', 'f'].map((id) => cache.get('p', id))).toEqual([undefined, undefined, undefined, undefined, ref('per_c')]);
    expect(cache.get('q', 'd')).toEqual(ref('per_b'));
    cache.beginWrite(2);
    expect(cache.get('p', 'f')).toBeUndefined();
  });

  it('forgets everything after a write that linked or merged but never committed', () => {
    for (const change of [(c: PersonLinkCache) => c.link('p', 'x'), (c: PersonLinkCache) => c.merge('p', 'per_z')]) {
      const cache = new PersonLinkCache();
      cache.beginWrite(1);
      cache.read('p', 'a', ref('per_a'));
      cache.committed();
      cache.beginWrite(1);
      change(cache);
      // No committed(): the COMMIT failed, or the transaction was rolled back under it.
      cache.beginWrite(1);
      expect(cache.get('p', 'a')).toBeUndefined();
    }
    // A write that only read leaves memory as it was.
    const cache = new PersonLinkCache();
    cache.beginWrite(1);
    cache.read('p', 'a', ref('per_a'));
    cache.committed();
    cache.beginWrite(1);
    cache.beginWrite(1);
    expect(cache.get('p', 'a')).toEqual(ref('per_a'));
  });

  it('forgets the oldest links past its limit', () => {
    const cache = new PersonLinkCache(2);
    cache.beginWrite(1);
    for (const id of ['a', 'b', 'c']) cache.read('p', id, ref(`per_${id}`));
    cache.committed();
    expect([cache.get('p', 'a'), cache.get('p', 'b'), cache.get('p', 'c')]).toEqual([undefined, ref('per_b'), ref('per_c')]);
  });

  it('counts its limit over every project, oldest first, and keeps a distinct_id holding the separator whole', () => {
    const cache = new PersonLinkCache(3);
    cache.beginWrite(1);
    cache.read('p', 'a', ref('per_a'));
    cache.read('q', 'x\u0000y', ref('per_q'));
    cache.read('p', 'b', ref('per_b'));
    cache.read('r', 'c', ref('per_c'));
    cache.committed();
    // p's a went first; q's link is found by its whole id only.
    expect([cache.get('p', 'a'), cache.get('q', 'x\u0000y'), cache.get('q', 'x'), cache.get('p', 'b'), cache.get('r', 'c')]).toEqual([
      undefined, ref('per_q'), undefined, ref('per_b'), ref('per_c'),
    ]);
    cache.beginWrite(1);
    cache.link('q', 'x\u0000y');
    expect(cache.get('q', 'x\u0000y')).toBeUndefined();
    cache.committed();
    // p's b and r's c: q, its last link gone, is no longer held either.
    expect(cache.size).toEqual({ links: 2, persons: 2, projects: 2 });
    // Room again up to the limit, for links of a project not seen before.
    cache.beginWrite(1);
    for (const id of ['d', 'e', 'f']) cache.read('s', id, ref(`per_${id}`));
    cache.committed();
    // s's three pushed out p's and r's links, and their projects.
    expect(cache.size).toEqual({ links: 3, persons: 3, projects: 1 });
    expect(['d', 'e', 'f'].map((id) => cache.get('s', id))).toEqual([ref('per_d'), ref('per_e'), ref('per_f')]);
  });

  it('a merge after the limit has pushed some links out drops exactly the merged person\'s remaining ones', () => {
    const cache = new PersonLinkCache(3);
    cache.beginWrite(1);
    for (const [id, person] of [['a', 'per_x'], ['b', 'per_x'], ['c', 'per_y'], ['d', 'per_x']]) cache.read('p', id!, ref(person!));
    cache.committed();
    // a went first; b and d still name per_x.
    cache.beginWrite(1);
    cache.merge('p', 'per_x');
    cache.committed();
    expect(['a', 'b', 'c', 'd'].map((id) => cache.get('p', id))).toEqual([undefined, undefined, ref('per_y'), undefined]);
    // Room again for new links, and per_x can be remembered anew.
    cache.beginWrite(1);
    cache.read('p', 'e', ref('per_x'));
    cache.committed();
    expect([cache.get('p', 'c'), cache.get('p', 'e')]).toEqual([ref('per_y'), ref('per_x')]);
    // Many more links than the limit, each its own person: memory stays bounded.
    cache.beginWrite(1);
    for (let i = 0; i < 100; i++) cache.read('p', `many${i}`, ref(`per_${i}`));
    cache.committed();
    expect(cache.size).toEqual({ links: 3, persons: 3, projects: 1 });
  });
});
