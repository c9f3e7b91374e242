import type { Command } from 'commander';
import { AdminError } from '../../domain/admin.js';
import { erasePerson, unsuppress } from '../../domain/erasure.js';
import { UsageError, runWithStore, withCommon } from '../context.js';
import { formatCount } from '../numbers.js';

/** `inlet person delete` and `inlet person unsuppress`. */
export function registerErasure(person: Command): void {
  withCommon(
    person
      .command('delete')
      .description("erase a person: links, traits, merged persons and every event in every source of the project")
      .requiredOption('--project <project>', 'project id')
      .option('--distinct-id <id>', "the customer's user id")
      .option('--person-id <per_id>', 'a person id')
      .option('--suppress', 'drop later items for its distinct ids and person ids (reason "suppressed") until unsuppressed'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin, store }) => {
        if ((o.distinctId === undefined) === (o.personId === undefined)) throw new UsageError('Give exactly one of --distinct-id and --person-id.');
        await admin.getProject(o.project);
        const lookup = o.distinctId !== undefined ? { distinctId: o.distinctId as string } : { personId: o.personId as string };
        const erased = await erasePerson(store, o.project, lookup, { suppress: o.suppress === true, now: Date.now() });
        if (erased === null) {
          throw new AdminError(`No person with ${o.distinctId !== undefined ? `distinct_id "${o.distinctId}"` : `id ${o.personId}`} in project ${o.project}; nothing was deleted.`);
        }
        return { person_id: erased.personId, distinct_ids: erased.distinctIds, events_deleted: erased.eventsDeleted, suppressed: erased.suppressed };
      },
      (r) =>
        `erased person ${r.person_id} (distinct ids: ${r.distinct_ids.join(', ') || '-'}): ${formatCount(r.events_deleted)} event${r.events_deleted === 1 ? '' : 's'} deleted` +
        (r.suppressed ? `; later items for these ids, or with anonymous_id ${r.person_id}, are dropped as suppressed` : ''),
    ),
  );

  withCommon(
    person
      .command('unsuppress')
      .description('let items for an id be stored again after an erasure with --suppress')
      .requiredOption('--project <project>', 'project id')
      .option('--distinct-id <id>', "the customer's user id (the person ids erased with it are lifted too)")
      .option('--person-id <per_id>', 'an erased person id, as an anonymous_id (with the ids of the persons merged into it)'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin, store }) => {
        if ((o.distinctId === undefined) === (o.personId === undefined)) throw new UsageError('Give exactly one of --distinct-id and --person-id.');
        await admin.getProject(o.project);
        // Lifting a suppression that is not there leaves the same state: not an error.
        if (o.distinctId !== undefined) {
          await unsuppress(store, o.project, { distinctId: o.distinctId as string });
          return { distinct_id: o.distinctId as string, suppressed: false as const };
        }
        await unsuppress(store, o.project, { personId: o.personId as string });
        return { person_id: o.personId as string, suppressed: false as const };
      },
      (r) => `items for ${'distinct_id' in r ? r.distinct_id : r.person_id} in project ${(o.project as string)} are stored again`,
    ),
  );
}
