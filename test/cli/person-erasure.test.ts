import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { Collector } from '../../src/domain/collector.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/fixture.js';
import { RECEIVED_AT, ingestJob } from '../helpers/items.js';
import { cliJson, runCli } from '../helpers/cli.js';

const tmp = tempDir('inlet-cli-erasure-');
const env = { INLET_DATA_DIR: tmp.dir };
let projectId: string;
let personId: string;

beforeAll(async () => {
  const collector = new Collector(SqliteStore.open(tmp.dir));
  const admin = createAdmin(collector.store, () => RECEIVED_AT);
  const org = await admin.createOrg('Acme');
  projectId = (await admin.createProject({ name: 'p', orgId: org.id, apiEnabled: true })).id;
  const sourceId = (await admin.createSource({ projectId, name: 'a' })).id;
  const [o] = await collector.ingest(ingestJob([{ event: 'e', distinctId: 'gina' }, { event: 'e', distinctId: 'gina' }, { event: 'e', distinctId: 'hal' }, { event: 'e', distinctId: 'ivy' }], { projectId, sourceId, keyId: (await admin.createKey(sourceId)).id }));
  personId = (o as { personId: string }).personId;
  await collector.close();
});
afterAll(() => tmp.remove());

it('person delete prints what it removed; --suppress and unsuppress print the documented shapes', async () => {
  expect(await cliJson(['person', 'delete', '--project', projectId, '--distinct-id', 'gina', '--suppress'], env)).toEqual({
    person_id: personId, distinct_ids: ['gina'], events_deleted: 2, suppressed: true,
  });
  expect(await cliJson(['person', 'unsuppress', '--project', projectId, '--distinct-id', 'gina'], env)).toEqual({ distinct_id: 'gina', suppressed: false });
  const human = await runCli(['person', 'delete', '--project', projectId, '--distinct-id', 'hal'], env);
  expect(human.code, human.stderr).toBe(0);
  expect(human.stdout).toMatch(/^erased person per_\S+ \(distinct ids: hal\): 1 event deleted\n$/);
});

it('person delete refuses an unknown person, and a lookup that is not exactly one of the two', async () => {
  const unknown = await runCli(['person', 'delete', '--project', projectId, '--distinct-id', 'nobody'], env);
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toMatch(/No person with distinct_id "nobody".*nothing was deleted/);
  const both = await runCli(['person', 'delete', '--project', projectId, '--distinct-id', 'x', '--person-id', 'per_x'], env);
  expect(both.code).toBe(1);
  expect(both.stderr).toMatch(/exactly one of --distinct-id and --person-id/);
});

it("browser identify refuses an erased person's id while it is suppressed; person unsuppress --person-id lifts it", async () => {
  const erased = await cliJson(['person', 'delete', '--project', projectId, '--distinct-id', 'ivy', '--suppress'], env);
  const refused = await runCli(['browser', 'identify', '--project', projectId, '--anonymous-id', erased.person_id, '--distinct-id', 'ivy2'], env);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(`${erased.person_id} belongs to a person erased with suppression`);
  expect(refused.stderr).toContain(`inlet person unsuppress --project ${projectId} --person-id ${erased.person_id}`);
  const both = await runCli(['person', 'unsuppress', '--project', projectId, '--distinct-id', 'ivy', '--person-id', erased.person_id], env);
  expect(both.code).toBe(1);
  expect(both.stderr).toMatch(/exactly one of --distinct-id and --person-id/);
  expect(await cliJson(['person', 'unsuppress', '--project', projectId, '--person-id', erased.person_id], env)).toEqual({ person_id: erased.person_id, suppressed: false });
  const linked = await cliJson(['browser', 'identify', '--project', projectId, '--anonymous-id', erased.person_id, '--distinct-id', 'ivy2'], env);
  expect(linked).toMatchObject({ id: erased.person_id, distinct_ids: ['ivy2'] });
  // ivy itself stays suppressed: lifting the person id lifts no distinct_id.
  const ivy = await runCli(['browser', 'identify', '--project', projectId, '--anonymous-id', 'per_ivynew', '--distinct-id', 'ivy'], env);
  expect(ivy.code).toBe(1);
  expect(ivy.stderr).toContain('--distinct-id ivy');
});
