import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { Collector } from '../../src/domain/collector.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/fixture.js';
import { RECEIVED_AT, ingestJob } from '../helpers/items.js';
import { cliJson, runCli } from '../helpers/cli.js';

const tmp = tempDir('inlet-cli-groups-');
const env = { INLET_DATA_DIR: tmp.dir };
let projectId: string;
let personId: string;

beforeAll(async () => {
  const collector = new Collector(SqliteStore.open(tmp.dir));
  const admin = createAdmin(collector.store, () => RECEIVED_AT);
  const org = await admin.createOrg('Acme');
  projectId = (await admin.createProject({ name: 'p', orgId: org.id, apiEnabled: true })).id;
  const sourceId = (await admin.createSource({ projectId, name: 'a' })).id;
  const [o] = await collector.ingest(
    ingestJob(
      [
        { type: 'group', groupType: 'company', groupKey: 'acme', distinctId: 'gus', properties: { seats: 40 } },
        { type: 'group', groupType: 'company', groupKey: 'beta', properties: { seats: 2 } },
        { type: 'group', groupType: 'team', groupKey: 'blue', distinctId: 'gus' },
      ],
      { projectId, sourceId, keyId: (await admin.createKey(sourceId)).id },
    ),
  );
  personId = (o as { personId: string }).personId;
  await collector.close();
});
afterAll(() => tmp.remove());

it('group show, group list and person show print the documented shapes', async () => {
  expect(await cliJson(['group', 'show', '--project', projectId, '--type', 'company', '--key', 'acme'], env)).toEqual({
    group_type: 'company', group_key: 'acme', traits: { seats: 40 }, created_at: new Date(RECEIVED_AT).toISOString(), members: [personId],
  });
  expect(await cliJson(['group', 'list', '--project', projectId, '--type', 'company', '--limit', '10'], env)).toEqual([
    { group_type: 'company', group_key: 'acme', traits: { seats: 40 }, created_at: new Date(RECEIVED_AT).toISOString() },
    { group_type: 'company', group_key: 'beta', traits: { seats: 2 }, created_at: new Date(RECEIVED_AT).toISOString() },
  ]);
  expect((await cliJson(['group', 'list', '--project', projectId], env)).map((g: { group_key: string }) => g.group_key)).toEqual(['acme', 'beta', 'blue']);
  expect(await cliJson(['person', 'show', '--project', projectId, '--distinct-id', 'gus'], env)).toMatchObject({
    id: personId, groups: [{ group_type: 'company', group_key: 'acme' }, { group_type: 'team', group_key: 'blue' }],
  });
  const human = await runCli(['group', 'show', '--project', projectId, '--type', 'company', '--key', 'nope'], env);
  expect(human.code).toBe(1);
  expect(human.stderr).toContain(`No group company "nope" in project ${projectId}.`);
});
