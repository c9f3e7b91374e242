import { expect, it } from 'vitest';
import { destinationsSection } from '../../src/console/views/destinations.js';
import { DESTINATION_KINDS } from '../../src/destinations/registry.js';
import { html } from '../../src/docs/html.js';
import type { Viewer } from '../../src/domain/accounts/accounts.js';
import { LAG_COUNT_CAP } from '../../src/domain/delivery/deliverer.js';
import type { DestinationRow } from '../../src/console/views/destinations.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const viewer: Viewer = {
  user: { id: 'usr_1', email: 'a@b.test', passwordHash: '', admin: true, disabled: false, createdAt: NOW },
  orgIds: null,
  session: { tokenHash: Buffer.alloc(32), userId: 'usr_1', csrfToken: 't', createdAt: NOW, lastSeenAt: NOW },
};
const listed = (lag: number): DestinationRow => ({
  id: 'dst_1', kind: 'webhook', url: 'https://hooks.example.com/in', status: 'paused', delivered: 0, lag_events: lag,
  oldest_undelivered_at: null, last_error: null, paused_reason: null, sources: [], events: [],
});
const section = (lag: number) => destinationsSection(viewer, { projectId: 'prj_1', kinds: DESTINATION_KINDS, list: [listed(lag)], sources: [], typed: null, made: null, replay: null, done: null }, () => html``).value;

it('a lag counted up to its cap reads as a floor ("at least"), and one under it as it is', () => {
  expect(section(LAG_COUNT_CAP)).toContain('at least 1,000,000 events behind');
  expect(section(LAG_COUNT_CAP - 1)).toContain(' 999,999 events behind');
  expect(section(LAG_COUNT_CAP - 1)).not.toContain('at least');
});
