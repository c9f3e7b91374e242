import { expect, it } from 'vitest';
import { dayChart, lastDays } from '../../src/console/chart.js';
import { projectPage } from '../../src/console/views/projects.js';
import { DESTINATION_KINDS } from '../../src/destinations/registry.js';
import type { Viewer } from '../../src/domain/accounts/accounts.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const days = lastDays(NOW, 30);

it('the project chart with no items says so, instead of an axis reading "1" over nothing', () => {
  const chart = dayChart(days, [], 'prj_1').value;
  expect(chart).toContain('No items accepted in the last 30 days (2026-10-24 to 2026-11-22, by arrival).');
  expect(chart).not.toContain('<svg');
  expect(chart).not.toContain('<rect');
});

it('the project chart writes its axis and counts with thousands separators', () => {
  const chart = dayChart(days, [{ day: '2026-11-20', events: 20_000 }, { day: '2026-11-21', events: 1 }], 'prj_1').value;
  expect(chart).toContain('<text class="label" x="0" y="12">20,000</text>');
  expect(chart).toContain('<title>2026-11-20: 20,000 items</title>');
  expect(chart).toContain('<title>2026-11-21: 1 item</title>');
  expect(chart).toContain('20,001 items in all');
  expect((chart.match(/<rect class="bar"/g) ?? []).length).toBe(30);
});

it('the project page of a project without a monthly limit says "no plan limit", not "of no plan limit"', () => {
  const viewer: Viewer = {
    user: { id: 'usr_1', email: 'a@b.test', passwordHash: '', admin: true, disabled: false, createdAt: NOW },
    orgIds: null,
    session: { tokenHash: Buffer.alloc(32), userId: 'usr_1', csrfToken: 't', createdAt: NOW, lastSeenAt: NOW },
  };
  const project = { id: 'prj_1', orgId: 'org_1', name: 'Web', apiEnabled: true, monthlyEventLimit: null, retentionDays: 400, createdAt: NOW };
  const org = { id: 'org_1', name: 'Acme', createdAt: NOW };
  const page = projectPage(viewer, { project, org, sources: [], month: '2026-11', used: 3, chart: dayChart(days, [], 'prj_1'), newSource: null, settings: null, saved: false,
    destinations: { projectId: 'prj_1', kinds: DESTINATION_KINDS, list: [], sources: [], typed: null, made: null, replay: null, done: null } });
  expect(page).toContain('<strong>3</strong> events this month (2026-11, UTC); no plan limit.');
  expect(page).not.toContain('of no plan limit');
});
