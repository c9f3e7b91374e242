import type { FastifyInstance } from 'fastify';
import { html } from '../docs/html.js';
import { isStorableText } from '../domain/storable.js';
import { sendPage } from './guard.js';
import { BASE, notice, page } from './layout.js';
import { busyAsNull } from './page-reads.js';
import { type ConsoleKit, notFound } from './plugin.js';
import { groupsPage } from './views/groups.js';

/** Groups listed a page. */
const GROUPS = 50;

/** Groups: a project's group types, and its groups (traits, member counts) by type and key prefix. */
export function groupRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { deps, access, authed } = kit;
  app.get(
    `${BASE}/projects/:id/groups`,
    authed(async (req, reply, viewer) => {
      const found = await access.project(viewer, (req.params as { id: string }).id);
      if (found === null) return notFound(reply, viewer);
      const q = req.query as Record<string, unknown>;
      // Cut by code points: a cut through a surrogate pair would leave half of it.
      const query = typeof q.q === 'string' ? [...q.q.trim()].slice(0, 200).join('') : '';
      // A group key never holds what no engine can store: said here, before a query PostgreSQL would fail.
      if (!isStorableText(query)) {
        return sendPage(reply, 400, page('Groups', html`<h1>Groups</h1>${notice('The search is not a valid group key: a group key never holds U+0000 or a lone surrogate.', 'error')}<p><a href="${BASE}/projects/${found.project.id}/groups">Search again</a></p>`, viewer));
      }
      const projectId = found.project.id;
      const types = await deps.collector.listings.groupTypes(projectId).catch(busyAsNull);
      // Only a type the project has: anything else reads as all types.
      const type = typeof q.type === 'string' && types?.includes(q.type) ? q.type : '';
      const groups = types === null ? null : await deps.collector.listings.groupPage(projectId, { groupType: type === '' ? null : type, keyPrefix: query, limit: GROUPS }).catch(busyAsNull);
      return sendPage(reply, 200, groupsPage(viewer, { project: found.project, types: types ?? [], type, query, groups, limit: GROUPS }));
    }),
  );
}
