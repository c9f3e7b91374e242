/**
 * `inlet events list` shows each event's properties (fault: without --json it showed none),
 * cut so that a line fits the terminal (or COLUMNS, or 200 characters in a pipe).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { provision, runCli } from '../helpers/cli.js';
import { type Server, startServer, stopServer } from '../helpers/process.js';

const tmp = tempDir('inlet-events-list-');
const env = { INLET_DATA_DIR: tmp.dir, INLET_DATABASE_URL: '' };
const NOTE = 'n'.repeat(300);
let server: Server;
let sourceId: string;

beforeAll(async () => {
  const { source, key } = await provision(env);
  sourceId = source.id;
  server = await startServer([], env);
  const items = [
    { event: 'invoice_paid', distinct_id: 'cust_1042', insert_id: 'inv_1', properties: { amount: 129.5, $currency: 'EUR' } },
    { event: 'note_added', distinct_id: 'cust_1042', insert_id: 'inv_2', properties: { note: NOTE } },
  ];
  const r = await fetch(`${server.url}/api/v1/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ items }),
  });
  expect(r.status).toBe(202);
});
afterAll(async () => {
  await stopServer(server);
  tmp.remove();
});

async function listed(columns: string): Promise<string[]> {
  const r = await runCli(['events', 'list', '--source', sourceId], { ...env, COLUMNS: columns });
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trimEnd().split('\n');
}

describe('inlet events list', () => {
  it('has a PROPERTIES column, last, with the properties as JSON', async () => {
    const lines = await listed('1000');
    expect(lines[0]).toMatch(/  INSERT ID +PROPERTIES$/);
    const paid = lines.find((l) => l.includes('invoice_paid'))!;
    // As stored: what was sent, with what the server added.
    expect(paid.endsWith(`  {"amount":129.5,"$currency":"EUR","$source_id":"${sourceId}"}`), paid).toBe(true);
  });

  it('cuts it to 200 characters a line in a pipe, and to COLUMNS when given', async () => {
    for (const [columns, width] of [['', 200], ['170', 170]] as const) {
      const lines = await listed(columns);
      for (const line of lines) expect(line.length, `COLUMNS=${columns}`).toBeLessThanOrEqual(width);
      const note = lines.find((l) => l.includes('note_added'))!;
      expect(note.length).toBe(width);
      expect(note.endsWith('…')).toBe(true);
      expect(note).toContain('{"note":"nnn');
    }
  });

  it('--json still has the properties whole', async () => {
    const r = await runCli(['events', 'list', '--source', sourceId, '--json'], env);
    const events = JSON.parse(r.stdout) as { properties: Record<string, unknown> }[];
    expect(events.map((e) => e.properties)).toContainEqual(expect.objectContaining({ note: NOTE }));
  });
});
