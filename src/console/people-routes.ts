import type { FastifyInstance } from 'fastify';
import { PERSON_ID } from '../domain/items/fields/ids.js';
import { PERSON_EVENTS_KEPT, type PersonCursor } from '../stores/port-console.js';
import { sendPage } from './guard.js';
import { html } from '../docs/html.js';
import { isStorableText } from '../domain/storable.js';
import { BASE, notice, page } from './layout.js';
import { busyAsNull } from './page-reads.js';
import { type ConsoleKit, notFound } from './plugin.js';
import { peoplePage } from './views/people.js';

/** Distinct ids listed for a prefix search. */
const MATCHES = 20;
/** People listed a page. */
const PAGE = 20;
/** Latest events shown for a person (found by person: docs/design.md, "A person's events"). */
const EVENTS = PERSON_EVENTS_KEPT;

/** The cursor a Next link carries ("<created at>.<person id>"); anything else starts from the newest. */
export function readCursor(v: unknown): PersonCursor | null {
  const m = typeof v === 'string' ? /^(\d{1,16})\.(per_[A-Za-z0-9_-]{1,124})$/.exec(v) : null;
  return m === null ? null : { createdAt: Number(m[1]), id: m[2]! };
}

/** People: the project's people newest first a page at a time, search by distinct id, and the person found. */
export function peopleRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { deps, access, authed } = kit;
  app.get(
    `${BASE}/projects/:id/people`,
    authed(async (req, reply, viewer) => {
      const found = await access.project(viewer, (req.params as { id: string }).id);
      if (found === null) return notFound(reply, viewer);
      const q = req.query as Record<string, unknown>;
      const raw = q.q;
      // Cut by code points: a cut through a surrogate pair would leave half of it.
      const query = typeof raw === 'string' ? [...raw.trim()].slice(0, 200).join('') : '';
      // A distinct id never holds what no engine can store: said here, before a query PostgreSQL would fail.
      if (!isStorableText(query)) {
        return sendPage(reply, 400, page('People', html`<h1>People</h1>${notice('The search is not a valid distinct id: a distinct id never holds U+0000 or a lone surrogate.', 'error')}<p><a href="${BASE}/projects/${found.project.id}/people">Search again</a></p>`, viewer));
      }
      const personId = typeof q.person === 'string' && PERSON_ID.test(q.person) ? q.person : null;
      const projectId = found.project.id;
      const lookup = personId !== null ? { personId } : query !== '' ? { distinctId: query } : null;
      const person = lookup === null ? null : await deps.collector.store.findPerson(projectId, lookup);
      const matches = query === '' || person !== null ? [] : await deps.collector.listings.searchDistinctIds(projectId, query, MATCHES).catch(busyAsNull);
      const events = person === null ? { events: [], complete: true } : await deps.collector.listings.personEvents(projectId, person.id, EVENTS).catch(busyAsNull);
      const after = readCursor(q.after);
      const [listing, total] = lookup === null
        ? await Promise.all([deps.collector.listings.listPersons(projectId, PAGE, after), deps.collector.listings.countPersons(projectId).catch(busyAsNull)])
        : [null, null];
      return sendPage(reply, 200, peoplePage(viewer, { project: found.project, query, matches, person, events, listing, total, paged: after !== null }));
    }),
  );
}
