/** Two servers on one PostgreSQL database: what each counted adds up to what both answered. */
import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/stores/postgres/postgres-store.js';
import { STORES, createTestDatabase } from '../conformance/stores.js';
import { TestClock, makeFixture } from '../helpers/fixture.js';
import { Expected, mixedWorkload, storedCounts } from '../helpers/outcomes.js';

describe.runIf(STORES.some((e) => e.name === 'postgres'))('item outcomes across servers', () => {
  it("two servers on PostgreSQL: the counts equal both servers' answers together", async () => {
    const db = await createTestDatabase();
    const clock = new TestClock();
    const a = await makeFixture({ store: await PostgresStore.connect(db.url), clock });
    const b = await makeFixture({ store: await PostgresStore.connect(db.url), clock, sameAs: a });
    try {
      const expected = new Expected();
      // At once, so both servers add to the same minutes' rows together.
      await Promise.all([mixedWorkload(a, expected, 'a'), mixedWorkload(b, expected, 'b')]);
      await Promise.all([a.collector.outcomes.flush(), b.collector.outcomes.flush()]);
      expect(await storedCounts(a, clock.ms)).toEqual(expected.counts);
    } finally {
      await a.close();
      await b.close();
      await db.drop();
    }
  });
});
