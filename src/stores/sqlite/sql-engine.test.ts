import { describe, expect, it } from 'vitest';
import { sqliteTestDir } from '../../../test/helpers/sqlite.js';
import { SqliteStore } from './sqlite-store.js';

const { open } = sqliteTestDir('inlet-sql-engine-');

describe('admin writes on SQLite through Kysely', () => {
  it('moves the keys’ change mark only once a revocation has committed, never while it is still running', async () => {
    const store = new SqliteStore(open());
    const committed = open();
    try {
      await store.admin.createOrg({ id: 'org_1', name: 'o', createdAt: 1 });
      await store.admin.createProject({ id: 'prj_1', orgId: 'org_1', name: 'p', apiEnabled: true, monthlyEventLimit: null, retentionDays: 30, createdAt: 1 });
      await store.admin.createSource({ id: 'src_1', projectId: 'prj_1', name: 's', filterBots: false, recordIp: false, createdAt: 1 });
      await store.admin.addKey({ id: 'key_1', sourceId: 'src_1', hash: Buffer.alloc(32, 1), lastFour: 'abcd', createdAt: 1, lastUsedAt: null, expiresAt: null, revokedAt: null }, { fits: () => true });
      const before = store.keysChangeMark();
      const revokedOnDisk = () => (committed.prepare('SELECT revoked_at FROM api_keys WHERE id = ?').pluck().get('key_1') as number | null) !== null;

      // A key lookup that reads the mark while the write runs must not be able to cache the old key under the new mark.
      let done = false;
      const revoking = store.admin.revokeKey('key_1', 5).finally(() => (done = true));
      const seen: { moved: boolean; revoked: boolean }[] = [];
      for (let i = 0; i < 100_000 && !done; i++) {
        seen.push({ moved: store.keysChangeMark() !== before, revoked: revokedOnDisk() });
        await Promise.resolve();
      }
      expect(await revoking).toBe(true);
      expect(seen.some((s) => !s.moved)).toBe(true);
      expect(seen.filter((s) => s.moved && !s.revoked)).toEqual([]);
      expect(store.keysChangeMark()).not.toBe(before);
    } finally {
      await store.close();
    }
  });
});
