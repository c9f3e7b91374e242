import type { Ajv } from 'ajv';
import type { Ajv2020 } from 'ajv/dist/2020.js';

/**
 * The keywords whose ajv checks cost more than linear time in the item, in
 * linear time: ajv compares `uniqueItems` pairwise (an 8 KiB array of distinct
 * numbers took about 40 ms, so a 500-item batch 20 s of a check thread) and an
 * `enum` value by value (a 10,000-value enum over each element of a 2,000-element
 * array, as long). Each value is keyed by its JSON with the object keys sorted,
 * as JSON Schema's equality is, and looked up in a set.
 */
export function boundKeywords<A extends Ajv | Ajv2020>(ajv: A): A {
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    compile: (unique: boolean) => failingWith('uniqueItems', 'must NOT have duplicate items', (data: unknown[]) => !unique || distinct(data)),
    errors: true,
  });
  ajv.removeKeyword('enum');
  ajv.addKeyword({
    keyword: 'enum',
    schemaType: 'array',
    compile: (values: unknown[]) => {
      const allowed = new ValueSet(values);
      return failingWith('enum', `must be equal to one of the ${values.length.toLocaleString('en-US')} allowed values`, (data: unknown) => allowed.has(data));
    },
    errors: true,
  });
  return ajv;
}

/** A keyword's check that says, when it fails, what the schema expected (never the value). */
function failingWith<T>(keyword: string, message: string, test: (data: T) => boolean) {
  type Errors = { keyword: string; message: string; params: object }[];
  const check = (data: T): boolean => {
    const ok = test(data);
    // New objects each failure: ajv writes the value's path into them, and one kept from an
    // earlier failure would keep that failure's path (the second item refused named the first's).
    check.errors = ok ? undefined : [{ keyword, message, params: {} }];
    return ok;
  };
  check.errors = undefined as Errors | undefined;
  return check;
}

/**
 * Values by JSON Schema's equality. A string, number, boolean or null is its
 * own key (a Set tells 1 from "1", and 0 from -0 not, as JSON does not): most
 * enums and arrays are of those, and their checks then allocate nothing. An
 * object or array is keyed by its JSON, in a set of its own so that no string
 * can pass for one.
 */
class ValueSet {
  private readonly plain = new Set<unknown>();
  private readonly shaped = new Set<string>();

  constructor(values: readonly unknown[] = []) {
    for (const v of values) this.add(v);
  }

  get size(): number {
    return this.plain.size + this.shaped.size;
  }

  add(v: unknown): void {
    if (isPlain(v)) this.plain.add(v);
    else this.shaped.add(key(v));
  }

  has(v: unknown): boolean {
    return isPlain(v) ? this.plain.has(v) : this.shaped.has(key(v));
  }
}

const isPlain = (v: unknown): boolean => v === null || typeof v !== 'object';

/** Whether no two values of the array are equal. */
function distinct(data: readonly unknown[]): boolean {
  const seen = new ValueSet();
  for (const v of data) {
    if (seen.has(v)) return false;
    seen.add(v);
  }
  return true;
}

/** A value's key for equality: its JSON, object keys sorted (1 and 1.0 are one number in JSON already). */
function key(v: unknown): string {
  return JSON.stringify(v, (_k, value: unknown) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) sorted[k] = (value as Record<string, unknown>)[k];
    return sorted;
  });
}

/** Keywords whose subschemas apply to the same value as their parent (not to a part of it). */
const IN_PLACE = ['allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', 'dependentSchemas', '$ref', '$dynamicRef', '$recursiveRef'];

/**
 * A reference cycle that never steps into the value (`{"$ref": "#"}` at the
 * root, or a definition whose allOf refers to itself): its check recurses
 * until the stack runs out, on any item that reaches it. The pointer of the
 * first such schema found, or null. References inside the schema only (remote
 * ones are refused before), as JSON pointers; an anchor is not followed.
 */
export function inPlaceCycle(root: unknown): string | null {
  const state = new Map<string, 'open' | 'done'>();
  const visit = (pointer: string): string | null => {
    if (state.get(pointer) === 'done') return null;
    if (state.get(pointer) === 'open') return pointer;
    state.set(pointer, 'open');
    for (const next of inPlaceChildren(root, pointer)) {
      const found = visit(next);
      if (found !== null) return found;
    }
    state.set(pointer, 'done');
    return null;
  };
  // Every schema object in the tree starts a walk: a cycle may hang under any property.
  for (const pointer of schemaPointers(root, '')) {
    const found = visit(pointer);
    if (found !== null) return found === '' ? '#' : `#${found}`;
  }
  return null;
}

function inPlaceChildren(root: unknown, pointer: string): string[] {
  const node = at(root, pointer);
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return [];
  const out: string[] = [];
  for (const k of IN_PLACE) {
    if (!Object.hasOwn(node, k)) continue;
    const v = (node as Record<string, unknown>)[k];
    if (k === '$ref' || k === '$dynamicRef' || k === '$recursiveRef') {
      if (typeof v === 'string' && (v === '#' || v.startsWith('#/'))) out.push(decodeURIComponent(v.slice(1)));
    } else if (Array.isArray(v)) v.forEach((_, i) => out.push(`${pointer}/${k}/${i}`));
    else if (k === 'dependentSchemas' && typeof v === 'object' && v !== null) for (const d of Object.keys(v)) out.push(`${pointer}/${k}/${escape(d)}`);
    else out.push(`${pointer}/${k}`);
  }
  return out;
}

function schemaPointers(node: unknown, pointer: string, out: string[] = []): string[] {
  if (typeof node !== 'object' || node === null) return out;
  if (!Array.isArray(node)) out.push(pointer);
  for (const [k, v] of Object.entries(node)) schemaPointers(v, `${pointer}/${escape(k)}`, out);
  return out;
}

const escape = (k: string): string => k.replace(/~/g, '~0').replace(/\//g, '~1');

function at(root: unknown, pointer: string): unknown {
  if (pointer === '') return root;
  let node = root;
  for (const part of pointer.slice(1).split('/')) {
    const k = part.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, k)) return undefined;
    node = (node as Record<string, unknown>)[k];
  }
  return node;
}
