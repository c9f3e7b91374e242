import { type Html, html } from '../docs/html.js';
import { DOCS_PATH } from '../edge/docs-paths.js';
import type { Viewer } from '../domain/accounts/accounts.js';

/** Where the console lives; every page, form and script under it. */
export const BASE = '/console';

/** A whole page: the console's chrome around `body`. Scripts come from the server itself, never inline. */
export function page(title: string, body: Html, viewer: Viewer | null): string {
  const nav =
    viewer === null
      ? html``
      : html`<nav aria-label="Console">
          <a href="${BASE}/projects">Projects</a>
          <span class="who">${viewer.user.email}${viewer.user.admin ? ' (admin)' : ''}</span>
          <form method="post" action="${BASE}/logout" class="inline">${csrfField(viewer)}<button type="submit">Sign out</button></form>
        </nav>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Inlet console</title>
<link rel="stylesheet" href="${BASE}/static/console.css">
<script src="${BASE}/static/console.js" defer></script>
</head>
<body>
<header><a class="brand" href="${BASE}">Inlet console</a>${nav}</header>
<main id="main">
${body}
</main>
<footer><a href="${DOCS_PATH}">API reference</a>: every answer and error code of the batch API.</footer>
</body>
</html>
`.value;
}

/** The hidden field that carries the session's CSRF token in every form. */
export function csrfField(viewer: Viewer): Html {
  return html`<input type="hidden" name="_csrf" value="${viewer.session.csrfToken}">`;
}

/** A message box: `role="alert"` for errors, so screen readers announce it. */
export function notice(text: string, kind: 'error' | 'info' = 'info'): Html {
  return kind === 'error' ? html`<p class="notice error" role="alert">${text}</p>` : html`<p class="notice" role="status">${text}</p>`;
}

/** A time as ISO 8601 UTC, to the second. */
export function when(ms: number | null): string {
  return ms === null ? '—' : `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}
