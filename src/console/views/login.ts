import { html } from '../../docs/html.js';
import { BASE, notice, page } from '../layout.js';

/** The sign-in form; `message` after a failed attempt (never saying which field was wrong). */
export function loginPage(message: string | null, email = ''): string {
  return page(
    'Sign in',
    html`<h1>Sign in</h1>
${message === null ? '' : notice(message, 'error')}
<form method="post" action="${BASE}/login" class="card">
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${email}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <button type="submit">Sign in</button>
</form>
<p class="hint">Accounts are made on the server with <code>inlet user create</code>.</p>`,
    null,
  );
}
