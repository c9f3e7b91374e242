// Tracks and never flushes: the client's timers must not hold the process open.
import { Inlet } from '@inlet/node';

const inlet = new Inlet({ key: process.env.INLET_KEY, baseUrl: process.env.INLET_BASE_URL, flushIntervalMs: 3_600_000 });
inlet.track({ event: 'e', distinctId: 'u' });
process.stdout.write('tracked');
