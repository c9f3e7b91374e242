import { type DestinationConfig, type DestinationField, type DestinationKind, type DestinationKinds, type DestinationTarget, kindNamed } from '../../stores/port-destinations.js';

/**
 * A field as the console's form and the CLI's `destination create` offer it:
 * one input, one flag, per name, whichever kinds declare it (a URL is one
 * input for every kind that has one).
 */
export interface OfferedField {
  name: string;
  label: string;
  /** The CLI's option ("--table <name>"). */
  flag: string;
  /** The kinds that have it, in the registry's order. */
  kinds: string[];
  /** Each kind's help, said once: joined when every kind has the field, else after the names of the kinds that do. */
  help: string;
  /** Needed by every kind: the flag and the input are required. */
  required: boolean;
  /** Secret for some kind: never typed back into a form. */
  secret: boolean;
  /** The values it takes, when every kind that has it says (DestinationField.choices). */
  choices?: readonly string[];
}

/** The fields every kind declares, merged by name, in the order they first appear. */
export function offeredFields(kinds: DestinationKinds): OfferedField[] {
  const byName = new Map<string, { field: OfferedField; helps: string[]; requiredBy: number; anyFree: boolean }>();
  for (const kind of kinds) {
    for (const f of kind.fields) {
      let o = byName.get(f.name);
      if (o === undefined) {
        o = { field: { name: f.name, label: f.label, flag: f.flag, kinds: [], help: '', required: false, secret: false }, helps: [], requiredBy: 0, anyFree: false };
        byName.set(f.name, o);
      }
      o.field.kinds.push(kind.name);
      if (!o.helps.includes(f.help)) o.helps.push(f.help);
      if (f.required) o.requiredBy++;
      o.field.secret ||= f.secret;
      if (f.choices === undefined) o.anyFree = true;
      else o.field.choices = [...new Set([...(o.field.choices ?? []), ...f.choices])];
    }
  }
  return [...byName.values()].map(({ field, helps, requiredBy, anyFree }) => {
    const everyKind = field.kinds.length === kinds.length;
    const help = helps.join(', or ');
    // A field some kind takes any value of offers no choices.
    const { choices, ...rest } = field;
    return { ...rest, ...(choices === undefined || anyFree ? {} : { choices }), required: requiredBy === kinds.length, help: everyKind ? help : `${field.kinds.join(' and ')}: ${help}` };
  });
}

/** The long flag of a field ("--table"), as messages name it. */
export const longFlag = (f: Pick<OfferedField, 'flag'>): string => f.flag.split(/[\s,]/)[0]!;

/** The kinds' names, as a choice: "a or b". */
export const kindChoice = (kinds: DestinationKinds): string => kinds.map((k) => k.name).join(' or ');

/** The field of a kind that says where it delivers: the first that may be shown. */
const whereField = (kind: DestinationKind | undefined): DestinationField | undefined => kind?.fields.find((f) => !f.secret || f.mask !== undefined);

/** Where a destination delivers, as its first field that may be shown says it (a URL, masked); empty for a kind this server does not know. */
export function whereTo(kinds: DestinationKinds, d: DestinationTarget): string {
  const kind = kindNamed(kinds, d.kind);
  return shownConfig(kind, d.config)[whereField(kind)?.name ?? ''] ?? '';
}

/** The same, from a destination as shown (destinationView, `create`'s answer). */
export function whereShown(kinds: DestinationKinds, shown: { kind: string } & Record<string, unknown>): string {
  const name = whereField(kindNamed(kinds, shown.kind))?.name;
  const v = name !== undefined && Object.hasOwn(shown, name) ? shown[name] : undefined;
  return typeof v === 'string' ? v : '';
}

/** A config as it may be shown: each field of the kind that is not secret, and each secret one masked (by its mask, or not shown). */
export function shownConfig(kind: DestinationKind | undefined, config: DestinationConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of kind?.fields ?? []) {
    const v = Object.hasOwn(config, f.name) ? config[f.name] : undefined;
    if (v === undefined) continue;
    if (!f.secret) out[f.name] = v;
    else if (f.mask !== undefined) out[f.name] = f.mask(v);
  }
  return out;
}

/** What Inlet made for a destination just made (`create`'s answer), to be shown this once: what each is called, what it is for, and its value. */
export function madeOnce(kinds: DestinationKinds, made: { kind: string } & Record<string, unknown>): { label: string; use: string; value: string }[] {
  return (kindNamed(kinds, made.kind)?.made ?? []).flatMap((m) => {
    const value = Object.hasOwn(made, m.name) ? made[m.name] : undefined;
    return typeof value === 'string' ? [{ label: m.label, use: m.use, value }] : [];
  });
}
