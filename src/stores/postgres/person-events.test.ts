/**
 * What only PostgreSQL does in the fold of events by person: servers sharing
 * a database share the work, a step that finds the project's mark locked by
 * another leaving the project to it. The rest is test/conformance/person-events.test.ts.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/conformance/stores.js';
import { TestClock } from '../../../test/helpers/fixture.js';
import { describeWith } from '../../../test/helpers/needs-services.js';
import { RECEIVED_AT, ingestJob } from '../../../test/helpers/items.js';
import { createAdmin } from '../../domain/admin.js';
import { Collector } from '../../domain/collector.js';
import { PostgresStore } from './postgres-store.js';

describeWith(['postgres'], 'postgres: the fold of events by person', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let collector: Collector;

  beforeAll(async () => {
    db = await createTestDatabase();
    collector = new Collector(await PostgresStore.connect(db.url));
  });
  afterAll(async () => {
    await collector?.close();
    await db?.drop();
  });

  it('a step that finds the mark locked by another server folds nothing and says the project is not its to fold; once free, it folds', async () => {
    const admin = createAdmin(collector.store, new TestClock(RECEIVED_AT).now);
    const org = await admin.createOrg('Shared');
    const projectId = (await admin.createProject({ name: 'shared', orgId: org.id })).id;
    const sourceId = (await admin.createSource({ projectId, name: 's' })).id;
    const keyId = (await admin.createKey(sourceId)).id;
    await collector.ingest(ingestJob([{ distinctId: 'a' }, { distinctId: 'b' }], { projectId, sourceId, keyId }));
    expect((await collector.store.foldPersonEvents(projectId, 1)).folded).toBe(1);

    // Another server's step, under way: it holds the mark's row.
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT through FROM person_events_folded WHERE project_id = $1 FOR UPDATE', [projectId]);
      expect(await collector.store.foldPersonEvents(projectId, 100)).toMatchObject({ folded: 0, more: false });
      await other.query('COMMIT');
    } finally {
      await other.end();
    }
    expect(await collector.store.foldPersonEvents(projectId, 100)).toMatchObject({ folded: 1, more: false });
  });
});
