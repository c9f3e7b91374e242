// A serverless-style handler: track, await flush(), then the process is cut
// off at once (as a platform freezes a function once its handler returns).
import { Inlet } from '@inlet/node';

const inlet = new Inlet({ key: process.env.INLET_KEY, baseUrl: process.env.INLET_BASE_URL, flushIntervalMs: 3_600_000, retryBaseMs: 1 });

async function handler(count, prefix) {
  for (let i = 0; i < count; i++) inlet.track({ event: 'job_done', distinctId: 'fn', insertId: `${prefix}_${i}`, properties: { i } });
  return inlet.flush();
}

const report = await handler(Number(process.argv[2]), process.argv[3]);
process.stdout.write(JSON.stringify(report));
process.exit(0);
