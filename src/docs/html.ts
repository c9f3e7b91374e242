/**
 * Markup that is safe by construction: text put into an `html` template is
 * escaped unless it is already markup, so no table text can break the page.
 */

/** A piece of markup that has been escaped or written by us. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Part = Html | string | number | readonly Part[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as it must stand in an element or an attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

function render(part: Part): string {
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

/** A template whose literal parts are markup and whose values are escaped text. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new Html(out);
}

/** Inline code. */
export function code(text: string): Html {
  return html`<code>${text}</code>`;
}

/** A link to an anchor on the same page. */
export function anchor(id: string, text: Part = code(id)): Html {
  return html`<a href="#${id}">${text}</a>`;
}

/** A table with a header row; cells are text or markup. */
export function table(head: readonly string[], rows: readonly (readonly Part[])[]): Html {
  return html`<table><thead><tr>${head.map((h) => html`<th>${h}</th>`)}</tr></thead><tbody>
${rows.map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>\n`)}</tbody></table>`;
}
