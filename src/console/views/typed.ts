import { type Html, html } from '../../docs/html.js';
import type { AdminField } from '../../domain/admin.js';

/** A form shown again after it failed validation: what was typed, and the message of the field at fault. */
export interface Typed {
  values: URLSearchParams;
  /** The field at fault; null when the message is about the form as a whole. */
  field: AdminField | null;
  message: string;
}

/** What a text field shows: what was typed when the form comes back, else `stored`. */
export function valueOf(typed: Typed | null, name: string, stored: string): string {
  return typed === null ? stored : (typed.values.get(name) ?? '');
}

/** Whether a checkbox is ticked: as it was sent when the form comes back, else `stored`. */
export function checkedOf(typed: Typed | null, name: string, stored: boolean): Html {
  const on = typed === null ? stored : typed.values.get(name) === 'true';
  return on ? html` checked` : html``;
}

/**
 * The attributes of a field at fault (named by its id): marked invalid,
 * described by its message, and focused so the keyboard lands on it.
 */
export function invalidAttrs(typed: Typed | null, field: AdminField, id: string, describedBy?: string): Html {
  if (typed?.field !== field) return describedBy === undefined ? html`` : html` aria-describedby="${describedBy}"`;
  return html` aria-invalid="true" aria-describedby="${id}-error${describedBy === undefined ? '' : ` ${describedBy}`}" autofocus`;
}

/** The message beside the field at fault, right under it. */
export function fieldError(typed: Typed | null, field: AdminField, id: string): Html {
  return typed?.field === field ? html`<p id="${id}-error" class="field-error" role="alert">${typed.message}</p>` : html``;
}

/** A message about the form as a whole (no field of it at fault), at its top. */
export function formError(typed: Typed | null, fields: readonly AdminField[]): Html {
  return typed !== null && (typed.field === null || !fields.includes(typed.field)) ? html`<p class="field-error" role="alert">${typed.message}</p>` : html``;
}
