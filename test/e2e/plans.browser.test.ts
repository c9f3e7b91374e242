/**
 * Tracking plans in the console, in Debian's chromium (playwright-core): the project's plans,
 * a plan's rules, versions and diff; a source's plan and mode changed by an admin, seen by the
 * next request; and its Plan violations by event and code with the newest kept item.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planAdmin } from '../../src/domain/plans/plan-admin.js';
import { NO_CHROMIUM, SHOTS, openBrowser } from '../helpers/chromium.js';
import { type Fixture, makeFixture, send } from '../helpers/fixture.js';
import { PASSWORD, makeUser } from '../console/helpers.js';

const V1 = { rules: [{ type: 'track', event: 'order_completed', json_schema: { type: 'object', required: ['amount'], properties: { amount: { type: 'number' } } } }] };
const V2 = { rules: [...V1.rules, { type: 'track', event: 'signed_up', json_schema: { type: 'object' } }] };

describe.skipIf(NO_CHROMIUM)('tracking plans in the console, in chromium', () => {
  let f: Fixture;
  let browser: Browser;
  let page: Page;
  let base: string;
  let planId: string;
  let problems: string[] = [];

  beforeAll(async () => {
    f = await makeFixture();
    await makeUser(f.collector, f.clock.now, 'admin@acme.test', { admin: true });
    const plans = planAdmin(f.collector.store, f.clock.now);
    planId = (await plans.create(f.projectId, 'checkout <main>')).id;
    await plans.push(planId, V1);
    await plans.push(planId, V2);
    ({ browser, page, base, problems } = await openBrowser(f));
  });
  afterAll(async () => {
    await browser?.close();
    await f?.close();
  });

  it("shows a project's plans, a plan's rules and the diff of two versions; an admin sets a source's plan and mode, and its violations show by event and code", async () => {
    await page.goto(`${base}/console/login`);
    await page.getByLabel('Email').fill('admin@acme.test');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();

    await page.goto(`${base}/console/projects/${f.projectId}`);
    await page.getByRole('heading', { name: 'Tracking plans' }).waitFor();
    await page.getByRole('link', { name: 'checkout <main>' }).click();
    await page.getByRole('heading', { name: 'checkout <main>' }).waitFor();
    expect(await page.locator('table.rules tbody tr').count()).toBe(2);
    await page.getByLabel('From version').selectOption('1');
    await page.getByLabel('To version').selectOption('2');
    await page.getByRole('button', { name: 'Compare' }).click();
    await expect.poll(() => page.locator('#plan-diff').textContent()).toContain('Added: track:signed_up');
    await page.screenshot({ path: `${SHOTS}/plan-375.png`, fullPage: true });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);

    await page.goto(`${base}/console/sources/${f.sourceId}`);
    await page.getByRole('heading', { name: 'Tracking plan', exact: true }).waitFor();
    expect(await page.locator('#plan-setting').textContent()).toContain('mode off');
    await page.getByLabel('Plan', { exact: true }).selectOption(`${planId}@1`);
    await page.getByLabel('Mode').selectOption('observe');
    await page.getByLabel('Unplanned events').selectOption('refuse');
    await page.getByRole('button', { name: 'Save plan' }).click();
    await expect.poll(() => page.locator('#plan-setting').textContent()).toContain('mode observe');
    expect(await page.locator('#plan-setting').textContent()).toContain('version 1');

    // Seen by the next request: observe keeps every item and warns.
    const items = Array.from({ length: 2400 }, (_, i) => ({ event: i % 2 === 0 ? 'order_completed' : 'signed_up', distinct_id: `u_${i}`, properties: i % 2 === 0 ? { amount: 'lots' } : {} }));
    for (let i = 0; i < items.length; i += 480) {
      const r = (await send(f, { items: items.slice(i, i + 480) })).json();
      expect(r.accepted).toBe(480);
      expect(r.warnings).toHaveLength(480);
    }
    await f.collector.outcomes.flush();
    await page.reload();
    await page.getByRole('heading', { name: 'Plan violations' }).waitFor();
    const totals = await page.locator('#violation-totals').textContent();
    // Numbers with thousands separators.
    expect(totals).toContain('1,200 warned plan_violation');
    expect(totals).toContain('1,200 warned unplanned_event');
    const rows = await page.locator('table.violations tbody tr').allTextContents();
    // Counted by event from every item (1,200 each), not only from the 100 kept of each code.
    expect(rows.some((r) => r.includes('order_completed') && r.includes('plan_violation') && r.includes('1,200'))).toBe(true);
    expect(rows.some((r) => r.includes('signed_up') && r.includes('unplanned_event') && r.includes('1,200'))).toBe(true);
    // Item outcomes names the events under each of the plan's codes too.
    expect(await page.locator('#outcome-codes tr[data-code="plan_violation"] .code-events').textContent()).toContain('order_completed 1,200');
    await page.locator('table.violations details summary').first().click();
    await expect.poll(() => page.locator('table.violations details pre').first().textContent()).toContain('"event"');
    await page.screenshot({ path: `${SHOTS}/source-plan-375.png`, fullPage: true });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);

    // No plan: the source checks none, its mode back to off.
    await page.getByLabel('Plan', { exact: true }).selectOption('');
    await page.getByRole('button', { name: 'Save plan' }).click();
    await expect.poll(() => page.locator('#plan-setting').textContent()).toContain('mode off');
    expect(problems).toEqual([]);
  });
});
