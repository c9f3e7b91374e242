import type { FastifyInstance } from 'fastify';
import { sendPage } from './guard.js';
import { html } from '../docs/html.js';
import { isStorableText } from '../domain/storable.js';
import { BASE, notice, page } from './layout.js';
import { type ConsoleKit, notFound } from './plugin.js';
import { peoplePage } from './views/people.js';

/** Distinct ids listed for a prefix search. */
const MATCHES = 20;
/** Latest events shown for a person… */
const EVENTS = 20;
/** …looked for among this many of the most recently stored events (bounded work on any store). */
const SCAN = 20_000;

/** People: search by distinct id, and the person found. */
export function peopleRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { deps, access, authed } = kit;
  app.get(
    `${BASE}/projects/:id/people`,
    authed(async (req, reply, viewer) => {
      const found = await access.project(viewer, (req.params as { id: string }).id);
      if (found === null) return notFound(reply, viewer);
      const raw = (req.query as Record<string, unknown>).q;
      // Cut by code points: a cut through a surrogate pair would leave half of it.
      const query = typeof raw === 'string' ? [...raw.trim()].slice(0, 200).join('') : '';
      // A distinct id never holds what no engine can store: said here, before a query PostgreSQL would fail.
      if (!isStorableText(query)) {
        return sendPage(reply, 400, page('People', html`<h1>People</h1>${notice('The search is not a valid distinct id: a distinct id never holds U+0000 or a lone surrogate.', 'error')}<p><a href="${BASE}/projects/${found.project.id}/people">Search again</a></p>`, viewer));
      }
      const projectId = found.project.id;
      const person = query === '' ? null : await deps.store.store.findPerson(projectId, { distinctId: query });
      const matches = query === '' || person !== null ? [] : await deps.store.listings.searchDistinctIds(projectId, query, MATCHES);
      const events = person === null ? [] : await deps.store.listings.personEvents(projectId, person.id, EVENTS, SCAN);
      return sendPage(reply, 200, peoplePage(viewer, { project: found.project, query, matches, person, events }));
    }),
  );
}
