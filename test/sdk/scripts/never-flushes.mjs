// Tracks and never flushes: the batching timer (an hour here) must not hold
// the process open, and what is still queued when the script ends is sent
// before the process exits.
import { Inlet } from '@inlet/node';

const inlet = new Inlet({ key: process.env.INLET_KEY, baseUrl: process.env.INLET_BASE_URL, flushIntervalMs: 3_600_000 });
inlet.track({ event: 'e', distinctId: 'u', insertId: process.argv[2] });
process.stdout.write('tracked');
