import { afterEach, expect, it } from 'vitest';
import { tempDir } from '../../../test/helpers/fixture.js';
import { ingestJob } from '../../../test/helpers/items.js';
import { StoreUnavailableError } from '../port.js';
import { GroupCommitter } from './group-commit.js';
import { SqliteIngestTx } from './ingest-tx.js';
import { type Db, openSqlite } from './open.js';

const tmp = tempDir('inlet-group-commit-');
const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
  tmp.remove();
});

function setUp(): { db: Db; committer: GroupCommitter } {
  const db = openSqlite(tmp.dir);
  opened.push(db);
  db.prepare("INSERT INTO projects (id, org_id, name, api_enabled, created_at) VALUES ('prj_1', 'org_1', 'p', 1, 0)").run();
  return { db, committer: new GroupCommitter(db, new SqliteIngestTx(db)) };
}

const send = (committer: GroupCommitter, insertId: string) =>
  committer.submit(ingestJob([{ distinctId: 'u1', insertId }, { type: 'identify', distinctId: 'u1', insertId: `${insertId}-identify` }]));

/** Makes every COMMIT that stored an event fail, until the trigger commit_fails is dropped. */
function failCommitsWithEvents(db: Db): void {
  // A deferred foreign key is checked at COMMIT, so COMMIT itself fails.
  db.pragma('foreign_keys = ON');
  db.exec(`
    CREATE TABLE parent (id TEXT PRIMARY KEY);
    CREATE TABLE child (parent_id TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
    CREATE TRIGGER commit_fails AFTER INSERT ON events BEGIN INSERT INTO child VALUES ('none'); END;
  `);
}

// Both failures strike after the job has recorded its insert_ids, which live
// in memory until COMMIT: they must go with the rest of the job.
it('a job that fails after recording its insert_ids leaves none of them behind', async () => {
  const { db, committer } = setUp();
  db.exec("CREATE TRIGGER usage_fails BEFORE INSERT ON usage BEGIN SELECT RAISE(ABORT, 'usage fails'); END");
  await expect(send(committer, 'a')).rejects.toBeInstanceOf(StoreUnavailableError);
  db.exec('DROP TRIGGER usage_fails');
  expect((await send(committer, 'a')).map((o) => o.status)).toEqual(['accepted', 'accepted']);
  expect((await send(committer, 'a')).map((o) => o.status)).toEqual(['duplicate', 'duplicate']);
});

it('a COMMIT that fails leaves none of the insert_ids of its jobs behind', async () => {
  const { db, committer } = setUp();
  failCommitsWithEvents(db);
  await expect(send(committer, 'b')).rejects.toBeInstanceOf(StoreUnavailableError);
  expect(db.inTransaction).toBe(false);
  db.exec('DROP TRIGGER commit_fails');
  expect((await send(committer, 'b')).map((o) => o.status)).toEqual(['accepted', 'accepted']);
  expect(db.prepare('SELECT count(*) FROM events').pluck().get()).toBe(1);
});

it('tells its listener of every COMMIT that returned, and of no failed one', async () => {
  const db = openSqlite(tmp.dir);
  opened.push(db);
  db.prepare("INSERT INTO projects (id, org_id, name, api_enabled, created_at) VALUES ('prj_1', 'org_1', 'p', 1, 0)").run();
  let commits = 0;
  const committer = new GroupCommitter(db, new SqliteIngestTx(db), () => commits++);
  await send(committer, 'c');
  expect(commits).toBe(1);
  db.exec("CREATE TRIGGER events_fail BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'no'); END");
  db.exec("CREATE TRIGGER usage_fails BEFORE INSERT ON usage BEGIN SELECT RAISE(ABORT, 'no'); END");
  await expect(send(committer, 'd')).rejects.toBeInstanceOf(StoreUnavailableError);
  // The failed job was rolled back alone and the (empty) commit still returned.
  expect(commits).toBe(2);
  db.exec('DROP TRIGGER events_fail');
  db.exec('DROP TRIGGER usage_fails');
  failCommitsWithEvents(db);
  await expect(send(committer, 'e')).rejects.toBeInstanceOf(StoreUnavailableError);
  expect(commits).toBe(2);
});

it('between() answers as its function does, and the commits after it run either way', async () => {
  const { committer } = setUp();
  await expect(committer.between(async () => 7)).resolves.toBe(7);
  await expect(committer.between(async () => Promise.reject(new Error('admin write failed')))).rejects.toThrow('admin write failed');
  expect((await send(committer, 'after')).map((o) => o.status)).toEqual(['accepted', 'accepted']);
  await expect(committer.between(async () => 'still runs')).resolves.toBe('still runs');
});

it("a flush that cannot begin fails its jobs and leaves a transaction it did not begin alone", async () => {
  const { db, committer } = setUp();
  db.exec('BEGIN');
  db.prepare("INSERT INTO usage (project_id, month, events) VALUES ('prj_1', '2026-01', 5)").run();
  await expect(send(committer, 'x')).rejects.toBeInstanceOf(StoreUnavailableError);
  expect(db.inTransaction).toBe(true);
  db.exec('COMMIT');
  expect(db.prepare("SELECT events FROM usage WHERE month = '2026-01'").pluck().get()).toBe(5);
  expect((await send(committer, 'x')).map((o) => o.status)).toEqual(['accepted', 'accepted']);
});

it('writes key uses when drained, not with every commit', async () => {
  const { db, committer } = setUp();
  db.prepare("INSERT INTO api_keys (id, source_id, hash, last_four, created_at) VALUES ('key_1', 'src_1', x'01', 'abcd', 0)").run();
  const lastUsed = () => db.prepare("SELECT last_used_at FROM api_keys WHERE id = 'key_1'").pluck().get();
  committer.noteKeyUse('key_1', 1_000);
  committer.noteKeyUse('key_1', 3_000);
  committer.noteKeyUse('key_1', 2_000);
  await send(committer, 'k');
  expect(lastUsed()).toBeNull();
  await committer.drain();
  expect(lastUsed()).toBe(3_000);
  // Nothing else pending: a drain still writes them.
  committer.noteKeyUse('key_1', 4_000);
  await committer.drain();
  expect(lastUsed()).toBe(4_000);
});
