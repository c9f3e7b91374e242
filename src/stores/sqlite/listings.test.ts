import { describe, expect, it } from 'vitest';
import { sqliteTestDir } from '../../../test/helpers/sqlite.js';
import { PERSON_IDS_SQL, PERSON_PAGE_SQL } from './listings.js';

const { open } = sqliteTestDir('inlet-listings-');

describe('the list of people on SQLite', () => {
  it('reads a page as a range of persons_newest, never a scan or a sort of the project’s persons', () => {
    const db = open();
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${PERSON_PAGE_SQL}`).all('prj_1', Number.MAX_SAFE_INTEGER, '', 21) as { detail: string }[]).map((r) => r.detail).join('\n');
    expect(plan).toMatch(/SEARCH persons USING (COVERING )?INDEX persons_newest \(project_id=\? AND .*created_at/);
    expect(plan).not.toMatch(/TEMP B-TREE|SCAN persons/);
  });

  it('reads a listed person’s ids by its id and its merged persons’ ids, never the project’s links', () => {
    const db = open();
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${PERSON_IDS_SQL}`).all('prj_1', 'per_1', 'prj_1', 'per_1', 4) as { detail: string }[]).map((r) => r.detail).join('\n');
    expect(plan).toMatch(/SEARCH person_links USING (COVERING )?INDEX person_links_person \(project_id=\? AND person_id=\?\)/);
    expect(plan).toMatch(/SEARCH m USING (COVERING )?INDEX persons_merged_into \(project_id=\? AND merged_into=\?\)\nSEARCH l USING (COVERING )?INDEX person_links_person \(project_id=\? AND person_id=\?\)/);
    expect(plan).not.toMatch(/SCAN|INDEX person_links_person \(project_id=\?\)/);
  });
});
