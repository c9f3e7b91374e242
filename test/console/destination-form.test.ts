/**
 * The New destination form is made from the kinds' declarations: a kind
 * the console has never heard of brings its option and its inputs, and a
 * secret field is never typed back into a form that failed.
 */
import { expect, it } from 'vitest';
import { destinationsSection } from '../../src/console/views/destinations.js';
import { html } from '../../src/docs/html.js';
import type { Viewer } from '../../src/domain/accounts/accounts.js';
import type { DestinationKind } from '../../src/stores/port-destinations.js';

const NOW = Date.UTC(2026, 10, 20);
const viewer: Viewer = {
  user: { id: 'usr_1', email: 'a@b.test', passwordHash: '', admin: true, disabled: false, createdAt: NOW },
  orgIds: null,
  session: { tokenHash: Buffer.alloc(32), userId: 'usr_1', csrfToken: 't', createdAt: NOW, lastSeenAt: NOW },
};
const never = (): never => {
  throw new Error('not used');
};
const queue: DestinationKind = {
  name: 'queue', about: 'onto a queue', docs: 'Queues', example: '', made: [], configure: never, check: never, sender: never,
  fields: [
    { name: 'url', label: 'Broker', help: 'amqp://host/vhost', flag: '--url <url>', required: true, secret: true },
    { name: 'topic', label: 'Topic', help: 'the topic', flag: '--topic <name>', required: true, secret: false },
  ],
};

it('a kind declared, and nothing else, gives the form its option and its inputs; what was typed comes back but a secret', () => {
  const typed = { values: new URLSearchParams({ kind: 'queue', url: 'amqp://u:pw@h/v', topic: 'orders' }), message: 'no', field: null };
  const page = destinationsSection(viewer, { projectId: 'prj_1', kinds: [queue], list: [], sources: [], typed, made: null, replay: null, done: null }, () => html``).value;
  expect(page).toContain('<option value="queue" selected>queue</option>');
  expect(page).toContain('<label for="destination-topic">Topic</label>');
  expect(page).toContain('value="orders"');
  expect(page).toContain('<label for="destination-url">Broker</label>');
  expect(page).not.toContain('pw@h');
  expect(page).toContain('delivered onto a queue');
});
