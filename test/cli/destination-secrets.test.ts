/**
 * `inlet destination rotate-secret` and the s3 kind's flags, in the shapes
 * docs/cli.md gives: the new secret shown once, the previous one's end;
 * an s3 destination made from its flags, the secret access key in no output.
 */
import { afterEach, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { cliJson, provision, runCli } from '../helpers/cli.js';

const PRIVATE = { INLET_DESTINATIONS_ALLOW_PRIVATE: 'true' };
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function setUp() {
  const tmp = tempDir('inlet-cli-destinations-');
  cleanups.push(() => tmp.remove());
  const dd = ['--data-dir', tmp.dir];
  const { project } = await provision({}, tmp.dir);
  return { dd, project };
}

it('rotate-secret answers {id, secret, previous_valid_until} (24 hours on), a new whsec_ secret that list never shows; a postgres or s3 destination has none', async () => {
  const w = await setUp();
  const d = await cliJson(['destination', 'create', '--project', w.project.id, '--kind', 'webhook', '--url', 'http://127.0.0.1:9/in', ...w.dd], PRIVATE);
  expect(d.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  const before = Date.now();
  const r = await cliJson(['destination', 'rotate-secret', d.id, ...w.dd]);
  expect(Object.keys(r)).toEqual(['id', 'secret', 'previous_valid_until']);
  expect(r.id).toBe(d.id);
  expect(r.secret).toMatch(/^whsec_/);
  expect(r.secret).not.toBe(d.secret);
  const until = Date.parse(r.previous_valid_until);
  expect(until - before).toBeGreaterThanOrEqual(24 * 3_600_000);
  expect(until - before).toBeLessThan(24 * 3_600_000 + 60_000);
  const listed = await runCli(['destination', 'list', '--project', w.project.id, '--json', ...w.dd]);
  expect(listed.stdout).not.toContain(r.secret);
  expect(listed.stdout).not.toContain(d.secret);
  expect(JSON.parse(listed.stdout)[0]).toHaveProperty('paused_reason', null);
  const text = await runCli(['destination', 'rotate-secret', d.id, ...w.dd]);
  expect(text.stdout).toMatch(/^signing secret of destination dst_\w+ \(shown only now\): whsec_\S+\nthe previous secret also signs until \d{4}-/);

  const s3 = await cliJson(
    ['destination', 'create', '--project', w.project.id, '--kind', 's3', '--url', 's3://lake/events/', '--endpoint', 'http://127.0.0.1:9',
      '--region', 'eu-west-1', '--access-key-id', 'AKIAEXAMPLE', '--secret-access-key', 'never-printed-key', '--format', 'parquet', '--every', '10m', ...w.dd],
    PRIVATE,
  );
  expect(s3).toEqual({
    id: expect.stringMatching(/^dst_/), project_id: w.project.id, kind: 's3', url: 's3://lake/events', endpoint: 'http://127.0.0.1:9', region: 'eu-west-1',
    access_key_id: 'AKIAEXAMPLE', format: 'parquet', every: '10m', sources: [], events: [], status: 'active',
  });
  const all = await runCli(['destination', 'list', '--project', w.project.id, ...w.dd]);
  expect(all.stdout).toContain('s3://lake/events');
  expect(all.stdout).not.toContain('never-printed-key');
  const refused = await runCli(['destination', 'rotate-secret', s3.id, ...w.dd]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain('An s3 destination has no signing secret to rotate.');
  // A missing key is said by name, and nothing is made.
  const missing = await runCli(['destination', 'create', '--project', w.project.id, '--kind', 's3', '--url', 's3://lake/x', '--access-key-id', 'k', ...w.dd], PRIVATE);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain('An s3 destination needs --access-key-id and --secret-access-key.');
});
