import { scrypt } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { threadEntry } from '../../thread-entry.js';

/** scrypt's settings, as node:crypto takes them. */
export interface ScryptOptions {
  N: number;
  r: number;
  p: number;
  maxmem: number;
}

/** To the thread: one key to derive. */
export interface DeriveRequest {
  id: number;
  password: string;
  salt: Uint8Array;
  keyLength: number;
  options: ScryptOptions;
}

/** From the thread: the key, or scrypt's error. */
export type DeriveReply = { id: number } & ({ key: Uint8Array } | { error: string });

/** The thread's file (password-worker.ts), compiled. */
const THREAD_URL = threadEntry('domain/accounts/password-worker.js');

/** After the thread could not start, how long keys are derived on libuv's pool before it is tried again. */
const RESTART_AFTER_MS = 1000;

interface Thread {
  worker: Worker;
  waiting: Map<number, { settle: (r: DeriveReply | null) => void }>;
  answered: boolean;
}

let thread: Thread | null = null;
let startFailedAt = 0;
let nextId = 0;

/**
 * scrypt on a thread of its own. node:crypto's async scrypt runs on libuv's
 * pool, four threads that also gunzip request bodies (and do DNS and file
 * work): a hundred sign-ins at once held all four for seconds, and a gzip
 * batch waited behind them (16.6 s with 300 guesses in flight). Here the
 * keys are derived one after another on one thread, which nothing else
 * uses; the caller bounds how many wait (accounts.ts). If the thread cannot
 * start or stops, its keys are derived on the pool as before, so sign-in
 * still works.
 */
export function deriveKey(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  const t = running();
  if (t === null) return onPool(password, salt, keyLength, options);
  const id = nextId++;
  return new Promise<DeriveReply | null>((settle) => {
    if (t.waiting.size === 0) t.worker.ref();
    t.waiting.set(id, { settle });
    t.worker.postMessage({ id, password, salt, keyLength, options } satisfies DeriveRequest);
  }).then((r) => {
    if (r === null) return onPool(password, salt, keyLength, options);
    if ('error' in r) throw new Error(r.error);
    return Buffer.from(r.key.buffer, r.key.byteOffset, r.key.byteLength);
  });
}

function onPool(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/** The thread, started if it is not running; null while it cannot start. */
function running(): Thread | null {
  if (thread !== null) return thread;
  if (Date.now() - startFailedAt < RESTART_AFTER_MS) return null;
  let worker: Worker;
  try {
    // Its heap holds nothing but messages; scrypt's memory is not on it.
    worker = new Worker(THREAD_URL, { resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 16 } });
  } catch {
    startFailedAt = Date.now();
    return null;
  }
  const t: Thread = { worker, waiting: new Map(), answered: false };
  // Idle, the thread never keeps the process alive; while a key is awaited it does (a command waiting on a hash).
  worker.unref();
  worker.on('message', (m: DeriveReply) => {
    t.answered = true;
    const w = t.waiting.get(m.id);
    t.waiting.delete(m.id);
    if (t.waiting.size === 0) worker.unref();
    w?.settle(m);
  });
  // 'error' (a failure as it loads, the heap cap) is followed by 'exit'.
  worker.on('error', () => undefined);
  worker.on('exit', () => {
    if (thread === t) thread = null;
    // A thread that fails as it loads would otherwise be started again for every key.
    if (!t.answered) startFailedAt = Date.now();
    for (const w of t.waiting.values()) w.settle(null);
    t.waiting.clear();
  });
  thread = t;
  return t;
}
