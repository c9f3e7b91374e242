/**
 * The console in a real browser: Debian's chromium driven by playwright-core (never a
 * downloaded browser), over a fixture's app listening on loopback.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { type Browser, type Page, chromium } from 'playwright-core';
import type { Fixture } from './fixture.js';

export const CHROMIUM = '/usr/bin/chromium';
/** Where the screenshots go. */
export const SHOTS = 'test-results/console';
/** Outside CI a machine without chromium skips the browser tests; in CI they must run. */
export const NO_CHROMIUM = !existsSync(CHROMIUM) && !process.env.CI;

/** The fixture's app on a loopback port, and a 375 px wide page of chromium; script errors and CSP violations are collected in `problems`. */
export async function openBrowser(f: Fixture): Promise<{ browser: Browser; page: Page; base: string; problems: string[] }> {
  mkdirSync(SHOTS, { recursive: true });
  await f.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(f.app.server.address() as { port: number }).port}`;
  f.app.inletBaseUrl = base;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  const context = await browser.newContext({ viewport: { width: 375, height: 800 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => {
    // A 401 or 429 page is an answer the test asked for, not a fault.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
  });
  return { browser, page, base, problems };
}
