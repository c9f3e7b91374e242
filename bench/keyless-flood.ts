import { Agent } from 'node:http';
import { post } from './http-loop.js';

/** A 1 MB PostHog batch with no key anywhere: what anyone can send, answered 401 once its key is looked for. */
function keylessBody(): Buffer {
  const batch = Array.from({ length: 500 }, (_, i) => ({ event: 'flood', distinct_id: `x${i}`, properties: { pad: 'x'.repeat(1900) } }));
  return Buffer.from(JSON.stringify({ batch }));
}

/** What a flood sent, by status. */
export interface FloodFigures {
  requests: number;
  byStatus: Record<string, number>;
}

/**
 * Bodies without a key (1 MB of JSON to /batch/) sent by `connections`
 * clients in a closed loop until stop() is called, each from its own
 * loopback address (127.0.0.10 on), so each has its own share of the keyless
 * pool as clients on different machines would: beside the keyed load it
 * shows what keyless clients cost it.
 */
export function keylessFlood(url: string, connections: number): { stop: () => Promise<FloodFigures> } {
  const body = keylessBody();
  const figures: FloodFigures = { requests: 0, byStatus: {} };
  let stopping = false;
  const agents = Array.from({ length: connections }, (_, i) => new Agent({ keepAlive: true, maxSockets: 1, localAddress: `127.0.0.${10 + i}` }));
  const target = new URL('/batch/', url);
  const loop = async (agent: Agent): Promise<void> => {
    while (!stopping) {
      const r = await post(agent, target, { 'content-type': 'application/json' }, body).catch(() => ({ status: 0 }));
      figures.requests++;
      figures.byStatus[r.status] = (figures.byStatus[r.status] ?? 0) + 1;
    }
  };
  const loops = agents.map(loop);
  return {
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
      for (const a of agents) a.destroy();
      return figures;
    },
  };
}
