import { afterEach, expect, it } from 'vitest';
import { erasureCutShort } from '../../../test/helpers/erasure-cut-short.js';
import { tempDir } from '../../../test/helpers/fixture.js';
import { passQuery, passWrites } from '../../../test/helpers/pass-bundles.js';
import type { IngestTx, PassState } from '../port.js';
import { openSqlite } from './open.js';
import { SqliteStore } from './sqlite-store.js';

const tmp = tempDir('inlet-erasure-');
afterEach(() => tmp.remove());

it('an erasure cut short after its first step is finished by finishErasures once stale, after a restart', async () => {
  await erasureCutShort(
    SqliteStore.open(tmp.dir),
    async () => {
      // Another connection to the same file: the store's own is not reached into.
      const db = openSqlite(tmp.dir);
      db.exec("CREATE TRIGGER test_process_stopped BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'the process stopped'); END");
      return async () => {
        db.exec('DROP TRIGGER test_process_stopped');
        db.close();
      };
    },
    async () => SqliteStore.open(tmp.dir),
  );
});

it('a link remembered by the cache of links is not served once an erasure has removed it', async () => {
  const store = SqliteStore.open(tmp.dir);
  try {
    const scope = { projectId: 'prj_1', sourceId: 'src_1', now: 1 };
    const linkOf = (tx: IngestTx) => tx.read(passQuery('prj_1', 'src_1', { linkedIds: ['bob'] })) as PassState;
    await store.transaction(async (tx) => {
      linkOf(tx);
      tx.write(scope, passWrites({ persons: [{ id: 'per_bob', kind: 'server' }], links: [{ distinctId: 'bob', personId: 'per_bob' }] }));
    });
    // Read in a transaction that commits: the cache remembers it.
    expect((await store.transaction(async (tx) => linkOf(tx))).links.get('bob')?.id).toBe('per_bob');
    await store.erasureTransaction((tx) => tx.removePersons('prj_1', ['per_bob'], ['bob']));
    expect((await store.transaction(async (tx) => linkOf(tx))).links.has('bob')).toBe(false);
  } finally {
    await store.close();
  }
});
