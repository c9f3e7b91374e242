/** Groups: what a project may hold of them, decided under the project lock by the ingest pass. */

/** Group types a project may have: a sixth is refused (too_many_group_types). */
export const MAX_GROUP_TYPES = 5;
