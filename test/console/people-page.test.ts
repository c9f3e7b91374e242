import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Fixture } from '../helpers/fixture.js';
import { ingestJob } from '../helpers/items.js';
import { signedInFixture } from './helpers.js';

let f: Fixture;
let alice: { cookie: string; csrf: string };
let get: Awaited<ReturnType<typeof signedInFixture>>['get'];
let keyId: string;

beforeAll(async () => {
  ({ f, session: alice, get } = await signedInFixture());
  keyId = (await f.admin.listKeys(f.sourceId))[0]!.id;
});
afterAll(async () => f?.close());

const job = (items: Parameters<typeof ingestJob>[0]) => ingestJob(items, { projectId: f.projectId, sourceId: f.sourceId, keyId, receivedAt: f.clock.now() });

it('a person\'s latest events are looked for among the newest 20,000 stored: found there, and said plainly (with the command for older ones) when not', async () => {
  const at = f.clock.now() - 60_000;
  await f.collector.ingest(job([
    { distinctId: 'quiet_one', event: 'Signed up', timestamp: at },
    { distinctId: 'quiet_one', event: 'Upgraded', timestamp: at + 1 },
  ]));
  const found = await get(`/console/projects/${f.projectId}/people?q=quiet_one`);
  expect(found.statusCode).toBe(200);
  expect(found.body).toMatch(/<td>Upgraded<\/td>[\s\S]*<td>Signed up<\/td>/);
  for (let b = 0; b < 41; b++) {
    await f.collector.ingest(job(Array.from({ length: 500 }, (_, i) => ({ distinctId: `busy_${i % 100}`, event: 'Viewed', timestamp: at + 10 + b * 500 + i }))));
  }
  const page = await get(`/console/projects/${f.projectId}/people?q=quiet_one`);
  expect(page.statusCode).toBe(200);
  expect(page.body).toContain("None among the project's 20,000 most recent events stored. Older ones: <code>inlet events list --source SOURCE --distinct-id ID</code>.");
});

it('fault: the people list had no total; it says how many people the project has, as many as it lists', async () => {
  const page = await get(`/console/projects/${f.projectId}/people`);
  // quiet_one and busy_0 … busy_99.
  expect(page.body).toContain('<p class="meta" id="people-total">101 people in all</p>');
  // A browser identify merges a server person into a browser one: one person fewer, as the list shows.
  await f.collector.ingest(job([{ anonymousId: `per_${'q'.repeat(22)}`, event: 'Visited', timestamp: f.clock.now() }]));
  await f.admin.browserIdentify(f.projectId, `per_${'q'.repeat(22)}`, 'quiet_one');
  expect((await get(`/console/projects/${f.projectId}/people`)).body).toContain('101 people in all');
});
