import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers/fixture.js';
import { SqliteStore } from '../stores/sqlite/sqlite-store.js';
import { AdminError, createAdmin } from './admin.js';

let tmp: ReturnType<typeof tempDir>;
let store: SqliteStore;
let admin: ReturnType<typeof createAdmin>;
beforeEach(() => {
  tmp = tempDir();
  store = SqliteStore.open(tmp.dir);
  admin = createAdmin(store, Date.now);
});
afterEach(async () => {
  await store.close();
  tmp.remove();
});

describe('what the admin operations store', () => {
  it('fault 13: a monthly event limit that is not a whole number from 0 to a trillion is refused, whoever asks', async () => {
    const p = await admin.createProject({ name: 'P' });
    for (const n of [2 ** 60, 1e12 + 1, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(admin.updateProject(p.id, { monthlyEventLimit: n }), String(n)).rejects.toThrow(
        new AdminError('The monthly event limit must be a whole number from 0 to 1,000,000,000,000, or none.', 'monthlyEventLimit'),
      );
    }
    expect((await admin.getProject(p.id)).monthlyEventLimit).toBeNull();
    expect((await admin.updateProject(p.id, { monthlyEventLimit: 1e12 })).monthlyEventLimit).toBe(1e12);
  });

  it('a name no engine can store (U+0000, a lone surrogate) is refused like an empty one', async () => {
    for (const name of ['a\u0000b', 'x\ud800', '', 'é'.repeat(201)]) {
      await expect(admin.createOrg(name), JSON.stringify(name)).rejects.toThrow(AdminError);
    }
    expect((await admin.createOrg('😀'.repeat(200))).name).toBe('😀'.repeat(200));
  });
});
