import { renderMigration } from '../sql/shared-migration.js';
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sqliteTestDir } from '../../../test/helpers/sqlite.js';
import { passQuery } from '../../../test/helpers/pass-bundles.js';
import { SqliteIngestTx } from './ingest-tx.js';
import { SQLITE_MIGRATIONS } from './migrations.js';

const { dir, open } = sqliteTestDir('inlet-migrations-');

describe('embedded schema migrations', () => {
  it('a store of the first schema is brought up to date: every insert_id it held still counts as stored', () => {
    mkdirSync(dir, { recursive: true });
    const old = new Database(join(dir, 'inlet.db'));
    old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
    old.exec(SQLITE_MIGRATIONS[0] as string);
    old.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (1, 0)').run();
    const addOld = old.prepare(
      `INSERT INTO events (id, project_id, source_id, event, person_id, timestamp, received_at, insert_id, properties)
       VALUES (?, 'prj_1', ?, 'e', 'per_1', ?, 0, ?, '{}')`,
    );
    const claimOld = old.prepare('INSERT INTO insert_ids (source_id, insert_id, event_id) VALUES (?, ?, ?)');
    // More than one chunk of each step that reads in chunks, and events without an insert_id.
    old.exec('BEGIN');
    for (let i = 0; i < 25_000; i++) {
      const source = i % 2 === 0 ? 'src_a' : 'src_b';
      const insertId = i % 10 === 0 ? null : `old-${i}`;
      addOld.run(`evt_${i}`, source, 1_795_000_000_000 + i, insertId);
      if (insertId !== null) claimOld.run(source, insertId, `evt_${i}`);
    }
    for (let i = 0; i < 12_000; i++) claimOld.run('src_a', `identify-${i}`, null);
    old.exec('COMMIT');
    old.close();

    const db = open();
    expect(db.prepare('SELECT max(version) FROM schema_migrations').pluck().get()).toBe(SQLITE_MIGRATIONS.length);
    const gone = ['insert_ids', 'insert_id_slots', 'insert_id_index_state', 'events_source_time'];
    expect(db.prepare('SELECT name FROM sqlite_master WHERE name IN (SELECT value FROM json_each(?))').pluck().all(JSON.stringify(gone))).toEqual([]);
    expect(db.prepare('SELECT count(*) FROM identify_claims').pluck().get()).toBe(12_000);
    const tx = new SqliteIngestTx(db);
    tx.begin();
    const found = tx.read(passQuery('prj_1', 'src_a', { insertIds: ['old-2', 'old-3', 'old-10', 'old-24998', 'identify-0', 'identify-11999', 'identify-12000'] })).insertIds;
    expect(found).toEqual(new Map([['old-2', 'evt_2'], ['old-24998', 'evt_24998'], ['identify-0', null], ['identify-11999', null]]));
    expect(tx.read(passQuery('prj_1', 'src_b', { insertIds: ['old-3', 'old-2', 'identify-0'] })).insertIds).toEqual(new Map([['old-3', 'evt_3']]));
    tx.rollback();
  });

  it('destinations of projects deleted before a deletion took its destinations along are removed, with their URLs and secrets', () => {
    const db = open();
    db.exec(`
      INSERT INTO orgs (id, name, created_at, deleted_at) VALUES ('org_live', 'a', 0, NULL), ('org_gone', 'b', 0, 5);
      INSERT INTO projects (id, org_id, name, api_enabled, created_at, deleted_at)
      VALUES ('prj_live', 'org_live', 'p', 1, 0, NULL), ('prj_gone', 'org_live', 'p', 1, 0, 5), ('prj_of_gone_org', 'org_gone', 'p', 1, 0, NULL);
    `);
    const add = db.prepare(
      `INSERT INTO destinations (id, project_id, kind, config, sources, events, paused, cursor_seq, generation, delivered, lease_holder, lease_until, created_at)
       VALUES (?, ?, 'webhook', '{"url":"https://example.com/in","secret":"whsec_x"}', '[]', '[]', 0, 0, 0, 0, 'srv_old', 0, 0)`,
    );
    for (const p of ['prj_live', 'prj_gone', 'prj_of_gone_org']) add.run(`dst_${p}`, p);
    db.exec(SQLITE_MIGRATIONS.find((m) => typeof m === 'string' && m.includes('DELETE FROM destinations')) as string);
    expect(db.prepare('SELECT id FROM destinations').pluck().all()).toEqual(['dst_prj_live']);
  });

  it('destinations kept in the columns of their kind (url, table_name, secret) are moved into config as they were, secrets whole', () => {
    mkdirSync(dir, { recursive: true });
    const old = new Database(join(dir, 'inlet.db'));
    const moves = SQLITE_MIGRATIONS.findIndex((m) => typeof m === 'string' && m.includes('DROP COLUMN table_name'));
    old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
    for (const [i, m] of SQLITE_MIGRATIONS.slice(0, moves).entries()) {
      if (typeof m === 'string') old.exec(m);
      else if (typeof m === 'function') m(old);
      else old.exec(renderMigration(m, 'sqlite'));
      old.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)').run(i + 1);
    }
    const add = old.prepare(
      `INSERT INTO destinations (id, project_id, kind, url, table_name, sources, events, secret, paused, cursor_seq, generation, delivered, lease_holder, lease_until, created_at)
       VALUES (?, 'prj_1', ?, ?, ?, '[]', '["paid"]', ?, 0, 7, 1, 3, NULL, 0, 0)`,
    );
    add.run('dst_hook', 'webhook', 'https://u:p%40ss@example.com/in?t=1', null, 'whsec_kept');
    add.run('dst_table', 'postgres', 'postgres://loader:pw@db/w?sslmode=require', 'analytics.inlet_events', null);
    old.close();

    const db = open();
    const rows = db.prepare('SELECT id, kind, config, events, cursor_seq FROM destinations ORDER BY id').all() as { id: string; kind: string; config: string; events: string; cursor_seq: number }[];
    expect(rows.map((r) => ({ ...r, config: JSON.parse(r.config) as unknown }))).toEqual([
      { id: 'dst_hook', kind: 'webhook', config: { url: 'https://u:p%40ss@example.com/in?t=1', secret: 'whsec_kept' }, events: '["paid"]', cursor_seq: 7 },
      { id: 'dst_table', kind: 'postgres', config: { url: 'postgres://loader:pw@db/w?sslmode=require', table: 'analytics.inlet_events' }, events: '["paid"]', cursor_seq: 7 },
    ]);
    const columns = db.prepare("SELECT name FROM pragma_table_info('destinations')").pluck().all();
    expect(columns).not.toContain('url');
    expect(columns).not.toContain('secret');
  });

  it('a data directory from a newer Inlet is refused, not written to', () => {
    const db = open();
    db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (99, 0)').run();
    db.close();
    expect(() => open()).toThrow(/newer Inlet \(schema version 99/);
  });
});
