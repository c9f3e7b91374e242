/**
 * The console in a real browser: Debian's chromium driven by playwright-core
 * (never a downloaded browser). Screenshots of every page, at 375 px and at
 * desktop width, go to test-results/console/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, NO_CHROMIUM, SHOTS, openBrowser } from '../helpers/chromium.js';
import { type Fixture, makeFixture } from '../helpers/fixture.js';
import { PASSWORD, makeUser } from '../console/helpers.js';

if (NO_CHROMIUM) console.warn(`console browser test skipped: ${CHROMIUM} is missing (apt-get install chromium)`);

describe.skipIf(NO_CHROMIUM)('the console in chromium', () => {
  let f: Fixture;
  let browser: Browser;
  let page: Page;
  let base: string;
  // Script errors and CSP violations; the test ends by finding none.
  let problems: string[] = [];

  beforeAll(async () => {
    f = await makeFixture();
    await makeUser(f.collector, f.clock.now, 'dev@acme.test', { orgIds: [f.orgId] });
    ({ browser, page, base, problems } = await openBrowser(f));
  });
  afterAll(async () => {
    await browser?.close();
    await f?.close();
  });

  /** A full-page screenshot at 375 px and at 1280 px. */
  async function shot(name: string): Promise<void> {
    await page.screenshot({ path: `${SHOTS}/${name}-375.png`, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: `${SHOTS}/${name}-1280.png`, fullPage: true });
    await page.setViewportSize({ width: 375, height: 800 });
    // Nothing may be wider than a phone's screen.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
  }

  it('signs in, makes a project, a source and a key, shows events live, usage and people, and signs out', async () => {
    await page.goto(`${base}/console`);
    await expect.poll(() => page.url()).toBe(`${base}/console/login`);
    await shot('login');

    await page.getByLabel('Email').fill('dev@acme.test');
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Wrong email or password.').waitFor();
    await shot('login-failed');

    await page.getByLabel('Email').fill('dev@acme.test');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await page.getByRole('link', { name: 'Web' }).waitFor();
    await shot('projects');

    await page.getByRole('button', { name: 'New project' }).click();
    await page.getByLabel('Name').fill('Checkout');
    await page.getByLabel('Batch API enabled').check();
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Checkout' }).waitFor();

    await page.getByRole('button', { name: 'New source' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Orders');
    expect(await page.getByLabel('Filter bots').isChecked()).toBe(true);
    expect(await page.getByLabel('Record IP addresses').isChecked()).toBe(false);
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Orders' }).waitFor();

    await page.getByRole('button', { name: 'Create key' }).click();
    const field = page.getByLabel('New key');
    await expect.poll(() => field.inputValue()).toMatch(/^srv_live_[0-9A-Za-z]{32}$/);
    const key = await field.inputValue();
    expect(await field.getAttribute('readonly')).not.toBeNull();
    await page.getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await page.getByRole('button', { name: 'Roll' }).waitFor();
    await page.getByLabel('Grace period').waitFor();
    await page.getByRole('button', { name: 'Revoke' }).waitFor();
    await shot('source-new-key');

    await page.reload();
    await page.getByRole('heading', { name: 'Orders' }).waitFor();
    expect(await page.content()).not.toContain(key);
    expect(await page.getByLabel('New key').isVisible()).toBe(false);
    await page.getByText(`srv_live_…${key.slice(-4)}`).waitFor();

    // The live view: a batch sent with the new key shows up without a reload.
    await page.locator('#live-status', { hasText: 'Listening' }).waitFor();
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    const res = await fetch(`${base}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items: [{ event: 'Order placed', distinct_id: 'cust_7' }, { event: '$pageview', distinct_id: 'cust_7' }] }),
    });
    expect(res.status).toBe(202);
    const refused = page.locator('#live li.refused', { hasText: 'reserved_event_name' });
    await refused.waitFor();
    expect(await refused.textContent()).toMatch(/reserved_event_name in event/);
    await page.locator('#live li.accepted', { hasText: 'Order placed' }).waitFor();
    // Newest first: the refused item (index 1) above the accepted one (index 0).
    expect(await page.locator('#live li').first().textContent()).toContain('#1 of 2 in req_');
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await shot('source-live');

    // Item outcomes: read from the counts, which a server writes within a second (flushed here rather than waited for).
    await f.collector.outcomes.flush();
    await page.reload();
    await page.getByRole('heading', { name: 'Item outcomes' }).waitFor();
    const row = (code: string) => page.locator('#outcome-codes tr', { has: page.locator(`td[data-label="Code"] code`, { hasText: new RegExp(`^${code}$`) }) });
    await expect.poll(() => row('reserved_event_name').locator('td[data-label="Items"]').textContent()).toBe('1');
    expect(await row('missing_event_name').count()).toBe(0);
    const more = await fetch(`${base}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items: [{ event: '$other', distinct_id: 'cust_8' }, { distinct_id: 'cust_8' }] }),
    });
    expect(more.status).toBe(400);
    await f.collector.outcomes.flush();
    await page.reload();
    await expect.poll(() => row('reserved_event_name').locator('td[data-label="Items"]').textContent()).toBe('2');
    await row('missing_event_name').waitFor();
    // The latest kept item of a code, expanded: the item as sent and its error.
    await row('reserved_event_name').locator('summary').click();
    await row('reserved_event_name').locator('pre.item', { hasText: '"$other"' }).waitFor();
    await shot('source-outcomes');
    await page.goto(`${base}/console/projects`);
    await page.getByText('75% of items refused in the last 24 h').waitFor();
    await page.goBack();

    // Revoke asks first, on a page of its own.
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('heading', { name: /Revoke key/ }).waitFor();
    await shot('revoke');
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('cell', { name: 'revoked' }).waitFor();
    const refusedNow = await fetch(`${base}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items: [{ event: 'Order placed', distinct_id: 'cust_7' }] }),
    });
    expect(refusedNow.status).toBe(401);

    await page.getByRole('link', { name: 'Checkout' }).click();
    await page.getByRole('img', { name: 'Items accepted per day, last 30 days' }).waitFor();
    await page.getByText(/events? this month/).waitFor();
    await page.getByLabel('API enabled', { exact: true }).waitFor();
    await page.getByLabel('Monthly event limit').fill('1000');
    await page.getByLabel('Retention days').fill('30');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Settings saved.').waitFor();
    await shot('project');

    await page.getByRole('link', { name: 'People' }).click();
    await page.getByLabel('Distinct id').fill('cust_7');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('heading', { name: /Person per_/ }).waitFor();
    await page.getByRole('cell', { name: 'Order placed' }).waitFor();
    await shot('people');

    // Keyboard: the sign-out button is reachable with Tab.
    await page.keyboard.press('Tab');
    let focused = '';
    for (let i = 0; i < 10 && focused !== 'Sign out'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement?.textContent ?? '');
    }
    expect(focused).toBe('Sign out');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.goto(`${base}/console/projects`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(problems).toEqual([]);
  });

  it('groups, destinations (filters, replay, delete), counts labelled, and outcome counts that refresh while the page is open', async () => {
    await page.goto(`${base}/console/login`);
    await page.getByLabel('Email').fill('dev@acme.test');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();

    // Item outcomes move without a reload.
    await page.goto(`${base}/console/sources/${f.sourceId}`);
    await page.getByRole('heading', { name: 'Item outcomes' }).waitFor();
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    const sent = await fetch(`${base}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${f.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items: [
        { event: 'Order placed', distinct_id: 'cust_9' },
        { event: '$refused', distinct_id: 'cust_9' },
        { type: 'group', group_type: 'company', group_key: 'acme', distinct_id: 'cust_9', properties: { plan: 'team' } },
      ] }),
    });
    expect(sent.status).toBe(202);
    await f.collector.outcomes.flush();
    await page.locator('#outcome-totals', { hasText: '2 accepted' }).waitFor();
    await page.locator('#outcome-codes td[data-label="Code"]', { hasText: 'reserved_event_name' }).waitFor();
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await shot('source-outcomes-refreshed');

    // Events and items, each said.
    await page.goto(`${base}/console/projects/${f.projectId}`);
    await page.getByText(/1 event this month/).waitFor();
    await page.getByText(/Items accepted per day \(by arrival, UTC\), last 30 days: 2 items in all/).waitFor();

    // A destination with a source and an event picked, replayed, then deleted.
    await page.getByRole('button', { name: 'New destination' }).click();
    await page.getByLabel('URL').fill('https://hooks.example.com/in');
    await page.getByLabel('Billing').check();
    await page.getByLabel('Events', { exact: true }).fill('Order placed');
    await page.locator('#new-destination').getByRole('button', { name: 'Create' }).click();
    await page.getByText(/Its signing secret, shown only now: whsec_/).waitFor();
    await page.getByText('Takes the track events of sources Billing; events Order placed.').waitFor();
    await page.getByLabel('Replay from').fill('2000-01-01 00:00');
    await page.getByRole('button', { name: 'Replay' }).click();
    await page.getByText(/delivers again the events that arrived from 2000-01-01 00:00:00 UTC on/).waitFor();
    await shot('destination-replayed');
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: /Delete destination dst_/ }).waitFor();
    await shot('destination-delete');
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('Destination deleted.').waitFor();
    expect(await f.collector.store.destinations.list(f.projectId)).toEqual([]);

    // Groups: types, keys, traits, members, search.
    await page.getByRole('link', { name: 'Groups' }).click();
    await page.getByRole('heading', { name: 'Groups', exact: true }).waitFor();
    await page.getByRole('cell', { name: '1 member' }).waitFor();
    await page.getByLabel('Group key').fill('zz');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No group has a key starting with "zz".').waitFor();
    await page.getByLabel('Group key').fill('ac');
    await page.getByLabel('Group type', { exact: true }).selectOption('company');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('cell', { name: 'acme', exact: true }).waitFor();
    await shot('groups');

    // People: the total.
    await page.goto(`${base}/console/projects/${f.projectId}/people`);
    await page.getByText(/\d+ (people|person) in all/).waitFor();
    expect(problems).toEqual([]);
  });

  it('New destination offers each kind\'s fields (s3: endpoint, keys, format, every), never shows the secret key, and a destination paused by a 410 says so', async () => {
    await page.goto(`${base}/console/login`);
    if ((await page.getByLabel('Email').count()) > 0) {
      await page.getByLabel('Email').fill('dev@acme.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Projects' }).waitFor();
    }
    await page.goto(`${base}/console/projects/${f.projectId}`);
    await page.getByRole('button', { name: 'New destination' }).click();
    await page.getByLabel('Kind').selectOption('s3');
    await page.getByLabel('URL').fill('s3://analytics/inlet');
    await page.getByLabel('Endpoint').fill('https://minio.example.com:9000');
    await page.getByLabel('Region').fill('eu-west-1');
    await page.getByLabel('Access key ID').fill('AKIAEXAMPLE');
    await page.getByLabel('Secret access key').fill('never-shown-again');
    await page.getByLabel('Format').selectOption('parquet');
    await page.getByLabel('Every').fill('10m');
    await page.locator('#new-destination').getByRole('button', { name: 'Create' }).click();
    await page.locator('li', { hasText: 's3://analytics/inlet' }).getByText(/active/).waitFor();
    expect(await page.content()).not.toContain('never-shown-again');
    const [made] = await f.collector.store.destinations.list(f.projectId);
    expect(made).toMatchObject({ kind: 's3', config: { url: 's3://analytics/inlet', endpoint: 'https://minio.example.com:9000', region: 'eu-west-1', format: 'parquet', every: '10m' } });
    await shot('destination-s3');

    await f.collector.store.destinations.setPaused(made!.id, true, 'The receiver answered 410 (Gone): delivery is paused; resume the destination once the receiver takes events again.');
    await page.reload();
    await page.getByText(/Paused by its receiver: The receiver answered 410 \(Gone\)/).waitFor();
    await page.locator(`[id="${made!.id}"]`).getByRole('button', { name: 'Resume' }).waitFor();
    await shot('destination-paused-410');
    await f.collector.store.destinations.delete(made!.id);
    expect(problems).toEqual([]);
  });

  it('answers an unknown path with its own page, keeps what was typed beside the error, and asks before Roll', async () => {
    await page.goto(`${base}/console/login`);
    await page.getByLabel('Email').fill('dev@acme.test');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();

    // Not found: the console's page, with its header, not the API's JSON.
    const missing = await page.goto(`${base}/console/projects/prj_nothing/here`);
    expect(missing?.status()).toBe(404);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.getByRole('link', { name: 'API reference' }).waitFor();
    await shot('not-found');

    // A refused form comes back with the message beside its field and what was typed.
    await page.goto(`${base}/console/projects/${f.projectId}`);
    await page.getByRole('button', { name: 'New source' }).click();
    await page.getByLabel('Name', { exact: true }).fill('   ');
    await page.getByLabel('Record IP addresses').check();
    await page.getByRole('button', { name: 'Create' }).click();
    const name = page.getByLabel('Name', { exact: true });
    await expect.poll(() => name.getAttribute('aria-invalid')).toBe('true');
    expect(await name.isVisible()).toBe(true);
    expect(await name.inputValue()).toBe('   ');
    expect(await page.getByLabel('Record IP addresses').isChecked()).toBe(true);
    const describedBy = (await name.getAttribute('aria-describedby'))!;
    expect(await page.locator(`#${describedBy}`).textContent()).toMatch(/^Name must be 1 to 200 characters/);
    // Beside the field: right under it, not at the top of the page.
    const [fieldBox, errorBox] = [await name.boundingBox(), await page.locator(`#${describedBy}`).boundingBox()];
    expect(errorBox!.y - (fieldBox!.y + fieldBox!.height)).toBeLessThan(40);
    await page.getByLabel('Retention days').fill('99999');
    await page.getByLabel('Monthly event limit').fill('2,500,000');
    await page.getByRole('button', { name: 'Save' }).click();
    const retention = page.getByLabel('Retention days');
    await expect.poll(() => retention.getAttribute('aria-invalid')).toBe('true');
    expect(await retention.inputValue()).toBe('99999');
    expect(await page.getByLabel('Monthly event limit').inputValue()).toBe('2,500,000');
    await page.getByText('Retention days must be a whole number of days from 1 to 3,650, not 99999.').waitFor();
    await shot('form-error');
    await retention.fill('30');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Settings saved.').waitFor();
    await page.getByText('a plan limit of 2,500,000.').waitFor();

    // Roll asks first, with the grace period chosen; the new key is shown once.
    await page.goto(`${base}/console/sources/${f.sourceId}`);
    await page.getByLabel('Grace period').selectOption('24h');
    await page.getByRole('button', { name: 'Roll' }).click();
    await page.getByRole('heading', { name: /Roll key srv_live_…/ }).waitFor();
    expect(await page.getByLabel('Grace period').inputValue()).toBe('24h');
    expect((await f.admin.listKeys(f.sourceId)).map((k) => k.status)).toEqual(['active']);
    await shot('roll');
    await page.getByRole('button', { name: 'Roll' }).click();
    const fresh = page.getByLabel('New key');
    await expect.poll(() => fresh.inputValue()).toMatch(/^srv_live_[0-9A-Za-z]{32}$/);
    expect((await f.admin.listKeys(f.sourceId)).map((k) => k.status).sort()).toEqual(['active', 'expiring']);
    await page.getByRole('cell', { name: /expiring/ }).waitFor();

    // The reference, linked from every page: its filter narrows the codes as one types.
    await page.getByRole('link', { name: 'API reference' }).click();
    await page.getByRole('heading', { name: 'Inlet batch API' }).waitFor();
    await page.getByRole('link', { name: 'invalid_key' }).first().waitFor();
    await page.getByLabel('Filter the page').fill('invalid_key');
    await expect.poll(() => page.locator('section#missing_key').isVisible()).toBe(false);
    expect(await page.locator('section#invalid_key').isVisible()).toBe(true);
    await page.getByText(/codes hold “invalid_key”/).waitFor();
    await page.screenshot({ path: `${SHOTS}/reference-filtered-375.png`, fullPage: true });
    await page.getByLabel('Filter the page').fill('');
    await expect.poll(() => page.locator('section#missing_key').isVisible()).toBe(true);
    expect(problems).toEqual([]);
  });
});
