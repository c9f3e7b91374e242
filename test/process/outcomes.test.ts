/**
 * Outcomes as a running server keeps them: counted until SIGTERM (the last
 * ones written as it stops), read back with `inlet outcomes`, and the kept
 * items exported as NDJSON that `inlet send` takes back.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { Expected } from '../helpers/outcomes.js';
import { cliJson, runCli } from '../helpers/cli.js';
import { provision, startServer, stopServer } from '../helpers/process.js';

const tmp = tempDir('inlet-outcomes-');
// Two servers and six commands, each a process of its own: on a busy machine each takes seconds to start.
afterAll(() => tmp.remove());

it("SIGTERM writes the counts not yet written: they equal the answers', and the kept items go back through inlet send", async () => {
  const dd = ['--data-dir', tmp.dir];
  const { source, key } = await provision({}, tmp.dir);
  const server = await startServer(dd);
  const expected = new Expected();
  const post = async (items: unknown[], path = '/api/v1/batch') => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    });
    const body = await res.json();
    expected.answer({ statusCode: res.status, json: () => body }, items.length);
  };
  try {
    await post([{ event: 'ok', distinct_id: 'u' }, { event: '$bad', distinct_id: 'u' }, { event: 'b', distinct_id: 'u', properties: { $user_agent: 'Googlebot/2.1' } }]);
    await post([{ event: '', distinct_id: 'u' }, { distinct_id: 'u' }]);
    await post([{ event: 'x', distinct_id: 'u' }], '/api/v1/import');
  } finally {
    // At once after the last answer: well inside the half second between two writes.
    await stopServer(server);
  }
  expect(await server.exited).toBe(0);
  const rows = await cliJson<{ outcome: string; code: string | null; count: number }[]>(['outcomes', '--source', source.id, '--by', 'day', ...dd]);
  expect(new Map(rows.map((r) => [`${r.outcome} ${r.code ?? ''}`, r.count]))).toEqual(expected.counts);

  const listed = await cliJson<{ outcome: string; codes: string[]; item: unknown; cut: boolean }[]>(['refused', 'list', '--source', source.id, ...dd]);
  expect(listed.map((s) => s.codes[0]).sort()).toEqual(['bot_filtered', 'invalid_event_name', 'missing_event_name', 'missing_timestamp', 'reserved_event_name']);
  const file = join(tmp.dir, 'kept.ndjson');
  const exported = await runCli(['refused', 'export', '--source', source.id, '--out', file, ...dd]);
  expect(exported.code, exported.stderr).toBe(0);
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  // The dropped bot item is left out unless asked for.
  expect(lines).toHaveLength(4);
  expect(exported.stderr).toContain('left out: 1 dropped (--include-dropped to export them)');

  // Sent back as they are, the refused ones are refused again (the import's, without its timestamp, is taken by /api/v1/batch): `inlet send` read every line.
  const again = await startServer(dd);
  try {
    const sent = await runCli(['send', file, '--json', '--key', key.key, '--base-url', again.url]);
    expect(JSON.parse(sent.stdout)).toMatchObject({ sent: 4, accepted: 1, dropped: 0, refused: 3, unreadable: 0 });
  } finally {
    await stopServer(again);
  }
}, 180_000);
