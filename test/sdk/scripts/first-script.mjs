// The first script a newcomer writes: a plain loop of track() calls, more
// than maxQueue of them, then flush(), with every option left at its default.
import { Inlet } from '@inlet/node';

const inlet = new Inlet({ key: process.env.INLET_KEY, baseUrl: process.env.INLET_BASE_URL });
const count = Number(process.argv[2]);
for (let i = 0; i < count; i++) inlet.track({ event: 'signed_up', distinctId: `u_${i}`, insertId: `${process.argv[3]}_${i}` });
const report = await inlet.flush();
process.stdout.write(JSON.stringify({ accepted: report.accepted, duplicates: report.duplicates, failed: report.failed, refused: report.refused }));
