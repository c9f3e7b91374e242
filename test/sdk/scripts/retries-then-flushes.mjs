// Awaits flush() while its batch waits between retries: the wait must hold the
// process open (no process.exit here) until the item has its outcome.
import { Inlet } from '@inlet/node';

const inlet = new Inlet({ key: process.env.INLET_KEY, baseUrl: process.env.INLET_BASE_URL, retryBaseMs: 200, retryMaxMs: 200 });
inlet.track({ event: 'e', distinctId: 'u', insertId: process.argv[2] });
const report = await inlet.flush();
process.stdout.write(JSON.stringify(report));
