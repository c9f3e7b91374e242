/**
 * The rules of traits and memberships, written once: each engine's ingest
 * transaction (hand-written, on the hot path) renders its rows its own way
 * (SQLite one row a statement, PostgreSQL arrays through unnest) and ends
 * its INSERT with these clauses, so both keep the same rules by the same
 * SQL. SQLite reads `false` and a boolean column as 0/1, PostgreSQL as
 * booleans; `excluded` is the row that met the conflict on both.
 */

/** The columns of a person's trait, as every INSERT of one lists them. */
export const PERSON_TRAIT_COLUMNS = 'person_traits (project_id, person_id, key, value, set_at, unset)';

/**
 * A trait set: newest wins per key (by the item's timestamp, `set_at`); on a
 * tie the later write wins. An unset is a row of its own (`unset` true, a
 * JSON null as its value), ordered by set_at as a value is.
 */
export const TRAIT_SET = `ON CONFLICT (project_id, person_id, key) DO UPDATE
  SET value = excluded.value, set_at = excluded.set_at, unset = excluded.unset
  WHERE excluded.set_at >= person_traits.set_at`;

/**
 * A trait moved by a merge into the person merged into: the newer wins; on a
 * tie the person merged into keeps its value.
 */
export const TRAIT_MERGED = `ON CONFLICT (project_id, person_id, key) DO UPDATE
  SET value = excluded.value, set_at = excluded.set_at, unset = excluded.unset
  WHERE excluded.set_at > person_traits.set_at`;

/** Set once: only where the person has no value (no row, or an unset one), whatever the timestamps. */
export const TRAIT_SET_ONCE = `ON CONFLICT (project_id, person_id, key) DO UPDATE
  SET value = excluded.value, set_at = excluded.set_at, unset = false
  WHERE person_traits.unset`;

/** The columns of a group's trait, as every INSERT of one lists them. */
export const GROUP_TRAIT_COLUMNS = 'group_traits (project_id, group_type, group_key, key, value, set_at)';

/** A group's trait set: newest wins per key, on a tie the later write, as for a person's. */
export const GROUP_TRAIT_SET = `ON CONFLICT (project_id, group_type, group_key, key) DO UPDATE
  SET value = excluded.value, set_at = excluded.set_at
  WHERE excluded.set_at >= group_traits.set_at`;

/** The columns of a membership, as every INSERT of one lists them. */
export const MEMBER_COLUMNS = 'group_members (project_id, group_type, group_key, person_id, created_at)';

/**
 * A membership, or a group made, held already stays as it is, once: a
 * person's memberships moved by a merge included (the one of the person
 * merged into keeps its date).
 */
export const ONCE = 'ON CONFLICT DO NOTHING';
