import type { PendingErasure, PersonLookup } from '../port.js';
import { EventDeletion } from './event-deletion.js';
import type { Db } from './open.js';

const IN_LIST = 'IN (SELECT value FROM json_each(?))';

/** A person forgotten by the first step of an erasure. */
export interface Forgotten {
  personId: string;
  distinctIds: string[];
  pending: PendingErasure;
}

/**
 * Person erasure on SQLite. Each method runs inside a write transaction the
 * caller holds (the single writer lock is the project lock here).
 */
export class SqliteErasure {
  private readonly s;
  private readonly deletion: EventDeletion;

  constructor(db: Db) {
    this.deletion = new EventDeletion(db);
    this.s = {
      linked: db.prepare('SELECT person_id FROM person_links WHERE project_id = ? AND distinct_id = ?').pluck(),
      current: db.prepare('SELECT coalesce(merged_into, id) FROM persons WHERE project_id = ? AND id = ?').pluck(),
      merged: db.prepare('SELECT id FROM persons WHERE project_id = ? AND merged_into = ?').pluck(),
      links: db.prepare(`SELECT distinct_id FROM person_links WHERE project_id = ? AND person_id ${IN_LIST} ORDER BY distinct_id`).pluck(),
      newest: db.prepare('SELECT coalesce(max(seq), 0) FROM events').pluck(),
      suppress: db.prepare(
        `INSERT INTO suppressed_ids (project_id, distinct_id, created_at, person_id) VALUES (?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET person_id = excluded.person_id`,
      ),
      suppressPerson: db.prepare(
        'INSERT INTO suppressed_persons (project_id, person_id, erased_person_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
      ),
      dropLinks: db.prepare(`DELETE FROM person_links WHERE project_id = ? AND person_id ${IN_LIST}`),
      dropTraits: db.prepare(`DELETE FROM person_traits WHERE project_id = ? AND person_id ${IN_LIST}`),
      dropPersons: db.prepare(`DELETE FROM persons WHERE project_id = ? AND id ${IN_LIST}`),
      eventsIn: db.prepare(`SELECT seq FROM events WHERE seq > ? AND seq <= ? AND project_id = ? AND person_id ${IN_LIST}`).pluck(),
      unsuppress: db.prepare('DELETE FROM suppressed_ids WHERE project_id = ? AND distinct_id = ? RETURNING coalesce(person_id, \'\')').pluck(),
      erasureOf: db.prepare('SELECT erased_person_id FROM suppressed_persons WHERE project_id = ? AND person_id = ?').pluck(),
      unsuppressPersons: db.prepare('DELETE FROM suppressed_persons WHERE project_id = ? AND erased_person_id = ?'),
      record: db.prepare('INSERT INTO pending_erasures (project_id, person_ids, through_seq, touched_at) VALUES (?, ?, ?, ?)'),
      touch: db.prepare('UPDATE pending_erasures SET touched_at = ? WHERE id = ?'),
      done: db.prepare('DELETE FROM pending_erasures WHERE id = ?'),
      stale: db.prepare('SELECT id, project_id, person_ids, through_seq FROM pending_erasures WHERE touched_at <= ? ORDER BY id'),
    };
  }

  /**
   * Step one: removes the person, its merged persons, links and traits;
   * suppresses its ids if asked; records the erasure as pending.
   */
  forget(projectId: string, lookup: PersonLookup, suppress: boolean, now: number): Forgotten | null {
    const start = 'distinctId' in lookup ? (this.s.linked.get(projectId, lookup.distinctId) as string | undefined) : lookup.personId;
    const personId = start === undefined ? undefined : (this.s.current.get(projectId, start) as string | undefined);
    if (personId === undefined) return null;
    const personIds = [personId, ...(this.s.merged.all(projectId, personId) as string[])];
    const ids = JSON.stringify(personIds);
    const distinctIds = this.s.links.all(projectId, ids) as string[];
    if (suppress) {
      for (const d of distinctIds) this.s.suppress.run(projectId, d, now, personId);
      for (const p of personIds) this.s.suppressPerson.run(projectId, p, personId, now);
    }
    this.s.dropLinks.run(projectId, ids);
    this.s.dropTraits.run(projectId, ids);
    this.s.dropPersons.run(projectId, ids);
    const throughSeq = this.s.newest.get() as number;
    // Touched on the wall clock: it tells other processes this one is still at work.
    const id = Number(this.s.record.run(projectId, ids, throughSeq, Date.now()).lastInsertRowid);
    return { personId, distinctIds, pending: { id, projectId, personIds, throughSeq } };
  }

  /** Step two, a range of rows at a time: deletes the events of those persons with seq in (after, upTo]. */
  deleteEvents(e: PendingErasure, after: number, upTo: number): number {
    this.s.touch.run(Date.now(), e.id);
    return this.deletion.delete(this.s.eventsIn.all(after, upTo, e.projectId, JSON.stringify(e.personIds)) as number[]);
  }

  /** The last step: every event of the erasure is deleted. */
  finished(e: PendingErasure): void {
    this.s.done.run(e.id);
  }

  /** Pending erasures no step has touched for `idleMs`: every process on one file runs on one machine, under one clock. */
  stale(idleMs: number): PendingErasure[] {
    const rows = this.s.stale.all(Date.now() - idleMs) as { id: number; project_id: string; person_ids: string; through_seq: number }[];
    return rows.map((r) => ({ id: r.id, projectId: r.project_id, personIds: JSON.parse(r.person_ids) as string[], throughSeq: r.through_seq }));
  }

  /** See ErasureStore.unsuppress: a distinct_id takes its erasure's person ids along; a person id lifts its erasure's person ids. */
  unsuppress(projectId: string, lookup: PersonLookup): boolean {
    const erasure =
      'distinctId' in lookup
        ? (this.s.unsuppress.get(projectId, lookup.distinctId) as string | undefined)
        : (this.s.erasureOf.get(projectId, lookup.personId) as string | undefined);
    if (erasure === undefined) return false;
    // '': a distinct_id suppressed before person ids were, with no person to lift.
    if (erasure !== '') this.s.unsuppressPersons.run(projectId, erasure);
    return true;
  }
}
