/** Groups: what a project may hold of them, decided under the project lock by the ingest pass. */

/** Group types a project may have: a sixth is refused (too_many_group_types). */
export const MAX_GROUP_TYPES = 5;

/** One text for a group, to tell groups apart in a Map or Set. */
export function groupKeyOf(groupType: string, groupKey: string): string {
  return `${groupType}\u0000${groupKey}`;
}
