import { afterAll, expect, it } from 'vitest';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/fixture.js';
import { provision, startServer } from '../helpers/process.js';

const tmp = tempDir('inlet-crash-');
afterAll(() => tmp.remove());

it('after SIGKILL mid-load, every insert_id that got a 202 is stored, each exactly once', async () => {
  const dd = ['--data-dir', tmp.dir];
  const { source, key } = await provision({}, tmp.dir);
  const noLimits = { INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0' };
  const server = await startServer(dd, noLimits);
  const acked = new Set<string>();
  const sent: { batch: object; ids: string[] }[] = [];
  let stop = false;
  let n = 0;
  // Killed once the load is well under way: many batches acknowledged, more in flight.
  const KILL_AFTER_ACKED = 2_000;
  let underLoad: () => void = () => {};
  const wellUnderWay = new Promise<void>((r) => (underLoad = r));
  const client = async (c: number) => {
    while (!stop) {
      const ids = Array.from({ length: 20 }, (_, i) => `c${c}_${n}_${i}`);
      n++;
      const batch = { items: ids.map((id) => ({ event: 'crash_test', distinct_id: `user_${id.length % 50}`, insert_id: id })) };
      sent.push({ batch, ids });
      try {
        const res = await fetch(`${server.url}/api/v1/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(batch),
        });
        if (res.status === 202) {
          for (const id of ids) acked.add(id);
          if (acked.size >= KILL_AFTER_ACKED) underLoad();
        }
        await res.arrayBuffer();
      } catch {
        // The connection died with the server: not acknowledged, so no promise was made.
      }
    }
  };
  const clients = Array.from({ length: 16 }, (_, c) => client(c));
  await wellUnderWay;
  server.proc.kill('SIGKILL');
  await server.exited;
  stop = true;
  await Promise.all(clients);

  // Restart on the same data and resend everything, acknowledged or not.
  const again = await startServer(dd, noLimits);
  for (const { batch } of sent) {
    const res = await fetch(`${again.url}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(batch),
    });
    expect(res.status).toBe(202);
  }
  again.proc.kill('SIGTERM');
  expect(await again.exited).toBe(0);

  const store = SqliteStore.open(tmp.dir);
  const events = await store.listEvents(source.id, 10_000_000);
  await store.close();
  const counts = new Map<string, number>();
  for (const e of events) counts.set(e.insertId!, (counts.get(e.insertId!) ?? 0) + 1);
  const ackedFound = [...acked].filter((id) => counts.get(id) === 1).length;
  const sentIds = sent.flatMap((s) => s.ids);
  console.log(`crash test: ${acked.size} insert_ids acknowledged before SIGKILL, ${ackedFound} of them found once after restart; ${sentIds.length} sent in all, ${events.length} events stored`);
  expect(ackedFound).toBe(acked.size);
  expect([...counts.values()].every((c) => c === 1)).toBe(true);
  expect(events.length).toBe(new Set(sentIds).size);
});
