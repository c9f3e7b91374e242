/**
 * The password thread (password-thread.ts): derives each scrypt key it is
 * sent, synchronously on this thread, so a hash never takes one of libuv's
 * shared threads. It keeps nothing between requests.
 */
import { scryptSync } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import { lowerNice } from '../../thread-priority.js';
import type { DeriveReply, DeriveRequest } from './password-thread.js';

const port = parentPort!;

/**
 * A lower CPU priority for this thread alone (on Linux the nice value is a
 * thread's, and setpriority on "this process" sets the calling thread's;
 * elsewhere it would be the whole server's, so it is left alone): when
 * guesses and batches want the same cores, batches go first. With a core
 * to spare, hashes run at full speed all the same.
 */
const NICE = 10;
lowerNice(NICE);

port.on('message', ({ id, password, salt, keyLength, options }: DeriveRequest) => {
  let reply: DeriveReply;
  try {
    const key = scryptSync(password, salt, keyLength, options);
    reply = { id, key };
  } catch (e) {
    // scrypt's own errors name its parameters, never the password.
    reply = { id, error: e instanceof Error ? e.message : String(e) };
  }
  port.postMessage(reply);
});
