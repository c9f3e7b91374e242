import { quoted } from '../echo.js';
import { MAX_GROUP_TYPES, groupKeyOf } from '../groups.js';
import { type JobAt, type Writes, accepted } from '../ingest/pass-context.js';
import type { ItemEffect, ItemOutcome } from '../ingest/job.js';
import type { EnrichedItem } from './enriched-item.js';
import { type FieldError, refuse, sent, take } from './fields/field-error.js';
import { checkDistinctId } from './fields/identity-fields.js';
import { describeJson } from './fields/text.js';
import type { ItemKind, ItemOf } from './kind.js';

/** A group type: the name of a kind of group, as a project's few group types are told apart. */
export const GROUP_TYPE = /^[a-z0-9_]{1,64}$/;

/** Sets a group's traits, and makes its sender a member. */
export type GroupItem = ItemOf<{
  type: 'group';
  /** A group item has no event name. */
  event: null;
  /** Its kind ("company"): one of at most five per project. */
  groupType: string;
  /** The group's own id within its type. */
  groupKey: string;
}>;

export const group: ItemKind<GroupItem> = {
  type: 'group',
  own: { groupType: true, groupKey: true },
  // It names no browser person or session.
  wireFields: ['type', 'distinct_id', 'insert_id', 'timestamp', 'properties', 'group_type', 'group_key', 'context'],
  requiredFields: ['type', 'group_type', 'group_key'],
  ignores: ['event', 'anonymous_id', 'session_id'],
  check: {
    own(raw, errors) {
      checkGroupType(raw.group_type, errors);
      if (sent(raw.group_key)) take(checkDistinctId(raw.group_key, 'group_key'), errors);
      else refuse(errors, 'invalid_group_key', 'group_key', 'A group item needs a "group_key": the id of the group within its type, such as "acme".');
    },
    build(raw, index, distinctId, _anonymousId, _sessionId, insertId, timestamp, props, droppedKeys) {
      // A group item with no error has its type and key.
      const item: EnrichedItem<'group'> = {
        index, type: 'group', event: null, distinctId, anonymousId: null, sessionId: null, insertId, timestamp,
        properties: props.properties, propertiesJson: props.json!, enrichment: {}, userAgent: props.userAgent, droppedKeys,
        groupType: raw.group_type as string, groupKey: raw.group_key as string,
      };
      return { ok: true, item, dropped: null };
    },
  },
  metered: false,
  storeRefuses: ['too_many_group_types'],
  schemaName: 'GroupItem',
  schema: (k) => {
    const { insert_id: insertId, timestamp, properties: props, context } = k.common();
    return {
      type: 'object',
      description: `Sets the traits (its properties) of a group, newest per key by timestamp, and makes the person of distinct_id, when sent, a member. A project has at most ${MAX_GROUP_TYPES} group types (too_many_group_types). Not metered. ${k.itemDescription}`,
      required: [...group.requiredFields],
      properties: {
        type: { type: 'string', const: 'group' },
        group_type: { type: 'string', pattern: GROUP_TYPE.source, description: 'The kind of group, such as company (invalid_group_type).' },
        group_key: k.name('The group\'s id within its type, under the distinct_id rules (invalid_group_key).'),
        distinct_id: k.orNull(k.name(`${k.distinctId} Its person becomes a member of the group.`)),
        insert_id: insertId!,
        timestamp: timestamp!,
        properties: props!,
        context: context!,
        event: k.ignored('group'),
        anonymous_id: k.ignored('group'),
        session_id: k.ignored('group'),
      },
    };
  },
  linksDistinctId: (item) => item.distinctId !== null,
  otherId: () => null,
  read: (item, reads) => {
    reads.groups.set(groupKeyOf(item.groupType, item.groupKey), { groupType: item.groupType, groupKey: item.groupKey });
  },
  write: writeGroup,
  dryRun: (item, effect) => ({ group: { group_type: item.groupType, group_key: item.groupKey, new: effect?.kind === 'group' && effect.groupIsNew } }),
  sendable: (item, common) => ({ type: 'group', group_type: item.groupType, group_key: item.groupKey, ...common }),
};

function checkGroupType(v: unknown, errors: FieldError[]): void {
  if (typeof v === 'string' && GROUP_TYPE.test(v)) return;
  const what = sent(v) ? `not ${typeof v === 'string' ? quoted(v) : describeJson(v)}` : 'and none was sent';
  refuse(errors, 'invalid_group_type', 'group_type', `"group_type" must be 1 to 64 characters of a-z, 0-9 and "_", such as "company"; ${what}.`);
}

/**
 * A group item sets the group's traits and makes its sender a member. A
 * sixth group type of the project is refused: the types are read under the
 * project lock, so two servers cannot each add a fifth.
 */
function writeGroup(w: Writes, item: GroupItem, at: JobAt): ItemOutcome {
  if (!w.groupTypes.has(item.groupType)) {
    if (w.groupTypes.size >= MAX_GROUP_TYPES) {
      return {
        index: item.index,
        status: 'refused',
        code: 'too_many_group_types',
        field: 'group_type',
        message: `This project has ${MAX_GROUP_TYPES} group types already (${[...w.groupTypes].sort().join(', ')}); a project has at most ${MAX_GROUP_TYPES}. Send one of them as "group_type".`,
      };
    }
    w.groupTypes.add(item.groupType);
    w.out.groupTypes.push(item.groupType);
  }
  const key = groupKeyOf(item.groupType, item.groupKey);
  const groupIsNew = !w.groups.has(key);
  if (groupIsNew) {
    w.groups.add(key);
    w.out.groups.push({ groupType: item.groupType, groupKey: item.groupKey });
  }
  for (const [k, value] of Object.entries(item.properties)) {
    w.groupTraits.push({ groupType: item.groupType, groupKey: item.groupKey, key: k, value: JSON.stringify(value), setAt: item.timestamp });
  }
  const effect: ItemEffect = { kind: 'group', groupIsNew };
  if (item.distinctId === null) return accepted(w, item, at, null, null, effect);
  const person = w.people.byDistinctId(item.distinctId);
  w.people.members.push({ groupType: item.groupType, groupKey: item.groupKey, personId: person.id });
  return accepted(w, item, at, null, person, effect);
}
