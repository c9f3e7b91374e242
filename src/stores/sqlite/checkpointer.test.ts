import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { tempDir } from '../../../test/helpers/fixture.js';
import type { EnrichedItem, IngestJob } from '../port.js';
import { SqliteStore } from './sqlite-store.js';

const tmp = tempDir('inlet-checkpointer-');
afterEach(() => tmp.remove());

function job(n: number): IngestJob {
  const items: EnrichedItem[] = Array.from({ length: 100 }, (_, index) => ({
    index, type: 'track', event: 'e', distinctId: `u${index}`, anonymousId: null, sessionId: null, insertId: `b${n}-${index}`,
    timestamp: 1_795_000_000_000 + ((n * 7919 + index * 104_729) % 3_600_000), properties: { pad: 'x'.repeat(200) },
    userAgent: null, droppedKeys: [], enrichment: {},
  }));
  return { projectId: 'prj_1', sourceId: 'src_1', keyId: 'key_1', receivedAt: 1_795_000_000_000, items, dryRun: false };
}

it('under writes that never pause, the WAL still starts over and stays short on disk', async () => {
  const store = SqliteStore.open(tmp.dir, { longFrames: 200, sizeLimitBytes: 512 * 1024, checkpointEveryMs: 100 });
  const wal = join(tmp.dir, 'inlet.db-wal');
  let largest = 0;
  // Commits back to back for about 3 s, many times the WAL's limit of pages.
  const until = Date.now() + 3000;
  let n = 0;
  while (Date.now() < until) {
    await Promise.all(Array.from({ length: 4 }, () => store.ingest(job(n++))));
    largest = Math.max(largest, statSync(wal).size);
  }
  const dbSize = statSync(join(tmp.dir, 'inlet.db')).size;
  await store.close();
  expect(n).toBeGreaterThan(200);
  expect(dbSize).toBeGreaterThan(4 * 1024 * 1024);
  // Left to PASSIVE checkpoints alone the WAL grew to about 9 times the database
  // here (284 MB for 32 MB); starting over keeps it under the database's size,
  // give or take what is written between two passes of the thread.
  expect(largest).toBeLessThan(3 * dbSize);
});
