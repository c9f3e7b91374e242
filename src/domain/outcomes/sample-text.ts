/** What a kept item may weigh: its JSON text is cut past this many UTF-8 bytes. */
export const SAMPLE_MAX_BYTES = 16 * 1024;

/** An item's JSON text, cut to `max` bytes of UTF-8; `cut` says whether it was (the text is then not JSON). */
export interface SampleText {
  text: string;
  cut: boolean;
}

/**
 * The item as JSON, written only as far as `max` bytes: a 1 MiB item costs
 * what its first 16 KiB do, never a full stringify. Values JSON cannot hold
 * (undefined, functions) are left out as JSON.stringify leaves them.
 */
export function sampleText(value: unknown, max = SAMPLE_MAX_BYTES): SampleText {
  const w = new BoundedWriter(max);
  write(w, value);
  const text = w.parts.join('');
  // Under `max` characters may still be over `max` bytes, when they are not ASCII.
  if (!w.full && (text.length * 3 <= max || Buffer.byteLength(text) <= max)) return { text, cut: false };
  return { text: cutToBytes(text, max), cut: true };
}

class BoundedWriter {
  parts: string[] = [];
  /** Characters written: at least their UTF-8 bytes divided by three, so a cap on characters is one on bytes. */
  chars = 0;
  full = false;

  constructor(readonly max: number) {}

  push(s: string): void {
    if (this.full) return;
    this.parts.push(s);
    this.chars += s.length;
    // Characters past `max` are past `max` bytes too; the exact cut is made at the end.
    if (this.chars > this.max) this.full = true;
  }
}

function write(w: BoundedWriter, v: unknown): void {
  if (w.full) return;
  if (typeof v === 'string') {
    // A long string is cut before it is quoted: quoting a megabyte to keep 16 KiB of it would cost the megabyte.
    w.push(JSON.stringify(v.length > w.max ? v.slice(0, w.max + 1) : v));
    return;
  }
  if (v === null || typeof v !== 'object') {
    const s = JSON.stringify(v);
    w.push(s === undefined ? 'null' : s);
    return;
  }
  if (Array.isArray(v)) {
    w.push('[');
    for (let i = 0; i < v.length && !w.full; i++) {
      if (i > 0) w.push(',');
      write(w, v[i] === undefined || typeof v[i] === 'function' ? null : v[i]);
    }
    w.push(']');
    return;
  }
  w.push('{');
  let first = true;
  for (const k of Object.keys(v)) {
    if (w.full) return;
    const x = (v as Record<string, unknown>)[k];
    if (x === undefined || typeof x === 'function') continue;
    w.push(first ? JSON.stringify(k) : `,${JSON.stringify(k)}`);
    w.push(':');
    first = false;
    write(w, x);
  }
  w.push('}');
}

/** The longest start of `s` within `max` UTF-8 bytes, never splitting a surrogate pair. */
function cutToBytes(s: string, max: number): string {
  let end = Math.min(s.length, max);
  while (end > 0 && Buffer.byteLength(s.slice(0, end)) > max) end = Math.max(0, end - Math.ceil((Buffer.byteLength(s.slice(0, end)) - max) / 3));
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return s.slice(0, end);
}
