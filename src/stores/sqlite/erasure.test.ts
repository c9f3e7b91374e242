import { afterEach, it } from 'vitest';
import { erasureCutShort } from '../../../test/helpers/erasure-cut-short.js';
import { tempDir } from '../../../test/helpers/fixture.js';
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
