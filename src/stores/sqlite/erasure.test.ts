import { afterEach, it } from 'vitest';
import { erasureCutShort } from '../../../test/helpers/erasure-cut-short.js';
import { tempDir } from '../../../test/helpers/fixture.js';
import { SqliteStore } from './sqlite-store.js';

const tmp = tempDir('inlet-erasure-');
afterEach(() => tmp.remove());

it('an erasure cut short after its first step is finished by finishErasures once stale, after a restart', async () => {
  await erasureCutShort(
    SqliteStore.open(tmp.dir),
    (store) => {
      const erasure = (store as unknown as { erasure: { deleteEvents: (...a: unknown[]) => number } }).erasure;
      const real = erasure.deleteEvents;
      erasure.deleteEvents = () => {
        throw new Error('the process stopped');
      };
      return () => (erasure.deleteEvents = real);
    },
    async () => SqliteStore.open(tmp.dir),
  );
});
