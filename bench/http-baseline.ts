/**
 * The HTTP limit of the machine: a server that reads the body (gunzipping it
 * when sent gzipped), JSON.parses it and answers 202 with a body of the same
 * shape as Inlet's. Nothing is checked or stored.
 */
import { createServer } from 'node:http';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';

const gunzipAsync = promisify(gunzip);
let served = 0;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    let answer: { status: number; body: string };
    try {
      let bytes = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') bytes = await gunzipAsync(bytes);
      const json = JSON.parse(bytes.toString('utf8')) as { items: unknown[] };
      answer = {
        status: 202,
        body: JSON.stringify({ accepted: json.items.length, dropped: [], errors: [], duplicates: [], request_id: `req_${++served}` }),
      };
    } catch (e) {
      answer = { status: 400, body: JSON.stringify({ error: { code: 'invalid_json', message: (e as Error).message } }) };
    }
    res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(answer.body) });
    res.end(answer.body);
  });
});

server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  process.stdout.write(`http baseline listening on http://127.0.0.1:${port}\n`);
});
process.once('SIGTERM', () => process.exit(0));
