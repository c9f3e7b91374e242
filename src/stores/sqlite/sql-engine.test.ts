import { describe, expect, it } from 'vitest';
import { sqliteTestDir } from '../../../test/helpers/sqlite.js';
import { SqliteStore } from './sqlite-store.js';

const { open } = sqliteTestDir('inlet-sql-engine-');

describe('admin writes on SQLite through Kysely', () => {
  it('serves a key from memory only until a revocation has committed: no lookup made while it runs keeps the old key past its end', async () => {
    const store = new SqliteStore(open());
    try {
      await store.admin.createOrg({ id: 'org_1', name: 'o', createdAt: 1 });
      await store.admin.createProject({ id: 'prj_1', orgId: 'org_1', name: 'p', apiEnabled: true, monthlyEventLimit: null, retentionDays: 30, createdAt: 1 });
      await store.admin.createSource({ id: 'src_1', projectId: 'prj_1', name: 's', filterBots: false, recordIp: false, createdAt: 1 });
      const hash = Buffer.alloc(32, 1);
      await store.admin.addKey({ id: 'key_1', sourceId: 'src_1', hash, lastFour: 'abcd', createdAt: 1, lastUsedAt: null, expiresAt: null, revokedAt: null }, { fits: () => true });
      const revokedAt = async () => (await store.lookUpKeys([hash])).get(hash.toString('hex'))?.revokedAt ?? null;
      expect(await revokedAt()).toBeNull();

      // Lookups made while the write runs read (and may remember) the key as it was.
      let done = false;
      const revoking = store.admin.revokeKey('key_1', 5).finally(() => (done = true));
      const seen: boolean[] = [];
      for (let i = 0; i < 100_000 && !done; i++) {
        seen.push((await revokedAt()) !== null);
        await Promise.resolve();
      }
      expect(await revoking).toBe(true);
      // Some lookup read (and remembered) the key before the revocation reached it.
      expect(seen.some((revoked) => !revoked)).toBe(true);
      expect(await revokedAt()).toBe(5);
    } finally {
      await store.close();
    }
  });
});
