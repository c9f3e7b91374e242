/**
 * Password guessing in parallel against a real `inlet serve`. The throttle
 * read its blocks before the ~100 ms scrypt and wrote the failure after it,
 * so 300 wrong passwords for one account sent at once were all hashed and
 * answered 401; and scrypt ran on libuv's four threads, which also gunzip
 * request bodies, so a gzip batch sent meanwhile waited seconds behind the
 * hashes (16.6 s; from varied addresses, most batches timed out).
 *
 * What is asserted is what takes the hashes away: the guesses for one account
 * are refused before any hash once the throttle blocks it, unknown emails are
 * answered without one, and a gzip batch sent meanwhile is answered 202 while
 * guesses are still being answered: it does not wait for the flood. Its time
 * then, beside its unloaded time, is printed, never asserted: the machine's
 * load decides it as much as the server does.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FREE_FAILURES } from '../../src/domain/accounts/throttle.js';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';
import { runCli } from '../helpers/process.js';
import { type RawAnswer, portOf, rawRequest } from '../helpers/raw-http.js';

const EMAIL = 'target@acme.test';
const GUESSES = 300;

let live: LiveServer;
let port: number;
let unloaded: number;

beforeAll(async () => {
  // The test's own address is a trusted proxy, so guesses can come "from" many addresses.
  live = await startLiveServer({ INLET_TRUSTED_PROXIES: '127.0.0.1' });
  port = portOf(live.url);
  const made = await runCli(['user', 'create', '--email', EMAIL, '--password-stdin'], live.env, 'the right password, long enough\n');
  expect(made.code, made.stderr).toBe(0);
  await gzipBatch();
  const times: number[] = [];
  for (let i = 0; i < 5; i++) times.push(await gzipBatch());
  unloaded = median(times);
});
afterAll(async () => {
  await live?.stop();
});

/** A sign-in with a wrong password, with headers of its own (an Origin, an X-Forwarded-For). */
function guess(email: string, i: number, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const body = new URLSearchParams({ email, password: `wrong guess number ${i}` }).toString();
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return rawRequest(
    port,
    `POST /console/login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${extra}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
  ).answer;
}

let batchNo = 0;
/** One gzip batch of 200 items (fresh insert_ids, so each is stored as the first was); resolves with its time to the answer, in ms. */
async function gzipBatch(): Promise<number> {
  const n = batchNo++;
  const items = Array.from({ length: 200 }, (_, i) => ({ event: 'Flood check', distinct_id: `u${i % 20}`, insert_id: `flood-${n}-${i}`, properties: { i, note: 'x'.repeat(200) } }));
  const body = gzipSync(JSON.stringify({ items }));
  const head = `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${live.key}\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
  const started = performance.now();
  const answer = await rawRequest(port, Buffer.concat([Buffer.from(head), body])).answer;
  const took = performance.now() - started;
  expect(answer.status, answer.body).toBe(202);
  return took;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Batches sent during each flood; their median time is the flood's figure. */
const BATCHES = 3;

/**
 * Sends GUESSES requests at once and BATCHES gzip batches right after them: the
 * answers, how many guesses were answered after the first batch was, and the
 * batches' median time as a line to print.
 */
async function flood(send: (i: number) => Promise<RawAnswer>): Promise<{ answers: RawAnswer[]; answeredAfterBatch: number; shown: string }> {
  let batchAnswered = false;
  let answeredAfterBatch = 0;
  const pending = Array.from({ length: GUESSES }, (_, i) => send(i).then((a) => ((answeredAfterBatch += batchAnswered ? 1 : 0), a)));
  const batches = Array.from({ length: BATCHES }, () => gzipBatch().then((ms) => ((batchAnswered = true), ms)));
  const batchMs = median(await Promise.all(batches));
  const answers = await Promise.all(pending);
  return {
    answers,
    answeredAfterBatch,
    shown: `a gzip batch answered in ${Math.round(batchMs)} ms during the flood (${Math.round(unloaded)} ms unloaded), ${answeredAfterBatch} guesses answered after it`,
  };
}

const statuses = (answers: RawAnswer[]) => answers.reduce<Record<number, number>>((m, a) => ((m[a.status] = (m[a.status] ?? 0) + 1), m), {});

it('parallel wrong passwords for one account are answered 429 without hashing, and a gzip batch sent meanwhile is answered', async () => {
  const { answers, answeredAfterBatch, shown } = await flood((i) => guess(EMAIL, i));
  console.log(`sign-in flood, one account: ${shown}`);
  const hashed = answers.filter((a) => a.status === 401).length;
  // Every guess answered: a 401 is a hashed wrong password; a 429 was refused before any hash.
  expect(statuses(answers)[401]! + statuses(answers)[429]!, JSON.stringify(statuses(answers))).toBe(GUESSES);
  // The free attempts and those that set a block (1 s, 2 s, 4 s… apart) are hashed: a few, never most.
  expect(hashed).toBeGreaterThan(FREE_FAILURES.email);
  expect(hashed).toBeLessThan(GUESSES / 10);
  for (const a of answers.filter((x) => x.status === 429)) expect(Number(a.headers.get('retry-after'))).toBeGreaterThan(0);
  // The batch was answered 202 (gzipBatch holds it to that) while guesses were still being answered.
  expect(answeredAfterBatch).toBeGreaterThan(0);
});

it('parallel wrong passwords from many addresses for unknown emails take no place under the bound, and a gzip batch sent meanwhile is answered', async () => {
  const { answers, answeredAfterBatch, shown } = await flood((i) => guess(`nobody${i}@acme.test`, i, { 'X-Forwarded-For': `10.7.${i >> 8}.${i & 255}` }));
  console.log(`sign-in flood, unknown emails: ${shown}`);
  // No throttle applies (each email and address tries once), and an unknown email is answered without a hash
  // or a place under the bound on checks at once: every one is a wrong password, none is refused as busy.
  expect(statuses(answers), JSON.stringify(statuses(answers))).toEqual({ 401: GUESSES });
  expect(answeredAfterBatch).toBeGreaterThan(0);
});
