import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Fixture } from '../helpers/fixture.js';
import { ingestJob } from '../helpers/items.js';
import { foldPass } from '../../src/domain/people/person-events-fold.js';
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

it('fault: a person with 2 stored events still shows them after 25,000 newer events of others, found by person, folded in or not', async () => {
  const at = f.clock.now() - 60_000;
  await f.collector.ingest(job([
    { distinctId: 'quiet_one', event: 'Signed up', timestamp: at },
    { distinctId: 'quiet_one', event: 'Upgraded', timestamp: at + 1 },
  ]));
  const found = await get(`/console/projects/${f.projectId}/people?q=quiet_one`);
  expect(found.statusCode).toBe(200);
  expect(found.body).toMatch(/<td>Upgraded<\/td>[\s\S]*<td>Signed up<\/td>/);
  for (let b = 0; b < 50; b++) {
    await f.collector.ingest(job(Array.from({ length: 500 }, (_, i) => ({ distinctId: `busy_${i % 100}`, event: 'Viewed', timestamp: at + 10 + b * 500 + i }))));
  }
  // Not folded yet: read past the mark, from the events table.
  const unfolded = await get(`/console/projects/${f.projectId}/people?q=quiet_one`);
  expect(unfolded.statusCode).toBe(200);
  expect(unfolded.body).toMatch(/<td>Upgraded<\/td>[\s\S]*<td>Signed up<\/td>/);
  expect(unfolded.body).not.toContain('person-events-partial');
  // Folded in, as a server does off the request path: found by person.
  while (!(await foldPass(f.collector.store)).caughtUp);
  const page = await get(`/console/projects/${f.projectId}/people?q=quiet_one`);
  expect(page.statusCode).toBe(200);
  expect(page.body).toMatch(/<h3>Latest events<\/h3>\s*<div class="scroll"><table>[\s\S]*<td>Upgraded<\/td>[\s\S]*<td>Signed up<\/td>[\s\S]*<\/table>/);
  expect(page.body).not.toContain('None');
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
